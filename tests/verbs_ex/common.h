/* SPDX-License-Identifier: BSD-3-Clause
 * The extended verbs through the real engines (tier b): every Criterion test
 * forks and starts droce from a config text (the ud_uc suite's start-up: ring
 * pair droce0 198.18.0.1 <-> droce1 198.18.0.2, one co-located engine).  Ends
 * are built with ibv_create_cq_ex (every accessor and the completion
 * timestamp asked for) and ibv_create_qp_ex (send_ops_flags), and post with
 * the ibv_wr_* builder.
 */
#ifndef DROCE_TESTS_VERBS_EX_COMMON_H
#define DROCE_TESTS_VERBS_EX_COMMON_H

#include "../ud_uc/common.h"

#define X_BUF (1u << 20)
#define X_INLINE 64
#define X_SGE 4
#define X_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
/* every accessor droce fills, and both timestamps */
#define X_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |      \
		    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |           \
		    IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |       \
		    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

struct x_end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
	enum ibv_qp_type type;
};

/* One completion read through the ibv_wc_read_* accessors. */
struct x_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, imm, qp_num, src_qp, slid;
	unsigned int wc_flags;
	uint8_t sl, dlid_path_bits;
	uint64_t ts, wall;
};

/* Starts droce (ring pair, IP MTU 1500). */
void x_start(void);
/* Opens @name: PD, buffer + MR (X_ACCESS), extended CQs, a QP of @type made
 * with ibv_create_qp_ex asking @ops, max_send_wr @send_wr. */
void x_open(struct x_end *e, const char *name, enum ibv_qp_type type, uint64_t ops,
	    uint32_t send_wr);
/* RC / UC: INIT -> RTR -> RTS towards @peer.  UD: INIT (qkey 0x11111111) -> RTS. */
void x_connect(struct x_end *e, const struct x_end *peer);
/* Opens droce0 as A, droce1 as B and connects them. */
void x_pair(struct x_end *a, struct x_end *b, enum ibv_qp_type type, uint64_t ops,
	    uint32_t send_wr);
/* Moves the QP to @state (RESET -> INIT only, or to ERR). */
void x_to_state(struct x_end *e, enum ibv_qp_state state);

/* The next completion of @cq within @ms (start_poll ... end_poll); asserted. */
struct x_wc x_wait(struct ibv_cq_ex *cq, unsigned int ms, const char *what);
/* Asserts no completion arrives on @cq within @ms. */
void x_none(struct ibv_cq_ex *cq, unsigned int ms, const char *what);
/* Posts one receive of @len bytes at @off on @e's QP. */
void x_recv(struct x_end *e, uint64_t id, size_t off, uint32_t len);

#endif
