/* SPDX-License-Identifier: BSD-3-Clause
 * The [dcqcn] section: congestion control's keys, with ConnectX's names
 * (the firmware's / MLNX_OFED sysfs names of the roce_np and roce_rp
 * parameters) and ranges as its firmware takes them: rates in Mb/s (up to
 * 400 Gb/s), times in microseconds, alpha and g in 1/1024.
 */
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "config_internal.h"

void
droce_cfg_dcqcn_defaults(struct droce_dcqcn_config *c)
{
	c->np_enable = 1;
	c->min_time_between_cnps = DROCE_CNP_GAP_US_DEFAULT;
	c->cnp_dscp = DROCE_CNP_DSCP_DEFAULT;
	c->cnp_802p_prio = DROCE_CNP_PRIO_DEFAULT;
	c->rp_enable = 1;
	c->algorithm = DROCE_DCQCN_MLX5;
	memset(&c->rp, 0xff, sizeof(c->rp)); /* DROCE_DCQCN_UNSET: the algorithm's */
}

#define NP(f) offsetof(struct droce_dcqcn_config, f)
#define RP(f) (offsetof(struct droce_dcqcn_config, rp) + offsetof(struct droce_dcqcn_rp_config, f))

/* The numeric keys (algorithm is the one word). */
static const struct {
	const char *name;
	size_t off;
	uint32_t min, max;
	const char *what;
} keys[] = {
	{ "np_enable", NP(np_enable), 0, 1, "switch" },
	{ "min_time_between_cnps", NP(min_time_between_cnps), 0, 1000000, "time in microseconds" },
	{ "cnp_dscp", NP(cnp_dscp), 0, 63, "DSCP" },
	{ "cnp_802p_prio", NP(cnp_802p_prio), 0, 7, "VLAN priority" },
	{ "rp_enable", NP(rp_enable), 0, 1, "switch" },
	{ "rpg_time_reset", RP(rpg_time_reset), 1, 1000000, "time in microseconds" },
	{ "rpg_byte_reset", RP(rpg_byte_reset), 0, 1u << 30, "count of 64 bytes (0: no byte counter)" },
	{ "rpg_threshold", RP(rpg_threshold), 0, 31, "count of increase events" },
	{ "rpg_max_rate", RP(rpg_max_rate), 0, 400000, "rate in Mb/s (0: the port's speed)" },
	{ "rpg_ai_rate", RP(rpg_ai_rate), 0, 400000, "rate in Mb/s" },
	{ "rpg_hai_rate", RP(rpg_hai_rate), 0, 400000, "rate in Mb/s" },
	{ "rpg_gd", RP(rpg_gd), 10, 15, "log2 divisor of alpha" },
	{ "rpg_min_dec_fac", RP(rpg_min_dec_fac), 1, 100, "percentage" },
	{ "rpg_min_rate", RP(rpg_min_rate), 1, 400000, "rate in Mb/s" },
	{ "rate_to_set_on_first_cnp", RP(rate_to_set_on_first_cnp), 0, 400000,
	  "rate in Mb/s (0: keep the rate)" },
	{ "dce_tcp_g", RP(dce_tcp_g), 0, 1023, "gain in 1/1024" },
	{ "dce_tcp_rtt", RP(dce_tcp_rtt), 1, 131071, "time in microseconds" },
	{ "rate_reduce_monitor_period", RP(rate_reduce_monitor_period), 1, 1000000,
	  "time in microseconds" },
	{ "initial_alpha_value", RP(initial_alpha_value), 0, 1024, "alpha in 1/1024" },
	{ "clamp_tgt_rate", RP(clamp_tgt_rate), 0, 1, "switch" },
	{ "clamp_tgt_rate_after_time_inc", RP(clamp_tgt_rate_after_time_inc), 0, 1, "switch" },
};

int
droce_cfg_dcqcn_key(const char *key, const char *val, struct droce_dcqcn_config *c,
		    const char **why, char *range, size_t cap)
{
	range[0] = '\0';
	if (strcmp(key, "algorithm") == 0) {
		if (strcmp(val, "mlx5") == 0)
			c->algorithm = DROCE_DCQCN_MLX5;
		else if (strcmp(val, "paper") == 0)
			c->algorithm = DROCE_DCQCN_PAPER;
		else {
			*why = "not a DCQCN algorithm (mlx5 or paper)";
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < RTE_DIM(keys); i++) {
		uint32_t v;

		if (strcmp(key, keys[i].name) != 0)
			continue;
		if (droce_cfg_parse_u32(val, keys[i].min, keys[i].max, &v) < 0) {
			*why = "not a valid ";
			snprintf(range, cap, "%s (%u..%u)", keys[i].what, keys[i].min, keys[i].max);
			return -1;
		}
		memcpy((uint8_t *)c + keys[i].off, &v, sizeof(v));
		return 0;
	}
	*why = "unknown [dcqcn] key";
	return -1;
}
