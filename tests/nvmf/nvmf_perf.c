/* SPDX-License-Identifier: BSD-3-Clause
 * nvmf-perf: the droce NVMe-oF host's figures against a droce-nvmf target
 * (scripts/nvmf-bench runs both over memif): 4 KiB random read and write
 * IOPS with p50/p99 latency at queue depths 1, 32 and 128, and 128 KiB
 * sequential read and write bandwidth, on one I/O queue.  A benchmark
 * program, not a test; each cell is bounded in time.
 *
 *   nvmf-perf [-a ADDR] [-n NQN] [-t SECONDS] [-s NS_BYTES]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "host.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:droce-nvmf-perf"
#define TMO 5000
#define MAX_SAMPLES (1u << 22)

static const char *addr = "198.18.0.1", *nqn = "nqn.2026-11.dev.droce:nvmf";
static double seconds = 3;
static uint64_t ns_bytes = 64ull << 20;

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
die(const char *what, const char *err)
{
	fprintf(stderr, "nvmf-perf: %s: %s\n", what, err);
	exit(1);
}

static void
connect_ctrl(struct nh_queue *aq, struct nh_queue *ioq, unsigned int depth, size_t slot_size)
{
	struct nvmf_connect_data d = { .cntlid = 0xffff };
	struct nvmf_connect_cmd cmd = { .opcode = NVMF_FABRICS, .fctype = NVMF_FCT_CONNECT,
					.sqsize = NVMF_AQ_DEPTH - 1 };
	struct nvmf_prop_cmd p = { .opcode = NVMF_FABRICS, .fctype = NVMF_FCT_PROP_SET,
				   .offset = NVMF_PROP_CC, .value = 0x00460001 };
	struct nvmf_sqe s = { .opcode = NVMF_ADM_SET_FEATURES, .cdw10 = NVMF_FEAT_NUM_QUEUES };
	struct nvmf_cqe cqe;
	uint16_t cntlid;

	if (nh_connect(aq, addr, NVMF_PORT, 0, NVMF_AQ_DEPTH, 0, 16, 4096, 0, 0) != 0)
		die("admin queue", aq->err);
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", nqn);
	snprintf(d.hostnqn, sizeof(d.hostnqn), HOSTNQN);
	if (nh_cmd(aq, (struct nvmf_sqe *)&cmd, NH_SGL_KEYED, &d, sizeof(d), &cqe, TMO) != 0)
		die("Connect", aq->err);
	cntlid = (uint16_t)cqe.result;
	if (nh_cmd(aq, (struct nvmf_sqe *)&p, NH_SGL_NULL, NULL, 0, NULL, TMO) != 0 ||
	    nh_cmd(aq, &s, NH_SGL_NULL, NULL, 0, NULL, TMO) != 0)
		die("enable", aq->err);
	if (nh_connect(ioq, addr, NVMF_PORT, 1, depth, 0, 16, slot_size, NVMF_ICD_SIZE, 0) != 0)
		die("I/O queue", ioq->err);
	cmd.qid = 1;
	cmd.sqsize = (uint16_t)(depth - 1);
	d.cntlid = cntlid;
	if (nh_cmd(ioq, (struct nvmf_sqe *)&cmd, NH_SGL_INCAPSULE, &d, sizeof(d), NULL, TMO) != 0)
		die("I/O Connect", ioq->err);
}

/* One cell: @qd commands of @bs bytes kept in flight for the run time. */
static void
cell(const char *name, uint8_t opc, bool random, uint32_t bs, unsigned int qd, uint64_t *lat)
{
	static struct nh_queue aq, q;
	uint64_t blocks = ns_bytes / 512, nlb = bs / 512, next_lba = 0, n = 0, bytes = 0, t0, t1, end;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	struct nvmf_cqe cqe;

	connect_ctrl(&aq, &q, qd < 2 ? 2 : qd, bs); /* hsqsize 0 is invalid */
	for (unsigned int i = 0; i < q.depth; i++)
		memset(nh_buf(&q, (int)i), (int)i, bs);
	t0 = nh_now_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	for (;;) {
		bool stop = nh_now_ns() >= end;

		while (!stop && q.outstanding < qd) {
			int slot = nh_slot_get(&q);
			uint64_t lba;
			struct nvmf_sqe s = { .opcode = opc, .nsid = 1, .cdw12 = (uint32_t)nlb - 1 };

			if (random) {
				seed ^= seed << 13;
				seed ^= seed >> 7;
				seed ^= seed << 17;
				lba = (seed % (blocks / nlb)) * nlb;
			} else {
				lba = next_lba;
				next_lba = (next_lba + nlb) % (blocks - blocks % nlb);
			}
			s.cdw10 = (uint32_t)lba;
			s.cdw11 = (uint32_t)(lba >> 32);
			/* writes up to the in-capsule size go in the capsule, as Linux sends them */
			if (nh_submit(&q, slot, &s,
				      opc == NVMF_IO_WRITE && bs <= NVMF_ICD_SIZE ? NH_SGL_INCAPSULE : NH_SGL_KEYED_INV,
				      bs) != 0)
				die("submit", q.err);
		}
		if (q.outstanding == 0)
			break;
		nh_poll(&q);
		if (q.disconnected)
			die(name, q.err);
		for (unsigned int k = 0; k < q.depth; k++) {
			uint64_t start = q.slot[k].t0_ns;

			if (!q.slot[k].busy || !nh_reap(&q, (int)k, &cqe))
				continue;
			if (cqe.status != 0) {
				fprintf(stderr, "nvmf-perf: %s: status 0x%x\n", name, cqe.status >> 1);
				exit(1);
			}
			if (n < MAX_SAMPLES)
				lat[n] = nh_now_ns() - start;
			n++;
			bytes += bs;
		}
	}
	t1 = nh_now_ns();
	qsort(lat, n < MAX_SAMPLES ? n : MAX_SAMPLES, sizeof(*lat), cmp_u64);
	{
		uint64_t m = n < MAX_SAMPLES ? n : MAX_SAMPLES;
		double s = (double)(t1 - t0) / 1e9;

		printf("%-22s qd %3u  %9.0f IOPS  %8.1f MiB/s  p50 %7.1f us  p99 %7.1f us  (%llu I/Os)\n",
		       name, qd, (double)n / s, (double)bytes / s / 1048576.0,
		       m ? (double)lat[m / 2] / 1000 : 0, m ? (double)lat[m * 99 / 100] / 1000 : 0,
		       (unsigned long long)n);
		fflush(stdout);
	}
	nh_close(&q);
	nh_close(&aq);
}

int
main(int argc, char **argv)
{
	static const unsigned int qds[] = { 1, 32, 128 };
	uint64_t *lat = malloc(MAX_SAMPLES * sizeof(*lat));
	int c;

	while ((c = getopt(argc, argv, "a:n:t:s:h")) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'n': nqn = optarg; break;
		case 't': seconds = atof(optarg); break;
		case 's': ns_bytes = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: nvmf-perf [-a ADDR] [-n NQN] [-t SECONDS] [-s NS_BYTES]\n");
			return 2;
		}
	}
	if (lat == NULL || seconds <= 0 || seconds > 600 || ns_bytes < (1u << 20))
		return 2;
	/* the link: droce starts on the first device query */
	{
		struct ibv_device **l = ibv_get_device_list(NULL);

		if (l == NULL)
			die("droce", droce_last_error());
		ibv_free_device_list(l);
	}
	for (unsigned int i = 0; i < 3; i++)
		cell("4k randread", NVMF_IO_READ, true, 4096, qds[i], lat);
	for (unsigned int i = 0; i < 3; i++)
		cell("4k randwrite", NVMF_IO_WRITE, true, 4096, qds[i], lat);
	cell("128k seqread", NVMF_IO_READ, false, 131072, 32, lat);
	cell("128k seqwrite", NVMF_IO_WRITE, false, 131072, 32, lat);
	free(lat);
	droce_engines_stop(); /* before the ports go */
	droce_stop();
	droce_shutdown();
	return 0;
}
