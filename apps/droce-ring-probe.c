/* SPDX-License-Identifier: BSD-3-Clause
 * droce-ring-probe: the machine's ceiling for droce's in-memory topology,
 * without droce.  One thread moves 110-byte frames through a net_ring port
 * pair the way an engine does (alloc from a mempool, append, tx burst on one
 * port, rx burst on its peer, touch the bytes, free), in bursts of 32, and
 * prints frames per second.  scripts/bench runs it next to droce-perf and
 * prints droce's 64 B WRITE rate as a fraction of it (issue 11's target:
 * >= 0.24x, as one 64 B WRITE costs a request and an ACK frame each way).
 *
 * usage: droce-ring-probe [-t SECONDS] [--json]
 */
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#define BURST 32
#define FRAME 110

static int
start_port(struct rte_ring *rx, struct rte_ring *tx, const char *name, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	int port = rte_eth_from_rings(name, &rx, 1, &tx, 1, SOCKET_ID_ANY);

	memset(&conf, 0, sizeof(conf));
	if (port < 0 || rte_eth_dev_configure((uint16_t)port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup((uint16_t)port, 0, 1024, SOCKET_ID_ANY, NULL, mp) != 0 ||
	    rte_eth_tx_queue_setup((uint16_t)port, 0, 1024, SOCKET_ID_ANY, NULL) != 0 ||
	    rte_eth_dev_start((uint16_t)port) != 0)
		return -1;
	return port;
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "-m", "256", "--log-level=lib.eal:error",
			prefix, "--no-telemetry", "--no-shconf" };
	char run_dir[PATH_MAX];
	double seconds = 3.0;
	bool json = false;
	struct rte_mempool *mp;
	struct rte_ring *a2b, *b2a;
	uint64_t frames = 0, sum = 0, t0, end, hz;
	int pa, pb;

	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-ring-probe-%ld", (long)getpid());
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else {
			fprintf(stderr, "usage: %s [-t SECONDS] [--json]\n", argv[0]);
			return 2;
		}
	}
	if (seconds <= 0 || seconds > 60 ||
	    rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		fprintf(stderr, "droce-ring-probe: bad -t or EAL start failed\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create("probe", 4095, 128, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	a2b = rte_ring_create("probe_a2b", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	b2a = rte_ring_create("probe_b2a", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (mp == NULL || a2b == NULL || b2a == NULL)
		return 1;
	pa = start_port(b2a, a2b, "probe_a", mp);
	pb = start_port(a2b, b2a, "probe_b", mp);
	if (pa < 0 || pb < 0)
		return 1;
	hz = rte_get_tsc_hz();
	t0 = rte_rdtsc();
	end = t0 + (uint64_t)(seconds * (double)hz);
	while (rte_rdtsc() < end) {
		struct rte_mbuf *m[BURST];
		uint16_t n, k;

		if (rte_pktmbuf_alloc_bulk(mp, m, BURST) != 0)
			return 1;
		for (unsigned int i = 0; i < BURST; i++) {
			uint8_t *p = (uint8_t *)rte_pktmbuf_append(m[i], FRAME);

			p[0] = (uint8_t)frames;
			p[FRAME - 1] = (uint8_t)i;
		}
		n = rte_eth_tx_burst((uint16_t)pa, 0, m, BURST);
		if (n < BURST)
			rte_pktmbuf_free_bulk(m + n, BURST - n);
		k = rte_eth_rx_burst((uint16_t)pb, 0, m, BURST);
		for (unsigned int i = 0; i < k; i++)
			sum += rte_pktmbuf_mtod(m[i], uint8_t *)[FRAME - 1];
		rte_pktmbuf_free_bulk(m, k);
		frames += k;
	}
	seconds = (double)(rte_rdtsc() - t0) / (double)hz;
	if (json)
		printf("{\"frames\": %" PRIu64 ", \"seconds\": %.3f, \"Mfps\": %.3f, \"touch\": %" PRIu64 "}\n",
		       frames, seconds, (double)frames / seconds / 1e6, sum);
	else
		printf("raw ring pair: %" PRIu64 " frames of %u B in %.2f s: %.2f M frames/s (one thread)\n",
		       frames, FRAME, seconds, (double)frames / seconds / 1e6);
	snprintf(run_dir, sizeof(run_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	rmdir(run_dir); /* empty without shared config and telemetry */
	return frames > 0 ? 0 : 1;
}
