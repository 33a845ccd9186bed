/* SPDX-License-Identifier: BSD-3-Clause
 * The switch model (pmd_glue/switch.c, issue 25 section 5): ports of kind
 * = switch joined by a shared-buffer switch.  Frames are forwarded by MAC
 * (ARP flooded), no port sends faster than the line rate (on the switch's
 * clock and on the wall clock), a full buffer drops and counts, marking
 * follows RED between kmin and kmax on ECN-capable frames only, and in a
 * small incast DCQCN (on by default) removes the drops DCQCN off has.
 * Counts are asserted, never speeds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <droce/stats.h>

#include "harness.h"
#include "pmd_glue/switch.h"

#define POLL_MS 60000
#define MSG (64u << 10)
#define MAXP 8u

TestSuite(sw, .fini = h_stop, .timeout = 240);

static uint64_t
port_stat(unsigned int port, const char *name)
{
	struct droce_stat s[200];
	int n = droce_stats_port(port, s, RTE_DIM(s));
	uint64_t v;

	cr_assert_gt(n, 0, "stats of port%u", port);
	cr_assert_leq(n, (int)RTE_DIM(s));
	v = droce_stat_find(s, (unsigned int)n, name);
	cr_assert_neq(v, UINT64_MAX, "port%u: no counter %s", port, name);
	return v;
}

/*
 * Starts droce on @nports switch ports (portK: 198.18.0.K+1), [switch]
 * @sw, more sections @extra and, on the ports 1.., @sender_extra.
 */
static unsigned int dilation = 1;

static void
start(unsigned int nports, const char *sw, const char *extra, const char *sender_extra)
{
	static char text[8192];
	struct h_cfg c = { .text = text };
	int off;

	off = snprintf(text, sizeof(text),
		       "[eal]\nargs = --no-huge --no-pci -m 512 --log-level=lib.eal:warning\n"
		       "[engines]\nmode = colocated\ncount = 1\ntime_dilation = %u\n%s"
		       "[mempool]\nmbufs = 16383\ncache = 128\ndata_room = 2176\n"
		       "[switch]\n%s\n%s\n", dilation,
		       /* the time the test is off the CPU passes for nobody */
		       dilation > 1 ? "clock_stall_us = 1000\n" : "", sw, extra ? extra : "");
	for (unsigned int k = 0; k < nports; k++)
		off += snprintf(text + off, sizeof(text) - (size_t)off,
				"[port%u]\nkind = switch\nmac = 02:00:c6:12:00:%02x\n"
				"ipv4 = 198.18.0.%u\nmtu = 1500\ntxd = 32\n%s\n",
				k, k + 1, k + 1, k > 0 && sender_extra ? sender_extra : "");
	cr_assert_lt((size_t)off, sizeof(text));
	h_start(&c, false);
}

/* Sender k (port k) -> the receiver's QP k on port0. */
struct flow {
	struct droce_qp *snd, *rcv;
	struct droce_cq *scq, *rcq;
	struct h_buf lb, rb;
	unsigned int done;
};

static void
flows_up(struct flow *f, unsigned int n, size_t bytes)
{
	struct h_conn_opts o = h_conn_defaults(1024);

	/* 1 ms of droce's clock: a tail dropped is sent again soon, also when
	 * the clock runs slower than real time (time_dilation) */
	o.timeout = 8;
	for (unsigned int k = 1; k <= n; k++) {
		struct flow *x = &f[k];

		x->scq = h_cq_create(256);
		x->rcq = h_cq_create(256);
		x->snd = h_qp_create(k, 128, 16, x->scq, x->scq);
		x->rcv = h_qp_create(0, 16, 16, x->rcq, x->rcq);
		h_connect(x->snd, k, 0, droce_qp_num(x->rcv), H_PSN_A, H_PSN_B, &o);
		h_connect(x->rcv, 0, k, droce_qp_num(x->snd), H_PSN_B, H_PSN_A, &o);
		h_buf_init(&x->lb, bytes, DROCE_ACCESS_LOCAL_WRITE);
		h_buf_init(&x->rb, bytes, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
		h_fill(x->lb.p, bytes, 100 + k);
		x->done = 0;
	}
}

/* Every sender posts @msgs WRITEs of MSG bytes at once; all must succeed. */
static void
incast(struct flow *f, unsigned int n, unsigned int msgs)
{
	uint64_t end = tc_now_ms() + POLL_MS;
	unsigned int left = n * msgs;

	for (unsigned int k = 1; k <= n; k++)
		for (unsigned int i = 0; i < msgs; i++)
			h_post_write(f[k].snd, i, &f[k].lb, &f[k].rb, (size_t)i * MSG, MSG);
	while (left > 0) {
		cr_assert_lt(tc_now_ms(), end, "incast: %u WRITEs left after %u ms", left, POLL_MS);
		for (unsigned int k = 1; k <= n; k++) {
			struct droce_cqe c[8];
			int got = h_poll(f[k].scq, 8, c, 0);

			for (int i = 0; i < got; i++)
				cr_assert_eq(c[i].status, DROCE_WC_SUCCESS, "sender %u: WRITE status %u",
					     k, c[i].status);
			f[k].done += (unsigned int)got;
			left -= (unsigned int)got;
		}
		droce_engines_progress();
	}
	for (unsigned int k = 1; k <= n; k++)
		cr_assert_eq(h_check_fill(f[k].rb.p, (size_t)msgs * MSG, 100 + k), -1,
			     "sender %u: data did not arrive intact", k);
}

static uint64_t
sum_ports(unsigned int from, unsigned int to, const char *name)
{
	uint64_t v = 0;

	for (unsigned int k = from; k <= to; k++)
		v += port_stat(k, name);
	return v;
}

static uint64_t
qp_stat(const struct droce_qp *qp, const char *name)
{
	struct droce_stat s[160];
	int n = droce_dp_qp_stats(qp, s, RTE_DIM(s));
	uint64_t v;

	cr_assert_gt(n, 0);
	v = droce_stat_find(s, (unsigned int)n, name);
	cr_assert_neq(v, UINT64_MAX, "no QP counter %s", name);
	return v;
}

/* The RED curve: 0 to kmin, linear to pmax at kmax, 1 above; kmax 0 never. */
Test(sw, red_curve)
{
	const uint64_t one = UINT64_C(1) << 32, half = one / 2;

	cr_assert_eq(droce_switch_mark_thr(1000, 3000, half, 0), 0);
	cr_assert_eq(droce_switch_mark_thr(1000, 3000, half, 1000), 0);
	cr_assert_eq(droce_switch_mark_thr(1000, 3000, half, 2000), half / 2);
	cr_assert_eq(droce_switch_mark_thr(1000, 3000, half, 3000), half);
	cr_assert_eq(droce_switch_mark_thr(1000, 3000, half, 3001), one);
	cr_assert_eq(droce_switch_mark_thr(0, 0, one, 1u << 20), 0, "kmax 0: no marking");
	cr_assert_eq(droce_switch_mark_thr(5000, 5000, one, 5000), 0);
	cr_assert_eq(droce_switch_mark_thr(5000, 5000, one, 5001), one);
}

Test(sw, bad_config_refused)
{
	struct h_cfg c = { .text = "[eal]\nargs = --no-huge --no-pci -m 256\n"
				   "[switch]\nkmin = 64K\nkmax = 32K\n"
				   "[port0]\nkind = switch\nipv4 = 198.18.0.1\n" };

	cr_assert_eq(h_start(&c, true), -1);
	cr_assert(strstr(droce_last_error(), "[switch]") != NULL, "%s", droce_last_error());
	c.text = "[eal]\nargs = --no-huge --no-pci -m 256\n[switch]\nrate = 0\n"
		 "[port0]\nkind = switch\nipv4 = 198.18.0.1\n";
	cr_assert_eq(h_start(&c, true), -1);
	cr_assert(strstr(droce_last_error(), "rate") != NULL, "%s", droce_last_error());
	/* memif links: a socket to serve them on, a local switch port to run them */
	c.text = "[eal]\nargs = --no-huge --no-pci -m 256\n[switch]\nmemif_links = 1\n"
		 "[port0]\nkind = switch\nipv4 = 198.18.0.1\n";
	cr_assert_eq(h_start(&c, true), -1);
	cr_assert(strstr(droce_last_error(), "memif_socket") != NULL, "%s", droce_last_error());
	c.text = "[eal]\nargs = --no-huge --no-pci -m 256\n[switch]\nmemif_links = 1\n"
		 "memif_socket = /tmp/droce-test-swlink.sock\n"
		 "[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\n"
		 "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n";
	cr_assert_eq(h_start(&c, true), -1);
	cr_assert(strstr(droce_last_error(), "kind = switch") != NULL, "%s", droce_last_error());
	c.text = "[eal]\nargs = --no-huge --no-pci -m 256\n[switch]\nmemif_links = 17\n"
		 "memif_socket = /tmp/droce-test-swlink.sock\n"
		 "[port0]\nkind = switch\nipv4 = 198.18.0.1\n";
	cr_assert_eq(h_start(&c, true), -1);
	cr_assert(strstr(droce_last_error(), "memif_links") != NULL, "%s", droce_last_error());
	/* no link on a switch without links */
	cr_assert_eq(droce_stats_switch_link(0, NULL, 0), -1);
	cr_assert_eq(errno, ENODEV);
}

/* ARP through the switch (flooded), RC WRITEs from two ports to a third,
 * and the link speed is the switch's rate. */
Test(sw, forwards_by_mac)
{
	struct flow f[3];
	struct rte_ether_addr mac;
	struct in_addr a;

	start(3, "rate = 1\nbuffer = 1M", NULL, NULL);
	cr_assert_eq(inet_pton(AF_INET, "198.18.0.1", &a), 1);
	cr_assert_eq(droce_dp_arp_resolve(2, a.s_addr, &mac, 2000), 0, "ARP over the switch");
	cr_assert(rte_is_same_ether_addr(&mac, droce_port_mac(droce_port_get(0))));
	cr_assert_eq(droce_port_link_speed(droce_port_get(1)), 1000, "link speed = the switch's rate");
	flows_up(f, 2, 2 * MSG);
	incast(f, 2, 2);
	cr_assert_geq(port_stat(0, "switch_dequeued_bytes"), 4 * MSG);
	cr_assert_eq(sum_ports(0, 2, "switch_tail_drops"), 0);
	cr_assert_eq(sum_ports(0, 2, "switch_in_unknown_dst"), 0);
	cr_assert_eq(port_stat(0, "switch_ce_marked"), 0, "kmax = 0: nothing marked");
}

/* 1 MiB from one port at 100 Mb/s: no faster than the line on the
 * switch's clock, nor on the wall clock (the switch's runs slower). */
Test(sw, line_rate_respected)
{
	struct flow f[2];
	uint64_t t0, wall_us, clock0, clock_us, bytes;

	start(2, "rate = 0.1\nbuffer = 4M", NULL, NULL);
	/* the wall clock starts first: the switch's clock advances when the
	 * switch is served, so the value read below may be as old as the last
	 * service in flows_up (a loaded machine had the engine off the CPU
	 * for milliseconds there, and the switch seemed to run ahead) */
	t0 = tc_now_ms();
	flows_up(f, 1, 16 * MSG);
	clock0 = port_stat(0, "switch_clock_us");
	incast(f, 1, 16);
	wall_us = (tc_now_ms() - t0 + 1) * 1000;
	clock_us = port_stat(0, "switch_clock_us") - clock0;
	bytes = port_stat(0, "switch_dequeued_bytes");
	cr_assert_geq(bytes, 16 * MSG);
	/* frame bytes only (no preamble, gap, FCS): below the line's bits */
	cr_assert_leq(bytes * 8 / 100, clock_us, "%" PRIu64 " bytes in %" PRIu64 " us of the switch's clock",
		      bytes, clock_us);
	cr_assert_leq(clock_us, wall_us + 1000);
	cr_assert_leq(bytes * 8 / 100, wall_us);
	cr_assert_eq(port_stat(0, "switch_tail_drops"), 0);
}

/* a 25 Gb/s switch played 1000 times slower (25 Mb/s of real time), so
 * ConnectX's DCQCN timers (microseconds) meet the fabric they are made
 * for; 1 MiB in flight against a 512 KiB buffer */
#define INCAST_DILATION 1000
#define INCAST_SW "rate = 25\nbuffer = 512K\nkmin = 20K\nkmax = 100K\npmax = 0.2\nseed = 7"

/* DCQCN off: four senders overflow the buffer; every drop is counted where
 * it happened and recovered by the RC retransmissions. */
Test(sw, incast_dcqcn_off_drops)
{
	struct flow f[5];
	uint64_t drops;

	dilation = INCAST_DILATION;
	start(5, INCAST_SW, "[dcqcn]\nrp_enable = 0", NULL);
	flows_up(f, 4, 4 * MSG);
	incast(f, 4, 4);
	drops = port_stat(0, "switch_tail_drops");
	cr_assert_gt(drops, 0, "the buffer never overflowed");
	cr_assert_eq(sum_ports(1, 4, "switch_in_drops"), drops);
	cr_assert_leq(port_stat(0, "switch_queue_max_bytes"), 512u << 10);
	uint64_t retx = 0;

	for (unsigned int k = 1; k <= 4; k++)
		retx += qp_stat(f[k].snd, "retransmits");
	cr_assert_gt(retx, 0, "drops without retransmissions");
	/* the queue went past kmax: marked, CNPs sent, none obeyed */
	cr_assert_gt(port_stat(0, "switch_ce_marked"), 0);
	cr_assert_eq(port_stat(0, "switch_ce_marked"), port_stat(0, "ecn_ce_received"));
	cr_assert_gt(port_stat(0, "cnp_sent"), 0);
}

/* The same incast with DCQCN on (ConnectX's defaults): no drop. */
Test(sw, incast_dcqcn_on_no_drops)
{
	struct flow f[5];

	dilation = INCAST_DILATION;
	start(5, INCAST_SW, NULL, NULL);
	flows_up(f, 4, 4 * MSG);
	incast(f, 4, 4);
	cr_assert_eq(port_stat(0, "switch_tail_drops"), 0,
		     "%" PRIu64 " drops: queue max %" PRIu64 ", %" PRIu64 " marked, %" PRIu64
		     " CNPs sent, %" PRIu64 " received, cuts %" PRIu64 " %" PRIu64 " %" PRIu64
		     " %" PRIu64 ", clock %" PRIu64 " us",
		     port_stat(0, "switch_tail_drops"), port_stat(0, "switch_queue_max_bytes"),
		     port_stat(0, "switch_ce_marked"), port_stat(0, "cnp_sent"),
		     sum_ports(1, 4, "cnp_received"), qp_stat(f[1].snd, "cc_rate_cuts"),
		     qp_stat(f[2].snd, "cc_rate_cuts"), qp_stat(f[3].snd, "cc_rate_cuts"),
		     qp_stat(f[4].snd, "cc_rate_cuts"), port_stat(0, "switch_clock_us"));
	cr_assert_gt(port_stat(0, "switch_ce_marked"), 0);
	cr_assert_leq(port_stat(0, "switch_ce_marked"), port_stat(0, "switch_ect_frames"));
	cr_assert_eq(port_stat(0, "switch_ce_marked"), port_stat(0, "ecn_ce_received"));
	cr_assert_gt(sum_ports(1, 4, "cnp_received"), 0);
	for (unsigned int k = 1; k <= 4; k++)
		cr_assert_eq(qp_stat(f[k].snd, "retransmits"), 0, "sender %u retransmitted", k);
}

/* Not-ECT frames (ecn = off on the senders) are never marked, however long
 * the queue; the buffer still drops. */
Test(sw, not_ect_never_marked)
{
	struct flow f[5];

	dilation = INCAST_DILATION;
	start(5, INCAST_SW, NULL, "ecn = off");
	flows_up(f, 4, 4 * MSG);
	incast(f, 4, 4);
	cr_assert_gt(port_stat(0, "switch_queue_max_bytes"), 100u << 10);
	cr_assert_eq(port_stat(0, "switch_ce_marked"), 0);
	cr_assert_eq(port_stat(0, "switch_ect_frames"), 0);
	cr_assert_eq(port_stat(0, "ecn_ce_received"), 0);
}

/* PFC: an ingress port holding pfc_xoff bytes is paused; nothing is
 * dropped though the buffer is small. */
Test(sw, pfc_pauses_instead_of_drops)
{
	struct flow f[5];

	start(5, "rate = 0.2\nbuffer = 128K\npfc = 1\npfc_xoff = 24K\npfc_xon = 12K",
	      "[dcqcn]\nrp_enable = 0", NULL);
	flows_up(f, 4, 4 * MSG);
	incast(f, 4, 4);
	cr_assert_eq(port_stat(0, "switch_tail_drops"), 0);
	cr_assert_gt(sum_ports(1, 4, "switch_in_pfc_pauses"), 0);
	cr_assert_leq(port_stat(0, "switch_queue_max_bytes"), 4 * (24u << 10) + 4 * 2048);
}
