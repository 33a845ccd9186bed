/* SPDX-License-Identifier: BSD-3-Clause
 * RC errors provoked for real, end to end: remote access (rkey, bounds,
 * address overflow, MR and QP rights, PD), local protection (lkey, SGE
 * bounds, local write right), RNR (late receive; retries exhausted),
 * receive buffer too small, transport retries exhausted (peer in ERR/RESET,
 * no such QP), modify to ERR flushing everything, max_dest_rd_atomic.
 * After an error the failing WQE completes with its status and every later
 * one with WR_FLUSH_ERR, in posting order, signaled or not; receives posted
 * on a QP in ERR flush too.
 *
 * Over 800 lines because each error class needs its own provoking setup
 * around the shared harness; the cases are independent, and split by class
 * if the file grows further.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>

#include "harness.h"
#include "dataplane/xport.h"

#define POLL_MS 10000
#define LEN 4096
#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)

TestSuite(rc_errors, .fini = h_stop, .timeout = 120);

static void
start(void)
{
	struct h_cfg cfg = { 0 };

	h_start(&cfg, false);
}

static void
pair(struct h_pair *p, const struct h_conn_opts *o)
{
	h_pair_create_cqs(p, 64, 64, 256);
	h_pair_connect(p, o);
}

/* Posts @n follow-up WQEs (SEND, WRITE unsignaled, READ) that must all be flushed. */
static void
post_followers(struct h_pair *p, struct h_buf *lb, struct h_buf *rb, uint64_t wr_id0)
{
	struct droce_wqe w;

	w = h_wqe(wr_id0, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, lb, 0, 64);
	h_post_send(p->qp[0], &w);
	w = h_wqe(wr_id0 + 1, DROCE_WR_RDMA_WRITE, 0); /* unsignaled: a flush still completes it */
	h_wqe_sge(&w, lb, 0, 64);
	w.remote_addr = h_va(rb, 0);
	w.rkey = rb->mr.rkey;
	h_post_send(p->qp[0], &w);
	w = h_wqe(wr_id0 + 2, DROCE_WR_RDMA_READ, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, lb, 128, 64);
	w.remote_addr = h_va(rb, 0);
	w.rkey = rb->mr.rkey;
	h_post_send(p->qp[0], &w);
}

static void
expect_flushed(struct droce_cq *cq, uint64_t wr_id0, unsigned int n, uint32_t qpn, const char *ctx)
{
	for (unsigned int i = 0; i < n; i++) {
		char what[128];
		struct droce_cqe c;

		snprintf(what, sizeof(what), "%s: flushed WR %u", ctx, i);
		c = h_poll1(cq, POLL_MS, what);
		h_check_err_cqe(&c, wr_id0 + i, DROCE_WC_WR_FLUSH_ERR, qpn, what);
	}
}

/*
 * One remote error case on a fresh pair: QP0 posts @w (addressing @rb), then
 * three followers; a receive is posted on QP0 (flushed when it enters ERR)
 * and one on QP1 (flushed when the responder enters ERR).
 */
static void
remote_error(const char *ctx, struct droce_wqe *w, struct h_buf *lb, struct h_buf *rb,
	     const struct h_conn_opts *o, uint32_t want, bool responder_err)
{
	struct h_pair p;
	struct droce_rqe r;
	struct droce_cqe c;
	uint8_t before[LEN];

	pair(&p, o);
	r = h_rqe(0x51);
	h_rqe_sge(&r, lb, 2048, 1024);
	h_post_recv(p.qp[0], &r);
	r = h_rqe(0x52);
	h_rqe_sge(&r, rb, 2048, 1024);
	h_post_recv(p.qp[1], &r);
	memcpy(before, rb->p, RTE_MIN(rb->len, (size_t)LEN));

	h_post_send(p.qp[0], w);
	post_followers(&p, lb, rb, 0x100);
	c = h_poll1(p.scq[0], POLL_MS, ctx);
	h_check_err_cqe(&c, w->wr_id, want, p.qpn[0], ctx);
	expect_flushed(p.scq[0], 0x100, 3, p.qpn[0], ctx);
	c = h_poll1(p.rcq[0], POLL_MS, ctx);
	h_check_err_cqe(&c, 0x51, DROCE_WC_WR_FLUSH_ERR, p.qpn[0], ctx);
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_ERR, "%s: requester state %d", ctx,
		     h_qp_state(p.qp[0]));
	if (responder_err) {
		/* IBTA: the responder of an RC remote access / invalid request error enters ERR */
		c = h_poll1(p.rcq[1], POLL_MS, ctx);
		h_check_err_cqe(&c, 0x52, DROCE_WC_WR_FLUSH_ERR, p.qpn[1], ctx);
		cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_ERR, "%s: responder state %d", ctx,
			     h_qp_state(p.qp[1]));
	}
	/* nothing of the failed WRITE (or any follower) reached the target */
	cr_assert_eq(memcmp(before, rb->p, RTE_MIN(rb->len, (size_t)LEN)), 0,
		     "%s: target memory changed", ctx);
	h_expect_empty(p.scq[0], 10, ctx);
	h_expect_empty(p.scq[1], 0, ctx);
	cr_assert_eq(h_qp_stats(p.qp[0])->rem_err_naks_rx, 1, "%s: NAKs received %" PRIu64, ctx,
		     h_qp_stats(p.qp[0])->rem_err_naks_rx);
}

static struct droce_wqe
rwqe(uint64_t wr_id, uint8_t op, struct h_buf *lb, uint32_t len, uint64_t va, uint32_t rkey)
{
	struct droce_wqe w = h_wqe(wr_id, op, DROCE_WQE_SIGNALED);

	h_wqe_sge(&w, lb, 0, len);
	w.remote_addr = va;
	w.rkey = rkey;
	w.compare_add = 1;
	return w;
}

Test(rc_errors, remote_access)
{
	struct h_buf lb, rb, ro, wo, na, other_pd, top;
	struct h_conn_opts o;
	struct droce_wqe w;
	uint32_t bad_rkey;

	start();
	o = h_conn_defaults(1024);
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	h_buf_init(&ro, LEN, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_READ);
	h_buf_init(&wo, LEN, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	h_buf_init(&na, LEN, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
				     DROCE_ACCESS_REMOTE_READ);
	h_buf_init_ex(&other_pd, LEN, ALL_ACCESS, H_PD + 1, 0);
	/* an MR whose last byte is just below 2^64 - 4096 */
	h_buf_init_ex(&top, LEN, ALL_ACCESS, H_PD, 0xffffffffffffe000ull);
	bad_rkey = rb.mr.rkey ^ 0x100; /* another table index: no such key */

	w = rwqe(1, DROCE_WR_RDMA_WRITE, &lb, 64, h_va(&rb, 0), bad_rkey);
	remote_error("WRITE wrong rkey", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(2, DROCE_WR_RDMA_WRITE, &lb, 64, h_va(&rb, 0), rb.mr.rkey ^ 1);
	remote_error("WRITE stale rkey tag", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(3, DROCE_WR_RDMA_READ, &lb, 64, h_va(&rb, 0), bad_rkey);
	remote_error("READ wrong rkey", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(4, DROCE_WR_ATOMIC_FETCH_AND_ADD, &lb, 8, h_va(&rb, 0), bad_rkey);
	remote_error("FETCH_ADD wrong rkey", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(5, DROCE_WR_ATOMIC_CMP_AND_SWP, &lb, 8, h_va(&rb, 0), bad_rkey);
	remote_error("CMP_SWAP wrong rkey", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);

	/* bounds: one byte past the end, before the start, a multi-packet write running off the end */
	w = rwqe(10, DROCE_WR_RDMA_WRITE, &lb, 64, h_va(&rb, LEN - 63), rb.mr.rkey);
	remote_error("WRITE one byte past the end", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(11, DROCE_WR_RDMA_READ, &lb, 64, h_va(&rb, 0) - 1, rb.mr.rkey);
	remote_error("READ one byte before the start", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(12, DROCE_WR_RDMA_WRITE, &lb, 3000, h_va(&rb, 2000), rb.mr.rkey);
	remote_error("3-packet WRITE running off the end", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR,
		     true);
	w = rwqe(13, DROCE_WR_ATOMIC_FETCH_AND_ADD, &lb, 8, h_va(&rb, LEN), rb.mr.rkey);
	remote_error("FETCH_ADD at the end", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR, true);
	/* va + len wraps past 2^64: va is inside nothing but a naive end check passes */
	w = rwqe(14, DROCE_WR_RDMA_WRITE, &lb, 0x20, 0xfffffffffffffff0ull, top.mr.rkey);
	remote_error("WRITE va+len overflow", &w, &lb, &top, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(15, DROCE_WR_RDMA_READ, &lb, 0x20, 0xfffffffffffffff0ull, top.mr.rkey);
	remote_error("READ va+len overflow", &w, &lb, &top, &o, DROCE_WC_REM_ACCESS_ERR, true);

	/* rights of the MR */
	w = rwqe(20, DROCE_WR_RDMA_WRITE, &lb, 64, h_va(&ro, 0), ro.mr.rkey);
	remote_error("WRITE to a read-only MR", &w, &lb, &ro, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(21, DROCE_WR_RDMA_READ, &lb, 64, h_va(&wo, 0), wo.mr.rkey);
	remote_error("READ from a write-only MR", &w, &lb, &wo, &o, DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(22, DROCE_WR_ATOMIC_FETCH_AND_ADD, &lb, 8, h_va(&na, 0), na.mr.rkey);
	remote_error("atomic on an MR without REMOTE_ATOMIC", &w, &lb, &na, &o,
		     DROCE_WC_REM_ACCESS_ERR, true);
	w = rwqe(23, DROCE_WR_RDMA_WRITE, &lb, 64, h_va(&other_pd, 0), other_pd.mr.rkey);
	remote_error("WRITE to an MR of another PD", &w, &lb, &other_pd, &o, DROCE_WC_REM_ACCESS_ERR,
		     true);

	/* rights of the responder QP */
	o.access = DROCE_ACCESS_REMOTE_READ;
	w = rwqe(30, DROCE_WR_RDMA_WRITE, &lb, 64, h_va(&rb, 0), rb.mr.rkey);
	remote_error("WRITE to a QP without REMOTE_WRITE", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR,
		     true);
	o.access = DROCE_ACCESS_REMOTE_WRITE;
	w = rwqe(31, DROCE_WR_RDMA_READ, &lb, 64, h_va(&rb, 0), rb.mr.rkey);
	remote_error("READ from a QP without REMOTE_READ", &w, &lb, &rb, &o, DROCE_WC_REM_ACCESS_ERR,
		     true);
	w = rwqe(32, DROCE_WR_ATOMIC_FETCH_AND_ADD, &lb, 8, h_va(&rb, 0), rb.mr.rkey);
	remote_error("atomic on a QP without REMOTE_ATOMIC", &w, &lb, &rb, &o,
		     DROCE_WC_REM_ACCESS_ERR, true);
}

/* A zero-length WRITE / READ names no memory: any rkey is fine (IBTA 9.4.4). */
Test(rc_errors, zero_length_needs_no_rkey)
{
	struct h_pair p;
	struct h_buf lb;
	struct h_conn_opts o;

	start();
	o = h_conn_defaults(1024);
	h_buf_init(&lb, LEN, ALL_ACCESS);
	pair(&p, &o);
	for (unsigned int i = 0; i < 2; i++) {
		uint8_t op = i ? DROCE_WR_RDMA_READ : DROCE_WR_RDMA_WRITE;
		struct droce_wqe w = h_wqe(40 + i, op, DROCE_WQE_SIGNALED);
		struct droce_cqe c;
		struct h_expect e = { .wr_id = 40 + i, .status = DROCE_WC_SUCCESS,
				      .opcode = i ? DROCE_WC_RDMA_READ : DROCE_WC_RDMA_WRITE,
				      .qp_num = p.qpn[0] };

		w.remote_addr = 0x1234;
		w.rkey = 0xdeadbe00;
		h_post_send(p.qp[0], &w);
		c = h_poll1(p.scq[0], POLL_MS, "zero-length");
		h_check_cqe(&c, &e, i ? "zero-length READ" : "zero-length WRITE");
	}
	cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_RTS);
}

/* Local protection: the requester's own SGEs. */
static void
local_error(const char *ctx, struct droce_wqe *w, struct h_buf *lb, struct h_buf *rb)
{
	struct h_pair p;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_cqe c;

	pair(&p, &o);
	h_post_send(p.qp[0], w);
	post_followers(&p, lb, rb, 0x200);
	c = h_poll1(p.scq[0], POLL_MS, ctx);
	h_check_err_cqe(&c, w->wr_id, DROCE_WC_LOC_PROT_ERR, p.qpn[0], ctx);
	expect_flushed(p.scq[0], 0x200, 3, p.qpn[0], ctx);
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_ERR, "%s: state %d", ctx, h_qp_state(p.qp[0]));
	/* the peer saw nothing wrong */
	cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_RTS, "%s: peer state %d", ctx,
		     h_qp_state(p.qp[1]));
	cr_assert_eq(h_qp_stats(p.qp[1])->rem_err_naks_tx, 0);
}

Test(rc_errors, local_protection)
{
	struct h_buf lb, rb, ro_local;
	struct droce_wqe w;

	start();
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	h_buf_init(&ro_local, LEN, DROCE_ACCESS_REMOTE_READ); /* no LOCAL_WRITE */

	w = h_wqe(1, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 64);
	w.sge[0].lkey ^= 0x100;
	local_error("SEND bad lkey", &w, &lb, &rb);

	w = h_wqe(2, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 64);
	h_wqe_sge(&w, &lb, LEN - 10, 11); /* second SGE one byte past the MR */
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	local_error("WRITE SGE out of bounds", &w, &lb, &rb);

	w = h_wqe(3, DROCE_WR_RDMA_READ, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &ro_local, 0, 64); /* READ into memory without local write */
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	local_error("READ into an MR without LOCAL_WRITE", &w, &lb, &rb);

	w = h_wqe(4, DROCE_WR_ATOMIC_FETCH_AND_ADD, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 8);
	w.sge[0].lkey ^= 0x100;
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	local_error("FETCH_ADD bad result lkey", &w, &lb, &rb);

	w = h_wqe(5, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 64);
	w.sge[0].addr = h_va(&lb, 0) - 64; /* before the MR */
	local_error("SEND SGE before the MR", &w, &lb, &rb);
}

/* SEND before any receive: RNR NAKs (rnr_retry 7 = forever), then it completes once one is posted. */
Test(rc_errors, rnr_then_late_receive)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o;
	struct droce_wqe w;
	struct droce_rqe r;
	struct droce_cqe c;
	struct h_expect e;

	start();
	o = h_conn_defaults(1024);
	o.rnr_retry = 7;
	o.min_rnr_timer = 1; /* 0.01 ms */
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	pair(&p, &o);
	h_fill(lb.p, 3000, 77);
	w = h_wqe(0x61, DROCE_WR_SEND_WITH_IMM, DROCE_WQE_SIGNALED);
	w.imm = rte_cpu_to_be_32(0x01020304);
	h_wqe_sges(&w, &lb, 0, 3000, 3);
	h_post_send(p.qp[0], &w);
	h_expect_empty(p.scq[0], 100, "SEND without a receive");
	h_expect_empty(p.rcq[1], 0, "receiver without a receive");
	cr_assert_geq(h_qp_stats(p.qp[0])->rnr_naks_rx, 3, "RNR NAKs received: %" PRIu64,
		      h_qp_stats(p.qp[0])->rnr_naks_rx);
	cr_assert_geq(h_qp_stats(p.qp[1])->rnr_naks_tx, 3, "RNR NAKs sent: %" PRIu64,
		      h_qp_stats(p.qp[1])->rnr_naks_tx);

	r = h_rqe(0x62);
	h_rqe_sges(&r, &rb, 0, 4000, 2);
	h_post_recv(p.qp[1], &r);
	c = h_poll1(p.scq[0], POLL_MS, "SEND after the late receive");
	e = (struct h_expect){ .wr_id = 0x61, .status = DROCE_WC_SUCCESS, .opcode = DROCE_WC_SEND,
			       .byte_len = 3000, .qp_num = p.qpn[0] };
	h_check_cqe(&c, &e, "sender");
	c = h_poll1(p.rcq[1], POLL_MS, "late receive");
	e = (struct h_expect){ .wr_id = 0x62, .status = DROCE_WC_SUCCESS, .opcode = DROCE_WC_RECV,
			       .byte_len = 3000, .imm = rte_cpu_to_be_32(0x01020304),
			       .wc_flags = DROCE_WC_F_WITH_IMM, .qp_num = p.qpn[1],
			       .src_qp = p.qpn[0] };
	h_check_cqe(&c, &e, "receiver");
	cr_assert_eq(h_check_fill(rb.p, 3000, 77), -1, "received bytes");
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_RTS);
}

/* RNR with rnr_retry 2 and no receive ever: 3 RNR NAKs, then RNR_RETRY_EXC_ERR and flush. */
Test(rc_errors, rnr_retry_exceeded)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o;
	struct droce_wqe w;
	struct droce_cqe c;

	start();
	o = h_conn_defaults(1024);
	o.rnr_retry = 2;
	o.min_rnr_timer = 1;
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	pair(&p, &o);
	w = h_wqe(0x71, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 100);
	h_post_send(p.qp[0], &w);
	post_followers(&p, &lb, &rb, 0x300);
	c = h_poll1(p.scq[0], POLL_MS, "RNR retries exhausted");
	h_check_err_cqe(&c, 0x71, DROCE_WC_RNR_RETRY_EXC_ERR, p.qpn[0], "RNR retries exhausted");
	expect_flushed(p.scq[0], 0x300, 3, p.qpn[0], "after RNR_RETRY_EXC_ERR");
	cr_assert_eq(h_qp_stats(p.qp[0])->rnr_naks_rx, 3,
		     "rnr_retry 2 means 1 try + 2 retries = 3 RNR NAKs, got %" PRIu64,
		     h_qp_stats(p.qp[0])->rnr_naks_rx);
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_ERR);
	/* RNR is not an error for the responder */
	cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_RTS);
}

/* A SEND longer than the receive: receiver LOC_LEN_ERR, sender REM_INV_REQ_ERR. */
static void
recv_too_small(uint32_t pmtu, uint32_t send_len, uint32_t recv_len)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(pmtu);
	struct droce_wqe w;
	struct droce_rqe r;
	struct droce_cqe c;
	char ctx[96];

	snprintf(ctx, sizeof(ctx), "pmtu %u SEND %u into %u", pmtu, send_len, recv_len);
	h_buf_init(&lb, 8192, ALL_ACCESS);
	h_buf_init(&rb, 8192, ALL_ACCESS);
	memset(rb.p, 0xee, 8192);
	pair(&p, &o);
	r = h_rqe(0x81);
	h_rqe_sges(&r, &rb, 0, recv_len, 2);
	h_post_recv(p.qp[1], &r);
	r = h_rqe(0x82); /* a second receive: flushed when the responder enters ERR */
	h_rqe_sge(&r, &rb, 4096, 4096);
	h_post_recv(p.qp[1], &r);
	w = h_wqe(0x80, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, send_len);
	h_post_send(p.qp[0], &w);
	post_followers(&p, &lb, &rb, 0x400);

	c = h_poll1(p.rcq[1], POLL_MS, ctx);
	h_check_err_cqe(&c, 0x81, DROCE_WC_LOC_LEN_ERR, p.qpn[1], ctx);
	c = h_poll1(p.rcq[1], POLL_MS, ctx);
	h_check_err_cqe(&c, 0x82, DROCE_WC_WR_FLUSH_ERR, p.qpn[1], ctx);
	c = h_poll1(p.scq[0], POLL_MS, ctx);
	h_check_err_cqe(&c, 0x80, DROCE_WC_REM_INV_REQ_ERR, p.qpn[0], ctx);
	expect_flushed(p.scq[0], 0x400, 3, p.qpn[0], ctx);
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_ERR);
	cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_ERR);
	/* nothing was written past the receive buffer */
	for (uint32_t i = recv_len; i < 4096; i++)
		cr_assert_eq(rb.p[i], 0xee, "%s: byte %u past the receive buffer written", ctx, i);
}

Test(rc_errors, recv_too_small)
{
	start();
	recv_too_small(1024, 200, 100);   /* one packet */
	recv_too_small(1024, 3000, 1500); /* fails at the second packet */
	recv_too_small(256, 257, 256);    /* one byte too long */
}

/* Nobody answers: local ACK timeout retry_cnt + 1 times, then RETRY_EXC_ERR and flush. */
static void
unreachable(const char *ctx, int how)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_wqe w;
	struct droce_cqe c;
	struct timespec t0, t1;
	double ms;

	o.timeout = 8; /* 4.096 us * 2^8 = 1.05 ms */
	o.retry_cnt = 3;
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	h_pair_create_cqs(&p, 64, 64, 256);
	if (how == 2) {
		/* dest_qpn names a QP that does not exist on the peer */
		h_connect(p.qp[0], 0, 1, p.qpn[1] + (1u << 12), H_PSN_A, H_PSN_B, &o);
		h_connect(p.qp[1], 1, 0, p.qpn[0], H_PSN_B, H_PSN_A, &o);
	} else if (how == 3) {
		/* the peer's port loses its link (the impaired link's cable pull) */
		h_pair_connect(&p, &o);
		droce_port_set_link(droce_port_get(1), false);
	} else {
		h_pair_connect(&p, &o);
		h_modify_state(p.qp[1], how == 0 ? DROCE_QPS_ERR : DROCE_QPS_RESET);
	}
	h_spin(1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	w = h_wqe(0x90, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 2000);
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	h_post_send(p.qp[0], &w);
	post_followers(&p, &lb, &rb, 0x500);
	c = h_poll1(p.scq[0], POLL_MS, ctx);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	h_check_err_cqe(&c, 0x90, DROCE_WC_RETRY_EXC_ERR, p.qpn[0], ctx);
	expect_flushed(p.scq[0], 0x500, 3, p.qpn[0], ctx);
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_ERR);
	cr_assert_eq(h_qp_stats(p.qp[0])->timeouts, 4,
		     "%s: retry_cnt 3 means 4 local ACK timeouts, got %" PRIu64, ctx,
		     h_qp_stats(p.qp[0])->timeouts);
	cr_assert_eq(h_qp_stats(p.qp[0])->retransmits, 3, "%s: retransmits %" PRIu64, ctx,
		     h_qp_stats(p.qp[0])->retransmits);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	cr_assert_geq(ms, 4 * 1.05 * 0.9, "%s: gave up after %.2f ms, before 4 timeouts of 1.05 ms",
		      ctx, ms);
}

Test(rc_errors, retry_exceeded_peer_in_err) { start(); unreachable("peer QP in ERR", 0); }
Test(rc_errors, retry_exceeded_peer_in_reset) { start(); unreachable("peer QP in RESET", 1); }
Test(rc_errors, retry_exceeded_no_such_qp) { start(); unreachable("dest_qpn names no QP", 2); }
Test(rc_errors, retry_exceeded_link_down) { start(); unreachable("peer port link down", 3); }

/* A link that goes down and comes back within the retry budget: the WQE survives. */
Test(rc_errors, link_down_then_up_recovers)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_wqe w;
	struct droce_cqe c;

	uint64_t deadline;

	start();
	/* 16.8 ms local ACK timeout, 7 retries: the link comes back well inside
	 * the budget even when this thread is descheduled for a while */
	o.timeout = 12;
	o.retry_cnt = 7;
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	h_fill(lb.p, LEN, 31);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	droce_port_set_link(droce_port_get(1), false);
	w = h_wqe(0x95, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 3000);
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	h_post_send(p.qp[0], &w);
	/* nothing completes while the link is down; wait for the first timeout */
	deadline = tc_now_ms() + 2000;
	while (h_qp_stats(p.qp[0])->timeouts == 0 && tc_now_ms() < deadline)
		h_expect_empty(p.scq[0], 1, "link down");
	cr_assert_geq(h_qp_stats(p.qp[0])->timeouts, 1, "no timeout while the link was down");
	droce_port_set_link(droce_port_get(1), true);
	c = h_poll1(p.scq[0], POLL_MS, "after the link came back");
	cr_assert_eq(c.wr_id, 0x95);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	cr_assert_eq(h_check_fill(rb.p, 3000, 31), -1);
}

/* Modify to ERR: every outstanding send and receive WR flushes, in order; later posts flush too. */
Test(rc_errors, modify_to_err_flushes)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_wqe w;
	struct droce_rqe r;

	start();
	o.timeout = 0; /* no local ACK timeout: outstanding forever */
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_connect(p.qp[0], 0, 1, p.qpn[1] + (1u << 12), H_PSN_A, H_PSN_B, &o); /* nobody answers */
	h_connect(p.qp[1], 1, 0, p.qpn[0], H_PSN_B, H_PSN_A, &o);
	for (unsigned int i = 0; i < 6; i++) {
		static const uint8_t ops[] = { DROCE_WR_SEND, DROCE_WR_RDMA_WRITE, DROCE_WR_RDMA_READ,
					       DROCE_WR_ATOMIC_FETCH_AND_ADD, DROCE_WR_SEND_WITH_IMM,
					       DROCE_WR_RDMA_WRITE_WITH_IMM };
		w = h_wqe(0xa0 + i, ops[i], i % 2 ? DROCE_WQE_SIGNALED : 0);
		h_wqe_sge(&w, &lb, 64 * i, ops[i] == DROCE_WR_ATOMIC_FETCH_AND_ADD ? 8 : 64);
		w.remote_addr = h_va(&rb, 64 * i);
		w.rkey = rb.mr.rkey;
		h_post_send(p.qp[0], &w);
	}
	for (unsigned int i = 0; i < 4; i++) {
		r = h_rqe(0xb0 + i);
		h_rqe_sge(&r, &lb, 1024 + 256 * i, 256);
		h_post_recv(p.qp[0], &r);
	}
	h_expect_empty(p.scq[0], 30, "outstanding WQEs");
	h_expect_empty(p.rcq[0], 0, "outstanding receives");
	h_modify_state(p.qp[0], DROCE_QPS_ERR);
	expect_flushed(p.scq[0], 0xa0, 6, p.qpn[0], "send WRs at modify to ERR");
	expect_flushed(p.rcq[0], 0xb0, 4, p.qpn[0], "receive WRs at modify to ERR");
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_ERR);
	/* posted while in ERR: flushed as well */
	w = h_wqe(0xc0, DROCE_WR_SEND, 0);
	h_wqe_sge(&w, &lb, 0, 64);
	h_post_send(p.qp[0], &w);
	r = h_rqe(0xc1);
	h_rqe_sge(&r, &lb, 0, 64);
	h_post_recv(p.qp[0], &r);
	expect_flushed(p.scq[0], 0xc0, 1, p.qpn[0], "send posted in ERR");
	expect_flushed(p.rcq[0], 0xc1, 1, p.qpn[0], "receive posted in ERR");
	h_expect_empty(p.scq[0], 10, "after the flush");
	h_expect_empty(p.rcq[0], 0, "after the flush");
}

/* The requester keeps to max_rd_atomic: 8 READs with max_rd_atomic 1 vs max_dest_rd_atomic 1. */
Test(rc_errors, max_rd_atomic_respected)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_cqe c[8];

	start();
	o.max_rd_atomic = 1;
	o.max_dest_rd_atomic = 1;
	h_buf_init(&lb, 1 << 20, ALL_ACCESS);
	h_buf_init(&rb, 1 << 20, ALL_ACCESS);
	h_fill(rb.p, 1 << 20, 99);
	pair(&p, &o);
	for (unsigned int i = 0; i < 8; i++) {
		uint8_t op = i % 2 ? DROCE_WR_ATOMIC_FETCH_AND_ADD : DROCE_WR_RDMA_READ;
		uint32_t len = op == DROCE_WR_RDMA_READ ? 65536 : 8;
		struct droce_wqe w = rwqe(0xd0 + i, op, &lb, 0, h_va(&rb, (size_t)i * 65536), rb.mr.rkey);

		w.num_sge = 0;
		w.length = 0;
		h_wqe_sge(&w, &lb, (size_t)i * 65536, len);
		h_post_send(p.qp[0], &w);
	}
	cr_assert_eq(h_poll(p.scq[0], 8, c, POLL_MS), 8);
	for (unsigned int i = 0; i < 8; i++) {
		cr_assert_eq(c[i].wr_id, 0xd0 + i);
		cr_assert_eq(c[i].status, DROCE_WC_SUCCESS, "WQE %u status %u", i, c[i].status);
		if (i % 2 == 0)
			cr_assert_eq(memcmp(lb.p + (size_t)i * 65536, rb.p + (size_t)i * 65536, 65536), 0);
	}
	cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_RTS);
}

/* A requester that ignores the responder's limit: the READ over it is an invalid request. */
Test(rc_errors, max_dest_rd_atomic_exceeded)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_cqe c;

	start();
	h_buf_init(&lb, 1 << 20, ALL_ACCESS);
	h_buf_init(&rb, 1 << 20, ALL_ACCESS);
	h_pair_create_cqs(&p, 64, 64, 256);
	o.max_rd_atomic = 4;
	h_connect(p.qp[0], 0, 1, p.qpn[1], H_PSN_A, H_PSN_B, &o);
	o.max_dest_rd_atomic = 1;
	h_connect(p.qp[1], 1, 0, p.qpn[0], H_PSN_B, H_PSN_A, &o);
	for (unsigned int i = 0; i < 2; i++) {
		struct droce_wqe w = rwqe(0xe0 + i, DROCE_WR_RDMA_READ, &lb, 0, h_va(&rb, 0), rb.mr.rkey);

		w.num_sge = 0;
		w.length = 0;
		h_wqe_sge(&w, &lb, (size_t)i * 512 * 1024, 512 * 1024);
		h_post_send(p.qp[0], &w);
	}
	/* the first READ was accepted and is answered; the second is NAKed */
	c = h_poll1(p.scq[0], POLL_MS, "first READ");
	cr_assert_eq(c.wr_id, 0xe0);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "first READ status %u", c.status);
	c = h_poll1(p.scq[0], POLL_MS, "second READ");
	h_check_err_cqe(&c, 0xe1, DROCE_WC_REM_INV_REQ_ERR, p.qpn[0], "READ over max_dest_rd_atomic");
}

/*
 * A forged NAK (remote access error) at PSN = next - 1, sent to a QP that has
 * sent nothing: it names no outstanding request, so it is dropped (counted as
 * a ghost ACK) and the QP stays in RTS with its receive still posted.
 */
static void
forged_aeth(const struct h_pair *p, uint32_t psn, uint8_t syndrome)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_ACK) };

	/* as if QP0 answered QP1: port0 -> port1 */
	f.pkey = 0xffff;
	f.dqpn = p->qpn[1];
	f.psn = psn;
	f.aeth.syndrome = syndrome;
	h_inject_frame(0, 1, &f, NULL, 0);
}

Test(rc_errors, forged_nak_for_nothing_outstanding_is_ignored)
{
	static const uint8_t codes[] = { DROCE_NAK_REM_ACCESS_ERR, DROCE_NAK_INVALID_REQ,
					 DROCE_NAK_REM_OP_ERR, DROCE_NAK_PSN_SEQ_ERR };
	struct h_pair p;
	struct h_buf lb, rb;
	struct droce_engine_stats st0, st1;
	struct h_conn_opts o;
	struct droce_wqe w;
	struct droce_rqe r;
	struct droce_cqe c;

	start();
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	o = h_conn_defaults(1024);
	pair(&p, &o);
	r = h_rqe(0x51);
	h_rqe_sge(&r, &rb, 0, LEN);
	h_post_recv(p.qp[1], &r);
	droce_engine_stats_get(p.qp[1]->eng->id, &st0);
	for (unsigned int i = 0; i < sizeof(codes); i++)
		forged_aeth(&p, (H_PSN_B - 1) & DROCE_PSN_MASK,
			    droce_aeth_make_syndrome(DROCE_AETH_NAK, codes[i]));
	forged_aeth(&p, (H_PSN_B - 1) & DROCE_PSN_MASK,
		    droce_aeth_make_syndrome(DROCE_AETH_RNR_NAK, 1));
	h_expect_empty(p.rcq[1], 50, "receive after forged NAKs");
	h_expect_empty(p.scq[1], 0, "send CQ after forged NAKs");
	cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_RTS, "QP state %d after a forged NAK",
		     h_qp_state(p.qp[1]));
	droce_engine_stats_get(p.qp[1]->eng->id, &st1);
	cr_assert_eq(st1.ghost_acks - st0.ghost_acks, sizeof(codes) + 1, "ghost_acks moved by %" PRIu64,
		     st1.ghost_acks - st0.ghost_acks);
	/* the QP still works both ways */
	h_fill(lb.p, LEN, 9);
	w = h_wqe(0x61, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, LEN);
	h_post_send(p.qp[0], &w);
	c = h_poll1(p.scq[0], POLL_MS, "send after forged NAKs");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	c = h_poll1(p.rcq[1], POLL_MS, "receive after forged NAKs");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(h_check_fill(rb.p, LEN, 9), -1);
	w = h_wqe(0x62, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &rb, 0, 64);
	w.remote_addr = h_va(&lb, 0);
	w.rkey = lb.mr.rkey;
	h_post_send(p.qp[1], &w);
	c = h_poll1(p.scq[1], POLL_MS, "write from the NAKed side");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
}

/* A SEND ONLY of @len bytes at @psn, as if QP0 sent it to QP1, with BTH P_Key @pkey. */
static void
forged_send(const struct h_pair *p, uint32_t psn, uint16_t pkey, const uint8_t *data, uint32_t len)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY) };

	f.pkey = pkey;
	f.dqpn = p->qpn[1];
	f.psn = psn;
	h_inject_frame(0, 1, &f, data, len);
}

/*
 * IBTA 10.9.3 on the BTH P_Key against the QP's (index 0 = 0xffff, full
 * member): 0x0000 and 0x8000 are invalid, 0x8001 / 0x1234 / 0x7ffe are
 * other partitions: dropped, counted as DROCE_DROP_PKEY, nothing delivered;
 * 0x7fff (limited member of the default partition) and 0xffff are accepted.
 */
Test(rc_errors, bth_pkey_checked)
{
	static const uint16_t bad[] = { 0x0000, 0x8000, 0x8001, 0x1234, 0x7ffe, 0xfffe };
	struct h_pair p;
	struct h_buf lb, rb;
	struct droce_engine_stats st0, st1;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_rqe r;
	struct droce_cqe c;

	start();
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	pair(&p, &o);
	for (unsigned int i = 0; i < 2; i++) {
		r = h_rqe(0x70 + i);
		h_rqe_sge(&r, &rb, 1024 * i, 1024);
		h_post_recv(p.qp[1], &r);
	}
	h_fill(lb.p, LEN, 3);
	droce_engine_stats_get(p.qp[1]->eng->id, &st0);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		forged_send(&p, H_PSN_A, bad[i], lb.p, 256);
	h_expect_empty(p.rcq[1], 50, "SENDs with a foreign P_Key");
	droce_engine_stats_get(p.qp[1]->eng->id, &st1);
	cr_assert_eq(st1.drops[DROCE_DROP_PKEY] - st0.drops[DROCE_DROP_PKEY],
		     sizeof(bad) / sizeof(bad[0]), "P_Key drops moved by %" PRIu64,
		     st1.drops[DROCE_DROP_PKEY] - st0.drops[DROCE_DROP_PKEY]);
	cr_assert_eq(st1.rx_pkts, st0.rx_pkts, "a P_Key drop counted as received");
	cr_assert_eq(h_qp_state(p.qp[1]), DROCE_QPS_RTS);
	forged_send(&p, H_PSN_A, 0x7fff, lb.p, 256);
	forged_send(&p, (H_PSN_A + 1) & DROCE_PSN_MASK, 0xffff, lb.p + 256, 256);
	for (unsigned int i = 0; i < 2; i++) {
		c = h_poll1(p.rcq[1], POLL_MS, "SEND with a matching P_Key");
		cr_assert_eq(c.status, DROCE_WC_SUCCESS);
		cr_assert_eq(c.wr_id, 0x70 + i);
		cr_assert_eq(c.byte_len, 256);
		cr_assert_eq(memcmp(rb.p + 1024 * i, lb.p + 256 * i, 256), 0);
	}
	droce_engine_stats_get(p.qp[1]->eng->id, &st1);
	cr_assert_eq(st1.drops[DROCE_DROP_PKEY] - st0.drops[DROCE_DROP_PKEY], sizeof(bad) / sizeof(bad[0]));
}

/*
 * An MR whose iova is 1 mod 8 while its host address is 8-aligned: an atomic
 * at an 8-aligned va lands on a host word 7 mod 8.  The responder NAKs it
 * (invalid request, as rxe does), the target bytes stay untouched.
 */
Test(rc_errors, atomic_on_misaligned_host_word_naked)
{
	struct h_pair p;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_wqe w;
	struct droce_cqe c;

	start();
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init_ex(&rb, LEN, ALL_ACCESS, H_PD, 0x100001);
	cr_assert_eq((uintptr_t)rb.p & 7, 0);
	h_fill(rb.p, LEN, 5);
	pair(&p, &o);
	w = h_wqe(0x81, DROCE_WR_ATOMIC_FETCH_AND_ADD, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 8);
	w.remote_addr = 0x100008; /* aligned va, host rb.p + 7 */
	w.rkey = rb.mr.rkey;
	w.compare_add = 1;
	h_post_send(p.qp[0], &w);
	c = h_poll1(p.scq[0], POLL_MS, "misaligned atomic");
	h_check_err_cqe(&c, 0x81, DROCE_WC_REM_INV_REQ_ERR, p.qpn[0], "misaligned atomic");
	cr_assert_eq(h_check_fill(rb.p, LEN, 5), -1, "target memory changed");
}

/*
 * Frames for a QP in ERR, RESET or INIT are dropped and counted as
 * qp_state_drops, not as received; nothing is delivered.
 */
Test(rc_errors, frames_for_qp_not_ready_count_as_drops)
{
	static const enum droce_qp_state states[] = { DROCE_QPS_ERR, DROCE_QPS_RESET, DROCE_QPS_INIT };
	struct h_pair p;
	struct h_buf lb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_engine_stats st0, st1;
	struct droce_cqe c[4];

	start();
	h_buf_init(&lb, LEN, ALL_ACCESS);
	pair(&p, &o);
	for (unsigned int i = 0; i < 3; i++) {
		h_modify_state(p.qp[1], states[i]);
		h_spin(5);
		(void)h_poll(p.rcq[1], 4, c, 10); /* flushes of the move to ERR, if any */
		cr_assert_eq(h_qp_state(p.qp[1]), states[i]);
		droce_engine_stats_get(p.qp[1]->eng->id, &st0);
		forged_send(&p, H_PSN_A, 0xffff, lb.p, 64);
		h_spin(20);
		droce_engine_stats_get(p.qp[1]->eng->id, &st1);
		cr_assert_eq(st1.qp_state_drops - st0.qp_state_drops, 1, "state %d: qp_state_drops moved by %" PRIu64,
			     states[i], st1.qp_state_drops - st0.qp_state_drops);
		cr_assert_eq(st1.rx_pkts, st0.rx_pkts, "state %d: counted as received", states[i]);
		h_expect_empty(p.rcq[1], 0, "after a frame for a QP not ready");
	}
}

/*
 * droce_dp_inject itself: its errors, and a frame handed over as received
 * (DROCE_INJECT_RX) on port1 is delivered like one from the wire, counted
 * in `injected`; the same frame sent on port0 (TX) crosses the link.
 */
Test(rc_errors, inject_api_errors_and_both_directions)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY) };
	static uint8_t big[70000];
	struct droce_engine_stats st0, st1;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct h_pair p;
	struct h_buf lb, rb;
	struct droce_rqe r;
	struct droce_cqe c;

	start();
	cr_assert_eq(droce_dp_inject(1, 0, DROCE_INJECT_TX, big, 64), ENODEV, "no engine 1");
	cr_assert_eq(droce_dp_inject(0, 2, DROCE_INJECT_TX, big, 64), ENODEV, "no port 2");
	cr_assert_eq(droce_dp_inject(0, 0, DROCE_INJECT_TX, big, 0), EINVAL, "empty frame");
	cr_assert_eq(droce_dp_inject(0, 0, DROCE_INJECT_RX, big, sizeof(big)), EINVAL,
		     "frame above the data room");
	cr_assert_eq(droce_dp_inject(0, 0, (enum droce_inject_dir)7, big, 64), EINVAL, "direction");
	h_buf_init(&lb, LEN, ALL_ACCESS);
	h_buf_init(&rb, LEN, ALL_ACCESS);
	pair(&p, &o);
	for (unsigned int i = 0; i < 2; i++) {
		r = h_rqe(0x90 + i);
		h_rqe_sge(&r, &rb, 1024 * i, 1024);
		h_post_recv(p.qp[1], &r);
	}
	h_fill(lb.p, LEN, 11);
	droce_engine_stats_get(0, &st0);
	f.pkey = 0xffff;
	f.dqpn = p.qpn[1];
	f.psn = H_PSN_A;
	h_inject_frame_dir(0, 1, &f, lb.p, 300, DROCE_INJECT_RX);
	c = h_poll1(p.rcq[1], POLL_MS, "SEND injected as received on port1");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(c.wr_id, 0x90);
	cr_assert_eq(c.byte_len, 300);
	cr_assert_eq(memcmp(rb.p, lb.p, 300), 0);
	f.psn = (H_PSN_A + 1) & DROCE_PSN_MASK;
	h_inject_frame_dir(0, 1, &f, lb.p + 300, 200, DROCE_INJECT_TX);
	c = h_poll1(p.rcq[1], POLL_MS, "SEND injected on port0's link");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(c.wr_id, 0x91);
	cr_assert_eq(c.byte_len, 200);
	cr_assert_eq(memcmp(rb.p + 1024, lb.p + 300, 200), 0);
	droce_engine_stats_get(0, &st1);
	cr_assert_eq(st1.injected - st0.injected, 2, "injected moved by %" PRIu64,
		     st1.injected - st0.injected);
}
