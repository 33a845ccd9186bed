/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf, run as a subprocess on the loopback topology (the embedded
 * in-memory config): every test type in bandwidth and latency mode with
 * --check, --json parsed for sane numbers, the table, --stats, -D, post
 * lists and inline, the error paths (bad option, a corrupted message caught
 * by --check), UC (write, send) and UD (send) with --check, loss on UC/UD
 * reported rather than fatal, and --lat-samples.  Tiny configurations: a few
 * seconds in all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "proc.h"

#define OUT_CAP (64 * 1024)

/* Runs droce-perf with @args under DROCE_CONFIG=@config (NULL: the embedded
 * loopback config); stdout (and stderr when @merge) into @out. */
static int
run_perf_cfg(const char *config, const char *args, bool merge, char *out, size_t cap)
{
	const char *exe = getenv("DROCE_PERF");
	char cmd[1024], env[256];
	int rc;

	cr_assert_not_null(exe, "DROCE_PERF not set (run through meson test)");
	if (config)
		snprintf(env, sizeof(env), "env DROCE_CONFIG=%s", config);
	else
		snprintf(env, sizeof(env), "env -u DROCE_CONFIG");
	snprintf(cmd, sizeof(cmd), "%s %s %s%s", env, exe, args,
		 merge ? " 2>&1" : " 2>/dev/null");
	rc = tc_run(cmd, out, cap);
	cr_assert(rc >= 0, "droce-perf %s did not exit normally:\n%s", args, out);
	return rc;
}

static int
run_perf(const char *args, bool merge, char *out, size_t cap)
{
	return run_perf_cfg(NULL, args, merge, out, cap);
}

/* droce-perf @args must refuse to run (exit 2, a bad or unsupported
 * option), saying @says when not NULL. */
static void
expect_refused(const char *args, const char *says)
{
	static char out[OUT_CAP];
	int rc = run_perf(args, true, out, sizeof(out));

	cr_expect_eq(rc, 2, "droce-perf %s: exit %d\n%s", args, rc, out);
	if (says != NULL)
		cr_expect(strstr(out, says) != NULL, "droce-perf %s did not say \"%s\":\n%s", args,
			  says, out);
}

/* Value of "key": NUMBER in the text from @from (to the next '}'). */
static double
json_num(const char *from, const char *key)
{
	char pat[64];
	const char *p, *end = strchr(from, '}');

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(from, pat);
	cr_assert(p != NULL && (end == NULL || p < end), "no \"%s\" in %.200s", key, from);
	return strtod(p + strlen(pat), NULL);
}

/* The JSON is valid (python3's parser), when python3 is there. */
static void
json_valid(const char *json)
{
	char path[] = "/tmp/droce-perf-json-XXXXXX", cmd[256];
	int fd = mkstemp(path), rc;

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "command -v python3 >/dev/null || exit 0; python3 -c 'import json,sys; "
		 "json.load(open(sys.argv[1]))' %s", path);
	rc = system(cmd);
	unlink(path);
	cr_expect_eq(rc, 0, "not valid JSON:\n%s", json);
}

/* Runs a bandwidth test with --json and checks every result object;
 * returns the output (valid until the next call). */
static const char *
bw_json(const char *args, unsigned int want_results, double iters)
{
	static char out[OUT_CAP];
	char full[512];
	const char *r = out;
	unsigned int n = 0;
	int rc;

	snprintf(full, sizeof(full), "%s --json", args);
	rc = run_perf(full, false, out, sizeof(out));
	cr_assert_eq(rc, 0, "droce-perf %s: exit %d\n%s", full, rc, out);
	json_valid(out);
	cr_expect(strstr(out, "\"mode\": \"bw\"") != NULL, "%s", out);
	while ((r = strstr(r, "{\"bytes\": ")) != NULL) {
		double avg = json_num(r, "bw_avg_MBps"), peak = json_num(r, "bw_peak_MBps");

		cr_expect_eq(json_num(r, "iterations"), iters, "%s: %.300s", full, r);
		cr_expect_gt(avg, 0, "%s: %.300s", full, r);
		cr_expect_geq(peak, avg, "%s: %.300s", full, r);
		cr_expect_gt(json_num(r, "msg_rate_Mpps"), 0, "%s: %.300s", full, r);
		cr_expect_gt(json_num(r, "seconds"), 0, "%s: %.300s", full, r);
		n++;
		r++;
	}
	cr_expect_eq(n, want_results, "%s: %u results\n%s", full, n, out);
	return out;
}

static const char *
lat_json(const char *args, double iters)
{
	static char out[OUT_CAP];
	char full[512];
	const char *r;
	double mn, mx, typ, avg, p99, p999;
	int rc;

	snprintf(full, sizeof(full), "%s --json", args);
	rc = run_perf(full, false, out, sizeof(out));
	cr_assert_eq(rc, 0, "droce-perf %s: exit %d\n%s", full, rc, out);
	json_valid(out);
	r = strstr(out, "{\"bytes\": ");
	cr_assert_not_null(r, "%s", out);
	mn = json_num(r, "t_min_us");
	mx = json_num(r, "t_max_us");
	typ = json_num(r, "t_typical_us");
	avg = json_num(r, "t_avg_us");
	p99 = json_num(r, "p99_us");
	p999 = json_num(r, "p99_9_us");
	cr_expect_eq(json_num(r, "iterations"), iters, "%s: %s", full, r);
	cr_expect_gt(mn, 0, "%s: %s", full, r);
	cr_expect(mn <= avg && avg <= mx, "%s: t_min <= t_avg <= t_max: %s", full, r);
	cr_expect(mn <= typ && typ <= mx, "%s: t_min <= t_typical <= t_max: %s", full, r);
	cr_expect(typ <= p99 && p99 <= p999 && p999 <= mx, "%s: percentiles: %s", full, r);
	cr_expect_geq(json_num(r, "t_stdev_us"), 0, "%s: %s", full, r);
	return out;
}

TestSuite(perf, .timeout = 120);

Test(perf, write_bw_check_json)
{
	bw_json("write_bw -s 4096 -n 300 -q 2 --check", 1, 300);
}

Test(perf, read_bw_check_json)
{
	bw_json("read_bw -s 3000 -n 300 -q 2 --check", 1, 300);
}

Test(perf, send_bw_check_json)
{
	bw_json("send_bw -s 5000 -n 300 -q 2 -r 64 --check", 1, 300);
}

Test(perf, atomic_bw_check_json)
{
	bw_json("atomic_bw -n 300 -q 2 --check", 1, 300);
	bw_json("atomic_bw -A CMP_AND_SWAP -n 300 --check", 1, 300);
}

Test(perf, write_bw_post_list_inline_sizes)
{
	/* post lists, inline payloads, an explicit MTU, a small TX depth */
	bw_json("write_bw -s 64 -n 256 -l 8 -I 64 -m 1024 --check", 1, 256);
	bw_json("send_bw -s 200 -n 256 -l 4 -I 256 -t 16 --check", 1, 256);
}

/* run_bw builds its WRs once and advances them (bw.c's wr_cursor): one QP's
 * slots wrap many times in lists that do not divide cq_mod, the last list
 * is short, several QPs take turns with the WR array (each turn rebuilds
 * it), and --check finds every message where its WR said (a WR advanced to
 * the wrong slot for one message fails the first line); a CMP_AND_SWAP's
 * operands move with it. */
Test(perf, bw_wrs_advanced_across_slots_and_qps)
{
	bw_json("write_bw -s 64 -n 2000 -l 7 -Q 13 -t 20 --check", 1, 2000);
	bw_json("write_bw -s 64 -n 2000 -q 3 -l 7 -Q 13 -t 20 --check", 1, 2000);
	bw_json("read_bw -s 100 -n 1000 -q 2 -l 3 -Q 5 --check", 1, 1000);
	bw_json("atomic_bw -A CMP_AND_SWAP -n 1000 -Q 7 --check", 1, 1000);
}

Test(perf, write_lat_check_json)
{
	lat_json("write_lat -s 2 -n 200 --check", 200);
}

Test(perf, send_lat_check_json)
{
	lat_json("send_lat -s 1000 -n 200 --check", 200);
}

Test(perf, read_lat_check_json)
{
	lat_json("read_lat -s 5000 -n 200 --check", 200);
}

Test(perf, atomic_lat_check_json)
{
	lat_json("atomic_lat -A CMP_AND_SWAP -n 200 --check", 200);
}

Test(perf, table_and_stats)
{
	static char out[OUT_CAP];
	int rc = run_perf("send_bw -s 64 -n 100 --stats --report_gbits", false, out, sizeof(out));

	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "Send BW Test") != NULL, "%s", out);
	cr_expect(strstr(out, " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
			      "MsgRate[Mpps]") != NULL, "%s", out);
	cr_expect(strstr(out, "\n 64         100   ") != NULL, "%s", out);
	cr_expect(strstr(out, "engine 0: loops ") != NULL, "%s", out);
	cr_expect(strstr(out, "port0: rx_frames ") != NULL && strstr(out, "port1: rx_frames ") != NULL, "%s", out);

	rc = run_perf("write_lat -n 20", false, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "RDMA_Write Latency Test") != NULL, "%s", out);
	cr_expect(strstr(out, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
			      "t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% "
			      "percentile[usec]") != NULL, "%s", out);
	cr_expect(strstr(out, "\n 2       20  ") != NULL, "%s", out);
}

Test(perf, duration_bounds_the_run)
{
	static char out[OUT_CAP];
	const char *r;
	double s;
	int rc = run_perf("write_bw -s 1024 -D 0.3 --json", false, out, sizeof(out));

	cr_assert_eq(rc, 0, "%s", out);
	r = strstr(out, "{\"bytes\": ");
	cr_assert_not_null(r, "%s", out);
	s = json_num(r, "seconds");
	cr_expect(s >= 0.29 && s < 5, "ran %.3f s for -D 0.3", s);
	cr_expect_gt(json_num(r, "messages"), 0);
}

Test(perf, check_catches_a_corrupted_message)
{
	static char out[OUT_CAP];
	int rc;

	rc = run_perf("write_bw -s 256 -n 50 --check --inject-error 17", true, out, sizeof(out));
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "--check: RDMA WRITE, responder's memory: QP pair 0 message 17") != NULL,
		  "%s", out);
	rc = run_perf("send_lat -s 64 -n 50 --check --inject-error 3", true, out, sizeof(out));
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "--check: SEND, receive buffer: QP pair 0 message 3") != NULL, "%s",
		  out);
}

Test(perf, bad_command_lines)
{
	static char out[OUT_CAP];
	int rc;

	expect_refused("write_bw --no-such-option", "usage: droce-perf TEST");

	expect_refused("write_bandwidth", "unknown test 'write_bandwidth'");
	expect_refused("write_bandwidth", "usage: droce-perf TEST");

	expect_refused("", NULL);

	expect_refused("write_bw -s 0", NULL);
	expect_refused("write_bw -m 1000", NULL);
	expect_refused("send_lat -q 2", NULL);
	expect_refused("write_bw -l 64 -t 16", NULL);

	rc = run_perf("--help", false, out, sizeof(out));
	cr_expect_eq(rc, 0);
	cr_expect(strstr(out, "--report_gbits") != NULL, "%s", out);
}

/* ---- UC and UD ---- */

/* The JSON names the transport and, for bandwidth, counts no lost message
 * (nothing is lost on the in-memory pair). */
static void
expect_conn(const char *out, const char *conn, bool bw)
{
	char want[64];
	const char *r = out;

	snprintf(want, sizeof(want), "\"connection\": \"%s\"", conn);
	cr_expect(strstr(out, want) != NULL, "no %s in\n%s", want, out);
	while (bw && (r = strstr(r, "{\"bytes\": ")) != NULL) {
		cr_expect_eq(json_num(r, "lost"), 0, "%.300s", r);
		cr_expect_gt(json_num(r, "messages"), 0, "%.300s", r);
		r++;
	}
}

Test(perf, uc_write_send_bw_check_json)
{
	expect_conn(bw_json("write_bw -c UC -s 4096 -n 300 -q 2 --check", 1, 300), "UC", true);
	/* a UC SEND of several packets (MTU 1024) */
	expect_conn(bw_json("send_bw -c UC -s 5000 -n 300 -q 2 -r 64 --check", 1, 300), "UC",
		    true);
}

Test(perf, uc_write_send_lat_check_json)
{
	expect_conn(lat_json("write_lat -c UC -s 3000 -n 200 --check", 200), "UC", false);
	expect_conn(lat_json("send_lat -c UC -s 3000 -n 200 --check", 200), "UC", false);
}

Test(perf, ud_send_bw_lat_check_json)
{
	/* the largest UD message: the path MTU (1024 B on the 1500-byte ports) */
	expect_conn(bw_json("send_bw -c UD -s 1024 -n 300 -q 2 -r 64 --check", 1, 300), "UD",
		    true);
	expect_conn(bw_json("send_bw -c UD -s 64,1000 -n 200 -l 4 --check", 2, 200), "UD", true);
	expect_conn(lat_json("send_lat -c UD -s 1000 -n 200 --check", 200), "UD", false);
	expect_conn(lat_json("send_lat -c UD -n 200 --check", 200), "UD", false);
}

Test(perf, uc_ud_table)
{
	static char out[OUT_CAP];
	int rc = run_perf("send_bw -c UD -s 64 -n 100", false, out, sizeof(out));

	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, " Connection type : UD") != NULL, "%s", out);
	cr_expect(strstr(out, "\n 64         100   ") != NULL, "%s", out);
	rc = run_perf("write_lat -c UC -n 20", false, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, " Connection type : UC") != NULL, "%s", out);
	cr_expect(strstr(out, "\n 2       20  ") != NULL, "%s", out);
	rc = run_perf("write_lat -n 20", false, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, " Connection type : RC") != NULL, "%s", out);
}

Test(perf, uc_ud_refused_as_perftest_does)
{
	static char out[OUT_CAP];
	int rc;

	/* UD: one packet per message */
	expect_refused("send_bw -c UD -s 1025 -n 10", "max message size in UD is the path MTU, 1024 B");
	expect_refused("send_lat -c UD -s 64,4096 -n 10", NULL);
	/* the default size comes down to the MTU, as perftest's does */
	rc = run_perf("send_bw -c UD -n 50 --json", false, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "{\"bytes\": 1024,") != NULL, "%s", out);
	/* UD: SEND only; UC: no READ or atomics */
	expect_refused("write_bw -c UD", "UD connection only possible in SEND tests");
	expect_refused("read_bw -c UC", "UC connection not possible in READ tests");
	expect_refused("atomic_lat -c UC", "UC connection not possible in ATOMIC tests");
	expect_refused("send_bw -c XRC", NULL);
}

Test(perf, uc_ud_check_catches_a_corrupted_message)
{
	static char out[OUT_CAP];
	int rc;

	rc = run_perf("send_bw -c UD -s 512 -n 50 --check --inject-error 17", true, out,
		      sizeof(out));
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "--check: SEND, receive buffer: QP pair 0 message 17 (512 B)") != NULL,
		  "%s", out);
	rc = run_perf("write_bw -c UC -s 3000 -n 50 --check --inject-error 17", true, out,
		      sizeof(out));
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "--check: RDMA WRITE (UC), responder's memory: QP pair 0 message 17") !=
		  NULL, "%s", out);
}

/* A config like the embedded one with a lossy link (2% of frames dropped). */
static void
lossy_config(char *path, size_t n)
{
	int fd;
	FILE *f;

	snprintf(path, n, "/tmp/droce-perf-lossy-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fprintf(f, "[eal]\nargs = --no-huge --no-pci -m 128 --log-level=lib.eal:warning\n"
		"[engines]\nmode = colocated\ncount = 1\n"
		"[mempool]\nmbufs = 4095\ncache = 128\n"
		"[port0]\nkind = ring\npeer = port1\nmac = 02:00:c6:12:00:01\n"
		"ipv4 = 198.18.0.1\nimpair_drop = 0.02\nimpair_seed = 11\n"
		"[port1]\nkind = ring\npeer = port0\nmac = 02:00:c6:12:00:02\n"
		"ipv4 = 198.18.0.2\n");
	fclose(f);
}

Test(perf, uc_ud_lost_messages_are_reported_not_fatal)
{
	static char out[OUT_CAP];
	char cfg[64];
	const char *r;
	int rc;

	lossy_config(cfg, sizeof(cfg));
	/* UD send_bw: the figures count what arrived; the rest is "lost" */
	rc = run_perf_cfg(cfg, "send_bw -c UD -s 1024 -n 2000 --check --json", false, out,
			  sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	r = strstr(out, "{\"bytes\": ");
	if (r != NULL) {
		double lost = json_num(r, "lost"), got = json_num(r, "messages");

		cr_expect_gt(lost, 0, "%.300s", r);
		cr_expect_gt(got, 0, "%.300s", r);
		cr_expect_eq(lost + got, 2000, "%.300s", r);
		cr_expect_eq(json_num(r, "iterations"), got, "%.300s", r);
		cr_expect_gt(json_num(r, "bw_avg_MBps"), 0, "%.300s", r);
	} else {
		cr_expect_fail("no result:\n%s", out);
	}
	/* UC: multi-packet SENDs and WRITEs lose whole messages; --check
	 * still passes on what landed */
	rc = run_perf_cfg(cfg, "send_bw -c UC -s 5000 -n 500 --check", true, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "messages never arrived (UC does not retransmit)") != NULL, "%s", out);
	rc = run_perf_cfg(cfg, "write_bw -c UC -s 5000 -n 500 --check", true, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "messages never arrived (UC does not retransmit)") != NULL, "%s", out);
	unlink(cfg);
}

/* ---- --lat-samples ---- */

/* Reads @path: the number of lines; every value (after the size prefix
 * when @prefixed) >= @min - 0.0005 and <= @max + 0.0005; sizes into @sizes. */
static unsigned int
read_samples(const char *path, bool prefixed, double min, double max, unsigned long *sizes,
	     unsigned int cap)
{
	FILE *f = fopen(path, "r");
	char line[128];
	unsigned int n = 0;

	cr_assert_not_null(f, "no samples file %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *end;
		double v;

		if (prefixed) {
			unsigned long sz = strtoul(p, &end, 10);

			cr_assert(end != p && *end == ' ', "line %u: no size: %s", n + 1, line);
			if (n < cap)
				sizes[n] = sz;
			p = end + 1;
		}
		v = strtod(p, &end);
		cr_assert(end != p && *end == '\n', "line %u: not a number: %s", n + 1, line);
		cr_assert(strchr(p, '.') != NULL && strlen(strchr(p, '.')) == 5,
			  "line %u: not 3 decimals: %s", n + 1, line);
		cr_expect(v >= min - 0.0005 && v <= max + 0.0005,
			  "line %u: %.3f outside [t_min %.3f, t_max %.3f]", n + 1, v, min, max);
		n++;
	}
	fclose(f);
	return n;
}

Test(perf, lat_samples_file)
{
	static char out[OUT_CAP];
	char path[] = "/tmp/droce-perf-samples-XXXXXX", args[256];
	unsigned long sizes[400];
	const char *r;
	int fd = mkstemp(path), rc;
	unsigned int n;

	cr_assert(fd >= 0);
	close(fd);
	snprintf(args, sizeof(args), "send_lat -c UD -s 64 -n 150 --lat-samples %s --json", path);
	rc = run_perf(args, false, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	r = strstr(out, "{\"bytes\": ");
	cr_assert_not_null(r, "%s", out);
	n = read_samples(path, false, json_num(r, "t_min_us"), json_num(r, "t_max_us"), NULL, 0);
	cr_expect_eq(n, 150, "%u samples for -n 150", n);

	/* several sizes: "SIZE USEC", each size's -n samples in turn */
	snprintf(args, sizeof(args), "write_lat -s 2,4096 -n 100 --lat-samples=%s --json", path);
	rc = run_perf(args, false, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	r = strstr(out, "{\"bytes\": ");
	cr_assert_not_null(r, "%s", out);
	n = read_samples(path, true, 0, 1e9, sizes, 400);
	cr_expect_eq(n, 200, "%u samples for two sizes of -n 100", n);
	for (unsigned int i = 0; i < n && i < 400; i++)
		cr_expect_eq(sizes[i], i < 100 ? 2u : 4096u, "line %u: size %lu", i + 1, sizes[i]);

	expect_refused("write_bw --lat-samples /tmp/x", NULL);
	rc = run_perf("--help", false, out, sizeof(out));
	cr_expect(strstr(out, "--lat-samples=FILE") != NULL, "%s", out);
	unlink(path);
}

/* Latency runs warm up first: the samples and the atomic count say how many ran. */
Test(perf, warmup_iterations_are_not_measured)
{
	static char out[OUT_CAP];
	char path[] = "/tmp/droce-perf-samples-XXXXXX", args[256];
	int fd = mkstemp(path), rc;
	unsigned int n;

	cr_assert(fd >= 0);
	close(fd);
	snprintf(args, sizeof(args), "write_lat -n 120 --warmup 300 --check --lat-samples %s", path);
	rc = run_perf(args, false, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	n = read_samples(path, false, 0, 1e9, NULL, 0);
	cr_expect_eq(n, 120, "%u samples for -n 120 after 300 warm-up iterations", n);
	/* --check compares the remote word with warm-up + measured atomics */
	rc = run_perf("atomic_lat -n 50 --warmup 70 --check", true, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	rc = run_perf("atomic_lat -n 50 --warmup 0 --check", true, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	expect_refused("write_bw -n 10 --warmup 5", NULL);
	unlink(path);
}

/* ---- -o (outstanding READs / atomics) and -R (rdma_cm) ---- */

/* The most READ requests droce0 (198.18.0.1) had outstanding at any time in
 * the pcapng @cap: a request (opcode 0x0c) counts from when it was sent to
 * its last response (READ RESPONSE LAST 0x0f or ONLY 0x10). */
static int
max_reads_in_flight(const char *cap)
{
	char cmd[512], line[256];
	int cur = 0, max = 0, n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -d udp.port==4791,infiniband -T fields -e ip.src "
		 "-e infiniband.bth.opcode 2>/dev/null", cap);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		char src[64];
		int op;

		if (sscanf(line, "%63s %i", src, &op) != 2)
			continue;
		if (strcmp(src, "198.18.0.1") == 0 && op == 0x0c) {
			n++;
			if (++cur > max)
				max = cur;
		} else if (strcmp(src, "198.18.0.2") == 0 && (op == 0x0f || op == 0x10)) {
			cur--;
		}
	}
	pclose(f);
	cr_assert_gt(n, 100, "only %d READ requests in %s (is tshark there?)", n, cap);
	return max;
}

static void
loopback_capture_config(char *ini, size_t n, const char *cap)
{
	FILE *f;

	snprintf(ini, n, "/tmp/droce-perf-outs-%ld.ini", (long)getpid());
	f = fopen(ini, "w");
	cr_assert_not_null(f);
	fprintf(f, "[eal]\nargs = --no-huge --no-pci -m 128 --log-level=lib.eal:warning\n"
		"[engines]\nmode = colocated\ncount = 1\n"
		"[mempool]\nmbufs = 8191\ncache = 128\ndata_room = 2176\ncapture_mbufs = 4095\n"
		"[port0]\nkind = ring\npeer = port1\nmac = 02:00:c6:12:00:01\n"
		"ipv4 = 198.18.0.1\nmtu = 1500\ncapture = %s\n"
		"[port1]\nkind = ring\npeer = port0\nmac = 02:00:c6:12:00:02\n"
		"ipv4 = 198.18.0.2\nmtu = 1500\n", cap);
	fclose(f);
}

/* perftest's -o: the requester keeps at most the responder's outstanding
 * reads in flight (its max_rd_atomic is the peer's -o): counted on the wire.
 * With the default (the device's 16) more are in flight, so the count
 * would see a -o that did nothing. */
Test(perf, outs_bounds_reads_in_flight_on_the_wire, .timeout = 120)
{
	static char out[OUT_CAP];
	char ini[128], cap[128];
	int rc, m2, m16;

	if (system("command -v tshark >/dev/null") != 0)
		cr_skip_test("tshark is not installed");
	snprintf(cap, sizeof(cap), "/tmp/droce-perf-outs-%ld.pcapng", (long)getpid());
	loopback_capture_config(ini, sizeof(ini), cap);

	rc = run_perf_cfg(ini, "read_bw -o 2 -s 4096 -n 400 -t 64", true, out, sizeof(out));
	cr_assert_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, " Outstand reads  : 2\n") != NULL, "%s", out);
	m2 = max_reads_in_flight(cap);
	rc = run_perf_cfg(ini, "read_bw -s 4096 -n 400 -t 64", true, out, sizeof(out));
	cr_assert_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, " Outstand reads  : 16\n") != NULL, "%s", out);
	m16 = max_reads_in_flight(cap);
	cr_expect_eq(m2, 2, "-o 2: at most %d READs were in flight", m2);
	cr_expect_gt(m16, 2, "default -o (16): at most %d READs in flight", m16);
	cr_expect_leq(m16, 16, "default -o (16): %d READs in flight", m16);
	unlink(ini);
	unlink(cap);
}

Test(perf, outs_options_as_perftest)
{
	static char out[OUT_CAP];
	int rc;

	/* only READ and atomics take it */
	expect_refused("write_bw -o 2", "only for the READ and atomic tests");
	/* above the device's maximum: brought down to it, as perftest does */
	rc = run_perf("read_bw -o 99 -s 4096 -n 200", true, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "above the max = 16") != NULL, "%s", out);
	cr_expect(strstr(out, " Outstand reads  : 16\n") != NULL, "%s", out);
	rc = run_perf("atomic_bw -o 1 -n 200 --check", true, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, " Outstand reads  : 1\n") != NULL, "%s", out);
}

/* -R on the loopback topology: the QP pairs connected by rdma_cm (droce0's
 * ids to droce1's listener through droce's IB CM), every byte checked. */
Test(perf, rdma_cm_loopback_check_json, .timeout = 120)
{
	static char out[OUT_CAP];
	int rc;

	bw_json("write_bw -R -q 2 -s 4096 -n 300 --check", 1, 300);
	bw_json("read_bw -R -q 2 -s 4096 -n 300 --check", 1, 300);
	bw_json("send_bw -R -q 2 -s 4096 -n 300 --check", 1, 300);
	bw_json("atomic_bw -R -n 300 --check", 1, 300);
	lat_json("write_lat -R -s 64 -n 200 --check", 200);
	lat_json("send_lat -R -s 64 -n 200 --check", 200);
	lat_json("read_lat -R -s 64 -n 200 --check", 200);
	/* UD: RDMA_PS_UDP, the AH, QPN and Q_Key from the SIDR REP */
	expect_conn(bw_json("send_bw -c UD -R -q 2 -s 1024 -n 300 --check", 1, 300), "UD", true);
	expect_refused("send_lat -c UD -R", NULL);
	rc = run_perf("write_bw -R -s 4096 -n 100", true, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, " rdma_cm QPs\t : ON\n") != NULL, "%s", out);
	/* as perftest: no UC over librdmacm */
	expect_refused("write_bw -R -c UC", "UC is not supported in librdmacm");
}

Test(perf, new_post_check)
{
	/* --new-post: ibv_create_qp_ex and the ibv_wr_* builder, every byte checked */
	bw_json("write_bw -s 4096 -n 300 -q 2 --check --new-post", 1, 300);
	bw_json("read_bw -s 3000 -n 300 --check --new-post", 1, 300);
	bw_json("send_bw -s 200 -n 256 -l 4 -I 256 -t 16 --check --new-post", 1, 256);
	bw_json("atomic_bw -A CMP_AND_SWAP -n 300 --check --new-post", 1, 300);
	bw_json("send_bw -c UD -s 512 -n 300 --check --new-post", 1, 300);
	lat_json("write_lat -s 2 -n 200 --check --new-post", 200);
	lat_json("send_lat -s 1000 -n 200 --check --new-post", 200);
}
