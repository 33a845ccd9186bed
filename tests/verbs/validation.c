/* SPDX-License-Identifier: BSD-3-Clause
 * What the verbs_validation files share (validation.h): the device, PD and
 * CQ every test starts from over the fake dataplane, and QP bring-up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include "fake_dp.h"
#include "verbs_api/internal.h"
#include "validation.h"

struct ibv_device **devs;
struct ibv_context *ctx;
struct ibv_pd *pd;
struct ibv_cq *cq;

void
setup(void)
{
	int n = -1;

	fake_dp_reset();
	devs = ibv_get_device_list(&n);
	cr_assert_not_null(devs);
	cr_assert_eq(n, 2);
	ctx = ibv_open_device(devs[0]);
	cr_assert_not_null(ctx);
	pd = ibv_alloc_pd(ctx);
	cr_assert_not_null(pd);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cr_assert_not_null(cq);
}

struct droce_qp *
dqp(struct ibv_qp *qp)
{
	return ((struct droce_vqp *)qp)->dqp;
}

struct droce_cq *
dcq(struct ibv_cq *c)
{
	return ((struct droce_vcq *)c)->dcq;
}

struct ibv_qp *
make_qp(enum ibv_qp_type type, uint32_t send_wr, uint32_t sge, uint32_t inl, int sig_all)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type, .sq_sig_all = sig_all,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = send_wr, .max_send_sge = sge,
			 .max_recv_sge = sge, .max_inline_data = inl },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	cr_assert_not_null(qp, "create_qp: %s", strerror(errno));
	return qp;
}

void
gid_v4(union ibv_gid *g, const char *ip)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	inet_pton(AF_INET, ip, g->raw + 12);
}

int
to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

void
rtr_attr(struct ibv_qp_attr *a, const char *dip)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = 0x42;
	a->rq_psn = 0x100;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.grh.sgid_index = 0;
	gid_v4(&a->ah_attr.grh.dgid, dip);
}


int
to_rtr(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	rtr_attr(&a, "198.18.0.2");
	if (qp->qp_type == IBV_QPT_UD)
		return ibv_modify_qp(qp, &a, IBV_QP_STATE);
	return ibv_modify_qp(qp, &a, qp->qp_type == IBV_QPT_RC ? RC_RTR_MASK : UC_RTR_MASK);
}

int
to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 7, .sq_psn = 0x200, .max_rd_atomic = 4 };

	return ibv_modify_qp(qp, &a, qp->qp_type == IBV_QPT_RC ? RC_RTS_MASK
							      : IBV_QP_STATE | IBV_QP_SQ_PSN);
}

struct ibv_qp *
rts_qp(enum ibv_qp_type type, uint32_t send_wr, uint32_t sge, uint32_t inl, int sig_all)
{
	struct ibv_qp *qp = make_qp(type, send_wr, sge, inl, sig_all);

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(to_rtr(qp), 0);
	cr_assert_eq(to_rts(qp), 0);
	cr_assert_eq(qp->state, IBV_QPS_RTS);
	return qp;
}

/* ================= devices, ports, GIDs, P_Keys ================= */

TestSuite(device, .init = setup, .timeout = 10);
