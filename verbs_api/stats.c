/* SPDX-License-Identifier: BSD-3-Clause
 * QP and CM counters as named lists (include/droce/stats.h) and the
 * telemetry commands /droce/qps, /droce/qp and /droce/cm.  QPs are found
 * through the open contexts (droce_verbs_qp_walk), so a QP being destroyed
 * is never read.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include <droce/stats.h>

#include "pmd_glue/stats_internal.h"
#include "cm.h"
#include "internal.h"

int
droce_stats_qp(struct ibv_qp *qp, struct droce_stat *out, unsigned int n)
{
	const struct droce_vqp *q = (const struct droce_vqp *)qp;

	if (q == NULL || q->dqp == NULL) {
		errno = ENODEV;
		return -1;
	}
	return droce_dp_qp_stats(q->dqp, out, n);
}

#define CS(field) { #field, offsetof(struct droce_cm_stats, field) }
static const struct {
	const char *name;
	size_t off;
} cm_fields[] = {
	CS(mads_tx), CS(mads_rx), CS(resends), CS(dups_rx), CS(drops_rx),
	CS(req_tx), CS(rep_tx), CS(rtu_tx), CS(rej_tx), CS(dreq_tx), CS(drep_tx), CS(mra_tx),
	CS(sidr_req_tx), CS(sidr_rep_tx),
	CS(req_rx), CS(rep_rx), CS(rtu_rx), CS(rej_rx), CS(dreq_rx), CS(drep_rx), CS(mra_rx),
	CS(sidr_req_rx), CS(sidr_rep_rx),
};
#undef CS

int
droce_stats_cm(struct droce_stat *out, unsigned int n)
{
	struct droce_cm_stats st;
	unsigned int i = 0;

	droce_cm_stats_get(&st);
	for (size_t f = 0; f < RTE_DIM(cm_fields); f++) {
		uint64_t v;

		memcpy(&v, (const char *)&st + cm_fields[f].off, sizeof(v));
		i = droce_stat_put(out, n, i, cm_fields[f].name, v);
	}
	return (int)i;
}

/* ---- telemetry ---- */

static int
add_qpn(struct droce_vqp *q, void *arg)
{
	rte_tel_data_add_array_int(arg, (int)q->qp.qp_num);
	return 0;
}

static int
tel_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	droce_verbs_qp_walk(add_qpn, d);
	return 0;
}

struct qp_find {
	uint32_t qpn;
	struct rte_tel_data *d;
};

static int
put_qp(struct droce_vqp *q, void *arg)
{
	struct qp_find *f = arg;
	struct droce_stat s[64];
	int n;

	if (q->qp.qp_num != f->qpn)
		return 0;
	n = droce_dp_qp_stats(q->dqp, s, RTE_DIM(s));
	rte_tel_data_start_dict(f->d);
	for (int i = 0; i < RTE_MIN(n, (int)RTE_DIM(s)); i++)
		rte_tel_data_add_dict_u64(f->d, s[i].name, s[i].value);
	return 1;
}

static int
tel_qp(const char *cmd, const char *params, struct rte_tel_data *d)
{
	long qpn = droce_stats_tel_param(params, 0xffffff);
	struct qp_find f = { .d = d };

	RTE_SET_USED(cmd);
	if (qpn < 0)
		return -EINVAL;
	f.qpn = (uint32_t)qpn;
	return droce_verbs_qp_walk(put_qp, &f) == 1 ? 0 : -ENODEV;
}

static int
cm_locked(unsigned int id, struct droce_stat *out, unsigned int n)
{
	RTE_SET_USED(id);
	return droce_stats_cm(out, n);
}

static int
tel_cm(const char *cmd, const char *params, struct rte_tel_data *d)
{
	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	return droce_stats_tel_dict(d, cm_locked, 0);
}

RTE_INIT(droce_stats_verbs_telemetry)
{
	rte_telemetry_register_cmd("/droce/qps", tel_qps, "droce QP numbers. No parameters");
	rte_telemetry_register_cmd("/droce/qp", tel_qp, "droce QP counters. Parameters: int QPN");
	rte_telemetry_register_cmd("/droce/cm", tel_cm, "droce IB CM counters. No parameters");
}
