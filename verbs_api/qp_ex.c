/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_create_qp_ex(3): the comp_mask, send_ops_flags and XRC checks in front
 * of qp.c's create path, and ibv_qp_to_qp_ex.
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>

#include "internal.h"

/* ---- ibv_create_qp_ex(3) ---- */

/* The IBV_QP_EX_WITH_* flag of each send opcode droce executes. */
static const struct {
	uint64_t flag;
	unsigned int op;
} send_ops_tab[] = {
	{ IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE },
	{ IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
	{ IBV_QP_EX_WITH_SEND, IBV_WR_SEND },
	{ IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM },
	{ IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ },
	{ IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP },
	{ IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD },
	{ IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV },
	{ IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW },
	{ IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV },
	{ IBV_QP_EX_WITH_TSO, IBV_WR_TSO }, /* RAW_PACKET only (not UD on droce) */
	/* ATOMIC_WRITE, FLUSH: not executed by droce */
};

/* The send_ops_flags a QP of @type supports (the opcode table's view). */
static uint64_t
send_ops_supported(enum ibv_qp_type type)
{
	uint64_t m = 0;

	for (size_t i = 0; i < RTE_DIM(send_ops_tab); i++)
		if (droce_wr_opcode_allowed(droce_verbs_dp_type(type), send_ops_tab[i].op) &&
		    (send_ops_tab[i].op != IBV_WR_TSO || type == IBV_QPT_RAW_PACKET))
			m |= send_ops_tab[i].flag;
	return m;
}

/* Comp mask bits droce knows: the PD, the XRC domain (XRC_RECV), send ops,
 * TSO headers (RAW_PACKET), RX hash and its indirection table (wq.c); and
 * creation flags (none supported). */
#define QP_INIT_EX_KNOWN                                                                   \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS |       \
	 IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE |                       \
	 IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

struct ibv_qp *
droce_verbs_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *ax)
{
	struct ibv_qp_init_attr ia;
	struct droce_vxrcd *xrcd = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_qp *qp;
	uint64_t ops = 0;
	uint16_t tso = 0;

	if (ax == NULL || (ax->comp_mask & ~(uint32_t)QP_INIT_EX_KNOWN)) {
		errno = EINVAL;
		return NULL;
	}
	if (ax->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH)) {
		/* create flags (none) checked, as every QP */
		if ((ax->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && ax->create_flags != 0) {
			errno = EOPNOTSUPP;
			return NULL;
		}
		if (ax->comp_mask & (IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
			errno = EINVAL; /* receive only */
			return NULL;
		}
		return droce_verbs_create_rss_qp(context, ax); /* wq.c */
	}
	if (ax->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) {
		/* TSO is for RAW_PACKET QPs, with a header droce can carry in a WQE */
		if (ax->qp_type != IBV_QPT_RAW_PACKET) {
			errno = EOPNOTSUPP;
			return NULL;
		}
		if (ax->max_tso_header > DROCE_DP_MAX_TSO_HEADER) {
			errno = EINVAL;
			return NULL;
		}
		tso = ax->max_tso_header;
	}
	if ((ax->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && ax->create_flags != 0) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (ax->comp_mask & IBV_QP_INIT_ATTR_PD)
		pd = ax->pd;
	if (ax->comp_mask & IBV_QP_INIT_ATTR_XRCD)
		xrcd = (struct droce_vxrcd *)ax->xrcd;
	/* every type but XRC_RECV needs its PD; XRC_RECV needs its domain */
	if (ax->qp_type == IBV_QPT_XRC_RECV ? xrcd == NULL
					     : (pd == NULL || pd->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	if (ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		/* the man page: a QP that cannot do every asked type is not created */
		ops = ax->send_ops_flags;
		if (ax->qp_type == IBV_QPT_RC || ax->qp_type == IBV_QPT_UC ||
		    ax->qp_type == IBV_QPT_UD || ax->qp_type == IBV_QPT_XRC_SEND ||
		    ax->qp_type == IBV_QPT_XRC_RECV || ax->qp_type == IBV_QPT_RAW_PACKET) {
			/* XRC_RECV sends nothing */
			if (ops & ~(ax->qp_type == IBV_QPT_XRC_RECV ? 0
								   : send_ops_supported(ax->qp_type))) {
				errno = EOPNOTSUPP;
				return NULL;
			}
		}
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = ax->qp_context;
	ia.send_cq = ax->send_cq;
	ia.recv_cq = ax->recv_cq;
	ia.srq = ax->srq;
	ia.cap = ax->cap;
	ia.qp_type = ax->qp_type;
	ia.sq_sig_all = ax->sq_sig_all;
	qp = droce_verbs_create_qp_in(context, pd, &ia, ops, xrcd, tso);
	if (qp != NULL)
		ax->cap = ia.cap;
	return qp;
}

/*
 * Every droce QP carries the WR builder (all its function pointers are set
 * whatever send_ops_flags asked; an operation the QP type cannot do fails
 * at ibv_wr_complete), so this never returns NULL for a droce QP.
 */
struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return qp ? &((struct droce_vqp *)qp)->qpx : NULL;
}
