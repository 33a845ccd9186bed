/* SPDX-License-Identifier: BSD-3-Clause
 * Address handles for UD QPs: ibv_create_ah, ibv_destroy_ah,
 * ibv_init_ah_from_wc and ibv_create_ah_from_wc.  RoCE addresses by GID, so
 * an AH needs a GRH (is_global); the GID is IPv4-mapped or IPv6 and its MAC
 * is resolved once, here.  The attribute checks are the kernel's for RoCE
 * (qp.c's droce_verbs_resolve_path: the LID and path bits are ignored).  The dataplane reads the resolved struct
 * droce_ah; ibv_destroy_ah refuses (EBUSY) while a posted WR naming the AH
 * has not completed, instead of leaving an engine a dangling pointer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>

#include "pmd_glue/port.h"
#include "fork.h"
#include "internal.h"

struct ibv_ah *
ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	if (droce_fk_ctx(pd ? pd->context : NULL))
		return droce_fk_create_ah(pd, attr);
	struct droce_vah *ah;
	struct droce_vctx *x;
	struct droce_path path;
	int rc;

	if (pd == NULL || attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	x = droce_vctx_of(pd->context);
	rc = droce_verbs_resolve_path(x->port, attr, 0, 0, &path);
	if (rc != 0) {
		errno = rc;
		return NULL;
	}
	/* no flow label: each sending QP picks its own UDP source port */
	path.udp_sport = path.flow_label ? droce_verbs_udp_sport(0, 0, path.flow_label) : 0;
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	droce_ah_init(&ah->dah, &path, x->port);
	ah->attr = *attr;
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->ah.handle = (uint32_t)ah->dah.serial;
	atomic_fetch_add(&((struct droce_vpd *)pd)->users, 1);
	pthread_mutex_lock(&((struct droce_vpd *)pd)->lock);
	TAILQ_INSERT_TAIL(&((struct droce_vpd *)pd)->ahs, ah, pd_link);
	pthread_mutex_unlock(&((struct droce_vpd *)pd)->lock);
	return &ah->ah;
}

int
ibv_destroy_ah(struct ibv_ah *ibah)
{
	if (droce_fk_ctx(ibah ? ibah->context : NULL))
		return droce_fk_destroy_ah(ibah);
	struct droce_vah *ah = (struct droce_vah *)ibah;
	struct droce_vpd *pd;

	if (ah == NULL)
		return EINVAL;
	if (droce_ah_busy(&ah->dah))
		return EBUSY; /* a posted WR still names it */
	pd = (struct droce_vpd *)ibah->pd;
	pthread_mutex_lock(&pd->lock);
	TAILQ_REMOVE(&pd->ahs, ah, pd_link);
	pthread_mutex_unlock(&pd->lock);
	atomic_fetch_sub(&pd->users, 1);
	free(ah);
	return 0;
}

/* 4 or 6: which header the 40-byte GRH area holds (rdma-core's rule: an IPv4
 * header sits in its last 20 bytes; IPv6 wins unless that header checks out). */
static int
grh_version(const struct ibv_grh *grh)
{
	const struct rte_ipv4_hdr *ip4 = (const struct rte_ipv4_hdr *)((const uint8_t *)grh + 20);
	bool v4 = ip4->version_ihl == RTE_IPV4_VHL_DEF &&
		  __rte_raw_cksum_reduce(__rte_raw_cksum(ip4, sizeof(*ip4), 0)) == 0xffff;

	if ((rte_be_to_cpu_32(grh->version_tclass_flow) >> 28) == 6)
		return v4 ? 4 : 6;
	return (ip4->version_ihl >> 4) == 4 ? 4 : -1;
}

int
ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
		    struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	struct droce_port *p;
	uint8_t sgid[16];
	int idx;

	if (context == NULL || wc == NULL || grh == NULL || ah_attr == NULL ||
	    port_num != DROCE_VERBS_PORT_NUM) {
		errno = EINVAL;
		return -1;
	}
	p = droce_port_get(droce_vctx_of(context)->port);
	if (p == NULL) {
		errno = ENODEV;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH)) {
		errno = EINVAL; /* RoCE addresses by GID: nothing to answer without one */
		return -1;
	}
	switch (grh_version(grh)) {
	case 6: {
		uint32_t vtf = rte_be_to_cpu_32(grh->version_tclass_flow);

		memcpy(sgid, grh->dgid.raw, 16);
		memcpy(ah_attr->grh.dgid.raw, grh->sgid.raw, 16);
		ah_attr->grh.flow_label = vtf & 0xfffff;
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
		break;
	}
	case 4: {
		const struct rte_ipv4_hdr *ip4 =
			(const struct rte_ipv4_hdr *)((const uint8_t *)grh + 20);

		droce_gid_from_ipv4(sgid, ip4->dst_addr);
		droce_gid_from_ipv4(ah_attr->grh.dgid.raw, ip4->src_addr);
		ah_attr->grh.traffic_class = ip4->type_of_service;
		break;
	}
	default:
		errno = EPROTONOSUPPORT;
		return -1;
	}
	idx = droce_port_find_gid(p, sgid);
	if (idx < 0) {
		errno = ENOENT; /* not addressed to one of this port's GIDs */
		return -1;
	}
	ah_attr->is_global = 1;
	ah_attr->grh.sgid_index = (uint8_t)idx;
	ah_attr->grh.hop_limit = 0xff;
	return 0;
}

struct ibv_ah *
ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
		      uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0)
		return NULL;
	return ibv_create_ah(pd, &attr);
}
