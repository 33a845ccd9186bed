/* SPDX-License-Identifier: BSD-3-Clause
 * The one table that maps a transport error to what it becomes: the NAK the
 * responder sends, the completion status each side reports, and the state
 * the QP moves to.  The transports choose no status or NAK code of their
 * own: they name the error and this table answers (an RNR NAK is a flow
 * control syndrome with a timer, not a NAK code, and stays rc_resp.c's).
 */
#include "errors.h"

const struct droce_err_info droce_err_table[DROCE_ERR_COUNT] = {
	[DROCE_ERR_NONE] = { "none", DROCE_ERR_NO_NAK, DROCE_WC_SUCCESS, DROCE_WC_SUCCESS,
			     DROCE_QPS_RTS },
	/* requester found a bad lkey / SGE outside its MR / missing local write right */
	[DROCE_ERR_LOC_PROT] = { "local protection", DROCE_ERR_NO_NAK, DROCE_WC_LOC_PROT_ERR,
				 DROCE_WC_SUCCESS, DROCE_QPS_ERR },
	/* responder: SEND longer than the receive buffer */
	[DROCE_ERR_LOC_LEN] = { "receive buffer too small", DROCE_NAK_INVALID_REQ,
				DROCE_WC_REM_INV_REQ_ERR, DROCE_WC_LOC_LEN_ERR, DROCE_QPS_ERR },
	/* responder: the receive WQE's own SGE is bad */
	[DROCE_ERR_RESP_LOC_PROT] = { "receive buffer protection", DROCE_NAK_REM_OP_ERR,
				      DROCE_WC_REM_OP_ERR, DROCE_WC_LOC_PROT_ERR, DROCE_QPS_ERR },
	/* responder: rkey, PD, bounds or access rights */
	[DROCE_ERR_REM_ACCESS] = { "remote access", DROCE_NAK_REM_ACCESS_ERR,
				   DROCE_WC_REM_ACCESS_ERR, DROCE_WC_LOC_ACCESS_ERR, DROCE_QPS_ERR },
	/* responder: malformed request, bad opcode order, length, too many READs */
	[DROCE_ERR_REM_INV_REQ] = { "invalid request", DROCE_NAK_INVALID_REQ,
				    DROCE_WC_REM_INV_REQ_ERR, DROCE_WC_LOC_QP_OP_ERR, DROCE_QPS_ERR },
	[DROCE_ERR_REM_OP] = { "remote operational", DROCE_NAK_REM_OP_ERR, DROCE_WC_REM_OP_ERR,
			       DROCE_WC_LOC_QP_OP_ERR, DROCE_QPS_ERR },
	[DROCE_ERR_RETRY_EXC] = { "transport retries exhausted", DROCE_ERR_NO_NAK,
				  DROCE_WC_RETRY_EXC_ERR, DROCE_WC_SUCCESS, DROCE_QPS_ERR },
	[DROCE_ERR_RNR_RETRY_EXC] = { "RNR retries exhausted", DROCE_ERR_NO_NAK,
				      DROCE_WC_RNR_RETRY_EXC_ERR, DROCE_WC_SUCCESS, DROCE_QPS_ERR },
	/* requester: a response that does not fit what was asked */
	[DROCE_ERR_BAD_RESP] = { "bad response", DROCE_ERR_NO_NAK, DROCE_WC_BAD_RESP_ERR,
				 DROCE_WC_SUCCESS, DROCE_QPS_ERR },
	[DROCE_ERR_FLUSH] = { "flushed", DROCE_ERR_NO_NAK, DROCE_WC_WR_FLUSH_ERR,
			      DROCE_WC_WR_FLUSH_ERR, DROCE_QPS_ERR },
	/* requester: a memory window bind or a local invalidate it cannot execute
	 * (IBTA's memory management operation error) */
	[DROCE_ERR_MW_OP] = { "memory window operation", DROCE_ERR_NO_NAK, DROCE_WC_MW_BIND_ERR,
			      DROCE_WC_SUCCESS, DROCE_QPS_ERR },
	/* a completion found its CQ full (IBTA: a CQ error; the QP goes to ERR, its
	 * completions wait in order for room, none is dropped: see qp.c) */
	[DROCE_ERR_CQ_OVERRUN] = { "CQ overrun", DROCE_ERR_NO_NAK, DROCE_WC_GENERAL_ERR,
				   DROCE_WC_GENERAL_ERR, DROCE_QPS_ERR },
	/* RAW_PACKET: a frame over the port's MTU, a TSO of too many segments */
	[DROCE_ERR_SEND_LEN] = { "local length", DROCE_ERR_NO_NAK, DROCE_WC_LOC_LEN_ERR,
				 DROCE_WC_SUCCESS, DROCE_QPS_ERR },
	/* a WR the QP cannot execute: RAW_PACKET, a TSO header that is not
	 * Ethernet / IPv4 / TCP; UC, SEND_WITH_INV (no UC opcode has an IETH);
	 * UD, a WR other than a SEND (completes, the QP carries on) */
	[DROCE_ERR_SEND_OP] = { "local QP operation", DROCE_ERR_NO_NAK, DROCE_WC_LOC_QP_OP_ERR,
				DROCE_WC_SUCCESS, DROCE_QPS_ERR },
	/* responder: a request past the expected PSN: the sequence NAK, which
	 * sends the requester back (rc_comp.c), fails nothing and moves no state */
	[DROCE_ERR_PSN_SEQ] = { "PSN sequence", DROCE_NAK_PSN_SEQ_ERR, DROCE_WC_SUCCESS,
				DROCE_WC_SUCCESS, DROCE_QPS_RTS },
};

/* A NAK code received by a requester, as an internal error. */
enum droce_err
droce_err_from_nak(uint8_t code)
{
	switch (code) {
	case DROCE_NAK_INVALID_REQ:
	case DROCE_NAK_INVALID_RD_REQ:
		return DROCE_ERR_REM_INV_REQ;
	case DROCE_NAK_REM_ACCESS_ERR:
		return DROCE_ERR_REM_ACCESS;
	case DROCE_NAK_PSN_SEQ_ERR:
		return DROCE_ERR_PSN_SEQ;
	default:
		return DROCE_ERR_REM_OP;
	}
}
