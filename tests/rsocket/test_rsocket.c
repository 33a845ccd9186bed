/* SPDX-License-Identifier: BSD-3-Clause
 * rsockets (issue 22 §4) in one process over the loopback pair (clients on
 * droce0 198.18.0.1, listeners on droce1 198.18.0.2): streams both ways with
 * the bytes checked, large transfers, partial reads and writes, MSG_PEEK and
 * MSG_WAITALL, non-blocking EAGAIN, rpoll and rselect over an rsocket and a
 * pipe, half and full shutdown, a peer closing mid-transfer, names, options,
 * riomap + riowrite landing bytes in the peer's buffer, errnos of bad calls,
 * rdma_cm requests that are not an rsocket's refused.
 * Blocking calls in two threads rely on droce's fallback progress thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <droce/droce.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "dataplane/dp.h"
#include "clock.h"
#include "env.h"

#define SRV_IP "198.18.0.2"
#define CLI_IP "198.18.0.1"

static void
fini(void)
{
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
}

TestSuite(rsocket, .fini = fini, .timeout = 120);

static struct sockaddr_in
sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

static int
listener(uint16_t port)
{
	struct sockaddr_in a = sin_of(SRV_IP, port);
	int one = 1, l = rsocket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(l, 0, "rsocket: %s", strerror(errno));
	cr_assert_eq(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	cr_assert_eq(rbind(l, (struct sockaddr *)&a, sizeof(a)), 0, "rbind: %s", strerror(errno));
	cr_assert_eq(rlisten(l, 8), 0, "rlisten: %s", strerror(errno));
	return l;
}

struct conn_arg {
	uint16_t port;
	int fd, rc, err;
	int iomap_size;
};

static void *
connect_thread(void *arg)
{
	struct conn_arg *c = arg;
	struct sockaddr_in a = sin_of(SRV_IP, c->port);

	c->fd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0) {
		c->rc = -1;
		c->err = errno;
		return NULL;
	}
	if (c->iomap_size)
		rsetsockopt(c->fd, SOL_RDMA, RDMA_IOMAPSIZE, &c->iomap_size, sizeof(int));
	c->rc = rconnect(c->fd, (struct sockaddr *)&a, sizeof(a));
	c->err = errno;
	return NULL;
}

/* A connected pair: *cli the active end, *srv the accepted one. */
static void
pair_iomap(uint16_t port, int *cli, int *srv, int iomap_size)
{
	struct conn_arg c = { .port = port, .iomap_size = iomap_size };
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	pthread_t t;
	int l = listener(port);

	if (iomap_size)
		cr_assert_eq(rsetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &iomap_size, sizeof(int)), 0);
	cr_assert_eq(pthread_create(&t, NULL, connect_thread, &c), 0);
	*srv = raccept(l, (struct sockaddr *)&peer, &plen);
	cr_assert_geq(*srv, 0, "raccept: %s", strerror(errno));
	pthread_join(t, NULL);
	cr_assert_eq(c.rc, 0, "rconnect: %s", strerror(c.err));
	*cli = c.fd;
	cr_assert_eq(plen, sizeof(peer));
	cr_assert_eq(peer.sin_family, AF_INET);
	cr_assert_eq(peer.sin_addr.s_addr, sin_of(CLI_IP, 0).sin_addr.s_addr);
	cr_assert_eq(rclose(l), 0);
}

static void
pair(uint16_t port, int *cli, int *srv)
{
	pair_iomap(port, cli, srv, 0);
}

/* ---- moving bytes in a thread ---- */

struct xfer {
	int fd;
	uint8_t *buf;
	size_t len, done;
	size_t chunk;        /* per call; 0: all */
	int flags;
	ssize_t last;
	int err;
};

static void *
send_all(void *arg)
{
	struct xfer *x = arg;

	while (x->done < x->len) {
		size_t n = x->len - x->done;

		if (x->chunk && n > x->chunk)
			n = x->chunk;
		x->last = rsend(x->fd, x->buf + x->done, n, x->flags);
		if (x->last <= 0) {
			x->err = errno;
			break;
		}
		x->done += (size_t)x->last;
	}
	return NULL;
}

static void *
recv_all(void *arg)
{
	struct xfer *x = arg;

	while (x->done < x->len) {
		size_t n = x->len - x->done;

		if (x->chunk && n > x->chunk)
			n = x->chunk;
		x->last = rrecv(x->fd, x->buf + x->done, n, x->flags);
		if (x->last <= 0) {
			x->err = errno;
			break;
		}
		x->done += (size_t)x->last;
	}
	return NULL;
}

/* @len bytes from @from to @to, sent by a thread in @schunk calls, read here in
 * @rchunk calls, every byte checked. */
static void
stream(int from, int to, size_t len, size_t schunk, size_t rchunk, uint32_t seed)
{
	struct xfer s = { .fd = from, .len = len, .chunk = schunk };
	struct xfer r = { .fd = to, .len = len, .chunk = rchunk };
	pthread_t t;
	long d;

	s.buf = malloc(len);
	r.buf = calloc(1, len);
	cr_assert(s.buf && r.buf);
	tc_fill(s.buf, len, seed);
	cr_assert_eq(pthread_create(&t, NULL, send_all, &s), 0);
	recv_all(&r);
	pthread_join(t, NULL);
	cr_assert_eq(s.done, len, "sent %zu of %zu (%s)", s.done, len, strerror(s.err));
	cr_assert_eq(r.done, len, "received %zu of %zu (last %zd, %s)", r.done, len, r.last,
		     strerror(r.err));
	d = tc_first_diff(r.buf, len, seed);
	cr_assert_eq(d, -1, "byte %ld differs", d);
	free(s.buf);
	free(r.buf);
}

/* ---- tests ---- */

Test(rsocket, stream_both_ways_and_names)
{
	struct sockaddr_in a;
	socklen_t alen;
	int c, s;

	pair(7101, &c, &s);
	stream(c, s, 100000, 0, 0, 1);
	stream(s, c, 100000, 0, 0, 2);
	stream(c, s, 3, 0, 0, 3);

	alen = sizeof(a);
	cr_assert_eq(rgetsockname(c, (struct sockaddr *)&a, &alen), 0);
	cr_assert_eq(alen, sizeof(a));
	cr_assert_eq(a.sin_addr.s_addr, sin_of(CLI_IP, 0).sin_addr.s_addr);
	cr_assert_neq(a.sin_port, 0);
	alen = sizeof(a);
	cr_assert_eq(rgetpeername(c, (struct sockaddr *)&a, &alen), 0);
	cr_assert_eq(a.sin_addr.s_addr, sin_of(SRV_IP, 0).sin_addr.s_addr);
	cr_assert_eq(ntohs(a.sin_port), 7101);
	alen = sizeof(a);
	cr_assert_eq(rgetsockname(s, (struct sockaddr *)&a, &alen), 0);
	cr_assert_eq(a.sin_addr.s_addr, sin_of(SRV_IP, 0).sin_addr.s_addr);
	cr_assert_eq(ntohs(a.sin_port), 7101);
	alen = sizeof(a);
	cr_assert_eq(rgetpeername(s, (struct sockaddr *)&a, &alen), 0);
	cr_assert_eq(a.sin_addr.s_addr, sin_of(CLI_IP, 0).sin_addr.s_addr);
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(s), 0);
}

Test(rsocket, large_transfers)
{
	int c, s;

	pair(7102, &c, &s);
	/* 16 MiB: the 64 KiB receive halves recycled 256 times */
	stream(c, s, 16u << 20, 0, 0, 11);
	/* odd sizes both ways through the send ring's wrap */
	stream(s, c, 5u << 20, 77777, 33333, 12);
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(s), 0);
}

Test(rsocket, partial_reads_peek_waitall_and_vectors)
{
	uint8_t out[10000], in[10000], peek[16];
	struct iovec iov[3];
	struct msghdr mh;
	int c, s;
	ssize_t n;

	pair(7103, &c, &s);
	tc_fill(out, sizeof(out), 21);
	cr_assert_eq(rsend(c, out, sizeof(out), 0), (ssize_t)sizeof(out));
	/* peek does not consume */
	n = rrecv(s, peek, sizeof(peek), MSG_PEEK | MSG_WAITALL);
	cr_assert_eq(n, (ssize_t)sizeof(peek));
	cr_assert_arr_eq(peek, out, sizeof(peek));
	/* 7-byte reads, then a vector read, then WAITALL for the rest */
	for (size_t off = 0; off < 700; off += 7)
		cr_assert_eq(rread(s, in + off, 7), 7);
	iov[0] = (struct iovec){ .iov_base = in + 700, .iov_len = 100 };
	iov[1] = (struct iovec){ .iov_base = in + 800, .iov_len = 1 };
	iov[2] = (struct iovec){ .iov_base = in + 801, .iov_len = 199 };
	cr_assert_eq(rreadv(s, iov, 3), 300);
	memset(&mh, 0, sizeof(mh));
	iov[0] = (struct iovec){ .iov_base = in + 1000, .iov_len = 4000 };
	iov[1] = (struct iovec){ .iov_base = in + 5000, .iov_len = 5000 };
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	cr_assert_eq(rrecvmsg(s, &mh, MSG_WAITALL), 9000);
	cr_assert_arr_eq(in, out, sizeof(out));

	/* gathered writes: rwritev and rsendmsg */
	iov[0] = (struct iovec){ .iov_base = out, .iov_len = 3 };
	iov[1] = (struct iovec){ .iov_base = out + 3, .iov_len = 4997 };
	cr_assert_eq(rwritev(s, iov, 2), 5000);
	mh.msg_iov = iov;
	iov[0] = (struct iovec){ .iov_base = out + 5000, .iov_len = 5000 };
	mh.msg_iovlen = 1;
	cr_assert_eq(rsendmsg(s, &mh, 0), 5000);
	memset(in, 0, sizeof(in));
	cr_assert_eq(rrecv(c, in, sizeof(in), MSG_WAITALL), (ssize_t)sizeof(in));
	cr_assert_arr_eq(in, out, sizeof(out));
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(s), 0);
}

Test(rsocket, nonblocking_eagain_and_partial_writes)
{
	size_t cap = 8u << 20, sent = 0;
	uint8_t *out = malloc(cap), *in = calloc(1, cap);
	struct xfer r;
	int c, s, fl;
	ssize_t n;

	cr_assert(out && in);
	pair(7104, &c, &s);
	fl = rfcntl(c, F_GETFL);
	cr_assert_eq(fl & O_NONBLOCK, 0);
	cr_assert_eq(rfcntl(c, F_SETFL, fl | O_NONBLOCK), 0);
	cr_assert_neq(rfcntl(c, F_GETFL) & O_NONBLOCK, 0);

	errno = 0;
	cr_assert_eq(rrecv(c, in, 10, 0), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %d", errno);
	errno = 0;
	cr_assert_eq(rrecv(s, in, 10, MSG_DONTWAIT), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %d", errno);

	/* the peer reads nothing: writes fill its buffer, come back short, then EAGAIN */
	tc_fill(out, cap, 31);
	for (int i = 0; i < 1000 && sent < cap; i++) {
		n = rsend(c, out + sent, cap - sent, 0);
		if (n < 0) {
			cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %s", strerror(errno));
			break;
		}
		cr_assert_gt(n, 0);
		sent += (size_t)n;
	}
	cr_assert_gt(sent, 0);
	cr_assert_lt(sent, cap, "a peer that reads nothing took all %zu bytes", sent);

	/* now the peer reads everything; the rest goes with blocking sends */
	r = (struct xfer){ .fd = s, .buf = in, .len = cap };
	{
		pthread_t t;

		cr_assert_eq(pthread_create(&t, NULL, recv_all, &r), 0);
		cr_assert_eq(rfcntl(c, F_SETFL, fl), 0);
		while (sent < cap) {
			n = rsend(c, out + sent, cap - sent, 0);
			cr_assert_gt(n, 0, "rsend: %s", strerror(errno));
			sent += (size_t)n;
		}
		pthread_join(t, NULL);
	}
	cr_assert_eq(r.done, cap);
	cr_assert_eq(tc_first_diff(in, cap, 31), -1);
	free(out);
	free(in);
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(s), 0);
}

Test(rsocket, rpoll_rsocket_and_pipe)
{
	struct pollfd p[2];
	int pfd[2], c, s;
	uint8_t b = 0x5a, got = 0;
	uint64_t t0;

	pair(7105, &c, &s);
	cr_assert_eq(pipe(pfd), 0);
	p[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = pfd[0], .events = POLLIN };

	t0 = tc_now_ms();
	cr_assert_eq(rpoll(p, 2, 150), 0);
	cr_assert_geq(tc_now_ms() - t0, 140);

	cr_assert_eq(write(pfd[1], &b, 1), 1);
	cr_assert_eq(rpoll(p, 2, 1000), 1);
	cr_assert_eq(p[0].revents, 0);
	cr_assert_eq(p[1].revents, POLLIN);
	cr_assert_eq(read(pfd[0], &got, 1), 1);

	cr_assert_eq(rsend(c, &b, 1, 0), 1);
	cr_assert_eq(rpoll(p, 2, 5000), 1);
	cr_assert_eq(p[0].revents, POLLIN);
	cr_assert_eq(p[1].revents, 0);
	cr_assert_eq(rrecv(s, &got, 1, 0), 1);
	cr_assert_eq(got, b);

	/* writable at once; a blocked rpoll woken by data arriving */
	p[0].events = POLLOUT;
	cr_assert_eq(rpoll(p, 1, 0), 1);
	cr_assert_eq(p[0].revents, POLLOUT);
	{
		struct xfer x = { .fd = c, .buf = &b, .len = 1 };
		pthread_t t;

		p[0].events = POLLIN;
		cr_assert_eq(pthread_create(&t, NULL, send_all, &x), 0);
		cr_assert_eq(rpoll(p, 2, 10000), 1);
		cr_assert_eq(p[0].revents, POLLIN);
		pthread_join(t, NULL);
	}
	cr_assert_eq(rrecv(s, &got, 1, 0), 1);

	/* rselect over both */
	{
		fd_set rd;
		struct timeval tv = { .tv_sec = 5 };
		int maxfd = (s > pfd[0] ? s : pfd[0]) + 1;

		FD_ZERO(&rd);
		FD_SET(s, &rd);
		FD_SET(pfd[0], &rd);
		cr_assert_eq(rsend(c, &b, 1, 0), 1);
		cr_assert_eq(rselect(maxfd, &rd, NULL, NULL, &tv), 1);
		cr_assert(FD_ISSET(s, &rd));
		cr_assert(!FD_ISSET(pfd[0], &rd));
	}
	close(pfd[0]);
	close(pfd[1]);
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(s), 0);
}

Test(rsocket, half_close_then_close)
{
	uint8_t out[5000], in[5000];
	struct pollfd p;
	int c, s;

	pair(7106, &c, &s);
	tc_fill(out, sizeof(out), 41);
	cr_assert_eq(rsend(c, out, sizeof(out), 0), (ssize_t)sizeof(out));
	cr_assert_eq(rshutdown(c, SHUT_WR), 0);
	errno = 0;
	cr_assert_eq(rsend(c, out, 1, 0), -1);
	cr_assert_eq(errno, EPIPE);
	/* the server reads the data, then EOF */
	cr_assert_eq(rrecv(s, in, sizeof(in), MSG_WAITALL), (ssize_t)sizeof(in));
	cr_assert_arr_eq(in, out, sizeof(in));
	cr_assert_eq(rrecv(s, in, sizeof(in), 0), 0);
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	cr_assert_eq(rpoll(&p, 1, 1000), 1);
	cr_assert(p.revents & POLLIN);
	/* the other direction still works */
	cr_assert_eq(rsend(s, out, sizeof(out), 0), (ssize_t)sizeof(out));
	memset(in, 0, sizeof(in));
	cr_assert_eq(rrecv(c, in, sizeof(in), MSG_WAITALL), (ssize_t)sizeof(in));
	cr_assert_arr_eq(in, out, sizeof(in));
	/* the server closes: the client sees EOF, then a closed connection */
	cr_assert_eq(rclose(s), 0);
	cr_assert_eq(rrecv(c, in, sizeof(in), 0), 0);
	p = (struct pollfd){ .fd = c, .events = POLLIN };
	cr_assert_eq(rpoll(&p, 1, 5000), 1);
	cr_assert(p.revents & (POLLIN | POLLHUP));
	errno = 0;
	cr_assert_eq(rsend(c, out, 1, 0), -1);
	cr_assert(errno == ECONNRESET || errno == EPIPE, "errno %s", strerror(errno));
	cr_assert_eq(rclose(c), 0);
}

Test(rsocket, peer_close_mid_transfer)
{
	size_t len = 64u << 20;
	struct xfer x;
	uint8_t buf[4096];
	pthread_t t;
	int c, s;
	size_t got = 0;

	pair(7107, &c, &s);
	x = (struct xfer){ .fd = c, .buf = malloc(len), .len = len };
	cr_assert(x.buf);
	memset(x.buf, 0xab, len);
	cr_assert_eq(pthread_create(&t, NULL, send_all, &x), 0);
	/* read a little, then close with the sender mid-stream */
	while (got < (256u << 10)) {
		ssize_t n = rrecv(s, buf, sizeof(buf), 0);

		cr_assert_gt(n, 0);
		got += (size_t)n;
	}
	cr_assert_eq(rclose(s), 0);
	pthread_join(t, NULL); /* the sender must come back (the suite's timeout) */
	cr_assert_lt(x.done, len);
	cr_assert_eq(x.last, -1);
	cr_assert(x.err == ECONNRESET || x.err == EPIPE, "sender's errno %s", strerror(x.err));
	cr_assert_eq(rrecv(c, buf, sizeof(buf), 0), 0);
	free(x.buf);
	cr_assert_eq(rclose(c), 0);
}

Test(rsocket, options)
{
	int c, s, v, l;
	socklen_t vl;
	struct linger lg;

	l = rsocket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(l, 0);
	v = 32768;
	cr_assert_eq(rsetsockopt(l, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), 0);
	cr_assert_eq(rsetsockopt(l, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)), 0);
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(l, SOL_SOCKET, SO_RCVBUF, &v, &vl), 0);
	cr_assert_eq(v, 65536); /* doubled, as the kernel's */
	cr_assert_eq(vl, sizeof(int));
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(l, SOL_SOCKET, SO_SNDBUF, &v, &vl), 0);
	cr_assert_eq(v, 65536);
	v = 1;
	cr_assert_eq(rsetsockopt(l, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), 0);
	v = 0;
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(l, IPPROTO_TCP, TCP_NODELAY, &v, &vl), 0);
	cr_assert_eq(v, 1);
	v = 100;
	cr_assert_eq(rsetsockopt(l, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), 0);
	v = 0;
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(l, SOL_RDMA, RDMA_SQSIZE, &v, &vl), 0);
	cr_assert_eq(v, 100);
	v = 32;
	cr_assert_eq(rsetsockopt(l, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)), 0);
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(l, SOL_RDMA, RDMA_INLINE, &v, &vl), 0);
	cr_assert_eq(v, 32);
	v = 4;
	cr_assert_eq(rsetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)), 0);
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &v, &vl), 0);
	cr_assert_eq(v, 4);
	vl = sizeof(lg);
	cr_assert_eq(rgetsockopt(l, SOL_SOCKET, SO_LINGER, &lg, &vl), 0);
	cr_assert_eq(lg.l_onoff, 1);
	/* unknown options and short buffers */
	errno = 0;
	cr_assert_eq(rsetsockopt(l, SOL_SOCKET, SO_BROADCAST, &v, sizeof(v)), -1);
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_eq(rsetsockopt(l, SOL_SOCKET, SO_RCVBUF, &v, 1), -1);
	cr_assert_eq(errno, EINVAL);
	vl = 1;
	errno = 0;
	cr_assert_eq(rgetsockopt(l, SOL_SOCKET, SO_RCVBUF, &v, &vl), -1);
	cr_assert_eq(errno, EINVAL);
	/* bad descriptors */
	errno = 0;
	cr_assert_eq(rsend(12345, &v, 1, 0), -1);
	cr_assert_eq(errno, EBADF);
	errno = 0;
	cr_assert_eq(rclose(-1), -1);
	cr_assert_eq(errno, EBADF);
	errno = 0;
	cr_assert_eq(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	cr_assert_eq(errno, ENOTSUP);
	/* an unconnected socket */
	errno = 0;
	cr_assert_eq(rrecv(l, &v, 1, 0), -1);
	cr_assert_eq(errno, ENOTCONN);
	cr_assert_eq(rclose(l), 0);

	/* an accepted socket inherits the listener's sizes; SO_KEEPALIVE runs */
	pair(7108, &c, &s);
	v = 1;
	cr_assert_eq(rsetsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), 0);
	v = 1;
	cr_assert_eq(rsetsockopt(c, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)), 0);
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &v, &vl), 0);
	cr_assert_eq(v, 1);
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(c, IPPROTO_TCP, TCP_KEEPIDLE, &v, &vl), 0);
	cr_assert_eq(v, 1);
	/* SOL_RDMA sizes are fixed once connected */
	errno = 0;
	cr_assert_eq(rsetsockopt(c, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), -1);
	cr_assert_eq(errno, EINVAL);
	vl = sizeof(v);
	cr_assert_eq(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &v, &vl), 0);
	cr_assert_eq(v, 0);
	{
		struct tcp_info ti;

		vl = sizeof(ti);
		cr_assert_eq(rgetsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &vl), 0);
		cr_assert_eq(ti.tcpi_state, TCP_ESTABLISHED);
	}
	/* keepalives every second for 2.5 s; the connection still carries data */
	usleep(2500 * 1000);
	stream(c, s, 10000, 0, 0, 51);
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(s), 0);
}

Test(rsocket, riomap_riowrite_lands_in_peer_buffer)
{
	size_t len = 256u << 10;
	uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *src = malloc(len), b = 1;
	uint64_t t0;
	int c, s;
	off_t off;

	cr_assert(map != MAP_FAILED && src);
	pair_iomap(7109, &c, &s, 4);
	off = riomap(s, map, len, PROT_WRITE, 0, 0);
	cr_assert_eq(off, 0, "riomap: %s", strerror(errno));
	/* the iomap entry goes with the server's next send */
	cr_assert_eq(rsend(s, &b, 1, 0), 1);
	cr_assert_eq(rrecv(c, &b, 1, 0), 1);

	tc_fill(src, len, 61);
	cr_assert_eq(riowrite(c, src, len, 0, 0), len);
	t0 = tc_now_ms();
	while (tc_first_diff(map, len, 61) != -1 && tc_now_ms() - t0 < 10000)
		usleep(1000);
	cr_assert_eq(tc_first_diff(map, len, 61), -1);
	/* at an offset inside the mapping, and past its end: nothing written */
	memset(src, 0xee, 100);
	cr_assert_eq(riowrite(c, src, 100, 1000, 0), 100);
	t0 = tc_now_ms();
	while (map[1099] != 0xee && tc_now_ms() - t0 < 10000)
		usleep(1000);
	cr_assert_eq(map[1000], 0xee);
	cr_assert_eq(map[1099], 0xee);
	cr_assert_neq(map[1100], 0xee);
	errno = 0;
	cr_assert_eq(riowrite(c, src, 10, (off_t)len, 0), (size_t)-1);
	cr_assert_eq(errno, EINVAL);

	cr_assert_eq(riounmap(s, map, len), 0);
	errno = 0;
	cr_assert_eq(riounmap(s, map, len), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(s), 0);
	munmap(map, len);
	free(src);
}

Test(rsocket, connect_refused_and_nonblocking_connect)
{
	struct sockaddr_in a = sin_of(SRV_IP, 7199);
	struct pollfd p;
	int fd = rsocket(AF_INET, SOCK_STREAM, 0), l, s, v;
	socklen_t vl = sizeof(v);

	cr_assert_geq(fd, 0);
	errno = 0;
	cr_assert_eq(rconnect(fd, (struct sockaddr *)&a, sizeof(a)), -1);
	cr_assert_eq(errno, ECONNREFUSED, "errno %s", strerror(errno));
	cr_assert_eq(rclose(fd), 0);

	/* non-blocking: EINPROGRESS, then POLLOUT, SO_ERROR 0, raccept */
	l = listener(7110);
	fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert_geq(fd, 0);
	a = sin_of(SRV_IP, 7110);
	errno = 0;
	cr_assert_eq(rconnect(fd, (struct sockaddr *)&a, sizeof(a)), -1);
	cr_assert_eq(errno, EINPROGRESS);
	/* rpoll on the connecting socket drives its connection on */
	{
		struct pollfd pp[2] = { { .fd = l, .events = POLLIN }, { .fd = fd, .events = POLLOUT } };
		uint64_t t0 = tc_now_ms();

		while (!(pp[0].revents & POLLIN) && tc_now_ms() - t0 < 10000)
			cr_assert_geq(rpoll(pp, 2, 1000), 0);
		cr_assert(pp[0].revents & POLLIN, "no request on the listener");
	}
	s = raccept(l, NULL, NULL);
	cr_assert_geq(s, 0, "raccept: %s", strerror(errno));
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	cr_assert_eq(rpoll(&p, 1, 10000), 1);
	cr_assert_eq(p.revents, POLLOUT);
	cr_assert_eq(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &vl), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(rfcntl(fd, F_SETFL, 0), 0); /* stream() blocks */
	stream(fd, s, 70000, 0, 0, 71);
	/* a non-blocking listener with nothing pending */
	cr_assert_eq(rfcntl(l, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(raccept(l, NULL, NULL), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(rclose(fd), 0);
	cr_assert_eq(rclose(s), 0);
	cr_assert_eq(rclose(l), 0);
}

/* A request that is not an rsocket's (private data too short, or version 2)
 * is refused, and raccept goes on to the next one. */
struct bad_arg {
	uint16_t port;
	int rc_short, err_short, rc_v2, err_v2;
	struct conn_arg good;
};

static int
cm_connect_with(uint16_t port, const void *pdata, uint8_t plen, int *err)
{
	struct sockaddr_in a = sin_of(SRV_IP, port);
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param p;
	struct rdma_cm_id *id;
	int rc;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000) != 0 ||
	    rdma_resolve_route(id, 2000) != 0) {
		*err = errno;
		return -2;
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa) != 0) {
		*err = errno;
		return -3;
	}
	memset(&p, 0, sizeof(p));
	p.private_data = pdata;
	p.private_data_len = plen;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	rc = rdma_connect(id, &p);
	*err = errno;
	if (rc == 0)
		rdma_disconnect(id);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return rc;
}

static void *
bad_then_good(void *arg)
{
	struct bad_arg *b = arg;
	uint8_t v2[40] = { 2 };

	b->rc_short = cm_connect_with(b->port, "rsocket?", 8, &b->err_short);
	b->rc_v2 = cm_connect_with(b->port, v2, sizeof(v2), &b->err_v2);
	connect_thread(&b->good);
	return NULL;
}

Test(rsocket, foreign_requests_refused)
{
	struct bad_arg b = { .port = 7111, .good = { .port = 7111 } };
	pthread_t t;
	int l = listener(7111), s;

	cr_assert_eq(pthread_create(&t, NULL, bad_then_good, &b), 0);
	s = raccept(l, NULL, NULL);
	cr_assert_geq(s, 0, "raccept: %s", strerror(errno));
	pthread_join(t, NULL);
	cr_assert_eq(b.rc_short, -1, "short private data: rdma_connect %d", b.rc_short);
	cr_assert_eq(b.rc_v2, -1, "version 2: rdma_connect %d", b.rc_v2);
	cr_assert_eq(b.good.rc, 0, "rconnect after them: %s", strerror(b.good.err));
	stream(b.good.fd, s, 5000, 0, 0, 81);
	cr_assert_eq(rclose(b.good.fd), 0);
	cr_assert_eq(rclose(s), 0);
	cr_assert_eq(rclose(l), 0);
}
