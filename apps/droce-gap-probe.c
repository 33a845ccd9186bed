/* SPDX-License-Identifier: BSD-3-Clause
 * droce-gap-probe: the machine's own latency tail, without droce.  One thread
 * times N windows of a fixed amount of busy work, each calibrated to last
 * about -w nanoseconds (default 300: a 2 B WRITE's half round trip on the
 * loopback), back to back, and prints their median, p99, p99.9 and maximum.
 * A window that took much longer than the median was interrupted (a timer
 * tick, the hypervisor, another thread on the CPU): droce-perf's latency
 * samples on the same CPU meet the same interruptions, so a p99.9 this probe
 * shows too is the machine's, not droce's (issue 27's tail target;
 * scripts/targets prints it under the p99.9 row).
 *
 * usage: droce-gap-probe [-n WINDOWS] [-w NS] [--json]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

/* @k rounds of dependent work the compiler cannot drop. */
static inline void
work(uint64_t k)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < k; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long n = 20000, window = 300;
	uint64_t k = 1, t0, *d;
	int opt, json = 0;

	while ((opt = getopt_long(argc, argv, "n:w:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			window = strtoul(optarg, NULL, 0);
			break;
		case 'j':
			json = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-n WINDOWS] [-w NS] [--json]\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (n < 1000 || n > 100000000 || window < 50 || window > 1000000) {
		fprintf(stderr, "droce-gap-probe: want 1000 <= -n <= 1e8 and 50 <= -w <= 1e6\n");
		return 2;
	}
	d = malloc(n * sizeof(*d));
	if (d == NULL)
		return 2;
	/* calibrate: rounds per window from the fastest of 50 short runs (an
	 * interrupted run only looks slower; the clock's own cost comes on top) */
	uint64_t best = UINT64_MAX;

	for (int r = 0; r < 50; r++) {
		t0 = now_ns();
		work(1u << 16);
		uint64_t el = now_ns() - t0;

		if (el < best)
			best = el;
	}
	k = (uint64_t)window * (1u << 16) / (best ? best : 1);
	if (k == 0)
		k = 1;
	t0 = now_ns();
	for (unsigned long i = 0; i < n; i++) {
		uint64_t t1;

		work(k);
		t1 = now_ns();
		d[i] = t1 - t0;
		t0 = t1;
	}
	qsort(d, n, sizeof(*d), cmp_u64);
	double med = d[n / 2] / 1e3, p99 = d[n * 99 / 100] / 1e3, p999 = d[n * 999 / 1000] / 1e3,
	       max = d[n - 1] / 1e3;
	unsigned long over = 0;

	for (unsigned long i = 0; i < n; i++)
		over += d[i] > 4 * d[n / 2];
	if (json)
		printf("{\"windows\": %lu, \"window_ns\": %lu, \"median_us\": %.3f, \"p99_us\": %.3f, "
		       "\"p99_9_us\": %.3f, \"max_us\": %.3f, \"over_4x_median\": %lu}\n",
		       n, window, med, p99, p999, max, over);
	else
		printf("gap probe: %lu windows of ~%lu ns busy work: median %.3f us, p99 %.3f, "
		       "p99.9 %.3f, max %.3f; %lu over 4x the median\n",
		       n, window, med, p99, p999, max, over);
	free(d);
	return 0;
}
