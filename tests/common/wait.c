/* SPDX-License-Identifier: BSD-3-Clause
 * Waits with a deadline, no droce runtime (see wait.h).
 */
#include <fcntl.h>
#include <poll.h>

#include <criterion/criterion.h>

#include "wait.h"

int
tc_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int ms)
{
	uint64_t end = tc_now_ms() + ms;
	int got = 0;

	while (got < n) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		cr_assert_geq(k, 0);
		got += k;
		if (k == 0 && tc_now_ms() > end)
			break;
	}
	return got;
}

struct ibv_wc
tc_wait(struct ibv_cq *cq, unsigned int ms, const char *what)
{
	struct ibv_wc wc;

	cr_assert_eq(tc_poll(cq, &wc, 1, ms), 1, "%s: no completion within %u ms", what, ms);
	return wc;
}

void
tc_expect_none(struct ibv_cq *cq, unsigned int ms, const char *what)
{
	struct ibv_wc wc;

	cr_assert_eq(tc_poll(cq, &wc, 1, ms), 0, "%s: unexpected completion (wr_id %llu status %d)",
		     what, (unsigned long long)wc.wr_id, wc.status);
}

bool
tc_wait_fd(int fd, unsigned int ms, int nap_ms, bool (*take)(void *arg), void *arg,
	   void (*drive)(void))
{
	uint64_t end = tc_now_ms() + ms;
	int fl = fcntl(fd, F_GETFL);
	bool got;

	cr_assert_geq(fl, 0, "fcntl(%d)", fd);
	if (!(fl & O_NONBLOCK))
		cr_assert_eq(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		/* @take only when @fd is readable: it may have side effects */
		got = poll(&p, 1, nap_ms) == 1 && take(arg);
		if (got || tc_now_ms() > end)
			break;
		if (drive != NULL)
			drive();
	}
	if (!(fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl);
	return got;
}
