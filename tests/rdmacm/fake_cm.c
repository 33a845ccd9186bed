/* SPDX-License-Identifier: BSD-3-Clause
 * A test double of verbs_api/cm.h for the rdmacm_fakecm suite: the IB CM's
 * semantics between the two ends of a connection in one process, with no
 * MADs on the wire.  It lets the rdma_cm layer's tests run without the
 * real CM (cm_*.c); the same tests run against the real one through
 * libdroce in the rdmacm suite.  Events are delivered one at a time by a
 * service thread, with no lock held, as cm.h promises.  Private data is
 * padded to each message's full IBTA size, as on the wire.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "verbs_api/cm.h"

struct droce_cm_conn {
	struct droce_cm_conn *peer;
	droce_cm_handler_fn handler;
	void *ctx;
	bool released;
	bool established;
};

struct droce_cm_listener {
	uint64_t sid;
	droce_cm_handler_fn handler;
	void *ctx;
	bool gone;
};

struct qev {
	struct droce_cm_event ev;
	struct droce_cm_conn *to;       /* NULL: to the listener */
	struct droce_cm_listener *l;
	uint8_t pd[256];
	TAILQ_ENTRY(qev) link;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static TAILQ_HEAD(, qev) q = TAILQ_HEAD_INITIALIZER(q);
static struct droce_cm_listener *listeners[64];
static bool started;
static void *delivering; /* conn or listener being delivered to */
static pthread_t thr;

static void *
service(void *arg)
{
	pthread_mutex_lock(&lock);
	for (;;) {
		struct qev *e;

		while ((e = TAILQ_FIRST(&q)) == NULL)
			pthread_cond_wait(&cond, &lock);
		TAILQ_REMOVE(&q, e, link);
		if (e->to ? e->to->released : e->l->gone) {
			free(e);
			continue;
		}
		delivering = e->to ? (void *)e->to : (void *)e->l;
		e->ev.ctx = e->to ? e->to->ctx : e->l->ctx;
		{
			droce_cm_handler_fn h = e->to ? e->to->handler : e->l->handler;

			pthread_mutex_unlock(&lock);
			h(&e->ev);
			pthread_mutex_lock(&lock);
		}
		delivering = NULL;
		pthread_cond_broadcast(&cond);
		free(e);
	}
	return NULL;
}

static void
post(struct droce_cm_conn *to, struct droce_cm_listener *l, enum droce_cm_event_type t,
     const void *pd, uint8_t len, size_t full, struct qev **out)
{
	struct qev *e = calloc(1, sizeof(*e));

	e->to = to;
	e->l = l;
	e->ev.type = t;
	e->ev.conn = to;
	if (pd && len)
		memcpy(e->pd, pd, len);
	e->ev.private_data = full ? e->pd : NULL;
	e->ev.private_data_len = (uint8_t)full;
	if (out)
		*out = e;
	else
		TAILQ_INSERT_TAIL(&q, e, link);
	pthread_cond_broadcast(&cond);
}

static void
enqueue(struct qev *e)
{
	TAILQ_INSERT_TAIL(&q, e, link);
	pthread_cond_broadcast(&cond);
}

int
droce_cm_start(void)
{
	pthread_mutex_lock(&lock);
	if (!started) {
		pthread_create(&thr, NULL, service, NULL);
		started = true;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

void
droce_cm_stop(void)
{
}

int
droce_cm_listen(uint64_t sid, droce_cm_handler_fn handler, void *ctx,
		struct droce_cm_listener **out)
{
	int rc = -1;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < 64; i++)
		if (listeners[i] && listeners[i]->sid == sid) {
			errno = EADDRINUSE;
			goto out;
		}
	for (int i = 0; i < 64; i++) {
		if (listeners[i] == NULL) {
			listeners[i] = calloc(1, sizeof(**out));
			listeners[i]->sid = sid;
			listeners[i]->handler = handler;
			listeners[i]->ctx = ctx;
			*out = listeners[i];
			rc = 0;
			break;
		}
	}
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

void
droce_cm_unlisten(struct droce_cm_listener *l)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 64; i++)
		if (listeners[i] == l)
			listeners[i] = NULL;
	l->gone = true;
	while (delivering == l)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

static struct droce_cm_listener *
find(uint64_t sid)
{
	for (int i = 0; i < 64; i++)
		if (listeners[i] && listeners[i]->sid == sid)
			return listeners[i];
	return NULL;
}

/* The passive side's view of the addresses. */
static void
flip(const struct droce_cm_addr *a, struct droce_cm_addr *b)
{
	*b = *a;
	memcpy(b->sgid, a->dgid, 16);
	memcpy(b->dgid, a->sgid, 16);
	for (unsigned int i = 0; i < droce_port_count(); i++)
		if (droce_port_find_gid(droce_port_get(i), a->dgid) >= 0)
			b->port = i;
}

int
droce_cm_connect(const struct droce_cm_req *req, droce_cm_handler_fn handler, void *ctx,
		 struct droce_cm_conn **out)
{
	struct droce_cm_conn *a = calloc(1, sizeof(*a));
	struct droce_cm_listener *l;

	a->handler = handler;
	a->ctx = ctx;
	*out = a;
	pthread_mutex_lock(&lock);
	l = find(req->service_id);
	if (l == NULL) {
		struct qev *e;

		post(a, NULL, DROCE_CM_EV_REJ, NULL, 0, DROCE_CM_REJ_PDATA, &e);
		e->ev.u.rej.reason = DROCE_CM_REJ_INVALID_SERVICE_ID;
		enqueue(e);
	} else {
		struct droce_cm_conn *b = calloc(1, sizeof(*b));
		struct qev *e;

		a->peer = b;
		b->peer = a;
		b->handler = l->handler;
		b->ctx = l->ctx;
		post(b, l, DROCE_CM_EV_REQ, req->private_data, req->private_data_len,
		     DROCE_CM_REQ_PDATA, &e);
		e->to = NULL; /* the listener's handler gets it */
		e->ev.conn = b;
		e->ev.u.req = *req;
		flip(&req->addr, &e->ev.u.req.addr);
		e->ev.u.req.private_data = e->pd;
		e->ev.u.req.private_data_len = DROCE_CM_REQ_PDATA;
		enqueue(e);
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

void
droce_cm_conn_set_handler(struct droce_cm_conn *c, droce_cm_handler_fn handler, void *ctx)
{
	pthread_mutex_lock(&lock);
	c->handler = handler;
	c->ctx = ctx;
	pthread_mutex_unlock(&lock);
}

int
droce_cm_accept(struct droce_cm_conn *c, const struct droce_cm_rep *rep)
{
	struct qev *e;

	pthread_mutex_lock(&lock);
	post(c->peer, NULL, DROCE_CM_EV_REP, rep->private_data, rep->private_data_len,
	     DROCE_CM_REP_PDATA, &e);
	e->ev.u.rep = *rep;
	e->ev.u.rep.private_data = e->pd;
	e->ev.u.rep.private_data_len = DROCE_CM_REP_PDATA;
	enqueue(e);
	pthread_mutex_unlock(&lock);
	return 0;
}

int
droce_cm_reject(struct droce_cm_conn *c, uint16_t reason, const void *pd, uint8_t len)
{
	struct qev *e;

	pthread_mutex_lock(&lock);
	if (c->peer) {
		post(c->peer, NULL, DROCE_CM_EV_REJ, pd, len, DROCE_CM_REJ_PDATA, &e);
		e->ev.u.rej.reason = reason;
		enqueue(e);
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

int
droce_cm_rtu(struct droce_cm_conn *c, const void *pd, uint8_t len)
{
	pthread_mutex_lock(&lock);
	c->established = true;
	post(c->peer, NULL, DROCE_CM_EV_RTU, pd, len, DROCE_CM_RTU_PDATA, NULL);
	pthread_mutex_unlock(&lock);
	return 0;
}

int
droce_cm_establish(struct droce_cm_conn *c)
{
	return 0;
}

int
droce_cm_disconnect(struct droce_cm_conn *c, const void *pd, uint8_t len)
{
	pthread_mutex_lock(&lock);
	post(c->peer, NULL, DROCE_CM_EV_DREQ, pd, len, DROCE_CM_DREQ_PDATA, NULL);
	pthread_mutex_unlock(&lock);
	return 0;
}

int
droce_cm_drep(struct droce_cm_conn *c, const void *pd, uint8_t len)
{
	pthread_mutex_lock(&lock);
	post(c->peer, NULL, DROCE_CM_EV_DREP, pd, len, DROCE_CM_DREP_PDATA, NULL);
	post(c->peer, NULL, DROCE_CM_EV_TIMEWAIT_EXIT, NULL, 0, 0, NULL);
	post(c, NULL, DROCE_CM_EV_TIMEWAIT_EXIT, NULL, 0, 0, NULL);
	pthread_mutex_unlock(&lock);
	return 0;
}

int
droce_cm_sidr_req(const struct droce_cm_sidr_req *req, droce_cm_handler_fn handler, void *ctx,
		  struct droce_cm_conn **out)
{
	struct droce_cm_conn *a = calloc(1, sizeof(*a));
	struct droce_cm_listener *l;
	struct qev *e;

	a->handler = handler;
	a->ctx = ctx;
	*out = a;
	pthread_mutex_lock(&lock);
	l = find(req->service_id);
	if (l == NULL) {
		post(a, NULL, DROCE_CM_EV_SIDR_REP, NULL, 0, DROCE_CM_SIDR_REP_PDATA, &e);
		e->ev.u.sidr_rep.status = DROCE_CM_SIDR_UNSUPPORTED;
		enqueue(e);
	} else {
		struct droce_cm_conn *b = calloc(1, sizeof(*b));

		a->peer = b;
		b->peer = a;
		post(b, l, DROCE_CM_EV_SIDR_REQ, req->private_data, req->private_data_len,
		     DROCE_CM_SIDR_REQ_PDATA, &e);
		e->to = NULL;
		e->ev.conn = b;
		e->ev.u.sidr_req = *req;
		flip(&req->addr, &e->ev.u.sidr_req.addr);
		e->ev.u.sidr_req.private_data = e->pd;
		e->ev.u.sidr_req.private_data_len = DROCE_CM_SIDR_REQ_PDATA;
		enqueue(e);
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

int
droce_cm_sidr_rep(struct droce_cm_conn *c, const struct droce_cm_sidr_rep *rep)
{
	struct qev *e;

	pthread_mutex_lock(&lock);
	post(c->peer, NULL, DROCE_CM_EV_SIDR_REP, rep->private_data, rep->private_data_len,
	     DROCE_CM_SIDR_REP_PDATA, &e);
	e->ev.u.sidr_rep = *rep;
	e->ev.u.sidr_rep.private_data = e->pd;
	e->ev.u.sidr_rep.private_data_len = DROCE_CM_SIDR_REP_PDATA;
	enqueue(e);
	pthread_mutex_unlock(&lock);
	return 0;
}

void
droce_cm_conn_release(struct droce_cm_conn *c)
{
	pthread_mutex_lock(&lock);
	c->released = true;
	while (delivering == c)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

void
droce_cm_stats_get(struct droce_cm_stats *out)
{
	memset(out, 0, sizeof(*out));
}
