/* SPDX-License-Identifier: BSD-3-Clause
 * Nothing of a droce process outlives it (issue 28 §1): its EAL runtime
 * directory and its memif server sockets are gone after exit(), a return
 * from main and a signal with the default action; after SIGKILL they stay
 * until the next droce start removes them; a forked child's exit removes
 * nothing of its parent's.  And the sweep's rules on directories made by
 * hand: a held lock keeps a directory, a dead one's goes; droce-named
 * directories from before lock files go when no process uses them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "pmd_glue/residue.h"
#include "proc.h"

TestSuite(residue, .timeout = 60);

struct child {
	pid_t pid;
	char out[128];
	char dir[4096];
};

static bool
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Starts life_proc @args with config @cfg (NULL: embedded) and waits for
 * its "ready" line. */
static void
spawn(struct child *c, const char *cfg, const char *args)
{
	const char *exe = getenv("LIFE_PROC");
	char buf[8192], *p;
	FILE *f;
	int i;

	cr_assert_not_null(exe, "LIFE_PROC not set (run through meson test)");
	snprintf(c->out, sizeof(c->out), "/tmp/droce-life-%ld-%ld.out", (long)getpid(),
		 (long)random());
	c->pid = tc_spawn(cfg, exe, args, c->out);
	for (i = 0; i < 2000; i++) {
		f = fopen(c->out, "r");
		if (f != NULL) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);

			buf[n] = '\0';
			fclose(f);
			p = strstr(buf, "ready ");
			if (p != NULL && strchr(p, '\n') != NULL) {
				long pid;

				cr_assert_eq(sscanf(p, "ready %ld %4095s", &pid, c->dir), 2, "%s", p);
				cr_assert_neq(strcmp(c->dir, "-"), 0, "no runtime directory claimed");
				return;
			}
		}
		if (waitpid(c->pid, NULL, WNOHANG) == c->pid) {
			tc_dump(c->out);
			cr_assert_fail("life_proc %s ended before it was ready", args);
		}
		usleep(10000);
	}
	tc_dump(c->out);
	cr_assert_fail("life_proc %s: not ready in 20 s", args);
}

static void
finish(struct child *c)
{
	unlink(c->out);
}

/* The directory has the lock file and the telemetry socket while it runs. */
static void
assert_claimed(const struct child *c)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s/%s", c->dir, DROCE_RESIDUE_LOCK);
	cr_assert(exists(p), "%s missing", p);
	snprintf(p, sizeof(p), "%s/dpdk_telemetry.v2", c->dir);
	cr_assert(exists(p), "%s missing", p);
	snprintf(p, sizeof(p), "%s/config", c->dir);
	cr_assert(!exists(p), "%s: the EAL's shared config file was made (no --no-shconf?)", p);
}

Test(residue, exit_removes_runtime_dir)
{
	static const char *const modes[] = { "exit", "return" };

	for (unsigned int i = 0; i < 2; i++) {
		struct child c;

		spawn(&c, NULL, modes[i]);
		cr_assert_eq(tc_reap(c.pid, 20), 0, "life_proc %s", modes[i]);
		cr_expect(!exists(c.dir), "%s: %s is still there", modes[i], c.dir);
		finish(&c);
	}
}

Test(residue, signal_removes_runtime_dir)
{
	/* Signals whose default action ends the process without a core file. */
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1 };

	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct child c;
		int st;

		spawn(&c, NULL, "idle 30");
		assert_claimed(&c);
		cr_assert_eq(kill(c.pid, sigs[i]), 0);
		st = tc_reap(c.pid, 20);
		/* The shell exec'd life_proc: its status is the signal's. */
		cr_expect_eq(st, 128 + sigs[i], "signal %d: status %d (the default action must still end it)",
			     sigs[i], st);
		cr_expect(!exists(c.dir), "signal %d: %s is still there", sigs[i], c.dir);
		finish(&c);
	}
}

Test(residue, fork_child_removes_nothing)
{
	struct child c;

	spawn(&c, NULL, "fork");
	cr_assert_eq(tc_reap(c.pid, 20), 0);
	cr_expect(tc_contains(c.out, "child-exited dir-kept"),
		  "the child's exit removed its parent's runtime directory");
	cr_expect(!exists(c.dir), "%s is still there after the parent's exit", c.dir);
	finish(&c);
}

/* The memif server config of side 0 on @sock. */
static void
memif_server_ini(char *path, size_t n, const char *sock)
{
	tc_memif_ini(path, n, "life", 0, sock, 64, NULL);
}

Test(residue, sigkill_leftovers_removed_by_next_start)
{
	char ini[256], sock[108], lock[4200], base[64], sub[96];
	struct child victim, next;

	/*
	 * A runtime area of this test's own: the tests beside it (--jobs=2)
	 * start droce in the shared one, and any start sweeps a dead lock, so
	 * one of theirs in the ~10 ms between the SIGKILL and the checks below
	 * would remove the victim's leftovers before "next" could.
	 */
	snprintf(base, sizeof(base), "/tmp/droce-life-kill-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	setenv("RUNTIME_DIRECTORY", base, 1); /* this test's process and its children */
	snprintf(sock, sizeof(sock), "/tmp/droce-life-%ld.sock", (long)getpid());
	unlink(sock);
	memif_server_ini(ini, sizeof(ini), sock);
	spawn(&victim, ini, "idle 30");
	assert_claimed(&victim);
	cr_assert(tc_wait_path(sock), "the memif server's socket %s", sock);
	snprintf(lock, sizeof(lock), "%s/%s", victim.dir, DROCE_RESIDUE_LOCK);
	cr_assert(tc_contains(lock, sock), "the lock file does not list %s", sock);
	kill(victim.pid, SIGKILL);
	cr_assert_eq(tc_reap(victim.pid, 20), 128 + SIGKILL);
	cr_assert(exists(victim.dir), "SIGKILL: nothing can remove %s, yet it is gone", victim.dir);
	cr_assert(exists(sock), "SIGKILL: nothing can remove %s, yet it is gone", sock);

	/* Any later droce start (here: the embedded config, no memif) cleans. */
	spawn(&next, NULL, "exit");
	cr_assert_eq(tc_reap(next.pid, 20), 0);
	cr_expect(!exists(victim.dir), "the next start left %s", victim.dir);
	cr_expect(!exists(sock), "the next start left the memif socket %s", sock);
	cr_expect(!exists(next.dir), "%s", next.dir);
	unlink(ini);
	unlink(sock);
	finish(&victim);
	finish(&next);
	snprintf(sub, sizeof(sub), "%s/dpdk", base);
	rmdir(sub);
	cr_expect_eq(rmdir(base), 0, "%s is not empty: %s", base, strerror(errno));
}

/* ---- the sweep's rules, on a base directory of the test's own ---- */

static void
make_base(char *base, size_t n)
{
	snprintf(base, n, "/tmp/droce-life-base-%ld", (long)getpid());
	mkdir(base, 0700);
}

static void
touch(const char *dir, const char *name)
{
	char p[4200];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	close(fd);
}

/* A socket file at @dir/@name nobody listens on (bound, then closed). */
static void
dead_socket(const char *dir, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", sa.sun_path);
	close(fd);
}

static void
age(const char *dir, int seconds)
{
	struct timespec ts[2];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= seconds;
	ts[1] = ts[0];
	cr_assert_eq(utimensat(AT_FDCWD, dir, ts, 0), 0, "%s", dir);
}

Test(residue, sweep_rules)
{
	char base[256], held[300], dead[300], legacy[300], young[300], other[300], cfglock[300];
	char lock[400], p[400];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd, pipefd[2];
	pid_t holder;
	char c;

	make_base(base, sizeof(base));
	snprintf(held, sizeof(held), "%s/held", base);
	snprintf(dead, sizeof(dead), "%s/dead", base);
	snprintf(legacy, sizeof(legacy), "%s/droce999999", base);
	snprintf(young, sizeof(young), "%s/droce999998", base);
	snprintf(other, sizeof(other), "%s/rte", base);
	snprintf(cfglock, sizeof(cfglock), "%s/droce-primary", base);
	mkdir(held, 0700);
	mkdir(dead, 0700);
	mkdir(legacy, 0700);
	mkdir(young, 0700);
	mkdir(other, 0700);
	mkdir(cfglock, 0700);

	/* held: a lock file somebody holds (this process, another open). */
	snprintf(lock, sizeof(lock), "%s/%s", held, DROCE_RESIDUE_LOCK);
	fd = open(lock, O_CREAT | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	dead_socket(held, "dpdk_telemetry.v2");
	/* dead: a lock file nobody holds, listing a memif socket of its own. */
	touch(dead, DROCE_RESIDUE_LOCK);
	dead_socket(dead, "dpdk_telemetry.v2");
	/* legacy: droce-named, no lock file, the EAL's files, untouched for 2 min. */
	touch(legacy, "config");
	touch(legacy, "fbarray_memzone");
	dead_socket(legacy, "mp_socket");
	age(legacy, 120);
	/* young: the same, changed now (a process may be starting in it). */
	touch(young, "config");
	/* other: not droce's name, no lock file: never touched. */
	touch(other, "config");
	age(other, 120);
	/* cfglock: droce-named, old, but a live process holds the EAL's config lock. */
	snprintf(p, sizeof(p), "%s/config", cfglock);
	cr_assert_eq(pipe(pipefd), 0);
	holder = fork();
	cr_assert_geq(holder, 0);
	if (holder == 0) {
		int cfd = open(p, O_CREAT | O_RDWR, 0600);

		fcntl(cfd, F_SETLK, &fl);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	cr_assert_eq(read(pipefd[0], &c, 1), 1);
	age(cfglock, 120);

	cr_expect_eq(droce_residue_sweep(base), 2, "dead and legacy only");
	cr_expect(exists(held), "a held lock's directory was removed");
	cr_expect(!exists(dead), "a dead lock's directory stayed");
	cr_expect(!exists(legacy), "an old droce directory nobody uses stayed");
	cr_expect(exists(young), "a droce directory changed just now was removed");
	cr_expect(exists(other), "a directory not droce's was removed");
	cr_expect(exists(cfglock), "a directory whose config a process locks was removed");

	/* The lock released: the next sweep takes it. */
	close(fd);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	cr_expect_eq(droce_residue_sweep(base), 2, "held and cfglock, now free");
	cr_expect(!exists(held));
	cr_expect(!exists(cfglock));

	snprintf(p, sizeof(p), "rm -rf %s", base);
	cr_assert_eq(system(p), 0);
}

Test(residue, runtime_dir_like_dpdk)
{
	char out[4096];

	char *saved = getenv("RUNTIME_DIRECTORY") ? strdup(getenv("RUNTIME_DIRECTORY")) : NULL;

	setenv("RUNTIME_DIRECTORY", "/run/x", 1);
	cr_assert(droce_residue_runtime_dir("p", out, sizeof(out)));
	cr_expect_str_eq(out, "/run/x/dpdk/p");
	unsetenv("RUNTIME_DIRECTORY");
	cr_assert(droce_residue_runtime_dir("droce1", out, sizeof(out)));
	if (getuid() == 0)
		cr_expect_str_eq(out, "/var/run/dpdk/droce1");
	cr_expect(!droce_residue_runtime_dir("p", out, 8), "a path that does not fit");
	if (saved != NULL)
		setenv("RUNTIME_DIRECTORY", saved, 1);
	free(saved);
}

Test(residue, socket_liveness)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/droce-life-live-%ld.sock", (long)getpid());
	unlink(sa.sun_path);
	cr_expect_eq(droce_unix_socket_live(sa.sun_path), -1, "no file");
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	cr_expect_eq(droce_unix_socket_live(sa.sun_path), 1, "a listener (stream)");
	close(fd);
	cr_expect_eq(droce_unix_socket_live(sa.sun_path), 0, "nobody listens");
	unlink(sa.sun_path);
}

/* ---- what the application does wrong (issue 28 §3) ---- */

/*
 * fork() after droce started: the child's verbs on the parent's objects
 * fail at once (EIO: no engine runs in a child, and it must not drive
 * copies of the parent's, whose memif rings it shares); the parent's
 * engine is untouched (its QP destroy completes).
 */
Test(residue, fork_child_cannot_drive_the_parents_engines)
{
	struct child c;

	spawn(&c, NULL, "fork-verbs");
	cr_assert_eq(tc_reap(c.pid, 30), 0);
	cr_expect(tc_contains(c.out, "child post=5 destroy=5 poll=0"),
		  "the child's post and destroy must fail with EIO, its poll find nothing");
	cr_expect(tc_contains(c.out, "parent destroy=0 child-status=0"),
		  "the parent's QP destroy (its engine) after the child");
	{
		char buf[4096], *m;
		FILE *f = fopen(c.out, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		m = strstr(buf, " ms=");
		cr_expect(m != NULL && atol(m + 4) < 2000, "the child's verbs took %s ms (they must not wait)",
			  m ? m + 4 : "?");
	}
	if (!tc_contains(c.out, "parent destroy=0"))
		tc_dump(c.out);
	cr_expect(!exists(c.dir), "%s is still there", c.dir);
	finish(&c);
}

/* exit() from main while another thread sends and polls: a clean end. */
Test(residue, exit_with_traffic_in_flight)
{
	struct child c;
	int st;

	spawn(&c, NULL, "exit-busy");
	st = tc_reap(c.pid, 30);
	if (st != 0)
		tc_dump(c.out);
	cr_expect_eq(st, 0, "exit(0) with traffic in flight ended with status %d", st);
	cr_expect(tc_contains(c.out, "busy sent="), "no traffic before the exit");
	cr_expect(!tc_contains(c.out, "received=0\n"), "nothing was received before the exit");
	cr_expect(!exists(c.dir), "%s is still there", c.dir);
	finish(&c);
}

/* A thread cancelled at a cancellation point inside verbs: the engines
 * still run for the threads that remain. */
Test(residue, thread_cancelled_inside_verbs)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[512];
	struct child c;
	int st;

	/*
	 * ASan's thread-exit code calls sigaltstack() on a stack whose frames
	 * the cancellation unwound without unpoisoning them, and reports a
	 * stack-buffer-underflow in its own interceptor; without the alternate
	 * signal stack it has nothing to unset.
	 */
	snprintf(opts, sizeof(opts), "%s%suse_sigaltstack=0", asan ? asan : "", asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	spawn(&c, NULL, "cancel");
	st = tc_reap(c.pid, 60);
	if (st != 0)
		tc_dump(c.out);
	cr_expect_eq(st, 0, "status %d (6: no traffic after the cancel, -1: hung)", st);
	cr_expect(tc_contains(c.out, "after-cancel received="), "no traffic after the cancel");
	finish(&c);
}

/*
 * Threads cancelled while blocked in rdma_get_cm_event, ibv_get_cq_event
 * and ibv_get_async_event: they end, and nothing they held stays raised:
 * the rdma_cm channel is really closed by rdma_destroy_event_channel (it
 * keeps a channel with a reader inside for ever), the CQ, the completion
 * channel and the device are destroyed without EBUSY.
 */
Test(residue, threads_cancelled_in_event_waits)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[512];
	struct child c;
	int st;

	/* as thread_cancelled_inside_verbs: ASan's sigaltstack vs. the unwind */
	snprintf(opts, sizeof(opts), "%s%suse_sigaltstack=0", asan ? asan : "", asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	spawn(&c, NULL, "cancel-waits");
	st = tc_reap(c.pid, 60);
	if (st != 0)
		tc_dump(c.out);
	cr_expect_eq(st, 0, "status %d (5: something stayed raised, -1: hung)", st);
	cr_expect(tc_contains(c.out, "cancel-waits joined=3 cm-channel=closed cq=0 comp-channel=0 close=0"),
		  "a cancelled wait left something behind");
	finish(&c);
}
