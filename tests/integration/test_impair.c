/* SPDX-License-Identifier: BSD-3-Clause
 * The impaired link (pmd_glue/impair.c) on the in-memory ring pair: each
 * impairment alone at a known probability and seed does what its counter
 * says, within a statistical tolerance of the expectation, and what arrives
 * matches it exactly; the same seed gives the same pattern; the impair_*
 * config keys are validated; a link set down passes nothing either way.
 * EAL with --no-huge --no-pci, started inside each forked Criterion test.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <droce/droce.h>

#include "dataplane/wire.h"
#include "pmd_glue/port.h"
#include "pair_config.h"
#include "proc.h"

#define N_FRAMES 20000u
#define PAYLOAD 64u
#define BURST 32u
#define PSN0 0xfff000u
#define DQPN 0x21u

/* The ring pair's config text with extra [port0] / [port1] lines. */
static void
pair_text(char *text, size_t n, const char *extra0, const char *extra1)
{
	struct tc_pair pair = { .port0_extra = extra0, .port1_extra = extra1 };

	cr_assert_geq(tc_pair_config(text, n, &pair), 0, "config text too long");
}

static void
stop_all(void)
{
	droce_stop();
	droce_shutdown();
}

TestSuite(impair, .fini = stop_all, .timeout = 60);

/* Starts the ring pair with extra [port0] / [port1] lines. */
static void
start_pair(const char *extra0, const char *extra1)
{
	static struct droce_config cfg;
	char text[2048];

	pair_text(text, sizeof(text), extra0, extra1);
	cr_assert_eq(droce_config_load_text("<test>", text, &cfg), 0, "%s", droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "droce_start_config: %s", droce_last_error());
}

/* ---- traffic: numbered frames from one port to the other ---- */

struct flow {
	struct droce_port *tx, *rx;
	struct droce_hdr_tmpl tmpl;
	uint32_t n;            /* frames to send */
	uint32_t sent;
	uint64_t received;     /* frames handed to us (not ARP) */
	uint64_t accepted;     /* parsed and byte-identical to what was sent */
	uint64_t wrong_bytes;  /* parsed, but not the bytes sent */
	uint64_t rejected[DROCE_DROP_COUNT];
	uint64_t out_of_order; /* arrived after a higher sequence number */
	int64_t max_seq;
	uint8_t *count;        /* arrivals per sequence number */
	uint32_t *log;         /* arrival order: seq, or 0x80000000 | reason */
	uint64_t log_n;
	uint64_t last_rx_tsc;
};

static void
flow_init(struct flow *fl, unsigned int from, unsigned int to, uint32_t n)
{
	struct droce_path path;

	memset(fl, 0, sizeof(*fl));
	fl->tx = droce_port_get(from);
	fl->rx = droce_port_get(to);
	cr_assert_not_null(fl->tx);
	cr_assert_not_null(fl->rx);
	fl->n = n;
	fl->max_seq = -1;
	fl->count = calloc(n, 1);
	fl->log = calloc(n * 3 + 16, sizeof(uint32_t));
	cr_assert(fl->count != NULL && fl->log != NULL);
	memset(&path, 0, sizeof(path));
	path.src_mac = *droce_port_mac(fl->tx);
	path.dst_mac = *droce_port_mac(fl->rx);
	memcpy(path.src_gid, droce_port_gid(fl->tx, 0), 16);
	memcpy(path.dst_gid, droce_port_gid(fl->rx, 0), 16);
	path.udp_sport = 0xc321;
	path.ip_id = 7;
	droce_tmpl_init(&fl->tmpl, &path);
}

static void
flow_fini(struct flow *fl)
{
	free(fl->count);
	free(fl->log);
	fl->count = NULL;
	fl->log = NULL;
}

/* The exact frame for sequence number @seq. */
static size_t
build(struct flow *fl, uint32_t seq, uint8_t *buf, size_t cap)
{
	struct droce_pkt_fields f;
	uint8_t payload[PAYLOAD];
	uint32_t j;

	for (j = 0; j < PAYLOAD; j++)
		payload[j] = (uint8_t)(seq * 29 + j * 3 + (seq >> 8));
	memset(&f, 0, sizeof(f));
	f.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY);
	f.pkey = 0xffff;
	f.dqpn = DQPN;
	f.psn = droce_psn_add(PSN0, seq);
	fl->tmpl.ip_id = (uint16_t)(7 + seq); /* the template counts IPv4 ids up */
	return droce_build_frame(&fl->tmpl, buf, cap, &f, payload, PAYLOAD);
}

static void
check_one(struct flow *fl, struct rte_mbuf *m)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint8_t want[512];
	struct droce_pkt pkt;
	struct droce_pkt_fields f;
	enum droce_drop why;
	int32_t d;
	size_t len;

	fl->received++;
	cr_assert_eq(m->nb_segs, 1);
	why = droce_parse_frame(frame, rte_pktmbuf_data_len(m), &pkt);
	if (why != DROCE_DROP_NONE) {
		fl->rejected[why]++;
		fl->log[fl->log_n++] = 0x80000000u | why;
		return;
	}
	droce_pkt_read_fields(&pkt, frame, &f);
	d = droce_psn_diff(f.psn, PSN0);
	if (d < 0 || (uint32_t)d >= fl->sent) {
		fl->wrong_bytes++;
		return;
	}
	len = build(fl, (uint32_t)d, want, sizeof(want));
	if (len != pkt.frame_len || memcmp(want, frame, len) != 0) {
		size_t k;

		for (k = 0; k < len && k < pkt.frame_len && want[k] == frame[k]; k++)
			;
		cr_log_warn("frame %d accepted with wrong bytes: len %zu/%u, first difference at %zu (%02x, sent %02x)",
			    d, (size_t)pkt.frame_len, (unsigned)len, k, k < pkt.frame_len ? frame[k] : 0,
			    k < len ? want[k] : 0);
		fl->wrong_bytes++;
		return;
	}
	fl->accepted++;
	fl->log[fl->log_n++] = (uint32_t)d;
	if (fl->count[d] < UINT8_MAX)
		fl->count[d]++;
	if (d < fl->max_seq)
		fl->out_of_order++;
	else
		fl->max_seq = d;
}

/* One round: send a burst, then receive everything that is there. */
static void
flow_step(struct flow *fl)
{
	struct rte_mbuf *pkts[BURST];
	uint16_t n = 0, i, got;

	if (fl->sent < fl->n) {
		n = (uint16_t)RTE_MIN(BURST, fl->n - fl->sent);
		cr_assert_eq(rte_pktmbuf_alloc_bulk(droce_pktmbuf_pool(), pkts, n), 0);
		for (i = 0; i < n; i++) {
			size_t len = build(fl, fl->sent + i, rte_pktmbuf_mtod(pkts[i], uint8_t *),
					   rte_pktmbuf_tailroom(pkts[i]));

			cr_assert_gt(len, 0);
			cr_assert_not_null(rte_pktmbuf_append(pkts[i], (uint16_t)len));
		}
		got = droce_port_tx_burst(fl->tx, 0, pkts, n);
		if (got < n)
			rte_pktmbuf_free_bulk(pkts + got, n - got);
		fl->sent += got;
	}
	/* Like an engine: the sender's queue is polled too (releases held frames). */
	droce_port_impair_poll(fl->tx, 0);
	do {
		got = droce_port_rx_burst(fl->rx, 0, pkts, BURST);
		for (i = 0; i < got; i++) {
			check_one(fl, pkts[i]);
			rte_pktmbuf_free(pkts[i]);
		}
		if (got != 0)
			fl->last_rx_tsc = rte_get_tsc_cycles();
	} while (got == BURST);
}

/* Sends everything, then receives until the link has been quiet for @quiet_us. */
static void
flow_run(struct flow *fl, uint32_t quiet_us)
{
	uint64_t hz = rte_get_tsc_hz(), deadline = rte_get_tsc_cycles() + 20 * hz;

	while (fl->sent < fl->n) {
		flow_step(fl);
		cr_assert_lt(rte_get_tsc_cycles(), deadline, "sending stalled at %u", fl->sent);
	}
	fl->last_rx_tsc = rte_get_tsc_cycles();
	for (;;) {
		/* Done when a poll made after @quiet_us of silence finds nothing
		 * (robust against the process being descheduled). */
		uint64_t t = rte_get_tsc_cycles();
		bool quiet = t - fl->last_rx_tsc >= hz / 1000000 * quiet_us;

		flow_step(fl);
		if (quiet && fl->last_rx_tsc < t)
			break;
	}
}

static uint64_t
rejected_total(const struct flow *fl)
{
	uint64_t t = 0;
	unsigned int i;

	for (i = 1; i < DROCE_DROP_COUNT; i++)
		t += fl->rejected[i];
	return t;
}

/* |got - n p| within 5 standard deviations of a binomial(n, p). */
static void
expect_binomial(const char *what, uint64_t got, uint64_t n, double p)
{
	double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));

	cr_expect(fabs((double)got - mean) <= 5 * sd + 1,
		  "%s: %llu, expected %.1f +- %.1f", what, (unsigned long long)got, mean, 5 * sd);
}

static struct droce_port_stats
stats_of(unsigned int port)
{
	struct droce_port_stats s;

	droce_port_stats_get(droce_port_get(port), &s);
	return s;
}

/* ---- each impairment alone ---- */

Test(impair, drop)
{
	struct droce_port_stats s;
	struct flow fl;
	uint32_t i;

	start_pair("impair_drop = 0.02\nimpair_seed = 1\n", "");
	flow_init(&fl, 0, 1, N_FRAMES);
	flow_run(&fl, 2000);
	s = stats_of(0);
	expect_binomial("dropped", s.impair_tx.dropped, N_FRAMES, 0.02);
	cr_expect_eq(fl.sent, N_FRAMES);
	cr_expect_eq(fl.received, N_FRAMES - s.impair_tx.dropped, "received %llu, sent %u, dropped %llu",
		     (unsigned long long)fl.received, fl.sent, (unsigned long long)s.impair_tx.dropped);
	cr_expect_eq(fl.accepted, fl.received);
	cr_expect_eq(fl.wrong_bytes, 0);
	cr_expect_eq(fl.out_of_order, 0);
	for (i = 0; i < N_FRAMES; i++)
		cr_assert_leq(fl.count[i], 1, "frame %u arrived %u times", i, fl.count[i]);
	cr_expect_eq(s.impair_tx.duplicated + s.impair_tx.reordered + s.impair_tx.delayed +
			     s.impair_tx.corrupted, 0);
	cr_expect_eq(s.tx_pkts, N_FRAMES - s.impair_tx.dropped);
	cr_expect_eq(stats_of(1).impair_rx.dropped, 0);
	flow_fini(&fl);
}

Test(impair, drop_on_receive)
{
	struct droce_port_stats s0, s1;
	struct flow fl;

	start_pair("", "impair_drop = 3%\nimpair_seed = 5\nimpair_dir = rx\n");
	flow_init(&fl, 0, 1, 5000);
	flow_run(&fl, 2000);
	s0 = stats_of(0);
	s1 = stats_of(1);
	cr_expect_eq(s0.impair_tx.dropped, 0);
	expect_binomial("rx dropped", s1.impair_rx.dropped, 5000, 0.03);
	cr_expect_eq(fl.received, 5000 - s1.impair_rx.dropped);
	cr_expect_eq(s1.rx_pkts, fl.received, "rx counter counts frames after impairment");
	cr_expect_eq(fl.wrong_bytes, 0);
	flow_fini(&fl);
}

Test(impair, duplicate)
{
	struct droce_port_stats s;
	struct flow fl;
	uint64_t twice = 0;
	uint32_t i;

	start_pair("impair_dup = 0.02\nimpair_seed = 2\n", "");
	flow_init(&fl, 0, 1, N_FRAMES);
	flow_run(&fl, 2000);
	s = stats_of(0);
	expect_binomial("duplicated", s.impair_tx.duplicated, N_FRAMES, 0.02);
	cr_expect_eq(fl.received, N_FRAMES + s.impair_tx.duplicated);
	/* Every arrival, duplicates included, is byte-identical to the frame sent. */
	cr_expect_eq(fl.accepted, fl.received);
	cr_expect_eq(fl.wrong_bytes, 0);
	for (i = 0; i < N_FRAMES; i++) {
		cr_assert(fl.count[i] == 1 || fl.count[i] == 2, "frame %u arrived %u times", i,
			  fl.count[i]);
		twice += fl.count[i] == 2;
	}
	cr_expect_eq(twice, s.impair_tx.duplicated);
	cr_expect_eq(s.tx_pkts, N_FRAMES + s.impair_tx.duplicated);
	flow_fini(&fl);
}

Test(impair, reorder)
{
	struct droce_port_stats s;
	struct flow fl;
	uint32_t i;

	start_pair("impair_reorder = 0.02\nimpair_seed = 3\n", "");
	flow_init(&fl, 0, 1, N_FRAMES);
	flow_run(&fl, 2000);
	s = stats_of(0);
	/* reordered counts frames actually overtaken; a few held at a lull are not. */
	cr_expect_gt(s.impair_tx.reordered, N_FRAMES * 0.02 / 2);
	cr_expect_leq(s.impair_tx.reordered, N_FRAMES * 0.02 + 5 * sqrt(N_FRAMES * 0.02));
	cr_expect_eq(fl.received, N_FRAMES, "reordering loses nothing");
	cr_expect_eq(fl.accepted, N_FRAMES);
	for (i = 0; i < N_FRAMES; i++)
		cr_assert_eq(fl.count[i], 1, "frame %u arrived %u times", i, fl.count[i]);
	cr_expect_gt(fl.out_of_order, 0);
	cr_expect_eq(fl.out_of_order, s.impair_tx.reordered,
		     "%llu frames arrived after a later one, counter says %llu reordered",
		     (unsigned long long)fl.out_of_order, (unsigned long long)s.impair_tx.reordered);
	flow_fini(&fl);
}

Test(impair, delay_some)
{
	struct droce_port_stats s;
	struct flow fl;
	uint32_t i;

	start_pair("impair_delay = 0.05\nimpair_delay_us = 200\nimpair_seed = 4\n", "");
	flow_init(&fl, 0, 1, 5000);
	flow_run(&fl, 5000);
	s = stats_of(0);
	expect_binomial("delayed", s.impair_tx.delayed, 5000, 0.05);
	cr_expect_eq(fl.received, 5000, "delay loses nothing");
	cr_expect_eq(fl.accepted, 5000);
	for (i = 0; i < 5000; i++)
		cr_assert_eq(fl.count[i], 1, "frame %u arrived %u times", i, fl.count[i]);
	/* Delayed frames arrive behind frames sent after them. */
	cr_expect_gt(fl.out_of_order, 0);
	cr_expect_leq(fl.out_of_order, s.impair_tx.delayed);
	flow_fini(&fl);
}

Test(impair, delay_latency)
{
	struct rte_mbuf *m;
	struct flow fl;
	uint64_t t0, t_arrive = 0, hz;

	start_pair("impair_delay_us = 3000\n", ""); /* every frame, 3 ms */
	flow_init(&fl, 0, 1, 1);
	hz = rte_get_tsc_hz();
	cr_assert_eq(rte_pktmbuf_alloc_bulk(droce_pktmbuf_pool(), &m, 1), 0);
	cr_assert_not_null(rte_pktmbuf_append(m, (uint16_t)build(&fl, 0, rte_pktmbuf_mtod(m, uint8_t *),
									rte_pktmbuf_tailroom(m))));
	t0 = rte_get_tsc_cycles();
	cr_assert_eq(droce_port_tx_burst(fl.tx, 0, &m, 1), 1, "a delayed frame counts as taken");
	fl.sent = 1;
	while (rte_get_tsc_cycles() - t0 < hz / 10 && fl.received == 0) {
		flow_step(&fl);
		if (fl.received != 0)
			t_arrive = rte_get_tsc_cycles();
	}
	cr_assert_eq(fl.accepted, 1);
	cr_expect_geq(t_arrive - t0, hz / 1000000 * 3000, "arrived after %.0f us",
		      (double)(t_arrive - t0) * 1e6 / (double)hz);
	cr_expect_eq(stats_of(0).impair_tx.delayed, 1);
	flow_fini(&fl);
}

Test(impair, corrupt)
{
	static const enum droce_drop csum[] = { DROCE_DROP_ICRC, DROCE_DROP_UDP_CSUM,
						DROCE_DROP_IPV4_CSUM };
	struct droce_port_stats s;
	struct flow fl;
	uint64_t by_csum = 0, rej;
	unsigned int i;

	start_pair("impair_corrupt = 0.01\nimpair_seed = 6\n", "");
	flow_init(&fl, 0, 1, N_FRAMES);
	flow_run(&fl, 2000);
	s = stats_of(0);
	expect_binomial("corrupted", s.impair_tx.corrupted, N_FRAMES, 0.01);
	cr_expect_eq(fl.received, N_FRAMES);
	rej = rejected_total(&fl);
	cr_expect_eq(fl.wrong_bytes, 0, "a corrupted frame passed the parser");
	cr_expect_eq(rej, s.impair_tx.corrupted, "rejected %llu, corrupted %llu",
		     (unsigned long long)rej, (unsigned long long)s.impair_tx.corrupted);
	cr_expect_eq(fl.accepted, N_FRAMES - s.impair_tx.corrupted);
	for (i = 0; i < RTE_DIM(csum); i++)
		by_csum += fl.rejected[csum[i]];
	/* Most bits are payload and headers under the ICRC / checksums; bits in
	 * length and type fields fail the earlier structural checks. */
	cr_expect_geq(by_csum * 10, rej * 7, "only %llu of %llu by ICRC or checksum",
		      (unsigned long long)by_csum, (unsigned long long)rej);
	for (i = 1; i < DROCE_DROP_COUNT; i++)
		if (fl.rejected[i] != 0)
			cr_log_info("corrupt: %llu x %s", (unsigned long long)fl.rejected[i],
				    droce_drop_name[i]);
	flow_fini(&fl);
}

/* ---- determinism and run-time control ---- */

static void
run_logged(struct flow *fl, const struct droce_impair_config *c)
{
	cr_assert_eq(droce_port_impair_set(droce_port_get(0), c), 0, "%s", droce_last_error());
	flow_init(fl, 0, 1, 5000);
	flow_run(fl, 2000);
}

Test(impair, same_seed_same_pattern)
{
	struct droce_impair_config c = { .drop = 0.03, .dup = 0.03, .corrupt = 0.02, .seed = 77,
					 .dir = DROCE_IMPAIR_DIR_TX };
	struct flow a, b, other;

	start_pair("", "");
	run_logged(&a, &c);
	run_logged(&b, &c);
	c.seed = 78;
	run_logged(&other, &c);
	cr_assert_gt(a.log_n, 4000);
	cr_expect_eq(a.log_n, b.log_n);
	cr_expect(memcmp(a.log, b.log, a.log_n * sizeof(a.log[0])) == 0,
		  "same seed, different arrivals");
	cr_expect(a.log_n != other.log_n || memcmp(a.log, other.log, a.log_n * sizeof(a.log[0])) != 0,
		  "another seed gave the same arrivals");
	flow_fini(&a);
	flow_fini(&b);
	flow_fini(&other);
}

Test(impair, set_at_run_time)
{
	struct droce_impair_config c, got;
	struct droce_port *p0;
	struct flow fl;

	start_pair("impair_drop = 0.5\n", "");
	p0 = droce_port_get(0);
	droce_port_impair_get(p0, &got);
	cr_expect(fabs(got.drop - 0.5) < 1e-12);
	/* Off: a perfect link. */
	memset(&c, 0, sizeof(c));
	cr_assert_eq(droce_port_impair_set(p0, &c), 0);
	flow_init(&fl, 0, 1, 2000);
	flow_run(&fl, 1000);
	cr_expect_eq(fl.accepted, 2000);
	cr_expect_eq(fl.out_of_order, 0);
	flow_fini(&fl);
	/* Bad values are refused and change nothing. */
	c.drop = 1.5;
	errno = 0;
	cr_expect_eq(droce_port_impair_set(p0, &c), -1);
	cr_expect_eq(errno, EINVAL);
	cr_expect(strstr(droce_last_error(), "drop") != NULL, "%s", droce_last_error());
	c.drop = 0;
	c.delay = 0.5;
	cr_expect_eq(droce_port_impair_set(p0, &c), -1);
	droce_port_impair_get(p0, &got);
	cr_expect_eq(got.drop, 0);
	cr_expect_eq(got.delay, 0);
	/* Everything dropped. */
	memset(&c, 0, sizeof(c));
	c.drop = 1;
	cr_assert_eq(droce_port_impair_set(p0, &c), 0);
	flow_init(&fl, 0, 1, 500);
	flow_run(&fl, 1000);
	cr_expect_eq(fl.received, 0);
	cr_expect_eq(stats_of(0).impair_tx.dropped, 500);
	flow_fini(&fl);
}

Test(impair, turning_off_releases_held_frames)
{
	struct droce_impair_config c = { .delay = 1, .delay_us = 1000000 };
	struct rte_mempool *mp;
	struct droce_port *p0;
	struct flow fl;
	unsigned int in_use;

	start_pair("", "");
	p0 = droce_port_get(0);
	mp = droce_pktmbuf_pool();
	in_use = rte_mempool_in_use_count(mp);
	cr_assert_eq(droce_port_impair_set(p0, &c), 0);
	flow_init(&fl, 0, 1, 100);
	while (fl.sent < 100)
		flow_step(&fl);
	cr_expect_eq(fl.received, 0, "held for a second");
	cr_expect_eq(rte_mempool_in_use_count(mp), in_use + 100);
	memset(&c, 0, sizeof(c));
	cr_assert_eq(droce_port_impair_set(p0, &c), 0);
	flow_run(&fl, 1000);
	cr_expect_eq(fl.accepted, 100);
	cr_expect_eq(rte_mempool_in_use_count(mp), in_use, "mbufs leaked");
	flow_fini(&fl);
}

Test(impair, link_down_drops_both_ways)
{
	struct droce_impair_config c = { .delay = 1, .delay_us = 1000000 };
	struct flow f01, f10;
	struct droce_port *p1;
	struct rte_mempool *mp;
	unsigned int in_use;

	start_pair("", "");
	p1 = droce_port_get(1);
	mp = droce_pktmbuf_pool();
	in_use = rte_mempool_in_use_count(mp);
	/* Frames held by a delay when the link goes down are dropped too. */
	cr_assert_eq(droce_port_impair_set(p1, &c), 0);
	flow_init(&f10, 1, 0, 50);
	while (f10.sent < 50)
		flow_step(&f10);
	flow_fini(&f10);

	droce_port_set_link(p1, false);
	cr_expect(!droce_port_link_is_set_up(p1));
	cr_expect(droce_port_link_up(p1), "the PMD link stays up");
	flow_init(&f01, 0, 1, 300);
	flow_run(&f01, 1000);
	cr_expect_eq(f01.sent, 300, "tx_burst takes the frames");
	cr_expect_eq(f01.received, 0);
	flow_fini(&f01);
	flow_init(&f10, 1, 0, 300);
	flow_run(&f10, 1000);
	cr_expect_eq(f10.sent, 300);
	cr_expect_eq(f10.received, 0);
	flow_fini(&f10);
	cr_expect_eq(stats_of(0).impair_tx.link_down, 300, "port0 -> cut port1: dropped at port0's tx");
	cr_expect_eq(stats_of(1).impair_tx.link_down, 300 + 50);
	cr_expect_eq(rte_mempool_in_use_count(mp), in_use, "mbufs leaked");

	droce_port_set_link(p1, true);
	memset(&c, 0, sizeof(c));
	cr_assert_eq(droce_port_impair_set(p1, &c), 0);
	flow_init(&f01, 0, 1, 300);
	flow_run(&f01, 1000);
	cr_expect_eq(f01.accepted, 300);
	flow_fini(&f01);
	flow_init(&f10, 1, 0, 300);
	flow_run(&f10, 1000);
	cr_expect_eq(f10.accepted, 300);
	flow_fini(&f10);
}

Test(impair, all_at_once_nothing_leaks)
{
	struct droce_port_stats s;
	struct flow fl;
	unsigned int in_use;

	start_pair("impair_drop = 0.01\nimpair_dup = 0.01\nimpair_reorder = 0.01\n"
		   "impair_delay = 0.01\nimpair_delay_us = 100\nimpair_corrupt = 0.001\n"
		   "impair_seed = 42\nimpair_dir = both\n", "");
	in_use = rte_mempool_in_use_count(droce_pktmbuf_pool());
	flow_init(&fl, 0, 1, N_FRAMES);
	flow_run(&fl, 3000);
	s = stats_of(0);
	cr_expect_eq(fl.wrong_bytes, 0);
	cr_expect_eq(fl.received, N_FRAMES - s.impair_tx.dropped + s.impair_tx.duplicated);
	cr_expect_eq(rejected_total(&fl), s.impair_tx.corrupted);
	cr_expect_gt(s.impair_tx.reordered + s.impair_tx.delayed, 0);
	cr_expect_eq(rte_mempool_in_use_count(droce_pktmbuf_pool()), in_use, "mbufs leaked");
	droce_port_stats_print(droce_port_get(0), stderr);
	flow_fini(&fl);
}

/* ---- config keys (no EAL needed) ---- */

static void
expect_bad(const char *extra0, const char *key, const char *val, const char *why)
{
	static struct droce_config cfg;
	char text[2048];
	const char *msg;

	pair_text(text, sizeof(text), extra0, "");
	errno = 0;
	cr_expect_eq(droce_config_load_text("impair.ini", text, &cfg), -1, "accepted: %s", extra0);
	cr_expect_eq(errno, EINVAL);
	msg = droce_last_error();
	cr_expect(strstr(msg, "impair.ini") != NULL, "no file in: %s", msg);
	cr_expect(strstr(msg, "[port0]") != NULL, "no section in: %s", msg);
	cr_expect(strstr(msg, key) != NULL, "no key %s in: %s", key, msg);
	cr_expect(strstr(msg, val) != NULL, "no value %s in: %s", val, msg);
	cr_expect(strstr(msg, why) != NULL, "no '%s' in: %s", why, msg);
}

Test(impair_config, bad_values)
{
	expect_bad("impair_drop = 1.5\n", "impair_drop", "1.5", "probability");
	expect_bad("impair_drop = -0.1\n", "impair_drop", "-0.1", "probability");
	expect_bad("impair_dup = abc\n", "impair_dup", "abc", "probability");
	expect_bad("impair_reorder = nan\n", "impair_reorder", "nan", "probability");
	expect_bad("impair_corrupt = 101%\n", "impair_corrupt", "101%", "probability");
	expect_bad("impair_corrupt = 0.1x\n", "impair_corrupt", "0.1x", "probability");
	expect_bad("impair_delay_us = 2000000\n", "impair_delay_us", "2000000", "microseconds");
	expect_bad("impair_delay = 0.5\n", "impair_delay", "0.5", "impair_delay_us");
	expect_bad("impair_dir = sideways\n", "impair_dir", "sideways", "tx, rx or both");
	expect_bad("impair_seed = -1\n", "impair_seed", "-1", "seed");
	expect_bad("impair_seed = 18446744073709551616\n", "impair_seed", "18446744073709551616",
		   "seed");
	expect_bad("impair_loss = 0.1\n", "impair_loss", "0.1", "unknown key");
}

Test(impair_config, good_values)
{
	static struct droce_config cfg;
	const struct droce_impair_config *c = &cfg.ports[0].impair, *c1 = &cfg.ports[1].impair;
	char text[2048];

	pair_text(text, sizeof(text),
		  "impair_drop = 1%\nimpair_dup = .25\nimpair_reorder = 0\nimpair_delay_us = 50\n"
		  "impair_corrupt = 1e-3\nimpair_seed = 18446744073709551615\nimpair_dir = both\n",
		  "");
	cr_assert_eq(droce_config_load_text("good.ini", text, &cfg), 0, "%s", droce_last_error());
	cr_expect(fabs(c->drop - 0.01) < 1e-12);
	cr_expect(fabs(c->dup - 0.25) < 1e-12);
	cr_expect_eq(c->reorder, 0);
	cr_expect_eq(c->delay_us, 50);
	cr_expect_eq(c->delay, 1.0, "delay_us alone delays every frame");
	cr_expect(fabs(c->corrupt - 0.001) < 1e-12);
	cr_expect_eq(c->seed, UINT64_MAX);
	cr_expect_eq(c->dir, DROCE_IMPAIR_DIR_BOTH);
	cr_expect(droce_impair_config_active(c));
	cr_expect(!droce_impair_config_active(c1));
	cr_expect_eq(c1->dir, DROCE_IMPAIR_DIR_TX, "default direction is tx");

	/* The command-line form (droce-loop --impair). */
	cr_assert_eq(droce_config_set_impair(&cfg, "port1:drop=0.2,seed=9,dir=rx"), 0, "%s",
		     droce_last_error());
	cr_expect(fabs(c1->drop - 0.2) < 1e-12);
	cr_expect_eq(c1->seed, 9);
	cr_expect_eq(c1->dir, DROCE_IMPAIR_DIR_RX);
	cr_expect(fabs(c->drop - 0.01) < 1e-12, "port0 untouched");
	cr_assert_eq(droce_config_set_impair(&cfg, "reorder=0.1,delay_us=10"), 0);
	cr_expect(fabs(c->reorder - 0.1) < 1e-12 && fabs(c1->reorder - 0.1) < 1e-12);
	cr_expect_eq(c1->delay, 1.0);
	cr_expect_eq(droce_config_set_impair(&cfg, "drop=2"), -1);
	cr_expect(strstr(droce_last_error(), "drop = 2") != NULL, "%s", droce_last_error());
	cr_expect_eq(droce_config_set_impair(&cfg, "port7:drop=0.1"), -1);
	cr_expect_eq(droce_config_set_impair(&cfg, "jitter=1"), -1);
	cr_expect_eq(droce_config_set_impair(&cfg, "drop"), -1);
}

/* ---- droce-loop over an impaired link ---- */

Test(impair_loop, loss_reported_not_failed, .timeout = 60)
{
	static char out[16384];
	int rc;

	rc = tc_run_prog("DROCE_LOOP", "-q -n 5000 -s 256 --impair drop=0.02,dup=0.02,reorder=0.02,corrupt=0.01,seed=3",
		      out, sizeof(out));
	cr_expect_eq(rc, 0, "droce-loop failed:\n%s", out);
	cr_expect(strstr(out, "port0: impair tx: dropped") != NULL, "no counters:\n%s", out);
	cr_expect(strstr(out, "droce-loop: PASS") != NULL, "%s", out);
	rc = tc_run_prog("DROCE_LOOP", "-q -n 10 --impair drop=2", out, sizeof(out));
	cr_expect_neq(rc, 0);
	cr_expect(strstr(out, "--impair drop=2: drop = 2") != NULL, "%s", out);
}
