/* SPDX-License-Identifier: BSD-3-Clause
 * droce's counters for operators: per port, per engine, per QP and for the
 * IB CM, as lists of named 64-bit counters.  The same lists are served by
 * DPDK telemetry while a program runs (`dpdk-telemetry.py -f PREFIX`):
 *
 *   /droce/ports            port indexes        /droce/port,N    port N
 *   /droce/engines          engine ids          /droce/engine,N  engine N
 *   /droce/qps              QP numbers          /droce/qp,QPN    one QP
 *   /droce/cm               the IB CM (MADs sent, received, resent, ...)
 *
 * Names are stable snake_case identifiers (frames, bytes, drops by reason
 * as drop_<reason>, naks_*, retransmits, timeouts, ...); new counters are
 * appended, never renamed.  Every function may be called from any thread
 * while droce runs; each value is read whole, but a list is not one atomic
 * snapshot (counters keep moving while it is read).
 */
#ifndef DROCE_STATS_H
#define DROCE_STATS_H

#include <stdint.h>

#define DROCE_STAT_NAME_MAX 40

struct droce_stat {
	char name[DROCE_STAT_NAME_MAX];
	uint64_t value;
};

struct ibv_qp;

/*
 * Each call writes at most @n counters into @out and returns how many the
 * object has (so a call with n = 0 sizes the array), or -1 with errno
 * ENODEV when droce (or its engines) is not running or there is no such
 * port / engine.
 */
int droce_stats_port(unsigned int port, struct droce_stat *out, unsigned int n);
int droce_stats_engine(unsigned int engine, struct droce_stat *out, unsigned int n);
/* @qp is a QP of a droce device, alive for the duration of the call. */
int droce_stats_qp(struct ibv_qp *qp, struct droce_stat *out, unsigned int n);
int droce_stats_cm(struct droce_stat *out, unsigned int n);

/*
 * A port of kind = switch lists the switch's counters of it after the
 * others (switch_*: its egress queue now, at most, and its p50 / p99 over
 * the switch's clock; frames and bytes queued and sent on, tail drops, CE
 * marks; what came in from the port: drops, PFC pauses, p50 / p99 time in
 * the switch; the switch's clock).  droce_stats_switch_reset() zeroes
 * them (the queues' contents stay): 0, or -1 with errno ENODEV when no
 * switch runs.
 */
int droce_stats_switch_reset(void);

/*
 * The switch's counters of its memif link @link (0..[switch] memif_links
 * - 1: a port of the switch whose far end is another process's memif
 * port): link_up, link_macs_learned (the MACs the switch learned behind
 * it), then the switch_* counters a port of kind = switch lists.  Same
 * return convention as droce_stats_port (-1, ENODEV: no such link).
 */
int droce_stats_switch_link(unsigned int link, struct droce_stat *out, unsigned int n);

/* The value of counter @name in @s[0..n), or UINT64_MAX if absent. */
uint64_t droce_stat_find(const struct droce_stat *s, unsigned int n, const char *name);

#endif /* DROCE_STATS_H */
