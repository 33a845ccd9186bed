/* SPDX-License-Identifier: BSD-3-Clause
 * What the RAW_PACKET suites share: a RAW_PACKET QP with registered send and
 * receive buffers, flow rules built spec by spec, and frames (Ethernet,
 * IPv4 / IPv6, UDP / TCP) written byte by byte, with an RFC 1071 checksum of
 * the test's own to check droce's against.
 */
#ifndef DROCE_TESTS_RAW_COMMON_H
#define DROCE_TESTS_RAW_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define RAW_BUF 16384    /* bytes per receive slot */
#define RAW_SLOTS 64     /* receive slots */
#define RAW_SEND (512 * 1024)

struct raw_qp {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	uint8_t *sbuf, *rbuf;
	struct ibv_mr *smr, *rmr;
};

/* A RAW_PACKET QP on @ctx (max_tso_header 128), in RTS, every receive slot posted. */
void raw_qp_open(struct raw_qp *r, struct ibv_context *ctx);
void raw_qp_close(struct raw_qp *r);
/* Reposts receive slot @slot (wr_id = slot). */
void raw_post_recv(struct raw_qp *r, unsigned int slot);
/* Sends @len bytes at sbuf offset @off as one frame; flags IBV_SEND_*; 0 or errno. */
int raw_send(struct raw_qp *r, uint32_t off, uint32_t len, unsigned int flags);
/* Waits for the send completion and asserts its status. */
void raw_send_done(struct raw_qp *r, enum ibv_wc_status st);
/* The next received frame within @ms: its slot, length and wc_flags; false on timeout. */
bool raw_recv(struct raw_qp *r, unsigned int ms, unsigned int *slot, uint32_t *len,
	      unsigned int *wc_flags);

/* Flow attributes with up to 3 specs. */
struct raw_flow_attr {
	struct ibv_flow_attr attr;
	uint8_t specs[3 * sizeof(struct ibv_flow_spec)];
};
void raw_flow_init(struct raw_flow_attr *f, enum ibv_flow_attr_type type, uint16_t priority);
void raw_flow_eth(struct raw_flow_attr *f, const uint8_t *dmac, uint16_t ether_type);
void raw_flow_ipv4(struct raw_flow_attr *f, uint32_t src_be, uint32_t dst_be);
void raw_flow_ipv6(struct raw_flow_attr *f, const uint8_t dst[16]);
void raw_flow_l4(struct raw_flow_attr *f, bool tcp, uint16_t sport, uint16_t dport);

/* Frame building: addresses in network order, lengths and ports in host order. */
struct raw_addr {
	uint8_t smac[6], dmac[6];
	uint32_t sip, dip;         /* IPv4 */
	uint8_t sip6[16], dip6[16];
	bool ipv6;
};
/* Ethernet + IP + UDP + @plen bytes of payload (seeded pattern) into @b;
 * checksums left as @junk (0: zero).  Returns the frame length. */
size_t raw_udp_frame(uint8_t *b, const struct raw_addr *a, uint16_t sport, uint16_t dport,
		     size_t plen, uint32_t seed, uint16_t ip_id, uint16_t junk);
/* Ethernet + IPv4 + TCP (20 bytes, or 24 with an MSS option when @mss) headers;
 * returns the header length. */
size_t raw_tcp_hdr(uint8_t *b, const struct raw_addr *a, uint16_t sport, uint16_t dport,
		   uint32_t seq, uint32_t ack, uint8_t flags, uint16_t win, uint16_t mss,
		   size_t plen, uint16_t ip_id);

/* RFC 1071 sums, written here independently of DPDK's. */
uint16_t raw_csum(const void *p, size_t n, uint32_t init);
/* True when the frame's IPv4 header checksum and its UDP / TCP checksum
 * (IPv4 or IPv6) are valid. */
bool raw_csums_valid(const uint8_t *b, size_t len);

#endif
