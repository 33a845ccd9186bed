/* SPDX-License-Identifier: BSD-3-Clause
 * Reliable Connected transport, responder: request packets -> memory,
 * receive completions, ACKs/NAKs, queued READ responses and atomic replies.
 * Engine thread only.
 * Over 800 lines: the responder's state machine and, beside it (issue 27),
 * its short ways for in-order WRITE ONLY, SEND ONLY and READ requests,
 * which must make the same checks as the machine and so sit with it.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "engine.h"
#include "errors.h"
#include "internal.h"
#include "qp_internal.h"
#include "rc_internal.h"
#include "rc_sm.h"
#include "xport.h"
#include "xport_rx.h"
#include "xrc.h"

/* An ACK or NAK (opcode ACKNOWLEDGE) for @psn. */
static void
send_aeth(struct droce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	uint8_t *bth, *payload;
	struct rte_mbuf *m = droce_xport_pkt_put_lc(qp, DROCE_OPC(qp->xport, DROCE_OP_ACK),
						    psn & DROCE_PSN_MASK, 0, &bth, &payload);

	if (m == NULL)
		return;
	droce_xport_put_aeth(bth + sizeof(struct droce_bth), syndrome, qp->msn);
	pkt_send(qp, m, 0);
}

static void
send_nak(struct droce_qp *qp, enum droce_nak_code code, uint32_t psn)
{
	send_aeth(qp, droce_aeth_make_syndrome(DROCE_AETH_NAK, code), psn);
}

static bool resp_queue(struct droce_qp *qp, const struct droce_rd_resp *r);

/* The responder's error: NAK it, fail an open receive, move the QP on.  The
 * NAK goes out after the responses already queued for earlier requests. */
static void
resp_error(struct droce_qp *qp, enum droce_err err, uint32_t psn)
{
	const struct droce_err_info *e = &droce_err_table[err];

	if (qp->rd_resp_count && !qp->resp_failing) {
		struct droce_rd_resp nak = { .psn = psn, .nak_err = (uint8_t)err };

		if (resp_queue(qp, &nak)) {
			qp->resp_failing = true;
			return;
		}
	}
	if (e->nak_code != DROCE_ERR_NO_NAK) {
		send_nak(qp, e->nak_code, psn);
		qp->stats.rem_err_naks_tx++;
	}
	qp->resp_failing = false;
	droce_qp_refresh_lc(qp);
	droce_qp_error_publish_lc(qp, err);
	if ((qp->rqe_open || err == DROCE_ERR_LOC_LEN || err == DROCE_ERR_RESP_LOC_PROT) &&
	    qp->rq_head != qp->rq_avail) {
		struct droce_cqe c = { .status = e->resp_status, .opcode = DROCE_WC_RECV };

		droce_qp_complete_recv_lc(qp, &c, false);
		qp->rqe_open = false;
	}
	droce_qp_error_lc(qp, err);
}

/* READ responses and atomic ACKs queued for requests seen for the first time. */
static uint32_t
resp_new_count(const struct droce_qp *qp)
{
	uint32_t n = 0, cap = DROCE_RD_RESP_CAP;

	for (uint32_t i = 0; i < qp->rd_resp_count; i++)
		n += !qp->rd_resp[(qp->rd_resp_head + i) % cap].dup;
	return n;
}

/* Room for one more new READ / atomic (max_dest_rd_atomic of them): the
 * queue's entries are counted only when it holds that many at all. */
static inline bool
resp_new_room(const struct droce_qp *qp)
{
	uint32_t max = RTE_MAX(qp->attr.max_dest_rd_atomic, 1);

	return qp->rd_resp_count < max || resp_new_count(qp) < max;
}

static bool
resp_queue(struct droce_qp *qp, const struct droce_rd_resp *r)
{
	uint32_t cap = DROCE_RD_RESP_CAP;

	if (qp->rd_resp_count == cap || (qp->res == NULL && droce_qp_resp_res_lc(qp) != 0))
		return false; /* full, or no memory for the first one: the caller NAKs */
	qp->rd_resp[(qp->rd_resp_head + qp->rd_resp_count) % cap] = *r;
	qp->rd_resp_count++;
	return true;
}

static bool
read_allowed(const struct droce_qp *qp, uint64_t va, uint32_t rkey, uint32_t len)
{
	return droce_xport_remote_ok_lc(qp, rkey, va, len, DROCE_ACCESS_REMOTE_READ);
}

static void
resp_duplicate(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	uint32_t flags = p->info->flags;

	qp->stats.dup_reqs++;
	if (flags & DROCE_OPF_READ) {
		const struct droce_reth *r = droce_pkt_hdr(p, frame, DROCE_HDR_RETH);
		struct droce_rd_resp e = { .psn = psn, .len = droce_reth_len(r),
					   .rkey = droce_reth_rkey(r), .va = droce_reth_va(r),
					   .dup = true };

		qp->stats.dup_reads++;
		if (read_allowed(qp, e.va, e.rkey, e.len) &&
		    droce_rc_resp_cut_lc(qp, psn, e.va, e.len, !qp->sr_peer))
			resp_queue(qp, &e);
		return;
	}
	if (flags & DROCE_OPF_ATOMIC) {
		for (unsigned int i = 0; qp->atomic_replay != NULL && i < DROCE_ATOMIC_REPLAY; i++) {
			if (qp->atomic_replay[i].valid && qp->atomic_replay[i].psn == psn) {
				struct droce_rd_resp e = { .psn = psn, .atomic = true, .dup = true,
							   .orig = qp->atomic_replay[i].orig };
				qp->stats.dup_atomics++;
				resp_queue(qp, &e);
				return;
			}
		}
		return; /* too old to answer: the requester has long moved on */
	}
	/* SEND / WRITE: acknowledge what we have */
	qp->ack_pending = true;
	qp->ack_psn = droce_psn_add(qp->rxseq.epsn, DROCE_PSN_MASK);
	qp->ack_syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
}

static bool
needs_new_rqe(const struct droce_qp *qp, uint32_t flags)
{
	if (flags & DROCE_OPF_SEND)
		return !qp->rqe_open;
	return (flags & DROCE_OPF_WRITE) && (flags & DROCE_OPF_IMM) && (flags & DROCE_OPF_LAST);
}

static void
resp_send(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	uint32_t flags = p->info->flags;
	const struct droce_rqe *r;

	if (flags & DROCE_OPF_FIRST) {
		qp->rqe_open = true;
		qp->recv_off = 0;
	}
	r = droce_qp_rqe(qp, qp->rq_head);
	if ((uint64_t)qp->recv_off + p->payload_len > r->length) {
		resp_error(qp, DROCE_ERR_LOC_LEN, psn);
		return;
	}
	if (!scatter(qp, r->sge, r->num_sge, qp->recv_off, p->payload, p->payload_len)) {
		resp_error(qp, DROCE_ERR_RESP_LOC_PROT, psn);
		return;
	}
	qp->recv_off += p->payload_len;
	if (flags & DROCE_OPF_LAST) {
		const struct droce_bth *bth = droce_pkt_bth(p, frame);
		struct droce_cqe c = { .status = DROCE_WC_SUCCESS, .opcode = DROCE_WC_RECV,
				       .byte_len = qp->recv_off, .src_qp = qp->attr.dest_qpn };

		if (flags & DROCE_OPF_IMM) {
			c.wc_flags |= DROCE_WC_F_WITH_IMM;
			c.imm_or_inv = droce_immdt_imm(droce_pkt_hdr(p, frame, DROCE_HDR_IMMDT));
		} else if (flags & DROCE_OPF_INV) {
			c.wc_flags |= DROCE_WC_F_WITH_INV;
			c.imm_or_inv = droce_ieth_rkey(droce_pkt_hdr(p, frame, DROCE_HDR_IETH));
			/* remote invalidation: a type 2 window bound through this QP */
			if (!droce_mw_remote_inv_lc(qp, c.imm_or_inv)) {
				resp_error(qp, DROCE_ERR_REM_INV_REQ, psn);
				return;
			}
		}
		qp->rqe_open = false;
		qp->msn = droce_psn_add(qp->msn, 1);
		droce_qp_complete_recv_lc(qp, &c, droce_bth_se(bth));
	}
}

static void
resp_write(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	uint32_t flags = p->info->flags, len = p->payload_len, dlen = 0;
	const struct droce_mr *mr = NULL;

	if (flags & DROCE_OPF_FIRST) {
		if (!droce_xport_write_first_lc(qp, p, frame, &dlen, &mr)) {
			resp_error(qp, DROCE_ERR_REM_ACCESS, psn);
			return;
		}
	}
	if (len && !droce_xport_write_place_lc(qp, mr, dlen, p->payload, len)) {
		resp_error(qp, DROCE_ERR_REM_ACCESS, psn); /* deregistered since the FIRST packet */
		return;
	}
	if (flags & DROCE_OPF_LAST) {
		qp->msn = droce_psn_add(qp->msn, 1);
		if (flags & DROCE_OPF_IMM)
			droce_xport_write_imm_done_lc(qp, p, frame);
	}
}

static void
resp_read(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	const struct droce_reth *r = droce_pkt_hdr(p, frame, DROCE_HDR_RETH);
	struct droce_rd_resp e = { .psn = psn, .len = droce_reth_len(r), .rkey = droce_reth_rkey(r),
				   .va = droce_reth_va(r) };

	if (!read_allowed(qp, e.va, e.rkey, e.len)) {
		resp_error(qp, DROCE_ERR_REM_ACCESS, psn);
		return;
	}
	if (!resp_new_room(qp) || !resp_queue(qp, &e)) {
		resp_error(qp, DROCE_ERR_REM_INV_REQ, psn);
		return;
	}
	qp->msn = droce_psn_add(qp->msn, 1);
}

/* The atomic @opcode (RC or XRC; AtomicETH @a) on the aligned host word
 * @target, kept for a replay of @psn: the value before it (a CMP_SWAP
 * whose compare fails leaves the word and answers the value found). */
static __rte_always_inline uint64_t
atomic_execute(struct droce_qp *qp, uint8_t opcode, const struct droce_atmeth *a, uint64_t *target,
	       uint32_t psn)
{
	uint64_t orig;

	if ((opcode & 0x1f) == DROCE_OP_FETCH_ADD) {
		orig = __atomic_fetch_add(target, droce_atmeth_swap_add(a), __ATOMIC_SEQ_CST);
	} else {
		orig = droce_atmeth_cmp(a);
		/* on failure orig holds the value found */
		(void)__atomic_compare_exchange_n(target, &orig, droce_atmeth_swap_add(a), false,
						  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	qp->atomic_replay[qp->atomic_replay_next] = (struct droce_atomic_replay){ psn, orig, true };
	qp->atomic_replay_next = (qp->atomic_replay_next + 1) % DROCE_ATOMIC_REPLAY;
	return orig;
}

static void
resp_atomic(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	const struct droce_atmeth *a = droce_pkt_hdr(p, frame, DROCE_HDR_ATMETH);
	uint64_t va = droce_atmeth_va(a);
	const struct droce_mr *mr;
	uint64_t *target;
	struct droce_rd_resp e = { .psn = psn, .atomic = true };

	if (va & 7) {
		resp_error(qp, DROCE_ERR_REM_INV_REQ, psn);
		return;
	}
	mr = (qp->attr.access & DROCE_ACCESS_REMOTE_ATOMIC)
		     ? mr_check(qp, droce_atmeth_rkey(a), va, 8, DROCE_ACCESS_REMOTE_ATOMIC)
		     : NULL;
	if (mr == NULL) {
		resp_error(qp, DROCE_ERR_REM_ACCESS, psn);
		return;
	}
	if (!resp_new_room(qp) || droce_qp_resp_res_lc(qp) != 0) {
		resp_error(qp, DROCE_ERR_REM_INV_REQ, psn);
		return;
	}
	target = (uint64_t *)(void *)(mr->addr + (va - mr->iova));
	if ((uintptr_t)target & 7) {
		/*
		 * An aligned va on an MR whose iova and address differ mod 8
		 * (ibv_reg_mr_iova2 allows it): the host word is misaligned.
		 * Invalid request, as rxe answers a misaligned atomic.
		 */
		resp_error(qp, DROCE_ERR_REM_INV_REQ, psn);
		return;
	}
	e.orig = atomic_execute(qp, p->opcode, a, target, psn);
	resp_queue(qp, &e);
	qp->msn = droce_psn_add(qp->msn, 1);
}

/*
 * The responder's receive path as an explicit state machine, in the manner
 * of Linux rxe's rxe_resp.c (rc_sm.h lists the states): one step function
 * per state, each returning the next state; RESP_DONE ends the packet.  A
 * good request passes CHECK_QP_STATE, CHECK_PSN, CHECK_RESOURCE,
 * CHECK_OP_SEQ, EXECUTE and ACKNOWLEDGE; the ends are SEQ_NAK, DUPLICATE,
 * RNR_NAK and ERR_INV_REQ.
 */
/* For logs (debug level: compiled out of the data path by default). */
static const char *const resp_state_name[RESP_STATE_COUNT] = {
	[RESP_CHECK_QP_STATE] = "CHECK_QP_STATE",
	[RESP_CHECK_PSN] = "CHECK_PSN",
	[RESP_CHECK_RESOURCE] = "CHECK_RESOURCE",
	[RESP_CHECK_OP_SEQ] = "CHECK_OP_SEQ",
	[RESP_EXECUTE] = "EXECUTE",
	[RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESP_SEQ_NAK] = "SEQ_NAK",
	[RESP_DUPLICATE] = "DUPLICATE",
	[RESP_RNR_NAK] = "RNR_NAK",
	[RESP_ERR_INV_REQ] = "ERR_INV_REQ",
	[RESP_DONE] = "DONE",
};

const char *
droce_rc_resp_state_name(unsigned int state)
{
	return state < RESP_STATE_COUNT && resp_state_name[state] ? resp_state_name[state] : NULL;
}

/* A step: inlined, with every other, into the entry points (see resp_step),
 * so that the compiler threads the state loop of a good request into
 * straight-line code: no jump-table dispatch per step. */
#define RESP_STATE static inline __attribute__((always_inline)) enum droce_rc_resp_state

/* The request being handled. */
struct resp_pkt {
	const struct droce_pkt *p;
	const uint8_t *frame;
	const struct droce_bth *bth;
	uint32_t psn, flags;
};

RESP_STATE
resp_check_qp_state(struct droce_qp *qp, const struct resp_pkt *r)
{
	(void)r;
	if ((qp->state != DROCE_QPS_RTR && qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD) ||
	    qp->resp_failing)
		return RESP_DONE;
	return RESP_CHECK_PSN;
}

RESP_STATE
resp_check_psn(struct droce_qp *qp, const struct resp_pkt *r)
{
	int32_t d = droce_psn_diff(r->psn, qp->rxseq.epsn);

	if (d > 0)
		return RESP_SEQ_NAK;
	/* XRC target: the request's SRQ, of the QP's domain, is its receive side */
	if (d <= 0 && qp->xrc_role == DROCE_XRC_TGT) {
		enum droce_xrc_sel sel = droce_xrc_tgt_select_lc(qp, r->p, r->frame, d < 0);

		if (sel != DROCE_XRC_SEL_OK)
			return sel == DROCE_XRC_SEL_BUSY ? RESP_RNR_NAK : RESP_ERR_INV_REQ;
	}
	if (d < 0)
		return RESP_DUPLICATE;
	qp->nak_seq_sent = false;
	return RESP_CHECK_RESOURCE;
}

RESP_STATE
resp_seq_nak(struct droce_qp *qp, const struct resp_pkt *r)
{
	if (droce_rc_seq_nak_due_lc(qp, r->psn, droce_bth_ackreq(r->bth))) { /* one NAK per gap and round */
		qp->stats.seq_naks_tx++;
		send_nak(qp, droce_err_table[DROCE_ERR_PSN_SEQ].nak_code, qp->rxseq.epsn);
	}
	return RESP_DONE;
}

/* Selective repeat (rc_sr.c): the requests kept past the expected PSN,
 * up to @hi, leave a hole at it: NAK it now (one per gap and round, as
 * droce_rc_seq_nak_due_lc counts them). */
void
droce_rc_resp_nak_gap_lc(struct droce_qp *qp, uint32_t hi)
{
	if (droce_rc_seq_nak_due_lc(qp, hi, false)) {
		qp->stats.seq_naks_tx++;
		send_nak(qp, droce_err_table[DROCE_ERR_PSN_SEQ].nak_code, qp->rxseq.epsn);
	}
}

RESP_STATE
resp_check_resource(struct droce_qp *qp, const struct resp_pkt *r)
{
	if ((r->flags & (DROCE_OPF_READ | DROCE_OPF_ATOMIC)) &&
	    qp->rd_resp_count == DROCE_RD_RESP_CAP) {
		/* replayed responses fill the queue: let the requester time out and ask again */
		qp->eng->stats.seq_drops++;
		return RESP_DONE;
	}
	/* a receive WQE already at rq_head needs no look at the queue */
	if (needs_new_rqe(qp, r->flags) && qp->rq_head == qp->rq_avail && !droce_qp_rq_ready_lc(qp))
		return RESP_RNR_NAK;
	return RESP_CHECK_OP_SEQ;
}

RESP_STATE
resp_rnr_nak(struct droce_qp *qp, const struct resp_pkt *r)
{
	qp->stats.rnr_naks_tx++;
	send_aeth(qp, droce_aeth_make_syndrome(DROCE_AETH_RNR_NAK, qp->attr.min_rnr_timer), r->psn);
	return RESP_DONE;
}

RESP_STATE
resp_check_op_seq(struct droce_qp *qp, const struct resp_pkt *r)
{
	if (droce_seq_rx_check_psn(&qp->rxseq, r->p, r->frame, r->psn) != DROCE_SEQ_OK)
		return RESP_ERR_INV_REQ;
	return RESP_EXECUTE;
}

RESP_STATE
resp_execute(struct droce_qp *qp, const struct resp_pkt *r)
{
	if (r->flags & DROCE_OPF_SEND)
		resp_send(qp, r->p, r->frame, r->psn);
	else if (r->flags & DROCE_OPF_WRITE)
		resp_write(qp, r->p, r->frame, r->psn);
	else if (r->flags & DROCE_OPF_READ)
		resp_read(qp, r->p, r->frame, r->psn);
	else if (r->flags & DROCE_OPF_ATOMIC)
		resp_atomic(qp, r->p, r->frame, r->psn);
	return RESP_ACKNOWLEDGE;
}

RESP_STATE
resp_acknowledge(struct droce_qp *qp, const struct resp_pkt *r)
{
	if ((r->flags & (DROCE_OPF_SEND | DROCE_OPF_WRITE)) && droce_bth_ackreq(r->bth) &&
	    qp->state != DROCE_QPS_ERR) {
		qp->ack_pending = true;
		qp->ack_psn = r->psn;
		qp->ack_syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	}
	return RESP_DONE;
}

RESP_STATE
resp_duplicate_step(struct droce_qp *qp, const struct resp_pkt *r)
{
	resp_duplicate(qp, r->p, r->frame, r->psn);
	return RESP_DONE;
}

RESP_STATE
resp_err_inv_req(struct droce_qp *qp, const struct resp_pkt *r)
{
	resp_error(qp, DROCE_ERR_REM_INV_REQ, r->psn);
	return RESP_DONE;
}

static inline __attribute__((always_inline)) enum droce_rc_resp_state
resp_step(struct droce_qp *qp, enum droce_rc_resp_state st, const struct resp_pkt *r)
{
	switch (st) {
	case RESP_CHECK_QP_STATE: return resp_check_qp_state(qp, r);
	case RESP_CHECK_PSN: return resp_check_psn(qp, r);
	case RESP_CHECK_RESOURCE: return resp_check_resource(qp, r);
	case RESP_CHECK_OP_SEQ: return resp_check_op_seq(qp, r);
	case RESP_EXECUTE: return resp_execute(qp, r);
	case RESP_ACKNOWLEDGE: return resp_acknowledge(qp, r);
	case RESP_SEQ_NAK: return resp_seq_nak(qp, r);
	case RESP_DUPLICATE: return resp_duplicate_step(qp, r);
	case RESP_RNR_NAK: return resp_rnr_nak(qp, r);
	case RESP_ERR_INV_REQ: return resp_err_inv_req(qp, r);
	default: return RESP_DONE;
	}
}

static inline struct resp_pkt
resp_pkt_of(const struct droce_pkt *p, const uint8_t *frame)
{
	const struct droce_bth *bth = droce_pkt_bth(p, frame);

	return (struct resp_pkt){ .p = p, .frame = frame, .bth = bth, .psn = droce_bth_psn(bth),
				  .flags = p->info->flags };
}

DROCE_RC_SM_STEP enum droce_rc_resp_state
droce_rc_resp_step_lc(struct droce_qp *qp, enum droce_rc_resp_state st, const struct droce_pkt *p,
		      const uint8_t *frame)
{
	const struct resp_pkt r = resp_pkt_of(p, frame);

	return resp_step(qp, st, &r);
}

/* The states in which a responder takes requests (CHECK_QP_STATE's), one bit each. */
#define QPS_RESP_OK (1u << DROCE_QPS_RTR | 1u << DROCE_QPS_RTS | 1u << DROCE_QPS_SQD)

/*
 * The usual requests the short way: an RDMA WRITE ONLY (no immediate), a
 * SEND ONLY (with or without immediate, not with invalidate), an RDMA
 * READ request or an atomic (resp_atomic_fast) with the expected PSN.  Every check the state machine makes of it on the way to
 * EXECUTE (CHECK_QP_STATE, CHECK_PSN with no XRC target, CHECK_RESOURCE: a
 * SEND's receive WQE already at rq_head, a READ's room in the response
 * queue, CHECK_OP_SEQ: no message open, at most a path MTU, a WRITE's RETH
 * length the payload's) and the memory check of where the payload goes or
 * comes from (the RETH's MR; the receive WQE's one SGE) are made first,
 * changing nothing; then what EXECUTE (resp_write,
 * resp_send) and ACKNOWLEDGE would do, in one go.  False, with nothing
 * changed, when any check fails or the packet is another: the state
 * machine takes it and finds the same answer the long way (its NAK
 * included).
 */
#define ONLY_FAST_MASK (DROCE_OPF_REQ | DROCE_OPF_ONLY | DROCE_OPF_WRITE | DROCE_OPF_SEND | \
			DROCE_OPF_READ | DROCE_OPF_ATOMIC | DROCE_OPF_IMM | DROCE_OPF_INV)

/*
 * resp_only_fast's atomic (its common checks made): CHECK_RESOURCE (room in
 * the response queue), EXECUTE's checks (an aligned va, REMOTE_ATOMIC on
 * the QP and the MR, room for a new READ / atomic counted without the
 * queue's walk, the response memory there already, an aligned host word),
 * then resp_atomic's operation, replay entry and queued answer, and what
 * CHECK_PSN / CHECK_OP_SEQ leave for an ONLY.  False, with nothing
 * changed, when a check fails: the state machine then answers (NAKs
 * included).
 */
static __rte_always_inline bool
resp_atomic_fast(struct droce_qp *qp, const struct resp_pkt *r)
{
	const struct droce_atmeth *a = droce_pkt_hdr(r->p, r->frame, DROCE_HDR_ATMETH);
	uint64_t va = droce_atmeth_va(a), orig;
	const struct droce_mr *mr;
	uint64_t *target;

	if (r->p->payload_len != 0 || (va & 7) || qp->res == NULL ||
	    qp->rd_resp_count >= RTE_MAX(qp->attr.max_dest_rd_atomic, 1) ||
	    qp->rd_resp_count >= DROCE_RD_RESP_CAP ||
	    !(qp->attr.access & DROCE_ACCESS_REMOTE_ATOMIC))
		return false;
	mr = mr_check(qp, droce_atmeth_rkey(a), va, 8, DROCE_ACCESS_REMOTE_ATOMIC);
	if (mr == NULL)
		return false;
	target = (uint64_t *)(void *)(mr->addr + (va - mr->iova));
	if ((uintptr_t)target & 7)
		return false;
	/* CHECK_PSN, CHECK_OP_SEQ (droce_seq_rx_check_psn's state for an ONLY) */
	qp->nak_seq_sent = false;
	qp->rxseq.msg_bytes = 0;
	qp->rxseq.epsn = droce_psn_add(r->psn, 1);
	/* EXECUTE (resp_atomic) */
	orig = atomic_execute(qp, r->p->opcode, a, target, r->psn);
	qp->rd_resp[(qp->rd_resp_head + qp->rd_resp_count) % DROCE_RD_RESP_CAP] =
		(struct droce_rd_resp){ .psn = r->psn, .atomic = true, .orig = orig };
	qp->rd_resp_count++;
	qp->msn = droce_psn_add(qp->msn, 1);
	return true; /* no ACK: the atomic ACK answers it */
}
static __rte_always_inline bool
resp_only_fast(struct droce_qp *qp, const struct resp_pkt *r)
{
	const struct droce_pkt *p = r->p;
	const struct droce_mr *mr = NULL;
	uint32_t len = p->payload_len, f = r->flags & ONLY_FAST_MASK;
	uint8_t *dst = NULL;

	if (r->psn != qp->rxseq.epsn || !((QPS_RESP_OK >> qp->state) & 1u) || qp->resp_failing ||
	    qp->xrc_role == DROCE_XRC_TGT || qp->rxseq.open_kind != 0 || len > qp->rxseq.pmtu)
		return false;
	if (f == (DROCE_OPF_REQ | DROCE_OPF_ONLY | DROCE_OPF_WRITE)) {
		const struct droce_reth *reth = droce_pkt_hdr(p, r->frame, DROCE_HDR_RETH);
		uint64_t va = droce_reth_va(reth);
		uint32_t rkey = droce_reth_rkey(reth);

		if (droce_reth_len(reth) != len)
			return false;
		if (len != 0) {
			if (!(qp->attr.access & DROCE_ACCESS_REMOTE_WRITE))
				return false;
			mr = mr_check(qp, rkey, va, len, DROCE_ACCESS_REMOTE_WRITE);
			if (mr == NULL)
				return false;
			dst = mr->addr + (va - mr->iova);
		}
		/* CHECK_OP_SEQ's state for an ONLY (droce_seq_rx_check_psn) */
		qp->rxseq.write_len = len;
		/* EXECUTE: the write cursor as droce_xport_write_first_lc /
		 * _place_lc leave it */
		qp->write_rkey = rkey;
		qp->write_va = va + len;
	} else if ((f & ~DROCE_OPF_IMM) == (DROCE_OPF_REQ | DROCE_OPF_ONLY | DROCE_OPF_SEND)) {
		const struct droce_rqe *rqe;

		if (qp->rqe_open || qp->rq_head == qp->rq_avail)
			return false;
		rqe = droce_qp_rqe(qp, qp->rq_head);
		if (len > rqe->length)
			return false;
		if (len != 0) {
			if (rqe->num_sge != 1)
				return false;
			mr = mr_check(qp, rqe->sge[0].lkey, rqe->sge[0].addr, len,
				      DROCE_ACCESS_LOCAL_WRITE);
			if (mr == NULL)
				return false;
			dst = mr->addr + (rqe->sge[0].addr - mr->iova);
		}
		/* EXECUTE: resp_send's FIRST then LAST */
		qp->recv_off = len;
	} else if (f == (DROCE_OPF_REQ | DROCE_OPF_ONLY | DROCE_OPF_READ)) {
		/* a READ request: queued for the transmit turn (resp_read) when
		 * the queue has room for a new one and its memory */
		const struct droce_reth *reth = droce_pkt_hdr(p, r->frame, DROCE_HDR_RETH);
		struct droce_rd_resp e = { .psn = r->psn, .len = droce_reth_len(reth),
					   .rkey = droce_reth_rkey(reth), .va = droce_reth_va(reth) };

		if (qp->res == NULL || qp->rd_resp_count >= RTE_MAX(qp->attr.max_dest_rd_atomic, 1) ||
		    qp->rd_resp_count >= DROCE_RD_RESP_CAP || !read_allowed(qp, e.va, e.rkey, e.len))
			return false;
		qp->nak_seq_sent = false;
		qp->rxseq.msg_bytes = 0;
		qp->rxseq.epsn = droce_psn_add(r->psn, droce_seq_npkts(e.len, qp->rxseq.pmtu));
		qp->rd_resp[(qp->rd_resp_head + qp->rd_resp_count) % DROCE_RD_RESP_CAP] = e;
		qp->rd_resp_count++;
		qp->msn = droce_psn_add(qp->msn, 1);
		return true; /* no ACK: the responses answer it */
	} else if (f == (DROCE_OPF_REQ | DROCE_OPF_ONLY | DROCE_OPF_ATOMIC)) {
		return resp_atomic_fast(qp, r);
	} else {
		return false;
	}
	/* CHECK_PSN, CHECK_OP_SEQ (droce_seq_rx_check_psn's state for an ONLY) */
	qp->nak_seq_sent = false;
	qp->rxseq.msg_bytes = len;
	qp->rxseq.epsn = droce_psn_add(r->psn, 1);
	if (len != 0)
		rte_memcpy(dst, p->payload, len);
	qp->msn = droce_psn_add(qp->msn, 1);
	if (f & DROCE_OPF_SEND) {
		struct droce_cqe c = { .status = DROCE_WC_SUCCESS, .opcode = DROCE_WC_RECV,
				       .byte_len = len, .src_qp = qp->attr.dest_qpn };

		if (f & DROCE_OPF_IMM) {
			c.wc_flags |= DROCE_WC_F_WITH_IMM;
			c.imm_or_inv = droce_immdt_imm(droce_pkt_hdr(p, r->frame, DROCE_HDR_IMMDT));
		}
		droce_qp_complete_recv_lc(qp, &c, droce_bth_se(r->bth));
	}
	/* ACKNOWLEDGE (the QP is not in ERR: checked above) */
	if (droce_bth_ackreq(r->bth)) {
		qp->ack_pending = true;
		qp->ack_psn = r->psn;
		qp->ack_syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	}
	return true;
}

void
droce_rc_resp_rx_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame)
{
	const struct resp_pkt r = resp_pkt_of(p, frame);
	enum droce_rc_resp_state st = RESP_CHECK_QP_STATE;

	if (resp_only_fast(qp, &r))
		return;
	while (st != RESP_DONE) {
		enum droce_rc_resp_state next = resp_step(qp, st, &r);

		DP_LOG_DP(DEBUG, "qp %u psn %u: %s -> %s", qp->qpn, r.psn, resp_state_name[st],
			  resp_state_name[next]);
		st = next;
	}
}

/*
 * The responder's transmit turn as a state machine (rc_sm.h lists the
 * states): the queued READ responses and atomic ACKs oldest first, a NAK
 * queued behind them, then the pending coalesced ACK.
 */
static const char *const rtx_state_name[RTX_STATE_COUNT] = {
	[RTX_NEXT] = "NEXT",
	[RTX_NAK] = "NAK",
	[RTX_ATOMIC_ACK] = "ATOMIC_ACK",
	[RTX_READ_RESP] = "READ_RESP",
	[RTX_SENT] = "SENT",
	[RTX_ACK] = "ACK",
	[RTX_DONE] = "DONE",
};

const char *
droce_rc_rtx_state_name(unsigned int state)
{
	return state < RTX_STATE_COUNT ? rtx_state_name[state] : NULL;
}

/* The fields every queued answer starts from: an ACK syndrome, the MSN. */
static inline void
rtx_fields(const struct droce_qp *qp, struct droce_pkt_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->aeth.syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	f->aeth.msn = qp->msn;
}

static inline void
rtx_dequeue(struct droce_qp *qp)
{
	qp->rd_resp_head = (qp->rd_resp_head + 1) % DROCE_RD_RESP_CAP;
	qp->rd_resp_count--;
}

static inline enum droce_rc_rtx_state
rtx_next(struct droce_qp *qp, struct droce_rc_rtx_ctx *c)
{
	if (qp->rd_resp_count == 0 || c->sent >= c->budget)
		return RTX_ACK;
	c->e = &qp->rd_resp[qp->rd_resp_head];
	return c->e->nak_err ? RTX_NAK : c->e->atomic ? RTX_ATOMIC_ACK : RTX_READ_RESP;
}

static enum droce_rc_rtx_state
rtx_nak(struct droce_qp *qp, struct droce_rc_rtx_ctx *c)
{
	/* everything before it has been answered: now fail */
	enum droce_err err = (enum droce_err)c->e->nak_err;
	uint32_t psn = c->e->psn;

	rtx_dequeue(qp);
	resp_error(qp, err, psn);
	c->sent++;
	return RTX_DONE;
}

static enum droce_rc_rtx_state
rtx_atomic_ack(struct droce_qp *qp, struct droce_rc_rtx_ctx *c)
{
	uint8_t opcode = DROCE_OPC(qp->xport, DROCE_OP_ATOMIC_ACK);
	const struct droce_opcode_info *oi = &droce_opcode_table[opcode];
	uint8_t *bth, *payload;
	struct rte_mbuf *m = droce_xport_pkt_put_lc(qp, opcode, c->e->psn & DROCE_PSN_MASK, 0, &bth,
						    &payload);

	if (m == NULL)
		return RTX_ACK;
	droce_xport_put_aeth(bth + oi->off[DROCE_HDR_AETH],
			     droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID),
			     qp->msn);
	droce_atmack_set_orig((struct droce_atmack *)(bth + oi->off[DROCE_HDR_ATMACK]), c->e->orig);
	pkt_send(qp, m, 0);
	c->whole = true;
	return RTX_SENT;
}

static enum droce_rc_rtx_state
rtx_read_resp(struct droce_qp *qp, struct droce_rc_rtx_ctx *c)
{
	struct droce_rd_resp *e = c->e;
	uint32_t pmtu = qp->attr.pmtu;
	uint32_t len = RTE_MIN(pmtu, e->len - e->off);
	bool first = e->off == 0, last = e->off + len == e->len;
	enum droce_op op = first && last ? DROCE_OP_READ_RESP_ONLY
			   : first	 ? DROCE_OP_READ_RESP_FIRST
			   : last	 ? DROCE_OP_READ_RESP_LAST
					 : DROCE_OP_READ_RESP_MIDDLE;
	uint8_t opcode = DROCE_OPC(qp->xport, op);
	uint32_t psn = droce_psn_add(e->psn, e->off / pmtu);
	const struct droce_mr *mr = NULL;
	const uint8_t *src = NULL;

	if (len) {
		mr = mr_check(qp, e->rkey, e->va + e->off, len, DROCE_ACCESS_REMOTE_READ);
		if (mr == NULL) {
			/* deregistered since the request was checked */
			qp->rd_resp_count = 0;
			resp_error(qp, DROCE_ERR_REM_ACCESS, psn);
			return RTX_DONE;
		}
		src = mr->addr + (e->va + e->off - mr->iova);
	}
	if (droce_xport_zc_ok(qp, len)) {
		/* straight from the responder's MR (zcopy.c) */
		struct droce_pkt_fields f;

		rtx_fields(qp, &f);
		f.opcode = opcode;
		f.psn = psn;
		f.dqpn = qp->attr.dest_qpn;
		if (droce_zc_send_span_lc(qp, &f, mr, src, len) != DROCE_XPORT_TX_SENT)
			return RTX_ACK;
	} else {
		/* the template and the AETH (not on a MIDDLE) put straight */
		const struct droce_opcode_info *oi = &droce_opcode_table[opcode];
		uint8_t *bth, *payload;
		struct rte_mbuf *m = droce_xport_pkt_put_lc(qp, opcode, psn, len, &bth, &payload);

		if (m == NULL)
			return RTX_ACK;
		if (oi->hdr_mask & DROCE_HDRM(AETH))
			droce_xport_put_aeth(bth + oi->off[DROCE_HDR_AETH],
					     droce_aeth_make_syndrome(DROCE_AETH_ACK,
								      DROCE_AETH_CREDIT_INVALID),
					     qp->msn);
		if (len)
			memcpy(payload, src, len);
		pkt_send(qp, m, len);
	}
	e->off += len;
	c->whole = last;
	return RTX_SENT;
}

static inline enum droce_rc_rtx_state
rtx_sent(struct droce_qp *qp, struct droce_rc_rtx_ctx *c)
{
	c->sent++;
	if (c->whole)
		rtx_dequeue(qp);
	return RTX_NEXT;
}

static inline enum droce_rc_rtx_state
rtx_ack(struct droce_qp *qp, struct droce_rc_rtx_ctx *c)
{
	if (qp->ack_pending && qp->rd_resp_count == 0 && c->sent < c->budget) {
		send_aeth(qp, qp->ack_syndrome, qp->ack_psn);
		qp->ack_pending = false;
		c->sent++;
	}
	return RTX_DONE;
}

static enum droce_rc_rtx_state
rtx_step(struct droce_qp *qp, enum droce_rc_rtx_state st, struct droce_rc_rtx_ctx *c)
{
	switch (st) {
	case RTX_NEXT: return rtx_next(qp, c);
	case RTX_NAK: return rtx_nak(qp, c);
	case RTX_ATOMIC_ACK: return rtx_atomic_ack(qp, c);
	case RTX_READ_RESP: return rtx_read_resp(qp, c);
	case RTX_SENT: return rtx_sent(qp, c);
	case RTX_ACK: return rtx_ack(qp, c);
	default: return RTX_DONE;
	}
}

DROCE_RC_SM_STEP enum droce_rc_rtx_state
droce_rc_rtx_step_lc(struct droce_qp *qp, enum droce_rc_rtx_state st, struct droce_rc_rtx_ctx *c)
{
	return rtx_step(qp, st, c);
}

/* The turn's machine, out of line: the common turn pays none of its
 * registers, stack and context. */
static __attribute__((noinline)) unsigned int
resp_tx_run(struct droce_qp *qp, unsigned int budget)
{
	struct droce_rc_rtx_ctx c = { .budget = budget };
	enum droce_rc_rtx_state st = RTX_NEXT;

	while (st != RTX_DONE) {
		enum droce_rc_rtx_state next = rtx_step(qp, st, &c);

		DP_LOG_DP(DEBUG, "qp %u resp tx: %s -> %s", qp->qpn, rtx_state_name[st],
			  rtx_state_name[next]);
		st = next;
	}
	return c.sent;
}

unsigned int
droce_rc_resp_tx_lc(struct droce_qp *qp, unsigned int budget)
{
	if (qp->rd_resp_count == 0 && !qp->ack_pending)
		return 0; /* the common turn: nothing queued, no ACK due */
	return resp_tx_run(qp, budget);
}

void
droce_rc_ack_now_lc(struct droce_qp *qp)
{
	if (qp->ack_pending && qp->rd_resp_count == 0) {
		send_aeth(qp, qp->ack_syndrome, qp->ack_psn);
		qp->ack_pending = false;
	}
}
