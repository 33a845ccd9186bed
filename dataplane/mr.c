/* SPDX-License-Identifier: BSD-3-Clause
 * Memory keys.  A key is (table index << 8 | 8-bit tag); the tag changes on
 * every reuse of an index so a stale key misses.  Engines read the table
 * without locks; unregistering waits for every engine to pass a quiescent
 * point (DPDK RCU QSBR) before the caller may free the region.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"
#include "internal.h"

#define KEY_TABLE_SIZE (1u << 16)

static _Atomic(struct droce_mr *) key_table[KEY_TABLE_SIZE];
static uint8_t key_tag[KEY_TABLE_SIZE];
static uint32_t key_hint = 1;
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

int
droce_mr_register(struct droce_mr *mr)
{
	pthread_mutex_lock(&key_lock);
	for (uint32_t n = 0; n < KEY_TABLE_SIZE; n++) {
		uint32_t i = (key_hint + n) % KEY_TABLE_SIZE;

		if (i == 0 || atomic_load_explicit(&key_table[i], memory_order_relaxed))
			continue;
		key_tag[i]++;
		mr->lkey = mr->rkey = i << 8 | key_tag[i];
		atomic_store_explicit(&key_table[i], mr, memory_order_release);
		key_hint = i + 1;
		pthread_mutex_unlock(&key_lock);
		return 0;
	}
	pthread_mutex_unlock(&key_lock);
	errno = ENOMEM;
	return -1;
}

void
droce_mr_unregister(struct droce_mr *mr)
{
	uint32_t i = mr->lkey >> 8;

	if (i == 0 || i >= KEY_TABLE_SIZE)
		return;
	pthread_mutex_lock(&key_lock);
	if (atomic_load_explicit(&key_table[i], memory_order_relaxed) == mr)
		atomic_store_explicit(&key_table[i], NULL, memory_order_release);
	pthread_mutex_unlock(&key_lock);
	droce_dp_synchronize();
}

const struct droce_mr *
droce_mr_lookup_lc(uint32_t key)
{
	uint32_t i = key >> 8;
	const struct droce_mr *mr;

	if (i >= KEY_TABLE_SIZE)
		return NULL;
	mr = atomic_load_explicit(&key_table[i], memory_order_acquire);
	if (mr == NULL || mr->lkey != key)
		return NULL;
	return mr;
}
