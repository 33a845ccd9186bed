/* SPDX-License-Identifier: BSD-3-Clause
 * Protection domains and memory regions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	struct droce_vpd *pd = (struct droce_vpd *)ibpd;
	struct droce_vmr *mr;
	int err;

	if (pd == NULL || !access_ok(access) || (uintptr_t)addr + length < (uintptr_t)addr ||
	    iova + length < iova) {
		errno = EINVAL;
		return NULL;
	}
	/* as ib_umem_get: a range whose page-rounded end wraps is EINVAL */
	if (length != 0 && (uintptr_t)addr + length + 4095 < (uintptr_t)addr + length) {
		errno = EINVAL;
		return NULL;
	}
	err = range_mapped((uintptr_t)addr, length,
			   access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_ATOMIC));
	if (err != 0) {
		errno = err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mr->dmr.addr = addr;
	mr->dmr.iova = iova;
	mr->dmr.length = length;
	mr->dmr.access = access & ACCESS_RIGHTS;
	mr->dmr.pd_id = pd->id;
	err = droce_mr_register(&mr->dmr);
	if (err != 0) {
		free(mr);
		errno = err;
		return NULL;
	}
	atomic_fetch_add(&pd->users, 1);
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = mr->dmr.lkey;
	mr->mr.lkey = mr->dmr.lkey;
	mr->mr.rkey = mr->dmr.rkey;
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

int
ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct droce_vmr *mr = (struct droce_vmr *)ibmr;
	struct droce_vpd *pd;
	int err;

	if (mr == NULL)
		return EINVAL;
	if (droce_mr_has_mw(&mr->dmr))
		return EBUSY; /* ibv_alloc_mw(3): fails while a window is bound to it */
	/* returns once no engine can still be reading the key and no frame in
	 * flight points into the memory (zero-copy transmit); EBUSY when frames
	 * stay held (a stalled port): the key is gone, the MR stays listed */
	err = droce_mr_unregister(&mr->dmr);
	if (err != 0)
		return err;
	pd = (struct droce_vpd *)ibmr->pd;
	pthread_mutex_lock(&pd->lock);
	TAILQ_REMOVE(&pd->mrs, mr, pd_link);
	pthread_mutex_unlock(&pd->lock);
	atomic_fetch_sub(&pd->users, 1);
	free(mr);
	return 0;
}
