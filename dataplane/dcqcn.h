/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN's reaction point (issue 25 section 2) as a pure module: one QP's
 * rate state driven by the CNPs it receives, the bytes it sends and a clock
 * the caller passes in (any unit: the parameters' times are converted into
 * it by droce_dcqcn_params_init).  No DPDK, no engine: the unit tests run it
 * on a simulated clock; dataplane/cc.c runs it on the TSC.
 *
 * Two algorithms ([dcqcn] algorithm):
 *
 *  mlx5   what ConnectX runs ("Mellanox DCQCN", the HPCC simulator's port
 *         RdmaHw::*Mlx): alpha is an EWMA updated every dce_tcp_rtt, up
 *         (alpha = g*alpha/1024 + 1024 - g) when a CNP came in the period,
 *         down (alpha = g*alpha/1024) when none did; CNPs are coalesced:
 *         every rate_reduce_monitor_period, if one came, the rate is cut
 *         once, Rc = max(rpg_min_rate, Rc * (1 - alpha / 2^rpg_gd)), by at
 *         most rpg_min_dec_fac %, and the target Rt = Rc before the cut when
 *         clamp_tgt_rate, or clamp_tgt_rate_after_time_inc and an increase
 *         event came since the last cut.  The first CNP sets alpha =
 *         initial_alpha_value (and both rates to rate_to_set_on_first_cnp
 *         when not 0).  Increase events come every rpg_time_reset of the
 *         timer and every rpg_byte_reset * 64 bytes sent; counting the
 *         events since the last cut as n (before this one): n < rpg_threshold
 *         fast recovery Rc = (Rc + Rt) / 2; n == rpg_threshold additive
 *         increase Rt += rpg_ai_rate first; n > rpg_threshold hyper increase
 *         Rt += rpg_hai_rate first.
 *  paper  the SIGCOMM 2015 paper's (htsim's DCQCNSrc): every CNP cuts at
 *         once, Rt = Rc, Rc = Rc * (1 - alpha/2), then alpha = g*alpha/1024
 *         + 1024 - g, and restarts the timers; alpha decays by g every
 *         dce_tcp_rtt (K) without CNP; the timer (T) and the byte counter
 *         (BC) count their events since the cut, and after each:
 *         max(T, BC) <= F fast recovery, min(T, BC) > F hyper increase
 *         Rt += (min(T, BC) - F) * R_HAI, else additive increase Rt += R_AI
 *         (F = rpg_threshold); Rc = (Rt + Rc) / 2 after each.
 *
 * Rates are in kb/s, kept within [rpg_min_rate, line]; alpha is in 1/1024.
 * A QP is limited from its first cut until Rc and Rt are back at the line
 * rate; then droce_dcqcn_limited() is false and the caller paces nothing.
 */
#ifndef DROCE_DP_DCQCN_H
#define DROCE_DP_DCQCN_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/config.h>

/* The algorithm's default for every parameter @c leaves DROCE_DCQCN_UNSET. */
void droce_dcqcn_defaults(enum droce_dcqcn_algo algo, struct droce_dcqcn_rp_config *c);

struct droce_dcqcn_params {
	enum droce_dcqcn_algo algo;
	uint64_t line, min, ai, hai, first; /* kb/s (first: 0 = keep the rate) */
	uint64_t t_inc, t_alpha, t_dec;     /* clock units */
	uint64_t byte_reset;                /* bytes, 0 = no byte counter */
	uint32_t threshold;                 /* F */
	uint32_t gd;                        /* rpg_gd */
	uint32_t min_dec_fac;               /* % */
	uint32_t g;                         /* dce_tcp_g, 1/1024 */
	uint32_t alpha0;                    /* initial_alpha_value, 1/1024 */
	bool clamp, clamp_ati;
};

/* From the [dcqcn] values @c (every one set: droce_dcqcn_defaults), a line
 * rate of @line_mbps (rpg_max_rate when not 0 takes its place) and a clock
 * of @ticks_per_us units per microsecond. */
void droce_dcqcn_params_init(struct droce_dcqcn_params *p, enum droce_dcqcn_algo algo,
			     const struct droce_dcqcn_rp_config *c, uint64_t line_mbps,
			     uint64_t ticks_per_us);

struct droce_dcqcn {
	uint64_t rc, rt;          /* current and target rate, kb/s */
	uint32_t alpha;           /* 1/1024 */
	uint32_t t_stage, b_stage; /* increase events since the last cut: timer, byte counter */
	uint64_t bytes;           /* sent since the last byte-counter event */
	/* timers (clock units; 0 = stopped): alpha update, rate-decrease check
	 * (mlx5), rate-increase timer; phases of the periodic mlx5 ones */
	uint64_t next_alpha, next_dec, next_inc;
	uint64_t alpha_phase, dec_phase;
	bool cnp_alpha, cnp_dec;  /* a CNP came in the current period (mlx5) */
	bool seen_cnp;            /* the first CNP came */
	/* what happened, for telemetry and tests */
	uint64_t cnps, cuts, increases;
};

/* A QP at the line rate, never notified. */
void droce_dcqcn_init(struct droce_dcqcn *s, const struct droce_dcqcn_params *p);
/* Runs every timer due at or before @now, in time order. */
void droce_dcqcn_advance(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t now);
/* A CNP for the QP at @now (advances first). */
void droce_dcqcn_cnp(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t now);
/* The QP sent @bytes at @now: the byte counter (advances first). */
void droce_dcqcn_sent(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t bytes,
		      uint64_t now);
/* The earliest running timer (0: none). */
uint64_t droce_dcqcn_next_event(const struct droce_dcqcn *s);

/* True while the QP must be paced (its rate below the line's). */
static inline bool
droce_dcqcn_limited(const struct droce_dcqcn *s, const struct droce_dcqcn_params *p)
{
	return s->rc < p->line || s->rt < p->line;
}

#endif /* DROCE_DP_DCQCN_H */
