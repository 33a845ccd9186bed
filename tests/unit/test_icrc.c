/* SPDX-License-Identifier: BSD-3-Clause
 * CRC-32 backends and the ICRC against every frame of the scapy-made vectors.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <zlib.h>

#include "dataplane/icrc.h"
#include "dataplane/wire.h"
#include "pcap.h"

Test(crc32, check_value_every_backend)
{
	for (int b = 0; b < DROCE_CRC_BACKEND_COUNT; b++) {
		if (!droce_crc_backend_available(b))
			continue;
		cr_assert_eq(droce_crc32_with(b, 0, "123456789", 9), 0xcbf43926u, "%s",
			     droce_crc_backend_name[b]);
		cr_assert_eq(droce_crc32_with(b, 0, "", 0), 0);
	}
	cr_assert_eq(droce_crc32(0, "123456789", 9), 0xcbf43926u);
	cr_assert(droce_crc_backend_available(DROCE_CRC_ISAL), "ISA-L is the build's CRC backend");
}

Test(crc32, ff8_seed)
{
	const uint8_t ff[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	cr_assert_eq(droce_crc32(0, ff, 8), DROCE_ICRC_SEED);
	cr_assert_eq(~DROCE_ICRC_SEED, 0xdebb20e3u, "the raw-register form Linux rxe uses");
}

Test(crc32, backends_agree_and_split_anywhere)
{
	uint8_t buf[3000];
	uint32_t seed = 12345;

	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	for (size_t len = 0; len < sizeof(buf); len += 97) {
		uint32_t ref = droce_crc32_with(DROCE_CRC_ZLIB, 0, buf, len);

		for (int b = 0; b < DROCE_CRC_BACKEND_COUNT; b++)
			if (droce_crc_backend_available(b))
				cr_assert_eq(droce_crc32_with(b, 0, buf, len), ref, "%s len %zu",
					     droce_crc_backend_name[b], len);
		for (size_t cut = 0; cut <= len; cut += 13) {
			uint32_t c = droce_crc32(0, buf, cut);
			cr_assert_eq(droce_crc32(c, buf + cut, len - cut), ref);
		}
	}
}

/* Every backend available here on @len bytes at @buf + @off from @seed,
 * whole and split at @cut, against zlib's @ref; returns the backends checked. */
static unsigned int
check_backends(const uint8_t *buf, size_t off, size_t len, size_t cut, uint32_t seed, uint32_t ref)
{
	unsigned int checked = 0;

	for (int b = 0; b < DROCE_CRC_BACKEND_COUNT; b++) {
		if (!droce_crc_backend_available(b))
			continue;
		cr_assert_eq(droce_crc32_with(b, seed, buf + off, len), ref,
			     "%s len %zu off %zu", droce_crc_backend_name[b], len, off);
		cr_assert_eq(droce_crc32_with(b, droce_crc32_with(b, seed, buf + off, cut),
					      buf + off + cut, len - cut),
			     ref, "%s len %zu split %zu", droce_crc_backend_name[b], len, cut);
		checked++;
	}
	return checked;
}

/* Every backend against zlib at every length 0..700, random seeds and data,
 * every alignment 0..15, and split at a random point (continuation). */
Test(crc32, backends_vs_zlib_every_short_length)
{
	static uint8_t buf[1024];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int checked = 0;

#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(NEXT() >> 56);
	for (size_t len = 0; len <= 700; len++) {
		size_t off = len % 16;
		uint32_t seed = (uint32_t)NEXT();
		uint32_t ref = (uint32_t)crc32(seed, buf + off, (uInt)len);
		size_t cut = len ? (size_t)(NEXT() % (len + 1)) : 0;

		checked += check_backends(buf, off, len, cut, seed, ref);
		cr_assert_eq(droce_crc32(seed, buf + off, len), ref);
	}
#undef NEXT
	cr_assert_geq(checked, 701u * 4, "table, zlib, auto and ISA-L at least");
}

/* Every backend against zlib at 2,000 random lengths 0..4096 and random
 * alignments 0..63, with a random seed and split point. */
Test(crc32, backends_vs_zlib_random_lengths)
{
	static uint8_t buf[4096 + 64];
	uint64_t x = 0x2545f4914f6cdd1dull;

#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(NEXT() >> 56);
	for (int n = 0; n < 2000; n++) {
		size_t len = (size_t)(NEXT() % 4097), off = (size_t)(NEXT() % 64);
		size_t cut = (size_t)(NEXT() % (len + 1));
		uint32_t seed = (uint32_t)NEXT();
		uint32_t ref = (uint32_t)crc32(seed, buf + off, (uInt)len);

		check_backends(buf, off, len, cut, seed, ref);
	}
#undef NEXT
}

Test(crc32, clmul_is_there_on_x86)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("avx"))
		cr_assert(droce_crc_backend_available(DROCE_CRC_CLMUL));
#endif
	cr_assert(droce_crc_backend_available(DROCE_CRC_AUTO));
}

static const char *good_captures[] = {
	"rc_send_only_v4.pcap", "rc_write_v4.pcap",      "rc_read_v4.pcap",
	"rc_send_imm_v4.pcap",  "rc_atomic_v4.pcap",     "ud_send_v4.pcap",
	"rc_send_only_v6.pcap", "rc_send_zero_len_v4.pcap", "rc_retransmit_v4.pcap",
	"rc_write_imm_vlan_v4.pcap", "opcode_zoo_v4.pcap", "cnp_v4.pcap",
	"all_good.pcap",
};

/* ICRC position from the IP lengths, independent of droce's parser. */
static void
locate(const struct test_frame *f, size_t *l3, size_t *end, bool *v6)
{
	size_t off = 12;
	uint16_t et = (uint16_t)(f->data[off] << 8 | f->data[off + 1]);

	if (et == 0x8100) {
		off += 4;
		et = (uint16_t)(f->data[off] << 8 | f->data[off + 1]);
	}
	*l3 = off + 2;
	*v6 = et == 0x86dd;
	if (*v6)
		*end = *l3 + 40 + (size_t)(f->data[*l3 + 4] << 8 | f->data[*l3 + 5]);
	else
		*end = *l3 + (size_t)(f->data[*l3 + 2] << 8 | f->data[*l3 + 3]);
}

Test(icrc, every_good_vector_frame)
{
	unsigned int checked = 0;

	for (size_t c = 0; c < RTE_DIM(good_captures); c++) {
		struct test_capture cap;

		char rel[256];

		snprintf(rel, sizeof(rel), "vectors/%s", good_captures[c]);
		cr_assert_eq(test_pcap_load(test_data_path(rel), &cap), 0, "%s", rel);
		cr_assert_gt(cap.count, 0);
		for (size_t i = 0; i < cap.count; i++) {
			size_t l3, end;
			bool v6;
			uint32_t want, got, crc;

			locate(&cap.frames[i], &l3, &end, &v6);
			cr_assert_leq(end, cap.frames[i].len);
			want = droce_icrc_load(cap.frames[i].data + end - 4);
			got = droce_icrc_flat(cap.frames[i].data + l3, end - 4 - l3, v6);
			cr_assert_eq(got, want, "%s frame %zu: ICRC %08x want %08x", good_captures[c],
				     i + 1, got, want);
			/* incremental: the masked headers, then the rest in two pieces */
			size_t masked = (v6 ? 40 : 20) + 8 + 12, body = end - 4 - l3 - masked;
			crc = droce_icrc_begin(cap.frames[i].data + l3, masked, v6);
			crc = droce_icrc_update(crc, cap.frames[i].data + l3 + masked, body / 2);
			crc = droce_icrc_update(crc, cap.frames[i].data + l3 + masked + body / 2,
						body - body / 2);
			cr_assert_eq(droce_icrc_finish(crc), want);
			/* the residue check from vectors.md: CRC over data + trailer */
			crc = droce_icrc_begin(cap.frames[i].data + l3, end - l3, v6);
			cr_assert_eq(crc, 0x2144df1cu, "residue");
			checked++;
		}
		test_pcap_free(&cap);
	}
	cr_assert_eq(checked, 2 * 58, "58 frames, and all_good.pcap holds them again");
}

Test(icrc, wire_bytes_of_vector_1)
{
	struct test_capture cap;
	size_t l3, end;
	bool v6;

	cr_assert_eq(test_pcap_load(test_data_path("vectors/rc_send_only_v4.pcap"), &cap), 0);
	locate(&cap.frames[0], &l3, &end, &v6);
	cr_assert_eq(droce_icrc_flat(cap.frames[0].data + l3, end - 4 - l3, v6), 0x639231d4u,
		     "vectors.md #1: CRC value 0x639231d4");
	cr_assert_eq(cap.frames[0].data[end - 4], 0xd4, "stored least significant byte first");
	test_pcap_free(&cap);
}

Test(icrc, bad_icrc_vectors_fail)
{
	struct test_capture cap;

	cr_assert_eq(test_pcap_load(test_data_path("vectors/bad_icrc.pcap"), &cap), 0);
	cr_assert_eq(cap.count, 4);
	for (size_t i = 0; i < cap.count; i++) {
		size_t l3, end;
		bool v6;

		locate(&cap.frames[i], &l3, &end, &v6);
		cr_assert_neq(droce_icrc_flat(cap.frames[i].data + l3, end - 4 - l3, v6),
			      droce_icrc_load(cap.frames[i].data + end - 4), "bad_icrc frame %zu", i + 1);
	}
	test_pcap_free(&cap);
}

Test(icrc, variant_fields_do_not_change_it)
{
	struct test_capture cap;
	size_t l3, end;
	bool v6;
	uint8_t *f;
	uint32_t ref;

	cr_assert_eq(test_pcap_load(test_data_path("vectors/rc_send_only_v6.pcap"), &cap), 0);
	f = cap.frames[0].data;
	locate(&cap.frames[0], &l3, &end, &v6);
	cr_assert(v6);
	ref = droce_icrc_flat(f + l3, end - 4 - l3, v6);
	f[l3] ^= 0x0f;     /* traffic class, low nibble */
	f[l3 + 1] ^= 0xff; /* traffic class / flow label */
	f[l3 + 3] ^= 0x5a; /* flow label */
	f[l3 + 7] ^= 0x11; /* hop limit */
	f[l3 + 46] ^= 0x77; /* UDP checksum */
	f[l3 + 48 + 4] ^= 0xc0; /* FECN/BECN */
	cr_assert_eq(droce_icrc_flat(f + l3, end - 4 - l3, v6), ref);
	f[l3] ^= 0x10; /* the version nibble is covered */
	cr_assert_neq(droce_icrc_flat(f + l3, end - 4 - l3, v6), ref);
	f[l3] ^= 0x10;
	f[l3 + 48 + 5] ^= 0x01; /* DestQP is covered */
	cr_assert_neq(droce_icrc_flat(f + l3, end - 4 - l3, v6), ref);
	test_pcap_free(&cap);
}

/* The masked-in-registers path against a masked copy made here, on random
 * headers of both IP versions (every variant bit set or not), at lengths
 * from the bare headers to a payload of 300 bytes. */
Test(icrc, masked_headers_vs_reference)
{
	static uint8_t f[512], m[512];
	uint64_t x = 0x2545f4914f6cdd1dull;

#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	for (int round = 0; round < 400; round++) {
		bool v6 = round & 1;
		size_t ip = v6 ? 40 : 20, hdr = ip + 8 + 12, len = hdr + (size_t)(NEXT() % 301);
		uint32_t ref;

		for (size_t i = 0; i < len; i++)
			f[i] = (uint8_t)(NEXT() >> 56);
		memcpy(m, f, len);
		if (v6) {
			m[0] |= 0x0f;
			m[1] = m[2] = m[3] = m[7] = 0xff;
		} else {
			m[1] = m[8] = m[10] = m[11] = 0xff;
		}
		m[ip + 6] = m[ip + 7] = 0xff; /* UDP checksum */
		m[ip + 8 + 4] = 0xff;         /* FECN, BECN, resv6 */
		ref = (uint32_t)crc32(crc32(0, (const Bytef *)"\xff\xff\xff\xff\xff\xff\xff\xff", 8),
				      m, (uInt)len);
		cr_assert_eq(droce_icrc_flat(f, len, v6), ref, "v%d len %zu", v6 ? 6 : 4, len);
		cr_assert_eq(droce_icrc_begin(f, len, v6), ref);
	}
#undef NEXT
}

/* droce_icrc_flat, droce_icrc_begin and droce_icrc_rx at every length from
 * the bare headers to 700 bytes (every tail length of the fold), both IP
 * versions, with the carry-less fold and with the table path (PCLMULQDQ
 * off), against a masked copy through zlib. */
Test(icrc, flat_every_length)
{
	static uint8_t f[704], m[704];
	static struct droce_icrc_cache cache;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	bool was = droce_crc_clmul_enable(true);

	for (size_t i = 0; i < sizeof(f); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		f[i] = (uint8_t)(x >> 56);
	}
	for (int pass = 0; pass < 4; pass++) {
		bool v6 = pass & 1;
		size_t ip = v6 ? 40 : 20;

		if (pass == 2)
			droce_crc_clmul_enable(false);
		memcpy(m, f, sizeof(m));
		if (v6) {
			m[0] |= 0x0f;
			m[1] = m[2] = m[3] = m[7] = 0xff;
		} else {
			m[1] = m[8] = m[10] = m[11] = 0xff;
		}
		m[ip + 6] = m[ip + 7] = 0xff;
		m[ip + 8 + 4] = 0xff;
		for (size_t len = ip + 20; len <= 700; len++) {
			uint32_t ref = (uint32_t)crc32(
				crc32(0, (const Bytef *)"\xff\xff\xff\xff\xff\xff\xff\xff", 8), m, (uInt)len);

			cr_assert_eq(droce_icrc_flat(f, len, v6), ref, "v%d len %zu pass %d", v6 ? 6 : 4, len,
				     pass);
			cr_assert_eq(droce_icrc_finish(droce_icrc_begin(f, len, v6)), ref);
			cr_assert_eq(droce_icrc_rx(&cache, f, len, v6), ref);
		}
	}
	droce_crc_clmul_enable(was);
}
