/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm layer's CM handlers: what the IB CM (cm.h) reports on a
 * connection (REP, RTU, REJ, DREQ/DREP, timeouts, time wait, SIDR REP) turned
 * into the id's state and its rdma_cm events, and a listener's REQ or SIDR
 * REQ turned into a new id and CONNECT_REQUEST (or a REJ when nobody
 * listens).  The calls that start them are rdmacm_conn.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_random.h>

#include <droce/droce.h>

#include "internal.h"
#include "rdmacm.h"

static void
ud_ah_attr(struct droce_rcm_id *p, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	ah->grh.sgid_index = (uint8_t)rcm_gid_index_on(p->port, p->id.route.addr.addr.ibaddr.sgid.raw);
	ah->grh.hop_limit = DROCE_RCM_DEFAULT_HOP_LIMIT;
	ah->grh.traffic_class = p->tos;
	ah->grh.flow_label = p->flow_label;
	ah->port_num = DROCE_VERBS_PORT_NUM;
}

/* Marks the connection disconnected and queues DISCONNECTED once. */
static void
disconnected_locked(struct droce_rcm_id *p, int status)
{
	p->state = DROCE_RCM_DISCONNECTED;
	if (p->disc_reported)
		return;
	p->disc_reported = true;
	rcm_queue_simple(p, RDMA_CM_EVENT_DISCONNECTED, status);
}

void
rcm_conn_handler(const struct droce_cm_event *ev)
{
	struct droce_rcm_id *p = ev->ctx;
	struct droce_rcm_event *e;

	pthread_mutex_lock(&droce_rcm_lock);
	if (p == NULL || p->destroying || p->conn != ev->conn) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return;
	}
	switch (ev->type) {
	case DROCE_CM_EV_REP:
		if (p->state != DROCE_RCM_CONNECT)
			break;
		p->remote_qpn = ev->u.rep.qpn;
		p->remote_psn = ev->u.rep.starting_psn;
		/* never more than this side asked for in its REQ (a passive side
		 * may answer with more: perftest -R on Linux rxe offers 128) */
		if (ev->u.rep.responder_resources < p->initiator_depth)
			p->initiator_depth = ev->u.rep.responder_resources;
		if (ev->u.rep.initiator_depth < p->responder_resources)
			p->responder_resources = ev->u.rep.initiator_depth;
		p->have_remote = true;
		p->state = DROCE_RCM_CONN_RESPONSE;
		e = rcm_ev_new(p, p, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		if (e == NULL)
			break;
		e->kind = DROCE_RCM_EVK_CONN_RESP;
		rcm_ev_conn_pdata(e, ev->private_data, ev->private_data_len);
		e->ev.param.conn.responder_resources = ev->u.rep.initiator_depth;
		e->ev.param.conn.initiator_depth = ev->u.rep.responder_resources;
		e->ev.param.conn.rnr_retry_count = ev->u.rep.rnr_retry_count;
		e->ev.param.conn.srq = ev->u.rep.srq;
		e->ev.param.conn.qp_num = ev->u.rep.qpn;
		e->ev.param.conn.flow_control = 1;
		rcm_ev_queue(e);
		break;
	case DROCE_CM_EV_RTU:
		if (p->state != DROCE_RCM_ACCEPTED)
			break;
		p->state = DROCE_RCM_ESTABLISHED;
		rcm_queue_simple(p, RDMA_CM_EVENT_ESTABLISHED, 0);
		break;
	case DROCE_CM_EV_REJ:
		if (p->state != DROCE_RCM_CONNECT && p->state != DROCE_RCM_CONN_RESPONSE &&
		    p->state != DROCE_RCM_ACCEPTED && p->state != DROCE_RCM_REQ_RCVD)
			break;
		if (p->connect_error)
			break; /* librdmacm drops a REJ after CONNECT_ERROR */
		p->state = DROCE_RCM_ERROR;
		e = rcm_ev_new(p, p, RDMA_CM_EVENT_REJECTED, ev->u.rej.reason);
		if (e == NULL)
			break;
		e->kind = DROCE_RCM_EVK_REJECTED;
		rcm_ev_conn_pdata(e, ev->private_data, ev->private_data_len);
		rcm_ev_queue(e);
		break;
	case DROCE_CM_EV_REQ_TIMEOUT:
	case DROCE_CM_EV_REP_TIMEOUT:
	case DROCE_CM_EV_SIDR_TIMEOUT:
		if (p->state != DROCE_RCM_CONNECT && p->state != DROCE_RCM_ACCEPTED)
			break;
		p->state = DROCE_RCM_ERROR;
		rcm_queue_simple(p, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case DROCE_CM_EV_DREQ:
		p->dreq_rcvd = true;
		if (p->state == DROCE_RCM_ESTABLISHED || p->state == DROCE_RCM_ACCEPTED ||
		    p->state == DROCE_RCM_CONN_RESPONSE) {
			disconnected_locked(p, 0);
		} else if (p->state == DROCE_RCM_DISCONNECTED && p->dreq_sent) {
			/* both sides disconnected at once: answer, done */
			if (!p->drep_sent && droce_cm_drep(p->conn, NULL, 0) == 0)
				p->drep_sent = true;
			disconnected_locked(p, 0);
		}
		break;
	case DROCE_CM_EV_DREP:
		if (p->state == DROCE_RCM_DISCONNECTED)
			disconnected_locked(p, 0);
		break;
	case DROCE_CM_EV_DREQ_TIMEOUT:
		if (p->state == DROCE_RCM_DISCONNECTED)
			disconnected_locked(p, -ETIMEDOUT);
		break;
	case DROCE_CM_EV_TIMEWAIT_EXIT:
		if (p->state == DROCE_RCM_DISCONNECTED || p->state == DROCE_RCM_ERROR)
			rcm_queue_simple(p, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	case DROCE_CM_EV_SIDR_REP:
		if (p->state != DROCE_RCM_CONNECT)
			break;
		if (ev->u.sidr_rep.status != DROCE_CM_SIDR_SUCCESS) {
			p->state = DROCE_RCM_ERROR;
			e = rcm_ev_new(p, p, RDMA_CM_EVENT_UNREACHABLE, ev->u.sidr_rep.status);
			if (e == NULL)
				break;
			rcm_ev_ud_pdata(e, ev->private_data, ev->private_data_len);
			rcm_ev_queue(e);
			break;
		}
		p->state = DROCE_RCM_ESTABLISHED;
		p->remote_qpn = ev->u.sidr_rep.qpn;
		p->have_remote = true;
		e = rcm_ev_new(p, p, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (e == NULL)
			break;
		rcm_ev_ud_pdata(e, ev->private_data, ev->private_data_len);
		ud_ah_attr(p, &e->ev.param.ud.ah_attr);
		e->ev.param.ud.qp_num = ev->u.sidr_rep.qpn;
		e->ev.param.ud.qkey = ev->u.sidr_rep.qkey;
		rcm_ev_queue(e);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
}

/* The local GID of a REQ's addresses (cm.h names them from the receiver's
 * side: sgid ours, dgid the peer's). */
static void
req_gids(const struct droce_cm_addr *a, uint8_t local[16], uint8_t peer[16])
{
	memcpy(local, a->sgid, 16);
	memcpy(peer, a->dgid, 16);
	if (rcm_gid_index_on((int)a->port, local) < 0 && rcm_gid_index_on((int)a->port, peer) >= 0) {
		memcpy(local, a->dgid, 16);
		memcpy(peer, a->sgid, 16);
	}
}

void
droce_rcm_listen_handler(const struct droce_cm_event *ev)
{
	struct droce_rcm_bind *b = ev->ctx;
	const struct droce_cm_addr *ca;
	const uint8_t *pd = ev->private_data;
	size_t pdlen = ev->private_data_len;
	struct sockaddr_storage src, dst;
	struct droce_rcm_id *l, *p;
	struct droce_rcm_event *e;
	struct ibv_context *vctx = NULL;
	struct ibv_pd *vpd = NULL;
	uint8_t lgid[16], pgid[16], hdst[16];
	bool ud;

	if (ev->type != DROCE_CM_EV_REQ && ev->type != DROCE_CM_EV_SIDR_REQ)
		return;
	ud = ev->type == DROCE_CM_EV_SIDR_REQ;
	ca = ud ? &ev->u.sidr_req.addr : &ev->u.req.addr;
	if (pd == NULL) {
		pd = ud ? ev->u.sidr_req.private_data : ev->u.req.private_data;
		pdlen = ud ? ev->u.sidr_req.private_data_len : ev->u.req.private_data_len;
	}
	/* the new id's device (opened once; the first time takes a while) */
	if (droce_rcm_dev_get(ca->port, &vctx, &vpd) != 0) {
		pthread_mutex_lock(&droce_rcm_lock);
		goto reject;
	}
	pthread_mutex_lock(&droce_rcm_lock);
	l = NULL;
	if (rcm_hdr_get(pd, pdlen, &src, &dst, b->port)) {
		droce_rcm_sa_to_gid((struct sockaddr *)&dst, hdst);
		l = droce_rcm_find_listener(b, hdst);
	}
	if (l == NULL || l->pending >= l->backlog || (ud != (l->id.qp_type == IBV_QPT_UD)))
		goto reject;
	p = rcm_id_alloc(l->sync ? NULL : l->id.channel, l->id.context, l->id.ps, l->id.qp_type);
	if (p == NULL)
		goto reject;
	e = rcm_ev_new(l, p, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (e == NULL) {
		rcm_id_free(p);
		goto reject;
	}
	e->ev.listen_id = &l->id;
	req_gids(ca, lgid, pgid);
	p->port = (int)ca->port;
	p->id.verbs = vctx;
	p->id.pd = vpd;
	p->id.port_num = DROCE_VERBS_PORT_NUM;
	memcpy(&p->id.route.addr.src_storage, &dst, sizeof(dst));
	memcpy(&p->id.route.addr.dst_storage, &src, sizeof(src));
	memcpy(p->id.route.addr.addr.ibaddr.sgid.raw, lgid, 16);
	memcpy(p->id.route.addr.addr.ibaddr.dgid.raw, pgid, 16);
	p->tos = l->tos;
	p->ack_timeout = l->ack_timeout;
	p->conn = ev->conn;
	p->state = DROCE_RCM_REQ_RCVD;
	p->listener = l;
	rcm_fill_path(p);
	p->id.route.path_rec = malloc(sizeof(*p->id.route.path_rec));
	if (p->id.route.path_rec) {
		*p->id.route.path_rec = p->path;
		p->id.route.num_paths = 1;
	}
	if (ud) {
		rcm_ev_ud_pdata(e, pd + DROCE_RCM_HDR_LEN, pdlen - DROCE_RCM_HDR_LEN);
		ud_ah_attr(p, &e->ev.param.ud.ah_attr);
	} else {
		const struct droce_cm_req *rq = &ev->u.req;
		enum ibv_mtu mine = droce_verbs_port_mtu(ca->port);

		rcm_ev_conn_pdata(e, pd + DROCE_RCM_HDR_LEN, pdlen - DROCE_RCM_HDR_LEN);
		e->ev.param.conn.responder_resources = rq->initiator_depth;
		e->ev.param.conn.initiator_depth = rq->responder_resources;
		e->ev.param.conn.retry_count = rq->retry_count;
		e->ev.param.conn.rnr_retry_count = rq->rnr_retry_count;
		e->ev.param.conn.srq = rq->srq;
		e->ev.param.conn.qp_num = rq->qpn;
		e->ev.param.conn.flow_control = 1;
		/* librdmacm: the new id starts from the request's values */
		p->initiator_depth = rq->responder_resources;
		p->responder_resources = rq->initiator_depth;
		p->remote_qpn = rq->qpn;
		p->remote_psn = rq->starting_psn;
		p->local_psn = (uint32_t)(rte_rand() & 0xffffff);
		p->path_mtu = rq->path_mtu && rq->path_mtu < mine ? rq->path_mtu : (uint8_t)mine;
		p->retry_count = rq->retry_count;
		/* the ib_cm's cm_req_handler: the passive side's RNR retry is
		 * the REQ's until rdma_accept (an external QP moved to RTS by
		 * rdma_init_qp_attr before the accept gets it) */
		p->rnr_retry_count = rq->rnr_retry_count & 7;
		p->local_ack_timeout = p->ack_timeout ? p->ack_timeout
						      : DROCE_RCM_DEFAULT_ACK_TIMEOUT;
		p->have_remote = true;
	}
	l->pending++;
	droce_cm_conn_set_handler(ev->conn, rcm_conn_handler, p);
	rcm_ev_queue(e);
	pthread_mutex_unlock(&droce_rcm_lock);
	return;
reject:
	/* no id for it (the kernel's cma): REJ consumer defined / SIDR reject */
	if (ud) {
		struct droce_cm_sidr_rep rep = { .status = DROCE_CM_SIDR_REJECT };

		droce_cm_sidr_rep(ev->conn, &rep);
	} else {
		droce_cm_reject(ev->conn, DROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	droce_cm_conn_release(ev->conn);
}
