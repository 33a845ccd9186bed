/* SPDX-License-Identifier: BSD-3-Clause
 * Reliable Connected transport: the engine's entry points.  A received RC
 * (or XRC) packet goes to the responder (rc_resp.c: requests) or the
 * completer (rc_comp.c: ACKs, READ responses, atomic ACKs); a transmit turn
 * serves the responder's queued answers first, then the requester
 * (rc_req.c).  Loss recovery is rc_retx.c's.  Engine thread only.
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

void
droce_rc_rx_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t flags = p->info->flags;
	uint32_t psn = droce_bth_psn(droce_pkt_bth(p, frame));

	bool held = false;

	if (unlikely(droce_rc_sr_on) && !qp->sr_peer)
		droce_rc_sr_peer_seen_lc(qp, p, frame);
	if (!droce_xrc_rx_ok(qp, p->opcode & 0xe0, flags)) { /* RC, or XRC's side */
		qp->eng->stats.seq_drops++;
	} else if (flags & DROCE_OPF_REQ) {
		uint32_t epsn = qp->rxseq.epsn;

		/* selective repeat: a request past a hole is kept, not dropped */
		held = qp->sr_peer && droce_rc_sr_hold_lc(qp, m, p, psn);
		droce_rc_resp_rx_lc(qp, p, frame);
		if (qp->srhold != NULL && qp->rxseq.epsn != epsn)
			droce_rc_sr_drain_lc(qp); /* what was kept past it, in order */
	} else if (qp->state == DROCE_QPS_RTS || qp->state == DROCE_QPS_SQD) {
		if (flags & DROCE_OPF_READ)
			droce_rc_comp_read_resp_lc(qp, p, frame, psn);
		else if (flags & DROCE_OPF_ATOMIC)
			droce_rc_comp_atomic_ack_lc(qp, p, frame, psn);
		else
			droce_rc_comp_ack_lc(qp, psn, droce_aeth_syndrome(droce_pkt_hdr(p, frame, DROCE_HDR_AETH)));
	}
	if (!held)
		droce_engine_rx_free_lc(qp->eng, m);
	if (qp->sched != DROCE_QP_SCHED_ACTIVE) /* (mostly it is: no call) */
		droce_engine_activate_lc(qp->eng, qp);
}

unsigned int
droce_rc_tx_lc(struct droce_qp *qp, unsigned int budget)
{
	unsigned int n;

	if (!droce_xport_tx_begin_lc(qp))
		return 0;
	n = droce_rc_resp_tx_lc(qp, budget);
	return n + droce_rc_req_tx_lc(qp, budget > n ? budget - n : 0);
}
