/* SPDX-License-Identifier: BSD-3-Clause
 * verbs_api validation, tier (a), against the fake dataplane: ibv_post_send(3)
 * and ibv_post_recv(3)'s rules with their errno and bad_wr, the WQEs they
 * encode, one doorbell per list, and the ibv_wr_* builder encoding as
 * ibv_post_send does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include "fake_dp.h"
#include "verbs_api/internal.h"
#include "validation.h"

static struct ibv_send_wr
send_wr(uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *sge, int n)
{
	return (struct ibv_send_wr){ .wr_id = id, .opcode = op, .sg_list = sge, .num_sge = n };
}

/* Posts a 3-WR list whose middle WR is @bad: expects @err and bad_wr == it. */
static void
expect_bad_middle(struct ibv_qp *qp, struct ibv_send_wr bad, int err)
{
	static char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 1 };
	struct ibv_send_wr w[3] = { send_wr(1, IBV_WR_SEND, &sge, 1), bad,
				    send_wr(3, IBV_WR_SEND, &sge, 1) };
	struct ibv_send_wr *bad_wr = NULL;
	uint32_t before = dqp(qp)->sq_posted;

	w[1].wr_id = 2;
	w[0].next = &w[1];
	w[1].next = &w[2];
	cr_assert_eq(ibv_post_send(qp, w, &bad_wr), err, "wr opcode %d", bad.opcode);
	cr_assert_eq(bad_wr, &w[1]);
	cr_assert_eq(dqp(qp)->sq_posted, before + 1, "the WR before the bad one is posted");
	cr_assert_eq(dqp(qp)->last_wqe.wr_id, 1);
	fake_qp_retire(dqp(qp), 1, 0);
}

Test(post, opcodes_allowed_on_rc)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 64, 0);
	static uint64_t word;
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 5 };
	const enum ibv_wr_opcode ok[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct ibv_send_wr *bad = NULL;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct ibv_send_wr w = send_wr(i, ok[i], &sge, 1);

		w.wr.rdma.remote_addr = 0x1000;
		cr_assert_eq(ibv_post_send(qp, &w, &bad), 0, "opcode %d", ok[i]);
		cr_assert_eq(dqp(qp)->last_wqe.opcode, ok[i]);
		fake_qp_retire(dqp(qp), 1, 0);
	}
	/* invalidation: the key goes into the WQE, the engine checks it */
	{
		struct ibv_send_wr w = send_wr(20, IBV_WR_LOCAL_INV, &sge, 1);

		w.invalidate_rkey = 0x1234;
		cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
		cr_assert_eq(dqp(qp)->last_wqe.opcode, IBV_WR_LOCAL_INV);
		cr_assert_eq(dqp(qp)->last_wqe.invalidate_rkey, 0x1234);
		cr_assert_eq(dqp(qp)->last_wqe.length, 0);
		fake_qp_retire(dqp(qp), 1, 0);
		w = send_wr(21, IBV_WR_SEND_WITH_INV, &sge, 1);
		w.invalidate_rkey = 0x5678;
		cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
		cr_assert_eq(dqp(qp)->last_wqe.invalidate_rkey, 0x5678);
		cr_assert_eq(dqp(qp)->last_wqe.length, 8);
		fake_qp_retire(dqp(qp), 1, 0);
	}
	/* a bind names a window; no TSO */
	expect_bad_middle(qp, send_wr(0, IBV_WR_BIND_MW, &sge, 1), EINVAL);
	expect_bad_middle(qp, send_wr(0, IBV_WR_TSO, &sge, 1), EINVAL);
	expect_bad_middle(qp, send_wr(0, (enum ibv_wr_opcode)200, &sge, 1), EINVAL);
}

Test(post, opcodes_by_qp_type)
{
	struct ibv_qp *uc = rts_qp(IBV_QPT_UC, 8, 2, 0, 0);
	struct ibv_qp *ud = rts_qp(IBV_QPT_UD, 8, 2, 0, 0);
	static uint64_t word;
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 5 };
	struct ibv_send_wr w = send_wr(1, IBV_WR_RDMA_WRITE, &sge, 1), *bad;

	cr_assert_eq(ibv_post_send(uc, &w, &bad), 0);
	fake_qp_retire(dqp(uc), 1, 0);
	expect_bad_middle(uc, send_wr(0, IBV_WR_RDMA_READ, &sge, 1), EINVAL);
	expect_bad_middle(uc, send_wr(0, IBV_WR_ATOMIC_CMP_AND_SWP, &sge, 1), EINVAL);
	expect_bad_middle(uc, send_wr(0, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1), EINVAL);
	/* UD: WRITE never; SEND needs an AH droce cannot make yet */
	w.opcode = IBV_WR_RDMA_WRITE;
	bad = NULL;
	cr_assert_eq(ibv_post_send(ud, &w, &bad), EINVAL);
	cr_assert_eq(bad, &w);
	w.opcode = IBV_WR_SEND;
	cr_assert_eq(ibv_post_send(ud, &w, &bad), EINVAL);
}

Test(post, state_that_cannot_send)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 8, 2, 0, 0);
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w = send_wr(1, IBV_WR_SEND, &sge, 1), *bad = NULL;
	struct ibv_qp_attr a;

	cr_assert_eq(ibv_post_send(qp, &w, &bad), EINVAL); /* RESET */
	cr_assert_eq(bad, &w);
	cr_assert_eq(to_init(qp), 0);
	bad = NULL;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), EINVAL); /* INIT */
	cr_assert_eq(bad, &w);
	cr_assert_eq(to_rtr(qp), 0);
	bad = NULL;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), EINVAL); /* RTR */
	cr_assert_eq(bad, &w);
	cr_assert_eq(dqp(qp)->sq_posted, 0);
	cr_assert_eq(to_rts(qp), 0);
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	/* ERR accepts: the engine flushes it with IBV_WC_WR_FLUSH_ERR */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	fake_qp_retire(dqp(qp), 1, 0);
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
}

Test(post, flags_sges_inline_atomics)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 32, 0);
	static uint64_t word;
	static char big[64];
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 5 };
	struct ibv_sge three[3] = { sge, sge, sge };
	struct ibv_sge wide[2] = { { .addr = (uintptr_t)big, .length = 32, .lkey = 1 },
				   { .addr = (uintptr_t)big, .length = 1, .lkey = 1 } };
	struct ibv_sge huge[2] = { { .addr = 0x1000, .length = 0x80000000u, .lkey = 1 },
				   { .addr = 0x1000, .length = 1, .lkey = 1 } };
	struct ibv_send_wr w;

	/* send_flags outside FENCE | SIGNALED | SOLICITED | INLINE */
	w = send_wr(0, IBV_WR_SEND, &sge, 1);
	w.send_flags = IBV_SEND_IP_CSUM;
	expect_bad_middle(qp, w, EINVAL);
	w.send_flags = 1 << 9;
	expect_bad_middle(qp, w, EINVAL);
	/* num_sge over the cap, negative */
	expect_bad_middle(qp, send_wr(0, IBV_WR_SEND, three, 3), EINVAL);
	expect_bad_middle(qp, send_wr(0, IBV_WR_SEND, &sge, -1), EINVAL);
	/* inline over max_inline_data (32) */
	w = send_wr(0, IBV_WR_SEND, wide, 2);
	w.send_flags = IBV_SEND_INLINE;
	expect_bad_middle(qp, w, EINVAL);
	/* inline makes no sense for READ and atomics */
	w = send_wr(0, IBV_WR_RDMA_READ, &sge, 1);
	w.send_flags = IBV_SEND_INLINE;
	expect_bad_middle(qp, w, EINVAL);
	/* atomics: 8-byte aligned remote address, one 8-byte SGE */
	w = send_wr(0, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1);
	w.wr.atomic.remote_addr = 0x1004;
	expect_bad_middle(qp, w, EINVAL);
	w = send_wr(0, IBV_WR_ATOMIC_CMP_AND_SWP, wide, 2);
	w.wr.atomic.remote_addr = 0x1000;
	expect_bad_middle(qp, w, EINVAL);
	w = send_wr(0, IBV_WR_ATOMIC_CMP_AND_SWP, wide, 1);
	expect_bad_middle(qp, w, EINVAL);
	/* a message over the largest droce carries */
	expect_bad_middle(qp, send_wr(0, IBV_WR_RDMA_WRITE, huge, 2), EINVAL);
}

Test(post, encoding)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 32, 0);
	const struct droce_wqe *q = &dqp(qp)->last_wqe;
	static uint64_t word;
	char msg[16] = "hello, inline!";
	struct ibv_sge sg2[2] = { { .addr = (uintptr_t)msg, .length = 7, .lkey = 0xbad },
				  { .addr = (uintptr_t)msg + 7, .length = 8, .lkey = 0xbad } };
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8, .lkey = 0x1234 };
	struct ibv_send_wr w, *bad = NULL;

	/* INLINE: bytes copied at post time, lkeys ignored */
	w = send_wr(77, IBV_WR_SEND_WITH_IMM, sg2, 2);
	w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	w.imm_data = htonl(0xabcdef01);
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	memset(msg, 'x', sizeof(msg));
	cr_assert_eq(q->wr_id, 77);
	cr_assert_eq(q->flags, DROCE_WQE_INLINE | DROCE_WQE_SIGNALED | DROCE_WQE_SOLICITED);
	cr_assert_eq(q->length, 15);
	cr_assert_eq(q->num_sge, 0);
	cr_assert_arr_eq(q->inline_data, "hello, inline!", 15);
	cr_assert_eq(q->imm, htonl(0xabcdef01));

	/* gather list, RDMA fields, FENCE; unsignaled without sq_sig_all */
	w = send_wr(78, IBV_WR_RDMA_WRITE, sg2, 2);
	w.send_flags = IBV_SEND_FENCE;
	w.wr.rdma.remote_addr = 0x123456789ull;
	w.wr.rdma.rkey = 0x4321;
	w.imm_data = 5;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	cr_assert_eq(q->flags, DROCE_WQE_FENCE);
	cr_assert_eq(q->num_sge, 2);
	cr_assert_eq(q->length, 15);
	cr_assert_eq(q->sge[1].lkey, 0xbad, "lkeys are the engine's to check");
	cr_assert_eq(q->sge[1].addr, (uintptr_t)msg + 7);
	cr_assert_eq(q->remote_addr, 0x123456789ull);
	cr_assert_eq(q->rkey, 0x4321);
	cr_assert_eq(q->imm, 0, "no imm without WITH_IMM");

	/* atomics */
	w = send_wr(79, IBV_WR_ATOMIC_CMP_AND_SWP, &sge, 1);
	w.wr.atomic.remote_addr = 0x2000;
	w.wr.atomic.rkey = 0x99;
	w.wr.atomic.compare_add = 11;
	w.wr.atomic.swap = 22;
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	cr_assert_eq(q->remote_addr, 0x2000);
	cr_assert_eq(q->rkey, 0x99);
	cr_assert_eq(q->compare_add, 11);
	cr_assert_eq(q->swap, 22);
	cr_assert_eq(q->length, 8);
	cr_assert_eq(q->sge[0].lkey, 0x1234);
}

Test(post, sq_sig_all_signals_everything)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 1, 0, 1);
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w = send_wr(1, IBV_WR_SEND, &sge, 1), *bad;

	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0);
	cr_assert_eq(dqp(qp)->last_wqe.flags, DROCE_WQE_SIGNALED);
}

/* Every combination of the four send flags ibv_post_send takes, with and
 * without sq_sig_all, gives its WQE flags (post.c maps them by table). */
Test(post, every_send_flag_combination)
{
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };

	for (int sig_all = 0; sig_all <= 1; sig_all++) {
		struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 1, 16, sig_all);

		for (unsigned int f = 0; f < 16; f++) {
			struct ibv_send_wr w = send_wr(f, IBV_WR_RDMA_WRITE, &sge, 1), *bad;
			uint8_t want = 0;

			w.send_flags = f;
			w.wr.rdma.remote_addr = 0x1000;
			w.wr.rdma.rkey = 9;
			if ((f & IBV_SEND_SIGNALED) || sig_all)
				want |= DROCE_WQE_SIGNALED;
			if (f & IBV_SEND_FENCE)
				want |= DROCE_WQE_FENCE;
			if (f & IBV_SEND_SOLICITED)
				want |= DROCE_WQE_SOLICITED;
			if (f & IBV_SEND_INLINE)
				want |= DROCE_WQE_INLINE;
			cr_assert_eq(ibv_post_send(qp, &w, &bad), 0, "send_flags %#x", f);
			cr_assert_eq(dqp(qp)->last_wqe.flags, want, "send_flags %#x sq_sig_all %d: "
				     "WQE flags %#x, want %#x", f, sig_all,
				     dqp(qp)->last_wqe.flags, want);
			cr_assert_eq(dqp(qp)->last_wqe.length, 8);
			cr_assert_eq(dqp(qp)->last_wqe.num_sge, f & IBV_SEND_INLINE ? 0 : 1);
			fake_qp_retire(dqp(qp), 1, 0);
		}
		cr_assert_eq(ibv_destroy_qp(qp), 0);
	}
}

Test(post, send_queue_full_enomem)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 2, 1, 0, 0);
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w[3], *bad = NULL;

	for (int i = 0; i < 3; i++) {
		w[i] = send_wr(i, IBV_WR_SEND, &sge, 1);
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	cr_assert_eq(ibv_post_send(qp, w, &bad), ENOMEM);
	cr_assert_eq(bad, &w[2]);
	cr_assert_eq(dqp(qp)->sq_posted, 2);
	fake_qp_retire(dqp(qp), 1, 0);
	cr_assert_eq(ibv_post_send(qp, &w[2], &bad), 0);
}

Test(post, recv_rules)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 2, 2, 0, 0);
	static char buf[64];
	struct ibv_sge sge[3] = { { .addr = (uintptr_t)buf, .length = 16, .lkey = 7 },
				  { .addr = (uintptr_t)buf + 16, .length = 16, .lkey = 7 },
				  { .addr = (uintptr_t)buf + 32, .length = 16, .lkey = 7 } };
	struct ibv_recv_wr r[3], *bad = NULL;

	for (int i = 0; i < 3; i++)
		r[i] = (struct ibv_recv_wr){ .wr_id = 100 + i, .sg_list = sge, .num_sge = 2,
					     .next = i < 2 ? &r[i + 1] : NULL };
	/* RESET cannot receive */
	cr_assert_eq(ibv_post_recv(qp, r, &bad), EINVAL);
	cr_assert_eq(bad, &r[0]);
	cr_assert_eq(to_init(qp), 0);
	/* num_sge over max_recv_sge stops the list there */
	r[1].num_sge = 3;
	bad = NULL;
	cr_assert_eq(ibv_post_recv(qp, r, &bad), EINVAL);
	cr_assert_eq(bad, &r[1]);
	cr_assert_eq(dqp(qp)->rq_posted, 1);
	r[1].num_sge = -1;
	cr_assert_eq(ibv_post_recv(qp, &r[1], &bad), EINVAL);
	r[1].num_sge = 2;
	/* full */
	cr_assert_eq(ibv_post_recv(qp, &r[1], &bad), ENOMEM);
	cr_assert_eq(bad, &r[2]);
	cr_assert_eq(dqp(qp)->last_rqe.wr_id, 101);
	cr_assert_eq(dqp(qp)->last_rqe.length, 32);
	cr_assert_eq(dqp(qp)->last_rqe.num_sge, 2);
	cr_assert_eq(dqp(qp)->last_rqe.sge[1].addr, (uintptr_t)buf + 16);
	fake_qp_retire(dqp(qp), 0, 2);
	cr_assert_eq(ibv_post_recv(qp, &r[2], &bad), 0);
}

Test(post, empty_list)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 2, 1, 0, 0);
	struct ibv_send_wr *bad = (struct ibv_send_wr *)0x1;

	cr_assert_eq(ibv_post_send(qp, NULL, &bad), 0);
	cr_assert_eq(bad, (struct ibv_send_wr *)0x1, "bad_wr untouched on success");
}

/* A post list is one lock round and one doorbell (one commit), each WR encoded
 * in its own slot; a failing WR ends the list with the ones before it posted. */
Test(post, one_doorbell_per_list)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 1, 16, 0);
	static char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 5 };
	struct ibv_send_wr w[4], *bad = NULL;
	struct ibv_recv_wr r[4], *rbad = NULL;
	unsigned int commits = dqp(qp)->n_commits;

	for (int i = 0; i < 4; i++) {
		w[i] = send_wr(10 + i, IBV_WR_SEND, &sge, 1);
		w[i].next = i < 3 ? &w[i + 1] : NULL;
		r[i] = (struct ibv_recv_wr){ .wr_id = 20 + i, .sg_list = &sge, .num_sge = 1,
					     .next = i < 3 ? &r[i + 1] : NULL };
	}
	memcpy(buf, "inline!!", 8);
	w[3].send_flags = IBV_SEND_INLINE;
	cr_assert_eq(ibv_post_send(qp, w, &bad), 0);
	cr_assert_eq(dqp(qp)->sq_posted, 4);
	cr_assert_eq(dqp(qp)->n_commits, commits + 1, "one doorbell for 4 WRs");
	cr_assert_not(dqp(qp)->in_batch, "the post lock is released");
	/* each WR went to its own slot, the inline bytes copied into the last */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(dqp(qp)->batch[i].wr_id, (uint64_t)(10 + i));
	cr_assert_eq(dqp(qp)->batch[3].flags & DROCE_WQE_INLINE, DROCE_WQE_INLINE);
	cr_assert_eq(memcmp(dqp(qp)->batch[3].inline_data, "inline!!", 8), 0);
	cr_assert_eq(dqp(qp)->batch[2].num_sge, 1);
	cr_assert_eq(dqp(qp)->batch[2].sge[0].lkey, 5);

	/* a bad opcode third: two posted in one commit, bad_wr at the third */
	w[2].opcode = IBV_WR_TSO;
	commits = dqp(qp)->n_commits;
	cr_assert_eq(ibv_post_send(qp, w, &bad), EINVAL);
	cr_assert_eq(bad, &w[2]);
	cr_assert_eq(dqp(qp)->sq_posted, 6);
	cr_assert_eq(dqp(qp)->n_commits, commits + 1);
	cr_assert_eq(dqp(qp)->last_wqe.wr_id, 11);
	cr_assert_not(dqp(qp)->in_batch);
	/* a bad first WR: nothing posted, the lock still released */
	cr_assert_eq(ibv_post_send(qp, &w[2], &bad), EINVAL);
	cr_assert_eq(bad, &w[2]);
	cr_assert_eq(dqp(qp)->sq_posted, 6);
	cr_assert_not(dqp(qp)->in_batch);

	/* receives: the same, and ENOMEM in the middle when the queue fills */
	commits = dqp(qp)->n_commits;
	cr_assert_eq(ibv_post_recv(qp, r, &rbad), 0);
	cr_assert_eq(dqp(qp)->rq_posted, 4);
	cr_assert_eq(dqp(qp)->n_commits, commits + 1);
	cr_assert_not(dqp(qp)->in_rbatch);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(dqp(qp)->rbatch[i].wr_id, (uint64_t)(20 + i));
	cr_assert_eq(ibv_post_recv(qp, r, &rbad), 0);
	cr_assert_eq(dqp(qp)->rq_posted, 8);
	fake_qp_retire(dqp(qp), 0, 2);
	cr_assert_eq(ibv_post_recv(qp, r, &rbad), ENOMEM);
	cr_assert_eq(rbad, &r[2], "the queue held two more");
	cr_assert_eq(dqp(qp)->rq_posted, 10);
	cr_assert_eq(dqp(qp)->last_rqe.wr_id, 21);
	cr_assert_not(dqp(qp)->in_rbatch);
}

/* ================= the ibv_wr_* builder encodes as ibv_post_send ================= */

/* The fields of the WQE the engine reads. */
static void
same_wqe(const struct droce_wqe *a, const struct droce_wqe *b, const char *what)
{
	cr_assert_eq(a->wr_id, b->wr_id, "%s: wr_id", what);
	cr_assert_eq(a->opcode, b->opcode, "%s: opcode", what);
	cr_assert_eq(a->flags, b->flags, "%s: flags %#x vs %#x", what, a->flags, b->flags);
	cr_assert_eq(a->num_sge, b->num_sge, "%s: num_sge", what);
	cr_assert_eq(a->imm, b->imm, "%s: imm", what);
	cr_assert_eq(a->invalidate_rkey, b->invalidate_rkey, "%s: invalidate_rkey", what);
	cr_assert_eq(a->remote_addr, b->remote_addr, "%s: remote_addr", what);
	cr_assert_eq(a->rkey, b->rkey, "%s: rkey", what);
	cr_assert_eq(a->length, b->length, "%s: length", what);
	cr_assert_eq(a->compare_add, b->compare_add, "%s: compare_add", what);
	cr_assert_eq(a->swap, b->swap, "%s: swap", what);
	cr_assert_eq(a->ah, b->ah, "%s: ah", what);
	cr_assert_eq(a->remote_qpn, b->remote_qpn, "%s: remote_qpn", what);
	cr_assert_eq(a->remote_qkey, b->remote_qkey, "%s: remote_qkey", what);
	cr_assert_eq(memcmp(a->sge, b->sge, a->num_sge * sizeof(a->sge[0])), 0, "%s: SGEs", what);
	if (a->flags & DROCE_WQE_INLINE)
		cr_assert_eq(memcmp(a->inline_data, b->inline_data, a->length), 0, "%s: inline", what);
}

/* Posts @w with ibv_post_send, then builds the same WR with @build; the two WQEs match. */
static void
both_ways(struct ibv_qp *qp, struct ibv_send_wr *w, void (*build)(struct ibv_qp_ex *),
	  const char *what)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	struct ibv_send_wr *bad = NULL;
	struct droce_wqe old;
	unsigned int commits = dqp(qp)->n_commits;

	cr_assert_eq(ibv_post_send(qp, w, &bad), 0, "%s: ibv_post_send", what);
	old = dqp(qp)->last_wqe;
	ibv_wr_start(x);
	x->wr_id = w->wr_id;
	x->wr_flags = w->send_flags;
	build(x);
	cr_assert_eq(ibv_wr_complete(x), 0, "%s: ibv_wr_complete", what);
	/* one commit for ibv_post_send's list (it posts through the same batch
	 * calls), one for the builder's batch */
	cr_assert_eq(dqp(qp)->n_commits, commits + 2);
	cr_assert(!dqp(qp)->in_batch, "%s: post lock released", what);
	same_wqe(&old, &dqp(qp)->last_wqe, what);
	fake_qp_retire(dqp(qp), 2, 0);
}

static char b_msg[16] = "hello, inline!";
static uint64_t b_word;

static void
b_send_imm_inline(struct ibv_qp_ex *x)
{
	struct ibv_data_buf d[2] = { { b_msg, 7 }, { b_msg + 7, 8 } };

	ibv_wr_send_imm(x, htonl(0xabcdef01));
	ibv_wr_set_inline_data_list(x, 2, d);
}

static void
b_write_sges(struct ibv_qp_ex *x)
{
	struct ibv_sge sg[2] = { { (uintptr_t)b_msg, 7, 0xbad }, { (uintptr_t)b_msg + 7, 8, 0xbad } };

	ibv_wr_rdma_write(x, 0x4321, 0x123456789ull);
	ibv_wr_set_sge_list(x, 2, sg);
}

static void
b_write_imm(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_write_imm(x, 0x4321, 0x1000, htonl(7));
	ibv_wr_set_sge(x, 0x77, (uintptr_t)b_msg, 16);
}

static void
b_read(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_read(x, 0x55, 0x3000);
	ibv_wr_set_sge(x, 0x77, (uintptr_t)b_msg, 16);
}

static void
b_cmp_swp(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_cmp_swp(x, 0x99, 0x2000, 11, 22);
	ibv_wr_set_sge(x, 0x1234, (uintptr_t)&b_word, 8);
}

static void
b_fetch_add(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_fetch_add(x, 0x99, 0x2008, 3);
	ibv_wr_set_sge(x, 0x1234, (uintptr_t)&b_word, 8);
}

static void
b_send_inv(struct ibv_qp_ex *x)
{
	ibv_wr_send_inv(x, 0xabc);
	ibv_wr_set_sge(x, 0x77, (uintptr_t)b_msg, 4);
}

static void
b_local_inv(struct ibv_qp_ex *x)
{
	ibv_wr_local_inv(x, 0x1234);
}

static void
b_send_empty(struct ibv_qp_ex *x)
{
	ibv_wr_send(x);
}

Test(post, builder_encodes_as_post_send)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 8, 2, 32, 0);
	struct ibv_qp *all = rts_qp(IBV_QPT_RC, 8, 2, 32, 1);
	struct ibv_sge sg2[2] = { { (uintptr_t)b_msg, 7, 0xbad }, { (uintptr_t)b_msg + 7, 8, 0xbad } };
	struct ibv_sge s16 = { (uintptr_t)b_msg, 16, 0x77 }, s4 = { (uintptr_t)b_msg, 4, 0x77 };
	struct ibv_sge s8 = { (uintptr_t)&b_word, 8, 0x1234 };
	struct ibv_send_wr w;

	w = send_wr(77, IBV_WR_SEND_WITH_IMM, sg2, 2);
	w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	w.imm_data = htonl(0xabcdef01);
	both_ways(qp, &w, b_send_imm_inline, "inline SEND_WITH_IMM");

	w = send_wr(78, IBV_WR_RDMA_WRITE, sg2, 2);
	w.send_flags = IBV_SEND_FENCE;
	w.wr.rdma.remote_addr = 0x123456789ull;
	w.wr.rdma.rkey = 0x4321;
	both_ways(qp, &w, b_write_sges, "WRITE, 2 SGEs, fence");

	w = send_wr(79, IBV_WR_RDMA_WRITE_WITH_IMM, &s16, 1);
	w.send_flags = IBV_SEND_SIGNALED;
	w.imm_data = htonl(7);
	w.wr.rdma.remote_addr = 0x1000;
	w.wr.rdma.rkey = 0x4321;
	both_ways(qp, &w, b_write_imm, "WRITE_WITH_IMM");

	w = send_wr(80, IBV_WR_RDMA_READ, &s16, 1);
	w.wr.rdma.remote_addr = 0x3000;
	w.wr.rdma.rkey = 0x55;
	both_ways(qp, &w, b_read, "READ");

	w = send_wr(81, IBV_WR_ATOMIC_CMP_AND_SWP, &s8, 1);
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.atomic.remote_addr = 0x2000;
	w.wr.atomic.rkey = 0x99;
	w.wr.atomic.compare_add = 11;
	w.wr.atomic.swap = 22;
	both_ways(qp, &w, b_cmp_swp, "CMP_SWP");

	w = send_wr(82, IBV_WR_ATOMIC_FETCH_AND_ADD, &s8, 1);
	w.wr.atomic.remote_addr = 0x2008;
	w.wr.atomic.rkey = 0x99;
	w.wr.atomic.compare_add = 3;
	both_ways(qp, &w, b_fetch_add, "FETCH_ADD");

	w = send_wr(83, IBV_WR_SEND_WITH_INV, &s4, 1);
	w.invalidate_rkey = 0xabc;
	both_ways(qp, &w, b_send_inv, "SEND_WITH_INV");

	w = send_wr(84, IBV_WR_LOCAL_INV, NULL, 0);
	w.send_flags = IBV_SEND_SIGNALED;
	w.invalidate_rkey = 0x1234;
	both_ways(qp, &w, b_local_inv, "LOCAL_INV");

	/* sq_sig_all: every builder WR is signaled too */
	w = send_wr(85, IBV_WR_SEND, NULL, 0);
	both_ways(all, &w, b_send_empty, "zero-length SEND, sq_sig_all");
}

Test(post, builder_failed_batch_posts_nothing)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 4, 1, 8, 0);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	uint32_t before = dqp(qp)->sq_posted;
	unsigned int commits = dqp(qp)->n_commits;

	/* good, good, then inline too long: EINVAL, the two good ones are not posted */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)b_msg, 8);
	ibv_wr_rdma_write(x, 2, 0x1000);
	ibv_wr_set_sge(x, 1, (uintptr_t)b_msg, 8);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, b_msg, 9);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	cr_assert_eq(dqp(qp)->sq_posted, before);
	cr_assert_eq(dqp(qp)->n_commits, commits, "nothing committed");
	cr_assert(!dqp(qp)->in_batch, "post lock released");
	/* five in a four-slot queue: ENOMEM, none posted */
	ibv_wr_start(x);
	for (int i = 0; i < 5; i++)
		ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), ENOMEM);
	cr_assert_eq(dqp(qp)->sq_posted, before);
	/* four fit */
	ibv_wr_start(x);
	for (int i = 0; i < 4; i++)
		ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), 0);
	cr_assert_eq(dqp(qp)->sq_posted, before + 4);
	/* abort: nothing */
	fake_qp_retire(dqp(qp), 4, 0);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_abort(x);
	cr_assert_eq(dqp(qp)->sq_posted, before + 4);
	cr_assert(!dqp(qp)->in_batch);
}

Test(post, builder_outside_a_batch_does_nothing)
{
	struct ibv_qp *qp = rts_qp(IBV_QPT_RC, 4, 1, 8, 0);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	uint32_t before = dqp(qp)->sq_posted;

	/* no ibv_wr_start: nothing is written, nothing posted, no crash */
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)b_msg, 8);
	ibv_wr_rdma_write(x, 2, 0x1000);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_abort(x);
	cr_assert_eq(dqp(qp)->sq_posted, before);
	cr_assert(!dqp(qp)->in_batch);
	/* and after a completed batch, the same */
	ibv_wr_start(x);
	ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), 0);
	ibv_wr_send(x);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	cr_assert_eq(dqp(qp)->sq_posted, before + 1);
}
