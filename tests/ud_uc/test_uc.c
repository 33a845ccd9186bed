/* SPDX-License-Identifier: BSD-3-Clause
 * UC through the verbs API: SEND, SEND_WITH_IMM, RDMA_WRITE and
 * RDMA_WRITE_WITH_IMM with every completion field and byte checked; remote
 * access errors dropped silently; and 1% frame loss on an impaired link: no
 * message is delivered corrupt or partial, later messages still arrive,
 * receive WQEs of dropped messages are reused, and the sender completes
 * every WR.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static struct t_end A, B;

TestSuite(uc, .fini = tc_stop, .timeout = 90);

static void
setup(const char *port0_extra, uint32_t send_wr, uint32_t recv_wr, int gid_index)
{
	t_start(1500, port0_extra);
	t_open(&A, "droce0", IBV_QPT_UC, send_wr, recv_wr);
	t_open(&B, "droce1", IBV_QPT_UC, send_wr, recv_wr);
	t_uc_up(&A, &B, gid_index, IBV_MTU_1024);
	t_uc_up(&B, &A, gid_index, IBV_MTU_1024);
}

static int
post(struct t_end *e, enum ibv_wr_opcode op, uint64_t id, size_t off, uint32_t len,
     uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge[2];
	struct ibv_send_wr w = { .wr_id = id, .sg_list = sge, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm) },
			   *bad = NULL;

	/* two SGEs when there is something to split */
	if (len >= 2) {
		sge[0] = (struct ibv_sge){ (uintptr_t)e->buf + off, len / 3 + 1, e->mr->lkey };
		sge[1] = (struct ibv_sge){ (uintptr_t)e->buf + off + sge[0].length,
					   len - sge[0].length, e->mr->lkey };
		w.num_sge = 2;
	} else {
		sge[0] = (struct ibv_sge){ (uintptr_t)e->buf + off, len, e->mr->lkey };
		w.num_sge = 1;
	}
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	return ibv_post_send(e->qp, &w, &bad);
}

static void
check_send(struct ibv_cq *cq, uint64_t id, enum ibv_wc_opcode op, const struct t_end *e)
{
	struct ibv_wc wc = tc_wait(cq, 3000, "send completion");

	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "wr %llu: %s", (unsigned long long)id,
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, id);
	cr_assert_eq(wc.opcode, op);
	cr_assert_eq(wc.qp_num, e->qp->qp_num);
}

static void
ops(int gid_index)
{
	struct ibv_wc wc;
	uint64_t rva;

	setup(NULL, 16, 16, gid_index);
	rva = (uintptr_t)B.buf + (1u << 20);
	cr_assert_eq(t_post_recv(&B, 11, 0, 8192), 0);
	cr_assert_eq(t_post_recv(&B, 12, 8192, 8192), 0);
	cr_assert_eq(t_post_recv(&B, 13, 16384, 16), 0); /* for WRITE_WITH_IMM: buffer unused */

	/* SEND of 3 packets and a bit */
	tc_fill(A.buf, 3100, 1);
	cr_assert_eq(post(&A, IBV_WR_SEND, 1, 0, 3100, 0, 0, 0), 0);
	check_send(A.scq, 1, IBV_WC_SEND, &A);
	wc = tc_wait(B.rcq, 3000, "SEND");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 11);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, 3100);
	cr_assert_eq(wc.wc_flags, 0);
	cr_assert_eq(wc.qp_num, B.qp->qp_num);
	cr_assert_eq(wc.src_qp, A.qp->qp_num);
	cr_assert(tc_check(B.buf, 3100, 1));

	/* SEND_WITH_IMM, exactly one MTU */
	tc_fill(A.buf + 65536, 1024, 2);
	cr_assert_eq(post(&A, IBV_WR_SEND_WITH_IMM, 2, 65536, 1024, 0, 0, 0x12345678), 0);
	check_send(A.scq, 2, IBV_WC_SEND, &A);
	wc = tc_wait(B.rcq, 3000, "SEND_WITH_IMM");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 12);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, 1024);
	cr_assert_eq(wc.wc_flags, IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(wc.imm_data), 0x12345678);
	cr_assert_eq(wc.src_qp, A.qp->qp_num);
	cr_assert(tc_check(B.buf + 8192, 1024, 2));

	/* RDMA_WRITE of 5 packets: no receive completion */
	tc_fill(A.buf + 131072, 4500, 3);
	cr_assert_eq(post(&A, IBV_WR_RDMA_WRITE, 3, 131072, 4500, rva, B.mr->rkey, 0), 0);
	check_send(A.scq, 3, IBV_WC_RDMA_WRITE, &A);
	/* RDMA_WRITE_WITH_IMM right behind it */
	tc_fill(A.buf + 262144, 2048, 4);
	cr_assert_eq(post(&A, IBV_WR_RDMA_WRITE_WITH_IMM, 4, 262144, 2048, rva + 8192, B.mr->rkey,
			  0xcafe), 0);
	check_send(A.scq, 4, IBV_WC_RDMA_WRITE, &A);
	wc = tc_wait(B.rcq, 3000, "WRITE_WITH_IMM");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 13);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.byte_len, 2048);
	cr_assert_eq(wc.wc_flags, IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(wc.imm_data), 0xcafe);
	cr_assert_eq(wc.src_qp, A.qp->qp_num);
	cr_assert(tc_check(B.buf + (1u << 20), 4500, 3), "RDMA WRITE bytes");
	cr_assert(tc_check(B.buf + (1u << 20) + 8192, 2048, 4), "RDMA WRITE_WITH_IMM bytes");
	tc_expect_none(B.rcq, 100, "nothing else");
}

Test(uc, send_write_imm_ipv4)
{
	ops(0);
}

Test(uc, send_write_imm_ipv6)
{
	ops(1);
}

Test(uc, remote_access_error_dropped_silently)
{
	struct droce_engine_stats s0;
	struct ibv_wc wc;

	setup(NULL, 16, 16, 0);
	s0 = t_stats();
	tc_fill(A.buf, 2000, 5);
	/* a bad rkey and then a range outside the MR: both dropped, no NAK, no error */
	cr_assert_eq(post(&A, IBV_WR_RDMA_WRITE, 1, 0, 2000, (uintptr_t)B.buf, B.mr->rkey + 99, 0), 0);
	check_send(A.scq, 1, IBV_WC_RDMA_WRITE, &A);
	cr_assert_eq(post(&A, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 0, 2000,
			  (uintptr_t)B.buf + T_BUF_SIZE - 100, B.mr->rkey, 1), 0);
	check_send(A.scq, 2, IBV_WC_RDMA_WRITE, &A);
	cr_assert_eq(t_post_recv(&B, 7, 0, 4096), 0);
	tc_expect_none(B.rcq, 200, "dropped writes");
	cr_assert_eq(t_stats().uc_access_drops - s0.uc_access_drops, 2);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(B.buf[T_BUF_SIZE - 100 + i], 0, "nothing written");

	/* both QPs carry on */
	cr_assert_eq(post(&A, IBV_WR_SEND, 3, 0, 2000, 0, 0, 0), 0);
	check_send(A.scq, 3, IBV_WC_SEND, &A);
	wc = tc_wait(B.rcq, 3000, "SEND after the errors");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 7);
	cr_assert(tc_check(B.buf, 2000, 5));
}

/* Local errors take their statuses from the error table: a SEND longer than
 * its receive buffer completes that WQE with LOC_LEN_ERR and the QP carries
 * on; a SEND_WITH_INV (no UC opcode carries an IETH) completes with
 * LOC_QP_OP_ERR and the requester goes to ERR. */
Test(uc, local_errors_from_the_table)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	struct ibv_wc wc;

	setup(NULL, 16, 16, 0);
	cr_assert_eq(t_post_recv(&B, 1, 0, 100), 0);
	cr_assert_eq(t_post_recv(&B, 2, 8192, 4096), 0);
	tc_fill(A.buf, 2000, 9);
	cr_assert_eq(post(&A, IBV_WR_SEND, 10, 0, 2000, 0, 0, 0), 0);
	check_send(A.scq, 10, IBV_WC_SEND, &A);
	wc = tc_wait(B.rcq, 3000, "too long for the buffer");
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(post(&A, IBV_WR_SEND, 11, 0, 2000, 0, 0, 0), 0);
	check_send(A.scq, 11, IBV_WC_SEND, &A);
	wc = tc_wait(B.rcq, 3000, "the next SEND");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(wc.byte_len, 2000);
	cr_assert(tc_check(B.buf + 8192, 2000, 9));
	cr_assert_eq(ibv_query_qp(B.qp, &qa, IBV_QP_STATE, &init), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS, "the receiver carries on");

	cr_assert_eq(post(&A, IBV_WR_SEND_WITH_INV, 12, 0, 64, 0, 0, 0), 0);
	wc = tc_wait(A.scq, 3000, "SEND_WITH_INV on UC");
	cr_assert_eq(wc.status, IBV_WC_LOC_QP_OP_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 12);
	cr_assert_eq(ibv_query_qp(A.qp, &qa, IBV_QP_STATE, &init), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_ERR);
}

#define N_MSG 400
#define SLOT 4096u
#define WRITE_AREA (2u << 20)

/* Message i: 1..4 packets, pattern seed i + 1000, its index in the first 4 bytes; SEND
 * for even i, RDMA WRITE_WITH_IMM (imm = i) for odd i. */
static uint32_t
msg_len(uint32_t i)
{
	return 4 + (i * 977u) % (4 * 1024 - 4);
}

Test(uc, one_percent_loss)
{
	struct droce_engine_stats s0, s1;
	struct ibv_wc wc[64];
	uint32_t posted = 0, sent_done = 0, delivered = 0, last_idx = 0, expect_rqe = 0;
	bool any = false;
	uint64_t deadline;

	setup("impair_drop = 0.01\nimpair_seed = 4242\n", 64, N_MSG, 0);
	for (uint32_t i = 0; i < N_MSG; i++)
		cr_assert_eq(t_post_recv(&B, i, (size_t)i * SLOT, SLOT), 0);
	s0 = t_stats();
	deadline = tc_now_ms() + 20000;
	while ((posted < N_MSG || sent_done < N_MSG) && tc_now_ms() < deadline) {
		int n;

		while (posted < N_MSG && posted - sent_done < 64) {
			uint8_t *src = A.buf + (size_t)(posted % 256) * SLOT;
			uint32_t len = msg_len(posted);

			tc_fill(src, len, posted + 1000);
			memcpy(src, &posted, 4);
			/* odd ones are RDMA WRITE_WITH_IMM into their own slot of B's write area */
			cr_assert_eq(post(&A, (posted & 1) ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND,
					  posted, (size_t)(posted % 256) * SLOT, len,
					  (uintptr_t)B.buf + WRITE_AREA + (size_t)posted * SLOT,
					  B.mr->rkey, posted), 0);
			posted++;
		}
		n = ibv_poll_cq(A.scq, 64, wc);
		for (int k = 0; k < n; k++) {
			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS);
			cr_assert_eq(wc[k].wr_id, sent_done, "send completions in order");
			sent_done++;
		}
		n = ibv_poll_cq(B.rcq, 64, wc);
		for (int k = 0; k < n; k++) {
			const uint8_t *got = B.buf + wc[k].wr_id * SLOT;
			uint32_t idx;

			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc[k].status));
			cr_assert_eq(wc[k].wr_id, expect_rqe,
				     "receive WQEs of dropped messages are reused, in order");
			expect_rqe++;
			if (wc[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
				cr_assert_eq(wc[k].wc_flags, IBV_WC_WITH_IMM);
				idx = ntohl(wc[k].imm_data);
				cr_assert_lt(idx, N_MSG);
				cr_assert(idx & 1, "WRITE_WITH_IMM carries odd indexes");
				got = B.buf + WRITE_AREA + (size_t)idx * SLOT;
				cr_assert_eq(memcmp(got, &idx, 4), 0);
			} else {
				cr_assert_eq(wc[k].opcode, IBV_WC_RECV);
				cr_assert_eq(wc[k].wc_flags, 0);
				memcpy(&idx, got, 4);
				cr_assert_eq(idx & 1, 0, "SENDs carry even indexes");
			}
			cr_assert_lt(idx, N_MSG);
			cr_assert(!any || idx > last_idx, "in order, each at most once");
			cr_assert_eq(wc[k].byte_len, msg_len(idx), "message %u whole", idx);
			{
				uint8_t *want = malloc(msg_len(idx));

				tc_fill(want, msg_len(idx), idx + 1000);
				memcpy(want, &idx, 4);
				cr_assert_eq(memcmp(got, want, msg_len(idx)), 0, "message %u intact", idx);
				free(want);
			}
			last_idx = idx;
			any = true;
			delivered++;
		}
	}
	cr_assert_eq(sent_done, N_MSG, "the sender completes every WR");
	/* late messages: drain what is still in flight */
	for (;;) {
		int n = tc_poll(B.rcq, wc, 1, 200);

		if (n == 0)
			break;
		cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[0].wr_id, expect_rqe++);
		if (wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			last_idx = ntohl(wc[0].imm_data);
		else
			memcpy(&last_idx, B.buf + wc[0].wr_id * SLOT, 4);
		cr_assert_eq(wc[0].byte_len, msg_len(last_idx));
		delivered++;
	}
	s1 = t_stats();
	fprintf(stderr, "uc loss: %u of %u delivered, %lu messages dropped, last %u\n", delivered,
		N_MSG, (unsigned long)(s1.uc_msg_drops - s0.uc_msg_drops), last_idx);
	cr_assert_lt(delivered, N_MSG, "the link lost something");
	cr_assert_gt(delivered, N_MSG * 9 / 10);
	cr_assert_geq(last_idx, N_MSG - 5, "later messages still arrive");
	cr_assert_eq(s1.rq_empty_drops - s0.rq_empty_drops, 0);
}
