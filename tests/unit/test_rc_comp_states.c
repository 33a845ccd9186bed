/* SPDX-License-Identifier: BSD-3-Clause
 * The completer's READ-response and atomic-ACK states (rc_sm.h), single
 * steps on a QP in plain memory (plain_qp.c), no EAL: the path each packet
 * takes through the states, the bytes placed in local memory, the WQEs
 * retired, the errors named for ERROR (the error table's; the NAKs that
 * fail the head go there too), the drops.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "dataplane/rc_internal.h"
#include "plain_qp.h"

static uint8_t resp_bytes[1024];
static uint8_t resp_frame[64]; /* an atomic ACK's BTH, AETH and AtomicAckETH */

/* A READ response of @len bytes (each byte @fill) at @psn. */
static struct droce_rc_comp_ctx
read_resp(struct droce_pkt *p, uint8_t op, uint32_t psn, uint32_t len, uint8_t fill)
{
	memset(p, 0, sizeof(*p));
	memset(resp_bytes, fill, sizeof(resp_bytes));
	p->opcode = DROCE_OPC(DROCE_TRANSPORT_RC, op);
	p->info = droce_opcode_info(p->opcode);
	p->payload = resp_bytes;
	p->payload_len = len;
	return (struct droce_rc_comp_ctx){ .kind = COMP_KIND_READ, .psn = psn, .p = p,
					  .frame = resp_frame };
}

/* An atomic ACK at @psn carrying the original value @orig. */
static struct droce_rc_comp_ctx
atomic_ack(struct droce_pkt *p, uint32_t psn, uint64_t orig)
{
	memset(p, 0, sizeof(*p));
	memset(resp_frame, 0, sizeof(resp_frame));
	p->opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_ATOMIC_ACK);
	p->info = droce_opcode_info(p->opcode);
	droce_atmack_set_orig((struct droce_atmack *)(void *)(resp_frame + p->info->off[DROCE_HDR_ATMACK]),
			      orig);
	return (struct droce_rc_comp_ctx){ .kind = COMP_KIND_ATOMIC, .psn = psn, .p = p,
					  .frame = resp_frame };
}

/* Runs @c from @st, checking each state it goes through against @path (ending in DONE). */
static void
run_path(struct droce_rc_comp_ctx *c, enum droce_rc_comp_state st,
	 const enum droce_rc_comp_state *path, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		enum droce_rc_comp_state next = droce_rc_comp_step_lc(qp, st, c);

		cr_assert_eq(next, path[i], "step %u from %s: %s, want %s", i,
			     droce_rc_comp_state_name(st), droce_rc_comp_state_name(next),
			     droce_rc_comp_state_name(path[i]));
		st = next;
	}
	cr_assert_eq(st, COMP_DONE);
}
#define RUN_PATH(c, st, ...)                                                                   \
	do {                                                                                   \
		static const enum droce_rc_comp_state path_[] = { __VA_ARGS__ };               \
		run_path(c, st, path_, sizeof(path_) / sizeof(path_[0]));                      \
	} while (0)

TestSuite(rc_comp_answer, .init = qp_setup, .fini = qp_teardown);

Test(rc_comp_answer, read_response_in_order)
{
	struct droce_pkt p;
	struct droce_rc_comp_ctx c;
	struct droce_swqe *s;

	post(DROCE_WR_RDMA_WRITE, 8);
	local_sge(post(DROCE_WR_RDMA_READ, 2048), 2048);
	sent(0, 1);     /* WRITE at 100 */
	s = sent(1, 2); /* READ at 101, 102 */
	s->rd_counted = true;
	qp->rd_atomic_out = 1;

	/* outside the window (the PSN after max): dropped before anything moves */
	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 103, 1024, 0xa1);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 1);
	cr_assert_eq(qp->sq_head, 0);

	/* the first response: it acknowledges the WRITE, and fills the first 1 KiB */
	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 101, 1024, 0xa1);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_READ_WQE, COMP_READ_PLACE,
		 COMP_READ_COMPLETE, COMP_DONE);
	cr_assert_eq(qp->sq_head, 1, "the WRITE before it retired");
	cr_assert(c.head);
	cr_assert_eq(c.s, s);
	cr_assert_eq(c.expect, 101);
	cr_assert_eq(s->got, 1024);
	cr_assert_eq(local[0], 0xa1);
	cr_assert_eq(local[1023], 0xa1);
	cr_assert_eq(local[1024], 0, "the rest not yet");
	cr_assert_eq(qp->psn_una, 102, "una moves with the READ's prefix");
	cr_assert_eq(qp->rd_hi, 101);
	cr_assert(qp->peer_heard);

	/* the last: the READ is whole and retires, its slot counted back */
	c = read_resp(&p, DROCE_OP_READ_RESP_LAST, 102, 1024, 0xa2);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_READ_WQE, COMP_READ_PLACE,
		 COMP_READ_COMPLETE, COMP_ANSWERED, COMP_DONE);
	cr_assert_eq(local[1024], 0xa2);
	cr_assert_eq(local[2047], 0xa2);
	cr_assert_eq(qp->sq_head, 2);
	cr_assert_eq(qp->psn_una, 103);
	cr_assert_eq(qp->rd_atomic_out, 0);
	cr_assert_eq(qp->rto_deadline, 0, "nothing outstanding");

	/* again: nothing answers it now */
	c = read_resp(&p, DROCE_OP_READ_RESP_LAST, 102, 1024, 0xa3);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_READ_WQE, COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 2);
	cr_assert_eq(local[1024], 0xa2, "not placed again");
}

Test(rc_comp_answer, read_response_past_a_hole)
{
	struct droce_pkt p;
	struct droce_rc_comp_ctx c;
	struct droce_swqe *s;

	local_sge(post(DROCE_WR_RDMA_READ, 3072), 3072);
	s = sent(0, 3); /* 100, 101, 102 */

	/* 102 first: 100 and 101 lost; asked again (go-back: from 100), 102 kept */
	c = read_resp(&p, DROCE_OP_READ_RESP_LAST, 102, 1024, 0xc3);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_READ_WQE, COMP_READ_REASK,
		 COMP_READ_PLACE, COMP_READ_COMPLETE, COMP_DONE);
	cr_assert_eq(c.expect, 100);
	cr_assert_eq(qp->stats.read_resumes, 1);
	cr_assert_eq(qp->psn_next, 100, "asked again from the first missing");
	cr_assert_eq(local[2048], 0xc3, "placed where its PSN says");
	cr_assert_eq(s->got, 0);
	cr_assert_eq(qp->stats.read_ooo, 1);
	cr_assert_eq(qp->psn_una, 100);

	/* the same hole seen again in the same round: not asked twice */
	c = read_resp(&p, DROCE_OP_READ_RESP_LAST, 102, 1024, 0xc3);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_READ_WQE, COMP_READ_REASK,
		 COMP_READ_PLACE, COMP_DONE);
	cr_assert_eq(qp->stats.read_resumes, 1);
	cr_assert_eq(eng->stats.seq_drops, 1, "a duplicate");

	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 100, 1024, 0xc1);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_READ_WQE, COMP_READ_PLACE,
		 COMP_READ_COMPLETE, COMP_DONE);
	cr_assert_eq(s->got, 1024);
	cr_assert_eq(qp->psn_una, 101);

	/* the hole filled: the prefix grows over 102 and the READ completes */
	c = read_resp(&p, DROCE_OP_READ_RESP_MIDDLE, 101, 1024, 0xc2);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_READ_WQE, COMP_READ_PLACE,
		 COMP_READ_COMPLETE, COMP_ANSWERED, COMP_DONE);
	cr_assert_eq(local[0], 0xc1);
	cr_assert_eq(local[1024], 0xc2);
	cr_assert_eq(local[3071], 0xc3);
	cr_assert_eq(qp->sq_head, 1);
	cr_assert_eq(qp->psn_una, 103);
}

Test(rc_comp_answer, read_response_that_cannot_be_placed)
{
	struct droce_pkt p;
	struct droce_rc_comp_ctx c;

	local_sge(post(DROCE_WR_RDMA_READ, 2048), 2048);
	sent(0, 2); /* 100, 101 */

	/* a short response past the expected one: dropped, judged when its turn comes */
	c = read_resp(&p, DROCE_OP_READ_RESP_LAST, 101, 1000, 0xd1);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_WQE, &c), COMP_READ_REASK);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_PLACE, &c), COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 1);
	/* the one the head waits for: the READ fails, BAD_RESP (IBTA: bad response) */
	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 100, 1000, 0xd1);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_WQE, &c), COMP_READ_PLACE);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_PLACE, &c), COMP_ERROR);
	cr_assert_eq(c.err, DROCE_ERR_BAD_RESP);
	/* the READ's last PSN without LAST: bad too */
	c = read_resp(&p, DROCE_OP_READ_RESP_MIDDLE, 101, 1024, 0xd1);
	c.head = true;
	c.expect = 101;
	c.w = droce_qp_wqe(qp, 0);
	c.s = droce_qp_swqe(qp, 0);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_PLACE, &c), COMP_ERROR);
	cr_assert_eq(c.err, DROCE_ERR_BAD_RESP);
	cr_assert_eq(local[0], 0, "nothing placed");

	/* its MR gone (another lkey): a local protection error at the head */
	droce_qp_wqe(qp, 0)->sge[0].lkey ^= 0xff;
	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 100, 1024, 0xd2);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_WQE, &c), COMP_READ_PLACE);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_PLACE, &c), COMP_ERROR);
	cr_assert_eq(c.err, DROCE_ERR_LOC_PROT);
	/* not at the head: dropped */
	c.head = false;
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_PLACE, &c), COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 2);
	cr_assert_eq(local[0], 0);
	cr_assert_eq(qp->state, DROCE_QPS_RTS, "the steps only decide; ERROR fails the QP");
}

Test(rc_comp_answer, read_response_for_no_read_is_dropped)
{
	struct droce_pkt p;
	struct droce_rc_comp_ctx c;

	post(DROCE_WR_RDMA_WRITE, 8);
	local_sge(post(DROCE_WR_RDMA_READ, 1024), 1024);
	sent(0, 1); /* WRITE at 100 */
	sent(1, 1); /* READ at 101 */

	/* a READ response at a WRITE's PSN */
	c = read_resp(&p, DROCE_OP_READ_RESP_ONLY, 100, 8, 0xe1);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_WQE, &c), COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 1);
	/* the READ's, with the QP no longer sending */
	qp->state = DROCE_QPS_SQE;
	c = read_resp(&p, DROCE_OP_READ_RESP_ONLY, 101, 1024, 0xe1);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_WQE, &c), COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 2);
	qp->state = DROCE_QPS_SQD;
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_WQE, &c), COMP_READ_PLACE);
	cr_assert_not(c.head, "the WRITE before it is outstanding");
	/* placed, but it completes only after the WRITE */
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_PLACE, &c), COMP_READ_COMPLETE);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_READ_COMPLETE, &c), COMP_DONE);
	cr_assert(droce_qp_swqe(qp, 1)->done);
	cr_assert_eq(qp->sq_head, 0);
	cr_assert_eq(qp->psn_una, 100);
	cr_assert_eq(local[0], 0xe1);
	/* the WRITE's ACK retires it; the READ is next, answered */
	c = (struct droce_rc_comp_ctx){ .psn = 100, .syndrome = syn(DROCE_AETH_ACK, 0x1f) };
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_ACK, &c), COMP_DONE);
	cr_assert_eq(qp->sq_head, 1);
	cr_assert(droce_qp_swqe(qp, 1)->done);
}

Test(rc_comp_answer, atomic_ack)
{
	struct droce_pkt p;
	struct droce_rc_comp_ctx c;
	struct droce_swqe *s;
	uint64_t got;

	post(DROCE_WR_RDMA_WRITE, 8);
	local_sge(post(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8), 8);
	sent(0, 1);     /* WRITE at 100 */
	s = sent(1, 1); /* the atomic at 101 */
	s->rd_counted = true;
	qp->rd_atomic_out = 1;

	/* at the WRITE's PSN: the head is no atomic */
	c = atomic_ack(&p, 100, 7);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_ATOMIC_WQE, COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 1);
	cr_assert_eq(qp->sq_head, 0);

	c = atomic_ack(&p, 101, 0x1122334455667788ull);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_ATOMIC_WQE, COMP_ATOMIC_PLACE,
		 COMP_ANSWERED, COMP_DONE);
	memcpy(&got, local, sizeof(got));
	cr_assert_eq(got, 0x1122334455667788ull, "the original value, in host order");
	cr_assert_eq(qp->sq_head, 2);
	cr_assert_eq(qp->psn_una, 102);
	cr_assert_eq(qp->rd_atomic_out, 0);

	/* a copy of it: nothing left to answer */
	c = atomic_ack(&p, 101, 1);
	RUN_PATH(&c, COMP_CHECK_WINDOW, COMP_RETIRE_BEFORE, COMP_ATOMIC_WQE, COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 2);
	memcpy(&got, local, sizeof(got));
	cr_assert_eq(got, 0x1122334455667788ull);
}

Test(rc_comp_answer, atomic_ack_that_cannot_be_placed)
{
	struct droce_pkt p;
	struct droce_rc_comp_ctx c;
	struct droce_wqe *w = post(DROCE_WR_ATOMIC_CMP_AND_SWP, 8);

	local_sge(w, 8);
	sent(0, 1); /* 100 */
	w->sge[0].addr = 0x10000 + sizeof(local) - 4; /* past the MR's end */
	c = atomic_ack(&p, 100, 5);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_ATOMIC_WQE, &c), COMP_ATOMIC_PLACE);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_ATOMIC_PLACE, &c), COMP_ERROR);
	cr_assert_eq(c.err, DROCE_ERR_LOC_PROT);
	cr_assert_eq(qp->sq_head, 0, "not retired");
}

Test(rc_comp_answer, naks_that_fail_the_head_go_to_error)
{
	struct droce_rc_comp_ctx c = { .psn = 100,
				       .syndrome = syn(DROCE_AETH_NAK, DROCE_NAK_REM_ACCESS_ERR) };

	post(DROCE_WR_RDMA_WRITE, 8);
	sent(0, 1);
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_ERR_NAK, &c), COMP_ERROR);
	cr_assert_eq(c.err, DROCE_ERR_REM_ACCESS);
	cr_assert_eq(qp->stats.rem_err_naks_rx, 1);

	/* RNR NAKs: retried while rnr_left lasts, then the error */
	qp->attr.rnr_retry = 1;
	qp->rnr_left = 1;
	c = (struct droce_rc_comp_ctx){ .psn = 100, .syndrome = syn(DROCE_AETH_RNR_NAK, 1) };
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_RNR_NAK, &c), COMP_DONE);
	cr_assert_eq(qp->req_state, DROCE_REQ_RNR_WAIT);
	cr_assert_eq(qp->rnr_deadline, eng->now + 10000, "10 us at 1 GHz");
	cr_assert_eq(droce_rc_comp_step_lc(qp, COMP_RNR_NAK, &c), COMP_ERROR);
	cr_assert_eq(c.err, DROCE_ERR_RNR_RETRY_EXC);
}

/* The timeout attribute's T (4.096 us * 2^timeout) is cached per QP: a
 * modify that changes the attribute (ibv_modify_qp may, in RTS) is seen by
 * the next computation, and so is the adaptive timer's floor. */
Test(rc_comp_answer, rto_follows_the_timeout_attribute)
{
	/* 1 GHz: T(14) = 67,108,864 ns, T(17) = 536,870,912 ns */
	cr_assert_eq(droce_rc_rto_attr(qp), 67108864u);
	cr_assert_eq(droce_rc_rto_cycles(qp), 67108864u, "no RTT sample: T");
	qp->attr.timeout = 17;
	cr_assert_eq(droce_rc_rto_attr(qp), 536870912u);
	/* a 10 us RTT: the floor, T / 1024 = 524,288 ns (over 500 us) */
	qp->srtt = 10000;
	qp->rttvar = 5000;
	cr_assert_eq(droce_rc_rto_cycles(qp), 524288u);
	cr_assert_eq(qp->stats.rto_ns, 524288u);
	/* back to 14: T / 1024 = 65,536 ns, under the 500 us floor's floor */
	qp->attr.timeout = 14;
	cr_assert_eq(droce_rc_rto_cycles(qp), 500000u);
	cr_assert_eq(qp->stats.rto_ns, 500000u);
	/* a 1 ms RTT: SRTT + 4 RTTVAR, doubled per timeout in a row, at most T */
	qp->srtt = 1000000;
	qp->rttvar = 250000;
	cr_assert_eq(droce_rc_rto_cycles(qp), 2000000u);
	qp->rto_backoff = 3;
	cr_assert_eq(droce_rc_rto_cycles(qp), 16000000u);
	qp->rto_backoff = 6;
	cr_assert_eq(droce_rc_rto_cycles(qp), 67108864u, "at most T");
	cr_assert_eq(qp->stats.rto_ns, 67108864u);
}

/* READ responses through the entry point: the one the READ at the head
 * waits for goes straight to READ_PLACE (rc_comp.c's short way), with what
 * the window and READ_WQE would have done; one past a hole, or with a WQE
 * before the READ still to retire, takes the whole machine.  The same
 * bytes, PSNs and retirements either way. */
Test(rc_comp_answer, read_responses_through_the_entry)
{
	struct droce_pkt p;
	struct droce_rc_comp_ctx c;
	struct droce_swqe *s;

	post(DROCE_WR_RDMA_WRITE, 8);
	local_sge(post(DROCE_WR_RDMA_READ, 2048), 2048);
	local_sge(post(DROCE_WR_RDMA_READ, 3072), 3072);
	sent(0, 1);     /* WRITE at 100 */
	s = sent(1, 2); /* READ at 101, 102 */
	s->rd_counted = true;
	sent(2, 3);     /* READ at 103, 104, 105 */
	qp->rd_atomic_out = 2;

	/* the WRITE is still at the head: the whole way retires it first */
	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 101, 1024, 0xe1);
	droce_rc_comp_read_resp_lc(qp, c.p, c.frame, 101);
	cr_assert_eq(qp->sq_head, 1, "the WRITE before it retired");
	cr_assert_eq(s->got, 1024);
	cr_assert_eq(local[0], 0xe1);
	cr_assert_eq(qp->psn_una, 102);
	cr_assert_eq(qp->rd_hi, 101);

	/* the READ at the head now: its last response, the short way */
	qp->peer_heard = false;
	c = read_resp(&p, DROCE_OP_READ_RESP_LAST, 102, 1024, 0xe2);
	droce_rc_comp_read_resp_lc(qp, c.p, c.frame, 102);
	cr_assert_eq(local[1024], 0xe2);
	cr_assert_eq(local[2047], 0xe2);
	cr_assert_eq(qp->sq_head, 2, "the READ retired");
	cr_assert_eq(qp->psn_una, 103);
	cr_assert_eq(qp->rd_atomic_out, 1);
	cr_assert_eq(qp->rd_hi, 102);
	cr_assert(qp->peer_heard);

	/* a response past a hole of the next READ: the whole way (asked again) */
	c = read_resp(&p, DROCE_OP_READ_RESP_MIDDLE, 104, 1024, 0xe4);
	droce_rc_comp_read_resp_lc(qp, c.p, c.frame, 104);
	cr_assert_eq(qp->stats.read_resumes, 1);
	cr_assert_eq(qp->stats.read_ooo, 1);
	cr_assert_eq(qp->psn_next, 103, "asked again from the first missing");
	cr_assert_eq(local[1024], 0xe4, "placed where its PSN says");
	cr_assert_eq(droce_qp_swqe(qp, 2)->got, 0);

	/* outside the window: dropped, nothing placed */
	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 106, 1024, 0xe6);
	droce_rc_comp_read_resp_lc(qp, c.p, c.frame, 106);
	cr_assert_eq(eng->stats.seq_drops, 1);

	/* the hole's first: the short way, and the prefix grows over 104 */
	c = read_resp(&p, DROCE_OP_READ_RESP_FIRST, 103, 1024, 0xe3);
	droce_rc_comp_read_resp_lc(qp, c.p, c.frame, 103);
	cr_assert_eq(local[0], 0xe3);
	cr_assert_eq(droce_qp_swqe(qp, 2)->got, 2048);
	cr_assert_eq(qp->psn_una, 105);
	cr_assert_eq(qp->sq_head, 2, "waits for its last");
}
