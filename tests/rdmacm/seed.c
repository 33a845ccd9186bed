/* SPDX-License-Identifier: BSD-3-Clause
 * The seed pages' client and server (see seed.h).  The exchange:
 *  1. The client connects with 11 bytes of private data; the server checks
 *     them in its CONNECT_REQUEST (56 bytes: REQ's 92 minus the rdma_cm
 *     header) and accepts with the address and rkey of a WRITE target and a
 *     READ source in its private data.
 *  2. SEND inline from a stack buffer with a NULL mr, signaled.
 *  3. An unsignaled SEND, a 100 ms pause, then a SOLICITED signaled SEND: the
 *     server armed its CQ for solicited completions only and must wake after
 *     the second (both are then in its CQ), not after the first.  The client
 *     sees exactly one send completion for the pair.
 *  4. Every receive buffer is reposted after its completion and reused.
 *  5. rdma_post_write of 8 KiB into the server's buffer, then a SEND; the
 *     server checks every byte.  rdma_post_read of 4 KiB from the server;
 *     the client checks every byte.
 *  6. The client disconnects; the server's outstanding receives flush with
 *     IBV_WC_WR_FLUSH_ERR after its own rdma_disconnect.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "seed.h"

#define CHECK(c)                                                                         \
	do {                                                                             \
		if (!(c)) {                                                              \
			fprintf(stderr, "%s:%d: %s failed (errno %d %s)\n", __FILE__,    \
				__LINE__, #c, errno, strerror(errno));                   \
			return __LINE__;                                                 \
		}                                                                        \
	} while (0)

#define MSG 64
#define NRECV 4
#define WSIZE 8192
#define RSIZE 4096

struct remote {
	uint64_t waddr, raddr;
	uint32_t wrkey, rrkey;
} __attribute__((packed));

static const char hello[] = "hello-droce";

static uint8_t
pat(size_t i, unsigned int seed)
{
	return (uint8_t)(i * 131 + seed * 7 + (i >> 8));
}

static void
qp_attr(struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->cap.max_send_wr = 16;
	a->cap.max_recv_wr = 16;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
	a->cap.max_inline_data = 64;
	a->sq_sig_all = 0;
}

int
rcm_seed_server(const char *addr, const char *port, sem_t *ready)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *listen_id, *id;
	struct rdma_conn_param cp;
	struct ibv_mr *rmr, *wmr, *smr;
	struct ibv_wc wc;
	struct ibv_cq *cq;
	void *ctx;
	struct remote rem;
	uint8_t *rbuf, *wbuf, *sbuf;
	int n;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(rdma_getaddrinfo(addr, port, &hints, &res) == 0);
	qp_attr(&attr);
	CHECK(rdma_create_ep(&listen_id, res, NULL, &attr) == 0);
	rdma_freeaddrinfo(res);
	CHECK(rdma_listen(listen_id, 0) == 0);
	if (ready)
		sem_post(ready);
	CHECK(rdma_get_request(listen_id, &id) == 0);
	CHECK(id->event != NULL && id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(id->event->listen_id == listen_id);
	CHECK(id->event->param.conn.private_data_len == 56);
	CHECK(memcmp(id->event->param.conn.private_data, hello, sizeof(hello)) == 0);
	CHECK(id->qp != NULL); /* rdma_create_ep's attributes, on the new id */

	rbuf = calloc(NRECV, MSG);
	wbuf = calloc(1, WSIZE);
	sbuf = malloc(RSIZE);
	CHECK(rbuf && wbuf && sbuf);
	for (size_t i = 0; i < RSIZE; i++)
		sbuf[i] = pat(i, 2);
	CHECK((rmr = rdma_reg_msgs(id, rbuf, NRECV * MSG)) != NULL);
	CHECK((wmr = rdma_reg_write(id, wbuf, WSIZE)) != NULL);
	CHECK((smr = rdma_reg_read(id, sbuf, RSIZE)) != NULL);
	for (uintptr_t i = 0; i < NRECV; i++)
		CHECK(rdma_post_recv(id, (void *)i, rbuf + i * MSG, MSG, rmr) == 0);

	rem.waddr = (uintptr_t)wbuf;
	rem.wrkey = wmr->rkey;
	rem.raddr = (uintptr_t)sbuf;
	rem.rrkey = smr->rkey;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &rem;
	cp.private_data_len = sizeof(rem);
	cp.responder_resources = 2;
	cp.initiator_depth = 2;
	CHECK(rdma_accept(id, &cp) == 0);

	/* 2: the inline SEND */
	CHECK(rdma_get_recv_comp(id, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
	CHECK(wc.byte_len == 6 && memcmp(rbuf + wc.wr_id * MSG, "inline", 6) == 0);
	CHECK(rdma_post_recv(id, (void *)wc.wr_id, rbuf + wc.wr_id * MSG, MSG, rmr) == 0);

	/* 3: woken by the solicited SEND only */
	CHECK(ibv_req_notify_cq(id->recv_cq, 1) == 0);
	CHECK(ibv_get_cq_event(id->recv_cq_channel, &cq, &ctx) == 0);
	CHECK(cq == id->recv_cq && ctx == id);
	ibv_ack_cq_events(cq, 1);
	for (int k = 0; k < 2; k++) {
		/* both are in the CQ when the event arrives */
		CHECK((n = ibv_poll_cq(id->recv_cq, 1, &wc)) == 1);
		CHECK(wc.status == IBV_WC_SUCCESS);
		CHECK(memcmp(rbuf + wc.wr_id * MSG, k == 0 ? "unsignaled" : "solicited",
			     k == 0 ? 10 : 9) == 0);
		CHECK(rdma_post_recv(id, (void *)wc.wr_id, rbuf + wc.wr_id * MSG, MSG, rmr) == 0);
	}

	/* 5: the WRITE, announced by a SEND */
	CHECK(rdma_get_recv_comp(id, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(rbuf + wc.wr_id * MSG, "written", 7) == 0);
	for (size_t i = 0; i < WSIZE; i++)
		CHECK(wbuf[i] == pat(i, 1));
	CHECK(rdma_post_recv(id, (void *)wc.wr_id, rbuf + wc.wr_id * MSG, MSG, rmr) == 0);

	/* 6: the client disconnects; ours answers; the posted receives flush */
	CHECK(rdma_disconnect(id) == 0);
	for (int k = 0; k < NRECV; k++) {
		CHECK(rdma_get_recv_comp(id, &wc) == 1);
		CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);
	}
	rdma_dereg_mr(rmr);
	rdma_dereg_mr(wmr);
	rdma_dereg_mr(smr);
	free(rbuf);
	free(wbuf);
	free(sbuf);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen_id);
	return 0;
}

int
rcm_seed_client(const char *addr, const char *port)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	struct ibv_mr *mr, *rmr, *dmr;
	struct ibv_wc wc;
	struct remote rem;
	uint8_t *msgs, *wsrc, *rdst;
	char inl[8] = "inline";

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(rdma_getaddrinfo(addr, port, &hints, &res) == 0);
	qp_attr(&attr);
	CHECK(rdma_create_ep(&id, res, NULL, &attr) == 0);
	rdma_freeaddrinfo(res);
	CHECK(id->qp != NULL && attr.cap.max_inline_data >= 6);

	msgs = calloc(4, MSG);
	wsrc = malloc(WSIZE);
	rdst = calloc(1, RSIZE);
	CHECK(msgs && wsrc && rdst);
	for (size_t i = 0; i < WSIZE; i++)
		wsrc[i] = pat(i, 1);
	CHECK((mr = rdma_reg_msgs(id, msgs, 4 * MSG)) != NULL);
	CHECK((rmr = ibv_reg_mr(id->pd, wsrc, WSIZE, IBV_ACCESS_LOCAL_WRITE)) != NULL);
	CHECK((dmr = rdma_reg_msgs(id, rdst, RSIZE)) != NULL);

	memset(&cp, 0, sizeof(cp));
	cp.private_data = hello;
	cp.private_data_len = sizeof(hello);
	cp.responder_resources = 2;
	cp.initiator_depth = 2;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	CHECK(rdma_connect(id, &cp) == 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED);
	CHECK(id->event->param.conn.private_data_len >= sizeof(rem));
	memcpy(&rem, id->event->param.conn.private_data, sizeof(rem));

	/* 2: inline from a stack buffer, NULL mr */
	CHECK(rdma_post_send(id, (void *)1, inl, 6, NULL, IBV_SEND_INLINE | IBV_SEND_SIGNALED) == 0);
	memset(inl, 'x', sizeof(inl)); /* inline: the buffer is free at once */
	CHECK(rdma_get_send_comp(id, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 1);

	/* 3: unsignaled, pause, solicited + signaled: one completion */
	memcpy(msgs, "unsignaled", 10);
	memcpy(msgs + MSG, "solicited", 9);
	CHECK(rdma_post_send(id, (void *)2, msgs, 10, mr, 0) == 0);
	{
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do { /* keep polling meanwhile, as a busy client does */
			CHECK(ibv_poll_cq(id->send_cq, 1, &wc) == 0);
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 100);
	}
	CHECK(rdma_post_send(id, (void *)3, msgs + MSG, 9, mr,
			     IBV_SEND_SIGNALED | IBV_SEND_SOLICITED) == 0);
	CHECK(rdma_get_send_comp(id, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3);
	CHECK(ibv_poll_cq(id->send_cq, 1, &wc) == 0);

	/* 5: WRITE into the server, then tell it */
	CHECK(rdma_post_write(id, (void *)4, wsrc, WSIZE, rmr, IBV_SEND_SIGNALED, rem.waddr,
			      rem.wrkey) == 0);
	CHECK(rdma_get_send_comp(id, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 4);
	CHECK(rdma_post_read(id, (void *)5, rdst, RSIZE, dmr, IBV_SEND_SIGNALED, rem.raddr,
			     rem.rrkey) == 0);
	CHECK(rdma_get_send_comp(id, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.wr_id == 5);
	for (size_t i = 0; i < RSIZE; i++)
		CHECK(rdst[i] == pat(i, 2));
	memcpy(msgs + 2 * MSG, "written", 7);
	CHECK(rdma_post_send(id, (void *)6, msgs + 2 * MSG, 7, mr, IBV_SEND_SIGNALED) == 0);
	CHECK(rdma_get_send_comp(id, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 6);

	/* 6: disconnect first (DREQ); returns on DISCONNECTED */
	CHECK(rdma_disconnect(id) == 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED);
	rdma_dereg_mr(mr);
	rdma_dereg_mr(rmr);
	rdma_dereg_mr(dmr);
	free(msgs);
	free(wsrc);
	rdma_destroy_ep(id);
	free(rdst);
	return 0;
}
