/* SPDX-License-Identifier: BSD-3-Clause
 * Which QPs a pass visits (dataplane/engine_sched.c): many RC QPs, each with
 * a WRITE sent to a QPN nobody has (no ACK will come), so each has only its
 * retransmission timer:
 *  - passes then run none of them (the engine's qp_turns does not move);
 *  - an engine pause (a 300 ms sleep between passes) is not waiting time:
 *    it moves every waiting timer past it, as droce_rc_timers_lc does for
 *    the QPs it visits, without running them;
 *  - the timers still fire: every QP times out and sends its WRITE again, not
 *    before the timeout attribute plus the pause;
 *  - destroying the QPs takes them out of the wheel.
 * And the doorbells a pass takes (engine_chan.c's bitmap): one bit per QP,
 * all taken in one pass, a bell for a QP not attached yet kept for the next;
 * a QP whose window is full gets no turn until an ACK comes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataplane/engine_internal.h"
#include "harness.h"

#define NQP 512
#define GHOST (1u << 12) /* added to a QPN: nobody */
#define TIMEOUT 18       /* 4.096 us * 2^18: 1.07 s */

TestSuite(sched, .fini = h_stop, .timeout = 120);

static uint64_t
qp_turns(void)
{
	struct droce_engine_stats s;

	droce_engine_stats_get(0, &s);
	return s.qp_turns;
}

Test(sched, waiting_qps_cost_no_pass_and_their_timers_fire)
{
	struct h_cfg cfg = { .fallback_us = -1 }; /* only the test drives */
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
				      .max_recv_sge = 1 };
	static struct droce_qp *qp[NQP];
	struct droce_engine *eng;
	struct droce_cq *cq;
	struct h_buf lb, rb;
	uint64_t t0, t_first = 0, turns;
	unsigned int passes = 2000, left;

	h_start(&cfg, false);
	eng = droce_engine_get(0);
	cq = h_cq_create(2 * NQP);
	h_buf_init(&lb, 4096, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, 4096, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	o.timeout = TIMEOUT;
	for (unsigned int i = 0; i < NQP; i++) {
		qp[i] = droce_qp_create(DROCE_QPT_RC, &caps, cq, cq, H_PD, 0);
		cr_assert_not_null(qp[i], "droce_qp_create #%u: %s", i, strerror(errno));
		h_connect(qp[i], 0, 1, droce_qp_num(qp[i]) + GHOST, H_PSN_A, H_PSN_B, &o);
	}
	t0 = tc_now_ms();
	for (unsigned int i = 0; i < NQP; i++)
		h_post_write(qp[i], i, &lb, &rb, 0, 64);
	for (unsigned int i = 0; i < NQP; i++)
		h_wait_tx(qp[i], 1, "the WRITE");
	droce_progress();
	cr_assert_eq(eng->tw_count, NQP, "%u QPs in the timer wheel, expected %u", eng->tw_count, NQP);
	cr_assert_eq(eng->n_active_all, 0, "QPs with only a timer left on the active list");

	/* passes with nothing to do run no QP, nor does the pass after a pause */
	turns = qp_turns();
	for (unsigned int k = 0; k < passes; k++)
		droce_progress();
	usleep(300 * 1000);
	droce_progress();
	turns = qp_turns() - turns;
	cr_assert_eq(turns, 0, "%" PRIu64 " QP turns in %u passes with %u QPs waiting", turns,
		     passes + 1, NQP);
	cr_assert_eq(eng->tw_count, NQP);
	for (unsigned int i = 0; i < NQP; i++)
		cr_assert_eq(h_qp_stats(qp[i])->timeouts, 0, "QP #%u timed out before its time", i);

	/* the timers fire, not before the attribute (1.07 s) and the pause, and
	 * each QP resends */
	left = NQP;
	while (left > 0) {
		cr_assert_leq(tc_now_ms() - t0, 10000, "%u QPs never timed out", left);
		droce_progress();
		left = 0;
		for (unsigned int i = 0; i < NQP; i++) {
			if (h_qp_stats(qp[i])->timeouts == 0) {
				left++;
				continue;
			}
			if (t_first == 0)
				t_first = tc_now_ms();
		}
	}
	cr_assert_geq(t_first - t0, 1300, "a timer fired %" PRIu64 " ms after the posts (1,070 ms "
		      "timeout, 300 ms pause)", t_first - t0);
	for (unsigned int i = 0; i < NQP; i++)
		cr_assert_geq(h_qp_stats(qp[i])->tx_pkts, 2, "QP #%u did not resend", i);

	/* destroyed while waiting: out of the wheel */
	for (unsigned int i = 0; i < NQP; i++)
		cr_assert_eq(droce_qp_destroy(qp[i]), 0);
	droce_progress();
	cr_assert_eq(eng->tw_count, 0, "%u destroyed QPs still in the wheel", eng->tw_count);
	cr_assert_eq(eng->n_active_all, 0);
}

/*
 * Doorbells (engine_chan.c): a post rings its QP's bit in the engine's
 * bitmap, no channel message.  QPs in several leaf words each post, half of
 * them twice (a bell already rung); one pass takes every bit (all three
 * levels zero after it) and gives each QP one turn, in which it sends all
 * it was rung for.  A bell rung for an index whose ATTACH the engine has not
 * taken yet is rung again for the next pass, which then finds the QP.
 */
#define NBELL 200 /* indices 0..199: four leaf words */

static bool
leaf_rung(const struct droce_engine *eng, uint32_t i)
{
	return (atomic_load(&eng->bell_leaf[i >> 6]) >> (i & 63)) & 1;
}

static void
assert_rung(const struct droce_engine *eng, uint32_t i, const char *what)
{
	uint32_t w = i >> 6;

	cr_assert(leaf_rung(eng, i), "%s: index %u's leaf bit not set", what, i);
	cr_assert((atomic_load(&eng->bell_mid[w >> 6]) >> (w & 63)) & 1,
		  "%s: leaf word %u's bit not set in its mid word", what, w);
	cr_assert((atomic_load(&eng->bell_top) >> (w >> 6)) & 1,
		  "%s: mid word %u's bit not set in the top word", what, w >> 6);
}

static void
assert_no_bells(const struct droce_engine *eng, const char *what)
{
	cr_assert_eq(atomic_load(&eng->bell_top), 0, "%s: top word %#" PRIx64, what,
		     (uint64_t)atomic_load(&eng->bell_top));
	for (unsigned int m = 0; m < DROCE_BELL_MID; m++)
		cr_assert_eq(atomic_load(&eng->bell_mid[m]), 0, "%s: mid word %u", what, m);
	for (unsigned int w = 0; w < DROCE_BELL_LEAF; w++)
		cr_assert_eq(atomic_load(&eng->bell_leaf[w]), 0, "%s: leaf word %u", what, w);
}

Test(sched, doorbells_one_bit_per_qp_taken_in_one_pass)
{
	struct h_cfg cfg = { .fallback_us = -1 }; /* only the test drives */
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
				      .max_recv_sge = 1 };
	static struct droce_qp *qp[NBELL];
	struct droce_engine *eng;
	struct droce_cq *cq;
	struct droce_qp *late;
	struct droce_rqe r = h_rqe(7);
	struct h_buf lb, rb;
	uint64_t turns, loops;
	uint32_t li;

	h_start(&cfg, false);
	eng = droce_engine_get(0);
	cq = h_cq_create(4 * NBELL);
	h_buf_init(&lb, 4096, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, 4096, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	for (unsigned int i = 0; i < NBELL; i++) {
		qp[i] = droce_qp_create(DROCE_QPT_RC, &caps, cq, cq, H_PD, 0);
		cr_assert_not_null(qp[i], "droce_qp_create #%u: %s", i, strerror(errno));
		h_connect(qp[i], 0, 1, droce_qp_num(qp[i]) + GHOST, H_PSN_A, H_PSN_B, &o);
	}
	droce_progress();
	assert_no_bells(eng, "connected, nothing posted");
	for (unsigned int i = 0; i < NBELL; i++) {
		h_post_write(qp[i], i, &lb, &rb, 0, 64);
		if (i % 2 == 0)
			h_post_write(qp[i], NBELL + i, &lb, &rb, 64, 64); /* rung already */
	}
	for (unsigned int i = 0; i < NBELL; i++)
		assert_rung(eng, droce_qpn_index(droce_qp_num(qp[i])), "after the posts");
	turns = qp_turns();
	loops = eng->stats.loops;
	droce_progress();
	cr_assert_eq(eng->stats.loops, loops + 1, "droce_progress ran %" PRIu64 " passes",
		     eng->stats.loops - loops);
	assert_no_bells(eng, "after one pass");
	cr_assert_eq(qp_turns() - turns, NBELL, "%" PRIu64 " QP turns for %u rung QPs",
		     qp_turns() - turns, NBELL);
	for (unsigned int i = 0; i < NBELL; i++)
		cr_assert_eq(h_qp_stats(qp[i])->tx_pkts, i % 2 == 0 ? 2 : 1,
			     "QP #%u sent %" PRIu64 " WRITEs in the pass", i, h_qp_stats(qp[i])->tx_pkts);

	/* rung before the engine took its ATTACH: attached in the pass, found in the next */
	late = droce_qp_create(DROCE_QPT_RC, &caps, cq, cq, H_PD, 0);
	cr_assert_not_null(late);
	li = droce_qpn_index(droce_qp_num(late));
	cr_assert_null(*droce_engine_qpt_slot_lc(eng, li), "attached before any pass");
	cr_assert_eq(droce_qp_post_recv(late, &r), 0); /* a RESET QP takes receive slots */
	assert_rung(eng, li, "posted before the ATTACH was taken");
	turns = qp_turns();
	droce_progress();
	cr_assert_eq(*droce_engine_qpt_slot_lc(eng, li), late, "the pass did not attach it");
	assert_rung(eng, li, "the pass found no QP at the index: rung again");
	cr_assert_eq(qp_turns() - turns, 0, "a QP turn before its bell could be taken");
	droce_progress();
	assert_no_bells(eng, "the next pass");
	cr_assert_eq(qp_turns() - turns, 1, "the late QP's bell gave %" PRIu64 " turns",
		     qp_turns() - turns);

	cr_assert_eq(droce_qp_destroy(late), 0);
	for (unsigned int i = 0; i < NBELL; i++)
		cr_assert_eq(droce_qp_destroy(qp[i]), 0);
}

/*
 * What an idle pass skips must not lose work (issue 27): the channels are
 * looked into only when a sender flagged a message (chan_msgs), a pass takes
 * at most a burst of a channel's messages and then flags the rest for the
 * next pass; the transmit flush runs only for ports with frames waiting
 * (tx_ports).  100 frames injected (messages) before any pass: the first
 * pass takes DROCE_BURST of them, the passes after take the rest with no new
 * message sent; 40 frames injected for the wire all reach the peer port;
 * then passes are idle (droce_engines_progress says so) and look at no
 * channel (the flag stays down, nothing more handled).
 */
#define NINJ 100
#define NTXINJ 40

Test(sched, idle_passes_skip_nothing_due)
{
	struct h_cfg cfg = { .fallback_us = -1 }; /* only the test drives */
	/* not RoCE (an EtherType nobody handles): dropped and counted */
	uint8_t frame[64] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5 };
	struct droce_engine *eng;
	uint64_t tx0, drops0;
	unsigned int passes;

	h_start(&cfg, false);
	eng = droce_engine_get(0);
	for (unsigned int i = 0; i < 8 && droce_engines_progress(); i++)
		; /* start-up work (ARP, GSI) done */
	drops0 = eng->stats.drops[DROCE_DROP_ETHERTYPE];
	cr_assert_eq(eng->stats.injected, 0);
	for (unsigned int i = 0; i < NINJ; i++)
		cr_assert_eq(droce_dp_inject(0, 0, DROCE_INJECT_RX, frame, sizeof(frame)), 0);
	cr_assert_eq(eng->stats.injected, 0, "handled before any pass");
	cr_assert_neq(atomic_load(&eng->chan_msgs), 0, "no message flagged");
	cr_assert(droce_engines_progress());
	cr_assert_eq(eng->stats.injected, DROCE_BURST, "the first pass took %" PRIu64,
		     eng->stats.injected);
	cr_assert_neq(atomic_load(&eng->chan_msgs), 0, "the rest not flagged for the next pass");
	for (passes = 0; passes < 10 && eng->stats.injected < NINJ; passes++)
		droce_engines_progress();
	cr_assert_eq(eng->stats.injected, NINJ, "%" PRIu64 " of %u handled after %u more passes",
		     eng->stats.injected, NINJ, passes);
	cr_assert_eq(passes, (NINJ - 1) / DROCE_BURST, "%u more passes", passes);
	cr_assert_eq(eng->stats.drops[DROCE_DROP_ETHERTYPE] - drops0, NINJ);

	/* frames for the wire: flushed, received by the peer port, dropped there */
	tx0 = eng->stats.tx_pkts;
	for (unsigned int i = 0; i < NTXINJ; i++)
		cr_assert_eq(droce_dp_inject(0, 0, DROCE_INJECT_TX, frame, sizeof(frame)), 0);
	for (passes = 0; passes < 20 && droce_engines_progress(); passes++)
		;
	cr_assert_lt(passes, 20, "the engine never went idle");
	cr_assert_eq(eng->stats.injected, NINJ + NTXINJ);
	cr_assert_eq(eng->stats.tx_pkts - tx0, NTXINJ, "%" PRIu64 " of %u sent",
		     eng->stats.tx_pkts - tx0, NTXINJ);
	cr_assert_eq(eng->tx_ports, 0, "a port still flagged with nothing waiting");
	cr_assert_eq(eng->stats.drops[DROCE_DROP_ETHERTYPE] - drops0, NINJ + NTXINJ,
		     "the peer port received %" PRIu64 " of %u",
		     eng->stats.drops[DROCE_DROP_ETHERTYPE] - drops0 - NINJ, NTXINJ);

	/* idle: nothing flagged, nothing handled, the pass says so */
	cr_assert_eq(atomic_load(&eng->chan_msgs), 0);
	for (unsigned int i = 0; i < 100; i++)
		cr_assert_not(droce_engines_progress(), "idle pass #%u had work", i);
	cr_assert_eq(eng->stats.injected, NINJ + NTXINJ);
}

/*
 * A requester whose window is full waits off the active list (rc_req.c's
 * req_blocked): 400 one-packet WRITEs towards a QPN nobody has, no timer, so
 * the first 256 (the window) go out and then passes give the QP no turn; an
 * ACK for the first 128 brings it back, it sends 128 more and waits again.
 */
Test(sched, window_blocked_qp_waits_off_the_active_list)
{
	struct h_cfg cfg = { .fallback_us = -1 }; /* only the test drives */
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_ACK) };
	struct droce_cqe c[128];
	struct droce_engine *eng;
	struct h_buf lb, rb;
	struct h_pair p;
	uint64_t turns;
	int n = 0;

	h_start(&cfg, false);
	eng = droce_engine_get(0);
	h_buf_init(&lb, 4096, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, 4096, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	h_pair_create_cqs(&p, 512, 4, 1024);
	o.timeout = 0; /* no retransmission timer */
	h_connect(p.qp[0], 0, 1, p.qpn[1] + GHOST, H_PSN_A, H_PSN_B, &o);
	for (unsigned int i = 0; i < 400; i++)
		h_post_write(p.qp[0], i, &lb, &rb, 0, 64);
	h_wait_tx(p.qp[0], 256, "the first window");
	droce_progress();
	cr_assert_eq(h_qp_stats(p.qp[0])->tx_pkts, 256, "%" PRIu64 " WRITEs sent, the window is 256",
		     h_qp_stats(p.qp[0])->tx_pkts);
	cr_assert_eq(p.qp[0]->sched, DROCE_QP_SCHED_NONE, "window full, no timer: still scheduled");
	cr_assert_eq(eng->n_active_all, 0, "%u QPs active with nothing to send", eng->n_active_all);
	turns = qp_turns();
	for (unsigned int k = 0; k < 100; k++)
		droce_progress();
	cr_assert_eq(qp_turns() - turns, 0, "%" PRIu64 " turns of a window-blocked QP in 100 passes",
		     qp_turns() - turns);

	/* the ACK of the first 128 activates it: 128 more, then it waits again */
	f.pkey = 0xffff;
	f.dqpn = p.qpn[0];
	f.psn = (H_PSN_A + 127) & DROCE_PSN_MASK;
	f.aeth.syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	h_inject_frame_dir(1, 0, &f, NULL, 0, DROCE_INJECT_RX);
	h_wait_tx(p.qp[0], 384, "the window opened by 128");
	while (n < 128) {
		int k = h_poll(p.scq[0], 128 - n, c + n, 2000);

		cr_assert_gt(k, 0, "%d of the 128 acknowledged WRITEs completed", n);
		n += k;
	}
	for (int i = 0; i < 128; i++)
		cr_assert(c[i].wr_id == (uint64_t)i && c[i].status == DROCE_WC_SUCCESS,
			  "completion %d: wr_id %" PRIu64 " status %u", i, c[i].wr_id, c[i].status);
	droce_progress();
	cr_assert_eq(h_qp_stats(p.qp[0])->tx_pkts, 384, "%" PRIu64 " WRITEs sent, 384 fit",
		     h_qp_stats(p.qp[0])->tx_pkts);
	cr_assert_eq(eng->n_active_all, 0, "blocked again, still active");
	turns = qp_turns();
	for (unsigned int k = 0; k < 100; k++)
		droce_progress();
	cr_assert_eq(qp_turns() - turns, 0, "%" PRIu64 " turns in 100 passes, blocked again",
		     qp_turns() - turns);
}
