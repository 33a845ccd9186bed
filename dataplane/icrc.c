/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>

#ifdef DROCE_HAVE_ISAL
#include <isa-l/crc.h>
#endif
#include <zlib.h>

#include "icrc.h"
#include "wire.h"

const char *const droce_crc_backend_name[DROCE_CRC_BACKEND_COUNT] = {
	[DROCE_CRC_ISAL] = "isal",
	[DROCE_CRC_ZLIB] = "zlib",
	[DROCE_CRC_TABLE] = "table",
	[DROCE_CRC_CLMUL] = "clmul",
	[DROCE_CRC_AUTO] = "auto",
};

/* Slice-by-16 tables for the portable backend and short tails, built once at
 * load time: crc_tab[t][b] is the CRC register after byte b followed by t
 * zero bytes. */
static uint32_t crc_tab[16][256];
static bool have_clmul, cpu_clmul; /* in use; the CPU has it */

/* The same for the per-packet bytes of a header template that sit further
 * than 15 bytes from the end of the masked IP + UDP + BTH span
 * (droce_icrc_tmpl): IPv4 total length and id (37..34 bytes), IPv6 payload
 * length (55, 54). */
enum { FAR_V4 = 34, FAR_V6 = 54 };
static uint32_t crc_far_v4[4][256]; /* [t - 34] */
static uint32_t crc_far_v6[2][256]; /* [t - 54] */

RTE_INIT(droce_crc_table_init)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 16; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = crc_tab[15][i];

		for (int t = 16; t <= FAR_V6 + 1; t++) {
			c = (c >> 8) ^ crc_tab[0][c & 0xff];
			if (t >= FAR_V4 && t < FAR_V4 + 4)
				crc_far_v4[t - FAR_V4][i] = c;
			if (t >= FAR_V6)
				crc_far_v6[t - FAR_V6][i] = c;
		}
	}
#if defined(RTE_ARCH_X86_64)
	__builtin_cpu_init();
	cpu_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("avx");
#endif
	have_clmul = cpu_clmul;
}

bool
droce_crc_clmul_enable(bool on)
{
	bool was = have_clmul;

	have_clmul = on && cpu_clmul;
	return was;
}

static inline uint32_t
load_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return rte_le_to_cpu_32(v);
}

/* The raw register over 16 / 8 / 4 little-endian bytes held in registers. */
static inline uint32_t
crc_w16(uint32_t c, uint64_t x, uint64_t y)
{
	uint32_t a = (uint32_t)x ^ c, b = (uint32_t)(x >> 32), d = (uint32_t)y,
		 e = (uint32_t)(y >> 32);

	return crc_tab[15][a & 0xff] ^ crc_tab[14][(a >> 8) & 0xff] ^
	       crc_tab[13][(a >> 16) & 0xff] ^ crc_tab[12][a >> 24] ^
	       crc_tab[11][b & 0xff] ^ crc_tab[10][(b >> 8) & 0xff] ^
	       crc_tab[9][(b >> 16) & 0xff] ^ crc_tab[8][b >> 24] ^
	       crc_tab[7][d & 0xff] ^ crc_tab[6][(d >> 8) & 0xff] ^
	       crc_tab[5][(d >> 16) & 0xff] ^ crc_tab[4][d >> 24] ^
	       crc_tab[3][e & 0xff] ^ crc_tab[2][(e >> 8) & 0xff] ^
	       crc_tab[1][(e >> 16) & 0xff] ^ crc_tab[0][e >> 24];
}

static inline uint32_t
crc_w8(uint32_t c, uint64_t x)
{
	uint32_t a = (uint32_t)x ^ c, b = (uint32_t)(x >> 32);

	return crc_tab[7][a & 0xff] ^ crc_tab[6][(a >> 8) & 0xff] ^
	       crc_tab[5][(a >> 16) & 0xff] ^ crc_tab[4][a >> 24] ^
	       crc_tab[3][b & 0xff] ^ crc_tab[2][(b >> 8) & 0xff] ^
	       crc_tab[1][(b >> 16) & 0xff] ^ crc_tab[0][b >> 24];
}

static inline uint32_t
crc_w4(uint32_t c, uint32_t x)
{
	uint32_t a = x ^ c;

	return crc_tab[3][a & 0xff] ^ crc_tab[2][(a >> 8) & 0xff] ^
	       crc_tab[1][(a >> 16) & 0xff] ^ crc_tab[0][a >> 24];
}

static inline uint64_t
load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return rte_le_to_cpu_64(v);
}

/* The raw register (no inversions) over @len bytes, slice-by-16. */
static inline uint32_t
crc_raw_table(uint32_t c, const uint8_t *p, size_t len)
{
	for (; len >= 16; p += 16, len -= 16)
		c = crc_w16(c, load_le64(p), load_le64(p + 8));
	if (len >= 8) {
		c = crc_w8(c, load_le64(p));
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		c = crc_w4(c, load_le32(p));
		p += 4;
		len -= 4;
	}
	while (len--)
		c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
	return c;
}

static uint32_t
crc32_table(uint32_t crc, const uint8_t *p, size_t len)
{
	return ~crc_raw_table(~crc, p, len);
}

#if defined(RTE_ARCH_X86_64)
#include <immintrin.h>
#define HAVE_CLMUL_CODE 1
/* AVX for the three-operand (VEX) forms: no register copies between the
 * multiplications */
#define CLMUL_FN __attribute__((target("pclmul,avx")))

/*
 * Carry-less multiplication (Intel's "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ"; constants of the bit-reflected Ethernet
 * polynomial as Linux's crc32-pclmul uses them: x^(128+32) and x^(128-32)
 * mod P, x^64 mod P, P' and floor(x^64 / P), all reflected).  The state is
 * 16 bytes standing for every byte so far; each next 16 bytes are folded in
 * (one dependency chain: two multiplications, two XORs and a load per 16
 * bytes, the fewest instructions per byte on a CPU without VPCLMULQDQ), a
 * last partial block is shifted in with PSHUFB, and the state is reduced
 * 128 -> 64 -> 32 bits with a Barrett reduction at the end.
 */
static const uint8_t clmul_shuf[48] = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

#define CLMUL_K43 _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL)

CLMUL_FN static inline __m128i
clmul_fold(__m128i x, __m128i k43, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k43, 0x00),
					   _mm_clmulepi64_si128(x, k43, 0x11)),
			     next);
}

/* The raw register of a 16-byte state. */
CLMUL_FN static inline uint32_t
clmul_reduce(__m128i x)
{
	const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124LL);
	const __m128i pu = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);
	const __m128i m32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i t;

	/* 128 -> 96 bits: the low half times x^96 mod P onto the high half */
	t = _mm_clmulepi64_si128(x, CLMUL_K43, 0x10);
	x = _mm_xor_si128(_mm_srli_si128(x, 8), t);
	/* 96 -> 64 bits */
	t = _mm_srli_si128(x, 4);
	x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, m32), k5, 0x00), t);
	/* Barrett: 64 -> 32 bits */
	t = x;
	x = _mm_clmulepi64_si128(_mm_and_si128(x, m32), pu, 0x10);
	x = _mm_clmulepi64_si128(_mm_and_si128(x, m32), pu, 0x00);
	x = _mm_xor_si128(x, t);
	return (uint32_t)_mm_extract_epi32(x, 1);
}

/*
 * The raw register after state @x (all bytes before @p) and the @n bytes at
 * @p; the 16 bytes before p + n must be readable (they are the message's:
 * the state covers at least 16).  A last partial block of t bytes: the
 * state's first t bytes are folded over 16 bytes onto its other 16 - t
 * followed by the t new ones (the last 16 bytes of the message, one load).
 */
CLMUL_FN static inline uint32_t
clmul_run(__m128i x, const uint8_t *p, size_t n)
{
	const __m128i k43 = CLMUL_K43;

	for (; n >= 32; p += 32, n -= 32) {
		x = clmul_fold(x, k43, _mm_loadu_si128((const __m128i *)p));
		x = clmul_fold(x, k43, _mm_loadu_si128((const __m128i *)(p + 16)));
	}
	if (n >= 16) {
		x = clmul_fold(x, k43, _mm_loadu_si128((const __m128i *)p));
		p += 16;
		n -= 16;
	}
	if (n) {
		__m128i shl = _mm_loadu_si128((const __m128i *)(clmul_shuf + n));
		__m128i shr = _mm_loadu_si128((const __m128i *)(clmul_shuf + 16 + n));
		__m128i b = _mm_blendv_epi8(_mm_loadu_si128((const __m128i *)(p + n - 16)),
					    _mm_shuffle_epi8(x, shr), shl);

		x = clmul_fold(_mm_shuffle_epi8(x, shl), k43, b);
	}
	return clmul_reduce(x);
}

/* The raw register from @c over @len >= 16 bytes. */
CLMUL_FN static uint32_t
crc_raw_clmul(uint32_t c, const uint8_t *p, size_t len)
{
	__m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)c));

	return clmul_run(x, p + 16, len - 16);
}

/* The short-span path: the table below 16 bytes, the fold from there. */
static inline uint32_t
crc32_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
	if (!have_clmul || len < 16)
		return ~crc_raw_table(~crc, p, len);
	return ~crc_raw_clmul(~crc, p, len);
}
#else
static inline uint32_t
crc32_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc32_table(crc, p, len);
}
#endif

/*
 * Chosen by length (droce-crc-bench, CPU time per call, this machine's AMD
 * EPYC: PCLMULQDQ and AVX, no AVX2 or VPCLMULQDQ): below 16 bytes the
 * slice-by-16 table (ISA-L's short path about 17 ns for 4-12 bytes, the
 * table 3-7 ns); from 16 bytes ISA-L: the one-chain fold is even with it up
 * to 224 bytes (64 B 9.0 / 7.8 ns) and ISA-L's parallel folds win from 256
 * (22 / 10 ns); without ISA-L the fold from 16 bytes.  The frame path
 * (icrc_clmul) folds headers and a short payload in one chain itself.
 */
#define CRC_SHORT 16

static inline uint32_t
crc32_auto(uint32_t crc, const uint8_t *p, size_t len)
{
	if (len < CRC_SHORT)
		return ~crc_raw_table(~crc, p, len);
#ifdef DROCE_HAVE_ISAL
	return crc32_gzip_refl(crc, p, len);
#else
	return crc32_clmul(crc, p, len);
#endif
}

static uint32_t
crc32_zlib(uint32_t crc, const uint8_t *p, size_t len)
{
	/* zlib takes uInt lengths; feed huge buffers in pieces. */
	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

bool
droce_crc_backend_available(enum droce_crc_backend b)
{
	switch (b) {
	case DROCE_CRC_ISAL:
#ifdef DROCE_HAVE_ISAL
		return true;
#else
		return false;
#endif
	case DROCE_CRC_ZLIB:
	case DROCE_CRC_TABLE:
	case DROCE_CRC_AUTO:
		return true;
	case DROCE_CRC_CLMUL:
		return have_clmul;
	default:
		return false;
	}
}

uint32_t
droce_crc32_with(enum droce_crc_backend b, uint32_t crc, const void *buf, size_t len)
{
	switch (b) {
#ifdef DROCE_HAVE_ISAL
	case DROCE_CRC_ISAL:
		return crc32_gzip_refl(crc, buf, len);
#endif
	case DROCE_CRC_ZLIB:
		return crc32_zlib(crc, buf, len);
	case DROCE_CRC_CLMUL:
		return crc32_clmul(crc, buf, len);
	case DROCE_CRC_AUTO:
		return crc32_auto(crc, buf, len);
	case DROCE_CRC_TABLE:
	default:
		return crc32_table(crc, buf, len);
	}
}

/* By length (crc32_auto above, scripts/bench-crc, README). */
uint32_t
droce_crc32(uint32_t crc, const void *buf, size_t len)
{
	return crc32_auto(crc, buf, len);
}

/*
 * The masked IP + UDP + BTH part, whole: the frame's words loaded, the
 * variant bytes set to ones in registers and fed to the slice-by-16 table.
 * No masked copy: bytes stored and read back at once by wider loads (what a
 * copy handed to a vectorised CRC is) stall on store forwarding, and a 40 or
 * 60 byte span is where the table is as fast as ISA-L.  Byte k of a word is
 * bits 8k..8k+7.
 */
static inline uint32_t
icrc_masked_ipv4(const uint8_t *l3)
{
	uint32_t c = ~DROCE_ICRC_SEED;

	/* IP: TOS (byte 1); TTL (8), checksum (10-11); UDP checksum (26-27); BTH resv8 (32) */
	c = crc_w16(c, load_le64(l3) | 0xff00ull, load_le64(l3 + 8) | 0xffff00ffull);
	c = crc_w16(c, load_le64(l3 + 16), load_le64(l3 + 24) | 0xffff0000ull);
	c = crc_w8(c, load_le64(l3 + 32) | 0xffull);
	return ~c;
}

static inline uint32_t
icrc_masked_ipv6(const uint8_t *l3)
{
	uint32_t c = ~DROCE_ICRC_SEED;

	/* vtc_flow but the version (bytes 0-3), hop limit (7); UDP checksum
	 * (46-47); BTH resv8 (52) */
	c = crc_w16(c, load_le64(l3) | 0xff000000ffffff0full, load_le64(l3 + 8));
	c = crc_w16(c, load_le64(l3 + 16), load_le64(l3 + 24));
	c = crc_w16(c, load_le64(l3 + 32), load_le64(l3 + 40) | 0xffff000000000000ull);
	c = crc_w8(c, load_le64(l3 + 48) | 0xff00000000ull);
	c = crc_w4(c, load_le32(l3 + 56));
	return ~c;
}

#ifdef HAVE_CLMUL_CODE
/*
 * The whole ICRC of a flat frame region by the fold: the 8 bytes of ones
 * with the CRC's initial register XORed in (00 00 00 00 ff ff ff ff, from a
 * zero register) and the first 8 IP bytes make the first block, the masked
 * bytes are set in registers as the blocks are loaded (no copy), then the
 * rest of the frame runs through the same chain: one pass over headers and
 * payload, no table lookups.  @len >= V4_SPAN / V6_SPAN.
 */
/* A payload this long goes to crc32_auto (ISA-L's parallel folds from 256
 * bytes) once the headers are folded: one chain is latency-bound.  Below it
 * the chain costs what ISA-L's own one-chain path does (droce-crc-bench, ns
 * per call: 64 B 9.0 / 7.8, 128 B 13.0 / 12.0, 192 B 17.7 / 16.2, 256 B
 * 22.4 / 9.8, clmul / isal) and far fewer instructions with the headers. */
#define ICRC_FOLD_MAX 255

/* The ICRC from state @x (the 8 bytes of ones and the headers) and the @n
 * bytes at @p (the 16 bytes before p + n are the frame's). */
CLMUL_FN static inline uint32_t
icrc_clmul_rest(__m128i x, const uint8_t *p, size_t n)
{
	if (unlikely(n > ICRC_FOLD_MAX)) {
		/* the headers' register, then on through crc32_auto */
		return crc32_auto(~clmul_reduce(x), p, n);
	}
	return ~clmul_run(x, p, n);
}

CLMUL_FN static uint32_t
icrc_clmul(const uint8_t *l3, size_t len, bool ipv6)
{
	const __m128i k43 = CLMUL_K43;
	__m128i x;

	/* byte k of a 64-bit half is bits 8k..8k+7 */
	if (!ipv6) {
		/* TOS (1); TTL (8), checksum (10-11); UDP checksum (26-27); BTH resv8 (32) */
		x = _mm_or_si128(_mm_slli_si128(_mm_loadl_epi64((const __m128i *)l3), 8),
				 _mm_set_epi64x(0xff00LL, (long long)0xffffffff00000000ull));
		x = clmul_fold(x, k43, _mm_or_si128(_mm_loadu_si128((const __m128i *)(l3 + 8)),
						    _mm_set_epi64x(0, 0xffff00ffLL)));
		x = clmul_fold(x, k43, _mm_or_si128(_mm_loadu_si128((const __m128i *)(l3 + 24)),
						    _mm_set_epi64x(0xffLL, 0xffff0000LL)));
		return icrc_clmul_rest(x, l3 + 40, len - 40);
	}
	/* class and flow label (0-3 but the version), hop limit (7); UDP
	 * checksum (46-47); BTH resv8 (52) */
	x = _mm_or_si128(_mm_slli_si128(_mm_loadl_epi64((const __m128i *)l3), 8),
			 _mm_set_epi64x((long long)0xff000000ffffff0full, (long long)0xffffffff00000000ull));
	x = clmul_fold(x, k43, _mm_loadu_si128((const __m128i *)(l3 + 8)));
	x = clmul_fold(x, k43, _mm_loadu_si128((const __m128i *)(l3 + 24)));
	x = clmul_fold(x, k43, _mm_or_si128(_mm_loadu_si128((const __m128i *)(l3 + 40)),
					    _mm_set_epi64x(0xff00000000LL, (long long)0xffff000000000000ull)));
	return icrc_clmul_rest(x, l3 + 56, len - 56);
}
#define ICRC_CLMUL(l3, len, ipv6) (have_clmul ? (int64_t)icrc_clmul(l3, len, ipv6) : -1)
#else
#define ICRC_CLMUL(l3, len, ipv6) ((int64_t)-1)
#endif

uint32_t
droce_icrc_begin(const uint8_t *l3, size_t len, bool ipv6)
{
	/* Masked copy of IP + UDP + BTH: at most 40 + 8 + 12 bytes. */
	uint8_t m[sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth)];
	size_t iplen = ipv6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr);
	size_t mlen = iplen + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth);
	uint32_t crc;

	if (len >= mlen) {
		int64_t f = ICRC_CLMUL(l3, len, ipv6);

		if (f >= 0)
			return (uint32_t)f;
		/* every frame: the masked part in registers, then the rest */
		crc = ipv6 ? icrc_masked_ipv6(l3) : icrc_masked_ipv4(l3);
		return len > mlen ? droce_crc32(crc, l3 + mlen, len - mlen) : crc;
	}
	/* shorter than IP + UDP + BTH (truncated input): a masked copy of what is
	 * there (the BTH is not whole, so its byte is not masked) */
	mlen = len;
	memcpy(m, l3, mlen);
	if (ipv6) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)m;

		if (mlen >= 4)
			ip6->vtc_flow |= rte_cpu_to_be_32(0x0fffffffu);
		if (mlen >= 8)
			ip6->hop_limits = 0xff;
	} else {
		struct rte_ipv4_hdr *ip4 = (struct rte_ipv4_hdr *)m;

		if (mlen >= 2)
			ip4->type_of_service = 0xff;
		if (mlen >= 9)
			ip4->time_to_live = 0xff;
		if (mlen >= 12)
			ip4->hdr_checksum = 0xffff;
	}
	if (mlen >= iplen + sizeof(struct rte_udp_hdr))
		((struct rte_udp_hdr *)(m + iplen))->dgram_cksum = 0xffff;
	return droce_crc32(DROCE_ICRC_SEED, m, mlen);
}

uint32_t
droce_icrc_flat(const uint8_t *l3, size_t len, bool ipv6)
{
	return droce_icrc_finish(droce_icrc_begin(l3, len, ipv6));
}


/*
 * ---- The ICRC of a frame built from a header template ----
 *
 * The raw CRC register is linear in (start value, bytes): the register after
 * the masked IP + UDP + BTH span is the register over the span with its
 * per-packet bytes zero (K, once per template) XOR, for each per-packet byte
 * b standing t bytes before the span's end, crc_tab[t][b] (the register after
 * b and t zero bytes).  Per-packet: IPv4 total length and id, IPv6 payload
 * length, UDP length, and the BTH but its masked byte 4 (opcode, flags,
 * P_Key, QPN, AckReq, PSN).  Everything else (MACs aside, which the ICRC does
 * not cover) is the template's: addresses, ports, protocol, flow label and
 * class (masked), hop limit / TTL (masked), checksums (masked).
 */
#define V4_SPAN 40u /* IPv4 20 + UDP 8 + BTH 12 */
#define V6_SPAN 60u /* IPv6 40 + UDP 8 + BTH 12 */

uint32_t
droce_icrc_tmpl_k(const uint8_t *l3, bool ipv6)
{
	uint8_t m[V6_SPAN];
	size_t span = ipv6 ? V6_SPAN : V4_SPAN;
	size_t ip = span - 20;

	/* IP and UDP from the template, the BTH zero but its masked byte */
	memcpy(m, l3, ip + 8);
	memset(m + ip + 8, 0, 12);
	m[ip + 8 + 4] = 0xff;
	if (ipv6) {
		m[0] |= 0x0f; /* class and flow label masked, version kept */
		memset(m + 1, 0xff, 3);
		m[4] = m[5] = 0;  /* payload length */
		m[7] = 0xff;      /* hop limit */
	} else {
		m[1] = 0xff;      /* TOS */
		memset(m + 2, 0, 4); /* total length, id */
		m[8] = 0xff;      /* TTL */
		m[10] = m[11] = 0xff; /* header checksum */
	}
	m[ip + 4] = m[ip + 5] = 0;    /* UDP length */
	m[ip + 6] = m[ip + 7] = 0xff; /* UDP checksum */
	return crc_raw_table(~DROCE_ICRC_SEED, m, span);
}

/* The BTH's per-packet bytes (all but byte 4), the last 12 bytes of the span:
 * words @w0 (bytes 0-3), @w1 (4-7) and @w2 (8-11) as loaded little-endian. */
static inline uint32_t
icrc_tmpl_bth(uint32_t w0, uint32_t w1, uint32_t w2)
{
	return crc_tab[11][w0 & 0xff] ^ crc_tab[10][(w0 >> 8) & 0xff] ^
	       crc_tab[9][(w0 >> 16) & 0xff] ^ crc_tab[8][w0 >> 24] ^
	       crc_tab[6][(w1 >> 8) & 0xff] ^ crc_tab[5][(w1 >> 16) & 0xff] ^
	       crc_tab[4][w1 >> 24] ^
	       crc_tab[3][w2 & 0xff] ^ crc_tab[2][(w2 >> 8) & 0xff] ^
	       crc_tab[1][(w2 >> 16) & 0xff] ^ crc_tab[0][w2 >> 24];
}

/* The raw register after the masked IP + UDP + BTH span of @l3 (V4_SPAN or
 * V6_SPAN bytes), from the template constant @k. */
static inline uint32_t
icrc_tmpl_span(uint32_t k, const uint8_t *l3, bool ipv6)
{
	uint32_t c, a, u;
	size_t span;

	if (ipv6) {
		span = V6_SPAN;
		a = load_le32(l3 + 4);   /* payload length in bytes 0-1 */
		u = load_le32(l3 + 44);  /* UDP length in bytes 0-1 */
		c = k ^ crc_far_v6[1][a & 0xff] ^ crc_far_v6[0][(a >> 8) & 0xff];
	} else {
		span = V4_SPAN;
		a = load_le32(l3 + 2);   /* total length, id */
		u = load_le32(l3 + 24);
		c = k ^ crc_far_v4[3][a & 0xff] ^ crc_far_v4[2][(a >> 8) & 0xff] ^
		    crc_far_v4[1][(a >> 16) & 0xff] ^ crc_far_v4[0][a >> 24];
	}
	c ^= crc_tab[15][u & 0xff] ^ crc_tab[14][(u >> 8) & 0xff];
	return c ^ icrc_tmpl_bth(load_le32(l3 + span - 12), load_le32(l3 + span - 8),
				 load_le32(l3 + span - 4));
}

uint32_t
droce_icrc_tmpl(uint32_t k, const uint8_t *l3, size_t len, bool ipv6)
{
	size_t span = ipv6 ? V6_SPAN : V4_SPAN;
	uint32_t c;

#ifdef HAVE_CLMUL_CODE
	/* a short frame in one fold; a long one's payload goes to ISA-L
	 * anyway, and the constant and lookups are cheaper than the headers'
	 * fold and reduction (droce-crc-bench: 256 B payload 16 / 20 ns) */
	if (likely(have_clmul) && len - span <= ICRC_FOLD_MAX)
		return icrc_clmul(l3, len, ipv6);
#endif
	c = ~icrc_tmpl_span(k, l3, ipv6);
	return len > span ? crc32_auto(c, l3 + span, len - span) : c;
}

/* The words of IP + UDP a template's constant depends on, with the bytes it
 * does not (lengths, id, masked) cleared: IPv4 at offsets 0, 8, 16, 20
 * (version/IHL, flags/fragment, protocol, addresses, ports), IPv6 at 0, 8 ..
 * 40 (version, next header, addresses, ports).  Little-endian words. */
static const uint64_t key_mask_v4[4] = {
	0xffff0000000000ffull, 0xffffffff0000ff00ull, ~0ull, 0x00000000ffffffffull,
};
static const uint64_t key_mask_v6[6] = {
	0x00ff0000000000f0ull, ~0ull, ~0ull, ~0ull, ~0ull, 0x00000000ffffffffull,
};

/* The table path of droce_icrc_rx (no PCLMULQDQ): through the cache. */
static __rte_noinline uint32_t
icrc_rx_cached(struct droce_icrc_cache *c, const uint8_t *l3, size_t len, bool ipv6)
{
	size_t span = ipv6 ? V6_SPAN : V4_SPAN;
	struct droce_icrc_cache_slot *s;
	uint64_t key[6], diff = 0;
	unsigned int n, i;
	uint32_t r;

	if (unlikely(len < span))
		return droce_icrc_flat(l3, len, ipv6);
	if (ipv6) {
		n = 6;
		for (i = 0; i < 6; i++)
			key[i] = load_le64(l3 + 8 * i) & key_mask_v6[i];
	} else {
		n = 4;
		key[0] = load_le64(l3) & key_mask_v4[0];
		key[1] = load_le64(l3 + 8) & key_mask_v4[1];
		key[2] = load_le64(l3 + 16) & key_mask_v4[2];
		key[3] = load_le64(l3 + 20) & key_mask_v4[3];
	}
	/* the slot by a hash of the destination address and the ports */
	s = &c->slot[((key[2] ^ key[n - 1]) * 0x9e3779b97f4a7c15ull) >> 60];
	static_assert(DROCE_ICRC_CACHE_SLOTS == 16, "4 hash bits");
	for (i = 0; i < n; i++)
		diff |= key[i] ^ s->key[i];
	if (unlikely(diff != 0 || !s->valid || s->ipv6 != ipv6)) {
		memcpy(s->key, key, sizeof(key[0]) * n);
		s->k = droce_icrc_tmpl_k(l3, ipv6);
		s->ipv6 = ipv6;
		s->valid = true;
		c->misses++;
	}
	r = ~icrc_tmpl_span(s->k, l3, ipv6);
	return len > span ? crc32_auto(r, l3 + span, len - span) : r;
}

uint32_t
droce_icrc_rx(struct droce_icrc_cache *c, const uint8_t *l3, size_t len, bool ipv6)
{
#ifdef HAVE_CLMUL_CODE
	size_t span = ipv6 ? V6_SPAN : V4_SPAN;

	/* a short frame: the fold needs no constant, the cache is not
	 * consulted; a long one as droce_icrc_tmpl */
	if (likely(have_clmul) && likely(len >= span) && len - span <= ICRC_FOLD_MAX)
		return icrc_clmul(l3, len, ipv6);
#endif
	return icrc_rx_cached(c, l3, len, ipv6);
}
