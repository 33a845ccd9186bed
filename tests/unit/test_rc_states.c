/* SPDX-License-Identifier: BSD-3-Clause
 * The RC transport's state machines (rc_sm.h): every state has a distinct
 * name for the logs and the tables end where the enums do; and single steps
 * of the requester, completer and responder (both sides), driven on a QP
 * built in plain memory, without the EAL: the next state and the QP fields
 * each step leaves.  The completer's READ-response and atomic-ACK states are
 * in test_rc_comp_states.c, the steps that build a packet in
 * test_rc_tx_steps.c; the QP (and the mbuf pool) in plain memory is
 * plain_qp.c's.
 */
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plain_qp.h"

typedef const char *(*name_fn)(unsigned int);

static void
check_names(name_fn fn, const char *const *want, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		const char *name = fn(i);

		cr_assert_not_null(name, "state %u has no name", i);
		cr_assert_str_eq(name, want[i], "state %u", i);
		for (unsigned int j = 0; j < i; j++)
			cr_assert_str_neq(name, fn(j));
	}
	cr_assert_null(fn(n), "the table ends with DONE");
	cr_assert_null(fn(~0u));
}

Test(rc_states, responder_names)
{
	static const char *const want[] = { "CHECK_QP_STATE", "CHECK_PSN", "CHECK_RESOURCE",
					    "CHECK_OP_SEQ", "EXECUTE", "ACKNOWLEDGE", "SEQ_NAK",
					    "DUPLICATE", "RNR_NAK", "ERR_INV_REQ", "DONE" };

	cr_assert_eq(sizeof(want) / sizeof(want[0]), RESP_STATE_COUNT);
	check_names(droce_rc_resp_state_name, want, RESP_STATE_COUNT);
}

Test(rc_states, completer_names)
{
	static const char *const want[] = { "CHECK_WINDOW", "CHECK_GHOST", "CHECK_SYNDROME",
					    "ACK", "RNR_NAK", "SEQ_NAK", "ERR_NAK",
					    "RETIRE_BEFORE", "READ_WQE", "READ_REASK", "READ_PLACE",
					    "READ_COMPLETE", "ATOMIC_WQE", "ATOMIC_PLACE", "ANSWERED",
					    "ERROR", "DONE" };

	cr_assert_eq(sizeof(want) / sizeof(want[0]), COMP_STATE_COUNT);
	check_names(droce_rc_comp_state_name, want, COMP_STATE_COUNT);
}

Test(rc_states, requester_names)
{
	static const char *const want[] = { "CHECK_QP_STATE", "RETIRE_LOCAL", "NEXT_WQE",
					    "WINDOW", "CHECK_LOCAL", "LOCAL_OP", "SEND_PKT",
					    "NOTE_SENT", "WQE_DONE", "FAIL", "DONE" };

	cr_assert_eq(sizeof(want) / sizeof(want[0]), REQ_STATE_COUNT);
	check_names(droce_rc_req_state_name, want, REQ_STATE_COUNT);
}

Test(rc_states, responder_tx_names)
{
	static const char *const want[] = { "NEXT", "NAK", "ATOMIC_ACK", "READ_RESP", "SENT",
					    "ACK", "DONE" };

	cr_assert_eq(sizeof(want) / sizeof(want[0]), RTX_STATE_COUNT);
	check_names(droce_rc_rtx_state_name, want, RTX_STATE_COUNT);
}

/* ---- completer ---- */

/* One step on an ACKNOWLEDGE packet at @psn. */
static enum droce_rc_comp_state
comp_step(enum droce_rc_comp_state st, uint32_t psn, uint8_t syndrome)
{
	struct droce_rc_comp_ctx c = { .psn = psn, .syndrome = syndrome };

	return droce_rc_comp_step_lc(qp, st, &c);
}

TestSuite(rc_comp_step, .init = qp_setup, .fini = qp_teardown);

Test(rc_comp_step, nak_for_a_psn_never_sent_is_a_ghost)
{
	post(DROCE_WR_RDMA_WRITE, 8);
	sent(0, 1); /* PSN 100 out: una 100, max 101 */

	/* a sequence NAK at una - 1 names nothing outstanding */
	cr_assert_eq(comp_step(COMP_CHECK_WINDOW, 99,
					   syn(DROCE_AETH_NAK, DROCE_NAK_PSN_SEQ_ERR)),
		     COMP_CHECK_GHOST);
	cr_assert_eq(comp_step(COMP_CHECK_GHOST, 99,
					   syn(DROCE_AETH_NAK, DROCE_NAK_PSN_SEQ_ERR)),
		     COMP_DONE);
	cr_assert_eq(eng->stats.ghost_acks, 1);
	cr_assert(qp->peer_heard);
	cr_assert_eq(qp->sq_head, 0, "nothing retired");
	cr_assert_eq(qp->psn_una, 100);
	cr_assert_eq(qp->psn_next, 101, "no go-back");
	cr_assert_eq(qp->stats.retransmits, 0);

	/* an ACK at una - 1 is a duplicate ACK, not a ghost: on to the syndrome */
	cr_assert_eq(comp_step(COMP_CHECK_GHOST, 99, syn(DROCE_AETH_ACK, 0x1f)),
		     COMP_CHECK_SYNDROME);
	cr_assert_eq(eng->stats.ghost_acks, 1);
}

Test(rc_comp_step, psn_outside_the_window_is_dropped)
{
	post(DROCE_WR_RDMA_WRITE, 8);
	sent(0, 1);

	/* at max (never sent) and far behind: dropped, counted */
	cr_assert_eq(comp_step(COMP_CHECK_WINDOW, 101, syn(DROCE_AETH_ACK, 0x1f)),
		     COMP_DONE);
	cr_assert_eq(comp_step(COMP_CHECK_WINDOW, 50, syn(DROCE_AETH_ACK, 0x1f)),
		     COMP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 2);
	cr_assert_not(qp->peer_heard);
	cr_assert_eq(comp_step(COMP_CHECK_WINDOW, 100, syn(DROCE_AETH_ACK, 0x1f)),
		     COMP_CHECK_GHOST);
}

Test(rc_comp_step, syndrome_picks_the_handler)
{
	cr_assert_eq(comp_step(COMP_CHECK_SYNDROME, 100, syn(DROCE_AETH_ACK, 0x1f)),
		     COMP_ACK);
	cr_assert_eq(comp_step(COMP_CHECK_SYNDROME, 100, syn(DROCE_AETH_RNR_NAK, 3)),
		     COMP_RNR_NAK);
	cr_assert_eq(comp_step(COMP_CHECK_SYNDROME, 100,
					   syn(DROCE_AETH_NAK, DROCE_NAK_PSN_SEQ_ERR)),
		     COMP_SEQ_NAK);
	cr_assert_eq(comp_step(COMP_CHECK_SYNDROME, 100,
					   syn(DROCE_AETH_NAK, DROCE_NAK_REM_ACCESS_ERR)),
		     COMP_ERR_NAK);
	cr_assert_eq(eng->stats.seq_drops, 0);
}

Test(rc_comp_step, ack_retires_what_it_covers)
{
	struct droce_swqe *s0;

	post(DROCE_WR_RDMA_WRITE, 8);  /* unsignaled: retired without a completion */
	post(DROCE_WR_RDMA_WRITE, 3000);
	s0 = sent(0, 1);               /* PSN 100 */
	sent(1, 3);                    /* PSNs 101..103 */
	cr_assert_eq(s0->first_psn, 100);

	/* a coalesced ACK of 102: the first WQE retired, the second half acknowledged */
	cr_assert_eq(comp_step(COMP_ACK, 102, syn(DROCE_AETH_ACK, 0x1f)), COMP_DONE);
	cr_assert_eq(qp->sq_head, 1);
	cr_assert_eq(qp->psn_una, 103);
	cr_assert_eq(qp->retry_left, 7, "progress refills the retries");
	cr_assert_neq(qp->rto_deadline, 0, "PSN 103 outstanding: the timer runs");

	cr_assert_eq(comp_step(COMP_ACK, 103, syn(DROCE_AETH_ACK, 0x1f)), COMP_DONE);
	cr_assert_eq(qp->sq_head, 2);
	cr_assert_eq(qp->psn_una, 104);
	cr_assert_eq(qp->rto_deadline, 0, "nothing outstanding: no timer");
}

Test(rc_comp_step, ack_retires_an_unsignaled_run_in_one_step)
{
	post(DROCE_WR_SEND, 8);
	post(DROCE_WR_RDMA_WRITE, 8);
	post(DROCE_WR_RDMA_WRITE, 3000);
	post(DROCE_WR_RDMA_READ, 8);
	sent(0, 1); /* PSN 100 */
	sent(1, 1); /* 101 */
	sent(2, 3); /* 102..104 */
	sent(3, 1); /* the READ: 105 */

	/* an ACK of 101: the SEND and the first WRITE, in one step, no CQE (no CQ here) */
	cr_assert_eq(comp_step(COMP_ACK, 101, syn(DROCE_AETH_ACK, 0x1f)), COMP_DONE);
	cr_assert_eq(qp->sq_head, 2);
	cr_assert_eq(atomic_load(&qp->sq_retired), 2, "the run published");
	cr_assert_eq(qp->psn_una, 102);
	cr_assert_eq(qp->psn_next, 106, "no go-back");
	for (uint32_t i = 0; i < 2; i++) {
		const struct droce_swqe *s = droce_qp_swqe(qp, i);

		cr_assert(!s->started && s->first_psn == 0 && s->npkts == 0,
			  "slot %u's progress cleared for the WQE that reuses it", i);
	}
	cr_assert(droce_qp_swqe(qp, 2)->started, "the WRITE not wholly acknowledged stays");

	/* inside the WRITE: forward progress, nothing retired */
	cr_assert_eq(comp_step(COMP_ACK, 103, syn(DROCE_AETH_ACK, 0x1f)), COMP_DONE);
	cr_assert_eq(qp->sq_head, 2);
	cr_assert_eq(qp->psn_una, 104);

	/* the WRITE's last PSN: it retires; the run stops at the READ (answered
	 * by its response, not by an ACK) */
	cr_assert_eq(comp_step(COMP_ACK, 104, syn(DROCE_AETH_ACK, 0x1f)), COMP_DONE);
	cr_assert_eq(qp->sq_head, 3);
	cr_assert_eq(atomic_load(&qp->sq_retired), 3);
	cr_assert_eq(qp->psn_una, 105);
	cr_assert(droce_qp_swqe(qp, 3)->started, "the READ waits for its response");
	cr_assert_eq(qp->stats.implicit_naks, 0);
}

Test(rc_comp_step, seq_nak_goes_back)
{
	post(DROCE_WR_RDMA_WRITE, 8);
	post(DROCE_WR_RDMA_WRITE, 8);
	post(DROCE_WR_RDMA_WRITE, 8);
	sent(0, 1);
	sent(1, 1);
	sent(2, 1); /* 100, 101, 102 */

	/* the responder expects 101: 100 is acknowledged, the rest goes again */
	cr_assert_eq(comp_step(COMP_SEQ_NAK, 101,
					   syn(DROCE_AETH_NAK, DROCE_NAK_PSN_SEQ_ERR)),
		     COMP_DONE);
	cr_assert_eq(qp->sq_head, 1);
	cr_assert_eq(qp->psn_una, 101);
	cr_assert_eq(qp->psn_next, 101);
	cr_assert_eq(qp->sq_cur, 1);
	cr_assert_eq(qp->stats.seq_naks_rx, 1);
	cr_assert_eq(qp->stats.retransmits, 1);
	cr_assert_not(droce_qp_swqe(qp, 2)->started, "the later WQE starts again");
}

/* ---- requester ---- */

TestSuite(rc_req_step, .init = qp_setup, .fini = qp_teardown);

Test(rc_req_step, full_window_stops_a_write_not_a_read)
{
	struct droce_rc_req_ctx c = { .budget = 64 };

	post(DROCE_WR_RDMA_WRITE, 8);
	qp->psn_una = 100;
	qp->psn_next = qp->psn_max = 100 + 256; /* the whole window out */

	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(c.idx, 0);
	cr_assert_not(c.rd);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_DONE);
	cr_assert_not(droce_qp_swqe(qp, 0)->started, "nothing started");
	cr_assert_eq(qp->psn_next, 356);

	/* one PSN less out: the WRITE goes on to start */
	qp->psn_una = 101;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_CHECK_LOCAL);

	/* a smaller loss window counts */
	qp->cwnd = 16;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_DONE);

	/* a READ waits for max_rd_atomic, not the window */
	qp->sq_cur = qp->sq_avail;
	post(DROCE_WR_RDMA_READ, 8);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert(c.rd);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_CHECK_LOCAL);
}

Test(rc_req_step, read_limit_and_fence_stop_before_start)
{
	struct droce_rc_req_ctx c = { .budget = 64 };
	struct droce_wqe *w = post(DROCE_WR_RDMA_READ, 8);

	qp->rd_atomic_out = 2; /* = max_rd_atomic */
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_DONE);
	cr_assert_not(droce_qp_swqe(qp, 0)->started);

	/* a fenced WRITE waits for the READs before it */
	w->opcode = DROCE_WR_RDMA_WRITE;
	w->flags |= DROCE_WQE_FENCE;
	qp->rd_atomic_out = 1;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_DONE);

	/* none out: it starts, with its PSNs reserved */
	qp->rd_atomic_out = 0;
	w->length = 2500;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_SEND_PKT);
	cr_assert(droce_qp_swqe(qp, 0)->started);
	cr_assert_eq(droce_qp_swqe(qp, 0)->first_psn, 100);
	cr_assert_eq(droce_qp_swqe(qp, 0)->npkts, 3);
	cr_assert_eq(c.err, DROCE_ERR_NONE);
}

Test(rc_req_step, a_wqe_that_cannot_start_fails_in_order)
{
	struct droce_rc_req_ctx c = { .budget = 64 };

	post(DROCE_WR_RDMA_WRITE, 8);
	post(0x7f, 8); /* no such opcode */
	sent(0, 1);    /* the first is out, unacknowledged */

	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(c.idx, 1);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_CHECK_LOCAL);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_FAIL);
	cr_assert_eq(c.err, DROCE_ERR_REM_OP);
	/* not the head: the error waits in the WQE, the QP stays in RTS */
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_FAIL, &c), REQ_DONE);
	cr_assert_eq(droce_qp_swqe(qp, 1)->err, DROCE_ERR_REM_OP);
	cr_assert_eq(qp->state, DROCE_QPS_RTS);
	cr_assert_eq(qp->sq_head, 0);

	/* the next turn, with the first WQE still out: the same FAIL, nothing sent */
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_QP_STATE, &c), REQ_RETIRE_LOCAL);
}

Test(rc_req_step, qp_state_and_budget_end_the_turn)
{
	struct droce_rc_req_ctx c = { .budget = 1 };

	post(DROCE_WR_RDMA_WRITE, 8);
	qp->req_state = DROCE_REQ_RNR_WAIT;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_QP_STATE, &c), REQ_DONE);
	qp->req_state = DROCE_REQ_IDLE;
	qp->state = DROCE_QPS_SQD;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_QP_STATE, &c), REQ_DONE);
	qp->state = DROCE_QPS_RTS;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_QP_STATE, &c), REQ_RETIRE_LOCAL);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_RETIRE_LOCAL, &c), REQ_NEXT_WQE);
	c.sent = 1; /* the budget spent */
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_DONE);
	c.sent = 0;
	qp->sq_cur = qp->sq_avail; /* nothing left */
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_DONE);
}

Test(rc_req_step, note_sent_moves_the_psns)
{
	struct droce_rc_req_ctx c = { .budget = 4 };
	struct droce_swqe *s;

	post(DROCE_WR_RDMA_WRITE, 3000);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_SEND_PKT);
	s = droce_qp_swqe(qp, 0);
	/* as SEND_PKT leaves it after the first of three packets */
	s->sent_pkts = 1;
	c.last = false;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NOTE_SENT, &c), REQ_NEXT_WQE);
	cr_assert_eq(c.sent, 1);
	cr_assert_eq(qp->psn_next, 101);
	cr_assert_eq(qp->psn_max, 101);
	cr_assert_neq(qp->rto_deadline, 0, "the timer armed");
	cr_assert_eq(qp->sq_cur, 0, "more of it to send");
	/* after the last */
	s->sent_pkts = 3;
	c.last = true;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NOTE_SENT, &c), REQ_WQE_DONE);
	cr_assert_eq(qp->psn_next, 103);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WQE_DONE, &c), REQ_NEXT_WQE);
	cr_assert_eq(qp->sq_cur, 1);
}

/* ---- responder, receive side ---- */

TestSuite(rc_resp_step, .init = qp_setup, .fini = qp_teardown);

/* A request packet: its BTH alone (the steps here read nothing else). */
static void
request(struct droce_pkt *p, uint8_t frame[64], uint8_t opcode, uint32_t psn, bool ackreq)
{
	struct droce_bth *bth = (struct droce_bth *)(void *)frame;

	memset(p, 0, sizeof(*p));
	memset(frame, 0, 64);
	droce_bth_set_opcode(bth, opcode);
	droce_bth_set_psn(bth, psn);
	droce_bth_set_ackreq(bth, ackreq);
	p->opcode = opcode;
	p->info = droce_opcode_info(opcode);
	p->bth_off = 0;
}

Test(rc_resp_step, check_psn)
{
	struct droce_pkt p;
	uint8_t frame[64];

	qp->rxseq.epsn = 500;
	qp->nak_seq_sent = true;

	/* far ahead: a sequence NAK */
	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY), 900, true);
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_PSN, &p, frame), RESP_SEQ_NAK);
	/* one ahead too */
	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY), 501, true);
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_PSN, &p, frame), RESP_SEQ_NAK);
	cr_assert(qp->nak_seq_sent, "no request on time yet");
	/* behind, across the PSN wrap too: a duplicate */
	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY), 499, true);
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_PSN, &p, frame), RESP_DUPLICATE);
	qp->rxseq.epsn = 2;
	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY), DROCE_PSN_MASK, true);
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_PSN, &p, frame), RESP_DUPLICATE);
	/* the expected one: on, and the gap is closed */
	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY), 2, true);
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_PSN, &p, frame), RESP_CHECK_RESOURCE);
	cr_assert_not(qp->nak_seq_sent);
}

Test(rc_resp_step, check_qp_state)
{
	struct droce_pkt p;
	uint8_t frame[64];

	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY), 0, false);
	qp->state = DROCE_QPS_INIT;
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_QP_STATE, &p, frame), RESP_DONE);
	qp->state = DROCE_QPS_RTR;
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_QP_STATE, &p, frame), RESP_CHECK_PSN);
	qp->resp_failing = true; /* an error queued behind READ responses */
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_QP_STATE, &p, frame), RESP_DONE);
}

Test(rc_resp_step, full_response_queue_drops_a_read)
{
	struct droce_pkt p;
	uint8_t frame[64];

	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_READ_REQ), 0, true);
	qp->rd_resp_count = DROCE_RD_RESP_CAP;
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_RESOURCE, &p, frame), RESP_DONE);
	cr_assert_eq(eng->stats.seq_drops, 1);
	qp->rd_resp_count = 0;
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_CHECK_RESOURCE, &p, frame), RESP_CHECK_OP_SEQ);
}

Test(rc_resp_step, ackreq_arms_the_coalesced_ack)
{
	struct droce_pkt p;
	uint8_t frame[64];

	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY), 42, false);
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_ACKNOWLEDGE, &p, frame), RESP_DONE);
	cr_assert_not(qp->ack_pending, "no AckReq: no ACK");
	request(&p, frame, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY), 42, true);
	cr_assert_eq(droce_rc_resp_step_lc(qp, RESP_ACKNOWLEDGE, &p, frame), RESP_DONE);
	cr_assert(qp->ack_pending);
	cr_assert_eq(qp->ack_psn, 42);
	cr_assert_eq(droce_aeth_syndrome_kind(qp->ack_syndrome), DROCE_AETH_ACK);
}

/* ---- responder, transmit side ---- */

TestSuite(rc_rtx_step, .init = qp_setup, .fini = qp_teardown);

Test(rc_rtx_step, next_picks_the_oldest_answer)
{
	struct droce_rc_rtx_ctx c = { .budget = 8 };

	/* nothing queued: on to the pending ACK, which ends the turn when none is due */
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_ACK);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_ACK, &c), RTX_DONE);
	cr_assert_eq(c.sent, 0);

	qp->rd_resp_head = DROCE_RD_RESP_CAP - 1; /* the ring wraps */
	rd_resp[DROCE_RD_RESP_CAP - 1] = (struct droce_rd_resp){ .psn = 7, .atomic = true };
	rd_resp[0] = (struct droce_rd_resp){ .psn = 8, .len = 100 };
	rd_resp[1] = (struct droce_rd_resp){ .psn = 9, .nak_err = DROCE_ERR_REM_ACCESS };
	qp->rd_resp_count = 3;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_ATOMIC_ACK);
	cr_assert_eq(c.e, &rd_resp[DROCE_RD_RESP_CAP - 1]);
	/* as ATOMIC_ACK leaves it: sent whole, dequeued */
	c.whole = true;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_SENT, &c), RTX_NEXT);
	cr_assert_eq(c.sent, 1);
	cr_assert_eq(qp->rd_resp_count, 2);
	cr_assert_eq(qp->rd_resp_head, 0);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_READ_RESP);
	cr_assert_eq(c.e, &rd_resp[0]);
	/* one packet of a longer READ: stays queued */
	c.whole = false;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_SENT, &c), RTX_NEXT);
	cr_assert_eq(qp->rd_resp_count, 2);
	c.whole = true;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_SENT, &c), RTX_NEXT);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_NAK);
	cr_assert_eq(c.e->psn, 9);

	/* the budget spent: no more this turn, and no ACK past queued answers */
	c.sent = c.budget;
	qp->ack_pending = true;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_ACK);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_ACK, &c), RTX_DONE);
	cr_assert(qp->ack_pending, "still due");
}
