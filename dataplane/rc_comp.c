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

/* WQEs up to @last_psn retired: a go-back may have queued a resend of what
 * is now acknowledged. */
static inline void
una_moved(struct droce_qp *qp, uint32_t last_psn)
{
	qp->psn_una = droce_psn_add(last_psn, 1);
	if (droce_psn_diff(qp->psn_next, qp->psn_una) < 0 ||
	    (qp->sq_cur == qp->sq_head &&
	     (qp->sq_cur == qp->sq_avail || !droce_qp_swqe(qp, qp->sq_cur)->started)))
		qp->psn_next = qp->psn_una;
}

/* The oldest WQE is done: everything up to @last_psn is acknowledged. */
static void
retire_head(struct droce_qp *qp, uint32_t last_psn)
{
	droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
	una_moved(qp, last_psn);
}

/* The WQE at @idx, when it is a SEND / WRITE, unsignaled, wholly sent and
 * wholly acknowledged by @psn: its last PSN in *@last. */
static inline bool
quiet_done(struct droce_qp *qp, uint32_t idx, uint32_t psn, uint32_t *last)
{
	const struct droce_wqe *w = droce_qp_wqe(qp, idx);
	const struct droce_swqe *s = droce_qp_swqe(qp, idx);

	if ((w->flags & DROCE_WQE_SIGNALED) || !s->started || s->sent_pkts == 0 ||
	    wr_is_read(w->opcode) || wr_is_atomic(w->opcode) || droce_mw_wr_is_local(w->opcode))
		return false;
	*last = droce_psn_add(s->first_psn, s->npkts - 1);
	return droce_psn_diff(*last, psn) <= 0;
}

/* The common run at the head (SENDs and WRITEs acknowledged in order,
 * unsignaled) retired in one pass, no CQE: true when there was one. */
static inline bool
retire_quiet(struct droce_qp *qp, uint32_t psn)
{
	uint32_t idx = qp->sq_head, avail = qp->sq_avail, last, qlast = 0;

	for (; idx != avail && quiet_done(qp, idx, psn, &last); idx++) {
		droce_qp_sq_clear_lc(qp, idx);
		qlast = last;
	}
	if (idx == qp->sq_head)
		return false;
	droce_qp_sq_retire_lc(qp, idx - qp->sq_head);
	una_moved(qp, qlast);
	return true;
}

/*
 * Retires WQEs wholly acknowledged by @psn: the quiet run at the head in
 * one step, then the WQE that ends it the general way (a CQE, a READ or
 * atomic unanswered, not yet acknowledged ...), and so on.
 */
static void
complete_upto(struct droce_qp *qp, uint32_t psn)
{
	bool progress = false;

	for (;;) {
		const struct droce_wqe *w;
		struct droce_swqe *s;
		uint32_t last;

		progress |= retire_quiet(qp, psn);
		if (qp->sq_head == qp->sq_avail)
			break;
		w = droce_qp_wqe(qp, qp->sq_head);
		s = droce_qp_swqe(qp, qp->sq_head);

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
 * The completer as an explicit state machine (rxe_comp.c's manner; rc_sm.h
 * lists the states): one step function per state, each returning the next;
 * COMP_DONE ends the packet.  An ACKNOWLEDGE packet starts at CHECK_WINDOW
 * and goes on by its syndrome; a READ response or atomic ACK passes the same
 * window, then RETIRE_BEFORE (its PSN acknowledges everything before it)
 * and its own states: find the WQE it answers, place, complete.
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
	[COMP_RETIRE_BEFORE] = "RETIRE_BEFORE",
	[COMP_READ_WQE] = "READ_WQE",
	[COMP_READ_REASK] = "READ_REASK",
	[COMP_READ_PLACE] = "READ_PLACE",
	[COMP_READ_COMPLETE] = "READ_COMPLETE",
	[COMP_ATOMIC_WQE] = "ATOMIC_WQE",
	[COMP_ATOMIC_PLACE] = "ATOMIC_PLACE",
	[COMP_ANSWERED] = "ANSWERED",
	[COMP_ERROR] = "ERROR",
	[COMP_DONE] = "DONE",
};

const char *
droce_rc_comp_state_name(unsigned int state)
{
	return state < COMP_STATE_COUNT && comp_state_name[state] ? comp_state_name[state] : NULL;
}

/* A step: inlined into each entry point (see comp_step). */
#define COMP_STATE static inline __attribute__((always_inline)) enum droce_rc_comp_state

/* Dropped, counted: judged again when its turn comes, or stale. */
COMP_STATE
comp_drop(struct droce_qp *qp)
{
	qp->eng->stats.seq_drops++;
	return COMP_DONE;
}

COMP_STATE
comp_check_window(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	if (!ack_in_window(qp, c->psn))
		return comp_drop(qp);
	return c->kind == COMP_KIND_ACK ? COMP_CHECK_GHOST : COMP_RETIRE_BEFORE;
}

COMP_STATE
comp_check_ghost(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	qp->peer_heard = true; /* in the window: the peer answers (rc_retx.c) */
	/*
	 * A NAK names the request that failed (or, for a sequence NAK, the
	 * PSN the responder expects): one in [una, max - 1].  A NAK at una - 1
	 * answers nothing outstanding (a ghost, or forged): IBTA 9.7.5.1.2
	 * drops it like a duplicate ACK, and so do we, counted.
	 */
	if (droce_aeth_syndrome_kind(c->syndrome) != DROCE_AETH_ACK &&
	    droce_psn_diff(c->psn, qp->psn_una) < 0) {
		qp->eng->stats.ghost_acks++;
		return COMP_DONE;
	}
	return COMP_CHECK_SYNDROME;
}

COMP_STATE
comp_check_syndrome(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	switch (droce_aeth_syndrome_kind(c->syndrome)) {
	case DROCE_AETH_ACK:
		return COMP_ACK;
	case DROCE_AETH_RNR_NAK:
		return COMP_RNR_NAK;
	case DROCE_AETH_NAK:
		return droce_err_from_nak(droce_aeth_syndrome_value(c->syndrome)) == DROCE_ERR_PSN_SEQ
			       ? COMP_SEQ_NAK
			       : COMP_ERR_NAK;
	default:
		return comp_drop(qp);
	}
}

COMP_STATE
comp_ack(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	complete_upto(qp, c->psn);
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

/* True while the QP may still complete sends normally (RTS / SQD). */
static bool
sending(const struct droce_qp *qp)
{
	return qp->state == DROCE_QPS_RTS || qp->state == DROCE_QPS_SQD;
}

/* A NAK, READ response or atomic ACK acknowledges everything before the PSN
 * it names; false when that moved the QP out of RTS / SQD (a completion
 * found an error). */
static bool
retire_before(struct droce_qp *qp, uint32_t psn)
{
	complete_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK));
	return sending(qp);
}

COMP_STATE
comp_rnr_nak(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	qp->stats.rnr_naks_rx++;
	if (!retire_before(qp, c->psn))
		return COMP_DONE;
	if (qp->attr.rnr_retry != 7) {
		if (qp->rnr_left == 0) {
			c->err = DROCE_ERR_RNR_RETRY_EXC;
			return COMP_ERROR;
		}
		qp->rnr_left--;
	}
	droce_rc_rewind_lc(qp, c->psn);
	qp->req_state = DROCE_REQ_RNR_WAIT;
	qp->rto_deadline = 0;
	qp->rnr_deadline = qp->eng->now + qp->eng->tsc_hz / 100000 *
				 rnr_timer_10us[droce_aeth_syndrome_value(c->syndrome)];
	return COMP_DONE;
}

COMP_STATE
comp_seq_nak(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	if (retire_before(qp, c->psn)) {
		qp->stats.seq_naks_rx++;
		qp->sr_tail_check = false;
		/* selective repeat (rc_sr.c): the packet it names, alone */
		if (qp->sr_peer && droce_rc_sr_resend_lc(qp, c->psn, false))
			return COMP_DONE;
		if (droce_rc_seq_nak_fresh_lc(qp, c->psn)) {
			droce_rc_window_loss_lc(qp);
			droce_rc_rewind_lc(qp, c->psn);
		}
	}
	return COMP_DONE;
}

COMP_STATE
comp_err_nak(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	if (!retire_before(qp, c->psn))
		return COMP_DONE;
	qp->stats.rem_err_naks_rx++;
	c->err = droce_err_from_nak(droce_aeth_syndrome_value(c->syndrome));
	return COMP_ERROR;
}

/* The head fails with the error the state before named; the QP then goes
 * where the error table says. */
COMP_STATE
comp_error(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	fail_head(qp, c->err);
	return COMP_DONE;
}

/*
 * A READ response or atomic ACK: everything before its PSN was received and
 * answered (what that completes retires; a READ before it still missing
 * responses lost them and is asked again, complete_upto).
 */
COMP_STATE
comp_retire_before(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	complete_upto(qp, droce_psn_add(c->psn, DROCE_PSN_MASK));
	return c->kind == COMP_KIND_READ ? COMP_READ_WQE : COMP_ATOMIC_WQE;
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

/* The READ (@w, @s) response @c answers found: the peer heard, the
 * highest response PSN in the window, and what the READ states need. */
static __rte_always_inline void
read_wqe_found(struct droce_qp *qp, struct droce_rc_comp_ctx *c, const struct droce_wqe *w,
	       struct droce_swqe *s)
{
	qp->peer_heard = true;
	if (!ack_in_window(qp, qp->rd_hi) || droce_psn_diff(c->psn, qp->rd_hi) > 0)
		qp->rd_hi = c->psn; /* the highest in the window (what lies outside is stale) */
	c->w = w;
	c->s = s;
	c->head = s == droce_qp_swqe(qp, qp->sq_head);
	c->expect = droce_psn_add(s->first_psn, s->got / qp->attr.pmtu);
	c->got = s->got;
}

/*
 * The READ this response answers, sent and unanswered (a READ response is
 * placed wherever its PSN says, in order or past a missing one: rc_read.c).
 */
COMP_STATE
comp_read_wqe(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	const struct droce_wqe *w;
	struct droce_swqe *s;

	if (!sending(qp) || (s = read_of(qp, c->psn, &w)) == NULL)
		return comp_drop(qp);
	read_wqe_found(qp, c, w, s);
	return c->psn == c->expect ? COMP_READ_PLACE : COMP_READ_REASK;
}

/* Past responses not yet placed: those below it were lost (the responder
 * answers in order): ask for them again. */
COMP_STATE
comp_read_reask(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	if (qp->sr_peer) {
		/* the holes below this one alone, now (rc_sr.c) */
		droce_rc_sr_read_repair_lc(qp, c->w, c->s,
					   (uint32_t)droce_psn_diff(c->psn, c->s->first_psn),
					   droce_rc_read_gap_lc(qp, c->s, c->expect, c->psn));
	} else if (droce_rc_read_gap_lc(qp, c->s, c->expect, c->psn)) {
		/* once per hole and round: what has not arrived, from the first */
		droce_rc_window_loss_lc(qp);
		droce_rc_rewind_lc(qp, c->expect);
	}
	return COMP_READ_PLACE;
}

COMP_STATE
comp_read_place(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	switch (droce_rc_read_place_lc(qp, c->w, c->s, c->p, c->frame, c->psn)) {
	case DROCE_RC_PLACE_OK:
		return COMP_READ_COMPLETE;
	case DROCE_RC_PLACE_BAD:
		/* a wrong length fails the READ once it is the response it waits
		 * for at the head; before that it is dropped and judged again */
		if (c->head && c->psn == c->expect) {
			c->err = DROCE_ERR_BAD_RESP;
			return COMP_ERROR;
		}
		return comp_drop(qp);
	case DROCE_RC_PLACE_PROT:
		if (c->head) {
			c->err = DROCE_ERR_LOC_PROT;
			return COMP_ERROR;
		}
		return comp_drop(qp);
	default: /* a duplicate, or too far ahead to keep */
		return comp_drop(qp);
	}
}

/* A READ completes once all its bytes are placed and everything before it
 * has completed. */
COMP_STATE
comp_read_complete(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	struct droce_swqe *s = c->s;

	if (s->got == c->got && !s->done)
		return COMP_DONE; /* past a missing one: kept for later */
	s->gap_mark = 0;
	if (!c->head)
		return COMP_DONE; /* completes after the WQEs before it */
	if (s->done)
		return COMP_ANSWERED;
	qp->psn_una = droce_psn_add(s->first_psn, s->got / qp->attr.pmtu);
	progress_made(qp);
	return COMP_DONE;
}

/* The head is the atomic this ACK answers (its only PSN), not yet answered. */
COMP_STATE
comp_atomic_wqe(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	if (qp->sq_head == qp->sq_avail)
		return comp_drop(qp);
	c->w = droce_qp_wqe(qp, qp->sq_head);
	c->s = droce_qp_swqe(qp, qp->sq_head);
	if (!c->s->started || c->s->done || !wr_is_atomic(c->w->opcode) || c->s->first_psn != c->psn)
		return comp_drop(qp);
	c->head = true;
	return COMP_ATOMIC_PLACE;
}

COMP_STATE
comp_atomic_place(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	uint64_t orig = droce_atmack_orig(droce_pkt_hdr(c->p, c->frame, DROCE_HDR_ATMACK));

	if (!scatter(qp, c->w->sge, 1, 0, (const uint8_t *)&orig, sizeof(orig))) {
		c->err = DROCE_ERR_LOC_PROT;
		return COMP_ERROR;
	}
	return COMP_ANSWERED;
}

/* The READ or atomic at the head has its whole answer: retired. */
COMP_STATE
comp_answered(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	struct droce_swqe *s = c->s;

	s->done = true;
	if (s->rd_counted) {
		s->rd_counted = false;
		qp->rd_atomic_out--;
	}
	retire_head(qp, droce_psn_add(s->first_psn, s->npkts - 1));
	/* READs after it answered whole before it, and what they acknowledge
	 * (nothing when no response past it has come, rd_hi below una, and
	 * no executed BIND_MW / LOCAL_INV waits at the head) */
	if (c->kind == COMP_KIND_READ && ack_in_window(qp, qp->rd_hi) &&
	    (droce_psn_diff(qp->rd_hi, qp->psn_una) >= 0 ||
	     (qp->sq_head != qp->sq_avail && droce_mw_wr_is_local(droce_qp_wqe(qp, qp->sq_head)->opcode))))
		complete_upto(qp, qp->rd_hi);
	progress_made(qp);
	return COMP_DONE;
}

/* Inlined, with every step, into each entry point (and the single-step
 * entry): one jump-table dispatch per step and no call; each entry's kind
 * is a constant there, so the tests on it fold away. */
static inline __attribute__((always_inline)) enum droce_rc_comp_state
comp_step(struct droce_qp *qp, enum droce_rc_comp_state st, struct droce_rc_comp_ctx *c)
{
	switch (st) {
	case COMP_CHECK_WINDOW: return comp_check_window(qp, c);
	case COMP_CHECK_GHOST: return comp_check_ghost(qp, c);
	case COMP_CHECK_SYNDROME: return comp_check_syndrome(qp, c);
	case COMP_ACK: return comp_ack(qp, c);
	case COMP_RNR_NAK: return comp_rnr_nak(qp, c);
	case COMP_SEQ_NAK: return comp_seq_nak(qp, c);
	case COMP_ERR_NAK: return comp_err_nak(qp, c);
	case COMP_RETIRE_BEFORE: return comp_retire_before(qp, c);
	case COMP_READ_WQE: return comp_read_wqe(qp, c);
	case COMP_READ_REASK: return comp_read_reask(qp, c);
	case COMP_READ_PLACE: return comp_read_place(qp, c);
	case COMP_READ_COMPLETE: return comp_read_complete(qp, c);
	case COMP_ATOMIC_WQE: return comp_atomic_wqe(qp, c);
	case COMP_ATOMIC_PLACE: return comp_atomic_place(qp, c);
	case COMP_ANSWERED: return comp_answered(qp, c);
	case COMP_ERROR: return comp_error(qp, c);
	default: return COMP_DONE;
	}
}

DROCE_RC_SM_STEP enum droce_rc_comp_state
droce_rc_comp_step_lc(struct droce_qp *qp, enum droce_rc_comp_state st, struct droce_rc_comp_ctx *c)
{
	return comp_step(qp, st, c);
}

/* Runs the machine over one packet, from @st (CHECK_WINDOW: the whole way)
 * to DONE. */
static inline __attribute__((always_inline)) void
comp_run_from(struct droce_qp *qp, struct droce_rc_comp_ctx *c, enum droce_rc_comp_state st)
{
	while (st != COMP_DONE) {
		enum droce_rc_comp_state next = comp_step(qp, st, c);

		DP_LOG_DP(DEBUG, "qp %u psn %u: %s -> %s", qp->qpn, c->psn, comp_state_name[st],
			  comp_state_name[next]);
		st = next;
	}
}

static inline __attribute__((always_inline)) void
comp_run(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	comp_run_from(qp, c, COMP_CHECK_WINDOW);
}

void
droce_rc_comp_ack_lc(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	struct droce_rc_comp_ctx c = { .kind = COMP_KIND_ACK, .psn = psn, .syndrome = syndrome };

	comp_run(qp, &c);
}

/*
 * The usual READ response the short way to READ_PLACE: the one the READ at
 * the head waits for next, in the window, the QP sending.  What
 * CHECK_WINDOW, RETIRE_BEFORE and READ_WQE would find and do for it, without
 * their walks: nothing before the head to retire (complete_upto stops at a
 * READ not wholly answered), the WQE it answers the head itself.  False,
 * with nothing changed, for anything else: the whole machine.
 */
static __rte_always_inline bool
read_resp_next_at_head(struct droce_qp *qp, struct droce_rc_comp_ctx *c)
{
	const struct droce_wqe *w;
	struct droce_swqe *s;

	if (qp->sq_head == qp->sq_avail || !sending(qp))
		return false;
	w = droce_qp_wqe(qp, qp->sq_head);
	s = droce_qp_swqe(qp, qp->sq_head);
	if (!wr_is_read(w->opcode) || !s->started || s->done ||
	    c->psn != droce_psn_add(s->first_psn, s->got / qp->attr.pmtu) ||
	    (uint32_t)droce_psn_diff(c->psn, s->first_psn) >= s->npkts || !ack_in_window(qp, c->psn))
		return false;
	read_wqe_found(qp, c, w, s); /* READ_WQE's: the head, expect = c->psn */
	return true;
}

void
droce_rc_comp_read_resp_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame,
			   uint32_t psn)
{
	struct droce_rc_comp_ctx c = { .kind = COMP_KIND_READ, .psn = psn, .p = p, .frame = frame };

	comp_run_from(qp, &c, read_resp_next_at_head(qp, &c) ? COMP_READ_PLACE : COMP_CHECK_WINDOW);
}

void
droce_rc_comp_atomic_ack_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame,
			    uint32_t psn)
{
	struct droce_rc_comp_ctx c = { .kind = COMP_KIND_ATOMIC, .psn = psn, .p = p, .frame = frame };

	comp_run(qp, &c);
}
