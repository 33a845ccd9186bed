/* SPDX-License-Identifier: BSD-3-Clause
 * Tests that run droce programs as processes (droce-perf, droce-loop,
 * scripts) or two droce processes over memif: running a command for its
 * output, spawning and reaping with a deadline, reading what they printed,
 * and the memif config of each side.  Links no droce (Criterion only).
 */
#ifndef DROCE_TESTS_COMMON_PROC_H
#define DROCE_TESTS_COMMON_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Runs @cmd through sh; its stdout into @out (NUL-terminated, cut at @cap).
 * Its exit status, or -1 when it did not exit normally. */
int tc_run(const char *cmd, char *out, size_t cap);

/* Runs the program named by environment variable @var (set by meson: the
 * test fails without it) with @args, DROCE_CONFIG unset, stdout and stderr
 * into @out as tc_run. */
int tc_run_prog(const char *var, const char *args, char *out, size_t cap);

/* Starts `exe args` with DROCE_CONFIG=@cfg (NULL: unset, the embedded
 * loopback config), its stdout and stderr into the file @out. */
pid_t tc_spawn(const char *cfg, const char *exe, const char *args, const char *out);

/* Waits up to @timeout_s for @pid: its exit status, 128 + signal, or -1
 * (then it was killed). */
int tc_reap(pid_t pid, int timeout_s);

/* Prints file @path to stderr (a failed run's output). */
void tc_dump(const char *path);

/* True when file @path contains @what (in its first 16 KiB). */
bool tc_contains(const char *path, const char *what);

/*
 * Writes side @side's config of a memif pair into a fresh file named from
 * @tag and the pid (its name into @path): side 0 the memif server
 * (198.18.0.1, 02:00:c6:12:00:01), side 1 the client (198.18.0.2), on
 * socket @sock, a 4095-mbuf pool with a @cache cache; @extra (or NULL):
 * more text at the end ("rxd = 512\n" for port0, or whole sections).
 */
void tc_memif_ini(char *path, size_t n, const char *tag, unsigned int side, const char *sock,
		  unsigned int cache, const char *extra);

/* Waits (bounded, 10 s) until @path exists: a memif server's socket. */
bool tc_wait_path(const char *path);

/* A TCP port on 127.0.0.1 that nothing listens on now, as the kernel picks
 * one for bind to port 0 (random in the ephemeral range), for a program the
 * test starts to listen on.  Ports computed from the pid collided between
 * tests running side by side (one test's program connected to the other's). */
int tc_free_tcp_port(void);

/* The TID of this process's thread named @name (its comm, e.g.
 * "droce-fallback"), or 0 when none is. */
pid_t tc_task_named(const char *name);

#endif
