/* SPDX-License-Identifier: BSD-3-Clause
 * The switch model (issue 25 section 5): the ports of kind = switch of one
 * process are joined by a shared-buffer output-queued switch, so an N-to-1
 * incast of droce QPs meets a bottleneck queue inside one process.
 *
 * Each switch port is a net_ring ethdev whose rings have the switch at the
 * other end: what the port sends lands in its transmit rings, what the
 * switch delivers is put on its receive ring 0 (droce hands a frame to its
 * QP's engine from any queue).  The switch:
 *   ingress   takes each port's transmit rings at the port's line rate
 *             (every port runs at rate Gb/s both ways, as a switch's ports
 *             of one speed: a NIC sends no faster than its link), forwards by destination MAC (broadcast
 *             and multicast flooded to every other port, unknown unicast
 *             dropped and counted), and queues the frame at its egress port
 *             if the shared buffer has room (tail drop otherwise).  With
 *             pfc = 1 an ingress port holding pfc_xoff bytes in the buffer
 *             is paused (its rings are not read: its transmits back up into
 *             droce, as a NIC paused by PFC stops sending) until it holds
 *             pfc_xon or fewer.
 *   egress    every port's queue is a FIFO drained at rate Gb/s: a frame
 *             leaves when its last bit is out (wire size: frame + FCS,
 *             padded to 64, + preamble and inter-frame gap), the next one
 *             starts where it ended or when it arrived.  At dequeue, an
 *             ECN-capable frame is marked CE with probability p(q) on the
 *             bytes q still queued after it (RED on the instantaneous queue,
 *             as DCQCN's CP): 0 up to kmin, pmax (q - kmin) / (kmax - kmin)
 *             up to kmax, 1 above.
 *
 * Clock: droce's (clock.h), as droce's engines, pacer and DCQCN: the line
 * rate and a QP's DCQCN rate must agree on a second.  With [engines]
 * time_dilation it runs slower than real time, with clock_stall_us it
 * leaves out the time the process was off the CPU, for everybody alike.
 *
 * Threads: the whole switch is run under one try-lock by whichever thread
 * drives a switch port's receive burst; the others go on (a port kind for
 * experiments: no engine waits for it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include <droce/droce.h>
#include <droce/stats.h>

#include "clock.h"
#include "impair.h"
#include "internal.h"
#include "stats_internal.h"
#include "switch.h"

#define SW_IN_MAX 256u          /* frames taken from one ring per service */
#define OCC_SHIFT 10u           /* occupancy histogram: 1 KiB buckets */
#define OCC_BUCKETS 4096u
#define SOJ_US 4u               /* sojourn histogram: 4 us buckets */
#define SOJ_BUCKETS 4096u
#define WIRE_EXTRA 24u          /* FCS, preamble + SFD, inter-frame gap */
#define LINK_STAGE 32u          /* frames read from a memif link at a time */
#define LINK_MACS 8u            /* source MACs learned per memif link */

struct sw_egress {
	struct rte_mbuf **m;     /* FIFO of cap frames */
	uint64_t *arr;           /* when each arrived (switch clock) */
	uint8_t *from;           /* its ingress (switch port index) */
	uint32_t head, n, cap;
	uint64_t bytes;          /* queued now */
	uint64_t t_free;         /* the link is free from (switch clock) */
	/* counters */
	uint64_t enq_frames, enq_bytes, deq_frames, deq_bytes;
	uint64_t tail_drops, ce_marked, ect_frames, nomem, blocked, max_bytes;
	uint64_t occ[OCC_BUCKETS]; /* switch cycles spent with this many KiB queued */
};

struct sw_ingress {
	uint64_t t_free;         /* the port's link to the switch is free from */
	uint64_t bytes;          /* in the buffer from this port */
	bool paused;
	uint64_t pause_start;
	uint64_t pauses, paused_cycles, drops, unknown_dst;
	uint64_t soj[SOJ_BUCKETS]; /* frames from this port by time in the switch */
};

/* A switch port that is a memif link to another process (switch_link.c):
 * no droce port of this process behind it, its ethdev read and written
 * here; the MACs behind it learned from what it sends. */
struct sw_link {
	uint16_t eth;
	bool open;
	unsigned int nmac;
	struct rte_ether_addr mac[LINK_MACS];
	struct rte_mbuf *stage[LINK_STAGE]; /* read, not yet arrived at the link's rate */
	uint16_t sh, sn;
	struct rte_mbuf *held;   /* dequeued, refused by the link's transmit: sent first */
};

struct droce_switch {
	rte_spinlock_t lock;
	struct droce_switch_config c;
	uint64_t hz;
	uint64_t cpb_q32;        /* switch cycles per wire byte, << 32 */
	uint64_t pmax_q32;       /* pmax on 2^32 */
	uint64_t soj_cycles;     /* cycles per sojourn bucket */
	uint64_t t0;             /* droce's clock when the switch was made */
	uint64_t vnow, vlast;    /* droce's clock at this service and the last */
	uint64_t total;          /* bytes in the shared buffer */
	uint64_t rng;
	unsigned int n;          /* switch ports: nlocal droce ports, then the memif links */
	unsigned int nlocal;
	struct droce_port *port[DROCE_MAX_PORTS]; /* NULL for a link */
	struct sw_link link[DROCE_MAX_PORTS];    /* [k] for k >= nlocal */
	struct sw_egress eg[DROCE_MAX_PORTS];
	struct sw_ingress in[DROCE_MAX_PORTS];
};

static struct droce_switch *the_sw;

/* ---- helpers ---- */

static inline uint64_t
wire_bytes(const struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_pkt_len(m) + 4;

	return (len < 64 ? 64 : len) + WIRE_EXTRA - 4;
}

/* The switch port whose MAC is @mac (a link's: learned), or -1. */
static int
port_of(const struct droce_switch *sw, const struct rte_ether_addr *mac)
{
	for (unsigned int k = 0; k < sw->nlocal; k++)
		if (rte_is_same_ether_addr(&sw->port[k]->mac, mac))
			return (int)k;
	for (unsigned int k = sw->nlocal; k < sw->n; k++)
		for (unsigned int j = 0; j < sw->link[k].nmac; j++)
			if (rte_is_same_ether_addr(&sw->link[k].mac[j], mac))
				return (int)k;
	return -1;
}

/* Link @k sent a frame from @mac: that MAC is behind it (the oldest
 * forgotten when LINK_MACS are known; a MAC seen on another link moves). */
static void
learn(struct droce_switch *sw, unsigned int k, const struct rte_ether_addr *mac)
{
	struct sw_link *l = &sw->link[k];
	int at = port_of(sw, mac);

	if (at == (int)k || rte_is_multicast_ether_addr(mac) || rte_is_zero_ether_addr(mac))
		return;
	if (at >= (int)sw->nlocal) {
		struct sw_link *o = &sw->link[at];

		for (unsigned int j = 0; j < o->nmac; j++)
			if (rte_is_same_ether_addr(&o->mac[j], mac))
				o->mac[j] = o->mac[--o->nmac];
	} else if (at >= 0) {
		return; /* a local port's own MAC: not learned elsewhere */
	}
	if (l->nmac == LINK_MACS)
		memmove(&l->mac[0], &l->mac[1], (LINK_MACS - 1) * sizeof(l->mac[0]));
	else
		l->nmac++;
	l->mac[l->nmac - 1] = *mac;
}

static void
pause_update(struct droce_switch *sw, struct sw_ingress *in)
{
	if (!sw->c.pfc)
		return;
	if (!in->paused && in->bytes >= sw->c.pfc_xoff) {
		in->paused = true;
		in->pauses++;
		in->pause_start = sw->vnow;
	} else if (in->paused && in->bytes <= sw->c.pfc_xon) {
		in->paused = false;
		in->paused_cycles += sw->vnow - in->pause_start;
	}
}

/* Queues @m from ingress @from at egress @to, or drops it (tail drop). */
static void
enqueue(struct droce_switch *sw, unsigned int from, unsigned int to, struct rte_mbuf *m,
	uint64_t arr)
{
	struct sw_egress *e = &sw->eg[to];
	struct sw_ingress *in = &sw->in[from];
	uint64_t len = rte_pktmbuf_pkt_len(m);

	if (sw->total + len > sw->c.buffer || e->n == e->cap) {
		rte_pktmbuf_free(m);
		e->tail_drops++;
		in->drops++;
		return;
	}
	uint32_t at = (e->head + e->n) & (e->cap - 1);

	e->m[at] = m;
	e->arr[at] = arr;
	e->from[at] = (uint8_t)from;
	e->n++;
	e->bytes += len;
	e->enq_frames++;
	e->enq_bytes += len;
	if (e->bytes > e->max_bytes)
		e->max_bytes = e->bytes;
	sw->total += len;
	in->bytes += len;
	pause_update(sw, in);
}

static void
forward(struct droce_switch *sw, unsigned int from, struct rte_mbuf *m, uint64_t arr)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	int to;

	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN) {
		rte_pktmbuf_free(m);
		sw->in[from].unknown_dst++;
		return;
	}
	if (rte_is_multicast_ether_addr(&eth->dst_addr)) {
		/* broadcast (ARP) and groups (IGMP, MLD, UD multicast): flooded */
		for (unsigned int k = 0; k < sw->n; k++) {
			struct rte_mbuf *c;

			if (k == from)
				continue;
			c = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
			if (c == NULL) {
				sw->eg[k].nomem++;
				continue;
			}
			enqueue(sw, from, k, c, arr);
		}
		rte_pktmbuf_free(m);
		return;
	}
	to = port_of(sw, &eth->dst_addr);
	if (to < 0 || (unsigned int)to == from) {
		rte_pktmbuf_free(m);
		sw->in[from].unknown_dst++;
		return;
	}
	enqueue(sw, from, (unsigned int)to, m, arr);
}

/*
 * Takes what the ports sent at their link's rate: a frame in a port's
 * transmit ring arrives when its last bit is in, its first having left
 * when the previous one was in or, the link idle, at the last service
 * (it was put in the ring after that one); a frame still arriving stays
 * in the ring, as in a NIC's transmit queue, which backs up into droce.
 */
static void
link_ingress(struct droce_switch *sw, unsigned int k)
{
	struct sw_link *l = &sw->link[k];
	struct sw_ingress *in = &sw->in[k];
	unsigned int taken = 0;

	while (!in->paused && taken < SW_IN_MAX && in->t_free <= sw->vnow) {
		struct rte_mbuf *m;
		uint64_t start;

		if (l->sn == 0) {
			l->sh = 0;
			l->sn = rte_eth_rx_burst(l->eth, 0, l->stage, LINK_STAGE);
			if (l->sn == 0)
				return;
		}
		m = l->stage[l->sh++];
		l->sn--;
		if (rte_pktmbuf_data_len(m) >= RTE_ETHER_HDR_LEN)
			learn(sw, k, &rte_pktmbuf_mtod(m, const struct rte_ether_hdr *)->src_addr);
		start = RTE_MAX(in->t_free, sw->vlast);
		in->t_free = start + (wire_bytes(m) * sw->cpb_q32 >> 32);
		forward(sw, k, m, in->t_free);
		taken++;
	}
}

static void
ingress(struct droce_switch *sw)
{
	for (unsigned int k = sw->nlocal; k < sw->n; k++)
		link_ingress(sw, k);
	for (unsigned int k = 0; k < sw->nlocal; k++) {
		struct droce_port *p = sw->port[k];
		struct sw_ingress *in = &sw->in[k];
		unsigned int taken = 0;

		for (uint16_t q = 0; q < p->nb_txq; q++) {
			struct rte_ring *r = p->rings[1][q];
			struct rte_mbuf *m;

			while (!in->paused && taken < SW_IN_MAX && in->t_free <= sw->vnow &&
			       rte_ring_sc_dequeue(r, (void **)&m) == 0) {
				uint64_t start = RTE_MAX(in->t_free, sw->vlast);

				in->t_free = start + (wire_bytes(m) * sw->cpb_q32 >> 32);
				forward(sw, k, m, in->t_free);
				taken++;
			}
		}
	}
}

/* Delivers @m to egress port @k: its receive ring, or a link's transmit
 * (what that refuses is held and sent first next time). */
static void
deliver(struct droce_switch *sw, unsigned int k, struct rte_mbuf *m)
{
	struct sw_egress *e = &sw->eg[k];

	if (k >= sw->nlocal) {
		if (rte_eth_tx_burst(sw->link[k].eth, 0, &m, 1) == 0) {
			sw->link[k].held = m;
			e->blocked++;
		}
	} else if (rte_ring_sp_enqueue(sw->port[k]->rings[0][0], m) != 0) {
		rte_pktmbuf_free(m); /* (free count checked first) */
		e->blocked++;
	}
}

/* Whether egress port @k can take a frame now (a link: its held frame out). */
static bool
egress_room(struct droce_switch *sw, unsigned int k)
{
	struct sw_link *l = &sw->link[k];

	if (k < sw->nlocal)
		return rte_ring_free_count(sw->port[k]->rings[0][0]) != 0;
	if (l->held != NULL && rte_eth_tx_burst(l->eth, 0, &l->held, 1) == 1)
		l->held = NULL;
	return l->held == NULL;
}

static void
egress(struct droce_switch *sw, unsigned int k)
{
	struct sw_egress *e = &sw->eg[k];

	while (e->n != 0) {
		uint32_t h = e->head;
		struct rte_mbuf *m = e->m[h];
		uint64_t start = RTE_MAX(e->t_free, e->arr[h]);
		uint64_t end = start + (wire_bytes(m) * sw->cpb_q32 >> 32);
		uint64_t len = rte_pktmbuf_pkt_len(m), soj;
		struct sw_ingress *in = &sw->in[e->from[h]];
		int ce;

		if (end > sw->vnow)
			break; /* still on the wire */
		if (!egress_room(sw, k)) {
			/* the port's receive ring is full (its engine is behind),
			 * or the link's peer takes nothing: the link waits,
			 * nothing is lost to the simulation */
			e->blocked++;
			e->t_free = sw->vnow;
			break;
		}
		e->head = (h + 1) & (e->cap - 1);
		e->n--;
		e->bytes -= len;
		sw->total -= len;
		in->bytes -= len;
		pause_update(sw, in);
		e->t_free = end;
		/* RED at dequeue on the bytes still queued behind it */
		if ((uint32_t)(splitmix64(&sw->rng) >> 32) < droce_switch_mark_thr(sw->c.kmin, sw->c.kmax, sw->pmax_q32, e->bytes)) {
			ce = droce_frame_ce_mark(m->pool, &m);
			if (ce > 0)
				e->ce_marked++;
			else if (ce < 0)
				e->nomem++;
		}
		if (droce_frame_ecn_capable(m))
			e->ect_frames++;
		soj = (end - e->arr[h]) / sw->soj_cycles;
		in->soj[soj < SOJ_BUCKETS ? soj : SOJ_BUCKETS - 1]++;
		e->deq_frames++;
		e->deq_bytes += len;
		deliver(sw, k, m);
	}
}

void
droce_switch_service(struct droce_switch *sw)
{
	uint64_t now, gap;

	if (!rte_spinlock_trylock(&sw->lock))
		return;
	now = droce_clock_now();
	gap = now > sw->vnow ? now - sw->vnow : 0;
	/* the queues were what they are since the last service */
	for (unsigned int k = 0; k < sw->n; k++) {
		uint64_t b = sw->eg[k].bytes >> OCC_SHIFT;

		sw->eg[k].occ[b < OCC_BUCKETS ? b : OCC_BUCKETS - 1] += gap;
	}
	sw->vlast = sw->vnow;
	sw->vnow += gap;  /* = now, or unchanged if a racing read was ahead */
	ingress(sw);
	for (unsigned int k = 0; k < sw->n; k++)
		egress(sw, k);
	rte_spinlock_unlock(&sw->lock);
}

uint32_t
droce_switch_port_speed(const struct droce_switch *sw)
{
	double mbps = sw->c.rate_gbps * 1000.0;

	return mbps < 1 ? 1 : (uint32_t)mbps;
}

/* ---- life ---- */

int
droce_switch_create(const struct droce_switch_config *c, struct droce_port *ports, unsigned int n)
{
	struct droce_switch *sw;
	uint32_t cap = 64;

	for (unsigned int i = 0; i < n; i++)
		ports[i].sw = NULL;
	the_sw = NULL;
	for (unsigned int i = 0; i < n; i++)
		if (ports[i].cfg->kind == DROCE_PORT_KIND_SWITCH)
			goto make;
	return 0;
make:
	sw = calloc(1, sizeof(*sw));
	if (sw == NULL)
		return droce_err_set(ENOMEM, "[switch]: no memory for the switch");
	rte_spinlock_init(&sw->lock);
	sw->c = *c;
	sw->hz = rte_get_tsc_hz();
	sw->cpb_q32 = (uint64_t)((double)sw->hz * 8.0 / (c->rate_gbps * 1e9) * 4294967296.0);
	sw->pmax_q32 = (uint64_t)(c->pmax * 4294967296.0 + 0.5);
	sw->soj_cycles = sw->hz / 1000000 * SOJ_US;
	sw->rng = c->seed;
	sw->t0 = sw->vnow = sw->vlast = droce_clock_now();
	/* a FIFO slot for each 64 bytes of the buffer (the smallest frame) */
	while (cap < c->buffer / 64 + 1)
		cap <<= 1;
	the_sw = sw;
	for (unsigned int i = 0; i < n + c->memif_links; i++) {
		struct sw_egress *e;
		bool link = i >= n;

		if (!link && ports[i].cfg->kind != DROCE_PORT_KIND_SWITCH)
			continue;
		e = &sw->eg[sw->n];
		e->cap = cap;
		e->m = calloc(cap, sizeof(*e->m));
		e->arr = calloc(cap, sizeof(*e->arr));
		e->from = calloc(cap, sizeof(*e->from));
		if (!link) {
			sw->port[sw->n++] = &ports[i];
			sw->nlocal = sw->n;
		} else if (e->m != NULL && e->arr != NULL && e->from != NULL) {
			/* the links' frames come from droce's mempool */
			if (droce_switch_link_open(c, i - n, sw->port[0]->mp, &sw->link[sw->n].eth) != 0) {
				int err = errno;

				sw->n++;
				droce_switch_destroy();
				errno = err;
				return -1;
			}
			sw->link[sw->n++].open = true;
		} else {
			sw->n++;
		}
		if (e->m == NULL || e->arr == NULL || e->from == NULL) {
			droce_switch_destroy();
			return droce_err_set(ENOMEM, "[switch]: no memory for %u queue slots", cap);
		}
	}
	for (unsigned int k = 0; k < sw->nlocal; k++) {
		sw->port[k]->sw = sw;
		sw->port[k]->sw_index = (uint8_t)k;
	}
	return 0;
}

void
droce_switch_destroy(void)
{
	struct droce_switch *sw = the_sw;

	if (sw == NULL)
		return;
	the_sw = NULL;
	/* the links last to first: the first's close removes the socket */
	for (unsigned int k = sw->n; k-- > 0;) {
		struct sw_egress *e = &sw->eg[k];
		struct sw_link *l = &sw->link[k];

		for (uint32_t i = 0; e->m != NULL && i < e->n; i++)
			rte_pktmbuf_free(e->m[(e->head + i) & (e->cap - 1)]);
		free(e->m);
		free(e->arr);
		free(e->from);
		if (k < sw->nlocal) {
			sw->port[k]->sw = NULL;
			continue;
		}
		rte_pktmbuf_free_bulk(&l->stage[l->sh], l->sn);
		rte_pktmbuf_free(l->held);
		if (l->open)
			droce_switch_link_close(&sw->c, k - sw->nlocal, l->eth);
	}
	free(sw);
}

/* ---- counters ---- */

/* The bucket under which @q of the weight of @h[0..n) lies. */
static uint64_t
percentile(const uint64_t *h, unsigned int n, double q)
{
	uint64_t total = 0, acc = 0;

	for (unsigned int i = 0; i < n; i++)
		total += h[i];
	if (total == 0)
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		acc += h[i];
		if ((double)acc >= q * (double)total)
			return i;
	}
	return n - 1;
}

/* The counters of switch port @k (a local port's or a link's). */
static unsigned int
port_stats(const struct droce_switch *sw, unsigned int k, struct droce_stat *out, unsigned int n,
	   unsigned int i)
{
	const struct sw_egress *e = &sw->eg[k];
	const struct sw_ingress *in = &sw->in[k];
	uint64_t us = sw->hz / 1000000, paused;

	paused = in->paused_cycles + (in->paused ? sw->vnow - in->pause_start : 0);
	i = droce_stat_put(out, n, i, "switch_queue_bytes", e->bytes);
	i = droce_stat_put(out, n, i, "switch_queue_max_bytes", e->max_bytes);
	i = droce_stat_put(out, n, i, "switch_queue_p50_bytes",
			   percentile(e->occ, OCC_BUCKETS, 0.5) << OCC_SHIFT);
	i = droce_stat_put(out, n, i, "switch_queue_p99_bytes",
			   percentile(e->occ, OCC_BUCKETS, 0.99) << OCC_SHIFT);
	i = droce_stat_put(out, n, i, "switch_enqueued_frames", e->enq_frames);
	i = droce_stat_put(out, n, i, "switch_enqueued_bytes", e->enq_bytes);
	i = droce_stat_put(out, n, i, "switch_dequeued_frames", e->deq_frames);
	i = droce_stat_put(out, n, i, "switch_dequeued_bytes", e->deq_bytes);
	i = droce_stat_put(out, n, i, "switch_tail_drops", e->tail_drops);
	i = droce_stat_put(out, n, i, "switch_ce_marked", e->ce_marked);
	i = droce_stat_put(out, n, i, "switch_ect_frames", e->ect_frames);
	i = droce_stat_put(out, n, i, "switch_rx_blocked", e->blocked);
	i = droce_stat_put(out, n, i, "switch_no_mbuf", e->nomem);
	i = droce_stat_put(out, n, i, "switch_in_drops", in->drops);
	i = droce_stat_put(out, n, i, "switch_in_unknown_dst", in->unknown_dst);
	i = droce_stat_put(out, n, i, "switch_in_pfc_pauses", in->pauses);
	i = droce_stat_put(out, n, i, "switch_in_pfc_paused_us", paused / us);
	i = droce_stat_put(out, n, i, "switch_in_sojourn_p50_us",
			   percentile(in->soj, SOJ_BUCKETS, 0.5) * SOJ_US);
	i = droce_stat_put(out, n, i, "switch_in_sojourn_p99_us",
			   percentile(in->soj, SOJ_BUCKETS, 0.99) * SOJ_US);
	i = droce_stat_put(out, n, i, "switch_clock_us", (sw->vnow - sw->t0) / us);
	i = droce_stat_put(out, n, i, "switch_excused_us",
			   __atomic_load_n(&droce_clock.skipped, __ATOMIC_RELAXED) / us);
	i = droce_stat_put(out, n, i, "switch_rate_mbps", droce_switch_port_speed(sw));
	return i;
}

unsigned int
droce_switch_stats(const struct droce_port *p, struct droce_stat *out, unsigned int n,
		   unsigned int i)
{
	return port_stats(p->sw, p->sw_index, out, n, i);
}

int
droce_stats_switch_link(unsigned int link, struct droce_stat *out, unsigned int n)
{
	const struct droce_switch *sw;
	struct rte_eth_link el;
	unsigned int i = 0, k;

	droce_runtime_hold();
	sw = droce_running() ? the_sw : NULL;
	if (sw == NULL || link >= sw->n - sw->nlocal) {
		droce_runtime_release();
		errno = ENODEV;
		return -1;
	}
	k = sw->nlocal + link;
	memset(&el, 0, sizeof(el));
	rte_eth_link_get_nowait(sw->link[k].eth, &el);
	i = droce_stat_put(out, n, i, "link_up", el.link_status == RTE_ETH_LINK_UP);
	i = droce_stat_put(out, n, i, "link_macs_learned", sw->link[k].nmac);
	i = port_stats(sw, k, out, n, i);
	droce_runtime_release();
	return (int)i;
}

int
droce_stats_switch_reset(void)
{
	struct droce_switch *sw;

	droce_runtime_hold();
	sw = droce_running() ? the_sw : NULL;
	if (sw == NULL) {
		droce_runtime_release();
		errno = ENODEV;
		return -1;
	}
	rte_spinlock_lock(&sw->lock);
	for (unsigned int k = 0; k < sw->n; k++) {
		struct sw_egress *e = &sw->eg[k];
		struct sw_ingress *in = &sw->in[k];

		e->enq_frames = e->enq_bytes = e->deq_frames = e->deq_bytes = 0;
		e->tail_drops = e->ce_marked = e->ect_frames = e->nomem = e->blocked = 0;
		e->max_bytes = e->bytes;
		memset(e->occ, 0, sizeof(e->occ));
		in->pauses = in->paused_cycles = in->drops = in->unknown_dst = 0;
		in->pause_start = sw->vnow;
		memset(in->soj, 0, sizeof(in->soj));
	}
	rte_spinlock_unlock(&sw->lock);
	droce_runtime_release();
	return 0;
}
