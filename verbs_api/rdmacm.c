/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm API (librdmacm's <rdma/rdma_cma.h>) over droce's IB CM
 * (cm.h): event channels, rdma_cm ids (synchronous with a NULL channel, or
 * asynchronous), rdma_create_ep, QPs that move through their states as
 * librdmacm moves them, connections (REQ/REP/RTU, REJ, DREQ/DREP) with the
 * rdma_cm private-data header, and SIDR for RDMA_PS_UDP.
 *
 * This file: ids, addresses and routes, options, migration, endpoints;
 * rdmacm_events.c, rdmacm_qp.c and rdmacm_conn.c hold the rest.
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
#include "fork.h"
#include "rdmacm.h"

#include <rdma/rdma_verbs.h>



/* ---- ids ---- */

struct droce_rcm_id *
rcm_id_alloc(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps,
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
	TAILQ_INIT(&p->mcs);
	pthread_mutex_init(&p->mut, NULL);
	pthread_cond_init(&p->cond, NULL);
	return p;
}

void
rcm_id_free(struct droce_rcm_id *p)
{
	rcm_mc_free_all(p);
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
	p = rcm_id_alloc(channel, context, ps, qp_type);
	if (p == NULL)
		return -1;
	*id = &p->id;
	return 0;
}

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
	       enum rdma_port_space ps)
{
	if (droce_fk_child_served())
		return droce_fk_cm_create_id(channel, id, context, ps);
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
	rcm_id_free(p);
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
	if (droce_fk_child_served())
		return droce_fk_cm_destroy_id(id, false);
	if (id == NULL)
		return ERR(EINVAL);
	return destroy_id(droce_rcm_id_of(id));
}

/* librdmacm's ucma_complete: a synchronous id waits for its next event. */
int
rcm_complete_sync(struct droce_rcm_id *p)
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
	if (droce_fk_child_served())
		return droce_fk_cm_bind_addr(id, addr);
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

int
rcm_gid_index_on(int port, const uint8_t gid[16])
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
	for (unsigned int g = 0; g < droce_port_gid_count(dp); g++) {
		if ((memcmp(droce_port_gid(dp, g), v4m, 12) == 0) == want4) {
			memcpy(sgid, droce_port_gid(dp, g), 16);
			return (int)g;
		}
	}
	return -1;
}

/* cma_bind_loopback's choice: the first port whose link is up, else the
 * first port; -1 with no port */
static int
loopback_port(void)
{
	unsigned int n = droce_port_count();

	for (unsigned int i = 0; i < n; i++) {
		struct droce_port *dp = droce_port_get(i);

		if (dp != NULL && droce_port_gid_count(dp) > 0 && droce_port_link_up(dp))
			return (int)i;
	}
	if (n > 0 && droce_port_get(0) != NULL && droce_port_gid_count(droce_port_get(0)) > 0)
		return 0;
	return -1;
}

/* The kernel's cma_set_loopback: 127.0.0.1 or ::1, the port kept. */
static void
set_loopback(struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_addr = in6addr_loopback;
}

int
rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		  int timeout_ms)
{
	if (droce_fk_child_served())
		return droce_fk_cm_resolve_addr(id, src_addr, dst_addr, timeout_ms);
	struct droce_rcm_id *p;
	uint8_t dgid[16], sgid[16];
	struct rte_ether_addr mac;
	int port, status = 0, rc;
	bool loop;

	if (id == NULL || dst_addr == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (!droce_rcm_sa_to_gid(dst_addr, dgid))
		return ERR(EAFNOSUPPORT);
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
	loop = droce_rcm_sa_is_any(dst_addr);
	if (loop) {
		/* the kernel's cma_resolve_loopback, for a wildcard or loopback
		 * destination: an id not on a device yet takes the first port
		 * whose link is up (else the first port) and its GID index 0
		 * (cma_bind_loopback, which also makes the id's source address
		 * the loopback one); the destination GID is the source GID: a
		 * connection to this port itself.  (The kernel's RoCE route
		 * resolution then fails, ENODEV: a loopback-bound id has no
		 * netdev; droce's resolves, and the connection works.) */
		port = p->port >= 0 ? p->port : loopback_port();
		if (port < 0) {
			pthread_mutex_unlock(&droce_rcm_lock);
			return ERR(ENODEV);
		}
		if (p->port >= 0) {
			memcpy(sgid, p->id.route.addr.addr.ibaddr.sgid.raw, 16);
		} else {
			struct droce_port *dp = droce_port_get((unsigned int)port);

			memcpy(sgid, droce_port_gid(dp, 0), 16);
		}
		memcpy(dgid, sgid, 16);
	} else {
		port = droce_rcm_route(dgid, p->port);
	}
	memset(&p->id.route.addr.dst_storage, 0, sizeof(p->id.route.addr.dst_storage));
	memcpy(&p->id.route.addr.dst_storage, dst_addr, droce_rcm_sa_len(dst_addr));
	pthread_mutex_unlock(&droce_rcm_lock);

	if (port < 0) {
		status = -ENETUNREACH;
	} else if (p->port < 0 && !loop && pick_sgid(port, dgid, sgid) < 0) {
		status = -EADDRNOTAVAIL;
	} else if (droce_rcm_dev_get((unsigned int)port, &p->id.verbs, &p->id.pd) != 0) {
		status = -ENODEV;
	} else if (!droce_gid_is_mcast(dgid)) {
		/* the peer's MAC, by ARP or IPv6 neighbour discovery on the port
		 * (the kernel's neighbour resolution before ADDR_RESOLVED) */
		rc = droce_dp_neigh_resolve((unsigned int)port, dgid, &mac,
					    timeout_ms > 0 ? (unsigned int)timeout_ms : 2000);
		if (rc != 0)
			status = rc == ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
	}
	if (status == 0 && droce_gid_is_mcast(dgid)) {
		/* a group needs no neighbour, but its datagrams need the link:
		 * wait for it as ARP would have (a memif peer connecting) */
		struct droce_port *dp = droce_port_get((unsigned int)port);
		unsigned int waited = 0, limit = timeout_ms > 0 ? (unsigned int)timeout_ms : 2000;

		while (dp != NULL && !droce_port_link_up(dp) && waited < limit) {
			usleep(1000);
			waited++;
		}
	}

	pthread_mutex_lock(&droce_rcm_lock);
	if (status == 0) {
		if (p->port < 0) {
			p->port = port;
			memcpy(p->id.route.addr.addr.ibaddr.sgid.raw, sgid, 16);
			/* the wildcard binding becomes the chosen address (the
			 * loopback one for a loopback destination, as the
			 * kernel's cma_set_loopback) */
			if (loop)
				set_loopback(&p->id.route.addr.src_addr);
			else
				droce_rcm_gid_to_sa(sgid, droce_rcm_sa_port(&p->id.route.addr.src_addr),
						    &p->id.route.addr.src_storage);
		}
		memcpy(p->id.route.addr.addr.ibaddr.dgid.raw, dgid, 16);
		p->id.port_num = DROCE_VERBS_PORT_NUM;
		p->state = DROCE_RCM_ADDR_RESOLVED;
	}
	if (!rcm_queue_simple(p, status ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED,
			  status)) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(ENOMEM);
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return rcm_complete_sync(p);
}

void
rcm_fill_path(struct droce_rcm_id *p)
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
	if (droce_fk_child_served())
		return droce_fk_cm_resolve_route(id, timeout_ms);
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
	if (rcm_gid_index_on(p->port, p->id.route.addr.addr.ibaddr.sgid.raw) < 0) {
		status = -EADDRNOTAVAIL;
	} else {
		if (p->id.route.path_rec == NULL)
			p->id.route.path_rec = calloc(1, sizeof(*p->id.route.path_rec));
		if (p->id.route.path_rec == NULL) {
			status = -ENOMEM;
		} else {
			rcm_fill_path(p);
			*p->id.route.path_rec = p->path;
			p->id.route.num_paths = 1;
			p->state = DROCE_RCM_ROUTE_RESOLVED;
		}
	}
	if (!rcm_queue_simple(p, status ? RDMA_CM_EVENT_ROUTE_ERROR : RDMA_CM_EVENT_ROUTE_RESOLVED,
			  status)) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(ENOMEM);
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return rcm_complete_sync(p);
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

/* ---- options, migration, endpoints ---- */

int
rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	if (droce_fk_child_served())
		return droce_fk_cm_set_option(id, level, optname, optval, optlen);
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
	if (droce_fk_child_served())
		return ERR(EOPNOTSUPP) /* not in a forked child yet */;
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
		rcm_chan_push(nc, e);
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
	if (droce_fk_child_served())
		return droce_fk_cm_create_ep(id, res, pd, qp_init_attr);
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
	if (droce_fk_child_served()) {
		droce_fk_cm_destroy_id(id, true);
		return;
	}
	if (id == NULL)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
