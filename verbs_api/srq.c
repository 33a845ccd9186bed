/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues: ibv_create_srq, ibv_modify_srq, ibv_query_srq,
 * ibv_destroy_srq and ibv_post_srq_recv over dataplane/srq.c.
 *
 * Differences from some hardware, on purpose:
 *  - ibv_modify_srq with IBV_SRQ_MAX_WR (resizing) fails with EINVAL, as on
 *    mlx5; only IBV_SRQ_LIMIT is supported.
 *  - the limit event is checked each time a QP takes a WQE from the SRQ (as
 *    Linux rxe does): arming a limit above the current fill raises the event
 *    at the next take, not at arming.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "fork.h"
#include "internal.h"

struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *ia)
{
	if (droce_fk_ctx(pd ? pd->context : NULL)) {
		errno = EOPNOTSUPP; /* no SRQs in a forked child yet */
		return NULL;
	}
	struct droce_vctx *x;
	struct droce_vsrq *s;

	if (pd == NULL || ia == NULL || ia->attr.max_wr == 0 ||
	    ia->attr.max_wr > DROCE_DP_MAX_SRQ_WR || ia->attr.max_sge > DROCE_DP_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	x = droce_vctx_of(pd->context);
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	s->max_wr = ia->attr.max_wr;
	s->max_sge = ia->attr.max_sge;
	s->serial = droce_verbs_serial();
	s->srq.context = pd->context;
	s->srq.srq_context = ia->srq_context;
	s->srq.pd = pd;
	s->srq.handle = (uint32_t)s->serial;
	s->dsrq = droce_srq_create(s->max_wr, s->max_sge, droce_verbs_srq_limit, s);
	if (s->dsrq == NULL) {
		int e = errno ? errno : ENOMEM;

		free(s);
		errno = e;
		return NULL;
	}
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	atomic_fetch_add(&((struct droce_vpd *)pd)->users, 1);
	pthread_mutex_lock(&x->lock);
	TAILQ_INSERT_TAIL(&x->srqs, s, ctx_link);
	pthread_mutex_unlock(&x->lock);
	ia->attr.srq_limit = 0;
	return &s->srq;
}

int
ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct droce_vsrq *s = (struct droce_vsrq *)srq;

	if (s == NULL || attr == NULL || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) != 0)
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL; /* no resizing (as mlx5) */
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > s->max_wr)
			return EINVAL;
		droce_srq_arm(s->dsrq, attr->srq_limit);
	}
	return 0;
}

int
ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct droce_vsrq *s = (struct droce_vsrq *)srq;

	if (s == NULL || attr == NULL)
		return EINVAL;
	attr->max_wr = s->max_wr;
	attr->max_sge = s->max_sge;
	attr->srq_limit = droce_srq_limit(s->dsrq);
	return 0;
}

int
ibv_destroy_srq(struct ibv_srq *srq)
{
	struct droce_vsrq *s = (struct droce_vsrq *)srq;
	struct droce_vctx *x;
	uint32_t reported;

	if (s == NULL)
		return EINVAL;
	if (atomic_load(&s->users) != 0)
		return EBUSY;
	/* an XRC SRQ's number goes first (EBUSY while an XRC_RECV QP holds it) */
	if (s->srqn != 0 && droce_verbs_xrc_srq_retire(s) != 0)
		return EBUSY;
	x = droce_vctx_of(srq->context);
	/* unlink first: no event can be handed out for it from now on */
	pthread_mutex_lock(&x->lock);
	TAILQ_REMOVE(&x->srqs, s, ctx_link);
	reported = s->async_reported;
	pthread_mutex_unlock(&x->lock);
	/* as rdma-core: wait until every event handed out was acknowledged */
	pthread_mutex_lock(&srq->mutex);
	while (srq->events_completed != reported)
		pthread_cond_wait(&srq->cond, &srq->mutex);
	pthread_mutex_unlock(&srq->mutex);
	if (droce_srq_destroy(s->dsrq) != 0) {
		/* cannot happen: no QP uses it */
		pthread_mutex_lock(&x->lock);
		TAILQ_INSERT_TAIL(&x->srqs, s, ctx_link);
		pthread_mutex_unlock(&x->lock);
		return EBUSY;
	}
	atomic_fetch_sub(&((struct droce_vpd *)srq->pd)->users, 1);
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&srq->mutex);
	free(s);
	return 0;
}

int
droce_verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct droce_vsrq *s = (struct droce_vsrq *)srq;
	struct droce_rqe rqe;

	for (; wr != NULL; wr = wr->next) {
		uint64_t total = 0;
		int rc = 0;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > s->max_sge) {
			rc = EINVAL;
		} else {
			for (int i = 0; i < wr->num_sge; i++) {
				rqe.sge[i].addr = wr->sg_list[i].addr;
				rqe.sge[i].length = wr->sg_list[i].length;
				rqe.sge[i].lkey = wr->sg_list[i].lkey;
				total += wr->sg_list[i].length;
			}
			if (total > DROCE_DP_MAX_MSG)
				rc = EINVAL;
		}
		if (rc == 0) {
			rqe.wr_id = wr->wr_id;
			rqe.num_sge = (uint16_t)wr->num_sge;
			rqe.length = (uint32_t)total;
			rc = droce_srq_post_recv(s->dsrq, &rqe); /* ENOMEM: max_wr posted */
		}
		if (rc != 0) {
			*bad_wr = wr;
			return rc;
		}
	}
	return 0;
}

/*
 * ibv_create_srq_ex(3), reached for what verbs.h does not hand to
 * ibv_create_srq itself: basic SRQs, and XRC SRQs (xrcd.c).  Tag-matching
 * SRQs are EOPNOTSUPP; the CQ and XRCD attributes belong to XRC SRQs and are
 * ignored on a basic one.
 */
struct ibv_srq *
droce_verbs_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	struct ibv_srq_init_attr ia;
	struct ibv_srq *srq;

	if (a == NULL || (a->comp_mask & ~known)) {
		errno = EINVAL;
		return NULL;
	}
	if (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) {
		switch (a->srq_type) {
		case IBV_SRQT_BASIC:
			break;
		case IBV_SRQT_XRC:
			return droce_verbs_create_xrc_srq(context, a);
		case IBV_SRQT_TM:
			errno = EOPNOTSUPP;
			return NULL;
		default:
			errno = EINVAL;
			return NULL;
		}
	}
	if (a->comp_mask & IBV_SRQ_INIT_ATTR_TM) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || a->pd == NULL || a->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = a->srq_context;
	ia.attr = a->attr;
	srq = ibv_create_srq(a->pd, &ia);
	if (srq != NULL)
		a->attr = ia.attr;
	return srq;
}
