/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 Invariant CRC.  CRC-32 (Ethernet polynomial, zlib conventions) over
 * 8 bytes of 0xff, then IP, UDP, BTH and everything up to the ICRC, with the
 * variant fields (IPv4 TOS/TTL/checksum, IPv6 class/flow/hop limit, UDP
 * checksum, BTH FECN/BECN/resv) read as all ones.  Computed incrementally so
 * header and payload may sit in different buffers or mbuf segments.
 */
#ifndef DROCE_ICRC_H
#define DROCE_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRC backends: all compute zlib's crc32(crc, buf, len). */
enum droce_crc_backend {
	DROCE_CRC_ISAL,  /* ISA-L crc32_gzip_refl (vectorised, PCLMULQDQ) */
	DROCE_CRC_ZLIB,  /* zlib crc32 */
	DROCE_CRC_TABLE, /* portable slice-by-16, no dependency */
	DROCE_CRC_CLMUL, /* PCLMULQDQ fold, one chain (short spans); the table below 16 B */
	DROCE_CRC_AUTO,  /* droce_crc32: the table below 16 B, ISA-L (else clmul) from there */
	DROCE_CRC_BACKEND_COUNT
};

extern const char *const droce_crc_backend_name[DROCE_CRC_BACKEND_COUNT];

/* True when the backend was compiled in. */
bool droce_crc_backend_available(enum droce_crc_backend b);

/* Tests and the benchmark: @on false turns the carry-less multiplication
 * paths off (the table, the template constant and the receive cache run, as
 * on a CPU without PCLMULQDQ); true turns them back on where the CPU has
 * them.  Returns whether they were on.  Not for use while engines run. */
bool droce_crc_clmul_enable(bool on);

/* zlib-style CRC-32 with an explicit backend (for the benchmark and tests). */
uint32_t droce_crc32_with(enum droce_crc_backend b, uint32_t crc, const void *buf, size_t len);

/* zlib-style CRC-32, the backend chosen by length (DROCE_CRC_AUTO). */
uint32_t droce_crc32(uint32_t crc, const void *buf, size_t len);

/* zlib-style crc32(0, 8 x 0xff): the running ICRC after the bytes that stand
 * for the LRH (the raw register is its complement, 0xdebb20e3). */
#define DROCE_ICRC_SEED 0x2144df1cu

/*
 * Starts an ICRC over the headers of a frame: @l3 points at the IP header,
 * @len covers at least IP + UDP + BTH (the masked part) and may run on.  Returns a running CRC to
 * pass to droce_icrc_update() for the payload and pad, then to
 * droce_icrc_finish().
 */
uint32_t droce_icrc_begin(const uint8_t *l3, size_t len, bool ipv6);

static inline uint32_t
droce_icrc_update(uint32_t crc, const void *buf, size_t len)
{
	return droce_crc32(crc, buf, len);
}

/* The ICRC value; it goes on the wire least significant byte first. */
static inline uint32_t droce_icrc_finish(uint32_t crc) { return crc; }

/* Stores / loads an ICRC value in wire order. */
static inline void
droce_icrc_store(uint8_t *p, uint32_t icrc)
{
	p[0] = (uint8_t)icrc;
	p[1] = (uint8_t)(icrc >> 8);
	p[2] = (uint8_t)(icrc >> 16);
	p[3] = (uint8_t)(icrc >> 24);
}

static inline uint32_t
droce_icrc_load(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * ICRC of a flat frame region: @l3 is the IP header, @len runs up to the
 * ICRC (headers, payload and pad).
 */
uint32_t droce_icrc_flat(const uint8_t *l3, size_t len, bool ipv6);

/*
 * The ICRC of a frame built from a header template, cheaper than
 * droce_icrc_flat: droce_icrc_tmpl_k() once per template (@l3: its IP and
 * UDP headers; lengths, id and checksums may hold anything), then per frame
 * droce_icrc_tmpl() over @len bytes at @l3 (IP header up to the ICRC, at
 * least IP + UDP + BTH), which reads only the per-packet bytes of the
 * headers (IP and UDP lengths, IPv4 id, the BTH) and takes the rest as the
 * template's.  Same value as droce_icrc_flat() when the frame's other IP and
 * UDP bytes are the template's (masked ones aside).  With PCLMULQDQ, a frame
 * with less than 256 bytes after the BTH is folded whole (one carry-less
 * fold over the masked headers and the rest reads every byte and costs
 * fewer instructions than the lookups) and @k is not used.
 */
uint32_t droce_icrc_tmpl_k(const uint8_t *l3, bool ipv6);
uint32_t droce_icrc_tmpl(uint32_t k, const uint8_t *l3, size_t len, bool ipv6);

/*
 * The receive side of the same: the constant of the last few flows seen
 * (by UDP source port, direct mapped), kept with the header bytes it stands
 * for (IP and UDP but lengths, id and masked bytes).  droce_icrc_rx() is
 * droce_icrc_flat() for a frame whose IP + UDP + BTH are whole: a frame of a
 * cached flow costs droce_icrc_tmpl(), another one droce_icrc_tmpl_k() more
 * (and takes the slot).  One per engine; zeroed is empty.  With PCLMULQDQ
 * the cache is not consulted for a frame with less than 256 bytes after the
 * BTH: it is folded whole.
 */
#define DROCE_ICRC_CACHE_SLOTS 16

struct droce_icrc_cache_slot {
	uint64_t key[6]; /* the header words that count, masked */
	uint32_t k;
	bool ipv6, valid;
};

struct droce_icrc_cache {
	struct droce_icrc_cache_slot slot[DROCE_ICRC_CACHE_SLOTS];
	uint64_t misses;
};

uint32_t droce_icrc_rx(struct droce_icrc_cache *c, const uint8_t *l3, size_t len, bool ipv6);

#endif /* DROCE_ICRC_H */
