/* SPDX-License-Identifier: BSD-3-Clause
 * Dataplane-wide helpers shared by its modules (not for verbs_api).
 */
#ifndef DROCE_DP_INTERNAL_H
#define DROCE_DP_INTERNAL_H

#include <rte_log.h>

/* The port fields the fast path reads without a call (mp, mtu, vlan, index). */
#include "pmd_glue/clock.h"
#include "pmd_glue/port_struct.h"

extern int droce_dp_logtype;
#define DP_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, droce_dp_logtype, "droce.dp: " fmt "\n", ##__VA_ARGS__)

/* Data-path logging: compiled out above RTE_LOG_DP_LEVEL (INFO by default). */
#define DP_LOG_DP(level, fmt, ...)                                   \
	do {                                                          \
		if (RTE_LOG_##level <= RTE_LOG_DP_LEVEL)              \
			DP_LOG(level, fmt, ##__VA_ARGS__);            \
	} while (0)

/* CQs armed for an event (a program may sleep waiting for it: the fallback
 * thread then lets a memif peer's frame end its timer sleeps). */
extern _Atomic int droce_cqs_armed;

/* Waits until every engine has passed a quiescent point. */
void droce_dp_synchronize(void);
/* Returns once every engine ran a whole pass that began after the call: the
 * messages this thread sent before (bells, modifies) are taken and the work
 * they announced had its turn (a UD send its completion).  Co-located: the
 * caller drives them.  Bounded: 1 s. */
void droce_engines_barrier(void);

#endif
