/* SPDX-License-Identifier: BSD-3-Clause
 * Engine and QP counters as named lists (include/droce/stats.h) and the
 * telemetry commands /droce/engines and /droce/engine.  The engine alone
 * writes its counters; readers here copy 64-bit words that are never torn on
 * the platforms DPDK supports, under the runtime lock (so the engine is not
 * freed meanwhile).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include "cc.h"
#include "engine.h"
#include "internal.h"
#include "pmd_glue/stats_internal.h"

#define ES(field, name) { name, offsetof(struct droce_engine_stats, field) }
static const struct {
	const char *name;
	size_t off;
} engine_fields[] = {
	ES(loops, "loops"),
	ES(rx_pkts, "rx_frames"),
	ES(tx_pkts, "tx_frames"),
	ES(tx_drops, "tx_drops"),
	ES(no_qp, "drop_no_qp"),
	ES(forwarded, "forwarded"),
	ES(non_roce, "non_roce"),
	ES(seq_drops, "seq_drops"),
	ES(cqe_overflows, "cqe_overflows"),
	ES(alloc_fail, "alloc_fail"),
	ES(qkey_drops, "drop_qkey"),
	ES(ud_oversize, "ud_oversize"),
	ES(rq_empty_drops, "drop_rq_empty"),
	ES(uc_msg_drops, "drop_uc_msg"),
	ES(uc_access_drops, "drop_uc_access"),
	ES(xport_drops, "drop_transport"),
	ES(ghost_acks, "drop_ghost_ack"),
	ES(qp_state_drops, "drop_qp_state"),
	ES(cqe_stashed, "cqe_stashed"),
	ES(cqe_lost, "cqe_lost"),
	ES(zc_tx, "tx_zero_copy"),
	ES(qp_turns, "qp_turns"),
	ES(injected, "injected"),
	ES(mcast_rx, "mcast_rx"),
	ES(mcast_no_group, "drop_mcast_no_group"),
	ES(mcast_loop, "mcast_loop"),
	ES(cqe_cleaned, "cqe_cleaned"),
	ES(ecn_ce_received, "ecn_ce_received"),
	ES(cnp_sent, "cnp_sent"),
	ES(cnp_received, "cnp_received"),
	ES(cnp_coalesced, "cnp_coalesced"),
};
#undef ES

#define QS(field, name) { name, offsetof(struct droce_qp_stats, field) }
static const struct {
	const char *name;
	size_t off;
} qp_fields[] = {
	QS(tx_pkts, "tx_frames"),
	QS(rx_pkts, "rx_frames"),
	QS(retransmits, "retransmits"),
	QS(timeouts, "timeouts"),
	QS(rnr_naks_rx, "naks_rnr_rx"),
	QS(rnr_naks_tx, "naks_rnr_tx"),
	QS(seq_naks_rx, "naks_seq_rx"),
	QS(seq_naks_tx, "naks_seq_tx"),
	QS(rem_err_naks_rx, "naks_error_rx"),
	QS(rem_err_naks_tx, "naks_error_tx"),
	QS(implicit_naks, "naks_implicit"),
	QS(xrc_srq_naks, "naks_xrc_srq_tx"),
	QS(dup_reqs, "dup_requests"),
	QS(dup_reads, "dup_reads"),
	QS(dup_atomics, "dup_atomics"),
	QS(probes, "retx_probes"),
	QS(retries, "retries_spent"),
	QS(read_resumes, "read_resumes"),
	QS(resp_cut, "read_resp_cut"),
	QS(read_ooo, "read_resp_ooo"),
	QS(read_reasks, "read_reasks"),
	QS(sr_peer, "sr_peer"),
	QS(sr_held, "sr_held"),
	QS(sr_released, "sr_released"),
	QS(sr_resent, "sr_resent"),
	QS(srtt_ns, "srtt_ns"),
	QS(rto_ns, "rto_ns"),
	QS(ecn_ce_received, "ecn_ce_received"),
	QS(cnp_sent, "cnp_sent"),
	QS(cnp_received, "cnp_received"),
};
#undef QS

static int
engine_stats_locked(unsigned int id, struct droce_stat *out, unsigned int n)
{
	struct droce_engine_stats st;
	struct droce_engine *eng;
	char name[DROCE_STAT_NAME_MAX];
	unsigned int i = 0;

	if (id >= droce_engine_count() || (eng = droce_engine_get(id)) == NULL) {
		errno = ENODEV;
		return -1;
	}
	memcpy(&st, &eng->stats, sizeof(st));
	for (size_t f = 0; f < RTE_DIM(engine_fields); f++) {
		uint64_t v;

		memcpy(&v, (const char *)&st + engine_fields[f].off, sizeof(v));
		i = droce_stat_put(out, n, i, engine_fields[f].name, v);
	}
	/* the parser's drop reasons, one counter each (NONE is "accepted") */
	for (unsigned int d = 1; d < DROCE_DROP_COUNT; d++) {
		char lower[DROCE_STAT_NAME_MAX - 5];
		size_t k;

		for (k = 0; droce_drop_name[d][k] != '\0' && k + 1 < sizeof(lower); k++)
			lower[k] = (char)tolower((unsigned char)droce_drop_name[d][k]);
		lower[k] = '\0';
		snprintf(name, sizeof(name), "drop_%s", lower);
		i = droce_stat_put(out, n, i, name, st.drops[d]);
	}
	i = droce_stat_put(out, n, i, "fallback_passes", droce_engines_fallback_passes());
	i = droce_stat_put(out, n, i, "waiter_blocks", droce_engines_waiter_blocks());
	return (int)i;
}

int
droce_stats_engine(unsigned int engine, struct droce_stat *out, unsigned int n)
{
	int rc;

	droce_runtime_hold();
	rc = engine_stats_locked(engine, out, n);
	droce_runtime_release();
	return rc;
}

int
droce_dp_qp_stats(const struct droce_qp *qp, struct droce_stat *out, unsigned int n)
{
	struct droce_qp_stats st;
	unsigned int i = 0;

	memcpy(&st, &qp->stats, sizeof(st));
	i = droce_stat_put(out, n, i, "qpn", qp->qpn);
	i = droce_stat_put(out, n, i, "engine", qp->eng->id);
	for (size_t f = 0; f < RTE_DIM(qp_fields); f++) {
		uint64_t v;

		memcpy(&v, (const char *)&st + qp_fields[f].off, sizeof(v));
		i = droce_stat_put(out, n, i, qp_fields[f].name, v);
	}
	/* DCQCN's reaction point (cc.c): gauges; the line rate until a CNP came */
	{
		const struct droce_cc_qp *c = qp->cc;
		const struct droce_dcqcn_params *p = &droce_cc.rp[qp->port_index];

		i = droce_stat_put(out, n, i, "cc_rate_mbps", (c ? c->s.rc : p->line) / 1000);
		i = droce_stat_put(out, n, i, "cc_target_mbps", (c ? c->s.rt : p->line) / 1000);
		i = droce_stat_put(out, n, i, "cc_alpha", c ? c->s.alpha : 0);
		i = droce_stat_put(out, n, i, "cc_limited", c ? c->limited : 0);
		i = droce_stat_put(out, n, i, "cc_rate_cuts", c ? c->s.cuts : 0);
		i = droce_stat_put(out, n, i, "cc_rate_increases", c ? c->s.increases : 0);
	}
	return (int)i;
}

static int
tel_engines(const char *cmd, const char *params, struct rte_tel_data *d)
{
	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	droce_runtime_hold();
	for (unsigned int e = 0; e < droce_engine_count(); e++)
		rte_tel_data_add_array_int(d, (int)e);
	droce_runtime_release();
	return 0;
}

static int
tel_engine(const char *cmd, const char *params, struct rte_tel_data *d)
{
	long id = droce_stats_tel_param(params, DROCE_MAX_ENGINES);
	int rc;

	RTE_SET_USED(cmd);
	if (id < 0)
		return -EINVAL;
	droce_runtime_hold();
	rc = droce_stats_tel_dict(d, engine_stats_locked, (unsigned int)id);
	droce_runtime_release();
	return rc;
}

RTE_INIT(droce_stats_engine_telemetry)
{
	rte_telemetry_register_cmd("/droce/engines", tel_engines, "droce engine ids. No parameters");
	rte_telemetry_register_cmd("/droce/engine", tel_engine,
				   "droce engine counters. Parameters: int engine id");
}
