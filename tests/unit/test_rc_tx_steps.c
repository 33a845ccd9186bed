/* SPDX-License-Identifier: BSD-3-Clause
 * The steps that build packets, driven singly without the EAL: the
 * requester's SEND_PKT and the responder transmit's ACK, NAK, ATOMIC_ACK and
 * READ_RESP, on a QP in plain memory whose port has an mbuf pool in plain
 * memory (plain_qp.c).  Each frame the step queued on the engine's transmit
 * buffer is read back: it parses, its opcode, PSN, destination QP, AckReq,
 * RETH / AETH / AtomicAckETH fields and payload bytes are what the step was
 * given, and its ICRC is the one the independent flat droce_icrc_flat()
 * computes over it.  Zero-copy frames (zcopy.c: three segments, the payload
 * in the registered memory) are read through their segments.
 * Over 800 lines because the requester's steps, the responder's receive
 * short ways (WRITE ONLY, READ request, atomics) and its transmit steps
 * share this file's frame read-back and BTH checks on one plain QP.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <rte_mbuf.h>

#include "dataplane/icrc.h"
#include "dataplane/rc_internal.h"
#include "pmd_glue/port_struct.h"
#include "plain_qp.h"

#define RC(op) DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_##op)

static uint8_t frame[4096];

/* Frame @i, read back: parsed (lengths, IPv4 checksum, ICRC) into @p, and
 * its ICRC checked once more against droce_icrc_flat. */
static const struct droce_bth *
frame_at(unsigned int i, struct droce_pkt *p, unsigned int *nsegs)
{
	uint32_t len = tx_frame(i, frame, sizeof(frame), nsegs);
	const uint8_t *l3;

	cr_assert_eq(droce_parse_frame(frame, len, p), DROCE_DROP_NONE, "frame %u parses", i);
	l3 = frame + p->l3_off;
	cr_assert_eq(droce_icrc_load(frame + p->frame_len - DROCE_ICRC_LEN),
		     droce_icrc_flat(l3, (size_t)(frame + p->frame_len - DROCE_ICRC_LEN - l3), p->ipv6),
		     "frame %u: the ICRC", i);
	return droce_pkt_bth(p, frame);
}

/* The BTH fields every frame here shares. */
static void
check_bth(const struct droce_bth *b, uint8_t opcode, uint32_t psn, uint32_t pad)
{
	cr_assert_eq(droce_bth_opcode(b), opcode, "opcode 0x%02x, want 0x%02x", droce_bth_opcode(b),
		     opcode);
	cr_assert_eq(droce_bth_psn(b), psn);
	cr_assert_eq(droce_bth_qpn(b), 0x123456);
	cr_assert_eq(droce_bth_pad(b), pad);
	cr_assert_eq(droce_bth_pkey(b), 0xffff);
}

static void
fill_local(void)
{
	for (unsigned int i = 0; i < sizeof(local); i++)
		local[i] = (uint8_t)(i * 7 + 3);
}

/* ---- requester ---- */

TestSuite(rc_tx_req, .init = tx_setup, .fini = tx_teardown);

Test(rc_tx_req, send_pkt_write_inline)
{
	struct droce_rc_req_ctx c = { .budget = 4 };
	struct droce_wqe *w = post(DROCE_WR_RDMA_WRITE, 8);
	const struct droce_bth *b;
	const struct droce_reth *r;
	struct droce_pkt p;
	unsigned int nsegs;

	memcpy(w->inline_data, "droce-8b", 8);
	w->remote_addr = 0xabc000;
	w->rkey = 0x4242;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_CHECK_LOCAL);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_SEND_PKT);
	cr_assert_eq(tx_count(), 0);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_SEND_PKT, &c), REQ_NOTE_SENT);
	cr_assert(c.last);
	cr_assert_eq(tx_count(), 1);
	cr_assert_eq(qp->stats.tx_pkts, 1);

	b = frame_at(0, &p, &nsegs);
	cr_assert_eq(nsegs, 1);
	check_bth(b, RC(WRITE_ONLY), 100, 0);
	cr_assert(droce_bth_ackreq(b), "the message's last packet asks for an ACK");
	r = droce_pkt_hdr(&p, frame, DROCE_HDR_RETH);
	cr_assert_eq(droce_reth_va(r), 0xabc000);
	cr_assert_eq(droce_reth_rkey(r), 0x4242);
	cr_assert_eq(droce_reth_len(r), 8);
	cr_assert_eq(p.payload_len, 8);
	cr_assert_arr_eq(p.payload, "droce-8b", 8);
}

Test(rc_tx_req, send_pkt_segments_a_send)
{
	struct droce_rc_req_ctx c = { .budget = 4 };
	struct droce_wqe *w = post(DROCE_WR_SEND, 1501);
	const struct droce_bth *b;
	struct droce_pkt p;
	unsigned int nsegs;

	local_sge(w, 1501);
	fill_local();
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_CHECK_LOCAL);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_SEND_PKT);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_SEND_PKT, &c), REQ_NOTE_SENT);
	cr_assert_not(c.last);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NOTE_SENT, &c), REQ_NEXT_WQE);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_WINDOW, &c), REQ_SEND_PKT, "started already");
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_SEND_PKT, &c), REQ_NOTE_SENT);
	cr_assert(c.last);
	cr_assert_eq(tx_count(), 2);

	b = frame_at(0, &p, &nsegs);
	check_bth(b, RC(SEND_FIRST), 100, 0);
	cr_assert_eq(p.payload_len, 1024);
	cr_assert_arr_eq(p.payload, local, 1024);
	b = frame_at(1, &p, &nsegs);
	check_bth(b, RC(SEND_LAST), 101, 3); /* 477 bytes: three of pad, under the ICRC */
	cr_assert(droce_bth_ackreq(b));
	cr_assert_eq(p.payload_len, 477);
	cr_assert_arr_eq(p.payload, local + 1024, 477);
}

Test(rc_tx_req, send_pkt_without_an_mbuf_waits)
{
	struct droce_rc_req_ctx c = { .budget = 4 };
	struct rte_mbuf *all[32];
	unsigned int n = 0;

	post(DROCE_WR_RDMA_WRITE, 8);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_SEND_PKT);
	while (n < 32 && (all[n] = rte_pktmbuf_alloc(qp->port->mp)) != NULL)
		n++;
	cr_assert_eq(tx_pool_free(), 0);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_SEND_PKT, &c), REQ_DONE);
	cr_assert_eq(eng->stats.alloc_fail, 1);
	cr_assert_eq(tx_count(), 0);
	cr_assert_eq(droce_qp_swqe(qp, 0)->sent_pkts, 0, "nothing counted as sent");
	for (unsigned int i = 0; i < n; i++)
		rte_pktmbuf_free(all[i]);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_SEND_PKT, &c), REQ_NOTE_SENT);
	cr_assert_eq(tx_count(), 1);
}

Test(rc_tx_req, send_pkt_zero_copy_write)
{
	struct droce_rc_req_ctx c = { .budget = 4 };
	struct droce_wqe *w = post(DROCE_WR_RDMA_WRITE, 1024);
	const struct droce_bth *b;
	struct droce_pkt p;
	unsigned int nsegs;

	qp->port->zc_min = 1024;
	local_sge(w, 1024);
	w->sge[0].addr += 100; /* a payload not at the MR's start */
	fill_local();
	w->remote_addr = 0x5000;
	w->rkey = 0x77;
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_NEXT_WQE, &c), REQ_WINDOW);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_CHECK_LOCAL, &c), REQ_SEND_PKT);
	cr_assert_eq(droce_rc_req_step_lc(qp, REQ_SEND_PKT, &c), REQ_NOTE_SENT);
	cr_assert_eq(eng->stats.zc_tx, 1);
	cr_assert_eq(local_mr.zc_refs, 1, "the frame holds the MR");
	b = frame_at(0, &p, &nsegs);
	cr_assert_eq(nsegs, 3, "headers, the registered bytes, pad and ICRC");
	cr_assert_eq(rte_pktmbuf_mtod(eng->txq[0][0]->next, const uint8_t *), local + 100,
		     "the payload segment points into the MR");
	check_bth(b, RC(WRITE_ONLY), 100, 0);
	cr_assert_eq(droce_reth_len(droce_pkt_hdr(&p, frame, DROCE_HDR_RETH)), 1024);
	cr_assert_arr_eq(p.payload, local + 100, 1024);
}

/*
 * The requester's frames byte for byte: every packet of a @length-byte WQE
 * @wr_op (flags @flags) as the transmit turn queues it equals what the
 * field-by-field reference builder (droce_build_frame: template, BTH,
 * extended headers, payload, pad, ICRC) makes of the fields the packet is to
 * carry, from a copy of the QP's template taken before (the same IPv4 ids).
 */
static void
check_request_bytes(uint8_t wr_op, uint32_t length, uint8_t flags)
{
	static uint8_t want[4096];
	struct droce_wqe *w = post(wr_op, length);
	struct droce_hdr_tmpl ref = qp->tmpl;
	uint32_t pmtu = qp->attr.pmtu, n = length ? (length + pmtu - 1) / pmtu : 1;
	bool wr = wr_op == DROCE_WR_RDMA_WRITE || wr_op == DROCE_WR_RDMA_WRITE_WITH_IMM;
	bool imm = wr_op == DROCE_WR_SEND_WITH_IMM || wr_op == DROCE_WR_RDMA_WRITE_WITH_IMM;
	bool inv = wr_op == DROCE_WR_SEND_WITH_INV;

	local_sge(w, length);
	w->flags |= flags;
	w->remote_addr = 0x1122334455667788ull;
	w->rkey = 0xa1b2c3d4;
	w->imm = rte_cpu_to_be_32(0xfeedf00d);
	w->invalidate_rkey = 0x0badcafe;
	fill_local();
	cr_assert_eq(droce_rc_req_tx_lc(qp, 16), n, "%u packets", n);
	cr_assert_eq(tx_count(), n);
	for (uint32_t i = 0; i < n; i++) {
		bool first = i == 0, last = i == n - 1;
		uint32_t plen = last ? length - i * pmtu : pmtu, len;
		struct droce_pkt_fields f;
		enum droce_op op;
		unsigned int nsegs;
		size_t wlen;

		if (wr)
			op = first && last ? (imm ? DROCE_OP_WRITE_ONLY_IMM : DROCE_OP_WRITE_ONLY)
			     : first       ? DROCE_OP_WRITE_FIRST
			     : last        ? (imm ? DROCE_OP_WRITE_LAST_IMM : DROCE_OP_WRITE_LAST)
					   : DROCE_OP_WRITE_MIDDLE;
		else
			op = first && last ? (imm ? DROCE_OP_SEND_ONLY_IMM
					      : inv ? DROCE_OP_SEND_ONLY_INV : DROCE_OP_SEND_ONLY)
			     : first ? DROCE_OP_SEND_FIRST
			     : last  ? (imm ? DROCE_OP_SEND_LAST_IMM
					    : inv ? DROCE_OP_SEND_LAST_INV : DROCE_OP_SEND_LAST)
				     : DROCE_OP_SEND_MIDDLE;
		memset(&f, 0, sizeof(f));
		f.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, op);
		f.pkey = 0xffff;
		f.dqpn = 0x123456;
		f.psn = 100 + i;
		f.ackreq = last;
		f.se = last && (flags & DROCE_WQE_SOLICITED);
		f.reth.va = w->remote_addr;
		f.reth.rkey = w->rkey;
		f.reth.len = length;
		f.imm = w->imm;
		f.ieth_rkey = w->invalidate_rkey;
		wlen = droce_build_frame(&ref, want, sizeof(want), &f, local + i * pmtu, plen);
		cr_assert_gt(wlen, 0);
		len = tx_frame(i, frame, sizeof(frame), &nsegs);
		cr_assert_eq(len, wlen, "packet %u: %u bytes, want %zu", i, len, wlen);
		cr_assert_arr_eq(frame, want, wlen, "packet %u (opcode 0x%02x): the reference's bytes", i,
				 f.opcode);
	}
}

Test(rc_tx_req, send_bytes_as_the_reference)
{
	check_request_bytes(DROCE_WR_SEND, 2501, DROCE_WQE_SOLICITED); /* first, middle, last + pad */
}

Test(rc_tx_req, send_imm_bytes_as_the_reference)
{
	check_request_bytes(DROCE_WR_SEND_WITH_IMM, 1500, 0);
}

Test(rc_tx_req, send_inv_bytes_as_the_reference)
{
	check_request_bytes(DROCE_WR_SEND_WITH_INV, 5, DROCE_WQE_SOLICITED);
}

Test(rc_tx_req, write_bytes_as_the_reference)
{
	check_request_bytes(DROCE_WR_RDMA_WRITE, 2049, 0);
}

Test(rc_tx_req, write_imm_bytes_as_the_reference)
{
	check_request_bytes(DROCE_WR_RDMA_WRITE_WITH_IMM, 3, 0);
}

Test(rc_tx_req, empty_write_bytes_as_the_reference)
{
	check_request_bytes(DROCE_WR_RDMA_WRITE, 0, 0);
}

/*
 * The burst (rc_req.c): a run of one-packet SEND / WRITE WQEs in one turn,
 * a READ between them taken by the state machine, the burst again after
 * it.  Every packet an ONLY opcode with AckReq and consecutive PSNs, the
 * payloads from the SGEs, each WQE's progress as the state machine leaves
 * it, and the QP's send state (sq_cur, psn_next, psn_max, the timer armed).
 */
Test(rc_tx_req, burst_of_one_packet_wqes_around_a_read)
{
	static const uint8_t ops[] = { DROCE_WR_RDMA_WRITE, DROCE_WR_SEND_WITH_IMM,
				       DROCE_WR_RDMA_WRITE_WITH_IMM, DROCE_WR_RDMA_READ,
				       DROCE_WR_SEND, DROCE_WR_RDMA_WRITE };
	static const uint8_t want[] = { RC(WRITE_ONLY), RC(SEND_ONLY_IMM), RC(WRITE_ONLY_IMM),
					RC(READ_REQ), RC(SEND_ONLY), RC(WRITE_ONLY) };
	struct droce_pkt p;
	unsigned int nsegs;

	qp->attr.timeout = 14;
	fill_local();
	for (unsigned int i = 0; i < RTE_DIM(ops); i++) {
		struct droce_wqe *w = post(ops[i], 16 + i);

		local_sge(w, 16 + i);
		w->sge[0].addr += i * 64;
		w->remote_addr = 0x7000 + i;
		w->rkey = 0x99;
	}
	cr_assert_eq(droce_rc_req_tx_lc(qp, 16), RTE_DIM(ops));
	cr_assert_eq(tx_count(), RTE_DIM(ops));
	for (unsigned int i = 0; i < RTE_DIM(ops); i++) {
		const struct droce_bth *b = frame_at(i, &p, &nsegs);
		const struct droce_swqe *s = droce_qp_swqe(qp, i);

		check_bth(b, want[i], 100 + i, ops[i] == DROCE_WR_RDMA_READ ? 0 : (-(16 + i)) & 3u);
		cr_assert(droce_bth_ackreq(b), "WQE %u asks for an ACK", i);
		if (p.info->hdr_mask & DROCE_HDRM(RETH)) { /* WRITEs and the READ */
			const struct droce_reth *r = droce_pkt_hdr(&p, frame, DROCE_HDR_RETH);

			cr_assert_eq(droce_reth_va(r), 0x7000 + i);
			cr_assert_eq(droce_reth_rkey(r), 0x99);
			cr_assert_eq(droce_reth_len(r), 16 + i);
		}
		if (ops[i] != DROCE_WR_RDMA_READ) {
			cr_assert_eq(p.payload_len, 16 + i);
			cr_assert_arr_eq(p.payload, local + i * 64, 16 + i, "WQE %u's bytes", i);
		}
		cr_assert(s->started);
		cr_assert_eq(s->first_psn, 100 + i);
		cr_assert_eq(s->npkts, 1);
		cr_assert_eq(s->sent_pkts, 1);
		cr_assert_eq(s->err, 0);
	}
	cr_assert_eq(qp->sq_cur, RTE_DIM(ops));
	cr_assert_eq(qp->psn_next, 100 + RTE_DIM(ops));
	cr_assert_eq(qp->psn_max, 100 + RTE_DIM(ops));
	cr_assert_eq(qp->rd_atomic_out, 1, "the READ counted");
	cr_assert_neq(qp->rto_deadline, 0, "the retransmission timer runs");
	cr_assert_not(qp->req_blocked);
}

/* The burst stops where the window does: the QP waits off the active list. */
Test(rc_tx_req, burst_stops_at_the_window)
{
	for (unsigned int i = 0; i < 5; i++)
		post(DROCE_WR_RDMA_WRITE, 8);
	qp->psn_una = droce_psn_add(100, 3 - DROCE_RC_TX_WINDOW); /* room for 3 PSNs */
	cr_assert_eq(droce_rc_req_tx_lc(qp, 16), 3);
	cr_assert_eq(tx_count(), 3);
	cr_assert_eq(qp->sq_cur, 3);
	cr_assert_eq(qp->psn_next, 103);
	cr_assert(qp->req_blocked, "window full");
	cr_assert_not(droce_qp_swqe(qp, 3)->started);
}

/* A WQE whose lkey fails stops the burst; the state machine fails it in
 * order, after the one before it (sent) completes. */
Test(rc_tx_req, burst_leaves_a_bad_lkey_to_the_state_machine)
{
	struct droce_wqe *w0 = post(DROCE_WR_RDMA_WRITE, 8), *w1 = post(DROCE_WR_RDMA_WRITE, 8);

	local_sge(w0, 8);
	local_sge(w1, 8);
	w1->sge[0].lkey ^= 0x100;
	post(DROCE_WR_RDMA_WRITE, 8);
	cr_assert_eq(droce_rc_req_tx_lc(qp, 16), 1);
	cr_assert_eq(tx_count(), 1);
	cr_assert_eq(droce_qp_swqe(qp, 1)->err, DROCE_ERR_LOC_PROT);
	cr_assert_eq(qp->sq_cur, 1, "nothing past it goes");
	cr_assert_eq(qp->psn_next, 101);
}

/* Frame @i equals what the reference builder makes of @f (from template
 * copy @ref, its IPv4 id moving on as the QP's did). */
static void
check_reference(unsigned int i, struct droce_hdr_tmpl *ref, struct droce_pkt_fields *f)
{
	static uint8_t want[512];
	unsigned int nsegs;
	size_t wlen;
	uint32_t len;

	f->pkey = 0xffff;
	f->dqpn = 0x123456;
	wlen = droce_build_frame(ref, want, sizeof(want), f, NULL, 0);
	cr_assert_gt(wlen, 0);
	len = tx_frame(i, frame, sizeof(frame), &nsegs);
	cr_assert_eq(len, wlen, "frame %u: %u bytes, want %zu", i, len, wlen);
	cr_assert_arr_eq(frame, want, wlen, "frame %u (opcode 0x%02x): the reference's bytes", i,
			 f->opcode);
}

/* The headers put straight (droce_xport_pkt_put_lc) byte for byte: both
 * atomic requests, the coalesced ACK and an atomic ACK. */
Test(rc_tx_req, atomics_and_acks_bytes_as_the_reference)
{
	struct droce_hdr_tmpl ref = qp->tmpl;
	struct droce_wqe *w;
	struct droce_pkt_fields f;

	w = post(DROCE_WR_ATOMIC_CMP_AND_SWP, 8);
	local_sge(w, 8);
	w->remote_addr = 0x1000;
	w->rkey = 0x55;
	w->compare_add = 0x1111222233334444ull;
	w->swap = 0x5555666677778888ull;
	w = post(DROCE_WR_ATOMIC_FETCH_AND_ADD, 8);
	local_sge(w, 8);
	w->remote_addr = 0x2008;
	w->rkey = 0x66;
	w->compare_add = 9;
	cr_assert_eq(droce_rc_req_tx_lc(qp, 16), 2);
	qp->msn = 0x345678;
	qp->ack_pending = true;
	qp->ack_psn = 0x00fffe;
	qp->ack_syndrome = syn(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	rd_resp[0] = (struct droce_rd_resp){ .psn = 0xffffff, .atomic = true, .orig = 42 };
	qp->rd_resp_count = 1;
	cr_assert_eq(droce_rc_resp_tx_lc(qp, 4), 2, "the atomic ACK, then the ACK");
	cr_assert_eq(tx_count(), 4);

	memset(&f, 0, sizeof(f));
	f.opcode = RC(CMP_SWAP);
	f.psn = 100;
	f.ackreq = true;
	f.atomic.va = 0x1000;
	f.atomic.rkey = 0x55;
	f.atomic.cmp = 0x1111222233334444ull;
	f.atomic.swap_add = 0x5555666677778888ull;
	check_reference(0, &ref, &f);
	memset(&f, 0, sizeof(f));
	f.opcode = RC(FETCH_ADD);
	f.psn = 101;
	f.ackreq = true;
	f.atomic.va = 0x2008;
	f.atomic.rkey = 0x66;
	f.atomic.swap_add = 9;
	check_reference(1, &ref, &f);
	memset(&f, 0, sizeof(f));
	f.opcode = RC(ATOMIC_ACK);
	f.psn = 0xffffff;
	f.aeth.syndrome = syn(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	f.aeth.msn = 0x345678;
	f.atomic_orig = 42;
	check_reference(2, &ref, &f);
	memset(&f, 0, sizeof(f));
	f.opcode = RC(ACK);
	f.psn = 0x00fffe;
	f.aeth.syndrome = syn(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID);
	f.aeth.msn = 0x345678;
	check_reference(3, &ref, &f);
}

/* ---- responder, receive side: the WRITE ONLY short way (rc_resp.c) ---- */

TestSuite(rc_rx_fast, .init = tx_setup, .fini = tx_teardown);

static uint8_t req[64];

/* A WRITE ONLY request at @psn for @len bytes at @va with @rkey (BTH,
 * RETH, payload; the parse result as the parser leaves it). */
static void
write_only(struct droce_pkt *p, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len)
{
	struct droce_bth *bth = (struct droce_bth *)(void *)req;
	struct droce_reth *r = (struct droce_reth *)(void *)(req + sizeof(*bth));
	uint8_t op = RC(WRITE_ONLY);

	memset(p, 0, sizeof(*p));
	memset(req, 0, sizeof(req));
	droce_bth_set_opcode(bth, op);
	droce_bth_set_psn(bth, psn);
	droce_bth_set_ackreq(bth, true);
	droce_reth_set_va(r, va);
	droce_reth_set_rkey(r, rkey);
	droce_reth_set_len(r, len);
	for (uint32_t i = 0; i < len; i++)
		req[sizeof(*bth) + sizeof(*r) + i] = (uint8_t)(0xa0 + i);
	p->opcode = op;
	p->info = droce_opcode_info(op);
	p->bth_off = 0;
	p->payload_off = sizeof(*bth) + sizeof(*r);
	p->payload = req + p->payload_off;
	p->payload_len = len;
}

Test(rc_rx_fast, write_only_in_order_is_placed_and_acked)
{
	struct droce_pkt p;

	local_register();
	qp->attr.access |= DROCE_ACCESS_REMOTE_WRITE;
	qp->rxseq.pmtu = 1024;
	qp->rxseq.epsn = 500;
	qp->nak_seq_sent = true;
	write_only(&p, 500, PLAIN_LOCAL_IOVA + 8, local_mr.lkey, 16);
	droce_rc_resp_rx_lc(qp, &p, req);
	for (uint32_t i = 0; i < 16; i++)
		cr_assert_eq(local[8 + i], (uint8_t)(0xa0 + i), "byte %u in the MR", i);
	cr_assert_eq(local[7], 0);
	cr_assert_eq(local[24], 0);
	cr_assert_eq(qp->rxseq.epsn, 501);
	cr_assert_eq(qp->rxseq.open_kind, 0);
	cr_assert_eq(qp->rxseq.write_len, 16);
	cr_assert_eq(qp->rxseq.msg_bytes, 16);
	cr_assert_eq(qp->msn, 1);
	cr_assert_eq(qp->write_va, PLAIN_LOCAL_IOVA + 24, "the cursor past the bytes");
	cr_assert_not(qp->nak_seq_sent);
	cr_assert(qp->ack_pending);
	cr_assert_eq(qp->ack_psn, 500);
	cr_assert_eq(tx_count(), 0, "the ACK waits for the transmit turn");
}

/* The short way declines what it does not take whole: the state machine
 * answers (a NAK each), and nothing is written. */
Test(rc_rx_fast, write_only_refused_goes_the_long_way)
{
	struct droce_pkt p;
	const struct droce_bth *b;
	struct droce_pkt q;
	unsigned int nsegs;

	local_register();
	qp->attr.access |= DROCE_ACCESS_REMOTE_WRITE;
	qp->rxseq.pmtu = 1024;
	qp->rxseq.epsn = 500;
	/* ahead of the expected PSN: a sequence NAK for 500 */
	write_only(&p, 502, PLAIN_LOCAL_IOVA, local_mr.lkey, 16);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(tx_count(), 1);
	b = frame_at(0, &q, &nsegs);
	cr_assert_eq(droce_bth_opcode(b), RC(ACK));
	cr_assert_eq(droce_bth_psn(b), 500);
	cr_assert_eq(droce_aeth_syndrome_kind(droce_aeth_syndrome(droce_pkt_hdr(&q, frame,
										 DROCE_HDR_AETH))),
		     DROCE_AETH_NAK);
	cr_assert_eq(qp->rxseq.epsn, 500);
	/* RETH length not the payload's: invalid request */
	write_only(&p, 500, PLAIN_LOCAL_IOVA, local_mr.lkey, 16);
	droce_reth_set_len((struct droce_reth *)(void *)(req + sizeof(struct droce_bth)), 32);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(tx_count(), 2, "a NAK");
	cr_assert_eq(qp->state, DROCE_QPS_ERR);
	for (uint32_t i = 0; i < sizeof(local); i++)
		cr_assert_eq(local[i], 0, "nothing written (byte %u)", i);
}

Test(rc_rx_fast, write_only_bad_rkey_naks_remote_access)
{
	struct droce_pkt p, q;
	const struct droce_bth *b;
	unsigned int nsegs;

	local_register();
	qp->attr.access |= DROCE_ACCESS_REMOTE_WRITE;
	qp->rxseq.pmtu = 1024;
	qp->rxseq.epsn = 7;
	write_only(&p, 7, PLAIN_LOCAL_IOVA, local_mr.lkey ^ 0x100, 16);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(tx_count(), 1);
	b = frame_at(0, &q, &nsegs);
	cr_assert_eq(droce_bth_psn(b), 7);
	cr_assert_eq(droce_aeth_syndrome(droce_pkt_hdr(&q, frame, DROCE_HDR_AETH)),
		     droce_aeth_make_syndrome(DROCE_AETH_NAK, DROCE_NAK_REM_ACCESS_ERR));
	cr_assert_eq(qp->state, DROCE_QPS_ERR);
	for (uint32_t i = 0; i < sizeof(local); i++)
		cr_assert_eq(local[i], 0, "nothing written (byte %u)", i);
}

/* The long way refused the last request: its invalid request NAK queued
 * behind the @before answers queued ahead of it, the responder failing,
 * nothing sent yet; then the responder resources the test made are freed
 * and the QP's own response queue put back. */
static void
nak_queued_behind(unsigned int before)
{
	cr_assert_eq(qp->rd_resp_count, before + 1, "its NAK waits behind the queued answers");
	cr_assert_eq(qp->rd_resp[(qp->rd_resp_head + before) % DROCE_RD_RESP_CAP].nak_err,
		     DROCE_ERR_REM_INV_REQ);
	cr_assert(qp->resp_failing);
	cr_assert_eq(tx_count(), 0);
	free(qp->res);
	qp->res = NULL;
	qp->rd_resp = rd_resp;
	qp->atomic_replay = NULL;
}

/* A READ request the short way: queued for the transmit turn with the
 * PSNs its responses take; one over max_dest_rd_atomic goes the long way
 * and is refused (invalid request NAK). */
Test(rc_rx_fast, read_request_is_queued)
{
	struct droce_pkt p;

	local_register();
	cr_assert_eq(droce_qp_resp_res_lc(qp), 0);
	qp->attr.access |= DROCE_ACCESS_REMOTE_READ;
	qp->attr.max_dest_rd_atomic = 1;
	qp->rxseq.pmtu = 1024;
	qp->rxseq.epsn = 40;
	write_only(&p, 40, PLAIN_LOCAL_IOVA + 16, local_mr.lkey, 0);
	p.opcode = RC(READ_REQ);
	p.info = droce_opcode_info(p.opcode);
	droce_bth_set_opcode((struct droce_bth *)(void *)req, p.opcode);
	droce_reth_set_len((struct droce_reth *)(void *)(req + sizeof(struct droce_bth)), 2500);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(qp->rd_resp_count, 1);
	cr_assert_eq(qp->rd_resp[qp->rd_resp_head].psn, 40);
	cr_assert_eq(qp->rd_resp[qp->rd_resp_head].len, 2500);
	cr_assert_eq(qp->rd_resp[qp->rd_resp_head].va, PLAIN_LOCAL_IOVA + 16);
	cr_assert_eq(qp->rd_resp[qp->rd_resp_head].rkey, local_mr.lkey);
	cr_assert_not(qp->rd_resp[qp->rd_resp_head].atomic);
	cr_assert_eq(qp->rxseq.epsn, 43, "three responses' PSNs");
	cr_assert_eq(qp->msn, 1);
	cr_assert_not(qp->ack_pending, "the responses answer it");
	cr_assert_eq(tx_count(), 0);
	/* a second one, over max_dest_rd_atomic */
	droce_bth_set_psn((struct droce_bth *)(void *)req, 43);
	droce_rc_resp_rx_lc(qp, &p, req);
	nak_queued_behind(1);
}

/* An atomic request @op at @psn on the word at @va (AtomicETH: @rkey,
 * swap / add @swap_add, compare @cmp), as the parser leaves it. */
static void
atomic_req(struct droce_pkt *p, uint8_t op, uint32_t psn, uint64_t va, uint32_t rkey,
	   uint64_t swap_add, uint64_t cmp)
{
	struct droce_bth *bth = (struct droce_bth *)(void *)req;
	const struct droce_opcode_info *oi = droce_opcode_info(op);
	struct droce_atmeth *a = (struct droce_atmeth *)(void *)(req + oi->off[DROCE_HDR_ATMETH]);

	memset(p, 0, sizeof(*p));
	memset(req, 0, sizeof(req));
	droce_bth_set_opcode(bth, op);
	droce_bth_set_psn(bth, psn);
	droce_bth_set_ackreq(bth, true);
	droce_atmeth_set_va(a, va);
	droce_atmeth_set_rkey(a, rkey);
	droce_atmeth_set_swap_add(a, swap_add);
	droce_atmeth_set_cmp(a, cmp);
	p->opcode = op;
	p->info = oi;
	p->bth_off = 0;
	p->payload_off = oi->hdr_len;
	p->payload = req + p->payload_off;
	p->payload_len = 0;
}

static uint64_t
word_at(unsigned int off)
{
	uint64_t v;

	memcpy(&v, local + off, sizeof(v));
	return v;
}

/* Atomics the short way: executed on the MR's word, the answer queued with
 * the value before it and kept for a replay; a CMP_SWAP whose compare does
 * not match leaves the word; a misaligned one goes the long way (an
 * invalid request NAK, queued behind the answers before it). */
Test(rc_rx_fast, atomics_executed_and_queued)
{
	struct droce_pkt p;
	const struct droce_rd_resp *e;
	uint64_t v = 40;

	local_register();
	local_mr.access |= DROCE_ACCESS_REMOTE_ATOMIC;
	cr_assert_eq((uintptr_t)local % 8, 0);
	cr_assert_eq(droce_qp_resp_res_lc(qp), 0);
	qp->attr.access |= DROCE_ACCESS_REMOTE_ATOMIC;
	qp->attr.max_dest_rd_atomic = 4;
	qp->rxseq.pmtu = 1024;
	qp->rxseq.epsn = 70;
	qp->nak_seq_sent = true;
	memcpy(local + 16, &v, sizeof(v));
	atomic_req(&p, RC(FETCH_ADD), 70, PLAIN_LOCAL_IOVA + 16, local_mr.lkey, 2, 0);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(word_at(16), 42);
	cr_assert_eq(qp->rd_resp_count, 1);
	e = &qp->rd_resp[qp->rd_resp_head];
	cr_assert(e->atomic);
	cr_assert_eq(e->psn, 70);
	cr_assert_eq(e->orig, 40);
	cr_assert_not(e->dup);
	cr_assert_eq(e->nak_err, 0);
	cr_assert(qp->atomic_replay[0].valid);
	cr_assert_eq(qp->atomic_replay[0].psn, 70);
	cr_assert_eq(qp->atomic_replay[0].orig, 40);
	cr_assert_eq(qp->rxseq.epsn, 71);
	cr_assert_eq(qp->rxseq.msg_bytes, 0);
	cr_assert_eq(qp->rxseq.open_kind, 0);
	cr_assert_eq(qp->msn, 1);
	cr_assert_not(qp->nak_seq_sent);
	cr_assert_not(qp->ack_pending, "the atomic ACK answers it");
	cr_assert_eq(tx_count(), 0);
	/* CMP_SWAP, compare 41 against 42: not swapped, 42 answered */
	atomic_req(&p, RC(CMP_SWAP), 71, PLAIN_LOCAL_IOVA + 16, local_mr.lkey, 7, 41);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(word_at(16), 42);
	cr_assert_eq(qp->rd_resp_count, 2);
	e = &qp->rd_resp[(qp->rd_resp_head + 1) % DROCE_RD_RESP_CAP];
	cr_assert_eq(e->psn, 71);
	cr_assert_eq(e->orig, 42);
	/* compare 42: swapped to 7 */
	atomic_req(&p, RC(CMP_SWAP), 72, PLAIN_LOCAL_IOVA + 16, local_mr.lkey, 7, 42);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(word_at(16), 7);
	cr_assert_eq(qp->rd_resp[(qp->rd_resp_head + 2) % DROCE_RD_RESP_CAP].orig, 42);
	cr_assert_eq(qp->rxseq.epsn, 73);
	cr_assert_eq(qp->msn, 3);
	/* misaligned: the long way's invalid request, nothing changed */
	atomic_req(&p, RC(FETCH_ADD), 73, PLAIN_LOCAL_IOVA + 20, local_mr.lkey, 1, 0);
	droce_rc_resp_rx_lc(qp, &p, req);
	cr_assert_eq(word_at(16), 7);
	cr_assert_eq(word_at(24), 0);
	nak_queued_behind(3);
}

/* ---- responder, transmit side ---- */

TestSuite(rc_tx_resp, .init = tx_setup, .fini = tx_teardown);

/* The AETH of frame @p: its syndrome and MSN. */
static void
check_aeth(const struct droce_pkt *p, uint8_t syndrome, uint32_t msn)
{
	const struct droce_aeth *a = droce_pkt_hdr(p, frame, DROCE_HDR_AETH);

	cr_assert_eq(droce_aeth_syndrome(a), syndrome, "syndrome 0x%02x, want 0x%02x",
		     droce_aeth_syndrome(a), syndrome);
	cr_assert_eq(droce_aeth_msn(a), msn);
}

Test(rc_tx_resp, ack)
{
	struct droce_rc_rtx_ctx c = { .budget = 4 };
	struct droce_pkt p;
	unsigned int nsegs;

	qp->ack_pending = true;
	qp->ack_psn = 555;
	qp->ack_syndrome = syn(DROCE_AETH_ACK, 0x1f);
	qp->msn = 0x345;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_ACK);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_ACK, &c), RTX_DONE);
	cr_assert_not(qp->ack_pending);
	cr_assert_eq(c.sent, 1);
	cr_assert_eq(tx_count(), 1);
	check_bth(frame_at(0, &p, &nsegs), RC(ACK), 555, 0);
	cr_assert_not(droce_bth_ackreq(droce_pkt_bth(&p, frame)));
	check_aeth(&p, syn(DROCE_AETH_ACK, 0x1f), 0x345);
	cr_assert_eq(p.payload_len, 0);
}

Test(rc_tx_resp, nak_after_the_answers_before_it)
{
	struct droce_rc_rtx_ctx c = { .budget = 4 };
	struct droce_pkt p;
	unsigned int nsegs;

	qp->msn = 12;
	rd_resp[0] = (struct droce_rd_resp){ .psn = 9, .nak_err = DROCE_ERR_REM_ACCESS };
	qp->rd_resp_count = 1;
	qp->resp_failing = true;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_NAK);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NAK, &c), RTX_DONE);
	cr_assert_eq(qp->rd_resp_count, 0);
	cr_assert_eq(tx_count(), 1);
	check_bth(frame_at(0, &p, &nsegs), RC(ACK), 9, 0);
	check_aeth(&p, syn(DROCE_AETH_NAK, DROCE_NAK_REM_ACCESS_ERR), 12);
	cr_assert_eq(qp->stats.rem_err_naks_tx, 1);
	cr_assert_eq(qp->state, DROCE_QPS_ERR, "the error table: a remote access error ends the QP");
}

Test(rc_tx_resp, atomic_ack)
{
	struct droce_rc_rtx_ctx c = { .budget = 4 };
	struct droce_pkt p;
	unsigned int nsegs;

	qp->msn = 0xabcdef;
	rd_resp[0] = (struct droce_rd_resp){ .psn = 77, .atomic = true, .orig = 0x0102030405060708ull };
	qp->rd_resp_count = 1;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_ATOMIC_ACK);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_ATOMIC_ACK, &c), RTX_SENT);
	cr_assert(c.whole);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_SENT, &c), RTX_NEXT);
	cr_assert_eq(qp->rd_resp_count, 0);
	check_bth(frame_at(0, &p, &nsegs), RC(ATOMIC_ACK), 77, 0);
	check_aeth(&p, syn(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID), 0xabcdef);
	cr_assert_eq(droce_atmack_orig(droce_pkt_hdr(&p, frame, DROCE_HDR_ATMACK)),
		     0x0102030405060708ull);
}

/* A READ of 1501 bytes from local + 16, answered at PSN 300: FIRST (1024
 * bytes) and LAST (477, pad 3); zero-copy from @zc_min bytes. */
static void
read_resp_pair(uint32_t zc_min)
{
	struct droce_rc_rtx_ctx c = { .budget = 4 };
	const struct droce_bth *b;
	struct droce_pkt p;
	unsigned int nsegs;

	local_register();
	fill_local();
	qp->port->zc_min = zc_min;
	qp->msn = 40;
	rd_resp[0] = (struct droce_rd_resp){ .psn = 300, .va = PLAIN_LOCAL_IOVA + 16,
					     .rkey = local_mr.lkey, .len = 1501 };
	qp->rd_resp_count = 1;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_READ_RESP);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_READ_RESP, &c), RTX_SENT);
	cr_assert_not(c.whole);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_SENT, &c), RTX_NEXT);
	cr_assert_eq(qp->rd_resp_count, 1, "half answered: still queued");
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_READ_RESP);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_READ_RESP, &c), RTX_SENT);
	cr_assert(c.whole);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_SENT, &c), RTX_NEXT);
	cr_assert_eq(qp->rd_resp_count, 0);
	cr_assert_eq(tx_count(), 2);

	b = frame_at(0, &p, &nsegs);
	cr_assert_eq(nsegs, zc_min <= 1024 ? 3 : 1);
	check_bth(b, RC(READ_RESP_FIRST), 300, 0);
	check_aeth(&p, syn(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID), 40);
	cr_assert_eq(p.payload_len, 1024);
	cr_assert_arr_eq(p.payload, local + 16, 1024);
	b = frame_at(1, &p, &nsegs);
	cr_assert_eq(nsegs, 1, "477 bytes: below the threshold, copied");
	check_bth(b, RC(READ_RESP_LAST), 301, 3);
	check_aeth(&p, syn(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID), 40);
	cr_assert_eq(p.payload_len, 477);
	cr_assert_arr_eq(p.payload, local + 16 + 1024, 477);
}

Test(rc_tx_resp, read_resp_copied)
{
	read_resp_pair(UINT32_MAX);
	cr_assert_eq(eng->stats.zc_tx, 0);
}

Test(rc_tx_resp, read_resp_zero_copy)
{
	read_resp_pair(512);
	cr_assert_eq(eng->stats.zc_tx, 1);
	cr_assert_eq(local_mr.zc_refs, 1);
}

Test(rc_tx_resp, read_resp_from_a_gone_mr_fails_the_qp)
{
	struct droce_rc_rtx_ctx c = { .budget = 4 };
	struct droce_pkt p;
	unsigned int nsegs;

	local_register();
	rd_resp[0] = (struct droce_rd_resp){ .psn = 300, .va = PLAIN_LOCAL_IOVA,
					     .rkey = local_mr.lkey ^ 0xff, .len = 64 };
	qp->rd_resp_count = 1;
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_NEXT, &c), RTX_READ_RESP);
	cr_assert_eq(droce_rc_rtx_step_lc(qp, RTX_READ_RESP, &c), RTX_DONE);
	cr_assert_eq(qp->rd_resp_count, 0);
	cr_assert_eq(tx_count(), 1, "the NAK, and no response");
	check_bth(frame_at(0, &p, &nsegs), RC(ACK), 300, 0);
	check_aeth(&p, syn(DROCE_AETH_NAK, DROCE_NAK_REM_ACCESS_ERR), 0);
}
