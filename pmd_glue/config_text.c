/* SPDX-License-Identifier: BSD-3-Clause
 * The INI pre-pass: the configuration text is checked line by line (so
 * syntax errors carry a line number), comments are stripped, and the result
 * is staged in a memfd for rte_cfgfile (config.c).
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

static void
trim(char **s, char **e)
{
	while (*s < *e && isspace((unsigned char)**s))
		(*s)++;
	while (*e > *s && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

/*
 * Checks the syntax line by line and writes a comment-free copy to @fd.
 */
int
droce_cfg_prepare_text(const char *file, const char *text, int fd)
{
	const char *p = text;
	unsigned int lineno = 0;
	bool in_section = false;

	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
		char line[LINE_MAX_LEN + 2];
		char *s, *e, *c, *eq;

		lineno++;
		if (len > LINE_MAX_LEN)
			return droce_err_set(EINVAL, "%s:%u: line longer than %d characters",
					     file, lineno, LINE_MAX_LEN);
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (nl != NULL);

		for (c = line; *c != '\0'; c++) {
			if (*c == '#' || *c == ';') {
				*c = '\0';
				break;
			}
		}
		s = line;
		e = line + strlen(line);
		trim(&s, &e);
		*e = '\0';
		if (s == e)
			continue;

		if (*s == '[') {
			char *name_s = s + 1, *name_e = e - 1;

			if (e[-1] != ']' || e - s < 3)
				return droce_err_set(EINVAL, "%s:%u: bad section header '%s'",
						     file, lineno, s);
			trim(&name_s, &name_e);
			if (name_s == name_e || name_e - name_s >= CFG_NAME_LEN)
				return droce_err_set(EINVAL, "%s:%u: bad section header '%s'",
						     file, lineno, s);
			*name_e = '\0';
			if (dprintf(fd, "[%s]\n", name_s) < 0)
				goto io_error;
			in_section = true;
			continue;
		}

		eq = strchr(s, '=');
		if (eq == NULL)
			return droce_err_set(EINVAL, "%s:%u: expected 'key = value' or '[section]', got '%s'",
					     file, lineno, s);
		{
			char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;

			trim(&ks, &ke);
			trim(&vs, &ve);
			*ke = '\0';
			*ve = '\0';
			if (ks == ke)
				return droce_err_set(EINVAL, "%s:%u: missing key before '='",
						     file, lineno);
			if (!in_section)
				return droce_err_set(EINVAL, "%s:%u: %s = %s: key outside of any section",
						     file, lineno, ks, vs);
			if (vs == ve)
				return droce_err_set(EINVAL, "%s:%u: %s: empty value",
						     file, lineno, ks);
			if (ke - ks >= CFG_NAME_LEN)
				return droce_err_set(EINVAL, "%s:%u: key '%s' too long",
						     file, lineno, ks);
			if (ve - vs >= CFG_VALUE_LEN)
				return droce_err_set(EINVAL, "%s:%u: %s: value longer than %d characters",
						     file, lineno, ks, CFG_VALUE_LEN - 1);
			if (dprintf(fd, "%s = %s\n", ks, vs) < 0)
				goto io_error;
		}
	}
	return 0;

io_error:
	return droce_err_set(errno, "%s: cannot stage config text: %s", file, strerror(errno));
}

int
droce_cfg_stage_fd(void)
{
	int fd = memfd_create("droce-config", MFD_CLOEXEC);

	if (fd < 0) {
		char tmpl[] = "/tmp/droce-config-XXXXXX";

		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd >= 0)
			unlink(tmpl);
	}
	return fd;
}

