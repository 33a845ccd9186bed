/* SPDX-License-Identifier: BSD-3-Clause
 * The impaired link: internals shared by port.c and impair.c.
 */
#ifndef DROCE_PMD_GLUE_IMPAIR_H
#define DROCE_PMD_GLUE_IMPAIR_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "port_struct.h"

/* splitmix64, the impaired link's and the switch's PRNG (one draw per call,
 * the state advanced in place). */
static inline uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Allocates the per-queue state of @p (after its queues are configured). */
int droce_impair_port_init(struct droce_port *p);

/* Frees every held frame and the per-queue state. */
void droce_impair_port_fini(struct droce_port *p);

/* The impaired paths of droce_port_rx_burst / droce_port_tx_burst. */
uint16_t droce_impair_rx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			    uint16_t n);
uint16_t droce_impair_tx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			    uint16_t n);

/* port.c: the plain paths (count, capture, PMD), used by impair.c. */
uint16_t droce_port_xmit_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			    uint16_t n);
/* rte_eth_rx_burst, then the port's loop inlet (port_io.c) */
uint16_t droce_port_pmd_rx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			      uint16_t n);
/* the loop inlet alone: frames looped to receive queue @queue, which never
 * crossed the link (a cut link does not drop them) */
uint16_t droce_port_loop_rx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			       uint16_t n);
/* The port a frame @p sends is looped to (NULL: it goes to the link). */
struct droce_port *droce_port_loop_dest(struct droce_port *p, const struct rte_mbuf *m);
void droce_port_rx_account_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			      uint16_t n);

/* Marks an ECN-capable (ECT(0) / ECT(1)) IPv4 or IPv6 frame *@m CE, on a
 * copy from @mp when its bytes are shared (*@m replaced): 1 marked, 0 not
 * ECN-capable (Not-ECT, already CE, not IP), -1 no mbuf for the copy. */
int droce_frame_ce_mark(struct rte_mempool *mp, struct rte_mbuf **m);
/* True for an IP frame whose ECN field is not Not-ECT. */
bool droce_frame_ecn_capable(const struct rte_mbuf *m);

/* Prints the impairment settings and counters (nothing when never used). */
void droce_impair_print(const struct droce_port *p, const struct droce_port_stats *s, FILE *f);

#endif
