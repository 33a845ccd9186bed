/* SPDX-License-Identifier: BSD-3-Clause
 * Over 800 lines: one suite of the verbs issue 22 added (rereg, resize, in-order, helpers); its fixtures are shared.
 * The ABI-level verbs of issue 22 over the real engines (the embedded
 * loopback pair droce0 <-> droce1): ibv_rereg_mr (each flag, its errors and
 * return codes, bytes landing in the new translation, the old rkey refused
 * after CHANGE_ACCESS, reregistration while WRITEs are in flight),
 * ibv_resize_cq (completions kept, EINVAL cases, resizing under traffic),
 * ibv_query_qp_data_in_order, and the answers for what droce leaves out
 * (import, dmabuf, ECE) and libibverbs' helpers (rates, kernel-ABI copies,
 * sysfs path, fork ranges, L2 resolution).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <infiniband/sa.h>

#include "env.h"

/* <infiniband/marshall.h>'s (Debian does not install it). */
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
/* exported by libibverbs, declared by no installed header of rdma-core 44 */
const char *ibv_get_sysfs_path(void);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

#define BUF 65536

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static struct end A, B;

TestSuite(abi_verbs, .fini = tc_stop, .timeout = 60);

static void
open_end(struct end *e, const char *name, int cqe)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 256, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	e->ctx = tc_open(name, &e->gid);
	e->pd = ibv_alloc_pd(e->ctx);
	cr_assert_not_null(e->pd);
	e->mr = tc_reg_buf(e->pd, BUF, 0);
	e->buf = e->mr->addr;
	e->cq = ibv_create_cq(e->ctx, cqe, NULL, NULL, 0);
	cr_assert_not_null(e->cq);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	cr_assert_not_null(e->qp, "ibv_create_qp: %s", strerror(errno));
}

static void
up(struct end *e, const struct end *peer)
{
	struct tc_conn c = { .dgid = peer->gid, .dest_qpn = peer->qp->qp_num, .psn = 0x100,
			     .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	tc_qp_up(e->qp, &c);
}

static void
pair(int cqe)
{
	open_end(&A, "droce0", cqe);
	open_end(&B, "droce1", cqe);
	up(&A, &B);
	up(&B, &A);
}

/* Both QPs back to RTS after an error (RESET first). */
static void
restate(void)
{
	tc_qp_state(A.qp, IBV_QPS_RESET);
	tc_qp_state(B.qp, IBV_QPS_RESET);
	up(&A, &B);
	up(&B, &A);
}

static int
post_write(struct end *e, uint64_t id, void *src, uint32_t len, uint32_t lkey, uint64_t raddr,
	   uint32_t rkey, bool signaled)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0 },
			   *bad;

	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	return ibv_post_send(e->qp, &w, &bad);
}

static int
post_send(struct end *e, uint64_t id, void *src, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	return ibv_post_send(e->qp, &w, &bad);
}

static int
post_recv(struct end *e, uint64_t id, void *dst, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)dst, .length = len, .lkey = lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(e->qp, &w, &bad);
}

/* One signaled WRITE of @len bytes from A's buffer to @raddr/@rkey on B; its status. */
static enum ibv_wc_status
write_once(uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_wc wc;

	cr_assert_eq(post_write(&A, 7, A.buf, len, A.mr->lkey, raddr, rkey, true), 0);
	wc = tc_wait(A.cq, 5000, "the WRITE's completion");
	cr_assert_eq(wc.wr_id, 7);
	return wc.status;
}

/* ---- ibv_rereg_mr ---- */

Test(abi_verbs, rereg_access_keeps_keys_and_the_old_rkey_loses_remote_write)
{
	uint32_t lkey, rkey;

	pair(64);
	lkey = B.mr->lkey;
	rkey = B.mr->rkey;
	tc_fill(A.buf, 4096, 1);
	cr_assert_eq(write_once((uintptr_t)B.buf, rkey, 4096), IBV_WC_SUCCESS);
	cr_assert(tc_check(B.buf, 4096, 1));

	/* the same rights again: the keys stay, traffic goes on */
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0);
	cr_assert_eq(B.mr->lkey, lkey);
	cr_assert_eq(B.mr->rkey, rkey);
	tc_fill(A.buf, 4096, 2);
	cr_assert_eq(write_once((uintptr_t)B.buf, rkey, 4096), IBV_WC_SUCCESS);
	cr_assert(tc_check(B.buf, 4096, 2));

	/* remote write taken away: the old rkey is NAKed with a remote access error */
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE), 0);
	cr_assert_eq(B.mr->rkey, rkey);
	tc_fill(A.buf, 4096, 3);
	cr_assert_eq(write_once((uintptr_t)B.buf, rkey, 4096), IBV_WC_REM_ACCESS_ERR);
	cr_assert(tc_check(B.buf, 4096, 2), "nothing written");

	/* and given back: the same key works again */
	restate();
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0);
	cr_assert_eq(write_once((uintptr_t)B.buf, rkey, 4096), IBV_WC_SUCCESS);
	cr_assert(tc_check(B.buf, 4096, 3));
}

Test(abi_verbs, rereg_translation_moves_the_bytes_to_the_new_buffer)
{
	uint8_t *nbuf = aligned_alloc(4096, BUF);
	uint8_t *old;
	uint32_t rkey;

	cr_assert_not_null(nbuf);
	memset(nbuf, 0, BUF);
	pair(64);
	old = B.buf;
	rkey = B.mr->rkey;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nbuf, 8192, 0), 0);
	cr_assert_eq(B.mr->addr, nbuf);
	cr_assert_eq(B.mr->length, 8192);
	cr_assert_eq(B.mr->rkey, rkey);
	cr_assert_eq(B.mr->pd, B.pd);
	tc_fill(A.buf, 8192, 4);
	cr_assert_eq(write_once((uintptr_t)nbuf, rkey, 8192), IBV_WC_SUCCESS);
	cr_assert(tc_check(nbuf, 8192, 4), "the WRITE landed in the new translation");
	for (size_t i = 0; i < 8192; i++)
		cr_assert_eq(old[i], 0, "the old buffer is untouched (byte %zu)", i);
	/* the old range and past the new length: outside the MR */
	cr_assert_eq(write_once((uintptr_t)old, rkey, 64), IBV_WC_REM_ACCESS_ERR);
	restate();
	cr_assert_eq(write_once((uintptr_t)nbuf + 8192 - 32, rkey, 64), IBV_WC_REM_ACCESS_ERR);
	restate();
	/* a SEND lands through the new translation with the same lkey */
	cr_assert_eq(post_recv(&B, 11, nbuf + 100, 200, B.mr->lkey), 0);
	tc_fill(A.buf, 200, 5);
	cr_assert_eq(post_send(&A, 12, A.buf, 200, A.mr->lkey), 0);
	cr_assert_eq(tc_wait(A.cq, 5000, "send").status, IBV_WC_SUCCESS);
	cr_assert_eq(tc_wait(B.cq, 5000, "recv").status, IBV_WC_SUCCESS);
	cr_assert(tc_check(nbuf + 100, 200, 5));
	/* the old address in a receive SGE is now outside it */
	cr_assert_eq(post_recv(&B, 13, old, 200, B.mr->lkey), 0);
	cr_assert_eq(post_send(&A, 14, A.buf, 200, A.mr->lkey), 0);
	cr_assert_eq(tc_wait(A.cq, 5000, "send").status, IBV_WC_REM_OP_ERR);
	cr_assert_eq(tc_wait(B.cq, 5000, "recv").status, IBV_WC_LOC_PROT_ERR);
	cr_assert_eq(ibv_dereg_mr(B.mr), 0);
	free(nbuf);
}

Test(abi_verbs, rereg_pd_moves_the_mr_and_its_pd_count)
{
	struct ibv_pd *pd2;

	pair(64);
	pd2 = ibv_alloc_pd(B.ctx);
	cr_assert_not_null(pd2);
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0), 0);
	cr_assert_eq(B.mr->pd, pd2);
	cr_assert_eq(ibv_dealloc_pd(pd2), EBUSY, "the MR is in it now");
	/* a receive through a QP of the old PD: protection error, the sender
	 * sees a remote operational error (as mlx5 and the pyverbs suite) */
	cr_assert_eq(post_recv(&B, 1, B.buf, 64, B.mr->lkey), 0);
	cr_assert_eq(post_send(&A, 2, A.buf, 64, A.mr->lkey), 0);
	cr_assert_eq(tc_wait(A.cq, 5000, "send").status, IBV_WC_REM_OP_ERR);
	cr_assert_eq(tc_wait(B.cq, 5000, "recv").status, IBV_WC_LOC_PROT_ERR);
	/* the remote side's WRITEs check the PD too */
	restate();
	cr_assert_eq(write_once((uintptr_t)B.buf, B.mr->rkey, 64), IBV_WC_REM_ACCESS_ERR);
	/* back to its PD: works again, and the other PD can go */
	restate();
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_PD, B.pd, NULL, 0, 0), 0);
	cr_assert_eq(ibv_dealloc_pd(pd2), 0);
	tc_fill(A.buf, 64, 6);
	cr_assert_eq(post_recv(&B, 3, B.buf, 64, B.mr->lkey), 0);
	cr_assert_eq(post_send(&A, 4, A.buf, 64, A.mr->lkey), 0);
	cr_assert_eq(tc_wait(A.cq, 5000, "send").status, IBV_WC_SUCCESS);
	cr_assert_eq(tc_wait(B.cq, 5000, "recv").status, IBV_WC_SUCCESS);
	cr_assert(tc_check(B.buf, 64, 6));
	cr_assert_eq(ibv_dealloc_pd(B.pd), EBUSY, "its MR and QP");
}

Test(abi_verbs, rereg_all_three_flags_at_once)
{
	uint8_t *nbuf = aligned_alloc(4096, 4096);
	struct ibv_pd *pd2;

	cr_assert_not_null(nbuf);
	memset(nbuf, 0, 4096);
	pair(64);
	pd2 = ibv_alloc_pd(B.ctx);
	cr_assert_eq(ibv_rereg_mr(B.mr,
				  IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
					  IBV_REREG_MR_CHANGE_ACCESS,
				  pd2, nbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
		     0);
	cr_assert_eq(B.mr->pd, pd2);
	cr_assert_eq(B.mr->addr, nbuf);
	cr_assert_eq(ibv_dereg_mr(B.mr), 0);
	cr_assert_eq(ibv_dealloc_pd(pd2), 0, "the MR's PD count went with it");
	free(nbuf);
}

Test(abi_verbs, rereg_errors_leave_the_mr_unchanged)
{
	uint8_t *ro;
	uint32_t rkey;
	struct ibv_mw *mw;
	struct ibv_mw_bind bind = { .wr_id = 9, .send_flags = IBV_SEND_SIGNALED };

	pair(64);
	rkey = B.mr->rkey;
	/* libibverbs' own checks: IBV_REREG_MR_ERR_INPUT, errno EINVAL */
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, 1 << 3, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 64, 0),
		     IBV_REREG_MR_ERR_INPUT, "no address");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, B.buf, 0, 0),
		     IBV_REREG_MR_ERR_INPUT, "no length");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_PD, B.pd, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE),
		     IBV_REREG_MR_ERR_INPUT, "access without CHANGE_ACCESS");
	cr_assert_eq(errno, EINVAL);
	/* the kernel's: IBV_REREG_MR_ERR_CMD with the errno */
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_CMD, "no flag");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_REMOTE_WRITE),
		     IBV_REREG_MR_ERR_CMD, "remote write needs local write");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0),
		     IBV_REREG_MR_ERR_CMD, "no PD");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_PD, A.pd, NULL, 0, 0),
		     IBV_REREG_MR_ERR_CMD, "a PD of another context");
	cr_assert_eq(errno, EINVAL);
	/* unmapped memory, and a read-only mapping asked for write */
	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(ro, MAP_FAILED);
	cr_assert_eq(munmap(ro + 4096, 4096), 0);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, ro + 4096, 4096, 0),
		     IBV_REREG_MR_ERR_CMD, "unmapped");
	cr_assert_eq(errno, EFAULT);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, ro, 4096, 0),
		     IBV_REREG_MR_ERR_CMD, "read-only, and the MR has local write");
	cr_assert_eq(errno, EFAULT);
	/* a memory window bound to it: EBUSY, as ibv_dereg_mr */
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_MW_BIND),
		     0);
	mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	bind.bind_info = (struct ibv_mw_bind_info){ .mr = B.mr, .addr = (uintptr_t)B.buf,
						    .length = 4096,
						    .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	cr_assert_eq(ibv_bind_mw(B.qp, mw, &bind), 0);
	cr_assert_eq(tc_wait(B.cq, 5000, "bind").status, IBV_WC_SUCCESS);
	errno = 0;
	cr_assert_eq(ibv_rereg_mr(B.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND),
		     IBV_REREG_MR_ERR_CMD, "a window is bound");
	cr_assert_eq(errno, EBUSY);
	/* after all of these the MR is what it was: WRITE through its rkey */
	cr_assert_eq(B.mr->rkey, rkey);
	cr_assert_eq(B.mr->addr, B.buf);
	cr_assert_eq(B.mr->length, BUF);
	tc_fill(A.buf, 1024, 8);
	cr_assert_eq(write_once((uintptr_t)B.buf + 8192, rkey, 1024), IBV_WC_SUCCESS);
	cr_assert(tc_check(B.buf + 8192, 1024, 8));
	munmap(ro, 4096);
}

/*
 * Reregistration while WRITEs are in flight: 400 WRITEs of 8 KiB (sent by
 * zero copy, so frames point into the source MR) from A into B, while both
 * MRs are reregistered with a changing access set that keeps what the
 * WRITEs need, 50 times each.  Every WRITE completes successfully and every
 * byte lands; ASan sees no engine touch a replaced MR.
 */
Test(abi_verbs, rereg_with_writes_in_flight_loses_nothing)
{
	struct tc_pair o = { .port0_extra = "zero_copy = 256", .port1_extra = "zero_copy = 256" };
	enum { N = 400, LEN = 8192, SLOTS = BUF / LEN };
	unsigned int posted = 0, done = 0, rr = 0;
	struct ibv_wc wc[32];

	tc_start(&o);
	pair(64);
	for (unsigned int s = 0; s < SLOTS; s++)
		tc_fill(A.buf + s * LEN, LEN, 100 + s);
	while (done < N) {
		while (posted < N && posted - done < 48) {
			unsigned int s = posted % SLOTS;

			cr_assert_eq(post_write(&A, posted, A.buf + s * LEN, LEN, A.mr->lkey,
						(uintptr_t)B.buf + s * LEN, B.mr->rkey, true),
				     0);
			posted++;
		}
		while (rr < 100 && posted > rr * 4) { /* one per 4 WRITEs posted */
			unsigned int extra = (rr & 2) ? IBV_ACCESS_REMOTE_READ : 0;
			struct ibv_mr *mr = (rr & 1) ? B.mr : A.mr;

			cr_assert_eq(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
						  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
							  extra),
				     0, "rereg %u: %s", rr, strerror(errno));
			rr++;
		}
		int n = tc_poll(A.cq, wc, 32, 5000);

		cr_assert_gt(n, 0, "WRITEs stalled at %u of %u", done, N);
		for (int i = 0; i < n; i++) {
			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "WRITE %llu: %s",
				     (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status));
			cr_assert_eq(wc[i].wr_id, done, "in order");
			done++;
		}
	}
	cr_assert_eq(rr, 100);
	for (unsigned int s = 0; s < SLOTS; s++)
		cr_assert(tc_check(B.buf + s * LEN, LEN, 100 + s), "slot %u", s);
}

/* A translation change of the source MR under queued WRITEs: each WRITE
 * either went out from the old memory or fails with a local protection
 * error; none crashes, and the QP reports it. */
Test(abi_verbs, rereg_translation_under_queued_writes)
{
	struct tc_pair o = { .port0_extra = "zero_copy = 256", .port1_extra = "zero_copy = 256" };
	uint8_t *nbuf = aligned_alloc(4096, BUF);
	unsigned int ok = 0, prot = 0, flushed = 0;
	struct ibv_wc wc;

	cr_assert_not_null(nbuf);
	tc_start(&o);
	pair(256);
	for (unsigned int s = 0; s < 8; s++)
		tc_fill(A.buf + s * 8192, 8192, 21 + s);
	for (unsigned int i = 0; i < 64; i++)
		cr_assert_eq(post_write(&A, i, A.buf + (i % 8) * 8192, 8192, A.mr->lkey,
					(uintptr_t)B.buf + (i % 8) * 8192, B.mr->rkey, true),
			     0);
	cr_assert_eq(ibv_rereg_mr(A.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nbuf, BUF, 0), 0);
	memset(A.buf, 0xee, BUF); /* the old memory may be reused at once */
	for (unsigned int i = 0; i < 64; i++) {
		wc = tc_wait(A.cq, 5000, "a queued WRITE");
		if (wc.status == IBV_WC_SUCCESS)
			ok++;
		else if (wc.status == IBV_WC_LOC_PROT_ERR)
			prot++;
		else
			cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR, "%s", ibv_wc_status_str(wc.status));
		if (wc.status == IBV_WC_WR_FLUSH_ERR)
			flushed++;
	}
	cr_assert_eq(ok + prot + flushed, 64);
	cr_assert(prot == 0 || prot == 1, "the first one outside fails, the rest flush");
	/* what went out, went out from the old memory before the call returned */
	for (unsigned int i = 0; i < ok && i < 8; i++)
		cr_assert(tc_check(B.buf + i * 8192, 8192, 21 + i), "slot %u", i);
	free(nbuf);
}

/* ---- ibv_resize_cq ---- */

/* @n SENDs from A to B (B's receives posted first); once A has their
 * completions, B's receive completions are in its CQ (the responder
 * completes a receive before it acknowledges it), unpolled. */
static void
sends_into_b(unsigned int n, uint64_t first)
{
	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(post_recv(&B, first + i, B.buf + i * 64, 64, B.mr->lkey), 0);
	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(post_send(&A, first + i, A.buf, 16, A.mr->lkey), 0);
	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(tc_wait(A.cq, 5000, "send").status, IBV_WC_SUCCESS);
}

Test(abi_verbs, resize_cq_grows_and_shrinks_keeping_completions)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_cq *cq;
	struct ibv_wc wc[16];

	open_end(&A, "droce0", 64);
	open_end(&B, "droce1", 64);
	/* B's receives complete on a CQ of their own */
	cq = ibv_create_cq(B.ctx, 8, NULL, NULL, 0);
	cr_assert_not_null(cq);
	cr_assert_eq(ibv_destroy_qp(B.qp), 0);
	ia.send_cq = B.cq;
	ia.recv_cq = cq;
	B.qp = ibv_create_qp(B.pd, &ia);
	cr_assert_not_null(B.qp);
	up(&A, &B);
	up(&B, &A);
	cr_assert_geq(cq->cqe, 8);
	sends_into_b(5, 0);

	/* grow: the five are still there, in order, and more fit */
	cr_assert_eq(ibv_resize_cq(cq, 32), 0);
	cr_assert_geq(cq->cqe, 32);
	sends_into_b(20, 5);
	cr_assert_eq(tc_poll(cq, wc, 3, 2000), 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, (uint64_t)i);
	}
	/* 22 outstanding: shrinking below is EINVAL, the CQ unchanged */
	errno = 0;
	cr_assert_eq(ibv_resize_cq(cq, 21), EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_geq(cq->cqe, 32);
	/* to exactly what is outstanding: fine */
	cr_assert_eq(ibv_resize_cq(cq, 22), 0);
	cr_assert_geq(cq->cqe, 22);
	cr_assert_eq(tc_poll(cq, wc, 16, 2000), 16);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(wc[i].wr_id, (uint64_t)(3 + i));
	cr_assert_eq(tc_poll(cq, wc, 16, 2000), 6);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(wc[i].wr_id, (uint64_t)(19 + i));
	/* empty: down to 1 (as the pyverbs suite does), and it still works */
	cr_assert_eq(ibv_resize_cq(cq, 1), 0);
	cr_assert_geq(cq->cqe, 1);
	sends_into_b(1, 100);
	cr_assert_eq(tc_wait(cq, 2000, "after the shrink").wr_id, 100);
	cr_assert_eq(ibv_destroy_qp(B.qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

Test(abi_verbs, resize_cq_bad_sizes)
{
	struct ibv_device_attr da;

	pair(16);
	cr_assert_eq(ibv_query_device(A.ctx, &da), 0);
	cr_assert_eq(ibv_resize_cq(A.cq, 0), EINVAL);
	cr_assert_eq(ibv_resize_cq(A.cq, -1), EINVAL);
	cr_assert_eq(ibv_resize_cq(A.cq, da.max_cqe + 1), EINVAL);
	cr_assert_eq(A.cq->cqe, 16, "unchanged");
	cr_assert_eq(ibv_resize_cq(A.cq, 4096), 0);
	cr_assert_eq(A.cq->cqe, 4096);
}

/*
 * pyverbs' test_resize_cq: a CQ of 3 shrunk to 1 and grown to 7 while empty,
 * then cqe - 1 UD SENDs posted and, without waiting for them, a shrink to 1:
 * EINVAL, as rxe and mlx5 answer (the sends posted before the call have
 * completed by the time it counts, as on a NIC).  Nothing is lost: every
 * send's completion is then polled, in order.
 */
Test(abi_verbs, resize_cq_below_just_posted_ud_sends_is_einval)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct tc_conn c = { .qkey = 0x11111111 };
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_cq *cq;
	struct ibv_wc wc[8];
	int sent;

	open_end(&A, "droce0", 64);
	open_end(&B, "droce1", 64);
	cq = ibv_create_cq(A.ctx, 3, NULL, NULL, 0);
	cr_assert_not_null(cq);
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(A.pd, &ia);
	cr_assert_not_null(qp);
	tc_qp_up(qp, &c);
	aa.grh.dgid = B.gid;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(A.pd, &aa);
	cr_assert_not_null(ah, "ibv_create_ah: %s", strerror(errno));
	cr_assert_eq(ibv_resize_cq(cq, 1), 0);
	cr_assert_geq(cq->cqe, 1);
	cr_assert_eq(ibv_resize_cq(cq, 7), 0);
	cr_assert_geq(cq->cqe, 7);
	sent = cq->cqe - 1;
	for (int i = 0; i < sent; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)A.buf, .length = 64, .lkey = A.mr->lkey };
		struct ibv_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		w.wr.ud.ah = ah;
		w.wr.ud.remote_qpn = 0xabcd; /* nobody: a UD send completes anyway */
		w.wr.ud.remote_qkey = 0x11111111;
		cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	}
	errno = 0;
	cr_assert_eq(ibv_resize_cq(cq, 1), EINVAL, "%d completions outstanding", sent);
	cr_assert_eq(errno, EINVAL);
	cr_assert_geq(cq->cqe, 7, "unchanged");
	cr_assert_eq(tc_poll(cq, wc, sent, 2000), sent);
	for (int i = 0; i < sent; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[i].wr_id, (uint64_t)i);
	}
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* Resizing up and down while SENDs complete into the CQ: every completion
 * arrives once, in order. */
static void
resize_under_traffic(void)
{
	enum { N = 600 };
	unsigned int posted = 0, got = 0, round = 0;
	struct ibv_wc wc[16];

	while (got < N) {
		while (posted < N && posted - got < 24) {
			cr_assert_eq(post_write(&A, posted, A.buf, 512, A.mr->lkey, (uintptr_t)B.buf,
						B.mr->rkey, true),
				     0);
			posted++;
		}
		if (round++ % 3 == 0) {
			int want = (round & 1) ? 256 : 40;

			/* 40 can be below what is outstanding: then EINVAL and nothing lost */
			int rc = ibv_resize_cq(A.cq, want);

			cr_assert(rc == 0 || rc == EINVAL, "%d", rc);
		}
		int n = tc_poll(A.cq, wc, 16, 5000);

		cr_assert_gt(n, 0, "stalled at %u", got);
		for (int i = 0; i < n; i++) {
			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS);
			cr_assert_eq(wc[i].wr_id, got, "completion %u in order", got);
			got++;
		}
	}
}

Test(abi_verbs, resize_cq_under_traffic)
{
	pair(64);
	resize_under_traffic();
}

Test(abi_verbs, resize_cq_under_traffic_two_engines)
{
	struct tc_pair o = { .engines = 2 };

	tc_start(&o);
	pair(64);
	resize_under_traffic();
}

/* ---- ibv_query_qp_data_in_order ---- */

Test(abi_verbs, data_in_order_per_type_and_op)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *ud;
	struct tc_conn c = { 0 };

	open_end(&A, "droce0", 16);
	open_end(&B, "droce1", 16);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_SEND, 0), 0, "not in RTS yet");
	up(&A, &B);
	up(&B, &A);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_SEND, 0), 1);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_SEND_WITH_IMM, 0), 1);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_RDMA_WRITE, 0), 1);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_RDMA_WRITE_WITH_IMM, 0), 1);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_RDMA_READ, 0), 0,
		     "READ responses are placed past a hole");
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 0), 0);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_SEND, 1), 0, "unknown flags");
	ia.send_cq = ia.recv_cq = A.cq;
	ud = ibv_create_qp(A.pd, &ia);
	cr_assert_not_null(ud);
	tc_qp_up(ud, &c);
	cr_assert_eq(ibv_query_qp_data_in_order(ud, IBV_WR_SEND, 0), 1);
	cr_assert_eq(ibv_query_qp_data_in_order(ud, IBV_WR_RDMA_WRITE, 0), 0, "UD takes no WRITE");
	tc_qp_state(A.qp, IBV_QPS_ERR);
	cr_assert_eq(ibv_query_qp_data_in_order(A.qp, IBV_WR_SEND, 0), 0, "not in RTS");
	cr_assert_eq(ibv_destroy_qp(ud), 0);
}

/* ---- what droce leaves out: rdma-core's answers for a provider without it ---- */

Test(abi_verbs, import_dmabuf_ece_answers)
{
	struct ibv_ece ece = { 0 };

	pair(16);
	errno = 0;
	cr_assert_null(ibv_import_mr(A.pd, A.mr->handle));
	cr_assert_eq(errno, EOPNOTSUPP);
	errno = 0;
	cr_assert_null(ibv_import_dm(A.ctx, 1));
	cr_assert_eq(errno, EOPNOTSUPP);
	errno = 0;
	cr_assert_null(ibv_import_pd(A.ctx, A.pd->handle));
	cr_assert_eq(errno, EOPNOTSUPP);
	errno = 0;
	cr_assert_null(ibv_reg_dmabuf_mr(A.pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EOPNOTSUPP);
	/* unimport of an MR that was never imported: nothing happens to it */
	ibv_unimport_mr(A.mr);
	tc_fill(A.buf, 64, 30);
	cr_assert_eq(write_once((uintptr_t)B.buf, B.mr->rkey, 64), IBV_WC_SUCCESS);
	cr_assert(tc_check(B.buf, 64, 30));
	/* ECE */
	cr_assert_eq(ibv_query_ece(A.qp, &ece), EOPNOTSUPP);
	errno = 0;
	cr_assert_eq(ibv_set_ece(A.qp, &ece), EOPNOTSUPP, "a zero vendor id");
	cr_assert_eq(errno, EOPNOTSUPP);
	ece.vendor_id = 0x15b3;
	cr_assert_eq(ibv_set_ece(A.qp, &ece), EOPNOTSUPP);
}

/* ---- libibverbs' helpers ---- */

Test(abi_verbs, rates_round_trip)
{
	static const struct {
		enum ibv_rate r;
		int mult, mbps;
	} t[] = {
		{ IBV_RATE_2_5_GBPS, 1, 2500 },   { IBV_RATE_10_GBPS, 4, 10000 },
		{ IBV_RATE_120_GBPS, 48, 120000 }, { IBV_RATE_14_GBPS, -1, 14062 },
		{ IBV_RATE_100_GBPS, -1, 103125 }, { IBV_RATE_50_GBPS, 20, 53125 },
		{ IBV_RATE_400_GBPS, 160, 425000 }, { IBV_RATE_1200_GBPS, 480, 1275000 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cr_assert_eq(ibv_rate_to_mult(t[i].r), t[i].mult, "rate %d", t[i].r);
		cr_assert_eq(ibv_rate_to_mbps(t[i].r), t[i].mbps, "rate %d", t[i].r);
		cr_assert_eq(mbps_to_ibv_rate(t[i].mbps), t[i].r);
		if (t[i].mult > 0)
			cr_assert_eq(mult_to_ibv_rate(t[i].mult), t[i].r);
	}
	cr_assert_eq(ibv_rate_to_mult(IBV_RATE_MAX), -1);
	cr_assert_eq(ibv_rate_to_mbps((enum ibv_rate)99), -1);
	cr_assert_eq(mult_to_ibv_rate(3), IBV_RATE_MAX);
	cr_assert_eq(mbps_to_ibv_rate(0), IBV_RATE_MAX);
	cr_assert_eq(mbps_to_ibv_rate(-1), IBV_RATE_MAX);
}

Test(abi_verbs, kernel_abi_copies)
{
	struct ib_uverbs_qp_attr k;
	struct ibv_qp_attr q;
	struct ib_user_path_rec kp, back;
	struct ibv_sa_path_rec p;

	memset(&k, 0, sizeof(k));
	memset(&q, 0x5a, sizeof(q));
	k.qp_state = 3;
	k.cur_qp_state = 2;
	k.path_mtu = IBV_MTU_4096;
	k.qkey = 0x11223344;
	k.rq_psn = 0x123;
	k.sq_psn = 0x456;
	k.dest_qp_num = 0x789;
	k.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	k.max_send_wr = 10;
	k.max_inline_data = 64;
	k.ah_attr.grh.dgid[15] = 0x42;
	k.ah_attr.grh.flow_label = 0x12345;
	k.ah_attr.dlid = 0x99;
	k.ah_attr.is_global = 1;
	k.alt_ah_attr.sl = 3;
	k.pkey_index = 7;
	k.timeout = 14;
	k.retry_cnt = 6;
	k.alt_timeout = 9;
	ibv_copy_qp_attr_from_kern(&q, &k);
	cr_assert_eq(q.qp_state, 0x5a5a5a5a, "qp_state is not copied");
	cr_assert_eq(q.cur_qp_state, 2);
	cr_assert_eq(q.path_mtu, IBV_MTU_4096);
	cr_assert_eq(q.qkey, 0x11223344);
	cr_assert_eq(q.rq_psn, 0x123);
	cr_assert_eq(q.sq_psn, 0x456);
	cr_assert_eq(q.dest_qp_num, 0x789);
	cr_assert_eq(q.qp_access_flags, IBV_ACCESS_REMOTE_READ);
	cr_assert_eq(q.cap.max_send_wr, 10);
	cr_assert_eq(q.cap.max_inline_data, 64);
	cr_assert_eq(q.ah_attr.grh.dgid.raw[15], 0x42);
	cr_assert_eq(q.ah_attr.grh.flow_label, 0x12345);
	cr_assert_eq(q.ah_attr.dlid, 0x99);
	cr_assert_eq(q.ah_attr.is_global, 1);
	cr_assert_eq(q.alt_ah_attr.sl, 3);
	cr_assert_eq(q.pkey_index, 7);
	cr_assert_eq(q.timeout, 14);
	cr_assert_eq(q.retry_cnt, 6);
	cr_assert_eq(q.alt_timeout, 9);

	memset(&kp, 0, sizeof(kp));
	for (int i = 0; i < 16; i++) {
		kp.dgid[i] = (uint8_t)i;
		kp.sgid[i] = (uint8_t)(0x80 + i);
	}
	kp.dlid = htons(5);
	kp.slid = htons(6);
	kp.flow_label = htonl(0x777);
	kp.pkey = htons(0xffff);
	kp.hop_limit = 64;
	kp.traffic_class = 0x10;
	kp.mtu = IBV_MTU_2048;
	kp.rate = 7;
	kp.packet_life_time = 18;
	kp.sl = 2;
	kp.numb_path = 1;
	kp.preference = 3;
	kp.reversible = 1;
	ibv_copy_path_rec_from_kern(&p, &kp);
	cr_assert_eq(p.dgid.raw[7], 7);
	cr_assert_eq(p.sgid.raw[7], 0x87);
	cr_assert_eq(p.dlid, htons(5));
	cr_assert_eq(p.flow_label, htonl(0x777));
	cr_assert_eq(p.hop_limit, 64);
	cr_assert_eq(p.mtu, IBV_MTU_2048);
	cr_assert_eq(p.packet_life_time, 18);
	cr_assert_eq(p.preference, 3);
	memset(&back, 0, sizeof(back));
	ibv_copy_path_rec_to_kern(&back, &p);
	cr_assert_arr_eq(&back, &kp, sizeof(kp), "round trip");
}

Test(abi_verbs, sysfs_path_default)
{
	unsetenv("SYSFS_PATH");
	cr_assert_str_eq(ibv_get_sysfs_path(), "/sys");
}

Test(abi_verbs, sysfs_path_from_the_environment)
{
	setenv("SYSFS_PATH", "/tmp/droce-sys//", 1);
	cr_assert_str_eq(ibv_get_sysfs_path(), "/tmp/droce-sys", "trailing slashes dropped");
}

Test(abi_verbs, fork_ranges_need_nothing)
{
	static char page[4096];

	cr_assert_eq(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	cr_assert_eq(ibv_dontfork_range(page, sizeof(page)), 0);
	cr_assert_eq(ibv_dofork_range(page, sizeof(page)), 0);
}

Test(abi_verbs, resolve_eth_l2_from_gid)
{
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1 };
	uint8_t mac[6], want[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x02 };
	uint16_t vid = 0;

	open_end(&A, "droce0", 16);
	open_end(&B, "droce1", 16);
	ah.grh.dgid = B.gid;
	cr_assert_eq(ibv_resolve_eth_l2_from_gid(A.ctx, &ah, mac, &vid), 0);
	cr_assert_arr_eq(mac, want, 6, "droce1's MAC");
	cr_assert_eq(vid, 0xffff, "no VLAN");
	ah.grh.sgid_index = 9;
	cr_assert_neq(ibv_resolve_eth_l2_from_gid(A.ctx, &ah, mac, &vid), 0, "no such GID index");
}
