/* SPDX-License-Identifier: BSD-3-Clause
 * The tests' one clock, header-only so that suites linking no droce (the
 * rdma_cm layer against its fake CM) share it too.
 */
#ifndef DROCE_TESTS_COMMON_CLOCK_H
#define DROCE_TESTS_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC. */
static inline uint64_t
tc_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

#endif
