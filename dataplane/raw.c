/* SPDX-License-Identifier: BSD-3-Clause
 * RAW_PACKET QPs, engine side.  A send WQE is one Ethernet frame (IBV_WR_SEND:
 * the gather list is the frame) or a TCP/IPv4 stream cut into frames
 * (IBV_WR_TSO: the header the WR carries, then mss bytes of the gather list
 * per frame).  The frame is gathered into an mbuf chain from the port's pool;
 * TSO is DPDK's GSO library (rte_gso_segment: IP ids, lengths, sequence
 * numbers, FIN/PSH only on the last segment), and the checksums are DPDK's
 * software ones (rte_ipv4_cksum, rte_ipv4/ipv6_udptcp_cksum_mbuf) - unless
 * the port offers the offloads (DROCE_PORT_OFFLOAD_TX_*: net_tap does; the
 * ring pair, memif, af_packet, af_xdp do not): then the frame goes to the PMD
 * with its rte_mbuf offload flags, through rte_eth_tx_prepare.
 *
 * Receive: flow.c steers a frame here; it is copied whole into the receive
 * WQE (byte_len = frame length) and IBV_WC_IP_CSUM_OK is set only when the
 * IPv4 header checksum and the TCP/UDP checksum were verified (the PMD's
 * verdict, else in software).
 */
#include <netinet/in.h>
#include <string.h>

#include <rte_ethdev.h> /* RTE_ETH_TX_OFFLOAD_TCP_TSO, GSO's type names */
#include <rte_gso.h>
#include <rte_ip.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "errors.h"
#include "internal.h"
#include "qp_internal.h"
#include "raw.h"
#include "xport.h"
#include "xport_rx.h"

/* The oldest WQE fails with @err; the QP goes where the error table says. */
static void
fail_head(struct droce_qp *qp, enum droce_err err)
{
	droce_qp_fail_send_lc(qp, err);
}

uint32_t
droce_raw_max_frame(unsigned int port)
{
	struct droce_port *p = droce_port_get(port);

	/* the MTU's IP packet behind an Ethernet header and one 802.1Q tag */
	return p != NULL ? (uint32_t)p->mtu + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN : 0;
}

void
droce_raw_parse(const uint8_t *b, uint32_t len, struct droce_raw_hdrs *h)
{
	uint32_t off = RTE_ETHER_HDR_LEN;
	uint16_t et;

	memset(h, 0, sizeof(*h));
	if (len < RTE_ETHER_HDR_LEN)
		return;
	et = (uint16_t)(b[12] << 8 | b[13]);
	if (et == RTE_ETHER_TYPE_VLAN && len >= off + RTE_VLAN_HLEN) {
		h->vlan = true;
		h->tci = (uint16_t)(b[14] << 8 | b[15]);
		et = (uint16_t)(b[16] << 8 | b[17]);
		off += RTE_VLAN_HLEN;
	}
	h->ether_type = et;
	h->l3_off = (uint16_t)off;
	if (et == RTE_ETHER_TYPE_IPV4 && len >= off + sizeof(struct rte_ipv4_hdr)) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(b + off);
		uint32_t ihl = (ip->version_ihl & 0xfu) * 4u;

		if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) || len < off + ihl)
			return;
		h->ipv4 = true;
		h->ip_proto = ip->next_proto_id;
		/* a fragment other than a whole datagram: no L4 header to speak of */
		if (rte_be_to_cpu_16(ip->fragment_offset) &
		    (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
			return;
		off += ihl;
	} else if (et == RTE_ETHER_TYPE_IPV6 && len >= off + sizeof(struct rte_ipv6_hdr)) {
		h->ipv6 = true;
		h->ip_proto = ((const struct rte_ipv6_hdr *)(b + off))->proto;
		off += sizeof(struct rte_ipv6_hdr);
	} else {
		return;
	}
	if (h->ip_proto == IPPROTO_TCP && len >= off + sizeof(struct rte_tcp_hdr)) {
		uint32_t tl = (uint32_t)(b[off + 12] >> 4) * 4u;

		if (tl < sizeof(struct rte_tcp_hdr) || len < off + tl)
			return;
		h->l4 = IPPROTO_TCP;
		h->l4_len = (uint16_t)tl;
	} else if (h->ip_proto == IPPROTO_UDP && len >= off + sizeof(struct rte_udp_hdr)) {
		h->l4 = IPPROTO_UDP;
		h->l4_len = sizeof(struct rte_udp_hdr);
	} else {
		return;
	}
	h->l4_off = (uint16_t)off;
}

/* True when the IP lengths of the parsed frame lie inside its @len bytes, so
 * the checksum functions (which trust them) stay inside the frame. */
static bool
lengths_ok(const uint8_t *b, uint32_t len, const struct droce_raw_hdrs *h)
{
	if (h->ipv4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(b + h->l3_off);
		uint32_t tot = rte_be_to_cpu_16(ip->total_length);

		return tot >= (uint32_t)(h->l4_off - h->l3_off) + h->l4_len &&
		       h->l3_off + tot <= len;
	}
	if (h->ipv6) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(b + h->l3_off);
		uint32_t pl = rte_be_to_cpu_16(ip->payload_len);

		return pl >= h->l4_len && h->l4_off + pl <= len;
	}
	return false;
}

/* Fills the IPv4 header checksum and the TCP / UDP checksum of @m (headers
 * in its first segment; the payload may be chained). */
static void
fill_csums(struct rte_mbuf *m, const struct droce_raw_hdrs *h)
{
	uint8_t *b = rte_pktmbuf_mtod(m, uint8_t *);
	rte_be16_t *ck = NULL;
	uint16_t c;

	if (h->ipv4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(b + h->l3_off);

		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	if (h->l4 == 0 || !lengths_ok(b, rte_pktmbuf_pkt_len(m), h))
		return;
	if (h->l4 == IPPROTO_TCP)
		ck = &((struct rte_tcp_hdr *)(b + h->l4_off))->cksum;
	else
		ck = &((struct rte_udp_hdr *)(b + h->l4_off))->dgram_cksum;
	*ck = 0;
	if (h->ipv4)
		c = rte_ipv4_udptcp_cksum_mbuf(m, (const struct rte_ipv4_hdr *)(b + h->l3_off),
					       h->l4_off);
	else
		c = rte_ipv6_udptcp_cksum_mbuf(m, (const struct rte_ipv6_hdr *)(b + h->l3_off),
					       h->l4_off);
	*ck = c;
}

/*
 * An mbuf chain: @hdr_sz bytes of @hdr, then @len bytes of @w's gather list
 * from offset @goff.  NULL when the pool ran dry (*prot false: try again) or
 * an SGE failed its memory check (*prot true).
 */
static struct rte_mbuf *
build_chain(struct droce_qp *qp, const struct droce_wqe *w, const uint8_t *hdr, uint32_t hdr_sz,
	    uint32_t goff, uint32_t len, bool *prot)
{
	struct rte_mempool *mp = qp->port->mp;
	struct rte_mbuf *head = rte_pktmbuf_alloc(mp), *tail;
	uint32_t done = 0;

	*prot = false;
	if (head == NULL)
		goto nomem;
	if (hdr_sz > 0) {
		uint8_t *dst = (uint8_t *)rte_pktmbuf_append(head, (uint16_t)hdr_sz);

		if (dst == NULL)
			goto nomem;
		memcpy(dst, hdr, hdr_sz);
	}
	tail = head;
	while (done < len) {
		uint32_t room = rte_pktmbuf_tailroom(tail), k;
		uint8_t *dst;

		if (room == 0) {
			struct rte_mbuf *n = rte_pktmbuf_alloc(mp);

			if (n == NULL)
				goto nomem;
			tail->next = n;
			head->nb_segs++;
			tail = n;
			continue;
		}
		k = RTE_MIN(room, len - done);
		dst = rte_pktmbuf_mtod_offset(tail, uint8_t *, tail->data_len);
		if (!droce_xport_gather_lc(qp, w, goff + done, dst, k)) {
			*prot = true;
			rte_pktmbuf_free(head);
			return NULL;
		}
		tail->data_len = (uint16_t)(tail->data_len + k);
		head->pkt_len += k;
		done += k;
	}
	return head;
nomem:
	qp->eng->stats.alloc_fail++;
	rte_pktmbuf_free(head);
	return NULL;
}

/*
 * Asks the port to fill @m's checksums (and, with @mss, to cut it into TCP
 * segments): true when it has the offloads for this frame and the PMD
 * accepted it, false (flags cleared) when software has to do it.
 */
static bool
hw_offload(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_raw_hdrs *h, uint16_t mss)
{
	uint32_t o = qp->port->offloads;
	uint64_t f;

	if (h->l4 == 0 || (h->ipv4 && !(o & DROCE_PORT_OFFLOAD_TX_IPV4_CSUM)) ||
	    !(o & (h->l4 == IPPROTO_TCP ? DROCE_PORT_OFFLOAD_TX_TCP_CSUM
					: DROCE_PORT_OFFLOAD_TX_UDP_CSUM)) ||
	    (mss && !(o & DROCE_PORT_OFFLOAD_TX_TSO)) ||
	    (m->nb_segs > 1 && !(o & DROCE_PORT_OFFLOAD_TX_MULTI_SEG)))
		return false;
	f = h->ipv4 ? RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM : RTE_MBUF_F_TX_IPV6;
	f |= h->l4 == IPPROTO_TCP ? RTE_MBUF_F_TX_TCP_CKSUM : RTE_MBUF_F_TX_UDP_CKSUM;
	if (mss) {
		/* a whole segment must fit in the IP MTU (net_tap's rule; the
		 * frame limit checked at post time allows 18 bytes more): else GSO */
		if ((uint32_t)h->l4_off + h->l4_len + mss > qp->port->mtu)
			return false;
		f |= RTE_MBUF_F_TX_TCP_SEG;
		m->tso_segsz = mss;
	}
	m->l2_len = h->l3_off;
	m->l3_len = (uint16_t)(h->l4_off - h->l3_off);
	m->l4_len = h->l4_len;
	m->ol_flags = (m->ol_flags & ~RTE_MBUF_F_TX_OFFLOAD_MASK) | f;
	if (droce_port_tx_prepare(qp->port, qp->eng->queue, m) == 0)
		return true;
	m->ol_flags &= ~RTE_MBUF_F_TX_OFFLOAD_MASK;
	return false;
}

/*
 * A multicast or broadcast frame goes to the wire and, as on mlx5 (whose
 * RAW_PACKET QPs loop such frames back to the port's own steering), to this
 * port's flows too: a copy, delivered as received on the port through the
 * loopback's entry point (receive impairment, capture, counters, then the
 * rules).  Only while the port has rules: without one, nothing on the port
 * would take it.  A frame the port is to cut (TSO offload) is not copied;
 * checksums the port was to fill are filled in the copy.  Frames to the
 * port's own MAC are turned around by the port itself (loop_tx: a RAW QP in
 * INIT turned the port's loop on).
 */
static void
loop_group_frame(struct droce_qp *qp, const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	struct rte_mbuf *c;

	if (likely(!rte_is_multicast_ether_addr(&eth->dst_addr)) ||
	    !droce_flow_active(qp->port_index) || (m->ol_flags & RTE_MBUF_F_TX_TCP_SEG))
		return;
	c = rte_pktmbuf_copy(m, qp->port->mp, 0, UINT32_MAX);
	if (c == NULL) {
		qp->eng->stats.alloc_fail++;
		return;
	}
	if (c->ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK) {
		struct droce_raw_hdrs h;

		if (c->nb_segs > 1 && rte_pktmbuf_linearize(c) != 0) {
			rte_pktmbuf_free(c);
			return;
		}
		droce_raw_parse(rte_pktmbuf_mtod(c, const uint8_t *), rte_pktmbuf_data_len(c), &h);
		c->ol_flags &= ~RTE_MBUF_F_TX_OFFLOAD_MASK;
		fill_csums(c, &h);
	}
	if (droce_port_loop_deliver_lc(qp->port, qp->eng->queue, &c, 1) != 1) {
		qp->eng->stats.tx_drops++; /* the inlet is full: as a full PMD */
		rte_pktmbuf_free(c);
		return;
	}
	qp->port->qstats[qp->eng->queue].loop_tx++;
}

/* Queues one frame on the QP's port, flat when the port sends no chains. */
static void
queue_frame(struct droce_qp *qp, struct rte_mbuf *m)
{
	if (m->nb_segs > 1 && !(qp->port->offloads & DROCE_PORT_OFFLOAD_TX_MULTI_SEG) &&
	    rte_pktmbuf_linearize(m) != 0) {
		qp->eng->stats.tx_drops++;
		rte_pktmbuf_free(m);
		return;
	}
	qp->stats.tx_pkts++;
	loop_group_frame(qp, m);
	droce_engine_tx_lc(qp->eng, qp->port_index, m);
}

/* IBV_WR_SEND: the gather list is one frame.  False: wait (no mbuf). */
static bool
send_frame(struct droce_qp *qp, const struct droce_wqe *w)
{
	struct droce_raw_hdrs h;
	struct rte_mbuf *m;
	bool prot;

	if (w->length < RTE_ETHER_HDR_LEN || w->length > droce_raw_max_frame(qp->port_index)) {
		fail_head(qp, DROCE_ERR_SEND_LEN);
		return true;
	}
	m = build_chain(qp, w, NULL, 0, 0, w->length, &prot);
	if (m == NULL) {
		if (!prot)
			return false;
		fail_head(qp, DROCE_ERR_LOC_PROT);
		return true;
	}
	if (w->flags & DROCE_WQE_IP_CSUM) {
		droce_raw_parse(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), &h);
		if (!hw_offload(qp, m, &h, 0))
			fill_csums(m, &h);
	}
	queue_frame(qp, m);
	droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
	return true;
}

/* IBV_WR_TSO: header + payload cut into frames of hdr_sz + mss bytes. */
static bool
send_tso(struct droce_qp *qp, const struct droce_wqe *w)
{
	struct rte_mbuf *segs[DROCE_DP_MAX_TSO_SEGS];
	uint32_t hdr_sz = w->tso_hdr_sz, mss = w->tso_mss, nseg;
	struct droce_raw_hdrs h;
	struct rte_gso_ctx ctx;
	struct rte_ipv4_hdr *ip;
	struct rte_mbuf *m;
	/* the header after the WQE's data room (a const WQE: read only) */
	const uint8_t *hdr = droce_wqe_tso_hdr((struct droce_wqe *)(uintptr_t)w,
					       qp->caps.max_send_sge, qp->caps.max_inline_data);
	bool prot;
	int n;

	droce_raw_parse(hdr, hdr_sz, &h);
	/* DPDK 22.11's GSO cuts TCP over IPv4 only; the header is exactly L2-L4 */
	if (!h.ipv4 || h.l4 != IPPROTO_TCP || (uint32_t)h.l4_off + h.l4_len != hdr_sz ||
	    mss == 0) {
		fail_head(qp, DROCE_ERR_SEND_OP);
		return true;
	}
	nseg = w->length == 0 ? 1 : (w->length + mss - 1) / mss;
	if (nseg > DROCE_DP_MAX_TSO_SEGS || hdr_sz + mss > droce_raw_max_frame(qp->port_index)) {
		fail_head(qp, DROCE_ERR_SEND_LEN);
		return true;
	}
	if ((uint32_t)(DROCE_TXBUF - qp->eng->ntx[qp->port_index]) < nseg)
		return false; /* the port's waiting room first has to drain */
	m = build_chain(qp, w, hdr, hdr_sz, 0, w->length, &prot);
	if (m == NULL) {
		if (!prot)
			return false;
		fail_head(qp, DROCE_ERR_LOC_PROT);
		return true;
	}
	/* the lengths as one packet (GSO rewrites them per segment) */
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, h.l3_off);
	ip->total_length = rte_cpu_to_be_16((uint16_t)(rte_pktmbuf_pkt_len(m) - h.l3_off));
	if (w->length > mss && hw_offload(qp, m, &h, (uint16_t)mss)) {
		queue_frame(qp, m); /* the port cuts it (and fills every checksum) */
		droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
		return true;
	}
	m->l2_len = h.l3_off;
	m->l3_len = (uint16_t)(h.l4_off - h.l3_off);
	m->l4_len = h.l4_len;
	m->ol_flags = RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IPV4;
	memset(&ctx, 0, sizeof(ctx));
	ctx.direct_pool = qp->port->mp;
	ctx.indirect_pool = qp->port->mp;
	ctx.gso_types = RTE_ETH_TX_OFFLOAD_TCP_TSO;
	ctx.gso_size = (uint16_t)(hdr_sz + mss); /* flag 0: IP ids count up */
	n = rte_gso_segment(m, &ctx, segs, DROCE_DP_MAX_TSO_SEGS);
	if (n < 0) {
		rte_pktmbuf_free(m);
		if (n == -ENOMEM) {
			qp->eng->stats.alloc_fail++;
			return false;
		}
		fail_head(qp, DROCE_ERR_SEND_OP);
		return true;
	}
	if (n == 0) {
		segs[0] = m; /* fits in one segment: sent as it is */
		n = 1;
	} else {
		rte_pktmbuf_free(m); /* the segments hold its data by reference */
	}
	for (int i = 0; i < n; i++) {
		struct droce_raw_hdrs sh;

		droce_raw_parse(rte_pktmbuf_mtod(segs[i], const uint8_t *),
				rte_pktmbuf_data_len(segs[i]), &sh);
		segs[i]->ol_flags &= ~RTE_MBUF_F_TX_OFFLOAD_MASK;
		if (!hw_offload(qp, segs[i], &sh, 0))
			fill_csums(segs[i], &sh);
		queue_frame(qp, segs[i]);
	}
	droce_qp_complete_send_lc(qp, DROCE_WC_SUCCESS);
	return true;
}

/* Sends WQE @idx (the oldest); false when it has to wait for room. */
static bool
send_one(struct droce_qp *qp, uint32_t idx)
{
	const struct droce_wqe *w = droce_qp_wqe(qp, idx);

	if (w->opcode == DROCE_WR_SEND)
		return send_frame(qp, w);
	if (w->opcode == DROCE_WR_TSO)
		return send_tso(qp, w);
	fail_head(qp, DROCE_ERR_SEND_OP); /* verbs_api lets no other through */
	return true;
}

unsigned int
droce_raw_tx_lc(struct droce_qp *qp, unsigned int budget)
{
	return droce_xport_tx_each_lc(qp, budget, send_one);
}

/* The checksums of a received frame (flat) were verified good. */
static bool
csum_ok(const struct rte_mbuf *m)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);
	uint64_t ipf = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
	uint64_t l4f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	struct droce_raw_hdrs h;

	droce_raw_parse(b, len, &h);
	if (!h.ipv4 || h.l4 == 0 || !lengths_ok(b, len, &h))
		return false;
	if (ipf == RTE_MBUF_F_RX_IP_CKSUM_BAD || l4f == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return false;
	if (ipf == RTE_MBUF_F_RX_IP_CKSUM_GOOD && l4f == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return true; /* the PMD checked both */
	if (rte_raw_cksum(b + h.l3_off, (size_t)(h.l4_off - h.l3_off)) != 0xffff)
		return false;
	if (h.l4 == IPPROTO_UDP && ((const struct rte_udp_hdr *)(b + h.l4_off))->dgram_cksum == 0)
		return false; /* no UDP checksum: nothing was verified */
	return rte_ipv4_udptcp_cksum_verify((const struct rte_ipv4_hdr *)(b + h.l3_off),
					    b + h.l4_off) == 0;
}

void
droce_raw_rx_lc(struct droce_qp *qp, struct rte_mbuf *m)
{
	struct droce_cqe c;
	uint32_t len;

	if (qp->state != DROCE_QPS_RTR && qp->state != DROCE_QPS_RTS &&
	    qp->state != DROCE_QPS_SQD) {
		qp->eng->stats.qp_state_drops++;
		goto out;
	}
	if (m->nb_segs != 1 && rte_pktmbuf_linearize(m) != 0) {
		qp->eng->stats.drops[DROCE_DROP_RUNT]++;
		goto out;
	}
	if (!droce_qp_rq_ready_lc(qp)) {
		qp->eng->stats.rq_empty_drops++; /* dropped, as a NIC with no receive WQE does */
		goto out;
	}
	qp->stats.rx_pkts++;
	len = rte_pktmbuf_data_len(m);
	memset(&c, 0, sizeof(c));
	c.opcode = DROCE_WC_RECV;
	if (!droce_xport_recv_place_lc(
		    qp, &c,
		    (const struct droce_xport_piece[]){ { rte_pktmbuf_mtod(m, const uint8_t *), len } }, 1))
		goto out; /* completed in error */
	if (csum_ok(m))
		c.wc_flags = DROCE_WC_F_IP_CSUM_OK;
	droce_qp_complete_recv_lc(qp, &c, false);
out:
	rte_pktmbuf_free(m);
}
