/* SPDX-License-Identifier: BSD-3-Clause
 * RC end to end: every opcode at sizes 0, 1, MTU-1, MTU, MTU+1, 64 KiB and
 * 1 MiB, at every path MTU (256..4096), both directions, with the bytes
 * checked in remote and local memory (and canaries around them) and every
 * completion field checked.  Gather/scatter lists of up to 4 SGEs, INLINE
 * SENDs and WRITEs, and an unsignaled WRITE before every signaled WQE (it must not
 * complete, and its bytes must have landed when the next one completes).
 * PSNs start at 0xffff00 / 0xfffff8 so long messages cross 2^24.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>

#include "harness.h"

#define BIG ((size_t)(1u << 20) + 65536)
#define MARK_OFF (BIG - 4096)   /* marker area at the end of every buffer */
#define ATOM_OFF (BIG - 8192)   /* atomics area */
#define CANARY 0xee
#define POLL_MS 20000

#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)

struct ctx {
	struct h_pair p;
	struct h_buf buf[2]; /* buf[i] belongs to QP i's side */
	uint32_t pmtu;
	unsigned int it;     /* operation counter */
};

TestSuite(rc_ops, .fini = h_stop, .timeout = 120);

static void
setup(struct ctx *c, uint32_t pmtu)
{
	struct h_cfg cfg = { 0 };
	struct h_conn_opts o;

	memset(c, 0, sizeof(*c));
	c->pmtu = pmtu;
	h_start(&cfg, false);
	h_pair_create_cqs(&c->p, 64, 64, 256);
	o = h_conn_defaults(pmtu);
	h_pair_connect(&c->p, &o);
	h_buf_init(&c->buf[0], BIG, ALL_ACCESS);
	h_buf_init(&c->buf[1], BIG, ALL_ACCESS);
}

static void
expect_canary(const uint8_t *p, size_t n, const char *ctx, const char *where)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(p[i], CANARY, "%s: byte %zu %s was overwritten (%#x)", ctx, i, where, p[i]);
}

static void
expect_fill(const uint8_t *p, size_t n, uint32_t seed, const char *ctx, const char *where)
{
	long bad = h_check_fill(p, n, seed);

	cr_assert_eq(bad, -1, "%s: %s byte %ld of %zu is wrong", ctx, where, bad, n);
}

static void
dump_stats(struct ctx *c)
{
	for (unsigned int i = 0; i < 2; i++) {
		const struct droce_qp_stats *s = h_qp_stats(c->p.qp[i]);

		fprintf(stderr,
			"qp%u %#x: tx %" PRIu64 " rx %" PRIu64 " retx %" PRIu64 " timeouts %" PRIu64
			" seq_naks tx %" PRIu64 " rx %" PRIu64 " dup_reqs %" PRIu64 " dup_reads %" PRIu64
			" implicit %" PRIu64 " rnr tx %" PRIu64 " rx %" PRIu64 "\n",
			i, c->p.qpn[i], s->tx_pkts, s->rx_pkts, s->retransmits, s->timeouts,
			s->seq_naks_tx, s->seq_naks_rx, s->dup_reqs, s->dup_reads, s->implicit_naks,
			s->rnr_naks_tx, s->rnr_naks_rx);
	}
}

/* An unsignaled 8-byte WRITE of the counter into the peer's marker area. */
static void
post_marker(struct ctx *c, unsigned int from)
{
	unsigned int to = !from;
	uint64_t v = 0x4d41524b00000000ull | c->it;
	size_t slot = (c->it % 256) * 8;
	struct droce_wqe w = h_wqe(0xdead000000000000ull | c->it, DROCE_WR_RDMA_WRITE, 0);

	memcpy(c->buf[from].p + MARK_OFF + slot, &v, 8);
	h_wqe_sge(&w, &c->buf[from], MARK_OFF + slot, 8);
	w.remote_addr = h_va(&c->buf[to], MARK_OFF + slot);
	w.rkey = c->buf[to].mr.rkey;
	h_post_send(c->p.qp[from], &w);
}

static void
check_marker(struct ctx *c, unsigned int from, const char *ctx)
{
	uint64_t v, want = 0x4d41524b00000000ull | c->it;

	memcpy(&v, c->buf[!from].p + MARK_OFF + (c->it % 256) * 8, 8);
	if (v != want)
		dump_stats(c);
	cr_assert_eq(v, want, "%s: unsignaled WRITE before it did not land (%#" PRIx64 ")", ctx, v);
}

/* One message of @op and @len from QP @from to the other side, checked. */
static void
one_op(struct ctx *c, unsigned int from, uint8_t op, uint32_t len)
{
	unsigned int to = !from;
	struct h_buf *lb = &c->buf[from], *rb = &c->buf[to];
	const size_t loff = 5, roff = 3, slack = 16;
	uint32_t seed = c->pmtu * 7919u + c->it;
	uint64_t wr_id = 0x5e0d000000000000ull | (uint64_t)c->it << 8 | op;
	uint64_t rwr_id = 0x7ec0000000000000ull | c->it;
	rte_be32_t imm = rte_cpu_to_be_32(0xa0000000u | c->it);
	bool has_imm = op == DROCE_WR_SEND_WITH_IMM || op == DROCE_WR_RDMA_WRITE_WITH_IMM;
	bool send = op == DROCE_WR_SEND || op == DROCE_WR_SEND_WITH_IMM;
	bool recv_cqe = send || op == DROCE_WR_RDMA_WRITE_WITH_IMM;
	unsigned int nsge = len >= 16 ? 1 + c->it % 4 : 1;
	bool inl = op != DROCE_WR_RDMA_READ && len > 0 && len <= DROCE_DP_MAX_INLINE && c->it % 2 == 0;
	struct droce_wqe w = h_wqe(wr_id, op, DROCE_WQE_SIGNALED);
	struct droce_cqe cqe;
	struct h_expect e;
	char ctx[160];

	snprintf(ctx, sizeof(ctx), "pmtu %u %s %u bytes qp%u->qp%u%s%s (op #%u)", c->pmtu,
		 droce_wr_opcode_name[op], len, from, to, inl ? " inline" : "",
		 nsge > 1 ? " multi-sge" : "", c->it);

	post_marker(c, from);

	if (op == DROCE_WR_RDMA_READ) {
		/* remote source, local destination with canaries */
		h_fill(rb->p + roff, len, seed);
		memset(lb->p, CANARY, loff + len + slack);
		h_wqe_sges(&w, lb, loff, len, nsge);
		w.remote_addr = h_va(rb, roff);
		w.rkey = rb->mr.rkey;
	} else {
		h_fill(lb->p + loff, len, seed);
		memset(rb->p, CANARY, roff + len + slack);
		if (inl) {
			w.flags |= DROCE_WQE_INLINE;
			memcpy(w.inline_data, lb->p + loff, len);
			w.length = len;
		} else {
			h_wqe_sges(&w, lb, loff, len, nsge);
		}
		if (has_imm)
			w.imm = imm;
		if (!send) {
			w.remote_addr = h_va(rb, roff);
			w.rkey = rb->mr.rkey;
		}
	}
	cr_assert_eq(w.length, len);
	if (send) {
		struct droce_rqe r = h_rqe(rwr_id);

		/* room for the message and a little more, scattered over nsge SGEs */
		h_rqe_sges(&r, rb, roff, len + slack, nsge > 1 ? 5 - nsge : 1);
		h_post_recv(c->p.qp[to], &r);
	} else if (op == DROCE_WR_RDMA_WRITE_WITH_IMM) {
		struct droce_rqe r = h_rqe(rwr_id); /* no SGEs: WRITE_WITH_IMM consumes it whole */

		h_post_recv(c->p.qp[to], &r);
	}
	h_post_send(c->p.qp[from], &w);
	if (inl)
		memset(w.inline_data, 0, sizeof(w.inline_data)); /* the WQE was copied */

	/* the requester's completion: the unsignaled marker WRITE must not show up */
	cqe = h_poll1(c->p.scq[from], POLL_MS, ctx);
	if (cqe.status != DROCE_WC_SUCCESS) {
		h_dump_qp("requester", c->p.qp[from]);
		h_dump_qp("responder", c->p.qp[to]);
		h_dump_engines();
	}
	e = (struct h_expect){ .wr_id = wr_id, .status = DROCE_WC_SUCCESS,
			       .opcode = op == DROCE_WR_RDMA_READ ? DROCE_WC_RDMA_READ
				       : send			  ? DROCE_WC_SEND
								  : DROCE_WC_RDMA_WRITE,
			       .byte_len = len, .qp_num = c->p.qpn[from] };
	h_check_cqe(&cqe, &e, ctx);

	if (recv_cqe) {
		cqe = h_poll1(c->p.rcq[to], POLL_MS, ctx);
		e = (struct h_expect){ .wr_id = rwr_id, .status = DROCE_WC_SUCCESS,
				       .opcode = send ? DROCE_WC_RECV : DROCE_WC_RECV_RDMA_WITH_IMM,
				       .byte_len = len, .imm = has_imm ? imm : 0,
				       .wc_flags = has_imm ? DROCE_WC_F_WITH_IMM : 0,
				       .qp_num = c->p.qpn[to], .src_qp = c->p.qpn[from] };
		h_check_cqe(&cqe, &e, ctx);
	}

	if (op == DROCE_WR_RDMA_READ) {
		expect_canary(lb->p, loff, ctx, "before the READ destination");
		expect_fill(lb->p + loff, len, seed, ctx, "READ destination");
		expect_canary(lb->p + loff + len, slack, ctx, "after the READ destination");
	} else {
		expect_canary(rb->p, roff, ctx, "before the target");
		expect_fill(rb->p + roff, len, seed, ctx, "target");
		expect_canary(rb->p + roff + len, slack, ctx, "after the target");
	}
	check_marker(c, from, ctx);
	/* nothing else completes: no CQE for the marker, none on the other CQs */
	h_expect_empty(c->p.scq[from], 0, ctx);
	h_expect_empty(c->p.rcq[to], 0, ctx);
	h_expect_empty(c->p.scq[to], 0, ctx);
	h_expect_empty(c->p.rcq[from], 0, ctx);
	c->it++;
}

static void
atomics(struct ctx *c, unsigned int from)
{
	unsigned int to = !from;
	struct h_buf *lb = &c->buf[from], *rb = &c->buf[to];
	uint64_t start = 0x1122334455667788ull + c->pmtu, got, mem;
	struct droce_cqe cqe;
	struct h_expect e;
	char ctx[96];
	struct {
		uint8_t op;
		uint64_t cmp_add, swap;
		uint64_t want_orig, want_mem;
	} steps[] = {
		{ DROCE_WR_ATOMIC_FETCH_AND_ADD, 0x10, 0, start, start + 0x10 },
		{ DROCE_WR_ATOMIC_FETCH_AND_ADD, (uint64_t)-1, 0, start + 0x10, start + 0xf },
		{ DROCE_WR_ATOMIC_CMP_AND_SWP, start + 0xf, 0xabcdef0123456789ull, start + 0xf,
		  0xabcdef0123456789ull },
		/* compare fails: memory unchanged, the value found returned */
		{ DROCE_WR_ATOMIC_CMP_AND_SWP, start, 0x42, 0xabcdef0123456789ull,
		  0xabcdef0123456789ull },
		{ DROCE_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 0xabcdef0123456789ull, 0xabcdef012345678aull },
	};

	memcpy(rb->p + ATOM_OFF, &start, 8);
	for (unsigned int i = 0; i < RTE_DIM(steps); i++) {
		uint64_t wr_id = 0xa70000000000ull | (uint64_t)c->it << 8 | i;
		struct droce_wqe w = h_wqe(wr_id, steps[i].op, DROCE_WQE_SIGNALED);

		snprintf(ctx, sizeof(ctx), "pmtu %u atomic step %u (%s) qp%u->qp%u", c->pmtu, i,
			 droce_wr_opcode_name[steps[i].op], from, to);
		memset(lb->p + ATOM_OFF, CANARY, 24);
		post_marker(c, from);
		h_wqe_sge(&w, lb, ATOM_OFF + 8, 8);
		w.remote_addr = h_va(rb, ATOM_OFF);
		w.rkey = rb->mr.rkey;
		w.compare_add = steps[i].cmp_add;
		w.swap = steps[i].swap;
		h_post_send(c->p.qp[from], &w);
		cqe = h_poll1(c->p.scq[from], POLL_MS, ctx);
		e = (struct h_expect){ .wr_id = wr_id, .status = DROCE_WC_SUCCESS,
				       .opcode = steps[i].op == DROCE_WR_ATOMIC_CMP_AND_SWP
							 ? DROCE_WC_COMP_SWAP
							 : DROCE_WC_FETCH_ADD,
				       .byte_len = 8, .qp_num = c->p.qpn[from] };
		h_check_cqe(&cqe, &e, ctx);
		memcpy(&got, lb->p + ATOM_OFF + 8, 8);
		memcpy(&mem, rb->p + ATOM_OFF, 8);
		cr_assert_eq(got, steps[i].want_orig, "%s: returned %#" PRIx64 ", expected %#" PRIx64,
			     ctx, got, steps[i].want_orig);
		cr_assert_eq(mem, steps[i].want_mem, "%s: memory %#" PRIx64 ", expected %#" PRIx64, ctx,
			     mem, steps[i].want_mem);
		expect_canary(lb->p + ATOM_OFF, 8, ctx, "before the atomic result");
		expect_canary(lb->p + ATOM_OFF + 16, 8, ctx, "after the atomic result");
		check_marker(c, from, ctx);
		h_expect_empty(c->p.scq[from], 0, ctx);
		c->it++;
	}
}

static void
run_mtu(uint32_t pmtu)
{
	static const uint8_t ops[] = { DROCE_WR_SEND, DROCE_WR_SEND_WITH_IMM, DROCE_WR_RDMA_WRITE,
				       DROCE_WR_RDMA_WRITE_WITH_IMM, DROCE_WR_RDMA_READ };
	uint32_t sizes[] = { 0, 1, pmtu - 1, pmtu, pmtu + 1, 65536, 1u << 20 };
	uint32_t back[] = { 1, pmtu + 1, 1u << 20 };
	struct ctx c;

	setup(&c, pmtu);
	for (unsigned int o = 0; o < RTE_DIM(ops); o++)
		for (unsigned int s = 0; s < RTE_DIM(sizes); s++)
			one_op(&c, 0, ops[o], sizes[s]);
	atomics(&c, 0);
	/* the other direction: port1's QP as requester */
	for (unsigned int o = 0; o < RTE_DIM(ops); o++)
		for (unsigned int s = 0; s < RTE_DIM(back); s++)
			one_op(&c, 1, ops[o], back[s]);
	atomics(&c, 1);
	cr_assert_eq(h_qp_state(c.p.qp[0]), DROCE_QPS_RTS);
	cr_assert_eq(h_qp_state(c.p.qp[1]), DROCE_QPS_RTS);
}

Test(rc_ops, pmtu_256) { run_mtu(256); }
Test(rc_ops, pmtu_512) { run_mtu(512); }
Test(rc_ops, pmtu_1024) { run_mtu(1024); }
Test(rc_ops, pmtu_2048) { run_mtu(2048); }
Test(rc_ops, pmtu_4096) { run_mtu(4096); }

/* Many WQEs in flight at once, unsignaled ones in between: only signaled ones complete, in order. */
Test(rc_ops, unsignaled_interleaved)
{
	struct ctx c;
	struct droce_cqe cqe[64];
	const unsigned int n = 48;
	unsigned int nsig = 0;

	setup(&c, 1024);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t op = i % 3 == 0 ? DROCE_WR_RDMA_WRITE : i % 3 == 1 ? DROCE_WR_SEND : DROCE_WR_RDMA_READ;
		uint8_t flags = (i % 4 == 1 || i == n - 1) ? DROCE_WQE_SIGNALED : 0;
		struct droce_wqe w = h_wqe(1000 + i, op, flags);
		size_t off = (size_t)i * 3000;

		if (op == DROCE_WR_RDMA_READ)
			h_fill(c.buf[1].p + off, 2500, 500 + i);
		else
			h_fill(c.buf[0].p + off, 2500, 500 + i);
		h_wqe_sges(&w, &c.buf[0], off, 2500, 1 + i % 3);
		if (op == DROCE_WR_SEND) {
			struct droce_rqe r = h_rqe(2000 + i);

			h_rqe_sge(&r, &c.buf[1], off, 2500);
			h_post_recv(c.p.qp[1], &r);
		} else {
			w.remote_addr = h_va(&c.buf[1], off);
			w.rkey = c.buf[1].mr.rkey;
		}
		h_post_send(c.p.qp[0], &w);
		nsig += flags ? 1 : 0;
	}
	cr_assert_eq(h_poll(c.p.scq[0], (int)nsig, cqe, POLL_MS), (int)nsig);
	for (unsigned int k = 0, i = 0; i < n; i++) {
		uint8_t op = i % 3 == 0 ? DROCE_WR_RDMA_WRITE : i % 3 == 1 ? DROCE_WR_SEND : DROCE_WR_RDMA_READ;
		char ctx[64];

		snprintf(ctx, sizeof(ctx), "WQE %u (%s)", i, droce_wr_opcode_name[op]);
		if (i % 4 == 1 || i == n - 1) {
			struct h_expect e = { .wr_id = 1000 + i, .status = DROCE_WC_SUCCESS,
					      .opcode = op == DROCE_WR_RDMA_WRITE ? DROCE_WC_RDMA_WRITE
							: op == DROCE_WR_SEND	    ? DROCE_WC_SEND
										    : DROCE_WC_RDMA_READ,
					      .byte_len = 2500, .qp_num = c.p.qpn[0] };
			h_check_cqe(&cqe[k++], &e, ctx);
		}
		if (op == DROCE_WR_RDMA_READ)
			expect_fill(c.buf[0].p + (size_t)i * 3000, 2500, 500 + i, ctx, "READ data");
		else
			expect_fill(c.buf[1].p + (size_t)i * 3000, 2500, 500 + i, ctx, "remote data");
	}
	/* every SEND consumed one receive, in order */
	for (unsigned int i = 1; i < n; i += 3) {
		struct droce_cqe r = h_poll1(c.p.rcq[1], POLL_MS, "receive");
		struct h_expect e = { .wr_id = 2000 + i, .status = DROCE_WC_SUCCESS,
				      .opcode = DROCE_WC_RECV, .byte_len = 2500, .qp_num = c.p.qpn[1],
				      .src_qp = c.p.qpn[0] };
		h_check_cqe(&r, &e, "receive");
	}
	h_expect_empty(c.p.scq[0], 20, "send CQ after the last signaled WQE");
	h_expect_empty(c.p.rcq[1], 0, "receive CQ");
}
