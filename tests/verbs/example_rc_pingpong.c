/* SPDX-License-Identifier: BSD-3-Clause
 * A plain verbs program, written as for any RDMA NIC: it includes only
 * <infiniband/verbs.h> and builds with
 *
 *     cc example_rc_pingpong.c $(pkg-config --cflags --libs droce)
 *
 * It opens droce0 and droce1 (the two ends of the embedded loopback config),
 * connects an RC QP on each over GID 0 of the other, and checks a SEND, an
 * RDMA WRITE with immediate and an RDMA READ.  Exit status 0 on success.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#define BUF_SIZE 4096

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	uint32_t psn;
};

#define CHECK(cond, ...)                                   \
	do {                                               \
		if (!(cond)) {                             \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);      \
			fprintf(stderr, "\n");             \
			exit(1);                           \
		}                                          \
	} while (0)

static void
open_end(struct end *e, struct ibv_device *dev, uint32_t psn)
{
	struct ibv_port_attr port;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	e->ctx = ibv_open_device(dev);
	CHECK(e->ctx, "ibv_open_device: %s", strerror(errno));
	CHECK(ibv_query_port(e->ctx, 1, &port) == 0, "ibv_query_port");
	CHECK(port.state == IBV_PORT_ACTIVE, "port state %s", ibv_port_state_str(port.state));
	CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET, "link layer");
	e->mtu = port.active_mtu;
	CHECK(ibv_query_gid(e->ctx, 1, 0, &e->gid) == 0, "ibv_query_gid");
	e->pd = ibv_alloc_pd(e->ctx);
	CHECK(e->pd, "ibv_alloc_pd");
	e->buf = calloc(1, BUF_SIZE);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(e->mr, "ibv_reg_mr: %s", strerror(errno));
	e->cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	CHECK(e->cq, "ibv_create_cq");
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	CHECK(e->qp, "ibv_create_qp: %s", strerror(errno));
	CHECK(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS) == 0, "to INIT");
	e->psn = psn;
}

static void
connect_end(struct end *e, const struct end *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = e->mtu, .dest_qp_num = peer->qp->qp_num,
		.rq_psn = peer->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = peer->gid, .sgid_index = 0, .hop_limit = 64 } },
	};
	int rc;

	rc = ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			   IBV_QP_MIN_RNR_TIMER);
	CHECK(rc == 0, "to RTR: %s", strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = e->psn;
	a.max_rd_atomic = 1;
	rc = ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(rc == 0, "to RTS: %s", strerror(rc));
}

/* Polls @cq until one completion arrives (5 s at most). */
static struct ibv_wc
wait_wc(struct ibv_cq *cq)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "ibv_poll_cq: %d", n);
		if (n == 1)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		CHECK(t.tv_sec - t0.tv_sec < 5, "no completion within 5 s");
	}
}

int
main(void)
{
	struct ibv_device **list;
	struct ibv_device *d0 = NULL, *d1 = NULL;
	struct end a, b;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad_wr;
	struct ibv_recv_wr rwr, *bad_rwr;
	struct ibv_wc wc;
	int n, rc;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	list = ibv_get_device_list(&n);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), "droce0") == 0)
			d0 = list[i];
		if (strcmp(ibv_get_device_name(list[i]), "droce1") == 0)
			d1 = list[i];
	}
	CHECK(d0 && d1, "droce0 and droce1 expected (%d devices)", n);
	open_end(&a, d0, 0x1000);
	open_end(&b, d1, 0x2000);
	ibv_free_device_list(list);
	connect_end(&a, &b);
	connect_end(&b, &a);

	/* SEND a -> b */
	sge = (struct ibv_sge){ .addr = (uintptr_t)b.buf, .length = 256, .lkey = b.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	rc = ibv_post_recv(b.qp, &rwr, &bad_rwr);
	CHECK(rc == 0, "ibv_post_recv: %s", strerror(rc));
	strcpy(a.buf, "hello from droce0");
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 18, .lkey = a.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	rc = ibv_post_send(a.qp, &wr, &bad_wr);
	CHECK(rc == 0, "ibv_post_send: %s", strerror(rc));
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1 && wc.opcode == IBV_WC_SEND,
	      "send completion: %s", ibv_wc_status_str(wc.status));
	wc = wait_wc(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && wc.opcode == IBV_WC_RECV,
	      "recv completion: %s", ibv_wc_status_str(wc.status));
	CHECK(wc.byte_len == 18, "byte_len %u", wc.byte_len);
	CHECK(wc.qp_num == b.qp->qp_num, "qp_num");
	CHECK(strcmp(b.buf, "hello from droce0") == 0, "received '%s'", b.buf);

	/* RDMA WRITE with immediate a -> b, inline */
	rwr.wr_id = 3;
	sge = (struct ibv_sge){ .addr = (uintptr_t)b.buf, .length = 0, .lkey = b.mr->lkey };
	rwr.num_sge = 0;
	rc = ibv_post_recv(b.qp, &rwr, &bad_rwr);
	CHECK(rc == 0, "ibv_post_recv: %s", strerror(rc));
	strcpy(a.buf + 64, "written");
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf + 64, .length = 8, .lkey = a.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
				   .imm_data = htonl(0x12345678) };
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf + 1024;
	wr.wr.rdma.rkey = b.mr->rkey;
	rc = ibv_post_send(a.qp, &wr, &bad_wr);
	CHECK(rc == 0, "ibv_post_send: %s", strerror(rc));
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE, "write: %s",
	      ibv_wc_status_str(wc.status));
	wc = wait_wc(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      (wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htonl(0x12345678),
	      "write imm completion: %s", ibv_wc_status_str(wc.status));
	CHECK(strcmp(b.buf + 1024, "written") == 0, "remote memory '%s'", b.buf + 1024);

	/* RDMA READ b -> a */
	strcpy(b.buf + 2048, "read me");
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf + 512, .length = 8, .lkey = a.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf + 2048;
	wr.wr.rdma.rkey = b.mr->rkey;
	rc = ibv_post_send(a.qp, &wr, &bad_wr);
	CHECK(rc == 0, "ibv_post_send: %s", strerror(rc));
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 8,
	      "read: %s", ibv_wc_status_str(wc.status));
	CHECK(strcmp(a.buf + 512, "read me") == 0, "read back '%s'", a.buf + 512);

	for (struct end *e = &a; e; e = e == &a ? &b : NULL) {
		CHECK(ibv_destroy_qp(e->qp) == 0, "ibv_destroy_qp");
		CHECK(ibv_destroy_cq(e->cq) == 0, "ibv_destroy_cq");
		CHECK(ibv_dereg_mr(e->mr) == 0, "ibv_dereg_mr");
		CHECK(ibv_dealloc_pd(e->pd) == 0, "ibv_dealloc_pd");
		CHECK(ibv_close_device(e->ctx) == 0, "ibv_close_device");
		free(e->buf);
	}
	printf("example_rc_pingpong: SEND, WRITE_WITH_IMM, READ over droce0 <-> droce1: OK\n");
	return 0;
}
