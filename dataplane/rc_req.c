/* SPDX-License-Identifier: BSD-3-Clause
 * Reliable Connected transport, requester: send WQEs -> request packets
 * (segmenting through xport.h), the send window, going back to re-send
 * (droce_rc_rewind_lc).  Engine thread only.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "cc.h"
#include "engine.h"
#include "errors.h"
#include "internal.h"
#include "qp_internal.h"
#include "rc_internal.h"
#include "rc_sm.h"
#include "xport.h"
#include "xrc.h"

#define ACKREQ_EVERY 16 /* packets between AckReq bits inside a long message */

void
droce_rc_fail_head_lc(struct droce_qp *qp, enum droce_err err)
{
	fail_head(qp, err);
}

static inline uint8_t
request_opcode(const struct droce_wqe *w, bool first, bool last)
{
	return droce_xport_request_opcode(w, first, last, DROCE_TRANSPORT_RC);
}

/* Checks a WQE's local buffers and reserves its PSNs; returns an error or
 * NONE.  *@mr0: the MR of its one SGE when it has exactly one (checked over
 * the whole SGE: good for this turn's gathers, see droce_xport_send_segment_lc). */
static enum droce_err
wqe_start(struct droce_qp *qp, uint32_t idx, const struct droce_mr **mr0)
{
	const struct droce_wqe *w = droce_qp_wqe(qp, idx);
	struct droce_swqe *s = droce_qp_swqe(qp, idx);
	uint32_t need = (wr_is_read(w->opcode) || wr_is_atomic(w->opcode)) ? DROCE_ACCESS_LOCAL_WRITE : 0;

	memset(s, 0, sizeof(*s));
	switch (w->opcode) {
	case DROCE_WR_BIND_MW:
	case DROCE_WR_LOCAL_INV: {
		/* executed when reached, no packets; completes in order (retire_local) */
		enum droce_err err = droce_mw_exec_lc(qp, w);

		if (err != DROCE_ERR_NONE)
			return err;
		s->first_psn = qp->psn_next;
		s->started = true;
		s->done = true;
		return DROCE_ERR_NONE;
	}
	case DROCE_WR_SEND:
	case DROCE_WR_SEND_WITH_IMM:
	case DROCE_WR_SEND_WITH_INV:
	case DROCE_WR_RDMA_WRITE:
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
	case DROCE_WR_RDMA_READ:
		s->npkts = droce_seq_npkts(w->length, qp->attr.pmtu);
		break;
	case DROCE_WR_ATOMIC_CMP_AND_SWP:
	case DROCE_WR_ATOMIC_FETCH_AND_ADD:
		s->npkts = 1;
		break;
	default:
		return DROCE_ERR_REM_OP;
	}
	*mr0 = NULL;
	if (!(w->flags & DROCE_WQE_INLINE))
		for (unsigned int i = 0; i < w->num_sge; i++) {
			const struct droce_mr *mr;

			if (w->sge[i].length == 0)
				continue;
			mr = mr_check(qp, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, need);
			if (mr == NULL)
				return DROCE_ERR_LOC_PROT;
			if (w->num_sge == 1)
				*mr0 = mr;
		}
	if (wr_is_atomic(w->opcode) && (w->num_sge == 0 || w->sge[0].length < 8))
		return DROCE_ERR_LOC_PROT;
	s->first_psn = qp->psn_next;
	s->started = true;
	return DROCE_ERR_NONE;
}

/* Records that everything before @next has been sent (inlined: one per
 * packet on the way out). */
static __rte_always_inline void
note_sent(struct droce_qp *qp, uint32_t next)
{
	droce_rc_rtt_sent_lc(qp, qp->psn_max, next);
	qp->psn_next = next;
	if (droce_psn_diff(next, qp->psn_max) > 0)
		qp->psn_max = next;
	if (qp->rto_deadline == 0)
		rearm_rto(qp);
}

/* True when the requester must wait for ACKs before sending more SEND/WRITE
 * packets (the PSNs of READ responses in flight count too). */
static bool
window_full(const struct droce_qp *qp)
{
	/* a timeout's probe (the last packet sent, again) goes out whatever the window */
	return droce_psn_diff(qp->psn_next, qp->psn_una) >= (int32_t)droce_rc_window(qp) &&
	       droce_psn_add(qp->psn_next, 1) != qp->psn_max;
}

/* An atomic request: one packet (false: no mbuf), its headers put straight
 * (droce_xport_pkt_put_lc). */
static __rte_always_inline bool
send_atomic_req(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s)
{
	bool cas = w->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP;
	uint8_t opcode = DROCE_OPC(qp->xport, cas ? DROCE_OP_CMP_SWAP : DROCE_OP_FETCH_ADD);
	const struct droce_opcode_info *oi = &droce_opcode_table[opcode];
	struct droce_atmeth *a;
	uint8_t *bth, *payload;
	struct rte_mbuf *m = droce_xport_pkt_put_lc(qp, opcode, 1u << 31 | s->first_psn, 0, &bth,
						    &payload);

	if (m == NULL)
		return false;
	if (oi->hdr_mask & DROCE_HDRM(XRCETH)) /* XRC: the remote SRQ */
		droce_xrceth_set_srqn((struct droce_xrceth *)(bth + oi->off[DROCE_HDR_XRCETH]),
				      w->remote_qpn);
	a = (struct droce_atmeth *)(bth + oi->off[DROCE_HDR_ATMETH]);
	droce_atmeth_set_va(a, w->remote_addr);
	droce_atmeth_set_rkey(a, w->rkey);
	droce_atmeth_set_swap_add(a, cas ? w->swap : w->compare_add);
	droce_atmeth_set_cmp(a, cas ? w->compare_add : 0);
	pkt_send(qp, m, 0);
	s->sent_pkts = s->npkts;
	return true;
}

/* READ @s is to be asked again for what of it has not arrived (nothing
 * when all of it has: done, it waits only for the WQEs before it). */
static void
read_reask(struct droce_swqe *s)
{
	if (s->done)
		return;
	s->sent = 0;
	s->sent_pkts = 0;
	s->reask = true;
}

/* Goes back to resend from @psn (go-back-N; READs ask only for what is missing). */
void
droce_rc_rewind_lc(struct droce_qp *qp, uint32_t psn)
{
	uint32_t idx, pmtu = qp->attr.pmtu;

	for (idx = qp->sq_head; idx != qp->sq_avail; idx++) {
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		int32_t d;

		if (!s->started)
			return; /* nothing sent at or after that PSN */
		d = droce_psn_diff(psn, s->first_psn);
		if (d >= 0 && (uint32_t)d < s->npkts)
			break;
		if (d < 0)
			return;
	}
	if (idx == qp->sq_avail)
		return;
	if ((int32_t)(idx - qp->sq_cur) > 0) {
		/* a go-back to before it is under way and will reach it: a READ
		 * there is asked again for what it misses, nothing else moves */
		if (wr_is_read(droce_qp_wqe(qp, idx)->opcode))
			read_reask(droce_qp_swqe(qp, idx));
		return;
	}
	{
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		const struct droce_wqe *w = droce_qp_wqe(qp, idx);
		uint32_t k = (uint32_t)droce_psn_diff(psn, s->first_psn);

		if (wr_is_read(w->opcode)) {
			/* asked again for what has not arrived; what has stays */
			read_reask(s);
		} else if (wr_is_atomic(w->opcode)) {
			s->sent_pkts = 0; /* asked again whole */
		} else {
			s->sent_pkts = k;
			s->sent = k * pmtu;
		}
	}
	/* later WQEs start again from scratch, with the same PSNs; a READ keeps
	 * what arrived of it and is asked again for the rest (a responder drops
	 * the responses it still had queued past a repeated READ) */
	for (uint32_t j = idx + 1; j != qp->sq_avail; j++) {
		struct droce_swqe *s = droce_qp_swqe(qp, j);
		uint8_t op = droce_qp_wqe(qp, j)->opcode;

		if (!s->started)
			break;
		if (droce_mw_wr_is_local(op))
			continue; /* executed once; passed over on the way again */
		if (wr_is_read(op)) {
			read_reask(s);
			continue;
		}
		s->started = false;
		if (s->rd_counted) {
			s->rd_counted = false;
			qp->rd_atomic_out--;
		}
	}
	qp->sq_cur = idx;
	qp->psn_next = psn;
	qp->stats.retransmits++;
	droce_rc_rtt_cancel_lc(qp, psn); /* Karn: no sample from what may be re-sent */
}

/* Completes executed BIND_MW / LOCAL_INV WQEs that reached the head. */
static void
retire_local(struct droce_qp *qp)
{
	while (qp->sq_head != qp->sq_avail && qp->sq_head != qp->sq_cur &&
	       droce_mw_wr_is_local(droce_qp_wqe(qp, qp->sq_head)->opcode) &&
	       droce_qp_swqe(qp, qp->sq_head)->started)
		droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
}

/*
 * The requester's transmit turn as a state machine (rc_sm.h lists the
 * states): one step function per state, each returning the next.  A WQE
 * passes NEXT_WQE -> WINDOW -> CHECK_LOCAL (first time) -> SEND_PKT ->
 * NOTE_SENT, back to NEXT_WQE for its next packet or to WQE_DONE after its
 * last; BIND_MW / LOCAL_INV go LOCAL_OP -> RETIRE_LOCAL; a WQE that cannot
 * start goes to FAIL.  Every stop (budget, window, limits, no mbuf) is DONE.
 */
static const char *const req_state_name[REQ_STATE_COUNT] = {
	[REQ_CHECK_QP_STATE] = "CHECK_QP_STATE",
	[REQ_RETIRE_LOCAL] = "RETIRE_LOCAL",
	[REQ_NEXT_WQE] = "NEXT_WQE",
	[REQ_WINDOW] = "WINDOW",
	[REQ_CHECK_LOCAL] = "CHECK_LOCAL",
	[REQ_LOCAL_OP] = "LOCAL_OP",
	[REQ_SEND_PKT] = "SEND_PKT",
	[REQ_NOTE_SENT] = "NOTE_SENT",
	[REQ_WQE_DONE] = "WQE_DONE",
	[REQ_FAIL] = "FAIL",
	[REQ_DONE] = "DONE",
};

const char *
droce_rc_req_state_name(unsigned int state)
{
	return state < REQ_STATE_COUNT ? req_state_name[state] : NULL;
}

/* Takes the WQE at @idx into the context. */
static inline void
req_take(struct droce_qp *qp, struct droce_rc_req_ctx *c, uint32_t idx)
{
	c->idx = idx;
	c->w = droce_qp_wqe(qp, idx);
	c->s = droce_qp_swqe(qp, idx);
	c->rd = wr_is_read(c->w->opcode) || wr_is_atomic(c->w->opcode);
}

static inline enum droce_rc_req_state
req_check_qp_state(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	if (qp->state != DROCE_QPS_RTS || qp->req_state != DROCE_REQ_IDLE)
		return REQ_DONE;
	/* a WQE that failed at start completes once everything before it is done */
	if (qp->sq_head == qp->sq_cur && qp->sq_cur != qp->sq_avail &&
	    droce_qp_swqe(qp, qp->sq_cur)->started && droce_qp_swqe(qp, qp->sq_cur)->err) {
		req_take(qp, c, qp->sq_cur);
		c->err = (enum droce_err)c->s->err;
		return REQ_FAIL;
	}
	return REQ_RETIRE_LOCAL;
}

static inline enum droce_rc_req_state
req_retire_local(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	(void)c;
	retire_local(qp);
	return REQ_NEXT_WQE;
}

/* The opcode (RC's; the QP's transport bits are ORed in) of a WR that is
 * one packet when its length fits the path MTU: 0 for the others (READ,
 * atomics, memory windows), which take the state machine's way. */
static const uint8_t burst_only_op[DROCE_WR_DRIVER1 + 1] = {
	[DROCE_WR_RDMA_WRITE] = DROCE_OP_WRITE_ONLY,
	[DROCE_WR_RDMA_WRITE_WITH_IMM] = DROCE_OP_WRITE_ONLY_IMM,
	[DROCE_WR_SEND] = DROCE_OP_SEND_ONLY,
	[DROCE_WR_SEND_WITH_IMM] = DROCE_OP_SEND_ONLY_IMM,
	[DROCE_WR_SEND_WITH_INV] = DROCE_OP_SEND_ONLY_INV,
};

/*
 * The burst: a run of fresh one-packet SEND / WRITE WQEs from sq_cur, each
 * checked and built straight into its packet, with the QP's state read once
 * (the window's room, the BTH words that do not change, the AckReq rule) and
 * what note_sent records done once for the run.  It goes exactly as the
 * state machine would for such WQEs (NEXT_WQE -> WINDOW -> CHECK_LOCAL ->
 * SEND_PKT -> NOTE_SENT -> WQE_DONE, the packet ONLY with AckReq) and stops
 * at the first WQE that is anything else (not fresh, a FENCE behind READs,
 * longer than the MTU, more than one SGE, zero-copy, an SGE that fails its
 * check): the state machine then takes that one.  Only when nothing is
 * being sent again (psn_next == psn_max: a go-back's PSNs take the state
 * machine's way, its probe rule included).
 */
static __rte_always_inline void
req_burst(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	uint32_t psn = qp->psn_next, psn0 = psn, pmtu = qp->attr.pmtu;
	int32_t room;
	uint32_t bth1;
	uint32_t idx = qp->sq_cur;
	uint8_t op0 = droce_qp_wqe(qp, idx)->opcode;

	/* a READ or atomic at sq_cur: nothing more read */
	if (op0 > DROCE_WR_DRIVER1 || burst_only_op[op0] == 0 || psn != qp->psn_max)
		return;
	room = (int32_t)droce_rc_window(qp) - droce_psn_diff(psn, qp->psn_una);
	/* the selective-repeat hint of a request (droce_xport_resv6a) is the
	 * same for every request opcode */
	bth1 = (uint32_t)droce_xport_resv6a(qp, DROCE_OP_WRITE_ONLY) << 24 |
	       (qp->attr.dest_qpn & 0xffffffu);
	while (room > 0 && c->sent < c->budget && idx != qp->sq_avail) {
		const struct droce_wqe *w = droce_qp_wqe(qp, idx);
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		uint8_t op = w->opcode <= DROCE_WR_DRIVER1 ? burst_only_op[w->opcode] : 0;
		const struct droce_mr *mr = NULL;
		uint32_t len = w->length;
		enum droce_xport_tx rc;

		if (op == 0 || s->started || s->err || len > pmtu ||
		    ((w->flags & DROCE_WQE_FENCE) && qp->rd_atomic_out > 0) ||
		    unlikely(droce_xport_zc_ok(qp, len)))
			break;
		if (!(w->flags & DROCE_WQE_INLINE) && len != 0) {
			if (w->num_sge != 1)
				break;
			mr = mr_check(qp, w->sge[0].lkey, w->sge[0].addr, len, 0);
			if (mr == NULL)
				break; /* the state machine fails it */
		}
		/* wqe_start's */
		memset(s, 0, sizeof(*s));
		s->npkts = 1;
		s->first_psn = psn;
		s->started = true;
		rc = droce_xport_send_req_lc(qp, w, DROCE_OPC(qp->xport, op),
					     (w->flags & DROCE_WQE_SOLICITED) != 0, bth1,
					     1u << 31 | psn, 0, len, mr);
		if (rc != DROCE_XPORT_TX_SENT)
			break; /* no mbuf (mr checked: not PROT): the state machine sends it later */
		s->sent = len;
		s->sent_pkts = 1;
		psn = droce_psn_add(psn, 1);
		idx++;
		room--;
		c->sent++;
	}
	if (psn == psn0)
		return;
	qp->sq_cur = idx;
	note_sent(qp, psn);
}

static inline enum droce_rc_req_state
req_next_wqe(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	if (c->sent >= c->budget || qp->sq_cur == qp->sq_avail)
		return REQ_DONE;
	req_take(qp, c, qp->sq_cur);
	return REQ_WINDOW;
}

/* The turn stops until ACKs or responses come: each arriving frame activates
 * the QP (rc.c), a timer brings it back from the wheel, and its next turn
 * finds out again; until then droce_qp_busy_lc does not keep it active. */
static inline enum droce_rc_req_state
req_blocked(struct droce_qp *qp)
{
	qp->req_blocked = true;
	return REQ_DONE;
}

static inline enum droce_rc_req_state
req_window(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	/* SENDs and WRITEs wait for ACKs; READs and atomics for max_rd_atomic */
	if (!c->rd && window_full(qp))
		return req_blocked(qp);
	if (!c->s->started || c->s->err)
		return REQ_CHECK_LOCAL;
	return droce_mw_wr_is_local(c->w->opcode) ? REQ_LOCAL_OP : REQ_SEND_PKT;
}

static inline enum droce_rc_req_state
req_check_local(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	const struct droce_wqe *w = c->w;
	struct droce_swqe *s = c->s;

	if (!s->started) {
		if (c->rd && qp->rd_atomic_out >= RTE_MAX(qp->attr.max_rd_atomic, 1))
			return req_blocked(qp);
		if ((w->flags & DROCE_WQE_FENCE) && qp->rd_atomic_out > 0)
			return req_blocked(qp);
		/* after losses, a READ's responses must fit in the loss window
		 * (two may be out whatever it is: the second's answers show
		 * the first's last ones lost without waiting for the timer) */
		if (c->rd && qp->rd_atomic_out > 1 && qp->cwnd &&
		    (uint32_t)droce_psn_diff(qp->psn_next, qp->psn_una) +
				    droce_seq_npkts(w->length, qp->attr.pmtu) > qp->cwnd)
			return req_blocked(qp);
	}
	if (s->err) {
		c->err = (enum droce_err)s->err;
	} else if (s->started) {
		c->err = DROCE_ERR_NONE;
	} else {
		c->err = wqe_start(qp, c->idx, &c->mr);
		c->mr_idx = c->idx;
	}
	if (c->err != DROCE_ERR_NONE)
		return REQ_FAIL;
	return droce_mw_wr_is_local(w->opcode) ? REQ_LOCAL_OP : REQ_SEND_PKT;
}

static inline enum droce_rc_req_state
req_local_op(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	qp->sq_cur = c->idx + 1;
	return REQ_RETIRE_LOCAL;
}

static inline enum droce_rc_req_state
req_send_pkt(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	struct droce_swqe *s = c->s;

	if (c->rd) {
		if (!s->rd_counted && !s->done) {
			s->rd_counted = true;
			qp->rd_atomic_out++;
		}
		if (wr_is_read(c->w->opcode)) {
			/* one request per range that has not arrived (rc_read.c) */
			c->sent += droce_rc_read_ask_lc(qp, c->w, s, &c->last);
			if (c->last) {
				s->sent_pkts = s->npkts;
				note_sent(qp, droce_psn_add(s->first_psn, s->npkts));
			}
			if (s->err)
				return REQ_NEXT_WQE;
			return c->last ? REQ_WQE_DONE : REQ_DONE;
		}
		if (!send_atomic_req(qp, c->w, s))
			return REQ_DONE;
		c->last = true;
		return REQ_NOTE_SENT;
	}
	/* at least four AckReqs per loss window: one lost ACK stalls nothing;
	 * a paced QP (cc.c) asks on every packet: its packets are spread over
	 * more than the retransmission timer would wait for an ACK */
	if (droce_xport_send_segment_lc(qp, c->w, s, qp->xport,
					unlikely(qp->cc != NULL) && qp->cc->limited ? 1 :
					RTE_MIN((uint32_t)ACKREQ_EVERY, droce_rc_window(qp) / 4),
					c->mr_idx == c->idx ? c->mr : NULL, &c->last) == DROCE_XPORT_TX_SENT)
		return REQ_NOTE_SENT;
	return s->err ? REQ_NEXT_WQE : REQ_DONE; /* s->err: FAIL on the way again; else no mbuf */
}

static inline enum droce_rc_req_state
req_note_sent(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	note_sent(qp, droce_psn_add(c->s->first_psn, c->s->sent_pkts));
	c->sent++;
	return c->last ? REQ_WQE_DONE : REQ_NEXT_WQE;
}

static inline enum droce_rc_req_state
req_wqe_done(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	qp->sq_cur = c->idx + 1;
	return REQ_NEXT_WQE;
}

static inline enum droce_rc_req_state
req_fail(struct droce_qp *qp, struct droce_rc_req_ctx *c)
{
	/* completes in order: only once everything before it is done */
	c->s->err = (uint8_t)c->err;
	if (qp->sq_head == c->idx)
		fail_head(qp, c->err);
	return REQ_DONE;
}

static enum droce_rc_req_state
req_step(struct droce_qp *qp, enum droce_rc_req_state st, struct droce_rc_req_ctx *c)
{
	switch (st) {
	case REQ_CHECK_QP_STATE: return req_check_qp_state(qp, c);
	case REQ_RETIRE_LOCAL: return req_retire_local(qp, c);
	case REQ_NEXT_WQE: return req_next_wqe(qp, c);
	case REQ_WINDOW: return req_window(qp, c);
	case REQ_CHECK_LOCAL: return req_check_local(qp, c);
	case REQ_LOCAL_OP: return req_local_op(qp, c);
	case REQ_SEND_PKT: return req_send_pkt(qp, c);
	case REQ_NOTE_SENT: return req_note_sent(qp, c);
	case REQ_WQE_DONE: return req_wqe_done(qp, c);
	case REQ_FAIL: return req_fail(qp, c);
	default: return REQ_DONE;
	}
}

DROCE_RC_SM_STEP enum droce_rc_req_state
droce_rc_req_step_lc(struct droce_qp *qp, enum droce_rc_req_state st, struct droce_rc_req_ctx *c)
{
	return req_step(qp, st, c);
}

/*
 * READs and atomics the short way: the fresh READ / atomic WQEs at sq_cur
 * (a latency loop's lone WQE, a bandwidth loop's run of them), each as the
 * state machine takes it from NEXT_WQE: every check it makes on the way
 * (CHECK_LOCAL's max_rd_atomic, fence and loss-window limits; wqe_start's
 * SGE check: here one SGE, not inline, in an MR of the QP's PD with
 * LOCAL_WRITE, an atomic's at least 8 bytes) first, changing nothing; then
 * what wqe_start, SEND_PKT, NOTE_SENT and WQE_DONE do, the request built
 * by the machine's own functions (send_atomic_req, droce_rc_read_ask_lc;
 * a READ while the QP has no map of responses placed past a hole, i.e.
 * none of its responses placed: ask_lc's one request for all of it,
 * droce_rc_read_ask_fresh_lc, without ask_lc's walk of what arrived).
 * It stops at the first WQE that is anything else (another opcode, started
 * before, a limit reached, a failing SGE, none or several, inline), with
 * nothing of that WQE changed: *@st is NEXT_WQE, where the machine goes on
 * and finds the same answer the long way (blocked, FAIL).  Without an mbuf
 * the WQE stays started and counted, as SEND_PKT leaves it, and *@st is
 * DONE.  The caller made CHECK_QP_STATE's and RETIRE_LOCAL's.  Returns the
 * requests sent.
 */
static __rte_always_inline unsigned int
req_rd_short(struct droce_qp *qp, unsigned int budget, enum droce_rc_req_state *st)
{
	uint32_t pmtu = qp->attr.pmtu, max_rd = RTE_MAX(qp->attr.max_rd_atomic, 1);
	unsigned int sent = 0;

	*st = REQ_NEXT_WQE;
	while (sent < budget && qp->sq_cur != qp->sq_avail) {
		uint32_t idx = qp->sq_cur;
		const struct droce_wqe *w = droce_qp_wqe(qp, idx);
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		bool atomic = wr_is_atomic(w->opcode), whole = true;

		if ((!atomic && !wr_is_read(w->opcode)) || s->started || s->err)
			break;
		/* CHECK_LOCAL's limits (the loss window's for atomics too) */
		if (qp->rd_atomic_out >= max_rd || ((w->flags & DROCE_WQE_FENCE) && qp->rd_atomic_out > 0) ||
		    (qp->rd_atomic_out > 1 && qp->cwnd &&
		     (uint32_t)droce_psn_diff(qp->psn_next, qp->psn_una) + droce_seq_npkts(w->length, pmtu) >
			     qp->cwnd))
			break;
		/* wqe_start's */
		if ((w->flags & DROCE_WQE_INLINE) || w->num_sge != 1 || w->sge[0].length < (atomic ? 8u : 1u) ||
		    mr_check(qp, w->sge[0].lkey, w->sge[0].addr, w->sge[0].length,
			     DROCE_ACCESS_LOCAL_WRITE) == NULL)
			break;
		memset(s, 0, sizeof(*s));
		s->npkts = atomic ? 1 : droce_seq_npkts(w->length, pmtu);
		s->first_psn = qp->psn_next;
		s->started = true;
		/* SEND_PKT */
		s->rd_counted = true;
		qp->rd_atomic_out++;
		if (atomic) {
			if (!send_atomic_req(qp, w, s)) {
				*st = REQ_DONE;
				break;
			}
			sent++;
		} else if (qp->rdmap == NULL) { /* nothing placed: one request for all of it */
			whole = droce_rc_read_ask_fresh_lc(qp, w, s);
			sent += whole;
		} else {
			sent += droce_rc_read_ask_lc(qp, w, s, &whole);
		}
		if (whole) { /* NOTE_SENT (a READ's in SEND_PKT) */
			s->sent_pkts = s->npkts;
			note_sent(qp, droce_psn_add(s->first_psn, s->npkts));
		}
		if (s->err)
			break; /* NEXT_WQE, as SEND_PKT */
		if (!whole) {
			*st = REQ_DONE; /* no mbuf */
			break;
		}
		qp->sq_cur = idx + 1; /* WQE_DONE */
	}
	return sent;
}

/* The turn's machine, out of line: the idle turn (most turns of a latency
 * loop's QPs) pays none of its registers, stack and context. */
static __attribute__((noinline)) unsigned int
req_tx_run(struct droce_qp *qp, unsigned int budget)
{
	struct droce_rc_req_ctx c = { .budget = budget };
	enum droce_rc_req_state st = REQ_CHECK_QP_STATE;

	while (st != REQ_DONE) {
		enum droce_rc_req_state next;

		/* the burst's WQEs go as NEXT_WQE's way would take them; the
		 * step functions (tested one by one) stay as they are */
		if (st == REQ_NEXT_WQE && c.sent < c.budget && qp->sq_cur != qp->sq_avail)
			req_burst(qp, &c);
		next = req_step(qp, st, &c);
		DP_LOG_DP(DEBUG, "qp %u req: %s -> %s", qp->qpn, req_state_name[st],
			  req_state_name[next]);
		st = next;
	}
	return c.sent;
}

/*
 * A turn that finds a READ / atomic at sq_cur.  When it is fresh and the QP
 * sending (RTS, not waiting), CHECK_QP_STATE passes (no failed WQE at
 * sq_cur), RETIRE_LOCAL is made, then the short way; the machine takes
 * what is left from NEXT_WQE.  It is run from its start with the rest of
 * the budget (the same turn: CHECK_QP_STATE passes again, RETIRE_LOCAL
 * finds nothing more, a WQE the short way sent being between sq_head and
 * sq_cur), so that its one entry stays as it is.  Out of line, as the
 * machine: a SEND / WRITE turn pays only the opcode's test.
 */
static __attribute__((noinline)) unsigned int
req_rd_turn(struct droce_qp *qp, unsigned int budget)
{
	const struct droce_swqe *s = droce_qp_swqe(qp, qp->sq_cur);
	enum droce_rc_req_state st;
	unsigned int sent;

	if (qp->state != DROCE_QPS_RTS || qp->req_state != DROCE_REQ_IDLE || budget == 0 || s->started ||
	    s->err)
		return req_tx_run(qp, budget);
	retire_local(qp);
	sent = req_rd_short(qp, budget, &st);
	if (st == REQ_DONE || sent >= budget || qp->sq_cur == qp->sq_avail)
		return sent; /* NEXT_WQE's DONE too */
	return sent + req_tx_run(qp, budget - sent);
}

unsigned int
droce_rc_req_tx_lc(struct droce_qp *qp, unsigned int budget)
{
	qp->req_blocked = false;
	if (qp->sq_head == qp->sq_avail)
		return 0; /* the idle turn: nothing posted, nothing to retire or fail */
	if (qp->sq_cur != qp->sq_avail) {
		uint8_t op = droce_qp_wqe(qp, qp->sq_cur)->opcode;

		if (wr_is_read(op) || wr_is_atomic(op))
			return req_rd_turn(qp, budget);
	}
	return req_tx_run(qp, budget);
}
