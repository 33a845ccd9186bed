/* SPDX-License-Identifier: BSD-3-Clause
 * The droce end of the hostile_veth suite (run_hostile_veth.py drives it):
 * one device (DROCE_CONFIG: an af_packet port on a veth end), an MR of
 * MR_LEN bytes between two guard areas, NQP RC QPs in RTS towards the
 * scapy peer (198.18.3.2, QPNs PEER_QPN + i, expected PSN RQ_PSN) and one UD
 * QP (Q_Key UD_QKEY) with receives posted.  Prints one line
 *   ready rc=QPN,QPN,... ud=QPN rkey=R va=V len=L
 * then serves commands on stdin, one per line, while it polls its CQs (the
 * engines are co-located: polling drives them):
 *   stats   one line: "stats name=value ..." (engine 0, port 0, and
 *           mr_sum (FNV-1a of the MR), guard_ok, qp<i>_state, ud_recvs)
 *   quit    exit 0
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <droce/stats.h>

#define NQP 8
#define MR_LEN 4096
#define GUARD 4096
#define PEER_QPN 0x100
#define RQ_PSN 0x1000
#define UD_QKEY 0x11111111u

static void
die(const char *what)
{
	fprintf(stderr, "hv_target: %s\n", what);
	exit(1);
}

static uint64_t
fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void
print_list(const char *prefix, const struct droce_stat *s, int n)
{
	for (int i = 0; i < n; i++)
		if (s[i].value)
			printf(" %s%s=%" PRIu64, prefix, s[i].name, s[i].value);
}

int
main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *ud_mr;
	struct ibv_qp *qp[NQP], *ud;
	union ibv_gid peer = { 0 };
	uint8_t *area, *mem, ud_buf[16][256];
	uint64_t ud_recvs = 0;
	char line[64];
	int n;

	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1 || (ctx = ibv_open_device(list[0])) == NULL)
		die("no droce device");
	ibv_free_device_list(list);
	peer.raw[10] = peer.raw[11] = 0xff;
	inet_pton(AF_INET, "198.18.3.2", &peer.raw[12]);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	area = aligned_alloc(4096, MR_LEN + 2 * GUARD);
	if (pd == NULL || cq == NULL || area == NULL)
		die("pd/cq/memory");
	memset(area, 0xa5, MR_LEN + 2 * GUARD);
	mem = area + GUARD;
	for (unsigned int i = 0; i < MR_LEN; i++)
		mem[i] = (uint8_t)(i * 7);
	mr = ibv_reg_mr(pd, mem, MR_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	ud_mr = ibv_reg_mr(pd, ud_buf, sizeof(ud_buf), IBV_ACCESS_LOCAL_WRITE);
	if (mr == NULL || ud_mr == NULL)
		die("ibv_reg_mr");
	for (unsigned int i = 0; i < NQP; i++) {
		struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
					       .cap = { .max_send_wr = 8, .max_recv_wr = 8,
							.max_send_sge = 1, .max_recv_sge = 1 } };
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
							    IBV_ACCESS_REMOTE_READ |
							    IBV_ACCESS_REMOTE_ATOMIC };

		qp[i] = ibv_create_qp(pd, &ia);
		if (qp[i] == NULL ||
		    ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						     IBV_QP_ACCESS_FLAGS))
			die("RC QP to INIT");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = PEER_QPN + i;
		a.rq_psn = RQ_PSN;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = peer;
		a.ah_attr.grh.hop_limit = 64;
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("RC QP to RTR");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = 0x2000;
		a.max_rd_atomic = 4;
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						     IBV_QP_MAX_QP_RD_ATOMIC))
			die("RC QP to RTS");
	}
	{
		struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq,
					       .cap = { .max_send_wr = 8, .max_recv_wr = 16,
							.max_send_sge = 1, .max_recv_sge = 1 } };
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };

		ud = ibv_create_qp(pd, &ia);
		if (ud == NULL ||
		    ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
			die("UD QP to INIT");
		for (unsigned int i = 0; i < 16; i++) {
			struct ibv_sge sge = { (uintptr_t)ud_buf[i], 256, ud_mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (ibv_post_recv(ud, &wr, &bad))
				die("UD receive");
		}
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(ud, &a, IBV_QP_STATE))
			die("UD QP to RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		if (ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
			die("UD QP to RTS");
	}
	printf("ready rc=");
	for (unsigned int i = 0; i < NQP; i++)
		printf("%s%u", i ? "," : "", qp[i]->qp_num);
	printf(" ud=%u rkey=%u va=%" PRIu64 " len=%u\n", ud->qp_num, mr->rkey,
	       (uint64_t)(uintptr_t)mem, MR_LEN);
	fflush(stdout);

	for (;;) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		struct ibv_wc wc[16];
		int got = ibv_poll_cq(cq, 16, wc);

		for (int i = 0; i < got; i++)
			if (wc[i].qp_num == ud->qp_num && wc[i].status == IBV_WC_SUCCESS)
				ud_recvs++;
		if (poll(&pfd, 1, 0) <= 0) {
			usleep(100);
			continue;
		}
		if (fgets(line, sizeof(line), stdin) == NULL || strncmp(line, "quit", 4) == 0)
			break;
		if (strncmp(line, "stats", 5) == 0) {
			struct droce_stat s[256];
			bool guard_ok = true;
			int k;

			for (unsigned int i = 0; i < GUARD; i++)
				guard_ok &= area[i] == 0xa5 && area[GUARD + MR_LEN + i] == 0xa5;
			printf("stats mr_sum=%" PRIu64 " guard_ok=%d ud_recvs=%" PRIu64,
			       fnv(mem, MR_LEN), guard_ok, ud_recvs);
			for (unsigned int i = 0; i < NQP; i++) {
				struct ibv_qp_attr a;
				struct ibv_qp_init_attr ia;

				ibv_query_qp(qp[i], &a, IBV_QP_STATE, &ia);
				printf(" qp%u_state=%d", i, (int)a.qp_state);
			}
			k = droce_stats_engine(0, s, 256);
			print_list("engine.", s, k < 256 ? k : 256);
			k = droce_stats_port(0, s, 256);
			print_list("port.", s, k < 256 ? k : 256);
			printf("\n");
			fflush(stdout);
		}
	}
	return 0;
}
