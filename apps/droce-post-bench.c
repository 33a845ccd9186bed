/* SPDX-License-Identifier: BSD-3-Clause
 * droce-post-bench: what posting one send WR costs the application thread,
 * ibv_post_send against the ibv_wr_* builder, without the engine's work in
 * the figure.
 *
 * The embedded loopback config with the fallback progress thread off
 * ([engines] fallback_us = 0), so nothing executes WRs while they are being
 * posted: a round measures the thread's CPU time (CLOCK_THREAD_CPUTIME_ID,
 * so time the thread spends preempted by other load does not count) while it
 * posts N RDMA WRITEs of SIZE bytes,
 * -l WRs per ibv_post_send chain or per ibv_wr_start ... ibv_wr_complete
 * batch (the last WR signaled), then polls until the engine has executed
 * them all.  Rounds alternate between the two ways; the minimum and the
 * median nanoseconds per WR over the rounds are printed.
 *
 *   droce-post-bench [-s SIZE] [-n N] [-r ROUNDS] [-l WRS] [-I]   (-I: inline)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>

#include <infiniband/verbs.h>

#include <droce/config.h>
#include <droce/droce.h>

#include "bench_pair.h"

#define MAX_N 4000

static struct ibv_context *ctx[2];
static struct ibv_pd *pd[2];
static struct ibv_cq *cq[2];
static struct ibv_qp *qp[2];
static struct ibv_mr *mr[2];
static uint8_t *buf[2];

static void
die(const char *what, int e)
{
	fprintf(stderr, "droce-post-bench: %s: %s\n", what, strerror(e));
	exit(1);
}

static void
setup(uint32_t sq)
{
	struct ibv_device **list = bench_pair_start();
	union ibv_gid gid[2];

	for (int k = 0; k < 2; k++) {
		struct ibv_qp_init_attr_ex ia = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = sq, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1, .max_inline_data = 256 },
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE,
		};

		ctx[k] = ibv_open_device(list[k]);
		if (ctx[k] == NULL)
			die("ibv_open_device", errno);
		pd[k] = ibv_alloc_pd(ctx[k]);
		buf[k] = calloc(1, 1 << 20);
		mr[k] = ibv_reg_mr(pd[k], buf[k], 1 << 20,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		cq[k] = ibv_create_cq(ctx[k], 4 * MAX_N, NULL, NULL, 0);
		if (pd[k] == NULL || mr[k] == NULL || cq[k] == NULL)
			die("pd/mr/cq", errno);
		ia.pd = pd[k];
		ia.send_cq = ia.recv_cq = cq[k];
		qp[k] = ibv_create_qp_ex(ctx[k], &ia);
		if (qp[k] == NULL)
			die("ibv_create_qp_ex", errno);
		bench_pair_init(ctx[k], qp[k], &gid[k]);
	}
	bench_pair_connect(qp, gid);
	ibv_free_device_list(list);
}

static uint64_t
thread_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Posts @n WRITEs, @l per call; returns the CPU time (ns) the posting took. */
static uint64_t
round_once(bool builder, uint32_t n, uint32_t l, uint32_t size, bool inl)
{
	static struct ibv_send_wr wr[64];
	static struct ibv_sge sge[64];
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp[0]);
	uint64_t t0, t1, id = 0;
	unsigned int flags = inl ? IBV_SEND_INLINE : 0;
	struct ibv_wc wc;
	int rc = 0;

	for (uint32_t j = 0; j < l; j++) {
		sge[j] = (struct ibv_sge){ (uintptr_t)buf[0] + 64 * j, size, mr[0]->lkey };
		wr[j] = (struct ibv_send_wr){ .sg_list = &sge[j], .num_sge = 1,
					      .opcode = IBV_WR_RDMA_WRITE, .send_flags = flags,
					      .next = j + 1 < l ? &wr[j + 1] : NULL };
		wr[j].wr.rdma.rkey = mr[1]->rkey;
		wr[j].wr.rdma.remote_addr = (uintptr_t)buf[1] + 64 * j;
	}
	t0 = thread_ns();
	for (uint32_t i = 0; i < n; i += l) {
		bool last = i + l >= n;

		if (!builder) {
			struct ibv_send_wr *bad;

			wr[0].wr_id = id++;
			wr[l - 1].send_flags = flags | (last ? IBV_SEND_SIGNALED : 0);
			rc = ibv_post_send(qp[0], wr, &bad);
		} else {
			ibv_wr_start(x);
			for (uint32_t j = 0; j < l; j++) {
				x->wr_id = id++;
				x->wr_flags = last && j + 1 == l ? IBV_SEND_SIGNALED : 0;
				ibv_wr_rdma_write(x, mr[1]->rkey, (uintptr_t)buf[1] + 64 * j);
				if (inl)
					ibv_wr_set_inline_data(x, buf[0] + 64 * j, size);
				else
					ibv_wr_set_sge(x, mr[0]->lkey, (uintptr_t)buf[0] + 64 * j,
						       size);
			}
			rc = ibv_wr_complete(x);
		}
		if (rc != 0)
			die("post", rc);
	}
	t1 = thread_ns();
	/* let the engine execute them: the one signaled WR completes last */
	for (uint64_t end = rte_rdtsc() + 5 * rte_get_tsc_hz();;) {
		int got = ibv_poll_cq(cq[0], 1, &wc);

		if (got == 1) {
			if (wc.status != IBV_WC_SUCCESS)
				die("completion", EIO);
			break;
		}
		if (rte_rdtsc() > end)
			die("no completion within 5 s", ETIMEDOUT);
	}
	return t1 - t0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	uint32_t size = 64, n = 512, rounds = 200, l = 1;
	bool inl = false;
	uint64_t *c[2];
	double ns;
	int opt;

	while ((opt = getopt(argc, argv, "s:n:r:l:Ih")) != -1) {
		switch (opt) {
		case 's':
			size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			n = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			rounds = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'l':
			l = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'I':
			inl = true;
			break;
		default:
			fprintf(stderr, "usage: droce-post-bench [-s SIZE] [-n N] [-r ROUNDS] "
					"[-l WRS] [-I]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (n == 0 || n > MAX_N || l == 0 || l > 64 || n % l != 0 || size > 1024 ||
	    (inl && size > 256) || rounds == 0 || rounds > 10000) {
		fprintf(stderr, "droce-post-bench: need 0 < N <= %u, a multiple of -l (<= 64), "
				"SIZE <= 1024 (256 inline), 0 < ROUNDS <= 10000\n", MAX_N);
		return 2;
	}
	setup(n + 64); /* room for a round, and no more: the slots stay in cache */
	c[0] = calloc(rounds, sizeof(uint64_t));
	c[1] = calloc(rounds, sizeof(uint64_t));
	round_once(false, n, l, size, inl); /* warm up both */
	round_once(true, n, l, size, inl);
	for (uint32_t r = 0; r < rounds; r++)
		for (int b = 0; b < 2; b++)
			c[b][r] = round_once(b == 1, n, l, size, inl);
	ns = 1.0 / (double)n;
	printf("posting %u RDMA WRITEs of %u B%s, %u per call, %u rounds (ns per WR)\n", n, size,
	       inl ? " inline" : "", l, rounds);
	printf("%-16s %10s %10s\n", "", "min", "median");
	for (int b = 0; b < 2; b++) {
		qsort(c[b], rounds, sizeof(uint64_t), cmp_u64);
		printf("%-16s %10.1f %10.1f\n", b ? "ibv_wr_*" : "ibv_post_send",
		       (double)c[b][0] * ns, (double)c[b][rounds / 2] * ns);
	}
	return 0;
}
