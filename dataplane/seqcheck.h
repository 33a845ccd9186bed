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

#define DROCE_SEQ_KIND_MASK (DROCE_OPF_SEND | DROCE_OPF_WRITE | DROCE_OPF_READ | DROCE_OPF_ATOMIC)

/* Segment size rule shared by requests and READ responses. */
static inline enum droce_seq_verdict
droce_seq_check_segment(uint32_t flags, uint32_t len, uint32_t pmtu)
{
	if (len > pmtu)
		return DROCE_SEQ_BAD_MTU;
	if (!(flags & DROCE_OPF_LAST) && len != pmtu)
		return DROCE_SEQ_BAD_MTU; /* FIRST and MIDDLE carry exactly one MTU */
	if ((flags & DROCE_OPF_ONLY) == DROCE_OPF_LAST && len == 0)
		return DROCE_SEQ_BAD_MTU; /* a LAST carries 1..MTU bytes */
	return DROCE_SEQ_OK;
}

/* droce_seq_rx_check() for a request whose BTH PSN the caller has read
 * (@psn): inline, for the responder's receive path. */
static inline enum droce_seq_verdict
droce_seq_rx_check_psn(struct droce_seq_rx *s, const struct droce_pkt *p, const uint8_t *frame,
		       uint32_t psn)
{
	uint32_t flags = p->info->flags;
	uint32_t kind = flags & DROCE_SEQ_KIND_MASK;
	uint32_t len = p->payload_len;
	uint32_t npsn = 1, write_len = s->write_len, msg_bytes = s->msg_bytes;
	int32_t d;
	enum droce_seq_verdict v;

	if (!(flags & DROCE_OPF_REQ))
		return DROCE_SEQ_WRONG_DIRECTION;
	d = droce_psn_diff(psn, s->epsn);
	if (d < 0)
		return DROCE_SEQ_DUPLICATE;
	if (d > 0)
		return DROCE_SEQ_PSN_GAP;
	if (s->open_kind) {
		if ((flags & DROCE_OPF_FIRST) || kind != s->open_kind)
			return DROCE_SEQ_BAD_ORDER;
	} else if (!(flags & DROCE_OPF_FIRST)) {
		return DROCE_SEQ_BAD_ORDER;
	}
	v = droce_seq_check_segment(flags, len, s->pmtu);
	if (v != DROCE_SEQ_OK)
		return v;

	if (flags & DROCE_OPF_FIRST)
		msg_bytes = 0;
	if (kind == DROCE_OPF_WRITE) {
		if (flags & DROCE_OPF_FIRST)
			write_len = droce_reth_len(droce_pkt_hdr(p, frame, DROCE_HDR_RETH));
		if ((uint64_t)msg_bytes + len > write_len)
			return DROCE_SEQ_BAD_LENGTH;
		if ((flags & DROCE_OPF_LAST) && msg_bytes + len != write_len)
			return DROCE_SEQ_BAD_LENGTH;
	} else if (kind == DROCE_OPF_READ) {
		npsn = droce_seq_npkts(droce_reth_len(droce_pkt_hdr(p, frame, DROCE_HDR_RETH)),
				       s->pmtu);
	}

	s->open_kind = (flags & DROCE_OPF_LAST) ? 0 : kind;
	s->msg_bytes = msg_bytes + len;
	s->write_len = write_len;
	s->epsn = droce_psn_add(s->epsn, npsn);
	return DROCE_SEQ_OK;
}

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
