/* SPDX-License-Identifier: BSD-3-Clause
 * Memory windows: ibv_alloc_mw / ibv_dealloc_mw / ibv_bind_mw (the context
 * ops verbs.h's inline functions call) and the BIND_MW / LOCAL_INV part of
 * ibv_post_send.  Binding and invalidation happen on the QP's engine, in
 * order with the QP's other WRs (dataplane/mw.c); errors found there
 * complete the WR with IBV_WC_MW_BIND_ERR.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

static_assert((int)IBV_MW_TYPE_1 == 1 && (int)IBV_MW_TYPE_2 == 2, "window types");

/* Window rights a bind may grant.  Local write means nothing for a window
 * (it is never an lkey) and is ignored, as rxe does; zero-based windows are
 * not supported. */
#define MW_RIGHTS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct ibv_mw *
droce_verbs_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct droce_vpd *pd = (struct droce_vpd *)ibpd;
	struct droce_vmw *mw;

	if (pd == NULL || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mw->dmw = droce_mw_alloc(pd->id, (unsigned int)type);
	if (mw->dmw == NULL) {
		int e = errno ? errno : ENOMEM;

		free(mw);
		errno = e;
		return NULL;
	}
	atomic_fetch_add(&pd->users, 1);
	mw->mw.context = ibpd->context;
	mw->mw.pd = ibpd;
	mw->mw.rkey = droce_mw_rkey(mw->dmw);
	mw->mw.handle = mw->mw.rkey;
	mw->mw.type = type;
	pthread_mutex_lock(&pd->lock);
	TAILQ_INSERT_TAIL(&pd->mws, mw, pd_link);
	pthread_mutex_unlock(&pd->lock);
	return &mw->mw;
}

int
droce_verbs_dealloc_mw(struct ibv_mw *ibmw)
{
	struct droce_vmw *mw = (struct droce_vmw *)ibmw;
	struct droce_vpd *pd;

	if (mw == NULL)
		return EINVAL;
	/* unbinds, and returns once no engine can still be reading it */
	droce_mw_free(mw->dmw);
	pd = (struct droce_vpd *)ibmw->pd;
	pthread_mutex_lock(&pd->lock);
	TAILQ_REMOVE(&pd->mws, mw, pd_link);
	pthread_mutex_unlock(&pd->lock);
	atomic_fetch_sub(&pd->users, 1);
	free(mw);
	return 0;
}

/* ibv_bind_mw(3), type 1: a BIND_MW WR on @qp; mw->rkey takes the new rkey
 * at once (the man page: the caller restores it if the bind fails). */
int
droce_verbs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mb)
{
	struct ibv_send_wr wr = { 0 }, *bad = NULL;
	int rc;

	if (qp == NULL || mw == NULL || mb == NULL || mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.wr_id = mb->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mb->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mb->bind_info;
	rc = droce_verbs_post_send(qp, &wr, &bad);
	if (rc == 0)
		mw->rkey = wr.bind_mw.rkey;
	return rc;
}

int
droce_verbs_encode_mw(const struct droce_vqp *q, const struct ibv_send_wr *wr,
		      struct droce_wqe *wqe)
{
	const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;
	const struct ibv_mw *mw = wr->bind_mw.mw;

	if (wr->opcode == IBV_WR_LOCAL_INV) {
		/* the engine checks that it names a type 2 window it may invalidate */
		wqe->invalidate_rkey = wr->invalidate_rkey;
		return 0;
	}
	if (mw == NULL || mw->context != q->qp.context)
		return EINVAL;
	if ((bi->mr == NULL && (bi->addr || bi->length)) ||
	    (bi->mw_access_flags & ~(unsigned int)(MW_RIGHTS | IBV_ACCESS_LOCAL_WRITE)))
		return EINVAL;
	/* the window is named by its index (mw->handle); the key byte is the caller's */
	wqe->rkey = (mw->handle & ~0xffu) | (wr->bind_mw.rkey & 0xffu);
	wqe->remote_addr = bi->addr;
	wqe->compare_add = bi->length;
	wqe->swap = bi->mw_access_flags & MW_RIGHTS;
	wqe->invalidate_rkey = bi->mr ? bi->mr->lkey : 0;
	return 0;
}
