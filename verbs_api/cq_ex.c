/* SPDX-License-Identifier: BSD-3-Clause
 * Extended CQs: ibv_create_cq_ex (the verbs_context op) and the iterator
 * ibv_start_poll / ibv_next_poll / ibv_end_poll with the ibv_wc_read_*
 * accessors.  An extended CQ is an ordinary droce CQ (struct ibv_cq_ex
 * starts with the fields of struct ibv_cq), so ibv_cq_ex_to_cq(),
 * ibv_poll_cq, ibv_req_notify_cq and completion channels work on it too.
 *
 * The iterator takes one completion at a time from the dataplane CQ into
 * cq->cur: start_poll runs a pass of the co-located engines first (as
 * ibv_poll_cq does), next_poll only takes what is already there.  Nothing is
 * held between end_poll and the next start_poll, so the extended and the
 * plain poll may be mixed freely.
 *
 * Completion timestamps (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) are the TSC
 * of the moment the engine produced the completion, in nanoseconds: the
 * "HCA clock" is 1 GHz (ibv_query_device_ex's hca_core_clock says 1000000
 * kHz), and ibv_query_rt_values_ex reads the same clock.  The wall-clock
 * variant adds the offset between CLOCK_REALTIME and that clock measured
 * when the CQ was created.
 */
#include <errno.h>
#include <limits.h>
#include <time.h>

#include <rte_cycles.h>

#include "internal.h"

/* What droce can fill in (everything struct droce_cqe holds, plus time). */
#define WC_FLAGS_SUPPORTED                                                                     \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |                \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |                     \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                 \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define WC_TIME (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static uint64_t ns_mult; /* ns = (tsc * ns_mult) >> 32; set once */

uint64_t
droce_verbs_tsc_to_ns(uint64_t tsc)
{
	uint64_t m = __atomic_load_n(&ns_mult, __ATOMIC_RELAXED);

	if (m == 0) {
		uint64_t hz = rte_get_tsc_hz();

		m = hz ? (1000000000ull << 32) / hz : 1ull << 32;
		__atomic_store_n(&ns_mult, m, __ATOMIC_RELAXED);
	}
	return (uint64_t)(((unsigned __int128)tsc * m) >> 32);
}

static inline struct droce_vcq *
vcq(struct ibv_cq_ex *c)
{
	return (struct droce_vcq *)c;
}

static inline int
take(struct droce_vcq *cq, bool progress)
{
	if (droce_cq_poll_ts(cq->dcq, 1, &cq->cur, progress) != 1)
		return ENOENT;
	cq->cqx.wr_id = cq->cur.cqe.wr_id;
	cq->cqx.status = (enum ibv_wc_status)cq->cur.cqe.status;
	return 0;
}

static int
start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	if (attr != NULL && attr->comp_mask != 0)
		return EINVAL;
	return take(vcq(c), true);
}

static int
next_poll(struct ibv_cq_ex *c)
{
	return take(vcq(c), false);
}

static void
end_poll(struct ibv_cq_ex *c)
{
	RTE_SET_USED(c);
}

static enum ibv_wc_opcode
read_opcode(struct ibv_cq_ex *c)
{
	return (enum ibv_wc_opcode)vcq(c)->cur.cqe.opcode;
}

static uint32_t
read_vendor_err(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.vendor_err;
}

static uint32_t
read_byte_len(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.byte_len;
}

/* also ibv_wc_read_invalidated_rkey(): the same word, as in struct ibv_wc */
static __be32
read_imm_data(struct ibv_cq_ex *c)
{
	return (__be32)vcq(c)->cur.cqe.imm_or_inv;
}

static uint32_t
read_qp_num(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.qp_num;
}

static uint32_t
read_src_qp(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.src_qp;
}

static unsigned int
read_wc_flags(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.wc_flags;
}

static uint32_t
read_slid(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.slid;
}

static uint8_t
read_sl(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.sl;
}

static uint8_t
read_dlid_path_bits(struct ibv_cq_ex *c)
{
	return vcq(c)->cur.cqe.dlid_path_bits;
}

static uint64_t
read_completion_ts(struct ibv_cq_ex *c)
{
	uint64_t tsc = vcq(c)->cur.tsc;

	return tsc ? droce_verbs_tsc_to_ns(tsc) : 0;
}

static uint64_t
read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	struct droce_vcq *cq = vcq(c);

	if (cq->cur.tsc == 0)
		return 0;
	return (uint64_t)((int64_t)droce_verbs_tsc_to_ns(cq->cur.tsc) + cq->wall_off_ns);
}

/* Never asked for (creation refuses their flags); defined so that a call
 * reads 0 instead of jumping to NULL. */
static uint16_t
read_cvlan(struct ibv_cq_ex *c)
{
	RTE_SET_USED(c);
	return 0;
}

static uint32_t
read_flow_tag(struct ibv_cq_ex *c)
{
	RTE_SET_USED(c);
	return 0;
}

static void
read_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *tm)
{
	RTE_SET_USED(c);
	tm->tag = 0;
	tm->priv = 0;
}

struct ibv_cq_ex *
droce_verbs_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *a)
{
	struct droce_vcq *cq;
	struct timespec now;

	if (a == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;
		return NULL;
	}
	/* completions droce cannot fill in: VLAN, flow tag, tag matching */
	if (a->wc_flags & ~(uint64_t)WC_FLAGS_SUPPORTED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* single-threaded is how droce CQs are polled anyway; an overrun drops
	 * the newest completion and raises IBV_EVENT_CQ_ERR, so IGNORE_OVERRUN's
	 * "always written to the next entry" cannot be honoured */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* no parent domains on droce (ibv_alloc_parent_domain is EOPNOTSUPP), so
	 * no PD can be one */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && a->parent_domain != NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (a->cqe > INT_MAX || a->comp_vector > INT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = droce_verbs_create_cq(context, (int)a->cqe, a->cq_context, a->channel,
				   (int)a->comp_vector,
				   (a->wc_flags & WC_TIME) ? DROCE_CQ_TIMESTAMP : 0);
	if (cq == NULL)
		return NULL;
	cq->wc_flags = a->wc_flags;
	if (a->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) {
		uint64_t t0 = droce_verbs_tsc_to_ns(rte_rdtsc());

		clock_gettime(CLOCK_REALTIME, &now);
		cq->wall_off_ns = (int64_t)((uint64_t)now.tv_sec * 1000000000ull +
					    (uint64_t)now.tv_nsec) - (int64_t)t0;
	}
	cq->cqx.comp_mask = 0;
	cq->cqx.start_poll = start_poll;
	cq->cqx.next_poll = next_poll;
	cq->cqx.end_poll = end_poll;
	cq->cqx.read_opcode = read_opcode;
	cq->cqx.read_vendor_err = read_vendor_err;
	cq->cqx.read_byte_len = read_byte_len;
	cq->cqx.read_imm_data = read_imm_data;
	cq->cqx.read_qp_num = read_qp_num;
	cq->cqx.read_src_qp = read_src_qp;
	cq->cqx.read_wc_flags = read_wc_flags;
	cq->cqx.read_slid = read_slid;
	cq->cqx.read_sl = read_sl;
	cq->cqx.read_dlid_path_bits = read_dlid_path_bits;
	cq->cqx.read_completion_ts = read_completion_ts;
	cq->cqx.read_cvlan = read_cvlan;
	cq->cqx.read_flow_tag = read_flow_tag;
	cq->cqx.read_tm_info = read_tm_info;
	cq->cqx.read_completion_wallclock_ns = read_completion_wallclock_ns;
	return &cq->cqx;
}

int
droce_verbs_query_rt_values(struct ibv_context *c, struct ibv_values_ex *v)
{
	uint32_t asked;

	RTE_SET_USED(c);
	if (v == NULL)
		return EINVAL;
	asked = v->comp_mask;
	v->comp_mask = 0;
	if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
		uint64_t ns = droce_verbs_tsc_to_ns(rte_rdtsc());

		v->raw_clock.tv_sec = (time_t)(ns / 1000000000ull);
		v->raw_clock.tv_nsec = (long)(ns % 1000000000ull);
		v->comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}
