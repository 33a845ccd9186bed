/* SPDX-License-Identifier: BSD-3-Clause
 * Reliable Connected transport: requester (WQEs -> request packets),
 * completer (ACKs, NAKs, READ responses, atomic ACKs -> completions,
 * retransmission) and responder (requests -> memory, receive completions,
 * ACKs and responses).  Everything here runs on the QP's engine.
 *
 * Over 800 lines because the three share the QP's transport state and its
 * static helpers; the split into rc_req.c / rc_comp.c / rc_resp.c comes with
 * the rest of the state-machine reshaping (issue 11: the requester and the
 * responder's transmit side are not state machines yet).
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "engine.h"
#include "errors.h"
#include "icrc.h"
#include "internal.h"
#include "qp_internal.h"
#include "rc_internal.h"
#include "xport.h"
#include "xrc.h"
#include "pmd_glue/port.h"

#define ACKREQ_EVERY 16 /* packets between AckReq bits inside a long message */

/* IBTA RNR NAK timer encodings, in units of 10 us (0 means 655.36 ms). */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

static inline bool
wr_is_read(uint8_t op)
{
	return op == DROCE_WR_RDMA_READ;
}

static inline bool
wr_is_atomic(uint8_t op)
{
	return op == DROCE_WR_ATOMIC_CMP_AND_SWP || op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

static inline bool
wr_is_write(uint8_t op)
{
	return droce_xport_wr_is_write(op);
}

/* ---- memory checks and packets: the shared helpers of xport.h ---- */

static inline const struct droce_mr *
mr_check(const struct droce_qp *qp, uint32_t key, uint64_t va, uint64_t len, uint32_t need)
{
	return droce_xport_mr_check_lc(qp, key, va, len, need);
}

static inline bool
scatter(const struct droce_qp *qp, const struct droce_sge *sges, unsigned int nsge, uint32_t off,
	const uint8_t *src, uint32_t len)
{
	return droce_xport_scatter_lc(qp, sges, nsge, off, src, len);
}

static inline struct rte_mbuf *
pkt_alloc(struct droce_qp *qp, struct droce_pkt_fields *f, uint32_t plen, uint8_t **payload)
{
	f->dqpn = qp->attr.dest_qpn;
	return droce_xport_pkt_alloc_lc(qp, f, plen, payload);
}

static inline void
pkt_send(struct droce_qp *qp, struct rte_mbuf *m, uint32_t plen)
{
	droce_xport_pkt_send_lc(qp, m, plen);
}

/* An ACK or NAK (opcode ACKNOWLEDGE) for @psn. */
static void
send_aeth(struct droce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(qp->xport, DROCE_OP_ACK) };
	uint8_t *payload;
	struct rte_mbuf *m;

	f.psn = psn;
	f.aeth.syndrome = syndrome;
	f.aeth.msn = qp->msn;
	m = pkt_alloc(qp, &f, 0, &payload);
	if (m)
		pkt_send(qp, m, 0);
}

static void
send_nak(struct droce_qp *qp, enum droce_nak_code code, uint32_t psn)
{
	send_aeth(qp, droce_aeth_make_syndrome(DROCE_AETH_NAK, code), psn);
}

/* ---- requester ---- */

/* The retransmission timer (rc_retx.c: adaptive, within the timeout attribute). */
static void
rearm_rto(struct droce_qp *qp)
{
	if (qp->attr.timeout != 0 && qp->psn_una != qp->psn_next)
		qp->rto_deadline = qp->eng->now + droce_rc_rto_cycles(qp);
	else if (qp->psn_una == qp->psn_next)
		qp->rto_deadline = 0;
}

/* The oldest WQE fails with @err; the QP then goes where the error table says. */
static void
fail_head(struct droce_qp *qp, enum droce_err err)
{
	droce_qp_fail_send_lc(qp, err, droce_err_table[err].req_status);
}

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

/* Checks a WQE's local buffers and reserves its PSNs; returns an error or NONE. */
static enum droce_err
wqe_start(struct droce_qp *qp, uint32_t idx)
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
	if (!(w->flags & DROCE_WQE_INLINE))
		for (unsigned int i = 0; i < w->num_sge; i++)
			if (w->sge[i].length &&
			    mr_check(qp, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, need) == NULL)
				return DROCE_ERR_LOC_PROT;
	if (wr_is_atomic(w->opcode) && (w->num_sge == 0 || w->sge[0].length < 8))
		return DROCE_ERR_LOC_PROT;
	s->first_psn = qp->psn_next;
	s->started = true;
	return DROCE_ERR_NONE;
}

/* Records that everything before @next has been sent. */
static void
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

/* Sends (more of) WQE @idx; returns packets sent, and sets *@whole when all of it is out. */
static unsigned int
send_wqe(struct droce_qp *qp, uint32_t idx, unsigned int budget, bool *whole)
{
	const struct droce_wqe *w = droce_qp_wqe(qp, idx);
	struct droce_swqe *s = droce_qp_swqe(qp, idx);
	uint32_t pmtu = qp->attr.pmtu;
	struct droce_pkt_fields f;
	struct rte_mbuf *m;
	uint8_t *payload;
	unsigned int n = 0;

	*whole = false;
	if (wr_is_read(w->opcode) || wr_is_atomic(w->opcode)) {
		memset(&f, 0, sizeof(f));
		f.ackreq = true;
		f.xrc_srqn = w->remote_qpn; /* XRC: the remote SRQ (XRCETH) */
		if (wr_is_read(w->opcode)) {
			/* a resumed READ asks only for what has not arrived */
			f.opcode = DROCE_OPC(qp->xport, DROCE_OP_READ_REQ);
			f.psn = droce_psn_add(s->first_psn, s->got / pmtu);
			f.reth.va = w->remote_addr + s->got;
			f.reth.rkey = w->rkey;
			f.reth.len = w->length - s->got;
		} else {
			f.opcode = DROCE_OPC(qp->xport, w->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP
								? DROCE_OP_CMP_SWAP
								: DROCE_OP_FETCH_ADD);
			f.psn = s->first_psn;
			f.atomic.va = w->remote_addr;
			f.atomic.rkey = w->rkey;
			if (w->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP) {
				f.atomic.cmp = w->compare_add;
				f.atomic.swap_add = w->swap;
			} else {
				f.atomic.swap_add = w->compare_add;
			}
		}
		m = pkt_alloc(qp, &f, 0, &payload);
		if (m == NULL)
			return 0;
		pkt_send(qp, m, 0);
		s->sent_pkts = s->npkts;
		note_sent(qp, droce_psn_add(s->first_psn, s->npkts));
		*whole = true;
		return 1;
	}

	while (n < budget && !window_full(qp)) {
		bool last;

		/* at least four AckReqs per loss window: one lost ACK stalls nothing */
		if (droce_xport_send_segment_lc(qp, w, s, qp->xport,
						RTE_MIN((uint32_t)ACKREQ_EVERY, droce_rc_window(qp) / 4),
						&last) !=
		    DROCE_XPORT_TX_SENT)
			break; /* no mbuf; or s->err */
		note_sent(qp, droce_psn_add(s->first_psn, s->sent_pkts));
		n++;
		if (last) {
			*whole = true;
			break;
		}
	}
	return n;
}

/* Goes back to resend from @psn (go-back-N). */
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
	{
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		const struct droce_wqe *w = droce_qp_wqe(qp, idx);
		uint32_t k = (uint32_t)droce_psn_diff(psn, s->first_psn);

		if (wr_is_read(w->opcode) || wr_is_atomic(w->opcode)) {
			/* asked again: a READ for what has not arrived, an atomic whole */
			s->got = RTE_MIN(s->got, k * pmtu);
			s->sent_pkts = 0;
		} else {
			s->sent_pkts = k;
			s->sent = k * pmtu;
		}
	}
	/* later WQEs start again from scratch, with the same PSNs */
	for (uint32_t j = idx + 1; j != qp->sq_avail; j++) {
		struct droce_swqe *s = droce_qp_swqe(qp, j);

		if (!s->started)
			break;
		if (droce_mw_wr_is_local(droce_qp_wqe(qp, j)->opcode))
			continue; /* executed once; passed over on the way again */
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

static unsigned int
requester_tx(struct droce_qp *qp, unsigned int budget)
{
	unsigned int sent = 0;

	retire_local(qp);
	while (sent < budget && qp->sq_cur != qp->sq_avail) {
		uint32_t idx = qp->sq_cur;
		const struct droce_wqe *w = droce_qp_wqe(qp, idx);
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		bool rd = wr_is_read(w->opcode) || wr_is_atomic(w->opcode);
		bool whole;

		/* SENDs and WRITEs wait for ACKs; READs and atomics for max_rd_atomic */
		if (!rd && window_full(qp))
			break;

		if (!s->started || s->err) {
			enum droce_err err;

			if (!s->started && rd && qp->rd_atomic_out >= RTE_MAX(qp->attr.max_rd_atomic, 1))
				break;
			if (!s->started && (w->flags & DROCE_WQE_FENCE) && qp->rd_atomic_out > 0)
				break;
			/* after losses, a READ's responses must fit in the loss window
			 * (two may be out whatever it is: the second's answers show
			 * the first's last ones lost without waiting for the timer) */
			if (!s->started && rd && qp->rd_atomic_out > 1 && qp->cwnd &&
			    (uint32_t)droce_psn_diff(qp->psn_next, qp->psn_una) +
					    droce_seq_npkts(w->length, qp->attr.pmtu) > qp->cwnd)
				break;
			err = s->err ? (enum droce_err)s->err : (s->started ? DROCE_ERR_NONE : wqe_start(qp, idx));
			if (err != DROCE_ERR_NONE) {
				/* completes in order: only once everything before it is done */
				s->err = (uint8_t)err;
				if (qp->sq_head == idx)
					fail_head(qp, err);
				break;
			}
		}
		if (droce_mw_wr_is_local(w->opcode)) {
			qp->sq_cur = idx + 1;
			retire_local(qp);
			continue;
		}
		if (rd && !s->rd_counted) {
			s->rd_counted = true;
			qp->rd_atomic_out++;
		}
		sent += send_wqe(qp, idx, budget - sent, &whole);
		if (s->err)
			continue;
		if (!whole)
			break;
		qp->sq_cur = idx + 1;
	}
	return sent;
}

/* ---- completer ---- */

static void
progress_made(struct droce_qp *qp)
{
	qp->retry_left = qp->attr.retry_cnt;
	qp->rnr_left = qp->attr.rnr_retry;
	droce_rc_progress_lc(qp);
	qp->rto_deadline = 0;
	rearm_rto(qp);
}

/* The oldest WQE is done: everything up to @last_psn is acknowledged. */
static void
retire_head(struct droce_qp *qp, uint32_t last_psn)
{
	qp->psn_una = droce_psn_add(last_psn, 1);
	droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
	/* a go-back may have queued a resend of what is now acknowledged */
	if (droce_psn_diff(qp->psn_next, qp->psn_una) < 0 ||
	    (qp->sq_cur == qp->sq_head &&
	     (qp->sq_cur == qp->sq_avail || !droce_qp_swqe(qp, qp->sq_cur)->started)))
		qp->psn_next = qp->psn_una;
}

/* Retires WQEs wholly acknowledged by @psn. */
static void
complete_upto(struct droce_qp *qp, uint32_t psn)
{
	bool progress = false;

	while (qp->sq_head != qp->sq_avail) {
		const struct droce_wqe *w = droce_qp_wqe(qp, qp->sq_head);
		struct droce_swqe *s = droce_qp_swqe(qp, qp->sq_head);
		uint32_t last;

		if (droce_mw_wr_is_local(w->opcode) && s->started && qp->sq_head != qp->sq_cur) {
			droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
			continue;
		}
		if (!s->started || s->sent_pkts == 0)
			break;
		last = droce_psn_add(s->first_psn, s->npkts - 1);
		if (droce_psn_diff(last, psn) > 0) {
			/* a coalesced ACK inside a SEND/WRITE is forward progress too */
			if (!wr_is_read(w->opcode) && !wr_is_atomic(w->opcode) &&
			    droce_psn_diff(psn, qp->psn_una) >= 0) {
				qp->psn_una = droce_psn_add(psn, 1);
				if (droce_psn_diff(qp->psn_next, qp->psn_una) < 0)
					qp->psn_next = qp->psn_una;
				progress = true;
			}
			break;
		}
		if ((wr_is_read(w->opcode) || wr_is_atomic(w->opcode)) && !s->done) {
			/* acknowledged past an unanswered READ/atomic: its response was lost */
			uint32_t from = droce_psn_add(s->first_psn, s->got / qp->attr.pmtu);

			if (s->gap_mark != from + 1) {
				s->gap_mark = from + 1;
				qp->stats.implicit_naks++;
				droce_rc_rewind_lc(qp, from);
			}
			break;
		}
		retire_head(qp, last);
		progress = true;
	}
	if (progress)
		progress_made(qp);
}

/* True when @psn may be acknowledged: in [una - 1, max - 1]. */
static bool
ack_in_window(const struct droce_qp *qp, uint32_t psn)
{
	return droce_psn_diff(psn, qp->psn_max) < 0 &&
	       droce_psn_diff(psn, droce_psn_add(qp->psn_una, DROCE_PSN_MASK)) >= 0;
}

/*
 * The completer's handling of an ACKNOWLEDGE packet as an explicit state
 * machine (rxe_comp.c's manner): one step function per state, each returning
 * the next; COMP_DONE ends the packet.
 *   CHECK_WINDOW    PSN in [una - 1, max - 1], else dropped (seq_drops)
 *   CHECK_GHOST     a NAK must name an outstanding request (IBTA 9.7.5.1.2)
 *   CHECK_SYNDROME  to ACK, RNR_NAK, SEQ_NAK or ERR_NAK (reserved: dropped)
 *   ACK             retire the WQEs the ACK covers
 *   RNR_NAK         retire what it covers, then wait the RNR timer or fail
 *   SEQ_NAK         retire what it covers, go back to the PSN
 *   ERR_NAK         retire what it covers, fail the head with the NAK's error
 */
enum comp_state {
	COMP_CHECK_WINDOW,
	COMP_CHECK_GHOST,
	COMP_CHECK_SYNDROME,
	COMP_ACK,
	COMP_RNR_NAK,
	COMP_SEQ_NAK,
	COMP_ERR_NAK,
	COMP_DONE,
	COMP_STATE_COUNT
};

/* For logs (debug level: compiled out of the data path by default). */
static const char *const comp_state_name[COMP_STATE_COUNT] = {
	[COMP_CHECK_WINDOW] = "CHECK_WINDOW",
	[COMP_CHECK_GHOST] = "CHECK_GHOST",
	[COMP_CHECK_SYNDROME] = "CHECK_SYNDROME",
	[COMP_ACK] = "ACK",
	[COMP_RNR_NAK] = "RNR_NAK",
	[COMP_SEQ_NAK] = "SEQ_NAK",
	[COMP_ERR_NAK] = "ERR_NAK",
	[COMP_DONE] = "DONE",
};

const char *
droce_rc_comp_state_name(unsigned int state)
{
	return state < COMP_STATE_COUNT && comp_state_name[state] ? comp_state_name[state] : NULL;
}

static enum comp_state
comp_check_window(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)syndrome;
	if (!ack_in_window(qp, psn)) {
		qp->eng->stats.seq_drops++;
		return COMP_DONE;
	}
	return COMP_CHECK_GHOST;
}

static enum comp_state
comp_check_ghost(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	qp->peer_heard = true; /* in the window: the peer answers (rc_retx.c) */
	/*
	 * A NAK names the request that failed (or, for a sequence NAK, the
	 * PSN the responder expects): one in [una, max - 1].  A NAK at una - 1
	 * answers nothing outstanding (a ghost, or forged): IBTA 9.7.5.1.2
	 * drops it like a duplicate ACK, and so do we, counted.
	 */
	if (droce_aeth_syndrome_kind(syndrome) != DROCE_AETH_ACK &&
	    droce_psn_diff(psn, qp->psn_una) < 0) {
		qp->eng->stats.ghost_acks++;
		return COMP_DONE;
	}
	return COMP_CHECK_SYNDROME;
}

static enum comp_state
comp_check_syndrome(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)psn;
	switch (droce_aeth_syndrome_kind(syndrome)) {
	case DROCE_AETH_ACK:
		return COMP_ACK;
	case DROCE_AETH_RNR_NAK:
		return COMP_RNR_NAK;
	case DROCE_AETH_NAK:
		return droce_aeth_syndrome_value(syndrome) == DROCE_NAK_PSN_SEQ_ERR ? COMP_SEQ_NAK
										    : COMP_ERR_NAK;
	default:
		qp->eng->stats.seq_drops++;
		return COMP_DONE;
	}
}

static enum comp_state
comp_ack(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)syndrome;
	complete_upto(qp, psn);
	return COMP_DONE;
}

/* A NAK acknowledges everything before the PSN it names; false when that
 * moved the QP out of RTS / SQD (a completion found an error). */
static bool
comp_nak_retire(struct droce_qp *qp, uint32_t psn)
{
	complete_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK));
	return qp->state == DROCE_QPS_RTS || qp->state == DROCE_QPS_SQD;
}

static enum comp_state
comp_rnr_nak(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	qp->stats.rnr_naks_rx++;
	if (!comp_nak_retire(qp, psn))
		return COMP_DONE;
	if (qp->attr.rnr_retry != 7) {
		if (qp->rnr_left == 0) {
			fail_head(qp, DROCE_ERR_RNR_RETRY_EXC);
			return COMP_DONE;
		}
		qp->rnr_left--;
	}
	droce_rc_rewind_lc(qp, psn);
	qp->req_state = DROCE_REQ_RNR_WAIT;
	qp->rto_deadline = 0;
	qp->rnr_deadline = qp->eng->now + qp->eng->tsc_hz / 100000 *
				 rnr_timer_10us[droce_aeth_syndrome_value(syndrome)];
	return COMP_DONE;
}

static enum comp_state
comp_seq_nak(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)syndrome;
	if (comp_nak_retire(qp, psn)) {
		qp->stats.seq_naks_rx++;
		if (droce_rc_seq_nak_fresh_lc(qp, psn)) {
			droce_rc_window_loss_lc(qp);
			droce_rc_rewind_lc(qp, psn);
		}
	}
	return COMP_DONE;
}

static enum comp_state
comp_err_nak(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	if (comp_nak_retire(qp, psn)) {
		qp->stats.rem_err_naks_rx++;
		fail_head(qp, droce_err_from_nak(droce_aeth_syndrome_value(syndrome)));
	}
	return COMP_DONE;
}

static void
handle_ack(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	enum comp_state st = COMP_CHECK_WINDOW;

	while (st != COMP_DONE) {
		enum comp_state next;

		switch (st) {
		case COMP_CHECK_WINDOW: next = comp_check_window(qp, psn, syndrome); break;
		case COMP_CHECK_GHOST: next = comp_check_ghost(qp, psn, syndrome); break;
		case COMP_CHECK_SYNDROME: next = comp_check_syndrome(qp, psn, syndrome); break;
		case COMP_ACK: next = comp_ack(qp, psn, syndrome); break;
		case COMP_RNR_NAK: next = comp_rnr_nak(qp, psn, syndrome); break;
		case COMP_SEQ_NAK: next = comp_seq_nak(qp, psn, syndrome); break;
		case COMP_ERR_NAK: next = comp_err_nak(qp, psn, syndrome); break;
		default: next = COMP_DONE; break;
		}
		DP_LOG_DP(DEBUG, "qp %u ack psn %u: %s -> %s", qp->qpn, psn, comp_state_name[st],
			  comp_state_name[next]);
		st = next;
	}
}

/*
 * The WQE a READ response or atomic ACK at @psn answers: everything before it
 * is acknowledged by it, so the head is that WQE (NULL if not, or stale).
 */
static struct droce_swqe *
answered_head(struct droce_qp *qp, uint32_t psn, const struct droce_wqe **w)
{
	struct droce_swqe *s;

	if (!ack_in_window(qp, psn))
		return NULL;
	complete_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK));
	if (qp->sq_head == qp->sq_avail)
		return NULL;
	*w = droce_qp_wqe(qp, qp->sq_head);
	s = droce_qp_swqe(qp, qp->sq_head);
	return s->started && !s->done ? s : NULL;
}

/* A READ or atomic at the head has its whole answer: retire it. */
static void
answer_done(struct droce_qp *qp, struct droce_swqe *s)
{
	s->done = true;
	if (s->rd_counted) {
		s->rd_counted = false;
		qp->rd_atomic_out--;
	}
	retire_head(qp, droce_psn_add(s->first_psn, s->npkts - 1));
}

static void
handle_read_resp(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	uint32_t flags = p->info->flags, len = p->payload_len, pmtu = qp->attr.pmtu;
	const struct droce_wqe *w;
	struct droce_swqe *s = answered_head(qp, psn, &w);
	uint32_t expect;

	if (s == NULL || !wr_is_read(w->opcode)) {
		qp->eng->stats.seq_drops++;
		return;
	}
	qp->peer_heard = true;
	expect = droce_psn_add(s->first_psn, s->got / pmtu);
	if (psn != expect) {
		if (droce_rc_read_gap_lc(qp, s, expect, psn)) {
			/* responses lost: ask again for the rest */
			droce_rc_window_loss_lc(qp);
			droce_rc_rewind_lc(qp, expect);
		}
		qp->eng->stats.seq_drops++;
		return;
	}
	if (len > pmtu || (!(flags & DROCE_OPF_LAST) && len != pmtu) ||
	    (uint64_t)s->got + len > w->length ||
	    ((flags & DROCE_OPF_LAST) && s->got + len != w->length)) {
		fail_head(qp, DROCE_ERR_BAD_RESP);
		return;
	}
	if (!scatter(qp, w->sge, w->num_sge, s->got, frame + p->payload_off, len)) {
		fail_head(qp, DROCE_ERR_LOC_PROT);
		return;
	}
	s->got += len;
	s->gap_mark = 0;
	qp->psn_una = droce_psn_add(psn, 1);
	if (flags & DROCE_OPF_LAST)
		answer_done(qp, s);
	progress_made(qp);
}

static void
handle_atomic_ack(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	const struct droce_wqe *w;
	struct droce_swqe *s = answered_head(qp, psn, &w);
	uint64_t orig;

	if (s == NULL || !wr_is_atomic(w->opcode) || s->first_psn != psn) {
		qp->eng->stats.seq_drops++;
		return;
	}
	orig = droce_atmack_orig(droce_pkt_hdr(p, frame, DROCE_HDR_ATMACK));
	if (!scatter(qp, w->sge, 1, 0, (const uint8_t *)&orig, sizeof(orig))) {
		fail_head(qp, DROCE_ERR_LOC_PROT);
		return;
	}
	answer_done(qp, s);
	progress_made(qp);
}

/* ---- responder ---- */

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

static bool
resp_queue(struct droce_qp *qp, const struct droce_rd_resp *r)
{
	uint32_t cap = DROCE_RD_RESP_CAP;

	if (qp->rd_resp_count == cap || droce_qp_resp_res_lc(qp) != 0)
		return false; /* full, or no memory for the first one: the caller NAKs */
	qp->rd_resp[(qp->rd_resp_head + qp->rd_resp_count) % cap] = *r;
	qp->rd_resp_count++;
	return true;
}

static bool
read_allowed(const struct droce_qp *qp, uint64_t va, uint32_t rkey, uint32_t len)
{
	if (len == 0)
		return true; /* a zero-length READ names no memory */
	if (!(qp->attr.access & DROCE_ACCESS_REMOTE_READ))
		return false;
	return mr_check(qp, rkey, va, len, DROCE_ACCESS_REMOTE_READ) != NULL;
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
		    droce_rc_resp_cut_lc(qp, psn, e.va, e.len))
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
	if (!scatter(qp, r->sge, r->num_sge, qp->recv_off, frame + p->payload_off, p->payload_len)) {
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
	uint32_t flags = p->info->flags, len = p->payload_len;

	if (flags & DROCE_OPF_FIRST) {
		const struct droce_reth *r = droce_pkt_hdr(p, frame, DROCE_HDR_RETH);
		uint32_t dlen = droce_reth_len(r);

		qp->write_va = droce_reth_va(r);
		qp->write_rkey = droce_reth_rkey(r);
		if (dlen != 0 && (!(qp->attr.access & DROCE_ACCESS_REMOTE_WRITE) ||
				  mr_check(qp, qp->write_rkey, qp->write_va, dlen,
					   DROCE_ACCESS_REMOTE_WRITE) == NULL)) {
			resp_error(qp, DROCE_ERR_REM_ACCESS, psn);
			return;
		}
	}
	if (len) {
		const struct droce_mr *mr = mr_check(qp, qp->write_rkey, qp->write_va, len,
						     DROCE_ACCESS_REMOTE_WRITE);
		if (mr == NULL) {
			resp_error(qp, DROCE_ERR_REM_ACCESS, psn);
			return;
		}
		memcpy(mr->addr + (qp->write_va - mr->iova), frame + p->payload_off, len);
		qp->write_va += len;
	}
	if (flags & DROCE_OPF_LAST) {
		qp->msn = droce_psn_add(qp->msn, 1);
		if (flags & DROCE_OPF_IMM) {
			struct droce_cqe c = { .status = DROCE_WC_SUCCESS,
					       .opcode = DROCE_WC_RECV_RDMA_WITH_IMM,
					       .byte_len = qp->rxseq.write_len,
					       .src_qp = qp->attr.dest_qpn,
					       .wc_flags = DROCE_WC_F_WITH_IMM };
			c.imm_or_inv = droce_immdt_imm(droce_pkt_hdr(p, frame, DROCE_HDR_IMMDT));
			droce_qp_complete_recv_lc(qp, &c, droce_bth_se(droce_pkt_bth(p, frame)));
		}
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
	if (resp_new_count(qp) >= RTE_MAX(qp->attr.max_dest_rd_atomic, 1) || !resp_queue(qp, &e)) {
		resp_error(qp, DROCE_ERR_REM_INV_REQ, psn);
		return;
	}
	qp->msn = droce_psn_add(qp->msn, 1);
}

static void
resp_atomic(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	const struct droce_atmeth *a = droce_pkt_hdr(p, frame, DROCE_HDR_ATMETH);
	uint64_t va = droce_atmeth_va(a), orig;
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
	if (resp_new_count(qp) >= RTE_MAX(qp->attr.max_dest_rd_atomic, 1) ||
	    droce_qp_resp_res_lc(qp) != 0) {
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
	if ((p->opcode & 0x1f) == DROCE_OP_FETCH_ADD) { /* RC or XRC */
		orig = __atomic_fetch_add(target, droce_atmeth_swap_add(a), __ATOMIC_SEQ_CST);
	} else {
		orig = droce_atmeth_cmp(a);
		if (!__atomic_compare_exchange_n(target, &orig, droce_atmeth_swap_add(a), false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			/* orig now holds the value found */
		}
	}
	qp->atomic_replay[qp->atomic_replay_next] = (struct droce_atomic_replay){ psn, orig, true };
	qp->atomic_replay_next = (qp->atomic_replay_next + 1) % DROCE_ATOMIC_REPLAY;
	e.orig = orig;
	resp_queue(qp, &e);
	qp->msn = droce_psn_add(qp->msn, 1);
}

/*
 * The responder's receive path as an explicit state machine, in the manner
 * of Linux rxe's rxe_resp.c: one step function per state, each returning the
 * next state; RESP_DONE ends the packet.  The states, in the order a good
 * request passes them:
 *   CHECK_QP_STATE  RTR/RTS/SQD and no responder error pending, else DONE
 *   CHECK_PSN       expected PSN: on; ahead: SEQ_NAK; behind: DUPLICATE
 *   CHECK_RESOURCE  room for a READ/atomic response; a receive WQE for a
 *                   SEND (or WRITE with immediate), else RNR_NAK
 *   CHECK_OP_SEQ    FIRST/MIDDLE/LAST order, lengths (seqcheck.c), else
 *                   ERR_INV_REQ
 *   EXECUTE         place the SEND / WRITE, queue the READ / atomic response
 *   ACKNOWLEDGE     an AckReq on a SEND / WRITE arms the coalesced ACK
 * and the ends SEQ_NAK, DUPLICATE, RNR_NAK and ERR_INV_REQ.
 */
enum resp_state {
	RESP_CHECK_QP_STATE,
	RESP_CHECK_PSN,
	RESP_CHECK_RESOURCE,
	RESP_CHECK_OP_SEQ,
	RESP_EXECUTE,
	RESP_ACKNOWLEDGE,
	RESP_SEQ_NAK,
	RESP_DUPLICATE,
	RESP_RNR_NAK,
	RESP_ERR_INV_REQ,
	RESP_DONE,
	RESP_STATE_COUNT
};

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

/* The request being handled. */
struct resp_pkt {
	const struct droce_pkt *p;
	const uint8_t *frame;
	const struct droce_bth *bth;
	uint32_t psn, flags;
};

static enum resp_state
resp_check_qp_state(struct droce_qp *qp, const struct resp_pkt *r)
{
	(void)r;
	if ((qp->state != DROCE_QPS_RTR && qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD) ||
	    qp->resp_failing)
		return RESP_DONE;
	return RESP_CHECK_PSN;
}

static enum resp_state
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

static enum resp_state
resp_seq_nak(struct droce_qp *qp, const struct resp_pkt *r)
{
	if (droce_rc_seq_nak_due_lc(qp, r->psn, droce_bth_ackreq(r->bth))) { /* one NAK per gap and round */
		qp->stats.seq_naks_tx++;
		send_nak(qp, DROCE_NAK_PSN_SEQ_ERR, qp->rxseq.epsn);
	}
	return RESP_DONE;
}

static enum resp_state
resp_check_resource(struct droce_qp *qp, const struct resp_pkt *r)
{
	if ((r->flags & (DROCE_OPF_READ | DROCE_OPF_ATOMIC)) &&
	    qp->rd_resp_count == DROCE_RD_RESP_CAP) {
		/* replayed responses fill the queue: let the requester time out and ask again */
		qp->eng->stats.seq_drops++;
		return RESP_DONE;
	}
	if (needs_new_rqe(qp, r->flags) && !droce_qp_rq_ready_lc(qp))
		return RESP_RNR_NAK;
	return RESP_CHECK_OP_SEQ;
}

static enum resp_state
resp_rnr_nak(struct droce_qp *qp, const struct resp_pkt *r)
{
	qp->stats.rnr_naks_tx++;
	send_aeth(qp, droce_aeth_make_syndrome(DROCE_AETH_RNR_NAK, qp->attr.min_rnr_timer), r->psn);
	return RESP_DONE;
}

static enum resp_state
resp_check_op_seq(struct droce_qp *qp, const struct resp_pkt *r)
{
	if (droce_seq_rx_check(&qp->rxseq, r->p, r->frame) != DROCE_SEQ_OK)
		return RESP_ERR_INV_REQ;
	return RESP_EXECUTE;
}

static enum resp_state
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

static enum resp_state
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

static void
responder_rx(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame)
{
	const struct droce_bth *bth = droce_pkt_bth(p, frame);
	const struct resp_pkt r = { .p = p, .frame = frame, .bth = bth,
				    .psn = droce_bth_psn(bth), .flags = p->info->flags };
	enum resp_state st = RESP_CHECK_QP_STATE;

	while (st != RESP_DONE) {
		enum resp_state next;

		switch (st) {
		case RESP_CHECK_QP_STATE: next = resp_check_qp_state(qp, &r); break;
		case RESP_CHECK_PSN: next = resp_check_psn(qp, &r); break;
		case RESP_CHECK_RESOURCE: next = resp_check_resource(qp, &r); break;
		case RESP_CHECK_OP_SEQ: next = resp_check_op_seq(qp, &r); break;
		case RESP_EXECUTE: next = resp_execute(qp, &r); break;
		case RESP_ACKNOWLEDGE: next = resp_acknowledge(qp, &r); break;
		case RESP_SEQ_NAK: next = resp_seq_nak(qp, &r); break;
		case RESP_DUPLICATE:
			resp_duplicate(qp, p, frame, r.psn);
			next = RESP_DONE;
			break;
		case RESP_RNR_NAK: next = resp_rnr_nak(qp, &r); break;
		case RESP_ERR_INV_REQ:
			resp_error(qp, DROCE_ERR_REM_INV_REQ, r.psn);
			next = RESP_DONE;
			break;
		default: next = RESP_DONE; break;
		}
		DP_LOG_DP(DEBUG, "qp %u psn %u: %s -> %s", qp->qpn, r.psn, resp_state_name[st],
			  resp_state_name[next]);
		st = next;
	}
}

/* Sends queued READ responses and atomic ACKs, then a pending ACK. */
static unsigned int
responder_tx(struct droce_qp *qp, unsigned int budget)
{
	uint32_t pmtu = qp->attr.pmtu, cap = DROCE_RD_RESP_CAP;
	uint8_t ack_syn = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	unsigned int n = 0;

	while (qp->rd_resp_count && n < budget) {
		struct droce_rd_resp *e = &qp->rd_resp[qp->rd_resp_head];
		struct droce_pkt_fields f;
		struct rte_mbuf *m;
		uint8_t *payload;
		bool done;

		memset(&f, 0, sizeof(f));
		f.aeth.syndrome = ack_syn;
		f.aeth.msn = qp->msn;
		if (e->nak_err) {
			/* everything before it has been answered: now fail */
			enum droce_err err = (enum droce_err)e->nak_err;

			qp->rd_resp_head = (qp->rd_resp_head + 1) % cap;
			qp->rd_resp_count--;
			resp_error(qp, err, e->psn);
			return n + 1;
		}
		if (e->atomic) {
			f.opcode = DROCE_OPC(qp->xport, DROCE_OP_ATOMIC_ACK);
			f.psn = e->psn;
			f.atomic_orig = e->orig;
			m = pkt_alloc(qp, &f, 0, &payload);
			if (m == NULL)
				break;
			pkt_send(qp, m, 0);
			done = true;
		} else {
			uint32_t len = RTE_MIN(pmtu, e->len - e->off);
			bool first = e->off == 0, last = e->off + len == e->len;
			enum droce_op op = first && last ? DROCE_OP_READ_RESP_ONLY
					   : first	 ? DROCE_OP_READ_RESP_FIRST
					   : last	 ? DROCE_OP_READ_RESP_LAST
							 : DROCE_OP_READ_RESP_MIDDLE;

			f.opcode = DROCE_OPC(qp->xport, op);
			f.psn = droce_psn_add(e->psn, e->off / pmtu);
			m = pkt_alloc(qp, &f, len, &payload);
			if (m == NULL)
				break;
			if (len) {
				const struct droce_mr *mr = mr_check(qp, e->rkey, e->va + e->off, len,
								     DROCE_ACCESS_REMOTE_READ);
				if (mr == NULL) {
					/* deregistered since the request was checked */
					rte_pktmbuf_free(m);
					qp->rd_resp_count = 0;
					resp_error(qp, DROCE_ERR_REM_ACCESS, f.psn);
					return n;
				}
				memcpy(payload, mr->addr + (e->va + e->off - mr->iova), len);
			}
			pkt_send(qp, m, len);
			e->off += len;
			done = last;
		}
		n++;
		if (done) {
			qp->rd_resp_head = (qp->rd_resp_head + 1) % cap;
			qp->rd_resp_count--;
		}
	}
	if (qp->ack_pending && qp->rd_resp_count == 0 && n < budget) {
		send_aeth(qp, qp->ack_syndrome, qp->ack_psn);
		qp->ack_pending = false;
		n++;
	}
	return n;
}

/* ---- entry points ---- */

void
droce_rc_ack_now_lc(struct droce_qp *qp)
{
	if (qp->ack_pending && qp->rd_resp_count == 0) {
		send_aeth(qp, qp->ack_syndrome, qp->ack_psn);
		qp->ack_pending = false;
	}
}

void
droce_rc_rx_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t flags = p->info->flags;
	uint32_t psn = droce_bth_psn(droce_pkt_bth(p, frame));

	if (!droce_xrc_rx_ok(qp, p->opcode & 0xe0, flags)) { /* RC, or XRC's side */
		qp->eng->stats.seq_drops++;
	} else if (flags & DROCE_OPF_REQ) {
		responder_rx(qp, p, frame);
	} else if (qp->state == DROCE_QPS_RTS || qp->state == DROCE_QPS_SQD) {
		if (flags & DROCE_OPF_READ)
			handle_read_resp(qp, p, frame, psn);
		else if (flags & DROCE_OPF_ATOMIC)
			handle_atomic_ack(qp, p, frame, psn);
		else
			handle_ack(qp, psn, droce_aeth_syndrome(droce_pkt_hdr(p, frame, DROCE_HDR_AETH)));
	}
	droce_engine_rx_free_lc(qp->eng, m);
	droce_engine_activate_lc(qp->eng, qp);
}

unsigned int
droce_rc_tx_lc(struct droce_qp *qp, unsigned int budget)
{
	unsigned int n;

	if (!droce_xport_tx_begin_lc(qp))
		return 0;
	n = responder_tx(qp, budget);
	if (qp->state != DROCE_QPS_RTS || qp->req_state != DROCE_REQ_IDLE)
		return n;
	/* a WQE that failed at start completes once everything before it is done */
	if (qp->sq_head == qp->sq_cur && qp->sq_cur != qp->sq_avail &&
	    droce_qp_swqe(qp, qp->sq_cur)->started && droce_qp_swqe(qp, qp->sq_cur)->err) {
		fail_head(qp, droce_qp_swqe(qp, qp->sq_cur)->err);
		return n;
	}
	return n + requester_tx(qp, budget > n ? budget - n : 0);
}
