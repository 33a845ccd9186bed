/* SPDX-License-Identifier: BSD-3-Clause
 * Helpers of the rdma_cm suites: addresses of the loopback pair, waiting
 * for an event on an async channel with a bound, and the droce runtime's
 * teardown (CQ polls: wait.h's tc_poll).  Single-threaded helpers unless
 * said otherwise.
 */
#ifndef DROCE_TESTS_RDMACM_COMMON_H
#define DROCE_TESTS_RDMACM_COMMON_H

#include <netinet/in.h>
#include <stdbool.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "wait.h" /* tc_poll, tc_wait, tc_now_ms */

#define RCM_ADDR0 "198.18.0.1"
#define RCM_ADDR1 "198.18.0.2"

/* A sockaddr_in for @ip (dotted) and @port (host order). */
struct sockaddr_in rcm_sin(const char *ip, uint16_t port);

/*
 * The next event on @ch within @timeout_ms, or NULL (errno ETIMEDOUT).
 * @ch's fd is switched to O_NONBLOCK.  While it waits it drives the
 * co-located engines, as an application polling its CQs would.
 */
struct rdma_cm_event *rcm_wait_event(struct rdma_event_channel *ch, int timeout_ms);

/* Waits for an event of @type (others fail the test); acks it unless @keep. */
struct rdma_cm_event *rcm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
				 int timeout_ms, bool keep);

/* Stops the runtime at the end of a test process. */
void rcm_fini(void);

#endif
