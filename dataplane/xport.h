/* SPDX-License-Identifier: BSD-3-Clause
 * Helpers every transport (rc_*.c, uc.c, ud.c) shares: memory key checks,
 * gather / scatter through SGE lists, building and sending one packet, the
 * request opcode of a segment, and the request builder (one data packet of a
 * WQE; the next segment of a SEND / WRITE).  Static inline so that moving them here
 * out of rc.c changed nothing on the RC fast path.  Engine-side only.
 */
#ifndef DROCE_XPORT_H
#define DROCE_XPORT_H

#include <string.h>

#include <rte_mbuf.h>
#include <rte_memcpy.h>

#include "engine.h"
#include "icrc.h"
#include "mw.h"
#include "qp_internal.h"
#include "wire_tmpl.h"
#include "pmd_glue/port_struct.h"

#define DROCE_XPORT_DEFAULT_PKEY 0xffff

/* RC selective repeat (rc_sr.c): [engines] selective_repeat, and the hint RC
 * requests then carry in the BTH's Resv6a bits (not in the ICRC); responses,
 * ACKs and NAKs carry it only once the peer's requests showed it */
#define DROCE_RC_SR_HINT 0x01
extern bool droce_rc_sr_on;

static inline bool
droce_xport_wr_is_write(uint8_t op)
{
	return op == DROCE_WR_RDMA_WRITE || op == DROCE_WR_RDMA_WRITE_WITH_IMM;
}

/* The MR @key names, if it covers [va, va + len) with rights @need for this QP's PD.
 * A remote access (@need has a remote right) may name a memory window instead:
 * then the window's rights and bounds decide, and its MR is returned. */
static inline const struct droce_mr *
droce_xport_mr_check_lc(const struct droce_qp *qp, uint32_t key, uint64_t va, uint64_t len,
			uint32_t need)
{
	uintptr_t e = droce_key_entry_lc(key);
	const struct droce_mr *mr = (const struct droce_mr *)e;

	if (e & DROCE_KEY_MW)
		return (need & DROCE_ACCESS_REMOTE_ANY)
			       ? droce_mw_check_lc(qp, (const struct droce_mw *)(e & ~DROCE_KEY_MW), key,
						   va, len, need)
			       : NULL;
	if (mr == NULL || mr->lkey != key || mr->pd_id != qp->pd_id || (mr->access & need) != need)
		return NULL;
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return NULL;
	return mr;
}

/* True when every non-empty SGE of @w lies in an MR of the QP's PD with rights @need. */
static inline bool
droce_xport_sges_ok_lc(const struct droce_qp *qp, const struct droce_wqe *w, uint32_t need)
{
	if (w->flags & DROCE_WQE_INLINE)
		return true;
	for (unsigned int i = 0; i < w->num_sge; i++)
		if (w->sge[i].length &&
		    droce_xport_mr_check_lc(qp, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length,
					    need) == NULL)
			return false;
	return true;
}

/* Copies @len bytes at offset @off of the WQE's gather list into @dst. */
static inline bool
droce_xport_gather_lc(const struct droce_qp *qp, const struct droce_wqe *w, uint32_t off,
		      uint8_t *dst, uint32_t len)
{
	if (w->flags & DROCE_WQE_INLINE) {
		memcpy(dst, w->inline_data + off, len);
		return true;
	}
	for (unsigned int i = 0; i < w->num_sge && len > 0; i++) {
		const struct droce_sge *sg = &w->sge[i];
		const struct droce_mr *mr;
		uint32_t n;

		if (off >= sg->length) {
			off -= sg->length;
			continue;
		}
		n = RTE_MIN(len, sg->length - off);
		mr = droce_xport_mr_check_lc(qp, sg->lkey, sg->addr + off, n, 0);
		if (mr == NULL)
			return false;
		memcpy(dst, mr->addr + (sg->addr + off - mr->iova), n);
		dst += n;
		len -= n;
		off = 0;
	}
	return len == 0;
}

/* Copies @len bytes from @src to offset @off of a scatter list (local write needed). */
static inline bool
droce_xport_scatter_lc(const struct droce_qp *qp, const struct droce_sge *sges, unsigned int nsge,
		       uint32_t off, const uint8_t *src, uint32_t len)
{
	for (unsigned int i = 0; i < nsge && len > 0; i++) {
		const struct droce_sge *sg = &sges[i];
		const struct droce_mr *mr;
		uint32_t n;

		if (off >= sg->length) {
			off -= sg->length;
			continue;
		}
		n = RTE_MIN(len, sg->length - off);
		mr = droce_xport_mr_check_lc(qp, sg->lkey, sg->addr + off, n, DROCE_ACCESS_LOCAL_WRITE);
		if (mr == NULL)
			return false;
		rte_memcpy(mr->addr + (sg->addr + off - mr->iova), src, n);
		src += n;
		len -= n;
		off = 0;
	}
	return len == 0;
}

/*
 * A fresh single-segment mbuf for a frame of @total bytes (its data is the
 * frame: rte_pktmbuf_append without the walk to the last segment), the
 * frame's start at *@buf.  NULL (counted) when the pool is empty or the
 * frame does not fit (nor the template's copy: the ports' pools have data
 * rooms of 2 KiB and more, so that does not happen).
 */
static __rte_always_inline struct rte_mbuf *
droce_xport_frame_lc(struct droce_qp *qp, size_t total, uint8_t **buf)
{
	struct rte_mbuf *m = droce_engine_mbuf_lc(qp->eng, qp->port->mp);
	size_t room;

	if (m == NULL) {
		qp->eng->stats.alloc_fail++;
		return NULL;
	}
	room = rte_pktmbuf_tailroom(m);
	if (unlikely(total > room || room < DROCE_TMPL_COPY)) {
		rte_pktmbuf_free(m);
		qp->eng->stats.alloc_fail++;
		return NULL;
	}
	*buf = rte_pktmbuf_mtod(m, uint8_t *);
	m->data_len = (uint16_t)total;
	m->pkt_len = (uint32_t)total;
	return m;
}

/* The BTH Resv6a bits of a frame of @qp with @opcode: the selective-repeat
 * hint on an RC request (and on responses once the peer showed it). */
static __rte_always_inline uint8_t
droce_xport_resv6a(const struct droce_qp *qp, uint8_t opcode)
{
	if (unlikely(droce_rc_sr_on) && qp->type == DROCE_QPT_RC &&
	    (qp->sr_peer || (opcode & 0x1f) < DROCE_OP_READ_RESP_FIRST ||
	     (opcode & 0x1f) > DROCE_OP_ATOMIC_ACK)) /* a request */
		return DROCE_RC_SR_HINT;
	return 0;
}

/*
 * A packet with the QP's header template (qp->tmpl) and @f (f->dqpn is the
 * caller's; the P_Key is the default one), room for @plen payload bytes at
 * *@payload.  NULL (counted) when the pool is empty.
 */
static __rte_always_inline struct rte_mbuf *
droce_xport_pkt_alloc_lc(struct droce_qp *qp, struct droce_pkt_fields *f, uint32_t plen,
			 uint8_t **payload)
{
	size_t total = droce_frame_len(&qp->tmpl, f->opcode, plen);
	uint8_t *buf;
	struct rte_mbuf *m = droce_xport_frame_lc(qp, total, &buf);

	if (m == NULL)
		return NULL;
	f->pkey = DROCE_XPORT_DEFAULT_PKEY;
	f->resv6a = droce_xport_resv6a(qp, f->opcode);
	/* the mbuf has room for the frame and the template's copy */
	*payload = buf + droce_tmpl_build(&qp->tmpl, buf, RTE_MAX(total, (size_t)DROCE_TMPL_COPY), f,
					  plen);
	return m;
}

/*
 * droce_xport_pkt_alloc_lc's packet without a droce_pkt_fields: the QP's
 * header template, the BTH for @opcode (SE, MigReq, FECN and BECN clear,
 * the default P_Key, the pad of @plen, Resv6a as droce_xport_resv6a, the
 * QP's destination) with @bth2 its third word in host order (AckReq, PSN),
 * room for the opcode's extended headers and @plen payload bytes.  *@bth
 * points at the BTH (the extended headers are the caller's to write, at
 * the opcode's offsets from it), *@payload at the payload.  For the
 * answers and requests whose one or two extended headers their builders
 * write themselves (ACK, READ response, atomic ACK, READ request); @opcode
 * is a valid one that may carry @plen bytes.  NULL (counted) when the pool
 * is empty.
 */
static __rte_always_inline struct rte_mbuf *
droce_xport_pkt_put_lc(struct droce_qp *qp, uint8_t opcode, uint32_t bth2, uint32_t plen,
		       uint8_t **bth, uint8_t **payload)
{
	size_t hdr_len = (size_t)qp->tmpl.len + droce_opcode_table[opcode].hdr_len;
	size_t total = hdr_len + plen + (-plen & 3u) + DROCE_ICRC_LEN;
	rte_be32_t w[3];
	uint8_t *buf;
	struct rte_mbuf *m = droce_xport_frame_lc(qp, total, &buf);

	if (m == NULL)
		return NULL;
	w[0] = rte_cpu_to_be_32((uint32_t)opcode << 24 | (-plen & 3u) << 20 |
			       DROCE_XPORT_DEFAULT_PKEY);
	w[1] = rte_cpu_to_be_32((uint32_t)(droce_xport_resv6a(qp, opcode) & 0x3f) << 24 |
			       (qp->attr.dest_qpn & 0xffffffu));
	w[2] = rte_cpu_to_be_32(bth2);
	/* the mbuf has room for the frame and the template's copy */
	droce_tmpl_put(&qp->tmpl, buf, hdr_len, plen, w);
	*bth = buf + qp->tmpl.len;
	*payload = buf + hdr_len;
	return m;
}

/* An AETH of @syndrome and @msn at @p. */
static __rte_always_inline void
droce_xport_put_aeth(uint8_t *p, uint8_t syndrome, uint32_t msn)
{
	((struct droce_aeth *)p)->syn_msn =
		rte_cpu_to_be_32((uint32_t)syndrome << 24 | (msn & 0xffffffu));
}

/* Pads and adds the ICRC (from the template's: only the per-packet header
 * bytes are read): the frame is complete. */
static inline void
droce_xport_pkt_seal_lc(struct droce_qp *qp, struct rte_mbuf *m, uint32_t plen)
{
	uint8_t *buf = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t total = rte_pktmbuf_data_len(m);
	uint8_t *l3 = buf + qp->tmpl.l3_off;
	uint32_t pad = (-plen) & 3u;

	/* the pad zeroed by one fixed 4-byte store (what it writes past the
	 * pad is the ICRC's, stored below) */
	memset(buf + total - DROCE_ICRC_LEN - pad, 0, 4);
	droce_icrc_store(buf + total - DROCE_ICRC_LEN,
			 droce_icrc_tmpl(qp->tmpl.icrc_k, l3, (size_t)(buf + total - DROCE_ICRC_LEN - l3),
					 qp->tmpl.ipv6));
}

/* Seals the frame (droce_xport_pkt_seal_lc) and queues it. */
static inline void
droce_xport_pkt_send_lc(struct droce_qp *qp, struct rte_mbuf *m, uint32_t plen)
{
	droce_xport_pkt_seal_lc(qp, m, plen);
	qp->stats.tx_pkts++;
	droce_engine_tx_lc(qp->eng, qp->port_index, m);
}

/* The request opcode on @transport (RC or UC) of one segment of SEND / WRITE WQE @w. */
static inline uint8_t
droce_xport_request_opcode(const struct droce_wqe *w, bool first, bool last,
			   enum droce_transport transport)
{
	bool imm = w->opcode == DROCE_WR_SEND_WITH_IMM || w->opcode == DROCE_WR_RDMA_WRITE_WITH_IMM;
	bool inv = w->opcode == DROCE_WR_SEND_WITH_INV;
	enum droce_op op;

	if (droce_xport_wr_is_write(w->opcode)) {
		if (first && last)
			op = imm ? DROCE_OP_WRITE_ONLY_IMM : DROCE_OP_WRITE_ONLY;
		else if (first)
			op = DROCE_OP_WRITE_FIRST;
		else if (last)
			op = imm ? DROCE_OP_WRITE_LAST_IMM : DROCE_OP_WRITE_LAST;
		else
			op = DROCE_OP_WRITE_MIDDLE;
	} else {
		if (first && last)
			op = imm ? DROCE_OP_SEND_ONLY_IMM : inv ? DROCE_OP_SEND_ONLY_INV : DROCE_OP_SEND_ONLY;
		else if (first)
			op = DROCE_OP_SEND_FIRST;
		else if (last)
			op = imm ? DROCE_OP_SEND_LAST_IMM : inv ? DROCE_OP_SEND_LAST_INV : DROCE_OP_SEND_LAST;
		else
			op = DROCE_OP_SEND_MIDDLE;
	}
	return DROCE_OPC(transport, op);
}

/* ---- the request builder RC, UC and UD share ---- */

enum droce_xport_tx {
	DROCE_XPORT_TX_SENT,   /* queued */
	DROCE_XPORT_TX_NOMBUF, /* nothing built: the pool is empty, try again later */
	DROCE_XPORT_TX_PROT,   /* the gather failed (an lkey or the MR went away) */
};

/* zcopy.c: one packet with header fields @f whose @len payload bytes at @src
 * lie in @mr, sent zero-copy (SENT or NOMBUF). */
enum droce_xport_tx droce_zc_send_span_lc(struct droce_qp *qp, struct droce_pkt_fields *f,
					  const struct droce_mr *mr, const uint8_t *src,
					  uint32_t len);
/* The same for @len bytes at offset @off of WQE @w's gather list: false
 * when they do not lie in one SGE (copy them), else true with *@rc SENT,
 * NOMBUF, or PROT when the SGE's MR check fails. */
bool droce_zc_send_wqe_lc(struct droce_qp *qp, const struct droce_wqe *w,
			  struct droce_pkt_fields *f, uint32_t off, uint32_t len,
			  enum droce_xport_tx *rc);

/* True when a payload of @len bytes goes out zero-copy on @qp: at least the
 * port's threshold (UINT32_MAX when the port has no multi-segment transmit
 * or zero_copy = 0), RC or XRC only (see zcopy.c). */
static inline bool
droce_xport_zc_ok(const struct droce_qp *qp, uint32_t len)
{
	return len >= qp->port->zc_min && qp->type == DROCE_QPT_RC;
}

/* Copies the @len payload bytes at message offset @off of WQE @w to
 * @payload: from @mr (droce_xport_send_data_lc's) or through the gather
 * list (false: an SGE's MR check failed). */
static __rte_always_inline bool
droce_xport_payload_lc(const struct droce_qp *qp, const struct droce_wqe *w,
		       const struct droce_mr *mr, uint32_t off, uint8_t *payload, uint32_t len)
{
	if (mr != NULL) {
		memcpy(payload, mr->addr + (w->sge[0].addr + off - mr->iova), len);
		return true;
	}
	return droce_xport_gather_lc(qp, w, off, payload, len);
}

/*
 * One packet of WQE @w: the header template and @f (the caller's opcode,
 * PSN, destination and extended headers), @len payload bytes gathered from
 * the WQE's SGEs at message offset @off, padded, ICRC'd and queued; zero-copy
 * (zcopy.c) when droce_xport_zc_ok and the bytes lie in one SGE.  @mr, when
 * not NULL, is the MR of the WQE's one SGE, checked over that whole SGE in
 * this engine turn (the RCU grace period keeps it alive): the bytes are
 * copied from it with no second key lookup.
 */
static inline enum droce_xport_tx
droce_xport_send_data_lc(struct droce_qp *qp, const struct droce_wqe *w,
			 struct droce_pkt_fields *f, uint32_t off, uint32_t len,
			 const struct droce_mr *mr)
{
	uint8_t *payload;
	struct rte_mbuf *m;
	enum droce_xport_tx rc;

	if (droce_xport_zc_ok(qp, len) && !(w->flags & DROCE_WQE_INLINE) &&
	    droce_zc_send_wqe_lc(qp, w, f, off, len, &rc))
		return rc;
	m = droce_xport_pkt_alloc_lc(qp, f, len, &payload);
	if (m == NULL)
		return DROCE_XPORT_TX_NOMBUF;
	if (!droce_xport_payload_lc(qp, w, mr, off, payload, len)) {
		rte_pktmbuf_free(m);
		return DROCE_XPORT_TX_PROT;
	}
	droce_xport_pkt_send_lc(qp, m, len);
	return DROCE_XPORT_TX_SENT;
}

/*
 * A SEND / WRITE request's extended headers after the BTH at @bth0, from
 * its WQE: XRCETH (the remote SRQ), RETH (remote address and key, the
 * message length), ImmDt, IETH, as opcode @oi carries them.
 */
static __rte_always_inline void
droce_xport_req_ext_headers(uint8_t *bth0, const struct droce_opcode_info *oi,
			    const struct droce_wqe *w)
{
	uint16_t hm = oi->hdr_mask;

	if (hm == DROCE_HDRM(RETH)) { /* WRITE_FIRST / WRITE_ONLY */
		struct droce_reth *r = (struct droce_reth *)(bth0 + sizeof(struct droce_bth));

		droce_reth_set_va(r, w->remote_addr);
		droce_reth_set_rkey(r, w->rkey);
		droce_reth_set_len(r, w->length);
		return;
	}
	if (hm & DROCE_HDRM(XRCETH))
		droce_xrceth_set_srqn((struct droce_xrceth *)(bth0 + oi->off[DROCE_HDR_XRCETH]),
				      w->remote_qpn);
	if (hm & DROCE_HDRM(RETH)) {
		struct droce_reth *r = (struct droce_reth *)(bth0 + oi->off[DROCE_HDR_RETH]);

		droce_reth_set_va(r, w->remote_addr);
		droce_reth_set_rkey(r, w->rkey);
		droce_reth_set_len(r, w->length);
	}
	if (hm & DROCE_HDRM(IMMDT))
		droce_immdt_set_imm((struct droce_immdt *)(bth0 + oi->off[DROCE_HDR_IMMDT]), w->imm);
	if (hm & DROCE_HDRM(IETH))
		droce_ieth_set_rkey((struct droce_ieth *)(bth0 + oi->off[DROCE_HDR_IETH]),
				    w->invalidate_rkey);
}

/*
 * The copy path of droce_xport_send_segment_lc: one SEND / WRITE request
 * packet with opcode @opcode, BTH words @bth1 (Resv6a, destination QP) and
 * @bth2 (AckReq, PSN) in host order, SE @se, built straight from WQE @w (no
 * droce_pkt_fields: the BTH's first word made here, the template put by
 * droce_tmpl_put, the extended headers from the WQE), @len payload bytes
 * from message offset @off; as droce_xport_send_data_lc otherwise.
 */
static __rte_always_inline enum droce_xport_tx
droce_xport_send_req_lc(struct droce_qp *qp, const struct droce_wqe *w, uint8_t opcode,
			bool se, uint32_t bth1, uint32_t bth2, uint32_t off, uint32_t len,
			const struct droce_mr *mr)
{
	const struct droce_opcode_info *oi = &droce_opcode_table[opcode];
	size_t hdr_len = (size_t)qp->tmpl.len + oi->hdr_len;
	size_t total = hdr_len + len + (-len & 3u) + DROCE_ICRC_LEN;
	rte_be32_t bth[3];
	struct rte_mbuf *m;
	uint8_t *buf;

	m = droce_xport_frame_lc(qp, total, &buf);
	if (m == NULL)
		return DROCE_XPORT_TX_NOMBUF;
	bth[0] = rte_cpu_to_be_32((uint32_t)opcode << 24 | (uint32_t)se << 23 | (-len & 3u) << 20 |
				  DROCE_XPORT_DEFAULT_PKEY);
	bth[1] = rte_cpu_to_be_32(bth1);
	bth[2] = rte_cpu_to_be_32(bth2);
	droce_tmpl_put(&qp->tmpl, buf, hdr_len, len, bth);
	if (oi->hdr_mask)
		droce_xport_req_ext_headers(buf + qp->tmpl.len, oi, w);
	if (!droce_xport_payload_lc(qp, w, mr, off, buf + hdr_len, len)) {
		rte_pktmbuf_free(m);
		return DROCE_XPORT_TX_PROT;
	}
	droce_xport_pkt_send_lc(qp, m, len);
	return DROCE_XPORT_TX_SENT;
}

/*
 * The next segment of SEND / WRITE WQE @w on RC or UC (@transport): at most
 * a path MTU of payload from where @s stands, the opcode for its place in the
 * message, PSN first_psn + sent_pkts, SE on the last, immediate, IETH, RETH;
 * AckReq on the last and on every @ackreq_every-th packet (0: never, UC), and
 * on a re-sent packet that was the last one sent (a timeout's probe); @mr
 * as droce_xport_send_data_lc's.
 * On SENT @s->sent and @s->sent_pkts move on and *@last says whether the
 * message is all out; on PROT @s->err is LOC_PROT.
 */
static inline enum droce_xport_tx
droce_xport_send_segment_lc(struct droce_qp *qp, const struct droce_wqe *w,
			    struct droce_swqe *s, enum droce_transport transport,
			    uint32_t ackreq_every, const struct droce_mr *mr, bool *last)
{
	uint32_t len = RTE_MIN(qp->attr.pmtu, w->length - s->sent);
	bool first = s->sent_pkts == 0;
	uint32_t psn = droce_psn_add(s->first_psn, s->sent_pkts);
	uint8_t opcode;
	bool ackreq, se;
	enum droce_xport_tx rc;

	*last = s->sent + len == w->length;
	opcode = droce_xport_request_opcode(w, first, *last, transport);
	ackreq = ackreq_every && (*last || (s->sent_pkts + 1) % ackreq_every == 0 ||
				  droce_psn_add(psn, 1) == qp->psn_max);
	se = *last && (w->flags & DROCE_WQE_SOLICITED);
	if (unlikely(droce_xport_zc_ok(qp, len)) && !(w->flags & DROCE_WQE_INLINE)) {
		struct droce_pkt_fields f;

		memset(&f, 0, sizeof(f));
		f.opcode = opcode;
		f.dqpn = qp->attr.dest_qpn;
		f.psn = psn;
		f.ackreq = ackreq;
		f.se = se;
		f.imm = w->imm;
		f.ieth_rkey = w->invalidate_rkey;
		f.xrc_srqn = w->remote_qpn; /* XRC: the remote SRQ (read only for XRC opcodes) */
		f.reth.va = w->remote_addr;
		f.reth.rkey = w->rkey;
		f.reth.len = w->length;
		rc = droce_xport_send_data_lc(qp, w, &f, s->sent, len, mr);
	} else {
		rc = droce_xport_send_req_lc(qp, w, opcode, se,
					     (uint32_t)droce_xport_resv6a(qp, opcode) << 24 |
						     (qp->attr.dest_qpn & 0xffffffu),
					     (uint32_t)ackreq << 31 | psn, s->sent, len, mr);
	}
	if (rc == DROCE_XPORT_TX_SENT) {
		s->sent += len;
		s->sent_pkts++;
	} else if (rc == DROCE_XPORT_TX_PROT) {
		s->err = DROCE_ERR_LOC_PROT; /* the MR went away under the WQE */
	}
	return rc;
}

/* The largest IB MTU (256..4096 bytes) whose packets fit an IP MTU of @ip_mtu
 * (the rule ibv_query_port's active_mtu reports; see droce_verbs_mtu_of). */
static inline uint32_t
droce_xport_ib_mtu(uint32_t ip_mtu)
{
	/* IPv6 40, UDP 8, BTH 12, AtomicETH 28 (largest extended headers), ICRC 4 */
	uint32_t room = ip_mtu > 92 ? ip_mtu - 92 : 0;
	uint32_t mtu = 4096;

	while (mtu > 256 && mtu > room)
		mtu >>= 1;
	return mtu;
}

/*
 * The start of every transport's transmit phase: the QP's view of its posts
 * brought up to date, and a QP in ERR flushes what was posted (WQEs posted to
 * a QP in error complete as flushed).  False when there is nothing to send.
 */
static inline bool
droce_xport_tx_begin_lc(struct droce_qp *qp)
{
	droce_qp_refresh_lc(qp);
	if (qp->state == DROCE_QPS_ERR) {
		droce_qp_set_state_lc(qp, DROCE_QPS_ERR);
		return false;
	}
	return true;
}

/*
 * The transmit phase of a transport whose WQE completes as soon as its
 * frames are queued (UD, RAW_PACKET: sq_cur == sq_head): @send_one sends the
 * oldest WQE, or returns false when it has to wait (no mbuf, no room).
 */
static inline unsigned int
droce_xport_tx_each_lc(struct droce_qp *qp, unsigned int budget,
		       bool (*send_one)(struct droce_qp *qp, uint32_t idx))
{
	unsigned int n = 0;

	if (!droce_xport_tx_begin_lc(qp))
		return 0;
	while (n < budget && qp->state == DROCE_QPS_RTS && qp->sq_head != qp->sq_avail) {
		if (!send_one(qp, qp->sq_head))
			break;
		n++;
	}
	qp->sq_cur = qp->sq_next = qp->sq_head;
	return n;
}

#endif /* DROCE_XPORT_H */
