/* SPDX-License-Identifier: BSD-3-Clause
 * The child's side of verbs in forked children (fork.h): shadows of the
 * parent's objects and one request over the socket per verb.
 *
 * Each shadow embeds the verbs_api object of its kind as its first member
 * (zeroed, its lists and locks initialised), so a verb this file does not
 * serve finds memory of the right shape rather than a short allocation; the
 * ones it serves are routed here at the top of device.c, mr.c, cq.c, qp.c,
 * ah.c and events.c's entry points (droce_fk_ctx), and the context's ops
 * (post, poll, notify) point here.  Posts and polls are round trips to the
 * parent: correct, not fast.
 *
 * Over 1,300 lines because every verb served in a child has its shadow and
 * its request here, one short function each, all on the one request and
 * reply convention of fork.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fork_cli.h"

/* A range of this process's pages shared with the parent: a memfd mapped
 * at the same place (MAP_FIXED | MAP_SHARED), @ino its inode. */
struct fk_seg {
	uintptr_t start, end;
	int fd;
	ino_t ino;
};

static struct {
	pthread_mutex_t lock;        /* one request at a time; the buffers */
	int fd;                      /* the socket, -1: not a served child */
	uint8_t in[DROCE_FK_MAX_MSG] __attribute__((aligned(16)));
	uint8_t out[DROCE_FK_MAX_MSG] __attribute__((aligned(16)));
	pthread_mutex_t seg_lock;    /* the shared ranges */
	struct fk_seg *segs;
	size_t nsegs, cap;
} cli = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .seg_lock = PTHREAD_MUTEX_INITIALIZER };

#define FK_PL_MAX (DROCE_FK_MAX_MSG - sizeof(struct droce_fk_msg))

bool droce_fk_served_child;

bool
droce_fk_child_served(void)
{
	return cli.fd >= 0;
}

void
droce_fk_client_set(int fd)
{
	/* a child of a served child: its parent's socket is not ours (and its
	 * shared ranges are now shared with us too: a known limit) */
	if (cli.fd >= 0 && cli.fd != fd)
		close(cli.fd);
	cli.fd = fd;
	droce_fk_served_child = fd >= 0;
	pthread_mutex_init(&cli.lock, NULL);
	pthread_mutex_init(&cli.seg_lock, NULL);
}

/*
 * One request (@m, payload @pl of @plen, descriptors @fds) and its response
 * (into @m; payload into @out up to *@olen, *@olen set to its length; a
 * descriptor into *@rfd).  Returns the response's rc, or EIO if the parent
 * is gone.  With cli.lock held.
 */
static int
xfer(struct droce_fk_msg *m, const void *pl, size_t plen, const int *fds, int nfds, void *out,
     size_t *olen, int *rfds, int *nrfd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * DROCE_FK_MAX_FDS)];
	} cm;
	struct iovec iov[2] = { { m, sizeof(*m) }, { (void *)(uintptr_t)pl, plen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = plen ? 2 : 1 };
	struct iovec riov = { cli.in, sizeof(cli.in) };
	struct msghdr rh = { .msg_iov = &riov, .msg_iovlen = 1 };
	ssize_t n;
	size_t got;

	if (nrfd != NULL)
		*nrfd = 0;
	if (cli.fd < 0)
		return EIO;
	if (sizeof(*m) + plen > DROCE_FK_MAX_MSG || nfds > DROCE_FK_MAX_FDS)
		return ENOMEM;
	if (nfds > 0) {
		memset(cm.b, 0, sizeof(cm.b));
		mh.msg_control = cm.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *h = CMSG_FIRSTHDR(&mh);

		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(cli.fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return EIO;
	do {
		rh.msg_control = cm.b;
		rh.msg_controllen = sizeof(cm.b);
		n = recvmsg(cli.fd, &rh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < (ssize_t)sizeof(*m))
		return EIO;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&rh); h != NULL; h = CMSG_NXTHDR(&rh, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
				if (nrfd != NULL && *nrfd < DROCE_FK_MAX_FDS)
					rfds[(*nrfd)++] = fd;
				else
					close(fd);
			}
		}
	memcpy(m, cli.in, sizeof(*m));
	got = (size_t)n - sizeof(*m);
	if (olen != NULL) {
		if (got > *olen)
			got = *olen;
		if (got)
			memcpy(out, cli.in + sizeof(*m), got);
		*olen = got;
	}
	return m->rc;
}

int
droce_fk_call_fds(struct droce_fk_msg *m, const void *pl, size_t plen, void *out, size_t *olen,
		  int *rfds, int *nrfd)
{
	int rc;

	pthread_mutex_lock(&cli.lock);
	rc = xfer(m, pl, plen, NULL, 0, out, olen, rfds, nrfd);
	pthread_mutex_unlock(&cli.lock);
	return rc;
}

/* One request; the response's first descriptor (if any) into *@rfd. */
static int
call(struct droce_fk_msg *m, const void *pl, size_t plen, void *out, size_t *olen, int *rfd)
{
	int fds[DROCE_FK_MAX_FDS], n = 0, rc = droce_fk_call_fds(m, pl, plen, out, olen, fds, &n);

	if (rfd != NULL)
		*rfd = n > 0 ? fds[0] : -1;
	for (int i = rfd != NULL ? 1 : 0; i < n; i++)
		close(fds[i]);
	return rc;
}

int
droce_fk_call(struct droce_fk_msg *m, const void *pl, size_t plen, void *out, size_t *olen)
{
	return call(m, pl, plen, out, olen, NULL);
}

void *
droce_fk_fail_null(int rc)
{
	errno = rc;
	return NULL;
}

struct fk_ctx *
droce_fk_ctx_of(struct ibv_context *c)
{
	return (struct fk_ctx *)droce_vctx_of(c); /* the ibv_context ends the verbs_context */
}

/* ---- shadows by handle ---- */

struct fk_reg {
	enum fk_kind k;
	bool borrowed;
	uint64_t h;
	void *p;
};

static struct {
	pthread_mutex_t lock;
	struct fk_reg *e;
	size_t n, cap;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct fk_reg *
reg_at(enum fk_kind k, uint64_t h)
{
	for (size_t i = 0; i < reg.n; i++)
		if (reg.e[i].k == k && reg.e[i].h == h)
			return &reg.e[i];
	return NULL;
}

void *
droce_fk_reg_get(enum fk_kind k, uint64_t h)
{
	struct fk_reg *r;
	void *p;

	pthread_mutex_lock(&reg.lock);
	r = h ? reg_at(k, h) : NULL;
	p = r ? r->p : NULL;
	pthread_mutex_unlock(&reg.lock);
	return p;
}

int
droce_fk_reg_put(enum fk_kind k, uint64_t h, void *p, bool borrowed)
{
	int rc = 0;

	pthread_mutex_lock(&reg.lock);
	if (reg.n == reg.cap) {
		size_t cap = reg.cap ? reg.cap * 2 : 64;
		struct fk_reg *e = realloc(reg.e, cap * sizeof(*e));

		if (e == NULL) {
			rc = ENOMEM;
			goto out;
		}
		reg.e = e;
		reg.cap = cap;
	}
	reg.e[reg.n++] = (struct fk_reg){ .k = k, .h = h, .p = p, .borrowed = borrowed };
out:
	pthread_mutex_unlock(&reg.lock);
	return rc;
}

void
droce_fk_reg_del(enum fk_kind k, uint64_t h)
{
	struct fk_reg *r;

	pthread_mutex_lock(&reg.lock);
	r = reg_at(k, h);
	if (r != NULL)
		*r = reg.e[--reg.n];
	pthread_mutex_unlock(&reg.lock);
}

bool
droce_fk_reg_borrowed(enum fk_kind k, uint64_t h)
{
	struct fk_reg *r;
	bool b;

	pthread_mutex_lock(&reg.lock);
	r = reg_at(k, h);
	b = r != NULL && r->borrowed;
	pthread_mutex_unlock(&reg.lock);
	return b;
}

void
droce_fk_reg_set_borrowed(enum fk_kind k, uint64_t h, bool borrowed)
{
	struct fk_reg *r;

	pthread_mutex_lock(&reg.lock);
	r = reg_at(k, h);
	if (r != NULL)
		r->borrowed = borrowed;
	pthread_mutex_unlock(&reg.lock);
}

static int fk_query_port_op(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *a,
			    size_t len);
static int fk_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *a, size_t len);

struct fk_ctx *
droce_fk_ctx_shadow(uint64_t h, unsigned int dev, int fd, int ncomp)
{
	struct fk_ctx *f = calloc(1, sizeof(*f));
	struct ibv_context *c;

	if (f == NULL || droce_fk_reg_put(FK_K_CTX, h, f, true) != 0) {
		free(f);
		if (fd >= 0)
			close(fd);
		errno = ENOMEM;
		return NULL;
	}
	f->h = h;
	f->x.port = dev;
	f->x.async_wfd = -1;
	pthread_mutex_init(&f->x.lock, NULL);
	TAILQ_INIT(&f->x.cqs);
	TAILQ_INIT(&f->x.qps);
	TAILQ_INIT(&f->x.srqs);
	TAILQ_INIT(&f->x.pds);
	f->x.vctx.sz = sizeof(struct verbs_context);
	f->x.vctx.query_port = fk_query_port_op;
	f->x.vctx.query_device_ex = fk_query_device_ex;
	c = &f->x.vctx.context;
	c->device = droce_verbs_device(dev);
	c->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	c->async_fd = fd >= 0 ? fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
	c->num_comp_vectors = ncomp;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->ops.poll_cq = droce_fk_poll_cq;
	c->ops.req_notify_cq = droce_fk_req_notify_cq;
	c->ops.post_send = droce_fk_post_send;
	c->ops.post_recv = droce_fk_post_recv;
	return f;
}

struct fk_pd *
droce_fk_pd_shadow(uint64_t h, struct ibv_context *c)
{
	struct fk_pd *p = calloc(1, sizeof(*p));

	if (p == NULL || droce_fk_reg_put(FK_K_PD, h, p, true) != 0) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->h = h;
	pthread_mutex_init(&p->p.lock, NULL);
	TAILQ_INIT(&p->p.mrs);
	TAILQ_INIT(&p->p.mws);
	TAILQ_INIT(&p->p.ahs);
	p->p.pd.context = c;
	p->p.pd.handle = (uint32_t)h;
	return p;
}

struct fk_chan *
droce_fk_chan_shadow(uint64_t h, struct ibv_context *c, int fd)
{
	struct fk_chan *ch = calloc(1, sizeof(*ch));

	if (ch == NULL || fd < 0 || droce_fk_reg_put(FK_K_CHAN, h, ch, true) != 0) {
		free(ch);
		if (fd >= 0)
			close(fd);
		errno = fd < 0 ? EIO : ENOMEM;
		return NULL;
	}
	ch->h = h;
	ch->c.wfd = -1;
	pthread_mutex_init(&ch->c.lock, NULL);
	TAILQ_INIT(&ch->c.cqs);
	ch->c.ch.context = c;
	ch->c.ch.fd = fd;
	return ch;
}

struct fk_cq *
droce_fk_cq_shadow(uint64_t h, struct ibv_context *c, struct ibv_comp_channel *chan, int cqe,
		   void *cq_context)
{
	struct fk_cq *q = calloc(1, sizeof(*q));

	if (q == NULL || droce_fk_reg_put(FK_K_CQ, h, q, true) != 0) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->h = h;
	q->c.cq.context = c;
	q->c.cq.channel = chan;
	q->c.cq.cq_context = cq_context;
	q->c.cq.cqe = cqe;
	q->c.cq.handle = (uint32_t)h;
	pthread_mutex_init(&q->c.cq.mutex, NULL);
	pthread_cond_init(&q->c.cq.cond, NULL);
	if (chan != NULL)
		__atomic_fetch_add(&chan->refcnt, 1, __ATOMIC_RELAXED);
	return q;
}

struct fk_qp *
droce_fk_qp_shadow(uint64_t h, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
		   uint32_t qpn, enum ibv_qp_type t, const struct ibv_qp_cap *cap, void *qp_context)
{
	struct fk_qp *q = calloc(1, sizeof(*q));

	if (q == NULL || droce_fk_reg_put(FK_K_QP, h, q, true) != 0) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->h = h;
	q->q.cap = *cap;
	pthread_mutex_init(&q->q.lock, NULL);
	q->q.qp.context = pd ? pd->context : NULL;
	q->q.qp.qp_context = qp_context;
	q->q.qp.pd = pd;
	q->q.qp.send_cq = scq;
	q->q.qp.recv_cq = rcq;
	q->q.qp.qp_num = qpn;
	q->q.qp.handle = qpn;
	q->q.qp.state = IBV_QPS_RESET;
	q->q.qp.qp_type = t;
	q->q.state = IBV_QPS_RESET;
	pthread_mutex_init(&q->q.qp.mutex, NULL);
	pthread_cond_init(&q->q.qp.cond, NULL);
	return q;
}

void
droce_fk_shadow_free(enum fk_kind k, void *p)
{
	switch (k) {
	case FK_K_CTX: {
		struct fk_ctx *f = p;

		droce_fk_reg_del(k, f->h);
		close(f->x.vctx.context.async_fd);
		if (f->x.vctx.context.cmd_fd >= 0)
			close(f->x.vctx.context.cmd_fd);
		pthread_mutex_destroy(&f->x.vctx.context.mutex);
		pthread_mutex_destroy(&f->x.lock);
		free(f);
		break;
	}
	case FK_K_PD: {
		struct fk_pd *f = p;

		droce_fk_reg_del(k, f->h);
		pthread_mutex_destroy(&f->p.lock);
		free(f);
		break;
	}
	case FK_K_CHAN: {
		struct fk_chan *f = p;

		droce_fk_reg_del(k, f->h);
		close(f->c.ch.fd);
		pthread_mutex_destroy(&f->c.lock);
		free(f);
		break;
	}
	case FK_K_CQ: {
		struct fk_cq *f = p;

		droce_fk_reg_del(k, f->h);
		if (f->c.cq.channel != NULL)
			__atomic_fetch_sub(&f->c.cq.channel->refcnt, 1, __ATOMIC_RELAXED);
		pthread_cond_destroy(&f->c.cq.cond);
		pthread_mutex_destroy(&f->c.cq.mutex);
		free(f);
		break;
	}
	case FK_K_QP: {
		struct fk_qp *f = p;

		droce_fk_reg_del(k, f->h);
		pthread_mutex_destroy(&f->q.lock);
		pthread_cond_destroy(&f->q.qp.cond);
		pthread_mutex_destroy(&f->q.qp.mutex);
		free(f);
		break;
	}
	case FK_K_ID:
		break; /* fork_cli_cm.c's */
	}
}

/* ---- contexts and queries ---- */

static int
fk_query_port_op(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *a, size_t len)
{
	return droce_fk_query_port(c, port_num, a, len);
}

static int
fk_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
		   struct ibv_device_attr_ex *a, size_t len)
{
	struct droce_fk_msg m = { .op = DROCE_FK_QUERY_DEVICE_EX, .h = droce_fk_ctx_of(c)->h };
	struct ibv_device_attr_ex ax;
	size_t ol = sizeof(ax);
	int rc;

	if (in != NULL && in->comp_mask != 0)
		return EINVAL;
	memset(&ax, 0, sizeof(ax));
	rc = call(&m, NULL, 0, &ax, &ol, NULL);
	if (rc == 0)
		memcpy(a, &ax, len < sizeof(ax) ? len : sizeof(ax));
	return rc;
}

struct ibv_context *
droce_fk_open_device(struct ibv_device *device, unsigned int port)
{
	struct droce_fk_msg m = { .op = DROCE_FK_OPEN, .a = { port } };
	struct fk_ctx *f;
	int rc, afd;

	(void)device;
	rc = call(&m, NULL, 0, NULL, NULL, &afd);
	if (rc != 0)
		return droce_fk_fail_null(rc);
	f = afd >= 0 ? droce_fk_ctx_shadow(m.h, port, afd, (int)m.a[0]) : NULL;
	if (f == NULL) {
		struct droce_fk_msg cl = { .op = DROCE_FK_CLOSE, .h = m.h };

		call(&cl, NULL, 0, NULL, NULL, NULL);
		return droce_fk_fail_null(afd < 0 ? EIO : ENOMEM);
	}
	droce_fk_reg_set_borrowed(FK_K_CTX, m.h, false);
	return &f->x.vctx.context;
}

int
droce_fk_close_device(struct ibv_context *c)
{
	struct fk_ctx *f = droce_fk_ctx_of(c);
	struct droce_fk_msg m = { .op = DROCE_FK_CLOSE, .h = f->h };
	int rc;

	if (droce_fk_reg_borrowed(FK_K_CTX, f->h))
		return EINVAL; /* the rdma_cm's: not the program's to close */
	rc = call(&m, NULL, 0, NULL, NULL, NULL);
	if (rc != 0 && rc != EIO)
		return rc;
	/* EIO: the parent is gone, and what it held for us with it */
	droce_fk_shadow_free(FK_K_CTX, f);
	return 0;
}

int
droce_fk_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	struct droce_fk_msg m = { .op = DROCE_FK_QUERY_DEVICE, .h = droce_fk_ctx_of(c)->h };
	size_t ol = sizeof(*a);

	return call(&m, NULL, 0, a, &ol, NULL);
}

int
droce_fk_query_port(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *a, size_t len)
{
	struct droce_fk_msg m = { .op = DROCE_FK_QUERY_PORT, .h = droce_fk_ctx_of(c)->h, .a = { port_num } };
	struct ibv_port_attr pa;
	size_t ol = sizeof(pa);
	int rc;

	memset(&pa, 0, sizeof(pa));
	rc = call(&m, NULL, 0, &pa, &ol, NULL);
	if (rc == 0)
		memcpy(a, &pa, len < sizeof(pa) ? len : sizeof(pa));
	return rc;
}

/* ---- PDs ---- */

struct ibv_pd *
droce_fk_alloc_pd(struct ibv_context *c)
{
	struct droce_fk_msg m = { .op = DROCE_FK_ALLOC_PD, .h = droce_fk_ctx_of(c)->h };
	struct fk_pd *p;
	int rc = call(&m, NULL, 0, NULL, NULL, NULL);

	if (rc != 0)
		return droce_fk_fail_null(rc);
	p = droce_fk_pd_shadow(m.h, c);
	if (p == NULL) {
		struct droce_fk_msg d = { .op = DROCE_FK_DEALLOC_PD, .h = m.h };

		call(&d, NULL, 0, NULL, NULL, NULL);
		return droce_fk_fail_null(ENOMEM);
	}
	droce_fk_reg_set_borrowed(FK_K_PD, m.h, false);
	return &p->p.pd;
}

int
droce_fk_dealloc_pd(struct ibv_pd *pd)
{
	struct fk_pd *p = (struct fk_pd *)pd;
	struct droce_fk_msg m = { .op = DROCE_FK_DEALLOC_PD, .h = p->h };
	int rc;

	if (droce_fk_reg_borrowed(FK_K_PD, p->h))
		return EINVAL; /* the rdma_cm's */
	rc = call(&m, NULL, 0, NULL, NULL, NULL);
	if (rc != 0 && rc != EIO)
		return rc;
	droce_fk_shadow_free(FK_K_PD, p);
	return 0;
}

/* ---- MRs: the pages shared with the parent ---- */

/* True if [s->start, s->end) is still s's memfd in this process (free() or
 * brk may have unmapped it, and something else be there now). */
static bool
seg_alive(const struct fk_seg *s)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t covered = 0;
	bool ok = true;

	if (f == NULL)
		return false;
	while (ok && fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi, ino;
		char perms[8];
		unsigned long long off;
		char dev[16];

		if (sscanf(line, "%lx-%lx %7s %llx %15s %lu", &lo, &hi, perms, &off, dev, &ino) != 6)
			continue;
		if (hi <= s->start || lo >= s->end)
			continue;
		if ((ino_t)ino != s->ino || perms[3] != 's')
			ok = false;
		covered += (hi < s->end ? hi : s->end) - (lo > s->start ? lo : s->start);
	}
	fclose(f);
	return ok && covered == s->end - s->start;
}

static void
seg_drop(size_t i)
{
	close(cli.segs[i].fd);
	cli.segs[i] = cli.segs[--cli.nsegs];
}

/* Makes [a, b) (page-aligned, mapped) a shared range: 0 or an errno. */
static int
seg_make(uintptr_t a, uintptr_t b)
{
	size_t len = b - a, done = 0;
	struct fk_seg s = { .start = a, .end = b };
	struct stat st;

	if (cli.nsegs == cli.cap) {
		size_t cap = cli.cap ? cli.cap * 2 : 16;
		struct fk_seg *n = realloc(cli.segs, cap * sizeof(*n));

		if (n == NULL)
			return ENOMEM;
		cli.segs = n;
		cli.cap = cap;
	}
	s.fd = memfd_create("droce-mr", MFD_CLOEXEC);
	if (s.fd < 0)
		return errno;
	if (ftruncate(s.fd, (off_t)len) != 0 || fstat(s.fd, &st) != 0)
		goto err;
	s.ino = st.st_ino;
	/* the current contents (EFAULT: the range is not all mapped).  The
	 * whole pages, other objects on them included: a system call of its
	 * own, not the libc wrapper a sanitizer checks against one object */
	while (done < len) {
		ssize_t w = syscall(SYS_pwrite64, s.fd, (const void *)(a + done), len - done,
				    (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto err;
		done += (size_t)w;
	}
	if (mmap((void *)a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, s.fd, 0) == MAP_FAILED)
		goto err;
	cli.segs[cli.nsegs++] = s;
	return 0;
err:
	{
		int e = errno ? errno : EINVAL;

		close(s.fd);
		return e == EFAULT ? EINVAL : e;
	}
}

/*
 * The pieces covering [a, b): existing shared ranges where they are (and
 * still alive), new ones in the gaps.  Fills @pc / @fds (distinct fds, the
 * pieces' indices into them); 0 or an errno.
 */
static int
seg_cover(uintptr_t a, uintptr_t b, struct droce_fk_piece *pc, int *np, int *fds, int *nfds)
{
	uintptr_t pos = a;

	*np = *nfds = 0;
	for (size_t i = 0; i < cli.nsegs;)
		if (cli.segs[i].end > a && cli.segs[i].start < b && !seg_alive(&cli.segs[i]))
			seg_drop(i);
		else
			i++;
	while (pos < b) {
		struct fk_seg *s = NULL;
		uintptr_t next = b;
		int k;

		for (size_t i = 0; i < cli.nsegs; i++) {
			if (cli.segs[i].start <= pos && pos < cli.segs[i].end)
				s = &cli.segs[i];
			else if (cli.segs[i].start > pos && cli.segs[i].start < next)
				next = cli.segs[i].start;
		}
		if (s == NULL) {
			int rc = seg_make(pos, next);

			if (rc != 0)
				return rc;
			s = &cli.segs[cli.nsegs - 1];
		}
		if (*np == DROCE_FK_MAX_FDS)
			return ENOMEM;
		for (k = 0; k < *nfds && fds[k] != s->fd; k++)
			;
		if (k == *nfds)
			fds[(*nfds)++] = s->fd;
		pc[*np].fd = (uint32_t)k;
		pc[*np].pad = 0;
		pc[*np].off = pos - s->start;
		pc[*np].len = (s->end < b ? s->end : b) - pos;
		pos += pc[*np].len;
		(*np)++;
	}
	return 0;
}

struct ibv_mr *
droce_fk_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	struct fk_pd *p = (struct fk_pd *)pd;
	uintptr_t a = (uintptr_t)addr & ~(uintptr_t)4095;
	uintptr_t b = ((uintptr_t)addr + length + 4095) & ~(uintptr_t)4095;
	struct droce_fk_piece pc[DROCE_FK_MAX_FDS];
	int fds[DROCE_FK_MAX_FDS], np, nfds, rc;
	struct droce_fk_msg m = { .op = DROCE_FK_REG_MR, .h = p->h,
				  .a = { (uintptr_t)addr, length, iova, access, a } };
	struct fk_mr *r;

	if (addr == NULL || length == 0 || b <= a)
		return droce_fk_fail_null(EINVAL);
	pthread_mutex_lock(&cli.seg_lock);
	rc = seg_cover(a, b, pc, &np, fds, &nfds);
	if (rc == 0) {
		pthread_mutex_lock(&cli.lock);
		rc = xfer(&m, pc, (size_t)np * sizeof(pc[0]), fds, nfds, NULL, NULL, NULL, NULL);
		pthread_mutex_unlock(&cli.lock);
	}
	pthread_mutex_unlock(&cli.seg_lock);
	if (rc != 0)
		return droce_fk_fail_null(rc);
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		struct droce_fk_msg d = { .op = DROCE_FK_DEREG_MR, .h = m.h };

		call(&d, NULL, 0, NULL, NULL, NULL);
		return droce_fk_fail_null(ENOMEM);
	}
	r->h = m.h;
	pthread_mutex_init(&r->m.lock, NULL);
	r->m.mr.context = pd->context;
	r->m.mr.pd = pd;
	r->m.mr.addr = addr;
	r->m.mr.length = length;
	r->m.mr.lkey = (uint32_t)m.a[0];
	r->m.mr.rkey = (uint32_t)m.a[1];
	r->m.mr.handle = r->m.mr.lkey;
	return &r->m.mr;
}

int
droce_fk_dereg_mr(struct ibv_mr *mr)
{
	struct fk_mr *r = (struct fk_mr *)mr;
	struct droce_fk_msg m = { .op = DROCE_FK_DEREG_MR, .h = r->h };
	int rc = call(&m, NULL, 0, NULL, NULL, NULL);

	/* the pages stay shared (a later MR may reuse them): they keep their contents */
	if (rc != 0 && rc != EIO)
		return rc;
	pthread_mutex_destroy(&r->m.lock);
	free(r);
	return 0;
}

/* ---- completion channels and CQs ---- */

struct ibv_comp_channel *
droce_fk_create_comp_channel(struct ibv_context *c)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CREATE_CHAN, .h = droce_fk_ctx_of(c)->h };
	struct fk_chan *ch;
	int fd, rc = call(&m, NULL, 0, NULL, NULL, &fd);

	if (rc != 0)
		return droce_fk_fail_null(rc);
	ch = droce_fk_chan_shadow(m.h, c, fd);
	if (ch == NULL) {
		struct droce_fk_msg d = { .op = DROCE_FK_DESTROY_CHAN, .h = m.h };

		rc = errno;
		call(&d, NULL, 0, NULL, NULL, NULL);
		return droce_fk_fail_null(rc);
	}
	droce_fk_reg_set_borrowed(FK_K_CHAN, m.h, false);
	return &ch->c.ch;
}

int
droce_fk_destroy_comp_channel(struct ibv_comp_channel *chan)
{
	struct fk_chan *ch = (struct fk_chan *)chan;
	struct droce_fk_msg m = { .op = DROCE_FK_DESTROY_CHAN, .h = ch->h };
	int rc;

	if (droce_fk_reg_borrowed(FK_K_CHAN, ch->h))
		return EINVAL;
	rc = call(&m, NULL, 0, NULL, NULL, NULL);
	if (rc != 0 && rc != EIO)
		return rc;
	droce_fk_shadow_free(FK_K_CHAN, ch);
	return 0;
}

struct ibv_cq *
droce_fk_create_cq(struct ibv_context *c, int cqe, void *cq_context, struct ibv_comp_channel *chan,
		   int comp_vector)
{
	struct fk_chan *ch = (struct fk_chan *)chan;
	struct fk_cq *q;
	struct droce_fk_msg m = { .op = DROCE_FK_CREATE_CQ, .h = droce_fk_ctx_of(c)->h };
	int rc;

	if (cqe < 1 || (ch != NULL && chan->context != c))
		return droce_fk_fail_null(EINVAL);
	m.a[0] = (uint64_t)cqe;
	m.a[1] = ch ? ch->h : 0;
	m.a[2] = (uint64_t)comp_vector;
	rc = call(&m, NULL, 0, NULL, NULL, NULL);
	if (rc != 0)
		return droce_fk_fail_null(rc);
	q = droce_fk_cq_shadow(m.h, c, chan, (int)m.a[0], cq_context);
	if (q == NULL) {
		struct droce_fk_msg d = { .op = DROCE_FK_DESTROY_CQ, .h = m.h };

		call(&d, NULL, 0, NULL, NULL, NULL);
		return droce_fk_fail_null(ENOMEM);
	}
	droce_fk_reg_set_borrowed(FK_K_CQ, m.h, false);
	return &q->c.cq;
}

int
droce_fk_destroy_cq(struct ibv_cq *cq)
{
	struct fk_cq *q = (struct fk_cq *)cq;
	struct droce_fk_msg m = { .op = DROCE_FK_DESTROY_CQ, .h = q->h };
	int rc;

	if (droce_fk_reg_borrowed(FK_K_CQ, q->h))
		return EINVAL; /* rdma_destroy_qp's */
	rc = call(&m, NULL, 0, NULL, NULL, NULL);
	if (rc != 0 && rc != EIO)
		return rc;
	droce_fk_shadow_free(FK_K_CQ, q);
	return 0;
}

int
droce_fk_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct droce_fk_msg m = { .op = DROCE_FK_POLL_CQ, .h = ((struct fk_cq *)cq)->h };
	size_t ol;
	int rc;

	if (n <= 0)
		return 0;
	m.a[0] = (uint64_t)n;
	ol = (size_t)n * sizeof(*wc);
	rc = call(&m, NULL, 0, wc, &ol, NULL);
	if (rc != 0)
		return -rc;
	return (int)(int64_t)m.a[0];
}

int
droce_fk_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct droce_fk_msg m = { .op = DROCE_FK_REQ_NOTIFY, .h = ((struct fk_cq *)cq)->h,
				  .a = { solicited_only != 0 } };

	return call(&m, NULL, 0, NULL, NULL, NULL);
}

/*
 * Waits on @fd as the program set it up (a non-blocking fd: EAGAIN at once
 * when nothing is there), then has the server take the event (@m), again
 * while the server finds nothing (a record of a CQ destroyed since).
 */
int
droce_fk_event_wait(int fd, struct droce_fk_msg *req)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		bool nb = (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
		struct droce_fk_msg m = *req;
		int r = poll(&p, 1, nb ? 0 : -1);

		if (r < 0)
			return -1;
		if (r == 0) {
			errno = EAGAIN;
			return -1;
		}
		r = call(&m, NULL, 0, NULL, NULL, NULL);
		if (r == 0) {
			*req = m;
			return 0;
		}
		if (r != EAGAIN || nb) {
			errno = r;
			return -1;
		}
	}
}

int
droce_fk_get_cq_event(struct ibv_comp_channel *chan, struct ibv_cq **cq_out, void **cq_context)
{
	struct droce_fk_msg m = { .op = DROCE_FK_GET_CQ_EVENT, .h = ((struct fk_chan *)chan)->h };
	struct fk_cq *q;

	if (droce_fk_event_wait(chan->fd, &m) != 0)
		return -1;
	q = droce_fk_reg_get(FK_K_CQ, m.a[0]);
	if (q == NULL) {
		errno = EIO; /* a CQ this process has no shadow of */
		return -1;
	}
	*cq_out = &q->c.cq;
	*cq_context = q->c.cq.cq_context;
	return 0;
}

void
droce_fk_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	/* the server acknowledged each event as it took it */
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += n;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- QPs ---- */

static bool
same_ctx_cq(struct ibv_cq *cq, struct ibv_context *c)
{
	return cq == NULL || cq->context == c;
}

struct ibv_qp *
droce_fk_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	struct fk_pd *p = (struct fk_pd *)pd;
	struct ibv_context *c = pd->context;
	struct droce_fk_msg m = { .op = DROCE_FK_CREATE_QP, .h = p->h };
	struct ibv_qp_cap cap;
	size_t ol = sizeof(cap);
	struct fk_qp *q;
	int rc;

	if (ia == NULL || !same_ctx_cq(ia->send_cq, c) || !same_ctx_cq(ia->recv_cq, c))
		return droce_fk_fail_null(EINVAL);
	if (ia->srq != NULL)
		return droce_fk_fail_null(EOPNOTSUPP); /* no SRQs in a forked child yet */
	m.a[0] = ia->send_cq ? ((struct fk_cq *)ia->send_cq)->h : 0;
	m.a[1] = ia->recv_cq ? ((struct fk_cq *)ia->recv_cq)->h : 0;
	rc = call(&m, ia, sizeof(*ia), &cap, &ol, NULL);
	if (rc != 0)
		return droce_fk_fail_null(rc);
	ia->cap = cap;
	q = droce_fk_qp_shadow(m.h, pd, ia->send_cq, ia->recv_cq, (uint32_t)m.a[0], ia->qp_type, &cap,
			       ia->qp_context);
	if (q == NULL) {
		struct droce_fk_msg d = { .op = DROCE_FK_DESTROY_QP, .h = m.h };

		call(&d, NULL, 0, NULL, NULL, NULL);
		return droce_fk_fail_null(ENOMEM);
	}
	droce_fk_reg_set_borrowed(FK_K_QP, m.h, false);
	return &q->q.qp;
}

int
droce_fk_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	struct droce_fk_msg m = { .op = DROCE_FK_MODIFY_QP, .h = q->h, .a = { (uint64_t)mask } };
	int rc;

	if (attr == NULL)
		return EINVAL;
	rc = call(&m, attr, sizeof(*attr), NULL, NULL, NULL);
	if (rc == 0) {
		qp->state = (enum ibv_qp_state)m.a[0];
		q->q.state = (int)m.a[0];
	}
	return rc;
}

int
droce_fk_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *ia)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	struct droce_fk_msg m = { .op = DROCE_FK_QUERY_QP, .h = q->h, .a = { (uint64_t)mask } };
	struct {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr i;
	} r;
	size_t ol = sizeof(r);
	int rc;

	if (attr == NULL || ia == NULL)
		return EINVAL;
	rc = call(&m, NULL, 0, &r, &ol, NULL);
	if (rc != 0)
		return rc;
	*attr = r.a;
	*ia = r.i;
	ia->qp_context = qp->qp_context;
	ia->send_cq = qp->send_cq;
	ia->recv_cq = qp->recv_cq;
	ia->srq = NULL;
	return 0;
}

int
droce_fk_destroy_qp(struct ibv_qp *qp)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	struct droce_fk_msg m = { .op = DROCE_FK_DESTROY_QP, .h = q->h };
	int rc;

	if (droce_fk_reg_borrowed(FK_K_QP, q->h))
		return EINVAL; /* rdma_destroy_qp's */
	rc = call(&m, NULL, 0, NULL, NULL, NULL);
	if (rc != 0 && rc != EIO)
		return rc;
	droce_fk_shadow_free(FK_K_QP, q);
	return 0;
}

/* Sends the @n WRs encoded in cli.out (@len bytes); on failure *@bad is the
 * index of the first not posted.  With cli.lock held. */
static int
post_flush(uint32_t op, uint64_t h, size_t n, size_t len, size_t *bad)
{
	struct droce_fk_msg m = { .op = op, .h = h, .a = { n } };
	int rc;

	if (n == 0)
		return 0;
	rc = xfer(&m, cli.out, len, NULL, 0, NULL, NULL, NULL, NULL);
	*bad = rc != 0 ? (size_t)m.a[0] : 0;
	return rc;
}

#define FK_MAX_SGE 64
#define FK_POST_MAX_WR 1024

int
droce_fk_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	struct ibv_send_wr *first = wr, *w;
	size_t len = 0, n = 0, bad;
	int rc = 0;

	pthread_mutex_lock(&cli.lock);
	for (w = wr; w != NULL; w = w->next) {
		size_t need = sizeof(struct droce_fk_swr);
		struct droce_fk_swr s;

		if (w->num_sge < 0 || w->num_sge > FK_MAX_SGE || (w->num_sge && !w->sg_list)) {
			rc = EINVAL;
			break;
		}
		need += (size_t)w->num_sge * sizeof(struct ibv_sge);
		if (w->send_flags & IBV_SEND_INLINE)
			for (int i = 0; i < w->num_sge; i++)
				need += ((size_t)w->sg_list[i].length + 7) & ~(size_t)7;
		if (need > FK_PL_MAX) {
			rc = EINVAL; /* more inline data than any QP takes */
			break;
		}
		if (len + need > FK_PL_MAX || n == FK_POST_MAX_WR) {
			rc = post_flush(DROCE_FK_POST_SEND, q->h, n, len, &bad);
			if (rc != 0) {
				for (w = first; bad--; w = w->next)
					;
				n = 0; /* nothing left to flush below */
				break;
			}
			first = w;
			len = n = 0;
		}
		memset(&s, 0, sizeof(s));
		s.wr = *w;
		s.wr.next = NULL;
		s.wr.sg_list = NULL;
		if (qp->qp_type == IBV_QPT_UD) {
			s.ah = w->wr.ud.ah ? ((struct fk_ah *)w->wr.ud.ah)->h : 0;
			s.wr.wr.ud.ah = NULL;
		}
		memcpy(cli.out + len, &s, sizeof(s));
		len += sizeof(s);
		if (w->num_sge)
			memcpy(cli.out + len, w->sg_list, (size_t)w->num_sge * sizeof(struct ibv_sge));
		len += (size_t)w->num_sge * sizeof(struct ibv_sge);
		if (w->send_flags & IBV_SEND_INLINE)
			for (int i = 0; i < w->num_sge; i++) {
				size_t l = w->sg_list[i].length;

				memcpy(cli.out + len, (const void *)(uintptr_t)w->sg_list[i].addr, l);
				memset(cli.out + len + l, 0, ((l + 7) & ~(size_t)7) - l);
				len += (l + 7) & ~(size_t)7;
			}
		n++;
	}
	if (rc == 0 || w != NULL) {
		/* the end of the list, or a WR refused here: the ones before it go */
		struct ibv_send_wr *refused = rc != 0 ? w : NULL;
		int frc = post_flush(DROCE_FK_POST_SEND, q->h, n, len, &bad);

		if (frc != 0) {
			rc = frc;
			for (w = first; bad--; w = w->next)
				;
		} else {
			w = refused;
		}
	}
	pthread_mutex_unlock(&cli.lock);
	if (rc != 0 && bad_wr != NULL)
		*bad_wr = w;
	return rc;
}

int
droce_fk_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct fk_qp *q = (struct fk_qp *)qp;
	struct ibv_recv_wr *first = wr, *w;
	size_t len = 0, n = 0, bad;
	int rc = 0;

	pthread_mutex_lock(&cli.lock);
	for (w = wr; w != NULL; w = w->next) {
		size_t need;
		struct ibv_recv_wr s;

		if (w->num_sge < 0 || w->num_sge > FK_MAX_SGE || (w->num_sge && !w->sg_list)) {
			rc = EINVAL;
			break;
		}
		need = sizeof(s) + (size_t)w->num_sge * sizeof(struct ibv_sge);
		if (len + need > FK_PL_MAX || n == FK_POST_MAX_WR) {
			rc = post_flush(DROCE_FK_POST_RECV, q->h, n, len, &bad);
			if (rc != 0) {
				for (w = first; bad--; w = w->next)
					;
				n = 0; /* nothing left to flush below */
				break;
			}
			first = w;
			len = n = 0;
		}
		s = *w;
		s.next = NULL;
		s.sg_list = NULL;
		memcpy(cli.out + len, &s, sizeof(s));
		len += sizeof(s);
		if (w->num_sge)
			memcpy(cli.out + len, w->sg_list, (size_t)w->num_sge * sizeof(struct ibv_sge));
		len += (size_t)w->num_sge * sizeof(struct ibv_sge);
		n++;
	}
	if (rc == 0 || w != NULL) {
		struct ibv_recv_wr *refused = rc != 0 ? w : NULL;
		int frc = post_flush(DROCE_FK_POST_RECV, q->h, n, len, &bad);

		if (frc != 0) {
			rc = frc;
			for (w = first; bad--; w = w->next)
				;
		} else {
			w = refused;
		}
	}
	pthread_mutex_unlock(&cli.lock);
	if (rc != 0 && bad_wr != NULL)
		*bad_wr = w;
	return rc;
}

/* ---- AHs ---- */

struct ibv_ah *
droce_fk_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CREATE_AH, .h = ((struct fk_pd *)pd)->h };
	struct fk_ah *a;
	int rc;

	if (attr == NULL)
		return droce_fk_fail_null(EINVAL);
	rc = call(&m, attr, sizeof(*attr), NULL, NULL, NULL);
	if (rc != 0)
		return droce_fk_fail_null(rc);
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		struct droce_fk_msg d = { .op = DROCE_FK_DESTROY_AH, .h = m.h };

		call(&d, NULL, 0, NULL, NULL, NULL);
		return droce_fk_fail_null(ENOMEM);
	}
	a->h = m.h;
	a->a.attr = *attr;
	a->a.ah.context = pd->context;
	a->a.ah.pd = pd;
	a->a.ah.handle = (uint32_t)m.h;
	return &a->a.ah;
}

int
droce_fk_destroy_ah(struct ibv_ah *ah)
{
	struct fk_ah *a = (struct fk_ah *)ah;
	struct droce_fk_msg m = { .op = DROCE_FK_DESTROY_AH, .h = a->h };
	int rc = call(&m, NULL, 0, NULL, NULL, NULL);

	if (rc != 0 && rc != EIO)
		return rc;
	free(a);
	return 0;
}

int
droce_fk_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid, bool attach)
{
	struct droce_fk_msg m = { .op = attach ? DROCE_FK_ATTACH_MCAST : DROCE_FK_DETACH_MCAST,
				  .h = ((struct fk_qp *)qp)->h, .a = { lid } };

	if (gid == NULL)
		return EINVAL;
	return call(&m, gid, sizeof(*gid), NULL, NULL, NULL);
}

/* ---- async events ---- */

int
droce_fk_get_async_event(struct ibv_context *c, struct ibv_async_event *ev)
{
	struct droce_fk_msg m = { .op = DROCE_FK_GET_ASYNC_EVENT, .h = droce_fk_ctx_of(c)->h };

	if (droce_fk_event_wait(c->async_fd, &m) != 0)
		return -1;
	ev->event_type = (enum ibv_event_type)m.a[0];
	switch (droce_fk_event_elem(ev->event_type)) {
	case DROCE_FK_ELEM_CQ: {
		struct fk_cq *q = droce_fk_reg_get(FK_K_CQ, m.a[1]);

		ev->element.cq = q ? &q->c.cq : NULL;
		break;
	}
	case DROCE_FK_ELEM_PORT:
		ev->element.port_num = (int)m.a[1];
		break;
	case DROCE_FK_ELEM_NONE:
		ev->element.srq = NULL;
		break;
	case DROCE_FK_ELEM_QP: {
		struct fk_qp *q = droce_fk_reg_get(FK_K_QP, m.a[1]);

		ev->element.qp = q ? &q->q.qp : NULL;
		break;
	}
	}
	return 0;
}

void
droce_fk_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev; /* the server acknowledged it as it took it */
}
