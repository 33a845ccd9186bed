/* SPDX-License-Identifier: BSD-3-Clause
 * Memory windows (IBTA 10.6.7): allocation, bind, local and remote
 * invalidation, and the rkey check of remote accesses through a window.
 *
 * Semantics (as Linux rxe and IBTA):
 *  - type 1: bound and unbound (length 0) by ibv_bind_mw through any QP of
 *    its PD; usable through any QP of its PD; never invalidated by
 *    LOCAL_INV / SEND_WITH_INV.
 *  - type 2: bound by a BIND_MW WQE only while not bound; usable only through
 *    the QP it was bound through; invalidated by LOCAL_INV (any QP of its PD)
 *    or SEND_WITH_INV arriving on that QP.
 *  - bind checks: QP, window and MR in one PD; the MR has MW_BIND; a window
 *    granting remote write or atomic needs local write on the MR (C10-74);
 *    the window lies inside the MR.  Remote read needs nothing more from the
 *    MR: the window's rights are what remote peers get.
 *  - MR keys are not invalidated: droce has no fast-registration MRs, so a
 *    LOCAL_INV or SEND_WITH_INV naming an MR's key fails like a bad key.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "mw.h"

static void
mw_set_key(uintptr_t entry, uint32_t key)
{
	struct droce_mw *mw = (struct droce_mw *)(entry & ~DROCE_KEY_MW);

	mw->key = key;
	mw->b.rkey = key;
}

struct droce_mw *
droce_mw_alloc(uint32_t pd_id, unsigned int type)
{
	struct droce_mw *mw;
	uint32_t key;

	if (type != 1 && type != 2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	static_assert(_Alignof(struct droce_mw) > 1, "tag bit");
	mw->type = type;
	mw->pd_id = pd_id;
	rte_seqlock_init(&mw->lock);
	if (droce_key_publish((uintptr_t)mw | DROCE_KEY_MW, &key, mw_set_key) != 0) {
		free(mw);
		errno = ENOMEM;
		return NULL;
	}
	return mw;
}

uint32_t
droce_mw_rkey(const struct droce_mw *mw)
{
	return mw->key;
}

/* The window's MR gains or loses a bound window (lookups are RCU-safe). */
static void
mr_binds_add(uint32_t lkey, int32_t d)
{
	struct droce_mr *mr = (struct droce_mr *)(uintptr_t)droce_mr_lookup_lc(lkey);

	if (mr)
		__atomic_fetch_add(&mr->mw_binds, (uint32_t)d, __ATOMIC_RELEASE);
}

void
droce_mw_free(struct droce_mw *mw)
{
	if (mw == NULL)
		return;
	droce_key_unpublish((uintptr_t)mw | DROCE_KEY_MW, mw->key);
	/* no engine can reach it now: nothing else writes the binding */
	if (mw->b.bound)
		mr_binds_add(mw->b.mr_lkey, -1);
	free(mw);
}

static inline void
mw_read(const struct droce_mw *mw, struct droce_mw_binding *b)
{
	uint32_t sn;

	do {
		sn = rte_seqlock_read_begin(&mw->lock);
		*b = mw->b;
	} while (rte_seqlock_read_retry(&mw->lock, sn));
}

static struct droce_mw *
mw_at(uint32_t key)
{
	uintptr_t e = droce_key_entry_lc(key);

	return (e & DROCE_KEY_MW) ? (struct droce_mw *)(e & ~DROCE_KEY_MW) : NULL;
}

const struct droce_mr *
droce_mw_check_lc(const struct droce_qp *qp, const struct droce_mw *mw, uint32_t rkey, uint64_t va,
		  uint64_t len, uint32_t need)
{
	struct droce_mw_binding b;
	const struct droce_mr *mr;

	mw_read(mw, &b);
	if (!b.bound || b.rkey != rkey || mw->pd_id != qp->pd_id || (b.access & need) != need)
		return NULL;
	if (mw->type == 2 && b.qpn != qp->qpn)
		return NULL;
	if (va < b.addr || len > b.length || va - b.addr > b.length - len)
		return NULL;
	mr = droce_mr_lookup_lc(b.mr_lkey);
	if (mr == NULL || mr->pd_id != mw->pd_id)
		return NULL;
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return NULL;
	return mr;
}

static enum droce_err
mw_bind_lc(struct droce_qp *qp, const struct droce_wqe *w)
{
	struct droce_mw *mw = mw_at(w->rkey);
	uint64_t addr = w->remote_addr, len = w->compare_add;
	uint32_t access = (uint32_t)w->swap;
	const struct droce_mr *mr = NULL;
	struct droce_mw_binding old;

	if (mw == NULL || mw->pd_id != qp->pd_id || (access & ~DROCE_ACCESS_REMOTE_ANY))
		return DROCE_ERR_MW_OP;
	if (len == 0) {
		if (mw->type == 2)
			return DROCE_ERR_MW_OP; /* o10-37.2.33 */
	} else {
		mr = droce_mr_lookup_lc(w->invalidate_rkey);
		if (mr == NULL || mr->pd_id != mw->pd_id || !(mr->access & DROCE_ACCESS_MW_BIND))
			return DROCE_ERR_MW_OP;
		if ((access & (DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & DROCE_ACCESS_LOCAL_WRITE))
			return DROCE_ERR_MW_OP;
		if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
			return DROCE_ERR_MW_OP;
	}
	rte_seqlock_write_lock(&mw->lock);
	old = mw->b;
	if (mw->type == 2 && old.bound) {
		/* o10-37.2.40: a type 2 window binds only when free */
		rte_seqlock_write_unlock(&mw->lock);
		return DROCE_ERR_MW_OP;
	}
	/* type 1: the new rkey verbs_api computed; type 2: the consumer's key byte */
	mw->b.rkey = (mw->key & ~0xffu) | (w->rkey & 0xffu);
	mw->b.bound = len != 0;
	mw->b.mr_lkey = mr ? mr->lkey : 0;
	mw->b.qpn = qp->qpn;
	mw->b.access = access;
	mw->b.addr = addr;
	mw->b.length = len;
	if (mr)
		__atomic_fetch_add(&((struct droce_mr *)(uintptr_t)mr)->mw_binds, 1, __ATOMIC_RELEASE);
	rte_seqlock_write_unlock(&mw->lock);
	if (old.bound)
		mr_binds_add(old.mr_lkey, -1);
	return DROCE_ERR_NONE;
}

/* Invalidates type 2 window @rkey of the QP's PD; @remote: only if bound through @qp. */
static bool
mw_invalidate_lc(const struct droce_qp *qp, uint32_t rkey, bool remote)
{
	struct droce_mw *mw = mw_at(rkey);
	uint32_t lkey;

	if (mw == NULL || mw->type != 2 || mw->pd_id != qp->pd_id)
		return false;
	rte_seqlock_write_lock(&mw->lock);
	if (!mw->b.bound || mw->b.rkey != rkey || (remote && mw->b.qpn != qp->qpn)) {
		rte_seqlock_write_unlock(&mw->lock);
		return false;
	}
	mw->b.bound = false;
	lkey = mw->b.mr_lkey;
	rte_seqlock_write_unlock(&mw->lock);
	mr_binds_add(lkey, -1);
	return true;
}

enum droce_err
droce_mw_exec_lc(struct droce_qp *qp, const struct droce_wqe *w)
{
	if (w->opcode == DROCE_WR_BIND_MW)
		return mw_bind_lc(qp, w);
	return mw_invalidate_lc(qp, w->invalidate_rkey, false) ? DROCE_ERR_NONE : DROCE_ERR_MW_OP;
}

bool
droce_mw_remote_inv_lc(struct droce_qp *qp, uint32_t rkey)
{
	return mw_invalidate_lc(qp, rkey, true);
}
