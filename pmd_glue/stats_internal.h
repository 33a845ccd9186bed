/* SPDX-License-Identifier: BSD-3-Clause
 * Helpers for the counters of include/droce/stats.h, shared by the three
 * layers that own counters (pmd_glue: ports; dataplane: engines and QPs;
 * verbs_api: QP handles and the CM), and the runtime's lifetime lock that
 * makes reading counters from any thread (telemetry's) safe against stop.
 */
#ifndef DROCE_PMD_GLUE_STATS_INTERNAL_H
#define DROCE_PMD_GLUE_STATS_INTERNAL_H

#include <stdint.h>

#include <droce/stats.h>

struct rte_tel_data;

/* Readers of runtime objects from foreign threads hold this while they read;
 * droce_stop() and droce_engines_stop() take it exclusively while they free. */
void droce_runtime_hold(void);
void droce_runtime_release(void);
void droce_runtime_lock_excl(void);
void droce_runtime_unlock_excl(void);
/* @fn runs first in droce_stop(), before the ports go: the engines' stop, set
 * by droce_engines_start (the layer above the ports), so a program that only
 * calls droce_stop() never has its ports torn down under running engines. */
void droce_runtime_set_stop_first(void (*fn)(void));

/* Writes counter @i (@name, @value) into @out when i < n; returns i + 1. */
static inline unsigned int
droce_stat_put(struct droce_stat *out, unsigned int n, unsigned int i, const char *name,
	       uint64_t value)
{
	if (i < n) {
		unsigned int k = 0;

		for (; name[k] != '\0' && k + 1 < DROCE_STAT_NAME_MAX; k++)
			out[i].name[k] = name[k];
		out[i].name[k] = '\0';
		out[i].value = value;
	}
	return i + 1;
}

/*
 * Telemetry: answers @d with the counters @get fills for object @id (a
 * dict), holding the runtime.  0, or a negative errno for telemetry.
 */
int droce_stats_tel_dict(struct rte_tel_data *d, int (*get)(unsigned int id, struct droce_stat *,
							    unsigned int),
			 unsigned int id);
/* Parses a telemetry parameter as an unsigned number; -1 if it is not one. */
long droce_stats_tel_param(const char *params, unsigned long max);

#endif /* DROCE_PMD_GLUE_STATS_INTERNAL_H */
