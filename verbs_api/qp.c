/* SPDX-License-Identifier: BSD-3-Clause
 * Over 800 lines: the state machine's masks and the path resolution (now with loopback and multicast) share the QP's checks; the path resolution is the part to move out next.
 * Queue pairs: create with caps, query, destroy, and ibv_modify_qp with the
 * IBTA state machine and its per-transition attribute masks.  The address
 * vector is resolved here into a struct droce_path (MACs, GIDs, UDP source
 * port) so the engine only builds headers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "fork.h"
#include "internal.h"

#define SAME(d, i) static_assert((int)(d) == (int)(i), #d " == " #i)
SAME(DROCE_QPS_RESET, IBV_QPS_RESET);
SAME(DROCE_QPS_INIT, IBV_QPS_INIT);
SAME(DROCE_QPS_RTR, IBV_QPS_RTR);
SAME(DROCE_QPS_RTS, IBV_QPS_RTS);
SAME(DROCE_QPS_SQD, IBV_QPS_SQD);
SAME(DROCE_QPS_SQE, IBV_QPS_SQE);
SAME(DROCE_QPS_ERR, IBV_QPS_ERR);
SAME(DROCE_QPM_STATE, IBV_QP_STATE);
SAME(DROCE_QPM_CUR_STATE, IBV_QP_CUR_STATE);
SAME(DROCE_QPM_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY);
SAME(DROCE_QPM_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
SAME(DROCE_QPM_PKEY_INDEX, IBV_QP_PKEY_INDEX);
SAME(DROCE_QPM_PORT, IBV_QP_PORT);
SAME(DROCE_QPM_QKEY, IBV_QP_QKEY);
SAME(DROCE_QPM_AV, IBV_QP_AV);
SAME(DROCE_QPM_PATH_MTU, IBV_QP_PATH_MTU);
SAME(DROCE_QPM_TIMEOUT, IBV_QP_TIMEOUT);
SAME(DROCE_QPM_RETRY_CNT, IBV_QP_RETRY_CNT);
SAME(DROCE_QPM_RNR_RETRY, IBV_QP_RNR_RETRY);
SAME(DROCE_QPM_RQ_PSN, IBV_QP_RQ_PSN);
SAME(DROCE_QPM_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
SAME(DROCE_QPM_ALT_PATH, IBV_QP_ALT_PATH);
SAME(DROCE_QPM_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
SAME(DROCE_QPM_SQ_PSN, IBV_QP_SQ_PSN);
SAME(DROCE_QPM_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
SAME(DROCE_QPM_PATH_MIG_STATE, IBV_QP_PATH_MIG_STATE);
SAME(DROCE_QPM_CAP, IBV_QP_CAP);
SAME(DROCE_QPM_DEST_QPN, IBV_QP_DEST_QPN);
#undef SAME

/* ---- the transition table (IBTA 10.3 / the kernel's ib_modify_qp_is_ok) ---- */

enum { T_RC, T_UC, T_UD, T_COUNT };

struct transition {
	bool valid;
	int req[T_COUNT];
	int opt[T_COUNT];
};

#define S(x) IBV_QPS_##x
#define M(x) IBV_QP_##x
/* the three types RC, UC, UD */
#define PER_TYPE(rc, uc, ud) { [T_RC] = (rc), [T_UC] = (uc), [T_UD] = (ud) }

static const struct transition table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = {
			.valid = true,
			.req = PER_TYPE(M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
					M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
					M(PKEY_INDEX) | M(PORT) | M(QKEY)),
		},
	},
	[S(INIT)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = {
			.valid = true,
			.opt = PER_TYPE(M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
					M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
					M(PKEY_INDEX) | M(PORT) | M(QKEY)),
		},
		[S(RTR)] = {
			.valid = true,
			.req = PER_TYPE(M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
					M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
					M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
					0),
			.opt = PER_TYPE(M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
					M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
					M(PKEY_INDEX) | M(QKEY)),
		},
	},
	[S(RTR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.req = PER_TYPE(M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) |
					M(MAX_QP_RD_ATOMIC),
					M(SQ_PSN),
					M(SQ_PSN)),
			.opt = PER_TYPE(M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
					M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE),
					M(CUR_STATE) | M(QKEY)),
		},
	},
	[S(RTS)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = PER_TYPE(M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) |
					M(PATH_MIG_STATE) | M(MIN_RNR_TIMER),
					M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) | M(PATH_MIG_STATE),
					M(CUR_STATE) | M(QKEY)),
		},
		[S(SQD)] = {
			.valid = true,
			.opt = PER_TYPE(M(EN_SQD_ASYNC_NOTIFY), M(EN_SQD_ASYNC_NOTIFY),
					M(EN_SQD_ASYNC_NOTIFY)),
		},
	},
	[S(SQD)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = PER_TYPE(M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
					M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE),
					M(CUR_STATE) | M(QKEY)),
		},
		[S(SQD)] = {
			.valid = true,
			.opt = PER_TYPE(M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
					M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) |
					M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(MIN_RNR_TIMER) |
					M(PATH_MIG_STATE),
					M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |
					M(PATH_MIG_STATE),
					M(PKEY_INDEX) | M(QKEY)),
		},
	},
	[S(SQE)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = PER_TYPE(0,
					M(CUR_STATE) | M(ACCESS_FLAGS),
					M(CUR_STATE) | M(QKEY)),
		},
	},
	[S(ERR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
	},
};
#undef PER_TYPE
#undef M
#undef S

static int
type_index(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return T_RC;
	case IBV_QPT_UC:
		return T_UC;
	case IBV_QPT_UD:
		return T_UD;
	default:
		return -1;
	}
}

/*
 * XRC QPs use RC's rows without the other side's attributes (the kernel's
 * table): XRC_SEND (initiator) has no responder attributes, XRC_RECV
 * (target) no requester ones.
 */
static int
xrc_strip(enum ibv_qp_type t)
{
	if (t == IBV_QPT_XRC_SEND)
		return IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (t == IBV_QPT_XRC_RECV)
		return IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return 0;
}

bool
droce_verbs_modify_ok(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		      int mask)
{
	const struct transition *t;
	int ti = type_index(type), strip = xrc_strip(type);

	if (type == IBV_QPT_RAW_PACKET)
		return (unsigned int)cur <= IBV_QPS_ERR && (unsigned int)next <= IBV_QPS_ERR &&
		       droce_verbs_raw_modify_ok(cur, next, mask);
	if (ti < 0 || (unsigned int)cur > IBV_QPS_ERR || (unsigned int)next > IBV_QPS_ERR)
		return false;
	/* CUR_STATE only makes sense where the QP may have moved on its own */
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return false;
	t = &table[cur][next];
	if (!t->valid)
		return false;
	if ((mask & t->req[ti] & ~strip) != (t->req[ti] & ~strip))
		return false;
	if (mask & ~(((t->req[ti] | t->opt[ti]) & ~strip) | IBV_QP_STATE))
		return false;
	return true;
}

/* ---- address vectors ---- */

uint16_t
droce_verbs_udp_sport(uint32_t lqpn, uint32_t rqpn, uint32_t flow_label)
{
	uint32_t fl = flow_label & 0xfffff;

	if (fl == 0) {
		/* fold the QPN pair into 20 bits, the same for both directions' swaps */
		uint64_t v = (uint64_t)(lqpn & 0xffffff) * (rqpn & 0xffffff);

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)v & 0xfffff;
	}
	return (uint16_t)(0xc000 | ((fl & 0x3fff) ^ ((fl >> 14) & 0x3fff)));
}

static bool
gid_is_zero(const uint8_t g[16])
{
	for (int i = 0; i < 16; i++)
		if (g[i])
			return false;
	return true;
}

int
droce_verbs_resolve_path(unsigned int port, const struct ibv_ah_attr *ah, uint32_t lqpn,
			 uint32_t rqpn, struct droce_path *out)
{
	struct droce_port *p = droce_port_get(port);
	const uint8_t *sgid, *dgid = ah->grh.dgid.raw;
	bool found = false, mcast;

	if (p == NULL)
		return ENODEV;
	/*
	 * What the kernel checks of an address vector on a RoCE port (rdma-core
	 * hands it on: uverbs' create_ah / modify_qp, rdma_check_ah_attr,
	 * rdma_get_gid_attr; rxe adds nothing): the port, the GRH RoCE needs,
	 * the source GID.  dlid, src_path_bits and static_rate are IB's and
	 * ignored (UCX puts 0xC000 + path in dlid), any sl is taken (its low 3
	 * bits are the VLAN priority), a flow label keeps its low 20 bits (the
	 * IPv6 field's width; mlx5 derives the UDP source port from those).
	 */
	if (!ah->is_global || ah->port_num != DROCE_VERBS_PORT_NUM ||
	    ah->grh.sgid_index >= DROCE_MAX_GIDS)
		return EINVAL;
	sgid = droce_port_gid(p, ah->grh.sgid_index);
	if (sgid == NULL)
		return ENODATA; /* in the table, empty: rdma_get_gid_attr's answer */
	mcast = droce_gid_is_mcast(dgid);
	/* a group (ff00::/8, ::ffff:224.0.0.0/100) only for an AH: UD multicast */
	if (gid_is_zero(dgid) || (mcast && lqpn != 0) ||
	    droce_gid_is_v4mapped(sgid) != droce_gid_is_v4mapped(dgid))
		return EINVAL;

	memset(out, 0, sizeof(*out));
	out->src_mac = *droce_port_mac(p);
	out->vlan = droce_port_vlan(p) != 0;
	out->vlan_id = droce_port_vlan(p);
	out->vlan_pcp = ah->sl & 7;
	out->ipv6 = !droce_gid_is_v4mapped(dgid);
	memcpy(out->src_gid, sgid, 16);
	memcpy(out->dst_gid, dgid, 16);
	out->traffic_class = ah->grh.traffic_class;
	out->hop_limit = ah->grh.hop_limit;
	out->flow_label = ah->grh.flow_label & 0xfffff;
	out->udp_sport = droce_verbs_udp_sport(lqpn, rqpn, out->flow_label);

	if (mcast) {
		/* the group's Ethernet address: no neighbour to resolve */
		droce_gid_mcast_mac(dgid, &out->dst_mac);
		return 0;
	}
	/*
	 * A GID of this process: the port's own (loopback on one port: frames
	 * turned around inside droce, pmd_glue/port.h), its ring pair's peer
	 * (over the link), or another port, over the link when it answers ARP
	 * there, else delivered inside droce as well.
	 */
	for (unsigned int i = 0; i < droce_port_count() && !found; i++) {
		struct droce_port *q = droce_port_get(i);
		struct rte_ether_addr mac;

		if (q == NULL || droce_port_find_gid(q, dgid) < 0)
			continue;
		out->dst_mac = *droce_port_mac(q);
		found = true;
		if (q == p) {
			droce_port_loop_enable(p, p);
		} else if (!droce_port_ring_peers(p, q) &&
			   droce_port_neigh_lookup(p, dgid, &mac) != 0 &&
			   droce_dp_neigh_resolve(port, dgid, &mac, 1000) != 0) {
			droce_port_loop_enable(p, q);
			droce_port_neigh_learn(p, dgid, &out->dst_mac);
		}
	}
	if (!found) {
		/* the table, else ARP or neighbour solicitations on the wire (an
		 * engine sends them; we wait up to 1 s) */
		found = droce_port_neigh_lookup(p, dgid, &out->dst_mac) == 0 ||
			droce_dp_neigh_resolve(port, dgid, &out->dst_mac, 1000) == 0;
	}
	if (!found && dgid[0] == 0xfe && (dgid[1] & 0xc0) == 0x80 && dgid[11] == 0xff &&
	    dgid[12] == 0xfe) {
		/* link-local with an EUI-64 interface id, unanswered: the MAC is inside */
		out->dst_mac.addr_bytes[0] = dgid[8] ^ 0x02;
		out->dst_mac.addr_bytes[1] = dgid[9];
		out->dst_mac.addr_bytes[2] = dgid[10];
		out->dst_mac.addr_bytes[3] = dgid[13];
		out->dst_mac.addr_bytes[4] = dgid[14];
		out->dst_mac.addr_bytes[5] = dgid[15];
		found = true;
	}
	return found ? 0 : EHOSTUNREACH;
}

/* ---- create / destroy / query ---- */

enum droce_qp_type
droce_verbs_dp_type(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_UC:
		return DROCE_QPT_UC;
	case IBV_QPT_UD:
		return DROCE_QPT_UD;
	case IBV_QPT_RAW_PACKET:
		return DROCE_QPT_RAW_PACKET;
	case IBV_QPT_XRC_SEND:
		return DROCE_QPT_XRC_SEND; /* the post-time opcode table's row; an RC QP below */
	default:
		return DROCE_QPT_RC;
	}
}

struct ibv_qp *
ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	if (droce_fk_ctx(pd ? pd->context : NULL))
		return droce_fk_create_qp(pd, ia);
	return droce_verbs_create_qp(pd, ia, 0);
}

struct ibv_qp *
droce_verbs_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia, uint64_t send_ops)
{
	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	return droce_verbs_create_qp_in(pd->context, pd, ia, send_ops, NULL, 0);
}

struct ibv_qp *
droce_verbs_create_qp_in(struct ibv_context *c, struct ibv_pd *pd, struct ibv_qp_init_attr *ia,
			 uint64_t send_ops, struct droce_vxrcd *xrcd, uint32_t max_tso_header)
{
	struct droce_vctx *x;
	struct droce_vqp *q;
	struct droce_qp_caps caps;
	struct droce_vcq *scq, *rcq;
	enum droce_xrc_role role;
	int rc;

	if (c == NULL || ia == NULL) {
		errno = EINVAL;
		return NULL;
	}
	x = droce_vctx_of(c);
	switch (ia->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
	case IBV_QPT_RAW_PACKET:
		break;
	case IBV_QPT_DRIVER:
		errno = EOPNOTSUPP;
		return NULL;
	default:
		errno = EINVAL;
		return NULL;
	}
	rc = droce_verbs_xrc_role_of(c, pd, ia, xrcd, &role); /* xrcd.c */
	if (rc != 0) {
		errno = rc;
		return NULL;
	}
	if (ia->srq != NULL && ia->srq->context != c) {
		errno = EINVAL;
		return NULL;
	}
	/* with an SRQ the receive sizes are ignored (ibv_create_qp(3)) */
	if (ia->srq != NULL)
		ia->cap.max_recv_wr = ia->cap.max_recv_sge = 0;
	if (ia->cap.max_send_wr > DROCE_DP_MAX_QP_WR || ia->cap.max_recv_wr > DROCE_DP_MAX_QP_WR ||
	    ia->cap.max_send_sge > DROCE_DP_MAX_SGE || ia->cap.max_recv_sge > DROCE_DP_MAX_SGE ||
	    ia->cap.max_inline_data > DROCE_DP_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* what droce enforces: at least one slot per queue */
	q->cap = ia->cap;
	if (q->cap.max_send_wr == 0 && role != DROCE_XRC_TGT)
		q->cap.max_send_wr = 1;
	if (q->cap.max_recv_wr == 0 && ia->srq == NULL && role == DROCE_XRC_NONE)
		q->cap.max_recv_wr = 1;
	memset(&caps, 0, sizeof(caps));
	caps.max_send_wr = q->cap.max_send_wr;
	caps.max_recv_wr = q->cap.max_recv_wr;
	caps.max_send_sge = q->cap.max_send_sge;
	caps.max_recv_sge = q->cap.max_recv_sge;
	caps.max_inline_data = q->cap.max_inline_data;
	caps.sq_sig_all = ia->sq_sig_all != 0;
	q->type = droce_verbs_dp_type(ia->qp_type);
	q->xrc_role = role;
	caps.max_tso_header = max_tso_header; /* the send slots keep room for it */
	q->max_tso_header = max_tso_header;
	q->raw_max_frame = droce_raw_max_frame(x->port);
	q->sq_sig_all = caps.sq_sig_all;
	scq = (struct droce_vcq *)ia->send_cq;
	rcq = role == DROCE_XRC_NONE ? (struct droce_vcq *)ia->recv_cq : NULL;
	q->serial = droce_verbs_serial();
	q->qp.context = c; /* the event callback reaches the context through it */
	{
		struct droce_qp_ext ext = {
			.srq = ia->srq ? ((struct droce_vsrq *)ia->srq)->dsrq : NULL,
			.event = droce_verbs_qp_event,
			.event_arg = q,
			.xrc = role,
			.xrcd = xrcd != NULL ? droce_verbs_xrcd_id(xrcd) : 0,
		};

		/* XRC QPs are RC QPs in the dataplane (dataplane/xrc.c) */
		q->dqp = droce_qp_create_ex(role == DROCE_XRC_NONE ? q->type : DROCE_QPT_RC, &caps,
					    scq ? scq->dcq : NULL, rcq ? rcq->dcq : NULL,
					    pd ? ((struct droce_vpd *)pd)->id : 0, x->port, &ext);
	}
	if (q->dqp == NULL) {
		int e = errno ? errno : ENOMEM;

		free(q);
		errno = e;
		return NULL;
	}
	if (pd != NULL)
		atomic_fetch_add(&((struct droce_vpd *)pd)->users, 1);
	if (scq != NULL)
		atomic_fetch_add(&scq->users, 1);
	if (rcq != NULL)
		atomic_fetch_add(&rcq->users, 1);
	if (role == DROCE_XRC_TGT) {
		q->xrcd = xrcd;
		atomic_fetch_add(&xrcd->users, 1);
	}
	if (ia->srq != NULL)
		atomic_fetch_add(&((struct droce_vsrq *)ia->srq)->users, 1);
	pthread_mutex_init(&q->lock, NULL);
	q->state = IBV_QPS_RESET;
	q->attr.qp_state = IBV_QPS_RESET;
	q->attr.path_mtu = IBV_MTU_1024;
	q->attr.port_num = DROCE_VERBS_PORT_NUM;
	q->attr.cap = q->cap;

	q->qp.context = c;
	q->qp.qp_context = ia->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = ia->send_cq;
	q->qp.recv_cq = rcq != NULL ? &rcq->cq : NULL;
	q->qp.srq = ia->srq;
	q->qp.qp_num = droce_qp_num(q->dqp);
	q->qp.handle = q->qp.qp_num;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = ia->qp_type;
	q->send_ops = send_ops;
	droce_verbs_wr_init(q);
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	pthread_mutex_lock(&x->lock);
	TAILQ_INSERT_TAIL(&x->qps, q, ctx_link); /* async events can name it now */
	pthread_mutex_unlock(&x->lock);
	ia->cap = q->cap;
	return &q->qp;
}

/* The verbs QP's own locks and memory, once nothing refers to it. */
static void
vqp_free(struct droce_vqp *q)
{
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->qp.cond);
	pthread_mutex_destroy(&q->qp.mutex);
	free(q);
}

int
ibv_destroy_qp(struct ibv_qp *qp)
{
	if (droce_fk_ctx(qp ? qp->context : NULL))
		return droce_fk_destroy_qp(qp);
	struct droce_vqp *q = (struct droce_vqp *)qp;
	struct droce_vctx *x;
	int rc;

	if (q == NULL)
		return EINVAL;
	x = droce_vctx_of(qp->context);
	if (q->real != NULL) {
		/* an ibv_open_qp handle: the QP stays with its creator */
		pthread_mutex_lock(&x->lock);
		TAILQ_REMOVE(&x->qps, q, ctx_link);
		pthread_mutex_unlock(&x->lock);
		atomic_fetch_sub(&q->real->opened, 1);
		atomic_fetch_sub(&q->xrcd->users, 1);
		vqp_free(q);
		return 0;
	}
	if (atomic_load(&q->opened) != 0)
		return EBUSY; /* ibv_open_qp handles on it remain */
	if (qp->qp_type == IBV_QPT_RAW_PACKET && droce_flow_count_qp(q->dqp) != 0)
		return EBUSY; /* its flows first (ibv_destroy_flow) */
	if (q->wq != NULL)
		return EBUSY; /* a WQ's QP goes with its WQ (ibv_destroy_wq) */
	/* counter readers (droce_verbs_qp_walk) stop seeing it before it goes */
	pthread_mutex_lock(&x->lock);
	q->dying = true;
	pthread_mutex_unlock(&x->lock);
	rc = droce_qp_destroy(q->dqp);
	if (rc != 0) {
		pthread_mutex_lock(&x->lock);
		q->dying = false;
		pthread_mutex_unlock(&x->lock);
		return rc;
	}
	/* as rdma-core: every event handed out for it must be acked first */
	droce_verbs_qp_events_drain(q);
	if (qp->srq != NULL)
		atomic_fetch_sub(&((struct droce_vsrq *)qp->srq)->users, 1);
	if (qp->pd != NULL)
		atomic_fetch_sub(&((struct droce_vpd *)qp->pd)->users, 1);
	if (qp->send_cq != NULL)
		atomic_fetch_sub(&((struct droce_vcq *)qp->send_cq)->users, 1);
	if (qp->recv_cq != NULL)
		atomic_fetch_sub(&((struct droce_vcq *)qp->recv_cq)->users, 1);
	if (q->xrcd != NULL)
		atomic_fetch_sub(&q->xrcd->users, 1);
	if (q->rss_tab != NULL)
		atomic_fetch_sub(&q->rss_tab->users, 1);
	vqp_free(q);
	return 0;
}

int
ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr)
{
	if (droce_fk_ctx(qp ? qp->context : NULL))
		return droce_fk_query_qp(qp, attr, attr_mask, init_attr);
	struct droce_vqp *q = droce_vqp_real(qp); /* an ibv_open_qp handle: its QP */

	RTE_SET_USED(attr_mask); /* everything is cheap: fill it all */
	if (q == NULL || attr == NULL || init_attr == NULL)
		return EINVAL;
	if (q->rss_tab != NULL)
		return EOPNOTSUPP; /* as mlx5: an RX hash QP has nothing to query */
	pthread_mutex_lock(&q->lock);
	*attr = q->attr;
	pthread_mutex_unlock(&q->lock);
	attr->qp_state = (enum ibv_qp_state)droce_vqp_state(q);
	attr->cur_qp_state = attr->qp_state;
	attr->cap = q->cap;
	attr->sq_draining = 0;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = q->qp.send_cq;
	init_attr->recv_cq = q->qp.recv_cq;
	init_attr->srq = q->qp.srq;
	init_attr->cap = q->cap;
	init_attr->qp_type = q->qp.qp_type;
	init_attr->sq_sig_all = q->sq_sig_all;
	return 0;
}

/* ---- modify ---- */

static const uint32_t mtu_bytes[] = {
	[IBV_MTU_256] = 256, [IBV_MTU_512] = 512, [IBV_MTU_1024] = 1024,
	[IBV_MTU_2048] = 2048, [IBV_MTU_4096] = 4096,
};

#define KNOWN_MASK (IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |          \
		    IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |       \
		    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |           \
		    IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |                \
		    IBV_QP_ALT_PATH | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |                     \
		    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MIG_STATE | IBV_QP_CAP |            \
		    IBV_QP_DEST_QPN)

#define QP_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		   IBV_ACCESS_REMOTE_ATOMIC)

/* Checks the values of the attributes in @mask; builds @mod.  0 or errno. */
static int
check_values(struct droce_vqp *q, const struct ibv_qp_attr *a, int mask, struct droce_qp_mod *mod)
{
	struct droce_vctx *x = droce_vctx_of(q->qp.context);

	if ((mask & IBV_QP_PORT) && a->port_num != DROCE_VERBS_PORT_NUM)
		return EINVAL;
	/* any P_Key index is taken, as the kernel does on RoCE (its P_Key
	 * checks are InfiniBand's, ib_security; rxe sends and expects the
	 * default P_Key whatever the index): the QP uses the port's one P_Key,
	 * query_qp reports the index given */
	if ((mask & IBV_QP_ACCESS_FLAGS) && ((unsigned int)a->qp_access_flags & ~(unsigned int)QP_ACCESS))
		return EINVAL;
	if (mask & IBV_QP_PATH_MTU) {
		if (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096 ||
		    a->path_mtu > droce_verbs_port_mtu(x->port))
			return EINVAL;
		mod->pmtu = mtu_bytes[a->path_mtu];
	}
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > DROCE_DP_MAX_RD_ATOMIC)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > DROCE_DP_MAX_RD_ATOMIC)
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return EINVAL;
	/* no alternate paths: nothing to migrate to */
	if (mask & IBV_QP_ALT_PATH)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) && a->path_mig_state != IBV_MIG_MIGRATED)
		return EINVAL;
	/* the caps are fixed at creation */
	if (mask & IBV_QP_CAP)
		return EINVAL;
	if (mask & IBV_QP_AV) {
		uint32_t rqpn = (mask & IBV_QP_DEST_QPN) ? a->dest_qp_num : q->attr.dest_qp_num;
		int rc = droce_verbs_resolve_path(x->port, &a->ah_attr, q->qp.qp_num, rqpn,
						  &mod->path);

		if (rc != 0)
			return rc;
	}
	mod->mask = (uint32_t)mask;
	mod->state = (mask & IBV_QP_STATE) ? (enum droce_qp_state)a->qp_state
					   : (enum droce_qp_state)droce_vqp_state(q);
	if (!(mask & IBV_QP_PATH_MTU))
		mod->pmtu = mtu_bytes[q->attr.path_mtu];
	mod->dest_qpn = a->dest_qp_num;
	/* PSNs are 24 bits; like hardware, ignore the bits above */
	mod->rq_psn = a->rq_psn & 0xffffff;
	mod->sq_psn = a->sq_psn & 0xffffff;
	mod->qkey = a->qkey;
	mod->access = a->qp_access_flags;
	mod->pkey_index = 0; /* the port's one P_Key, whatever index was given */
	mod->port = 0;
	mod->timeout = a->timeout;
	mod->retry_cnt = a->retry_cnt;
	mod->rnr_retry = a->rnr_retry;
	mod->min_rnr_timer = a->min_rnr_timer;
	mod->max_rd_atomic = a->max_rd_atomic;
	mod->max_dest_rd_atomic = a->max_dest_rd_atomic;
	return 0;
}

/* Keeps what query_qp reports. */
static void
remember(struct droce_vqp *q, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *s = &q->attr;

	if (mask & IBV_QP_STATE)
		s->qp_state = a->qp_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		s->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IBV_QP_ACCESS_FLAGS)
		s->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		s->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		s->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		s->qkey = a->qkey;
	if (mask & IBV_QP_AV)
		s->ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		s->path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		s->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		s->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		s->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		s->rq_psn = a->rq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		s->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		s->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		s->sq_psn = a->sq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		s->path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_DEST_QPN)
		s->dest_qp_num = a->dest_qp_num;
}

/*
 * Returns once the engine applied @q's modifies, as on a NIC, where the
 * modify is done when the call returns.  Bounded: 2 s, then it returns
 * anyway.  ibv_modify_qp waits so for two kinds of change:
 * - a RAW_PACKET QP's every one: it has no handshake that would hold frames
 *   back until it is ready, so a frame that arrives after RTR must not be
 *   dropped for a state the engine has not applied yet;
 * - any QP's move to RESET: the engine drops every WQE it finds posted when
 *   it applies the RESET, so one posted after the call returned (the QP
 *   brought back to RTS meanwhile, as the next modifies may do at once)
 *   must not be among them; nor may a frame of the old connection still in
 *   flight meet the QP in its old state and take a receive posted since.
 */
static void
settle(struct droce_vqp *q)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!droce_qp_settled(q->dqp)) {
		droce_engines_progress();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 2)
			break;
	}
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	if (droce_fk_ctx(qp ? qp->context : NULL))
		return droce_fk_modify_qp(qp, attr, attr_mask);
	struct droce_vqp *q = droce_vqp_real(qp); /* an ibv_open_qp handle: its QP */
	struct droce_qp_mod mod;
	enum ibv_qp_state cur, next;
	int rc;

	if (q == NULL || attr == NULL || (attr_mask & ~KNOWN_MASK))
		return EINVAL;
	if (q->rss_tab != NULL)
		return EOPNOTSUPP; /* an RX hash QP has no state (as mlx5) */
	pthread_mutex_lock(&q->lock);
	cur = (enum ibv_qp_state)droce_vqp_state(q);
	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		rc = EINVAL;
		goto out;
	}
	next = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if ((unsigned int)next > IBV_QPS_ERR ||
	    !droce_verbs_modify_ok(qp->qp_type, cur, next, attr_mask)) {
		rc = EINVAL;
		goto out;
	}
	memset(&mod, 0, sizeof(mod));
	rc = check_values(q, attr, attr_mask, &mod);
	if (rc != 0)
		goto out;
	rc = droce_qp_modify(q->dqp, &mod);
	if (rc != 0)
		goto out;
	remember(q, attr, attr_mask);
	if (next == IBV_QPS_RESET) {
		/* back to the creation defaults */
		struct ibv_qp_attr fresh = { .qp_state = IBV_QPS_RESET, .path_mtu = IBV_MTU_1024,
					     .port_num = DROCE_VERBS_PORT_NUM, .cap = q->cap };

		q->attr = fresh;
	}
	__atomic_store_n(&q->state, (int)next, __ATOMIC_RELEASE);
	q->qp.state = next;
	qp->state = next;
out:
	pthread_mutex_unlock(&q->lock);
	if (rc == 0 && qp->qp_type == IBV_QPT_RAW_PACKET) {
		struct droce_port *p = droce_port_get(droce_vctx_of(qp->context)->port);

		/* frames to the port's own MAC come back to it, as on a NIC */
		if (next == IBV_QPS_INIT && p != NULL)
			droce_port_loop_enable(p, p);
		settle(q);
	} else if (rc == 0 && next == IBV_QPS_RESET) {
		settle(q);
	}
	return rc;
}

/*
 * ibv_query_qp_data_in_order(3): 1 when the data of one WQE of operation
 * @op is written to this QP's memory in order (a reader may poll its last
 * byte instead of the completion), 0 otherwise.  On droce one engine places
 * all of a QP's packets, in PSN order: RC, UC and XRC drop or hold (selective
 * repeat) what arrives past a hole and place it only once the hole is
 * filled, UD and RAW_PACKET messages are one packet copied at once.  So
 * remote SENDs and WRITEs into the QP arrive in order.  READ responses are
 * placed where their PSN says as they come, past a hole too (rc_read.c): 0.
 * Like rdma-core's providers: 0 for unknown flags (none is defined) and
 * before RTS (mlx5 asks the device only for an RTS QP).
 */
int
ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	struct droce_vqp *q = droce_vqp_real(qp);

	if (q == NULL || flags != 0 ||
	    __atomic_load_n(&q->state, __ATOMIC_ACQUIRE) != (int)IBV_QPS_RTS)
		return 0;
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
		return 1;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		/* only the connected types take WRITEs */
		return q->qp.qp_type == IBV_QPT_RC || q->qp.qp_type == IBV_QPT_UC ||
		       q->qp.qp_type == IBV_QPT_XRC_SEND || q->qp.qp_type == IBV_QPT_XRC_RECV;
	default:
		return 0;
	}
}
