/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srq_common.h"

void
s_start(enum s_mode mode)
{
	/* dedicated S_DEDICATED_2: lcores 1 and 2 both on CPU 1 (time-sliced) */
	static const struct tc_pair pairs[] = {
		[S_COLOCATED_1] = { .engines = 1 },
		[S_COLOCATED_2] = { .engines = 2 },
		[S_DEDICATED_1] = { .engines = 1, .lcores = "1", .eal_extra = "-l 0-1" },
		[S_DEDICATED_2] = { .engines = 2, .lcores = "1,2", .eal_extra = "--lcores=0@0,1@1,2@1" },
	};

	tc_start(&pairs[mode]);
}

void
s_open(struct s_dev *d, const char *name)
{
	memset(d, 0, sizeof(*d));
	d->ctx = tc_open(name, &d->gid);
	d->pd = ibv_alloc_pd(d->ctx);
	d->mr = tc_reg_buf(d->pd, S_BUF_SIZE, 0);
	d->buf = d->mr->addr;
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
	/* RNR NAKs retry forever (7): an empty SRQ only delays */
	struct tc_conn c = { .dgid = peer->gid, .dest_qpn = rqpn, .psn = 100, .timeout = timeout,
			     .retry_cnt = retry, .rnr_retry = 7, .rd_atomic = 1,
			     .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	tc_qp_up(qp, &c);
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

struct s_take {
	struct ibv_context *ctx;
	struct ibv_async_event *ev;
};

static bool
take_async(void *arg)
{
	struct s_take *t = arg;

	if (ibv_get_async_event(t->ctx, t->ev) == 0)
		return true;
	cr_assert_eq(errno, EAGAIN, "ibv_get_async_event: %s", strerror(errno));
	return false;
}

bool
s_async(struct ibv_context *ctx, struct ibv_async_event *ev, unsigned int ms, bool drive)
{
	struct s_take t = { .ctx = ctx, .ev = ev };

	/* driving: the co-located engines this thread owns, without sleeping */
	return tc_wait_fd(ctx->async_fd, ms, drive ? 0 : 10, take_async, &t,
			  drive ? droce_progress : NULL);
}
