/* SPDX-License-Identifier: BSD-3-Clause
 * Memory window and inline tests: two ends (droce0 = requester A, droce1 =
 * memory owner B) with a connected RC or UC QP pair, over the ud_uc
 * suite's start-up (t_start / tc_stop / tc_poll / tc_fill / tc_check).
 */
#ifndef DROCE_TESTS_MW_COMMON_H
#define DROCE_TESTS_MW_COMMON_H

#include "common.h"

#define M_BUF (1u << 20)
#define M_MAX_INLINE 128

struct m_end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;   /* the whole buffer: local write, remote read/write/atomic, MW bind */
	uint8_t *buf;
	union ibv_gid gid;
};

/* Opens both ends (buffers, MRs with @mr_access, CQs) and a connected QP pair. */
void m_setup(struct m_end *a, struct m_end *b, enum ibv_qp_type type, unsigned int mr_access);
/* The same, with @port0_extra config lines for droce0 (an impaired link). */
void m_setup_link(struct m_end *a, struct m_end *b, enum ibv_qp_type type, unsigned int mr_access,
		  const char *port0_extra);
/* Destroys the QPs (draining their CQs) and connects a new pair. */
void m_reconnect(struct m_end *a, struct m_end *b, enum ibv_qp_type type);

/* Posts one WR on @e's QP; asserts ibv_post_send accepts it. */
void m_post(struct m_end *e, struct ibv_send_wr *w);
/* The next completion of @cq (asserted within 2 s). */
struct ibv_wc m_wc(struct ibv_cq *cq, const char *what);

/* Signaled RDMA WRITE / READ of @len bytes at @e->buf + @off to / from
 * (@raddr, @rkey); returns the completion status (asserting its fields). */
enum ibv_wc_status m_rdma(struct m_end *e, enum ibv_wr_opcode op, size_t off, uint32_t len,
			  uint64_t raddr, uint32_t rkey);

/* Type 2 bind on @e's QP; returns the completion status; *@rkey = the new rkey. */
enum ibv_wc_status m_bind2(struct m_end *e, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t addr,
			   uint64_t len, unsigned int access, uint32_t *rkey);
/* Type 1 bind with ibv_bind_mw; returns the completion status. */
enum ibv_wc_status m_bind1(struct m_end *e, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t addr,
			   uint64_t len, unsigned int access);
/* LOCAL_INV of @rkey on @e's QP; returns the completion status. */
enum ibv_wc_status m_local_inv(struct m_end *e, uint32_t rkey);

#endif
