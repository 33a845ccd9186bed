/* SPDX-License-Identifier: BSD-3-Clause
 * What a droce process leaves outside itself, and its removal (issue 28):
 * the EAL runtime directory and memif server sockets.  Used by runtime.c
 * (claim, release) and port.c (memif server sockets).
 */
#ifndef DROCE_PMD_GLUE_RESIDUE_H
#define DROCE_PMD_GLUE_RESIDUE_H

#include <stdbool.h>
#include <stddef.h>

/* The lock file in a runtime directory droce claimed; held (flock) for the
 * owning process's life, it lists the memif server sockets the process made. */
#define DROCE_RESIDUE_LOCK "droce.lock"

/*
 * The EAL runtime directory rte_eal_init() will use for file prefix
 * @prefix, computed as DPDK 22.11 does ($RUNTIME_DIRECTORY, else /var/run
 * for root, else $XDG_RUNTIME_DIR or /tmp; then dpdk/<prefix>) into @out.
 * False when it does not fit.
 */
bool droce_residue_runtime_dir(const char *prefix, char *out, size_t n);

/*
 * Before rte_eal_init(): creates runtime directory @dir and its lock file,
 * held by this process; removes the directories other droce processes
 * left when they ended without removing theirs (killed); installs the exit
 * and signal handlers that remove @dir and this process's memif server
 * sockets when the process ends.  0, or -1 with a droce error set.
 */
int droce_residue_claim(const char *dir);

/* The directory droce_residue_claim() made ("" when none). */
const char *droce_residue_dir(void);

/* Removes what this process claimed now (EAL init failed, or cleaned up). */
void droce_residue_release(void);

/* This process bound a memif server socket at @path / closed it. */
void droce_residue_add_socket(const char *path);
void droce_residue_del_socket(const char *path);

/*
 * Removes every stale droce runtime directory under @base (a "<run>/dpdk"
 * directory): those with a lock file no process holds, and those named
 * droce* from before lock files that no process uses and nobody changed for
 * a minute.  Returns how many were removed.  Tests call it directly.
 */
unsigned int droce_residue_sweep(const char *base);

/*
 * The state of the Unix socket file at @path: 1 somebody listens on it
 * (listed as listening in /proc/net/unix, else a connect succeeds: a
 * listener of another network namespace, whose greeting the probe reads
 * before it closes), 0 nobody does (ECONNREFUSED: what a killed process
 * leaves), -1 unknown (no such file, not a socket, another error).
 */
int droce_unix_socket_live(const char *path);

/*
 * Before a memif server binds @path (the bind fails while the file
 * exists): a socket file nobody listens on, what a killed server leaves,
 * is removed; one somebody listens on, or a file that is no socket, is an
 * error the user must resolve.  0, or -1 with the error set, its message
 * beginning "@who = @path: " (e.g. who "cfg: [port0]: socket").
 */
int droce_memif_socket_prepare(const char *who, const char *path);

#endif /* DROCE_PMD_GLUE_RESIDUE_H */
