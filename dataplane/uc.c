/* SPDX-License-Identifier: BSD-3-Clause
 * Unreliable Connected transport: SEND, SEND_WITH_IMM, RDMA_WRITE and
 * RDMA_WRITE_WITH_IMM segmented by the path MTU, with no ACKs.
 *
 * Requester: a WQE completes as soon as its last packet is queued.
 * Responder (IBTA 9.7.5.1 for UC, as rxe does it): a packet whose PSN is not
 * the expected one ends the message in progress, which is dropped whole (an
 * open receive WQE is not completed and takes the next message; bytes of a
 * partial RDMA WRITE may have landed, as the spec allows).  A FIRST or ONLY
 * packet always starts a new message and resynchronises the expected PSN;
 * MIDDLE and LAST packets with no message in progress are dropped.  Remote
 * access errors are dropped silently (UC has no NAK) and counted.  Local
 * errors: a SEND longer than the receive WQE completes that WQE with
 * LOC_LEN_ERR (the rest of the message is dropped, the QP carries on); a bad
 * receive SGE completes it with LOC_PROT_ERR and moves the QP to ERR.
 * BIND_MW and LOCAL_INV execute and complete when reached (mw.c);
 * SEND_WITH_INV completes with LOC_QP_OP_ERR (no UC opcode carries an IETH).
 */
#include <string.h>

#include <rte_mbuf.h>

#include "engine.h"
#include "errors.h"
#include "internal.h"
#include "qp_internal.h"
#include "xport.h"
#include "xport_rx.h"

/* ---- requester ---- */

/* Checks a WQE's opcode and local buffers and gives it its PSNs. */
static enum droce_err
wqe_start(struct droce_qp *qp, uint32_t idx)
{
	const struct droce_wqe *w = droce_qp_wqe(qp, idx);
	struct droce_swqe *s = droce_qp_swqe(qp, idx);

	memset(s, 0, sizeof(*s));
	switch (w->opcode) {
	case DROCE_WR_SEND:
	case DROCE_WR_SEND_WITH_IMM:
	case DROCE_WR_RDMA_WRITE:
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
		break;
	case DROCE_WR_BIND_MW:
	case DROCE_WR_LOCAL_INV:
		/* no packets: executed and completed when reached */
		s->started = true;
		return droce_mw_exec_lc(qp, w);
	default:
		/* SEND_WITH_INV: IBTA gives UC no opcode with an IETH, so it cannot
		 * be sent; it completes with LOC_QP_OP_ERR, as on Linux rxe */
		return DROCE_ERR_SEND_OP;
	}
	if (!droce_xport_sges_ok_lc(qp, w, 0))
		return DROCE_ERR_LOC_PROT;
	s->npkts = droce_seq_npkts(w->length, qp->attr.pmtu);
	s->first_psn = qp->psn_next;
	s->started = true;
	return DROCE_ERR_NONE;
}

static void
fail_head(struct droce_qp *qp, enum droce_err err)
{
	droce_qp_fail_send_lc(qp, err);
}

/* Sends (more of) the oldest WQE; returns packets sent, *@whole when all of it is out. */
static unsigned int
send_wqe(struct droce_qp *qp, uint32_t idx, unsigned int budget, bool *whole)
{
	const struct droce_wqe *w = droce_qp_wqe(qp, idx);
	struct droce_swqe *s = droce_qp_swqe(qp, idx);
	unsigned int n = 0;

	*whole = false;
	while (n < budget) {
		bool last;

		if (droce_xport_send_segment_lc(qp, w, s, DROCE_TRANSPORT_UC, 0, NULL, &last) !=
		    DROCE_XPORT_TX_SENT)
			break; /* no mbuf; or s->err */
		n++;
		if (last) {
			*whole = true;
			break;
		}
	}
	return n;
}

unsigned int
droce_uc_tx_lc(struct droce_qp *qp, unsigned int budget)
{
	unsigned int sent = 0;

	if (!droce_xport_tx_begin_lc(qp))
		return 0;
	/* UC completes a WQE when its last packet leaves: the one being sent is the oldest */
	while (sent < budget && qp->state == DROCE_QPS_RTS && qp->sq_head != qp->sq_avail) {
		uint32_t idx = qp->sq_head;
		struct droce_swqe *s = droce_qp_swqe(qp, idx);
		bool whole;

		if (!s->started) {
			enum droce_err err = wqe_start(qp, idx);

			if (err != DROCE_ERR_NONE) {
				fail_head(qp, err);
				break;
			}
			if (droce_mw_wr_is_local(droce_qp_wqe(qp, idx)->opcode)) {
				droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
				continue;
			}
		}
		sent += send_wqe(qp, idx, budget - sent, &whole);
		if (s->err) {
			/* the PSNs it did not send are skipped: the receiver resyncs */
			qp->psn_next = droce_psn_add(s->first_psn, s->npkts);
			fail_head(qp, (enum droce_err)s->err);
			break;
		}
		if (!whole)
			break;
		qp->psn_next = droce_psn_add(s->first_psn, s->npkts);
		droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
	}
	qp->sq_cur = qp->sq_next = qp->sq_head;
	return sent;
}

/* ---- responder ---- */

/* Ends the message in progress without completing anything. */
static void
drop_message(struct droce_qp *qp)
{
	if (qp->rxseq.open_kind)
		qp->eng->stats.uc_msg_drops++;
	qp->rxseq.open_kind = 0;
	qp->rqe_open = false; /* the receive WQE stays posted for the next message */
	qp->recv_off = 0;
}

/* FIRST and MIDDLE carry exactly one MTU, LAST 1..MTU, ONLY 0..MTU. */
static bool
segment_ok(uint32_t flags, uint32_t len, uint32_t pmtu)
{
	if (len > pmtu)
		return false;
	if (!(flags & DROCE_OPF_LAST) && len != pmtu)
		return false;
	if ((flags & DROCE_OPF_ONLY) == DROCE_OPF_LAST && len == 0)
		return false;
	return true;
}

static void
recv_send(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame)
{
	uint32_t flags = p->info->flags;
	const struct droce_rqe *r;

	if (flags & DROCE_OPF_FIRST) {
		if (!droce_qp_rq_ready_lc(qp)) {
			qp->eng->stats.rq_empty_drops++; /* no RNR on UC: the message is lost */
			return;
		}
		qp->rxseq.open_kind = DROCE_OPF_SEND;
		qp->rqe_open = true;
		qp->recv_off = 0;
	}
	r = droce_qp_rqe(qp, qp->rq_head);
	if ((uint64_t)qp->recv_off + p->payload_len > r->length) {
		struct droce_cqe c = { .opcode = DROCE_WC_RECV };

		qp->rxseq.open_kind = 0;
		qp->rqe_open = false;
		droce_qp_recv_error_lc(qp, DROCE_ERR_LOC_LEN, &c);
		return;
	}
	if (!droce_xport_scatter_lc(qp, r->sge, r->num_sge, qp->recv_off, p->payload,
				    p->payload_len)) {
		struct droce_cqe c = { .opcode = DROCE_WC_RECV };

		qp->rxseq.open_kind = 0;
		qp->rqe_open = false;
		droce_qp_fail_recv_lc(qp, DROCE_ERR_RESP_LOC_PROT, &c);
		return;
	}
	qp->recv_off += p->payload_len;
	if (flags & DROCE_OPF_LAST) {
		struct droce_cqe c = { .status = DROCE_WC_SUCCESS, .opcode = DROCE_WC_RECV,
				       .byte_len = qp->recv_off, .src_qp = qp->attr.dest_qpn };

		if (flags & DROCE_OPF_IMM) {
			c.wc_flags |= DROCE_WC_F_WITH_IMM;
			c.imm_or_inv = droce_immdt_imm(droce_pkt_hdr(p, frame, DROCE_HDR_IMMDT));
		}
		qp->rxseq.open_kind = 0;
		qp->rqe_open = false;
		droce_qp_complete_recv_lc(qp, &c, droce_bth_se(droce_pkt_bth(p, frame)));
	}
}

static void
access_drop(struct droce_qp *qp)
{
	qp->eng->stats.uc_access_drops++;
	qp->rxseq.open_kind = 0;
}

static void
recv_write(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame)
{
	uint32_t flags = p->info->flags, len = p->payload_len, dlen = 0;
	const struct droce_mr *mr = NULL;

	if (flags & DROCE_OPF_FIRST) {
		if (!droce_xport_write_first_lc(qp, p, frame, &dlen, &mr)) {
			access_drop(qp);
			return;
		}
		qp->rxseq.open_kind = DROCE_OPF_WRITE;
		qp->rxseq.write_len = dlen;
		qp->rxseq.msg_bytes = 0;
	}
	if ((uint64_t)qp->rxseq.msg_bytes + len > qp->rxseq.write_len ||
	    ((flags & DROCE_OPF_LAST) && qp->rxseq.msg_bytes + len != qp->rxseq.write_len)) {
		drop_message(qp); /* disagrees with its RETH */
		return;
	}
	if (len) {
		if (!droce_xport_write_place_lc(qp, mr, dlen, p->payload, len)) {
			access_drop(qp); /* deregistered since the FIRST packet */
			return;
		}
		qp->rxseq.msg_bytes += len;
	}
	if (!(flags & DROCE_OPF_LAST))
		return;
	qp->rxseq.open_kind = 0;
	if (flags & DROCE_OPF_IMM) {
		if (!droce_qp_rq_ready_lc(qp)) {
			qp->eng->stats.rq_empty_drops++; /* the bytes landed; nothing to complete */
			return;
		}
		droce_xport_write_imm_done_lc(qp, p, frame);
	}
}

void
droce_uc_rx_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t flags = p->info->flags;
	uint32_t kind = flags & (DROCE_OPF_SEND | DROCE_OPF_WRITE);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(p, frame));

	if ((p->opcode & 0xe0) != DROCE_TRANSPORT_UC || !(flags & DROCE_OPF_REQ) || kind == 0) {
		qp->eng->stats.xport_drops++;
		goto out;
	}
	if (qp->state != DROCE_QPS_RTR && qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD)
		goto out;
	if (flags & DROCE_OPF_FIRST) {
		/* a new message, wherever its PSN is: the one in progress can never finish */
		drop_message(qp);
	} else if (qp->rxseq.open_kind == 0 || psn != qp->rxseq.epsn ||
		   kind != qp->rxseq.open_kind) {
		/* lost packet, or the rest of a message already dropped */
		drop_message(qp);
		qp->eng->stats.seq_drops++;
		goto out;
	}
	qp->rxseq.epsn = droce_psn_add(psn, 1);
	if (!segment_ok(flags, p->payload_len, qp->attr.pmtu)) {
		qp->rxseq.open_kind = kind; /* counted as a dropped message */
		drop_message(qp);
		goto out;
	}
	if (kind == DROCE_OPF_SEND)
		recv_send(qp, p, frame);
	else
		recv_write(qp, p, frame);
out:
	droce_engine_rx_free_lc(qp->eng, m);
}
