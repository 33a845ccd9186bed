/* SPDX-License-Identifier: BSD-3-Clause
 * The impaired link: drop, duplicate, reorder, delay and corrupt frames in
 * droce_port_rx_burst / droce_port_tx_burst, per queue and direction, with a
 * deterministic PRNG.  One writer per queue state (the queue's engine); the
 * configuration is published through a seqlock and a generation number.
 *
 * Per queue and direction:
 *   pend   FIFO of frames ready to go (tx: to the PMD, rx: to the caller);
 *          frames the PMD does not take wait here, so nothing is lost to a
 *          full ring and the caller still sees back-pressure.
 *   hold   up to HOLD_MAX frames held for reordering: each goes out after
 *          1..REORDER_GAP_MAX later frames, or after REORDER_HOLD_US.
 *   delay  FIFO of frames with a TSC deadline (delay_us after they came).
 */
#include <errno.h>
#include <netinet/in.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "impair.h"
#include "internal.h"
#include "switch.h"

#define PEND_CAP 512u        /* power of two */
#define HOLD_MAX 8u
#define DELAY_CAP 1024u      /* power of two */
#define REORDER_GAP_MAX 3u
#define REORDER_HOLD_US 100u
#define RX_CHUNK 64u

#define DIR_RX 0
#define DIR_TX 1

struct impair_params {
	uint64_t drop, dup, reorder, delay, corrupt, ce; /* thresholds on a 32-bit draw */
	uint64_t delay_cycles, hold_cycles;
	bool on;
};

struct hold_slot {
	struct rte_mbuf *m;
	uint64_t deadline;
	uint8_t gap, left;
};

struct droce_impair_q {
	uint32_t gen;         /* configuration generation applied */
	struct impair_params pr;
	uint64_t rng;
	uint32_t pend_head, pend_n;
	uint32_t n_hold;
	uint32_t dly_head, dly_n;
	bool cut;             /* the link was cut at the last call */
	struct hold_slot hold[HOLD_MAX];
	struct rte_mbuf *pend[PEND_CAP];
	struct rte_mbuf *dly_m[DELAY_CAP];
	uint64_t dly_t[DELAY_CAP];
};

/* ---- PRNG: splitmix64 (impair.h) ---- */

static inline uint32_t
draw32(struct droce_impair_q *iq)
{
	return (uint32_t)(splitmix64(&iq->rng) >> 32);
}

/* True with the probability @thr / 2^32. */
static inline bool
chance(struct droce_impair_q *iq, uint64_t thr)
{
	return thr != 0 && draw32(iq) < thr;
}

/* Uniform in 0..@range-1. */
static inline uint32_t
below(struct droce_impair_q *iq, uint32_t range)
{
	return (uint32_t)(((uint64_t)draw32(iq) * range) >> 32);
}

static uint64_t
threshold(double p)
{
	if (p <= 0)
		return 0;
	if (p >= 1)
		return UINT64_C(1) << 32;
	return (uint64_t)(p * 4294967296.0 + 0.5);
}

/* ---- configuration ---- */

static void
sync_config(struct droce_port *p, struct droce_impair_q *iq, int dir, uint16_t queue)
{
	uint32_t gen = __atomic_load_n(&p->impair_gen, __ATOMIC_ACQUIRE);
	struct droce_impair_config c;
	unsigned int dirs;
	uint32_t sn;
	uint64_t s;

	if (likely(gen == iq->gen))
		return;
	do {
		sn = rte_seqlock_read_begin(&p->impair_lock);
		c = p->impair;
	} while (rte_seqlock_read_retry(&p->impair_lock, sn));
	iq->gen = gen;
	dirs = c.dir != 0 ? c.dir : DROCE_IMPAIR_DIR_TX;
	iq->pr.on = droce_impair_config_active(&c) &&
		    (dirs & (dir == DIR_RX ? DROCE_IMPAIR_DIR_RX : DROCE_IMPAIR_DIR_TX));
	iq->pr.drop = threshold(c.drop);
	iq->pr.dup = threshold(c.dup);
	iq->pr.reorder = threshold(c.reorder);
	iq->pr.delay = c.delay_us > 0 ? threshold(c.delay) : 0;
	iq->pr.corrupt = threshold(c.corrupt);
	iq->pr.ce = threshold(c.ce);
	iq->pr.delay_cycles = rte_get_tsc_hz() / 1000000 * c.delay_us;
	iq->pr.hold_cycles = rte_get_tsc_hz() / 1000000 * REORDER_HOLD_US;
	/* Restart the stream: same seed, same pattern. */
	s = c.seed ^ ((uint64_t)p->index << 48) ^ ((uint64_t)dir << 40) ^ ((uint64_t)queue << 32);
	iq->rng = splitmix64(&s);
}

int
droce_port_impair_set(struct droce_port *p, const struct droce_impair_config *c)
{
	if (p == NULL || c == NULL)
		return droce_err_set(EINVAL, "droce_port_impair_set: no port or configuration");
	if (droce_impair_config_check(c) < 0)
		return -1;
	rte_seqlock_write_lock(&p->impair_lock);
	p->impair = *c;
	rte_seqlock_write_unlock(&p->impair_lock);
	__atomic_store_n(&p->impair_used, true, __ATOMIC_RELEASE);
	__atomic_add_fetch(&p->impair_gen, 1, __ATOMIC_RELEASE);
	return 0;
}

void
droce_port_impair_get(struct droce_port *p, struct droce_impair_config *out)
{
	uint32_t sn;

	do {
		sn = rte_seqlock_read_begin(&p->impair_lock);
		*out = p->impair;
	} while (rte_seqlock_read_retry(&p->impair_lock, sn));
}

void
droce_port_set_link(struct droce_port *p, bool up)
{
	__atomic_store_n(&p->link_set_down, !up, __ATOMIC_RELEASE);
	if (!up) {
		__atomic_store_n(&p->impair_used, true, __ATOMIC_RELEASE);
		if (p->ring_peer != NULL)
			__atomic_store_n(&p->ring_peer->impair_used, true, __ATOMIC_RELEASE);
	}
}

int
droce_impair_port_init(struct droce_port *p)
{
	uint16_t q;
	int d;

	rte_seqlock_init(&p->impair_lock);
	p->impair = p->cfg->impair;
	p->impair_gen = 1;
	p->impair_used = droce_impair_config_active(&p->impair);
	for (d = 0; d < 2; d++) {
		uint16_t nq = d == DIR_RX ? p->nb_rxq : p->nb_txq;

		for (q = 0; q < nq; q++) {
			p->impq[d][q] = rte_zmalloc_socket("droce_impair", sizeof(struct droce_impair_q),
							   RTE_CACHE_LINE_SIZE, SOCKET_ID_ANY);
			if (p->impq[d][q] == NULL)
				return droce_err_set(ENOMEM, "[%s]: no memory for the impairment state of queue %u (raise -m)",
						     p->cfg->name, q);
		}
	}
	return 0;
}

/* Frees every frame @iq holds; returns how many. */
static uint64_t
purge(struct droce_impair_q *iq)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < iq->pend_n; i++)
		rte_pktmbuf_free(iq->pend[(iq->pend_head + i) & (PEND_CAP - 1)]);
	n += iq->pend_n;
	for (i = 0; i < iq->n_hold; i++)
		rte_pktmbuf_free(iq->hold[i].m);
	n += iq->n_hold;
	for (i = 0; i < iq->dly_n; i++)
		rte_pktmbuf_free(iq->dly_m[(iq->dly_head + i) & (DELAY_CAP - 1)]);
	n += iq->dly_n;
	iq->pend_head = iq->pend_n = iq->n_hold = iq->dly_head = iq->dly_n = 0;
	return n;
}

/* A cut link on the transmit side: frees the frames @iq holds for the link
 * and keeps, in their order, the ones looped inside droce; returns how many
 * it freed. */
static uint64_t
purge_wire(struct droce_port *p, struct droce_impair_q *iq)
{
	uint64_t n = 0;
	uint32_t i, k;

	for (i = k = 0; i < iq->pend_n; i++) {
		struct rte_mbuf *m = iq->pend[(iq->pend_head + i) & (PEND_CAP - 1)];

		if (droce_port_loop_dest(p, m) != NULL) {
			iq->pend[(iq->pend_head + k++) & (PEND_CAP - 1)] = m;
		} else {
			rte_pktmbuf_free(m);
			n++;
		}
	}
	iq->pend_n = k;
	for (i = k = 0; i < iq->n_hold; i++) {
		if (droce_port_loop_dest(p, iq->hold[i].m) != NULL) {
			iq->hold[k++] = iq->hold[i];
		} else {
			rte_pktmbuf_free(iq->hold[i].m);
			n++;
		}
	}
	iq->n_hold = k;
	for (i = k = 0; i < iq->dly_n; i++) {
		uint32_t from = (iq->dly_head + i) & (DELAY_CAP - 1);
		uint32_t to = (iq->dly_head + k) & (DELAY_CAP - 1);

		if (droce_port_loop_dest(p, iq->dly_m[from]) != NULL) {
			iq->dly_m[to] = iq->dly_m[from];
			iq->dly_t[to] = iq->dly_t[from];
			k++;
		} else {
			rte_pktmbuf_free(iq->dly_m[from]);
			n++;
		}
	}
	iq->dly_n = k;
	return n;
}

void
droce_impair_port_fini(struct droce_port *p)
{
	unsigned int d, q;

	for (d = 0; d < 2; d++) {
		for (q = 0; q < DROCE_MAX_QUEUES; q++) {
			if (p->impq[d][q] == NULL)
				continue;
			purge(p->impq[d][q]);
			rte_free(p->impq[d][q]);
			p->impq[d][q] = NULL;
		}
	}
}

/* ---- the queues ---- */

static inline bool
has_held(const struct droce_impair_q *iq)
{
	return iq->pend_n != 0 || iq->n_hold != 0 || iq->dly_n != 0;
}

static inline void
pend_push(struct droce_impair_q *iq, struct rte_mbuf *m)
{
	RTE_ASSERT(iq->pend_n < PEND_CAP);
	iq->pend[(iq->pend_head + iq->pend_n) & (PEND_CAP - 1)] = m;
	iq->pend_n++;
}

static inline void
hold_remove(struct droce_impair_q *iq, uint32_t i)
{
	memmove(&iq->hold[i], &iq->hold[i + 1], (iq->n_hold - i - 1) * sizeof(iq->hold[0]));
	iq->n_hold--;
}

/* Sends @m on; held frames it overtakes go out after it once their gap is met. */
static void
emit(struct droce_impair_q *iq, struct droce_impair_stats *st, struct rte_mbuf *m)
{
	uint32_t i;

	pend_push(iq, m);
	for (i = 0; i < iq->n_hold;) {
		struct hold_slot *h = &iq->hold[i];

		if (h->left > 0)
			h->left--;
		if (h->left == 0 && iq->pend_n < PEND_CAP) {
			pend_push(iq, h->m);
			st->reordered++;
			hold_remove(iq, i);
		} else {
			i++;
		}
	}
}

/* Moves due delayed frames and timed-out held frames to pend. */
static void
release_due(struct droce_impair_q *iq, struct droce_impair_stats *st, uint64_t now)
{
	uint32_t i;

	while (iq->dly_n != 0 && iq->dly_t[iq->dly_head] <= now &&
	       iq->pend_n + 1 + HOLD_MAX <= PEND_CAP) {
		struct rte_mbuf *m = iq->dly_m[iq->dly_head];

		iq->dly_head = (iq->dly_head + 1) & (DELAY_CAP - 1);
		iq->dly_n--;
		emit(iq, st, m);
	}
	for (i = 0; i < iq->n_hold;) {
		struct hold_slot *h = &iq->hold[i];

		if ((h->deadline <= now || h->left == 0) && iq->pend_n < PEND_CAP) {
			/* Nothing (or not enough) overtook it in time. */
			if (h->left != h->gap)
				st->reordered++;
			pend_push(iq, h->m);
			hold_remove(iq, i);
		} else {
			i++;
		}
	}
}

/* Writable data of @seg in place: not shared, not external memory. */
static inline bool
seg_writable(const struct rte_mbuf *seg)
{
	return !RTE_MBUF_HAS_EXTBUF(seg) && RTE_MBUF_DIRECT(seg) && rte_mbuf_refcnt_read(seg) == 1;
}

#define ROCE_UDP_PORT 4791
#define MAX_SKIP 6

/*
 * Flips one random bit in the L3 datagram of @m (past the Ethernet and VLAN
 * headers, before any Ethernet padding), so an IP/UDP checksum or the ICRC
 * catches it.  When the UDP checksum is off, the bytes the ICRC masks and no
 * checksum covers (IPv6 traffic class, flow label and hop limit; the BTH
 * reserved byte) are never chosen: a flip there is invisible to any
 * receiver.  Copies the frame first when its bytes are shared or external
 * (registered application memory is never written).  Returns the frame.
 */
static struct rte_mbuf *
corrupt(struct droce_port *p, struct droce_impair_q *iq, struct droce_impair_stats *st,
	struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_pkt_len(m), l2 = RTE_ETHER_HDR_LEN, end = len, off;
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t skip[MAX_SKIP], n_skip = 0, i, bit, seg_off, l4 = 0;
	const struct rte_udp_hdr *udp = NULL;
	struct rte_mbuf *seg;
	uint16_t et;

	if (len <= l2)
		return m;
	if (rte_pktmbuf_data_len(m) >= RTE_ETHER_HDR_LEN + 4 + sizeof(struct rte_ipv6_hdr) +
					   sizeof(struct rte_udp_hdr) + 8) {
		et = (uint16_t)(d[12] << 8 | d[13]);
		if (et == RTE_ETHER_TYPE_VLAN) {
			l2 += 4;
			et = (uint16_t)(d[16] << 8 | d[17]);
		}
		if (et == RTE_ETHER_TYPE_IPV4) {
			const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(d + l2);
			uint32_t tl = rte_be_to_cpu_16(ip->total_length);

			if (tl != 0 && l2 + tl <= len)
				end = l2 + tl;
			if (ip->next_proto_id == IPPROTO_UDP)
				l4 = l2 + rte_ipv4_hdr_len(ip);
		} else if (et == RTE_ETHER_TYPE_IPV6) {
			const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(d + l2);
			uint32_t tl = sizeof(*ip) + rte_be_to_cpu_16(ip->payload_len);

			if (l2 + tl <= len)
				end = l2 + tl;
			if (ip->proto == IPPROTO_UDP) {
				l4 = l2 + sizeof(*ip);
				udp = (const struct rte_udp_hdr *)(d + l4);
				if (udp->dgram_cksum == 0) {
					skip[n_skip++] = l2 + 0; /* version, traffic class, flow label */
					skip[n_skip++] = l2 + 1;
					skip[n_skip++] = l2 + 2;
					skip[n_skip++] = l2 + 3;
					skip[n_skip++] = l2 + 7; /* hop limit */
				}
			}
		}
		if (l4 != 0 && l4 + sizeof(struct rte_udp_hdr) + 8 <= rte_pktmbuf_data_len(m)) {
			udp = (const struct rte_udp_hdr *)(d + l4);
			if (udp->dgram_cksum == 0 && udp->dst_port == rte_cpu_to_be_16(ROCE_UDP_PORT))
				skip[n_skip++] = l4 + sizeof(*udp) + 4; /* BTH resv8a */
		}
	}
	while (n_skip > 0 && skip[n_skip - 1] >= end)
		n_skip--;
	if (end <= l2 + n_skip)
		return m;
	/* The k-th byte of [l2, end) that is not skipped (skip[] ascends). */
	off = l2 + (uint32_t)(((uint64_t)draw32(iq) * (end - l2 - n_skip)) >> 32);
	for (i = 0; i < n_skip; i++)
		if (off >= skip[i])
			off++;
	bit = draw32(iq) & 7;

	for (seg = m, seg_off = off; seg != NULL && seg_off >= seg->data_len; seg = seg->next)
		seg_off -= seg->data_len;
	if (seg == NULL)
		return m;
	if (!seg_writable(seg)) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, p->mp, 0, UINT32_MAX);

		if (c == NULL) {
			st->nomem++;
			return m;
		}
		rte_pktmbuf_free(m);
		m = c;
		for (seg = m, seg_off = off; seg != NULL && seg_off >= seg->data_len; seg = seg->next)
			seg_off -= seg->data_len;
		if (seg == NULL)
			return m;
	}
	*rte_pktmbuf_mtod_offset(seg, uint8_t *, seg_off) ^= (uint8_t)(1u << bit);
	st->corrupted++;
	return m;
}

/* CE marking: frame_ecn.c */
static struct rte_mbuf *
ce_mark(struct droce_port *p, struct droce_impair_stats *st, struct rte_mbuf *m)
{
	int rc = droce_frame_ce_mark(p->mp, &m);

	if (rc > 0)
		st->ce_marked++;
	else if (rc < 0)
		st->nomem++;
	return m;
}

/* Applies the impairment to one frame; it ends in pend, hold, delay or freed. */
static void
impair_one(struct droce_port *p, struct droce_impair_q *iq, struct droce_impair_stats *st,
	   struct rte_mbuf *m, uint64_t now)
{
	const struct impair_params *pr = &iq->pr;
	struct rte_mbuf *dup = NULL;

	if (chance(iq, pr->drop)) {
		rte_pktmbuf_free(m);
		st->dropped++;
		return;
	}
	if (chance(iq, pr->corrupt))
		m = corrupt(p, iq, st, m);
	if (chance(iq, pr->ce))
		m = ce_mark(p, st, m);
	if (chance(iq, pr->dup)) {
		dup = rte_pktmbuf_copy(m, p->mp, 0, UINT32_MAX);
		if (dup == NULL)
			st->nomem++;
		else
			st->duplicated++;
	}
	if (chance(iq, pr->delay)) {
		uint32_t need = dup != NULL ? 2 : 1, i;

		if (iq->dly_n + need <= DELAY_CAP) {
			for (i = 0; i < need; i++) {
				uint32_t at = (iq->dly_head + iq->dly_n) & (DELAY_CAP - 1);

				iq->dly_m[at] = i == 0 ? m : dup;
				iq->dly_t[at] = now + pr->delay_cycles;
				iq->dly_n++;
			}
			st->delayed++;
			return;
		}
		st->overflow++;
	}
	if (chance(iq, pr->reorder)) {
		uint8_t gap = (uint8_t)(1 + below(iq, REORDER_GAP_MAX));

		if (iq->n_hold < HOLD_MAX) {
			iq->hold[iq->n_hold++] = (struct hold_slot){
				.m = m, .deadline = now + pr->hold_cycles, .gap = gap, .left = gap };
			if (dup != NULL)
				emit(iq, st, dup);
			return;
		}
		st->overflow++;
	}
	emit(iq, st, m);
	if (dup != NULL)
		emit(iq, st, dup);
}

/* How many new frames fit in pend in the worst case (each may add a duplicate). */
static inline uint32_t
room(const struct droce_impair_q *iq)
{
	uint32_t free_slots = PEND_CAP - iq->pend_n;

	return free_slots > HOLD_MAX ? (free_slots - HOLD_MAX) / 2 : 0;
}

static void
flush_tx(struct droce_port *p, uint16_t queue, struct droce_impair_q *iq)
{
	while (iq->pend_n != 0) {
		uint32_t k = RTE_MIN(iq->pend_n, PEND_CAP - iq->pend_head);
		uint16_t s = droce_port_xmit_lc(p, queue, &iq->pend[iq->pend_head], (uint16_t)k);

		iq->pend_head = (iq->pend_head + s) & (PEND_CAP - 1);
		iq->pend_n -= s;
		if (s < k)
			break;
	}
}

static inline bool
tx_cut(const struct droce_port *p)
{
	return __atomic_load_n(&p->link_set_down, __ATOMIC_ACQUIRE) ||
	       (p->ring_peer != NULL && __atomic_load_n(&p->ring_peer->link_set_down, __ATOMIC_ACQUIRE));
}

/* The transmit side with the link up (or frames that do not cross it). */
static uint16_t
impair_tx(struct droce_port *p, uint16_t queue, struct droce_impair_q *iq,
	  struct rte_mbuf **pkts, uint16_t n)
{
	struct droce_port_stats *qs = &p->qstats[queue];
	struct droce_impair_stats *st = &qs->impair_tx;
	uint16_t accept, i;
	uint64_t now;

	sync_config(p, iq, DIR_TX, queue);
	if (!iq->pr.on && !has_held(iq)) {
		uint16_t sent = droce_port_xmit_lc(p, queue, pkts, n);

		qs->tx_full += n - sent;
		return sent;
	}
	now = rte_get_tsc_cycles();
	release_due(iq, st, iq->pr.on ? now : UINT64_MAX);
	flush_tx(p, queue, iq);
	if (iq->pend_n != 0) {
		/* The PMD is full: back-pressure, the caller keeps its frames. */
		qs->tx_full += n;
		return 0;
	}
	accept = (uint16_t)RTE_MIN((uint32_t)n, room(iq));
	for (i = 0; i < accept; i++) {
		if (iq->pr.on)
			impair_one(p, iq, st, pkts[i], now);
		else
			emit(iq, st, pkts[i]);
	}
	flush_tx(p, queue, iq);
	qs->tx_full += n - accept;
	return accept;
}

/*
 * The link (this port's or its ring peer's) is cut: what would cross it is
 * dropped (counted link_down; what the impairment held for it when the cut
 * came too), while frames looped inside droce (port_io.c: for an address of
 * this process) never touch the link and go on, through the impairment as
 * ever.  Returns how many of @pkts were taken, in order.
 */
static uint16_t
tx_cut_lc(struct droce_port *p, uint16_t queue, struct droce_impair_q *iq,
	  struct rte_mbuf **pkts, uint16_t n)
{
	struct droce_impair_stats *st = &p->qstats[queue].impair_tx;
	uint16_t i = 0;

	if (!iq->cut) {
		st->link_down += purge_wire(p, iq);
		iq->cut = true;
	}
	if (n == 0)
		return impair_tx(p, queue, iq, NULL, 0); /* held looped frames that are due */
	while (i < n) {
		uint16_t j, k;

		if (droce_port_loop_dest(p, pkts[i]) == NULL) {
			rte_pktmbuf_free(pkts[i++]);
			st->link_down++;
			continue;
		}
		for (j = (uint16_t)(i + 1); j < n && droce_port_loop_dest(p, pkts[j]) != NULL; j++)
			;
		k = impair_tx(p, queue, iq, pkts + i, (uint16_t)(j - i));
		i = (uint16_t)(i + k);
		if (i < j)
			break; /* back-pressure: the caller keeps the rest */
	}
	return i;
}

uint16_t
droce_impair_tx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct droce_impair_q *iq = p->impq[DIR_TX][queue];

	if (unlikely(tx_cut(p)))
		return tx_cut_lc(p, queue, iq, pkts, n);
	iq->cut = false;
	return impair_tx(p, queue, iq, pkts, n);
}

void
droce_port_impair_poll(struct droce_port *p, uint16_t queue)
{
	if (queue < p->nb_txq && p->impq[DIR_TX][queue] != NULL &&
	    __atomic_load_n(&p->impair_used, __ATOMIC_ACQUIRE))
		droce_impair_tx_lc(p, queue, NULL, 0);
}

uint16_t
droce_impair_rx_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct droce_impair_q *iq = p->impq[DIR_RX][queue];
	struct droce_impair_stats *st = &p->qstats[queue].impair_rx;
	struct rte_mbuf *in[RX_CHUNK];
	uint16_t got, i, out;
	bool cut;
	uint64_t now;

	/* a switch port: the switch runs (whoever drives a port of it) */
	if (p->sw != NULL)
		droce_switch_service(p->sw);
	/* The engine polling rx queue q also releases tx queue q's held frames. */
	if (queue < p->nb_txq && p->impq[DIR_TX][queue] != NULL)
		droce_impair_tx_lc(p, queue, NULL, 0);

	cut = __atomic_load_n(&p->link_set_down, __ATOMIC_ACQUIRE);
	if (unlikely(cut)) {
		/* what came over the link is dropped (and what the impairment
		 * held when the cut came); the loop inlet is read as ever */
		if (!iq->cut) {
			st->link_down += purge(iq);
			iq->cut = true;
		}
		do {
			got = rte_eth_rx_burst(p->eth_port, queue, in, RX_CHUNK);
			if (got != 0)
				rte_pktmbuf_free_bulk(in, got);
			st->link_down += got;
		} while (got == RX_CHUNK);
	} else {
		iq->cut = false;
	}
	sync_config(p, iq, DIR_RX, queue);
	if (!iq->pr.on && !has_held(iq)) {
		got = cut ? droce_port_loop_rx_lc(p, queue, pkts, n)
			  : droce_port_pmd_rx_lc(p, queue, pkts, n);
		droce_port_rx_account_lc(p, queue, pkts, got);
		return got;
	}
	now = rte_get_tsc_cycles();
	release_due(iq, st, iq->pr.on ? now : UINT64_MAX);
	/* Read only what pend can take, and about what the caller asked for. */
	got = (uint16_t)RTE_MIN(RTE_MIN((uint32_t)n, RX_CHUNK), room(iq));
	if (got != 0 && iq->pend_n < n) {
		got = cut ? droce_port_loop_rx_lc(p, queue, in, got)
			  : droce_port_pmd_rx_lc(p, queue, in, got);
		for (i = 0; i < got; i++) {
			if (iq->pr.on)
				impair_one(p, iq, st, in[i], now);
			else
				emit(iq, st, in[i]);
		}
	}
	out = (uint16_t)RTE_MIN((uint32_t)n, iq->pend_n);
	for (i = 0; i < out; i++) {
		pkts[i] = iq->pend[iq->pend_head];
		iq->pend_head = (iq->pend_head + 1) & (PEND_CAP - 1);
	}
	iq->pend_n -= out;
	droce_port_rx_account_lc(p, queue, pkts, out);
	return out;
}

/* ---- reporting ---- */

static void
print_dir(const struct droce_port *p, const char *dir, const struct droce_impair_stats *s,
	  FILE *f)
{
	fprintf(f, "%s: impair %s: dropped %" PRIu64 " duplicated %" PRIu64 " reordered %" PRIu64
		   " delayed %" PRIu64 " corrupted %" PRIu64 " ce-marked %" PRIu64
		   " link-down %" PRIu64 " no-mbuf %" PRIu64 " overflow %" PRIu64 "\n",
		p->cfg->name, dir, s->dropped, s->duplicated, s->reordered, s->delayed,
		s->corrupted, s->ce_marked, s->link_down, s->nomem, s->overflow);
}

void
droce_impair_print(const struct droce_port *p, const struct droce_port_stats *s, FILE *f)
{
	struct droce_impair_config c;

	if (!__atomic_load_n(&p->impair_used, __ATOMIC_ACQUIRE))
		return;
	droce_port_impair_get((struct droce_port *)(uintptr_t)p, &c);
	fprintf(f, "%s: impair %s: drop %g dup %g reorder %g delay %g x %u us corrupt %g ce %g seed %" PRIu64
		   "%s\n",
		p->cfg->name,
		c.dir == DROCE_IMPAIR_DIR_BOTH ? "both" : c.dir == DROCE_IMPAIR_DIR_RX ? "rx" : "tx",
		c.drop, c.dup, c.reorder, c.delay, c.delay_us, c.corrupt, c.ce, c.seed,
		droce_port_link_is_set_up(p) ? "" : ", link set down");
	print_dir(p, "tx", &s->impair_tx, f);
	print_dir(p, "rx", &s->impair_rx, f);
}
