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
 *     of the page is non-zero while that side sleeps: DROCE_WAKE_ANY for
 *     any frame, DROCE_WAKE_ASKED for a frame that asks something of it
 *     (not an ACK, READ response, atomic ACK or CNP: a fallback thread
 *     whose program waits for no event, but may spin on its memory);
 *   - a sender that put frames on the memif ring fences, reads the peer's
 *     word, and if it is set (and, for ASKED, a frame of the burst asks),
 *     clears it (an exchange: one wake per sleep) and sends a one-byte
 *     datagram, which wakes the peer's poll().
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
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "internal.h"
#include "port_struct.h"
#include "wake.h"

#define WAKE_PAGE 4096
#define HELLO_EVERY_MS 100
#define DROCE_WAKE_ROCE_PORT 4791 /* RoCEv2's UDP port (IBTA Annex A17) */

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

/* BTH opcodes that only answer (droce_wake_set_answers), one bit each */
static uint64_t answers[4];

void
droce_wake_set_answers(const uint64_t bits[4])
{
	memcpy(answers, bits, sizeof(answers));
}

/* Whether frame @m asks something of its receiver: anything but a RoCEv2
 * frame (UDP to 4791 over IPv4 or IPv6, VLAN tagged or not) whose BTH
 * opcode only answers. */
static bool
frame_asks(const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_udp_hdr *udp;
	uint32_t len = rte_pktmbuf_data_len(m), off = sizeof(*eh);
	uint16_t et;
	uint8_t opcode;

	if (len < off)
		return true;
	et = eh->ether_type;
	if (et == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN)) {
		const struct rte_vlan_hdr *vh = (const struct rte_vlan_hdr *)(eh + 1);

		if (len < off + sizeof(*vh))
			return true;
		et = vh->eth_proto;
		off += sizeof(*vh);
	}
	if (et == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, off);

		if (len < off + sizeof(*ip) || ip->next_proto_id != IPPROTO_UDP)
			return true;
		off += rte_ipv4_hdr_len(ip);
	} else if (et == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
		const struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, off);

		if (len < off + sizeof(*ip) || ip->proto != IPPROTO_UDP)
			return true;
		off += sizeof(*ip);
	} else {
		return true;
	}
	if (len < off + sizeof(*udp) + sizeof(opcode))
		return true;
	udp = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *, off);
	if (udp->dst_port != rte_cpu_to_be_16(DROCE_WAKE_ROCE_PORT))
		return true;
	opcode = *(const uint8_t *)(udp + 1); /* the BTH's first byte */
	return ((answers[opcode >> 6] >> (opcode & 63)) & 1) == 0;
}

enum droce_wake_verdict
droce_wake_look_slow(struct rte_mbuf *const *pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		if (frame_asks(pkts[i]))
			return DROCE_WAKE_ASKS;
	return DROCE_WAKE_ANSWERS;
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
droce_wake_arm(struct droce_port *p, enum droce_wake_for why)
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
	atomic_store(w->mine, (uint32_t)why); /* seq_cst: before the sleeper's last look */
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
