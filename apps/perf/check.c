/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: The --check pattern: every message's bytes derived from its QP and
 * sequence number, and the check that reports the first wrong byte.
 */
#include "perf.h"

/* ---- the pattern --check uses ---- */

uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}


/* Message @seq of QP pair @qp: distinct 8-byte words, and the last byte is
 * (uint8_t)(seq + 1) so a poller sees every new message arrive. */
void
pattern_fill(uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq)
{
	uint64_t k = mix64(((uint64_t)qp << 44) ^ seq ^ 0x5eed);
	uint64_t n = len / 8, i;

	for (i = 0; i < n; i++) {
		uint64_t v = k + i * PAT_STEP;

		memcpy(p + 8 * i, &v, 8);
	}
	if (len % 8) {
		uint64_t v = k + n * PAT_STEP;

		memcpy(p + 8 * n, &v, len % 8);
	}
	if (len)
		p[len - 1] = (uint8_t)(seq + 1);
}

/* Offset of the first byte that differs from the pattern, or -1. */
int64_t
pattern_check(const uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq)
{
	uint64_t k = mix64(((uint64_t)qp << 44) ^ seq ^ 0x5eed);
	uint64_t n = len / 8, i;
	uint8_t w[8];

	for (i = 0; i < n; i++) {
		uint64_t v = k + i * PAT_STEP;

		if (8 * i + 8 == len)
			break; /* the last word holds the marker byte */
		if (memcmp(p + 8 * i, &v, 8) != 0) {
			memcpy(w, &v, 8);
			for (unsigned int b = 0; b < 8; b++)
				if (p[8 * i + b] != w[b])
					return (int64_t)(8 * i + b);
		}
	}
	for (uint64_t off = 8 * i; off < len; off++) {
		uint64_t v = k + (off / 8) * PAT_STEP;
		uint8_t want;

		memcpy(w, &v, 8);
		want = off == len - 1 ? (uint8_t)(seq + 1) : w[off % 8];
		if (p[off] != want)
			return (int64_t)off;
	}
	return -1;
}

/* --inject-error: a wrong byte where message @seq of pair @qp landed. */
void
inject(uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq)
{
	if (o.inject >= 0 && qp == 0 && seq == (uint64_t)o.inject)
		p[len / 2] ^= 0x10;
}

void __attribute__((noreturn))
check_failed(const char *what, uint32_t qp, uint64_t seq, const uint8_t *p, uint64_t len,
	     int64_t off)
{
	uint8_t want[8] = { 0 };
	uint8_t *tmp = malloc(len);

	if (tmp) {
		pattern_fill(tmp, len, qp, seq);
		want[0] = tmp[off];
		free(tmp);
	}
	fail("--check: %s: QP pair %u message %" PRIu64 " (%" PRIu64 " B): byte %" PRId64
	     " is 0x%02x, expected 0x%02x", what, qp, seq, len, off, p[off], want[0]);
}
