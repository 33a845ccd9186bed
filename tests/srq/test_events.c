/* SPDX-License-Identifier: BSD-3-Clause
 * Async events provoked for real and read with ibv_get_async_event: QP fatal
 * (a bad rkey; a link cut that exhausts the retries), port error / active
 * (droce_port_set_link), CQ error on an engine-side overflow, and
 * solicited-only CQ notification end to end.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/dp.h"
#include "pmd_glue/port.h"

#include "srq_common.h"

static void
fini(void)
{
	tc_stop();
}

TestSuite(events, .fini = fini, .timeout = 60);

struct pair {
	struct s_dev A, B;
	struct ibv_comp_channel *ch;
	struct ibv_cq *ascq, *arcq, *bscq, *brcq;
	struct ibv_qp *a, *b;
};

static void
pair_up(struct pair *p, enum s_mode mode, uint8_t retry, uint8_t timeout)
{
	s_start(mode);
	s_open(&p->A, "droce0");
	s_open(&p->B, "droce1");
	p->ch = ibv_create_comp_channel(p->B.ctx);
	cr_assert_not_null(p->ch);
	p->ascq = ibv_create_cq(p->A.ctx, 64, NULL, NULL, 0);
	p->arcq = ibv_create_cq(p->A.ctx, 64, NULL, NULL, 0);
	p->bscq = ibv_create_cq(p->B.ctx, 64, NULL, NULL, 0);
	p->brcq = ibv_create_cq(p->B.ctx, 64, NULL, p->ch, 0);
	cr_assert(p->ascq && p->arcq && p->bscq && p->brcq);
	p->a = s_rc_qp(&p->A, p->ascq, p->arcq, NULL, 8, 8);
	p->b = s_rc_qp(&p->B, p->bscq, p->brcq, NULL, 8, 8);
	s_rc_connect(p->a, &p->B, p->b->qp_num, retry, timeout);
	s_rc_connect(p->b, &p->A, p->a->qp_num, retry, timeout);
}

static int
post_recv(struct pair *p, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->B.buf + off, .length = len,
			       .lkey = p->B.mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(p->b, &w, &bad);
}

static enum ibv_qp_state
qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	cr_assert_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

static void
expect_event(struct ibv_context *ctx, enum ibv_event_type type, struct ibv_qp *qp, bool drive)
{
	struct ibv_async_event ev;

	cr_assert(s_async(ctx, &ev, 3000, drive), "no %s", ibv_event_type_str(type));
	cr_assert_eq(ev.event_type, type, "%s, expected %s", ibv_event_type_str(ev.event_type),
		     ibv_event_type_str(type));
	if (qp != NULL)
		cr_assert_eq(ev.element.qp, qp);
	else
		cr_assert_eq(ev.element.port_num, 1);
	ibv_ack_async_event(&ev);
}

Test(events, qp_fatal_on_a_bad_rkey)
{
	struct pair p;
	struct ibv_sge sge;
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc;
	struct ibv_async_event ev;

	pair_up(&p, S_COLOCATED_1, 7, 14);
	sge = (struct ibv_sge){ .addr = (uintptr_t)p.A.buf, .length = 64, .lkey = p.A.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)p.B.buf,
					       .rkey = p.B.mr->rkey ^ 0x5a } };
	cr_assert_eq(ibv_post_send(p.a, &w, &bad), 0);
	wc = tc_wait(p.ascq, 3000, "the WRITE");
	cr_assert_eq(wc.wr_id, 7);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR, "%s", ibv_wc_status_str(wc.status));
	expect_event(p.A.ctx, IBV_EVENT_QP_FATAL, p.a, true);
	cr_assert_eq(qp_state(p.a), IBV_QPS_ERR);
	/* the responder that NAKed went to ERR as well */
	expect_event(p.B.ctx, IBV_EVENT_QP_FATAL, p.b, true);
	cr_assert_eq(qp_state(p.b), IBV_QPS_ERR);
	/* once per QP: flushing later WRs raises nothing more */
	cr_assert_eq(ibv_post_send(p.a, &w, &bad), 0);
	wc = tc_wait(p.ascq, 3000, "the flushed WRITE");
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_not(s_async(p.A.ctx, &ev, 100, true), "unexpected %s",
		      ibv_event_type_str(ev.event_type));
	/* acked: destroying does not wait */
	cr_assert_eq(ibv_destroy_qp(p.a), 0);
	cr_assert_eq(ibv_destroy_qp(p.b), 0);
}

Test(events, port_err_and_active_on_a_link_cut_and_qp_fatal_after_retries)
{
	struct pair p;
	struct ibv_port_attr pa;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	bool port_err = false, fatal = false;

	/* retry_cnt 1, timeout 8 (~1 ms): a cut link fails the QP quickly */
	pair_up(&p, S_COLOCATED_1, 1, 8);
	cr_assert_eq(ibv_query_port(p.A.ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	cr_assert_not(s_async(p.A.ctx, &ev, 50, true), "event before the cut: %s",
		      ibv_event_type_str(ev.event_type));

	droce_port_set_link(droce_port_get(0), false);
	cr_assert_eq(s_post_send(p.a, &p.A, 1, 0, 100, 0), 0);
	wc = tc_wait(p.ascq, 5000, "the SEND over a cut link");
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc.status));
	while (!port_err || !fatal) {
		cr_assert(s_async(p.A.ctx, &ev, 3000, true), "missing %s",
			  !port_err ? "PORT_ERR" : "QP_FATAL");
		if (ev.event_type == IBV_EVENT_PORT_ERR && !port_err) {
			cr_assert_eq(ev.element.port_num, 1);
			port_err = true;
		} else if (ev.event_type == IBV_EVENT_QP_FATAL && !fatal) {
			cr_assert_eq(ev.element.qp, p.a);
			fatal = true;
		} else {
			cr_assert_fail("unexpected %s", ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
	cr_assert_eq(ibv_query_port(p.A.ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_DOWN);
	/* droce1's own link was not cut */
	cr_assert_not(s_async(p.B.ctx, &ev, 50, true), "droce1: %s",
		      ibv_event_type_str(ev.event_type));
	cr_assert_eq(ibv_query_port(p.B.ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);

	droce_port_set_link(droce_port_get(0), true);
	expect_event(p.A.ctx, IBV_EVENT_PORT_ACTIVE, NULL, true);
	cr_assert_eq(ibv_query_port(p.A.ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	cr_assert_not(s_async(p.A.ctx, &ev, 50, true), "unexpected %s",
		      ibv_event_type_str(ev.event_type));
}

/* The channel's fd becomes readable within @ms (the engine runs on its own lcore). */
static bool
channel_fires(struct pair *p, int ms)
{
	struct pollfd pf = { .fd = p->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	if (poll(&pf, 1, ms) != 1)
		return false;
	cr_assert_eq(ibv_get_cq_event(p->ch, &cq, &ctx), 0);
	cr_assert_eq(cq, p->brcq);
	ibv_ack_cq_events(cq, 1);
	return true;
}

Test(events, solicited_only_notification, .timeout = 60)
{
	struct pair p;
	struct ibv_wc wc;

	pair_up(&p, S_DEDICATED_1, 7, 14);
	for (uint64_t id = 1; id <= 4; id++)
		cr_assert_eq(post_recv(&p, id, 4096 * id, 64), 0);

	/* armed for solicited completions: an unsolicited SEND raises nothing */
	cr_assert_eq(ibv_req_notify_cq(p.brcq, 1), 0);
	cr_assert_eq(s_post_send(p.a, &p.A, 11, 0, 40, 0), 0);
	wc = tc_wait(p.ascq, 3000, "unsolicited SEND");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_not(channel_fires(&p, 300), "event for an unsolicited completion");
	wc = tc_wait(p.brcq, 1000, "unsolicited receive");
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);

	/* the same arm fires on a solicited one */
	cr_assert_eq(s_post_send(p.a, &p.A, 12, 0, 40, IBV_SEND_SOLICITED), 0);
	cr_assert(channel_fires(&p, 3000), "no event for a solicited completion");
	wc = tc_wait(p.brcq, 1000, "solicited receive");
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	wc = tc_wait(p.ascq, 3000, "solicited SEND");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);

	/* armed for any completion: the unsolicited one fires */
	cr_assert_eq(ibv_req_notify_cq(p.brcq, 0), 0);
	cr_assert_eq(s_post_send(p.a, &p.A, 13, 0, 40, 0), 0);
	cr_assert(channel_fires(&p, 3000), "no event with solicited_only = 0");
	wc = tc_wait(p.brcq, 1000, "third receive");
	cr_assert_eq(wc.wr_id, 3);
	wc = tc_wait(p.ascq, 3000, "third SEND");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);

	/* solicited only, and an unsolicited SEND that fails at the receiver: errors fire */
	cr_assert_eq(ibv_req_notify_cq(p.brcq, 1), 0);
	cr_assert_eq(s_post_send(p.a, &p.A, 14, 0, 2000, 0), 0);
	cr_assert(channel_fires(&p, 3000), "no event for an error completion");
	wc = tc_wait(p.brcq, 1000, "failed receive");
	cr_assert_eq(wc.wr_id, 4);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR, "%s", ibv_wc_status_str(wc.status));
	wc = tc_wait(p.ascq, 3000, "fourth SEND");
	cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR, "%s", ibv_wc_status_str(wc.status));
}

/*
 * Reads the next two async events of @ctx: a CQ_ERR for @cq and a QP_FATAL
 * for @qp, in either order (the CQ reports at the overflow, the QP when the
 * engine moves it to ERR right after); then nothing more for 100 ms.
 */
static void
expect_overrun_events(struct ibv_context *ctx, struct ibv_cq *cq, struct ibv_qp *qp)
{
	bool cq_err = false, qp_fatal = false;
	struct ibv_async_event ev;

	for (int i = 0; i < 2; i++) {
		cr_assert(s_async(ctx, &ev, 3000, true), "event %d of 2 missing (CQ_ERR %d, QP_FATAL %d)",
			  i + 1, cq_err, qp_fatal);
		if (ev.event_type == IBV_EVENT_CQ_ERR) {
			cr_assert_not(cq_err, "a second CQ_ERR");
			cr_assert_eq(ev.element.cq, cq);
			cq_err = true;
		} else {
			cr_assert_eq(ev.event_type, IBV_EVENT_QP_FATAL, "%s",
				     ibv_event_type_str(ev.event_type));
			cr_assert_not(qp_fatal, "a second QP_FATAL");
			cr_assert_eq(ev.element.qp, qp);
			qp_fatal = true;
		}
		ibv_ack_async_event(&ev);
	}
	cr_assert_not(s_async(ctx, &ev, 100, true), "unexpected %s", ibv_event_type_str(ev.event_type));
}

/*
 * Receive side: three SENDs into a QP whose receive CQ holds one completion
 * and nobody polls.  The first receive completes into the CQ; the second
 * finds it full: CQ_ERR, the receiving QP goes to ERR (QP_FATAL, IBTA's CQ
 * overrun), and that completion is not lost: once the application polls, it
 * comes out with its status and length, followed by the third receive
 * flushed.  The receiver acknowledges the two SENDs it accepted before it
 * goes to ERR; the third is never accepted (the sender's retries run out).
 */
Test(events, cq_err_when_the_engine_overflows_a_cq)
{
	struct pair p;
	struct ibv_cq *small;
	struct ibv_qp *a2, *b2;
	struct ibv_async_event ev;
	struct ibv_wc wc[8];
	int n = 3, got;

	pair_up(&p, S_COLOCATED_1, 7, 14);
	small = ibv_create_cq(p.B.ctx, 1, NULL, NULL, 0);
	cr_assert_not_null(small);
	cr_assert_eq(small->cqe, 1, "a 1-entry CQ holds %d", small->cqe);
	a2 = s_rc_qp(&p.A, p.ascq, p.arcq, NULL, 64, 8);
	b2 = s_rc_qp(&p.B, p.bscq, small, NULL, 8, 64);
	s_rc_connect(a2, &p.B, b2->qp_num, 2, 12);
	s_rc_connect(b2, &p.A, a2->qp_num, 2, 12);
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)p.B.buf + 256 * i, .length = 256,
				       .lkey = p.B.mr->lkey };
		struct ibv_recv_wr w = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		cr_assert_eq(ibv_post_recv(b2, &w, &bad), 0);
	}
	for (int i = 0; i < n; i++)
		memset(p.A.buf + 1024 + 64 * i, 0xa0 + i, 64);
	cr_assert_not(s_async(p.B.ctx, &ev, 50, true), "event before the overflow: %s",
		      ibv_event_type_str(ev.event_type));
	for (int i = 0; i < n; i++)
		cr_assert_eq(s_post_send(a2, &p.A, 100 + i, 1024 + 64 * i, 64, IBV_SEND_SIGNALED), 0);
	expect_overrun_events(p.B.ctx, small, b2);
	cr_assert_eq(qp_state(b2), IBV_QPS_ERR);

	/* everything the receiver completed comes out, in order, then the flush */
	got = tc_poll(small, wc, n, 3000);
	cr_assert_eq(got, n, "%d of %d receive completions", got, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(wc[i].wr_id, (uint64_t)i);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "receive %d: %s", i,
			     ibv_wc_status_str(wc[i].status));
		cr_assert_eq(wc[i].opcode, IBV_WC_RECV);
		cr_assert_eq(wc[i].byte_len, 64);
		for (int k = 0; k < 64; k++)
			cr_assert_eq(p.B.buf[256 * i + k], 0xa0 + i, "receive %d byte %d", i, k);
	}
	cr_assert_eq(wc[2].status, IBV_WC_WR_FLUSH_ERR, "%s", ibv_wc_status_str(wc[2].status));
	cr_assert_eq(tc_poll(small, wc, 1, 20), 0, "a completion too many");

	/* the sender: the first SEND acknowledged; the rest fail, none is lost */
	got = tc_poll(p.ascq, wc, n, 5000);
	cr_assert_eq(got, n, "%d of %d send completions", got, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(wc[i].wr_id, 100u + i);
	/* the receiver acknowledged what it accepted before it went to ERR */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "SEND %d: %s", i, ibv_wc_status_str(wc[i].status));
	cr_assert_eq(wc[2].status, IBV_WC_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc[2].status));
	expect_event(p.A.ctx, IBV_EVENT_QP_FATAL, a2, true);
	cr_assert_eq(ibv_destroy_qp(a2), 0);
	cr_assert_eq(ibv_destroy_qp(b2), 0);
	cr_assert_eq(ibv_destroy_cq(small), 0);
}

/*
 * Send side, the case: 64 signaled RDMA WRITEs into a 4-entry send
 * CQ nobody polls.  The CQ reports CQ_ERR, the QP goes to ERR (QP_FATAL); no
 * completion is lost: the application then polls exactly 64, in posting
 * order, the WRITEs that were executed (their bytes are in the target) with
 * success and the rest flushed.  The CQ works on: a WR posted to the QP in
 * ERR completes flushed.
 */
static void
send_side_overrun(enum s_mode mode)
{
	enum { N = 64, LEN = 256 };
	struct pair p;
	struct ibv_cq *small;
	struct ibv_qp *a2, *b2;
	struct ibv_wc wc[N + 1];
	int got, ok = 0;

	pair_up(&p, mode, 7, 14);
	small = ibv_create_cq(p.A.ctx, 4, NULL, NULL, 0);
	cr_assert_not_null(small);
	cr_assert_eq(small->cqe, 4, "a 4-entry CQ holds %d", small->cqe);
	a2 = s_rc_qp(&p.A, small, p.arcq, NULL, N, 8);
	b2 = s_rc_qp(&p.B, p.bscq, p.brcq, NULL, 8, 8);
	s_rc_connect(a2, &p.B, b2->qp_num, 7, 14);
	s_rc_connect(b2, &p.A, a2->qp_num, 7, 14);
	for (int i = 0; i < N; i++)
		memset(p.A.buf + (size_t)LEN * i, 0x11 + i, LEN);
	memset(p.B.buf, 0, (size_t)LEN * N);
	for (int i = 0; i < N; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)p.A.buf + (size_t)LEN * i, .length = LEN,
				       .lkey = p.A.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 1000 + i, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = { .remote_addr = (uintptr_t)p.B.buf + (size_t)LEN * i,
						      .rkey = p.B.mr->rkey } };
		struct ibv_send_wr *bad;

		cr_assert_eq(ibv_post_send(a2, &w, &bad), 0, "WRITE %d", i);
	}
	expect_overrun_events(p.A.ctx, small, a2);
	cr_assert_eq(qp_state(a2), IBV_QPS_ERR);

	got = tc_poll(small, wc, N, 3000);
	cr_assert_eq(got, N, "%d of %d completions", got, N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(wc[i].wr_id, 1000u + i, "completion %d is WR %" PRIu64, i, wc[i].wr_id);
		cr_assert_eq(wc[i].qp_num, a2->qp_num);
		if (wc[i].status == IBV_WC_SUCCESS) {
			cr_assert_eq(ok, i, "success after a flush (completion %d)", i);
			cr_assert_eq(wc[i].opcode, IBV_WC_RDMA_WRITE);
			for (int k = 0; k < LEN; k++)
				cr_assert_eq(p.B.buf[(size_t)LEN * i + k], 0x11 + i, "WRITE %d byte %d", i, k);
			ok++;
		} else {
			cr_assert_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR, "completion %d: %s", i,
				     ibv_wc_status_str(wc[i].status));
		}
	}
	cr_assert_geq(ok, 4, "only %d WRITEs completed before the overrun", ok);
	cr_assert_eq(tc_poll(small, wc, 1, 20), 0, "a completion too many");
	cr_log_info("CQ overrun: %d WRITEs completed with success, %d flushed", ok, N - ok);

	/* the CQ goes on working: a WR posted to the QP in ERR completes flushed */
	cr_assert_eq(s_post_send(a2, &p.A, 2000, 0, 8, 0), 0);
	wc[0] = tc_wait(small, 3000, "WR posted in ERR");
	cr_assert_eq(wc[0].wr_id, 2000);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR, "%s", ibv_wc_status_str(wc[0].status));
	cr_assert_eq(qp_state(b2), IBV_QPS_RTS, "the responder is not affected");
	cr_assert_eq(ibv_destroy_qp(a2), 0);
	cr_assert_eq(ibv_destroy_qp(b2), 0);
	cr_assert_eq(ibv_destroy_cq(small), 0);
}

Test(events, cq_overrun_moves_the_qp_to_err_and_loses_nothing)
{
	send_side_overrun(S_COLOCATED_1);
}

/* The same with the engine on its own lcore (it alone drains the stash). */
Test(events, cq_overrun_loses_nothing_dedicated_engine)
{
	send_side_overrun(S_DEDICATED_1);
}
