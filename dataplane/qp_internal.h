/* SPDX-License-Identifier: BSD-3-Clause
 * Engine-side QP helpers shared by qp.c and the transports.
 */
#ifndef DROCE_QP_INTERNAL_H
#define DROCE_QP_INTERNAL_H

#include <string.h>

#include "engine.h"
#include "errors.h"

/* Notices WQEs/RQEs the application has published since the last look. */
void droce_qp_refresh_lc(struct droce_qp *qp);

/* Retires the oldest send WQE with @status (a CQE if signaled or failed). */
void droce_qp_complete_send_lc(struct droce_qp *qp, enum droce_wc_status status);

/* Retires the oldest receive WQE with the completion @proto (wr_id filled in). */
void droce_qp_complete_recv_lc(struct droce_qp *qp, const struct droce_cqe *proto, bool solicited);

/* Moves the QP to the state the error table gives for @err (flushing on ERR). */
void droce_qp_error_lc(struct droce_qp *qp, enum droce_err err);
/* Publishes the state @err moves the QP to (what ibv_query_qp reads), ahead
 * of droce_qp_error_lc(): call it before pushing the completion that reports
 * @err, so a poller that sees that completion also sees the new state. */
void droce_qp_error_publish_lc(struct droce_qp *qp, enum droce_err err);
/* The oldest send WQE (if any) fails because of @err, with the error table's
 * requester status, in that order: the new state published, the completion,
 * the state change. */
void droce_qp_fail_send_lc(struct droce_qp *qp, enum droce_err err);
/* The receive WQE at rq_head fails because of @err: @c (its other fields
 * filled in) completes with the error table's responder status, published
 * and followed by the state change as for a send. */
void droce_qp_fail_recv_lc(struct droce_qp *qp, enum droce_err err, struct droce_cqe *c);
/* The same completion, but the QP carries on in its state (UD, UC and
 * RAW_PACKET: a message too long for its receive buffer). */
void droce_qp_recv_error_lc(struct droce_qp *qp, enum droce_err err, struct droce_cqe *c);

/*
 * Refreshes and says whether a receive WQE is ready at rq_head; for a QP
 * with an SRQ, takes one from the SRQ into its staging slot when none is.
 * Call it only where a message needs a new receive WQE.
 */
bool droce_qp_rq_ready_lc(struct droce_qp *qp);

/* The WQE no longer holds its address handle (UD): it completed or was dropped. */
static inline void
droce_wqe_release_ah(const struct droce_wqe *w)
{
	if (w->ah)
		__atomic_fetch_sub(&w->ah->wqes, 1, __ATOMIC_RELEASE);
}

static inline struct droce_wqe *
droce_qp_wqe(struct droce_qp *qp, uint32_t idx)
{
	return &droce_qp_sq_slot(qp, idx)->wqe;
}

static inline struct droce_swqe *
droce_qp_swqe(struct droce_qp *qp, uint32_t idx)
{
	return &qp->swqe[idx & qp->sq_mask];
}

/* Send slot @idx is done with: its address handle let go, its progress
 * cleared (it must not leak into the WQE that reuses the slot).  Then
 * droce_qp_sq_retire_lc() frees it, with the others before it. */
static inline void
droce_qp_sq_clear_lc(struct droce_qp *qp, uint32_t idx)
{
	droce_wqe_release_ah(droce_qp_wqe(qp, idx));
	memset(droce_qp_swqe(qp, idx), 0, sizeof(qp->swqe[0]));
}

/* The @n oldest send slots, cleared, are free: sq_head moves on, published
 * once (droce_qp_complete_send_lc() retires one with its completion). */
static inline void
droce_qp_sq_retire_lc(struct droce_qp *qp, uint32_t n)
{
	qp->sq_head += n;
	if (qp->sq_cur < qp->sq_head)
		qp->sq_cur = qp->sq_head;
	atomic_store_explicit(&qp->sq_retired, qp->sq_head, memory_order_release);
}

static inline struct droce_rqe *
droce_qp_rqe(struct droce_qp *qp, uint32_t idx)
{
	return &droce_qp_rq_at(qp, idx)->rqe;
}

#endif
