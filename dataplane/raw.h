/* SPDX-License-Identifier: BSD-3-Clause
 * RAW_PACKET QPs (raw.c) and receive steering (flow.c), engine side.
 */
#ifndef DROCE_RAW_H
#define DROCE_RAW_H

#include <stdbool.h>

#include <rte_mbuf.h>

#include "engine.h"

/* A frame handed to another engine for one of its RAW_PACKET QPs carries
 * this bit in m->port and the QPN in m->hash.usr (engine_pass.c's xfer rings). */
#define DROCE_XFER_RAW 0x8000u

/* Where the headers of a frame lie (offsets from the frame's start). */
struct droce_raw_hdrs {
	bool vlan, ipv4, ipv6;
	uint16_t tci;        /* 802.1Q tag (host order) when vlan */
	uint16_t ether_type; /* host order, after the tag */
	uint16_t l3_off;
	uint8_t ip_proto;    /* IPv4 protocol / IPv6 next header */
	uint8_t l4;          /* IPPROTO_TCP / IPPROTO_UDP when the header is there, else 0 */
	uint16_t l4_off, l4_len;
};

/* Parses the first @len bytes of a frame (Ethernet, one 802.1Q tag, IPv4 or
 * IPv6 without extension headers, TCP or UDP); reads nothing beyond @len. */
void droce_raw_parse(const uint8_t *b, uint32_t len, struct droce_raw_hdrs *h);

struct droce_flow_table;
/* Per droce port: the rules' snapshot, NULL while the port has none. */
extern struct droce_flow_table *_Atomic droce_flow_tab[DROCE_MAX_PORTS];

/* True while @port has flow rules (one relaxed load: the RoCE path's only cost). */
static inline bool
droce_flow_active(unsigned int port)
{
	return atomic_load_explicit(&droce_flow_tab[port], memory_order_relaxed) != NULL;
}

/* Offers a received frame to @port's rules; true when a rule took it (the
 * mbuf is then owned elsewhere), false when droce handles it as usual. */
bool droce_flow_rx_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m);

/* Sends what @qp's send queue holds, up to about @budget frames. */
unsigned int droce_raw_tx_lc(struct droce_qp *qp, unsigned int budget);
/* Places a frame a rule steered to @qp into its receive queue; frees @m. */
void droce_raw_rx_lc(struct droce_qp *qp, struct rte_mbuf *m);

/* engine_pass.c: delivers @m to RAW_PACKET QP @qpn, on whichever engine owns it. */
void droce_engine_raw_deliver_lc(struct droce_engine *eng, struct droce_port *port, uint32_t qpn,
				 struct rte_mbuf *m);

#endif
