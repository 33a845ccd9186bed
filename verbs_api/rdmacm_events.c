/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm layer's event channels and events: creating and destroying
 * channels, queueing events, rdma_get_cm_event (which also moves the QP
 * for a REP), rdma_ack_cm_event, rdma_event_str, and the QP state changes
 * librdmacm makes (its ucma_modify_qp_*).
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


/* ---- event channels ---- */

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	if (droce_fk_child_served())
		return droce_fk_cm_create_event_channel();
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

/*
 * A destroyed channel's memory is kept until RETIRED_CHANS more channels
 * are destroyed.  A thread on its way back into rdma_get_cm_event() when
 * another destroys the channel (rping's CM thread after the last event:
 * rdma-core 44's rping has that race, fixed upstream in 2025) then gets
 * EBADF, as from librdmacm's closed fd, and writes no freed memory.
 */
#define RETIRED_CHANS 64
static struct droce_rcm_chan *retired_chans[RETIRED_CHANS];
static unsigned int retired_next;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;

static void
chan_retire(struct droce_rcm_chan *c)
{
	struct droce_rcm_chan *old;

	pthread_mutex_lock(&retired_lock);
	old = retired_chans[retired_next];
	retired_chans[retired_next] = c;
	retired_next = (retired_next + 1) % RETIRED_CHANS;
	pthread_mutex_unlock(&retired_lock);
	if (old != NULL) {
		pthread_mutex_destroy(&old->lock);
		free(old);
	}
}

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (droce_fk_child_served()) {
		droce_fk_cm_destroy_event_channel(channel);
		return;
	}
	struct droce_rcm_chan *c = (struct droce_rcm_chan *)channel;
	struct droce_rcm_event *e;

	if (c == NULL)
		return;
	/*
	 * A thread still blocked in rdma_get_cm_event() on this channel (rping's
	 * CM thread, when main destroys the channel and returns) keeps blocking,
	 * as with librdmacm, where the kernel never wakes a read on a closed
	 * rdma_cm fd.  Closing the pipe would wake it with end-of-file and the
	 * program would see an error it never sees on rdma-core; freeing the
	 * channel would pull memory from under it.  So such a channel keeps its
	 * pipe and memory for the life of the process.
	 */
	if (atomic_load(&c->readers) > 0)
		return;
	/* the man page: ids destroyed and events acked first; free leftovers */
	while ((e = TAILQ_FIRST(&c->q)) != NULL) {
		TAILQ_REMOVE(&c->q, e, link);
		free(e);
	}
	int fd = c->ch.fd;

	c->ch.fd = -1; /* rdma_get_cm_event now answers EBADF */
	close(fd);
	close(c->wfd);
	c->wfd = -1;
	chan_retire(c);
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

void
rcm_chan_push(struct droce_rcm_chan *c, struct droce_rcm_event *e)
{
	pthread_mutex_lock(&c->lock);
	TAILQ_INSERT_TAIL(&c->q, e, link);
	c->owed++;
	chan_flush_tokens(c);
	pthread_mutex_unlock(&c->lock);
}

struct droce_rcm_event *
rcm_ev_new(struct droce_rcm_id *owner, struct droce_rcm_id *id, enum rdma_cm_event_type type,
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
void
rcm_ev_queue(struct droce_rcm_event *e)
{
	rcm_chan_push(e->owner->chan, e);
}

void
rcm_ev_conn_pdata(struct droce_rcm_event *e, const void *pd, size_t len)
{
	if (len > sizeof(e->pdata))
		len = sizeof(e->pdata);
	if (pd && len) {
		memcpy(e->pdata, pd, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
}

void
rcm_ev_ud_pdata(struct droce_rcm_event *e, const void *pd, size_t len)
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
struct droce_rcm_event *
rcm_queue_simple(struct droce_rcm_id *p, enum rdma_cm_event_type type, int status)
{
	struct droce_rcm_event *e = rcm_ev_new(p, p, type, status);

	if (e)
		rcm_ev_queue(e);
	return e;
}

/* ---- QP state changes (librdmacm's ucma_modify_qp_*) ---- */

int
rcm_modify_qp_err(struct droce_rcm_id *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (p->id.qp == NULL)
		return 0;
	return ibv_modify_qp(p->id.qp, &a, IBV_QP_STATE);
}

int
rcm_modify_qp_rtr(struct droce_rcm_id *p, uint8_t resp_res)
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

int
rcm_modify_qp_rts(struct droce_rcm_id *p, uint8_t init_depth)
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
	if (droce_fk_child_served())
		return droce_fk_cm_ack_event(event);
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
	if (rcm_modify_qp_rtr(p, RDMA_MAX_RESP_RES) != 0 || rcm_modify_qp_rts(p, RDMA_MAX_INIT_DEPTH) != 0)
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
		rcm_modify_qp_err(p);
}

static void
readers_leave(void *readers)
{
	atomic_fetch_sub((atomic_uint *)readers, 1);
}

int
rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	if (droce_fk_child_served())
		return droce_fk_cm_get_event(channel, event);
	struct droce_rcm_chan *c = (struct droce_rcm_chan *)channel;
	struct droce_rcm_event *e;

	if (c == NULL || event == NULL)
		return ERR(EINVAL);
	if (c->ch.fd < 0)
		return ERR(EBADF); /* destroyed (chan_retire) */
	for (;;) {
		uint8_t tok;
		ssize_t n;

		atomic_fetch_add(&c->readers, 1);
		/* read() is a cancellation point: a thread cancelled in it
		 * leaves the count as it found it (readers_leave runs) */
		pthread_cleanup_push(readers_leave, &c->readers);
		n = read(c->ch.fd, &tok, 1);
		pthread_cleanup_pop(1);

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
		rcm_modify_qp_err(e->owner);
		break;
	case DROCE_RCM_EVK_MC_JOIN:
		rcm_mc_process_join(e);
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
