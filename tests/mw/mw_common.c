/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mw_common.h"

static void
open_end(struct m_end *e, const char *name, unsigned int mr_access)
{
	memset(e, 0, sizeof(*e));
	e->ctx = tc_open(name, &e->gid);
	e->pd = ibv_alloc_pd(e->ctx);
	cr_assert_not_null(e->pd);
	e->mr = tc_reg_buf(e->pd, M_BUF, mr_access);
	e->buf = e->mr->addr;
	e->scq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	cr_assert(e->scq && e->rcq);
}

static void
create_qp(struct m_end *e, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = type, .send_cq = e->scq, .recv_cq = e->rcq,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = M_MAX_INLINE },
	};

	e->qp = ibv_create_qp(e->pd, &ia);
	cr_assert_not_null(e->qp, "ibv_create_qp: %s", strerror(errno));
	cr_assert_geq(ia.cap.max_inline_data, M_MAX_INLINE);
}

static void
connect_qp(struct m_end *e, const struct m_end *peer)
{
	struct tc_conn c = { .dgid = peer->gid, .dest_qpn = peer->qp->qp_num,
			     .psn = 0xfffff0 /* wraps during the tests */ };

	tc_qp_up(e->qp, &c);
}

static void
pair_up(struct m_end *a, struct m_end *b, enum ibv_qp_type type)
{
	create_qp(a, type);
	create_qp(b, type);
	connect_qp(a, b);
	connect_qp(b, a);
}

void
m_setup(struct m_end *a, struct m_end *b, enum ibv_qp_type type, unsigned int mr_access)
{
	m_setup_link(a, b, type, mr_access, NULL);
}

void
m_setup_link(struct m_end *a, struct m_end *b, enum ibv_qp_type type, unsigned int mr_access,
	     const char *port0_extra)
{
	t_start(1500, port0_extra);
	open_end(a, "droce0", mr_access);
	open_end(b, "droce1", mr_access);
	pair_up(a, b, type);
}

static void
drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];

	while (tc_poll(cq, wc, 16, 20) > 0)
		;
}

void
m_reconnect(struct m_end *a, struct m_end *b, enum ibv_qp_type type)
{
	struct m_end *e[2] = { a, b };

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(e[i]->qp, &at, IBV_QP_STATE);
	}
	for (int i = 0; i < 2; i++) {
		drain(e[i]->scq);
		drain(e[i]->rcq);
	}
	/* the new pair is created first: new QP numbers, never the old ones */
	{
		struct ibv_qp *old[2] = { a->qp, b->qp };

		pair_up(a, b, type);
		for (int i = 0; i < 2; i++)
			cr_assert_eq(ibv_destroy_qp(old[i]), 0);
	}
}

void
m_post(struct m_end *e, struct ibv_send_wr *w)
{
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(e->qp, w, &bad);

	cr_assert_eq(rc, 0, "ibv_post_send(opcode %d): %s", w->opcode, strerror(rc));
}

struct ibv_wc
m_wc(struct ibv_cq *cq, const char *what)
{
	return tc_wait(cq, 2000, what);
}

enum ibv_wc_status
m_rdma(struct m_end *e, enum ibv_wr_opcode op, size_t off, uint32_t len, uint64_t raddr,
       uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 0x77, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	m_post(e, &w);
	wc = m_wc(e->scq, op == IBV_WR_RDMA_READ ? "READ" : "WRITE");
	cr_assert_eq(wc.wr_id, 0x77);
	if (wc.status == IBV_WC_SUCCESS) {
		cr_assert_eq(wc.opcode, op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE);
		cr_assert_eq(wc.qp_num, e->qp->qp_num);
	}
	return wc.status;
}

static enum ibv_wc_status
wait_local(struct m_end *e, uint64_t id, enum ibv_wc_opcode opcode, const char *what)
{
	struct ibv_wc wc = m_wc(e->scq, what);

	cr_assert_eq(wc.wr_id, id, "%s: wr_id", what);
	cr_assert_eq(wc.qp_num, e->qp->qp_num);
	if (wc.status == IBV_WC_SUCCESS)
		cr_assert_eq(wc.opcode, opcode, "%s: opcode %d", what, wc.opcode);
	return wc.status;
}

enum ibv_wc_status
m_bind2(struct m_end *e, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t addr, uint64_t len,
	unsigned int access, uint32_t *rkey)
{
	struct ibv_send_wr w = { .wr_id = 0xb2, .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED };

	w.bind_mw.mw = mw;
	w.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	w.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = addr, .length = len,
							 .mw_access_flags = access };
	m_post(e, &w);
	*rkey = w.bind_mw.rkey;
	return wait_local(e, 0xb2, IBV_WC_BIND_MW, "type 2 bind");
}

enum ibv_wc_status
m_bind1(struct m_end *e, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t addr, uint64_t len,
	unsigned int access)
{
	struct ibv_mw_bind mb = { .wr_id = 0xb1, .send_flags = IBV_SEND_SIGNALED,
				  .bind_info = { .mr = mr, .addr = addr, .length = len,
						 .mw_access_flags = access } };
	uint32_t old = mw->rkey;
	int rc = ibv_bind_mw(e->qp, mw, &mb);

	cr_assert_eq(rc, 0, "ibv_bind_mw: %s", strerror(rc));
	cr_assert_eq(mw->rkey, ibv_inc_rkey(old), "the new rkey is returned in mw->rkey");
	return wait_local(e, 0xb1, IBV_WC_BIND_MW, "type 1 bind");
}

enum ibv_wc_status
m_local_inv(struct m_end *e, uint32_t rkey)
{
	struct ibv_send_wr w = { .wr_id = 0x1a, .opcode = IBV_WR_LOCAL_INV,
				 .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey };

	m_post(e, &w);
	return wait_local(e, 0x1a, IBV_WC_LOCAL_INV, "LOCAL_INV");
}
