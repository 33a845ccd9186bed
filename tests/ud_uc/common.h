/* SPDX-License-Identifier: BSD-3-Clause
 * UD / UC tests through the verbs API (tier b): each Criterion test forks,
 * starts droce from a config text (ring pair droce0 198.18.0.1 / 2001:2::1
 * <-> droce1 198.18.0.2 / 2001:2::2, one co-located engine) and talks verbs.
 */
#ifndef DROCE_TESTS_UD_UC_COMMON_H
#define DROCE_TESTS_UD_UC_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "dataplane/engine.h"
#include "env.h"

#define T_BUF_SIZE (4u << 20)

struct t_end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid4, gid6; /* GID index 0 and 1 */
};

/* Starts droce: both ports with IP MTU @ip_mtu, and @port0_extra lines ("" or NULL). */
void t_start(unsigned int ip_mtu, const char *port0_extra);
/* Stops engines and droce (suite .fini). */
void tc_stop(void);

/* Opens device @name, a PD, CQs, a registered buffer and a QP of @type. */
void t_open(struct t_end *e, const char *name, enum ibv_qp_type type, uint32_t send_wr,
	    uint32_t recv_wr);
/* UD: RESET -> INIT (qkey) -> RTR -> RTS. */
void t_ud_up(struct t_end *e, uint32_t qkey);
/* UC: RESET -> INIT -> RTR -> RTS towards @peer over GID index @gid_index. */
void t_uc_up(struct t_end *e, const struct t_end *peer, int gid_index, enum ibv_mtu mtu);

/* IB MTU of the end's port in bytes (active_mtu). */
uint32_t t_port_mtu(const struct t_end *e);

/* Polls @cq for one completion within @ms; asserts it comes. */
/* Polls @cq (driving the engines) for @ms and asserts nothing arrives. */
/* Polls until @n completions or @ms; returns how many. */

int t_post_recv(struct t_end *e, uint64_t id, size_t off, uint32_t len);

/* Fills / checks a pattern from @seed. */

/* Sum of every engine's counters. */
struct droce_engine_stats t_stats(void);


#endif
