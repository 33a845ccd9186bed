/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues through the verbs API over the real engines: 8 RC
 * QPs on two engines share one SRQ (every receive WQE used exactly once,
 * nothing lost, the limit event fires once), the SRQ errnos, and an SRQ
 * QP entering ERR (only its own WQE completes; LAST_WQE_REACHED), and a
 * polled completion freeing its queue slot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/dp.h"
#include "verbs_api/internal.h"

#include "srq_common.h"

#define NQP 8
#define PER_QP 600
#define WINDOW 16
#define SRQ_WR 256
#define LIMIT 64
#define SLOT 64     /* bytes per receive buffer (one per wr_id, never reused) */
#define MSG 48
#define RECV_BASE (1u << 20)

static void
fini(void)
{
	tc_stop();
}

TestSuite(srq, .fini = fini, .timeout = 120);

struct msg_hdr {
	uint32_t qp, seq;
};

static void
fill(uint8_t *p, uint32_t qp, uint32_t seq)
{
	struct msg_hdr h = { qp, seq };

	memcpy(p, &h, sizeof(h));
	for (unsigned int i = sizeof(h); i < MSG; i++)
		p[i] = (uint8_t)(qp * 31 + seq * 7 + i);
}

static unsigned int
engine_of(struct ibv_qp *qp)
{
	return droce_qp_engine(((struct droce_vqp *)qp)->dqp);
}

static void
run_shared(enum s_mode mode, unsigned int engines)
{
	struct s_dev A, B;
	struct ibv_cq *ascq, *arcq, *bscq, *brcq;
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = SRQ_WR, .max_sge = 1 } };
	struct ibv_srq_attr sa;
	struct ibv_qp *aqp[NQP], *bqp[NQP];
	uint32_t sent[NQP] = { 0 }, acked[NQP] = { 0 }, next_seq[NQP] = { 0 };
	unsigned int on_engine[8] = { 0 };
	const uint32_t total = NQP * PER_QP;
	uint32_t posted = 0, received = 0, limit_events = 0;
	uint8_t *used;
	uint64_t deadline;
	struct ibv_async_event ev;

	s_start(mode);
	s_open(&A, "droce0");
	s_open(&B, "droce1");
	ascq = ibv_create_cq(A.ctx, 4096, NULL, NULL, 0);
	arcq = ibv_create_cq(A.ctx, 16, NULL, NULL, 0);
	bscq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	brcq = ibv_create_cq(B.ctx, 4096, NULL, NULL, 0);
	cr_assert(ascq && arcq && bscq && brcq);
	srq = ibv_create_srq(B.pd, &sia);
	cr_assert_not_null(srq, "ibv_create_srq: %s", strerror(errno));
	/* A's QPs first, then B's: QPs go round robin over the engines */
	for (int i = 0; i < NQP; i++)
		aqp[i] = s_rc_qp(&A, ascq, arcq, NULL, WINDOW, 1);
	for (int i = 0; i < NQP; i++) {
		bqp[i] = s_rc_qp(&B, bscq, brcq, srq, 4, 0);
		on_engine[engine_of(bqp[i])]++;
	}
	for (unsigned int e = 0; e < engines; e++)
		cr_assert_eq(on_engine[e], NQP / engines, "engine %u has %u of the SRQ's QPs", e,
			     on_engine[e]);
	for (int i = 0; i < NQP; i++) {
		s_rc_connect(aqp[i], &B, bqp[i]->qp_num, 7, 14);
		s_rc_connect(bqp[i], &A, aqp[i]->qp_num, 7, 14);
	}
	used = calloc(total + SRQ_WR, 1);
	cr_assert_not_null(used);
	for (; posted < SRQ_WR; posted++)
		cr_assert_eq(s_post_srq(srq, &B, posted, RECV_BASE + posted * SLOT, SLOT), 0);
	sa.srq_limit = LIMIT;
	cr_assert_eq(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	cr_assert_eq(ibv_query_srq(srq, &sa), 0);
	cr_assert_eq(sa.srq_limit, LIMIT);

	deadline = tc_now_ms() + 90000;
	while (received < total) {
		struct ibv_wc wc[32];
		int n;

		cr_assert_lt(tc_now_ms(), deadline, "stalled: %u of %u received", received, total);
		for (int i = 0; i < NQP; i++) {
			while (sent[i] < PER_QP && sent[i] - acked[i] < WINDOW) {
				size_t off = ((size_t)i * WINDOW + sent[i] % WINDOW) * SLOT;

				fill(A.buf + off, (uint32_t)i, sent[i]);
				cr_assert_eq(s_post_send(aqp[i], &A, (uint64_t)i << 32 | sent[i], off, MSG,
							 0), 0);
				sent[i]++;
			}
		}
		n = ibv_poll_cq(ascq, 32, wc);
		cr_assert_geq(n, 0);
		for (int k = 0; k < n; k++) {
			uint32_t i = (uint32_t)(wc[k].wr_id >> 32);

			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "send %llx: %s",
				     (unsigned long long)wc[k].wr_id, ibv_wc_status_str(wc[k].status));
			cr_assert_lt(i, NQP);
			cr_assert_eq((uint32_t)wc[k].wr_id, acked[i], "send completions in order");
			acked[i]++;
		}
		n = ibv_poll_cq(brcq, 32, wc);
		cr_assert_geq(n, 0);
		for (int k = 0; k < n; k++) {
			const uint8_t *p;
			struct msg_hdr h;
			uint8_t want[MSG];

			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "recv %llu: %s",
				     (unsigned long long)wc[k].wr_id, ibv_wc_status_str(wc[k].status));
			cr_assert_eq(wc[k].opcode, IBV_WC_RECV);
			cr_assert_eq(wc[k].byte_len, MSG);
			cr_assert_lt(wc[k].wr_id, posted, "wr_id %llu never posted",
				     (unsigned long long)wc[k].wr_id);
			cr_assert_eq(used[wc[k].wr_id], 0, "wr_id %llu completed twice",
				     (unsigned long long)wc[k].wr_id);
			used[wc[k].wr_id] = 1;
			p = B.buf + RECV_BASE + wc[k].wr_id * SLOT;
			memcpy(&h, p, sizeof(h));
			cr_assert_lt(h.qp, NQP);
			cr_assert_eq(wc[k].qp_num, bqp[h.qp]->qp_num, "message of QP %u on QPN %u", h.qp,
				     wc[k].qp_num);
			cr_assert_eq(h.seq, next_seq[h.qp], "QP %u: message %u, expected %u", h.qp, h.seq,
				     next_seq[h.qp]);
			fill(want, h.qp, h.seq);
			cr_assert_arr_eq(p, want, MSG, "QP %u message %u: bytes differ", h.qp, h.seq);
			next_seq[h.qp]++;
			received++;
		}
		/* refill in batches, only once it ran low: the fill crosses the limit */
		if (posted - received < LIMIT / 2) {
			while (posted - received < SRQ_WR && posted < total + SRQ_WR) {
				cr_assert_eq(s_post_srq(srq, &B, posted, RECV_BASE + posted * SLOT, SLOT),
					     0, "post %u", posted);
				posted++;
			}
		}
		if (limit_events == 0 && s_async(B.ctx, &ev, 0, false)) {
			cr_assert_eq(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED, "event %s",
				     ibv_event_type_str(ev.event_type));
			cr_assert_eq(ev.element.srq, srq);
			ibv_ack_async_event(&ev);
			limit_events++;
		}
	}
	for (int i = 0; i < NQP; i++)
		cr_assert_eq(next_seq[i], PER_QP, "QP %d received %u", i, next_seq[i]);
	for (int i = 0; i < NQP; i++)
		while (acked[i] < PER_QP) {
			struct ibv_wc wc = tc_wait(ascq, 5000, "send completion");

			cr_assert_eq(wc.status, IBV_WC_SUCCESS);
			acked[wc.wr_id >> 32]++;
		}
	for (uint32_t id = 0; id < received; id++)
		cr_assert_eq(used[id], 1, "wr_id %u: posted before the last ones, not used", id);
	if (limit_events == 0) {
		cr_assert(s_async(B.ctx, &ev, 2000, mode == S_COLOCATED_1 || mode == S_COLOCATED_2),
			  "no SRQ limit event");
		cr_assert_eq(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
		cr_assert_eq(ev.element.srq, srq);
		ibv_ack_async_event(&ev);
	}
	/* once: the limit disarmed itself */
	cr_assert_not(s_async(B.ctx, &ev, 100, false), "second event %s",
		      ibv_event_type_str(ev.event_type));
	cr_assert_eq(ibv_query_srq(srq, &sa), 0);
	cr_assert_eq(sa.srq_limit, 0);
	cr_assert_eq(sa.max_wr, SRQ_WR);

	cr_assert_eq(ibv_destroy_srq(srq), EBUSY);
	for (int i = 0; i < NQP; i++) {
		cr_assert_eq(ibv_destroy_qp(aqp[i]), 0);
		cr_assert_eq(ibv_destroy_qp(bqp[i]), 0);
	}
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	free(used);
}

Test(srq, eight_qps_on_two_colocated_engines_share_one_srq)
{
	run_shared(S_COLOCATED_2, 2);
}

/* The same with two engines on their own (time-sliced) threads: takes race for real. */
Test(srq, eight_qps_on_two_dedicated_engines_share_one_srq, .timeout = 180)
{
	run_shared(S_DEDICATED_2, 2);
}

Test(srq, errnos)
{
	struct s_dev B;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 4, .max_sge = 2 } };
	struct ibv_srq_attr sa;
	struct ibv_sge sge[3];
	struct ibv_recv_wr w[6], *bad;
	struct ibv_qp *qp;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_device_attr da;

	s_start(S_COLOCATED_1);
	s_open(&B, "droce1");
	cq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	cr_assert_not_null(cq);

	/* the device advertises SRQs with the limits ibv_create_srq enforces
	 * (ibv_devinfo printed max_srq 0 before) */
	cr_assert_eq(ibv_query_device(B.ctx, &da), 0);
	cr_assert_gt(da.max_srq, 0);
	cr_assert_eq(da.max_srq_wr, DROCE_DP_MAX_SRQ_WR);
	cr_assert_eq(da.max_srq_sge, DROCE_DP_MAX_SGE);

	sia.attr.max_wr = 0;
	cr_assert_null(ibv_create_srq(B.pd, &sia));
	cr_assert_eq(errno, EINVAL);
	sia.attr.max_wr = DROCE_DP_MAX_SRQ_WR + 1;
	cr_assert_null(ibv_create_srq(B.pd, &sia));
	cr_assert_eq(errno, EINVAL);
	sia.attr.max_wr = 4;
	sia.attr.max_sge = DROCE_DP_MAX_SGE + 1;
	cr_assert_null(ibv_create_srq(B.pd, &sia));
	cr_assert_eq(errno, EINVAL);
	sia.attr.max_sge = 2;
	srq = ibv_create_srq(B.pd, &sia);
	cr_assert_not_null(srq);
	cr_assert_eq(sia.attr.max_wr, 4);
	cr_assert_eq(sia.attr.max_sge, 2);
	cr_assert_eq(ibv_dealloc_pd(B.pd), EBUSY, "the SRQ holds the PD");

	cr_assert_eq(ibv_query_srq(srq, &sa), 0);
	cr_assert_eq(sa.max_wr, 4);
	cr_assert_eq(sa.max_sge, 2);
	cr_assert_eq(sa.srq_limit, 0);
	sa.max_wr = 8;
	cr_assert_eq(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL, "no resizing");
	sa.srq_limit = 5;
	cr_assert_eq(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), EINVAL, "limit above max_wr");
	cr_assert_eq(ibv_modify_srq(srq, &sa, 1 << 5), EINVAL, "unknown mask bit");
	sa.srq_limit = 2;
	cr_assert_eq(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	cr_assert_eq(ibv_query_srq(srq, &sa), 0);
	cr_assert_eq(sa.srq_limit, 2);

	/* a list: the third WR has too many SGEs */
	for (int i = 0; i < 3; i++)
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)B.buf + 64 * i, .length = 64,
					   .lkey = B.mr->lkey };
	for (int i = 0; i < 6; i++)
		w[i] = (struct ibv_recv_wr){ .wr_id = (uint64_t)i, .sg_list = sge, .num_sge = 1,
					     .next = i < 5 ? &w[i + 1] : NULL };
	w[2].num_sge = 3;
	bad = NULL;
	cr_assert_eq(ibv_post_srq_recv(srq, w, &bad), EINVAL);
	cr_assert_eq(bad, &w[2]);
	/* w[0], w[1] went in; fill to 4, then the fifth is ENOMEM */
	w[2].num_sge = 2;
	bad = NULL;
	cr_assert_eq(ibv_post_srq_recv(srq, &w[2], &bad), ENOMEM);
	cr_assert_eq(bad, &w[4], "SRQ full at the fifth WR");

	/* a QP on the SRQ: receive sizes ignored, ibv_post_recv refused */
	memset(&qia, 0, sizeof(qia));
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qia.srq = srq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap = (struct ibv_qp_cap){ .max_send_wr = 4, .max_recv_wr = 99, .max_send_sge = 1,
				       .max_recv_sge = 99 };
	qp = ibv_create_qp(B.pd, &qia);
	cr_assert_not_null(qp, "ibv_create_qp: %s", strerror(errno));
	cr_assert_eq(qp->srq, srq);
	cr_assert_eq(qia.cap.max_recv_wr, 0);
	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia), 0);
	cr_assert_eq(qia.srq, srq);
	w[0].next = NULL;
	w[0].num_sge = 1;
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

		cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS), 0);
	}
	bad = NULL;
	cr_assert_eq(ibv_post_recv(qp, &w[0], &bad), EINVAL);
	cr_assert_eq(bad, &w[0]);

	cr_assert_eq(ibv_destroy_srq(srq), EBUSY, "a QP uses it");
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* Takes events until both wanted ones came for @qp (any order). */
static void
expect_qp_events(struct ibv_context *ctx, struct ibv_qp *qp, bool fatal, bool last_wqe)
{
	bool got_fatal = false, got_last = false;
	struct ibv_async_event ev;

	while ((fatal && !got_fatal) || (last_wqe && !got_last)) {
		cr_assert(s_async(ctx, &ev, 3000, true), "missing %s%s", fatal && !got_fatal ?
			  "QP_FATAL " : "", last_wqe && !got_last ? "LAST_WQE_REACHED" : "");
		cr_assert_eq(ev.element.qp, qp, "%s for another QP", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_QP_FATAL && fatal && !got_fatal)
			got_fatal = true;
		else if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && last_wqe && !got_last)
			got_last = true;
		else
			cr_assert_fail("unexpected %s", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

Test(srq, qp_entering_err_flushes_only_its_own_wqe)
{
	struct s_dev A, B;
	struct ibv_cq *ascq, *arcq, *bscq, *brcq;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_qp *a0, *a1, *b0, *b1;
	struct ibv_async_event ev;
	struct ibv_wc wc;

	s_start(S_COLOCATED_1);
	s_open(&A, "droce0");
	s_open(&B, "droce1");
	ascq = ibv_create_cq(A.ctx, 64, NULL, NULL, 0);
	arcq = ibv_create_cq(A.ctx, 64, NULL, NULL, 0);
	bscq = ibv_create_cq(B.ctx, 64, NULL, NULL, 0);
	brcq = ibv_create_cq(B.ctx, 64, NULL, NULL, 0);
	srq = ibv_create_srq(B.pd, &sia);
	cr_assert_not_null(srq);
	a0 = s_rc_qp(&A, ascq, arcq, NULL, 8, 8);
	a1 = s_rc_qp(&A, ascq, arcq, NULL, 8, 8);
	b0 = s_rc_qp(&B, bscq, brcq, srq, 8, 0);
	b1 = s_rc_qp(&B, bscq, brcq, srq, 8, 0);
	s_rc_connect(a0, &B, b0->qp_num, 7, 14);
	s_rc_connect(b0, &A, a0->qp_num, 7, 14);
	s_rc_connect(a1, &B, b1->qp_num, 7, 14);
	s_rc_connect(b1, &A, a1->qp_num, 7, 14);
	for (uint64_t id = 1; id <= 4; id++)
		cr_assert_eq(s_post_srq(srq, &B, id, 4096 * id, 64), 0);

	/* 2000 bytes into a 64-byte WQE: b0's WQE (id 1) completes LOC_LEN, b0 and a0 fail */
	cr_assert_eq(s_post_send(a0, &A, 100, 0, 2000, 0), 0);
	wc = tc_wait(ascq, 3000, "a0's send");
	cr_assert_eq(wc.wr_id, 100);
	cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR, "%s", ibv_wc_status_str(wc.status));
	wc = tc_wait(brcq, 3000, "b0's receive");
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.qp_num, b0->qp_num);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR, "%s", ibv_wc_status_str(wc.status));
	expect_qp_events(B.ctx, b0, true, true);
	expect_qp_events(A.ctx, a0, true, false);
	/* the SRQ's other WQEs stay posted: nothing flushed */
	cr_assert_eq(tc_poll(brcq, &wc, 1, 200), 0, "flushed wr_id %llu status %s",
		     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));

	/* ... and b1 receives into them, in posting order */
	for (uint64_t k = 0; k < 3; k++) {
		memset(A.buf + 8192, (int)(0xa0 + k), 32);
		cr_assert_eq(s_post_send(a1, &A, 200 + k, 8192, 32, 0), 0);
		wc = tc_wait(ascq, 3000, "a1's send");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		wc = tc_wait(brcq, 3000, "b1's receive");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.qp_num, b1->qp_num);
		cr_assert_eq(wc.wr_id, 2 + k);
		cr_assert_eq(wc.byte_len, 32);
		cr_assert_eq(B.buf[4096 * (2 + k) + 31], 0xa0 + k);
	}

	/* b1 moved to ERR by the application: LAST_WQE_REACHED only, no flush */
	cr_assert_eq(s_post_srq(srq, &B, 9, 4096 * 9, 64), 0);
	s_to_err(b1);
	expect_qp_events(B.ctx, b1, false, true);
	cr_assert_eq(tc_poll(brcq, &wc, 1, 200), 0);
	cr_assert_not(s_async(B.ctx, &ev, 100, true), "unexpected %s",
		      ibv_event_type_str(ev.event_type));

	cr_assert_eq(ibv_destroy_qp(b0), 0);
	cr_assert_eq(ibv_destroy_qp(b1), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_qp(a0), 0);
	cr_assert_eq(ibv_destroy_qp(a1), 0);
}

/*
 * A polled send completion frees its send queue slot: with one slot, post,
 * poll, post again never finds the queue full (ENOMEM).  The engine spins on
 * its own lcore, so it must free the slot before it publishes the CQE.
 */
Test(srq, polled_completion_frees_the_slot, .timeout = 120)
{
	struct s_dev A, B;
	struct ibv_cq *ascq, *arcq, *bscq, *brcq;
	struct ibv_qp *a, *b;
	const unsigned int rounds = 60000;

	s_start(S_DEDICATED_1);
	s_open(&A, "droce0");
	s_open(&B, "droce1");
	ascq = ibv_create_cq(A.ctx, 16, NULL, NULL, 0);
	arcq = ibv_create_cq(A.ctx, 16, NULL, NULL, 0);
	bscq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	brcq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	cr_assert(ascq && arcq && bscq && brcq);
	a = s_rc_qp(&A, ascq, arcq, NULL, 1, 1);
	b = s_rc_qp(&B, bscq, brcq, NULL, 1, 1);
	s_rc_connect(a, &B, b->qp_num, 7, 14);
	s_rc_connect(b, &A, a->qp_num, 7, 14);
	for (unsigned int i = 0; i < rounds; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = { .remote_addr = (uintptr_t)B.buf,
						      .rkey = B.mr->rkey } };
		struct ibv_send_wr *bad;
		struct ibv_wc wc;
		int rc = ibv_post_send(a, &w, &bad);

		cr_assert_eq(rc, 0, "round %u: ibv_post_send: %s", i, strerror(rc));
		wc = tc_wait(ascq, 5000, "the WRITE");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, i);
	}
	cr_assert_eq(ibv_destroy_qp(a), 0);
	cr_assert_eq(ibv_destroy_qp(b), 0);
}

/*
 * An SRQ of 3 with two SGEs a slot (64-byte slots, cut to max_sge) shared by
 * two QPs on two engines: a 3-SGE receive is refused (EINVAL, bad_wr on it,
 * nothing queued); a list of 4 queues 3 and stops at the 4th with ENOMEM,
 * round after round as the slots are reused; each round's three messages
 * (to one QP, then the other) land byte for byte across both SGEs of the
 * receives, in posting order, with their byte_len, nothing past them.
 */
Test(srq, small_srq_wraps_its_slots)
{
	struct s_dev A, B;
	struct ibv_cq *ascq, *arcq, *bscq, *brcq;
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 3, .max_sge = 2 } };
	struct ibv_qp *aqp[2], *bqp[2];

	s_start(S_COLOCATED_2);
	s_open(&A, "droce0");
	s_open(&B, "droce1");
	ascq = ibv_create_cq(A.ctx, 16, NULL, NULL, 0);
	arcq = ibv_create_cq(A.ctx, 16, NULL, NULL, 0);
	bscq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	brcq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	cr_assert(ascq && arcq && bscq && brcq);
	srq = ibv_create_srq(B.pd, &sia);
	cr_assert_not_null(srq, "ibv_create_srq: %s", strerror(errno));
	for (int i = 0; i < 2; i++)
		aqp[i] = s_rc_qp(&A, ascq, arcq, NULL, 4, 1);
	for (int i = 0; i < 2; i++)
		bqp[i] = s_rc_qp(&B, bscq, brcq, srq, 4, 0);
	cr_assert_neq(engine_of(bqp[0]), engine_of(bqp[1]), "the SRQ's QPs on two engines");
	for (int i = 0; i < 2; i++) {
		s_rc_connect(aqp[i], &B, bqp[i]->qp_num, 7, 14);
		s_rc_connect(bqp[i], &A, aqp[i]->qp_num, 7, 14);
	}
	for (uint32_t round = 0; round < 7; round++) {
		struct ibv_sge rs[4][2], three[3];
		struct ibv_recv_wr r[4], r3, *rbad = NULL;
		int q = (int)(round % 2);

		for (int k = 0; k < 3; k++)
			three[k] = (struct ibv_sge){ .addr = (uintptr_t)B.buf + 8 * (uint32_t)k,
						     .length = 8, .lkey = B.mr->lkey };
		r3 = (struct ibv_recv_wr){ .wr_id = 99, .sg_list = three, .num_sge = 3 };
		cr_assert_eq(ibv_post_srq_recv(srq, &r3, &rbad), EINVAL, "round %u", round);
		cr_assert_eq(rbad, &r3);
		for (int i = 0; i < 4; i++) {
			uint8_t *base = B.buf + 8192 + (uint32_t)i * 512;

			/* 60 bytes, then 200 bytes 100 further on */
			rs[i][0] = (struct ibv_sge){ .addr = (uintptr_t)base, .length = 60,
						     .lkey = B.mr->lkey };
			rs[i][1] = (struct ibv_sge){ .addr = (uintptr_t)base + 160, .length = 200,
						     .lkey = B.mr->lkey };
			r[i] = (struct ibv_recv_wr){ .wr_id = round * 4 + (uint32_t)i, .sg_list = rs[i],
						     .num_sge = 2, .next = i < 3 ? &r[i + 1] : NULL };
		}
		memset(B.buf + 8192, 0, 4 * 512);
		cr_assert_eq(ibv_post_srq_recv(srq, r, &rbad), ENOMEM, "round %u", round);
		cr_assert_eq(rbad, &r[3]);
		for (int i = 0; i < 3; i++) {
			uint32_t src = 4096 + (uint32_t)i * 512, len = 40 + (uint32_t)i * 90;

			for (uint32_t k = 0; k < len; k++)
				A.buf[src + k] = (uint8_t)(round * 29 + (uint32_t)i * 11 + k + 1);
			cr_assert_eq(s_post_send(aqp[q], &A, round * 4 + (uint32_t)i, src, len, 0), 0);
		}
		for (int i = 0; i < 3; i++) {
			struct ibv_wc wc = tc_wait(brcq, 5000, "brcq");
			uint32_t len = 40 + (uint32_t)i * 90, first = len < 60 ? len : 60;
			const uint8_t *dst = B.buf + 8192 + (uint32_t)i * 512;
			const uint8_t *src = A.buf + 4096 + (uint32_t)i * 512;

			cr_assert_eq(wc.status, IBV_WC_SUCCESS, "round %u: %s", round,
				     ibv_wc_status_str(wc.status));
			cr_assert_eq(wc.wr_id, round * 4 + (uint32_t)i, "in posting order");
			cr_assert_eq(wc.qp_num, bqp[q]->qp_num);
			cr_assert_eq(wc.byte_len, len);
			cr_assert_eq(memcmp(dst, src, first), 0, "round %u receive %d", round, i);
			cr_assert_eq(memcmp(dst + 160, src + first, len - first), 0, "round %u receive %d",
				     round, i);
			cr_assert_eq(dst[60], 0, "nothing between the SGEs");
			cr_assert_eq(dst[160 + (len - first)], 0, "nothing past the message");
			wc = tc_wait(ascq, 5000, "ascq");
			cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		}
	}
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ibv_destroy_qp(bqp[i]), 0);
		cr_assert_eq(ibv_destroy_qp(aqp[i]), 0);
	}
	cr_assert_eq(ibv_destroy_srq(srq), 0);
}
