/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: -R, the QPs connected through rdma_cm as perftest 6.06's -R does
 * (create_rdma_cm_connection): rdma_cm's contexts, connection parameters,
 * the client's connects and the server's accepts, for two processes (with
 * a key exchange before and after) and for the loopback topology (both
 * ends in this process).  The exchange channel itself is two.c's.
 */
#include "perf.h"

/* -R: rdma_cm's QPs must share a PD with the buffers, and rdma_create_qp
 * wants the PD of the id's own context: rdma_cm's context of @dev (which
 * stays open, as librdmacm keeps its contexts). */
struct ibv_context *
rcm_context_of(struct ibv_device *dev)
{
	struct ibv_context **list, *ctx = NULL;
	int n = 0;

	list = rdma_get_devices(&n);
	if (list == NULL)
		fail("rdma_get_devices: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]->device), ibv_get_device_name(dev)) == 0)
			ctx = list[i];
	rdma_free_devices(list);
	if (ctx == NULL)
		errno = ENODEV;
	return ctx;
}

/* -R: rdma_cm's connection parameters, as perftest's: responder resources
 * and initiator depth are the outstanding reads for READ and atomics. */
void
cm_param(struct rdma_conn_param *c)
{
	memset(c, 0, sizeof(*c));
	if (o.verb == V_READ || o.verb == V_ATOMIC)
		c->responder_resources = c->initiator_depth = (uint8_t)o.out_reads;
	c->retry_count = 7;
	c->rnr_retry_count = 7;
}

/* -R, RDMA_PS_UDP: @side's address handle to the peer, its QPN and Q_Key,
 * from the ESTABLISHED event (the SIDR REP) @c kept. */
void
cm_ud_peer(const struct pt_rcm *c, uint32_t i, int side)
{
	struct pair *p = &R.p[i];
	struct ibv_ah_attr ah = c->ud.ah_attr;

	p->ah[side] = ibv_create_ah(R.s[side].pd, &ah);
	if (p->ah[side] == NULL)
		fail("ibv_create_ah (QP pair %u, from rdma_cm): %s", i, strerror(errno));
	p->rem_qpn[side] = c->ud.qp_num;
	R.rem_qkey = c->ud.qkey;
}

/* -R, client: the QP of pair @arg once rdma_cm resolved the route; its
 * receives once connected (a rejected attempt's QP goes away, and its
 * flushed receives would land in the CQ). */
int
cm_make_qp(struct rdma_cm_id *id, void *arg)
{
	pair_qp((uint32_t)(uintptr_t)arg, R.me, id, false);
	return 0;
}

/* -R, server: accepts one connection request for pair @i from @c's listener. */
void
cm_accept(struct pt_rcm *c, uint32_t i, int side)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (pt_rcm_wait(c, RDMA_CM_EVENT_CONNECT_REQUEST, &ev) != 0)
		fail("rdma_cm: QP pair %u: %s", i, c->err);
	id = ev->id;
	rdma_ack_cm_event(ev);
	pair_qp(i, side, id, true);
	cm_param(&param);
	if (rdma_accept(id, &param) != 0)
		fail("rdma_accept (QP pair %u): %s", i, strerror(errno));
}

/* -R (perftest's create_rdma_cm_connection): a key exchange, the -q
 * connections through rdma_cm on -p, another key exchange.  The server
 * listens before the first exchange; the client retries a connection the
 * server rejected because it was not listening yet. */
void
connect_qps_rdma_cm(void)
{
	enum rdma_port_space ps = o.qpt == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	struct rdma_conn_param param;

	pt_rcm_init(&R.cm, (int)(o.timeout * 1000), oob_idle, NULL);
	if (R.me && pt_rcm_listen(&R.cm, o.bind, o.tcp_port, ps, (int)o.qps) != 0)
		fail("rdma_cm listen for the QPs: %s", R.cm.err);
	barrier("sync before the rdma_cm connections");
	for (uint32_t i = 0; i < o.qps; i++) {
		struct rdma_cm_id *id;

		if (R.me) {
			cm_accept(&R.cm, i, R.me);
			continue;
		}
		cm_param(&param);
		if (pt_rcm_connect(&R.cm, o.host, o.tcp_port, ps, cm_make_qp, (void *)(uintptr_t)i,
				   &param, &id) != 0)
			fail("rdma_cm: connecting QP pair %u to %s:%d: %s", i, o.host, o.tcp_port,
			     R.cm.err);
		pair_post_recvs(i, R.me);
		if (o.qpt == IBV_QPT_UD)
			cm_ud_peer(&R.cm, i, R.me);
	}
	pt_rcm_unlisten(&R.cm);
	barrier("sync after the rdma_cm connections");
}

/* -R on the loopback topology: droce1 (the server) listens on -p at its
 * address; droce0 connects each pair to it from this thread, whose idle
 * callback accepts the server's requests as they come (both ends' QPs on
 * rdma_cm's contexts, moved to RTS by rdma_cm). */

void
loop_cm_idle(void *arg)
{
	struct rdma_cm_event *ev;

	(void)arg;
	droce_progress();
	if (pt_rcm_try(&R.cm, &ev) <= 0)
		return;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && loop_accepted < o.qps) {
		struct rdma_cm_id *id = ev->id;
		struct rdma_conn_param param;
		uint32_t i = loop_accepted++;

		rdma_ack_cm_event(ev);
		pair_qp(i, 1, id, true);
		cm_param(&param);
		if (rdma_accept(id, &param) != 0)
			fail("rdma_accept (loopback, QP pair %u): %s", i, strerror(errno));
		return;
	}
	rdma_ack_cm_event(ev); /* ESTABLISHED and the like: nothing to do */
}

void
setup_loop_rdma_cm(void)
{
	enum rdma_port_space ps = o.qpt == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	struct rdma_conn_param param;
	char addr[INET_ADDRSTRLEN];

	if (!pt_gid_is_v4mapped(R.s[1].gid.raw))
		fail("-R on the loopback topology needs an IPv4 address on %s",
		     ibv_get_device_name(R.s[1].dev));
	inet_ntop(AF_INET, R.s[1].gid.raw + 12, addr, sizeof(addr));
	if (R.cm.listen_id == NULL) {
		pt_rcm_init(&R.cm, (int)(o.timeout * 1000), NULL, NULL);
		if (pt_rcm_listen(&R.cm, addr, o.tcp_port, ps, (int)o.qps) != 0)
			fail("rdma_cm listen on %s:%d: %s", addr, o.tcp_port, R.cm.err);
	}
	loop_accepted = 0;
	pt_rcm_init(&loop_cli, (int)(o.timeout * 1000), loop_cm_idle, NULL);
	for (uint32_t i = 0; i < o.qps; i++) {
		struct pair *p = &R.p[i];
		struct rdma_cm_id *id;

		memset(p, 0, sizeof(*p));
		for (int k = 0; k < 2; k++) {
			p->psn[k] = (uint32_t)lrand48() & 0xffffff;
			p->base[k] = R.s[k].buf + (uint64_t)i * R.lay.region;
		}
		R.me = 0; /* cm_make_qp makes side R.me's QP */
		cm_param(&param);
		if (pt_rcm_connect(&loop_cli, addr, o.tcp_port, ps, cm_make_qp,
				   (void *)(uintptr_t)i, &param, &id) != 0)
			fail("rdma_cm: connecting QP pair %u to %s:%d: %s", i, addr, o.tcp_port,
			     loop_cli.err);
		if (loop_accepted != i + 1)
			fail("rdma_cm: QP pair %u connected, but the server accepted %u", i,
			     loop_accepted);
		pair_post_recvs(i, 0);
		if (o.qpt == IBV_QPT_UD)
			cm_ud_peer(&loop_cli, i, 0);
	}
	/* the client ids' events are all in: its channel stays for teardown's */
	R.loop_cli_open = true;
}
