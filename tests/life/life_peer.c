/* SPDX-License-Identifier: BSD-3-Clause
 * Over 800 lines: one program plays every peer kind of the kill tests (RC,
 * UD, rdma_cm, rsockets) with one connection loop and one report format;
 * the rsocket plans made it cross the limit.
 * life_peer: one side of an rdma_cm connection between two droce processes
 * over memif (DROCE_CONFIG: tc_memif_ini's side 0, the server at
 * 198.18.0.1, or side 1, the client at 198.18.0.2), for the life suite's
 * peer-death tests (issue 28 §2).  The test kills one side with SIGKILL and
 * reads what the other printed.
 *
 *   life_peer server|client rc|ud PLAN...
 *
 * Each PLAN word is one connection, made in turn (a client retries until
 * the server answers, for up to 30 s):
 *   stream  RC: both sides keep SENDs and receives outstanding until a
 *           completion fails (the peer died); then rdma_disconnect() and
 *           the CM's DISCONNECTED and TIMEWAIT_EXIT events.
 *           UD: the client sends, the server counts; a client never fails
 *           (UD has no acknowledgement): it sends until the server's port
 *           goes down and comes back, a server until its port goes down.
 *   idle    RC: no traffic; waits for IBV_EVENT_PORT_ERR (the memif peer
 *           went away), then disconnects as after stream.
 *   ok      RC: both sides send COUNT messages, receive COUNT, disconnect.
 *           UD: the client sends UD_COUNT paced messages, the server must
 *           receive at least UD_MIN of them (a lagging receiver drops).
 *   life_peer server|client rs PLAN...  (rsockets over the same link)
 *   stream  the client rsend()s, the server rrecv()s, both blocking, both
 *           with SO_KEEPALIVE every second (a receiver whose sender died
 *           has nothing in flight otherwise), until a call fails:
 *           "rs-error OP errno=E t=MS" (or "rs-eof t=MS"); then rclose.
 *   ok      the client sends RS_BYTES, the server receives them all and
 *           answers 4 bytes; both close.
 * Lines printed (times in ms of CLOCK_MONOTONIC, comparable across
 * processes): "connected N qpn=Q timeout=T retry=R guard=G" (G 1: the memif
 * PMD's unmaps wait for the engines, pmd_glue/memif_guard.c), "streaming",
 * "wc-error STATUS_NAME status=S t=MS", "flushed N", "port-err t=MS",
 * "cm EVENT status=S t=MS", "ok N", "done".  Exit 0 when every plan word
 * ended as it should; a non-zero exit names the failed step on stderr.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <droce/stats.h>

#include "pmd_glue/memif_guard.h"

#define PORT_RC "7481"
#define PORT_UD "7482"
#define PORT_RS 7483
#define RS_CHUNK 65536
#define RS_BYTES (8u << 20)  /* an "ok" rsocket transfer */
#define MSG 1024
#define WIN 16          /* sends outstanding */
#define NRECV (4 * WIN) /* receives posted */
#define COUNT 2000      /* messages of an "ok" connection */
#define UD_COUNT 3000   /* UD sends of an "ok" client, paced */
#define UD_MIN 300      /* of which an "ok" server must receive at least */
#define UD_QKEY 0x11111111
#define CONNECT_S 30
#define EVENT_S 20

static bool server;
static bool ud;
static struct rdma_event_channel *ch;
static struct rdma_cm_id *listen_id;

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void __attribute__((noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "life_peer %s: ", server ? "server" : "client");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));
	say("failed");
	exit(1);
}

/* The next CM event within @ms (NULL on timeout); acked by the caller. */
static struct rdma_cm_event *
next_event(int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, ms) <= 0)
		return NULL;
	if (rdma_get_cm_event(ch, &ev) != 0)
		die("rdma_get_cm_event");
	return ev;
}

/* Connection requests that came while waiting for another id's event. */
static struct rdma_cm_event *pending[8];
static unsigned int npending;

/*
 * The next event of @id (NULL: the next connection request) within @ms, or
 * NULL.  Requests meanwhile wait in pending[]; other ids' late events are
 * acknowledged and dropped.
 */
static struct rdma_cm_event *
wait_event(struct rdma_cm_id *id, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct rdma_cm_event *ev;

	if (id == NULL && npending > 0) {
		ev = pending[0];
		memmove(pending, pending + 1, --npending * sizeof(pending[0]));
		return ev;
	}
	while (now_ms() < end) {
		ev = next_event((int)(end - now_ms()));
		if (ev == NULL)
			return NULL;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (id == NULL)
				return ev;
			if (npending < sizeof(pending) / sizeof(pending[0])) {
				pending[npending++] = ev;
				continue;
			}
		} else if (ev->id == id) {
			return ev;
		}
		rdma_ack_cm_event(ev);
	}
	return NULL;
}

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
	unsigned int sends_out, recvs_out;
	uint64_t sent, received;
};

static bool
post_recv(struct conn *c, unsigned int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + (size_t)slot * (MSG + 40)),
		.length = MSG + 40,
		.lkey = c->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad) != 0)
		return false; /* a QP in error may refuse it: nothing to wait for then */
	c->recvs_out++;
	return true;
}

/* One SEND; false when the send queue is full. */
static bool
post_send(struct conn *c)
{
	uint8_t *b = c->buf + (size_t)(NRECV + (c->sent % WIN)) * (MSG + 40);
	struct ibv_sge sge = { .addr = (uintptr_t)b, .length = MSG, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1ull << 32 | (uint32_t)c->sent,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	memset(b, (int)(c->sent & 0xff), MSG);
	if (ud) {
		wr.wr.ud.ah = c->ah;
		wr.wr.ud.remote_qpn = c->remote_qpn;
		wr.wr.ud.remote_qkey = c->remote_qkey;
	}
	if (ibv_post_send(c->id->qp, &wr, &bad) != 0)
		return false;
	c->sends_out++;
	c->sent++;
	return true;
}

static void
setup_qp(struct conn *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a;
	unsigned int i;

	c->id = id;
	c->pd = ibv_alloc_pd(id->verbs);
	c->cq = ibv_create_cq(id->verbs, WIN + NRECV + 8, NULL, NULL, 0);
	c->buf = calloc(NRECV + WIN, MSG + 40);
	if (c->pd == NULL || c->cq == NULL || c->buf == NULL)
		die("pd/cq");
	c->mr = ibv_reg_mr(c->pd, c->buf, (size_t)(NRECV + WIN) * (MSG + 40),
			   IBV_ACCESS_LOCAL_WRITE);
	if (c->mr == NULL)
		die("ibv_reg_mr");
	memset(&a, 0, sizeof(a));
	a.send_cq = c->cq;
	a.recv_cq = c->cq;
	a.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC;
	a.cap.max_send_wr = WIN;
	a.cap.max_recv_wr = NRECV;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, c->pd, &a) != 0)
		die("rdma_create_qp");
	for (i = 0; i < NRECV; i++)
		if (!post_recv(c, i))
			die("ibv_post_recv");
}

static void
teardown(struct conn *c)
{
	if (c->ah != NULL)
		ibv_destroy_ah(c->ah);
	if (c->id != NULL) {
		rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	if (c->mr != NULL)
		ibv_dereg_mr(c->mr);
	if (c->cq != NULL)
		ibv_destroy_cq(c->cq);
	if (c->pd != NULL)
		ibv_dealloc_pd(c->pd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

static void
print_connected(struct conn *c, unsigned int round)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	memset(&qa, 0, sizeof(qa));
	ibv_query_qp(c->id->qp, &qa, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &ia);
	say("connected %u qpn=%u timeout=%u retry=%u guard=%d t=%llu", round, c->id->qp->qp_num,
	    qa.timeout, qa.retry_cnt, droce_memif_guarded(), (unsigned long long)now_ms());
}

/* Server: the next connection request, accepted.  Client: connects, retried. */
static void
connect_one(struct conn *c, unsigned int round)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	uint64_t end = now_ms() + CONNECT_S * 1000;

	memset(&cp, 0, sizeof(cp));
	cp.retry_count = 3;
	cp.rnr_retry_count = 7;
	cp.qp_num = 0;
	if (server) {
		for (;;) {
			ev = wait_event(NULL, (int)(end > now_ms() ? end - now_ms() : 0));
			if (ev == NULL)
				die("no connection request in %d s", CONNECT_S);
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
				break;
			rdma_ack_cm_event(ev);
		}
		setup_qp(c, ev->id);
		rdma_ack_cm_event(ev);
		if (rdma_accept(c->id, ud ? NULL : &cp) != 0)
			die("rdma_accept");
		if (!ud) {
			ev = wait_event(c->id, EVENT_S * 1000);
			if (ev == NULL || ev->event != RDMA_CM_EVENT_ESTABLISHED)
				die("no ESTABLISHED (%s)", ev ? rdma_event_str(ev->event) : "timeout");
			rdma_ack_cm_event(ev);
		}
		print_connected(c, round);
		return;
	}
	for (;;) {
		struct rdma_addrinfo hints, *res;
		const char *fail = NULL;
		struct rdma_cm_id *id;

		memset(&hints, 0, sizeof(hints));
		hints.ai_port_space = ud ? RDMA_PS_UDP : RDMA_PS_TCP;
		if (rdma_getaddrinfo("198.18.0.1", ud ? PORT_UD : PORT_RC, &hints, &res) != 0)
			die("rdma_getaddrinfo");
		if (rdma_create_id(ch, &id, NULL, ud ? RDMA_PS_UDP : RDMA_PS_TCP) != 0)
			die("rdma_create_id");
		if (rdma_resolve_addr(id, NULL, res->ai_dst_addr, 2000) != 0)
			die("rdma_resolve_addr");
		rdma_freeaddrinfo(res);
		ev = wait_event(id, 5000);
		if (ev == NULL || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
			fail = "address";
		if (ev != NULL)
			rdma_ack_cm_event(ev);
		if (fail == NULL && rdma_resolve_route(id, 2000) != 0)
			die("rdma_resolve_route");
		if (fail == NULL) {
			ev = wait_event(id, 5000);
			if (ev == NULL || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
				fail = "route";
			if (ev != NULL)
				rdma_ack_cm_event(ev);
		}
		if (fail == NULL) {
			setup_qp(c, id);
			if (rdma_connect(id, &cp) != 0)
				die("rdma_connect");
			ev = wait_event(id, 10000);
			if (ev != NULL && ev->event == RDMA_CM_EVENT_ESTABLISHED) {
				if (ud) {
					c->remote_qpn = ev->param.ud.qp_num;
					c->remote_qkey = ev->param.ud.qkey;
					c->ah = ibv_create_ah(c->pd, &ev->param.ud.ah_attr);
					if (c->ah == NULL)
						die("ibv_create_ah");
				}
				rdma_ack_cm_event(ev);
				print_connected(c, round);
				return;
			}
			fail = ev ? rdma_event_str(ev->event) : "connect timeout";
			if (ev != NULL)
				rdma_ack_cm_event(ev);
			teardown(c);
		} else {
			rdma_destroy_id(id);
		}
		if (now_ms() > end)
			die("no connection in %d s (last: %s)", CONNECT_S, fail);
		usleep(200 * 1000);
	}
}

/* Disconnects after the peer died: DISCONNECTED, then TIMEWAIT_EXIT. */
static void
disconnect_lost(struct conn *c)
{
	struct rdma_cm_event *ev;
	bool disc = false;
	uint64_t end;

	if (rdma_disconnect(c->id) != 0)
		die("rdma_disconnect");
	end = now_ms() + 2 * EVENT_S * 1000;
	while (now_ms() < end) {
		ev = wait_event(c->id, (int)(end - now_ms()));
		if (ev == NULL)
			break;
		say("cm %s status=%d t=%llu", rdma_event_str(ev->event), ev->status,
		    (unsigned long long)now_ms());
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			disc = true;
		if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			rdma_ack_cm_event(ev);
			break;
		}
		rdma_ack_cm_event(ev);
	}
	if (!disc)
		die("no DISCONNECTED after the peer died");
}

/* Disconnects after a clean exchange: both sides call it. */
static void
disconnect_clean(struct conn *c)
{
	struct rdma_cm_event *ev;

	rdma_disconnect(c->id);
	ev = wait_event(c->id, EVENT_S * 1000);
	if (ev == NULL || ev->event != RDMA_CM_EVENT_DISCONNECTED)
		die("no DISCONNECTED (%s)", ev ? rdma_event_str(ev->event) : "timeout");
	rdma_ack_cm_event(ev);
}

/* Polls; returns the first failed completion's status, or -1. */
static int
poll_some(struct conn *c, bool repost)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(c->cq, 16, wc), i, bad = -1;

	if (n < 0)
		die("ibv_poll_cq");
	for (i = 0; i < n; i++) {
		bool is_send = wc[i].wr_id >> 32 == 1;

		if (is_send)
			c->sends_out--;
		else
			c->recvs_out--;
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (bad < 0)
				bad = wc[i].status;
			continue;
		}
		if (!is_send) {
			c->received++;
			if (repost)
				post_recv(c, (unsigned int)wc[i].wr_id);
		}
	}
	return bad;
}

/* One line of counters (non-zero ones): "stats WHAT name=value ...". */
static void
say_stats(const char *what, int n, const struct droce_stat *st)
{
	char line[4096];
	size_t len = (size_t)snprintf(line, sizeof(line), "stats %s", what);

	for (int i = 0; i < n && len < sizeof(line); i++)
		if (st[i].value != 0)
			len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%llu", st[i].name,
						(unsigned long long)st[i].value);
	say("%s", line);
}

/* The QP's, port 0's and engine 0's counters (what a failure looked like). */
static void
say_counters(struct conn *c)
{
	struct droce_stat st[128];

	say_stats("qp", droce_stats_qp(c->id->qp, st, 128), st);
	say_stats("port", droce_stats_port(0, st, 128), st);
	say_stats("engine", droce_stats_engine(0, st, 128), st);
}

/* RC: both directions until a completion fails. */
static void
rc_stream(struct conn *c)
{
	uint64_t end;
	int st = -1;

	say("streaming");
	while (st < 0) {
		while (c->sends_out < WIN && post_send(c))
			;
		st = poll_some(c, true);
	}
	say("wc-error %s status=%d t=%llu sent=%llu received=%llu",
	    ibv_wc_status_str((enum ibv_wc_status)st), st, (unsigned long long)now_ms(),
	    (unsigned long long)c->sent, (unsigned long long)c->received);
	say_counters(c);
	/* The QP is in error: everything outstanding flushes. */
	end = now_ms() + EVENT_S * 1000;
	while ((c->sends_out > 0 || c->recvs_out > 0) && now_ms() < end)
		poll_some(c, false);
	if (c->sends_out > 0 || c->recvs_out > 0)
		die("%u sends and %u receives never completed", c->sends_out, c->recvs_out);
	say("flushed");
	disconnect_lost(c);
}

/* The context's async event @want within @ms; false on timeout. */
static bool
wait_async(struct ibv_context *ctx, enum ibv_event_type want, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	uint64_t end = now_ms() + (uint64_t)ms;
	struct ibv_async_event ae;

	while (now_ms() < end) {
		if (poll(&pfd, 1, (int)(end - now_ms())) <= 0)
			return false;
		if (ibv_get_async_event(ctx, &ae) != 0)
			return false;
		ibv_ack_async_event(&ae);
		if (ae.event_type == want)
			return true;
	}
	return false;
}

static void
rc_idle(struct conn *c)
{
	say("idle");
	if (!wait_async(c->id->verbs, IBV_EVENT_PORT_ERR, 60 * 1000))
		die("no IBV_EVENT_PORT_ERR within 60 s");
	say("port-err t=%llu", (unsigned long long)now_ms());
	disconnect_lost(c);
}

static void
rc_ok(struct conn *c)
{
	uint64_t end = now_ms() + 60 * 1000;

	while ((c->sent < COUNT || c->received < COUNT || c->sends_out > 0) && now_ms() < end) {
		while (c->sent < COUNT && c->sends_out < WIN && post_send(c))
			;
		if (poll_some(c, true) >= 0)
			die("a completion failed in a clean exchange");
	}
	if (c->received < COUNT || c->sends_out > 0)
		die("exchange incomplete: received %llu of %d", (unsigned long long)c->received, COUNT);
	say("ok %llu", (unsigned long long)c->received);
	disconnect_clean(c);
}

/*
 * UD.  The client sends (it never sees an error: UD is unacknowledged);
 * stream ends when its port went down and came back (the server died and
 * a new one is there), ok after UD_COUNT paced sends.  The server counts;
 * stream ends when its port goes down (the client died), ok at UD_MIN
 * received and a second of quiet.
 */
static void
ud_client(struct conn *c, bool stream)
{
	uint64_t end = now_ms() + 60 * 1000;
	bool down = false;
	struct ibv_port_attr pa;
	unsigned int n = 0;

	say("streaming");
	while (now_ms() < end) {
		if (!stream && c->sent >= UD_COUNT && c->sends_out == 0)
			break;
		if ((stream || c->sent < UD_COUNT) && c->sends_out < WIN)
			post_send(c);
		if (poll_some(c, true) >= 0)
			die("a UD send failed");
		if (stream && (++n & 1023) == 0 && ibv_query_port(c->id->verbs, 1, &pa) == 0) {
			if (pa.state != IBV_PORT_ACTIVE && !down) {
				down = true;
				say("port-down t=%llu sent=%llu", (unsigned long long)now_ms(),
				    (unsigned long long)c->sent);
			}
			if (pa.state == IBV_PORT_ACTIVE && down) {
				say("port-up t=%llu", (unsigned long long)now_ms());
				break;
			}
		}
		usleep(100); /* paced: a receiver that lags drops (UD) */
	}
	if (now_ms() >= end)
		die("UD client: no end in 60 s");
	say("ok %llu", (unsigned long long)c->sent);
}

static void
ud_server(struct conn *c, bool stream)
{
	uint64_t end = now_ms() + 60 * 1000;

	say("streaming");
	if (stream) {
		while (c->received == 0 && now_ms() < end)
			poll_some(c, true);
		say("receiving");
		if (!wait_async(c->id->verbs, IBV_EVENT_PORT_ERR, 60 * 1000))
			die("no IBV_EVENT_PORT_ERR within 60 s");
		poll_some(c, true);
		say("port-err t=%llu received=%llu", (unsigned long long)now_ms(),
		    (unsigned long long)c->received);
		return;
	}
	/* A receiver that lags drops (UD): at least UD_MIN of UD_COUNT, and
	 * then until nothing came for a second. */
	uint64_t last = now_ms();

	while (now_ms() < end && (c->received < UD_MIN || now_ms() - last < 1000)) {
		uint64_t before = c->received;

		poll_some(c, true);
		if (c->received != before)
			last = now_ms();
	}
	if (c->received < UD_MIN)
		die("UD server: received %llu, expected at least %d", (unsigned long long)c->received,
		    UD_MIN);
	say("ok %llu", (unsigned long long)c->received);
}

/* ---- rsockets ---- */

static int rs_listener = -1;

static void
rs_addr(struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(PORT_RS);
	inet_pton(AF_INET, "198.18.0.1", &sa->sin_addr);
}

static void
rs_listen(void)
{
	struct sockaddr_in sa;
	int one = 1;

	rs_addr(&sa);
	rs_listener = rsocket(AF_INET, SOCK_STREAM, 0);
	if (rs_listener < 0 || rsetsockopt(rs_listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(rs_listener, (struct sockaddr *)&sa, sizeof(sa)) || rlisten(rs_listener, 4))
		die("rsocket listen");
}

/* Server: the next connection.  Client: connects, retried until the server answers. */
static int
rs_connect(unsigned int round)
{
	uint64_t end = now_ms() + CONNECT_S * 1000;
	struct sockaddr_in sa;
	int fd;

	if (server) {
		fd = raccept(rs_listener, NULL, NULL);
		if (fd < 0)
			die("raccept");
	} else {
		rs_addr(&sa);
		for (;;) {
			fd = rsocket(AF_INET, SOCK_STREAM, 0);
			if (fd < 0)
				die("rsocket");
			if (rconnect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
				break;
			rclose(fd);
			if (now_ms() > end)
				die("rconnect: no connection in %d s", CONNECT_S);
			usleep(200 * 1000);
		}
	}
	say("connected %u t=%llu", round, (unsigned long long)now_ms());
	return fd;
}

static void
rs_stream(int fd)
{
	static uint8_t buf[RS_CHUNK];
	int one = 1, idle = 1;
	uint64_t moved = 0;
	ssize_t n;

	if (rsetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    rsetsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)))
		die("SO_KEEPALIVE");
	say("streaming");
	for (;;) {
		n = server ? rrecv(fd, buf, sizeof(buf), 0) : rsend(fd, buf, sizeof(buf), 0);
		if (n > 0) {
			moved += (uint64_t)n;
			if (server && moved >= RS_CHUNK && moved - (uint64_t)n < RS_CHUNK)
				say("receiving");
			continue;
		}
		if (n == 0) {
			say("rs-eof t=%llu moved=%llu", (unsigned long long)now_ms(),
			    (unsigned long long)moved);
			break;
		}
		if (errno == EINTR)
			continue;
		say("rs-error %s errno=%d %s t=%llu moved=%llu", server ? "rrecv" : "rsend", errno,
		    strerror(errno), (unsigned long long)now_ms(), (unsigned long long)moved);
		break;
	}
	rclose(fd);
}

static void
rs_ok(int fd)
{
	static uint8_t buf[RS_CHUNK];
	uint64_t moved = 0;
	char ack[4] = "done";
	ssize_t n;

	while (moved < RS_BYTES) {
		size_t want = RS_BYTES - moved < sizeof(buf) ? RS_BYTES - moved : sizeof(buf);

		if (!server)
			memset(buf, (int)(moved >> 16), want);
		n = server ? rrecv(fd, buf, want, 0) : rsend(fd, buf, want, 0);
		if (n <= 0)
			die("%s after %llu bytes", server ? "rrecv" : "rsend", (unsigned long long)moved);
		if (server)
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] != (uint8_t)((moved + (uint64_t)i) >> 16))
					die("byte %llu is wrong", (unsigned long long)(moved + (uint64_t)i));
		moved += (uint64_t)n;
	}
	if (server ? rsend(fd, ack, sizeof(ack), 0) != sizeof(ack) :
		     rrecv(fd, ack, sizeof(ack), MSG_WAITALL) != sizeof(ack))
		die("the answer");
	say("ok %llu", (unsigned long long)moved);
	rclose(fd);
}

static int
rs_main(int argc, char **argv)
{
	if (server) {
		rs_listen();
		say("listening");
	}
	for (unsigned int round = 0; (int)round + 3 < argc; round++) {
		int fd = rs_connect(round);

		if (strcmp(argv[round + 3], "stream") == 0)
			rs_stream(fd);
		else if (strcmp(argv[round + 3], "ok") == 0)
			rs_ok(fd);
		else
			die("unknown plan %s", argv[round + 3]);
	}
	if (rs_listener >= 0)
		rclose(rs_listener);
	say("done");
	return 0;
}

int
main(int argc, char **argv)
{
	unsigned int round;

	if (argc < 4)
		die("usage: life_peer server|client rc|ud|rs PLAN...");
	server = strcmp(argv[1], "server") == 0;
	ud = strcmp(argv[2], "ud") == 0;
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(argv[2], "rs") == 0)
		return rs_main(argc, argv);
	ch = rdma_create_event_channel();
	if (ch == NULL)
		die("rdma_create_event_channel");
	if (server) {
		struct rdma_addrinfo hints, *res;

		memset(&hints, 0, sizeof(hints));
		hints.ai_flags = RAI_PASSIVE;
		hints.ai_port_space = ud ? RDMA_PS_UDP : RDMA_PS_TCP;
		if (rdma_getaddrinfo("198.18.0.1", ud ? PORT_UD : PORT_RC, &hints, &res) != 0)
			die("rdma_getaddrinfo");
		if (rdma_create_id(ch, &listen_id, NULL, ud ? RDMA_PS_UDP : RDMA_PS_TCP) != 0 ||
		    rdma_bind_addr(listen_id, res->ai_src_addr) != 0 || rdma_listen(listen_id, 4) != 0)
			die("listen");
		rdma_freeaddrinfo(res);
		say("listening");
	}
	for (round = 0; (int)round + 3 < argc; round++) {
		const char *plan = argv[round + 3];
		struct conn c;

		memset(&c, 0, sizeof(c));
		connect_one(&c, round);
		if (!ud && strcmp(plan, "stream") == 0)
			rc_stream(&c);
		else if (!ud && strcmp(plan, "idle") == 0)
			rc_idle(&c);
		else if (!ud && strcmp(plan, "ok") == 0)
			rc_ok(&c);
		else if (ud && server)
			ud_server(&c, strcmp(plan, "stream") == 0);
		else if (ud)
			ud_client(&c, strcmp(plan, "stream") == 0);
		else
			die("unknown plan %s", plan);
		teardown(&c);
	}
	if (listen_id != NULL)
		rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	say("done");
	return 0;
}
