/* SPDX-License-Identifier: BSD-3-Clause
 * What perftest's two exchanges (perftest_oob.c over TCP, perftest_rdmacm.c
 * over rdma_cm) share: the error text of the last failed call and a
 * millisecond clock for their deadlines.
 */
#ifndef DROCE_PERFTEST_UTIL_H
#define DROCE_PERFTEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Writes the reason into @err (@n bytes); returns -1 for the caller to return. */
static inline int __attribute__((format(printf, 3, 4)))
pt_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

static inline int64_t
pt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif /* DROCE_PERFTEST_UTIL_H */
