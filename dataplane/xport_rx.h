/* SPDX-License-Identifier: BSD-3-Clause
 * Receive-side helpers the transports share (xport.h holds the memory
 * checks, gather / scatter and the request builder they stand on): the
 * remote access check of a request, the WRITE cursor and the WRITE_WITH_IMM
 * completion (RC and UC), and the
 * placement of a one-packet message into a receive WQE (UD, RAW_PACKET).
 * What each transport does when a check fails (RC NAKs, UC drops) stays
 * the caller's.  Engine-side only.
 */
#ifndef DROCE_XPORT_RX_H
#define DROCE_XPORT_RX_H

#include <rte_memcpy.h>

#include "errors.h"
#include "wire.h"
#include "xport.h"

/* A remote access to [va, va + len) with right @need (one of the
 * DROCE_ACCESS_REMOTE_* bits): allowed by the QP's access flags and the MR
 * or window @rkey names.  A zero-length access names no memory: allowed. */
static inline bool
droce_xport_remote_ok_lc(const struct droce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len,
			 uint32_t need)
{
	if (len == 0)
		return true;
	return (qp->attr.access & need) && droce_xport_mr_check_lc(qp, rkey, va, len, need) != NULL;
}

/* A WRITE's FIRST (or ONLY) packet: its RETH's address and key become the
 * QP's write cursor; false when the access is refused for the whole length
 * (*@dlen, the RETH's).  *@mr gets the MR that allows it (NULL for a
 * zero-length WRITE), for this packet's droce_xport_write_place_lc. */
static inline bool
droce_xport_write_first_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame,
			   uint32_t *dlen, const struct droce_mr **mr)
{
	const struct droce_reth *r = droce_pkt_hdr(p, frame, DROCE_HDR_RETH);

	*dlen = droce_reth_len(r);
	qp->write_va = droce_reth_va(r);
	qp->write_rkey = droce_reth_rkey(r);
	*mr = NULL;
	if (*dlen == 0)
		return true; /* names no memory */
	if (!(qp->attr.access & DROCE_ACCESS_REMOTE_WRITE))
		return false;
	*mr = droce_xport_mr_check_lc(qp, qp->write_rkey, qp->write_va, *dlen,
				      DROCE_ACCESS_REMOTE_WRITE);
	return *mr != NULL;
}

/* @len bytes of a WRITE's payload at the write cursor, which moves on; false
 * when the MR no longer allows it (deregistered since the FIRST packet).
 * @mr, when not NULL, is the MR this same packet's RETH was just checked
 * against, with @room bytes allowed from the cursor: within them no second
 * lookup (nothing can deregister it in between). */
static inline bool
droce_xport_write_place_lc(struct droce_qp *qp, const struct droce_mr *mr, uint32_t room,
			   const uint8_t *src, uint32_t len)
{
	if (mr == NULL || len > room) {
		mr = droce_xport_mr_check_lc(qp, qp->write_rkey, qp->write_va, len,
					     DROCE_ACCESS_REMOTE_WRITE);
		if (mr == NULL)
			return false;
	}
	/* (rte_memcpy: inline for a small payload, where the libc call costs
	 * more than the copy) */
	rte_memcpy(mr->addr + (qp->write_va - mr->iova), src, len);
	qp->write_va += len;
	return true;
}

/* The receive completion of a WRITE_WITH_IMM, at its LAST (or ONLY) packet
 * (RC and UC; the receive WQE at rq_head is ready). */
static inline void
droce_xport_write_imm_done_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame)
{
	struct droce_cqe c = { .status = DROCE_WC_SUCCESS,
			       .opcode = DROCE_WC_RECV_RDMA_WITH_IMM,
			       .byte_len = qp->rxseq.write_len,
			       .src_qp = qp->attr.dest_qpn,
			       .wc_flags = DROCE_WC_F_WITH_IMM };

	c.imm_or_inv = droce_immdt_imm(droce_pkt_hdr(p, frame, DROCE_HDR_IMMDT));
	droce_qp_complete_recv_lc(qp, &c, droce_bth_se(droce_pkt_bth(p, frame)));
}

/* A piece of a received message. */
struct droce_xport_piece {
	const uint8_t *src;
	uint32_t len;
};

/*
 * A one-packet message (UD, RAW_PACKET), in @n pieces, into the receive WQE
 * at rq_head.  Too long for its buffer: the WQE completes with the error
 * table's LOC_LEN status and the QP carries on; a bad receive SGE: it fails
 * with RESP_LOC_PROT's and the QP goes where the table says.  True when
 * placed: @c's status and byte_len are set, the caller completes it.
 */
static inline bool
droce_xport_recv_place_lc(struct droce_qp *qp, struct droce_cqe *c,
			  const struct droce_xport_piece *pc, unsigned int n)
{
	const struct droce_rqe *r = droce_qp_rqe(qp, qp->rq_head);
	uint64_t total = 0;
	uint32_t off = 0;

	for (unsigned int i = 0; i < n; i++)
		total += pc[i].len;
	if (total > r->length) {
		droce_qp_recv_error_lc(qp, DROCE_ERR_LOC_LEN, c);
		return false;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (!droce_xport_scatter_lc(qp, r->sge, r->num_sge, off, pc[i].src, pc[i].len)) {
			droce_qp_fail_recv_lc(qp, DROCE_ERR_RESP_LOC_PROT, c);
			return false;
		}
		off += pc[i].len;
	}
	c->status = DROCE_WC_SUCCESS;
	c->byte_len = off;
	return true;
}

#endif
