/* SPDX-License-Identifier: BSD-3-Clause
 * A UD (RDMA_PS_UDP, SIDR) rdma_cm program playing the protocol of
 * rdma-core's udaddy example, so that either side may be udaddy: built with
 * `pkg-config --cflags --libs droce` against <rdma/rdma_cma.h> only.
 *
 *   example_udaddy [-b ADDR] [-p PORT] [-C COUNT] [-S SIZE]      server
 *   example_udaddy -s ADDR [-p PORT] [-C COUNT] [-S SIZE]        client
 *
 * Port 7174, 10 messages of 100 bytes by default.  The client resolves the
 * server, posts COUNT receives (SIZE + 40 bytes: the GRH), connects (SIDR
 * REQ / REP: the server's QPN, Q_Key and address) and sends COUNT SENDs
 * with immediate data (its QPN); the server, once it accepted, receives the
 * COUNT messages, makes its reply address handle from the first one's work
 * completion and GRH (ibv_create_ah_from_wc; the peer's QPN is the
 * immediate) and sends COUNT messages back; the client waits for them.
 * Completion waits are bounded (10 s); CM event waits are not (the caller
 * bounds the run, as scripts/rxe/matrix.py does).  Prints "example_udaddy: ok" on success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#define GRH 40

static int count = 10, size = 100;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The next CM event on @ch, which must be @want (10 s at most). */
static int
expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
	     struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		return -1;
	}
	if (ev->event != want) {
		fprintf(stderr, "example_udaddy: event %s (status %d), expected %s\n",
			rdma_event_str(ev->event), ev->status, rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

/* Polls @cq until @n completions are in @wc (10 s at most); 0 when all succeeded. */
static int
poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *what)
{
	double end = now() + 10;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0) {
			fprintf(stderr, "example_udaddy: ibv_poll_cq %d\n", r);
			return -1;
		}
		got += r;
		if (r == 0 && now() > end) {
			fprintf(stderr, "example_udaddy: %d of %d %s completions\n", got, n, what);
			return -1;
		}
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "example_udaddy: %s completion %d: %s\n", what, i,
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
	}
	return 0;
}

struct node {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	uint8_t *mem;
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
};

static int
init_node(struct node *n)
{
	struct ibv_qp_init_attr attr;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	n->pd = ibv_alloc_pd(n->id->verbs);
	n->scq = ibv_create_cq(n->id->verbs, count, NULL, NULL, 0);
	n->rcq = ibv_create_cq(n->id->verbs, count, NULL, NULL, 0);
	n->mem = calloc(1, (size_t)size + GRH);
	if (!n->pd || !n->scq || !n->rcq || !n->mem) {
		fprintf(stderr, "example_udaddy: pd / cq / memory\n");
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_UD;
	attr.send_cq = n->scq;
	attr.recv_cq = n->rcq;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = (uint32_t)count;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(n->id, n->pd, &attr)) {
		perror("rdma_create_qp");
		return -1;
	}
	n->mr = ibv_reg_mr(n->pd, n->mem, (size_t)size + GRH, IBV_ACCESS_LOCAL_WRITE);
	if (!n->mr) {
		perror("ibv_reg_mr");
		return -1;
	}
	/* as udaddy: every receive lands in the same buffer */
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	sge.addr = (uintptr_t)n->mem;
	sge.length = (uint32_t)size + GRH;
	sge.lkey = n->mr->lkey;
	for (int i = 0; i < count; i++) {
		if (ibv_post_recv(n->id->qp, &wr, &bad)) {
			perror("ibv_post_recv");
			return -1;
		}
	}
	return 0;
}

static int
post_sends(struct node *n)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(n->id->qp->qp_num);
	wr.wr.ud.ah = n->ah;
	wr.wr.ud.remote_qpn = n->remote_qpn;
	wr.wr.ud.remote_qkey = n->remote_qkey;
	sge.addr = (uintptr_t)n->mem;
	sge.length = (uint32_t)size;
	sge.lkey = n->mr->lkey;
	for (int i = 0; i < count; i++) {
		if (ibv_post_send(n->id->qp, &wr, &bad)) {
			perror("ibv_post_send");
			return -1;
		}
	}
	return 0;
}

static int
check_recvs(struct ibv_wc *wc)
{
	for (int i = 0; i < count; i++) {
		if (wc[i].opcode != IBV_WC_RECV || !(wc[i].wc_flags & IBV_WC_WITH_IMM) ||
		    wc[i].byte_len != (uint32_t)size + GRH) {
			fprintf(stderr, "example_udaddy: receive %d: opcode %d flags %#x len %u\n", i,
				wc[i].opcode, wc[i].wc_flags, wc[i].byte_len);
			return -1;
		}
	}
	return 0;
}

static int
run_server(struct rdma_event_channel *ch, const char *bind, const char *port)
{
	struct rdma_addrinfo hints, *res;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc *wc = calloc((size_t)count, sizeof(*wc));
	struct node n;

	memset(&n, 0, sizeof(n));
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_UDP;
	if (!wc || rdma_getaddrinfo(bind, port, &hints, &res)) {
		perror("rdma_getaddrinfo");
		return -1;
	}
	if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_UDP) ||
	    rdma_bind_addr(listen_id, res->ai_src_addr) || rdma_listen(listen_id, 0)) {
		perror("rdma_create_id / rdma_bind_addr / rdma_listen");
		return -1;
	}
	/* scripts/rxe/matrix.py waits for this line before starting a client */
	printf("example_udaddy: listening on %s port %s\n", bind ? bind : "0.0.0.0", port);
	fflush(stdout);
	if (expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev))
		return -1;
	n.id = ev->id;
	rdma_ack_cm_event(ev);
	if (init_node(&n))
		return -1;
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = n.id->qp->qp_num;
	if (rdma_accept(n.id, &cp)) {
		perror("rdma_accept");
		return -1;
	}
	printf("example_udaddy: accepted; receiving\n");
	if (poll_n(n.rcq, wc, count, "receive") || check_recvs(wc))
		return -1;
	n.ah = ibv_create_ah_from_wc(n.pd, &wc[0], (struct ibv_grh *)n.mem, n.id->port_num);
	if (!n.ah) {
		perror("ibv_create_ah_from_wc");
		return -1;
	}
	n.remote_qpn = ntohl(wc[0].imm_data);
	memset(&qa, 0, sizeof(qa));
	if (ibv_query_qp(n.id->qp, &qa, IBV_QP_QKEY, &qia)) {
		perror("ibv_query_qp");
		return -1;
	}
	n.remote_qkey = qa.qkey;
	printf("example_udaddy: replying to QPN %#x Q_Key %#x\n", n.remote_qpn, n.remote_qkey);
	if (post_sends(&n) || poll_n(n.scq, wc, count, "send"))
		return -1;
	ibv_destroy_ah(n.ah);
	rdma_destroy_qp(n.id);
	ibv_dereg_mr(n.mr);
	rdma_destroy_id(n.id);
	rdma_destroy_id(listen_id);
	rdma_freeaddrinfo(res);
	free(wc);
	return 0;
}

static int
run_client(struct rdma_event_channel *ch, const char *dst, const char *port)
{
	struct rdma_addrinfo hints, *res;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct ibv_wc *wc = calloc((size_t)count, sizeof(*wc));
	struct node n;

	memset(&n, 0, sizeof(n));
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_UDP;
	if (!wc || rdma_getaddrinfo(dst, port, &hints, &res)) {
		perror("rdma_getaddrinfo");
		return -1;
	}
	if (rdma_create_id(ch, &n.id, NULL, RDMA_PS_UDP) ||
	    rdma_resolve_addr(n.id, res->ai_src_addr, res->ai_dst_addr, 2000)) {
		perror("rdma_create_id / rdma_resolve_addr");
		return -1;
	}
	if (expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL))
		return -1;
	if (rdma_resolve_route(n.id, 2000)) {
		perror("rdma_resolve_route");
		return -1;
	}
	if (expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) || init_node(&n))
		return -1;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = res->ai_connect;
	cp.private_data_len = (uint8_t)res->ai_connect_len;
	if (rdma_connect(n.id, &cp)) {
		perror("rdma_connect");
		return -1;
	}
	if (expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, &ev))
		return -1;
	n.remote_qpn = ev->param.ud.qp_num;
	n.remote_qkey = ev->param.ud.qkey;
	n.ah = ibv_create_ah(n.pd, &ev->param.ud.ah_attr);
	rdma_ack_cm_event(ev);
	if (!n.ah) {
		perror("ibv_create_ah");
		return -1;
	}
	printf("example_udaddy: SIDR REP: QPN %#x Q_Key %#x; sending\n", n.remote_qpn,
	       n.remote_qkey);
	memset(n.mem, 0x5a, (size_t)size);
	if (post_sends(&n) || poll_n(n.scq, wc, count, "send"))
		return -1;
	if (poll_n(n.rcq, wc, count, "receive") || check_recvs(wc))
		return -1;
	ibv_destroy_ah(n.ah);
	rdma_destroy_qp(n.id);
	ibv_dereg_mr(n.mr);
	rdma_destroy_id(n.id);
	rdma_freeaddrinfo(res);
	free(wc);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *dst = NULL, *bind = NULL, *port = "7174";
	struct rdma_event_channel *ch;
	int op, rc;

	while ((op = getopt(argc, argv, "s:b:p:C:S:")) != -1) {
		switch (op) {
		case 's': dst = optarg; break;
		case 'b': bind = optarg; break;
		case 'p': port = optarg; break;
		case 'C': count = atoi(optarg); break;
		case 'S': size = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-s SERVER | -b BIND] [-p PORT] [-C COUNT] [-S SIZE]\n",
				argv[0]);
			return 2;
		}
	}
	if (count < 1 || size < 1) {
		fprintf(stderr, "example_udaddy: -C and -S must be positive\n");
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	rc = dst ? run_client(ch, dst, port) : run_server(ch, bind, port);
	rdma_destroy_event_channel(ch);
	if (rc == 0)
		printf("example_udaddy: ok\n");
	return rc ? 1 : 0;
}
