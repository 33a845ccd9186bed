/* SPDX-License-Identifier: BSD-3-Clause
 * Address handles for UD (see struct droce_ah in dp.h).  Kept apart from the
 * engine code so the application side can use it alone.
 */
#include <string.h>

#include "dp.h"

void
droce_ah_init(struct droce_ah *ah, const struct droce_path *path, unsigned int port)
{
	static uint64_t next_serial;

	memset(ah, 0, sizeof(*ah));
	ah->path = *path;
	ah->port = port;
	/* never 0: a UD QP's template cache uses 0 for "none built" */
	ah->serial = __atomic_add_fetch(&next_serial, 1, __ATOMIC_RELAXED);
}
