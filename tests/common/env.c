/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "env.h"

void
tc_start(const struct tc_pair *o)
{
	static char text[4096];
	struct droce_config cfg;

	cr_assert_gt(tc_pair_config(text, sizeof(text), o), 0, "pair config too long");
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<test pair>", text, &cfg), 0, "config: %s",
		     droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "droce_start_config: %s", droce_last_error());
}

void
tc_stop(void)
{
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
}

struct ibv_context *
tc_open(const char *name, union ibv_gid *gid)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	cr_assert_not_null(list, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	cr_assert_not_null(ctx, "no device %s", name);
	if (gid != NULL)
		cr_assert_eq(ibv_query_gid(ctx, 1, 0, gid), 0);
	return ctx;
}

struct ibv_mr *
tc_reg_buf(struct ibv_pd *pd, size_t n, unsigned int access)
{
	void *buf = calloc(1, n);
	struct ibv_mr *mr;

	cr_assert_not_null(pd);
	cr_assert_not_null(buf, "calloc(%zu)", n);
	mr = ibv_reg_mr(pd, buf, n, (int)(access ? access
					  : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ));
	cr_assert_not_null(mr, "ibv_reg_mr(%zu): %s", n, strerror(errno));
	return mr;
}

void
tc_qp_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0, "QP %u to state %d", qp->qp_num, state);
}

void
tc_qp_up(struct ibv_qp *qp, const struct tc_conn *c)
{
	const bool rc = qp->qp_type == IBV_QPT_RC, ud = qp->qp_type == IBV_QPT_UD;
	/* XRC: the requester's side of RC (XRC_SEND), the responder's (XRC_RECV) */
	const bool req = rc || qp->qp_type == IBV_QPT_XRC_SEND;
	const bool resp = rc || qp->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (ud) {
		a.qkey = c->qkey ? c->qkey : 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = c->access ? c->access
				    : IBV_ACCESS_REMOTE_WRITE |
					      (resp ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), 0, "QP %u to INIT: %s", qp->qp_num, strerror(errno));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (!ud) {
		a.path_mtu = c->mtu ? c->mtu : IBV_MTU_1024;
		a.dest_qp_num = c->dest_qpn;
		a.rq_psn = c->psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = c->dgid;
		a.ah_attr.grh.sgid_index = c->sgid_index;
		a.ah_attr.grh.hop_limit = 64;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (resp) {
			a.max_dest_rd_atomic = c->rd_atomic ? c->rd_atomic : 4;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), 0, "QP %u to RTR: %s", qp->qp_num, strerror(errno));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (req || resp) {
		a.timeout = c->timeout ? c->timeout : 10;
		mask |= IBV_QP_TIMEOUT;
	}
	if (req) {
		a.retry_cnt = c->retry_cnt ? c->retry_cnt : 3;
		a.rnr_retry = c->rnr_retry ? c->rnr_retry : 3;
		a.max_rd_atomic = c->rd_atomic ? c->rd_atomic : 4;
		mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), 0, "QP %u to RTS: %s", qp->qp_num, strerror(errno));
}

void
tc_fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 0x9e3779b9u;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)(x >> 7) ^ (uint8_t)i;
	}
}

long
tc_first_diff(const uint8_t *p, size_t n, uint32_t seed)
{
	uint8_t *want = malloc(n ? n : 1);
	long at = -1;

	cr_assert_not_null(want);
	tc_fill(want, n, seed);
	for (size_t i = 0; i < n && at < 0; i++)
		if (p[i] != want[i])
			at = (long)i;
	free(want);
	return at;
}

bool
tc_check(const uint8_t *p, size_t n, uint32_t seed)
{
	return tc_first_diff(p, n, seed) < 0;
}
