/* SPDX-License-Identifier: BSD-3-Clause
 * Channels: one SPSC ring of struct droce_msg from each application thread to
 * each engine, created on the thread's first message to it and given back
 * when the thread exits.  The application side (droce_engine_send_msg,
 * droce_dp_inject, droce_dp_arp_resolve) and the engine's phase 1, which
 * takes the doorbells (bells_lc) and then drains every channel and handles
 * the messages in posting order (handle_msg_lc).
 *
 * Doorbells are not messages: a post whose QP has no bell on its way (the
 * QP's bell flag) rings the QP's bit in the engine's bitmap, so posts to
 * 10,000 QPs cost no channel message each and one to a QP whose bell the
 * engine has not taken yet costs one exchange, as before.  The engine
 * takes the bits before it drains the channels, so every message a poster
 * sent before ringing (ATTACH, MODIFY) is handled in the same pass, before
 * the work phase runs the QP.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "engine_internal.h"
#include "internal.h"
#include "pmd_glue/port.h"
#include "pmd_glue/stats_internal.h"
#include "raw.h"

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
	pthread_mutex_lock(&droce_engines.chan_lock);
	if (droce_engines.started && my_chan_gen == droce_engines.gen) {
		for (unsigned int e = 0; e < droce_engines.n; e++) {
			struct droce_engine *eng = droce_engines.eng[e];

			if (my_chan[e] != NULL && eng->n_chan_free < DROCE_MAX_CHANNELS)
				eng->chan_free[eng->n_chan_free++] = my_chan[e];
		}
	}
	pthread_mutex_unlock(&droce_engines.chan_lock);
	memset(my_chan, 0, sizeof(my_chan));
}

static void
chan_key_create(void)
{
	if (pthread_key_create(&chan_key, channels_release) != 0)
		DP_LOG(WARNING, "no thread-exit hook: channels of exited threads are not reused");
}

static struct rte_ring *
channel_of(struct droce_engine *eng)
{
	static _Atomic unsigned int serial;
	struct rte_ring *r = my_chan[eng->id];
	char name[RTE_RING_NAMESIZE];
	unsigned int n;

	if (r != NULL && my_chan_gen == droce_engines.gen)
		return r;
	if (my_chan_gen != droce_engines.gen) {
		/* channels of an earlier start were freed with its engines */
		memset(my_chan, 0, sizeof(my_chan));
		my_chan_gen = droce_engines.gen;
	}
	pthread_once(&chan_key_once, chan_key_create);
	pthread_setspecific(chan_key, (void *)1); /* non-NULL: channels_release runs at exit */
	pthread_mutex_lock(&droce_engines.chan_lock);
	if (eng->n_chan_free > 0) {
		r = eng->chan_free[--eng->n_chan_free];
		pthread_mutex_unlock(&droce_engines.chan_lock);
		my_chan[eng->id] = r;
		return r;
	}
	pthread_mutex_unlock(&droce_engines.chan_lock);
	snprintf(name, sizeof(name), "dch%u", atomic_fetch_add(&serial, 1));
	r = rte_ring_create_elem(name, sizeof(struct droce_msg), DROCE_CHANNEL_SIZE, SOCKET_ID_ANY,
				 RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r == NULL)
		return NULL;
	pthread_mutex_lock(&droce_engines.chan_lock);
	n = atomic_load(&eng->n_chan);
	if (n == DROCE_MAX_CHANNELS) {
		pthread_mutex_unlock(&droce_engines.chan_lock);
		rte_ring_free(r);
		return NULL;
	}
	eng->chan[n] = r;
	atomic_store_explicit(&eng->n_chan, n + 1, memory_order_release);
	pthread_mutex_unlock(&droce_engines.chan_lock);
	my_chan[eng->id] = r;
	return r;
}

int
droce_engine_send_msg(struct droce_engine *eng, const struct droce_msg *msg)
{
	struct rte_ring *r;

	if (unlikely(droce_engines.forked))
		return EIO; /* no engine runs in a forked child (engine_internal.h) */
	r = channel_of(eng);
	if (r == NULL)
		return ENOMEM;
	while (rte_ring_sp_enqueue_elem(r, (void *)(uintptr_t)msg, sizeof(*msg)) != 0) {
		/* the engine drains channels every pass; let it (or us) make room */
		if (!droce_engines.dedicated)
			droce_engines_progress();
		else
			rte_pause();
	}
	/* after the enqueue (release; a plain store, not "if not set": the
	 * engine may be taking the flag right now, and a store it misses is
	 * read by its next pass) */
	atomic_store_explicit(&eng->chan_msgs, 1, memory_order_release);
	/* a sleeping fallback thread takes it (the sender may not drive) */
	if (!droce_engines.dedicated)
		droce_engine_fallback_nudge();
	return 0;
}

/*
 * Sets bit @index of the leaf, and a level's bit in its parent only when
 * the OR found the level zero: a non-zero word already has its parent's
 * bit set, or the poster that made it non-zero is about to set it, and the
 * engine clears a parent before the words under it, so an OR that finds
 * its word non-zero is read by the engine's next exchange of that word.
 * Acquire-release RMWs throughout: the slots published before the leaf OR
 * are seen by the engine's exchange that reads it.
 */
int
droce_engine_ring_up(struct droce_engine *eng, uint32_t index)
{
	uint32_t w = index >> 6;

	if (atomic_fetch_or_explicit(&eng->bell_mid[w >> 6], UINT64_C(1) << (w & 63),
				     memory_order_acq_rel) != 0)
		return 0;
	/* sequentially consistent (on x86 the same lock or): then the look at
	 * whether the fallback thread sleeps on its wake lines (it looks at
	 * bell_top after it says so) */
	if (atomic_fetch_or(&eng->bell_top, UINT64_C(1) << (w >> 6)) == 0 &&
	    unlikely(atomic_load(&droce_fallback_asleep)))
		droce_engine_fallback_nudge();
	return 0;
}

int
droce_engine_ring(struct droce_engine *eng, uint32_t index)
{
	if (unlikely(droce_engines.forked))
		return EIO; /* no engine runs in a forked child (engine_internal.h) */
	if (atomic_fetch_or_explicit(&eng->bell_leaf[index >> 6], UINT64_C(1) << (index & 63),
				     memory_order_acq_rel) != 0)
		return 0; /* rung already, or its word's parent is being set */
	return droce_engine_ring_up(eng, index);
}

void
droce_engine_chan_free(struct droce_engine *eng)
{
	struct droce_msg m;

	for (unsigned int c = 0; c < eng->n_chan; c++) {
		/* modifies nobody applied still own their attribute copy */
		while (rte_ring_sc_dequeue_elem(eng->chan[c], &m, sizeof(m)) == 0)
			if (m.type == DROCE_MSG_MODIFY)
				free(m.ptr);
			else if (m.type == DROCE_MSG_INJECT)
				rte_pktmbuf_free(m.ptr);
		rte_ring_free(eng->chan[c]);
	}
}

void
droce_engine_chan_forget(void)
{
	memset(my_chan, 0, sizeof(my_chan));
}

/* ---- phase 1: the engine handles the messages ---- */

/* A raw frame from droce_dp_inject(), in channel order. */
static void
inject_lc(struct droce_engine *eng, struct rte_mbuf *m, unsigned int port, enum droce_inject_dir dir)
{
	eng->stats.injected++;
	if (port >= eng->n_ports) {
		rte_pktmbuf_free(m);
		return;
	}
	if (dir == DROCE_INJECT_RX)
		droce_engine_rx_one_lc(eng, eng->ports[port], m, droce_flow_active(port));
	else
		droce_engine_tx_lc(eng, port, m);
}

static void
handle_msg_lc(struct droce_engine *eng, const struct droce_msg *m)
{
	struct droce_qp *qp = m->qp;

	switch (m->type) {
	case DROCE_MSG_ATTACH:
		if (qp->qpn == DROCE_DP_GSI_QPN) {
			eng->gsi[qp->port_index] = qp;
		} else {
			*droce_engine_qpt_slot_lc(eng, droce_qpn_index(qp->qpn)) = qp; /* page made by add_qp */
			eng->n_attached++;
		}
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
	case DROCE_MSG_ND:
		if (m->arg >= eng->n_ports)
			break;
		if (memcmp(m->addr, (const uint8_t[16]){ 0 }, 16) == 0) {
			/* once: the monitor may have asked again meanwhile */
			if (droce_port_nd_announce_pending(eng->ports[m->arg]))
				droce_port_nd_announce(eng->ports[m->arg], eng->queue);
		} else {
			droce_port_nd_solicit(eng->ports[m->arg], eng->queue, m->addr);
		}
		break;
	case DROCE_MSG_INJECT:
		inject_lc(eng, m->ptr, m->arg & 0xffff, (enum droce_inject_dir)(m->arg >> 16));
		break;
	case DROCE_MSG_CQ_SWAP:
		droce_cq_swap_lc(eng, m->ptr);
		break;
	case DROCE_MSG_DETACH:
		droce_engine_unsched_lc(eng, qp);
		if (qp->qpn == DROCE_DP_GSI_QPN) {
			eng->gsi[qp->port_index] = NULL;
		} else {
			uint32_t i = droce_qpn_index(qp->qpn);

			*droce_engine_qpt_slot_lc(eng, i) = NULL;
			eng->n_attached--;
			/* a bell rung after this pass took the bits is not for its
			 * index's next QP (the parents' bits find a zero word) */
			atomic_fetch_and_explicit(&eng->bell_leaf[i >> 6], ~(UINT64_C(1) << (i & 63)),
						  memory_order_relaxed);
		}
		atomic_store_explicit(&qp->detached, true, memory_order_release);
		break;
	}
}

/* The QPs of one leaf word's rung bits, active (or, not attached yet, rung again). */
static unsigned int
bells_word_lc(struct droce_engine *eng, uint32_t w)
{
	uint64_t bits = atomic_exchange_explicit(&eng->bell_leaf[w], 0, memory_order_acq_rel);
	unsigned int got = 0;

	while (bits != 0) {
		uint32_t i = w << 6 | (uint32_t)__builtin_ctzll(bits);
		struct droce_qp **slot = droce_engine_qpt_slot_lc(eng, i);

		bits &= bits - 1;
		if (likely(slot != NULL && *slot != NULL)) {
			/* the bell taken: later posts ring again; every slot
			 * published before a post found it set is visible
			 * from here (acquire) */
			atomic_exchange_explicit(&(*slot)->bell, 0, memory_order_acq_rel);
			droce_engine_activate_lc(eng, *slot);
			got++;
		} else {
			/* its ATTACH is in a channel this pass drains below:
			 * the bell (its flag still set) is for the next pass */
			(void)droce_engine_ring(eng, i);
		}
	}
	return got;
}

/* Phase 1a: every rung doorbell, top down, each level's word taken by an
 * exchange before the words under it; an idle pass reads one word. */
static unsigned int
bells_lc(struct droce_engine *eng)
{
	uint64_t top;
	unsigned int got = 0;

	if (likely(atomic_load_explicit(&eng->bell_top, memory_order_relaxed) == 0))
		return 0;
	top = atomic_exchange_explicit(&eng->bell_top, 0, memory_order_acq_rel);
	while (top != 0) {
		uint32_t m = (uint32_t)__builtin_ctzll(top);
		uint64_t mid = atomic_exchange_explicit(&eng->bell_mid[m], 0, memory_order_acq_rel);

		top &= top - 1;
		while (mid != 0) {
			got += bells_word_lc(eng, m << 6 | (uint32_t)__builtin_ctzll(mid));
			mid &= mid - 1;
		}
	}
	return got;
}

unsigned int
droce_engine_drain_lc(struct droce_engine *eng)
{
	unsigned int got = bells_lc(eng); /* first: the messages sent before a bell come next */
	struct droce_msg msgs[DROCE_BURST];
	unsigned int n;
	bool more = false;

	/* no message sent since the last pass took the flag: no channel to look into */
	if (likely(atomic_load_explicit(&eng->chan_msgs, memory_order_relaxed) == 0))
		return got;
	/* taken before the channels are read: a message enqueued after this
	 * exchange and missed below has its flag stored again, for the next pass */
	atomic_exchange_explicit(&eng->chan_msgs, 0, memory_order_acq_rel);
	n = atomic_load_explicit(&eng->n_chan, memory_order_acquire);
	for (unsigned int c = 0; c < n; c++) {
		unsigned int k = rte_ring_sc_dequeue_burst_elem(eng->chan[c], msgs, sizeof(msgs[0]),
								 DROCE_BURST, NULL);
		for (unsigned int i = 0; i < k; i++)
			handle_msg_lc(eng, &msgs[i]);
		got += k;
		more |= k == DROCE_BURST; /* a burst's worth: maybe more behind it */
	}
	if (more)
		atomic_store_explicit(&eng->chan_msgs, 1, memory_order_relaxed); /* the next pass */
	return got;
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

	if (!droce_engines.started || engine >= droce_engines.n || p == NULL)
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
	rc = droce_engine_send_msg(droce_engines.eng[engine], &msg);
	if (rc != 0)
		rte_pktmbuf_free(m);
	return rc;
}

/* ---- neighbours ---- */

int
droce_dp_neigh_resolve(unsigned int port, const uint8_t addr[16], struct rte_ether_addr *mac,
		       unsigned int timeout_ms)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct droce_port *p = droce_port_get(port);
	struct droce_msg msg = { .arg = port };
	uint64_t hz = rte_get_tsc_hz(), start = rte_rdtsc(), last = 0;

	if (p == NULL || !droce_engines.started)
		return ENODEV;
	if (memcmp(addr, v4mapped, 12) == 0) {
		rte_be32_t ip;

		memcpy(&ip, addr + 12, 4);
		msg.type = DROCE_MSG_ARP;
		msg.rsvd = ip;
	} else {
		if (addr[0] == 0xff || memcmp(addr, (const uint8_t[16]){ 0 }, 16) == 0)
			return EINVAL; /* a group or ::, no neighbour */
		msg.type = DROCE_MSG_ND;
		memcpy(msg.addr, addr, 16);
	}
	while (droce_port_neigh_lookup(p, addr, mac) != 0) {
		uint64_t now = rte_rdtsc();
		int rc;

		if (now - start > hz / 1000 * timeout_ms)
			return ETIMEDOUT;
		if (last == 0 || now - last > hz / 5) {
			/* engine 0 owns queue 0 of every port: it sends the request
			 * (ARP) or solicitation (ND) */
			rc = droce_engine_send_msg(droce_engines.eng[0], &msg);
			if (rc != 0)
				return rc;
			last = now;
		}
		droce_engines_progress();
		rte_pause();
	}
	return 0;
}

int
droce_dp_arp_resolve(unsigned int port, rte_be32_t ip, struct rte_ether_addr *mac,
		     unsigned int timeout_ms)
{
	uint8_t addr[16] = { [10] = 0xff, [11] = 0xff };

	memcpy(addr + 12, &ip, 4);
	return droce_dp_neigh_resolve(port, addr, mac, timeout_ms);
}

void
droce_dp_nd_announce_due(void)
{
	struct droce_msg msg = { .type = DROCE_MSG_ND };

	if (!droce_engines.started)
		return;
	for (unsigned int port = 0; port < droce_port_count(); port++) {
		struct droce_port *p = droce_port_get(port);

		/* the unsolicited NA once the link is up (a memif peer that
		 * connects later hears it then); the engine clears the flag
		 * when it is sent */
		if (p == NULL || !droce_port_nd_announce_pending(p) || !droce_port_link_up(p))
			continue;
		msg.arg = port;
		(void)droce_engine_send_msg(droce_engines.eng[0], &msg);
	}
}

void
droce_dp_nd_tick(void)
{
	/* a foreign thread (the port monitor): as droce_mcast_tick */
	droce_runtime_hold();
	droce_dp_nd_announce_due();
	droce_runtime_release();
}

