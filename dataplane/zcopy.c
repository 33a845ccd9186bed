/* SPDX-License-Identifier: BSD-3-Clause
 * Zero-copy transmit (issue 11, "Fewer copies"): a payload of at least the
 * port's zc_min bytes that lies in one MR's contiguous span goes out as a
 * three-segment frame: the headers in an mbuf of the port's pool, the payload
 * as an external buffer pointing straight into the registered memory
 * (rte_pktmbuf_attach_extbuf), and the pad and ICRC in a third mbuf.  The
 * headers come from the QP's template (droce_tmpl_build) and their ICRC from
 * the template's constant, as for a copied frame; the ICRC goes on over the
 * external bytes and the pad while the frame is built.
 *
 * Lifetime: each external segment holds one reference on its MR (zc_refs),
 * dropped by the segment's free callback when a port (memif copies out and
 * frees at transmit) or the receiving engine (an in-process ring pair: it
 * places the payload straight from the sender's memory, then frees the frame
 * at the end of its burst) lets go of it.  droce_mr_unregister() unpublishes
 * the key (no new references) and then waits for zc_refs to fall to 0.
 * The segment's rte_mbuf_ext_shared_info lives in that mbuf's own data room,
 * unused while the external buffer is attached: nothing in droce clones an
 * mbuf (impairment and capture copy), so the segment is its only user.
 *
 * Only for RC (and XRC) QPs: their WQEs complete when the peer acknowledges,
 * after it received the frames.  A UC or UD WQE completes when its frames are
 * queued, and the application may then reuse the buffer: those copy.
 */
#include <rte_mbuf.h>

#include "xport.h"

/* The external segment's free callback: drops the frame's MR reference. */
static void
zc_release(void *addr, void *opaque)
{
	RTE_SET_USED(addr);
	__atomic_fetch_sub(&((struct droce_mr *)opaque)->zc_refs, 1, __ATOMIC_RELEASE);
}

enum droce_xport_tx
droce_zc_send_span_lc(struct droce_qp *qp, struct droce_pkt_fields *f, const struct droce_mr *mr,
		      const uint8_t *src, uint32_t len)
{
	struct droce_engine *eng = qp->eng;
	struct rte_mempool *mp = qp->port->mp;
	uint32_t hlen = (uint32_t)qp->tmpl.len + droce_opcode_table[f->opcode].hdr_len;
	uint32_t pad = (-len) & 3u;
	struct rte_mbuf_ext_shared_info *shinfo;
	struct rte_mbuf *ms[3], *h, *e, *t;
	uint8_t *hb, *tb;
	uint32_t crc;

	if (droce_engine_mbufs_lc(eng, mp, ms, 3) != 0) {
		eng->stats.alloc_fail++;
		return DROCE_XPORT_TX_NOMBUF;
	}
	h = ms[0];
	e = ms[1];
	t = ms[2];
	hb = (uint8_t *)rte_pktmbuf_append(h, (uint16_t)hlen);
	tb = (uint8_t *)rte_pktmbuf_append(t, (uint16_t)(pad + DROCE_ICRC_LEN));
	f->pkey = DROCE_XPORT_DEFAULT_PKEY;
	if (hb == NULL || tb == NULL || len > UINT16_MAX ||
	    droce_tmpl_build(&qp->tmpl, hb, hlen + rte_pktmbuf_tailroom(h), f, len) != hlen) {
		rte_pktmbuf_free(h);
		rte_pktmbuf_free(e);
		rte_pktmbuf_free(t);
		eng->stats.alloc_fail++;
		return DROCE_XPORT_TX_NOMBUF;
	}

	/* the payload: the registered bytes themselves */
	shinfo = rte_pktmbuf_mtod(e, struct rte_mbuf_ext_shared_info *);
	shinfo->free_cb = zc_release;
	shinfo->fcb_opaque = (void *)(uintptr_t)mr;
	rte_mbuf_ext_refcnt_set(shinfo, 1);
	__atomic_fetch_add(&((struct droce_mr *)(uintptr_t)mr)->zc_refs, 1, __ATOMIC_RELAXED);
	rte_pktmbuf_attach_extbuf(e, (void *)(uintptr_t)src, RTE_BAD_IOVA, (uint16_t)len, shinfo);
	e->data_len = (uint16_t)len;
	e->pkt_len = len;

	memset(tb, 0, pad);
	/* the headers by the template's constant (droce_xport_pkt_send_lc's
	 * way), then the registered bytes and the pad */
	crc = droce_icrc_tmpl(qp->tmpl.icrc_k, hb + qp->tmpl.l3_off, hlen - qp->tmpl.l3_off,
			      qp->tmpl.ipv6);
	crc = droce_icrc_update(crc, src, len);
	crc = droce_icrc_update(crc, tb, pad);
	droce_icrc_store(tb + pad, droce_icrc_finish(crc));

	h->next = e;
	e->next = t;
	h->nb_segs = 3;
	h->pkt_len = hlen + len + pad + DROCE_ICRC_LEN;
	qp->stats.tx_pkts++;
	eng->stats.zc_tx++;
	droce_engine_tx_lc(eng, qp->port_index, h);
	return DROCE_XPORT_TX_SENT;
}

bool
droce_zc_send_wqe_lc(struct droce_qp *qp, const struct droce_wqe *w, struct droce_pkt_fields *f,
		     uint32_t off, uint32_t len, enum droce_xport_tx *rc)
{
	for (unsigned int i = 0; i < w->num_sge; i++) {
		const struct droce_sge *sg = &w->sge[i];
		const struct droce_mr *mr;

		if (off >= sg->length) {
			off -= sg->length;
			continue;
		}
		if (sg->length - off < len)
			return false; /* an SGE boundary inside the segment: copied */
		mr = droce_xport_mr_check_lc(qp, sg->lkey, sg->addr + off, len, 0);
		*rc = mr == NULL ? DROCE_XPORT_TX_PROT
				 : droce_zc_send_span_lc(qp, f, mr,
							 mr->addr + (sg->addr + off - mr->iova), len);
		return true;
	}
	return false; /* past the gather list: the copy path reports it */
}
