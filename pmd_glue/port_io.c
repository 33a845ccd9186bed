/* SPDX-License-Identifier: BSD-3-Clause
 * droce ports' I/O: the burst wrappers the engines call (capture and the
 * impaired link on the way, per-queue counters) and the port counters.
 * Port creation and configuration are in port.c, ARP in arp.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <rte_arp.h>
#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "capture.h"
#include "impair.h"
#include "internal.h"
#include "port.h"
#include "port_internal.h"
#include "wake.h"


#define CAPTURE_CHUNK 64

bool droce_port_redialing[DROCE_MAX_PORTS];

/* The receive counters and capture of a burst: inline in droce_port_rx_burst
 * (a call per burst is what a latency loop's one-frame bursts pay most),
 * droce_port_rx_account_lc for the impaired path. */
static __rte_always_inline void
rx_account(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t got)
{
	struct droce_port_stats *st = &p->qstats[queue];
	uint64_t bytes = 0;
	uint16_t i;

	if (got == 0)
		return;
	for (i = 0; i < got; i++)
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	st->rx_bursts++;
	st->rx_pkts += got;
	st->rx_bytes += bytes;
	if (unlikely(p->capture != NULL))
		st->capture_drops += droce_capture_rx(p->capture, queue, pkts, got);
}

void
droce_port_rx_account_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			 uint16_t got)
{
	rx_account(p, queue, pkts, got);
}

/* ---- the PMD ---- */

/*
 * A ring pair's or a switch's port (rings[0] received, rings[1] sent, each
 * queue's ring one producer and one consumer): its rings straight, which is
 * all the net_ring PMD's burst functions do besides counting, without
 * ethdev's call chain (about a hundred instructions a burst each way,
 * issue 27).  The PMD's own counters (pmd_ipackets / pmd_opackets) then stay
 * 0 for these ports; droce's (rx_frames, tx_frames ...) count.
 */
static __rte_always_inline uint16_t
eth_rx(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_ring *r = p->rings[0][queue];

	if (r != NULL) /* single consumer: port.c makes these rings SP / SC */
		return (uint16_t)rte_ring_sc_dequeue_burst(r, (void **)pkts, n, NULL);
	return rte_eth_rx_burst(p->eth_port, queue, pkts, n);
}

static __rte_always_inline uint16_t
eth_tx(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_ring *r = p->rings[1][queue];

	if (r != NULL) /* single producer: port.c makes these rings SP / SC */
		return (uint16_t)rte_ring_sp_enqueue_burst(r, (void **)pkts, n, NULL);
	return rte_eth_tx_burst(p->eth_port, queue, pkts, n);
}

/* ---- loopback ---- */

/* The port @p delivers frame @m to inside droce, or NULL: the wire. */
static inline struct droce_port *
loop_dest(struct droce_port *p, const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	uint32_t peers;

	if (unlikely(m->data_len < RTE_ETHER_HDR_LEN))
		return NULL;
	if (rte_is_same_ether_addr(&eth->dst_addr, &p->mac))
		return p;
	for (peers = __atomic_load_n(&p->loop_peers, __ATOMIC_ACQUIRE); peers != 0;
	     peers &= peers - 1) {
		struct droce_port *q = droce_port_get((unsigned int)__builtin_ctz(peers));

		if (q != NULL && rte_is_same_ether_addr(&eth->dst_addr, &q->mac))
			return q;
	}
	return NULL;
}

struct droce_port *
droce_port_loop_dest(struct droce_port *p, const struct rte_mbuf *m)
{
	if (!__atomic_load_n(&p->loop_on, __ATOMIC_RELAXED))
		return NULL;
	return loop_dest(p, m);
}

uint16_t
droce_port_loop_deliver_lc(struct droce_port *to, uint16_t queue, struct rte_mbuf **pkts,
			   uint16_t n)
{
	struct rte_ring *r = queue < to->nb_rxq ? to->lo[queue] : NULL;
	uint16_t k;

	if (r == NULL || n == 0)
		return 0;
	if (!__atomic_load_n(&to->loop_in, __ATOMIC_RELAXED))
		__atomic_store_n(&to->loop_in, true, __ATOMIC_RELEASE);
	/* one producer: the engine owning queue @queue (of every port) */
	k = (uint16_t)rte_ring_enqueue_burst(r, (void **)pkts, n, NULL);
	to->qstats[queue].loop_rx += k;
	return k;
}

/*
 * The PMD's transmit with the loop on: each run of frames with one
 * destination goes to the PMD or to a port's receive queue; stops at the
 * first frame not taken (the caller keeps it and the ones after it).
 */
static uint16_t
loop_tx(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t i = 0;

	while (i < n) {
		struct droce_port *to = loop_dest(p, pkts[i]);
		uint16_t j = (uint16_t)(i + 1), k;

		while (j < n && loop_dest(p, pkts[j]) == to)
			j++;
		if (to == NULL) {
			k = eth_tx(p, queue, pkts + i, (uint16_t)(j - i));
		} else {
			k = droce_port_loop_deliver_lc(to, queue, pkts + i, (uint16_t)(j - i));
			p->qstats[queue].loop_tx += k;
		}
		i = (uint16_t)(i + k);
		if (i < j)
			break;
	}
	return i;
}

static __rte_always_inline uint16_t
pmd_tx(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	if (likely(!__atomic_load_n(&p->loop_on, __ATOMIC_RELAXED)))
		return eth_tx(p, queue, pkts, n);
	return loop_tx(p, queue, pkts, n);
}

uint16_t
droce_port_loop_rx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	if (likely(!__atomic_load_n(&p->loop_in, __ATOMIC_ACQUIRE)) || n == 0 ||
	    p->lo[queue] == NULL)
		return 0;
	return (uint16_t)rte_ring_sc_dequeue_burst(p->lo[queue], (void **)pkts, n, NULL);
}

/* Inline in droce_port_rx_burst; droce_port_pmd_rx_lc for the impaired path. */
static __rte_always_inline uint16_t
pmd_rx(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t got = eth_rx(p, queue, pkts, n);

	/* then the frames the loop put on this queue (never on the link):
	 * droce_port_loop_rx_lc's first check here, no call while no loop
	 * ever pointed at the port */
	if (got < n && unlikely(__atomic_load_n(&p->loop_in, __ATOMIC_ACQUIRE)))
		got = (uint16_t)(got + droce_port_loop_rx_lc(p, queue, pkts + got,
							     (uint16_t)(n - got)));
	return got;
}

uint16_t
droce_port_pmd_rx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return pmd_rx(p, queue, pkts, n);
}

uint16_t
droce_port_rx_burst(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t got;

	if (unlikely(__atomic_load_n(&droce_port_redialing[p->index], __ATOMIC_ACQUIRE)))
		return 0; /* the device is being restarted (droce_port_redial) */
	if (unlikely(__atomic_load_n(&p->impair_used, __ATOMIC_RELAXED)))
		return droce_impair_rx_lc(p, queue, pkts, n);
	got = pmd_rx(p, queue, pkts, n);
	rx_account(p, queue, pkts, got);
	return got;
}

/* xmit's way while a capture runs: each chunk copied for the capture, then
 * sent (out of line: its copies[] and loop would cost the common way's
 * registers and stack).  *@bytes: the bytes sent. */
static __rte_noinline uint16_t
xmit_captured(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n,
	      uint64_t *bytes)
{
	struct droce_port_stats *st = &p->qstats[queue];
	uint16_t sent = 0, i;

	while (sent < n) {
		struct rte_mbuf *copies[CAPTURE_CHUNK];
		uint16_t k = RTE_MIN((uint16_t)(n - sent), (uint16_t)CAPTURE_CHUNK), s;
		uint64_t kb = 0;

		droce_capture_tx_copy(p->capture, queue, pkts + sent, k, copies);
		for (i = 0; i < k; i++)
			kb += rte_pktmbuf_pkt_len(pkts[sent + i]);
		s = pmd_tx(p, queue, pkts + sent, k);
		for (i = s; i < k; i++)
			kb -= rte_pktmbuf_pkt_len(pkts[sent + i]);
		*bytes += kb;
		st->capture_drops += droce_capture_tx_commit(p->capture, copies, k, s);
		sent += s;
		if (s < k)
			break;
	}
	return sent;
}

/* Sends to the PMD with counters and capture; does not count tx_full.
 * Inline in droce_port_tx_burst; droce_port_xmit_lc for the impaired path. */
static __rte_always_inline uint16_t
xmit(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct droce_port_stats *st = &p->qstats[queue];
	uint16_t sent = 0, i;
	uint64_t bytes = 0;
	enum droce_wake_verdict verdict;

	if (unlikely(__atomic_load_n(&droce_port_redialing[p->index], __ATOMIC_ACQUIRE)))
		return 0; /* the device is being restarted (droce_port_redial) */
	/* before the PMD, which may free the frames: what they ask of a peer
	 * asleep for frames that ask */
	verdict = droce_wake_look(p->wake, pkts, n);
	if (likely(p->capture == NULL)) {
		for (i = 0; i < n; i++)
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sent = pmd_tx(p, queue, pkts, n);
		if (unlikely(sent < n)) {
			for (i = sent; i < n; i++)
				bytes -= rte_pktmbuf_pkt_len(pkts[i]);
		}
	} else {
		sent = xmit_captured(p, queue, pkts, n, &bytes);
	}
	st->tx_bursts++;
	st->tx_pkts += sent;
	st->tx_bytes += bytes;
	if (sent != 0)
		droce_wake_peer(p->wake, verdict); /* a memif peer asleep: woken */
	return sent;
}

uint16_t
droce_port_xmit_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return xmit(p, queue, pkts, n);
}

int
droce_port_tx_prepare(struct droce_port *p, uint16_t queue, struct rte_mbuf *m)
{
	rte_errno = 0;
	if (rte_eth_tx_prepare(p->eth_port, queue, &m, 1) == 1)
		return 0;
	return rte_errno != 0 ? rte_errno : EINVAL;
}

/*
 * The PMD took none of a burst: if its link is down (a memif peer that died,
 * a cable pulled), the frames are lost as on a NIC without carrier rather
 * than kept: kept, they would fill the engine's waiting room, whose QPs would
 * then send nothing and so never time out (an RC QP must end in RETRY_EXC
 * within its retry budget when its peer is gone).  The link is read at most
 * every LINK_CHECK_US per queue: a full but working PMD costs no more.
 * Returns how many of @pkts were dropped (all or none).
 */
#define LINK_CHECK_US 100

static uint16_t
tx_link_down_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t now = rte_rdtsc();
	struct rte_eth_link link;

	if (now - p->link_check_tsc[queue] < rte_get_tsc_hz() / 1000000 * LINK_CHECK_US)
		return 0;
	p->link_check_tsc[queue] = now;
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(p->eth_port, &link) != 0 || link.link_status == RTE_ETH_LINK_UP)
		return 0;
	rte_pktmbuf_free_bulk(pkts, n);
	p->qstats[queue].tx_link_down += n;
	return n;
}

uint16_t
droce_port_tx_burst(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent;

	if (unlikely(__atomic_load_n(&p->impair_used, __ATOMIC_RELAXED))) {
		sent = droce_impair_tx_lc(p, queue, pkts, n); /* counted its tx_full */
		if (unlikely(sent == 0) && n != 0 && tx_link_down_lc(p, queue, pkts, n) == n) {
			p->qstats[queue].tx_full -= n;
			return n;
		}
		return sent;
	}
	sent = xmit(p, queue, pkts, n);
	if (unlikely(sent == 0) && n != 0 && tx_link_down_lc(p, queue, pkts, n) == n)
		return n;
	p->qstats[queue].tx_full += n - sent;
	return sent;
}

static void
impair_stats_add(struct droce_impair_stats *o, const struct droce_impair_stats *s)
{
	o->dropped += s->dropped;
	o->duplicated += s->duplicated;
	o->reordered += s->reordered;
	o->delayed += s->delayed;
	o->corrupted += s->corrupted;
	o->ce_marked += s->ce_marked;
	o->link_down += s->link_down;
	o->nomem += s->nomem;
	o->overflow += s->overflow;
}

void
droce_port_stats_get(const struct droce_port *p, struct droce_port_stats *out)
{
	unsigned int q;

	memset(out, 0, sizeof(*out));
	for (q = 0; q < DROCE_MAX_QUEUES; q++) {
		const struct droce_port_stats *s = &p->qstats[q];

		out->rx_pkts += s->rx_pkts;
		out->rx_bytes += s->rx_bytes;
		out->tx_pkts += s->tx_pkts;
		out->tx_bytes += s->tx_bytes;
		out->rx_bursts += s->rx_bursts;
		out->tx_bursts += s->tx_bursts;
		out->tx_full += s->tx_full;
		out->tx_link_down += s->tx_link_down;
		out->arp_requests_rx += s->arp_requests_rx;
		out->arp_replies_rx += s->arp_replies_rx;
		out->arp_replies_tx += s->arp_replies_tx;
		out->arp_requests_tx += s->arp_requests_tx;
		out->arp_bad += s->arp_bad;
		out->nd_ns_rx += s->nd_ns_rx;
		out->nd_na_rx += s->nd_na_rx;
		out->nd_bad += s->nd_bad;
		out->nd_ns_tx += s->nd_ns_tx;
		out->nd_na_tx += s->nd_na_tx;
		out->capture_drops += s->capture_drops;
		out->loop_tx += s->loop_tx;
		out->loop_rx += s->loop_rx;
		out->mc_queries_rx += s->mc_queries_rx;
		out->mc_answers_tx += s->mc_answers_tx;
		out->ecn_ce_received += s->ecn_ce_received;
		out->cnp_sent += s->cnp_sent;
		out->cnp_received += s->cnp_received;
		impair_stats_add(&out->impair_rx, &s->impair_rx);
		impair_stats_add(&out->impair_tx, &s->impair_tx);
	}
}

int
droce_port_stats_print(const struct droce_port *p, FILE *f)
{
	struct droce_port_stats s;
	struct rte_eth_stats es;

	droce_port_stats_get(p, &s);
	fprintf(f, "%s: rx %" PRIu64 " frames %" PRIu64 " bytes, tx %" PRIu64 " frames %" PRIu64
		   " bytes, tx ring full %" PRIu64 ", arp rx req %" PRIu64 " rep %" PRIu64
		   " bad %" PRIu64 ", arp tx req %" PRIu64 " rep %" PRIu64 ", capture lost %" PRIu64 "\n",
		p->cfg->name, s.rx_pkts, s.rx_bytes, s.tx_pkts, s.tx_bytes, s.tx_full,
		s.arp_requests_rx, s.arp_replies_rx, s.arp_bad, s.arp_requests_tx, s.arp_replies_tx,
		s.capture_drops);
	if (rte_eth_stats_get(p->eth_port, &es) == 0)
		fprintf(f, "%s: pmd ipackets %" PRIu64 " opackets %" PRIu64 " imissed %" PRIu64
			   " ierrors %" PRIu64 " oerrors %" PRIu64 " rx_nombuf %" PRIu64 "\n",
			p->cfg->name, es.ipackets, es.opackets, es.imissed, es.ierrors, es.oerrors,
			es.rx_nombuf);
	droce_impair_print(p, &s, f);
	return 0;
}
