/* SPDX-License-Identifier: BSD-3-Clause
 * droce-crc-bench: which CRC-32 should compute the RoCEv2 ICRC?
 *
 * Candidates, all of them the Ethernet/zlib CRC-32 (reflected 0xEDB88320):
 *   isal         ISA-L crc32_gzip_refl (seedable: continues across segments)
 *   zlib         zlib crc32 (seedable)
 *   table        droce's own slice-by-16 backend (seedable, no dependency)
 *   clmul        droce's PCLMULQDQ fold for short spans, one dependency chain
 *                (seedable; the table below 16 B, a PSHUFB shift for the last
 *                partial block)
 *   auto         droce_crc32(): the table below 16 B, ISA-L (or clmul) from 16 B
 *   dpdk-*       DPDK rte_net_crc_calc(RTE_NET_CRC32_ETH) with the scalar,
 *                SSE4.2/PCLMULQDQ and AVX512/VPCLMULQDQ algorithms.  It takes
 *                no seed, so it can only do a whole flat buffer at once: it is
 *                measured one-shot and could not by itself run the ICRC over
 *                header + payload segments.
 *
 * First checks every backend against zlib on random data (many lengths and
 * alignments, plus continuation for the seedable ones) and exits 1 on any
 * difference; then times each backend per buffer size, then the whole ICRC of
 * a frame with a 4 KiB payload through droce_icrc_flat(); then the
 * transports' template path per payload size: the ICRC from the template's
 * constant (droce_icrc_tmpl, transmit), through the receive cache
 * (droce_icrc_rx, a cached flow) against droce_icrc_flat, and the header
 * build (droce_tmpl_build against the field-by-field droce_build_headers).
 * No EAL needed.
 *
 *   droce-crc-bench [--json] [--time SECONDS_PER_CELL] [--sizes a,b,c]
 *   droce-crc-bench --transfer [--json] [--time S]: only the transfer probe
 *
 * The transfer probe (issue 27, scripts/targets): the one-thread limit of
 * what a 64 KiB RDMA WRITE at path MTU 4096 must do in droce, on the same
 * kind of buffers: for each of its 16 packets the transmit ICRC
 * (droce_icrc_tmpl), the receive ICRC (droce_icrc_rx, a cached flow) and
 * one copy of the payload into the destination (the MR); in Gb/s of payload.
 *
 * Over 800 lines because it holds the candidates, their check against zlib,
 * the frame and template timings and the transfer probe, which share the
 * frame set-up and the timing loop; the probe is the part to move out if it
 * grows.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

#if defined(DROCE_HAVE_ISAL) || __has_include(<isa-l/crc.h>)
#include <isa-l/crc.h>
#define HAVE_ISAL 1
#else
#define HAVE_ISAL 0
#endif

#include <rte_cpuflags.h>
#include <rte_net_crc.h>
#include <rte_vect.h>

#include "dataplane/icrc.h"
#include "dataplane/wire.h"
#include "dataplane/wire_tmpl.h"

#define MAX_BUF (1u << 20)
#define AUTO_NAME (HAVE_ISAL ? "auto: table below 16 B, isal from 16 B" : "auto: table below 16 B, clmul from 16 B")
#define ALIGN_SLACK 64

typedef uint32_t (*crc_fn)(uint32_t seed, const uint8_t *buf, size_t len);

struct backend {
	const char *name;
	crc_fn fn;
	int dpdk_alg;  /* >= 0: DPDK algorithm (one-shot, seed ignored) */
	bool seeded;   /* can continue from a previous CRC */
	bool available;
	const char *why_not;
};

/* ---- the candidates, all called as crc(seed, buf, len) ---- */

#if HAVE_ISAL
static uint32_t
crc_isal(uint32_t seed, const uint8_t *buf, size_t len)
{
	return crc32_gzip_refl(seed, buf, len);
}
#endif

static uint32_t
crc_zlib(uint32_t seed, const uint8_t *buf, size_t len)
{
	return (uint32_t)crc32(seed, buf, (uInt)len);
}

static uint32_t
crc_table(uint32_t seed, const uint8_t *buf, size_t len)
{
	return droce_crc32_with(DROCE_CRC_TABLE, seed, buf, len);
}

static uint32_t
crc_clmul(uint32_t seed, const uint8_t *buf, size_t len)
{
	return droce_crc32_with(DROCE_CRC_CLMUL, seed, buf, len);
}

static uint32_t
crc_auto(uint32_t seed, const uint8_t *buf, size_t len)
{
	return droce_crc32(seed, buf, len);
}

static uint32_t
crc_dpdk(uint32_t seed, const uint8_t *buf, size_t len)
{
	(void)seed; /* rte_net_crc_calc has no seed */
	return rte_net_crc_calc(buf, (uint32_t)len, RTE_NET_CRC32_ETH);
}

static struct backend backends[] = {
#if HAVE_ISAL
	{ "isal", crc_isal, -1, true, true, NULL },
#else
	{ "isal", NULL, -1, true, false, "built without ISA-L" },
#endif
	{ "zlib", crc_zlib, -1, true, true, NULL },
	{ "table", crc_table, -1, true, true, NULL },
	{ "clmul", crc_clmul, -1, true, true, NULL },
	{ "auto", crc_auto, -1, true, true, NULL },
	{ "dpdk-scalar", crc_dpdk, RTE_NET_CRC_SCALAR, false, true, NULL },
	{ "dpdk-sse42", crc_dpdk, RTE_NET_CRC_SSE42, false, true, NULL },
	{ "dpdk-avx512", crc_dpdk, RTE_NET_CRC_AVX512, false, true, NULL },
};

#define NB_BACKENDS (sizeof(backends) / sizeof(backends[0]))

static void
select_backend(const struct backend *b)
{
	if (b->dpdk_alg >= 0)
		rte_net_crc_set_alg((enum rte_net_crc_alg)b->dpdk_alg);
}

/* DPDK picks an algorithm only if the CPU has it; otherwise it silently
 * falls back, and the row would be mislabelled.  Check the same flags. */
static void
check_dpdk_cpu(void)
{
	for (size_t i = 0; i < NB_BACKENDS; i++) {
		struct backend *b = &backends[i];

		if (b->fn == crc_clmul && !droce_crc_backend_available(DROCE_CRC_CLMUL)) {
			b->available = false;
			b->why_not = "CPU lacks PCLMULQDQ/SSE4.1";
		}
		if (b->dpdk_alg == RTE_NET_CRC_SSE42 &&
		    !(rte_cpu_get_flag_enabled(RTE_CPUFLAG_SSE4_2) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_PCLMULQDQ) > 0)) {
			b->available = false;
			b->why_not = "CPU lacks SSE4.2/PCLMULQDQ";
		}
		if (b->dpdk_alg == RTE_NET_CRC_AVX512 &&
		    !(rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512BW) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512DQ) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512VL) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_VPCLMULQDQ) > 0)) {
			b->available = false;
			b->why_not = "CPU lacks AVX512F/BW/DQ/VL + VPCLMULQDQ";
		}
	}
}

/* ---- random data ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void
fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rng() >> 56);
}

/* ---- correctness against zlib ---- */

static unsigned int
check_backends(const uint8_t *data)
{
	static const size_t lens[] = { 0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65,
				       127, 128, 255, 256, 257, 1000, 1024, 1500, 4093,
				       4096, 9000, 65535, 65536, MAX_BUF };
	static const size_t offs[] = { 0, 1, 3, 13 };
	unsigned int bad = 0;

	for (size_t i = 0; i < NB_BACKENDS; i++) {
		const struct backend *b = &backends[i];

		if (!b->available)
			continue;
		select_backend(b);
		for (size_t l = 0; l < RTE_DIM(lens); l++) {
			for (size_t o = 0; o < RTE_DIM(offs); o++) {
				const uint8_t *p = data + offs[o];
				uint32_t want = (uint32_t)crc32(0, p, (uInt)lens[l]);
				uint32_t got = b->fn(0, p, lens[l]);

				if (got != want) {
					fprintf(stderr, "MISMATCH %s len %zu offset %zu: 0x%08x, zlib 0x%08x\n",
						b->name, lens[l], offs[o], got, want);
					bad++;
				}
			}
		}
		/* "123456789" -> 0xcbf43926, the CRC-32 check value */
		if (b->fn(0, (const uint8_t *)"123456789", 9) != 0xcbf43926u) {
			fprintf(stderr, "MISMATCH %s: CRC-32 check value\n", b->name);
			bad++;
		}
		if (!b->seeded)
			continue;
		/* Continuation: crc(crc(a), b) == crc(a || b) at assorted split points,
		 * and from the ICRC seed (8 bytes of 0xff folded in). */
		for (int t = 0; t < 64; t++) {
			size_t len = 1 + rng() % 9000, cut = rng() % (len + 1);
			uint32_t want = (uint32_t)crc32(0, data, (uInt)len);
			uint32_t got = b->fn(b->fn(0, data, cut), data + cut, len - cut);
			uint32_t want_seed = (uint32_t)crc32(DROCE_ICRC_SEED, data, (uInt)len);
			uint32_t got_seed = b->fn(DROCE_ICRC_SEED, data, len);

			if (got != want || got_seed != want_seed) {
				fprintf(stderr, "MISMATCH %s continuing at %zu of %zu\n", b->name, cut,
					len);
				bad++;
			}
		}
	}
	return bad;
}

/* ---- timing ---- */

static double
now(void)
{
	struct timespec ts;

	/* the thread's CPU time, not the wall clock: on a shared machine the
	 * time other processes hold the core is not counted (cache pollution
	 * still is) */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;

struct cell {
	double gbps, ns;
	uint64_t iters;
};

/* Calls @b on @len bytes until @secs have passed (or 2^32 calls), in growing
 * batches so the clock is read rarely. */
static struct cell
time_backend(const struct backend *b, const uint8_t *buf, size_t len, double secs)
{
	uint64_t n = 0, batch = 1;
	uint32_t acc = 0;
	double t0, el;
	struct cell c;

	select_backend(b);
	/* Seed 0 for every call (the DPDK rows ignore it anyway): calls are
	 * independent, as for the packets of a burst, and every backend gets the
	 * same chance to overlap one call with the next. */
	for (int w = 0; w < 3; w++) /* warm caches and branch predictors */
		acc ^= b->fn(0, buf, len);
	t0 = now();
	do {
		for (uint64_t i = 0; i < batch; i++)
			acc ^= b->fn(0, buf, len);
		n += batch;
		el = now() - t0;
		if (el < secs / 16 && batch < (1u << 24))
			batch *= 2;
	} while (el < secs && n < (1ull << 32));
	sink = acc;
	c.iters = n;
	c.ns = el * 1e9 / (double)n;
	c.gbps = (double)len * (double)n / el / 1e9;
	return c;
}

/* ---- the ICRC of a real frame ---- */

/* The IPv4 path every frame here is built on: 198.18.0.1 -> 198.18.0.2
 * (RTE_IPV4 shifts a signed int: UB for 198.x), locally administered MACs,
 * UDP source port 0xc000. */
static void
bench_path_v4(struct droce_path *p)
{
	p->src_mac.addr_bytes[0] = 0x02;
	p->dst_mac.addr_bytes[0] = 0x02;
	droce_gid_from_ipv4(p->src_gid, rte_cpu_to_be_32(0xc6120001u));
	droce_gid_from_ipv4(p->dst_gid, rte_cpu_to_be_32(0xc6120002u));
	p->udp_sport = 0xc000;
}

struct icrc_result {
	size_t frame_len, covered;
	double ns_v4, ns_v6, ns_seg, gbps_v4;
	bool ok;
};

static void
time_icrc(const uint8_t *payload, uint32_t plen, double secs, struct icrc_result *r)
{
	static uint8_t frame4[8192], frame6[8192], hdrbuf[256];
	struct droce_path p4 = { 0 }, p6;
	struct droce_hdr_tmpl t4, t6;
	struct droce_pkt_fields f = {
		.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY),
		.pkey = 0xffff, .dqpn = 0x1234, .psn = 77,
		.reth = { .va = 0x7f0000001000ull, .rkey = 0xabc, .len = plen },
	};
	struct droce_pkt pkt;
	size_t len4, len6, hdr4, cov4, cov6;
	uint64_t n;
	uint32_t acc = 0;
	double t0, el;

	bench_path_v4(&p4);
	p6 = p4;
	p6.ipv6 = true;
	memset(p6.src_gid, 0, 16);
	memset(p6.dst_gid, 0, 16);
	p6.src_gid[0] = p6.dst_gid[0] = 0x20; /* 2001:2::1, 2001:2::2 */
	p6.src_gid[1] = p6.dst_gid[1] = 0x01;
	p6.src_gid[3] = p6.dst_gid[3] = 0x02;
	p6.src_gid[15] = 1;
	p6.dst_gid[15] = 2;
	droce_tmpl_init(&t4, &p4);
	droce_tmpl_init(&t6, &p6);
	len4 = droce_build_frame(&t4, frame4, sizeof(frame4), &f, payload, plen);
	len6 = droce_build_frame(&t6, frame6, sizeof(frame6), &f, payload, plen);
	r->ok = len4 && len6;
	if (r->ok) {
		enum droce_drop d4 = droce_parse_frame(frame4, (uint32_t)len4, &pkt);
		enum droce_drop d6 = droce_parse_frame(frame6, (uint32_t)len6, &pkt);

		if (d4 != DROCE_DROP_NONE || d6 != DROCE_DROP_NONE) {
			fprintf(stderr, "droce_parse_frame: IPv4 %s, IPv6 %s\n", droce_drop_name[d4],
				droce_drop_name[d6]);
			r->ok = false;
		}
	}
	if (!r->ok)
		return;
	cov4 = len4 - t4.l3_off - DROCE_ICRC_LEN; /* IP header .. pad */
	cov6 = len6 - t6.l3_off - DROCE_ICRC_LEN;
	/* header length as the builder lays it out */
	hdr4 = droce_build_headers(&t4, hdrbuf, sizeof(hdrbuf), &f, plen) - t4.l3_off;
	r->frame_len = len4;
	r->covered = cov4;

#define TIME_LOOP(expr, out)                                            \
	do {                                                            \
		n = 0;                                                  \
		t0 = now();                                             \
		do {                                                    \
			for (int i_ = 0; i_ < 1024; i_++)               \
				acc ^= (expr);                          \
			n += 1024;                                      \
			el = now() - t0;                                \
		} while (el < secs);                                    \
		(out) = el * 1e9 / (double)n;                           \
	} while (0)

	TIME_LOOP(droce_icrc_flat(frame4 + t4.l3_off, cov4, false), r->ns_v4);
	TIME_LOOP(droce_icrc_flat(frame6 + t6.l3_off, cov6, true), r->ns_v6);
	/* Headers and payload as two segments, as with an mbuf chain. */
	TIME_LOOP(droce_icrc_finish(droce_icrc_update(
			  droce_icrc_begin(frame4 + t4.l3_off, hdr4, false),
			  frame4 + t4.l3_off + hdr4, cov4 - hdr4)),
		  r->ns_seg);
#undef TIME_LOOP
	sink = acc;
	r->gbps_v4 = (double)cov4 / r->ns_v4;
}

/* ---- the template path per payload size ---- */

struct tmpl_result {
	uint32_t plen;
	size_t covered; /* IPv4: IP header .. pad */
	double flat4, tmpl4, rx4, flat6, tmpl6, build_ref, build_tmpl;
	double tbl_tmpl4, tbl_rx4; /* the table path (PCLMULQDQ off): constant, cache */
};

static const uint32_t tmpl_plens[] = { 0, 2, 16, 64, 256, 1024, 4096 };
#define NB_TMPL (sizeof(tmpl_plens) / sizeof(tmpl_plens[0]))

/* False when a template result disagrees with the flat ICRC or the reference builder. */
static bool
time_tmpl(const uint8_t *payload, uint32_t plen, double secs, struct tmpl_result *r)
{
	static uint8_t frame4[8192], frame6[8192], scratch[8192];
	static struct droce_icrc_cache cache;
	struct droce_path p4 = { 0 }, p6;
	struct droce_hdr_tmpl t4, t6, tb;
	struct droce_pkt_fields f = {
		.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY),
		.pkey = 0xffff, .dqpn = 0x1234, .psn = 77,
		.reth = { .va = 0x7f0000001000ull, .rkey = 0xabc, .len = plen },
	};
	size_t len4, len6, cov6;
	const uint8_t *l34, *l36;
	uint64_t n;
	uint32_t acc = 0;
	double t0, el;

	bench_path_v4(&p4);
	p6 = p4;
	p6.ipv6 = true;
	memset(p6.src_gid, 0, 16);
	memset(p6.dst_gid, 0, 16);
	p6.src_gid[0] = p6.dst_gid[0] = 0x20;
	p6.src_gid[1] = p6.dst_gid[1] = 0x01;
	p6.src_gid[3] = p6.dst_gid[3] = 0x02;
	p6.src_gid[15] = 1;
	p6.dst_gid[15] = 2;
	droce_tmpl_init(&t4, &p4);
	droce_tmpl_init(&t6, &p6);
	tb = t4; /* the same IPv4 id as frame4's */
	len4 = droce_build_frame(&t4, frame4, sizeof(frame4), &f, payload, plen);
	len6 = droce_build_frame(&t6, frame6, sizeof(frame6), &f, payload, plen);
	if (!len4 || !len6)
		return false;
	l34 = frame4 + t4.l3_off;
	l36 = frame6 + t6.l3_off;
	r->plen = plen;
	r->covered = len4 - t4.l3_off - DROCE_ICRC_LEN;
	cov6 = len6 - t6.l3_off - DROCE_ICRC_LEN;
	if (droce_icrc_tmpl(t4.icrc_k, l34, r->covered, false) != droce_icrc_flat(l34, r->covered, false) ||
	    droce_icrc_tmpl(t6.icrc_k, l36, cov6, true) != droce_icrc_flat(l36, cov6, true) ||
	    droce_icrc_rx(&cache, l34, r->covered, false) != droce_icrc_flat(l34, r->covered, false))
		return false;
	if (droce_tmpl_build(&tb, scratch, sizeof(scratch), &f, plen) != len4 - plen - (-plen & 3u) - 4 ||
	    memcmp(scratch, frame4, len4 - plen - (-plen & 3u) - 4) != 0)
		return false;

#define TIME_LOOP(expr, out)                                            \
	do {                                                            \
		n = 0;                                                  \
		t0 = now();                                             \
		do {                                                    \
			for (int i_ = 0; i_ < 1024; i_++)               \
				acc ^= (uint32_t)(expr);                \
			n += 1024;                                      \
			el = now() - t0;                                \
		} while (el < secs);                                    \
		(out) = el * 1e9 / (double)n;                           \
	} while (0)

	TIME_LOOP(droce_icrc_flat(l34, r->covered, false), r->flat4);
	TIME_LOOP(droce_icrc_tmpl(t4.icrc_k, l34, r->covered, false), r->tmpl4);
	TIME_LOOP(droce_icrc_rx(&cache, l34, r->covered, false), r->rx4);
	TIME_LOOP(droce_icrc_flat(l36, cov6, true), r->flat6);
	TIME_LOOP(droce_icrc_tmpl(t6.icrc_k, l36, cov6, true), r->tmpl6);
	{
		bool was = droce_crc_clmul_enable(false);

		if (droce_icrc_tmpl(t4.icrc_k, l34, r->covered, false) != droce_icrc_rx(&cache, l34, r->covered, false))
			return false;
		TIME_LOOP(droce_icrc_tmpl(t4.icrc_k, l34, r->covered, false), r->tbl_tmpl4);
		TIME_LOOP(droce_icrc_rx(&cache, l34, r->covered, false), r->tbl_rx4);
		droce_crc_clmul_enable(was);
	}
	TIME_LOOP(droce_build_headers(&tb, scratch, sizeof(scratch), &f, plen), r->build_ref);
	TIME_LOOP(droce_tmpl_build(&tb, scratch, sizeof(scratch), &f, plen), r->build_tmpl);
#undef TIME_LOOP
	sink = acc ^ scratch[20];
	return true;
}

/* ---- the transfer probe ---- */

#define XFER_MSG 65536u
#define XFER_MTU 4096u
#define XFER_PKTS (XFER_MSG / XFER_MTU)

/* ns per 64 KiB message: 16 frames, each through both ICRCs, its payload
 * copied into @dst; 0 when droce's two ICRCs disagree on a frame. */
static double
time_transfer(const uint8_t *src, uint8_t *dst, double secs)
{
	static uint8_t frames[XFER_PKTS][XFER_MTU + 128];
	static struct droce_icrc_cache cache;
	struct droce_path p = { 0 };
	struct droce_hdr_tmpl t;
	size_t len[XFER_PKTS], hdr;
	uint32_t acc = 0;
	uint64_t n = 0;
	double t0, el;

	bench_path_v4(&p);
	droce_tmpl_init(&t, &p);
	for (unsigned int k = 0; k < XFER_PKTS; k++) {
		struct droce_pkt_fields f = {
			.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_WRITE_ONLY),
			.pkey = 0xffff, .dqpn = 0x1234, .psn = k,
			.reth = { .va = 0x7f0000001000ull, .rkey = 0xabc, .len = XFER_MTU },
		};

		len[k] = droce_build_frame(&t, frames[k], sizeof(frames[k]), &f,
					   src + (size_t)k * XFER_MTU, XFER_MTU);
		if (len[k] == 0)
			return 0;
		if (droce_icrc_tmpl(t.icrc_k, frames[k] + t.l3_off, len[k] - t.l3_off - DROCE_ICRC_LEN,
				    false) != droce_icrc_rx(&cache, frames[k] + t.l3_off,
							    len[k] - t.l3_off - DROCE_ICRC_LEN, false))
			return 0;
	}
	hdr = len[0] - XFER_MTU - DROCE_ICRC_LEN; /* the payload's offset in a frame */
	t0 = now();
	do {
		for (int i = 0; i < 64; i++) {
			for (unsigned int k = 0; k < XFER_PKTS; k++) {
				const uint8_t *l3 = frames[k] + t.l3_off;
				size_t cov = len[k] - t.l3_off - DROCE_ICRC_LEN;

				acc ^= droce_icrc_tmpl(t.icrc_k, l3, cov, false);
				acc ^= droce_icrc_rx(&cache, l3, cov, false);
				memcpy(dst + (size_t)k * XFER_MTU, frames[k] + hdr, XFER_MTU);
			}
			n++;
		}
		el = now() - t0;
	} while (el < secs);
	sink = acc ^ dst[XFER_MSG - 1];
	return el * 1e9 / (double)n;
}

static int
transfer_main(uint8_t *data, double secs, bool json)
{
	uint8_t *dst = aligned_alloc(64, XFER_MSG);
	double ns;

	if (dst == NULL)
		return 2;
	ns = time_transfer(data, dst, secs);
	if (ns == 0 || memcmp(dst, data, XFER_MSG) != 0) {
		fprintf(stderr, "droce-crc-bench: the transfer probe's frames or copy are wrong\n");
		free(dst);
		return 1;
	}
	if (json)
		printf("{\"transfer_probe\": {\"msg\": %u, \"mtu\": %u, \"packets\": %u, "
		       "\"ns_per_msg\": %.1f, \"gbps\": %.3f}}\n",
		       XFER_MSG, XFER_MTU, XFER_PKTS, ns, XFER_MSG * 8.0 / ns);
	else
		printf("transfer probe: %u B at path MTU %u (%u packets: transmit ICRC, receive ICRC, "
		       "one copy each): %.1f ns per message, %.2f Gb/s of payload, one thread\n",
		       XFER_MSG, XFER_MTU, XFER_PKTS, ns, XFER_MSG * 8.0 / ns);
	free(dst);
	return 0;
}

/* ---- output ---- */

static void
size_label(char *out, size_t cap, size_t n)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(out, cap, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(out, cap, "%zu KiB", n >> 10);
	else
		snprintf(out, cap, "%zu B", n);
}

static void
cpu_model(char *out, size_t cap)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(out, cap, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (strncmp(line, "model name", 10) == 0 && c) {
			c += 2;
			c[strcspn(c, "\n")] = '\0';
			snprintf(out, cap, "%s", c);
			break;
		}
	}
	fclose(f);
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--json] [--time SECONDS_PER_CELL] [--sizes N,N,...]\n"
		"  benchmarks CRC-32 backends for the RoCEv2 ICRC (default 0.2 s per cell,\n"
		"  sizes 64,256,1024,4096,65536,1048576; at most %u bytes)\n"
		"       %s --transfer [--json] [--time SECONDS]\n"
		"  the transfer probe only: a 64 KiB WRITE's 16 packets at path MTU 4096,\n"
		"  each through the transmit and the receive ICRC and one copy\n",
		prog, MAX_BUF, prog);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "time", required_argument, NULL, 't' },
		{ "sizes", required_argument, NULL, 's' },
		{ "transfer", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t sizes[16] = { 64, 256, 1024, 4096, 65536, 1u << 20 };
	unsigned int nsizes = 6;
	struct cell cells[NB_BACKENDS][16];
	struct icrc_result ir = { 0 }, ir64 = { 0 };
	struct tmpl_result tr[NB_TMPL];
	bool json = false, transfer = false;
	double secs = 0.2;
	uint8_t *mem, *data;
	char cpu[256], lbl[32];
	int opt;

	while ((opt = getopt_long(argc, argv, "jt:s:xh", opts, NULL)) != -1) {
		switch (opt) {
		case 'x':
			transfer = true;
			break;
		case 'j':
			json = true;
			break;
		case 't':
			secs = strtod(optarg, NULL);
			if (!(secs > 0 && secs <= 10)) {
				fprintf(stderr, "--time: want 0 < seconds <= 10, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 's': {
			char *s = optarg, *end;

			nsizes = 0;
			while (*s && nsizes < RTE_DIM(sizes)) {
				unsigned long v = strtoul(s, &end, 0);

				if (end == s || v == 0 || v > MAX_BUF) {
					fprintf(stderr, "--sizes: bad size at '%s' (1..%u)\n", s, MAX_BUF);
					return 2;
				}
				sizes[nsizes++] = v;
				s = *end == ',' ? end + 1 : end;
				if (*end && *end != ',') {
					fprintf(stderr, "--sizes: want N,N,... got '%s'\n", optarg);
					return 2;
				}
			}
			break;
		}
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}

	/* Without EAL the max SIMD width is 0 and rte_net_crc_set_alg() quietly
	 * falls back to the scalar code; EAL's own default (256 on x86) refuses
	 * the AVX512 path unless --force-max-simd-bitwidth=512.  Allow 512 here so
	 * each row measures the algorithm it names. */
	rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512);
	check_dpdk_cpu();

	mem = aligned_alloc(64, MAX_BUF + ALIGN_SLACK);
	if (!mem) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	data = mem; /* 64-byte aligned; the check also runs at odd offsets */
	fill_random(mem, MAX_BUF + ALIGN_SLACK);
	if (transfer) {
		int rc = transfer_main(data, secs, json);

		free(mem);
		return rc;
	}

	if (check_backends(data) != 0) {
		fprintf(stderr, "droce-crc-bench: a backend disagrees with zlib; no timings\n");
		free(mem);
		return 1;
	}

	for (size_t b = 0; b < NB_BACKENDS; b++)
		for (unsigned int s = 0; s < nsizes; s++)
			if (backends[b].available)
				cells[b][s] = time_backend(&backends[b], data, sizes[s], secs);
	time_icrc(data, 4096, secs, &ir);
	time_icrc(data, 64, secs, &ir64);
	if (!ir.ok || !ir64.ok) {
		fprintf(stderr, "droce-crc-bench: droce did not build/accept its own 4 KiB frame\n");
		free(mem);
		return 1;
	}
	for (size_t k = 0; k < NB_TMPL; k++)
		if (!time_tmpl(data, tmpl_plens[k], secs, &tr[k])) {
			fprintf(stderr, "droce-crc-bench: the template path disagrees with the reference "
					"at %u B payload\n", tmpl_plens[k]);
			free(mem);
			return 1;
		}

	cpu_model(cpu, sizeof(cpu));
	if (json) {
		printf("{\n \"cpu\": \"%s\",\n \"seconds_per_cell\": %.3f,\n"
		       " \"agrees_with_zlib\": true,\n"
		       " \"droce_crc32_backend\": \"%s\",\n \"results\": [\n",
		       cpu, secs, AUTO_NAME);
		bool first = true;
		for (size_t b = 0; b < NB_BACKENDS; b++) {
			const struct backend *be = &backends[b];

			if (!be->available)
				continue;
			for (unsigned int s = 0; s < nsizes; s++) {
				printf("%s  {\"backend\": \"%s\", \"seeded\": %s, \"size\": %zu, "
				       "\"gbps\": %.3f, \"ns_per_call\": %.2f, \"calls\": %" PRIu64 "}",
				       first ? "" : ",\n", be->name, be->seeded ? "true" : "false",
				       sizes[s], cells[b][s].gbps, cells[b][s].ns, cells[b][s].iters);
				first = false;
			}
		}
		printf("\n ],\n \"unavailable\": [");
		first = true;
		for (size_t b = 0; b < NB_BACKENDS; b++)
			if (!backends[b].available) {
				printf("%s{\"backend\": \"%s\", \"why\": \"%s\"}", first ? "" : ", ",
				       backends[b].name, backends[b].why_not);
				first = false;
			}
		printf("],\n");
		for (int k = 0; k < 2; k++) {
			const struct icrc_result *r = k ? &ir64 : &ir;

			printf(" \"icrc_%s_payload\": {\"opcode\": \"RC_RDMA_WRITE_ONLY\", "
			       "\"frame_len\": %zu, \"covered_bytes\": %zu, \"ns_ipv4\": %.1f, "
			       "\"ns_ipv6\": %.1f, \"ns_ipv4_two_segments\": %.1f, "
			       "\"gbps_ipv4\": %.2f}%s\n",
			       k ? "64b" : "4k", r->frame_len, r->covered, r->ns_v4, r->ns_v6,
			       r->ns_seg, r->gbps_v4, ",");
		}
		printf(" \"template\": [\n");
		for (size_t k = 0; k < NB_TMPL; k++)
			printf("  {\"payload\": %u, \"covered_ipv4\": %zu, \"ns_flat_ipv4\": %.1f, "
			       "\"ns_tmpl_ipv4\": %.1f, \"ns_rx_cached_ipv4\": %.1f, \"ns_flat_ipv6\": %.1f, "
			       "\"ns_tmpl_ipv6\": %.1f, \"ns_build_headers\": %.1f, \"ns_tmpl_build\": %.1f, "
			       "\"ns_table_tmpl_ipv4\": %.1f, \"ns_table_rx_cached_ipv4\": %.1f}%s\n",
			       tr[k].plen, tr[k].covered, tr[k].flat4, tr[k].tmpl4, tr[k].rx4, tr[k].flat6,
			       tr[k].tmpl6, tr[k].build_ref, tr[k].build_tmpl, tr[k].tbl_tmpl4, tr[k].tbl_rx4,
			       k + 1 < NB_TMPL ? "," : "");
		printf(" ]\n}\n");
		free(mem);
		return 0;
	}

	printf("CRC-32 (Ethernet/zlib) throughput, GB/s (1e9 bytes/s), one thread, %.2f s per cell\n",
	       secs);
	printf("CPU: %s\n", cpu);
	printf("Correctness: every backend equals zlib crc32 on random data (0 B to 1 MiB, 4\n"
	       "alignments, check value, continuation across splits for seeded ones): ok\n\n");
	printf("%-13s %-7s", "backend", "seeded");
	for (unsigned int s = 0; s < nsizes; s++) {
		size_label(lbl, sizeof(lbl), sizes[s]);
		printf(" %9s", lbl);
	}
	printf("   ns@%zuB\n", sizes[0]);
	for (size_t b = 0; b < NB_BACKENDS; b++) {
		const struct backend *be = &backends[b];

		printf("%-13s %-7s", be->name, be->seeded ? "yes" : "no");
		if (!be->available) {
			printf(" (not measured: %s)\n", be->why_not);
			continue;
		}
		for (unsigned int s = 0; s < nsizes; s++)
			printf(" %9.2f", cells[b][s].gbps);
		printf("   %6.1f\n", cells[b][0].ns);
	}
	printf("\nThe same, ns per call (CPU time; calls independent, so one may overlap the next):\n");
	printf("%-13s %-7s", "backend", "seeded");
	for (unsigned int s = 0; s < nsizes; s++) {
		size_label(lbl, sizeof(lbl), sizes[s]);
		printf(" %9s", lbl);
	}
	printf("\n");
	for (size_t b = 0; b < NB_BACKENDS; b++) {
		const struct backend *be = &backends[b];

		if (!be->available)
			continue;
		printf("%-13s %-7s", be->name, be->seeded ? "yes" : "no");
		for (unsigned int s = 0; s < nsizes; s++)
			printf(" %9.1f", cells[b][s].ns);
		printf("\n");
	}
	printf("\nseeded = can continue a CRC across segments (header + payload mbufs).\n"
	       "dpdk-* = rte_net_crc_calc(RTE_NET_CRC32_ETH): no seed argument, so one-shot only;\n"
	       "         measured with the max SIMD bitwidth forced to 512 (EAL's default of 256\n"
	       "         disables the AVX512 path; without EAL everything falls back to scalar).\n");
	printf("\nICRC via droce_icrc_flat (droce_crc32 = %s), RC_RDMA_WRITE_ONLY:\n", AUTO_NAME);
	for (int k = 0; k < 2; k++) {
		const struct icrc_result *r = k ? &ir64 : &ir;

		printf("  %u B payload: frame %zu B, %zu B covered: IPv4 %.1f ns (%.2f GB/s), IPv6 %.1f ns,\n"
		       "    IPv4 as header + payload segments (begin/update/finish) %.1f ns\n",
		       k ? 64u : 4096u, r->frame_len, r->covered, r->ns_v4, r->gbps_v4, r->ns_v6,
		       r->ns_seg);
	}
	printf("\nThe transports' template path, RC_RDMA_WRITE_ONLY, ns per call (IPv4 unless marked):\n"
	       "  ICRC: flat = droce_icrc_flat, tmpl = droce_icrc_tmpl (transmit), rx = droce_icrc_rx\n"
	       "  (with PCLMULQDQ all three are the one fold); tbl tmpl / tbl rx = the table path\n"
	       "  (PCLMULQDQ off: the template constant, a cached flow); build: droce_build_headers\n"
	       "  (reference) / droce_tmpl_build\n");
	printf("  %8s %8s %7s %7s %7s %8s %8s %8s %8s %10s %10s\n", "payload", "covered", "flat", "tmpl", "rx",
	       "tbl tmpl", "tbl rx", "flat v6", "tmpl v6", "build ref", "build tmpl");
	for (size_t k = 0; k < NB_TMPL; k++)
		printf("  %8u %8zu %7.1f %7.1f %7.1f %8.1f %8.1f %8.1f %8.1f %10.1f %10.1f\n", tr[k].plen,
		       tr[k].covered, tr[k].flat4, tr[k].tmpl4, tr[k].rx4, tr[k].tbl_tmpl4, tr[k].tbl_rx4,
		       tr[k].flat6, tr[k].tmpl6, tr[k].build_ref, tr[k].build_tmpl);
	free(mem);
	return 0;
}
