/* SPDX-License-Identifier: BSD-3-Clause
 * droce ports: the dataplane's view of an Ethernet port.
 *
 * Does not include rte_ethdev.h: the dataplane reaches the PMD only through
 * the functions below.
 */
#ifndef DROCE_PMD_GLUE_PORT_H
#define DROCE_PMD_GLUE_PORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <droce/config.h>

/* What the PMD can do for us; the dataplane does the rest in software. */
enum droce_port_offload {
	DROCE_PORT_OFFLOAD_TX_IPV4_CSUM = 1u << 0,
	DROCE_PORT_OFFLOAD_TX_UDP_CSUM = 1u << 1,
	DROCE_PORT_OFFLOAD_TX_MULTI_SEG = 1u << 2,
	DROCE_PORT_OFFLOAD_RX_IPV4_CSUM = 1u << 3,
	DROCE_PORT_OFFLOAD_RX_UDP_CSUM = 1u << 4,
	DROCE_PORT_OFFLOAD_TX_TCP_CSUM = 1u << 5, /* RAW_PACKET frames (raw.c) */
	DROCE_PORT_OFFLOAD_TX_TSO = 1u << 6,      /* RAW_PACKET IBV_WR_TSO */
};

/* What the impaired link did to frames in one direction. */
struct droce_impair_stats {
	uint64_t dropped;     /* freed instead of sent / delivered */
	uint64_t duplicated;  /* extra byte-identical copies sent */
	uint64_t reordered;   /* held back and overtaken by at least one frame */
	uint64_t delayed;     /* held for delay_us */
	uint64_t corrupted;   /* one bit flipped */
	uint64_t ce_marked;   /* ECN set to CE (impair_ce) */
	uint64_t link_down;   /* dropped because the link was set down */
	uint64_t nomem;       /* copy for a duplicate / corruption failed: not done */
	uint64_t overflow;    /* hold queue full: sent without delay / reorder */
};

/* Counters, kept per queue (one writer each: the queue's engine). */
struct droce_port_stats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_bursts;     /* receive bursts that returned frames */
	uint64_t tx_bursts;     /* transmit bursts handed to the PMD */
	uint64_t tx_full;       /* frames the PMD did not take */
	uint64_t tx_link_down;  /* frames dropped: the PMD's link was down */
	uint64_t arp_requests_rx, arp_replies_rx, arp_bad;
	uint64_t arp_requests_tx, arp_replies_tx;
	/* IPv6 neighbour discovery (nd.c): solicitations and advertisements
	 * received, those dropped by RFC 4861's checks, sent (advertisements:
	 * answers and unsolicited) */
	uint64_t nd_ns_rx, nd_na_rx, nd_bad, nd_ns_tx, nd_na_tx;
	uint64_t capture_drops; /* frames not written to the capture file */
	/* Loopback (counted in tx_pkts / rx_pkts too): frames this port sent
	 * that were turned around inside droce instead of going to the PMD, and
	 * frames put on this port's receive queues that way (received, and
	 * counted in rx_pkts, unless the impaired link drops them first). */
	uint64_t loop_tx, loop_rx;
	uint64_t mc_queries_rx, mc_answers_tx; /* IGMP / MLD queries, reports sent in answer (mcast.c) */
	/* congestion notification (dataplane/cc.c), counted by the queue's engine */
	uint64_t ecn_ce_received; /* RoCEv2 frames received with ECN = CE */
	uint64_t cnp_sent, cnp_received;
	struct droce_impair_stats impair_rx, impair_tx;
};

/*
 * Opaque outside pmd_glue: its fields are in port_struct.h, for pmd_glue and
 * the dataplane's fast path only (dataplane/internal.h, xport.h).  Everyone
 * else goes through the functions below.
 */
struct droce_port;

/* Port lookup (NULL if @index is out of range or droce is not running). */
struct droce_port *droce_port_get(unsigned int index);
unsigned int droce_port_count(void);

/*
 * Receive / transmit a burst on queue @queue.  They count and, when the port
 * captures, copy every frame to the capture file.  tx_burst returns how many
 * frames the PMD took; the caller still owns the rest.
 */
uint16_t droce_port_rx_burst(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			     uint16_t n);
uint16_t droce_port_tx_burst(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			     uint16_t n);
/* rte_eth_tx_prepare() of one frame whose ol_flags ask for checksum / TSO
 * offloads the port has: 0, or the errno the PMD gave (the frame is then
 * unchanged enough for the caller to do the work in software). */
int droce_port_tx_prepare(struct droce_port *p, uint16_t queue, struct rte_mbuf *m);

/*
 * What a port is, for the slow path (verbs queries, rdma_cm, tools); the
 * dataplane reads the same fields straight from port_struct.h.
 */
unsigned int droce_port_index(const struct droce_port *p);
const char *droce_port_name(const struct droce_port *p);        /* DPDK device name */
const struct droce_port_config *droce_port_cfg(const struct droce_port *p);
const struct rte_ether_addr *droce_port_mac(const struct droce_port *p);
uint16_t droce_port_mtu(const struct droce_port *p);            /* IP MTU */
uint32_t droce_port_offloads(const struct droce_port *p);
/* The smallest RC payload a port with @offloads sends zero-copy when its
 * config says zero_copy = @zero_copy: UINT32_MAX (never) without multi-segment
 * transmit or when @zero_copy is 0. */
static inline uint32_t
droce_port_zc_min(uint32_t offloads, uint32_t zero_copy)
{
	return (offloads & DROCE_PORT_OFFLOAD_TX_MULTI_SEG) && zero_copy ? zero_copy : UINT32_MAX;
}       /* enum droce_port_offload bits in use */
uint16_t droce_port_vlan(const struct droce_port *p);           /* 0 = untagged */
uint32_t droce_port_link_speed(const struct droce_port *p);     /* Mbps */
/* The link status last read (droce_port_link_up reads a fresh one). */
bool droce_port_link_cached(const struct droce_port *p);
unsigned int droce_port_gid_count(const struct droce_port *p);
uint16_t droce_port_rx_queues(const struct droce_port *p);
bool droce_port_capturing(const struct droce_port *p);         /* capture file open */

/* GID @idx of the port (NULL if out of range). */
const uint8_t *droce_port_gid(const struct droce_port *p, unsigned int idx);

/* Index of @gid in the port's GID table, or -1. */
int droce_port_find_gid(const struct droce_port *p, const uint8_t gid[16]);

/* Fresh link status (also refreshes the cached one). */
bool droce_port_link_up(struct droce_port *p);

/*
 * Handles a received frame that is not RoCE (ARP today).  Returns true when
 * the frame was consumed (the mbuf is freed or reused for the reply sent on
 * @queue); false when the caller still owns it.
 */
bool droce_port_handle_frame(struct droce_port *p, uint16_t queue, struct rte_mbuf *m);

/*
 * Multicast groups of the port (mcast.c), counted per QP attachment: join
 * (ENOMEM past DROCE_PORT_MC_MAX_GROUPS) sets *@first for a new group, leave
 * (ENOENT if not joined) sets *@last when its last count went; both keep the
 * PMD's multicast filter in step.  Any thread, slow path.
 */
#define DROCE_PORT_MC_MAX_GROUPS 1024
int droce_port_mc_join(struct droce_port *p, const uint8_t gid[16], bool *first);
int droce_port_mc_leave(struct droce_port *p, const uint8_t gid[16], bool *last);
/* Copies up to @cap of the port's groups into @gids: how many. */
unsigned int droce_port_mc_groups(struct droce_port *p, uint8_t (*gids)[16], unsigned int cap);
/* Builds the membership report (@join) or leave of group @gid into @buf:
 * IGMPv3 for an IPv4-mapped group (v2 / v1 while an older querier was
 * heard), MLDv2 for IPv6; the frame's length, or 0 when there is nothing to
 * send (IGMPv1 has no leave) or @cap is too small. */
size_t droce_port_mc_report(const struct droce_port *p, const uint8_t gid[16], bool join,
			    uint8_t *buf, size_t cap);
/* The state-change reports of port @port due to be sent again (each join
 * and leave is sent twice, the robustness variable of IGMP and MLD): up to
 * @cap groups into @gids, their kind into @join; how many.  Any thread. */
unsigned int droce_port_mc_due(unsigned int port, uint8_t (*gids)[16], bool *join,
			       unsigned int cap);
/* An engine's: true (counted) when the IP packet at @l3 (@len bytes) is an
 * IGMP or MLD query, answered on @queue with a current-state report per
 * group it asks for (an IGMPv1 / v2 query also sets the port's IGMP version
 * for 260 s). */
bool droce_port_mc_query(struct droce_port *p, uint16_t queue, const uint8_t *l3, size_t len,
			 bool v4);

/* Broadcasts an ARP request for @ip (network order) on @queue. */
int droce_port_arp_request(struct droce_port *p, uint16_t queue, rte_be32_t ip);

/* Looks @ip up in the table learnt from ARP; 0 and @mac, or -1 (ENOENT). */
int droce_port_arp_lookup(struct droce_port *p, rte_be32_t ip, struct rte_ether_addr *mac);

/* Adds or refreshes a table entry (also used for static neighbours). */
void droce_port_arp_learn(struct droce_port *p, rte_be32_t ip, const struct rte_ether_addr *mac);

/*
 * The neighbour table of both families (arp.c): @addr is an IPv6 address
 * or an IPv4-mapped one (::ffff:a.b.c.d, as ARP's entries).  One's own
 * address answers the port's MAC.  Lookup: 0 and @mac, or -1 (ENOENT).
 */
int droce_port_neigh_lookup(struct droce_port *p, const uint8_t addr[16], struct rte_ether_addr *mac);
void droce_port_neigh_learn(struct droce_port *p, const uint8_t addr[16],
			    const struct rte_ether_addr *mac);
bool droce_port_neigh_known(struct droce_port *p, const uint8_t addr[16]);

/*
 * IPv6 neighbour discovery (nd.c, RFC 4861's host side).  An engine's,
 * on @queue: a Neighbor Solicitation for @target to its solicited-node
 * group, with the source link-layer address option; the unsolicited
 * Neighbor Advertisement of every IPv6 address of the port (to ff02::1,
 * override set), which clears p->nd_announce once sent.  0, or -1 and
 * errno (EADDRNOTAVAIL: the port has no IPv6 address; ENOBUFS).
 */
int droce_port_nd_solicit(struct droce_port *p, uint16_t queue, const uint8_t target[16]);
int droce_port_nd_announce(struct droce_port *p, uint16_t queue);
/* True when the port has an IPv6 (not IPv4-mapped) address; whether its
 * unsolicited NA is still to be sent. */
bool droce_port_has_ipv6(const struct droce_port *p);
bool droce_port_nd_announce_pending(const struct droce_port *p);
/* An engine's: true when the IPv6 packet of @m at @l3off is ND (a Neighbor
 * Solicitation or Advertisement), handled and freed (answered, learnt, or
 * dropped and counted in nd_bad); false, untouched, for any other. */
bool droce_port_nd_rx(struct droce_port *p, uint16_t queue, struct rte_mbuf *m, uint32_t l3off);

/*
 * The impaired link.  Frames crossing the port are dropped, duplicated,
 * reordered, delayed and corrupted as the port's impair_* config keys (or
 * droce_port_impair_set) say, with a deterministic PRNG per queue and
 * direction seeded from (seed, port, direction, queue).  Held frames
 * (delayed, reordered, or waiting for room in the PMD) are released by later
 * calls on the same queue: any tx_burst, or an rx_burst on the queue with the
 * same index (the engine owning queue q owns it in both directions), or
 * droce_port_impair_poll.  rx_burst's impairment happens between the PMD and
 * the caller; tx_burst's between the caller and the PMD; capture and the
 * rx/tx counters see the frames after impairment.  tx_burst still returns
 * how many frames the caller no longer owns: impaired frames (dropped, held)
 * count as taken.
 */

/*
 * Replaces the port's impairment (copied; checked, -1 with errno = EINVAL on
 * bad values).  Safe from any thread while engines run: each queue picks the
 * change up on its next call and restarts its PRNG from the seed, so the same
 * settings give the same pattern again.
 */
int droce_port_impair_set(struct droce_port *p, const struct droce_impair_config *c);

/* The port's current impairment. */
void droce_port_impair_get(struct droce_port *p, struct droce_impair_config *out);

/*
 * Cuts (@up false) or restores the port's link: while cut, the port silently
 * drops every frame in both directions (frames held by the impairment too),
 * like a peer whose cable was pulled; the PMD link status is unchanged.  For
 * a ring pair, frames the peer sends towards a cut port are dropped at the
 * peer's tx.  Safe from any thread.
 */
void droce_port_set_link(struct droce_port *p, bool up);

/* False while droce_port_set_link(p, false) is in force. */
bool droce_port_link_is_set_up(const struct droce_port *p);

/*
 * Releases tx queue @queue's held frames that are due (for a thread that
 * transmits on the queue but polls no receive queue of that index).
 */
void droce_port_impair_poll(struct droce_port *p, uint16_t queue);

/*
 * Loopback: a frame for an address of this process is delivered inside
 * droce, as rxe and ConnectX deliver a frame for their own GID.  From
 * droce_port_loop_enable(p, to) on (sticky; the verbs layer calls it when a
 * path resolves to @to's GID, and for RAW_PACKET QPs), every unicast frame
 * @p sends whose destination MAC is @to's MAC is turned around in
 * droce_port_tx_burst, after the transmit side's impairment, capture and
 * counters, instead of going to the PMD: it is put on @to's receive queue of
 * the same index (the engine that sends on queue q receives on queue q of
 * every port) and received there through droce_port_rx_burst like any frame
 * off the wire (receive impairment, capture, counters, then the engine's
 * parse, checks and dispatch, which hands it to the engine owning the QP).
 * @to == @p is loopback on one port; another port only when its link does
 * not reach it (verbs_api/qp.c decides: not a ring pair, and no ARP answer).
 * Safe from any thread.
 */
void droce_port_loop_enable(struct droce_port *p, struct droce_port *to);

/* True when @p and @q are the two ports of one ring pair (their link joins them). */
bool droce_port_ring_peers(const struct droce_port *p, const struct droce_port *q);

/*
 * The general entry point: puts @n frames on @to's receive queue @queue as
 * if received (only the engine owning queue @queue may call it); returns how
 * many it took, the caller keeps the rest.  Counted as loop_rx on @to; the
 * capture sees them when they are received.  Each mbuf must be one nobody
 * else holds (a copy for a frame that also goes to the wire).
 */
uint16_t droce_port_loop_deliver_lc(struct droce_port *to, uint16_t queue, struct rte_mbuf **pkts,
				    uint16_t n);

/* Sum of the per-queue counters. */
void droce_port_stats_get(const struct droce_port *p, struct droce_port_stats *out);

/* Prints the counters and the PMD's own (ipackets, imissed, ...). */
int droce_port_stats_print(const struct droce_port *p, FILE *f);

#endif /* DROCE_PMD_GLUE_PORT_H */
