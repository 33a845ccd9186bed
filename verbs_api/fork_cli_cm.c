/* SPDX-License-Identifier: BSD-3-Clause
 * The child's side of rdma_cm in forked children (fork.h): event channels,
 * ids and events are shadows of the parent's, every call a request (the
 * rdmacm*.c entry points route here in a served child).  After each request
 * on an id the parent sends the id's state (struct droce_fk_id_state): the
 * shadow takes its addresses, and shadows of the context, PD, QP, CQs and
 * completion channels it names (made on first sight, freed when the parent
 * says rdma_destroy_qp / rdma_destroy_ep took them), so rdma_verbs.h's
 * inline helpers (rdma_reg_msgs, rdma_post_send, rdma_get_send_comp ...)
 * reach the parent through the verbs shadows.  Synchronous ids (no
 * channel) block in the parent's thread for this child.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "fork_cli.h"
#include "rdmacm.h"

struct fk_evch {
	struct droce_rcm_chan c;
	uint64_t h;
};

struct fk_id {
	struct droce_rcm_id p;
	uint64_t h;
	struct ibv_sa_path_rec path;
};

struct fk_event {
	struct rdma_cm_event ev;
	uint64_t h;
	uint8_t pdata[256];
};

static struct fk_id *
fid(struct rdma_cm_id *id)
{
	return (struct fk_id *)id;
}

static int
fail(int rc)
{
	errno = rc;
	return -1;
}

static int
take_fd(const int *fds, bool *used, int nfd, int i)
{
	if (i < 0 || i >= nfd || used[i])
		return -1;
	used[i] = true;
	return fds[i];
}

/* A borrowed shadow no longer named: freed (the parent destroyed it). */
static void
drop_borrowed(enum fk_kind k, void *old, uint64_t oldh, void *keep1, void *keep2)
{
	if (old != NULL && old != keep1 && old != keep2 && droce_fk_reg_borrowed(k, oldh))
		droce_fk_shadow_free(k, old);
}

/* Takes the state @st into the shadow @f (descriptors @fds of which it
 * uses those @st names, marking them in @used). */
static void
id_apply(struct fk_id *f, const struct droce_fk_id_state *st, const int *fds, bool *used, int nfd)
{
	struct rdma_cm_id *id = &f->p.id;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_comp_channel *sch = NULL, *rch = NULL;
	struct ibv_cq *scq = NULL, *rcq = NULL;
	struct ibv_qp *qp = NULL;
	void *o_sch = id->send_cq_channel, *o_rch = id->recv_cq_channel;
	void *o_scq = id->send_cq, *o_rcq = id->recv_cq, *o_qp = id->qp;
	uint64_t o_schh = o_sch ? ((struct fk_chan *)o_sch)->h : 0;
	uint64_t o_rchh = o_rch ? ((struct fk_chan *)o_rch)->h : 0;
	uint64_t o_scqh = o_scq ? ((struct fk_cq *)o_scq)->h : 0;
	uint64_t o_rcqh = o_rcq ? ((struct fk_cq *)o_rcq)->h : 0;
	uint64_t o_qph = o_qp ? ((struct fk_qp *)o_qp)->h : 0;

	if (st->ctx) {
		struct fk_ctx *c = droce_fk_reg_get(FK_K_CTX, st->ctx);

		if (c == NULL)
			c = droce_fk_ctx_shadow(st->ctx, st->dev, take_fd(fds, used, nfd, st->fd_ctx),
						st->ncomp);
		ctx = c ? &c->x.vctx.context : NULL;
	}
	if (st->pd) {
		struct fk_pd *p = droce_fk_reg_get(FK_K_PD, st->pd);

		if (p == NULL && ctx != NULL)
			p = droce_fk_pd_shadow(st->pd, ctx);
		pd = p ? &p->p.pd : NULL;
	}
	if (st->schan) {
		struct fk_chan *c = droce_fk_reg_get(FK_K_CHAN, st->schan);

		if (c == NULL)
			c = droce_fk_chan_shadow(st->schan, ctx, take_fd(fds, used, nfd, st->fd_schan));
		sch = c ? &c->c.ch : NULL;
	}
	if (st->rchan) {
		struct fk_chan *c = droce_fk_reg_get(FK_K_CHAN, st->rchan);

		if (c == NULL)
			c = droce_fk_chan_shadow(st->rchan, ctx, take_fd(fds, used, nfd, st->fd_rchan));
		rch = c ? &c->c.ch : NULL;
	}
	if (st->scq) {
		struct fk_cq *q = droce_fk_reg_get(FK_K_CQ, st->scq);

		if (q == NULL)
			q = droce_fk_cq_shadow(st->scq, ctx, sch, st->scqe, id);
		scq = q ? &q->c.cq : NULL;
	}
	if (st->rcq) {
		struct fk_cq *q = droce_fk_reg_get(FK_K_CQ, st->rcq);

		if (q == NULL)
			q = droce_fk_cq_shadow(st->rcq, ctx, rch, st->rcqe, id);
		rcq = q ? &q->c.cq : NULL;
	}
	if (st->qp) {
		struct fk_qp *q = droce_fk_reg_get(FK_K_QP, st->qp);

		if (q == NULL)
			q = droce_fk_qp_shadow(st->qp, pd, scq, rcq, st->qp_num,
					       (enum ibv_qp_type)st->qp_type, &st->cap, id);
		if (q != NULL) {
			q->q.qp.state = (enum ibv_qp_state)st->qp_state;
			q->q.state = (int)st->qp_state;
		}
		qp = q ? &q->q.qp : NULL;
	}
	id->verbs = ctx;
	id->pd = pd;
	id->send_cq_channel = sch;
	id->recv_cq_channel = rch;
	id->send_cq = scq;
	id->recv_cq = rcq;
	id->qp = qp;
	id->port_num = (uint8_t)st->port_num;
	id->ps = (enum rdma_port_space)st->ps;
	id->qp_type = (enum ibv_qp_type)st->qp_type;
	id->route.addr = st->addr;
	f->path = st->path;
	id->route.num_paths = st->num_paths;
	id->route.path_rec = st->num_paths > 0 ? &f->path : NULL;
	/* what the parent destroyed (rdma_destroy_qp) */
	drop_borrowed(FK_K_QP, o_qp, o_qph, qp, NULL);
	drop_borrowed(FK_K_CQ, o_scq, o_scqh, scq, rcq);
	if (o_rcq != o_scq)
		drop_borrowed(FK_K_CQ, o_rcq, o_rcqh, scq, rcq);
	drop_borrowed(FK_K_CHAN, o_sch, o_schh, sch, rch);
	if (o_rch != o_sch)
		drop_borrowed(FK_K_CHAN, o_rch, o_rchh, sch, rch);
}

/* A request on id @f answered with its state. */
static int
id_call(struct fk_id *f, struct droce_fk_msg *m, const void *pl, size_t plen)
{
	struct droce_fk_id_state st;
	size_t ol = sizeof(st);
	int fds[DROCE_FK_MAX_FDS], nfd = 0, rc;
	bool used[DROCE_FK_MAX_FDS] = { false };

	if (f != NULL)
		m->h = f->h;
	rc = droce_fk_call_fds(m, pl, plen, &st, &ol, fds, &nfd);
	if (ol == sizeof(st) && f != NULL)
		id_apply(f, &st, fds, used, nfd);
	for (int i = 0; i < nfd; i++)
		if (!used[i])
			close(fds[i]);
	return rc;
}

static struct fk_id *
id_new(uint64_t h, struct rdma_event_channel *ch, void *context)
{
	struct fk_id *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	if (droce_fk_reg_put(FK_K_ID, h, f, false) != 0) {
		free(f);
		return NULL;
	}
	f->h = h;
	f->p.id.channel = ch;
	f->p.id.context = context;
	f->p.chan = (struct droce_rcm_chan *)ch;
	f->p.sync = ch == NULL;
	pthread_mutex_init(&f->p.mut, NULL);
	pthread_cond_init(&f->p.cond, NULL);
	TAILQ_INIT(&f->p.mcs);
	f->p.port = -1;
	return f;
}

/* The id's shadows of what the parent destroyed with it (@all: its QP and
 * CQs too, rdma_destroy_ep; else they stay, the program's now). */
static void
id_free(struct fk_id *f, bool all)
{
	struct rdma_cm_id *id = &f->p.id;

	if (all) {
		struct droce_fk_id_state none = { 0 };

		id_apply(f, &none, NULL, NULL, 0);
	} else {
		if (id->qp)
			droce_fk_reg_set_borrowed(FK_K_QP, ((struct fk_qp *)id->qp)->h, false);
		if (id->send_cq)
			droce_fk_reg_set_borrowed(FK_K_CQ, ((struct fk_cq *)id->send_cq)->h, false);
		if (id->recv_cq)
			droce_fk_reg_set_borrowed(FK_K_CQ, ((struct fk_cq *)id->recv_cq)->h, false);
		if (id->send_cq_channel)
			droce_fk_reg_set_borrowed(FK_K_CHAN, ((struct fk_chan *)id->send_cq_channel)->h,
						  false);
		if (id->recv_cq_channel)
			droce_fk_reg_set_borrowed(FK_K_CHAN, ((struct fk_chan *)id->recv_cq_channel)->h,
						  false);
	}
	droce_fk_reg_del(FK_K_ID, f->h);
	pthread_cond_destroy(&f->p.cond);
	pthread_mutex_destroy(&f->p.mut);
	free(f);
}

static void
sa_copy(struct sockaddr_storage *to, const struct sockaddr *sa)
{
	size_t n;

	memset(to, 0, sizeof(*to));
	if (sa == NULL)
		return;
	switch (sa->sa_family) {
	case AF_INET:
		n = sizeof(struct sockaddr_in);
		break;
	case AF_INET6:
		n = sizeof(struct sockaddr_in6);
		break;
	case AF_IB:
		n = sizeof(struct sockaddr_storage); /* a sockaddr_ib (rdma/rdma_cma.h does not define it) */
		break;
	default:
		n = sizeof(struct sockaddr);
		break;
	}
	memcpy(to, sa, n < sizeof(*to) ? n : sizeof(*to));
}

/* ---- event channels ---- */

struct rdma_event_channel *
droce_fk_cm_create_event_channel(void)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_CREATE_CHAN };
	int fds[DROCE_FK_MAX_FDS], nfd = 0;
	struct fk_evch *c;
	int rc = droce_fk_call_fds(&m, NULL, 0, NULL, NULL, fds, &nfd);

	for (int i = 1; i < nfd; i++)
		close(fds[i]);
	if (rc == 0 && nfd == 0)
		rc = EIO;
	c = rc == 0 ? calloc(1, sizeof(*c)) : NULL;
	if (c == NULL) {
		if (rc == 0) {
			struct droce_fk_msg d = { .op = DROCE_FK_CM_DESTROY_CHAN, .h = m.h };

			droce_fk_call(&d, NULL, 0, NULL, NULL);
			rc = ENOMEM;
		}
		if (nfd > 0)
			close(fds[0]);
		return droce_fk_fail_null(rc);
	}
	c->h = m.h;
	c->c.ch.fd = fds[0];
	c->c.wfd = -1;
	pthread_mutex_init(&c->c.lock, NULL);
	TAILQ_INIT(&c->c.q);
	return &c->c.ch;
}

int
droce_fk_cm_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct fk_evch *c = (struct fk_evch *)ch;
	struct droce_fk_msg m = { .op = DROCE_FK_CM_DESTROY_CHAN, .h = c->h };

	droce_fk_call(&m, NULL, 0, NULL, NULL);
	close(ch->fd);
	pthread_mutex_destroy(&c->c.lock);
	free(c);
	return 0;
}

/* ---- ids ---- */

int
droce_fk_cm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_CREATE_ID, .a = { ps } };
	struct droce_fk_id_state st;
	struct fk_id *f;
	int rc;

	if (id == NULL)
		return fail(EINVAL);
	m.h = ch ? ((struct fk_evch *)ch)->h : 0;
	{
		size_t ol = sizeof(st);
		int fds[DROCE_FK_MAX_FDS], nfd = 0;

		rc = droce_fk_call_fds(&m, NULL, 0, &st, &ol, fds, &nfd);
		for (int i = 0; i < nfd; i++)
			close(fds[i]);
		if (rc == 0 && ol != sizeof(st))
			rc = EIO;
	}
	if (rc != 0)
		return fail(rc);
	f = id_new(st.id, ch, context);
	if (f == NULL) {
		struct droce_fk_msg d = { .op = DROCE_FK_CM_DESTROY_ID, .h = st.id };

		droce_fk_call(&d, NULL, 0, NULL, NULL);
		return fail(ENOMEM);
	}
	id_apply(f, &st, NULL, NULL, 0);
	*id = &f->p.id;
	return 0;
}

/* A new id the parent made (rdma_create_ep, rdma_get_request): its state in
 * the response. */
static int
id_from(struct droce_fk_msg *m, const void *pl, size_t plen, void *context, struct rdma_cm_id **id)
{
	struct droce_fk_id_state st;
	size_t ol = sizeof(st);
	int fds[DROCE_FK_MAX_FDS], nfd = 0, rc;
	bool used[DROCE_FK_MAX_FDS] = { false };
	struct fk_id *f = NULL;

	rc = droce_fk_call_fds(m, pl, plen, &st, &ol, fds, &nfd);
	if (rc == 0 && ol != sizeof(st))
		rc = EIO;
	if (rc == 0) {
		f = id_new(st.id, NULL, context);
		if (f == NULL) {
			struct droce_fk_msg d = { .op = DROCE_FK_CM_DESTROY_ID, .h = st.id };

			droce_fk_call(&d, NULL, 0, NULL, NULL);
			rc = ENOMEM;
		} else {
			id_apply(f, &st, fds, used, nfd);
			*id = &f->p.id;
		}
	}
	for (int i = 0; i < nfd; i++)
		if (!used[i])
			close(fds[i]);
	return rc;
}

int
droce_fk_cm_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qia)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_CREATE_EP };
	struct droce_fk_ep_req r;
	int rc;

	if (id == NULL || res == NULL)
		return fail(EINVAL);
	if (qia != NULL && qia->srq != NULL)
		return fail(EOPNOTSUPP);
	memset(&r, 0, sizeof(r));
	r.ai = *res;
	sa_copy(&r.src, res->ai_src_addr);
	sa_copy(&r.dst, res->ai_dst_addr);
	if (r.ai.ai_src_len > sizeof(r.src) || r.ai.ai_dst_len > sizeof(r.dst))
		return fail(EINVAL);
	if (res->ai_route_len != 0 || res->ai_connect_len != 0)
		return fail(EOPNOTSUPP); /* not carried to the parent yet */
	m.h = pd ? ((struct fk_pd *)pd)->h : 0;
	if (qia != NULL) {
		r.has_qp = 1;
		r.qia = *qia;
		m.a[0] = qia->send_cq ? ((struct fk_cq *)qia->send_cq)->h : 0;
		m.a[1] = qia->recv_cq ? ((struct fk_cq *)qia->recv_cq)->h : 0;
	}
	rc = id_from(&m, &r, sizeof(r), NULL, id);
	if (rc != 0)
		return fail(rc);
	if (qia != NULL && (*id)->qp != NULL)
		qia->cap = ((struct fk_qp *)(*id)->qp)->q.cap;
	return 0;
}

int
droce_fk_cm_destroy_id(struct rdma_cm_id *id, bool ep)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_DESTROY_ID };
	struct fk_id *f;
	int rc;

	if (id == NULL)
		return fail(EINVAL);
	f = fid(id);
	m.h = f->h;
	rc = droce_fk_call(&m, NULL, 0, NULL, NULL);
	if (rc != 0 && rc != EIO)
		return fail(rc);
	id_free(f, ep);
	return 0;
}

int
droce_fk_cm_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_BIND };
	struct sockaddr_storage a;
	int rc;

	if (id == NULL || addr == NULL)
		return fail(EINVAL);
	sa_copy(&a, addr);
	rc = id_call(fid(id), &m, &a, sizeof(a));
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			 int timeout_ms)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_RESOLVE_ADDR, .a = { src != NULL,
									(uint64_t)(int64_t)timeout_ms } };
	struct sockaddr_storage a[2];
	int rc;

	if (id == NULL || dst == NULL)
		return fail(EINVAL);
	sa_copy(&a[0], src);
	sa_copy(&a[1], dst);
	rc = id_call(fid(id), &m, a, sizeof(a));
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_RESOLVE_ROUTE, .a = { (uint64_t)(int64_t)timeout_ms } };
	int rc;

	if (id == NULL)
		return fail(EINVAL);
	rc = id_call(fid(id), &m, NULL, 0);
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_listen(struct rdma_cm_id *id, int backlog)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_LISTEN, .a = { (uint64_t)(int64_t)backlog } };
	int rc;

	if (id == NULL)
		return fail(EINVAL);
	rc = id_call(fid(id), &m, NULL, 0);
	return rc ? fail(rc) : 0;
}

static int
conn_call(struct rdma_cm_id *id, uint32_t op, struct rdma_conn_param *p)
{
	struct droce_fk_msg m = { .op = op, .a = { p != NULL } };
	uint8_t buf[sizeof(*p) + 256];
	size_t len = 0;
	int rc;

	if (id == NULL)
		return fail(EINVAL);
	if (p != NULL) {
		struct rdma_conn_param c = *p;

		if (c.private_data_len && c.private_data == NULL)
			return fail(EINVAL);
		c.private_data = NULL;
		memcpy(buf, &c, sizeof(c));
		if (p->private_data_len)
			memcpy(buf + sizeof(c), p->private_data, p->private_data_len);
		len = sizeof(c) + p->private_data_len;
	}
	rc = id_call(fid(id), &m, buf, len);
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	return conn_call(id, DROCE_FK_CM_CONNECT, param);
}

int
droce_fk_cm_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	return conn_call(id, DROCE_FK_CM_ACCEPT, param);
}

int
droce_fk_cm_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_REJECT };
	int rc;

	if (id == NULL || (len && pdata == NULL))
		return fail(EINVAL);
	rc = id_call(fid(id), &m, pdata, len);
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_disconnect(struct rdma_cm_id *id)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_DISCONNECT };
	int rc;

	if (id == NULL)
		return fail(EINVAL);
	rc = id_call(fid(id), &m, NULL, 0);
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_establish(struct rdma_cm_id *id)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_ESTABLISH };
	int rc;

	if (id == NULL)
		return fail(EINVAL);
	rc = id_call(fid(id), &m, NULL, 0);
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_SET_OPTION,
				  .a = { (uint64_t)(int64_t)level, (uint64_t)(int64_t)optname } };
	int rc;

	if (id == NULL || optlen > 256 || (optlen && optval == NULL))
		return fail(EINVAL);
	m.h = fid(id)->h;
	rc = droce_fk_call(&m, optval, optlen, NULL, NULL);
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_INIT_QP_ATTR };
	struct ibv_qp_attr a;
	size_t ol = sizeof(a);
	int rc;

	if (id == NULL || attr == NULL || mask == NULL)
		return fail(EINVAL);
	m.h = fid(id)->h;
	a = *attr;
	rc = droce_fk_call(&m, &a, sizeof(a), &a, &ol);
	if (rc != 0)
		return fail(rc);
	*attr = a;
	*mask = (int)m.a[0];
	return 0;
}

int
droce_fk_cm_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_CREATE_QP };
	int rc;

	if (id == NULL || attr == NULL)
		return fail(EINVAL);
	if (attr->srq != NULL)
		return fail(EOPNOTSUPP);
	m.a[0] = pd ? ((struct fk_pd *)pd)->h : 0;
	m.a[1] = attr->send_cq ? ((struct fk_cq *)attr->send_cq)->h : 0;
	m.a[2] = attr->recv_cq ? ((struct fk_cq *)attr->recv_cq)->h : 0;
	rc = id_call(fid(id), &m, attr, sizeof(*attr));
	if (rc != 0)
		return fail(rc);
	if (id->qp != NULL) {
		attr->cap = ((struct fk_qp *)id->qp)->q.cap;
		id->qp->qp_context = attr->qp_context;
	}
	return 0;
}

void
droce_fk_cm_destroy_qp(struct rdma_cm_id *id)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_DESTROY_QP };

	if (id != NULL)
		id_call(fid(id), &m, NULL, 0);
}

int
droce_fk_cm_join_mc(struct rdma_cm_id *id, struct sockaddr *addr, uint32_t flags, void *context)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_JOIN_MC, .a = { flags, (uintptr_t)context } };
	struct sockaddr_storage a;
	int rc;

	if (id == NULL || addr == NULL)
		return fail(EINVAL);
	sa_copy(&a, addr);
	rc = id_call(fid(id), &m, &a, sizeof(a));
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_leave_mc(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_LEAVE_MC };
	struct sockaddr_storage a;
	int rc;

	if (id == NULL || addr == NULL)
		return fail(EINVAL);
	sa_copy(&a, addr);
	rc = id_call(fid(id), &m, &a, sizeof(a));
	return rc ? fail(rc) : 0;
}

int
droce_fk_cm_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct droce_fk_msg m = { .op = DROCE_FK_CM_GET_REQUEST };
	int rc;

	if (listen == NULL || id == NULL)
		return fail(EINVAL);
	m.h = fid(listen)->h;
	rc = id_from(&m, NULL, 0, listen->context, id);
	return rc ? fail(rc) : 0;
}

/* ---- events ---- */

int
droce_fk_cm_get_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
{
	struct fk_evch *c = (struct fk_evch *)ch;
	struct droce_fk_cm_event *ce;
	struct fk_event *e;
	struct fk_id *id, *lid = NULL;
	int fds[DROCE_FK_MAX_FDS], nfd = 0, rc;
	bool used[DROCE_FK_MAX_FDS] = { false };
	size_t ol = sizeof(*ce);

	if (ch == NULL || event == NULL)
		return fail(EINVAL);
	ce = malloc(sizeof(*ce));
	if (ce == NULL)
		return fail(ENOMEM);
	for (;;) {
		struct droce_fk_msg m = { .op = DROCE_FK_CM_GET_EVENT, .h = c->h };

		/* wait on the fd as the program set it up (the server takes
		 * the event only once it is there) */
		{
			struct pollfd p = { .fd = ch->fd, .events = POLLIN };
			bool nb = (fcntl(ch->fd, F_GETFL) & O_NONBLOCK) != 0;
			int r = poll(&p, 1, nb ? 0 : -1);

			if (r < 0) {
				free(ce);
				return -1;
			}
			if (r == 0) {
				free(ce);
				return fail(EAGAIN);
			}
		}
		ol = sizeof(*ce);
		rc = droce_fk_call_fds(&m, NULL, 0, ce, &ol, fds, &nfd);
		if (rc == EAGAIN) {
			for (int i = 0; i < nfd; i++)
				close(fds[i]);
			continue;
		}
		break;
	}
	if (rc == 0 && ol != sizeof(*ce))
		rc = EIO;
	e = rc == 0 ? calloc(1, sizeof(*e)) : NULL;
	if (rc == 0 && e == NULL)
		rc = ENOMEM;
	id = rc == 0 ? droce_fk_reg_get(FK_K_ID, ce->id.id) : NULL;
	if (rc == 0 && ce->listen.id != 0)
		lid = droce_fk_reg_get(FK_K_ID, ce->listen.id);
	if (rc == 0 && id == NULL) {
		/* a new id: a CONNECT_REQUEST's, on its listener's channel */
		id = id_new(ce->id.id, ch, lid ? lid->p.id.context : NULL);
		if (id == NULL)
			rc = ENOMEM;
	}
	if (rc != 0) {
		for (int i = 0; i < nfd; i++)
			close(fds[i]);
		if (ol == sizeof(*ce) && ce->ev != 0) {
			struct droce_fk_msg a = { .op = DROCE_FK_CM_ACK_EVENT, .h = ce->ev };

			droce_fk_call(&a, NULL, 0, NULL, NULL);
		}
		free(ce);
		free(e);
		return fail(rc);
	}
	id_apply(id, &ce->id, fds, used, nfd);
	if (lid != NULL)
		id_apply(lid, &ce->listen, fds, used, nfd);
	for (int i = 0; i < nfd; i++)
		if (!used[i])
			close(fds[i]);
	e->h = ce->ev;
	e->ev.id = &id->p.id;
	e->ev.listen_id = lid ? &lid->p.id : NULL;
	e->ev.event = (enum rdma_cm_event_type)ce->event;
	e->ev.status = ce->status;
	memcpy(e->pdata, ce->pdata, sizeof(e->pdata));
	if (ce->is_ud) {
		e->ev.param.ud = ce->ud;
		e->ev.param.ud.private_data = ce->pdlen ? e->pdata : (void *)(uintptr_t)ce->pdptr;
		e->ev.param.ud.private_data_len = (uint8_t)ce->pdlen;
	} else {
		e->ev.param.conn = ce->conn;
		e->ev.param.conn.private_data = ce->pdlen ? e->pdata : NULL;
		e->ev.param.conn.private_data_len = (uint8_t)ce->pdlen;
	}
	free(ce);
	*event = &e->ev;
	return 0;
}

int
droce_fk_cm_ack_event(struct rdma_cm_event *event)
{
	struct fk_event *e = (struct fk_event *)event;
	struct droce_fk_msg m = { .op = DROCE_FK_CM_ACK_EVENT };
	int rc;

	if (event == NULL)
		return fail(EINVAL);
	m.h = e->h;
	rc = droce_fk_call(&m, NULL, 0, NULL, NULL);
	free(e);
	return rc && rc != EIO ? fail(rc) : 0;
}
