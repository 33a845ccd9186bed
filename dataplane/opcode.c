/* SPDX-License-Identifier: BSD-3-Clause
 * The opcode table: the one place that says which headers each BTH opcode
 * carries and what it means.  Header offsets are derived at compile time from
 * the presence mask and the header structs' sizes, never typed by hand, so
 * the table is constant data (safe to export from a shared library).
 */
#include <string.h>

#include "wire.h"

const uint8_t droce_hdr_size[DROCE_HDR_COUNT] = {
	[DROCE_HDR_DETH] = sizeof(struct droce_deth),
	[DROCE_HDR_XRCETH] = sizeof(struct droce_xrceth),
	[DROCE_HDR_RETH] = sizeof(struct droce_reth),
	[DROCE_HDR_ATMETH] = sizeof(struct droce_atmeth),
	[DROCE_HDR_AETH] = sizeof(struct droce_aeth),
	[DROCE_HDR_ATMACK] = sizeof(struct droce_atmack),
	[DROCE_HDR_IMMDT] = sizeof(struct droce_immdt),
	[DROCE_HDR_IETH] = sizeof(struct droce_ieth),
	[DROCE_HDR_CNP] = sizeof(struct droce_cnp_pad),
};

const char *const droce_hdr_name[DROCE_HDR_COUNT] = {
	[DROCE_HDR_DETH] = "DETH",
	[DROCE_HDR_XRCETH] = "XRCETH",
	[DROCE_HDR_RETH] = "RETH",
	[DROCE_HDR_ATMETH] = "AtomicETH",
	[DROCE_HDR_AETH] = "AETH",
	[DROCE_HDR_ATMACK] = "AtomicAckETH",
	[DROCE_HDR_IMMDT] = "ImmDt",
	[DROCE_HDR_IETH] = "IETH",
	[DROCE_HDR_CNP] = "CNP-reserved",
};

#define F(x) DROCE_OPF_##x
#define H(x) DROCE_HDRM(x)

/* Bytes of the headers present in mask m that come before header h (IBTA order). */
#define PRESENT(m, h) (((m) >> DROCE_HDR_##h) & 1u)
#define BEFORE_DETH(m) 0u
#define BEFORE_XRCETH(m) (BEFORE_DETH(m) + PRESENT(m, DETH) * sizeof(struct droce_deth))
#define BEFORE_RETH(m) (BEFORE_XRCETH(m) + PRESENT(m, XRCETH) * sizeof(struct droce_xrceth))
#define BEFORE_ATMETH(m) (BEFORE_RETH(m) + PRESENT(m, RETH) * sizeof(struct droce_reth))
#define BEFORE_AETH(m) (BEFORE_ATMETH(m) + PRESENT(m, ATMETH) * sizeof(struct droce_atmeth))
#define BEFORE_ATMACK(m) (BEFORE_AETH(m) + PRESENT(m, AETH) * sizeof(struct droce_aeth))
#define BEFORE_IMMDT(m) (BEFORE_ATMACK(m) + PRESENT(m, ATMACK) * sizeof(struct droce_atmack))
#define BEFORE_IETH(m) (BEFORE_IMMDT(m) + PRESENT(m, IMMDT) * sizeof(struct droce_immdt))
#define BEFORE_CNP(m) (BEFORE_IETH(m) + PRESENT(m, IETH) * sizeof(struct droce_ieth))
#define EXT_LEN(m) (BEFORE_CNP(m) + PRESENT(m, CNP) * sizeof(struct droce_cnp_pad))
#define OFF(m, h) [DROCE_HDR_##h] = \
	(uint8_t)(PRESENT(m, h) ? sizeof(struct droce_bth) + BEFORE_##h(m) : 0)

static_assert(DROCE_HDR_COUNT == 9, "ROW() lists every extended header");

#define ROW(nm, fl, hm) { \
	.name = (nm), .flags = F(VALID) | (fl), .hdr_mask = (hm), \
	.hdr_len = (uint8_t)(sizeof(struct droce_bth) + EXT_LEN(hm)), \
	.off = { OFF(hm, DETH), OFF(hm, XRCETH), OFF(hm, RETH), OFF(hm, ATMETH), OFF(hm, AETH), \
		 OFF(hm, ATMACK), OFF(hm, IMMDT), OFF(hm, IETH), OFF(hm, CNP) } }

/* Operation rows shared by the RC and UC transports (UC has no read/atomic/inv). */
#define OP(tr, op, nm, fl, hm) \
	[DROCE_OPC(DROCE_TRANSPORT_##tr, DROCE_OP_##op)] = ROW(#tr "_" nm, fl, hm)

/* Request rows carry the extra headers @x right after the BTH (XRC: the
 * XRCETH, IBTA 9.2: BTH, XRCETH, then RETH / AtomicETH / ImmDt / IETH). */
#define SEND_ROWS(tr, x)                                                            \
	OP(tr, SEND_FIRST, "SEND_FIRST", F(REQ) | F(SEND) | F(FIRST) | F(PAYLOAD) | F(RWQE), (x)), \
	OP(tr, SEND_MIDDLE, "SEND_MIDDLE", F(REQ) | F(SEND) | F(MIDDLE) | F(PAYLOAD) | F(RWQE), (x)), \
	OP(tr, SEND_LAST, "SEND_LAST", F(REQ) | F(SEND) | F(LAST) | F(PAYLOAD) | F(RWQE), (x)), \
	OP(tr, SEND_LAST_IMM, "SEND_LAST_WITH_IMMEDIATE",                             \
	   F(REQ) | F(SEND) | F(LAST) | F(PAYLOAD) | F(RWQE) | F(IMM), (x) | H(IMMDT)), \
	OP(tr, SEND_ONLY, "SEND_ONLY", F(REQ) | F(SEND) | F(ONLY) | F(PAYLOAD) | F(RWQE), (x)), \
	OP(tr, SEND_ONLY_IMM, "SEND_ONLY_WITH_IMMEDIATE",                             \
	   F(REQ) | F(SEND) | F(ONLY) | F(PAYLOAD) | F(RWQE) | F(IMM), (x) | H(IMMDT))

#define WRITE_ROWS(tr, x)                                                           \
	OP(tr, WRITE_FIRST, "RDMA_WRITE_FIRST", F(REQ) | F(WRITE) | F(FIRST) | F(PAYLOAD), (x) | H(RETH)), \
	OP(tr, WRITE_MIDDLE, "RDMA_WRITE_MIDDLE", F(REQ) | F(WRITE) | F(MIDDLE) | F(PAYLOAD), (x)), \
	OP(tr, WRITE_LAST, "RDMA_WRITE_LAST", F(REQ) | F(WRITE) | F(LAST) | F(PAYLOAD), (x)), \
	OP(tr, WRITE_LAST_IMM, "RDMA_WRITE_LAST_WITH_IMMEDIATE",                      \
	   F(REQ) | F(WRITE) | F(LAST) | F(PAYLOAD) | F(RWQE) | F(IMM), (x) | H(IMMDT)), \
	OP(tr, WRITE_ONLY, "RDMA_WRITE_ONLY", F(REQ) | F(WRITE) | F(ONLY) | F(PAYLOAD), (x) | H(RETH)), \
	OP(tr, WRITE_ONLY_IMM, "RDMA_WRITE_ONLY_WITH_IMMEDIATE",                      \
	   F(REQ) | F(WRITE) | F(ONLY) | F(PAYLOAD) | F(RWQE) | F(IMM), (x) | H(RETH) | H(IMMDT))

/* READ, atomics, responses and SEND with invalidate: RC and XRC (responses
 * carry no XRCETH). */
#define RELIABLE_ROWS(tr, x)                                                        \
	OP(tr, READ_REQ, "RDMA_READ_REQUEST", F(REQ) | F(READ) | F(ONLY), (x) | H(RETH)), \
	OP(tr, READ_RESP_FIRST, "RDMA_READ_RESPONSE_FIRST",                           \
	   F(RESP) | F(READ) | F(FIRST) | F(PAYLOAD), H(AETH)),                       \
	OP(tr, READ_RESP_MIDDLE, "RDMA_READ_RESPONSE_MIDDLE",                         \
	   F(RESP) | F(READ) | F(MIDDLE) | F(PAYLOAD), 0),                            \
	OP(tr, READ_RESP_LAST, "RDMA_READ_RESPONSE_LAST",                             \
	   F(RESP) | F(READ) | F(LAST) | F(PAYLOAD), H(AETH)),                        \
	OP(tr, READ_RESP_ONLY, "RDMA_READ_RESPONSE_ONLY",                             \
	   F(RESP) | F(READ) | F(ONLY) | F(PAYLOAD), H(AETH)),                        \
	OP(tr, ACK, "ACKNOWLEDGE", F(RESP) | F(ACK) | F(ONLY), H(AETH)),              \
	OP(tr, ATOMIC_ACK, "ATOMIC_ACKNOWLEDGE",                                      \
	   F(RESP) | F(ACK) | F(ATOMIC) | F(ONLY), H(AETH) | H(ATMACK)),              \
	OP(tr, CMP_SWAP, "COMPARE_SWAP", F(REQ) | F(ATOMIC) | F(ONLY), (x) | H(ATMETH)), \
	OP(tr, FETCH_ADD, "FETCH_ADD", F(REQ) | F(ATOMIC) | F(ONLY), (x) | H(ATMETH)), \
	OP(tr, SEND_LAST_INV, "SEND_LAST_WITH_INVALIDATE",                            \
	   F(REQ) | F(SEND) | F(LAST) | F(PAYLOAD) | F(RWQE) | F(INV), (x) | H(IETH)), \
	OP(tr, SEND_ONLY_INV, "SEND_ONLY_WITH_INVALIDATE",                            \
	   F(REQ) | F(SEND) | F(ONLY) | F(PAYLOAD) | F(RWQE) | F(INV), (x) | H(IETH))

const struct droce_opcode_info droce_opcode_table[256] = {
	SEND_ROWS(RC, 0),
	WRITE_ROWS(RC, 0),
	RELIABLE_ROWS(RC, 0),

	SEND_ROWS(UC, 0),
	WRITE_ROWS(UC, 0),

	OP(UD, SEND_ONLY, "SEND_ONLY", F(REQ) | F(SEND) | F(ONLY) | F(PAYLOAD) | F(RWQE), H(DETH)),
	OP(UD, SEND_ONLY_IMM, "SEND_ONLY_WITH_IMMEDIATE",
	   F(REQ) | F(SEND) | F(ONLY) | F(PAYLOAD) | F(RWQE) | F(IMM), H(DETH) | H(IMMDT)),

	SEND_ROWS(XRC, H(XRCETH)),
	WRITE_ROWS(XRC, H(XRCETH)),
	RELIABLE_ROWS(XRC, H(XRCETH)),

	[DROCE_OP_CNP] = ROW("CNP", F(CNP) | F(ONLY), H(CNP)),
};

#undef OP
#undef ROW
#undef OFF
#undef F
#undef H

/* ---- WR opcodes per QP type: the table in ibv_post_send(3) (newer form) ---- */

const char *const droce_wr_opcode_name[DROCE_WR_OPCODE_COUNT] = {
	[DROCE_WR_RDMA_WRITE] = "IBV_WR_RDMA_WRITE",
	[DROCE_WR_RDMA_WRITE_WITH_IMM] = "IBV_WR_RDMA_WRITE_WITH_IMM",
	[DROCE_WR_SEND] = "IBV_WR_SEND",
	[DROCE_WR_SEND_WITH_IMM] = "IBV_WR_SEND_WITH_IMM",
	[DROCE_WR_RDMA_READ] = "IBV_WR_RDMA_READ",
	[DROCE_WR_ATOMIC_CMP_AND_SWP] = "IBV_WR_ATOMIC_CMP_AND_SWP",
	[DROCE_WR_ATOMIC_FETCH_AND_ADD] = "IBV_WR_ATOMIC_FETCH_AND_ADD",
	[DROCE_WR_LOCAL_INV] = "IBV_WR_LOCAL_INV",
	[DROCE_WR_BIND_MW] = "IBV_WR_BIND_MW",
	[DROCE_WR_SEND_WITH_INV] = "IBV_WR_SEND_WITH_INV",
	[DROCE_WR_TSO] = "IBV_WR_TSO",
	[DROCE_WR_DRIVER1] = "IBV_WR_DRIVER1",
};

const char *const droce_qp_type_name[DROCE_QPT_COUNT] = {
	[DROCE_QPT_RC] = "IBV_QPT_RC",
	[DROCE_QPT_UC] = "IBV_QPT_UC",
	[DROCE_QPT_UD] = "IBV_QPT_UD",
	[DROCE_QPT_XRC_SEND] = "IBV_QPT_XRC_SEND",
	[DROCE_QPT_RAW_PACKET] = "IBV_QPT_RAW_PACKET",
};

#define Q(t) (1u << DROCE_QPT_##t)
static const uint8_t wr_allowed[DROCE_WR_OPCODE_COUNT] = {
	[DROCE_WR_SEND] = Q(UD) | Q(UC) | Q(RC) | Q(XRC_SEND) | Q(RAW_PACKET),
	[DROCE_WR_SEND_WITH_IMM] = Q(UD) | Q(UC) | Q(RC) | Q(XRC_SEND),
	[DROCE_WR_RDMA_WRITE] = Q(UC) | Q(RC) | Q(XRC_SEND),
	[DROCE_WR_RDMA_WRITE_WITH_IMM] = Q(UC) | Q(RC) | Q(XRC_SEND),
	[DROCE_WR_RDMA_READ] = Q(RC) | Q(XRC_SEND),
	[DROCE_WR_ATOMIC_CMP_AND_SWP] = Q(RC) | Q(XRC_SEND),
	[DROCE_WR_ATOMIC_FETCH_AND_ADD] = Q(RC) | Q(XRC_SEND),
	[DROCE_WR_LOCAL_INV] = Q(UC) | Q(RC) | Q(XRC_SEND),
	[DROCE_WR_BIND_MW] = Q(UC) | Q(RC) | Q(XRC_SEND),
	[DROCE_WR_SEND_WITH_INV] = Q(UC) | Q(RC) | Q(XRC_SEND),
	[DROCE_WR_TSO] = Q(UD) | Q(RAW_PACKET),
	[DROCE_WR_DRIVER1] = 0,
};
#undef Q

bool
droce_wr_opcode_allowed(enum droce_qp_type qpt, unsigned int op)
{
	if ((unsigned int)qpt >= DROCE_QPT_COUNT || op >= DROCE_WR_OPCODE_COUNT)
		return false;
	return (wr_allowed[op] >> qpt) & 1u;
}
