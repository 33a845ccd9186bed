/* SPDX-License-Identifier: BSD-3-Clause
 * Peers that die (issue 28 §2): two droce processes (life_peer) joined by
 * memif hold an rdma_cm connection; the test kills one with SIGKILL in the
 * middle of RC traffic, of an idle RC connection, of a UD stream or of an
 * rsocket transfer, and starts a new process with the same config at once.
 * The survivor's QP ends in error completions within its retry budget (RC),
 * the CM gives it DISCONNECTED and TIMEWAIT_EXIT after its rdma_disconnect,
 * its blocked rsend / rrecv returns an error, nothing hangs, and the
 * survivor connects to the new process and exchanges messages (a surviving
 * memif client dials the new server: droce_port_redial).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "proc.h"

TestSuite(peers, .timeout = 240);

struct side {
	pid_t pid;
	char out[128];
};

static char sock[108], ini[2][256];
static bool keep_outputs; /* a side failed: its output stays for a look */

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
configs(void)
{
	snprintf(sock, sizeof(sock), "/tmp/droce-peers-%ld.sock", (long)getpid());
	unlink(sock);
	for (unsigned int k = 0; k < 2; k++)
		tc_memif_ini(ini[k], sizeof(ini[k]), "peers", k, sock, 64, "rxd = 512\ntxd = 512\n");
}

/* Side @k (0 server, 1 client) running `life_peer ARGS`. */
static void
start(struct side *s, unsigned int k, const char *args)
{
	const char *exe = getenv("LIFE_PEER");
	static unsigned int n;

	cr_assert_not_null(exe, "LIFE_PEER not set (run through meson test)");
	snprintf(s->out, sizeof(s->out), "/tmp/droce-peers-%ld-%u.out", (long)getpid(), n++);
	s->pid = tc_spawn(ini[k], exe, args, s->out);
	if (k == 0)
		cr_assert(tc_wait_path(sock), "the memif server's socket %s", sock);
}

/* Waits until @s printed @what (bounded). */
static void
wait_for(struct side *s, const char *what, int seconds)
{
	for (int i = 0; i < seconds * 100; i++) {
		if (tc_contains(s->out, what))
			return;
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			tc_dump(s->out);
			cr_assert_fail("%s ended before printing \"%s\"", s->out, what);
		}
		usleep(10000);
	}
	tc_dump(s->out);
	cr_assert_fail("%s: no \"%s\" in %d s", s->out, what, seconds);
}

/* The value of @key= on the first line of @s's output that starts @line. */
static long long
field(const struct side *s, const char *line, const char *key)
{
	char buf[16384], *p, k[32];
	FILE *f = fopen(s->out, "r");
	size_t n;

	cr_assert_not_null(f, "%s", s->out);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (p = buf; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, line, strlen(line)) != 0)
			continue;
		snprintf(k, sizeof(k), " %s=", key);
		char *v = strstr(p, k), *eol = strchr(p, '\n');

		cr_assert(v != NULL && (eol == NULL || v < eol), "%s: \"%s\" has no %s", s->out, line,
			  key);
		return atoll(v + strlen(k));
	}
	tc_dump(s->out);
	cr_assert_fail("%s: no line \"%s\"", s->out, line);
	return -1;
}

static void
expect_exit0(struct side *s, int seconds)
{
	int st = tc_reap(s->pid, seconds);

	if (st != 0) {
		tc_dump(s->out);
		keep_outputs = true;
	}
	cr_expect_eq(st, 0, "%s: exit %d (the outputs are kept)", s->out, st);
}

static void
kill9(struct side *s, uint64_t *t)
{
	*t = mono_ms();
	cr_assert_eq(kill(s->pid, SIGKILL), 0);
	cr_assert_eq(tc_reap(s->pid, 10), 128 + SIGKILL);
}

static void
cleanup(struct side *sides, unsigned int n)
{
	for (unsigned int i = 0; i < n && !keep_outputs; i++)
		unlink(sides[i].out);
	unlink(ini[0]);
	unlink(ini[1]);
	unlink(sock);
}

/*
 * RC: the error came within the retry budget, (retry_cnt + 1) x 4.096 us x
 * 2^timeout after the kill, plus 3 s for a crowded machine's scheduling;
 * then the CM's events and the next connection's exchange.
 */
static void
check_rc_survivor(struct side *s, uint64_t t_kill, bool traffic)
{
	long long timeout = field(s, "connected 0", "timeout");

	/* the memif PMD's unmaps wait for the engines (pmd_glue/memif_guard.c) */
	cr_expect_eq(field(s, "connected 0", "guard"), 1, "the memif guard is not in place");
	long long retry = field(s, "connected 0", "retry");
	double budget = (double)(retry + 1) * 4.096e-3 * (double)(1ll << timeout);
	long long t_err;

	if (traffic) {
		t_err = field(s, "wc-error", "t");
		cr_expect(tc_contains(s->out, "wc-error transport retry counter exceeded"),
			  "the first failed completion is not RETRY_EXC_ERR");
		cr_expect_leq((double)(t_err - (long long)t_kill), budget + 3000.0,
			      "error %lld ms after the kill; budget %.0f ms", t_err - (long long)t_kill,
			      budget);
		cr_log_info("RC survivor: RETRY_EXC_ERR %lld ms after SIGKILL (budget %.0f ms)",
			    t_err - (long long)t_kill, budget);
		cr_expect(tc_contains(s->out, "flushed"), "outstanding WRs did not flush");
	} else {
		cr_expect(tc_contains(s->out, "port-err"), "no IBV_EVENT_PORT_ERR");
	}
	cr_expect(tc_contains(s->out, "cm RDMA_CM_EVENT_DISCONNECTED"), "no DISCONNECTED");
	cr_expect(tc_contains(s->out, "cm RDMA_CM_EVENT_TIMEWAIT_EXIT"), "no TIMEWAIT_EXIT");
	cr_expect(tc_contains(s->out, "connected 1"), "no second connection");
	cr_expect(tc_contains(s->out, "ok 2000"), "the second connection's exchange");
}

/* The survivor is side @surv; the other side is killed and started again. */
static void
rc_case(unsigned int surv, const char *plan)
{
	static const char *const role[] = { "server", "client" };
	char args[128];
	struct side s[3];
	uint64_t t_kill;
	unsigned int dead = 1 - surv;

	configs();
	snprintf(args, sizeof(args), "server rc %s%s", plan, surv == 0 ? " ok" : "");
	start(&s[0], 0, args);
	snprintf(args, sizeof(args), "client rc %s%s", plan, surv == 1 ? " ok" : "");
	start(&s[1], 1, args);
	wait_for(&s[0], strcmp(plan, "stream") == 0 ? "streaming" : "idle", 60);
	wait_for(&s[1], strcmp(plan, "stream") == 0 ? "streaming" : "idle", 60);
	if (strcmp(plan, "stream") == 0)
		usleep(300 * 1000); /* traffic in flight */
	kill9(&s[dead], &t_kill);
	/* A new process with the same config, at once. */
	snprintf(args, sizeof(args), "%s rc ok", role[dead]);
	start(&s[2], dead, args);
	expect_exit0(&s[surv], 150);
	expect_exit0(&s[2], 60);
	check_rc_survivor(&s[surv], t_kill, strcmp(plan, "stream") == 0);
	cr_expect(tc_contains(s[2].out, "ok 2000"), "the new process's exchange");
	cleanup(s, 3);
}

Test(peers, rc_traffic_client_killed)
{
	rc_case(0, "stream");
}

Test(peers, rc_traffic_server_killed)
{
	rc_case(1, "stream");
}

Test(peers, cm_idle_client_killed)
{
	rc_case(0, "idle");
}

Test(peers, cm_idle_server_killed)
{
	rc_case(1, "idle");
}

/* UD: the client streams to the server; one is killed, a new one started. */
static void
ud_case(unsigned int surv)
{
	static const char *const role[] = { "server", "client" };
	char args[128];
	struct side s[3];
	uint64_t t_kill;
	unsigned int dead = 1 - surv;

	configs();
	snprintf(args, sizeof(args), "server ud stream%s", surv == 0 ? " ok" : "");
	start(&s[0], 0, args);
	snprintf(args, sizeof(args), "client ud stream%s", surv == 1 ? " ok" : "");
	start(&s[1], 1, args);
	wait_for(&s[0], "receiving", 60);
	kill9(&s[dead], &t_kill);
	snprintf(args, sizeof(args), "%s ud ok", role[dead]);
	start(&s[2], dead, args);
	expect_exit0(&s[surv], 150);
	expect_exit0(&s[2], 90);
	if (surv == 0) {
		cr_expect(tc_contains(s[0].out, "port-err"), "the server did not see its port go down");
	} else {
		cr_expect(tc_contains(s[1].out, "port-down"), "the client did not see its port go down");
		cr_expect(tc_contains(s[1].out, "port-up"), "the client's port did not come back");
	}
	cr_expect(tc_contains(s[surv].out, "connected 1"), "no second connection");
	cr_expect(tc_contains(s[surv].out, "\nok "), "no exchange on the second connection");
	cr_expect(tc_contains(s[surv].out, "done"));
	cr_expect(tc_contains(s[2].out, "done"), "the new process");
	cleanup(s, 3);
}

Test(peers, ud_stream_receiver_killed)
{
	ud_case(1);
}

Test(peers, ud_stream_sender_killed)
{
	ud_case(0);
}

/*
 * rsockets: the client rsend()s, the server rrecv()s (both blocking, with
 * SO_KEEPALIVE every second); one is killed.  The survivor's blocked call
 * returns an error (a reset, not an end of file) within a few seconds, and
 * it transfers 8 MiB with a new process at once.
 */
static void
rs_case(unsigned int surv)
{
	static const char *const role[] = { "server", "client" };
	char args[128];
	struct side s[3];
	uint64_t t_kill;
	unsigned int dead = 1 - surv;
	long long t_err;

	configs();
	snprintf(args, sizeof(args), "server rs stream%s", surv == 0 ? " ok" : "");
	start(&s[0], 0, args);
	snprintf(args, sizeof(args), "client rs stream%s", surv == 1 ? " ok" : "");
	start(&s[1], 1, args);
	wait_for(&s[0], "receiving", 60);
	kill9(&s[dead], &t_kill);
	snprintf(args, sizeof(args), "%s rs ok", role[dead]);
	start(&s[2], dead, args);
	expect_exit0(&s[surv], 150);
	expect_exit0(&s[2], 90);
	t_err = field(&s[surv], "rs-error", "t");
	cr_expect(tc_contains(s[surv].out, surv == 0 ? "rs-error rrecv" : "rs-error rsend"),
		  "the survivor's call did not fail");
	/* keepalive 1 s, then the RC retry budget; 5 s for a crowded machine */
	cr_expect_leq(t_err - (long long)t_kill, 8000, "the error came %lld ms after the kill",
		      t_err - (long long)t_kill);
	cr_log_info("rsocket survivor: %s failed %lld ms after SIGKILL", role[surv],
		    t_err - (long long)t_kill);
	cr_expect(tc_contains(s[surv].out, "connected 1"), "no second connection");
	cr_expect(tc_contains(s[surv].out, "ok 8388608"), "the second transfer");
	cr_expect(tc_contains(s[2].out, "ok 8388608"), "the new process's transfer");
	cleanup(s, 3);
}

Test(peers, rs_transfer_receiver_killed)
{
	rs_case(1);
}

Test(peers, rs_transfer_sender_killed)
{
	rs_case(0);
}
