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
#include <rte_spinlock.h>

#include <droce/config.h>

/* What the PMD can do for us; the dataplane does the rest in software. */
enum droce_port_offload {
	DROCE_PORT_OFFLOAD_TX_IPV4_CSUM = 1u << 0,
	DROCE_PORT_OFFLOAD_TX_UDP_CSUM = 1u << 1,
	DROCE_PORT_OFFLOAD_TX_MULTI_SEG = 1u << 2,
	DROCE_PORT_OFFLOAD_RX_IPV4_CSUM = 1u << 3,
	DROCE_PORT_OFFLOAD_RX_UDP_CSUM = 1u << 4,
};

#define DROCE_ARP_TABLE_SIZE 64

struct droce_arp_entry {
	rte_be32_t ip;  /* 0 = free */
	struct rte_ether_addr mac;
	uint64_t tsc;   /* when last learnt */
};

/* Counters, kept per queue (one writer each: the queue's engine). */
struct droce_port_stats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t tx_full;       /* frames the PMD did not take */
	uint64_t arp_requests_rx, arp_replies_rx, arp_bad;
	uint64_t arp_requests_tx, arp_replies_tx;
	uint64_t capture_drops; /* frames not written to the capture file */
};

struct droce_capture;

struct droce_port {
	uint16_t index;          /* droce port index (portN) */
	uint16_t eth_port;       /* DPDK ethdev port id */
	const struct droce_port_config *cfg;
	char dev_name[64];       /* DPDK device name */
	struct rte_ether_addr mac;
	unsigned int n_gids;
	uint8_t gids[DROCE_MAX_GIDS][16];
	uint16_t mtu;
	uint16_t nb_rxq, nb_txq;
	uint16_t vlan;           /* 0 = untagged */
	uint32_t offloads;       /* enabled enum droce_port_offload bits */
	uint32_t offload_capa;   /* what the PMD offers */
	uint32_t max_rx_pktlen;
	bool started;
	bool link_up;
	uint32_t link_speed;     /* Mbps */
	struct rte_mempool *mp;  /* receive / build pool */
	struct droce_capture *capture; /* NULL when off */
	struct rte_ring *rings[2][DROCE_MAX_QUEUES]; /* ring kind: [0] rx, [1] tx; owned by port0 side */
	bool owns_rings;
	rte_spinlock_t arp_lock; /* slow path only */
	struct droce_arp_entry arp[DROCE_ARP_TABLE_SIZE];
	struct droce_port_stats qstats[DROCE_MAX_QUEUES];
};

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

static inline const struct rte_ether_addr *
droce_port_mac(const struct droce_port *p)
{
	return &p->mac;
}

/* GID @idx of the port (NULL if out of range). */
static inline const uint8_t *
droce_port_gid(const struct droce_port *p, unsigned int idx)
{
	return idx < p->n_gids ? p->gids[idx] : NULL;
}

/* Index of @gid in the port's GID table, or -1. */
int droce_port_find_gid(const struct droce_port *p, const uint8_t gid[16]);

/* Fresh link status (also refreshes p->link_up). */
bool droce_port_link_up(struct droce_port *p);

/*
 * Handles a received frame that is not RoCE (ARP today).  Returns true when
 * the frame was consumed (the mbuf is freed or reused for the reply sent on
 * @queue); false when the caller still owns it.
 */
bool droce_port_handle_frame(struct droce_port *p, uint16_t queue, struct rte_mbuf *m);

/* Broadcasts an ARP request for @ip (network order) on @queue. */
int droce_port_arp_request(struct droce_port *p, uint16_t queue, rte_be32_t ip);

/* Looks @ip up in the table learnt from ARP; 0 and @mac, or -1 (ENOENT). */
int droce_port_arp_lookup(struct droce_port *p, rte_be32_t ip, struct rte_ether_addr *mac);

/* Adds or refreshes a table entry (also used for static neighbours). */
void droce_port_arp_learn(struct droce_port *p, rte_be32_t ip, const struct rte_ether_addr *mac);

/* Sum of the per-queue counters. */
void droce_port_stats_get(const struct droce_port *p, struct droce_port_stats *out);

/* Prints the counters and the PMD's own (ipackets, imissed, ...). */
int droce_port_stats_print(const struct droce_port *p, FILE *f);

#endif /* DROCE_PMD_GLUE_PORT_H */
