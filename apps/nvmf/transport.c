/* SPDX-License-Identifier: BSD-3-Clause
 * droce-nvmf's RDMA transport: the rdma_cm listener (CM private data,
 * accept and reject), one RC QP and CQ per NVMe queue, and the per-request
 * state machine (enum nvmf_req_state; nvmf_req_step runs a request until it
 * has to wait for a completion).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <droce/droce.h>

#include "target.h"

#define WR_RECV 0u
#define WR_SEND 1u
#define WR_READ 2u
#define WR_ID(kind, idx) (((uint64_t)(idx) << 2) | (kind))
#define CQ_BURST 32
#define CLOSE_GRACE_MS 3000

static const char *const state_name[NVMF_REQ_STATE_COUNT] = {
	[NVMF_REQ_FREE] = "FREE",
	[NVMF_REQ_NEW] = "NEW",
	[NVMF_REQ_NEED_READ] = "NEED_READ",
	[NVMF_REQ_READING] = "READING",
	[NVMF_REQ_READY_TO_EXECUTE] = "READY_TO_EXECUTE",
	[NVMF_REQ_EXECUTING] = "EXECUTING",
	[NVMF_REQ_EXECUTED] = "EXECUTED",
	[NVMF_REQ_COMPLETING] = "COMPLETING",
};

static struct nvmf_dev *
dev_of(struct ibv_context *ctx)
{
	struct nvmf_target *t = &nvmf_tgt;

	for (unsigned int i = 0; i < t->n_dev; i++)
		if (t->dev[i].ctx == ctx)
			return &t->dev[i];
	if (t->n_dev == NVMF_MAX_DEVS)
		return NULL;
	struct nvmf_dev *d = &t->dev[t->n_dev];
	d->ctx = ctx;
	d->pd = ibv_alloc_pd(ctx);
	if (d->pd == NULL)
		return NULL;
	d->idx = t->n_dev++;
	return d;
}

int
nvmf_transport_listen(void)
{
	struct nvmf_target *t = &nvmf_tgt;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(t->port) };

	if (inet_pton(AF_INET, t->addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "droce-nvmf: bad listen address %s\n", t->addr);
		return -1;
	}
	t->ch = rdma_create_event_channel();
	if (t->ch == NULL || fcntl(t->ch->fd, F_SETFL, O_NONBLOCK) != 0 ||
	    rdma_create_id(t->ch, &t->listen, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(t->listen, (struct sockaddr *)&sin) != 0 || rdma_listen(t->listen, 128) != 0) {
		fprintf(stderr, "droce-nvmf: listen on %s:%u: %s\n", t->addr, t->port, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- queues ---- */

static void
queue_free(struct nvmf_queue *q)
{
	struct nvmf_queue **pp;

	for (pp = &nvmf_tgt.queues; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	nvmf_ctrl_queue_gone(q);
	if (q->qp)
		rdma_destroy_qp(q->id);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	for (unsigned int i = 0; q->reqs && i < q->n_req; i++)
		if (q->reqs[i].buf_mr) {
			ibv_dereg_mr(q->reqs[i].buf_mr);
			free(q->reqs[i].buf);
		}
	if (q->recv_mr)
		ibv_dereg_mr(q->recv_mr);
	if (q->rsp_mr)
		ibv_dereg_mr(q->rsp_mr);
	free(q->recv_buf);
	free(q->rsp);
	free(q->reqs);
	if (q->id)
		rdma_destroy_id(q->id);
	free(q);
}

static int
post_recv(struct nvmf_queue *q, unsigned int slot)
{
	unsigned int sz = NVMF_SQE_SIZE + q->icd;
	struct ibv_sge sge = { (uintptr_t)(q->recv_buf + (size_t)slot * sz), sz, q->recv_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_ID(WR_RECV, slot), .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(q->qp, &wr, &bad);
}

static struct nvmf_queue *
queue_create(struct rdma_cm_id *id, uint16_t qid, unsigned int depth, unsigned int ord)
{
	struct nvmf_queue *q = calloc(1, sizeof(*q));
	struct ibv_qp_init_attr qa = { 0 };
	unsigned int send_wr;

	if (q == NULL)
		return NULL;
	q->id = id;
	q->qid = qid;
	q->depth = depth;
	q->ord = ord;
	q->icd = qid ? NVMF_ICD_SIZE : 0;
	q->buf_size = qid ? NVMF_MAX_XFER : 8192;
	q->n_req = 2 * depth;
	q->dev = dev_of(id->verbs);
	q->recv_buf = calloc(depth, NVMF_SQE_SIZE + q->icd);
	q->rsp = calloc(q->n_req, sizeof(*q->rsp));
	q->reqs = calloc(q->n_req, sizeof(*q->reqs));
	if (q->dev == NULL || q->recv_buf == NULL || q->rsp == NULL || q->reqs == NULL)
		goto fail;
	q->recv_mr = ibv_reg_mr(q->dev->pd, q->recv_buf, (size_t)depth * (NVMF_SQE_SIZE + q->icd),
				IBV_ACCESS_LOCAL_WRITE);
	q->rsp_mr = ibv_reg_mr(q->dev->pd, q->rsp, q->n_req * sizeof(*q->rsp), 0);
	send_wr = 2 * q->n_req + 1;
	q->cq = ibv_create_cq(id->verbs, (int)(depth + send_wr + 1), NULL, NULL, 0);
	if (q->recv_mr == NULL || q->rsp_mr == NULL || q->cq == NULL)
		goto fail;
	qa.send_cq = qa.recv_cq = q->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 0;
	qa.cap.max_send_wr = send_wr;
	qa.cap.max_recv_wr = depth + 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, q->dev->pd, &qa) != 0)
		goto fail;
	q->qp = id->qp;
	for (unsigned int i = 0; i < q->n_req; i++) {
		struct nvmf_req *r = &q->reqs[i];

		r->q = q;
		r->idx = i;
		r->recv_slot = -1;
		r->next = q->free_list;
		q->free_list = r;
	}
	/* receives before accept: the host may send Connect at once */
	for (unsigned int i = 0; i < depth; i++)
		if (post_recv(q, i) != 0)
			goto fail;
	q->next = nvmf_tgt.queues;
	nvmf_tgt.queues = q;
	return q;
fail:
	if (q->qp)
		rdma_destroy_qp(id);
	q->qp = NULL;
	q->id = NULL; /* the caller rejects and destroys the id */
	q->next = NULL;
	queue_free(q);
	return NULL;
}

/* Rejects with the NVMe-oF status; returns the id, which the caller destroys
 * once the event is acked. */
static struct rdma_cm_id *
reject(struct rdma_cm_id *id, uint16_t sts)
{
	struct nvmf_cm_rej rej = { .recfmt = 0, .sts = sts };

	nvmf_tgt.rejects++;
	if (nvmf_tgt.verbose)
		nvmf_log("reject CM REQ: status %u", sts);
	rdma_reject(id, &rej, sizeof(rej));
	return id;
}

/* A CONNECT_REQUEST: a queue accepted, or NULL; else the id to destroy
 * after the ack (a rejected or failed one). */
static struct rdma_cm_id *
on_connect_request(struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *p = &ev->param.conn;
	struct nvmf_cm_req req;
	struct nvmf_cm_rep rep = { 0 };
	struct rdma_conn_param acc = { 0 };
	struct ibv_device_attr da;
	unsigned int depth, max_depth, ord;
	struct nvmf_queue *q;
	uint16_t sts = 0;

	if (p->private_data == NULL || p->private_data_len < sizeof(req))
		return reject(ev->id, NVMF_CM_INVALID_LEN);
	memcpy(&req, p->private_data, sizeof(req));
	max_depth = req.qid ? NVMF_MAX_DEPTH : NVMF_AQ_DEPTH;
	if (req.recfmt != 0)
		sts = NVMF_CM_INVALID_RECFMT;
	else if (req.qid > NVMF_MAX_IOQ)
		sts = NVMF_CM_INVALID_QID;
	else if (req.hsqsize < 1 || (unsigned int)req.hsqsize + 1 > max_depth)
		sts = NVMF_CM_INVALID_HSQSIZE;
	else if (req.hrqsize < 2 || req.hrqsize > max_depth + 1)
		sts = NVMF_CM_INVALID_HRQSIZE;
	else if (p->initiator_depth == 0)
		sts = NVMF_CM_INVALID_IRD;
	if (sts)
		return reject(ev->id, sts);
	depth = (unsigned int)req.hsqsize + 1;
	ord = p->initiator_depth;
	if (ibv_query_device(ev->id->verbs, &da) == 0 && ord > (unsigned int)da.max_qp_init_rd_atom)
		ord = (unsigned int)da.max_qp_init_rd_atom;
	q = queue_create(ev->id, req.qid, depth, ord);
	if (q == NULL)
		return reject(ev->id, NVMF_CM_NO_RSC);
	rep.crqsize = (uint16_t)depth;
	acc.private_data = &rep;
	acc.private_data_len = sizeof(rep);
	acc.initiator_depth = (uint8_t)ord;
	acc.responder_resources = 0;
	acc.rnr_retry_count = 7;
	acc.flow_control = 1;
	if (rdma_accept(ev->id, &acc) != 0) {
		nvmf_log("rdma_accept: %s", strerror(errno));
		rdma_destroy_qp(q->id);
		q->qp = NULL;
		q->id = NULL;
		queue_free(q);
		return ev->id;
	}
	if (nvmf_tgt.verbose)
		nvmf_log("queue %u accepted: depth %u, read depth %u", req.qid, depth, ord);
	return NULL;
}

static struct nvmf_queue *
queue_of(struct rdma_cm_id *id)
{
	for (struct nvmf_queue *q = nvmf_tgt.queues; q; q = q->next)
		if (q->id == id)
			return q;
	return NULL;
}

void
nvmf_queue_disconnect(struct nvmf_queue *q)
{
	if (q->state == NVMF_Q_CLOSING)
		return;
	q->state = NVMF_Q_CLOSING;
	rdma_disconnect(q->id);
	nvmf_ctrl_queue_gone(q);
}

/* Frees a closing queue once no file worker holds one of its requests. */
static bool
queue_reapable(const struct nvmf_queue *q)
{
	for (unsigned int i = 0; i < q->n_req; i++)
		if (q->reqs[i].state == NVMF_REQ_EXECUTING && q->reqs[i].ns &&
		    q->reqs[i].ns->kind == NVMF_NS_FILE)
			return false;
	return true;
}

void
nvmf_transport_cm_poll(void)
{
	struct rdma_cm_event *ev;
	struct nvmf_queue *q;

	while (rdma_get_cm_event(nvmf_tgt.ch, &ev) == 0) {
		struct rdma_cm_event e = *ev;

		if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* the private data lives in the event: use it before the ack;
			 * an id is destroyed only after its events are acked */
			struct rdma_cm_id *drop = on_connect_request(ev);

			rdma_ack_cm_event(ev);
			if (drop)
				rdma_destroy_id(drop);
			continue;
		}
		rdma_ack_cm_event(ev);
		q = queue_of(e.id);
		if (q == NULL)
			continue;
		switch (e.event) {
		case RDMA_CM_EVENT_ESTABLISHED:
			if (q->state == NVMF_Q_CONNECTING)
				q->state = NVMF_Q_LIVE;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		case RDMA_CM_EVENT_ADDR_CHANGE:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			if (nvmf_tgt.verbose)
				nvmf_log("queue %u: %s", q->qid, rdma_event_str(e.event));
			nvmf_queue_disconnect(q);
			q->cm_done = true;
			break;
		default:
			break;
		}
	}
}

/* ---- the request state machine ---- */

static void
req_release(struct nvmf_req *r)
{
	struct nvmf_queue *q = r->q;

	r->state = NVMF_REQ_FREE;
	r->ns = NULL;
	r->next = q->free_list;
	q->free_list = r;
	q->busy--;
}

/* Parses the SGL of a NEW request: the transfer, its length and where it is. */
static uint16_t
parse_sgl(struct nvmf_req *r, const uint8_t *icd)
{
	const struct nvmf_sqe *c = &r->sqe;
	uint8_t code = c->opcode == NVMF_FABRICS ? ((const struct nvmf_connect_cmd *)c)->fctype : c->opcode;

	r->xfer = (enum nvmf_xfer)(code & 3);
	r->keyed = r->in_capsule = r->invalidate = false;
	r->len = 0;
	if ((c->flags & 0xc0) != 0x40 || (c->flags & 0x3) != 0)
		return NVMF_SC_INVALID_FIELD | NVMF_DNR; /* PSDT must say SGL; no fused */
	switch (c->sgl.type) {
	case NVMF_SGL_KEYED_ADDR:
	case NVMF_SGL_KEYED_INV:
		r->len = nvmf_sgl_keyed_len(&c->sgl);
		r->raddr = c->sgl.addr;
		r->rkey = nvmf_sgl_key(&c->sgl);
		r->keyed = r->len > 0;
		r->invalidate = c->sgl.type == NVMF_SGL_KEYED_INV;
		break;
	case NVMF_SGL_DATA_OFFSET:
		r->len = nvmf_sgl_data_len(&c->sgl);
		if (r->q->icd == 0 || r->xfer != NVMF_XFER_TO_CTRL)
			return NVMF_SC_INVALID_FIELD | NVMF_DNR;
		if (c->sgl.addr > r->q->icd || r->len > r->q->icd - c->sgl.addr)
			return NVMF_SC_SGL_INVALID_OFFSET | NVMF_DNR;
		r->in_capsule = true;
		r->data = (uint8_t *)icd + c->sgl.addr;
		r->lkey = r->q->recv_mr->lkey;
		break;
	default:
		return NVMF_SC_SGL_INVALID_TYPE | NVMF_DNR;
	}
	if (r->xfer == NVMF_XFER_BIDI)
		return NVMF_SC_INVALID_OPCODE | NVMF_DNR;
	if (r->len > 0 && r->xfer == NVMF_XFER_NONE)
		return NVMF_SC_SGL_INVALID_DATA | NVMF_DNR;
	if (r->keyed && r->len > r->q->buf_size && r->q->qid == 0)
		return NVMF_SC_SGL_INVALID_DATA | NVMF_DNR;
	if (r->keyed && r->len > NVMF_MAX_XFER)
		return NVMF_SC_SGL_INVALID_DATA | NVMF_DNR;
	return 0;
}

/* Points the data of an admin/fabrics request (or a file I/O) at its bounce buffer. */
int
nvmf_req_bounce(struct nvmf_req *r)
{
	if (r->in_capsule)
		return 0;
	if (r->buf == NULL) {
		r->buf = aligned_alloc(4096, r->q->buf_size);
		if (r->buf == NULL)
			return -1;
		r->buf_mr = ibv_reg_mr(r->q->dev->pd, r->buf, r->q->buf_size, IBV_ACCESS_LOCAL_WRITE);
		if (r->buf_mr == NULL) {
			free(r->buf);
			r->buf = NULL;
			return -1;
		}
	}
	r->data = r->buf;
	r->lkey = r->buf_mr->lkey;
	return 0;
}

static void
set_status(struct nvmf_req *r, uint16_t status)
{
	r->status = status;
	r->state = NVMF_REQ_EXECUTED;
}

static enum nvmf_req_state
step_new(struct nvmf_req *r)
{
	const uint8_t *slot = r->q->recv_buf + (size_t)r->recv_slot * (NVMF_SQE_SIZE + r->q->icd);
	uint16_t st;

	memcpy(&r->sqe, slot, sizeof(r->sqe));
	r->status = 0;
	r->result = 0;
	r->data = NULL;
	r->ns = NULL;
	st = parse_sgl(r, slot + NVMF_SQE_SIZE);
	if (st) {
		r->status = st;
		return NVMF_REQ_EXECUTED;
	}
	if (r->q->qid != 0 && r->q->ctrl != NULL && r->sqe.opcode != NVMF_FABRICS) {
		/* I/O: validate and place the data (namespace memory or bounce) */
		st = (uint16_t)nvmf_prep_io(r);
		if (st) {
			r->status = st;
			return NVMF_REQ_EXECUTED;
		}
	} else if (r->len > 0 && nvmf_req_bounce(r) != 0) {
		r->status = NVMF_SC_INTERNAL | NVMF_DNR;
		return NVMF_REQ_EXECUTED;
	}
	if (r->keyed && r->xfer == NVMF_XFER_TO_CTRL)
		return NVMF_REQ_NEED_READ;
	return NVMF_REQ_READY_TO_EXECUTE;
}

static enum nvmf_req_state
step_need_read(struct nvmf_req *r)
{
	struct nvmf_queue *q = r->q;
	struct ibv_sge sge = { (uintptr_t)r->data, r->len, r->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_ID(WR_READ, r->idx), .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED }, *bad;

	/* only the head of the queue's READ line may go, within the read depth */
	if (q->reads_out >= q->ord || (q->read_head && q->read_head != r)) {
		if (q->read_head != r) {
			bool queued = false;

			for (struct nvmf_req *p = q->read_head; p; p = p->next)
				queued |= p == r;
			if (!queued) {
				r->next = NULL;
				if (q->read_tail)
					q->read_tail->next = r;
				else
					q->read_head = r;
				q->read_tail = r;
			}
		}
		return NVMF_REQ_NEED_READ;
	}
	if (q->read_head == r) {
		q->read_head = r->next;
		if (q->read_head == NULL)
			q->read_tail = NULL;
	}
	wr.wr.rdma.remote_addr = r->raddr;
	wr.wr.rdma.rkey = r->rkey;
	if (ibv_post_send(q->qp, &wr, &bad) != 0) {
		r->status = NVMF_SC_DATA_XFER_ERROR;
		return NVMF_REQ_EXECUTED;
	}
	q->reads_out++;
	return NVMF_REQ_READING;
}

static enum nvmf_req_state
step_execute(struct nvmf_req *r)
{
	nvmf_tgt.cmds++;
	if (r->sqe.opcode == NVMF_FABRICS && ((struct nvmf_connect_cmd *)&r->sqe)->fctype == NVMF_FCT_CONNECT)
		nvmf_exec_connect(r);
	else if (r->q->ctrl == NULL)
		set_status(r, NVMF_SC_INVALID_OPCODE | NVMF_DNR); /* nothing before Connect (nvmet) */
	else if (r->q->qid == 0 || r->sqe.opcode == NVMF_FABRICS)
		nvmf_exec_admin(r);
	else
		nvmf_exec_io(r);
	/* the executors either set EXECUTED (done) or EXECUTING (backend, AER) */
	if (r->state == NVMF_REQ_READY_TO_EXECUTE)
		r->state = NVMF_REQ_EXECUTED;
	return r->state;
}

static enum nvmf_req_state
step_executed(struct nvmf_req *r)
{
	struct nvmf_queue *q = r->q;
	struct nvmf_cqe *cqe = &q->rsp[r->idx];
	struct ibv_sge dsge = { (uintptr_t)r->data, r->len, r->lkey };
	struct ibv_sge rsge = { (uintptr_t)cqe, sizeof(*cqe), q->rsp_mr->lkey };
	struct ibv_send_wr send = { .wr_id = WR_ID(WR_SEND, r->idx), .sg_list = &rsge, .num_sge = 1,
				    .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr write = { .sg_list = &dsge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				     .next = &send };
	struct ibv_send_wr *first = &send, *bad;

	if (q->state == NVMF_Q_CLOSING)
		return NVMF_REQ_FREE;
	if (q->ctrl && (r->status & 0x7ff) != 0)
		nvmf_ctrl_log_error(q->ctrl, r);
	q->sq_head = (uint16_t)((q->sq_head + 1) % q->depth);
	cqe->result = r->result;
	cqe->sq_head = q->sq_head;
	cqe->sq_id = q->qid;
	cqe->cid = r->sqe.cid;
	cqe->status = (uint16_t)(r->status << 1);
	if (nvmf_tgt.verbose > 1)
		nvmf_log("q%u cid 0x%04x opc 0x%02x%s nsid %u cdw10 0x%x len %u sgl 0x%02x: status 0x%x",
			 q->qid, r->sqe.cid, r->sqe.opcode,
			 r->sqe.opcode == NVMF_FABRICS ? (((const uint8_t *)&r->sqe)[4] == 1 ? "/connect" : "/prop") : "",
			 r->sqe.nsid, r->sqe.cdw10, r->len, r->sqe.sgl.type, r->status);
	if (r->status == 0 && r->keyed && r->xfer == NVMF_XFER_TO_HOST) {
		write.wr.rdma.remote_addr = r->raddr;
		write.wr.rdma.rkey = r->rkey;
		first = &write;
	}
	if (r->invalidate) {
		send.opcode = IBV_WR_SEND_WITH_INV;
		send.invalidate_rkey = r->rkey;
	}
	/* the capsule's RECV goes back before the response: the host's next
	 * SEND may follow the response at once */
	if (r->recv_slot >= 0) {
		if (post_recv(q, (unsigned int)r->recv_slot) != 0) {
			nvmf_queue_disconnect(q);
			return NVMF_REQ_FREE;
		}
		r->recv_slot = -1;
	}
	if (ibv_post_send(q->qp, first, &bad) != 0) {
		nvmf_log("queue %u: post response: %s", q->qid, strerror(errno));
		nvmf_queue_disconnect(q);
		return NVMF_REQ_FREE;
	}
	return NVMF_REQ_COMPLETING;
}

void
nvmf_req_step(struct nvmf_req *r)
{
	enum nvmf_req_state prev;

	do {
		prev = r->state;
		switch (r->state) {
		case NVMF_REQ_NEW: r->state = step_new(r); break;
		case NVMF_REQ_NEED_READ: r->state = step_need_read(r); break;
		case NVMF_REQ_READY_TO_EXECUTE: r->state = step_execute(r); break;
		case NVMF_REQ_EXECUTED: r->state = step_executed(r); break;
		case NVMF_REQ_READING:     /* wait for the READ completion */
		case NVMF_REQ_EXECUTING:   /* wait for the backend */
		case NVMF_REQ_COMPLETING:  /* wait for the SEND completion */
		case NVMF_REQ_FREE:
		case NVMF_REQ_STATE_COUNT:
			break;
		}
		if (r->state == NVMF_REQ_FREE && prev != NVMF_REQ_FREE) {
			r->state = prev; /* release from a live state */
			req_release(r);
			return;
		}
	} while (r->state != prev);
}

void
nvmf_req_complete(struct nvmf_req *r, uint16_t status)
{
	if (r->state != NVMF_REQ_EXECUTING)
		return;
	r->status = status;
	r->state = NVMF_REQ_EXECUTED;
	nvmf_req_step(r);
}

/* Runs the READ line after a READ finished. */
static void
reads_kick(struct nvmf_queue *q)
{
	while (q->read_head && q->reads_out < q->ord) {
		struct nvmf_req *r = q->read_head;

		nvmf_req_step(r);
		if (r == q->read_head)
			break;
	}
}

static void
on_wc(struct nvmf_queue *q, const struct ibv_wc *wc)
{
	unsigned int kind = (unsigned int)(wc->wr_id & 3), idx = (unsigned int)(wc->wr_id >> 2);
	struct nvmf_req *r;

	if (kind == WR_RECV) {
		if (q->state == NVMF_Q_CLOSING)
			return; /* no new commands on a queue going away */
		if (wc->status != IBV_WC_SUCCESS || idx >= q->depth) {
			if (wc->status != IBV_WC_WR_FLUSH_ERR)
				nvmf_queue_disconnect(q);
			return;
		}
		r = q->free_list;
		if (r == NULL || wc->byte_len < NVMF_SQE_SIZE) {
			/* more commands than the queue's size, or a runt capsule */
			nvmf_log("queue %u: %s: disconnecting", q->qid,
				 r ? "short capsule" : "more commands than the queue size");
			nvmf_queue_disconnect(q);
			return;
		}
		q->free_list = r->next;
		q->busy++;
		r->recv_slot = (int)idx;
		r->state = NVMF_REQ_NEW;
		if (nvmf_tgt.verbose > 2)
			nvmf_log("q%u: capsule of %u bytes in slot %u", q->qid, wc->byte_len, idx);
		if (q->ctrl)
			q->ctrl->last_ms = nvmf_now_ms();
		nvmf_req_step(r);
		return;
	}
	if (idx >= q->n_req)
		return;
	r = &q->reqs[idx];
	if (kind == WR_READ) {
		q->reads_out--;
		if (r->state == NVMF_REQ_READING) {
			r->state = wc->status == IBV_WC_SUCCESS ? NVMF_REQ_READY_TO_EXECUTE : NVMF_REQ_EXECUTED;
			if (wc->status != IBV_WC_SUCCESS)
				r->status = NVMF_SC_DATA_XFER_ERROR;
			nvmf_req_step(r);
		}
		reads_kick(q);
		return;
	}
	if (r->state == NVMF_REQ_COMPLETING)
		req_release(r);
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR) {
		nvmf_log("queue %u: send completion %s", q->qid, ibv_wc_status_str(wc->status));
		nvmf_queue_disconnect(q);
	}
}

void
nvmf_transport_poll(void)
{
	struct ibv_wc wc[CQ_BURST];
	struct nvmf_queue *q, *next;
	uint64_t now = 0;

	for (q = nvmf_tgt.queues; q; q = next) {
		int n;

		next = q->next;
		while ((n = ibv_poll_cq(q->cq, CQ_BURST, wc)) > 0)
			for (int i = 0; i < n; i++)
				on_wc(q, &wc[i]);
		if (q->state != NVMF_Q_CLOSING)
			continue;
		/* closing: freed once the CM is done with it (or after a grace
		 * period) and no file worker still holds one of its requests */
		if (now == 0)
			now = nvmf_now_ms();
		if (q->closing_ms == 0)
			q->closing_ms = now;
		if ((q->cm_done || now - q->closing_ms > CLOSE_GRACE_MS) && queue_reapable(q))
			queue_free(q);
	}
}

void
nvmf_transport_fini(void)
{
	while (nvmf_tgt.queues) {
		nvmf_queue_disconnect(nvmf_tgt.queues);
		queue_free(nvmf_tgt.queues);
	}
	if (nvmf_tgt.listen)
		rdma_destroy_id(nvmf_tgt.listen);
	if (nvmf_tgt.ch)
		rdma_destroy_event_channel(nvmf_tgt.ch);
	for (unsigned int i = 0; i < nvmf_tgt.n_dev; i++) {
		for (unsigned int s = 0; s < nvmf_tgt.n_subsys; s++)
			for (unsigned int n = 0; n < nvmf_tgt.subsys[s].n_ns; n++)
				if (nvmf_tgt.subsys[s].ns[n].mr[i])
					ibv_dereg_mr(nvmf_tgt.subsys[s].ns[n].mr[i]);
		ibv_dealloc_pd(nvmf_tgt.dev[i].pd);
	}
}

const char *
nvmf_req_state_name(enum nvmf_req_state s)
{
	return s < NVMF_REQ_STATE_COUNT ? state_name[s] : "?";
}
