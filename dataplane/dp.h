/* SPDX-License-Identifier: BSD-3-Clause
 * The contract between the application side (verbs_api/, on application
 * threads) and the engines (dataplane/, on their lcores or co-located).
 * Over 800 lines because it is that whole contract in one header, each
 * function with its return convention and threading rule beside it.
 *
 * Ownership, in one place:
 *  - struct droce_mr: written by the application before droce_mr_register()
 *    publishes it; engines only read it; droce_mr_unregister() returns once no
 *    engine can still see it (RCU quiescent state) and no frame in flight
 *    points into its memory (zc_refs), then the caller frees it.
 *  - struct droce_cq: one sub-ring per engine; the engine alone produces,
 *    any threads calling droce_cq_poll() consume (multi-consumer, lock-free).
 *    A completion that finds its sub-ring full waits in its QP, which goes to
 *    ERR (CQ overrun, qp.c): nothing completed is dropped.
 *  - struct droce_qp: the application side fills its WQE/RQE slots and sends
 *    slot numbers over its channel; the engine alone touches transport state
 *    (PSNs, timers, queues' consumer side) and publishes retired counts.
 *
 * Return convention, for every function here: one that returns int returns 0
 * or a positive errno value (never -1); one that counts (polls, counters)
 * returns the count; one that makes an object returns it, or NULL with errno
 * set.  Functions that also set errno say so.  One exception, a query:
 * droce_qp_async_state() returns a state or -1 for none.
 *
 * Numeric values of statuses, opcodes, flags and masks equal rdma-core's
 * (enum ibv_wc_status, ibv_wc_opcode, IBV_WC_*, IBV_ACCESS_*, IBV_QP_*,
 * ibv_qp_state); verbs_api asserts that at compile time, so nothing converts.
 */
#ifndef DROCE_DP_H
#define DROCE_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <droce/droce.h>

#include "wire.h"

#define DROCE_DP_MAX_SGE 16
#define DROCE_DP_MAX_INLINE DROCE_MAX_INLINE
#define DROCE_DP_MAX_QP_WR DROCE_MAX_QP_WR
#define DROCE_DP_MAX_CQE (1u << 20)
#define DROCE_DP_MAX_RD_ATOMIC DROCE_MAX_RD_ATOMIC
#define DROCE_DP_MAX_MSG (1u << 31) /* largest message, bytes */

/* ---- completions (same values as rdma-core) ---- */

enum droce_wc_status {
	DROCE_WC_SUCCESS = 0,
	DROCE_WC_LOC_LEN_ERR = 1,
	DROCE_WC_LOC_QP_OP_ERR = 2,
	DROCE_WC_LOC_PROT_ERR = 4,
	DROCE_WC_WR_FLUSH_ERR = 5,
	DROCE_WC_MW_BIND_ERR = 6,
	DROCE_WC_BAD_RESP_ERR = 7,
	DROCE_WC_LOC_ACCESS_ERR = 8,
	DROCE_WC_REM_INV_REQ_ERR = 9,
	DROCE_WC_REM_ACCESS_ERR = 10,
	DROCE_WC_REM_OP_ERR = 11,
	DROCE_WC_RETRY_EXC_ERR = 12,
	DROCE_WC_RNR_RETRY_EXC_ERR = 13,
	DROCE_WC_REM_INV_RD_REQ_ERR = 15,
	DROCE_WC_FATAL_ERR = 19,
	DROCE_WC_GENERAL_ERR = 21,
};

enum droce_wc_opcode {
	DROCE_WC_SEND = 0,
	DROCE_WC_RDMA_WRITE = 1,
	DROCE_WC_RDMA_READ = 2,
	DROCE_WC_COMP_SWAP = 3,
	DROCE_WC_FETCH_ADD = 4,
	DROCE_WC_BIND_MW = 5,
	DROCE_WC_LOCAL_INV = 6,
	DROCE_WC_RECV = 128,
	DROCE_WC_RECV_RDMA_WITH_IMM = 129,
};

enum droce_wc_flags {
	DROCE_WC_F_GRH = 1 << 0,
	DROCE_WC_F_WITH_IMM = 1 << 1,
	DROCE_WC_F_IP_CSUM_OK = 1 << 2, /* RAW_PACKET: IPv4 header and TCP/UDP checksums verified */
	DROCE_WC_F_WITH_INV = 1 << 3,
};

/* Laid out exactly as struct ibv_wc (asserted in verbs_api). */
struct droce_cqe {
	uint64_t wr_id;
	uint32_t status;   /* enum droce_wc_status */
	uint32_t opcode;   /* enum droce_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_or_inv; /* imm_data (network order) or invalidated_rkey */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* ---- memory regions ---- */

enum droce_access {
	DROCE_ACCESS_LOCAL_WRITE = 1 << 0,
	DROCE_ACCESS_REMOTE_WRITE = 1 << 1,
	DROCE_ACCESS_REMOTE_READ = 1 << 2,
	DROCE_ACCESS_REMOTE_ATOMIC = 1 << 3,
	DROCE_ACCESS_MW_BIND = 1 << 4,
};

struct droce_mr {
	uint8_t *addr;    /* host address of the byte at iova */
	uint64_t iova;    /* address SGEs and RETHs name */
	uint64_t length;
	uint32_t lkey, rkey;
	uint32_t access;  /* enum droce_access */
	uint32_t pd_id;
	uint32_t mw_binds; /* memory windows bound to it (atomic; engines change it) */
	uint32_t zc_refs;  /* frames whose payload points into it (atomic; zcopy.c) */
};

/* Publishes @mr and gives it its keys: 0, or ENOMEM when the key table is full. */
int droce_mr_register(struct droce_mr *mr);

/* Unpublishes @mr and waits until no engine can still be using it and no
 * frame still points into its memory (zero-copy transmit, zcopy.c): driving
 * co-located engines, droce_mr_drain_ms at most.  0, or EBUSY when frames
 * still hold it then (a stalled port): @mr stays unpublished, the caller
 * must not free it or its memory; calling again waits again. */
int droce_mr_unregister(struct droce_mr *mr);
/* Re-registration (ibv_rereg_mr): publishes @next, a fresh struct with the
 * new addr / iova / length / access / pd_id, under @mr's keys in one store,
 * waits until no engine can still see @mr, then until no frame points into
 * @mr's memory (droce_mr_drain).  0: the caller frees @mr.  EBUSY: @next is
 * in force but frames still hold @mr: the caller keeps @mr (and its memory)
 * and drains it again before freeing it.  EINVAL: @mr is not published. */
int droce_mr_replace(struct droce_mr *mr, struct droce_mr *next);
/* Waits for the frames pointing into @mr's memory (zero-copy transmit) to
 * be freed, driving co-located engines: 0, or EBUSY after droce_mr_drain_ms. */
int droce_mr_drain(struct droce_mr *mr);
/* That bound in ms: DROCE_MR_DRAIN_MS (more than the longest delay the
 * impaired link can hold a frame, 1 s); tests lower it. */
#define DROCE_MR_DRAIN_MS 2000
extern unsigned int droce_mr_drain_ms;

/* True while a memory window is bound to @mr (ibv_dereg_mr fails then). */
static inline bool
droce_mr_has_mw(const struct droce_mr *mr)
{
	return __atomic_load_n(&mr->mw_binds, __ATOMIC_ACQUIRE) != 0;
}

/* ---- memory windows (mw.c) ----
 *
 * A window takes its rkey from the MR key table: index << 8 | key byte.  It
 * is bound and invalidated by WQEs the QP's engine executes in order:
 *  - DROCE_WR_BIND_MW: rkey = the window's new rkey (its index, the new key
 *    byte), remote_addr / compare_add = start / length of the window (length
 *    0 unbinds a type 1 window), swap = its rights (DROCE_ACCESS_REMOTE_*),
 *    invalidate_rkey = lkey of the MR it lies in, length = 0.
 *  - DROCE_WR_LOCAL_INV: invalidate_rkey = the type 2 window's rkey.
 * Engines read windows without locks; droce_mw_free() waits for them.
 */
struct droce_mw;

/* A window of @type (1 or 2) in PD @pd_id, not bound; NULL with errno. */
struct droce_mw *droce_mw_alloc(uint32_t pd_id, unsigned int type);
/* Its rkey as allocated (the key byte changes with every bind). */
uint32_t droce_mw_rkey(const struct droce_mw *mw);
/* Unbinds it, unpublishes its key, waits until no engine sees it, frees it. */
void droce_mw_free(struct droce_mw *mw);

/* ---- completion queues ---- */

struct droce_cq;

/* Called by an engine when an armed CQ gets a completion that fires the arm. */
typedef void (*droce_cq_notify_fn)(struct droce_cq *cq, void *arg);
/* Called by an engine when a sub-ring overflows (CQ error async event). */
typedef void (*droce_cq_error_fn)(struct droce_cq *cq, void *arg);

struct droce_cq *droce_cq_create(uint32_t cqe, droce_cq_notify_fn notify,
				 droce_cq_error_fn error, void *arg);

enum droce_cq_flags {
	/* every completion carries the TSC of the moment its engine produced it */
	DROCE_CQ_TIMESTAMP = 1 << 0,
};

/* droce_cq_create() with @flags (enum droce_cq_flags); EINVAL for unknown flags. */
struct droce_cq *droce_cq_create_ex(uint32_t cqe, droce_cq_notify_fn notify,
				    droce_cq_error_fn error, void *arg, uint32_t flags);

/* A completion and when it was produced (rte_rdtsc() on its engine; 0 on a
 * CQ created without DROCE_CQ_TIMESTAMP). */
struct droce_cqe_ts {
	struct droce_cqe cqe;
	uint64_t tsc;
};

/*
 * droce_cq_poll() returning timestamps too.  With @progress false it only
 * takes what the engines already produced (no engine pass): the extended
 * poll's next_poll, after start_poll ran the pass.
 */
int droce_cq_poll_ts(struct droce_cq *cq, int n, struct droce_cqe_ts *out, bool progress);
/* Frees @cq; no QP may still use it. */
void droce_cq_destroy(struct droce_cq *cq);
/* Up to @n completions in the order each engine produced them; first a pass
 * of every co-located engine no other thread is driving at that moment.  Any
 * number of threads may poll one CQ at once (as rdma-core allows). */
int droce_cq_poll(struct droce_cq *cq, int n, struct droce_cqe *out);
/* Arms the CQ once: the next completion (or next solicited / error one) fires
 * notify.  Armed for any completion while it already holds one no event
 * announced (pushed while it was not armed): returns 1 and the arm is used
 * up at once, notify not called (the caller delivers that event, as mlx5
 * raises one then); else 0. */
int droce_cq_arm(struct droce_cq *cq, bool solicited_only);
uint32_t droce_cq_capacity(const struct droce_cq *cq);
/* Gives @cq room for @cqe completions per engine, keeping the ones not yet
 * polled, in order (each engine moves its own, through its channel): 0;
 * EINVAL when @cqe is 0, above DROCE_DP_MAX_CQE or below the completions
 * outstanding (the CQ is unchanged then); ENOMEM. */
int droce_cq_resize(struct droce_cq *cq, uint32_t cqe);

/* ---- queue pairs ---- */

enum droce_qp_state {
	DROCE_QPS_RESET = 0,
	DROCE_QPS_INIT = 1,
	DROCE_QPS_RTR = 2,
	DROCE_QPS_RTS = 3,
	DROCE_QPS_SQD = 4,
	DROCE_QPS_SQE = 5,
	DROCE_QPS_ERR = 6,
};

/* Attribute mask bits (same as IBV_QP_*). */
enum droce_qp_mask {
	DROCE_QPM_STATE = 1 << 0,
	DROCE_QPM_CUR_STATE = 1 << 1,
	DROCE_QPM_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	DROCE_QPM_ACCESS_FLAGS = 1 << 3,
	DROCE_QPM_PKEY_INDEX = 1 << 4,
	DROCE_QPM_PORT = 1 << 5,
	DROCE_QPM_QKEY = 1 << 6,
	DROCE_QPM_AV = 1 << 7,
	DROCE_QPM_PATH_MTU = 1 << 8,
	DROCE_QPM_TIMEOUT = 1 << 9,
	DROCE_QPM_RETRY_CNT = 1 << 10,
	DROCE_QPM_RNR_RETRY = 1 << 11,
	DROCE_QPM_RQ_PSN = 1 << 12,
	DROCE_QPM_MAX_QP_RD_ATOMIC = 1 << 13,
	DROCE_QPM_ALT_PATH = 1 << 14,
	DROCE_QPM_MIN_RNR_TIMER = 1 << 15,
	DROCE_QPM_SQ_PSN = 1 << 16,
	DROCE_QPM_MAX_DEST_RD_ATOMIC = 1 << 17,
	DROCE_QPM_PATH_MIG_STATE = 1 << 18,
	DROCE_QPM_CAP = 1 << 19,
	DROCE_QPM_DEST_QPN = 1 << 20,
};

struct droce_qp_caps {
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	uint32_t max_tso_header; /* RAW_PACKET: largest wr.tso.hdr_sz (0: no TSO) */
	bool sq_sig_all;
};

/* Attributes of one ibv_modify_qp call, validated by verbs_api. */
struct droce_qp_mod {
	uint32_t mask;          /* enum droce_qp_mask */
	enum droce_qp_state state;
	uint32_t pmtu;          /* bytes: 256..4096 */
	uint32_t dest_qpn, rq_psn, sq_psn, qkey;
	uint32_t access;        /* remote access the responder allows */
	uint16_t pkey_index;
	uint8_t port;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	struct droce_path path; /* with the AV: addresses resolved to MACs */
};

/* ---- address handles (UD) ---- */

/*
 * A UD destination, resolved once by the application side and then only read
 * by engines.  A WQE names it by pointer, so it must stay valid until every
 * WQE naming it has completed (ibv_destroy_ah's rule): @wqes counts those
 * (droce_qp_post_send adds, the engine subtracts when the WQE completes, is
 * flushed or dropped), and droce_ah_busy() says whether freeing is safe.
 */
struct droce_ah {
	struct droce_path path;  /* udp_sport 0: the sending QP picks its own */
	unsigned int port;       /* droce port index the path leaves from */
	uint64_t serial;         /* unique per droce_ah_init(); engines cache by it */
	uint32_t wqes;           /* WQEs naming it, not yet completed (atomic) */
};

/* Fills @ah for @path on droce port @port and gives it a fresh serial. */
void droce_ah_init(struct droce_ah *ah, const struct droce_path *path, unsigned int port);

/* True while a posted WQE naming @ah has not completed. */
static inline bool
droce_ah_busy(const struct droce_ah *ah)
{
	return __atomic_load_n(&ah->wqes, __ATOMIC_ACQUIRE) != 0;
}

struct droce_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum droce_wqe_flags {
	DROCE_WQE_SIGNALED = 1 << 0,
	DROCE_WQE_FENCE = 1 << 1,
	DROCE_WQE_SOLICITED = 1 << 2,
	DROCE_WQE_INLINE = 1 << 3,
	DROCE_WQE_IP_CSUM = 1 << 4, /* RAW_PACKET: fill the IPv4 header and TCP/UDP checksums */
};

/* One send work request, validated by verbs_api. */
struct droce_wqe {
	uint64_t wr_id;
	uint8_t opcode;         /* enum droce_wr_opcode */
	uint8_t flags;          /* enum droce_wqe_flags; SIGNALED already folds in sq_sig_all */
	uint16_t num_sge;
	rte_be32_t imm;         /* SEND/WRITE_WITH_IMM */
	uint32_t invalidate_rkey;
	/* RAW_PACKET TSO: the header (tso_hdr_sz bytes) is after the WQE's data
	 * room (droce_wqe_tso_hdr); length is the payload's */
	uint16_t tso_mss, tso_hdr_sz;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t length;        /* sum of the SGEs, or inline_len */
	uint64_t compare_add, swap;
	/* UD only (NULL / 0 otherwise): destination and its QPN and Q_Key; a
	 * remote_qkey with the high bit set means the sending QP's own qkey.
	 * XRC initiator: remote_qpn is the remote XRC SRQ number (XRCETH). */
	struct droce_ah *ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	/* the gather list or the inline bytes (DROCE_WQE_INLINE says which), in
	 * the room the QP's caps give: a send-queue slot holds max_send_sge SGEs
	 * or max_inline_data bytes (droce_wqe_room), not the whole arrays */
	union {
		struct droce_sge sge[DROCE_DP_MAX_SGE];
		uint8_t inline_data[DROCE_DP_MAX_INLINE];
	};
	uint8_t tso_room[512];  /* a full-size WQE's room for a TSO header */
};

/* Zeroes a WQE's fixed part, everything before its SGEs / inline bytes (the
 * posting paths then set what the WR gives). */
static inline void
droce_wqe_clear_head(struct droce_wqe *w)
{
	memset(w, 0, offsetof(struct droce_wqe, sge));
}

/* Where a WQE's data room (SGEs or inline bytes) ends: a RAW_PACKET QP keeps
 * a TSO header there, so that it overlaps neither. */
static inline size_t
droce_wqe_data_room(uint32_t max_sge, uint32_t max_inline)
{
	size_t data = (size_t)max_sge * sizeof(struct droce_sge);

	return data > max_inline ? data : max_inline;
}

/* Bytes of a WQE with room for @max_sge SGEs or @max_inline inline bytes, and
 * a TSO header of @max_tso_header bytes after them. */
static inline size_t
droce_wqe_room(uint32_t max_sge, uint32_t max_inline, uint32_t max_tso_header)
{
	return offsetof(struct droce_wqe, sge) + droce_wqe_data_room(max_sge, max_inline) +
	       max_tso_header;
}

/* The TSO header of a WQE of a QP with these caps. */
static inline uint8_t *
droce_wqe_tso_hdr(struct droce_wqe *w, uint32_t max_sge, uint32_t max_inline)
{
	return w->inline_data + droce_wqe_data_room(max_sge, max_inline);
}

struct droce_rqe {
	uint64_t wr_id;
	uint16_t num_sge;
	uint32_t length;        /* sum of the SGEs */
	struct droce_sge sge[DROCE_DP_MAX_SGE];
};

struct droce_qp;

/*
 * Creates a QP on one of the engines (round robin) and attaches it.  @port
 * is the droce port index its traffic uses.  Returns NULL with errno.
 */
struct droce_qp *droce_qp_create(enum droce_qp_type type, const struct droce_qp_caps *caps,
				 struct droce_cq *send_cq, struct droce_cq *recv_cq,
				 uint32_t pd_id, unsigned int port);
uint32_t droce_qp_num(const struct droce_qp *qp);
/* Bytes the QP's work queues take (send slots, receive slots, their per-WQE
 * state): what a QP costs beyond its own state (the scale test's figure). */
size_t droce_qp_queue_bytes(const struct droce_qp *qp);
unsigned int droce_qp_engine(const struct droce_qp *qp);

/* Applies validated attributes, in call order with the thread's posts. */
int droce_qp_modify(struct droce_qp *qp, const struct droce_qp_mod *mod);

/*
 * Queues one WQE / RQE.  0, or ENOMEM when the queue is full (nothing queued),
 * EINVAL when it has more SGEs (or, send, inline bytes) than the QP's caps.
 * The caller validated it; the WQE is copied, so its buffers are free on return.
 */
int droce_qp_post_send(struct droce_qp *qp, const struct droce_wqe *wqe);
int droce_qp_post_recv(struct droce_qp *qp, const struct droce_rqe *rqe);

/*
 * Batch posting straight into the send queue (the ibv_wr_* builder):
 *  - droce_qp_sq_begin() takes the send queue's post lock (held until commit
 *    or cancel: ibv_post_send on the same QP waits) and describes the queue
 *    in @b, first = the index of the next free slot;
 *  - droce_sq_batch_slot(b, idx) is the WQE of slot @idx to fill in place
 *    (header fields, num_sge SGEs, length inline bytes), NULL when the queue
 *    has no room for it (ENOMEM);
 *  - droce_qp_sq_commit() publishes the @n slots from b->first in order,
 *    drops the lock and rings the engine once; 0 or errno;
 *  - droce_qp_sq_cancel() drops the lock and publishes nothing.
 */
struct droce_sq_batch {
	uint8_t *wqe0;              /* the WQE of slot 0 */
	uint32_t stride;            /* bytes from one slot's WQE to the next */
	uint32_t size;              /* WQEs the queue holds (its max_send_wr) */
	uint32_t mask;              /* slots - 1: slot of index i is i & mask (a power of two) */
	const uint32_t *retired;    /* WQEs the engine retired (read atomically) */
	uint32_t first;             /* index of the batch's first slot */
};

void droce_qp_sq_begin(struct droce_qp *qp, struct droce_sq_batch *b);
int droce_qp_sq_commit(struct droce_qp *qp, uint32_t n);
void droce_qp_sq_cancel(struct droce_qp *qp);

/* The WQE of slot @idx, whether or not the queue has room for it. */
static inline struct droce_wqe *
droce_sq_batch_at(const struct droce_sq_batch *b, uint32_t idx)
{
	return (struct droce_wqe *)(b->wqe0 + (size_t)(idx & b->mask) * b->stride);
}

/* Slots from b->first on that are free now (the engine may free more): a
 * post list reads it once, and again only when its WRs reach it. */
static inline uint32_t
droce_sq_batch_room(const struct droce_sq_batch *b)
{
	return b->size - (b->first - __atomic_load_n(b->retired, __ATOMIC_ACQUIRE));
}

static inline struct droce_wqe *
droce_sq_batch_slot(const struct droce_sq_batch *b, uint32_t idx)
{
	if (idx - __atomic_load_n(b->retired, __ATOMIC_ACQUIRE) >= b->size)
		return NULL;
	return droce_sq_batch_at(b, idx);
}

/*
 * The same for the receive queue (ibv_post_recv's lists): begin takes the
 * receive post lock, slot is the RQE of @idx to fill in place (NULL when the
 * queue is full), commit publishes @n slots in order, unlocks and rings once.
 * Not for a QP on an SRQ.
 */
uint32_t droce_qp_rq_begin(struct droce_qp *qp);
struct droce_rqe *droce_qp_rq_slot(struct droce_qp *qp, uint32_t idx);
int droce_qp_rq_commit(struct droce_qp *qp, uint32_t n);

/*
 * The state the engine moved @qp to by itself (ERR, or SQE, after a transport
 * error) since the last droce_qp_modify() it applied; -1 when there is none,
 * and the last state the application set stands.
 */
int droce_qp_async_state(const struct droce_qp *qp);

/* Detaches @qp from its engine, waits for the engine to let go, frees it. */
int droce_qp_destroy(struct droce_qp *qp);
/* A UD QP's datagrams posted so far go out, as a NIC that had their
 * doorbell sends them (mckey's sender leaves its group and destroys its QP
 * right after posting): drives the engines until the engine took them,
 * bounded at 100 ms (a QP not sending keeps them).  Called by
 * droce_qp_destroy and droce_mcast_detach; nothing for other QP types. */
void droce_qp_ud_send_posted(struct droce_qp *qp);

/* True once the engine has applied every droce_qp_modify() sent for @qp
 * (application side; the thread that modifies it). */
bool droce_qp_settled(const struct droce_qp *qp);

/* ---- shared receive queues (srq.c) and QP events ----
 *
 * An SRQ is filled by droce_srq_post_recv() from any thread and emptied by
 * the engines of the QPs created with it, lock-free (see srq.c).  A QP takes
 * a receive WQE from its SRQ only when a message needs one; from then on the
 * WQE is the QP's until it completes (entering ERR flushes only those).
 */
#define DROCE_DP_MAX_SRQ_WR 32768

struct droce_srq;

/* Called by an engine when a take leaves fewer WQEs posted than the armed limit. */
typedef void (*droce_srq_limit_fn)(struct droce_srq *srq, void *arg);

/* NULL with errno EINVAL (sizes) or ENOMEM. */
struct droce_srq *droce_srq_create(uint32_t max_wr, uint32_t max_sge, droce_srq_limit_fn limit,
				   void *arg);
/* EBUSY while a QP still uses it. */
int droce_srq_destroy(struct droce_srq *srq);
/* 0, ENOMEM when max_wr WQEs are posted, EINVAL above max_sge.  Any thread. */
int droce_srq_post_recv(struct droce_srq *srq, const struct droce_rqe *rqe);
/* Arms the limit event (@limit > 0) or disarms it (0); it disarms itself when it fires. */
void droce_srq_arm(struct droce_srq *srq, uint32_t limit);
uint32_t droce_srq_limit(const struct droce_srq *srq);
uint32_t droce_srq_capacity(const struct droce_srq *srq);
/* WQEs posted and not yet taken by a QP. */
uint32_t droce_srq_count(const struct droce_srq *srq);

/* Affiliated QP events (same values as enum ibv_event_type). */
enum droce_qp_event {
	DROCE_QP_EV_FATAL = 1,     /* the engine moved the QP to ERR (transport error) */
	DROCE_QP_EV_LAST_WQE = 16, /* SRQ QP entered ERR: it takes no more WQEs */
};

/* Called on the QP's engine; it must only queue the event and return. */
typedef void (*droce_qp_event_fn)(struct droce_qp *qp, enum droce_qp_event ev, void *arg);

struct droce_qp_ext {
	struct droce_srq *srq;     /* receive WQEs come from here (caps' recv sizes unused) */
	droce_qp_event_fn event;   /* NULL: no events */
	void *event_arg;
	/* The port's General Services Interface QP (QPN 1, IBTA 13.5.1), for
	 * the CM's MADs: UD only, one per port (EBUSY for a second), on engine
	 * 0, which every engine hands QP1 frames to.  Its receives also teach
	 * the port's ARP table the sender's MAC, so replies need no ARP. */
	bool gsi;
	/* XRC (type RC): an initiator (XRC_SEND: no receive side, recv_cq
	 * unused) or a target (XRC_RECV: no send side, CQs unused; each request
	 * names an XRC SRQ of domain @xrcd, published by droce_xrc_srq_publish) */
	enum droce_xrc_role { DROCE_XRC_NONE, DROCE_XRC_INI, DROCE_XRC_TGT } xrc;
	uint32_t xrcd;
};

#define DROCE_DP_GSI_QPN 1

/* droce_qp_create() with an SRQ and / or an event callback (@ext may be NULL). */
struct droce_qp *droce_qp_create_ex(enum droce_qp_type type, const struct droce_qp_caps *caps,
				    struct droce_cq *send_cq, struct droce_cq *recv_cq,
				    uint32_t pd_id, unsigned int port,
				    const struct droce_qp_ext *ext);

/* ---- XRC SRQ numbers (xrc.c) ----
 *
 * An XRC SRQ is a droce_srq published under a 24-bit SRQ number with its XRC
 * domain, the PD its memory checks use and the CQ its receives complete on.
 * Engines look numbers up without locks; a target QP holds the SRQ it last
 * delivered into (attached) until it moves on or is destroyed.
 */
/* 0 and the number in *@srqn, or ENOMEM when every number is taken. */
int droce_xrc_srq_publish(struct droce_srq *srq, uint32_t xrcd, uint32_t pd_id,
			  struct droce_cq *cq, uint32_t *srqn);
/* Withdraws @srqn and waits until no engine can look it up: 0, or EBUSY (it
 * stays published) while a target QP still holds its SRQ. */
int droce_xrc_srq_unpublish(uint32_t srqn);

/* ---- UD multicast (mcast.c) ----
 *
 * A UD QP attached to a group receives every datagram sent to the group's
 * GID with destination QPN DROCE_MCAST_QPN on its port, whichever engine the
 * frame arrives at (each attached QP gets its own copy, its Q_Key checked);
 * a UD SEND to an AH whose GID is a group goes out to the group's Ethernet
 * address and is also delivered to the sending port's attached QPs (the
 * local loop of rxe and ConnectX).  Limits as rxe's.
 */
#define DROCE_MCAST_MAX_GROUPS 1024 /* per port (pmd_glue: DROCE_PORT_MC_MAX_GROUPS) */
#define DROCE_MCAST_MAX_QP_ATTACH 56                       /* QPs per group */
/* 0 (also when attached already), EINVAL (not a UD QP, not a multicast
 * GID) or ENOMEM (a limit, or memory). */
int droce_mcast_attach(struct droce_qp *qp, const uint8_t gid[16]);
/* 0, EINVAL (as attach) or ENOENT (not attached). */
int droce_mcast_detach(struct droce_qp *qp, const uint8_t gid[16]);
/* Detaches @qp from every group (droce_qp_destroy calls it). */
void droce_mcast_detach_qp(struct droce_qp *qp);
/* QPs attached to @gid on droce port @port. */
unsigned int droce_mcast_group_members(unsigned int port, const uint8_t gid[16]);
/* Sends the membership reports and leaves due again (IGMP / MLD's
 * robustness: each state change twice); called every few ms by the verbs
 * layer's port monitor thread. */
void droce_mcast_tick(void);

/* ---- neighbours ---- */

/*
 * The MAC of IPv4 address @ip (network order) on @port: from the port's ARP
 * table, else by ARP requests an engine sends on the port (every 200 ms)
 * until a reply arrives or @timeout_ms passes.  0, or ETIMEDOUT / ENODEV.
 * Drives co-located engines while it waits; call it from the slow path only.
 */
int droce_dp_arp_resolve(unsigned int port, rte_be32_t ip, struct rte_ether_addr *mac,
			 unsigned int timeout_ms);
/* The same for either family: @addr an IPv6 address, resolved by neighbour
 * solicitations (pmd_glue/nd.c, every 200 ms), or an IPv4-mapped one, by
 * ARP.  EINVAL for :: or a group. */
int droce_dp_neigh_resolve(unsigned int port, const uint8_t addr[16], struct rte_ether_addr *mac,
			   unsigned int timeout_ms);
/* Asks engine 0 for the unsolicited neighbour advertisement of every port
 * that has not sent it yet and whose link is up (RFC 4861 7.2.6): at
 * engines start (_due), and from the verbs layer's port monitor thread
 * (_tick, which holds the runtime). */
void droce_dp_nd_announce_due(void);
void droce_dp_nd_tick(void);

/* ---- engines ---- */

/* Starts the engines the running config asks for (after droce_start()): 0 or
 * an errno (also set in errno). */
int droce_engines_start(void);
void droce_engines_stop(void);
unsigned int droce_engine_count(void);
/* QPs the engines can hold (QPN space: 262,143 per engine; the table grows). */
uint32_t droce_dp_max_qps(void);

/* Co-located mode: one pass of every engine no other thread is driving right
 * now (any thread may drive any engine, one at a time; no thread keeps one);
 * true if a pass had work or another thread was driving an engine (not idle). */
bool droce_engines_progress(void);
/* Co-located mode: the calling thread is about to block (ibv_get_cq_event ...):
 * the fallback progress thread takes the engines over now, not after fallback_us. */
void droce_engines_blocking(void);
/* How often a thread handed the engines to the fallback thread that way. */
uint64_t droce_engines_waiter_blocks(void);
/* @fn runs at the start of the next droce_engines_stop(), while the engines
 * still run (one hook: the CM's stop; EBUSY if another is set). */
int droce_engines_at_stop(void (*fn)(void));
/*
 * Co-located mode, a verb about to block: drives the engines until
 * @ready(@arg) is true or they have been idle for the waiter's spin budget
 * ([engines] wait_spin_us, adapted); true if ready.  Call droce_engines_wait_end() after the
 * blocking part with whether it got what it waited for: the budget learns
 * from it.  In dedicated mode (or with wait_spin_us = 0) it only asks
 * @ready once.  @budget is the waiter's (a channel's; 0 at creation means
 * wait_spin_us), @w the call's own (on its stack); any thread, no lock.
 */
struct droce_wait {
	uint64_t start_tsc;
	uint64_t idle_tsc; /* the last pass with work (or the start) */
	bool slept;
};
bool droce_engines_wait_spin(_Atomic uint64_t *budget, struct droce_wait *w,
			     bool (*ready)(const void *), const void *arg);
void droce_engines_wait_end(_Atomic uint64_t *budget, const struct droce_wait *w, bool got);
/*
 * Co-located mode: the calling thread sleeps (true) or stopped sleeping
 * (false) in a verb waiting for an event the engines' traffic brings
 * (ibv_get_cq_event's read).  While a thread does, the fallback thread is
 * that program's engine: it keeps spinning after work even when the CPUs are
 * crowded, as a polling program's thread would, instead of sleeping between
 * frames.  Calls pair; any thread, no lock.
 */
void droce_engines_waiting(bool on);
/*
 * Co-located mode, a thread about to sleep for an event on @fd (its
 * completion channel): when every port is a memif port whose wake line knows
 * its droce peer, the thread sleeps on @fd and on the lines itself (at most
 * @ms ms), so the peer's frame wakes it directly; the fallback thread, which
 * would otherwise take that frame and then wake it (two wake-ups, and the
 * CPU the fallback keeps spinning on after its pass), leaves the lines to
 * it.  Arms the lines, makes one pass and asks @ready before it sleeps.
 * Returns -1 when it cannot (a port without a line, a peer not yet known, no
 * fallback thread, dedicated engines): the caller sleeps its own way; 1 when
 * @fd became readable; 2 when a signal handler interrupted the sleep (errno
 * EINTR); 0 otherwise (a frame came, the time ran out, or @ready): the
 * caller drives the engines (droce_engines_drive) and looks.
 */
int droce_engines_line_sleep(int fd, unsigned int ms, bool (*ready)(const void *), const void *arg);
/* Sleeps droce_engines_line_sleep went into, since the start (tests, stats). */
uint64_t droce_engines_line_sleeps(void);
/* The CPU the fallback thread leaves to the application thread that drives
 * the engines while the CPUs are crowded (engine_place.c), -1: none. */
int droce_place_avoided(void);
/*
 * Drives the engines until @ready, or until they have been idle for @idle_us;
 * true if @ready.  Co-located mode only (else it asks @ready once).
 */
bool droce_engines_drive(bool (*ready)(const void *), const void *arg, unsigned int idle_us);
/*
 * The fork gate.  droce's own threads (the fallback thread per round of
 * passes, the fork server's per request, the rdma_cm service thread per
 * turn) hold it around each unit of their work, and fork() closes it first
 * (verbs_api/device.c's pthread_atfork handlers): a child never inherits one
 * of them half-way through, holding a lock of the allocator's (an engine pass
 * frees memory; ASan's allocator, unlike glibc's, is not made safe across
 * fork) or a droce lock.  Never held across a sleep, never nested.  lcores of
 * dedicated engines do not take it (a lock per pass).
 */
void droce_fork_gate_enter(void);
void droce_fork_gate_leave(void);
void droce_fork_gate_close(void); /* prepare: waits for every unit under way */
void droce_fork_gate_open(void);  /* parent */
void droce_fork_gate_reset(void); /* child: its closer was the parent's thread */
/* Passes the fallback progress thread has run since the process started. */
uint64_t droce_engines_fallback_passes(void);
/* For a CQ's notify, which runs during an engine pass: true when the calling
 * thread runs that pass inside a verb of the application's
 * (droce_engines_progress), false on the fallback thread or an engine lcore. */
bool droce_engines_in_app_pass(void);
/* True if the co-located fallback progress thread runs (it calls the idle hook). */
bool droce_engines_fallback_on(void);
/* @fn runs on the fallback progress thread at every turn of its loop, busy or
 * idle (one hook: the completion channels' owed events; NULL clears it); it
 * must be cheap when it has nothing to do, and returns true while it keeps
 * something for a later turn (the thread then sleeps at most 50 µs). */
void droce_engines_set_fallback_hook(bool (*fn)(void));
/* Wakes the fallback thread if it sleeps (its hook has work: an owed event). */
void droce_engines_fallback_wake(void);
/* The fallback thread's sleeps so far, and of them those on the memif wake
 * lines alone (no timer but a safety one). */
void droce_engines_fallback_sleeps(uint64_t *sleeps, uint64_t *deep);

/* ---- test support: raw frames (fault and hostile-peer tests) ----
 *
 * A frame crafted byte by byte goes to an engine over the calling thread's
 * channel, like a doorbell: the engine alone touches its transmit buffers and
 * QPs, and the frame is handled after everything this thread sent that engine
 * before (its modifies and posts).  No lock and no cost on the fast path.
 */
enum droce_inject_dir {
	DROCE_INJECT_TX = 0, /* the engine sends it on the port (capture, impairment): the peer receives it */
	DROCE_INJECT_RX = 1, /* the engine handles it as if the port had received it */
};

/*
 * Copies the @len bytes of @frame into an mbuf of @port's pool and hands it to
 * engine @engine.  0, or ENODEV (no such engine or port, engines stopped),
 * EINVAL (@len is 0 or above the pool's data room), ENOMEM (no mbuf).  Any
 * thread; counted in the engine's `injected` counter when handled.
 */
int droce_dp_inject(unsigned int engine, unsigned int port, enum droce_inject_dir dir,
		    const void *frame, uint32_t len);

/* ---- counters (include/droce/stats.h) ---- */

struct droce_stat;
/* @qp's counters (qpn, engine, frames, retransmits, NAKs ...): as
 * droce_stats_port() in stats.h; any thread, while @qp is alive. */
int droce_dp_qp_stats(const struct droce_qp *qp, struct droce_stat *out, unsigned int n);

/* ---- RAW_PACKET receive steering (flow.c) ----
 *
 * Rules per port, as ibv_create_flow(3) defines them.  A received frame is
 * offered first to the NORMAL rules (lowest priority value first, then the
 * oldest rule): the first that matches takes it into its QP's receive queue.
 * A frame no NORMAL rule takes goes on to droce itself (RoCEv2 on UDP 4791 to
 * the engines, ARP to the port); a NORMAL rule with dont_trap takes a copy
 * and lets the frame go on.  Any other frame goes to the oldest
 * ALL_DEFAULT rule, a multicast one (destination MAC bit 0) first to the
 * oldest MC_DEFAULT rule.  SNIFFER rules get a copy of every received frame
 * before all this.  Specs hold values and masks in network byte order; a
 * match compares (frame & mask) == (value & mask) field by field.
 */
enum droce_flow_kind {
	DROCE_FLOW_NORMAL,
	DROCE_FLOW_ALL_DEFAULT,
	DROCE_FLOW_MC_DEFAULT,
	DROCE_FLOW_SNIFFER,
};

enum droce_flow_have {
	DROCE_FLOW_ETH = 1 << 0,
	DROCE_FLOW_IPV4 = 1 << 1,
	DROCE_FLOW_IPV6 = 1 << 2,
	DROCE_FLOW_TCP = 1 << 3,
	DROCE_FLOW_UDP = 1 << 4,
};

struct droce_flow_fields {
	uint8_t dmac[6], smac[6];
	uint16_t ether_type, vlan_tag;
	uint32_t src_ip, dst_ip;          /* IPv4 */
	uint8_t proto, tos, ttl, ip_flags; /* IPv4 (ext spec) */
	uint8_t src_ip6[16], dst_ip6[16];
	uint32_t flow_label;              /* IPv6, low 20 bits (host order) */
	uint8_t next_hdr, traffic_class, hop_limit;
	uint16_t src_port, dst_port;      /* TCP / UDP */
};

struct droce_flow_spec {
	uint32_t have;                    /* enum droce_flow_have: which layers must be present */
	bool dont_trap;                   /* NORMAL: a copy to the QP, the frame goes on */
	struct droce_flow_fields val, mask;
};

struct droce_flow;

/* A rule on droce port @port for RAW_PACKET QP @qp; NULL with errno (EINVAL:
 * not a RAW_PACKET QP of that port, bad spec; ENOMEM). */
struct droce_flow *droce_flow_create(unsigned int port, struct droce_qp *qp,
				     enum droce_flow_kind kind, uint16_t priority,
				     const struct droce_flow_spec *spec);
/*
 * Receive-side scaling (ibv_create_qp_ex with RX hash): a rule whose frames go
 * to qp[toeplitz(fields) & (n - 1)] instead of one QP.  @fields is a mask of
 * DROCE_RSS_* (the values of rdma-core's IBV_RX_HASH_*): IPv4 or IPv6
 * addresses, TCP or UDP ports, hashed in the order source address,
 * destination address, source port, destination port (the Microsoft RSS
 * input); a frame without the selected headers hashes over what it has (an
 * empty input hashes to 0).  @n is a power of two, the QPs RAW_PACKET QPs of
 * the rule's port; the caller keeps them alive while the rule is.
 */
enum {
	DROCE_RSS_SRC_IPV4 = 1u << 0,
	DROCE_RSS_DST_IPV4 = 1u << 1,
	DROCE_RSS_SRC_IPV6 = 1u << 2,
	DROCE_RSS_DST_IPV6 = 1u << 3,
	DROCE_RSS_SRC_PORT_TCP = 1u << 4,
	DROCE_RSS_DST_PORT_TCP = 1u << 5,
	DROCE_RSS_SRC_PORT_UDP = 1u << 6,
	DROCE_RSS_DST_PORT_UDP = 1u << 7,
};
#define DROCE_RSS_FIELDS 0xffu
#define DROCE_RSS_KEY_LEN 40u
#define DROCE_RSS_MAX_LOG_TABLE 8u
struct droce_rss_conf {
	uint32_t fields;
	uint8_t key[DROCE_RSS_KEY_LEN];
	uint32_t n;
	struct droce_qp *const *qp;
};
/* As droce_flow_create, the frames spread by @rss; @owner (a RAW_PACKET QP of
 * @port) is the QP the rule counts against (droce_flow_count_qp).  EINVAL also
 * for a bad @rss (fields of IPv4 and IPv6, of TCP and UDP, n not a power of two
 * up to 1 << DROCE_RSS_MAX_LOG_TABLE, a QP not RAW_PACKET on @port). */
struct droce_flow *droce_flow_create_rss(unsigned int port, struct droce_qp *owner,
					 enum droce_flow_kind kind, uint16_t priority,
					 const struct droce_flow_spec *spec,
					 const struct droce_rss_conf *rss);
/* The Toeplitz hash the RSS rules use, of the @len bytes of @frame (tests). */
uint32_t droce_rss_hash_frame(const struct droce_rss_conf *rss, const uint8_t *frame,
			      uint32_t len);
/* Removes the rule and waits until no engine can still use it; frees it. */
void droce_flow_destroy(struct droce_flow *f);
/* Rules naming @qp (ibv_destroy_qp refuses while there are any). */
unsigned int droce_flow_count_qp(const struct droce_qp *qp);

/* Largest frame payload droce sends by TSO in one WR, and the most bytes of
 * header (max_tso_header) a RAW_PACKET QP may ask for. */
#define DROCE_DP_MAX_TSO (256u * 1024)
#define DROCE_DP_MAX_TSO_HEADER 512u
static_assert(DROCE_DP_MAX_TSO_HEADER <= sizeof(((struct droce_wqe *)0)->tso_room),
	      "a full-size WQE holds the largest TSO header after its data room");
/* The longest frame a RAW_PACKET QP sends on droce port @port: its MTU plus
 * an Ethernet header and one 802.1Q tag (0 for no such port). */
uint32_t droce_raw_max_frame(unsigned int port);
/* The most segments one TSO WR may make (its port's waiting room). */
#define DROCE_DP_MAX_TSO_SEGS 256u

#endif /* DROCE_DP_H */
