/* SPDX-License-Identifier: BSD-3-Clause
 * The memif disconnect guard (memif_guard.c): the memif PMD's unmaps of its
 * shared regions wait for the engines to leave their passes first.
 */
#ifndef DROCE_PMD_GLUE_MEMIF_GUARD_H
#define DROCE_PMD_GLUE_MEMIF_GUARD_H

#include <stdbool.h>

/*
 * The engines started (@quiesce: waits until no engine is inside a pass that
 * began before it, droce_dp_synchronize) or stopped (NULL, before what
 * @quiesce uses is freed; the EAL interrupt thread is flushed, so no unmap
 * is still inside the old one).  The first non-NULL call guards the memif
 * PMD's munmap, if the PMD is loaded.
 */
void droce_memif_guard_set(void (*quiesce)(void));

/* True once the memif PMD's munmap goes through the guard. */
bool droce_memif_guarded(void);

#endif /* DROCE_PMD_GLUE_MEMIF_GUARD_H */
