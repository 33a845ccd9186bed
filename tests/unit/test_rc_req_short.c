/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's short way for READs and atomics (rc_req.c req_rd_short)
 * against the state machine: each case is set up twice on a fresh plain QP
 * (plain_qp.c), once given to the transmit turn (droce_rc_req_tx_lc, which
 * takes a fresh READ / atomic at sq_cur the short way) and once driven
 * through the machine's steps alone (droce_rc_req_step_lc from
 * CHECK_QP_STATE to DONE, no short way), and the two must leave the same:
 * packets counted, frames byte for byte, every send WQE's progress, the
 * whole QP (PSNs, sq_cur, rd_atomic_out, the timer, req_blocked, the RTT
 * sample, the counters, the template's IPv4 id) and the engine's counters.
 * The cases: lone and consecutive READs and atomics, the limits that block
 * (max_rd_atomic, a fence, the loss window), what the short way leaves to
 * the machine (a bad lkey, a short atomic SGE, inline, two SGEs, none, a
 * READ started before, a QP not sending), the budget, and no mbuf.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <rte_mbuf.h>

#include "dataplane/rc_internal.h"
#include "plain_qp.h"

#define MAX_FRAMES 8

/* What one turn left. */
struct outcome {
	unsigned int sent, nframes;
	uint32_t len[MAX_FRAMES];
	uint8_t frame[MAX_FRAMES][1200];
	struct droce_swqe swqe[PLAIN_SQ_SLOTS];
	struct droce_qp qp;
	struct droce_engine_stats eng_stats;
};

static struct outcome out[2];
static struct rte_mbuf *held[32];
static unsigned int nheld;

/* Empties the port's pool (the turn finds no mbuf); given back by capture(). */
static void
hold_all_mbufs(void)
{
	while (nheld < RTE_DIM(held) && (held[nheld] = rte_pktmbuf_alloc(qp->port->mp)) != NULL)
		nheld++;
	cr_assert_eq(tx_pool_free(), 0);
}

static void
capture(struct outcome *o, unsigned int sent)
{
	unsigned int nsegs;

	o->sent = sent;
	o->nframes = tx_count();
	cr_assert_leq(o->nframes, MAX_FRAMES);
	for (unsigned int i = 0; i < o->nframes; i++)
		o->len[i] = tx_frame(i, o->frame[i], sizeof(o->frame[i]), &nsegs);
	for (unsigned int i = 0; i < PLAIN_SQ_SLOTS; i++)
		o->swqe[i] = *droce_qp_swqe(qp, i);
	o->qp = *qp;
	/* what points into this run's plain memory */
	o->qp.eng = NULL;
	o->qp.port = NULL;
	o->qp.sq = NULL;
	o->qp.swqe = NULL;
	o->qp.rq = NULL;
	o->qp.rdmap = NULL;
	o->eng_stats = eng->stats;
	while (nheld > 0)
		rte_pktmbuf_free(held[--nheld]);
}

/* Runs @setup's case both ways (each on a fresh QP, in this process) and
 * compares; returns the short way's packets. */
static unsigned int
both_ways(void (*setup)(void), unsigned int budget)
{
	struct droce_rc_req_ctx c = { .budget = budget };
	enum droce_rc_req_state st = REQ_CHECK_QP_STATE;

	setup();
	capture(&out[0], droce_rc_req_tx_lc(qp, budget));
	tx_teardown();
	tx_setup();
	setup();
	qp->req_blocked = false; /* as the turn's entry does */
	for (unsigned int steps = 0; st != REQ_DONE; steps++) {
		cr_assert_lt(steps, 200, "the machine ends");
		st = droce_rc_req_step_lc(qp, st, &c);
	}
	capture(&out[1], c.sent);
	cr_assert_eq(out[0].sent, out[1].sent, "packets: short way %u, machine %u", out[0].sent,
		     out[1].sent);
	cr_assert_eq(out[0].nframes, out[1].nframes);
	for (unsigned int i = 0; i < out[0].nframes; i++) {
		cr_assert_eq(out[0].len[i], out[1].len[i], "frame %u's length", i);
		cr_assert_arr_eq(out[0].frame[i], out[1].frame[i], out[0].len[i], "frame %u's bytes", i);
	}
	for (unsigned int i = 0; i < PLAIN_SQ_SLOTS; i++)
		cr_assert_arr_eq(&out[0].swqe[i], &out[1].swqe[i], sizeof(out[0].swqe[i]),
				 "send WQE %u's progress", i);
	cr_assert_eq(out[0].qp.sq_cur, out[1].qp.sq_cur);
	cr_assert_eq(out[0].qp.psn_next, out[1].qp.psn_next);
	cr_assert_eq(out[0].qp.rd_atomic_out, out[1].qp.rd_atomic_out);
	cr_assert_eq(out[0].qp.req_blocked, out[1].qp.req_blocked);
	cr_assert_eq(out[0].qp.rto_deadline, out[1].qp.rto_deadline);
	cr_assert_arr_eq(&out[0].qp, &out[1].qp, sizeof(out[0].qp), "the whole QP");
	cr_assert_arr_eq(&out[0].eng_stats, &out[1].eng_stats, sizeof(out[0].eng_stats),
			 "the engine's counters");
	return out[0].sent;
}

/* A READ / atomic WQE with one SGE of @length bytes in local[] at @off. */
static struct droce_wqe *
rd(uint8_t opcode, uint32_t length, uint32_t off)
{
	struct droce_wqe *w = post(opcode, length);

	local_sge(w, opcode == DROCE_WR_RDMA_READ ? length : 8);
	w->sge[0].addr += off;
	w->remote_addr = 0x9000 + 8 * (uint64_t)qp->sq_avail;
	w->rkey = 0x4321;
	w->compare_add = 0x0102030405060708ull + qp->sq_avail;
	w->swap = 0x1112131415161718ull;
	return w;
}

TestSuite(rc_req_short, .init = tx_setup, .fini = tx_teardown);

static void
lone_fetch_add(void)
{
	qp->attr.timeout = 14;
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
}

static void
lone_cmp_swap(void)
{
	rd(DROCE_WR_ATOMIC_CMP_AND_SWP, 8, 64);
}

static void
lone_read(void)
{
	qp->attr.timeout = 14;
	rd(DROCE_WR_RDMA_READ, 64, 0);
}

static void
long_read(void)
{
	rd(DROCE_WR_RDMA_READ, 3000, 0); /* three responses at MTU 1024: one request */
}

/* The same with the QP's map of READ responses past a hole there (empty):
 * the short way asks through droce_rc_read_ask_lc then. */
static void
long_read_with_a_map(void)
{
	qp->rdmap = calloc(1, DROCE_RC_RDMAP_BITS / 8);
	cr_assert_not_null(qp->rdmap);
	rd(DROCE_WR_RDMA_READ, 3000, 0);
}

Test(rc_req_short, lone_reads_and_atomics)
{
	cr_assert_eq(both_ways(lone_fetch_add, 16), 1);
	cr_assert(out[0].qp.rto_deadline != 0, "the timer runs");
	cr_assert_eq(out[0].qp.psn_next, 101);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(lone_cmp_swap, 16), 1);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(lone_read, 16), 1);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(long_read, 16), 1);
	cr_assert_eq(out[0].qp.psn_next, 103, "the READ takes its three PSNs");
	cr_assert_eq(out[0].qp.sq_cur, 1);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(long_read_with_a_map, 16), 1);
	cr_assert_eq(out[0].qp.psn_next, 103);
}

/* max_rd_atomic 2 (plain_qp): two go, the third blocks the requester. */
static void
run_to_the_limit(void)
{
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
	rd(DROCE_WR_RDMA_READ, 100, 64);
	rd(DROCE_WR_ATOMIC_CMP_AND_SWP, 8, 256);
	rd(DROCE_WR_RDMA_READ, 8, 512);
}

/* A fence behind an outstanding atomic. */
static void
fenced_read(void)
{
	qp->attr.max_rd_atomic = 4;
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
	rd(DROCE_WR_RDMA_READ, 100, 64)->flags |= DROCE_WQE_FENCE;
}

/* After losses (cwnd 4): a third READ's responses do not fit. */
static void
loss_window(void)
{
	qp->attr.max_rd_atomic = 4;
	qp->cwnd = 4;
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
	rd(DROCE_WR_RDMA_READ, 3000, 64);
	rd(DROCE_WR_RDMA_READ, 64, 3072);
}

Test(rc_req_short, limits_block_as_the_machine)
{
	cr_assert_eq(both_ways(run_to_the_limit, 16), 2);
	cr_assert(out[0].qp.req_blocked);
	cr_assert_eq(out[0].qp.sq_cur, 2);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(fenced_read, 16), 1);
	cr_assert(out[0].qp.req_blocked);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(loss_window, 16), 2);
	cr_assert(out[0].qp.req_blocked);
	cr_assert_eq(out[0].qp.psn_next, 104);
}

static void
bad_lkey_second(void)
{
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
	rd(DROCE_WR_RDMA_READ, 64, 64)->sge[0].lkey ^= 0x100;
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 128);
}

static void
short_atomic_sge_second(void)
{
	rd(DROCE_WR_RDMA_READ, 64, 0);
	rd(DROCE_WR_ATOMIC_CMP_AND_SWP, 8, 64)->sge[0].length = 4;
}

static void
inline_atomic_second(void)
{
	rd(DROCE_WR_RDMA_READ, 64, 0);
	post(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8); /* inline, no SGE */
}

/* Two SGEs, and a READ of nothing (no SGE): the machine's, and sent. */
static void
two_sges_and_none(void)
{
	struct droce_wqe *w;

	qp->attr.max_rd_atomic = 4;
	w = rd(DROCE_WR_RDMA_READ, 96, 0);
	w->num_sge = 2;
	w->sge[0].length = 32;
	w->sge[1] = w->sge[0];
	w->sge[1].addr += 512;
	w->sge[1].length = 64;
	w = post(DROCE_WR_RDMA_READ, 0);
	w->flags = 0;
	w->rkey = 0x4321;
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 1024);
}

Test(rc_req_short, the_rest_left_to_the_machine)
{
	cr_assert_eq(both_ways(bad_lkey_second, 16), 1);
	cr_assert_eq(out[0].swqe[1].err, DROCE_ERR_LOC_PROT);
	cr_assert_eq(out[0].qp.sq_cur, 1, "nothing past it goes");
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(short_atomic_sge_second, 16), 1);
	cr_assert_eq(out[0].swqe[1].err, DROCE_ERR_LOC_PROT);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(inline_atomic_second, 16), 1);
	cr_assert_eq(out[0].swqe[1].err, DROCE_ERR_LOC_PROT);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(two_sges_and_none, 16), 3);
	cr_assert_eq(out[0].qp.sq_cur, 3);
}

/* A sent WRITE at the head, then a READ asked again (started: the
 * machine's), then a fresh atomic. */
static void
behind_a_write_and_a_reask(void)
{
	struct droce_swqe *s;

	qp->attr.max_rd_atomic = 4;
	post(DROCE_WR_RDMA_WRITE, 8);
	sent(0, 1);
	rd(DROCE_WR_RDMA_READ, 2048, 0);
	s = sent(1, 2);
	s->rd_counted = true;
	s->reask = true;
	s->sent_pkts = 0;
	qp->rd_atomic_out = 1;
	qp->sq_cur = 1;
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 2048);
}

/* A fresh atomic first, then the same READ: the short way, then the machine. */
static void
atomic_then_reask(void)
{
	struct droce_swqe *s;

	qp->attr.max_rd_atomic = 4;
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 2048);
	sent(0, 1);
	memset(droce_qp_swqe(qp, 0), 0, sizeof(struct droce_swqe)); /* fresh again */
	qp->sq_cur = 0;
	qp->psn_next = 100;
	rd(DROCE_WR_RDMA_READ, 2048, 0);
	s = droce_qp_swqe(qp, 1);
	s->started = s->rd_counted = s->reask = true;
	s->first_psn = 101;
	s->npkts = 2;
	qp->rd_atomic_out = 1;
}

Test(rc_req_short, started_reads_are_the_machines)
{
	cr_assert_eq(both_ways(behind_a_write_and_a_reask, 16), 2);
	cr_assert_eq(out[0].qp.sq_cur, 3);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(atomic_then_reask, 16), 2);
	cr_assert_eq(out[0].qp.sq_cur, 2);
}

static void
four_atomics(void)
{
	qp->attr.max_rd_atomic = 8;
	for (unsigned int i = 0; i < 4; i++)
		rd(i & 1 ? DROCE_WR_ATOMIC_CMP_AND_SWP : DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 64 * i);
}

static void
no_mbuf(void)
{
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
	hold_all_mbufs();
}

static void
no_mbuf_read(void)
{
	rd(DROCE_WR_RDMA_READ, 64, 0);
	hold_all_mbufs();
}

static void
not_sending(void)
{
	rd(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
	qp->req_state = DROCE_REQ_RNR_WAIT;
}

Test(rc_req_short, budget_mbufs_and_state)
{
	cr_assert_eq(both_ways(four_atomics, 3), 3);
	cr_assert_eq(out[0].qp.sq_cur, 3);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(four_atomics, 16), 4);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(no_mbuf, 16), 0);
	cr_assert(out[0].swqe[0].started && out[0].swqe[0].rd_counted, "started and counted");
	cr_assert_eq(out[0].qp.sq_cur, 0);
	cr_assert_eq(out[0].eng_stats.alloc_fail, 1);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(no_mbuf_read, 16), 0);
	cr_assert_eq(out[0].qp.psn_next, 100);
	tx_teardown();
	tx_setup();
	cr_assert_eq(both_ways(not_sending, 16), 0);
	cr_assert_not(out[0].swqe[0].started);
}
