/* SPDX-License-Identifier: BSD-3-Clause
 * Several posters and several pollers on shared CQs, through the verbs API,
 * as a plain program (not Criterion, whose sandbox cannot run under
 * ThreadSanitizer): scripts/tsan runs it in the -Db_sanitize=thread build,
 * the mt suite runs it in every build.
 *
 * droce0 (A) and droce1 (B) on the in-memory pair, N RC QP pairs.  Poster
 * thread i sends K SENDs with immediate data (qp << 20 | seq) and a payload
 * derived from it on A's QP i, never more than the send queue holds.  All of
 * A's QPs share one send CQ and all of B's one receive CQ; M poller threads
 * drain both at once (rdma-core lets several threads poll one CQ), check
 * every payload, mark every message in a per-QP bitmap, and repost the
 * receive buffer they completed.  Exit 0 only when every message arrived
 * exactly once with its bytes, every completion succeeded, within the time.
 *
 * usage: mt_stress [--dedicated] [-q QPS] [-p POLLERS] [-n MSGS] [-t SECONDS]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include "tests/common/pair_config.h"

#define MAX_QPS 16
#define MAX_POLLERS 8
#define SQ 64
#define RQ 64
#define MSG 64

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[MAX_QPS];
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static struct end A, B;
static unsigned int n_qps = 4, n_pollers = 3, n_msgs = 20000, limit_s = 60;
static _Atomic uint64_t sent_ok, recv_ok, failures;
static _Atomic uint32_t inflight[MAX_QPS];
static _Atomic uint8_t *seen[MAX_QPS];
static _Atomic bool stop;
static struct timespec t0;

static void
die(const char *what)
{
	fprintf(stderr, "mt_stress: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double
elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
}

static void
pattern(uint8_t *p, uint32_t tag)
{
	for (unsigned int i = 0; i < MSG; i++)
		p[i] = (uint8_t)(tag * 31u + i * 7u);
}

static void
open_end(struct end *e, struct ibv_device *dev)
{
	e->ctx = ibv_open_device(dev);
	if (e->ctx == NULL || ibv_query_gid(e->ctx, 1, 0, &e->gid) != 0)
		die("open");
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, MAX_QPS * (SQ + RQ), NULL, NULL, 0);
	e->buf = calloc(MAX_QPS, (SQ + RQ) * MSG);
	if (e->pd == NULL || e->cq == NULL || e->buf == NULL)
		die("pd/cq");
	e->mr = ibv_reg_mr(e->pd, e->buf, MAX_QPS * (SQ + RQ) * MSG, IBV_ACCESS_LOCAL_WRITE);
	if (e->mr == NULL)
		die("mr");
	for (unsigned int i = 0; i < n_qps; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .send_cq = e->cq, .recv_cq = e->cq,
			.cap = { .max_send_wr = SQ, .max_recv_wr = RQ, .max_send_sge = 1, .max_recv_sge = 1 },
		};

		e->qp[i] = ibv_create_qp(e->pd, &ia);
		if (e->qp[i] == NULL)
			die("qp");
	}
}

static void
qp_up(struct ibv_qp *qp, const union ibv_gid *dgid, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dqpn,
				  .rq_psn = 7, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
				  .ah_attr = { .is_global = 1, .port_num = 1,
					       .grh = { .dgid = *dgid, .hop_limit = 64 } } };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	/* RNR retries forever: a poller may be late reposting a receive */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 7, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

static uint8_t *
rbuf(unsigned int qp, unsigned int slot)
{
	return B.buf + ((size_t)qp * (SQ + RQ) + SQ + slot) * MSG;
}

static int
post_recv(unsigned int qp, unsigned int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)rbuf(qp, slot), .length = MSG, .lkey = B.mr->lkey };
	struct ibv_recv_wr w = { .wr_id = (uint64_t)qp << 32 | slot, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(B.qp[qp], &w, &bad);
}

static void *
poster(void *arg)
{
	unsigned int q = (unsigned int)(uintptr_t)arg;

	for (uint32_t seq = 0; seq < n_msgs && !atomic_load(&stop);) {
		uint8_t *p = A.buf + ((size_t)q * (SQ + RQ) + seq % SQ) * MSG;
		struct ibv_sge sge = { .addr = (uintptr_t)p, .length = MSG, .lkey = A.mr->lkey };
		struct ibv_send_wr w = { .wr_id = (uint64_t)q << 32 | seq, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
					 .imm_data = htonl(q << 20 | seq) };
		struct ibv_send_wr *bad;
		int rc;

		if (atomic_load(&inflight[q]) >= SQ) {
			struct ibv_wc wc;

			(void)ibv_poll_cq(A.cq, 0, &wc); /* co-located: drive the engines */
			sched_yield();
			continue;
		}
		pattern(p, q << 20 | seq);
		atomic_fetch_add(&inflight[q], 1);
		rc = ibv_post_send(A.qp[q], &w, &bad);
		if (rc != 0) {
			atomic_fetch_sub(&inflight[q], 1);
			if (rc == ENOMEM)
				continue; /* the engine has not retired enough yet */
			fprintf(stderr, "mt_stress: ibv_post_send: %s\n", strerror(rc));
			atomic_fetch_add(&failures, 1);
			return NULL;
		}
		seq++;
	}
	return NULL;
}

static void
handle(const struct ibv_wc *wc)
{
	unsigned int q = (unsigned int)(wc->wr_id >> 32), slot = (unsigned int)wc->wr_id;

	if (wc->status != IBV_WC_SUCCESS || q >= n_qps) {
		fprintf(stderr, "mt_stress: completion wr_id %#llx opcode %d: %s\n",
			(unsigned long long)wc->wr_id, wc->opcode, ibv_wc_status_str(wc->status));
		atomic_fetch_add(&failures, 1);
		return;
	}
	if (wc->opcode == IBV_WC_SEND) {
		atomic_fetch_sub(&inflight[q], 1);
		atomic_fetch_add(&sent_ok, 1);
		return;
	}
	/* a receive on B */
	{
		uint32_t tag = ntohl(wc->imm_data), seq = tag & 0xfffff;
		uint8_t want[MSG];

		pattern(want, tag);
		if (!(wc->wc_flags & IBV_WC_WITH_IMM) || tag >> 20 != q || seq >= n_msgs ||
		    wc->byte_len != MSG || memcmp(rbuf(q, slot), want, MSG) != 0 ||
		    atomic_exchange(&seen[q][seq], 1) != 0) {
			fprintf(stderr, "mt_stress: QP %u message %u: wrong, duplicated or corrupt\n", q, seq);
			atomic_fetch_add(&failures, 1);
		} else {
			atomic_fetch_add(&recv_ok, 1);
		}
		if (post_recv(q, slot) != 0) {
			fprintf(stderr, "mt_stress: ibv_post_recv failed\n");
			atomic_fetch_add(&failures, 1);
		}
	}
}

static void *
poller(void *arg)
{
	struct ibv_wc wc[16];

	(void)arg;
	while (!atomic_load(&stop)) {
		int n = ibv_poll_cq(A.cq, 16, wc);

		for (int i = 0; i < n; i++)
			handle(&wc[i]);
		n = ibv_poll_cq(B.cq, 16, wc);
		for (int i = 0; i < n; i++)
			handle(&wc[i]);
		if (n < 0)
			atomic_fetch_add(&failures, 1);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = { { "dedicated", no_argument, NULL, 'd' }, { 0 } };
	struct tc_pair pair = { .engines = 1 };
	char cfg[4096], path[] = "/tmp/droce-mt-XXXXXX";
	pthread_t post_t[MAX_QPS], poll_t[MAX_POLLERS];
	struct ibv_device **list;
	int c, fd, n;
	uint64_t total;

	while ((c = getopt_long(argc, argv, "q:p:n:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': pair.lcores = "1"; pair.eal_extra = "-l 0-1"; break;
		case 'q': n_qps = (unsigned int)atoi(optarg); break;
		case 'p': n_pollers = (unsigned int)atoi(optarg); break;
		case 'n': n_msgs = (unsigned int)atoi(optarg); break;
		case 't': limit_s = (unsigned int)atoi(optarg); break;
		default: fprintf(stderr, "usage: %s [--dedicated] [-q QPS] [-p POLLERS] [-n MSGS] [-t S]\n", argv[0]); return 2;
		}
	}
	if (n_qps < 1 || n_qps > MAX_QPS || n_pollers < 1 || n_pollers > MAX_POLLERS || n_msgs < 1 ||
	    n_msgs > (1u << 20))
		return 2;
	n = tc_pair_config(cfg, sizeof(cfg), &pair);
	fd = mkstemp(path);
	if (n < 0 || fd < 0 || write(fd, cfg, (size_t)n) != n)
		die("config");
	close(fd);
	setenv("DROCE_CONFIG", path, 1);
	list = ibv_get_device_list(&n);
	unlink(path);
	if (list == NULL || n < 2)
		die("devices");
	open_end(&A, list[0]);
	open_end(&B, list[1]);
	ibv_free_device_list(list);
	for (unsigned int i = 0; i < n_qps; i++) {
		qp_up(A.qp[i], &B.gid, B.qp[i]->qp_num);
		qp_up(B.qp[i], &A.gid, A.qp[i]->qp_num);
		seen[i] = calloc(n_msgs, 1);
		for (unsigned int s = 0; s < RQ; s++)
			if (seen[i] == NULL || post_recv(i, s) != 0)
				die("receives");
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int i = 0; i < n_pollers; i++)
		pthread_create(&poll_t[i], NULL, poller, NULL);
	for (unsigned int i = 0; i < n_qps; i++)
		pthread_create(&post_t[i], NULL, poster, (void *)(uintptr_t)i);
	total = (uint64_t)n_qps * n_msgs;
	while ((atomic_load(&recv_ok) < total || atomic_load(&sent_ok) < total) &&
	       atomic_load(&failures) == 0 && elapsed() < limit_s)
		usleep(10000);
	atomic_store(&stop, true);
	for (unsigned int i = 0; i < n_qps; i++)
		pthread_join(post_t[i], NULL);
	for (unsigned int i = 0; i < n_pollers; i++)
		pthread_join(poll_t[i], NULL);
	printf("mt_stress: %u QPs x %u messages, %u pollers%s: %llu sent, %llu received, %llu failures, "
	       "%.2f s\n", n_qps, n_msgs, n_pollers, pair.lcores ? ", dedicated engine" : "",
	       (unsigned long long)atomic_load(&sent_ok), (unsigned long long)atomic_load(&recv_ok),
	       (unsigned long long)atomic_load(&failures), elapsed());
	return atomic_load(&failures) == 0 && atomic_load(&recv_ok) == total &&
			       atomic_load(&sent_ok) == total
		       ? 0
		       : 1;
}
