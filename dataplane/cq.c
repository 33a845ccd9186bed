/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues: one SPSC sub-ring per engine.  The engine produces into
 * its own sub-ring; ibv_poll_cq's thread consumes them in turn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_malloc.h>

#include "engine.h"
#include "internal.h"

enum { ARM_NONE, ARM_ANY, ARM_SOLICITED };

struct droce_cq {
	uint32_t cap;
	unsigned int n_sub;
	_Atomic unsigned int next_sub;   /* pollers' round-robin position (a hint) */
	_Atomic int armed;
	droce_cq_notify_fn notify;
	droce_cq_error_fn error;
	void *arg;
	_Atomic uint64_t overflows;
	struct rte_ring *sub[DROCE_MAX_ENGINES];
};

static _Atomic unsigned int cq_serial;

struct droce_cq *
droce_cq_create(uint32_t cqe, droce_cq_notify_fn notify, droce_cq_error_fn error, void *arg)
{
	struct droce_cq *cq;
	unsigned int n = droce_engine_count();
	unsigned int serial = atomic_fetch_add(&cq_serial, 1);

	if (cqe == 0 || cqe > DROCE_DP_MAX_CQE || n == 0) {
		errno = n == 0 ? ENODEV : EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	cq->cap = cqe;
	cq->n_sub = n;
	cq->notify = notify;
	cq->error = error;
	cq->arg = arg;
	for (unsigned int e = 0; e < n; e++) {
		char name[RTE_RING_NAMESIZE];

		/*
		 * Each engine may fill the whole CQ: one sub-ring of exactly cqe
		 * entries each (the engine's overrun starts at cqe + 1).  One
		 * producer, the engine; any number of consumers, since rdma-core
		 * lets several threads poll one CQ (multi-consumer dequeue: one CAS
		 * per non-empty burst, no lock).
		 */
		snprintf(name, sizeof(name), "dcq%u_%u", serial, e);
		cq->sub[e] = rte_ring_create_elem(name, sizeof(struct droce_cqe), cqe, SOCKET_ID_ANY,
						  RING_F_SP_ENQ | RING_F_EXACT_SZ);
		if (cq->sub[e] == NULL) {
			droce_cq_destroy(cq);
			errno = ENOMEM;
			return NULL;
		}
	}
	return cq;
}

void
droce_cq_destroy(struct droce_cq *cq)
{
	if (cq == NULL)
		return;
	for (unsigned int e = 0; e < cq->n_sub; e++)
		rte_ring_free(cq->sub[e]);
	free(cq);
}

uint32_t
droce_cq_capacity(const struct droce_cq *cq)
{
	return cq->cap;
}

int
droce_cq_poll(struct droce_cq *cq, int n, struct droce_cqe *out)
{
	unsigned int first;
	int got = 0;

	if (n <= 0)
		return 0;
	/* co-located: a pass of every engine nobody else is driving (any engine may
	 * produce into this CQ); one being driven elsewhere is skipped, not waited for */
	droce_engines_progress();
	if (cq->n_sub == 1)
		return (int)rte_ring_mc_dequeue_burst_elem(cq->sub[0], out, sizeof(*out),
							   (unsigned int)n, NULL);
	first = atomic_fetch_add_explicit(&cq->next_sub, 1, memory_order_relaxed);
	for (unsigned int k = 0; k < cq->n_sub && got < n; k++) {
		unsigned int e = (first + k) % cq->n_sub;

		got += (int)rte_ring_mc_dequeue_burst_elem(cq->sub[e], out + got, sizeof(*out),
							   (unsigned int)(n - got), NULL);
	}
	return got;
}

int
droce_cq_arm(struct droce_cq *cq, bool solicited_only)
{
	atomic_store(&cq->armed, solicited_only ? ARM_SOLICITED : ARM_ANY);
	return 0;
}

bool
droce_cq_room_lc(const struct droce_cq *cq, const struct droce_engine *eng)
{
	return rte_ring_free_count(cq->sub[eng->id]) != 0;
}

bool
droce_cq_push_lc(struct droce_cq *cq, struct droce_engine *eng, const struct droce_cqe *cqe,
		 bool solicited)
{
	int armed;

	if (rte_ring_sp_enqueue_elem(cq->sub[eng->id], (void *)(uintptr_t)cqe, sizeof(*cqe)) != 0) {
		eng->stats.cqe_overflows++;
		if (atomic_fetch_add(&cq->overflows, 1) == 0 && cq->error)
			cq->error(cq, cq->arg);
		return false;
	}
	armed = atomic_load_explicit(&cq->armed, memory_order_relaxed);
	if (armed == ARM_NONE)
		return true;
	if (armed == ARM_SOLICITED && !solicited && cqe->status == DROCE_WC_SUCCESS)
		return true;
	if (atomic_compare_exchange_strong(&cq->armed, &armed, ARM_NONE) && cq->notify)
		cq->notify(cq, cq->arg);
	return true;
}
