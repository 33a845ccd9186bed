/* SPDX-License-Identifier: BSD-3-Clause
 * Over 1,100 lines: the descriptor table, set-up, teardown, names and options of one socket API; the options could move to their own file next time.
 * rsockets: descriptors, connection set-up and teardown, names, options and
 * keepalive (rsocket.h has the protocol and the threading rules).
 *
 * A socket is an rdma_cm id with its own event channel, whose fd is the
 * socket's descriptor (unique in the process, pollable).  The channel is
 * non-blocking: a socket's CM events are taken by whichever call looks at
 * the socket (droce_rs_cm_progress) and move its state on, so rconnect works
 * blocking and non-blocking alike.  A listener's channel carries only
 * connection requests; raccept takes them, moves the new id to a channel of
 * its own, and accepts with the rsocket connection data.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "rsocket.h"

/* Timeouts of the steps of rconnect (ms), as rdma-core's first try. */
#define RESOLVE_MS 2000
/* rshutdown / rclose: how long to wait for sends to complete (ms). */
#define DRAIN_MS 10000
#define LISTEN_SLICE_MS 200

int
droce_rs_errno(int e)
{
	errno = e;
	return -1;
}

uint64_t
droce_rs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the descriptor table: fd -> socket, read without a lock ---- */

#define TABLE_PAGE 1024
#define TABLE_PAGES 1024
static _Atomic(struct droce_rs *) *table[TABLE_PAGES];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

struct droce_rs *
droce_rs_lookup(int fd)
{
	_Atomic(struct droce_rs *) *page;

	if (fd < 0 || fd >= TABLE_PAGE * TABLE_PAGES)
		return NULL;
	page = __atomic_load_n(&table[fd / TABLE_PAGE], __ATOMIC_ACQUIRE);
	return page ? atomic_load_explicit(&page[fd % TABLE_PAGE], memory_order_acquire) : NULL;
}

static int
table_set(int fd, struct droce_rs *rs)
{
	_Atomic(struct droce_rs *) *page;

	if (fd < 0 || fd >= TABLE_PAGE * TABLE_PAGES)
		return droce_rs_errno(EMFILE);
	pthread_mutex_lock(&table_lock);
	page = table[fd / TABLE_PAGE];
	if (page == NULL) {
		page = calloc(TABLE_PAGE, sizeof(*page));
		if (page == NULL) {
			pthread_mutex_unlock(&table_lock);
			return droce_rs_errno(ENOMEM);
		}
		__atomic_store_n(&table[fd / TABLE_PAGE], page, __ATOMIC_RELEASE);
	}
	atomic_store_explicit(&page[fd % TABLE_PAGE], rs, memory_order_release);
	pthread_mutex_unlock(&table_lock);
	return 0;
}

/* ---- keepalive: one thread for every socket with SO_KEEPALIVE ---- */

static pthread_mutex_t ka_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ka_cond = PTHREAD_COND_INITIALIZER;
static struct droce_rs *ka_list;
static bool ka_running;

static void *
ka_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "droce-rsock");
	pthread_mutex_lock(&ka_lock);
	while (ka_list != NULL) {
		uint64_t now = droce_rs_now_ms(), next = now + 1000;
		struct timespec ts;

		for (struct droce_rs *rs = ka_list; rs; rs = rs->ka_next) {
			pthread_mutex_lock(&rs->lock);
			if (rs->keepalive_due <= now) {
				droce_rs_progress(rs);
				if (rs->state == DROCE_RS_CONNECTED && droce_rs_ctrl_avail(rs))
					droce_rs_post_ctrl(rs, DROCE_RS_CTRL_KEEPALIVE);
				rs->keepalive_due = now + (uint64_t)rs->keepalive_time * 1000u;
			}
			if (rs->keepalive_due < next)
				next = rs->keepalive_due;
			pthread_mutex_unlock(&rs->lock);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		next -= now;
		ts.tv_sec += (time_t)(next / 1000);
		ts.tv_nsec += (long)(next % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ka_cond, &ka_lock, &ts);
	}
	ka_running = false;
	pthread_mutex_unlock(&ka_lock);
	return NULL;
}

/* Wakes the keepalive thread (a time changed).  Call without rs->lock held. */
static void
ka_kick(void)
{
	pthread_mutex_lock(&ka_lock);
	pthread_cond_broadcast(&ka_cond);
	pthread_mutex_unlock(&ka_lock);
}

/* Adds (on) or removes @rs.  Call without rs->lock held. */
static int
ka_set(struct droce_rs *rs, bool on)
{
	struct droce_rs **pp;
	int rc = 0;

	pthread_mutex_lock(&ka_lock);
	for (pp = &ka_list; *pp && *pp != rs; pp = &(*pp)->ka_next)
		;
	if (!on && *pp) {
		*pp = rs->ka_next;
		rs->ka_next = NULL;
	} else if (on && *pp == NULL) {
		pthread_mutex_lock(&rs->lock);
		rs->keepalive_due = droce_rs_now_ms() + (uint64_t)rs->keepalive_time * 1000u;
		pthread_mutex_unlock(&rs->lock);
		rs->ka_next = ka_list;
		ka_list = rs;
		if (!ka_running) {
			pthread_t t;
			pthread_attr_t a;

			pthread_attr_init(&a);
			pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&t, &a, ka_main, NULL) == 0) {
				ka_running = true;
			} else {
				ka_list = rs->ka_next;
				rc = droce_rs_errno(EAGAIN);
			}
			pthread_attr_destroy(&a);
		}
	}
	rs->keepalive = on && rc == 0;
	pthread_cond_broadcast(&ka_cond);
	pthread_mutex_unlock(&ka_lock);
	return rc;
}

static unsigned int
ka_default_time(void)
{
	unsigned int t = 7200;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "r");

	if (f) {
		if (fscanf(f, "%u", &t) != 1 || t == 0)
			t = 7200;
		fclose(f);
	}
	return t;
}

/* ---- sockets ---- */

static struct droce_rs *
rs_alloc(const struct droce_rs *parent)
{
	struct droce_rs *rs = calloc(1, sizeof(*rs));

	if (rs == NULL)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->fd = -1;
	rs->type = SOCK_STREAM;
	rs->ctrl_max_seqno = DROCE_RS_CTRL_SLOTS;
	if (parent) {
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_inline = parent->sq_inline;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->target_iomap_size = parent->target_iomap_size;
		rs->fs_flags = parent->fs_flags;
		rs->fd_flags = parent->fd_flags;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
		rs->keepalive_time = parent->keepalive_time;
	} else {
		rs->sbuf_size = DROCE_RS_DEF_MEM;
		rs->rbuf_size = DROCE_RS_DEF_MEM;
		rs->sq_inline = DROCE_RS_DEF_INLINE;
		rs->sq_size = DROCE_RS_DEF_QSIZE;
		rs->rq_size = DROCE_RS_DEF_QSIZE;
	}
	return rs;
}

static int
open_channel(struct droce_rs *rs)
{
	int fl;

	rs->cmch = rdma_create_event_channel();
	if (rs->cmch == NULL)
		return -1;
	fl = fcntl(rs->cmch->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->cmch->fd, F_SETFL, fl | O_NONBLOCK) != 0)
		return -1;
	if (rs->fd_flags & FD_CLOEXEC)
		fcntl(rs->cmch->fd, F_SETFD, FD_CLOEXEC);
	rs->fd = rs->cmch->fd;
	return 0;
}

static void
rs_destroy(struct droce_rs *rs)
{
	droce_rs_free_ep(rs);
	if (rs->id)
		rdma_destroy_id(rs->id);
	if (rs->cmch)
		rdma_destroy_event_channel(rs->cmch);
	free(rs->route);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

int
rsocket(int domain, int type, int protocol)
{
	int st = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct droce_rs *rs;

	if ((domain != AF_INET && domain != AF_INET6) || st != SOCK_STREAM ||
	    (protocol && protocol != IPPROTO_TCP))
		return droce_rs_errno(ENOTSUP); /* SOCK_DGRAM and AF_IB: not done */
	rs = rs_alloc(NULL);
	if (rs == NULL)
		return droce_rs_errno(ENOMEM);
	rs->fd_flags = (type & SOCK_CLOEXEC) ? FD_CLOEXEC : 0;
	rs->fs_flags = (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0;
	if (open_channel(rs) != 0 || rdma_create_id(rs->cmch, &rs->id, rs, RDMA_PS_TCP) != 0)
		goto err;
	rs->id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	if (table_set(rs->fd, rs) != 0)
		goto err;
	return rs->fd;
err: {
	int e = errno;

	rs_destroy(rs);
	return droce_rs_errno(e);
}
}

int
rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	int rc;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (addr == NULL || addrlen < sizeof(struct sockaddr_in) ||
	    (addr->sa_family == AF_INET6 && addrlen < sizeof(struct sockaddr_in6)))
		return droce_rs_errno(EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return droce_rs_errno(EAFNOSUPPORT);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != DROCE_RS_INIT) {
		pthread_mutex_unlock(&rs->lock);
		return droce_rs_errno(EINVAL);
	}
	rc = rdma_bind_addr(rs->id, (struct sockaddr *)(uintptr_t)addr);
	if (rc == 0)
		rs->state = DROCE_RS_BOUND;
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

int
rlisten(int socket, int backlog)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	int rc = 0;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == DROCE_RS_LISTENING) {
		pthread_mutex_unlock(&rs->lock);
		return 0;
	}
	if (rs->state != DROCE_RS_INIT && rs->state != DROCE_RS_BOUND) {
		pthread_mutex_unlock(&rs->lock);
		return droce_rs_errno(EINVAL);
	}
	if (rs->state == DROCE_RS_INIT) {
		struct sockaddr_in6 any = { .sin6_family = AF_INET6 };
		struct sockaddr_in any4 = { .sin_family = AF_INET };

		rc = rdma_bind_addr(rs->id, rs->id->route.addr.src_addr.sa_family == AF_INET6 ?
						    (struct sockaddr *)&any : (struct sockaddr *)&any4);
	}
	if (rc == 0)
		rc = rdma_listen(rs->id, backlog);
	if (rc == 0) {
		rs->state = DROCE_RS_LISTENING;
		rs->backlog = backlog;
	}
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

static bool
nonblocking(const struct droce_rs *rs)
{
	return (rs->fs_flags & O_NONBLOCK) != 0;
}

/* Accepts one request on a socket of its own; NULL (request rejected). */
static struct droce_rs *
accept_one(struct droce_rs *l, struct rdma_cm_id *id, const uint8_t *pdata, size_t plen,
	   const struct rdma_conn_param *req)
{
	struct droce_rs *rs = rs_alloc(l);
	struct droce_rs_conn_data resp;
	struct rdma_conn_param p;

	if (rs == NULL) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return NULL;
	}
	if (open_channel(rs) != 0 || rdma_migrate_id(id, rs->cmch) != 0) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		rs_destroy(rs);
		return NULL;
	}
	rs->id = id;
	id->context = rs;
	if (droce_rs_create_ep(rs) != 0 || droce_rs_save_conn(rs, pdata, plen) != 0)
		goto reject;
	droce_rs_format_conn(rs, &resp);
	memset(&p, 0, sizeof(p));
	p.private_data = &resp;
	p.private_data_len = sizeof(resp);
	p.responder_resources = req->responder_resources;
	p.initiator_depth = req->initiator_depth;
	p.flow_control = 1;
	p.rnr_retry_count = 7;
	if (rdma_accept(id, &p) != 0)
		goto reject;
	/* the QP is RTS: data may flow before the RTU's ESTABLISHED is taken */
	rs->state = DROCE_RS_CONNECTED;
	rs->rd_open = rs->wr_open = true;
	if (table_set(rs->fd, rs) != 0) {
		rdma_disconnect(id);
		rs_destroy(rs);
		return NULL;
	}
	return rs;
reject:
	rdma_reject(id, NULL, 0);
	rs_destroy(rs);
	return NULL;
}

static void copy_addr(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src);

int
raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct droce_rs *l = droce_rs_lookup(socket);

	if (l == NULL)
		return droce_rs_errno(EBADF);
	pthread_mutex_lock(&l->lock);
	if (l->state != DROCE_RS_LISTENING) {
		pthread_mutex_unlock(&l->lock);
		return droce_rs_errno(EINVAL);
	}
	for (;;) {
		struct rdma_cm_event *ev;
		struct rdma_conn_param req;
		struct rdma_cm_id *id;
		struct droce_rs *rs;
		uint8_t pdata[256];
		size_t plen;

		if (rdma_get_cm_event(l->cmch, &ev) != 0) {
			struct pollfd p = { .fd = l->cmch->fd, .events = POLLIN };

			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				pthread_mutex_unlock(&l->lock);
				return -1;
			}
			if (nonblocking(l)) {
				pthread_mutex_unlock(&l->lock);
				return droce_rs_errno(EAGAIN);
			}
			pthread_mutex_unlock(&l->lock);
			poll(&p, 1, LISTEN_SLICE_MS);
			pthread_mutex_lock(&l->lock);
			if (l->state != DROCE_RS_LISTENING) {
				pthread_mutex_unlock(&l->lock);
				return droce_rs_errno(EINVAL);
			}
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		id = ev->id;
		req = ev->param.conn;
		plen = req.private_data_len; /* a uint8_t: fits pdata */
		if (req.private_data)
			memcpy(pdata, req.private_data, plen);
		else
			plen = 0;
		rdma_ack_cm_event(ev);
		rs = accept_one(l, id, pdata, plen, &req);
		if (rs == NULL)
			continue; /* refused that one: wait for the next */
		pthread_mutex_unlock(&l->lock);
		if (addr && addrlen)
			copy_addr(addr, addrlen, &rs->id->route.addr.dst_addr);
		return rs->fd;
	}
}

/* The one table from a CM event that ends an rconnect to its errno. */
static const struct {
	enum rdma_cm_event_type ev;
	int err;
} connect_errors[] = {
	{ RDMA_CM_EVENT_ADDR_ERROR, EHOSTUNREACH },
	{ RDMA_CM_EVENT_ROUTE_ERROR, EHOSTUNREACH },
	{ RDMA_CM_EVENT_CONNECT_ERROR, ECONNREFUSED },
	{ RDMA_CM_EVENT_UNREACHABLE, ETIMEDOUT },
	{ RDMA_CM_EVENT_REJECTED, ECONNREFUSED },
	{ RDMA_CM_EVENT_DEVICE_REMOVAL, ENODEV },
	{ RDMA_CM_EVENT_DISCONNECTED, ECONNRESET },
};

static int
connect_error_of(enum rdma_cm_event_type ev)
{
	for (size_t i = 0; i < sizeof(connect_errors) / sizeof(connect_errors[0]); i++)
		if (connect_errors[i].ev == ev)
			return connect_errors[i].err;
	return 0;
}

static void
connect_failed(struct droce_rs *rs, int err)
{
	rs->state = DROCE_RS_CONNECT_ERROR;
	rs->err = err ? err : ECONNREFUSED;
}

/* ROUTE_RESOLVED: the QP and buffers, then the REQ with our connection data. */
static void
send_req(struct droce_rs *rs)
{
	struct droce_rs_conn_data c;
	struct rdma_conn_param p;

	if (droce_rs_create_ep(rs) != 0) {
		connect_failed(rs, errno);
		return;
	}
	droce_rs_format_conn(rs, &c);
	memset(&p, 0, sizeof(p));
	p.private_data = &c;
	p.private_data_len = sizeof(c);
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	if (rdma_connect(rs->id, &p) != 0)
		connect_failed(rs, errno);
	else
		rs->state = DROCE_RS_CONNECTING;
}

static void
cm_event(struct droce_rs *rs, const struct rdma_cm_event *ev)
{
	int err = connect_error_of(ev->event);

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != DROCE_RS_RESOLVING_ADDR)
			return;
		if (rdma_resolve_route(rs->id, RESOLVE_MS) != 0)
			connect_failed(rs, errno);
		else
			rs->state = DROCE_RS_RESOLVING_ROUTE;
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state == DROCE_RS_RESOLVING_ROUTE)
			send_req(rs);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->state != DROCE_RS_CONNECTING)
			return; /* passive: connected since rdma_accept */
		if (droce_rs_save_conn(rs, ev->param.conn.private_data,
				       ev->param.conn.private_data_len) != 0) {
			connect_failed(rs, errno);
			rdma_disconnect(rs->id);
			return;
		}
		rs->state = DROCE_RS_CONNECTED;
		rs->rd_open = rs->wr_open = true;
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (rs->state == DROCE_RS_CONNECTED) {
			rs->state = DROCE_RS_DISCONNECTED;
			rs->rd_open = rs->wr_open = false;
		} else if (droce_rs_opening(rs->state)) {
			connect_failed(rs, err);
		}
		rdma_disconnect(rs->id); /* answer the DREQ */
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (rs->state == DROCE_RS_CONNECTED) {
			rs->state = DROCE_RS_ERROR;
			rs->err = err;
			rs->rd_open = rs->wr_open = false;
		}
		/* fall through */
	default:
		if (err && droce_rs_opening(rs->state))
			connect_failed(rs, err);
		return;
	}
}

void
droce_rs_cm_progress(struct droce_rs *rs)
{
	struct rdma_cm_event *ev;

	if (rs->state == DROCE_RS_LISTENING || rs->cmch == NULL)
		return; /* a listener's requests are raccept's */
	while (rdma_get_cm_event(rs->cmch, &ev) == 0) {
		cm_event(rs, ev);
		rdma_ack_cm_event(ev);
	}
}

static bool
not_opening(const struct droce_rs *rs)
{
	return !droce_rs_opening(rs->state);
}

int
rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	int rc;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	pthread_mutex_lock(&rs->lock);
	switch (rs->state) {
	case DROCE_RS_INIT:
	case DROCE_RS_BOUND:
		if (addr == NULL || addrlen < sizeof(struct sockaddr_in) ||
		    (addr->sa_family == AF_INET6 && addrlen < sizeof(struct sockaddr_in6))) {
			pthread_mutex_unlock(&rs->lock);
			return droce_rs_errno(EINVAL);
		}
		if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) {
			pthread_mutex_unlock(&rs->lock);
			return droce_rs_errno(EAFNOSUPPORT);
		}
		if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)(uintptr_t)addr, RESOLVE_MS) != 0) {
			rc = errno;
			pthread_mutex_unlock(&rs->lock);
			return droce_rs_errno(rc);
		}
		rs->state = DROCE_RS_RESOLVING_ADDR;
		break;
	case DROCE_RS_RESOLVING_ADDR:
	case DROCE_RS_RESOLVING_ROUTE:
	case DROCE_RS_CONNECTING:
		break;
	case DROCE_RS_CONNECTED:
		pthread_mutex_unlock(&rs->lock);
		return 0; /* as rdma-core */
	case DROCE_RS_LISTENING:
		pthread_mutex_unlock(&rs->lock);
		return droce_rs_errno(EINVAL);
	default:
		pthread_mutex_unlock(&rs->lock);
		return droce_rs_errno(rs->state == DROCE_RS_CONNECT_ERROR && rs->err ? rs->err : EISCONN);
	}
	rc = droce_rs_wait(rs, nonblocking(rs), not_opening, -1);
	if (rc != 0) {
		pthread_mutex_unlock(&rs->lock);
		return droce_rs_errno(errno == EWOULDBLOCK ? EINPROGRESS : errno);
	}
	if (rs->state == DROCE_RS_CONNECTED) {
		pthread_mutex_unlock(&rs->lock);
		return 0;
	}
	rc = rs->err ? rs->err : ECONNREFUSED;
	pthread_mutex_unlock(&rs->lock);
	return droce_rs_errno(rc);
}

/* ---- shutdown and close ---- */

static bool
ctrl_avail_or_gone(const struct droce_rs *rs)
{
	return droce_rs_ctrl_avail(rs) || rs->state != DROCE_RS_CONNECTED;
}

static int
shutdown_locked(struct droce_rs *rs, int how)
{
	enum droce_rs_ctrl ctrl;

	if (rs->state != DROCE_RS_CONNECTED)
		return rs->state == DROCE_RS_DISCONNECTED || rs->state == DROCE_RS_ERROR ?
			       0 : droce_rs_errno(ENOTCONN);
	switch (how) {
	case SHUT_RDWR:
		ctrl = DROCE_RS_CTRL_DISCONNECT;
		rs->rd_open = rs->wr_open = false;
		break;
	case SHUT_WR:
		rs->wr_open = false;
		ctrl = rs->rd_open ? DROCE_RS_CTRL_SHUTDOWN : DROCE_RS_CTRL_DISCONNECT;
		break;
	case SHUT_RD:
		rs->rd_open = false;
		if (rs->wr_open)
			return 0;
		ctrl = DROCE_RS_CTRL_DISCONNECT;
		break;
	default:
		return droce_rs_errno(EINVAL);
	}
	if (!droce_rs_ctrl_avail(rs))
		droce_rs_wait(rs, false, ctrl_avail_or_gone, DRAIN_MS);
	if (rs->state == DROCE_RS_CONNECTED && droce_rs_ctrl_avail(rs))
		droce_rs_post_ctrl(rs, ctrl);
	if (rs->state == DROCE_RS_CONNECTED)
		droce_rs_wait(rs, false, droce_rs_all_sends_done, DRAIN_MS);
	return 0;
}

int
rshutdown(int socket, int how)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	int rc;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return droce_rs_errno(EINVAL);
	if (rs->keepalive && how == SHUT_RDWR)
		ka_set(rs, false);
	pthread_mutex_lock(&rs->lock);
	rc = shutdown_locked(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

int
rclose(int socket)
{
	struct droce_rs *rs = droce_rs_lookup(socket);

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (rs->keepalive)
		ka_set(rs, false);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == DROCE_RS_CONNECTED)
		shutdown_locked(rs, SHUT_RDWR);
	table_set(rs->fd, NULL);
	if (rs->id && rs->id->qp && rs->state != DROCE_RS_CONNECT_ERROR)
		rdma_disconnect(rs->id); /* DREQ: the peer's CM hears of it too */
	droce_rs_cm_progress(rs);
	pthread_mutex_unlock(&rs->lock);
	rs_destroy(rs);
	return 0;
}

/* ---- names ---- */

static void
copy_addr(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src)
{
	socklen_t size = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						      sizeof(struct sockaddr_in);

	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
}

int
rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	int rc = 0;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (addr == NULL || addrlen == NULL)
		return droce_rs_errno(EFAULT);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == DROCE_RS_CONNECTED || rs->state == DROCE_RS_DISCONNECTED ||
	    rs->state == DROCE_RS_ERROR)
		copy_addr(addr, addrlen, &rs->id->route.addr.dst_addr);
	else
		rc = droce_rs_errno(ENOTCONN);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

int
rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct droce_rs *rs = droce_rs_lookup(socket);

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (addr == NULL || addrlen == NULL)
		return droce_rs_errno(EFAULT);
	pthread_mutex_lock(&rs->lock);
	if (rs->id->route.addr.src_addr.sa_family == AF_INET ||
	    rs->id->route.addr.src_addr.sa_family == AF_INET6) {
		copy_addr(addr, addrlen, &rs->id->route.addr.src_addr);
	} else {
		struct sockaddr_in any = { .sin_family = AF_INET };

		copy_addr(addr, addrlen, (struct sockaddr *)&any);
	}
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

/* ---- options ---- */

static int
int_opt(const void *optval, socklen_t optlen, int *out)
{
	if (optval == NULL || optlen < sizeof(int))
		return droce_rs_errno(EINVAL);
	memcpy(out, optval, sizeof(int));
	return 0;
}

static bool
before_connect(const struct droce_rs *rs)
{
	return rs->state == DROCE_RS_INIT || rs->state == DROCE_RS_BOUND ||
	       rs->state == DROCE_RS_LISTENING;
}

static void
set_bit(uint64_t *opts, int optname, bool on)
{
	if (optname < 0 || optname >= 64)
		return;
	if (on)
		*opts |= 1ull << optname;
	else
		*opts &= ~(1ull << optname);
}

static int
setsockopt_locked(struct droce_rs *rs, int level, int optname, const void *optval,
		  socklen_t optlen, bool *ka_change, bool *ka_on)
{
	int v = 0;

	if (level == SOL_SOCKET && optname == SO_LINGER) {
		struct linger lg;

		if (optval == NULL || optlen < sizeof(lg))
			return droce_rs_errno(EINVAL);
		memcpy(&lg, optval, sizeof(lg));
		set_bit(&rs->so_opts, SO_LINGER, !lg.l_onoff); /* inverted: default on */
		return 0;
	}
	if (level == SOL_RDMA && optname == RDMA_ROUTE) {
		void *copy;

		if (!before_connect(rs))
			return droce_rs_errno(EINVAL);
		if (optval == NULL || optlen == 0 || (copy = malloc(optlen)) == NULL)
			return droce_rs_errno(optval == NULL || optlen == 0 ? EINVAL : ENOMEM);
		memcpy(copy, optval, optlen);
		free(rs->route);
		rs->route = copy;
		rs->route_len = optlen;
		return 0;
	}
	if (int_opt(optval, optlen, &v) != 0)
		return -1;
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			if (rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v,
					    sizeof(v)) != 0 && rs->state == DROCE_RS_INIT)
				return -1;
			set_bit(&rs->so_opts, optname, v != 0);
			return 0;
		case SO_RCVBUF:
			if (rs->rbuf == NULL && v > 0)
				rs->rbuf_size = (uint32_t)v > (1u << 29) ? 1u << 30 :
						(uint32_t)v < DROCE_RS_SNDLOWAT ? DROCE_RS_SNDLOWAT << 1 :
						(uint32_t)v << 1;
			return 0;
		case SO_SNDBUF:
			if (rs->sbuf == NULL && v > 0)
				rs->sbuf_size = (uint32_t)v > (1u << 29) ? 1u << 30 :
						(uint32_t)v < DROCE_RS_SNDLOWAT ? DROCE_RS_SNDLOWAT << 1 :
						(uint32_t)v << 1;
			return 0;
		case SO_KEEPALIVE:
			if (rs->keepalive_time == 0)
				rs->keepalive_time = ka_default_time();
			*ka_change = true;
			*ka_on = v != 0;
			set_bit(&rs->so_opts, optname, v != 0);
			return 0;
		case SO_OOBINLINE:
			set_bit(&rs->so_opts, optname, v != 0);
			return 0;
		default:
			return droce_rs_errno(ENOTSUP);
		}
	case IPPROTO_IP:
		if (optname != IP_TOS)
			return droce_rs_errno(ENOTSUP);
		if (rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &(uint8_t){ (uint8_t)v },
				    sizeof(uint8_t)) != 0)
			return -1;
		rs->ip_tos = v;
		return 0;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
		case TCP_CONGESTION:
			return 0; /* a reliable connection: nothing to tune */
		case TCP_KEEPIDLE:
			if (v <= 0)
				return droce_rs_errno(EINVAL);
			rs->keepalive_time = (unsigned int)v;
			rs->keepalive_due = droce_rs_now_ms() + (uint64_t)v * 1000u;
			return 0;
		case TCP_NODELAY:
			set_bit(&rs->tcp_opts, optname, v != 0);
			return 0;
		default:
			return droce_rs_errno(ENOTSUP);
		}
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return droce_rs_errno(ENOTSUP);
		if (rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v, sizeof(v)) != 0)
			return -1;
		set_bit(&rs->ipv6_opts, optname, v != 0);
		return 0;
	case SOL_RDMA:
		if (!before_connect(rs))
			return droce_rs_errno(EINVAL);
		if (v < 0)
			return droce_rs_errno(EINVAL);
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = (uint16_t)((uint32_t)v < DROCE_RS_QP_MAX ? (uint32_t)v : DROCE_RS_QP_MAX);
			return 0;
		case RDMA_RQSIZE:
			rs->rq_size = (uint16_t)((uint32_t)v < DROCE_RS_QP_MAX ? (uint32_t)v : DROCE_RS_QP_MAX);
			return 0;
		case RDMA_INLINE:
			rs->sq_inline = (uint16_t)((uint32_t)v < DROCE_RS_QP_MAX ? (uint32_t)v : DROCE_RS_QP_MAX);
			return 0;
		case RDMA_IOMAPSIZE: {
			/* what the 8-bit scale of the connection data can carry */
			int s = v <= 128 ? v : 128 | (v >> 8);

			if (s > 255)
				s = 255;
			rs->target_iomap_size = (uint16_t)(s <= 128 ? s : (s & 127) << 8);
			return 0;
		}
		default:
			return droce_rs_errno(ENOTSUP);
		}
	default:
		return droce_rs_errno(ENOTSUP);
	}
}

int
rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	bool ka_change = false, ka_on = false;
	int rc;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	pthread_mutex_lock(&rs->lock);
	rc = setsockopt_locked(rs, level, optname, optval, optlen, &ka_change, &ka_on);
	pthread_mutex_unlock(&rs->lock);
	if (rc == 0 && ka_change && ka_set(rs, ka_on) != 0)
		return -1;
	if (rc == 0 && level == IPPROTO_TCP && optname == TCP_KEEPIDLE && rs->keepalive)
		ka_kick();
	return rc;
}

static int
put_int(void *optval, socklen_t *optlen, int v)
{
	if (*optlen < sizeof(int))
		return droce_rs_errno(EINVAL);
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

static int
getsockopt_locked(struct droce_rs *rs, int level, int optname, void *optval, socklen_t *optlen)
{
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			return put_int(optval, optlen, !!(rs->so_opts & (1ull << optname)));
		case SO_RCVBUF:
			return put_int(optval, optlen, (int)rs->rbuf_size);
		case SO_SNDBUF:
			return put_int(optval, optlen, (int)rs->sbuf_size);
		case SO_LINGER: {
			struct linger lg = { .l_onoff = !(rs->so_opts & (1ull << SO_LINGER)), .l_linger = 0 };

			if (*optlen < sizeof(lg))
				return droce_rs_errno(EINVAL);
			memcpy(optval, &lg, sizeof(lg));
			*optlen = sizeof(lg);
			return 0;
		}
		case SO_ERROR: {
			int e = rs->err;

			if (put_int(optval, optlen, e) != 0)
				return -1;
			rs->err = 0;
			return 0;
		}
		case SO_TYPE:
			return put_int(optval, optlen, SOCK_STREAM);
		default:
			return droce_rs_errno(ENOTSUP);
		}
	case IPPROTO_IP:
		if (optname != IP_TOS)
			return droce_rs_errno(ENOTSUP);
		return put_int(optval, optlen, rs->ip_tos);
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			return put_int(optval, optlen, 1);
		case TCP_KEEPIDLE:
			return put_int(optval, optlen, (int)(rs->keepalive_time ? rs->keepalive_time :
							     ka_default_time()));
		case TCP_NODELAY:
			return put_int(optval, optlen, !!(rs->tcp_opts & (1ull << TCP_NODELAY)));
		case TCP_MAXSEG:
			return put_int(optval, optlen, rs->id->route.num_paths && rs->id->route.path_rec ?
						       1 << (7 + rs->id->route.path_rec->mtu) : 2048);
		case TCP_INFO: {
			struct tcp_info ti;
			socklen_t n = *optlen < sizeof(ti) ? *optlen : (socklen_t)sizeof(ti);

			memset(&ti, 0, sizeof(ti));
			ti.tcpi_state = rs->state == DROCE_RS_CONNECTED ? TCP_ESTABLISHED : TCP_CLOSE;
			ti.tcpi_snd_cwnd = rs->sq_size;
			memcpy(optval, &ti, n);
			*optlen = n;
			return 0;
		}
		default:
			return droce_rs_errno(ENOTSUP);
		}
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return droce_rs_errno(ENOTSUP);
		return put_int(optval, optlen, !!(rs->ipv6_opts & (1ull << IPV6_V6ONLY)));
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			return put_int(optval, optlen, rs->sq_size);
		case RDMA_RQSIZE:
			return put_int(optval, optlen, rs->rq_size);
		case RDMA_INLINE:
			return put_int(optval, optlen, rs->sq_inline);
		case RDMA_IOMAPSIZE:
			return put_int(optval, optlen, rs->target_iomap_size);
		case RDMA_ROUTE:
			if (rs->route == NULL || *optlen < rs->route_len)
				return droce_rs_errno(rs->route == NULL ? ENOTSUP : EINVAL);
			memcpy(optval, rs->route, rs->route_len);
			*optlen = rs->route_len;
			return 0;
		default:
			return droce_rs_errno(ENOTSUP);
		}
	default:
		return droce_rs_errno(ENOTSUP);
	}
}

int
rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	int rc;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (optval == NULL || optlen == NULL)
		return droce_rs_errno(EFAULT);
	pthread_mutex_lock(&rs->lock);
	rc = getsockopt_locked(rs, level, optname, optval, optlen);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

int
rfcntl(int socket, int cmd, ...)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	va_list ap;
	int rc = 0;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	va_start(ap, cmd);
	pthread_mutex_lock(&rs->lock);
	switch (cmd) {
	case F_GETFL:
		rc = rs->fs_flags;
		break;
	case F_SETFL:
		rs->fs_flags = va_arg(ap, int);
		break;
	case F_GETFD:
		rc = rs->fd_flags;
		break;
	case F_SETFD:
		rs->fd_flags = va_arg(ap, int);
		fcntl(rs->fd, F_SETFD, rs->fd_flags & FD_CLOEXEC);
		break;
	default:
		rc = droce_rs_errno(ENOTSUP);
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	va_end(ap);
	return rc;
}
