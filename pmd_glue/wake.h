/* SPDX-License-Identifier: BSD-3-Clause
 * The memif wake-up line between two droce processes (issue 23 §4): what a
 * sleeping fallback thread waits on instead of a timer.  See wake.c.
 */
#ifndef DROCE_PMD_GLUE_WAKE_H
#define DROCE_PMD_GLUE_WAKE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct droce_port;
struct rte_mbuf;

/* A port's line (memif ports only; NULL: none, the fallback keeps a timer). */
struct droce_wake {
	int fd;                          /* our datagram socket (abstract name) */
	_Atomic uint32_t *mine;          /* our page: non-zero while we sleep */
	_Atomic(_Atomic uint32_t *) peer; /* the peer's page, once it told us (never unmapped) */
	int memfd;                       /* our page's memfd, sent to the peer */
	uint64_t hello_tsc;              /* last hello sent */
	char peer_name[64];              /* the peer's abstract address (sun_path) */
	unsigned int peer_len;
	_Atomic uint64_t wakes_sent;     /* wake datagrams this side sent */
	_Atomic uint64_t wakes_rx;       /* wake datagrams this side took */
};

/* Sets @p->wake up for a memif port (best effort: on any failure none). */
void droce_wake_open(struct droce_port *p);
/* Closes it (the page stays mapped where a peer may still read it). */
void droce_wake_close(struct droce_port *p);

/* What wakes a sleeper: the value of its word. */
enum droce_wake_for {
	DROCE_WAKE_ANY = 1,   /* any frame (a program may sleep for its event) */
	DROCE_WAKE_ASKED = 2, /* a frame that asks something of the sleeper: any
			       * but a RoCE answer (droce_wake_set_answers) */
};

/* The BTH opcodes that only answer (ACKs, READ responses, atomic ACKs,
 * CNPs): a burst made of these alone does not wake a DROCE_WAKE_ASKED
 * sleeper.  A bitmap by opcode, set by the dataplane from its opcode table
 * before any port sends. */
void droce_wake_set_answers(const uint64_t bits[4]);

/* Transmit side.  Before a burst goes to the PMD (which may free its
 * frames): when the peer sleeps to be woken only by a frame that asks
 * (DROCE_WAKE_ASKED), whether one of @pkts does; DROCE_WAKE_UNSEEN when it
 * did not look (the peer's word said otherwise). */
enum droce_wake_verdict { DROCE_WAKE_UNSEEN = 0, DROCE_WAKE_ASKS, DROCE_WAKE_ANSWERS };
enum droce_wake_verdict droce_wake_look_slow(struct rte_mbuf *const *pkts, uint16_t n);
static inline enum droce_wake_verdict
droce_wake_look(struct droce_wake *w, struct rte_mbuf *const *pkts, uint16_t n)
{
	_Atomic uint32_t *f;

	if (w == NULL)
		return DROCE_WAKE_UNSEEN;
	f = atomic_load_explicit(&w->peer, memory_order_acquire);
	if (f == NULL || atomic_load_explicit(f, memory_order_relaxed) != DROCE_WAKE_ASKED)
		return DROCE_WAKE_UNSEEN;
	return droce_wake_look_slow(pkts, n);
}

/* After the frames went to the PMD: a peer asleep is woken, unless it asked
 * for frames that ask and @v says none did (an unseen burst wakes it). */
void droce_wake_peer_slow(struct droce_wake *w);
static inline void
droce_wake_peer(struct droce_wake *w, enum droce_wake_verdict v)
{
	_Atomic uint32_t *f;
	uint32_t why;

	if (w == NULL)
		return;
	f = atomic_load_explicit(&w->peer, memory_order_acquire);
	if (f == NULL)
		return;
	/* the frames' ring store before the look at the flag: against the
	 * sleeper's flag store before its last look at the ring (Dekker) */
	atomic_thread_fence(memory_order_seq_cst);
	why = atomic_load_explicit(f, memory_order_relaxed);
	if (why != 0 && !(why == DROCE_WAKE_ASKED && v == DROCE_WAKE_ANSWERS))
		droce_wake_peer_slow(w);
}

/* Sleeping side (the fallback thread, or threads asleep for their events in
 * droce_engines_line_sleep; engine_fallback.c says whose the lines are): */
/* Says we sleep, to be woken by what @why says; false if the peer is
 * unknown (then a hello is sent, rate limited, and the caller must not count
 * on a wake). */
bool droce_wake_arm(struct droce_port *p, enum droce_wake_for why);
/* Says we are awake. */
void droce_wake_disarm(struct droce_port *p);
/* Takes what came on the line: wakes, the peer's hello or answer. */
void droce_wake_drain(struct droce_port *p);
/* The line's fd for poll(), or -1. */
int droce_wake_fd(const struct droce_port *p);

#endif /* DROCE_PMD_GLUE_WAKE_H */
