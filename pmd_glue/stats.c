/* SPDX-License-Identifier: BSD-3-Clause
 * Port counters as named lists (include/droce/stats.h), the telemetry
 * commands /droce/ports and /droce/port, and the shared stats helpers
 * (stats_internal.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include <droce/droce.h>

#include "port_struct.h"
#include "stats_internal.h"
#include "switch.h"

/* ---- the runtime's lifetime lock ---- */

static pthread_rwlock_t runtime_lock = PTHREAD_RWLOCK_INITIALIZER;

void droce_runtime_hold(void) { pthread_rwlock_rdlock(&runtime_lock); }
void droce_runtime_release(void) { pthread_rwlock_unlock(&runtime_lock); }
void droce_runtime_lock_excl(void) { pthread_rwlock_wrlock(&runtime_lock); }
void droce_runtime_unlock_excl(void) { pthread_rwlock_unlock(&runtime_lock); }

/* ---- ports ---- */

#define PS(field, name) { name, offsetof(struct droce_port_stats, field) }
static const struct {
	const char *name;
	size_t off;
} port_fields[] = {
	PS(rx_pkts, "rx_frames"),
	PS(rx_bytes, "rx_bytes"),
	PS(tx_pkts, "tx_frames"),
	PS(tx_bytes, "tx_bytes"),
	PS(rx_bursts, "rx_bursts"),
	PS(tx_bursts, "tx_bursts"),
	PS(tx_full, "tx_full"),
	PS(tx_link_down, "tx_link_down"),
	PS(arp_requests_rx, "arp_requests_rx"),
	PS(arp_replies_rx, "arp_replies_rx"),
	PS(arp_bad, "arp_bad"),
	PS(arp_requests_tx, "arp_requests_tx"),
	PS(arp_replies_tx, "arp_replies_tx"),
	PS(nd_ns_rx, "nd_ns_rx"),
	PS(nd_na_rx, "nd_na_rx"),
	PS(nd_bad, "nd_bad"),
	PS(nd_ns_tx, "nd_ns_tx"),
	PS(nd_na_tx, "nd_na_tx"),
	PS(capture_drops, "capture_drops"),
	PS(loop_tx, "loop_tx"),
	PS(loop_rx, "loop_rx"),
	PS(mc_queries_rx, "mcast_queries_rx"),
	PS(mc_answers_tx, "mcast_answers_tx"),
	PS(impair_rx.dropped, "impair_rx_dropped"),
	PS(impair_rx.duplicated, "impair_rx_duplicated"),
	PS(impair_rx.reordered, "impair_rx_reordered"),
	PS(impair_rx.delayed, "impair_rx_delayed"),
	PS(impair_rx.corrupted, "impair_rx_corrupted"),
	PS(impair_rx.link_down, "impair_rx_link_down"),
	PS(impair_tx.dropped, "impair_tx_dropped"),
	PS(impair_tx.duplicated, "impair_tx_duplicated"),
	PS(impair_tx.reordered, "impair_tx_reordered"),
	PS(impair_tx.delayed, "impair_tx_delayed"),
	PS(impair_tx.corrupted, "impair_tx_corrupted"),
	PS(impair_tx.link_down, "impair_tx_link_down"),
	PS(ecn_ce_received, "ecn_ce_received"),
	PS(cnp_sent, "cnp_sent"),
	PS(cnp_received, "cnp_received"),
	PS(impair_rx.ce_marked, "impair_rx_ce_marked"),
	PS(impair_tx.ce_marked, "impair_tx_ce_marked"),
};
#undef PS

static int
port_stats_locked(unsigned int port, struct droce_stat *out, unsigned int n)
{
	const struct droce_port *p = droce_running() ? droce_port_get(port) : NULL;
	struct droce_port_stats s;
	struct rte_eth_stats es;
	unsigned int i = 0;

	if (p == NULL) {
		errno = ENODEV;
		return -1;
	}
	droce_port_stats_get(p, &s);
	for (size_t f = 0; f < RTE_DIM(port_fields); f++) {
		uint64_t v;

		memcpy(&v, (const char *)&s + port_fields[f].off, sizeof(v));
		i = droce_stat_put(out, n, i, port_fields[f].name, v);
	}
	if (rte_eth_stats_get(p->eth_port, &es) != 0)
		memset(&es, 0, sizeof(es));
	i = droce_stat_put(out, n, i, "pmd_ipackets", es.ipackets);
	i = droce_stat_put(out, n, i, "pmd_opackets", es.opackets);
	i = droce_stat_put(out, n, i, "pmd_imissed", es.imissed);
	i = droce_stat_put(out, n, i, "pmd_ierrors", es.ierrors);
	i = droce_stat_put(out, n, i, "pmd_oerrors", es.oerrors);
	i = droce_stat_put(out, n, i, "pmd_rx_nombuf", es.rx_nombuf);
	if (p->sw != NULL)
		i = droce_switch_stats(p, out, n, i); /* kind = switch: its queue */
	return (int)i;
}

int
droce_stats_port(unsigned int port, struct droce_stat *out, unsigned int n)
{
	int rc;

	droce_runtime_hold();
	rc = port_stats_locked(port, out, n);
	droce_runtime_release();
	return rc;
}

uint64_t
droce_stat_find(const struct droce_stat *s, unsigned int n, const char *name)
{
	for (unsigned int i = 0; i < n; i++)
		if (strcmp(s[i].name, name) == 0)
			return s[i].value;
	return UINT64_MAX;
}

/* ---- telemetry ---- */

int
droce_stats_tel_dict(struct rte_tel_data *d,
		     int (*get)(unsigned int id, struct droce_stat *, unsigned int), unsigned int id)
{
	struct droce_stat s[RTE_TEL_MAX_DICT_ENTRIES];
	int n;

	/* the caller holds the runtime: @get is one of the *_locked readers */
	n = get(id, s, RTE_DIM(s));
	if (n < 0)
		return -ENODEV;
	rte_tel_data_start_dict(d);
	for (int i = 0; i < RTE_MIN(n, (int)RTE_DIM(s)); i++)
		rte_tel_data_add_dict_u64(d, s[i].name, s[i].value);
	return 0;
}

long
droce_stats_tel_param(const char *params, unsigned long max)
{
	char *end;
	unsigned long v;

	if (params == NULL || *params < '0' || *params > '9')
		return -1;
	errno = 0;
	v = strtoul(params, &end, 0);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	return (long)v;
}

static int
tel_ports(const char *cmd, const char *params, struct rte_tel_data *d)
{
	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	droce_runtime_hold();
	if (droce_running())
		for (unsigned int i = 0; i < droce_port_count(); i++)
			rte_tel_data_add_array_int(d, (int)i);
	droce_runtime_release();
	return 0;
}

static int
tel_port(const char *cmd, const char *params, struct rte_tel_data *d)
{
	long port = droce_stats_tel_param(params, UINT16_MAX);
	int rc;

	RTE_SET_USED(cmd);
	if (port < 0)
		return -EINVAL;
	droce_runtime_hold();
	rc = droce_stats_tel_dict(d, port_stats_locked, (unsigned int)port);
	droce_runtime_release();
	return rc;
}

RTE_INIT(droce_stats_port_telemetry)
{
	rte_telemetry_register_cmd("/droce/ports", tel_ports, "droce port indexes. No parameters");
	rte_telemetry_register_cmd("/droce/port", tel_port,
				   "droce port counters. Parameters: int port index");
}
