/* SPDX-License-Identifier: BSD-3-Clause
 * The parent's side of verbs in forked children (fork.h): the socketpair
 * made at fork, and the `droce-fork` thread that runs the children's
 * requests with the ordinary verbs on objects it keeps per child.
 *
 * One thread per child (`droce-fork`) reads its requests and runs them one
 * at a time: a verb that blocks (a synchronous rdma_cm id's) holds up that
 * child only.  Waits for events happen in the child (on its fds); the event
 * fds the server reads are non-blocking descriptions of its own.  A child's handles are indices into its object table with a
 * generation, so a bad or stale handle is EINVAL, never a pointer followed.
 *
 * Over 900 lines because it holds one handler per verbs request kind and the
 * clean-up of everything a child can leave, which share the object table.
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
#include <unistd.h>

#include "droce/droce.h"
#include "fork.h"
#include "internal.h"

#include "fork_srv.h"

#define FK_MAX_CLIENTS 1024

static struct {
	pthread_mutex_t lock;            /* the fields below; held across fork() */
	int pfd, cfd;                    /* the pair prepare made, -1: none */
	struct fk_client *clients[FK_MAX_CLIENTS];
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER, .pfd = -1, .cfd = -1 };

/* ---- the object table ---- */

uint64_t
droce_fk_obj_add(struct fk_client *c, enum fk_type t, void *p)
{
	uint32_t i;

	for (i = 0; i < c->n; i++)
		if (c->o[i].type == FK_T_FREE)
			break;
	if (i == c->n) {
		if (c->n == c->cap) {
			uint32_t cap = c->cap ? c->cap * 2 : 32;
			struct fk_obj *o = realloc(c->o, cap * sizeof(*o));

			if (o == NULL)
				return 0;
			c->o = o;
			c->cap = cap;
		}
		memset(&c->o[c->n], 0, sizeof(c->o[0]));
		c->n++;
	}
	c->o[i].type = t;
	c->o[i].gen++;
	c->o[i].p = p;
	c->o[i].map = NULL;
	c->o[i].map_len = 0;
	c->o[i].fd = -1;
	c->o[i].borrowed = false;
	c->o[i].owner = 0;
	c->o[i].ep = false;
	return (uint64_t)c->o[i].gen << 32 | (i + 1);
}

/* The handle of @p (of type @t) in the table, 0 if absent. */
uint64_t
droce_fk_obj_find(struct fk_client *c, enum fk_type t, const void *p)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->o[i].type == t && c->o[i].p == p)
			return (uint64_t)c->o[i].gen << 32 | (i + 1);
	return 0;
}

struct fk_obj *
droce_fk_obj_get(struct fk_client *c, uint64_t h, enum fk_type t)
{
	uint32_t i = (uint32_t)h;

	if (i == 0 || i > c->n)
		return NULL;
	if (c->o[i - 1].type != t || c->o[i - 1].gen != (uint32_t)(h >> 32))
		return NULL;
	return &c->o[i - 1];
}

void
droce_fk_obj_free(struct fk_obj *o)
{
	if (o->map != NULL)
		munmap(o->map, o->map_len);
	if (o->fd >= 0)
		close(o->fd);
	o->type = FK_T_FREE;
	o->p = NULL;
	o->map = NULL;
	o->fd = -1;
}

/* A non-blocking open file description of its own for the pipe @fd (the
 * child gets @fd's, whose flags are the program's). */
int
droce_fk_own_fd(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

bool
droce_fk_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

int
droce_fk_errno_or(int dflt)
{
	return errno ? errno : dflt;
}

/* ---- destroying and registering verbs objects ---- */

/* Destroys the verbs object @p of type @t: 0 or the verb's error.  The one
 * place that knows each type's destroy verb (the destroy ops and a child's
 * end both use it); rdma_cm's types are fork_srv_cm.c's. */
static int
fk_verbs_destroy(enum fk_type t, void *p)
{
	switch (t) {
	case FK_T_QP: return ibv_destroy_qp(p);
	case FK_T_AH: return ibv_destroy_ah(p);
	case FK_T_MR: return ibv_dereg_mr(p);
	case FK_T_CQ: return ibv_destroy_cq(p);
	case FK_T_CHAN: return ibv_destroy_comp_channel(p);
	case FK_T_PD: return ibv_dealloc_pd(p);
	case FK_T_CTX: return ibv_close_device(p);
	default: return EINVAL;
	}
}

/* The new object @p of type @t goes into the child's table and its handle
 * into the reply; when the table cannot grow, @p is destroyed again and
 * the reply says ENOMEM.  True when registered. */
static bool
fk_obj_add_or_undo(struct fk_client *c, struct fk_io *io, enum fk_type t, void *p)
{
	io->m.h = droce_fk_obj_add(c, t, p);
	if (io->m.h != 0)
		return true;
	fk_verbs_destroy(t, p);
	io->m.rc = ENOMEM;
	return false;
}

/* Every destroy op (close, dealloc, dereg, destroy): the type its handle
 * must name, by op. */
static const enum fk_type destroy_type[DROCE_FK_OP_COUNT] = {
	[DROCE_FK_CLOSE] = FK_T_CTX,      [DROCE_FK_DEALLOC_PD] = FK_T_PD,
	[DROCE_FK_DEREG_MR] = FK_T_MR,    [DROCE_FK_DESTROY_CHAN] = FK_T_CHAN,
	[DROCE_FK_DESTROY_CQ] = FK_T_CQ,  [DROCE_FK_DESTROY_QP] = FK_T_QP,
	[DROCE_FK_DESTROY_AH] = FK_T_AH,
};

static void
op_destroy(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, destroy_type[io->m.op], io->m.h);
	io->m.rc = fk_verbs_destroy(o->type, o->p);
	if (io->m.rc == 0)
		droce_fk_obj_free(o);
}

/* ---- the requests, one function each ---- */

static void
op_open(struct fk_client *c, struct fk_io *io)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0, fd;
	uint64_t h;

	list = ibv_get_device_list(&n);
	if (list == NULL) {
		io->m.rc = droce_fk_errno_or(ENODEV);
		return;
	}
	for (int i = 0; i < n; i++)
		if ((uint64_t)ibv_get_device_index(list[i]) == io->m.a[0])
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (ctx == NULL) {
		io->m.rc = droce_fk_errno_or(ENODEV);
		return;
	}
	fd = droce_fk_own_fd(ctx->async_fd);
	h = fd >= 0 ? droce_fk_obj_add(c, FK_T_CTX, ctx) : 0;
	if (h == 0) {
		if (fd >= 0)
			close(fd);
		ibv_close_device(ctx);
		io->m.rc = ENOMEM;
		return;
	}
	droce_fk_obj_get(c, h, FK_T_CTX)->fd = fd;
	io->m.h = h;
	io->m.a[0] = (uint64_t)ctx->num_comp_vectors;
	io->ofds[io->nofd++] = ctx->async_fd;
}

static void
op_query_device(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_CTX, io->m.h);
	io->m.rc = ibv_query_device(o->p, (struct ibv_device_attr *)io->out);
	io->olen = sizeof(struct ibv_device_attr);
}

static void
op_query_device_ex(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_CTX, io->m.h);
	memset(io->out, 0, sizeof(struct ibv_device_attr_ex));
	io->m.rc = droce_verbs_query_device_ex(o->p, NULL, (struct ibv_device_attr_ex *)io->out,
					       sizeof(struct ibv_device_attr_ex));
	io->olen = sizeof(struct ibv_device_attr_ex);
}

static void
op_query_port(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_CTX, io->m.h);
	memset(io->out, 0, sizeof(struct ibv_port_attr));
	io->m.rc = droce_verbs_query_port(o->p, (uint8_t)io->m.a[0], (struct ibv_port_attr *)io->out,
					  sizeof(struct ibv_port_attr));
	io->olen = sizeof(struct ibv_port_attr);
}

static void
op_alloc_pd(struct fk_client *c, struct fk_io *io)
{
	struct ibv_pd *pd;

	OBJ(o, FK_T_CTX, io->m.h);
	pd = ibv_alloc_pd(o->p);
	if (pd == NULL) {
		io->m.rc = droce_fk_errno_or(ENOMEM);
		return;
	}
	fk_obj_add_or_undo(c, io, FK_T_PD, pd);
}

/* a[0] the child's address, a[1] length, a[2] iova, a[3] access, a[4] the
 * page-aligned start of the pieces (the payload) in the child. */
static void
op_reg_mr(struct fk_client *c, struct fk_io *io)
{
	const struct droce_fk_piece *pc = (const struct droce_fk_piece *)io->pl;
	size_t np = io->plen / sizeof(*pc), total = 0, at = 0;
	uint64_t addr = io->m.a[0], len = io->m.a[1], start = io->m.a[4];
	struct ibv_mr *mr;
	uint8_t *base;
	uint64_t h;

	OBJ(o, FK_T_PD, io->m.h);
	for (size_t i = 0; i < np; i++) {
		if (pc[i].fd >= (uint32_t)io->nfds || pc[i].len == 0 || pc[i].len % 4096 != 0) {
			io->m.rc = EINVAL;
			return;
		}
		total += pc[i].len;
	}
	if (np == 0 || addr < start || addr - start > total || len > total - (addr - start)) {
		io->m.rc = EINVAL;
		return;
	}
	base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		io->m.rc = ENOMEM;
		return;
	}
	for (size_t i = 0; i < np; i++) {
		if (mmap(base + at, pc[i].len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 io->fds[pc[i].fd], (off_t)pc[i].off) == MAP_FAILED) {
			io->m.rc = droce_fk_errno_or(ENOMEM);
			munmap(base, total);
			return;
		}
		at += pc[i].len;
	}
	mr = ibv_reg_mr_iova2(o->p, base + (addr - start), len, io->m.a[2], (unsigned int)io->m.a[3]);
	if (mr == NULL) {
		io->m.rc = droce_fk_errno_or(EINVAL);
		munmap(base, total);
		return;
	}
	h = droce_fk_obj_add(c, FK_T_MR, mr);
	if (h == 0) {
		ibv_dereg_mr(mr);
		munmap(base, total);
		io->m.rc = ENOMEM;
		return;
	}
	droce_fk_obj_get(c, h, FK_T_MR)->map = base;
	droce_fk_obj_get(c, h, FK_T_MR)->map_len = total;
	io->m.h = h;
	io->m.a[0] = mr->lkey;
	io->m.a[1] = mr->rkey;
}

static void
op_create_chan(struct fk_client *c, struct fk_io *io)
{
	struct ibv_comp_channel *ch;
	uint64_t h;
	int fd;

	OBJ(o, FK_T_CTX, io->m.h);
	ch = ibv_create_comp_channel(o->p);
	if (ch == NULL) {
		io->m.rc = droce_fk_errno_or(ENOMEM);
		return;
	}
	((struct droce_vchan *)ch)->remote = true; /* every event to the pipe: the child waits there */
	fd = droce_fk_own_fd(ch->fd);
	h = fd >= 0 ? droce_fk_obj_add(c, FK_T_CHAN, ch) : 0;
	if (h == 0) {
		if (fd >= 0)
			close(fd);
		ibv_destroy_comp_channel(ch);
		io->m.rc = ENOMEM;
		return;
	}
	droce_fk_obj_get(c, h, FK_T_CHAN)->fd = fd;
	io->m.h = h;
	io->ofds[io->nofd++] = ch->fd;
}

/* a[0] cqe, a[1] channel handle (0: none), a[2] comp_vector, a[3] the child's CQ. */
static void
op_create_cq(struct fk_client *c, struct fk_io *io)
{
	struct fk_obj *ch = NULL;
	struct ibv_cq *cq;

	OBJ(o, FK_T_CTX, io->m.h);
	if (io->m.a[1] != 0 && (ch = droce_fk_obj_get(c, io->m.a[1], FK_T_CHAN)) == NULL) {
		io->m.rc = EINVAL;
		return;
	}
	cq = ibv_create_cq(o->p, (int)io->m.a[0], (void *)(uintptr_t)io->m.a[3],
			   ch ? ch->p : NULL, (int)io->m.a[2]);
	if (cq == NULL) {
		io->m.rc = droce_fk_errno_or(ENOMEM);
		return;
	}
	if (!fk_obj_add_or_undo(c, io, FK_T_CQ, cq))
		return;
	io->m.a[0] = (uint64_t)cq->cqe;
}

static void
op_poll_cq(struct fk_client *c, struct fk_io *io)
{
	size_t n = io->m.a[0];
	int got;

	OBJ(o, FK_T_CQ, io->m.h);
	if (n > FK_OUT_MAX / sizeof(struct ibv_wc))
		n = FK_OUT_MAX / sizeof(struct ibv_wc);
	got = ibv_poll_cq((struct ibv_cq *)o->p, (int)n, (struct ibv_wc *)io->out);
	io->m.a[0] = (uint64_t)(int64_t)got;
	io->olen = got > 0 ? (size_t)got * sizeof(struct ibv_wc) : 0;
}

static void
op_req_notify(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_CQ, io->m.h);
	io->m.rc = ibv_req_notify_cq((struct ibv_cq *)o->p, (int)io->m.a[0]);
}

/*
 * The event the child's wait saw on its fd.  The server's read is of its own
 * non-blocking description (a record of a CQ destroyed since makes the
 * parent's ibv_get_cq_event read again: it must not block this thread).
 * The event is acknowledged here at once: the child keeps its own count.
 */
static void
op_get_cq_event(struct fk_client *c, struct fk_io *io)
{
	struct droce_vchan *ch;
	struct ibv_cq *cq;
	void *cookie;
	int fd;

	OBJ(o, FK_T_CHAN, io->m.h);
	if (!droce_fk_readable(o->fd)) {
		io->m.rc = EAGAIN;
		return;
	}
	ch = o->p;
	fd = ch->ch.fd;
	ch->ch.fd = o->fd;
	if (ibv_get_cq_event(&ch->ch, &cq, &cookie) != 0) {
		io->m.rc = droce_fk_errno_or(EAGAIN);
		ch->ch.fd = fd;
		return;
	}
	ch->ch.fd = fd;
	ibv_ack_cq_events(cq, 1);
	(void)cookie;
	io->m.a[0] = droce_fk_obj_find(c, FK_T_CQ, cq); /* the child's shadow by handle (the rdma_cm's CQs too) */
}

/* a[0] send CQ, a[1] receive CQ (handles, 0: none), a[2] the child's QP;
 * the payload the init attributes (pointers ignored). */
static void
op_create_qp(struct fk_client *c, struct fk_io *io)
{
	struct ibv_qp_init_attr ia;
	struct fk_obj *s = NULL, *r = NULL;
	struct ibv_qp *qp;

	OBJ(o, FK_T_PD, io->m.h);
	if (io->plen != sizeof(ia) || (io->m.a[0] && !(s = droce_fk_obj_get(c, io->m.a[0], FK_T_CQ))) ||
	    (io->m.a[1] && !(r = droce_fk_obj_get(c, io->m.a[1], FK_T_CQ)))) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&ia, io->pl, sizeof(ia));
	ia.qp_context = (void *)(uintptr_t)io->m.a[2];
	ia.send_cq = s ? s->p : NULL;
	ia.recv_cq = r ? r->p : NULL;
	ia.srq = NULL;
	qp = ibv_create_qp(o->p, &ia);
	if (qp == NULL) {
		io->m.rc = droce_fk_errno_or(EINVAL);
		return;
	}
	if (!fk_obj_add_or_undo(c, io, FK_T_QP, qp))
		return;
	io->m.a[0] = qp->qp_num;
	memcpy(io->out, &ia.cap, sizeof(ia.cap));
	io->olen = sizeof(ia.cap);
}

static void
op_modify_qp(struct fk_client *c, struct fk_io *io)
{
	struct ibv_qp_attr attr;

	OBJ(o, FK_T_QP, io->m.h);
	if (io->plen != sizeof(attr)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&attr, io->pl, sizeof(attr));
	io->m.rc = ibv_modify_qp(o->p, &attr, (int)io->m.a[0]);
	io->m.a[0] = (uint64_t)((struct ibv_qp *)o->p)->state;
}

static void
op_query_qp(struct fk_client *c, struct fk_io *io)
{
	struct ibv_qp_attr *attr = (struct ibv_qp_attr *)io->out;
	struct ibv_qp_init_attr *ia = (struct ibv_qp_init_attr *)(io->out + sizeof(*attr));

	OBJ(o, FK_T_QP, io->m.h);
	memset(io->out, 0, sizeof(*attr) + sizeof(*ia));
	io->m.rc = ibv_query_qp(o->p, attr, (int)io->m.a[0], ia);
	io->olen = sizeof(*attr) + sizeof(*ia);
}

/* a[0] WRs in the payload; the response's a[0] the index of the bad one. */
static void
op_post_send(struct fk_client *c, struct fk_io *io)
{
	struct ibv_send_wr *wrs = c->wr.s;
	struct ibv_send_wr *bad = NULL;
	const uint8_t *p = io->pl, *end = io->pl + io->plen;
	size_t n = io->m.a[0];

	OBJ(o, FK_T_QP, io->m.h);
	io->m.a[0] = 0;
	if (n == 0 || n > FK_MAX_WR) {
		io->m.rc = EINVAL;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct droce_fk_swr w;
		struct ibv_sge *sg;

		if ((size_t)(end - p) < sizeof(w))
			goto bad;
		memcpy(&w, p, sizeof(w));
		p += sizeof(w);
		if (w.wr.num_sge < 0 || (size_t)(end - p) < (size_t)w.wr.num_sge * sizeof(*sg))
			goto bad;
		wrs[i] = w.wr;
		/* the SGEs stay in the request buffer (8-byte aligned: the
		 * header and the structs are multiples of 8) */
		sg = (struct ibv_sge *)(uintptr_t)p;
		p += (size_t)w.wr.num_sge * sizeof(*sg);
		wrs[i].sg_list = w.wr.num_sge ? sg : NULL;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
		if (w.wr.send_flags & IBV_SEND_INLINE) {
			for (int s = 0; s < w.wr.num_sge; s++) {
				if ((size_t)(end - p) < sg[s].length)
					goto bad;
				sg[s].addr = (uintptr_t)p;
				p += (sg[s].length + 7) & ~7u;
			}
		}
		if (((struct ibv_qp *)o->p)->qp_type == IBV_QPT_UD) {
			struct fk_obj *ah = droce_fk_obj_get(c, w.ah, FK_T_AH);

			if (ah == NULL) {
				io->m.rc = EINVAL;
				io->m.a[0] = i;
				return;
			}
			wrs[i].wr.ud.ah = ah->p;
		}
		continue;
bad:
		io->m.rc = EINVAL;
		io->m.a[0] = i;
		return;
	}
	io->m.rc = ibv_post_send(o->p, wrs, &bad);
	io->m.a[0] = bad ? (uint64_t)(bad - wrs) : 0;
}

static void
op_post_recv(struct fk_client *c, struct fk_io *io)
{
	struct ibv_recv_wr *wrs = c->wr.r;
	struct ibv_recv_wr *bad = NULL;
	const uint8_t *p = io->pl, *end = io->pl + io->plen;
	size_t n = io->m.a[0];

	OBJ(o, FK_T_QP, io->m.h);
	io->m.a[0] = 0;
	if (n == 0 || n > FK_MAX_WR) {
		io->m.rc = EINVAL;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct ibv_recv_wr w;

		if ((size_t)(end - p) < sizeof(w))
			goto bad;
		memcpy(&w, p, sizeof(w));
		p += sizeof(w);
		if (w.num_sge < 0 || (size_t)(end - p) < (size_t)w.num_sge * sizeof(struct ibv_sge))
			goto bad;
		wrs[i] = w;
		wrs[i].sg_list = w.num_sge ? (struct ibv_sge *)(uintptr_t)p : NULL;
		p += (size_t)w.num_sge * sizeof(struct ibv_sge);
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
		continue;
bad:
		io->m.rc = EINVAL;
		io->m.a[0] = i;
		return;
	}
	io->m.rc = ibv_post_recv(o->p, wrs, &bad);
	io->m.a[0] = bad ? (uint64_t)(bad - wrs) : 0;
}

static void
op_create_ah(struct fk_client *c, struct fk_io *io)
{
	struct ibv_ah_attr attr;
	struct ibv_ah *ah;

	OBJ(o, FK_T_PD, io->m.h);
	if (io->plen != sizeof(attr)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&attr, io->pl, sizeof(attr));
	ah = ibv_create_ah(o->p, &attr);
	if (ah == NULL) {
		io->m.rc = droce_fk_errno_or(EINVAL);
		return;
	}
	fk_obj_add_or_undo(c, io, FK_T_AH, ah);
}

static pthread_mutex_t async_swap = PTHREAD_MUTEX_INITIALIZER;

/* As op_get_cq_event: acknowledged here; a[0] the type, a[1] the handle
 * of its CQ or QP, or the port number. */
static void
op_get_async_event(struct fk_client *c, struct fk_io *io)
{
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	int fd, rc;

	OBJ(o, FK_T_CTX, io->m.h);
	if (!droce_fk_readable(o->fd)) {
		io->m.rc = EAGAIN;
		return;
	}
	ctx = o->p;
	/* the rdma_cm's context is shared by every child's thread: one swap
	 * of its descriptor at a time */
	pthread_mutex_lock(&async_swap);
	fd = ctx->async_fd;
	ctx->async_fd = o->fd;
	rc = ibv_get_async_event(ctx, &ev);
	ctx->async_fd = fd;
	pthread_mutex_unlock(&async_swap);
	if (rc != 0) {
		io->m.rc = droce_fk_errno_or(EAGAIN);
		return;
	}
	io->m.a[0] = ev.event_type;
	switch (droce_fk_event_elem(ev.event_type)) {
	case DROCE_FK_ELEM_CQ: io->m.a[1] = droce_fk_obj_find(c, FK_T_CQ, ev.element.cq); break;
	case DROCE_FK_ELEM_PORT: io->m.a[1] = (uint64_t)ev.element.port_num; break;
	case DROCE_FK_ELEM_NONE: io->m.a[1] = 0; break;
	case DROCE_FK_ELEM_QP: io->m.a[1] = droce_fk_obj_find(c, FK_T_QP, ev.element.qp); break;
	}
	ibv_ack_async_event(&ev);
}

fk_op_fn droce_fk_ops[DROCE_FK_OP_COUNT] = {
	[DROCE_FK_OPEN] = op_open,
	[DROCE_FK_CLOSE] = op_destroy,
	[DROCE_FK_QUERY_DEVICE] = op_query_device,
	[DROCE_FK_QUERY_DEVICE_EX] = op_query_device_ex,
	[DROCE_FK_QUERY_PORT] = op_query_port,
	[DROCE_FK_ALLOC_PD] = op_alloc_pd,
	[DROCE_FK_DEALLOC_PD] = op_destroy,
	[DROCE_FK_REG_MR] = op_reg_mr,
	[DROCE_FK_DEREG_MR] = op_destroy,
	[DROCE_FK_CREATE_CHAN] = op_create_chan,
	[DROCE_FK_DESTROY_CHAN] = op_destroy,
	[DROCE_FK_CREATE_CQ] = op_create_cq,
	[DROCE_FK_DESTROY_CQ] = op_destroy,
	[DROCE_FK_POLL_CQ] = op_poll_cq,
	[DROCE_FK_REQ_NOTIFY] = op_req_notify,
	[DROCE_FK_GET_CQ_EVENT] = op_get_cq_event,
	[DROCE_FK_CREATE_QP] = op_create_qp,
	[DROCE_FK_MODIFY_QP] = op_modify_qp,
	[DROCE_FK_QUERY_QP] = op_query_qp,
	[DROCE_FK_DESTROY_QP] = op_destroy,
	[DROCE_FK_POST_SEND] = op_post_send,
	[DROCE_FK_POST_RECV] = op_post_recv,
	[DROCE_FK_CREATE_AH] = op_create_ah,
	[DROCE_FK_DESTROY_AH] = op_destroy,
	[DROCE_FK_GET_ASYNC_EVENT] = op_get_async_event,
	/* DROCE_FK_ATTACH_MCAST / DETACH_MCAST: misc.c's (a constructor) */
};

int (*droce_fk_cm_end)(struct fk_client *c, struct fk_obj *o, uint64_t h);

/* ---- a child's end: everything it left, in dependency order ---- */

static void
client_end(struct fk_client *c)
{
	static const enum fk_type order[] = { FK_T_EVENT, FK_T_ID, FK_T_QP, FK_T_AH, FK_T_MR,
					      FK_T_CQ, FK_T_CHAN, FK_T_PD, FK_T_CTX, FK_T_EVCH };

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (uint32_t i = 0; i < c->n; i++) {
			struct fk_obj *o = &c->o[i];
			uint64_t h = (uint64_t)o->gen << 32 | (i + 1);
			int rc = 0;

			if (o->type != order[k] || o->borrowed)
				continue;
			if (o->type == FK_T_EVENT || o->type == FK_T_ID || o->type == FK_T_EVCH)
				/* rdma_cm objects exist only when librdmacm made them */
				rc = droce_fk_cm_end != NULL ? droce_fk_cm_end(c, o, h) : 0;
			else
				rc = fk_verbs_destroy(o->type, o->p);
			if (rc == 0)
				droce_fk_obj_free(o);
			else /* left as leaked memory, as ibv_close_device leaves what it cannot free */
				o->map = NULL;
		}
	/* what is left is the rdma_cm's (its contexts and PDs): descriptors only */
	for (uint32_t i = 0; i < c->n; i++)
		if (c->o[i].type != FK_T_FREE)
			droce_fk_obj_free(&c->o[i]);
	pthread_mutex_lock(&srv.lock);
	srv.clients[c->slot] = NULL;
	close(c->fd);
	pthread_mutex_unlock(&srv.lock);
	free(c->o);
	free(c);
}

/* ---- the server thread ---- */

static int
serve_one(struct fk_client *c, uint8_t *in, uint8_t *out)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * DROCE_FK_MAX_FDS)];
	} cm;
	struct iovec iov = { .iov_base = in, .iov_len = DROCE_FK_MAX_MSG };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b) };
	struct fk_io io = { .nfds = 0, .nofd = 0, .out = out };
	struct iovec ov[2];
	struct msghdr om = { .msg_iov = ov, .msg_iovlen = 2 };
	ssize_t n;

	/* about to sleep: co-located engines go to the fallback thread now */
	droce_engines_blocking();
	do
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;
	droce_fork_gate_enter(); /* until the answer is sent */
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL; h = CMSG_NXTHDR(&mh, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
				if (io.nfds < DROCE_FK_MAX_FDS)
					io.fds[io.nfds++] = fd;
				else
					close(fd);
			}
		}
	if ((size_t)n < sizeof(io.m) || (mh.msg_flags & MSG_TRUNC)) {
		io.m.op = 0;
		io.m.rc = EINVAL;
	} else {
		memcpy(&io.m, in, sizeof(io.m));
		io.pl = in + sizeof(io.m);
		io.plen = (size_t)n - sizeof(io.m);
		io.m.rc = 0;
		errno = 0;
		if (io.m.op < DROCE_FK_OP_COUNT && droce_fk_ops[io.m.op] != NULL)
			droce_fk_ops[io.m.op](c, &io);
		else
			io.m.rc = EOPNOTSUPP;
	}
	for (int i = 0; i < io.nfds; i++)
		close(io.fds[i]);
	ov[0].iov_base = &io.m;
	ov[0].iov_len = sizeof(io.m);
	ov[1].iov_base = out;
	ov[1].iov_len = io.m.rc == 0 ? io.olen : 0;
	if (io.nofd > 0 && io.m.rc == 0) {
		om.msg_control = cm.b;
		om.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)io.nofd);
		memset(cm.b, 0, sizeof(cm.b));
		struct cmsghdr *h = CMSG_FIRSTHDR(&om);

		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)io.nofd);
		memcpy(CMSG_DATA(h), io.ofds, sizeof(int) * (size_t)io.nofd);
	}
	do
		n = sendmsg(c->fd, &om, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	droce_fork_gate_leave();
	return n < 0 ? -1 : 0;
}

static void *
server(void *arg)
{
	struct fk_client *c = arg;

	while (serve_one(c, c->in, c->out) == 0)
		;
	droce_fork_gate_enter();
	client_end(c);
	droce_fork_gate_leave();
	return NULL;
}

/* ---- fork ---- */

void
droce_fk_prepare(void)
{
	int sv[2];

	pthread_mutex_lock(&srv.lock);
	srv.pfd = srv.cfd = -1;
	if (droce_fk_child_served() || !droce_running() || droce_engine_count() == 0)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return;
	srv.pfd = sv[0];
	srv.cfd = sv[1];
}

void
droce_fk_parent(void)
{
	struct fk_client *c = NULL;
	uint32_t slot = 0;
	pthread_t t;

	if (srv.pfd < 0)
		goto out;
	close(srv.cfd);
	while (slot < FK_MAX_CLIENTS && srv.clients[slot] != NULL)
		slot++;
	if (slot < FK_MAX_CLIENTS)
		c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(srv.pfd); /* the child's verbs fail with EIO */
		goto out;
	}
	c->fd = srv.pfd;
	c->slot = slot;
	srv.clients[slot] = c;
	if (pthread_create(&t, NULL, server, c) != 0) {
		srv.clients[slot] = NULL;
		close(c->fd);
		free(c);
		goto out;
	}
	pthread_setname_np(t, "droce-fork");
	pthread_detach(t);
out:
	srv.pfd = srv.cfd = -1;
	pthread_mutex_unlock(&srv.lock);
}

void
droce_fk_child(void)
{
	/* the parent's server is not ours: its sockets to our siblings are
	 * copies to drop (their objects stay the parent's) */
	for (uint32_t i = 0; i < FK_MAX_CLIENTS; i++)
		if (srv.clients[i] != NULL) {
			close(srv.clients[i]->fd);
			free(srv.clients[i]->o);
			free(srv.clients[i]);
			srv.clients[i] = NULL;
		}
	if (srv.pfd >= 0)
		close(srv.pfd);
	droce_fk_client_set(srv.cfd);
	srv.pfd = srv.cfd = -1;
	pthread_mutex_unlock(&srv.lock);
}
