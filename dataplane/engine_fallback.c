/* SPDX-License-Identifier: BSD-3-Clause
 * The co-located fallback progress thread ("droce-fallback").  It drives an
 * engine no application thread has driven for fallback_us (or at once when
 * one says it blocks: droce_engines_blocking), lets go at the end of its pass
 * as soon as an application thread wants the engine (`wanted`), and backs off
 * (spin, then sleeps growing to FALLBACK_SLEEP_MAX_US) while the engines are
 * idle; from FALLBACK_LINE_MIN_US on, those sleeps also end at a memif
 * peer's frame (its wake lines armed), so an event for a program asleep on
 * a channel's fd is written as soon as the frame is in; while more threads
 * are runnable than there are CPUs, its sleeps of any length end at a
 * peer's frame that asks something of it (lines_arm), for a program that
 * spins on its memory.  After FALLBACK_DEEP_AFTER_US without work, when nothing can come
 * but frames from droce peers over memif (every port a memif port with a
 * wake line, no QP in a timer wheel, no application thread driving), it
 * sleeps until a peer's wake (pmd_glue/wake.c), a kick or a nudge, with only
 * a FALLBACK_DEEP_MS safety timer: next to no CPU while idle.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "engine_internal.h"
#include "internal.h"
#include "pmd_glue/clock.h"
#include "pmd_glue/port_struct.h"
#include "pmd_glue/wake.h"

/* The co-located fallback progress thread. */
#define FALLBACK_SPIN_US 200      /* keeps spinning this long after the last work */
#define FALLBACK_SLEEP_MAX_US 1000 /* then sleeps 1, 2, 4 ... µs up to this */
#define FALLBACK_PASSES 256       /* passes per take before it looks around again */
#define FALLBACK_LATE_US 30       /* off the CPU this much longer than it asked: crowded */
#define FALLBACK_CROWDED_MS 100   /* then no spinning for this long */
#define FALLBACK_SLACK_NS 1000    /* timer slack of its sleeps (the default is 50 µs) */
#define FALLBACK_DEEP_MS 100      /* the longest sleep on the wake lines */
#define FALLBACK_HOOK_US 50       /* the longest sleep while the hook keeps something */
#define FALLBACK_DEEP_AFTER_US 50000 /* idle this long (timer sleeps) before it sleeps on the lines */
#define FALLBACK_LINE_MIN_US 16   /* timer sleeps this long or longer also end at a peer's frame */
#define FALLBACK_POLLING_US 5     /* an application thread that drove within this polls */
#define FALLBACK_LOAD_EVERY_MS 1  /* the runnable threads counted at most this often */
#define FALLBACK_ASKED_BACKOFF_MAX 64 /* sleeps without the ASKED arm after wasted wakes */
#define FALLBACK_ASKED_MIN_US 500 /* crowded, ASKED armed: its shortest timer sleep */
static struct {
	bool running;
	pthread_t tid;
	_Atomic bool stop;
	_Atomic uint64_t kicks;   /* droce_engine_fallback_kick calls */
	_Atomic uint64_t nudges;  /* droce_engine_fallback_nudge calls */
	uint64_t seen_nudges;     /* the thread's: nudges before its last sleep ended */
	int efd;                  /* an eventfd: kicks while it sleeps, the stop */
	uint64_t after_tsc;       /* fallback_us in TSC cycles */
	uint64_t polling_tsc;     /* FALLBACK_POLLING_US in TSC cycles */
	bool line_woke;           /* the thread's: a wake line's datagram ended its last sleep */
	int loadavg_fd;           /* /proc/loadavg, or -1 */
	bool crowd;               /* the thread's: more threads runnable than CPUs (cpus_crowded, twice in a row) */
	unsigned int asked_skip;  /* the thread's: sleeps left before it arms ASKED again */
	unsigned int asked_backoff; /* the thread's: the next such pause, after a wasted wake */
	unsigned int cpus;        /* CPUs this process may run on */
	_Atomic uint64_t passes;  /* passes it ran (tests, stats) */
	_Atomic uint64_t deep_sleeps; /* sleeps on the wake lines alone (tests, stats) */
	_Atomic uint64_t sleeps;  /* every sleep */
} fallback = { .efd = -1, .loadavg_fd = -1 };
static bool (*_Atomic fallback_hook)(void); /* droce_engines_set_fallback_hook */
static _Atomic int waiters; /* droce_engines_waiting: threads asleep for an event */
/* threads asleep on the wake lines themselves (droce_engines_line_sleep):
 * while there are any, the lines are theirs (the fallback thread neither
 * arms, polls nor drains them) */
static _Atomic int line_waiters;
static _Atomic uint64_t line_sleeps; /* droce_engines_line_sleep's sleeps (tests, stats) */
_Atomic bool droce_fallback_asleep;
static _Atomic bool asleep_deep; /* asleep on the wake lines alone: nudges wake it */

void
droce_engines_set_fallback_hook(bool (*fn)(void))
{
	atomic_store(&fallback_hook, fn);
}

void
droce_engines_waiting(bool on)
{
	atomic_fetch_add_explicit(&waiters, on ? 1 : -1, memory_order_relaxed);
}

bool
droce_engines_fallback_on(void)
{
	return fallback.running;
}

/* ---- the fork gate (dp.h) ---- */

static pthread_rwlock_t fork_gate;
static pthread_once_t fork_gate_once = PTHREAD_ONCE_INIT;

/* writers first: a stream of rounds or requests cannot keep a fork waiting */
static void
fork_gate_init(void)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fork_gate, &a);
	pthread_rwlockattr_destroy(&a);
}

void
droce_fork_gate_enter(void)
{
	pthread_once(&fork_gate_once, fork_gate_init);
	pthread_rwlock_rdlock(&fork_gate);
}

void
droce_fork_gate_leave(void)
{
	pthread_rwlock_unlock(&fork_gate);
}

void
droce_fork_gate_close(void)
{
	pthread_once(&fork_gate_once, fork_gate_init);
	pthread_rwlock_wrlock(&fork_gate);
}

void
droce_fork_gate_open(void)
{
	pthread_rwlock_unlock(&fork_gate);
}

void
droce_fork_gate_reset(void)
{
	fork_gate_init();
}

/* Drives every engine no application thread drove for @claim TSC cycles
 * (fallback_us; after a wake line's datagram, FALLBACK_POLLING_US: a thread
 * that polls would have taken the frame by then); true if any of them had
 * work.  Under the fork gate. */
static bool
fallback_round(uint64_t claim)
{
	uint64_t now = rte_rdtsc();
	bool busy = false;

	droce_fork_gate_enter();
	for (unsigned int e = 0; e < droce_engines.n; e++) {
		struct droce_engine *eng = droce_engines.eng[e];
		uint64_t app = atomic_load_explicit(&eng->app_tsc, memory_order_relaxed);

		if ((int64_t)(now - app) < (int64_t)claim)
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

			if (b) /* a waiter's spin goes on while the engine has work */
				atomic_store_explicit(&eng->work_tsc, droce_clock_real(eng->now),
						      memory_order_relaxed);
			busy |= b;
			atomic_fetch_add_explicit(&fallback.passes, 1, memory_order_relaxed);
			if (!b || atomic_load_explicit(&eng->wanted, memory_order_relaxed) ||
			    atomic_load_explicit(&fallback.stop, memory_order_relaxed))
				break;
		}
		rte_rcu_qsbr_thread_offline(droce_engines.rcu, e);
		droce_engine_give(eng);
	}
	droce_fork_gate_leave();
	return busy;
}

/*
 * Spin or sleep.  After work the thread spins FALLBACK_SPIN_US for the next
 * frame, unless the CPUs are crowded: then the spin only takes a CPU from a
 * thread that needs it (an application spinning on its buffer, the peer
 * process's threads on a small machine) and delays the very frames it waits
 * for by the scheduler's time slice.  Crowding shows, without a system call,
 * as the thread being off the CPU when it did not ask to be: a gap between two
 * spin iterations, or a sleep that ends FALLBACK_LATE_US after its deadline;
 * and, for the case where this thread is the one that runs while others
 * wait, as more runnable threads than CPUs (cpus_crowded, twice in a row).
 * Then it sleeps at once after work (in short, precise steps: its timer slack
 * is FALLBACK_SLACK_NS) for FALLBACK_CROWDED_MS, and tries spinning again.
 */
/* No engine had work for @span (neither this thread's passes, since
 * @last_work, nor an application thread's): a kick (a thread about to block,
 * the CM thread's idle turns) does not end the lull. */
static bool
lull(uint64_t now, uint64_t last_work, uint64_t span)
{
	if ((int64_t)(now - last_work) < (int64_t)span)
		return false;
	for (unsigned int e = 0; e < droce_engines.n; e++)
		if ((int64_t)(now - atomic_load_explicit(&droce_engines.eng[e]->work_tsc,
							  memory_order_relaxed)) < (int64_t)span)
			return false;
	return true;
}

/* An application thread drove an engine within @span TSC cycles. */
static bool
app_drove_within(uint64_t now, uint64_t span)
{
	for (unsigned int e = 0; e < droce_engines.n; e++)
		if ((int64_t)(now - atomic_load_explicit(&droce_engines.eng[e]->app_tsc,
							  memory_order_relaxed)) < (int64_t)span)
			return true;
	return false;
}

/* An application thread drove an engine within fallback_us (a poller, a
 * waiter in its spin): the frames are its to take. */
static bool
app_driving(uint64_t now)
{
	return app_drove_within(now, fallback.after_tsc);
}

/* Every port's wake line disarmed (our word cleared). */
static void
lines_disarm_all(void)
{
	for (unsigned int i = 0; i < droce_port_count(); i++)
		droce_wake_disarm(droce_port_get(i));
}

/*
 * Arms every port's wake line for @why; returns how many are armed.  A port
 * without a line (another kind, a peer not yet known) is skipped, or, with
 * @all_or_none (which also refuses a port an impairment holds frames on),
 * ends it: the lines it armed are disarmed and 0 returned.
 */
static unsigned int
lines_arm_all(enum droce_wake_for why, bool all_or_none)
{
	unsigned int np = droce_port_count(), armed = 0;

	for (unsigned int i = 0; i < np; i++) {
		struct droce_port *p = droce_port_get(i);

		if (p != NULL && !(all_or_none && __atomic_load_n(&p->impair_used, __ATOMIC_RELAXED)) &&
		    droce_wake_arm(p, why)) {
			armed++;
		} else if (all_or_none) {
			while (i-- > 0)
				droce_wake_disarm(droce_port_get(i));
			return 0;
		}
	}
	return armed;
}

/* The fallback thread's lines disarmed, unless threads asleep on them
 * armed them (then they are theirs). */
static void
lines_disarm(void)
{
	if (atomic_load(&line_waiters) == 0)
		lines_disarm_all();
}

/* After the fallback thread's sleep: its lines disarmed, what came taken. */
static void
lines_release(void)
{
	lines_disarm();
	for (unsigned int i = 0; i < droce_port_count(); i++)
		droce_wake_drain(droce_port_get(i));
}

/*
 * Whether only a memif peer's frame (or a kick) can give the engines work:
 * no application thread drove one within fallback_us, no QP waits on a
 * timer, and every port is a memif port whose wake line knows its peer.  If
 * so, every line is armed (our word set) and true returned; the caller looks
 * at the rings once more before it sleeps.
 */
static bool
deep_sleep_arm(uint64_t now)
{
	if (droce_port_count() == 0)
		return false;
	if (app_driving(now))
		return false;
	for (unsigned int e = 0; e < droce_engines.n; e++)
		if (__atomic_load_n(&droce_engines.eng[e]->tw_count, __ATOMIC_RELAXED) != 0)
			return false;
	if (atomic_load(&line_waiters) > 0)
		return true; /* armed by the threads asleep on them: a frame wakes those */
	return lines_arm_all(DROCE_WAKE_ANY, true) > 0;
}

/* A wake line's datagram ended the thread's sleep, and the round after it
 * @worked or not: a wake for nothing (an application thread polled and took
 * the frame) leaves the ASKED arm off for 1, 2, 4 ... up to
 * FALLBACK_ASKED_BACKOFF_MAX sleeps, so the peer of a polling program that
 * streams requests is not made to send a wake per sleep; one that worked
 * halves the next pause (perftest's send_bw -e, whose waiters poll between
 * their sleeps, lost a tenth of its rate when a useful wake ended it). */
static void
asked_wake_was(bool worked)
{
	if (worked) {
		fallback.asked_backoff /= 2;
		return;
	}
	fallback.asked_backoff = RTE_MIN(RTE_MAX(fallback.asked_backoff * 2, 1u),
					 (unsigned int)FALLBACK_ASKED_BACKOFF_MAX);
	fallback.asked_skip = fallback.asked_backoff;
}

/*
 * Arms the wake line of every port whose line knows its peer for a timer
 * sleep of @us (the ports without one, or whose peer is not droce, keep the
 * timer); returns what wakes it (0: nothing armed), *@all whether every
 * port's line is armed.  The caller looks at
 * the rings once more before it sleeps.  While a CQ is armed (a program may
 * sleep for its event) and no application thread drives the engines, any
 * frame ends a sleep from FALLBACK_LINE_MIN_US on.  Otherwise, while more
 * threads are runnable than there are CPUs (fallback.crowd), only a frame
 * that asks something of this side does (DROCE_WAKE_ASKED), at any length:
 * the program may spin on its memory for a peer's WRITE (perftest's
 * write_lat), with nobody but this thread to take it, while the peer's ACKs
 * and READ responses, which a polling program takes itself, cost the peer no
 * sendmsg and us no wake-up (wake-bench busy).  A wake that found an
 * application thread polling (asked_wake_was) pauses the ASKED arm.
 */
static enum droce_wake_for
lines_arm(uint64_t now, uint64_t us, bool *all)
{
	enum droce_wake_for why;
	unsigned int armed;

	*all = false;
	if (atomic_load(&line_waiters) > 0)
		return 0;
	if (atomic_load_explicit(&droce_cqs_armed, memory_order_relaxed) > 0 && !app_driving(now)) {
		if (us < FALLBACK_LINE_MIN_US)
			return 0;
		why = DROCE_WAKE_ANY;
	} else if (!fallback.crowd) {
		return 0;
	} else if (fallback.asked_skip > 0) {
		fallback.asked_skip--;
		return 0;
	} else {
		why = DROCE_WAKE_ASKED;
	}
	armed = lines_arm_all(why, false);
	*all = armed == droce_port_count();
	return armed > 0 ? why : 0;
}

/* A bell rung since the last pass (droce_engine_ring_up looks at
 * droce_fallback_asleep after it sets bell_top). */
static bool
bells_pending(void)
{
	for (unsigned int e = 0; e < droce_engines.n; e++)
		if (atomic_load(&droce_engines.eng[e]->bell_top) != 0)
			return true;
	return false;
}

/*
 * Whether more threads are runnable than this process has CPUs
 * (/proc/loadavg's running count, which counts this thread): then a spin
 * takes a CPU from a thread that waits for one.  The crowding seen as this
 * thread's own lateness misses the case where it is the one that runs and
 * the others wait (two processes whose applications spin on their memory,
 * perftest's write_lat: each fallback thread's spin held the peer's
 * application off its CPU for the 200 µs).
 */
static bool
cpus_crowded(void)
{
	char b[128];
	ssize_t n;
	unsigned long running;

	if (fallback.loadavg_fd < 0)
		return false;
	n = pread(fallback.loadavg_fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return false;
	b[n] = '\0';
	/* "0.52 0.58 0.59 3/245 12345": the fourth field's numerator */
	if (sscanf(b, "%*s %*s %*s %lu/", &running) != 1)
		return false;
	return running > fallback.cpus;
}

/*
 * Sleeps up to @us µs (or until a kick, a stop, a wake line's datagram): a
 * poll() of the eventfd and the ports' wake lines.  Drains what woke it; true
 * if it was kicked; fallback.line_woke if a line's datagram came.
 */
static bool
fallback_sleep(uint64_t us, uint64_t *seen_kicks)
{
	struct pollfd fds[1 + DROCE_MAX_PORTS];
	unsigned int nfd = 0, np = droce_port_count();
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000 };
	bool kicked;

	bool lines = atomic_load(&line_waiters) == 0; /* else they are the waiters' */

	fds[nfd++] = (struct pollfd){ .fd = fallback.efd, .events = POLLIN };
	for (unsigned int i = 0; lines && i < np && i < DROCE_MAX_PORTS; i++) {
		int fd = droce_wake_fd(droce_port_get(i));

		if (fd >= 0)
			fds[nfd++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	atomic_store(&droce_fallback_asleep, true); /* seq_cst: against kicks and bells, Dekker */
	atomic_fetch_add_explicit(&fallback.sleeps, 1, memory_order_relaxed);
	if (atomic_load(&fallback.kicks) == *seen_kicks && atomic_load(&fallback.nudges) == fallback.seen_nudges &&
	    !atomic_load(&fallback.stop) && !bells_pending())
		(void)ppoll(fds, nfd, &ts, NULL);
	atomic_store_explicit(&droce_fallback_asleep, false, memory_order_relaxed);
	if (fds[0].revents & POLLIN) {
		uint64_t v;

		(void)read(fallback.efd, &v, sizeof(v));
	}
	for (unsigned int i = 1; i < nfd; i++)
		if (fds[i].revents & POLLIN)
			fallback.line_woke = true;
	if (lines)
		lines_release();
	kicked = atomic_load(&fallback.kicks) != *seen_kicks;
	*seen_kicks = atomic_load(&fallback.kicks);
	fallback.seen_nudges = atomic_load(&fallback.nudges);
	return kicked;
}

/*
 * Spin or sleep.  After work the thread spins FALLBACK_SPIN_US for the next
 * frame, unless the CPUs are crowded: then the spin only takes a CPU from a
 * thread that needs it (an application spinning on its buffer, the peer
 * process's threads on a small machine) and delays the very frames it waits
 * for by the scheduler's time slice.  Crowding shows, without a system call,
 * as the thread being off the CPU when it did not ask to be: a gap between two
 * spin iterations, or a sleep that ends FALLBACK_LATE_US after its deadline;
 * and, for the case where this thread is the one that runs while others
 * wait, as more runnable threads than CPUs (cpus_crowded, twice in a row).
 * Then it sleeps at once after work (in short, precise steps: its timer slack
 * is FALLBACK_SLACK_NS) for FALLBACK_CROWDED_MS, and tries spinning again.
 * Idle with only memif peers to hear from, it sleeps on their wake lines.
 */
static void *
fallback_main(void *arg)
{
	uint64_t hz = rte_get_tsc_hz(), idle_since = rte_rdtsc(), last = idle_since;
	uint64_t late = hz / 1000000 * FALLBACK_LATE_US, spin = hz / 1000000 * FALLBACK_SPIN_US;
	uint64_t crowded_until = 0, seen_kicks = atomic_load(&fallback.kicks), last_work = idle_since;
	uint64_t load_seen = 0, load_every = hz / 1000 * FALLBACK_LOAD_EVERY_MS;
	unsigned int load_hits = 0;
	unsigned int sleep_us = 0;
	bool registered = rte_thread_register() == 0; /* a mempool cache of its own */

	RTE_SET_USED(arg);
	droce_engine_thread_mark(); /* its passes are not an application's */
	droce_place_start();
	(void)prctl(PR_SET_TIMERSLACK, (unsigned long)FALLBACK_SLACK_NS, 0, 0, 0);
	while (!atomic_load_explicit(&fallback.stop, memory_order_relaxed)) {
		uint64_t now = rte_rdtsc(), us;
		bool (*hook)(void) = atomic_load_explicit(&fallback_hook, memory_order_acquire);
		bool pending = hook != NULL && hook();
		/* a peer's frame woke it: it is for this thread unless one polls */
		bool line_woke = fallback.line_woke, worked;
		enum droce_wake_for armed;
		bool all_armed;
		uint64_t claim = line_woke ? fallback.polling_tsc : fallback.after_tsc;

		fallback.line_woke = false;

		if ((int64_t)(now - last) > (int64_t)late)
			crowded_until = now + hz / 1000 * FALLBACK_CROWDED_MS;
		last = now;
		worked = fallback_round(claim);
		/* a wake that found nothing is wasted only if an application
		 * thread still polls (it drove within the claim, so the round
		 * left its engines alone): one that took the frame and went on
		 * to spin on its memory (write_lat: its poll for an ACK took the
		 * peer's next WRITE too) left nobody else to take the next */
		if (line_woke && (worked || app_drove_within(rte_rdtsc(), claim)))
			asked_wake_was(worked);
		if (worked) {
			idle_since = last_work = now;
			sleep_us = 0;
			last = rte_rdtsc();
			continue;
		}
		/* idle: are others waiting for a CPU? (looked at once a
		 * FALLBACK_LOAD_EVERY_MS at most; two looks in a row: a thread
		 * that runs for a moment is no crowd) */
		if (now - load_seen > load_every) {
			load_seen = now;
			load_hits = cpus_crowded() ? load_hits + 1 : 0;
			fallback.crowd = load_hits >= 2;
			droce_place_step(fallback.crowd, now);
		}
		/* crowded, it spins only for a program asleep waiting for its
		 * traffic's events: then nothing else of the program runs */
		if (now - idle_since < spin && (((int64_t)(now - crowded_until) > 0 && !fallback.crowd) ||
		    atomic_load_explicit(&waiters, memory_order_relaxed) > 0)) {
			rte_pause();
			continue;
		}
		if (!pending && lull(now, last_work, hz / 1000000 * FALLBACK_DEEP_AFTER_US) &&
		    deep_sleep_arm(now)) {
			/* armed: one more look, then sleep until a peer's frame */
			if (fallback_round(fallback.after_tsc)) {
				lines_disarm();
				idle_since = rte_rdtsc();
				sleep_us = 0;
				continue;
			}
			atomic_fetch_add_explicit(&fallback.deep_sleeps, 1, memory_order_relaxed);
			atomic_store(&asleep_deep, true);
			if (fallback_sleep((uint64_t)FALLBACK_DEEP_MS * 1000, &seen_kicks)) {
				sleep_us = 0;
				idle_since = rte_rdtsc();
			}
			atomic_store_explicit(&asleep_deep, false, memory_order_relaxed);
			last = rte_rdtsc();
			continue;
		}
		/* idle: sleep in growing steps, woken early by droce_engines_blocking
		 * and by a memif peer's frame (lines_arm says which) */
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, (unsigned int)FALLBACK_SLEEP_MAX_US) : 1;
		us = pending ? RTE_MIN(sleep_us, (unsigned int)FALLBACK_HOOK_US) : sleep_us;
		armed = lines_arm(rte_rdtsc(), us, &all_armed);
		if (armed != 0 && fallback_round(fallback.polling_tsc)) {
			/* armed, one more look (as a line's wake would): a frame
			 * came meanwhile */
			lines_disarm();
			idle_since = last_work = rte_rdtsc();
			sleep_us = 0;
			last = idle_since;
			continue;
		}
		/* crowded and woken by what asks on every port: no short timer
		 * sleeps (each takes a CPU from an application thread, and lasts
		 * 50-100 µs on this machine whatever it asks) */
		if (armed == DROCE_WAKE_ASKED && all_armed && !pending)
			us = RTE_MAX(us, (uint64_t)FALLBACK_ASKED_MIN_US);
		last += hz / 1000000 * us; /* the deadline: later than it is crowding */
		if (fallback_sleep(us, &seen_kicks)) {
			sleep_us = 0;
			idle_since = rte_rdtsc();
		}
	}
	if (registered)
		rte_thread_unregister();
	return NULL;
}

/*
 * A waiting thread's sleep on the memif wake lines (issue 23 §4): see dp.h.
 * line_waiters counts such sleepers; while there are any the lines are
 * theirs.  Leaving, a sleeper disarms the lines if it was the last, or else
 * arms them again (the peer clears our word with each wake it sends, and
 * the wake's datagram, once drained by one sleeper, may not reach the
 * others' poll) and makes one pass: a frame that came while the word was
 * clear is taken then, and its event goes to its waiter's pipe.
 */
static void
line_leave(bool pass)
{
	/* @pass: woken by a line, so our word may be clear since the peer's
	 * wake: others still asleep need it set, and a look at what came */
	if (atomic_fetch_sub(&line_waiters, 1) == 1) {
		lines_disarm_all();
		if (atomic_load(&line_waiters) == 0)
			return;
		pass = true; /* one came while we disarmed: its arm may be gone */
	}
	(void)lines_arm_all(DROCE_WAKE_ANY, false);
	if (pass)
		(void)droce_engines_progress();
}

static void
line_cancelled(void *arg)
{
	RTE_SET_USED(arg);
	line_leave(false);
}

int
droce_engines_line_sleep(int fd, unsigned int ms, bool (*ready)(const void *), const void *arg)
{
	struct pollfd fds[1 + DROCE_MAX_PORTS];
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
	unsigned int np = droce_port_count(), nfd = 0;
	bool woken = false; /* by a line: the peer cleared our word */
	int rc = 0;

	if (!fallback.running || np == 0 || np > DROCE_MAX_PORTS || droce_engines.dedicated ||
	    droce_engines.forked)
		return -1;
	for (unsigned int i = 0; i < np; i++) {
		struct droce_port *p = droce_port_get(i);

		/* every port's frames must wake us: a memif port whose line
		 * knows its droce peer, and no impairment holding frames back */
		if (p == NULL || p->wake == NULL || __atomic_load_n(&p->impair_used, __ATOMIC_RELAXED))
			return -1;
		if (atomic_load_explicit(&p->wake->peer, memory_order_acquire) == NULL) {
			(void)droce_wake_arm(p, DROCE_WAKE_ANY); /* says hello (rate limited): next time */
			return -1;
		}
	}
	atomic_fetch_add(&line_waiters, 1); /* seq_cst: before the arms */
	(void)lines_arm_all(DROCE_WAKE_ANY, false);
	fds[nfd++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	for (unsigned int i = 0; i < np; i++)
		fds[nfd++] = (struct pollfd){ .fd = droce_wake_fd(droce_port_get(i)), .events = POLLIN };
	/* armed: one more look (the peer fences between its ring store and
	 * its look at our word, as we do between the arm and this pass) */
	(void)droce_engines_progress();
	if (!ready(arg)) {
		atomic_fetch_add_explicit(&line_sleeps, 1, memory_order_relaxed);
		pthread_cleanup_push(line_cancelled, NULL); /* ppoll is a cancellation point */
		int n = ppoll(fds, nfd, &ts, NULL);

		if (n > 0 && (fds[0].revents & POLLIN))
			rc = 1;
		else if (n < 0 && errno == EINTR)
			rc = 2; /* a signal handler ran (ppoll is never restarted) */
		pthread_cleanup_pop(0);
	}
	for (unsigned int i = 1; i < nfd; i++)
		if (fds[i].revents & POLLIN) {
			droce_wake_drain(droce_port_get(i - 1));
			woken = true;
		}
	line_leave(woken);
	return rc;
}

int
droce_engine_fallback_start(uint32_t us)
{
	int rc;

	fallback.after_tsc = rte_get_tsc_hz() / 1000000 * us;
	fallback.polling_tsc = rte_get_tsc_hz() / 1000000 * FALLBACK_POLLING_US;
	{
		cpu_set_t set;

		fallback.cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? (unsigned int)CPU_COUNT(&set) : 0;
		if (fallback.cpus == 0)
			fallback.cpus = (unsigned int)sysconf(_SC_NPROCESSORS_ONLN);
	}
	if (fallback.loadavg_fd < 0)
		fallback.loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	atomic_store(&fallback.stop, false);
	fallback.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fallback.efd < 0)
		return errno;
	rc = pthread_create(&fallback.tid, NULL, fallback_main, NULL);
	if (rc != 0) {
		close(fallback.efd);
		fallback.efd = -1;
		return rc;
	}
	pthread_setname_np(fallback.tid, "droce-fallback");
	fallback.running = true;
	return 0;
}

static void
efd_poke(void)
{
	uint64_t one = 1;

	(void)write(fallback.efd, &one, sizeof(one));
}

void
droce_engine_fallback_stop(void)
{
	if (!fallback.running)
		return;
	atomic_store(&fallback.stop, true);
	efd_poke();
	pthread_join(fallback.tid, NULL);
	close(fallback.efd);
	fallback.efd = -1;
	if (fallback.loadavg_fd >= 0)
		close(fallback.loadavg_fd);
	fallback.loadavg_fd = -1;
	fallback.crowd = false;
	fallback.running = false;
}

uint64_t
droce_engines_line_sleeps(void)
{
	return atomic_load_explicit(&line_sleeps, memory_order_relaxed);
}

uint64_t
droce_engines_fallback_passes(void)
{
	return atomic_load(&fallback.passes);
}

void
droce_engines_fallback_sleeps(uint64_t *sleeps, uint64_t *deep)
{
	*sleeps = atomic_load(&fallback.sleeps);
	*deep = atomic_load(&fallback.deep_sleeps);
}

/* Wakes it only from a sleep on the wake lines (a timer sleep ends within
 * FALLBACK_SLEEP_MAX_US anyway: no system call for it). */
void
droce_engine_fallback_nudge(void)
{
	atomic_fetch_add(&fallback.nudges, 1); /* seq_cst: then the look at asleep_deep */
	if (atomic_load(&asleep_deep) && fallback.efd >= 0)
		efd_poke();
}

void
droce_engines_fallback_wake(void)
{
	if (fallback.running)
		droce_engine_fallback_nudge();
}

/* Wakes it if it sleeps (an application thread is about to block). */
void
droce_engine_fallback_kick(void)
{
	atomic_fetch_add(&fallback.kicks, 1); /* seq_cst: then the look at sleeping */
	if (atomic_load(&droce_fallback_asleep) && fallback.efd >= 0)
		efd_poke();
}
