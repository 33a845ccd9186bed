/* SPDX-License-Identifier: BSD-3-Clause
 * Helpers of the rdma_cm suites (see common.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <criterion/criterion.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "common.h"
#include "wait.h"

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

struct rcm_take {
	struct rdma_event_channel *ch;
	struct rdma_cm_event *e;
};

static bool
take_event(void *arg)
{
	struct rcm_take *t = arg;

	if (rdma_get_cm_event(t->ch, &t->e) == 0)
		return true;
	cr_assert_eq(errno, EAGAIN, "rdma_get_cm_event: %s", strerror(errno));
	return false;
}

struct rdma_cm_event *
rcm_wait_event(struct rdma_event_channel *ch, int timeout_ms)
{
	struct rcm_take t = { .ch = ch };
	int fl = fcntl(ch->fd, F_GETFL);

	if (!(fl & O_NONBLOCK))
		fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	if (tc_wait_fd(ch->fd, (unsigned int)timeout_ms, 1, take_event, &t, droce_progress))
		return t.e;
	errno = ETIMEDOUT;
	return NULL;
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

void
rcm_fini(void)
{
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
}
