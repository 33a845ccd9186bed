/* SPDX-License-Identifier: BSD-3-Clause
 * Which QPs a pass visits.  A QP is on one of two engine lists, or none:
 *   active  it has work now (posted WQEs the doorbell announced, an ACK or
 *           READ response to send, completions waiting for CQ room, ...):
 *           one list per port; phase 3 runs its transport until it has none;
 *   wheel   it has only timers (retransmission, RNR): it waits in the
 *           timer wheel's slot of its earliest deadline and goes back to
 *           the active list when that comes (phase 4, before the work) or
 *           when anything else activates it (a frame for it, a doorbell,
 *           a modify).
 * So a pass costs what the QPs with work cost, not a walk over every QP
 * with something in flight (1,000 QPs each waiting for an ACK).
 *
 * Phase 3 takes each port's list from its head, and a QP that keeps work
 * goes to the tail (round robin).  Once the port's waiting room has no
 * budget left for a QP, at most DROCE_FULL_TURNS more of its QPs run (with
 * budget 0: completions, flushes) and the rest wait for the next pass, so
 * a congested port does not cost a turn of each of its busy QPs per pass.
 *
 * The wheel: DROCE_TW_SLOTS lists, a slot per 2^tw_shift TSC cycles (a few
 * microseconds); a deadline further away than one turn waits in its slot
 * and is passed over (key still ahead) on the earlier turns.  A slot is
 * taken once its tick is over, so a timer fires at most one tick late.
 * Keys stay exact: every frame for an RC QP activates it (rc.c), which
 * takes it off the wheel, and the work phase files it again with its
 * deadlines as they are then.
 *
 * Engine pauses (a pass starting more than DROCE_ENGINE_STALL_US after the
 * one before: descheduled, or nobody drove it) are not waiting time, up to
 * T (the QP's timeout attribute) of them per retry period (rc_retx.c):
 * droce_rc_timers_lc moves the deadlines of the QP it runs past this pass's
 * pause.  A QP not run in a pass (in the wheel, or left waiting behind a
 * full port) catches up when it next runs (droce_engine_catch_up_lc): its
 * retransmission deadline and retry period, if still the ones it had at its
 * last turn, move by the pauses since (as far as its period's excuse
 * allows).  The wheel runs on the TSC: a QP wakes at its deadline as
 * armed, catches up, and goes back to the wheel if the pauses moved its
 * deadline on (so only QPs whose deadline fell inside a pause are walked
 * again; on the pauses' own clock, an engine with a tenth of the CPU woke
 * its QPs ten times too late, and a dead peer was noticed twenty times
 * past its retry budget).
 */
#include <rte_cycles.h>

#include "cc.h"
#include "engine_internal.h"
#include "internal.h"
#include "rc_internal.h"

void
droce_engine_sched_init(struct droce_engine *eng)
{
	uint64_t tick = eng->tsc_hz / DROCE_TW_TICKS_PER_SEC;

	for (unsigned int pi = 0; pi < DROCE_MAX_PORTS; pi++) {
		TAILQ_INIT(&eng->active[pi]);
		eng->n_active[pi] = 0;
	}
	eng->n_active_all = 0;
	for (unsigned int s = 0; s < DROCE_TW_SLOTS; s++)
		TAILQ_INIT(&eng->tw[s]);
	eng->tw_shift = 0;
	while (tick > 1) {
		tick >>= 1;
		eng->tw_shift++;
	}
	eng->stall_cycles = eng->tsc_hz / 1000000 * DROCE_ENGINE_STALL_US;
	eng->tw_tick = droce_clock_now() >> eng->tw_shift;
	eng->tw_count = 0;
	eng->paused = eng->pause_now = 0;
}

/* The earliest timer of @qp (0: none). */
static inline uint64_t
next_deadline(const struct droce_qp *qp)
{
	uint64_t a = qp->rto_deadline, b = qp->rnr_deadline;

	return a == 0 ? b : b == 0 ? a : RTE_MIN(a, b);
}

static inline void
active_del(struct droce_engine *eng, struct droce_qp *qp)
{
	TAILQ_REMOVE(&eng->active[qp->port_index], qp, active_link);
	eng->n_active[qp->port_index]--;
	eng->n_active_all--;
}

static inline void
wheel_del(struct droce_engine *eng, struct droce_qp *qp)
{
	TAILQ_REMOVE(&eng->tw[qp->tw_slot], qp, active_link);
	/* the fallback thread reads it (deep_sleep_arm): relaxed, one writer */
	__atomic_store_n(&eng->tw_count, eng->tw_count - 1, __ATOMIC_RELAXED);
}

void
droce_engine_activate_lc(struct droce_engine *eng, struct droce_qp *qp)
{
	if (qp->sched == DROCE_QP_SCHED_ACTIVE)
		return;
	if (qp->sched == DROCE_QP_SCHED_WHEEL)
		wheel_del(eng, qp);
	else
		qp->tw_paused = eng->paused; /* idle until now: no timer to move */
	TAILQ_INSERT_TAIL(&eng->active[qp->port_index], qp, active_link);
	eng->n_active[qp->port_index]++;
	eng->n_active_all++;
	qp->sched = DROCE_QP_SCHED_ACTIVE;
}

void
droce_engine_unsched_lc(struct droce_engine *eng, struct droce_qp *qp)
{
	if (qp->sched == DROCE_QP_SCHED_ACTIVE)
		active_del(eng, qp);
	else if (qp->sched == DROCE_QP_SCHED_WHEEL)
		wheel_del(eng, qp);
	qp->sched = DROCE_QP_SCHED_NONE;
}

void
droce_engine_catch_up_lc(struct droce_engine *eng, struct droce_qp *qp)
{
	uint64_t shift = eng->paused - qp->tw_paused;

	if (unlikely(shift != 0)) {
		/* at most T of pauses per retry period (rc_retx.c) */
		shift = droce_rc_pause_excuse_lc(qp, shift);
		/* re-armed since (an ACK): a fresh deadline, nothing to move */
		if (qp->rto_deadline != 0 && qp->rto_deadline == qp->tw_rto)
			qp->rto_deadline += shift;
		if (qp->retry_epoch != 0 && qp->retry_epoch == qp->tw_epoch)
			qp->retry_epoch += RTE_MIN(shift, eng->now - qp->retry_epoch);
	}
}

void
droce_engine_settle_lc(struct droce_engine *eng, struct droce_qp *qp)
{
	struct droce_qp_list *l = &eng->active[qp->port_index];
	uint64_t d, t;
	bool busy;

	/* its timers as this turn left them, this pass's pause counted */
	qp->tw_paused = eng->paused + eng->pause_now;
	qp->tw_rto = qp->rto_deadline;
	qp->tw_epoch = qp->retry_epoch;
	d = next_deadline(qp);
	busy = droce_qp_busy_lc(qp);
	if (unlikely(qp->cc != NULL) && busy) {
		/* paced (cc.c): its work waits in the wheel until its pacer lets it */
		uint64_t w = droce_cc_pace_wait(qp, eng->now);

		if (w != 0) {
			busy = false;
			d = d == 0 ? w : RTE_MIN(d, w);
		}
	}
	if (busy || (d != 0 && d <= eng->now)) {
		/* work now (or due already, not an RC timer run this pass): to the tail */
		if (TAILQ_NEXT(qp, active_link) != NULL) {
			TAILQ_REMOVE(l, qp, active_link);
			TAILQ_INSERT_TAIL(l, qp, active_link);
		}
		return;
	}
	active_del(eng, qp);
	if (d == 0) {
		qp->sched = DROCE_QP_SCHED_NONE;
		return;
	}
	qp->tw_key = d;
	t = qp->tw_key >> eng->tw_shift;
	if (t < eng->tw_tick)
		t = eng->tw_tick;
	qp->tw_slot = (uint16_t)(t & (DROCE_TW_SLOTS - 1));
	TAILQ_INSERT_TAIL(&eng->tw[qp->tw_slot], qp, active_link);
	qp->sched = DROCE_QP_SCHED_WHEEL;
	__atomic_store_n(&eng->tw_count, eng->tw_count + 1, __ATOMIC_RELAXED);
}

void
droce_engine_wheel_lc(struct droce_engine *eng, uint64_t now_tick)
{
	uint64_t end, v = eng->now;
	struct droce_qp *qp, *next;

	/* the ticks that are over, each slot at most once */
	end = now_tick;
	if (end - eng->tw_tick > DROCE_TW_SLOTS)
		eng->tw_tick = end - DROCE_TW_SLOTS;
	for (; eng->tw_tick < end && eng->tw_count != 0; eng->tw_tick++) {
		struct droce_qp_list *l = &eng->tw[eng->tw_tick & (DROCE_TW_SLOTS - 1)];

		for (qp = TAILQ_FIRST(l); qp != NULL; qp = next) {
			next = TAILQ_NEXT(qp, active_link);
			if (qp->tw_key <= v)
				droce_engine_activate_lc(eng, qp); /* a later turn's stays */
		}
	}
	eng->tw_tick = end;
}

