/* SPDX-License-Identifier: BSD-3-Clause
 * The test suite's NVMe-oF RDMA host (host.h).
 */
#include "host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <droce/droce.h>

#define WR_RECV (1ull << 62)
#define WR_SEND (1ull << 61)
#define CM_TIMEOUT_MS 5000

uint64_t
nh_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
fail(struct nh_queue *q, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q->err, sizeof(q->err), fmt, ap);
	va_end(ap);
	return rc;
}

/* Waits for the next CM event on the queue's channel: its type (the event
 * acked), or -1 on timeout.  A REJECTED's NVMe-oF status lands in rej_sts. */
static int
cm_wait(struct nh_queue *q, int timeout_ms)
{
	uint64_t end = nh_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rdma_cm_event *ev;

	for (;;) {
		if (rdma_get_cm_event(q->ch, &ev) == 0) {
			int type = ev->event;

			if (type == RDMA_CM_EVENT_REJECTED && ev->param.conn.private_data &&
			    ev->param.conn.private_data_len >= sizeof(struct nvmf_cm_rej)) {
				struct nvmf_cm_rej rej;

				memcpy(&rej, ev->param.conn.private_data, sizeof(rej));
				q->rej_sts = rej.sts;
			}
			if (type == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data &&
			    ev->param.conn.private_data_len >= sizeof(struct nvmf_cm_rep)) {
				struct nvmf_cm_rep rep;

				memcpy(&rep, ev->param.conn.private_data, sizeof(rep));
				q->crqsize = rep.crqsize;
			}
			rdma_ack_cm_event(ev);
			return type;
		}
		if (errno != EAGAIN || nh_now_ns() > end)
			return -1;
		droce_progress();
		usleep(50);
	}
}

static int
post_recv(struct nh_queue *q, unsigned int i)
{
	struct ibv_sge sge = { (uintptr_t)&q->rsp[i], sizeof(q->rsp[i]), q->rsp_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV | i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(q->qp, &wr, &bad);
}

static int
setup_verbs(struct nh_queue *q)
{
	struct ibv_qp_init_attr qa = { 0 };
	size_t csz = NVMF_SQE_SIZE + q->icd;

	q->pd = ibv_alloc_pd(q->id->verbs);
	q->cq = ibv_create_cq(q->id->verbs, (int)(4 * q->depth + 2), NULL, NULL, 0);
	q->cmd = calloc(q->depth, csz);
	q->rsp = calloc(q->depth, sizeof(*q->rsp));
	q->data = aligned_alloc(4096, ((q->depth * q->slot_size) + 4095) & ~(size_t)4095);
	q->slot = calloc(q->depth, sizeof(*q->slot));
	q->mw = calloc(q->depth, sizeof(*q->mw));
	if (!q->pd || !q->cq || !q->cmd || !q->rsp || !q->data || !q->slot || !q->mw)
		return fail(q, -2, "resources: %s", strerror(errno));
	memset(q->data, 0, q->depth * q->slot_size);
	q->cmd_mr = ibv_reg_mr(q->pd, q->cmd, q->depth * csz, 0);
	q->rsp_mr = ibv_reg_mr(q->pd, q->rsp, q->depth * sizeof(*q->rsp), IBV_ACCESS_LOCAL_WRITE);
	q->data_mr = ibv_reg_mr(q->pd, q->data, q->depth * q->slot_size,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_MW_BIND);
	if (!q->cmd_mr || !q->rsp_mr || !q->data_mr)
		return fail(q, -2, "ibv_reg_mr: %s", strerror(errno));
	for (unsigned int i = 0; i < q->depth; i++)
		if ((q->mw[i] = ibv_alloc_mw(q->pd, IBV_MW_TYPE_2)) == NULL)
			return fail(q, -2, "ibv_alloc_mw: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = q->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 3 * q->depth + 1; /* bind, send, local invalidate */
	qa.cap.max_recv_wr = q->depth + 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(q->id, q->pd, &qa) != 0)
		return fail(q, -2, "rdma_create_qp: %s", strerror(errno));
	q->qp = q->id->qp;
	for (unsigned int i = 0; i < q->depth; i++)
		if (post_recv(q, i) != 0)
			return fail(q, -2, "post recv");
	return 0;
}

int
nh_connect(struct nh_queue *q, const char *addr, uint16_t port, uint16_t qid, unsigned int depth,
	   unsigned int hrqsize, unsigned int ird, size_t slot_size, unsigned int icd, uint16_t recfmt)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct nvmf_cm_req req = { .recfmt = recfmt, .qid = qid };
	struct rdma_conn_param cp = { 0 };
	int ev;

	memset(q, 0, sizeof(*q));
	q->qid = qid;
	q->depth = depth;
	q->icd = icd;
	q->slot_size = slot_size ? slot_size : 4096;
	req.hsqsize = (uint16_t)(depth - 1);
	req.hrqsize = (uint16_t)(hrqsize ? hrqsize : depth);
	if (inet_pton(AF_INET, addr, &dst.sin_addr) != 1)
		return fail(q, -2, "address %s", addr);
	q->ch = rdma_create_event_channel();
	if (q->ch == NULL || fcntl(q->ch->fd, F_SETFL, O_NONBLOCK) != 0 ||
	    rdma_create_id(q->ch, &q->id, NULL, RDMA_PS_TCP) != 0)
		return fail(q, -2, "rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(q->id, NULL, (struct sockaddr *)&dst, 2000) != 0 ||
	    (ev = cm_wait(q, CM_TIMEOUT_MS)) != RDMA_CM_EVENT_ADDR_RESOLVED)
		return fail(q, -2, "resolve addr: %s", strerror(errno));
	if (setup_verbs(q) != 0)
		return -2;
	if (rdma_resolve_route(q->id, 2000) != 0 ||
	    (ev = cm_wait(q, CM_TIMEOUT_MS)) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return fail(q, -2, "resolve route");
	cp.private_data = &req;
	cp.private_data_len = sizeof(req);
	cp.responder_resources = (uint8_t)ird; /* the target reads host memory */
	cp.initiator_depth = 0;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	cp.flow_control = 1;
	if (rdma_connect(q->id, &cp) != 0)
		return fail(q, -2, "rdma_connect: %s", strerror(errno));
	ev = cm_wait(q, CM_TIMEOUT_MS);
	if (ev == RDMA_CM_EVENT_REJECTED)
		return fail(q, -1, "rejected: status %u", q->rej_sts);
	if (ev != RDMA_CM_EVENT_ESTABLISHED)
		return fail(q, -2, "connect: event %d", ev);
	q->established = true;
	return 0;
}

void
nh_close(struct nh_queue *q)
{
	if (q->id && q->established && !q->disconnected) {
		rdma_disconnect(q->id);
		/* DISCONNECTED arrives when the target answers (bounded) */
		for (int i = 0; i < 20 && cm_wait(q, 100) != RDMA_CM_EVENT_DISCONNECTED; i++)
			;
	}
	if (q->qp)
		rdma_destroy_qp(q->id);
	for (unsigned int i = 0; q->mw && i < q->depth; i++)
		if (q->mw[i])
			ibv_dealloc_mw(q->mw[i]);
	if (q->cmd_mr)
		ibv_dereg_mr(q->cmd_mr);
	if (q->rsp_mr)
		ibv_dereg_mr(q->rsp_mr);
	if (q->data_mr)
		ibv_dereg_mr(q->data_mr);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->pd)
		ibv_dealloc_pd(q->pd);
	if (q->id)
		rdma_destroy_id(q->id);
	if (q->ch)
		rdma_destroy_event_channel(q->ch);
	free(q->cmd);
	free(q->rsp);
	free(q->data);
	free(q->slot);
	free(q->mw);
	memset(q, 0, sizeof(*q));
}

int
nh_slot_get(struct nh_queue *q)
{
	for (unsigned int i = 0; i < q->depth; i++)
		if (!q->slot[i].busy)
			return (int)i;
	return -1;
}

int
nh_submit(struct nh_queue *q, int slot, struct nvmf_sqe *sqe, enum nh_sgl mode, uint32_t len)
{
	struct nh_slot *s = &q->slot[slot];
	uint8_t *cap = q->cmd + (size_t)slot * (NVMF_SQE_SIZE + q->icd);
	uint8_t *buf = nh_buf(q, slot);
	struct ibv_sge sge = { (uintptr_t)cap, NVMF_SQE_SIZE, q->cmd_mr->lkey };
	struct ibv_send_wr send = { .wr_id = WR_SEND | (unsigned int)slot, .sg_list = &sge,
				    .num_sge = 1, .opcode = IBV_WR_SEND,
				    .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr bind = { .opcode = IBV_WR_BIND_MW, .next = &send };
	struct ibv_send_wr *first = &send, *bad;

	if (s->busy || len > q->slot_size)
		return fail(q, -1, "slot %d busy or %u bytes too long", slot, len);
	memset(s, 0, sizeof(*s));
	s->busy = true;
	q->gen = (uint16_t)(q->gen + 1);
	s->cid = (uint16_t)((unsigned int)slot | (q->gen & 0xfu) << 12);
	sqe->cid = s->cid;
	if (sqe->flags == 0)
		sqe->flags = 0x40; /* PSDT 01b: SGL, metadata pointer (Linux's value) */
	switch (mode) {
	case NH_SGL_NULL:
		nvmf_sgl_set_keyed(&sqe->sgl, NVMF_SGL_KEYED_ADDR, 0, 0, 0);
		break;
	case NH_SGL_KEYED:
		nvmf_sgl_set_keyed(&sqe->sgl, NVMF_SGL_KEYED_ADDR, (uintptr_t)buf, len, q->data_mr->rkey);
		break;
	case NH_SGL_KEYED_INV:
		/* as FRWR does: register (bind) right before the capsule */
		bind.bind_mw.mw = q->mw[slot];
		bind.bind_mw.rkey = ibv_inc_rkey(q->mw[slot]->rkey);
		bind.bind_mw.bind_info = (struct ibv_mw_bind_info){
			.mr = q->data_mr, .addr = (uintptr_t)buf, .length = len ? len : 1,
			.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE };
		s->bound_rkey = bind.bind_mw.rkey;
		q->mw[slot]->rkey = bind.bind_mw.rkey;
		nvmf_sgl_set_keyed(&sqe->sgl, NVMF_SGL_KEYED_INV, (uintptr_t)buf, len, s->bound_rkey);
		first = &bind;
		break;
	case NH_SGL_INCAPSULE:
		if (len > q->icd)
			return fail(q, -1, "%u bytes exceed the in-capsule size %u", len, q->icd);
		nvmf_sgl_set_data(&sqe->sgl, 0, len);
		memcpy(cap + NVMF_SQE_SIZE, buf, len);
		sge.length += len;
		break;
	case NH_SGL_RAW:
		if (len > q->icd)
			return fail(q, -1, "%u bytes exceed the in-capsule size %u", len, q->icd);
		memcpy(cap + NVMF_SQE_SIZE, buf, len);
		sge.length += len;
		break;
	}
	memcpy(cap, sqe, sizeof(*sqe));
	s->t0_ns = nh_now_ns();
	if (ibv_post_send(q->qp, first, &bad) != 0) {
		s->busy = false;
		return fail(q, -1, "ibv_post_send: %s", strerror(errno));
	}
	q->outstanding++;
	return 0;
}

static void
on_recv(struct nh_queue *q, const struct ibv_wc *wc, unsigned int idx)
{
	struct nvmf_cqe cqe = q->rsp[idx];
	unsigned int slot = cqe.cid & 0xfff;

	if (wc->byte_len < sizeof(cqe) || slot >= q->depth || !q->slot[slot].busy ||
	    q->slot[slot].cid != cqe.cid || q->slot[slot].rsp_done) {
		snprintf(q->err, sizeof(q->err), "bad response: len %u cid 0x%x", wc->byte_len, cqe.cid);
		q->disconnected = true;
		return;
	}
	q->slot[slot].cqe = cqe;
	q->slot[slot].rsp_done = true;
	if (wc->wc_flags & IBV_WC_WITH_INV) {
		q->slot[slot].with_inv = true;
		q->slot[slot].inv_rkey = wc->invalidated_rkey;
	}
	if (post_recv(q, idx) != 0)
		q->disconnected = true;
}

int
nh_poll(struct nh_queue *q)
{
	struct ibv_wc wc[16];
	struct rdma_cm_event *ev;
	int n, done = 0;

	while ((n = ibv_poll_cq(q->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (!q->err[0])
					snprintf(q->err, sizeof(q->err), "completion %s (wr 0x%llx)",
						 ibv_wc_status_str(wc[i].status),
						 (unsigned long long)wc[i].wr_id);
				q->disconnected = true;
				continue;
			}
			if (wc[i].wr_id & WR_RECV) {
				on_recv(q, &wc[i], (unsigned int)(wc[i].wr_id & 0xffff));
				done++;
			} else if (wc[i].wr_id & WR_SEND) {
				q->slot[wc[i].wr_id & 0xffff].send_done = true;
			}
		}
	}
	if (rdma_get_cm_event(q->ch, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			q->disconnected = true;
		rdma_ack_cm_event(ev);
	}
	return done;
}

bool
nh_reap(struct nh_queue *q, int slot, struct nvmf_cqe *cqe)
{
	struct nh_slot *s = &q->slot[slot];

	if (!s->busy || !s->rsp_done || !s->send_done)
		return false;
	if (cqe)
		*cqe = s->cqe;
	if (s->bound_rkey && !s->with_inv) {
		/* the target did not invalidate: do it before the next bind */
		struct ibv_send_wr inv = { .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = s->bound_rkey },
				   *bad;

		(void)ibv_post_send(q->qp, &inv, &bad);
	}
	s->busy = false;
	q->outstanding--;
	return true;
}

int
nh_cmd(struct nh_queue *q, struct nvmf_sqe *sqe, enum nh_sgl mode, void *data, uint32_t len,
       struct nvmf_cqe *cqe, int timeout_ms)
{
	uint64_t end = nh_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct nvmf_cqe c;
	int slot = nh_slot_get(q);
	uint8_t op = sqe->opcode == NVMF_FABRICS ? ((uint8_t *)sqe)[4] : sqe->opcode;

	if (slot < 0)
		return fail(q, -1, "no free slot");
	if (data && (op & 3) == NVMF_XFER_TO_CTRL)
		memcpy(nh_buf(q, slot), data, len);
	else
		memset(nh_buf(q, slot), 0xa5, len); /* what was not written shows */
	if (nh_submit(q, slot, sqe, mode, len) != 0)
		return -1;
	while (!nh_reap(q, slot, &c)) {
		nh_poll(q);
		if (q->disconnected) {
			char why[sizeof(q->err)];

			snprintf(why, sizeof(why), "%s", q->err);
			return fail(q, -1, "disconnected%s%s", why[0] ? ": " : "", why);
		}
		if (nh_now_ns() > end)
			return fail(q, -1, "command 0x%x timed out", sqe->opcode);
		droce_progress();
	}
	if (data && (op & 3) == NVMF_XFER_TO_HOST)
		memcpy(data, nh_buf(q, slot), len);
	if (cqe)
		*cqe = c;
	return c.status >> 1;
}
