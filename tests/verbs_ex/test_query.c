/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_query_device_ex, ibv_query_port's extended attributes,
 * ibv_query_gid_ex / ibv_query_gid_table / ibv_query_gid_type, and the
 * creation verbs' comp_mask checks: ibv_create_qp_ex (send_ops_flags),
 * ibv_create_srq_ex, and what droce does not have (thread domains, parent
 * domains: EOPNOTSUPP as a provider without them; XRC domains are suite xrc's).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "common.h"

TestSuite(query, .fini = tc_stop, .timeout = 60);

/* rdma-core's private ibv_query_gid_type (IBVERBS_PRIVATE_34, used by
 * ibv_devinfo): type 0 = IB / RoCE v1, 1 = RoCE v2. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);

static struct x_end A;

Test(query, device_ex)
{
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;
	struct ibv_query_device_ex_input in = { .comp_mask = 1 };

	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, 0, 16);
	memset(&ax, 0xa5, sizeof(ax));
	cr_assert_eq(ibv_query_device_ex(A.ctx, NULL, &ax), 0);
	cr_assert_eq(ibv_query_device(A.ctx, &a), 0);
	cr_assert_eq(memcmp(&ax.orig_attr, &a, sizeof(a)), 0, "orig_attr is ibv_query_device's");
	cr_assert_eq(ax.orig_attr.atomic_cap, IBV_ATOMIC_HCA);
	cr_assert_eq(ax.odp_caps.general_caps, 0, "no on-demand paging");
	cr_assert_eq(ax.odp_caps.per_transport_caps.rc_odp_caps, 0);
	cr_assert_eq(ax.completion_timestamp_mask, UINT64_MAX);
	cr_assert_eq(ax.hca_core_clock, 1000000, "kHz: timestamps are nanoseconds");
	cr_assert_eq(ax.device_cap_flags_ex & 0xffffffffu, (uint64_t)(unsigned int)a.device_cap_flags);
	/* RAW_PACKET QPs: TSO and checksums (tests/raw) */
	cr_assert_eq(ax.tso_caps.max_tso, 256 * 1024);
	cr_assert_eq(ax.tso_caps.supported_qpts, 1u << IBV_QPT_RAW_PACKET);
	cr_assert(a.device_cap_flags & IBV_DEVICE_RAW_IP_CSUM);
	/* RSS (tests/raw/test_rss.c): RAW_PACKET, Toeplitz, tables of 256 WQs */
	cr_assert_eq(ax.rss_caps.supported_qpts, 1u << IBV_QPT_RAW_PACKET);
	cr_assert_eq(ax.rss_caps.max_rwq_indirection_table_size, 256);
	cr_assert_eq(ax.max_wq_type_rq, (uint32_t)a.max_qp);
	cr_assert_eq(ax.raw_packet_caps, IBV_RAW_PACKET_CAP_IP_CSUM);
	cr_assert_eq(ax.tm_caps.max_num_tags, 0);
	cr_assert_eq(ax.cq_mod_caps.max_cq_count, 0);
	cr_assert_eq(ax.max_dm_size, 0);
	cr_assert_eq(ax.pci_atomic_caps.fetch_add, 0);
	cr_assert_eq(ax.xrc_odp_caps, 0);
	cr_assert_eq(ax.phys_port_cnt_ex, 1);
	cr_assert_eq(ibv_query_device_ex(A.ctx, &in, &ax), EINVAL);
	/* the op itself, with a smaller (older) struct: only what fits is written */
	{
		struct verbs_context *v = verbs_get_ctx_op(A.ctx, query_device_ex);
		struct { struct ibv_device_attr_ex x; uint8_t guard[8]; } g;
		size_t old = offsetof(struct ibv_device_attr_ex, completion_timestamp_mask);

		cr_assert_not_null(v);
		memset(&g, 0x5a, sizeof(g));
		cr_assert_eq(v->query_device_ex(A.ctx, NULL, &g.x, old), 0);
		cr_assert_eq(((uint8_t *)&g.x)[old], 0x5a, "nothing past attr_size");
		cr_assert_eq(v->query_device_ex(A.ctx, NULL, &g.x, sizeof(a) - 1), EINVAL);
	}
}

Test(query, port_ex_and_gids)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry e, tab[4];
	union ibv_gid g;
	int type = -1;

	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, 0, 16);
	memset(&pa, 0xa5, sizeof(pa));
	cr_assert_eq(ibv_query_port(A.ctx, 1, &pa), 0);
	cr_assert_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert(pa.port_cap_flags & IBV_PORT_IP_BASED_GIDS);
	cr_assert(pa.port_cap_flags & IBV_PORT_CM_SUP, "droce's CM answers on QP1");
	cr_assert_eq(pa.flags, IBV_QPF_GRH_REQUIRED, "RoCE address vectors need the GRH");
	cr_assert_eq(pa.port_cap_flags2, 0, "25G: no HDR/NDR speed bits");
	cr_assert_eq(pa.gid_tbl_len, DROCE_MAX_GIDS, "the table's size; two entries used");

	/* GID 0: 198.18.0.1 v4-mapped, RoCE v2; GID 1: 2001:2::1 */
	cr_assert_eq(ibv_query_gid_ex(A.ctx, 1, 0, &e, 0), 0);
	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	inet_pton(AF_INET, "198.18.0.1", g.raw + 12);
	cr_assert_arr_eq(e.gid.raw, g.raw, 16);
	cr_assert_eq(e.gid_index, 0);
	cr_assert_eq(e.port_num, 1);
	cr_assert_eq(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	cr_assert_eq(e.ndev_ifindex, 0);
	cr_assert_eq(ibv_query_gid_ex(A.ctx, 1, 1, &e, 0), 0);
	inet_pton(AF_INET6, "2001:2::1", g.raw);
	cr_assert_arr_eq(e.gid.raw, g.raw, 16);
	cr_assert_eq(e.gid_index, 1);
	cr_assert_eq(ibv_query_gid_ex(A.ctx, 1, 2, &e, 0), ENODATA, "an empty entry");
	cr_assert_eq(ibv_query_gid_ex(A.ctx, 1, DROCE_MAX_GIDS, &e, 0), EINVAL, "past the table");
	cr_assert_eq(ibv_query_gid_ex(A.ctx, 1, 0, &e, 1), EINVAL, "flags must be 0");
	cr_assert_eq(ibv_query_gid_ex(A.ctx, 2, 0, &e, 0), EINVAL, "one port");

	cr_assert_eq(ibv_query_gid_table(A.ctx, tab, 4, 0), 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ibv_query_gid_ex(A.ctx, 1, (uint32_t)i, &e, 0), 0);
		cr_assert_eq(memcmp(&tab[i], &e, sizeof(e)), 0, "table entry %d", i);
	}
	cr_assert_eq(ibv_query_gid_table(A.ctx, tab, 1, 0), -EINVAL, "table larger than the array");
	cr_assert_eq(ibv_query_gid_table(A.ctx, tab, 4, 1), -EINVAL);

	cr_assert_eq(ibv_query_gid_type(A.ctx, 1, 0, &type), 0);
	cr_assert_eq(type, 1, "RoCE v2");
	cr_assert_eq(ibv_query_gid_type(A.ctx, 1, 1, &type), 0);
	cr_assert_eq(type, 1);
	type = -1;
	cr_assert_eq(ibv_query_gid_type(A.ctx, 1, 7, &type), 0, "an empty GID reads as v1, 0");
	cr_assert_eq(type, 0);
	errno = 0;
	cr_assert_eq(ibv_query_gid_type(A.ctx, 3, 0, &type), -1);
	cr_assert_eq(errno, EINVAL);
}

static void
qp_ex_fails(enum ibv_qp_type type, uint32_t comp_mask, uint64_t ops, int err, const char *what)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = type, .cap = { .max_send_wr = 4, .max_recv_wr = 4 },
		.comp_mask = comp_mask, .pd = A.pd, .send_ops_flags = ops,
		.send_cq = ibv_cq_ex_to_cq(A.scq), .recv_cq = ibv_cq_ex_to_cq(A.rcq),
	};

	if (comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS)
		qa.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	if (comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER)
		qa.max_tso_header = DROCE_DP_MAX_TSO_HEADER + 1; /* one more than droce carries */
	errno = 0;
	cr_assert_null(ibv_create_qp_ex(A.ctx, &qa), "%s", what);
	cr_assert_eq(errno, err, "%s: errno %d", what, errno);
}

Test(query, create_qp_ex_checks)
{
	const uint32_t pd_ops = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_UD, .cap = { .max_send_wr = 5, .max_recv_wr = 3,
						.max_send_sge = 2, .max_inline_data = 16 },
		.comp_mask = pd_ops | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
	};
	struct ibv_qp *qp;

	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, 0, 16);
	/* send_ops_flags the QP type cannot do: EOPNOTSUPP (the QP is not created) */
	qp_ex_fails(IBV_QPT_UD, pd_ops, IBV_QP_EX_WITH_RDMA_WRITE, EOPNOTSUPP, "WRITE on UD");
	qp_ex_fails(IBV_QPT_UC, pd_ops, IBV_QP_EX_WITH_RDMA_READ, EOPNOTSUPP, "READ on UC");
	qp_ex_fails(IBV_QPT_UC, pd_ops, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, EOPNOTSUPP,
		    "atomic on UC");
	qp_ex_fails(IBV_QPT_RC, pd_ops, IBV_QP_EX_WITH_TSO, EOPNOTSUPP, "TSO on RC");
	qp_ex_fails(IBV_QPT_RC, pd_ops, 1ull << 20, EOPNOTSUPP, "unknown send op");
	/* what droce has not: EOPNOTSUPP; what nobody knows: EINVAL */
	qp_ex_fails(IBV_QPT_XRC_RECV, IBV_QP_INIT_ATTR_PD, 0, EINVAL, "XRC_RECV without XRCD");
	qp_ex_fails(IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, 0,
		    EOPNOTSUPP, "create flags");
	qp_ex_fails(IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER, 0,
		    EOPNOTSUPP, "TSO header");
	qp_ex_fails(IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_RX_HASH, 0, EOPNOTSUPP,
		    "RSS on RC");
	qp_ex_fails(IBV_QPT_RAW_PACKET, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_RX_HASH, 0, EINVAL,
		    "RSS without its table");
	qp_ex_fails(IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | (1u << 12), 0, EINVAL, "unknown comp_mask");
	qp_ex_fails(IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, IBV_QP_EX_WITH_SEND, EINVAL,
		    "no PD");
	qp_ex_fails(IBV_QPT_XRC_SEND, pd_ops, IBV_QP_EX_WITH_TSO, EOPNOTSUPP, "TSO on XRC_SEND");
	qp_ex_fails(IBV_QPT_RAW_PACKET, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER, 0,
		    EINVAL, "TSO header over 512 bytes");

	/* create_flags 0 is fine; caps come back */
	qa.pd = A.pd;
	qa.send_cq = ibv_cq_ex_to_cq(A.scq);
	qa.recv_cq = ibv_cq_ex_to_cq(A.rcq);
	qp = ibv_create_qp_ex(A.ctx, &qa);
	cr_assert_not_null(qp, "%s", strerror(errno));
	cr_assert_eq(qp->qp_type, IBV_QPT_UD);
	cr_assert_geq(qa.cap.max_send_wr, 5);
	cr_assert_geq(qa.cap.max_inline_data, 16);
	cr_assert_not_null(ibv_qp_to_qp_ex(qp));
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(query, srq_ex_and_missing_objects)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_BASIC,
	};
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_parent_domain_init_attr pda = { 0 };
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = -1 };
	struct ibv_srq_attr q;
	struct ibv_srq *srq;

	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, 0, 16);
	sa.pd = A.pd;
	sa.cq = ibv_cq_ex_to_cq(A.rcq);
	/* basic, with the CQ mask (only XRC uses it): through the op, created */
	srq = ibv_create_srq_ex(A.ctx, &sa);
	cr_assert_not_null(srq, "%s", strerror(errno));
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, 8);
	{
		struct ibv_sge s = { (uintptr_t)A.buf, 64, A.mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &s, .num_sge = 1 }, *bad;

		cr_assert_eq(ibv_post_srq_recv(srq, &r, &bad), 0);
	}
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	/* basic with PD and type only: verbs.h calls ibv_create_srq itself */
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	srq = ibv_create_srq_ex(A.ctx, &sa);
	cr_assert_not_null(srq);
	cr_assert_eq(ibv_destroy_srq(srq), 0);

	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	errno = 0;
	cr_assert_null(ibv_create_srq_ex(A.ctx, &sa)); /* sa.xrcd NULL (suite xrc has the rest) */
	cr_assert_eq(errno, EINVAL, "XRC SRQ without its domain");
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TM;
	sa.srq_type = IBV_SRQT_TM;
	errno = 0;
	cr_assert_null(ibv_create_srq_ex(A.ctx, &sa));
	cr_assert_eq(errno, EOPNOTSUPP, "tag-matching SRQ");
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_BASIC;
	errno = 0;
	cr_assert_null(ibv_create_srq_ex(A.ctx, &sa));
	cr_assert_eq(errno, EINVAL, "no PD");
	sa.comp_mask = IBV_SRQ_INIT_ATTR_PD | (1u << 7);
	errno = 0;
	cr_assert_null(ibv_create_srq_ex(A.ctx, &sa));
	cr_assert_eq(errno, EINVAL, "unknown comp_mask");

	errno = 0;
	cr_assert_null(ibv_alloc_td(A.ctx, &ta));
	cr_assert_eq(errno, EOPNOTSUPP);
	errno = 0;
	cr_assert_null(ibv_alloc_parent_domain(A.ctx, &pda));
	cr_assert_eq(errno, EOPNOTSUPP);
	errno = 0;
	cr_assert_null(ibv_open_xrcd(A.ctx, &xa)); /* FD without OFLAGS (rdma-core's rule) */
	cr_assert_eq(errno, EINVAL);
}
