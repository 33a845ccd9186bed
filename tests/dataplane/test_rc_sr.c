/* SPDX-License-Identifier: BSD-3-Clause
 * RC selective repeat between droce ends (dataplane/rc_sr.c), with exact
 * loss patterns: the test plays one end by hand (droce_dp_inject), and the
 * hint (BTH Resv6a) on its frames says whether it is a droce with
 * `selective_repeat = 1` or any other peer.  Both QPs run with the key on.
 *  - responder: a WRITE whose 2nd packet is lost: the later ones are kept,
 *    one sequence NAK, and when the lost one comes the message is placed
 *    whole and ACKed; the same from a peer without the hint: nothing kept,
 *    plain go-back-N, and none of its answers carries the hint;
 *  - requester: a sequence NAK in the middle of a 64-packet WRITE re-sends
 *    exactly that packet (no go-back, no loss-window cut), the ACK then
 *    completes it; without the hint on the NAK: go-back-N as before;
 *  - READ against a real responder: a response lost in the first of two
 *    READs is asked again alone, at once, and the responder (which saw the
 *    hint) answers it without dropping what it had queued.
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
#define GHOST (1u << 12) /* added to a QPN: nobody */
#define HINT 0x01        /* DROCE_RC_SR_HINT */

TestSuite(rc_sr, .fini = h_stop, .timeout = 120);

static struct h_pair p;
static struct h_buf lb, rb;

static uint32_t
psn(uint32_t base, uint32_t n)
{
	return (base + n) & DROCE_PSN_MASK;
}

/* Both QPs with selective repeat configured; QP @ghost_side talks to nobody. */
static void
setup(unsigned int ghost_side)
{
	struct h_conn_opts o = h_conn_defaults(PMTU);
	struct h_cfg cfg = { .fallback_us = -1, .selective_repeat = true };

	o.timeout = 0; /* no timer: only what arrives moves the QPs */
	h_start(&cfg, false);
	h_buf_init(&lb, 1 << 20, ALL_ACCESS);
	h_buf_init(&rb, 1 << 20, ALL_ACCESS);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_connect(p.qp[0], 0, 1, p.qpn[1] + (ghost_side == 0 ? GHOST : 0), H_PSN_A, H_PSN_B, &o);
	h_connect(p.qp[1], 1, 0, p.qpn[0] + (ghost_side == 1 ? GHOST : 0), H_PSN_B, H_PSN_A, &o);
}

/* WRITE packet @n of a @len-byte message, injected into QP 1 as if from QP 0. */
static void
write_req(uint32_t n, enum droce_op op, bool ackreq, uint32_t len, uint8_t hint)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, op) };

	f.pkey = 0xffff;
	f.dqpn = p.qpn[1];
	f.psn = psn(H_PSN_A, n);
	f.ackreq = ackreq;
	f.resv6a = hint;
	f.reth.va = h_va(&rb, 0);
	f.reth.rkey = rb.mr.rkey;
	f.reth.len = len;
	h_inject_frame_dir(0, 1, &f, lb.p + n * PMTU, PMTU, DROCE_INJECT_RX);
}

static enum droce_op
write_op(uint32_t i, uint32_t n)
{
	return i == 0 ? DROCE_OP_WRITE_FIRST : i == n - 1 ? DROCE_OP_WRITE_LAST : DROCE_OP_WRITE_MIDDLE;
}

/* An ACKNOWLEDGE to QP 0 as if from QP 1. */
static void
ack_to_requester(uint32_t at, enum droce_aeth_kind kind, uint8_t code, uint8_t hint)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_ACK) };

	f.pkey = 0xffff;
	f.dqpn = p.qpn[0];
	f.psn = at;
	f.resv6a = hint;
	f.aeth.syndrome = droce_aeth_make_syndrome(kind, kind == DROCE_AETH_ACK ? DROCE_AETH_CREDIT_INVALID
										 : code);
	h_inject_frame_dir(1, 0, &f, NULL, 0, DROCE_INJECT_RX);
}

Test(rc_sr, responder_keeps_packets_past_a_hole)
{
	const struct droce_qp_stats *s;
	const uint32_t n = 6, len = n * PMTU;

	setup(0); /* QP 1's answers reach QP 0, which sends nothing */
	s = h_qp_stats(p.qp[1]);
	h_fill(lb.p, len, 21);
	memset(rb.p, 0, len);
	/* packet 1 lost; 2..5 arrive (AckReq on the last) */
	for (uint32_t i = 0; i < n; i++)
		if (i != 1)
			write_req(i, write_op(i, n), i == n - 1, len, HINT);
	h_spin(10);
	cr_assert_eq(s->sr_peer, 1, "the requests' hint not seen");
	cr_assert_eq(s->sr_held, 4, "%" PRIu64 " requests kept, want 4", s->sr_held);
	cr_assert_eq(s->seq_naks_tx, 2, "%" PRIu64 " NAKs: the gap, and the AckReq past it",
		     s->seq_naks_tx);
	cr_assert_eq(memcmp(rb.p + 2 * PMTU, lb.p + 2 * PMTU, PMTU) != 0, true,
		     "kept packets are not executed before the hole fills");
	/* the requester re-sends packet 1 alone (AckReq) */
	write_req(1, DROCE_OP_WRITE_MIDDLE, true, len, HINT);
	h_spin(10);
	cr_assert_eq(s->sr_released, 4, "%" PRIu64 " released", s->sr_released);
	cr_assert_eq(memcmp(rb.p, lb.p, len), 0, "WRITE bytes");
	cr_assert_eq(s->seq_naks_tx, 2, "no NAK once whole");
	cr_assert_eq(s->tx_pkts, 3, "two NAKs and the ACK: %" PRIu64 " frames", s->tx_pkts);
	cr_assert_eq(h_qp_stats(p.qp[0])->sr_peer, 1, "the responder's answers carry the hint");
}

Test(rc_sr, responder_plain_go_back_n_for_a_peer_without_the_hint)
{
	const struct droce_qp_stats *s;
	const uint32_t n = 6, len = n * PMTU;

	setup(0);
	s = h_qp_stats(p.qp[1]);
	h_fill(lb.p, len, 22);
	memset(rb.p, 0, len);
	for (uint32_t i = 0; i < n; i++)
		if (i != 1)
			write_req(i, write_op(i, n), i == n - 1, len, 0);
	h_spin(10);
	cr_assert_eq(s->sr_peer, 0);
	cr_assert_eq(s->sr_held, 0, "kept %" PRIu64 " requests of a go-back-N peer", s->sr_held);
	cr_assert_eq(s->seq_naks_tx, 2);
	/* go-back-N: 1..5 again */
	for (uint32_t i = 1; i < n; i++)
		write_req(i, write_op(i, n), i == n - 1, len, 0);
	h_spin(10);
	cr_assert_eq(memcmp(rb.p, lb.p, len), 0, "WRITE bytes");
	cr_assert_eq(s->tx_pkts, 3, "two NAKs and the ACK: %" PRIu64 " frames", s->tx_pkts);
	/* QP 0 (selective repeat on) saw QP 1's NAKs and ACK: none had the hint */
	cr_assert_eq(h_qp_stats(p.qp[0])->sr_peer, 0, "an answer to a plain peer carried the hint");
}

static void
post_write(uint64_t id, uint32_t len)
{
	h_post_write(p.qp[0], id, &lb, &rb, 0, len);
}

Test(rc_sr, requester_resends_only_the_named_packet)
{
	const struct droce_qp_stats *s;
	struct droce_cqe c;

	setup(0);
	s = h_qp_stats(p.qp[0]);
	post_write(0x81, 64 * PMTU);
	h_wait_tx(p.qp[0], 64, "64 KiB WRITE");
	/* the responder (a droce: hint) got 0..19 and kept 21..63 */
	ack_to_requester(psn(H_PSN_A, 15), DROCE_AETH_ACK, 0, HINT);
	ack_to_requester(psn(H_PSN_A, 20), DROCE_AETH_NAK, DROCE_NAK_PSN_SEQ_ERR, HINT);
	h_spin(20);
	cr_assert_eq(s->sr_peer, 1);
	cr_assert_eq(s->tx_pkts, 65, "re-sent %" PRIu64 " frames, want 1", s->tx_pkts - 64);
	cr_assert_eq(s->sr_resent, 1);
	cr_assert_eq(s->retransmits, 0, "went back");
	h_expect_empty(p.scq[0], 0, "not acknowledged yet");
	ack_to_requester(psn(H_PSN_A, 63), DROCE_AETH_ACK, 0, HINT);
	c = h_poll1(p.scq[0], POLL_MS, "WRITE");
	cr_assert_eq(c.wr_id, 0x81);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	cr_assert_eq(s->tx_pkts, 65);
}

Test(rc_sr, requester_goes_back_for_a_peer_without_the_hint)
{
	const struct droce_qp_stats *s;
	struct droce_cqe c;

	setup(0);
	s = h_qp_stats(p.qp[0]);
	post_write(0x82, 64 * PMTU);
	h_wait_tx(p.qp[0], 64, "64 KiB WRITE");
	ack_to_requester(psn(H_PSN_A, 15), DROCE_AETH_ACK, 0, 0);
	ack_to_requester(psn(H_PSN_A, 20), DROCE_AETH_NAK, DROCE_NAK_PSN_SEQ_ERR, 0);
	h_wait_tx(p.qp[0], 64 + 44, "the go-back");
	h_spin(20);
	cr_assert_eq(s->sr_peer, 0);
	cr_assert_eq(s->tx_pkts, 64 + 44, "re-sent %" PRIu64 " frames, want 20..63", s->tx_pkts - 64);
	cr_assert_eq(s->sr_resent, 0);
	cr_assert_eq(s->retransmits, 1);
	ack_to_requester(psn(H_PSN_A, 63), DROCE_AETH_ACK, 0, 0);
	c = h_poll1(p.scq[0], POLL_MS, "WRITE");
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
}

/* READ response @i of a READ whose responses start at PSN offset @base. */
static void
read_resp(uint32_t base, uint32_t i, enum droce_op op, uint32_t off)
{
	struct droce_pkt_fields f = { .opcode = DROCE_OPC(DROCE_TRANSPORT_RC, op) };

	f.pkey = 0xffff;
	f.dqpn = p.qpn[0];
	f.psn = psn(H_PSN_A, base + i);
	f.resv6a = HINT;
	f.aeth.syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	h_inject_frame_dir(1, 0, &f, rb.p + off + i * PMTU, PMTU, DROCE_INJECT_RX);
}

/* A READ of @npkts responses at offset @off (both sides). */
static void
post_read(uint64_t id, uint32_t off, uint32_t npkts)
{
	h_post_read(p.qp[0], id, &lb, &rb, off, npkts * PMTU);
}

Test(rc_sr, read_hole_asked_alone_responder_keeps_its_queue)
{
	const struct droce_qp_stats *rq, *rs;
	struct droce_cqe c;

	setup(1); /* QP 1 answers for real, to nobody; the test hands QP 0 the answers */
	rq = h_qp_stats(p.qp[0]);
	rs = h_qp_stats(p.qp[1]);
	h_fill(rb.p, 32 * PMTU, 93);
	memset(lb.p, 0, 32 * PMTU);
	post_read(0x91, 0, 16);
	post_read(0x92, 16 * PMTU, 16);
	h_wait_tx(p.qp[1], 32, "the responder's 32 responses");
	cr_assert_eq(rs->sr_peer, 1, "the READ requests' hint not seen");
	for (uint32_t i = 0; i < 32; i++)
		if (i != 3)
			read_resp(0, i, i % 16 == 0 ? DROCE_OP_READ_RESP_FIRST :
					i % 16 == 15 ? DROCE_OP_READ_RESP_LAST : DROCE_OP_READ_RESP_MIDDLE,
				  0);
	h_spin(20);
	cr_assert_eq(rq->sr_peer, 1);
	cr_assert_eq(rq->tx_pkts, 3, "%" PRIu64 " READ requests, want 3", rq->tx_pkts);
	cr_assert_eq(rq->retransmits, 0, "went back");
	cr_assert_eq(rs->dup_reads, 1);
	cr_assert_eq(rs->resp_cut, 0, "the responder cut its queue");
	cr_assert_eq(rs->tx_pkts, 33, "the responder sent %" PRIu64 " responses again, want 1",
		     rs->tx_pkts - 32);
	h_expect_empty(p.scq[0], 0, "a response is missing");
	read_resp(0, 3, DROCE_OP_READ_RESP_ONLY, 0);
	c = h_poll1(p.scq[0], POLL_MS, "first READ");
	cr_assert_eq(c.wr_id, 0x91);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	c = h_poll1(p.scq[0], POLL_MS, "second READ");
	cr_assert_eq(c.wr_id, 0x92);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "status %u", c.status);
	cr_assert_eq(memcmp(lb.p, rb.p, 32 * PMTU), 0, "READ bytes");
}
