/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: droce's frame parser (dataplane/wire.c).
 *
 * Any input is a frame.  The parser must never read outside it (ASan), and
 * what it accepts must be self-consistent: offsets and lengths inside the
 * frame, the opcode's headers present, and a frame rebuilt by droce's own
 * builder from the fields it read parses back to the same fields, payload
 * and ICRC verdict (so parser and builder agree on every opcode).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/icrc.h"
#include "dataplane/wire.h"

#define CHECK(c)                                                                              \
	do {                                                                                  \
		if (!(c))                                                                     \
			abort();                                                              \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[16384];
	struct droce_pkt p, q;
	struct droce_pkt_fields f, g;
	struct droce_hdr_tmpl t;
	struct droce_path path = { 0 };
	uint8_t *frame;
	size_t n;

	if (size > 65536)
		return 0;
	/* an exact-size heap copy, so ASan sees any read past the end */
	frame = malloc(size ? size : 1);
	if (frame == NULL)
		return 0;
	memcpy(frame, data, size);
	{
		/* the fast path for untagged IPv4 and the general parser agree */
		enum droce_drop why = droce_parse_frame(frame, (uint32_t)size, &p);

		CHECK(droce_parse_frame_ref(frame, (uint32_t)size, &q) == why);
		if (why != DROCE_DROP_NONE) {
			free(frame);
			return 0;
		}
		CHECK(q.info == p.info && q.opcode == p.opcode && q.ipv6 == p.ipv6 &&
		      q.vlan == p.vlan && q.vlan_tci == p.vlan_tci &&
		      q.traffic_class == p.traffic_class && q.l3_off == p.l3_off &&
		      q.l4_off == p.l4_off && q.bth_off == p.bth_off &&
		      q.payload_off == p.payload_off && q.payload_len == p.payload_len &&
		      q.payload == p.payload && q.pad == p.pad && q.udp_sport == p.udp_sport &&
		      memcmp(q.src_gid, p.src_gid, 16) == 0 && memcmp(q.dst_gid, p.dst_gid, 16) == 0 &&
		      q.frame_len == p.frame_len);
	}
	CHECK(p.info != NULL && p.frame_len <= size);
	CHECK(p.l3_off < p.l4_off && p.l4_off < p.bth_off);
	CHECK((size_t)p.bth_off + sizeof(struct droce_bth) <= p.frame_len);
	CHECK((size_t)p.payload_off + p.payload_len + p.pad + DROCE_ICRC_LEN == p.frame_len);
	CHECK(p.pad < 4);
	droce_pkt_read_fields(&p, frame, &f);
	CHECK(f.opcode == p.opcode);

	/* rebuild it with droce's builder from what the parser read */
	memcpy(&path.src_mac, frame + 6, 6);
	memcpy(&path.dst_mac, frame, 6);
	path.ipv6 = p.ipv6;
	memcpy(path.src_gid, p.src_gid, 16);
	memcpy(path.dst_gid, p.dst_gid, 16);
	path.vlan = p.vlan;
	path.vlan_id = p.vlan_tci & 0xfff;
	path.vlan_pcp = p.vlan_tci >> 13;
	path.traffic_class = p.traffic_class;
	path.udp_sport = p.udp_sport;
	droce_tmpl_init(&t, &path);
	if (p.pad != 0) {
		/* the builder pads to 4; a frame whose payload is already aligned
		 * but carries pad bytes cannot be rebuilt byte for byte */
		if (((p.payload_len + 3) & ~3u) - p.payload_len != p.pad) {
			free(frame);
			return 0;
		}
	}
	n = droce_build_frame(&t, again, sizeof(again), &f, frame + p.payload_off, p.payload_len);
	CHECK(n != 0);
	CHECK(droce_parse_frame(again, (uint32_t)n, &q) == DROCE_DROP_NONE);
	droce_pkt_read_fields(&q, again, &g);
	CHECK(memcmp(&f, &g, sizeof(f)) == 0);
	CHECK(q.payload_len == p.payload_len);
	CHECK(memcmp(again + q.payload_off, frame + p.payload_off, p.payload_len) == 0);
	free(frame);
	return 0;
}
