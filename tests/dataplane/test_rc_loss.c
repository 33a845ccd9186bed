/* SPDX-License-Identifier: BSD-3-Clause
 * RC under loss: 8 QPs on two engines (requesters and responders on both),
 * shared CQs, 10,000 mixed messages (SEND, SEND_WITH_IMM, WRITE,
 * WRITE_WITH_IMM, READ, FETCH_ADD, CMP_SWAP; 1..3 packets; some
 * unsignaled) over an impaired ring pair: 1% drop, 1% duplication, 1%
 * reorder, 0.1% corruption on both ports' transmit side.  Every message
 * completes exactly once and in order, with the right bytes:
 *  - send completions arrive per QP in posting order, for signaled WQEs only;
 *  - every WQE retired is checked: WRITE target bytes, READ bytes, and the
 *    value an atomic returned (each QP's atomics count 0, 1, 2, ... on its own
 *    counter, so a re-executed atomic shows);
 *  - receives arrive per QP in order, one per SEND / WRITE_WITH_IMM, with
 *    the right length, immediate and bytes, and nothing else arrives.
 * The counters must show retransmissions, NAKs and duplicates.
 *
 * Environment: DROCE_TEST_LOSS_MSGS (default 10000; about 0.2 s, also under
 * ASan+UBSan), DROCE_TEST_SEED (impairment seed, default 1),
 * DROCE_TEST_TIMEOUT (local ACK timeout exponent, default 12 = 16.8 ms),
 * DROCE_TEST_STALL_MS (fail after this long without a completion, default
 * 10000, dumping every QP's transport state), DROCE_TEST_STRICT=1 (the clean
 * link must need no retransmission at all), DROCE_TEST_IMPAIR (other
 * impair_* keys, ';'-separated, instead of the 1%/1%/1%/0.1% default).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "harness.h"

#define NQP 8
#define W 32          /* WQEs in flight per QP */
#define RQ 64         /* receives posted per QP */
#define SLOT 4096
#define READ_AREA (64 * 1024)
#define PMTU 1024
#define MAXLEN (3 * PMTU + 100)
#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)

/* remote (port1 side) layout per QP */
#define R_WRITE 0
#define R_READ (R_WRITE + W * SLOT)
#define R_RECV (R_READ + READ_AREA)
#define R_CTR (R_RECV + RQ * SLOT)
#define R_SIZE (R_CTR + 64)

TestSuite(rc_loss, .fini = h_stop, .timeout = 240);

struct msg {
	uint8_t op;
	bool signaled;
	uint32_t len;
	uint32_t roff;     /* READ: offset in the read area */
	uint64_t atomic_n; /* atomics: the counter value it must see */
};

struct recv_exp {
	uint32_t k;
};

struct qstate {
	struct h_pair p;
	struct h_buf lb, rb;
	struct msg *m;
	uint32_t n, posted, retired, last_sig_done;
	uint64_t atomics;
	/* receives: expected messages in order */
	uint32_t *rexp;
	uint32_t rexp_n, rexp_done;
	uint32_t rq_posted;
};

static uint32_t
seed_of(unsigned int q, uint32_t k)
{
	return q * 1000003u + k * 7u + 1;
}

static uint32_t
rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

static void
plan(struct qstate *s, unsigned int q, uint32_t n)
{
	uint64_t r = 0x1234567ull + q;

	s->n = n;
	s->m = calloc(n, sizeof(*s->m));
	s->rexp = calloc(n, sizeof(*s->rexp));
	cr_assert(s->m && s->rexp);
	for (uint32_t k = 0; k < n; k++) {
		struct msg *m = &s->m[k];
		uint32_t x = rnd(&r) % 100;

		m->op = x < 18   ? DROCE_WR_SEND
			: x < 30 ? DROCE_WR_SEND_WITH_IMM
			: x < 45 ? DROCE_WR_RDMA_WRITE
			: x < 55 ? DROCE_WR_RDMA_WRITE_WITH_IMM
			: x < 80 ? DROCE_WR_RDMA_READ
			: x < 90 ? DROCE_WR_ATOMIC_FETCH_AND_ADD
				 : DROCE_WR_ATOMIC_CMP_AND_SWP;
		m->signaled = k % 5 != 2 || k == n - 1;
		m->len = 1 + rnd(&r) % MAXLEN;
		if (m->op == DROCE_WR_ATOMIC_FETCH_AND_ADD || m->op == DROCE_WR_ATOMIC_CMP_AND_SWP) {
			m->len = 8;
			m->atomic_n = s->atomics++;
		}
		if (m->op == DROCE_WR_RDMA_READ)
			m->roff = rnd(&r) % (READ_AREA - m->len);
		if (m->op == DROCE_WR_SEND || m->op == DROCE_WR_SEND_WITH_IMM ||
		    m->op == DROCE_WR_RDMA_WRITE_WITH_IMM)
			s->rexp[s->rexp_n++] = k;
	}
}

static void
post_recv(struct qstate *s)
{
	struct droce_rqe r = h_rqe(s->rq_posted);

	h_rqe_sges(&r, &s->rb, R_RECV + (size_t)(s->rq_posted % RQ) * SLOT, SLOT, 1 + s->rq_posted % 3);
	h_post_recv(s->p.qp[1], &r);
	s->rq_posted++;
}

static void
post_one(struct qstate *s, unsigned int q)
{
	uint32_t k = s->posted;
	const struct msg *m = &s->m[k];
	size_t slot = (size_t)(k % W) * SLOT;
	struct droce_wqe w = h_wqe(((uint64_t)q << 32) | k, m->op, m->signaled ? DROCE_WQE_SIGNALED : 0);

	switch (m->op) {
	case DROCE_WR_SEND:
	case DROCE_WR_SEND_WITH_IMM:
	case DROCE_WR_RDMA_WRITE:
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
		h_fill(s->lb.p + slot, m->len, seed_of(q, k));
		h_wqe_sges(&w, &s->lb, slot, m->len, 1 + k % 4);
		w.imm = rte_cpu_to_be_32(k);
		w.remote_addr = h_va(&s->rb, R_WRITE + slot);
		w.rkey = s->rb.mr.rkey;
		break;
	case DROCE_WR_RDMA_READ:
		memset(s->lb.p + slot, 0, m->len);
		h_wqe_sges(&w, &s->lb, slot, m->len, 1 + k % 3);
		w.remote_addr = h_va(&s->rb, R_READ + m->roff);
		w.rkey = s->rb.mr.rkey;
		break;
	default:
		memset(s->lb.p + slot, 0xff, 8);
		h_wqe_sge(&w, &s->lb, slot, 8);
		w.remote_addr = h_va(&s->rb, R_CTR);
		w.rkey = s->rb.mr.rkey;
		w.compare_add = m->op == DROCE_WR_ATOMIC_FETCH_AND_ADD ? 1 : m->atomic_n;
		w.swap = m->atomic_n + 1;
		break;
	}
	h_post_send(s->p.qp[0], &w);
	s->posted++;
}

/* WQE k is retired (a later signaled one completed): its effects must be there. */
static void
check_retired(struct qstate *s, unsigned int q, uint32_t k)
{
	const struct msg *m = &s->m[k];
	size_t slot = (size_t)(k % W) * SLOT;
	long bad;
	uint64_t v;

	switch (m->op) {
	case DROCE_WR_RDMA_WRITE:
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
		bad = h_check_fill(s->rb.p + R_WRITE + slot, m->len, seed_of(q, k));
		cr_assert_eq(bad, -1, "QP %u WQE %u: WRITE of %u bytes: byte %ld wrong at the target", q,
			     k, m->len, bad);
		break;
	case DROCE_WR_RDMA_READ:
		cr_assert_eq(memcmp(s->lb.p + slot, s->rb.p + R_READ + m->roff, m->len), 0,
			     "QP %u WQE %u: READ of %u bytes brought wrong bytes", q, k, m->len);
		break;
	case DROCE_WR_ATOMIC_FETCH_AND_ADD:
	case DROCE_WR_ATOMIC_CMP_AND_SWP:
		memcpy(&v, s->lb.p + slot, 8);
		cr_assert_eq(v, m->atomic_n,
			     "QP %u WQE %u (%s): returned %" PRIu64 ", expected %" PRIu64
			     " (executed twice or skipped?)",
			     q, k, droce_wr_opcode_name[m->op], v, m->atomic_n);
		break;
	default:
		break;
	}
}

static void
on_send_cqe(struct qstate *qs, const struct droce_cqe *c)
{
	unsigned int q = (unsigned int)(c->wr_id >> 32);
	uint32_t k = (uint32_t)c->wr_id;
	struct qstate *s;
	const struct msg *m;

	cr_assert_lt(q, NQP, "send completion with wr_id %#" PRIx64, c->wr_id);
	s = &qs[q];
	cr_assert_lt(k, s->posted, "QP %u: completion for WQE %u never posted", q, k);
	m = &s->m[k];
	if (c->status != DROCE_WC_SUCCESS) {
		h_dump_qp("requester", s->p.qp[0]);
		h_dump_qp("responder", s->p.qp[1]);
		h_dump_engines();
	}
	cr_assert_eq(c->status, DROCE_WC_SUCCESS, "QP %u WQE %u (%s, %u bytes): status %u", q, k,
		     droce_wr_opcode_name[m->op], m->len, c->status);
	cr_assert(m->signaled, "QP %u WQE %u is unsignaled but completed", q, k);
	cr_assert_geq(k, s->retired, "QP %u: WQE %u completed twice (or out of order; retired %u)", q,
		      k, s->retired);
	/* the next signaled WQE after the last one retired */
	for (uint32_t j = s->retired; j < k; j++)
		cr_assert(!s->m[j].signaled, "QP %u: WQE %u completed before signaled WQE %u", q, k, j);
	cr_assert_eq(c->qp_num, s->p.qpn[0]);
	cr_assert_eq(c->byte_len, m->len, "QP %u WQE %u: byte_len %u, expected %u", q, k, c->byte_len,
		     m->len);
	cr_assert_eq(c->opcode,
		     m->op == DROCE_WR_RDMA_READ			? DROCE_WC_RDMA_READ
		     : m->op == DROCE_WR_ATOMIC_FETCH_AND_ADD		? DROCE_WC_FETCH_ADD
		     : m->op == DROCE_WR_ATOMIC_CMP_AND_SWP		? DROCE_WC_COMP_SWAP
		     : m->op == DROCE_WR_SEND || m->op == DROCE_WR_SEND_WITH_IMM ? DROCE_WC_SEND
									: DROCE_WC_RDMA_WRITE,
		     "QP %u WQE %u: opcode %u", q, k, c->opcode);
	for (uint32_t j = s->retired; j <= k; j++)
		check_retired(s, q, j);
	s->retired = k + 1;
}

static void
on_recv_cqe(struct qstate *qs, const struct droce_cqe *c)
{
	unsigned int q;
	struct qstate *s;
	uint32_t k, rwr;
	const struct msg *m;
	bool imm;

	for (q = 0; q < NQP && qs[q].p.qpn[1] != c->qp_num; q++)
		;
	cr_assert_lt(q, NQP, "receive completion for unknown QP %#x", c->qp_num);
	s = &qs[q];
	cr_assert_eq(c->status, DROCE_WC_SUCCESS, "QP %u receive %" PRIu64 ": status %u", q, c->wr_id,
		     c->status);
	cr_assert_lt(s->rexp_done, s->rexp_n, "QP %u: more receives than messages that need one", q);
	rwr = s->rexp_done;
	cr_assert_eq(c->wr_id, rwr, "QP %u: receive %" PRIu64 " completed, expected %u (order)", q,
		     c->wr_id, rwr);
	k = s->rexp[s->rexp_done++];
	m = &s->m[k];
	imm = m->op != DROCE_WR_SEND;
	cr_assert_eq(c->opcode, m->op == DROCE_WR_RDMA_WRITE_WITH_IMM ? DROCE_WC_RECV_RDMA_WITH_IMM
								       : DROCE_WC_RECV,
		     "QP %u message %u: opcode %u", q, k, c->opcode);
	cr_assert_eq(c->byte_len, m->len, "QP %u message %u: byte_len %u, expected %u", q, k,
		     c->byte_len, m->len);
	cr_assert_eq(c->wc_flags, imm ? DROCE_WC_F_WITH_IMM : 0u);
	if (imm)
		cr_assert_eq(c->imm_or_inv, rte_cpu_to_be_32(k), "QP %u message %u: imm %#x", q, k,
			     rte_be_to_cpu_32(c->imm_or_inv));
	cr_assert_eq(c->src_qp, s->p.qpn[0]);
	if (m->op != DROCE_WR_RDMA_WRITE_WITH_IMM) {
		long bad = h_check_fill(s->rb.p + R_RECV + (size_t)(rwr % RQ) * SLOT, m->len,
					seed_of(q, k));

		cr_assert_eq(bad, -1, "QP %u message %u (%u bytes): received byte %ld wrong", q, k,
			     m->len, bad);
	}
	post_recv(s);
}

static bool sr; /* [engines] selective_repeat = 1 (dataplane/rc_sr.c) */

static void
run(const char *impair, uint32_t total, bool expect_loss)
{
	static struct qstate qs[NQP];
	char extra[512];
	struct h_cfg cfg = { .engines = 2, .port_extra = extra, .mbufs = 32767, .mem_mb = 1024,
			     .selective_repeat = sr };
	struct h_conn_opts o = h_conn_defaults(PMTU);
	struct droce_cq *scq0, *rcq0, *scq1, *rcq1;
	struct droce_qp_stats sum = { 0 }, rsum = { 0 };
	struct droce_port_stats ps[2];
	uint64_t t0, deadline, progress_at, stall_ms, seed = h_env_ulong("DROCE_TEST_SEED", 1);
	uint32_t per = total / NQP;
	bool all;

	snprintf(extra, sizeof(extra), "%s%simpair_seed = %" PRIu64 "\n", impair,
		 *impair ? "\n" : "", seed);
	if (!*impair)
		extra[0] = '\0';
	if (h_start(&cfg, true) != 0)
		cr_skip_test("impaired link not available: %s", droce_last_error());
	memset(qs, 0, sizeof(qs));
	scq0 = h_cq_create(NQP * W * 2);
	rcq0 = h_cq_create(64);
	scq1 = h_cq_create(64);
	rcq1 = h_cq_create(NQP * RQ * 2);
	cr_assert(scq0 && rcq0 && scq1 && rcq1);
	/* local ACK timeout 4.096 us * 2^timeout: 12 = 16.8 ms */
	o.timeout = (uint8_t)h_env_ulong("DROCE_TEST_TIMEOUT", 12);
	o.retry_cnt = 7;
	o.rnr_retry = 7;
	o.max_rd_atomic = 8;
	o.max_dest_rd_atomic = 8;
	for (unsigned int q = 0; q < NQP; q++) {
		struct qstate *s = &qs[q];

		h_pair_create_ex(&s->p, W * 2, RQ, scq0, rcq0, scq1, rcq1, q % 2);
		o.udp_sport = (uint16_t)(0xc200 + q);
		h_pair_connect(&s->p, &o);
		h_buf_init(&s->lb, (size_t)W * SLOT, ALL_ACCESS);
		h_buf_init(&s->rb, R_SIZE, ALL_ACCESS);
		h_fill(s->rb.p + R_READ, READ_AREA, 0xbeef00 + q);
		plan(s, q, per);
		for (unsigned int i = 0; i < RQ; i++)
			post_recv(s);
	}
	t0 = tc_now_ms();
	deadline = t0 + h_env_ulong("DROCE_TEST_LOSS_MS", 120000);
	stall_ms = h_env_ulong("DROCE_TEST_STALL_MS", 10000);
	progress_at = t0;
	do {
		struct droce_cqe c[64];
		int n;

		for (unsigned int q = 0; q < NQP; q++)
			while (qs[q].posted < qs[q].n && qs[q].posted - qs[q].retired < W)
				post_one(&qs[q], q);
		n = droce_cq_poll(scq0, 64, c);
		for (int i = 0; i < n; i++)
			on_send_cqe(qs, &c[i]);
		if (n > 0)
			progress_at = tc_now_ms();
		n = droce_cq_poll(rcq1, 64, c);
		for (int i = 0; i < n; i++)
			on_recv_cqe(qs, &c[i]);
		if (n > 0)
			progress_at = tc_now_ms();
		all = true;
		for (unsigned int q = 0; q < NQP; q++)
			all = all && qs[q].retired == qs[q].n && qs[q].rexp_done == qs[q].rexp_n;
		if (!all && (tc_now_ms() > deadline || tc_now_ms() > progress_at + stall_ms)) {
			for (unsigned int q = 0; q < NQP; q++) {
				char name[32];

				snprintf(name, sizeof(name), "QP %u requester", q);
				h_dump_qp(name, qs[q].p.qp[0]);
				snprintf(name, sizeof(name), "QP %u responder", q);
				h_dump_qp(name, qs[q].p.qp[1]);
			}
			h_dump_engines();
			for (unsigned int q = 0; q < NQP; q++)
				cr_log_error("QP %u (%#x -> %#x): posted %u retired %u of %u, receives %u of "
					     "%u, state %d/%d",
					     q, qs[q].p.qpn[0], qs[q].p.qpn[1], qs[q].posted, qs[q].retired,
					     qs[q].n, qs[q].rexp_done, qs[q].rexp_n,
					     h_qp_state(qs[q].p.qp[0]), h_qp_state(qs[q].p.qp[1]));
			cr_assert_fail("not done after %" PRIu64 " ms (no completion for %" PRIu64 " ms)",
				       tc_now_ms() - t0, tc_now_ms() - progress_at);
		}
	} while (!all);
	fprintf(stderr, "[info] " "%u messages over %u QPs in %" PRIu64 " ms\n", per * NQP, NQP, tc_now_ms() - t0);

	/* exactly once: nothing more arrives */
	h_expect_empty(scq0, 50, "send CQ after the last completion");
	h_expect_empty(rcq1, 0, "receive CQ after the last message");
	h_expect_empty(rcq0, 0, "port0 receive CQ");
	h_expect_empty(scq1, 0, "port1 send CQ");
	for (unsigned int q = 0; q < NQP; q++) {
		const struct droce_qp_stats *a = h_qp_stats(qs[q].p.qp[0]), *b = h_qp_stats(qs[q].p.qp[1]);
		uint64_t ctr;

		memcpy(&ctr, qs[q].rb.p + R_CTR, 8);
		cr_assert_eq(ctr, qs[q].atomics, "QP %u: counter %" PRIu64 " after %" PRIu64 " atomics", q,
			     ctr, qs[q].atomics);
		cr_assert_eq(h_qp_state(qs[q].p.qp[0]), DROCE_QPS_RTS);
		cr_assert_eq(h_qp_state(qs[q].p.qp[1]), DROCE_QPS_RTS);
		sum.retransmits += a->retransmits;
		sum.timeouts += a->timeouts;
		sum.seq_naks_rx += a->seq_naks_rx;
		sum.implicit_naks += a->implicit_naks;
		sum.rnr_naks_rx += a->rnr_naks_rx;
		rsum.seq_naks_tx += b->seq_naks_tx;
		rsum.dup_reqs += b->dup_reqs;
		rsum.dup_reads += b->dup_reads;
		rsum.dup_atomics += b->dup_atomics;
		rsum.sr_held += b->sr_held;
		sum.sr_resent += a->sr_resent;
	}
	for (unsigned int i = 0; i < 2; i++)
		droce_port_stats_get(droce_port_get(i), &ps[i]);
	h_dump_engines();
	fprintf(stderr, "[info] " "requesters: retransmits %" PRIu64 " timeouts %" PRIu64 " seq NAKs rx %" PRIu64
		    " implicit NAKs %" PRIu64 " RNR NAKs rx %" PRIu64 "\n",
		    sum.retransmits, sum.timeouts, sum.seq_naks_rx, sum.implicit_naks, sum.rnr_naks_rx);
	fprintf(stderr, "[info] " "responders: seq NAKs tx %" PRIu64 " dup requests %" PRIu64 " dup READs %" PRIu64
		    " dup atomics %" PRIu64 "\n",
		    rsum.seq_naks_tx, rsum.dup_reqs, rsum.dup_reads, rsum.dup_atomics);
	fprintf(stderr, "[info] selective repeat %s: requests kept %" PRIu64 ", packets re-sent alone %" PRIu64 "\n",
		sr ? "on" : "off", rsum.sr_held, sum.sr_resent);
	for (unsigned int i = 0; i < 2; i++)
		fprintf(stderr, "[info] " "port%u tx: dropped %" PRIu64 " duplicated %" PRIu64 " reordered %" PRIu64
			    " corrupted %" PRIu64 "\n",
			    i, ps[i].impair_tx.dropped, ps[i].impair_tx.duplicated,
			    ps[i].impair_tx.reordered, ps[i].impair_tx.corrupted);
	if (!expect_loss && !*impair && h_env_ulong("DROCE_TEST_STRICT", 0)) {
		/*
		 * A perfect link: nothing should need resending.  Opt-in, since a
		 * loaded machine (parallel tests, sanitizers) can delay the
		 * co-located engines past the local ACK timeout.
		 */
		cr_assert_eq(sum.timeouts, 0, "%" PRIu64 " local ACK timeouts on a perfect link",
			     sum.timeouts);
		cr_assert_eq(sum.retransmits, 0, "%" PRIu64 " retransmissions on a perfect link",
			     sum.retransmits);
	}
	if (expect_loss) {
		for (unsigned int i = 0; i < 2; i++) {
			cr_assert_gt(ps[i].impair_tx.dropped, 0, "port%u dropped nothing", i);
			cr_assert_gt(ps[i].impair_tx.duplicated, 0, "port%u duplicated nothing", i);
			cr_assert_gt(ps[i].impair_tx.reordered, 0, "port%u reordered nothing", i);
		}
		cr_assert_gt(ps[0].impair_tx.corrupted + ps[1].impair_tx.corrupted, 0);
		cr_assert_gt(sum.retransmits + sum.sr_resent, 0, "no retransmissions");
		if (sr) {
			cr_assert_gt(rsum.sr_held, 0, "selective repeat: no request kept");
			cr_assert_gt(sum.sr_resent, 0, "selective repeat: no packet re-sent alone");
		}
		cr_assert_gt(sum.seq_naks_rx + sum.implicit_naks, 0, "no NAKs");
		cr_assert_gt(rsum.seq_naks_tx, 0, "responders sent no sequence NAK");
		cr_assert_gt(rsum.dup_reqs, 0, "responders saw no duplicate");
	}
}

Test(rc_loss, mixed_clean_link)
{
	run("", (uint32_t)h_env_ulong("DROCE_TEST_CLEAN_MSGS", 2000), false);
}

/* The same between two droce ends with selective repeat (rc_sr.c). */
Test(rc_loss, mixed_impaired_link_selective_repeat)
{
	sr = true;
	run("impair_drop = 1%\n"
	    "impair_dup = 1%\n"
	    "impair_reorder = 1%\n"
	    "impair_corrupt = 0.1%\n"
	    "impair_dir = tx",
	    (uint32_t)h_env_ulong("DROCE_TEST_LOSS_MSGS", 10000), true);
}

Test(rc_loss, mixed_impaired_link)
{
	static char custom[512];
	const char *env = getenv("DROCE_TEST_IMPAIR");

	if (env && *env) {
		/* e.g. "impair_drop = 5%;impair_reorder = 5%" (';' separates keys) */
		snprintf(custom, sizeof(custom), "%s", env);
		for (char *c = custom; *c; c++)
			if (*c == ';')
				*c = '\n';
		/* exactly once, in order, right bytes; no claims about which impairments fired */
		run(custom, (uint32_t)h_env_ulong("DROCE_TEST_LOSS_MSGS", 10000), false);
		return;
	}
	run("impair_drop = 1%\n"
	    "impair_dup = 1%\n"
	    "impair_reorder = 1%\n"
	    "impair_corrupt = 0.1%\n"
	    "impair_dir = tx",
	    (uint32_t)h_env_ulong("DROCE_TEST_LOSS_MSGS", 10000), true);
}
