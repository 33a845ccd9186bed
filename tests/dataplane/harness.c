/* SPDX-License-Identifier: BSD-3-Clause
 * RC end-to-end test harness (see harness.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>

#include "harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define H_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define H_ASAN 1
#endif
#endif

bool
h_asan(void)
{
#ifdef H_ASAN
	return true;
#else
	return false;
#endif
}

unsigned long
h_env_ulong(const char *name, unsigned long def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (v == NULL || *v == '\0')
		return def;
	x = strtoul(v, &end, 0);
	return *end == '\0' ? x : def;
}

static bool started;

/* Everything a test made through the harness, torn down by h_stop(). */
#define H_MAX_OBJ 512
static struct {
	struct droce_qp *qp[H_MAX_OBJ];
	struct droce_cq *cq[H_MAX_OBJ];
	struct droce_mr *mr[H_MAX_OBJ]; /* heap copies: engines may read them after a test's stack is gone */
	uint8_t *mem[H_MAX_OBJ];
	unsigned int nqp, ncq, nmr;
} reg;

struct droce_cq *
h_cq_create(uint32_t cqe)
{
	struct droce_cq *cq = droce_cq_create(cqe, NULL, NULL, NULL);

	cr_assert_not_null(cq, "droce_cq_create(%u): %s", cqe, strerror(errno));
	cr_assert_lt(reg.ncq, H_MAX_OBJ);
	reg.cq[reg.ncq++] = cq;
	return cq;
}

int
h_start(const struct h_cfg *c, bool may_fail)
{
	static char text[8192], port0[1024], port1[1024];
	struct droce_config cfg;
	const char *extra = c->port_extra ? c->port_extra : "";
	const char *cap = c->capture0 ? c->capture0 : getenv("DROCE_TEST_CAPTURE");
	unsigned int eng = c->engines ? c->engines : 1;
	struct tc_pair pair = {
		.mtu = c->port_mtu ? c->port_mtu : 9000,
		.engines = eng,
		.descs = 2048,
		.mbufs = c->mbufs ? c->mbufs : 16383,
		.data_room = c->data_room ? c->data_room : 10240,
		.mem_mb = c->mem_mb ? c->mem_mb : 512,
		.mempool_extra = "capture_mbufs = 4095",
		.fallback_us = c->fallback_us,
		.engines_extra = c->selective_repeat ? "selective_repeat = 1" : NULL,
		.port0_extra = port0,
		.port1_extra = port1,
		.extra = c->sections,
	};
	int n;

	snprintf(port0, sizeof(port0), "%s%s%s%s%s%s", cap ? "capture = " : "", cap ? cap : "",
		 cap ? "\n" : "", extra, c->port0_extra ? "\n" : "",
		 c->port0_extra ? c->port0_extra : "");
	snprintf(port1, sizeof(port1), "%s%s%s", extra, c->port1_extra ? "\n" : "",
		 c->port1_extra ? c->port1_extra : "");
	if (c->text != NULL)
		n = snprintf(text, sizeof(text), "%s", c->text);
	else
		n = tc_pair_config(text, sizeof(text), &pair);
	cr_assert(n > 0 && (size_t)n < sizeof(text), "config text too long");
	unsetenv("DROCE_CONFIG");
	if (droce_config_load_text("<dataplane test>", text, &cfg) != 0) {
		if (may_fail)
			return -1;
		cr_assert_fail("config refused: %s\n%s", droce_last_error(), text);
	}
	if (droce_start_config(&cfg) != 0) {
		if (may_fail)
			return -1;
		cr_assert_fail("droce_start_config: %s", droce_last_error());
	}
	started = true;
	cr_assert_eq(droce_engines_start(), 0, "droce_engines_start: %s", strerror(errno));
	cr_assert_eq(droce_engine_count(), eng);
	return 0;
}

void
h_stop(void)
{
	if (!started)
		return;
	/* destroy what the test left, exercising the teardown paths */
	for (unsigned int i = 0; i < reg.nqp; i++)
		cr_expect_eq(droce_qp_destroy(reg.qp[i]), 0, "droce_qp_destroy");
	for (unsigned int i = 0; i < reg.ncq; i++)
		droce_cq_destroy(reg.cq[i]);
	for (unsigned int i = 0; i < reg.nmr; i++) {
		if (reg.mr[i] == NULL)
			continue;
		cr_expect_eq(droce_mr_unregister(reg.mr[i]), 0, "droce_mr_unregister");
		free(reg.mem[i]);
		free(reg.mr[i]);
	}
	memset(&reg, 0, sizeof(reg));
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
	started = false;
}

/* ---- buffers ---- */

void
h_buf_init_ex(struct h_buf *b, size_t len, uint32_t access, uint32_t pd, uint64_t iova)
{
	struct droce_mr *mr = calloc(1, sizeof(*mr));

	cr_assert_not_null(mr);
	cr_assert_lt(reg.nmr, H_MAX_OBJ);
	memset(b, 0, sizeof(*b));
	b->len = len;
	b->p = malloc(len ? len : 1);
	cr_assert_not_null(b->p);
	memset(b->p, 0, len);
	mr->addr = b->p;
	mr->iova = iova ? iova : (uint64_t)(uintptr_t)b->p;
	mr->length = len;
	mr->access = access;
	mr->pd_id = pd;
	cr_assert_eq(droce_mr_register(mr), 0, "droce_mr_register: %s", strerror(errno));
	cr_assert_neq(mr->lkey, 0);
	reg.mr[reg.nmr] = mr;
	reg.mem[reg.nmr++] = b->p;
	b->mr = *mr; /* the keys, for the test to read */
}

void
h_buf_init(struct h_buf *b, size_t len, uint32_t access)
{
	h_buf_init_ex(b, len, access, H_PD, 0);
}

void
h_buf_free(struct h_buf *b)
{
	if (b->p == NULL)
		return;
	for (unsigned int i = 0; i < reg.nmr; i++) {
		if (reg.mem[i] != b->p)
			continue;
		cr_assert_eq(droce_mr_unregister(reg.mr[i]), 0, "droce_mr_unregister");
		free(reg.mr[i]);
		reg.mr[i] = NULL;
		reg.mem[i] = NULL;
	}
	free(b->p);
	b->p = NULL;
}

void
h_fill(uint8_t *p, size_t n, uint32_t seed)
{
	tc_fill(p, n, seed);
}

long
h_check_fill(const uint8_t *p, size_t n, uint32_t seed)
{
	return tc_first_diff(p, n, seed);
}

/* ---- QPs ---- */

struct h_conn_opts
h_conn_defaults(uint32_t pmtu)
{
	struct h_conn_opts o = {
		.pmtu = pmtu ? pmtu : 1024,
		.timeout = 12,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1,
		.max_rd_atomic = 16,
		.max_dest_rd_atomic = 16,
		.access = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |
			  DROCE_ACCESS_REMOTE_ATOMIC,
		.udp_sport = 0xc000,
	};
	return o;
}

void
h_pair_create(struct h_pair *p, uint32_t sq, uint32_t rq, struct droce_cq *scq0,
	      struct droce_cq *rcq0, struct droce_cq *scq1, struct droce_cq *rcq1)
{
	h_pair_create_ex(p, sq, rq, scq0, rcq0, scq1, rcq1, false);
}

void
h_pair_create_ex(struct h_pair *p, uint32_t sq, uint32_t rq, struct droce_cq *scq0,
		 struct droce_cq *rcq0, struct droce_cq *scq1, struct droce_cq *rcq1,
		 bool port1_first)
{
	struct droce_qp_caps caps = {
		.max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = DROCE_DP_MAX_SGE,
		.max_recv_sge = DROCE_DP_MAX_SGE, .max_inline_data = DROCE_DP_MAX_INLINE,
	};

	p->scq[0] = scq0;
	p->rcq[0] = rcq0;
	p->scq[1] = scq1;
	p->rcq[1] = rcq1;
	for (unsigned int k = 0; k < 2; k++) {
		unsigned int i = port1_first ? 1 - k : k;

		p->qp[i] = droce_qp_create(DROCE_QPT_RC, &caps, p->scq[i], p->rcq[i], H_PD, i);
		cr_assert_not_null(p->qp[i], "droce_qp_create(port%u): %s", i, strerror(errno));
		cr_assert_lt(reg.nqp, H_MAX_OBJ);
		reg.qp[reg.nqp++] = p->qp[i];
		p->qpn[i] = droce_qp_num(p->qp[i]);
		cr_assert(p->qpn[i] != 0 && p->qpn[i] < (1u << 24), "qpn %#x", p->qpn[i]);
	}
	cr_assert_neq(p->qpn[0], p->qpn[1]);
}

struct droce_qp *
h_qp_create(unsigned int port, uint32_t sq, uint32_t rq, struct droce_cq *scq, struct droce_cq *rcq)
{
	struct droce_qp_caps caps = {
		.max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = DROCE_DP_MAX_SGE,
		.max_recv_sge = DROCE_DP_MAX_SGE, .max_inline_data = DROCE_DP_MAX_INLINE,
	};
	struct droce_qp *qp = droce_qp_create(DROCE_QPT_RC, &caps, scq, rcq, H_PD, port);

	cr_assert_not_null(qp, "droce_qp_create(port%u): %s", port, strerror(errno));
	cr_assert_lt(reg.nqp, H_MAX_OBJ);
	reg.qp[reg.nqp++] = qp;
	return qp;
}

void
h_pair_create_cqs(struct h_pair *p, uint32_t sq, uint32_t rq, uint32_t cqe)
{
	struct droce_cq *c[4];

	for (unsigned int i = 0; i < 4; i++)
		c[i] = h_cq_create(cqe);
	h_pair_create(p, sq, rq, c[0], c[1], c[2], c[3]);
}

static void
modify(struct droce_qp *qp, const struct droce_qp_mod *m, const char *what)
{
	int rc = droce_qp_modify(qp, m);

	cr_assert_eq(rc, 0, "droce_qp_modify(%s): %d", what, rc);
}

void
h_connect(struct droce_qp *qp, unsigned int port, unsigned int peer_port, uint32_t dest_qpn,
	  uint32_t sq_psn, uint32_t rq_psn, const struct h_conn_opts *o)
{
	h_connect_nowait(qp, port, peer_port, dest_qpn, sq_psn, rq_psn, o);
	h_settle(qp);
}

void
h_connect_nowait(struct droce_qp *qp, unsigned int port, unsigned int peer_port, uint32_t dest_qpn,
		 uint32_t sq_psn, uint32_t rq_psn, const struct h_conn_opts *o)
{
	struct droce_port *me = droce_port_get(port), *peer = droce_port_get(peer_port);
	struct droce_qp_mod m;

	cr_assert_not_null(me);
	cr_assert_not_null(peer);

	memset(&m, 0, sizeof(m));
	m.mask = DROCE_QPM_STATE | DROCE_QPM_PKEY_INDEX | DROCE_QPM_PORT | DROCE_QPM_ACCESS_FLAGS;
	m.state = DROCE_QPS_INIT;
	m.port = (uint8_t)(port + 1);
	m.access = o->access;
	modify(qp, &m, "RESET->INIT");

	memset(&m, 0, sizeof(m));
	m.mask = DROCE_QPM_STATE | DROCE_QPM_AV | DROCE_QPM_PATH_MTU | DROCE_QPM_DEST_QPN |
		 DROCE_QPM_RQ_PSN | DROCE_QPM_MAX_DEST_RD_ATOMIC | DROCE_QPM_MIN_RNR_TIMER;
	m.state = DROCE_QPS_RTR;
	m.pmtu = o->pmtu;
	m.dest_qpn = dest_qpn;
	m.rq_psn = rq_psn & 0xffffff;
	m.max_dest_rd_atomic = o->max_dest_rd_atomic;
	m.min_rnr_timer = o->min_rnr_timer;
	m.path.src_mac = *droce_port_mac(me);
	m.path.dst_mac = *droce_port_mac(peer);
	/* GID 0 of each port (the pair's: 198.18.0.1 and 198.18.0.2) */
	memcpy(m.path.src_gid, droce_port_gid(me, 0), 16);
	memcpy(m.path.dst_gid, droce_port_gid(peer, 0), 16);
	m.path.hop_limit = 64;
	m.path.traffic_class = o->traffic_class;
	/* a VLAN port's frames are tagged, the service level their priority (as
	 * verbs_api's droce_verbs_resolve_path) */
	m.path.vlan = droce_port_vlan(me) != 0;
	m.path.vlan_id = droce_port_vlan(me);
	m.path.vlan_pcp = o->sl & 7;
	m.path.udp_sport = o->udp_sport ? o->udp_sport : (uint16_t)(0xc000 | (dest_qpn & 0x3fff));
	m.path.ip_id = 1;
	modify(qp, &m, "INIT->RTR");

	memset(&m, 0, sizeof(m));
	m.mask = DROCE_QPM_STATE | DROCE_QPM_TIMEOUT | DROCE_QPM_RETRY_CNT | DROCE_QPM_RNR_RETRY |
		 DROCE_QPM_SQ_PSN | DROCE_QPM_MAX_QP_RD_ATOMIC;
	m.state = DROCE_QPS_RTS;
	m.timeout = o->timeout;
	m.retry_cnt = o->retry_cnt;
	m.rnr_retry = o->rnr_retry;
	m.sq_psn = sq_psn & 0xffffff;
	m.max_rd_atomic = o->max_rd_atomic;
	modify(qp, &m, "RTR->RTS");
}

void
h_pair_connect(struct h_pair *p, const struct h_conn_opts *o)
{
	h_connect(p->qp[0], 0, 1, p->qpn[1], H_PSN_A, H_PSN_B, o);
	h_connect(p->qp[1], 1, 0, p->qpn[0], H_PSN_B, H_PSN_A, o);
}

void
h_settle(struct droce_qp *qp)
{
	uint64_t deadline = tc_now_ms() + 5000;

	/* the engine may be driven by the fallback thread right now: wait, not assume */
	while (!droce_qp_settled(qp)) {
		cr_assert_leq(tc_now_ms(), deadline, "QP %#x: modify not applied in 5 s", droce_qp_num(qp));
		droce_engines_progress();
	}
}

void
h_inject_frame(unsigned int port, unsigned int peer_port, const struct droce_pkt_fields *f,
	       const void *payload, uint32_t plen)
{
	h_inject_frame_dir(port, peer_port, f, payload, plen, DROCE_INJECT_TX);
}

size_t
h_build_frame(unsigned int port, unsigned int peer_port, const struct droce_pkt_fields *f,
	      const void *payload, uint32_t plen, uint8_t *frame, size_t cap)
{
	static const char *const ip[2] = { "198.18.0.1", "198.18.0.2" };
	struct droce_pkt_fields fields = *f;
	struct droce_hdr_tmpl t;
	struct droce_path path;
	struct in_addr a;
	size_t len;

	cr_assert(port < 2 && peer_port < 2);
	memset(&path, 0, sizeof(path));
	path.src_mac = *droce_port_mac(droce_port_get(port));
	path.dst_mac = *droce_port_mac(droce_port_get(peer_port));
	cr_assert_eq(inet_pton(AF_INET, ip[port], &a), 1);
	droce_gid_from_ipv4(path.src_gid, a.s_addr);
	cr_assert_eq(inet_pton(AF_INET, ip[peer_port], &a), 1);
	droce_gid_from_ipv4(path.dst_gid, a.s_addr);
	path.hop_limit = 64;
	path.udp_sport = 0xc000 | (f->dqpn & 0x3fff);
	path.ip_id = 1;
	droce_tmpl_init(&t, &path);
	len = droce_build_frame(&t, frame, cap, &fields, payload, plen);
	cr_assert_gt(len, 0, "frame of opcode %#x with %u payload bytes not built", f->opcode, plen);
	return len;
}

void
h_inject_raw(unsigned int port, unsigned int peer_port, const uint8_t *frame, size_t len,
	     enum droce_inject_dir dir)
{
	/* TX leaves @port towards the peer; RX arrives on @peer_port directly */
	int rc = droce_dp_inject(0, dir == DROCE_INJECT_TX ? port : peer_port, dir, frame,
				 (uint32_t)len);

	cr_assert_eq(rc, 0, "droce_dp_inject: %s", strerror(rc));
}

void
h_inject_frame_dir(unsigned int port, unsigned int peer_port, const struct droce_pkt_fields *f,
		   const void *payload, uint32_t plen, enum droce_inject_dir dir)
{
	static uint8_t frame[10240];
	size_t len = h_build_frame(port, peer_port, f, payload, plen, frame, sizeof(frame));

	h_inject_raw(port, peer_port, frame, len, dir);
}

void
h_modify_state(struct droce_qp *qp, enum droce_qp_state state)
{
	struct droce_qp_mod m;

	memset(&m, 0, sizeof(m));
	m.mask = DROCE_QPM_STATE;
	m.state = state;
	modify(qp, &m, "state");
	h_settle(qp);
}

/* ---- work requests ---- */

struct droce_wqe
h_wqe(uint64_t wr_id, uint8_t opcode, uint8_t flags)
{
	struct droce_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = opcode;
	w.flags = flags;
	return w;
}

void
h_wqe_sge(struct droce_wqe *w, const struct h_buf *b, size_t off, uint32_t len)
{
	cr_assert_lt(w->num_sge, DROCE_DP_MAX_SGE);
	w->sge[w->num_sge].addr = h_va(b, off);
	w->sge[w->num_sge].length = len;
	w->sge[w->num_sge].lkey = b->mr.lkey;
	w->num_sge++;
	w->length += len;
}

/* Uneven split of @len into @n parts: part i gets about len * (i + 1) / sum. */
static void
split(uint32_t len, unsigned int n, uint32_t *parts)
{
	uint32_t left = len, sum = n * (n + 1) / 2;

	for (unsigned int i = 0; i < n; i++) {
		uint32_t k = i + 1 == n ? left : (uint32_t)((uint64_t)len * (i + 1) / sum);

		if (k > left)
			k = left;
		parts[i] = k;
		left -= k;
	}
}

void
h_wqe_sges(struct droce_wqe *w, const struct h_buf *b, size_t off, uint32_t len, unsigned int n)
{
	uint32_t parts[DROCE_DP_MAX_SGE];

	cr_assert(n >= 1 && n <= DROCE_DP_MAX_SGE);
	split(len, n, parts);
	for (unsigned int i = 0; i < n; i++) {
		h_wqe_sge(w, b, off, parts[i]);
		off += parts[i];
	}
}

/* A signaled READ or WRITE of [off, off + len) between @local and @remote. */
static void
post_rdma(struct droce_qp *qp, uint8_t opcode, uint64_t wr_id, const struct h_buf *local,
	  const struct h_buf *remote, size_t off, uint32_t len)
{
	struct droce_wqe w = h_wqe(wr_id, opcode, DROCE_WQE_SIGNALED);

	h_wqe_sge(&w, local, off, len);
	w.remote_addr = h_va(remote, off);
	w.rkey = remote->mr.rkey;
	h_post_send(qp, &w);
}

void
h_post_write(struct droce_qp *qp, uint64_t wr_id, const struct h_buf *local,
	     const struct h_buf *remote, size_t off, uint32_t len)
{
	post_rdma(qp, DROCE_WR_RDMA_WRITE, wr_id, local, remote, off, len);
}

void
h_post_read(struct droce_qp *qp, uint64_t wr_id, const struct h_buf *local,
	    const struct h_buf *remote, size_t off, uint32_t len)
{
	post_rdma(qp, DROCE_WR_RDMA_READ, wr_id, local, remote, off, len);
}

void
h_wait_tx(struct droce_qp *qp, uint64_t n, const char *what)
{
	uint64_t deadline = tc_now_ms() + 5000;

	while (qp->stats.tx_pkts < n) {
		cr_assert_leq(tc_now_ms(), deadline, "%s: %" PRIu64 " frames sent, waiting for %" PRIu64,
			      what, qp->stats.tx_pkts, n);
		droce_engines_progress();
	}
}

void
h_post_send(struct droce_qp *qp, const struct droce_wqe *w)
{
	int rc = droce_qp_post_send(qp, w);

	cr_assert_eq(rc, 0, "droce_qp_post_send(wr_id %#" PRIx64 "): %d", w->wr_id, rc);
}

struct droce_rqe
h_rqe(uint64_t wr_id)
{
	struct droce_rqe r;

	memset(&r, 0, sizeof(r));
	r.wr_id = wr_id;
	return r;
}

void
h_rqe_sge(struct droce_rqe *r, const struct h_buf *b, size_t off, uint32_t len)
{
	cr_assert_lt(r->num_sge, DROCE_DP_MAX_SGE);
	r->sge[r->num_sge].addr = h_va(b, off);
	r->sge[r->num_sge].length = len;
	r->sge[r->num_sge].lkey = b->mr.lkey;
	r->num_sge++;
	r->length += len;
}

void
h_rqe_sges(struct droce_rqe *r, const struct h_buf *b, size_t off, uint32_t len, unsigned int n)
{
	uint32_t parts[DROCE_DP_MAX_SGE];

	cr_assert(n >= 1 && n <= DROCE_DP_MAX_SGE);
	split(len, n, parts);
	for (unsigned int i = 0; i < n; i++) {
		h_rqe_sge(r, b, off, parts[i]);
		off += parts[i];
	}
}

void
h_post_recv(struct droce_qp *qp, const struct droce_rqe *r)
{
	int rc = droce_qp_post_recv(qp, r);

	cr_assert_eq(rc, 0, "droce_qp_post_recv(wr_id %#" PRIx64 "): %d", r->wr_id, rc);
}

/* ---- completions ---- */

int
h_poll(struct droce_cq *cq, int n, struct droce_cqe *out, unsigned int timeout_ms)
{
	uint64_t deadline = tc_now_ms() + timeout_ms;
	int got = 0;
	unsigned int spins = 0;

	while (got < n) {
		int k = droce_cq_poll(cq, n - got, out + got);

		cr_assert_geq(k, 0, "droce_cq_poll: %d", k);
		got += k;
		if (k == 0 && (++spins & 255) == 0 && tc_now_ms() > deadline)
			break;
	}
	return got;
}

struct droce_cqe
h_poll1(struct droce_cq *cq, unsigned int timeout_ms, const char *what)
{
	struct droce_cqe c;

	memset(&c, 0xa5, sizeof(c));
	cr_assert_eq(h_poll(cq, 1, &c, timeout_ms), 1, "%s: no completion within %u ms", what,
		     timeout_ms);
	return c;
}

void
h_spin(unsigned int ms)
{
	uint64_t deadline = tc_now_ms() + ms;

	while (tc_now_ms() <= deadline)
		for (int i = 0; i < 64; i++)
			droce_engines_progress();
}

void
h_expect_empty(struct droce_cq *cq, unsigned int ms, const char *what)
{
	struct droce_cqe c;
	uint64_t deadline = tc_now_ms() + ms;

	memset(&c, 0, sizeof(c));
	do {
		int k = droce_cq_poll(cq, 1, &c);

		cr_assert_eq(k, 0,
			     "%s: unexpected completion wr_id %#" PRIx64 " status %u opcode %u "
			     "byte_len %u qp %#x",
			     what, c.wr_id, c.status, c.opcode, c.byte_len, c.qp_num);
	} while (tc_now_ms() <= deadline);
}

void
h_check_cqe(const struct droce_cqe *c, const struct h_expect *e, const char *ctx)
{
	cr_assert_eq(c->wr_id, e->wr_id, "%s: wr_id %#" PRIx64 ", expected %#" PRIx64
		     " (status %u opcode %u)", ctx, c->wr_id, e->wr_id, c->status, c->opcode);
	cr_assert_eq(c->status, e->status, "%s: status %u, expected %u", ctx, c->status, e->status);
	cr_assert_eq(c->opcode, e->opcode, "%s: opcode %u, expected %u", ctx, c->opcode, e->opcode);
	cr_assert_eq(c->byte_len, e->byte_len, "%s: byte_len %u, expected %u", ctx, c->byte_len,
		     e->byte_len);
	cr_assert_eq(c->wc_flags, e->wc_flags, "%s: wc_flags %#x, expected %#x", ctx, c->wc_flags,
		     e->wc_flags);
	cr_assert_eq(c->imm_or_inv, (e->wc_flags & DROCE_WC_F_WITH_IMM) ? e->imm : 0,
		     "%s: imm_or_inv %#x, expected %#x", ctx, c->imm_or_inv,
		     (e->wc_flags & DROCE_WC_F_WITH_IMM) ? e->imm : 0);
	cr_assert_eq(c->qp_num, e->qp_num, "%s: qp_num %#x, expected %#x", ctx, c->qp_num,
		     e->qp_num);
	cr_assert_eq(c->src_qp, e->src_qp, "%s: src_qp %#x, expected %#x", ctx, c->src_qp,
		     e->src_qp);
	cr_assert_eq(c->vendor_err, 0, "%s: vendor_err %u", ctx, c->vendor_err);
}

void
h_check_err_cqe(const struct droce_cqe *c, uint64_t wr_id, uint32_t status, uint32_t qp_num,
		const char *ctx)
{
	cr_assert_eq(c->wr_id, wr_id, "%s: wr_id %#" PRIx64 ", expected %#" PRIx64 " (status %u)", ctx,
		     c->wr_id, wr_id, c->status);
	cr_assert_eq(c->status, status, "%s: status %u, expected %u", ctx, c->status, status);
	cr_assert_eq(c->qp_num, qp_num, "%s: qp_num %#x, expected %#x", ctx, c->qp_num, qp_num);
}

void
h_dump_qp(const char *name, const struct droce_qp *qp)
{
	const struct droce_qp_stats *st = &qp->stats;

	cr_log_error("%s qpn %#x state %d: sq head %u cur %u next %u avail %u | psn next %#x una %#x "
		     "max %#x | rd_atomic_out %u req_state %d rto %s rnr %s retry_left %u rnr_left %u | "
		     "epsn %#x msn %u rq head %u avail %u rd_resp %u ack_pending %d nak_seq_sent %d",
		     name, qp->qpn, qp->state, qp->sq_head, qp->sq_cur, qp->sq_next, qp->sq_avail,
		     qp->psn_next, qp->psn_una, qp->psn_max, qp->rd_atomic_out, qp->req_state,
		     qp->rto_deadline ? "armed" : "off", qp->rnr_deadline ? "armed" : "off",
		     qp->retry_left, qp->rnr_left, qp->rxseq.epsn, qp->msn, qp->rq_head, qp->rq_avail,
		     qp->rd_resp_count, qp->ack_pending, qp->nak_seq_sent);
	cr_log_error("%s stats: tx %" PRIu64 " rx %" PRIu64 " retx %" PRIu64 " timeouts %" PRIu64
		     " rnr_naks tx %" PRIu64 " rx %" PRIu64 " seq_naks tx %" PRIu64 " rx %" PRIu64
		     " dup_reqs %" PRIu64 " dup_reads %" PRIu64 " dup_atomics %" PRIu64
		     " rem_err_naks tx %" PRIu64 " rx %" PRIu64 " implicit %" PRIu64,
		     name, st->tx_pkts, st->rx_pkts, st->retransmits, st->timeouts, st->rnr_naks_tx,
		     st->rnr_naks_rx, st->seq_naks_tx, st->seq_naks_rx, st->dup_reqs, st->dup_reads,
		     st->dup_atomics, st->rem_err_naks_tx, st->rem_err_naks_rx, st->implicit_naks);
	if (qp->sq_head != qp->sq_avail) {
		const struct droce_wqe *w = &droce_qp_sq_slot(qp, qp->sq_head)->wqe;
		const struct droce_swqe *sw = &qp->swqe[qp->sq_head & qp->sq_mask];

		cr_log_error("%s head WQE: wr_id %#" PRIx64 " %s len %u | first_psn %#x npkts %u sent %u "
			     "sent_pkts %u got %u gap_mark %#x err %u started %d done %d",
			     name, w->wr_id, droce_wr_opcode_name[w->opcode], w->length, sw->first_psn,
			     sw->npkts, sw->sent, sw->sent_pkts, sw->got, sw->gap_mark, sw->err,
			     sw->started, sw->done);
	}
}

void
h_dump_engines(void)
{
	for (unsigned int e = 0; e < droce_engine_count(); e++) {
		struct droce_engine_stats st;
		char drops[256];
		size_t off = 0;

		memset(&st, 0, sizeof(st));
		droce_engine_stats_get(e, &st);
		drops[0] = '\0';
		for (unsigned int i = 0; i < DROCE_DROP_COUNT; i++)
			if (st.drops[i] && off < sizeof(drops))
				off += (size_t)snprintf(drops + off, sizeof(drops) - off, " [%u]=%" PRIu64, i,
							st.drops[i]);
		fprintf(stderr,
			"[info] engine %u: loops %" PRIu64 " rx %" PRIu64 " tx %" PRIu64 " tx_drops %" PRIu64
			" no_qp %" PRIu64 " forwarded %" PRIu64 " seq_drops %" PRIu64 " cqe_overflows %" PRIu64
			" alloc_fail %" PRIu64 " drops:%s\n",
			e, st.loops, st.rx_pkts, st.tx_pkts, st.tx_drops, st.no_qp, st.forwarded,
			st.seq_drops, st.cqe_overflows, st.alloc_fail, drops);
	}
	for (unsigned int i = 0; i < droce_port_count(); i++) {
		struct droce_port_stats ps;

		droce_port_stats_get(droce_port_get(i), &ps);
		fprintf(stderr, "[info] port%u: rx %" PRIu64 " tx %" PRIu64 " tx_full %" PRIu64
			" capture_drops %" PRIu64 "\n", i, ps.rx_pkts, ps.tx_pkts, ps.tx_full,
			ps.capture_drops);
	}
}
