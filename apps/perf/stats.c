/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: --stats and --json: droce's counters (include/droce/stats.h) and the
 * JSON report.
 */
#include "perf.h"

/* ---- --stats and --json: droce's counters through include/droce/stats.h ---- */

/* One line per object: its non-zero counters (all of them with --json). */
void
print_counters(FILE *f, const char *what, int (*get)(unsigned int, struct droce_stat *, unsigned int),
	       unsigned int id)
{
	struct droce_stat s[STATS_MAX];
	int n = get(id, s, STATS_MAX);
	const char *sep = ": ";

	if (n < 0)
		return;
	fprintf(f, "%s%u", what, id);
	for (int i = 0; i < RTE_MIN(n, STATS_MAX); i++) {
		if (s[i].value == 0)
			continue;
		fprintf(f, "%s%s %" PRIu64, sep, s[i].name, s[i].value);
		sep = ", ";
	}
	fprintf(f, "\n");
}

int
cm_counters(unsigned int id, struct droce_stat *out, unsigned int n)
{
	RTE_SET_USED(id);
	return droce_stats_cm(out, n);
}

void
print_stats(FILE *f)
{
	struct droce_stat s[STATS_MAX];

	fprintf(f, "droce counters (non-zero):\n");
	for (unsigned int e = 0; droce_stats_engine(e, s, 0) >= 0; e++)
		print_counters(f, "engine ", droce_stats_engine, e);
	for (unsigned int i = 0; droce_stats_port(i, s, 0) >= 0; i++)
		print_counters(f, "port", droce_stats_port, i);
	if (R.two) /* the QPs still live: teardown_two comes after */
		for (uint32_t i = 0; i < o.qps; i++)
			qp_stats_add(R.p[i].qp[R.me]);
	if (qp_sum_qps > 0) {
		const char *sep = ": ";

		fprintf(f, "%u QPs summed", qp_sum_qps);
		for (int i = 2; i < qp_sum_n; i++)
			if (qp_sum[i].value != 0) {
				fprintf(f, "%s%s %" PRIu64, sep, qp_sum[i].name, qp_sum[i].value);
				sep = ", ";
			}
		fprintf(f, "\n");
	}
	if (droce_stats_cm(s, STATS_MAX) > 0 && droce_stat_find(s, STATS_MAX, "mads_tx") != 0)
		print_counters(f, "cm ", cm_counters, 0);
}

void
json_counters(const char *key, unsigned int id, int (*get)(unsigned int, struct droce_stat *, unsigned int))
{
	struct droce_stat s[STATS_MAX];
	int n = get(id, s, STATS_MAX);

	printf("{\"%s\": %u", key, id);
	for (int i = 0; i < RTE_MIN(n, STATS_MAX); i++)
		printf(", \"%s\": %" PRIu64, s[i].name, s[i].value);
	printf("}");
}

void
json_stats(void)
{
	struct droce_stat s[1];

	printf(",\n  \"stats\": {\n    \"engines\": [");
	for (unsigned int e = 0; droce_stats_engine(e, s, 0) >= 0; e++) {
		printf("%s\n      ", e ? "," : "");
		json_counters("id", e, droce_stats_engine);
	}
	printf("\n    ],\n    \"ports\": [");
	for (unsigned int i = 0; droce_stats_port(i, s, 0) >= 0; i++) {
		printf("%s\n      ", i ? "," : "");
		json_counters("port", i, droce_stats_port);
	}
	printf("\n    ]\n  }");
}

void
print_json(void)
{
	printf("{\n  \"tool\": \"droce-perf\",\n  \"test\": \"%s\",\n  \"mode\": \"%s\",\n"
	       "  \"verb\": \"%s\",\n", o.test, o.mode == M_BW ? "bw" : "lat", verb_name[o.verb]);
	if (o.verb == V_ATOMIC)
		printf("  \"atomic_type\": \"%s\",\n", o.cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	printf("  \"topology\": \"%s\",\n  \"client_dev\": \"%s\",\n  \"server_dev\": \"%s\",\n"
	       "  \"connection\": \"%s\",\n  \"qps\": %u,\n  \"tx_depth\": %u,\n  \"post_list\": %u,\n"
	       "  \"cq_mod\": %u,\n  \"inline_size\": %d,\n  \"mtu\": %u,\n  \"check\": %s,\n"
	       "  \"duration\": %.3f,\n  \"out_reads\": %u,\n  \"rdma_cm\": %s,\n"
	       "  \"report_gbits\": %s,\n  \"results\": [",
	       R.two ? (R.me ? "two processes, server" : "two processes, client") : "loopback",
	       R.s[0].dev ? ibv_get_device_name(R.s[0].dev) : "(peer)",
	       R.s[1].dev ? ibv_get_device_name(R.s[1].dev) : "(peer)", o.conn, o.qps, o.tx_depth,
	       o.post_list, o.post_list > 1 ? o.post_list : o.cq_mod, o.inline_size,
	       mtu_bytes(R.mtu), o.check ? "true" : "false", o.duration, o.out_reads,
	       o.rdma_cm ? "true" : "false", o.report_gbits ? "true" : "false");
	for (unsigned int i = 0; i < n_results; i++) {
		const struct result *r = &results[i];

		printf("%s\n    {\"bytes\": %" PRIu64 ", \"iterations\": %" PRIu64
		       ", \"messages\": %" PRIu64 ", \"seconds\": %.6f, ",
		       i ? "," : "", r->bytes, r->iters, r->msgs, r->seconds);
		/* UC/UD: where the receiver's count is known */
		if (o.mode == M_BW && (track_arrivals() || (o.qpt != IBV_QPT_RC && R.two &&
							     R.me == 1 && o.verb == V_SEND)))
			printf("\"lost\": %" PRIu64 ", ", r->lost);
		if (o.mode == M_BW)
			printf("\"bw_peak_MBps\": %.3f, \"bw_avg_MBps\": %.3f, \"bw_peak_Gbps\": %.4f, "
			       "\"bw_avg_Gbps\": %.4f, \"msg_rate_Mpps\": %.6f, "
			       "\"gap_p99_us\": %.3f, \"gap_max_us\": %.3f}",
			       r->bw_peak / 1048576.0, r->bw_avg / 1048576.0, r->bw_peak * 8 / 1e9,
			       r->bw_avg * 8 / 1e9, r->msg_rate / 1e6, r->gap_p99, r->gap_max);
		else
			printf("\"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": %.3f, "
			       "\"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, \"p99_us\": %.3f, "
			       "\"p99_9_us\": %.3f}",
			       r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev, r->p99, r->p999);
	}
	printf("\n  ]");
	if (o.stats)
		json_stats();
	printf("\n}\n");
}
