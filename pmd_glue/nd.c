/* SPDX-License-Identifier: BSD-3-Clause
 * IPv6 neighbour discovery for droce ports, RFC 4861's host side, over the
 * neighbour table ARP fills (arp.c):
 *   - a Neighbor Solicitation for one of the port's IPv6 addresses (sent to
 *     it or to its solicited-node group ff02::1:ffXX:XXXX, 33:33:ff:XX:XX:XX)
 *     is answered by a solicited Advertisement (S and O set, the target
 *     link-layer address option); its source link-layer address option is
 *     learnt, as Linux's ndisc_recv_ns does.  A DAD probe (source ::) is
 *     answered to all-nodes, S clear (7.2.4).
 *   - droce_port_nd_solicit asks for a peer: to the target's solicited-node
 *     group, with the source link-layer address option (7.2.2).
 *   - an Advertisement's target link-layer address is learnt when it was
 *     solicited or the entry exists (7.2.5: an unsolicited one only updates).
 *   - droce_port_nd_announce: an unsolicited Advertisement (O set, to
 *     ff02::1) of each IPv6 address once the port is up (7.2.6).
 * Every frame sent has hop limit 255 and its ICMPv6 checksum; one received
 * is checked as 7.1.1 / 7.1.2 say (hop limit 255, a good checksum, code 0,
 * 24 bytes or more, a target that is no multicast address, no option of
 * length 0, :: only as a solicitation's source to a solicited-node group
 * and without the source option, S clear on an Advertisement to a group):
 * one failing a check is dropped and counted in nd_bad.  Messages after
 * extension headers are not looked at (droce sends and expects none).
 * The engines call it (their frame path and the ND message), slow path.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "port.h"
#include "port_internal.h"
#include "port_struct.h"

/* ICMPv6 message types and options (RFC 4861 4.3, 4.4, 4.6.1) */
enum nd_type {
	ND_NS = 135,
	ND_NA = 136,
};

enum nd_opt {
	ND_OPT_SLLA = 1,
	ND_OPT_TLLA = 2,
};

/* NA flags, the first byte of the reserved word */
#define ND_NA_ROUTER 0x80
#define ND_NA_SOLICITED 0x40
#define ND_NA_OVERRIDE 0x20

#define ND_HOP_LIMIT 255

/* An NS / NA: the fixed part, then options. */
struct nd_msg {
	uint8_t type;
	uint8_t code;
	rte_be16_t cksum;
	uint8_t flags; /* NA: R S O; NS: reserved */
	uint8_t rsvd[3];
	uint8_t target[16];
} __rte_packed;

/* A link-layer address option for Ethernet: 8 bytes. */
struct nd_lla {
	uint8_t type;
	uint8_t len; /* in units of 8 bytes: 1 */
	uint8_t mac[RTE_ETHER_ADDR_LEN];
} __rte_packed;

static_assert(sizeof(struct nd_msg) == 24, "RFC 4861 4.3");
static_assert(sizeof(struct nd_lla) == 8, "RFC 4861 4.6.1");

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };

static bool
is_v6(const uint8_t a[16])
{
	return memcmp(a, v4mapped, 12) != 0;
}

static bool
is_zero(const uint8_t a[16])
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

static bool
is_link_local(const uint8_t a[16])
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* ff02::1:ffXX:XXXX of @a (RFC 4291 2.7.1) */
static void
solicited_node(const uint8_t a[16], uint8_t out[16])
{
	static const uint8_t pfx[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

	memcpy(out, pfx, 13);
	memcpy(out + 13, a + 13, 3);
}

/* 33:33 and the group's low 32 bits (RFC 2464 7) */
static void
group_mac(const uint8_t g[16], struct rte_ether_addr *mac)
{
	mac->addr_bytes[0] = 0x33;
	mac->addr_bytes[1] = 0x33;
	memcpy(mac->addr_bytes + 2, g + 12, 4);
}

bool
droce_port_has_ipv6(const struct droce_port *p)
{
	for (unsigned int i = 0; i < p->n_gids; i++)
		if (is_v6(p->gids[i]))
			return true;
	return false;
}

bool
droce_port_nd_announce_pending(const struct droce_port *p)
{
	return __atomic_load_n(&p->nd_announce, __ATOMIC_ACQUIRE);
}

static bool
own_ipv6(const struct droce_port *p, const uint8_t a[16])
{
	return is_v6(a) && droce_port_find_gid(p, a) >= 0;
}

/* The source address of a solicitation for @target: one in the target's
 * /64, else a link-local one for a link-local target, else the first IPv6
 * address.  False when the port has none. */
static bool
solicit_src(const struct droce_port *p, const uint8_t target[16], uint8_t out[16])
{
	int best = -1, score = -1;

	for (unsigned int i = 0; i < p->n_gids; i++) {
		const uint8_t *g = p->gids[i];
		int s;

		if (!is_v6(g))
			continue;
		s = memcmp(g, target, 8) == 0 ? 2 : is_link_local(g) == is_link_local(target) ? 1 : 0;
		if (s > score) {
			score = s;
			best = (int)i;
		}
	}
	if (best < 0)
		return false;
	memcpy(out, p->gids[best], 16);
	return true;
}

/*
 * Sends an NS or NA on @queue: from @src to @dst (Ethernet @dmac), about
 * @target, NA @flags, with the link-layer option @opt (0: none) carrying
 * the port's MAC.  0, or -1 and errno.
 */
static int
nd_send(struct droce_port *p, uint16_t queue, enum nd_type type, uint8_t flags,
	const uint8_t src[16], const uint8_t dst[16], const struct rte_ether_addr *dmac,
	const uint8_t target[16], enum nd_opt opt)
{
	uint16_t icmp_len = (uint16_t)(sizeof(struct nd_msg) + (opt ? sizeof(struct nd_lla) : 0));
	struct rte_ipv6_hdr *ip;
	struct nd_msg *nd;
	struct rte_mbuf *m;

	m = droce_port_ctl_frame(p, queue, dmac, RTE_ETHER_TYPE_IPV6, sizeof(*ip) + icmp_len,
				 (void **)&ip);
	if (m == NULL)
		return -1;
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(icmp_len);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = ND_HOP_LIMIT;
	memcpy(ip->src_addr, src, 16);
	memcpy(ip->dst_addr, dst, 16);
	nd = (struct nd_msg *)(ip + 1);
	nd->type = (uint8_t)type;
	nd->flags = flags;
	memcpy(nd->target, target, 16);
	if (opt) {
		struct nd_lla *o = (struct nd_lla *)(nd + 1);

		o->type = (uint8_t)opt;
		o->len = 1;
		memcpy(o->mac, p->mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	}
	/* over the pseudo-header (next header from ip->proto) and the message */
	nd->cksum = rte_ipv6_udptcp_cksum(ip, nd);
	if (droce_port_ctl_send(p, queue, m) != 0)
		return -1;
	if (type == ND_NS)
		p->qstats[queue].nd_ns_tx++;
	else
		p->qstats[queue].nd_na_tx++;
	return 0;
}

int
droce_port_nd_solicit(struct droce_port *p, uint16_t queue, const uint8_t target[16])
{
	struct rte_ether_addr dmac;
	uint8_t src[16], dst[16];

	if (!is_v6(target) || target[0] == 0xff || is_zero(target)) {
		errno = EINVAL;
		return -1;
	}
	if (!solicit_src(p, target, src)) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	solicited_node(target, dst);
	group_mac(dst, &dmac);
	return nd_send(p, queue, ND_NS, 0, src, dst, &dmac, target, ND_OPT_SLLA);
}

int
droce_port_nd_announce(struct droce_port *p, uint16_t queue)
{
	struct rte_ether_addr dmac;
	unsigned int sent = 0, addrs = 0;

	group_mac(all_nodes, &dmac);
	for (unsigned int i = 0; i < p->n_gids; i++) {
		if (!is_v6(p->gids[i]) || p->gids[i][0] == 0xff)
			continue;
		addrs++;
		sent += nd_send(p, queue, ND_NA, ND_NA_OVERRIDE, p->gids[i], all_nodes, &dmac,
				p->gids[i], ND_OPT_TLLA) == 0;
	}
	if (addrs == 0) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	if (sent < addrs)
		return -1; /* errno from nd_send; tried again while pending */
	__atomic_store_n(&p->nd_announce, false, __ATOMIC_RELEASE);
	return 0;
}

/* Walks the options after the fixed part (@len bytes): false when one has
 * length 0 or runs past the end (7.1.1 / 7.1.2); @lla: the option of type
 * @want, if any. */
static bool
nd_options(const uint8_t *o, size_t len, enum nd_opt want, const struct nd_lla **lla)
{
	*lla = NULL;
	while (len > 0) {
		size_t olen;

		if (len < 2 || o[1] == 0)
			return false;
		olen = (size_t)o[1] * 8;
		if (olen > len)
			return false;
		if (o[0] == want && olen >= sizeof(struct nd_lla))
			*lla = (const struct nd_lla *)o;
		o += olen;
		len -= olen;
	}
	return true;
}

bool
droce_port_nd_rx(struct droce_port *p, uint16_t queue, struct rte_mbuf *m, uint32_t l3off)
{
	struct droce_port_stats *st = &p->qstats[queue];
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	uint32_t have = rte_pktmbuf_data_len(m);
	const struct rte_ipv6_hdr *ip;
	const struct nd_msg *nd;
	const struct nd_lla *lla;
	struct rte_ether_addr peer_mac, lmac;
	uint16_t plen;
	bool ns;
	int rc;

	if (have < l3off + sizeof(*ip) + 1)
		return false;
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, l3off);
	if (ip->proto != IPPROTO_ICMPV6)
		return false;
	nd = (const struct nd_msg *)(ip + 1);
	if (nd->type != ND_NS && nd->type != ND_NA)
		return false; /* other ICMPv6: not ours to take */
	ns = nd->type == ND_NS;
	if (ns)
		st->nd_ns_rx++;
	else
		st->nd_na_rx++;
	plen = rte_be_to_cpu_16(ip->payload_len);
	/* 7.1.1 / 7.1.2: the whole message there, hop limit 255, checksum,
	 * code 0, 24 bytes or more, a target that is no group, options */
	if (plen < sizeof(*nd) || have < l3off + sizeof(*ip) + plen ||
	    ip->hop_limits != ND_HOP_LIMIT || (rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6 ||
	    rte_ipv6_udptcp_cksum_verify(ip, nd) != 0 || nd->code != 0 || nd->target[0] == 0xff ||
	    !nd_options((const uint8_t *)(nd + 1), plen - sizeof(*nd),
			ns ? ND_OPT_SLLA : ND_OPT_TLLA, &lla))
		goto bad;
	if (lla != NULL)
		memcpy(lmac.addr_bytes, lla->mac, RTE_ETHER_ADDR_LEN);
	if (ns) {
		bool dad = is_zero(ip->src_addr);
		uint8_t snm[16];

		solicited_node(nd->target, snm);
		if (dad && (memcmp(ip->dst_addr, snm, 16) != 0 || lla != NULL))
			goto bad; /* 7.1.1 */
		if (!own_ipv6(p, nd->target)) {
			/* not for us: refresh an entry we have, learn nothing new */
			if (lla != NULL && droce_port_neigh_known(p, ip->src_addr))
				droce_port_neigh_learn(p, ip->src_addr, &lmac);
			rte_pktmbuf_free(m);
			return true;
		}
		if (lla != NULL)
			droce_port_neigh_learn(p, ip->src_addr, &lmac);
		if (dad) {
			/* 7.2.4: to all-nodes, S clear */
			group_mac(all_nodes, &peer_mac);
			rc = nd_send(p, queue, ND_NA, ND_NA_OVERRIDE, nd->target, all_nodes,
				     &peer_mac, nd->target, ND_OPT_TLLA);
		} else {
			peer_mac = lla != NULL ? lmac : eth->src_addr;
			rc = nd_send(p, queue, ND_NA, ND_NA_SOLICITED | ND_NA_OVERRIDE, nd->target,
				     ip->src_addr, &peer_mac, nd->target, ND_OPT_TLLA);
		}
		RTE_SET_USED(rc); /* not sent: the asker solicits again */
		rte_pktmbuf_free(m);
		return true;
	}
	/* 7.1.2: a solicited advertisement goes to a unicast address */
	if (ip->dst_addr[0] == 0xff && (nd->flags & ND_NA_SOLICITED))
		goto bad;
	/* 7.2.5: no target link-layer address, nothing to learn; an
	 * unsolicited one only updates an entry */
	if (lla != NULL && !own_ipv6(p, nd->target) &&
	    ((nd->flags & ND_NA_SOLICITED) || droce_port_neigh_known(p, nd->target)))
		droce_port_neigh_learn(p, nd->target, &lmac);
	rte_pktmbuf_free(m);
	return true;
bad:
	st->nd_bad++;
	rte_pktmbuf_free(m);
	return true;
}
