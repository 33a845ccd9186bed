/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>

#include "pair_config.h"

int
tc_pair_config(char *buf, size_t cap, const struct tc_pair *o)
{
	static const struct tc_pair defaults;
	unsigned int mtu, q, d;
	char fallback[32] = "", engines[128];
	int n;

	if (o == NULL)
		o = &defaults;
	mtu = o->mtu ? o->mtu : 1500;
	q = o->engines ? o->engines : 1;
	d = o->descs ? o->descs : 1024;
	if (o->fallback_us != 0)
		snprintf(fallback, sizeof(fallback), "fallback_us = %d\n",
			 o->fallback_us < 0 ? 0 : o->fallback_us);
	/* dedicated engines are one per lcore listed; co-located ones counted */
	if (o->lcores != NULL)
		snprintf(engines, sizeof(engines), "mode = dedicated\nlcores = %s\n", o->lcores);
	else
		snprintf(engines, sizeof(engines), "mode = colocated\ncount = %u\n", q);
	n = snprintf(buf, cap,
		     "[eal]\n"
		     "args = --no-huge --no-pci -m %u --log-level=lib.eal:warning %s\n"
		     "[engines]\n"
		     "%s"
		     "%s"
		     "%s%s"
		     "[mempool]\n"
		     "mbufs = %u\n"
		     "cache = 128\n"
		     "data_room = %u\n"
		     "%s%s"
		     "[port0]\n"
		     "kind = ring\n"
		     "peer = port1\n"
		     "mac = 02:00:c6:12:00:01\n"
		     "ipv4 = 198.18.0.1\n"
		     "%s"
		     "mtu = %u\n"
		     "rxq = %u\ntxq = %u\nrxd = %u\ntxd = %u\n"
		     "%s\n"
		     "[port1]\n"
		     "kind = ring\n"
		     "peer = port0\n"
		     "mac = 02:00:c6:12:00:02\n"
		     "ipv4 = 198.18.0.2\n"
		     "%s"
		     "mtu = %u\n"
		     "rxq = %u\ntxq = %u\nrxd = %u\ntxd = %u\n"
		     "%s\n"
		     "%s%s",
		     o->mem_mb ? o->mem_mb : 256, o->eal_extra ? o->eal_extra : "", engines, fallback,
		     o->engines_extra ? o->engines_extra : "", o->engines_extra ? "\n" : "",
		     o->mbufs ? o->mbufs : 8191, o->data_room ? o->data_room : 2176,
		     o->mempool_extra ? o->mempool_extra : "", o->mempool_extra ? "\n" : "",
		     o->ipv6 ? "ipv6 = 2001:2::1\n" : "", mtu, q, q, d, d,
		     o->port0_extra ? o->port0_extra : "",
		     o->ipv6 ? "ipv6 = 2001:2::2\n" : "", mtu, q, q, d, d,
		     o->port1_extra ? o->port1_extra : "",
		     o->extra ? o->extra : "", o->extra ? "\n" : "");
	return n > 0 && (size_t)n < cap ? n : -1;
}
