/* SPDX-License-Identifier: BSD-3-Clause
 * The ECN field of a frame on the wire: read it, mark CE (RFC 3168), for
 * the impaired link's impair_ce (impair.c) and the switch model's RED
 * marking (switch.c).
 */
#include <stdbool.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "impair.h"

/* The ECN field of IP frame @m, where its IP header starts and its
 * ethertype (0 for a frame that is not IP). */
static uint8_t
frame_ecn(const struct rte_mbuf *m, uint32_t *l2_out, uint16_t *et_out)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t l2 = RTE_ETHER_HDR_LEN;
	uint16_t et;

	*l2_out = 0;
	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + 4 + sizeof(struct rte_ipv4_hdr))
		return 0;
	et = (uint16_t)(d[12] << 8 | d[13]);
	if (et == RTE_ETHER_TYPE_VLAN) {
		l2 += 4;
		et = (uint16_t)(d[16] << 8 | d[17]);
	}
	*et_out = et;
	if (et == RTE_ETHER_TYPE_IPV4) {
		*l2_out = l2;
		return d[l2 + 1] & 3;
	}
	if (et == RTE_ETHER_TYPE_IPV6 && rte_pktmbuf_data_len(m) >= l2 + sizeof(struct rte_ipv6_hdr)) {
		*l2_out = l2;
		return (uint8_t)((d[l2 + 1] >> 4) & 3);
	}
	return 0;
}

bool
droce_frame_ecn_capable(const struct rte_mbuf *m)
{
	uint32_t l2;
	uint16_t et;

	return frame_ecn(m, &l2, &et) != 0;
}

/* Marks an ECN-capable (ECT(0) / ECT(1)) IP frame CE, as a congested switch
 * queue does (RFC 3168 5; the IPv4 checksum redone, RFC 1624; the ICRC masks
 * the traffic class), on a copy when its bytes are shared or external
 * (registered application memory is never written). */
int
droce_frame_ce_mark(struct rte_mempool *mp, struct rte_mbuf **frame)
{
	struct rte_mbuf *m = *frame;
	uint32_t l2;
	uint16_t et = 0;
	uint8_t ecn = frame_ecn(m, &l2, &et);

	if (ecn == 0 || ecn == 3)
		return 0;
	if (RTE_MBUF_HAS_EXTBUF(m) || !RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, mp, 0, UINT32_MAX);

		if (c == NULL || rte_pktmbuf_data_len(c) < l2 + 2) {
			rte_pktmbuf_free(c);
			return -1;
		}
		rte_pktmbuf_free(m);
		m = c;
		*frame = m;
	}
	if (et == RTE_ETHER_TYPE_IPV4) {
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l2);
		/* RFC 1624 eqn. 3 on the 16-bit word holding the TOS byte */
		uint16_t old = rte_be_to_cpu_16(*(const uint16_t *)ip);
		uint16_t new = (uint16_t)(old | 3);
		uint32_t sum = (uint16_t)~rte_be_to_cpu_16(ip->hdr_checksum) + (uint16_t)~old + new;

		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		ip->type_of_service |= 3;
		ip->hdr_checksum = rte_cpu_to_be_16((uint16_t)~sum);
	} else {
		uint8_t *b = rte_pktmbuf_mtod_offset(m, uint8_t *, l2);

		b[1] |= 0x30; /* traffic class bits 1..0 are byte 1's bits 5..4 */
	}
	return 1;
}
