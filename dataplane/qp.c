/* SPDX-License-Identifier: BSD-3-Clause
 * Over 800 lines: the application-side calls and the engine-side transitions of one object; just over the limit since the UD destroy drain.
 * Queue pairs: the application-side calls of dp.h, and the engine-side
 * state transitions, completions and flushing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include <droce/droce.h>

#include "engine.h"
#include "cc.h"
#include "engine_internal.h"
#include "errors.h"
#include "internal.h"
#include "qp_internal.h"
#include "rc_internal.h"
#include "srq.h"
#include "xrc.h"

static _Atomic unsigned int next_engine;

/* @n * @size zeroed bytes starting on a cache line (free() frees them): a QP,
 * its queues, so a 64-byte group of fields or a 128-byte slot is that many
 * lines, not one more */
static void *
zalloc_lines(size_t n, size_t size)
{
	void *p;

	if (posix_memalign(&p, RTE_CACHE_LINE_SIZE, n * size) != 0)
		return NULL;
	return memset(p, 0, n * size);
}

/* ---- application side ---- */

struct droce_qp *
droce_qp_create(enum droce_qp_type type, const struct droce_qp_caps *caps,
		struct droce_cq *send_cq, struct droce_cq *recv_cq, uint32_t pd_id,
		unsigned int port)
{
	return droce_qp_create_ex(type, caps, send_cq, recv_cq, pd_id, port, NULL);
}

struct droce_qp *
droce_qp_create_ex(enum droce_qp_type type, const struct droce_qp_caps *caps,
		   struct droce_cq *send_cq, struct droce_cq *recv_cq, uint32_t pd_id,
		   unsigned int port, const struct droce_qp_ext *ext)
{
	struct droce_engine *eng;
	struct droce_qp *qp;
	struct droce_msg msg = { .type = DROCE_MSG_ATTACH };
	unsigned int n = droce_engine_count();
	enum droce_xrc_role xrc;
	int rc;

	if (n == 0) {
		errno = ENODEV;
		return NULL;
	}
	if (type != DROCE_QPT_RC && type != DROCE_QPT_UC && type != DROCE_QPT_UD &&
	    type != DROCE_QPT_RAW_PACKET) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	xrc = ext != NULL ? ext->xrc : DROCE_XRC_NONE;
	if (caps->max_send_wr > DROCE_DP_MAX_QP_WR || caps->max_recv_wr > DROCE_DP_MAX_QP_WR ||
	    caps->max_send_sge > DROCE_DP_MAX_SGE || caps->max_recv_sge > DROCE_DP_MAX_SGE ||
	    caps->max_inline_data > DROCE_DP_MAX_INLINE ||
	    caps->max_tso_header > (type == DROCE_QPT_RAW_PACKET ? DROCE_DP_MAX_TSO_HEADER : 0) ||
	    (send_cq == NULL && xrc != DROCE_XRC_TGT) || (recv_cq == NULL && xrc == DROCE_XRC_NONE) ||
	    (xrc != DROCE_XRC_NONE && (type != DROCE_QPT_RC || ext->srq != NULL || ext->gsi)) ||
	    port >= droce_port_count()) {
		errno = EINVAL;
		return NULL;
	}
	qp = zalloc_lines(1, sizeof(*qp)); /* its hot lines are lines (engine.h) */
	if (qp == NULL)
		goto nomem;
	qp->type = type;
	qp->caps = *caps;
	qp->scq = send_cq;
	qp->rcq = xrc == DROCE_XRC_NONE ? recv_cq : NULL; /* a target's: its SRQ's */
	qp->xport = xrc == DROCE_XRC_NONE ? DROCE_TRANSPORT_RC : DROCE_TRANSPORT_XRC;
	qp->xrc_role = (uint8_t)xrc;
	qp->xrcd = xrc == DROCE_XRC_TGT ? ext->xrcd : 0;
	qp->pd_id = pd_id;
	qp->port_index = port;
	qp->port = droce_port_get(port);
	qp->sq_size = caps->max_send_wr ? caps->max_send_wr : 1;
	qp->rq_size = caps->max_recv_wr ? caps->max_recv_wr : 1;
	if (ext != NULL) {
		qp->srq = ext->srq;
		qp->event_fn = ext->event;
		qp->event_arg = ext->event_arg;
		if (qp->srq != NULL)
			qp->rq_size = 1; /* the WQE taken from the SRQ for the open message */
	}
	/* slots cut to the caps (584 bytes at the maximum, 128 for one SGE and
	 * no inline data), a whole number of cache lines each */
	qp->sq_stride = (uint32_t)RTE_ALIGN_CEIL(offsetof(struct droce_sq_slot, wqe) +
						 droce_wqe_room(caps->max_send_sge,
								caps->max_inline_data,
								caps->max_tso_header),
						 RTE_CACHE_LINE_SIZE);
	/* a power of two of slots, so an index finds its slot by a mask, not a
	 * division; the queue still holds sq_size WQEs (ENOMEM past them) */
	qp->sq_mask = rte_align32pow2(qp->sq_size) - 1;
	qp->sq = zalloc_lines((size_t)qp->sq_mask + 1, qp->sq_stride);
	/* the receive queue the same way: 64 bytes a slot for one SGE, 320 at
	 * the maximum; a QP on an SRQ (or an XRC target, whose SRQ changes)
	 * stages WQEs of any SRQ in its one slot, so that one is full-size */
	qp->rq_stride = (uint32_t)RTE_ALIGN_CEIL(
		offsetof(struct droce_rq_slot, rqe) + offsetof(struct droce_rqe, sge) +
			(qp->srq != NULL || xrc == DROCE_XRC_TGT ? DROCE_DP_MAX_SGE : caps->max_recv_sge) *
				sizeof(struct droce_sge),
		RTE_CACHE_LINE_SIZE);
	qp->rq_mask = rte_align32pow2(qp->rq_size) - 1;
	qp->rq = zalloc_lines((size_t)qp->rq_mask + 1, qp->rq_stride);
	qp->swqe = zalloc_lines((size_t)qp->sq_mask + 1, sizeof(*qp->swqe));
	if (qp->sq == NULL || qp->rq == NULL || qp->swqe == NULL)
		goto nomem;
	rte_spinlock_init(&qp->sq_lock);
	rte_spinlock_init(&qp->rq_lock);
	qp->state = DROCE_QPS_RESET;
	qp->attr.pmtu = 1024;
	if (ext != NULL && ext->gsi) {
		eng = droce_engine_get(0);
		qp->eng = eng;
		rc = type == DROCE_QPT_UD ? droce_engine_add_gsi(eng, qp) : EINVAL;
	} else {
		eng = droce_engine_get(atomic_fetch_add(&next_engine, 1) % n);
		qp->eng = eng;
		rc = droce_engine_add_qp(eng, qp);
		if (rc == 0) {
			uint32_t i = droce_qpn_index(qp->qpn);

			qp->bell_leaf = &eng->bell_leaf[i >> 6];
			qp->bell_bit = UINT64_C(1) << (i & 63);
		}
	}
	if (rc != 0) {
		errno = rc;
		goto fail;
	}
	msg.qp = qp;
	rc = droce_engine_send_msg(eng, &msg);
	if (rc != 0) {
		if (qp->qpn != DROCE_DP_GSI_QPN)
			droce_engine_del_qp(eng, qp); /* never attached */
		else
			droce_engine_del_gsi(qp->port_index);
		errno = rc;
		goto fail;
	}
	if (qp->srq != NULL)
		droce_srq_attach(qp->srq);
	return qp;
nomem:
	errno = ENOMEM;
fail:
	if (qp) {
		free(qp->sq);
		free(qp->rq);
		free(qp->swqe);
		free(qp);
	}
	return NULL;
}

size_t
droce_qp_queue_bytes(const struct droce_qp *qp)
{
	return ((size_t)qp->sq_mask + 1) * (qp->sq_stride + sizeof(qp->swqe[0])) +
	       ((size_t)qp->rq_mask + 1) * qp->rq_stride;
}

uint32_t
droce_qp_num(const struct droce_qp *qp)
{
	return qp->qpn;
}

unsigned int
droce_qp_engine(const struct droce_qp *qp)
{
	return qp->eng->id;
}

bool
droce_qp_settled(const struct droce_qp *qp)
{
	return atomic_load_explicit(&qp->applied_gen, memory_order_acquire) == qp->mod_gen;
}

int
droce_qp_modify(struct droce_qp *qp, const struct droce_qp_mod *mod)
{
	struct droce_msg msg = { .type = DROCE_MSG_MODIFY, .qp = qp };
	struct droce_qp_mod *copy = malloc(sizeof(*copy));
	int rc;

	if (copy == NULL)
		return ENOMEM;
	*copy = *mod;
	msg.ptr = copy;
	msg.arg = ++qp->mod_gen;
	rc = droce_engine_send_msg(qp->eng, &msg);
	if (rc != 0)
		free(copy);
	return rc;
}

/*
 * After publishing slots: the doorbell, unless a bell rung and not yet
 * taken will make the engine look at the queues after these slots' release
 * stores (the QP's bell flag: the engine's exchange when it takes the bell
 * reads this one's write and acquires; an RMW always, never a plain load
 * first, as a load could pass the slot stores).  A QP with an index rings
 * its bit of the engine's bitmap (one OR of its leaf word, the parents out
 * of line when the word was zero: engine_chan.c); the GSI QP, which has no
 * index, sends a channel message (@type).
 */
static inline int
droce_qp_ring(struct droce_qp *qp, enum droce_msg_type type, uint32_t first)
{
	struct droce_msg msg = { .type = type, .qp = qp, .arg = first };

	if (atomic_exchange_explicit(&qp->bell, 1, memory_order_acq_rel) != 0)
		return 0; /* a bell not yet taken by the engine covers these slots too */
	if (likely(qp->bell_leaf != NULL)) {
		if (unlikely(droce_engines.forked))
			return EIO; /* no engine runs in a forked child (engine_internal.h) */
		if (atomic_fetch_or_explicit(qp->bell_leaf, qp->bell_bit, memory_order_acq_rel) != 0)
			return 0; /* its word's parent is set, or being set */
		return droce_engine_ring_up(qp->eng, droce_qpn_index(qp->qpn));
	}
	return droce_engine_send_msg(qp->eng, &msg);
}

int
droce_qp_post_send(struct droce_qp *qp, const struct droce_wqe *wqe)
{
	struct droce_sq_slot *slot;
	uint32_t idx;

	if (wqe->num_sge > qp->caps.max_send_sge ||
	    ((wqe->flags & DROCE_WQE_INLINE) && wqe->length > qp->caps.max_inline_data))
		return EINVAL; /* more than its slot has room for */
	rte_spinlock_lock(&qp->sq_lock);
	idx = qp->sq_posted;
	if (idx - atomic_load_explicit(&qp->sq_retired, memory_order_acquire) >= qp->sq_size) {
		rte_spinlock_unlock(&qp->sq_lock);
		return ENOMEM;
	}
	slot = droce_qp_sq_slot(qp, idx);
	/* copy what the WQE uses: the header, its SGEs, its inline bytes */
	memcpy(&slot->wqe, wqe, offsetof(struct droce_wqe, sge) + wqe->num_sge * sizeof(wqe->sge[0]));
	if (wqe->flags & DROCE_WQE_INLINE)
		memcpy(slot->wqe.inline_data, wqe->inline_data, wqe->length);
	if (wqe->ah)
		__atomic_fetch_add(&wqe->ah->wqes, 1, __ATOMIC_RELAXED);
	atomic_store_explicit(&slot->seq, idx + 1, memory_order_release);
	qp->sq_posted = idx + 1;
	rte_spinlock_unlock(&qp->sq_lock);
	return droce_qp_ring(qp, DROCE_MSG_SQ_BELL, idx);
}

static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "sq_retired read as uint32_t");

void
droce_qp_sq_begin(struct droce_qp *qp, struct droce_sq_batch *b)
{
	rte_spinlock_lock(&qp->sq_lock);
	b->wqe0 = (uint8_t *)&droce_qp_sq_slot(qp, 0)->wqe;
	b->stride = qp->sq_stride;
	b->size = qp->sq_size;
	b->mask = qp->sq_mask;
	b->retired = (const uint32_t *)&qp->sq_retired;
	b->first = qp->sq_posted;
}

int
droce_qp_sq_commit(struct droce_qp *qp, uint32_t n)
{
	uint32_t first = qp->sq_posted;

	/* a UD WQE holds its address handle until it completes (only UD's have one) */
	for (uint32_t i = 0; i < n && qp->type == DROCE_QPT_UD; i++) {
		struct droce_sq_slot *slot = droce_qp_sq_slot(qp, first + i);

		if (slot->wqe.ah)
			__atomic_fetch_add(&slot->wqe.ah->wqes, 1, __ATOMIC_RELAXED);
	}
	/* in order: the engine takes slots while their seq says so */
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&droce_qp_sq_slot(qp, first + i)->seq, first + i + 1,
				      memory_order_release);
	qp->sq_posted = first + n;
	rte_spinlock_unlock(&qp->sq_lock);
	return n == 0 ? 0 : droce_qp_ring(qp, DROCE_MSG_SQ_BELL, first);
}

void
droce_qp_sq_cancel(struct droce_qp *qp)
{
	rte_spinlock_unlock(&qp->sq_lock);
}

int
droce_qp_post_recv(struct droce_qp *qp, const struct droce_rqe *rqe)
{
	struct droce_rq_slot *slot;
	uint32_t idx;

	if (qp->srq != NULL)
		return EINVAL; /* its receive WQEs go to the SRQ */
	if (rqe->num_sge > qp->caps.max_recv_sge)
		return EINVAL; /* more than its slot has room for */
	rte_spinlock_lock(&qp->rq_lock);
	idx = qp->rq_posted;
	if (idx - atomic_load_explicit(&qp->rq_retired, memory_order_acquire) >= qp->rq_size) {
		rte_spinlock_unlock(&qp->rq_lock);
		return ENOMEM;
	}
	slot = droce_qp_rq_at(qp, idx);
	memcpy(&slot->rqe, rqe, offsetof(struct droce_rqe, sge) + rqe->num_sge * sizeof(rqe->sge[0]));
	atomic_store_explicit(&slot->seq, idx + 1, memory_order_release);
	qp->rq_posted = idx + 1;
	rte_spinlock_unlock(&qp->rq_lock);
	return droce_qp_ring(qp, DROCE_MSG_RQ_BELL, idx);
}

uint32_t
droce_qp_rq_begin(struct droce_qp *qp)
{
	rte_spinlock_lock(&qp->rq_lock);
	return qp->rq_posted;
}

struct droce_rqe *
droce_qp_rq_slot(struct droce_qp *qp, uint32_t idx)
{
	if (idx - atomic_load_explicit(&qp->rq_retired, memory_order_acquire) >= qp->rq_size)
		return NULL;
	return &droce_qp_rq_at(qp, idx)->rqe;
}

int
droce_qp_rq_commit(struct droce_qp *qp, uint32_t n)
{
	uint32_t first = qp->rq_posted;

	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&droce_qp_rq_at(qp, first + i)->seq, first + i + 1,
				      memory_order_release);
	qp->rq_posted = first + n;
	rte_spinlock_unlock(&qp->rq_lock);
	return n == 0 ? 0 : droce_qp_ring(qp, DROCE_MSG_RQ_BELL, first);
}

void
droce_qp_ud_send_posted(struct droce_qp *qp)
{
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz() / 10;
	uint32_t posted;

	if (qp->type != DROCE_QPT_UD)
		return;
	rte_spinlock_lock(&qp->sq_lock);
	posted = qp->sq_posted;
	rte_spinlock_unlock(&qp->sq_lock);
	while ((int32_t)(atomic_load_explicit(&qp->sq_retired, memory_order_acquire) - posted) < 0 &&
	       rte_get_tsc_cycles() < end) {
		droce_engines_progress();
		rte_pause();
	}
}

int
droce_qp_destroy(struct droce_qp *qp)
{
	struct droce_msg msg = { .type = DROCE_MSG_DETACH, .qp = qp };
	int rc;

	/* before the QP leaves its groups, so the port's leave follows its
	 * last datagrams on the wire, as a host's does */
	droce_qp_ud_send_posted(qp);
	droce_mcast_detach_qp(qp); /* no engine delivers a group's datagram to it after this */
	rc = droce_engine_send_msg(qp->eng, &msg);
	if (rc != 0)
		return rc;
	while (!atomic_load_explicit(&qp->detached, memory_order_acquire)) {
		droce_engines_progress();
		rte_pause();
	}
	/* WQEs that never completed no longer hold their address handles */
	for (uint32_t idx = qp->sq_head; idx != qp->sq_posted; idx++) {
		struct droce_sq_slot *slot = droce_qp_sq_slot(qp, idx);

		if (atomic_load_explicit(&slot->seq, memory_order_acquire) == idx + 1)
			droce_wqe_release_ah(&slot->wqe);
	}
	if (qp->xrc_role == DROCE_XRC_TGT)
		droce_xrc_tgt_release(qp); /* the SRQ it delivered into last */
	else if (qp->srq != NULL)
		droce_srq_detach(qp->srq);
	if (qp->qpn == DROCE_DP_GSI_QPN)
		droce_engine_del_gsi(qp->port_index);
	else
		droce_engine_del_qp(qp->eng, qp);
	free(qp->stash); /* completions still waiting for room go with their QP */
	free(qp->res);
	free(qp->cc);
	droce_rc_rdmap_free(qp);
	droce_rc_sr_free(qp);
	free(qp->sq);
	free(qp->rq);
	free(qp->swqe);
	free(qp);
	return 0;
}

/* ---- engine side ---- */

void
droce_qp_refresh_lc(struct droce_qp *qp)
{
	while (atomic_load_explicit(&droce_qp_sq_slot(qp, qp->sq_avail)->seq, memory_order_acquire) ==
		       qp->sq_avail + 1 &&
	       qp->sq_avail - qp->sq_head < qp->sq_size)
		qp->sq_avail++;
	/* an SRQ QP's receive slot is filled by droce_qp_rq_ready_lc, not posted */
	while (qp->srq == NULL &&
	       atomic_load_explicit(&droce_qp_rq_at(qp, qp->rq_avail)->seq, memory_order_acquire) ==
		       qp->rq_avail + 1 &&
	       qp->rq_avail - qp->rq_head < qp->rq_size)
		qp->rq_avail++;
}

bool
droce_qp_rq_ready_lc(struct droce_qp *qp)
{
	struct droce_rq_slot *slot;

	droce_qp_refresh_lc(qp);
	if (qp->rq_head != qp->rq_avail)
		return true;
	if (qp->srq == NULL)
		return false;
	/* the QP's own slot: refresh_lc never sees it as posted (seq stays behind) */
	slot = droce_qp_rq_at(qp, qp->rq_avail);
	if (!droce_srq_take_lc(qp->srq, &slot->rqe))
		return false;
	qp->rq_avail++;
	return true;
}

static void
raise_event_lc(struct droce_qp *qp, enum droce_qp_event ev)
{
	if (qp->event_fn != NULL)
		qp->event_fn(qp, ev, qp->event_arg);
}

static enum droce_wc_opcode
wc_opcode_of(uint8_t wr_opcode)
{
	switch (wr_opcode) {
	case DROCE_WR_RDMA_WRITE:
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
		return DROCE_WC_RDMA_WRITE;
	case DROCE_WR_RDMA_READ:
		return DROCE_WC_RDMA_READ;
	case DROCE_WR_ATOMIC_CMP_AND_SWP:
		return DROCE_WC_COMP_SWAP;
	case DROCE_WR_ATOMIC_FETCH_AND_ADD:
		return DROCE_WC_FETCH_ADD;
	case DROCE_WR_LOCAL_INV:
		return DROCE_WC_LOCAL_INV;
	case DROCE_WR_BIND_MW:
		return DROCE_WC_BIND_MW;
	default:
		return DROCE_WC_SEND;
	}
}

/*
 * CQ overrun.  IBTA makes it a CQ error (IBV_EVENT_CQ_ERR, raised by cq.c at
 * the CQ's first overflow) that sends the QPs completing into the CQ to the
 * error state.  droce also loses nothing: a CQE that finds its CQ full waits
 * in its QP's stash, and so does every later CQE of that QP (completions stay
 * in order), until the engine finds room for them (droce_qp_stash_drain_lc,
 * every pass while the stash is not empty).  The engine moves the QP to ERR
 * once the call that overran is done (droce_qp_overrun_check_lc), never in the
 * middle of a completer loop.  The stash stays small: the call that overran
 * completes at most one CQE per slot (sq_size + rq_size), and in ERR the
 * flushes wait until the stash is empty.  It is allocated at the first
 * overrun (an error path, never the fast path); a CQE that finds no room even
 * there is counted in `cqe_lost`, which the bound above keeps at 0.
 */
static struct droce_cqe_stash *
stash_get_lc(struct droce_qp *qp)
{
	uint32_t cap = qp->sq_size + qp->rq_size + 1;

	if (qp->stash == NULL) {
		qp->stash = calloc(1, sizeof(*qp->stash) + cap * sizeof(qp->stash->e[0]));
		if (qp->stash != NULL)
			qp->stash->cap = cap;
	}
	return qp->stash;
}

static void
cqe_out_lc(struct droce_qp *qp, bool recv, const struct droce_cqe *c, bool solicited)
{
	struct droce_cqe_stash *st = qp->stash;
	struct droce_stashed *e;

	if (likely(st == NULL || st->count == 0) &&
	    likely(droce_cq_push_lc(recv ? qp->rcq : qp->scq, qp->eng, c, solicited)))
		return;
	/* overrun, or completions already waiting: this one waits behind them */
	qp->cq_overrun = true;
	st = stash_get_lc(qp);
	if (st == NULL || st->count == st->cap) {
		qp->eng->stats.cqe_lost++;
		return;
	}
	e = &st->e[(st->head + st->count) % st->cap];
	e->c = *c;
	e->recv = recv;
	e->solicited = solicited;
	st->count++;
	qp->eng->stats.cqe_stashed++;
}

void
droce_qp_stash_drain_lc(struct droce_qp *qp)
{
	struct droce_cqe_stash *st = qp->stash;

	while (st != NULL && st->count != 0) {
		struct droce_stashed *e = &st->e[st->head];
		struct droce_cq *cq = e->recv ? qp->rcq : qp->scq;

		if (!droce_cq_room_lc(cq, qp->eng) || !droce_cq_push_lc(cq, qp->eng, &e->c, e->solicited))
			return;
		st->head = (st->head + 1) % st->cap;
		st->count--;
	}
}

void
droce_qp_overrun_lc(struct droce_qp *qp)
{
	qp->cq_overrun = false;
	/* what the responder accepted (and completed, into the CQ or the stash) is
	 * acknowledged first, so the requester does not fail requests done here */
	if (qp->type == DROCE_QPT_RC && qp->state != DROCE_QPS_ERR)
		droce_rc_ack_now_lc(qp);
	droce_qp_error_lc(qp, DROCE_ERR_CQ_OVERRUN);
	droce_engine_activate_lc(qp->eng, qp); /* drains the stash from the next pass on */
}

/*
 * Both completion helpers free the slot (publish the retired counter) before
 * they push the CQE: an application that polls the completion may post into
 * that slot at once, as on hardware, and must not find the queue still full.
 * So everything the CQE needs is copied out of the slot first.
 */
void
droce_qp_complete_send_lc(struct droce_qp *qp, enum droce_wc_status status)
{
	const struct droce_wqe *w = &droce_qp_sq_slot(qp, qp->sq_head)->wqe;
	bool report = (w->flags & DROCE_WQE_SIGNALED) || status != DROCE_WC_SUCCESS;
	struct droce_cqe c;

	if (report) /* the CQE built only when it is reported */
		c = (struct droce_cqe){
			.wr_id = w->wr_id,
			.status = status,
			.opcode = wc_opcode_of(w->opcode),
			.byte_len = w->length,
			.qp_num = qp->qpn,
		};
	droce_qp_sq_clear_lc(qp, qp->sq_head);
	droce_qp_sq_retire_lc(qp, 1);
	if (report)
		cqe_out_lc(qp, false, &c, false);
}

void
droce_qp_complete_recv_lc(struct droce_qp *qp, const struct droce_cqe *proto, bool solicited)
{
	const struct droce_rqe *r = droce_qp_rqe(qp, qp->rq_head);
	struct droce_cqe c = *proto;

	c.wr_id = r->wr_id;
	c.qp_num = qp->qpn;
	qp->rq_head++;
	atomic_store_explicit(&qp->rq_retired, qp->rq_head, memory_order_release);
	cqe_out_lc(qp, true, &c, solicited);
}

/* Every WQE and RQE that is ready and not retired completes with WR_FLUSH_ERR
 * (after the completions waiting for CQ room: the rest on a later pass). */
static void
flush_lc(struct droce_qp *qp)
{
	struct droce_cqe c = { .status = DROCE_WC_WR_FLUSH_ERR, .opcode = DROCE_WC_RECV };

	droce_qp_refresh_lc(qp);
	while (qp->sq_head != qp->sq_avail && !droce_qp_stash_pending(qp))
		droce_qp_complete_send_lc(qp, DROCE_WC_WR_FLUSH_ERR);
	qp->sq_cur = qp->sq_next = qp->sq_head;
	while (qp->rq_head != qp->rq_avail && !droce_qp_stash_pending(qp))
		droce_qp_complete_recv_lc(qp, &c, false);
	qp->rqe_open = false;
}

/* Drops everything (RESET): no completions, as IBTA specifies; and the
 * completions it made that nobody polled yet leave its CQs (the stash's too),
 * as rdma-core's providers clean them at this modify. */
static void
reset_lc(struct droce_qp *qp)
{
	if (qp->stash != NULL)
		qp->stash->count = 0;
	qp->cq_overrun = false;
	if (qp->scq != NULL)
		droce_cq_clean_lc(qp->scq, qp->eng, qp->qpn);
	if (qp->rcq != NULL && qp->rcq != qp->scq)
		droce_cq_clean_lc(qp->rcq, qp->eng, qp->qpn);
	droce_qp_refresh_lc(qp);
	for (uint32_t idx = qp->sq_head; idx != qp->sq_avail; idx++)
		droce_wqe_release_ah(droce_qp_wqe(qp, idx));
	qp->sq_head = qp->sq_cur = qp->sq_next = qp->sq_avail;
	atomic_store_explicit(&qp->sq_retired, qp->sq_head, memory_order_release);
	memset(qp->swqe, 0, ((size_t)qp->sq_mask + 1) * sizeof(qp->swqe[0]));
	qp->rq_head = qp->rq_avail;
	atomic_store_explicit(&qp->rq_retired, qp->rq_head, memory_order_release);
	qp->rqe_open = false;
	qp->rd_atomic_out = 0;
	qp->rd_resp_head = qp->rd_resp_count = 0;
	qp->resp_failing = false;
	qp->ack_pending = false;
	qp->rto_deadline = qp->rnr_deadline = 0;
	qp->req_state = DROCE_REQ_IDLE;
	qp->msn = 0;
	droce_rc_rdmap_reset_lc(qp);
	droce_rc_sr_release_lc(qp);
	qp->sr_peer = qp->sr_tail_check = false;
	qp->stats.sr_peer = 0;
	qp->cnp_last = 0;
	droce_cc_qp_reset_lc(qp);
	if (qp->atomic_replay != NULL)
		memset(qp->atomic_replay, 0, DROCE_ATOMIC_REPLAY * sizeof(qp->atomic_replay[0]));
}

int
droce_qp_resp_res_lc(struct droce_qp *qp)
{
	if (qp->res != NULL)
		return 0;
	qp->res = calloc(1, sizeof(*qp->res));
	if (qp->res == NULL)
		return ENOMEM;
	qp->atomic_replay = qp->res->atomic_replay;
	qp->rd_resp = qp->res->rd_resp;
	return 0;
}

void
droce_qp_set_state_lc(struct droce_qp *qp, enum droce_qp_state state)
{
	enum droce_qp_state prev = qp->state;

	qp->state = state;
	switch (state) {
	case DROCE_QPS_RESET:
		reset_lc(qp);
		break;
	case DROCE_QPS_ERR:
	case DROCE_QPS_SQE:
		qp->req_state = DROCE_REQ_ERROR;
		qp->rto_deadline = qp->rnr_deadline = 0;
		qp->rd_resp_count = 0;
		qp->resp_failing = false;
		qp->ack_pending = false;
		droce_rc_sr_release_lc(qp);
		flush_lc(qp);
		/* an SRQ QP entering ERR: its WQEs are flushed, it takes no more */
		if (state == DROCE_QPS_ERR && prev != DROCE_QPS_ERR && qp->srq != NULL)
			raise_event_lc(qp, DROCE_QP_EV_LAST_WQE);
		break;
	default:
		break;
	}
}

void
droce_qp_error_publish_lc(struct droce_qp *qp, enum droce_err err)
{
	atomic_store_explicit(&qp->async_state,
			      (uint64_t)atomic_load_explicit(&qp->applied_gen, memory_order_relaxed) << 32 |
				      1u << 8 |
				      (unsigned int)droce_err_table[err].next_state,
			      memory_order_release);
}

void
droce_qp_fail_send_lc(struct droce_qp *qp, enum droce_err err)
{
	droce_qp_error_publish_lc(qp, err); /* before the completion a poller sees */
	if (qp->sq_head != qp->sq_avail)
		droce_qp_complete_send_lc(qp, droce_err_table[err].req_status);
	droce_qp_error_lc(qp, err);
}

void
droce_qp_fail_recv_lc(struct droce_qp *qp, enum droce_err err, struct droce_cqe *c)
{
	c->status = droce_err_table[err].resp_status;
	droce_qp_error_publish_lc(qp, err);
	droce_qp_complete_recv_lc(qp, c, false);
	droce_qp_error_lc(qp, err);
}

void
droce_qp_recv_error_lc(struct droce_qp *qp, enum droce_err err, struct droce_cqe *c)
{
	c->status = droce_err_table[err].resp_status;
	droce_qp_complete_recv_lc(qp, c, false);
}

void
droce_qp_error_lc(struct droce_qp *qp, enum droce_err err)
{
	enum droce_qp_state next = droce_err_table[err].next_state;
	enum droce_qp_state prev = qp->state;

	/* published first, so whoever reads an event below sees the new state */
	droce_qp_error_publish_lc(qp, err);
	droce_qp_set_state_lc(qp, next);
	if (next == DROCE_QPS_ERR && prev != DROCE_QPS_ERR)
		raise_event_lc(qp, DROCE_QP_EV_FATAL);
}

int
droce_qp_async_state(const struct droce_qp *qp)
{
	uint64_t v = atomic_load_explicit(&qp->async_state, memory_order_acquire);

	if (!(v & (1u << 8)) || (uint32_t)(v >> 32) != qp->mod_gen)
		return -1;
	return (int)(v & 0xff);
}

void
droce_qp_apply_mod_lc(struct droce_qp *qp, const struct droce_qp_mod *m)
{
	struct droce_qp_mod *a = &qp->attr;

	if (m->mask & DROCE_QPM_ACCESS_FLAGS)
		a->access = m->access;
	if (m->mask & DROCE_QPM_PKEY_INDEX)
		a->pkey_index = m->pkey_index;
	if (m->mask & DROCE_QPM_QKEY)
		a->qkey = m->qkey;
	if (m->mask & DROCE_QPM_PATH_MTU)
		a->pmtu = m->pmtu;
	if (m->mask & DROCE_QPM_TIMEOUT)
		a->timeout = m->timeout;
	if (m->mask & DROCE_QPM_RETRY_CNT) {
		a->retry_cnt = m->retry_cnt;
		qp->retry_left = m->retry_cnt;
	}
	if (m->mask & DROCE_QPM_RNR_RETRY) {
		a->rnr_retry = m->rnr_retry;
		qp->rnr_left = m->rnr_retry;
	}
	if (m->mask & DROCE_QPM_MIN_RNR_TIMER)
		a->min_rnr_timer = m->min_rnr_timer;
	if (m->mask & DROCE_QPM_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = m->max_rd_atomic;
	if (m->mask & DROCE_QPM_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = m->max_dest_rd_atomic;
	if (m->mask & DROCE_QPM_DEST_QPN)
		a->dest_qpn = m->dest_qpn;
	if (m->mask & DROCE_QPM_AV) {
		a->path = m->path;
		droce_cc_path(qp->port, &a->path);
		droce_tmpl_init(&qp->tmpl, &a->path);
	}
	if (m->mask & DROCE_QPM_RQ_PSN) {
		a->rq_psn = m->rq_psn;
		droce_seq_rx_init(&qp->rxseq, a->pmtu, m->rq_psn);
	}
	qp->rxseq.pmtu = a->pmtu;
	if (m->mask & DROCE_QPM_SQ_PSN) {
		a->sq_psn = m->sq_psn;
		qp->psn_next = qp->psn_una = qp->psn_max = m->sq_psn & DROCE_PSN_MASK;
	}
	if (m->mask & DROCE_QPM_STATE)
		droce_qp_set_state_lc(qp, m->state);
}

bool
droce_qp_busy_lc(const struct droce_qp *qp)
{
	uint32_t sq_ready = qp->sq_avail;

	if (qp->ack_pending || qp->rd_resp_count || droce_qp_stash_pending(qp))
		return true;
	/* unseen WQEs are announced by their doorbell; only known work keeps us
	 * busy, and not while it waits for ACKs or responses (their frames
	 * activate the QP) */
	if (qp->state == DROCE_QPS_RTS && qp->sq_cur != sq_ready && qp->req_state == DROCE_REQ_IDLE &&
	    !qp->req_blocked)
		return true;
	if (qp->state == DROCE_QPS_ERR && (qp->sq_head != qp->sq_avail || qp->rq_head != qp->rq_avail))
		return true;
	return false;
}
