/* SPDX-License-Identifier: BSD-3-Clause
 * XRC SRQ numbers and the target side's receive queue selection.
 *
 * The numbers: a table of DROCE_XRC_MAX_SRQ entries (number = index + 1),
 * each a pointer to an immutable entry {SRQ, XRC domain, PD, CQ}.  Publish
 * and unpublish run on application threads under a mutex; engines load the
 * pointer with acquire and never keep the entry past their pass.  Unpublish
 * clears the pointer, waits for a quiescent point of every engine
 * (droce_dp_synchronize), and only then looks at the SRQ's holders: a
 * target that took the SRQ during a pass attached to it before that pass
 * ended, so the count is exact.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"
#include "srq.h"
#include "xrc.h"

#define DROCE_XRC_MAX_SRQ 65536u

struct xrc_entry {
	struct droce_srq *srq;
	struct droce_cq *cq;
	uint32_t xrcd, pd_id;
};

static struct xrc_entry *_Atomic table[DROCE_XRC_MAX_SRQ];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_free; /* where the search for a free number starts */

int
droce_xrc_srq_publish(struct droce_srq *srq, uint32_t xrcd, uint32_t pd_id, struct droce_cq *cq,
		      uint32_t *srqn)
{
	struct xrc_entry *e = malloc(sizeof(*e));

	if (e == NULL || srq == NULL || cq == NULL) {
		free(e);
		return e == NULL ? ENOMEM : EINVAL;
	}
	*e = (struct xrc_entry){ .srq = srq, .cq = cq, .xrcd = xrcd, .pd_id = pd_id };
	pthread_mutex_lock(&table_lock);
	for (uint32_t n = 0; n < DROCE_XRC_MAX_SRQ; n++) {
		uint32_t i = (next_free + n) % DROCE_XRC_MAX_SRQ;

		if (atomic_load_explicit(&table[i], memory_order_relaxed) == NULL) {
			atomic_store_explicit(&table[i], e, memory_order_release);
			next_free = (i + 1) % DROCE_XRC_MAX_SRQ; /* numbers are not reused at once */
			pthread_mutex_unlock(&table_lock);
			*srqn = i + 1;
			return 0;
		}
	}
	pthread_mutex_unlock(&table_lock);
	free(e);
	return ENOMEM;
}

int
droce_xrc_srq_unpublish(uint32_t srqn)
{
	struct xrc_entry *e;
	uint32_t i = srqn - 1;

	if (srqn == 0 || i >= DROCE_XRC_MAX_SRQ)
		return EINVAL;
	pthread_mutex_lock(&table_lock);
	e = atomic_exchange_explicit(&table[i], NULL, memory_order_acq_rel);
	if (e == NULL) {
		pthread_mutex_unlock(&table_lock);
		return EINVAL;
	}
	droce_dp_synchronize(); /* no engine still holds e */
	if (droce_srq_in_use(e->srq)) {
		atomic_store_explicit(&table[i], e, memory_order_release);
		pthread_mutex_unlock(&table_lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&table_lock);
	free(e);
	return 0;
}

static const struct xrc_entry *
lookup_lc(uint32_t srqn)
{
	uint32_t i = srqn - 1;

	if (srqn == 0 || i >= DROCE_XRC_MAX_SRQ)
		return NULL;
	return atomic_load_explicit(&table[i], memory_order_acquire);
}

enum droce_xrc_sel
droce_xrc_tgt_select_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame,
			bool dup)
{
	const struct droce_xrceth *x = droce_pkt_hdr(p, frame, DROCE_HDR_XRCETH);
	const struct xrc_entry *e = lookup_lc(droce_xrceth_srqn(x));

	if (e == NULL || e->xrcd != qp->xrcd) {
		qp->stats.xrc_srq_naks++;
		return DROCE_XRC_SEL_INVALID;
	}
	if (e->srq == qp->srq)
		return DROCE_XRC_SEL_OK;
	/* a WQE taken from the current SRQ completes where it came from */
	if (qp->rq_head != qp->rq_avail) {
		if (!dup) {
			qp->stats.xrc_srq_naks++; /* a new message inside an open one */
			return DROCE_XRC_SEL_INVALID;
		}
		/* a duplicate is re-ACKed or re-read: only the PD matters */
		return e->pd_id == qp->pd_id ? DROCE_XRC_SEL_OK : DROCE_XRC_SEL_BUSY;
	}
	/* queued READ responses were checked under the current PD and are
	 * checked again when they go out: the PD changes once they are sent */
	if (e->pd_id != qp->pd_id && qp->rd_resp_count != 0)
		return DROCE_XRC_SEL_BUSY;
	if (qp->srq != NULL)
		droce_srq_detach(qp->srq);
	droce_srq_attach(e->srq);
	qp->srq = e->srq;
	qp->rcq = e->cq;
	qp->pd_id = e->pd_id;
	return DROCE_XRC_SEL_OK;
}

void
droce_xrc_tgt_release(struct droce_qp *qp)
{
	if (qp->xrc_role == DROCE_XRC_TGT && qp->srq != NULL) {
		droce_srq_detach(qp->srq);
		qp->srq = NULL;
	}
}
