/* SPDX-License-Identifier: BSD-3-Clause
 * struct droce_port's fields.
 *
 * For pmd_glue and the dataplane's fast path only (dataplane/internal.h and
 * xport.h include it: a frame build reads mp, mtu, vlan and index without a
 * call).  Applications, verbs_api, rdma_cm and tests use port.h's functions.
 */
#ifndef DROCE_PMD_GLUE_PORT_STRUCT_H
#define DROCE_PMD_GLUE_PORT_STRUCT_H

#include <rte_seqlock.h>
#include <rte_spinlock.h>

#include "pmd_glue/port.h"

#define DROCE_NEIGH_TABLE_SIZE 64

/* A neighbour of either family (arp.c): IPv4 as ::ffff:a.b.c.d. */
struct droce_neigh_entry {
	uint8_t addr[16]; /* all zero = free */
	struct rte_ether_addr mac;
	uint64_t tsc;     /* when last learnt */
};

struct droce_capture;
struct droce_impair_q;
struct droce_switch;
struct droce_wake;

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
	uint8_t ecn;             /* ECN codepoint of the RoCEv2 frames sent ([portN] ecn) */
	uint8_t tclass, pcp;     /* a path's defaults ([portN] tclass, pcp) */
	uint32_t offloads;       /* enabled enum droce_port_offload bits */
	uint32_t offload_capa;   /* what the PMD offers */
	uint32_t zc_min;         /* smallest payload sent zero-copy (zcopy.c); UINT32_MAX: never */
	uint32_t max_rx_pktlen;
	bool started;
	bool link_up;
	uint32_t link_speed;     /* Mbps */
	struct rte_mempool *mp;  /* receive / build pool */
	struct droce_capture *capture; /* NULL when off */
	struct rte_ring *rings[2][DROCE_MAX_QUEUES]; /* ring kind: [0] rx, [1] tx; owned by port0 side */
	bool owns_rings;
	rte_spinlock_t neigh_lock; /* slow path only */
	struct droce_neigh_entry neigh[DROCE_NEIGH_TABLE_SIZE]; /* ARP and ND (arp.c, nd.c) */
	bool nd_announce;        /* the unsolicited NA is still to be sent (nd.c) */
	struct droce_port_stats qstats[DROCE_MAX_QUEUES];
	uint64_t link_check_tsc[DROCE_MAX_QUEUES]; /* queue's engine: last refused-burst link read */
	/* The impaired link (impair.c). */
	struct droce_port *ring_peer;   /* ring kind: the other port of the pair */
	bool impair_used;               /* impairment or link-down was ever set */
	bool link_set_down;             /* droce_port_set_link(p, false) */
	uint32_t impair_gen;            /* bumped by each change of impair */
	rte_seqlock_t impair_lock;      /* writers: droce_port_impair_set */
	struct droce_impair_config impair;
	struct droce_impair_q *impq[2][DROCE_MAX_QUEUES]; /* [0] rx, [1] tx */
	/* Loopback (port_io.c): frames for an address of this process turned
	 * around before the PMD.  The flags are sticky (set by
	 * droce_port_loop_enable, never cleared while the port lives). */
	bool loop_on;                   /* tx looks for local destinations */
	bool loop_in;                   /* rx reads lo[] (a loop points at the port) */
	uint32_t loop_peers;            /* other ports reached inside droce (bit per index) */
	struct rte_ring *lo[DROCE_MAX_QUEUES]; /* receive queue q's loop inlet */
	struct droce_wake *wake;        /* memif: the wake-up line to a droce peer (wake.c) */
	/* kind = switch: the switch it joins (switch.c) and its index there */
	struct droce_switch *sw;
	uint8_t sw_index;
};

#endif /* DROCE_PMD_GLUE_PORT_STRUCT_H */
