/* SPDX-License-Identifier: BSD-3-Clause
 * RAW_PACKET QPs, verbs side: the state machine's masks, ibv_post_send's
 * IBV_WR_SEND (one Ethernet frame per WR) and IBV_WR_TSO (wr.tso.hdr,
 * hdr_sz, mss) with IBV_SEND_IP_CSUM, and the checks the WR builder (wr.c)
 * shares.  The engine side is dataplane/raw.c; receive steering is flow.c.
 *
 * Errors (EINVAL, *bad_wr set, nothing of the WR posted): an opcode other
 * than SEND / TSO, a SEND frame shorter than an Ethernet header or longer
 * than the port's MTU plus an Ethernet header and one VLAN tag, a TSO
 * hdr_sz of 0 or above the QP's max_tso_header, a NULL hdr, an mss of 0,
 * segments (hdr_sz + mss) over the MTU, a TSO payload over DROCE_DP_MAX_TSO,
 * inline data over max_inline_data.  A TSO header that is not Ethernet /
 * IPv4 / TCP is found by the engine: LOC_QP_OP_ERR completion.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define RAW_FLAGS (IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_IP_CSUM | IBV_SEND_FENCE | \
		   IBV_SEND_SOLICITED)

/*
 * The kernel's ib_modify_qp_is_ok for IB_QPT_RAW_PACKET: RESET -> INIT needs
 * the port, INIT -> INIT may name it again, INIT -> RTR -> RTS and RTS -> RTS
 * take no attribute, any state -> RESET or ERR.
 */
bool
droce_verbs_raw_modify_ok(enum ibv_qp_state cur, enum ibv_qp_state next, int mask)
{
	int extra = mask & ~IBV_QP_STATE;

	if (mask & IBV_QP_CUR_STATE)
		return false;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return extra == 0;
	switch (cur) {
	case IBV_QPS_RESET:
		return next == IBV_QPS_INIT && extra == IBV_QP_PORT;
	case IBV_QPS_INIT:
		return (next == IBV_QPS_INIT && (extra & ~IBV_QP_PORT) == 0) ||
		       (next == IBV_QPS_RTR && extra == 0);
	case IBV_QPS_RTR:
		return next == IBV_QPS_RTS && extra == 0;
	case IBV_QPS_RTS:
		return next == IBV_QPS_RTS && extra == 0;
	default:
		return false;
	}
}

int
droce_verbs_raw_tso_hdr(const struct droce_vqp *q, struct droce_wqe *w, const void *hdr,
			uint16_t hdr_sz, uint16_t mss)
{
	if (hdr == NULL || hdr_sz == 0 || hdr_sz > q->max_tso_header || mss == 0 ||
	    (uint32_t)hdr_sz + mss > q->raw_max_frame)
		return EINVAL;
	/* after the WQE's data room, as the QP's send slots were cut for it */
	memcpy(droce_wqe_tso_hdr(w, q->cap.max_send_sge, q->cap.max_inline_data), hdr, hdr_sz);
	w->tso_hdr_sz = hdr_sz;
	w->tso_mss = mss;
	return 0;
}

int
droce_verbs_raw_check(const struct droce_vqp *q, const struct droce_wqe *w)
{
	if (w->opcode == DROCE_WR_TSO)
		return w->length <= DROCE_DP_MAX_TSO ? 0 : EINVAL;
	/* one frame: at least its Ethernet header, at most the MTU behind it */
	return w->length >= 14 && w->length <= q->raw_max_frame ? 0 : EINVAL;
}

int
droce_verbs_encode_raw(const struct droce_vqp *q, const struct ibv_send_wr *wr,
		       struct droce_wqe *wqe)
{
	unsigned int op = (unsigned int)wr->opcode;
	uint64_t total = 0;
	uint8_t flags = 0;
	int rc;

	if ((op != IBV_WR_SEND && op != IBV_WR_TSO) || (wr->send_flags & ~(unsigned int)RAW_FLAGS) ||
	    wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_SIGNALED || q->sq_sig_all)
		flags |= DROCE_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_IP_CSUM)
		flags |= DROCE_WQE_IP_CSUM;
	droce_wqe_clear_head(wqe);
	wqe->wr_id = wr->wr_id;
	wqe->opcode = (uint8_t)op;
	if (op == IBV_WR_TSO) {
		rc = droce_verbs_raw_tso_hdr(q, wqe, wr->tso.hdr, wr->tso.hdr_sz, wr->tso.mss);
		if (rc != 0)
			return rc;
	}
	if (droce_verbs_wqe_data(q, wr, wqe, &total) != 0)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE)
		flags |= DROCE_WQE_INLINE;
	wqe->length = (uint32_t)total;
	wqe->flags = flags;
	return droce_verbs_raw_check(q, wqe);
}
