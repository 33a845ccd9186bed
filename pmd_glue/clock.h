/* SPDX-License-Identifier: BSD-3-Clause
 * droce's clock: the TSC, unless the config changes it ([engines]):
 *   time_dilation = S    it runs S times slower than real time: a fabric
 *                        of 25 Gb/s with ConnectX's DCQCN timers
 *                        (microseconds) is played at 25/S Gb/s on a
 *                        machine that cannot move 25, every ratio kept;
 *   clock_stall_us = N   a gap longer than N us (real time) between two
 *                        reads of the clock by anyone counts as N us: the
 *                        time the process was off the CPU (a loaded
 *                        machine) passes for nobody, engines, pacers,
 *                        DCQCN and the switch model alike.
 * Every time droce's engines and the switch model keep is on it (the
 * engines' pass time: RC timers, the timer wheel, the pacer, DCQCN); what it
 * costs when changed: a call per engine pass.  The fallback thread's and
 * the application's waits stay in real time.  Fabric time = (real time -
 * the excused gaps) / S.
 */
#ifndef DROCE_PMD_GLUE_CLOCK_H
#define DROCE_PMD_GLUE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>

struct droce_clock {
	uint64_t tsc0;     /* the TSC when droce started */
	uint32_t div;      /* time_dilation (0 or 1: none) */
	uint64_t cap;      /* clock_stall_us in TSC cycles (0: none) */
	bool plain;        /* neither: the TSC itself */
	uint64_t last;     /* the last TSC read (atomic) */
	uint64_t skipped;  /* real cycles excused so far (atomic) */
};
extern struct droce_clock droce_clock;

/* The slow path of droce_clock_now (runtime.c). */
uint64_t droce_clock_shaped(uint64_t tsc);

/* Now on droce's clock, in TSC cycles (rte_get_tsc_hz() a second). */
static inline uint64_t
droce_clock_now(void)
{
	uint64_t t = rte_rdtsc();

	if (likely(droce_clock.plain))
		return t;
	return droce_clock_shaped(t);
}

/* The real TSC for a time @now read from droce_clock_now() just before. */
static inline uint64_t
droce_clock_real(uint64_t now)
{
	return likely(droce_clock.plain) ? now : rte_rdtsc();
}

#endif
