/* SPDX-License-Identifier: BSD-3-Clause
 * Protection domains and memory regions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fork.h"
#include "internal.h"

static_assert((int)IBV_ACCESS_LOCAL_WRITE == (int)DROCE_ACCESS_LOCAL_WRITE, "access bits");
static_assert((int)IBV_ACCESS_REMOTE_WRITE == (int)DROCE_ACCESS_REMOTE_WRITE, "access bits");
static_assert((int)IBV_ACCESS_REMOTE_READ == (int)DROCE_ACCESS_REMOTE_READ, "access bits");
static_assert((int)IBV_ACCESS_REMOTE_ATOMIC == (int)DROCE_ACCESS_REMOTE_ATOMIC, "access bits");
static_assert((int)IBV_ACCESS_MW_BIND == (int)DROCE_ACCESS_MW_BIND, "access bits");

#define ACCESS_RIGHTS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
/* Accepted and meaningless here: droce reads application memory directly,
 * nothing is pinned, so on-demand paging and huge pages need nothing. */
#define ACCESS_NOOP (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB)

static atomic_uint next_pd_id = 1;

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	if (droce_fk_ctx(context))
		return droce_fk_alloc_pd(context);
	struct droce_vctx *x;
	struct droce_vpd *pd;

	if (context == NULL || droce_vctx_of(context) == NULL) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pd.context = context;
	pd->id = atomic_fetch_add(&next_pd_id, 1);
	pd->pd.handle = pd->id;
	pthread_mutex_init(&pd->lock, NULL);
	TAILQ_INIT(&pd->mrs);
	TAILQ_INIT(&pd->mws);
	TAILQ_INIT(&pd->ahs);
	x = droce_vctx_of(context);
	pthread_mutex_lock(&x->lock);
	TAILQ_INSERT_TAIL(&x->pds, pd, ctx_link);
	pthread_mutex_unlock(&x->lock);
	return &pd->pd;
}

int
ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	if (droce_fk_ctx(ibpd ? ibpd->context : NULL))
		return droce_fk_dealloc_pd(ibpd);
	struct droce_vpd *pd = (struct droce_vpd *)ibpd;
	struct droce_vctx *x;

	if (pd == NULL)
		return EINVAL;
	if (atomic_load(&pd->users) != 0)
		return EBUSY;
	x = droce_vctx_of(pd->pd.context);
	pthread_mutex_lock(&x->lock);
	TAILQ_REMOVE(&x->pds, pd, ctx_link);
	pthread_mutex_unlock(&x->lock);
	pthread_mutex_destroy(&pd->lock);
	free(pd);
	return 0;
}

/*
 * The access rule of ibv_reg_mr(3): remote write and remote atomic need
 * local write.  Unknown bits are EINVAL, except the optional range, which
 * rdma-core defines as "ignored when not supported".
 */
static bool
access_ok(unsigned int access)
{
	unsigned int a = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;

	if (a & ~(unsigned int)(ACCESS_RIGHTS | ACCESS_NOOP))
		return false;
	if ((a & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(a & IBV_ACCESS_LOCAL_WRITE))
		return false;
	return true;
}

/*
 * What the kernel's pinning (ib_umem_get) checks, done by reading
 * /proc/self/maps: every byte of [addr, addr + length) must lie in a mapping
 * that is readable, and writable when local or remote write (or atomic) is
 * asked; a gap, PROT_NONE or a read-only mapping asked for write is EFAULT.
 * Chosen over probing (process_vm_readv, mincore, madvise) because only the
 * maps file tells both "mapped" and "with which rights" in one pass, and it
 * costs one read of a small file per registration, a slow path anyway.
 * 0 when the range is fine, else an errno.
 *
 * Unlike the kernel, droce cannot keep the pages alive: it pins nothing.
 * Unmapping or mprotecting registered memory before ibv_dereg_mr() is the
 * application's error (as with ODP MRs, whose pages the kernel does not pin
 * either); a remote access to such memory then faults the process.
 */
static int
range_mapped(uintptr_t addr, size_t length, bool write)
{
	uintptr_t cur = addr, end = addr + length;
	char line[512];
	FILE *f;
	int err = EFAULT;

	if (length == 0)
		return 0;
	f = fopen("/proc/self/maps", "re");
	if (f == NULL)
		return errno ? errno : EFAULT;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;
		char perms[5];

		if (strchr(line, '\n') == NULL) {
			/* a long path name: skip the rest of that line */
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
		}
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3)
			continue;
		if (hi <= cur)
			continue;
		if (lo > cur)
			break; /* a hole before the next mapping */
		if (perms[0] != 'r' || (write && perms[1] != 'w'))
			break;
		cur = hi;
		if (cur >= end) {
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/* The droce_mr for [addr, addr + length) at @iova with @access in @pd, its
 * range checked as ib_umem_get would: NULL with errno on failure. */
static struct droce_mr *
dmr_new(struct droce_vpd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	struct droce_mr *d;
	int err;

	err = range_mapped((uintptr_t)addr, length,
			   access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_ATOMIC));
	if (err != 0) {
		errno = err;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	d->addr = addr;
	d->iova = iova;
	d->length = length;
	d->access = access & ACCESS_RIGHTS;
	d->pd_id = pd->id;
	return d;
}

/* EINVAL when [addr, addr + length) or [iova, iova + length) wraps, or the
 * page-rounded end does (as ib_umem_get). */
static bool
range_wraps(void *addr, size_t length, uint64_t iova)
{
	return (uintptr_t)addr + length < (uintptr_t)addr || iova + length < iova ||
	       (length != 0 && (uintptr_t)addr + length + 4095 < (uintptr_t)addr + length);
}

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	if (droce_fk_ctx(ibpd ? ibpd->context : NULL))
		return droce_fk_reg_mr(ibpd, addr, length, iova, access);
	struct droce_vpd *pd = (struct droce_vpd *)ibpd;
	struct droce_vmr *mr;
	int err;

	if (pd == NULL || !access_ok(access) || range_wraps(addr, length, iova)) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mr->dmr = dmr_new(pd, addr, length, iova, access);
	if (mr->dmr == NULL) {
		free(mr);
		return NULL;
	}
	err = droce_mr_register(mr->dmr);
	if (err != 0) {
		free(mr->dmr);
		free(mr);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&mr->lock, NULL);
	atomic_fetch_add(&pd->users, 1);
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = mr->dmr->lkey;
	mr->mr.lkey = mr->dmr->lkey;
	mr->mr.rkey = mr->dmr->rkey;
	pthread_mutex_lock(&pd->lock);
	TAILQ_INSERT_TAIL(&pd->mrs, mr, pd_link);
	pthread_mutex_unlock(&pd->lock);
	return &mr->mr;
}

/* The exported symbols behind verbs.h's ibv_reg_mr() / ibv_reg_mr_iova() macros. */
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				 int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/* Drains and frees the MRs rereg replaced while frames still pointed into
 * them: 0, or EBUSY while some still do (those stay listed). */
static int
retired_drain(struct droce_vmr *mr)
{
	struct droce_mr_retired **pp = &mr->retired;
	int rc = 0;

	while (*pp != NULL) {
		struct droce_mr_retired *r = *pp;

		if (droce_mr_drain(r->dmr) != 0) {
			rc = EBUSY;
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		free(r->dmr);
		free(r);
	}
	return rc;
}

/* Moves @mr from its PD's list and count to @to's. */
static void
mr_move_pd(struct droce_vmr *mr, struct droce_vpd *to)
{
	struct droce_vpd *from = (struct droce_vpd *)mr->mr.pd;

	pthread_mutex_lock(&from->lock);
	TAILQ_REMOVE(&from->mrs, mr, pd_link);
	pthread_mutex_unlock(&from->lock);
	atomic_fetch_sub(&from->users, 1);
	atomic_fetch_add(&to->users, 1);
	pthread_mutex_lock(&to->lock);
	TAILQ_INSERT_TAIL(&to->mrs, mr, pd_link);
	pthread_mutex_unlock(&to->lock);
	mr->mr.pd = &to->pd;
}

#define REREG_FLAGS (IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | \
		     IBV_REREG_MR_CHANGE_ACCESS)

/*
 * ibv_rereg_mr(3).  The MR keeps its lkey and rkey; what the engines read
 * is replaced whole (droce_mr_replace: one store into the key table, then
 * the RCU grace period and the drain of frames pointing into the old
 * memory), so no engine ever sees a half-changed MR, and a frame built
 * from the old translation is gone before the call returns.
 * Return values as rdma-core's: IBV_REREG_MR_ERR_INPUT (-1, errno EINVAL)
 * for what libibverbs itself refuses (unknown flags, a translation without
 * address or length, access bits without CHANGE_ACCESS); the checks the
 * kernel makes are IBV_REREG_MR_ERR_CMD (-4) with errno: EINVAL (no flag,
 * a bad access combination, a PD of another context, a range that wraps),
 * EFAULT (the new range is not mapped, or not writable for write access),
 * EBUSY (a memory window is bound to the MR, as for ibv_dereg_mr); the MR
 * is unchanged after all of these.  One more EBUSY: the new attributes are
 * in force but frames of a stalled port still point into the old memory
 * (after droce_mr_drain_ms); keep that memory until ibv_dereg_mr succeeds.
 */
int
ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr, size_t length,
	     int access)
{
	if (droce_fk_ctx(ibmr ? ibmr->context : NULL)) {
		errno = EOPNOTSUPP; /* not in a forked child yet */
		return IBV_REREG_MR_ERR_INPUT;
	}
	struct droce_vmr *mr = (struct droce_vmr *)ibmr;
	struct droce_vpd *pd;
	struct droce_mr *next, *cur;
	struct droce_mr_retired *r;
	unsigned int new_access;
	int err;

	/* what libibverbs checks before the command */
	if (mr == NULL || (flags & ~REREG_FLAGS) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (length == 0 || addr == NULL)) ||
	    (access != 0 && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	pthread_mutex_lock(&mr->lock);
	cur = mr->dmr;
	pd = (flags & IBV_REREG_MR_CHANGE_PD) ? (struct droce_vpd *)ibpd
					      : (struct droce_vpd *)mr->mr.pd;
	if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		addr = cur->addr;
		length = cur->length;
	}
	/* the MR's original access bits, ODP and huge pages included, are
	 * not all kept in cur->access: the ibv_mr has no field for them, and
	 * they change nothing here */
	new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? (unsigned int)access : cur->access;
	err = 0;
	if (flags == 0 || pd == NULL || pd->pd.context != mr->mr.context ||
	    !access_ok(new_access) ||
	    range_wraps(addr, length, (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
					      ? (uintptr_t)addr : cur->iova))
		err = EINVAL;
	else if (droce_mr_has_mw(cur))
		err = EBUSY;
	if (err != 0) {
		pthread_mutex_unlock(&mr->lock);
		errno = err;
		return IBV_REREG_MR_ERR_CMD;
	}
	/* a new translation is at its own address (rdma-core passes iova = addr) */
	next = dmr_new(pd, addr, length,
		       (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? (uintptr_t)addr : cur->iova,
		       new_access);
	if (next == NULL) {
		err = errno;
		pthread_mutex_unlock(&mr->lock);
		errno = err;
		return IBV_REREG_MR_ERR_CMD;
	}
	err = droce_mr_replace(cur, next);
	if (err == EINVAL) {
		pthread_mutex_unlock(&mr->lock);
		free(next);
		errno = EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	mr->dmr = next;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr_move_pd(mr, pd);
	mr->mr.addr = addr;
	mr->mr.length = length;
	if (err == 0) {
		free(cur);
	} else {
		/* frames still point into the old memory: keep it for dereg */
		r = malloc(sizeof(*r));
		if (r != NULL) {
			r->dmr = cur;
			r->next = mr->retired;
			mr->retired = r;
		}
		/* (without memory for the note the old struct is leaked, never
		 * freed under the frames) */
	}
	pthread_mutex_unlock(&mr->lock);
	if (err != 0) {
		errno = err;
		return IBV_REREG_MR_ERR_CMD;
	}
	return 0;
}

int
ibv_dereg_mr(struct ibv_mr *ibmr)
{
	if (droce_fk_ctx(ibmr ? ibmr->context : NULL))
		return droce_fk_dereg_mr(ibmr);
	struct droce_vmr *mr = (struct droce_vmr *)ibmr;
	struct droce_vpd *pd;
	int err;

	if (mr == NULL)
		return EINVAL;
	pthread_mutex_lock(&mr->lock);
	if (droce_mr_has_mw(mr->dmr)) {
		pthread_mutex_unlock(&mr->lock);
		return EBUSY; /* ibv_alloc_mw(3): fails while a window is bound to it */
	}
	/* returns once no engine can still be reading the key and no frame in
	 * flight points into the memory (zero-copy transmit); EBUSY when frames
	 * stay held (a stalled port): the key is gone, the MR stays listed */
	err = droce_mr_unregister(mr->dmr);
	if (err == 0)
		err = retired_drain(mr);
	pthread_mutex_unlock(&mr->lock);
	if (err != 0)
		return err;
	pd = (struct droce_vpd *)ibmr->pd;
	pthread_mutex_lock(&pd->lock);
	TAILQ_REMOVE(&pd->mrs, mr, pd_link);
	pthread_mutex_unlock(&pd->lock);
	atomic_fetch_sub(&pd->users, 1);
	pthread_mutex_destroy(&mr->lock);
	free(mr->dmr);
	free(mr);
	return 0;
}
