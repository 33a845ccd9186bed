/* SPDX-License-Identifier: BSD-3-Clause
 * droce-idle-bench: what an idle engine pass costs, for scripts/profile-insns
 * ("idle" test: callgrind instructions per call, two runs' difference).
 *
 * The embedded loopback config (one engine, a ring port pair) with the
 * fallback progress thread off, an RC QP pair connected between droce0 and
 * droce1, a few WRITEs sent and completed (so the QPs have been active and
 * settled back out of the active list and the timer wheel), then N calls of
 * ibv_poll_cq on the empty CQ: each drives the engine through one pass that
 * finds nothing to do, which is what a polling application, a thread
 * waiting in ibv_get_cq_event and the fallback thread run between frames.
 * Checks at the end that every pass was idle: no frame, no completion.
 *
 *   droce-idle-bench [-n N]   (default 100000)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include <infiniband/verbs.h>

#include <droce/config.h>
#include <droce/droce.h>

#include "bench_pair.h"

static struct ibv_context *ctx[2];
static struct ibv_pd *pd[2];
static struct ibv_cq *cq[2];
static struct ibv_qp *qp[2];
static struct ibv_mr *mr[2];
static uint8_t *buf[2];

static void
die(const char *what, int e)
{
	fprintf(stderr, "droce-idle-bench: %s: %s\n", what, strerror(e));
	exit(1);
}

static void
setup(void)
{
	struct ibv_device **list = bench_pair_start();
	union ibv_gid gid[2];

	for (int k = 0; k < 2; k++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 64, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		ctx[k] = ibv_open_device(list[k]);
		if (ctx[k] == NULL)
			die("ibv_open_device", errno);
		pd[k] = ibv_alloc_pd(ctx[k]);
		buf[k] = calloc(1, 4096);
		mr[k] = pd[k] == NULL || buf[k] == NULL ? NULL :
			ibv_reg_mr(pd[k], buf[k], 4096,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		cq[k] = ibv_create_cq(ctx[k], 256, NULL, NULL, 0);
		if (pd[k] == NULL || mr[k] == NULL || cq[k] == NULL)
			die("pd/mr/cq", errno);
		ia.send_cq = ia.recv_cq = cq[k];
		qp[k] = ibv_create_qp(pd[k], &ia);
		if (qp[k] == NULL)
			die("ibv_create_qp", errno);
		bench_pair_init(ctx[k], qp[k], &gid[k]);
	}
	bench_pair_connect(qp, gid);
	ibv_free_device_list(list);
}

/* One signaled 64 B WRITE droce0 -> droce1, polled to its completion. */
static void
write_once(uint32_t i)
{
	struct ibv_sge sge = { (uintptr_t)buf[0], 64, mr[0]->lkey };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	uint64_t end = rte_rdtsc() + 5 * rte_get_tsc_hz();
	int rc;

	memset(buf[0], (int)(i + 1), 64);
	wr.wr.rdma.rkey = mr[1]->rkey;
	wr.wr.rdma.remote_addr = (uintptr_t)buf[1];
	rc = ibv_post_send(qp[0], &wr, &bad);
	if (rc != 0)
		die("ibv_post_send", rc);
	while ((rc = ibv_poll_cq(cq[0], 1, &wc)) == 0)
		if (rte_rdtsc() > end)
			die("no completion within 5 s", ETIMEDOUT);
	if (rc < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != i)
		die("completion", EIO);
	if (buf[1][63] != (uint8_t)(i + 1))
		die("the WRITE's bytes", EIO);
}

int
main(int argc, char **argv)
{
	unsigned long n = 100000;
	struct ibv_wc wc;
	int opt;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n') {
			fprintf(stderr, "usage: droce-idle-bench [-n N]\n");
			return 2;
		}
		n = strtoul(optarg, NULL, 0);
	}
	setup();
	for (uint32_t i = 0; i < 8; i++)
		write_once(i);
	/* the last ACK came with the completion; a few passes settle the QPs */
	for (int i = 0; i < 64; i++)
		(void)ibv_poll_cq(cq[1], 1, &wc);
	for (unsigned long i = 0; i < n; i++)
		if (ibv_poll_cq(cq[0], 1, &wc) != 0)
			die("a completion while idle", EIO);
	if (ibv_poll_cq(cq[1], 1, &wc) != 0)
		die("a completion while idle", EIO);
	printf("%lu idle polls\n", n);
	for (int k = 1; k >= 0; k--) {
		ibv_destroy_qp(qp[k]);
		ibv_destroy_cq(cq[k]);
		ibv_dereg_mr(mr[k]);
		ibv_dealloc_pd(pd[k]);
		ibv_close_device(ctx[k]);
		free(buf[k]);
	}
	droce_stop();
	return 0;
}
