/* SPDX-License-Identifier: BSD-3-Clause
 * Reliable Connected transport, completer: ACKs, NAKs, READ responses and
 * atomic ACKs -> send completions, RNR waits and go-backs (the recovery
 * policy itself is rc_retx.c's).  Engine thread only.
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
#include "xrc.h"

/* IBTA RNR NAK timer encodings, in units of 10 us (0 means 655.36 ms). */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

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
			/* acknowledged past an unanswered READ/atomic: its response was lost
			 * (a READ: asked again each round its hole shows, rc_retx.c) */
			uint32_t from = droce_psn_add(s->first_psn, s->got / qp->attr.pmtu);

			if (wr_is_read(w->opcode) && qp->sr_peer) {
				/* its answer ended: ask for its holes alone (rc_sr.c) */
				droce_rc_sr_read_repair_lc(qp, w, s, s->npkts,
							   droce_rc_read_gap_lc(qp, s, from,
										droce_psn_add(psn, 1)));
			} else if (wr_is_read(w->opcode)
					   ? droce_rc_read_gap_lc(qp, s, from, droce_psn_add(psn, 1))
					   : s->gap_mark != from + 1) {
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
 * machine (rxe_comp.c's manner; rc_sm.h lists the states): one step
 * function per state, each returning the next; COMP_DONE ends the packet.
 */
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

static enum droce_rc_comp_state
comp_check_window(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)syndrome;
	if (!ack_in_window(qp, psn)) {
		qp->eng->stats.seq_drops++;
		return COMP_DONE;
	}
	return COMP_CHECK_GHOST;
}

static enum droce_rc_comp_state
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

static enum droce_rc_comp_state
comp_check_syndrome(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)psn;
	switch (droce_aeth_syndrome_kind(syndrome)) {
	case DROCE_AETH_ACK:
		return COMP_ACK;
	case DROCE_AETH_RNR_NAK:
		return COMP_RNR_NAK;
	case DROCE_AETH_NAK:
		return droce_err_from_nak(droce_aeth_syndrome_value(syndrome)) == DROCE_ERR_PSN_SEQ
			       ? COMP_SEQ_NAK
			       : COMP_ERR_NAK;
	default:
		qp->eng->stats.seq_drops++;
		return COMP_DONE;
	}
}

static enum droce_rc_comp_state
comp_ack(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)syndrome;
	complete_upto(qp, psn);
	if (unlikely(qp->sr_tail_check)) {
		/* selective repeat: the answer to a timeout's re-send is an ACK,
		 * not a NAK: the responder keeps nothing past it, so what follows
		 * was lost too: go back over it now rather than a timer each */
		qp->sr_tail_check = false;
		if (qp->psn_una != qp->psn_next && (qp->state == DROCE_QPS_RTS || qp->state == DROCE_QPS_SQD))
			droce_rc_rewind_lc(qp, qp->psn_una);
	}
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

static enum droce_rc_comp_state
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

static enum droce_rc_comp_state
comp_seq_nak(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	(void)syndrome;
	if (comp_nak_retire(qp, psn)) {
		qp->stats.seq_naks_rx++;
		qp->sr_tail_check = false;
		/* selective repeat (rc_sr.c): the packet it names, alone */
		if (qp->sr_peer && droce_rc_sr_resend_lc(qp, psn, false))
			return COMP_DONE;
		if (droce_rc_seq_nak_fresh_lc(qp, psn)) {
			droce_rc_window_loss_lc(qp);
			droce_rc_rewind_lc(qp, psn);
		}
	}
	return COMP_DONE;
}

static enum droce_rc_comp_state
comp_err_nak(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	if (comp_nak_retire(qp, psn)) {
		qp->stats.rem_err_naks_rx++;
		fail_head(qp, droce_err_from_nak(droce_aeth_syndrome_value(syndrome)));
	}
	return COMP_DONE;
}

static enum droce_rc_comp_state
comp_step(struct droce_qp *qp, enum droce_rc_comp_state st, uint32_t psn, uint8_t syndrome)
{
	switch (st) {
	case COMP_CHECK_WINDOW: return comp_check_window(qp, psn, syndrome);
	case COMP_CHECK_GHOST: return comp_check_ghost(qp, psn, syndrome);
	case COMP_CHECK_SYNDROME: return comp_check_syndrome(qp, psn, syndrome);
	case COMP_ACK: return comp_ack(qp, psn, syndrome);
	case COMP_RNR_NAK: return comp_rnr_nak(qp, psn, syndrome);
	case COMP_SEQ_NAK: return comp_seq_nak(qp, psn, syndrome);
	case COMP_ERR_NAK: return comp_err_nak(qp, psn, syndrome);
	default: return COMP_DONE;
	}
}

DROCE_RC_SM_STEP enum droce_rc_comp_state
droce_rc_comp_step_lc(struct droce_qp *qp, enum droce_rc_comp_state st, uint32_t psn,
		      uint8_t syndrome)
{
	return comp_step(qp, st, psn, syndrome);
}

void
droce_rc_comp_ack_lc(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	enum droce_rc_comp_state st = COMP_CHECK_WINDOW;

	while (st != COMP_DONE) {
		enum droce_rc_comp_state next = comp_step(qp, st, psn, syndrome);

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

/* The READ whose responses include @psn, among the WQEs sent (NULL if none). */
static struct droce_swqe *
read_of(struct droce_qp *qp, uint32_t psn, const struct droce_wqe **w)
{
	for (uint32_t idx = qp->sq_head; idx != qp->sq_avail; idx++) {
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		int32_t d;

		if (!s->started)
			return NULL;
		d = droce_psn_diff(psn, s->first_psn);
		if (d < 0)
			return NULL;
		if ((uint32_t)d < s->npkts) {
			*w = droce_qp_wqe(qp, idx);
			return wr_is_read((*w)->opcode) ? s : NULL;
		}
	}
	return NULL;
}

/*
 * A READ response: everything before its PSN was received and answered
 * (what that completes retires; a READ before it still missing responses
 * lost them and is asked again).  It is placed wherever its PSN says, in
 * order or past a missing one (rc_read.c); a READ completes once all its
 * bytes are placed and everything before it has completed.
 */
void
droce_rc_comp_read_resp_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	uint32_t pmtu = qp->attr.pmtu, expect, got;
	const struct droce_wqe *w = NULL;
	struct droce_swqe *s;
	bool head;

	if (!ack_in_window(qp, psn)) {
		qp->eng->stats.seq_drops++;
		return;
	}
	complete_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK));
	s = qp->state == DROCE_QPS_RTS || qp->state == DROCE_QPS_SQD ? read_of(qp, psn, &w) : NULL;
	if (s == NULL) {
		qp->eng->stats.seq_drops++;
		return;
	}
	qp->peer_heard = true;
	if (!ack_in_window(qp, qp->rd_hi) || droce_psn_diff(psn, qp->rd_hi) > 0)
		qp->rd_hi = psn; /* the highest in the window (what lies outside is stale) */
	head = s == droce_qp_swqe(qp, qp->sq_head);
	expect = droce_psn_add(s->first_psn, s->got / pmtu);
	got = s->got;
	if (psn != expect && qp->sr_peer) {
		/* responses lost: ask for the holes below this one alone, now (rc_sr.c) */
		droce_rc_sr_read_repair_lc(qp, w, s, (uint32_t)droce_psn_diff(psn, s->first_psn),
					   droce_rc_read_gap_lc(qp, s, expect, psn));
	} else if (psn != expect && droce_rc_read_gap_lc(qp, s, expect, psn)) {
		/* responses lost: ask again for what has not arrived */
		droce_rc_window_loss_lc(qp);
		droce_rc_rewind_lc(qp, expect);
	}
	switch (droce_rc_read_place_lc(qp, w, s, p, frame, psn)) {
	case DROCE_RC_PLACE_OK:
		break;
	case DROCE_RC_PLACE_BAD:
		if (head && psn == expect) {
			fail_head(qp, DROCE_ERR_BAD_RESP);
			return;
		}
		qp->eng->stats.seq_drops++; /* judged when its turn comes */
		return;
	case DROCE_RC_PLACE_PROT:
		if (head) {
			fail_head(qp, DROCE_ERR_LOC_PROT);
			return;
		}
		qp->eng->stats.seq_drops++;
		return;
	default:
		qp->eng->stats.seq_drops++;
		return;
	}
	if (s->got == got && !s->done)
		return; /* past a missing one: kept for later */
	s->gap_mark = 0;
	if (!head)
		return; /* completes after the WQEs before it */
	if (s->done) {
		answer_done(qp, s);
		/* READs after it answered whole before it, and what they acknowledge */
		if (ack_in_window(qp, qp->rd_hi))
			complete_upto(qp, qp->rd_hi);
	} else {
		qp->psn_una = droce_psn_add(s->first_psn, s->got / pmtu);
	}
	progress_made(qp);
}

void
droce_rc_comp_atomic_ack_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
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
