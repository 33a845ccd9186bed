/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_post_send / ibv_post_recv: validation as ibv_post_send(3) and
 * ibv_post_recv(3) describe it, each WR encoded straight into its queue slot,
 * one post lock and one doorbell per list.  Processing stops at the first WR
 * that fails; the ones before it are posted, *bad_wr points to it and the
 * errno is returned.  lkeys and SGE bounds are the engine's to check when it
 * executes the WR (IBV_WC_LOC_PROT_ERR), as on hardware.
 *
 * The fast path: no locks, no allocation, no logging.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_branch_prediction.h>

#include "internal.h"

#define SAME(d, i) static_assert((int)(d) == (int)(i), #d " == " #i)
SAME(DROCE_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
SAME(DROCE_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
SAME(DROCE_WR_SEND, IBV_WR_SEND);
SAME(DROCE_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
SAME(DROCE_WR_RDMA_READ, IBV_WR_RDMA_READ);
SAME(DROCE_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
SAME(DROCE_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
SAME(DROCE_WR_LOCAL_INV, IBV_WR_LOCAL_INV);
SAME(DROCE_WR_BIND_MW, IBV_WR_BIND_MW);
SAME(DROCE_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);
SAME(DROCE_WR_TSO, IBV_WR_TSO);
SAME(DROCE_WR_DRIVER1, IBV_WR_DRIVER1);
#undef SAME
static_assert(sizeof(struct droce_sge) == sizeof(struct ibv_sge), "sge layout");
static_assert(offsetof(struct droce_sge, addr) == offsetof(struct ibv_sge, addr), "sge layout");
static_assert(offsetof(struct droce_sge, length) == offsetof(struct ibv_sge, length), "sge layout");
static_assert(offsetof(struct droce_sge, lkey) == offsetof(struct ibv_sge, lkey), "sge layout");

#define SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/*
 * A WR's data into its WQE: the gather list, or with IBV_SEND_INLINE the
 * bytes it names (copied now: the caller may reuse its buffers as soon as
 * the post returns).  Sets num_sge and *total; EINVAL for inline data over
 * max_inline_data or a message over DROCE_DP_MAX_MSG.  num_sge was checked.
 * The SGEs are copied as they are summed: on EINVAL the slot is not
 * published, so what was written does not matter.
 */
static inline int
wqe_data(const struct droce_vqp *q, const struct ibv_send_wr *wr, struct droce_wqe *wqe,
	 uint64_t *total)
{
	uint64_t sum = 0;

	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = wqe->inline_data;

		for (int i = 0; i < wr->num_sge; i++)
			sum += wr->sg_list[i].length;
		if (sum > q->cap.max_inline_data)
			return EINVAL;
		for (int i = 0; i < wr->num_sge; i++) {
			uint32_t len = wr->sg_list[i].length;

			if (len)
				memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr, len);
			dst += len;
		}
		wqe->num_sge = 0;
	} else {
		for (int i = 0; i < wr->num_sge; i++) {
			wqe->sge[i].addr = wr->sg_list[i].addr;
			wqe->sge[i].length = wr->sg_list[i].length;
			wqe->sge[i].lkey = wr->sg_list[i].lkey;
			sum += wr->sg_list[i].length;
		}
		if (sum > DROCE_DP_MAX_MSG)
			return EINVAL;
		wqe->num_sge = (uint16_t)wr->num_sge;
	}
	*total = sum;
	return 0;
}

int
droce_verbs_wqe_data(const struct droce_vqp *q, const struct ibv_send_wr *wr,
		     struct droce_wqe *wqe, uint64_t *total)
{
	return wqe_data(q, wr, wqe, total);
}

/* What an opcode's WR carries, besides the common fields */
enum { K_SEND = 1, K_RDMA, K_ATOMIC, K_LOCAL };

static const uint8_t op_kind[32] = {
	[IBV_WR_SEND] = K_SEND,
	[IBV_WR_SEND_WITH_IMM] = K_SEND,
	[IBV_WR_SEND_WITH_INV] = K_SEND,
	[IBV_WR_LOCAL_INV] = K_LOCAL, /* memory windows: mw.c */
	[IBV_WR_BIND_MW] = K_LOCAL,
	[IBV_WR_RDMA_WRITE] = K_RDMA,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = K_RDMA,
	[IBV_WR_RDMA_READ] = K_RDMA,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = K_ATOMIC,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = K_ATOMIC,
	/* TSO (0): RAW_PACKET QPs only (raw.c), not UD on droce */
};

/* A WR's send_flags (those ibv_post_send takes) as a WQE's flags, but for
 * sq_sig_all: one load, not a test and a branch per flag.  INLINE is there
 * for the WRs that carry data (the others refuse it first). */
#define WQE_FLAGS(f)                                                                    \
	(uint8_t)(((f) & IBV_SEND_SIGNALED ? DROCE_WQE_SIGNALED : 0) |                  \
		  ((f) & IBV_SEND_FENCE ? DROCE_WQE_FENCE : 0) |                        \
		  ((f) & IBV_SEND_SOLICITED ? DROCE_WQE_SOLICITED : 0) |                \
		  ((f) & IBV_SEND_INLINE ? DROCE_WQE_INLINE : 0))
static_assert(SEND_FLAGS == 15, "wqe_flags is indexed by the four send flags");
static const uint8_t wqe_flags[16] = {
	WQE_FLAGS(0), WQE_FLAGS(1), WQE_FLAGS(2), WQE_FLAGS(3), WQE_FLAGS(4), WQE_FLAGS(5),
	WQE_FLAGS(6), WQE_FLAGS(7), WQE_FLAGS(8), WQE_FLAGS(9), WQE_FLAGS(10), WQE_FLAGS(11),
	WQE_FLAGS(12), WQE_FLAGS(13), WQE_FLAGS(14), WQE_FLAGS(15),
};
#undef WQE_FLAGS

/*
 * Validates one send WR against @q and encodes it into @wqe, a send-queue
 * slot (every field the engine reads is written; inline data copied).  0 or
 * EINVAL.  Inlined into droce_verbs_post_send's loop.
 */
static inline int
encode_send(const struct droce_vqp *q, const struct ibv_send_wr *wr, struct droce_wqe *wqe)
{
	unsigned int op = (unsigned int)wr->opcode;
	unsigned int sf = wr->send_flags;
	uint64_t total = 0;
	uint8_t flags;
	unsigned int kind;

	if (unlikely(q->type == DROCE_QPT_RAW_PACKET))
		return droce_verbs_encode_raw(q, wr, wqe);
	/* wr_ops_ok: the ops the QP type may post (droce_verbs_wr_init) */
	if (unlikely(op >= 32 || !(q->wr_ops_ok & (1u << op))))
		return EINVAL;
	kind = op_kind[op];
	if (unlikely(kind == 0))
		return EINVAL;
	wqe->ah = NULL;
	wqe->remote_qpn = 0;
	wqe->remote_qkey = 0;
	if (q->type == DROCE_QPT_UD) {
		struct droce_vah *ah = (struct droce_vah *)wr->wr.ud.ah;

		/* the AH must address from the QP's own port */
		if (ah == NULL || ah->dah.port != droce_vctx_of(q->qp.context)->port)
			return EINVAL;
		wqe->ah = &ah->dah;
		wqe->remote_qpn = wr->wr.ud.remote_qpn & 0xffffff;
		/* the high bit: the engine uses the QP's own qkey (ibv_post_send(3)) */
		wqe->remote_qkey = wr->wr.ud.remote_qkey;
	} else if (q->type == DROCE_QPT_XRC_SEND) {
		/* the remote XRC SRQ (XRCETH); other types ignore the field */
		wqe->remote_qpn = wr->qp_type.xrc.remote_srqn & 0xffffff;
	}
	if (unlikely(sf & ~(unsigned int)SEND_FLAGS))
		return EINVAL;
	if (unlikely(wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge))
		return EINVAL;

	flags = wqe_flags[sf & SEND_FLAGS] | (q->sq_sig_all ? DROCE_WQE_SIGNALED : 0);

	wqe->wr_id = wr->wr_id;
	wqe->opcode = (uint8_t)op;
	wqe->imm = (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM) ? wr->imm_data : 0;
	wqe->invalidate_rkey = op == IBV_WR_SEND_WITH_INV ? wr->invalidate_rkey : 0;
	wqe->compare_add = 0;
	wqe->swap = 0;

	if (unlikely(kind == K_LOCAL)) {
		/* no data: the SGEs are not looked at */
		if (sf & IBV_SEND_INLINE)
			return EINVAL;
		wqe->remote_addr = 0;
		wqe->rkey = 0;
		wqe->num_sge = 0;
		wqe->length = 0;
		wqe->flags = flags; /* no INLINE: refused above */
		return droce_verbs_encode_mw(q, wr, wqe);
	}
	if ((sf & IBV_SEND_INLINE) && (op == IBV_WR_RDMA_READ || kind == K_ATOMIC))
		return EINVAL; /* data comes back: nothing to inline */
	if (wqe_data(q, wr, wqe, &total) != 0)
		return EINVAL;
	wqe->length = (uint32_t)total;
	wqe->flags = flags;

	if (kind == K_RDMA) {
		wqe->remote_addr = wr->wr.rdma.remote_addr;
		wqe->rkey = wr->wr.rdma.rkey;
	} else if (kind == K_ATOMIC) {
		/* one 8-byte local buffer receives the original value; the
		 * remote word must be naturally aligned */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
		    (wr->wr.atomic.remote_addr & 7) != 0)
			return EINVAL;
		wqe->remote_addr = wr->wr.atomic.remote_addr;
		wqe->rkey = wr->wr.atomic.rkey;
		wqe->compare_add = wr->wr.atomic.compare_add;
		wqe->swap = op == IBV_WR_ATOMIC_CMP_AND_SWP ? wr->wr.atomic.swap : 0;
	} else {
		wqe->remote_addr = 0;
		wqe->rkey = 0;
	}
	return 0;
}

/*
 * The whole list under one post lock and one doorbell: each WR is validated
 * and encoded straight into its send-queue slot (droce_qp_sq_begin,
 * droce_sq_batch_room and _at, droce_qp_sq_commit, as the ibv_wr_* builder does), no
 * intermediate droce_wqe.  At the first WR that fails, the ones before it are published and rung, the
 * failing one and the rest are not, and *bad_wr points at it
 * (ibv_post_send(3)).
 */
int
droce_verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct droce_vqp *q = (struct droce_vqp *)qp;
	struct ibv_send_wr *const list = wr;
	int state = droce_vqp_state(q);
	struct droce_sq_batch b;
	uint32_t n = 0, room;
	int rc = 0, bell;

	if (wr == NULL)
		return 0;
	/* RESET, INIT and RTR cannot send; SQD queues, SQE and ERR flush */
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR ||
	    q->xrc_role == DROCE_XRC_TGT) { /* an XRC_RECV QP has no send queue */
		*bad_wr = wr;
		return EINVAL;
	}
	droce_qp_sq_begin(q->dqp, &b); /* takes the post lock */
	room = droce_sq_batch_room(&b);
	for (; wr != NULL; wr = wr->next, n++) {
		if (unlikely(n >= room) && (room = droce_sq_batch_room(&b)) <= n) {
			rc = ENOMEM; /* send queue full */
			break;
		}
		rc = encode_send(q, wr, droce_sq_batch_at(&b, b.first + n));
		if (rc != 0)
			break; /* the slot is not published: its half-written bytes are dead */
	}
	bell = droce_qp_sq_commit(q->dqp, n); /* publishes n slots, unlocks, one doorbell */
	if (rc != 0) {
		*bad_wr = wr;
		return rc;
	}
	if (bell != 0) {
		*bad_wr = list; /* no doorbell: none of them is known to run */
		return bell;
	}
	return 0;
}

int
droce_verbs_encode_recv(const struct droce_vqp *q, const struct ibv_recv_wr *wr,
			struct droce_rqe *rqe)
{
	uint64_t total = 0;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_recv_sge)
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++) {
		rqe->sge[i].addr = wr->sg_list[i].addr;
		rqe->sge[i].length = wr->sg_list[i].length;
		rqe->sge[i].lkey = wr->sg_list[i].lkey;
		total += wr->sg_list[i].length;
	}
	if (total > DROCE_DP_MAX_MSG)
		return EINVAL;
	rqe->wr_id = wr->wr_id;
	rqe->num_sge = (uint16_t)wr->num_sge;
	rqe->length = (uint32_t)total;
	return 0;
}

/* As droce_verbs_post_send: one lock and one doorbell for the whole list. */
int
droce_verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct droce_vqp *q = (struct droce_vqp *)qp;
	struct ibv_recv_wr *const list = wr;
	uint32_t first, n = 0;
	int rc = 0, bell;

	if (wr == NULL)
		return 0;
	if (qp->srq != NULL || droce_vqp_state(q) == IBV_QPS_RESET || q->xrc_role != DROCE_XRC_NONE) {
		*bad_wr = wr; /* an SRQ QP's receive WQEs go to the SRQ (ibv_post_srq_recv) */
		return EINVAL;
	}
	first = droce_qp_rq_begin(q->dqp); /* takes the post lock */
	for (; wr != NULL; wr = wr->next, n++) {
		struct droce_rqe *slot = droce_qp_rq_slot(q->dqp, first + n);

		if (slot == NULL) {
			rc = ENOMEM; /* receive queue full */
			break;
		}
		rc = droce_verbs_encode_recv(q, wr, slot);
		if (rc != 0)
			break;
	}
	bell = droce_qp_rq_commit(q->dqp, n);
	if (rc != 0) {
		*bad_wr = wr;
		return rc;
	}
	if (bell != 0) {
		*bad_wr = list;
		return bell;
	}
	return 0;
}
