/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf, run as a subprocess on the loopback topology (the embedded
 * in-memory config): every test type in bandwidth and latency mode with
 * --check, --json parsed for sane numbers, the table, --stats, -D, post
 * lists and inline, and the error paths (bad option, UC/UD, a corrupted
 * message caught by --check).  Tiny configurations: a few seconds in all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#define OUT_CAP (64 * 1024)

/* Runs droce-perf with @args; stdout (and stderr when @merge) into @out. */
static int
run_perf(const char *args, bool merge, char *out, size_t cap)
{
	const char *exe = getenv("DROCE_PERF");
	char cmd[1024];
	size_t n = 0, k;
	FILE *f;
	int st;

	cr_assert_not_null(exe, "DROCE_PERF not set (run through meson test)");
	snprintf(cmd, sizeof(cmd), "env -u DROCE_CONFIG %s %s%s", exe, args,
		 merge ? " 2>&1" : " 2>/dev/null");
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (n + 1 < cap && (k = fread(out + n, 1, cap - 1 - n, f)) != 0)
		n += k;
	out[n] = '\0';
	st = pclose(f);
	cr_assert(WIFEXITED(st), "droce-perf %s did not exit normally:\n%s", args, out);
	return WEXITSTATUS(st);
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

/* Runs a bandwidth test with --json and checks every result object. */
static void
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
}

static void
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
	cr_expect(strstr(out, "port0: rx ") != NULL && strstr(out, "port1: rx ") != NULL, "%s", out);

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

	rc = run_perf("write_bw --no-such-option", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "usage: droce-perf TEST") != NULL, "%s", out);

	rc = run_perf("write_bandwidth", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "unknown test 'write_bandwidth'") != NULL, "%s", out);
	cr_expect(strstr(out, "usage: droce-perf TEST") != NULL, "%s", out);

	rc = run_perf("", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);

	rc = run_perf("write_bw -s 0", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
	rc = run_perf("write_bw -m 1000", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
	rc = run_perf("send_lat -q 2", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
	rc = run_perf("write_bw -l 64 -t 16", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);

	rc = run_perf("--help", false, out, sizeof(out));
	cr_expect_eq(rc, 0);
	cr_expect(strstr(out, "--report_gbits") != NULL, "%s", out);
}

Test(perf, uc_ud_not_supported_yet)
{
	static char out[OUT_CAP];
	int rc;

	rc = run_perf("send_lat -c UD", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "-c UD: the UD transport is not supported yet") != NULL, "%s", out);
	rc = run_perf("write_bw -c UC", true, out, sizeof(out));
	cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
	cr_expect(strstr(out, "-c UC: the UC transport is not supported yet") != NULL, "%s", out);
}
