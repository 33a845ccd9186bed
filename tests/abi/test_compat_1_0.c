/* SPDX-License-Identifier: BSD-3-Clause
 * The IBVERBS_1.0 ABI of droce's drop-in libibverbs.so.1, used as a program
 * linked against libibverbs 1.0 uses it: the library is dlopen()ed (this
 * program links no verbs library), every call is found by dlvsym() at its
 * 1.0 version, the objects are the 1.0 structures (declared here as such a
 * program's header had them), and the data path goes through the 1.0
 * context's ops table as the 1.0 inline functions did.  Over the embedded
 * loopback pair: RC SEND / WRITE with data checked, bad_wr translation,
 * completion channel events, an SRQ and its limit event, a UD SEND through
 * a 1.0 address handle.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

/* ---- the 1.0 header's structures ---- */

struct dev10 {
	void *obsolete_sysfs_dev, *obsolete_sysfs_ibdev, *driver;
	struct _ibv_device_ops ops;
};
struct ctx10;
struct cq10 {
	struct ctx10 *context;
	void *cq_context;
	uint32_t handle;
	int cqe;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t comp_events_completed, async_events_completed;
};
struct pd10 {
	struct ctx10 *context;
	uint32_t handle;
};
struct mr10 {
	struct ctx10 *context;
	struct pd10 *pd;
	uint32_t handle, lkey, rkey;
};
struct srq10 {
	struct ctx10 *context;
	void *srq_context;
	struct pd10 *pd;
	uint32_t handle;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
};
struct ah10 {
	struct ctx10 *context;
	struct pd10 *pd;
	uint32_t handle;
};
struct qp10 {
	struct ctx10 *context;
	void *qp_context;
	struct pd10 *pd;
	struct cq10 *send_cq, *recv_cq;
	struct srq10 *srq;
	uint32_t handle, qp_num;
	enum ibv_qp_state state;
	enum ibv_qp_type qp_type;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
};
struct qp_init10 {
	void *qp_context;
	struct cq10 *send_cq, *recv_cq;
	struct srq10 *srq;
	struct ibv_qp_cap cap;
	enum ibv_qp_type qp_type;
	int sq_sig_all;
};
struct send_wr10 {
	struct send_wr10 *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
	enum ibv_wr_opcode opcode;
	int send_flags;
	uint32_t imm_data;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr, compare_add, swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct ah10 *ah;
			uint32_t remote_qpn, remote_qkey;
		} ud;
	} wr;
};
struct recv_wr10 {
	struct recv_wr10 *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
};
struct ops10 {
	void *query_device, *query_port, *alloc_pd, *dealloc_pd, *reg_mr, *dereg_mr, *create_cq;
	int (*poll_cq)(struct cq10 *cq, int n, struct ibv_wc *wc);
	int (*req_notify_cq)(struct cq10 *cq, int solicited_only);
	void *cq_event, *resize_cq, *destroy_cq, *create_srq, *modify_srq, *query_srq, *destroy_srq;
	int (*post_srq_recv)(struct srq10 *srq, struct recv_wr10 *wr, struct recv_wr10 **bad);
	void *create_qp, *query_qp, *modify_qp, *destroy_qp;
	int (*post_send)(struct qp10 *qp, struct send_wr10 *wr, struct send_wr10 **bad);
	int (*post_recv)(struct qp10 *qp, struct recv_wr10 *wr, struct recv_wr10 **bad);
	void *create_ah, *destroy_ah, *attach_mcast, *detach_mcast;
};
struct ctx10 {
	struct dev10 *device;
	struct ops10 ops;
	int cmd_fd, async_fd, num_comp_vectors;
};

/* ---- the 1.0 entry points, found as a 1.0 program's loader finds them ---- */

static struct {
	struct dev10 **(*get_device_list)(int *);
	void (*free_device_list)(struct dev10 **);
	const char *(*get_device_name)(struct dev10 *);
	__be64 (*get_device_guid)(struct dev10 *);
	struct ctx10 *(*open_device)(struct dev10 *);
	int (*close_device)(struct ctx10 *);
	int (*query_device)(struct ctx10 *, struct ibv_device_attr *);
	int (*query_port)(struct ctx10 *, uint8_t, struct ibv_port_attr *);
	int (*query_gid)(struct ctx10 *, uint8_t, int, union ibv_gid *);
	int (*query_pkey)(struct ctx10 *, uint8_t, int, __be16 *);
	struct pd10 *(*alloc_pd)(struct ctx10 *);
	int (*dealloc_pd)(struct pd10 *);
	struct mr10 *(*reg_mr)(struct pd10 *, void *, size_t, int);
	int (*dereg_mr)(struct mr10 *);
	struct cq10 *(*create_cq)(struct ctx10 *, int, void *, struct ibv_comp_channel *, int);
	int (*resize_cq)(struct cq10 *, int);
	int (*destroy_cq)(struct cq10 *);
	int (*get_cq_event)(struct ibv_comp_channel *, struct cq10 **, void **);
	void (*ack_cq_events)(struct cq10 *, unsigned int);
	struct srq10 *(*create_srq)(struct pd10 *, struct ibv_srq_init_attr *);
	int (*modify_srq)(struct srq10 *, struct ibv_srq_attr *, int);
	int (*query_srq)(struct srq10 *, struct ibv_srq_attr *);
	int (*destroy_srq)(struct srq10 *);
	struct qp10 *(*create_qp)(struct pd10 *, struct qp_init10 *);
	int (*query_qp)(struct qp10 *, struct ibv_qp_attr *, int, struct qp_init10 *);
	int (*modify_qp)(struct qp10 *, struct ibv_qp_attr *, int);
	int (*destroy_qp)(struct qp10 *);
	struct ah10 *(*create_ah)(struct pd10 *, struct ibv_ah_attr *);
	int (*destroy_ah)(struct ah10 *);
	int (*get_async_event)(struct ctx10 *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	int (*attach_mcast)(struct qp10 *, union ibv_gid *, uint16_t);
	/* IBVERBS_1.0's default names, the same in both ABIs */
	struct ibv_comp_channel *(*create_comp_channel)(struct ctx10 *);
	int (*destroy_comp_channel)(struct ibv_comp_channel *);
	/* IBVERBS_1.1's compat-only name */
	void (*register_driver)(const char *, void *);
} v;

static void *lib;

static void *
sym(const char *name, const char *version)
{
	void *p = dlvsym(lib, name, version);

	cr_assert_not_null(p, "%s@%s: %s", name, version, dlerror());
	return p;
}

static void
load(void)
{
	unsetenv("DROCE_CONFIG"); /* the embedded loopback pair */
	lib = dlopen(COMPAT_LIBIBVERBS, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "%s: %s", COMPAT_LIBIBVERBS, dlerror());
#define V10(f) *(void **)&v.f = sym("ibv_" #f, "IBVERBS_1.0")
	V10(get_device_list);
	V10(free_device_list);
	V10(get_device_name);
	V10(get_device_guid);
	V10(open_device);
	V10(close_device);
	V10(query_device);
	V10(query_port);
	V10(query_gid);
	V10(query_pkey);
	V10(alloc_pd);
	V10(dealloc_pd);
	V10(reg_mr);
	V10(dereg_mr);
	V10(create_cq);
	V10(resize_cq);
	V10(destroy_cq);
	V10(get_cq_event);
	V10(ack_cq_events);
	V10(create_srq);
	V10(modify_srq);
	V10(query_srq);
	V10(destroy_srq);
	V10(create_qp);
	V10(query_qp);
	V10(modify_qp);
	V10(destroy_qp);
	V10(create_ah);
	V10(destroy_ah);
	V10(get_async_event);
	V10(ack_async_event);
	V10(attach_mcast);
	V10(create_comp_channel);
	V10(destroy_comp_channel);
#undef V10
	*(void **)&v.register_driver = sym("ibv_register_driver", "IBVERBS_1.1");
}

TestSuite(abi_compat_1_0, .init = load, .timeout = 60);

/* ---- one end: a device, PD, MR, CQ, RC QP, all 1.0 objects ---- */

struct end {
	struct ctx10 *ctx;
	struct pd10 *pd;
	struct mr10 *mr;
	struct cq10 *cq;
	struct qp10 *qp;
	uint8_t *buf;
	union ibv_gid gid;
	int tag; /* the CQ's user context points here */
};

static struct dev10 **devs;

static void
open_end(struct end *e, int dev, struct ibv_comp_channel *ch, struct srq10 *srq)
{
	struct qp_init10 ia = { .qp_type = IBV_QPT_RC,
				.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
					 .max_recv_sge = 1 } };

	if (devs == NULL) {
		int n = -1;

		devs = v.get_device_list(&n);
		cr_assert_not_null(devs);
		cr_assert_eq(n, 2, "the loopback pair");
		cr_assert_null(devs[2], "NULL-terminated");
	}
	e->ctx = v.open_device(devs[dev]);
	cr_assert_not_null(e->ctx, "%s", strerror(errno));
	cr_assert_eq(e->ctx->device, devs[dev]);
	cr_assert_geq(e->ctx->async_fd, 0);
	cr_assert_not_null(e->ctx->ops.poll_cq);
	cr_assert_not_null(e->ctx->ops.post_send);
	cr_assert_eq(v.query_gid(e->ctx, 1, 0, &e->gid), 0);
	e->pd = v.alloc_pd(e->ctx);
	cr_assert_not_null(e->pd);
	cr_assert_eq(e->pd->context, e->ctx);
	e->buf = calloc(1, 65536);
	e->mr = v.reg_mr(e->pd, e->buf, 65536,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(e->mr);
	cr_assert_eq(e->mr->pd, e->pd);
	cr_assert_neq(e->mr->rkey, 0);
	e->cq = v.create_cq(e->ctx, 32, &e->tag, ch, 0);
	cr_assert_not_null(e->cq);
	cr_assert_eq(e->cq->context, e->ctx);
	cr_assert_eq(e->cq->cq_context, &e->tag);
	cr_assert_geq(e->cq->cqe, 32);
	ia.send_cq = ia.recv_cq = e->cq;
	ia.srq = srq;
	ia.qp_context = e;
	e->qp = v.create_qp(e->pd, &ia);
	cr_assert_not_null(e->qp, "%s", strerror(errno));
	cr_assert_eq(e->qp->context, e->ctx);
	cr_assert_eq(e->qp->qp_context, e);
	cr_assert_eq(e->qp->send_cq, e->cq);
	cr_assert_eq(e->qp->srq, srq);
	cr_assert_neq(e->qp->qp_num, 0);
	cr_assert_geq(ia.cap.max_send_wr, 16, "the caps granted come back");
}

static void
connect(struct end *e, const struct end *peer)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	cr_assert_eq(v.modify_qp(e->qp, &a,
				 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		     0);
	cr_assert_eq(e->qp->state, IBV_QPS_INIT);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 0x10;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	cr_assert_eq(v.modify_qp(e->qp, &a,
				 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_MIN_RNR_TIMER),
		     0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x10;
	a.timeout = 10;
	a.retry_cnt = 3;
	a.rnr_retry = 3;
	a.max_rd_atomic = 1;
	cr_assert_eq(v.modify_qp(e->qp, &a,
				 IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
		     0);
	cr_assert_eq(e->qp->state, IBV_QPS_RTS);
}

/* Polls @e's CQ through the 1.0 ops table until one completion (5 s). */
static struct ibv_wc
wait_wc(struct end *e)
{
	struct ibv_wc wc;

	for (int i = 0; i < 50000; i++) {
		int n = e->ctx->ops.poll_cq(e->cq, 1, &wc);

		cr_assert_geq(n, 0);
		if (n == 1)
			return wc;
		usleep(100);
	}
	cr_assert_fail("no completion");
	return wc;
}

static int
post_recv10(struct end *e, uint64_t id, void *dst, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)dst, .length = len, .lkey = e->mr->lkey };
	struct recv_wr10 w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad = NULL;

	return e->ctx->ops.post_recv(e->qp, &w, &bad);
}

static void
teardown(struct end *e)
{
	cr_assert_eq(v.destroy_qp(e->qp), 0);
	cr_assert_eq(v.destroy_cq(e->cq), 0);
	cr_assert_eq(v.dereg_mr(e->mr), 0);
	cr_assert_eq(v.dealloc_pd(e->pd), 0);
	cr_assert_eq(v.close_device(e->ctx), 0);
	free(e->buf);
}

Test(abi_compat_1_0, devices_and_queries)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct end a;
	__be16 pkey;
	int n;

	devs = v.get_device_list(&n);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(v.get_device_name(devs[0]), "droce0");
	cr_assert_str_eq(v.get_device_name(devs[1]), "droce1");
	cr_assert_neq(v.get_device_guid(devs[0]), v.get_device_guid(devs[1]));
	open_end(&a, 0, NULL, NULL);
	cr_assert_eq(v.query_device(a.ctx, &da), 0);
	cr_assert_gt(da.max_qp, 0);
	memset(&pa, 0, sizeof(pa));
	cr_assert_eq(v.query_port(a.ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	cr_assert_eq(v.query_pkey(a.ctx, 1, 0, &pkey), 0);
	cr_assert_eq(pkey, htobe16(0xffff));
	cr_assert_eq(v.resize_cq(a.cq, 64), 0);
	cr_assert_geq(a.cq->cqe, 64, "the 1.0 CQ's cqe follows the resize");
	v.register_driver("old-usnic", NULL); /* nothing to register: no effect */
	teardown(&a);
	v.free_device_list(devs);
	devs = NULL;
}

Test(abi_compat_1_0, rc_send_write_and_bad_wr)
{
	struct end a, b;
	struct ibv_sge s;
	struct send_wr10 w, w2, *bad = NULL;
	struct recv_wr10 r1, r2, *rbad = NULL;
	struct ibv_sge rs1, rs2[2];
	struct ibv_qp_attr qa;
	struct qp_init10 qi;
	struct ibv_wc wc;

	open_end(&a, 0, NULL, NULL);
	open_end(&b, 1, NULL, NULL);
	connect(&a, &b);
	connect(&b, &a);
	cr_assert_eq(v.query_qp(a.qp, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS);
	cr_assert_eq(qi.send_cq, a.cq, "the 1.0 CQ, not the library's");
	cr_assert_eq(qi.qp_context, &a);
	cr_assert_null(qi.srq);

	/* SEND */
	for (int i = 0; i < 100; i++)
		a.buf[i] = (uint8_t)(i * 3);
	cr_assert_eq(post_recv10(&b, 77, b.buf + 1000, 100), 0);
	s = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 100, .lkey = a.mr->lkey };
	w = (struct send_wr10){ .wr_id = 5, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED };
	cr_assert_eq(a.ctx->ops.post_send(a.qp, &w, &bad), 0);
	wc = wait_wc(&a);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 5);
	wc = wait_wc(&b);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 77);
	cr_assert_eq(wc.byte_len, 100);
	cr_assert_eq(wc.qp_num, b.qp->qp_num);
	cr_assert_arr_eq(b.buf + 1000, a.buf, 100);

	/* WRITE with immediate, two WRs in one list (the 1.0 rdma union) */
	for (int i = 0; i < 4096; i++)
		a.buf[8192 + i] = (uint8_t)(i ^ 0x5a);
	cr_assert_eq(post_recv10(&b, 78, b.buf, 16), 0);
	s = (struct ibv_sge){ .addr = (uintptr_t)a.buf + 8192, .length = 4096, .lkey = a.mr->lkey };
	w2 = (struct send_wr10){ .wr_id = 7, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(0xabcd),
				 .send_flags = IBV_SEND_SIGNALED };
	w2.wr.rdma.remote_addr = (uintptr_t)b.buf + 16384;
	w2.wr.rdma.rkey = b.mr->rkey;
	w = (struct send_wr10){ .wr_id = 6, .next = &w2, .sg_list = &s, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	w.wr.rdma.remote_addr = (uintptr_t)b.buf + 32768;
	w.wr.rdma.rkey = b.mr->rkey;
	cr_assert_eq(a.ctx->ops.post_send(a.qp, &w, &bad), 0);
	cr_assert_eq(wait_wc(&a).wr_id, 6);
	cr_assert_eq(wait_wc(&a).wr_id, 7);
	wc = wait_wc(&b);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.imm_data, htobe32(0xabcd));
	cr_assert_arr_eq(b.buf + 16384, a.buf + 8192, 4096);
	cr_assert_arr_eq(b.buf + 32768, a.buf + 8192, 4096);

	/* a bad receive WR: bad_wr names the 1.0 WR (the second) */
	rs1 = (struct ibv_sge){ .addr = (uintptr_t)b.buf, .length = 8, .lkey = b.mr->lkey };
	rs2[0] = rs2[1] = rs1;
	r2 = (struct recv_wr10){ .wr_id = 2, .sg_list = rs2, .num_sge = 2 }; /* max_recv_sge 1 */
	r1 = (struct recv_wr10){ .wr_id = 1, .next = &r2, .sg_list = &rs1, .num_sge = 1 };
	cr_assert_neq(b.ctx->ops.post_recv(b.qp, &r1, &rbad), 0);
	cr_assert_eq(rbad, &r2);
	/* and a bad send WR the same way */
	w2 = (struct send_wr10){ .wr_id = 9, .sg_list = &s, .num_sge = 1,
				 .opcode = (enum ibv_wr_opcode)77 };
	w = (struct send_wr10){ .wr_id = 8, .next = &w2, .sg_list = &s, .num_sge = 1,
				.opcode = IBV_WR_SEND };
	bad = NULL;
	cr_assert_eq(post_recv10(&b, 80, b.buf, 4096), 0);
	cr_assert_neq(a.ctx->ops.post_send(a.qp, &w, &bad), 0);
	cr_assert_eq(bad, &w2);
	teardown(&a);
	teardown(&b);
}

struct async_take {
	struct ctx10 *ctx;
	struct ibv_async_event ev;
};

Test(abi_compat_1_0, channel_events_srq_and_its_limit_event)
{
	struct ibv_comp_channel *ch;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq_attr q;
	struct srq10 *srq;
	struct end a, b;
	struct ibv_sge s;
	struct send_wr10 w, *bad;
	struct recv_wr10 r[4], *rbad;
	struct ibv_sge rs[4];
	struct cq10 *ev_cq;
	void *ev_ctx;
	struct ibv_async_event ae;
	struct pollfd pfd;
	int tag = 0;

	open_end(&a, 0, NULL, NULL);
	{
		/* an SRQ on its own: the 1.0 fields, and its PD is busy meanwhile */
		struct ctx10 *c = v.open_device(devs[1]);
		struct pd10 *pd = v.alloc_pd(c);

		sa.srq_context = &tag;
		srq = v.create_srq(pd, &sa);
		cr_assert_not_null(srq);
		cr_assert_eq(srq->srq_context, &tag);
		cr_assert_eq(srq->pd, pd);
		cr_assert_eq(srq->context, c);
		cr_assert_eq(sa.srq_context, &tag, "the caller's attr is left as it was");
		cr_assert_eq(v.dealloc_pd(pd), EBUSY);
		cr_assert_eq(v.destroy_srq(srq), 0);
		cr_assert_eq(v.dealloc_pd(pd), 0);
		cr_assert_eq(v.close_device(c), 0);
	}
	/* b: its QP receives from an SRQ, its CQ reports to the channel */
	b.ctx = v.open_device(devs[1]);
	cr_assert_not_null(b.ctx);
	/* the 1.0 program gives its own context to the name both ABIs share */
	ch = v.create_comp_channel(b.ctx);
	cr_assert_not_null(ch, "%s", strerror(errno));
	b.pd = v.alloc_pd(b.ctx);
	b.buf = calloc(1, 65536);
	b.mr = v.reg_mr(b.pd, b.buf, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(v.query_gid(b.ctx, 1, 0, &b.gid), 0);
	srq = v.create_srq(b.pd, &sa);
	cr_assert_not_null(srq);
	b.cq = v.create_cq(b.ctx, 32, &b.tag, ch, 0);
	cr_assert_not_null(b.cq);
	{
		struct qp_init10 ia = { .qp_type = IBV_QPT_RC, .send_cq = b.cq, .recv_cq = b.cq,
					.srq = srq, .qp_context = &b,
					.cap = { .max_send_wr = 4, .max_send_sge = 1 } };

		b.qp = v.create_qp(b.pd, &ia);
		cr_assert_not_null(b.qp, "%s", strerror(errno));
	}
	connect(&a, &b);
	connect(&b, &a);

	/* four receives on the SRQ through the 1.0 ops, limit 4: the first
	 * message takes one and the SRQ reports the limit */
	for (int i = 0; i < 4; i++) {
		rs[i] = (struct ibv_sge){ .addr = (uintptr_t)b.buf + i * 256, .length = 256,
					  .lkey = b.mr->lkey };
		r[i] = (struct recv_wr10){ .wr_id = 40 + i, .next = i < 3 ? &r[i + 1] : NULL,
					   .sg_list = &rs[i], .num_sge = 1 };
	}
	cr_assert_eq(b.ctx->ops.post_srq_recv(srq, r, &rbad), 0);
	q.srq_limit = 4;
	cr_assert_eq(v.modify_srq(srq, &q, IBV_SRQ_LIMIT), 0);
	memset(&q, 0, sizeof(q));
	cr_assert_eq(v.query_srq(srq, &q), 0);
	cr_assert_eq(q.srq_limit, 4);

	cr_assert_eq(b.ctx->ops.req_notify_cq(b.cq, 0), 0);
	strcpy((char *)a.buf, "hello, 2006");
	s = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 12, .lkey = a.mr->lkey };
	w = (struct send_wr10){ .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED };
	cr_assert_eq(a.ctx->ops.post_send(a.qp, &w, &bad), 0);
	cr_assert_eq(wait_wc(&a).status, IBV_WC_SUCCESS);
	/* the completion event names the 1.0 CQ and its user context */
	cr_assert_eq(v.get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	cr_assert_eq(ev_cq, b.cq);
	cr_assert_eq(ev_ctx, &b.tag);
	v.ack_cq_events(ev_cq, 1);
	{
		struct ibv_wc wc = wait_wc(&b);

		cr_assert_eq(wc.wr_id, 40);
		cr_assert_str_eq((char *)b.buf, "hello, 2006");
	}
	/* the SRQ limit event names the 1.0 SRQ */
	pfd = (struct pollfd){ .fd = b.ctx->async_fd, .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "an async event");
	cr_assert_eq(v.get_async_event(b.ctx, &ae), 0);
	cr_assert_eq(ae.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	cr_assert_eq((void *)ae.element.srq, (void *)srq);
	v.ack_async_event(&ae);
	cr_assert_eq(srq->events_completed, 0, "the 1.0 SRQ's counter is the program's");

	cr_assert_eq(v.destroy_qp(b.qp), 0);
	cr_assert_eq(v.destroy_srq(srq), 0);
	cr_assert_eq(v.destroy_cq(b.cq), 0);
	cr_assert_eq(v.dereg_mr(b.mr), 0);
	cr_assert_eq(v.dealloc_pd(b.pd), 0);
	cr_assert_eq(v.close_device(b.ctx), 0);
	cr_assert_eq(v.destroy_comp_channel(ch), 0);
	teardown(&a);
}

Test(abi_compat_1_0, ud_send_through_a_1_0_address_handle)
{
	struct end a, b;
	struct qp_init10 ia = { .qp_type = IBV_QPT_UD,
				.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					 .max_recv_sge = 1 } };
	struct qp10 *ua, *ub;
	struct ibv_qp_attr at;
	struct ibv_ah_attr aha = { .is_global = 1, .port_num = 1 };
	struct ah10 *ah;
	struct ibv_sge s;
	struct send_wr10 w, *bad;
	struct ibv_wc wc;

	open_end(&a, 0, NULL, NULL);
	open_end(&b, 1, NULL, NULL);
	ia.send_cq = ia.recv_cq = a.cq;
	ua = v.create_qp(a.pd, &ia);
	ia.send_cq = ia.recv_cq = b.cq;
	ub = v.create_qp(b.pd, &ia);
	cr_assert(ua && ub);
	cr_assert_eq(ua->qp_type, IBV_QPT_UD);
	for (int k = 0; k < 2; k++) {
		struct qp10 *q = k ? ub : ua;

		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_INIT;
		at.port_num = 1;
		at.qkey = 0x1234;
		cr_assert_eq(v.modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							 IBV_QP_QKEY),
			     0);
		at.qp_state = IBV_QPS_RTR;
		cr_assert_eq(v.modify_qp(q, &at, IBV_QP_STATE), 0);
		at.qp_state = IBV_QPS_RTS;
		at.sq_psn = 1;
		cr_assert_eq(v.modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	}
	aha.grh.dgid = b.gid;
	aha.grh.hop_limit = 64;
	ah = v.create_ah(a.pd, &aha);
	cr_assert_not_null(ah, "%s", strerror(errno));
	cr_assert_eq(ah->pd, a.pd);
	{
		struct ibv_sge rs = { .addr = (uintptr_t)b.buf, .length = 40 + 64, .lkey = b.mr->lkey };
		struct recv_wr10 r = { .wr_id = 3, .sg_list = &rs, .num_sge = 1 }, *rbad;

		cr_assert_eq(b.ctx->ops.post_recv(ub, &r, &rbad), 0);
	}
	memcpy(a.buf, "datagram", 9);
	s = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 9, .lkey = a.mr->lkey };
	w = (struct send_wr10){ .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED };
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = ub->qp_num;
	w.wr.ud.remote_qkey = 0x1234;
	cr_assert_eq(a.ctx->ops.post_send(ua, &w, &bad), 0);
	cr_assert_eq(wait_wc(&a).status, IBV_WC_SUCCESS);
	wc = wait_wc(&b);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.src_qp, ua->qp_num);
	cr_assert_str_eq((char *)b.buf + 40, "datagram", "after the 40-byte GRH");
	cr_assert_eq(v.destroy_ah(ah), 0);
	cr_assert_eq(v.destroy_qp(ua), 0);
	cr_assert_eq(v.destroy_qp(ub), 0);
	teardown(&a);
	teardown(&b);
}
