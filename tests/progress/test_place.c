/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the fallback thread runs (dataplane/engine_place.c, issue 23 §4):
 * while more threads are runnable than there are CPUs, it leaves the CPU of
 * the application thread that drives the engines, and gets its whole CPU
 * set back once the crowd is gone.  The crowd is made by spinner threads
 * (bounded in time); the application thread is the test's, pinned to one
 * CPU and polling a CQ.  Needs two CPUs or more (skipped otherwise).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>

#include "clock.h"
#include "env.h"
#include "proc.h"

#include "dataplane/dp.h"

#define SPIN_MAX_S 8 /* no spinner outlives this */

static atomic_bool spinners_stop;

static void *
spinner(void *arg)
{
	time_t end = time(NULL) + SPIN_MAX_S;

	(void)arg;
	while (!atomic_load_explicit(&spinners_stop, memory_order_relaxed) && time(NULL) < end)
		;
	return NULL;
}

/* Polls @cq (which drives the engines) until droce_place_avoided() is
 * @want, for at most @secs; true if it got there. */
static bool
poll_until_avoided(struct ibv_cq *cq, int want, unsigned int secs)
{
	uint64_t end = tc_now_ms() + secs * 1000;
	struct ibv_wc wc;

	while (tc_now_ms() < end) {
		(void)ibv_poll_cq(cq, 1, &wc);
		if (droce_place_avoided() == want)
			return true;
	}
	return false;
}

Test(progress_place, fallback_leaves_the_polling_threads_cpu_while_crowded, .timeout = 60)
{
	const struct tc_pair o = { 0 };
	char text[4096];
	struct droce_config cfg;
	cpu_set_t all, one, fb;
	int ncpu, first = -1, nspin;
	pthread_t th[64];
	struct ibv_context *ctx;
	struct ibv_cq *cq;
	union ibv_gid gid;
	pid_t tid;

	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	ncpu = CPU_COUNT(&all);
	if (ncpu < 2)
		cr_skip_test("one CPU: the fallback thread has nowhere else to go");
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &all))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);

	cr_assert_gt(tc_pair_config(text, sizeof(text), &o), 0);
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<place test>", text, &cfg), 0, "config: %s", droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "droce_start_config: %s", droce_last_error());
	ctx = tc_open("droce0", &gid);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert_not_null(cq);
	tid = tc_task_named("droce-fallback");
	cr_assert_neq(tid, 0, "no droce-fallback thread");

	/* the application thread on one CPU, and a crowd */
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	nspin = ncpu * 2 + 1 < 64 ? ncpu * 2 + 1 : 64;
	for (int i = 0; i < nspin; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, spinner, NULL), 0);
	bool left = poll_until_avoided(cq, first, SPIN_MAX_S - 2);

	if (left) {
		cr_assert_eq(sched_getaffinity(tid, sizeof(fb), &fb), 0);
		cr_expect(!CPU_ISSET(first, &fb), "the fallback thread may still run on CPU %d", first);
		cr_expect_eq(CPU_COUNT(&fb), ncpu - 1, "it keeps %d CPUs, not %d", CPU_COUNT(&fb), ncpu - 1);
	}
	atomic_store(&spinners_stop, true);
	for (int i = 0; i < nspin; i++)
		pthread_join(th[i], NULL);
	cr_assert(left, "crowded, the fallback thread never left CPU %d (avoided %d)", first,
		  droce_place_avoided());

	/* the crowd gone (only this thread polls): its whole set back */
	cr_assert(poll_until_avoided(cq, -1, 5), "still avoiding CPU %d", droce_place_avoided());
	cr_assert_eq(sched_getaffinity(tid, sizeof(fb), &fb), 0);
	cr_assert(CPU_EQUAL(&fb, &all), "its set has %d CPUs, not %d", CPU_COUNT(&fb), ncpu);

	ibv_destroy_cq(cq);
	ibv_close_device(ctx);
	droce_stop();
}
