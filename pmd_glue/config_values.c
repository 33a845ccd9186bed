/* SPDX-License-Identifier: BSD-3-Clause
 * Configuration values: numbers, probabilities, impairment settings, and
 * the items of list-valued keys (addresses, lcores).  Nothing here reports
 * an error: callers name the file, section and key (config.c).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_lcore.h>

#include "config_internal.h"
#include "internal.h"

int
droce_cfg_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int
droce_cfg_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

/* A probability: decimal 0..1, or a percentage 0%..100%. */
int
droce_cfg_parse_prob(const char *s, double *out)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)s[0]) && s[0] != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v))
		return -1;
	if (*end == '%') {
		v /= 100.0;
		end++;
	}
	if (*end != '\0' || v < 0.0 || v > 1.0)
		return -1;
	*out = v;
	return 0;
}

/*
 * One impairment setting (@key without the impair_ prefix).  Returns 0, or
 * -1 with *@why saying what is wrong.
 */
int
droce_cfg_impair_key(const char *key, const char *val, struct droce_impair_config *c, const char **why)
{
	static const char prob_why[] = "not a probability (0..1, or a percentage such as 0.5%)";
	double *prob = NULL;
	uint32_t u;

	if (strcmp(key, "drop") == 0)
		prob = &c->drop;
	else if (strcmp(key, "dup") == 0)
		prob = &c->dup;
	else if (strcmp(key, "reorder") == 0)
		prob = &c->reorder;
	else if (strcmp(key, "delay") == 0)
		prob = &c->delay;
	else if (strcmp(key, "corrupt") == 0)
		prob = &c->corrupt;
	else if (strcmp(key, "ce") == 0)
		prob = &c->ce;
	if (prob != NULL) {
		if (droce_cfg_parse_prob(val, prob) < 0) {
			*why = prob_why;
			return -1;
		}
		return 0;
	}
	RTE_BUILD_BUG_ON(DROCE_IMPAIR_DELAY_US_MAX != 1000000u);
	if (strcmp(key, "delay_us") == 0) {
		if (droce_cfg_parse_u32(val, 0, DROCE_IMPAIR_DELAY_US_MAX, &u) < 0) {
			*why = "not a delay in microseconds (0..1000000)";
			return -1;
		}
		c->delay_us = u;
		return 0;
	}
	if (strcmp(key, "seed") == 0) {
		if (droce_cfg_parse_u64(val, &c->seed) < 0) {
			*why = "not a seed (an integer 0..18446744073709551615)";
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "dir") == 0) {
		if (strcmp(val, "tx") == 0)
			c->dir = DROCE_IMPAIR_DIR_TX;
		else if (strcmp(val, "rx") == 0)
			c->dir = DROCE_IMPAIR_DIR_RX;
		else if (strcmp(val, "both") == 0)
			c->dir = DROCE_IMPAIR_DIR_BOTH;
		else {
			*why = "not a direction (tx, rx or both)";
			return -1;
		}
		return 0;
	}
	*why = "unknown impairment (drop, dup, reorder, delay, delay_us, corrupt, ce, seed or dir)";
	return -1;
}

bool
droce_impair_config_active(const struct droce_impair_config *c)
{
	return c->drop > 0 || c->dup > 0 || c->reorder > 0 || c->corrupt > 0 || c->ce > 0 ||
	       (c->delay > 0 && c->delay_us > 0);
}

int
droce_impair_config_check(const struct droce_impair_config *c)
{
	const double probs[] = { c->drop, c->dup, c->reorder, c->delay, c->corrupt, c->ce };
	static const char *const names[] = { "drop", "dup", "reorder", "delay", "corrupt", "ce" };
	unsigned int i;

	if (c == NULL)
		return droce_err_set(EINVAL, "impairment: no configuration");
	for (i = 0; i < RTE_DIM(probs); i++)
		if (!(probs[i] >= 0.0 && probs[i] <= 1.0))
			return droce_err_set(EINVAL, "impairment: %s = %g: not a probability (0..1)",
					     names[i], probs[i]);
	if (c->delay_us > DROCE_IMPAIR_DELAY_US_MAX)
		return droce_err_set(EINVAL, "impairment: delay_us = %u: more than %u", c->delay_us,
				     DROCE_IMPAIR_DELAY_US_MAX);
	if (c->delay > 0 && c->delay_us == 0)
		return droce_err_set(EINVAL, "impairment: delay = %g needs delay_us > 0", c->delay);
	if (c->dir & ~(unsigned int)DROCE_IMPAIR_DIR_BOTH)
		return droce_err_set(EINVAL, "impairment: dir = 0x%x: not tx, rx or both", c->dir);
	return 0;
}

/* Splits @s on commas and blanks; calls @fn for each item. */
int
droce_cfg_for_each_item(const char *s, int (*fn)(void *arg, const char *item), void *arg)
{
	char buf[CFG_VALUE_LEN];
	char *save = NULL, *tok;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ", \t", &save); tok != NULL; tok = strtok_r(NULL, ", \t", &save)) {
		if (fn(arg, tok) < 0)
			return -1;
		n++;
	}
	return n == 0 ? -1 : 0;
}


int
droce_cfg_add_gid(void *arg, const char *item)
{
	struct droce_cfg_gid_acc *acc = arg;
	struct droce_port_config *pc = acc->pc;
	uint8_t gid[16];
	unsigned int i;

	memset(gid, 0, sizeof(gid));
	if (acc->family == AF_INET) {
		struct in_addr a;

		if (inet_pton(AF_INET, item, &a) != 1) {
			acc->bad = "not an IPv4 address";
			return -1;
		}
		if (a.s_addr == 0 || a.s_addr == UINT32_MAX ||
		    (ntohl(a.s_addr) >> 28) == 0xe) {
			acc->bad = "not a unicast IPv4 address";
			return -1;
		}
		gid[10] = 0xff;
		gid[11] = 0xff;
		memcpy(&gid[12], &a.s_addr, 4);
	} else {
		if (inet_pton(AF_INET6, item, gid) != 1) {
			acc->bad = "not an IPv6 address";
			return -1;
		}
		if (gid[0] == 0xff) {
			acc->bad = "not a unicast IPv6 address";
			return -1;
		}
	}
	for (i = 0; i < pc->n_gids; i++) {
		if (memcmp(pc->gids[i], gid, 16) == 0) {
			acc->bad = "address listed twice";
			return -1;
		}
	}
	if (pc->n_gids >= DROCE_MAX_GIDS) {
		acc->bad = "too many addresses (GID table holds " RTE_STR(DROCE_MAX_GIDS) ")";
		return -1;
	}
	memcpy(pc->gids[pc->n_gids++], gid, 16);
	return 0;
}


int
droce_cfg_add_lcores(void *arg, const char *item)
{
	struct droce_cfg_lcore_acc *acc = arg;
	char lo_s[16], *dash;
	uint32_t lo, hi, i, j;

	if (strlen(item) >= sizeof(lo_s)) {
		acc->bad = "not an lcore list (e.g. 1,2 or 1-3)";
		return -1;
	}
	strcpy(lo_s, item);
	dash = strchr(lo_s, '-');
	if (dash != NULL)
		*dash = '\0';
	if (droce_cfg_parse_u32(lo_s, 0, RTE_MAX_LCORE - 1, &lo) < 0 ||
	    (dash != NULL && droce_cfg_parse_u32(dash + 1, 0, RTE_MAX_LCORE - 1, &hi) < 0)) {
		acc->bad = "not an lcore list (e.g. 1,2 or 1-3; lcores below " RTE_STR(RTE_MAX_LCORE) ")";
		return -1;
	}
	if (dash == NULL)
		hi = lo;
	if (hi < lo) {
		acc->bad = "lcore range runs backwards";
		return -1;
	}
	for (i = lo; i <= hi; i++) {
		for (j = 0; j < acc->cfg->n_engines; j++) {
			if (acc->cfg->engine_lcores[j] == i) {
				acc->bad = "lcore listed twice";
				return -1;
			}
		}
		if (acc->cfg->n_engines >= DROCE_MAX_ENGINES) {
			acc->bad = "too many engines (at most " RTE_STR(DROCE_MAX_ENGINES) ")";
			return -1;
		}
		acc->cfg->engine_lcores[acc->cfg->n_engines++] = (uint16_t)i;
	}
	return 0;
}

