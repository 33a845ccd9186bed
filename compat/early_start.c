/* SPDX-License-Identifier: BSD-3-Clause
 * DROCE_EARLY_START=1: the drop-in libibverbs starts droce's runtime (EAL,
 * ports, engines) when it is loaded, before the program's main(), instead
 * of at its first verbs call.
 *
 * A memif port is up only while both processes have droce running, and
 * programs that look at their port once, at their first verbs call, skip a
 * port that is down (libfabric's verbs provider and UCX ignore it, perftest
 * waits).  When that first call comes only after an exchange with the peer
 * (fi_pingpong's server calls fi_getinfo, and only then its client, after
 * their TCP control exchange), neither side's port is ever up when it is
 * looked at.  Started at load, both links come up before either program
 * looks.  The variable is read by this library only; a failed start is
 * left for the first verbs call to report, as without it.
 */
#include <stdlib.h>
#include <string.h>

#include "verbs_api/internal.h"

__attribute__((constructor)) static void
early_start(void)
{
	const char *v = getenv("DROCE_EARLY_START");

	if (v != NULL && v[0] != '\0' && strcmp(v, "0") != 0)
		(void)droce_verbs_runtime_up();
}
