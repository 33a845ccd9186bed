/* SPDX-License-Identifier: BSD-3-Clause
 * XRC: ibv_open_xrcd / ibv_close_xrcd, XRC SRQs (ibv_create_srq_ex with
 * IBV_SRQT_XRC, ibv_get_srq_num) and ibv_open_qp.  The XRC QPs themselves are
 * made by qp.c's create path (XRC_SEND: an RC requester whose requests carry
 * the remote SRQ number; XRC_RECV: an RC responder whose receive side each
 * request picks, dataplane/xrc.c).
 *
 * Domains: one per inode per device in this process, found by (device,
 * st_dev, st_ino) of the fd given to ibv_open_xrcd, or a private one for fd
 * -1; every handle opened on it shares it, and the last close frees it.  A
 * domain lives in one process: droce's SRQs and QPs are objects of that
 * process's engines, so a second process opening the same file gets its own
 * domain (O_CREAT), or EINVAL without O_CREAT, and cannot reach the first
 * process's SRQs (hardware shares them between processes; droce cannot).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

struct droce_xrc_domain {
	unsigned int port;         /* the device's droce port */
	bool inode;                /* false: fd -1, private */
	dev_t st_dev;
	ino_t st_ino;
	uint32_t id;
	unsigned int handles;      /* ibv_open_xrcd handles on it (under dom_lock) */
	TAILQ_ENTRY(droce_xrc_domain) link;
};

static pthread_mutex_t dom_lock = PTHREAD_MUTEX_INITIALIZER; /* both lists */
static TAILQ_HEAD(, droce_xrc_domain) domains = TAILQ_HEAD_INITIALIZER(domains);
static TAILQ_HEAD(, droce_vxrcd) handles = TAILQ_HEAD_INITIALIZER(handles);
static uint32_t next_id = 1;

uint32_t
droce_verbs_xrcd_id(const struct droce_vxrcd *x)
{
	return x->dom->id;
}

struct ibv_xrcd *
droce_verbs_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a)
{
	struct droce_vctx *x = droce_vctx_of(c);
	struct droce_xrc_domain *d = NULL;
	struct droce_vxrcd *h;
	struct stat st;

	if (a == NULL) {
		errno = EINVAL;
		return NULL;
	}
	/* rdma-core's rules: unknown bits EOPNOTSUPP, FD and OFLAGS both needed */
	if (a->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ||
	    (a->oflags & ~(O_CREAT | O_EXCL))) {
		errno = EINVAL;
		return NULL;
	}
	if (a->fd != -1 && fstat(a->fd, &st) != 0) {
		errno = EBADF;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dom_lock);
	if (a->fd != -1) {
		TAILQ_FOREACH(d, &domains, link)
			if (d->inode && d->port == x->port && d->st_dev == st.st_dev &&
			    d->st_ino == st.st_ino)
				break;
	}
	/* as the kernel: an existing domain with O_CREAT | O_EXCL, or none
	 * without O_CREAT (fd -1 always makes one), is EINVAL */
	if ((d != NULL && (a->oflags & O_CREAT) && (a->oflags & O_EXCL)) ||
	    (d == NULL && !(a->oflags & O_CREAT))) {
		pthread_mutex_unlock(&dom_lock);
		free(h);
		errno = EINVAL;
		return NULL;
	}
	if (d == NULL) {
		d = calloc(1, sizeof(*d));
		if (d == NULL) {
			pthread_mutex_unlock(&dom_lock);
			free(h);
			errno = ENOMEM;
			return NULL;
		}
		d->port = x->port;
		d->inode = a->fd != -1;
		if (d->inode) {
			d->st_dev = st.st_dev;
			d->st_ino = st.st_ino;
		}
		d->id = next_id++;
		TAILQ_INSERT_TAIL(&domains, d, link);
	}
	d->handles++;
	h->dom = d;
	h->xrcd.context = c;
	TAILQ_INSERT_TAIL(&handles, h, link);
	pthread_mutex_unlock(&dom_lock);
	return &h->xrcd;
}

int
droce_verbs_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct droce_vxrcd *h = (struct droce_vxrcd *)xrcd;
	struct droce_xrc_domain *d;

	if (h == NULL)
		return EINVAL;
	if (atomic_load(&h->users) != 0)
		return EBUSY; /* XRC SRQs or XRC_RECV QPs made with it remain */
	d = h->dom;
	pthread_mutex_lock(&dom_lock);
	TAILQ_REMOVE(&handles, h, link);
	if (--d->handles == 0) {
		TAILQ_REMOVE(&domains, d, link);
		free(d);
	}
	pthread_mutex_unlock(&dom_lock);
	free(h);
	return 0;
}

int
droce_verbs_xrcd_close_all(struct ibv_context *c)
{
	for (;;) {
		struct droce_vxrcd *h;
		int rc;

		pthread_mutex_lock(&dom_lock);
		TAILQ_FOREACH(h, &handles, link)
			if (h->xrcd.context == c)
				break;
		pthread_mutex_unlock(&dom_lock);
		if (h == NULL)
			return 0;
		rc = droce_verbs_close_xrcd(&h->xrcd); /* only this thread closes c's handles now */
		if (rc != 0)
			return rc;
	}
}

/* ---- XRC QPs ---- */

/* The XRC role of a QP type (qp.c's create path), and whether @ia and @xrcd
 * fit it: 0 or EINVAL.  Clears what the role has not (CQs, SRQ, caps). */
int
droce_verbs_xrc_role_of(struct ibv_context *c, struct ibv_pd *pd, struct ibv_qp_init_attr *ia,
	    struct droce_vxrcd *xrcd, enum droce_xrc_role *role)
{
	*role = DROCE_XRC_NONE;
	if (ia->qp_type == IBV_QPT_XRC_RECV) {
		/* a target: its domain only; no PD, CQs, SRQ or queues of its own */
		if (xrcd == NULL || xrcd->xrcd.context != c)
			return EINVAL;
		*role = DROCE_XRC_TGT;
		ia->send_cq = ia->recv_cq = NULL;
		ia->srq = NULL;
		memset(&ia->cap, 0, sizeof(ia->cap));
		return 0;
	}
	if (pd == NULL || pd->context != c || ia->send_cq == NULL || ia->send_cq->context != c)
		return EINVAL;
	if (ia->qp_type == IBV_QPT_XRC_SEND) {
		/* an initiator: no receive side */
		if (ia->srq != NULL)
			return EINVAL;
		*role = DROCE_XRC_INI; /* its recv_cq is ignored */
		ia->cap.max_recv_wr = ia->cap.max_recv_sge = 0;
		return 0;
	}
	if (ia->recv_cq == NULL || ia->recv_cq->context != c)
		return EINVAL;
	return 0;
}

/* ---- XRC SRQs ---- */

struct ibv_srq *
droce_verbs_create_xrc_srq(struct ibv_context *c, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	struct droce_vxrcd *h = (struct droce_vxrcd *)a->xrcd;
	struct droce_vcq *cq = (struct droce_vcq *)a->cq;
	struct ibv_srq_init_attr ia;
	struct droce_vsrq *s;
	struct ibv_srq *srq;
	int rc;

	if ((a->comp_mask & need) != need || h == NULL || cq == NULL || a->pd == NULL ||
	    h->xrcd.context != c || cq->cq.context != c || a->pd->context != c) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = a->srq_context;
	ia.attr = a->attr;
	srq = ibv_create_srq(a->pd, &ia); /* sizes checked there */
	if (srq == NULL)
		return NULL;
	s = (struct droce_vsrq *)srq;
	rc = droce_xrc_srq_publish(s->dsrq, h->dom->id, ((struct droce_vpd *)a->pd)->id, cq->dcq,
				   &s->srqn);
	if (rc != 0) {
		ibv_destroy_srq(srq);
		errno = rc;
		return NULL;
	}
	s->xrcd = h;
	s->cq = cq;
	atomic_fetch_add(&h->users, 1);
	atomic_fetch_add(&cq->users, 1);
	a->attr = ia.attr;
	return srq;
}

int
droce_verbs_xrc_srq_retire(struct droce_vsrq *s)
{
	int rc = droce_xrc_srq_unpublish(s->srqn);

	if (rc != 0)
		return rc; /* EBUSY: an XRC_RECV QP still holds it */
	s->srqn = 0;
	atomic_fetch_sub(&s->xrcd->users, 1);
	atomic_fetch_sub(&s->cq->users, 1);
	s->xrcd = NULL;
	s->cq = NULL;
	return 0;
}

int
droce_verbs_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	struct droce_vsrq *s = (struct droce_vsrq *)srq;

	if (s == NULL || srq_num == NULL || s->srqn == 0)
		return EINVAL; /* not an XRC SRQ */
	*srq_num = s->srqn;
	return 0;
}

/* ---- ibv_open_qp ---- */

struct open_find {
	uint32_t qpn;
	const struct droce_xrc_domain *dom;
	struct droce_vqp *found;
};

static int
find_tgt(struct droce_vqp *q, void *arg)
{
	struct open_find *f = arg;

	if (q->real == NULL && q->xrc_role == DROCE_XRC_TGT && q->qp.qp_num == f->qpn &&
	    q->xrcd != NULL && q->xrcd->dom == f->dom) {
		atomic_fetch_add(&q->opened, 1); /* under its context's lock: it stays */
		f->found = q;
		return 1;
	}
	return 0;
}

struct ibv_qp *
droce_verbs_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	struct droce_vctx *x = droce_vctx_of(c);
	struct open_find f = { 0 };
	struct droce_vqp *q;

	if (a == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (a->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* only an XRC_RECV QP of the domain can be opened (the kernel's rule) */
	if ((a->comp_mask & need) != need || a->xrcd == NULL || a->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	f.qpn = a->qp_num;
	f.dom = ((struct droce_vxrcd *)a->xrcd)->dom;
	droce_verbs_qp_walk(find_tgt, &f);
	if (f.found == NULL) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL) {
		atomic_fetch_sub(&f.found->opened, 1);
		errno = ENOMEM;
		return NULL;
	}
	q->real = f.found;
	q->dqp = f.found->dqp;
	q->type = f.found->type;
	q->xrc_role = DROCE_XRC_TGT;
	q->xrcd = (struct droce_vxrcd *)a->xrcd;
	q->serial = droce_verbs_serial();
	q->qp.context = c;
	q->qp.qp_context = (a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ? a->qp_context : NULL;
	q->qp.qp_num = f.found->qp.qp_num;
	q->qp.handle = q->qp.qp_num;
	q->qp.qp_type = IBV_QPT_XRC_RECV;
	q->qp.state = (enum ibv_qp_state)droce_vqp_state(f.found);
	pthread_mutex_init(&q->lock, NULL);
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	droce_verbs_wr_init(q);
	atomic_fetch_add(&q->xrcd->users, 1);
	pthread_mutex_lock(&x->lock);
	TAILQ_INSERT_HEAD(&x->qps, q, ctx_link); /* closed before the QPs it opened */
	pthread_mutex_unlock(&x->lock);
	return &q->qp;
}
