/* SPDX-License-Identifier: BSD-3-Clause
 * The [switch] section: the switch model's keys (pmd_glue/switch.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "config_internal.h"

void
droce_cfg_switch_defaults(struct droce_switch_config *c)
{
	memset(c, 0, sizeof(*c));
	c->rate_gbps = DROCE_SWITCH_RATE_DEFAULT;
	c->buffer = DROCE_SWITCH_BUFFER_DEFAULT;
	c->pmax = 1.0;
	c->pfc_xoff = 64u << 10;
	c->pfc_xon = 32u << 10;
	c->seed = 1;
}

/* Bytes: a count with an optional K, M or G suffix (KiB, MiB, GiB). */
static int
parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end == 'K' || *end == 'k')
		mul = 1u << 10;
	else if (*end == 'M' || *end == 'm')
		mul = 1u << 20;
	else if (*end == 'G' || *end == 'g')
		mul = 1u << 30;
	if (mul != 1) {
		end++;
		if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)
			end += strlen(end);
	}
	if (*end != '\0' || v > (UINT64_C(1) << 40) / mul)
		return -1;
	*out = v * mul;
	return 0;
}

int
droce_cfg_switch_key(const char *key, const char *val, struct droce_switch_config *c,
		     const char **why)
{
	uint64_t *bytes = strcmp(key, "buffer") == 0 ? &c->buffer :
			  strcmp(key, "kmin") == 0 ? &c->kmin :
			  strcmp(key, "kmax") == 0 ? &c->kmax :
			  strcmp(key, "pfc_xoff") == 0 ? &c->pfc_xoff :
			  strcmp(key, "pfc_xon") == 0 ? &c->pfc_xon : NULL;
	char *end;

	if (bytes != NULL) {
		*why = "not a size in bytes (e.g. 65536, 64K, 1M)";
		return parse_bytes(val, bytes);
	}
	if (strcmp(key, "rate") == 0) {
		*why = "not a rate in Gb/s (0.001..400)";
		errno = 0;
		c->rate_gbps = strtod(val, &end);
		if (errno != 0 || end == val || *end != '\0' || !(c->rate_gbps >= 0.001) ||
		    c->rate_gbps > 400)
			return -1;
		return 0;
	}
	if (strcmp(key, "pmax") == 0) {
		*why = "not a probability (0..1 or 0%..100%)";
		return droce_cfg_parse_prob(val, &c->pmax);
	}
	if (strcmp(key, "pfc") == 0) {
		*why = "not 0 or 1";
		return droce_cfg_parse_u32(val, 0, 1, &c->pfc);
	}
	if (strcmp(key, "memif_socket") == 0) {
		*why = "not a socket path (1..107 bytes, no ',')";
		if (val[0] == '\0' || strlen(val) >= sizeof(c->memif_socket) ||
		    strchr(val, ',') != NULL)
			return -1;
		memcpy(c->memif_socket, val, strlen(val) + 1);
		return 0;
	}
	if (strcmp(key, "memif_links") == 0) {
		*why = "not a link count (0.." RTE_STR(DROCE_SWITCH_LINKS_MAX) ")";
		return droce_cfg_parse_u32(val, 0, DROCE_SWITCH_LINKS_MAX, &c->memif_links);
	}
	if (strcmp(key, "seed") == 0) {
		*why = "not a seed (0..2^64-1)";
		return droce_cfg_parse_u64(val, &c->seed);
	}
	*why = "unknown [switch] key";
	return -1;
}

int
droce_cfg_switch_check(const struct droce_switch_config *c, const struct droce_config *cfg,
		       char *why, size_t cap)
{
	unsigned int local = 0;

	for (unsigned int i = 0; i < cfg->n_ports; i++)
		local += cfg->ports[i].kind == DROCE_PORT_KIND_SWITCH;
	if (c->kmax != 0 && c->kmin > c->kmax)
		snprintf(why, cap, "kmin (%" PRIu64 ") above kmax (%" PRIu64 ")", c->kmin, c->kmax);
	else if (c->kmax > c->buffer)
		snprintf(why, cap, "kmax (%" PRIu64 ") above buffer (%" PRIu64 ")", c->kmax, c->buffer);
	else if (c->buffer < 2048)
		snprintf(why, cap, "buffer (%" PRIu64 ") below 2048 bytes (a frame)", c->buffer);
	else if (c->pfc && (c->pfc_xon >= c->pfc_xoff || c->pfc_xoff > c->buffer))
		snprintf(why, cap, "pfc = 1 needs pfc_xon (%" PRIu64 ") < pfc_xoff (%" PRIu64
			 ") <= buffer (%" PRIu64 ")", c->pfc_xon, c->pfc_xoff, c->buffer);
	else if (c->memif_links != 0 && c->memif_socket[0] == '\0')
		snprintf(why, cap, "memif_links = %u needs memif_socket (the links' socket path)",
			 c->memif_links);
	else if (c->memif_links != 0 && local == 0) /* the switch runs in their bursts */
		snprintf(why, cap, "memif_links = %u needs a port of kind = switch", c->memif_links);
	else if (local + c->memif_links > DROCE_MAX_PORTS)
		snprintf(why, cap, "%u ports of kind = switch and memif_links = %u: at most %d in all",
			 local, c->memif_links, DROCE_MAX_PORTS);
	else
		return 0;
	return -1;
}
