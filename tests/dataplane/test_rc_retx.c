/* SPDX-License-Identifier: BSD-3-Clause
 * RC loss recovery (dataplane/rc_retx.c), one mechanism per test, with loss
 * patterns made exact by a peer the test plays by hand: the QP under test
 * talks to a QPN nobody has (its packets are dropped on arrival), and the
 * test hands it the answers a responder would send (droce_dp_inject, as
 * received), or hands a real responder the requests a requester would send.
 *  - a 64 KiB WRITE whose 21st packet is lost: one go-back, re-sending from
 *    the lost packet only, no timeout;
 *  - a READ whose 6th response is lost, twice: the responses after it are
 *    kept, and it alone is asked again each round its hole shows, bytes right;
 *  - against a real responder (its answers dropped, the test hands the
 *    requester the frames it sent): one middle READ response lost, then two,
 *    then one in the first of two READs: only the missing responses are asked
 *    again (the responder sends exactly that many), the READs complete in
 *    order with the right bytes;
 *  - the last ACK lost: the timeout re-sends one packet (a probe), the ACK to
 *    it completes the WRITE, no go-back;
 *  - retry_cnt 0 survives timeouts shorter than the timeout attribute (a
 *    retry is a whole attribute without progress), and a peer that answers
 *    nothing fails the QP after (retry_cnt + 1) attributes with RETRY_EXC;
 *  - the responder NAKs a gap once per retransmission round and on AckReq,
 *    never for a copy of the last packet, and places the message right.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define POLL_MS 10000
#define PMTU 1024
#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)
#define GHOST (1u << 12) /* added to the peer's QPN: nobody */

TestSuite(rc_retx, .fini = h_stop, .timeout = 120);

static struct h_pair p;
static struct h_buf lb, rb;

/* QP 0 (port0) towards a QPN nobody has; QP 1 (port1) towards QP 0. */
static void
setup(struct h_conn_opts *o)
{
	struct h_cfg cfg = { .fallback_us = -1 }; /* only the test drives: exact batches */

	h_start(&cfg, false);
	h_buf_init(&lb, 1 << 20, ALL_ACCESS);
	h_buf_init(&rb, 1 << 20, ALL_ACCESS);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_connect(p.qp[0], 0, 1, p.qpn[1] + GHOST, H_PSN_A, H_PSN_B, o);
	h_connect(p.qp[1], 1, 0, p.qpn[0], H_PSN_B, H_PSN_A, o);
}

static uint32_t
psn(uint32_t base, uint32_t n)
{
	return (base + n) & DROCE_PSN_MASK;
}

/* An ACKNOWLEDGE to QP 0 as if from its peer: @kind ACK or NAK (@code). */
static void
ack_to_requester(uint32_t at, enum droce_aeth_kind kind, uint8_t code)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_ACK) };

	f.pkey = 0xffff;
	f.dqpn = p.qpn[0];
	f.psn = at;
	f.aeth.syndrome = droce_aeth_make_syndrome(kind, kind == DROCE_AETH_ACK ? DROCE_AETH_CREDIT_INVALID
										 : code);
	h_inject_frame_dir(1, 0, &f, NULL, 0, DROCE_INJECT_RX);
}

static void
read_resp(uint32_t at, enum droce_op op, const uint8_t *data, uint32_t len)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, op) };

	f.pkey = 0xffff;
	f.dqpn = p.qpn[0];
	f.psn = at;
	f.aeth.syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	h_inject_frame_dir(1, 0, &f, data, len, DROCE_INJECT_RX);
}

static void
post_write(uint64_t id, uint32_t len)
{
	h_post_write(p.qp[0], id, &lb, &rb, 0, len);
}

Test(rc_retx, write_middle_packet_lost_one_goback)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	const struct droce_qp_stats *s;
	struct droce_cqe c;

	o.timeout = 0; /* no timer in this test: only the NAK moves it */
	setup(&o);
	s = h_qp_stats(p.qp[0]);
	post_write(0x11, 65536);
	h_wait_tx(p.qp[0], 64, "64 KiB WRITE");
	/* the responder got 0..19, not 20: ACK up to 15 (AckReq), NAK 20 */
	ack_to_requester(psn(H_PSN_A, 15), DROCE_AETH_ACK, 0);
	ack_to_requester(psn(H_PSN_A, 20), DROCE_AETH_NAK, DROCE_NAK_PSN_SEQ_ERR);
	h_wait_tx(p.qp[0], 64 + 44, "the go-back");
	h_spin(20);
	cr_assert_eq(s->tx_pkts, 64 + 44, "re-sent %" PRIu64 " frames, want 20..63 (44)",
		     s->tx_pkts - 64);
	cr_assert_eq(s->retransmits, 1);
	cr_assert_eq(s->seq_naks_rx, 1);
	cr_assert_eq(s->timeouts, 0);
	h_expect_empty(p.scq[0], 0, "not acknowledged yet");
	ack_to_requester(psn(H_PSN_A, 63), DROCE_AETH_ACK, 0);
	c = h_poll1(p.scq[0], POLL_MS, "WRITE");
	cr_assert_eq(c.wr_id, 0x11);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
}

Test(rc_retx, read_resumed_from_first_missing_response)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	const struct droce_qp_stats *s;
	struct droce_wqe w;
	struct droce_cqe c;
	static uint8_t src[16 * PMTU];

	o.timeout = 0;
	setup(&o);
	s = h_qp_stats(p.qp[0]);
	h_fill(src, sizeof(src), 77);
	memset(lb.p, 0, sizeof(src));
	w = h_wqe(0x22, DROCE_WR_RDMA_READ, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, sizeof(src));
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	h_post_send(p.qp[0], &w);
	h_wait_tx(p.qp[0], 1, "READ request");
	/* round 1: responses 0..4, 5 lost, 6..15 */
	read_resp(psn(H_PSN_A, 0), DROCE_OP_READ_RESP_FIRST, src, PMTU);
	for (uint32_t i = 1; i < 16; i++)
		if (i != 5)
			read_resp(psn(H_PSN_A, i), i == 15 ? DROCE_OP_READ_RESP_LAST : DROCE_OP_READ_RESP_MIDDLE,
				  src + i * PMTU, PMTU);
	h_wait_tx(p.qp[0], 2, "READ asked again");
	h_spin(20);
	cr_assert_eq(s->tx_pkts, 2, "one READ re-issued, not %" PRIu64, s->tx_pkts - 1);
	cr_assert_eq(s->read_resumes, 1);
	cr_assert_eq(s->read_ooo, 10, "responses 6..15 kept: %" PRIu64, s->read_ooo);
	cr_assert_eq(s->read_reasks, 1);
	/* round 2: 5 lost again, and a copy of 6 shows the hole again */
	read_resp(psn(H_PSN_A, 6), DROCE_OP_READ_RESP_MIDDLE, src + 6 * PMTU, PMTU);
	h_wait_tx(p.qp[0], 3, "READ asked again, second round");
	h_spin(20);
	cr_assert_eq(s->tx_pkts, 3);
	cr_assert_eq(s->read_resumes, 2);
	/* round 3: the answer to a READ for 5 alone */
	read_resp(psn(H_PSN_A, 5), DROCE_OP_READ_RESP_ONLY, src + 5 * PMTU, PMTU);
	c = h_poll1(p.scq[0], POLL_MS, "READ");
	cr_assert_eq(c.wr_id, 0x22);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	cr_assert_eq(memcmp(lb.p, src, sizeof(src)), 0, "READ bytes");
	cr_assert_eq(s->timeouts, 0);
	cr_assert_eq(s->tx_pkts, 3);
}

Test(rc_retx, lost_ack_probe_no_goback)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	const struct droce_qp_stats *s;
	struct droce_cqe c;

	o.timeout = 12; /* 16.8 ms, no RTT sample yet: the whole attribute */
	setup(&o);
	s = h_qp_stats(p.qp[0]);
	post_write(0x33, 8 * PMTU);
	h_wait_tx(p.qp[0], 8, "8-packet WRITE");
	/* its ACK is lost: the timeout re-sends the last packet only */
	h_wait_tx(p.qp[0], 9, "the probe");
	cr_assert_eq(s->probes, 1);
	cr_assert_eq(s->timeouts, 1);
	/* the responder had it all: the duplicate is answered with the ACK */
	ack_to_requester(psn(H_PSN_A, 7), DROCE_AETH_ACK, 0);
	c = h_poll1(p.scq[0], POLL_MS, "WRITE");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	h_spin(60);
	cr_assert_eq(s->tx_pkts, 9, "went back: %" PRIu64 " frames", s->tx_pkts);
	cr_assert_eq(s->retries, 1, "a whole attribute waited (no RTT sample yet): one retry");
}

Test(rc_retx, retries_per_attribute_timeout_not_per_event)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	const struct droce_qp_stats *s;
	struct droce_cqe c;
	uint64_t t0, probes;

	o.timeout = 17; /* 537 ms */
	o.retry_cnt = 0;
	setup(&o);
	s = h_qp_stats(p.qp[0]);
	/* an RTT sample first: a WRITE answered at once */
	post_write(0x41, PMTU);
	h_wait_tx(p.qp[0], 1, "first WRITE");
	ack_to_requester(H_PSN_A, DROCE_AETH_ACK, 0);
	c = h_poll1(p.scq[0], POLL_MS, "first WRITE");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS);
	/* the engine takes the sample just after it writes the completion (and
	 * another thread may be driving it): wait for that step, bounded */
	t0 = tc_now_ms();
	while (s->srtt_ns == 0 && tc_now_ms() - t0 < 2000)
		droce_engines_progress();
	cr_assert_gt(s->srtt_ns, 0, "no RTT sample");
	/* the next one is answered late: adaptive timeouts fire meanwhile, and
	 * with retry_cnt 0 none of them may fail the QP.  Wait for two of them,
	 * at most 450 ms (under T = 537 ms: no whole attribute passes; a loaded
	 * machine's RTT sample can make the adaptive timer tens of ms: at load
	 * 15, 75 ms, so two timeouts with the back-off took 222 ms) */
	post_write(0x42, PMTU);
	h_wait_tx(p.qp[0], 2, "second WRITE");
	t0 = tc_now_ms();
	while (s->timeouts < 2 && tc_now_ms() - t0 < 450)
		h_spin(5);
	probes = s->timeouts;
	cr_assert_geq(probes, 2, "%" PRIu64 " timeouts in %" PRIu64 " ms (rto %" PRIu64 " ns)",
		      probes, tc_now_ms() - t0, s->rto_ns);
	cr_assert_eq(s->retries, 0);
	ack_to_requester(psn(H_PSN_A, 1), DROCE_AETH_ACK, 0);
	c = h_poll1(p.scq[0], POLL_MS, "second WRITE");
	cr_assert_eq(c.wr_id, 0x42);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u after %" PRIu64 " timeouts", c.status,
		     probes);
	/* nobody answers: RETRY_EXC after (retry_cnt + 1) = 1 attribute */
	t0 = tc_now_ms();
	post_write(0x43, PMTU);
	c = h_poll1(p.scq[0], POLL_MS, "unanswered WRITE");
	cr_assert_eq(c.wr_id, 0x43);
	cr_assert_eq(c.status, DROCE_WC_RETRY_EXC_ERR, "status %u", c.status);
	cr_assert_geq(tc_now_ms() - t0, 536, "failed after %" PRIu64 " ms", tc_now_ms() - t0);
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_ERR);
}

Test(rc_retx, retry_cnt_spent_once_per_attribute)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	const struct droce_qp_stats *s;
	struct droce_cqe c;
	uint64_t t0;

	o.timeout = 12; /* 16.8 ms */
	o.retry_cnt = 3;
	setup(&o);
	s = h_qp_stats(p.qp[0]);
	t0 = tc_now_ms();
	post_write(0x51, PMTU);
	c = h_poll1(p.scq[0], POLL_MS, "unanswered WRITE");
	cr_assert_eq(c.status, DROCE_WC_RETRY_EXC_ERR, "status %u", c.status);
	/* 4 attributes of 16.8 ms: the first send and 3 retries */
	cr_assert_geq(tc_now_ms() - t0, 67, "failed after %" PRIu64 " ms", tc_now_ms() - t0);
	cr_assert_eq(s->retries, 3);
}

/* A WRITE request injected into QP 1 as if from QP 0. */
static void
write_req(uint32_t n, enum droce_op op, bool ackreq, uint32_t len)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, op) };

	f.pkey = 0xffff;
	f.dqpn = p.qpn[1];
	f.psn = psn(H_PSN_A, n);
	f.ackreq = ackreq;
	f.reth.va = h_va(&rb, 0);
	f.reth.rkey = rb.mr.rkey;
	f.reth.len = len;
	h_inject_frame_dir(0, 1, &f, lb.p + n * PMTU, PMTU, DROCE_INJECT_RX);
}

Test(rc_retx, responder_naks_once_per_round)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	const struct droce_qp_stats *s;
	const uint32_t len = 6 * PMTU;

	o.timeout = 0;
	setup(&o);
	s = h_qp_stats(p.qp[1]);
	h_fill(lb.p, len, 5);
	memset(rb.p, 0, len);
	write_req(0, DROCE_OP_WRITE_FIRST, false, len);
	/* 1 lost: 2 and 3 arrive */
	write_req(2, DROCE_OP_WRITE_MIDDLE, false, len);
	write_req(3, DROCE_OP_WRITE_MIDDLE, false, len);
	h_spin(10);
	cr_assert_eq(s->seq_naks_tx, 1, "first round: %" PRIu64 " NAKs", s->seq_naks_tx);
	write_req(3, DROCE_OP_WRITE_MIDDLE, false, len); /* a copy of the last one */
	h_spin(10);
	cr_assert_eq(s->seq_naks_tx, 1, "a copy drew a NAK");
	/* the requester went back to 1, and 1 is lost again: 2 arrives */
	write_req(2, DROCE_OP_WRITE_MIDDLE, false, len);
	h_spin(10);
	cr_assert_eq(s->seq_naks_tx, 2, "second round: %" PRIu64 " NAKs", s->seq_naks_tx);
	write_req(4, DROCE_OP_WRITE_MIDDLE, false, len);
	h_spin(10);
	cr_assert_eq(s->seq_naks_tx, 2, "no AckReq, same round: no NAK");
	write_req(5, DROCE_OP_WRITE_LAST, true, len); /* AckReq: the NAK again */
	h_spin(10);
	cr_assert_eq(s->seq_naks_tx, 3, "AckReq past the gap: %" PRIu64 " NAKs", s->seq_naks_tx);
	for (uint32_t i = 1; i < 6; i++)
		write_req(i, i == 5 ? DROCE_OP_WRITE_LAST : DROCE_OP_WRITE_MIDDLE, i == 5, len);
	h_spin(20);
	cr_assert_eq(memcmp(rb.p, lb.p, len), 0, "WRITE bytes");
	cr_assert_eq(s->seq_naks_tx, 3);
}

/* A peer that keeps answering (responses past a lost one) spends no retry
 * while it does: retry_cnt 1 with a 16.8 ms attribute outlives 50 ms of
 * them, then the READ completes. */
Test(rc_retx, answering_peer_spends_no_retry)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	const struct droce_qp_stats *s;
	struct droce_wqe w;
	struct droce_cqe c;
	static uint8_t src[16 * PMTU];
	uint64_t until;

	o.timeout = 12;
	o.retry_cnt = 1;
	setup(&o);
	s = h_qp_stats(p.qp[0]);
	h_fill(src, sizeof(src), 78);
	w = h_wqe(0x61, DROCE_WR_RDMA_READ, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, sizeof(src));
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey;
	h_post_send(p.qp[0], &w);
	h_wait_tx(p.qp[0], 1, "READ request");
	read_resp(psn(H_PSN_A, 0), DROCE_OP_READ_RESP_FIRST, src, PMTU);
	/* until two timeouts went by (each 16.8 ms, backed off; a loaded
	 * machine stretches them: bounded at 2 s) */
	until = tc_now_ms() + 2000;
	while (tc_now_ms() < until && s->timeouts < 2) {
		/* response 1 is lost; the responder is busy with later ones */
		uint32_t i = 2 + (uint32_t)(tc_now_ms() % 10);

		read_resp(psn(H_PSN_A, i), DROCE_OP_READ_RESP_MIDDLE, src + i * PMTU, PMTU);
		h_spin(4);
	}
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_RTS, "failed after %" PRIu64 " retries",
		     s->retries);
	cr_assert_geq(s->timeouts, 2);
	for (uint32_t i = 1; i < 16; i++)
		read_resp(psn(H_PSN_A, i), i == 1 ? DROCE_OP_READ_RESP_FIRST :
					 i == 15 ? DROCE_OP_READ_RESP_LAST : DROCE_OP_READ_RESP_MIDDLE,
			  src + i * PMTU, PMTU);
	c = h_poll1(p.scq[0], POLL_MS, "READ");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	cr_assert_eq(memcmp(lb.p, src, sizeof(src)), 0, "READ bytes");
}

/* ---- READ responses kept past a hole, against a real responder ---- */

/*
 * QP 0 towards QP 1 (its requests arrive), QP 1 towards a QPN nobody has (its
 * responses are dropped): the test hands QP 0 the responses QP 1 sent, minus
 * the lost ones, and QP 1's frame count says what QP 0 asked for again.
 */
static void
setup_real_responder(void)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	struct h_cfg cfg = { .fallback_us = -1 };

	o.timeout = 0; /* no timer: only what arrives moves the requester */
	h_start(&cfg, false);
	h_buf_init(&lb, 1 << 20, ALL_ACCESS);
	h_buf_init(&rb, 1 << 20, ALL_ACCESS);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_connect(p.qp[0], 0, 1, p.qpn[1], H_PSN_A, H_PSN_B, &o);
	h_connect(p.qp[1], 1, 0, p.qpn[0] + GHOST, H_PSN_B, H_PSN_A, &o);
	h_fill(rb.p, 64 * PMTU, 91);
	memset(lb.p, 0, 64 * PMTU);
}

/* A READ of @npkts responses at offset @off (both sides). */
static void
post_read(uint64_t id, uint32_t off, uint32_t npkts)
{
	h_post_read(p.qp[0], id, &lb, &rb, off, npkts * PMTU);
}

/* Response @i (of @n, PSN H_PSN_A + @base + @i) of a READ whose data starts at @off. */
static void
read_resp_of(uint32_t base, uint32_t off, uint32_t i, uint32_t n)
{
	read_resp(psn(H_PSN_A, base + i), i == 0 ? DROCE_OP_READ_RESP_FIRST :
					   i == n - 1 ? DROCE_OP_READ_RESP_LAST :
							DROCE_OP_READ_RESP_MIDDLE,
		  rb.p + off + i * PMTU, PMTU);
}

static void
expect_read_done(uint64_t id, uint32_t off, uint32_t len)
{
	struct droce_cqe c = h_poll1(p.scq[0], POLL_MS, "READ");

	cr_assert_eq(c.wr_id, id, "completed %" PRIu64 ", want %" PRIu64, c.wr_id, id);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	cr_assert_eq(memcmp(lb.p + off, rb.p + off, len), 0, "READ %" PRIu64 " bytes", id);
}

Test(rc_retx, read_middle_response_lost_only_it_asked_again)
{
	const struct droce_qp_stats *rq, *rs;

	setup_real_responder();
	rq = h_qp_stats(p.qp[0]);
	rs = h_qp_stats(p.qp[1]);
	post_read(0x71, 0, 16);
	h_wait_tx(p.qp[1], 16, "the responder's 16 responses");
	for (uint32_t i = 0; i < 16; i++)
		if (i != 7)
			read_resp_of(0, 0, i, 16); /* one batch: the engine sees them in one pass */
	h_spin(20);
	cr_assert_eq(rq->tx_pkts, 2, "%" PRIu64 " READ requests, want 2", rq->tx_pkts);
	cr_assert_eq(rq->read_reasks, 1);
	cr_assert_eq(rq->read_ooo, 8, "responses 8..15 kept: %" PRIu64, rq->read_ooo);
	cr_assert_eq(rs->dup_reads, 1);
	cr_assert_eq(rs->tx_pkts, 17, "the responder sent %" PRIu64 " responses again, want 1",
		     rs->tx_pkts - 16);
	h_expect_empty(p.scq[0], 0, "a response is missing");
	read_resp(psn(H_PSN_A, 7), DROCE_OP_READ_RESP_ONLY, rb.p + 7 * PMTU, PMTU);
	expect_read_done(0x71, 0, 16 * PMTU);
	cr_assert_eq(rq->timeouts, 0);
	cr_assert_eq(rq->retransmits, 1);
}

Test(rc_retx, read_two_holes_two_ranges_asked)
{
	const struct droce_qp_stats *rq, *rs;

	setup_real_responder();
	rq = h_qp_stats(p.qp[0]);
	rs = h_qp_stats(p.qp[1]);
	post_read(0x72, 0, 16);
	h_wait_tx(p.qp[1], 16, "the responder's 16 responses");
	for (uint32_t i = 0; i < 16; i++)
		if (i != 5 && i != 9 && i != 10)
			read_resp_of(0, 0, i, 16);
	h_spin(20);
	/* a READ for 5, one for 9..10 */
	cr_assert_eq(rq->tx_pkts, 3, "%" PRIu64 " READ requests, want 3", rq->tx_pkts);
	cr_assert_eq(rq->read_reasks, 2);
	cr_assert_eq(rs->dup_reads, 2);
	cr_assert_eq(rs->tx_pkts, 16 + 3, "the responder sent %" PRIu64 " responses again, want 3",
		     rs->tx_pkts - 16);
	/* their answers: ONLY at 5; FIRST, LAST at 9, 10 */
	read_resp(psn(H_PSN_A, 9), DROCE_OP_READ_RESP_FIRST, rb.p + 9 * PMTU, PMTU);
	read_resp(psn(H_PSN_A, 10), DROCE_OP_READ_RESP_LAST, rb.p + 10 * PMTU, PMTU);
	h_spin(10);
	h_expect_empty(p.scq[0], 0, "response 5 is missing");
	read_resp(psn(H_PSN_A, 5), DROCE_OP_READ_RESP_ONLY, rb.p + 5 * PMTU, PMTU);
	expect_read_done(0x72, 0, 16 * PMTU);
	cr_assert_eq(rq->timeouts, 0);
}

Test(rc_retx, read_hole_in_first_read_second_kept_order_kept)
{
	const struct droce_qp_stats *rq, *rs;

	setup_real_responder();
	rq = h_qp_stats(p.qp[0]);
	rs = h_qp_stats(p.qp[1]);
	post_read(0x73, 0, 16);
	post_read(0x74, 16 * PMTU, 16);
	h_wait_tx(p.qp[1], 32, "the responder's 32 responses");
	cr_assert_eq(rq->tx_pkts, 2);
	for (uint32_t i = 0; i < 16; i++)
		if (i != 3)
			read_resp_of(0, 0, i, 16);
	for (uint32_t i = 0; i < 16; i++)
		read_resp_of(16, 16 * PMTU, i, 16);
	h_spin(20);
	/* the second READ is all there: not asked again; the first only for 3 */
	cr_assert_eq(rq->tx_pkts, 3, "%" PRIu64 " READ requests, want 3", rq->tx_pkts);
	cr_assert_eq(rs->tx_pkts, 33, "the responder sent %" PRIu64 " responses again, want 1",
		     rs->tx_pkts - 32);
	h_expect_empty(p.scq[0], 0, "the first READ misses a response, the second waits for it");
	read_resp(psn(H_PSN_A, 3), DROCE_OP_READ_RESP_ONLY, rb.p + 3 * PMTU, PMTU);
	expect_read_done(0x73, 0, 16 * PMTU);
	expect_read_done(0x74, 16 * PMTU, 16 * PMTU);
	cr_assert_eq(rq->timeouts, 0);
}
