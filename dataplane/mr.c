/* SPDX-License-Identifier: BSD-3-Clause
 * Memory keys.  A key is (table index << 8 | 8-bit tag); the tag changes on
 * every reuse of an index so a stale key misses.  Engines read the table
 * without locks; unregistering waits for every engine to pass a quiescent
 * point (DPDK RCU QSBR), and for every frame pointing into the region
 * (zero-copy transmit) to be freed, before the caller may free it.  Memory
 * windows (mw.c) take their keys from the same table.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdatomic.h>

#include "engine.h"
#include "internal.h"
#include "mw.h"

#define KEY_TABLE_SIZE DROCE_KEY_TABLE_SIZE

/* An entry is a struct droce_mr *, or a struct droce_mw * with bit 0 set (mw.c). */
_Atomic(uintptr_t) droce_key_table[KEY_TABLE_SIZE];
static uint8_t key_tag[KEY_TABLE_SIZE];
static uint32_t key_hint = 1;
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

/* Gives @entry a free index; its first key (index << 8 | fresh tag) in *@key.
 * @init(entry, key) runs before the entry is published.  0 or -1 (ENOMEM). */
int
droce_key_publish(uintptr_t entry, uint32_t *key, void (*init)(uintptr_t entry, uint32_t key))
{
	pthread_mutex_lock(&key_lock);
	for (uint32_t n = 0; n < KEY_TABLE_SIZE; n++) {
		uint32_t i = (key_hint + n) % KEY_TABLE_SIZE;

		if (i == 0 || atomic_load_explicit(&droce_key_table[i], memory_order_relaxed))
			continue;
		key_tag[i]++;
		*key = i << 8 | key_tag[i];
		if (init)
			init(entry, *key);
		atomic_store_explicit(&droce_key_table[i], entry, memory_order_release);
		key_hint = i + 1;
		pthread_mutex_unlock(&key_lock);
		return 0;
	}
	pthread_mutex_unlock(&key_lock);
	errno = ENOMEM;
	return -1;
}

/* Unpublishes @entry at the index of @key and waits until no engine can see it. */
void
droce_key_unpublish(uintptr_t entry, uint32_t key)
{
	uint32_t i = key >> 8;

	if (i == 0 || i >= KEY_TABLE_SIZE)
		return;
	pthread_mutex_lock(&key_lock);
	if (atomic_load_explicit(&droce_key_table[i], memory_order_relaxed) == entry)
		atomic_store_explicit(&droce_key_table[i], 0, memory_order_release);
	pthread_mutex_unlock(&key_lock);
	droce_dp_synchronize();
}

static void
mr_set_keys(uintptr_t entry, uint32_t key)
{
	struct droce_mr *mr = (struct droce_mr *)entry;

	mr->lkey = mr->rkey = key;
}

int
droce_mr_register(struct droce_mr *mr)
{
	uint32_t key;

	return droce_key_publish((uintptr_t)mr, &key, mr_set_keys) == 0 ? 0 : ENOMEM;
}

unsigned int droce_mr_drain_ms = DROCE_MR_DRAIN_MS;

/* Waits until no frame points into @mr's memory any more (zero-copy
 * transmit), driving co-located engines: 0, or EBUSY after droce_mr_drain_ms. */
int
droce_mr_drain(struct droce_mr *mr)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (__atomic_load_n(&mr->zc_refs, __ATOMIC_ACQUIRE) != 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    (long)droce_mr_drain_ms)
			return EBUSY;
		droce_engines_progress();
		sched_yield();
	}
	return 0;
}

int
droce_mr_unregister(struct droce_mr *mr)
{
	droce_key_unpublish((uintptr_t)mr, mr->lkey);
	/* no engine takes a new reference now (they find no key); the frames
	 * already built let go when a port or the receiving engine frees them */
	return droce_mr_drain(mr);
}

int
droce_mr_replace(struct droce_mr *mr, struct droce_mr *next)
{
	uint32_t i = mr->lkey >> 8, binds;

	if (i == 0 || i >= KEY_TABLE_SIZE)
		return EINVAL;
	next->lkey = mr->lkey;
	next->rkey = mr->rkey;
	next->zc_refs = 0;
	pthread_mutex_lock(&key_lock);
	if (atomic_load_explicit(&droce_key_table[i], memory_order_relaxed) != (uintptr_t)mr) {
		pthread_mutex_unlock(&key_lock);
		return EINVAL;
	}
	binds = __atomic_load_n(&mr->mw_binds, __ATOMIC_ACQUIRE);
	next->mw_binds = binds;
	/* one store: an engine finds either the whole old MR or the whole new one */
	atomic_store_explicit(&droce_key_table[i], (uintptr_t)next, memory_order_release);
	pthread_mutex_unlock(&key_lock);
	droce_dp_synchronize();
	/* window binds an engine counted on the old MR after the copy above
	 * (engines find the new one since the grace period) */
	__atomic_fetch_add(&next->mw_binds, __atomic_load_n(&mr->mw_binds, __ATOMIC_ACQUIRE) - binds,
			   __ATOMIC_RELEASE);
	return droce_mr_drain(mr);
}

const struct droce_mr *
droce_mr_lookup_lc(uint32_t key)
{
	uintptr_t e = droce_key_entry_lc(key);
	const struct droce_mr *mr = (const struct droce_mr *)e;

	if (e == 0 || (e & DROCE_KEY_MW) || mr->lkey != key)
		return NULL;
	return mr;
}
