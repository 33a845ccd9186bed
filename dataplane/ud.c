/* SPDX-License-Identifier: BSD-3-Clause
 * Unreliable Datagram transport: SEND and SEND_WITH_IMM, one packet per
 * message, with a DETH (Q_Key, source QP).  Each WQE names its destination
 * through an address handle (struct droce_ah); the QP keeps one header
 * template, rebuilt when a WQE names another AH.
 *
 * Messages above the MTU (the port's active MTU: UD has no path MTU) are
 * handled as Linux rxe handles them (rxe_req.c, IBTA C10-93.1.1): no packet
 * is sent, no error is generated, and the WQE completes successfully.  The
 * PSN still advances, as in rxe.  ud_oversize counts them.
 *
 * Receivers check the Q_Key, then place the 40-byte GRH area and the payload
 * into the receive WQE: an IPv6 header as it arrived, or for IPv4 20 zero
 * bytes then the IPv4 header (rxe's rdma_network_hdr layout, which
 * ibv_init_ah_from_wc understands).
 */
#include <string.h>

#include <rte_mbuf.h>

#include "engine.h"
#include "cc.h"
#include "errors.h"
#include "internal.h"
#include "qp_internal.h"
#include "xport.h"
#include "xport_rx.h"

#define GRH_LEN 40
#define QKEY_USE_QP 0x80000000u

static uint32_t
ud_pmtu(const struct droce_qp *qp)
{
	return droce_xport_ib_mtu(qp->port->mtu);
}

/* Makes qp->tmpl address @ah's destination. */
static void
tmpl_for(struct droce_qp *qp, const struct droce_ah *ah)
{
	struct droce_path path;

	if (qp->tmpl_ah_serial == ah->serial)
		return;
	path = ah->path;
	droce_cc_path(qp->port, &path);
	if (path.udp_sport == 0) {
		/* per-QP entropy, as rxe does for UD: 0xC000 + 14 hashed bits */
		uint32_t h = qp->qpn * 0x9e3779b1u;

		path.udp_sport = (uint16_t)(0xc000u | (h >> 18));
	}
	droce_tmpl_init(&qp->tmpl, &path);
	qp->tmpl_ah_serial = ah->serial;
}

/* The oldest WQE fails with @err; the QP goes where the error table says. */
static void
fail_head(struct droce_qp *qp, enum droce_err err)
{
	droce_qp_fail_send_lc(qp, err);
}

/* A datagram to QPN 0xFFFFFF: as droce_xport_send_data_lc (UD copies, never
 * zero-copy), and when the AH's GID is a group the port also receives it
 * (rxe and ConnectX loop multicast back to the sending port's QPs). */
static enum droce_xport_tx
send_group_lc(struct droce_qp *qp, const struct droce_wqe *w, struct droce_pkt_fields *f)
{
	uint8_t *payload;
	struct rte_mbuf *m = droce_xport_pkt_alloc_lc(qp, f, w->length, &payload);

	if (m == NULL)
		return DROCE_XPORT_TX_NOMBUF;
	if (!droce_xport_payload_lc(qp, w, NULL, 0, payload, w->length)) {
		rte_pktmbuf_free(m);
		return DROCE_XPORT_TX_PROT;
	}
	droce_xport_pkt_seal_lc(qp, m, w->length);
	if (droce_gid_is_mcast(w->ah->path.dst_gid))
		droce_engine_mcast_loop_lc(qp->eng, qp, m, w->ah->path.dst_gid);
	qp->stats.tx_pkts++;
	droce_engine_tx_lc(qp->eng, qp->port_index, m);
	return DROCE_XPORT_TX_SENT;
}

/* Sends WQE @idx (the oldest); false when it has to wait (no mbuf). */
static bool
send_one(struct droce_qp *qp, uint32_t idx)
{
	const struct droce_wqe *w = droce_qp_wqe(qp, idx);
	struct droce_pkt_fields f;

	if ((w->opcode != DROCE_WR_SEND && w->opcode != DROCE_WR_SEND_WITH_IMM) || w->ah == NULL) {
		/* verbs_api lets only these through; a raw dp.h caller may not */
		droce_qp_complete_send_lc(qp, droce_err_table[DROCE_ERR_SEND_OP].req_status);
		return true;
	}
	if (!droce_xport_sges_ok_lc(qp, w, 0)) {
		fail_head(qp, DROCE_ERR_LOC_PROT);
		return true;
	}
	if (w->length > ud_pmtu(qp)) {
		qp->eng->stats.ud_oversize++;
		qp->psn_next = droce_psn_add(qp->psn_next, 1);
		droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
		return true;
	}
	tmpl_for(qp, w->ah);
	memset(&f, 0, sizeof(f));
	f.opcode = DROCE_OPC(DROCE_TRANSPORT_UD, w->opcode == DROCE_WR_SEND_WITH_IMM
							 ? DROCE_OP_SEND_ONLY_IMM
							 : DROCE_OP_SEND_ONLY);
	f.dqpn = w->remote_qpn & DROCE_PSN_MASK;
	f.psn = qp->psn_next;
	f.se = (w->flags & DROCE_WQE_SOLICITED) != 0;
	f.imm = w->imm;
	f.deth.qkey = (w->remote_qkey & QKEY_USE_QP) ? qp->attr.qkey : w->remote_qkey;
	f.deth.src_qp = qp->qpn;
	switch (unlikely(f.dqpn == DROCE_MCAST_QPN) ? send_group_lc(qp, w, &f)
						   : droce_xport_send_data_lc(qp, w, &f, 0, w->length, NULL)) {
	case DROCE_XPORT_TX_NOMBUF:
		return false;
	case DROCE_XPORT_TX_PROT:
		fail_head(qp, DROCE_ERR_LOC_PROT);
		return true;
	case DROCE_XPORT_TX_SENT:
		break;
	}
	qp->psn_next = droce_psn_add(qp->psn_next, 1);
	droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
	return true;
}

unsigned int
droce_ud_tx_lc(struct droce_qp *qp, unsigned int budget)
{
	return droce_xport_tx_each_lc(qp, budget, send_one);
}

/*
 * The sl of a UD receive's completion: RoCE frames carry no SL, and mlx5
 * reports its CQE's RoCE packet type there (bit 3: UDP, RoCE v2; bits 2..0:
 * the L3 header, 1 IPv6, 2 IPv4), which UCX's ud_verbs reads to know where
 * the destination address lies in the GRH area (UCX_UD_VERBS_ETH_DGID_CHECK;
 * rxe's 0 reads as IPv6, and IPv4 datagrams are then dropped by UCX).
 */
#define UD_SL_ROCE_V2 0x8u
#define UD_SL_IPV6 0x1u
#define UD_SL_IPV4 0x2u

void
droce_ud_rx_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct droce_bth *bth = droce_pkt_bth(p, frame);
	const struct droce_deth *deth;
	uint8_t grh[GRH_LEN];
	struct droce_cqe c;

	if ((p->opcode & 0xe0) != DROCE_TRANSPORT_UD || !(p->info->flags & DROCE_OPF_REQ)) {
		qp->eng->stats.xport_drops++;
		goto out;
	}
	if (qp->state != DROCE_QPS_RTR && qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD)
		goto out;
	deth = droce_pkt_hdr(p, frame, DROCE_HDR_DETH);
	if (droce_deth_qkey(deth) != qp->attr.qkey) {
		qp->eng->stats.qkey_drops++;
		goto out;
	}
	if (!droce_qp_rq_ready_lc(qp)) {
		qp->eng->stats.rq_empty_drops++; /* UD has no RNR: the datagram is lost */
		goto out;
	}
	memset(&c, 0, sizeof(c));
	c.opcode = DROCE_WC_RECV;
	c.src_qp = droce_deth_sqp(deth);
	c.sl = UD_SL_ROCE_V2 | (p->ipv6 ? UD_SL_IPV6 : UD_SL_IPV4);
	memset(grh, 0, sizeof(grh));
	if (p->ipv6)
		memcpy(grh, frame + p->l3_off, GRH_LEN);
	else
		memcpy(grh + GRH_LEN - sizeof(struct rte_ipv4_hdr), frame + p->l3_off,
		       sizeof(struct rte_ipv4_hdr));
	if (!droce_xport_recv_place_lc(qp, &c,
				       (const struct droce_xport_piece[]){
					       { grh, GRH_LEN },
					       { p->payload, p->payload_len } },
				       2))
		goto out; /* completed in error */
	c.wc_flags = DROCE_WC_F_GRH;
	if (p->info->flags & DROCE_OPF_IMM) {
		c.wc_flags |= DROCE_WC_F_WITH_IMM;
		c.imm_or_inv = droce_immdt_imm(droce_pkt_hdr(p, frame, DROCE_HDR_IMMDT));
	}
	droce_qp_complete_recv_lc(qp, &c, droce_bth_se(bth));
out:
	droce_engine_rx_free_lc(qp->eng, m);
}
