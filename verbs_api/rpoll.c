/* SPDX-License-Identifier: BSD-3-Clause
 * rpoll and rselect: poll() over rsockets and ordinary descriptors together.
 *
 * An rsocket's readiness is its protocol state (data queued, room to send,
 * a request waiting, shut down), not its descriptor's: rpoll looks at every
 * rsocket (and polls the ordinary fds with timeout 0) and, when nothing is
 * ready and the caller waits, arms each rsocket's CQ and blocks in one
 * poll() on the rsockets' CQ and CM channels and the ordinary fds, at most
 * WAIT_SLICE_MS at a time, then looks again.  rdma-core's rping, udaddy and
 * ucmatose poll ordinary fds only through it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "dataplane/dp.h"
#include "rsocket.h"

#define WAIT_SLICE_MS 200
/* Look again without blocking this long first (rdma-core's polling_time). */
#define SPIN_US 10

/* An rsocket's revents for @events (lock held). */
static short
rs_revents(struct droce_rs *rs, short events)
{
	short rev = 0;

	if (rs->state == DROCE_RS_LISTENING) {
		struct pollfd p = { .fd = rs->cmch->fd, .events = POLLIN };

		if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN))
			rev |= events & POLLIN;
		return rev;
	}
	droce_rs_cm_progress(rs);
	droce_rs_progress(rs);
	switch (rs->state) {
	case DROCE_RS_CONNECTED:
		if ((events & POLLIN) && (droce_rs_have_rdata(rs) || !rs->rd_open))
			rev |= POLLIN;
		if ((events & POLLOUT) && (droce_rs_can_send(rs) || !rs->wr_open))
			rev |= POLLOUT;
		break;
	case DROCE_RS_DISCONNECTED:
		/* as TCP after the peer's FIN: readable (data, then EOF); hung up once
		 * nothing is left to read (rdma-core says POLLHUP at once, which makes
		 * a reader polling for its last bytes miss them) */
		rev |= (short)(events & (POLLIN | POLLOUT));
		if (!droce_rs_have_rdata(rs))
			rev |= POLLHUP;
		break;
	case DROCE_RS_ERROR:
		rev |= (short)(events & (POLLIN | POLLOUT)) | POLLERR | POLLHUP;
		break;
	case DROCE_RS_CONNECT_ERROR:
		rev |= (short)(events & (POLLIN | POLLOUT)) | POLLERR;
		break;
	case DROCE_RS_INIT:
	case DROCE_RS_BOUND:
		rev |= POLLHUP; /* as an unconnected TCP socket */
		break;
	default:
		break; /* opening */
	}
	return rev;
}

static int
check_all(struct pollfd *fds, nfds_t nfds)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct droce_rs *rs = droce_rs_lookup(fds[i].fd);

		fds[i].revents = 0;
		if (rs) {
			pthread_mutex_lock(&rs->lock);
			fds[i].revents = rs_revents(rs, fds[i].events);
			pthread_mutex_unlock(&rs->lock);
		} else if (fds[i].fd >= 0) {
			poll(&fds[i], 1, 0);
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t
now_ms(void)
{
	return now_us() / 1000u;
}

/* A cancelled rpoll (poll is a cancellation point) frees its wait set. */
static void
free_wait_set(void *w)
{
	free(*(struct pollfd **)w);
}

int
rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *w = NULL;
	uint64_t start = now_ms(), spin_end = now_us() + SPIN_US;
	int ret;

	if (fds == NULL && nfds)
		return droce_rs_errno(EFAULT);
	pthread_cleanup_push(free_wait_set, &w);
	for (;;) {
		nfds_t n = 0;
		int slice;

		ret = check_all(fds, nfds);
		if (ret || timeout == 0)
			break;
		if (now_us() < spin_end)
			continue;
		if (timeout > 0 && now_ms() - start >= (uint64_t)timeout)
			break;
		if (w == NULL && (w = calloc(nfds * 2 + 1, sizeof(*w))) == NULL) {
			ret = droce_rs_errno(ENOMEM);
			break;
		}
		/* arm, look once more, then wait on what can wake us */
		for (nfds_t i = 0; i < nfds; i++) {
			struct droce_rs *rs = droce_rs_lookup(fds[i].fd);

			if (rs == NULL) {
				w[n].fd = fds[i].fd;
				w[n++].events = fds[i].events;
				continue;
			}
			pthread_mutex_lock(&rs->lock);
			droce_rs_arm(rs);
			fds[i].revents = rs_revents(rs, fds[i].events);
			if (rs->cq) {
				w[n].fd = rs->cqch->fd;
				w[n++].events = POLLIN;
			}
			w[n].fd = rs->cmch->fd;
			w[n++].events = POLLIN;
			pthread_mutex_unlock(&rs->lock);
			if (fds[i].revents)
				ret++;
		}
		if (ret)
			break;
		slice = WAIT_SLICE_MS;
		if (timeout > 0) {
			uint64_t left = (uint64_t)timeout - (now_ms() - start);

			if (left < (uint64_t)slice)
				slice = (int)left;
		}
		droce_engines_blocking();
		if (poll(w, n, slice) < 0 && errno != EINTR) {
			ret = -1;
			break;
		}
		for (nfds_t i = 0; i < nfds; i++) {
			struct droce_rs *rs = droce_rs_lookup(fds[i].fd);

			if (rs == NULL)
				continue;
			pthread_mutex_lock(&rs->lock);
			if (rs->cq)
				droce_rs_take_cq_event(rs);
			pthread_mutex_unlock(&rs->lock);
		}
	}
	pthread_cleanup_pop(0);
	free(w);
	return ret;
}

int
rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *fds;
	int n = 0, ret, to;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return droce_rs_errno(EINVAL);
	fds = calloc((size_t)nfds + 1, sizeof(*fds));
	if (fds == NULL)
		return droce_rs_errno(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			ev |= POLLPRI;
		if (ev) {
			fds[n].fd = fd;
			fds[n++].events = ev;
		}
	}
	to = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
	ret = rpoll(fds, (nfds_t)n, to);
	if (ret < 0) {
		free(fds);
		return ret;
	}
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	ret = 0;
	for (int i = 0; i < n; i++) {
		short r = fds[i].revents;
		int hit = 0;

		if (readfds && (r & (POLLIN | POLLHUP | POLLERR)) && (fds[i].events & POLLIN)) {
			FD_SET(fds[i].fd, readfds);
			hit++;
		}
		if (writefds && (r & (POLLOUT | POLLERR)) && (fds[i].events & POLLOUT)) {
			FD_SET(fds[i].fd, writefds);
			hit++;
		}
		if (exceptfds && (r & POLLPRI) && (fds[i].events & POLLPRI)) {
			FD_SET(fds[i].fd, exceptfds);
			hit++;
		}
		ret += hit;
	}
	free(fds);
	return ret;
}
