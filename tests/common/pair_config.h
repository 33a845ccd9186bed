/* SPDX-License-Identifier: BSD-3-Clause
 * The in-memory port pair every one-process suite runs on, written once:
 * droce0 (198.18.0.1, 02:00:c6:12:00:01) <-> droce1 (198.18.0.2,
 * 02:00:c6:12:00:02), net_ring ports, --no-huge --no-pci.  No Criterion
 * here, so the fuzz targets use it too.
 */
#ifndef DROCE_TESTS_COMMON_PAIR_CONFIG_H
#define DROCE_TESTS_COMMON_PAIR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* Everything optional: a zeroed struct is the embedded loopback default
 * (one co-located engine, IP MTU 1500, no IPv6). */
struct tc_pair {
	unsigned int mtu;         /* IP MTU of both ports; 0: 1500 */
	unsigned int engines;     /* engine count; 0: 1 */
	const char *lcores;       /* dedicated engines on these EAL lcores ("1", "1,2"), else
				     co-located; .engines must still give their number (queues) */
	const char *eal_extra;    /* appended to the EAL args (e.g. "-l 0-1") */
	int fallback_us;          /* [engines] fallback_us; 0: the default, -1: 0 (off) */
	const char *engines_extra; /* more [engines] lines, e.g. "selective_repeat = 1" */
	unsigned int descs;       /* rxd / txd per queue; 0: 1024 */
	unsigned int mbufs;       /* 0: 8191 */
	unsigned int data_room;   /* 0: 2176 */
	unsigned int mem_mb;      /* EAL -m; 0: 256 */
	const char *mempool_extra; /* more [mempool] lines, e.g. "capture_mbufs = 4095" */
	bool ipv6;                /* also 2001:2::1 / 2001:2::2 (GID index 1) */
	const char *port0_extra;  /* more [port0] lines, e.g. "impair_drop = 0.01" */
	const char *port1_extra;
	const char *extra;        /* appended after the ports: more sections, e.g. "[dcqcn]\n..." */
};

/* Writes the config text for @o (NULL: defaults) into @buf: its length, or
 * -1 when it does not fit. */
int tc_pair_config(char *buf, size_t cap, const struct tc_pair *o);

#endif
