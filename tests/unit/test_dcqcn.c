/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN's reaction point (dataplane/dcqcn.c) on a simulated clock in
 * nanoseconds, against the worked examples of the reference
 * (congestion-control.md 1.2-1.4 and 5.2): one CNP, a CNP train, recovery
 * after the CNPs stop, alpha's decay, the coalesced cut and its floor, the
 * increase stages.  Rates in kb/s on a 100 Gb/s line.  No EAL.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "dataplane/dcqcn.h"

#define US 1000ull                /* clock units (ns) per microsecond */
#define T0 (1000 * US)            /* the clock never reads 0 */
#define LINE 100000000ull         /* 100 Gb/s in kb/s */

static struct droce_dcqcn_params P;
static struct droce_dcqcn S;

static void
setup(enum droce_dcqcn_algo algo, const struct droce_dcqcn_rp_config *over)
{
	struct droce_dcqcn_rp_config c;

	if (over != NULL)
		c = *over;
	else
		memset(&c, 0xff, sizeof(c)); /* every key DROCE_DCQCN_UNSET */
	droce_dcqcn_defaults(algo, &c);
	droce_dcqcn_params_init(&P, algo, &c, LINE / 1000, US);
	droce_dcqcn_init(&S, &P);
}

static struct droce_dcqcn_rp_config
unset(void)
{
	struct droce_dcqcn_rp_config c;

	memset(&c, 0xff, sizeof(c));
	return c;
}

Test(dcqcn, defaults_are_connectx_and_paper)
{
	struct droce_dcqcn_rp_config c = unset();

	droce_dcqcn_defaults(DROCE_DCQCN_MLX5, &c);
	cr_assert_eq(c.rpg_time_reset, 300);
	cr_assert_eq(c.rpg_threshold, 1);
	cr_assert_eq(c.rpg_ai_rate, 5);
	cr_assert_eq(c.rpg_hai_rate, 50);
	cr_assert_eq(c.rpg_gd, 11);
	cr_assert_eq(c.rpg_min_dec_fac, 50);
	cr_assert_eq(c.rpg_min_rate, 1);
	cr_assert_eq(c.dce_tcp_g, 1019);
	cr_assert_eq(c.dce_tcp_rtt, 1);
	cr_assert_eq(c.rate_reduce_monitor_period, 4);
	cr_assert_eq(c.initial_alpha_value, 1023);
	cr_assert_eq(c.clamp_tgt_rate, 0);
	cr_assert_eq(c.clamp_tgt_rate_after_time_inc, 1);
	c = unset();
	c.rpg_ai_rate = 7; /* a key the file gave stays */
	droce_dcqcn_defaults(DROCE_DCQCN_PAPER, &c);
	cr_assert_eq(c.rpg_ai_rate, 7);
	cr_assert_eq(c.rpg_time_reset, 55);
	cr_assert_eq(c.dce_tcp_rtt, 55);
	cr_assert_eq(c.rpg_threshold, 5);
	cr_assert_eq(c.dce_tcp_g, 1020); /* 1 - 1/256 */
	cr_assert_eq(c.rpg_byte_reset * 64ull, 10000000ull);
}

/* Paper, one CNP at 100 Gb/s with alpha 1: Rt 100, Rc 50; then, every 55 us
 * (the timer; alpha's K ticks with it), five fast-recovery steps 75, 87.5,
 * 93.75, 96.875, 98.4375, then additive increase (Rt at the line already),
 * alpha decaying by 1/256 per K. */
Test(dcqcn, paper_single_cnp_and_recovery)
{
	static const uint64_t fr[] = { 75000000, 87500000, 93750000, 96875000, 98437500 };
	uint32_t alpha;

	setup(DROCE_DCQCN_PAPER, NULL);
	cr_assert_not(droce_dcqcn_limited(&S, &P));
	droce_dcqcn_cnp(&S, &P, T0);
	cr_assert_eq(S.rt, LINE);
	cr_assert_eq(S.rc, LINE / 2);
	cr_assert_eq(S.alpha, 1024, "alpha = (1-g) + g = 1");
	cr_assert(droce_dcqcn_limited(&S, &P));
	alpha = S.alpha;
	for (unsigned int i = 0; i < 5; i++) {
		droce_dcqcn_advance(&S, &P, T0 + (i + 1) * 55 * US - 1);
		cr_assert_eq(S.t_stage, i, "step %u early", i);
		droce_dcqcn_advance(&S, &P, T0 + (i + 1) * 55 * US);
		cr_assert_eq(S.rc, fr[i], "FR step %u: rc %lu", i, S.rc);
		cr_assert_eq(S.rt, LINE);
		alpha = alpha * 1020 / 1024;
		cr_assert_eq(S.alpha, alpha, "alpha after %u K: %u, want %u", i + 1, S.alpha, alpha);
	}
	/* T = 6 > F, BC = 0: additive increase; Rt stays at the line */
	droce_dcqcn_advance(&S, &P, T0 + 6 * 55 * US);
	cr_assert_eq(S.rc, (LINE + fr[4] + 1) / 2);
	cr_assert_eq(S.increases, 6);
	/* back at the line rate within ~30 timer periods: no longer limited */
	droce_dcqcn_advance(&S, &P, T0 + 40 * 55 * US);
	cr_assert_eq(S.rc, LINE);
	cr_assert_not(droce_dcqcn_limited(&S, &P));
	cr_assert_eq(S.next_inc, 0, "the increase timer stops at the line rate");
}

/* Paper, a CNP train every 50 us (inside the 55 us timer: no increase ever
 * runs): 100 -> 50 -> 25 -> ... each CNP halves (alpha stays 1), down to the
 * 1 Mb/s floor. */
Test(dcqcn, paper_cnp_train_halves_to_the_floor)
{
	uint64_t want = LINE;

	setup(DROCE_DCQCN_PAPER, NULL);
	for (unsigned int i = 0; i < 20; i++) {
		droce_dcqcn_cnp(&S, &P, T0 + i * 50 * US);
		want -= want / 2; /* Rc (1 - alpha/2), alpha 1, the decrement rounded down */
		want = want < P.min ? P.min : want;
		cr_assert_eq(S.rc, want, "CNP %u: rc %lu want %lu", i, S.rc, want);
		cr_assert_eq(S.alpha, 1024);
		cr_assert_eq(S.increases, 0);
	}
	cr_assert_eq(S.rc, 1000, "the 1 Mb/s minimum");
	cr_assert_eq(S.cuts, 20);
}

/* Paper's byte counter and hyper increase: with the timer far away, every
 * 10 MB sent is an increase event; once both counters passed F, Rt grows by
 * (min(T, BC) - F) * R_HAI. */
Test(dcqcn, paper_byte_counter_and_hyper_increase)
{
	struct droce_dcqcn_rp_config c = unset();
	uint64_t rt;

	setup(DROCE_DCQCN_PAPER, NULL);
	droce_dcqcn_cnp(&S, &P, T0);
	droce_dcqcn_cnp(&S, &P, T0 + 1 * US); /* Rt = 50G, Rc = 25G */
	cr_assert_eq(S.rt, LINE / 2);
	cr_assert_eq(S.rc, LINE / 4);
	c.rpg_time_reset = 1000000; /* 1 s: the timer stays out of the way */
	setup(DROCE_DCQCN_PAPER, &c);
	droce_dcqcn_cnp(&S, &P, T0);
	droce_dcqcn_cnp(&S, &P, T0 + 1 * US);
	for (unsigned int i = 1; i <= 6; i++) {
		droce_dcqcn_sent(&S, &P, 10000000, T0 + (1 + i) * US);
		cr_assert_eq(S.b_stage, i);
	}
	/* BC 1..5 fast recovery, BC 6 with T 0: additive */
	cr_assert_eq(S.rt, LINE / 2 + 40000);
	rt = S.rt;
	/* the timer's events now: T = 1..5 leave min(T, BC) <= F (additive),
	 * T = 6: min 6 > 5: hyper, (6 - 5) * 200 Mb/s */
	for (unsigned int i = 1; i <= 5; i++)
		droce_dcqcn_advance(&S, &P, T0 + 1 * US + i * 1000000 * US);
	cr_assert_eq(S.t_stage, 5);
	cr_assert_eq(S.rt, rt + 5 * 40000);
	rt = S.rt;
	droce_dcqcn_advance(&S, &P, T0 + 1 * US + 6 * 1000000ull * US);
	cr_assert_eq(S.rt, rt + 200000);
	/* BC 7, T 6: (min - F) = 1 R_HAI again */
	droce_dcqcn_sent(&S, &P, 10000000, T0 + 1 * US + 6 * 1000000ull * US + 1);
	cr_assert_eq(S.rt, rt + 2 * 200000);
}

/* mlx5, one CNP at 100 Gb/s: alpha = initial 1023, one cut at once to
 * 100 * (1 - 1023/2048) with Rt kept at the line (no increase event before
 * it: clamp_tgt_rate_after_time_inc), alpha rising in its first period, then
 * falling by 1019/1024 per microsecond; increases every 300 us: one fast
 * recovery, one additive, then hyper (Rt at the line already); back at the
 * line rate. */
Test(dcqcn, mlx5_single_cnp_and_recovery)
{
	uint64_t rc = LINE - (LINE * 1023 >> 11);
	uint32_t alpha = 1023;

	setup(DROCE_DCQCN_MLX5, NULL);
	droce_dcqcn_cnp(&S, &P, T0);
	cr_assert_eq(S.cuts, 1);
	cr_assert_eq(S.rc, rc, "rc %lu want %lu", S.rc, rc);
	cr_assert_eq(S.rt, LINE);
	/* alpha: the CNP's period raises it (1019/1024 * 1023 + 5), then decay */
	droce_dcqcn_advance(&S, &P, T0 + 1 * US);
	alpha = (1019 * alpha >> 10) + 5;
	cr_assert_eq(S.alpha, alpha);
	for (unsigned int n = 2; n <= 200; n++) {
		droce_dcqcn_advance(&S, &P, T0 + n * US);
		alpha = 1019 * alpha >> 10;
		cr_assert_eq(S.alpha, alpha, "alpha at %u us: %u want %u", n, S.alpha, alpha);
	}
	cr_assert_eq(S.next_dec, 0, "no CNP: no decrease check running");
	droce_dcqcn_advance(&S, &P, T0 + 300 * US - 1);
	cr_assert_eq(S.rc, rc, "nothing before the timer");
	droce_dcqcn_advance(&S, &P, T0 + 300 * US);
	rc = (LINE + rc + 1) / 2;
	cr_assert_eq(S.rc, rc, "fast recovery");
	droce_dcqcn_advance(&S, &P, T0 + 600 * US);
	rc = (LINE + rc + 1) / 2;
	cr_assert_eq(S.rc, rc, "additive (Rt at the line)");
	cr_assert_eq(S.t_stage, 2);
	droce_dcqcn_advance(&S, &P, T0 + 100000 * US);
	cr_assert_eq(S.rc, LINE);
	cr_assert_not(droce_dcqcn_limited(&S, &P));
	/* alpha reached 0 long ago and stopped; the next CNP starts again at a
	 * boundary of its period */
	cr_assert_eq(S.alpha, 0);
	cr_assert_eq(S.next_alpha, 0);
	cr_assert_eq(droce_dcqcn_next_event(&S), 0, "nothing runs for an idle QP");
}

/* mlx5: the increase stages when Rt is below the line (a second cut after an
 * increase event clamps Rt = Rc): fast recovery, then Rt + 5 Mb/s, then
 * Rt + 50 Mb/s per 300 us. */
Test(dcqcn, mlx5_stages_ai_then_hai)
{
	uint64_t rt, rc;

	setup(DROCE_DCQCN_MLX5, NULL);
	droce_dcqcn_cnp(&S, &P, T0);
	droce_dcqcn_advance(&S, &P, T0 + 300 * US); /* FR: an increase event */
	rc = S.rc;
	droce_dcqcn_cnp(&S, &P, T0 + 301 * US);
	droce_dcqcn_advance(&S, &P, T0 + 304 * US); /* the monitor period's boundary */
	cr_assert_eq(S.cuts, 2);
	cr_assert_eq(S.rt, rc, "Rt = Rc before the cut: an increase came since the last cut");
	rt = S.rt;
	rc = S.rc;
	cr_assert_lt(rc, rt);
	droce_dcqcn_advance(&S, &P, T0 + 604 * US);
	cr_assert_eq(S.rt, rt, "fast recovery keeps Rt");
	cr_assert_eq(S.rc, (rt + rc + 1) / 2);
	droce_dcqcn_advance(&S, &P, T0 + 904 * US);
	cr_assert_eq(S.rt, rt + 5000, "additive: +5 Mb/s");
	droce_dcqcn_advance(&S, &P, T0 + 1204 * US);
	cr_assert_eq(S.rt, rt + 5000 + 50000, "hyper: +50 Mb/s");
	droce_dcqcn_advance(&S, &P, T0 + 1504 * US);
	cr_assert_eq(S.rt, rt + 5000 + 2 * 50000);
}

/* mlx5: CNPs are coalesced per 4 us monitor period: two CNPs inside one
 * period make one cut at its end; and a cut is never deeper than
 * rpg_min_dec_fac (with rpg_gd 10, alpha 1023 would cut 99.9 %). */
Test(dcqcn, mlx5_coalesced_cut_and_its_floor)
{
	struct droce_dcqcn_rp_config c = unset();
	uint64_t rc;

	setup(DROCE_DCQCN_MLX5, NULL);
	droce_dcqcn_cnp(&S, &P, T0);          /* cut 1, at once; the periods count from T0 */
	rc = S.rc;
	droce_dcqcn_cnp(&S, &P, T0 + 5200);   /* both in (T0 + 4 us, T0 + 8 us] */
	droce_dcqcn_cnp(&S, &P, T0 + 6100);
	droce_dcqcn_advance(&S, &P, T0 + 8 * US - 1);
	cr_assert_eq(S.cuts, 1, "no cut before the period ends");
	droce_dcqcn_advance(&S, &P, T0 + 8 * US);
	cr_assert_eq(S.cuts, 2, "one cut for the two CNPs");
	cr_assert_eq(S.cnps, 3);
	cr_assert_lt(S.rc, rc);
	cr_assert_geq(S.rc, rc / 2);
	droce_dcqcn_advance(&S, &P, T0 + 40 * US);
	cr_assert_eq(S.cuts, 2);

	c.rpg_gd = 10;
	setup(DROCE_DCQCN_MLX5, &c);
	droce_dcqcn_cnp(&S, &P, T0);
	cr_assert_eq(S.rc, LINE / 2, "rpg_min_dec_fac 50: half at most");
}

/* mlx5, a CNP train every 10 us for 1 ms (each in its own monitor period:
 * one cut each), then nothing: the rate falls to the
 * floor of 1 Mb/s, then climbs back to the line once the CNPs stop. */
Test(dcqcn, mlx5_cnp_train_then_recovery)
{
	uint64_t prev = LINE, t, last = 0;

	setup(DROCE_DCQCN_MLX5, NULL);
	for (unsigned int i = 0; i < 100; i++) {
		t = T0 + i * 10 * US;
		droce_dcqcn_cnp(&S, &P, t);
		droce_dcqcn_advance(&S, &P, t + 4 * US);
		cr_assert_leq(S.rc, prev, "CNP %u raised the rate", i);
		cr_assert_geq(S.rc, P.min);
		prev = S.rc;
	}
	cr_assert_eq(S.cuts, 100);
	cr_assert_eq(S.rc, P.min, "rc %lu", S.rc);
	/* recovery: non-decreasing, at the line within 40 ms */
	for (t = T0 + 1000 * US; t < T0 + 41000 * US; t += 100 * US) {
		droce_dcqcn_advance(&S, &P, t);
		cr_assert_geq(S.rc, prev);
		prev = S.rc;
		if (last == 0 && !droce_dcqcn_limited(&S, &P))
			last = t;
	}
	cr_assert_eq(S.rc, LINE);
	cr_assert_neq(last, 0, "never back at the line");
	cr_assert_eq(S.cuts, 100);
}

/* The byte counter (mlx5: rpg_byte_reset x 64 bytes = 2 MiB) makes
 * increase events as the timer does, and they count as stages. */
Test(dcqcn, mlx5_byte_counter)
{
	uint64_t rc;

	setup(DROCE_DCQCN_MLX5, NULL);
	droce_dcqcn_cnp(&S, &P, T0);
	rc = S.rc;
	droce_dcqcn_sent(&S, &P, 32767 * 64 - 1, T0 + 10 * US);
	cr_assert_eq(S.b_stage, 0);
	cr_assert_eq(S.rc, rc);
	droce_dcqcn_sent(&S, &P, 1, T0 + 11 * US);
	cr_assert_eq(S.b_stage, 1);
	cr_assert_eq(S.rc, (LINE + rc + 1) / 2, "fast recovery by the byte counter");
}

/* alpha's decay over n periods: the Q10 recurrence stays within rounding of
 * (1 - g)^n (paper: per K without CNP). */
Test(dcqcn, paper_alpha_decay_matches_the_formula)
{
	double want = 1024.0;

	setup(DROCE_DCQCN_PAPER, NULL);
	droce_dcqcn_cnp(&S, &P, T0); /* alpha 1 */
	for (unsigned int n = 1; n <= 100; n++) {
		want *= 1.0 - 1.0 / 256; /* 1024 (1 - g)^n */

		droce_dcqcn_advance(&S, &P, T0 + n * 55 * US);
		cr_assert((double)S.alpha - want <= n && want - (double)S.alpha <= n, "alpha after %u K: %u, (1-g)^n %f", n,
			  S.alpha, want);
	}
}
