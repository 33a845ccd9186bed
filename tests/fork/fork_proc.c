/* SPDX-License-Identifier: BSD-3-Clause
 * fork_proc: verbs in processes forked after droce started (issue 22).
 * Over 1,200 lines because each mode is a whole scenario with the parent's
 * and every child's side written out.  The
 * process opens droce0 (which starts droce), then forks; the children's
 * verbs are served by this process's droce (verbs_api/fork.h).  By MODE:
 *
 *   parent-child  an RC QP of the parent and one of a child on droce0:
 *                 parent SEND -> child (the child waits with
 *                 ibv_get_cq_event), child RDMA WRITE and READ on the
 *                 parent's MR, parent RDMA WRITE into the child's MR (a
 *                 heap buffer not page-aligned); bytes checked in both
 *                 memories, completion statuses and lengths checked
 *   two-children  two children reach each other on the parent's port:
 *                 an RC pair (SEND, RDMA WRITE) and a UD pair (a datagram
 *                 with its GRH; one to a multicast group the other child's
 *                 QP attached), each child checking what it received
 *   child-dies    a child with a UD QP receives one datagram from the
 *                 parent, then kills itself (SIGKILL) leaving everything;
 *                 the parent's droce destroys the child's objects: a
 *                 datagram to the dead QPN is dropped as drop_no_qp
 *   cm-children   rdma_cm in two children: one listens on the parent's
 *                 port (198.18.0.1), the other resolves, connects and
 *                 exchanges a SEND each way with rdma_post_send / recv and
 *                 rdma_get_send_comp / recv_comp (completion events), then
 *                 an RDMA WRITE into the listener's memory; disconnect; also
 *                 a rejected connect with its private data
 *   bad-requests  a child writes malformed requests straight on its socket
 *                 to the parent (short, unknown op, bad and stale handles,
 *                 handles of the wrong kind, payloads shorter than they
 *                 say, MR pieces that do not add up, descriptors nobody
 *                 asked for): each answered with its errno, the parent's
 *                 droce unharmed, the child's verbs still served after
 *   bad-wr        in a child, the parent's checks with the child's errno
 *                 and bad_wr: a send on a QP in RESET fails; a receive list
 *                 whose second WR has a negative SGE count is EINVAL with
 *                 bad_wr at it (the first posted, then flushed by ERR); too
 *                 many SGEs; a CQ of another context; cqe 0;
 *                 ibv_get_async_event on a non-blocking fd with nothing there
 *
 * Exit 0 when every check passed; each failure prints "FAIL: what" and
 * the process exits non-zero.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <arpa/inet.h>

#include "droce/stats.h"
#include "verbs_api/fork.h"

static const char *who = "parent";
static int failures;

#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s FAIL (%s:%d): ", who, __FILE__, __LINE__);    \
			fprintf(stderr, __VA_ARGS__);                                     \
			fprintf(stderr, "\n");                                            \
			failures++;                                                       \
		}                                                                         \
	} while (0)

static void die(void);

#define REQUIRE(cond, ...)                                                                \
	do {                                                                              \
		if (!(cond)) {                                                            \
			CHECK(cond, __VA_ARGS__);                                         \
			die();                                                            \
		}                                                                         \
	} while (0)

/* A failed REQUIRE: a child ends as child_exit() explains. */
static void
die(void)
{
	fflush(stdout);
	fflush(stderr);
	if (strcmp(who, "parent") != 0)
		_exit(10);
	exit(10);
}

/* ---- messages between the processes (pipes) ---- */

struct info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct link {
	int rd, wr;
};

static void
send_msg(struct link *l, const void *m, size_t n)
{
	REQUIRE(write(l->wr, m, n) == (ssize_t)n, "pipe write: %s", strerror(errno));
}

static void
recv_msg(struct link *l, void *m, size_t n)
{
	struct pollfd p = { .fd = l->rd, .events = POLLIN };
	size_t got = 0;

	while (got < n) {
		ssize_t r;

		REQUIRE(poll(&p, 1, 20000) == 1, "nothing from the other process in 20 s");
		r = read(l->rd, (char *)m + got, n - got);
		REQUIRE(r > 0, "pipe read: %s", r < 0 ? strerror(errno) : "closed");
		got += (size_t)r;
	}
}

static void
send_word(struct link *l, const char *w)
{
	char b[16] = { 0 };

	snprintf(b, sizeof(b), "%s", w);
	send_msg(l, b, sizeof(b));
}

static void
expect_word(struct link *l, const char *w)
{
	char b[16];

	recv_msg(l, b, sizeof(b));
	REQUIRE(strncmp(b, w, sizeof(b)) == 0, "expected '%s', got '%.16s'", w, b);
}

/* two pipes: a's end and b's end */
static void
link_pair(struct link *a, struct link *b)
{
	int p1[2], p2[2];

	REQUIRE(pipe(p1) == 0 && pipe(p2) == 0, "pipe");
	a->rd = p1[0];
	b->wr = p1[1];
	b->rd = p2[0];
	a->wr = p2[1];
}

/* ---- one side's verbs objects ---- */

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	void *alloc;
};

static struct ibv_context *
open_dev0(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c;

	REQUIRE(list != NULL && list[0] != NULL, "no device: %s", strerror(errno));
	c = ibv_open_device(list[0]);
	REQUIRE(c != NULL, "ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);
	return c;
}

/* @odd: the buffer is a heap allocation at an odd offset (pages it shares
 * with other heap data become shared with the parent) */
static void
side_up(struct side *s, enum ibv_qp_type t, bool channel, size_t len, bool odd)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = t,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};

	memset(s, 0, sizeof(*s));
	s->ctx = open_dev0();
	s->pd = ibv_alloc_pd(s->ctx);
	REQUIRE(s->pd != NULL, "ibv_alloc_pd: %s", strerror(errno));
	if (channel) {
		s->ch = ibv_create_comp_channel(s->ctx);
		REQUIRE(s->ch != NULL, "ibv_create_comp_channel: %s", strerror(errno));
	}
	s->cq = ibv_create_cq(s->ctx, 32, s, s->ch, 0);
	REQUIRE(s->cq != NULL, "ibv_create_cq: %s", strerror(errno));
	if (odd) {
		s->alloc = malloc(len + 64);
		s->buf = (uint8_t *)s->alloc + 13;
	} else {
		REQUIRE(posix_memalign(&s->alloc, 4096, len) == 0, "posix_memalign");
		s->buf = s->alloc;
	}
	memset(s->buf, 0, len);
	s->len = len;
	s->mr = ibv_reg_mr(s->pd, s->buf, len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(s->mr != NULL, "ibv_reg_mr: %s", strerror(errno));
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	REQUIRE(s->qp != NULL, "ibv_create_qp: %s", strerror(errno));
	CHECK(ia.cap.max_send_wr >= 16 && ia.cap.max_recv_wr >= 16, "caps returned %u/%u",
	      ia.cap.max_send_wr, ia.cap.max_recv_wr);
}

static void
side_down(struct side *s)
{
	CHECK(ibv_destroy_qp(s->qp) == 0, "ibv_destroy_qp");
	CHECK(ibv_dereg_mr(s->mr) == 0, "ibv_dereg_mr");
	CHECK(ibv_destroy_cq(s->cq) == 0, "ibv_destroy_cq");
	if (s->ch)
		CHECK(ibv_destroy_comp_channel(s->ch) == 0, "ibv_destroy_comp_channel");
	CHECK(ibv_dealloc_pd(s->pd) == 0, "ibv_dealloc_pd");
	CHECK(ibv_close_device(s->ctx) == 0, "ibv_close_device");
	free(s->alloc);
}

static struct info
side_info(struct side *s)
{
	struct info i = { .qpn = s->qp->qp_num, .rkey = s->mr->rkey, .addr = (uintptr_t)s->buf };

	REQUIRE(ibv_query_gid(s->ctx, 1, 0, &i.gid) == 0, "ibv_query_gid");
	return i;
}

static void
rc_connect(struct side *s, const struct info *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	REQUIRE(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS) == 0, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = r->qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = r->gid;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	REQUIRE(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
		"RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	REQUIRE(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0, "RTS");
	CHECK(s->qp->state == IBV_QPS_RTS, "qp->state %d after RTS", s->qp->state);
	CHECK(ibv_query_qp(s->qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi) == 0 &&
	      qa.qp_state == IBV_QPS_RTS && qa.dest_qp_num == r->qpn && qi.send_cq == s->cq,
	      "ibv_query_qp: state %d dest %u", qa.qp_state, qa.dest_qp_num);
}

static void
ud_up(struct side *s)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1234 };

	REQUIRE(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0,
		"UD INIT");
	a.qp_state = IBV_QPS_RTR;
	REQUIRE(ibv_modify_qp(s->qp, &a, IBV_QP_STATE) == 0, "UD RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	REQUIRE(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0, "UD RTS");
}

static uint8_t
pat(int seed, size_t i)
{
	return (uint8_t)(seed + i * 7);
}

static void
fill(uint8_t *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

static bool
same(const uint8_t *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(seed, i))
			return false;
	return true;
}

/* One completion: by ibv_get_cq_event when the side has a channel (armed,
 * polled again, then waited for), else by polling; 10 s at most. */
static struct ibv_wc
wait_wc(struct side *s)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(s->cq, 1, &wc);
		REQUIRE(n >= 0, "ibv_poll_cq %d", n);
		if (n == 1)
			return wc;
		if (s->ch != NULL) {
			struct pollfd p = { .fd = s->ch->fd, .events = POLLIN };
			struct ibv_cq *ecq;
			void *ectx;

			REQUIRE(ibv_req_notify_cq(s->cq, 0) == 0, "ibv_req_notify_cq");
			n = ibv_poll_cq(s->cq, 1, &wc);
			if (n == 1)
				return wc;
			REQUIRE(poll(&p, 1, 10000) == 1, "no completion event in 10 s");
			REQUIRE(ibv_get_cq_event(s->ch, &ecq, &ectx) == 0, "ibv_get_cq_event: %s",
				strerror(errno));
			CHECK(ecq == s->cq && ectx == s, "the event names another CQ");
			ibv_ack_cq_events(ecq, 1);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		REQUIRE(t.tv_sec - t0.tv_sec < 10, "no completion in 10 s");
	}
}

static void
expect_wc(struct side *s, enum ibv_wc_opcode op, uint32_t len, const char *what)
{
	struct ibv_wc wc = wait_wc(s);

	CHECK(wc.status == IBV_WC_SUCCESS, "%s: status %s", what, ibv_wc_status_str(wc.status));
	CHECK(wc.opcode == op, "%s: opcode %d, not %d", what, wc.opcode, op);
	if (op == IBV_WC_RECV || op == IBV_WC_RDMA_READ)
		CHECK(wc.byte_len == len, "%s: byte_len %u, not %u", what, wc.byte_len, len);
	CHECK(wc.qp_num == s->qp->qp_num, "%s: qp_num %u", what, wc.qp_num);
}

static void
post_recv(struct side *s, size_t off, uint32_t len)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 }, *bad;

	REQUIRE(ibv_post_recv(s->qp, &wr, &bad) == 0, "ibv_post_recv");
}

static void
post_op(struct side *s, enum ibv_wr_opcode op, size_t off, uint32_t len, uint64_t raddr,
	uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	REQUIRE(ibv_post_send(s->qp, &wr, &bad) == 0, "ibv_post_send op %d", op);
}

/*
 * A child's end: _exit, not exit.  Under ASan, LeakSanitizer's check at exit
 * locks every allocator size class, and the one a thread of the parent held
 * at fork() stays locked in the child for ever (GCC 12's sanitizers take no
 * fork handler): the child would hang.  Leaks are checked in the parent.
 */
static void
child_exit(void)
{
	fflush(stdout);
	fflush(stderr);
	_exit(failures ? 1 : 0);
}

static int
reap(pid_t pid, const char *name)
{
	int st;

	REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the %s ended with status 0x%x", name, st);
	return st;
}

/* ---- parent-child ---- */

static void
pc_child(struct link *l)
{
	struct side b;
	struct info ia, ib;

	who = "child";
	side_up(&b, IBV_QPT_RC, true, 3000, true);
	ib = side_info(&b);
	send_msg(l, &ib, sizeof(ib));
	recv_msg(l, &ia, sizeof(ia));
	rc_connect(&b, &ia);
	post_recv(&b, 0, 512);
	send_word(l, "ready");

	expect_wc(&b, IBV_WC_RECV, 256, "child RECV");
	CHECK(same(b.buf, 256, 1), "the SEND's bytes in the child's memory");

	fill(b.buf + 512, 512, 2);
	post_op(&b, IBV_WR_RDMA_WRITE, 512, 512, ia.addr + 1024, ia.rkey);
	expect_wc(&b, IBV_WC_RDMA_WRITE, 512, "child WRITE");
	send_word(l, "written");

	expect_word(l, "read-it");
	post_op(&b, IBV_WR_RDMA_READ, 1024, 512, ia.addr + 2048, ia.rkey);
	expect_wc(&b, IBV_WC_RDMA_READ, 512, "child READ");
	CHECK(same(b.buf + 1024, 512, 3), "the READ's bytes in the child's memory");
	send_word(l, "read-done");

	expect_word(l, "parent-wrote");
	CHECK(same(b.buf + 2000, 200, 4), "the parent's WRITE in the child's memory");
	side_down(&b);
	child_exit();
}

static int
parent_child(void)
{
	struct link lp, lc;
	struct side a;
	struct info ia, ib;
	pid_t pid;

	side_up(&a, IBV_QPT_RC, false, 4096 * 2, false);
	link_pair(&lp, &lc);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0)
		pc_child(&lc);
	ia = side_info(&a);
	recv_msg(&lp, &ib, sizeof(ib));
	send_msg(&lp, &ia, sizeof(ia));
	rc_connect(&a, &ib);
	CHECK(ib.qpn != ia.qpn, "the child's QPN is the parent's");
	expect_word(&lp, "ready");

	fill(a.buf, 256, 1);
	post_op(&a, IBV_WR_SEND, 0, 256, 0, 0);
	expect_wc(&a, IBV_WC_SEND, 256, "parent SEND");

	expect_word(&lp, "written");
	CHECK(same(a.buf + 1024, 512, 2), "the child's WRITE in the parent's memory");
	fill(a.buf + 2048, 512, 3);
	send_word(&lp, "read-it");
	expect_word(&lp, "read-done");

	fill(a.buf + 3000, 200, 4);
	post_op(&a, IBV_WR_RDMA_WRITE, 3000, 200, ib.addr + 2000, ib.rkey);
	expect_wc(&a, IBV_WC_RDMA_WRITE, 200, "parent WRITE");
	send_word(&lp, "parent-wrote");
	reap(pid, "child");
	side_down(&a);
	return failures ? 1 : 0;
}

/* ---- two-children ---- */

static void
ud_send(struct side *s, const struct info *r, size_t off, uint32_t len)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_ah *ah;

	aa.grh.dgid = r->gid;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(s->pd, &aa);
	REQUIRE(ah != NULL, "ibv_create_ah: %s", strerror(errno));
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = r->qpn;
	wr.wr.ud.remote_qkey = 0x1234;
	REQUIRE(ibv_post_send(s->qp, &wr, &bad) == 0, "UD ibv_post_send");
	expect_wc(s, IBV_WC_SEND, len, "UD SEND");
	CHECK(ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
}

/* ::ffff:239.1.2.3, an IPv4 group's GID */
static const union ibv_gid mgid = { .raw = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3 } };

static void
tc_child(struct link *l, bool first)
{
	struct side rc, ud;
	struct info me, peer, ume, upeer;

	who = first ? "child-x" : "child-y";
	side_up(&rc, IBV_QPT_RC, !first, 8192, !first);
	side_up(&ud, IBV_QPT_UD, first, 4096, false);
	me = side_info(&rc);
	ume = side_info(&ud);
	send_msg(l, &me, sizeof(me));
	send_msg(l, &ume, sizeof(ume));
	recv_msg(l, &peer, sizeof(peer));
	recv_msg(l, &upeer, sizeof(upeer));
	CHECK(me.qpn != peer.qpn && ume.qpn != upeer.qpn, "the children share a QPN");
	rc_connect(&rc, &peer);
	ud_up(&ud);
	if (first) {
		expect_word(l, "ready");
		fill(rc.buf, 1000, 5);
		post_op(&rc, IBV_WR_SEND, 0, 1000, 0, 0);
		expect_wc(&rc, IBV_WC_SEND, 1000, "x SEND");
		expect_word(l, "written");
		CHECK(same(rc.buf + 4096, 3000, 6), "y's WRITE in x's memory");
		fill(ud.buf, 300, 7);
		ud_send(&ud, &upeer, 0, 300);
		expect_word(l, "ud-got");
		/* a datagram to the group y's QP attached (QPN 0xFFFFFF) */
		expect_word(l, "mc-ready");
		{
			struct info g = { .qpn = 0xFFFFFF, .gid = mgid };

			fill(ud.buf + 1024, 200, 9);
			ud_send(&ud, &g, 1024, 200);
		}
		expect_word(l, "mc-got");
	} else {
		post_recv(&rc, 0, 2048);
		post_recv(&ud, 0, 2048);
		send_word(l, "ready");
		expect_wc(&rc, IBV_WC_RECV, 1000, "y RECV");
		CHECK(same(rc.buf, 1000, 5), "x's SEND in y's memory");
		fill(rc.buf + 2048, 3000, 6);
		post_op(&rc, IBV_WR_RDMA_WRITE, 2048, 3000, peer.addr + 4096, peer.rkey);
		expect_wc(&rc, IBV_WC_RDMA_WRITE, 3000, "y WRITE");
		send_word(l, "written");
		expect_wc(&ud, IBV_WC_RECV, 300 + 40, "y UD RECV");
		CHECK(same(ud.buf + 40, 300, 7), "x's datagram in y's memory (after the GRH)");
		send_word(l, "ud-got");
		CHECK(ibv_attach_mcast(ud.qp, &mgid, 0) == 0, "ibv_attach_mcast in a child");
		post_recv(&ud, 2048, 1024);
		send_word(l, "mc-ready");
		expect_wc(&ud, IBV_WC_RECV, 40 + 200, "y multicast RECV");
		CHECK(same(ud.buf + 2048 + 40, 200, 9), "x's multicast datagram in y's memory");
		CHECK(ibv_detach_mcast(ud.qp, &mgid, 0) == 0, "ibv_detach_mcast in a child");
		CHECK(ibv_detach_mcast(ud.qp, &mgid, 0) == EINVAL, "a second detach: EINVAL");
		send_word(l, "mc-got");
	}
	side_down(&ud);
	side_down(&rc);
	child_exit();
}

static int
two_children(void)
{
	struct ibv_context *ctx = open_dev0(); /* droce starts here, in the parent */
	struct link lx, ly;
	pid_t x, y;

	link_pair(&lx, &ly);
	x = fork();
	REQUIRE(x >= 0, "fork");
	if (x == 0)
		tc_child(&lx, true);
	y = fork();
	REQUIRE(y >= 0, "fork");
	if (y == 0)
		tc_child(&ly, false);
	reap(x, "child x");
	reap(y, "child y");
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	return failures ? 1 : 0;
}

/* ---- child-dies ---- */

static uint64_t
drops_no_qp(void)
{
	struct droce_stat st[128];
	int n = droce_stats_engine(0, st, 128);

	REQUIRE(n > 0, "droce_stats_engine");
	return droce_stat_find(st, (unsigned int)(n < 128 ? n : 128), "drop_no_qp");
}

static int
child_dies(void)
{
	struct link lp, lc;
	struct side a;
	struct info ib;
	pid_t pid;
	uint64_t before;
	struct timespec t0, t;
	bool dropped = false;

	side_up(&a, IBV_QPT_UD, false, 4096, false);
	ud_up(&a);
	link_pair(&lp, &lc);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		struct side b;

		who = "child";
		side_up(&b, IBV_QPT_UD, true, 4096, true);
		ud_up(&b);
		post_recv(&b, 0, 2048);
		ib = side_info(&b);
		send_msg(&lc, &ib, sizeof(ib));
		expect_wc(&b, IBV_WC_RECV, 40 + 100, "child UD RECV");
		CHECK(same(b.buf + 40, 100, 8), "the parent's datagram in the child's memory");
		send_word(&lc, failures ? "bad" : "got");
		raise(SIGKILL); /* everything left to the parent's droce */
		exit(3);
	}
	recv_msg(&lp, &ib, sizeof(ib));
	fill(a.buf, 100, 8);
	ud_send(&a, &ib, 0, 100);
	expect_word(&lp, "got");
	{
		int st;

		REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid");
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the child ended with 0x%x", st);
	}
	/* the child's QP goes when the server sees the hangup */
	before = drops_no_qp();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ud_send(&a, &ib, 0, 100);
		usleep(10000);
		dropped = drops_no_qp() > before;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!dropped && t.tv_sec - t0.tv_sec < 10);
	CHECK(dropped, "datagrams to the dead child's QPN were not dropped as drop_no_qp in 10 s");
	side_down(&a);
	return failures ? 1 : 0;
}

/* ---- cm-children ---- */

static struct rdma_cm_event *
cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	REQUIRE(poll(&p, 1, 10000) == 1, "no rdma_cm event in 10 s (waiting for %s)", rdma_event_str(t));
	REQUIRE(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event: %s", strerror(errno));
	REQUIRE(ev->event == t, "event %s (status %d), not %s", rdma_event_str(ev->event), ev->status,
		rdma_event_str(t));
	return ev;
}

static void
cm_addr(struct sockaddr_in *sa, uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	inet_pton(AF_INET, "198.18.0.1", &sa->sin_addr);
}

static void
cm_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	REQUIRE(rdma_create_qp(id, NULL, &ia) == 0, "rdma_create_qp: %s", strerror(errno));
	REQUIRE(id->qp != NULL && id->send_cq != NULL && id->recv_cq != NULL &&
		id->send_cq_channel != NULL && id->pd != NULL && id->verbs != NULL,
		"the id names its QP, CQs, channel, PD and context");
}

static void
cm_server(struct link *l)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *lid, *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in sa;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	static uint8_t buf[8192];
	struct info me;

	who = "cm-server";
	REQUIRE(ch != NULL, "rdma_create_event_channel: %s", strerror(errno));
	REQUIRE(rdma_create_id(ch, &lid, (void *)0x1234, RDMA_PS_TCP) == 0, "rdma_create_id");
	cm_addr(&sa, 7471);
	REQUIRE(rdma_bind_addr(lid, (struct sockaddr *)&sa) == 0, "rdma_bind_addr: %s", strerror(errno));
	REQUIRE(rdma_listen(lid, 4) == 0, "rdma_listen");
	send_word(l, "listening");

	/* the first request is rejected with private data */
	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev->listen_id == lid && ev->id != lid && ev->id->context == (void *)0x1234,
	      "CONNECT_REQUEST: listen_id, a new id with the listener's context");
	CHECK(ev->param.conn.private_data_len >= 5 &&
	      memcmp(ev->param.conn.private_data, "hello", 5) == 0, "the REQ's private data");
	id = ev->id;
	REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
	REQUIRE(rdma_reject(id, "no", 3) == 0, "rdma_reject: %s", strerror(errno));
	REQUIRE(rdma_destroy_id(id) == 0, "rdma_destroy_id");

	/* the second is accepted */
	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
	CHECK(((struct sockaddr_in *)rdma_get_local_addr(id))->sin_addr.s_addr == sa.sin_addr.s_addr,
	      "the new id's local address");
	cm_qp(id);
	mr = rdma_reg_msgs(id, buf, 512);
	REQUIRE(mr != NULL, "rdma_reg_msgs: %s", strerror(errno));
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr (rdma_reg_msgs')");
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr != NULL, "ibv_reg_mr on the id's PD: %s", strerror(errno));
	REQUIRE(rdma_post_recv(id, NULL, buf, 512, mr) == 0, "rdma_post_recv");
	REQUIRE(rdma_accept(id, NULL) == 0, "rdma_accept: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED);
	REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");

	REQUIRE(rdma_get_recv_comp(id, &wc) == 1, "rdma_get_recv_comp: %s", strerror(errno));
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 300, "RECV: %s, %u bytes",
	      ibv_wc_status_str(wc.status), wc.byte_len);
	CHECK(same(buf, 300, 11), "the client's SEND in the server's memory");
	fill(buf + 1024, 400, 12);
	REQUIRE(rdma_post_send(id, NULL, buf + 1024, 400, mr, IBV_SEND_SIGNALED) == 0, "rdma_post_send");
	REQUIRE(rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "the server's SEND");
	me = (struct info){ .qpn = id->qp->qp_num, .rkey = mr->rkey, .addr = (uintptr_t)buf };
	send_msg(l, &me, sizeof(me));
	expect_word(l, "written");
	CHECK(same(buf + 4096, 2000, 13), "the client's WRITE in the server's memory");
	send_word(l, "checked");
	ev = cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED);
	REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
	rdma_destroy_qp(id);
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	REQUIRE(rdma_destroy_id(id) == 0, "rdma_destroy_id");
	REQUIRE(rdma_destroy_id(lid) == 0, "rdma_destroy_id (listener)");
	rdma_destroy_event_channel(ch);
	child_exit();
}

static void
cm_client(struct link *l)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .private_data = "hello", .private_data_len = 6,
				      .retry_count = 7, .rnr_retry_count = 7,
				      .initiator_depth = 1, .responder_resources = 1 };
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in sa;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	static uint8_t buf[8192];
	struct info srv;

	who = "cm-client";
	REQUIRE(ch != NULL, "rdma_create_event_channel");
	cm_addr(&sa, 7471);
	expect_word(l, "listening");
	for (int round = 0; round < 2; round++) {
		REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
		REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sa, 2000) == 0,
			"rdma_resolve_addr: %s", strerror(errno));
		ev = cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
		CHECK(id->verbs != NULL, "a context after ADDR_RESOLVED");
		REQUIRE(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route");
		ev = cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
		REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
		cm_qp(id);
		mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
		REQUIRE(mr != NULL, "ibv_reg_mr: %s", strerror(errno));
		REQUIRE(rdma_post_recv(id, NULL, buf + 2048, 1024, mr) == 0, "rdma_post_recv");
		REQUIRE(rdma_connect(id, &cp) == 0, "rdma_connect: %s", strerror(errno));
		if (round == 0) {
			ev = cm_expect(ch, RDMA_CM_EVENT_REJECTED);
			CHECK(ev->param.conn.private_data_len >= 3 &&
			      memcmp(ev->param.conn.private_data, "no", 3) == 0, "the REJ's private data");
			REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
			rdma_destroy_qp(id);
			CHECK(id->qp == NULL && id->send_cq == NULL, "rdma_destroy_qp took the QP and CQs");
			CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
			REQUIRE(rdma_destroy_id(id) == 0, "rdma_destroy_id");
			continue;
		}
		ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED);
		REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
	}
	fill(buf, 300, 11);
	REQUIRE(rdma_post_send(id, NULL, buf, 300, mr, IBV_SEND_SIGNALED) == 0, "rdma_post_send");
	REQUIRE(rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "the client's SEND");
	REQUIRE(rdma_get_recv_comp(id, &wc) == 1, "rdma_get_recv_comp");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 400, "RECV: %s, %u bytes",
	      ibv_wc_status_str(wc.status), wc.byte_len);
	CHECK(same(buf + 2048, 400, 12), "the server's SEND in the client's memory");
	recv_msg(l, &srv, sizeof(srv));
	fill(buf + 4096, 2000, 13);
	REQUIRE(rdma_post_write(id, NULL, buf + 4096, 2000, mr, IBV_SEND_SIGNALED, srv.addr + 4096,
				srv.rkey) == 0, "rdma_post_write");
	REQUIRE(rdma_get_send_comp(id, &wc) == 1, "WRITE completion");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE, "WRITE: %s",
	      ibv_wc_status_str(wc.status));
	send_word(l, "written");
	expect_word(l, "checked");
	REQUIRE(rdma_disconnect(id) == 0, "rdma_disconnect");
	ev = cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED);
	REQUIRE(rdma_ack_cm_event(ev) == 0, "ack");
	rdma_destroy_qp(id);
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	REQUIRE(rdma_destroy_id(id) == 0, "rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	child_exit();
}

static int
cm_children(void)
{
	struct ibv_context *ctx = open_dev0(); /* droce starts here, in the parent */
	struct link ls, lc;
	pid_t s, c;

	link_pair(&ls, &lc);
	s = fork();
	REQUIRE(s >= 0, "fork");
	if (s == 0)
		cm_server(&ls);
	c = fork();
	REQUIRE(c >= 0, "fork");
	if (c == 0)
		cm_client(&lc);
	reap(s, "server child");
	reap(c, "client child");
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	return failures ? 1 : 0;
}

/* ---- bad-requests ---- */

/* The socket fork() gave this child: a SOCK_SEQPACKET unix socket connected
 * to an unnamed peer (a socketpair's; DPDK's telemetry socket listens). */
static int
served_socket(void)
{
	for (int fd = 3; fd < 1024; fd++) {
		int type = 0, dom = 0;
		socklen_t l = sizeof(type), l2 = sizeof(dom);
		struct sockaddr_storage peer;
		socklen_t pl = sizeof(peer);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) == 0 && type == SOCK_SEQPACKET &&
		    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l2) == 0 && dom == AF_UNIX &&
		    getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && pl == sizeof(sa_family_t))
			return fd;
	}
	return -1;
}

/* One raw request: its response's rc (the response header into @m). */
static int
raw_req(int fd, struct droce_fk_msg *m, const void *pl, size_t plen, size_t hdr_len, int pass_fd)
{
	static uint8_t buf[DROCE_FK_MAX_MSG];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov[2] = { { m, hdr_len }, { (void *)(uintptr_t)pl, plen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = plen ? 2 : 1 };
	ssize_t n;

	if (pass_fd >= 0) {
		memset(cm.b, 0, sizeof(cm.b));
		mh.msg_control = cm.b;
		mh.msg_controllen = sizeof(cm.b);
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &pass_fd, sizeof(int));
	}
	REQUIRE(sendmsg(fd, &mh, 0) >= 0, "sendmsg: %s", strerror(errno));
	n = recv(fd, buf, sizeof(buf), 0);
	REQUIRE(n >= (ssize_t)sizeof(*m), "no response (%zd): the parent's server is gone", n);
	memcpy(m, buf, sizeof(*m));
	return m->rc;
}

static int
bad_requests(void)
{
	struct ibv_context *ctx = open_dev0();
	pid_t pid = fork();

	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		int fd = served_socket(), rc;
		struct droce_fk_msg m;
		uint64_t hctx, hpd, hcq;
		uint8_t junk[512];

		who = "child";
		REQUIRE(fd >= 0, "no served socket in the child");
		memset(junk, 0xa5, sizeof(junk));
#define REQ(op_, h_, ...)                                                                 \
	do {                                                                              \
		memset(&m, 0, sizeof(m));                                                \
		m.op = (op_);                                                             \
		m.h = (h_);                                                               \
		__VA_ARGS__;                                                              \
	} while (0)
		REQ(DROCE_FK_OPEN, 0, (void)0);
		CHECK(raw_req(fd, &m, NULL, 0, 4, -1) == EINVAL, "a 4-byte request: %d", m.rc);
		REQ(9999, 0, (void)0);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EOPNOTSUPP, "op 9999: %d", m.rc);
		REQ(0, 0, (void)0);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EOPNOTSUPP, "op 0: %d", m.rc);
		REQ(DROCE_FK_ALLOC_PD, 0, (void)0);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "handle 0: %d", m.rc);
		REQ(DROCE_FK_ALLOC_PD, 0xdeadbeef00000001ull, (void)0);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "a forged handle: %d", m.rc);
		REQ(DROCE_FK_OPEN, 0, m.a[0] = 99);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == ENODEV, "device 99: %d", m.rc);
		REQ(DROCE_FK_OPEN, 0, m.a[0] = 0);
		REQUIRE(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == 0, "open: %d", m.rc);
		hctx = m.h;
		REQ(DROCE_FK_ALLOC_PD, hctx, (void)0);
		REQUIRE(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == 0, "alloc_pd: %d", m.rc);
		hpd = m.h;
		REQ(DROCE_FK_CREATE_CQ, hpd, m.a[0] = 4);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "a PD handle as a context: %d",
		      m.rc);
		REQ(DROCE_FK_CREATE_CQ, hctx, m.a[0] = 4, m.a[1] = hpd);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "a PD handle as a channel: %d",
		      m.rc);
		REQ(DROCE_FK_CREATE_CQ, hctx, m.a[0] = 4);
		REQUIRE(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == 0, "create_cq: %d", m.rc);
		hcq = m.h;
		/* an MR: no descriptor, pieces that do not add up, a piece not of
		 * pages, an address outside them; a descriptor sent along */
		{
			struct droce_fk_piece pc = { .fd = 0, .off = 0, .len = 4096 };

			REQ(DROCE_FK_REG_MR, hpd, m.a[0] = 0x10000, m.a[1] = 100, m.a[2] = 0x10000,
			    m.a[3] = IBV_ACCESS_LOCAL_WRITE, m.a[4] = 0x10000);
			CHECK(raw_req(fd, &m, &pc, sizeof(pc), sizeof(m), -1) == EINVAL,
			      "a piece without its descriptor: %d", m.rc);
			pc.len = 100;
			REQ(DROCE_FK_REG_MR, hpd, m.a[0] = 0x10000, m.a[1] = 100, m.a[4] = 0x10000);
			CHECK(raw_req(fd, &m, &pc, sizeof(pc), sizeof(m), 0) == EINVAL,
			      "a piece of 100 bytes: %d", m.rc);
			pc.len = 4096;
			REQ(DROCE_FK_REG_MR, hpd, m.a[0] = 0x20000, m.a[1] = 100, m.a[4] = 0x10000);
			CHECK(raw_req(fd, &m, &pc, sizeof(pc), sizeof(m), 0) == EINVAL,
			      "an address past the pieces: %d", m.rc);
			REQ(DROCE_FK_REG_MR, hpd, m.a[0] = 0x10000, m.a[1] = 100, m.a[4] = 0x10000);
			CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "no pieces: %d", m.rc);
		}
		/* a QP: attributes of the wrong size; posts that say more than they carry */
		REQ(DROCE_FK_CREATE_QP, hpd, m.a[0] = hcq, m.a[1] = hcq);
		CHECK(raw_req(fd, &m, junk, 7, sizeof(m), -1) == EINVAL, "7 bytes of attributes: %d",
		      m.rc);
		{
			struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
						       .cap = { .max_send_wr = 2, .max_recv_wr = 2,
								.max_send_sge = 1, .max_recv_sge = 1 } };
			struct droce_fk_swr w;
			uint64_t hqp;

			REQ(DROCE_FK_CREATE_QP, hpd, m.a[0] = hcq, m.a[1] = hcq);
			REQUIRE(raw_req(fd, &m, &ia, sizeof(ia), sizeof(m), -1) == 0, "create_qp: %d", m.rc);
			hqp = m.h;
			REQ(DROCE_FK_POST_SEND, hqp, m.a[0] = 5);
			CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL && m.a[0] == 0,
			      "5 WRs announced, none sent: %d", m.rc);
			REQ(DROCE_FK_POST_SEND, hqp, m.a[0] = 1u << 30);
			CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "2^30 WRs: %d", m.rc);
			memset(&w, 0, sizeof(w));
			w.wr.num_sge = 1000000;
			w.wr.opcode = IBV_WR_SEND;
			REQ(DROCE_FK_POST_SEND, hqp, m.a[0] = 1);
			CHECK(raw_req(fd, &m, &w, sizeof(w), sizeof(m), -1) == EINVAL,
			      "a WR of 10^6 SGEs with none: %d", m.rc);
			w.wr.num_sge = -3;
			REQ(DROCE_FK_POST_SEND, hqp, m.a[0] = 1);
			CHECK(raw_req(fd, &m, &w, sizeof(w), sizeof(m), -1) == EINVAL, "-3 SGEs: %d", m.rc);
			REQ(DROCE_FK_POST_RECV, hqp, m.a[0] = 3);
			CHECK(raw_req(fd, &m, junk, 20, sizeof(m), -1) == EINVAL, "a cut receive: %d", m.rc);
			REQ(DROCE_FK_MODIFY_QP, hqp, m.a[0] = IBV_QP_STATE);
			CHECK(raw_req(fd, &m, junk, 3, sizeof(m), -1) == EINVAL, "3 bytes of attr: %d", m.rc);
			REQ(DROCE_FK_POLL_CQ, hcq, m.a[0] = ~0ull);
			CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == 0 && m.a[0] == 0,
			      "a poll of 2^64 - 1: %d, %llu", m.rc, (unsigned long long)m.a[0]);
			REQ(DROCE_FK_GET_CQ_EVENT, hcq, (void)0);
			CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "a CQ as a channel: %d", m.rc);
			REQ(DROCE_FK_DESTROY_QP, hqp, (void)0);
			CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == 0, "destroy_qp: %d", m.rc);
			REQ(DROCE_FK_DESTROY_QP, hqp, (void)0);
			CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "destroyed twice: %d", m.rc);
		}
		/* rdma_cm: bad handles and short addresses */
		REQ(DROCE_FK_CM_BIND, hpd, (void)0);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "bind on a PD: %d", m.rc);
		REQ(DROCE_FK_CM_GET_EVENT, 12345, (void)0);
		CHECK(raw_req(fd, &m, NULL, 0, sizeof(m), -1) == EINVAL, "a forged channel: %d", m.rc);
		REQ(DROCE_FK_CM_CREATE_EP, 0, (void)0);
		CHECK(raw_req(fd, &m, junk, 10, sizeof(m), -1) == EINVAL, "a cut create_ep: %d", m.rc);
		/* a PD with a CQ left: the parent cleans up at the end; the real
		 * verbs of this child still work */
		rc = 0;
		{
			struct side b;

			side_up(&b, IBV_QPT_UD, true, 4096, true);
			ud_up(&b);
			side_down(&b);
			rc = failures;
		}
#undef REQ
		(void)rc;
		child_exit();
	}
	reap(pid, "child");
	/* the parent's droce after it: a QP of its own still comes up */
	{
		struct side a;

		side_up(&a, IBV_QPT_UD, false, 4096, false);
		ud_up(&a);
		side_down(&a);
	}
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	return failures ? 1 : 0;
}

/* ---- bad-wr ---- */

static int
bad_wr(void)
{
	struct ibv_context *ctx = open_dev0();
	pid_t pid = fork();

	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		struct side b;
		struct ibv_sge sg;
		struct ibv_send_wr w[3], *bad = NULL;
		struct ibv_recv_wr r[2], *rbad = NULL;
		struct ibv_wc wc;
		int rc;

		who = "child";
		side_up(&b, IBV_QPT_RC, false, 4096, false);
		sg = (struct ibv_sge){ .addr = (uintptr_t)b.buf, .length = 16, .lkey = b.mr->lkey };
		/* a send on a QP in RESET: the parent's post refuses it (ibv_post_send(3)) */
		memset(w, 0, sizeof(w));
		w[0].sg_list = &sg;
		w[0].num_sge = 1;
		w[0].opcode = IBV_WR_SEND;
		rc = ibv_post_send(b.qp, &w[0], &bad);
		CHECK(rc != 0 && bad == &w[0], "a send in RESET: rc %d", rc);
		{
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

			REQUIRE(ibv_modify_qp(b.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						  IBV_QP_ACCESS_FLAGS) == 0, "INIT");
		}
		/* receives: the second has a negative SGE count: EINVAL, bad_wr at it */
		memset(r, 0, sizeof(r));
		r[0].wr_id = 10;
		r[0].sg_list = &sg;
		r[0].num_sge = 1;
		r[0].next = &r[1];
		r[1].wr_id = 11;
		r[1].num_sge = -1;
		rc = ibv_post_recv(b.qp, r, &rbad);
		CHECK(rc == EINVAL && rbad == &r[1], "recv list: rc %d bad %p (r[1] %p)", rc,
		      (void *)rbad, (void *)&r[1]);
		/* too many SGEs for the QP (max_recv_sge 2): the parent's EINVAL */
		{
			struct ibv_sge s3[3] = { sg, sg, sg };

			r[0].sg_list = s3;
			r[0].num_sge = 3;
			r[0].next = NULL;
			rbad = NULL;
			rc = ibv_post_recv(b.qp, r, &rbad);
			CHECK(rc == EINVAL && rbad == &r[0], "3 SGEs: rc %d", rc);
		}
		/* the first receive was posted: moving to ERR flushes it */
		{
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			CHECK(ibv_modify_qp(b.qp, &a, IBV_QP_STATE) == 0, "ERR");
			wc = wait_wc(&b);
			CHECK(wc.wr_id == 10 && wc.status == IBV_WC_WR_FLUSH_ERR,
			      "the posted receive flushed: wr_id %llu status %s",
			      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		}
		/* a CQ of another context is refused */
		{
			struct ibv_context *c2 = open_dev0();
			struct ibv_pd *pd2 = ibv_alloc_pd(c2);
			struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .send_cq = b.cq,
						       .recv_cq = b.cq,
						       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
								.max_send_sge = 1, .max_recv_sge = 1 } };

			errno = 0;
			CHECK(pd2 && ibv_create_qp(pd2, &ia) == NULL && errno == EINVAL,
			      "a QP with another context's CQ: errno %d", errno);
			ibv_dealloc_pd(pd2);
			ibv_close_device(c2);
		}
		/* no async event waiting, the fd non-blocking: EAGAIN at once */
		{
			struct ibv_async_event aev;
			int fl = fcntl(b.ctx->async_fd, F_GETFL);

			REQUIRE(fcntl(b.ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0, "O_NONBLOCK");
			errno = 0;
			CHECK(ibv_get_async_event(b.ctx, &aev) == -1 && errno == EAGAIN,
			      "ibv_get_async_event with nothing there: errno %d", errno);
			fcntl(b.ctx->async_fd, F_SETFL, fl);
		}
		/* a CQ below one entry */
		errno = 0;
		CHECK(ibv_create_cq(b.ctx, 0, NULL, NULL, 0) == NULL && errno == EINVAL, "cqe 0");
		side_down(&b);
		child_exit();
	}
	reap(pid, "child");
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	return failures ? 1 : 0;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(mode, "parent-child") == 0)
		return parent_child();
	if (strcmp(mode, "two-children") == 0)
		return two_children();
	if (strcmp(mode, "child-dies") == 0)
		return child_dies();
	if (strcmp(mode, "bad-wr") == 0)
		return bad_wr();
	if (strcmp(mode, "cm-children") == 0)
		return cm_children();
	if (strcmp(mode, "bad-requests") == 0)
		return bad_requests();
	fprintf(stderr, "usage: fork_proc parent-child|two-children|child-dies|bad-wr|cm-children|bad-requests\n");
	return 2;
}
