/* SPDX-License-Identifier: BSD-3-Clause
 * IPv6 neighbour discovery (pmd_glue/nd.c, issue 25 section 4) on the port
 * pair with 2001:2::1 / 2001:2::2 (RFC 5180's benchmarking range, as the
 * other IPv6 tests):
 *   - a solicitation is answered and both ends learn (frame by frame),
 *   - the frames droce sends (NS, the answer, the unsolicited NA) decoded
 *     by tshark, checksums included,
 *   - ND frames failing RFC 4861 7.1's checks dropped and counted, and a
 *     bounded random mutation run (ASan build: no crash, nothing learnt),
 *   - ibv_modify_qp to RTR resolving an IPv6 peer with no entry set by
 *     hand, over the switch model (ring pairs short-cut resolution).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_random.h>

#include <droce/droce.h>
#include <infiniband/verbs.h>

#include "dataplane/dp.h"
#include "env.h"
#include "pair_config.h"
#include "pmd_glue/port.h"
#include "proc.h"

static const uint8_t A6[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 1 }; /* 2001:2::1, port0 */
static const uint8_t B6[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 2 }; /* 2001:2::2, port1 */
static const uint8_t X6[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 0x77 }; /* 2001:2::77, nobody's */
static const struct rte_ether_addr XMAC = { { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x77 } };

static void
stop_all(void)
{
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
}

TestSuite(nd, .fini = stop_all, .timeout = 90);

static void
start_pair(const char *port0_extra)
{
	static char text[4096];
	struct tc_pair o = { .ipv6 = true, .port0_extra = port0_extra };
	struct droce_config cfg;

	cr_assert_gt(tc_pair_config(text, sizeof(text), &o), 0);
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<nd pair>", text, &cfg), 0, "%s", droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "%s", droce_last_error());
}

static uint16_t
rx_wait(struct droce_port *p, struct rte_mbuf **pkts, uint16_t n, unsigned int ms)
{
	uint64_t deadline = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000 * ms;
	uint16_t got = 0;

	while (got < n && rte_get_tsc_cycles() < deadline)
		got += droce_port_rx_burst(p, 0, pkts + got, n - got);
	return got;
}

static struct droce_port_stats
pstats(struct droce_port *p)
{
	struct droce_port_stats s;

	droce_port_stats_get(p, &s);
	return s;
}

/* ---- a frame builder of the tests' own (not nd.c's) ---- */

/* The offsets of an untagged ND frame, from the headers' sizes. */
#define L3 ((uint32_t)sizeof(struct rte_ether_hdr))
#define L4 (L3 + (uint32_t)sizeof(struct rte_ipv6_hdr))

/*
 * An NS (@type 135) or NA (136) from @src to @dst for @target, with the
 * link-layer option (@opt 1 or 2, 0 none) carrying @lla: its length.
 */
static size_t
nd_frame(uint8_t *f, uint8_t type, uint8_t flags, const uint8_t src[16], const uint8_t dst[16],
	 const struct rte_ether_addr *dmac, const struct rte_ether_addr *smac,
	 const uint8_t target[16], uint8_t opt, const struct rte_ether_addr *lla)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(f + L3);
	uint8_t *icmp = f + L4;
	uint16_t len = (uint16_t)(24 + (opt ? 8 : 0));

	memset(f, 0, L4 + len);
	eth->dst_addr = *dmac;
	eth->src_addr = *smac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(len);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = 255;
	memcpy(ip->src_addr, src, 16);
	memcpy(ip->dst_addr, dst, 16);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	if (opt) {
		icmp[24] = opt;
		icmp[25] = 1;
		memcpy(icmp + 26, lla->addr_bytes, 6);
	}
	return L4 + len;
}

/* Recomputes the ICMPv6 checksum of the frame @f (of @n bytes; none when
 * its payload length says more, or its next header is no longer ICMPv6). */
static void
resum_n(uint8_t *f, size_t n)
{
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(f + L3);
	uint16_t c;

	/* (DPDK's pseudo-header sum shifts the next header into bit 31 when
	 * it is 128 or more: UBSan's error; droce sums ICMPv6's only) */
	if (n < L4 + 4 || rte_be_to_cpu_16(ip->payload_len) > n - L4 ||
	    ip->proto != IPPROTO_ICMPV6)
		return;
	memset(f + L4 + 2, 0, 2);
	c = rte_ipv6_udptcp_cksum(ip, f + L4);
	memcpy(f + L4 + 2, &c, 2);
}

#define resum(f) resum_n(f, L4 + 32)

static void
solicited_node(const uint8_t a[16], uint8_t g[16], struct rte_ether_addr *mac)
{
	static const uint8_t pfx[13] = { 0xff, 0x02, [11] = 1, [12] = 0xff };

	memcpy(g, pfx, 13);
	memcpy(g + 13, a + 13, 3);
	mac->addr_bytes[0] = 0x33;
	mac->addr_bytes[1] = 0x33;
	memcpy(mac->addr_bytes + 2, g + 12, 4);
}

/* Puts @len bytes of @f on port0's wire and hands what port1 receives to
 * port1's frame handler: its verdict. */
static bool
to_port1(const uint8_t *f, size_t len)
{
	struct droce_port *p0 = droce_port_get(0), *p1 = droce_port_get(1);
	struct rte_mbuf *m = rte_pktmbuf_alloc(droce_pktmbuf_pool()), *got;
	char *d;

	cr_assert_not_null(m);
	d = rte_pktmbuf_append(m, (uint16_t)RTE_MAX(len, (size_t)60));
	cr_assert_not_null(d);
	memset(d, 0, RTE_MAX(len, (size_t)60));
	memcpy(d, f, len);
	cr_assert_eq(droce_port_tx_burst(p0, 0, &m, 1), 1);
	cr_assert_eq(rx_wait(p1, &got, 1, 500), 1);
	return droce_port_handle_frame(p1, 0, got);
}

/* ---- answers and learning ---- */

Test(nd, solicitation_answered_both_learn)
{
	struct droce_port *p0, *p1;
	struct rte_ether_addr mac, snm_mac;
	struct rte_mbuf *got[2];
	const struct rte_ipv6_hdr *ip;
	const struct rte_ether_hdr *eth;
	const uint8_t *icmp;
	uint8_t snm[16];

	start_pair(NULL);
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	cr_assert_eq(droce_port_neigh_lookup(p0, B6, &mac), -1, "nothing set by hand");
	cr_assert_eq(droce_port_nd_solicit(p0, 0, B6), 0);
	cr_assert_eq(pstats(p0).nd_ns_tx, 1);

	/* the solicitation, as port1 receives it */
	cr_assert_eq(rx_wait(p1, got, 1, 500), 1);
	eth = rte_pktmbuf_mtod(got[0], const struct rte_ether_hdr *);
	ip = rte_pktmbuf_mtod_offset(got[0], const struct rte_ipv6_hdr *, L3);
	icmp = rte_pktmbuf_mtod_offset(got[0], const uint8_t *, L4);
	solicited_node(B6, snm, &snm_mac);
	cr_expect(rte_is_same_ether_addr(&eth->dst_addr, &snm_mac), "NS to 33:33:ff:00:00:02");
	cr_expect_arr_eq(ip->dst_addr, snm, 16, "NS to ff02::1:ff00:2");
	cr_expect_arr_eq(ip->src_addr, A6, 16);
	cr_expect_eq(ip->hop_limits, 255);
	cr_expect_eq(rte_ipv6_udptcp_cksum_verify(ip, icmp), 0, "NS checksum");
	cr_expect_eq(icmp[0], 135);
	cr_expect_arr_eq(icmp + 8, B6, 16, "target");
	cr_expect(icmp[24] == 1 && icmp[25] == 1 && memcmp(icmp + 26, droce_port_mac(p0), 6) == 0,
		  "source link-layer address option");
	cr_assert(droce_port_handle_frame(p1, 0, got[0]), "NS not consumed");
	cr_expect_eq(pstats(p1).nd_ns_rx, 1);
	cr_expect_eq(pstats(p1).nd_na_tx, 1);
	cr_assert_eq(droce_port_neigh_lookup(p1, A6, &mac), 0, "port1 learnt from the NS option");
	cr_expect(rte_is_same_ether_addr(&mac, droce_port_mac(p0)));

	/* the advertisement, as port0 receives it */
	cr_assert_eq(rx_wait(p0, got, 1, 500), 1, "no NA");
	eth = rte_pktmbuf_mtod(got[0], const struct rte_ether_hdr *);
	ip = rte_pktmbuf_mtod_offset(got[0], const struct rte_ipv6_hdr *, L3);
	icmp = rte_pktmbuf_mtod_offset(got[0], const uint8_t *, L4);
	cr_expect(rte_is_same_ether_addr(&eth->dst_addr, droce_port_mac(p0)), "NA unicast back");
	cr_expect(rte_is_same_ether_addr(&eth->src_addr, droce_port_mac(p1)));
	cr_expect_arr_eq(ip->src_addr, B6, 16);
	cr_expect_arr_eq(ip->dst_addr, A6, 16);
	cr_expect_eq(ip->hop_limits, 255);
	cr_expect_eq(rte_ipv6_udptcp_cksum_verify(ip, icmp), 0, "NA checksum");
	cr_expect_eq(icmp[0], 136);
	cr_expect_eq(icmp[1], 0);
	cr_expect_eq(icmp[4], 0x60, "solicited and override, not router");
	cr_expect_arr_eq(icmp + 8, B6, 16);
	cr_expect(icmp[24] == 2 && icmp[25] == 1 && memcmp(icmp + 26, droce_port_mac(p1), 6) == 0,
		  "target link-layer address option");
	cr_assert(droce_port_handle_frame(p0, 0, got[0]));
	cr_expect_eq(pstats(p0).nd_na_rx, 1);
	cr_assert_eq(droce_port_neigh_lookup(p0, B6, &mac), 0, "port0 learnt from the NA");
	cr_expect(rte_is_same_ether_addr(&mac, droce_port_mac(p1)));
	cr_expect_eq(pstats(p0).nd_bad + pstats(p1).nd_bad, 0);

	/* an NS for an address port1 does not own: consumed, unanswered, not learnt */
	cr_assert_eq(droce_port_nd_solicit(p0, 0, X6), 0);
	cr_assert_eq(rx_wait(p1, got, 1, 500), 1);
	cr_expect(droce_port_handle_frame(p1, 0, got[0]));
	cr_expect_eq(rx_wait(p0, got, 1, 200), 0, "answered for another's address");
	/* an unsolicited NA for an address nobody asked about: nothing learnt */
	{
		uint8_t f[128];
		static const uint8_t all[16] = { 0xff, 0x02, [15] = 1 };
		const struct rte_ether_addr allmac = { { 0x33, 0x33, 0, 0, 0, 1 } };
		size_t n = nd_frame(f, 136, 0x20, X6, all, &allmac, &XMAC, X6, 2, &XMAC);

		resum(f);
		cr_expect(to_port1(f, n));
		cr_expect_eq(droce_port_neigh_lookup(p1, X6, &mac), -1, "unsolicited NA created an entry");
		/* a solicited one is learnt; a later unsolicited one (override) updates it */
		n = nd_frame(f, 136, 0x60, X6, B6, droce_port_mac(p1), &XMAC, X6, 2, &XMAC);
		resum(f);
		cr_expect(to_port1(f, n));
		cr_assert_eq(droce_port_neigh_lookup(p1, X6, &mac), 0);
		cr_expect(rte_is_same_ether_addr(&mac, &XMAC));
	}
	/* the IPv4 entries share the table: ARP still answers */
	cr_assert_eq(droce_port_arp_request(p0, 0, inet_addr("198.18.0.2")), 0);
	cr_assert_eq(rx_wait(p1, got, 1, 500), 1);
	cr_assert(droce_port_handle_frame(p1, 0, got[0]));
	cr_assert_eq(rx_wait(p0, got, 1, 500), 1);
	cr_assert(droce_port_handle_frame(p0, 0, got[0]));
	cr_expect_eq(droce_port_arp_lookup(p0, inet_addr("198.18.0.2"), &mac), 0);
	cr_expect_eq(droce_port_neigh_lookup(p0, B6, &mac), 0, "the IPv6 entry stays");
}

/* A DAD probe (source ::, to the solicited-node group, no option) for
 * port1's address is answered to all-nodes, S clear. */
Test(nd, dad_probe_answered_to_all_nodes)
{
	static const uint8_t unspec[16];
	struct rte_ether_addr snm_mac, mac;
	struct rte_mbuf *got;
	const struct rte_ipv6_hdr *ip;
	const uint8_t *icmp;
	uint8_t f[128], snm[16];
	size_t n;

	start_pair(NULL);
	solicited_node(B6, snm, &snm_mac);
	n = nd_frame(f, 135, 0, unspec, snm, &snm_mac, &XMAC, B6, 0, NULL);
	resum(f);
	cr_assert(to_port1(f, n));
	cr_assert_eq(rx_wait(droce_port_get(0), &got, 1, 500), 1, "no answer to the probe");
	ip = rte_pktmbuf_mtod_offset(got, const struct rte_ipv6_hdr *, L3);
	icmp = rte_pktmbuf_mtod_offset(got, const uint8_t *, L4);
	cr_expect_eq(ip->dst_addr[0], 0xff);
	cr_expect_eq(ip->dst_addr[1], 0x02);
	cr_expect_eq(ip->dst_addr[15], 1, "to ff02::1");
	cr_expect_eq(icmp[0], 136);
	cr_expect_eq(icmp[4], 0x20, "override only");
	cr_expect_eq(rte_ipv6_udptcp_cksum_verify(ip, icmp), 0);
	rte_pktmbuf_free(got);
	cr_expect_eq(droce_port_neigh_lookup(droce_port_get(1), unspec, &mac), -1);
}

/* ---- what RFC 4861 7.1 rejects ---- */

struct bad_case {
	const char *what;
	void (*mutate)(uint8_t *f, size_t *len);
	bool keep_sum; /* the mutation is the checksum's (or leaves none to fix) */
};

static void m_hop64(uint8_t *f, size_t *l) { (void)l; f[L3 + 7] = 64; }
static void m_code1(uint8_t *f, size_t *l) { (void)l; f[L4 + 1] = 1; }
static void m_sum(uint8_t *f, size_t *l) { (void)l; f[L4 + 2] ^= 0x5a; }
static void m_target_mc(uint8_t *f, size_t *l) { (void)l; f[L4 + 8] = 0xff; }
static void m_opt_len0(uint8_t *f, size_t *l) { (void)l; f[L4 + 25] = 0; }
static void m_opt_past_end(uint8_t *f, size_t *l) { (void)l; f[L4 + 25] = 2; }
static void m_short(uint8_t *f, size_t *l)
{
	/* 16 bytes of ICMPv6: shorter than the fixed part */
	f[L3 + 4] = 0;
	f[L3 + 5] = 16;
	*l = L4 + 16;
}
static void m_plen_past_frame(uint8_t *f, size_t *l)
{
	(void)l;
	f[L3 + 4] = 0x05; /* 1280 bytes announced, 32 there */
	f[L3 + 5] = 0;
}
static void m_dad_with_option(uint8_t *f, size_t *l)
{
	struct rte_ether_addr mac;
	uint8_t snm[16];

	(void)l;
	memset(f + L3 + 8, 0, 16); /* source :: */
	solicited_node(B6, snm, &mac);
	memcpy(f + L3 + 24, snm, 16);
}
static void m_dad_to_unicast(uint8_t *f, size_t *l)
{
	(void)l;
	memset(f + L3 + 8, 0, 16);
	f[L4 + 24] = 14; /* an unknown option instead of the SLLA: skipped */
}
static void m_na_solicited_to_group(uint8_t *f, size_t *l)
{
	static const uint8_t all[16] = { 0xff, 0x02, [15] = 1 };

	(void)l;
	f[L4] = 136;
	f[L4 + 4] = 0x60;
	f[L4 + 24] = 2;
	memcpy(f + L3 + 24, all, 16);
}
static void m_version4(uint8_t *f, size_t *l) { (void)l; f[L3] = 0x40; }

static const struct bad_case bad_cases[] = {
	{ "hop limit 64", m_hop64, false },
	{ "code 1", m_code1, false },
	{ "bad checksum", m_sum, true },
	{ "multicast target", m_target_mc, false },
	{ "option of length 0", m_opt_len0, false },
	{ "option past the end", m_opt_past_end, false },
	{ "16-byte message", m_short, false },
	{ "payload length past the frame", m_plen_past_frame, true },
	{ "DAD probe with a source option", m_dad_with_option, false },
	{ "DAD probe to a unicast address", m_dad_to_unicast, false },
	{ "solicited NA to a group", m_na_solicited_to_group, false },
	{ "IP version 4 in an IPv6 frame", m_version4, false },
};

Test(nd, malformed_dropped_and_counted)
{
	struct droce_port *p0, *p1;
	struct rte_ether_addr mac;
	struct rte_mbuf *got;
	uint8_t f[256];
	size_t n;

	start_pair(NULL);
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	for (unsigned int i = 0; i < RTE_DIM(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		uint64_t bad = pstats(p1).nd_bad;

		/* a good NS from 2001:2::77 for port1's address, then the fault */
		n = nd_frame(f, 135, 0, X6, B6, droce_port_mac(p1), &XMAC, B6, 1, &XMAC);
		resum(f);
		c->mutate(f, &n);
		if (!c->keep_sum)
			resum_n(f, n);
		cr_expect(to_port1(f, n), "%s: not consumed", c->what);
		cr_expect_eq(pstats(p1).nd_bad, bad + 1, "%s: not counted", c->what);
		cr_expect_eq(rx_wait(p0, &got, 1, 50), 0, "%s: answered", c->what);
		cr_expect_eq(droce_port_neigh_lookup(p1, X6, &mac), -1, "%s: learnt", c->what);
	}
	/* the same NS unharmed is answered and learnt: the cases tested the checks */
	n = nd_frame(f, 135, 0, X6, B6, droce_port_mac(p1), &XMAC, B6, 1, &XMAC);
	resum(f);
	cr_expect(to_port1(f, n));
	cr_assert_eq(rx_wait(p0, &got, 1, 500), 1, "the good NS unanswered");
	rte_pktmbuf_free(got);
	cr_expect_eq(droce_port_neigh_lookup(p1, X6, &mac), 0);
	/* other ICMPv6 (an echo request) is not ND's: left to the caller */
	n = nd_frame(f, 128, 0, X6, B6, droce_port_mac(p1), &XMAC, B6, 0, NULL);
	resum(f);
	{
		struct rte_mbuf *m = rte_pktmbuf_alloc(droce_pktmbuf_pool());

		cr_assert_not_null(m);
		memcpy(rte_pktmbuf_append(m, (uint16_t)RTE_MAX(n, (size_t)60)), f,
		       RTE_MAX(n, (size_t)60));
		cr_assert_eq(droce_port_tx_burst(p0, 0, &m, 1), 1);
		cr_assert_eq(rx_wait(p1, &m, 1, 500), 1);
		cr_expect(!droce_port_handle_frame(p1, 0, m), "an echo request taken as ND");
		rte_pktmbuf_free(m);
	}
}

/* Bounded random damage to good NS / NA frames (2,000, seeded): every one
 * handled without a crash (the ASan build checks the reads), and no entry
 * for anything but the frames' one sender. */
Test(nd, random_mutations_never_crash)
{
	struct droce_port *p1;
	struct rte_mbuf *got[32];
	uint8_t f[256];

	start_pair(NULL);
	p1 = droce_port_get(1);
	rte_srand(25);
	for (unsigned int i = 0; i < 2000; i++) {
		size_t n = nd_frame(f, (i & 1) ? 136 : 135, (i & 1) ? 0x60 : 0, X6, B6,
				    droce_port_mac(p1), &XMAC, (i & 1) ? X6 : B6, (i & 1) ? 2 : 1,
				    &XMAC);
		unsigned int flips = 1 + (unsigned int)rte_rand_max(4);

		for (unsigned int k = 0; k < flips; k++)
			f[L3 + rte_rand_max(n - L3)] ^= (uint8_t)(1u << rte_rand_max(8));
		if (rte_rand_max(2))
			resum_n(f, n); /* half reach the checks behind the checksum */
		if (rte_rand_max(4) == 0)
			n = L3 + rte_rand_max(n - L3); /* cut short */
		(void)to_port1(f, n);
		for (uint16_t k; (k = droce_port_rx_burst(droce_port_get(0), 0, got, 32)) > 0;)
			for (uint16_t j = 0; j < k; j++)
				rte_pktmbuf_free(got[j]); /* answers: the count is not the point */
	}
	{
		uint16_t k = rx_wait(droce_port_get(0), got, 32, 50);

		for (uint16_t j = 0; j < k; j++)
			rte_pktmbuf_free(got[j]);
	}
	cr_expect_gt(pstats(p1).nd_bad, 0);
}

/* ---- on the wire: tshark's reading ---- */

Test(nd, frames_decoded_by_tshark)
{
	const char *tshark = getenv("TSHARK");
	char path[64], extra[128], cmd[768], out[8192];
	struct rte_ether_addr mac;
	uint64_t end;
	int fd;

	snprintf(path, sizeof(path), "/tmp/droce-nd-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	snprintf(extra, sizeof(extra), "capture = %s\n", path);
	start_pair(extra);
	cr_assert_eq(droce_engines_start(), 0);
	/* the unsolicited NAs of both ports (engines start sends them) */
	end = rte_get_tsc_cycles() + rte_get_tsc_hz() * 5;
	while ((pstats(droce_port_get(0)).nd_na_tx == 0 || pstats(droce_port_get(1)).nd_na_tx == 0) &&
	       rte_get_tsc_cycles() < end)
		droce_engines_progress();
	cr_assert_eq(pstats(droce_port_get(0)).nd_na_tx, 1, "port0's unsolicited NA");
	cr_assert_eq(pstats(droce_port_get(1)).nd_na_tx, 1, "port1's unsolicited NA");
	cr_assert(!droce_port_nd_announce_pending(droce_port_get(0)));
	/* resolution by an engine, waited for */
	cr_assert_eq(droce_port_neigh_lookup(droce_port_get(0), B6, &mac), -1,
		     "an unsolicited NA creates no entry");
	cr_assert_eq(droce_dp_neigh_resolve(0, B6, &mac, 2000), 0);
	cr_expect(rte_is_same_ether_addr(&mac, droce_port_mac(droce_port_get(1))));
	cr_expect_eq(droce_dp_neigh_resolve(0, X6, &mac, 300), ETIMEDOUT, "nobody's address");
	cr_expect_eq(droce_dp_neigh_resolve(0, (const uint8_t[16]){ 0xff, 0x02, [15] = 1 }, &mac,
					    300), EINVAL, "a group");
	stop_all(); /* flushes the capture */

	if (tshark == NULL || tshark[0] == '\0') {
		unlink(path);
		cr_skip_test("tshark not found");
	}
	/* one line per ND frame port0 sent or received */
	snprintf(cmd, sizeof(cmd),
		 "%s -n -r %s -Y icmpv6 -T fields -E separator=, -e eth.dst -e ipv6.src -e ipv6.dst "
		 "-e ipv6.hlim -e icmpv6.type -e icmpv6.code -e icmpv6.checksum.status "
		 "-e icmpv6.nd.ns.target_address -e icmpv6.nd.na.target_address "
		 "-e icmpv6.nd.na.flag.s -e icmpv6.nd.na.flag.o -e icmpv6.opt.type "
		 "-e icmpv6.opt.linkaddr 2>/dev/null",
		 tshark, path);
	cr_assert_eq(tc_run(cmd, out, sizeof(out)), 0, "tshark failed on %s", path);
	/* port0's unsolicited NA; port1's, received */
	cr_expect(strstr(out, "33:33:00:00:00:01,2001:2::1,ff02::1,255,136,0,1,,2001:2::1,0,1,2,"
			      "02:00:c6:12:00:01\n") != NULL, "port0's unsolicited NA:\n%s", out);
	cr_expect(strstr(out, "33:33:00:00:00:01,2001:2::2,ff02::1,255,136,0,1,,2001:2::2,0,1,2,"
			      "02:00:c6:12:00:02\n") != NULL, "port1's unsolicited NA:\n%s", out);
	/* the solicitation and its answer */
	cr_expect(strstr(out, "33:33:ff:00:00:02,2001:2::1,ff02::1:ff00:2,255,135,0,1,2001:2::2,,,,1,"
			      "02:00:c6:12:00:01\n") != NULL, "NS:\n%s", out);
	cr_expect(strstr(out, "02:00:c6:12:00:01,2001:2::2,2001:2::1,255,136,0,1,,2001:2::2,1,1,2,"
			      "02:00:c6:12:00:02\n") != NULL, "solicited NA:\n%s", out);
	/* the unanswered ones: solicitations for 2001:2::77 */
	cr_expect(strstr(out, "33:33:ff:00:00:77,2001:2::1,ff02::1:ff00:77,255,135,0,1,2001:2::77,")
		  != NULL, "NS for 2001:2::77:\n%s", out);
	/* every checksum good (status 1), every hop limit 255 */
	cr_expect(strstr(out, ",255,") != NULL);
	{
		char *save = NULL;

		for (char *l = strtok_r(out, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save))
			cr_expect(strstr(l, ",255,13") != NULL && strstr(l, ",0,1,") != NULL,
				  "frame not good: %s", l);
	}
	unlink(path);
}

/* ---- through verbs ---- */

/*
 * Two switch ports (the switch forwards by MAC and floods groups; a ring
 * pair would be short-cut inside droce): a QP on droce0 moved to RTR
 * towards 2001:2::2 with no neighbour entry finds port1's MAC by an NS,
 * and a SEND crosses the switch, not droce's in-process loop.
 */
Test(nd, modify_qp_to_rtr_resolves_ipv6_peer)
{
	static const char text[] =
		"[eal]\nargs = --no-huge --no-pci -m 256 --log-level=lib.eal:warning\n"
		"[engines]\nmode = colocated\ncount = 1\n"
		"[mempool]\nmbufs = 8191\ncache = 128\ndata_room = 2176\n"
		"[switch]\nrate = 10\nbuffer = 1M\n"
		"[port0]\nkind = switch\nmac = 02:00:c6:12:00:01\nipv4 = 198.18.0.1\n"
		"ipv6 = 2001:2::1\nmtu = 1500\n"
		"[port1]\nkind = switch\nmac = 02:00:c6:12:00:02\nipv4 = 198.18.0.2\n"
		"ipv6 = 2001:2::2\nmtu = 1500\n";
	struct droce_config cfg;
	struct ibv_context *ctx[2];
	struct ibv_pd *pd[2];
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	union ibv_gid gid[2];
	struct rte_ether_addr mac;
	struct ibv_sge sge;
	struct ibv_send_wr sw = { 0 }, *bs;
	struct ibv_recv_wr rw = { 0 }, *br;
	struct ibv_wc wc;

	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<nd switch>", text, &cfg), 0, "%s", droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "%s", droce_last_error());
	for (unsigned int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = { 0 };

		ctx[i] = tc_open(i == 0 ? "droce0" : "droce1", NULL);
		cr_assert_eq(ibv_query_gid(ctx[i], 1, 1, &gid[i]), 0);
		cr_assert_arr_eq(gid[i].raw, i == 0 ? A6 : B6, 16, "GID index 1: the IPv6 address");
		pd[i] = ibv_alloc_pd(ctx[i]);
		cq[i] = ibv_create_cq(ctx[i], 16, NULL, NULL, 0);
		cr_assert(pd[i] != NULL && cq[i] != NULL);
		ia.send_cq = ia.recv_cq = cq[i];
		ia.qp_type = IBV_QPT_RC;
		ia.cap = (struct ibv_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					      .max_recv_sge = 1 };
		qp[i] = ibv_create_qp(pd[i], &ia);
		cr_assert_not_null(qp[i]);
		mr[i] = tc_reg_buf(pd[i], 4096, 0);
	}
	cr_assert_eq(droce_port_neigh_lookup(droce_port_get(0), B6, &mac), -1, "no entry by hand");
	for (unsigned int i = 0; i < 2; i++)
		tc_qp_up(qp[i], &(struct tc_conn){ .dgid = gid[1 - i], .dest_qpn = qp[1 - i]->qp_num,
						    .psn = 77, .sgid_index = 1 });
	cr_assert_geq(pstats(droce_port_get(0)).nd_ns_tx, 1, "port0 solicited");
	cr_assert_geq(pstats(droce_port_get(0)).nd_na_rx, 1, "and heard the answer");
	cr_assert_eq(droce_port_neigh_lookup(droce_port_get(0), B6, &mac), 0);
	cr_assert(rte_is_same_ether_addr(&mac, droce_port_mac(droce_port_get(1))));

	sge = (struct ibv_sge){ .addr = (uintptr_t)mr[1]->addr, .length = 64, .lkey = mr[1]->lkey };
	rw = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	cr_assert_eq(ibv_post_recv(qp[1], &rw, &br), 0);
	memcpy(mr[0]->addr, "neighbour discovered", 21);
	sge = (struct ibv_sge){ .addr = (uintptr_t)mr[0]->addr, .length = 21, .lkey = mr[0]->lkey };
	sw = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	cr_assert_eq(ibv_post_send(qp[0], &sw, &bs), 0);
	wc = tc_wait(cq[0], 5000, "send");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	wc = tc_wait(cq[1], 5000, "recv");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_str_eq((const char *)mr[1]->addr, "neighbour discovered");
	cr_expect_eq(pstats(droce_port_get(0)).loop_tx, 0, "looped inside droce, not resolved");
	for (unsigned int i = 0; i < 2; i++) {
		void *buf = mr[i]->addr;

		ibv_destroy_qp(qp[i]);
		ibv_dereg_mr(mr[i]);
		free(buf);
		ibv_destroy_cq(cq[i]);
		ibv_dealloc_pd(pd[i]);
		ibv_close_device(ctx[i]);
	}
}
