/* SPDX-License-Identifier: BSD-3-Clause
 * What every verbs-level Criterion suite needs, once: start droce on the
 * port pair (pair_config.h), open a device, bring a QP up towards a peer,
 * fill and check data patterns, and (wait.h) poll with a deadline.  Every
 * helper asserts (cr_assert) what it relies on, so tests read like the
 * behaviour they check.
 */
#ifndef DROCE_TESTS_COMMON_ENV_H
#define DROCE_TESTS_COMMON_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include "clock.h"
#include "pair_config.h"
#include "wait.h" /* tc_poll, tc_wait, tc_expect_none, tc_wait_fd */

/* Starts droce on the pair described by @o (NULL: defaults); tc_stop() ends it. */
void tc_start(const struct tc_pair *o);
void tc_stop(void);

/* Opens device @name ("droce0", ...); its GID at index 0 in *@gid when not NULL. */
struct ibv_context *tc_open(const char *name, union ibv_gid *gid);

/* A zeroed @n-byte buffer registered on @pd with @access (0: local write,
 * remote write and read), both asserted; the buffer is the MR's addr. */
struct ibv_mr *tc_reg_buf(struct ibv_pd *pd, size_t n, unsigned int access);

/* How tc_qp_up() connects a QP.  Zeroed fields take the defaults shown. */
struct tc_conn {
	union ibv_gid dgid;       /* the peer's GID (RC, UC) */
	uint32_t dest_qpn;        /* the peer's QPN (RC, UC) */
	uint32_t psn;             /* both directions; 0 is used as is */
	enum ibv_mtu mtu;         /* 0: IBV_MTU_1024 */
	uint8_t sgid_index;
	uint8_t timeout;          /* 0: 10 */
	uint8_t retry_cnt;        /* 0: 3 */
	uint8_t rnr_retry;        /* 0: 3 */
	uint8_t rd_atomic;        /* max_rd_atomic and max_dest_rd_atomic; 0: 4 */
	unsigned int access;      /* 0: REMOTE_WRITE, plus READ and ATOMIC on RC */
	uint32_t qkey;            /* UD; 0: 0x11111111 */
};

/* RESET (or INIT) -> INIT -> RTR -> RTS with the masks the QP's type needs
 * (XRC_SEND: RC's requester attributes, XRC_RECV: RC's responder ones). */
void tc_qp_up(struct ibv_qp *qp, const struct tc_conn *c);
/* Moves @qp to @state (ERR, RESET, SQD ...): only the state changes. */
void tc_qp_state(struct ibv_qp *qp, enum ibv_qp_state state);

/* A pseudo-random pattern from @seed, and its check. */
void tc_fill(uint8_t *p, size_t n, uint32_t seed);
bool tc_check(const uint8_t *p, size_t n, uint32_t seed);
/* Index of the first byte of @p that differs from tc_fill(@seed), or -1. */
long tc_first_diff(const uint8_t *p, size_t n, uint32_t seed);

#endif
