/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: Posting: receive slots, send WRs for every verb (old and new post API),
 * and the --check bookkeeping of what was sent and what arrived (UC/UD losses).
 */
#include "perf.h"

/* ---- posting ---- */

void
post_recv_slot(struct pair *p, uint32_t pi, int side, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rx_slot(p, side, slot),
		.length = (uint32_t)(R.lay.size + R.grh),
		.lkey = R.s[side].mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = ((uint64_t)pi << WRID_SHIFT) | slot, .sg_list = &sge, .num_sge = 1,
	};
	struct ibv_recv_wr *bad;
	int rc;

	/* teardown: completions of a destroyed QP may still sit in the shared
	 * CQ (polled while the rdma_cm channel closes); nothing to repost */
	if (p->qp[side] == NULL)
		return;
	rc = ibv_post_recv(p->qp[side], &wr, &bad);
	if (rc != 0)
		fail("ibv_post_recv (%s, QP pair %u): %s", R.s[side].role, pi, strerror(rc));
}

/* Address of receive slot @i of @peer: in this process, or (two processes)
 * in the peer's receive area, which starts at the vaddr it sent. */
uint64_t
peer_slot(const struct pair *p, int peer, uint64_t i)
{
	if (!R.two)
		return (uintptr_t)rx_slot(p, peer, i);
	return p->rem.vaddr + (i % R.rem_nrx) * R.lay.stride;
}

/* ibv_create_qp, or with --new-post ibv_create_qp_ex asking the builder
 * operation the test posts (as perftest). */
struct ibv_qp *
create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *qp;

	if (!o.new_post)
		return ibv_create_qp(pd, ia);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, ia, sizeof(*ia));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.pd = pd;
	switch (o.verb) {
	case V_WRITE:
		ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
		break;
	case V_READ:
		ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ;
		break;
	case V_SEND:
		ax.send_ops_flags = IBV_QP_EX_WITH_SEND;
		break;
	case V_ATOMIC:
		ax.send_ops_flags = o.cmp_swap ? IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
					       : IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		break;
	}
	qp = ibv_create_qp_ex(pd->context, &ax);
	if (qp != NULL) {
		memcpy(ia, &ax, sizeof(*ia));
		if (ibv_qp_to_qp_ex(qp) == NULL)
			fail("ibv_qp_to_qp_ex: the QP has no ibv_wr_* builder");
	}
	return qp;
}

/* ibv_post_send, or with --new-post the same WRs through the ibv_wr_* builder
 * as one batch (perftest's new post: nothing of a failed batch is posted, so
 * *bad is then the first WR). */
int
post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	static struct ibv_qp *last_qp; /* the QP last posted to, and its ibv_qp_ex */
	static struct ibv_qp_ex *last_x;
	struct ibv_qp_ex *x;
	int rc;

	if (!o.new_post)
		return ibv_post_send(qp, wr, bad);
	if (qp != last_qp) {
		last_x = ibv_qp_to_qp_ex(qp);
		last_qp = qp;
	}
	x = last_x;
	ibv_wr_start(x);
	for (struct ibv_send_wr *w = wr; w != NULL; w = w->next) {
		x->wr_id = w->wr_id;
		x->wr_flags = w->send_flags;
		switch (w->opcode) {
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(x, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
			break;
		case IBV_WR_SEND:
			ibv_wr_send(x);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(x, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
					      w->wr.atomic.compare_add, w->wr.atomic.swap);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(x, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
						w->wr.atomic.compare_add);
			break;
		default:
			ibv_wr_abort(x);
			*bad = w;
			return EINVAL;
		}
		if (o.qpt == IBV_QPT_UD)
			ibv_wr_set_ud_addr(x, w->wr.ud.ah, w->wr.ud.remote_qpn, w->wr.ud.remote_qkey);
		if (w->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(x, (void *)(uintptr_t)w->sg_list[0].addr,
					       w->sg_list[0].length);
		else if (w->num_sge == 1)
			ibv_wr_set_sge(x, w->sg_list[0].lkey, w->sg_list[0].addr,
				       w->sg_list[0].length);
		else
			ibv_wr_set_sge_list(x, (size_t)w->num_sge, w->sg_list);
	}
	rc = ibv_wr_complete(x);
	if (rc != 0)
		*bad = wr;
	return rc;
}

/* Fills the WR for message @seq of pair @pi from @side to the other side. */
void
make_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, struct pair *p, uint32_t pi, int side,
	uint64_t seq, bool signaled)
{
	int peer = !side;
	uint8_t *src = tx_slot(p, side, seq);
	uint64_t dst = peer_slot(p, peer, seq);
	uint32_t rkey = R.two ? p->rem.rkey : R.s[peer].mr->rkey;
	uint32_t len = (uint32_t)R.lay.size;

	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)src;
	sge->length = len;
	sge->lkey = R.s[side].mr->lkey;
	wr->wr_id = ((uint64_t)pi << WRID_SHIFT) | (seq & WRID_MASK);
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	switch (o.verb) {
	case V_WRITE:
		wr->opcode = IBV_WR_RDMA_WRITE;
		wr->wr.rdma.remote_addr = dst;
		wr->wr.rdma.rkey = rkey;
		break;
	case V_READ:
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = dst;
		wr->wr.rdma.rkey = rkey;
		break;
	case V_SEND:
		wr->opcode = IBV_WR_SEND;
		if (o.qpt == IBV_QPT_UD) {
			wr->wr.ud.ah = p->ah[side];
			wr->wr.ud.remote_qpn = p->rem_qpn[side];
			wr->wr.ud.remote_qkey = R.rem_qkey;
		}
		break;
	case V_ATOMIC:
		sge->length = 8;
		wr->wr.atomic.remote_addr = peer_slot(p, peer, 0);
		wr->wr.atomic.rkey = rkey;
		if (o.cmp_swap) {
			wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			wr->wr.atomic.compare_add = seq;
			wr->wr.atomic.swap = seq + 1;
		} else {
			wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr->wr.atomic.compare_add = 1;
		}
		break;
	}
	if ((o.verb == V_WRITE || o.verb == V_SEND) && len <= (uint32_t)o.inline_size)
		wr->send_flags |= IBV_SEND_INLINE;
}

/* What --check puts in place before message @seq is posted. */
void
check_prepare(struct pair *p, uint32_t pi, int side, uint64_t seq)
{
	switch (o.verb) {
	case V_WRITE:
	case V_SEND:
		pattern_fill(tx_slot(p, side, seq), R.lay.size, pi, seq);
		break;
	case V_READ:
		/* the responder's memory holds the message the READ fetches (two
		 * processes: the server filled slot j with message j at setup) */
		if (!R.two)
			pattern_fill(rx_slot(p, !side, seq), R.lay.size, pi, seq);
		break;
	case V_ATOMIC:
		memset(tx_slot(p, side, seq), 0xee, 8);
		break;
	}
}

/* --check once message @seq from @side completed (WRITE, READ, atomics). */
void
check_completed(struct pair *p, uint32_t pi, int side, uint64_t seq)
{
	const uint8_t *b;
	int64_t off;
	uint64_t v;

	switch (o.verb) {
	case V_WRITE:
		if (R.two)
			break; /* the server checks its memory at the end of the run */
		if (o.qpt == IBV_QPT_UC)
			break; /* sent is not landed: uc_write_verify checks it later */
		b = rx_slot(p, !side, seq);
		inject(rx_slot(p, !side, seq), R.lay.size, pi, seq);
		off = pattern_check(b, R.lay.size, pi, seq);
		if (off >= 0)
			check_failed("RDMA WRITE, responder's memory", pi, seq, b, R.lay.size, off);
		break;
	case V_READ:
		b = tx_slot(p, side, seq);
		inject(tx_slot(p, side, seq), R.lay.size, pi, seq);
		{
			uint64_t want = R.two ? seq % R.rem_nrx : seq;

			off = pattern_check(b, R.lay.size, pi, want);
			if (off >= 0)
				check_failed("RDMA READ, requester's buffer", pi, want, b,
					     R.lay.size, off);
		}
		break;
	case V_ATOMIC:
		inject(tx_slot(p, side, seq), 8, pi, seq);
		memcpy(&v, tx_slot(p, side, seq), 8);
		if (v != seq)
			fail("--check: %s on QP pair %u, operation %" PRIu64 ": returned %" PRIu64
			     ", expected %" PRIu64, o.cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD",
			     pi, seq, v, seq);
		break;
	case V_SEND:
		break; /* checked at the receive completion */
	}
}

/* The first (@tail false) or last (@tail true) up to 8 bytes at @p are
 * those of message @seq (as pattern_fill writes them). */
bool
pattern_end_matches(const uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq, bool tail)
{
	uint64_t k = mix64(((uint64_t)qp << 44) ^ seq ^ 0x5eed);
	uint64_t n = len < 8 ? len : 8, from = tail ? len - n : 0;

	for (uint64_t off = from; off < from + n; off++) {
		uint64_t v = k + (off / 8) * PAT_STEP;
		uint8_t w[8];

		memcpy(w, &v, 8);
		if (p[off] != (off == len - 1 ? (uint8_t)(seq + 1) : w[off % 8]))
			return false;
	}
	return true;
}


int64_t
find_arrived(const uint8_t *b, uint64_t len, uint32_t qp, uint64_t seq)
{
	for (uint64_t d = 0; d < MAX_LOST_RUN; d++)
		if (pattern_end_matches(b, len, qp, seq + d, false))
			return (int64_t)d;
	return -1;
}

void
check_received(struct pair *p, uint32_t pi, int side, const struct ibv_wc *wc)
{
	uint64_t seq = p->next_seq[side];
	uint32_t slot = (uint32_t)(wc->wr_id & WRID_MASK);
	uint8_t *b = rx_slot(p, side, slot) + R.grh; /* UD: the payload follows the GRH */
	int64_t off;

	if (wc->byte_len != R.lay.size + R.grh)
		fail("--check: SEND on QP pair %u message %" PRIu64 ": received %u B, sent %" PRIu64
		     "%s", pi, seq, wc->byte_len, R.lay.size,
		     R.grh ? " (+ the 40-byte GRH)" : "");
	if (o.qpt != IBV_QPT_RC) {
		int64_t d = find_arrived(b, R.lay.size, pi, seq);

		if (d > 0) {
			p->lost[side] += (uint64_t)d; /* never came: UC/UD do not resend */
			seq += (uint64_t)d;
		}
		for (uint64_t s = p->late_from; d < 0 && p->gave_up && s < seq; s++) {
			/* one that run_bw had given up on, come after all */
			if (pattern_end_matches(b, R.lay.size, pi, s, false)) {
				inject(b, R.lay.size, pi, s);
				off = pattern_check(b, R.lay.size, pi, s);
				if (off >= 0)
					check_failed("SEND, receive buffer", pi, s, b, R.lay.size,
						     off);
				if (p->lost[side] > 0)
					p->lost[side]--;
				return;
			}
		}
	}
	inject(b, R.lay.size, pi, seq);
	off = pattern_check(b, R.lay.size, pi, seq);
	if (off >= 0)
		check_failed("SEND, receive buffer", pi, seq, b, R.lay.size, off);
	p->next_seq[side] = seq + 1;
}

/* A slot's last bytes hold message @seq: its last packet landed (UC drops
 * the rest of a message after a lost packet, so every packet landed). */
bool
landed(const uint8_t *b, uint32_t pi, uint64_t seq)
{
	return pattern_end_matches(b, R.lay.size, pi, seq, true);
}

/*
 * UC write_bw --check, loopback.  A UC WRITE completes at the requester
 * once sent; it lands in the responder's memory a little later, or never
 * (a lost packet loses the message).  Messages posted and not yet checked
 * get their verdict up to the newest one that landed (those before it that
 * did not land never will: UC does not reorder), or all of them with
 * @force, when nothing landed for a while.  A landed message must hold every
 * byte of its pattern; one that did not land is counted lost.  run_bw posts
 * into a slot only once its previous message was checked.
 */
void
uc_write_verify(struct pair *p, uint32_t pi, bool force, uint64_t now)
{
	uint64_t upto = p->posted;

	if (p->checked >= upto)
		return;
	if (!force) {
		/* the newest landed message, by bisection: the landed ones come
		 * first, then those in flight (a lost one in the way only makes
		 * this step shorter) */
		uint64_t a = p->checked, b = p->posted;

		upto = 0;
		while (a < b) {
			uint64_t m = a + (b - a) / 2;

			if (landed(rx_slot(p, 1, m), pi, m)) {
				upto = m + 1;
				a = m + 1;
			} else {
				b = m;
			}
		}
		if (upto == 0)
			return;
	}
	for (uint64_t s = p->checked; s < upto; s++) {
		uint8_t *b = rx_slot(p, 1, s);
		int64_t off;

		if (!landed(b, pi, s)) {
			p->lost[1]++;
			continue;
		}
		p->last_arrival = now;
		R.last_recv = now;
		inject(b, R.lay.size, pi, s);
		off = pattern_check(b, R.lay.size, pi, s);
		if (off >= 0)
			check_failed("RDMA WRITE (UC), responder's memory", pi, s, b, R.lay.size,
				     off);
	}
	p->checked = upto;
}
