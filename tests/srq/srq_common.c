/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataplane/dp.h"

#include "srq_common.h"

uint64_t
s_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

void
s_start(enum s_mode mode)
{
	static char text[4096];
	static const char *const eal[] = {
		[S_COLOCATED_1] = "--no-huge --no-pci -m 256",
		[S_COLOCATED_2] = "--no-huge --no-pci -m 256",
		[S_DEDICATED_1] = "--no-huge --no-pci -l 0-1 -m 256",
		[S_DEDICATED_2] = "--no-huge --no-pci --lcores=0@0,1@1,2@1 -m 256",
	};
	static const char *const engines[] = {
		[S_COLOCATED_1] = "mode = colocated\ncount = 1\n",
		[S_COLOCATED_2] = "mode = colocated\ncount = 2\n",
		[S_DEDICATED_1] = "mode = dedicated\nlcores = 1\n",
		[S_DEDICATED_2] = "mode = dedicated\nlcores = 1,2\n",
	};
	unsigned int q = (mode == S_COLOCATED_2 || mode == S_DEDICATED_2) ? 2 : 1;
	struct droce_config cfg;
	int n;

	n = snprintf(text, sizeof(text),
		     "[eal]\n"
		     "args = %s --log-level=lib.eal:warning\n"
		     "[engines]\n"
		     "%s"
		     "[mempool]\n"
		     "mbufs = 8191\n"
		     "cache = 128\n"
		     "data_room = 2176\n"
		     "[port0]\n"
		     "kind = ring\n"
		     "peer = port1\n"
		     "mac = 02:00:c6:12:00:01\n"
		     "ipv4 = 198.18.0.1\n"
		     "rxq = %u\n"
		     "txq = %u\n"
		     "rxd = 1024\n"
		     "txd = 1024\n"
		     "[port1]\n"
		     "kind = ring\n"
		     "peer = port0\n"
		     "mac = 02:00:c6:12:00:02\n"
		     "ipv4 = 198.18.0.2\n"
		     "rxq = %u\n"
		     "txq = %u\n"
		     "rxd = 1024\n"
		     "txd = 1024\n",
		     eal[mode], engines[mode], q, q, q, q);
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<srq test>", text, &cfg), 0, "config: %s",
		     droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "droce_start_config: %s", droce_last_error());
}

void
s_stop(void)
{
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
}

void
s_open(struct s_dev *d, const char *name)
{
	struct ibv_device **list;
	int n;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	cr_assert_not_null(list, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			d->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	cr_assert_not_null(d->ctx);
	cr_assert_eq(ibv_query_gid(d->ctx, 1, 0, &d->gid), 0);
	d->pd = ibv_alloc_pd(d->ctx);
	cr_assert_not_null(d->pd);
	d->buf = calloc(1, S_BUF_SIZE);
	cr_assert_not_null(d->buf);
	d->mr = ibv_reg_mr(d->pd, d->buf, S_BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(d->mr);
}

struct ibv_qp *
s_rc_qp(struct s_dev *d, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
	uint32_t send_wr, uint32_t recv_wr)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	cr_assert_not_null(qp, "ibv_create_qp: %s", strerror(errno));
	return qp;
}

void
s_rc_connect(struct ibv_qp *qp, const struct s_dev *peer, uint32_t rqpn, uint8_t retry,
	     uint8_t timeout)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rqpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.hop_limit = 64;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = 7; /* RNR NAKs retry forever: an empty SRQ only delays */
	a.max_rd_atomic = 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

void
s_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
}

int
s_post_send(struct ibv_qp *qp, struct s_dev *d, uint64_t id, size_t off, uint32_t len,
	    unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)d->buf + off, .length = len, .lkey = d->mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | flags };
	struct ibv_send_wr *bad;

	return ibv_post_send(qp, &w, &bad);
}

int
s_post_srq(struct ibv_srq *srq, struct s_dev *d, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)d->buf + off, .length = len, .lkey = d->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &w, &bad);
}

int
s_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int ms)
{
	uint64_t end = s_now_ms() + ms;
	int got = 0;

	while (got < n) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		cr_assert_geq(k, 0);
		got += k;
		if (k == 0 && s_now_ms() > end)
			break;
	}
	return got;
}

struct ibv_wc
s_wait(struct ibv_cq *cq, unsigned int ms, const char *what)
{
	struct ibv_wc wc;

	cr_assert_eq(s_poll(cq, &wc, 1, ms), 1, "%s: no completion within %u ms", what, ms);
	return wc;
}

bool
s_async(struct ibv_context *ctx, struct ibv_async_event *ev, unsigned int ms, bool drive)
{
	uint64_t end = s_now_ms() + ms;
	int fl = fcntl(ctx->async_fd, F_GETFL);

	cr_assert_eq(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	for (;;) {
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

		if (poll(&p, 1, drive ? 0 : 10) == 1) {
			int rc = ibv_get_async_event(ctx, ev);

			if (rc == 0) {
				fcntl(ctx->async_fd, F_SETFL, fl);
				return true;
			}
			cr_assert_eq(errno, EAGAIN, "ibv_get_async_event: %s", strerror(errno));
		}
		if (drive)
			droce_engines_progress(); /* co-located engines owned by this thread */
		if (s_now_ms() > end)
			break;
	}
	fcntl(ctx->async_fd, F_SETFL, fl);
	return false;
}
