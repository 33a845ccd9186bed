/* SPDX-License-Identifier: BSD-3-Clause
 * The co-located fallback progress thread ("droce-fallback").  It drives an
 * engine no application thread has driven for fallback_us (or at once when
 * one says it blocks: droce_engines_blocking), lets go at the end of its pass
 * as soon as an application thread wants the engine (`wanted`), and backs off
 * (spin, then sleeps growing to FALLBACK_SLEEP_MAX_US) while the engines are
 * idle.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "engine_internal.h"

/* The co-located fallback progress thread. */
#define FALLBACK_SPIN_US 200      /* keeps spinning this long after the last work */
#define FALLBACK_SLEEP_MAX_US 1000 /* then sleeps 1, 2, 4 ... µs up to this */
#define FALLBACK_PASSES 256       /* passes per take before it looks around again */
#define FALLBACK_LATE_US 30       /* off the CPU this much longer than it asked: crowded */
#define FALLBACK_CROWDED_MS 100   /* then no spinning for this long */
#define FALLBACK_SLACK_NS 1000    /* timer slack of its sleeps (the default is 50 µs) */
static struct {
	bool running;
	pthread_t tid;
	_Atomic bool stop;
	_Atomic bool sleeping;
	bool kick;
	uint64_t after_tsc;       /* fallback_us in TSC cycles */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	_Atomic uint64_t passes;  /* passes it ran (tests, stats) */
} fallback = { .lock = PTHREAD_MUTEX_INITIALIZER };
static void (*_Atomic fallback_hook)(void); /* droce_engines_set_fallback_hook */

void
droce_engines_set_fallback_hook(void (*fn)(void))
{
	atomic_store(&fallback_hook, fn);
}

bool
droce_engines_fallback_on(void)
{
	return fallback.running;
}

/* Drives every engine no application thread drove for fallback_us; true if any
 * of them had work. */
static bool
fallback_round(void)
{
	uint64_t now = rte_rdtsc();
	bool busy = false;

	for (unsigned int e = 0; e < droce_engines.n; e++) {
		struct droce_engine *eng = droce_engines.eng[e];
		uint64_t app = atomic_load_explicit(&eng->app_tsc, memory_order_relaxed);

		if ((int64_t)(now - app) < (int64_t)fallback.after_tsc)
			continue;
		if (!droce_engine_take(eng))
			continue;
		/* a stale wish (an application thread that met another one) would keep
		 * the engine undriven: it is renewed by the next failed attempt */
		if (atomic_load_explicit(&eng->wanted, memory_order_relaxed))
			atomic_store_explicit(&eng->wanted, false, memory_order_relaxed);
		rte_rcu_qsbr_thread_online(droce_engines.rcu, e);
		for (unsigned int i = 0; i < FALLBACK_PASSES; i++) {
			bool b = droce_engine_pass_lc(eng);

			busy |= b;
			atomic_fetch_add_explicit(&fallback.passes, 1, memory_order_relaxed);
			if (!b || atomic_load_explicit(&eng->wanted, memory_order_relaxed) ||
			    atomic_load_explicit(&fallback.stop, memory_order_relaxed))
				break;
		}
		rte_rcu_qsbr_thread_offline(droce_engines.rcu, e);
		droce_engine_give(eng);
	}
	return busy;
}

/*
 * Spin or sleep.  After work the thread spins FALLBACK_SPIN_US for the next
 * frame, unless the CPUs are crowded: then the spin only takes a CPU from a
 * thread that needs it (an application spinning on its buffer, the peer
 * process's threads on a small machine) and delays the very frames it waits
 * for by the scheduler's time slice.  Crowding shows, without a system call,
 * as the thread being off the CPU when it did not ask to be: a gap between two
 * spin iterations, or a sleep that ends FALLBACK_LATE_US after its deadline.
 * Then it sleeps at once after work (in short, precise steps: its timer slack
 * is FALLBACK_SLACK_NS) for FALLBACK_CROWDED_MS, and tries spinning again.
 */
static void *
fallback_main(void *arg)
{
	uint64_t hz = rte_get_tsc_hz(), idle_since = rte_rdtsc(), last = idle_since;
	uint64_t late = hz / 1000000 * FALLBACK_LATE_US, spin = hz / 1000000 * FALLBACK_SPIN_US;
	uint64_t crowded_until = 0;
	unsigned int sleep_us = 0;
	bool registered = rte_thread_register() == 0; /* a mempool cache of its own */

	RTE_SET_USED(arg);
	(void)prctl(PR_SET_TIMERSLACK, (unsigned long)FALLBACK_SLACK_NS, 0, 0, 0);
	while (!atomic_load_explicit(&fallback.stop, memory_order_relaxed)) {
		uint64_t now = rte_rdtsc();
		void (*hook)(void) = atomic_load_explicit(&fallback_hook, memory_order_acquire);
		struct timespec ts;

		if (hook != NULL)
			hook();
		if ((int64_t)(now - last) > (int64_t)late)
			crowded_until = now + hz / 1000 * FALLBACK_CROWDED_MS;
		last = now;
		if (fallback_round()) {
			idle_since = now;
			sleep_us = 0;
			last = rte_rdtsc();
			continue;
		}
		if (now - idle_since < spin && (int64_t)(now - crowded_until) > 0) {
			rte_pause();
			continue;
		}
		/* idle: sleep in growing steps, woken early by droce_engines_blocking */
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, (unsigned int)FALLBACK_SLEEP_MAX_US) : 1;
		last += hz / 1000000 * sleep_us; /* the deadline: later than it is crowding */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)sleep_us * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&fallback.lock);
		atomic_store(&fallback.sleeping, true);
		while (!fallback.kick && !atomic_load(&fallback.stop) &&
		       pthread_cond_timedwait(&fallback.cond, &fallback.lock, &ts) == 0)
			;
		if (fallback.kick) {
			fallback.kick = false;
			sleep_us = 0;
			idle_since = rte_rdtsc();
		}
		atomic_store(&fallback.sleeping, false);
		pthread_mutex_unlock(&fallback.lock);
	}
	if (registered)
		rte_thread_unregister();
	return NULL;
}

int
droce_engine_fallback_start(uint32_t us)
{
	pthread_condattr_t ca;
	int rc;

	fallback.after_tsc = rte_get_tsc_hz() / 1000000 * us;
	atomic_store(&fallback.stop, false);
	fallback.kick = false;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fallback.cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&fallback.tid, NULL, fallback_main, NULL);
	if (rc != 0) {
		pthread_cond_destroy(&fallback.cond);
		return rc;
	}
	pthread_setname_np(fallback.tid, "droce-fallback");
	fallback.running = true;
	return 0;
}

void
droce_engine_fallback_stop(void)
{
	if (!fallback.running)
		return;
	pthread_mutex_lock(&fallback.lock);
	atomic_store(&fallback.stop, true);
	pthread_cond_signal(&fallback.cond);
	pthread_mutex_unlock(&fallback.lock);
	pthread_join(fallback.tid, NULL);
	pthread_cond_destroy(&fallback.cond);
	fallback.running = false;
}

uint64_t
droce_engines_fallback_passes(void)
{
	return atomic_load(&fallback.passes);
}

/* Wakes it if it sleeps (an application thread is about to block). */
void
droce_engine_fallback_kick(void)
{
	if (atomic_load(&fallback.sleeping)) {
		pthread_mutex_lock(&fallback.lock);
		fallback.kick = true;
		pthread_cond_signal(&fallback.cond);
		pthread_mutex_unlock(&fallback.lock);
	}
}
