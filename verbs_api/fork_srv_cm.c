/* SPDX-License-Identifier: BSD-3-Clause
 * The parent's side of rdma_cm in forked children (fork.h): the requests on
 * event channels, ids and events, run with the ordinary rdma_cm calls.  In
 * librdmacm's library: a constructor hands its handlers to fork_srv.c.
 *
 * An id's rdma_cm context and PD, and what rdma_create_qp made for it (QP,
 * CQs, completion channels), enter the child's table as "borrowed" on first
 * sight (id_state): the rdma_cm destroys them, the child gets shadows.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "fork_srv.h"
#include "internal.h"


static int
out_fd(struct fk_io *io, int fd)
{
	if (io->nofd == DROCE_FK_MAX_FDS)
		return -1;
	io->ofds[io->nofd] = fd;
	return io->nofd++;
}

/* The handle of @p, registered as borrowed (owned by id @owner) when new. */
static uint64_t
borrow(struct fk_client *c, enum fk_type t, void *p, uint64_t owner, bool *fresh)
{
	uint64_t h;

	if (fresh != NULL)
		*fresh = false;
	if (p == NULL)
		return 0;
	h = droce_fk_obj_find(c, t, p);
	if (h != 0)
		return h;
	h = droce_fk_obj_add(c, t, p);
	if (h != 0) {
		struct fk_obj *o = droce_fk_obj_get(c, h, t);

		o->borrowed = true;
		o->owner = owner;
		if (fresh != NULL)
			*fresh = true;
	}
	return h;
}

static uint64_t
chan_borrow(struct fk_client *c, struct fk_io *io, struct ibv_comp_channel *ch, uint64_t owner,
	    int32_t *fd)
{
	bool fresh;
	uint64_t h = borrow(c, FK_T_CHAN, ch, owner, &fresh);

	if (h != 0 && fresh) {
		((struct droce_vchan *)ch)->remote = true;
		droce_fk_obj_get(c, h, FK_T_CHAN)->fd = droce_fk_own_fd(ch->fd);
		*fd = out_fd(io, ch->fd);
	}
	return h;
}

static void
id_state(struct fk_client *c, struct fk_io *io, struct rdma_cm_id *id, struct droce_fk_id_state *st)
{
	bool fresh;

	memset(st, 0, sizeof(*st));
	st->fd_ctx = st->fd_schan = st->fd_rchan = -1;
	if (id == NULL)
		return;
	st->id = droce_fk_obj_find(c, FK_T_ID, id);
	if (id->verbs != NULL) {
		st->ctx = borrow(c, FK_T_CTX, id->verbs, 0, &fresh);
		if (st->ctx != 0 && fresh) {
			droce_fk_obj_get(c, st->ctx, FK_T_CTX)->fd = droce_fk_own_fd(id->verbs->async_fd);
			st->fd_ctx = out_fd(io, id->verbs->async_fd);
		}
		st->dev = (uint32_t)ibv_get_device_index(id->verbs->device);
		st->ncomp = id->verbs->num_comp_vectors;
	}
	st->pd = borrow(c, FK_T_PD, id->pd, 0, NULL);
	st->schan = chan_borrow(c, io, id->send_cq_channel, st->id, &st->fd_schan);
	st->rchan = chan_borrow(c, io, id->recv_cq_channel, st->id, &st->fd_rchan);
	st->scq = borrow(c, FK_T_CQ, id->send_cq, st->id, NULL);
	st->rcq = borrow(c, FK_T_CQ, id->recv_cq, st->id, NULL);
	st->scqe = id->send_cq ? id->send_cq->cqe : 0;
	st->rcqe = id->recv_cq ? id->recv_cq->cqe : 0;
	st->qp = borrow(c, FK_T_QP, id->qp, st->id, NULL);
	if (id->qp != NULL) {
		st->qp_num = id->qp->qp_num;
		st->qp_state = id->qp->state;
		st->cap = ((struct droce_vqp *)id->qp)->cap;
	}
	st->port_num = id->port_num;
	st->ps = id->ps;
	st->qp_type = id->qp_type;
	st->addr = id->route.addr;
	st->num_paths = id->route.num_paths;
	if (id->route.path_rec != NULL && id->route.num_paths > 0)
		st->path = id->route.path_rec[0];
}

/* The response of a request on an id: its state as the payload. */
static void
id_out(struct fk_client *c, struct fk_io *io, struct rdma_cm_id *id)
{
	id_state(c, io, id, (struct droce_fk_id_state *)io->out);
	io->olen = sizeof(struct droce_fk_id_state);
}

static int
cm_rc(int r)
{
	return r == 0 ? 0 : droce_fk_errno_or(EINVAL);
}

/* Table entries the rdma_cm destroyed with id @h's QP (or the id): dropped;
 * @keep: they stay, now ours (the id went, its QP did not). */
static void
release_owned(struct fk_client *c, uint64_t h, bool keep)
{
	for (uint32_t i = 0; i < c->n; i++) {
		struct fk_obj *o = &c->o[i];

		if (o->type == FK_T_FREE || !o->borrowed || o->owner != h || h == 0)
			continue;
		if (keep) {
			o->borrowed = false;
			o->owner = 0;
		} else {
			droce_fk_obj_free(o);
		}
	}
}

static void
op_cm_create_chan(struct fk_client *c, struct fk_io *io)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	uint64_t h;
	int fd;

	if (ch == NULL) {
		io->m.rc = droce_fk_errno_or(ENOMEM);
		return;
	}
	fd = droce_fk_own_fd(ch->fd);
	h = fd >= 0 ? droce_fk_obj_add(c, FK_T_EVCH, ch) : 0;
	if (h == 0) {
		if (fd >= 0)
			close(fd);
		rdma_destroy_event_channel(ch);
		io->m.rc = ENOMEM;
		return;
	}
	droce_fk_obj_get(c, h, FK_T_EVCH)->fd = fd;
	io->m.h = h;
	io->ofds[io->nofd++] = ch->fd;
}

static void
op_cm_destroy_chan(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_EVCH, io->m.h);
	rdma_destroy_event_channel(o->p);
	droce_fk_obj_free(o);
}

/* h: the event channel (0: a synchronous id), a[0] the port space */
static void
op_cm_create_id(struct fk_client *c, struct fk_io *io)
{
	struct fk_obj *ch = NULL;
	struct rdma_cm_id *id;

	if (io->m.h != 0 && (ch = droce_fk_obj_get(c, io->m.h, FK_T_EVCH)) == NULL) {
		io->m.rc = EINVAL;
		return;
	}
	if (rdma_create_id(ch ? ch->p : NULL, &id, NULL, (enum rdma_port_space)io->m.a[0]) != 0) {
		io->m.rc = droce_fk_errno_or(EINVAL);
		return;
	}
	if (droce_fk_obj_add(c, FK_T_ID, id) == 0) {
		rdma_destroy_id(id);
		io->m.rc = ENOMEM;
		return;
	}
	id_out(c, io, id);
}

/* h: PD (0: none), a[0], a[1] the QP's CQs; payload struct droce_fk_ep_req */
static void
op_cm_create_ep(struct fk_client *c, struct fk_io *io)
{
	struct droce_fk_ep_req r;
	struct fk_obj *pd = NULL, *s = NULL, *rc = NULL;
	struct rdma_cm_id *id;
	uint64_t h;

	if (io->plen != sizeof(r) || (io->m.h && !(pd = droce_fk_obj_get(c, io->m.h, FK_T_PD))) ||
	    (io->m.a[0] && !(s = droce_fk_obj_get(c, io->m.a[0], FK_T_CQ))) ||
	    (io->m.a[1] && !(rc = droce_fk_obj_get(c, io->m.a[1], FK_T_CQ)))) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&r, io->pl, sizeof(r));
	if (r.ai.ai_src_len > sizeof(r.src) || r.ai.ai_dst_len > sizeof(r.dst)) {
		io->m.rc = EINVAL;
		return;
	}
	r.ai.ai_src_addr = r.ai.ai_src_len ? (struct sockaddr *)&r.src : NULL;
	r.ai.ai_dst_addr = r.ai.ai_dst_len ? (struct sockaddr *)&r.dst : NULL;
	r.ai.ai_src_canonname = r.ai.ai_dst_canonname = NULL;
	r.ai.ai_route = NULL;
	r.ai.ai_route_len = 0;
	r.ai.ai_connect = NULL;
	r.ai.ai_connect_len = 0;
	r.ai.ai_next = NULL;
	r.qia.send_cq = s ? s->p : NULL;
	r.qia.recv_cq = rc ? rc->p : NULL;
	r.qia.srq = NULL;
	if (rdma_create_ep(&id, &r.ai, pd ? pd->p : NULL, r.has_qp ? &r.qia : NULL) != 0) {
		io->m.rc = droce_fk_errno_or(EINVAL);
		return;
	}
	h = droce_fk_obj_add(c, FK_T_ID, id);
	if (h == 0) {
		rdma_destroy_ep(id);
		io->m.rc = ENOMEM;
		return;
	}
	droce_fk_obj_get(c, h, FK_T_ID)->ep = true;
	id_out(c, io, id);
}

static void
op_cm_destroy_id(struct fk_client *c, struct fk_io *io)
{
	struct rdma_cm_id *id;
	bool ep;

	OBJ(o, FK_T_ID, io->m.h);
	id = o->p;
	ep = o->ep;
	if (ep) {
		rdma_destroy_ep(id); /* its QP, CQs and channels with it */
		release_owned(c, io->m.h, false);
	} else {
		io->m.rc = rdma_destroy_id(id) == 0 ? 0 : droce_fk_errno_or(EBUSY);
		if (io->m.rc != 0)
			return;
		release_owned(c, io->m.h, true); /* as librdmacm: its QP stays */
	}
	droce_fk_obj_free(o);
}

static const struct sockaddr *
pl_addr(struct fk_io *io, size_t at)
{
	if (io->plen < at + sizeof(struct sockaddr_storage))
		return NULL;
	return (const struct sockaddr *)(io->pl + at);
}

static void
op_cm_bind(struct fk_client *c, struct fk_io *io)
{
	struct sockaddr_storage a;

	OBJ(o, FK_T_ID, io->m.h);
	if (pl_addr(io, 0) == NULL) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&a, io->pl, sizeof(a));
	io->m.rc = cm_rc(rdma_bind_addr(o->p, (struct sockaddr *)&a));
	id_out(c, io, o->p);
}

/* payload: src, dst (sockaddr_storage each); a[0] src given, a[1] timeout */
static void
op_cm_resolve_addr(struct fk_client *c, struct fk_io *io)
{
	struct sockaddr_storage a[2];

	OBJ(o, FK_T_ID, io->m.h);
	if (io->plen != sizeof(a)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(a, io->pl, sizeof(a));
	io->m.rc = cm_rc(rdma_resolve_addr(o->p, io->m.a[0] ? (struct sockaddr *)&a[0] : NULL,
					   (struct sockaddr *)&a[1], (int)io->m.a[1]));
	id_out(c, io, o->p);
}

static void
op_cm_resolve_route(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_ID, io->m.h);
	io->m.rc = cm_rc(rdma_resolve_route(o->p, (int)io->m.a[0]));
	id_out(c, io, o->p);
}

static void
op_cm_listen(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_ID, io->m.h);
	io->m.rc = cm_rc(rdma_listen(o->p, (int)io->m.a[0]));
	id_out(c, io, o->p);
}

/* payload: struct rdma_conn_param, then its private data; a[0]: a param given */
static bool
conn_param(struct fk_io *io, struct rdma_conn_param *p)
{
	if (io->m.a[0] == 0)
		return true;
	if (io->plen < sizeof(*p))
		return false;
	memcpy(p, io->pl, sizeof(*p));
	if (io->plen < sizeof(*p) + p->private_data_len)
		return false;
	p->private_data = p->private_data_len ? io->pl + sizeof(*p) : NULL;
	return true;
}

static void
op_cm_connect(struct fk_client *c, struct fk_io *io)
{
	struct rdma_conn_param p;

	OBJ(o, FK_T_ID, io->m.h);
	if (!conn_param(io, &p)) {
		io->m.rc = EINVAL;
		return;
	}
	io->m.rc = cm_rc(rdma_connect(o->p, io->m.a[0] ? &p : NULL));
	id_out(c, io, o->p);
}

static void
op_cm_accept(struct fk_client *c, struct fk_io *io)
{
	struct rdma_conn_param p;

	OBJ(o, FK_T_ID, io->m.h);
	if (!conn_param(io, &p)) {
		io->m.rc = EINVAL;
		return;
	}
	io->m.rc = cm_rc(rdma_accept(o->p, io->m.a[0] ? &p : NULL));
	id_out(c, io, o->p);
}

static void
op_cm_reject(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_ID, io->m.h);
	if (io->plen > 255) {
		io->m.rc = EINVAL;
		return;
	}
	io->m.rc = cm_rc(rdma_reject(o->p, io->plen ? io->pl : NULL, (uint8_t)io->plen));
	id_out(c, io, o->p);
}

static void
op_cm_disconnect(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_ID, io->m.h);
	io->m.rc = cm_rc(rdma_disconnect(o->p));
	id_out(c, io, o->p);
}

static void
op_cm_establish(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_ID, io->m.h);
	io->m.rc = cm_rc(rdma_establish(o->p));
	id_out(c, io, o->p);
}

static void
op_cm_set_option(struct fk_client *c, struct fk_io *io)
{
	uint8_t v[256];

	OBJ(o, FK_T_ID, io->m.h);
	if (io->plen > sizeof(v)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(v, io->pl, io->plen);
	io->m.rc = cm_rc(rdma_set_option(o->p, (int)io->m.a[0], (int)io->m.a[1], io->plen ? v : NULL,
					 io->plen));
}

static void
op_cm_init_qp_attr(struct fk_client *c, struct fk_io *io)
{
	struct ibv_qp_attr *a = (struct ibv_qp_attr *)io->out;
	int mask = 0;

	OBJ(o, FK_T_ID, io->m.h);
	if (io->plen != sizeof(*a)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(a, io->pl, sizeof(*a));
	io->m.rc = cm_rc(rdma_init_qp_attr(o->p, a, &mask));
	io->m.a[0] = (uint64_t)mask;
	io->olen = sizeof(*a);
}

/* a[0] PD (0: the id's), a[1], a[2] CQs (0: the rdma_cm makes them); payload the init attributes */
static void
op_cm_create_qp(struct fk_client *c, struct fk_io *io)
{
	struct ibv_qp_init_attr ia;
	struct fk_obj *pd = NULL, *s = NULL, *r = NULL;

	OBJ(o, FK_T_ID, io->m.h);
	if (io->plen != sizeof(ia) || (io->m.a[0] && !(pd = droce_fk_obj_get(c, io->m.a[0], FK_T_PD))) ||
	    (io->m.a[1] && !(s = droce_fk_obj_get(c, io->m.a[1], FK_T_CQ))) ||
	    (io->m.a[2] && !(r = droce_fk_obj_get(c, io->m.a[2], FK_T_CQ)))) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&ia, io->pl, sizeof(ia));
	ia.send_cq = s ? s->p : NULL;
	ia.recv_cq = r ? r->p : NULL;
	ia.srq = NULL;
	io->m.rc = cm_rc(rdma_create_qp(o->p, pd ? pd->p : NULL, &ia));
	id_out(c, io, o->p);
}

static void
op_cm_destroy_qp(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_ID, io->m.h);
	rdma_destroy_qp(o->p);
	release_owned(c, io->m.h, false);
	id_out(c, io, o->p);
}

/* payload the group's address; a[0] join flags, a[1] the child's context */
static void
op_cm_join_mc(struct fk_client *c, struct fk_io *io)
{
	struct sockaddr_storage a;
	struct rdma_cm_join_mc_attr_ex attr = { 0 };

	OBJ(o, FK_T_ID, io->m.h);
	if (io->plen != sizeof(a)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&a, io->pl, sizeof(a));
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = (uint32_t)io->m.a[0];
	attr.addr = (struct sockaddr *)&a;
	io->m.rc = cm_rc(rdma_join_multicast_ex(o->p, &attr, (void *)(uintptr_t)io->m.a[1]));
	id_out(c, io, o->p);
}

static void
op_cm_leave_mc(struct fk_client *c, struct fk_io *io)
{
	struct sockaddr_storage a;

	OBJ(o, FK_T_ID, io->m.h);
	if (io->plen != sizeof(a)) {
		io->m.rc = EINVAL;
		return;
	}
	memcpy(&a, io->pl, sizeof(a));
	io->m.rc = cm_rc(rdma_leave_multicast(o->p, (struct sockaddr *)&a));
	id_out(c, io, o->p);
}

static void
op_cm_get_event(struct fk_client *c, struct fk_io *io)
{
	struct droce_fk_cm_event *ce = (struct droce_fk_cm_event *)io->out;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	uint64_t h;
	int fd, r;

	OBJ(o, FK_T_EVCH, io->m.h);
	if (!droce_fk_readable(o->fd)) {
		io->m.rc = EAGAIN;
		return;
	}
	ch = o->p;
	fd = ch->fd;
	ch->fd = o->fd;
	r = rdma_get_cm_event(ch, &ev);
	ch->fd = fd;
	if (r != 0) {
		io->m.rc = droce_fk_errno_or(EAGAIN);
		return;
	}
	h = droce_fk_obj_add(c, FK_T_EVENT, ev);
	if (h == 0 || (droce_fk_obj_find(c, FK_T_ID, ev->id) == 0 && droce_fk_obj_add(c, FK_T_ID, ev->id) == 0)) {
		/* a new id (a CONNECT_REQUEST's) the child could not be told of */
		if (h != 0)
			droce_fk_obj_free(droce_fk_obj_get(c, h, FK_T_EVENT));
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			rdma_reject(ev->id, NULL, 0);
		rdma_ack_cm_event(ev);
		io->m.rc = ENOMEM;
		return;
	}
	memset(ce, 0, sizeof(*ce));
	ce->ev = h;
	ce->event = ev->event;
	ce->status = ev->status;
	ce->is_ud = ev->id->ps == RDMA_PS_UDP || ev->id->ps == RDMA_PS_IPOIB;
	if (ce->is_ud) {
		ce->ud = ev->param.ud;
		ce->pdlen = ev->param.ud.private_data_len;
		ce->pdptr = (uintptr_t)ev->param.ud.private_data;
		if (ce->pdlen && ev->param.ud.private_data)
			memcpy(ce->pdata, ev->param.ud.private_data, ce->pdlen);
		ce->ud.private_data = NULL;
	} else {
		ce->conn = ev->param.conn;
		ce->pdlen = ev->param.conn.private_data_len;
		if (ce->pdlen && ev->param.conn.private_data)
			memcpy(ce->pdata, ev->param.conn.private_data, ce->pdlen);
		ce->conn.private_data = NULL;
	}
	if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN && ev->event != RDMA_CM_EVENT_MULTICAST_ERROR)
		ce->pdptr = 0;
	{
		/* the states' descriptors: counted once, whichever state names them */
		struct droce_fk_id_state st;

		id_state(c, io, ev->id, &st);
		ce->id = st;
		id_state(c, io, ev->listen_id, &st);
		ce->listen = st;
	}
	io->olen = sizeof(*ce);
}

static void
op_cm_ack_event(struct fk_client *c, struct fk_io *io)
{
	OBJ(o, FK_T_EVENT, io->m.h);
	io->m.rc = cm_rc(rdma_ack_cm_event(o->p));
	droce_fk_obj_free(o);
}

static void
op_cm_get_request(struct fk_client *c, struct fk_io *io)
{
	struct rdma_cm_id *id;

	OBJ(o, FK_T_ID, io->m.h);
	if (rdma_get_request(o->p, &id) != 0) {
		io->m.rc = droce_fk_errno_or(EINVAL);
		return;
	}
	if (droce_fk_obj_add(c, FK_T_ID, id) == 0) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_ep(id);
		io->m.rc = ENOMEM;
		return;
	}
	droce_fk_obj_get(c, droce_fk_obj_find(c, FK_T_ID, id), FK_T_ID)->ep = true;
	id_out(c, io, id);
}


/* A child's end (fork_srv.c's client_end), for the rdma_cm's objects. */
static int
cm_end(struct fk_client *c, struct fk_obj *o, uint64_t h)
{
	int rc = 0;

	switch (o->type) {
	case FK_T_EVENT:
		rc = rdma_ack_cm_event(o->p) == 0 ? 0 : droce_fk_errno_or(EINVAL);
		break;
	case FK_T_ID: {
		struct rdma_cm_id *id = o->p;

		if (o->ep) {
			rdma_destroy_ep(id);
		} else {
			struct fk_obj *q = id->qp ? droce_fk_obj_get(c, droce_fk_obj_find(c, FK_T_QP, id->qp), FK_T_QP) : NULL;

			if (q != NULL && q->borrowed)
				rdma_destroy_qp(id);
			rc = rdma_destroy_id(id) == 0 ? 0 : droce_fk_errno_or(EBUSY);
		}
		if (rc == 0)
			release_owned(c, h, false);
		break;
	}
	case FK_T_EVCH:
		rdma_destroy_event_channel(o->p);
		break;
	default:
		break;
	}
	return rc;
}

__attribute__((constructor)) static void
fork_srv_cm_init(void)
{
	droce_fk_ops[DROCE_FK_CM_CREATE_CHAN] = op_cm_create_chan;
	droce_fk_ops[DROCE_FK_CM_DESTROY_CHAN] = op_cm_destroy_chan;
	droce_fk_ops[DROCE_FK_CM_CREATE_ID] = op_cm_create_id;
	droce_fk_ops[DROCE_FK_CM_CREATE_EP] = op_cm_create_ep;
	droce_fk_ops[DROCE_FK_CM_DESTROY_ID] = op_cm_destroy_id;
	droce_fk_ops[DROCE_FK_CM_BIND] = op_cm_bind;
	droce_fk_ops[DROCE_FK_CM_RESOLVE_ADDR] = op_cm_resolve_addr;
	droce_fk_ops[DROCE_FK_CM_RESOLVE_ROUTE] = op_cm_resolve_route;
	droce_fk_ops[DROCE_FK_CM_LISTEN] = op_cm_listen;
	droce_fk_ops[DROCE_FK_CM_CONNECT] = op_cm_connect;
	droce_fk_ops[DROCE_FK_CM_ACCEPT] = op_cm_accept;
	droce_fk_ops[DROCE_FK_CM_REJECT] = op_cm_reject;
	droce_fk_ops[DROCE_FK_CM_DISCONNECT] = op_cm_disconnect;
	droce_fk_ops[DROCE_FK_CM_ESTABLISH] = op_cm_establish;
	droce_fk_ops[DROCE_FK_CM_SET_OPTION] = op_cm_set_option;
	droce_fk_ops[DROCE_FK_CM_INIT_QP_ATTR] = op_cm_init_qp_attr;
	droce_fk_ops[DROCE_FK_CM_CREATE_QP] = op_cm_create_qp;
	droce_fk_ops[DROCE_FK_CM_DESTROY_QP] = op_cm_destroy_qp;
	droce_fk_ops[DROCE_FK_CM_JOIN_MC] = op_cm_join_mc;
	droce_fk_ops[DROCE_FK_CM_LEAVE_MC] = op_cm_leave_mc;
	droce_fk_ops[DROCE_FK_CM_GET_EVENT] = op_cm_get_event;
	droce_fk_ops[DROCE_FK_CM_ACK_EVENT] = op_cm_ack_event;
	droce_fk_ops[DROCE_FK_CM_GET_REQUEST] = op_cm_get_request;
	droce_fk_cm_end = cm_end;
}
