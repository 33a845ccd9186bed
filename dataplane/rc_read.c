/* SPDX-License-Identifier: BSD-3-Clause
 * RC requester: READ responses kept past a hole (issue 12).
 *
 * A READ response's place is fixed by its PSN: response k of a READ whose
 * first PSN is F carries bytes [k * pmtu, (k + 1) * pmtu) of it, whatever
 * order it arrives in.  So a response past a missing one is placed rather
 * than dropped, and the READ is asked again only for what has not arrived:
 * one READ request per missing range, with the PSN of its first response
 * (plain IBTA: any responder answers a READ for part of one, rxe included).
 *
 * What arrived: a READ's `got` is the prefix of its bytes placed in order;
 * a response past that prefix sets its PSN's bit in the QP's map, a ring of
 * DROCE_RC_RDMAP_BITS bits indexed by PSN, valid for PSNs in
 * [psn_una, psn_una + DROCE_RC_RDMAP_BITS) (a response further ahead is
 * dropped as before, and asked again later).  The map is allocated at the
 * first response that needs it (128 bytes; a QP that never sees one out of
 * order has none), and a bit is cleared when the prefix passes it, so a set
 * bit is always a placed PSN past its READ's prefix, at or after psn_una:
 * two PSNs 2^10 apart can never both be set.
 *
 * Completion stays in order: a READ whose bytes are all placed is done (no
 * longer outstanding at the responder) but retires only once everything
 * before it has (rc_comp.c's complete_upto, up to the highest response seen).
 */
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "internal.h"
#include "rc_internal.h"

struct droce_rc_rdmap {
	uint64_t w[DROCE_RC_RDMAP_BITS / 64];
};

static inline bool
in_map_window(const struct droce_qp *qp, uint32_t psn)
{
	int32_t d = droce_psn_diff(psn, qp->psn_una);

	return d >= 0 && d < DROCE_RC_RDMAP_BITS;
}

/* True when response @psn (past its READ's prefix) has been placed. */
static bool
map_has(const struct droce_qp *qp, uint32_t psn)
{
	uint32_t b = psn % DROCE_RC_RDMAP_BITS;

	return qp->rdmap != NULL && in_map_window(qp, psn) &&
	       (qp->rdmap->w[b / 64] >> (b % 64) & 1);
}

/* Records response @psn as placed; false when it cannot be (too far
 * ahead, or no memory for the map): the caller drops it. */
static bool
map_set(struct droce_qp *qp, uint32_t psn)
{
	uint32_t b = psn % DROCE_RC_RDMAP_BITS;

	if (!in_map_window(qp, psn))
		return false;
	if (qp->rdmap == NULL && (qp->rdmap = calloc(1, sizeof(*qp->rdmap))) == NULL)
		return false;
	qp->rdmap->w[b / 64] |= 1ull << (b % 64);
	return true;
}

/* Clears @psn's bit; true when it was set. */
static bool
map_take(struct droce_qp *qp, uint32_t psn)
{
	uint32_t b = psn % DROCE_RC_RDMAP_BITS;
	uint64_t bit = 1ull << (b % 64);

	if (!map_has(qp, psn))
		return false;
	qp->rdmap->w[b / 64] &= ~bit;
	return true;
}

void
droce_rc_rdmap_reset_lc(struct droce_qp *qp)
{
	if (qp->rdmap != NULL)
		memset(qp->rdmap, 0, sizeof(*qp->rdmap));
}

void
droce_rc_rdmap_free(struct droce_qp *qp)
{
	free(qp->rdmap);
	qp->rdmap = NULL;
}

/* True when response @k of READ @s is placed. */
static bool
placed(const struct droce_qp *qp, const struct droce_swqe *s, uint32_t k)
{
	return (uint64_t)k * qp->attr.pmtu < s->got || map_has(qp, droce_psn_add(s->first_psn, k));
}

enum droce_rc_place
droce_rc_read_place_lc(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s,
		       const struct droce_pkt *p, const uint8_t *frame, uint32_t psn)
{
	uint32_t pmtu = qp->attr.pmtu, len = p->payload_len, flags = p->info->flags;
	uint32_t k = (uint32_t)droce_psn_diff(psn, s->first_psn);
	uint64_t off = (uint64_t)k * pmtu;
	uint32_t want;

	if (s->done || placed(qp, s, k))
		return DROCE_RC_PLACE_DUP;
	want = (uint32_t)RTE_MIN((uint64_t)pmtu, w->length - off);
	/* every response carries exactly its share; the READ's last one says so
	 * (a LAST before it ends the answer to a READ asked for part of it) */
	if (len != want || (k + 1 == s->npkts && !(flags & DROCE_OPF_LAST)))
		return DROCE_RC_PLACE_BAD;
	if (off != s->got && !map_set(qp, psn))
		return DROCE_RC_PLACE_DROP; /* too far ahead, or no map: asked again later */
	if (!scatter(qp, w->sge, w->num_sge, (uint32_t)off, p->payload, len)) {
		map_take(qp, psn);
		return DROCE_RC_PLACE_PROT;
	}
	if (off != s->got) {
		qp->stats.read_ooo++;
		return DROCE_RC_PLACE_OK;
	}
	/* in order: the prefix grows over what arrived past it */
	s->got += len;
	while (s->got < w->length &&
	       map_take(qp, droce_psn_add(s->first_psn, s->got / pmtu)))
		s->got += RTE_MIN(pmtu, w->length - s->got);
	if (s->got == w->length) {
		s->done = true;
		if (s->rd_counted) {
			s->rd_counted = false;
			qp->rd_atomic_out--;
		}
	}
	return DROCE_RC_PLACE_OK;
}

/* The READ request for READ @s's responses [@k, @j): false without an mbuf. */
static __rte_always_inline bool
read_req(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s, uint32_t k, uint32_t j)
{
	uint32_t pmtu = qp->attr.pmtu;
	uint8_t opcode = DROCE_OPC(qp->xport, DROCE_OP_READ_REQ);
	const struct droce_opcode_info *oi = &droce_opcode_table[opcode];
	uint64_t end = RTE_MIN((uint64_t)j * pmtu, (uint64_t)w->length);
	struct droce_reth *reth;
	uint8_t *bth, *payload;
	struct rte_mbuf *m = droce_xport_pkt_put_lc(qp, opcode, 1u << 31 | droce_psn_add(s->first_psn, k),
						    0, &bth, &payload);

	if (m == NULL)
		return false;
	if (oi->hdr_mask & DROCE_HDRM(XRCETH)) /* XRC: the remote SRQ */
		droce_xrceth_set_srqn((struct droce_xrceth *)(bth + oi->off[DROCE_HDR_XRCETH]),
				      w->remote_qpn);
	reth = (struct droce_reth *)(bth + oi->off[DROCE_HDR_RETH]);
	droce_reth_set_va(reth, w->remote_addr + (uint64_t)k * pmtu);
	droce_reth_set_rkey(reth, w->rkey);
	droce_reth_set_len(reth, (uint32_t)(end - (uint64_t)k * pmtu));
	pkt_send(qp, m, 0);
	if (s->reask || s->sr_asked)
		qp->stats.read_reasks++;
	return true;
}

/*
 * Sends a READ request for each range of READ @s's responses [@k, @lim) that
 * has not arrived.  Returns requests sent; *@stop is where it stopped (@lim
 * when it got there, else the pool was empty).
 */
static unsigned int
ask_ranges(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s, uint32_t k,
	   uint32_t lim, uint32_t *stop)
{
	unsigned int n = 0;

	while (!s->done && k < lim) {
		uint32_t j;

		if (placed(qp, s, k)) {
			k++;
			continue;
		}
		for (j = k + 1; j < lim && !placed(qp, s, j); j++)
			if (!in_map_window(qp, droce_psn_add(s->first_psn, j))) {
				j = lim; /* nothing past the map's reach is placed */
				break;
			}
		if (!read_req(qp, w, s, k, j))
			break;
		n++;
		k = j;
	}
	*stop = RTE_MIN(k, lim);
	return n;
}

bool
droce_rc_read_ask_fresh_lc(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s)
{
	return read_req(qp, w, s, 0, s->npkts);
}

unsigned int
droce_rc_read_ask_lc(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s,
		     bool *whole)
{
	uint32_t pmtu = qp->attr.pmtu, k = RTE_MAX(s->sent, s->got) / pmtu, stop;
	unsigned int n;

	*whole = false;
	if (s->sent_pkts == s->npkts && !s->reask)
		k = s->npkts; /* asked already, and not since found missing anything */
	n = ask_ranges(qp, w, s, k, s->npkts, &stop);
	if (stop < s->npkts && !s->done) {
		s->sent = stop * pmtu; /* go on from here next time */
		return n;
	}
	s->sent = 0;
	s->reask = false;
	*whole = true;
	return n;
}

void
droce_rc_sr_read_repair_lc(struct droce_qp *qp, const struct droce_wqe *w, struct droce_swqe *s,
			   uint32_t lim, bool again)
{
	uint32_t k;

	if (again)
		s->sr_asked = 0; /* a new round shows the holes again */
	k = RTE_MAX(s->sr_asked, s->got / qp->attr.pmtu);
	lim = RTE_MIN(lim, s->npkts);
	if (k >= lim)
		return;
	s->sr_asked = RTE_MAX(s->sr_asked, 1u); /* what follows is asked again (counted) */
	ask_ranges(qp, w, s, k, lim, &k);
	s->sr_asked = RTE_MAX(k, 1u);
	droce_rc_rtt_cancel_lc(qp, droce_psn_add(s->first_psn, k)); /* Karn */
}
