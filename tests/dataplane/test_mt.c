/* SPDX-License-Identifier: BSD-3-Clause
 * Several threads on one CQ and one engine at once (issue 12 §1): poster
 * threads, each on its own QP, post signaled RDMA WRITEs whose completions
 * all go to ONE send CQ; poller threads poll that CQ at the same time (as
 * rdma-core allows); a churn thread creates, modifies and destroys QPs all
 * the while (the engine's QP table grows and shrinks under the traffic).
 * Every completion must come out exactly once, with success, and every WRITE
 * must have put its bytes in the target.  Co-located engines driven by the
 * pollers and the fallback thread; one engine, then two (two CQ sub-rings).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(mt, .fini = h_stop, .timeout = 180);

#define POSTERS 4
#define POLLERS 3
#define PER_POSTER 3000
#define LEN 64
#define SQ 64

struct mt {
	struct h_pair pair[POSTERS];
	struct droce_cq *scq0;
	struct h_buf lb, rb;
	_Atomic uint8_t seen[POSTERS][PER_POSTER];
	_Atomic unsigned int done;       /* completions polled */
	_Atomic unsigned int polled[POSTERS]; /* ... of each poster's QP */
	_Atomic unsigned int first_bad;  /* status << 8 | opcode of the first bad one, + 1 */
	_Atomic unsigned int bad_status, bad_wrid, dup;
	_Atomic unsigned int posted_enomem; /* posts that found the SQ full (retried) */
	_Atomic unsigned int post_errors;
	_Atomic unsigned int churned, churn_errors;
	_Atomic unsigned int churn_first; /* (step << 16 | errno) + 1 of the first error: 1 create, 2 modify, 3 destroy */
	_Atomic bool churning; /* the churn thread has created its first QP: posters start */
	_Atomic bool stop;
	uint64_t deadline_ms;
};

static struct mt *g;

struct poster_arg {
	unsigned int t;
};

static void *
poster_main(void *arg)
{
	unsigned int t = ((struct poster_arg *)arg)->t;
	struct droce_qp *qp = g->pair[t].qp[0];

	/* the table must churn under the traffic: on a loaded machine the posters
	 * could otherwise finish before the churn thread first runs */
	while (!atomic_load(&g->churning) && tc_now_ms() <= g->deadline_ms)
		sched_yield();
	for (unsigned int i = 0; i < PER_POSTER && !atomic_load(&g->stop); i++) {
		size_t off = ((size_t)t * PER_POSTER + i) * LEN;
		struct droce_wqe w = h_wqe((uint64_t)t << 32 | i, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
		int rc;

		w.sge[0].addr = h_va(&g->lb, off);
		w.sge[0].length = LEN;
		w.sge[0].lkey = g->lb.mr.lkey;
		w.num_sge = 1;
		w.length = LEN;
		w.remote_addr = h_va(&g->rb, off);
		w.rkey = g->rb.mr.rkey;
		/* as an application must: no more WQEs outstanding than the CQ share
		 * holds (a slot frees when its CQE is pushed, not when it is polled) */
		while (i - atomic_load(&g->polled[t]) >= SQ) {
			if (atomic_load(&g->stop) || tc_now_ms() > g->deadline_ms)
				return NULL;
			sched_yield();
		}
		while ((rc = droce_qp_post_send(qp, &w)) == ENOMEM) {
			/* SQ full until the engine retires WQEs */
			atomic_fetch_add(&g->posted_enomem, 1);
			if (atomic_load(&g->stop) || tc_now_ms() > g->deadline_ms)
				return NULL;
			sched_yield();
		}
		if (rc != 0)
			atomic_fetch_add(&g->post_errors, 1);
	}
	return NULL;
}

static void *
poller_main(void *arg)
{
	struct droce_cqe c[16];

	RTE_SET_USED(arg);
	while (atomic_load(&g->done) < POSTERS * PER_POSTER && !atomic_load(&g->stop) &&
	       tc_now_ms() <= g->deadline_ms) {
		int k = droce_cq_poll(g->scq0, 16, c);

		for (int i = 0; i < k; i++) {
			uint32_t t = (uint32_t)(c[i].wr_id >> 32), n = (uint32_t)c[i].wr_id;

			if (c[i].status != DROCE_WC_SUCCESS || c[i].opcode != DROCE_WC_RDMA_WRITE) {
				unsigned int none = 0;

				atomic_fetch_add(&g->bad_status, 1);
				atomic_compare_exchange_strong(&g->first_bad, &none,
							       (c[i].status << 8 | c[i].opcode) + 1);
			}
			if (t >= POSTERS || n >= PER_POSTER || c[i].qp_num != g->pair[t].qpn[0]) {
				atomic_fetch_add(&g->bad_wrid, 1);
				continue;
			}
			if (atomic_fetch_add(&g->seen[t][n], 1) != 0)
				atomic_fetch_add(&g->dup, 1);
			atomic_fetch_add(&g->polled[t], 1);
		}
		if (k > 0)
			atomic_fetch_add(&g->done, (unsigned int)k);
		else
			sched_yield();
	}
	return NULL;
}

static void
churn_error(unsigned int step, int err)
{
	unsigned int none = 0;

	atomic_fetch_add(&g->churn_errors, 1);
	atomic_compare_exchange_strong(&g->churn_first, &none, (step << 16 | (unsigned int)err) + 1);
}

/* Creates QPs on the spare CQ, moves them to INIT and back, destroys them. */
static void *
churn_main(void *arg)
{
	struct droce_cq *cq = arg;
	struct droce_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				      .max_recv_sge = 1 };

	while (!atomic_load(&g->stop)) {
		struct droce_qp *q[8];
		unsigned int n = 0;

		for (unsigned int i = 0; i < 8; i++) {
			struct droce_qp_mod m = { .mask = DROCE_QPM_STATE | DROCE_QPM_PORT |
							  DROCE_QPM_PKEY_INDEX | DROCE_QPM_ACCESS_FLAGS,
						  .state = DROCE_QPS_INIT, .port = 1 };

			q[n] = droce_qp_create(DROCE_QPT_RC, &caps, cq, cq, H_PD, i & 1);
			if (q[n] == NULL) {
				churn_error(1, errno);
				continue;
			}
			atomic_store(&g->churning, true);
			if (droce_qp_modify(q[n], &m) != 0)
				churn_error(2, errno);
			n++;
		}
		for (unsigned int i = 0; i < n; i++)
			if (droce_qp_destroy(q[i]) != 0)
				churn_error(3, errno);
		atomic_fetch_add(&g->churned, n);
	}
	return NULL;
}

static void
run(unsigned int engines)
{
	struct h_cfg cfg = { .engines = engines };
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_cq *rcq0, *scq1, *rcq1, *spare;
	pthread_t posters[POSTERS], pollers[POLLERS], churn;
	struct poster_arg pa[POSTERS];
	size_t len = (size_t)POSTERS * PER_POSTER * LEN;
	unsigned int missing = 0;
	uint64_t t0;

	h_start(&cfg, false);
	g = calloc(1, sizeof(*g));
	cr_assert_not_null(g);
	h_buf_init(&g->lb, len, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&g->rb, len, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	h_fill(g->lb.p, len, 42);
	memset(g->rb.p, 0, len);
	/* room for every WQE the posters can have outstanding: nothing may overrun */
	g->scq0 = h_cq_create(POSTERS * SQ);
	rcq0 = h_cq_create(64);
	scq1 = h_cq_create(64);
	rcq1 = h_cq_create(64);
	spare = h_cq_create(64);
	for (unsigned int t = 0; t < POSTERS; t++) {
		h_pair_create(&g->pair[t], SQ, 4, g->scq0, rcq0, scq1, rcq1);
		h_pair_connect(&g->pair[t], &o);
	}
	g->deadline_ms = tc_now_ms() + 60000;
	t0 = tc_now_ms();
	cr_assert_eq(pthread_create(&churn, NULL, churn_main, spare), 0);
	for (unsigned int i = 0; i < POLLERS; i++)
		cr_assert_eq(pthread_create(&pollers[i], NULL, poller_main, NULL), 0);
	for (unsigned int t = 0; t < POSTERS; t++) {
		pa[t].t = t;
		cr_assert_eq(pthread_create(&posters[t], NULL, poster_main, &pa[t]), 0);
	}
	for (unsigned int t = 0; t < POSTERS; t++)
		pthread_join(posters[t], NULL);
	for (unsigned int i = 0; i < POLLERS; i++)
		pthread_join(pollers[i], NULL);
	atomic_store(&g->stop, true);
	pthread_join(churn, NULL);

	for (unsigned int t = 0; t < POSTERS; t++)
		for (unsigned int n = 0; n < PER_POSTER; n++)
			missing += atomic_load(&g->seen[t][n]) == 0;
	cr_log_info("%u engine(s): %u completions by %d pollers in %" PRIu64 " ms, %u QPs churned, "
		    "%u posts found the SQ full",
		    engines, atomic_load(&g->done), POLLERS, tc_now_ms() - t0, atomic_load(&g->churned),
		    atomic_load(&g->posted_enomem));
	cr_assert_eq(atomic_load(&g->post_errors), 0);
	cr_assert_eq(atomic_load(&g->bad_status), 0,
		     "%u completions with an error (first: status %u opcode %u)",
		     atomic_load(&g->bad_status), (atomic_load(&g->first_bad) - 1) >> 8,
		     (atomic_load(&g->first_bad) - 1) & 0xff);
	cr_assert_eq(atomic_load(&g->bad_wrid), 0, "%u completions with a wr_id never posted",
		     atomic_load(&g->bad_wrid));
	cr_assert_eq(atomic_load(&g->dup), 0, "%u completions polled twice", atomic_load(&g->dup));
	cr_assert_eq(missing, 0, "%u completions never polled", missing);
	cr_assert_eq(atomic_load(&g->done), POSTERS * PER_POSTER);
	cr_assert_eq(memcmp(g->rb.p, g->lb.p, len), 0, "target bytes differ from the source");
	cr_assert_eq(atomic_load(&g->churn_errors), 0,
		     "%u churn errors, the first at step %u (1 create, 2 modify, 3 destroy), errno %u",
		     atomic_load(&g->churn_errors), (atomic_load(&g->churn_first) - 1) >> 16,
		     (atomic_load(&g->churn_first) - 1) & 0xffff);
	cr_assert_gt(atomic_load(&g->churned), 0, "the churn thread created no QP");
	for (unsigned int t = 0; t < POSTERS; t++)
		cr_assert_eq(h_qp_state(g->pair[t].qp[0]), DROCE_QPS_RTS);
	free(g);
	g = NULL;
}

Test(mt, pollers_posters_and_qp_churn_one_engine)
{
	run(1);
}

Test(mt, pollers_posters_and_qp_churn_two_engines)
{
	run(2);
}
