/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues: one sub-ring per engine.  The engine alone produces into
 * its own sub-ring; any number of threads polling the CQ consume them in turn
 * (multi-consumer dequeue, as rdma-core lets several threads poll one CQ).
 * A completion that finds its sub-ring full is not dropped: qp.c keeps it in
 * its QP (CQ overrun).  Resizing (droce_cq_resize) gives each engine a new
 * sub-ring through its channel: the engine moves what it produced, in
 * order, and publishes the new ring, so its next completion lands behind
 * them; pollers load the sub-ring pointers with acquire, and the old rings
 * are kept until the CQ is destroyed (a poller may still hold one, empty).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "engine.h"
#include "internal.h"

/* CQs armed for an event now (internal.h) */
_Atomic int droce_cqs_armed;

enum { ARM_NONE, ARM_ANY, ARM_SOLICITED };

struct droce_cq {
	uint32_t cap;
	unsigned int n_sub;
	_Atomic unsigned int next_sub;   /* pollers' round-robin position (a hint) */
	_Atomic int armed;
	_Atomic bool events;             /* armed at least once: pushes order against arms */
	droce_cq_notify_fn notify;
	droce_cq_error_fn error;
	void *arg;
	_Atomic uint64_t overflows;
	bool timestamp;                  /* elements are struct droce_cqe_ts */
	struct rte_ring *sub[DROCE_MAX_ENGINES]; /* engine e writes sub[e]; pollers: sub_of() */
	/* what the last event announced: sub-ring e's completions before
	 * ann[e].tail (its producer count then), if it is still ann[e].ring */
	struct {
		struct rte_ring *_Atomic ring;
		_Atomic uint32_t tail;
	} ann[DROCE_MAX_ENGINES];
	pthread_mutex_t resize_lock;     /* one droce_cq_resize at a time */
	struct retired_ring *retired;    /* sub-rings replaced by resizes */
};

/* A sub-ring a resize replaced: freed with the CQ. */
struct retired_ring {
	struct rte_ring *r;
	struct retired_ring *next;
};

/* A sub-ring as pollers see it (an engine may publish a resized one). */
static inline struct rte_ring *
sub_of(struct droce_cq *cq, unsigned int e)
{
	return __atomic_load_n(&cq->sub[e], __ATOMIC_ACQUIRE);
}

static inline unsigned int
cqe_size(const struct droce_cq *cq)
{
	return cq->timestamp ? sizeof(struct droce_cqe_ts) : sizeof(struct droce_cqe);
}

static _Atomic unsigned int cq_serial;

/*
 * A sub-ring in process memory, not a DPDK memzone: a process has only
 * RTE_MAX_MEMZONE (2,560) of those, and every CQ takes one per engine, so
 * memzones would cap the CQ count far below max_cq.  rte_ring_init() lays
 * the ring out in memory we give it (sized for the power of two that
 * RING_F_EXACT_SZ rounds @cqe + 1 up to); it is freed with free().
 */
static struct rte_ring *
sub_ring_create(const char *name, unsigned int esize, uint32_t cqe)
{
	ssize_t size = rte_ring_get_memsize_elem(esize, rte_align32pow2(cqe + 1));
	struct rte_ring *r;

	if (size < 0)
		return NULL;
	r = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL((size_t)size, RTE_CACHE_LINE_SIZE));
	if (r == NULL)
		return NULL;
	memset(r, 0, sizeof(*r));
	if (rte_ring_init(r, name, cqe, RING_F_SP_ENQ | RING_F_EXACT_SZ) != 0) {
		free(r);
		return NULL;
	}
	return r;
}

struct droce_cq *
droce_cq_create(uint32_t cqe, droce_cq_notify_fn notify, droce_cq_error_fn error, void *arg)
{
	return droce_cq_create_ex(cqe, notify, error, arg, 0);
}

struct droce_cq *
droce_cq_create_ex(uint32_t cqe, droce_cq_notify_fn notify, droce_cq_error_fn error, void *arg,
		   uint32_t flags)
{
	struct droce_cq *cq;
	unsigned int n = droce_engine_count();
	unsigned int serial = atomic_fetch_add(&cq_serial, 1);
	bool ts = (flags & DROCE_CQ_TIMESTAMP) != 0;

	if (cqe == 0 || cqe > DROCE_DP_MAX_CQE || n == 0 || (flags & ~(uint32_t)DROCE_CQ_TIMESTAMP)) {
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
	cq->timestamp = ts;
	pthread_mutex_init(&cq->resize_lock, NULL);
	for (unsigned int e = 0; e < n; e++) {
		char name[RTE_RING_NAMESIZE];

		/*
		 * Each engine may fill the whole CQ: one sub-ring of exactly cqe
		 * entries each (the engine's overrun starts at cqe + 1).  One
		 * producer, the engine; any number of consumers (multi-consumer
		 * dequeue: one CAS per non-empty burst, no lock).
		 */
		snprintf(name, sizeof(name), "dcq%u_%u", serial, e);
		cq->sub[e] = sub_ring_create(name, cqe_size(cq), cqe);
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
	if (atomic_exchange(&cq->armed, ARM_NONE) != ARM_NONE)
		atomic_fetch_sub_explicit(&droce_cqs_armed, 1, memory_order_relaxed);
	for (unsigned int e = 0; e < cq->n_sub; e++)
		free(cq->sub[e]);
	while (cq->retired != NULL) {
		struct retired_ring *r = cq->retired;

		cq->retired = r->next;
		free(r->r);
		free(r);
	}
	pthread_mutex_destroy(&cq->resize_lock);
	free(cq);
}

uint32_t
droce_cq_capacity(const struct droce_cq *cq)
{
	return cq->cap;
}

/*
 * The sub-rings' two hot operations, the engine's push and a poller's take,
 * on the rte_ring itself through its own protocol (rte_ring_core.h: the
 * producer's head and tail, one producer; the consumers' head moved by CAS,
 * their tail published in order), as rte_ring_sp_enqueue_elem and
 * rte_ring_mc_dequeue_burst_elem do it, so that the other users of the same
 * ring (resize, clean, the counts, the announcements) see no difference.
 * What differs is the copy: rte_ring copies an element that is neither 8
 * nor 16 bytes four bytes at a time (a loop and a jump table: about 60
 * instructions for a 48-byte droce_cqe, each way); here @esize is a
 * constant where these are inlined, and an element is copied whole (three
 * 16-byte moves for a droce_cqe).  Element i of a ring made with
 * rte_ring_init for @esize-byte elements is at &r[1] + (i & mask) * esize.
 */
static __rte_always_inline void *
ring_elem(struct rte_ring *r, uint32_t pos, size_t esize)
{
	return (uint8_t *)&r[1] + (size_t)(pos & r->mask) * esize;
}

/* The engine's push of one element: false when the ring is full. */
static __rte_always_inline bool
ring_put(struct rte_ring *r, const void *e, size_t esize)
{
	uint32_t head = r->prod.head;
	uint32_t cons = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);

	if (r->capacity + cons - head == 0)
		return false;
	memcpy(ring_elem(r, head, esize), e, esize);
	r->prod.head = head + 1;
	__atomic_store_n(&r->prod.tail, head + 1, __ATOMIC_RELEASE); /* after the copy */
	return true;
}

/* A poller's take of up to @n elements (any number of pollers at once). */
static __rte_always_inline unsigned int
ring_take(struct rte_ring *r, void *out, size_t esize, unsigned int n)
{
	uint32_t head = __atomic_load_n(&r->cons.head, __ATOMIC_RELAXED), k;

	do {
		__atomic_thread_fence(__ATOMIC_ACQUIRE); /* the head before the tail */
		k = RTE_MIN(__atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE) - head, n);
		if (k == 0)
			return 0;
	} while (!__atomic_compare_exchange_n(&r->cons.head, &head, head + k, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	for (unsigned int i = 0; i < k; i++)
		memcpy((uint8_t *)out + i * esize, ring_elem(r, head + i, esize), esize);
	/* pollers that took before us publish first; then ours, after the copies */
	while (__atomic_load_n(&r->cons.tail, __ATOMIC_RELAXED) != head)
		rte_pause();
	__atomic_store_n(&r->cons.tail, head + k, __ATOMIC_RELEASE);
	return k;
}

/* Up to @n elements of @size bytes from the sub-rings, starting at @first
 * (every poller starts at another one) and going round once. */
static __rte_always_inline int
sub_rings_burst(struct droce_cq *cq, unsigned int first, void *out, size_t size, int n)
{
	int got = 0;

	for (unsigned int k = 0; k < cq->n_sub && got < n; k++) {
		unsigned int e = (first + k) % cq->n_sub;

		got += (int)ring_take(sub_of(cq, e), (uint8_t *)out + (size_t)got * size, size,
				      (unsigned int)(n - got));
	}
	return got;
}

/* droce_cq_poll() on a timestamped CQ: the timestamps are dropped. */
static int
poll_drop_ts(struct droce_cq *cq, int n, struct droce_cqe *out)
{
	struct droce_cqe_ts tmp[16];
	int got = 0;

	while (got < n) {
		int k = droce_cq_poll_ts(cq, RTE_MIN(n - got, (int)RTE_DIM(tmp)), tmp, got == 0);

		for (int i = 0; i < k; i++)
			out[got + i] = tmp[i].cqe;
		got += k;
		if (k == 0)
			break;
	}
	return got;
}

int
droce_cq_poll_ts(struct droce_cq *cq, int n, struct droce_cqe_ts *out, bool progress)
{
	unsigned int first;
	int got = 0;

	if (n <= 0)
		return 0;
	if (progress)
		droce_engines_progress();
	first = cq->n_sub == 1 ? 0 : atomic_fetch_add_explicit(&cq->next_sub, 1, memory_order_relaxed);
	if (!cq->timestamp) {
		/* one at a time: the elements are bare struct droce_cqe */
		for (unsigned int k = 0; k < cq->n_sub && got < n; k++) {
			unsigned int e = (first + k) % cq->n_sub;

			while (got < n && ring_take(sub_of(cq, e), &out[got].cqe, sizeof(struct droce_cqe), 1))
				out[got++].tsc = 0;
		}
	} else {
		got = sub_rings_burst(cq, first, out, sizeof(*out), n);
	}
	return got;
}

/* droce_cq_poll() on a CQ of several sub-rings, out of line: the one-ring
 * poll (a single engine) keeps a short prologue. */
static __attribute__((noinline)) int
poll_subs(struct droce_cq *cq, int n, struct droce_cqe *out)
{
	unsigned int first = atomic_fetch_add_explicit(&cq->next_sub, 1, memory_order_relaxed);

	return sub_rings_burst(cq, first, out, sizeof(*out), n);
}

int
droce_cq_poll(struct droce_cq *cq, int n, struct droce_cqe *out)
{
	if (n <= 0)
		return 0;
	if (cq->timestamp)
		return poll_drop_ts(cq, n, out);
	/* co-located: a pass of every engine nobody else is driving (any engine may
	 * produce into this CQ); one being driven elsewhere is skipped, not waited for */
	droce_engines_progress();
	if (cq->n_sub == 1)
		return (int)ring_take(sub_of(cq, 0), out, sizeof(*out), (unsigned int)n);
	return poll_subs(cq, n, out);
}

/* ---- resize ---- */

/* Engine side of a resize (DROCE_MSG_CQ_SWAP): moves this engine's
 * completions, oldest first, from its sub-ring into @s->ring and publishes
 * that; refused (nothing moved) when they do not fit. */
void
droce_cq_swap_lc(struct droce_engine *eng, struct droce_cq_swap *s)
{
	struct droce_cq *cq = s->cq;
	struct rte_ring *old = cq->sub[eng->id];
	unsigned int esize = cqe_size(cq);
	uint8_t buf[sizeof(struct droce_cqe_ts)];

	if (rte_ring_count(old) > rte_ring_get_capacity(s->ring)) {
		atomic_store_explicit(&s->state, DROCE_CQ_SWAP_REFUSED, memory_order_release);
		return;
	}
	/* pollers may take some of them meanwhile (multi-consumer): those are
	 * the oldest, and none is taken twice */
	while (rte_ring_mc_dequeue_elem(old, buf, esize) == 0)
		rte_ring_sp_enqueue_elem(s->ring, buf, esize); /* fits: checked above */
	__atomic_store_n(&cq->sub[eng->id], s->ring, __ATOMIC_RELEASE);
	s->ring = old;
	atomic_store_explicit(&s->state, DROCE_CQ_SWAP_DONE, memory_order_release);
}

/* Gives engine @e the sub-ring @r through this thread's channel and waits
 * for its answer; on DONE, *@r is the ring it replaced. */
static enum droce_cq_swap_state
swap_on_engine(struct droce_cq *cq, unsigned int e, struct rte_ring **r)
{
	struct droce_cq_swap s = { .cq = cq, .ring = *r, .state = DROCE_CQ_SWAP_PENDING };
	struct droce_msg m = { .type = DROCE_MSG_CQ_SWAP, .ptr = &s };
	enum droce_cq_swap_state st;

	if (droce_engine_send_msg(droce_engine_get(e), &m) != 0)
		return DROCE_CQ_SWAP_REFUSED;
	while ((st = atomic_load_explicit(&s.state, memory_order_acquire)) == DROCE_CQ_SWAP_PENDING) {
		droce_engines_progress(); /* co-located: drive it ourselves */
		sched_yield();
	}
	*r = s.ring;
	return st;
}

static void
retire_ring(struct droce_cq *cq, struct rte_ring *r)
{
	struct retired_ring *n = malloc(sizeof(*n));

	if (n == NULL)
		return; /* leaked rather than freed under a poller */
	n->r = r;
	n->next = cq->retired;
	cq->retired = n;
}

int
droce_cq_resize(struct droce_cq *cq, uint32_t cqe)
{
	static _Atomic unsigned int resize_serial;
	struct rte_ring *ring[DROCE_MAX_ENGINES] = { 0 };
	unsigned int serial = atomic_fetch_add(&resize_serial, 1), done = 0;
	uint32_t outstanding = 0;
	int rc = 0;

	if (cqe == 0 || cqe > DROCE_DP_MAX_CQE)
		return EINVAL;
	pthread_mutex_lock(&cq->resize_lock);
	/* what was posted before the call completes first, as on a NIC, where
	 * it is done by the time the command runs (rxe counts its queue then) */
	droce_engines_barrier();
	for (unsigned int e = 0; e < cq->n_sub; e++)
		outstanding += rte_ring_count(sub_of(cq, e));
	if (outstanding > cqe) {
		rc = EINVAL; /* the completions not yet polled would not fit */
		goto out;
	}
	for (unsigned int e = 0; e < cq->n_sub && rc == 0; e++) {
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "dcqr%u_%u", serial, e);
		ring[e] = sub_ring_create(name, cqe_size(cq), cqe);
		if (ring[e] == NULL)
			rc = ENOMEM;
	}
	/* each engine in turn; one that finds more completions than fit
	 * (produced since the count above) refuses, and those already moved
	 * go back to their old rings, which are larger (only a shrink fails) */
	for (; done < cq->n_sub && rc == 0; done++)
		if (swap_on_engine(cq, done, &ring[done]) != DROCE_CQ_SWAP_DONE)
			rc = EINVAL;
	if (rc != 0)
		for (unsigned int e = 0; e + 1 < done; e++)
			swap_on_engine(cq, e, &ring[e]);
	if (rc == 0) {
		for (unsigned int e = 0; e < cq->n_sub; e++)
			retire_ring(cq, ring[e]); /* the old ones now */
		cq->cap = cqe;
	} else {
		/* the new rings: those an engine published and took back may
		 * still be held by a poller (kept), the others were never seen */
		for (unsigned int e = 0; e < cq->n_sub; e++)
			if (e + 1 < done)
				retire_ring(cq, ring[e]);
			else
				free(ring[e]);
	}
out:
	pthread_mutex_unlock(&cq->resize_lock);
	return rc;
}

/*
 * The completions of a QP moved to RESET leave its CQs, as rdma-core's
 * providers do it at the modify (mlx5_cq_clean, mlx4_cq_clean: a program
 * that resets a QP after an error and uses it again does not poll the old
 * connection's flushes).  The engine, the sub-ring's only producer, takes
 * every completion it holds (pollers may take some of the oldest
 * meanwhile, multi-consumer) and puts back the other QPs' in order: until
 * then a poller finds the sub-ring empty, then the same completions in the
 * same order.  Not the fast path: a RESET.  Without memory for the copy,
 * nothing is removed.
 */
void
droce_cq_clean_lc(struct droce_cq *cq, struct droce_engine *eng, uint32_t qpn)
{
	struct rte_ring *r = cq->sub[eng->id];
	unsigned int esize = cqe_size(cq), n = rte_ring_count(r), got, kept = 0;
	uint8_t *buf;

	if (n == 0)
		return;
	buf = malloc((size_t)n * esize);
	if (buf == NULL)
		return;
	got = rte_ring_mc_dequeue_burst_elem(r, buf, esize, n, NULL);
	for (unsigned int i = 0; i < got; i++) {
		uint8_t *e = buf + (size_t)i * esize;
		const struct droce_cqe *c = (const struct droce_cqe *)e; /* first in both layouts */

		if (c->qp_num == qpn)
			continue;
		rte_ring_sp_enqueue_elem(r, e, esize); /* fits: it held them */
		kept++;
	}
	eng->stats.cqe_cleaned += got - kept;
	free(buf);
}

/* An event goes out now: every completion the CQ holds is announced by it.
 * Only on an event's path (never per completion): the producer counts the
 * sub-rings keep anyway. */
static void
cq_announce(struct droce_cq *cq)
{
	for (unsigned int e = 0; e < cq->n_sub; e++) {
		struct rte_ring *r = sub_of(cq, e);

		atomic_store_explicit(&cq->ann[e].ring, r, memory_order_relaxed);
		atomic_store_explicit(&cq->ann[e].tail, __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE),
				      memory_order_relaxed);
	}
}

/* True if the CQ holds a completion no event announced: one pushed while
 * the CQ was not armed (and not polled since).  A sub-ring a resize replaced
 * counts as unannounced (an event too many, never one too few). */
static bool
cq_unannounced(struct droce_cq *cq)
{
	for (unsigned int e = 0; e < cq->n_sub; e++) {
		struct rte_ring *r = sub_of(cq, e);
		uint32_t prod = __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE);
		uint32_t from = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);
		uint32_t ann = atomic_load_explicit(&cq->ann[e].tail, memory_order_relaxed);

		if (prod == from)
			continue; /* empty */
		if (atomic_load_explicit(&cq->ann[e].ring, memory_order_relaxed) != r)
			return true;
		if ((int32_t)(ann - from) > 0)
			from = ann;
		if ((int32_t)(prod - from) > 0)
			return true;
	}
	return false;
}

/*
 * Armed for the next completion; and, as mlx5 (whose arm doorbell carries the
 * consumer index: a CQE already past it raises the event at once), a CQ armed
 * for any completion while it holds one that no event announced fires now:
 * 1, the arm is used up and the caller delivers the event (no notify is
 * called).  UCX arms an idle interface's CQs right after polling them empty
 * and then waits on the channel's fd; a completion pushed in between made no
 * event and would sleep until the next one.  A completion an event did
 * announce does not fire again: perftest's `-e` takes the event, acks and
 * re-arms before it polls (ctx_notify_events), and an event at that arm
 * would wake its next wait before the next completion, whose poll then finds
 * nothing and leaves the one-deep send queue full (rxe, following the IBTA,
 * never fires at the arm).  Against a push that reads `armed` before this
 * store is visible while its own enqueue is not yet visible here, the push
 * fences (once the CQ was ever armed): one of the two sees the other.
 */
int
droce_cq_arm(struct droce_cq *cq, bool solicited_only)
{
	int armed = solicited_only ? ARM_SOLICITED : ARM_ANY;

	if (!atomic_load_explicit(&cq->events, memory_order_relaxed))
		atomic_store(&cq->events, true);
	if (atomic_exchange(&cq->armed, armed) == ARM_NONE) /* seq_cst, as a store */
		atomic_fetch_add_explicit(&droce_cqs_armed, 1, memory_order_relaxed);
	if (solicited_only || !cq_unannounced(cq))
		return 0;
	/* an engine's push may have taken the arm meanwhile: it notified */
	if (!atomic_compare_exchange_strong(&cq->armed, &armed, ARM_NONE))
		return 0;
	atomic_fetch_sub_explicit(&droce_cqs_armed, 1, memory_order_relaxed);
	cq_announce(cq);
	return 1;
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
	bool ok;

	if (cq->timestamp) {
		struct droce_cqe_ts t = { .cqe = *cqe, .tsc = rte_rdtsc() };

		ok = ring_put(cq->sub[eng->id], &t, sizeof(t));
	} else {
		ok = ring_put(cq->sub[eng->id], cqe, sizeof(*cqe));
	}
	if (!ok) {
		eng->stats.cqe_overflows++;
		if (atomic_fetch_add(&cq->overflows, 1) == 0 && cq->error)
			cq->error(cq, cq->arg);
		return false;
	}
	if (unlikely(atomic_load_explicit(&cq->events, memory_order_relaxed)))
		atomic_thread_fence(memory_order_seq_cst); /* see droce_cq_arm */
	armed = atomic_load_explicit(&cq->armed, memory_order_relaxed);
	if (armed == ARM_NONE)
		return true;
	if (armed == ARM_SOLICITED && !solicited && cqe->status == DROCE_WC_SUCCESS)
		return true;
	if (atomic_compare_exchange_strong(&cq->armed, &armed, ARM_NONE)) {
		atomic_fetch_sub_explicit(&droce_cqs_armed, 1, memory_order_relaxed);
		cq_announce(cq);
		if (cq->notify)
			cq->notify(cq, cq->arg);
	}
	return true;
}
