/* SPDX-License-Identifier: BSD-3-Clause
 * Multicast groups of a port (the port's side of UD multicast; the QPs
 * attached to each group are the dataplane's, dataplane/mcast.c):
 *   - which groups the port is in, counted (one count per QP attachment),
 *   - the Ethernet filter: the PMD is given the groups' MACs
 *     (rte_eth_dev_set_mc_addr_list), or all multicast when it has no list
 *     (a ring pair or memif filters nothing and needs neither),
 *   - membership reports, as a host's IP stack sends them for the groups
 *     its sockets join (Linux's cma does the same through ip_mc_inc_group
 *     for a RoCE join), with Linux's defaults: IGMPv3 (RFC 3376) for IPv4
 *     groups, IGMPv2 (RFC 2236) or v1 while an older querier was heard in
 *     the last 260 s (RFC 3376 7.2.1: 2 x 125 s + 10 s), MLDv2 (RFC 3810)
 *     for IPv6 ones: a state-change report (CHANGE_TO_EXCLUDE {}) on the
 *     first join, CHANGE_TO_INCLUDE {} on the last leave, each sent again
 *     once (robustness 2) at a random time within the unsolicited report
 *     interval (1 s; IGMPv2's join 10 s, its leave and v1's not again);
 *     current-state records (MODE_IS_EXCLUDE) of the groups a query asks
 *     for in answer to it.
 * Slow path only, under the port's group lock, except the query answer
 * (an engine, which only tries the lock).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_random.h>

#include "internal.h"
#include "port.h"
#include "port_struct.h"

#define MC_MAX_GROUPS DROCE_PORT_MC_MAX_GROUPS

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool
gid_v4(const uint8_t gid[16])
{
	return memcmp(gid, v4mapped, sizeof(v4mapped)) == 0;
}

#define MC_RESEND_MAX 64          /* state-change reports waiting to be sent again */
#define MC_OLDER_QUERIER_S 260    /* RFC 3376 8.13: robustness x query interval + 10 s */
#define MC_UNSOLICITED_MS 1000    /* IGMPv3 / MLDv2 unsolicited report interval */
#define MC_UNSOLICITED_V2_MS 10000 /* IGMPv2's (RFC 2236 8.10) */

struct mc_group {
	uint8_t gid[16];
	unsigned int refs;
};

/* A state-change report (join or leave of @gid) to send again at @due. */
struct mc_resend {
	uint8_t gid[16];
	bool join;
	uint64_t due; /* TSC */
};

static struct port_mc {
	pthread_mutex_t lock;
	unsigned int n;
	bool allmulti; /* the PMD has no address list: all multicast accepted */
	/* IGMP compatibility (RFC 3376 7.2.1), written by the engine that
	 * heard a v1 / v2 query: the oldest version heard, until when */
	uint8_t igmp_older;
	uint64_t older_until; /* TSC */
	unsigned int n_rs;
	struct mc_resend rs[MC_RESEND_MAX];
	struct mc_group g[MC_MAX_GROUPS];
} mc[DROCE_MAX_PORTS] = {
	[0 ... DROCE_MAX_PORTS - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

/* The IGMP version the port speaks now: 3, or 2 / 1 while an older
 * querier's timer runs. */
static unsigned int
igmp_version(const struct port_mc *m)
{
	uint8_t v = __atomic_load_n(&m->igmp_older, __ATOMIC_ACQUIRE);

	if (v == 0 || rte_get_tsc_cycles() >= __atomic_load_n(&m->older_until, __ATOMIC_RELAXED))
		return 3;
	return v;
}

/* A state change of @gid (lock held): it replaces a repeat of the group's
 * previous state change still waiting, and is itself sent once more within
 * the unsolicited report interval unless the version repeats none. */
static void
resend_plan(struct port_mc *m, const uint8_t gid[16], bool join)
{
	unsigned int ms, i;

	for (i = 0; i < m->n_rs && memcmp(m->rs[i].gid, gid, 16) != 0; i++)
		;
	if (i < m->n_rs)
		m->rs[i] = m->rs[--m->n_rs];
	if (gid_v4(gid) && igmp_version(m) < 3) {
		if (!join || igmp_version(m) == 1)
			return; /* a v2 leave is sent once, v1 has none */
		ms = MC_UNSOLICITED_V2_MS;
	} else {
		ms = MC_UNSOLICITED_MS;
	}
	if (m->n_rs == MC_RESEND_MAX)
		return;
	memcpy(m->rs[m->n_rs].gid, gid, 16);
	m->rs[m->n_rs].join = join;
	m->rs[m->n_rs].due = rte_get_tsc_cycles() + rte_rand_max((uint64_t)ms * rte_get_tsc_hz() / 1000);
	m->n_rs++;
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

/* Gives the PMD the groups' MACs (lock held), and those neighbour
 * discovery needs on a port with IPv6 addresses: all-nodes (ff02::1) and
 * each address's solicited-node group (ff02::1:ffXX:XXXX, pmd_glue/nd.c). */
static void
mc_filter(struct droce_port *p, struct port_mc *m)
{
	struct rte_ether_addr macs[MC_MAX_GROUPS + DROCE_MAX_GIDS + 1];
	uint8_t nd[DROCE_MAX_GIDS + 1][16];
	unsigned int n_nd = 0;
	uint32_t n = 0;
	int rc;

	if (!p->started || m->allmulti)
		return;
	for (unsigned int i = 0; i < p->n_gids; i++) {
		static const uint8_t snm[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

		if (gid_v4(p->gids[i]) || p->gids[i][0] == 0xff)
			continue;
		if (n_nd == 0) {
			memset(nd[n_nd], 0, 16);
			nd[n_nd][0] = 0xff, nd[n_nd][1] = 0x02, nd[n_nd][15] = 0x01;
			n_nd++;
		}
		memcpy(nd[n_nd], snm, 13);
		memcpy(nd[n_nd] + 13, p->gids[i] + 13, 3);
		n_nd++;
	}
	for (unsigned int i = 0; i < m->n + n_nd; i++) {
		struct rte_ether_addr a;
		uint32_t k;

		group_mac(i < m->n ? m->g[i].gid : nd[i - m->n], &a);
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
	resend_plan(m, gid, true);
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
			resend_plan(m, gid, false);
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

void
droce_port_mc_start(struct droce_port *p)
{
	struct port_mc *m = &mc[p->index];

	pthread_mutex_lock(&m->lock);
	mc_filter(p, m);
	pthread_mutex_unlock(&m->lock);
}

void
droce_port_mc_fini(struct droce_port *p)
{
	struct port_mc *m = &mc[p->index];

	/* the port goes: its groups, repeats and IGMP version with it */
	pthread_mutex_lock(&m->lock);
	m->n = 0;
	m->n_rs = 0;
	m->allmulti = false;
	__atomic_store_n(&m->igmp_older, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m->lock);
}

unsigned int
droce_port_mc_due(unsigned int port, uint8_t (*gids)[16], bool *join, unsigned int cap)
{
	struct port_mc *m;
	uint64_t now = rte_get_tsc_cycles();
	unsigned int n = 0;

	if (port >= DROCE_MAX_PORTS)
		return 0;
	m = &mc[port];
	if (__atomic_load_n(&m->n_rs, __ATOMIC_RELAXED) == 0)
		return 0;
	pthread_mutex_lock(&m->lock);
	for (unsigned int i = 0; i < m->n_rs && n < cap;) {
		if (m->rs[i].due > now) {
			i++;
			continue;
		}
		memcpy(gids[n], m->rs[i].gid, 16);
		join[n++] = m->rs[i].join;
		m->rs[i] = m->rs[--m->n_rs];
	}
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

/* What a report says about its group. */
enum mc_kind {
	MC_JOIN,    /* state change: the port joined (CHANGE_TO_EXCLUDE {}) */
	MC_LEAVE,   /* state change: the port left (CHANGE_TO_INCLUDE {}) */
	MC_CURRENT, /* answer to a query: the port is in it (MODE_IS_EXCLUDE {}) */
};

/* Record types of IGMPv3 and MLDv2 (RFC 3376 4.2.12, RFC 3810 5.2.12). */
static const uint8_t record_type[] = {
	[MC_JOIN] = 4,
	[MC_LEAVE] = 3,
	[MC_CURRENT] = 2,
};

/*
 * Builds the report of @kind for group @gid into @buf: IGMP of version @ver
 * for an IPv4-mapped group (v3: one group record to 224.0.0.22; v2: a
 * report to the group, a leave to 224.0.0.2; v1: a report to the group, no
 * leave), MLDv2 for IPv6 (one record to ff02::16); IPv4 with the Router
 * Alert option, TOS 0xc0 and DF as Linux sends IGMP, IPv6 with a Hop-by-Hop
 * Router Alert; TTL / hop limit 1.  The frame's length, or 0 when there is
 * nothing to send or @cap is too small.
 */
static size_t
build(const struct droce_port *p, const uint8_t gid[16], enum mc_kind kind, unsigned int ver,
      uint8_t *buf, size_t cap)
{
	static const uint8_t all_routers[16] = { [10] = 0xff, [11] = 0xff, [12] = 224, [15] = 2 };
	static const uint8_t igmpv3_routers[16] = { [10] = 0xff, [11] = 0xff, [12] = 224,
						    [15] = 22 };
	static const uint8_t mldv2_routers[16] = { 0xff, 0x02, [15] = 0x16 };
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)buf;
	size_t off = sizeof(*eth), igmp_len = ver == 3 ? 16 : 8;
	uint8_t src[16], dst[16];
	bool v4 = gid_v4(gid);
	size_t len;

	if (v4 && ver == 1 && kind == MC_LEAVE)
		return 0; /* IGMPv1 has no leave */
	/* Ethernet [VLAN] | IPv4 + Router Alert | IGMP, or IPv6 | Hop-by-Hop | MLDv2 */
	len = off + (p->vlan ? sizeof(struct rte_vlan_hdr) : 0) +
	      (v4 ? sizeof(struct rte_ipv4_hdr) + 4 + igmp_len : sizeof(struct rte_ipv6_hdr) + 8 + 28);
	if (cap < len)
		return 0;
	memset(buf, 0, len);
	report_src(p, v4, src);
	if (!v4)
		memcpy(dst, mldv2_routers, 16);
	else if (ver == 3)
		memcpy(dst, igmpv3_routers, 16);
	else
		memcpy(dst, kind == MC_LEAVE ? all_routers : gid, 16);
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
		uint16_t c;

		ip->version_ihl = 0x46; /* 24 bytes: the Router Alert option (RFC 2113) */
		ip->type_of_service = 0xc0; /* internetwork control, as Linux sends IGMP */
		ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + 4 + igmp_len));
		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = 1;
		ip->next_proto_id = IPPROTO_IGMP;
		memcpy(&ip->src_addr, src + 12, 4);
		memcpy(&ip->dst_addr, dst + 12, 4);
		ra[0] = 0x94, ra[1] = 0x04;
		ip->hdr_checksum = csum_fold(__rte_raw_cksum(ip, sizeof(*ip) + 4, 0));
		if (ver == 3) {
			/* type 0x22, reserved, checksum, reserved, one record:
			 * type, no aux data, no source, the group */
			igmp[0] = 0x22;
			igmp[7] = 1;
			igmp[8] = record_type[kind];
			memcpy(igmp + 12, gid + 12, 4);
		} else {
			/* type, max resp time, checksum, group */
			igmp[0] = kind == MC_LEAVE ? 0x17 : ver == 2 ? 0x16 : 0x12;
			memcpy(igmp + 4, gid + 12, 4);
		}
		c = csum_fold(__rte_raw_cksum(igmp, igmp_len, 0));
		memcpy(igmp + 2, &c, 2);
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(buf + off);
		uint8_t *hbh = buf + off + sizeof(*ip);
		uint8_t *mld = hbh + 8;
		uint32_t sum;
		uint16_t c;

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
		/* MLDv2 report: one record for the group, no source */
		mld[0] = 143;
		mld[7] = 1;
		mld[8] = record_type[kind];
		memcpy(mld + 12, gid, 16);
		/* checksum over the pseudo-header and the message */
		sum = __rte_raw_cksum(src, 16, 0);
		sum = __rte_raw_cksum(dst, 16, sum);
		sum += rte_cpu_to_be_32(28) >> 16;
		sum += rte_cpu_to_be_32(28) & 0xffff;
		sum += rte_cpu_to_be_32(IPPROTO_ICMPV6) >> 16;
		sum += rte_cpu_to_be_32(IPPROTO_ICMPV6) & 0xffff;
		sum = __rte_raw_cksum(mld, 28, sum);
		c = csum_fold(sum);
		memcpy(mld + 2, &c, 2);
	}
	return len;
}

size_t
droce_port_mc_report(const struct droce_port *p, const uint8_t gid[16], bool join, uint8_t *buf,
		     size_t cap)
{
	return build(p, gid, join ? MC_JOIN : MC_LEAVE, igmp_version(&mc[p->index]), buf, cap);
}

/* Sends a current-state report of every group of family @v4 (or of @only,
 * a group-specific query's group) on @queue (an engine's). */
static void
answer_query(struct droce_port *p, uint16_t queue, bool v4, const uint8_t *only)
{
	struct port_mc *m = &mc[p->index];
	unsigned int ver = igmp_version(m);

	if (pthread_mutex_trylock(&m->lock) != 0)
		return; /* a join or leave under way: it sends its own report */
	for (unsigned int i = 0; i < m->n; i++) {
		struct rte_mbuf *r;
		size_t len;

		if (gid_v4(m->g[i].gid) != v4 || (only != NULL && memcmp(m->g[i].gid, only, 16) != 0))
			continue;
		r = rte_pktmbuf_alloc(p->mp);
		if (r == NULL)
			break;
		len = build(p, m->g[i].gid, MC_CURRENT, ver, rte_pktmbuf_mtod(r, uint8_t *),
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

/* An IGMPv1 or v2 query (RFC 3376 7.2.1): the port speaks that version
 * (the oldest heard) for the next MC_OLDER_QUERIER_S seconds. */
static void
older_querier(struct port_mc *m, unsigned int ver)
{
	unsigned int cur = igmp_version(m);

	__atomic_store_n(&m->older_until,
			 rte_get_tsc_cycles() + (uint64_t)MC_OLDER_QUERIER_S * rte_get_tsc_hz(),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&m->igmp_older, (uint8_t)(ver < cur ? ver : cur), __ATOMIC_RELEASE);
}

bool
droce_port_mc_query(struct droce_port *p, uint16_t queue, const uint8_t *l3, size_t len, bool v4)
{
	uint8_t group[16] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *only = NULL;

	if (v4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)l3;
		size_t ihl, tot, glen;
		const uint8_t *q;

		if (len < sizeof(*ip) || ip->next_proto_id != IPPROTO_IGMP)
			return false;
		ihl = (size_t)(ip->version_ihl & 0xf) * 4;
		tot = rte_be_to_cpu_16(ip->total_length);
		if (ihl < sizeof(*ip) || len < ihl + 8 || l3[ihl] != 0x11)
			return false; /* not a membership query: nothing to answer */
		q = l3 + ihl;
		glen = tot > ihl && tot <= len ? tot - ihl : len - ihl;
		/* RFC 3376 7.1: 8 bytes is v1 (max resp 0) or v2, 12 or more v3 */
		if (glen < 12)
			older_querier(&mc[p->index], q[1] == 0 ? 1 : 2);
		if (memcmp(q + 4, "\0\0\0\0", 4) != 0) {
			memcpy(group + 12, q + 4, 4);
			only = group; /* group-specific */
		}
	} else {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)l3;
		const uint8_t *h = l3 + sizeof(*ip);

		/* a query carries a Hop-by-Hop header (Router Alert), then ICMPv6 130 */
		if (len < sizeof(*ip) + 8 + 4 || ip->proto != 0 || h[0] != IPPROTO_ICMPV6)
			return false;
		h += 8 * (size_t)(h[1] + 1);
		if (h + 4 > l3 + len || h[0] != 130)
			return false;
		if (h + 24 <= l3 + len) {
			static const uint8_t zero[16];

			if (memcmp(h + 8, zero, 16) != 0) {
				memcpy(group, h + 8, 16);
				only = group; /* address-specific */
			}
		}
	}
	p->qstats[queue].mc_queries_rx++;
	answer_query(p, queue, v4, only);
	return true;
}
