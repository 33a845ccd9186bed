/* SPDX-License-Identifier: BSD-3-Clause
 * Runtime with EAL: the embedded loopback config starts, ports come up,
 * frames cross the ring pair intact, ARP is answered, capture files are
 * readable by tshark.  Each Criterion test runs in its own process and
 * starts the EAL there (--no-huge --no-pci, unique --file-prefix).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "dataplane/wire.h"
#include "pmd_glue/port.h"
#include "pair_config.h"
#include "proc.h"

static void
start_default(void)
{
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_start(NULL), 0, "droce_start: %s", droce_last_error());
}

static void
stop_all(void)
{
	droce_stop();
	droce_shutdown();
}

TestSuite(runtime, .fini = stop_all, .timeout = 30);

/* Receives up to @n frames from @p within half a second. */
static uint16_t
rx_wait(struct droce_port *p, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t deadline = rte_get_tsc_cycles() + rte_get_tsc_hz() / 2;
	uint16_t got = 0;

	while (got < n && rte_get_tsc_cycles() < deadline)
		got += droce_port_rx_burst(p, 0, pkts + got, n - got);
	return got;
}

static void
make_path(struct droce_hdr_tmpl *t, struct droce_port *from, struct droce_port *to)
{
	struct droce_path path;

	memset(&path, 0, sizeof(path));
	path.src_mac = *droce_port_mac(from);
	path.dst_mac = *droce_port_mac(to);
	memcpy(path.src_gid, droce_port_gid(from, 0), 16);
	memcpy(path.dst_gid, droce_port_gid(to, 0), 16);
	path.udp_sport = 0xc123;
	droce_tmpl_init(t, &path);
}

/* Builds @n RC SEND_ONLY frames with PSNs psn0.. and sends them on @from. */
static void
send_frames(struct droce_port *from, struct droce_port *to, uint32_t psn0, unsigned int n,
	    uint32_t size, uint8_t (*frames)[2048], size_t *lens)
{
	struct rte_mempool *mp = droce_pktmbuf_pool();
	struct droce_hdr_tmpl t;
	uint8_t payload[1024];
	unsigned int i, j;

	cr_assert_leq(size, sizeof(payload));
	make_path(&t, from, to);
	for (i = 0; i < n; i++) {
		struct droce_pkt_fields f;
		struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
		size_t len;

		cr_assert_not_null(m);
		for (j = 0; j < size; j++)
			payload[j] = (uint8_t)(i * 13 + j);
		memset(&f, 0, sizeof(f));
		f.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY);
		f.pkey = 0xffff;
		f.dqpn = 0x12;
		f.psn = droce_psn_add(psn0, i);
		len = droce_build_frame(&t, rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m),
					&f, payload, size);
		cr_assert_gt(len, 0);
		cr_assert_not_null(rte_pktmbuf_append(m, (uint16_t)len));
		if (frames != NULL) {
			memcpy(frames[i], rte_pktmbuf_mtod(m, uint8_t *), len);
			lens[i] = len;
		}
		cr_assert_eq(droce_port_tx_burst(from, 0, &m, 1), 1);
	}
}

Test(runtime, loopback_starts_links_up)
{
	struct droce_port *p0, *p1;
	char mac[RTE_ETHER_ADDR_FMT_SIZE];

	start_default();
	cr_assert(droce_running());
	cr_assert_eq(droce_port_count(), 2);
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	cr_assert_not_null(p0);
	cr_assert_not_null(p1);
	cr_assert_null(droce_port_get(2));
	cr_expect(droce_port_link_up(p0), "port0 link down");
	cr_expect(droce_port_link_up(p1), "port1 link down");
	rte_ether_format_addr(mac, sizeof(mac), droce_port_mac(p1));
	cr_expect_str_eq(mac, "02:00:C6:12:00:02");
	cr_expect_eq(droce_port_mtu(p0), 1500);
	cr_expect_eq(droce_port_rx_queues(p0), 1);
	cr_expect(droce_gid_is_v4mapped(droce_port_gid(p0, 0)));
	cr_expect_eq(droce_port_find_gid(p1, droce_port_gid(p1, 0)), 0);
	cr_expect_eq(droce_port_find_gid(p1, droce_port_gid(p0, 0)), -1);
	cr_expect_not_null(droce_get_config());
	/* A second start is refused while running. */
	cr_expect_eq(droce_start(NULL), -1);
	cr_expect_eq(errno, EALREADY);
}

Test(runtime, stop_and_restart)
{
	start_default();
	droce_stop();
	cr_expect(!droce_running());
	cr_expect_eq(droce_port_count(), 0);
	start_default();
	cr_expect_eq(droce_port_count(), 2);
	cr_expect(droce_port_link_up(droce_port_get(1)));
}

Test(runtime, frames_cross_both_ways)
{
	static uint8_t sent[16][2048];
	size_t lens[16];
	struct rte_mbuf *got[16];
	struct droce_port *p[2];
	unsigned int dir, i;

	start_default();
	p[0] = droce_port_get(0);
	p[1] = droce_port_get(1);
	for (dir = 0; dir < 2; dir++) {
		struct droce_port *from = p[dir], *to = p[1 - dir];
		uint16_t n;

		send_frames(from, to, 100 * dir, 16, 200 + 100 * dir, sent, lens);
		n = rx_wait(to, got, 16);
		cr_assert_eq(n, 16, "direction %u: received %u of 16", dir, n);
		for (i = 0; i < n; i++) {
			struct droce_pkt pkt;
			uint32_t len = rte_pktmbuf_data_len(got[i]);
			const uint8_t *fr = rte_pktmbuf_mtod(got[i], const uint8_t *);

			cr_expect_eq(len, lens[i]);
			cr_expect(memcmp(fr, sent[i], lens[i]) == 0, "frame %u differs", i);
			cr_expect_eq(droce_parse_frame(fr, len, &pkt), DROCE_DROP_NONE);
			cr_expect_eq(droce_bth_psn(droce_pkt_bth(&pkt, fr)), 100 * dir + i);
			rte_pktmbuf_free(got[i]);
		}
	}
	{
		struct droce_port_stats s;

		droce_port_stats_get(p[0], &s);
		cr_expect_eq(s.tx_pkts, 16);
		cr_expect_eq(s.rx_pkts, 16);
	}
}

/* Crafts an ARP request from port0's side for @tip and returns the reply seen on port0. */
Test(runtime, arp_request_answered)
{
	static const struct rte_ether_addr asker = { { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x77 } };
	struct droce_port *p0, *p1;
	struct rte_mbuf *m, *got[4];
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	struct rte_ether_addr learnt;
	uint16_t n;

	start_default();
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);

	m = rte_pktmbuf_alloc(droce_pktmbuf_pool());
	cr_assert_not_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, 60);
	cr_assert_not_null(eth);
	memset(eth, 0, 60);
	memset(&eth->dst_addr, 0xff, 6);
	eth->src_addr = asker;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp = (struct rte_arp_hdr *)(eth + 1);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = asker;
	arp->arp_data.arp_sip = inet_addr("198.18.0.77");
	arp->arp_data.arp_tip = inet_addr("198.18.0.2");
	cr_assert_eq(droce_port_tx_burst(p0, 0, &m, 1), 1);

	/* port1 sees the request and answers it. */
	n = rx_wait(p1, got, 1);
	cr_assert_eq(n, 1);
	cr_assert(droce_port_handle_frame(p1, 0, got[0]), "ARP not consumed");

	n = rx_wait(p0, got, 1);
	cr_assert_eq(n, 1, "no ARP reply");
	eth = rte_pktmbuf_mtod(got[0], struct rte_ether_hdr *);
	arp = (struct rte_arp_hdr *)(eth + 1);
	cr_expect_eq(rte_be_to_cpu_16(eth->ether_type), RTE_ETHER_TYPE_ARP);
	cr_expect(rte_is_same_ether_addr(&eth->dst_addr, &asker));
	cr_expect(rte_is_same_ether_addr(&eth->src_addr, droce_port_mac(p1)));
	cr_expect_eq(rte_be_to_cpu_16(arp->arp_opcode), RTE_ARP_OP_REPLY);
	cr_expect(rte_is_same_ether_addr(&arp->arp_data.arp_sha, droce_port_mac(p1)),
		  "reply does not carry port1's MAC");
	cr_expect_eq(arp->arp_data.arp_sip, inet_addr("198.18.0.2"));
	cr_expect(rte_is_same_ether_addr(&arp->arp_data.arp_tha, &asker));
	cr_expect_eq(arp->arp_data.arp_tip, inet_addr("198.18.0.77"));
	rte_pktmbuf_free(got[0]);

	/* port1 learnt the asker. */
	cr_expect_eq(droce_port_arp_lookup(p1, inet_addr("198.18.0.77"), &learnt), 0);
	cr_expect(rte_is_same_ether_addr(&learnt, &asker));
	cr_expect_eq(droce_port_arp_lookup(p1, inet_addr("198.18.0.99"), &learnt), -1);

	/* A request for an address port1 does not own is consumed and not answered. */
	cr_assert_eq(droce_port_arp_request(p0, 0, inet_addr("198.18.0.99")), 0);
	cr_assert_eq(rx_wait(p1, got, 1), 1);
	cr_expect(droce_port_handle_frame(p1, 0, got[0]));
	cr_expect_eq(rx_wait(p0, got, 1), 0);
}

Test(runtime, arp_resolve_between_ports)
{
	struct droce_port *p0, *p1;
	struct rte_ether_addr mac;
	struct rte_mbuf *got[4];

	start_default();
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	cr_assert_eq(droce_port_arp_lookup(p0, inet_addr("198.18.0.2"), &mac), -1);
	cr_assert_eq(droce_port_arp_request(p0, 0, inet_addr("198.18.0.2")), 0);
	cr_assert_eq(rx_wait(p1, got, 1), 1);
	cr_assert(droce_port_handle_frame(p1, 0, got[0]));
	cr_assert_eq(rx_wait(p0, got, 1), 1);
	cr_assert(droce_port_handle_frame(p0, 0, got[0]));
	cr_assert_eq(droce_port_arp_lookup(p0, inet_addr("198.18.0.2"), &mac), 0);
	cr_expect(rte_is_same_ether_addr(&mac, droce_port_mac(p1)));
}

Test(runtime, non_arp_frame_not_consumed)
{
	struct droce_port *p0, *p1;
	struct rte_mbuf *got[1];

	start_default();
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	send_frames(p0, p1, 7, 1, 64, NULL, NULL);
	cr_assert_eq(rx_wait(p1, got, 1), 1);
	cr_expect(!droce_port_handle_frame(p1, 0, got[0]));
	rte_pktmbuf_free(got[0]);
}

Test(runtime, capture_read_by_tshark)
{
	const char *tshark = getenv("TSHARK");
	struct droce_config cfg;
	char path[64], spec[96], cmd[512], out[4096], expect[4096];
	struct rte_mbuf *got[8];
	struct droce_port *p0, *p1;
	size_t off = 0;
	unsigned int i;
	int fd, st;

	snprintf(path, sizeof(path), "/tmp/droce-cap-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(droce_config_load_default(&cfg), 0);
	snprintf(spec, sizeof(spec), "port0=%s", path);
	cr_assert_eq(droce_config_set_capture(&cfg, spec), 0);
	cr_assert_eq(droce_start_config(&cfg), 0, "%s", droce_last_error());
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	cr_assert(droce_port_capturing(p0));

	/* 5 frames out of port0 (captured as sent), 3 back into port0 (captured as received). */
	send_frames(p0, p1, 0xfffffe, 5, 100, NULL, NULL);
	cr_assert_eq(rx_wait(p1, got, 5), 5);
	for (i = 0; i < 5; i++)
		rte_pktmbuf_free(got[i]);
	send_frames(p1, p0, 40, 3, 32, NULL, NULL);
	cr_assert_eq(rx_wait(p0, got, 3), 3);
	for (i = 0; i < 3; i++)
		rte_pktmbuf_free(got[i]);
	droce_stop(); /* flushes and closes the capture */

	for (i = 0; i < 5; i++)
		off += (size_t)snprintf(expect + off, sizeof(expect) - off, "4\t%u\n",
					droce_psn_add(0xfffffe, i));
	for (i = 0; i < 3; i++)
		off += (size_t)snprintf(expect + off, sizeof(expect) - off, "4\t%u\n", 40 + i);

	if (tshark == NULL || tshark[0] == '\0') {
		unlink(path);
		cr_skip_test("tshark not found");
	}
	snprintf(cmd, sizeof(cmd),
		 "%s -n -r %s -T fields -e infiniband.bth.opcode -e infiniband.bth.psn 2>/dev/null",
		 tshark, path);
	st = tc_run(cmd, out, sizeof(out));
	cr_expect(st == 0, "tshark failed on %s", path);
	cr_expect_str_eq(out, expect);

	/* Direction flags and addresses survive too. */
	snprintf(cmd, sizeof(cmd),
		 "%s -n -r %s -T fields -e frame.interface_id -e ip.src -e ip.dst -e udp.dstport -e infiniband.bth.destqp 2>/dev/null | sort | uniq -c",
		 tshark, path);
	st = tc_run(cmd, out, sizeof(out));
	cr_expect(st == 0);
	cr_expect(strstr(out, "5 0\t198.18.0.1\t198.18.0.2\t4791\t0x000012") != NULL, "%s", out);
	cr_expect(strstr(out, "3 0\t198.18.0.2\t198.18.0.1\t4791\t0x000012") != NULL, "%s", out);

	/* Timestamps are wall-clock time (rte_pcapng's clock base primed right). */
	snprintf(cmd, sizeof(cmd), "%s -n -r %s -T fields -e frame.time_epoch 2>/dev/null | head -1",
		 tshark, path);
	tc_run(cmd, out, sizeof(out));
	{
		double t = atof(out), now = (double)time(NULL);

		cr_expect(t > now - 60 && t < now + 60, "capture timestamp %s, now %.0f", out, now);
	}
	unlink(path);
}

Test(runtime, capture_bad_path_refused)
{
	struct droce_config cfg;

	cr_assert_eq(droce_config_load_default(&cfg), 0);
	cr_assert_eq(droce_config_set_capture(&cfg, "port1=/nonexistent/dir/p1.pcapng"), 0);
	cr_assert_eq(droce_start_config(&cfg), -1);
	cr_expect(!droce_running());
	cr_expect(strstr(droce_last_error(), "[port1] capture = /nonexistent/dir/p1.pcapng") != NULL,
		  "%s", droce_last_error());
}

/* droce_start from a file holding the port pair's config for @o: its result. */
static int
start_from_file(const struct tc_pair *o)
{
	char text[4096], path[64];
	int n = tc_pair_config(text, sizeof(text), o), fd, rc;

	cr_assert_gt(n, 0);
	snprintf(path, sizeof(path), "/tmp/droce-cfg-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, (size_t)n), n);
	close(fd);
	rc = droce_start(path);
	unlink(path);
	return rc;
}

Test(runtime, dedicated_lcore_not_enabled)
{
	struct tc_pair o = { .eal_extra = "-l 0", .engines = 1, .lcores = "5" };

	cr_assert_eq(start_from_file(&o), -1);
	cr_expect(strstr(droce_last_error(), "[engines] lcores") != NULL, "%s", droce_last_error());
	cr_expect(strstr(droce_last_error(), "lcore 5") != NULL, "%s", droce_last_error());
}

/* Starts droce (the port pair, from a file) with @eal_extra on its EAL
 * line; the calling thread's CPUs after. */
static cpu_set_t
cpus_after_start(const char *eal_extra)
{
	struct tc_pair o = { .eal_extra = eal_extra };
	cpu_set_t set;

	cr_assert_eq(start_from_file(&o), 0, "%s", droce_last_error());
	cr_assert_eq(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
	return set;
}

/* Without core options the EAL would pin the thread (and its co-located
 * engine) to CPU 0, so that two droce processes share one CPU. */
Test(runtime, thread_keeps_its_cpus_without_core_options)
{
	cpu_set_t before, after;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		cr_skip_test("needs two CPUs");
	CPU_ZERO(&before);
	CPU_SET(0, &before);
	CPU_SET(1, &before);
	cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof(before), &before), 0);
	after = cpus_after_start("");
	cr_assert(CPU_EQUAL(&before, &after), "%d CPUs after start, 2 before", CPU_COUNT(&after));
}

Test(runtime, thread_pinned_when_the_config_chooses_cores)
{
	cpu_set_t after;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		cr_skip_test("needs two CPUs");
	after = cpus_after_start("-l 1");
	cr_assert_eq(CPU_COUNT(&after), 1);
	cr_assert(CPU_ISSET(1, &after));
}
