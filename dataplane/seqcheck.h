/* SPDX-License-Identifier: BSD-3-Clause
 * Packet-sequence checks of one QP direction: what a responder verifies of
 * the requests it receives (PSN, FIRST/MIDDLE/LAST order, MTU-sized
 * segments, RETH length) and what a requester verifies of the responses it
 * receives (ACKs within the sent window, READ responses matching their
 * request).  Stateless frame checks live in the parser; these need state.
 */
#ifndef DROCE_SEQCHECK_H
#define DROCE_SEQCHECK_H

#include "wire.h"

#define DROCE_SEQ_VERDICTS(X)                                                   \
	X(OK, "in sequence")                                                    \
	X(DUPLICATE, "PSN already received (duplicate request)")                \
	X(PSN_GAP, "PSN ahead of the expected PSN (packets lost)")              \
	X(BAD_ORDER, "opcode out of FIRST/MIDDLE/LAST order")                   \
	X(BAD_MTU, "segment payload is not path-MTU sized")                     \
	X(BAD_LENGTH, "message length disagrees with RETH or READ request")     \
	X(ACK_UNSENT, "acknowledges a PSN that was never sent")                 \
	X(UNEXPECTED_RESP, "READ response with no READ outstanding")            \
	X(WRONG_DIRECTION, "request where a response belongs or vice versa")

enum droce_seq_verdict {
#define DROCE_SEQ_ENUM(n, s) DROCE_SEQ_##n,
	DROCE_SEQ_VERDICTS(DROCE_SEQ_ENUM)
#undef DROCE_SEQ_ENUM
	DROCE_SEQ_VERDICT_COUNT
};

extern const char *const droce_seq_verdict_name[DROCE_SEQ_VERDICT_COUNT];

/* Number of PSNs a message of @len bytes takes at @pmtu (at least one). */
static inline uint32_t
droce_seq_npkts(uint32_t len, uint32_t pmtu)
{
	return len == 0 ? 1 : (len + pmtu - 1) / pmtu;
}

/* ---- Responder: requests received on one QP ---- */

struct droce_seq_rx {
	uint32_t pmtu;
	uint32_t epsn;      /* next expected PSN */
	uint32_t open_kind; /* DROCE_OPF_SEND / DROCE_OPF_WRITE while a message is open */
	uint32_t msg_bytes; /* payload so far in the open message */
	uint32_t write_len; /* RETH DMA length of the open write */
};

void droce_seq_rx_init(struct droce_seq_rx *s, uint32_t pmtu, uint32_t epsn);

/*
 * Checks request packet @p; on OK advances the expected PSN and message
 * state.  Any other verdict leaves the state as it was.
 */
enum droce_seq_verdict droce_seq_rx_check(struct droce_seq_rx *s, const struct droce_pkt *p,
					  const uint8_t *frame);

/* ---- Requester: responses to what it sent ---- */

#define DROCE_SEQ_MAX_READS 16

struct droce_seq_read {
	uint32_t psn;      /* PSN of the request = first response PSN */
	uint32_t len;      /* bytes requested */
	uint32_t got;      /* bytes received so far */
	uint32_t next_psn; /* next response PSN expected */
};

struct droce_seq_tx {
	uint32_t pmtu;
	uint32_t una; /* oldest PSN not yet acknowledged */
	uint32_t nxt; /* next PSN to send */
	struct droce_seq_read reads[DROCE_SEQ_MAX_READS];
	uint32_t read_head, read_count;
};

void droce_seq_tx_init(struct droce_seq_tx *s, uint32_t pmtu, uint32_t psn);

/* Records a request sent with @f and @payload_len; returns false if it cannot be tracked. */
bool droce_seq_tx_sent(struct droce_seq_tx *s, const struct droce_pkt_fields *f,
		       uint32_t payload_len);

/* Checks response packet @p against what was sent; on OK advances the state. */
enum droce_seq_verdict droce_seq_tx_check(struct droce_seq_tx *s, const struct droce_pkt *p,
					  const uint8_t *frame);

#endif /* DROCE_SEQCHECK_H */
