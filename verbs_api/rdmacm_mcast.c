/* SPDX-License-Identifier: BSD-3-Clause
 * librdmacm's multicast: rdma_join_multicast, rdma_join_multicast_ex and
 * rdma_leave_multicast, over RoCEv2 as the kernel's cma joins a group on a
 * RoCE device (cma_iboe_join_multicast) and librdmacm completes it:
 *   - the group's GID is the IPv4-mapped group address (RoCEv2 GID type) or
 *     the IPv6 group address itself; no SA: the join completes at once with
 *     RDMA_CM_EVENT_MULTICAST_JOIN, whose ud parameters carry the AH
 *     attributes of the group (GRH to the group from the id's source GID,
 *     hop limit 64 for IPv4 as the kernel's IPV6_DEFAULT_HOPLIMIT, 1 for
 *     IPv6), QPN 0xFFFFFF and Q_Key RDMA_UDP_QKEY, private_data the join's
 *     context;
 *   - when the event is taken (rdma_get_cm_event) the id's QP, if any, is
 *     attached to the group (librdmacm's ucma_process_join), except for a
 *     send-only join; if that fails the event is
 *     RDMA_CM_EVENT_MULTICAST_ERROR with the error as its status;
 *   - the IGMP / MLD report goes out when the first QP of the port attaches
 *     (dataplane/mcast.c), as the kernel's ip_mc_inc_group does for a full
 *     member join.
 * Errors: a join on an id not bound to a droce device, of a port space
 * without UD QPs, to an address that is not a group, or of a group the id
 * joined already is refused at once (EINVAL, EINVAL, EINVAL, EADDRINUSE);
 * leaving a group the id did not join is EADDRNOTAVAIL (librdmacm's).
 * Unlike the kernel on RoCEv2, IPv6 groups are joined (MLDv2) rather than
 * answered ENOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "fork.h"
#include "rdmacm.h"

static struct droce_rcm_mc *
mc_find(struct droce_rcm_id *p, const uint8_t mgid[16])
{
	struct droce_rcm_mc *mc;

	TAILQ_FOREACH(mc, &p->mcs, link)
		if (memcmp(mc->mgid, mgid, 16) == 0)
			return mc;
	return NULL;
}

/* The event's group GID and join flags ride in its pdata area. */
struct mc_ev_data {
	uint8_t mgid[16];
};

static int
join(struct droce_rcm_id *p, const struct sockaddr *addr, uint32_t flags, void *context)
{
	struct droce_rcm_event *e;
	struct droce_rcm_mc *mc;
	struct ibv_ah_attr *ah;
	uint8_t mgid[16];
	int sgid_index;

	if (!droce_rcm_sa_to_gid(addr, mgid))
		return ERR(EAFNOSUPPORT);
	if (!droce_gid_is_mcast(mgid))
		return ERR(EINVAL); /* not a group address */
	pthread_mutex_lock(&droce_rcm_lock);
	/* the kernel's rdma_join_multicast: an id bound to a device, UD */
	if (p->port < 0 || p->id.verbs == NULL ||
	    (p->state != DROCE_RCM_IDLE && p->state != DROCE_RCM_ADDR_RESOLVED &&
	     p->state != DROCE_RCM_ROUTE_RESOLVED) ||
	    p->id.qp_type != IBV_QPT_UD) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL);
	}
	if (mc_find(p, mgid) != NULL) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EADDRINUSE); /* this id joined the group already */
	}
	sgid_index = rcm_gid_index_on(p->port, p->id.route.addr.addr.ibaddr.sgid.raw);
	if (sgid_index < 0 ||
	    droce_gid_is_v4mapped(p->id.route.addr.addr.ibaddr.sgid.raw) !=
		    droce_gid_is_v4mapped(mgid)) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EINVAL); /* no source address of the group's family */
	}
	mc = calloc(1, sizeof(*mc));
	e = rcm_ev_new(p, p, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (mc == NULL || e == NULL) {
		pthread_mutex_unlock(&droce_rcm_lock);
		free(mc);
		free(e);
		return ERR(ENOMEM);
	}
	memcpy(&mc->addr, addr, droce_rcm_sa_len(addr));
	memcpy(mc->mgid, mgid, 16);
	mc->context = context;
	mc->join_flags = flags;
	TAILQ_INSERT_TAIL(&p->mcs, mc, link);

	e->kind = DROCE_RCM_EVK_MC_JOIN;
	memcpy(((struct mc_ev_data *)e->pdata)->mgid, mgid, 16);
	e->ev.param.ud.private_data = context;
	e->ev.param.ud.qp_num = DROCE_MCAST_QPN;
	e->ev.param.ud.qkey = p->id.ps == RDMA_PS_UDP ? RDMA_UDP_QKEY : 0;
	ah = &e->ev.param.ud.ah_attr;
	ah->is_global = 1;
	ah->port_num = DROCE_VERBS_PORT_NUM;
	memcpy(ah->grh.dgid.raw, mgid, 16);
	ah->grh.sgid_index = (uint8_t)sgid_index;
	ah->grh.hop_limit = droce_gid_is_v4mapped(mgid) ? DROCE_RCM_DEFAULT_HOP_LIMIT : 1;
	ah->grh.traffic_class = p->tos;
	rcm_ev_queue(e);
	pthread_mutex_unlock(&droce_rcm_lock);
	return rcm_complete_sync(p);
}

int
rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	if (droce_fk_child_served())
		return droce_fk_cm_join_mc(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
	if (id == NULL || addr == NULL)
		return ERR(EINVAL);
	return join(droce_rcm_id_of(id), addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

int
rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
	if (droce_fk_child_served()) {
		if (attr == NULL || !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
			return ERR(EINVAL);
		return droce_fk_cm_join_mc(id, attr->addr,
					   (attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ?
						   attr->join_flags : RDMA_MC_JOIN_FLAG_FULLMEMBER,
					   context);
	}
	/* librdmacm's checks, in its order */
	if (id == NULL || attr == NULL)
		return ERR(EINVAL);
	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return ERR(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) || attr->addr == NULL)
		return ERR(EINVAL);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return ERR(EINVAL);
	return join(droce_rcm_id_of(id), attr->addr, attr->join_flags, context);
}

int
rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (droce_fk_child_served())
		return droce_fk_cm_leave_mc(id, addr);
	struct droce_rcm_id *p;
	struct droce_rcm_mc *mc;
	uint8_t mgid[16];

	if (id == NULL || addr == NULL)
		return ERR(EINVAL);
	p = droce_rcm_id_of(id);
	if (!droce_rcm_sa_to_gid(addr, mgid))
		return ERR(EINVAL);
	pthread_mutex_lock(&droce_rcm_lock);
	mc = mc_find(p, mgid);
	if (mc == NULL) {
		pthread_mutex_unlock(&droce_rcm_lock);
		return ERR(EADDRNOTAVAIL);
	}
	TAILQ_REMOVE(&p->mcs, mc, link);
	pthread_mutex_unlock(&droce_rcm_lock);
	if (mc->attached && id->qp != NULL)
		ibv_detach_mcast(id->qp, (const union ibv_gid *)mc->mgid, 0);
	free(mc);
	return 0;
}

void
rcm_mc_process_join(struct droce_rcm_event *e)
{
	struct droce_rcm_id *p = e->owner;
	struct droce_rcm_mc *mc;
	struct ibv_qp *qp;
	int rc = 0;

	pthread_mutex_lock(&droce_rcm_lock);
	mc = mc_find(p, ((const struct mc_ev_data *)e->pdata)->mgid);
	qp = p->id.qp;
	if (mc != NULL && qp != NULL && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER &&
	    !mc->attached) {
		rc = ibv_attach_mcast(qp, (const union ibv_gid *)mc->mgid, 0);
		mc->attached = rc == 0;
	}
	pthread_mutex_unlock(&droce_rcm_lock);
	if (rc != 0) {
		e->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		e->ev.status = -rc;
	}
}

void
rcm_mc_free_all(struct droce_rcm_id *p)
{
	struct droce_rcm_mc *mc;

	/* the QP keeps its attachments until it is destroyed, as with the
	 * kernel's rdma_destroy_id; only the records go */
	while ((mc = TAILQ_FIRST(&p->mcs)) != NULL) {
		TAILQ_REMOVE(&p->mcs, mc, link);
		free(mc);
	}
}
