/* SPDX-License-Identifier: BSD-3-Clause
 * verbs_validation's shared set-up (validation.c): test_validation.c
 * (devices, MRs, CQs, QP caps), test_validation_modify.c (ibv_modify_qp's
 * rules) and test_validation_post.c (posting and the ibv_wr_* builder).
 */
#ifndef DROCE_TESTS_VERBS_VALIDATION_H
#define DROCE_TESTS_VERBS_VALIDATION_H

#include <infiniband/verbs.h>

#include "fake_dp.h"
#include "verbs_api/internal.h"

/* the attribute masks ibv_modify_qp(3) requires per transition */
#define RC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define UC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define RC_RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
		     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

extern struct ibv_device **devs;
extern struct ibv_context *ctx;
extern struct ibv_pd *pd;
extern struct ibv_cq *cq;

void setup(void);
struct droce_qp *dqp(struct ibv_qp *qp);
struct droce_cq *dcq(struct ibv_cq *c);
struct ibv_qp *make_qp(enum ibv_qp_type type, uint32_t send_wr, uint32_t sge, uint32_t inl, int sig_all);
void gid_v4(union ibv_gid *g, const char *ip);
int to_init(struct ibv_qp *qp);
void rtr_attr(struct ibv_qp_attr *a, const char *dip);
int to_rtr(struct ibv_qp *qp);
int to_rts(struct ibv_qp *qp);
struct ibv_qp *rts_qp(enum ibv_qp_type type, uint32_t send_wr, uint32_t sge, uint32_t inl, int sig_all);

#endif /* DROCE_TESTS_VERBS_VALIDATION_H */
