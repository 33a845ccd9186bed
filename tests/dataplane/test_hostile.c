/* SPDX-License-Identifier: BSD-3-Clause
 * A hostile peer (issue 12 §2): frames crafted by hand from port0's side
 * (droce_dp_inject through the harness: race-free) at an RC QP on port1,
 * asserting droce's exact reaction -- the drop counter that moved or the NAK
 * the responder sent -- and that no byte of the target MR changed when the
 * access was refused (ASan watches everything outside it).
 *
 * Cases: forged and stale rkeys, VA + length wrapping 2^64, lengths past the
 * MR, a READ of 2 GiB, PSNs far outside the window both ways, MIDDLE / LAST
 * without FIRST, payloads over the path MTU, a frame truncated at every byte,
 * QPNs that do not exist, and a flood of duplicate READs (the responder's
 * resources stay bounded and the QP keeps working).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define POLL_MS 10000
#define LEN 16384
#define SEED 0x5eed
#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)
#define OPC(op) DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_##op)

TestSuite(hostile, .fini = h_stop, .timeout = 120);

static struct h_pair P;
static struct h_buf LB, RB; /* RB: the target MR on port1's side */

static void
setup(void)
{
	struct h_cfg cfg = { 0 };
	struct h_conn_opts o = h_conn_defaults(1024);

	h_start(&cfg, false);
	h_buf_init(&LB, LEN, ALL_ACCESS);
	h_buf_init(&RB, LEN, ALL_ACCESS);
	h_fill(LB.p, LEN, 1);
	h_fill(RB.p, LEN, SEED);
	h_pair_create_cqs(&P, 64, 64, 256);
	h_pair_connect(&P, &o);
}

/* A request from port0 to QP 1, P_Key the default (full member). */
static struct droce_pkt_fields
req(uint8_t op, uint32_t psn)
{
	struct droce_pkt_fields f = { .opcode = op, .pkey = 0xffff, .dqpn = P.qpn[1], .psn = psn };

	return f;
}

static struct droce_engine_stats
eng_stats(void)
{
	struct droce_engine_stats s;

	droce_engine_stats_get(P.qp[1]->eng->id, &s);
	return s;
}

static uint64_t
drops_total(const struct droce_engine_stats *s)
{
	uint64_t n = s->no_qp + s->qp_state_drops;

	for (unsigned int d = 1; d < DROCE_DROP_COUNT; d++)
		n += s->drops[d];
	return n;
}

static void
expect_rb_untouched(const char *what)
{
	long at = h_check_fill(RB.p, LEN, SEED);

	cr_assert_eq(at, -1, "%s: the target MR changed at byte %ld", what, at);
}

/* Injects @f with @plen bytes of LB, drives the engines, and returns how many
 * error NAKs QP 1 sent meanwhile. */
static uint64_t
inject_naks(const struct droce_pkt_fields *f, uint32_t plen)
{
	uint64_t before = h_qp_stats(P.qp[1])->rem_err_naks_tx;

	h_inject_frame(0, 1, f, LB.p, plen);
	h_spin(50);
	return h_qp_stats(P.qp[1])->rem_err_naks_tx - before;
}

Test(hostile, forged_rkey_write_naked)
{
	struct droce_pkt_fields f;

	setup();
	f = req(OPC(WRITE_ONLY), H_PSN_A);
	f.reth.va = h_va(&RB, 0);
	f.reth.rkey = RB.mr.rkey ^ 0x5a5a00;
	f.reth.len = 64;
	cr_assert_eq(inject_naks(&f, 64), 1, "one remote access NAK");
	expect_rb_untouched("WRITE with a forged rkey");
}

Test(hostile, stale_rkey_of_a_reused_key_index_naked)
{
	struct droce_pkt_fields f;
	struct h_buf old, fresh;
	uint32_t stale;

	setup();
	f = req(OPC(WRITE_ONLY), H_PSN_A);
	h_buf_init(&old, LEN, ALL_ACCESS);
	stale = old.mr.rkey;
	h_buf_free(&old);
	h_buf_init(&fresh, LEN, ALL_ACCESS); /* may take the freed index, with a new tag */
	h_fill(fresh.p, LEN, SEED + 1);
	cr_assert_neq(fresh.mr.rkey, stale);
	f.reth.va = h_va(&fresh, 0);
	f.reth.rkey = stale;
	f.reth.len = 64;
	cr_assert_eq(inject_naks(&f, 64), 1, "one remote access NAK");
	cr_assert_eq(h_check_fill(fresh.p, LEN, SEED + 1), -1, "the new MR was written through the stale key");
}

Test(hostile, va_plus_length_wrapping_2_64_naked)
{
	struct droce_pkt_fields f;

	setup();
	f = req(OPC(WRITE_ONLY), H_PSN_A);
	f.reth.va = UINT64_MAX - 15;
	f.reth.rkey = RB.mr.rkey;
	f.reth.len = 64;
	cr_assert_eq(inject_naks(&f, 64), 1, "one NAK");
	expect_rb_untouched("WRITE whose VA + length wraps");
}

Test(hostile, length_past_the_mr_naked)
{
	struct droce_pkt_fields f;

	setup();
	f = req(OPC(WRITE_ONLY), H_PSN_A);
	f.reth.va = h_va(&RB, LEN - 8);
	f.reth.rkey = RB.mr.rkey;
	f.reth.len = 64;
	cr_assert_eq(inject_naks(&f, 64), 1, "one NAK");
	expect_rb_untouched("WRITE running past the MR");
}

Test(hostile, read_of_2_gib_naked_without_responses)
{
	struct droce_pkt_fields f;
	uint64_t tx0;

	setup();
	f = req(OPC(READ_REQ), H_PSN_A);
	tx0 = h_qp_stats(P.qp[1])->tx_pkts;
	f.reth.va = h_va(&RB, 0);
	f.reth.rkey = RB.mr.rkey;
	f.reth.len = 0x80000000u;
	cr_assert_eq(inject_naks(&f, 0), 1, "one NAK");
	cr_assert_leq(h_qp_stats(P.qp[1])->tx_pkts - tx0, 1, "only the NAK left, no READ response");
}

Test(hostile, psns_far_outside_the_window_deliver_nothing)
{
	struct droce_pkt_fields f;
	struct droce_rqe r = h_rqe(0x51);
	struct droce_cqe c;

	setup();
	h_rqe_sge(&r, &RB, 0, 1024);
	h_post_recv(P.qp[1], &r);
	/* ahead by 2^22 (beyond any window): at most one sequence NAK */
	f = req(OPC(SEND_ONLY), (H_PSN_A + 0x400000) & DROCE_PSN_MASK);
	h_inject_frame(0, 1, &f, LB.p, 256);
	/* behind by 2^22: a duplicate, answered and never executed */
	f = req(OPC(SEND_ONLY), (H_PSN_A - 0x400000) & DROCE_PSN_MASK);
	h_inject_frame(0, 1, &f, LB.p, 256);
	h_expect_empty(P.rcq[1], 50, "SENDs far outside the PSN window");
	cr_assert_leq(h_qp_stats(P.qp[1])->seq_naks_tx, 1);
	expect_rb_untouched("SENDs outside the window");
	cr_assert_eq(h_qp_state(P.qp[1]), DROCE_QPS_RTS, "the QP survives");
	/* the expected PSN is still the one that works */
	f = req(OPC(SEND_ONLY), H_PSN_A);
	h_inject_frame(0, 1, &f, LB.p, 256);
	c = h_poll1(P.rcq[1], POLL_MS, "the SEND at the expected PSN");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(c.byte_len, 256);
	cr_assert_arr_eq(RB.p, LB.p, 256);
}

Test(hostile, middle_and_last_without_first_change_nothing)
{
	struct droce_pkt_fields f;

	setup();
	f = req(OPC(WRITE_MIDDLE), H_PSN_A);
	h_inject_frame(0, 1, &f, LB.p, 1024);
	f = req(OPC(WRITE_LAST), (H_PSN_A + 1) & DROCE_PSN_MASK);
	h_inject_frame(0, 1, &f, LB.p, 512);
	f = req(OPC(SEND_LAST), (H_PSN_A + 2) & DROCE_PSN_MASK);
	h_inject_frame(0, 1, &f, LB.p, 512);
	h_spin(50);
	cr_assert_geq(h_qp_stats(P.qp[1])->rem_err_naks_tx + h_qp_stats(P.qp[1])->seq_naks_tx, 1,
		      "answered with a NAK");
	expect_rb_untouched("MIDDLE / LAST without FIRST");
	h_expect_empty(P.rcq[1], 20, "no receive completion");
}

Test(hostile, payload_over_the_path_mtu_refused)
{
	struct droce_pkt_fields f;
	struct droce_engine_stats s0, s1;
	uint64_t naks;

	setup();
	f = req(OPC(WRITE_ONLY), H_PSN_A);
	s0 = eng_stats();
	f.reth.va = h_va(&RB, 0);
	f.reth.rkey = RB.mr.rkey;
	f.reth.len = 2048;
	naks = inject_naks(&f, 2048); /* path MTU 1024 */
	s1 = eng_stats();
	cr_assert(naks == 1 || drops_total(&s1) > drops_total(&s0), "neither NAKed nor dropped");
	expect_rb_untouched("WRITE ONLY over the path MTU");
}

Test(hostile, frame_truncated_at_every_byte_dropped)
{
	static uint8_t frame[4096];
	struct droce_pkt_fields f;
	struct droce_engine_stats s0, s1;
	size_t len;

	setup();
	f = req(OPC(WRITE_ONLY), H_PSN_A);
	f.reth.va = h_va(&RB, 0);
	f.reth.rkey = RB.mr.rkey;
	f.reth.len = 256;
	len = h_build_frame(0, 1, &f, LB.p, 256, frame, sizeof(frame));
	s0 = eng_stats();
	for (size_t cut = 1; cut < len; cut++)
		h_inject_raw(0, 1, frame, cut, DROCE_INJECT_RX);
	h_spin(50);
	s1 = eng_stats();
	cr_assert_eq(drops_total(&s1) - drops_total(&s0) + (s1.non_roce - s0.non_roce), len - 1,
		     "every truncation dropped and counted (%zu)", len - 1);
	cr_assert_eq(s1.rx_pkts, s0.rx_pkts, "a truncated frame was accepted");
	expect_rb_untouched("truncated WRITEs");
	/* the whole frame goes through */
	h_inject_raw(0, 1, frame, len, DROCE_INJECT_RX);
	h_spin(50);
	cr_assert_arr_eq(RB.p, LB.p, 256, "the whole WRITE did not land");
}

Test(hostile, frames_for_qpns_that_do_not_exist_dropped)
{
	static const uint32_t qpns[] = { 0xffffff, 0x000fc0, 0x123440, 2, 0 };
	struct droce_engine_stats s0, s1;

	setup();
	s0 = eng_stats();
	for (unsigned int i = 0; i < sizeof(qpns) / sizeof(qpns[0]); i++) {
		struct droce_pkt_fields f = req(OPC(WRITE_ONLY), H_PSN_A);

		f.dqpn = qpns[i];
		f.reth.va = h_va(&RB, 0);
		f.reth.rkey = RB.mr.rkey;
		f.reth.len = 64;
		h_inject_frame(0, 1, &f, LB.p, 64);
	}
	h_spin(50);
	s1 = eng_stats();
	/* 0xffffff is the multicast QPN: a group nobody on the port joined */
	cr_assert_eq(s1.mcast_no_group - s0.mcast_no_group, 1, "mcast_no_group moved by %" PRIu64,
		     s1.mcast_no_group - s0.mcast_no_group);
	cr_assert_eq(s1.no_qp - s0.no_qp, sizeof(qpns) / sizeof(qpns[0]) - 1,
		     "no_qp moved by %" PRIu64, s1.no_qp - s0.no_qp);
	expect_rb_untouched("WRITEs to QPNs that do not exist");
}

Test(hostile, duplicate_read_flood_stays_bounded)
{
	struct droce_pkt_fields f;
	uint64_t dups;

	setup();
	f = req(OPC(READ_REQ), H_PSN_A);
	f.reth.va = h_va(&RB, 0);
	f.reth.rkey = RB.mr.rkey;
	f.reth.len = 4096;
	h_inject_frame(0, 1, &f, NULL, 0); /* the first: executed */
	h_spin(20);
	for (unsigned int i = 0; i < 5000; i++) {
		h_inject_frame(0, 1, &f, NULL, 0); /* the same PSN: duplicates */
		if (i % 256 == 255)
			h_spin(1);
		cr_assert_leq(P.qp[1]->rd_resp_count, DROCE_RD_RESP_CAP);
	}
	h_spin(100);
	dups = h_qp_stats(P.qp[1])->dup_reads;
	cr_assert_gt(dups, 0, "duplicate READs not recognised");
	cr_assert_eq(h_qp_state(P.qp[1]), DROCE_QPS_RTS, "the flood broke the QP");
	/* the QP still executes new requests (the 4096-byte READ took 4 PSNs at MTU 1024) */
	f = req(OPC(WRITE_ONLY), (H_PSN_A + 4) & DROCE_PSN_MASK);
	f.reth.va = h_va(&RB, 8192);
	f.reth.rkey = RB.mr.rkey;
	f.reth.len = 128;
	h_inject_frame(0, 1, &f, LB.p, 128);
	h_spin(50);
	cr_assert_arr_eq(RB.p + 8192, LB.p, 128, "a WRITE after the flood did not land");
}
