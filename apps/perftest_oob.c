/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's out-of-band TCP exchange; the protocol is described in
 * perftest_oob.h.
 */
#include "perftest_oob.h"

#include "perftest_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define oob_err(c, ...) pt_fail((c)->err, sizeof((c)->err), __VA_ARGS__)

void
pt_oob_init(struct pt_oob *c, bool client, int timeout_ms, pt_idle_fn idle, void *arg)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->client = client;
	c->timeout_ms = timeout_ms;
	c->idle = idle;
	c->idle_arg = arg;
}

void
pt_oob_attach(struct pt_oob *c, int fd)
{
	c->fd = fd;
}

void
pt_oob_attach_msg(struct pt_oob *c, const struct pt_msg_ops *ops, void *arg)
{
	c->msg = ops;
	c->msg_arg = arg;
}

void
pt_oob_close(struct pt_oob *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Waits for @events on @fd, running the idle callback between short polls.
 * With a callback the kernel is asked once per IDLE_POLL_MS of spinning, not
 * once per few callbacks: a droce-perf server spends a whole bandwidth run
 * here, driving its engine, and a poll() every 64 passes took about a tenth of
 * its CPU (a system call costs a microsecond in this VM); the exchange it
 * waits for comes at the end of the run.  1 ready, 0 timed out, -1 error. */
#define IDLE_POLL_MS 1
static int
wait_fd(struct pt_oob *c, int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int rc = poll(&pfd, 1, c->idle ? 0 : 10);
		int64_t now = pt_now_ms();

		if (rc > 0)
			return 1;
		if (rc < 0 && errno != EINTR)
			return -1;
		if (deadline >= 0 && now > deadline)
			return 0;
		if (c->idle) {
			/* spin the engines a while before asking the kernel again */
			do {
				for (int i = 0; i < 64; i++)
					c->idle(c->idle_arg);
			} while (pt_now_ms() - now < IDLE_POLL_MS);
		}
	}
}

static int64_t
deadline_of(const struct pt_oob *c)
{
	return c->timeout_ms > 0 ? pt_now_ms() + c->timeout_ms : -1;
}

static int
write_all(struct pt_oob *c, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	int64_t dl = deadline_of(c);

	while (n > 0) {
		ssize_t k;
		int w = wait_fd(c, c->fd, POLLOUT, dl);

		if (w <= 0)
			return oob_err(c, w == 0 ? "timed out sending to the peer" :
				       "poll: %s", strerror(errno));
		k = send(c->fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			return oob_err(c, "send: %s", k < 0 ? strerror(errno) : "closed");
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int
read_all(struct pt_oob *c, void *buf, size_t n)
{
	uint8_t *p = buf;
	int64_t dl = deadline_of(c);

	while (n > 0) {
		ssize_t k;
		int w = wait_fd(c, c->fd, POLLIN, dl);

		if (w <= 0)
			return oob_err(c, w == 0 ? "timed out waiting for the peer" :
				       "poll: %s", strerror(errno));
		k = recv(c->fd, p, n, 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k == 0)
			return oob_err(c, "the peer closed the connection");
		if (k < 0)
			return oob_err(c, "recv: %s", strerror(errno));
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int
pt_xchg(struct pt_oob *c, const void *mine, void *theirs, size_t n)
{
	if (c->msg != NULL) {
		/* perftest's ctx_xchg_data_rdma: the client sends first */
		int rc;

		if (c->client)
			rc = c->msg->send(c->msg_arg, mine, n, c->timeout_ms, c->err, sizeof(c->err)) ||
			     c->msg->recv(c->msg_arg, theirs, n, c->timeout_ms, c->err, sizeof(c->err));
		else
			rc = c->msg->recv(c->msg_arg, theirs, n, c->timeout_ms, c->err, sizeof(c->err)) ||
			     c->msg->send(c->msg_arg, mine, n, c->timeout_ms, c->err, sizeof(c->err));
		return rc ? -1 : 0;
	}
	if (c->client)
		return write_all(c, mine, n) || read_all(c, theirs, n) ? -1 : 0;
	return read_all(c, theirs, n) || write_all(c, mine, n) ? -1 : 0;
}

/* ---- connection ---- */

static int
resolve(struct pt_oob *c, const char *host, int port, bool passive, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	char svc[16];
	int rc;

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	snprintf(svc, sizeof(svc), "%d", port);
	rc = getaddrinfo(host, svc, &hints, res);
	if (rc != 0)
		return oob_err(c, "%s:%d: %s", host ? host : "*", port, gai_strerror(rc));
	return 0;
}

int
pt_oob_listen_accept(struct pt_oob *c, const char *bind_addr, int port)
{
	struct addrinfo *res;
	int one = 1, lfd, fd, w;

	if (resolve(c, bind_addr, port, true, &res) != 0)
		return -1;
	lfd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	if (lfd < 0) {
		freeaddrinfo(res);
		return oob_err(c, "socket: %s", strerror(errno));
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, res->ai_addr, res->ai_addrlen) != 0 || listen(lfd, 1) != 0) {
		int e = errno;

		freeaddrinfo(res);
		close(lfd);
		return oob_err(c, "listen on %s:%d: %s", bind_addr ? bind_addr : "*", port,
			       strerror(e));
	}
	freeaddrinfo(res);
	w = wait_fd(c, lfd, POLLIN, deadline_of(c));
	if (w <= 0) {
		close(lfd);
		return oob_err(c, w == 0 ? "no client connected to port %d in time" :
			       "poll on port %d failed", port);
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);
	if (fd < 0)
		return oob_err(c, "accept: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	return 0;
}

int
pt_oob_connect(struct pt_oob *c, const char *host, int port)
{
	int64_t dl = deadline_of(c);
	struct addrinfo *res;
	int one = 1;

	if (resolve(c, host, port, false, &res) != 0)
		return -1;
	for (;;) {
		int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);

		if (fd < 0) {
			freeaddrinfo(res);
			return oob_err(c, "socket: %s", strerror(errno));
		}
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			c->fd = fd;
			freeaddrinfo(res);
			return 0;
		}
		close(fd);
		if (errno != ECONNREFUSED && errno != EINTR && errno != ETIMEDOUT) {
			int e = errno;

			freeaddrinfo(res);
			return oob_err(c, "connect to %s:%d: %s", host, port, strerror(e));
		}
		if (dl >= 0 && pt_now_ms() > dl) {
			freeaddrinfo(res);
			return oob_err(c, "no server at %s:%d", host, port);
		}
		/* the server is not listening yet: keep the engines going, retry */
		for (int64_t until = pt_now_ms() + 50; pt_now_ms() < until;)
			if (c->idle)
				c->idle(c->idle_arg);
			else
				usleep(10000);
	}
}

/* ---- the exchanges ---- */

int
pt_xchg_version(struct pt_oob *c, const char *version)
{
	char mine[PT_VERSION_LEN] = { 0 }, theirs[PT_VERSION_LEN];
	size_t vl = strlen(version);

	if (vl + 1 + sizeof(PT_DROCE_MARK) > sizeof(mine))
		return oob_err(c, "version string too long");
	memcpy(mine, version, vl);
	memcpy(mine + vl + 1, PT_DROCE_MARK, sizeof(PT_DROCE_MARK));
	if (pt_xchg(c, mine, theirs, sizeof(mine)) != 0)
		return -1;
	memcpy(c->rem_version, theirs, PT_VERSION_LEN);
	c->rem_version[PT_VERSION_LEN] = '\0';
	c->rem_ver = atof(c->rem_version);
	{
		size_t rl = strnlen(theirs, sizeof(theirs));

		c->peer_droce = rl + 1 + sizeof(PT_DROCE_MARK) <= sizeof(theirs) &&
				memcmp(theirs + rl + 1, PT_DROCE_MARK, sizeof(PT_DROCE_MARK)) == 0;
	}
	return 0;
}

int
pt_xchg_sys_data(struct pt_oob *c, int cycle_buffer, int cache_line, int *cycle_out,
		 int *cache_line_out)
{
	uint32_t m, r;

	*cycle_out = cycle_buffer;
	*cache_line_out = cache_line;
	if (!(c->rem_ver >= 5.32))
		return 0;
	m = htonl((uint32_t)cycle_buffer);
	if (pt_xchg(c, &m, &r, 4) != 0)
		return -1;
	if ((int)ntohl(r) > cycle_buffer)
		*cycle_out = (int)ntohl(r);
	m = htonl((uint32_t)cache_line);
	if (pt_xchg(c, &m, &r, 4) != 0)
		return -1;
	if ((int)ntohl(r) > cache_line)
		*cache_line_out = (int)ntohl(r);
	return 0;
}

int
pt_xchg_mtu(struct pt_oob *c, int mtu, int *agreed)
{
	char mine[4] = { 0 }, theirs[5] = { 0 };
	size_t n;
	long rem;

	*agreed = mtu;
	if (!(c->rem_ver >= 5.1))
		return 0;
	n = c->rem_ver >= 5.31 ? 2 : 4;
	snprintf(mine, sizeof(mine), "%d", mtu);
	if (pt_xchg(c, mine, theirs, n) != 0)
		return -1;
	rem = strtol(theirs, NULL, 10);
	if (rem >= 1 && rem <= 5 && rem < mtu)
		*agreed = (int)rem;
	return 0;
}

void
pt_key_format(const struct pt_dest *d, char out[PT_KEY_MSG_LEN])
{
	char tmp[PT_KEY_MSG_LEN + 16];
	int n;

	n = snprintf(tmp, sizeof(tmp), "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":", d->lid & 0xffff,
		     d->out_reads & 0xffff, d->qpn & 0xffffff, d->psn & 0xffffff, d->rkey, d->vaddr);
	for (int i = 0; i < 16; i++)
		n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%02x:", d->gid[i]);
	snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%08x:", d->srqn);
	memset(out, 0, PT_KEY_MSG_LEN);
	memcpy(out, tmp, strnlen(tmp, PT_KEY_MSG_LEN - 1));
}

/* The next ':'-terminated hex field of at most @max digits. */
static int
hex_field(const char **p, const char *end, unsigned int max, uint64_t *v)
{
	const char *s = *p;
	unsigned int n = 0;

	*v = 0;
	while (s < end && *s != ':') {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -1;
		*v = (*v << 4) | (uint64_t)d;
		if (++n > max)
			return -1;
		s++;
	}
	if (s >= end || n == 0)
		return -1;
	*p = s + 1;
	return 0;
}

int
pt_key_parse(const char in[PT_KEY_MSG_LEN], struct pt_dest *d)
{
	const char *p = in, *end = in + strnlen(in, PT_KEY_MSG_LEN);
	uint64_t v[6], g;

	static const unsigned int width[6] = { 4, 4, 6, 6, 8, 16 };

	memset(d, 0, sizeof(*d));
	for (int i = 0; i < 6; i++)
		if (hex_field(&p, end, width[i], &v[i]) != 0)
			return -1;
	d->lid = (uint32_t)v[0];
	d->out_reads = (uint32_t)v[1];
	d->qpn = (uint32_t)v[2];
	d->psn = (uint32_t)v[3];
	d->rkey = (uint32_t)v[4];
	d->vaddr = v[5];
	for (int i = 0; i < 16; i++) {
		if (hex_field(&p, end, 2, &g) != 0)
			return -1;
		d->gid[i] = (uint8_t)g;
	}
	/* the SRQ number: perftest always sends it; tolerate its absence */
	if (p < end) {
		if (hex_field(&p, end, 8, &g) != 0)
			return -1;
		d->srqn = (uint32_t)g;
	}
	return 0;
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t
get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void
pt_key_bin_format(const struct pt_dest *d, uint8_t out[PT_KEY_BIN_LEN])
{
	memset(out, 0, PT_KEY_BIN_LEN);
	put_be32(out + 0, d->lid);
	put_be32(out + 4, d->out_reads);
	put_be32(out + 8, d->qpn);
	put_be32(out + 12, d->psn);
	put_be32(out + 16, d->rkey);
	put_be32(out + 24, (uint32_t)(d->vaddr >> 32));
	put_be32(out + 28, (uint32_t)d->vaddr);
	memcpy(out + 32, d->gid, 16);
	put_be32(out + 48, d->srqn);
	put_be32(out + 52, 0); /* gid_index: perftest does not read it back */
}

void
pt_key_bin_parse(const uint8_t in[PT_KEY_BIN_LEN], struct pt_dest *d)
{
	memset(d, 0, sizeof(*d));
	d->lid = get_be32(in + 0);
	d->out_reads = get_be32(in + 4);
	d->qpn = get_be32(in + 8);
	d->psn = get_be32(in + 12);
	d->rkey = get_be32(in + 16);
	d->vaddr = (uint64_t)get_be32(in + 24) << 32 | get_be32(in + 28);
	memcpy(d->gid, in + 32, 16);
	d->srqn = get_be32(in + 48);
}

int
pt_hand_shake(struct pt_oob *c, const struct pt_dest *mine, struct pt_dest *theirs)
{
	char out[PT_KEY_MSG_LEN], in[PT_KEY_MSG_LEN];

	if (c->msg != NULL) {
		uint8_t bo[PT_KEY_BIN_LEN], bi[PT_KEY_BIN_LEN];

		pt_key_bin_format(mine, bo);
		if (pt_xchg(c, bo, bi, sizeof(bi)) != 0)
			return -1;
		pt_key_bin_parse(bi, theirs);
		return 0;
	}

	pt_key_format(mine, out);
	if (pt_xchg(c, out, in, sizeof(in)) != 0)
		return -1;
	if (pt_key_parse(in, theirs) != 0)
		return oob_err(c, "cannot parse the peer's key message <%.*s>", PT_KEY_MSG_LEN, in);
	return 0;
}

static uint64_t
dbl_be(double x)
{
	uint64_t u;

	memcpy(&u, &x, 8);
	return __builtin_bswap64(u);
}

static double
be_dbl(uint64_t u)
{
	double x;

	u = __builtin_bswap64(u);
	memcpy(&x, &u, 8);
	return x;
}

int
pt_xchg_bw_reports(struct pt_oob *c, const struct pt_bw_report *mine, struct pt_bw_report *theirs)
{
	uint64_t m, r = 0;

	memset(theirs, 0, sizeof(*theirs));
	m = __builtin_bswap64(mine->size);
	if (pt_xchg(c, &m, &r, 8) != 0)
		return -1;
	theirs->size = __builtin_bswap64(r);
	if (c->rem_ver >= 5.33) {
		m = __builtin_bswap64(mine->iters);
		if (pt_xchg(c, &m, &r, 8) != 0)
			return -1;
		theirs->iters = __builtin_bswap64(r);
	} else {
		uint32_t m4 = htonl((uint32_t)mine->iters), r4 = 0;

		if (pt_xchg(c, &m4, &r4, 4) != 0)
			return -1;
		theirs->iters = ntohl(r4);
	}
	m = dbl_be(mine->bw_peak);
	if (pt_xchg(c, &m, &r, 8) != 0)
		return -1;
	theirs->bw_peak = be_dbl(r);
	m = dbl_be(mine->bw_avg);
	if (pt_xchg(c, &m, &r, 8) != 0)
		return -1;
	theirs->bw_avg = be_dbl(r);
	m = dbl_be(mine->msg_rate);
	if (pt_xchg(c, &m, &r, 8) != 0)
		return -1;
	theirs->msg_rate = be_dbl(r);
	return 0;
}

bool
pt_gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t mc[12] = { 0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, 12) == 0 || memcmp(g, mc, 12) == 0;
}

bool
pt_gid_compatible(const uint8_t a[16], const uint8_t b[16])
{
	return pt_gid_is_v4mapped(a) == pt_gid_is_v4mapped(b);
}
