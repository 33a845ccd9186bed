/* SPDX-License-Identifier: BSD-3-Clause
 * The InfiniBand Communication Manager over RoCEv2 (IBTA vol. 1 ch. 12),
 * behind verbs_api/cm.h: connections set up and torn down by MADs on QP1
 * (the GSI, a UD QP with Q_Key 0x80010000) of every droce port.
 *
 * Pieces (cm_internal.h holds the types they share):
 *  - GSI I/O (cm_gsi.c, with the timers, the service thread, start and
 *    stop): one UD QP with QPN 1 per port (dp.h's `gsi` QP, on engine 0),
 *    one receive CQ for all of them (wr_id = port << 16 | buffer), sends
 *    inline and unsignaled (a MAD is 256 bytes, the inline limit), each with
 *    its own address handle, freed once the engine is done with it.
 *  - Connections (here, with the API of cm.h; the handlers of received
 *    messages in cm_rx.c): an explicit state enum, one handler per received
 *    message kind, and one timer per connection (resend, time wait, linger).  A
 *    connection remembers the last MAD it sent: a timer resends it, and a
 *    duplicate of the message it answered gets it again (never acted on
 *    twice).
 *  - Events: queued under the CM lock, delivered by the service thread one
 *    at a time with no lock held (cm.h's promise), skipped once the user
 *    released the connection.
 *
 * Threading: cm.lock guards everything here.  API calls (any thread, often
 * with the rdma_cm layer's lock held) take it briefly and never wait for the
 * service thread, except droce_cm_conn_release() / droce_cm_unlisten(),
 * which wait for a handler in progress on that object (cm.h).
 */
#include "cm_internal.h"

RTE_LOG_REGISTER(droce_cm_logtype, droce.cm, NOTICE);

CM_HIDDEN struct cm_global cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.conns = TAILQ_HEAD_INITIALIZER(cm.conns),
	.listeners = TAILQ_HEAD_INITIALIZER(cm.listeners),
	.events = TAILQ_HEAD_INITIALIZER(cm.events),
	.ahs = SLIST_HEAD_INITIALIZER(cm.ahs),
	.efd = -1,
};

uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void
wake(void)
{
	uint64_t one = 1;

	if (cm.efd >= 0 && write(cm.efd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}

/* ---- connections and events ---- */

struct droce_cm_conn *
conn_new_locked(enum cm_state st)
{
	struct droce_cm_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->state = st;
	do
		c->local_id = ++cm.next_id;
	while (c->local_id == 0);
	TAILQ_INSERT_TAIL(&cm.conns, c, link);
	return c;
}

void
set_state(struct droce_cm_conn *c, enum cm_state st)
{
	CM_LOG(DEBUG, "conn %08x: %s -> %s\n", c->local_id, state_names[c->state], state_names[st]);
	c->state = st;
}

static void
timer_set(struct droce_cm_conn *c, uint64_t after_us, unsigned int retries)
{
	c->interval_us = after_us;
	c->deadline_us = now_us() + after_us;
	c->retries_left = retries;
	wake();
}

void
timer_stop(struct droce_cm_conn *c)
{
	c->deadline_us = 0;
}

static uint64_t
resp_us(uint8_t exp)
{
	return droce_cm_timeout_us(exp ? exp : DEF_RESP_TIMEOUT);
}

static uint64_t
timewait_us(const struct droce_cm_conn *c)
{
	uint64_t t = 2 * droce_cm_timeout_us(c->ack_timeout ? c->ack_timeout : 14);

	return RTE_MAX(t, (uint64_t)TIMEWAIT_MIN_US);
}

struct cm_qev *
ev_new(struct droce_cm_conn *c, enum droce_cm_event_type t, const struct droce_cm_msg *m)
{
	struct cm_qev *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->conn = c;
	q->ev.type = t;
	q->ev.conn = c;
	if (m != NULL && m->private_data != NULL) {
		size_t n = RTE_MIN((size_t)m->private_data_len, sizeof(q->pdata));

		memcpy(q->pdata, m->private_data, n);
		q->ev.private_data = q->pdata;
		q->ev.private_data_len = (uint8_t)n;
	}
	return q;
}

void
ev_queue(struct cm_qev *q)
{
	TAILQ_INSERT_TAIL(&cm.events, q, link);
	wake();
}

void
ev_simple(struct droce_cm_conn *c, enum droce_cm_event_type t)
{
	struct cm_qev *q = ev_new(c, t, NULL);

	if (q != NULL)
		ev_queue(q);
}

/* The connection is over; it lingers to answer duplicates if it has a last MAD. */
void
conn_finish(struct droce_cm_conn *c, bool linger)
{
	if (linger && c->has_last) {
		set_state(c, CM_LINGER);
		timer_set(c, LINGER_US, 0);
	} else {
		set_state(c, CM_DEAD);
		timer_stop(c);
	}
}

void
enter_timewait(struct droce_cm_conn *c)
{
	set_state(c, CM_TIMEWAIT);
	timer_set(c, timewait_us(c), 0);
}

/* Frees dead, released connections no event or handler still names. */
void
conns_reap_locked(void)
{
	struct droce_cm_conn *c, *t;

	TAILQ_FOREACH_SAFE_(c, &cm.conns, link, t) {
		struct cm_qev *q, *qt;

		if (!c->released || c->releasing || c->state != CM_DEAD || cm.delivering == c)
			continue;
		TAILQ_FOREACH_SAFE_(q, &cm.events, link, qt) {
			if (q->conn == c) {
				TAILQ_REMOVE(&cm.events, q, link);
				free(q);
			}
		}
		TAILQ_REMOVE(&cm.conns, c, link);
		free(c);
	}
}

struct droce_cm_conn *
find_local_locked(uint32_t local_id)
{
	struct droce_cm_conn *c;

	if (local_id == 0)
		return NULL;
	TAILQ_FOREACH(c, &cm.conns, link)
		if (c->local_id == local_id && c->state != CM_DEAD)
			return c;
	return NULL;
}

/* A passive connection made from the peer's REQ / SIDR REQ @remote_id. */
struct droce_cm_conn *
find_remote_locked(uint32_t remote_id, const uint8_t peer[16], bool sidr)
{
	struct droce_cm_conn *c;

	TAILQ_FOREACH(c, &cm.conns, link) {
		bool is_sidr = c->local_qpn == UINT32_MAX;

		if (c->passive && c->remote_id == remote_id && c->state != CM_DEAD && is_sidr == sidr &&
		    memcmp(c->addr.dgid, peer, 16) == 0)
			return c;
	}
	return NULL;
}

struct droce_cm_listener *
find_listener_locked(uint64_t sid)
{
	struct droce_cm_listener *l;

	TAILQ_FOREACH(l, &cm.listeners, link)
		if (l->service_id == sid)
			return l;
	return NULL;
}

/* ---- the API of cm.h ---- */

int
droce_cm_listen(uint64_t service_id, droce_cm_handler_fn handler, void *ctx,
		struct droce_cm_listener **out)
{
	struct droce_cm_listener *l;
	int rc = 0;

	if (handler == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (find_listener_locked(service_id) != NULL) {
		rc = EADDRINUSE;
	} else if ((l = calloc(1, sizeof(*l))) == NULL) {
		rc = ENOMEM;
	} else {
		l->service_id = service_id;
		l->handler = handler;
		l->ctx = ctx;
		TAILQ_INSERT_TAIL(&cm.listeners, l, link);
		*out = l;
	}
	pthread_mutex_unlock(&cm.lock);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

void
droce_cm_unlisten(struct droce_cm_listener *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&cm.lock);
	TAILQ_REMOVE(&cm.listeners, l, link);
	while (cm.delivering == l)
		pthread_cond_wait(&cm.cond, &cm.lock);
	/* queued REQs for it are rejected by deliver_locked (it no longer finds l) ...
	 * which compares pointers: keep them from meeting a new listener at l's address */
	{
		struct cm_qev *q;

		TAILQ_FOREACH(q, &cm.events, link) {
			if (q->l == l) {
				struct droce_cm_conn *c = q->ev.conn;
				struct droce_cm_msg m;

				if (q->ev.type == DROCE_CM_EV_REQ) {
					msg_init(&m, DROCE_CM_ATTR_REJ, c);
					m.u.rej.reason = DROCE_CM_REJ_INVALID_SERVICE_ID;
					send_msg_locked(c, &c->addr, &m);
					conn_finish(c, true);
				} else {
					conn_finish(c, false);
				}
				c->released = true;
				q->l = NULL;
				q->conn = c; /* skipped: released */
			}
		}
	}
	pthread_mutex_unlock(&cm.lock);
	free(l);
}

static bool
addr_ok(const struct droce_cm_addr *a)
{
	struct droce_port *p = droce_port_get(a->port);

	return p != NULL && a->port < cm.n_ports && droce_port_find_gid(p, a->sgid) >= 0;
}

/* A new active connection from @a's port; NULL with errno. */
static struct droce_cm_conn *
active_open_locked(enum cm_state st, const struct droce_cm_addr *a, droce_cm_handler_fn handler,
		   void *ctx)
{
	struct droce_cm_conn *c;

	if (!cm.started || !addr_ok(a)) {
		errno = cm.started ? EINVAL : ENODEV;
		return NULL;
	}
	c = conn_new_locked(st);
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->handler = handler;
	c->ctx = ctx;
	c->addr = *a;
	return c;
}

/*
 * Sends an active connection's first message.  When the peer cannot be
 * reached at all the connection is dropped: -1 with errno (EINVAL, or
 * ENETUNREACH).  Other failures (a full send queue) are left to the resend
 * timer: 0.
 */
static int
active_first_send_locked(struct droce_cm_conn *c, const struct droce_cm_msg *m)
{
	int rc = send_msg_locked(c, &c->addr, m);

	if (rc != EHOSTUNREACH && rc != ENETUNREACH && rc != EADDRNOTAVAIL && rc != EINVAL)
		return 0;
	TAILQ_REMOVE(&cm.conns, c, link);
	free(c);
	errno = rc == EINVAL ? EINVAL : ENETUNREACH;
	return -1;
}

int
droce_cm_connect(const struct droce_cm_req *req, droce_cm_handler_fn handler, void *ctx,
		 struct droce_cm_conn **out)
{
	struct droce_cm_conn *c;
	struct droce_cm_msg m;

	if (req == NULL || out == NULL || handler == NULL ||
	    (req->qp_type != 2 && req->qp_type != 3) || req->qpn > 0xffffff ||
	    req->private_data_len > DROCE_CM_REQ_PDATA) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	c = active_open_locked(CM_REQ_SENT, &req->addr, handler, ctx);
	if (c == NULL) {
		pthread_mutex_unlock(&cm.lock);
		return -1;
	}
	c->local_qpn = req->qpn;
	c->ack_timeout = req->local_ack_timeout;
	c->tid = new_tid_locked();
	msg_init(&m, DROCE_CM_ATTR_REQ, c);
	m.local_ca_guid = port_guid(req->addr.port);
	m.u.req.req = *req;
	if (m.u.req.req.cm_response_timeout == 0)
		m.u.req.req.cm_response_timeout = DEF_RESP_TIMEOUT;
	if (m.u.req.req.max_cm_retries == 0)
		m.u.req.req.max_cm_retries = DEF_MAX_RETRIES;
	if (m.u.req.req.addr.hop_limit == 0)
		m.u.req.req.addr.hop_limit = 64;
	m.u.req.pkey = 0xffff;
	m.u.req.local_cm_response_timeout = DEF_RESP_TIMEOUT;
	m.u.req.e2e_flow_control = 1;
	m.private_data = req->private_data;
	m.private_data_len = req->private_data_len;
	if (active_first_send_locked(c, &m) != 0) {
		pthread_mutex_unlock(&cm.lock);
		return -1;
	}
	timer_set(c, resp_us(m.u.req.req.cm_response_timeout), m.u.req.req.max_cm_retries);
	*out = c;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

void
droce_cm_conn_set_handler(struct droce_cm_conn *c, droce_cm_handler_fn handler, void *ctx)
{
	pthread_mutex_lock(&cm.lock);
	c->handler = handler;
	c->ctx = ctx;
	pthread_mutex_unlock(&cm.lock);
}

/* 0, or -1 with errno EINVAL when @c is not in @want. */
static int
state_is(const struct droce_cm_conn *c, enum cm_state want)
{
	if (c->state == want)
		return 0;
	errno = EINVAL;
	return -1;
}

int
droce_cm_accept(struct droce_cm_conn *c, const struct droce_cm_rep *rep)
{
	struct droce_cm_msg m;
	int rc;

	if (c == NULL || rep == NULL || rep->private_data_len > DROCE_CM_REP_PDATA ||
	    rep->qpn > 0xffffff) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = state_is(c, CM_REQ_RCVD);
	if (rc == 0) {
		msg_init(&m, DROCE_CM_ATTR_REP, c);
		m.local_ca_guid = port_guid(c->addr.port);
		m.u.rep.rep = *rep;
		m.u.rep.e2e_flow_control = 1;
		m.private_data = rep->private_data;
		m.private_data_len = rep->private_data_len;
		c->local_qpn = rep->qpn;
		set_state(c, CM_REP_SENT);
		send_msg_locked(c, &c->addr, &m);
		timer_set(c, resp_us(RTE_MIN(RTE_MAX(c->peer_resp_timeout, DEF_RESP_TIMEOUT), 22)),
			  c->peer_max_retries ? c->peer_max_retries : DEF_MAX_RETRIES);
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

int
droce_cm_reject(struct droce_cm_conn *c, uint16_t reason, const void *pdata, uint8_t len)
{
	struct droce_cm_msg m;
	uint8_t ref;

	if (c == NULL || len > DROCE_CM_REJ_PDATA) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	switch (c->state) {
	case CM_REQ_RCVD:
	case CM_REQ_SENT:
		ref = DROCE_CM_MSG_REF_REQ;
		break;
	case CM_REP_RCVD:
	case CM_REP_SENT:
		ref = DROCE_CM_MSG_REF_REP;
		break;
	default:
		pthread_mutex_unlock(&cm.lock);
		errno = EINVAL;
		return -1;
	}
	msg_init(&m, DROCE_CM_ATTR_REJ, c);
	m.u.rej.msg_rejected = ref;
	m.u.rej.reason = reason;
	m.private_data = pdata;
	m.private_data_len = len;
	send_msg_locked(c, &c->addr, &m);
	conn_finish(c, true);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

int
droce_cm_rtu(struct droce_cm_conn *c, const void *pdata, uint8_t len)
{
	struct droce_cm_msg m;
	int rc;

	if (c == NULL || len > DROCE_CM_RTU_PDATA) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = state_is(c, CM_REP_RCVD);
	if (rc == 0) {
		msg_init(&m, DROCE_CM_ATTR_RTU, c);
		m.private_data = pdata;
		m.private_data_len = len;
		set_state(c, CM_ESTABLISHED);
		send_msg_locked(c, &c->addr, &m);
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

int
droce_cm_establish(struct droce_cm_conn *c)
{
	int rc;

	if (c == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = state_is(c, CM_REP_SENT);
	if (rc == 0) {
		timer_stop(c);
		set_state(c, CM_ESTABLISHED);
	} else if (c->state == CM_ESTABLISHED) {
		rc = 0;
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

static void
send_dreq_locked(struct droce_cm_conn *c, const void *pdata, uint8_t len)
{
	struct droce_cm_msg m;

	c->tid = new_tid_locked();
	msg_init(&m, DROCE_CM_ATTR_DREQ, c);
	m.u.dreq.remote_qpn = c->remote_qpn;
	m.private_data = pdata;
	m.private_data_len = len;
	set_state(c, CM_DREQ_SENT);
	send_msg_locked(c, &c->addr, &m);
	timer_set(c, resp_us(DEF_RESP_TIMEOUT), DEF_MAX_RETRIES);
}

static void
send_drep_locked(struct droce_cm_conn *c, const void *pdata, uint8_t len)
{
	struct droce_cm_msg m;

	msg_init(&m, DROCE_CM_ATTR_DREP, c);
	m.private_data = pdata;
	m.private_data_len = len;
	send_msg_locked(c, &c->addr, &m);
	enter_timewait(c);
}

int
droce_cm_disconnect(struct droce_cm_conn *c, const void *pdata, uint8_t len)
{
	int rc = 0;

	if (c == NULL || len > DROCE_CM_DREQ_PDATA) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	switch (c->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		send_dreq_locked(c, pdata, len);
		break;
	case CM_DREQ_RCVD:
		/* the peer's DREQ came first (its event may not be out yet): answering
		 * it is the disconnect, as the kernel's cma falls back to a DREP */
		send_drep_locked(c, NULL, 0);
		break;
	default:
		errno = EINVAL;
		rc = -1;
		break;
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

int
droce_cm_drep(struct droce_cm_conn *c, const void *pdata, uint8_t len)
{
	int rc = 0;

	if (c == NULL || len > DROCE_CM_DREP_PDATA) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (c->state == CM_DREQ_RCVD)
		send_drep_locked(c, pdata, len);
	else if (c->state != CM_TIMEWAIT) /* already answered: a no-op */
		rc = state_is(c, CM_DREQ_RCVD);
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

int
droce_cm_sidr_req(const struct droce_cm_sidr_req *req, droce_cm_handler_fn handler, void *ctx,
		  struct droce_cm_conn **out)
{
	struct droce_cm_conn *c;
	struct droce_cm_msg m;

	if (req == NULL || out == NULL || handler == NULL ||
	    req->private_data_len > DROCE_CM_SIDR_REQ_PDATA) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	c = active_open_locked(CM_SIDR_REQ_SENT, &req->addr, handler, ctx);
	if (c == NULL) {
		pthread_mutex_unlock(&cm.lock);
		return -1;
	}
	c->tid = new_tid_locked();
	msg_init(&m, DROCE_CM_ATTR_SIDR_REQ, c);
	m.u.sidr_req = *req;
	m.u.sidr_req.pkey = req->pkey ? req->pkey : 0xffff;
	m.private_data = req->private_data;
	m.private_data_len = req->private_data_len;
	if (active_first_send_locked(c, &m) != 0) {
		pthread_mutex_unlock(&cm.lock);
		return -1;
	}
	timer_set(c, resp_us(req->cm_response_timeout),
		  req->max_cm_retries ? req->max_cm_retries : DEF_MAX_RETRIES);
	*out = c;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

int
droce_cm_sidr_rep(struct droce_cm_conn *c, const struct droce_cm_sidr_rep *rep)
{
	struct droce_cm_msg m;
	int rc;

	if (c == NULL || rep == NULL || rep->private_data_len > DROCE_CM_SIDR_REP_PDATA) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = state_is(c, CM_SIDR_REQ_RCVD);
	if (rc == 0) {
		msg_init(&m, DROCE_CM_ATTR_SIDR_REP, c);
		m.local_comm_id = c->remote_id; /* the request ID */
		m.remote_comm_id = 0;
		m.u.sidr_rep = *rep;
		m.sidr_rep_service_id = c->service_id;
		m.private_data = rep->private_data;
		m.private_data_len = rep->private_data_len;
		send_msg_locked(c, &c->addr, &m);
		conn_finish(c, true);
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

void
droce_cm_conn_release(struct droce_cm_conn *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&cm.lock);
	/*
	 * Released at once (no more events are delivered to it), but not
	 * reaped while this waits: the service thread reaps with the lock held
	 * right after the delivery it waits for, and a dead connection (after
	 * TIMEWAIT_EXIT) was freed under this function (ASan, life_peers).
	 */
	c->released = true;
	c->releasing = true;
	while (cm.delivering == c)
		pthread_cond_wait(&cm.cond, &cm.lock);
	c->releasing = false;
	/* what the protocol still owes, the CM finishes alone */
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_REQ_RCVD:
	case CM_REP_RCVD:
	case CM_REP_SENT: {
		struct droce_cm_msg m;

		msg_init(&m, DROCE_CM_ATTR_REJ, c);
		m.u.rej.msg_rejected = c->state == CM_REQ_SENT || c->state == CM_REQ_RCVD ?
				       DROCE_CM_MSG_REF_REQ : DROCE_CM_MSG_REF_REP;
		m.u.rej.reason = c->state == CM_REQ_SENT ? DROCE_CM_REJ_TIMEOUT
							 : DROCE_CM_REJ_CONSUMER_DEFINED;
		send_msg_locked(c, &c->addr, &m);
		conn_finish(c, true);
		break;
	}
	case CM_ESTABLISHED:
		send_dreq_locked(c, NULL, 0);
		break;
	case CM_DREQ_RCVD:
		send_drep_locked(c, NULL, 0);
		break;
	case CM_SIDR_REQ_RCVD: {
		struct droce_cm_msg m;

		msg_init(&m, DROCE_CM_ATTR_SIDR_REP, c);
		m.local_comm_id = c->remote_id;
		m.remote_comm_id = 0;
		m.u.sidr_rep.status = DROCE_CM_SIDR_REJECT;
		m.sidr_rep_service_id = c->service_id;
		send_msg_locked(c, &c->addr, &m);
		conn_finish(c, true);
		break;
	}
	case CM_SIDR_REQ_SENT:
		conn_finish(c, false);
		break;
	default:
		break; /* DREQ_SENT, TIMEWAIT, LINGER: the timer ends them */
	}
	wake();
	pthread_mutex_unlock(&cm.lock);
}

void
droce_cm_stats_get(struct droce_cm_stats *out)
{
	pthread_mutex_lock(&cm.lock);
	*out = cm.stats;
	pthread_mutex_unlock(&cm.lock);
}
