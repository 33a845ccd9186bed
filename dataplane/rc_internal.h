/* SPDX-License-Identifier: BSD-3-Clause
 * What the RC transport's files share: rc.c (entry points), rc_req.c,
 * rc_comp.c, rc_resp.c and rc_retx.c (loss recovery).  Engine thread only.
 */
#ifndef DROCE_DP_RC_INTERNAL_H
#define DROCE_DP_RC_INTERNAL_H

#include <stdint.h>

#include "engine.h"
#include "errors.h"
#include "qp_internal.h"
#include "xport.h"

/* rc_req.c */
void droce_rc_rewind_lc(struct droce_qp *qp, uint32_t psn);   /* go back to resend from @psn */
void droce_rc_fail_head_lc(struct droce_qp *qp, enum droce_err err);

/* rc_retx.c: the retransmission timer */
uint64_t droce_rc_rto_attr_set(struct droce_qp *qp);
/* T = 4.096 us * 2^timeout in cycles: computed (a double product) only when
 * the timeout attribute is not the one cached (the engine's TSC rate does
 * not change) */
static inline uint64_t
droce_rc_rto_attr(struct droce_qp *qp)
{
	if (likely(qp->rto_attr_key == qp->attr.timeout + 1u))
		return qp->rto_attr_cyc;
	return droce_rc_rto_attr_set(qp);
}
/* How much of an engine pause of @shift cycles still is not waiting time in
 * the current retry period (counted in qp->pause_excused, at most T). */
uint64_t droce_rc_pause_excuse_lc(struct droce_qp *qp, uint64_t shift);
uint64_t droce_rc_rto_cycles(struct droce_qp *qp);       /* the adaptive timer */
void droce_rc_rtt_sent_lc(struct droce_qp *qp, uint32_t old_max, uint32_t next);
void droce_rc_progress_lc(struct droce_qp *qp);                /* psn_una moved on */
void droce_rc_rtt_cancel_lc(struct droce_qp *qp, uint32_t psn); /* Karn: a go-back to @psn */

/* rc_retx.c: the loss window */
#define DROCE_RC_TX_WINDOW 256 /* PSNs a requester may have unacknowledged */
/* The loss window: PSNs the requester may have unacknowledged now */
static inline uint32_t
droce_rc_window(const struct droce_qp *qp)
{
	return qp->cwnd ? qp->cwnd : DROCE_RC_TX_WINDOW;
}
void droce_rc_window_loss_lc(struct droce_qp *qp);

/* rc_retx.c: sequence NAK decisions */
bool droce_rc_seq_nak_due_lc(struct droce_qp *qp, uint32_t psn, bool ackreq);     /* responder */
bool droce_rc_seq_nak_fresh_lc(struct droce_qp *qp, uint32_t psn);   /* requester */
bool droce_rc_read_gap_lc(struct droce_qp *qp, struct droce_swqe *s, uint32_t expect,
			  uint32_t psn);
bool droce_rc_resp_cut_lc(struct droce_qp *qp, uint32_t psn, uint64_t va, uint32_t len, bool cut);

/* rc_read.c: READ responses kept past a hole, missing ranges asked again */
#define DROCE_RC_RDMAP_BITS 1024 /* READ response PSNs past psn_una a QP can place */
enum droce_rc_place {
	DROCE_RC_PLACE_OK,   /* placed */
	DROCE_RC_PLACE_DUP,  /* had it already */
	DROCE_RC_PLACE_DROP, /* cannot keep it (beyond the map's reach): asked again later */
	DROCE_RC_PLACE_BAD,  /* not the length or opcode its place requires */
	DROCE_RC_PLACE_PROT, /* the scatter failed (an lkey went away) */
};
enum droce_rc_place droce_rc_read_place_lc(struct droce_qp *qp, const struct droce_wqe *w,
					   struct droce_swqe *s, const struct droce_pkt *p,
					   const uint8_t *frame, uint32_t psn);
unsigned int droce_rc_read_ask_lc(struct droce_qp *qp, const struct droce_wqe *w,
				  struct droce_swqe *s, bool *whole);
/* droce_rc_read_ask_lc for a READ just started (wqe_start's state) while the
 * QP has no map (nothing placed past a hole: none of its responses is):
 * the one request for all of it; false without an mbuf (*whole false). */
bool droce_rc_read_ask_fresh_lc(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s);
void droce_rc_sr_read_repair_lc(struct droce_qp *qp, const struct droce_wqe *w,
				struct droce_swqe *s, uint32_t lim, bool again);
void droce_rc_rdmap_reset_lc(struct droce_qp *qp);
void droce_rc_rdmap_free(struct droce_qp *qp);

/* rc_sr.c: selective repeat between droce ends (negotiated by a BTH hint) */
#define DROCE_RC_SR_WIN 256   /* requests past a hole a responder keeps, per QP: the requester's window */
void droce_rc_sr_config(bool on);
void droce_rc_sr_peer_seen_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame);
bool droce_rc_sr_hold_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p,
			 uint32_t psn);
void droce_rc_sr_drain_lc(struct droce_qp *qp);
void droce_rc_sr_release_lc(struct droce_qp *qp);
void droce_rc_sr_free(struct droce_qp *qp);
bool droce_rc_sr_resend_lc(struct droce_qp *qp, uint32_t psn, bool timeout);
void droce_rc_resp_nak_gap_lc(struct droce_qp *qp, uint32_t hi);   /* rc_resp.c */

/* ---- shared by rc_req.c, rc_comp.c and rc_resp.c ---- */

static inline bool
wr_is_read(uint8_t op)
{
	return op == DROCE_WR_RDMA_READ;
}

static inline bool
wr_is_atomic(uint8_t op)
{
	return op == DROCE_WR_ATOMIC_CMP_AND_SWP || op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* memory checks and packets: xport.h's shared helpers, RC's destination */
static inline const struct droce_mr *
mr_check(const struct droce_qp *qp, uint32_t key, uint64_t va, uint64_t len, uint32_t need)
{
	return droce_xport_mr_check_lc(qp, key, va, len, need);
}

static inline bool
scatter(const struct droce_qp *qp, const struct droce_sge *sges, unsigned int nsge, uint32_t off,
	const uint8_t *src, uint32_t len)
{
	return droce_xport_scatter_lc(qp, sges, nsge, off, src, len);
}

static inline struct rte_mbuf *
pkt_alloc(struct droce_qp *qp, struct droce_pkt_fields *f, uint32_t plen, uint8_t **payload)
{
	f->dqpn = qp->attr.dest_qpn;
	return droce_xport_pkt_alloc_lc(qp, f, plen, payload);
}

static inline void
pkt_send(struct droce_qp *qp, struct rte_mbuf *m, uint32_t plen)
{
	droce_xport_pkt_send_lc(qp, m, plen);
}

/* The retransmission timer (rc_retx.c: adaptive, within the timeout attribute). */
static inline void
rearm_rto(struct droce_qp *qp)
{
	if (qp->attr.timeout != 0 && qp->psn_una != qp->psn_next)
		qp->rto_deadline = qp->eng->now + droce_rc_rto_cycles(qp);
	else if (qp->psn_una == qp->psn_next)
		qp->rto_deadline = 0;
}

/* The oldest WQE fails with @err; the QP then goes where the error table says. */
static inline void
fail_head(struct droce_qp *qp, enum droce_err err)
{
	droce_qp_fail_send_lc(qp, err);
}

/* the three parts, as the entry points (rc.c) call them: the state
 * machines' entry points (rc_sm.h) */

#endif
