/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_create_cq_ex(3): the start_poll / next_poll / end_poll iterator with
 * every ibv_wc_read_* accessor, completion timestamps from the engines'
 * clock (nanoseconds, increasing, near ibv_query_rt_values_ex's clock and
 * the wall clock), and the same CQ through the plain API: ibv_cq_ex_to_cq
 * with ibv_poll_cq, ibv_req_notify_cq and a completion channel.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "common.h"

TestSuite(cq_ex, .fini = tc_stop, .timeout = 90);

#define OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

static struct x_end A, B;

static uint64_t
rt_clock_ns(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	cr_assert_eq(ibv_query_rt_values_ex(ctx, &v), 0);
	cr_assert_eq(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK);
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull + (uint64_t)v.raw_clock.tv_nsec;
}

static uint64_t
wall_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

Test(cq_ex, iterator_accessors_and_timestamps)
{
	struct ibv_poll_cq_attr pa = { 0 };
	uint64_t before, after, wall0, wall1, prev_ts = 0;
	int n = 0, rc;

	x_pair(&A, &B, IBV_QPT_RC, OPS, 64);
	/* nothing yet: ENOENT, and the CQ stays usable (no end_poll) */
	cr_assert_eq(ibv_start_poll(A.scq, &pa), ENOENT);
	pa.comp_mask = 1;
	cr_assert_eq(ibv_start_poll(A.scq, &pa), EINVAL);
	pa.comp_mask = 0;

	for (int i = 0; i < 8; i++)
		x_recv(&B, 1000 + i, 4096 * i, 4096);
	before = rt_clock_ns(A.ctx);
	wall0 = wall_ns();
	ibv_wr_start(A.qpx);
	for (int i = 0; i < 8; i++) {
		A.qpx->wr_id = 500 + i;
		A.qpx->wr_flags = IBV_SEND_SIGNALED;
		tc_fill(A.buf + 4096 * i, 100 + i, i);
		ibv_wr_send_imm(A.qpx, htonl(0xa0 + i));
		ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf + 4096 * i, 100 + i);
	}
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);

	/* B's receive completions, read in batches with next_poll */
	{
		uint64_t end = tc_now_ms() + 2000;

		while (n < 8) {
			rc = ibv_start_poll(B.rcq, &pa);
			if (rc == ENOENT) {
				cr_assert_leq(tc_now_ms(), end, "got %d of 8 receives", n);
				continue;
			}
			cr_assert_eq(rc, 0);
			do {
				struct ibv_cq_ex *c = B.rcq;
				uint64_t ts = ibv_wc_read_completion_ts(c);
				uint64_t wall = ibv_wc_read_completion_wallclock_ns(c);

				cr_assert_eq(c->wr_id, 1000 + (uint64_t)n, "in order");
				cr_assert_eq(c->status, IBV_WC_SUCCESS);
				cr_assert_eq(ibv_wc_read_opcode(c), IBV_WC_RECV);
				cr_assert_eq(ibv_wc_read_vendor_err(c), 0);
				cr_assert_eq(ibv_wc_read_byte_len(c), 100 + (uint32_t)n);
				cr_assert_eq(ibv_wc_read_imm_data(c), htonl(0xa0 + n));
				cr_assert_eq(ibv_wc_read_qp_num(c), B.qp->qp_num);
				cr_assert_eq(ibv_wc_read_src_qp(c), A.qp->qp_num);
				cr_assert_eq(ibv_wc_read_wc_flags(c), IBV_WC_WITH_IMM);
				cr_assert_eq(ibv_wc_read_slid(c), 0, "RoCE: no LIDs");
				cr_assert_eq(ibv_wc_read_sl(c), 0);
				cr_assert_eq(ibv_wc_read_dlid_path_bits(c), 0);
				cr_assert_gt(ts, before, "timestamp %llu after the post (%llu)",
					     (unsigned long long)ts, (unsigned long long)before);
				cr_assert_geq(ts, prev_ts, "timestamps increase");
				cr_assert_geq(wall + 1000000, wall0, "wall clock within 1 ms");
				prev_ts = ts;
				cr_assert(tc_check(B.buf + 4096 * n, 100 + n, n));
				n++;
			} while (n < 8 && (rc = ibv_next_poll(B.rcq)) == 0);
			if (n < 8)
				cr_assert_eq(rc, ENOENT);
			ibv_end_poll(B.rcq);
		}
	}
	after = rt_clock_ns(A.ctx);
	wall1 = wall_ns();
	cr_assert_leq(prev_ts, after, "timestamps from the clock ibv_query_rt_values_ex reads");
	cr_assert_lt(after - before, 2000000000ull);
	{
		struct x_wc last = { 0 };

		for (int i = 0; i < 8; i++) {
			struct x_wc w = x_wait(A.scq, 2000, "send completions");

			cr_assert_eq(w.wr_id, 500 + (uint64_t)i);
			cr_assert_eq(w.opcode, IBV_WC_SEND);
			cr_assert_gt(w.ts, 0);
			cr_assert_geq(w.ts, last.ts);
			cr_assert_leq(w.wall, wall1 + 1000000);
			cr_assert_geq(w.wall + 1000000, wall0);
			last = w;
		}
	}
	cr_assert_eq(ibv_start_poll(B.rcq, &pa), ENOENT);
}

Test(cq_ex, no_timestamp_unless_asked)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_cq_ex *cq;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 4,
								     .max_recv_wr = 4,
								     .max_recv_sge = 1 } };
	struct ibv_qp *qp;

	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, OPS, 16);
	cq = ibv_create_cq_ex(A.ctx, &ca);
	cr_assert_not_null(cq);
	ia.send_cq = ia.recv_cq = ibv_cq_ex_to_cq(cq);
	qp = ibv_create_qp(A.pd, &ia);
	cr_assert_not_null(qp);
	/* a QP moved to ERR flushes what it has: one flushed receive */
	{
		struct x_end t = { .qp = qp, .buf = A.buf, .mr = A.mr, .type = IBV_QPT_RC };

		x_to_state(&t, IBV_QPS_INIT);
		x_recv(&t, 9, 0, 64);
	}
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	}
	{
		struct x_wc w = x_wait(cq, 2000, "flushed receive");

		cr_assert_eq(w.wr_id, 9);
		cr_assert_eq(w.status, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(w.ts, 0, "no timestamp on a CQ that did not ask");
		cr_assert_eq(w.wall, 0);
	}
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

/* Fails saying where two SENDs a -> b that raised no completion event went. */
static void
no_event(struct ibv_cq *cq, const struct x_end *a, const struct x_end *b)
{
	struct droce_engine_stats es;
	struct ibv_qp_attr qa, qb;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc[4], aw[4];
	uint64_t end = tc_now_ms() + 1000;
	int k = 0, ka = 0, st = -1;

	while (tc_now_ms() < end) {
		int g = ibv_poll_cq(ibv_cq_ex_to_cq(a->scq), 4, aw);

		k += ibv_poll_cq(cq, 4, wc);
		if (g > 0 && st < 0)
			st = (int)aw[0].status;
		ka += g;
	}
	memset(&es, 0, sizeof(es));
	droce_engine_stats_get(0, &es);
	ibv_query_qp(a->qp, &qa, IBV_QP_STATE, &qi);
	ibv_query_qp(b->qp, &qb, IBV_QP_STATE, &qi);
	cr_assert_fail("no completion event within 5 s: %d completions on the CQ, %d on the "
		       "sender's (first status %d), fallback passes %llu; states %d -> %d; "
		       "rx %llu tx %llu tx_drops %llu no_qp %llu seq_drops %llu "
		       "qp_state_drops %llu ghost_acks %llu",
		       k, ka, st, (unsigned long long)droce_engines_fallback_passes(),
		       qa.qp_state, qb.qp_state, (unsigned long long)es.rx_pkts,
		       (unsigned long long)es.tx_pkts, (unsigned long long)es.tx_drops,
		       (unsigned long long)es.no_qp, (unsigned long long)es.seq_drops,
		       (unsigned long long)es.qp_state_drops, (unsigned long long)es.ghost_acks);
}

Test(cq_ex, plain_poll_notify_and_channel)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq_init_attr_ex ca = { .cqe = 64, .wc_flags = X_WC_FLAGS, .cq_context = &A };
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq, *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc[4];
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1,
						.max_inline_data = 16 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = OPS,
	};

	x_pair(&A, &B, IBV_QPT_RC, OPS, 64);
	/* B gets a second QP whose receive CQ is an extended CQ on a channel */
	ch = ibv_create_comp_channel(B.ctx);
	cr_assert_not_null(ch);
	ca.channel = ch;
	cqx = ibv_create_cq_ex(B.ctx, &ca);
	cr_assert_not_null(cqx);
	cq = ibv_cq_ex_to_cq(cqx);
	cr_assert_eq(cq->channel, ch);
	cr_assert_eq(cq->cq_context, &A);
	cr_assert_geq(cq->cqe, 64);
	/* a second QP pair: B's receives into cqx */
	{
		struct x_end a2 = A, b2 = B;

		qa.pd = B.pd;
		qa.send_cq = ibv_cq_ex_to_cq(B.scq);
		qa.recv_cq = cq;
		b2.qp = ibv_create_qp_ex(B.ctx, &qa);
		cr_assert_not_null(b2.qp);
		qa.pd = A.pd;
		qa.send_cq = ibv_cq_ex_to_cq(A.scq);
		qa.recv_cq = ibv_cq_ex_to_cq(A.rcq);
		a2.qp = ibv_create_qp_ex(A.ctx, &qa);
		cr_assert_not_null(a2.qp);
		a2.qpx = ibv_qp_to_qp_ex(a2.qp);
		x_connect(&a2, &b2);
		x_connect(&b2, &a2);
		x_recv(&b2, 71, 0, 64);
		x_recv(&b2, 72, 64, 64);
		cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
		ibv_wr_start(a2.qpx);
		a2.qpx->wr_id = 1;
		a2.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(a2.qpx);
		ibv_wr_set_inline_data(a2.qpx, "abc", 3);
		a2.qpx->wr_id = 2;
		ibv_wr_send(a2.qpx);
		ibv_wr_set_inline_data(a2.qpx, "defg", 4);
		cr_assert_eq(ibv_wr_complete(a2.qpx), 0);
		/* sleeps on the channel: the fallback thread drives the engines */
		{
			struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

			if (poll(&pfd, 1, 5000) != 1)
				no_event(cq, &a2, &b2);
		}
		cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
		cr_assert_eq(ev_cq, cq);
		cr_assert_eq(ev_ctx, &A);
		ibv_ack_cq_events(cq, 1);
		{
			int got = 0;
			uint64_t end = tc_now_ms() + 2000;

			while (got < 2 && tc_now_ms() < end)
				got += ibv_poll_cq(cq, 4 - got, wc + got);
			cr_assert_eq(got, 2, "ibv_poll_cq on the extended CQ");
		}
		cr_assert_eq(wc[0].wr_id, 71);
		cr_assert_eq(wc[0].byte_len, 3);
		cr_assert_eq(wc[0].opcode, IBV_WC_RECV);
		cr_assert_eq(wc[1].wr_id, 72);
		cr_assert_eq(wc[1].byte_len, 4);
		cr_assert_eq(wc[1].qp_num, b2.qp->qp_num);
		cr_assert_eq(memcmp(B.buf, "abc", 3), 0);
		cr_assert_eq(memcmp(B.buf + 64, "defg", 4), 0);
		{
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			cr_assert_eq(ibv_modify_qp(b2.qp, &a, IBV_QP_STATE), 0);
			cr_assert_eq(ibv_modify_qp(a2.qp, &a, IBV_QP_STATE), 0);
		}
		cr_assert_eq(ibv_destroy_qp(b2.qp), 0);
		cr_assert_eq(ibv_destroy_qp(a2.qp), 0);
	}
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
}

Test(cq_ex, create_errors)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16 };
	struct ibv_cq_ex *cq;

	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, OPS, 16);
	ca.wc_flags = IBV_WC_EX_WITH_CVLAN;
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EOPNOTSUPP, "VLAN: droce has none to report");
	ca.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EOPNOTSUPP);
	ca.wc_flags = 1ull << 10; /* tag matching info */
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EOPNOTSUPP);
	ca.wc_flags = 0;
	ca.comp_mask = 1u << 5;
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EINVAL);
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EOPNOTSUPP);
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = A.pd; /* not a parent domain */
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EINVAL);
	ca.comp_mask = 0;
	ca.cqe = 0;
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EINVAL);
	ca.cqe = 16;
	ca.comp_vector = 1; /* one completion vector */
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(A.ctx, &ca));
	cr_assert_eq(errno, EINVAL);
	/* what works: no wc_flags at all (perftest), and single-threaded */
	ca.comp_vector = 0;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	cq = ibv_create_cq_ex(A.ctx, &ca);
	cr_assert_not_null(cq, "%s", strerror(errno));
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}
