/* SPDX-License-Identifier: BSD-3-Clause
 * XRC on the RC machinery (xrc.c): an XRC initiator is an RC QP whose
 * requests carry the XRCETH; an XRC target is an RC QP whose responder
 * picks its receive queue (an XRC SRQ), completion queue and PD from each
 * request's XRCETH.  The RC files (rc_req.c, rc_comp.c, rc_resp.c) call
 * these at their seams.  Engine side.
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

enum droce_xrc_sel {
	DROCE_XRC_SEL_OK,      /* the SRQ is the QP's receive side now */
	DROCE_XRC_SEL_INVALID, /* NAK invalid request (counted) */
	DROCE_XRC_SEL_BUSY,    /* not now: RNR NAK, the requester comes back */
};

/*
 * XRC target: the SRQ request @p names (its XRCETH) must be one of the QP's
 * XRC domain (else INVALID: no such SRQ, another domain); between messages
 * it becomes the QP's receive side (SRQ, its CQ, its PD).  A new message
 * (@dup false) naming another SRQ while a WQE of the current one is open is
 * INVALID; a change of PD while READ responses / atomic ACKs checked under
 * the current PD wait to go out is BUSY, as is a duplicate (@dup) that needs
 * another PD while a WQE is open.
 */
enum droce_xrc_sel droce_xrc_tgt_select_lc(struct droce_qp *qp, const struct droce_pkt *p,
					   const uint8_t *frame, bool dup);

/* Lets go of the SRQ a target holds (QP destroy). */
void droce_xrc_tgt_release(struct droce_qp *qp);

#endif
