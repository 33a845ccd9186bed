/* SPDX-License-Identifier: BSD-3-Clause
 * Async events: ibv_get_async_event / ibv_ack_async_event.
 *
 * Every context has a pipe.  Producers write fixed-size records into its
 * non-blocking write end (struct droce_vevent: an object serial and an
 * enum ibv_event_type), nothing else:
 *  - engines, through the callbacks registered at create: CQ overflow
 *    (cq.c), QP fatal and last WQE reached (droce_verbs_qp_event), SRQ limit
 *    reached (droce_verbs_srq_limit);
 *  - the port monitor, a thread that runs while any context is open and
 *    every MONITOR_MS (MONITOR_IDLE_MS once all was up and quiet for
 *    MONITOR_QUIET_MS) compares each context's port link state (the PMD's,
 *    and droce_port_set_link's cut) with the last one it reported, and
 *    writes PORT_ACTIVE / PORT_ERR on a change.  A thread rather than the
 *    engines so that co-located engines nobody drives, and applications
 *    that poll() the async fd, still see port events.  It also makes a
 *    memif client whose server went away dial again (redial_down_ports),
 *    and sends the IGMP / MLD reports due again (droce_mcast_tick) and the
 *    unsolicited NA of a port whose link came up late (droce_dp_nd_tick).
 * ibv_get_async_event() reads a record and finds the object by serial in the
 * context's lists (under the context lock), so a record left by a destroyed
 * object is skipped, never dereferenced.  Destroying a CQ, QP or SRQ unlinks
 * it first and then waits until every event handed out for it was acked, as
 * rdma-core documents.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>

#include <droce/config.h>

#include "pmd_glue/port.h"
#include "pmd_glue/redial.h"
#include "fork.h"
#include "internal.h"

/* dataplane/engine.c (declared in dataplane/internal.h, not in dp.h). */
void droce_dp_synchronize(void);

#define MONITOR_MS 5         /* the look's period while something changes */
#define MONITOR_IDLE_MS 50   /* ... and once every port was up and unchanged for */
#define MONITOR_QUIET_MS 1000 /* this long (an idle process: 20 wake-ups a second, not 200) */

#define SAME(d, i) static_assert((int)(d) == (int)(i), #d " == " #i)
SAME(DROCE_QP_EV_FATAL, IBV_EVENT_QP_FATAL);
SAME(DROCE_QP_EV_LAST_WQE, IBV_EVENT_QP_LAST_WQE_REACHED);
#undef SAME

static atomic_uint_fast64_t next_serial = 1;

uint64_t
droce_verbs_serial(void)
{
	return atomic_fetch_add(&next_serial, 1);
}

/*
 * write() from an engine callback: the thread may be driving an engine, so
 * it must not be cancelled here (pthread_cancel), or the engine stays
 * taken for ever (issue 28 §3); write() is a cancellation point.
 */
static ssize_t
write_nocancel(int fd, const void *buf, size_t n)
{
	int old;
	ssize_t w;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	w = write(fd, buf, n);
	pthread_setcancelstate(old, NULL);
	return w;
}

static void
put(struct droce_vctx *x, uint64_t serial, enum ibv_event_type type)
{
	struct droce_vevent rec = { .serial = serial, .type = (uint32_t)type };
	ssize_t n = write_nocancel(x->async_wfd, &rec, sizeof(rec));

	RTE_SET_USED(n); /* a full pipe (4096 unread events) loses the event */
}

/* ---- engine callbacks: one write to a non-blocking pipe ---- */

void
droce_verbs_qp_event(struct droce_qp *dqp, enum droce_qp_event ev, void *arg)
{
	struct droce_vqp *q = arg;

	RTE_SET_USED(dqp);
	put(droce_vctx_of(q->qp.context), q->serial, (enum ibv_event_type)ev);
}

void
droce_verbs_srq_limit(struct droce_srq *dsrq, void *arg)
{
	struct droce_vsrq *s = arg;

	RTE_SET_USED(dsrq);
	put(droce_vctx_of(s->srq.context), s->serial, IBV_EVENT_SRQ_LIMIT_REACHED);
}

/* ---- port monitor ---- */

struct monitor {
	pthread_t tid;
	bool stop; /* under mon_lock */
};

static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mon_cond = PTHREAD_COND_INITIALIZER;
static TAILQ_HEAD(, droce_vctx) mon_ctxs = TAILQ_HEAD_INITIALIZER(mon_ctxs);
static struct monitor *mon; /* running monitor, or NULL */

bool
droce_verbs_port_is_up(unsigned int port)
{
	struct droce_port *p = droce_port_get(port);

	return p != NULL && droce_port_link_up(p) && droce_port_link_is_set_up(p);
}

/*
 * A memif client whose server went away dials again (droce_port_redial)
 * once its link was down for REDIAL_MS, then every REDIAL_MS while a server
 * listens and the link stays down: a new server process with the same
 * config finds its clients back.  Outside mon_lock: a redial waits for the
 * engines and the EAL interrupt thread.
 */
#define REDIAL_MS 1000

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
redial_down_ports(uint32_t down_mask)
{
	static uint64_t since[DROCE_MAX_PORTS]; /* link seen down since; 0: up */
	uint64_t now = mono_ms();
	struct droce_port *dport;
	unsigned int i;

	for (i = 0; i < DROCE_MAX_PORTS; i++) {
		if (!(down_mask & 1u << i)) {
			since[i] = 0;
			continue;
		}
		if (since[i] == 0) {
			since[i] = now;
			continue;
		}
		if (now - since[i] < REDIAL_MS)
			continue;
		dport = droce_port_get(i); /* NULL once droce stopped */
		if (dport == NULL)
			continue;
		if (droce_port_redial(dport, droce_dp_synchronize) != 0)
			since[i] = mono_ms(); /* give the handshake REDIAL_MS */
	}
}

static void *
monitor_main(void *arg)
{
	struct monitor *m = arg;
	uint64_t quiet_since = mono_ms();

	pthread_mutex_lock(&mon_lock);
	while (!m->stop) {
		struct droce_vctx *x;
		struct timespec ts;
		uint32_t down = 0;
		bool changed = false;
		long period_ms;

		TAILQ_FOREACH(x, &mon_ctxs, mon_link) {
			int up = droce_verbs_port_is_up(x->port);
			const struct droce_port *dport;

			if (up != x->port_up) {
				x->port_up = up;
				put(x, 0, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
				changed = true;
			}
			changed |= !up;
			/* droce stopped with this context still open: no port table */
			dport = x->port < DROCE_MAX_PORTS ? droce_port_get(x->port) : NULL;
			if (!up && dport != NULL && droce_port_link_is_set_up(dport))
				down |= 1u << x->port;
		}
		pthread_mutex_unlock(&mon_lock);
		redial_down_ports(down);
		droce_mcast_tick(); /* IGMP / MLD reports due again */
		droce_dp_nd_tick(); /* an unsolicited NA waiting for its link */
		pthread_mutex_lock(&mon_lock);
		if (m->stop)
			break;
		/* quiet (every port up, nothing reported) for MONITOR_QUIET_MS: a
		 * link change is seen up to MONITOR_IDLE_MS late, reports due go out
		 * that late at most */
		if (changed)
			quiet_since = mono_ms();
		period_ms = mono_ms() - quiet_since >= MONITOR_QUIET_MS ? MONITOR_IDLE_MS : MONITOR_MS;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += period_ms * 1000000L;
		while (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&mon_cond, &mon_lock, &ts);
	}
	pthread_mutex_unlock(&mon_lock);
	return NULL;
}

int
droce_verbs_qp_walk(int (*fn)(struct droce_vqp *q, void *arg), void *arg)
{
	struct droce_vctx *x;
	int rc = 0;

	pthread_mutex_lock(&mon_lock);
	TAILQ_FOREACH(x, &mon_ctxs, mon_link) {
		struct droce_vqp *q;

		pthread_mutex_lock(&x->lock);
		TAILQ_FOREACH(q, &x->qps, ctx_link) {
			/* ibv_open_qp handles stand for a QP listed on its own */
			if (!q->dying && q->real == NULL && (rc = fn(q, arg)) != 0)
				break;
		}
		pthread_mutex_unlock(&x->lock);
		if (rc != 0)
			break;
	}
	pthread_mutex_unlock(&mon_lock);
	return rc;
}

int
droce_verbs_events_open(struct droce_vctx *x)
{
	int rc = 0;

	TAILQ_INIT(&x->qps);
	TAILQ_INIT(&x->srqs);
	pthread_mutex_lock(&mon_lock);
	x->port_up = droce_verbs_port_is_up(x->port);
	if (mon == NULL) {
		struct monitor *m = calloc(1, sizeof(*m));

		rc = m == NULL ? ENOMEM : pthread_create(&m->tid, NULL, monitor_main, m);
		if (rc == 0) {
			pthread_setname_np(m->tid, "droce-ports");
			mon = m;
		} else {
			free(m);
		}
	}
	if (rc == 0)
		TAILQ_INSERT_TAIL(&mon_ctxs, x, mon_link);
	pthread_mutex_unlock(&mon_lock);
	return rc;
}

void
droce_verbs_events_close(struct droce_vctx *x)
{
	struct monitor *m = NULL;

	pthread_mutex_lock(&mon_lock);
	TAILQ_REMOVE(&mon_ctxs, x, mon_link);
	if (TAILQ_EMPTY(&mon_ctxs) && mon != NULL) {
		m = mon;
		m->stop = true;
		mon = NULL;
		pthread_cond_broadcast(&mon_cond);
	}
	pthread_mutex_unlock(&mon_lock);
	if (m != NULL) {
		pthread_join(m->tid, NULL);
		free(m);
	}
}

/* ---- QPs ---- */

void
droce_verbs_qp_events_drain(struct droce_vqp *q)
{
	struct droce_vctx *x = droce_vctx_of(q->qp.context);
	uint32_t reported;

	pthread_mutex_lock(&x->lock);
	TAILQ_REMOVE(&x->qps, q, ctx_link);
	reported = q->async_reported;
	pthread_mutex_unlock(&x->lock);
	pthread_mutex_lock(&q->qp.mutex);
	while (q->qp.events_completed != reported)
		pthread_cond_wait(&q->qp.cond, &q->qp.mutex);
	pthread_mutex_unlock(&q->qp.mutex);
}

/* ---- the application side ---- */

static bool
is_qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

/* Fills @event for record @rec; false when its object is gone. Under x->lock. */
static bool
resolve(struct droce_vctx *x, const struct droce_vevent *rec, struct ibv_async_event *event)
{
	enum ibv_event_type t = (enum ibv_event_type)rec->type;

	memset(event, 0, sizeof(*event));
	event->event_type = t;
	if (t == IBV_EVENT_CQ_ERR) {
		struct droce_vcq *cq;

		TAILQ_FOREACH(cq, &x->cqs, ctx_link)
			if (cq->serial == rec->serial) {
				cq->async_reported++;
				event->element.cq = &cq->cq;
				return true;
			}
		return false;
	}
	if (is_qp_event(t)) {
		struct droce_vqp *q;

		TAILQ_FOREACH(q, &x->qps, ctx_link)
			if (q->serial == rec->serial) {
				q->async_reported++;
				event->element.qp = &q->qp;
				return true;
			}
		return false;
	}
	if (t == IBV_EVENT_SRQ_LIMIT_REACHED || t == IBV_EVENT_SRQ_ERR) {
		struct droce_vsrq *s;

		TAILQ_FOREACH(s, &x->srqs, ctx_link)
			if (s->serial == rec->serial) {
				s->async_reported++;
				event->element.srq = &s->srq;
				return true;
			}
		return false;
	}
	event->element.port_num = DROCE_VERBS_PORT_NUM;
	return true;
}

int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	if (droce_fk_ctx(context))
		return droce_fk_get_async_event(context, event);
	struct droce_vctx *x = droce_vctx_of(context);

	for (;;) {
		struct droce_vevent rec;
		ssize_t n;
		bool found;

		droce_engines_blocking();
		n = read(context->async_fd, &rec, sizeof(rec));

		if (n < 0)
			return -1;
		if (n != sizeof(rec)) {
			errno = EIO;
			return -1;
		}
		pthread_mutex_lock(&x->lock);
		found = resolve(x, &rec, event);
		pthread_mutex_unlock(&x->lock);
		if (found)
			return 0;
		/* its object was destroyed meanwhile */
	}
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	enum ibv_event_type t = event->event_type;

	if (t == IBV_EVENT_CQ_ERR) {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_broadcast(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
	} else if (is_qp_event(t)) {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_broadcast(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
	} else if (t == IBV_EVENT_SRQ_LIMIT_REACHED || t == IBV_EVENT_SRQ_ERR) {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_broadcast(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
	}
}
