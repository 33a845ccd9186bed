/* SPDX-License-Identifier: BSD-3-Clause
 * XRC on the RC machinery (xrc.c): an XRC initiator is an RC QP whose
 * requests carry the XRCETH; an XRC target is an RC QP whose responder
 * picks its receive queue (an XRC SRQ), completion queue and PD from each
 * request's XRCETH.  rc.c calls these at its seams.  Engine side.
 */
#ifndef DROCE_XRC_H
#define DROCE_XRC_H

#include "engine.h"

/* True when a packet with opcode flags @flags and transport bits @tr is for
 * this QP's side: its transport, and a request for a target / a response for
 * an initiator. */
static inline bool
droce_xrc_rx_ok(const struct droce_qp *qp, uint8_t tr, uint32_t flags)
{
	if (tr != qp->xport)
		return false;
	if (qp->xrc_role == DROCE_XRC_INI)
		return !(flags & DROCE_OPF_REQ);
	if (qp->xrc_role == DROCE_XRC_TGT)
		return (flags & DROCE_OPF_REQ) != 0;
	return true;
}

/*
 * XRC target: checks the SRQ request @p names (its XRCETH) is one of the
 * QP's XRC domain; with @take, makes it the QP's receive side (SRQ, CQ, PD).
 * False (counted) when there is no such SRQ, it is of another domain, or a
 * message still open in another SRQ's WQE would change SRQ: the caller NAKs
 * invalid request.
 */
bool droce_xrc_tgt_select_lc(struct droce_qp *qp, const struct droce_pkt *p,
			     const uint8_t *frame, bool take);

/* Lets go of the SRQ a target holds (QP destroy). */
void droce_xrc_tgt_release(struct droce_qp *qp);

#endif
