/* SPDX-License-Identifier: BSD-3-Clause
 * What the engine's files share (not for the transports):
 *   engine.c           the engine set, start/stop, driving (progress, lcore loop)
 *   engine_chan.c      application threads' channels and the messages on them
 *   engine_qpt.c       the QP table's index allocation (lookup inline below)
 *   engine_pass.c      a pass: receive (parse, dispatch, hand-over, RAW
 *                      delivery), work, flush
 *   engine_sched.c     which QPs a pass visits: the active list, the timer wheel
 *   engine_fallback.c  the co-located fallback progress thread
 */
#ifndef DROCE_ENGINE_INTERNAL_H
#define DROCE_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <rte_rcu_qsbr.h>

#include "engine.h"

/* Every engine of the running dataplane (engine.c). */
struct droce_engine_set {
	unsigned int n;
	bool started;
	bool dedicated;
	/*
	 * This process is a child made by fork() after the engines started
	 * (pthread_atfork): it never drives the parent's engines (their copies
	 * would share the memif rings with the parent's), and every message to
	 * an engine fails with EIO, so verbs on the parent's objects fail at
	 * once rather than wait for an engine that does not run here.
	 */
	bool forked;
	struct droce_engine *eng[DROCE_MAX_ENGINES];
	struct rte_rcu_qsbr *rcu;
	pthread_mutex_t chan_lock;  /* channels, QP index allocation, GSI slots, stop hook */
	uint64_t gen;               /* bumped by every start: older thread channels are gone */
	bool gsi_taken[DROCE_MAX_PORTS]; /* a GSI QP exists for the port (chan_lock) */
	void (*stop_hook)(void);         /* droce_engines_at_stop() (chan_lock) */
	uint64_t wait_spin_tsc;          /* [engines] wait_spin_us in TSC cycles (0: none) */
};

extern struct droce_engine_set droce_engines;

/* ---- driving (engine.c; the pass: engine_pass.c) ---- */

/* Takes @eng for one or more passes (try-CAS, acquire); false if someone drives it. */
static inline bool
droce_engine_take(struct droce_engine *eng)
{
	uint32_t free_ = 0;

	return atomic_load_explicit(&eng->driving, memory_order_relaxed) == 0 &&
	       atomic_compare_exchange_strong_explicit(&eng->driving, &free_, 1,
						       memory_order_acquire, memory_order_relaxed);
}

static inline void
droce_engine_give(struct droce_engine *eng)
{
	atomic_store_explicit(&eng->driving, 0, memory_order_release);
}

/* The calling thread runs passes of its own, not inside an application's
 * verbs: the fallback thread, an engine lcore (droce_engines_in_app_pass). */
void droce_engine_thread_mark(void);

/* One pass; false when the engine is idle (nothing received or drained, no QP
 * with work or a timer, nothing waiting to be sent). */
bool droce_engine_pass_lc(struct droce_engine *eng);

/* ---- channels (engine_chan.c) ---- */

/* Phase 1: handles every message waiting on @eng's channels; how many. */
unsigned int droce_engine_drain_lc(struct droce_engine *eng);
/* Frees @eng's channels and what waits on them (engines stopping). */
void droce_engine_chan_free(struct droce_engine *eng);
/* The calling thread forgets its channels (they were freed with the engines). */
void droce_engine_chan_forget(void);

/* ---- which QPs a pass visits (engine_sched.c) ---- */

void droce_engine_sched_init(struct droce_engine *eng);
/* The wheel's slots of the ticks over since the last pass (@now_tick: this
 * pass's): their QPs whose deadline came go to the active list. */
void droce_engine_wheel_lc(struct droce_engine *eng, uint64_t now_tick);
/* Phase 4: the QPs whose timers are due go to the active list, before
 * phase 3 runs it; this pass's pause (pause_now).  Inline: most passes
 * find the wheel empty or no tick over since the one before (a tick is a
 * few microseconds), and then only the wheel's tick moves. */
static inline void
droce_engine_timers_lc(struct droce_engine *eng)
{
	uint64_t now_tick = eng->now >> eng->tw_shift;

	eng->pause_now = unlikely(eng->pass_gap > eng->stall_cycles) ?
			 eng->pass_gap - eng->stall_cycles : 0;
	if (likely(eng->tw_count == 0 || now_tick == eng->tw_tick)) {
		eng->tw_tick = now_tick;
		return;
	}
	droce_engine_wheel_lc(eng, now_tick);
}
/* Before @qp's turn: its timers move past the engine's pauses it was not run
 * in (droce_rc_timers_lc moves them past this pass's). */
void droce_engine_catch_up_lc(struct droce_engine *eng, struct droce_qp *qp);
/* Phases 3-4 of a pass with no QP active and none in the wheel: only the
 * wheel's tick and the engine's pauses move (what the two calls around an
 * empty work phase would do). */
static inline void
droce_engine_idle_lc(struct droce_engine *eng)
{
	if (unlikely(eng->pass_gap > eng->stall_cycles))
		eng->paused += eng->pass_gap - eng->stall_cycles;
	eng->tw_tick = eng->now >> eng->tw_shift;
}
/* The end of phase 3: this pass's pause joins the engine's pauses. */
static inline void
droce_engine_sched_end_lc(struct droce_engine *eng)
{
	eng->paused += eng->pause_now;
	eng->pause_now = 0;
}
/* After @qp's turn in phase 3: it stays active (work now: to its list's
 * tail), goes to the timer wheel (only timers) or off both. */
void droce_engine_settle_lc(struct droce_engine *eng, struct droce_qp *qp);
/* @qp off the active list and the wheel (it is being detached). */
void droce_engine_unsched_lc(struct droce_engine *eng, struct droce_qp *qp);

/* ---- the QP table (engine_qpt.c allocates; the engine reads and writes entries) ---- */

/* The entry of index @i (engine side; its page exists once the index was handed out). */
static inline struct droce_qp **
droce_engine_qpt_slot_lc(struct droce_engine *eng, uint32_t i)
{
	struct droce_qp **page = atomic_load_explicit(&eng->qpt[i >> DROCE_QPT_PAGE_BITS],
						      memory_order_acquire);

	return page != NULL ? &page[i & (DROCE_QPT_PAGE - 1)] : NULL;
}

/* The QP of @qpn on @eng, or NULL. */
static inline struct droce_qp *
droce_engine_qp_lookup_lc(struct droce_engine *eng, uint32_t qpn)
{
	uint32_t i = droce_qpn_index(qpn); /* QPN 0..63: UINT32_MAX, past the table */
	struct droce_qp **slot;
	struct droce_qp *qp;

	if (i >= DROCE_QP_INDEXES)
		return NULL;
	slot = droce_engine_qpt_slot_lc(eng, i);
	if (slot == NULL)
		return NULL;
	qp = *slot;
	if (qp == NULL || qp->qpn != qpn)
		return NULL;
	return qp;
}

/* ---- receive (engine_pass.c) ---- */

/* Registers the mbuf field a handed-over frame's parse result travels in (engines start). */
void droce_engine_rx_init(void);
/* The memif wake lines' answers (pmd_glue/wake.h) from the opcode table: what a
 * responder or a notification point sends asks nothing of its receiver. */
void droce_engines_wake_answers_set(void);
/* One received frame of @port: RAW_PACKET flow rules first (when the port has
 * any: @flows), then RoCE dispatch (or ARP and the like to the port). */
void droce_engine_rx_one_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m,
			    bool flows);

/* ---- the fallback thread (engine_fallback.c) ---- */

int droce_engine_fallback_start(uint32_t us);
/* Where the fallback thread runs (engine_place.c): an application thread's
 * pass notes its TID (cheap, at most every 10 ms); the fallback thread, at
 * its start, keeps its CPU set, and, while the CPUs are crowded, leaves the
 * CPU of the application thread noted last (its whole set back after). */
void droce_place_note_app(uint64_t now_tsc);
void droce_place_start(void);
void droce_place_step(bool crowd, uint64_t now_tsc);
void droce_engine_fallback_stop(void);
/* Wakes it if it sleeps (a thread about to block). */
void droce_engine_fallback_kick(void);
/* Wakes it if it sleeps on the wake lines alone (a channel message, a bell,
 * an owed event: a timer sleep ends soon anyway). */
void droce_engine_fallback_nudge(void);
/* True while it sleeps (or is about to): a bell that made an engine's
 * bell_top non-zero kicks it then (droce_engine_ring_up; Dekker against its
 * look at bell_top after it set this). */
extern _Atomic bool droce_fallback_asleep;

/* UD multicast (mcast.c): a port's members, sorted by GID, immutable once
 * published; engines load droce_mcast_tab[port] (acquire) per frame. */
struct droce_mcast_ent {
	uint8_t gid[16];
	uint32_t qpn;
	uint16_t engine;
};
struct droce_mcast_tab {
	unsigned int n;
	struct droce_mcast_ent e[];
};
extern struct droce_mcast_tab *_Atomic droce_mcast_tab[DROCE_MAX_PORTS];
/* m->port of a group datagram handed to another engine (raw.h: DROCE_XFER_RAW) */
#define DROCE_XFER_MCAST 0x4000u

#endif /* DROCE_ENGINE_INTERNAL_H */
