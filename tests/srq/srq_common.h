/* SPDX-License-Identifier: BSD-3-Clause
 * SRQ and async event tests through the verbs API, tier (b): each Criterion
 * test forks and starts droce from a config text (ring pair droce0
 * 198.18.0.1 <-> droce1 198.18.0.2, rxq = txq = engines on both ports).
 */
#ifndef DROCE_TESTS_SRQ_COMMON_H
#define DROCE_TESTS_SRQ_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>

#include "env.h"

#define S_BUF_SIZE (4u << 20)

enum s_mode {
	S_COLOCATED_1,  /* one co-located engine */
	S_COLOCATED_2,  /* two co-located engines (this thread drives both) */
	S_DEDICATED_1,  /* one engine spinning on lcore 1 */
	S_DEDICATED_2,  /* two engines on lcores 1 and 2, both on CPU 1 (time-sliced) */
};

struct s_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

void s_start(enum s_mode mode);

/* Opens droce0 / droce1 with a PD and a registered S_BUF_SIZE buffer. */
void s_open(struct s_dev *d, const char *name);
/* An RC QP on @d (@srq may be NULL). */
struct ibv_qp *s_rc_qp(struct s_dev *d, struct ibv_cq *scq, struct ibv_cq *rcq,
		       struct ibv_srq *srq, uint32_t send_wr, uint32_t recv_wr);
/* RESET -> INIT -> RTR -> RTS towards @rqpn at @peer's GID (retry: retry_cnt). */
void s_rc_connect(struct ibv_qp *qp, const struct s_dev *peer, uint32_t rqpn, uint8_t retry,
		  uint8_t timeout);
/* Moves @qp to ERR. */
void s_to_err(struct ibv_qp *qp);

int s_post_send(struct ibv_qp *qp, struct s_dev *d, uint64_t id, size_t off, uint32_t len,
		unsigned int flags);
int s_post_srq(struct ibv_srq *srq, struct s_dev *d, uint64_t id, size_t off, uint32_t len);

/* Polls until @n completions or @ms; returns how many. */

/*
 * Waits up to @ms for an async event on @ctx (polling its fd, and driving
 * co-located engines when @drive); false on timeout.
 */
bool s_async(struct ibv_context *ctx, struct ibv_async_event *ev, unsigned int ms, bool drive);


#endif
