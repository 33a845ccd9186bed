/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN's reaction point, a pure module (dcqcn.h says what each algorithm
 * does).  The periodic timers of the mlx5 algorithm are kept lazily: a
 * stopped one (alpha at 0 with no CNP, a decrease check that found none)
 * restarts on the next CNP at the next boundary of its period counted from
 * the first CNP, so it behaves as the free-running timer ConnectX has,
 * without events while nothing changes.
 */
#include <string.h>

#include "dcqcn.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* ConnectX's defaults (mlxconfig of a ConnectX-5, fw 16.27; NVIDIA DOCA's
 * DCQCN parameter table): reference congestion-control.md 1.4. */
static const struct droce_dcqcn_rp_config mlx5_defaults = {
	.rpg_time_reset = 300,
	.rpg_byte_reset = 32767, /* x 64 bytes: 2 MiB (the unit is not documented) */
	.rpg_threshold = 1,
	.rpg_max_rate = 0,
	.rpg_ai_rate = 5,
	.rpg_hai_rate = 50,
	.rpg_gd = 11,
	.rpg_min_dec_fac = 50,
	.rpg_min_rate = 1,
	.rate_to_set_on_first_cnp = 0,
	.dce_tcp_g = 1019,
	.dce_tcp_rtt = 1,
	.rate_reduce_monitor_period = 4,
	.initial_alpha_value = 1023,
	.clamp_tgt_rate = 0,
	.clamp_tgt_rate_after_time_inc = 1,
};

/* The paper's (g = 1/256, K = 55 us, timer 55 us, B = 10 MB, F = 5,
 * R_AI = 40 Mb/s; R_HAI 200 Mb/s as its author's simulator config; alpha
 * starts at 1; Rt = Rc at every cut). */
static const struct droce_dcqcn_rp_config paper_defaults = {
	.rpg_time_reset = 55,
	.rpg_byte_reset = 156250, /* x 64 bytes: 10 MB */
	.rpg_threshold = 5,
	.rpg_max_rate = 0,
	.rpg_ai_rate = 40,
	.rpg_hai_rate = 200,
	.rpg_gd = 11,
	.rpg_min_dec_fac = 50,
	.rpg_min_rate = 1,
	.rate_to_set_on_first_cnp = 0,
	.dce_tcp_g = 1020,
	.dce_tcp_rtt = 55,
	.rate_reduce_monitor_period = 4, /* not used: every CNP cuts */
	.initial_alpha_value = 1024,
	.clamp_tgt_rate = 1,
	.clamp_tgt_rate_after_time_inc = 1,
};

void
droce_dcqcn_defaults(enum droce_dcqcn_algo algo, struct droce_dcqcn_rp_config *c)
{
	const struct droce_dcqcn_rp_config *d =
		algo == DROCE_DCQCN_PAPER ? &paper_defaults : &mlx5_defaults;

#define DEFAULT_OF(n)                       \
	if (c->n == DROCE_DCQCN_UNSET)      \
		c->n = d->n;
	DROCE_DCQCN_RP_PARAMS(DEFAULT_OF)
#undef DEFAULT_OF
}

void
droce_dcqcn_params_init(struct droce_dcqcn_params *p, enum droce_dcqcn_algo algo,
			const struct droce_dcqcn_rp_config *c, uint64_t line_mbps,
			uint64_t ticks_per_us)
{
	memset(p, 0, sizeof(*p));
	p->algo = algo;
	p->line = (c->rpg_max_rate != 0 ? c->rpg_max_rate : line_mbps) * 1000;
	p->min = MIN((uint64_t)c->rpg_min_rate * 1000, p->line);
	p->ai = (uint64_t)c->rpg_ai_rate * 1000;
	p->hai = (uint64_t)c->rpg_hai_rate * 1000;
	p->first = (uint64_t)c->rate_to_set_on_first_cnp * 1000;
	p->t_inc = (uint64_t)c->rpg_time_reset * ticks_per_us;
	p->t_alpha = (uint64_t)c->dce_tcp_rtt * ticks_per_us;
	p->t_dec = (uint64_t)c->rate_reduce_monitor_period * ticks_per_us;
	p->byte_reset = (uint64_t)c->rpg_byte_reset * 64;
	p->threshold = c->rpg_threshold;
	p->gd = c->rpg_gd;
	p->min_dec_fac = c->rpg_min_dec_fac;
	p->g = c->dce_tcp_g;
	p->alpha0 = c->initial_alpha_value;
	p->clamp = c->clamp_tgt_rate != 0;
	p->clamp_ati = c->clamp_tgt_rate_after_time_inc != 0;
}

void
droce_dcqcn_init(struct droce_dcqcn *s, const struct droce_dcqcn_params *p)
{
	memset(s, 0, sizeof(*s));
	s->rc = s->rt = p->line;
	s->alpha = p->alpha0;
}

static inline uint64_t
clamp_rate(const struct droce_dcqcn_params *p, uint64_t r)
{
	return r < p->min ? p->min : r > p->line ? p->line : r;
}

/* Rc * (1 - alpha / 2^gd), by at most min_dec_fac %, at least the minimum. */
static void
cut(struct droce_dcqcn *s, const struct droce_dcqcn_params *p)
{
	uint64_t dec = (s->rc * s->alpha) >> p->gd;
	uint64_t floor = s->rc * p->min_dec_fac / 100;
	uint64_t rc = s->rc - (dec < s->rc ? dec : s->rc);

	s->rc = clamp_rate(p, rc < floor ? floor : rc);
	s->t_stage = s->b_stage = 0;
	s->bytes = 0;
	s->cuts++;
}

/* One rate-increase event (the counters as the algorithm reads them). */
static void
increase(struct droce_dcqcn *s, const struct droce_dcqcn_params *p)
{
	uint64_t rt = s->rt;

	if (p->algo == DROCE_DCQCN_MLX5) {
		uint32_t n = s->t_stage + s->b_stage; /* events before this one */

		if (n == p->threshold)
			rt += p->ai;
		else if (n > p->threshold)
			rt += p->hai;
	} else {
		uint32_t hi = MAX(s->t_stage, s->b_stage), lo = MIN(s->t_stage, s->b_stage);

		if (hi <= p->threshold)
			; /* fast recovery */
		else if (lo > p->threshold)
			rt += (uint64_t)(lo - p->threshold) * p->hai;
		else
			rt += p->ai;
	}
	s->rt = rt > p->line ? p->line : rt;
	s->rc = clamp_rate(p, (s->rt + s->rc + 1) / 2);
	s->increases++;
}

static void
alpha_event(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t t)
{
	uint32_t a = (uint32_t)(((uint64_t)p->g * s->alpha) >> 10);

	if (p->algo == DROCE_DCQCN_MLX5 && s->cnp_alpha)
		a += 1024 - p->g;
	s->alpha = a > 1024 ? 1024 : a;
	s->cnp_alpha = false;
	/* at 0 with no CNP it stays 0: stopped until the next CNP */
	s->next_alpha = s->alpha == 0 ? 0 : t + p->t_alpha;
}

static void
dec_event(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t t)
{
	if (!s->cnp_dec) {
		s->next_dec = 0; /* no CNP in the period: stopped until the next one */
		return;
	}
	if (p->clamp || (p->clamp_ati && s->t_stage + s->b_stage > 0))
		s->rt = s->rc;
	cut(s, p);
	s->cnp_dec = false;
	s->next_inc = t + p->t_inc;
	s->next_dec = t + p->t_dec;
}

static void
inc_event(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t t, bool timer)
{
	if (p->algo == DROCE_DCQCN_MLX5) {
		increase(s, p);
		if (timer)
			s->t_stage++;
		else
			s->b_stage++;
	} else {
		if (timer)
			s->t_stage++;
		else
			s->b_stage++;
		increase(s, p);
	}
	if (timer)
		s->next_inc = droce_dcqcn_limited(s, p) ? t + p->t_inc : 0;
}

/* The earliest of the running timers, alpha first on ties, then the
 * decrease check, then the increase timer. */
void
droce_dcqcn_advance(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t now)
{
	for (;;) {
		uint64_t a = s->next_alpha, d = s->next_dec, i = s->next_inc;
		uint64_t t = UINT64_MAX;

		if (a != 0)
			t = a;
		if (d != 0 && d < t)
			t = d;
		if (i != 0 && i < t)
			t = i;
		if (t == UINT64_MAX || t > now)
			return;
		if (t == a)
			alpha_event(s, p, t);
		else if (t == d)
			dec_event(s, p, t);
		else
			inc_event(s, p, t, true);
	}
}

/* The first boundary of a period @per counted from @phase strictly after @now. */
static inline uint64_t
next_boundary(uint64_t phase, uint64_t per, uint64_t now)
{
	return phase + ((now - phase) / per + 1) * per;
}

void
droce_dcqcn_cnp(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t now)
{
	droce_dcqcn_advance(s, p, now);
	s->cnps++;
	if (!s->seen_cnp) {
		s->seen_cnp = true;
		s->alpha = p->alpha0;
		if (p->first != 0)
			s->rc = s->rt = clamp_rate(p, p->first);
		s->alpha_phase = s->dec_phase = now;
		if (p->algo == DROCE_DCQCN_MLX5) {
			s->next_alpha = now + p->t_alpha;
			s->next_dec = now; /* the first CNP cuts at once */
			s->cnp_alpha = s->cnp_dec = true;
			droce_dcqcn_advance(s, p, now);
			return;
		}
	}
	if (p->algo == DROCE_DCQCN_MLX5) {
		if (s->next_alpha == 0)
			s->next_alpha = next_boundary(s->alpha_phase, p->t_alpha, now);
		if (s->next_dec == 0)
			s->next_dec = next_boundary(s->dec_phase, p->t_dec, now);
		s->cnp_alpha = s->cnp_dec = true;
		return;
	}
	/* paper: every CNP cuts, then alpha rises, and the timers restart */
	if (p->clamp)
		s->rt = s->rc;
	cut(s, p);
	s->alpha = (uint32_t)(((uint64_t)p->g * s->alpha) >> 10) + (1024 - p->g);
	if (s->alpha > 1024)
		s->alpha = 1024;
	s->next_alpha = now + p->t_alpha;
	s->next_inc = now + p->t_inc;
}

void
droce_dcqcn_sent(struct droce_dcqcn *s, const struct droce_dcqcn_params *p, uint64_t bytes,
		 uint64_t now)
{
	droce_dcqcn_advance(s, p, now);
	if (p->byte_reset == 0 || !droce_dcqcn_limited(s, p))
		return;
	s->bytes += bytes;
	while (s->bytes >= p->byte_reset) {
		s->bytes -= p->byte_reset;
		inc_event(s, p, now, false);
		if (!droce_dcqcn_limited(s, p)) {
			s->bytes = 0;
			s->next_inc = 0;
			return;
		}
	}
}

uint64_t
droce_dcqcn_next_event(const struct droce_dcqcn *s)
{
	uint64_t t = 0;

	if (s->next_alpha != 0)
		t = s->next_alpha;
	if (s->next_dec != 0 && (t == 0 || s->next_dec < t))
		t = s->next_dec;
	if (s->next_inc != 0 && (t == 0 || s->next_inc < t))
		t = s->next_inc;
	return t;
}
