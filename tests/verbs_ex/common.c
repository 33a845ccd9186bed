/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void
x_start(void)
{
	t_start(1500, NULL);
}

void
x_open(struct x_end *e, const char *name, enum ibv_qp_type type, uint64_t ops, uint32_t send_wr)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 1024, .wc_flags = X_WC_FLAGS };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = type,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = 64, .max_send_sge = X_SGE,
			 .max_recv_sge = X_SGE, .max_inline_data = X_INLINE },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = ops,
	};

	memset(e, 0, sizeof(*e));
	e->type = type;
	e->ctx = tc_open(name, &e->gid);
	e->pd = ibv_alloc_pd(e->ctx);
	cr_assert_not_null(e->pd);
	e->buf = aligned_alloc(4096, X_BUF);
	cr_assert_not_null(e->buf);
	memset(e->buf, 0, X_BUF);
	e->mr = ibv_reg_mr(e->pd, e->buf, X_BUF, X_ACCESS);
	cr_assert_not_null(e->mr, "ibv_reg_mr: %s", strerror(errno));
	e->scq = ibv_create_cq_ex(e->ctx, &ca);
	cr_assert_not_null(e->scq, "ibv_create_cq_ex: %s", strerror(errno));
	e->rcq = ibv_create_cq_ex(e->ctx, &ca);
	cr_assert_not_null(e->rcq);
	qa.send_cq = ibv_cq_ex_to_cq(e->scq);
	qa.recv_cq = ibv_cq_ex_to_cq(e->rcq);
	qa.pd = e->pd;
	e->qp = ibv_create_qp_ex(e->ctx, &qa);
	cr_assert_not_null(e->qp, "ibv_create_qp_ex: %s", strerror(errno));
	cr_assert_geq(qa.cap.max_inline_data, X_INLINE);
	cr_assert_geq(qa.cap.max_send_wr, send_wr);
	e->qpx = ibv_qp_to_qp_ex(e->qp);
	cr_assert_not_null(e->qpx);
	cr_assert_eq((void *)&e->qpx->qp_base, (void *)e->qp);
}

void
x_to_state(struct x_end *e, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state, .port_num = 1, .qkey = 0x11111111,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	int mask = IBV_QP_STATE;

	if (state == IBV_QPS_INIT) {
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (e->type == IBV_QPT_UD) {
			mask |= IBV_QP_QKEY;
		} else {
			mask |= IBV_QP_ACCESS_FLAGS;
			if (e->type == IBV_QPT_RC)
				a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		}
	}
	cr_assert_eq(ibv_modify_qp(e->qp, &a, mask), 0, "to state %d", state);
}

void
x_connect(struct x_end *e, const struct x_end *peer)
{
	struct tc_conn c = { .dgid = peer->gid, .dest_qpn = peer->qp->qp_num, .psn = 0xfffff0 };

	tc_qp_up(e->qp, &c);
}

void
x_pair(struct x_end *a, struct x_end *b, enum ibv_qp_type type, uint64_t ops, uint32_t send_wr)
{
	x_start();
	x_open(a, "droce0", type, ops, send_wr);
	x_open(b, "droce1", type, ops, send_wr);
	x_connect(a, b);
	x_connect(b, a);
}

static struct x_wc
read_cur(struct ibv_cq_ex *cq)
{
	struct x_wc w;

	memset(&w, 0, sizeof(w));
	w.wr_id = cq->wr_id;
	w.status = cq->status;
	w.opcode = ibv_wc_read_opcode(cq);
	w.vendor_err = ibv_wc_read_vendor_err(cq);
	w.byte_len = ibv_wc_read_byte_len(cq);
	w.imm = ibv_wc_read_imm_data(cq);
	w.qp_num = ibv_wc_read_qp_num(cq);
	w.src_qp = ibv_wc_read_src_qp(cq);
	w.wc_flags = ibv_wc_read_wc_flags(cq);
	w.slid = ibv_wc_read_slid(cq);
	w.sl = ibv_wc_read_sl(cq);
	w.dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
	w.ts = ibv_wc_read_completion_ts(cq);
	w.wall = ibv_wc_read_completion_wallclock_ns(cq);
	return w;
}

struct x_wc
x_wait(struct ibv_cq_ex *cq, unsigned int ms, const char *what)
{
	uint64_t end = tc_now_ms() + ms;
	struct ibv_poll_cq_attr pa = { 0 };
	struct x_wc w;
	int rc;

	while ((rc = ibv_start_poll(cq, &pa)) == ENOENT)
		cr_assert_leq(tc_now_ms(), end, "%s: no completion within %u ms", what, ms);
	cr_assert_eq(rc, 0, "%s: start_poll %d", what, rc);
	w = read_cur(cq);
	ibv_end_poll(cq);
	return w;
}

void
x_none(struct ibv_cq_ex *cq, unsigned int ms, const char *what)
{
	uint64_t end = tc_now_ms() + ms;
	struct ibv_poll_cq_attr pa = { 0 };

	while (tc_now_ms() <= end) {
		int rc = ibv_start_poll(cq, &pa);

		if (rc == 0) {
			struct x_wc w = read_cur(cq);

			ibv_end_poll(cq);
			cr_assert_fail("%s: unexpected completion wr_id %llu status %d", what,
				       (unsigned long long)w.wr_id, w.status);
		}
		cr_assert_eq(rc, ENOENT);
	}
}

void
x_recv(struct x_end *e, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(e->qp, &w, &bad), 0);
}
