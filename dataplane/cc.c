/* SPDX-License-Identifier: BSD-3-Clause
 * Congestion notification on the wire (issue 25 section 1), engine side.
 *
 * Notification point, as ConnectX's: a RoCEv2 frame that arrives with ECN
 * = CE (a switch queue marked it) is counted (ecn_ce_received per QP, port
 * and engine) and, unless its QP sent a CNP less than min_time_between_cnps
 * ago, answered at once with a Congestion Notification Packet to the QP it
 * came from: BTH opcode 0x81 (IBTA Annex A17 RoCEv2 CNP), BECN set, DestQP
 * the sender's QP (a connected QP's dest_qp_num; a UD datagram's DETH
 * source QP), PSN 0, 16 reserved bytes, ICRC over the frame with the
 * traffic class masked as for any RoCEv2 frame; IP DSCP cnp_dscp (48) with
 * Not-ECT, VLAN priority cnp_802p_prio (6).  Within the interval CE marks
 * are only counted (ConnectX drops them; the paper's NP would send one at
 * the interval's end).  No CNP answers a CNP, a group datagram or a MAD.
 *
 * A CNP received for a QP is counted (cnp_received) and handed to the
 * reaction point (dcqcn.c) when `[dcqcn] rp_enable` is on.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "cc.h"
#include "dp.h"
#include "pmd_glue/port.h"

struct droce_cc_params droce_cc;

#define DROCE_CC_BURST 32

void
droce_cc_config(const struct droce_dcqcn_config *c, uint64_t tsc_hz)
{
	struct droce_dcqcn_rp_config rp = c->rp;

	droce_cc.np_on = c->np_enable != 0;
	droce_cc.rp_on = c->rp_enable != 0;
	droce_cc.cnp_tos = (uint8_t)((c->cnp_dscp & 0x3f) << 2 | DROCE_ECN_NOT_ECT);
	droce_cc.cnp_pcp = (uint8_t)(c->cnp_802p_prio & 7);
	droce_cc.cnp_gap = tsc_hz / 1000000 * c->min_time_between_cnps;
	droce_cc.tsc_hz = tsc_hz;
	droce_dcqcn_defaults(c->algorithm, &rp);
	for (unsigned int i = 0; i < droce_port_count() && i < DROCE_MAX_PORTS; i++) {
		const struct droce_port *p = droce_port_get(i);
		/* the port's speed (Mb/s; a PMD that reports none counts as 100 Gb/s) */
		uint64_t line = p != NULL && p->link_speed != 0 ? p->link_speed : 100000;

		droce_dcqcn_params_init(&droce_cc.rp[i], c->algorithm, &rp, line, tsc_hz / 1000000);
	}
}

size_t
droce_cc_build_cnp(const struct droce_qp *qp, const uint8_t *frame, const struct droce_pkt *p,
		   uint32_t dqpn, uint8_t *buf, size_t cap)
{
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)frame;
	struct droce_pkt_fields f;
	struct droce_hdr_tmpl t;
	struct droce_path path;

	memset(&path, 0, sizeof(path));
	path.src_mac = qp->port->mac;
	path.dst_mac = eth->src_addr;
	path.vlan = qp->port->vlan != 0;
	path.vlan_id = qp->port->vlan;
	path.vlan_pcp = droce_cc.cnp_pcp;
	path.ipv6 = p->ipv6;
	memcpy(path.src_gid, p->dst_gid, 16);
	memcpy(path.dst_gid, p->src_gid, 16);
	path.traffic_class = droce_cc.cnp_tos;
	/* the QP's own flow (its ECMP path); a UD QP answers on the datagram's */
	path.udp_sport = qp->type == DROCE_QPT_UD || qp->attr.path.udp_sport == 0 ?
				 p->udp_sport : qp->attr.path.udp_sport;
	droce_tmpl_init(&t, &path);
	memset(&f, 0, sizeof(f));
	f.opcode = DROCE_OP_CNP;
	f.becn = true;
	f.pkey = 0xffff;
	f.dqpn = dqpn;
	f.psn = 0;
	return droce_build_frame(&t, buf, cap, &f, NULL, 0);
}

/* The QP a CE-marked frame on @qp came from (false: none to notify). */
static bool
cnp_dest(const struct droce_qp *qp, const uint8_t *frame, const struct droce_pkt *p,
	 uint32_t *dqpn)
{
	if (qp->qpn == DROCE_DP_GSI_QPN || droce_gid_is_mcast(p->dst_gid))
		return false;
	switch (qp->type) {
	case DROCE_QPT_RC:
	case DROCE_QPT_UC:
		*dqpn = qp->attr.dest_qpn;
		return true;
	case DROCE_QPT_UD:
		if (!droce_opcode_has(p->opcode, DROCE_HDR_DETH))
			return false;
		*dqpn = droce_deth_sqp(droce_pkt_hdr(p, frame, DROCE_HDR_DETH));
		return true;
	default:
		return false;
	}
}

static void
send_cnp_lc(struct droce_engine *eng, struct droce_qp *qp, const uint8_t *frame,
	    const struct droce_pkt *p, uint32_t dqpn)
{
	struct rte_mbuf *m = droce_engine_mbuf_lc(eng, qp->port->mp);
	size_t len;

	if (m == NULL) {
		eng->stats.alloc_fail++;
		return;
	}
	len = droce_cc_build_cnp(qp, frame, p, dqpn, rte_pktmbuf_mtod(m, uint8_t *),
				 rte_pktmbuf_tailroom(m));
	if (len == 0) {
		rte_pktmbuf_free(m);
		eng->stats.alloc_fail++;
		return;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	qp->stats.cnp_sent++;
	eng->stats.cnp_sent++;
	qp->port->qstats[eng->queue].cnp_sent++;
	droce_engine_tx_lc(eng, qp->port_index, m);
}

bool
droce_cc_rx_lc(struct droce_engine *eng, struct droce_qp *qp, struct rte_mbuf *m,
	       const uint8_t *frame, const struct droce_pkt *p)
{
	uint32_t dqpn;

	if (p->opcode == DROCE_OP_CNP) {
		/* the ECN bits of a CNP are not looked at: no CNP answers a CNP */
		qp->stats.cnp_received++;
		eng->stats.cnp_received++;
		qp->port->qstats[eng->queue].cnp_received++;
		if (droce_cc.rp_on && qp->type != DROCE_QPT_RAW_PACKET)
			droce_cc_rp_cnp_lc(eng, qp);
		droce_engine_rx_free_lc(eng, m);
		return true;
	}
	qp->stats.ecn_ce_received++;
	eng->stats.ecn_ce_received++;
	qp->port->qstats[eng->queue].ecn_ce_received++;
	if (!droce_cc.np_on || !cnp_dest(qp, frame, p, &dqpn))
		return false;
	if (qp->cnp_last != 0 && eng->now - qp->cnp_last < droce_cc.cnp_gap) {
		eng->stats.cnp_coalesced++;
		return false;
	}
	qp->cnp_last = eng->now;
	send_cnp_lc(eng, qp, frame, p, dqpn);
	return false;
}

/* ---- reaction point: DCQCN (dcqcn.c) on the TSC, and the pacer ---- */

/* The bytes of a full frame of @qp: its path MTU's payload and headers. */
static uint64_t
pkt_bytes(const struct droce_qp *qp)
{
	uint64_t mtu = qp->port->mtu;

	if (qp->type != DROCE_QPT_UD && qp->attr.pmtu != 0 && qp->attr.pmtu < mtu)
		mtu = qp->attr.pmtu + 48; /* IPv4, UDP, BTH, RETH */
	return mtu + RTE_ETHER_HDR_LEN + 4;
}

/* The pacer's figures for the rate DCQCN has now. */
static void
rate_update(struct droce_cc_qp *c, const struct droce_dcqcn_params *p, const struct droce_qp *qp)
{
	bool up;

	c->limited = droce_dcqcn_limited(&c->s, p);
	if (c->s.rc == c->rc_seen)
		return;
	up = c->s.rc > c->rc_seen;
	c->rc_seen = c->s.rc;
	/* cycles per byte = 8 hz / (rc kb/s x 1000) */
	c->cpb_q16 = ((8 * droce_cc.tsc_hz) << 16) / (c->s.rc * 1000);
	c->pkt_cycles = pkt_bytes(qp) * c->cpb_q16 >> 16;
	if (c->pkt_cycles == 0)
		c->pkt_cycles = 1;
	if (up && c->last_bytes != 0) {
		/* a faster rate: the last turn's bytes take less time */
		uint64_t t = c->last_at + (c->last_bytes * c->cpb_q16 >> 16);

		if (t < c->next_tx)
			c->next_tx = t;
	}
}

void
droce_cc_rp_cnp_lc(struct droce_engine *eng, struct droce_qp *qp)
{
	const struct droce_dcqcn_params *p = &droce_cc.rp[qp->port_index];
	struct droce_cc_qp *c = qp->cc;

	if (c == NULL) {
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			eng->stats.alloc_fail++;
			return;
		}
		droce_dcqcn_init(&c->s, p);
		c->next_tx = eng->now;
		qp->cc = c; /* (telemetry reads it: written once, freed with the QP) */
	}
	droce_dcqcn_cnp(&c->s, p, eng->now);
	rate_update(c, p, qp);
}

void
droce_cc_qp_reset_lc(struct droce_qp *qp)
{
	struct droce_cc_qp *c = qp->cc;

	if (c == NULL)
		return;
	droce_dcqcn_init(&c->s, &droce_cc.rp[qp->port_index]);
	c->next_tx = 0;
	c->rc_seen = 0;
	c->last_at = c->last_bytes = 0;
	c->limited = false;
}

unsigned int
droce_cc_pace_begin_lc(struct droce_engine *eng, struct droce_qp *qp, unsigned int budget,
		       struct droce_cc_mark *mk)
{
	const struct droce_dcqcn_params *p = &droce_cc.rp[qp->port_index];
	struct droce_cc_qp *c = qp->cc;
	uint64_t now = eng->now, burst, n;

	droce_dcqcn_advance(&c->s, p, now);
	rate_update(c, p, qp);
	mk->paced = c->limited;
	if (!c->limited)
		return budget;
	if (now < c->next_tx) {
		/* its turn is not due; an ACK owed to the peer is not paced */
		if (qp->type == DROCE_QPT_RC && qp->ack_pending)
			droce_rc_ack_now_lc(qp);
		mk->paced = false;
		return 0;
	}
	/* time its engine did not run (a wheel slot late, descheduled) gives
	 * credit for DROCE_CC_BURST full frames at most: the rate holds on a
	 * crowded machine, a burst stays bounded.  On a dilated clock
	 * (clock.h) that lateness is as many times shorter: so is the credit */
	burst = DROCE_CC_BURST * c->pkt_cycles;
	if (unlikely(droce_clock.div > 1))
		burst = burst / droce_clock.div > c->pkt_cycles ? burst / droce_clock.div : c->pkt_cycles;
	if (now - c->next_tx > burst)
		c->next_tx = now - burst;
	n = 1 + (now - c->next_tx) / c->pkt_cycles;
	mk->ntx = eng->ntx[qp->port_index];
	mk->pkts = qp->stats.tx_pkts;
	return n < budget ? (unsigned int)n : budget;
}

void
droce_cc_pace_end_lc(struct droce_engine *eng, struct droce_qp *qp, const struct droce_cc_mark *mk)
{
	const struct droce_dcqcn_params *p = &droce_cc.rp[qp->port_index];
	struct droce_cc_qp *c = qp->cc;
	uint16_t ntx = eng->ntx[qp->port_index];
	uint64_t bytes = 0;

	if (!mk->paced)
		return;
	if (ntx >= mk->ntx && (uint64_t)(ntx - mk->ntx) >= qp->stats.tx_pkts - mk->pkts) {
		/* what this turn queued: the frames at the end of the port's waiting room */
		for (uint16_t i = mk->ntx; i < ntx; i++)
			bytes += rte_pktmbuf_pkt_len(eng->txq[qp->port_index][i]);
	} else {
		/* the waiting room was flushed meanwhile: full frames assumed */
		bytes = (qp->stats.tx_pkts - mk->pkts) * pkt_bytes(qp);
	}
	if (bytes == 0)
		return;
	c->last_at = c->next_tx; /* the turn sent from there (credit included) */
	c->last_bytes = bytes;
	c->next_tx += bytes * c->cpb_q16 >> 16;
	droce_dcqcn_sent(&c->s, p, bytes, eng->now);
	rate_update(c, p, qp);
}
