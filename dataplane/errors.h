/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_ERRORS_H
#define DROCE_ERRORS_H

#include "dp.h"

enum droce_err {
	DROCE_ERR_NONE,
	DROCE_ERR_LOC_PROT,
	DROCE_ERR_LOC_LEN,
	DROCE_ERR_RESP_LOC_PROT,
	DROCE_ERR_REM_ACCESS,
	DROCE_ERR_REM_INV_REQ,
	DROCE_ERR_REM_OP,
	DROCE_ERR_RETRY_EXC,
	DROCE_ERR_RNR_RETRY_EXC,
	DROCE_ERR_BAD_RESP,
	DROCE_ERR_FLUSH,
	DROCE_ERR_MW_OP,
	DROCE_ERR_CQ_OVERRUN,
	DROCE_ERR_SEND_LEN,   /* requester: a message too long for what it goes out as (RAW_PACKET) */
	DROCE_ERR_SEND_OP,    /* requester: a WR the QP cannot execute (RAW_PACKET TSO header) */
	DROCE_ERR_PSN_SEQ,    /* responder: a request ahead of the expected PSN (not a failure) */
	DROCE_ERR_COUNT
};

#define DROCE_ERR_NO_NAK 0xff

struct droce_err_info {
	const char *name;
	uint8_t nak_code;              /* enum droce_nak_code the responder sends, or NO_NAK */
	enum droce_wc_status req_status;  /* requester's completion */
	enum droce_wc_status resp_status; /* responder's receive completion (if one is open) */
	enum droce_qp_state next_state;
};

extern const struct droce_err_info droce_err_table[DROCE_ERR_COUNT];

enum droce_err droce_err_from_nak(uint8_t code);

#endif
