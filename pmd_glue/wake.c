/* SPDX-License-Identifier: BSD-3-Clause
 * The memif wake-up line (issue 23 §4): lets a droce process's fallback
 * thread sleep until its memif peer sends it a frame, not on a timer.
 *
 * DPDK 22.11's memif PMD has receive interrupts in its ring format (the
 * sender writes the ring's eventfd unless the receiver masks it) but offers
 * no rx_queue_intr_enable, masks every ring at connect, and keeps the
 * eventfds and rings in its private structures.  So droce draws its own line
 * beside the link, between two droce processes that share a memif socket:
 *
 *   - each side binds a datagram socket in the abstract namespace, named
 *     from the memif socket's path, its id and the side's role (nothing on
 *     the file system to clean up; processes in other network namespaces
 *     simply find no peer, and keep the timer);
 *   - each side maps a page of its own (a memfd) and sends it to the peer's
 *     socket (SCM_RIGHTS, a "hello"; the peer answers with its own); word 0
 *     of the page is non-zero while that side's fallback thread sleeps;
 *   - a sender that put frames on the memif ring fences, reads the peer's
 *     word, and if it is set, clears it (an exchange: one wake per sleep)
 *     and sends a one-byte datagram, which wakes the peer's poll().
 *
 * The sleeper sets its word, then looks at its rings once more (an engine
 * pass), then sleeps: one of the two sides sees the other (both fence).  A
 * peer that restarts says hello again with a new page; the old mapping is
 * kept (an engine may be reading it), one page per restart of the peer.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <rte_cycles.h>

#include "internal.h"
#include "port_struct.h"
#include "wake.h"

#define WAKE_PAGE 4096
#define HELLO_EVERY_MS 100

enum wake_msg { WAKE_HELLO = 'H', WAKE_ANSWER = 'A', WAKE_WAKE = 'W' };

/* FNV-1a over the memif socket's absolute path and the interface id. */
static uint64_t
line_hash(const struct droce_port_config *pc)
{
	char dir[PATH_MAX], tmp1[PATH_MAX], tmp2[PATH_MAX], abs[PATH_MAX * 2];
	uint64_t h = 0xcbf29ce484222325ull;
	const char *d, *b;

	snprintf(tmp1, sizeof(tmp1), "%s", pc->memif_socket);
	snprintf(tmp2, sizeof(tmp2), "%s", pc->memif_socket);
	d = dirname(tmp1);
	b = basename(tmp2);
	if (realpath(d, dir) == NULL)
		snprintf(dir, sizeof(dir), "%s", d);
	snprintf(abs, sizeof(abs), "%s/%s#%u", dir, b, pc->memif_id);
	for (const char *c = abs; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
	return h;
}

static socklen_t
abstract_addr(struct sockaddr_un *sa, uint64_t h, char role)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "droce-wake-%016llx-%c",
		     (unsigned long long)h, role);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

void
droce_wake_open(struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	struct droce_wake *w;
	struct sockaddr_un sa;
	socklen_t len;
	uint64_t h;
	char me, peer;
	void *page;

	if (pc->kind != DROCE_PORT_KIND_MEMIF)
		return;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return;
	w->fd = -1;
	w->memfd = memfd_create("droce-wake", MFD_CLOEXEC);
	if (w->memfd < 0 || ftruncate(w->memfd, WAKE_PAGE) != 0)
		goto fail;
	page = mmap(NULL, WAKE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, w->memfd, 0);
	if (page == MAP_FAILED)
		goto fail;
	w->mine = page;
	h = line_hash(pc);
	me = pc->memif_role == DROCE_MEMIF_ROLE_SERVER ? 's' : 'c';
	peer = me == 's' ? 'c' : 's';
	w->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (w->fd < 0)
		goto fail;
	len = abstract_addr(&sa, h, me);
	if (bind(w->fd, (struct sockaddr *)&sa, len) != 0) {
		PMD_LOG(DEBUG, "%s: wake line: bind: %s (a timer instead)", pc->name, strerror(errno));
		goto fail;
	}
	len = abstract_addr(&sa, h, peer);
	memcpy(w->peer_name, sa.sun_path, len - offsetof(struct sockaddr_un, sun_path));
	w->peer_len = (unsigned int)(len - offsetof(struct sockaddr_un, sun_path));
	p->wake = w;
	return;
fail:
	if (w->mine != NULL)
		munmap((void *)w->mine, WAKE_PAGE);
	if (w->memfd >= 0)
		close(w->memfd);
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}

void
droce_wake_close(struct droce_port *p)
{
	struct droce_wake *w = p->wake;

	if (w == NULL)
		return;
	p->wake = NULL;
	close(w->fd);
	close(w->memfd);
	/* the pages stay mapped: a peer's page may still be read by a burst
	 * that began before (the engines are stopped by now, but the cost is
	 * two pages per port's life) */
	free(w);
}

static void
send_to_peer(struct droce_wake *w, char type, bool with_page)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &type, .iov_len = 1 };
	struct msghdr mh = { .msg_name = &sa, .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(sa.sun_path, w->peer_name, w->peer_len);
	mh.msg_namelen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + w->peer_len);
	if (with_page) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &w->memfd, sizeof(int));
	}
	(void)sendmsg(w->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL); /* no peer (yet): nothing */
}

void
droce_wake_peer_slow(struct droce_wake *w)
{
	_Atomic uint32_t *f = atomic_load_explicit(&w->peer, memory_order_acquire);

	if (atomic_exchange(f, 0) == 0)
		return; /* another burst woke it */
	atomic_fetch_add_explicit(&w->wakes_sent, 1, memory_order_relaxed);
	send_to_peer(w, WAKE_WAKE, false);
}

bool
droce_wake_arm(struct droce_port *p)
{
	struct droce_wake *w = p->wake;

	if (w == NULL)
		return false;
	if (atomic_load_explicit(&w->peer, memory_order_acquire) == NULL) {
		uint64_t now = rte_get_tsc_cycles();

		if (now - w->hello_tsc > rte_get_tsc_hz() / 1000 * HELLO_EVERY_MS) {
			w->hello_tsc = now;
			send_to_peer(w, WAKE_HELLO, true);
		}
		return false;
	}
	atomic_store(w->mine, 1); /* seq_cst: before the sleeper's last look */
	return true;
}

void
droce_wake_disarm(struct droce_port *p)
{
	if (p->wake != NULL && atomic_load_explicit(p->wake->mine, memory_order_relaxed) != 0)
		atomic_store_explicit(p->wake->mine, 0, memory_order_relaxed);
}

void
droce_wake_drain(struct droce_port *p)
{
	struct droce_wake *w = p->wake;

	if (w == NULL)
		return;
	for (;;) {
		char type, cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { .iov_base = &type, .iov_len = 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c;
		int fd = -1;

		if (recvmsg(w->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 1)
			return;
		for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len == CMSG_LEN(sizeof(int)))
				memcpy(&fd, CMSG_DATA(c), sizeof(int));
		if (type == WAKE_WAKE) {
			atomic_fetch_add_explicit(&w->wakes_rx, 1, memory_order_relaxed);
		} else if ((type == WAKE_HELLO || type == WAKE_ANSWER) && fd >= 0) {
			void *page = mmap(NULL, WAKE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

			if (page != MAP_FAILED) {
				atomic_store_explicit(&w->peer, (_Atomic uint32_t *)page,
						      memory_order_release);
				PMD_LOG(DEBUG, "%s: wake line to the memif peer up", p->cfg->name);
			}
			if (type == WAKE_HELLO)
				send_to_peer(w, WAKE_ANSWER, true);
		}
		if (fd >= 0)
			close(fd);
	}
}

int
droce_wake_fd(const struct droce_port *p)
{
	return p->wake != NULL ? p->wake->fd : -1;
}
