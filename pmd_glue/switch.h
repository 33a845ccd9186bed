/* SPDX-License-Identifier: BSD-3-Clause
 * The switch model (switch.c): the ports of kind = switch of one process
 * joined by a shared-buffer switch.  Internal to pmd_glue.
 */
#ifndef DROCE_PMD_GLUE_SWITCH_H
#define DROCE_PMD_GLUE_SWITCH_H

#include <stdint.h>

#include <droce/config.h>

#include "port_struct.h"

struct droce_stat;
struct droce_switch;

/* Creates the switch of @c joining the ports of kind = switch among
 * @ports[0..n) (their devices configured: MACs known); sets their ->sw.
 * Returns 0 (also when no port is a switch port), -1 with the error set. */
int droce_switch_create(const struct droce_switch_config *c, struct droce_port *ports,
			unsigned int n);
/* Frees the frames the switch holds and the switch (ports stopped). */
void droce_switch_destroy(void);

/* switch_link.c: opens memif link @k of @c (role server, id @k on
 * c->memif_socket; the socket checked before link 0) with its receive
 * queue on @mp, started: 0 and *@eth, or -1 with the error set. */
int droce_switch_link_open(const struct droce_switch_config *c, unsigned int k,
			   struct rte_mempool *mp, uint16_t *eth);
/* Stops and unplugs link @k's ethdev @eth (close link 0 last). */
void droce_switch_link_close(const struct droce_switch_config *c, unsigned int k, uint16_t eth);

/*
 * Runs the switch up to now: takes what its ports sent (their transmit
 * rings), queues it at the egress port (tail drop when the shared buffer
 * is full, PFC pause of the ingress), and moves the frames whose time has
 * come at the line rate to the egress port's receive ring 0 (ECN marked
 * at dequeue).  Any thread, any time: whoever gets the switch's try-lock
 * runs it, the others return at once.  Called from the receive burst of
 * every switch port (impair.c's path: switch ports count as impaired).
 */
void droce_switch_service(struct droce_switch *sw);

/*
 * RED on the instantaneous queue, as DCQCN's congestion point: the chance
 * (on 2^32) that a frame leaving with @q bytes queued behind it is marked:
 * 0 up to @kmin, pmax (q - kmin) / (kmax - kmin) up to @kmax, 1 above;
 * never with kmax = 0.  @pmax_q32 is pmax on 2^32.
 */
static inline uint64_t
droce_switch_mark_thr(uint64_t kmin, uint64_t kmax, uint64_t pmax_q32, uint64_t q)
{
	if (kmax == 0 || q <= kmin)
		return 0;
	if (q > kmax)
		return UINT64_C(1) << 32;
	return pmax_q32 * (q - kmin) / (kmax - kmin);
}

/* The line rate of a switch port, Mb/s (its link speed). */
uint32_t droce_switch_port_speed(const struct droce_switch *sw);

/* Appends the switch's counters of droce port @p (its egress queue and
 * what came in from it) to @out (stats.c's lists): the new index. */
unsigned int droce_switch_stats(const struct droce_port *p, struct droce_stat *out, unsigned int n,
				unsigned int i);

#endif
