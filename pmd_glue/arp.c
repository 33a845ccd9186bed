/* SPDX-License-Identifier: BSD-3-Clause
 * ARP for droce ports, and the neighbour table of both families: the
 * table of peers' MACs (learnt from ARP, from IPv6 neighbour discovery,
 * nd.c, and from received MADs), answers for the port's own IPv4
 * addresses, requests.  IPv4 entries are kept as ::ffff:a.b.c.d.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <rte_arp.h>
#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "capture.h"
#include "impair.h"
#include "internal.h"
#include "port.h"
#include "port_internal.h"


static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static void
v4_addr(rte_be32_t ip, uint8_t addr[16])
{
	memcpy(addr, v4mapped, 12);
	memcpy(addr + 12, &ip, 4);
}

static bool
addr_zero(const uint8_t addr[16])
{
	static const uint8_t zero[16];

	return memcmp(addr, zero, 16) == 0;
}

void
droce_port_neigh_learn(struct droce_port *p, const uint8_t addr[16],
		       const struct rte_ether_addr *mac)
{
	struct droce_neigh_entry *slot = NULL;
	unsigned int i;

	/* no entry for :: or 0.0.0.0 */
	if (addr_zero(addr) || (memcmp(addr, v4mapped, 12) == 0 &&
				memcmp(addr + 12, (const uint8_t[4]){ 0 }, 4) == 0) ||
	    !rte_is_valid_assigned_ether_addr(mac))
		return;
	rte_spinlock_lock(&p->neigh_lock);
	for (i = 0; i < DROCE_NEIGH_TABLE_SIZE; i++) {
		struct droce_neigh_entry *e = &p->neigh[i];

		if (memcmp(e->addr, addr, 16) == 0) {
			slot = e;
			break;
		}
		/* else the first free entry, or the least recently learnt */
		if (slot == NULL ||
		    (!addr_zero(slot->addr) && (addr_zero(e->addr) || e->tsc < slot->tsc)))
			slot = e;
	}
	memcpy(slot->addr, addr, 16);
	slot->mac = *mac;
	slot->tsc = rte_get_tsc_cycles();
	rte_spinlock_unlock(&p->neigh_lock);
}

void
droce_port_arp_learn(struct droce_port *p, rte_be32_t ip, const struct rte_ether_addr *mac)
{
	uint8_t addr[16];

	v4_addr(ip, addr);
	droce_port_neigh_learn(p, addr, mac);
}

int
droce_port_neigh_lookup(struct droce_port *p, const uint8_t addr[16], struct rte_ether_addr *mac)
{
	unsigned int i;
	int rc = -1;

	if (addr_zero(addr)) {
		errno = ENOENT;
		return -1;
	}
	if (droce_port_find_gid(p, addr) >= 0) {
		/* one's own address: the port's MAC, and its frames are looped */
		*mac = p->mac;
		droce_port_loop_enable(p, p);
		return 0;
	}
	rte_spinlock_lock(&p->neigh_lock);
	for (i = 0; i < DROCE_NEIGH_TABLE_SIZE; i++) {
		if (memcmp(p->neigh[i].addr, addr, 16) == 0) {
			*mac = p->neigh[i].mac;
			rc = 0;
			break;
		}
	}
	rte_spinlock_unlock(&p->neigh_lock);
	if (rc < 0)
		errno = ENOENT;
	return rc;
}

int
droce_port_arp_lookup(struct droce_port *p, rte_be32_t ip, struct rte_ether_addr *mac)
{
	uint8_t addr[16];

	if (ip == 0) {
		errno = ENOENT;
		return -1;
	}
	v4_addr(ip, addr);
	return droce_port_neigh_lookup(p, addr, mac);
}

bool
droce_port_neigh_known(struct droce_port *p, const uint8_t addr[16])
{
	struct rte_ether_addr mac;

	return droce_port_neigh_lookup(p, addr, &mac) == 0;
}

static bool
arp_known(struct droce_port *p, rte_be32_t ip)
{
	struct rte_ether_addr mac;

	return droce_port_arp_lookup(p, ip, &mac) == 0;
}

/* True when @ip (network order) is one of the port's IPv4 GIDs. */
static bool
own_ipv4(const struct droce_port *p, rte_be32_t ip)
{
	uint8_t addr[16];

	v4_addr(ip, addr);
	return ip != 0 && droce_port_find_gid(p, addr) >= 0;
}

static bool
first_ipv4(const struct droce_port *p, rte_be32_t *ip)
{
	unsigned int i;

	for (i = 0; i < p->n_gids; i++) {
		if (memcmp(p->gids[i], v4mapped, 12) == 0) {
			memcpy(ip, &p->gids[i][12], 4);
			return true;
		}
	}
	return false;
}

bool
droce_port_handle_frame(struct droce_port *p, uint16_t queue, struct rte_mbuf *m)
{
	struct droce_port_stats *st = &p->qstats[queue];
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	uint32_t off = sizeof(struct rte_ether_hdr);
	uint16_t et;
	rte_be32_t sip, tip;

	if (rte_pktmbuf_data_len(m) < off)
		return false;
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	et = rte_be_to_cpu_16(eth->ether_type);
	if (et == RTE_ETHER_TYPE_VLAN) {
		const struct rte_vlan_hdr *vh;

		if (rte_pktmbuf_data_len(m) < off + sizeof(*vh))
			return false;
		vh = rte_pktmbuf_mtod_offset(m, const struct rte_vlan_hdr *, off);
		et = rte_be_to_cpu_16(vh->eth_proto);
		off += sizeof(*vh);
	}
	if ((et == RTE_ETHER_TYPE_IPV4 || et == RTE_ETHER_TYPE_IPV6) &&
	    droce_port_mc_query(p, queue, rte_pktmbuf_mtod_offset(m, const uint8_t *, off),
				rte_pktmbuf_data_len(m) - off, et == RTE_ETHER_TYPE_IPV4)) {
		rte_pktmbuf_free(m); /* an IGMP / MLD query, answered */
		return true;
	}
	if (et == RTE_ETHER_TYPE_IPV6)
		return droce_port_nd_rx(p, queue, m, off); /* neighbour discovery (nd.c) */
	if (et != RTE_ETHER_TYPE_ARP)
		return false;

	if (rte_pktmbuf_data_len(m) < off + sizeof(*arp))
		goto bad;
	arp = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, off);
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4)
		goto bad;
	sip = arp->arp_data.arp_sip;
	tip = arp->arp_data.arp_tip;

	switch (rte_be_to_cpu_16(arp->arp_opcode)) {
	case RTE_ARP_OP_REQUEST:
		st->arp_requests_rx++;
		if (!own_ipv4(p, tip)) {
			/* Not for us: refresh an entry we already have, learn nothing new. */
			if (arp_known(p, sip))
				droce_port_arp_learn(p, sip, &arp->arp_data.arp_sha);
			rte_pktmbuf_free(m);
			return true;
		}
		droce_port_arp_learn(p, sip, &arp->arp_data.arp_sha);
		/* Turn the request into the reply in place. */
		arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
		arp->arp_data.arp_tha = arp->arp_data.arp_sha;
		arp->arp_data.arp_tip = sip;
		arp->arp_data.arp_sha = p->mac;
		arp->arp_data.arp_sip = tip;
		eth->dst_addr = eth->src_addr;
		eth->src_addr = p->mac;
		m->ol_flags = 0;
		if (droce_port_tx_burst(p, queue, &m, 1) == 1)
			st->arp_replies_tx++;
		else
			rte_pktmbuf_free(m);
		return true;
	case RTE_ARP_OP_REPLY:
		st->arp_replies_rx++;
		if (own_ipv4(p, tip) || arp_known(p, sip))
			droce_port_arp_learn(p, sip, &arp->arp_data.arp_sha);
		rte_pktmbuf_free(m);
		return true;
	default:
		break;
	}
bad:
	st->arp_bad++;
	rte_pktmbuf_free(m);
	return true;
}

struct rte_mbuf *
droce_port_ctl_frame(struct droce_port *p, uint16_t queue, const struct rte_ether_addr *dmac,
		     uint16_t ethertype, uint32_t l3_len, void **l3)
{
	uint32_t off = sizeof(struct rte_ether_hdr) + (p->vlan ? sizeof(struct rte_vlan_hdr) : 0);
	uint32_t len = RTE_MAX(off + l3_len, (uint32_t)RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	struct rte_ether_hdr *eth;
	struct rte_mbuf *m;
	char *d;

	if (queue >= p->nb_txq) {
		errno = EINVAL;
		return NULL;
	}
	m = rte_pktmbuf_alloc(p->mp);
	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	d = rte_pktmbuf_append(m, (uint16_t)len);
	if (d == NULL) {
		rte_pktmbuf_free(m);
		errno = ENOMEM;
		return NULL;
	}
	memset(d, 0, len);
	eth = (struct rte_ether_hdr *)d;
	eth->dst_addr = *dmac;
	eth->src_addr = p->mac;
	if (p->vlan) {
		struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(eth + 1);

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16(p->vlan);
		vh->eth_proto = rte_cpu_to_be_16(ethertype);
	} else {
		eth->ether_type = rte_cpu_to_be_16(ethertype);
	}
	m->ol_flags = 0;
	*l3 = d + off;
	return m;
}

int
droce_port_ctl_send(struct droce_port *p, uint16_t queue, struct rte_mbuf *m)
{
	if (droce_port_tx_burst(p, queue, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		errno = ENOBUFS;
		return -1;
	}
	return 0;
}

int
droce_port_arp_request(struct droce_port *p, uint16_t queue, rte_be32_t ip)
{
	static const struct rte_ether_addr bcast = { .addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	struct rte_arp_hdr *arp;
	struct rte_mbuf *m;
	rte_be32_t sip;

	if (queue >= p->nb_txq) {
		errno = EINVAL;
		return -1;
	}
	if (!first_ipv4(p, &sip)) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	m = droce_port_ctl_frame(p, queue, &bcast, RTE_ETHER_TYPE_ARP, sizeof(*arp), (void **)&arp);
	if (m == NULL)
		return -1;
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = p->mac;
	arp->arp_data.arp_sip = sip;
	arp->arp_data.arp_tip = ip;
	if (droce_port_ctl_send(p, queue, m) != 0)
		return -1;
	p->qstats[queue].arp_requests_tx++;
	return 0;
}
