/* SPDX-License-Identifier: BSD-3-Clause
 * droce's error facility (internal.h): the last start-up or configuration
 * error, printed once and kept for droce_last_error().
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include <droce/droce.h>

#include "internal.h"

static char last_error[1024];

int
droce_err_set(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "droce: %s\n", last_error);
	errno = err;
	return -1;
}

void
droce_err_clear(void)
{
	last_error[0] = '\0';
}

const char *
droce_last_error(void)
{
	return last_error;
}

