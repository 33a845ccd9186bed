/* SPDX-License-Identifier: BSD-3-Clause
 * The engines' QP tables, application side: QP indices (and so QPNs) handed
 * out and given back under the engines' lock, pages of the two-level table
 * made before their first index is used, the ports' GSI slots.  The entries
 * themselves are written (ATTACH, DETACH: engine_chan.c) and read (dispatch:
 * engine_pass.c, droce_engine_qp_lookup_lc) by the owning engine alone.
 */
#include <errno.h>
#include <pthread.h>

#include <rte_malloc.h>

#include "engine_internal.h"

/*
 * Indices are handed out fresh while fewer than DROCE_QP_REUSE_AFTER wait in
 * the freed ring (so a QPN is not reused while frames for its last owner may
 * still be on the way), then oldest freed first; fresh ones need their page.
 */
int
droce_engine_add_qp(struct droce_engine *eng, struct droce_qp *qp)
{
	uint32_t i;

	pthread_mutex_lock(&droce_engines.chan_lock);
	if (eng->freed_count > 0 &&
	    (eng->freed_count >= DROCE_QP_REUSE_AFTER || eng->qp_fresh == DROCE_QP_INDEXES)) {
		i = eng->qp_freed[eng->freed_head];
		eng->freed_head = (eng->freed_head + 1) % eng->freed_cap;
		eng->freed_count--;
	} else if (eng->qp_fresh < DROCE_QP_INDEXES) {
		unsigned int pg = eng->qp_fresh >> DROCE_QPT_PAGE_BITS;

		if (atomic_load_explicit(&eng->qpt[pg], memory_order_relaxed) == NULL) {
			/* DPDK memory, like the engine that points to it */
			struct droce_qp **page = rte_zmalloc("droce_qpt", DROCE_QPT_PAGE * sizeof(*page), 0);

			if (page == NULL) {
				pthread_mutex_unlock(&droce_engines.chan_lock);
				return ENOMEM;
			}
			atomic_store_explicit(&eng->qpt[pg], page, memory_order_release);
		}
		i = eng->qp_fresh++;
	} else {
		pthread_mutex_unlock(&droce_engines.chan_lock);
		return ENOMEM;
	}
	eng->n_qps++;
	pthread_mutex_unlock(&droce_engines.chan_lock);
	/* the engine stores the QP at its index when the ATTACH arrives */
	qp->qpn = ((i + 1) << DROCE_QPN_ENGINE_BITS) | eng->id;
	return 0;
}

void
droce_engine_del_qp(struct droce_engine *eng, const struct droce_qp *qp)
{
	uint32_t i = droce_qpn_index(qp->qpn);

	pthread_mutex_lock(&droce_engines.chan_lock);
	if (eng->freed_count == eng->freed_cap) {
		uint32_t cap = eng->freed_cap ? 2 * eng->freed_cap : 1024;
		uint32_t *ring = rte_malloc("droce_qp_freed", cap * sizeof(*ring), 0);

		if (ring == NULL) {
			/* the index stays taken: a QPN less, nothing worse */
			pthread_mutex_unlock(&droce_engines.chan_lock);
			return;
		}
		for (uint32_t k = 0; k < eng->freed_count; k++)
			ring[k] = eng->qp_freed[(eng->freed_head + k) % eng->freed_cap];
		rte_free(eng->qp_freed);
		eng->qp_freed = ring;
		eng->freed_head = 0;
		eng->freed_cap = cap;
	}
	eng->qp_freed[(eng->freed_head + eng->freed_count) % eng->freed_cap] = i;
	eng->freed_count++;
	eng->n_qps--;
	pthread_mutex_unlock(&droce_engines.chan_lock);
}

uint32_t
droce_dp_max_qps(void)
{
	/* the QPN space: every engine's indices (the table grows page by page) */
	return droce_engines.started ? droce_engines.n * DROCE_QP_INDEXES : DROCE_QP_INDEXES;
}

void
droce_engine_del_gsi(unsigned int port)
{
	pthread_mutex_lock(&droce_engines.chan_lock);
	if (port < DROCE_MAX_PORTS)
		droce_engines.gsi_taken[port] = false;
	pthread_mutex_unlock(&droce_engines.chan_lock);
}

int
droce_engine_add_gsi(struct droce_engine *eng, struct droce_qp *qp)
{
	int rc = 0;

	pthread_mutex_lock(&droce_engines.chan_lock);
	if (qp->port_index >= DROCE_MAX_PORTS || droce_engines.gsi_taken[qp->port_index])
		rc = EBUSY;
	else
		droce_engines.gsi_taken[qp->port_index] = true;
	pthread_mutex_unlock(&droce_engines.chan_lock);
	if (rc == 0)
		qp->qpn = DROCE_DP_GSI_QPN;
	return rc;
}
