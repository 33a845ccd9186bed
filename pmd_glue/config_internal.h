/* SPDX-License-Identifier: BSD-3-Clause
 * The configuration loader's pieces (config.c holds the section and key
 * tables and the load itself): value parsers and list items
 * (config_values.c) and the INI text pre-pass (config_text.c).
 */
#ifndef DROCE_PMD_GLUE_CONFIG_INTERNAL_H
#define DROCE_PMD_GLUE_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <rte_cfgfile.h>

#include <droce/config.h>

/* Longest line rte_cfgfile reads in one piece, and its value limit. */
#define LINE_MAX_LEN (CFG_NAME_LEN + CFG_VALUE_LEN)

/* ---- value parsers (config_values.c): 0, or -1 without reporting ---- */

int droce_cfg_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
int droce_cfg_parse_u64(const char *s, uint64_t *out);
/* A probability: decimal 0..1, or a percentage 0%..100%. */
int droce_cfg_parse_prob(const char *s, double *out);
/* One impairment setting (@key without the impair_ prefix): 0, or -1 with
 * *@why saying what is wrong. */
int droce_cfg_impair_key(const char *key, const char *val, struct droce_impair_config *c,
			 const char **why);
/* ---- [dcqcn] (config_dcqcn.c) ---- */

/* Every key of the section, ConnectX's names. */
#define DROCE_DCQCN_KEYS(X)                                                       \
	X(np_enable) X(min_time_between_cnps) X(cnp_dscp) X(cnp_802p_prio)            \
	X(rp_enable) X(algorithm) DROCE_DCQCN_RP_PARAMS(X)
/* The section's defaults (the reaction point's parameters unset: the
 * algorithm's, filled in when the engines start). */
void droce_cfg_dcqcn_defaults(struct droce_dcqcn_config *c);
/* One [dcqcn] key: 0, or -1 with *@why and @range (its valid values) saying
 * what is wrong. */
int droce_cfg_dcqcn_key(const char *key, const char *val, struct droce_dcqcn_config *c,
			const char **why, char *range, size_t cap);

/* ---- [switch] (config_switch.c) ---- */

#define DROCE_SWITCH_KEYS(X) \
	X(rate) X(buffer) X(kmin) X(kmax) X(pmax) X(pfc) X(pfc_xoff) X(pfc_xon) X(seed) \
	X(memif_socket) X(memif_links)
void droce_cfg_switch_defaults(struct droce_switch_config *c);
/* One [switch] key: 0, or -1 with *@why saying what is wrong. */
int droce_cfg_switch_key(const char *key, const char *val, struct droce_switch_config *c,
			 const char **why);
/* The keys that only make sense together: 0, or -1 with @why (@cap bytes). */
int droce_cfg_switch_check(const struct droce_switch_config *c, const struct droce_config *cfg,
			   char *why, size_t cap);

/* Splits @s on commas and blanks; calls @fn for each item (-1 if none). */
int droce_cfg_for_each_item(const char *s, int (*fn)(void *arg, const char *item), void *arg);

struct droce_cfg_gid_acc {
	struct droce_port_config *pc;
	int family;
	const char *bad; /* why the last item failed */
};
/* An item of ipv4 = / ipv6 =: adds a GID to @arg (a struct droce_cfg_gid_acc). */
int droce_cfg_add_gid(void *arg, const char *item);

struct droce_cfg_lcore_acc {
	struct droce_config *cfg;
	const char *bad;
};
/* An item of lcores = (N or N-M): adds engine lcores (a struct droce_cfg_lcore_acc). */
int droce_cfg_add_lcores(void *arg, const char *item);

/* ---- the INI pre-pass (config_text.c) ---- */

/* Checks @text's syntax line by line (errors name @file and the line) and
 * writes a comment-free copy to @fd for rte_cfgfile.  0 or -1 (reported). */
int droce_cfg_prepare_text(const char *file, const char *text, int fd);
/* A file descriptor to stage the text in (a memfd, else an unlinked file). */
int droce_cfg_stage_fd(void);

#endif /* DROCE_PMD_GLUE_CONFIG_INTERNAL_H */
