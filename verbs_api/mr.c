/* SPDX-License-Identifier: BSD-3-Clause
 * Protection domains and memory regions.
 */
#include <errno.h>
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
	return &pd->pd;
}

int
ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct droce_vpd *pd = (struct droce_vpd *)ibpd;

	if (pd == NULL)
		return EINVAL;
	if (atomic_load(&pd->users) != 0)
		return EBUSY;
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

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	struct droce_vpd *pd = (struct droce_vpd *)ibpd;
	struct droce_vmr *mr;

	if (pd == NULL || !access_ok(access) || (uintptr_t)addr + length < (uintptr_t)addr ||
	    iova + length < iova) {
		errno = EINVAL;
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
	if (droce_mr_register(&mr->dmr) != 0) {
		int e = errno ? errno : ENOMEM;

		free(mr);
		errno = e;
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

	if (mr == NULL)
		return EINVAL;
	if (droce_mr_has_mw(&mr->dmr))
		return EBUSY; /* ibv_alloc_mw(3): fails while a window is bound to it */
	/* returns once no engine can still be reading the key */
	droce_mr_unregister(&mr->dmr);
	atomic_fetch_sub(&((struct droce_vpd *)ibmr->pd)->users, 1);
	free(mr);
	return 0;
}
