/* SPDX-License-Identifier: BSD-3-Clause
 * What rc.c and rc_retx.c (RC loss recovery) share.  Engine thread only.
 */
#ifndef DROCE_DP_RC_INTERNAL_H
#define DROCE_DP_RC_INTERNAL_H

#include <stdint.h>

#include "engine.h"
#include "errors.h"

/* rc.c */
void droce_rc_rewind_lc(struct droce_qp *qp, uint32_t psn);   /* go back to resend from @psn */
void droce_rc_fail_head_lc(struct droce_qp *qp, enum droce_err err);

/* rc_retx.c: the retransmission timer */
uint64_t droce_rc_rto_attr(const struct droce_qp *qp);         /* 4.096 us * 2^timeout, cycles */
uint64_t droce_rc_rto_cycles(struct droce_qp *qp);       /* the adaptive timer */
void droce_rc_rtt_sent_lc(struct droce_qp *qp, uint32_t old_max, uint32_t next);
void droce_rc_progress_lc(struct droce_qp *qp);                /* psn_una moved on */
void droce_rc_rtt_cancel_lc(struct droce_qp *qp, uint32_t psn); /* Karn: a go-back to @psn */

/* rc_retx.c: the loss window */
#define DROCE_RC_TX_WINDOW 256 /* PSNs a requester may have unacknowledged */
uint32_t droce_rc_window(const struct droce_qp *qp);
void droce_rc_window_loss_lc(struct droce_qp *qp);

/* rc_retx.c: sequence NAK decisions */
bool droce_rc_seq_nak_due_lc(struct droce_qp *qp, uint32_t psn, bool ackreq);     /* responder */
bool droce_rc_seq_nak_fresh_lc(struct droce_qp *qp, uint32_t psn);   /* requester */
bool droce_rc_read_gap_lc(struct droce_qp *qp, struct droce_swqe *s, uint32_t expect,
			  uint32_t psn);
bool droce_rc_resp_cut_lc(struct droce_qp *qp, uint32_t psn, uint64_t va, uint32_t len);

#endif
