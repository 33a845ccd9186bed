/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

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
};

/* Slice-by-8 tables for the portable backend, built once at load time. */
static uint32_t crc_tab[8][256];

RTE_INIT(droce_crc_table_init)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

static uint32_t
crc32_table(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t c = ~crc;

	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo = rte_le_to_cpu_32(lo) ^ c;
		hi = rte_le_to_cpu_32(hi);
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
	return ~c;
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
		return true;
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
	case DROCE_CRC_TABLE:
	default:
		return crc32_table(crc, buf, len);
	}
}

/* The fastest backend by scripts/bench-crc (see README): ISA-L when present. */
uint32_t
droce_crc32(uint32_t crc, const void *buf, size_t len)
{
#ifdef DROCE_HAVE_ISAL
	return crc32_gzip_refl(crc, buf, len);
#else
	return crc32_zlib(crc, buf, len);
#endif
}

uint32_t
droce_icrc_begin(const uint8_t *l3, size_t len, bool ipv6)
{
	/* Masked copy of IP + UDP + BTH: at most 40 + 8 + 12 bytes. */
	uint8_t m[sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth)];
	size_t iplen = ipv6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr);
	size_t mlen = iplen + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth);
	uint32_t crc;

	if (len < mlen)
		mlen = len;
	memcpy(m, l3, mlen);
	if (ipv6) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)m;
		/* traffic class and flow label: all of vtc_flow but the version */
		ip6->vtc_flow |= rte_cpu_to_be_32(0x0fffffffu);
		ip6->hop_limits = 0xff;
	} else {
		struct rte_ipv4_hdr *ip4 = (struct rte_ipv4_hdr *)m;
		ip4->type_of_service = 0xff;
		ip4->time_to_live = 0xff;
		ip4->hdr_checksum = 0xffff;
	}
	if (mlen >= iplen + sizeof(struct rte_udp_hdr)) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(m + iplen);
		udp->dgram_cksum = 0xffff;
	}
	if (mlen == iplen + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth)) {
		struct droce_bth *bth = (struct droce_bth *)(m + iplen + sizeof(struct rte_udp_hdr));
		bth->fb_qpn |= rte_cpu_to_be_32(0xff000000u);
	}
	crc = droce_crc32(DROCE_ICRC_SEED, m, mlen);
	if (len > mlen)
		crc = droce_crc32(crc, l3 + mlen, len - mlen);
	return crc;
}

uint32_t
droce_icrc_flat(const uint8_t *l3, size_t len, bool ipv6)
{
	return droce_icrc_finish(droce_icrc_begin(l3, len, ipv6));
}
