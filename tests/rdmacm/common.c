/* SPDX-License-Identifier: BSD-3-Clause
 * Helpers of the rdma_cm suites (see common.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "common.h"
#include "tests/common/clock.h"

struct sockaddr_in
rcm_sin(const char *ip, uint16_t port)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

struct rdma_cm_event *
rcm_wait_event(struct rdma_event_channel *ch, int timeout_ms)
{
	uint64_t end = tc_now_ms() + (uint64_t)timeout_ms;
	int fl = fcntl(ch->fd, F_GETFL);

	if (!(fl & O_NONBLOCK))
		fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	for (;;) {
		struct rdma_cm_event *e;
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

		if (rdma_get_cm_event(ch, &e) == 0)
			return e;
		cr_assert_eq(errno, EAGAIN, "rdma_get_cm_event: %s", strerror(errno));
		if (tc_now_ms() > end) {
			errno = ETIMEDOUT;
			return NULL;
		}
		droce_progress();
		poll(&pfd, 1, 1);
	}
}

struct rdma_cm_event *
rcm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type, int timeout_ms, bool keep)
{
	struct rdma_cm_event *e = rcm_wait_event(ch, timeout_ms);

	cr_assert_not_null(e, "no event (wanted %s) within %d ms", rdma_event_str(type),
			   timeout_ms);
	cr_assert_eq(e->event, type, "got %s (status %d), wanted %s", rdma_event_str(e->event),
		     e->status, rdma_event_str(type));
	if (!keep) {
		rdma_ack_cm_event(e);
		return NULL;
	}
	return e;
}

int
rcm_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t end = tc_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		cr_assert_geq(n, 0);
		if (n == 1)
			return 1;
		if (tc_now_ms() > end)
			return 0;
	}
}

void
rcm_fini(void)
{
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
}
