/* SPDX-License-Identifier: BSD-3-Clause
 * Progress while nobody polls (co-located engines): threads blocked in
 * ibv_get_cq_event, a passive RDMA WRITE target, an engine whose first driver
 * exited, and the fallback thread handing the engine back to pollers.  Each
 * Criterion test forks and starts droce from a config text: ring pair droce0
 * 198.18.0.1 <-> droce1 198.18.0.2, one co-located engine, default fallback_us.
 * Suite progress has wait_spin_us = 0 (a blocked thread sleeps at once: the
 * fallback thread alone drives); suite progress_spin has no fallback thread
 * and the default wait_spin_us (a blocked thread drives the engines itself);
 * suite progress_owed has both at their defaults (events made inside an
 * application thread's own verb calls: handed over in memory or the pipe).
 * Threading: each test runs its own threads; every wait is bounded by the
 * Criterion timeout or an explicit deadline.
 * Over 800 lines because its four suites share the two ends, their start and
 * the send / receive / wait helpers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include "dataplane/engine.h"

#include <droce/droce.h>

#include "env.h"

#include "dataplane/dp.h"

#define BUF_SIZE (1u << 20)

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *sch, *rch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static struct end A, B;

static void
start(const struct tc_pair *o)
{
	char text[4096];
	struct droce_config cfg;

	cr_assert_gt(tc_pair_config(text, sizeof(text), o), 0);
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<progress test>", text, &cfg), 0, "config: %s",
		     droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "droce_start_config: %s", droce_last_error());
}

static void
open_end(struct end *e, const char *name)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 256, .max_recv_wr = 512, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	memset(e, 0, sizeof(*e));
	e->ctx = tc_open(name, &e->gid);
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf = calloc(1, BUF_SIZE);
	cr_assert(e->pd && e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	e->sch = ibv_create_comp_channel(e->ctx);
	e->rch = ibv_create_comp_channel(e->ctx);
	cr_assert(e->mr && e->sch && e->rch);
	e->scq = ibv_create_cq(e->ctx, 1024, NULL, e->sch, 0);
	e->rcq = ibv_create_cq(e->ctx, 1024, NULL, e->rch, 0);
	cr_assert(e->scq && e->rcq);
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	e->qp = ibv_create_qp(e->pd, &ia);
	cr_assert_not_null(e->qp, "ibv_create_qp: %s", strerror(errno));
}

static void
rc_up(struct end *e, const struct end *peer)
{
	struct tc_conn c = { .dgid = peer->gid, .dest_qpn = peer->qp->qp_num, .psn = 100,
			     .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .rd_atomic = 1,
			     .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	tc_qp_up(e->qp, &c);
}

static void
setup_ends(void)
{
	open_end(&A, "droce0");
	open_end(&B, "droce1");
	rc_up(&A, &B);
	rc_up(&B, &A);
}

/* The fallback thread at its default delay; blocked threads never spin. */
static void
setup(void)
{
	const struct tc_pair o = { .engines_extra = "wait_spin_us = 0" };

	start(&o);
	setup_ends();
}

/* No fallback thread; blocked threads spin (for up to 100 ms: a loaded
 * machine may take the CPU from the test for milliseconds, and a spin that
 * ran out would sleep for ever with nobody to drive the engines). */
static void
setup_spin(void)
{
	const struct tc_pair o = { .fallback_us = -1, .engines_extra = "wait_spin_us = 100000" };

	start(&o);
	setup_ends();
}

/* Blocks in ibv_get_cq_event until @cq has a completion, then takes up to @n
 * (the rdma-core pattern: arm, poll, wait, ack, re-arm). */
static int
wait_event(struct ibv_cq *cq, struct ibv_comp_channel *ch, struct ibv_wc *wc, int n)
{
	for (;;) {
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int k;

		cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
		k = ibv_poll_cq(cq, n, wc);
		cr_assert_geq(k, 0);
		if (k > 0)
			return k;
		cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0, "ibv_get_cq_event: %s",
			     strerror(errno));
		cr_assert_eq(ev_cq, cq);
		ibv_ack_cq_events(ev_cq, 1);
	}
}

/* Busy-polls @cq for up to @ms; returns what came (0 on timeout). */
static int
poll_for(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int ms)
{
	uint64_t end = tc_now_ms() + ms;

	for (;;) {
		int k = ibv_poll_cq(cq, n, wc);

		cr_assert_geq(k, 0);
		if (k > 0 || tc_now_ms() > end)
			return k;
	}
}

static void
fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

static int
post_send(struct end *e, uint64_t id, enum ibv_wr_opcode op, size_t off, uint32_t len,
	  uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm) }, *bad;

	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	return ibv_post_send(e->qp, &w, &bad);
}

static int
post_recv(struct end *e, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(e->qp, &w, &bad);
}

TestSuite(progress, .init = setup, .fini = tc_stop, .timeout = 60);

/* ---- both sides blocked in ibv_get_cq_event ---- */

#define MSG_LEN 3000u

static void *
blocked_server(void *arg)
{
	struct ibv_wc wc;

	(void)arg;
	cr_assert_eq(wait_event(B.rcq, B.rch, &wc, 1), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "recv status %d", wc.status);
	cr_assert_eq(wc.wr_id, 7u);
	cr_assert_eq(wc.byte_len, MSG_LEN);
	return NULL;
}

static void *
blocked_client(void *arg)
{
	struct ibv_wc wc;

	(void)arg;
	fill(A.buf, MSG_LEN, 1);
	cr_assert_eq(post_send(&A, 9, IBV_WR_SEND, 0, MSG_LEN, 0, 0, 0), 0);
	cr_assert_eq(wait_event(A.scq, A.sch, &wc, 1), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "send status %d", wc.status);
	cr_assert_eq(wc.wr_id, 9u);
	return NULL;
}

Test(progress, send_between_threads_blocked_in_get_cq_event)
{
	pthread_t s, c;
	uint8_t want[MSG_LEN];

	cr_assert_eq(post_recv(&B, 7, 4096, MSG_LEN), 0);
	cr_assert_eq(pthread_create(&s, NULL, blocked_server, NULL), 0);
	usleep(20000); /* the server is asleep in read() before anything is sent */
	cr_assert_eq(pthread_create(&c, NULL, blocked_client, NULL), 0);
	cr_assert_eq(pthread_join(c, NULL), 0);
	cr_assert_eq(pthread_join(s, NULL), 0);
	fill(want, MSG_LEN, 1);
	cr_assert_arr_eq(B.buf + 4096, want, MSG_LEN);
	cr_assert_gt(droce_engines_fallback_passes(), 0);
}

/* ---- a passive WRITE target; the initiator blocks too ---- */

#define WRITE_LEN 200000u

static void *
write_initiator(void *arg)
{
	struct ibv_wc wc;

	(void)arg;
	fill(A.buf, WRITE_LEN, 2);
	cr_assert_eq(post_send(&A, 11, IBV_WR_RDMA_WRITE, 0, WRITE_LEN, (uintptr_t)B.buf + 64,
			       B.mr->rkey, 0), 0);
	cr_assert_eq(wait_event(A.scq, A.sch, &wc, 1), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "write status %d", wc.status);
	return NULL;
}

Test(progress, passive_write_target_never_polls)
{
	pthread_t t;
	uint8_t *want = malloc(WRITE_LEN);

	cr_assert_not_null(want);
	/* the target side (this thread) never polls or posts again: it sleeps */
	cr_assert_eq(pthread_create(&t, NULL, write_initiator, NULL), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	fill(want, WRITE_LEN, 2);
	cr_assert_arr_eq(B.buf + 64, want, WRITE_LEN);
	free(want);
}

/* ---- the first driver exits ---- */

static void *
drive_once_and_exit(void *arg)
{
	struct ibv_wc wc;

	(void)arg;
	cr_assert_eq(ibv_poll_cq(A.scq, 1, &wc), 0); /* drives the engine, then leaves */
	return NULL;
}

Test(progress, engine_keeps_progressing_after_its_first_driver_exits)
{
	pthread_t t;
	struct ibv_wc wc;
	uint8_t want[4096];

	cr_assert_eq(pthread_create(&t, NULL, drive_once_and_exit, NULL), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	for (uint32_t i = 0; i < 8; i++) {
		fill(A.buf, sizeof(want), 10 + i);
		cr_assert_eq(post_recv(&B, i, 8192, sizeof(want)), 0);
		cr_assert_eq(post_send(&A, i, IBV_WR_SEND, 0, sizeof(want), 0, 0, 0), 0);
		cr_assert_eq(poll_for(B.rcq, &wc, 1, 10000), 1, "message %u not received", i);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(poll_for(A.scq, &wc, 1, 10000), 1, "send %u not completed", i);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		fill(want, sizeof(want), 10 + i);
		cr_assert_arr_eq(B.buf + 8192, want, sizeof(want));
	}
}

/* ---- more short-lived posting threads than an engine has channels ---- */

struct poster {
	uint32_t i;
	int rc;
};

static void *
post_one_and_exit(void *arg)
{
	struct poster *p = arg;

	p->rc = post_send(&A, p->i, IBV_WR_SEND, (size_t)p->i * 64, 64, 0, 0, 0);
	return NULL;
}

Test(progress, short_lived_posting_threads_reuse_channels)
{
	const uint32_t n = 3 * DROCE_MAX_CHANNELS;
	uint8_t want[64];
	struct ibv_wc wc;

	for (uint32_t i = 0; i < n; i++) {
		struct poster p = { .i = i };
		pthread_t t;

		cr_assert_eq(post_recv(&B, i, 65536 + (size_t)i * 64, 64), 0);
		fill(A.buf + (size_t)i * 64, 64, i);
		cr_assert_eq(pthread_create(&t, NULL, post_one_and_exit, &p), 0);
		cr_assert_eq(pthread_join(t, NULL), 0);
		/* without reuse, thread 65 finds no free channel: ENOMEM */
		cr_assert_eq(p.rc, 0, "thread %u: ibv_post_send: %s", i, strerror(p.rc));
		cr_assert_eq(wait_event(A.scq, A.sch, &wc, 1), 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wait_event(B.rcq, B.rch, &wc, 1), 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, i);
		fill(want, 64, i);
		cr_assert_arr_eq(B.buf + 65536 + (size_t)i * 64, want, 64, "message %u differs", i);
	}
}

/* ---- fallback and pollers take turns: nothing lost or duplicated ---- */

#define TURNS_MSGS 20000u
#define TURNS_PHASE 500u  /* messages per phase; even phases poll, odd ones block */
#define TURNS_DEPTH 64u
#define TURNS_RQ 256u

static _Atomic uint32_t sends_done;

static void *
turns_sender(void *arg)
{
	uint32_t posted = 0, done = 0;
	struct ibv_wc wc[32];

	(void)arg;
	while (done < TURNS_MSGS) {
		bool block = (done / TURNS_PHASE) & 1;
		int k;

		while (posted < TURNS_MSGS && posted - done < TURNS_DEPTH) {
			cr_assert_eq(post_send(&A, posted, IBV_WR_SEND_WITH_IMM, (posted % 16) * 64, 64,
					       0, 0, posted), 0);
			posted++;
		}
		k = block ? wait_event(A.scq, A.sch, wc, 32) : poll_for(A.scq, wc, 32, 20000);
		cr_assert_gt(k, 0, "sender stalled at %u", done);
		for (int i = 0; i < k; i++) {
			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "send %u status %d", done,
				     wc[i].status);
			cr_assert_eq(wc[i].wr_id, done, "send completion out of order");
			done++;
		}
	}
	atomic_store(&sends_done, done);
	return NULL;
}

Test(progress, fallback_hands_back_no_completion_lost_or_duplicated)
{
	uint32_t got = 0;
	struct ibv_wc wc[32];
	pthread_t t;

	fill(A.buf, 1024, 5);
	for (uint32_t i = 0; i < TURNS_RQ; i++)
		cr_assert_eq(post_recv(&B, i, 65536 + (size_t)i * 64, 64), 0);
	cr_assert_eq(pthread_create(&t, NULL, turns_sender, NULL), 0);
	while (got < TURNS_MSGS) {
		bool block = (got / TURNS_PHASE) & 1;
		int k = block ? wait_event(B.rcq, B.rch, wc, 32) : poll_for(B.rcq, wc, 32, 20000);

		cr_assert_gt(k, 0, "receiver stalled at %u", got);
		for (int i = 0; i < k; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;

			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "recv %u status %d", got,
				     wc[i].status);
			cr_assert(wc[i].wc_flags & IBV_WC_WITH_IMM);
			cr_assert_eq(ntohl(wc[i].imm_data), got, "message %u arrived as %u", got,
				     ntohl(wc[i].imm_data));
			cr_assert_eq(slot, got % TURNS_RQ);
			/* the payload is the sender's 64-byte block (posted % 16) */
			cr_assert_arr_eq(B.buf + 65536 + (size_t)slot * 64, A.buf + (got % 16) * 64, 64);
			got++;
			cr_assert_eq(post_recv(&B, slot, 65536 + (size_t)slot * 64, 64), 0);
		}
	}
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(atomic_load(&sends_done), TURNS_MSGS);
	/* nothing more arrives: no duplicate */
	cr_assert_eq(poll_for(B.rcq, wc, 32, 200), 0);
	cr_assert_eq(poll_for(A.scq, wc, 32, 50), 0);
	cr_assert_gt(droce_engines_fallback_passes(), 0);
}

/* ---- [engines] fallback_us: parsed and validated like the other keys ---- */

static int
load_engines(const char *engines, struct droce_config *cfg)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "[eal]\nargs = --no-huge\n[engines]\n%s\n"
		 "[port0]\nkind = ring\npeer = port1\nipv4 = 198.18.0.1\n"
		 "[port1]\nkind = ring\npeer = port0\nipv4 = 198.18.0.2\n",
		 engines);
	return droce_config_load_text("<fallback_us test>", text, cfg);
}

Test(progress_config, fallback_us_key)
{
	struct droce_config cfg;

	cr_assert_eq(load_engines("mode = colocated", &cfg), 0, "%s", droce_last_error());
	cr_assert_eq(cfg.fallback_us, 50u);
	cr_assert_eq(load_engines("mode = colocated\nfallback_us = 0", &cfg), 0);
	cr_assert_eq(cfg.fallback_us, 0u);
	cr_assert_eq(load_engines("fallback_us = 1000000", &cfg), 0);
	cr_assert_eq(cfg.fallback_us, 1000000u);
	cr_assert_neq(load_engines("fallback_us = 1000001", &cfg), 0);
	cr_assert_not_null(strstr(droce_last_error(), "fallback_us"), "%s", droce_last_error());
	cr_assert_neq(load_engines("fallback_us = -1", &cfg), 0);
	cr_assert_neq(load_engines("fallback_us = 5us", &cfg), 0);
	cr_assert_neq(load_engines("mode = dedicated\nlcores = 1\nfallback_us = 10", &cfg), 0);
	cr_assert_not_null(strstr(droce_last_error(), "fallback_us"), "%s", droce_last_error());
}

/* ---- a thread blocked in ibv_get_cq_event drives the engines itself ---- */

TestSuite(progress_spin, .init = setup_spin, .fini = tc_stop, .timeout = 60);

/* Nobody else drives the engines (no fallback thread, no other thread): the
 * SEND leaves, arrives and completes on both sides only because the thread
 * waiting for its events drives the engines while it waits. */
Test(progress_spin, a_waiting_thread_alone_carries_its_traffic)
{
	struct ibv_wc wc;
	uint8_t want[MSG_LEN];

	cr_assert_eq(post_recv(&B, 21, 8192, MSG_LEN), 0);
	fill(A.buf, MSG_LEN, 5);
	cr_assert_eq(post_send(&A, 22, IBV_WR_SEND, 0, MSG_LEN, 0, 0, 0), 0);
	for (int i = 0; i < 50; i++) { /* 50 round trips, each through two events */
		cr_assert_eq(wait_event(B.rcq, B.rch, &wc, 1), 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "recv status %d", wc.status);
		cr_assert_eq(wc.wr_id, 21u);
		cr_assert_eq(wc.byte_len, MSG_LEN);
		cr_assert_eq(wait_event(A.scq, A.sch, &wc, 1), 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "send status %d", wc.status);
		cr_assert_eq(wc.wr_id, 22u);
		fill(want, MSG_LEN, 5 + (unsigned int)i);
		cr_assert_arr_eq(B.buf + 8192, want, MSG_LEN);
		if (i == 49)
			break;
		cr_assert_eq(post_recv(&B, 21, 8192, MSG_LEN), 0);
		fill(A.buf, MSG_LEN, 6 + (unsigned int)i);
		cr_assert_eq(post_send(&A, 22, IBV_WR_SEND, 0, MSG_LEN, 0, 0, 0), 0);
	}
	cr_assert_eq(droce_engines_fallback_passes(), 0);
}

/* A channel the program made non-blocking answers EAGAIN when no event
 * comes, after the spin, as rdma-core's does at once. */
Test(progress_spin, a_non_blocking_channel_still_says_eagain)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int fl = fcntl(B.rch->fd, F_GETFL);

	cr_assert_geq(fl, 0);
	cr_assert_eq(fcntl(B.rch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	cr_assert_eq(ibv_req_notify_cq(B.rcq, 0), 0);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		cr_assert_eq(ibv_get_cq_event(B.rch, &ev_cq, &ev_ctx), -1);
		cr_assert_eq(errno, EAGAIN, "errno %d", errno);
	}
	/* and an event that comes is still handed out */
	cr_assert_eq(post_recv(&B, 31, 0, 64), 0);
	cr_assert_eq(post_send(&A, 32, IBV_WR_SEND, 0, 64, 0, 0, 0), 0);
	for (int i = 0; i < 100000; i++) {
		if (ibv_get_cq_event(B.rch, &ev_cq, &ev_ctx) == 0)
			break;
		cr_assert_eq(errno, EAGAIN, "errno %d", errno);
	}
	cr_assert_eq(ev_cq, B.rcq);
	ibv_ack_cq_events(ev_cq, 1);
}

/* ---- a waiter spins while its traffic flows, past its budget ---- */

/* The fallback thread steps in only when a thread says it blocks (or after a
 * second without an application pass); blocked threads spin the default
 * wait_spin_us. */
static void
setup_lazy_fallback(void)
{
	const struct tc_pair o = { .fallback_us = 1000000 };

	start(&o);
	setup_ends();
}

TestSuite(progress_flow, .init = setup_lazy_fallback, .fini = tc_stop, .timeout = 60);

#define FLOW_WRITES 240u
#define FLOW_LEN (16u << 10)
#define FLOW_SLOTS 32u

/* 240 WRITEs of 16 KiB (milliseconds of traffic, far more than the 200 µs
 * budget) then a SEND, posted before anyone waits; the thread then waits for
 * the SEND's receive event.  It drives the engines all along, as a polling
 * thread would, because they have work: it never hands them to the fallback
 * thread to sleep (before, the spin ended 200 µs after the wait began and the
 * fallback thread carried the rest while the waiter slept).  The fallback
 * thread may be driving when the wait begins (a setup slower than
 * fallback_us, as under meson's MALLOC_PERTURB_): its pass, which may move the
 * whole SQ in hundreds of µs, is not a lull either. */
Test(progress_flow, a_waiter_keeps_driving_while_its_traffic_flows)
{
	struct ibv_wc wc;
	uint64_t blocks;

	fill(A.buf, FLOW_SLOTS * FLOW_LEN, 9);
	cr_assert_eq(post_recv(&B, 61, 0, 64), 0);
	cr_assert_eq(ibv_req_notify_cq(B.rcq, 0), 0);
	blocks = droce_engines_waiter_blocks();
	for (uint32_t i = 0; i < FLOW_WRITES; i++) {
		size_t off = (size_t)(i % FLOW_SLOTS) * FLOW_LEN;

		cr_assert_eq(post_send(&A, 100 + i, IBV_WR_RDMA_WRITE, off, FLOW_LEN,
				       (uintptr_t)B.buf + BUF_SIZE / 2 + off, B.mr->rkey, 0), 0);
	}
	cr_assert_eq(post_send(&A, 62, IBV_WR_SEND, 0, 64, 0, 0, 0), 0);
	cr_assert_eq(wait_event(B.rcq, B.rch, &wc, 1), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "recv status %d", wc.status);
	cr_assert_eq(wc.wr_id, 61u);
	cr_assert_eq(droce_engines_waiter_blocks() - blocks, 0,
		     "the waiter slept while its traffic flowed (%" PRIu64 " times; fallback passes %"
		     PRIu64 ")", droce_engines_waiter_blocks() - blocks, droce_engines_fallback_passes());
	cr_assert_arr_eq(B.buf + BUF_SIZE / 2, A.buf, FLOW_SLOTS * FLOW_LEN);
	for (uint32_t n = 0; n < FLOW_WRITES + 1;) { /* and every WRITE completed */
		struct ibv_wc w[32];
		int k = poll_for(A.scq, w, 32, 5000);

		cr_assert_gt(k, 0, "%u of %u send completions", n, FLOW_WRITES + 1);
		for (int j = 0; j < k; j++)
			cr_assert_eq(w[j].status, IBV_WC_SUCCESS, "send %" PRIu64 " status %d",
				     w[j].wr_id, w[j].status);
		n += (uint32_t)k;
	}
}

/* [engines] wait_spin_us: bounds, and co-located mode only. */
Test(progress_config, wait_spin_us_is_checked)
{
	char text[4096];
	struct droce_config cfg;
	struct tc_pair o = { .engines_extra = "wait_spin_us = 100000" };

	cr_assert_gt(tc_pair_config(text, sizeof(text), NULL), 0);
	cr_assert_eq(droce_config_load_text("<t>", text, &cfg), 0);
	cr_assert_eq(cfg.wait_spin_us, DROCE_WAIT_SPIN_US_DEFAULT);
	cr_assert_gt(tc_pair_config(text, sizeof(text), &o), 0);
	cr_assert_eq(droce_config_load_text("<t>", text, &cfg), 0, "%s", droce_last_error());
	cr_assert_eq(cfg.wait_spin_us, 100000u);
	o.engines_extra = "wait_spin_us = 100001";
	cr_assert_gt(tc_pair_config(text, sizeof(text), &o), 0);
	cr_assert_neq(droce_config_load_text("<t>", text, &cfg), 0);
	cr_assert_not_null(strstr(droce_last_error(), "wait_spin_us"), "%s", droce_last_error());
	o.engines_extra = "wait_spin_us = 10";
	o.lcores = "1";
	o.eal_extra = "-l 0-1";
	cr_assert_gt(tc_pair_config(text, sizeof(text), &o), 0);
	cr_assert_neq(droce_config_load_text("<t>", text, &cfg), 0);
	cr_assert_not_null(strstr(droce_last_error(), "colocated only"), "%s", droce_last_error());
}

/* ---- events made inside the application's own verb calls (issue 23 §4) ----
 *
 * A completion that arrives while a thread of the program drives the engines
 * in ibv_poll_cq is an event the program has not waited for yet: it is kept in
 * memory for its next ibv_get_cq_event, and still reaches a program that
 * waits on the channel's fd, or another thread asleep in ibv_get_cq_event,
 * exactly once.
 */

static void
setup_defaults(void)
{
	start(NULL);
	setup_ends();
}

TestSuite(progress_owed, .init = setup_defaults, .fini = tc_stop, .timeout = 60);

/* One SEND A -> B with B's receive CQ armed; the calling thread drives the
 * engines by polling A's send CQ until the SEND completed (B's receive
 * completion, and so its event, came before, inside that polling). */
static void
send_while_polling(uint32_t seed)
{
	struct ibv_wc wc;

	cr_assert_eq(ibv_req_notify_cq(B.rcq, 0), 0);
	cr_assert_eq(post_recv(&B, 40 + seed, 8192, MSG_LEN), 0);
	fill(A.buf, MSG_LEN, seed);
	cr_assert_eq(post_send(&A, 50 + seed, IBV_WR_SEND, 0, MSG_LEN, 0, 0, 0), 0);
	cr_assert_eq(poll_for(A.scq, &wc, 1, 5000), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "send status %d", wc.status);
}

/* The event and the completion, once each. */
static void
take_event_and_completion(uint32_t seed)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;
	uint8_t want[MSG_LEN];

	cr_assert_eq(ibv_get_cq_event(B.rch, &ev_cq, &ev_ctx), 0, "%s", strerror(errno));
	cr_assert_eq(ev_cq, B.rcq);
	ibv_ack_cq_events(ev_cq, 1);
	cr_assert_eq(ibv_poll_cq(B.rcq, 1, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 40u + seed);
	fill(want, MSG_LEN, seed);
	cr_assert_arr_eq(B.buf + 8192, want, MSG_LEN);
}

/* No second copy of an event already taken: armed again, no traffic, the fd
 * stays quiet and a non-blocking call says EAGAIN. */
static void
no_duplicate_event(void)
{
	struct pollfd pfd = { .fd = B.rch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int fl = fcntl(B.rch->fd, F_GETFL);

	cr_assert_eq(ibv_req_notify_cq(B.rcq, 0), 0);
	cr_assert_eq(poll(&pfd, 1, 20), 0, "a second event for one completion");
	cr_assert_eq(fcntl(B.rch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(ibv_get_cq_event(B.rch, &ev_cq, &ev_ctx), -1);
	cr_assert_eq(errno, EAGAIN, "errno %d", errno);
	cr_assert_eq(fcntl(B.rch->fd, F_SETFL, fl), 0);
}

Test(progress_owed, an_event_made_in_the_programs_own_poll_goes_to_its_next_get_cq_event)
{
	for (uint32_t i = 0; i < 20; i++) {
		send_while_polling(i);
		take_event_and_completion(i);
	}
	no_duplicate_event();
}

/* A program that waits in poll() on the fd (libfabric, event loops): the
 * event its own ibv_poll_cq made still makes the fd readable, every time. */
Test(progress_owed, a_program_waiting_on_the_fd_gets_events_made_in_its_own_polls)
{
	struct pollfd pfd = { .fd = B.rch->fd, .events = POLLIN };

	for (uint32_t i = 0; i < 20; i++) {
		send_while_polling(i);
		cr_assert_eq(poll(&pfd, 1, 5000), 1, "round %u: the fd never became readable", i);
		cr_assert(pfd.revents & POLLIN);
		take_event_and_completion(i);
	}
	no_duplicate_event();
}

static void *
owed_waiter(void *arg)
{
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx;

	(void)arg;
	if (ibv_get_cq_event(B.rch, &ev_cq, &ev_ctx) != 0)
		return NULL;
	ibv_ack_cq_events(ev_cq, 1);
	return ev_cq;
}

/* Another thread asleep in ibv_get_cq_event: the event made inside this
 * thread's poll must wake it, not wait in memory for a call of this thread. */
Test(progress_owed, a_thread_asleep_in_get_cq_event_is_woken_by_an_event_made_in_anothers_poll)
{
	for (uint32_t i = 0; i < 10; i++) {
		pthread_t t;
		void *got = NULL;
		struct ibv_wc wc;

		cr_assert_eq(ibv_req_notify_cq(B.rcq, 0), 0);
		cr_assert_eq(pthread_create(&t, NULL, owed_waiter, NULL), 0);
		usleep(5000); /* past its spin: asleep in read() */
		send_while_polling(i);
		cr_assert_eq(pthread_join(t, &got), 0);
		cr_assert_eq(got, (void *)B.rcq, "round %u: the waiter got %p", i, got);
		cr_assert_eq(ibv_poll_cq(B.rcq, 1, &wc), 1);
		cr_assert_eq(wc.wr_id, 40u + i);
	}
	no_duplicate_event();
}

/*
 * UCX's adaptive progress (ucp_worker.c, uct_ib_iface_pre_arm): an interface
 * nobody polls waits for its channel's fd in another thread's edge-triggered
 * epoll; when the fd fires, it polls its CQs, takes every event with
 * ibv_get_cq_event on the non-blocking fd until EAGAIN (an event taken means
 * "poll again"), arms its CQs, and waits for the fd again; meanwhile the
 * program's main thread drives the engines in its own polls of other CQs.  A
 * lost event leaves such an interface asleep for good (the dropin suite's Open
 * MPI cell once died so, UCX's UD endpoint timing out after 30 s).  Both of
 * the interface's CQs are on one channel, as UCX's; its QP answers each
 * message, so send completions come too.
 */
#define UCX_MSGS 4000u
#define UCX_STALL_MS 5000u

struct ucx_iface {
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	_Atomic uint32_t received, answered;
	_Atomic bool stop;
	_Atomic int err;
	uint64_t wakes;
};

/* polls both CQs, re-posts receives, answers each message; how many it took */
static int
ucx_iface_progress(struct end *e, struct ucx_iface *u)
{
	struct ibv_wc wc[16];
	int n, total = 0;

	while ((n = ibv_poll_cq(u->rcq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)e->buf + 65536, .length = 64,
					       .lkey = e->mr->lkey };
			struct ibv_recv_wr rw = { .wr_id = wc[i].wr_id, .sg_list = &sge, .num_sge = 1 },
					   *bad;
			struct ibv_send_wr sw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
					   *sbad;

			if (wc[i].status != IBV_WC_SUCCESS || ibv_post_recv(u->qp, &rw, &bad) != 0 ||
			    ibv_post_send(u->qp, &sw, &sbad) != 0)
				atomic_store(&u->err, 1);
		}
		atomic_fetch_add(&u->received, (uint32_t)n);
		total += n;
	}
	while ((n = ibv_poll_cq(u->scq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				atomic_store(&u->err, 2);
		total += n;
	}
	if (n < 0)
		atomic_store(&u->err, 3);
	return total;
}

/* uct_ib_iface_pre_arm: every event on the channel; how many */
static int
ucx_pre_arm(struct ucx_iface *u)
{
	struct ibv_cq *cq;
	void *ctx;
	int got = 0;

	while (ibv_get_cq_event(u->ch, &cq, &ctx) == 0) {
		if (cq != u->scq && cq != u->rcq)
			atomic_store(&u->err, 4);
		ibv_ack_cq_events(cq, 1);
		got++;
	}
	if (errno != EAGAIN)
		atomic_store(&u->err, 5);
	return got;
}

static void *
ucx_async_thread(void *arg)
{
	struct ucx_iface *u = arg;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, u->ch->fd, &ev) != 0) {
		atomic_store(&u->err, 6);
		return NULL;
	}
	while (!atomic_load(&u->stop)) {
		struct epoll_event got;

		if (epoll_wait(ep, &got, 1, 50) != 1)
			continue; /* no poll without an event: a lost one shows as a stall */
		u->wakes++;
		for (;;) { /* ucp_worker_iface_check_events_do, until armed */
			if (ucx_iface_progress(&B, u) > 0 || ucx_pre_arm(u) > 0)
				continue;
			/* and no poll after the arm, as UCX: a completion that came
			 * between the poll and the arm must make its event then */
			if (ibv_req_notify_cq(u->rcq, 0) != 0 || ibv_req_notify_cq(u->scq, 0) != 0)
				atomic_store(&u->err, 7);
			break;
		}
		ev.events = EPOLLIN | EPOLLET; /* ucs_async_modify_handler(fd, EVREAD) */
		if (epoll_ctl(ep, EPOLL_CTL_MOD, u->ch->fd, &ev) != 0)
			atomic_store(&u->err, 8);
	}
	close(ep);
	return NULL;
}

/*
 * perftest's `ib_send_lat -e`: post a signaled SEND, wait for the send CQ's
 * event, ack it and re-arm before polling (its ctx_notify_events), then
 * poll.  The event announced the completion still in the CQ: the re-arm
 * must raise no second one (the IBTA's "next completion"; rxe), or the next
 * wait returns at once, its poll finds nothing yet and the next post meets a
 * full one-deep send queue ("Couldn't post send: scnt=3" before the fix).  A
 * completion that came while the CQ was not armed still fires at the arm
 * (the UCX test below).
 */
Test(progress_owed, an_event_announces_its_completion_once)
{
	int fl = fcntl(A.sch->fd, F_GETFL);

	for (uint32_t i = 0; i < 16; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)B.buf + i * 64, .length = 64,
				       .lkey = B.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		cr_assert_eq(ibv_post_recv(B.qp, &rw, &bad), 0);
	}
	cr_assert_eq(ibv_req_notify_cq(A.scq, 0), 0);
	for (uint32_t i = 0; i < 8; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_cq *ecq;
		void *ectx;
		struct ibv_wc wc;
		int rc;

		cr_assert_eq(ibv_post_send(A.qp, &w, &bad), 0);
		cr_assert_eq(ibv_get_cq_event(A.sch, &ecq, &ectx), 0, "send %u: its event", i);
		cr_assert_eq(ecq, A.scq);
		ibv_ack_cq_events(ecq, 1);
		cr_assert_eq(ibv_req_notify_cq(A.scq, 0), 0);
		cr_assert_eq(fcntl(A.sch->fd, F_SETFL, fl | O_NONBLOCK), 0);
		errno = 0;
		rc = ibv_get_cq_event(A.sch, &ecq, &ectx);
		if (rc == 0)
			ibv_ack_cq_events(ecq, 1);
		cr_assert_eq(rc, -1, "send %u: a second event at the re-arm for the completion "
			     "the first one announced", i);
		cr_assert_eq(errno, EAGAIN, "send %u: %s", i, strerror(errno));
		cr_assert_eq(fcntl(A.sch->fd, F_SETFL, fl), 0);
		cr_assert_eq(ibv_poll_cq(A.scq, 1, &wc), 1, "send %u: the event's completion", i);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "send %u: %s", i, ibv_wc_status_str(wc.status));
		cr_assert_eq(wc.wr_id, i);
	}
}

Test(progress_owed, an_epoll_driven_interface_like_ucx_misses_no_event)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 512, .max_recv_wr = 512, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	static struct ucx_iface u;
	struct ibv_qp *sender;
	pthread_t t;
	uint64_t worst = 0;
	int fl;

	memset(&u, 0, sizeof(u));
	u.ch = ibv_create_comp_channel(B.ctx);
	cr_assert_not_null(u.ch);
	fl = fcntl(u.ch->fd, F_GETFL);
	cr_assert_eq(fcntl(u.ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	u.scq = ibv_create_cq(B.ctx, 1024, NULL, u.ch, 0);
	u.rcq = ibv_create_cq(B.ctx, 1024, NULL, u.ch, 0);
	cr_assert(u.scq && u.rcq);
	ia.send_cq = u.scq;
	ia.recv_cq = u.rcq;
	u.qp = ibv_create_qp(B.pd, &ia);
	ia.send_cq = A.scq;
	ia.recv_cq = A.rcq;
	sender = ibv_create_qp(A.pd, &ia);
	cr_assert(u.qp && sender);
	{
		struct tc_conn c = { .dgid = A.gid, .dest_qpn = sender->qp_num, .psn = 100,
				     .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .rd_atomic = 1 };
		struct tc_conn d = c;

		tc_qp_up(u.qp, &c);
		d.dgid = B.gid;
		d.dest_qpn = u.qp->qp_num;
		tc_qp_up(sender, &d);
	}
	for (uint32_t i = 0; i < 256; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)B.buf + 65536, .length = 64, .lkey = B.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
		struct ibv_sge asge = { .addr = (uintptr_t)A.buf + 131072 + i * 64, .length = 64,
					.lkey = A.mr->lkey };
		struct ibv_recv_wr arw = { .wr_id = i, .sg_list = &asge, .num_sge = 1 }, *abad;

		cr_assert_eq(ibv_post_recv(u.qp, &rw, &bad), 0);
		cr_assert_eq(ibv_post_recv(sender, &arw, &abad), 0);
	}
	cr_assert_eq(ibv_req_notify_cq(u.rcq, 0), 0);
	cr_assert_eq(ibv_req_notify_cq(u.scq, 0), 0);
	cr_assert_eq(pthread_create(&t, NULL, ucx_async_thread, &u), 0);

	/* the main thread: one message at a time, then its own polls (of A's
	 * CQs: the engines' passes that make B's completions) until B took it */
	srand(23);
	for (uint32_t i = 0; i < UCX_MSGS && atomic_load(&u.err) == 0; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)A.buf, .length = 64, .lkey = A.mr->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
		uint64_t t0 = tc_now_ms(), dt;
		struct ibv_wc wc[16];

		cr_assert_eq(ibv_post_send(sender, &w, &bad), 0);
		while (atomic_load(&u.received) <= i) {
			int n = ibv_poll_cq(A.scq, 16, wc);

			cr_assert_geq(n, 0);
			while ((n = ibv_poll_cq(A.rcq, 16, wc)) > 0) /* B's answers */
				for (int k = 0; k < n; k++) {
					struct ibv_sge s2 = { .addr = (uintptr_t)A.buf + 131072 +
								      wc[k].wr_id * 64,
							      .length = 64, .lkey = A.mr->lkey };
					struct ibv_recv_wr r2 = { .wr_id = wc[k].wr_id, .sg_list = &s2,
								  .num_sge = 1 }, *b2;

					cr_assert_eq(ibv_post_recv(sender, &r2, &b2), 0);
				}
			cr_assert_leq(tc_now_ms() - t0, UCX_STALL_MS,
				      "message %u: the interface was never woken (%u received, %llu wakes)",
				      i, atomic_load(&u.received), (unsigned long long)u.wakes);
		}
		dt = tc_now_ms() - t0;
		worst = dt > worst ? dt : worst;
		if (rand() % 4 == 0)
			usleep((useconds_t)(rand() % 300));
	}
	atomic_store(&u.stop, true);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(atomic_load(&u.err), 0, "interface error %d", atomic_load(&u.err));
	cr_assert_eq(atomic_load(&u.received), UCX_MSGS);
	cr_log_info("%u messages, %llu wakes, worst wait %llu ms", UCX_MSGS,
		    (unsigned long long)u.wakes, (unsigned long long)worst);
}

/* ---- droce_stop() alone: the engines stop before their ports go ---- */

Test(progress, droce_stop_alone_stops_the_engines_before_the_ports)
{
	/* traffic in flight, driven by the fallback thread */
	for (uint32_t i = 0; i < 64; i++) {
		cr_assert_eq(post_recv(&B, i, (size_t)i * 64, 64), 0);
		cr_assert_eq(post_send(&A, i, IBV_WR_SEND, (size_t)i * 64, 64, 0, 0, 0), 0);
	}
	cr_assert_gt(droce_engine_count(), 0u);
	droce_stop();
	cr_assert_eq(droce_engine_count(), 0u, "the engines still run over removed ports");
	cr_assert_not(droce_running());
}
