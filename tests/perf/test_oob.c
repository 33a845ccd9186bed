/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's out-of-band TCP exchange (apps/perftest_oob.c).
 *
 * (a) Against recorded perftest streams (data/perftest_*_write_bw.bin, made
 *     by data/make_perftest_streams.py from perftest 6.06's formats): the
 *     recorded bytes are fed to droce's side of a socketpair, droce runs
 *     ib_write_bw's sequence in the other role, the test checks what droce
 *     parsed (QPN, PSN, rkey, vaddr, GID, MTU, the report) and that every
 *     byte droce sent is in the format perftest parses (its sscanf format,
 *     fixed lengths, byte order).
 * (b) Two droce-perf processes over memif (server and client, each with its
 *     own config and EAL), meeting over 127.0.0.1: write_bw, read_bw,
 *     send_bw and write_lat with --check, and send_bw over UD.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "perftest_oob.h"

/* perftest's own format string for the GID key message, written out here
 * independently of droce's code (KEY_PRINT_FMT_GID). */
#define PERFTEST_KEY_FMT_GID                                                                 \
	"%04x:%04x:%06x:%06x:%08x:%016llx:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:" \
	"%02x:%02x:%02x:%02x:%02x:%02x:%08x:"

static size_t
load(const char *name, uint8_t *buf, size_t cap)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", getenv("PERF_DATA") ? getenv("PERF_DATA") : ".",
		 name);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s (PERF_DATA)", path);
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static const struct pt_dest droce_dest = {
	.lid = 0, .out_reads = 16, .qpn = 0x000040, .psn = 0x5e5e5e, .rkey = 0x00000101,
	.vaddr = 0x00007f0000001000ull, .srqn = 0,
	.gid = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1 },
};

/* Checks a 108-byte key message droce sent, with perftest's eyes. */
static void
expect_perftest_key(const uint8_t *msg, const struct pt_dest *want)
{
	char exp[PT_KEY_MSG_LEN + 32];
	unsigned int lid, reads, qpn, psn, rkey, srqn, g[16];
	unsigned long long va;
	int n;

	cr_assert_eq(msg[PT_KEY_MSG_LEN - 1], 0, "key message not NUL-terminated at byte 107");
	snprintf(exp, sizeof(exp), PERFTEST_KEY_FMT_GID, want->lid, want->out_reads, want->qpn,
		 want->psn, want->rkey, (unsigned long long)want->vaddr, want->gid[0],
		 want->gid[1], want->gid[2], want->gid[3], want->gid[4], want->gid[5],
		 want->gid[6], want->gid[7], want->gid[8], want->gid[9], want->gid[10],
		 want->gid[11], want->gid[12], want->gid[13], want->gid[14], want->gid[15],
		 want->srqn);
	cr_assert_eq(strlen(exp), PT_KEY_MSG_LEN - 1);
	cr_expect_eq(memcmp(msg, exp, PT_KEY_MSG_LEN), 0, "key message\n got  %.108s\n want %s",
		     (const char *)msg, exp);
	n = sscanf((const char *)msg,
		   "%x:%x:%x:%x:%x:%llx:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:", &lid,
		   &reads, &qpn, &psn, &rkey, &va, &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6],
		   &g[7], &g[8], &g[9], &g[10], &g[11], &g[12], &g[13], &g[14], &g[15], &srqn);
	cr_expect_eq(n, 23);
	cr_expect_eq(qpn, want->qpn);
	cr_expect_eq(psn, want->psn);
	cr_expect_eq(rkey, want->rkey);
	cr_expect_eq(va, want->vaddr);
	for (int i = 0; i < 16; i++)
		cr_expect_eq(g[i], want->gid[i]);
}

static double
be_double(const uint8_t *p)
{
	uint64_t u;
	double d;

	memcpy(&u, p, 8);
	u = __builtin_bswap64(u);
	memcpy(&d, &u, 8);
	return d;
}

static uint64_t
be_u64(const uint8_t *p)
{
	uint64_t u;

	memcpy(&u, p, 8);
	return __builtin_bswap64(u);
}

/* ib_write_bw's sequence from droce's side, against a recorded peer. */
static void
replay(bool droce_client, const char *file, struct pt_dest *rem, struct pt_bw_report *rrep,
       int *mtu, uint8_t *sent, size_t *nsent)
{
	static uint8_t rec[4096];
	size_t n = load(file, rec, sizeof(rec));
	struct pt_bw_report mine = { .size = 65536, .iters = 5000, .bw_peak = 2048.5,
				     .bw_avg = 2000.0, .msg_rate = 0.032 };
	struct pt_oob c;
	struct pt_dest tmp;
	int sv[2], cb, cl;
	ssize_t k;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* the whole recorded stream fits the socket buffer: the peer "speaks" first */
	cr_assert_eq(write(sv[1], rec, n), (ssize_t)n);
	pt_oob_init(&c, droce_client, 2000, NULL, NULL);
	pt_oob_attach(&c, sv[0]);
	cr_assert_eq(pt_xchg_version(&c, PT_VERSION), 0, "%s", c.err);
	cr_expect_str_eq(c.rem_version, "6.06");
	cr_expect(!c.peer_droce);
	cr_assert_eq(pt_xchg_sys_data(&c, PT_CYCLE_BUFFER, PT_CACHE_LINE, &cb, &cl), 0, "%s", c.err);
	cr_expect_eq(cb, 4096);
	cr_expect_eq(cl, 64);
	cr_assert_eq(pt_xchg_mtu(&c, 5, mtu), 0, "%s", c.err);
	cr_assert_eq(pt_hand_shake(&c, &droce_dest, rem), 0, "%s", c.err);
	cr_assert_eq(pt_hand_shake(&c, &droce_dest, &tmp), 0, "barrier: %s", c.err);
	cr_assert_eq(pt_hand_shake(&c, &droce_dest, &tmp), 0, "end: %s", c.err);
	cr_assert_eq(pt_xchg_bw_reports(&c, &mine, rrep), 0, "%s", c.err);
	cr_assert_eq(pt_hand_shake(&c, &droce_dest, &tmp), 0, "close: %s", c.err);
	pt_oob_close(&c);
	*nsent = 0;
	while ((k = read(sv[1], sent + *nsent, 4096 - *nsent)) > 0)
		*nsent += (size_t)k;
	close(sv[1]);
}

/* What droce sent, the way perftest 6.06 reads it. */
static void
expect_droce_stream(const uint8_t *s, size_t n)
{
	uint32_t v;

	cr_assert_eq(n, 16 + 8 + 2 + 4 * 108 + 40 + 108 - 108, "droce sent %zu bytes", n);
	/* version: perftest reads 16 bytes and atof()s them */
	cr_expect_eq(atof((const char *)s), 6.06);
	cr_expect_eq(memcmp(s, "6.06\0", 5), 0);
	/* sys data: two big-endian ints */
	memcpy(&v, s + 16, 4);
	cr_expect_eq(ntohl(v), 4096u);
	memcpy(&v, s + 20, 4);
	cr_expect_eq(ntohl(v), 64u);
	/* MTU: 2 bytes of text, strtol -> 5 (IBV_MTU_4096) */
	cr_expect_eq(s[24], '5');
	cr_expect_eq(s[25], 0);
	for (int i = 0; i < 3; i++)
		expect_perftest_key(s + 26 + 108 * i, &droce_dest);
	/* bw report: size, iters (8 bytes each for >= 5.33), three doubles */
	cr_expect_eq(be_u64(s + 350), 65536u);
	cr_expect_eq(be_u64(s + 358), 5000u);
	cr_expect_eq(be_double(s + 366), 2048.5);
	cr_expect_eq(be_double(s + 374), 2000.0);
	cr_expect_eq(be_double(s + 382), 0.032);
	expect_perftest_key(s + 390, &droce_dest);
}

Test(oob_replay, droce_server_vs_recorded_perftest_client)
{
	static uint8_t sent[4096];
	struct pt_dest rem;
	struct pt_bw_report rrep;
	size_t n;
	int mtu;
	static const uint8_t gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2 };

	replay(false, "perftest_client_write_bw.bin", &rem, &rrep, &mtu, sent, &n);
	cr_expect_eq(mtu, 3, "agreed MTU %d, want IBV_MTU_1024", mtu);
	cr_expect_eq(rem.qpn, 0x000123u);
	cr_expect_eq(rem.psn, 0xabcdefu);
	cr_expect_eq(rem.rkey, 0x00001234u);
	cr_expect_eq(rem.vaddr, 0x00007f1234560000ull);
	cr_expect_eq(rem.out_reads, 0x10u);
	cr_expect_eq(memcmp(rem.gid, gid, 16), 0);
	cr_expect(pt_gid_is_v4mapped(rem.gid));
	cr_expect_eq(rrep.size, 65536u);
	cr_expect_eq(rrep.iters, 5000u);
	cr_expect_eq(rrep.bw_peak, 1234.5);
	cr_expect_eq(rrep.bw_avg, 1200.25);
	cr_expect_eq(rrep.msg_rate, 0.0192);
	expect_droce_stream(sent, n);
}

Test(oob_replay, droce_client_vs_recorded_perftest_server)
{
	static uint8_t sent[4096];
	struct pt_dest rem;
	struct pt_bw_report rrep;
	size_t n;
	int mtu;
	static const uint8_t gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1 };

	replay(true, "perftest_server_write_bw.bin", &rem, &rrep, &mtu, sent, &n);
	cr_expect_eq(mtu, 3);
	cr_expect_eq(rem.qpn, 0x000456u);
	cr_expect_eq(rem.psn, 0x123456u);
	cr_expect_eq(rem.rkey, 0x0000abcdu);
	cr_expect_eq(rem.vaddr, 0x00007fabcdef0000ull);
	cr_expect_eq(memcmp(rem.gid, gid, 16), 0);
	cr_expect_eq(rrep.size, 0u);
	expect_droce_stream(sent, n);
}

Test(oob_replay, old_peer_versions)
{
	/* a 5.20 peer: no system data, a 4-byte MTU field, 4-byte iterations */
	uint8_t in[16 + 4] = "5.20", out[64];
	struct pt_oob c;
	int sv[2], cb, cl, mtu;
	ssize_t k;

	memcpy(in + 16, "2\0\0\0", 4);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(write(sv[1], in, sizeof(in)), (ssize_t)sizeof(in));
	pt_oob_init(&c, true, 2000, NULL, NULL);
	pt_oob_attach(&c, sv[0]);
	cr_assert_eq(pt_xchg_version(&c, PT_VERSION), 0);
	cr_assert_eq(pt_xchg_sys_data(&c, 4096, 64, &cb, &cl), 0);
	cr_assert_eq(pt_xchg_mtu(&c, 4, &mtu), 0);
	cr_expect_eq(mtu, 2);
	pt_oob_close(&c);
	k = read(sv[1], out, sizeof(out));
	cr_expect_eq(k, 16 + 4, "sent %zd bytes (version + 4-byte MTU only)", k);
	cr_expect_eq(out[16], '4');
	close(sv[1]);
}

Test(oob_key, format_parse_round_trip_and_mismatched_gids)
{
	char msg[PT_KEY_MSG_LEN];
	struct pt_dest d = droce_dest, back;
	uint8_t v6[16] = { 0xfe, 0x80 };

	d.srqn = 0xdeadbeef;
	d.vaddr = 0xffffffffffffffffull;
	pt_key_format(&d, msg);
	expect_perftest_key((const uint8_t *)msg, &d);
	cr_assert_eq(pt_key_parse(msg, &back), 0);
	cr_expect_eq(memcmp(&back, &d, sizeof(d)), 0);
	cr_expect(pt_gid_compatible(d.gid, droce_dest.gid));
	cr_expect(!pt_gid_compatible(d.gid, v6));
	msg[10] = 'x';
	cr_expect_neq(pt_key_parse(msg, &back), 0, "garbage accepted");
}

/* ---- (b) two droce-perf processes over memif ---- */

static char sock_path[96], ini[2][96];

static void
write_ini(int side)
{
	FILE *f;

	snprintf(ini[side], sizeof(ini[side]), "/tmp/droce-oob-%ld-%d.ini", (long)getpid(), side);
	f = fopen(ini[side], "w");
	cr_assert_not_null(f);
	fprintf(f,
		"[eal]\nargs = --no-huge --no-pci -m 128 --log-level=lib.eal:warning\n"
		"[engines]\nmode = colocated\ncount = 1\n"
		"[mempool]\nmbufs = 4095\ncache = 128\n"
		"[port0]\nkind = memif\nrole = %s\nsocket = %s\nid = 0\n"
		"mac = 02:00:c6:12:00:0%d\nipv4 = 198.18.0.%d\n",
		side ? "client" : "server", sock_path, side + 1, side + 1);
	fclose(f);
}

static pid_t
spawn(const char *cfg, const char *args, const char *out)
{
	const char *exe = getenv("DROCE_PERF");
	char cmd[1024];
	pid_t pid;

	cr_assert_not_null(exe, "DROCE_PERF not set (run through meson test)");
	snprintf(cmd, sizeof(cmd), "exec %s %s >%s 2>&1", exe, args, out);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		setenv("DROCE_CONFIG", cfg, 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int
reap(pid_t pid, int timeout_s)
{
	int st;

	for (int i = 0; i < timeout_s * 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void
dump(const char *path)
{
	char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	fprintf(stderr, "---- %s ----\n%s\n", path, buf);
}

static bool
contains(const char *path, const char *what)
{
	char buf[16384];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, what) != NULL;
}

/* Runs a droce-perf server and client over memif; both must exit 0, and
 * their outputs must contain @want_cli / @want_srv (when not NULL). */
static void
two_processes_say(const char *test, const char *opts, int id, const char *want_cli,
		  const char *want_srv)
{
	char sargs[512], cargs[512], sout[96], cout[96];
	int port = 20000 + (int)(getpid() % 20000) + id, rs, rc;
	pid_t srv, cli;

	snprintf(sock_path, sizeof(sock_path), "/tmp/droce-oob-%ld-%d.sock", (long)getpid(), id);
	write_ini(0);
	write_ini(1);
	snprintf(sout, sizeof(sout), "/tmp/droce-oob-%ld-%d.server", (long)getpid(), id);
	snprintf(cout, sizeof(cout), "/tmp/droce-oob-%ld-%d.client", (long)getpid(), id);
	snprintf(sargs, sizeof(sargs), "%s --server --bind 127.0.0.1 -p %d --timeout 5 %s", test,
		 port, opts);
	snprintf(cargs, sizeof(cargs), "%s 127.0.0.1 -p %d --timeout 5 %s", test, port, opts);
	srv = spawn(ini[0], sargs, sout);
	/* a memif client needs the server's socket to exist when it starts */
	for (int i = 0; i < 1000 && access(sock_path, F_OK) != 0; i++)
		usleep(10000);
	cr_assert_eq(access(sock_path, F_OK), 0, "the server made no memif socket");
	cli = spawn(ini[1], cargs, cout);
	rc = reap(cli, 25);
	rs = reap(srv, 5);
	if (rc != 0 || rs != 0) {
		dump(sout);
		dump(cout);
	}
	cr_expect_eq(rc, 0, "client: %s: exit %d", cargs, rc);
	cr_expect_eq(rs, 0, "server: %s: exit %d", sargs, rs);
	cr_expect(contains(cout, "Data check      : ON"), "client ran without --check");
	cr_expect(contains(cout, "two processes"));
	if (want_cli != NULL && !contains(cout, want_cli)) {
		dump(cout);
		cr_expect_fail("the client did not say \"%s\"", want_cli);
	}
	if (want_srv != NULL && !contains(sout, want_srv)) {
		dump(sout);
		cr_expect_fail("the server did not say \"%s\"", want_srv);
	}
	unlink(ini[0]);
	unlink(ini[1]);
	unlink(sock_path);
	unlink(sout);
	unlink(cout);
}

static void
two_processes(const char *test, const char *opts, int id)
{
	two_processes_say(test, opts, id, NULL, NULL);
}

TestSuite(oob_memif, .timeout = 60);

Test(oob_memif, write_bw_check)
{
	two_processes("write_bw", "-s 4096 -n 400 --check", 0);
}

Test(oob_memif, read_bw_check)
{
	two_processes("read_bw", "-s 4096 -n 400 --check", 1);
}

Test(oob_memif, send_bw_check)
{
	two_processes("send_bw", "-s 4096 -n 400 --check", 2);
}

Test(oob_memif, write_lat_check)
{
	two_processes("write_lat", "-s 64 -n 200 --check", 3);
}

Test(oob_memif, ud_send_bw_check)
{
	/* the AH from the GID and QPN the client and server exchanged; the
	 * server reports what it received (UD: what arrived, nothing lost at
	 * this rate) */
	two_processes_say("send_bw", "-c UD -s 1024 -n 300 --check", 4,
			  "Connection type : UD", "\n 1024       300   ");
}
