/* SPDX-License-Identifier: BSD-3-Clause
 * Waits with a deadline that need no droce runtime (Criterion, libc and the
 * verbs' inline calls only): polling a CQ through ibv_poll_cq, and waiting
 * for an fd (an event channel, a context's async fd) to yield what a caller
 * reads from it.  Shared by env.c and by the builds that cannot link the
 * whole library (rdmacm_fakecm links the rdma_cm layer against a fake CM).
 */
#ifndef DROCE_TESTS_COMMON_WAIT_H
#define DROCE_TESTS_COMMON_WAIT_H

#include <stdbool.h>

#include <infiniband/verbs.h>

#include "clock.h"

/* Polls @cq until @n completions or @ms pass; returns how many it got. */
int tc_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int ms);
/* The next completion within @ms (asserted). */
struct ibv_wc tc_wait(struct ibv_cq *cq, unsigned int ms, const char *what);
/* Asserts that no completion arrives within @ms. */
void tc_expect_none(struct ibv_cq *cq, unsigned int ms, const char *what);

/*
 * Waits up to @nap_ms at a time (poll) for @fd to be readable, then calls
 * @take(@arg), until @take returns true or @ms pass; @fd is O_NONBLOCK
 * meanwhile (its flags are restored after).  @take reads one item from @fd
 * (false on EAGAIN; any other error is its own assertion).  Between tries
 * it calls @drive when not NULL (the co-located engines this thread owns).
 * False on timeout.
 */
bool tc_wait_fd(int fd, unsigned int ms, int nap_ms, bool (*take)(void *arg), void *arg,
		void (*drive)(void));

#endif
