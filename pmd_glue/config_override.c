/* SPDX-License-Identifier: BSD-3-Clause
 * Command-line overrides of a loaded configuration (droce-loop's --capture
 * and --impair, droce_config_set_capture / droce_config_set_impair in
 * <droce/config.h>): the same values the INI keys take, on one port or all.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <droce/config.h>
#include "config_internal.h"
#include "internal.h"

/* The index of port @name ("portN") in @cfg, for option @opt's @spec; else
 * -1 with the error set. */
static int
port_named(const struct droce_config *cfg, const char *name, const char *opt, const char *spec,
	   uint32_t *idx)
{
	if (strncmp(name, "port", 4) != 0 ||
	    droce_cfg_parse_u32(name + 4, 0, DROCE_MAX_PORTS - 1, idx) < 0 || *idx >= cfg->n_ports)
		return droce_err_set(EINVAL, "%s %s: no port '%s' in %s (it has port0..port%u)", opt,
				     spec, name, cfg->source, cfg->n_ports - 1);
	return 0;
}

int
droce_config_set_capture(struct droce_config *cfg, const char *spec)
{
	const char *eq = spec != NULL ? strchr(spec, '=') : NULL;
	char port[16];
	uint32_t idx;
	size_t plen;

	if (eq == NULL || eq == spec || eq[1] == '\0' || (size_t)(eq - spec) >= sizeof(port))
		return droce_err_set(EINVAL, "--capture %s: expected PORT=PATH (e.g. port0=/tmp/p0.pcapng)",
				     spec != NULL ? spec : "");
	plen = (size_t)(eq - spec);
	memcpy(port, spec, plen);
	port[plen] = '\0';
	if (port_named(cfg, port, "--capture", spec, &idx) != 0)
		return -1;
	if (strlen(eq + 1) >= sizeof(cfg->ports[idx].capture))
		return droce_err_set(EINVAL, "--capture %s: path too long", spec);
	strcpy(cfg->ports[idx].capture, eq + 1);
	return 0;
}

int
droce_config_set_impair(struct droce_config *cfg, const char *spec)
{
	char buf[512], *save = NULL, *tok, *items = buf;
	struct droce_impair_config c;
	unsigned int first = 0, last, i;
	bool delay_given = false;
	const char *why = "";

	if (spec == NULL || spec[0] == '\0' || strlen(spec) >= sizeof(buf))
		return droce_err_set(EINVAL, "--impair %s: expected KEY=VALUE[,KEY=VALUE...] (e.g. drop=0.01,seed=42)",
				     spec != NULL ? spec : "");
	if (cfg->n_ports == 0)
		return droce_err_set(EINVAL, "--impair %s: %s has no ports", spec, cfg->source);
	strcpy(buf, spec);
	last = cfg->n_ports - 1;
	if (strncmp(buf, "port", 4) == 0 && strchr(buf, ':') != NULL) {
		char *colon = strchr(buf, ':');
		uint32_t idx;

		*colon = '\0';
		if (port_named(cfg, buf, "--impair", spec, &idx) != 0)
			return -1;
		first = last = idx;
		items = colon + 1;
	}
	for (i = first; i <= last; i++) {
		char tmp[512];

		c = cfg->ports[i].impair;
		delay_given = false;
		snprintf(tmp, sizeof(tmp), "%s", items);
		save = NULL;
		for (tok = strtok_r(tmp, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');

			if (eq == NULL || eq == tok || eq[1] == '\0')
				return droce_err_set(EINVAL, "--impair %s: '%s': expected KEY=VALUE", spec,
						     tok);
			*eq = '\0';
			if (droce_cfg_impair_key(tok, eq + 1, &c, &why) < 0)
				return droce_err_set(EINVAL, "--impair %s: %s = %s: %s", spec, tok, eq + 1,
						     why);
			if (strcmp(tok, "delay") == 0)
				delay_given = true;
		}
		if (c.delay_us > 0 && !delay_given && c.delay == 0)
			c.delay = 1.0;
		if (c.delay > 0 && c.delay_us == 0)
			return droce_err_set(EINVAL, "--impair %s: delay needs delay_us > 0", spec);
		cfg->ports[i].impair = c;
	}
	return 0;
}
