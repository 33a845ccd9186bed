/* SPDX-License-Identifier: BSD-3-Clause
 * The InfiniBand Communication Manager over RoCEv2 (IBTA vol. 1 ch. 12),
 * behind verbs_api/cm.h: connections set up and torn down by MADs on QP1
 * (the GSI, a UD QP with Q_Key 0x80010000) of every droce port.
 *
 * Pieces, in the order of this file:
 *  - GSI I/O: one UD QP with QPN 1 per port (dp.h's `gsi` QP, on engine 0),
 *    one receive CQ for all of them (wr_id = port << 16 | buffer), sends
 *    inline and unsignaled (a MAD is 256 bytes, the inline limit), each with
 *    its own address handle, freed once the engine is done with it.
 *  - Connections: an explicit state enum, one handler per received message
 *    kind, and one timer per connection (resend, time wait, linger).  A
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
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_random.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "pmd_glue/port.h"
#include "cm.h"
#include "cm_mad.h"
#include "internal.h"

/* <sys/queue.h> has no safe iteration */
#define TAILQ_FOREACH_SAFE_(var, head, field, tvar)                                    \
	for ((var) = TAILQ_FIRST(head); (var) && ((tvar) = TAILQ_NEXT(var, field), 1);   \
	     (var) = (tvar))

#define GSI_RECV 128               /* receive buffers per port */
#define GSI_SEND 256               /* send queue slots per port */
#define GRH_LEN 40
#define RECV_BUF (GRH_LEN + DROCE_MAD_SIZE)
#define GSI_PD_ID UINT32_MAX       /* no verbs PD has it */

#define DEF_RESP_TIMEOUT 16        /* 4.096 us * 2^16 = 268 ms */
#define DEF_MAX_RETRIES 15         /* the kernel's cma: CMA_MAX_CM_RETRIES */
#define MRA_SERVICE_TIMEOUT 20     /* what our MRA asks for: 4.3 s */
#define TIMEWAIT_MIN_US 50000
#define LINGER_US 2000000          /* rejected / SIDR-answered: answer duplicates this long */
#define IDLE_WAIT_MS 100           /* the service thread's longest sleep */

enum cm_state {
	CM_IDLE,
	CM_REQ_SENT,       /* active: REQ out, resent until REP / REJ / MRA */
	CM_REP_RCVD,       /* active: EV_REP delivered, waiting for droce_cm_rtu() */
	CM_REQ_RCVD,       /* passive: EV_REQ delivered, waiting for accept / reject */
	CM_REP_SENT,       /* passive: REP out, resent until RTU */
	CM_ESTABLISHED,
	CM_DREQ_SENT,      /* resent until DREP */
	CM_DREQ_RCVD,      /* EV_DREQ delivered, waiting for droce_cm_drep() */
	CM_TIMEWAIT,       /* then EV_TIMEWAIT_EXIT */
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
	CM_LINGER,         /* over (rejected, SIDR answered): answers duplicates */
	CM_DEAD,           /* over: waiting only for the user's release */
};

static const char *const state_names[] = {
	[CM_IDLE] = "IDLE", [CM_REQ_SENT] = "REQ_SENT", [CM_REP_RCVD] = "REP_RCVD",
	[CM_REQ_RCVD] = "REQ_RCVD", [CM_REP_SENT] = "REP_SENT", [CM_ESTABLISHED] = "ESTABLISHED",
	[CM_DREQ_SENT] = "DREQ_SENT", [CM_DREQ_RCVD] = "DREQ_RCVD", [CM_TIMEWAIT] = "TIMEWAIT",
	[CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT", [CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	[CM_LINGER] = "LINGER", [CM_DEAD] = "DEAD",
};

struct droce_cm_conn {
	TAILQ_ENTRY(droce_cm_conn) link;
	enum cm_state state;
	bool released;                /* the user gave its reference back */
	bool passive;                 /* made from the peer's REQ / SIDR REQ */
	droce_cm_handler_fn handler;
	void *ctx;
	struct droce_cm_addr addr;    /* ours: sgid local, dgid the peer's */
	uint32_t local_id, remote_id; /* comm IDs (SIDR: the request ID) */
	uint64_t tid;                 /* of the exchange in progress */
	uint32_t local_qpn, remote_qpn;
	uint8_t ack_timeout;          /* local ACK timeout of the connection */
	uint8_t last_mad[DROCE_MAD_SIZE];
	bool has_last;
	uint64_t deadline_us;         /* 0: no timer */
	uint64_t interval_us;
	unsigned int retries_left;
	uint8_t peer_resp_timeout;    /* REQ's local CM response timeout (passive) */
	uint8_t peer_max_retries;
	uint64_t service_id;          /* SIDR: what the REQ asked for */
};

struct droce_cm_listener {
	TAILQ_ENTRY(droce_cm_listener) link;
	uint64_t service_id;
	droce_cm_handler_fn handler;
	void *ctx;
};

/* An event waiting for the service thread; private data copied in. */
struct cm_qev {
	TAILQ_ENTRY(cm_qev) link;
	struct droce_cm_conn *conn;
	struct droce_cm_listener *l;  /* REQ / SIDR REQ: the listener's handler */
	struct droce_cm_event ev;
	uint8_t pdata[DROCE_CM_RTU_PDATA];
};

/* An address handle a posted MAD names, freed once no WQE does. */
struct cm_ah {
	SLIST_ENTRY(cm_ah) link;
	struct droce_ah ah;
};

struct gsi_port {
	struct droce_qp *qp;
	uint8_t *buf;                 /* GSI_RECV * RECV_BUF */
	struct droce_mr mr;
	bool mr_ok;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* a delivery finished */
	bool started;
	bool stop;
	pthread_t thr;
	int efd;                      /* wakes the service thread */
	unsigned int n_ports;
	struct gsi_port gsi[DROCE_MAX_PORTS];
	struct droce_cq *rcq, *scq;
	TAILQ_HEAD(, droce_cm_conn) conns;
	TAILQ_HEAD(, droce_cm_listener) listeners;
	TAILQ_HEAD(, cm_qev) events;
	SLIST_HEAD(, cm_ah) ahs;
	const void *delivering;       /* conn or listener whose handler runs */
	uint32_t next_id;
	uint32_t tid_hi, tid_lo;
	struct droce_cm_stats stats;
} cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.conns = TAILQ_HEAD_INITIALIZER(cm.conns),
	.listeners = TAILQ_HEAD_INITIALIZER(cm.listeners),
	.events = TAILQ_HEAD_INITIALIZER(cm.events),
	.ahs = SLIST_HEAD_INITIALIZER(cm.ahs),
	.efd = -1,
};

RTE_LOG_REGISTER(droce_cm_logtype, droce.cm, NOTICE);
#define CM_LOG(level, ...) rte_log(RTE_LOG_##level, droce_cm_logtype, "droce.cm: " __VA_ARGS__)

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
wake(void)
{
	uint64_t one = 1;

	if (cm.efd >= 0 && write(cm.efd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}

/* ---- GSI I/O ---- */

static void
cq_notify(struct droce_cq *cq, void *arg)
{
	wake();
}

static uint64_t
port_guid(unsigned int port)
{
	struct droce_port *p = droce_port_get(port);
	const uint8_t *m;

	if (p == NULL)
		return 0;
	m = p->mac.addr_bytes;
	/* EUI-64 from the MAC, as the device's node GUID (device.c) */
	return (uint64_t)(m[0] ^ 0x02) << 56 | (uint64_t)m[1] << 48 | (uint64_t)m[2] << 40 |
	       (uint64_t)0xfffe << 24 | (uint64_t)m[3] << 16 | (uint64_t)m[4] << 8 | m[5];
}

static void
ahs_reap_locked(void)
{
	struct cm_ah **pp = &SLIST_FIRST(&cm.ahs);

	while (*pp != NULL) {
		struct cm_ah *a = *pp;

		if (!droce_ah_busy(&a->ah)) {
			*pp = SLIST_NEXT(a, link);
			free(a);
		} else {
			pp = &SLIST_NEXT(a, link);
		}
	}
}

/* Sends a 256-byte MAD from @a's port to the peer's QP1.  0 or an errno. */
static int
gsi_send_locked(const struct droce_cm_addr *a, const uint8_t *mad)
{
	struct droce_port *p = droce_port_get(a->port);
	struct ibv_ah_attr at;
	struct droce_path path;
	struct droce_wqe w;
	struct cm_ah *ah;
	int gi, rc;

	if (p == NULL || a->port >= cm.n_ports || cm.gsi[a->port].qp == NULL)
		return ENODEV;
	gi = droce_port_find_gid(p, a->sgid);
	if (gi < 0)
		return EADDRNOTAVAIL;
	memset(&at, 0, sizeof(at));
	at.is_global = 1;
	at.port_num = DROCE_VERBS_PORT_NUM;
	at.grh.sgid_index = (uint8_t)gi;
	memcpy(at.grh.dgid.raw, a->dgid, 16);
	at.grh.hop_limit = a->hop_limit ? a->hop_limit : 64;
	at.grh.traffic_class = a->traffic_class;
	at.grh.flow_label = a->flow_label & 0xfffff;
	rc = droce_verbs_resolve_path(a->port, &at, DROCE_CM_GSI_QPN, DROCE_CM_GSI_QPN, &path);
	if (rc != 0)
		return rc;
	ahs_reap_locked();
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL)
		return ENOMEM;
	droce_ah_init(&ah->ah, &path, a->port);
	memset(&w, 0, offsetof(struct droce_wqe, sge));
	w.opcode = DROCE_WR_SEND;
	w.flags = DROCE_WQE_INLINE;
	w.length = DROCE_MAD_SIZE;
	w.ah = &ah->ah;
	w.remote_qpn = DROCE_CM_GSI_QPN;
	w.remote_qkey = DROCE_CM_GSI_QKEY;
	memcpy(w.inline_data, mad, DROCE_MAD_SIZE);
	rc = droce_qp_post_send(cm.gsi[a->port].qp, &w);
	if (rc != 0) {
		free(ah);
		return rc;
	}
	SLIST_INSERT_HEAD(&cm.ahs, ah, link);
	cm.stats.mads_tx++;
	return 0;
}

static void
count_tx(uint16_t attr)
{
	switch (attr) {
	case DROCE_CM_ATTR_REQ: cm.stats.req_tx++; break;
	case DROCE_CM_ATTR_REP: cm.stats.rep_tx++; break;
	case DROCE_CM_ATTR_RTU: cm.stats.rtu_tx++; break;
	case DROCE_CM_ATTR_REJ: cm.stats.rej_tx++; break;
	case DROCE_CM_ATTR_DREQ: cm.stats.dreq_tx++; break;
	case DROCE_CM_ATTR_DREP: cm.stats.drep_tx++; break;
	case DROCE_CM_ATTR_MRA: cm.stats.mra_tx++; break;
	case DROCE_CM_ATTR_SIDR_REQ: cm.stats.sidr_req_tx++; break;
	case DROCE_CM_ATTR_SIDR_REP: cm.stats.sidr_rep_tx++; break;
	default: break;
	}
}

static void
count_rx(uint16_t attr)
{
	switch (attr) {
	case DROCE_CM_ATTR_REQ: cm.stats.req_rx++; break;
	case DROCE_CM_ATTR_REP: cm.stats.rep_rx++; break;
	case DROCE_CM_ATTR_RTU: cm.stats.rtu_rx++; break;
	case DROCE_CM_ATTR_REJ: cm.stats.rej_rx++; break;
	case DROCE_CM_ATTR_DREQ: cm.stats.dreq_rx++; break;
	case DROCE_CM_ATTR_DREP: cm.stats.drep_rx++; break;
	case DROCE_CM_ATTR_MRA: cm.stats.mra_rx++; break;
	case DROCE_CM_ATTR_SIDR_REQ: cm.stats.sidr_req_rx++; break;
	case DROCE_CM_ATTR_SIDR_REP: cm.stats.sidr_rep_rx++; break;
	default: break;
	}
}

/* Encodes @m and sends it to @a; when @c is given it becomes c's last MAD. */
static int
send_msg_locked(struct droce_cm_conn *c, const struct droce_cm_addr *a,
		const struct droce_cm_msg *m)
{
	uint8_t mad[DROCE_MAD_SIZE];
	int rc = droce_cm_mad_encode(m, mad);

	if (rc != 0)
		return -rc;
	if (c != NULL) {
		memcpy(c->last_mad, mad, sizeof(mad));
		c->has_last = true;
	}
	count_tx(m->attr);
	rc = gsi_send_locked(a, mad);
	if (rc != 0)
		CM_LOG(DEBUG, "MAD 0x%x not sent: %s\n", m->attr, strerror(rc));
	return rc;
}

static int
resend_last_locked(struct droce_cm_conn *c)
{
	if (!c->has_last)
		return 0;
	cm.stats.resends++;
	return gsi_send_locked(&c->addr, c->last_mad);
}

static uint64_t
new_tid_locked(void)
{
	return (uint64_t)cm.tid_hi << 32 | ++cm.tid_lo;
}

static void
msg_init(struct droce_cm_msg *m, uint16_t attr, const struct droce_cm_conn *c)
{
	memset(m, 0, sizeof(*m));
	m->attr = attr;
	if (c != NULL) {
		m->tid = c->tid;
		m->local_comm_id = c->local_id;
		m->remote_comm_id = c->remote_id;
	}
}

/* ---- connections and events ---- */

static struct droce_cm_conn *
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

static void
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

static void
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

static struct cm_qev *
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

static void
ev_queue(struct cm_qev *q)
{
	TAILQ_INSERT_TAIL(&cm.events, q, link);
	wake();
}

static void
ev_simple(struct droce_cm_conn *c, enum droce_cm_event_type t)
{
	struct cm_qev *q = ev_new(c, t, NULL);

	if (q != NULL)
		ev_queue(q);
}

/* The connection is over; it lingers to answer duplicates if it has a last MAD. */
static void
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

static void
enter_timewait(struct droce_cm_conn *c)
{
	set_state(c, CM_TIMEWAIT);
	timer_set(c, timewait_us(c), 0);
}

/* Frees dead, released connections no event or handler still names. */
static void
conns_reap_locked(void)
{
	struct droce_cm_conn *c, *t;

	TAILQ_FOREACH_SAFE_(c, &cm.conns, link, t) {
		struct cm_qev *q, *qt;

		if (!c->released || c->state != CM_DEAD || cm.delivering == c)
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

static struct droce_cm_conn *
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
static struct droce_cm_conn *
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

static struct droce_cm_listener *
find_listener_locked(uint64_t sid)
{
	struct droce_cm_listener *l;

	TAILQ_FOREACH(l, &cm.listeners, link)
		if (l->service_id == sid)
			return l;
	return NULL;
}

/* ---- received MADs ---- */

/* Where a received MAD came from, seen from here. */
struct rx_info {
	struct droce_cm_addr addr;    /* port; sgid = the packet's destination, dgid its source */
};

/* Asks the peer to wait longer for our answer to its message @ref. */
static void
send_mra_locked(struct droce_cm_conn *c, uint8_t ref)
{
	struct droce_cm_msg m;

	msg_init(&m, DROCE_CM_ATTR_MRA, c);
	m.u.mra.msg_mraed = ref;
	m.u.mra.service_timeout = MRA_SERVICE_TIMEOUT;
	send_msg_locked(NULL, &c->addr, &m);
}

/* A REJ with no connection behind it (unknown service ID, ...). */
static void
reject_stateless(const struct rx_info *rx, const struct droce_cm_msg *in, uint16_t reason,
		 uint8_t msg_rejected)
{
	struct droce_cm_msg m;

	msg_init(&m, DROCE_CM_ATTR_REJ, NULL);
	m.tid = in->tid;
	m.remote_comm_id = in->local_comm_id;
	m.u.rej.msg_rejected = msg_rejected;
	m.u.rej.reason = reason;
	send_msg_locked(NULL, &rx->addr, &m);
}

static void
rx_req(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	const struct droce_cm_req *r = &m->u.req.req;
	struct droce_cm_listener *l;
	struct droce_cm_conn *c;
	struct cm_qev *q;

	c = find_remote_locked(m->local_comm_id, rx->addr.dgid, false);
	if (c != NULL) {
		cm.stats.dups_rx++;
		switch (c->state) {
		case CM_REQ_RCVD:
			/* the user has not answered yet: ask the peer to wait */
			send_mra_locked(c, DROCE_CM_MSG_REF_REQ);
			break;
		case CM_REP_SENT:
		case CM_LINGER:
			resend_last_locked(c); /* the REP, or the REJ */
			break;
		default:
			break; /* established or later: a stale duplicate */
		}
		return;
	}
	l = find_listener_locked(r->service_id);
	if (l == NULL) {
		reject_stateless(rx, m, DROCE_CM_REJ_INVALID_SERVICE_ID, DROCE_CM_MSG_REF_REQ);
		return;
	}
	c = conn_new_locked(CM_REQ_RCVD);
	if (c == NULL)
		return;
	c->passive = true;
	c->addr = rx->addr;
	c->addr.flow_label = r->addr.flow_label;
	c->addr.traffic_class = r->addr.traffic_class;
	c->addr.hop_limit = r->addr.hop_limit;
	c->remote_id = m->local_comm_id;
	c->tid = m->tid;
	c->remote_qpn = r->qpn;
	c->ack_timeout = r->local_ack_timeout;
	c->peer_resp_timeout = m->u.req.local_cm_response_timeout;
	c->peer_max_retries = r->max_cm_retries;
	q = ev_new(c, DROCE_CM_EV_REQ, m);
	if (q == NULL) {
		c->released = true;
		set_state(c, CM_DEAD);
		return;
	}
	q->conn = NULL;
	q->l = l;
	q->ev.u.req = *r;
	q->ev.u.req.addr = c->addr;
	q->ev.u.req.private_data = q->ev.private_data;
	q->ev.u.req.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}

static void
rx_rep(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL) {
		/* a REP for nothing we know: the connection is stale */
		reject_stateless(rx, m, DROCE_CM_REJ_STALE_CONN, DROCE_CM_MSG_REF_REP);
		return;
	}
	switch (c->state) {
	case CM_REQ_SENT:
		break;
	case CM_REP_RCVD:
		/* the user has not sent the RTU yet */
		cm.stats.dups_rx++;
		send_mra_locked(c, DROCE_CM_MSG_REF_REP);
		return;
	case CM_ESTABLISHED:
	case CM_LINGER:
		cm.stats.dups_rx++;
		resend_last_locked(c); /* the RTU (or our REJ) got lost */
		return;
	default:
		cm.stats.dups_rx++;
		return;
	}
	c->remote_id = m->local_comm_id;
	c->remote_qpn = m->u.rep.rep.qpn;
	timer_stop(c);
	set_state(c, CM_REP_RCVD);
	q = ev_new(c, DROCE_CM_EV_REP, m);
	if (q == NULL)
		return;
	q->ev.u.rep = m->u.rep.rep;
	q->ev.u.rep.private_data = q->ev.private_data;
	q->ev.u.rep.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}

static void
rx_rtu(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL || c->state != CM_REP_SENT || c->remote_id != m->local_comm_id) {
		cm.stats.dups_rx++;
		return;
	}
	timer_stop(c);
	set_state(c, CM_ESTABLISHED);
	q = ev_new(c, DROCE_CM_EV_RTU, m);
	if (q != NULL)
		ev_queue(q);
}

static void
rx_rej(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL)
		return;
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_REP_RCVD:
	case CM_REQ_RCVD:
	case CM_REP_SENT:
		break;
	default:
		cm.stats.dups_rx++;
		return;
	}
	if (c->state != CM_REQ_SENT && c->remote_id != m->local_comm_id && m->local_comm_id != 0)
		return; /* not from our peer */
	c->has_last = false;
	conn_finish(c, false);
	q = ev_new(c, DROCE_CM_EV_REJ, m);
	if (q == NULL)
		return;
	q->ev.u.rej.reason = m->u.rej.reason;
	q->ev.u.rej.ari_len = m->u.rej.ari_len;
	memcpy(q->ev.u.rej.ari, m->u.rej.ari, sizeof(q->ev.u.rej.ari));
	ev_queue(q);
}

static void
rx_mra(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	uint64_t wait;

	if (c == NULL)
		return;
	wait = droce_cm_timeout_us(m->u.mra.service_timeout) + c->interval_us;
	if ((c->state == CM_REQ_SENT && m->u.mra.msg_mraed == DROCE_CM_MSG_REF_REQ) ||
	    (c->state == CM_REP_SENT && m->u.mra.msg_mraed == DROCE_CM_MSG_REF_REP)) {
		/* the peer needs longer: wait that long before resending */
		c->deadline_us = now_us() + wait;
		wake();
	}
}

static void
rx_dreq(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct droce_cm_msg a;

	if (c == NULL || (c->remote_id != m->local_comm_id && c->state != CM_LINGER)) {
		/* IBTA 12.9.8.3: a DREQ for no connection is answered all the same */
		msg_init(&a, DROCE_CM_ATTR_DREP, NULL);
		a.tid = m->tid;
		a.local_comm_id = m->remote_comm_id;
		a.remote_comm_id = m->local_comm_id;
		send_msg_locked(NULL, &rx->addr, &a);
		return;
	}
	switch (c->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:  /* the RTU was lost: the DREQ proves the peer got the REP */
	case CM_REP_RCVD:
	case CM_DREQ_SENT: /* both sides at once */
		timer_stop(c);
		c->tid = m->tid;
		set_state(c, CM_DREQ_RCVD);
		{
			struct cm_qev *q = ev_new(c, DROCE_CM_EV_DREQ, m);

			if (q != NULL)
				ev_queue(q);
		}
		break;
	case CM_TIMEWAIT:
		cm.stats.dups_rx++;
		resend_last_locked(c); /* our DREP got lost */
		break;
	default:
		cm.stats.dups_rx++;
		break;
	}
}

static void
rx_drep(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL || c->state != CM_DREQ_SENT) {
		cm.stats.dups_rx++;
		return;
	}
	enter_timewait(c);
	q = ev_new(c, DROCE_CM_EV_DREP, m);
	if (q != NULL)
		ev_queue(q);
}

static void
rx_sidr_req(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	const struct droce_cm_sidr_req *r = &m->u.sidr_req;
	struct droce_cm_listener *l;
	struct droce_cm_conn *c;
	struct cm_qev *q;

	c = find_remote_locked(m->local_comm_id, rx->addr.dgid, true);
	if (c != NULL) {
		cm.stats.dups_rx++;
		if (c->state == CM_LINGER)
			resend_last_locked(c);
		return;
	}
	l = find_listener_locked(r->service_id);
	if (l == NULL) {
		struct droce_cm_msg a;

		msg_init(&a, DROCE_CM_ATTR_SIDR_REP, NULL);
		a.tid = m->tid;
		a.local_comm_id = m->local_comm_id; /* the request ID */
		a.u.sidr_rep.status = DROCE_CM_SIDR_UNSUPPORTED;
		a.sidr_rep_service_id = r->service_id; /* goes back as asked */
		send_msg_locked(NULL, &rx->addr, &a);
		return;
	}
	c = conn_new_locked(CM_SIDR_REQ_RCVD);
	if (c == NULL)
		return;
	c->passive = true;
	c->addr = rx->addr;
	c->remote_id = m->local_comm_id;
	c->local_qpn = UINT32_MAX; /* marks a SIDR connection once it lingers */
	c->tid = m->tid;
	c->service_id = r->service_id;
	q = ev_new(c, DROCE_CM_EV_SIDR_REQ, m);
	if (q == NULL) {
		c->released = true;
		set_state(c, CM_DEAD);
		return;
	}
	q->conn = NULL;
	q->l = l;
	q->ev.u.sidr_req = *r;
	q->ev.u.sidr_req.addr = c->addr;
	q->ev.u.sidr_req.private_data = q->ev.private_data;
	q->ev.u.sidr_req.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}

static void
rx_sidr_rep(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->local_comm_id); /* the request ID */
	struct cm_qev *q;

	if (c == NULL || c->state != CM_SIDR_REQ_SENT) {
		cm.stats.dups_rx++;
		return;
	}
	conn_finish(c, false);
	q = ev_new(c, DROCE_CM_EV_SIDR_REP, m);
	if (q == NULL)
		return;
	q->ev.u.sidr_rep = m->u.sidr_rep;
	q->ev.u.sidr_rep.private_data = q->ev.private_data;
	q->ev.u.sidr_rep.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}

/* The sender's and receiver's GIDs from the 40-byte GRH area of a UD receive. */
static bool
grh_gids(const uint8_t *grh, uint8_t src[16], uint8_t dst[16], uint8_t *tclass)
{
	const uint8_t *ip4 = grh + 20;

	if ((ip4[0] >> 4) == 4 && (grh[0] >> 4) != 6) {
		static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };

		memcpy(src, v4map, 12);
		memcpy(src + 12, ip4 + 12, 4);
		memcpy(dst, v4map, 12);
		memcpy(dst + 12, ip4 + 16, 4);
		*tclass = ip4[1];
		return true;
	}
	if ((grh[0] >> 4) == 6) {
		memcpy(src, grh + 8, 16);
		memcpy(dst, grh + 24, 16);
		*tclass = (uint8_t)((grh[0] << 4) | (grh[1] >> 4));
		return true;
	}
	return false;
}

static void
rx_mad_locked(unsigned int port, const uint8_t *buf, uint32_t len)
{
	struct droce_cm_msg m;
	struct rx_info rx;
	int rc;

	cm.stats.mads_rx++;
	memset(&rx, 0, sizeof(rx));
	rx.addr.port = port;
	if (len < GRH_LEN || !grh_gids(buf, rx.addr.dgid, rx.addr.sgid, &rx.addr.traffic_class)) {
		cm.stats.drops_rx++;
		return;
	}
	rc = droce_cm_mad_decode(buf + GRH_LEN, len - GRH_LEN, &m);
	if (rc != 0) {
		cm.stats.drops_rx++;
		return;
	}
	count_rx(m.attr);
	switch (m.attr) {
	case DROCE_CM_ATTR_REQ: rx_req(&rx, &m); break;
	case DROCE_CM_ATTR_REP: rx_rep(&rx, &m); break;
	case DROCE_CM_ATTR_RTU: rx_rtu(&m); break;
	case DROCE_CM_ATTR_REJ: rx_rej(&m); break;
	case DROCE_CM_ATTR_MRA: rx_mra(&m); break;
	case DROCE_CM_ATTR_DREQ: rx_dreq(&rx, &m); break;
	case DROCE_CM_ATTR_DREP: rx_drep(&m); break;
	case DROCE_CM_ATTR_SIDR_REQ: rx_sidr_req(&rx, &m); break;
	case DROCE_CM_ATTR_SIDR_REP: rx_sidr_rep(&m); break;
	default: cm.stats.drops_rx++; break;
	}
}

static int
gsi_post_recv(unsigned int port, unsigned int idx)
{
	struct gsi_port *g = &cm.gsi[port];
	struct droce_rqe r;

	memset(&r, 0, sizeof(r));
	r.wr_id = (uint64_t)port << 16 | idx;
	r.num_sge = 1;
	r.length = RECV_BUF;
	r.sge[0].addr = (uint64_t)(uintptr_t)(g->buf + (size_t)idx * RECV_BUF);
	r.sge[0].length = RECV_BUF;
	r.sge[0].lkey = g->mr.lkey;
	return droce_qp_post_recv(g->qp, &r);
}

/* ---- timers ---- */

static void
timer_fire_locked(struct droce_cm_conn *c)
{
	c->deadline_us = 0;
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
	case CM_SIDR_REQ_SENT:
		if (c->retries_left > 0) {
			c->retries_left--;
			c->deadline_us = now_us() + c->interval_us;
			resend_last_locked(c);
			return;
		}
		break;
	case CM_TIMEWAIT:
		set_state(c, CM_DEAD);
		ev_simple(c, DROCE_CM_EV_TIMEWAIT_EXIT);
		return;
	case CM_LINGER:
		set_state(c, CM_DEAD);
		return;
	default:
		return;
	}
	/* retries exhausted */
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_REP_SENT: {
		struct droce_cm_msg m;
		bool req = c->state == CM_REQ_SENT;

		msg_init(&m, DROCE_CM_ATTR_REJ, c);
		m.u.rej.msg_rejected = req ? DROCE_CM_MSG_REF_REQ : DROCE_CM_MSG_REF_REP;
		m.u.rej.reason = DROCE_CM_REJ_TIMEOUT;
		send_msg_locked(c, &c->addr, &m);
		conn_finish(c, true);
		ev_simple(c, req ? DROCE_CM_EV_REQ_TIMEOUT : DROCE_CM_EV_REP_TIMEOUT);
		break;
	}
	case CM_DREQ_SENT:
		enter_timewait(c);
		ev_simple(c, DROCE_CM_EV_DREQ_TIMEOUT);
		break;
	case CM_SIDR_REQ_SENT:
		conn_finish(c, false);
		ev_simple(c, DROCE_CM_EV_SIDR_TIMEOUT);
		break;
	default:
		break;
	}
}

/* Runs due timers; returns the µs until the next one (capped). */
static uint64_t
timers_run_locked(void)
{
	uint64_t now = now_us(), next = (uint64_t)IDLE_WAIT_MS * 1000;
	struct droce_cm_conn *c;

	TAILQ_FOREACH(c, &cm.conns, link) {
		if (c->deadline_us == 0)
			continue;
		if (c->deadline_us <= now)
			timer_fire_locked(c);
		if (c->deadline_us != 0)
			next = RTE_MIN(next, c->deadline_us > now ? c->deadline_us - now : 0);
	}
	return next;
}

/* ---- the service thread ---- */

/* Delivers queued events one at a time, with no lock held.  Lock held on entry and exit. */
static void
deliver_locked(void)
{
	struct cm_qev *q;

	while (!cm.stop && (q = TAILQ_FIRST(&cm.events)) != NULL) {
		droce_cm_handler_fn h;
		const void *target;

		TAILQ_REMOVE(&cm.events, q, link);
		if (q->l != NULL) {
			/* a REQ / SIDR REQ: droce_cm_unlisten() detached those of gone listeners */
			h = q->l->handler;
			q->ev.ctx = q->l->ctx;
			target = q->l;
		} else {
			if (q->conn->released) {
				free(q);
				continue;
			}
			h = q->conn->handler;
			q->ev.ctx = q->conn->ctx;
			target = q->conn;
		}
		cm.delivering = target;
		pthread_mutex_unlock(&cm.lock);
		if (h != NULL)
			h(&q->ev);
		pthread_mutex_lock(&cm.lock);
		cm.delivering = NULL;
		pthread_cond_broadcast(&cm.cond);
		free(q);
	}
}

/* Handles received MADs and gives their buffers back to the receive queue. */
static void
rx_batch_locked(const struct droce_cqe *wc, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned int port = (unsigned int)(wc[i].wr_id >> 16);
		unsigned int idx = (unsigned int)(wc[i].wr_id & 0xffff);

		if (port >= cm.n_ports || idx >= GSI_RECV)
			continue;
		if (wc[i].status == DROCE_WC_SUCCESS)
			rx_mad_locked(port, cm.gsi[port].buf + (size_t)idx * RECV_BUF, wc[i].byte_len);
		if (wc[i].status != DROCE_WC_WR_FLUSH_ERR)
			gsi_post_recv(port, idx);
	}
}

/*
 * The service thread: receive, timers, events, reaping; when there is
 * nothing to do it arms the receive CQ and sleeps on the eventfd until a MAD
 * arrives, an API call needs it, or the next timer is due.
 */
static void *
service(void *arg)
{
	struct droce_cqe wc[32], swc[32];
	int n = 0;

	pthread_mutex_lock(&cm.lock);
	while (!cm.stop) {
		uint64_t wait_us;

		rx_batch_locked(wc, n);
		wait_us = timers_run_locked();
		deliver_locked();
		conns_reap_locked();
		ahs_reap_locked();
		pthread_mutex_unlock(&cm.lock);
		droce_cq_poll(cm.scq, 32, swc); /* only failed sends complete: nothing to do */
		n = droce_cq_poll(cm.rcq, 32, wc);
		if (n == 0) {
			/* arm, then look once more: a MAD that raced the arm is not missed */
			droce_cq_arm(cm.rcq, false);
			n = droce_cq_poll(cm.rcq, 32, wc);
		}
		if (n == 0 && wait_us > 0 && !cm.stop) {
			struct pollfd pfd = { .fd = cm.efd, .events = POLLIN };
			uint64_t v;

			pthread_mutex_lock(&cm.lock);
			if (!TAILQ_EMPTY(&cm.events))
				continue;
			pthread_mutex_unlock(&cm.lock);
			droce_engines_blocking();
			if (poll(&pfd, 1, (int)((wait_us + 999) / 1000)) > 0 &&
			    read(cm.efd, &v, sizeof(v)) < 0) {
				/* nothing to read after all: fine */
			}
		}
		pthread_mutex_lock(&cm.lock);
	}
	pthread_mutex_unlock(&cm.lock);
	return NULL;
}

/* ---- start / stop ---- */

static int
gsi_open(unsigned int port)
{
	struct gsi_port *g = &cm.gsi[port];
	struct droce_qp_caps caps = {
		.max_send_wr = GSI_SEND, .max_recv_wr = GSI_RECV, .max_send_sge = 1,
		.max_recv_sge = 1, .max_inline_data = DROCE_MAD_SIZE,
	};
	struct droce_qp_ext ext = { .gsi = true };
	struct droce_qp_mod mod;
	int rc;

	g->buf = calloc(GSI_RECV, RECV_BUF);
	if (g->buf == NULL)
		return ENOMEM;
	memset(&g->mr, 0, sizeof(g->mr));
	g->mr.addr = g->buf;
	g->mr.iova = (uint64_t)(uintptr_t)g->buf;
	g->mr.length = (uint64_t)GSI_RECV * RECV_BUF;
	g->mr.access = DROCE_ACCESS_LOCAL_WRITE;
	g->mr.pd_id = GSI_PD_ID;
	if (droce_mr_register(&g->mr) != 0)
		return errno ? errno : ENOMEM;
	g->mr_ok = true;
	g->qp = droce_qp_create_ex(DROCE_QPT_UD, &caps, cm.scq, cm.rcq, GSI_PD_ID, port, &ext);
	if (g->qp == NULL)
		return errno ? errno : ENOMEM;
	memset(&mod, 0, sizeof(mod));
	mod.mask = DROCE_QPM_STATE | DROCE_QPM_PKEY_INDEX | DROCE_QPM_PORT | DROCE_QPM_QKEY;
	mod.state = DROCE_QPS_INIT;
	mod.qkey = DROCE_CM_GSI_QKEY;
	mod.pmtu = 1024;
	rc = droce_qp_modify(g->qp, &mod);
	for (unsigned int i = 0; rc == 0 && i < GSI_RECV; i++)
		rc = gsi_post_recv(port, i);
	if (rc == 0) {
		mod.mask = DROCE_QPM_STATE;
		mod.state = DROCE_QPS_RTR;
		rc = droce_qp_modify(g->qp, &mod);
	}
	if (rc == 0) {
		mod.mask = DROCE_QPM_STATE | DROCE_QPM_SQ_PSN;
		mod.state = DROCE_QPS_RTS;
		mod.sq_psn = (uint32_t)(rte_rand() & 0xffffff);
		rc = droce_qp_modify(g->qp, &mod);
	}
	return rc;
}

static void
gsi_close(unsigned int port)
{
	struct gsi_port *g = &cm.gsi[port];

	if (g->qp != NULL)
		droce_qp_destroy(g->qp);
	g->qp = NULL;
	if (g->mr_ok)
		droce_mr_unregister(&g->mr);
	g->mr_ok = false;
	free(g->buf);
	g->buf = NULL;
}

int
droce_cm_start(void)
{
	int rc = 0;

	pthread_mutex_lock(&cm.lock);
	if (cm.started)
		goto out;
	cm.n_ports = RTE_MIN(droce_port_count(), (unsigned int)DROCE_MAX_PORTS);
	cm.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cm.efd < 0) {
		rc = errno;
		goto out;
	}
	cm.rcq = droce_cq_create(GSI_RECV * RTE_MAX(cm.n_ports, 1u), cq_notify, NULL, NULL);
	cm.scq = droce_cq_create(GSI_SEND * RTE_MAX(cm.n_ports, 1u), NULL, NULL, NULL);
	if (cm.rcq == NULL || cm.scq == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	for (unsigned int i = 0; i < cm.n_ports && rc == 0; i++)
		rc = gsi_open(i);
	if (rc != 0)
		goto fail;
	cm.next_id = (uint32_t)rte_rand();
	cm.tid_hi = (uint32_t)rte_rand();
	cm.stop = false;
	rc = pthread_create(&cm.thr, NULL, service, NULL);
	if (rc != 0)
		goto fail;
	pthread_setname_np(cm.thr, "droce-cm");
	cm.started = true;
	droce_engines_at_stop(droce_cm_stop);
	goto out;
fail:
	for (unsigned int i = 0; i < cm.n_ports; i++)
		gsi_close(i);
	if (cm.rcq)
		droce_cq_destroy(cm.rcq);
	if (cm.scq)
		droce_cq_destroy(cm.scq);
	cm.rcq = cm.scq = NULL;
	close(cm.efd);
	cm.efd = -1;
out:
	pthread_mutex_unlock(&cm.lock);
	if (rc != 0) {
		CM_LOG(ERR, "cannot start the CM: %s\n", strerror(rc));
		errno = rc;
		return -1;
	}
	return 0;
}

void
droce_cm_stop(void)
{
	struct droce_cm_conn *c;
	struct cm_qev *q;

	pthread_mutex_lock(&cm.lock);
	if (!cm.started) {
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	cm.stop = true;
	wake();
	pthread_mutex_unlock(&cm.lock);
	pthread_join(cm.thr, NULL);
	pthread_mutex_lock(&cm.lock);
	while ((q = TAILQ_FIRST(&cm.events)) != NULL) {
		TAILQ_REMOVE(&cm.events, q, link);
		free(q);
	}
	while ((c = TAILQ_FIRST(&cm.conns)) != NULL) {
		TAILQ_REMOVE(&cm.conns, c, link);
		free(c);
	}
	for (unsigned int i = 0; i < cm.n_ports; i++)
		gsi_close(i);
	droce_cq_destroy(cm.rcq);
	droce_cq_destroy(cm.scq);
	cm.rcq = cm.scq = NULL;
	while (!SLIST_EMPTY(&cm.ahs)) {
		struct cm_ah *a = SLIST_FIRST(&cm.ahs);

		SLIST_REMOVE_HEAD(&cm.ahs, link);
		free(a);
	}
	close(cm.efd);
	cm.efd = -1;
	cm.started = false;
	pthread_mutex_unlock(&cm.lock);
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
	c->released = true;
	while (cm.delivering == c)
		pthread_cond_wait(&cm.cond, &cm.lock);
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
