/* SPDX-License-Identifier: BSD-3-Clause
 * verbs_api validation, tier (a): no EAL, no engine.  verbs_api runs against
 * the FAKE dataplane in fake_dp.c, which records what it is handed.  Each
 * test checks one rule of the man pages (ibv_post_send(3), ibv_modify_qp(3),
 * ibv_reg_mr(3), ...) with its errno and bad_wr.
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

static struct ibv_device **devs;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;

static void
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

static struct droce_qp *
dqp(struct ibv_qp *qp)
{
	return ((struct droce_vqp *)qp)->dqp;
}

static struct droce_cq *
dcq(struct ibv_cq *c)
{
	return ((struct droce_vcq *)c)->dcq;
}

static struct ibv_qp *
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

static void
gid_v4(union ibv_gid *g, const char *ip)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	inet_pton(AF_INET, ip, g->raw + 12);
}

static int
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

static void
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

#define RC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define UC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define RC_RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
		     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

static int
to_rtr(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	rtr_attr(&a, "198.18.0.2");
	if (qp->qp_type == IBV_QPT_UD)
		return ibv_modify_qp(qp, &a, IBV_QP_STATE);
	return ibv_modify_qp(qp, &a, qp->qp_type == IBV_QPT_RC ? RC_RTR_MASK : UC_RTR_MASK);
}

static int
to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 7, .sq_psn = 0x200, .max_rd_atomic = 4 };

	return ibv_modify_qp(qp, &a, qp->qp_type == IBV_QPT_RC ? RC_RTS_MASK
							      : IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static struct ibv_qp *
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

Test(device, list_names_guids)
{
	cr_assert_str_eq(ibv_get_device_name(devs[0]), "droce0");
	cr_assert_str_eq(ibv_get_device_name(devs[1]), "droce1");
	cr_assert_null(devs[2]);
	/* EUI-64 of 02:00:c6:12:00:01 */
	cr_assert_eq(ibv_get_device_guid(devs[0]), htobe64(0x0000c6fffe120001ull));
	cr_assert_eq(devs[0]->transport_type, IBV_TRANSPORT_IB);
	ibv_free_device_list(devs);
}

Test(device, query_device_reports_dp_limits)
{
	struct ibv_device_attr a;

	cr_assert_eq(ibv_query_device(ctx, &a), 0);
	cr_assert_eq(a.max_qp_wr, DROCE_DP_MAX_QP_WR);
	cr_assert_eq(a.max_sge, DROCE_DP_MAX_SGE);
	cr_assert_eq(a.max_cqe, (int)DROCE_DP_MAX_CQE);
	cr_assert_eq(a.max_qp_rd_atom, DROCE_DP_MAX_RD_ATOMIC);
	cr_assert_eq(a.max_qp_init_rd_atom, DROCE_DP_MAX_RD_ATOMIC);
	cr_assert_eq(a.phys_port_cnt, 1);
	cr_assert_eq(a.max_pkeys, 1);
	cr_assert_eq(a.atomic_cap, IBV_ATOMIC_HCA);
	cr_assert_eq(a.node_guid, ibv_get_device_guid(devs[0]));
}

Test(device, query_device_ex_falls_back)
{
	struct ibv_device_attr_ex a;

	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &a), 0);
	cr_assert_eq(a.orig_attr.max_qp_wr, DROCE_DP_MAX_QP_WR);
}

Test(device, verbs_context_ops)
{
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ibv_cq_init_attr_ex cqa = { .cqe = 4 };

	cr_assert_not_null(v);
	cr_assert_eq(v->sz, sizeof(*v));
	cr_assert_not_null(verbs_get_ctx_op(ctx, query_port));
	cr_assert_not_null(verbs_get_ctx_op(ctx, query_device_ex));
	cr_assert_not_null(verbs_get_ctx_op(ctx, create_cq_ex));
	cr_assert_not_null(verbs_get_ctx_op(ctx, create_qp_ex));
	cr_assert_not_null(verbs_get_ctx_op(ctx, create_srq_ex));
	cr_assert_not_null(verbs_get_ctx_op(ctx, open_xrcd)); /* XRC: xrcd.c */
	cr_assert_not_null(verbs_get_ctx_op(ctx, get_srq_num));
	cr_assert_not_null(verbs_get_ctx_op(ctx, open_qp));
	/* what droce has not: verbs.h answers EOPNOTSUPP, as for a provider without them */
	cr_assert_null(verbs_get_ctx_op(ctx, alloc_td));
	cr_assert_null(verbs_get_ctx_op(ctx, alloc_parent_domain));
	cqa.wc_flags = IBV_WC_EX_WITH_CVLAN;
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(ctx, &cqa));
	cr_assert_eq(errno, EOPNOTSUPP);
	cr_assert_not_null(ctx->ops.post_send);
	cr_assert_not_null(ctx->ops.post_recv);
	cr_assert_not_null(ctx->ops.poll_cq);
	cr_assert_not_null(ctx->ops.req_notify_cq);
	cr_assert_geq(ctx->async_fd, 0);
}

Test(device, query_port)
{
	struct ibv_port_attr a;

	cr_assert_eq(ibv_query_port(ctx, 1, &a), 0);
	cr_assert_eq(a.state, IBV_PORT_ACTIVE);
	cr_assert_eq(a.phys_state, 5);
	cr_assert_eq(a.active_mtu, IBV_MTU_1024); /* 1500 - 92 */
	cr_assert_eq(a.max_mtu, IBV_MTU_1024);
	cr_assert_eq(a.gid_tbl_len, 2);
	cr_assert_eq(a.pkey_tbl_len, 1);
	cr_assert_eq(a.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(a.max_msg_sz, DROCE_DP_MAX_MSG);
	cr_assert_eq(a.active_width, 1); /* 25G = 1X EDR */
	cr_assert_eq(a.active_speed, 32);
	cr_assert_eq(a.lid, 0);
	cr_assert_eq(ibv_query_port(ctx, 2, &a), EINVAL);
	cr_assert_eq(ibv_query_port(ctx, 0, &a), EINVAL);

	fake_ports[0].link_up = false;
	cr_assert_eq(ibv_query_port(ctx, 1, &a), 0);
	cr_assert_eq(a.state, IBV_PORT_DOWN);
}

Test(device, query_port_compat_symbol)
{
	struct ibv_port_attr a;

	memset(&a, 0xaa, sizeof(a));
	cr_assert_eq((ibv_query_port)(ctx, 1, (struct _compat_ibv_port_attr *)&a), 0);
	cr_assert_eq(a.state, IBV_PORT_ACTIVE);
	cr_assert_eq(a.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(a.port_cap_flags2, 0xaaaa, "compat struct ends before port_cap_flags2");
}

Test(device, mtu_mapping)
{
	cr_assert_eq(droce_verbs_mtu_of(9000), IBV_MTU_4096);
	cr_assert_eq(droce_verbs_mtu_of(4096 + 92), IBV_MTU_4096);
	cr_assert_eq(droce_verbs_mtu_of(4096 + 91), IBV_MTU_2048);
	cr_assert_eq(droce_verbs_mtu_of(1500), IBV_MTU_1024);
	cr_assert_eq(droce_verbs_mtu_of(1024 + 92), IBV_MTU_1024);
	cr_assert_eq(droce_verbs_mtu_of(1024 + 91), IBV_MTU_512);
	cr_assert_eq(droce_verbs_mtu_of(576), IBV_MTU_256);
	cr_assert_eq(droce_verbs_mtu_of(256), IBV_MTU_256);
}

Test(device, query_gid_v4_mapped_and_v6)
{
	union ibv_gid g, want;
	struct ibv_gid_entry e;

	gid_v4(&want, "198.18.0.1");
	cr_assert_eq(ibv_query_gid(ctx, 1, 0, &g), 0);
	cr_assert_arr_eq(g.raw, want.raw, 16);
	inet_pton(AF_INET6, "fd00::1", want.raw);
	cr_assert_eq(ibv_query_gid(ctx, 1, 1, &g), 0);
	cr_assert_arr_eq(g.raw, want.raw, 16);
	errno = 0;
	cr_assert_eq(ibv_query_gid(ctx, 1, 2, &g), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_query_gid(ctx, 2, 0, &g), -1);
	cr_assert_eq(ibv_query_gid(ctx, 1, -1, &g), -1);

	cr_assert_eq(ibv_query_gid_ex(ctx, 1, 1, &e, 0), 0);
	cr_assert_eq(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	cr_assert_arr_eq(e.gid.raw, want.raw, 16);
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, 5, &e, 0), ENODATA);
}

Test(device, query_pkey)
{
	__be16 k = 0;

	cr_assert_eq(ibv_query_pkey(ctx, 1, 0, &k), 0);
	cr_assert_eq(k, htons(0xffff));
	cr_assert_eq(ibv_query_pkey(ctx, 1, 1, &k), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_get_pkey_index(ctx, 1, htons(0xffff)), 0);
}

Test(device, strings)
{
	cr_assert_str_eq(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
	cr_assert_str_eq(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	cr_assert_str_eq(ibv_wc_status_str((enum ibv_wc_status)999), "unknown");
	cr_assert_str_eq(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE");
	cr_assert_str_eq(ibv_event_type_str(IBV_EVENT_CQ_ERR), "CQ error");
}

/* ================= PDs and MRs ================= */

TestSuite(mr, .init = setup, .timeout = 10);

Test(mr, remote_write_and_atomic_need_local_write)
{
	static char buf[4096];

	for (int acc = 0; acc < 16; acc++) {
		bool bad = (acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
			   !(acc & IBV_ACCESS_LOCAL_WRITE);
		struct ibv_mr *mr;

		errno = 0;
		mr = ibv_reg_mr(pd, buf, sizeof(buf), acc);
		if (bad) {
			cr_assert_null(mr, "access %#x must fail", acc);
			cr_assert_eq(errno, EINVAL);
		} else {
			cr_assert_not_null(mr, "access %#x: %s", acc, strerror(errno));
			cr_assert_eq(ibv_dereg_mr(mr), 0);
		}
	}
	cr_assert_eq(fake_live_mrs, 0);
}

Test(mr, keys_and_fields)
{
	static char buf[8192];
	struct droce_vmr *v;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf + 16, 100,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	cr_assert_not_null(mr);
	v = (struct droce_vmr *)mr;
	cr_assert_eq(mr->lkey, v->dmr.lkey);
	cr_assert_eq(mr->rkey, v->dmr.rkey);
	cr_assert_neq(mr->lkey, 0);
	cr_assert_eq(mr->addr, buf + 16);
	cr_assert_eq(mr->length, 100);
	cr_assert_eq(mr->pd, pd);
	cr_assert_eq(mr->context, ctx);
	cr_assert_eq(v->dmr.iova, (uint64_t)(uintptr_t)(buf + 16));
	cr_assert_eq(v->dmr.addr, (uint8_t *)buf + 16);
	cr_assert_eq(v->dmr.access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(v->dmr.pd_id, ((struct droce_vpd *)pd)->id);
	/* a PD in use cannot go */
	cr_assert_eq(ibv_dealloc_pd(pd), EBUSY);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(fake_live_mrs, 0);
}

Test(mr, iova2_and_runtime_access)
{
	static char buf[4096];
	volatile unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING;
	struct ibv_mr *mr = ibv_reg_mr_iova2(pd, buf, 64, 0x1000, IBV_ACCESS_LOCAL_WRITE);

	cr_assert_not_null(mr);
	cr_assert_eq(((struct droce_vmr *)mr)->dmr.iova, 0x1000);
	ibv_dereg_mr(mr);
	/* non-constant access goes through ibv_reg_mr_iova2; optional bits are ignored */
	mr = ibv_reg_mr(pd, buf, 64, acc);
	cr_assert_not_null(mr);
	cr_assert_eq(((struct droce_vmr *)mr)->dmr.access, IBV_ACCESS_LOCAL_WRITE);
	ibv_dereg_mr(mr);
}

Test(mr, bad_arguments)
{
	static char buf[64];

	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, buf, 64, 1 << 12)); /* unknown, not optional */
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, (void *)(uintptr_t)(UINTPTR_MAX - 8), 64, 0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(ibv_reg_mr_iova2(pd, buf, 64, UINT64_MAX - 8, 0));
	cr_assert_eq(errno, EINVAL);
	fake_fail_next_create = 1;
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, buf, 64, 0));
	cr_assert_eq(errno, ENOMEM);
	cr_assert_eq(ibv_dealloc_pd(pd), 0);
}

/*
 * As the kernel's pinning: a range not wholly mapped is EFAULT, so is a
 * read-only mapping asked for (local or remote) write and a PROT_NONE one;
 * a range whose page-rounded end wraps is EINVAL; read-only memory with read
 * access only is fine.
 */
Test(mr, range_must_be_mapped_as_asked)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	uint8_t *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	cr_assert_neq(m, MAP_FAILED);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, NULL, 64, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EFAULT, "NULL: errno %d", errno);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, NULL, SIZE_MAX, rw));
	cr_assert_eq(errno, EINVAL, "(NULL, SIZE_MAX): errno %d", errno);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, NULL, SIZE_MAX, 0));
	cr_assert_eq(errno, EINVAL);
	/* pages: 0 rw, 1 unmapped, 2 read-only, 3 PROT_NONE */
	cr_assert_eq(munmap(m + pg, pg), 0);
	cr_assert_eq(mprotect(m + 2 * pg, pg, PROT_READ), 0);
	cr_assert_eq(mprotect(m + 3 * pg, pg, PROT_NONE), 0);
	mr = ibv_reg_mr(pd, m, pg, rw);
	cr_assert_not_null(mr, "mapped rw page: %s", strerror(errno));
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, m, 2 * pg, 0));
	cr_assert_eq(errno, EFAULT, "hole: errno %d", errno);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, m + pg + 8, 16, IBV_ACCESS_REMOTE_READ));
	cr_assert_eq(errno, EFAULT);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, m + 2 * pg, pg, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EFAULT, "read-only, local write: errno %d", errno);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, m + 2 * pg, pg, rw));
	cr_assert_eq(errno, EFAULT);
	mr = ibv_reg_mr(pd, m + 2 * pg, pg, IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(mr, "read-only page, read access: %s", strerror(errno));
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, m + 3 * pg, pg, 0));
	cr_assert_eq(errno, EFAULT, "PROT_NONE: errno %d", errno);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, m + 2 * pg - 8, 16, IBV_ACCESS_REMOTE_READ));
	cr_assert_eq(errno, EFAULT, "straddles a hole: errno %d", errno);
	cr_assert_eq(fake_live_mrs, 0);
	munmap(m, pg);
	munmap(m + 2 * pg, 2 * pg);
}

/* ================= CQs and completion channels ================= */

TestSuite(cq, .init = setup, .timeout = 10);

Test(cq, create_limits)
{
	struct ibv_cq *c;

	errno = 0;
	cr_assert_null(ibv_create_cq(ctx, 0, NULL, NULL, 0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(ibv_create_cq(ctx, (int)DROCE_DP_MAX_CQE + 1, NULL, NULL, 0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(ibv_create_cq(ctx, 8, NULL, NULL, 1)); /* one vector */
	cr_assert_eq(errno, EINVAL);
	c = ibv_create_cq(ctx, 100, (void *)0x1234, NULL, 0);
	cr_assert_not_null(c);
	cr_assert_geq(c->cqe, 100);
	cr_assert_eq(c->cq_context, (void *)0x1234);
	cr_assert_eq(ibv_destroy_cq(c), 0);
}

Test(cq, wc_layout_is_droce_cqe)
{
	cr_assert_eq(sizeof(struct ibv_wc), sizeof(struct droce_cqe));
	cr_assert_eq(offsetof(struct ibv_wc, status), offsetof(struct droce_cqe, status));
	cr_assert_eq(offsetof(struct ibv_wc, imm_data), offsetof(struct droce_cqe, imm_or_inv));
	cr_assert_eq(offsetof(struct ibv_wc, wc_flags), offsetof(struct droce_cqe, wc_flags));
	cr_assert_eq(offsetof(struct ibv_wc, dlid_path_bits),
		     offsetof(struct droce_cqe, dlid_path_bits));
	cr_assert_eq(IBV_WC_RECV_RDMA_WITH_IMM, DROCE_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(IBV_WC_WITH_IMM, DROCE_WC_F_WITH_IMM);
}

Test(cq, poll_copies_every_field)
{
	struct droce_cqe e = {
		.wr_id = 0xdeadbeefcafeull, .status = DROCE_WC_REM_ACCESS_ERR,
		.opcode = DROCE_WC_RECV_RDMA_WITH_IMM, .vendor_err = 7, .byte_len = 4096,
		.imm_or_inv = htonl(0x01020304), .qp_num = 0x17, .src_qp = 0x42,
		.wc_flags = DROCE_WC_F_WITH_IMM, .pkey_index = 0, .slid = 0, .sl = 3,
	};
	struct ibv_wc wc[4];

	cr_assert_eq(ibv_poll_cq(cq, 4, wc), 0);
	fake_cq_push(dcq(cq), &e, false);
	e.wr_id++;
	fake_cq_push(dcq(cq), &e, false);
	cr_assert_eq(ibv_poll_cq(cq, 1, wc), 1);
	cr_assert_eq(wc[0].wr_id, 0xdeadbeefcafeull);
	cr_assert_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc[0].vendor_err, 7);
	cr_assert_eq(wc[0].byte_len, 4096);
	cr_assert_eq(wc[0].imm_data, htonl(0x01020304));
	cr_assert_eq(wc[0].qp_num, 0x17);
	cr_assert_eq(wc[0].src_qp, 0x42);
	cr_assert_eq(wc[0].wc_flags, IBV_WC_WITH_IMM);
	cr_assert_eq(wc[0].sl, 3);
	cr_assert_eq(ibv_poll_cq(cq, 4, wc), 1);
	cr_assert_eq(wc[0].wr_id, 0xdeadbeefcaffull);
	cr_assert_eq(ibv_poll_cq(cq, 0, wc), 0);
}

struct pusher {
	struct ibv_cq *cq;
	bool solicited;
};

static void *
push_thread(void *arg)
{
	struct pusher *p = arg;
	struct droce_cqe e = { .wr_id = 99 };

	usleep(20 * 1000);
	fake_cq_push(dcq(p->cq), &e, p->solicited);
	return NULL;
}

Test(cq, comp_channel_poll_and_events)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *c, *got;
	struct pusher p;
	pthread_t t;
	void *cctx;
	struct pollfd pfd;
	struct ibv_wc wc;

	cr_assert_not_null(ch);
	c = ibv_create_cq(ctx, 16, (void *)0x77, ch, 0);
	cr_assert_not_null(c);
	cr_assert_eq(c->channel, ch);
	cr_assert_eq(ibv_destroy_comp_channel(ch), EBUSY);

	/* unarmed: a completion makes no event */
	p = (struct pusher){ .cq = c };
	push_thread(&p);
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	cr_assert_eq(ibv_poll_cq(c, 1, &wc), 1);

	/* armed: the engine-side callback (another thread) wakes poll() */
	cr_assert_eq(ibv_req_notify_cq(c, 0), 0);
	pthread_create(&t, NULL, push_thread, &p);
	cr_assert_eq(poll(&pfd, 1, 2000), 1);
	cr_assert(pfd.revents & POLLIN);
	pthread_join(t, NULL);
	cr_assert_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	cr_assert_eq(got, c);
	cr_assert_eq(cctx, (void *)0x77);
	ibv_ack_cq_events(got, 1);
	cr_assert_eq(poll(&pfd, 1, 0), 0, "one event per arm");

	/* non-blocking fd: EAGAIN when nothing is there */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	errno = 0;
	cr_assert_eq(ibv_get_cq_event(ch, &got, &cctx), -1);
	cr_assert_eq(errno, EAGAIN);

	cr_assert_eq(ibv_destroy_cq(c), 0);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
}

Test(cq, comp_channel_epoll_solicited_only)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *c = ibv_create_cq(ctx, 16, NULL, ch, 0), *got;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct droce_cqe e = { .wr_id = 1 };
	int ep = epoll_create1(0);
	void *cctx;

	cr_assert_geq(ep, 0);
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ev), 0);
	cr_assert_eq(ibv_req_notify_cq(c, 1), 0);
	fake_cq_push(dcq(c), &e, false);
	cr_assert_eq(epoll_wait(ep, &out, 1, 0), 0, "unsolicited completion must not fire");
	fake_cq_push(dcq(c), &e, true);
	cr_assert_eq(epoll_wait(ep, &out, 1, 1000), 1);
	cr_assert_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	cr_assert_eq(got, c);
	ibv_ack_cq_events(c, 1);
	close(ep);
	ibv_destroy_cq(c);
	ibv_destroy_comp_channel(ch);
}

static atomic_int destroyed;

static void *
destroy_thread(void *arg)
{
	cr_assert_eq(ibv_destroy_cq(arg), 0);
	atomic_store(&destroyed, 1);
	return NULL;
}

Test(cq, destroy_waits_for_ack)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *c = ibv_create_cq(ctx, 16, NULL, ch, 0), *got;
	struct droce_cqe e = { .wr_id = 1 };
	pthread_t t;
	void *cctx;

	ibv_req_notify_cq(c, 0);
	fake_cq_push(dcq(c), &e, false);
	cr_assert_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	pthread_create(&t, NULL, destroy_thread, c);
	usleep(50 * 1000);
	cr_assert_eq(atomic_load(&destroyed), 0, "destroy must wait for the ack");
	ibv_ack_cq_events(got, 1);
	pthread_join(t, NULL);
	cr_assert_eq(atomic_load(&destroyed), 1);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
}

Test(cq, stale_event_of_destroyed_cq_is_skipped)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *c = ibv_create_cq(ctx, 16, NULL, ch, 0), *got;
	struct droce_cqe e = { .wr_id = 1 };
	void *cctx;

	ibv_req_notify_cq(c, 0);
	fake_cq_push(dcq(c), &e, false);
	cr_assert_eq(ibv_destroy_cq(c), 0);
	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	errno = 0;
	cr_assert_eq(ibv_get_cq_event(ch, &got, &cctx), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
}

Test(cq, overflow_is_async_cq_err)
{
	struct ibv_cq *c = ibv_create_cq(ctx, 2, (void *)5, NULL, 0);
	struct droce_cqe e = { .wr_id = 1 };
	struct ibv_async_event ev;
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	cr_assert_not_null(c);
	for (uint32_t i = 0; i < droce_cq_capacity(dcq(c)); i++)
		fake_cq_push(dcq(c), &e, false);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	fake_cq_push(dcq(c), &e, false); /* overflows */
	fake_cq_push(dcq(c), &e, false); /* reported once */
	cr_assert_eq(poll(&pfd, 1, 1000), 1);
	cr_assert_eq(ibv_get_async_event(ctx, &ev), 0);
	cr_assert_eq(ev.event_type, IBV_EVENT_CQ_ERR);
	cr_assert_eq(ev.element.cq, c);
	ibv_ack_async_event(&ev);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	cr_assert_eq(ibv_destroy_cq(c), 0);
}

Test(cq, busy_while_qp_uses_it)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);

	cr_assert_eq(ibv_destroy_cq(cq), EBUSY);
	cr_assert_eq(ibv_dealloc_pd(pd), EBUSY);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_dealloc_pd(pd), 0);
	cr_assert_eq(fake_live_qps, 0);
	cr_assert_eq(fake_live_cqs, 0);
}

/* ================= QP create / query ================= */

TestSuite(qp, .init = setup, .timeout = 10);

Test(qp, caps_over_limits_einval)
{
	struct ibv_qp_init_attr base = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	struct ibv_qp_init_attr ia;

#define TRY(field, value, err)                                                     \
	do {                                                                       \
		ia = base;                                                         \
		ia.field = value;                                                  \
		errno = 0;                                                         \
		cr_assert_null(ibv_create_qp(pd, &ia), #field " = " #value);       \
		cr_assert_eq(errno, err, #field ": errno %d", errno);              \
	} while (0)
	TRY(cap.max_send_wr, DROCE_DP_MAX_QP_WR + 1, EINVAL);
	TRY(cap.max_recv_wr, DROCE_DP_MAX_QP_WR + 1, EINVAL);
	TRY(cap.max_send_sge, DROCE_DP_MAX_SGE + 1, EINVAL);
	TRY(cap.max_recv_sge, DROCE_DP_MAX_SGE + 1, EINVAL);
	TRY(cap.max_inline_data, DROCE_DP_MAX_INLINE + 1, EINVAL);
	TRY(send_cq, NULL, EINVAL);
	TRY(recv_cq, NULL, EINVAL);
	TRY(qp_type, IBV_QPT_RAW_PACKET, EOPNOTSUPP);
	TRY(qp_type, IBV_QPT_XRC_RECV, EINVAL); /* no XRC domain through ibv_create_qp */
	TRY(qp_type, (enum ibv_qp_type)77, EINVAL);
#undef TRY
	cr_assert_eq(fake_live_qps, 0);
}

Test(qp, caps_reported_and_passed_down)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.qp_context = (void *)9,
		.cap = { .max_send_wr = DROCE_DP_MAX_QP_WR, .max_recv_wr = 0,
			 .max_send_sge = DROCE_DP_MAX_SGE, .max_recv_sge = 3,
			 .max_inline_data = DROCE_DP_MAX_INLINE },
	};
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	cr_assert_not_null(qp);
	cr_assert_eq(ia.cap.max_send_wr, DROCE_DP_MAX_QP_WR);
	cr_assert_eq(ia.cap.max_recv_wr, 1, "at least one slot");
	cr_assert_eq(ia.cap.max_send_sge, DROCE_DP_MAX_SGE);
	cr_assert_eq(ia.cap.max_inline_data, DROCE_DP_MAX_INLINE);
	cr_assert_eq(dqp(qp)->caps.max_send_wr, DROCE_DP_MAX_QP_WR);
	cr_assert_eq(dqp(qp)->caps.max_recv_sge, 3);
	cr_assert(dqp(qp)->caps.sq_sig_all);
	cr_assert_eq(dqp(qp)->type, DROCE_QPT_RC);
	cr_assert_eq(dqp(qp)->pd_id, ((struct droce_vpd *)pd)->id);
	cr_assert_eq(dqp(qp)->port, 0);
	cr_assert_eq(qp->qp_num, dqp(qp)->qpn);
	cr_assert_eq(qp->state, IBV_QPS_RESET);

	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RESET);
	cr_assert_eq(qa.cap.max_recv_sge, 3);
	cr_assert_eq(qi.qp_type, IBV_QPT_RC);
	cr_assert_eq(qi.sq_sig_all, 1);
	cr_assert_eq(qi.qp_context, (void *)9);
	cr_assert_eq(qi.send_cq, cq);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(qp, devices_map_to_ports)
{
	struct ibv_context *c1 = ibv_open_device(devs[1]);
	struct ibv_pd *pd1 = ibv_alloc_pd(c1);
	struct ibv_cq *cq1 = ibv_create_cq(c1, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .send_cq = cq1, .recv_cq = cq1, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd1, &ia);

	cr_assert_not_null(qp);
	cr_assert_eq(dqp(qp)->port, 1);
	/* a CQ of another context is refused */
	ia.send_cq = cq;
	errno = 0;
	cr_assert_null(ibv_create_qp(pd1, &ia));
	cr_assert_eq(errno, EINVAL);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq1);
	ibv_dealloc_pd(pd1);
	cr_assert_eq(ibv_close_device(c1), 0);
}

/*
 * ibv_close_device with CQs, QPs and an SRQ alive destroys them first, as
 * rdma-core's close does through the kernel (perftest's ib_send_bw client
 * leaves its receive CQ), instead of EBUSY; the engines keep no pointer
 * into the freed context (issue 12 §1): a new context on the device works.
 */
Test(device, close_destroys_live_objects)
{
	struct ibv_context *c1 = ibv_open_device(devs[1]);
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd1;
	struct ibv_cq *cq1, *cq2;
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1 } };
	struct ibv_qp *qp, *qp2;

	cr_assert_not_null(c1);
	ch = ibv_create_comp_channel(c1);
	cr_assert_not_null(ch);
	pd1 = ibv_alloc_pd(c1);
	cq1 = ibv_create_cq(c1, 8, NULL, NULL, 0);
	cq2 = ibv_create_cq(c1, 8, NULL, ch, 0);
	cr_assert(cq1 && cq2);
	cr_assert_eq(ibv_req_notify_cq(cq2, 0), 0);
	srq = ibv_create_srq(pd1, &sa);
	cr_assert_not_null(srq, "create_srq: %s", strerror(errno));
	ia.send_cq = cq1;
	ia.recv_cq = cq2;
	qp = ibv_create_qp(pd1, &ia);
	cr_assert_not_null(qp);
	ia.srq = srq;
	qp2 = ibv_create_qp(pd1, &ia);
	cr_assert_not_null(qp2);
	/* an MR and a window left too: unregistered with the device (a peer's
	 * rkey must not reach the memory after close) */
	{
		static uint8_t mem[4096];
		int mrs = fake_live_mrs;

		cr_assert_not_null(ibv_reg_mr(pd1, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND));
		cr_assert_eq(fake_live_mrs, mrs + 1);
		cr_assert_not_null(ibv_alloc_mw(pd1, IBV_MW_TYPE_2));
		cr_assert_eq(ibv_close_device(c1), 0);
		cr_assert_eq(fake_live_mrs, mrs, "the MR left registered after close");
	}
	/* the channel is the program's: it outlives the context's CQs */
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);

	c1 = ibv_open_device(devs[1]);
	cr_assert_not_null(c1);
	pd1 = ibv_alloc_pd(c1);
	cq1 = ibv_create_cq(c1, 8, NULL, NULL, 0);
	cr_assert(pd1 && cq1);
	ia.srq = NULL;
	ia.send_cq = ia.recv_cq = cq1;
	qp = ibv_create_qp(pd1, &ia);
	cr_assert_not_null(qp);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq1), 0);
	cr_assert_eq(ibv_dealloc_pd(pd1), 0);
	cr_assert_eq(ibv_close_device(c1), 0);
}

/* ================= modify_qp ================= */

TestSuite(modify, .init = setup, .timeout = 10);

Test(modify, rc_reset_init_rtr_rts)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	const struct droce_qp_mod *m = &dqp(qp)->last_mod;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(m->state, DROCE_QPS_INIT);
	cr_assert_eq(m->access, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_eq(qp->state, IBV_QPS_INIT);

	cr_assert_eq(to_rtr(qp), 0);
	cr_assert_eq(m->state, DROCE_QPS_RTR);
	cr_assert_eq(m->mask, (uint32_t)RC_RTR_MASK);
	cr_assert_eq(m->pmtu, 1024);
	cr_assert_eq(m->dest_qpn, 0x42);
	cr_assert_eq(m->rq_psn, 0x100);
	cr_assert_eq(m->max_dest_rd_atomic, 4);
	cr_assert_eq(m->min_rnr_timer, 12);
	/* the AV, resolved: port1 owns 198.18.0.2, so its MAC is the destination */
	cr_assert_arr_eq(m->path.src_mac.addr_bytes, fake_ports[0].mac.addr_bytes, 6);
	cr_assert_arr_eq(m->path.dst_mac.addr_bytes, fake_ports[1].mac.addr_bytes, 6);
	cr_assert_arr_eq(m->path.src_gid, fake_ports[0].gids[0], 16);
	cr_assert_arr_eq(m->path.dst_gid, fake_ports[1].gids[0], 16);
	cr_assert_not(m->path.ipv6);
	cr_assert_eq(m->path.hop_limit, 64);
	cr_assert_geq(m->path.udp_sport, 0xc000);
	cr_assert_eq(m->path.udp_sport, droce_verbs_udp_sport(qp->qp_num, 0x42, 0));

	cr_assert_eq(to_rts(qp), 0);
	cr_assert_eq(m->state, DROCE_QPS_RTS);
	cr_assert_eq(m->timeout, 14);
	cr_assert_eq(m->retry_cnt, 7);
	cr_assert_eq(m->rnr_retry, 7);
	cr_assert_eq(m->sq_psn, 0x200);
	cr_assert_eq(m->max_rd_atomic, 4);
	cr_assert_eq(dqp(qp)->n_mods, 3);

	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS);
	cr_assert_eq(qa.path_mtu, IBV_MTU_1024);
	cr_assert_eq(qa.dest_qp_num, 0x42);
	cr_assert_eq(qa.sq_psn, 0x200);
	cr_assert_eq(qa.rq_psn, 0x100);
	cr_assert_eq(qa.timeout, 14);
	cr_assert_eq(qa.max_rd_atomic, 4);
	cr_assert_eq(qa.max_dest_rd_atomic, 4);
	cr_assert_eq(qa.ah_attr.grh.hop_limit, 64);
	cr_assert_eq(qa.port_num, 1);

	/* back to RESET: attributes forgotten */
	qa.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RESET);
	cr_assert_eq(qa.dest_qp_num, 0);
}

Test(modify, uc_and_ud_paths)
{
	struct ibv_qp *uc = rts_qp(IBV_QPT_UC, 4, 1, 0, 0);
	struct ibv_qp *ud = rts_qp(IBV_QPT_UD, 4, 1, 0, 0);
	struct ibv_qp_attr a;

	cr_assert_eq(dqp(uc)->type, DROCE_QPT_UC);
	cr_assert_eq(dqp(ud)->type, DROCE_QPT_UD);
	/* UC may not name MAX_DEST_RD_ATOMIC (it has no RDMA READ) */
	struct ibv_qp *uc2 = make_qp(IBV_QPT_UC, 4, 1, 0, 0);

	cr_assert_eq(to_init(uc2), 0);
	rtr_attr(&a, "198.18.0.2");
	cr_assert_eq(ibv_modify_qp(uc2, &a, UC_RTR_MASK | IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	cr_assert_eq(ibv_modify_qp(uc2, &a, UC_RTR_MASK), 0);
	/* UD needs a QKEY to reach INIT, and no ACCESS_FLAGS */
	struct ibv_qp *ud2 = make_qp(IBV_QPT_UD, 4, 1, 0, 0);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
	cr_assert_eq(ibv_modify_qp(ud2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		     EINVAL);
	cr_assert_eq(ibv_modify_qp(ud2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS), EINVAL);
	cr_assert_eq(ibv_modify_qp(ud2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_QKEY), 0);
}

Test(modify, transition_table)
{
	/* the valid (cur, next) pairs: IBTA / kernel qp_state_table */
	static const bool valid[7][7] = {
		/*            RESET  INIT   RTR    RTS    SQD    SQE    ERR */
		[IBV_QPS_RESET] = { 1, 1, 0, 0, 0, 0, 1 },
		[IBV_QPS_INIT] = { 1, 1, 1, 0, 0, 0, 1 },
		[IBV_QPS_RTR] = { 1, 0, 0, 1, 0, 0, 1 },
		[IBV_QPS_RTS] = { 1, 0, 0, 1, 1, 0, 1 },
		[IBV_QPS_SQD] = { 1, 0, 0, 1, 1, 0, 1 },
		[IBV_QPS_SQE] = { 1, 0, 0, 1, 0, 0, 1 },
		[IBV_QPS_ERR] = { 1, 0, 0, 0, 0, 0, 1 },
	};
	static const int rc_req[7][7] = {
		[IBV_QPS_RESET][IBV_QPS_INIT] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		[IBV_QPS_INIT][IBV_QPS_RTR] = RC_RTR_MASK & ~IBV_QP_STATE,
		[IBV_QPS_RTR][IBV_QPS_RTS] = RC_RTS_MASK & ~IBV_QP_STATE,
	};

	for (int c = 0; c < 7; c++) {
		for (int n = 0; n < 7; n++) {
			int req = rc_req[c][n] | IBV_QP_STATE;

			cr_assert_eq(droce_verbs_modify_ok(IBV_QPT_RC, c, n, req), valid[c][n],
				     "RC %d -> %d", c, n);
			if (!valid[c][n] || rc_req[c][n] == 0)
				continue;
			/* each required attribute is required */
			for (int bit = 0; bit < 21; bit++)
				if (rc_req[c][n] & (1 << bit))
					cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RC, c, n,
									    req & ~(1 << bit)),
						      "RC %d -> %d without bit %d", c, n, bit);
		}
	}
	/* an attribute outside required | optional */
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
					    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MTU));
	/* optional ones are fine */
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
					IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD,
					IBV_QP_STATE | IBV_QP_AV | IBV_QP_TIMEOUT));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQD,
					IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY));
	/* CUR_STATE only from RTR, RTS, SQD, SQE */
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_ERR,
					    IBV_QP_STATE | IBV_QP_CUR_STATE));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_CUR_STATE));
	/* UD: RTR -> RTS needs SQ_PSN only, INIT -> RTR needs nothing */
	cr_assert(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_STATE));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
					IBV_QP_STATE | IBV_QP_SQ_PSN));
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
					    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT));
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT,
					    IBV_QP_STATE | IBV_QP_PORT));
}

Test(modify, invalid_transitions_through_the_verb)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	struct ibv_qp_attr a;

	/* RESET -> RTR */
	rtr_attr(&a, "198.18.0.2");
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(dqp(qp)->n_mods, 0, "nothing reaches the dataplane");
	cr_assert_eq(to_init(qp), 0);
	/* INIT -> RTS */
	cr_assert_eq(to_rts(qp), EINVAL);
	cr_assert_eq(to_rtr(qp), 0);
	/* RTR -> RTR is not a transition */
	cr_assert_eq(to_rtr(qp), EINVAL);
	cr_assert_eq(to_rts(qp), 0);
	/* RTS -> SQD -> RTS */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_SQD };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	cr_assert_eq(qp->state, IBV_QPS_SQD);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	/* RTS -> RTS without STATE, with an optional attribute */
	a = (struct ibv_qp_attr){ .min_rnr_timer = 3 };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER), 0);
	cr_assert_eq(dqp(qp)->last_mod.state, DROCE_QPS_RTS);
	/* ... but not a required-elsewhere one */
	a = (struct ibv_qp_attr){ .timeout = 3 };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_TIMEOUT), EINVAL);
	/* CUR_STATE must match */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQD };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	a.cur_qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	/* any -> ERR; ERR -> INIT no; ERR -> RESET yes */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	cr_assert_eq(to_init(qp), EINVAL);
	a.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	/* out-of-range state, unknown mask bit */
	a.qp_state = (enum ibv_qp_state)9;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | (1 << 30)), EINVAL);
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT), EINVAL);
}

Test(modify, missing_required_attribute)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	cr_assert_eq(to_init(qp), 0);
	rtr_attr(&a, "198.18.0.2");
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK & ~IBV_QP_AV), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_INIT);
	cr_assert_eq(to_rtr(qp), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK & ~IBV_QP_SQ_PSN), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_RTR);
}

/* One INIT -> RTR attempt with attribute @field set to @value: @err expected. */
#define RTR_BAD(field, value, err)                                                        \
	do {                                                                              \
		struct ibv_qp_attr a_;                                                    \
		rtr_attr(&a_, "198.18.0.2");                                              \
		a_.field = value;                                                         \
		cr_assert_eq(ibv_modify_qp(qp, &a_, RC_RTR_MASK), err, #field " = " #value); \
		cr_assert_eq(qp->state, IBV_QPS_INIT);                                    \
	} while (0)

Test(modify, bad_values)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 2 };
	int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

	cr_assert_eq(ibv_modify_qp(qp, &a, init_mask), EINVAL); /* port 2 */
	a.port_num = 1;
	a.pkey_index = 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, init_mask), EINVAL); /* one pkey */
	a.pkey_index = 0;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | (1 << 9);
	cr_assert_eq(ibv_modify_qp(qp, &a, init_mask), EINVAL);
	cr_assert_eq(to_init(qp), 0);

	RTR_BAD(path_mtu, (enum ibv_mtu)0, EINVAL);
	RTR_BAD(path_mtu, (enum ibv_mtu)6, EINVAL);
	RTR_BAD(path_mtu, IBV_MTU_2048, EINVAL); /* over the 1500-byte port's 1024 */
	RTR_BAD(max_dest_rd_atomic, DROCE_DP_MAX_RD_ATOMIC + 1, EINVAL);
	RTR_BAD(min_rnr_timer, 32, EINVAL);
	RTR_BAD(dest_qp_num, 1u << 24, EINVAL);
	RTR_BAD(ah_attr.is_global, 0, EINVAL);
	RTR_BAD(ah_attr.port_num, 2, EINVAL);
	RTR_BAD(ah_attr.grh.sgid_index, 2, EINVAL);
	RTR_BAD(ah_attr.grh.flow_label, 1u << 20, EINVAL);
	RTR_BAD(ah_attr.grh.sgid_index, 1, EINVAL); /* IPv6 source, IPv4 destination */
	RTR_BAD(ah_attr.grh.dgid.global.interface_id, 0, EINVAL);
	{
		struct ibv_qp_attr z;

		rtr_attr(&z, "198.18.0.2");
		memset(&z.ah_attr.grh.dgid, 0, 16);
		cr_assert_eq(ibv_modify_qp(qp, &z, RC_RTR_MASK), EINVAL, "zero dgid");
	}
	/* ALT_PATH: droce has no alternate paths */
	{
		struct ibv_qp_attr b;

		rtr_attr(&b, "198.18.0.2");
		cr_assert_eq(ibv_modify_qp(qp, &b, RC_RTR_MASK | IBV_QP_ALT_PATH), EINVAL);
	}
	cr_assert_eq(dqp(qp)->n_mods, 1);
	cr_assert_eq(to_rtr(qp), 0);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 32, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.timeout = 31;
	a.retry_cnt = 8;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.retry_cnt = 7;
	a.rnr_retry = 8;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.rnr_retry = 7;
	a.max_rd_atomic = DROCE_DP_MAX_RD_ATOMIC + 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.max_rd_atomic = DROCE_DP_MAX_RD_ATOMIC;
	a.sq_psn = 0x7654321; /* 24 bits are kept */
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), 0);
	cr_assert_eq(dqp(qp)->last_mod.sq_psn, 0x654321);
}

Test(modify, address_resolution)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	const struct droce_qp_mod *m = &dqp(qp)->last_mod;
	struct rte_ether_addr peer = { .addr_bytes = { 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f } };
	struct ibv_qp_attr a;

	cr_assert_eq(to_init(qp), 0);
	/* not a local port, not in the ARP table */
	{
		struct ibv_qp_attr b;

		rtr_attr(&b, "198.18.0.99");
		cr_assert_eq(ibv_modify_qp(qp, &b, RC_RTR_MASK), EHOSTUNREACH);
		droce_port_arp_learn(&fake_ports[0], htonl(0xc6120063), &peer); /* .99 */
		b.ah_attr.grh.traffic_class = 0x68;
		b.ah_attr.grh.flow_label = 0x12345;
		b.ah_attr.sl = 5;
		cr_assert_eq(ibv_modify_qp(qp, &b, RC_RTR_MASK), 0);
	}
	cr_assert_arr_eq(m->path.dst_mac.addr_bytes, peer.addr_bytes, 6);
	cr_assert_eq(m->path.traffic_class, 0x68);
	cr_assert_eq(m->path.flow_label, 0x12345);
	cr_assert_eq(m->path.vlan_pcp, 5);
	cr_assert_not(m->path.vlan);
	cr_assert_eq(m->path.udp_sport, droce_verbs_udp_sport(0, 0, 0x12345));

	/* IPv6: link-local EUI-64 carries the MAC */
	qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	m = &dqp(qp)->last_mod;
	cr_assert_eq(to_init(qp), 0);
	rtr_attr(&a, "0.0.0.0");
	inet_pton(AF_INET6, "fe80::0800:27ff:fe01:0203", a.ah_attr.grh.dgid.raw);
	a.ah_attr.grh.sgid_index = 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK), 0);
	cr_assert(m->path.ipv6);
	{
		const uint8_t want[6] = { 0x0a, 0x00, 0x27, 0x01, 0x02, 0x03 };

		cr_assert_arr_eq(m->path.dst_mac.addr_bytes, want, 6);
	}
	/* IPv6 global, unknown: unreachable */
	qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	cr_assert_eq(to_init(qp), 0);
	inet_pton(AF_INET6, "fd00::99", a.ah_attr.grh.dgid.raw);
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK), EHOSTUNREACH);
}

Test(modify, udp_sport_range)
{
	for (uint32_t l = 1; l < 2000; l += 7)
		for (uint32_t r = 1; r < 2000; r += 13) {
			uint16_t s = droce_verbs_udp_sport(l, r, 0);

			cr_assert_geq(s, 0xc000);
		}
	cr_assert_neq(droce_verbs_udp_sport(0x11, 0x12, 0), droce_verbs_udp_sport(0x11, 0x13, 0));
}

/* ================= post_send / post_recv ================= */

TestSuite(post, .init = setup, .timeout = 10);

static struct ibv_send_wr
send_wr(uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *sge, int n)
{
	return (struct ibv_send_wr){ .wr_id = id, .opcode = op, .sg_list = sge, .num_sge = n };
}

/* Posts a 3-WR list whose middle WR is @bad: expects @err and bad_wr == it. */
static void
expect_bad_middle(struct ibv_qp *qp, struct ibv_send_wr bad, int err)
{
	static char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 1 };
	struct ibv_send_wr w[3] = { send_wr(1, IBV_WR_SEND, &sge, 1), bad,
				    send_wr(3, IBV_WR_SEND, &sge, 1) };
	struct ibv_send_wr *bad_wr = NULL;
	uint32_t before = dqp(qp)->sq_posted;

	w[1].wr_id = 2;
	w[0].next = &w[1];
	w[1].next = &w[2];
	cr_assert_eq(ibv_post_send(qp, w, &bad_wr), err, "wr opcode %d", bad.opcode);
	cr_assert_eq(bad_wr, &w[1]);
	cr_assert_eq(dqp(qp)->sq_posted, before + 1, "the WR before the bad one is posted");
	cr_assert_eq(dqp(qp)->last_wqe.wr_id, 1);
	fake_qp_retire(dqp(qp), 1, 0);
}

Test(post, opcodes_allowed_on_rc)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 64, 0);
	static uint64_t word;
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 5 };
	const enum ibv_wr_opcode ok[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct ibv_send_wr *bad = NULL;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct ibv_send_wr w = send_wr(i, ok[i], &sge, 1);

		w.wr.rdma.remote_addr = 0x1000;
		cr_assert_eq(ibv_post_send(qp, &w, &bad), 0, "opcode %d", ok[i]);
		cr_assert_eq(dqp(qp)->last_wqe.opcode, ok[i]);
		fake_qp_retire(dqp(qp), 1, 0);
	}
	/* invalidation: the key goes into the WQE, the engine checks it */
	{
		struct ibv_send_wr w = send_wr(20, IBV_WR_LOCAL_INV, &sge, 1);

		w.invalidate_rkey = 0x1234;
		cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
		cr_assert_eq(dqp(qp)->last_wqe.opcode, IBV_WR_LOCAL_INV);
		cr_assert_eq(dqp(qp)->last_wqe.invalidate_rkey, 0x1234);
		cr_assert_eq(dqp(qp)->last_wqe.length, 0);
		fake_qp_retire(dqp(qp), 1, 0);
		w = send_wr(21, IBV_WR_SEND_WITH_INV, &sge, 1);
		w.invalidate_rkey = 0x5678;
		cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
		cr_assert_eq(dqp(qp)->last_wqe.invalidate_rkey, 0x5678);
		cr_assert_eq(dqp(qp)->last_wqe.length, 8);
		fake_qp_retire(dqp(qp), 1, 0);
	}
	/* a bind names a window; no TSO */
	expect_bad_middle(qp, send_wr(0, IBV_WR_BIND_MW, &sge, 1), EINVAL);
	expect_bad_middle(qp, send_wr(0, IBV_WR_TSO, &sge, 1), EINVAL);
	expect_bad_middle(qp, send_wr(0, (enum ibv_wr_opcode)200, &sge, 1), EINVAL);
}

Test(post, opcodes_by_qp_type)
{
	struct ibv_qp *uc = rts_qp(IBV_QPT_UC, 8, 2, 0, 0);
	struct ibv_qp *ud = rts_qp(IBV_QPT_UD, 8, 2, 0, 0);
	static uint64_t word;
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 5 };
	struct ibv_send_wr w = send_wr(1, IBV_WR_RDMA_WRITE, &sge, 1), *bad;

	cr_assert_eq(ibv_post_send(uc, &w, &bad), 0);
	fake_qp_retire(dqp(uc), 1, 0);
	expect_bad_middle(uc, send_wr(0, IBV_WR_RDMA_READ, &sge, 1), EINVAL);
	expect_bad_middle(uc, send_wr(0, IBV_WR_ATOMIC_CMP_AND_SWP, &sge, 1), EINVAL);
	expect_bad_middle(uc, send_wr(0, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1), EINVAL);
	/* UD: WRITE never; SEND needs an AH droce cannot make yet */
	w.opcode = IBV_WR_RDMA_WRITE;
	bad = NULL;
	cr_assert_eq(ibv_post_send(ud, &w, &bad), EINVAL);
	cr_assert_eq(bad, &w);
	w.opcode = IBV_WR_SEND;
	cr_assert_eq(ibv_post_send(ud, &w, &bad), EINVAL);
}

Test(post, state_that_cannot_send)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 8, 2, 0, 0);
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w = send_wr(1, IBV_WR_SEND, &sge, 1), *bad = NULL;
	struct ibv_qp_attr a;

	cr_assert_eq(ibv_post_send(qp, &w, &bad), EINVAL); /* RESET */
	cr_assert_eq(bad, &w);
	cr_assert_eq(to_init(qp), 0);
	bad = NULL;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), EINVAL); /* INIT */
	cr_assert_eq(bad, &w);
	cr_assert_eq(to_rtr(qp), 0);
	bad = NULL;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), EINVAL); /* RTR */
	cr_assert_eq(bad, &w);
	cr_assert_eq(dqp(qp)->sq_posted, 0);
	cr_assert_eq(to_rts(qp), 0);
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	/* ERR accepts: the engine flushes it with IBV_WC_WR_FLUSH_ERR */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	fake_qp_retire(dqp(qp), 1, 0);
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
}

Test(post, flags_sges_inline_atomics)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 32, 0);
	static uint64_t word;
	static char big[64];
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 5 };
	struct ibv_sge three[3] = { sge, sge, sge };
	struct ibv_sge wide[2] = { { .addr = (uintptr_t)big, .length = 32, .lkey = 1 },
				   { .addr = (uintptr_t)big, .length = 1, .lkey = 1 } };
	struct ibv_sge huge[2] = { { .addr = 0x1000, .length = 0x80000000u, .lkey = 1 },
				   { .addr = 0x1000, .length = 1, .lkey = 1 } };
	struct ibv_send_wr w;

	/* send_flags outside FENCE | SIGNALED | SOLICITED | INLINE */
	w = send_wr(0, IBV_WR_SEND, &sge, 1);
	w.send_flags = IBV_SEND_IP_CSUM;
	expect_bad_middle(qp, w, EINVAL);
	w.send_flags = 1 << 9;
	expect_bad_middle(qp, w, EINVAL);
	/* num_sge over the cap, negative */
	expect_bad_middle(qp, send_wr(0, IBV_WR_SEND, three, 3), EINVAL);
	expect_bad_middle(qp, send_wr(0, IBV_WR_SEND, &sge, -1), EINVAL);
	/* inline over max_inline_data (32) */
	w = send_wr(0, IBV_WR_SEND, wide, 2);
	w.send_flags = IBV_SEND_INLINE;
	expect_bad_middle(qp, w, EINVAL);
	/* inline makes no sense for READ and atomics */
	w = send_wr(0, IBV_WR_RDMA_READ, &sge, 1);
	w.send_flags = IBV_SEND_INLINE;
	expect_bad_middle(qp, w, EINVAL);
	/* atomics: 8-byte aligned remote address, one 8-byte SGE */
	w = send_wr(0, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1);
	w.wr.atomic.remote_addr = 0x1004;
	expect_bad_middle(qp, w, EINVAL);
	w = send_wr(0, IBV_WR_ATOMIC_CMP_AND_SWP, wide, 2);
	w.wr.atomic.remote_addr = 0x1000;
	expect_bad_middle(qp, w, EINVAL);
	w = send_wr(0, IBV_WR_ATOMIC_CMP_AND_SWP, wide, 1);
	expect_bad_middle(qp, w, EINVAL);
	/* a message over the largest droce carries */
	expect_bad_middle(qp, send_wr(0, IBV_WR_RDMA_WRITE, huge, 2), EINVAL);
}

Test(post, encoding)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 32, 0);
	const struct droce_wqe *q = &dqp(qp)->last_wqe;
	static uint64_t word;
	char msg[16] = "hello, inline!";
	struct ibv_sge sg2[2] = { { .addr = (uintptr_t)msg, .length = 7, .lkey = 0xbad },
				  { .addr = (uintptr_t)msg + 7, .length = 8, .lkey = 0xbad } };
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 0x1234 };
	struct ibv_send_wr w, *bad = NULL;

	/* INLINE: bytes copied at post time, lkeys ignored */
	w = send_wr(77, IBV_WR_SEND_WITH_IMM, sg2, 2);
	w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	w.imm_data = htonl(0xabcdef01);
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	memset(msg, 'x', sizeof(msg));
	cr_assert_eq(q->wr_id, 77);
	cr_assert_eq(q->flags, DROCE_WQE_INLINE | DROCE_WQE_SIGNALED | DROCE_WQE_SOLICITED);
	cr_assert_eq(q->length, 15);
	cr_assert_eq(q->num_sge, 0);
	cr_assert_arr_eq(q->inline_data, "hello, inline!", 15);
	cr_assert_eq(q->imm, htonl(0xabcdef01));

	/* gather list, RDMA fields, FENCE; unsignaled without sq_sig_all */
	w = send_wr(78, IBV_WR_RDMA_WRITE, sg2, 2);
	w.send_flags = IBV_SEND_FENCE;
	w.wr.rdma.remote_addr = 0x123456789ull;
	w.wr.rdma.rkey = 0x4321;
	w.imm_data = 5;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	cr_assert_eq(q->flags, DROCE_WQE_FENCE);
	cr_assert_eq(q->num_sge, 2);
	cr_assert_eq(q->length, 15);
	cr_assert_eq(q->sge[1].lkey, 0xbad, "lkeys are the engine's to check");
	cr_assert_eq(q->sge[1].addr, (uintptr_t)msg + 7);
	cr_assert_eq(q->remote_addr, 0x123456789ull);
	cr_assert_eq(q->rkey, 0x4321);
	cr_assert_eq(q->imm, 0, "no imm without WITH_IMM");

	/* atomics */
	w = send_wr(79, IBV_WR_ATOMIC_CMP_AND_SWP, &sge, 1);
	w.wr.atomic.remote_addr = 0x2000;
	w.wr.atomic.rkey = 0x99;
	w.wr.atomic.compare_add = 11;
	w.wr.atomic.swap = 22;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	cr_assert_eq(q->remote_addr, 0x2000);
	cr_assert_eq(q->rkey, 0x99);
	cr_assert_eq(q->compare_add, 11);
	cr_assert_eq(q->swap, 22);
	cr_assert_eq(q->length, 8);
	cr_assert_eq(q->sge[0].lkey, 0x1234);
}

Test(post, sq_sig_all_signals_everything)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 1, 0, 1);
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w = send_wr(1, IBV_WR_SEND, &sge, 1), *bad;

	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	cr_assert_eq(dqp(qp)->last_wqe.flags, DROCE_WQE_SIGNALED);
}

Test(post, send_queue_full_enomem)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 2, 1, 0, 0);
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w[3], *bad = NULL;

	for (int i = 0; i < 3; i++) {
		w[i] = send_wr(i, IBV_WR_SEND, &sge, 1);
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	cr_assert_eq(ibv_post_send(qp, w, &bad), ENOMEM);
	cr_assert_eq(bad, &w[2]);
	cr_assert_eq(dqp(qp)->sq_posted, 2);
	fake_qp_retire(dqp(qp), 1, 0);
	cr_assert_eq(ibv_post_send(qp, &w[2], &bad), 0);
}

Test(post, recv_rules)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 2, 2, 0, 0);
	static char buf[64];
	struct ibv_sge sge[3] = { { .addr = (uintptr_t)buf, .length = 16, .lkey = 7 },
				  { .addr = (uintptr_t)buf + 16, .length = 16, .lkey = 7 },
				  { .addr = (uintptr_t)buf + 32, .length = 16, .lkey = 7 } };
	struct ibv_recv_wr r[3], *bad = NULL;

	for (int i = 0; i < 3; i++)
		r[i] = (struct ibv_recv_wr){ .wr_id = 100 + i, .sg_list = sge, .num_sge = 2,
					     .next = i < 2 ? &r[i + 1] : NULL };
	/* RESET cannot receive */
	cr_assert_eq(ibv_post_recv(qp, r, &bad), EINVAL);
	cr_assert_eq(bad, &r[0]);
	cr_assert_eq(to_init(qp), 0);
	/* num_sge over max_recv_sge stops the list there */
	r[1].num_sge = 3;
	bad = NULL;
	cr_assert_eq(ibv_post_recv(qp, r, &bad), EINVAL);
	cr_assert_eq(bad, &r[1]);
	cr_assert_eq(dqp(qp)->rq_posted, 1);
	r[1].num_sge = -1;
	cr_assert_eq(ibv_post_recv(qp, &r[1], &bad), EINVAL);
	r[1].num_sge = 2;
	/* full */
	cr_assert_eq(ibv_post_recv(qp, &r[1], &bad), ENOMEM);
	cr_assert_eq(bad, &r[2]);
	cr_assert_eq(dqp(qp)->last_rqe.wr_id, 101);
	cr_assert_eq(dqp(qp)->last_rqe.length, 32);
	cr_assert_eq(dqp(qp)->last_rqe.num_sge, 2);
	cr_assert_eq(dqp(qp)->last_rqe.sge[1].addr, (uintptr_t)buf + 16);
	fake_qp_retire(dqp(qp), 0, 2);
	cr_assert_eq(ibv_post_recv(qp, &r[2], &bad), 0);
}

Test(post, empty_list)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 2, 1, 0, 0);
	struct ibv_send_wr *bad = (struct ibv_send_wr *)0x1;

	cr_assert_eq(ibv_post_send(qp, NULL, &bad), 0);
	cr_assert_eq(bad, (struct ibv_send_wr *)0x1, "bad_wr untouched on success");
}

/* A post list is one lock round and one doorbell (one commit), each WR encoded
 * in its own slot; a failing WR ends the list with the ones before it posted. */
Test(post, one_doorbell_per_list)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 1, 16, 0);
	static char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w[4], *bad = NULL;
	struct ibv_recv_wr r[4], *rbad = NULL;
	unsigned int commits = dqp(qp)->n_commits;

	for (int i = 0; i < 4; i++) {
		w[i] = send_wr(10 + i, IBV_WR_SEND, &sge, 1);
		w[i].next = i < 3 ? &w[i + 1] : NULL;
		r[i] = (struct ibv_recv_wr){ .wr_id = 20 + i, .sg_list = &sge, .num_sge = 1,
					     .next = i < 3 ? &r[i + 1] : NULL };
	}
	memcpy(buf, "inline!!", 8);
	w[3].send_flags = IBV_SEND_INLINE;
	cr_assert_eq(ibv_post_send(qp, w, &bad), 0);
	cr_assert_eq(dqp(qp)->sq_posted, 4);
	cr_assert_eq(dqp(qp)->n_commits, commits + 1, "one doorbell for 4 WRs");
	cr_assert_not(dqp(qp)->in_batch, "the post lock is released");
	/* each WR went to its own slot, the inline bytes copied into the last */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(dqp(qp)->batch[i].wr_id, (uint64_t)(10 + i));
	cr_assert_eq(dqp(qp)->batch[3].flags & DROCE_WQE_INLINE, DROCE_WQE_INLINE);
	cr_assert_eq(memcmp(dqp(qp)->batch[3].inline_data, "inline!!", 8), 0);
	cr_assert_eq(dqp(qp)->batch[2].num_sge, 1);
	cr_assert_eq(dqp(qp)->batch[2].sge[0].lkey, 5);

	/* a bad opcode third: two posted in one commit, bad_wr at the third */
	w[2].opcode = IBV_WR_TSO;
	commits = dqp(qp)->n_commits;
	cr_assert_eq(ibv_post_send(qp, w, &bad), EINVAL);
	cr_assert_eq(bad, &w[2]);
	cr_assert_eq(dqp(qp)->sq_posted, 6);
	cr_assert_eq(dqp(qp)->n_commits, commits + 1);
	cr_assert_eq(dqp(qp)->last_wqe.wr_id, 11);
	cr_assert_not(dqp(qp)->in_batch);
	/* a bad first WR: nothing posted, the lock still released */
	cr_assert_eq(ibv_post_send(qp, &w[2], &bad), EINVAL);
	cr_assert_eq(bad, &w[2]);
	cr_assert_eq(dqp(qp)->sq_posted, 6);
	cr_assert_not(dqp(qp)->in_batch);

	/* receives: the same, and ENOMEM in the middle when the queue fills */
	commits = dqp(qp)->n_commits;
	cr_assert_eq(ibv_post_recv(qp, r, &rbad), 0);
	cr_assert_eq(dqp(qp)->rq_posted, 4);
	cr_assert_eq(dqp(qp)->n_commits, commits + 1);
	cr_assert_not(dqp(qp)->in_rbatch);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(dqp(qp)->rbatch[i].wr_id, (uint64_t)(20 + i));
	cr_assert_eq(ibv_post_recv(qp, r, &rbad), 0);
	cr_assert_eq(dqp(qp)->rq_posted, 8);
	fake_qp_retire(dqp(qp), 0, 2);
	cr_assert_eq(ibv_post_recv(qp, r, &rbad), ENOMEM);
	cr_assert_eq(rbad, &r[2], "the queue held two more");
	cr_assert_eq(dqp(qp)->rq_posted, 10);
	cr_assert_eq(dqp(qp)->last_rqe.wr_id, 21);
	cr_assert_not(dqp(qp)->in_rbatch);
}

/* ================= the ibv_wr_* builder encodes as ibv_post_send ================= */

/* The fields of the WQE the engine reads. */
static void
same_wqe(const struct droce_wqe *a, const struct droce_wqe *b, const char *what)
{
	cr_assert_eq(a->wr_id, b->wr_id, "%s: wr_id", what);
	cr_assert_eq(a->opcode, b->opcode, "%s: opcode", what);
	cr_assert_eq(a->flags, b->flags, "%s: flags %#x vs %#x", what, a->flags, b->flags);
	cr_assert_eq(a->num_sge, b->num_sge, "%s: num_sge", what);
	cr_assert_eq(a->imm, b->imm, "%s: imm", what);
	cr_assert_eq(a->invalidate_rkey, b->invalidate_rkey, "%s: invalidate_rkey", what);
	cr_assert_eq(a->remote_addr, b->remote_addr, "%s: remote_addr", what);
	cr_assert_eq(a->rkey, b->rkey, "%s: rkey", what);
	cr_assert_eq(a->length, b->length, "%s: length", what);
	cr_assert_eq(a->compare_add, b->compare_add, "%s: compare_add", what);
	cr_assert_eq(a->swap, b->swap, "%s: swap", what);
	cr_assert_eq(a->ah, b->ah, "%s: ah", what);
	cr_assert_eq(a->remote_qpn, b->remote_qpn, "%s: remote_qpn", what);
	cr_assert_eq(a->remote_qkey, b->remote_qkey, "%s: remote_qkey", what);
	cr_assert_eq(memcmp(a->sge, b->sge, a->num_sge * sizeof(a->sge[0])), 0, "%s: SGEs", what);
	if (a->flags & DROCE_WQE_INLINE)
		cr_assert_eq(memcmp(a->inline_data, b->inline_data, a->length), 0, "%s: inline", what);
}

/* Posts @w with ibv_post_send, then builds the same WR with @build; the two WQEs match. */
static void
both_ways(struct ibv_qp *qp, struct ibv_send_wr *w, void (*build)(struct ibv_qp_ex *),
	  const char *what)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	struct ibv_send_wr *bad = NULL;
	struct droce_wqe old;
	unsigned int commits = dqp(qp)->n_commits;

	cr_assert_eq(ibv_post_send(qp, w, &bad), 0, "%s: ibv_post_send", what);
	old = dqp(qp)->last_wqe;
	ibv_wr_start(x);
	x->wr_id = w->wr_id;
	x->wr_flags = w->send_flags;
	build(x);
	cr_assert_eq(ibv_wr_complete(x), 0, "%s: ibv_wr_complete", what);
	/* one commit for ibv_post_send's list (it posts through the same batch
	 * calls), one for the builder's batch */
	cr_assert_eq(dqp(qp)->n_commits, commits + 2);
	cr_assert(!dqp(qp)->in_batch, "%s: post lock released", what);
	same_wqe(&old, &dqp(qp)->last_wqe, what);
	fake_qp_retire(dqp(qp), 2, 0);
}

static char b_msg[16] = "hello, inline!";
static uint64_t b_word;

static void
b_send_imm_inline(struct ibv_qp_ex *x)
{
	struct ibv_data_buf d[2] = { { b_msg, 7 }, { b_msg + 7, 8 } };

	ibv_wr_send_imm(x, htonl(0xabcdef01));
	ibv_wr_set_inline_data_list(x, 2, d);
}

static void
b_write_sges(struct ibv_qp_ex *x)
{
	struct ibv_sge sg[2] = { { (uintptr_t)b_msg, 7, 0xbad }, { (uintptr_t)b_msg + 7, 8, 0xbad } };

	ibv_wr_rdma_write(x, 0x4321, 0x123456789ull);
	ibv_wr_set_sge_list(x, 2, sg);
}

static void
b_write_imm(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_write_imm(x, 0x4321, 0x1000, htonl(7));
	ibv_wr_set_sge(x, 0x77, (uintptr_t)b_msg, 16);
}

static void
b_read(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_read(x, 0x55, 0x3000);
	ibv_wr_set_sge(x, 0x77, (uintptr_t)b_msg, 16);
}

static void
b_cmp_swp(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_cmp_swp(x, 0x99, 0x2000, 11, 22);
	ibv_wr_set_sge(x, 0x1234, (uintptr_t)&b_word, 8);
}

static void
b_fetch_add(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_fetch_add(x, 0x99, 0x2008, 3);
	ibv_wr_set_sge(x, 0x1234, (uintptr_t)&b_word, 8);
}

static void
b_send_inv(struct ibv_qp_ex *x)
{
	ibv_wr_send_inv(x, 0xabc);
	ibv_wr_set_sge(x, 0x77, (uintptr_t)b_msg, 4);
}

static void
b_local_inv(struct ibv_qp_ex *x)
{
	ibv_wr_local_inv(x, 0x1234);
}

static void
b_send_empty(struct ibv_qp_ex *x)
{
	ibv_wr_send(x);
}

Test(post, builder_encodes_as_post_send)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 32, 0);
	struct ibv_qp *all = rts_qp(IBV_QPT_RC, 8, 2, 32, 1);
	struct ibv_sge sg2[2] = { { (uintptr_t)b_msg, 7, 0xbad }, { (uintptr_t)b_msg + 7, 8, 0xbad } };
	struct ibv_sge s16 = { (uintptr_t)b_msg, 16, 0x77 }, s4 = { (uintptr_t)b_msg, 4, 0x77 };
	struct ibv_sge s8 = { (uintptr_t)&b_word, 8, 0x1234 };
	struct ibv_send_wr w;

	w = send_wr(77, IBV_WR_SEND_WITH_IMM, sg2, 2);
	w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	w.imm_data = htonl(0xabcdef01);
	both_ways(qp, &w, b_send_imm_inline, "inline SEND_WITH_IMM");

	w = send_wr(78, IBV_WR_RDMA_WRITE, sg2, 2);
	w.send_flags = IBV_SEND_FENCE;
	w.wr.rdma.remote_addr = 0x123456789ull;
	w.wr.rdma.rkey = 0x4321;
	both_ways(qp, &w, b_write_sges, "WRITE, 2 SGEs, fence");

	w = send_wr(79, IBV_WR_RDMA_WRITE_WITH_IMM, &s16, 1);
	w.send_flags = IBV_SEND_SIGNALED;
	w.imm_data = htonl(7);
	w.wr.rdma.remote_addr = 0x1000;
	w.wr.rdma.rkey = 0x4321;
	both_ways(qp, &w, b_write_imm, "WRITE_WITH_IMM");

	w = send_wr(80, IBV_WR_RDMA_READ, &s16, 1);
	w.wr.rdma.remote_addr = 0x3000;
	w.wr.rdma.rkey = 0x55;
	both_ways(qp, &w, b_read, "READ");

	w = send_wr(81, IBV_WR_ATOMIC_CMP_AND_SWP, &s8, 1);
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.atomic.remote_addr = 0x2000;
	w.wr.atomic.rkey = 0x99;
	w.wr.atomic.compare_add = 11;
	w.wr.atomic.swap = 22;
	both_ways(qp, &w, b_cmp_swp, "CMP_SWP");

	w = send_wr(82, IBV_WR_ATOMIC_FETCH_AND_ADD, &s8, 1);
	w.wr.atomic.remote_addr = 0x2008;
	w.wr.atomic.rkey = 0x99;
	w.wr.atomic.compare_add = 3;
	both_ways(qp, &w, b_fetch_add, "FETCH_ADD");

	w = send_wr(83, IBV_WR_SEND_WITH_INV, &s4, 1);
	w.invalidate_rkey = 0xabc;
	both_ways(qp, &w, b_send_inv, "SEND_WITH_INV");

	w = send_wr(84, IBV_WR_LOCAL_INV, NULL, 0);
	w.send_flags = IBV_SEND_SIGNALED;
	w.invalidate_rkey = 0x1234;
	both_ways(qp, &w, b_local_inv, "LOCAL_INV");

	/* sq_sig_all: every builder WR is signaled too */
	w = send_wr(85, IBV_WR_SEND, NULL, 0);
	both_ways(all, &w, b_send_empty, "zero-length SEND, sq_sig_all");
}

Test(post, builder_failed_batch_posts_nothing)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 4, 1, 8, 0);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	uint32_t before = dqp(qp)->sq_posted;
	unsigned int commits = dqp(qp)->n_commits;

	/* good, good, then inline too long: EINVAL, the two good ones are not posted */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)b_msg, 8);
	ibv_wr_rdma_write(x, 2, 0x1000);
	ibv_wr_set_sge(x, 1, (uintptr_t)b_msg, 8);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, b_msg, 9);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	cr_assert_eq(dqp(qp)->sq_posted, before);
	cr_assert_eq(dqp(qp)->n_commits, commits, "nothing committed");
	cr_assert(!dqp(qp)->in_batch, "post lock released");
	/* five in a four-slot queue: ENOMEM, none posted */
	ibv_wr_start(x);
	for (int i = 0; i < 5; i++)
		ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), ENOMEM);
	cr_assert_eq(dqp(qp)->sq_posted, before);
	/* four fit */
	ibv_wr_start(x);
	for (int i = 0; i < 4; i++)
		ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), 0);
	cr_assert_eq(dqp(qp)->sq_posted, before + 4);
	/* abort: nothing */
	fake_qp_retire(dqp(qp), 4, 0);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_abort(x);
	cr_assert_eq(dqp(qp)->sq_posted, before + 4);
	cr_assert(!dqp(qp)->in_batch);
}

Test(post, builder_outside_a_batch_does_nothing)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 4, 1, 8, 0);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	uint32_t before = dqp(qp)->sq_posted;

	/* no ibv_wr_start: nothing is written, nothing posted, no crash */
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)b_msg, 8);
	ibv_wr_rdma_write(x, 2, 0x1000);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_abort(x);
	cr_assert_eq(dqp(qp)->sq_posted, before);
	cr_assert(!dqp(qp)->in_batch);
	/* and after a completed batch, the same */
	ibv_wr_start(x);
	ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), 0);
	ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	cr_assert_eq(dqp(qp)->sq_posted, before + 1);
}
