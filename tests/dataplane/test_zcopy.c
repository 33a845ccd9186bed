/* SPDX-License-Identifier: BSD-3-Clause
 * Zero-copy transmit (dataplane/zcopy.c): RC payloads of at least the port's
 * zero_copy bytes go out as external mbuf segments pointing into registered
 * memory.  Checked here: the exact bytes of WRITE, SEND (gather lists whose
 * SGE boundaries fall inside packets: those packets are copied) and READ
 * (responses sent from the responder's MR) at path MTU 1024 and 4096, with
 * unaligned lengths (pad); the frames really went zero-copy (engine counter
 * tx_zero_copy) and were placed from the sender's memory by the receiving
 * engine; deregistering an MR while frames point into it waits until they
 * are delivered (the bytes delivered are those registered at post time even
 * though the buffer is overwritten and freed right after the deregistration;
 * under ASan any later read of it fails the test); a port stalled longer
 * than droce_mr_drain_ms makes the deregistration EBUSY, and a second one
 * succeeds once the frames are through (the bound lowered to 100 ms for the
 * test); a port without multi-segment
 * transmit and zero_copy = 0 fall back to copying.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "pmd_glue/port_struct.h"

#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)
#define LEN (256u * 1024)
#define POLL_MS 20000

TestSuite(zcopy, .fini = h_stop, .timeout = 120);

struct zc {
	struct h_pair p;
	struct h_buf b[2];
};

static uint64_t
zc_frames(void)
{
	struct droce_engine_stats s;

	droce_engine_stats_get(0, &s);
	return s.zc_tx;
}

/* @timeout: the QPs' local ACK timeout attribute, 0 for the harness's. */
static void
setup(struct zc *c, uint32_t pmtu, const char *port_extra, uint8_t timeout)
{
	struct h_cfg cfg = { .port_extra = port_extra };
	struct h_conn_opts o;

	memset(c, 0, sizeof(*c));
	h_start(&cfg, false);
	h_pair_create_cqs(&c->p, 64, 64, 256);
	o = h_conn_defaults(pmtu);
	if (timeout)
		o.timeout = timeout;
	h_pair_connect(&c->p, &o);
	h_buf_init(&c->b[0], LEN, ALL_ACCESS);
	h_buf_init(&c->b[1], LEN, ALL_ACCESS);
}

/* A WRITE of @len bytes from b[0] + @loff to b[1] + @roff, checked byte for
 * byte with the bytes around it; returns the frames sent zero-copy. */
static uint64_t
write_checked(struct zc *c, uint32_t len, size_t loff, size_t roff, uint32_t seed)
{
	uint64_t before = zc_frames();
	struct droce_wqe w = h_wqe(seed, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	struct droce_cqe e;

	memset(c->b[1].p, 0xee, LEN);
	h_fill(c->b[0].p + loff, len, seed);
	h_wqe_sge(&w, &c->b[0], loff, len);
	w.remote_addr = h_va(&c->b[1], roff);
	w.rkey = c->b[1].mr.rkey;
	h_post_send(c->p.qp[0], &w);
	e = h_poll1(c->p.scq[0], POLL_MS, "WRITE");
	cr_assert_eq(e.status, DROCE_WC_SUCCESS, "WRITE %u: status %u", len, e.status);
	cr_assert_eq(h_check_fill(c->b[1].p + roff, len, seed), -1, "WRITE %u: byte %ld wrong", len,
		     h_check_fill(c->b[1].p + roff, len, seed));
	cr_assert_eq(c->b[1].p[roff - 1], 0xee, "WRITE %u: byte before overwritten", len);
	cr_assert_eq(c->b[1].p[roff + len], 0xee, "WRITE %u: byte after overwritten", len);
	return zc_frames() - before;
}

/* WRITEs of several shapes at path MTU @pmtu with the ports' zero_copy =
 * @zc, each checked byte for byte, with the number of frames that went
 * zero-copy. */
static void
write_shapes(uint32_t pmtu, uint32_t zc, uint32_t seed)
{
	char extra[64];
	struct zc c;
	uint64_t n;

	snprintf(extra, sizeof(extra), "zero_copy = %u", zc);
	setup(&c, pmtu, extra, 0);
	/* 64 KiB: every packet a full path MTU, all of them zero-copy */
	n = write_checked(&c, 65536, 64, 128, seed);
	cr_assert_eq(n, 65536 / pmtu, "pmtu %u: %" PRIu64 " zero-copy frames", pmtu, n);
	/* an odd length at odd offsets: the last packet (5 bytes, 3 of pad) is
	 * below the threshold: copied */
	n = write_checked(&c, 3 * pmtu + 5, 7, 9, seed + 1);
	cr_assert_eq(n, 3, "pmtu %u: odd length: %" PRIu64 " zero-copy frames", pmtu, n);
	/* one byte over the threshold, unaligned: one zero-copy packet (with 3
	 * bytes of pad when it is the only one), the byte after it copied */
	n = write_checked(&c, zc + 1, 1, 3, seed + 2);
	cr_assert_eq(n, 1, "pmtu %u: %" PRIu64 " zero-copy frames", pmtu, n);
	/* below the threshold: copied */
	n = write_checked(&c, zc - 1, 0, 8, seed + 3);
	cr_assert_eq(n, 0, "pmtu %u: small WRITE went zero-copy", pmtu);
}

Test(zcopy, write_bytes_pmtu_1024)
{
	write_shapes(1024, 1024, 1);
}

Test(zcopy, write_bytes_pmtu_4096)
{
	write_shapes(4096, 1024, 11);
}

Test(zcopy, write_bytes_pmtu_4096_default_threshold)
{
	write_shapes(4096, DROCE_ZERO_COPY_DEFAULT, 21);
}

Test(zcopy, send_gather_list_and_read)
{
	struct zc c;
	struct droce_wqe w;
	struct droce_rqe r;
	struct droce_cqe e;
	uint64_t before, n;
	const uint32_t len = 64 * 1024 + 100;

	setup(&c, 4096, NULL, 0);

	/* SEND from 3 uneven SGEs: packets lying in one SGE go zero-copy, the
	 * ones an SGE boundary cuts are copied; the receiver sees one message */
	h_fill(c.b[0].p + 11, len, 21);
	memset(c.b[1].p, 0xee, LEN);
	r = h_rqe(2);
	h_rqe_sge(&r, &c.b[1], 16, len);
	h_post_recv(c.p.qp[1], &r);
	w = h_wqe(1, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sges(&w, &c.b[0], 11, len, 3);
	before = zc_frames();
	h_post_send(c.p.qp[0], &w);
	e = h_poll1(c.p.scq[0], POLL_MS, "SEND");
	cr_assert_eq(e.status, DROCE_WC_SUCCESS);
	e = h_poll1(c.p.rcq[1], POLL_MS, "RECV");
	cr_assert_eq(e.status, DROCE_WC_SUCCESS);
	cr_assert_eq(e.byte_len, len);
	cr_assert_eq(h_check_fill(c.b[1].p + 16, len, 21), -1, "SEND: byte %ld wrong",
		     h_check_fill(c.b[1].p + 16, len, 21));
	cr_assert_eq(c.b[1].p[16 + len], 0xee);
	n = zc_frames() - before;
	/* 17 packets; at most 2 boundaries cut one each; the last is 100 bytes */
	cr_assert(n >= 14 && n <= 16, "SEND: %" PRIu64 " zero-copy frames", n);

	/* READ: the responses are sent from the responder's MR (qp[1]'s b[1]) */
	h_fill(c.b[1].p + 5, len, 22);
	memset(c.b[0].p, 0xee, LEN);
	w = h_wqe(3, DROCE_WR_RDMA_READ, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &c.b[0], 1, len);
	w.remote_addr = h_va(&c.b[1], 5);
	w.rkey = c.b[1].mr.rkey;
	before = zc_frames();
	h_post_send(c.p.qp[0], &w);
	e = h_poll1(c.p.scq[0], POLL_MS, "READ");
	cr_assert_eq(e.status, DROCE_WC_SUCCESS);
	cr_assert_eq(h_check_fill(c.b[0].p + 1, len, 22), -1, "READ: byte %ld wrong",
		     h_check_fill(c.b[0].p + 1, len, 22));
	cr_assert_eq(c.b[0].p[0], 0xee);
	cr_assert_eq(c.b[0].p[1 + len], 0xee);
	n = zc_frames() - before;
	cr_assert_eq(n, 16, "READ: %" PRIu64 " zero-copy responses (16 full ones expected)", n);
}

static uint64_t
now_ms(void)
{
	return tc_now_ms();
}

/* The engine's view of @b's MR (co-located engines: read from the test thread). */
static struct droce_mr *
engine_mr(const struct h_buf *b)
{
	struct droce_mr *mr = (struct droce_mr *)(uintptr_t)droce_mr_lookup_lc(b->mr.lkey);

	cr_assert_not_null(mr);
	return mr;
}

/* Every frame port0 sends waits @us in its impaired link (0: no impairment). */
static void
delay_port0(uint32_t us)
{
	struct droce_impair_config ic = { .delay = us ? 1.0 : 0, .delay_us = us, .seed = 1,
					  .dir = DROCE_IMPAIR_DIR_TX };

	cr_assert_eq(droce_port_impair_set(droce_port_get(0), &ic), 0);
}

/* Posts a 64 KiB WRITE b[0] -> b[1] and drives the engines until all of its
 * frames are built (zero-copy) and wait in port0's delay line. */
static void
post_held_write(struct zc *c, uint32_t seed)
{
	struct droce_wqe w = h_wqe(seed, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	uint64_t before = zc_frames(), t0;

	h_fill(c->b[0].p, 65536, seed);
	memset(c->b[1].p, 0xee, 65536);
	h_wqe_sge(&w, &c->b[0], 0, 65536);
	w.remote_addr = h_va(&c->b[1], 0);
	w.rkey = c->b[1].mr.rkey;
	h_post_send(c->p.qp[0], &w);
	for (t0 = now_ms(); zc_frames() - before < 16 && now_ms() - t0 < 5000;)
		h_spin(1);
	cr_assert_eq(zc_frames() - before, 16, "frames built zero-copy");
	cr_assert_eq(__atomic_load_n(&engine_mr(&c->b[0])->zc_refs, __ATOMIC_ACQUIRE), 16,
		     "every frame holds the MR");
}

Test(zcopy, dereg_waits_for_frames_in_flight)
{
	struct zc c;
	struct droce_mr *mr;
	struct droce_cqe e;
	uint64_t t0, waited;

	/* the ACK timeout (4.3 s) outlasts the 200 ms delay: nothing is re-sent */
	setup(&c, 4096, NULL, 20);
	delay_port0(200 * 1000);
	post_held_write(&c, 31);
	mr = engine_mr(&c.b[0]);
	t0 = now_ms();
	cr_assert_eq(droce_mr_unregister(mr), 0);
	waited = now_ms() - t0;
	cr_assert_eq(__atomic_load_n(&mr->zc_refs, __ATOMIC_ACQUIRE), 0);
	/* the frames were delivered from the buffer before it returned */
	cr_assert(waited >= 100, "deregistration returned after %" PRIu64 " ms, frames held 200", waited);
	cr_assert_eq(h_check_fill(c.b[1].p, 65536, 31), -1, "bytes delivered: byte %ld wrong",
		     h_check_fill(c.b[1].p, 65536, 31));
	/* the application may now reuse and free its memory: nothing reads it */
	memset(c.b[0].p, 0x55, 65536);
	h_buf_free(&c.b[0]); /* unregisters (again: a no-op now) and frees it */
	e = h_poll1(c.p.scq[0], POLL_MS, "WRITE");
	cr_assert_eq(e.status, DROCE_WC_SUCCESS, "status %u", e.status);
	h_spin(50);
	cr_assert_eq(h_check_fill(c.b[1].p, 65536, 31), -1, "bytes changed after the free");
}

Test(zcopy, dereg_ebusy_while_port_stalls)
{
	struct zc c;
	struct droce_mr *mr;
	struct droce_cqe e;
	uint64_t t0, waited;

	setup(&c, 4096, NULL, 0);
	/* frames held 400 ms, deregistration waits 100 ms at most (a stalled
	 * port); the RC timeout (16.8 ms x 7 retries) is shorter than the
	 * stall, so this WRITE ends in a retry error: only the memory matters */
	droce_mr_drain_ms = 100;
	delay_port0(400 * 1000);
	post_held_write(&c, 41);
	mr = engine_mr(&c.b[0]);
	t0 = now_ms();
	cr_assert_eq(droce_mr_unregister(mr), EBUSY);
	waited = now_ms() - t0;
	cr_assert(waited >= 99, "EBUSY after %" PRIu64 " ms", waited);
	cr_assert_gt(__atomic_load_n(&mr->zc_refs, __ATOMIC_ACQUIRE), 0);
	cr_assert_null(droce_mr_lookup_lc(c.b[0].mr.lkey), "the key is gone after EBUSY");
	/* a later attempt succeeds once the delay line lets them go */
	droce_mr_drain_ms = DROCE_MR_DRAIN_MS;
	cr_assert_eq(droce_mr_unregister(mr), 0);
	cr_assert_eq(__atomic_load_n(&mr->zc_refs, __ATOMIC_ACQUIRE), 0);
	delay_port0(0);
	h_buf_free(&c.b[0]);
	e = h_poll1(c.p.scq[0], POLL_MS, "WRITE");
	cr_assert_neq(e.status, DROCE_WC_SUCCESS, "a 400 ms stall outlives the retries");
}

static void
expect_copied(const char *port_extra, bool strip_multi_seg)
{
	struct zc c;
	uint64_t n;

	setup(&c, 4096, port_extra, 0);
	if (strip_multi_seg) {
		/* what port.c makes of a PMD without RTE_ETH_TX_OFFLOAD_MULTI_SEGS */
		for (unsigned int i = 0; i < 2; i++) {
			struct droce_port *p = droce_port_get(i);

			p->offloads &= ~(uint32_t)DROCE_PORT_OFFLOAD_TX_MULTI_SEG;
			p->zc_min = droce_port_zc_min(p->offloads, p->cfg->zero_copy);
		}
	} else {
		cr_assert(droce_port_offloads(droce_port_get(0)) & DROCE_PORT_OFFLOAD_TX_MULTI_SEG);
	}
	n = write_checked(&c, 65536, 0, 8, 51);
	cr_assert_eq(n, 0, "%" PRIu64 " frames went zero-copy", n);
	n = write_checked(&c, 5 * 4096 + 7, 3, 1, 52);
	cr_assert_eq(n, 0, "%" PRIu64 " frames went zero-copy", n);
}

Test(zcopy, port_without_multi_seg_copies)
{
	cr_assert_eq(droce_port_zc_min(0, 1024), UINT32_MAX);
	cr_assert_eq(droce_port_zc_min(DROCE_PORT_OFFLOAD_TX_MULTI_SEG, 1024), 1024);
	cr_assert_eq(droce_port_zc_min(DROCE_PORT_OFFLOAD_TX_MULTI_SEG, 0), UINT32_MAX);
	expect_copied(NULL, true);
}

Test(zcopy, zero_copy_0_copies)
{
	expect_copied("zero_copy = 0", false);
}
