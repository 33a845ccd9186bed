/* SPDX-License-Identifier: BSD-3-Clause
 * The ibv_wr_* builder (ibv_wr_post(3)) end to end over the loopback pair:
 * every WR builder and setter checked by what lands in the peer's memory,
 * atomics' results, immediate data, invalidation and UD addressing; then
 * each error ibv_wr_complete returns (ibv_post_send(3)'s errnos), with the
 * batch not posted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "common.h"

TestSuite(wr, .fini = tc_stop, .timeout = 90);

#define RC_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                 \
		IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |    \
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |          \
		IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV)
#define UC_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                 \
		IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define UD_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

static struct x_end A, B;

/* A's send completion @id: success, @opcode, A's QP. */
static struct x_wc
sent(uint64_t id, enum ibv_wc_opcode opcode, const char *what)
{
	struct x_wc w = x_wait(A.scq, 2000, what);

	cr_assert_eq(w.wr_id, id, "%s: wr_id %llu", what, (unsigned long long)w.wr_id);
	cr_assert_eq(w.status, IBV_WC_SUCCESS, "%s: status %s", what, ibv_wc_status_str(w.status));
	cr_assert_eq(w.opcode, opcode, "%s: opcode %d", what, w.opcode);
	cr_assert_eq(w.qp_num, A.qp->qp_num);
	return w;
}

static void
start(uint64_t id, unsigned int flags)
{
	ibv_wr_start(A.qpx);
	A.qpx->wr_id = id;
	A.qpx->wr_flags = flags;
}

Test(wr, rc_write_sge_list_and_write_imm)
{
	struct ibv_sge sg[3];
	struct x_wc w;

	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 64);
	tc_fill(A.buf, 3000, 1);
	sg[0] = (struct ibv_sge){ (uintptr_t)A.buf, 1000, A.mr->lkey };
	sg[1] = (struct ibv_sge){ (uintptr_t)A.buf + 1000, 1500, A.mr->lkey };
	sg[2] = (struct ibv_sge){ (uintptr_t)A.buf + 2500, 500, A.mr->lkey };
	start(11, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 8192);
	ibv_wr_set_sge_list(A.qpx, 3, sg);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	w = sent(11, IBV_WC_RDMA_WRITE, "WRITE");
	cr_assert(tc_check(B.buf + 8192, 3000, 1), "3 SGEs concatenated at the remote address");

	/* WRITE with immediate: the peer's receive completion carries it */
	x_recv(&B, 77, 0, 16);
	tc_fill(A.buf, 200, 2);
	start(12, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write_imm(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 65536, htonl(0xfeedbeef));
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 200);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(12, IBV_WC_RDMA_WRITE, "WRITE_IMM");
	w = x_wait(B.rcq, 2000, "WRITE_IMM at B");
	cr_assert_eq(w.wr_id, 77);
	cr_assert_eq(w.status, IBV_WC_SUCCESS);
	cr_assert_eq(w.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(w.imm, htonl(0xfeedbeef));
	cr_assert(w.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(w.byte_len, 200);
	cr_assert_eq(w.qp_num, B.qp->qp_num);
	cr_assert(tc_check(B.buf + 65536, 200, 2));
}

Test(wr, rc_send_inline_list_and_send_imm)
{
	struct ibv_data_buf bufs[2];
	uint8_t src[40];
	struct x_wc w;

	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 64);
	x_recv(&B, 1, 0, 4096);
	x_recv(&B, 2, 4096, 4096);
	tc_fill(src, sizeof(src), 3);
	bufs[0] = (struct ibv_data_buf){ src, 15 };
	bufs[1] = (struct ibv_data_buf){ src + 15, 25 };
	start(21, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	ibv_wr_send(A.qpx);
	ibv_wr_set_inline_data_list(A.qpx, 2, bufs);
	/* a second WR in the same batch: SEND with immediate from an SGE */
	tc_fill(A.buf, 300, 4);
	A.qpx->wr_id = 22;
	ibv_wr_send_imm(A.qpx, htonl(1234));
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 300);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	memset(src, 0, sizeof(src)); /* inline: copied at the setter */
	sent(21, IBV_WC_SEND, "inline SEND");
	sent(22, IBV_WC_SEND, "SEND_IMM");
	w = x_wait(B.rcq, 2000, "SEND at B");
	cr_assert_eq(w.wr_id, 1);
	cr_assert_eq(w.opcode, IBV_WC_RECV);
	cr_assert_eq(w.byte_len, 40);
	cr_assert_eq(w.wc_flags & IBV_WC_WITH_IMM, 0);
	cr_assert(tc_check(B.buf, 40, 3), "inline bytes");
	w = x_wait(B.rcq, 2000, "SEND_IMM at B");
	cr_assert_eq(w.wr_id, 2);
	cr_assert_eq(w.opcode, IBV_WC_RECV);
	cr_assert_eq(w.byte_len, 300);
	cr_assert(w.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(w.imm, htonl(1234));
	cr_assert(tc_check(B.buf + 4096, 300, 4));
}

Test(wr, rc_read_and_atomics)
{
	uint64_t *word = (uint64_t *)(B.buf + 0), *orig;

	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 64);
	word = (uint64_t *)(B.buf + 4096);
	orig = (uint64_t *)(A.buf + 8192);
	tc_fill(B.buf + 100000, 5000, 5);
	start(31, IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 100000);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf + 200000, 5000);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	cr_assert_eq(sent(31, IBV_WC_RDMA_READ, "READ").byte_len, 5000);
	cr_assert(tc_check(A.buf + 200000, 5000, 5), "READ brought B's bytes");

	*word = 40;
	start(32, IBV_SEND_SIGNALED);
	ibv_wr_atomic_fetch_add(A.qpx, B.mr->rkey, (uintptr_t)word, 2);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)orig, 8);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(32, IBV_WC_FETCH_ADD, "FETCH_ADD");
	cr_assert_eq(*orig, 40);
	cr_assert_eq(*word, 42);

	start(33, IBV_SEND_SIGNALED);
	ibv_wr_atomic_cmp_swp(A.qpx, B.mr->rkey, (uintptr_t)word, 42, 0x1122334455667788ull);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)orig + 8, 8);
	/* a failing compare in the same batch leaves the word alone */
	A.qpx->wr_id = 34;
	ibv_wr_atomic_cmp_swp(A.qpx, B.mr->rkey, (uintptr_t)word, 42, 7);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)orig + 16, 8);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(33, IBV_WC_COMP_SWAP, "CMP_SWP");
	sent(34, IBV_WC_COMP_SWAP, "CMP_SWP (no match)");
	cr_assert_eq(orig[1], 42);
	cr_assert_eq(orig[2], 0x1122334455667788ull);
	cr_assert_eq(*word, 0x1122334455667788ull);
}

Test(wr, rc_bind_mw_send_inv_local_inv)
{
	struct ibv_mw *mw1, *mw2;
	struct ibv_mw_bind_info bi;
	uint32_t rkey1, rkey2;
	struct ibv_qp_ex *bx;
	struct x_wc w;

	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 64);
	bx = B.qpx;
	mw1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	mw2 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	cr_assert(mw1 && mw2);
	/* B binds two windows over its buffer with the builder */
	bi = (struct ibv_mw_bind_info){ .mr = B.mr, .addr = (uintptr_t)B.buf + 4096,
					.length = 4096, .mw_access_flags = IBV_ACCESS_REMOTE_READ };
	rkey1 = ibv_inc_rkey(mw1->rkey);
	rkey2 = ibv_inc_rkey(mw2->rkey);
	ibv_wr_start(bx);
	bx->wr_id = 41;
	bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(bx, mw1, rkey1, &bi);
	bx->wr_id = 42;
	ibv_wr_bind_mw(bx, mw2, rkey2, &bi);
	cr_assert_eq(ibv_wr_complete(bx), 0);
	w = x_wait(B.scq, 2000, "bind 1");
	cr_assert_eq(w.wr_id, 41);
	cr_assert_eq(w.status, IBV_WC_SUCCESS);
	cr_assert_eq(w.opcode, IBV_WC_BIND_MW);
	w = x_wait(B.scq, 2000, "bind 2");
	cr_assert_eq(w.wr_id, 42);
	cr_assert_eq(w.status, IBV_WC_SUCCESS);

	/* READ through window 1 works */
	tc_fill(B.buf + 4096, 64, 6);
	start(43, IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(A.qpx, rkey1, (uintptr_t)B.buf + 4096);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 64);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(43, IBV_WC_RDMA_READ, "READ through the window");
	cr_assert(tc_check(A.buf, 64, 6));

	/* A invalidates window 1 with SEND_WITH_INV: B sees it in its completion */
	x_recv(&B, 44, 0, 64);
	start(45, IBV_SEND_SIGNALED);
	ibv_wr_send_inv(A.qpx, rkey1);
	ibv_wr_set_inline_data(A.qpx, "hello", 5);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(45, IBV_WC_SEND, "SEND_WITH_INV");
	w = x_wait(B.rcq, 2000, "SEND_WITH_INV at B");
	cr_assert_eq(w.wr_id, 44);
	cr_assert_eq(w.status, IBV_WC_SUCCESS);
	cr_assert(w.wc_flags & IBV_WC_WITH_INV);
	cr_assert_eq(w.imm, rkey1, "ibv_wc_read_invalidated_rkey");
	cr_assert_eq(memcmp(B.buf, "hello", 5), 0);

	/* B invalidates window 2 itself */
	ibv_wr_start(bx);
	bx->wr_id = 46;
	bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(bx, rkey2);
	cr_assert_eq(ibv_wr_complete(bx), 0);
	w = x_wait(B.scq, 2000, "LOCAL_INV");
	cr_assert_eq(w.wr_id, 46);
	cr_assert_eq(w.status, IBV_WC_SUCCESS);
	cr_assert_eq(w.opcode, IBV_WC_LOCAL_INV);

	/* both windows refuse access now (the first failure ends the QP) */
	start(47, IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(A.qpx, rkey2, (uintptr_t)B.buf + 4096);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 64);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	w = x_wait(A.scq, 2000, "READ after LOCAL_INV");
	cr_assert_eq(w.wr_id, 47);
	cr_assert_eq(w.status, IBV_WC_REM_ACCESS_ERR, "status %s", ibv_wc_status_str(w.status));
}

Test(wr, uc_write_imm_and_send)
{
	struct x_wc w;

	x_pair(&A, &B, IBV_QPT_UC, UC_OPS, 64);
	x_recv(&B, 1, 0, 64);
	x_recv(&B, 2, 4096, 2048);
	tc_fill(A.buf, 1500, 7);
	start(51, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write_imm(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 65536, htonl(5));
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 1500);
	A.qpx->wr_id = 52;
	ibv_wr_send(A.qpx);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 1500);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(51, IBV_WC_RDMA_WRITE, "UC WRITE_IMM");
	sent(52, IBV_WC_SEND, "UC SEND");
	w = x_wait(B.rcq, 2000, "UC WRITE_IMM at B");
	cr_assert_eq(w.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(w.imm, htonl(5));
	cr_assert(tc_check(B.buf + 65536, 1500, 7));
	w = x_wait(B.rcq, 2000, "UC SEND at B");
	cr_assert_eq(w.wr_id, 2);
	cr_assert_eq(w.byte_len, 1500);
	cr_assert(tc_check(B.buf + 4096, 1500, 7));
}

static struct ibv_ah *
ah_to(struct x_end *from, const struct x_end *to)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
				 .grh = { .dgid = to->gid, .hop_limit = 64 } };
	struct ibv_ah *ah = ibv_create_ah(from->pd, &a);

	cr_assert_not_null(ah, "ibv_create_ah: %s", strerror(errno));
	return ah;
}

Test(wr, ud_send_with_ud_addr)
{
	struct ibv_ah *ah, *wrong;
	struct x_wc w;

	x_pair(&A, &B, IBV_QPT_UD, UD_OPS, 64);
	ah = ah_to(&A, &B);
	x_recv(&B, 1, 0, 1024 + 40);
	tc_fill(A.buf, 700, 8);
	start(61, IBV_SEND_SIGNALED);
	ibv_wr_send_imm(A.qpx, htonl(99));
	ibv_wr_set_ud_addr(A.qpx, ah, B.qp->qp_num, 0x11111111);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 700);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(61, IBV_WC_SEND, "UD SEND_IMM");
	w = x_wait(B.rcq, 2000, "UD at B");
	cr_assert_eq(w.wr_id, 1);
	cr_assert_eq(w.status, IBV_WC_SUCCESS);
	cr_assert_eq(w.byte_len, 40 + 700, "byte_len counts the GRH");
	cr_assert_eq(w.src_qp, A.qp->qp_num, "ibv_wc_read_src_qp");
	cr_assert(w.wc_flags & IBV_WC_GRH);
	cr_assert(w.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(w.imm, htonl(99));
	cr_assert(tc_check(B.buf + 40, 700, 8));

	/* no destination: EINVAL, nothing sent */
	start(62, IBV_SEND_SIGNALED);
	ibv_wr_send(A.qpx);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 10);
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);
	/* an AH of another device's port: EINVAL */
	wrong = ah_to(&B, &A);
	start(63, IBV_SEND_SIGNALED);
	ibv_wr_send(A.qpx);
	ibv_wr_set_ud_addr(A.qpx, wrong, B.qp->qp_num, 0x11111111);
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);
	/* RDMA on UD: EINVAL as ibv_post_send */
	start(64, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
	ibv_wr_set_ud_addr(A.qpx, ah, B.qp->qp_num, 0x11111111);
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);
	x_none(A.scq, 50, "failed batches");
	x_none(B.rcq, 50, "failed batches at B");
	cr_assert_eq(ibv_destroy_ah(wrong), 0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

/* ---- errors: the batch is not posted ---- */

/* One WRITE of 16 bytes that must complete as the next send completion. */
static void
good_write(uint64_t id)
{
	start(id, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 16);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	sent(id, IBV_WC_RDMA_WRITE, "the WRITE after a failed batch");
}

Test(wr, errors_as_post_send)
{
	struct ibv_sge sg[X_SGE + 1];
	uint8_t big[X_INLINE + 1];

	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 64);
	for (int i = 0; i <= X_SGE; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)A.buf + 64 * i, 64, A.mr->lkey };
	memset(big, 1, sizeof(big));
	memset(B.buf + 131072, 0, 4096);

	/* a good WR first, then a bad one: the good one is not posted either */
	start(100, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 131072);
	tc_fill(A.buf + 500000, 64, 9);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf + 500000, 64);
	A.qpx->wr_id = 101;
	ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
	ibv_wr_set_sge_list(A.qpx, X_SGE + 1, sg); /* too many SGEs */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(102, IBV_SEND_SIGNALED);
	ibv_wr_send(A.qpx);
	ibv_wr_set_inline_data(A.qpx, big, sizeof(big)); /* above max_inline_data */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(103, IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
	ibv_wr_set_inline_data(A.qpx, big, 8); /* nothing to inline on a READ */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(104, IBV_SEND_SIGNALED);
	ibv_wr_atomic_fetch_add(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 4, 1); /* misaligned */
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 8);
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(105, IBV_SEND_SIGNALED);
	ibv_wr_atomic_cmp_swp(A.qpx, B.mr->rkey, (uintptr_t)B.buf, 0, 1);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 4); /* not 8 bytes */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(106, IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM); /* no checksum offload */
	ibv_wr_send(A.qpx);
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(107, IBV_SEND_SIGNALED);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 8); /* a setter without a WR */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(108, IBV_SEND_SIGNALED);
	ibv_wr_local_inv(A.qpx, 0x1234);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 8); /* LOCAL_INV takes no data */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(109, IBV_SEND_SIGNALED);
	ibv_wr_send_tso(A.qpx, big, 10, 100); /* no raw packet QPs */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(110, IBV_SEND_SIGNALED);
	ibv_wr_set_xrc_srqn(A.qpx, 5); /* not an XRC_SEND QP */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	start(111, IBV_SEND_SIGNALED);
	ibv_wr_send(A.qpx);
	ibv_wr_set_ud_addr(A.qpx, NULL, 1, 1); /* not a UD QP */
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);

	/* ibv_wr_abort drops a good batch */
	start(112, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 131072);
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf + 500000, 64);
	ibv_wr_abort(A.qpx);

	x_none(A.scq, 100, "failed or aborted batches");
	for (int i = 0; i < 64; i++)
		cr_assert_eq(B.buf[131072 + i], 0, "byte %d written by a batch that failed", i);
	good_write(120);
	/* an empty batch is fine */
	ibv_wr_start(A.qpx);
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
}

Test(wr, opcode_not_for_qp_type)
{
	x_pair(&A, &B, IBV_QPT_UC, UC_OPS, 64);
	start(1, IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(A.qpx, B.mr->rkey, (uintptr_t)B.buf); /* no READ on UC */
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 8);
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);
	start(2, IBV_SEND_SIGNALED);
	ibv_wr_atomic_fetch_add(A.qpx, B.mr->rkey, (uintptr_t)B.buf, 1); /* no atomics on UC */
	ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 8);
	cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL);
	x_none(A.scq, 50, "refused opcodes");
}

Test(wr, not_in_rts)
{
	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, RC_OPS, 16);
	x_open(&B, "droce1", IBV_QPT_RC, RC_OPS, 16);
	/* RESET, INIT, RTR: EINVAL, as ibv_post_send */
	for (int step = 0; step < 3; step++) {
		start(1, IBV_SEND_SIGNALED);
		ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
		ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 8);
		cr_assert_eq(ibv_wr_complete(A.qpx), EINVAL, "step %d", step);
		if (step == 0) {
			x_to_state(&A, IBV_QPS_INIT);
		} else if (step == 1) {
			struct ibv_qp_attr a = {
				.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				.dest_qp_num = B.qp->qp_num, .max_dest_rd_atomic = 1,
				.ah_attr = { .is_global = 1, .port_num = 1,
					     .grh = { .dgid = B.gid, .hop_limit = 64 } },
			};

			cr_assert_eq(ibv_modify_qp(A.qp, &a, IBV_QP_STATE | IBV_QP_AV |
						   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
						   IBV_QP_MIN_RNR_TIMER), 0);
		}
	}
	x_none(A.scq, 50, "nothing posted");
}

Test(wr, sq_full_enomem_batch_not_posted)
{
	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 4);
	/* five WRs in a four-slot send queue: ENOMEM, none of them posted */
	start(0, IBV_SEND_SIGNALED);
	for (uint64_t i = 0; i < 5; i++) {
		A.qpx->wr_id = 200 + i;
		ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 64 * i);
		ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 64);
	}
	cr_assert_eq(ibv_wr_complete(A.qpx), ENOMEM);
	x_none(A.scq, 100, "the refused batch");
	/* four fit, and complete in order */
	start(0, IBV_SEND_SIGNALED);
	for (uint64_t i = 0; i < 4; i++) {
		A.qpx->wr_id = 300 + i;
		ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 64 * i);
		ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 64);
	}
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	for (uint64_t i = 0; i < 4; i++)
		sent(300 + i, IBV_WC_RDMA_WRITE, "batch of 4");
	/* a full queue (WRs not yet retired) refuses the builder as ibv_post_send */
	start(400, 0); /* unsignaled: they retire only with a later signaled one */
	for (int i = 0; i < 4; i++) {
		ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
		ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf, 8);
	}
	cr_assert_eq(ibv_wr_complete(A.qpx), 0);
	{
		struct ibv_sge s = { (uintptr_t)A.buf, 8, A.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 401, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
				   *bad = NULL;
		int rc = ibv_post_send(A.qp, &w, &bad);

		/* either the engine already retired the four (room again) or not */
		if (rc == 0)
			sent(401, IBV_WC_RDMA_WRITE, "after the unsignaled four");
		else
			cr_assert_eq(rc, ENOMEM);
	}
}

Test(wr, post_send_and_builder_interleave)
{
	struct ibv_sge s = { 0, 32, 0 };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;

	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 64);
	s.addr = (uintptr_t)A.buf;
	s.lkey = A.mr->lkey;
	w.wr.rdma.rkey = B.mr->rkey;
	for (uint64_t i = 0; i < 6; i++) {
		tc_fill(A.buf + 1024 * i, 32, (uint32_t)i + 20);
		if (i % 2 == 0) {
			s.addr = (uintptr_t)A.buf + 1024 * i;
			w.wr_id = i;
			w.wr.rdma.remote_addr = (uintptr_t)B.buf + 1024 * i;
			cr_assert_eq(ibv_post_send(A.qp, &w, &bad), 0);
		} else {
			start(i, IBV_SEND_SIGNALED);
			ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf + 1024 * i);
			ibv_wr_set_sge(A.qpx, A.mr->lkey, (uintptr_t)A.buf + 1024 * i, 32);
			cr_assert_eq(ibv_wr_complete(A.qpx), 0);
		}
	}
	for (uint64_t i = 0; i < 6; i++) {
		sent(i, IBV_WC_RDMA_WRITE, "interleaved");
		cr_assert(tc_check(B.buf + 1024 * i, 32, (uint32_t)i + 20));
	}
}

Test(wr, qp_from_ibv_create_qp_has_the_builder)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qx;

	x_start();
	x_open(&A, "droce0", IBV_QPT_RC, 0, 16);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ibv_cq_ex_to_cq(A.scq);
	ia.recv_cq = ibv_cq_ex_to_cq(A.rcq);
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	qp = ibv_create_qp(A.pd, &ia);
	cr_assert_not_null(qp);
	qx = ibv_qp_to_qp_ex(qp);
	cr_assert_not_null(qx, "every droce QP has the builder");
	/* still in RESET: the builder refuses as ibv_post_send */
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	cr_assert_eq(ibv_wr_complete(qx), EINVAL);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

/* ---- the critical section: two threads building batches on one QP ---- */

#define MT_BATCHES 200

static void *
mt_poster(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;

	for (uint64_t i = 0; i < MT_BATCHES; i++) {
		int rc;

		do {
			ibv_wr_start(A.qpx);
			for (uint64_t k = 0; k < 2; k++) {
				uint64_t n = i * 2 + k, v = t << 32 | n;

				A.qpx->wr_id = t << 16 | n;
				A.qpx->wr_flags = IBV_SEND_SIGNALED;
				ibv_wr_rdma_write(A.qpx, B.mr->rkey,
						  (uintptr_t)B.buf + (t * 2 * MT_BATCHES + n) * 8);
				ibv_wr_set_inline_data(A.qpx, &v, 8);
			}
			rc = ibv_wr_complete(A.qpx);
			if (rc == ENOMEM)
				sched_yield(); /* the send queue is full: the poller drains it */
		} while (rc == ENOMEM);
		cr_assert_eq(rc, 0);
	}
	return NULL;
}

Test(wr, two_threads_one_qp)
{
	pthread_t th[2];
	uint64_t next[2] = { 0, 0 };
	uint64_t end;
	int got = 0;

	x_pair(&A, &B, IBV_QPT_RC, RC_OPS, 32);
	for (uintptr_t t = 0; t < 2; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, mt_poster, (void *)t), 0);
	end = tc_now_ms() + 20000;
	while (got < 4 * MT_BATCHES) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(ibv_cq_ex_to_cq(A.scq), 16, wc);

		for (int i = 0; i < n; i++) {
			uint64_t t = wc[i].wr_id >> 16;

			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
			cr_assert_lt(t, 2);
			/* each thread's WRs complete in the order it posted them */
			cr_assert_eq(wc[i].wr_id & 0xffff, next[t], "thread %llu",
				     (unsigned long long)t);
			next[t]++;
		}
		got += n;
		cr_assert_leq(tc_now_ms(), end, "%d of %d completions", got, 4 * MT_BATCHES);
	}
	for (int t = 0; t < 2; t++)
		cr_assert_eq(pthread_join(th[t], NULL), 0);
	for (uint64_t t = 0; t < 2; t++)
		for (uint64_t n = 0; n < 2 * MT_BATCHES; n++) {
			uint64_t v;

			memcpy(&v, B.buf + (t * 2 * MT_BATCHES + n) * 8, 8);
			cr_assert_eq(v, t << 32 | n, "thread %llu WR %llu", (unsigned long long)t,
				     (unsigned long long)n);
		}
}
