/* SPDX-License-Identifier: BSD-3-Clause
 * Scale (issue 12 §1): many RC QPs on one engine.  The QP table grows page
 * by page, so the count is bounded by the QPN space (262,143 per engine,
 * droce_dp_max_qps()), not by a fixed table.  The test creates N QPs
 * (DROCE_SCALE_QPS, default 10,000; 100,000 for the full run), connects them
 * in pairs (port0 <-> port1), moves data on a sample of pairs (a WRITE and a
 * SEND each, bytes checked), destroys them all, and reports the times and
 * the resident memory per QP.  Every QPN is distinct and names its QP.
 *
 *   DROCE_SCALE_QPS=100000 meson test -C build dataplane_scale
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(scale, .fini = h_stop, .timeout = 600);

#define SAMPLE_PAIRS 64
#define LEN 4096

static long
rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

Test(scale, many_rc_qps_connected_in_pairs)
{
	unsigned long n = h_env_ulong("DROCE_SCALE_QPS", 10000) & ~1ul;
	struct h_cfg cfg = { .mem_mb = 512 };
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_qp_caps caps = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
				      .max_recv_sge = 1 };
	struct droce_cq *scq[2], *rcq[2];
	struct droce_qp **qp;
	uint32_t *qpn;
	struct h_buf lb, rb;
	uint64_t t0, t_create, t_connect, t_data, t_destroy;
	long rss0, rss1;
	double queue_b = 0, beyond_b;
	unsigned long step;

	cr_assert_geq(n, 2);
	h_start(&cfg, false);
	cr_assert_geq(droce_dp_max_qps(), n, "droce_dp_max_qps() %u < %lu", droce_dp_max_qps(), n);
	qp = calloc(n, sizeof(*qp));
	qpn = calloc(n, sizeof(*qpn));
	cr_assert(qp && qpn);
	for (unsigned int s = 0; s < 2; s++) {
		scq[s] = h_cq_create(4 * SAMPLE_PAIRS);
		rcq[s] = h_cq_create(4 * SAMPLE_PAIRS);
	}
	h_buf_init(&lb, (size_t)SAMPLE_PAIRS * LEN, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	h_buf_init(&rb, (size_t)SAMPLE_PAIRS * LEN * 2, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);

	/* create: QP 2k on port0, 2k + 1 on port1 */
	rss0 = rss_kib();
	t0 = tc_now_ms();
	for (unsigned long i = 0; i < n; i++) {
		qp[i] = droce_qp_create(DROCE_QPT_RC, &caps, scq[i & 1], rcq[i & 1], H_PD, i & 1);
		cr_assert_not_null(qp[i], "droce_qp_create #%lu: %s", i, strerror(errno));
		qpn[i] = droce_qp_num(qp[i]);
	}
	t_create = tc_now_ms() - t0;

	/* connect in pairs; then wait until the engine applied every modify */
	t0 = tc_now_ms();
	for (unsigned long i = 0; i < n; i += 2) {
		h_connect_nowait(qp[i], 0, 1, qpn[i + 1], H_PSN_A, H_PSN_B, &o);
		h_connect_nowait(qp[i + 1], 1, 0, qpn[i], H_PSN_B, H_PSN_A, &o);
	}
	for (unsigned long i = 0; i < n; i++)
		h_settle(qp[i]);
	t_connect = tc_now_ms() - t0;
	rss1 = rss_kib();
	for (unsigned long i = 0; i < n; i++) {
		cr_assert_eq(h_qp_state(qp[i]), DROCE_QPS_RTS, "QP #%lu not in RTS", i);
		queue_b += (double)droce_qp_queue_bytes(qp[i]);
	}
	/* issue 12 §2: an idle QP costs at most 2 KiB beyond its queues */
	beyond_b = (1024.0 * (double)(rss1 - rss0) - queue_b) / (double)n;
	if (n >= 10000)
		cr_expect_leq(beyond_b, 2048.0, "%.0f bytes of RSS per idle QP beyond its queues (%.0f)",
			      beyond_b, queue_b / (double)n);

	/* every QPN distinct */
	{
		uint32_t *sorted = malloc(n * sizeof(*sorted));

		cr_assert_not_null(sorted);
		memcpy(sorted, qpn, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_u32);
		for (unsigned long i = 1; i < n; i++)
			cr_assert_neq(sorted[i], sorted[i - 1], "QPN %#x handed out twice", sorted[i]);
		cr_assert_lt(sorted[n - 1], 1u << 24);
		free(sorted);
	}

	/* data on a sample of pairs spread over the table: a WRITE and a SEND each */
	step = RTE_MAX(n / 2 / SAMPLE_PAIRS, 1ul);
	h_fill(lb.p, (size_t)SAMPLE_PAIRS * LEN, 77);
	t0 = tc_now_ms();
	for (unsigned int k = 0; k < SAMPLE_PAIRS && k * step < n / 2; k++) {
		unsigned long pi = (unsigned long)k * step;
		struct droce_qp *a = qp[2 * pi], *b = qp[2 * pi + 1];
		struct droce_wqe w;
		struct droce_rqe r;
		struct droce_cqe c;

		r = h_rqe(k);
		h_rqe_sge(&r, &rb, ((size_t)SAMPLE_PAIRS + k) * LEN, LEN);
		h_post_recv(b, &r);
		w = h_wqe(k, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
		h_wqe_sge(&w, &lb, (size_t)k * LEN, LEN);
		w.remote_addr = h_va(&rb, (size_t)k * LEN);
		w.rkey = rb.mr.rkey;
		h_post_send(a, &w);
		w = h_wqe(0x10000 + k, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
		h_wqe_sge(&w, &lb, (size_t)k * LEN, LEN);
		h_post_send(a, &w);
		c = h_poll1(scq[0], 10000, "sample WRITE");
		cr_assert_eq(c.status, DROCE_WC_SUCCESS, "pair %lu WRITE: status %u", pi, c.status);
		cr_assert_eq(c.qp_num, qpn[2 * pi]);
		c = h_poll1(scq[0], 10000, "sample SEND");
		cr_assert_eq(c.status, DROCE_WC_SUCCESS, "pair %lu SEND: status %u", pi, c.status);
		c = h_poll1(rcq[1], 10000, "sample receive");
		cr_assert_eq(c.status, DROCE_WC_SUCCESS);
		cr_assert_eq(c.wr_id, k);
		cr_assert_eq(c.qp_num, qpn[2 * pi + 1]);
		cr_assert_eq(c.byte_len, LEN);
		cr_assert_eq(memcmp(rb.p + (size_t)k * LEN, lb.p + (size_t)k * LEN, LEN), 0,
			     "pair %lu: WRITE bytes", pi);
		cr_assert_eq(memcmp(rb.p + ((size_t)SAMPLE_PAIRS + k) * LEN, lb.p + (size_t)k * LEN, LEN),
			     0, "pair %lu: SEND bytes", pi);
	}
	t_data = tc_now_ms() - t0;

	t0 = tc_now_ms();
	for (unsigned long i = 0; i < n; i++)
		cr_assert_eq(droce_qp_destroy(qp[i]), 0);
	t_destroy = tc_now_ms() - t0;
	cr_log_info("%lu RC QPs on 1 engine: create %" PRIu64 " ms (%.1f us/QP), connect %" PRIu64
		    " ms (%.1f us/QP, 3 modifies each), sample of %d pairs %" PRIu64 " ms, destroy %" PRIu64
		    " ms (%.1f us/QP); RSS %+ld KiB for the connected QPs (%.2f KiB/QP, queues of 2+2 WQEs: %.0f B/QP, the rest %.0f B/QP)",
		    n, t_create, 1000.0 * (double)t_create / (double)n, t_connect,
		    1000.0 * (double)t_connect / (double)n, SAMPLE_PAIRS, t_data, t_destroy,
		    1000.0 * (double)t_destroy / (double)n, rss1 - rss0,
		    (double)(rss1 - rss0) / (double)n, queue_b / (double)n, beyond_b);
	fprintf(stderr,
		"scale: %lu QPs: create %" PRIu64 " ms, connect %" PRIu64 " ms, destroy %" PRIu64
		" ms, RSS %.2f KiB/QP (%.0f B beyond its queues)\n",
		n, t_create, t_connect, t_destroy, (double)(rss1 - rss0) / (double)n, beyond_b);

	/* the indices came back: as many QPs can be created again */
	for (unsigned long i = 0; i < n; i++) {
		qp[i] = droce_qp_create(DROCE_QPT_RC, &caps, scq[0], rcq[0], H_PD, 0);
		cr_assert_not_null(qp[i], "re-create #%lu: %s", i, strerror(errno));
	}
	for (unsigned long i = 0; i < n; i++)
		cr_assert_eq(droce_qp_destroy(qp[i]), 0);
	free(qp);
	free(qpn);
}

/*
 * CQs are not DPDK memzones (a process has 2,560 of those): 5,000 CQs, the
 * last two carrying a QP pair's traffic, all destroyed.
 */
Test(scale, more_cqs_than_dpdk_memzones)
{
	enum { NCQ = 5000 };
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				      .max_recv_sge = 1 };
	struct h_cfg cfg = { 0 };
	struct droce_cq **cq = calloc(NCQ, sizeof(*cq));
	struct droce_qp *a, *b;
	struct h_buf lb, rb;
	struct droce_wqe w;
	struct droce_cqe c;

	cr_assert_not_null(cq);
	h_start(&cfg, false);
	for (unsigned int i = 0; i < NCQ; i++) {
		cq[i] = droce_cq_create(16, NULL, NULL, NULL);
		cr_assert_not_null(cq[i], "CQ #%u: %s", i, strerror(errno));
		cr_assert_eq(droce_cq_capacity(cq[i]), 16);
	}
	h_buf_init(&lb, LEN, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, LEN, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	h_fill(lb.p, LEN, 5);
	a = droce_qp_create(DROCE_QPT_RC, &caps, cq[NCQ - 1], cq[NCQ - 1], H_PD, 0);
	b = droce_qp_create(DROCE_QPT_RC, &caps, cq[NCQ - 2], cq[NCQ - 2], H_PD, 1);
	cr_assert(a && b);
	h_connect(a, 0, 1, droce_qp_num(b), H_PSN_A, H_PSN_B, &o);
	h_connect(b, 1, 0, droce_qp_num(a), H_PSN_B, H_PSN_A, &o);
	w = h_wqe(7, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, LEN);
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	h_post_send(a, &w);
	c = h_poll1(cq[NCQ - 1], 10000, "WRITE on the 5,000th CQ");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	cr_assert_eq(c.wr_id, 7);
	cr_assert_eq(h_check_fill(rb.p, LEN, 5), -1);
	cr_assert_eq(droce_qp_destroy(a), 0);
	cr_assert_eq(droce_qp_destroy(b), 0);
	for (unsigned int i = 0; i < NCQ; i++)
		droce_cq_destroy(cq[i]);
	free(cq);
}
