/* SPDX-License-Identifier: BSD-3-Clause
 * The seed man pages' client and server (rdma_post_send / rdma_post_recv /
 * rdma_post_write, plus rdma_post_read), written as plain librdmacm code with
 * synchronous ids from rdma_create_ep: used in two threads of one process
 * (test_conn.c) and in two processes over memif (test_memif.c).  They report
 * failures on stderr and return the failing line (0 = all good), so they
 * also run outside a Criterion worker.
 */
#ifndef DROCE_TESTS_RDMACM_SEED_H
#define DROCE_TESTS_RDMACM_SEED_H

#include <semaphore.h>

/* Serves one connection on @addr:@port; posts @ready once listening (may be NULL). */
int rcm_seed_server(const char *addr, const char *port, sem_t *ready);
/* Connects to @addr:@port and runs the exchange; the client disconnects first. */
int rcm_seed_client(const char *addr, const char *port);

#endif
