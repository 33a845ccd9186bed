/* SPDX-License-Identifier: BSD-3-Clause
 * IBV_SEND_INLINE (ibv_post_send(3)): allowed on SEND and RDMA WRITE kinds up
 * to max_inline_data; the data is taken at post time, so the buffer may be
 * reused (here: overwritten) as soon as ibv_post_send returns, and its lkey
 * is not checked.  RC and UC; SEND_WITH_INV on RC (on UC it cannot be sent).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "mw_common.h"

#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_MW_BIND)
#define DST_OFF 65536u

TestSuite(inline_data, .fini = tc_stop, .timeout = 90);

static struct m_end A, B;

/* One inline WR of @len bytes (split over two SGEs, the second with a bogus
 * lkey), source overwritten right after the post; the remote checked. */
static void
one(enum ibv_qp_type type, enum ibv_wr_opcode op, uint32_t len, uint32_t seed)
{
	bool send = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV;
	bool imm = op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint32_t half = len / 2;
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)A.buf, .length = half, .lkey = A.mr->lkey },
		{ .addr = (uintptr_t)A.buf + half, .length = len - half, .lkey = 0xdead00 },
	};
	struct ibv_send_wr w = { .wr_id = seed, .sg_list = sge, .num_sge = 2, .opcode = op,
				 .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };
	uint32_t rkey = 0;
	struct ibv_wc wc;

	memset(B.buf + DST_OFF, 0, M_MAX_INLINE + 16);
	if (send || imm) {
		struct ibv_sge rs = { .addr = (uintptr_t)B.buf + DST_OFF, .length = 4096,
				      .lkey = B.mr->lkey };
		struct ibv_recv_wr r = { .wr_id = seed + 1000, .sg_list = &rs, .num_sge = 1 }, *bad;

		cr_assert_eq(ibv_post_recv(B.qp, &r, &bad), 0);
	}
	if (op == IBV_WR_SEND_WITH_INV) {
		struct ibv_mw *mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);

		cr_assert_not_null(mw);
		cr_assert_eq(m_bind2(&B, mw, B.mr, (uintptr_t)B.buf, 4096, IBV_ACCESS_REMOTE_READ,
				     &rkey), IBV_WC_SUCCESS);
		w.invalidate_rkey = rkey;
	}
	if (imm)
		w.imm_data = htonl(seed);
	w.wr.rdma.remote_addr = (uintptr_t)B.buf + DST_OFF;
	w.wr.rdma.rkey = B.mr->rkey;
	tc_fill(A.buf, len, seed);
	m_post(&A, &w);
	memset(A.buf, 0xee, len); /* reused at once */
	wc = m_wc(A.scq, "inline WR");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "op %d len %u: %s", op, len,
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, seed);
	cr_assert_eq(wc.opcode, send ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
	if (send || imm) {
		wc = m_wc(B.rcq, "receive");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
		cr_assert_eq(wc.wr_id, seed + 1000);
		cr_assert_eq(wc.byte_len, len);
		cr_assert_eq(wc.opcode, send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM);
		if (imm) {
			cr_assert_eq(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
			cr_assert_eq(wc.imm_data, htonl(seed));
		}
		if (op == IBV_WR_SEND_WITH_INV) {
			cr_assert_eq(wc.wc_flags & IBV_WC_WITH_INV, IBV_WC_WITH_INV);
			cr_assert_eq(wc.invalidated_rkey, rkey);
		}
	} else {
		/* a plain WRITE completes nothing at B: let the engine place it (UC has no ACK) */
		tc_expect_none(B.rcq, type == IBV_QPT_UC ? 30 : 1, "plain WRITE");
	}
	cr_assert(tc_check(B.buf + DST_OFF, len, seed), "op %d len %u: the bytes at post time", op,
		  len);
	cr_assert_eq(B.buf[DST_OFF + len], 0, "nothing past the message");
}

static void
all_ops(enum ibv_qp_type type)
{
	const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_INV,
					   IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM };
	const uint32_t lens[] = { 1, 2, 63, M_MAX_INLINE };
	uint32_t seed = 1;

	m_setup(&A, &B, type, ALL_ACCESS);
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		if (type == IBV_QPT_UC && ops[o] == IBV_WR_SEND_WITH_INV)
			continue; /* uc_send_with_inv below */
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			one(type, ops[o], lens[l], seed++);
	}
}

Test(inline_data, rc_every_opcode)
{
	all_ops(IBV_QPT_RC);
}

Test(inline_data, uc_every_opcode)
{
	all_ops(IBV_QPT_UC);
}

/* Inline is refused where ibv_post_send(3) does not allow it, and above max_inline_data. */
Test(inline_data, limits)
{
	struct ibv_sge sge;
	struct ibv_send_wr w, *bad;
	const enum ibv_wr_opcode no[] = { IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
					  IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_LOCAL_INV };

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	sge = (struct ibv_sge){ .addr = (uintptr_t)A.buf, .length = M_MAX_INLINE + 1,
				.lkey = A.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_INLINE };
	w.wr.rdma.remote_addr = (uintptr_t)B.buf;
	w.wr.rdma.rkey = B.mr->rkey;
	cr_assert_eq(ibv_post_send(A.qp, &w, &bad), EINVAL, "above max_inline_data");
	cr_assert_eq(bad, &w);
	sge.length = 8;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		w.opcode = no[i];
		cr_assert_eq(ibv_post_send(A.qp, &w, &bad), EINVAL, "opcode %d", no[i]);
	}
}

/* UC SEND_WITH_INV: accepted by ibv_post_send (the man page's table), but no
 * UC opcode carries an IETH, so it completes with LOC_QP_OP_ERR as on rxe. */
Test(inline_data, uc_send_with_inv)
{
	struct ibv_sge sge;
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc;

	m_setup(&A, &B, IBV_QPT_UC, ALL_ACCESS);
	sge = (struct ibv_sge){ .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
				  .invalidate_rkey = 0x100 };
	cr_assert_eq(ibv_post_send(A.qp, &w, &bad), 0);
	wc = m_wc(A.scq, "UC SEND_WITH_INV");
	cr_assert_eq(wc.status, IBV_WC_LOC_QP_OP_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 5);
}
