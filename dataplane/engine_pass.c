/* SPDX-License-Identifier: BSD-3-Clause
 * One pass of the engine loop (phase 1, the channels, is engine_chan.c's):
 *   2. receive: rx bursts from the engine's queue of every port, RAW_PACKET
 *      flow rules, the RoCE parse and dispatch to the QP's transport, frames
 *      handed to and from other engines (one SPSC ring per engine pair, with
 *      the parse result), the bulk free of received frames;
 *   3-4. work: the QPs whose timers are due join the active list
 *      (engine_sched.c), then the active QPs' transmit functions and timers, each within
 *      what its port's waiting room allows;
 *   5. flush: the waiting frames to the PMDs.
 * In one file so the phases inline into the pass.
 */
#include <stddef.h>
#include <string.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_prefetch.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "cc.h"
#include "engine_internal.h"
#include "internal.h"
#include "pmd_glue/port.h"
#include "raw.h"

/* The offset of a handed-over frame's struct droce_pkt_meta in its mbuf (-1: none). */
static int pkt_meta_off = -1;

void
droce_engine_rx_init(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "droce_pkt_meta",
		.size = sizeof(struct droce_pkt_meta),
		.align = __alignof__(struct droce_pkt_meta),
	};

	/* the same offset on every start of the process: the registry keeps it */
	pkt_meta_off = rte_mbuf_dynfield_register(&desc);
	if (pkt_meta_off < 0)
		DP_LOG(WARNING, "no mbuf field for the parse result: handed-over frames are parsed again");
}

/* Sends what this pass gathered for engine @to in one burst; what its ring
 * cannot take is dropped (counted as tx_drops, like a full wire). */
static void
xfer_flush_lc(struct droce_engine *eng, unsigned int to)
{
	unsigned int n = eng->nxfer_out[to];
	unsigned int k = rte_ring_sp_enqueue_burst(droce_engines.eng[to]->xfer_in[eng->id],
						   (void **)eng->xfer_out[to], n, NULL);

	eng->stats.forwarded += k;
	if (unlikely(k < n)) {
		eng->stats.tx_drops += n - k;
		rte_pktmbuf_free_bulk(&eng->xfer_out[to][k], n - k);
	}
	eng->nxfer_out[to] = 0;
}

static void
xfer_flush_all_lc(struct droce_engine *eng)
{
	while (eng->xfer_pending != 0) {
		unsigned int to = (unsigned int)__builtin_ctzll(eng->xfer_pending);

		eng->xfer_pending &= eng->xfer_pending - 1;
		xfer_flush_lc(eng, to);
	}
}

/* Passes @m to engine @owner (in this pass's burst for it); @tag is what
 * m->port carries there (a port index, with DROCE_XFER_RAW for a RAW_PACKET QP). */
static void
hand_over_lc(struct droce_engine *eng, unsigned int owner, uint16_t tag, struct rte_mbuf *m)
{
	m->port = tag;
	if (unlikely(eng->nxfer_out[owner] == DROCE_BURST))
		xfer_flush_lc(eng, owner);
	eng->xfer_out[owner][eng->nxfer_out[owner]++] = m;
	eng->xfer_pending |= 1ull << owner;
}

void
droce_engine_raw_deliver_lc(struct droce_engine *eng, struct droce_port *port, uint32_t qpn,
			    struct rte_mbuf *m)
{
	unsigned int owner = droce_qpn_engine(qpn);
	struct droce_qp *qp;

	if (owner != eng->id && owner < droce_engines.n) {
		m->hash.usr = qpn;
		hand_over_lc(eng, owner, (uint16_t)(port->index | DROCE_XFER_RAW), m);
		return;
	}
	qp = droce_engine_qp_lookup_lc(eng, qpn);
	if (qp == NULL || qp->type != DROCE_QPT_RAW_PACKET || qp->port != port) {
		eng->stats.no_qp++; /* its rule went while the frame travelled */
		rte_pktmbuf_free(m);
		return;
	}
	droce_raw_rx_lc(qp, m);
}

/*
 * A RoCE frame parsed and checked (here, or by the engine that handed it
 * over with its parse result): another engine's QP gets it through the xfer
 * ring with @p packed beside it; else QP lookup, P_Key and state checks and
 * the QP's transport.
 */
/* The states in which a QP receives nothing (IBTA 10.3.1), one bit each. */
#define QPS_RX_DEAD (1u << DROCE_QPS_RESET | 1u << DROCE_QPS_INIT | 1u << DROCE_QPS_ERR)

/* @m for @qp (found by its QPN on this engine): the port, P_Key and state
 * checks, then the QP's transport. */
static __rte_always_inline void
deliver_qp_lc(struct droce_engine *eng, struct droce_port *port, struct droce_qp *qp,
	      struct rte_mbuf *m, const uint8_t *frame, const struct droce_pkt *p)
{
	if (qp == NULL || qp->port != port) {
		eng->stats.no_qp++;
		rte_pktmbuf_free(m);
		return;
	}
	if (!droce_pkey_match(droce_bth_pkey(droce_pkt_bth(p, frame)),
			      droce_pkey_at(qp->attr.pkey_index))) {
		/* IBTA 9.6.1.1 / 10.9.3: a P_Key mismatch drops the packet (counted) */
		eng->stats.drops[DROCE_DROP_PKEY]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (unlikely((QPS_RX_DEAD >> qp->state) & 1u)) {
		/* IBTA 10.3.1: a QP in these states receives nothing */
		eng->stats.qp_state_drops++;
		rte_pktmbuf_free(m);
		return;
	}
	eng->stats.rx_pkts++;
	qp->stats.rx_pkts++;
	/* a CNP, or a frame a switch marked CE (cc.c) */
	if (unlikely(droce_cc_rx_needed(p)) && droce_cc_rx_lc(eng, qp, m, frame, p))
		return;
	if (likely(qp->type == DROCE_QPT_RC))
		droce_rc_rx_lc(qp, m, p);
	else if (qp->type == DROCE_QPT_UC)
		droce_uc_rx_lc(qp, m, p);
	else if (qp->type == DROCE_QPT_UD)
		droce_ud_rx_lc(qp, m, p);
	else
		rte_pktmbuf_free(m);
	droce_qp_overrun_check_lc(qp);
}

/*
 * A datagram to QPN 0xFFFFFF (checked and parsed as @p): one copy to every
 * QP of this engine attached to its destination group on @port, and, when
 * it came from the wire (!@handed), one copy to each other engine with
 * members, which delivers to its own (tagged DROCE_XFER_MCAST, the parse
 * result beside it).  The last consumer gets @m itself.
 */
static void
mcast_rx_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m,
	    const struct droce_pkt *p, bool handed)
{
	const struct droce_mcast_tab *t =
		atomic_load_explicit(&droce_mcast_tab[port->index], memory_order_acquire);
	uint32_t mine[DROCE_MCAST_MAX_QP_ATTACH];
	unsigned int nmine = 0, i = 0;
	uint64_t others = 0;

	if (t != NULL) {
		while (i < t->n && memcmp(t->e[i].gid, p->dst_gid, 16) != 0)
			i++;
		for (; i < t->n && memcmp(t->e[i].gid, p->dst_gid, 16) == 0; i++) {
			if (t->e[i].engine == eng->id && nmine < DROCE_MCAST_MAX_QP_ATTACH)
				mine[nmine++] = t->e[i].qpn;
			else if (!handed && t->e[i].engine < droce_engines.n)
				others |= 1ull << t->e[i].engine;
		}
	}
	if (nmine == 0 && others == 0) {
		eng->stats.mcast_no_group++; /* nobody on the port joined it (or left) */
		rte_pktmbuf_free(m);
		return;
	}
	if (others != 0 && likely(pkt_meta_off >= 0))
		droce_pkt_pack(p, RTE_MBUF_DYNFIELD(m, pkt_meta_off, struct droce_pkt_meta *));
	while (others != 0) {
		unsigned int to = (unsigned int)__builtin_ctzll(others);
		struct rte_mbuf *c;

		others &= others - 1;
		c = others == 0 && nmine == 0 ? m : rte_pktmbuf_copy(m, port->mp, 0, UINT32_MAX);
		if (c == NULL) {
			eng->stats.alloc_fail++;
			continue;
		}
		hand_over_lc(eng, to, (uint16_t)(port->index | DROCE_XFER_MCAST), c);
	}
	for (unsigned int k = 0; k < nmine; k++) {
		struct rte_mbuf *c = k + 1 == nmine ? m : rte_pktmbuf_copy(m, port->mp, 0, UINT32_MAX);
		struct droce_pkt pc;
		const uint8_t *f;

		if (c == NULL) {
			eng->stats.alloc_fail++;
			continue;
		}
		/* the copy's own bytes: the payload pointer moves with them */
		f = rte_pktmbuf_mtod(c, const uint8_t *);
		pc = *p;
		pc.payload = f + pc.payload_off;
		eng->stats.mcast_rx++;
		deliver_qp_lc(eng, port, droce_engine_qp_lookup_lc(eng, mine[k]), c, f, &pc);
	}
}

static __rte_always_inline void
deliver_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m,
	   const uint8_t *frame, const struct droce_pkt *p)
{
	uint32_t qpn = droce_bth_qpn(droce_pkt_bth(p, frame));
	unsigned int owner = qpn == DROCE_DP_GSI_QPN ? 0 : droce_qpn_engine(qpn);
	struct droce_qp *qp;

	if (unlikely(qpn == DROCE_MCAST_QPN)) {
		if (m->nb_segs != 1) {
			/* a chained group datagram (UD never sends one): flat, parsed again */
			struct droce_pkt p2;

			if (rte_pktmbuf_linearize(m) != 0 ||
			    droce_parse_frame_c(rte_pktmbuf_mtod(m, const uint8_t *),
						rte_pktmbuf_data_len(m), &p2,
						&eng->icrc_rx) != DROCE_DROP_NONE) {
				eng->stats.drops[DROCE_DROP_RUNT]++;
				rte_pktmbuf_free(m);
				return;
			}
			mcast_rx_lc(eng, port, m, &p2, false);
			return;
		}
		mcast_rx_lc(eng, port, m, p, false);
		return;
	}
	if (owner != eng->id && owner < droce_engines.n) {
		/* another engine's QP: the frame goes over with what the parse found */
		if (likely(pkt_meta_off >= 0))
			droce_pkt_pack(p, RTE_MBUF_DYNFIELD(m, pkt_meta_off, struct droce_pkt_meta *));
		hand_over_lc(eng, owner, (uint16_t)port->index, m);
		return;
	}
	if (qpn == DROCE_DP_GSI_QPN) {
		qp = eng->gsi[port->index];
		if (qp != NULL) {
			/* the MAD's sender: its replies then need no ARP / ND */
			const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)frame;

			droce_port_neigh_learn(port, p->src_gid, &eth->src_addr);
		}
	} else {
		qp = droce_engine_qp_lookup_lc(eng, qpn);
	}
	deliver_qp_lc(eng, port, qp, m, frame, p);
}

/* A frame off the wire (or injected as received): parse and check it, then deliver it. */
static void
dispatch_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	struct droce_pkt p;
	enum droce_drop why;

	if (likely(m->nb_segs == 1)) {
		why = droce_parse_frame_c(frame, rte_pktmbuf_data_len(m), &p, &eng->icrc_rx);
	} else if (m->nb_segs == 3 &&
		   droce_parse_split(frame, m->data_len, rte_pktmbuf_mtod(m->next, const uint8_t *),
				     m->next->data_len,
				     rte_pktmbuf_mtod(m->next->next, const uint8_t *),
				     m->next->next->data_len, &p) == DROCE_DROP_NONE) {
		/* a zero-copy frame of an in-process peer (zcopy.c): the payload
		 * is read where it lies, in the sender's registered memory */
		why = DROCE_DROP_NONE;
	} else {
		/* any other chain is linearised for the flat parser */
		if (rte_pktmbuf_linearize(m) != 0) {
			eng->stats.drops[DROCE_DROP_RUNT]++;
			rte_pktmbuf_free(m);
			return;
		}
		frame = rte_pktmbuf_mtod(m, const uint8_t *);
		why = droce_parse_frame_c(frame, rte_pktmbuf_data_len(m), &p, &eng->icrc_rx);
	}
	if (why != DROCE_DROP_NONE) {
		/* not RoCE: ARP, IGMP / MLD queries for the port (an IGMP
		 * query carries the Router Alert option: an IPv4 header over
		 * 20 bytes, which no RoCE frame has) */
		if ((why == DROCE_DROP_ETHERTYPE || why == DROCE_DROP_NOT_UDP ||
		     why == DROCE_DROP_UDP_PORT || why == DROCE_DROP_IPV4_HDR) &&
		    droce_port_handle_frame(port, eng->queue, m)) {
			eng->stats.non_roce++;
			return;
		}
		eng->stats.drops[why]++;
		rte_pktmbuf_free(m);
		return;
	}
	deliver_lc(eng, port, m, frame, &p);
}

/* Flow rules first (RAW_PACKET QPs), then RoCE dispatch. */
static inline void
rx_one_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m, bool flows)
{
	if (unlikely(flows) && droce_flow_rx_lc(eng, port, m))
		return;
	dispatch_lc(eng, port, m);
}

void
droce_engine_rx_one_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m,
		       bool flows)
{
	rx_one_lc(eng, port, m, flows);
}

/* A frame another engine received for one of this engine's QPs. */
static inline void
xfer_one_lc(struct droce_engine *eng, struct rte_mbuf *m)
{
	uint16_t tag = m->port;
	struct droce_pkt p;

	if (unlikely(tag & DROCE_XFER_RAW)) {
		droce_engine_raw_deliver_lc(eng, eng->ports[tag & ~DROCE_XFER_RAW], m->hash.usr, m);
	} else if (unlikely(tag & DROCE_XFER_MCAST)) {
		/* a group datagram: this engine's members of the group */
		const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);

		if (likely(pkt_meta_off >= 0))
			droce_pkt_unpack(frame, RTE_MBUF_DYNFIELD(m, pkt_meta_off, struct droce_pkt_meta *),
					 &p);
		else if (droce_parse_frame_c(frame, rte_pktmbuf_data_len(m), &p, &eng->icrc_rx) !=
			 DROCE_DROP_NONE) {
			rte_pktmbuf_free(m);
			return;
		}
		mcast_rx_lc(eng, eng->ports[tag & ~DROCE_XFER_MCAST], m, &p, true);
	} else if (likely(pkt_meta_off >= 0 && m->nb_segs == 1)) {
		/* (a zero-copy chain is parsed again: its payload is not in the frame) */
		const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);

		droce_pkt_unpack(frame, RTE_MBUF_DYNFIELD(m, pkt_meta_off, struct droce_pkt_meta *), &p);
		deliver_lc(eng, eng->ports[tag], m, frame, &p);
	} else {
		dispatch_lc(eng, eng->ports[tag], m); /* no field to carry it: parse again */
	}
}

/* True when @port surely has nothing for this engine's queue: a ring pair's
 * port (in this process) whose receive ring is empty, whose link was never
 * impaired (an impaired link may release delayed frames with the ring empty)
 * and whose loop inlet, if a loop points at it, is empty.  A few loads
 * instead of the burst call through ethdev and the ring PMD; a frame
 * enqueued right after is taken by the next pass, as it would be after an
 * empty burst. */
static __rte_always_inline bool
rx_ring_empty(const struct droce_port *port, uint16_t queue)
{
	const struct rte_ring *r = port->rings[0][queue];

	/* empty: the producer's tail where the consumer's is (the indices run
	 * free; one consumer, this engine) */
	return r != NULL && !__atomic_load_n(&port->impair_used, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&r->prod.tail, __ATOMIC_RELAXED) == r->cons.tail &&
	       (!__atomic_load_n(&port->loop_in, __ATOMIC_RELAXED) || rte_ring_empty(port->lo[queue]));
}

/*
 * Many QPs (issue 27): a received frame's QP is a cache miss, and its turn
 * stalls on it.  With at least RX_PF_MIN_QPS QPs on the engine, each burst
 * looks one frame ahead (the phase 3 loop, two QPs ahead: below): it peeks at the destination QP of a plain IPv4
 * RoCEv2 frame (no VLAN, no IP options; only a hint, the frame is parsed in
 * full when its turn comes) and asks for the lines that turn reads, the
 * requester's for an acknowledgement or a response, the responder's for a
 * request, while the frame before it is handled.  Fewer QPs stay in the
 * caches and keep the one-frame data prefetch alone (no cost added).
 */
#define RX_PF_MIN_QPS 64u

struct rx_peek_hdr {
	struct rte_ether_hdr eth;
	struct rte_ipv4_hdr ip;
	struct rte_udp_hdr udp;
	struct droce_bth bth;
};
_Static_assert(offsetof(struct rx_peek_hdr, bth) == sizeof(struct rte_ether_hdr) +
	       sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr), "no padding");

static __rte_always_inline void
rx_qp_prefetch_lc(struct droce_engine *eng, const struct rte_mbuf *m)
{
	const struct rx_peek_hdr *h = rte_pktmbuf_mtod(m, const struct rx_peek_hdr *);
	struct droce_qp **slot;
	const struct droce_qp *qp;
	uint32_t qpn;
	uint8_t op;

	if (rte_pktmbuf_data_len(m) < sizeof(*h) ||
	    h->eth.ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
	    h->ip.version_ihl != RTE_IPV4_VHL_DEF || h->udp.dst_port != RTE_BE16(DROCE_UDP_PORT))
		return;
	qpn = droce_bth_qpn(&h->bth);
	if (droce_qpn_engine(qpn) != eng->id || droce_qpn_index(qpn) >= DROCE_QP_INDEXES)
		return;
	/* the entry, unchecked (its QP number is on the line being asked for;
	 * a prefetch of a stale entry costs nothing) */
	slot = droce_engine_qpt_slot_lc(eng, droce_qpn_index(qpn));
	qp = slot != NULL ? *slot : NULL;
	if (qp == NULL)
		return;
	op = droce_bth_opcode(&h->bth) & 0x1f;
	if (op >= DROCE_OP_READ_RESP_FIRST && op <= DROCE_OP_ATOMIC_ACK) {
		droce_qp_prefetch(qp); /* the completer: the requester's lines */
		return;
	}
	rte_prefetch0(qp);
	rte_prefetch0(&qp->epsn);
	rte_prefetch0((const uint8_t *)&qp->epsn + RTE_CACHE_LINE_SIZE);
	rte_prefetch0(&qp->attr);
	rte_prefetch0(&qp->tmpl); /* the acknowledgement's */
	rte_prefetch0((const uint8_t *)&qp->tmpl + RTE_CACHE_LINE_SIZE);
}

/* Inlined into the pass (called once per pass; a call costs every idle pass). */
static __rte_always_inline unsigned int
rx_phase_lc(struct droce_engine *eng)
{
	struct rte_mbuf *pkts[DROCE_BURST];
	unsigned int got = 0;

	for (unsigned int pi = 0; pi < eng->n_ports; pi++) {
		if (rx_ring_empty(eng->ports[pi], eng->queue))
			continue;
		/* drain up to a few bursts, so receiving keeps up with what a pass sends */
		for (unsigned int b = 0; b < DROCE_RX_BURSTS; b++) {
			uint16_t n = droce_port_rx_burst(eng->ports[pi], eng->queue, pkts, DROCE_BURST);
			/* RAW_PACKET steering: one load per burst while the port has no rule */
			bool flows = n != 0 && droce_flow_active(eng->ports[pi]->index);

			got += n;
			if (unlikely(eng->n_attached >= RX_PF_MIN_QPS) && n > 1) {
				/* frame i + 2's bytes, frame i + 1's QP, frame i */
				rte_prefetch0(rte_pktmbuf_mtod(pkts[1], void *));
				rx_qp_prefetch_lc(eng, pkts[0]);
				for (uint16_t i = 0; i < n; i++) {
					if (i + 2 < n)
						rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 2], void *));
					if (i + 1 < n)
						rx_qp_prefetch_lc(eng, pkts[i + 1]);
					rx_one_lc(eng, eng->ports[pi], pkts[i], flows);
				}
			} else {
				for (uint16_t i = 0; i < n; i++) {
					if (i + 1 < n)
						rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
					rx_one_lc(eng, eng->ports[pi], pkts[i], flows);
				}
			}
			if (n < DROCE_BURST)
				break;
		}
	}
	/* frames for other engines' QPs (received, or injected in phase 1) go over */
	if (eng->xfer_pending != 0)
		xfer_flush_all_lc(eng);
	/* and theirs come: one ring per other engine (none with one engine) */
	for (uint64_t in = eng->xfer_in_mask; in != 0; in &= in - 1) {
		struct rte_ring *r = eng->xfer_in[__builtin_ctzll(in)];
		unsigned int n;

		if (rte_ring_empty(r))
			continue; /* a few loads, not the dequeue's call */
		n = rte_ring_sc_dequeue_burst(r, (void **)pkts, DROCE_BURST, NULL);
		for (unsigned int i = 0; i < n; i++)
			xfer_one_lc(eng, pkts[i]);
		got += n;
	}
	if (eng->nrxfree != 0)
		droce_engine_rx_free_flush_lc(eng);
	return got;
}

void
droce_engine_rx_free_flush_lc(struct droce_engine *eng)
{
	/* rte_pktmbuf_free_bulk's work, inline: the segments of one pool (every
	 * frame, in practice, zero-copy chains too: their external segment's
	 * reference is dropped by rte_pktmbuf_prefree_seg) go back in one
	 * rte_mempool_put_bulk */
	struct rte_mempool *mp = eng->rxfree[0]->pool;
	void *objs[DROCE_BURST * 3];
	unsigned int k = 0;

	for (unsigned int i = 0; i < eng->nrxfree; i++) {
		struct rte_mbuf *m = eng->rxfree[i];

		if (likely(m->nb_segs <= 3)) {
			do {
				struct rte_mbuf *next = m->next, *f = rte_pktmbuf_prefree_seg(m);

				if (f != NULL && likely(f->pool == mp))
					objs[k++] = f;
				else if (f != NULL)
					rte_mempool_put(f->pool, f);
				m = next;
			} while (m != NULL);
		} else {
			rte_pktmbuf_free(m);
		}
	}
	if (k != 0 && mp == eng->mcache_mp)
		rte_mempool_generic_put(mp, objs, k, eng->mcache);
	else if (k != 0)
		rte_mempool_put_bulk(mp, objs, k);
	eng->nrxfree = 0;
}

/* ---- phases 3-5 and the pass ---- */

/* Hands the PMD what it takes of @port's waiting frames; the rest keep waiting. */
static void
flush_port_lc(struct droce_engine *eng, unsigned int pi)
{
	uint16_t n = eng->ntx[pi], sent;

	if (n == 0) {
		eng->tx_ports &= ~(1u << pi);
		return;
	}
	sent = droce_port_tx_burst(eng->ports[pi], eng->queue, eng->txq[pi], n);
	eng->stats.tx_pkts += sent;
	if (sent < n)
		memmove(eng->txq[pi], eng->txq[pi] + sent, (size_t)(n - sent) * sizeof(eng->txq[pi][0]));
	eng->ntx[pi] = n - sent;
	if (sent == n)
		eng->tx_ports &= ~(1u << pi);
}

void
droce_engine_tx_full_lc(struct droce_engine *eng, unsigned int port, struct rte_mbuf *m)
{
	flush_port_lc(eng, port);
	if (eng->ntx[port] == DROCE_TXBUF) {
		/* the link is not draining: lost like a frame on the wire */
		eng->stats.tx_drops++;
		rte_pktmbuf_free(m);
		return;
	}
	eng->txq[port][eng->ntx[port]++] = m;
	eng->tx_ports |= 1u << port;
}

/* The ports with frames waiting (none: one load). */
static __rte_always_inline void
flush_lc(struct droce_engine *eng)
{
	for (uint32_t w = eng->tx_ports; w != 0; w &= w - 1)
		flush_port_lc(eng, (unsigned int)__builtin_ctz(w));
}

/* Packets a QP may generate this pass: what fits in its port's waiting room,
 * less a reserve for the ACKs and NAKs the next receive phase produces. */
static unsigned int
tx_budget_lc(const struct droce_engine *eng, const struct droce_qp *qp)
{
	unsigned int cap = eng->txroom[qp->port_index];
	unsigned int room = cap > eng->ntx[qp->port_index] ? cap - eng->ntx[qp->port_index] : 0;

	return room > 2 * DROCE_BURST ? RTE_MIN(room - 2 * DROCE_BURST, 2u * DROCE_BURST) : 0;
}

static void
work_phase_lc(struct droce_engine *eng)
{
	droce_engine_timers_lc(eng);
	/* (the wheel may have had QPs and none due: no port to look at) */
	for (unsigned int pi = 0; eng->n_active_all != 0 && pi < eng->n_ports; pi++) {
		struct droce_qp_list *l = &eng->active[pi];
		unsigned int full = 0;

		/* each QP at most once, from the head; one that keeps work goes to the tail */
		for (uint32_t n = eng->n_active[pi]; n > 0; n--) {
			struct droce_qp *qp = TAILQ_FIRST(l);
			struct droce_cc_mark mk;
			unsigned int budget;

			if (qp == NULL)
				break;
			if (n > 1 && TAILQ_NEXT(qp, active_link) != NULL) {
				struct droce_qp *nx = TAILQ_NEXT(qp, active_link);

				if (unlikely(eng->n_attached >= RX_PF_MIN_QPS)) {
					/* many QPs: the one after next's lines, and the
					 * next QP's slots refresh_lc reads first (its lines came during
					 * this QP's last turn) */
					struct droce_qp *nnx = n > 2 ? TAILQ_NEXT(nx, active_link) : NULL;

					if (nnx != NULL) {
						droce_qp_prefetch(nnx);
						rte_prefetch0(&nnx->active_link); /* its next, next turn */
					}
					rte_prefetch0(droce_qp_sq_slot(nx, nx->sq_avail));
					if (nx->srq == NULL)
						rte_prefetch0(droce_qp_rq_at(nx, nx->rq_avail));
				} else {
					droce_qp_prefetch(nx); /* its lines */
				}
			}
			budget = tx_budget_lc(eng, qp);
			if (budget == 0 && ++full > DROCE_FULL_TURNS)
				break; /* the port is full: the rest next pass */
			eng->stats.qp_turns++;
			if (droce_qp_stash_pending(qp))
				droce_qp_stash_drain_lc(qp);
			/* a QP a CNP slowed down: DCQCN's timers, the pacer (cc.c) */
			if (unlikely(qp->cc != NULL))
				budget = droce_cc_pace_begin_lc(eng, qp, budget, &mk);
			if (qp->type == DROCE_QPT_RC) {
				droce_engine_catch_up_lc(eng, qp);
				if (droce_rc_timers_due(qp))
					droce_rc_timers_lc(qp);
				droce_rc_tx_lc(qp, budget);
			} else if (qp->type == DROCE_QPT_UC) {
				droce_uc_tx_lc(qp, budget);
			} else if (qp->type == DROCE_QPT_UD) {
				droce_ud_tx_lc(qp, budget);
			} else if (qp->type == DROCE_QPT_RAW_PACKET) {
				droce_raw_tx_lc(qp, budget);
			}
			if (unlikely(qp->cc != NULL))
				droce_cc_pace_end_lc(eng, qp, &mk);
			droce_qp_overrun_check_lc(qp);
			droce_engine_settle_lc(eng, qp);
		}
	}
	droce_engine_sched_end_lc(eng);
}

void
droce_engine_mcast_loop_lc(struct droce_engine *eng, const struct droce_qp *qp,
			   const struct rte_mbuf *m, const uint8_t gid[16])
{
	const struct droce_mcast_tab *t =
		atomic_load_explicit(&droce_mcast_tab[qp->port_index], memory_order_acquire);
	struct droce_port *port = qp->port;
	struct rte_mbuf *c;
	unsigned int i = 0;

	if (t == NULL)
		return;
	while (i < t->n && memcmp(t->e[i].gid, gid, 16) != 0)
		i++;
	if (i == t->n)
		return; /* no QP of the port in the group: nothing to loop */
	c = rte_pktmbuf_copy(m, port->mp, 0, UINT32_MAX);
	if (c == NULL) {
		eng->stats.alloc_fail++;
		return;
	}
	/* the port's loop, as every looped frame: received on this queue by
	 * droce_port_rx_burst (capture, impairment, counters, parse, checks) */
	if (droce_port_loop_deliver_lc(port, eng->queue, &c, 1) != 1) {
		rte_pktmbuf_free(c);
		eng->stats.tx_drops++; /* the loop inlet is full */
		return;
	}
	port->qstats[eng->queue].loop_tx++;
	eng->stats.mcast_loop++;
}

/* One pass; false when the engine is idle (nothing received or drained, no QP
 * with work or a timer, nothing waiting to be sent). */
bool
droce_engine_pass_lc(struct droce_engine *eng)
{
	unsigned int got;
	uint64_t t = droce_clock_now();

	eng->pass_gap = eng->now && t > eng->now ? t - eng->now : 0;
	eng->now = t;
	eng->stats.loops++;
	/* phase 1 only when a bell was rung or a message sent: one cache line */
	got = unlikely(atomic_load_explicit(&eng->bell_top, memory_order_relaxed) != 0 ||
		       atomic_load_explicit(&eng->chan_msgs, memory_order_relaxed) != 0) ?
	      droce_engine_drain_lc(eng) : 0;
	got += rx_phase_lc(eng);
	if (eng->n_active_all != 0 || eng->tw_count != 0)
		work_phase_lc(eng);
	else
		droce_engine_idle_lc(eng); /* no QP to run, none in the wheel: the clock's part */
	flush_lc(eng);
	if (unlikely(eng->nrxfree != 0))
		droce_engine_rx_free_flush_lc(eng); /* frames injected as received */
	return got != 0 || eng->n_active_all != 0 || eng->tw_count != 0 || eng->tx_ports != 0;
}

void
droce_engine_poll_lc(struct droce_engine *eng)
{
	(void)droce_engine_pass_lc(eng);
}
