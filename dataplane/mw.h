/* SPDX-License-Identifier: BSD-3-Clause
 * Memory windows and the key table they share with MRs (mr.c), engine side.
 *
 * A key table entry is a struct droce_mr *, or a struct droce_mw * with
 * DROCE_KEY_MW (bit 0) set.  A window's binding is written by the engine
 * that executes a BIND_MW / LOCAL_INV WQE or a SEND_WITH_INV, under the
 * window's seqlock; engines checking an rkey read it lock-free (retrying if a
 * bind overlapped the read).  A window names its MR by lkey, looked up again
 * on every access, so a window can never lead to a freed MR.
 */
#ifndef DROCE_MW_H
#define DROCE_MW_H

#include <rte_seqlock.h>

#include "engine.h"
#include "errors.h"

#define DROCE_KEY_MW ((uintptr_t)1)
#define DROCE_ACCESS_REMOTE_ANY \
	(DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC)

/* Key table (mr.c). */
int droce_key_publish(uintptr_t entry, uint32_t *key, void (*init)(uintptr_t entry, uint32_t key));
void droce_key_unpublish(uintptr_t entry, uint32_t key);
#define DROCE_KEY_TABLE_SIZE (1u << 16)
extern _Atomic(uintptr_t) droce_key_table[DROCE_KEY_TABLE_SIZE]; /* mr.c's, read here */

/* The entry at @key's index (0 if none); the caller compares the full key.
 * Inline: every request and WQE looks one up. */
static inline uintptr_t
droce_key_entry_lc(uint32_t key)
{
	uint32_t i = key >> 8;

	return i < DROCE_KEY_TABLE_SIZE ? atomic_load_explicit(&droce_key_table[i], memory_order_acquire)
					: 0;
}

struct droce_mw_binding {
	uint32_t rkey;     /* the window's rkey now (index << 8 | key byte) */
	uint32_t mr_lkey;  /* the MR it lies in */
	uint32_t qpn;      /* type 2: the QP it was bound through */
	uint32_t access;   /* DROCE_ACCESS_REMOTE_* */
	uint64_t addr, length;
	bool bound;
};

struct droce_mw {
	uint32_t type;     /* 1 or 2 */
	uint32_t pd_id;
	uint32_t key;      /* rkey at allocation (its index is fixed) */
	rte_seqlock_t lock;
	struct droce_mw_binding b;
};

/*
 * The MR behind window @mw for a remote access by @qp with key @rkey to
 * [va, va + len) with rights @need, or NULL: the key must be the window's
 * current rkey, the window bound, in the QP's PD (type 2: bound through this
 * QP), granting @need, covering the range; and its MR still registered.
 */
const struct droce_mr *droce_mw_check_lc(const struct droce_qp *qp, const struct droce_mw *mw,
					 uint32_t rkey, uint64_t va, uint64_t len, uint32_t need);

/* Executes a BIND_MW or LOCAL_INV WQE: DROCE_ERR_NONE or DROCE_ERR_MW_OP. */
enum droce_err droce_mw_exec_lc(struct droce_qp *qp, const struct droce_wqe *w);

/* Remote invalidation (SEND_WITH_INV received by @qp): true when @rkey named a
 * type 2 window bound through @qp, now invalidated. */
bool droce_mw_remote_inv_lc(struct droce_qp *qp, uint32_t rkey);

static inline bool
droce_mw_wr_is_local(uint8_t op)
{
	return op == DROCE_WR_BIND_MW || op == DROCE_WR_LOCAL_INV;
}

#endif /* DROCE_MW_H */
