/* SPDX-License-Identifier: BSD-3-Clause
 * Builder and parser against the scapy-made frames in tests/data/vectors:
 * every good frame is accepted and rebuilt byte for byte, every bad frame is
 * rejected for its own reason (by the parser, or by the sequence checks).
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "dataplane/icrc.h"
#include "dataplane/seqcheck.h"
#include "dataplane/wire.h"
#include "pcap.h"

static const char *good_captures[] = {
	"rc_send_only_v4.pcap", "rc_write_v4.pcap",         "rc_read_v4.pcap",
	"rc_send_imm_v4.pcap",  "rc_atomic_v4.pcap",        "ud_send_v4.pcap",
	"rc_send_only_v6.pcap", "rc_send_zero_len_v4.pcap", "rc_retransmit_v4.pcap",
	"rc_write_imm_vlan_v4.pcap", "opcode_zoo_v4.pcap",  "cnp_v4.pcap",
};

static void
load(const char *name, struct test_capture *cap)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "vectors/%s", name);
	cr_assert_eq(test_pcap_load(test_data_path(rel), cap), 0, "cannot load %s", rel);
	cr_assert_gt(cap->count, 0);
}

/* The path a frame was sent on, read back from its own headers. */
static void
path_of(const struct droce_pkt *p, const uint8_t *f, struct droce_path *path)
{
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)f;
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(f + p->l4_off);

	memset(path, 0, sizeof(*path));
	path->dst_mac = eth->dst_addr;
	path->src_mac = eth->src_addr;
	path->vlan = p->vlan;
	path->vlan_id = p->vlan_tci & 0xfff;
	path->vlan_pcp = (uint8_t)(p->vlan_tci >> 13);
	path->ipv6 = p->ipv6;
	memcpy(path->src_gid, p->src_gid, 16);
	memcpy(path->dst_gid, p->dst_gid, 16);
	path->traffic_class = p->traffic_class;
	path->udp_sport = p->udp_sport;
	path->udp_csum = udp->dgram_cksum != 0;
	if (p->ipv6) {
		const struct rte_ipv6_hdr *ip6 = (const struct rte_ipv6_hdr *)(f + p->l3_off);
		path->hop_limit = ip6->hop_limits;
		path->flow_label = rte_be_to_cpu_32(ip6->vtc_flow) & 0xfffff;
	} else {
		const struct rte_ipv4_hdr *ip4 = (const struct rte_ipv4_hdr *)(f + p->l3_off);
		path->hop_limit = ip4->time_to_live;
		path->ip_id = rte_be_to_cpu_16(ip4->packet_id);
	}
}

Test(vectors, parser_accepts_every_good_frame)
{
	unsigned int n = 0;

	for (size_t c = 0; c < RTE_DIM(good_captures); c++) {
		struct test_capture cap;

		load(good_captures[c], &cap);
		for (size_t i = 0; i < cap.count; i++) {
			struct droce_pkt p;
			enum droce_drop why = droce_parse_frame(cap.frames[i].data, cap.frames[i].len, &p);

			cr_assert_eq(why, DROCE_DROP_NONE, "%s frame %zu rejected: %s", good_captures[c],
				     i + 1, droce_drop_desc[why]);
			cr_assert_not_null(p.info);
			n++;
		}
		test_pcap_free(&cap);
	}
	cr_assert_eq(n, 58, "every frame of the good captures");
}

/* A frame handed to another engine carries its parse result packed
 * (struct droce_pkt_meta); unpacked there it is what the parser said, field
 * for field (IPv4, IPv6, VLAN, every opcode of the zoo). */
Test(vectors, packed_parse_result_unpacks_to_the_parsed_one)
{
	unsigned int n = 0;

	for (size_t c = 0; c < RTE_DIM(good_captures); c++) {
		struct test_capture cap;

		load(good_captures[c], &cap);
		for (size_t i = 0; i < cap.count; i++) {
			const uint8_t *f = cap.frames[i].data;
			struct droce_pkt p, q;
			struct droce_pkt_meta m;

			cr_assert_eq(droce_parse_frame(f, cap.frames[i].len, &p), DROCE_DROP_NONE);
			memset(&m, 0xa5, sizeof(m));
			droce_pkt_pack(&p, &m);
			memset(&q, 0x5a, sizeof(q));
			droce_pkt_unpack(f, &m, &q);
			cr_assert_eq(q.info, p.info, "%s frame %zu", good_captures[c], i + 1);
			cr_assert_eq(q.opcode, p.opcode);
			cr_assert_eq(q.ipv6, p.ipv6);
			cr_assert_eq(q.vlan, p.vlan);
			cr_assert_eq(q.vlan_tci, p.vlan_tci);
			cr_assert_eq(q.traffic_class, p.traffic_class);
			cr_assert_eq(q.l3_off, p.l3_off);
			cr_assert_eq(q.l4_off, p.l4_off);
			cr_assert_eq(q.bth_off, p.bth_off);
			cr_assert_eq(q.payload_off, p.payload_off);
			cr_assert_eq(q.payload_len, p.payload_len);
			cr_assert_eq(q.pad, p.pad);
			cr_assert_eq(q.udp_sport, p.udp_sport);
			cr_assert_arr_eq(q.src_gid, p.src_gid, 16);
			cr_assert_arr_eq(q.dst_gid, p.dst_gid, 16);
			cr_assert_eq(q.frame_len, p.frame_len, "%s frame %zu", good_captures[c], i + 1);
			n++;
		}
		test_pcap_free(&cap);
	}
	cr_assert_gt(n, 50);
}

Test(vectors, builder_output_is_byte_identical)
{
	unsigned int n = 0;

	for (size_t c = 0; c < RTE_DIM(good_captures); c++) {
		struct test_capture cap;

		load(good_captures[c], &cap);
		for (size_t i = 0; i < cap.count; i++) {
			const uint8_t *f = cap.frames[i].data;
			struct droce_pkt p;
			struct droce_pkt_fields fields;
			struct droce_path path;
			struct droce_hdr_tmpl t;
			uint8_t out[2048];
			size_t len;

			cr_assert_eq(droce_parse_frame(f, cap.frames[i].len, &p), DROCE_DROP_NONE);
			droce_pkt_read_fields(&p, f, &fields);
			path_of(&p, f, &path);
			droce_tmpl_init(&t, &path);
			memset(out, 0xee, sizeof(out));
			len = droce_build_frame(&t, out, sizeof(out), &fields, f + p.payload_off,
						p.payload_len);
			cr_assert_eq(len, p.frame_len, "%s frame %zu: length %zu, want %u",
				     good_captures[c], i + 1, len, p.frame_len);
			for (size_t b = 0; b < len; b++)
				cr_assert_eq(out[b], f[b], "%s frame %zu (%s) byte %zu: %02x, want %02x",
					     good_captures[c], i + 1, p.info->name, b, out[b], f[b]);
			cr_assert_eq(out[len], 0xee, "builder wrote past the frame");
			n++;
		}
		test_pcap_free(&cap);
	}
	cr_assert_eq(n, 58, "every frame of the good captures");
}

Test(vectors, parsed_fields_match_the_manifest)
{
	struct test_capture cap;
	struct droce_pkt p;
	struct droce_pkt_fields f;

	load("rc_write_v4.pcap", &cap);
	cr_assert_eq(droce_parse_frame(cap.frames[0].data, cap.frames[0].len, &p), DROCE_DROP_NONE);
	droce_pkt_read_fields(&p, cap.frames[0].data, &f);
	cr_assert_str_eq(p.info->name, "RC_RDMA_WRITE_FIRST");
	cr_assert_eq(f.reth.len, 612);
	cr_assert_eq(f.reth.rkey, 0x00a1b2c3);
	cr_assert_eq(f.reth.va, 0x00007f5a3c001000ull);
	cr_assert_eq(f.psn, 200);
	cr_assert_eq(f.dqpn, 0xb2);
	cr_assert_eq(p.payload_len, 256);
	test_pcap_free(&cap);

	load("ud_send_v4.pcap", &cap);
	cr_assert_eq(droce_parse_frame(cap.frames[0].data, cap.frames[0].len, &p), DROCE_DROP_NONE);
	droce_pkt_read_fields(&p, cap.frames[0].data, &f);
	cr_assert_eq(f.deth.qkey, 0x11111111);
	cr_assert_eq(f.deth.src_qp, 0xc6);
	cr_assert_eq(p.payload_len, 32);
	test_pcap_free(&cap);

	load("rc_send_imm_v4.pcap", &cap);
	cr_assert_eq(droce_parse_frame(cap.frames[0].data, cap.frames[0].len, &p), DROCE_DROP_NONE);
	droce_pkt_read_fields(&p, cap.frames[0].data, &f);
	cr_assert_eq(rte_be_to_cpu_32(f.imm), 0xdeadbeef);
	cr_assert_eq(p.payload_len, 16);
	test_pcap_free(&cap);

	load("rc_write_imm_vlan_v4.pcap", &cap);
	cr_assert_eq(droce_parse_frame(cap.frames[0].data, cap.frames[0].len, &p), DROCE_DROP_NONE);
	cr_assert(p.vlan);
	cr_assert_eq(p.vlan_tci & 0xfff, 100);
	cr_assert_eq(p.vlan_tci >> 13, 3);
	cr_assert_eq(p.payload_len, 24);
	test_pcap_free(&cap);

	load("rc_send_zero_len_v4.pcap", &cap);
	/* frame 2 carries 2 bytes of Ethernet padding after the ICRC */
	cr_assert_eq(cap.frames[1].len, 60);
	cr_assert_eq(droce_parse_frame(cap.frames[1].data, cap.frames[1].len, &p), DROCE_DROP_NONE);
	cr_assert_eq(p.frame_len, 58);
	cr_assert_eq(p.payload_len, 0);
	test_pcap_free(&cap);

	load("rc_send_only_v6.pcap", &cap);
	cr_assert_eq(droce_parse_frame(cap.frames[0].data, cap.frames[0].len, &p), DROCE_DROP_NONE);
	cr_assert(p.ipv6);
	cr_assert_eq(p.traffic_class, 0x68);
	test_pcap_free(&cap);
}

static void
expect_drops(const char *name, const enum droce_drop *want, size_t n)
{
	struct test_capture cap;

	load(name, &cap);
	cr_assert_eq(cap.count, n, "%s frame count", name);
	for (size_t i = 0; i < n; i++) {
		struct droce_pkt p;
		enum droce_drop why = droce_parse_frame(cap.frames[i].data, cap.frames[i].len, &p);

		cr_assert_eq(why, want[i], "%s frame %zu: %s, want %s", name, i + 1,
			     droce_drop_name[why], droce_drop_name[want[i]]);
	}
	test_pcap_free(&cap);
}

Test(vectors, parser_rejects_bad_frames_for_their_reason)
{
	static const enum droce_drop icrc[] = { DROCE_DROP_ICRC, DROCE_DROP_ICRC, DROCE_DROP_ICRC,
						DROCE_DROP_ICRC };
	static const enum droce_drop pad[] = { DROCE_DROP_PAD, DROCE_DROP_PAD };
	static const enum droce_drop csum[] = { DROCE_DROP_IPV4_CSUM, DROCE_DROP_UDP_CSUM };

	expect_drops("bad_icrc.pcap", icrc, RTE_DIM(icrc));
	expect_drops("bad_pad.pcap", pad, RTE_DIM(pad));
	expect_drops("bad_ip_udp_checksum.pcap", csum, RTE_DIM(csum));
}

/* Frames that are well formed alone but break a sequence rule. */
static void
parse_all(const char *name, struct test_capture *cap, struct droce_pkt *pk, size_t n)
{
	load(name, cap);
	cr_assert_eq(cap->count, n, "%s frame count", name);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(droce_parse_frame(cap->frames[i].data, cap->frames[i].len, &pk[i]),
			     DROCE_DROP_NONE, "%s frame %zu is well formed", name, i + 1);
}

#define RX_CHECK(s, cap, pk, i) droce_seq_rx_check(s, &(pk)[i], (cap).frames[i].data)
#define TX_CHECK(s, cap, pk, i) droce_seq_tx_check(s, &(pk)[i], (cap).frames[i].data)

Test(sequence, psn_gap)
{
	struct test_capture cap;
	struct droce_pkt pk[3];
	struct droce_seq_rx s;

	parse_all("bad_psn_gap.pcap", &cap, pk, 3);
	droce_seq_rx_init(&s, 256, 30);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 0), DROCE_SEQ_OK);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 1), DROCE_SEQ_PSN_GAP);
	cr_assert_eq(s.epsn, 31, "a rejected packet leaves the expected PSN");
	cr_assert_eq(RX_CHECK(&s, cap, pk, 2), DROCE_SEQ_PSN_GAP);
	/* the first packet again is a duplicate */
	cr_assert_eq(RX_CHECK(&s, cap, pk, 0), DROCE_SEQ_DUPLICATE);
	test_pcap_free(&cap);
}

Test(sequence, reth_length)
{
	struct test_capture cap;
	struct droce_pkt pk[2];
	struct droce_seq_rx s;

	parse_all("bad_reth_len.pcap", &cap, pk, 2);
	droce_seq_rx_init(&s, 256, 40);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 0), DROCE_SEQ_OK);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 1), DROCE_SEQ_BAD_LENGTH);
	test_pcap_free(&cap);
}

Test(sequence, first_middle_last_order)
{
	struct test_capture cap;
	struct droce_pkt pk[4];
	struct droce_seq_rx s;

	parse_all("bad_order.pcap", &cap, pk, 4);
	droce_seq_rx_init(&s, 256, 50);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 0), DROCE_SEQ_BAD_ORDER, "MIDDLE without FIRST");
	s.epsn = 51;
	cr_assert_eq(RX_CHECK(&s, cap, pk, 1), DROCE_SEQ_BAD_ORDER, "LAST without FIRST");
	s.epsn = 52;
	cr_assert_eq(RX_CHECK(&s, cap, pk, 2), DROCE_SEQ_OK, "SEND_FIRST");
	cr_assert_eq(RX_CHECK(&s, cap, pk, 3), DROCE_SEQ_BAD_ORDER, "SEND_ONLY while FIRST open");
	test_pcap_free(&cap);
}

Test(sequence, middle_shorter_than_mtu)
{
	struct test_capture cap;
	struct droce_pkt pk[3];
	struct droce_seq_rx s;

	parse_all("bad_mtu.pcap", &cap, pk, 3);
	droce_seq_rx_init(&s, 256, 60);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 0), DROCE_SEQ_OK);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 1), DROCE_SEQ_BAD_MTU);
	/* at a 1024 MTU the 256-byte FIRST is itself wrong */
	droce_seq_rx_init(&s, 1024, 60);
	cr_assert_eq(RX_CHECK(&s, cap, pk, 0), DROCE_SEQ_BAD_MTU);
	test_pcap_free(&cap);
}

static void
sent(struct droce_seq_tx *s, const struct test_capture *cap, const struct droce_pkt *pk, size_t i)
{
	struct droce_pkt_fields f;

	droce_pkt_read_fields(&pk[i], cap->frames[i].data, &f);
	cr_assert(droce_seq_tx_sent(s, &f, pk[i].payload_len));
}

Test(sequence, read_response_length)
{
	struct test_capture cap;
	struct droce_pkt pk[3];
	struct droce_seq_tx s;

	parse_all("bad_read_len.pcap", &cap, pk, 3);
	droce_seq_tx_init(&s, 256, 80);
	sent(&s, &cap, pk, 0);
	cr_assert_eq(s.nxt, 82, "a 300-byte READ takes two PSNs at MTU 256");
	cr_assert_eq(TX_CHECK(&s, cap, pk, 1), DROCE_SEQ_OK);
	cr_assert_eq(TX_CHECK(&s, cap, pk, 2), DROCE_SEQ_BAD_LENGTH);
	test_pcap_free(&cap);
}

Test(sequence, ack_for_unsent_psn)
{
	struct test_capture cap;
	struct droce_pkt pk[2];
	struct droce_seq_tx s;

	parse_all("bad_ack_unsent.pcap", &cap, pk, 2);
	droce_seq_tx_init(&s, 256, 90);
	sent(&s, &cap, pk, 0);
	cr_assert_eq(TX_CHECK(&s, cap, pk, 1), DROCE_SEQ_ACK_UNSENT);
	test_pcap_free(&cap);
}

Test(sequence, good_exchanges_pass)
{
	struct test_capture cap;
	struct droce_pkt pk[5];
	struct droce_seq_rx rx;
	struct droce_seq_tx tx;

	/* write FIRST/MIDDLE/LAST then its ACK */
	parse_all("rc_write_v4.pcap", &cap, pk, 4);
	droce_seq_rx_init(&rx, 256, 200);
	droce_seq_tx_init(&tx, 256, 200);
	for (size_t i = 0; i < 3; i++) {
		sent(&tx, &cap, pk, i);
		cr_assert_eq(RX_CHECK(&rx, cap, pk, i), DROCE_SEQ_OK, "write frame %zu", i + 1);
	}
	cr_assert_eq(TX_CHECK(&tx, cap, pk, 3), DROCE_SEQ_OK);
	cr_assert_eq(tx.una, 203);
	test_pcap_free(&cap);

	/* READ 400 (two responses), then a SEND two PSNs later, then its ACK */
	parse_all("rc_read_v4.pcap", &cap, pk, 5);
	droce_seq_rx_init(&rx, 256, 300);
	droce_seq_tx_init(&tx, 256, 300);
	sent(&tx, &cap, pk, 0);
	cr_assert_eq(RX_CHECK(&rx, cap, pk, 0), DROCE_SEQ_OK);
	cr_assert_eq(rx.epsn, 302);
	cr_assert_eq(TX_CHECK(&tx, cap, pk, 1), DROCE_SEQ_OK);
	cr_assert_eq(TX_CHECK(&tx, cap, pk, 2), DROCE_SEQ_OK);
	sent(&tx, &cap, pk, 3);
	cr_assert_eq(RX_CHECK(&rx, cap, pk, 3), DROCE_SEQ_OK);
	cr_assert_eq(TX_CHECK(&tx, cap, pk, 4), DROCE_SEQ_OK);
	cr_assert_eq(TX_CHECK(&tx, cap, pk, 2), DROCE_SEQ_UNEXPECTED_RESP, "read already done");
	test_pcap_free(&cap);
}

/* ---- the fast parse of untagged IPv4 frames against the general parser ---- */

/* droce_parse_frame (its fast path for untagged IPv4) and the general parser
 * alone give @f the same verdict and, when they accept it, the same result. */
static void
parsers_agree(const uint8_t *f, uint32_t len, const char *what, size_t frame, uint32_t at)
{
	struct droce_pkt p, q;
	enum droce_drop a, b;

	memset(&p, 0x5a, sizeof(p));
	memset(&q, 0xa5, sizeof(q));
	a = droce_parse_frame(f, len, &p);
	b = droce_parse_frame_ref(f, len, &q);
	cr_assert_eq(a, b, "%s frame %zu (change at %u): fast %s, general %s", what, frame, at,
		     droce_drop_name[a], droce_drop_name[b]);
	if (a != DROCE_DROP_NONE)
		return;
	cr_assert_eq(p.info, q.info);
	cr_assert_eq(p.opcode, q.opcode);
	cr_assert_eq(p.ipv6, q.ipv6);
	cr_assert_eq(p.vlan, q.vlan);
	cr_assert_eq(p.vlan_tci, q.vlan_tci);
	cr_assert_eq(p.traffic_class, q.traffic_class);
	cr_assert_eq(p.l3_off, q.l3_off);
	cr_assert_eq(p.l4_off, q.l4_off);
	cr_assert_eq(p.bth_off, q.bth_off);
	cr_assert_eq(p.payload_off, q.payload_off);
	cr_assert_eq(p.payload_len, q.payload_len);
	cr_assert_eq(p.payload, q.payload);
	cr_assert_eq(p.pad, q.pad);
	cr_assert_eq(p.udp_sport, q.udp_sport);
	cr_assert_arr_eq(p.src_gid, q.src_gid, 16);
	cr_assert_arr_eq(p.dst_gid, q.dst_gid, 16);
	cr_assert_eq(p.frame_len, q.frame_len, "%s frame %zu (change at %u)", what, frame, at);
}

/* The IPv4 header checksum and the ICRC made right again after a change
 * (offsets of the frame before it), so the checks behind them decide. */
static void
reseal(uint8_t *f, uint32_t len, const struct droce_pkt *ref)
{
	if (!ref->ipv6) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + ref->l3_off);
		/* over the header length of the frame before the change: a
		 * changed IHL must not make the sum read past the buffer */
		uint16_t sum;

		ip->hdr_checksum = 0;
		sum = rte_raw_cksum(ip, ref->l4_off - ref->l3_off);
		ip->hdr_checksum = sum == 0xffff ? sum : (uint16_t)~sum;
	}
	if (ref->frame_len <= len)
		droce_icrc_store(f + ref->frame_len - DROCE_ICRC_LEN,
				 droce_icrc_flat(f + ref->l3_off,
						 ref->frame_len - DROCE_ICRC_LEN - ref->l3_off, ref->ipv6));
}

Test(vectors, fast_parse_agrees_with_the_general_parser)
{
	uint32_t seed = 0xfa57;
	unsigned int n = 0;

	for (size_t c = 0; c < RTE_DIM(good_captures); c++) {
		struct test_capture cap;

		load(good_captures[c], &cap);
		for (size_t i = 0; i < cap.count; i++) {
			uint32_t len = cap.frames[i].len;
			uint8_t *copy = malloc(len);
			struct droce_pkt ref;

			cr_assert_eq(droce_parse_frame_ref(cap.frames[i].data, len, &ref), DROCE_DROP_NONE);
			parsers_agree(cap.frames[i].data, len, good_captures[c], i + 1, 0);
			/* every truncation */
			for (uint32_t l = 0; l < len; l++)
				parsers_agree(cap.frames[i].data, l, good_captures[c], i + 1, l);
			/* every header byte changed: as received (checksums then fail),
			 * and resealed (the checks behind the checksums decide) */
			for (uint32_t b = 12; b < ref.payload_off && b < len; b++) {
				for (int sealed = 0; sealed < 2; sealed++) {
					memcpy(copy, cap.frames[i].data, len);
					seed = seed * 1103515245u + 12345u;
					copy[b] ^= (uint8_t)(seed >> 16 | 1u);
					if (sealed)
						reseal(copy, len, &ref);
					parsers_agree(copy, len, good_captures[c], i + 1, b);
					n++;
				}
			}
			/* the lengths that must agree, each off by a little, resealed */
			for (int d = -5; d <= 5; d++) {
				static const uint32_t at[] = { 16, 17, 38, 39 }; /* IPv4 total, UDP length */

				if (ref.ipv6 || ref.vlan || d == 0)
					continue;
				for (size_t k = 0; k < RTE_DIM(at); k++) {
					memcpy(copy, cap.frames[i].data, len);
					copy[at[k]] = (uint8_t)(copy[at[k]] + d);
					reseal(copy, len, &ref);
					parsers_agree(copy, len, good_captures[c], i + 1, at[k]);
				}
			}
			free(copy);
		}
		test_pcap_free(&cap);
	}
	cr_assert_gt(n, 1000);
}

/* ---- robustness: nothing about a received frame is trusted ---- */

Test(robustness, every_truncation_is_rejected)
{
	for (size_t c = 0; c < RTE_DIM(good_captures); c++) {
		struct test_capture cap;

		load(good_captures[c], &cap);
		for (size_t i = 0; i < cap.count; i++) {
			struct droce_pkt p;
			uint32_t full;

			cr_assert_eq(droce_parse_frame(cap.frames[i].data, cap.frames[i].len, &p),
				     DROCE_DROP_NONE);
			full = p.frame_len;
			for (uint32_t len = 0; len < full; len++) {
				/* a heap copy of exactly len bytes, so ASan sees any over-read */
				uint8_t *copy = malloc(len ? len : 1);

				memcpy(copy, cap.frames[i].data, len);
				cr_assert_neq(droce_parse_frame(copy, len, &p), DROCE_DROP_NONE,
					      "%s frame %zu accepted at %u of %u bytes", good_captures[c],
					      i + 1, len, full);
				free(copy);
			}
		}
		test_pcap_free(&cap);
	}
}

Test(robustness, corrupted_bytes_never_pass_unnoticed)
{
	uint32_t seed = 0x5eed;
	unsigned int accepted_masked = 0;

	for (size_t c = 0; c < RTE_DIM(good_captures); c++) {
		struct test_capture cap;

		load(good_captures[c], &cap);
		for (size_t i = 0; i < cap.count; i++) {
			uint32_t len = cap.frames[i].len;
			struct droce_pkt ref;

			cr_assert_eq(droce_parse_frame(cap.frames[i].data, len, &ref), DROCE_DROP_NONE);
			for (uint32_t b = 14; b < ref.frame_len; b++) {
				uint8_t *copy = malloc(len);
				struct droce_pkt p;
				bool masked;

				memcpy(copy, cap.frames[i].data, len);
				seed = seed * 1103515245u + 12345u;
				copy[b] ^= (uint8_t)(1u << ((seed >> 16) & 7));
				if (droce_parse_frame(copy, len, &p) == DROCE_DROP_NONE) {
					/* only ICRC-masked fields not covered by another check */
					uint32_t o = b - ref.l3_off;
					masked = ref.ipv6 && ((o < 4 && !(o == 0 && (copy[b] >> 4) != 6)) ||
							      o == 7);
					masked = masked || b == ref.l4_off + 6u || b == ref.l4_off + 7u ||
						 b == ref.bth_off + 4u || (ref.vlan && b < ref.l3_off);
					cr_assert(masked, "%s frame %zu: flip at byte %u accepted",
						  good_captures[c], i + 1, b);
					accepted_masked++;
				}
				free(copy);
			}
		}
		test_pcap_free(&cap);
	}
	cr_assert_gt(accepted_masked, 0, "masked fields (FECN/BECN, flow label) are not checked");
}

Test(robustness, random_frames_do_not_crash)
{
	uint32_t seed = 42;
	unsigned int accepted = 0;

	for (int n = 0; n < 20000; n++) {
		uint32_t len;
		uint8_t *buf;
		struct droce_pkt p;

		seed = seed * 1103515245u + 12345u;
		len = (seed >> 8) % 400;
		buf = malloc(len ? len : 1);
		for (uint32_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (uint8_t)(seed >> 16);
		}
		/* make most of them look like RoCEv2 so the deeper checks run */
		if (len > 42 && (n & 1)) {
			buf[12] = 0x08; buf[13] = 0x00; buf[14] = 0x45; buf[23] = 17;
			buf[36] = 0x12; buf[37] = 0xb7;
		}
		accepted += droce_parse_frame(buf, len, &p) == DROCE_DROP_NONE;
		free(buf);
	}
	cr_assert_eq(accepted, 0, "random bytes never pass the ICRC and checksums");
}
