/* SPDX-License-Identifier: BSD-3-Clause
 * The engine loop.  Each pass has fixed phases:
 *   1. take the doorbells (a bitmap of QP indices), then drain the channels
 *      (control messages, in posting order)
 *   2. receive: rx_burst on the engine's queue of every port, parse, dispatch
 *   3. transmit work: QPs with something to send
 *   4. timers: retransmission and RNR
 *   5. flush the transmit buffers
 *
 * Who runs passes.  Dedicated mode: one EAL lcore per engine, nothing else.
 * Co-located mode: any thread may drive any engine, one at a time.  A pass is
 * run under the engine's `driving` flag, taken by a try-CAS (acquire) and freed
 * by a release store, so the single-owner engine state (QP table, active list,
 * transmit buffers, CQ sub-ring producer side, RCU slot = engine index) passes
 * from one driver to the next; a thread that fails the CAS skips the engine.
 * No thread keeps an engine between passes, so one that blocks or exits holds
 * nothing.  A fallback progress thread drives an engine no application thread
 * has driven for fallback_us (or at once when one says it blocks); it lets go
 * at the end of its pass as soon as an application thread wants the engine
 * (`wanted`), and backs off (spin, then sleeps growing to FALLBACK_SLEEP_MAX_US)
 * while the engines are idle.
 *
 * This file: the engine set, start/stop and driving (progress, the dedicated
 * lcore loop).  The rest is in engine_chan.c (channels, phase 1),
 * engine_pass.c (a pass: phases 2-5), engine_sched.c (which QPs a pass visits:
 * the active list, the timer wheel), engine_qpt.c (QP indices) and
 * engine_fallback.c; engine_internal.h is what they share.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include <droce/droce.h>

#include "cc.h"
#include "engine_internal.h"
#include "internal.h"
#include "rc_internal.h"
#include "pmd_glue/port.h"
#include "pmd_glue/memif_guard.h"
#include "pmd_glue/wake.h"
#include "raw.h"
#include "pmd_glue/stats_internal.h"

RTE_LOG_REGISTER(droce_dp_logtype, droce.dp, NOTICE);

struct droce_engine_set droce_engines = { .chan_lock = PTHREAD_MUTEX_INITIALIZER };

unsigned int
droce_engine_count(void)
{
	return droce_engines.started ? droce_engines.n : 0;
}

struct droce_engine *
droce_engine_get(unsigned int id)
{
	return id < droce_engines.n ? droce_engines.eng[id] : NULL;
}

void
droce_dp_synchronize(void)
{
	if (droce_engines.rcu)
		rte_rcu_qsbr_synchronize(droce_engines.rcu, RTE_QSBR_THRID_INVALID);
}

int
droce_engines_at_stop(void (*fn)(void))
{
	int rc = 0;

	pthread_mutex_lock(&droce_engines.chan_lock);
	if (droce_engines.stop_hook != NULL && droce_engines.stop_hook != fn)
		rc = EBUSY;
	else
		droce_engines.stop_hook = fn;
	pthread_mutex_unlock(&droce_engines.chan_lock);
	return rc;
}

/* ---- running the engines ---- */

/* The fallback thread, an engine lcore: the threads whose passes are not an
 * application's.  Set once when such a thread starts, read only by a CQ's
 * notify (droce_engines_in_app_pass): a pass costs no thread-variable
 * access (in the shared library, a call of __tls_get_addr each). */
static __thread bool engine_thread;

void
droce_engine_thread_mark(void)
{
	engine_thread = true;
}

bool
droce_engines_in_app_pass(void)
{
	/* called during a pass only (a CQ's notify): an application thread
	 * drives only inside droce_engines_progress, in one of its verbs */
	return !engine_thread;
}

bool
droce_engines_progress(void)
{
	bool busy = false;
	uint64_t passed = 0; /* the clock of our last pass */

	if (!droce_engines.started || droce_engines.dedicated || droce_engines.forked)
		return false;
	for (unsigned int e = 0; e < droce_engines.n; e++) {
		struct droce_engine *eng = droce_engines.eng[e];

		if (!droce_engine_take(eng)) {
			/* someone drives it: if it is the fallback, it lets go after its pass.
			 * Not idle: a waiter must not take a long pass of another thread's
			 * (hundreds of µs when it moves a whole SQ) for a lull and sleep */
			if (!atomic_load_explicit(&eng->wanted, memory_order_relaxed))
				atomic_store_explicit(&eng->wanted, true, memory_order_relaxed);
			atomic_store_explicit(&eng->app_tsc, rte_rdtsc(), memory_order_relaxed);
			busy = true;
			continue;
		}
		if (atomic_load_explicit(&eng->wanted, memory_order_relaxed))
			atomic_store_explicit(&eng->wanted, false, memory_order_relaxed);
		rte_rcu_qsbr_thread_online(droce_engines.rcu, e);
		if (droce_engine_pass_lc(eng)) { /* the fallback thread's deep sleep waits for a lull */
			atomic_store_explicit(&eng->work_tsc, droce_clock_real(eng->now),
					      memory_order_relaxed);
			busy = true;
		}
		rte_rcu_qsbr_thread_offline(droce_engines.rcu, e);
		passed = droce_clock_real(eng->now);
		atomic_store_explicit(&eng->app_tsc, passed, memory_order_relaxed);
		droce_engine_give(eng);
	}
	if (passed != 0)
		droce_place_note_app(passed);
	return busy;
}

/*
 * A pass counts itself in stats.loops when it starts, so once the count is
 * two past the one read here, the pass after the one that may have been
 * running then is over.
 */
void
droce_engines_barrier(void)
{
	uint64_t want[DROCE_MAX_ENGINES], end;
	unsigned int n = droce_engines.n;

	if (!droce_engines.started || droce_engines.forked)
		return;
	for (unsigned int e = 0; e < n; e++)
		want[e] = __atomic_load_n(&droce_engines.eng[e]->stats.loops, __ATOMIC_ACQUIRE) + 2;
	end = rte_get_tsc_cycles() + rte_get_tsc_hz();
	for (unsigned int e = 0; e < n; e++)
		while (__atomic_load_n(&droce_engines.eng[e]->stats.loops, __ATOMIC_ACQUIRE) < want[e] &&
		       rte_get_tsc_cycles() < end) {
			droce_engines_progress(); /* co-located: drive them ourselves */
			rte_pause();
		}
}

static _Atomic uint64_t waiter_blocks; /* droce_engines_blocking calls that handed over */

uint64_t
droce_engines_waiter_blocks(void)
{
	return atomic_load_explicit(&waiter_blocks, memory_order_relaxed);
}

void
droce_engines_blocking(void)
{
	if (!droce_engines.started || droce_engines.dedicated || !droce_engines_fallback_on())
		return;
	atomic_fetch_add_explicit(&waiter_blocks, 1, memory_order_relaxed);
	for (unsigned int e = 0; e < droce_engines.n; e++)
		atomic_store_explicit(&droce_engines.eng[e]->app_tsc, 0, memory_order_relaxed);
	droce_engine_fallback_kick();
}

/*
 * A blocking verb's first phase (issue 23 §4): the thread about to sleep
 * drives the engines itself while it waits, so a program that waits for
 * events runs as one that polls, and the fallback thread (which skips an
 * engine an application thread drove within fallback_us) stays asleep.  The
 * spin lasts while the engines have work (frames coming and going: the
 * waiter is then the transport's engine, as a polling program's thread is,
 * and sleeping would only hand the same work to the fallback thread at the
 * price of a wake-up per event) and ends once they have been idle for the
 * waiter's budget.  The budget starts at wait_spin_us; an event that came
 * after the thread slept, but sooner than wait_spin_us after the engines went
 * idle, sets it to twice that delay; a wait that ended later (or not at all)
 * halves it, down to DROCE_SPIN_MIN_US: a thread whose events come seldom
 * soon spins almost not at all once its traffic stops.
 */
#define DROCE_SPIN_MIN_US 2

/*
 * The loop both waits share: passes until @ready(@arg), or until the
 * engines have been idle for @span TSC cycles since *@idle_tsc (moved to
 * each pass that had work; with @others, also to another thread's pass that
 * had work, the engines' work_tsc: the fallback's, before it saw us).
 */
static bool
drive_until_idle(bool (*ready)(const void *), const void *arg, uint64_t span, uint64_t *idle_tsc,
		 bool others)
{
	for (;;) {
		bool busy = droce_engines_progress();
		uint64_t now;

		if (ready(arg))
			return true;
		now = rte_rdtsc();
		if (busy) {
			*idle_tsc = now;
		} else if (others) {
			for (unsigned int e = 0; e < droce_engines.n; e++) {
				uint64_t t = atomic_load_explicit(&droce_engines.eng[e]->work_tsc,
								  memory_order_relaxed);

				if ((int64_t)(t - *idle_tsc) > 0)
					*idle_tsc = t;
			}
		}
		if ((int64_t)(now - *idle_tsc) >= (int64_t)span)
			return false;
	}
}

bool
droce_engines_wait_spin(_Atomic uint64_t *budget, struct droce_wait *w,
			bool (*ready)(const void *), const void *arg)
{
	uint64_t max = droce_engines.wait_spin_tsc, b;

	w->start_tsc = rte_rdtsc();
	w->idle_tsc = w->start_tsc;
	w->slept = false;
	if (ready(arg))
		return true;
	w->slept = true;
	if (max == 0 || !droce_engines.started || droce_engines.dedicated || droce_engines.forked)
		return false;
	b = atomic_load_explicit(budget, memory_order_relaxed);
	if (b == 0 || b > max)
		b = max;
	if (!drive_until_idle(ready, arg, b, &w->idle_tsc, true))
		return false;
	w->slept = false;
	return true;
}

bool
droce_engines_drive(bool (*ready)(const void *), const void *arg, unsigned int idle_us)
{
	uint64_t idle = rte_rdtsc();

	if (!droce_engines.started || droce_engines.dedicated || droce_engines.forked)
		return ready(arg);
	return drive_until_idle(ready, arg, rte_get_tsc_hz() / 1000000 * idle_us, &idle, false);
}

void
droce_engines_wait_end(_Atomic uint64_t *budget, const struct droce_wait *w, bool got)
{
	uint64_t max = droce_engines.wait_spin_tsc, min = rte_get_tsc_hz() / 1000000 * DROCE_SPIN_MIN_US;
	uint64_t b = atomic_load_explicit(budget, memory_order_relaxed);
	uint64_t took = rte_rdtsc() - w->idle_tsc;

	if (!w->slept || max == 0)
		return;
	if (b == 0 || b > max)
		b = max;
	if (got && took < max)
		b = RTE_MIN(max, RTE_MAX(min, 2 * took));
	else
		b = RTE_MAX(min, b / 2);
	atomic_store_explicit(budget, b, memory_order_relaxed);
}

static int
engine_main(void *arg)
{
	struct droce_engine *eng = arg;

	droce_engine_thread_mark();
	rte_rcu_qsbr_thread_online(droce_engines.rcu, eng->id);
	while (!atomic_load_explicit(&eng->stop, memory_order_relaxed)) {
		droce_engine_poll_lc(eng);
		rte_rcu_qsbr_quiescent(droce_engines.rcu, eng->id);
	}
	rte_rcu_qsbr_thread_offline(droce_engines.rcu, eng->id);
	return 0;
}

bool
droce_engine_stash_refill_lc(struct droce_engine *eng)
{
	/* half the stash, leaving room for received frames to come back */
	if (rte_mempool_generic_get(eng->mcache_mp, (void **)eng->txstash, DROCE_TXSTASH / 2,
				    eng->mcache) == 0) {
		eng->ntxstash = DROCE_TXSTASH / 2;
		return true;
	}
	if (rte_mempool_generic_get(eng->mcache_mp, (void **)eng->txstash, 1, eng->mcache) == 0) {
		eng->ntxstash = 1; /* the pool is nearly dry: what there is */
		return true;
	}
	return false;
}

void
droce_engine_stash_flush(struct droce_engine *eng)
{
	if (eng->ntxstash != 0)
		rte_mempool_generic_put(eng->mcache_mp, (void **)eng->txstash, eng->ntxstash,
					eng->mcache);
	eng->ntxstash = 0;
}

static void
engine_free(struct droce_engine *eng)
{
	if (eng == NULL)
		return;
	droce_engine_chan_free(eng);
	for (unsigned int e = 0; e < DROCE_MAX_ENGINES; e++)
		rte_ring_free(eng->xfer_in[e]);
	for (unsigned int pg = 0; pg < DROCE_QPT_PAGES; pg++)
		rte_free(atomic_load(&eng->qpt[pg]));
	rte_free(eng->qp_freed);
	if (eng->mcache != NULL) {
		/* its mbufs back to the pool before the pool goes */
		droce_engine_stash_flush(eng);
		rte_mempool_cache_flush(eng->mcache, eng->mcache_mp);
		rte_mempool_cache_free(eng->mcache);
	}
	rte_free(eng);
}

static void
at_fork_child(void)
{
	droce_engines.forked = true;
}

void
droce_engines_wake_answers_set(void)
{
	uint64_t bits[4] = { 0 };

	for (unsigned int op = 0; op < 256; op++)
		if (droce_opcode_table[op].flags & (DROCE_OPF_RESP | DROCE_OPF_CNP))
			bits[op >> 6] |= UINT64_C(1) << (op & 63);
	droce_wake_set_answers(bits);
}

int
droce_engines_start(void)
{
	static bool atfork;
	const struct droce_config *cfg = droce_get_config();
	size_t rcu_size;

	if (droce_engines.started)
		return 0;
	if (!atfork && pthread_atfork(NULL, NULL, at_fork_child) == 0)
		atfork = true;
	if (cfg == NULL) {
		errno = ENODEV;
		return ENODEV;
	}
	droce_engines.n = cfg->n_engines ? cfg->n_engines : 1;
	droce_rc_sr_config(cfg->selective_repeat != 0);
	droce_cc_config(&cfg->dcqcn, rte_get_tsc_hz());
	droce_engines.dedicated = cfg->engine_mode == DROCE_ENGINE_MODE_DEDICATED;
	for (unsigned int pi = 0; pi < droce_port_count(); pi++) {
		struct droce_port *p = droce_port_get(pi);

		if (p->nb_rxq < droce_engines.n || p->nb_txq < droce_engines.n) {
			DP_LOG(ERR, "%s: %u engines need %u rx and tx queues on every port (has %u/%u)",
			       cfg->source, droce_engines.n, droce_engines.n, p->nb_rxq, p->nb_txq);
			errno = EINVAL;
			return EINVAL;
		}
	}
	rcu_size = rte_rcu_qsbr_get_memsize(droce_engines.n);
	droce_engines.rcu = rte_zmalloc("droce_rcu", rcu_size, RTE_CACHE_LINE_SIZE);
	if (droce_engines.rcu == NULL || rte_rcu_qsbr_init(droce_engines.rcu, droce_engines.n) != 0)
		goto fail;
	for (unsigned int e = 0; e < droce_engines.n; e++) {
		struct droce_engine *eng = rte_zmalloc("droce_engine", sizeof(*eng), RTE_CACHE_LINE_SIZE);

		if (eng == NULL)
			goto fail;
		droce_engines.eng[e] = eng;
		eng->id = e;
		eng->queue = (uint16_t)e;
		eng->tsc_hz = rte_get_tsc_hz();
		droce_engine_sched_init(eng);
		eng->n_ports = droce_port_count();
		for (unsigned int pi = 0; pi < eng->n_ports; pi++) {
			eng->ports[pi] = droce_port_get(pi);
			eng->txroom[pi] = eng->ports[pi]->sw != NULL ? DROCE_TXROOM_SWITCH : DROCE_TXBUF;
		}
		if (eng->n_ports > 0 && eng->ports[0]->mp->cache_size > 0 &&
		    rte_pktmbuf_data_room_size(eng->ports[0]->mp) > RTE_PKTMBUF_HEADROOM) {
			/* as large as the pool's per-lcore caches; none: the plain path */
			eng->mcache = rte_mempool_cache_create(eng->ports[0]->mp->cache_size,
							       SOCKET_ID_ANY);
			if (eng->mcache != NULL)
				eng->mcache_mp = eng->ports[0]->mp;
		}
		rte_rcu_qsbr_thread_register(droce_engines.rcu, e);
	}
	for (unsigned int to = 0; to < droce_engines.n; to++)
		for (unsigned int from = 0; from < droce_engines.n; from++) {
			char name[RTE_RING_NAMESIZE];

			if (to == from)
				continue;
			snprintf(name, sizeof(name), "dxf%u_%u", from, to);
			droce_engines.eng[to]->xfer_in[from] = rte_ring_create(
				name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (droce_engines.eng[to]->xfer_in[from] == NULL)
				goto fail;
			droce_engines.eng[to]->xfer_in_mask |= UINT64_C(1) << from;
		}
	droce_engine_rx_init();
	droce_engines_wake_answers_set();
	droce_engines.gen++;
	droce_engines.wait_spin_tsc = droce_engines.dedicated ? 0 :
		rte_get_tsc_hz() / 1000000 * cfg->wait_spin_us;
	droce_engines.started = true;
	if (!droce_engines.dedicated && cfg->fallback_us > 0) {
		int rc = droce_engine_fallback_start(cfg->fallback_us);

		if (rc != 0) {
			DP_LOG(ERR, "cannot start the fallback progress thread: %s", strerror(rc));
			droce_engines_stop();
			errno = rc;
			return rc;
		}
	}
	/* the memif PMD's unmaps wait for the engines' passes (memif_guard.c) */
	droce_memif_guard_set(droce_dp_synchronize);
	/* droce_stop() stops the engines before it removes their ports */
	droce_runtime_set_stop_first(droce_engines_stop);
	droce_dp_nd_announce_due(); /* the ports' unsolicited NA (pmd_glue/nd.c) */
	if (droce_engines.dedicated) {
		for (unsigned int e = 0; e < droce_engines.n; e++) {
			if (rte_eal_remote_launch(engine_main, droce_engines.eng[e], cfg->engine_lcores[e]) != 0) {
				DP_LOG(ERR, "cannot launch engine %u on lcore %u", e, cfg->engine_lcores[e]);
				droce_engines_stop();
				errno = EBUSY;
				return EBUSY;
			}
		}
	}
	return 0;
fail:
	for (unsigned int e = 0; e < droce_engines.n; e++) {
		engine_free(droce_engines.eng[e]);
		droce_engines.eng[e] = NULL;
	}
	rte_free(droce_engines.rcu);
	droce_engines.rcu = NULL;
	errno = ENOMEM;
	return ENOMEM;
}

void
droce_engines_stop(void)
{
	const struct droce_config *cfg = droce_get_config();
	void (*hook)(void);

	if (!droce_engines.started)
		return;
	/* users of the engines above dp.h (the CM) let go first, while engines still run */
	pthread_mutex_lock(&droce_engines.chan_lock);
	hook = droce_engines.stop_hook;
	droce_engines.stop_hook = NULL;
	pthread_mutex_unlock(&droce_engines.chan_lock);
	if (hook != NULL)
		hook();
	droce_engine_fallback_stop();
	if (droce_engines.dedicated && cfg) {
		for (unsigned int e = 0; e < droce_engines.n; e++)
			atomic_store(&droce_engines.eng[e]->stop, true);
		for (unsigned int e = 0; e < droce_engines.n; e++)
			rte_eal_wait_lcore(cfg->engine_lcores[e]);
	}
	droce_memif_guard_set(NULL); /* before the RCU variable goes */
	droce_runtime_lock_excl(); /* counter readers (telemetry) are out */
	for (unsigned int e = 0; e < droce_engines.n; e++) {
		struct droce_engine *eng = droce_engines.eng[e];

		for (unsigned int pi = 0; pi < eng->n_ports; pi++)
			rte_pktmbuf_free_bulk(eng->txq[pi], eng->ntx[pi]);
		engine_free(eng);
		droce_engines.eng[e] = NULL;
	}
	droce_engine_chan_forget();
	rte_free(droce_engines.rcu);
	droce_engines.rcu = NULL;
	droce_engines.started = false;
	droce_engines.n = 0;
	droce_runtime_unlock_excl();
}

void
droce_engine_stats_get(unsigned int id, struct droce_engine_stats *out)
{
	struct droce_engine *eng = droce_engine_get(id);

	if (eng)
		*out = eng->stats;
}

/* ---- the public progress calls (include/droce/droce.h) ---- */

void
droce_progress(void)
{
	droce_engines_progress();
}

void
droce_progress_blocking(void)
{
	droce_engines_blocking();
}
