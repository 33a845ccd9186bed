/* SPDX-License-Identifier: BSD-3-Clause
 * droce-memif-probe: the machine's ceiling for droce's two-process memif
 * topology, without droce.  Two processes, one memif port each (the server
 * owns the socket): the client moves 110-byte frames to the server the way an
 * engine does (alloc from a mempool, append, touch, tx burst of 32) for -t
 * seconds; the server receives them (rx burst, touch, free) and prints the
 * frame rate from its first frame to its last.  scripts/targets runs it next
 * to droce-perf over memif and prints droce's 64 B WRITE rate as a fraction of
 * it (issue 11's target: >= 0.7x).
 *
 * usage: droce-memif-probe --server SOCKET [-t SECONDS] [-c CPU] [--json]
 *        droce-memif-probe --client SOCKET [-t SECONDS] [-c CPU]
 * Each process runs on one CPU (-c; default 0 for the server, 1 for the
 * client: the EAL pins its thread, and two on one CPU would share it).
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
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define BURST 32
#define FRAME 110
#define LINK_WAIT_S 10.0 /* for the peer to connect */
#define IDLE_END_S 0.5	 /* server: the client is done after this long without a frame */

static int
usage(const char *me)
{
	fprintf(stderr, "usage: %s --server SOCKET [-t SECONDS] [-c CPU] [--json]\n"
			"       %s --client SOCKET [-t SECONDS] [-c CPU]\n", me, me);
	return 2;
}

static bool
wait_link(uint16_t port, uint64_t hz)
{
	uint64_t end = rte_rdtsc() + (uint64_t)(LINK_WAIT_S * (double)hz);
	struct rte_eth_link link;

	do {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			return true;
		rte_delay_us_sleep(1000);
	} while (rte_rdtsc() < end);
	return false;
}

/* Sends frames for @seconds; returns the count sent. */
static uint64_t
run_client(uint16_t port, struct rte_mempool *mp, double seconds, uint64_t hz)
{
	uint64_t sent = 0, end = rte_rdtsc() + (uint64_t)(seconds * (double)hz);

	while (rte_rdtsc() < end) {
		struct rte_mbuf *m[BURST];
		uint16_t n;

		if (rte_pktmbuf_alloc_bulk(mp, m, BURST) != 0)
			continue; /* the PMD still holds them */
		for (unsigned int i = 0; i < BURST; i++) {
			uint8_t *p = (uint8_t *)rte_pktmbuf_append(m[i], FRAME);

			memset(p, 0, 14);
			p[12] = 0x88; /* a local experimental EtherType: nobody's protocol */
			p[13] = 0xb5;
			p[14] = (uint8_t)sent;
			p[FRAME - 1] = (uint8_t)i;
		}
		n = rte_eth_tx_burst(port, 0, m, BURST);
		if (n < BURST)
			rte_pktmbuf_free_bulk(m + n, BURST - n);
		sent += n;
	}
	return sent;
}

/* Receives until @seconds + LINK_WAIT_S pass or the client goes quiet; the
 * rate is taken from the first frame to the last. */
static int
run_server(uint16_t port, double seconds, uint64_t hz, bool json)
{
	uint64_t frames = 0, sum = 0, first = 0, last = 0;
	uint64_t end = rte_rdtsc() + (uint64_t)((seconds + LINK_WAIT_S) * (double)hz);
	uint64_t idle = (uint64_t)(IDLE_END_S * (double)hz);
	double span;

	for (;;) {
		struct rte_mbuf *m[BURST];
		uint64_t now = rte_rdtsc();
		uint16_t k = rte_eth_rx_burst(port, 0, m, BURST);

		if (k) {
			if (frames == 0)
				first = now;
			last = now;
			for (unsigned int i = 0; i < k; i++)
				sum += rte_pktmbuf_mtod(m[i], uint8_t *)[FRAME - 1];
			rte_pktmbuf_free_bulk(m, k);
			frames += k;
		} else if ((frames && now - last > idle) || now > end) {
			break;
		}
	}
	span = frames > 1 ? (double)(last - first) / (double)hz : 0;
	if (json)
		printf("{\"frames\": %" PRIu64 ", \"seconds\": %.3f, \"Mfps\": %.3f, \"touch\": %" PRIu64 "}\n",
		       frames, span, span > 0 ? (double)frames / span / 1e6 : 0.0, sum);
	else
		printf("raw memif pair: %" PRIu64 " frames of %u B in %.2f s: %.2f M frames/s (one way)\n",
		       frames, FRAME, span, span > 0 ? (double)frames / span / 1e6 : 0.0);
	return frames > 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	const char *sock = NULL;
	bool server = false, json = false;
	double seconds = 3.0;
	int cpu = -1;
	char prefix[64], vdev[512], lcore[32], run_dir[PATH_MAX];
	struct rte_eth_conf conf;
	struct rte_mempool *mp;
	uint64_t hz;
	uint16_t port;
	int rc;

	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "--server") == 0 || strcmp(argv[i], "--client") == 0) &&
		    i + 1 < argc) {
			server = argv[i][2] == 's';
			sock = argv[++i];
		} else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			cpu = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else {
			return usage(argv[0]);
		}
	}
	if (sock == NULL || seconds <= 0 || seconds > 60 || strlen(sock) > 200 || cpu < -1 ||
	    cpu > 1023)
		return usage(argv[0]);
	snprintf(lcore, sizeof(lcore), "--lcores=0@%d", cpu >= 0 ? cpu : server ? 0 : 1);
	if (server)
		unlink(sock); /* a stale socket of an earlier run */
	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-memif-probe-%ld", (long)getpid());
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,socket=%s,socket-abstract=no,id=0",
		 server ? "server" : "client", sock);
	{
		char *eal[] = { argv[0], "--no-huge", "--no-pci", "-m", "256", lcore,
				"--log-level=lib.eal:error", "--log-level=pmd.net.memif:error",
				prefix, "--no-telemetry", "--no-shconf", vdev };

		if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
			fprintf(stderr, "droce-memif-probe: EAL start failed\n");
			return 1;
		}
	}
	mp = rte_pktmbuf_pool_create("probe", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	memset(&conf, 0, sizeof(conf));
	if (mp == NULL || rte_eth_dev_count_avail() != 1 || rte_eth_dev_configure(0, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(0, 0, 1024, SOCKET_ID_ANY, NULL, mp) != 0 ||
	    rte_eth_tx_queue_setup(0, 0, 1024, SOCKET_ID_ANY, NULL) != 0 || rte_eth_dev_start(0) != 0) {
		fprintf(stderr, "droce-memif-probe: memif port start failed\n");
		return 1;
	}
	port = 0;
	hz = rte_get_tsc_hz();
	if (!wait_link(port, hz)) {
		fprintf(stderr, "droce-memif-probe: no peer on %s within %.0f s\n", sock, LINK_WAIT_S);
		rc = 1;
	} else if (server) {
		rc = run_server(port, seconds, hz, json);
	} else {
		uint64_t sent = run_client(port, mp, seconds, hz);

		if (!json)
			printf("raw memif pair: client sent %" PRIu64 " frames\n", sent);
		rc = sent > 0 ? 0 : 1;
	}
	rte_eth_dev_stop(port);
	snprintf(run_dir, sizeof(run_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	rmdir(run_dir); /* empty without shared config and telemetry */
	if (server)
		unlink(sock);
	return rc;
}
