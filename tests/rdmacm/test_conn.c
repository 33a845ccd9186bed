/* SPDX-License-Identifier: BSD-3-Clause
 * rdma_cm connections in one process over the loopback pair (client on
 * droce0 198.18.0.1, servers on droce1 198.18.0.2): the seed pages'
 * exchange with synchronous rdma_create_ep ids in two threads, and
 * asynchronous ids driven by one thread (events polled with O_NONBLOCK):
 * accept, reject with private data, a port nobody listens on, a listener
 * bound to another address, the listen backlog, disconnect from either
 * side, a QP-less id (CONNECT_RESPONSE + rdma_establish), RDMA_PS_UDP with
 * SIDR, a loopback destination (the kernel's cma_resolve_loopback), a
 * listener bound to 127.0.0.1 (the kernel's cma_any_addr), and the CM's
 * MADs lost, duplicated and delayed on the impaired link.
 * Also RDMA_OPTION_ID_TOS and an IPv6 peer found by neighbour discovery,
 * both read back from a capture.  Over 800 lines because every connection
 * case shares one set-up (two threads or one async driver over the
 * loopback pair) that splitting the file would copy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "verbs_api/cm.h"
#include "common.h"
#include "seed.h"

TestSuite(rdmacm_conn, .fini = rcm_fini, .timeout = 60);

/* ---- the seed pages, two threads ---- */

struct srv {
	sem_t ready;
	int rc;
};

static void *
server_thread(void *arg)
{
	struct srv *s = arg;

	s->rc = rcm_seed_server(RCM_ADDR1, "7471", &s->ready);
	if (s->rc)
		sem_post(&s->ready);
	return NULL;
}

/* Blocking calls in two threads (rdma_get_request, rdma_get_*_comp) need
 * the fallback progress thread of droce's runtime; the fake-CM build runs
 * the one-thread tests only. */
#ifdef RCM_FAKE_CM
#define SEED_DISABLED true
#else
#define SEED_DISABLED false
#endif

Test(rdmacm_conn, seed_pages_sync_ep_two_threads, .disabled = SEED_DISABLED)
{
	struct srv s = { .rc = -1 };
	pthread_t t;
	int rc;

	sem_init(&s.ready, 0, 0);
	cr_assert_eq(pthread_create(&t, NULL, server_thread, &s), 0);
	sem_wait(&s.ready);
	rc = rcm_seed_client(RCM_ADDR1, "7471");
	pthread_join(t, NULL);
	cr_assert_eq(rc, 0, "client failed at seed.c:%d", rc);
	cr_assert_eq(s.rc, 0, "server failed at seed.c:%d", s.rc);
}

/* ---- asynchronous ids, one thread ---- */

static void
make_qp(struct rdma_cm_id *id, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 64;
	ia.qp_type = t;
	ia.sq_sig_all = 1;
	cr_assert_eq(rdma_create_qp(id, NULL, &ia), 0, "rdma_create_qp: %s", strerror(errno));
}

static struct rdma_cm_id *
listener(struct rdma_event_channel *ch, const char *ip, uint16_t port, enum rdma_port_space ps,
	 int backlog)
{
	struct rdma_cm_id *l;
	struct sockaddr_in s = rcm_sin(ip, port);

	cr_assert_eq(rdma_create_id(ch, &l, (void *)0x5e, ps), 0);
	cr_assert_eq(rdma_bind_addr(l, (struct sockaddr *)&s), 0);
	cr_assert_eq(rdma_listen(l, backlog), 0);
	return l;
}

static struct rdma_cm_id *
client(struct rdma_event_channel *ch, uint16_t port, enum rdma_port_space ps, bool qp)
{
	struct rdma_cm_id *c;
	struct sockaddr_in d = rcm_sin(RCM_ADDR1, port);

	cr_assert_eq(rdma_create_id(ch, &c, (void *)0xc1, ps), 0);
	cr_assert_eq(rdma_resolve_addr(c, NULL, (struct sockaddr *)&d, 2000), 0);
	rcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, false);
	cr_assert_eq(rdma_resolve_route(c, 2000), 0);
	rcm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, false);
	if (qp)
		make_qp(c, ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC);
	return c;
}

/* @s (a request's new id) gets a QP and accepts; ESTABLISHED on both sides. */
static void
accept_req(struct rdma_event_channel *cch, struct rdma_event_channel *sch, struct rdma_cm_id *s)
{
	struct rdma_conn_param cp;

	make_qp(s, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cr_assert_eq(rdma_accept(s, &cp), 0, "rdma_accept: %s", strerror(errno));
	rcm_expect(cch, RDMA_CM_EVENT_ESTABLISHED, 10000, false);
	rcm_expect(sch, RDMA_CM_EVENT_ESTABLISHED, 10000, false);
}

/* The server side of an accepted connection (ESTABLISHED on both). */
static struct rdma_cm_id *
accept_one(struct rdma_event_channel *cch, struct rdma_event_channel *sch,
	   struct rdma_cm_id *lid, struct rdma_cm_id *c)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *s;
	struct rdma_conn_param cp;

	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	cr_assert_eq(ev->listen_id, lid);
	s = ev->id;
	cr_assert_neq(s, lid);
	cr_assert_eq(s->context, lid->context, "a new id inherits the listener's context");
	cr_assert_eq(ev->param.conn.qp_num, c->qp->qp_num);
	cr_assert_eq(((struct sockaddr_in *)rdma_get_peer_addr(s))->sin_addr.s_addr,
		     inet_addr(RCM_ADDR0));
	cr_assert_eq(rdma_get_dst_port(s), rdma_get_src_port(c), "the cma header's port");
	cr_assert_eq(rdma_get_src_port(s), rdma_get_src_port(lid));
	cr_assert_str_eq(ibv_get_device_name(s->verbs->device), "droce1");
	rdma_ack_cm_event(ev);
	make_qp(s, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cr_assert_eq(rdma_accept(s, &cp), 0, "rdma_accept: %s", strerror(errno));
	ev = rcm_expect(cch, RDMA_CM_EVENT_ESTABLISHED, 10000, true);
	cr_assert_eq(ev->id, c);
	cr_assert_eq(ev->param.conn.qp_num, s->qp->qp_num);
	rdma_ack_cm_event(ev);
	rcm_expect(sch, RDMA_CM_EVENT_ESTABLISHED, 10000, false);
	return s;
}

static void
connect_default(struct rdma_cm_id *c, const void *pd, uint8_t len)
{
	struct rdma_conn_param cp;

	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = len;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	cr_assert_eq(rdma_connect(c, &cp), 0, "rdma_connect: %s", strerror(errno));
}

/* A SEND from @a to @b, checked on both sides. */
static void
send_check(struct rdma_cm_id *a, struct rdma_cm_id *b, const char *msg)
{
	char buf[64];
	struct ibv_mr *mr = rdma_reg_msgs(b, buf, sizeof(buf));
	struct ibv_wc wc;

	cr_assert_not_null(mr);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(rdma_post_recv(b, NULL, buf, sizeof(buf), mr), 0);
	cr_assert_eq(rdma_post_send(a, NULL, (void *)msg, strlen(msg), NULL, IBV_SEND_INLINE), 0);
	cr_assert_eq(tc_poll(a->send_cq, &wc, 1, 10000), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(tc_poll(b->recv_cq, &wc, 1, 10000), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, strlen(msg));
	cr_assert_arr_eq(buf, msg, strlen(msg));
	rdma_dereg_mr(mr);
}

static void
teardown(struct rdma_cm_id *id)
{
	rdma_destroy_qp(id);
	cr_assert_eq(rdma_destroy_id(id), 0);
}

static void
disconnect_from(bool client_first)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7500, RDMA_PS_TCP, 4);
	struct rdma_cm_id *c = client(cch, 7500, RDMA_PS_TCP, true), *s, *first, *second;
	struct rdma_event_channel *fch, *sech;
	struct ibv_wc wc;
	char rb[16];
	struct ibv_mr *mr;

	connect_default(c, "x", 1);
	s = accept_one(cch, sch, l, c);
	send_check(c, s, "ping");
	send_check(s, c, "pong");
	first = client_first ? c : s;
	second = client_first ? s : c;
	fch = client_first ? cch : sch;
	sech = client_first ? sch : cch;
	/* a receive outstanding on the second side: flushed by its disconnect */
	mr = rdma_reg_msgs(second, rb, sizeof(rb));
	cr_assert_eq(rdma_post_recv(second, (void *)77, rb, sizeof(rb), mr), 0);

	cr_assert_eq(rdma_disconnect(first), 0);
	rcm_expect(sech, RDMA_CM_EVENT_DISCONNECTED, 10000, false);
	cr_assert_eq(rdma_disconnect(second), 0);
	rcm_expect(fch, RDMA_CM_EVENT_DISCONNECTED, 10000, false);
	cr_assert_eq(tc_poll(second->recv_cq, &wc, 1, 5000), 1);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc.wr_id, 77);
	/* a second disconnect: nothing left to end */
	errno = 0;
	cr_assert_eq(rdma_disconnect(first), -1);
	cr_assert_eq(errno, EINVAL);
	/* the CM's time wait ends on both sides */
	rcm_expect(fch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 60000, false);
	rcm_expect(sech, RDMA_CM_EVENT_TIMEWAIT_EXIT, 60000, false);
	rdma_dereg_mr(mr);
	teardown(c);
	teardown(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, async_disconnect_client_first)
{
	disconnect_from(true);
}

Test(rdmacm_conn, async_disconnect_server_first)
{
	disconnect_from(false);
}

Test(rdmacm_conn, reject_with_private_data)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7501, RDMA_PS_TCP, 4);
	struct rdma_cm_id *c = client(cch, 7501, RDMA_PS_TCP, true);
	struct rdma_cm_event *ev;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	static const char why[] = "go away: 42";
	char big[200];

	connect_default(c, "knock", 5);
	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	cr_assert_arr_eq(ev->param.conn.private_data, "knock", 5);
	/* over REJ's 148 bytes: EINVAL */
	memset(big, 1, sizeof(big));
	errno = 0;
	cr_assert_eq(rdma_reject(ev->id, big, 149), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_reject(ev->id, why, sizeof(why)), 0);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	ev = rcm_expect(cch, RDMA_CM_EVENT_REJECTED, 10000, true);
	cr_assert_eq(ev->status, 28, "consumer-defined reject");
	cr_assert_eq(ev->param.conn.private_data_len, 148);
	cr_assert_arr_eq(ev->param.conn.private_data, why, sizeof(why));
	rdma_ack_cm_event(ev);
	/* the rejected QP is in ERR */
	cr_assert_eq(ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_ERR);
	teardown(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* rdma_reject_ece: a REJ with IBTA's reason 35, "vendor option not
 * supported", which the active side sees as the event's status. */
Test(rdmacm_conn, reject_ece_says_vendor_option_not_supported)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7511, RDMA_PS_TCP, 4);
	struct rdma_cm_id *c = client(cch, 7511, RDMA_PS_TCP, true);
	struct rdma_cm_event *ev;
	struct ibv_ece ece;

	connect_default(c, "ece?", 4);
	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	/* the request carried no ECE (droce's CM carries none) */
	cr_assert_eq(rdma_get_remote_ece(ev->id, &ece), 0);
	cr_assert_eq(ece.vendor_id, 0);
	cr_assert_eq(rdma_reject_ece(ev->id, "no", 2), 0);
	errno = 0;
	cr_assert_eq(rdma_reject_ece(ev->id, NULL, 0), -1, "answered already");
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	ev = rcm_expect(cch, RDMA_CM_EVENT_REJECTED, 10000, true);
	cr_assert_eq(ev->status, 35, "vendor option not supported, got %d", ev->status);
	cr_assert_arr_eq(ev->param.conn.private_data, "no", 2);
	rdma_ack_cm_event(ev);
	teardown(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, qp_that_cannot_connect_is_connect_error)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7508, RDMA_PS_TCP, 4);
	struct rdma_cm_id *c = client(cch, 7508, RDMA_PS_TCP, true), *s;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };

	connect_default(c, NULL, 0);
	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	s = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(s, IBV_QPT_RC);
	/* the client's QP breaks before the REP: it cannot go to RTR */
	cr_assert_eq(ibv_modify_qp(c->qp, &qa, IBV_QP_STATE), 0);
	cr_assert_eq(rdma_accept(s, &cp), 0);
	ev = rcm_expect(cch, RDMA_CM_EVENT_CONNECT_ERROR, 10000, true);
	cr_assert_lt(ev->status, 0);
	rdma_ack_cm_event(ev);
	/* the passive side is told by a REJ */
	ev = rcm_expect(sch, RDMA_CM_EVENT_REJECTED, 10000, true);
	cr_assert_eq(ev->status, 28);
	rdma_ack_cm_event(ev);
	teardown(c);
	teardown(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, connect_to_port_nobody_listens)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_id *c = client(cch, 7999, RDMA_PS_TCP, true);
	struct rdma_cm_event *ev;

	connect_default(c, NULL, 0);
	ev = rcm_expect(cch, RDMA_CM_EVENT_REJECTED, 10000, true);
	/* the IB CM's "invalid service ID", as the kernel reports it */
	cr_assert_eq(ev->status, 8);
	rdma_ack_cm_event(ev);
	teardown(c);

	/* a synchronous id: -1 / ECONNREFUSED, the event kept in id->event */
	{
		struct rdma_cm_id *sc;
		struct sockaddr_in d = rcm_sin(RCM_ADDR1, 7999);
		struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };

		cr_assert_eq(rdma_create_id(NULL, &sc, NULL, RDMA_PS_TCP), 0);
		cr_assert_eq(rdma_resolve_addr(sc, NULL, (struct sockaddr *)&d, 2000), 0);
		cr_assert_eq(rdma_resolve_route(sc, 2000), 0);
		make_qp(sc, IBV_QPT_RC);
		errno = 0;
		cr_assert_eq(rdma_connect(sc, &cp), -1);
		cr_assert_eq(errno, ECONNREFUSED);
		cr_assert_eq(sc->event->event, RDMA_CM_EVENT_REJECTED);
		cr_assert_eq(sc->event->status, 8);
		teardown(sc);
	}
	rdma_destroy_event_channel(cch);
}

Test(rdmacm_conn, listener_on_another_address_rejects)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	/* listens on droce0's address; the REQ names 198.18.0.2 (droce1) */
	struct rdma_cm_id *l = listener(sch, RCM_ADDR0, 7502, RDMA_PS_TCP, 4);
	struct rdma_cm_id *c = client(cch, 7502, RDMA_PS_TCP, true);
	struct rdma_cm_event *ev;

	connect_default(c, NULL, 0);
	ev = rcm_expect(cch, RDMA_CM_EVENT_REJECTED, 10000, true);
	cr_assert_eq(ev->status, 28, "no id for the address: the kernel's consumer reject");
	rdma_ack_cm_event(ev);
	cr_assert_null(rcm_wait_event(sch, 200), "the listener saw nothing");
	teardown(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* A loopback destination, as the kernel's cma_resolve_loopback: the id
 * takes the first port whose link is up (droce0) and its GID 0, the
 * destination GID is that GID, the source address becomes 127.0.0.1; a
 * wildcard listener on the same process takes the connection on droce0,
 * and data moves both ways over the port's own loop. */
Test(rdmacm_conn, loopback_destination_connects_to_own_port)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, "0.0.0.0", 7503, RDMA_PS_TCP, 4);
	struct sockaddr_in d = rcm_sin("127.0.0.1", 7503);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c, *s;
	union ibv_gid g0;

	cr_assert_eq(rdma_create_id(cch, &c, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(c, NULL, (struct sockaddr *)&d, 2000), 0);
	rcm_expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, false);
	cr_assert_str_eq(ibv_get_device_name(c->verbs->device), "droce0");
	cr_assert_eq(ibv_query_gid(c->verbs, 1, 0, &g0), 0);
	cr_assert_arr_eq(c->route.addr.addr.ibaddr.sgid.raw, g0.raw, 16, "GID index 0");
	cr_assert_arr_eq(c->route.addr.addr.ibaddr.dgid.raw, g0.raw, 16, "dgid = sgid");
	cr_assert_eq(((struct sockaddr_in *)rdma_get_local_addr(c))->sin_addr.s_addr,
		     inet_addr("127.0.0.1"), "the source address is the loopback one");
	cr_assert_eq(((struct sockaddr_in *)rdma_get_peer_addr(c))->sin_addr.s_addr,
		     inet_addr("127.0.0.1"));
	cr_assert_eq(rdma_resolve_route(c, 2000), 0);
	rcm_expect(cch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, false);
	make_qp(c, IBV_QPT_RC);
	connect_default(c, "lo", 2);

	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	cr_assert_eq(ev->listen_id, l);
	s = ev->id;
	cr_assert_str_eq(ibv_get_device_name(s->verbs->device), "droce0", "the same port");
	cr_assert_arr_eq(ev->param.conn.private_data, "lo", 2);
	rdma_ack_cm_event(ev);
	accept_req(cch, sch, s);
	send_check(c, s, "to myself");
	send_check(s, c, "and back");

	cr_assert_eq(rdma_disconnect(c), 0);
	rcm_expect(sch, RDMA_CM_EVENT_DISCONNECTED, 10000, false);
	cr_assert_eq(rdma_disconnect(s), 0);
	rcm_expect(cch, RDMA_CM_EVENT_DISCONNECTED, 10000, false);
	teardown(c);
	teardown(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* A listener bound to 127.0.0.1 hears every address (the kernel's
 * cma_any_addr): a client of droce1's address 198.18.0.2 is accepted on
 * droce1, as by a wildcard listener. */
Test(rdmacm_conn, listener_on_loopback_hears_every_address)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, "127.0.0.1", 7504, RDMA_PS_TCP, 4);
	struct rdma_cm_id *c = client(cch, 7504, RDMA_PS_TCP, true);
	struct rdma_cm_id *s;

	cr_assert_null(l->verbs, "a loopback listener is on no device");
	connect_default(c, NULL, 0);
	s = accept_one(cch, sch, l, c);
	send_check(c, s, "heard");
	teardown(c);
	teardown(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, listen_backlog)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7503, RDMA_PS_TCP, 2);
	struct rdma_cm_id *c[4], *s[2];
	unsigned int rejected = 0, established = 0;
	bool was_rejected[4] = { false };

	for (int i = 0; i < 4; i++)
		c[i] = client(cch, 7503, RDMA_PS_TCP, true);
	for (int i = 0; i < 4; i++)
		connect_default(c[i], NULL, 0);
	/* nobody takes the requests yet: two wait, two are turned away */
	while (rejected < 2) {
		struct rdma_cm_event *ev = rcm_wait_event(cch, 10000);

		cr_assert_not_null(ev, "only %u rejects", rejected);
		cr_assert_eq(ev->event, RDMA_CM_EVENT_REJECTED, "%s", rdma_event_str(ev->event));
		cr_assert_eq(ev->status, 28);
		for (int i = 0; i < 4; i++)
			if (ev->id == c[i])
				was_rejected[i] = true;
		rejected++;
		rdma_ack_cm_event(ev);
	}
	for (int k = 0; k < 2; k++) {
		struct rdma_cm_event *ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000, true);
		struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };

		s[k] = ev->id;
		rdma_ack_cm_event(ev);
		make_qp(s[k], IBV_QPT_RC);
		cr_assert_eq(rdma_accept(s[k], &cp), 0);
	}
	cr_assert_null(rcm_wait_event(sch, 100), "no third request");
	while (established < 2) {
		struct rdma_cm_event *ev = rcm_wait_event(cch, 10000);

		cr_assert_not_null(ev);
		cr_assert_eq(ev->event, RDMA_CM_EVENT_ESTABLISHED, "%s", rdma_event_str(ev->event));
		for (int i = 0; i < 4; i++)
			if (ev->id == c[i])
				cr_assert(!was_rejected[i]);
		established++;
		rdma_ack_cm_event(ev);
	}
	for (int k = 0; k < 2; k++)
		rcm_expect(sch, RDMA_CM_EVENT_ESTABLISHED, 5000, false);
	/* with room again the listener takes a fifth */
	{
		struct rdma_cm_id *c5 = client(cch, 7503, RDMA_PS_TCP, true), *s5;

		connect_default(c5, NULL, 0);
		s5 = accept_one(cch, sch, l, c5);
		teardown(s5);
		teardown(c5);
	}
	for (int k = 0; k < 2; k++)
		teardown(s[k]);
	for (int i = 0; i < 4; i++)
		teardown(c[i]);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, qp_less_connect_response_then_establish)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7504, RDMA_PS_TCP, 4);
	struct rdma_cm_id *c = client(cch, 7504, RDMA_PS_TCP, false), *s;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;

	memset(&cp, 0, sizeof(cp));
	/* no QP on the id: conn_param names one (a QP number chosen by hand) */
	errno = 0;
	cr_assert_eq(rdma_connect(c, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	cp.qp_num = 0x123;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cr_assert_eq(rdma_connect(c, &cp), 0);
	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	cr_assert_eq(ev->param.conn.qp_num, 0x123);
	s = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(s, IBV_QPT_RC);
	cr_assert_eq(rdma_accept(s, &cp), 0);
	ev = rcm_expect(cch, RDMA_CM_EVENT_CONNECT_RESPONSE, 10000, true);
	cr_assert_eq(ev->param.conn.qp_num, s->qp->qp_num);
	rdma_ack_cm_event(ev);
	cr_assert_null(rcm_wait_event(sch, 100), "not established before rdma_establish");
	cr_assert_eq(rdma_establish(c), 0);
	rcm_expect(sch, RDMA_CM_EVENT_ESTABLISHED, 10000, false);
	teardown(s);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, udp_sidr_and_ud_send)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7505, RDMA_PS_UDP, 4);
	struct rdma_cm_id *c = client(cch, 7505, RDMA_PS_UDP, true), *s;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	uint32_t rqpn, rqkey;
	char rb[40 + 64];

	memset(&cp, 0, sizeof(cp));
	cp.private_data = "sidr";
	cp.private_data_len = 4;
	cr_assert_eq(rdma_connect(c, &cp), 0);
	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	s = ev->id;
	cr_assert_eq(s->qp_type, IBV_QPT_UD);
	cr_assert_eq(ev->param.ud.private_data_len, 180, "SIDR REQ's 216 minus the header");
	cr_assert_arr_eq(ev->param.ud.private_data, "sidr", 4);
	rdma_ack_cm_event(ev);
	make_qp(s, IBV_QPT_UD);
	mr = rdma_reg_msgs(s, rb, sizeof(rb));
	cr_assert_eq(rdma_post_recv(s, (void *)9, rb, sizeof(rb), mr), 0);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "ok";
	cp.private_data_len = 2;
	cr_assert_eq(rdma_accept(s, &cp), 0);
	ev = rcm_expect(cch, RDMA_CM_EVENT_ESTABLISHED, 10000, true);
	rqpn = ev->param.ud.qp_num;
	rqkey = ev->param.ud.qkey;
	cr_assert_eq(rqpn, s->qp->qp_num);
	cr_assert_eq(rqkey, RDMA_UDP_QKEY);
	cr_assert_arr_eq(ev->param.ud.private_data, "ok", 2);
	cr_assert_eq(ev->param.ud.ah_attr.is_global, 1);
	ah = ibv_create_ah(c->pd, &ev->param.ud.ah_attr);
	cr_assert_not_null(ah, "ibv_create_ah: %s", strerror(errno));
	rdma_ack_cm_event(ev);
	cr_assert_eq(rdma_post_ud_send(c, (void *)1, "datagram", 8, NULL, IBV_SEND_INLINE, ah, rqpn),
		     0);
	cr_assert_eq(tc_poll(c->send_cq, &wc, 1, 10000), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(tc_poll(s->recv_cq, &wc, 1, 10000), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 40 + 8);
	cr_assert_eq(wc.src_qp, c->qp->qp_num);
	cr_assert_arr_eq(rb + 40, "datagram", 8);
	ibv_destroy_ah(ah);
	rdma_dereg_mr(mr);
	teardown(s);
	teardown(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, udp_reject_and_no_listener)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7506, RDMA_PS_UDP, 4);
	struct rdma_cm_id *c = client(cch, 7506, RDMA_PS_UDP, true);
	struct rdma_cm_id *c2 = client(cch, 7507, RDMA_PS_UDP, true);
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;

	memset(&cp, 0, sizeof(cp));
	cr_assert_eq(rdma_connect(c, &cp), 0);
	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	cr_assert_eq(rdma_reject(ev->id, "no", 2), 0);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	ev = rcm_expect(cch, RDMA_CM_EVENT_UNREACHABLE, 10000, true);
	cr_assert_eq(ev->status, 2, "SIDR status: rejected");
	rdma_ack_cm_event(ev);

	cr_assert_eq(rdma_connect(c2, &cp), 0);
	ev = rcm_expect(cch, RDMA_CM_EVENT_UNREACHABLE, 10000, true);
	cr_assert_eq(ev->status, 1, "SIDR status: service ID not supported");
	rdma_ack_cm_event(ev);
	teardown(c);
	teardown(c2);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* ---- the impaired link (real CM only: the test double sends no MADs) ---- */

#ifdef RCM_FAKE_CM
#define WIRE_DISABLED true
#else
#define WIRE_DISABLED false
#endif

static void
impair_both(double drop, double dup, double delay, uint64_t seed)
{
	struct droce_impair_config ic;

	memset(&ic, 0, sizeof(ic));
	ic.drop = drop;
	ic.dup = dup;
	ic.delay = delay;
	ic.delay_us = 2000;
	ic.seed = seed;
	for (unsigned int p = 0; p < 2; p++) {
		ic.seed = seed + p;
		cr_assert_eq(droce_port_impair_set(droce_port_get(p), &ic), 0);
	}
}

Test(rdmacm_conn, impaired_link_connections_set_up_once_each, .disabled = WIRE_DISABLED,
     .timeout = 240)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7600, RDMA_PS_TCP, 8);
	struct droce_cm_stats st;
	enum { N = 4 };
	struct rdma_cm_id *c[N], *s[N];

	/* ARP first (the clients' rdma_resolve_addr), then impair every frame */
	for (int i = 0; i < N; i++)
		c[i] = client(cch, 7600, RDMA_PS_TCP, true);
	impair_both(0.25, 0.25, 0.25, 42);
	for (int i = 0; i < N; i++) {
		char msg[16];

		connect_default(c[i], NULL, 0);
		s[i] = accept_one(cch, sch, l, c[i]);
		snprintf(msg, sizeof(msg), "conn %d", i);
		send_check(c[i], s[i], msg);
	}
	/* nothing twice: no second CONNECT_REQUEST, ESTABLISHED or anything else */
	{
		struct rdma_cm_event *ev = rcm_wait_event(sch, 1500);

		cr_assert_null(ev, "extra server event %s", ev ? rdma_event_str(ev->event) : "");
		ev = rcm_wait_event(cch, 100);
		cr_assert_null(ev, "extra client event %s", ev ? rdma_event_str(ev->event) : "");
	}
	droce_cm_stats_get(&st);
	cr_assert_gt(st.resends + st.dups_rx, 0, "the impairment reached the CM's MADs "
		     "(resends %lu, duplicates %lu)", (unsigned long)st.resends,
		     (unsigned long)st.dups_rx);
	impair_both(0, 0, 0, 1);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(rdma_disconnect(c[i]), 0);
		rcm_expect(sch, RDMA_CM_EVENT_DISCONNECTED, 30000, false);
		cr_assert_eq(rdma_disconnect(s[i]), 0);
		rcm_expect(cch, RDMA_CM_EVENT_DISCONNECTED, 30000, false);
		teardown(c[i]);
		teardown(s[i]);
	}
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(rdmacm_conn, cut_link_is_unreachable_after_the_retries, .disabled = WIRE_DISABLED,
     .timeout = 240)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = listener(sch, RCM_ADDR1, 7601, RDMA_PS_TCP, 8);
	struct rdma_cm_id *c = client(cch, 7601, RDMA_PS_TCP, true);
	struct rdma_cm_event *ev;

	droce_port_set_link(droce_port_get(1), false);
	connect_default(c, NULL, 0);
	ev = rcm_expect(cch, RDMA_CM_EVENT_UNREACHABLE, 200000, true);
	cr_assert_eq(ev->status, -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	cr_assert_null(rcm_wait_event(sch, 100), "the listener never saw the REQ");
	droce_port_set_link(droce_port_get(1), true);
	teardown(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* ---- on the wire: tshark decodes the REQ's rdma_cm header ---- */

/* Runs @cmd, returns its stdout (static buffer). */
static const char *
run(const char *cmd)
{
	static char out[8192];
	size_t n = 0, k;
	FILE *f = popen(cmd, "r");

	cr_assert_not_null(f);
	while (n + 1 < sizeof(out) && (k = fread(out + n, 1, sizeof(out) - 1 - n, f)) != 0)
		n += k;
	out[n] = '\0';
	pclose(f);
	return out;
}

Test(rdmacm_conn, wire_req_carries_the_ip_cm_header, .disabled = WIRE_DISABLED)
{
	char ini[64], cap[64], cmd[512], want[256];
	struct rdma_event_channel *cch, *sch;
	struct rdma_cm_id *l, *c, *s;
	FILE *f;
	uint16_t sport;

	if (system("command -v tshark >/dev/null 2>&1") != 0)
		cr_skip_test("tshark missing");
	snprintf(ini, sizeof(ini), "/tmp/droce-rcm-wire-%d.ini", (int)getpid());
	snprintf(cap, sizeof(cap), "/tmp/droce-rcm-wire-%d.pcapng", (int)getpid());
	f = fopen(ini, "w");
	cr_assert_not_null(f);
	fprintf(f, "[eal]\nargs = --no-huge --no-pci -m 128 --log-level=lib.eal:warning\n"
		   "[mempool]\nmbufs = 4095\ncache = 128\n"
		   "[port0]\nkind = ring\npeer = port1\nmac = 02:00:c6:12:00:01\n"
		   "ipv4 = 198.18.0.1\ncapture = %s\n"
		   "[port1]\nkind = ring\npeer = port0\nmac = 02:00:c6:12:00:02\n"
		   "ipv4 = 198.18.0.2\n", cap);
	fclose(f);
	setenv("DROCE_CONFIG", ini, 1);
	cch = rdma_create_event_channel();
	sch = rdma_create_event_channel();
	l = listener(sch, RCM_ADDR1, 7700, RDMA_PS_TCP, 4);
	c = client(cch, 7700, RDMA_PS_TCP, true);
	connect_default(c, "user-bytes", 10);
	s = accept_one(cch, sch, l, c);
	sport = ntohs(rdma_get_src_port(c));
	teardown(c);
	teardown(s);
	rdma_destroy_id(l);
	rcm_fini(); /* flushes the capture */
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -d udp.port==4791,infiniband -Y infiniband.cm.req -T fields -E "
		 "separator=, -e infiniband.cm.req.serviceid -e infiniband.cm.req.ip_cm.ipv "
		 "-e infiniband.cm.req.ip_cm.sport -e infiniband.cm.req.ip_cm.sip4 "
		 "-e infiniband.cm.req.ip_cm.dip4 2>/dev/null | head -1", cap);
	snprintf(want, sizeof(want), "0x0000000001061e14,0x04,0x%04x,198.18.0.1,198.18.0.2\n",
		 sport);
	cr_assert_str_eq(run(cmd), want, "tshark: %s", run(cmd));
	/* the user's private data follows the 36-byte header ("user-bytes", zeros) */
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -d udp.port==4791,infiniband -Y infiniband.cm.req -T fields "
		 "-e infiniband.cm.req.ip_cm.private 2>/dev/null | head -1 | cut -c1-24", cap);
	cr_assert_str_eq(run(cmd), "757365722d62797465730000\n", "tshark: %s", run(cmd));
	unlink(ini);
	unlink(cap);
}

/* Writes a ring-pair config capturing port0 (@port_extra: more [port0] and
 * [port1] lines, e.g. an IPv6 address each) and points DROCE_CONFIG at it. */
static void
wire_config(char *ini, size_t ni, char *cap, size_t nc, const char *tag, const char *p0_extra,
	    const char *p1_extra)
{
	FILE *f;

	snprintf(ini, ni, "/tmp/droce-rcm-%s-%d.ini", tag, (int)getpid());
	snprintf(cap, nc, "/tmp/droce-rcm-%s-%d.pcapng", tag, (int)getpid());
	f = fopen(ini, "w");
	cr_assert_not_null(f);
	fprintf(f, "[eal]\nargs = --no-huge --no-pci -m 128 --log-level=lib.eal:warning\n"
		   "[mempool]\nmbufs = 4095\ncache = 128\n"
		   "[port0]\nkind = ring\npeer = port1\nmac = 02:00:c6:12:00:01\n"
		   "ipv4 = 198.18.0.1\ncapture = %s\n%s"
		   "[port1]\nkind = ring\npeer = port0\nmac = 02:00:c6:12:00:02\n"
		   "ipv4 = 198.18.0.2\n%s", cap, p0_extra, p1_extra);
	fclose(f);
	setenv("DROCE_CONFIG", ini, 1);
}

/*
 * RDMA_OPTION_ID_TOS on the wire (issue 25 section 3): the client's TOS
 * 0x68 (DSCP 26) is the IP DSCP of its REQ (the CM MAD, as the kernel's
 * path record makes it for ConnectX and rxe) and of its QP's traffic; the
 * ECN bits stay the port's (ECT(0) on RoCE data).  tshark reads it.
 */
Test(rdmacm_conn, wire_tos_sets_the_dscp, .disabled = WIRE_DISABLED)
{
	char ini[64], cap[64], cmd[512];
	struct rdma_event_channel *cch, *sch;
	struct rdma_cm_id *l, *c, *s;
	uint8_t tos = 0x68;
	const char *out;
	unsigned int sends = 0, reqs = 0;
	char *save = NULL, *line;
	static char buf[8192];

	if (system("command -v tshark >/dev/null 2>&1") != 0)
		cr_skip_test("tshark missing");
	wire_config(ini, sizeof(ini), cap, sizeof(cap), "tos", "", "");
	cch = rdma_create_event_channel();
	sch = rdma_create_event_channel();
	l = listener(sch, RCM_ADDR1, 7701, RDMA_PS_TCP, 4);
	cr_assert_eq(rdma_create_id(cch, &c, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_set_option(c, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1), 0);
	{
		struct sockaddr_in d = rcm_sin(RCM_ADDR1, 7701);

		cr_assert_eq(rdma_resolve_addr(c, NULL, (struct sockaddr *)&d, 2000), 0);
		rcm_expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, false);
		cr_assert_eq(rdma_resolve_route(c, 2000), 0);
		rcm_expect(cch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, false);
		make_qp(c, IBV_QPT_RC);
	}
	connect_default(c, NULL, 0);
	s = accept_one(cch, sch, l, c);
	send_check(c, s, "tos 0x68");
	teardown(c);
	teardown(s);
	rdma_destroy_id(l);
	rcm_fini(); /* flushes the capture */
	/* every RoCE frame port0 sent: DSCP, ECN, opcode, destination QP */
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -d udp.port==4791,infiniband -Y 'ip.src==198.18.0.1 && infiniband' "
		 "-T fields -E separator=, -e ip.dsfield.dscp -e ip.dsfield.ecn "
		 "-e infiniband.bth.opcode -e infiniband.bth.destqp 2>/dev/null", cap);
	out = run(cmd);
	snprintf(buf, sizeof(buf), "%s", out);
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		cr_expect_eq(strncmp(line, "26,", 3), 0, "DSCP not the TOS's: %s\n%s", line, out);
		if (strstr(line, ",100,0x000001") != NULL)
			reqs++; /* UD SEND_ONLY to QP1: the CM's MADs */
		if (strstr(line, ",4,") != NULL) {
			sends++; /* RC SEND_ONLY: the QP's traffic */
			cr_expect_eq(strncmp(line, "26,2,", 5), 0, "ECN not ECT(0): %s", line);
		}
	}
	cr_expect_geq(reqs, 2, "the REQ and RTU MADs: %s", out);
	cr_expect_eq(sends, 1, "the SEND: %s", out);
	/* and tshark's REQ itself, by its CM decoding */
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -d udp.port==4791,infiniband -Y infiniband.cm.req -T fields "
		 "-e ip.dsfield.dscp 2>/dev/null | head -1", cap);
	cr_expect_str_eq(run(cmd), "26\n", "the REQ's DSCP");
	unlink(ini);
	unlink(cap);
}

/*
 * An IPv6 peer resolved by neighbour discovery (issue 25 section 4):
 * rdma_resolve_addr to 2001:2::2 with no entry in port0's table waits for
 * the NS / NA exchange (counted, learnt), the connection comes up and a
 * SEND crosses.  tshark sees the NS and NA in port0's capture.
 */
Test(rdmacm_conn, ipv6_peer_resolved_by_nd, .disabled = WIRE_DISABLED)
{
	char ini[64], cap[64], cmd[512];
	struct rdma_event_channel *cch, *sch;
	struct rdma_cm_id *l, *c, *s;
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct droce_port_stats st;
	struct rdma_cm_event *ev;
	struct rte_ether_addr mac;
	const uint8_t peer[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 2 };

	wire_config(ini, sizeof(ini), cap, sizeof(cap), "nd", "ipv6 = 2001:2::1\n",
		    "ipv6 = 2001:2::2\n");
	cch = rdma_create_event_channel();
	sch = rdma_create_event_channel();
	cr_assert_eq(rdma_create_id(sch, &l, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(inet_pton(AF_INET6, "2001:2::2", &a6.sin6_addr), 1);
	a6.sin6_port = htons(7702);
	cr_assert_eq(rdma_bind_addr(l, (struct sockaddr *)&a6), 0, "%s", strerror(errno));
	cr_assert_eq(rdma_listen(l, 4), 0);
	cr_assert_eq(droce_port_neigh_lookup(droce_port_get(0), peer, &mac), -1, "none by hand");
	cr_assert_eq(rdma_create_id(cch, &c, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(c, NULL, (struct sockaddr *)&a6, 2000), 0);
	rcm_expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000, false);
	droce_port_stats_get(droce_port_get(0), &st);
	cr_assert_geq(st.nd_ns_tx, 1, "resolved without a solicitation");
	cr_assert_geq(st.nd_na_rx, 1);
	cr_assert_eq(droce_port_neigh_lookup(droce_port_get(0), peer, &mac), 0);
	cr_assert(rte_is_same_ether_addr(&mac, droce_port_mac(droce_port_get(1))));
	cr_assert_eq(rdma_resolve_route(c, 2000), 0);
	rcm_expect(cch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000, false);
	make_qp(c, IBV_QPT_RC);
	connect_default(c, NULL, 0);
	ev = rcm_expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST, 10000, true);
	s = ev->id;
	rdma_ack_cm_event(ev);
	accept_req(cch, sch, s);
	send_check(c, s, "over IPv6, discovered");
	send_check(s, c, "and back");
	teardown(c);
	teardown(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
	rcm_fini();
	if (system("command -v tshark >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd),
			 "tshark -r %s -Y 'icmpv6.type==135 && icmpv6.nd.ns.target_address==2001:2::2'"
			 " -T fields -e ipv6.dst -e icmpv6.checksum.status 2>/dev/null | head -1", cap);
		cr_expect_str_eq(run(cmd), "ff02::1:ff00:2\t1\n", "the NS");
		snprintf(cmd, sizeof(cmd),
			 "tshark -r %s -Y 'icmpv6.type==136 && icmpv6.nd.na.flag.s==1' -T fields "
			 "-e ipv6.src -e ipv6.dst -e icmpv6.opt.linkaddr 2>/dev/null | head -1", cap);
		cr_expect_str_eq(run(cmd), "2001:2::2\t2001:2::1\t02:00:c6:12:00:02\n", "the NA");
	}
	unlink(ini);
	unlink(cap);
}
