/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues.
 *
 * An SRQ is an array of RQE slots and two lock-free MPMC rings of slot
 * indices (rte_ring, default multi-producer / multi-consumer):
 *  - free:  slots nobody holds; droce_srq_post_recv() takes one, fills it
 *    and puts its index on
 *  - ready: posted RQEs in posting order; whichever engine needs a receive
 *    WQE for one of the SRQ's QPs dequeues an index, copies the RQE into
 *    that QP's own one-slot receive queue (the QP owns it from then on until
 *    it completes) and gives the index back to free.
 * The rings' release / acquire on their tails order the slot contents, so
 * no lock is taken anywhere, on posting threads or engines.  A slot index
 * lives in exactly one ring or one holder at a time, so an RQE is handed
 * out exactly once.
 *
 * A slot holds an RQE cut to the SRQ's max_sge SGEs, rounded up to a cache
 * line (64 bytes for one SGE, 320 at DROCE_DP_MAX_SGE), max_wr of them: the
 * rings hand out slot indices, so no index is ever reduced by a mask.
 *
 * The limit (ibv_modify_srq's srq_limit) is armed with a non-zero value; the
 * engine whose take leaves fewer than that many RQEs posted swaps it to 0
 * (one winner) and calls the limit callback.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "srq.h"

struct droce_srq {
	uint32_t max_wr, max_sge;
	uint32_t stride;               /* bytes from one slot to the next */
	uint8_t *slots;                /* max_wr slots: slot_at() */
	struct rte_ring *ready, *free; /* uint32_t slot indices */
	_Atomic uint32_t limit;        /* 0: not armed */
	_Atomic uint32_t qps;          /* QPs attached */
	droce_srq_limit_fn limit_fn;
	void *arg;
};

/* The RQE of slot @idx (< max_wr). */
static inline struct droce_rqe *
slot_at(const struct droce_srq *s, uint32_t idx)
{
	return (struct droce_rqe *)(s->slots + (size_t)idx * s->stride);
}

static struct rte_ring *
ring_new(const char *name, uint32_t n)
{
	uint32_t count = rte_align32pow2(n + 1);
	ssize_t sz = rte_ring_get_memsize_elem(sizeof(uint32_t), count);
	struct rte_ring *r;

	if (sz < 0)
		return NULL;
	r = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL((size_t)sz, RTE_CACHE_LINE_SIZE));
	if (r == NULL)
		return NULL;
	if (rte_ring_init(r, name, count, 0) != 0) {
		free(r);
		return NULL;
	}
	return r;
}

struct droce_srq *
droce_srq_create(uint32_t max_wr, uint32_t max_sge, droce_srq_limit_fn limit, void *arg)
{
	struct droce_srq *s;

	if (max_wr == 0 || max_wr > DROCE_DP_MAX_SRQ_WR || max_sge > DROCE_DP_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto nomem;
	s->max_wr = max_wr;
	s->max_sge = max_sge;
	s->limit_fn = limit;
	s->arg = arg;
	s->stride = (uint32_t)RTE_ALIGN_CEIL(offsetof(struct droce_rqe, sge) +
						 max_sge * sizeof(struct droce_sge),
					     RTE_CACHE_LINE_SIZE);
	s->slots = aligned_alloc(RTE_CACHE_LINE_SIZE, (size_t)max_wr * s->stride);
	s->ready = ring_new("droce_srq_ready", max_wr);
	s->free = ring_new("droce_srq_free", max_wr);
	if (s->slots == NULL || s->ready == NULL || s->free == NULL)
		goto nomem;
	for (uint32_t i = 0; i < max_wr; i++)
		if (rte_ring_enqueue_elem(s->free, &i, sizeof(i)) != 0)
			goto nomem;
	return s;
nomem:
	if (s) {
		free(s->slots);
		free(s->ready);
		free(s->free);
		free(s);
	}
	errno = ENOMEM;
	return NULL;
}

int
droce_srq_destroy(struct droce_srq *s)
{
	if (atomic_load_explicit(&s->qps, memory_order_acquire) != 0)
		return EBUSY;
	free(s->slots);
	free(s->ready);
	free(s->free);
	free(s);
	return 0;
}

int
droce_srq_post_recv(struct droce_srq *s, const struct droce_rqe *rqe)
{
	uint32_t idx;

	if (rqe->num_sge > s->max_sge)
		return EINVAL;
	if (rte_ring_dequeue_elem(s->free, &idx, sizeof(idx)) != 0)
		return ENOMEM;
	memcpy(slot_at(s, idx), rqe, offsetof(struct droce_rqe, sge) + rqe->num_sge * sizeof(rqe->sge[0]));
	/* cannot fail: at most max_wr indices exist and the ring holds more */
	rte_ring_enqueue_elem(s->ready, &idx, sizeof(idx));
	return 0;
}

void
droce_srq_arm(struct droce_srq *s, uint32_t limit)
{
	atomic_store_explicit(&s->limit, limit, memory_order_release);
}

uint32_t
droce_srq_limit(const struct droce_srq *s)
{
	return atomic_load_explicit(&s->limit, memory_order_acquire);
}

uint32_t
droce_srq_capacity(const struct droce_srq *s)
{
	return s->max_wr;
}

uint32_t
droce_srq_count(const struct droce_srq *s)
{
	return rte_ring_count(s->ready);
}

void
droce_srq_attach(struct droce_srq *s)
{
	atomic_fetch_add_explicit(&s->qps, 1, memory_order_relaxed);
}

bool
droce_srq_in_use(const struct droce_srq *s)
{
	return atomic_load_explicit(&s->qps, memory_order_acquire) != 0;
}

void
droce_srq_detach(struct droce_srq *s)
{
	atomic_fetch_sub_explicit(&s->qps, 1, memory_order_release);
}

bool
droce_srq_take_lc(struct droce_srq *s, struct droce_rqe *out)
{
	uint32_t idx, lim;
	const struct droce_rqe *r;

	if (rte_ring_dequeue_elem(s->ready, &idx, sizeof(idx)) != 0)
		return false;
	r = slot_at(s, idx);
	memcpy(out, r, offsetof(struct droce_rqe, sge) + r->num_sge * sizeof(r->sge[0]));
	rte_ring_enqueue_elem(s->free, &idx, sizeof(idx));
	lim = atomic_load_explicit(&s->limit, memory_order_relaxed);
	if (unlikely(lim != 0) && rte_ring_count(s->ready) < lim &&
	    atomic_compare_exchange_strong(&s->limit, &lim, 0) && s->limit_fn != NULL)
		s->limit_fn(s, s->arg);
	return true;
}
