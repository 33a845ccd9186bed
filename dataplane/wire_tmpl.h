/* SPDX-License-Identifier: BSD-3-Clause
 * The transmit header builder of the transports: the template's bytes
 * (Ethernet, VLAN, IP, UDP: struct droce_hdr_tmpl in wire.h, built once per
 * path by droce_tmpl_init: those bytes, their offsets, the IPv4 checksum's
 * partial sum without length and id, the ICRC constant of the invariant IP
 * and UDP bytes) copied in one or two fixed-size blocks, then only what
 * changes per frame patched in: IP and UDP lengths, the IPv4 id and checksum
 * (from the template's partial sum), the BTH as three words and the extended
 * headers (droce_tmpl_put; the request builder in xport.h gives it the BTH
 * words it made itself).  droce_build_headers (wire.c) writes the same bytes field by
 * field and is the reference the unit test compares this with.
 */
#ifndef DROCE_WIRE_TMPL_H
#define DROCE_WIRE_TMPL_H

#include <string.h>

#include <rte_branch_prediction.h>

#include "wire.h"

static inline void
droce_put_reth(uint8_t *p, const struct droce_pkt_fields *f)
{
	struct droce_reth *r = (struct droce_reth *)p;

	droce_reth_set_va(r, f->reth.va);
	droce_reth_set_rkey(r, f->reth.rkey);
	droce_reth_set_len(r, f->reth.len);
}

static inline void
droce_put_aeth(uint8_t *p, const struct droce_pkt_fields *f)
{
	((struct droce_aeth *)p)->syn_msn =
		rte_cpu_to_be_32((uint32_t)f->aeth.syndrome << 24 | (f->aeth.msn & 0xffffffu));
}

/* The extended headers @oi has, after the BTH at @bth0, from @f; every byte
 * of each written (reserved bits zero). */
static inline void
droce_write_ext_headers(uint8_t *bth0, const struct droce_opcode_info *oi,
			const struct droce_pkt_fields *f)
{
	uint16_t hm = oi->hdr_mask;

	if (hm & DROCE_HDRM(DETH)) {
		struct droce_deth *d = (struct droce_deth *)(bth0 + oi->off[DROCE_HDR_DETH]);
		droce_deth_set_qkey(d, f->deth.qkey);
		droce_deth_set_sqp(d, f->deth.src_qp);
	}
	if (hm & DROCE_HDRM(XRCETH))
		droce_xrceth_set_srqn((struct droce_xrceth *)(bth0 + oi->off[DROCE_HDR_XRCETH]),
				      f->xrc_srqn);
	if (hm & DROCE_HDRM(RETH))
		droce_put_reth(bth0 + oi->off[DROCE_HDR_RETH], f);
	if (hm & DROCE_HDRM(ATMETH)) {
		struct droce_atmeth *a = (struct droce_atmeth *)(bth0 + oi->off[DROCE_HDR_ATMETH]);
		droce_atmeth_set_va(a, f->atomic.va);
		droce_atmeth_set_rkey(a, f->atomic.rkey);
		droce_atmeth_set_swap_add(a, f->atomic.swap_add);
		droce_atmeth_set_cmp(a, f->atomic.cmp);
	}
	if (hm & DROCE_HDRM(AETH))
		droce_put_aeth(bth0 + oi->off[DROCE_HDR_AETH], f);
	if (hm & DROCE_HDRM(ATMACK)) {
		struct droce_atmack *a = (struct droce_atmack *)(bth0 + oi->off[DROCE_HDR_ATMACK]);
		droce_atmack_set_orig(a, f->atomic_orig);
	}
	if (hm & DROCE_HDRM(IMMDT))
		droce_immdt_set_imm((struct droce_immdt *)(bth0 + oi->off[DROCE_HDR_IMMDT]), f->imm);
	if (hm & DROCE_HDRM(IETH))
		droce_ieth_set_rkey((struct droce_ieth *)(bth0 + oi->off[DROCE_HDR_IETH]), f->ieth_rkey);
	if (hm & DROCE_HDRM(CNP))
		memset(bth0 + oi->off[DROCE_HDR_CNP], 0, sizeof(struct droce_cnp_pad));
}

/*
 * The part of every frame the builders share: the template's bytes (up to
 * t->copy of them: @buf must have that much room) with the IP and UDP
 * lengths, the IPv4 id and checksum (the template's partial sum, RFC 1624's
 * way: only the length and id added) for a frame with @hdr_len header bytes
 * and @payload_len payload bytes, then the BTH's three words @w (big
 * endian, as droce_bth_words makes them).  Checks nothing: the callers have.
 */
static __rte_always_inline void
droce_tmpl_put(struct droce_hdr_tmpl *t, uint8_t *buf, size_t hdr_len, uint32_t payload_len,
	       const rte_be32_t w[3])
{
	size_t total = hdr_len + payload_len + (-payload_len & 3u) + DROCE_ICRC_LEN;

	memcpy(buf, t->bytes, 64);
	if (t->copy > 64)
		memcpy(buf + 64, t->bytes + 64, DROCE_TMPL_COPY - 64);
	if (t->ipv6) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(buf + t->l3_off);

		ip6->payload_len = rte_cpu_to_be_16((uint16_t)(total - t->l4_off));
	} else {
		struct rte_ipv4_hdr *ip4 = (struct rte_ipv4_hdr *)(buf + t->l3_off);
		uint16_t tot = rte_cpu_to_be_16((uint16_t)(total - t->l3_off));
		uint16_t id = rte_cpu_to_be_16(t->ip_id++);

		ip4->total_length = tot;
		ip4->packet_id = id;
		ip4->hdr_checksum = (uint16_t)~__rte_raw_cksum_reduce(t->ip_csum_base + tot + id);
	}
	((struct rte_udp_hdr *)(buf + t->l4_off))->dgram_len =
		rte_cpu_to_be_16((uint16_t)(total - t->l4_off));
	memcpy(buf + t->len, w, 3 * sizeof(w[0]));
}

/* The BTH's three words from @f, for a payload of @payload_len bytes (the
 * pad count), big endian. */
static __rte_always_inline void
droce_bth_words(const struct droce_pkt_fields *f, uint32_t payload_len, rte_be32_t w[3])
{
	w[0] = rte_cpu_to_be_32((uint32_t)f->opcode << 24 | (uint32_t)f->se << 23 |
				(uint32_t)f->mig << 22 | (-payload_len & 3u) << 20 | f->pkey);
	w[1] = rte_cpu_to_be_32((uint32_t)f->fecn << 31 | (uint32_t)f->becn << 30 |
				(uint32_t)(f->resv6a & 0x3f) << 24 | (f->dqpn & 0xffffffu));
	w[2] = rte_cpu_to_be_32((uint32_t)f->ackreq << 31 | (f->psn & 0xffffffu));
}

/*
 * droce_build_headers' contract and bytes: the headers of a frame for @f and
 * @payload_len payload bytes into @buf (@cap bytes of room), the header
 * length returned (0: invalid opcode, payload on an opcode without, no
 * room).  Writes up to t->copy bytes from @buf (what lies past the headers
 * is the payload's, to be overwritten); with less room than that it leaves
 * the work to droce_build_headers.
 */
static __rte_always_inline size_t
droce_tmpl_build(struct droce_hdr_tmpl *t, uint8_t *buf, size_t cap,
		 const struct droce_pkt_fields *f, uint32_t payload_len)
{
	const struct droce_opcode_info *oi = &droce_opcode_table[f->opcode];
	size_t hdr_len = (size_t)t->len + oi->hdr_len;
	size_t total = hdr_len + payload_len + (-payload_len & 3u) + DROCE_ICRC_LEN;
	uint8_t *bth = buf + t->len;
	rte_be32_t w[3];

	if (unlikely(cap < t->copy))
		return droce_build_headers(t, buf, cap, f, payload_len);
	if (unlikely(!(oi->flags & DROCE_OPF_VALID) ||
		     (payload_len && !(oi->flags & DROCE_OPF_PAYLOAD)) || hdr_len > cap ||
		     total > UINT16_MAX))
		return 0;
	droce_bth_words(f, payload_len, w);
	droce_tmpl_put(t, buf, hdr_len, payload_len, w);
	/* the transports' common cases without the walk through every header kind */
	switch (oi->hdr_mask) {
	case 0:
		break;
	case DROCE_HDRM(RETH):
		droce_put_reth(bth + sizeof(struct droce_bth), f);
		break;
	case DROCE_HDRM(AETH):
		droce_put_aeth(bth + sizeof(struct droce_bth), f);
		break;
	default:
		droce_write_ext_headers(bth, oi, f);
	}
	return hdr_len;
}

#endif /* DROCE_WIRE_TMPL_H */
