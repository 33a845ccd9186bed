/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm layer's QPs and SRQs: rdma_init_qp_attr, rdma_create_qp(_ex)
 * with the CQs and channels librdmacm makes, rdma_destroy_qp, the SRQ calls
 * of rdma_verbs.h.
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


/* ---- QPs ---- */

int
rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	if (droce_fk_child_served())
		return droce_fk_cm_init_qp_attr(id, a, mask);
	struct droce_rcm_id *p;
	int rc = 0;

	if (id == NULL || a == NULL || mask == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	pthread_mutex_lock(&droce_rcm_lock);
	if (p->port < 0 || id->verbs == NULL) {
		rc = EINVAL;
		goto out;
	}
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = DROCE_VERBS_PORT_NUM;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			a->qkey = p->qkey;
			*mask |= IBV_QP_QKEY;
		} else {
			/* before the CM knows the peer: no remote access (the
			 * kernel's cma_ib_init_qp_attr); after: the IB CM's */
			a->qp_access_flags = 0;
			if (p->have_remote) {
				a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
				if (p->responder_resources)
					a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
							      IBV_ACCESS_REMOTE_ATOMIC;
			}
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (id->qp_type == IBV_QPT_UD)
			break;
		if (!p->have_remote) {
			rc = EINVAL;
			goto out;
		}
		memset(&a->ah_attr, 0, sizeof(a->ah_attr));
		a->ah_attr.is_global = 1;
		memcpy(a->ah_attr.grh.dgid.raw, id->route.addr.addr.ibaddr.dgid.raw, 16);
		a->ah_attr.grh.sgid_index =
			(uint8_t)rcm_gid_index_on(p->port, id->route.addr.addr.ibaddr.sgid.raw);
		a->ah_attr.grh.hop_limit = DROCE_RCM_DEFAULT_HOP_LIMIT;
		a->ah_attr.grh.traffic_class = p->tos;
		a->ah_attr.grh.flow_label = p->flow_label;
		a->ah_attr.port_num = DROCE_VERBS_PORT_NUM;
		a->path_mtu = p->path_mtu;
		a->dest_qp_num = p->remote_qpn;
		/* the Starting PSN a side puts in its REQ / REP is the PSN its
		 * own receive queue expects (the peer's send queue starts
		 * there), as in the kernel's IB CM: ib_send_cm_req / _rep keep
		 * their own message's PSN as rq_psn, cm_req_handler /
		 * cm_rep_handler take the peer's as sq_psn */
		a->rq_psn = p->local_psn;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (id->qp_type == IBV_QPT_RC) {
			a->max_dest_rd_atomic = p->responder_resources;
			a->min_rnr_timer = 0; /* as the kernel's IB CM */
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (id->qp_type == IBV_QPT_UD) {
			a->sq_psn = 0;
			break;
		}
		if (!p->have_remote) {
			rc = EINVAL;
			goto out;
		}
		a->sq_psn = p->remote_psn;      /* the peer's Starting PSN */
		if (id->qp_type == IBV_QPT_RC) {
			/* the kernel's cma: RDMA_OPTION_ID_ACK_TIMEOUT wins when set,
			 * even after the REQ (a passive id sets it before accepting) */
			a->timeout = p->ack_timeout ? p->ack_timeout : p->local_ack_timeout;
			a->retry_cnt = p->retry_count;
			a->rnr_retry = p->rnr_retry_count;
			a->max_rd_atomic = p->initiator_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		rc = EINVAL;
		break;
	}
out:
	pthread_mutex_unlock(&droce_rcm_lock);
	return rc ? ERR(rc) : 0;
}

static void
destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
	if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

/* librdmacm's ucma_create_cqs: a CQ (cq_context = the id) and a completion
 * channel for each queue the caller did not give a CQ for. */
static int
create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->recv_cq_channel == NULL)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (id->recv_cq == NULL)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->send_cq_channel == NULL)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (id->send_cq == NULL)
			goto err;
	}
	return 0;
err:
	destroy_cqs(id);
	return -1;
}

static int
init_qp(struct droce_rcm_id *p, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int mask, rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(&p->id, &a, &mask) != 0)
		return -1;
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		return ERR(rc);
	if (p->id.qp_type != IBV_QPT_UD)
		return 0;
	/* an unconnected QP is ready to send at once (rdma_create_qp(3)) */
	a.qp_state = IBV_QPS_RTR;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (rc)
		return ERR(rc);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return rc ? ERR(rc) : 0;
}

int
rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	if (droce_fk_child_served()) {
		struct ibv_qp_init_attr ia;
		int rc;

		if (attr == NULL)
			return ERR(EINVAL);
		if (attr->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD)
			return ERR(EOPNOTSUPP); /* not in a forked child yet */
		memset(&ia, 0, sizeof(ia));
		memcpy(&ia, attr, sizeof(ia));
		rc = droce_fk_cm_create_qp(id, (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL, &ia);
		attr->cap = ia.cap;
		return rc;
	}
	struct droce_rcm_id *p;
	struct ibv_qp *qp;

	if (id == NULL || attr == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (id->qp || id->verbs == NULL)
		return ERR(EINVAL);
	/* the other comp_mask bits (send_ops_flags ...) are ibv_create_qp_ex's to check */
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return ERR(EINVAL);
	}
	if (attr->qp_type != id->qp_type)
		return ERR(EINVAL);
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return ERR(EINVAL);
	if (create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
		       attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr) != 0)
		return -1;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr); /* updates attr->cap */
	if (qp == NULL)
		goto err1;
	if (init_qp(p, qp) != 0)
		goto err2;
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
err2:
	{
		int e = errno;

		ibv_destroy_qp(qp);
		errno = e;
	}
err1:
	{
		int e = errno;

		destroy_cqs(id);
		errno = e;
	}
	return -1;
}

int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	if (droce_fk_child_served())
		return droce_fk_cm_create_qp(id, pd, qp_init_attr);
	struct ibv_qp_init_attr_ex ax;
	int rc;

	if (id == NULL || qp_init_attr == NULL)
		return ERR(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd ? pd : id->pd;
	rc = rdma_create_qp_ex(id, &ax);
	memcpy(qp_init_attr, &ax, sizeof(*qp_init_attr));
	return rc;
}

void
rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (droce_fk_child_served()) {
		droce_fk_cm_destroy_qp(id);
		return;
	}
	if (id == NULL)
		return;
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

/* ---- SRQs (rdma_verbs.h) ---- */

int
rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	if (droce_fk_child_served())
		return ERR(EOPNOTSUPP) /* not in a forked child yet */;
	struct ibv_srq_init_attr ia;
	struct ibv_pd *pd;
	struct ibv_srq *srq;

	if (id == NULL || attr == NULL || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return ERR(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC)
		return ERR(EOPNOTSUPP); /* XRC through rdma_cm: not done (README) */
	if (id->verbs == NULL || id->srq)
		return ERR(EINVAL);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd : id->pd;
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = attr->srq_context;
	ia.attr = attr->attr;
	srq = ibv_create_srq(pd, &ia);
	if (srq == NULL)
		return -1;
	attr->attr = ia.attr;
	attr->pd = pd;
	attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	if (id->pd == NULL)
		id->pd = pd;
	id->srq = srq;
	return 0;
}

int
rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (droce_fk_child_served())
		return ERR(EOPNOTSUPP) /* not in a forked child yet */;
	struct ibv_srq_init_attr_ex ax;
	int rc;

	if (attr == NULL)
		return ERR(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = IBV_SRQT_BASIC;
	ax.pd = pd;
	rc = rdma_create_srq_ex(id, &ax);
	memcpy(attr, &ax, sizeof(*attr));
	return rc;
}

void
rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id == NULL || id->srq == NULL)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	destroy_cqs(id);
}
