/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm layer's connections: the rdma_cm private-data header, connect,
 * listen, get_request, accept, reject, establish, notify, disconnect.  The
 * CM's handlers that answer them (connection events, the listener's
 * requests) are rdmacm_handlers.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <rte_random.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "internal.h"
#include "fork.h"
#include "rdmacm.h"


/* ---- the rdma_cm header (the kernel's struct cma_hdr) ---- */

static void
hdr_put(uint8_t *h, const struct sockaddr *src, const struct sockaddr *dst)
{
	uint16_t sport = htons(droce_rcm_sa_port(src));

	memset(h, 0, DROCE_RCM_HDR_LEN);
	h[0] = DROCE_RCM_HDR_VERSION;
	memcpy(h + 2, &sport, 2);
	if (src->sa_family == AF_INET) {
		h[1] = 4 << 4;
		memcpy(h + 4 + 12, &((const struct sockaddr_in *)src)->sin_addr, 4);
		memcpy(h + 20 + 12, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		h[1] = 6 << 4;
		memcpy(h + 4, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(h + 20, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
}

/* Parses a header: the peer's (src) and our (dst) addresses.  false if bad. */
bool
rcm_hdr_get(const uint8_t *h, size_t len, struct sockaddr_storage *src, struct sockaddr_storage *dst,
	uint16_t dst_port)
{
	uint16_t sport;

	if (h == NULL || len < DROCE_RCM_HDR_LEN || h[0] != DROCE_RCM_HDR_VERSION)
		return false;
	memcpy(&sport, h + 2, 2);
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if ((h[1] >> 4) == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)src, *d = (struct sockaddr_in *)dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, h + 4 + 12, 4);
		memcpy(&d->sin_addr, h + 20 + 12, 4);
		s->sin_port = sport;
		d->sin_port = htons(dst_port);
		return true;
	}
	if ((h[1] >> 4) == 6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)src, *d = (struct sockaddr_in6 *)dst;

		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, h + 4, 16);
		memcpy(&d->sin6_addr, h + 20, 16);
		s->sin6_port = sport;
		d->sin6_port = htons(dst_port);
		return true;
	}
	return false;
}

/* ---- connecting ---- */

static uint8_t
clamp_rd(uint8_t v)
{
	uint8_t max = droce_rcm_max_rd_atomic();

	return v > max ? max : v;
}

static int
valid_param(struct droce_rcm_id *p, const struct rdma_conn_param *c)
{
	uint8_t max = droce_rcm_max_rd_atomic();

	if (p->id.ps != RDMA_PS_TCP)
		return 0;
	if (p->id.qp == NULL && c == NULL)
		return ERR(EINVAL);
	if (c == NULL)
		return 0;
	if (c->responder_resources != RDMA_MAX_RESP_RES && c->responder_resources > max)
		return ERR(EINVAL);
	if (c->initiator_depth != RDMA_MAX_INIT_DEPTH && c->initiator_depth > max)
		return ERR(EINVAL);
	return 0;
}

static void
fill_cm_addr(struct droce_rcm_id *p, struct droce_cm_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->port = (unsigned int)p->port;
	memcpy(a->sgid, p->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(a->dgid, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	a->flow_label = p->flow_label;
	a->traffic_class = p->tos;
	a->hop_limit = DROCE_RCM_DEFAULT_HOP_LIMIT;
}

/* Bytes of private data the user passes in @c. */
static size_t
user_pdata_len(const struct rdma_conn_param *c)
{
	return c && c->private_data ? c->private_data_len : 0;
}

/*
 * The prologue rdma_connect, rdma_accept and rdma_reject share: takes
 * droce_rcm_lock and checks that @p is in @state (with its CM connection when
 * @need_conn) and that @len bytes of private data fit (@max_ud for a UD id,
 * @max_rc else).  0 with the lock held, or -1 with errno = EINVAL and the
 * lock released.
 */
static int
answer_begin(struct droce_rcm_id *p, enum droce_rcm_state state, bool need_conn, size_t len,
	     size_t max_ud, size_t max_rc)
{
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != state || (need_conn && p->conn == NULL) ||
	    len > (p->id.qp_type == IBV_QPT_UD ? max_ud : max_rc)) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	return 0;
}

/* Answers a SIDR REQ with @status (the QPN and Q_Key on success); 0 or an errno. */
static int
sidr_answer_locked(struct droce_rcm_id *p, uint8_t status, uint32_t qpn, const void *pdata,
		   size_t len)
{
	struct droce_cm_sidr_rep rep;

	memset(&rep, 0, sizeof(rep));
	rep.status = status;
	if (status == DROCE_CM_SIDR_SUCCESS) {
		rep.qpn = qpn;
		rep.qkey = p->qkey;
	}
	rep.private_data = len ? pdata : NULL;
	rep.private_data_len = (uint8_t)len;
	return droce_cm_sidr_rep(p->conn, &rep) == 0 ? 0 : (errno ? errno : EIO);
}

static int
connect_ud(struct droce_rcm_id *p, const struct rdma_conn_param *c)
{
	struct droce_cm_sidr_req r;
	uint8_t pd[DROCE_CM_SIDR_REQ_PDATA];
	size_t ulen = user_pdata_len(c);
	int rc;

	memset(&r, 0, sizeof(r));
	fill_cm_addr(p, &r.addr);
	r.service_id = droce_rcm_service_id((uint16_t)p->id.ps,
					    droce_rcm_sa_port(&p->id.route.addr.dst_addr));
	r.pkey = 0xffff;
	hdr_put(pd, &p->id.route.addr.src_addr, &p->id.route.addr.dst_addr);
	if (ulen)
		memcpy(pd + DROCE_RCM_HDR_LEN, c->private_data, ulen);
	r.private_data = pd;
	r.private_data_len = (uint8_t)(DROCE_RCM_HDR_LEN + ulen);
	rc = droce_cm_sidr_req(&r, rcm_conn_handler, p, &p->conn);
	return rc ? (errno ? errno : EIO) : 0;
}

int
rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	if (droce_fk_child_served())
		return droce_fk_cm_connect(id, conn_param);
	struct droce_rcm_id *p;
	struct droce_cm_req r;
	uint8_t pd[DROCE_CM_REQ_PDATA];
	size_t ulen;
	int rc;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (valid_param(p, conn_param) != 0)
		return -1;
	ulen = user_pdata_len(conn_param);
	if (answer_begin(p, DROCE_RCM_ROUTE_RESOLVED, false, ulen,
			 DROCE_CM_SIDR_REQ_PDATA - DROCE_RCM_HDR_LEN,
			 DROCE_CM_REQ_PDATA - DROCE_RCM_HDR_LEN) != 0)
		return -1;
	if (id->qp_type == IBV_QPT_UD) {
		rc = connect_ud(p, conn_param);
		if (rc == 0)
			p->state = DROCE_RCM_CONNECT;
		pthread_mutex_unlock(&droce_rcm_lock);
		if (rc != 0)
			return ERR(rc);
		return rcm_complete_sync(p);
	}
	p->initiator_depth = conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH ?
			     conn_param->initiator_depth : droce_rcm_max_rd_atomic();
	p->responder_resources =
		conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES ?
		conn_param->responder_resources : droce_rcm_max_rd_atomic();
	memset(&r, 0, sizeof(r));
	fill_cm_addr(p, &r.addr);
	r.service_id = droce_rcm_service_id((uint16_t)p->id.ps,
					    droce_rcm_sa_port(&p->id.route.addr.dst_addr));
	r.qpn = id->qp ? id->qp->qp_num : (conn_param ? conn_param->qp_num : 0);
	r.srq = id->qp ? id->qp->srq != NULL : (conn_param ? conn_param->srq != 0 : false);
	p->local_psn = (uint32_t)(rte_rand() & 0xffffff);
	r.starting_psn = p->local_psn;
	r.qp_type = (uint8_t)id->qp_type;
	r.responder_resources = p->responder_resources;
	r.initiator_depth = p->initiator_depth;
	r.path_mtu = (uint8_t)droce_verbs_port_mtu((unsigned int)p->port);
	p->local_ack_timeout = p->ack_timeout ? p->ack_timeout : DROCE_RCM_DEFAULT_ACK_TIMEOUT;
	r.local_ack_timeout = p->local_ack_timeout;
	r.retry_count = conn_param ? conn_param->retry_count & 7 : 7;
	r.rnr_retry_count = conn_param ? conn_param->rnr_retry_count & 7 : 7;
	p->retry_count = r.retry_count;
	p->rnr_retry_count = r.rnr_retry_count;
	p->path_mtu = r.path_mtu;
	hdr_put(pd, &id->route.addr.src_addr, &id->route.addr.dst_addr);
	if (ulen)
		memcpy(pd + DROCE_RCM_HDR_LEN, conn_param->private_data, ulen);
	r.private_data = pd;
	r.private_data_len = (uint8_t)(DROCE_RCM_HDR_LEN + ulen);
	rc = droce_cm_connect(&r, rcm_conn_handler, p, &p->conn);
	if (rc != 0) {
		rc = errno ? errno : EIO;
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(rc);
	}
	p->state = DROCE_RCM_CONNECT;
	pthread_mutex_unlock(&droce_rcm_lock);
	return rcm_complete_sync(p);
}

int
rdma_listen(struct rdma_cm_id *id, int backlog)
{
	if (droce_fk_child_served())
		return droce_fk_cm_listen(id, backlog);
	struct droce_rcm_id *p;
	struct droce_rcm_bind *b;
	struct droce_rcm_id *o;
	int rc = 0;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (!p->bound) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		/* the kernel binds an unbound listener to the wildcard */
		if (rdma_bind_addr(id, (struct sockaddr *)&any) != 0)
			return -1;
	}
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state == DROCE_RCM_LISTEN) {
		p->backlog = backlog > 0 && backlog < DROCE_RCM_MAX_BACKLOG ? backlog
								       : DROCE_RCM_MAX_BACKLOG;
		goto out;
	}
	if (p->state != DROCE_RCM_IDLE) {
		rc = EINVAL;
		goto out;
	}
	b = p->bind;
	TAILQ_FOREACH(o, &b->ids, bind_link) {
		if (o != p && o->state == DROCE_RCM_LISTEN) {
			uint8_t g1[16], g2[16];
			bool any1 = droce_rcm_sa_is_any(&o->id.route.addr.src_addr);
			bool any2 = droce_rcm_sa_is_any(&id->route.addr.src_addr);

			droce_rcm_sa_to_gid(&o->id.route.addr.src_addr, g1);
			droce_rcm_sa_to_gid(&id->route.addr.src_addr, g2);
			if (any1 || any2 || memcmp(g1, g2, 16) == 0) {
				rc = EADDRINUSE;
				goto out;
			}
		}
	}
	if (b->listener == NULL) {
		if (droce_cm_listen(droce_rcm_service_id(b->ps, b->port), droce_rcm_listen_handler,
				    b, &b->listener) != 0) {
			rc = errno ? errno : EIO;
			goto out;
		}
	}
	p->backlog = backlog > 0 && backlog < DROCE_RCM_MAX_BACKLOG ? backlog
							       : DROCE_RCM_MAX_BACKLOG;
	p->state = DROCE_RCM_LISTEN;
out:
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	if (droce_fk_child_served())
		return droce_fk_cm_get_request(listen, id);
	struct droce_rcm_id *lp;
	struct rdma_cm_event *ev;
	int rc;

	if (listen == NULL || id == NULL)
		return ERR(EINVAL);
	lp = droce_rcm_id_of(listen);
	if (!lp->sync)
		return ERR(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev) != 0)
		return -1;
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		rc = ECONNREFUSED;
		goto err;
	}
	if (ev->status) {
		rc = ev->status < 0 ? -ev->status : ev->status;
		goto err;
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rc = EINVAL;
		goto err;
	}
	if (lp->qp_init_attr) {
		struct ibv_qp_init_attr attr = *lp->qp_init_attr;

		if (rdma_create_qp(ev->id, listen->pd, &attr) != 0) {
			rc = errno;
			goto err;
		}
	}
	*id = ev->id;
	(*id)->event = ev;
	return 0;
err:
	listen->event = ev;
	return ERR(rc);
}

int
rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	if (droce_fk_child_served())
		return droce_fk_cm_accept(id, conn_param);
	struct droce_rcm_id *p;
	size_t ulen;
	int rc;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (valid_param(p, conn_param) != 0)
		return -1;
	if (id->qp == NULL && conn_param == NULL)
		return ERR(EINVAL);
	ulen = user_pdata_len(conn_param);
	if (answer_begin(p, DROCE_RCM_REQ_RCVD, true, ulen, DROCE_CM_SIDR_REP_PDATA,
			 DROCE_CM_REP_PDATA) != 0)
		return -1;
	if (id->qp_type == IBV_QPT_UD) {
		rc = sidr_answer_locked(p, DROCE_CM_SIDR_SUCCESS,
					id->qp ? id->qp->qp_num : conn_param->qp_num,
					ulen ? conn_param->private_data : NULL, ulen);
		if (rc == 0)
			p->state = DROCE_RCM_ESTABLISHED;
		pthread_mutex_unlock(&droce_rcm_lock);
		if (rc)
			return ERR(rc);
		if (p->sync && id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		return 0;
	}
	if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH)
		p->initiator_depth = clamp_rd(p->initiator_depth);
	else
		p->initiator_depth = conn_param->initiator_depth;
	if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES)
		p->responder_resources = clamp_rd(p->responder_resources);
	else
		p->responder_resources = conn_param->responder_resources;
	p->rnr_retry_count = conn_param ? conn_param->rnr_retry_count & 7 : 7;
	pthread_mutex_unlock(&droce_rcm_lock);

	/* RTR resolves the peer's MAC: outside the lock, in this thread */
	if (rcm_modify_qp_rtr(p, p->responder_resources) != 0 ||
	    rcm_modify_qp_rts(p, p->initiator_depth) != 0)
		return -1;

	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_REQ_RCVD || p->conn == NULL) {
		pthread_mutex_unlock(&droce_rcm_lock);
		rcm_modify_qp_err(p);
		return ERR(ECONNABORTED);
	}
	{
		struct droce_cm_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.qpn = id->qp ? id->qp->qp_num : conn_param->qp_num;
		rep.starting_psn = p->local_psn;
		rep.responder_resources = p->responder_resources;
		rep.initiator_depth = p->initiator_depth;
		rep.rnr_retry_count = p->rnr_retry_count;
		rep.target_ack_delay = 15;
		rep.srq = id->qp ? id->qp->srq != NULL : conn_param->srq != 0;
		rep.private_data = ulen ? conn_param->private_data : NULL;
		rep.private_data_len = (uint8_t)ulen;
		rc = droce_cm_accept(p->conn, &rep);
		if (rc == 0)
			p->state = DROCE_RCM_ACCEPTED;
		else
			rc = errno ? errno : EIO;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	if (rc) {
		rcm_modify_qp_err(p);
		return ERR(rc);
	}
	return rcm_complete_sync(p);
}

/* rdma_reject and rdma_reject_ece: a REJ with @reason (a UD id's SIDR REP
 * says "rejected" whatever the reason, as the kernel's). */
static int
reject_with_reason(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len,
		   uint16_t reason)
{
	struct droce_rcm_id *p;
	int rc;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (private_data == NULL)
		private_data_len = 0;
	if (answer_begin(p, DROCE_RCM_REQ_RCVD, true, private_data_len, DROCE_CM_SIDR_REP_PDATA,
			 DROCE_CM_REJ_PDATA) != 0)
		return -1;
	if (id->qp_type == IBV_QPT_UD) {
		rc = sidr_answer_locked(p, DROCE_CM_SIDR_REJECT, 0, private_data, private_data_len);
	} else {
		rc = droce_cm_reject(p->conn, reason, private_data, private_data_len);
		if (rc != 0)
			rc = errno ? errno : EIO;
	}
	if (rc == 0)
		p->state = DROCE_RCM_ERROR;
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	if (droce_fk_child_served())
		return droce_fk_cm_reject(id, private_data, private_data_len);
	return reject_with_reason(id, private_data, private_data_len, DROCE_CM_REJ_CONSUMER_DEFINED);
}

/* The REJ reason IBTA names "vendor option not supported" (ECE). */
#define REJ_VENDOR_OPTION_NOT_SUPPORTED 35

int
rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject_with_reason(id, private_data, private_data_len,
				  REJ_VENDOR_OPTION_NOT_SUPPORTED);
}

/*
 * ECE (enhanced connection establishment) values of an id, as librdmacm
 * keeps them: rdma_set_local_ece before a QP exists (a zero vendor_id or a
 * comp_mask is EINVAL), rdma_get_remote_ece what the peer's REQ or REP
 * carried.  droce's CM carries no ECE fields, as a device without ECE
 * offers none: the peer's vendor_id reads 0 ("no ECE").
 */
int
rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct droce_rcm_id *p;

	if (id == NULL || id->qp != NULL || ece == NULL || ece->vendor_id == 0 ||
	    ece->comp_mask != 0)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	/* in a forked child the id is a shadow (fork_cli_cm.c) and the global
	 * lock a copy a thread of the parent may have held at fork: the
	 * shadow's own lock */
	pthread_mutex_lock(droce_fk_child_served() ? &p->mut : &droce_rcm_lock);
	p->local_ece.vendor_id = ece->vendor_id;
	p->local_ece.options = ece->options;
	pthread_mutex_unlock(droce_fk_child_served() ? &p->mut : &droce_rcm_lock);
	return 0;
}

int
rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct droce_rcm_id *p;

	if (id == NULL || id->qp != NULL || ece == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	pthread_mutex_lock(droce_fk_child_served() ? &p->mut : &droce_rcm_lock); /* as above */
	ece->vendor_id = p->remote_ece.vendor_id;
	ece->options = p->remote_ece.options;
	ece->comp_mask = 0;
	pthread_mutex_unlock(droce_fk_child_served() ? &p->mut : &droce_rcm_lock);
	return 0;
}

int
rdma_establish(struct rdma_cm_id *id)
{
	if (droce_fk_child_served())
		return droce_fk_cm_establish(id);
	struct droce_rcm_id *p;
	int rc = 0;

	if (id == NULL || id->qp)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state != DROCE_RCM_CONN_RESPONSE || p->conn == NULL) {
		rc = EINVAL;
	} else if (droce_cm_rtu(p->conn, NULL, 0) != 0) {
		rc = errno ? errno : EIO;
	} else {
		p->state = DROCE_RCM_ESTABLISHED;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	if (droce_fk_child_served())
		return ERR(EOPNOTSUPP) /* not in a forked child yet */;
	struct droce_rcm_id *p;
	int rc = 0;

	if (id == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (event != IBV_EVENT_COMM_EST)
		return 0; /* the kernel ignores every other event */
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->state == DROCE_RCM_ACCEPTED && p->conn) {
		if (droce_cm_establish(p->conn) != 0)
			rc = errno ? errno : EIO;
	} else if (p->state != DROCE_RCM_ESTABLISHED) {
		rc = EINVAL;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

int
rdma_disconnect(struct rdma_cm_id *id)
{
	if (droce_fk_child_served())
		return droce_fk_cm_disconnect(id);
	struct droce_rcm_id *p;
	bool wait = true;
	int rc = 0;

	if (id == NULL || id->verbs == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	/* librdmacm's ucma_shutdown: the QP to ERR, so outstanding WRs flush */
	if (rcm_modify_qp_err(p) != 0)
		return -1;
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->conn == NULL || id->qp_type == IBV_QPT_UD) {
		rc = EINVAL;
	} else if (p->dreq_rcvd) {
		if (p->drep_sent)
			rc = EINVAL;
		else if (droce_cm_drep(p->conn, NULL, 0) != 0)
			rc = errno ? errno : EIO;
		else
			p->drep_sent = true;
	} else if (p->state == DROCE_RCM_ESTABLISHED) {
		if (droce_cm_disconnect(p->conn, NULL, 0) != 0) {
			rc = errno ? errno : EIO;
		} else {
			p->dreq_sent = true;
			p->state = DROCE_RCM_DISCONNECTED;
		}
	} else if (p->state == DROCE_RCM_ACCEPTED || p->state == DROCE_RCM_CONNECT ||
		   p->state == DROCE_RCM_CONN_RESPONSE) {
		/* not established yet: the IB CM rejects (the kernel's
		 * ib_send_cm_dreq fails, then the id is torn down) */
		droce_cm_reject(p->conn, DROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		p->state = DROCE_RCM_ERROR;
		wait = false; /* no event answers a REJ */
	} else {
		rc = EINVAL;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	if (rc)
		return ERR(rc);
	return wait ? rcm_complete_sync(p) : 0;
}
