/* SPDX-License-Identifier: BSD-3-Clause
 * The in-process RC pair of droce's single-process benches (droce-post-bench,
 * droce-idle-bench): droce started on the embedded loopback config with the
 * fallback thread off (only the bench's thread drives the engine, when it
 * polls), and the two QPs, one on droce0 and one on droce1, taken through
 * INIT, RTR and RTS to each other; and one QP's RTR and RTS towards a peer
 * QP, for droce-wake-bench's two processes too.  Header-only: each bench is
 * one file.
 */
#ifndef DROCE_APPS_BENCH_PAIR_H
#define DROCE_APPS_BENCH_PAIR_H

#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <droce/config.h>
#include <droce/droce.h>

/* The bench's own: prints "@what: strerror(@e)" and exits 1. */
static void die(const char *what, int e);

/* droce up with only the calling thread driving; the device list (>= 2). */
static inline struct ibv_device **
bench_pair_start(void)
{
	struct droce_config cfg;
	struct ibv_device **list;
	int n;

	if (droce_config_load_default(&cfg) != 0)
		die("config", errno);
	cfg.fallback_us = 0; /* only this thread drives the engine, when it polls */
	if (droce_start_config(&cfg) != 0)
		die("droce_start_config", errno);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 2)
		die("ibv_get_device_list", errno ? errno : ENODEV);
	return list;
}

/* @qp to INIT (remote writes allowed); its port's GID 0 in @gid. */
static inline void
bench_pair_init(struct ibv_context *ctx, struct ibv_qp *qp, union ibv_gid *gid)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) != 0)
		die("INIT", EINVAL);
	if (ibv_query_gid(ctx, 1, 0, gid) != 0)
		die("ibv_query_gid", errno);
}

/* @qp to RTR and RTS towards the QP @dest_qpn at GID @dgid (PSNs 0,
 * path MTU 1024, one RDMA READ / atomic outstanding each way). */
static inline void
bench_qp_connect(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest_qpn, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *dgid, .hop_limit = 64 } },
	};
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);

	if (rc != 0)
		die("RTR", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc != 0)
		die("RTS", rc);
}

/* Both QPs of the pair to RTR and RTS, each aimed at the other. */
static inline void
bench_pair_connect(struct ibv_qp *qp[2], const union ibv_gid gid[2])
{
	for (int k = 0; k < 2; k++)
		bench_qp_connect(qp[k], qp[!k]->qp_num, &gid[!k]);
}

#endif
