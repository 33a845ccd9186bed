/* SPDX-License-Identifier: BSD-3-Clause
 * verbs_api validation, tier (a): no EAL, no engine.  verbs_api runs against
 * the FAKE dataplane in fake_dp.c, which records what it is handed.  Each
 * test checks one rule of the man pages (ibv_post_send(3), ibv_modify_qp(3),
 * ibv_reg_mr(3), ...) with its errno and bad_wr.  This file: devices, MRs,
 * CQs and QP caps; ibv_modify_qp's rules are test_validation_modify.c, posting
 * and the builder test_validation_post.c, the shared set-up validation.c.
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
	cr_assert_eq(a.gid_tbl_len, DROCE_MAX_GIDS, "the table's size, two entries used");
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
	/* an empty entry of the table reads as zeros (rdma-core's ibv_query_gid),
	 * past the table is an error */
	memset(&g, 0xab, sizeof(g));
	cr_assert_eq(ibv_query_gid(ctx, 1, 2, &g), 0);
	memset(&want, 0, sizeof(want));
	cr_assert_arr_eq(g.raw, want.raw, 16);
	errno = 0;
	cr_assert_eq(ibv_query_gid(ctx, 1, DROCE_MAX_GIDS, &g), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_query_gid(ctx, 2, 0, &g), -1);
	cr_assert_eq(ibv_query_gid(ctx, 1, -1, &g), -1);

	inet_pton(AF_INET6, "fd00::1", want.raw);
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, 1, &e, 0), 0);
	cr_assert_eq(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	cr_assert_arr_eq(e.gid.raw, want.raw, 16);
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, 5, &e, 0), ENODATA, "an empty entry");
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, DROCE_MAX_GIDS, &e, 0), EINVAL, "past the table");
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
	cr_assert_eq(mr->lkey, v->dmr->lkey);
	cr_assert_eq(mr->rkey, v->dmr->rkey);
	cr_assert_neq(mr->lkey, 0);
	cr_assert_eq(mr->addr, buf + 16);
	cr_assert_eq(mr->length, 100);
	cr_assert_eq(mr->pd, pd);
	cr_assert_eq(mr->context, ctx);
	cr_assert_eq(v->dmr->iova, (uint64_t)(uintptr_t)(buf + 16));
	cr_assert_eq(v->dmr->addr, (uint8_t *)buf + 16);
	cr_assert_eq(v->dmr->access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(v->dmr->pd_id, ((struct droce_vpd *)pd)->id);
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
	cr_assert_eq(((struct droce_vmr *)mr)->dmr->iova, 0x1000);
	ibv_dereg_mr(mr);
	/* non-constant access goes through ibv_reg_mr_iova2; optional bits are ignored */
	mr = ibv_reg_mr(pd, buf, 64, acc);
	cr_assert_not_null(mr);
	cr_assert_eq(((struct droce_vmr *)mr)->dmr->access, IBV_ACCESS_LOCAL_WRITE);
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
