/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "seqcheck.h"

const char *const droce_seq_verdict_name[DROCE_SEQ_VERDICT_COUNT] = {
#define DROCE_SEQ_NAME(n, s) [DROCE_SEQ_##n] = #n,
	DROCE_SEQ_VERDICTS(DROCE_SEQ_NAME)
#undef DROCE_SEQ_NAME
};

void
droce_seq_rx_init(struct droce_seq_rx *s, uint32_t pmtu, uint32_t epsn)
{
	memset(s, 0, sizeof(*s));
	s->pmtu = pmtu;
	s->epsn = epsn & DROCE_PSN_MASK;
}

enum droce_seq_verdict
droce_seq_rx_check(struct droce_seq_rx *s, const struct droce_pkt *p, const uint8_t *frame)
{
	return droce_seq_rx_check_psn(s, p, frame, droce_bth_psn(droce_pkt_bth(p, frame)));
}

void
droce_seq_tx_init(struct droce_seq_tx *s, uint32_t pmtu, uint32_t psn)
{
	memset(s, 0, sizeof(*s));
	s->pmtu = pmtu;
	s->una = s->nxt = psn & DROCE_PSN_MASK;
}

bool
droce_seq_tx_sent(struct droce_seq_tx *s, const struct droce_pkt_fields *f, uint32_t payload_len)
{
	uint32_t npsn = 1;

	RTE_SET_USED(payload_len);
	if ((droce_opcode_info(f->opcode)->flags & (DROCE_OPF_READ | DROCE_OPF_REQ)) ==
	    (DROCE_OPF_READ | DROCE_OPF_REQ)) { /* RC or XRC */
		struct droce_seq_read *r;

		if (s->read_count == DROCE_SEQ_MAX_READS)
			return false;
		r = &s->reads[(s->read_head + s->read_count) % DROCE_SEQ_MAX_READS];
		r->psn = r->next_psn = f->psn;
		r->len = f->reth.len;
		r->got = 0;
		s->read_count++;
		npsn = droce_seq_npkts(f->reth.len, s->pmtu);
	}
	s->nxt = droce_psn_add(f->psn, npsn);
	return true;
}

/* An acknowledged PSN must lie in [una - 1, nxt - 1]. */
static enum droce_seq_verdict
check_ack_window(const struct droce_seq_tx *s, uint32_t psn)
{
	if (droce_psn_diff(psn, s->nxt) >= 0)
		return DROCE_SEQ_ACK_UNSENT;
	if (droce_psn_diff(psn, droce_psn_add(s->una, DROCE_PSN_MASK)) < 0)
		return DROCE_SEQ_DUPLICATE;
	return DROCE_SEQ_OK;
}

static enum droce_seq_verdict
check_read_resp(struct droce_seq_tx *s, uint32_t flags, uint32_t psn, uint32_t len)
{
	struct droce_seq_read *r;
	enum droce_seq_verdict v;

	if (s->read_count == 0)
		return DROCE_SEQ_UNEXPECTED_RESP;
	r = &s->reads[s->read_head];
	if (psn != r->next_psn) {
		if (droce_psn_diff(psn, r->next_psn) < 0)
			return DROCE_SEQ_DUPLICATE;
		return check_ack_window(s, psn) == DROCE_SEQ_ACK_UNSENT ? DROCE_SEQ_ACK_UNSENT
									 : DROCE_SEQ_PSN_GAP;
	}
	if (((flags & DROCE_OPF_FIRST) != 0) != (r->got == 0 && psn == r->psn))
		return DROCE_SEQ_BAD_ORDER;
	v = droce_seq_check_segment(flags, len, s->pmtu);
	if (v != DROCE_SEQ_OK)
		return v;
	if ((uint64_t)r->got + len > r->len)
		return DROCE_SEQ_BAD_LENGTH;
	if ((flags & DROCE_OPF_LAST) && r->got + len != r->len)
		return DROCE_SEQ_BAD_LENGTH;

	r->got += len;
	r->next_psn = droce_psn_add(psn, 1);
	if (flags & DROCE_OPF_LAST) {
		s->read_head = (s->read_head + 1) % DROCE_SEQ_MAX_READS;
		s->read_count--;
		s->una = droce_psn_add(psn, 1);
	}
	return DROCE_SEQ_OK;
}

enum droce_seq_verdict
droce_seq_tx_check(struct droce_seq_tx *s, const struct droce_pkt *p, const uint8_t *frame)
{
	uint32_t flags = p->info->flags;
	uint32_t psn = droce_bth_psn(droce_pkt_bth(p, frame));
	enum droce_seq_verdict v;

	if (!(flags & DROCE_OPF_RESP))
		return DROCE_SEQ_WRONG_DIRECTION;
	if (flags & DROCE_OPF_READ)
		return check_read_resp(s, flags, psn, p->payload_len);

	v = check_ack_window(s, psn);
	if (v != DROCE_SEQ_OK)
		return v;
	if (droce_aeth_syndrome_kind(droce_aeth_syndrome(droce_pkt_hdr(p, frame, DROCE_HDR_AETH))) ==
	    DROCE_AETH_ACK)
		s->una = droce_psn_add(psn, 1);
	return DROCE_SEQ_OK;
}
