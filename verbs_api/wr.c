/* SPDX-License-Identifier: BSD-3-Clause
 * The work request builder of struct ibv_qp_ex (ibv_wr_post(3)):
 * ibv_wr_start opens a batch, each WR builder (ibv_wr_send, ibv_wr_rdma_write,
 * ...) starts a WQE and the setters (ibv_wr_set_sge, _inline_data, _ud_addr)
 * complete it, ibv_wr_complete posts the batch or nothing, ibv_wr_abort
 * drops it.
 *
 * WQEs are written straight into the QP's send queue slots (dp.h's
 * droce_qp_sq_begin, droce_sq_batch_slot, droce_qp_sq_commit): no struct ibv_send_wr, no intermediate
 * WQE, one doorbell per batch.  The send queue's post lock is held from
 * ibv_wr_start to ibv_wr_complete/abort: that is the man page's per-QP
 * critical section.
 *
 * Errors are those ibv_post_send(3) returns for the same WR (EINVAL for an
 * opcode the QP type cannot do, bad flags, too many SGEs, inline data longer
 * than max_inline_data or on READ / atomics, a misaligned atomic, a UD WR
 * without ibv_wr_set_ud_addr or with an AH of another port, the QP in
 * RESET, INIT or RTR; ENOMEM when the send queue is full).  The builders
 * return nothing, so the batch records its first error and ibv_wr_complete
 * returns it having posted nothing of the batch.  IBV_SEND_INLINE in
 * wr_flags is ignored (the inline setters decide), as on mlx5.
 *
 * The fast path: no locks beyond the post lock, no allocation, no logging.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>

#include "internal.h"

#define WR_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* q->wr_need: what the current WQE takes or still lacks */
enum {
	W_UD = 1 << 0,     /* UD QP: ibv_wr_set_ud_addr not called yet */
	W_DATA = 1 << 1,   /* takes the SGE setters */
	W_INLINE = 1 << 2, /* takes the inline setters */
	W_ATOMIC = 1 << 3, /* needs exactly one 8-byte SGE */
	W_XRC = 1 << 4,    /* XRC_SEND QP: ibv_wr_set_xrc_srqn not called yet */
	W_RAW = 1 << 5,    /* RAW_PACKET: lengths checked when complete */
};

static inline struct droce_vqp *
vqp(struct ibv_qp_ex *x)
{
	return (struct droce_vqp *)x;
}

static inline void
fail(struct droce_vqp *q, int err)
{
	if (q->wr_err == 0)
		q->wr_err = err;
	q->wr_cur = NULL;
}

/* Checks what only the whole WQE tells (after its setters). */
static inline int
finish(struct droce_vqp *q)
{
	const struct droce_wqe *w = q->wr_cur;

	q->wr_cur = NULL;
	if (unlikely(q->wr_need & (W_UD | W_XRC)))
		return EINVAL; /* a UD WR without its destination, XRC without its SRQ */
	if ((q->wr_need & W_ATOMIC) && unlikely(w->num_sge != 1 || w->sge[0].length != 8))
		return EINVAL; /* one 8-byte buffer receives the original value */
	if (q->wr_need & W_RAW)
		return droce_verbs_raw_check(q, w);
	return 0;
}

/* Starts a WQE for @op in the next free slot; NULL after an error. */
static inline struct droce_wqe *
wr_new(struct droce_vqp *q, unsigned int op, uint8_t need)
{
	unsigned int f = q->qpx.wr_flags;
	struct droce_wqe *w;
	uint8_t flags = 0;

	if (unlikely(q->wr_err != 0))
		return NULL;
	if (q->wr_cur != NULL) {
		int rc = finish(q);

		if (unlikely(rc != 0)) {
			fail(q, rc);
			return NULL;
		}
	}
	if (unlikely(!(q->wr_ops_ok & (1u << op)) ||
		     (f & ~(unsigned int)(q->type == DROCE_QPT_RAW_PACKET ? WR_FLAGS | IBV_SEND_IP_CSUM
									 : WR_FLAGS)))) {
		fail(q, EINVAL);
		return NULL;
	}
	w = droce_sq_batch_slot(&q->wr_sq, q->wr_sq.first + q->wr_n);
	if (unlikely(w == NULL)) {
		fail(q, ENOMEM); /* the send queue is full */
		return NULL;
	}
	q->wr_n++;
	if ((f & IBV_SEND_SIGNALED) || q->sq_sig_all)
		flags |= DROCE_WQE_SIGNALED;
	if (f & IBV_SEND_FENCE)
		flags |= DROCE_WQE_FENCE;
	if (f & IBV_SEND_SOLICITED)
		flags |= DROCE_WQE_SOLICITED;
	if (f & IBV_SEND_IP_CSUM)
		flags |= DROCE_WQE_IP_CSUM;
	droce_wqe_clear_head(w);
	w->wr_id = q->qpx.wr_id;
	w->opcode = (uint8_t)op;
	w->flags = flags;
	q->wr_need = need | (q->type == DROCE_QPT_UD ? W_UD : 0) |
		     (q->type == DROCE_QPT_XRC_SEND ? W_XRC : 0) |
		     (q->type == DROCE_QPT_RAW_PACKET ? W_RAW : 0);
	q->wr_cur = w;
	return w;
}

/* The WQE a setter completes; NULL (and EINVAL) when there is none. */
static inline struct droce_wqe *
cur(struct droce_vqp *q, uint8_t needs)
{
	if (unlikely(q->wr_cur == NULL || !(q->wr_need & needs))) {
		fail(q, EINVAL); /* keeps an earlier error */
		return NULL;
	}
	return q->wr_cur;
}

/* ---- the WR builders ---- */

static void
wr_send(struct ibv_qp_ex *x)
{
	wr_new(vqp(x), IBV_WR_SEND, W_DATA | W_INLINE);
}

static void
wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	struct droce_wqe *w = wr_new(vqp(x), IBV_WR_SEND_WITH_IMM, W_DATA | W_INLINE);

	if (w)
		w->imm = imm;
}

static void
wr_send_inv(struct ibv_qp_ex *x, uint32_t invalidate_rkey)
{
	struct droce_wqe *w = wr_new(vqp(x), IBV_WR_SEND_WITH_INV, W_DATA | W_INLINE);

	if (w)
		w->invalidate_rkey = invalidate_rkey;
}

static void
wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr)
{
	struct droce_wqe *w = wr_new(vqp(x), IBV_WR_RDMA_WRITE, W_DATA | W_INLINE);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
	}
}

static void
wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr, __be32 imm)
{
	struct droce_wqe *w = wr_new(vqp(x), IBV_WR_RDMA_WRITE_WITH_IMM, W_DATA | W_INLINE);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
		w->imm = imm;
	}
}

static void
wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr)
{
	struct droce_wqe *w = wr_new(vqp(x), IBV_WR_RDMA_READ, W_DATA);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
	}
}

static inline void
atomic(struct droce_vqp *q, unsigned int op, uint32_t rkey, uint64_t remote_addr,
       uint64_t compare_add, uint64_t swap)
{
	struct droce_wqe *w = wr_new(q, op, W_DATA | W_ATOMIC);

	if (w == NULL)
		return;
	if (unlikely(remote_addr & 7)) {
		fail(q, EINVAL); /* the remote word must be naturally aligned */
		return;
	}
	w->rkey = rkey;
	w->remote_addr = remote_addr;
	w->compare_add = compare_add;
	w->swap = swap;
}

static void
wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr, uint64_t compare,
		  uint64_t swap)
{
	atomic(vqp(x), IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void
wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr, uint64_t add)
{
	atomic(vqp(x), IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void
wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
	   const struct ibv_mw_bind_info *bind_info)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w = wr_new(q, IBV_WR_BIND_MW, 0);
	struct ibv_send_wr wr;
	int rc;

	if (w == NULL)
		return;
	if (bind_info == NULL) {
		fail(q, EINVAL);
		return;
	}
	/* the same encoding as ibv_post_send's IBV_WR_BIND_MW (mw.c) */
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = *bind_info;
	rc = droce_verbs_encode_mw(q, &wr, w);
	if (rc != 0)
		fail(q, rc);
}

static void
wr_local_inv(struct ibv_qp_ex *x, uint32_t invalidate_rkey)
{
	struct droce_wqe *w = wr_new(vqp(x), IBV_WR_LOCAL_INV, 0);

	if (w)
		w->invalidate_rkey = invalidate_rkey;
}

/* RAW_PACKET QPs only (UD TSO is not done on droce: EINVAL). */
static void
wr_send_tso(struct ibv_qp_ex *x, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w;
	int rc;

	if (q->type != DROCE_QPT_RAW_PACKET) {
		fail(q, EINVAL);
		return;
	}
	w = wr_new(q, IBV_WR_TSO, W_DATA | W_INLINE);
	if (w == NULL)
		return;
	rc = droce_verbs_raw_tso_hdr(q, w, hdr, hdr_sz, mss);
	if (rc != 0)
		fail(q, rc);
}

/* XRC_SEND QPs only (anything else fails the batch): the remote XRC SRQ. */
static void
wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t remote_srqn)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w = cur(q, W_XRC);

	if (w == NULL)
		return;
	w->remote_qpn = remote_srqn & 0xffffff;
	q->wr_need &= (uint8_t)~W_XRC;
}

static void
wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr, const void *atomic_wr)
{
	RTE_SET_USED(rkey);
	RTE_SET_USED(remote_addr);
	RTE_SET_USED(atomic_wr);
	fail(vqp(x), EINVAL);
}

/* ---- the setters ---- */

static void
wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w = cur(q, W_DATA);

	if (w == NULL)
		return;
	if (unlikely(q->cap.max_send_sge < 1)) {
		fail(q, EINVAL);
		return;
	}
	w->sge[0].addr = addr;
	w->sge[0].length = length;
	w->sge[0].lkey = lkey;
	w->num_sge = 1;
	w->length = length;
	w->flags &= (uint8_t)~DROCE_WQE_INLINE;
}

static void
wr_set_sge_list(struct ibv_qp_ex *x, size_t num_sge, const struct ibv_sge *sg)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w = cur(q, W_DATA);
	uint64_t total = 0;

	if (w == NULL)
		return;
	if (unlikely(num_sge > q->cap.max_send_sge || (num_sge && sg == NULL))) {
		fail(q, EINVAL);
		return;
	}
	for (size_t i = 0; i < num_sge; i++) {
		w->sge[i].addr = sg[i].addr;
		w->sge[i].length = sg[i].length;
		w->sge[i].lkey = sg[i].lkey;
		total += sg[i].length;
	}
	if (unlikely(total > DROCE_DP_MAX_MSG)) {
		fail(q, EINVAL);
		return;
	}
	w->num_sge = (uint16_t)num_sge;
	w->length = (uint32_t)total;
	w->flags &= (uint8_t)~DROCE_WQE_INLINE;
}

static void
wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w = cur(q, W_INLINE);

	if (w == NULL)
		return;
	if (unlikely(length > q->cap.max_inline_data || (length && addr == NULL))) {
		fail(q, EINVAL);
		return;
	}
	/* copied now: the caller may reuse its buffer on return (a TSO header
	 * has its own place, after the data room) */
	if (length)
		memcpy(w->inline_data, addr, length);
	w->num_sge = 0;
	w->length = (uint32_t)length;
	w->flags |= DROCE_WQE_INLINE;
}

static void
wr_set_inline_data_list(struct ibv_qp_ex *x, size_t num_buf, const struct ibv_data_buf *buf)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w = cur(q, W_INLINE);
	size_t total = 0;

	if (w == NULL)
		return;
	if (unlikely(num_buf && buf == NULL)) {
		fail(q, EINVAL);
		return;
	}
	for (size_t i = 0; i < num_buf; i++) {
		if (unlikely(buf[i].length > q->cap.max_inline_data - total ||
			     (buf[i].length && buf[i].addr == NULL))) {
			fail(q, EINVAL);
			return;
		}
		if (buf[i].length)
			memcpy(w->inline_data + total, buf[i].addr, buf[i].length);
		total += buf[i].length;
	}
	w->num_sge = 0;
	w->length = (uint32_t)total;
	w->flags |= DROCE_WQE_INLINE;
}

static void
wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ibah, uint32_t remote_qpn,
	       uint32_t remote_qkey)
{
	struct droce_vqp *q = vqp(x);
	struct droce_wqe *w = cur(q, W_UD);
	struct droce_vah *ah = (struct droce_vah *)ibah;

	if (w == NULL)
		return; /* not a UD QP, or no WR to address */
	/* the AH must address from the QP's own port */
	if (unlikely(ah == NULL || ah->dah.port != droce_vctx_of(q->qp.context)->port)) {
		fail(q, EINVAL);
		return;
	}
	w->ah = &ah->dah;
	w->remote_qpn = remote_qpn & 0xffffff;
	/* the high bit: the engine uses the QP's own qkey (ibv_post_send(3)) */
	w->remote_qkey = remote_qkey;
	q->wr_need &= (uint8_t)~W_UD;
}

/* ---- the critical section ---- */

static void
wr_start(struct ibv_qp_ex *x)
{
	struct droce_vqp *q = vqp(x);

	/* takes the post lock: another thread's ibv_wr_start (or ibv_post_send)
	 * on this QP waits until complete/abort (the man page's critical section;
	 * a second start in the same thread deadlocks, as on mlx5 and rxe) */
	droce_qp_sq_begin(q->dqp, &q->wr_sq);
	q->wr_n = 0;
	q->wr_cur = NULL;
	q->wr_err = 0;
	q->wr_open = true;
}

/* Closes the batch: builders and setters do nothing until the next start. */
static inline void
close_batch(struct droce_vqp *q)
{
	q->wr_cur = NULL;
	q->wr_err = EINVAL;
	q->wr_open = false;
}

static int
wr_complete(struct ibv_qp_ex *x)
{
	struct droce_vqp *q = vqp(x);
	int err = q->wr_err;
	uint32_t n;

	if (unlikely(!q->wr_open))
		return EINVAL; /* no ibv_wr_start */
	if (err == 0 && q->wr_cur != NULL)
		err = finish(q);
	if (err == 0 && q->wr_n != 0) {
		int state = droce_vqp_state(q);

		/* RESET, INIT and RTR cannot send; SQD queues, SQE and ERR flush */
		if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR)
			err = EINVAL;
	}
	n = q->wr_n;
	close_batch(q);
	if (unlikely(err != 0)) {
		droce_qp_sq_cancel(q->dqp); /* nothing of the batch is posted */
		return err;
	}
	return droce_qp_sq_commit(q->dqp, n);
}

static void
wr_abort(struct ibv_qp_ex *x)
{
	struct droce_vqp *q = vqp(x);

	if (!q->wr_open)
		return;
	close_batch(q);
	droce_qp_sq_cancel(q->dqp);
}

void
droce_verbs_wr_init(struct droce_vqp *q)
{
	struct ibv_qp_ex *x = &q->qpx;

	close_batch(q); /* no batch open: builders outside one do nothing */
	q->wr_ops_ok = 0;
	for (unsigned int op = 0; op < 32; op++)
		if (droce_wr_opcode_allowed(q->type, op) && q->xrc_role != DROCE_XRC_TGT)
			q->wr_ops_ok |= 1u << op;
	x->comp_mask = 0;
	x->wr_id = 0;
	x->wr_flags = 0;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
}
