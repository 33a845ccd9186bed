/* SPDX-License-Identifier: BSD-3-Clause
 * The transports' header builder (droce_tmpl_build: the template's bytes
 * copied, per-frame fields patched) against the field-by-field reference
 * (droce_build_headers), byte for byte, for every valid opcode on IPv4 and
 * IPv6, with and without an 802.1Q tag; and the template ICRC
 * (droce_icrc_tmpl: a per-template constant and the per-packet header bytes)
 * against droce_icrc_flat over the whole frame.  No EAL.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "dataplane/icrc.h"
#include "dataplane/wire.h"
#include "dataplane/wire_tmpl.h"

static uint32_t rng = 0x2545f491u;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static uint64_t
rnd64(void)
{
	return (uint64_t)rnd() << 32 | rnd();
}

/* A path of variant @v: bit 0 IPv6, bit 1 VLAN; the other fields random. */
static void
make_path(struct droce_path *p, unsigned int v)
{
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 6; i++) {
		p->src_mac.addr_bytes[i] = (uint8_t)rnd();
		p->dst_mac.addr_bytes[i] = (uint8_t)rnd();
	}
	p->ipv6 = v & 1;
	p->vlan = (v & 2) != 0;
	p->vlan_id = (uint16_t)(rnd() & 0xfff);
	p->vlan_pcp = (uint8_t)(rnd() & 7);
	if (p->ipv6) {
		for (int i = 0; i < 16; i++) {
			p->src_gid[i] = (uint8_t)rnd();
			p->dst_gid[i] = (uint8_t)rnd();
		}
	} else {
		uint32_t a = 0xc6120000u | (rnd() & 0x1ffff), b = 0xc6120000u | (rnd() & 0x1ffff);
		droce_gid_from_ipv4(p->src_gid, rte_cpu_to_be_32(a));
		droce_gid_from_ipv4(p->dst_gid, rte_cpu_to_be_32(b));
	}
	p->traffic_class = (uint8_t)rnd();
	p->hop_limit = (uint8_t)rnd();
	p->flow_label = rnd() & 0xfffff;
	p->udp_sport = (uint16_t)(0xc000 | rnd());
	p->ip_id = (uint16_t)rnd();
}

static void
make_fields(struct droce_pkt_fields *f, uint8_t opcode)
{
	memset(f, 0, sizeof(*f));
	f->opcode = opcode;
	f->se = rnd() & 1;
	f->mig = rnd() & 1;
	f->fecn = rnd() & 1;
	f->becn = rnd() & 1;
	f->resv6a = (uint8_t)rnd(); /* 6 bits: the builders cut the rest */
	f->ackreq = rnd() & 1;
	f->pkey = (uint16_t)rnd();
	f->dqpn = rnd() & 0xffffff;
	f->psn = rnd() & 0xffffff;
	f->reth.va = rnd64();
	f->reth.rkey = rnd();
	f->reth.len = rnd();
	f->aeth.syndrome = (uint8_t)rnd();
	f->aeth.msn = rnd() & 0xffffff;
	f->atomic.va = rnd64();
	f->atomic.rkey = rnd();
	f->atomic.swap_add = rnd64();
	f->atomic.cmp = rnd64();
	f->atomic_orig = rnd64();
	f->imm = rnd();
	f->ieth_rkey = rnd();
	f->deth.qkey = rnd();
	f->deth.src_qp = rnd() & 0xffffff;
	f->xrc_srqn = rnd() & 0xffffff;
}

static const uint32_t plens[] = { 0, 1, 2, 3, 4, 5, 63, 64, 65, 256, 1023, 4096 };

#define BUF 4400

Test(tmpl, build_matches_reference_every_opcode)
{
	static uint8_t a[BUF], b[BUF];
	unsigned int frames = 0;

	for (unsigned int v = 0; v < 4; v++) {
		for (unsigned int op = 0; op < 256; op++) {
			const struct droce_opcode_info *oi = &droce_opcode_table[op];

			if (!(oi->flags & DROCE_OPF_VALID))
				continue;
			for (size_t k = 0; k < sizeof(plens) / sizeof(plens[0]); k++) {
				struct droce_hdr_tmpl tr, tt;
				struct droce_pkt_fields f;
				struct droce_path p;
				size_t hr, ht;

				if (plens[k] && !(oi->flags & DROCE_OPF_PAYLOAD))
					continue;
				make_path(&p, v);
				droce_tmpl_init(&tr, &p);
				droce_tmpl_init(&tt, &p);
				make_fields(&f, (uint8_t)op);
				/* different garbage: a byte either builder leaves unwritten differs */
				memset(a, 0xa5, sizeof(a));
				memset(b, 0x5a, sizeof(b));
				hr = droce_build_headers(&tr, a, sizeof(a), &f, plens[k]);
				ht = droce_tmpl_build(&tt, b, sizeof(b), &f, plens[k]);
				cr_assert_gt(hr, 0, "%s v%u plen %u", oi->name, v, plens[k]);
				cr_assert_eq(ht, hr, "%s v%u plen %u: header length", oi->name, v, plens[k]);
				cr_assert_eq(hr, (size_t)tr.len + oi->hdr_len);
				for (size_t i = 0; i < hr; i++)
					cr_assert_eq(b[i], a[i], "%s v%u plen %u: byte %zu is %#x, reference %#x",
						     oi->name, v, plens[k], i, b[i], a[i]);
				cr_assert_eq(tt.ip_id, tr.ip_id, "the IPv4 id moves on the same way");
				/* the copy stays inside its block */
				for (size_t i = RTE_MAX(hr, (size_t)tt.copy); i < 200; i++)
					cr_assert_eq(b[i], 0x5a, "%s: byte %zu past the copy written", oi->name, i);
				frames++;
			}
		}
	}
	cr_assert_gt(frames, 400);
}

/* Whole frames through the parser: the template path's headers, a payload,
 * pad and the template ICRC are accepted and read back as written. */
Test(tmpl, frames_parse_back)
{
	static uint8_t frame[BUF];

	for (unsigned int v = 0; v < 4; v++) {
		for (unsigned int op = 0; op < 256; op++) {
			const struct droce_opcode_info *oi = &droce_opcode_table[op];
			struct droce_pkt_fields f, g;
			struct droce_hdr_tmpl t;
			struct droce_path p;
			struct droce_pkt pk;
			uint32_t plen = (oi->flags & DROCE_OPF_PAYLOAD) ? 1 + rnd() % 300 : 0;
			size_t hdr, total;
			enum droce_drop why;

			if (!(oi->flags & DROCE_OPF_VALID))
				continue;
			make_path(&p, v);
			droce_tmpl_init(&t, &p);
			make_fields(&f, (uint8_t)op);
			f.pkey = 0xffff;
			f.fecn = f.becn = false;
			hdr = droce_tmpl_build(&t, frame, sizeof(frame), &f, plen);
			total = droce_frame_len(&t, (uint8_t)op, plen);
			for (uint32_t i = 0; i < plen; i++)
				frame[hdr + i] = (uint8_t)(i * 7 + op);
			memset(frame + hdr + plen, 0, total - DROCE_ICRC_LEN - hdr - plen);
			droce_icrc_store(frame + total - DROCE_ICRC_LEN,
					 droce_icrc_tmpl(t.icrc_k, frame + t.l3_off,
							 total - DROCE_ICRC_LEN - t.l3_off, t.ipv6));
			why = droce_parse_frame(frame, (uint32_t)total, &pk);
			cr_assert_eq(why, DROCE_DROP_NONE, "%s v%u: %s", oi->name, v, droce_drop_name[why]);
			cr_assert_eq(pk.payload_len, plen);
			cr_assert_eq(pk.payload_off, hdr);
			droce_pkt_read_fields(&pk, frame, &g);
			cr_assert_eq(g.opcode, f.opcode);
			cr_assert_eq(g.psn, f.psn);
			cr_assert_eq(g.dqpn, f.dqpn);
			cr_assert_eq(g.se, f.se);
			cr_assert_eq(g.ackreq, f.ackreq);
		}
	}
}

/* The template ICRC equals the flat one for any per-packet bytes: random
 * frames (fields, payload, IPv4 id, lengths), every variant, and the masked
 * bytes (TOS/class, TTL/hop limit, checksums, BTH byte 4) however set. */
Test(tmpl, icrc_matches_flat)
{
	static uint8_t frame[BUF];

	for (int n = 0; n < 4000; n++) {
		unsigned int v = (unsigned int)n & 3;
		uint8_t op = (uint8_t)rnd();
		const struct droce_opcode_info *oi = &droce_opcode_table[op];
		struct droce_pkt_fields f;
		struct droce_hdr_tmpl t;
		struct droce_path p;
		uint32_t plen;
		size_t hdr, total, len;
		uint8_t *l3;

		if (!(oi->flags & DROCE_OPF_VALID))
			continue;
		plen = (oi->flags & DROCE_OPF_PAYLOAD) ? rnd() % (n < 2000 ? 80 : 4097) : 0;
		make_path(&p, v);
		droce_tmpl_init(&t, &p);
		make_fields(&f, op);
		hdr = droce_tmpl_build(&t, frame, sizeof(frame), &f, plen);
		cr_assert_gt(hdr, 0);
		total = droce_frame_len(&t, op, plen);
		for (size_t i = hdr; i < total; i++)
			frame[i] = (uint8_t)rnd();
		l3 = frame + t.l3_off;
		if (rnd() & 1) { /* the masked bytes do not count */
			if (t.ipv6) {
				l3[0] = (uint8_t)((l3[0] & 0xf0) | (rnd() & 0xf));
				l3[1] = (uint8_t)rnd();
				l3[7] = (uint8_t)rnd();
			} else {
				l3[1] = (uint8_t)rnd();
				l3[8] = (uint8_t)rnd();
				l3[10] = (uint8_t)rnd();
			}
			frame[t.l4_off + 6] = (uint8_t)rnd();
			frame[t.len + 4] = (uint8_t)rnd();
		}
		len = total - DROCE_ICRC_LEN - t.l3_off;
		cr_assert_eq(droce_icrc_tmpl(t.icrc_k, l3, len, t.ipv6), droce_icrc_flat(l3, len, t.ipv6),
			     "%s v%u plen %u", oi->name, v, plen);
		/* the bare masked span (IP + UDP + BTH) too */
		len = (size_t)(t.len + 12 - t.l3_off);
		cr_assert_eq(droce_icrc_tmpl(t.icrc_k, l3, len, t.ipv6), droce_icrc_flat(l3, len, t.ipv6));
	}
}

/* The template's constant stands for its addresses and ports: a frame whose
 * other header bytes differ gets a different (wrong) ICRC, so the
 * transports must build every frame they ICRC this way from that template
 * (the table path, on a CPU without PCLMULQDQ; the fold reads every byte and
 * gets it right). */
Test(tmpl, icrc_constant_is_the_templates)
{
	bool was = droce_crc_clmul_enable(false);

	static uint8_t frame[256];
	struct droce_pkt_fields f;
	struct droce_hdr_tmpl t;
	struct droce_path p;
	size_t hdr, len;
	uint8_t *l3;

	make_path(&p, 0);
	droce_tmpl_init(&t, &p);
	make_fields(&f, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY));
	hdr = droce_tmpl_build(&t, frame, sizeof(frame), &f, 8);
	len = hdr + 8 - t.l3_off;
	l3 = frame + t.l3_off;
	cr_assert_eq(droce_icrc_tmpl(t.icrc_k, l3, len, false), droce_icrc_flat(l3, len, false));
	l3[15] ^= 1; /* source address */
	cr_assert_neq(droce_icrc_tmpl(t.icrc_k, l3, len, false), droce_icrc_flat(l3, len, false));
	if (droce_crc_clmul_enable(true))
		cr_assert_eq(droce_icrc_tmpl(t.icrc_k, l3, len, false), droce_icrc_flat(l3, len, false));
	droce_crc_clmul_enable(was);
}

/* Less room than the block copy: the reference does the work, nothing is
 * written past @cap; refusals are the reference's. */
Test(tmpl, small_room_and_refusals)
{
	uint8_t a[128], b[128];
	struct droce_pkt_fields f;
	struct droce_hdr_tmpl tr, tt;
	struct droce_path p;
	uint8_t ack = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_ACK);
	size_t cap;

	make_path(&p, 0);
	droce_tmpl_init(&tr, &p);
	droce_tmpl_init(&tt, &p);
	make_fields(&f, ack);
	cap = droce_frame_len(&tt, ack, 0); /* 62 bytes, less than the 64 copied */
	cr_assert_lt(cap, tt.copy);
	memset(a, 0xa5, sizeof(a));
	memset(b, 0x5a, sizeof(b));
	cr_assert_eq(droce_tmpl_build(&tt, b, cap, &f, 0), droce_build_headers(&tr, a, cap, &f, 0));
	cr_assert_arr_eq(a, b, cap - DROCE_ICRC_LEN);
	for (size_t i = cap; i < sizeof(b); i++)
		cr_assert_eq(b[i], 0x5a, "byte %zu past the room written", i);

	make_fields(&f, 0xff); /* not an opcode */
	cr_assert_eq(droce_tmpl_build(&tt, b, sizeof(b), &f, 0), 0);
	make_fields(&f, ack);  /* payload on an opcode without */
	cr_assert_eq(droce_tmpl_build(&tt, b, sizeof(b), &f, 4), 0);
	make_fields(&f, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_CMP_SWAP)); /* headers past the room */
	cr_assert_eq(droce_tmpl_build(&tt, b, 70, &f, 0), 0);
	cr_assert_eq(droce_build_headers(&tr, a, 70, &f, 0), 0);
	make_fields(&f, DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY)); /* over 64 KiB */
	cr_assert_eq(droce_tmpl_build(&tt, b, sizeof(b), &f, 70000), 0);
}

/* The receive cache (the table path: PCLMULQDQ off): frames of many flows
 * (more than its slots, IPv4 and IPv6 mixed, so slots are shared and
 * retaken), each checked through it, equal droce_icrc_flat; a frame with a
 * header byte changed after its flow was cached (an address, a port, the
 * protocol) is not taken for the flow.  Then the same with the fold on (the
 * CPU has it): same values, the cache not consulted. */
Test(tmpl, icrc_rx_cache)
{
	enum { FLOWS = 40 };
	static struct droce_icrc_cache cache;
	static struct droce_hdr_tmpl t[FLOWS];
	static uint8_t frame[BUF];
	unsigned int misses_first = 0;
	bool was = droce_crc_clmul_enable(false);

	for (unsigned int i = 0; i < FLOWS; i++) {
		struct droce_path p;

		make_path(&p, i & 3);
		droce_tmpl_init(&t[i], &p);
	}
	for (int round = 0; round < 4; round++) {
		if (round == 2 && !droce_crc_clmul_enable(true))
			break; /* no PCLMULQDQ here */
		for (int n = 0; n < 3000; n++) {
			/* runs of one flow, so the cache has something to hit */
			struct droce_hdr_tmpl *tp = &t[(n / 5 * 7) % FLOWS];
			uint8_t op = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY);
			struct droce_pkt_fields f;
			uint32_t plen = rnd() % 200;
			size_t hdr, len, where = 0;
			uint8_t *l3;

			make_fields(&f, op);
			hdr = droce_tmpl_build(tp, frame, sizeof(frame), &f, plen);
			len = hdr + plen + (-plen & 3u) - tp->l3_off;
			for (size_t i = hdr; i < hdr + plen; i++)
				frame[i] = (uint8_t)rnd();
			l3 = frame + tp->l3_off;
			if (round % 2 == 1 && n % 3 == 0) {
				/* a byte the flow's constant stands for */
				static const size_t v4[] = { 0, 6, 9, 12, 15, 16, 19, 20, 21, 22, 23 };
				static const size_t v6[] = { 0, 6, 8, 23, 24, 39, 40, 41, 42, 43 };
				where = tp->ipv6 ? v6[rnd() % 10] : v4[rnd() % 11];
				l3[where] ^= (uint8_t)(1u << (rnd() % 8));
			}
			cr_assert_eq(droce_icrc_rx(&cache, l3, len, tp->ipv6), droce_icrc_flat(l3, len, tp->ipv6),
				     "round %d frame %d (byte %zu changed)", round, n, where);
		}
		if (round == 0) {
			misses_first = (unsigned int)cache.misses;
			cr_assert_lt(misses_first, 3000 / 5 + 1, "runs of a flow hit");
			cr_assert_geq(misses_first, FLOWS);
		}
		if (round == 1)
			misses_first = (unsigned int)cache.misses;
	}
	cr_assert_eq(cache.misses, misses_first, "the fold does not use the cache");
	droce_crc_clmul_enable(was);
	/* short input: the flat path */
	cr_assert_eq(droce_icrc_rx(&cache, frame + t[0].l3_off, 30, false),
		     droce_icrc_flat(frame + t[0].l3_off, 30, false));
}
