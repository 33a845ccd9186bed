/* SPDX-License-Identifier: BSD-3-Clause
 * Header accessors, opcode table invariants, the WR-opcode/QP-type table and
 * PSN arithmetic.  No EAL.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "dataplane/wire.h"

/* ---- accessors: set, then get, and check the bytes IBTA specifies ---- */

Test(accessors, bth_fields_and_bytes)
{
	struct droce_bth b;
	const uint8_t *raw = (const uint8_t *)&b;

	memset(&b, 0, sizeof(b));
	droce_bth_set_opcode(&b, 0x64);
	droce_bth_set_se(&b, true);
	droce_bth_set_mig(&b, true);
	droce_bth_set_pad(&b, 3);
	droce_bth_set_tver(&b, 0);
	droce_bth_set_pkey(&b, 0xfffe);
	droce_bth_set_fecn(&b, true);
	droce_bth_set_becn(&b, true);
	droce_bth_set_qpn(&b, 0xabcdef);
	droce_bth_set_ackreq(&b, true);
	droce_bth_set_psn(&b, 0xfedcba);

	cr_assert_eq(droce_bth_opcode(&b), 0x64);
	cr_assert(droce_bth_se(&b));
	cr_assert(droce_bth_mig(&b));
	cr_assert_eq(droce_bth_pad(&b), 3);
	cr_assert_eq(droce_bth_tver(&b), 0);
	cr_assert_eq(droce_bth_pkey(&b), 0xfffe);
	cr_assert(droce_bth_fecn(&b));
	cr_assert(droce_bth_becn(&b));
	cr_assert_eq(droce_bth_qpn(&b), 0xabcdef);
	cr_assert(droce_bth_ackreq(&b));
	cr_assert_eq(droce_bth_psn(&b), 0xfedcba);

	const uint8_t want[12] = { 0x64, 0xf0, 0xff, 0xfe, 0xc0, 0xab, 0xcd, 0xef,
				   0x80, 0xfe, 0xdc, 0xba };
	cr_assert_arr_eq(raw, want, 12);

	/* clearing one field leaves its neighbours alone */
	droce_bth_set_se(&b, false);
	droce_bth_set_becn(&b, false);
	droce_bth_set_ackreq(&b, false);
	droce_bth_set_tver(&b, 0xf);
	cr_assert_eq(raw[1], 0x7f);
	cr_assert_eq(raw[4], 0x80);
	cr_assert_eq(raw[8], 0x00);
	cr_assert_eq(droce_bth_qpn(&b), 0xabcdef);
	cr_assert_eq(droce_bth_psn(&b), 0xfedcba);
	cr_assert_eq(droce_bth_pad(&b), 3);
	/* values wider than the field are cut, not spilled */
	droce_bth_set_qpn(&b, 0x1123456);
	droce_bth_set_psn(&b, 0xff000001);
	cr_assert_eq(droce_bth_qpn(&b), 0x123456);
	cr_assert(droce_bth_fecn(&b));
	cr_assert_eq(droce_bth_psn(&b), 1);
}

Test(accessors, reth)
{
	struct droce_reth r;
	const uint8_t want[16] = { 0x00, 0x00, 0x7f, 0x5a, 0x3c, 0x00, 0x10, 0x00,
				   0x00, 0xa1, 0xb2, 0xc3, 0x00, 0x00, 0x02, 0x64 };

	droce_reth_set_va(&r, 0x00007f5a3c001000ull);
	droce_reth_set_rkey(&r, 0x00a1b2c3);
	droce_reth_set_len(&r, 612);
	cr_assert_eq(droce_reth_va(&r), 0x00007f5a3c001000ull);
	cr_assert_eq(droce_reth_rkey(&r), 0x00a1b2c3);
	cr_assert_eq(droce_reth_len(&r), 612);
	cr_assert_arr_eq(&r, want, 16);
}

Test(accessors, aeth)
{
	struct droce_aeth a = { 0 };
	const uint8_t *raw = (const uint8_t *)&a;

	droce_aeth_set_syndrome(&a, droce_aeth_make_syndrome(DROCE_AETH_RNR_NAK, 14));
	droce_aeth_set_msn(&a, 0x123456);
	cr_assert_eq(droce_aeth_syndrome(&a), 0x2e);
	cr_assert_eq(droce_aeth_syndrome_kind(droce_aeth_syndrome(&a)), DROCE_AETH_RNR_NAK);
	cr_assert_eq(droce_aeth_syndrome_value(droce_aeth_syndrome(&a)), 14);
	cr_assert_eq(droce_aeth_msn(&a), 0x123456);
	cr_assert_eq(raw[0], 0x2e);
	cr_assert_eq(raw[1], 0x12);
	cr_assert_eq(raw[3], 0x56);
	droce_aeth_set_syndrome(&a, droce_aeth_make_syndrome(DROCE_AETH_NAK, DROCE_NAK_REM_ACCESS_ERR));
	cr_assert_eq(raw[0], 0x62);
	cr_assert_eq(droce_aeth_msn(&a), 0x123456);
	droce_aeth_set_syndrome(&a, droce_aeth_make_syndrome(DROCE_AETH_ACK, DROCE_AETH_CREDIT_INVALID));
	cr_assert_eq(raw[0], 0x1f);
}

Test(accessors, atomic_headers)
{
	struct droce_atmeth a;
	struct droce_atmack k;
	const uint8_t *raw = (const uint8_t *)&a;

	droce_atmeth_set_va(&a, 0x0102030405060708ull);
	droce_atmeth_set_rkey(&a, 0x11223344);
	droce_atmeth_set_swap_add(&a, 0xa1a2a3a4a5a6a7a8ull);
	droce_atmeth_set_cmp(&a, 0xb1b2b3b4b5b6b7b8ull);
	cr_assert_eq(droce_atmeth_va(&a), 0x0102030405060708ull);
	cr_assert_eq(droce_atmeth_rkey(&a), 0x11223344);
	cr_assert_eq(droce_atmeth_swap_add(&a), 0xa1a2a3a4a5a6a7a8ull);
	cr_assert_eq(droce_atmeth_cmp(&a), 0xb1b2b3b4b5b6b7b8ull);
	cr_assert_eq(raw[0], 0x01);
	cr_assert_eq(raw[8], 0x11);
	cr_assert_eq(raw[12], 0xa1);
	cr_assert_eq(raw[20], 0xb1);
	cr_assert_eq(raw[27], 0xb8);

	droce_atmack_set_orig(&k, 0xdeadbeefcafef00dull);
	cr_assert_eq(droce_atmack_orig(&k), 0xdeadbeefcafef00dull);
	cr_assert_eq(((const uint8_t *)&k)[0], 0xde);
}

Test(accessors, immdt_ieth_deth)
{
	struct droce_immdt i;
	struct droce_ieth e;
	struct droce_deth d;

	/* imm_data is already big-endian in the verbs: stored unchanged */
	droce_immdt_set_imm(&i, rte_cpu_to_be_32(0xdeadbeef));
	cr_assert_eq(droce_immdt_imm(&i), rte_cpu_to_be_32(0xdeadbeef));
	cr_assert_eq(((const uint8_t *)&i)[0], 0xde);

	droce_ieth_set_rkey(&e, 0x00c0ffee);
	cr_assert_eq(droce_ieth_rkey(&e), 0x00c0ffee);
	cr_assert_eq(((const uint8_t *)&e)[1], 0xc0);

	memset(&d, 0xff, sizeof(d));
	droce_deth_set_qkey(&d, 0x80010002);
	droce_deth_set_sqp(&d, 0x0000c6);
	cr_assert_eq(droce_deth_qkey(&d), 0x80010002);
	cr_assert_eq(droce_deth_sqp(&d), 0xc6);
	cr_assert_eq(((const uint8_t *)&d)[4], 0x00, "DETH reserved byte is zero");
}

/* ---- opcode table ---- */

struct expect_op {
	uint8_t opcode;
	const char *name;
	uint16_t mask;
};

#define RC(op) DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_##op)
#define UC(op) DROCE_OPC(DROCE_TRANSPORT_UC, DROCE_OP_##op)
#define UD(op) DROCE_OPC(DROCE_TRANSPORT_UD, DROCE_OP_##op)

/* Every RC, UC, UD and XRC opcode of IBTA vol 1 table 38 (RD excluded), plus CNP. */
static const struct expect_op expected_ops[] = {
	{ 0x00, "RC_SEND_FIRST", 0 },
	{ 0x01, "RC_SEND_MIDDLE", 0 },
	{ 0x02, "RC_SEND_LAST", 0 },
	{ 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", DROCE_HDRM(IMMDT) },
	{ 0x04, "RC_SEND_ONLY", 0 },
	{ 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", DROCE_HDRM(IMMDT) },
	{ 0x06, "RC_RDMA_WRITE_FIRST", DROCE_HDRM(RETH) },
	{ 0x07, "RC_RDMA_WRITE_MIDDLE", 0 },
	{ 0x08, "RC_RDMA_WRITE_LAST", 0 },
	{ 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", DROCE_HDRM(IMMDT) },
	{ 0x0a, "RC_RDMA_WRITE_ONLY", DROCE_HDRM(RETH) },
	{ 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", DROCE_HDRM(RETH) | DROCE_HDRM(IMMDT) },
	{ 0x0c, "RC_RDMA_READ_REQUEST", DROCE_HDRM(RETH) },
	{ 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", DROCE_HDRM(AETH) },
	{ 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0 },
	{ 0x0f, "RC_RDMA_READ_RESPONSE_LAST", DROCE_HDRM(AETH) },
	{ 0x10, "RC_RDMA_READ_RESPONSE_ONLY", DROCE_HDRM(AETH) },
	{ 0x11, "RC_ACKNOWLEDGE", DROCE_HDRM(AETH) },
	{ 0x12, "RC_ATOMIC_ACKNOWLEDGE", DROCE_HDRM(AETH) | DROCE_HDRM(ATMACK) },
	{ 0x13, "RC_COMPARE_SWAP", DROCE_HDRM(ATMETH) },
	{ 0x14, "RC_FETCH_ADD", DROCE_HDRM(ATMETH) },
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE", DROCE_HDRM(IETH) },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", DROCE_HDRM(IETH) },
	{ 0x20, "UC_SEND_FIRST", 0 },
	{ 0x21, "UC_SEND_MIDDLE", 0 },
	{ 0x22, "UC_SEND_LAST", 0 },
	{ 0x23, "UC_SEND_LAST_WITH_IMMEDIATE", DROCE_HDRM(IMMDT) },
	{ 0x24, "UC_SEND_ONLY", 0 },
	{ 0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", DROCE_HDRM(IMMDT) },
	{ 0x26, "UC_RDMA_WRITE_FIRST", DROCE_HDRM(RETH) },
	{ 0x27, "UC_RDMA_WRITE_MIDDLE", 0 },
	{ 0x28, "UC_RDMA_WRITE_LAST", 0 },
	{ 0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", DROCE_HDRM(IMMDT) },
	{ 0x2a, "UC_RDMA_WRITE_ONLY", DROCE_HDRM(RETH) },
	{ 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", DROCE_HDRM(RETH) | DROCE_HDRM(IMMDT) },
	{ 0x64, "UD_SEND_ONLY", DROCE_HDRM(DETH) },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", DROCE_HDRM(DETH) | DROCE_HDRM(IMMDT) },
	/* XRC (IBTA 9.2, Wireshark's opcode names): requests carry the XRCETH
	 * right after the BTH, responses do not */
	{ 0xa0, "XRC_SEND_FIRST", DROCE_HDRM(XRCETH) },
	{ 0xa1, "XRC_SEND_MIDDLE", DROCE_HDRM(XRCETH) },
	{ 0xa2, "XRC_SEND_LAST", DROCE_HDRM(XRCETH) },
	{ 0xa3, "XRC_SEND_LAST_WITH_IMMEDIATE", DROCE_HDRM(XRCETH) | DROCE_HDRM(IMMDT) },
	{ 0xa4, "XRC_SEND_ONLY", DROCE_HDRM(XRCETH) },
	{ 0xa5, "XRC_SEND_ONLY_WITH_IMMEDIATE", DROCE_HDRM(XRCETH) | DROCE_HDRM(IMMDT) },
	{ 0xa6, "XRC_RDMA_WRITE_FIRST", DROCE_HDRM(XRCETH) | DROCE_HDRM(RETH) },
	{ 0xa7, "XRC_RDMA_WRITE_MIDDLE", DROCE_HDRM(XRCETH) },
	{ 0xa8, "XRC_RDMA_WRITE_LAST", DROCE_HDRM(XRCETH) },
	{ 0xa9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE", DROCE_HDRM(XRCETH) | DROCE_HDRM(IMMDT) },
	{ 0xaa, "XRC_RDMA_WRITE_ONLY", DROCE_HDRM(XRCETH) | DROCE_HDRM(RETH) },
	{ 0xab, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", DROCE_HDRM(XRCETH) | DROCE_HDRM(RETH) | DROCE_HDRM(IMMDT) },
	{ 0xac, "XRC_RDMA_READ_REQUEST", DROCE_HDRM(XRCETH) | DROCE_HDRM(RETH) },
	{ 0xad, "XRC_RDMA_READ_RESPONSE_FIRST", DROCE_HDRM(AETH) },
	{ 0xae, "XRC_RDMA_READ_RESPONSE_MIDDLE", 0 },
	{ 0xaf, "XRC_RDMA_READ_RESPONSE_LAST", DROCE_HDRM(AETH) },
	{ 0xb0, "XRC_RDMA_READ_RESPONSE_ONLY", DROCE_HDRM(AETH) },
	{ 0xb1, "XRC_ACKNOWLEDGE", DROCE_HDRM(AETH) },
	{ 0xb2, "XRC_ATOMIC_ACKNOWLEDGE", DROCE_HDRM(AETH) | DROCE_HDRM(ATMACK) },
	{ 0xb3, "XRC_COMPARE_SWAP", DROCE_HDRM(XRCETH) | DROCE_HDRM(ATMETH) },
	{ 0xb4, "XRC_FETCH_ADD", DROCE_HDRM(XRCETH) | DROCE_HDRM(ATMETH) },
	{ 0xb6, "XRC_SEND_LAST_WITH_INVALIDATE", DROCE_HDRM(XRCETH) | DROCE_HDRM(IETH) },
	{ 0xb7, "XRC_SEND_ONLY_WITH_INVALIDATE", DROCE_HDRM(XRCETH) | DROCE_HDRM(IETH) },
	{ 0x81, "CNP", DROCE_HDRM(CNP) },
};

Test(opcode_table, every_opcode_present_with_its_headers)
{
	unsigned int valid = 0;

	for (size_t i = 0; i < RTE_DIM(expected_ops); i++) {
		const struct droce_opcode_info *oi = droce_opcode_info(expected_ops[i].opcode);
		cr_assert(oi->flags & DROCE_OPF_VALID, "opcode 0x%02x missing", expected_ops[i].opcode);
		cr_assert_str_eq(oi->name, expected_ops[i].name);
		cr_assert_eq(oi->hdr_mask, expected_ops[i].mask, "%s header mask", oi->name);
	}
	for (unsigned int op = 0; op < 256; op++)
		valid += !!(droce_opcode_info((uint8_t)op)->flags & DROCE_OPF_VALID);
	cr_assert_eq(valid, RTE_DIM(expected_ops), "no opcode beyond the expected ones is valid");
}

Test(opcode_table, offsets_agree_with_header_sizes)
{
	for (unsigned int op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		unsigned int sum = sizeof(struct droce_bth), prev_end = sizeof(struct droce_bth);

		if (!(oi->flags & DROCE_OPF_VALID)) {
			cr_assert_eq(oi->hdr_len, 0);
			continue;
		}
		for (unsigned int h = 0; h < DROCE_HDR_COUNT; h++) {
			if (!((oi->hdr_mask >> h) & 1)) {
				cr_assert_eq(oi->off[h], 0, "%s: absent %s has an offset", oi->name,
					     droce_hdr_name[h]);
				continue;
			}
			/* headers are contiguous, in IBTA order, right after the BTH */
			cr_assert_eq(oi->off[h], prev_end, "%s: %s offset", oi->name, droce_hdr_name[h]);
			prev_end = oi->off[h] + droce_hdr_size[h];
			sum += droce_hdr_size[h];
		}
		cr_assert_eq(oi->hdr_len, sum, "%s: header length", oi->name);
	}
}

Test(opcode_table, known_offsets)
{
	/* IBTA layouts, counted from the BTH start */
	cr_assert_eq(droce_opcode_info(RC(WRITE_ONLY_IMM))->off[DROCE_HDR_RETH], 12);
	cr_assert_eq(droce_opcode_info(RC(WRITE_ONLY_IMM))->off[DROCE_HDR_IMMDT], 28);
	cr_assert_eq(droce_opcode_info(RC(WRITE_ONLY_IMM))->hdr_len, 32);
	cr_assert_eq(droce_opcode_info(RC(ATOMIC_ACK))->off[DROCE_HDR_AETH], 12);
	cr_assert_eq(droce_opcode_info(RC(ATOMIC_ACK))->off[DROCE_HDR_ATMACK], 16);
	cr_assert_eq(droce_opcode_info(RC(ATOMIC_ACK))->hdr_len, 24);
	cr_assert_eq(droce_opcode_info(RC(CMP_SWAP))->hdr_len, 40);
	cr_assert_eq(droce_opcode_info(UD(SEND_ONLY_IMM))->off[DROCE_HDR_DETH], 12);
	cr_assert_eq(droce_opcode_info(UD(SEND_ONLY_IMM))->off[DROCE_HDR_IMMDT], 20);
	cr_assert_eq(droce_opcode_info(UD(SEND_ONLY_IMM))->hdr_len, 24);
	cr_assert_eq(droce_opcode_info(RC(SEND_ONLY_INV))->off[DROCE_HDR_IETH], 12);
	cr_assert_eq(droce_opcode_info(DROCE_OP_CNP)->hdr_len, 28);
}

Test(opcode_table, properties_are_consistent)
{
	for (unsigned int op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		uint32_t f = oi->flags;

		if (!(f & DROCE_OPF_VALID))
			continue;
		cr_assert(!!(f & DROCE_OPF_REQ) + !!(f & DROCE_OPF_RESP) + !!(f & DROCE_OPF_CNP) == 1,
			  "%s is exactly one of request, response, CNP", oi->name);
		cr_assert(!((f & DROCE_OPF_MIDDLE) && (f & (DROCE_OPF_FIRST | DROCE_OPF_LAST))),
			  "%s: MIDDLE excludes FIRST/LAST", oi->name);
		cr_assert(f & (DROCE_OPF_FIRST | DROCE_OPF_MIDDLE | DROCE_OPF_LAST), "%s position",
			  oi->name);
		cr_assert_eq(!!(f & DROCE_OPF_IMM), !!(oi->hdr_mask & DROCE_HDRM(IMMDT)), "%s imm",
			     oi->name);
		cr_assert_eq(!!(f & DROCE_OPF_INV), !!(oi->hdr_mask & DROCE_HDRM(IETH)), "%s inv",
			     oi->name);
		/* a write's RETH comes on its first packet; reads and atomics carry no payload */
		if ((f & DROCE_OPF_WRITE) && (f & DROCE_OPF_REQ))
			cr_assert_eq(!!(f & DROCE_OPF_FIRST), !!(oi->hdr_mask & DROCE_HDRM(RETH)),
				     "%s RETH", oi->name);
		if (f & (DROCE_OPF_ATOMIC | DROCE_OPF_ACK | DROCE_OPF_CNP) ||
		    (f & (DROCE_OPF_READ | DROCE_OPF_REQ)) == (DROCE_OPF_READ | DROCE_OPF_REQ))
			cr_assert(!(f & DROCE_OPF_PAYLOAD), "%s has no payload", oi->name);
		/* receive WQEs: every SEND packet, and RDMA WRITE with immediate */
		cr_assert_eq(!!(f & DROCE_OPF_RWQE),
			     !!(f & DROCE_OPF_SEND) || ((f & DROCE_OPF_WRITE) && (f & DROCE_OPF_IMM)),
			     "%s receive WQE", oi->name);
		/* read responses: AETH on FIRST, LAST and ONLY, never MIDDLE */
		if ((f & DROCE_OPF_READ) && (f & DROCE_OPF_RESP))
			cr_assert_eq(!!(oi->hdr_mask & DROCE_HDRM(AETH)), !(f & DROCE_OPF_MIDDLE));
		/* the transport bits of UD opcodes bring a DETH */
		cr_assert_eq((op & 0xe0) == DROCE_TRANSPORT_UD, !!(oi->hdr_mask & DROCE_HDRM(DETH)));
	}
}

/* ---- ibv_post_send(3): which WR opcodes each QP type supports ---- */

Test(wr_table, matches_the_man_page)
{
	/* columns UD, UC, RC, XRC_SEND, RAW_PACKET, transcribed from the newer man page */
	static const char *rows[DROCE_WR_OPCODE_COUNT] = {
		[DROCE_WR_SEND] = "XXXXX",
		[DROCE_WR_SEND_WITH_IMM] = "XXXX.",
		[DROCE_WR_RDMA_WRITE] = ".XXX.",
		[DROCE_WR_RDMA_WRITE_WITH_IMM] = ".XXX.",
		[DROCE_WR_RDMA_READ] = "..XX.",
		[DROCE_WR_ATOMIC_CMP_AND_SWP] = "..XX.",
		[DROCE_WR_ATOMIC_FETCH_AND_ADD] = "..XX.",
		[DROCE_WR_LOCAL_INV] = ".XXX.",
		[DROCE_WR_BIND_MW] = ".XXX.",
		[DROCE_WR_SEND_WITH_INV] = ".XXX.",
		[DROCE_WR_TSO] = "X...X",
		[DROCE_WR_DRIVER1] = ".....",
	};
	static const enum droce_qp_type cols[5] = { DROCE_QPT_UD, DROCE_QPT_UC, DROCE_QPT_RC,
						    DROCE_QPT_XRC_SEND, DROCE_QPT_RAW_PACKET };

	for (unsigned int op = 0; op < DROCE_WR_OPCODE_COUNT; op++)
		for (unsigned int c = 0; c < 5; c++)
			cr_assert_eq(droce_wr_opcode_allowed(cols[c], op), rows[op][c] == 'X',
				     "%s on %s", droce_wr_opcode_name[op], droce_qp_type_name[cols[c]]);
	cr_assert_not(droce_wr_opcode_allowed(DROCE_QPT_RC, DROCE_WR_OPCODE_COUNT));
	cr_assert_not(droce_wr_opcode_allowed(DROCE_QPT_RC, 0xffffffffu));
	cr_assert_not(droce_wr_opcode_allowed(DROCE_QPT_COUNT, DROCE_WR_SEND));
}

/* ---- PSN arithmetic ---- */

Test(psn, add_wraps_at_2_24)
{
	cr_assert_eq(droce_psn_add(0xffffff, 1), 0);
	cr_assert_eq(droce_psn_add(0xfffffe, 5), 3);
	cr_assert_eq(droce_psn_add(5, 0xffffff), 4);
	cr_assert_eq(droce_psn_add(0, 0), 0);
}

Test(psn, diff_and_order_across_the_wrap)
{
	cr_assert_eq(droce_psn_diff(0, 0xffffff), 1);
	cr_assert_eq(droce_psn_diff(0xffffff, 0), -1);
	cr_assert_eq(droce_psn_diff(3, 0xfffffe), 5);
	cr_assert_eq(droce_psn_diff(0x7fffff, 0), 0x7fffff);
	cr_assert_eq(droce_psn_diff(0x800000, 0), -0x800000);
	cr_assert(droce_psn_before(0xfffff0, 0x10));
	cr_assert_not(droce_psn_before(0x10, 0xfffff0));
	cr_assert_not(droce_psn_before(7, 7));
	for (uint32_t base = 0xfffff0; base != 0x10; base = droce_psn_add(base, 1))
		for (uint32_t n = 0; n < 64; n++)
			cr_assert_eq(droce_psn_diff(droce_psn_add(base, n), base), (int32_t)n);
}

Test(gid, ipv4_mapped)
{
	uint8_t gid[16];
	const uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1 };
	rte_be32_t addr;

	memcpy(&addr, want + 12, 4);
	droce_gid_from_ipv4(gid, addr);
	cr_assert_arr_eq(gid, want, 16);
	cr_assert(droce_gid_is_v4mapped(gid));
	gid[10] = 0;
	cr_assert_not(droce_gid_is_v4mapped(gid));
}

/* The builder's CNP against the reference's golden vector (libconntrack-cm's
 * tests/test_cnp.cpp, generated with scapy: IP(src=22.22.22.8,
 * dst=22.22.22.7, id=0x98c6, DF, ttl=0x20, tos=0x89) / UDP(sport=56238,
 * dport=4791, chksum=0) / cnp(dqpn=0xd2), the IP checksum zeroed): every
 * byte from the IP header to the ICRC, so the ICRC (traffic class masked)
 * too. */
Test(cnp, golden_vector)
{
	static const uint8_t want[60] = {
		0x45, 0x89, 0x00, 0x3c, 0x98, 0xc6, 0x40, 0x00, 0x20, 0x11, 0x00, 0x00,
		0x16, 0x16, 0x16, 0x08, 0x16, 0x16, 0x16, 0x07, 0xdb, 0xae, 0x12, 0xb7,
		0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x00, 0xd2,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xda, 0xfc, 0x1b, 0xef,
	};
	const uint8_t src[4] = { 22, 22, 22, 8 }, dst[4] = { 22, 22, 22, 7 };
	struct droce_pkt_fields f;
	struct droce_hdr_tmpl t;
	struct droce_path path;
	uint8_t frame[128];
	rte_be32_t a;
	size_t len;

	memset(&path, 0, sizeof(path));
	memcpy(&a, src, 4);
	droce_gid_from_ipv4(path.src_gid, a);
	memcpy(&a, dst, 4);
	droce_gid_from_ipv4(path.dst_gid, a);
	path.traffic_class = 0x89;
	path.hop_limit = 0x20;
	path.udp_sport = 56238;
	path.ip_id = 0x98c6;
	droce_tmpl_init(&t, &path);
	memset(&f, 0, sizeof(f));
	f.opcode = DROCE_OP_CNP;
	f.becn = true;
	f.pkey = 0xffff;
	f.dqpn = 0xd2;
	len = droce_build_frame(&t, frame, sizeof(frame), &f, NULL, 0);
	cr_assert_eq(len, RTE_ETHER_HDR_LEN + sizeof(want));
	frame[RTE_ETHER_HDR_LEN + 10] = 0; /* the vector's IP checksum is zeroed */
	frame[RTE_ETHER_HDR_LEN + 11] = 0;
	cr_assert_arr_eq(frame + RTE_ETHER_HDR_LEN, want, sizeof(want));
}
