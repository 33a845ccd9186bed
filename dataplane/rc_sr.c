/* SPDX-License-Identifier: BSD-3-Clause
 * RC selective repeat between two droce ends (issue 12, in the manner of
 * IRN): a loss costs the lost packets, not everything sent after them.
 *
 * Negotiation.  `[engines] selective_repeat = 1` makes every RC frame droce
 * sends carry a hint, DROCE_RC_SR_HINT in the BTH's reserved bits after
 * FECN/BECN (Resv6a: sent as zero by IBTA, ignored by receivers, and masked
 * out of the ICRC with the rest of that byte, so no receiver can tell).  A
 * QP uses selective repeat only after a frame from its peer carried the hint
 * too (qp->sr_peer), so towards rxe, ConnectX or a droce without the key it
 * stays plain go-back-N; without the key (the default) droce's frames are
 * byte for byte what they were.
 *
 * Responder.  A request past the expected PSN, at most DROCE_RC_SR_WIN PSNs
 * ahead, is kept (its mbuf, in a per-QP ring allocated at the first one)
 * instead of dropped; the sequence NAK for the expected PSN goes out as
 * before.  When the expected one arrives, the kept ones that follow it are
 * executed in order, and if a hole is left the NAK for it goes out at once.
 * A duplicate READ does not cut the responses still queued (the requester
 * asks only for what it misses, so what is queued is still wanted).
 *
 * Requester.  A sequence NAK re-sends the one packet it names (AckReq set),
 * no go-back and no loss-window cut; READ responses past a hole are kept
 * (rc_read.c) and only the holes below the highest response seen are asked
 * again, at once, without going back over the READs after it.  A timeout
 * first re-sends the oldest unacknowledged SEND / WRITE packet alone (the
 * one the responder waits for: it keeps the rest); if the answer is an ACK
 * short of what was sent (no NAK: nothing kept past it), the tail was lost
 * too and the requester goes back over it at once; the next timeout in a
 * row goes back from psn_una (rc_retx.c), the fallback that makes any loss
 * pattern recover.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "internal.h"
#include "rc_internal.h"
#include "rc_sm.h"

bool droce_rc_sr_on;

struct droce_rc_srhold {
	struct {
		struct rte_mbuf *m; /* NULL: empty */
		uint32_t psn;
		struct droce_pkt p;
	} e[DROCE_RC_SR_WIN];
	uint32_t count; /* entries holding an mbuf (some may be stale: behind epsn) */
	uint32_t hi;    /* the highest PSN held */
};

void
droce_rc_sr_config(bool on)
{
	droce_rc_sr_on = on;
}

void
droce_rc_sr_peer_seen_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame)
{
	if (frame[p->bth_off + 4] & DROCE_RC_SR_HINT) {
		qp->sr_peer = true;
		qp->stats.sr_peer = 1;
	}
}

bool
droce_rc_sr_hold_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p,
		    uint32_t psn)
{
	int32_t d = droce_psn_diff(psn, qp->rxseq.epsn);
	struct droce_rc_srhold *h = qp->srhold;
	uint32_t i = psn % DROCE_RC_SR_WIN;

	if (d <= 0 || d >= DROCE_RC_SR_WIN || qp->resp_failing ||
	    (qp->state != DROCE_QPS_RTR && qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD))
		return false;
	/* never the pool's last quarter: the port must keep receiving */
	if (rte_mempool_avail_count(m->pool) < m->pool->size / 4)
		return false;
	if (h == NULL && (h = qp->srhold = calloc(1, sizeof(*h))) == NULL)
		return false;
	if (h->e[i].m != NULL) {
		if (h->e[i].psn == psn)
			return false; /* a copy: held already */
		rte_pktmbuf_free(h->e[i].m); /* stale: its PSN was executed meanwhile */
		h->e[i].m = NULL;
		h->count--;
		qp->stats.sr_released++;
	}
	h->e[i].m = m;
	h->e[i].psn = psn;
	h->e[i].p = *p;
	if (h->count++ == 0 || droce_psn_diff(psn, h->hi) > 0)
		h->hi = psn;
	qp->stats.sr_held++;
	return true;
}

/* The held request at the expected PSN, taken out of the ring (its mbuf is
 * the caller's), or NULL. */
static struct rte_mbuf *
take_expected(struct droce_qp *qp, struct droce_pkt *p)
{
	struct droce_rc_srhold *h = qp->srhold;
	uint32_t i = qp->rxseq.epsn % DROCE_RC_SR_WIN;
	struct rte_mbuf *m;

	if (h == NULL || h->count == 0 || h->e[i].m == NULL || h->e[i].psn != qp->rxseq.epsn)
		return NULL;
	m = h->e[i].m;
	*p = h->e[i].p;
	h->e[i].m = NULL;
	h->count--;
	qp->stats.sr_released++;
	return m;
}

void
droce_rc_sr_drain_lc(struct droce_qp *qp)
{
	struct droce_pkt p;
	struct rte_mbuf *m;
	bool ran = false;

	while ((m = take_expected(qp, &p)) != NULL) {
		droce_rc_resp_rx_lc(qp, &p, rte_pktmbuf_mtod(m, const uint8_t *));
		droce_engine_rx_free_lc(qp->eng, m);
		ran = true;
	}
	if (!ran || (qp->state != DROCE_QPS_RTR && qp->state != DROCE_QPS_RTS &&
		     qp->state != DROCE_QPS_SQD) || qp->resp_failing)
		return;
	if (qp->srhold->count && droce_psn_diff(qp->srhold->hi, qp->rxseq.epsn) > 0) {
		/* a hole left below what is held: NAK it now, not at the next arrival */
		droce_rc_resp_nak_gap_lc(qp, qp->srhold->hi);
	} else {
		/* all of it in: say so (the requester re-sent one packet, AckReq) */
		qp->ack_pending = true;
		qp->ack_psn = droce_psn_add(qp->rxseq.epsn, DROCE_PSN_MASK);
		qp->ack_syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	}
}

void
droce_rc_sr_release_lc(struct droce_qp *qp)
{
	struct droce_rc_srhold *h = qp->srhold;

	if (h == NULL)
		return;
	for (uint32_t i = 0; i < DROCE_RC_SR_WIN && h->count; i++)
		if (h->e[i].m != NULL) {
			rte_pktmbuf_free(h->e[i].m);
			h->e[i].m = NULL;
			h->count--;
			qp->stats.sr_released++;
		}
}

void
droce_rc_sr_free(struct droce_qp *qp)
{
	droce_rc_sr_release_lc(qp);
	free(qp->srhold);
	qp->srhold = NULL;
}

bool
droce_rc_sr_resend_lc(struct droce_qp *qp, uint32_t psn, bool timeout)
{
	uint32_t pmtu = qp->attr.pmtu;

	if (!timeout && psn == qp->sr_resent_psn && qp->sr_resent_tsc &&
	    qp->eng->now - qp->sr_resent_tsc < RTE_MAX(qp->srtt, qp->eng->tsc_hz / 10000))
		return true; /* re-sent within an RTT: this NAK answers the round before */
	for (uint32_t idx = qp->sq_head; idx != qp->sq_avail; idx++) {
		const struct droce_wqe *w = droce_qp_wqe(qp, idx);
		struct droce_swqe *s = droce_qp_swqe(qp, idx), one;
		int32_t d;
		bool last;

		if (!s->started)
			return false;
		d = droce_psn_diff(psn, s->first_psn);
		if (d < 0)
			return false;
		if ((uint32_t)d >= s->npkts)
			continue;
		if (wr_is_read(w->opcode) && d == 0 && s->sent_pkts == s->npkts) {
			/* a READ request: asked again for what of it is missing */
			if (timeout)
				return false; /* a READ stalled: the go-back asks it and what follows */
			droce_rc_sr_read_repair_lc(qp, w, s, s->npkts, true);
			qp->sr_resent_psn = psn;
			qp->sr_resent_tsc = qp->eng->now ? qp->eng->now : 1;
			qp->stats.sr_resent++;
			return true;
		}
		if (wr_is_read(w->opcode) || wr_is_atomic(w->opcode) ||
		    (uint32_t)d >= s->sent_pkts)
			return false; /* an atomic, or not sent yet: go back */
		one = *s;
		one.sent_pkts = (uint32_t)d;
		one.sent = (uint32_t)d * pmtu;
		if (droce_xport_send_segment_lc(qp, w, &one, qp->xport, 1, NULL, &last) !=
		    DROCE_XPORT_TX_SENT)
			return false;
		qp->sr_resent_psn = psn;
		qp->sr_resent_tsc = qp->eng->now ? qp->eng->now : 1;
		qp->stats.sr_resent++;
		droce_rc_rtt_cancel_lc(qp, psn); /* Karn */
		return true;
	}
	return false;
}
