/* SPDX-License-Identifier: BSD-3-Clause
 * Memory windows through the verbs API (ibv_alloc_mw(3), ibv_bind_mw(3),
 * ibv_post_send(3)): A (droce0) reaches B's (droce1) memory through windows
 * B binds.  Bytes are checked on both sides; every error is provoked for
 * real and its completion checked.
 */
#include <errno.h>
#include <string.h>

#include "mw_common.h"
#include "pmd_glue/port.h"

#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
#define RW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define WIN_OFF 65536u
#define WIN_LEN 16384u

TestSuite(mw, .fini = tc_stop, .timeout = 90);

static struct m_end A, B;

static uint64_t
win(size_t off)
{
	return (uintptr_t)B.buf + WIN_OFF + off;
}

/* WRITE @len bytes of pattern @seed into the window at @off, READ them back
 * into A's buffer elsewhere; both copies checked. */
static void
write_read_through(uint32_t rkey, size_t off, uint32_t len, uint32_t seed)
{
	tc_fill(A.buf, len, seed);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, len, win(off), rkey), IBV_WC_SUCCESS,
		     "WRITE through the window");
	cr_assert(tc_check(B.buf + WIN_OFF + off, len, seed), "bytes written through the window");
	memset(A.buf + 262144, 0, len);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_READ, 262144, len, win(off), rkey), IBV_WC_SUCCESS,
		     "READ through the window");
	cr_assert(tc_check(A.buf + 262144, len, seed), "bytes read through the window");
}

static struct ibv_mw *
alloc_mw(struct m_end *e, enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(e->pd, type);

	cr_assert_not_null(mw, "ibv_alloc_mw: %s", strerror(errno));
	cr_assert_eq(mw->type, type);
	cr_assert_eq(mw->pd, e->pd);
	return mw;
}

Test(mw, device_advertises_windows)
{
	struct ibv_device_attr da;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	cr_assert_eq(ibv_query_device(B.ctx, &da), 0);
	cr_assert(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	cr_assert(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	cr_assert_gt(da.max_mw, 0);
	errno = 0;
	cr_assert_null(ibv_alloc_mw(B.pd, (enum ibv_mw_type)3));
	cr_assert_eq(errno, EINVAL);
}

Test(mw, type1_write_read_and_out_of_window)
{
	struct ibv_mw *mw;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_1);
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), WIN_LEN, RW), IBV_WC_SUCCESS);
	write_read_through(mw->rkey, 0, WIN_LEN, 1);     /* the whole window, 16 packets */
	write_read_through(mw->rkey, 100, 3000, 2);      /* inside it */
	/* one byte past the end: NAKed, the requester sees a remote access error */
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 200, win(WIN_LEN - 199), mw->rkey),
		     IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
}

Test(mw, type1_read_before_the_window)
{
	struct ibv_mw *mw;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_1);
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), WIN_LEN, RW), IBV_WC_SUCCESS);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_READ, 0, 64, win(0) - 1, mw->rkey),
		     IBV_WC_REM_ACCESS_ERR);
}

Test(mw, type1_rights_and_unbind)
{
	struct ibv_mw *mw;
	uint32_t before;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_1);
	/* unbound: the allocated rkey reaches nothing */
	before = mw->rkey;
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), WIN_LEN, IBV_ACCESS_REMOTE_READ), IBV_WC_SUCCESS);
	cr_assert_neq(mw->rkey, before);
	memcpy(B.buf + WIN_OFF, "window", 6);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_READ, 0, 6, win(0), mw->rkey), IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(A.buf, "window", 6), 0);
	/* rebind: the old rkey is dead, the new one works */
	before = mw->rkey;
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), WIN_LEN, RW), IBV_WC_SUCCESS);
	write_read_through(mw->rkey, 0, 512, 3);
	/* unbind with a zero-length bind (ibv_alloc_mw(3)) */
	cr_assert_eq(m_bind1(&B, mw, NULL, 0, 0, 0), IBV_WC_SUCCESS);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(0), mw->rkey), IBV_WC_REM_ACCESS_ERR);
	(void)before;
}

Test(mw, type1_read_only_window_refuses_write)
{
	struct ibv_mw *mw;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_1);
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), WIN_LEN, IBV_ACCESS_REMOTE_READ), IBV_WC_SUCCESS);
	memset(B.buf + WIN_OFF, 0x5a, 64);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 64, win(0), mw->rkey), IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 64; i++)
		cr_assert_eq(B.buf[WIN_OFF + i], 0x5a, "nothing written");
}

Test(mw, type1_stale_rkey_after_rebind)
{
	struct ibv_mw *mw;
	uint32_t old;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_1);
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), WIN_LEN, RW), IBV_WC_SUCCESS);
	old = mw->rkey;
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), WIN_LEN, RW), IBV_WC_SUCCESS);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(0), old), IBV_WC_REM_ACCESS_ERR);
}

Test(mw, type2_write_read_and_out_of_window)
{
	struct ibv_mw *mw;
	uint32_t rkey;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey), IBV_WC_SUCCESS);
	cr_assert_eq(rkey & ~0xffu, mw->rkey & ~0xffu, "the index part stays");
	cr_assert_eq(rkey & 0xffu, (mw->rkey + 1) & 0xffu, "the key byte is the consumer's");
	write_read_through(rkey, 0, WIN_LEN, 4);
	write_read_through(rkey, WIN_LEN - 1, 1, 5);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_READ, 0, WIN_LEN + 1, win(0), rkey),
		     IBV_WC_REM_ACCESS_ERR);
}

Test(mw, type2_stale_rkey)
{
	struct ibv_mw *mw;
	uint32_t rkey;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey), IBV_WC_SUCCESS);
	/* the key byte from allocation is not the bound one */
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(0), mw->rkey), IBV_WC_REM_ACCESS_ERR);
}

Test(mw, type2_local_inv_then_use)
{
	struct ibv_mw *mw;
	uint32_t rkey, rkey2;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey), IBV_WC_SUCCESS);
	write_read_through(rkey, 0, 4096, 6);
	cr_assert_eq(ibv_dereg_mr(B.mr), EBUSY, "ibv_dereg_mr fails while a window is bound");
	cr_assert_eq(m_local_inv(&B, rkey), IBV_WC_SUCCESS);
	/* free again: it binds with a new key, the old key stays dead */
	mw->rkey = rkey;
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey2), IBV_WC_SUCCESS);
	cr_assert_neq(rkey2, rkey);
	write_read_through(rkey2, 8, 100, 7);
	cr_assert_eq(m_local_inv(&B, rkey2), IBV_WC_SUCCESS);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(0), rkey2), IBV_WC_REM_ACCESS_ERR);
}

Test(mw, type2_send_with_inv_then_use)
{
	struct ibv_mw *mw;
	uint32_t rkey;
	struct ibv_sge sge = { .length = 300 };
	struct ibv_sge rsge;
	struct ibv_recv_wr r = { .wr_id = 0xcafe, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr w = { .wr_id = 0x5e, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	sge.addr = (uintptr_t)A.buf;
	sge.lkey = A.mr->lkey;
	rsge = (struct ibv_sge){ .addr = (uintptr_t)B.buf, .length = 4096, .lkey = B.mr->lkey };
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey), IBV_WC_SUCCESS);
	write_read_through(rkey, 0, 2048, 8);
	cr_assert_eq(ibv_post_recv(B.qp, &r, &rbad), 0);
	tc_fill(A.buf, 300, 9);
	w.invalidate_rkey = rkey;
	m_post(&A, &w);
	wc = m_wc(A.scq, "SEND_WITH_INV");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, IBV_WC_SEND);
	cr_assert_eq(wc.wr_id, 0x5e);
	wc = m_wc(B.rcq, "receive of SEND_WITH_INV");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0xcafe);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, 300);
	cr_assert_eq(wc.qp_num, B.qp->qp_num);
	cr_assert_eq(wc.src_qp, A.qp->qp_num);
	cr_assert_eq(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_WITH_IMM), IBV_WC_WITH_INV);
	cr_assert_eq(wc.invalidated_rkey, rkey);
	cr_assert(tc_check(B.buf, 300, 9));
	/* the invalidated key is dead */
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(0), rkey), IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
}

/* After a SEND_WITH_INV the window is free: it binds again, with a new key. */
Test(mw, type2_rebind_after_remote_invalidation)
{
	struct ibv_mw *mw;
	uint32_t rkey, rkey2;
	struct ibv_sge rsge;
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr w = { .wr_id = 2, .opcode = IBV_WR_SEND_WITH_INV,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	rsge = (struct ibv_sge){ .addr = (uintptr_t)B.buf, .length = 64, .lkey = B.mr->lkey };
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey), IBV_WC_SUCCESS);
	cr_assert_eq(ibv_post_recv(B.qp, &r, &rbad), 0);
	w.invalidate_rkey = rkey; /* zero-length SEND_WITH_INV */
	m_post(&A, &w);
	cr_assert_eq(m_wc(A.scq, "SEND_WITH_INV").status, IBV_WC_SUCCESS);
	wc = m_wc(B.rcq, "receive");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 0);
	cr_assert(wc.wc_flags & IBV_WC_WITH_INV);
	cr_assert_eq(wc.invalidated_rkey, rkey);
	mw->rkey = rkey;
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey2), IBV_WC_SUCCESS);
	write_read_through(rkey2, 0, 1000, 10);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(0), rkey), IBV_WC_REM_ACCESS_ERR);
}

/* A SEND_WITH_INV naming no window it may invalidate: the responder NAKs it
 * (invalid request), its receive completes in error, both QPs stop. */
Test(mw, send_with_inv_of_a_bad_key)
{
	struct ibv_mw *mw1;
	struct ibv_sge rsge;
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr w = { .wr_id = 2, .opcode = IBV_WR_SEND_WITH_INV,
				 .send_flags = IBV_SEND_SIGNALED };
	const char *what[] = { "an MR's rkey", "a type 1 window", "a free type 2 window" };
	uint32_t keys[3];
	struct ibv_mw *mw2;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw1 = alloc_mw(&B, IBV_MW_TYPE_1);
	mw2 = alloc_mw(&B, IBV_MW_TYPE_2);
	keys[0] = B.mr->rkey;
	keys[2] = mw2->rkey;
	for (int i = 0; i < 3; i++) {
		struct ibv_wc wc;

		if (i == 1) {
			cr_assert_eq(m_bind1(&B, mw1, B.mr, win(0), WIN_LEN, RW), IBV_WC_SUCCESS);
			keys[1] = mw1->rkey;
		}
		rsge = (struct ibv_sge){ .addr = (uintptr_t)B.buf, .length = 64, .lkey = B.mr->lkey };
		cr_assert_eq(ibv_post_recv(B.qp, &r, &rbad), 0);
		w.invalidate_rkey = keys[i];
		m_post(&A, &w);
		wc = m_wc(A.scq, what[i]);
		cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR, "%s: %s", what[i],
			     ibv_wc_status_str(wc.status));
		wc = m_wc(B.rcq, what[i]);
		cr_assert_neq(wc.status, IBV_WC_SUCCESS, "%s: the receive fails", what[i]);
		m_reconnect(&A, &B, IBV_QPT_RC);
	}
	/* the MR and the type 1 window still work */
	write_read_through(mw1->rkey, 0, 256, 11);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, (uintptr_t)B.buf, B.mr->rkey),
		     IBV_WC_SUCCESS);
}

/* A type 2 window is reachable only through the QP it was bound through. */
Test(mw, type2_only_through_its_qp)
{
	struct ibv_mw *mw;
	uint32_t rkey;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, RW, &rkey), IBV_WC_SUCCESS);
	write_read_through(rkey, 0, 64, 12);
	/* a new QP pair in the same PDs: the window stays bound to the old QP */
	m_reconnect(&A, &B, IBV_QPT_RC);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_READ, 0, 64, win(0), rkey), IBV_WC_REM_ACCESS_ERR);
}

Test(mw, dereg_mr_busy_while_bound_and_dealloc_unbinds)
{
	uint8_t *mem = calloc(1, 8192);
	struct ibv_mr *mr;
	struct ibv_mw *mw1, *mw2;
	uint32_t rkey;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	cr_assert_not_null(mem);
	mr = ibv_reg_mr(B.pd, mem, 8192, ALL_ACCESS);
	cr_assert_not_null(mr);
	mw1 = alloc_mw(&B, IBV_MW_TYPE_1);
	mw2 = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind1(&B, mw1, mr, (uintptr_t)mem, 4096, RW), IBV_WC_SUCCESS);
	cr_assert_eq(m_bind2(&B, mw2, mr, (uintptr_t)mem + 4096, 4096, RW, &rkey), IBV_WC_SUCCESS);
	cr_assert_eq(ibv_dereg_mr(mr), EBUSY);
	cr_assert_eq(ibv_dealloc_pd(B.pd), EBUSY);
	cr_assert_eq(m_local_inv(&B, rkey), IBV_WC_SUCCESS);
	cr_assert_eq(ibv_dereg_mr(mr), EBUSY, "the type 1 window is still bound");
	cr_assert_eq(ibv_dealloc_mw(mw1), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_dealloc_mw(mw2), 0);
	free(mem);
}

/* Each bind the engine must refuse: IBV_WC_MW_BIND_ERR, the QP stops. */
Test(mw, bind_errors)
{
	uint8_t *mem = calloc(1, 3 * 8192);
	struct ibv_mr *no_bind, *no_lw, *ok;
	struct ibv_pd *pd2;
	struct ibv_mw *mw, *mw1, *other_pd;
	uint32_t rkey;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	cr_assert_not_null(mem);
	no_bind = ibv_reg_mr(B.pd, mem, 8192, IBV_ACCESS_LOCAL_WRITE | RW);
	no_lw = ibv_reg_mr(B.pd, mem + 8192, 8192, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	ok = ibv_reg_mr(B.pd, mem + 16384, 8192, ALL_ACCESS);
	pd2 = ibv_alloc_pd(B.ctx);
	cr_assert(no_bind && no_lw && ok && pd2);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	mw1 = alloc_mw(&B, IBV_MW_TYPE_1);
	other_pd = ibv_alloc_mw(pd2, IBV_MW_TYPE_2);
	cr_assert_not_null(other_pd);

	/* the MR lacks IBV_ACCESS_MW_BIND */
	cr_assert_eq(m_bind2(&B, mw, no_bind, (uintptr_t)mem, 4096, RW, &rkey), IBV_WC_MW_BIND_ERR);
	/* the QP is in error: what follows is flushed */
	cr_assert_eq(m_local_inv(&B, rkey), IBV_WC_WR_FLUSH_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	/* remote write without local write on the MR (C10-74); read alone is fine */
	cr_assert_eq(m_bind2(&B, mw, no_lw, (uintptr_t)mem + 8192, 4096, IBV_ACCESS_REMOTE_WRITE,
			     &rkey), IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	cr_assert_eq(m_bind2(&B, mw, no_lw, (uintptr_t)mem + 8192, 4096, IBV_ACCESS_REMOTE_READ,
			     &rkey), IBV_WC_SUCCESS);
	mw->rkey = rkey;
	cr_assert_eq(m_local_inv(&B, rkey), IBV_WC_SUCCESS);
	/* the window sticks out of the MR, at either end */
	cr_assert_eq(m_bind2(&B, mw, ok, (uintptr_t)mem + 16384 + 4096, 4097, RW, &rkey),
		     IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	cr_assert_eq(m_bind2(&B, mw, ok, (uintptr_t)mem + 16383, 16, RW, &rkey), IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	/* a window of another PD than the QP's */
	cr_assert_eq(m_bind2(&B, other_pd, ok, (uintptr_t)mem + 16384, 16, RW, &rkey),
		     IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	/* a type 2 window binds only while free */
	cr_assert_eq(m_bind2(&B, mw, ok, (uintptr_t)mem + 16384, 64, RW, &rkey), IBV_WC_SUCCESS);
	mw->rkey = rkey;
	cr_assert_eq(m_bind2(&B, mw, ok, (uintptr_t)mem + 16384, 64, RW, &rkey), IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	/* a zero-length type 2 bind */
	cr_assert_eq(m_local_inv(&B, mw->rkey), IBV_WC_SUCCESS);
	cr_assert_eq(m_bind2(&B, mw, ok, (uintptr_t)mem + 16384, 0, RW, &rkey), IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	/* LOCAL_INV of a type 1 window, of an MR, of a free window */
	cr_assert_eq(m_bind1(&B, mw1, ok, (uintptr_t)mem + 16384, 64, RW), IBV_WC_SUCCESS);
	cr_assert_eq(m_local_inv(&B, mw1->rkey), IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	cr_assert_eq(m_local_inv(&B, ok->rkey), IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	cr_assert_eq(m_local_inv(&B, mw->rkey), IBV_WC_MW_BIND_ERR);
	m_reconnect(&A, &B, IBV_QPT_RC);
	/* ibv_bind_mw's own checks (verbs.h) and ours at post time */
	{
		struct ibv_mw_bind mb = { .bind_info = { .mr = ok, .addr = 1, .length = 1 } };
		struct ibv_send_wr w = { .opcode = IBV_WR_BIND_MW }, *bad;

		cr_assert_eq(ibv_bind_mw(B.qp, mw, &mb), EINVAL, "type 2 through ibv_bind_mw");
		mb.bind_info.mr = NULL;
		cr_assert_eq(ibv_bind_mw(B.qp, mw1, &mb), EINVAL, "no MR with a length");
		mb.bind_info.mr = ok;
		mb.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
		cr_assert_eq(ibv_bind_mw(B.qp, mw1, &mb), EINVAL, "zero-based windows");
		cr_assert_eq(ibv_post_send(B.qp, &w, &bad), EINVAL, "no window");
		cr_assert_eq(bad, &w);
		w.bind_mw.mw = mw;
		w.send_flags = IBV_SEND_INLINE;
		cr_assert_eq(ibv_post_send(B.qp, &w, &bad), EINVAL, "inline bind");
	}
	/* after all that, a good bind on the fresh QP works */
	cr_assert_eq(m_bind2(&B, mw, ok, (uintptr_t)mem + 16384, 64, RW, &rkey), IBV_WC_SUCCESS);
	tc_fill(A.buf, 64, 13);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)mem + 16384, rkey),
		     IBV_WC_SUCCESS);
	cr_assert(tc_check(mem + 16384, 64, 13));
}

/* Binds and invalidations complete in order with the WRs around them. */
Test(mw, bind_in_order_with_sends)
{
	struct ibv_mw *mw;
	struct ibv_sge sge, rsge;
	struct ibv_send_wr w[3] = { 0 };
	struct ibv_recv_wr r = { .wr_id = 9, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_wc wc[3];
	uint32_t rkey;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	sge = (struct ibv_sge){ .addr = (uintptr_t)B.buf, .length = 4, .lkey = B.mr->lkey };
	rsge = (struct ibv_sge){ .addr = (uintptr_t)A.buf + 1024, .length = 64, .lkey = A.mr->lkey };
	cr_assert_eq(ibv_post_recv(A.qp, &r, &rbad), 0);
	/* SEND, BIND (rkey travels in the next SEND), SEND: one list */
	rkey = ibv_inc_rkey(mw->rkey);
	memcpy(B.buf, &rkey, 4);
	for (int i = 0; i < 3; i++) {
		w[i].wr_id = 100 + (uint64_t)i;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	w[0].opcode = IBV_WR_SEND;
	w[0].sg_list = &sge;
	w[0].num_sge = 1;
	w[1].opcode = IBV_WR_BIND_MW;
	w[1].bind_mw.mw = mw;
	w[1].bind_mw.rkey = rkey;
	w[1].bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = B.mr, .addr = win(0),
							    .length = WIN_LEN, .mw_access_flags = RW };
	w[2].opcode = IBV_WR_RDMA_WRITE;
	w[2].sg_list = &sge;
	w[2].num_sge = 1;
	w[2].wr.rdma.remote_addr = (uintptr_t)A.buf + 2048;
	w[2].wr.rdma.rkey = A.mr->rkey;
	{
		struct ibv_send_wr *bad;

		cr_assert_eq(ibv_post_send(B.qp, w, &bad), 0);
	}
	cr_assert_eq(tc_poll(B.scq, wc, 3, 2000), 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, 100 + (uint64_t)i, "in order");
	}
	cr_assert_eq(wc[1].opcode, IBV_WC_BIND_MW);
	cr_assert_eq(m_wc(A.rcq, "rkey message").byte_len, 4);
	memcpy(&rkey, A.buf + 1024, 4);
	write_read_through(rkey, 0, 3333, 14);
}

/* ---- UC: binds and invalidation on the UC QP, WRITE through the window ---- */

Test(mw, uc_type2_write_and_local_inv)
{
	struct ibv_mw *mw;
	uint32_t rkey;
	struct ibv_sge sge;
	struct ibv_send_wr w = { .wr_id = 3, .opcode = IBV_WR_SEND_WITH_INV,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	m_setup(&A, &B, IBV_QPT_UC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	cr_assert_eq(m_bind2(&B, mw, B.mr, win(0), WIN_LEN, IBV_ACCESS_REMOTE_WRITE, &rkey),
		     IBV_WC_SUCCESS);
	tc_fill(A.buf, WIN_LEN, 15);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, WIN_LEN, win(0), rkey), IBV_WC_SUCCESS);
	/* UC has no ACKs: the bytes arrive when the engines have run */
	tc_expect_none(B.rcq, 50, "nothing to receive");
	cr_assert(tc_check(B.buf + WIN_OFF, WIN_LEN, 15));
	cr_assert_eq(m_local_inv(&B, rkey), IBV_WC_SUCCESS);
	/* after invalidation the WRITE is dropped (UC: no NAK), nothing lands */
	tc_fill(A.buf, 64, 16);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 64, win(0), rkey), IBV_WC_SUCCESS);
	tc_expect_none(B.rcq, 50, "nothing to receive");
	cr_assert(tc_check(B.buf + WIN_OFF, 64, 15), "the old bytes stay");
	/* SEND_WITH_INV on UC: posted, and fails (no UC opcode carries an IETH) */
	sge = (struct ibv_sge){ .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
	w.sg_list = &sge;
	w.num_sge = 1;
	w.invalidate_rkey = rkey;
	m_post(&A, &w);
	wc = m_wc(A.scq, "UC SEND_WITH_INV");
	cr_assert_eq(wc.status, IBV_WC_LOC_QP_OP_ERR, "%s", ibv_wc_status_str(wc.status));
}

Test(mw, uc_type1)
{
	struct ibv_mw *mw;

	m_setup(&A, &B, IBV_QPT_UC, ALL_ACCESS);
	mw = alloc_mw(&B, IBV_MW_TYPE_1);
	cr_assert_eq(m_bind1(&B, mw, B.mr, win(0), 4096, IBV_ACCESS_REMOTE_WRITE), IBV_WC_SUCCESS);
	tc_fill(A.buf, 4096, 17);
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 4096, win(0), mw->rkey), IBV_WC_SUCCESS);
	tc_expect_none(B.rcq, 50, "nothing to receive");
	cr_assert(tc_check(B.buf + WIN_OFF, 4096, 17));
	/* out of the window: dropped */
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(4090), mw->rkey), IBV_WC_SUCCESS);
	tc_expect_none(B.rcq, 50, "nothing to receive");
	cr_assert(tc_check(B.buf + WIN_OFF, 4096, 17));
	cr_assert_eq(t_stats().uc_access_drops, 1);
}

/* A bind behind a READ completes once the READ's response is in; atomics
 * through a window need its remote atomic right. */
Test(mw, bind_behind_read_and_atomic_through_window)
{
	struct ibv_mw *mw, *mw_ro;
	struct ibv_sge sge;
	struct ibv_send_wr w[2] = { 0 }, *bad;
	struct ibv_wc wc[2];
	uint32_t rkey, rkey_ro;
	uint64_t *word;

	m_setup(&A, &B, IBV_QPT_RC, ALL_ACCESS);
	word = (uint64_t *)(void *)(B.buf + WIN_OFF + 64);
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	mw_ro = alloc_mw(&B, IBV_MW_TYPE_2);
	tc_fill(A.buf + 8192, 4096, 18);
	sge = (struct ibv_sge){ .addr = (uintptr_t)B.buf, .length = 4096, .lkey = B.mr->lkey };
	w[0].wr_id = 1;
	w[0].opcode = IBV_WR_RDMA_READ;
	w[0].sg_list = &sge;
	w[0].num_sge = 1;
	w[0].send_flags = IBV_SEND_SIGNALED;
	w[0].wr.rdma.remote_addr = (uintptr_t)A.buf + 8192;
	w[0].wr.rdma.rkey = A.mr->rkey;
	w[0].next = &w[1];
	w[1].wr_id = 2;
	w[1].opcode = IBV_WR_BIND_MW;
	w[1].send_flags = IBV_SEND_SIGNALED;
	w[1].bind_mw.mw = mw;
	w[1].bind_mw.rkey = rkey = ibv_inc_rkey(mw->rkey);
	w[1].bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = B.mr, .addr = win(0), .length = 4096,
		.mw_access_flags = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ };
	cr_assert_eq(ibv_post_send(B.qp, w, &bad), 0);
	cr_assert_eq(tc_poll(B.scq, wc, 2, 2000), 2);
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, IBV_WC_RDMA_READ);
	cr_assert_eq(wc[1].wr_id, 2);
	cr_assert_eq(wc[1].status, IBV_WC_SUCCESS);
	cr_assert_eq(wc[1].opcode, IBV_WC_BIND_MW);
	cr_assert(tc_check(B.buf, 4096, 18));

	*word = 40;
	{
		struct ibv_sge as = { .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
		struct ibv_send_wr aw = { .wr_id = 3, .sg_list = &as, .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					  .send_flags = IBV_SEND_SIGNALED };
		struct ibv_wc c;
		uint64_t orig;

		aw.wr.atomic.remote_addr = win(64);
		aw.wr.atomic.rkey = rkey;
		aw.wr.atomic.compare_add = 2;
		m_post(&A, &aw);
		c = m_wc(A.scq, "fetch-add through the window");
		cr_assert_eq(c.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(c.status));
		cr_assert_eq(c.opcode, IBV_WC_FETCH_ADD);
		memcpy(&orig, A.buf, 8);
		cr_assert_eq(orig, 40);
		cr_assert_eq(*word, 42);
		/* a window without the atomic right */
		cr_assert_eq(m_bind2(&B, mw_ro, B.mr, win(0), 4096, IBV_ACCESS_REMOTE_READ, &rkey_ro),
			     IBV_WC_SUCCESS);
		aw.wr.atomic.rkey = rkey_ro;
		m_post(&A, &aw);
		c = m_wc(A.scq, "fetch-add without the right");
		cr_assert_eq(c.status, IBV_WC_REM_ACCESS_ERR, "%s", ibv_wc_status_str(c.status));
		cr_assert_eq(*word, 42);
	}
}

/* Go-back-N over a lossy link passes binds and invalidations already
 * executed without running them again: a type 2 window re-bound twice would
 * fail with MW_BIND_ERR, an invalidation twice likewise. */
Test(mw, binds_between_sends_on_a_lossy_link, .timeout = 120)
{
	struct ibv_mw *mw;
	uint32_t rkey = 0, prev = 0;
	struct ibv_sge sge;
	struct ibv_wc wc[4];

	m_setup_link(&A, &B, IBV_QPT_RC, ALL_ACCESS,
		     "impair_drop = 0.05\nimpair_reorder = 0.02\nimpair_dir = both\nimpair_seed = 11");
	mw = alloc_mw(&B, IBV_MW_TYPE_2);
	tc_fill(B.buf, 8192, 19);
	sge = (struct ibv_sge){ .addr = (uintptr_t)B.buf, .length = 8192, .lkey = B.mr->lkey };
	for (int i = 0; i < 40; i++) {
		struct ibv_send_wr w[4] = { 0 }, *bad;
		int n = 0;

		prev = rkey;
		rkey = ibv_inc_rkey(i ? prev : mw->rkey);
		/* WRITE 8 KiB, [LOCAL_INV old], BIND new, WRITE 8 KiB */
		w[n].opcode = IBV_WR_RDMA_WRITE;
		w[n].sg_list = &sge;
		w[n].num_sge = 1;
		w[n].wr.rdma.remote_addr = (uintptr_t)A.buf;
		w[n].wr.rdma.rkey = A.mr->rkey;
		n++;
		if (i) {
			w[n].opcode = IBV_WR_LOCAL_INV;
			w[n].invalidate_rkey = prev;
			n++;
		}
		w[n].opcode = IBV_WR_BIND_MW;
		w[n].bind_mw.mw = mw;
		w[n].bind_mw.rkey = rkey;
		w[n].bind_mw.bind_info = (struct ibv_mw_bind_info){
			.mr = B.mr, .addr = win(0), .length = WIN_LEN, .mw_access_flags = RW };
		n++;
		w[n] = w[0];
		w[n].wr.rdma.remote_addr = (uintptr_t)A.buf + 8192;
		n++;
		for (int k = 0; k < n; k++) {
			w[k].wr_id = (uint64_t)(i * 10 + k);
			w[k].send_flags = IBV_SEND_SIGNALED;
			w[k].next = k + 1 < n ? &w[k + 1] : NULL;
		}
		cr_assert_eq(ibv_post_send(B.qp, w, &bad), 0);
		cr_assert_eq(tc_poll(B.scq, wc, n, 5000), n, "round %d", i);
		for (int k = 0; k < n; k++) {
			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "round %d wr %d: %s", i, k,
				     ibv_wc_status_str(wc[k].status));
			cr_assert_eq(wc[k].wr_id, (uint64_t)(i * 10 + k), "in order");
		}
	}
	cr_assert(tc_check(A.buf, 8192, 19));
	cr_assert(tc_check(A.buf + 8192, 8192, 19));
	write_read_through(rkey, 0, 2048, 20);
	{
		struct droce_port_stats ps;

		droce_port_stats_get(droce_port_get(0), &ps);
		cr_assert_gt(ps.impair_tx.dropped + ps.impair_rx.dropped, 10, "the link lost frames");
		cr_assert_gt(ps.impair_tx.reordered + ps.impair_rx.reordered, 0);
	}
	/* a lost NAK is not sent again (the responder is in ERR): a clean link for the last check */
	{
		struct droce_impair_config none;

		memset(&none, 0, sizeof(none));
		cr_assert_eq(droce_port_impair_set(droce_port_get(0), &none), 0);
	}
	cr_assert_eq(m_rdma(&A, IBV_WR_RDMA_WRITE, 0, 8, win(0), prev), IBV_WC_REM_ACCESS_ERR);
}
