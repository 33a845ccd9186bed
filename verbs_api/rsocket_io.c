/* SPDX-License-Identifier: BSD-3-Clause
 * Over 1,100 lines: one connection's data path (credits, the SGL updates, send, receive, iomap writes) shares the connection's lock and ring state; split it along send and receive next time it grows.
 * rsockets' data path (rsocket.h has the protocol): the connection's QP,
 * CQ and buffers, completions and credits, rsend / rrecv and their vector
 * forms, riomap / riounmap / riowrite, and the one bounded wait every
 * blocking call uses.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "dataplane/dp.h"
#include "rsocket.h"

/* A blocked call wakes at least this often to look at the socket again. */
#define WAIT_SLICE_MS 200
/* Busy-poll this long before blocking (rdma-core's polling_time). */
#define SPIN_US 10
/* Vectors per call, as Linux's UIO_MAXIOV. */
#define MAX_IOV 1024

static int
scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

static int
value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}

static void *
zalloc_pages(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 1) != 0)
		return NULL;
	memset(p, 0, len);
	return p;
}

/* ---- set-up ---- */

static int
post_recv(struct droce_rs *rs)
{
	struct ibv_recv_wr wr = { .wr_id = DROCE_RS_WRID_RECV, .sg_list = NULL, .num_sge = 0 };
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(rs->id->qp, &wr, &bad);

	return rc ? droce_rs_errno(rc) : 0;
}

int
droce_rs_create_ep(struct droce_rs *rs)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	uint32_t max = DROCE_RS_QP_MAX;
	size_t len;

	if (ibv_query_device(rs->id->verbs, &da) == 0 && (uint32_t)da.max_qp_wr < max)
		max = (uint32_t)da.max_qp_wr;
	if (rs->sq_size > max)
		rs->sq_size = (uint16_t)max;
	if (rs->sq_size < DROCE_RS_QP_MIN)
		rs->sq_size = DROCE_RS_QP_MIN;
	if (rs->rq_size > max)
		rs->rq_size = (uint16_t)max;
	if (rs->rq_size < DROCE_RS_QP_MIN)
		rs->rq_size = DROCE_RS_QP_MIN;

	rs->cqch = ibv_create_comp_channel(rs->id->verbs);
	if (rs->cqch == NULL)
		return -1;
	if (fcntl(rs->cqch->fd, F_SETFL, fcntl(rs->cqch->fd, F_GETFL) | O_NONBLOCK) != 0)
		return -1;
	rs->cq = ibv_create_cq(rs->id->verbs, rs->sq_size + rs->rq_size, rs, rs->cqch, 0);
	if (rs->cq == NULL)
		return -1;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->id, NULL, &qa) != 0)
		return -1;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;

	/* send ring, then one control slot per reserved send slot (SGL updates) */
	len = rs->sbuf_size + sizeof(struct droce_rs_sge) * DROCE_RS_CTRL_SLOTS;
	rs->sbuf = zalloc_pages(len);
	if (rs->sbuf == NULL)
		return droce_rs_errno(ENOMEM);
	rs->smr = ibv_reg_mr(rs->id->pd, rs->sbuf, len, IBV_ACCESS_LOCAL_WRITE);
	if (rs->smr == NULL)
		return -1;

	len = sizeof(struct droce_rs_sge) * DROCE_RS_SGL_SIZE +
	      sizeof(struct droce_rs_iomap) * rs->target_iomap_size;
	rs->target_buf = zalloc_pages(len);
	if (rs->target_buf == NULL)
		return droce_rs_errno(ENOMEM);
	rs->target_mr = ibv_reg_mr(rs->id->pd, rs->target_buf, len,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (rs->target_mr == NULL)
		return -1;
	rs->target_sgl = rs->target_buf;
	rs->target_iomap = rs->target_iomap_size ?
		(volatile struct droce_rs_iomap *)(rs->target_sgl + DROCE_RS_SGL_SIZE) : NULL;

	rs->rbuf = zalloc_pages(rs->rbuf_size);
	if (rs->rbuf == NULL)
		return droce_rs_errno(ENOMEM);
	rs->rmr = ibv_reg_mr(rs->id->pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (rs->rmr == NULL)
		return -1;
	rs->rmsg = calloc(rs->rq_size + 1u, sizeof(*rs->rmsg));
	if (rs->rmsg == NULL)
		return droce_rs_errno(ENOMEM);

	rs->ssgl[0].addr = rs->ssgl[1].addr = (uintptr_t)rs->sbuf;
	rs->ssgl[0].lkey = rs->ssgl[1].lkey = rs->smr->lkey;
	rs->sbuf_bytes_avail = (int)rs->sbuf_size;
	rs->rbuf_free_offset = (int)(rs->rbuf_size >> 1);
	rs->rbuf_bytes_avail = (int)(rs->rbuf_size >> 1);
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;

	for (unsigned int i = 0; i < rs->rq_size; i++)
		if (post_recv(rs) != 0)
			return -1;
	return 0;
}

void
droce_rs_free_ep(struct droce_rs *rs)
{
	struct droce_rs_iomap_mr *m;

	while ((m = rs->iomaps) != NULL) {
		rs->iomaps = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
	free(rs->remote_slots);
	rs->remote_slots = NULL;
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	rs->smr = rs->rmr = rs->target_mr = NULL;
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_buf);
	free(rs->rmsg);
	rs->sbuf = rs->rbuf = NULL;
	rs->target_buf = NULL;
	rs->rmsg = NULL;
	if (rs->cq) {
		ibv_ack_cq_events(rs->cq, rs->unacked);
		rs->unacked = 0;
		ibv_destroy_cq(rs->cq);
		rs->cq = NULL;
	}
	if (rs->cqch) {
		ibv_destroy_comp_channel(rs->cqch);
		rs->cqch = NULL;
	}
}

void
droce_rs_format_conn(struct droce_rs *rs, struct droce_rs_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = DROCE_RS_CONN_VERSION;
	c->flags = DROCE_RS_CONN_FLAG_IOMAP |
		   (__BYTE_ORDER == __BIG_ENDIAN ? DROCE_RS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = (uint8_t)value_to_scale(rs->target_iomap_size, 8);
	c->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	c->target_sgl.length = htobe32(DROCE_RS_SGL_SIZE);
	c->target_sgl.key = htobe32(rs->target_mr->rkey);
	c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	c->data_buf.length = htobe32(rs->rbuf_size >> 1);
	c->data_buf.key = htobe32(rs->rmr->rkey);
}

int
droce_rs_save_conn(struct droce_rs *rs, const void *pdata, size_t len)
{
	struct droce_rs_conn_data c;
	bool peer_net;

	if (pdata == NULL || len < sizeof(c))
		return droce_rs_errno(EPROTO);
	memcpy(&c, pdata, sizeof(c));
	if (c.version != DROCE_RS_CONN_VERSION)
		return droce_rs_errno(ENOTSUP);
	rs->remote_sgl.addr = be64toh(c.target_sgl.addr);
	rs->remote_sgl.length = be32toh(c.target_sgl.length);
	rs->remote_sgl.key = be32toh(c.target_sgl.key);
	if (rs->remote_sgl.length == 0)
		return droce_rs_errno(EPROTO);
	rs->remote_sge = 1 % rs->remote_sgl.length;
	peer_net = (c.flags & DROCE_RS_CONN_FLAG_NET) != 0;
	rs->swap = peer_net != (__BYTE_ORDER == __BIG_ENDIAN);
	if (c.flags & DROCE_RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr +
					sizeof(struct droce_rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = (uint32_t)scale_to_value(c.target_iomap_size, 8);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs->target_sgl[0].addr = be64toh(c.data_buf.addr);
	rs->target_sgl[0].length = be32toh(c.data_buf.length);
	rs->target_sgl[0].key = be32toh(c.data_buf.key);
	rs->sseq_comp = be16toh(c.credits);
	return 0;
}

/* ---- posting ---- */

static int
post_write(struct droce_rs *rs, struct ibv_sge *sgl, int nsge, uint32_t msg, bool imm,
	   unsigned int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = msg;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.send_flags = flags;
	wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	rc = ibv_post_send(rs->id->qp, &wr, &bad);
	return rc ? droce_rs_errno(rc) : 0;
}

bool
droce_rs_ctrl_avail(const struct droce_rs *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

int
droce_rs_post_ctrl(struct droce_rs *rs, enum droce_rs_ctrl ctrl)
{
	rs->ctrl_seqno++;
	/* a keepalive needs no receive on the peer: a plain zero-length WRITE */
	return post_write(rs, NULL, 0, droce_rs_msg(DROCE_RS_OP_CTRL, ctrl),
			  ctrl != DROCE_RS_CTRL_KEEPALIVE, 0, 0, 0);
}

static struct droce_rs_sge
sge_for_peer(const struct droce_rs *rs, uint64_t addr, uint32_t key, uint32_t length)
{
	struct droce_rs_sge s = { .addr = addr, .key = key, .length = length };

	if (rs->swap) {
		s.addr = __builtin_bswap64(s.addr);
		s.key = __builtin_bswap32(s.key);
		s.length = __builtin_bswap32(s.length);
	}
	return s;
}

/* Grants credits, and the free half of the receive buffer when there is one. */
static void
send_credits(struct droce_rs *rs)
{
	uint32_t half = rs->rbuf_size >> 1;
	uint32_t msg;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	msg = droce_rs_msg(DROCE_RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	if (rs->rbuf_bytes_avail >= (int)half) {
		struct droce_rs_sge s = sge_for_peer(rs, (uintptr_t)&rs->rbuf[rs->rbuf_free_offset],
						     rs->rmr->rkey, half);
		struct ibv_sge isge;
		unsigned int flags;

		if (rs->sq_inline < sizeof(s)) {
			void *slot = rs->sbuf + rs->sbuf_size +
				     sizeof(s) * (rs->ctrl_seqno & (DROCE_RS_CTRL_SLOTS - 1));

			memcpy(slot, &s, sizeof(s));
			isge.addr = (uintptr_t)slot;
			isge.lkey = rs->smr->lkey;
			flags = 0;
		} else {
			isge.addr = (uintptr_t)&s;
			isge.lkey = 0;
			flags = IBV_SEND_INLINE;
		}
		isge.length = sizeof(s);
		post_write(rs, &isge, 1, msg, true, flags,
			   rs->remote_sgl.addr + rs->remote_sge * sizeof(struct droce_rs_sge),
			   rs->remote_sgl.key);
		rs->rbuf_bytes_avail -= (int)half;
		rs->rbuf_free_offset += (int)half;
		if (rs->rbuf_free_offset >= (int)rs->rbuf_size)
			rs->rbuf_free_offset = 0;
		if (++rs->remote_sge == rs->remote_sgl.length)
			rs->remote_sge = 0;
	} else {
		post_write(rs, NULL, 0, msg, true, 0, 0, 0);
	}
}

static void
update_credits(struct droce_rs *rs)
{
	if (rs->state != DROCE_RS_CONNECTED || !droce_rs_ctrl_avail(rs))
		return;
	if (rs->rbuf_bytes_avail >= (int)(rs->rbuf_size >> 1) ||
	    (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)
		send_credits(rs);
}

/* ---- completions ---- */

static void
set_error(struct droce_rs *rs, int err)
{
	if (rs->state == DROCE_RS_CONNECTED) {
		rs->state = DROCE_RS_ERROR;
		rs->err = err;
		rs->rd_open = rs->wr_open = false;
	}
}

static void
set_disconnected(struct droce_rs *rs)
{
	if (rs->state == DROCE_RS_CONNECTED) {
		rs->state = DROCE_RS_DISCONNECTED;
		rs->rd_open = rs->wr_open = false;
	}
}

/* One received message; false: stop polling (the peer disconnected). */
static bool
recv_msg(struct droce_rs *rs, uint32_t msg)
{
	switch (DROCE_RS_MSG_OP(msg)) {
	case DROCE_RS_OP_SGL:
		rs->sseq_comp = (uint16_t)DROCE_RS_MSG_ARG(msg);
		return true;
	case DROCE_RS_OP_IOMAP_SGL:
		return true; /* the entry is in target_iomap already */
	case DROCE_RS_OP_CTRL:
		if (DROCE_RS_MSG_ARG(msg) == DROCE_RS_CTRL_DISCONNECT) {
			set_disconnected(rs);
			return false;
		}
		if (DROCE_RS_MSG_ARG(msg) == DROCE_RS_CTRL_SHUTDOWN) {
			if (rs->wr_open) {
				rs->rd_open = false;
			} else {
				set_disconnected(rs);
				return false;
			}
		}
		return true;
	case DROCE_RS_OP_DATA:
		rs->rmsg[rs->rmsg_tail].op = DROCE_RS_MSG_OP(msg);
		rs->rmsg[rs->rmsg_tail].data = DROCE_RS_MSG_ARG(msg);
		if (++rs->rmsg_tail == rs->rq_size + 1)
			rs->rmsg_tail = 0;
		return true;
	default:
		return true; /* reserved ops: ignored, as rdma-core's (which queues them) */
	}
}

static void
send_done(struct droce_rs *rs, uint32_t msg, enum ibv_wc_status status)
{
	switch (DROCE_RS_MSG_OP(msg)) {
	case DROCE_RS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case DROCE_RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (DROCE_RS_MSG_ARG(msg) == DROCE_RS_CTRL_DISCONNECT)
			set_disconnected(rs);
		break;
	case DROCE_RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += (int)sizeof(struct droce_rs_iomap);
		break;
	default: /* DATA, WRITE */
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += (int)DROCE_RS_MSG_ARG(msg);
		break;
	}
	if (status != IBV_WC_SUCCESS)
		set_error(rs, EIO);
}

void
droce_rs_progress(struct droce_rs *rs)
{
	struct ibv_wc wc[16];
	unsigned int rcnt = 0;
	bool go = true;
	int n;

	if (rs->cq == NULL)
		return;
	update_credits(rs);
	while (go && (n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & DROCE_RS_WRID_RECV) {
				if (wc[i].status != IBV_WC_SUCCESS)
					continue;
				rcnt++;
				if (!(wc[i].wc_flags & IBV_WC_WITH_IMM))
					continue; /* a SEND: not in the protocol (iWARP only) */
				if (!recv_msg(rs, be32toh(wc[i].imm_data)))
					go = false; /* the rest of this batch is handled below */
			} else {
				send_done(rs, (uint32_t)wc[i].wr_id, wc[i].status);
			}
		}
	}
	if (rs->state == DROCE_RS_CONNECTED)
		while (rcnt--)
			if (post_recv(rs) != 0) {
				set_error(rs, errno);
				break;
			}
	update_credits(rs);
}

void
droce_rs_arm(struct droce_rs *rs)
{
	if (rs->cq && !rs->cq_armed && ibv_req_notify_cq(rs->cq, 0) == 0)
		rs->cq_armed = true;
}

void
droce_rs_take_cq_event(struct droce_rs *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (rs->cq == NULL)
		return;
	while (ibv_get_cq_event(rs->cqch, &cq, &ctx) == 0) {
		rs->cq_armed = false;
		if (++rs->unacked >= 64u) {
			ibv_ack_cq_events(rs->cq, rs->unacked);
			rs->unacked = 0;
		}
	}
}

bool
droce_rs_have_rdata(const struct droce_rs *rs)
{
	return rs->rmsg_head != rs->rmsg_tail;
}

bool
droce_rs_can_send(const struct droce_rs *rs)
{
	return rs->state == DROCE_RS_CONNECTED && rs->sqe_avail > 0 &&
	       rs->sbuf_bytes_avail >= (int)DROCE_RS_SNDLOWAT && rs->sseq_no != rs->sseq_comp &&
	       rs->target_sgl[rs->target_sge].length != 0;
}

bool
droce_rs_all_sends_done(const struct droce_rs *rs)
{
	return ((int)rs->ctrl_max_seqno - (int)rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size ||
	       rs->state != DROCE_RS_CONNECTED;
}

static bool
conn_have_rdata(const struct droce_rs *rs)
{
	return droce_rs_have_rdata(rs) || !rs->rd_open || rs->state != DROCE_RS_CONNECTED;
}

static bool
conn_can_send(const struct droce_rs *rs)
{
	return droce_rs_can_send(rs) || !rs->wr_open || rs->state != DROCE_RS_CONNECTED;
}

static bool
not_opening(const struct droce_rs *rs)
{
	return !droce_rs_opening(rs->state);
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int
droce_rs_wait(struct droce_rs *rs, bool nonblock, bool (*test)(const struct droce_rs *rs),
	      int timeout_ms)
{
	uint64_t start = now_us();

	for (;;) {
		struct pollfd p[2];
		int n = 0;

		droce_rs_cm_progress(rs);
		droce_rs_progress(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return droce_rs_errno(EWOULDBLOCK);
		if (timeout_ms >= 0 && now_us() - start >= (uint64_t)timeout_ms * 1000u)
			return droce_rs_errno(ETIMEDOUT);
		if (now_us() - start < SPIN_US)
			continue;
		if (rs->cq && !rs->cq_armed) {
			droce_rs_arm(rs);
			continue; /* look once more: a completion may have come before the arm */
		}
		if (rs->cq) {
			p[n].fd = rs->cqch->fd;
			p[n++].events = POLLIN;
		}
		p[n].fd = rs->cmch->fd;
		p[n++].events = POLLIN;
		pthread_mutex_unlock(&rs->lock);
		droce_engines_blocking();
		if (poll(p, (nfds_t)n, WAIT_SLICE_MS) < 0 && errno != EINTR) {
			pthread_mutex_lock(&rs->lock);
			return -1;
		}
		pthread_mutex_lock(&rs->lock);
		if (rs->cq && (p[0].revents & POLLIN))
			droce_rs_take_cq_event(rs);
	}
}

/* ---- connect-time checks every transfer makes ---- */

static bool
nonblocking(const struct droce_rs *rs, int flags)
{
	return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* A socket still connecting: on (or EAGAIN).  Lock held.  0: go on. */
static int
finish_connect(struct droce_rs *rs, int flags)
{
	if (!droce_rs_opening(rs->state))
		return 0;
	if (droce_rs_wait(rs, nonblocking(rs, flags), not_opening, -1) != 0)
		return -1;
	return 0;
}

/* ---- receiving ---- */

static size_t
copy_out(struct droce_rs *rs, uint8_t *buf, size_t len, bool peek)
{
	int head = rs->rmsg_head, off = rs->rbuf_offset;
	size_t left = len;

	while (left && head != rs->rmsg_tail) {
		uint32_t avail = rs->rmsg[head].data;
		uint32_t take = left < avail ? (uint32_t)left : avail;
		uint32_t end = rs->rbuf_size - (uint32_t)off;
		uint32_t first = take < end ? take : end;

		memcpy(buf, &rs->rbuf[off], first);
		if (take > first)
			memcpy(buf + first, rs->rbuf, take - first);
		off = (int)((off + take) % rs->rbuf_size);
		buf += take;
		left -= take;
		if (!peek) {
			rs->rbuf_bytes_avail += (int)take;
			if (take == avail) {
				rs->rseq_no++;
				if (++head == rs->rq_size + 1)
					head = 0;
			} else {
				rs->rmsg[head].data -= take;
			}
		} else if (take == avail) {
			if (++head == rs->rq_size + 1)
				head = 0;
		}
	}
	if (!peek) {
		rs->rmsg_head = head;
		rs->rbuf_offset = off;
	}
	return len - left;
}

static ssize_t
recv_locked(struct droce_rs *rs, struct iovec *iov, int iovcnt, int flags)
{
	size_t total = 0, done = 0;
	int iv = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (finish_connect(rs, flags) != 0)
		return errno == EINPROGRESS ? droce_rs_errno(EAGAIN) : -1;
	if (rs->state == DROCE_RS_INIT || rs->state == DROCE_RS_BOUND ||
	    rs->state == DROCE_RS_LISTENING)
		return droce_rs_errno(ENOTCONN);
	if (rs->state == DROCE_RS_CONNECT_ERROR)
		return droce_rs_errno(rs->err ? rs->err : ENOTCONN);
	if (total == 0)
		return 0;
	do {
		if (!droce_rs_have_rdata(rs)) {
			if (droce_rs_wait(rs, nonblocking(rs, flags), conn_have_rdata, -1) != 0) {
				if (done)
					break;
				return -1; /* EWOULDBLOCK */
			}
			if (!droce_rs_have_rdata(rs)) {
				if (rs->state == DROCE_RS_ERROR && done == 0)
					return droce_rs_errno(ECONNRESET);
				break; /* EOF */
			}
		}
		if (flags & MSG_PEEK) {
			/* peek fills the first vector only */
			return (ssize_t)copy_out(rs, iov[0].iov_base, iov[0].iov_len, true);
		}
		while (iv < iovcnt && droce_rs_have_rdata(rs)) {
			size_t n = copy_out(rs, iov[iv].iov_base, iov[iv].iov_len, false);

			iov[iv].iov_base = (uint8_t *)iov[iv].iov_base + n;
			iov[iv].iov_len -= n;
			done += n;
			if (iov[iv].iov_len == 0)
				iv++;
		}
		droce_rs_progress(rs); /* credits for what was read */
	} while (done < total && (flags & MSG_WAITALL) && rs->rd_open &&
		 rs->state == DROCE_RS_CONNECTED);
	return (ssize_t)done;
}

static ssize_t
rs_recvv(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct droce_rs *rs = droce_rs_lookup(fd);
	struct iovec local[16], *v = local;
	ssize_t rc;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (iovcnt < 0 || iovcnt > MAX_IOV)
		return droce_rs_errno(EINVAL);
	if (iovcnt > 16 && (v = calloc((size_t)iovcnt, sizeof(*v))) == NULL)
		return droce_rs_errno(ENOMEM);
	memcpy(v, iov, sizeof(*v) * (size_t)iovcnt);
	pthread_mutex_lock(&rs->lock);
	errno = 0;
	rc = recv_locked(rs, v, iovcnt, flags);
	pthread_mutex_unlock(&rs->lock);
	if (v != local)
		free(v);
	return rc;
}

ssize_t
rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return rs_recvv(socket, &v, 1, flags);
}

ssize_t
rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
	  socklen_t *addrlen)
{
	ssize_t rc = rrecv(socket, buf, len, flags);

	if (rc > 0 && src_addr && addrlen)
		rgetpeername(socket, src_addr, addrlen);
	return rc;
}

ssize_t
rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (msg == NULL)
		return droce_rs_errno(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return droce_rs_errno(ENOTSUP);
	msg->msg_flags = 0;
	return rs_recvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t
rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

ssize_t
rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_recvv(socket, iov, iovcnt, 0);
}

/* ---- sending ---- */

/* Gathers @len bytes of the vectors at (*iv, *off) into @dst. */
static void
gather(uint8_t *dst, const struct iovec *iov, int *iv, size_t *off, size_t len)
{
	while (len) {
		size_t n = iov[*iv].iov_len - *off;

		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)iov[*iv].iov_base + *off, n);
		dst += n;
		len -= n;
		*off += n;
		if (*off == iov[*iv].iov_len) {
			(*iv)++;
			*off = 0;
		}
	}
}

static uint32_t
sbuf_left(const struct droce_rs *rs)
{
	return (uint32_t)((uintptr_t)&rs->sbuf[rs->sbuf_size] - rs->ssgl[0].addr);
}

/* Copies @len bytes into the send ring at its cursor: 1 or 2 SGEs in ssgl. */
static int
stage(struct droce_rs *rs, const struct iovec *iov, int *iv, size_t *off, uint32_t len)
{
	uint32_t left = sbuf_left(rs);

	if (len <= left) {
		gather((uint8_t *)(uintptr_t)rs->ssgl[0].addr, iov, iv, off, len);
		rs->ssgl[0].length = len;
		return 1;
	}
	rs->ssgl[0].length = left;
	gather((uint8_t *)(uintptr_t)rs->ssgl[0].addr, iov, iv, off, left);
	rs->ssgl[1].length = len - left;
	gather(rs->sbuf, iov, iv, off, len - left);
	return 2;
}

/* Moves the ring's cursor past what stage() used. */
static void
advance(struct droce_rs *rs, int nsge)
{
	if (nsge == 2)
		rs->ssgl[0].addr = (uintptr_t)rs->sbuf + rs->ssgl[1].length;
	else if (rs->ssgl[0].length < sbuf_left(rs))
		rs->ssgl[0].addr += rs->ssgl[0].length;
	else
		rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
}

/* Waits until a chunk can go.  0, or -1 with errno (ECONNRESET if the write
 * side is shut). */
static int
wait_send(struct droce_rs *rs, int flags)
{
	if (!droce_rs_can_send(rs)) {
		if (droce_rs_wait(rs, nonblocking(rs, flags), conn_can_send, -1) != 0)
			return -1;
		if (!rs->wr_open || rs->state != DROCE_RS_CONNECTED)
			return droce_rs_errno(rs->state == DROCE_RS_CONNECTED ? EPIPE : ECONNRESET);
	}
	return 0;
}

static int send_iomaps(struct droce_rs *rs, int flags);

static int
send_check(struct droce_rs *rs, int flags)
{
	if (finish_connect(rs, flags) != 0)
		return errno == EINPROGRESS ? droce_rs_errno(EAGAIN) : -1;
	switch (rs->state) {
	case DROCE_RS_CONNECTED:
		return rs->wr_open ? 0 : droce_rs_errno(EPIPE);
	case DROCE_RS_DISCONNECTED:
	case DROCE_RS_ERROR:
		return droce_rs_errno(ECONNRESET);
	case DROCE_RS_CONNECT_ERROR:
		return droce_rs_errno(rs->err ? rs->err : ENOTCONN);
	default:
		return droce_rs_errno(ENOTCONN);
	}
}

static ssize_t
send_locked(struct droce_rs *rs, const struct iovec *iov, int iovcnt, int flags)
{
	uint32_t olen = DROCE_RS_OLAP_START;
	size_t len = 0, left, off = 0;
	int iv = 0, rc = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (send_check(rs, flags) != 0)
		return -1;
	if (rs->iomap_pending && send_iomaps(rs, flags) != 0)
		return -1;
	for (left = len; left; ) {
		uint32_t xfer;
		uint64_t addr;
		uint32_t rkey;
		volatile struct droce_rs_sge *t;
		int nsge;

		if ((rc = wait_send(rs, flags)) != 0)
			break;
		if (olen < left) {
			xfer = olen;
			if (olen < DROCE_RS_MAX_TRANSFER)
				olen <<= 1;
		} else {
			xfer = (uint32_t)left;
		}
		t = &rs->target_sgl[rs->target_sge];
		if (xfer > (uint32_t)rs->sbuf_bytes_avail)
			xfer = (uint32_t)rs->sbuf_bytes_avail;
		if (xfer > t->length)
			xfer = t->length;

		nsge = stage(rs, iov, &iv, &off, xfer);
		/* take the target space before posting: the peer may rewrite the entry */
		rs->sseq_no++;
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= (int)xfer;
		addr = t->addr;
		rkey = t->key;
		t->addr += xfer;
		t->length -= xfer;
		if (t->length == 0 && ++rs->target_sge == DROCE_RS_SGL_SIZE)
			rs->target_sge = 0;
		rc = post_write(rs, rs->ssgl, nsge, droce_rs_msg(DROCE_RS_OP_DATA, xfer), true,
				xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0, addr, rkey);
		advance(rs, nsge);
		if (rc != 0) {
			set_error(rs, errno);
			break;
		}
		left -= xfer;
	}
	if (rc != 0 && left == len)
		return -1;
	return (ssize_t)(len - left);
}

static ssize_t
rs_sendv(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct droce_rs *rs = droce_rs_lookup(fd);
	ssize_t rc;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (iovcnt < 0 || iovcnt > MAX_IOV)
		return droce_rs_errno(EINVAL);
	pthread_mutex_lock(&rs->lock);
	rc = send_locked(rs, iov, iovcnt, flags);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

ssize_t
rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = (void *)(uintptr_t)buf, .iov_len = len };

	return rs_sendv(socket, &v, 1, flags);
}

ssize_t
rsendto(int socket, const void *buf, size_t len, int flags, const struct sockaddr *dest_addr,
	socklen_t addrlen)
{
	/* a connected stream: the address is ignored, as Linux's TCP does (rdma-core
	 * answers EISCONN, which stops sockperf, whose TCP client names its peer) */
	(void)dest_addr;
	(void)addrlen;
	return rsend(socket, buf, len, flags);
}

ssize_t
rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (msg == NULL)
		return droce_rs_errno(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return droce_rs_errno(ENOTSUP);
	return rs_sendv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t
rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

ssize_t
rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_sendv(socket, iov, iovcnt, 0);
}

/* ---- riomap / riounmap / riowrite ---- */

/* Writes every queued iomap entry into the peer's target iomap. */
static int
send_iomaps(struct droce_rs *rs, int flags)
{
	for (struct droce_rs_iomap_mr *m = rs->iomaps; m; m = m->next) {
		struct droce_rs_iomap e;
		struct iovec v = { .iov_base = &e, .iov_len = sizeof(e) };
		int iv = 0, nsge, rc;
		size_t off = 0;

		if (!m->queued)
			continue;
		if (wait_send(rs, flags) != 0)
			return -1;
		e.offset = rs->swap ? __builtin_bswap64(m->offset) : m->offset;
		e.sge = sge_for_peer(rs, (uintptr_t)m->mr->addr, m->mr->rkey, (uint32_t)m->mr->length);
		nsge = stage(rs, &v, &iv, &off, sizeof(e));
		rs->sseq_no++;
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= (int)sizeof(e);
		rc = post_write(rs, rs->ssgl, nsge, droce_rs_msg(DROCE_RS_OP_IOMAP_SGL, (uint32_t)m->index),
				true, 0, rs->remote_iomap.addr + (uint64_t)m->index * sizeof(e),
				rs->remote_iomap.key);
		advance(rs, nsge);
		m->queued = false;
		if (rc != 0)
			return -1;
	}
	rs->iomap_pending = false;
	return 0;
}

off_t
riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	struct droce_rs_iomap_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE;

	(void)flags;
	if (rs == NULL)
		return droce_rs_errno(EBADF);
	if (prot & ~(PROT_WRITE | PROT_NONE))
		return droce_rs_errno(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->id == NULL || rs->id->pd == NULL || rs->state != DROCE_RS_CONNECTED) {
		pthread_mutex_unlock(&rs->lock);
		return droce_rs_errno(EINVAL);
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		pthread_mutex_unlock(&rs->lock);
		return droce_rs_errno(ENOMEM);
	}
	m->index = -1;
	if (prot & PROT_WRITE) {
		if (rs->remote_slots == NULL && rs->remote_iomap.length)
			rs->remote_slots = calloc(rs->remote_iomap.length, 1);
		for (uint32_t i = 0; rs->remote_slots && i < rs->remote_iomap.length; i++)
			if (!rs->remote_slots[i]) {
				m->index = (int)i;
				break;
			}
		if (m->index < 0) {
			free(m);
			pthread_mutex_unlock(&rs->lock);
			return droce_rs_errno(ENOMEM);
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m->mr = ibv_reg_mr(rs->id->pd, buf, len, access);
	if (m->mr == NULL) {
		free(m);
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	if (m->index >= 0) {
		rs->remote_slots[m->index] = 1;
		m->queued = true;
		rs->iomap_pending = true;
	}
	m->next = rs->iomaps;
	rs->iomaps = m;
	pthread_mutex_unlock(&rs->lock);
	return offset;
}

int
riounmap(int socket, void *buf, size_t len)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	struct droce_rs_iomap_mr **pp;

	if (rs == NULL)
		return droce_rs_errno(EBADF);
	pthread_mutex_lock(&rs->lock);
	for (pp = &rs->iomaps; *pp; pp = &(*pp)->next) {
		struct droce_rs_iomap_mr *m = *pp;

		if (m->mr->addr != buf || m->mr->length != len)
			continue;
		*pp = m->next;
		if (m->index >= 0 && rs->remote_slots)
			rs->remote_slots[m->index] = 0;
		ibv_dereg_mr(m->mr);
		free(m);
		pthread_mutex_unlock(&rs->lock);
		return 0;
	}
	pthread_mutex_unlock(&rs->lock);
	return droce_rs_errno(EINVAL);
}

/* The peer's iomap entry holding @offset: copied out (the peer may rewrite it). */
static bool
find_iomap(const struct droce_rs *rs, uint64_t offset, struct droce_rs_iomap *out)
{
	for (unsigned int i = 0; i < rs->target_iomap_size; i++) {
		struct droce_rs_iomap e;

		e.offset = rs->target_iomap[i].offset;
		e.sge.addr = rs->target_iomap[i].sge.addr;
		e.sge.key = rs->target_iomap[i].sge.key;
		e.sge.length = rs->target_iomap[i].sge.length;
		if (e.sge.length && offset >= e.offset && offset < e.offset + e.sge.length) {
			*out = e;
			return true;
		}
	}
	return false;
}

size_t
riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct droce_rs *rs = droce_rs_lookup(socket);
	struct iovec v = { .iov_base = (void *)(uintptr_t)buf, .iov_len = count };
	uint32_t olen = DROCE_RS_OLAP_START;
	struct droce_rs_iomap iom;
	bool have = false;
	size_t left = count, off = 0;
	int iv = 0, rc = 0;

	if (rs == NULL)
		return (size_t)droce_rs_errno(EBADF);
	pthread_mutex_lock(&rs->lock);
	if (send_check(rs, flags) != 0 || (rs->iomap_pending && send_iomaps(rs, flags) != 0)) {
		pthread_mutex_unlock(&rs->lock);
		return (size_t)-1;
	}
	for (; left; ) {
		uint64_t at = (uint64_t)offset + (count - left);
		uint32_t xfer;
		int nsge;

		if (!have || at >= iom.offset + iom.sge.length) {
			have = find_iomap(rs, at, &iom);
			if (!have) {
				if (left == count)
					rc = droce_rs_errno(EINVAL); /* nothing mapped there */
				break;
			}
		}
		if ((rc = wait_send(rs, flags)) != 0)
			break;
		if (olen < left) {
			xfer = olen;
			if (olen < DROCE_RS_MAX_TRANSFER)
				olen <<= 1;
		} else {
			xfer = (uint32_t)left;
		}
		if (xfer > (uint32_t)rs->sbuf_bytes_avail)
			xfer = (uint32_t)rs->sbuf_bytes_avail;
		if (xfer > iom.offset + iom.sge.length - at)
			xfer = (uint32_t)(iom.offset + iom.sge.length - at);
		nsge = stage(rs, &v, &iv, &off, xfer);
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= (int)xfer;
		rc = post_write(rs, rs->ssgl, nsge, droce_rs_msg(DROCE_RS_OP_WRITE, xfer), false,
				xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0,
				iom.sge.addr + (at - iom.offset), iom.sge.key);
		advance(rs, nsge);
		if (rc != 0) {
			set_error(rs, errno);
			break;
		}
		left -= xfer;
	}
	pthread_mutex_unlock(&rs->lock);
	if (rc != 0 && left == count)
		return (size_t)-1;
	return count - left;
}
