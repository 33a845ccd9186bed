/* SPDX-License-Identifier: BSD-3-Clause
 * droce wire format: RoCEv2 headers, the opcode table, the frame builder and
 * the frame parser.  Byte order and bit packing live only in the accessors
 * below; nothing else touches header bytes.
 */
#ifndef DROCE_WIRE_H
#define DROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#define DROCE_UDP_PORT 4791
#define DROCE_ICRC_LEN 4

/* ---- Base Transport Header and extended transport headers ---- */

struct droce_bth {
	uint8_t opcode;
	uint8_t flags;     /* SE:1 M:1 PadCnt:2 TVer:4 */
	rte_be16_t pkey;
	rte_be32_t fb_qpn; /* FECN:1 BECN:1 resv:6 DestQP:24 */
	rte_be32_t a_psn;  /* AckReq:1 resv:7 PSN:24 */
} __rte_packed;

struct droce_reth {
	rte_be64_t va;
	rte_be32_t rkey;
	rte_be32_t dma_len;
} __rte_packed;

struct droce_aeth {
	rte_be32_t syn_msn; /* Syndrome:8 MSN:24 */
} __rte_packed;

struct droce_atmeth {
	rte_be64_t va;
	rte_be32_t rkey;
	rte_be64_t swap_add;
	rte_be64_t cmp;
} __rte_packed;

struct droce_atmack {
	rte_be64_t orig;
} __rte_packed;

struct droce_immdt {
	rte_be32_t imm; /* carried as is: imm_data is already network order */
} __rte_packed;

struct droce_ieth {
	rte_be32_t rkey;
} __rte_packed;

struct droce_deth {
	rte_be32_t qkey;
	rte_be32_t sqp; /* resv:8 SrcQP:24 */
} __rte_packed;

/* XRC extended transport header: the XRC SRQ the request is for. */
struct droce_xrceth {
	rte_be32_t srqn; /* resv:8 XRCSRQ:24 */
} __rte_packed;

/* CNP (opcode 0x81) carries 16 reserved bytes after the BTH. */
struct droce_cnp_pad {
	uint8_t resv[16];
} __rte_packed;

static_assert(sizeof(struct droce_bth) == 12, "BTH is 12 bytes");
static_assert(sizeof(struct droce_reth) == 16, "RETH is 16 bytes");
static_assert(sizeof(struct droce_aeth) == 4, "AETH is 4 bytes");
static_assert(sizeof(struct droce_atmeth) == 28, "AtomicETH is 28 bytes");
static_assert(sizeof(struct droce_atmack) == 8, "AtomicAckETH is 8 bytes");
static_assert(sizeof(struct droce_immdt) == 4, "ImmDt is 4 bytes");
static_assert(sizeof(struct droce_ieth) == 4, "IETH is 4 bytes");
static_assert(sizeof(struct droce_deth) == 8, "DETH is 8 bytes");
static_assert(sizeof(struct droce_xrceth) == 4, "XRCETH is 4 bytes");

/* Extended headers in the order IBTA places them after the BTH. */
enum droce_hdr {
	DROCE_HDR_DETH,
	DROCE_HDR_XRCETH,
	DROCE_HDR_RETH,
	DROCE_HDR_ATMETH,
	DROCE_HDR_AETH,
	DROCE_HDR_ATMACK,
	DROCE_HDR_IMMDT,
	DROCE_HDR_IETH,
	DROCE_HDR_CNP,
	DROCE_HDR_COUNT
};

#define DROCE_HDRM(h) (1u << DROCE_HDR_##h)

extern const uint8_t droce_hdr_size[DROCE_HDR_COUNT];
extern const char *const droce_hdr_name[DROCE_HDR_COUNT];

/* ---- BTH opcodes ---- */

enum droce_transport {
	DROCE_TRANSPORT_RC = 0x00,
	DROCE_TRANSPORT_UC = 0x20,
	DROCE_TRANSPORT_RD = 0x40,
	DROCE_TRANSPORT_UD = 0x60,
	DROCE_TRANSPORT_CNP = 0x80,
	DROCE_TRANSPORT_XRC = 0xa0,
};

enum droce_op {
	DROCE_OP_SEND_FIRST = 0x00,
	DROCE_OP_SEND_MIDDLE = 0x01,
	DROCE_OP_SEND_LAST = 0x02,
	DROCE_OP_SEND_LAST_IMM = 0x03,
	DROCE_OP_SEND_ONLY = 0x04,
	DROCE_OP_SEND_ONLY_IMM = 0x05,
	DROCE_OP_WRITE_FIRST = 0x06,
	DROCE_OP_WRITE_MIDDLE = 0x07,
	DROCE_OP_WRITE_LAST = 0x08,
	DROCE_OP_WRITE_LAST_IMM = 0x09,
	DROCE_OP_WRITE_ONLY = 0x0a,
	DROCE_OP_WRITE_ONLY_IMM = 0x0b,
	DROCE_OP_READ_REQ = 0x0c,
	DROCE_OP_READ_RESP_FIRST = 0x0d,
	DROCE_OP_READ_RESP_MIDDLE = 0x0e,
	DROCE_OP_READ_RESP_LAST = 0x0f,
	DROCE_OP_READ_RESP_ONLY = 0x10,
	DROCE_OP_ACK = 0x11,
	DROCE_OP_ATOMIC_ACK = 0x12,
	DROCE_OP_CMP_SWAP = 0x13,
	DROCE_OP_FETCH_ADD = 0x14,
	DROCE_OP_SEND_LAST_INV = 0x16,
	DROCE_OP_SEND_ONLY_INV = 0x17,
	DROCE_OP_CNP = 0x81, /* full opcode, transport bits included */
};

/* Full 8-bit opcode of an operation on a transport. */
#define DROCE_OPC(transport, op) ((uint8_t)((transport) | (op)))

/* Opcode properties. */
enum droce_opf {
	DROCE_OPF_VALID = 1u << 0,
	DROCE_OPF_REQ = 1u << 1,     /* sent by a requester */
	DROCE_OPF_RESP = 1u << 2,    /* sent by a responder (ACK, read resp) */
	DROCE_OPF_FIRST = 1u << 3,
	DROCE_OPF_MIDDLE = 1u << 4,
	DROCE_OPF_LAST = 1u << 5,    /* ONLY = FIRST | LAST */
	DROCE_OPF_PAYLOAD = 1u << 6, /* may carry payload */
	DROCE_OPF_RWQE = 1u << 7,    /* consumes a receive WQE (on its LAST) */
	DROCE_OPF_SEND = 1u << 8,
	DROCE_OPF_WRITE = 1u << 9,
	DROCE_OPF_READ = 1u << 10,
	DROCE_OPF_ATOMIC = 1u << 11,
	DROCE_OPF_ACK = 1u << 12,
	DROCE_OPF_IMM = 1u << 13,
	DROCE_OPF_INV = 1u << 14,
	DROCE_OPF_CNP = 1u << 15,
};

#define DROCE_OPF_ONLY (DROCE_OPF_FIRST | DROCE_OPF_LAST)

struct droce_opcode_info {
	const char *name;     /* e.g. "RC_SEND_ONLY"; NULL for an unused opcode */
	uint32_t flags;       /* enum droce_opf */
	uint16_t hdr_mask;    /* DROCE_HDRM() bits */
	uint8_t hdr_len;      /* BTH + extended headers */
	uint8_t off[DROCE_HDR_COUNT]; /* offset from BTH start; 0 = absent */
};

/* Indexed by the 8-bit BTH opcode.  Offsets are derived from hdr_mask. */
extern const struct droce_opcode_info droce_opcode_table[256];

static inline const struct droce_opcode_info *
droce_opcode_info(uint8_t opcode)
{
	return &droce_opcode_table[opcode];
}

static inline bool
droce_opcode_has(uint8_t opcode, enum droce_hdr h)
{
	return (droce_opcode_table[opcode].hdr_mask >> h) & 1u;
}

/* ---- Work request opcodes allowed per QP type (ibv_post_send(3)) ---- */

enum droce_qp_type {
	DROCE_QPT_RC,
	DROCE_QPT_UC,
	DROCE_QPT_UD,
	DROCE_QPT_XRC_SEND,
	DROCE_QPT_RAW_PACKET,
	DROCE_QPT_COUNT
};

/* Values equal enum ibv_wr_opcode (rdma-core 44); asserted in verbs_api. */
enum droce_wr_opcode {
	DROCE_WR_RDMA_WRITE = 0,
	DROCE_WR_RDMA_WRITE_WITH_IMM = 1,
	DROCE_WR_SEND = 2,
	DROCE_WR_SEND_WITH_IMM = 3,
	DROCE_WR_RDMA_READ = 4,
	DROCE_WR_ATOMIC_CMP_AND_SWP = 5,
	DROCE_WR_ATOMIC_FETCH_AND_ADD = 6,
	DROCE_WR_LOCAL_INV = 7,
	DROCE_WR_BIND_MW = 8,
	DROCE_WR_SEND_WITH_INV = 9,
	DROCE_WR_TSO = 10,
	DROCE_WR_DRIVER1 = 11,
	DROCE_WR_OPCODE_COUNT
};

extern const char *const droce_wr_opcode_name[DROCE_WR_OPCODE_COUNT];
extern const char *const droce_qp_type_name[DROCE_QPT_COUNT];

/* True when ibv_post_send(3)'s table allows wr opcode @op on QP type @qpt. */
bool droce_wr_opcode_allowed(enum droce_qp_type qpt, unsigned int op);

/* ---- BTH/ETH accessors: the only code that knows the bit layout ---- */

static inline uint8_t droce_bth_opcode(const struct droce_bth *b) { return b->opcode; }
static inline void droce_bth_set_opcode(struct droce_bth *b, uint8_t v) { b->opcode = v; }
static inline bool droce_bth_se(const struct droce_bth *b) { return b->flags & 0x80; }
static inline void droce_bth_set_se(struct droce_bth *b, bool v)
{ b->flags = (uint8_t)((b->flags & ~0x80) | (v ? 0x80 : 0)); }
static inline bool droce_bth_mig(const struct droce_bth *b) { return b->flags & 0x40; }
static inline void droce_bth_set_mig(struct droce_bth *b, bool v)
{ b->flags = (uint8_t)((b->flags & ~0x40) | (v ? 0x40 : 0)); }
static inline uint8_t droce_bth_pad(const struct droce_bth *b) { return (b->flags >> 4) & 0x3; }
static inline void droce_bth_set_pad(struct droce_bth *b, uint8_t v)
{ b->flags = (uint8_t)((b->flags & ~0x30) | ((v & 0x3) << 4)); }
static inline uint8_t droce_bth_tver(const struct droce_bth *b) { return b->flags & 0xf; }
static inline void droce_bth_set_tver(struct droce_bth *b, uint8_t v)
{ b->flags = (uint8_t)((b->flags & ~0x0f) | (v & 0xf)); }
static inline uint16_t droce_bth_pkey(const struct droce_bth *b) { return rte_be_to_cpu_16(b->pkey); }
static inline void droce_bth_set_pkey(struct droce_bth *b, uint16_t v) { b->pkey = rte_cpu_to_be_16(v); }
static inline bool droce_bth_fecn(const struct droce_bth *b)
{ return rte_be_to_cpu_32(b->fb_qpn) & 0x80000000u; }
static inline void droce_bth_set_fecn(struct droce_bth *b, bool v)
{ b->fb_qpn = rte_cpu_to_be_32((rte_be_to_cpu_32(b->fb_qpn) & ~0x80000000u) | (v ? 0x80000000u : 0)); }
static inline bool droce_bth_becn(const struct droce_bth *b)
{ return rte_be_to_cpu_32(b->fb_qpn) & 0x40000000u; }
static inline void droce_bth_set_becn(struct droce_bth *b, bool v)
{ b->fb_qpn = rte_cpu_to_be_32((rte_be_to_cpu_32(b->fb_qpn) & ~0x40000000u) | (v ? 0x40000000u : 0)); }
static inline uint32_t droce_bth_qpn(const struct droce_bth *b)
{ return rte_be_to_cpu_32(b->fb_qpn) & 0xffffffu; }
static inline void droce_bth_set_qpn(struct droce_bth *b, uint32_t v)
{ b->fb_qpn = rte_cpu_to_be_32((rte_be_to_cpu_32(b->fb_qpn) & 0xff000000u) | (v & 0xffffffu)); }
static inline bool droce_bth_ackreq(const struct droce_bth *b)
{ return rte_be_to_cpu_32(b->a_psn) & 0x80000000u; }
static inline void droce_bth_set_ackreq(struct droce_bth *b, bool v)
{ b->a_psn = rte_cpu_to_be_32((rte_be_to_cpu_32(b->a_psn) & ~0x80000000u) | (v ? 0x80000000u : 0)); }
static inline uint32_t droce_bth_psn(const struct droce_bth *b)
{ return rte_be_to_cpu_32(b->a_psn) & 0xffffffu; }
static inline void droce_bth_set_psn(struct droce_bth *b, uint32_t v)
{ b->a_psn = rte_cpu_to_be_32((rte_be_to_cpu_32(b->a_psn) & 0xff000000u) | (v & 0xffffffu)); }

static inline uint64_t droce_reth_va(const struct droce_reth *r) { return rte_be_to_cpu_64(r->va); }
static inline void droce_reth_set_va(struct droce_reth *r, uint64_t v) { r->va = rte_cpu_to_be_64(v); }
static inline uint32_t droce_reth_rkey(const struct droce_reth *r) { return rte_be_to_cpu_32(r->rkey); }
static inline void droce_reth_set_rkey(struct droce_reth *r, uint32_t v) { r->rkey = rte_cpu_to_be_32(v); }
static inline uint32_t droce_reth_len(const struct droce_reth *r) { return rte_be_to_cpu_32(r->dma_len); }
static inline void droce_reth_set_len(struct droce_reth *r, uint32_t v) { r->dma_len = rte_cpu_to_be_32(v); }

/* AETH syndrome: bits 7..5 kind (000 ACK, 001 RNR NAK, 011 NAK), 4..0 value. */
enum droce_aeth_kind {
	DROCE_AETH_ACK = 0,
	DROCE_AETH_RNR_NAK = 1,
	DROCE_AETH_RESERVED = 2,
	DROCE_AETH_NAK = 3,
};

enum droce_nak_code {
	DROCE_NAK_PSN_SEQ_ERR = 0,
	DROCE_NAK_INVALID_REQ = 1,
	DROCE_NAK_REM_ACCESS_ERR = 2,
	DROCE_NAK_REM_OP_ERR = 3,
	DROCE_NAK_INVALID_RD_REQ = 4,
};

#define DROCE_AETH_CREDIT_INVALID 0x1f

static inline uint8_t droce_aeth_syndrome(const struct droce_aeth *a)
{ return (uint8_t)(rte_be_to_cpu_32(a->syn_msn) >> 24); }
static inline void droce_aeth_set_syndrome(struct droce_aeth *a, uint8_t v)
{ a->syn_msn = rte_cpu_to_be_32((rte_be_to_cpu_32(a->syn_msn) & 0xffffffu) | ((uint32_t)v << 24)); }
static inline uint32_t droce_aeth_msn(const struct droce_aeth *a)
{ return rte_be_to_cpu_32(a->syn_msn) & 0xffffffu; }
static inline void droce_aeth_set_msn(struct droce_aeth *a, uint32_t v)
{ a->syn_msn = rte_cpu_to_be_32((rte_be_to_cpu_32(a->syn_msn) & 0xff000000u) | (v & 0xffffffu)); }
static inline enum droce_aeth_kind droce_aeth_syndrome_kind(uint8_t syn)
{ return (enum droce_aeth_kind)((syn >> 5) & 0x3); }
static inline uint8_t droce_aeth_syndrome_value(uint8_t syn) { return syn & 0x1f; }
static inline uint8_t droce_aeth_make_syndrome(enum droce_aeth_kind k, uint8_t value)
{ return (uint8_t)(((unsigned)k << 5) | (value & 0x1f)); }

static inline uint64_t droce_atmeth_va(const struct droce_atmeth *a) { return rte_be_to_cpu_64(a->va); }
static inline void droce_atmeth_set_va(struct droce_atmeth *a, uint64_t v) { a->va = rte_cpu_to_be_64(v); }
static inline uint32_t droce_atmeth_rkey(const struct droce_atmeth *a) { return rte_be_to_cpu_32(a->rkey); }
static inline void droce_atmeth_set_rkey(struct droce_atmeth *a, uint32_t v) { a->rkey = rte_cpu_to_be_32(v); }
static inline uint64_t droce_atmeth_swap_add(const struct droce_atmeth *a) { return rte_be_to_cpu_64(a->swap_add); }
static inline void droce_atmeth_set_swap_add(struct droce_atmeth *a, uint64_t v) { a->swap_add = rte_cpu_to_be_64(v); }
static inline uint64_t droce_atmeth_cmp(const struct droce_atmeth *a) { return rte_be_to_cpu_64(a->cmp); }
static inline void droce_atmeth_set_cmp(struct droce_atmeth *a, uint64_t v) { a->cmp = rte_cpu_to_be_64(v); }

static inline uint64_t droce_atmack_orig(const struct droce_atmack *a) { return rte_be_to_cpu_64(a->orig); }
static inline void droce_atmack_set_orig(struct droce_atmack *a, uint64_t v) { a->orig = rte_cpu_to_be_64(v); }

/* ImmDt and the verbs' imm_data are both network order: no swap. */
static inline rte_be32_t droce_immdt_imm(const struct droce_immdt *i) { return i->imm; }
static inline void droce_immdt_set_imm(struct droce_immdt *i, rte_be32_t v) { i->imm = v; }

static inline uint32_t droce_ieth_rkey(const struct droce_ieth *i) { return rte_be_to_cpu_32(i->rkey); }
static inline void droce_ieth_set_rkey(struct droce_ieth *i, uint32_t v) { i->rkey = rte_cpu_to_be_32(v); }

static inline uint32_t droce_xrceth_srqn(const struct droce_xrceth *x) { return rte_be_to_cpu_32(x->srqn) & 0xffffffu; }
static inline void droce_xrceth_set_srqn(struct droce_xrceth *x, uint32_t v) { x->srqn = rte_cpu_to_be_32(v & 0xffffffu); }

static inline uint32_t droce_deth_qkey(const struct droce_deth *d) { return rte_be_to_cpu_32(d->qkey); }
static inline void droce_deth_set_qkey(struct droce_deth *d, uint32_t v) { d->qkey = rte_cpu_to_be_32(v); }
static inline uint32_t droce_deth_sqp(const struct droce_deth *d) { return rte_be_to_cpu_32(d->sqp) & 0xffffffu; }
static inline void droce_deth_set_sqp(struct droce_deth *d, uint32_t v) { d->sqp = rte_cpu_to_be_32(v & 0xffffffu); }

/* ---- PSN arithmetic (24-bit, modulo 2^24) ---- */

#define DROCE_PSN_MASK 0xffffffu

static inline uint32_t droce_psn_add(uint32_t psn, uint32_t n) { return (psn + n) & DROCE_PSN_MASK; }

/* Signed distance a - b in the 24-bit circle: negative when a is before b. */
static inline int32_t droce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline bool droce_psn_before(uint32_t a, uint32_t b) { return droce_psn_diff(a, b) < 0; }

/* ---- Addressing: one path per QP, from which a header template is built ---- */

struct droce_path {
	struct rte_ether_addr src_mac, dst_mac;
	bool vlan;          /* emit an 802.1Q tag */
	uint16_t vlan_id;   /* 12 bits */
	uint8_t vlan_pcp;   /* 3 bits */
	bool ipv6;          /* false: IPv4 (addresses as IPv4-mapped GIDs) */
	uint8_t src_gid[16], dst_gid[16];
	uint8_t traffic_class; /* DSCP << 2 | ECN */
	uint8_t hop_limit;     /* TTL / hop limit; 0 means 64 */
	uint32_t flow_label;   /* IPv6 only, 20 bits */
	uint16_t udp_sport;    /* per-QP entropy */
	uint16_t ip_id;        /* IPv4 identification to start from */
	bool udp_csum;         /* compute a UDP checksum (else 0) */
};

/* True when @gid is an IPv4-mapped IPv6 address (::ffff:a.b.c.d). */
bool droce_gid_is_v4mapped(const uint8_t gid[16]);
void droce_gid_from_ipv4(uint8_t gid[16], rte_be32_t addr);

/* UD multicast (IBTA 10.5.2.3 over RoCEv2, as Linux rxe and ConnectX): the
 * destination QPN of a multicast datagram. */
#define DROCE_MCAST_QPN 0xffffffu
/* True when @gid is a multicast group: an IPv4-mapped class D address
 * (::ffff:224.0.0.0/100) or IPv6 multicast (ff00::/8). */
bool droce_gid_is_mcast(const uint8_t gid[16]);
/* The Ethernet address of multicast group @gid: 01:00:5e + the low 23 bits
 * of an IPv4 group (RFC 1112), 33:33 + the low 32 bits of an IPv6 one
 * (RFC 2464). */
void droce_gid_mcast_mac(const uint8_t gid[16], struct rte_ether_addr *mac);

#define DROCE_TMPL_MAX (RTE_ETHER_HDR_LEN + 4 + 40 + 8)
/* What droce_tmpl_build() copies per frame: 64 bytes when Ethernet (+VLAN),
 * IP, UDP and BTH fit (IPv4), else 96; zeros after the UDP header. */
#define DROCE_TMPL_COPY 96

/* Everything in a frame before the BTH, prebuilt per QP. */
struct droce_hdr_tmpl {
	uint8_t bytes[DROCE_TMPL_COPY] __rte_aligned(16);
	uint8_t len;     /* Ethernet (+VLAN) + IP + UDP */
	uint8_t l3_off;  /* IP header */
	uint8_t l4_off;  /* UDP header */
	uint8_t copy;    /* bytes droce_tmpl_build() copies: 64 or 96 */
	bool ipv6;
	bool udp_csum;
	uint16_t ip_id;  /* next IPv4 id */
	uint32_t ip_csum_base; /* IPv4 header sum without length and id */
	uint32_t icrc_k; /* droce_icrc_tmpl_k() of these IP and UDP headers */
};

void droce_tmpl_init(struct droce_hdr_tmpl *t, const struct droce_path *p);

/* Fields of one transport packet.  Only the headers its opcode carries are read. */
struct droce_pkt_fields {
	uint8_t opcode;
	bool se, mig, fecn, becn, ackreq;
	uint8_t resv6a;   /* BTH reserved bits after FECN/BECN (droce's selective-repeat hint) */
	uint16_t pkey;
	uint32_t dqpn, psn;
	struct { uint64_t va; uint32_t rkey, len; } reth;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add, cmp; } atomic;
	uint64_t atomic_orig;
	rte_be32_t imm;
	uint32_t ieth_rkey;
	struct { uint32_t qkey, src_qp; } deth;
	uint32_t xrc_srqn;
};

/* Total frame length for @payload_len bytes of payload (pad and ICRC included). */
static inline size_t
droce_frame_len(const struct droce_hdr_tmpl *t, uint8_t opcode, uint32_t payload_len)
{
	return (size_t)t->len + droce_opcode_table[opcode].hdr_len + payload_len +
	       (-payload_len & 3u) + DROCE_ICRC_LEN;
}

/*
 * Writes the frame's headers (template, BTH, extended headers) into @buf and
 * fixes the lengths and IPv4 checksum for @payload_len payload bytes.  Returns
 * the header length (payload goes right after), or 0 if @cap is too small or
 * the opcode is not valid.  Field by field: the reference for
 * droce_tmpl_build() (wire_tmpl.h), which the transports use.
 */
size_t droce_build_headers(struct droce_hdr_tmpl *t, uint8_t *buf, size_t cap,
			   const struct droce_pkt_fields *f, uint32_t payload_len);

/*
 * Builds a whole frame into @buf: headers, @payload_len bytes from @payload,
 * zero pad to 4 bytes, and the ICRC.  UDP checksum too when the template asks.
 * Returns the frame length, or 0 if it does not fit in @cap.
 */
size_t droce_build_frame(struct droce_hdr_tmpl *t, uint8_t *buf, size_t cap,
			 const struct droce_pkt_fields *f,
			 const void *payload, uint32_t payload_len);

/* ---- P_Keys ---- */

/*
 * droce's P_Key table has one entry: index 0 = 0xffff (the default P_Key,
 * full member).  The P_Key at @index, or 0 (the invalid P_Key) past the end.
 */
#define DROCE_PKEY_TABLE_LEN 1u
static inline uint16_t droce_pkey_at(uint16_t index) { return index == 0 ? 0xffff : 0; }

/*
 * IBTA 10.9.3: P_Key @pkt (from a BTH) matches the QP's @own when their low
 * 15 bits are equal and not zero (0x0000 / 0x8000 are invalid), and at least
 * one of the two is a full member (bit 15 set).
 */
static inline bool
droce_pkey_match(uint16_t pkt, uint16_t own)
{
	return (pkt & 0x7fff) != 0 && (pkt & 0x7fff) == (own & 0x7fff) && ((pkt | own) & 0x8000);
}

/* ---- Parser ---- */

/* Why a received frame was dropped.  Each has its own counter. */
#define DROCE_DROP_REASONS(X)                                              \
	X(NONE, "accepted")                                                \
	X(RUNT, "frame shorter than its headers")                          \
	X(ETHERTYPE, "not IPv4 or IPv6")                                   \
	X(IP_VERSION, "IP version field disagrees with EtherType")         \
	X(IPV4_HDR, "IPv4 header length or options")                       \
	X(IPV4_FRAG, "IPv4 fragment")                                      \
	X(IPV4_CSUM, "IPv4 header checksum")                               \
	X(IP_LEN, "IP length disagrees with frame")                        \
	X(NOT_UDP, "IP protocol is not UDP")                               \
	X(UDP_PORT, "UDP destination port is not 4791")                    \
	X(UDP_LEN, "UDP length disagrees with IP")                         \
	X(UDP_CSUM, "UDP checksum")                                        \
	X(BTH_TVER, "BTH transport header version is not 0")               \
	X(OPCODE, "opcode not supported")                                  \
	X(HDR_LEN, "shorter than the opcode's headers")                    \
	X(PAD, "pad count wrong for the opcode or payload")                \
	X(ICRC, "ICRC mismatch")                                           \
	X(PKEY, "BTH P_Key does not match the QP's P_Key")

enum droce_drop {
#define DROCE_DROP_ENUM(n, s) DROCE_DROP_##n,
	DROCE_DROP_REASONS(DROCE_DROP_ENUM)
#undef DROCE_DROP_ENUM
	DROCE_DROP_COUNT
};

extern const char *const droce_drop_name[DROCE_DROP_COUNT];
extern const char *const droce_drop_desc[DROCE_DROP_COUNT];

/* What the parser learned of an accepted frame.  Offsets are from frame start. */
struct droce_pkt {
	const struct droce_opcode_info *info;
	uint8_t opcode;
	bool ipv6;
	bool vlan;
	uint16_t vlan_tci;
	uint8_t traffic_class; /* DSCP << 2 | ECN */
	uint16_t l3_off, l4_off, bth_off;
	uint16_t payload_off;
	uint32_t payload_len; /* without pad */
	const uint8_t *payload; /* the payload's bytes: frame + payload_off, or a split frame's */
	uint8_t pad;
	uint16_t udp_sport;
	uint8_t src_gid[16], dst_gid[16]; /* IPv4 as IPv4-mapped */
	uint32_t frame_len; /* without Ethernet padding */
};

static inline const struct droce_bth *
droce_pkt_bth(const struct droce_pkt *p, const uint8_t *frame)
{
	return (const struct droce_bth *)(frame + p->bth_off);
}

static inline const void *
droce_pkt_hdr(const struct droce_pkt *p, const uint8_t *frame, enum droce_hdr h)
{
	return frame + p->bth_off + p->info->off[h];
}

/* Parses and validates a flat frame of @len bytes; returns why it is dropped. */
enum droce_drop droce_parse_frame(const uint8_t *frame, uint32_t len, struct droce_pkt *out);

/* The same, the ICRC checked through @ic (icrc.h droce_icrc_rx: the engine's
 * cache of the flows' header constants). */
struct droce_icrc_cache;
enum droce_drop droce_parse_frame_c(const uint8_t *frame, uint32_t len, struct droce_pkt *out,
				    struct droce_icrc_cache *ic);

/* The same through the general parser alone (VLAN, IPv6, every check in
 * turn), for tests: droce_parse_frame() takes a fast path for the usual
 * untagged IPv4 frame and must agree with this on every frame. */
enum droce_drop droce_parse_frame_ref(const uint8_t *frame, uint32_t len, struct droce_pkt *out);

/*
 * The same for a frame in three pieces, the shape zero-copy transmit builds
 * (zcopy.c): @hdr every header up to the payload, @payload exactly the
 * payload, @tail the pad and the ICRC; the ICRC is checked over the three.
 * Anything else (another split, a UDP checksum) is refused: the caller then
 * parses the frame flat.  out->payload points into @payload.
 */
enum droce_drop droce_parse_split(const uint8_t *hdr, uint32_t hlen, const uint8_t *payload,
				  uint32_t plen, const uint8_t *tail, uint32_t tlen,
				  struct droce_pkt *out);

/*
 * An accepted frame's parse result in 16 bytes, for a frame handed to the
 * engine that owns its QP (engine_pass.c carries it in an mbuf dynamic field):
 * the owner restores its struct droce_pkt with droce_pkt_unpack() instead of
 * parsing the frame again and checking its checksums and ICRC twice.
 */
struct droce_pkt_meta {
	uint32_t payload_len;
	uint16_t vlan_tci, udp_sport;
	uint8_t l3_off, bth_off, opcode, pad;
	uint8_t traffic_class;
	uint8_t flags;         /* DROCE_PKT_META_IPV6, _VLAN */
	uint16_t rsvd;
};
#define DROCE_PKT_META_IPV6 1u
#define DROCE_PKT_META_VLAN 2u

static inline void
droce_pkt_pack(const struct droce_pkt *p, struct droce_pkt_meta *m)
{
	/* offsets fit a byte: the BTH is at most Ethernet + VLAN + IPv6 + UDP in */
	m->payload_len = p->payload_len;
	m->vlan_tci = p->vlan_tci;
	m->udp_sport = p->udp_sport;
	m->l3_off = (uint8_t)p->l3_off;
	m->bth_off = (uint8_t)p->bth_off;
	m->opcode = p->opcode;
	m->pad = p->pad;
	m->traffic_class = p->traffic_class;
	m->flags = (uint8_t)((p->ipv6 ? DROCE_PKT_META_IPV6 : 0) | (p->vlan ? DROCE_PKT_META_VLAN : 0));
	m->rsvd = 0;
}

/*
 * The struct droce_pkt droce_parse_frame() gave for the frame @m was packed
 * from (@frame, unchanged since): offsets and lengths from @m, the GIDs from
 * the IP header.  No check is repeated.
 */
static inline void
droce_pkt_unpack(const uint8_t *frame, const struct droce_pkt_meta *m, struct droce_pkt *p)
{
	const struct droce_opcode_info *oi = &droce_opcode_table[m->opcode];
	const uint8_t *l3 = frame + m->l3_off;

	p->info = oi;
	p->opcode = m->opcode;
	p->ipv6 = (m->flags & DROCE_PKT_META_IPV6) != 0;
	p->vlan = (m->flags & DROCE_PKT_META_VLAN) != 0;
	p->vlan_tci = m->vlan_tci;
	p->traffic_class = m->traffic_class;
	p->l3_off = m->l3_off;
	p->bth_off = m->bth_off;
	p->l4_off = (uint16_t)(m->bth_off - sizeof(struct rte_udp_hdr));
	p->payload_off = (uint16_t)(m->bth_off + oi->hdr_len);
	p->payload_len = m->payload_len;
	p->payload = frame + p->payload_off; /* a flat frame: split ones are parsed again */
	p->pad = m->pad;
	p->udp_sport = m->udp_sport;
	p->frame_len = (uint32_t)p->payload_off + m->payload_len + m->pad + DROCE_ICRC_LEN;
	if (p->ipv6) {
		const struct rte_ipv6_hdr *ip6 = (const struct rte_ipv6_hdr *)l3;

		memcpy(p->src_gid, ip6->src_addr, 16);
		memcpy(p->dst_gid, ip6->dst_addr, 16);
	} else {
		/* IPv4-mapped: ::ffff:a.b.c.d */
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		const struct rte_ipv4_hdr *ip4 = (const struct rte_ipv4_hdr *)l3;

		memcpy(p->src_gid, v4mapped, 12);
		memcpy(p->src_gid + 12, &ip4->src_addr, 4);
		memcpy(p->dst_gid, v4mapped, 12);
		memcpy(p->dst_gid + 12, &ip4->dst_addr, 4);
	}
}

/* Reads every field of an accepted packet back into @f. */
void droce_pkt_read_fields(const struct droce_pkt *p, const uint8_t *frame,
			   struct droce_pkt_fields *f);

#endif /* DROCE_WIRE_H */
