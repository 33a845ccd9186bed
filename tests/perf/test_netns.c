/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf across kernel netdevs: scripts/netns-perf makes two network
 * namespaces joined by veth pairs (198.18.1.0/24 data, 198.18.2.0/24 the
 * kernel's control link for perftest's handshake), runs the droce-perf
 * server in one and the client in the other, on af_xdp or af_packet.  Each
 * case checks every byte (--check) and reads the figures from --json.
 * Needs root (network namespaces); skipped, visibly, without it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "proc.h"

#define OUT_CAP (64 * 1024)

static void
need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("network namespaces need root");
}

/* scripts/netns-perf @args; the client's stdout into @out; its exit status. */
static int
netns_perf(const char *args, char *out, size_t cap)
{
	const char *script = getenv("NETNS_PERF");
	char cmd[1024];
	int rc;

	cr_assert_not_null(script, "NETNS_PERF not set (run through meson test)");
	snprintf(cmd, sizeof(cmd), "timeout 120 %s %s 2>/tmp/droce-netns-test.err", script, args);
	rc = tc_run(cmd, out, cap);
	cr_assert(rc >= 0, "netns-perf %s did not exit normally", args);
	if (rc != 0) {
		cr_log_error("netns-perf %s: exit %d\n%s", args, rc, out);
		tc_dump("/tmp/droce-netns-test.err");
	}
	return rc;
}

static double
json_num(const char *from, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(from, pat);
	cr_assert_not_null(p, "no \"%s\" in %.300s", key, from);
	return strtod(p + strlen(pat), NULL);
}

static void
bw_case(const char *kind, const char *test, const char *size)
{
	char args[256], *out = malloc(OUT_CAP);

	need_root();
	cr_assert_not_null(out);
	snprintf(args, sizeof(args), "--kind %s %s -s %s -n 300 --check --json", kind, test, size);
	cr_assert_eq(netns_perf(args, out, OUT_CAP), 0, "netns-perf %s", args);
	cr_assert_eq(json_num(out, "iterations"), 300, "%s", out);
	cr_assert_gt(json_num(out, "bw_avg_MBps"), 0, "%s", out);
	free(out);
}

static void
lat_case(const char *kind, const char *test)
{
	char args[256], *out = malloc(OUT_CAP);
	double tmin, tmax;

	need_root();
	cr_assert_not_null(out);
	snprintf(args, sizeof(args), "--kind %s %s -s 64 -n 200 --check --json", kind, test);
	cr_assert_eq(netns_perf(args, out, OUT_CAP), 0, "netns-perf %s", args);
	tmin = json_num(out, "t_min_us");
	tmax = json_num(out, "t_max_us");
	cr_assert_gt(tmin, 0, "%s", out);
	cr_assert_geq(tmax, tmin, "%s", out);
	free(out);
}

TestSuite(netns, .timeout = 150);

/* multi-packet messages (4 KiB over the 1024 B path MTU of a 1500 B veth) */
Test(netns, af_xdp_write_bw) { bw_case("af_xdp", "write_bw", "4096"); }
Test(netns, af_xdp_send_bw) { bw_case("af_xdp", "send_bw", "4096"); }
Test(netns, af_xdp_read_lat) { lat_case("af_xdp", "read_lat"); }
Test(netns, af_packet_write_bw) { bw_case("af_packet", "write_bw", "4096"); }
Test(netns, af_packet_send_lat) { lat_case("af_packet", "send_lat"); }
