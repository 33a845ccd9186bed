/* SPDX-License-Identifier: BSD-3-Clause
 * Multicast groups of a port (the port's side of UD multicast; the QPs
 * attached to each group are the dataplane's, dataplane/mcast.c):
 *   - which groups the port is in, counted (one count per QP attachment),
 *   - the Ethernet filter: the PMD is given the groups' MACs
 *     (rte_eth_dev_set_mc_addr_list), or all multicast when it has no list
 *     (a ring pair or memif filters nothing and needs neither),
 *   - membership reports, as a host's IP stack sends them for the groups
 *     its sockets join (Linux's cma does the same through ip_mc_inc_group
 *     for a RoCE join): IGMPv2 (RFC 2236) for IPv4 groups, MLDv2 (RFC 3810)
 *     for IPv6 ones: a report on the first join, a leave on the last leave,
 *     and reports of every group in answer to a query.
 * Slow path only, under the port's group lock, except the query answer
 * (an engine, which only tries the lock).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "internal.h"
#include "port.h"
#include "port_struct.h"

#define MC_MAX_GROUPS DROCE_PORT_MC_MAX_GROUPS

struct mc_group {
	uint8_t gid[16];
	unsigned int refs;
};

static struct port_mc {
	pthread_mutex_t lock;
	unsigned int n;
	bool allmulti; /* the PMD has no address list: all multicast accepted */
	struct mc_group g[MC_MAX_GROUPS];
} mc[DROCE_MAX_PORTS] = {
	[0 ... DROCE_MAX_PORTS - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool
gid_v4(const uint8_t gid[16])
{
	return memcmp(gid, v4mapped, sizeof(v4mapped)) == 0;
}

static void
group_mac(const uint8_t gid[16], struct rte_ether_addr *mac)
{
	uint8_t *a = mac->addr_bytes;

	if (gid_v4(gid)) {
		a[0] = 0x01, a[1] = 0x00, a[2] = 0x5e;
		a[3] = gid[13] & 0x7f, a[4] = gid[14], a[5] = gid[15];
	} else {
		a[0] = 0x33, a[1] = 0x33;
		memcpy(a + 2, gid + 12, 4);
	}
}

/* Gives the PMD the groups' MACs (lock held). */
static void
mc_filter(struct droce_port *p, struct port_mc *m)
{
	struct rte_ether_addr macs[MC_MAX_GROUPS];
	uint32_t n = 0;
	int rc;

	if (!p->started || m->allmulti)
		return;
	for (unsigned int i = 0; i < m->n; i++) {
		struct rte_ether_addr a;
		uint32_t k;

		group_mac(m->g[i].gid, &a);
		for (k = 0; k < n && !rte_is_same_ether_addr(&macs[k], &a); k++)
			;
		if (k == n)
			macs[n++] = a;
	}
	rc = rte_eth_dev_set_mc_addr_list(p->eth_port, n ? macs : NULL, n);
	if (rc == 0 || n == 0)
		return;
	/* no list in this PMD (or too short): accept all multicast frames */
	rc = rte_eth_allmulticast_enable(p->eth_port);
	if (rc == 0)
		m->allmulti = true;
	else if (rc != -ENOTSUP)
		PMD_LOG(WARNING, "port%u: neither a multicast list nor allmulticast (%d)", p->index,
			rc);
}

int
droce_port_mc_join(struct droce_port *p, const uint8_t gid[16], bool *first)
{
	struct port_mc *m = &mc[p->index];
	int rc = 0;

	*first = false;
	pthread_mutex_lock(&m->lock);
	for (unsigned int i = 0; i < m->n; i++) {
		if (memcmp(m->g[i].gid, gid, 16) == 0) {
			m->g[i].refs++;
			goto out;
		}
	}
	if (m->n == MC_MAX_GROUPS) {
		rc = ENOMEM;
		goto out;
	}
	memcpy(m->g[m->n].gid, gid, 16);
	m->g[m->n++].refs = 1;
	*first = true;
	mc_filter(p, m);
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int
droce_port_mc_leave(struct droce_port *p, const uint8_t gid[16], bool *last)
{
	struct port_mc *m = &mc[p->index];
	int rc = ENOENT;

	*last = false;
	pthread_mutex_lock(&m->lock);
	for (unsigned int i = 0; i < m->n; i++) {
		if (memcmp(m->g[i].gid, gid, 16) != 0)
			continue;
		rc = 0;
		if (--m->g[i].refs == 0) {
			m->g[i] = m->g[--m->n];
			*last = true;
			mc_filter(p, m);
		}
		break;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

unsigned int
droce_port_mc_groups(struct droce_port *p, uint8_t (*gids)[16], unsigned int cap)
{
	struct port_mc *m = &mc[p->index];
	unsigned int n;

	pthread_mutex_lock(&m->lock);
	for (n = 0; n < m->n && n < cap; n++)
		memcpy(gids[n], m->g[n].gid, 16);
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* ---- membership reports ---- */

/* The port's source address of family @v4 for a report (zero if none). */
static void
report_src(const struct droce_port *p, bool v4, uint8_t out[16])
{
	memset(out, 0, 16);
	/* IPv6: a link-local address first, as MLD wants (RFC 3810 5.2.13) */
	for (int pass = v4 ? 1 : 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < p->n_gids; i++) {
			const uint8_t *g = p->gids[i];

			if (gid_v4(g) != v4 || (pass == 0 && !(g[0] == 0xfe && (g[1] & 0xc0) == 0x80)))
				continue;
			memcpy(out, g, 16);
			return;
		}
	}
}

static uint16_t
csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t
droce_port_mc_report(const struct droce_port *p, const uint8_t gid[16], bool join, uint8_t *buf,
		     size_t cap)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)buf;
	size_t off = sizeof(*eth);
	uint8_t src[16], dst[16];
	bool v4 = gid_v4(gid);
	size_t len;

	/* Ethernet [VLAN] | IPv4 + Router Alert | IGMP, or IPv6 | Hop-by-Hop | MLDv2 */
	len = off + (p->vlan ? sizeof(struct rte_vlan_hdr) : 0) +
	      (v4 ? sizeof(struct rte_ipv4_hdr) + 4 + 8 : sizeof(struct rte_ipv6_hdr) + 8 + 28);
	if (cap < len)
		return 0;
	memset(buf, 0, len);
	report_src(p, v4, src);
	if (v4) {
		/* a report goes to the group, a leave to all routers (224.0.0.2) */
		static const uint8_t all_routers[16] = { [10] = 0xff, [11] = 0xff, [12] = 224,
							 [15] = 2 };

		memcpy(dst, join ? gid : all_routers, 16);
	} else {
		/* MLDv2 reports go to all MLDv2 routers, ff02::16 */
		static const uint8_t mldv2_routers[16] = { 0xff, 0x02, [15] = 0x16 };

		memcpy(dst, mldv2_routers, 16);
	}
	group_mac(dst, &eth->dst_addr);
	eth->src_addr = p->mac;
	if (p->vlan) {
		struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(buf + off);

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16(p->vlan);
		vh->eth_proto = rte_cpu_to_be_16(v4 ? RTE_ETHER_TYPE_IPV4 : RTE_ETHER_TYPE_IPV6);
		off += sizeof(*vh);
	} else {
		eth->ether_type = rte_cpu_to_be_16(v4 ? RTE_ETHER_TYPE_IPV4 : RTE_ETHER_TYPE_IPV6);
	}
	if (v4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(buf + off);
		uint8_t *ra = buf + off + sizeof(*ip);
		uint8_t *igmp = ra + 4;

		ip->version_ihl = 0x46; /* 24 bytes: the Router Alert option (RFC 2113) */
		ip->type_of_service = 0xc0; /* internetwork control, as Linux sends IGMP */
		ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + 4 + 8);
		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = 1;
		ip->next_proto_id = IPPROTO_IGMP;
		memcpy(&ip->src_addr, src + 12, 4);
		memcpy(&ip->dst_addr, dst + 12, 4);
		ra[0] = 0x94, ra[1] = 0x04;
		ip->hdr_checksum = csum_fold(__rte_raw_cksum(ip, sizeof(*ip) + 4, 0));
		/* IGMPv2: type, max resp time, checksum, group */
		igmp[0] = join ? 0x16 : 0x17;
		memcpy(igmp + 4, gid + 12, 4);
		uint16_t c = csum_fold(__rte_raw_cksum(igmp, 8, 0));
		memcpy(igmp + 2, &c, 2);
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(buf + off);
		uint8_t *hbh = buf + off + sizeof(*ip);
		uint8_t *mld = hbh + 8;
		uint32_t sum;

		ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
		ip->payload_len = rte_cpu_to_be_16(8 + 28);
		ip->proto = 0; /* Hop-by-Hop options */
		ip->hop_limits = 1;
		memcpy(ip->src_addr, src, 16);
		memcpy(ip->dst_addr, dst, 16);
		/* next header ICMPv6, length 0 (8 bytes): Router Alert (MLD), PadN */
		hbh[0] = IPPROTO_ICMPV6;
		hbh[2] = 0x05, hbh[3] = 0x02, hbh[4] = 0, hbh[5] = 0;
		hbh[6] = 0x01, hbh[7] = 0x00;
		/* MLDv2 report: one record, CHANGE_TO_EXCLUDE (join) or
		 * CHANGE_TO_INCLUDE with no source (leave) */
		mld[0] = 143;
		mld[7] = 1;
		mld[8] = join ? 4 : 3;
		memcpy(mld + 12, gid, 16);
		/* checksum over the pseudo-header and the message */
		sum = __rte_raw_cksum(src, 16, 0);
		sum = __rte_raw_cksum(dst, 16, sum);
		sum += rte_cpu_to_be_32(28) >> 16;
		sum += rte_cpu_to_be_32(28) & 0xffff;
		sum += rte_cpu_to_be_32(IPPROTO_ICMPV6) >> 16;
		sum += rte_cpu_to_be_32(IPPROTO_ICMPV6) & 0xffff;
		sum = __rte_raw_cksum(mld, 28, sum);
		uint16_t c = csum_fold(sum);
		memcpy(mld + 2, &c, 2);
	}
	return len;
}

/* Sends a report of every group of family @v4 on @queue (an engine's). */
static void
answer_query(struct droce_port *p, uint16_t queue, bool v4)
{
	struct port_mc *m = &mc[p->index];

	if (pthread_mutex_trylock(&m->lock) != 0)
		return; /* a join or leave under way: it sends its own report */
	for (unsigned int i = 0; i < m->n; i++) {
		struct rte_mbuf *r;
		size_t len;

		if (gid_v4(m->g[i].gid) != v4)
			continue;
		r = rte_pktmbuf_alloc(p->mp);
		if (r == NULL)
			break;
		len = droce_port_mc_report(p, m->g[i].gid, true, rte_pktmbuf_mtod(r, uint8_t *),
					   rte_pktmbuf_tailroom(r));
		if (len == 0 || rte_pktmbuf_append(r, (uint16_t)len) == NULL) {
			rte_pktmbuf_free(r);
			break;
		}
		if (droce_port_tx_burst(p, queue, &r, 1) == 1)
			p->qstats[queue].mc_answers_tx++;
		else
			rte_pktmbuf_free(r);
	}
	pthread_mutex_unlock(&m->lock);
}

bool
droce_port_mc_query(struct droce_port *p, uint16_t queue, const uint8_t *l3, size_t len, bool v4)
{
	if (v4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)l3;
		size_t ihl;

		if (len < sizeof(*ip) || ip->next_proto_id != IPPROTO_IGMP)
			return false;
		ihl = (size_t)(ip->version_ihl & 0xf) * 4;
		if (ihl < sizeof(*ip) || len < ihl + 8 || l3[ihl] != 0x11)
			return false; /* not a membership query: nothing to answer */
	} else {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)l3;
		const uint8_t *h = l3 + sizeof(*ip);

		/* a query carries a Hop-by-Hop header (Router Alert), then ICMPv6 130 */
		if (len < sizeof(*ip) + 8 + 4 || ip->proto != 0 || h[0] != IPPROTO_ICMPV6)
			return false;
		h += 8 * (size_t)(h[1] + 1);
		if (h + 4 > l3 + len || h[0] != 130)
			return false;
	}
	p->qstats[queue].mc_queries_rx++;
	answer_query(p, queue, v4);
	return true;
}
