/* SPDX-License-Identifier: BSD-3-Clause
 * Async events provoked for real and read with ibv_get_async_event: QP fatal
 * (a bad rkey; a link cut that exhausts the retries), port error / active
 * (droce_port_set_link), CQ error on an engine-side overflow, and
 * solicited-only CQ notification end to end.
 */
#include <errno.h>
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

Test(events, cq_err_when_the_engine_overflows_a_cq)
{
	struct pair p;
	struct ibv_cq *small;
	struct ibv_qp *a2, *b2;
	struct ibv_async_event ev;
	struct ibv_wc wc[64];
	int n, got = 0;

	pair_up(&p, S_COLOCATED_1, 7, 14);
	/* a second QP pair whose receiver completes into a CQ nobody polls */
	small = ibv_create_cq(p.B.ctx, 1, NULL, NULL, 0);
	cr_assert_not_null(small);
	cr_assert_geq(small->cqe, 1);
	n = small->cqe + 2;
	cr_assert_leq(n, 64);
	a2 = s_rc_qp(&p.A, p.ascq, p.arcq, NULL, 64, 8);
	b2 = s_rc_qp(&p.B, p.bscq, small, NULL, 8, 64);
	s_rc_connect(a2, &p.B, b2->qp_num, 7, 14);
	s_rc_connect(b2, &p.A, a2->qp_num, 7, 14);
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)p.B.buf + 256 * i, .length = 256,
				       .lkey = p.B.mr->lkey };
		struct ibv_recv_wr w = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		cr_assert_eq(ibv_post_recv(b2, &w, &bad), 0);
	}
	cr_assert_not(s_async(p.B.ctx, &ev, 50, true), "event before the overflow: %s",
		      ibv_event_type_str(ev.event_type));
	for (int i = 0; i < n; i++)
		cr_assert_eq(s_post_send(a2, &p.A, 100 + i, 0, 64, IBV_SEND_SIGNALED), 0);
	/* the sender completes every SEND (the receiver ACKs them) ... */
	while (got < n) {
		int k = tc_poll(p.ascq, wc, n - got, 3000);

		cr_assert_gt(k, 0, "%d of %d SENDs completed", got, n);
		for (int i = 0; i < k; i++)
			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "%s",
				     ibv_wc_status_str(wc[i].status));
		got += k;
	}
	/* ... and the receive CQ, too small for them, reports its overflow once */
	cr_assert(s_async(p.B.ctx, &ev, 3000, true), "no CQ_ERR");
	cr_assert_eq(ev.event_type, IBV_EVENT_CQ_ERR, "%s", ibv_event_type_str(ev.event_type));
	cr_assert_eq(ev.element.cq, small);
	ibv_ack_async_event(&ev);
	cr_assert_not(s_async(p.B.ctx, &ev, 100, true), "unexpected %s",
		      ibv_event_type_str(ev.event_type));
	cr_assert_eq(ibv_destroy_qp(a2), 0);
	cr_assert_eq(ibv_destroy_qp(b2), 0);
	cr_assert_eq(ibv_destroy_cq(small), 0);
}
