/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_create_flow(3) / ibv_destroy_flow for RAW_PACKET QPs: the rule's specs
 * (Ethernet, IPv4, IPv4 ext, IPv6, TCP, UDP) become a dataplane flow spec
 * (dataplane/flow.c does the matching; dp.h says in which order rules are
 * tried); on an RX hash QP (wq.c) the rule spreads frames over its
 * indirection table.  Refused: other spec types (tunnels, ESP, MPLS, actions), the
 * EGRESS flag, rules on other QP types (EOPNOTSUPP / EINVAL as below).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct droce_vflow {
	struct ibv_flow flow;
	struct droce_flow *df;
	struct droce_vqp *qp;
};

/* Adds the spec at @p (packed after the attributes, so not necessarily
 * aligned: read through an aligned copy) to @s; its size in *@used; 0 or errno.
 * As rdma-core (ibv_cmd_create_flow), the specs' own sizes say where each
 * ends: the attributes' `size` is not a bound (pyverbs and others leave it
 * at sizeof(struct ibv_flow_attr)). */
static int
add_spec(struct droce_flow_spec *s, const uint8_t *p, uint16_t *used)
{
	struct droce_flow_fields *v = &s->val, *m = &s->mask;
	struct ibv_flow_spec copy;
	const struct ibv_flow_spec *sp = &copy;
	uint16_t size;

	memcpy(&copy.hdr, p, sizeof(copy.hdr));
	size = copy.hdr.size;
	if (size < sizeof(copy.hdr))
		return EINVAL;
	memcpy(&copy, p, size < sizeof(copy) ? size : sizeof(copy));
	*used = size;
	switch (sp->hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		if (size < sizeof(sp->eth) || (s->have & DROCE_FLOW_ETH))
			return EINVAL;
		s->have |= DROCE_FLOW_ETH;
		memcpy(v->dmac, sp->eth.val.dst_mac, 6);
		memcpy(v->smac, sp->eth.val.src_mac, 6);
		v->ether_type = sp->eth.val.ether_type;
		v->vlan_tag = sp->eth.val.vlan_tag;
		memcpy(m->dmac, sp->eth.mask.dst_mac, 6);
		memcpy(m->smac, sp->eth.mask.src_mac, 6);
		m->ether_type = sp->eth.mask.ether_type;
		m->vlan_tag = sp->eth.mask.vlan_tag;
		return 0;
	case IBV_FLOW_SPEC_IPV4:
	case IBV_FLOW_SPEC_IPV4_EXT:
		if (size < (sp->hdr.type == IBV_FLOW_SPEC_IPV4 ? sizeof(sp->ipv4)
							      : sizeof(sp->ipv4_ext)) ||
		    (s->have & (DROCE_FLOW_IPV4 | DROCE_FLOW_IPV6)))
			return EINVAL;
		s->have |= DROCE_FLOW_IPV4;
		if (sp->hdr.type == IBV_FLOW_SPEC_IPV4) {
			v->src_ip = sp->ipv4.val.src_ip;
			v->dst_ip = sp->ipv4.val.dst_ip;
			m->src_ip = sp->ipv4.mask.src_ip;
			m->dst_ip = sp->ipv4.mask.dst_ip;
		} else {
			const struct ibv_flow_ipv4_ext_filter *a = &sp->ipv4_ext.val, *b = &sp->ipv4_ext.mask;

			v->src_ip = a->src_ip;
			v->dst_ip = a->dst_ip;
			v->proto = a->proto;
			v->tos = a->tos;
			v->ttl = a->ttl;
			v->ip_flags = a->flags;
			m->src_ip = b->src_ip;
			m->dst_ip = b->dst_ip;
			m->proto = b->proto;
			m->tos = b->tos;
			m->ttl = b->ttl;
			m->ip_flags = b->flags;
		}
		return 0;
	case IBV_FLOW_SPEC_IPV6:
		if (size < sizeof(sp->ipv6) || (s->have & (DROCE_FLOW_IPV4 | DROCE_FLOW_IPV6)))
			return EINVAL;
		s->have |= DROCE_FLOW_IPV6;
		memcpy(v->src_ip6, sp->ipv6.val.src_ip, 16);
		memcpy(v->dst_ip6, sp->ipv6.val.dst_ip, 16);
		memcpy(m->src_ip6, sp->ipv6.mask.src_ip, 16);
		memcpy(m->dst_ip6, sp->ipv6.mask.dst_ip, 16);
		/* network order, as every field of a spec */
		v->flow_label = be32toh(sp->ipv6.val.flow_label) & 0xfffff;
		m->flow_label = be32toh(sp->ipv6.mask.flow_label) & 0xfffff;
		v->next_hdr = sp->ipv6.val.next_hdr;
		m->next_hdr = sp->ipv6.mask.next_hdr;
		v->traffic_class = sp->ipv6.val.traffic_class;
		m->traffic_class = sp->ipv6.mask.traffic_class;
		v->hop_limit = sp->ipv6.val.hop_limit;
		m->hop_limit = sp->ipv6.mask.hop_limit;
		return 0;
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		if (size < sizeof(sp->tcp_udp) || (s->have & (DROCE_FLOW_TCP | DROCE_FLOW_UDP)))
			return EINVAL;
		s->have |= sp->hdr.type == IBV_FLOW_SPEC_TCP ? DROCE_FLOW_TCP : DROCE_FLOW_UDP;
		v->src_port = sp->tcp_udp.val.src_port;
		v->dst_port = sp->tcp_udp.val.dst_port;
		m->src_port = sp->tcp_udp.mask.src_port;
		m->dst_port = sp->tcp_udp.mask.dst_port;
		return 0;
	default:
		return EOPNOTSUPP; /* tunnels, ESP, MPLS, GRE, actions, inner headers */
	}
}

struct ibv_flow *
droce_verbs_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr)
{
	struct droce_vqp *q = (struct droce_vqp *)qp;
	struct droce_flow_spec spec;
	enum droce_flow_kind kind;
	struct droce_vflow *f;
	const uint8_t *p;
	int rc;

	if (q == NULL || attr == NULL || attr->comp_mask != 0) {
		errno = EINVAL;
		return NULL;
	}
	if (qp->qp_type != IBV_QPT_RAW_PACKET) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->flags & IBV_FLOW_ATTR_FLAGS_EGRESS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->flags & ~(uint32_t)IBV_FLOW_ATTR_FLAGS_DONT_TRAP) ||
	    attr->port != DROCE_VERBS_PORT_NUM) {
		errno = EINVAL;
		return NULL;
	}
	switch (attr->type) {
	case IBV_FLOW_ATTR_NORMAL:
		kind = DROCE_FLOW_NORMAL;
		break;
	case IBV_FLOW_ATTR_ALL_DEFAULT:
		kind = DROCE_FLOW_ALL_DEFAULT;
		break;
	case IBV_FLOW_ATTR_MC_DEFAULT:
		kind = DROCE_FLOW_MC_DEFAULT;
		break;
	case IBV_FLOW_ATTR_SNIFFER:
		kind = DROCE_FLOW_SNIFFER;
		break;
	default:
		errno = EINVAL;
		return NULL;
	}
	memset(&spec, 0, sizeof(spec));
	spec.dont_trap = (attr->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP) != 0;
	p = (const uint8_t *)(attr + 1);
	for (unsigned int i = 0; i < attr->num_of_specs; i++) {
		uint16_t used = 0;

		rc = add_spec(&spec, p, &used);
		if (rc != 0) {
			errno = rc;
			return NULL;
		}
		p += used;
	}
	/* the defaults and the sniffer take no specs */
	if (kind != DROCE_FLOW_NORMAL && attr->num_of_specs != 0) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* an RX hash QP's rule spreads the frames over its table (wq.c) */
	f->df = droce_flow_create_rss(droce_vctx_of(qp->context)->port, q->dqp, kind,
				      attr->priority, &spec, q->rss_tab != NULL ? &q->rss : NULL);
	if (f->df == NULL) {
		rc = errno;
		free(f);
		errno = rc;
		return NULL;
	}
	f->qp = q;
	f->flow.context = qp->context;
	f->flow.handle = (uint32_t)(uintptr_t)f;
	return &f->flow;
}

int
droce_verbs_destroy_flow(struct ibv_flow *flow)
{
	struct droce_vflow *f = (struct droce_vflow *)flow;

	if (f == NULL)
		return EINVAL;
	droce_flow_destroy(f->df);
	free(f);
	return 0;
}
