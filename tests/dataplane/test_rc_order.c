/* SPDX-License-Identifier: BSD-3-Clause
 * Ordering and atomics end to end: FENCE holds a WQE until earlier READs
 * and atomics completed (their data is what the fenced WQE sends), and
 * atomics from several QPs on two engines hammering one 64-bit word give
 * exact totals, each value handed out exactly once; CMP_AND_SWP swaps only
 * when equal and always returns the value found.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "harness.h"

#define POLL_MS 20000
#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)
#define NQP 8

TestSuite(rc_order, .fini = h_stop, .timeout = 120);

/* A fenced SEND after a 1 MiB READ sends the bytes the READ brought in. */
Test(rc_order, fence_after_read)
{
	const size_t mib = 1u << 20;
	struct h_cfg cfg = { 0 };
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_wqe w;
	struct droce_rqe r;
	struct droce_cqe c[2];
	uint64_t v;

	h_start(&cfg, false);
	h_buf_init(&lb, mib + 4096, ALL_ACCESS);
	h_buf_init(&rb, 2 * mib, ALL_ACCESS);
	h_fill(rb.p, mib, 4242);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);

	r = h_rqe(0x10);
	h_rqe_sge(&r, &rb, mib, 8192);
	h_post_recv(p.qp[1], &r);

	w = h_wqe(1, DROCE_WR_RDMA_READ, DROCE_WQE_SIGNALED);
	h_wqe_sges(&w, &lb, 0, (uint32_t)mib, 4);
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	h_post_send(p.qp[0], &w);
	/* the last 4 KiB of the READ (they land last) and its first 4 KiB */
	w = h_wqe(2, DROCE_WR_SEND, DROCE_WQE_SIGNALED | DROCE_WQE_FENCE);
	h_wqe_sge(&w, &lb, mib - 4096, 4096);
	h_wqe_sge(&w, &lb, 0, 4096);
	h_post_send(p.qp[0], &w);

	cr_assert_eq(h_poll(p.scq[0], 2, c, POLL_MS), 2);
	cr_assert_eq(c[0].wr_id, 1, "the READ completes first (got wr_id %" PRIu64 ")", c[0].wr_id);
	cr_assert_eq(c[0].status, DROCE_WC_SUCCESS);
	cr_assert_eq(c[1].wr_id, 2);
	cr_assert_eq(c[1].status, DROCE_WC_SUCCESS);
	c[0] = h_poll1(p.rcq[1], POLL_MS, "fenced SEND");
	cr_assert_eq(c[0].status, DROCE_WC_SUCCESS);
	cr_assert_eq(c[0].byte_len, 8192);
	cr_assert_eq(memcmp(rb.p + mib, rb.p + mib - 4096, 4096), 0,
		     "the fenced SEND carried the READ buffer's tail before the READ data landed");
	cr_assert_eq(memcmp(rb.p + mib + 4096, rb.p, 4096), 0,
		     "the fenced SEND carried the READ buffer's head before the READ data landed");

	/* fenced WRITE after an atomic: it carries the atomic's result */
	v = 0x0102030405060708ull;
	memcpy(rb.p + mib + 65536, &v, 8);
	w = h_wqe(3, DROCE_WR_ATOMIC_FETCH_AND_ADD, 0); /* unsignaled */
	h_wqe_sge(&w, &lb, mib, 8);
	w.remote_addr = h_va(&rb, mib + 65536);
	w.rkey = rb.mr.rkey;
	w.compare_add = 5;
	h_post_send(p.qp[0], &w);
	w = h_wqe(4, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED | DROCE_WQE_FENCE);
	h_wqe_sge(&w, &lb, mib, 8);
	w.remote_addr = h_va(&rb, mib + 65536 + 64);
	w.rkey = rb.mr.rkey;
	h_post_send(p.qp[0], &w);
	c[0] = h_poll1(p.scq[0], POLL_MS, "fenced WRITE");
	cr_assert_eq(c[0].wr_id, 4);
	cr_assert_eq(c[0].status, DROCE_WC_SUCCESS);
	memcpy(&v, rb.p + mib + 65536 + 64, 8);
	cr_assert_eq(v, 0x0102030405060708ull, "fenced WRITE carried %#" PRIx64 ", not the atomic's result", v);
	memcpy(&v, rb.p + mib + 65536, 8);
	cr_assert_eq(v, 0x0102030405060708ull + 5);
}

struct hammer {
	struct h_pair p[NQP];
	struct droce_cq *scq, *rcq0, *scq1, *rcq1;
	struct h_buf res[NQP];
	struct h_buf target;
};

static void
hammer_setup(struct hammer *h)
{
	struct h_cfg cfg = { .engines = 2 };
	struct h_conn_opts o = h_conn_defaults(1024);
	bool eng_seen[2][2] = { { false } };

	memset(h, 0, sizeof(*h));
	h_start(&cfg, false);
	h->scq = h_cq_create(4096);
	h->rcq0 = h_cq_create(256);
	h->scq1 = h_cq_create(256);
	h->rcq1 = h_cq_create(256);
	cr_assert(h->scq && h->rcq0 && h->scq1 && h->rcq1);
	h_buf_init(&h->target, 4096, ALL_ACCESS);
	for (unsigned int q = 0; q < NQP; q++) {
		h_pair_create_ex(&h->p[q], 64, 16, h->scq, h->rcq0, h->scq1, h->rcq1, q % 2);
		o.udp_sport = (uint16_t)(0xc100 + q);
		h_pair_connect(&h->p[q], &o);
		for (unsigned int s = 0; s < 2; s++)
			eng_seen[s][droce_qp_engine(h->p[q].qp[s])] = true;
	}
	/* requesters and responders on both engines, sharing the CQs */
	cr_assert(eng_seen[0][0] && eng_seen[0][1] && eng_seen[1][0] && eng_seen[1][1],
		  "QPs not spread over the two engines");
}

/* NQP QPs x N FETCH_ADD(+1) on one counter: total exact, every old value handed out once. */
Test(rc_order, atomics_hammer_two_engines)
{
	static struct hammer h;
	unsigned int n = (unsigned int)h_env_ulong("DROCE_TEST_ATOMICS", 1000);
	unsigned int posted[NQP] = { 0 }, done[NQP] = { 0 }, total = 0;
	const unsigned int window = 16;
	uint8_t *seen;
	uint64_t counter;
	uint64_t deadline;

	hammer_setup(&h);
	deadline = tc_now_ms() + POLL_MS * 3;
	for (unsigned int q = 0; q < NQP; q++) {
		h_buf_init(&h.res[q], (size_t)n * 8, ALL_ACCESS);
		memset(h.res[q].p, 0xff, (size_t)n * 8);
	}
	while (total < NQP * n) {
		struct droce_cqe c[64];
		int k;

		for (unsigned int q = 0; q < NQP; q++) {
			while (posted[q] < n && posted[q] - done[q] < window) {
				struct droce_wqe w = h_wqe((uint64_t)q << 32 | posted[q],
							   DROCE_WR_ATOMIC_FETCH_AND_ADD, DROCE_WQE_SIGNALED);

				h_wqe_sge(&w, &h.res[q], (size_t)posted[q] * 8, 8);
				w.remote_addr = h_va(&h.target, 64);
				w.rkey = h.target.mr.rkey;
				w.compare_add = 1;
				h_post_send(h.p[q].qp[0], &w);
				posted[q]++;
			}
		}
		k = droce_cq_poll(h.scq, 64, c);
		for (int i = 0; i < k; i++) {
			unsigned int q = (unsigned int)(c[i].wr_id >> 32), s = (uint32_t)c[i].wr_id;

			cr_assert_lt(q, NQP, "wr_id %#" PRIx64, c[i].wr_id);
			cr_assert_eq(c[i].status, DROCE_WC_SUCCESS, "QP %u WQE %u status %u", q, s,
				     c[i].status);
			cr_assert_eq(s, done[q], "QP %u: completion of WQE %u, expected %u (order)", q, s,
				     done[q]);
			cr_assert_eq(c[i].opcode, DROCE_WC_FETCH_ADD);
			cr_assert_eq(c[i].byte_len, 8);
			cr_assert_eq(c[i].qp_num, h.p[q].qpn[0]);
			done[q]++;
			total++;
		}
		if (k == 0 && tc_now_ms() > deadline) {
			for (unsigned int q = 0; q < NQP; q++)
				cr_log_error("QP %u: posted %u done %u", q, posted[q], done[q]);
			cr_assert_fail("stuck at %u of %u completions", total, NQP * n);
		}
	}
	memcpy(&counter, h.target.p + 64, 8);
	cr_assert_eq(counter, (uint64_t)NQP * n, "counter %" PRIu64 ", expected %u", counter, NQP * n);
	seen = calloc(NQP * n, 1);
	cr_assert_not_null(seen);
	for (unsigned int q = 0; q < NQP; q++) {
		uint64_t prev = 0;

		for (unsigned int s = 0; s < n; s++) {
			uint64_t v;

			memcpy(&v, h.res[q].p + (size_t)s * 8, 8);
			cr_assert_lt(v, (uint64_t)NQP * n, "QP %u WQE %u returned %#" PRIx64, q, s, v);
			cr_assert_eq(seen[v], 0, "value %" PRIu64 " handed out twice", v);
			seen[v] = 1;
			/* one QP's atomics execute in its order */
			cr_assert(s == 0 || v > prev, "QP %u: WQE %u got %" PRIu64 " after %" PRIu64, q, s,
				  v, prev);
			prev = v;
		}
	}
	free(seen);
	h_expect_empty(h.scq, 10, "after the hammer");
}

/* CMP_AND_SWP: swaps only when equal, returns the value found; a race has one winner. */
Test(rc_order, cmp_swap_semantics)
{
	static struct hammer h;
	struct droce_cqe c[NQP];
	uint64_t v, winner = 0;
	unsigned int winners = 0;
	struct {
		uint64_t cmp, swap, want_orig, want_mem;
	} steps[] = {
		{ 100, 200, 100, 200 },   /* equal: swapped */
		{ 100, 300, 200, 200 },   /* not equal: unchanged, found value returned */
		{ 200, ~0ull, 200, ~0ull },
		{ ~0ull - 1, 5, ~0ull, ~0ull },
		{ ~0ull, 0, ~0ull, 0 },
	};

	hammer_setup(&h);
	for (unsigned int q = 0; q < NQP; q++)
		h_buf_init(&h.res[q], 64, ALL_ACCESS);
	v = 100;
	memcpy(h.target.p + 128, &v, 8);
	for (unsigned int i = 0; i < RTE_DIM(steps); i++) {
		struct droce_wqe w = h_wqe(i, DROCE_WR_ATOMIC_CMP_AND_SWP, DROCE_WQE_SIGNALED);

		h_wqe_sge(&w, &h.res[0], 0, 8);
		w.remote_addr = h_va(&h.target, 128);
		w.rkey = h.target.mr.rkey;
		w.compare_add = steps[i].cmp;
		w.swap = steps[i].swap;
		h_post_send(h.p[0].qp[0], &w);
		c[0] = h_poll1(h.scq, POLL_MS, "CMP_SWAP");
		cr_assert_eq(c[0].wr_id, i);
		cr_assert_eq(c[0].status, DROCE_WC_SUCCESS);
		cr_assert_eq(c[0].opcode, DROCE_WC_COMP_SWAP);
		memcpy(&v, h.res[0].p, 8);
		cr_assert_eq(v, steps[i].want_orig, "step %u returned %#" PRIx64 ", expected %#" PRIx64,
			     i, v, steps[i].want_orig);
		memcpy(&v, h.target.p + 128, 8);
		cr_assert_eq(v, steps[i].want_mem, "step %u left %#" PRIx64 ", expected %#" PRIx64, i, v,
			     steps[i].want_mem);
	}

	/* NQP QPs on two engines race CMP_SWAP(0 -> q + 1) on one word: one winner */
	v = 0;
	memcpy(h.target.p + 192, &v, 8);
	for (unsigned int q = 0; q < NQP; q++) {
		struct droce_wqe w = h_wqe(100 + q, DROCE_WR_ATOMIC_CMP_AND_SWP, DROCE_WQE_SIGNALED);

		h_wqe_sge(&w, &h.res[q], 8, 8);
		w.remote_addr = h_va(&h.target, 192);
		w.rkey = h.target.mr.rkey;
		w.compare_add = 0;
		w.swap = q + 1;
		h_post_send(h.p[q].qp[0], &w);
	}
	cr_assert_eq(h_poll(h.scq, NQP, c, POLL_MS), NQP);
	memcpy(&winner, h.target.p + 192, 8);
	cr_assert(winner >= 1 && winner <= NQP, "lock word %#" PRIx64, winner);
	for (unsigned int q = 0; q < NQP; q++) {
		memcpy(&v, h.res[q].p + 8, 8);
		cr_assert_eq(c[q].status, DROCE_WC_SUCCESS);
		if (v == 0) {
			winners++;
			cr_assert_eq(winner, q + 1, "QP %u saw 0 but the word holds %" PRIu64, q, winner);
		} else {
			cr_assert_eq(v, winner, "QP %u lost and saw %" PRIu64 ", the winner wrote %" PRIu64,
				     q, v, winner);
		}
	}
	cr_assert_eq(winners, 1, "%u winners", winners);
}

/*
 * Two engines: frames for QP1 (engine 1) arrive on engine 0 (droce_dp_inject
 * and QP0 send through engine 0's queue), which parses and checks them and
 * hands them over with the parse result.  Engine 0 drops a bad ICRC itself
 * (nothing goes over); engine 1 applies the P_Key check and places SEND,
 * SEND with immediate (its header found at the carried offset) and WRITE
 * bytes right.
 */
Test(rc_order, frames_handed_over_keep_their_parse)
{
	struct h_cfg cfg = { .engines = 2 };
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_engine_stats a0, a1, b0, b1;
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY) };
	static uint8_t frame[2048];
	struct h_pair p;
	struct h_buf lb, rb;
	struct droce_rqe r;
	struct droce_wqe w;
	struct droce_cqe c;
	size_t len;

	h_start(&cfg, false);
	h_buf_init(&lb, 8192, ALL_ACCESS);
	h_buf_init(&rb, 8192, ALL_ACCESS);
	h_pair_create_cqs(&p, 16, 16, 64);
	h_pair_connect(&p, &o);
	cr_assert_eq(droce_qp_engine(p.qp[0]), 0);
	cr_assert_eq(droce_qp_engine(p.qp[1]), 1);
	for (unsigned int i = 0; i < 2; i++) {
		r = h_rqe(0x80 + i);
		h_rqe_sge(&r, &rb, 1024 * i, 1024);
		h_post_recv(p.qp[1], &r);
	}
	h_fill(lb.p, 8192, 7);
	droce_engine_stats_get(0, &a0);
	droce_engine_stats_get(1, &a1);
	/* a SEND whose payload changed after its ICRC: dropped by engine 0 */
	f.pkey = 0xffff;
	f.dqpn = p.qpn[1];
	f.psn = H_PSN_A;
	len = h_build_frame(0, 1, &f, lb.p, 256, frame, sizeof(frame));
	frame[len - 8] ^= 0x40;
	h_inject_raw(0, 1, frame, len, DROCE_INJECT_TX);
	/* a SEND of another partition: handed over, dropped by engine 1 */
	f.pkey = 0x1234;
	h_inject_frame(0, 1, &f, lb.p, 256);
	h_expect_empty(p.rcq[1], 50, "a corrupt or foreign SEND");
	droce_engine_stats_get(0, &b0);
	droce_engine_stats_get(1, &b1);
	cr_assert_eq(b0.drops[DROCE_DROP_ICRC] - a0.drops[DROCE_DROP_ICRC], 1);
	cr_assert_eq(b1.drops[DROCE_DROP_ICRC], a1.drops[DROCE_DROP_ICRC]);
	cr_assert_eq(b0.forwarded - a0.forwarded, 1, "forwarded moved by %" PRIu64,
		     b0.forwarded - a0.forwarded);
	cr_assert_eq(b1.drops[DROCE_DROP_PKEY] - a1.drops[DROCE_DROP_PKEY], 1);
	cr_assert_eq(b1.rx_pkts, a1.rx_pkts);
	/* QP0's own SEND with immediate and WRITE (PSNs A .. A+3), then a forged SEND (A+4) */
	w = h_wqe(0x91, DROCE_WR_SEND_WITH_IMM, DROCE_WQE_SIGNALED);
	w.imm = rte_cpu_to_be_32(0xfeedf00d);
	h_wqe_sge(&w, &lb, 1000, 700);
	h_post_send(p.qp[0], &w);
	c = h_poll1(p.scq[0], POLL_MS, "SEND with immediate");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	c = h_poll1(p.rcq[1], POLL_MS, "SEND with immediate received");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(c.wr_id, 0x80);
	cr_assert_eq(c.byte_len, 700);
	cr_assert_eq(c.imm_or_inv, rte_cpu_to_be_32(0xfeedf00d));
	cr_assert(c.wc_flags & DROCE_WC_F_WITH_IMM);
	cr_assert_eq(memcmp(rb.p, lb.p + 1000, 700), 0);
	w = h_wqe(0x92, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 4096, 3000); /* three packets at MTU 1024 */
	w.remote_addr = h_va(&rb, 4096 + 13);
	w.rkey = rb.mr.rkey;
	h_post_send(p.qp[0], &w);
	c = h_poll1(p.scq[0], POLL_MS, "WRITE");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(memcmp(rb.p + 4096 + 13, lb.p + 4096, 3000), 0);
	f.pkey = 0xffff;
	f.psn = (H_PSN_A + 4) & DROCE_PSN_MASK;
	h_inject_frame(0, 1, &f, lb.p + 100, 256);
	c = h_poll1(p.rcq[1], POLL_MS, "forged SEND");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(c.wr_id, 0x81);
	cr_assert_eq(c.byte_len, 256);
	cr_assert_eq(memcmp(rb.p + 1024, lb.p + 100, 256), 0);
	droce_engine_stats_get(0, &b0);
	cr_assert_geq(b0.forwarded - a0.forwarded, 1 + 1 + 1 + 3);
}
