/* SPDX-License-Identifier: BSD-3-Clause
 * The engine loop.  Each pass has fixed phases:
 *   1. drain the channels (control messages and doorbells, in posting order)
 *   2. receive: rx_burst on the engine's queue of every port, parse, dispatch
 *   3. transmit work: QPs with something to send
 *   4. timers: retransmission and RNR
 *   5. flush the transmit buffers
 *
 * Who runs passes.  Dedicated mode: one EAL lcore per engine, nothing else.
 * Co-located mode: any thread may drive any engine, one at a time.  A pass is
 * run under the engine's `driving` flag, taken by a try-CAS (acquire) and freed
 * by a release store, so the single-owner engine state (QP table, active list,
 * transmit buffers, CQ sub-ring producer side, RCU slot = engine index) passes
 * from one driver to the next; a thread that fails the CAS skips the engine.
 * No thread keeps an engine between passes, so one that blocks or exits holds
 * nothing.  A fallback progress thread drives an engine no application thread
 * has driven for fallback_us (or at once when one says it blocks); it lets go
 * at the end of its pass as soon as an application thread wants the engine
 * (`wanted`), and backs off (spin, then sleeps growing to FALLBACK_SLEEP_MAX_US)
 * while the engines are idle.
 *
 * Over 800 lines: the loop, channels, the QP table, co-located driving and
 * the fallback thread all touch the engine's single-owner state; the QP
 * table (engine-owned, two levels) and the fallback thread are the next to
 * move into files of their own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include <droce/droce.h>

#include "engine.h"
#include "internal.h"
#include "rc_internal.h"
#include "pmd_glue/port.h"
#include "raw.h"
#include "pmd_glue/stats_internal.h"

RTE_LOG_REGISTER(droce_dp_logtype, droce.dp, NOTICE);

static struct {
	unsigned int n;
	bool started;
	bool dedicated;
	struct droce_engine *eng[DROCE_MAX_ENGINES];
	struct rte_rcu_qsbr *rcu;
	pthread_mutex_t chan_lock;
	uint64_t gen;           /* bumped by every start: older thread channels are gone */
	bool gsi_taken[DROCE_MAX_PORTS]; /* a GSI QP exists for the port (chan_lock) */
	void (*stop_hook)(void);         /* droce_engines_at_stop() (chan_lock) */
} engines = { .chan_lock = PTHREAD_MUTEX_INITIALIZER };

/* The co-located fallback progress thread. */
#define FALLBACK_SPIN_US 200      /* keeps spinning this long after the last work */
#define FALLBACK_SLEEP_MAX_US 1000 /* then sleeps 1, 2, 4 ... µs up to this */
#define FALLBACK_PASSES 256       /* passes per take before it looks around again */
#define FALLBACK_LATE_US 30       /* off the CPU this much longer than it asked: crowded */
#define FALLBACK_CROWDED_MS 100   /* then no spinning for this long */
#define FALLBACK_SLACK_NS 1000    /* timer slack of its sleeps (the default is 50 µs) */
static struct {
	bool running;
	pthread_t tid;
	_Atomic bool stop;
	_Atomic bool sleeping;
	bool kick;
	uint64_t after_tsc;       /* fallback_us in TSC cycles */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	_Atomic uint64_t passes;  /* passes it ran (tests, stats) */
} fallback = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* This thread's channel to each engine, created on first use (or taken over
 * from an exited thread), and the engines' start they belong to. */
static __thread struct rte_ring *my_chan[DROCE_MAX_ENGINES];
static __thread uint64_t my_chan_gen;
static pthread_key_t chan_key;
static pthread_once_t chan_key_once = PTHREAD_ONCE_INIT;

/*
 * Thread exit: the thread's channels go back to their engines, for the next
 * new thread.  An engine may still be draining one; the next producer simply
 * continues the same SPSC ring, ordered after this thread by the channel lock.
 * Without this an engine's 64 channels run out after 64 posting threads.
 */
static void
channels_release(void *unused)
{
	RTE_SET_USED(unused);
	pthread_mutex_lock(&engines.chan_lock);
	if (engines.started && my_chan_gen == engines.gen) {
		for (unsigned int e = 0; e < engines.n; e++) {
			struct droce_engine *eng = engines.eng[e];

			if (my_chan[e] != NULL && eng->n_chan_free < DROCE_MAX_CHANNELS)
				eng->chan_free[eng->n_chan_free++] = my_chan[e];
		}
	}
	pthread_mutex_unlock(&engines.chan_lock);
	memset(my_chan, 0, sizeof(my_chan));
}

static void
chan_key_create(void)
{
	if (pthread_key_create(&chan_key, channels_release) != 0)
		DP_LOG(WARNING, "no thread-exit hook: channels of exited threads are not reused");
}

unsigned int
droce_engine_count(void)
{
	return engines.started ? engines.n : 0;
}

struct droce_engine *
droce_engine_get(unsigned int id)
{
	return id < engines.n ? engines.eng[id] : NULL;
}

void
droce_dp_synchronize(void)
{
	if (engines.rcu)
		rte_rcu_qsbr_synchronize(engines.rcu, RTE_QSBR_THRID_INVALID);
}

/* ---- channels ---- */

static struct rte_ring *
channel_of(struct droce_engine *eng)
{
	static _Atomic unsigned int serial;
	struct rte_ring *r = my_chan[eng->id];
	char name[RTE_RING_NAMESIZE];
	unsigned int n;

	if (r != NULL && my_chan_gen == engines.gen)
		return r;
	if (my_chan_gen != engines.gen) {
		/* channels of an earlier start were freed with its engines */
		memset(my_chan, 0, sizeof(my_chan));
		my_chan_gen = engines.gen;
	}
	pthread_once(&chan_key_once, chan_key_create);
	pthread_setspecific(chan_key, (void *)1); /* non-NULL: channels_release runs at exit */
	pthread_mutex_lock(&engines.chan_lock);
	if (eng->n_chan_free > 0) {
		r = eng->chan_free[--eng->n_chan_free];
		pthread_mutex_unlock(&engines.chan_lock);
		my_chan[eng->id] = r;
		return r;
	}
	pthread_mutex_unlock(&engines.chan_lock);
	snprintf(name, sizeof(name), "dch%u", atomic_fetch_add(&serial, 1));
	r = rte_ring_create_elem(name, sizeof(struct droce_msg), DROCE_CHANNEL_SIZE, SOCKET_ID_ANY,
				 RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r == NULL)
		return NULL;
	pthread_mutex_lock(&engines.chan_lock);
	n = atomic_load(&eng->n_chan);
	if (n == DROCE_MAX_CHANNELS) {
		pthread_mutex_unlock(&engines.chan_lock);
		rte_ring_free(r);
		return NULL;
	}
	eng->chan[n] = r;
	atomic_store_explicit(&eng->n_chan, n + 1, memory_order_release);
	pthread_mutex_unlock(&engines.chan_lock);
	my_chan[eng->id] = r;
	return r;
}

int
droce_engine_send_msg(struct droce_engine *eng, const struct droce_msg *msg)
{
	struct rte_ring *r = channel_of(eng);

	if (r == NULL)
		return ENOMEM;
	while (rte_ring_sp_enqueue_elem(r, (void *)(uintptr_t)msg, sizeof(*msg)) != 0) {
		/* the engine drains channels every pass; let it (or us) make room */
		if (!engines.dedicated)
			droce_engines_progress();
		else
			rte_pause();
	}
	return 0;
}

/* ---- QP table ---- */

/*
 * Indices are handed out fresh while fewer than DROCE_QP_REUSE_AFTER wait in
 * the freed ring (so a QPN is not reused while frames for its last owner may
 * still be on the way), then oldest freed first; fresh ones need their page.
 */
int
droce_engine_add_qp(struct droce_engine *eng, struct droce_qp *qp)
{
	uint32_t i;

	pthread_mutex_lock(&engines.chan_lock);
	if (eng->freed_count > 0 &&
	    (eng->freed_count >= DROCE_QP_REUSE_AFTER || eng->qp_fresh == DROCE_QP_INDEXES)) {
		i = eng->qp_freed[eng->freed_head];
		eng->freed_head = (eng->freed_head + 1) % eng->freed_cap;
		eng->freed_count--;
	} else if (eng->qp_fresh < DROCE_QP_INDEXES) {
		unsigned int pg = eng->qp_fresh >> DROCE_QPT_PAGE_BITS;

		if (atomic_load_explicit(&eng->qpt[pg], memory_order_relaxed) == NULL) {
			/* DPDK memory, like the engine that points to it */
			struct droce_qp **page = rte_zmalloc("droce_qpt", DROCE_QPT_PAGE * sizeof(*page), 0);

			if (page == NULL) {
				pthread_mutex_unlock(&engines.chan_lock);
				return ENOMEM;
			}
			atomic_store_explicit(&eng->qpt[pg], page, memory_order_release);
		}
		i = eng->qp_fresh++;
	} else {
		pthread_mutex_unlock(&engines.chan_lock);
		return ENOMEM;
	}
	eng->n_qps++;
	pthread_mutex_unlock(&engines.chan_lock);
	/* the engine stores the QP at its index when the ATTACH arrives */
	qp->qpn = ((i + 1) << DROCE_QPN_ENGINE_BITS) | eng->id;
	return 0;
}

void
droce_engine_del_qp(struct droce_engine *eng, const struct droce_qp *qp)
{
	uint32_t i = droce_qpn_index(qp->qpn);

	pthread_mutex_lock(&engines.chan_lock);
	if (eng->freed_count == eng->freed_cap) {
		uint32_t cap = eng->freed_cap ? 2 * eng->freed_cap : 1024;
		uint32_t *ring = rte_malloc("droce_qp_freed", cap * sizeof(*ring), 0);

		if (ring == NULL) {
			/* the index stays taken: a QPN less, nothing worse */
			pthread_mutex_unlock(&engines.chan_lock);
			return;
		}
		for (uint32_t k = 0; k < eng->freed_count; k++)
			ring[k] = eng->qp_freed[(eng->freed_head + k) % eng->freed_cap];
		rte_free(eng->qp_freed);
		eng->qp_freed = ring;
		eng->freed_head = 0;
		eng->freed_cap = cap;
	}
	eng->qp_freed[(eng->freed_head + eng->freed_count) % eng->freed_cap] = i;
	eng->freed_count++;
	eng->n_qps--;
	pthread_mutex_unlock(&engines.chan_lock);
}

uint32_t
droce_dp_max_qps(void)
{
	/* the QPN space: every engine's indices (the table grows page by page) */
	return engines.started ? engines.n * DROCE_QP_INDEXES : DROCE_QP_INDEXES;
}

/* The entry of index @i (engine side; its page exists once the index was handed out). */
static inline struct droce_qp **
qpt_slot_lc(struct droce_engine *eng, uint32_t i)
{
	struct droce_qp **page = atomic_load_explicit(&eng->qpt[i >> DROCE_QPT_PAGE_BITS],
						      memory_order_acquire);

	return page != NULL ? &page[i & (DROCE_QPT_PAGE - 1)] : NULL;
}

int
droce_engines_at_stop(void (*fn)(void))
{
	int rc = 0;

	pthread_mutex_lock(&engines.chan_lock);
	if (engines.stop_hook != NULL && engines.stop_hook != fn)
		rc = EBUSY;
	else
		engines.stop_hook = fn;
	pthread_mutex_unlock(&engines.chan_lock);
	return rc;
}

void
droce_engine_del_gsi(unsigned int port)
{
	pthread_mutex_lock(&engines.chan_lock);
	if (port < DROCE_MAX_PORTS)
		engines.gsi_taken[port] = false;
	pthread_mutex_unlock(&engines.chan_lock);
}

int
droce_engine_add_gsi(struct droce_engine *eng, struct droce_qp *qp)
{
	int rc = 0;

	pthread_mutex_lock(&engines.chan_lock);
	if (qp->port_index >= DROCE_MAX_PORTS || engines.gsi_taken[qp->port_index])
		rc = EBUSY;
	else
		engines.gsi_taken[qp->port_index] = true;
	pthread_mutex_unlock(&engines.chan_lock);
	if (rc == 0)
		qp->qpn = DROCE_DP_GSI_QPN;
	return rc;
}

static struct droce_qp *
qp_lookup_lc(struct droce_engine *eng, uint32_t qpn)
{
	uint32_t i = droce_qpn_index(qpn); /* QPN 0..63: UINT32_MAX, past the table */
	struct droce_qp **slot;
	struct droce_qp *qp;

	if (i >= DROCE_QP_INDEXES)
		return NULL;
	slot = qpt_slot_lc(eng, i);
	if (slot == NULL)
		return NULL;
	qp = *slot;
	if (qp == NULL || qp->qpn != qpn)
		return NULL;
	return qp;
}

/* ---- phase 1: channels ---- */

static void dispatch_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m);

/* A raw frame from droce_dp_inject(), in channel order. */
static void
inject_lc(struct droce_engine *eng, struct rte_mbuf *m, unsigned int port, enum droce_inject_dir dir)
{
	eng->stats.injected++;
	if (port >= eng->n_ports) {
		rte_pktmbuf_free(m);
		return;
	}
	if (dir == DROCE_INJECT_RX) {
		if (!droce_flow_active(port) || !droce_flow_rx_lc(eng, eng->ports[port], m))
			dispatch_lc(eng, eng->ports[port], m);
	}
	else
		droce_engine_tx_lc(eng, port, m);
}

static void
handle_msg_lc(struct droce_engine *eng, const struct droce_msg *m)
{
	struct droce_qp *qp = m->qp;

	switch (m->type) {
	case DROCE_MSG_ATTACH:
		if (qp->qpn == DROCE_DP_GSI_QPN)
			eng->gsi[qp->port_index] = qp;
		else
			*qpt_slot_lc(eng, droce_qpn_index(qp->qpn)) = qp; /* page made by add_qp */
		break;
	case DROCE_MSG_MODIFY:
		droce_qp_apply_mod_lc(qp, m->ptr);
		free(m->ptr);
		droce_qp_overrun_check_lc(qp); /* a move to ERR whose flush found the CQ full */
		/* published after the change: droce_qp_settled() then sees it done */
		atomic_store_explicit(&qp->applied_gen, m->arg, memory_order_release);
		droce_engine_activate_lc(eng, qp);
		break;
	case DROCE_MSG_SQ_BELL:
	case DROCE_MSG_RQ_BELL:
		/* the bell taken: later posts ring again; every slot published
		 * before a post found it set is visible from here (acquire) */
		atomic_exchange_explicit(&qp->bell, 0, memory_order_acq_rel);
		droce_engine_activate_lc(eng, qp);
		break;
	case DROCE_MSG_ARP:
		if (m->arg < eng->n_ports)
			droce_port_arp_request(eng->ports[m->arg], eng->queue, (rte_be32_t)m->rsvd);
		break;
	case DROCE_MSG_INJECT:
		inject_lc(eng, m->ptr, m->arg & 0xffff, (enum droce_inject_dir)(m->arg >> 16));
		break;
	case DROCE_MSG_DETACH:
		if (qp->active) {
			TAILQ_REMOVE(&eng->active, qp, active_link);
			qp->active = false;
		}
		if (qp->qpn == DROCE_DP_GSI_QPN)
			eng->gsi[qp->port_index] = NULL;
		else
			*qpt_slot_lc(eng, droce_qpn_index(qp->qpn)) = NULL;
		atomic_store_explicit(&qp->detached, true, memory_order_release);
		break;
	}
}

static unsigned int
drain_channels_lc(struct droce_engine *eng)
{
	unsigned int n = atomic_load_explicit(&eng->n_chan, memory_order_acquire), got = 0;
	struct droce_msg msgs[DROCE_BURST];

	for (unsigned int c = 0; c < n; c++) {
		unsigned int k = rte_ring_sc_dequeue_burst_elem(eng->chan[c], msgs, sizeof(msgs[0]),
								 DROCE_BURST, NULL);
		for (unsigned int i = 0; i < k; i++)
			handle_msg_lc(eng, &msgs[i]);
		got += k;
	}
	return got;
}

void
droce_engine_activate_lc(struct droce_engine *eng, struct droce_qp *qp)
{
	if (!qp->active) {
		TAILQ_INSERT_TAIL(&eng->active, qp, active_link);
		qp->active = true;
	}
}

/* ---- phase 2: receive ---- */

/* Passes @m to engine @owner's xfer ring from this one; @tag is what m->port
 * carries there (a port index, with DROCE_XFER_RAW for a RAW_PACKET QP). */
static void
hand_over_lc(struct droce_engine *eng, unsigned int owner, uint16_t tag, struct rte_mbuf *m)
{
	struct droce_engine *to = engines.eng[owner];

	m->port = tag;
	if (rte_ring_sp_enqueue(to->xfer_in[eng->id], m) != 0) {
		eng->stats.tx_drops++;
		rte_pktmbuf_free(m);
	} else {
		eng->stats.forwarded++;
	}
}

void
droce_engine_raw_deliver_lc(struct droce_engine *eng, struct droce_port *port, uint32_t qpn,
			    struct rte_mbuf *m)
{
	unsigned int owner = droce_qpn_engine(qpn);
	struct droce_qp *qp;

	if (owner != eng->id && owner < engines.n) {
		m->hash.usr = qpn;
		hand_over_lc(eng, owner, (uint16_t)(port->index | DROCE_XFER_RAW), m);
		return;
	}
	qp = qp_lookup_lc(eng, qpn);
	if (qp == NULL || qp->type != DROCE_QPT_RAW_PACKET || qp->port != port) {
		eng->stats.no_qp++; /* its rule went while the frame travelled */
		rte_pktmbuf_free(m);
		return;
	}
	droce_raw_rx_lc(qp, m);
}

static void
dispatch_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	struct droce_pkt p;
	enum droce_drop why;
	struct droce_qp *qp;
	unsigned int owner;
	uint32_t qpn;

	if (likely(m->nb_segs == 1)) {
		why = droce_parse_frame_c(frame, rte_pktmbuf_data_len(m), &p, &eng->icrc_rx);
	} else if (m->nb_segs == 3 &&
		   droce_parse_split(frame, m->data_len, rte_pktmbuf_mtod(m->next, const uint8_t *),
				     m->next->data_len,
				     rte_pktmbuf_mtod(m->next->next, const uint8_t *),
				     m->next->next->data_len, &p) == DROCE_DROP_NONE) {
		/* a zero-copy frame of an in-process peer (zcopy.c): the payload
		 * is read where it lies, in the sender's registered memory */
		why = DROCE_DROP_NONE;
	} else {
		/* any other chain is linearised for the flat parser */
		if (rte_pktmbuf_linearize(m) != 0) {
			eng->stats.drops[DROCE_DROP_RUNT]++;
			rte_pktmbuf_free(m);
			return;
		}
		frame = rte_pktmbuf_mtod(m, const uint8_t *);
		why = droce_parse_frame_c(frame, rte_pktmbuf_data_len(m), &p, &eng->icrc_rx);
	}
	if (why != DROCE_DROP_NONE) {
		if ((why == DROCE_DROP_ETHERTYPE || why == DROCE_DROP_NOT_UDP ||
		     why == DROCE_DROP_UDP_PORT) &&
		    droce_port_handle_frame(port, eng->queue, m)) {
			eng->stats.non_roce++;
			return;
		}
		eng->stats.drops[why]++;
		rte_pktmbuf_free(m);
		return;
	}
	qpn = droce_bth_qpn(droce_pkt_bth(&p, frame));
	owner = qpn == DROCE_DP_GSI_QPN ? 0 : droce_qpn_engine(qpn);
	if (owner != eng->id && owner < engines.n) {
		/* another engine's QP: hand the frame over */
		hand_over_lc(eng, owner, (uint16_t)port->index, m);
		return;
	}
	if (qpn == DROCE_DP_GSI_QPN) {
		qp = eng->gsi[port->index];
		if (qp != NULL && !p.ipv6) {
			/* the MAD's sender: its replies then need no ARP */
			const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)frame;
			rte_be32_t sip;

			memcpy(&sip, p.src_gid + 12, 4);
			droce_port_arp_learn(port, sip, &eth->src_addr);
		}
	} else {
		qp = qp_lookup_lc(eng, qpn);
	}
	if (qp == NULL || qp->port != port) {
		eng->stats.no_qp++;
		rte_pktmbuf_free(m);
		return;
	}
	if (!droce_pkey_match(droce_bth_pkey(droce_pkt_bth(&p, frame)),
			      droce_pkey_at(qp->attr.pkey_index))) {
		/* IBTA 9.6.1.1 / 10.9.3: a P_Key mismatch drops the packet (counted) */
		eng->stats.drops[DROCE_DROP_PKEY]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (qp->state == DROCE_QPS_RESET || qp->state == DROCE_QPS_INIT ||
	    qp->state == DROCE_QPS_ERR) {
		/* IBTA 10.3.1: a QP in these states receives nothing */
		eng->stats.qp_state_drops++;
		rte_pktmbuf_free(m);
		return;
	}
	eng->stats.rx_pkts++;
	qp->stats.rx_pkts++;
	switch (qp->type) {
	case DROCE_QPT_RC:
		droce_rc_rx_lc(qp, m, &p);
		break;
	case DROCE_QPT_UC:
		droce_uc_rx_lc(qp, m, &p);
		break;
	case DROCE_QPT_UD:
		droce_ud_rx_lc(qp, m, &p);
		break;
	default:
		rte_pktmbuf_free(m);
		break;
	}
	droce_qp_overrun_check_lc(qp);
}

static unsigned int
rx_phase_lc(struct droce_engine *eng)
{
	struct rte_mbuf *pkts[DROCE_BURST];
	unsigned int got = 0;

	for (unsigned int pi = 0; pi < eng->n_ports; pi++) {
		/* drain up to a few bursts, so receiving keeps up with what a pass sends */
		for (unsigned int b = 0; b < DROCE_RX_BURSTS; b++) {
			uint16_t n = droce_port_rx_burst(eng->ports[pi], eng->queue, pkts, DROCE_BURST);
			/* RAW_PACKET steering: one load per burst while the port has no rule */
			bool flows = n != 0 && droce_flow_active(eng->ports[pi]->index);

			got += n;
			for (uint16_t i = 0; i < n; i++) {
				if (i + 1 < n)
					rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
				if (unlikely(flows) && droce_flow_rx_lc(eng, eng->ports[pi], pkts[i]))
					continue;
				dispatch_lc(eng, eng->ports[pi], pkts[i]);
			}
			if (n < DROCE_BURST)
				break;
		}
	}
	for (unsigned int e = 0; e < engines.n; e++) {
		unsigned int n;

		if (eng->xfer_in[e] == NULL)
			continue;
		n = rte_ring_sc_dequeue_burst(eng->xfer_in[e], (void **)pkts, DROCE_BURST, NULL);
		for (unsigned int i = 0; i < n; i++) {
			uint16_t tag = pkts[i]->port;

			if (unlikely(tag & DROCE_XFER_RAW))
				droce_engine_raw_deliver_lc(eng, eng->ports[tag & ~DROCE_XFER_RAW],
							    pkts[i]->hash.usr, pkts[i]);
			else
				dispatch_lc(eng, eng->ports[tag], pkts[i]);
		}
		got += n;
	}
	if (eng->nrxfree != 0)
		droce_engine_rx_free_flush_lc(eng);
	return got;
}

void
droce_engine_rx_free_flush_lc(struct droce_engine *eng)
{
	/* rte_pktmbuf_free_bulk's work, inline: the segments of one pool (every
	 * frame, in practice, zero-copy chains too: their external segment's
	 * reference is dropped by rte_pktmbuf_prefree_seg) go back in one
	 * rte_mempool_put_bulk */
	struct rte_mempool *mp = eng->rxfree[0]->pool;
	void *objs[DROCE_BURST * 3];
	unsigned int k = 0;

	for (unsigned int i = 0; i < eng->nrxfree; i++) {
		struct rte_mbuf *m = eng->rxfree[i];

		if (likely(m->nb_segs <= 3)) {
			do {
				struct rte_mbuf *next = m->next, *f = rte_pktmbuf_prefree_seg(m);

				if (f != NULL && likely(f->pool == mp))
					objs[k++] = f;
				else if (f != NULL)
					rte_mempool_put(f->pool, f);
				m = next;
			} while (m != NULL);
		} else {
			rte_pktmbuf_free(m);
		}
	}
	if (k != 0 && mp == eng->mcache_mp)
		rte_mempool_generic_put(mp, objs, k, eng->mcache);
	else if (k != 0)
		rte_mempool_put_bulk(mp, objs, k);
	eng->nrxfree = 0;
}

/* ---- phases 3-5 ---- */

/* Hands the PMD what it takes of @port's waiting frames; the rest keep waiting. */
static void
flush_port_lc(struct droce_engine *eng, unsigned int pi)
{
	uint16_t n = eng->ntx[pi], sent;

	if (n == 0)
		return;
	sent = droce_port_tx_burst(eng->ports[pi], eng->queue, eng->txq[pi], n);
	eng->stats.tx_pkts += sent;
	if (sent < n)
		memmove(eng->txq[pi], eng->txq[pi] + sent, (size_t)(n - sent) * sizeof(eng->txq[pi][0]));
	eng->ntx[pi] = n - sent;
}

void
droce_engine_tx_lc(struct droce_engine *eng, unsigned int port, struct rte_mbuf *m)
{
	if (eng->ntx[port] == DROCE_TXBUF) {
		flush_port_lc(eng, port);
		if (eng->ntx[port] == DROCE_TXBUF) {
			/* the link is not draining: lost like a frame on the wire */
			eng->stats.tx_drops++;
			rte_pktmbuf_free(m);
			return;
		}
	}
	eng->txq[port][eng->ntx[port]++] = m;
}

static void
flush_lc(struct droce_engine *eng)
{
	for (unsigned int pi = 0; pi < eng->n_ports; pi++)
		flush_port_lc(eng, pi);
}

/* Packets a QP may generate this pass: what fits in its port's waiting room,
 * less a reserve for the ACKs and NAKs the next receive phase produces. */
static unsigned int
tx_budget_lc(const struct droce_engine *eng, const struct droce_qp *qp)
{
	unsigned int room = DROCE_TXBUF - eng->ntx[qp->port_index];

	return room > 2 * DROCE_BURST ? RTE_MIN(room - 2 * DROCE_BURST, 2u * DROCE_BURST) : 0;
}

static void
work_phase_lc(struct droce_engine *eng)
{
	struct droce_qp *qp, *next;

	for (qp = TAILQ_FIRST(&eng->active); qp != NULL; qp = next) {
		next = TAILQ_NEXT(qp, active_link);
		unsigned int budget = tx_budget_lc(eng, qp);

		if (droce_qp_stash_pending(qp))
			droce_qp_stash_drain_lc(qp);
		if (qp->type == DROCE_QPT_RC) {
			droce_rc_timers_lc(qp);
			droce_rc_tx_lc(qp, budget);
		} else if (qp->type == DROCE_QPT_UC) {
			droce_uc_tx_lc(qp, budget);
		} else if (qp->type == DROCE_QPT_UD) {
			droce_ud_tx_lc(qp, budget);
		} else if (qp->type == DROCE_QPT_RAW_PACKET) {
			droce_raw_tx_lc(qp, budget);
		}
		droce_qp_overrun_check_lc(qp);
		if (!droce_qp_busy_lc(qp)) {
			TAILQ_REMOVE(&eng->active, qp, active_link);
			qp->active = false;
		}
	}
}

/* One pass; false when the engine is idle (nothing received or drained, no QP
 * with work or a timer, nothing waiting to be sent). */
static bool
pass_lc(struct droce_engine *eng)
{
	unsigned int got;
	uint64_t t = rte_rdtsc();

	eng->pass_gap = eng->now && t > eng->now ? t - eng->now : 0;
	eng->now = t;
	eng->stats.loops++;
	got = drain_channels_lc(eng);
	got += rx_phase_lc(eng);
	work_phase_lc(eng);
	flush_lc(eng);
	if (unlikely(eng->nrxfree != 0))
		droce_engine_rx_free_flush_lc(eng); /* frames injected as received */
	if (got != 0 || !TAILQ_EMPTY(&eng->active))
		return true;
	for (unsigned int pi = 0; pi < eng->n_ports; pi++)
		if (eng->ntx[pi] != 0)
			return true;
	return false;
}

void
droce_engine_poll_lc(struct droce_engine *eng)
{
	(void)pass_lc(eng);
}

/* ---- test support: raw frames ---- */

int
droce_dp_inject(unsigned int engine, unsigned int port, enum droce_inject_dir dir,
		const void *frame, uint32_t len)
{
	struct droce_port *p = droce_port_get(port);
	struct droce_msg msg = { .type = DROCE_MSG_INJECT };
	struct rte_mbuf *m;
	char *buf;
	int rc;

	if (!engines.started || engine >= engines.n || p == NULL)
		return ENODEV;
	if (len == 0 || (dir != DROCE_INJECT_TX && dir != DROCE_INJECT_RX))
		return EINVAL;
	m = rte_pktmbuf_alloc(p->mp);
	if (m == NULL)
		return ENOMEM;
	buf = len <= UINT16_MAX ? rte_pktmbuf_append(m, (uint16_t)len) : NULL;
	if (buf == NULL) {
		rte_pktmbuf_free(m);
		return EINVAL;
	}
	memcpy(buf, frame, len);
	m->port = (uint16_t)port;
	msg.ptr = m;
	msg.arg = port | (uint32_t)dir << 16;
	rc = droce_engine_send_msg(engines.eng[engine], &msg);
	if (rc != 0)
		rte_pktmbuf_free(m);
	return rc;
}

/* ---- neighbours ---- */

int
droce_dp_arp_resolve(unsigned int port, rte_be32_t ip, struct rte_ether_addr *mac,
		     unsigned int timeout_ms)
{
	struct droce_port *p = droce_port_get(port);
	struct droce_msg msg = { .type = DROCE_MSG_ARP, .arg = port, .rsvd = ip };
	uint64_t hz = rte_get_tsc_hz(), start = rte_rdtsc(), last = 0;

	if (p == NULL || !engines.started)
		return ENODEV;
	while (droce_port_arp_lookup(p, ip, mac) != 0) {
		uint64_t now = rte_rdtsc();
		int rc;

		if (now - start > hz / 1000 * timeout_ms)
			return ETIMEDOUT;
		if (last == 0 || now - last > hz / 5) {
			/* engine 0 owns queue 0 of every port: it sends the request */
			rc = droce_engine_send_msg(engines.eng[0], &msg);
			if (rc != 0)
				return rc;
			last = now;
		}
		droce_engines_progress();
		rte_pause();
	}
	return 0;
}

/* ---- running the engines ---- */

static inline bool
engine_take(struct droce_engine *eng)
{
	uint32_t free_ = 0;

	return atomic_load_explicit(&eng->driving, memory_order_relaxed) == 0 &&
	       atomic_compare_exchange_strong_explicit(&eng->driving, &free_, 1,
						       memory_order_acquire, memory_order_relaxed);
}

static inline void
engine_give(struct droce_engine *eng)
{
	atomic_store_explicit(&eng->driving, 0, memory_order_release);
}

void
droce_engines_progress(void)
{
	if (!engines.started || engines.dedicated)
		return;
	for (unsigned int e = 0; e < engines.n; e++) {
		struct droce_engine *eng = engines.eng[e];

		if (!engine_take(eng)) {
			/* someone drives it: if it is the fallback, it lets go after its pass */
			if (!atomic_load_explicit(&eng->wanted, memory_order_relaxed))
				atomic_store_explicit(&eng->wanted, true, memory_order_relaxed);
			atomic_store_explicit(&eng->app_tsc, rte_rdtsc(), memory_order_relaxed);
			continue;
		}
		if (atomic_load_explicit(&eng->wanted, memory_order_relaxed))
			atomic_store_explicit(&eng->wanted, false, memory_order_relaxed);
		rte_rcu_qsbr_thread_online(engines.rcu, e);
		droce_engine_poll_lc(eng);
		rte_rcu_qsbr_thread_offline(engines.rcu, e);
		atomic_store_explicit(&eng->app_tsc, eng->now, memory_order_relaxed);
		engine_give(eng);
	}
}

void
droce_engines_blocking(void)
{
	if (!engines.started || engines.dedicated || !fallback.running)
		return;
	for (unsigned int e = 0; e < engines.n; e++)
		atomic_store_explicit(&engines.eng[e]->app_tsc, 0, memory_order_relaxed);
	if (atomic_load(&fallback.sleeping)) {
		pthread_mutex_lock(&fallback.lock);
		fallback.kick = true;
		pthread_cond_signal(&fallback.cond);
		pthread_mutex_unlock(&fallback.lock);
	}
}

/* Drives every engine no application thread drove for fallback_us; true if any
 * of them had work. */
static bool
fallback_round(void)
{
	uint64_t now = rte_rdtsc();
	bool busy = false;

	for (unsigned int e = 0; e < engines.n; e++) {
		struct droce_engine *eng = engines.eng[e];
		uint64_t app = atomic_load_explicit(&eng->app_tsc, memory_order_relaxed);

		if ((int64_t)(now - app) < (int64_t)fallback.after_tsc)
			continue;
		if (!engine_take(eng))
			continue;
		/* a stale wish (an application thread that met another one) would keep
		 * the engine undriven: it is renewed by the next failed attempt */
		if (atomic_load_explicit(&eng->wanted, memory_order_relaxed))
			atomic_store_explicit(&eng->wanted, false, memory_order_relaxed);
		rte_rcu_qsbr_thread_online(engines.rcu, e);
		for (unsigned int i = 0; i < FALLBACK_PASSES; i++) {
			bool b = pass_lc(eng);

			busy |= b;
			atomic_fetch_add_explicit(&fallback.passes, 1, memory_order_relaxed);
			if (!b || atomic_load_explicit(&eng->wanted, memory_order_relaxed) ||
			    atomic_load_explicit(&fallback.stop, memory_order_relaxed))
				break;
		}
		rte_rcu_qsbr_thread_offline(engines.rcu, e);
		engine_give(eng);
	}
	return busy;
}

/*
 * Spin or sleep.  After work the thread spins FALLBACK_SPIN_US for the next
 * frame, unless the CPUs are crowded: then the spin only takes a CPU from a
 * thread that needs it (an application spinning on its buffer, the peer
 * process's threads on a small machine) and delays the very frames it waits
 * for by the scheduler's time slice.  Crowding shows, without a system call,
 * as the thread being off the CPU when it did not ask to be: a gap between two
 * spin iterations, or a sleep that ends FALLBACK_LATE_US after its deadline.
 * Then it sleeps at once after work (in short, precise steps: its timer slack
 * is FALLBACK_SLACK_NS) for FALLBACK_CROWDED_MS, and tries spinning again.
 */
static void *
fallback_main(void *arg)
{
	uint64_t hz = rte_get_tsc_hz(), idle_since = rte_rdtsc(), last = idle_since;
	uint64_t late = hz / 1000000 * FALLBACK_LATE_US, spin = hz / 1000000 * FALLBACK_SPIN_US;
	uint64_t crowded_until = 0;
	unsigned int sleep_us = 0;
	bool registered = rte_thread_register() == 0; /* a mempool cache of its own */

	RTE_SET_USED(arg);
	(void)prctl(PR_SET_TIMERSLACK, (unsigned long)FALLBACK_SLACK_NS, 0, 0, 0);
	while (!atomic_load_explicit(&fallback.stop, memory_order_relaxed)) {
		uint64_t now = rte_rdtsc();
		struct timespec ts;

		if ((int64_t)(now - last) > (int64_t)late)
			crowded_until = now + hz / 1000 * FALLBACK_CROWDED_MS;
		last = now;
		if (fallback_round()) {
			idle_since = now;
			sleep_us = 0;
			last = rte_rdtsc();
			continue;
		}
		if (now - idle_since < spin && (int64_t)(now - crowded_until) > 0) {
			rte_pause();
			continue;
		}
		/* idle: sleep in growing steps, woken early by droce_engines_blocking */
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, (unsigned int)FALLBACK_SLEEP_MAX_US) : 1;
		last += hz / 1000000 * sleep_us; /* the deadline: later than it is crowding */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)sleep_us * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&fallback.lock);
		atomic_store(&fallback.sleeping, true);
		while (!fallback.kick && !atomic_load(&fallback.stop) &&
		       pthread_cond_timedwait(&fallback.cond, &fallback.lock, &ts) == 0)
			;
		if (fallback.kick) {
			fallback.kick = false;
			sleep_us = 0;
			idle_since = rte_rdtsc();
		}
		atomic_store(&fallback.sleeping, false);
		pthread_mutex_unlock(&fallback.lock);
	}
	if (registered)
		rte_thread_unregister();
	return NULL;
}

static int
fallback_start(uint32_t us)
{
	pthread_condattr_t ca;
	int rc;

	fallback.after_tsc = rte_get_tsc_hz() / 1000000 * us;
	atomic_store(&fallback.stop, false);
	fallback.kick = false;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fallback.cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&fallback.tid, NULL, fallback_main, NULL);
	if (rc != 0) {
		pthread_cond_destroy(&fallback.cond);
		return rc;
	}
	pthread_setname_np(fallback.tid, "droce-fallback");
	fallback.running = true;
	return 0;
}

static void
fallback_stop(void)
{
	if (!fallback.running)
		return;
	pthread_mutex_lock(&fallback.lock);
	atomic_store(&fallback.stop, true);
	pthread_cond_signal(&fallback.cond);
	pthread_mutex_unlock(&fallback.lock);
	pthread_join(fallback.tid, NULL);
	pthread_cond_destroy(&fallback.cond);
	fallback.running = false;
}

uint64_t
droce_engines_fallback_passes(void)
{
	return atomic_load(&fallback.passes);
}

static int
engine_main(void *arg)
{
	struct droce_engine *eng = arg;

	rte_rcu_qsbr_thread_online(engines.rcu, eng->id);
	while (!atomic_load_explicit(&eng->stop, memory_order_relaxed)) {
		droce_engine_poll_lc(eng);
		rte_rcu_qsbr_quiescent(engines.rcu, eng->id);
	}
	rte_rcu_qsbr_thread_offline(engines.rcu, eng->id);
	return 0;
}

static void
engine_free(struct droce_engine *eng)
{
	struct droce_msg m;

	if (eng == NULL)
		return;
	for (unsigned int c = 0; c < eng->n_chan; c++) {
		/* modifies nobody applied still own their attribute copy */
		while (rte_ring_sc_dequeue_elem(eng->chan[c], &m, sizeof(m)) == 0)
			if (m.type == DROCE_MSG_MODIFY)
				free(m.ptr);
			else if (m.type == DROCE_MSG_INJECT)
				rte_pktmbuf_free(m.ptr);
		rte_ring_free(eng->chan[c]);
	}
	for (unsigned int e = 0; e < DROCE_MAX_ENGINES; e++)
		rte_ring_free(eng->xfer_in[e]);
	for (unsigned int pg = 0; pg < DROCE_QPT_PAGES; pg++)
		rte_free(atomic_load(&eng->qpt[pg]));
	rte_free(eng->qp_freed);
	if (eng->mcache != NULL) {
		/* its mbufs back to the pool before the pool goes */
		rte_mempool_cache_flush(eng->mcache, eng->mcache_mp);
		rte_mempool_cache_free(eng->mcache);
	}
	rte_free(eng);
}

int
droce_engines_start(void)
{
	const struct droce_config *cfg = droce_get_config();
	size_t rcu_size;

	if (engines.started)
		return 0;
	if (cfg == NULL) {
		errno = ENODEV;
		return ENODEV;
	}
	engines.n = cfg->n_engines ? cfg->n_engines : 1;
	droce_rc_sr_config(cfg->selective_repeat != 0);
	engines.dedicated = cfg->engine_mode == DROCE_ENGINE_MODE_DEDICATED;
	for (unsigned int pi = 0; pi < droce_port_count(); pi++) {
		struct droce_port *p = droce_port_get(pi);

		if (p->nb_rxq < engines.n || p->nb_txq < engines.n) {
			DP_LOG(ERR, "%s: %u engines need %u rx and tx queues on every port (has %u/%u)",
			       cfg->source, engines.n, engines.n, p->nb_rxq, p->nb_txq);
			errno = EINVAL;
			return EINVAL;
		}
	}
	rcu_size = rte_rcu_qsbr_get_memsize(engines.n);
	engines.rcu = rte_zmalloc("droce_rcu", rcu_size, RTE_CACHE_LINE_SIZE);
	if (engines.rcu == NULL || rte_rcu_qsbr_init(engines.rcu, engines.n) != 0)
		goto fail;
	for (unsigned int e = 0; e < engines.n; e++) {
		struct droce_engine *eng = rte_zmalloc("droce_engine", sizeof(*eng), RTE_CACHE_LINE_SIZE);

		if (eng == NULL)
			goto fail;
		engines.eng[e] = eng;
		eng->id = e;
		eng->queue = (uint16_t)e;
		eng->tsc_hz = rte_get_tsc_hz();
		TAILQ_INIT(&eng->active);
		eng->n_ports = droce_port_count();
		for (unsigned int pi = 0; pi < eng->n_ports; pi++)
			eng->ports[pi] = droce_port_get(pi);
		if (eng->n_ports > 0 && eng->ports[0]->mp->cache_size > 0) {
			/* as large as the pool's per-lcore caches; none: the plain path */
			eng->mcache = rte_mempool_cache_create(eng->ports[0]->mp->cache_size,
							       SOCKET_ID_ANY);
			if (eng->mcache != NULL)
				eng->mcache_mp = eng->ports[0]->mp;
		}
		rte_rcu_qsbr_thread_register(engines.rcu, e);
	}
	for (unsigned int to = 0; to < engines.n; to++)
		for (unsigned int from = 0; from < engines.n; from++) {
			char name[RTE_RING_NAMESIZE];

			if (to == from)
				continue;
			snprintf(name, sizeof(name), "dxf%u_%u", from, to);
			engines.eng[to]->xfer_in[from] = rte_ring_create(
				name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (engines.eng[to]->xfer_in[from] == NULL)
				goto fail;
		}
	engines.gen++;
	engines.started = true;
	if (!engines.dedicated && cfg->fallback_us > 0) {
		int rc = fallback_start(cfg->fallback_us);

		if (rc != 0) {
			DP_LOG(ERR, "cannot start the fallback progress thread: %s", strerror(rc));
			droce_engines_stop();
			errno = rc;
			return rc;
		}
	}
	if (engines.dedicated) {
		for (unsigned int e = 0; e < engines.n; e++) {
			if (rte_eal_remote_launch(engine_main, engines.eng[e], cfg->engine_lcores[e]) != 0) {
				DP_LOG(ERR, "cannot launch engine %u on lcore %u", e, cfg->engine_lcores[e]);
				droce_engines_stop();
				errno = EBUSY;
				return EBUSY;
			}
		}
	}
	return 0;
fail:
	for (unsigned int e = 0; e < engines.n; e++) {
		engine_free(engines.eng[e]);
		engines.eng[e] = NULL;
	}
	rte_free(engines.rcu);
	engines.rcu = NULL;
	errno = ENOMEM;
	return ENOMEM;
}

void
droce_engines_stop(void)
{
	const struct droce_config *cfg = droce_get_config();
	void (*hook)(void);

	if (!engines.started)
		return;
	/* users of the engines above dp.h (the CM) let go first, while engines still run */
	pthread_mutex_lock(&engines.chan_lock);
	hook = engines.stop_hook;
	engines.stop_hook = NULL;
	pthread_mutex_unlock(&engines.chan_lock);
	if (hook != NULL)
		hook();
	fallback_stop();
	if (engines.dedicated && cfg) {
		for (unsigned int e = 0; e < engines.n; e++)
			atomic_store(&engines.eng[e]->stop, true);
		for (unsigned int e = 0; e < engines.n; e++)
			rte_eal_wait_lcore(cfg->engine_lcores[e]);
	}
	droce_runtime_lock_excl(); /* counter readers (telemetry) are out */
	for (unsigned int e = 0; e < engines.n; e++) {
		struct droce_engine *eng = engines.eng[e];

		for (unsigned int pi = 0; pi < eng->n_ports; pi++)
			rte_pktmbuf_free_bulk(eng->txq[pi], eng->ntx[pi]);
		engine_free(eng);
		engines.eng[e] = NULL;
	}
	for (unsigned int e = 0; e < DROCE_MAX_ENGINES; e++)
		my_chan[e] = NULL;
	rte_free(engines.rcu);
	engines.rcu = NULL;
	engines.started = false;
	engines.n = 0;
	droce_runtime_unlock_excl();
}

void
droce_engine_stats_get(unsigned int id, struct droce_engine_stats *out)
{
	struct droce_engine *eng = droce_engine_get(id);

	if (eng)
		*out = eng->stats;
}

/* ---- the public progress calls (include/droce/droce.h) ---- */

void
droce_progress(void)
{
	droce_engines_progress();
}

void
droce_progress_blocking(void)
{
	droce_engines_blocking();
}
