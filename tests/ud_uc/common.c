/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

void
t_start(unsigned int ip_mtu, const char *port0_extra)
{
	struct tc_pair o = { .mtu = ip_mtu, .ipv6 = true, .descs = 2048, .data_room = 10240,
			     .port0_extra = port0_extra };

	tc_start(&o);
}

void
t_open(struct t_end *e, const char *name, enum ibv_qp_type type, uint32_t send_wr, uint32_t recv_wr)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = type,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};

	memset(e, 0, sizeof(*e));
	e->ctx = tc_open(name, NULL);
	cr_assert_eq(ibv_query_gid(e->ctx, 1, 0, &e->gid4), 0);
	cr_assert_eq(ibv_query_gid(e->ctx, 1, 1, &e->gid6), 0);
	e->pd = ibv_alloc_pd(e->ctx);
	e->mr = tc_reg_buf(e->pd, T_BUF_SIZE, 0);
	e->buf = e->mr->addr;
	e->scq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	cr_assert(e->scq && e->rcq);
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	e->qp = ibv_create_qp(e->pd, &ia);
	cr_assert_not_null(e->qp, "ibv_create_qp: %s", strerror(errno));
}

void
t_ud_up(struct t_end *e, uint32_t qkey)
{
	struct tc_conn c = { .qkey = qkey, .psn = 0xfffffe /* wraps during the tests */ };

	tc_qp_up(e->qp, &c);
}

void
t_uc_up(struct t_end *e, const struct t_end *peer, int gid_index, enum ibv_mtu mtu)
{
	struct tc_conn c = { .dgid = gid_index ? peer->gid6 : peer->gid4,
			     .dest_qpn = peer->qp->qp_num, .psn = 0xfffff0, .mtu = mtu,
			     .sgid_index = (uint8_t)gid_index };

	tc_qp_up(e->qp, &c);
}

uint32_t
t_port_mtu(const struct t_end *e)
{
	struct ibv_port_attr pa;

	cr_assert_eq(ibv_query_port(e->ctx, 1, &pa), 0);
	return 128u << pa.active_mtu;
}

int
t_post_recv(struct t_end *e, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(e->qp, &w, &bad);
}

struct droce_engine_stats
t_stats(void)
{
	struct droce_engine_stats sum, s;

	memset(&sum, 0, sizeof(sum));
	for (unsigned int e = 0; e < droce_engine_count(); e++) {
		memset(&s, 0, sizeof(s));
		droce_engine_stats_get(e, &s);
		sum.qkey_drops += s.qkey_drops;
		sum.ud_oversize += s.ud_oversize;
		sum.rq_empty_drops += s.rq_empty_drops;
		sum.uc_msg_drops += s.uc_msg_drops;
		sum.uc_access_drops += s.uc_access_drops;
		sum.xport_drops += s.xport_drops;
		sum.seq_drops += s.seq_drops;
	}
	return sum;
}
