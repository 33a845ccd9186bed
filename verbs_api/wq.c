/* SPDX-License-Identifier: BSD-3-Clause
 * Receive-side scaling: work queues (ibv_create_wq(3), ibv_modify_wq,
 * ibv_destroy_wq, ibv_post_wq_recv), indirection tables
 * (ibv_create_rwq_ind_table(3)) and RX hash RAW_PACKET QPs
 * (ibv_create_qp_ex(3) with IBV_QP_INIT_ATTR_RX_HASH | IND_TABLE).
 *
 * A WQ of type RQ is a receive-only RAW_PACKET QP underneath (its CQ the
 * WQ's, one send slot never used): RESET / RDY / ERR are the QP's RESET,
 * RTR (through INIT) and ERR, posting is the QP's post_recv.  A table is an
 * array of WQs.  An RX hash QP is a RAW_PACKET QP that takes no work request
 * (EINVAL), modify or query (EOPNOTSUPP, as mlx5); its flows (verbs_api/flow.c) are dataplane RSS rules
 * (dataplane/flow.c: the frame goes to table[toeplitz(fields) & (size - 1)]).
 * Lifetimes: a flow holds its QP (ibv_destroy_qp: EBUSY), an RX hash QP its
 * table (ibv_destroy_rwq_ind_table: EBUSY), a table its WQs
 * (ibv_destroy_wq: EBUSY); droce_flow_destroy waits for the engines, so no
 * engine sees a WQ's QP after its last rule is gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- work queues ---- */

static int
wq_post_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return droce_verbs_post_recv(&((struct droce_vwq *)wq)->q->qp, wr, bad_wr);
}

struct ibv_wq *
droce_verbs_create_wq(struct ibv_context *c, struct ibv_wq_init_attr *a)
{
	struct ibv_qp_init_attr ia;
	struct droce_vwq *w;
	struct ibv_qp *qp;

	if (a == NULL || a->pd == NULL || a->cq == NULL || a->pd->context != c ||
	    a->cq->context != c || a->comp_mask != 0 || a->max_wr == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wq_type != IBV_WQT_RQ) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->create_flags != 0) { /* CVLAN stripping, scatter FCS, padding: no */
		errno = EOPNOTSUPP;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = a->cq;
	ia.recv_cq = a->cq;
	ia.qp_type = IBV_QPT_RAW_PACKET;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = a->max_wr;
	ia.cap.max_recv_sge = a->max_sge;
	qp = droce_verbs_create_qp_in(c, a->pd, &ia, 0, NULL, 0);
	if (qp == NULL) {
		int e = errno;

		free(w);
		errno = e;
		return NULL;
	}
	w->q = (struct droce_vqp *)qp;
	w->q->wq = w;
	a->max_wr = ia.cap.max_recv_wr;
	a->max_sge = ia.cap.max_recv_sge;
	w->wq.context = c;
	w->wq.wq_context = a->wq_context;
	w->wq.pd = a->pd;
	w->wq.cq = a->cq;
	w->wq.wq_num = qp->qp_num;
	w->wq.handle = qp->qp_num;
	w->wq.state = IBV_WQS_RESET;
	w->wq.wq_type = IBV_WQT_RQ;
	w->wq.post_recv = wq_post_recv;
	pthread_mutex_init(&w->wq.mutex, NULL);
	pthread_cond_init(&w->wq.cond, NULL);
	return &w->wq;
}

/* The QP states a WQ state change walks through (RDY: INIT then RTR). */
static int
wq_to(struct droce_vwq *w, enum ibv_wq_state to)
{
	struct ibv_qp_attr qa;
	int rc;

	memset(&qa, 0, sizeof(qa));
	switch (to) {
	case IBV_WQS_RESET:
		qa.qp_state = IBV_QPS_RESET;
		return ibv_modify_qp(&w->q->qp, &qa, IBV_QP_STATE);
	case IBV_WQS_ERR:
		qa.qp_state = IBV_QPS_ERR;
		return ibv_modify_qp(&w->q->qp, &qa, IBV_QP_STATE);
	case IBV_WQS_RDY:
		if (w->wq.state == IBV_WQS_RDY)
			return 0;
		if (w->wq.state != IBV_WQS_RESET)
			return EINVAL; /* ERR -> RDY: through RESET */
		qa.qp_state = IBV_QPS_INIT;
		qa.port_num = DROCE_VERBS_PORT_NUM;
		rc = ibv_modify_qp(&w->q->qp, &qa, IBV_QP_STATE | IBV_QP_PORT);
		if (rc != 0)
			return rc;
		qa.qp_state = IBV_QPS_RTR;
		return ibv_modify_qp(&w->q->qp, &qa, IBV_QP_STATE);
	default:
		return EINVAL;
	}
}

int
droce_verbs_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *a)
{
	struct droce_vwq *w = (struct droce_vwq *)wq;
	int rc;

	if (w == NULL || a == NULL ||
	    (a->attr_mask & ~(uint32_t)(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE |
					IBV_WQ_ATTR_FLAGS)))
		return EINVAL;
	if ((a->attr_mask & IBV_WQ_ATTR_FLAGS) && (a->flags_mask & a->flags) != 0)
		return EOPNOTSUPP; /* no CVLAN stripping, FCS scatter, padding */
	if ((a->attr_mask & IBV_WQ_ATTR_CURR_STATE) && a->curr_wq_state != wq->state)
		return EINVAL;
	if (!(a->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	pthread_mutex_lock(&wq->mutex);
	rc = wq_to(w, a->wq_state);
	if (rc == 0)
		wq->state = a->wq_state;
	pthread_mutex_unlock(&wq->mutex);
	return rc;
}

int
droce_verbs_destroy_wq(struct ibv_wq *wq)
{
	struct droce_vwq *w = (struct droce_vwq *)wq;
	int rc;

	if (w == NULL)
		return EINVAL;
	if (atomic_load(&w->users) != 0)
		return EBUSY; /* an indirection table names it */
	w->q->wq = NULL;
	rc = ibv_destroy_qp(&w->q->qp);
	if (rc != 0) {
		w->q->wq = w;
		return rc;
	}
	pthread_cond_destroy(&wq->cond);
	pthread_mutex_destroy(&wq->mutex);
	free(w);
	return 0;
}

/* ---- indirection tables ---- */

struct ibv_rwq_ind_table *
droce_verbs_create_rwq_ind_table(struct ibv_context *c, struct ibv_rwq_ind_table_init_attr *a)
{
	struct droce_vind *t;
	uint32_t n;

	if (a == NULL || a->comp_mask != 0 || a->ind_tbl == NULL ||
	    a->log_ind_tbl_size > DROCE_RSS_MAX_LOG_TABLE) {
		errno = EINVAL;
		return NULL;
	}
	n = 1u << a->log_ind_tbl_size;
	for (uint32_t i = 0; i < n; i++)
		if (a->ind_tbl[i] == NULL || a->ind_tbl[i]->context != c ||
		    a->ind_tbl[i]->wq_type != IBV_WQT_RQ) {
			errno = EINVAL;
			return NULL;
		}
	t = calloc(1, sizeof(*t));
	if (t != NULL) {
		t->wq = calloc(n, sizeof(t->wq[0]));
		t->dqp = calloc(n, sizeof(t->dqp[0]));
	}
	if (t == NULL || t->wq == NULL || t->dqp == NULL) {
		if (t != NULL) {
			free(t->wq);
			free(t->dqp);
		}
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->n = n;
	for (uint32_t i = 0; i < n; i++) {
		t->wq[i] = (struct droce_vwq *)a->ind_tbl[i];
		t->dqp[i] = t->wq[i]->q->dqp;
		atomic_fetch_add(&t->wq[i]->users, 1);
	}
	t->t.context = c;
	t->t.ind_tbl_num = t->wq[0]->wq.wq_num;
	t->t.ind_tbl_handle = t->t.ind_tbl_num;
	return &t->t;
}

int
droce_verbs_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tab)
{
	struct droce_vind *t = (struct droce_vind *)tab;

	if (t == NULL)
		return EINVAL;
	if (atomic_load(&t->users) != 0)
		return EBUSY; /* an RX hash QP uses it */
	for (uint32_t i = 0; i < t->n; i++)
		atomic_fetch_sub(&t->wq[i]->users, 1);
	free(t->wq);
	free(t->dqp);
	free(t);
	return 0;
}

/* ---- RX hash QPs ---- */

struct ibv_qp *
droce_verbs_create_rss_qp(struct ibv_context *c, struct ibv_qp_init_attr_ex *ax)
{
	const struct ibv_rx_hash_conf *h = &ax->rx_hash_conf;
	struct droce_vind *t = (struct droce_vind *)ax->rwq_ind_tbl;
	struct ibv_qp_init_attr ia;
	struct droce_vqp *q;
	struct ibv_qp *qp;

	if (ax->qp_type != IBV_QPT_RAW_PACKET) {
		errno = EOPNOTSUPP; /* RSS is for RAW_PACKET QPs (rss_caps.supported_qpts) */
		return NULL;
	}
	/* both, with its PD, and nothing of a send queue */
	if (!(ax->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ||
	    !(ax->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) || t == NULL || t->t.context != c ||
	    !(ax->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    ax->pd == NULL || ax->pd->context != c || ax->srq != NULL ||
	    ax->cap.max_send_wr != 0 || ax->cap.max_recv_wr != 0) {
		errno = EINVAL;
		return NULL;
	}
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    (h->rx_hash_fields_mask & ~(uint64_t)DROCE_RSS_FIELDS)) {
		errno = EOPNOTSUPP; /* XOR, IPsec SPI, inner headers */
		return NULL;
	}
	/* one L3 and one L4 kind at most (verbs.h), a 40-byte Toeplitz key */
	if (((h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4)) &&
	     (h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6))) ||
	    ((h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP)) &&
	     (h->rx_hash_fields_mask & (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP))) ||
	    h->rx_hash_key_len != DROCE_RSS_KEY_LEN || h->rx_hash_key == NULL) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = ax->qp_context;
	/* the dataplane wants CQs: the first WQ's, never written (nothing is
	 * posted on this QP) */
	ia.send_cq = t->wq[0]->wq.cq;
	ia.recv_cq = t->wq[0]->wq.cq;
	ia.qp_type = IBV_QPT_RAW_PACKET;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = 1;
	qp = droce_verbs_create_qp_in(c, ax->pd, &ia, 0, NULL, 0);
	if (qp == NULL)
		return NULL;
	q = (struct droce_vqp *)qp;
	q->rss.fields = (uint32_t)h->rx_hash_fields_mask;
	memcpy(q->rss.key, h->rx_hash_key, DROCE_RSS_KEY_LEN);
	q->rss.n = t->n;
	q->rss.qp = t->dqp;
	q->rss_tab = t;
	qp->qp_type = IBV_QPT_RAW_PACKET;
	atomic_fetch_add(&t->users, 1);
	ax->cap.max_send_wr = ax->cap.max_recv_wr = 0;
	ax->cap.max_send_sge = ax->cap.max_recv_sge = ax->cap.max_inline_data = 0;
	return qp;
}
