/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

uint64_t
t_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

void
t_start(unsigned int ip_mtu, const char *port0_extra)
{
	static char text[4096];
	struct droce_config cfg;
	int n;

	n = snprintf(text, sizeof(text),
		     "[eal]\n"
		     "args = --no-huge --no-pci -m 256 --log-level=lib.eal:warning\n"
		     "[engines]\n"
		     "mode = colocated\n"
		     "count = 1\n"
		     "[mempool]\n"
		     "mbufs = 8191\n"
		     "cache = 128\n"
		     "data_room = 10240\n"
		     "capture_mbufs = 1023\n"
		     "[port0]\n"
		     "kind = ring\n"
		     "peer = port1\n"
		     "mac = 02:00:c6:12:00:01\n"
		     "ipv4 = 198.18.0.1\n"
		     "ipv6 = 2001:2::1\n"
		     "mtu = %u\n"
		     "rxd = 2048\n"
		     "txd = 2048\n"
		     "%s\n"
		     "[port1]\n"
		     "kind = ring\n"
		     "peer = port0\n"
		     "mac = 02:00:c6:12:00:02\n"
		     "ipv4 = 198.18.0.2\n"
		     "ipv6 = 2001:2::2\n"
		     "mtu = %u\n"
		     "rxd = 2048\n"
		     "txd = 2048\n",
		     ip_mtu, port0_extra ? port0_extra : "", ip_mtu);
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<ud_uc test>", text, &cfg), 0, "config: %s",
		     droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "droce_start_config: %s", droce_last_error());
}

void
t_stop(void)
{
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
}

void
t_open(struct t_end *e, const char *name, enum ibv_qp_type type, uint32_t send_wr, uint32_t recv_wr)
{
	struct ibv_device **list;
	struct ibv_qp_init_attr ia = {
		.qp_type = type,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};
	int n;

	memset(e, 0, sizeof(*e));
	list = ibv_get_device_list(&n);
	cr_assert_not_null(list, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			e->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	cr_assert_not_null(e->ctx);
	cr_assert_eq(ibv_query_gid(e->ctx, 1, 0, &e->gid4), 0);
	cr_assert_eq(ibv_query_gid(e->ctx, 1, 1, &e->gid6), 0);
	e->pd = ibv_alloc_pd(e->ctx);
	cr_assert_not_null(e->pd);
	e->buf = calloc(1, T_BUF_SIZE);
	cr_assert_not_null(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, T_BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(e->mr);
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
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };

	cr_assert_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_QKEY), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	cr_assert_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0xfffffe; /* wraps during the tests */
	cr_assert_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

void
t_uc_up(struct t_end *e, const struct t_end *peer, int gid_index, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	cr_assert_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 0xfffff0;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid_index ? peer->gid6 : peer->gid4;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	cr_assert_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0xfffff0;
	cr_assert_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

uint32_t
t_port_mtu(const struct t_end *e)
{
	struct ibv_port_attr pa;

	cr_assert_eq(ibv_query_port(e->ctx, 1, &pa), 0);
	return 128u << pa.active_mtu;
}

int
t_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int ms)
{
	uint64_t end = t_now_ms() + ms;
	int got = 0;

	while (got < n) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		cr_assert_geq(k, 0);
		got += k;
		if (k == 0 && t_now_ms() > end)
			break;
	}
	return got;
}

struct ibv_wc
t_wait(struct ibv_cq *cq, unsigned int ms, const char *what)
{
	struct ibv_wc wc;

	cr_assert_eq(t_poll(cq, &wc, 1, ms), 1, "%s: no completion within %u ms", what, ms);
	return wc;
}

void
t_expect_none(struct ibv_cq *cq, unsigned int ms, const char *what)
{
	struct ibv_wc wc;

	cr_assert_eq(t_poll(cq, &wc, 1, ms), 0, "%s: unexpected completion (wr_id %llu status %d)",
		     what, (unsigned long long)wc.wr_id, wc.status);
}

int
t_post_recv(struct t_end *e, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(e->qp, &w, &bad);
}

void
t_fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 0x9e3779b9u;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)(x >> 7) ^ (uint8_t)i;
	}
}

bool
t_check(const uint8_t *p, size_t n, uint32_t seed)
{
	uint8_t *want = malloc(n ? n : 1);
	bool ok;

	cr_assert_not_null(want);
	t_fill(want, n, seed);
	ok = memcmp(p, want, n) == 0;
	free(want);
	return ok;
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
