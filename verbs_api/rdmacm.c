/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm API (librdmacm's <rdma/rdma_cma.h>) over droce's IB CM
 * (cm.h): event channels, rdma_cm ids (synchronous with a NULL channel, or
 * asynchronous), rdma_create_ep, QPs that move through their states as
 * librdmacm moves them, connections (REQ/REP/RTU, REJ, DREQ/DREP) with the
 * rdma_cm private-data header, and SIDR for RDMA_PS_UDP.
 *
 * Threading: see rdmacm.h.  Every entry point may be called from any
 * thread; CM handlers run on the CM service thread and only queue events.
 * Blocking work (ARP in rdma_resolve_addr, QP to RTR in rdma_accept and in
 * rdma_get_cm_event for a REP) runs in the application's thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <rte_random.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "internal.h"
#include "rdmacm.h"

#define ERR(e) (errno = (e), -1)

static void conn_handler(const struct droce_cm_event *ev);

/* ---- event channels ---- */

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	struct droce_rcm_chan *c;
	int fds[2];

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		free(c);
		return NULL;
	}
	/* the CM thread writes tokens: never block it (the read end keeps
	 * whatever flags the application sets) */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	c->ch.fd = fds[0];
	c->wfd = fds[1];
	pthread_mutex_init(&c->lock, NULL);
	TAILQ_INIT(&c->q);
	return &c->ch;
}

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct droce_rcm_chan *c = (struct droce_rcm_chan *)channel;
	struct droce_rcm_event *e;

	if (c == NULL)
		return;
	/* the man page: ids destroyed and events acked first; free leftovers */
	while ((e = TAILQ_FIRST(&c->q)) != NULL) {
		TAILQ_REMOVE(&c->q, e, link);
		free(e);
	}
	close(c->ch.fd);
	close(c->wfd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Writes the tokens owed; channel lock held. */
static void
chan_flush_tokens(struct droce_rcm_chan *c)
{
	static const uint8_t tok[64];

	while (c->owed > 0) {
		size_t n = c->owed < sizeof(tok) ? c->owed : sizeof(tok);
		ssize_t w = write(c->wfd, tok, n);

		if (w <= 0)
			break; /* pipe full: the reader frees room and flushes */
		c->owed -= (unsigned int)w;
	}
}

static void
chan_push(struct droce_rcm_chan *c, struct droce_rcm_event *e)
{
	pthread_mutex_lock(&c->lock);
	TAILQ_INSERT_TAIL(&c->q, e, link);
	c->owed++;
	chan_flush_tokens(c);
	pthread_mutex_unlock(&c->lock);
}

static struct droce_rcm_event *
ev_new(struct droce_rcm_id *owner, struct droce_rcm_id *id, enum rdma_cm_event_type type,
       int status)
{
	struct droce_rcm_event *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->owner = owner;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	return e;
}

/* Queues @e on its owner's channel (droce_rcm_lock held or not). */
static void
ev_queue(struct droce_rcm_event *e)
{
	chan_push(e->owner->chan, e);
}

static void
ev_conn_pdata(struct droce_rcm_event *e, const void *pd, size_t len)
{
	if (len > sizeof(e->pdata))
		len = sizeof(e->pdata);
	if (pd && len) {
		memcpy(e->pdata, pd, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
}

static void
ev_ud_pdata(struct droce_rcm_event *e, const void *pd, size_t len)
{
	if (len > sizeof(e->pdata))
		len = sizeof(e->pdata);
	if (pd && len) {
		memcpy(e->pdata, pd, len);
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = (uint8_t)len;
	}
}

/* Queues a plain event for @p (lock held); ENOMEM drops it silently,
 * as a kernel that cannot allocate an event does. */
static struct droce_rcm_event *
queue_simple(struct droce_rcm_id *p, enum rdma_cm_event_type type, int status)
{
	struct droce_rcm_event *e = ev_new(p, p, type, status);

	if (e)
		ev_queue(e);
	return e;
}

/* ---- QP state changes (librdmacm's ucma_modify_qp_*) ---- */

static int
modify_qp_err(struct droce_rcm_id *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (p->id.qp == NULL)
		return 0;
	return ibv_modify_qp(p->id.qp, &a, IBV_QP_STATE);
}

static int
modify_qp_rtr(struct droce_rcm_id *p, uint8_t resp_res)
{
	struct ibv_qp_attr a;
	int mask, rc;

	if (p->id.qp == NULL)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(&p->id, &a, &mask) != 0)
		return -1;
	rc = ibv_modify_qp(p->id.qp, &a, mask);
	if (rc != 0)
		return ERR(rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(&p->id, &a, &mask) != 0)
		return -1;
	if (resp_res != RDMA_MAX_RESP_RES)
		a.max_dest_rd_atomic = resp_res;
	rc = ibv_modify_qp(p->id.qp, &a, mask);
	return rc ? ERR(rc) : 0;
}

static int
modify_qp_rts(struct droce_rcm_id *p, uint8_t init_depth)
{
	struct ibv_qp_attr a;
	int mask, rc;

	if (p->id.qp == NULL)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(&p->id, &a, &mask) != 0)
		return -1;
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		a.max_rd_atomic = init_depth;
	rc = ibv_modify_qp(p->id.qp, &a, mask);
	return rc ? ERR(rc) : 0;
}

/* ---- getting and acking events ---- */

static void
id_event_completed(struct droce_rcm_id *p)
{
	pthread_mutex_lock(&p->mut);
	p->events_completed++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mut);
}

int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct droce_rcm_event *e = (struct droce_rcm_event *)event;

	if (e == NULL)
		return ERR(EINVAL);
	id_event_completed(e->owner);
	free(e);
	return 0;
}

/* A REP taken by the application thread: RTR, RTS, RTU (librdmacm's
 * ucma_process_conn_resp), or CONNECT_RESPONSE for a QP-less id. */
static void
process_conn_resp(struct droce_rcm_event *e)
{
	struct droce_rcm_id *p = e->owner;
	struct droce_cm_conn *conn;
	int rc = 0;

	if (p->id.qp == NULL) {
		e->ev.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
		return;
	}
	if (modify_qp_rtr(p, RDMA_MAX_RESP_RES) != 0 || modify_qp_rts(p, RDMA_MAX_INIT_DEPTH) != 0)
		rc = errno ? errno : EINVAL;
	pthread_mutex_lock(&droce_rcm_lock);
	conn = p->conn;
	if (rc == 0 && conn && p->state == DROCE_RCM_CONN_RESPONSE) {
		rc = droce_cm_rtu(conn, NULL, 0);
		if (rc != 0)
			rc = errno ? errno : EIO;
	} else if (rc == 0) {
		rc = ECONNABORTED; /* rejected or timed out meanwhile */
	}
	if (rc == 0) {
		p->state = DROCE_RCM_ESTABLISHED;
		e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
	} else {
		if (conn && p->state == DROCE_RCM_CONN_RESPONSE)
			droce_cm_reject(conn, DROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		p->state = DROCE_RCM_ERROR;
		p->connect_error = true;
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		e->ev.status = -rc;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	if (rc != 0)
		modify_qp_err(p);
}

int
rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct droce_rcm_chan *c = (struct droce_rcm_chan *)channel;
	struct droce_rcm_event *e;

	if (c == NULL || event == NULL)
		return ERR(EINVAL);
	for (;;) {
		uint8_t tok;
		ssize_t n = read(c->ch.fd, &tok, 1);

		if (n < 0)
			return -1; /* EAGAIN with O_NONBLOCK, EINTR */
		if (n == 0)
			return ERR(ENODATA);
		pthread_mutex_lock(&c->lock);
		e = TAILQ_FIRST(&c->q);
		if (e)
			TAILQ_REMOVE(&c->q, e, link);
		chan_flush_tokens(c);
		pthread_mutex_unlock(&c->lock);
		if (e != NULL)
			break;
		/* the token of an event dropped with its id: read on */
	}
	pthread_mutex_lock(&e->owner->mut);
	e->owner->events_reported++;
	pthread_mutex_unlock(&e->owner->mut);
	if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* taken: no longer counts against the listener's backlog */
		pthread_mutex_lock(&droce_rcm_lock);
		if (e->owner->pending > 0)
			e->owner->pending--;
		droce_rcm_id_of(e->ev.id)->listener = NULL;
		pthread_mutex_unlock(&droce_rcm_lock);
	}
	switch (e->kind) {
	case DROCE_RCM_EVK_CONN_RESP:
		process_conn_resp(e);
		break;
	case DROCE_RCM_EVK_REJECTED:
		modify_qp_err(e->owner);
		break;
	default:
		break;
	}
	*event = &e->ev;
	return 0;
}

const char *
rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event >= sizeof(names) / sizeof(names[0]) || names[event] == NULL)
		return "UNKNOWN EVENT";
	return names[event];
}

/* ---- ids ---- */

static struct droce_rcm_id *
id_alloc(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps,
	 enum ibv_qp_type qp_type)
{
	struct droce_rcm_id *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (channel == NULL) {
		channel = rdma_create_event_channel();
		if (channel == NULL) {
			free(p);
			return NULL;
		}
		p->sync = true;
	}
	p->id.channel = channel;
	p->chan = (struct droce_rcm_chan *)channel;
	p->id.context = context;
	p->id.ps = ps;
	p->id.qp_type = qp_type;
	p->port = -1;
	p->afonly = 0;
	p->qkey = RDMA_UDP_QKEY;
	p->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
	pthread_mutex_init(&p->mut, NULL);
	pthread_cond_init(&p->cond, NULL);
	return p;
}

static void
id_free(struct droce_rcm_id *p)
{
	if (p->sync)
		rdma_destroy_event_channel(p->id.channel);
	free(p->id.route.path_rec);
	free(p->qp_init_attr);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mut);
	free(p);
}

static int
create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
	   enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct droce_rcm_id *p;

	if (id == NULL)
		return ERR(EINVAL);
	if (ps == RDMA_PS_IPOIB || ps == RDMA_PS_IB)
		return ERR(EPROTONOSUPPORT); /* no IPoIB / native IB addressing on RoCE */
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP)
		return ERR(EINVAL);
	if ((ps == RDMA_PS_TCP && qp_type != IBV_QPT_RC && qp_type != IBV_QPT_UC) ||
	    (ps == RDMA_PS_UDP && qp_type != IBV_QPT_UD))
		return ERR(EINVAL);
	if (droce_rcm_init() != 0)
		return -1;
	p = id_alloc(channel, context, ps, qp_type);
	if (p == NULL)
		return -1;
	*id = &p->id;
	return 0;
}

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
	       enum rdma_port_space ps)
{
	return create_id2(channel, id, context, ps, ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC);
}

/* Drops the events of @p still queued on @c (lock of @c not held).  A
 * CONNECT_REQUEST names a new id that nobody will ever see: it is
 * rejected and freed (returned through @orphans). */
static void
drop_queued(struct droce_rcm_chan *c, struct droce_rcm_id *p, struct droce_rcm_id **orphans,
	    unsigned int *n_orphans, unsigned int max_orphans)
{
	struct droce_rcm_event *e, *next;

	pthread_mutex_lock(&c->lock);
	for (e = TAILQ_FIRST(&c->q); e; e = next) {
		next = TAILQ_NEXT(e, link);
		if (e->owner != p && e->ev.id != &p->id)
			continue;
		TAILQ_REMOVE(&c->q, e, link);
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.id != &p->id &&
		    *n_orphans < max_orphans)
			orphans[(*n_orphans)++] = droce_rcm_id_of(e->ev.id);
		free(e);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Ends @p's connection (lock held): what the kernel's cma does when an id
 * goes away.  Returns the connection to release after unlocking. */
static struct droce_cm_conn *
id_end_conn_locked(struct droce_rcm_id *p)
{
	struct droce_cm_conn *conn = p->conn;

	p->conn = NULL;
	if (conn == NULL)
		return NULL;
	switch (p->state) {
	case DROCE_RCM_REQ_RCVD:
		if (p->id.qp_type == IBV_QPT_UD) {
			struct droce_cm_sidr_rep rep = { .status = DROCE_CM_SIDR_REJECT };

			droce_cm_sidr_rep(conn, &rep);
		} else {
			droce_cm_reject(conn, DROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		}
		break;
	case DROCE_RCM_CONNECT:
	case DROCE_RCM_CONN_RESPONSE:
	case DROCE_RCM_ACCEPTED:
		if (p->id.qp_type != IBV_QPT_UD)
			droce_cm_reject(conn, DROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case DROCE_RCM_ESTABLISHED:
		if (p->id.qp_type != IBV_QPT_UD)
			droce_cm_disconnect(conn, NULL, 0);
		break;
	case DROCE_RCM_DISCONNECTED:
		if (p->dreq_rcvd && !p->drep_sent)
			droce_cm_drep(conn, NULL, 0);
		break;
	default:
		break;
	}
	return conn;
}

static void destroy_orphan(struct droce_rcm_id *p);

static int
destroy_id(struct droce_rcm_id *p)
{
	struct droce_cm_listener *unlisten = NULL;
	struct droce_rcm_bind *free_bind = NULL;
	struct droce_cm_conn *conn;
	struct droce_rcm_id *orphans[64];
	unsigned int n_orphans = 0;

	pthread_mutex_lock(&droce_rcm_lock);
	p->destroying = true;
	conn = id_end_conn_locked(p);
	droce_rcm_unbind_locked(p, &unlisten, &free_bind);
	pthread_mutex_unlock(&droce_rcm_lock);
	/* after these no handler names @p or its bind */
	if (conn)
		droce_cm_conn_release(conn);
	if (unlisten)
		droce_cm_unlisten(unlisten);
	free(free_bind);
	drop_queued(p->chan, p, orphans, &n_orphans, 64);
	for (unsigned int i = 0; i < n_orphans; i++)
		destroy_orphan(orphans[i]);

	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	/* librdmacm: wait until every event handed out for the id is acked */
	pthread_mutex_lock(&p->mut);
	while (p->events_completed < p->events_reported)
		pthread_cond_wait(&p->cond, &p->mut);
	pthread_mutex_unlock(&p->mut);
	id_free(p);
	return 0;
}

static void
destroy_orphan(struct droce_rcm_id *p)
{
	destroy_id(p);
}

int
rdma_destroy_id(struct rdma_cm_id *id)
{
	if (id == NULL)
		return ERR(EINVAL);
	return destroy_id(droce_rcm_id_of(id));
}

/* librdmacm's ucma_complete: a synchronous id waits for its next event. */
static int
complete_sync(struct droce_rcm_id *p)
{
	struct rdma_cm_event *e;

	if (!p->sync)
		return 0;
	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	if (rdma_get_cm_event(p->id.channel, &e) != 0)
		return -1;
	p->id.event = e;
	if (e->status) {
		if (e->event == RDMA_CM_EVENT_REJECTED)
			return ERR(ECONNREFUSED);
		return ERR(e->status < 0 ? -e->status : e->status);
	}
	return 0;
}

/* ---- addresses and routes ---- */

int
rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct droce_rcm_id *p;
	int rc;

	if (id == NULL || addr == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return ERR(EAFNOSUPPORT);
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_IDLE || p->bound) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	rc = droce_rcm_bind_locked(p, addr);
	pthread_mutex_unlock(&droce_rcm_lock);
	if (rc != 0)
		return ERR(rc);
	if (p->port >= 0 && droce_rcm_dev_get((unsigned int)p->port, &p->id.verbs, &p->id.pd) != 0)
		return -1;
	if (p->port >= 0)
		p->id.port_num = DROCE_VERBS_PORT_NUM;
	return 0;
}

static int
gid_index_on(int port, const uint8_t gid[16])
{
	struct droce_port *dp = droce_port_get((unsigned int)port);

	return dp ? droce_port_find_gid(dp, gid) : -1;
}

/* The port's first GID of the family of @dgid. */
static int
pick_sgid(int port, const uint8_t dgid[16], uint8_t sgid[16])
{
	static const uint8_t v4m[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct droce_port *dp = droce_port_get((unsigned int)port);
	bool want4 = memcmp(dgid, v4m, 12) == 0;

	if (dp == NULL)
		return -1;
	for (unsigned int g = 0; g < dp->n_gids; g++) {
		if ((memcmp(dp->gids[g], v4m, 12) == 0) == want4) {
			memcpy(sgid, dp->gids[g], 16);
			return (int)g;
		}
	}
	return -1;
}

int
rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		  int timeout_ms)
{
	struct droce_rcm_id *p;
	uint8_t dgid[16], sgid[16];
	struct rte_ether_addr mac;
	int port, status = 0, rc;

	if (id == NULL || dst_addr == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (!droce_rcm_sa_to_gid(dst_addr, dgid))
		return ERR(EAFNOSUPPORT);
	if (droce_rcm_sa_is_any(dst_addr))
		return ERR(EINVAL);
	if (src_addr && src_addr->sa_family != dst_addr->sa_family &&
	    !droce_rcm_sa_is_any(src_addr))
		return ERR(EINVAL);
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_IDLE) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	if (!p->bound) {
		struct sockaddr_storage any;

		if (src_addr) {
			rc = droce_rcm_bind_locked(p, src_addr);
		} else {
			memset(&any, 0, sizeof(any));
			any.ss_family = dst_addr->sa_family;
			rc = droce_rcm_bind_locked(p, (struct sockaddr *)&any);
		}
		if (rc != 0) {
			pthread_mutex_unlock(&droce_rcm_lock);
			return ERR(rc);
		}
	}
	port = droce_rcm_route(dgid, p->port);
	memset(&p->id.route.addr.dst_storage, 0, sizeof(p->id.route.addr.dst_storage));
	memcpy(&p->id.route.addr.dst_storage, dst_addr, droce_rcm_sa_len(dst_addr));
	pthread_mutex_unlock(&droce_rcm_lock);

	if (port < 0) {
		status = -ENETUNREACH;
	} else if (p->port < 0 && pick_sgid(port, dgid, sgid) < 0) {
		status = -EADDRNOTAVAIL;
	} else if (droce_rcm_dev_get((unsigned int)port, &p->id.verbs, &p->id.pd) != 0) {
		status = -ENODEV;
	} else if (memcmp(dgid, (const uint8_t[12]){ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff },
			  12) == 0) {
		/* the peer's MAC, by ARP on the port (the kernel's neighbour
		 * resolution before ADDR_RESOLVED) */
		rte_be32_t ip;

		memcpy(&ip, dgid + 12, 4);
		rc = droce_dp_arp_resolve((unsigned int)port, ip, &mac,
					  timeout_ms > 0 ? (unsigned int)timeout_ms : 2000);
		if (rc != 0)
			status = rc == ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
	}
	/* IPv6: no neighbour discovery yet; the MAC is resolved at connect */

	pthread_mutex_lock(&droce_rcm_lock);
	if (status == 0) {
		if (p->port < 0) {
			p->port = port;
			memcpy(p->id.route.addr.addr.ibaddr.sgid.raw, sgid, 16);
			/* the wildcard binding becomes the chosen address */
			droce_rcm_gid_to_sa(sgid, droce_rcm_sa_port(&p->id.route.addr.src_addr),
					    &p->id.route.addr.src_storage);
		}
		memcpy(p->id.route.addr.addr.ibaddr.dgid.raw, dgid, 16);
		p->id.port_num = DROCE_VERBS_PORT_NUM;
		p->state = DROCE_RCM_ADDR_RESOLVED;
	}
	if (!queue_simple(p, status ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED,
			  status)) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(ENOMEM);
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return complete_sync(p);
}

static void
fill_path(struct droce_rcm_id *p)
{
	struct ibv_sa_path_rec *r = &p->path;

	memset(r, 0, sizeof(*r));
	memcpy(r->sgid.raw, p->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(r->dgid.raw, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	r->pkey = htons(0xffff);
	r->hop_limit = DROCE_RCM_DEFAULT_HOP_LIMIT;
	r->traffic_class = p->tos;
	r->flow_label = htonl(p->flow_label);
	r->reversible = 1;
	r->numb_path = 1;
	r->mtu_selector = 2; /* exactly */
	r->mtu = (uint8_t)droce_verbs_port_mtu((unsigned int)p->port);
	r->rate_selector = 2;
	r->rate = 3; /* 10 Gb/s */
	r->packet_life_time_selector = 2;
	r->packet_life_time = (p->ack_timeout ? p->ack_timeout : DROCE_RCM_DEFAULT_ACK_TIMEOUT) - 1;
}

int
rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct droce_rcm_id *p;
	int status = 0;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_ADDR_RESOLVED) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	if (gid_index_on(p->port, p->id.route.addr.addr.ibaddr.sgid.raw) < 0) {
		status = -EADDRNOTAVAIL;
	} else {
		if (p->id.route.path_rec == NULL)
			p->id.route.path_rec = calloc(1, sizeof(*p->id.route.path_rec));
		if (p->id.route.path_rec == NULL) {
			status = -ENOMEM;
		} else {
			fill_path(p);
			*p->id.route.path_rec = p->path;
			p->id.route.num_paths = 1;
			p->state = DROCE_RCM_ROUTE_RESOLVED;
		}
	}
	if (!queue_simple(p, status ? RDMA_CM_EVENT_ROUTE_ERROR : RDMA_CM_EVENT_ROUTE_RESOLVED,
			  status)) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(ENOMEM);
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return complete_sync(p);
}

__be16
rdma_get_src_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.src_addr;

	return htons(droce_rcm_sa_port(sa));
}

__be16
rdma_get_dst_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.dst_addr;

	return htons(droce_rcm_sa_port(sa));
}

/* ---- QPs ---- */

int
rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	struct droce_rcm_id *p;
	int rc = 0;

	if (id == NULL || a == NULL || mask == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->port < 0 || id->verbs == NULL) {
		rc = EINVAL;
		goto out;
	}
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = DROCE_VERBS_PORT_NUM;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			a->qkey = p->qkey;
			*mask |= IBV_QP_QKEY;
		} else {
			/* before the CM knows the peer: no remote access (the
			 * kernel's cma_ib_init_qp_attr); after: the IB CM's */
			a->qp_access_flags = 0;
			if (p->have_remote) {
				a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
				if (p->responder_resources)
					a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
							      IBV_ACCESS_REMOTE_ATOMIC;
			}
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (id->qp_type == IBV_QPT_UD)
			break;
		if (!p->have_remote) {
			rc = EINVAL;
			goto out;
		}
		memset(&a->ah_attr, 0, sizeof(a->ah_attr));
		a->ah_attr.is_global = 1;
		memcpy(a->ah_attr.grh.dgid.raw, id->route.addr.addr.ibaddr.dgid.raw, 16);
		a->ah_attr.grh.sgid_index =
			(uint8_t)gid_index_on(p->port, id->route.addr.addr.ibaddr.sgid.raw);
		a->ah_attr.grh.hop_limit = DROCE_RCM_DEFAULT_HOP_LIMIT;
		a->ah_attr.grh.traffic_class = p->tos;
		a->ah_attr.grh.flow_label = p->flow_label;
		a->ah_attr.port_num = DROCE_VERBS_PORT_NUM;
		a->path_mtu = p->path_mtu;
		a->dest_qp_num = p->remote_qpn;
		/* the Starting PSN a side puts in its REQ / REP is the PSN its
		 * own receive queue expects (the peer's send queue starts
		 * there), as in the kernel's IB CM: ib_send_cm_req / _rep keep
		 * their own message's PSN as rq_psn, cm_req_handler /
		 * cm_rep_handler take the peer's as sq_psn */
		a->rq_psn = p->local_psn;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (id->qp_type == IBV_QPT_RC) {
			a->max_dest_rd_atomic = p->responder_resources;
			a->min_rnr_timer = 0; /* as the kernel's IB CM */
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (id->qp_type == IBV_QPT_UD) {
			a->sq_psn = 0;
			break;
		}
		if (!p->have_remote) {
			rc = EINVAL;
			goto out;
		}
		a->sq_psn = p->remote_psn;      /* the peer's Starting PSN */
		if (id->qp_type == IBV_QPT_RC) {
			a->timeout = p->local_ack_timeout;
			a->retry_cnt = p->retry_count;
			a->rnr_retry = p->rnr_retry_count;
			a->max_rd_atomic = p->initiator_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		rc = EINVAL;
		break;
	}
out:
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

static void
destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
	if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

/* librdmacm's ucma_create_cqs: a CQ (cq_context = the id) and a completion
 * channel for each queue the caller did not give a CQ for. */
static int
create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->recv_cq_channel == NULL)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (id->recv_cq == NULL)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->send_cq_channel == NULL)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (id->send_cq == NULL)
			goto err;
	}
	return 0;
err:
	destroy_cqs(id);
	return -1;
}

static int
init_qp(struct droce_rcm_id *p, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int mask, rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(&p->id, &a, &mask) != 0)
		return -1;
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		return ERR(rc);
	if (p->id.qp_type != IBV_QPT_UD)
		return 0;
	/* an unconnected QP is ready to send at once (rdma_create_qp(3)) */
	a.qp_state = IBV_QPS_RTR;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (rc)
		return ERR(rc);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return rc ? ERR(rc) : 0;
}

int
rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct droce_rcm_id *p;
	struct ibv_qp *qp;

	if (id == NULL || attr == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (id->qp || id->verbs == NULL)
		return ERR(EINVAL);
	/* the other comp_mask bits (send_ops_flags ...) are ibv_create_qp_ex's to check */
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return ERR(EINVAL);
	}
	if (attr->qp_type != id->qp_type)
		return ERR(EINVAL);
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return ERR(EINVAL);
	if (create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
		       attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr) != 0)
		return -1;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr); /* updates attr->cap */
	if (qp == NULL)
		goto err1;
	if (init_qp(p, qp) != 0)
		goto err2;
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
err2:
	{
		int e = errno;

		ibv_destroy_qp(qp);
		errno = e;
	}
err1:
	{
		int e = errno;

		destroy_cqs(id);
		errno = e;
	}
	return -1;
}

int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;
	int rc;

	if (id == NULL || qp_init_attr == NULL)
		return ERR(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd ? pd : id->pd;
	rc = rdma_create_qp_ex(id, &ax);
	memcpy(qp_init_attr, &ax, sizeof(*qp_init_attr));
	return rc;
}

void
rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

/* ---- SRQs (rdma_verbs.h) ---- */

int
rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr ia;
	struct ibv_pd *pd;
	struct ibv_srq *srq;

	if (id == NULL || attr == NULL || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return ERR(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC)
		return ERR(EOPNOTSUPP); /* no XRC on droce */
	if (id->verbs == NULL || id->srq)
		return ERR(EINVAL);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd : id->pd;
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = attr->srq_context;
	ia.attr = attr->attr;
	srq = ibv_create_srq(pd, &ia);
	if (srq == NULL)
		return -1;
	attr->attr = ia.attr;
	attr->pd = pd;
	attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	if (id->pd == NULL)
		id->pd = pd;
	id->srq = srq;
	return 0;
}

int
rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	int rc;

	if (attr == NULL)
		return ERR(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = IBV_SRQT_BASIC;
	ax.pd = pd;
	rc = rdma_create_srq_ex(id, &ax);
	memcpy(attr, &ax, sizeof(*attr));
	return rc;
}

void
rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id == NULL || id->srq == NULL)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	destroy_cqs(id);
}

/* ---- the rdma_cm header (the kernel's struct cma_hdr) ---- */

static void
hdr_put(uint8_t *h, const struct sockaddr *src, const struct sockaddr *dst)
{
	uint16_t sport = htons(droce_rcm_sa_port(src));

	memset(h, 0, DROCE_RCM_HDR_LEN);
	h[0] = DROCE_RCM_HDR_VERSION;
	memcpy(h + 2, &sport, 2);
	if (src->sa_family == AF_INET) {
		h[1] = 4 << 4;
		memcpy(h + 4 + 12, &((const struct sockaddr_in *)src)->sin_addr, 4);
		memcpy(h + 20 + 12, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		h[1] = 6 << 4;
		memcpy(h + 4, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(h + 20, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
}

/* Parses a header: the peer's (src) and our (dst) addresses.  false if bad. */
static bool
hdr_get(const uint8_t *h, size_t len, struct sockaddr_storage *src, struct sockaddr_storage *dst,
	uint16_t dst_port)
{
	uint16_t sport;

	if (h == NULL || len < DROCE_RCM_HDR_LEN || h[0] != DROCE_RCM_HDR_VERSION)
		return false;
	memcpy(&sport, h + 2, 2);
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if ((h[1] >> 4) == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)src, *d = (struct sockaddr_in *)dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, h + 4 + 12, 4);
		memcpy(&d->sin_addr, h + 20 + 12, 4);
		s->sin_port = sport;
		d->sin_port = htons(dst_port);
		return true;
	}
	if ((h[1] >> 4) == 6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)src, *d = (struct sockaddr_in6 *)dst;

		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, h + 4, 16);
		memcpy(&d->sin6_addr, h + 20, 16);
		s->sin6_port = sport;
		d->sin6_port = htons(dst_port);
		return true;
	}
	return false;
}

/* ---- connecting ---- */

static uint8_t
clamp_rd(uint8_t v)
{
	uint8_t max = droce_rcm_max_rd_atomic();

	return v > max ? max : v;
}

static int
valid_param(struct droce_rcm_id *p, const struct rdma_conn_param *c)
{
	uint8_t max = droce_rcm_max_rd_atomic();

	if (p->id.ps != RDMA_PS_TCP)
		return 0;
	if (p->id.qp == NULL && c == NULL)
		return ERR(EINVAL);
	if (c == NULL)
		return 0;
	if (c->responder_resources != RDMA_MAX_RESP_RES && c->responder_resources > max)
		return ERR(EINVAL);
	if (c->initiator_depth != RDMA_MAX_INIT_DEPTH && c->initiator_depth > max)
		return ERR(EINVAL);
	return 0;
}

static void
fill_cm_addr(struct droce_rcm_id *p, struct droce_cm_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->port = (unsigned int)p->port;
	memcpy(a->sgid, p->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(a->dgid, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	a->flow_label = p->flow_label;
	a->traffic_class = p->tos;
	a->hop_limit = DROCE_RCM_DEFAULT_HOP_LIMIT;
}

static int
connect_ud(struct droce_rcm_id *p, const struct rdma_conn_param *c)
{
	struct droce_cm_sidr_req r;
	uint8_t pd[DROCE_CM_SIDR_REQ_PDATA];
	size_t ulen = c && c->private_data ? c->private_data_len : 0;
	int rc;

	if (ulen > DROCE_CM_SIDR_REQ_PDATA - DROCE_RCM_HDR_LEN)
		return EINVAL;
	memset(&r, 0, sizeof(r));
	fill_cm_addr(p, &r.addr);
	r.service_id = droce_rcm_service_id((uint16_t)p->id.ps,
					    droce_rcm_sa_port(&p->id.route.addr.dst_addr));
	r.pkey = 0xffff;
	hdr_put(pd, &p->id.route.addr.src_addr, &p->id.route.addr.dst_addr);
	if (ulen)
		memcpy(pd + DROCE_RCM_HDR_LEN, c->private_data, ulen);
	r.private_data = pd;
	r.private_data_len = (uint8_t)(DROCE_RCM_HDR_LEN + ulen);
	rc = droce_cm_sidr_req(&r, conn_handler, p, &p->conn);
	return rc ? (errno ? errno : EIO) : 0;
}

int
rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct droce_rcm_id *p;
	struct droce_cm_req r;
	uint8_t pd[DROCE_CM_REQ_PDATA];
	size_t ulen;
	int rc;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (valid_param(p, conn_param) != 0)
		return -1;
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	if (id->qp_type == IBV_QPT_UD) {
		rc = connect_ud(p, conn_param);
		if (rc == 0)
			p->state = DROCE_RCM_CONNECT;
		pthread_mutex_unlock(&droce_rcm_lock);
		if (rc != 0)
			return ERR(rc);
		return complete_sync(p);
	}
	ulen = conn_param && conn_param->private_data ? conn_param->private_data_len : 0;
	if (ulen > DROCE_CM_REQ_PDATA - DROCE_RCM_HDR_LEN) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	p->initiator_depth = conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH ?
			     conn_param->initiator_depth : droce_rcm_max_rd_atomic();
	p->responder_resources =
		conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES ?
		conn_param->responder_resources : droce_rcm_max_rd_atomic();
	memset(&r, 0, sizeof(r));
	fill_cm_addr(p, &r.addr);
	r.service_id = droce_rcm_service_id((uint16_t)p->id.ps,
					    droce_rcm_sa_port(&p->id.route.addr.dst_addr));
	r.qpn = id->qp ? id->qp->qp_num : (conn_param ? conn_param->qp_num : 0);
	r.srq = id->qp ? id->qp->srq != NULL : (conn_param ? conn_param->srq != 0 : false);
	p->local_psn = (uint32_t)(rte_rand() & 0xffffff);
	r.starting_psn = p->local_psn;
	r.qp_type = (uint8_t)id->qp_type;
	r.responder_resources = p->responder_resources;
	r.initiator_depth = p->initiator_depth;
	r.path_mtu = (uint8_t)droce_verbs_port_mtu((unsigned int)p->port);
	p->local_ack_timeout = p->ack_timeout ? p->ack_timeout : DROCE_RCM_DEFAULT_ACK_TIMEOUT;
	r.local_ack_timeout = p->local_ack_timeout;
	r.retry_count = conn_param ? conn_param->retry_count & 7 : 7;
	r.rnr_retry_count = conn_param ? conn_param->rnr_retry_count & 7 : 7;
	p->retry_count = r.retry_count;
	p->rnr_retry_count = r.rnr_retry_count;
	p->path_mtu = r.path_mtu;
	hdr_put(pd, &id->route.addr.src_addr, &id->route.addr.dst_addr);
	if (ulen)
		memcpy(pd + DROCE_RCM_HDR_LEN, conn_param->private_data, ulen);
	r.private_data = pd;
	r.private_data_len = (uint8_t)(DROCE_RCM_HDR_LEN + ulen);
	rc = droce_cm_connect(&r, conn_handler, p, &p->conn);
	if (rc != 0) {
		rc = errno ? errno : EIO;
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(rc);
	}
	p->state = DROCE_RCM_CONNECT;
	pthread_mutex_unlock(&droce_rcm_lock);
	return complete_sync(p);
}

int
rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct droce_rcm_id *p;
	struct droce_rcm_bind *b;
	struct droce_rcm_id *o;
	int rc = 0;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (!p->bound) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		/* the kernel binds an unbound listener to the wildcard */
		if (rdma_bind_addr(id, (struct sockaddr *)&any) != 0)
			return -1;
	}
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state == DROCE_RCM_LISTEN) {
		p->backlog = backlog > 0 && backlog < DROCE_RCM_MAX_BACKLOG ? backlog
								       : DROCE_RCM_MAX_BACKLOG;
		goto out;
	}
	if (p->state != DROCE_RCM_IDLE) {
		rc = EINVAL;
		goto out;
	}
	b = p->bind;
	TAILQ_FOREACH(o, &b->ids, bind_link) {
		if (o != p && o->state == DROCE_RCM_LISTEN) {
			uint8_t g1[16], g2[16];
			bool any1 = droce_rcm_sa_is_any(&o->id.route.addr.src_addr);
			bool any2 = droce_rcm_sa_is_any(&id->route.addr.src_addr);

			droce_rcm_sa_to_gid(&o->id.route.addr.src_addr, g1);
			droce_rcm_sa_to_gid(&id->route.addr.src_addr, g2);
			if (any1 || any2 || memcmp(g1, g2, 16) == 0) {
				rc = EADDRINUSE;
				goto out;
			}
		}
	}
	if (b->listener == NULL) {
		if (droce_cm_listen(droce_rcm_service_id(b->ps, b->port), droce_rcm_listen_handler,
				    b, &b->listener) != 0) {
			rc = errno ? errno : EIO;
			goto out;
		}
	}
	p->backlog = backlog > 0 && backlog < DROCE_RCM_MAX_BACKLOG ? backlog
							       : DROCE_RCM_MAX_BACKLOG;
	p->state = DROCE_RCM_LISTEN;
out:
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct droce_rcm_id *lp;
	struct rdma_cm_event *ev;
	int rc;

	if (listen == NULL || id == NULL)
		return ERR(EINVAL);
	lp = droce_rcm_id_of(listen);
	if (!lp->sync)
		return ERR(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev) != 0)
		return -1;
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		rc = ECONNREFUSED;
		goto err;
	}
	if (ev->status) {
		rc = ev->status < 0 ? -ev->status : ev->status;
		goto err;
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rc = EINVAL;
		goto err;
	}
	if (lp->qp_init_attr) {
		struct ibv_qp_init_attr attr = *lp->qp_init_attr;

		if (rdma_create_qp(ev->id, listen->pd, &attr) != 0) {
			rc = errno;
			goto err;
		}
	}
	*id = ev->id;
	(*id)->event = ev;
	return 0;
err:
	listen->event = ev;
	return ERR(rc);
}

int
rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct droce_rcm_id *p;
	size_t ulen;
	int rc;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (valid_param(p, conn_param) != 0)
		return -1;
	if (id->qp == NULL && conn_param == NULL)
		return ERR(EINVAL);
	ulen = conn_param && conn_param->private_data ? conn_param->private_data_len : 0;
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_REQ_RCVD || p->conn == NULL) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	if (id->qp_type == IBV_QPT_UD) {
		struct droce_cm_sidr_rep rep;

		if (ulen > DROCE_CM_SIDR_REP_PDATA) {
			pthread_mutex_unlock(&droce_rcm_lock);
			return ERR(EINVAL);
		}
		memset(&rep, 0, sizeof(rep));
		rep.status = DROCE_CM_SIDR_SUCCESS;
		rep.qpn = id->qp ? id->qp->qp_num : conn_param->qp_num;
		rep.qkey = p->qkey;
		rep.private_data = ulen ? conn_param->private_data : NULL;
		rep.private_data_len = (uint8_t)ulen;
		rc = droce_cm_sidr_rep(p->conn, &rep);
		if (rc == 0)
			p->state = DROCE_RCM_ESTABLISHED;
		else
			rc = errno ? errno : EIO;
		pthread_mutex_unlock(&droce_rcm_lock);
		if (rc)
			return ERR(rc);
		if (p->sync && id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		return 0;
	}
	if (ulen > DROCE_CM_REP_PDATA) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH)
		p->initiator_depth = clamp_rd(p->initiator_depth);
	else
		p->initiator_depth = conn_param->initiator_depth;
	if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES)
		p->responder_resources = clamp_rd(p->responder_resources);
	else
		p->responder_resources = conn_param->responder_resources;
	p->rnr_retry_count = conn_param ? conn_param->rnr_retry_count & 7 : 7;
	pthread_mutex_unlock(&droce_rcm_lock);

	/* RTR resolves the peer's MAC: outside the lock, in this thread */
	if (modify_qp_rtr(p, p->responder_resources) != 0 ||
	    modify_qp_rts(p, p->initiator_depth) != 0)
		return -1;

	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_REQ_RCVD || p->conn == NULL) {
		pthread_mutex_unlock(&droce_rcm_lock);
		modify_qp_err(p);
		return ERR(ECONNABORTED);
	}
	{
		struct droce_cm_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.qpn = id->qp ? id->qp->qp_num : conn_param->qp_num;
		rep.starting_psn = p->local_psn;
		rep.responder_resources = p->responder_resources;
		rep.initiator_depth = p->initiator_depth;
		rep.rnr_retry_count = p->rnr_retry_count;
		rep.target_ack_delay = 15;
		rep.srq = id->qp ? id->qp->srq != NULL : conn_param->srq != 0;
		rep.private_data = ulen ? conn_param->private_data : NULL;
		rep.private_data_len = (uint8_t)ulen;
		rc = droce_cm_accept(p->conn, &rep);
		if (rc == 0)
			p->state = DROCE_RCM_ACCEPTED;
		else
			rc = errno ? errno : EIO;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	if (rc) {
		modify_qp_err(p);
		return ERR(rc);
	}
	return complete_sync(p);
}

int
rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct droce_rcm_id *p;
	int rc;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (private_data == NULL)
		private_data_len = 0;
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_REQ_RCVD || p->conn == NULL) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	if (id->qp_type == IBV_QPT_UD) {
		struct droce_cm_sidr_rep rep;

		if (private_data_len > DROCE_CM_SIDR_REP_PDATA) {
			pthread_mutex_unlock(&droce_rcm_lock);
			return ERR(EINVAL);
		}
		memset(&rep, 0, sizeof(rep));
		rep.status = DROCE_CM_SIDR_REJECT;
		rep.private_data = private_data;
		rep.private_data_len = private_data_len;
		rc = droce_cm_sidr_rep(p->conn, &rep);
	} else {
		if (private_data_len > DROCE_CM_REJ_PDATA) {
			pthread_mutex_unlock(&droce_rcm_lock);
			return ERR(EINVAL);
		}
		rc = droce_cm_reject(p->conn, DROCE_CM_REJ_CONSUMER_DEFINED, private_data,
				     private_data_len);
	}
	if (rc == 0)
		p->state = DROCE_RCM_ERROR;
	else
		rc = errno ? errno : EIO;
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_establish(struct rdma_cm_id *id)
{
	struct droce_rcm_id *p;
	int rc = 0;

	if (id == NULL || id->qp)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_CONN_RESPONSE || p->conn == NULL) {
		rc = EINVAL;
	} else if (droce_cm_rtu(p->conn, NULL, 0) != 0) {
		rc = errno ? errno : EIO;
	} else {
		p->state = DROCE_RCM_ESTABLISHED;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct droce_rcm_id *p;
	int rc = 0;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (event != IBV_EVENT_COMM_EST)
		return 0; /* the kernel ignores every other event */
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state == DROCE_RCM_ACCEPTED && p->conn) {
		if (droce_cm_establish(p->conn) != 0)
			rc = errno ? errno : EIO;
	} else if (p->state != DROCE_RCM_ESTABLISHED) {
		rc = EINVAL;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_disconnect(struct rdma_cm_id *id)
{
	struct droce_rcm_id *p;
	bool wait = true;
	int rc = 0;

	if (id == NULL || id->verbs == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	/* librdmacm's ucma_shutdown: the QP to ERR, so outstanding WRs flush */
	if (modify_qp_err(p) != 0)
		return -1;
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->conn == NULL || id->qp_type == IBV_QPT_UD) {
		rc = EINVAL;
	} else if (p->dreq_rcvd) {
		if (p->drep_sent)
			rc = EINVAL;
		else if (droce_cm_drep(p->conn, NULL, 0) != 0)
			rc = errno ? errno : EIO;
		else
			p->drep_sent = true;
	} else if (p->state == DROCE_RCM_ESTABLISHED) {
		if (droce_cm_disconnect(p->conn, NULL, 0) != 0) {
			rc = errno ? errno : EIO;
		} else {
			p->dreq_sent = true;
			p->state = DROCE_RCM_DISCONNECTED;
		}
	} else if (p->state == DROCE_RCM_ACCEPTED || p->state == DROCE_RCM_CONNECT ||
		   p->state == DROCE_RCM_CONN_RESPONSE) {
		/* not established yet: the IB CM rejects (the kernel's
		 * ib_send_cm_dreq fails, then the id is torn down) */
		droce_cm_reject(p->conn, DROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		p->state = DROCE_RCM_ERROR;
		wait = false; /* no event answers a REJ */
	} else {
		rc = EINVAL;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	if (rc)
		return ERR(rc);
	return wait ? complete_sync(p) : 0;
}

/* ---- CM handlers ---- */

static void
ud_ah_attr(struct droce_rcm_id *p, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	ah->grh.sgid_index = (uint8_t)gid_index_on(p->port, p->id.route.addr.addr.ibaddr.sgid.raw);
	ah->grh.hop_limit = DROCE_RCM_DEFAULT_HOP_LIMIT;
	ah->grh.traffic_class = p->tos;
	ah->grh.flow_label = p->flow_label;
	ah->port_num = DROCE_VERBS_PORT_NUM;
}

/* Marks the connection disconnected and queues DISCONNECTED once. */
static void
disconnected_locked(struct droce_rcm_id *p, int status)
{
	p->state = DROCE_RCM_DISCONNECTED;
	if (p->disc_reported)
		return;
	p->disc_reported = true;
	queue_simple(p, RDMA_CM_EVENT_DISCONNECTED, status);
}

static void
conn_handler(const struct droce_cm_event *ev)
{
	struct droce_rcm_id *p = ev->ctx;
	struct droce_rcm_event *e;

	pthread_mutex_lock(&droce_rcm_lock);
	if (p == NULL || p->destroying || p->conn != ev->conn) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return;
	}
	switch (ev->type) {
	case DROCE_CM_EV_REP:
		if (p->state != DROCE_RCM_CONNECT)
			break;
		p->remote_qpn = ev->u.rep.qpn;
		p->remote_psn = ev->u.rep.starting_psn;
		/* never more than this side asked for in its REQ (a passive side
		 * may answer with more: perftest -R on Linux rxe offers 128) */
		if (ev->u.rep.responder_resources < p->initiator_depth)
			p->initiator_depth = ev->u.rep.responder_resources;
		if (ev->u.rep.initiator_depth < p->responder_resources)
			p->responder_resources = ev->u.rep.initiator_depth;
		p->have_remote = true;
		p->state = DROCE_RCM_CONN_RESPONSE;
		e = ev_new(p, p, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		if (e == NULL)
			break;
		e->kind = DROCE_RCM_EVK_CONN_RESP;
		ev_conn_pdata(e, ev->private_data, ev->private_data_len);
		e->ev.param.conn.responder_resources = ev->u.rep.initiator_depth;
		e->ev.param.conn.initiator_depth = ev->u.rep.responder_resources;
		e->ev.param.conn.rnr_retry_count = ev->u.rep.rnr_retry_count;
		e->ev.param.conn.srq = ev->u.rep.srq;
		e->ev.param.conn.qp_num = ev->u.rep.qpn;
		e->ev.param.conn.flow_control = 1;
		ev_queue(e);
		break;
	case DROCE_CM_EV_RTU:
		if (p->state != DROCE_RCM_ACCEPTED)
			break;
		p->state = DROCE_RCM_ESTABLISHED;
		queue_simple(p, RDMA_CM_EVENT_ESTABLISHED, 0);
		break;
	case DROCE_CM_EV_REJ:
		if (p->state != DROCE_RCM_CONNECT && p->state != DROCE_RCM_CONN_RESPONSE &&
		    p->state != DROCE_RCM_ACCEPTED && p->state != DROCE_RCM_REQ_RCVD)
			break;
		if (p->connect_error)
			break; /* librdmacm drops a REJ after CONNECT_ERROR */
		p->state = DROCE_RCM_ERROR;
		e = ev_new(p, p, RDMA_CM_EVENT_REJECTED, ev->u.rej.reason);
		if (e == NULL)
			break;
		e->kind = DROCE_RCM_EVK_REJECTED;
		ev_conn_pdata(e, ev->private_data, ev->private_data_len);
		ev_queue(e);
		break;
	case DROCE_CM_EV_REQ_TIMEOUT:
	case DROCE_CM_EV_REP_TIMEOUT:
	case DROCE_CM_EV_SIDR_TIMEOUT:
		if (p->state != DROCE_RCM_CONNECT && p->state != DROCE_RCM_ACCEPTED)
			break;
		p->state = DROCE_RCM_ERROR;
		queue_simple(p, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case DROCE_CM_EV_DREQ:
		p->dreq_rcvd = true;
		if (p->state == DROCE_RCM_ESTABLISHED || p->state == DROCE_RCM_ACCEPTED ||
		    p->state == DROCE_RCM_CONN_RESPONSE) {
			disconnected_locked(p, 0);
		} else if (p->state == DROCE_RCM_DISCONNECTED && p->dreq_sent) {
			/* both sides disconnected at once: answer, done */
			if (!p->drep_sent && droce_cm_drep(p->conn, NULL, 0) == 0)
				p->drep_sent = true;
			disconnected_locked(p, 0);
		}
		break;
	case DROCE_CM_EV_DREP:
		if (p->state == DROCE_RCM_DISCONNECTED)
			disconnected_locked(p, 0);
		break;
	case DROCE_CM_EV_DREQ_TIMEOUT:
		if (p->state == DROCE_RCM_DISCONNECTED)
			disconnected_locked(p, -ETIMEDOUT);
		break;
	case DROCE_CM_EV_TIMEWAIT_EXIT:
		if (p->state == DROCE_RCM_DISCONNECTED || p->state == DROCE_RCM_ERROR)
			queue_simple(p, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	case DROCE_CM_EV_SIDR_REP:
		if (p->state != DROCE_RCM_CONNECT)
			break;
		if (ev->u.sidr_rep.status != DROCE_CM_SIDR_SUCCESS) {
			p->state = DROCE_RCM_ERROR;
			e = ev_new(p, p, RDMA_CM_EVENT_UNREACHABLE, ev->u.sidr_rep.status);
			if (e == NULL)
				break;
			ev_ud_pdata(e, ev->private_data, ev->private_data_len);
			ev_queue(e);
			break;
		}
		p->state = DROCE_RCM_ESTABLISHED;
		p->remote_qpn = ev->u.sidr_rep.qpn;
		p->have_remote = true;
		e = ev_new(p, p, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (e == NULL)
			break;
		ev_ud_pdata(e, ev->private_data, ev->private_data_len);
		ud_ah_attr(p, &e->ev.param.ud.ah_attr);
		e->ev.param.ud.qp_num = ev->u.sidr_rep.qpn;
		e->ev.param.ud.qkey = ev->u.sidr_rep.qkey;
		ev_queue(e);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
}

/* The local GID of a REQ's addresses (cm.h names them from the receiver's
 * side: sgid ours, dgid the peer's). */
static void
req_gids(const struct droce_cm_addr *a, uint8_t local[16], uint8_t peer[16])
{
	memcpy(local, a->sgid, 16);
	memcpy(peer, a->dgid, 16);
	if (gid_index_on((int)a->port, local) < 0 && gid_index_on((int)a->port, peer) >= 0) {
		memcpy(local, a->dgid, 16);
		memcpy(peer, a->sgid, 16);
	}
}

void
droce_rcm_listen_handler(const struct droce_cm_event *ev)
{
	struct droce_rcm_bind *b = ev->ctx;
	const struct droce_cm_addr *ca;
	const uint8_t *pd = ev->private_data;
	size_t pdlen = ev->private_data_len;
	struct sockaddr_storage src, dst;
	struct droce_rcm_id *l, *p;
	struct droce_rcm_event *e;
	struct ibv_context *vctx = NULL;
	struct ibv_pd *vpd = NULL;
	uint8_t lgid[16], pgid[16], hdst[16];
	bool ud;

	if (ev->type != DROCE_CM_EV_REQ && ev->type != DROCE_CM_EV_SIDR_REQ)
		return;
	ud = ev->type == DROCE_CM_EV_SIDR_REQ;
	ca = ud ? &ev->u.sidr_req.addr : &ev->u.req.addr;
	if (pd == NULL) {
		pd = ud ? ev->u.sidr_req.private_data : ev->u.req.private_data;
		pdlen = ud ? ev->u.sidr_req.private_data_len : ev->u.req.private_data_len;
	}
	/* the new id's device (opened once; the first time takes a while) */
	if (droce_rcm_dev_get(ca->port, &vctx, &vpd) != 0) {
		pthread_mutex_lock(&droce_rcm_lock);
		goto reject;
	}
	pthread_mutex_lock(&droce_rcm_lock);
	l = NULL;
	if (hdr_get(pd, pdlen, &src, &dst, b->port)) {
		droce_rcm_sa_to_gid((struct sockaddr *)&dst, hdst);
		l = droce_rcm_find_listener(b, hdst);
	}
	if (l == NULL || l->pending >= l->backlog || (ud != (l->id.qp_type == IBV_QPT_UD)))
		goto reject;
	p = id_alloc(l->sync ? NULL : l->id.channel, l->id.context, l->id.ps, l->id.qp_type);
	if (p == NULL)
		goto reject;
	e = ev_new(l, p, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (e == NULL) {
		id_free(p);
		goto reject;
	}
	e->ev.listen_id = &l->id;
	req_gids(ca, lgid, pgid);
	p->port = (int)ca->port;
	p->id.verbs = vctx;
	p->id.pd = vpd;
	p->id.port_num = DROCE_VERBS_PORT_NUM;
	memcpy(&p->id.route.addr.src_storage, &dst, sizeof(dst));
	memcpy(&p->id.route.addr.dst_storage, &src, sizeof(src));
	memcpy(p->id.route.addr.addr.ibaddr.sgid.raw, lgid, 16);
	memcpy(p->id.route.addr.addr.ibaddr.dgid.raw, pgid, 16);
	p->tos = l->tos;
	p->ack_timeout = l->ack_timeout;
	p->conn = ev->conn;
	p->state = DROCE_RCM_REQ_RCVD;
	p->listener = l;
	fill_path(p);
	p->id.route.path_rec = malloc(sizeof(*p->id.route.path_rec));
	if (p->id.route.path_rec) {
		*p->id.route.path_rec = p->path;
		p->id.route.num_paths = 1;
	}
	if (ud) {
		ev_ud_pdata(e, pd + DROCE_RCM_HDR_LEN, pdlen - DROCE_RCM_HDR_LEN);
		ud_ah_attr(p, &e->ev.param.ud.ah_attr);
	} else {
		const struct droce_cm_req *rq = &ev->u.req;
		enum ibv_mtu mine = droce_verbs_port_mtu(ca->port);

		ev_conn_pdata(e, pd + DROCE_RCM_HDR_LEN, pdlen - DROCE_RCM_HDR_LEN);
		e->ev.param.conn.responder_resources = rq->initiator_depth;
		e->ev.param.conn.initiator_depth = rq->responder_resources;
		e->ev.param.conn.retry_count = rq->retry_count;
		e->ev.param.conn.rnr_retry_count = rq->rnr_retry_count;
		e->ev.param.conn.srq = rq->srq;
		e->ev.param.conn.qp_num = rq->qpn;
		e->ev.param.conn.flow_control = 1;
		/* librdmacm: the new id starts from the request's values */
		p->initiator_depth = rq->responder_resources;
		p->responder_resources = rq->initiator_depth;
		p->remote_qpn = rq->qpn;
		p->remote_psn = rq->starting_psn;
		p->local_psn = (uint32_t)(rte_rand() & 0xffffff);
		p->path_mtu = rq->path_mtu && rq->path_mtu < mine ? rq->path_mtu : (uint8_t)mine;
		p->retry_count = rq->retry_count;
		p->local_ack_timeout = p->ack_timeout ? p->ack_timeout
						      : DROCE_RCM_DEFAULT_ACK_TIMEOUT;
		p->have_remote = true;
	}
	l->pending++;
	droce_cm_conn_set_handler(ev->conn, conn_handler, p);
	ev_queue(e);
	pthread_mutex_unlock(&droce_rcm_lock);
	return;
reject:
	/* no id for it (the kernel's cma): REJ consumer defined / SIDR reject */
	if (ud) {
		struct droce_cm_sidr_rep rep = { .status = DROCE_CM_SIDR_REJECT };

		droce_cm_sidr_rep(ev->conn, &rep);
	} else {
		droce_cm_reject(ev->conn, DROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	droce_cm_conn_release(ev->conn);
}

/* ---- options, migration, endpoints ---- */

int
rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	struct droce_rcm_id *p;
	int rc = 0;

	if (id == NULL || optval == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (level == RDMA_OPTION_IB) {
		if (optname == RDMA_OPTION_IB_PATH)
			return ERR(EOPNOTSUPP); /* routes come from droce's ports */
		return ERR(ENOSYS);
	}
	if (level != RDMA_OPTION_ID)
		return ERR(ENOSYS);
	pthread_mutex_lock(&droce_rcm_lock);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			rc = EINVAL;
		else
			p->tos = *(uint8_t *)optval;
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int))
			rc = EINVAL;
		else if (p->bound)
			rc = EINVAL; /* the kernel: only before binding */
		else
			p->reuseaddr = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			rc = EINVAL;
		else if (p->bound)
			rc = EINVAL;
		else
			p->afonly = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			rc = EINVAL;
		else
			p->ack_timeout = *(uint8_t *)optval & 0x1f;
		break;
	default:
		rc = ENOSYS;
		break;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct droce_rcm_id *p;
	struct droce_rcm_chan *old, *nc;
	struct droce_rcm_event *e, *next;
	bool sync = channel == NULL;
	TAILQ_HEAD(, droce_rcm_event) moved = TAILQ_HEAD_INITIALIZER(moved);

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (p->sync && channel == NULL)
		return ERR(EINVAL);
	if (sync) {
		channel = rdma_create_event_channel();
		if (channel == NULL)
			return -1;
	}
	nc = (struct droce_rcm_chan *)channel;
	pthread_mutex_lock(&droce_rcm_lock);
	old = p->chan;
	/* events of @p not yet taken follow it to the new channel */
	pthread_mutex_lock(&old->lock);
	for (e = TAILQ_FIRST(&old->q); e; e = next) {
		next = TAILQ_NEXT(e, link);
		if (e->owner == p) {
			TAILQ_REMOVE(&old->q, e, link);
			TAILQ_INSERT_TAIL(&moved, e, link);
		}
	}
	pthread_mutex_unlock(&old->lock);
	p->chan = nc;
	id->channel = channel;
	while ((e = TAILQ_FIRST(&moved)) != NULL) {
		TAILQ_REMOVE(&moved, e, link);
		chan_push(nc, e);
	}
	pthread_mutex_unlock(&droce_rcm_lock);

	if (p->sync) {
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(&old->ch);
	}
	p->sync = sync;
	/* librdmacm: wait until the events taken from the old channel are acked */
	pthread_mutex_lock(&p->mut);
	while (p->events_completed < p->events_reported)
		pthread_cond_wait(&p->cond, &p->mut);
	pthread_mutex_unlock(&p->mut);
	return 0;
}

int
rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
	       struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct droce_rcm_id *p;

	if (id == NULL || res == NULL)
		return ERR(EINVAL);
	if (create_id2(NULL, &cm_id, NULL, (enum rdma_port_space)res->ai_port_space,
		       (enum ibv_qp_type)res->ai_qp_type) != 0)
		return -1;
	p = droce_rcm_id_of(cm_id);
	if (res->ai_flags & RAI_PASSIVE) {
		if (res->ai_src_addr == NULL) {
			errno = EINVAL;
			goto err;
		}
		if (rdma_bind_addr(cm_id, res->ai_src_addr) != 0)
			goto err;
		if (pd)
			cm_id->pd = pd;
		if (qp_init_attr) {
			p->qp_init_attr = malloc(sizeof(*qp_init_attr));
			if (p->qp_init_attr == NULL) {
				errno = ENOMEM;
				goto err;
			}
			*p->qp_init_attr = *qp_init_attr;
			p->qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		}
		*id = cm_id;
		return 0;
	}
	if (res->ai_dst_addr == NULL) {
		errno = EINVAL;
		goto err;
	}
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000) != 0)
		goto err;
	if (res->ai_route_len) {
		errno = EOPNOTSUPP;
		goto err;
	}
	if (rdma_resolve_route(cm_id, 2000) != 0)
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr) != 0)
			goto err;
	}
	if (res->ai_connect_len) {
		errno = EOPNOTSUPP; /* connect data comes from the IB ACM only */
		goto err;
	}
	*id = cm_id;
	return 0;
err:
	{
		int e = errno;

		rdma_destroy_ep(cm_id);
		errno = e;
	}
	return -1;
}

void
rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
