/* SPDX-License-Identifier: BSD-3-Clause
 * RC loss recovery (issue 12): the adaptive retransmission timer, retry
 * counting, and the decisions that make a lost packet be re-sent as soon as
 * it is known lost.  Everything here is plain IBTA behaviour on the wire (a
 * requester may re-send any request it has sent; a responder answers a
 * duplicate and NAKs a PSN gap), so it holds against any peer.
 *
 * The timer.  The QP's `timeout` attribute T = 4.096 us * 2^timeout is the
 * longest the requester waits; it also waits no less than T / 1024 (at least
 * 500 us), and a pause of the engine itself (more than 100 us between two
 * passes: descheduled, or nobody drove it) does not count as waiting, up to
 * T of pauses per retry period: on a crowded host a period lasts at most 2T,
 * so a peer that died fails the QP within 2 (retry_cnt + 1) T whatever share
 * of the CPU the engine gets (without the cap, an engine running a twentieth
 * of the time took twenty times its budget).  Between the two it waits RTO = SRTT + 4 * RTTVAR (RFC 6298's
 * estimator, one timed PSN at a time, never a re-sent one: Karn), doubled
 * per timeout in a row.  With no sample yet it waits T.
 *
 * Retries are counted per stalled request, not per timer event: a unit of
 * `retry_cnt` is spent only when a whole T has passed without progress (the
 * oldest request still unacknowledged), so short adaptive timeouts never
 * exhaust the counter, and a peer that answers nothing fails the QP with
 * RETRY_EXC after (retry_cnt + 1) * T, as with a fixed timer of T (2x that
 * at most when the engine itself was paused, above).  A T
 * without progress in which the peer did answer (ACKs, NAKs or READ
 * responses inside the window, such as a slow responder's queue of
 * responses sent before the lost one) is not a retry, up to retry_cnt + 1 of
 * them in a row: Linux rxe under TCG answers a resumed READ only after the
 * 16 x 64 KiB of responses it had queued, longer than the default 67 ms.
 * A QP whose peer keeps answering without progress fails after twice that.
 *
 * On a timeout the requester first re-sends only its last packet (a probe,
 * AckReq set): a responder that has everything answers it with an ACK (a lost
 * ACK costs one packet, no go-back), one missing something NAKs the gap.  A
 * second timeout in a row goes back to the oldest unacknowledged PSN.
 *
 * Sequence NAKs.  The responder sends one per gap and retransmission round:
 * when, after its NAK, a request below the highest one seen past the gap
 * arrives, the requester has gone back and what it re-sent is missing again,
 * so it NAKs again (rather than leaving the requester to its timer); it also
 * answers a request with AckReq past the gap with the NAK again (the first NAK
 * may be lost).  The requester ignores a NAK to the PSN it went back to while it
 * has re-sent nothing since (an answer to the packets of the round before).  READ responses: the
 * requester asks again from the first missing response (a READ for the rest,
 * with its PSN, as IBTA allows); when a later round of responses shows it
 * missing again, it asks again.  The responder, seeing a duplicate READ,
 * drops the responses still queued from its PSN on (the requester went back
 * there and re-sends every later request).
 */
#include <rte_common.h>

#include "rc_internal.h"
#include "internal.h"

#define RTO_MIN_US 500     /* the floor's floor */
#define RTO_MIN_SHIFT 10   /* floor: T / 1024 */
#define RTO_BACKOFF_MAX 10
#define CWND_MIN 16u       /* the loss window's floor, in PSNs */

/*
 * The loss window.  Go-back-N re-sends everything in flight after a loss, so
 * at a loss rate p a window of W PSNs moves about 1 / (1 + p W) of what it
 * sends.  Every go-back (sequence NAK acted on, timeout, READ resumed)
 * halves the window down to CWND_MIN; every quarter window acknowledged
 * grows it by one PSN, up to DROCE_RC_TX_WINDOW (where a clean link keeps
 * it).  While it is below that, a READ is started only if its responses fit.
 */
void
droce_rc_window_loss_lc(struct droce_qp *qp)
{
	qp->cwnd = RTE_MAX(droce_rc_window(qp) / 2, CWND_MIN);
	qp->cwnd_acc = 0;
}

static void
window_grow(struct droce_qp *qp)
{
	int32_t acked = droce_psn_diff(qp->psn_una, qp->cwnd_una);

	qp->cwnd_una = qp->psn_una;
	if (qp->cwnd == 0 || acked <= 0)
		return;
	qp->cwnd_acc += (uint32_t)acked * 4;
	while (qp->cwnd && qp->cwnd_acc >= qp->cwnd) {
		qp->cwnd_acc -= qp->cwnd;
		if (++qp->cwnd >= DROCE_RC_TX_WINDOW)
			qp->cwnd = 0;
	}
}

/* droce_rc_rto_attr's cache, for the timeout attribute now: T and the
 * adaptive timer's floor (T / 1024, at least RTO_MIN_US) */
uint64_t
droce_rc_rto_attr_set(struct droce_qp *qp)
{
	/* 4.096 us * 2^timeout */
	uint64_t attr = (uint64_t)((double)qp->eng->tsc_hz * 4.096e-6 *
				   (double)(1ull << qp->attr.timeout));

	qp->rto_attr_cyc = attr;
	qp->rto_floor_cyc = RTE_MAX(attr >> RTO_MIN_SHIFT, qp->eng->tsc_hz / 1000000 * RTO_MIN_US);
	qp->rto_attr_key = (uint8_t)(qp->attr.timeout + 1u);
	return attr;
}

/* A new retry period begins at @now (0: none, nothing outstanding). */
static inline void
retry_period_lc(struct droce_qp *qp, uint64_t now)
{
	qp->retry_epoch = now;
	qp->pause_excused = 0;
}

uint64_t
droce_rc_pause_excuse_lc(struct droce_qp *qp, uint64_t shift)
{
	uint64_t attr = droce_rc_rto_attr(qp);

	if (qp->pause_excused >= attr)
		return 0;
	shift = RTE_MIN(shift, attr - qp->pause_excused);
	qp->pause_excused += shift;
	return shift;
}

uint64_t
droce_rc_rto_cycles(struct droce_qp *qp)
{
	uint64_t attr = droce_rc_rto_attr(qp), rto;

	if (qp->srtt == 0)
		return attr;
	rto = qp->srtt + 4 * qp->rttvar;
	rto <<= RTE_MIN(qp->rto_backoff, RTO_BACKOFF_MAX);
	rto = RTE_MIN(RTE_MAX(rto, qp->rto_floor_cyc), attr);
	if (rto != qp->rto_last) { /* the gauge's division only when it moved */
		qp->rto_last = rto;
		qp->stats.rto_ns = rto * 1000000000ull / qp->eng->tsc_hz;
	}
	return rto;
}

/* PSNs [old_max, next) were sent for the first time: time one of them. */
void
droce_rc_rtt_sent_lc(struct droce_qp *qp, uint32_t old_max, uint32_t next)
{
	if (qp->retry_epoch == 0)
		retry_period_lc(qp, qp->eng->now);
	if (qp->rtt_tsc == 0 && droce_psn_diff(next, old_max) > 0) {
		/* the first new one: the soonest answered (ACK, first READ response) */
		qp->rtt_psn = old_max;
		qp->rtt_tsc = qp->eng->now ? qp->eng->now : 1;
	}
}

/* Going back to @psn: the timed PSN may be sent again (Karn). */
void
droce_rc_rtt_cancel_lc(struct droce_qp *qp, uint32_t psn)
{
	if (droce_psn_diff(psn, qp->rtt_psn) <= 0)
		qp->rtt_tsc = 0;
}

/* Something was acknowledged (psn_una moved on): sample the RTT, reset the
 * backoff and the retry period. */
void
droce_rc_progress_lc(struct droce_qp *qp)
{
	uint64_t now = qp->eng->now;

	if (qp->rtt_tsc && droce_psn_diff(qp->psn_una, qp->rtt_psn) > 0) {
		uint64_t m = now > qp->rtt_tsc ? now - qp->rtt_tsc : 1;

		if (qp->srtt == 0) {
			qp->srtt = m;
			qp->rttvar = m / 2;
		} else {
			uint64_t dev = m > qp->srtt ? m - qp->srtt : qp->srtt - m;

			qp->rttvar = (3 * qp->rttvar + dev) / 4;
			qp->srtt = (7 * qp->srtt + m) / 8;
		}
		qp->rtt_tsc = 0;
		qp->stats.srtt_ns = qp->srtt * 1000000000ull / qp->eng->tsc_hz;
	}
	window_grow(qp);
	qp->alive_defers = 0;
	qp->rto_backoff = 0;
	retry_period_lc(qp, qp->psn_una == qp->psn_next && qp->psn_una == qp->psn_max ? 0 : now);
}

void
droce_rc_timers_lc(struct droce_qp *qp)
{
	uint64_t now = qp->eng->now;
	uint32_t last;

	if (qp->eng->pass_gap > qp->eng->stall_cycles) {
		/* the engine did not run (descheduled, or nobody drove it): the
		 * peer's answers may be arriving only now, after this pass's
		 * receive phase; that pause is neither RTT nor a stall */
		uint64_t shift = droce_rc_pause_excuse_lc(qp, qp->eng->pass_gap - qp->eng->stall_cycles);

		if (qp->rto_deadline)
			qp->rto_deadline += shift;
		if (qp->retry_epoch)
			qp->retry_epoch += RTE_MIN(shift, now - qp->retry_epoch);
	}
	if (qp->req_state == DROCE_REQ_RNR_WAIT && now >= qp->rnr_deadline) {
		qp->req_state = DROCE_REQ_IDLE;
		qp->rnr_deadline = 0;
	}
	if (qp->rto_deadline == 0 || now < qp->rto_deadline)
		return;
	qp->rto_deadline = 0;
	if (qp->psn_una == qp->psn_next && qp->sq_cur == qp->sq_head)
		return;
	qp->stats.timeouts++;
	if (qp->retry_epoch == 0)
		retry_period_lc(qp, now);
	if (now - qp->retry_epoch >= droce_rc_rto_attr(qp) && qp->peer_heard &&
	    qp->alive_defers <= qp->attr.retry_cnt) {
		/* no progress, but the peer answers (responses queued before
		 * the lost one): not a retry, up to retry_cnt + 1 times */
		qp->alive_defers++;
		retry_period_lc(qp, now);
	} else if (now - qp->retry_epoch >= droce_rc_rto_attr(qp)) {
		/* a whole timeout attribute without progress: one retry spent */
		if (qp->retry_left == 0) {
			droce_rc_fail_head_lc(qp, DROCE_ERR_RETRY_EXC);
			return;
		}
		qp->retry_left--;
		qp->stats.retries++;
		retry_period_lc(qp, now);
	}
	last = droce_psn_add(qp->psn_next, DROCE_PSN_MASK);
	qp->peer_heard = false;
	if (qp->sr_peer && qp->rto_backoff == 0 && droce_rc_sr_resend_lc(qp, qp->psn_una, true)) {
		/* selective repeat: the responder keeps what followed; the
		 * oldest one alone, and go back only if this times out too */
		qp->rto_backoff++;
		qp->sr_tail_check = true;
		rearm_rto(qp);
		return;
	}
	droce_rc_window_loss_lc(qp);
	if (qp->rto_backoff++ == 0 && qp->psn_next == qp->psn_max && last != qp->psn_una &&
	    droce_psn_diff(last, qp->psn_una) > 0) {
		qp->stats.probes++;
		droce_rc_rewind_lc(qp, last);
	} else {
		droce_rc_rewind_lc(qp, qp->psn_una);
	}
	if (qp->rto_backoff > RTO_BACKOFF_MAX)
		qp->rto_backoff = RTO_BACKOFF_MAX;
}

/* Responder: a request at @psn is past the expected PSN.  True when a
 * sequence NAK is due: the first of this gap, a new round's, or an answer to
 * a request with AckReq set past the gap (the first NAK may have been lost). */
bool
droce_rc_seq_nak_due_lc(struct droce_qp *qp, uint32_t psn, bool ackreq)
{
	if (!qp->nak_seq_sent) {
		qp->nak_seq_sent = true;
		qp->nak_hi = psn;
		return true;
	}
	if (droce_psn_diff(psn, qp->nak_hi) < 0) {
		/* the requester went back, and the expected PSN is missing again */
		qp->nak_hi = psn;
		return true;
	}
	if (psn == qp->nak_hi)
		return ackreq && qp->sr_peer; /* a copy of the last one (selective repeat: a
					       * probe asks, rc_sr.c) */
	qp->nak_hi = psn;
	/* the requester asks for an answer: the NAK again (the first may be lost) */
	return ackreq;
}

/* Requester: a sequence NAK to @psn.  False for a NAK to the PSN it went
 * back to and has not re-sent yet (an answer to the round before). */
bool
droce_rc_seq_nak_fresh_lc(struct droce_qp *qp, uint32_t psn)
{
	uint64_t now = qp->eng->now;

	if (qp->goback_tsc && psn == qp->goback_psn && qp->psn_next == psn &&
	    now - qp->goback_tsc < qp->srtt)
		return false; /* went back there and has re-sent nothing yet */
	qp->goback_psn = psn;
	qp->goback_tsc = now ? now : 1;
	return true;
}

/* Requester: a READ response at @psn while @expect is the first missing one.
 * True when the READ must be asked again from @expect. */
bool
droce_rc_read_gap_lc(struct droce_qp *qp, struct droce_swqe *s, uint32_t expect, uint32_t psn)
{
	if (droce_psn_diff(psn, expect) <= 0)
		return false; /* old: a duplicate */
	if (s->gap_mark != expect + 1 || droce_psn_diff(psn, s->gap_hi) < 0) {
		/* first seen missing, or missing again in a later round */
		s->gap_mark = expect + 1;
		s->gap_hi = psn;
		qp->stats.read_resumes++;
		return true;
	}
	s->gap_hi = psn;
	return false;
}

/*
 * Responder: a duplicate READ for [@va, @va + @len) at @psn.  With @cut,
 * drops the responses still queued from @psn on (a go-back-N requester went
 * back to @psn and re-sends every later request; a selective-repeat peer,
 * rc_sr.c, asks only for what it misses: no cut).  False when the same READ
 * is still queued unanswered (a copy of the request): nothing to add then.
 */
bool
droce_rc_resp_cut_lc(struct droce_qp *qp, uint32_t psn, uint64_t va, uint32_t len, bool cut)
{
	uint32_t cap = DROCE_RD_RESP_CAP, pmtu = qp->attr.pmtu;

	for (uint32_t i = 0; i < qp->rd_resp_count; i++) {
		struct droce_rd_resp *e = &qp->rd_resp[(qp->rd_resp_head + i) % cap];
		uint32_t n = e->atomic || e->len == 0 ? 1 : (e->len + pmtu - 1) / pmtu;

		if (e->nak_err)
			return true; /* an error NAK follows: leave the queue alone */
		if (droce_psn_diff(droce_psn_add(e->psn, n - 1), psn) < 0)
			continue;
		if (!e->atomic && e->psn == psn && e->off == 0 && e->va == va && e->len == len)
			return false;
		if (!cut)
			continue;
		qp->stats.resp_cut += qp->rd_resp_count - i;
		qp->rd_resp_count = i;
		return true;
	}
	return true;
}
