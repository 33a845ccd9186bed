/* SPDX-License-Identifier: BSD-3-Clause
 * Frame builder and parser.
 */
#include <string.h>

#include "icrc.h"
#include "wire.h"
#include "wire_tmpl.h"

#define IPV4_HDR_LEN ((uint16_t)sizeof(struct rte_ipv4_hdr))
#define IPV6_HDR_LEN ((uint16_t)sizeof(struct rte_ipv6_hdr))
#define UDP_HDR_LEN ((uint16_t)sizeof(struct rte_udp_hdr))
#define BTH_LEN ((uint16_t)sizeof(struct droce_bth))

const char *const droce_drop_name[DROCE_DROP_COUNT] = {
#define DROCE_DROP_NAME(n, s) [DROCE_DROP_##n] = #n,
	DROCE_DROP_REASONS(DROCE_DROP_NAME)
#undef DROCE_DROP_NAME
};

const char *const droce_drop_desc[DROCE_DROP_COUNT] = {
#define DROCE_DROP_DESC(n, s) [DROCE_DROP_##n] = s,
	DROCE_DROP_REASONS(DROCE_DROP_DESC)
#undef DROCE_DROP_DESC
};

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool
droce_gid_is_v4mapped(const uint8_t gid[16])
{
	return memcmp(gid, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0;
}

/* (inline for the parser: the exported one is called through the PLT) */
static inline void
gid_from_ipv4(uint8_t gid[16], rte_be32_t addr)
{
	memcpy(gid, v4mapped_prefix, sizeof(v4mapped_prefix));
	memcpy(gid + 12, &addr, 4);
}

void
droce_gid_from_ipv4(uint8_t gid[16], rte_be32_t addr)
{
	gid_from_ipv4(gid, addr);
}

bool
droce_gid_is_mcast(const uint8_t gid[16])
{
	if (droce_gid_is_v4mapped(gid))
		return (gid[12] & 0xf0) == 0xe0;
	return gid[0] == 0xff;
}

void
droce_gid_mcast_mac(const uint8_t gid[16], struct rte_ether_addr *mac)
{
	uint8_t *a = mac->addr_bytes;

	if (droce_gid_is_v4mapped(gid)) {
		a[0] = 0x01, a[1] = 0x00, a[2] = 0x5e;
		a[3] = gid[13] & 0x7f, a[4] = gid[14], a[5] = gid[15];
	} else {
		a[0] = 0x33, a[1] = 0x33;
		memcpy(a + 2, gid + 12, 4);
	}
}

/* ---- Builder ---- */

void
droce_tmpl_init(struct droce_hdr_tmpl *t, const struct droce_path *p)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)t->bytes;
	uint8_t hop = p->hop_limit ? p->hop_limit : 64;
	uint16_t off = RTE_ETHER_HDR_LEN;
	struct rte_udp_hdr *udp;

	memset(t, 0, sizeof(*t));
	eth->dst_addr = p->dst_mac;
	eth->src_addr = p->src_mac;
	if (p->vlan) {
		struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(t->bytes + off);
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16((uint16_t)((p->vlan_pcp & 0x7) << 13 | (p->vlan_id & 0xfff)));
		vh->eth_proto = rte_cpu_to_be_16(p->ipv6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
		off += sizeof(*vh);
	} else {
		eth->ether_type = rte_cpu_to_be_16(p->ipv6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	}
	t->l3_off = (uint8_t)off;
	t->ipv6 = p->ipv6;
	if (p->ipv6) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(t->bytes + off);
		ip6->vtc_flow = rte_cpu_to_be_32(6u << 28 | (uint32_t)p->traffic_class << 20 |
						 (p->flow_label & 0xfffffu));
		ip6->proto = IPPROTO_UDP;
		ip6->hop_limits = hop;
		memcpy(ip6->src_addr, p->src_gid, 16);
		memcpy(ip6->dst_addr, p->dst_gid, 16);
		off += IPV6_HDR_LEN;
	} else {
		struct rte_ipv4_hdr *ip4 = (struct rte_ipv4_hdr *)(t->bytes + off);
		ip4->version_ihl = RTE_IPV4_VHL_DEF;
		ip4->type_of_service = p->traffic_class;
		ip4->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip4->time_to_live = hop;
		ip4->next_proto_id = IPPROTO_UDP;
		memcpy(&ip4->src_addr, p->src_gid + 12, 4);
		memcpy(&ip4->dst_addr, p->dst_gid + 12, 4);
		/* length, id and checksum are zero here: added per packet */
		t->ip_csum_base = __rte_raw_cksum(ip4, IPV4_HDR_LEN, 0);
		off += IPV4_HDR_LEN;
	}
	t->l4_off = (uint8_t)off;
	udp = (struct rte_udp_hdr *)(t->bytes + off);
	udp->src_port = rte_cpu_to_be_16(p->udp_sport);
	udp->dst_port = rte_cpu_to_be_16(DROCE_UDP_PORT);
	off += UDP_HDR_LEN;
	t->len = (uint8_t)off;
	t->copy = off + sizeof(struct droce_bth) <= 64 ? 64 : DROCE_TMPL_COPY;
	t->ip_id = p->ip_id;
	t->udp_csum = p->udp_csum;
	t->icrc_k = droce_icrc_tmpl_k(t->bytes + t->l3_off, p->ipv6);
}

static inline uint8_t
pad_for(uint32_t payload_len)
{
	return (uint8_t)(-payload_len & 3u);
}

size_t
droce_build_headers(struct droce_hdr_tmpl *t, uint8_t *buf, size_t cap,
		    const struct droce_pkt_fields *f, uint32_t payload_len)
{
	const struct droce_opcode_info *oi = &droce_opcode_table[f->opcode];
	size_t hdr_len = (size_t)t->len + oi->hdr_len;
	size_t total;
	struct droce_bth *bth;

	if (!(oi->flags & DROCE_OPF_VALID))
		return 0;
	if (payload_len && !(oi->flags & DROCE_OPF_PAYLOAD))
		return 0;
	total = droce_frame_len(t, f->opcode, payload_len);
	if (hdr_len > cap || total > UINT16_MAX)
		return 0;

	memcpy(buf, t->bytes, t->len);
	if (t->ipv6) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(buf + t->l3_off);
		ip6->payload_len = rte_cpu_to_be_16((uint16_t)(total - t->l3_off - IPV6_HDR_LEN));
	} else {
		struct rte_ipv4_hdr *ip4 = (struct rte_ipv4_hdr *)(buf + t->l3_off);
		uint16_t tot = rte_cpu_to_be_16((uint16_t)(total - t->l3_off));
		uint16_t id = rte_cpu_to_be_16(t->ip_id++);
		uint32_t sum = t->ip_csum_base + tot + id;

		ip4->total_length = tot;
		ip4->packet_id = id;
		ip4->hdr_checksum = (uint16_t)~__rte_raw_cksum_reduce(sum);
	}
	((struct rte_udp_hdr *)(buf + t->l4_off))->dgram_len =
		rte_cpu_to_be_16((uint16_t)(total - t->l4_off));

	/* the BTH as three big-endian words (TVer 0, reserved bits 0), no
	 * read-modify-write of bit fields; the extended headers zeroed first */
	bth = (struct droce_bth *)(buf + t->len);
	{
		uint32_t w0 = (uint32_t)f->opcode << 24 | (uint32_t)f->se << 23 |
			      (uint32_t)f->mig << 22 | (uint32_t)pad_for(payload_len) << 20 | f->pkey;
		uint32_t w1 = (uint32_t)f->fecn << 31 | (uint32_t)f->becn << 30 |
			      (uint32_t)(f->resv6a & 0x3f) << 24 | (f->dqpn & 0xffffffu);
		uint32_t w2 = (uint32_t)f->ackreq << 31 | (f->psn & 0xffffffu);
		rte_be32_t be[3] = { rte_cpu_to_be_32(w0), rte_cpu_to_be_32(w1), rte_cpu_to_be_32(w2) };

		memcpy(bth, be, sizeof(be));
	}
	if (oi->hdr_len > sizeof(*bth))
		memset((uint8_t *)bth + sizeof(*bth), 0, oi->hdr_len - sizeof(*bth));
	droce_write_ext_headers((uint8_t *)bth, oi, f);
	return hdr_len;
}

size_t
droce_build_frame(struct droce_hdr_tmpl *t, uint8_t *buf, size_t cap,
		  const struct droce_pkt_fields *f, const void *payload, uint32_t payload_len)
{
	size_t total, hdr_len;
	uint8_t pad = pad_for(payload_len);
	uint8_t *l3 = buf + t->l3_off;
	uint8_t *icrc;

	if (!(droce_opcode_table[f->opcode].flags & DROCE_OPF_VALID))
		return 0;
	total = droce_frame_len(t, f->opcode, payload_len);
	if (total > cap)
		return 0;
	hdr_len = droce_build_headers(t, buf, cap, f, payload_len);
	if (hdr_len == 0)
		return 0;
	if (payload_len)
		memcpy(buf + hdr_len, payload, payload_len);
	memset(buf + hdr_len + payload_len, 0, pad);
	icrc = buf + total - DROCE_ICRC_LEN;
	droce_icrc_store(icrc, droce_icrc_flat(l3, (size_t)(icrc - l3), t->ipv6));
	if (t->udp_csum) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(buf + t->l4_off);
		udp->dgram_cksum = t->ipv6 ? rte_ipv6_udptcp_cksum((struct rte_ipv6_hdr *)l3, udp)
					   : rte_ipv4_udptcp_cksum((struct rte_ipv4_hdr *)l3, udp);
	}
	return total;
}

/* ---- Parser ---- */

/* True when the 20-byte IPv4 header at @h sums (ones' complement) to 0xffff:
 * five 32-bit words added into 64 bits and folded, the same sum as the ten
 * 16-bit words RFC 1071 adds (the end-around carry makes the width free). */
static inline bool
ipv4_hdr_csum_ok(const void *h)
{
	uint32_t w[5];
	uint64_t s;

	memcpy(w, h, sizeof(w));
	s = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

static __rte_always_inline enum droce_drop
parse_l3(const uint8_t *frame, uint32_t len, struct droce_pkt *out, uint16_t ethertype,
	 uint32_t *l4_len)
{
	uint16_t off = out->l3_off;

	if (ethertype == RTE_ETHER_TYPE_IPV4) {
		const struct rte_ipv4_hdr *ip4 = (const struct rte_ipv4_hdr *)(frame + off);
		uint16_t tot;

		if (len < (uint32_t)off + IPV4_HDR_LEN)
			return DROCE_DROP_RUNT;
		if ((ip4->version_ihl >> 4) != 4)
			return DROCE_DROP_IP_VERSION;
		if ((ip4->version_ihl & 0xf) != 5)
			return DROCE_DROP_IPV4_HDR;
		if (rte_be_to_cpu_16(ip4->fragment_offset) &
		    (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
			return DROCE_DROP_IPV4_FRAG;
		if (!ipv4_hdr_csum_ok(ip4))
			return DROCE_DROP_IPV4_CSUM;
		tot = rte_be_to_cpu_16(ip4->total_length);
		if (tot < IPV4_HDR_LEN || (uint32_t)off + tot > len)
			return DROCE_DROP_IP_LEN;
		if (ip4->next_proto_id != IPPROTO_UDP)
			return DROCE_DROP_NOT_UDP;
		out->ipv6 = false;
		out->traffic_class = ip4->type_of_service;
		gid_from_ipv4(out->src_gid, ip4->src_addr);
		gid_from_ipv4(out->dst_gid, ip4->dst_addr);
		out->l4_off = (uint16_t)(off + IPV4_HDR_LEN);
		out->frame_len = (uint32_t)off + tot;
		*l4_len = tot - IPV4_HDR_LEN;
		return DROCE_DROP_NONE;
	}
	if (ethertype == RTE_ETHER_TYPE_IPV6) {
		const struct rte_ipv6_hdr *ip6 = (const struct rte_ipv6_hdr *)(frame + off);
		uint32_t vtc;
		uint16_t plen;

		if (len < (uint32_t)off + IPV6_HDR_LEN)
			return DROCE_DROP_RUNT;
		vtc = rte_be_to_cpu_32(ip6->vtc_flow);
		if ((vtc >> 28) != 6)
			return DROCE_DROP_IP_VERSION;
		plen = rte_be_to_cpu_16(ip6->payload_len);
		if ((uint32_t)off + IPV6_HDR_LEN + plen > len)
			return DROCE_DROP_IP_LEN;
		if (ip6->proto != IPPROTO_UDP)
			return DROCE_DROP_NOT_UDP;
		out->ipv6 = true;
		out->traffic_class = (uint8_t)(vtc >> 20);
		memcpy(out->src_gid, ip6->src_addr, 16);
		memcpy(out->dst_gid, ip6->dst_addr, 16);
		out->l4_off = (uint16_t)(off + IPV6_HDR_LEN);
		out->frame_len = (uint32_t)off + IPV6_HDR_LEN + plen;
		*l4_len = plen;
		return DROCE_DROP_NONE;
	}
	return DROCE_DROP_ETHERTYPE;
}

static bool
udp_csum_ok(const uint8_t *frame, const struct droce_pkt *p)
{
	const void *l3 = frame + p->l3_off;
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(frame + p->l4_off);

	if (udp->dgram_cksum == 0)
		return true; /* RoCEv2 senders may leave it zero (IPv4 and IPv6) */
	return (p->ipv6 ? rte_ipv6_udptcp_cksum_verify(l3, udp)
			: rte_ipv4_udptcp_cksum_verify(l3, udp)) == 0;
}

/*
 * The header part of both parsers: every check up to the payload.  @len is
 * the frame's length, @avail how many of its bytes are at @frame (all of
 * them for a flat frame, the headers for a split one).  *@body gets the
 * payload and pad length.
 */
static __rte_always_inline enum droce_drop
parse_hdrs(const uint8_t *frame, uint32_t len, uint32_t avail, struct droce_pkt *out,
	   uint32_t *body_out, bool plain_v4)
{
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)frame;
	const struct rte_udp_hdr *udp;
	const struct droce_bth *bth;
	const struct droce_opcode_info *oi;
	uint16_t ethertype;
	uint32_t l4_len, bth_len, body;
	enum droce_drop why;

	memset(out, 0, sizeof(*out));
	out->l3_off = RTE_ETHER_HDR_LEN;
	if (plain_v4) {
		/* the caller saw an untagged IPv4 frame with room for its
		 * header: the same checks, on constant offsets */
		ethertype = RTE_ETHER_TYPE_IPV4;
	} else {
		if (avail < RTE_ETHER_HDR_LEN)
			return DROCE_DROP_RUNT;
		ethertype = rte_be_to_cpu_16(eth->ether_type);
		if (ethertype == RTE_ETHER_TYPE_VLAN) {
			const struct rte_vlan_hdr *vh = (const struct rte_vlan_hdr *)(eth + 1);

			if (avail < RTE_ETHER_HDR_LEN + sizeof(*vh))
				return DROCE_DROP_RUNT;
			out->vlan = true;
			out->vlan_tci = rte_be_to_cpu_16(vh->vlan_tci);
			ethertype = rte_be_to_cpu_16(vh->eth_proto);
			out->l3_off += sizeof(*vh);
		}
		/* (flat frames: parse_l3 finds the same) */
		if ((ethertype == RTE_ETHER_TYPE_IPV4 &&
		     avail < (uint32_t)out->l3_off + IPV4_HDR_LEN) ||
		    (ethertype == RTE_ETHER_TYPE_IPV6 &&
		     avail < (uint32_t)out->l3_off + IPV6_HDR_LEN))
			return DROCE_DROP_RUNT;
	}
	why = parse_l3(frame, len, out, ethertype, &l4_len);
	if (why != DROCE_DROP_NONE)
		return why;

	if (l4_len < UDP_HDR_LEN || avail < (uint32_t)out->l4_off + UDP_HDR_LEN)
		return DROCE_DROP_RUNT;
	udp = (const struct rte_udp_hdr *)(frame + out->l4_off);
	if (rte_be_to_cpu_16(udp->dst_port) != DROCE_UDP_PORT)
		return DROCE_DROP_UDP_PORT;
	if (rte_be_to_cpu_16(udp->dgram_len) != l4_len)
		return DROCE_DROP_UDP_LEN;
	out->udp_sport = rte_be_to_cpu_16(udp->src_port);

	out->bth_off = (uint16_t)(out->l4_off + UDP_HDR_LEN);
	bth_len = l4_len - UDP_HDR_LEN; /* BTH .. ICRC */
	if (bth_len < BTH_LEN + DROCE_ICRC_LEN)
		return DROCE_DROP_HDR_LEN;
	if (avail < (uint32_t)out->bth_off + BTH_LEN)
		return DROCE_DROP_RUNT;
	bth = (const struct droce_bth *)(frame + out->bth_off);
	if (droce_bth_tver(bth) != 0)
		return DROCE_DROP_BTH_TVER;
	oi = &droce_opcode_table[droce_bth_opcode(bth)];
	if (!(oi->flags & DROCE_OPF_VALID))
		return DROCE_DROP_OPCODE;
	if (bth_len < (uint32_t)oi->hdr_len + DROCE_ICRC_LEN)
		return DROCE_DROP_HDR_LEN;
	if (avail < (uint32_t)out->bth_off + oi->hdr_len)
		return DROCE_DROP_RUNT;
	body = bth_len - oi->hdr_len - DROCE_ICRC_LEN; /* payload + pad */
	out->pad = droce_bth_pad(bth);
	if (!(oi->flags & DROCE_OPF_PAYLOAD)) {
		if (out->pad != 0)
			return DROCE_DROP_PAD;
		if (body != 0)
			return DROCE_DROP_HDR_LEN;
	} else if ((body & 3u) != 0 || out->pad > body) {
		return DROCE_DROP_PAD;
	}
	out->info = oi;
	out->opcode = droce_bth_opcode(bth);
	out->payload_off = (uint16_t)(out->bth_off + oi->hdr_len);
	out->payload_len = body - out->pad;
	*body_out = body;
	return DROCE_DROP_NONE;
}

/* The general parser: any Ethernet framing droce takes (VLAN, IPv6), every
 * check in the order of the drop reasons. */
static __rte_noinline enum droce_drop
parse_frame_general(const uint8_t *frame, uint32_t len, struct droce_pkt *out,
		    struct droce_icrc_cache *ic)
{
	uint32_t body;
	enum droce_drop why;

	/* an untagged IPv4 frame (RoCEv2's usual one) parses on constant offsets */
	if (likely(len >= RTE_ETHER_HDR_LEN + IPV4_HDR_LEN &&
		   ((const struct rte_ether_hdr *)frame)->ether_type ==
			   RTE_BE16(RTE_ETHER_TYPE_IPV4)))
		why = parse_hdrs(frame, len, len, out, &body, true);
	else
		why = parse_hdrs(frame, len, len, out, &body, false);
	if (why != DROCE_DROP_NONE)
		return why;
	if (!udp_csum_ok(frame, out))
		return DROCE_DROP_UDP_CSUM;
	{
		const uint8_t *l3 = frame + out->l3_off;
		size_t n = out->frame_len - DROCE_ICRC_LEN - out->l3_off;
		uint32_t icrc = ic ? droce_icrc_rx(ic, l3, n, out->ipv6) : droce_icrc_flat(l3, n, out->ipv6);

		if (icrc != droce_icrc_load(frame + out->frame_len - DROCE_ICRC_LEN))
			return DROCE_DROP_ICRC;
	}
	out->payload = frame + out->payload_off;
	return DROCE_DROP_NONE;
}

static inline uint32_t
ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint16_t
ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Offsets of an untagged IPv4 RoCEv2 frame. */
#define F4_L3 RTE_ETHER_HDR_LEN           /* 14 */
#define F4_L4 (F4_L3 + IPV4_HDR_LEN)      /* 34 */
#define F4_BTH (F4_L4 + UDP_HDR_LEN)      /* 42 */

/*
 * The fast parse of the usual frame: untagged IPv4, no options, not a
 * fragment, UDP to 4791 with a zero checksum, a BTH whose opcode's headers,
 * pad and lengths agree, the IPv4 header checksum and the ICRC right.  The
 * constant bytes are checked as a few masked words (EtherType, version and
 * IHL; fragment bits and protocol; destination port and UDP length against
 * the IP total length), the header checksum as the five 32-bit words' sum
 * divisible by 0xffff (the same test as the folded 16-bit sum being 0xffff:
 * 2^16 and 2^32 are 1 modulo 0xffff, and the sum is not zero, the version
 * byte being 0x45).  Every field of @out is written (no memset).
 * DROCE_DROP_COUNT: not such a frame, or one of these checks failed; the
 * general parser then decides, with the exact reason.  Only an ICRC
 * mismatch, the last check of both, is answered here.
 */
static __rte_always_inline enum droce_drop
parse_frame_v4(const uint8_t *f, uint32_t len, struct droce_pkt *out, struct droce_icrc_cache *ic)
{
	const struct droce_opcode_info *oi;
	uint32_t tot, bth_len, body, flags, icrc;
	uint64_t sum;
	uint8_t opcode, pad;

	if (unlikely(len < F4_BTH + BTH_LEN + DROCE_ICRC_LEN))
		return DROCE_DROP_COUNT;
	/* bytes 12-14: EtherType 0x0800, version 4 and IHL 5 */
	if (unlikely((ld32(f + 12) & 0xffffffu) != (0x45u << 16 | 0x0008u)))
		return DROCE_DROP_COUNT;
	/* bytes 20-23: no MF flag and offset 0 (DF may be set), protocol UDP */
	if (unlikely((ld32(f + 20) & rte_cpu_to_be_32(0x3fff00ffu)) != rte_cpu_to_be_32(IPPROTO_UDP)))
		return DROCE_DROP_COUNT;
	sum = (uint64_t)ld32(f + F4_L3) + ld32(f + F4_L3 + 4) + ld32(f + F4_L3 + 8) +
	      ld32(f + F4_L3 + 12) + ld32(f + F4_L3 + 16);
	if (unlikely(sum % 0xffff != 0))
		return DROCE_DROP_COUNT;
	tot = rte_be_to_cpu_16(ld16(f + F4_L3 + 2));
	/* IP + UDP + BTH + ICRC at least, and within the frame */
	if (unlikely(tot < IPV4_HDR_LEN + UDP_HDR_LEN + BTH_LEN + DROCE_ICRC_LEN ||
		     F4_L3 + tot > len))
		return DROCE_DROP_COUNT;
	/* destination port 4791 and the UDP length IP's, one compare; no checksum */
	if (unlikely(ld32(f + F4_L4 + 2) !=
		     ((uint32_t)RTE_BE16(DROCE_UDP_PORT) |
		      (uint32_t)rte_cpu_to_be_16((uint16_t)(tot - IPV4_HDR_LEN)) << 16)) ||
	    unlikely(ld16(f + F4_L4 + 6) != 0))
		return DROCE_DROP_COUNT;
	opcode = f[F4_BTH];
	flags = f[F4_BTH + 1];
	oi = &droce_opcode_table[opcode];
	bth_len = tot - IPV4_HDR_LEN - UDP_HDR_LEN; /* BTH .. ICRC, >= 16 */
	pad = (uint8_t)((flags >> 4) & 3u);
	if (unlikely((flags & 0xfu) != 0 || !(oi->flags & DROCE_OPF_VALID) ||
		     bth_len < (uint32_t)oi->hdr_len + DROCE_ICRC_LEN))
		return DROCE_DROP_COUNT; /* TVer, opcode, its headers */
	body = bth_len - oi->hdr_len - DROCE_ICRC_LEN; /* payload + pad */
	if (likely(oi->flags & DROCE_OPF_PAYLOAD)) {
		if (unlikely((body & 3u) != 0 || pad > body))
			return DROCE_DROP_COUNT;
	} else if (unlikely((pad | body) != 0)) {
		return DROCE_DROP_COUNT;
	}
	icrc = ic ? droce_icrc_rx(ic, f + F4_L3, tot - DROCE_ICRC_LEN, false)
		  : droce_icrc_flat(f + F4_L3, tot - DROCE_ICRC_LEN, false);
	if (unlikely(icrc != droce_icrc_load(f + F4_L3 + tot - DROCE_ICRC_LEN)))
		return DROCE_DROP_ICRC;
	out->info = oi;
	out->opcode = opcode;
	out->ipv6 = false;
	out->vlan = false;
	out->vlan_tci = 0;
	out->traffic_class = f[F4_L3 + 1];
	out->l3_off = F4_L3;
	out->l4_off = F4_L4;
	out->bth_off = F4_BTH;
	out->payload_off = (uint16_t)(F4_BTH + oi->hdr_len);
	out->payload_len = body - pad;
	out->payload = f + F4_BTH + oi->hdr_len;
	out->pad = pad;
	out->udp_sport = rte_be_to_cpu_16(ld16(f + F4_L4));
	gid_from_ipv4(out->src_gid, ld32(f + F4_L3 + 12));
	gid_from_ipv4(out->dst_gid, ld32(f + F4_L3 + 16));
	out->frame_len = F4_L3 + tot;
	return DROCE_DROP_NONE;
}

enum droce_drop
droce_parse_frame_c(const uint8_t *frame, uint32_t len, struct droce_pkt *out,
		    struct droce_icrc_cache *ic)
{
	enum droce_drop why = parse_frame_v4(frame, len, out, ic);

	if (likely(why != DROCE_DROP_COUNT))
		return why;
	return parse_frame_general(frame, len, out, ic);
}

enum droce_drop
droce_parse_frame_ref(const uint8_t *frame, uint32_t len, struct droce_pkt *out)
{
	return parse_frame_general(frame, len, out, NULL);
}

enum droce_drop
droce_parse_split(const uint8_t *hdr, uint32_t hlen, const uint8_t *payload, uint32_t plen,
		  const uint8_t *tail, uint32_t tlen, struct droce_pkt *out)
{
	uint32_t body, crc;
	enum droce_drop why = parse_hdrs(hdr, hlen + plen + tlen, hlen, out, &body, false);

	if (why != DROCE_DROP_NONE)
		return why;
	if (out->payload_off != hlen || out->payload_len != plen || tlen != (uint32_t)out->pad + DROCE_ICRC_LEN ||
	    out->frame_len != hlen + plen + tlen)
		return DROCE_DROP_HDR_LEN; /* not the zero-copy shape */
	if (((const struct rte_udp_hdr *)(hdr + out->l4_off))->dgram_cksum != 0)
		return DROCE_DROP_UDP_CSUM; /* checked on the flat frame only */
	crc = droce_icrc_begin(hdr + out->l3_off, hlen - out->l3_off, out->ipv6);
	crc = droce_icrc_update(crc, payload, plen);
	crc = droce_icrc_update(crc, tail, out->pad);
	if (droce_icrc_finish(crc) != droce_icrc_load(tail + out->pad))
		return DROCE_DROP_ICRC;
	out->payload = payload;
	return DROCE_DROP_NONE;
}

enum droce_drop
droce_parse_frame(const uint8_t *frame, uint32_t len, struct droce_pkt *out)
{
	return droce_parse_frame_c(frame, len, out, NULL);
}

void
droce_pkt_read_fields(const struct droce_pkt *p, const uint8_t *frame, struct droce_pkt_fields *f)
{
	const struct droce_bth *bth = droce_pkt_bth(p, frame);
	const struct droce_opcode_info *oi = p->info;

	memset(f, 0, sizeof(*f));
	f->opcode = droce_bth_opcode(bth);
	f->se = droce_bth_se(bth);
	f->mig = droce_bth_mig(bth);
	f->pkey = droce_bth_pkey(bth);
	f->fecn = droce_bth_fecn(bth);
	f->becn = droce_bth_becn(bth);
	f->dqpn = droce_bth_qpn(bth);
	f->ackreq = droce_bth_ackreq(bth);
	f->psn = droce_bth_psn(bth);
	if (oi->hdr_mask & DROCE_HDRM(DETH)) {
		const struct droce_deth *d = droce_pkt_hdr(p, frame, DROCE_HDR_DETH);
		f->deth.qkey = droce_deth_qkey(d);
		f->deth.src_qp = droce_deth_sqp(d);
	}
	if (oi->hdr_mask & DROCE_HDRM(XRCETH))
		f->xrc_srqn = droce_xrceth_srqn(droce_pkt_hdr(p, frame, DROCE_HDR_XRCETH));
	if (oi->hdr_mask & DROCE_HDRM(RETH)) {
		const struct droce_reth *r = droce_pkt_hdr(p, frame, DROCE_HDR_RETH);
		f->reth.va = droce_reth_va(r);
		f->reth.rkey = droce_reth_rkey(r);
		f->reth.len = droce_reth_len(r);
	}
	if (oi->hdr_mask & DROCE_HDRM(ATMETH)) {
		const struct droce_atmeth *a = droce_pkt_hdr(p, frame, DROCE_HDR_ATMETH);
		f->atomic.va = droce_atmeth_va(a);
		f->atomic.rkey = droce_atmeth_rkey(a);
		f->atomic.swap_add = droce_atmeth_swap_add(a);
		f->atomic.cmp = droce_atmeth_cmp(a);
	}
	if (oi->hdr_mask & DROCE_HDRM(AETH)) {
		const struct droce_aeth *a = droce_pkt_hdr(p, frame, DROCE_HDR_AETH);
		f->aeth.syndrome = droce_aeth_syndrome(a);
		f->aeth.msn = droce_aeth_msn(a);
	}
	if (oi->hdr_mask & DROCE_HDRM(ATMACK))
		f->atomic_orig = droce_atmack_orig(droce_pkt_hdr(p, frame, DROCE_HDR_ATMACK));
	if (oi->hdr_mask & DROCE_HDRM(IMMDT))
		f->imm = droce_immdt_imm(droce_pkt_hdr(p, frame, DROCE_HDR_IMMDT));
	if (oi->hdr_mask & DROCE_HDRM(IETH))
		f->ieth_rkey = droce_ieth_rkey(droce_pkt_hdr(p, frame, DROCE_HDR_IETH));
}
