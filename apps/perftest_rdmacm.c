/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's -R mode: the rdma_cm out-of-band channel and rdma_cm
 * connections; the protocol is described in perftest_rdmacm.h.
 */
#include "perftest_rdmacm.h"

#include "perftest_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHAN_WR_ID 5 /* perftest's SYNC_SPEC_ID */

#define rcm_err(c, ...) pt_fail((c)->err, sizeof((c)->err), __VA_ARGS__)

static int64_t
deadline_of(const struct pt_rcm *c)
{
	return c->timeout_ms > 0 ? pt_now_ms() + c->timeout_ms : -1;
}

static void
idle(struct pt_rcm *c)
{
	if (c->idle) {
		for (int i = 0; i < 16; i++)
			c->idle(c->idle_arg);
	} else {
		usleep(100);
	}
}

void
pt_rcm_init(struct pt_rcm *c, int timeout_ms, pt_idle_fn idle_fn, void *arg)
{
	memset(c, 0, sizeof(*c));
	c->timeout_ms = timeout_ms;
	c->idle = idle_fn;
	c->idle_arg = arg;
}

static int
ensure_channel(struct pt_rcm *c)
{
	if (c->ch != NULL)
		return 0;
	c->ch = rdma_create_event_channel();
	if (c->ch == NULL)
		return rcm_err(c, "rdma_create_event_channel: %s", strerror(errno));
	return 0;
}

static int
sockaddr_of(struct pt_rcm *c, const char *host, int port, bool passive, struct sockaddr_in *sin)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char svc[16];
	int rc;

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	snprintf(svc, sizeof(svc), "%d", port);
	rc = getaddrinfo(host, svc, &hints, &res);
	if (rc != 0)
		return rcm_err(c, "%s:%d: %s", host ? host : "*", port, gai_strerror(rc));
	memcpy(sin, res->ai_addr, sizeof(*sin));
	freeaddrinfo(res);
	return 0;
}

int
pt_rcm_listen(struct pt_rcm *c, const char *bind_addr, int port, enum rdma_port_space ps,
	      int backlog)
{
	struct sockaddr_in sin;

	if (ensure_channel(c) != 0 || sockaddr_of(c, bind_addr, port, true, &sin) != 0)
		return -1;
	if (rdma_create_id(c->ch, &c->listen_id, NULL, ps) != 0)
		return rcm_err(c, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(c->listen_id, (struct sockaddr *)&sin) != 0)
		return rcm_err(c, "rdma_bind_addr %s:%d: %s", bind_addr ? bind_addr : "*", port,
			       strerror(errno));
	if (rdma_listen(c->listen_id, backlog) != 0)
		return rcm_err(c, "rdma_listen port %d: %s", port, strerror(errno));
	return 0;
}

void
pt_rcm_unlisten(struct pt_rcm *c)
{
	if (c->listen_id != NULL)
		rdma_destroy_id(c->listen_id);
	c->listen_id = NULL;
}

/* One event if one is there (1), none (0), or an error (-1). */
static int
poll_event(struct pt_rcm *c, int ms, struct rdma_cm_event **ev)
{
	struct pollfd pfd = { .fd = c->ch->fd, .events = POLLIN };
	int rc = poll(&pfd, 1, ms);

	if (rc < 0 && errno != EINTR)
		return rcm_err(c, "poll on the rdma_cm channel: %s", strerror(errno));
	if (rc <= 0)
		return 0;
	if (rdma_get_cm_event(c->ch, ev) != 0)
		return rcm_err(c, "rdma_get_cm_event: %s", strerror(errno));
	return 1;
}

int
pt_rcm_try(struct pt_rcm *c, struct rdma_cm_event **ev)
{
	return c->ch == NULL ? 0 : poll_event(c, 0, ev);
}

static bool
is_error_event(enum rdma_cm_event_type t)
{
	return t == RDMA_CM_EVENT_ADDR_ERROR || t == RDMA_CM_EVENT_ROUTE_ERROR ||
	       t == RDMA_CM_EVENT_CONNECT_ERROR || t == RDMA_CM_EVENT_UNREACHABLE ||
	       t == RDMA_CM_EVENT_REJECTED || t == RDMA_CM_EVENT_DEVICE_REMOVAL;
}

int
pt_rcm_wait(struct pt_rcm *c, enum rdma_cm_event_type want, struct rdma_cm_event **ev)
{
	int64_t dl = deadline_of(c);

	for (;;) {
		int rc = poll_event(c, c->idle ? 0 : 10, ev);

		if (rc < 0)
			return -1;
		if (rc > 0) {
			enum rdma_cm_event_type t = (*ev)->event;
			int st = (*ev)->status;

			if (t == want)
				return 0;
			if (t == RDMA_CM_EVENT_DISCONNECTED && c->id != NULL && (*ev)->id == c->id)
				c->disconnected = true;
			rdma_ack_cm_event(*ev);
			*ev = NULL;
			if (is_error_event(t))
				return rcm_err(c, "%s (status %d) while waiting for %s",
					       rdma_event_str(t), st, rdma_event_str(want));
			continue;
		}
		if (dl >= 0 && pt_now_ms() > dl)
			return rcm_err(c, "no %s within %d ms", rdma_event_str(want), c->timeout_ms);
		idle(c);
	}
}

/* One attempt: 0 connected, 1 worth another try (rejected, unreachable,
 * address or route error), -1 failed. */
static int
connect_once(struct pt_rcm *c, const struct sockaddr_in *dst, enum rdma_port_space ps,
	     pt_rcm_make_qp_fn make_qp, void *arg, struct rdma_conn_param *param,
	     struct rdma_cm_id **out)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int64_t dl = deadline_of(c);

	if (rdma_create_id(c->ch, &id, NULL, ps) != 0)
		return rcm_err(c, "rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 2000) != 0) {
		rcm_err(c, "rdma_resolve_addr: %s", strerror(errno));
		goto fail;
	}
	for (int step = 0; step < 3;) {
		int rc = poll_event(c, c->idle ? 0 : 10, &ev);
		enum rdma_cm_event_type t;
		int st;

		if (rc < 0)
			goto fail;
		if (rc == 0) {
			if (dl >= 0 && pt_now_ms() > dl) {
				rcm_err(c, "no answer from %s:%d within %d ms",
					inet_ntoa(dst->sin_addr), ntohs(dst->sin_port), c->timeout_ms);
				goto fail;
			}
			idle(c);
			continue;
		}
		t = ev->event;
		st = ev->status;
		if (ev->id != id) { /* an older attempt's late event */
			rdma_ack_cm_event(ev);
			continue;
		}
		if (t == RDMA_CM_EVENT_ESTABLISHED && ps == RDMA_PS_UDP)
			c->ud = ev->param.ud; /* the peer's AH, QPN and Q_Key */
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_ADDR_RESOLVED && step == 0) {
			if (rdma_resolve_route(id, 2000) != 0) {
				rcm_err(c, "rdma_resolve_route: %s", strerror(errno));
				goto fail;
			}
			step = 1;
		} else if (t == RDMA_CM_EVENT_ROUTE_RESOLVED && step == 1) {
			if (make_qp != NULL && make_qp(id, arg) != 0) {
				rcm_err(c, "creating the QP: %s", strerror(errno));
				goto fail;
			}
			if (rdma_connect(id, param) != 0) {
				rcm_err(c, "rdma_connect: %s", strerror(errno));
				goto fail;
			}
			step = 2;
		} else if (t == RDMA_CM_EVENT_ESTABLISHED && step == 2) {
			*out = id;
			return 0;

		} else if (t == RDMA_CM_EVENT_REJECTED || t == RDMA_CM_EVENT_UNREACHABLE ||
			   t == RDMA_CM_EVENT_ADDR_ERROR || t == RDMA_CM_EVENT_ROUTE_ERROR) {
			rcm_err(c, "%s (status %d) from %s:%d", rdma_event_str(t), st,
				inet_ntoa(dst->sin_addr), ntohs(dst->sin_port));
			if (id->qp)
				rdma_destroy_qp(id);
			rdma_destroy_id(id);
			return 1;
		} else if (is_error_event(t)) {
			rcm_err(c, "%s (status %d)", rdma_event_str(t), st);
			goto fail;
		}
	}
fail:
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return -1;
}

int
pt_rcm_connect(struct pt_rcm *c, const char *host, int port, enum rdma_port_space ps,
	       pt_rcm_make_qp_fn make_qp, void *arg, struct rdma_conn_param *param,
	       struct rdma_cm_id **out)
{
	struct sockaddr_in dst;
	int64_t dl = deadline_of(c);

	if (ensure_channel(c) != 0 || sockaddr_of(c, host, port, false, &dst) != 0)
		return -1;
	for (;;) {
		int rc = connect_once(c, &dst, ps, make_qp, arg, param, out);

		if (rc <= 0)
			return rc;
		if (dl >= 0 && pt_now_ms() > dl)
			return -1; /* c->err says what the last attempt got */
		for (int64_t until = pt_now_ms() + PT_RCM_RETRY_MS; pt_now_ms() < until;)
			idle(c);
	}
}

/* ---- the out-of-band channel ---- */

static int
chan_post_recv(struct pt_rcm *c)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->buf + PT_RCM_BUF), .length = PT_RCM_BUF,
			       .lkey = c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = CHAN_WR_ID, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad) != 0)
		return rcm_err(c, "ibv_post_recv on the rdma_cm channel: %s", strerror(errno));
	return 0;
}

/* The channel's resources on @id's device, its QP, one receive posted. */
static int
chan_make_qp(struct rdma_cm_id *id, void *arg)
{
	struct pt_rcm *c = arg;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	c->pd = ibv_alloc_pd(id->verbs);
	if (c->pd == NULL)
		return -1;
	if (posix_memalign((void **)&c->buf, 4096, 2 * PT_RCM_BUF) != 0) {
		errno = ENOMEM;
		return -1;
	}
	memset(c->buf, 0, 2 * PT_RCM_BUF);
	c->mr = ibv_reg_mr(c->pd, c->buf, 2 * PT_RCM_BUF, IBV_ACCESS_LOCAL_WRITE);
	c->scq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	c->rcq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	if (c->mr == NULL || c->scq == NULL || c->rcq == NULL)
		return -1;
	ia.send_cq = c->scq;
	ia.recv_cq = c->rcq;
	if (rdma_create_qp(id, c->pd, &ia) != 0)
		return -1;
	c->id = id;
	return chan_post_recv(c) == 0 ? 0 : -1;
}

static void
chan_param(struct rdma_conn_param *p)
{
	/* perftest's comm connection: SEND only, no responder resources */
	memset(p, 0, sizeof(*p));
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

int
pt_rcm_chan_accept(struct pt_rcm *c)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (pt_rcm_wait(c, RDMA_CM_EVENT_CONNECT_REQUEST, &ev) != 0)
		return -1;
	id = ev->id;
	rdma_ack_cm_event(ev);
	if (chan_make_qp(id, c) != 0) {
		int e = errno;

		rdma_reject(id, NULL, 0);
		return rcm_err(c, "the rdma_cm channel's QP: %s", strerror(e));
	}
	chan_param(&param);
	if (rdma_accept(id, &param) != 0)
		return rcm_err(c, "rdma_accept: %s", strerror(errno));
	pt_rcm_unlisten(c); /* perftest: rdma_destroy_id(cm_id_control) */
	return 0;
}

int
pt_rcm_chan_connect(struct pt_rcm *c, const char *host, int port)
{
	struct rdma_conn_param param;
	struct rdma_cm_id *id;

	chan_param(&param);
	if (pt_rcm_connect(c, host, port, RDMA_PS_TCP, chan_make_qp, c, &param, &id) != 0)
		return -1;
	return 0;
}

/* Drains channel events (DISCONNECTED marks the peer gone). */
static void
chan_events(struct pt_rcm *c)
{
	struct rdma_cm_event *ev;

	while (poll_event(c, 0, &ev) > 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED && ev->id == c->id)
			c->disconnected = true;
		rdma_ack_cm_event(ev);
	}
}

static int
chan_send(void *arg, const void *buf, size_t n, int timeout_ms, char *err, size_t errlen)
{
	struct pt_rcm *c = arg;
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf, .length = (uint32_t)n,
			       .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = CHAN_WR_ID, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int64_t dl = timeout_ms > 0 ? pt_now_ms() + timeout_ms : -1;
	struct ibv_wc wc;
	int k;

	if (n > PT_RCM_BUF) {
		snprintf(err, errlen, "message of %zu B is larger than the channel's %d B", n,
			 PT_RCM_BUF);
		return -1;
	}
	memcpy(c->buf, buf, n);
	if (ibv_post_send(c->id->qp, &wr, &bad) != 0) {
		snprintf(err, errlen, "ibv_post_send on the rdma_cm channel: %s", strerror(errno));
		return -1;
	}
	while ((k = ibv_poll_cq(c->scq, 1, &wc)) == 0) {
		if (dl >= 0 && pt_now_ms() > dl) {
			snprintf(err, errlen, "the rdma_cm channel's SEND did not complete in time");
			return -1;
		}
		if (c->idle)
			c->idle(c->idle_arg);
	}
	if (k < 0 || wc.status != IBV_WC_SUCCESS) {
		snprintf(err, errlen, "the rdma_cm channel's SEND completed with %s",
			 k < 0 ? "a poll error" : ibv_wc_status_str(wc.status));
		return -1;
	}
	return 0;
}

static int
chan_recv(void *arg, void *buf, size_t n, int timeout_ms, char *err, size_t errlen)
{
	struct pt_rcm *c = arg;
	int64_t dl = timeout_ms > 0 ? pt_now_ms() + timeout_ms : -1;
	uint64_t spins = 0;
	struct ibv_wc wc;
	int k;

	while ((k = ibv_poll_cq(c->rcq, 1, &wc)) == 0) {
		if ((++spins & 1023) == 0) {
			chan_events(c);
			if (c->disconnected) {
				snprintf(err, errlen, "the peer closed the rdma_cm channel");
				return -1;
			}
			if (dl >= 0 && pt_now_ms() > dl) {
				snprintf(err, errlen, "timed out waiting for the peer");
				return -1;
			}
		}
		if (c->idle)
			c->idle(c->idle_arg);
	}
	if (k < 0 || wc.status != IBV_WC_SUCCESS) {
		snprintf(err, errlen, "the rdma_cm channel's receive completed with %s",
			 k < 0 ? "a poll error" : ibv_wc_status_str(wc.status));
		return -1;
	}
	if (wc.byte_len != n) {
		snprintf(err, errlen, "the peer sent %u B where %zu B were due (out of step)",
			 wc.byte_len, n);
		return -1;
	}
	memcpy(buf, c->buf + PT_RCM_BUF, n);
	if (chan_post_recv(c) != 0) {
		snprintf(err, errlen, "%s", c->err);
		return -1;
	}
	return 0;
}

const struct pt_msg_ops pt_rcm_msg_ops = { .send = chan_send, .recv = chan_recv };

void
pt_rcm_close(struct pt_rcm *c)
{
	if (c->id != NULL) {
		struct rdma_cm_event *ev;
		int64_t until = pt_now_ms() + 500;

		/* a DREQ (or the DREP to the peer's), then a short wait for the
		 * DISCONNECTED that answers it */
		if (rdma_disconnect(c->id) == 0) {
			while (!c->disconnected && pt_now_ms() < until) {
				if (poll_event(c, 1, &ev) > 0) {
					if (ev->event == RDMA_CM_EVENT_DISCONNECTED && ev->id == c->id)
						c->disconnected = true;
					rdma_ack_cm_event(ev);
				}
				if (c->idle)
					c->idle(c->idle_arg);
			}
		}
		rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
		c->id = NULL;
	}
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->scq)
		ibv_destroy_cq(c->scq);
	if (c->rcq)
		ibv_destroy_cq(c->rcq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	free(c->buf);
	c->mr = NULL;
	c->scq = c->rcq = NULL;
	c->pd = NULL;
	c->buf = NULL;
	pt_rcm_unlisten(c);
	if (c->ch != NULL)
		rdma_destroy_event_channel(c->ch);
	c->ch = NULL;
}
