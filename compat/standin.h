/* SPDX-License-Identifier: BSD-3-Clause
 * One-line definitions for the stand-in provider libraries (mlx5.c, mlx4.c,
 * efa.c): each entry point answers as the real library does for a device
 * that is not its own.  The parameters are the header's, so the compiler
 * still checks every definition against its prototype.
 */
#ifndef DROCE_COMPAT_STANDIN_H
#define DROCE_COMPAT_STANDIN_H

#include <errno.h>

/* Returns @value (EOPNOTSUPP, false ...) and leaves errno alone. */
#define STANDIN_RETURN(type, value, name, ...) \
	type name(__VA_ARGS__) { return value; }

/* Sets errno to EOPNOTSUPP and returns @value (NULL, -1). */
#define STANDIN_ERRNO(type, value, name, ...) \
	type name(__VA_ARGS__) { errno = EOPNOTSUPP; return value; }

/* Does nothing. */
#define STANDIN_VOID(name, ...) \
	void name(__VA_ARGS__) {}

#endif /* DROCE_COMPAT_STANDIN_H */
