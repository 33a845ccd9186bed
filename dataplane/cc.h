/* SPDX-License-Identifier: BSD-3-Clause
 * Congestion control on the wire (issue 25): ECN on the frames droce sends,
 * the notification point (a CE-marked frame makes its QP send a CNP) and the
 * reaction point's entry (a CNP received for a QP).  `[portN] ecn` and the
 * `[dcqcn]` section configure it; cc.c has the engine's side.
 */
#ifndef DROCE_DP_CC_H
#define DROCE_DP_CC_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/config.h>

#include "dcqcn.h"
#include "engine.h"
#include "internal.h"
#include "wire.h"

/* What the engines read, set once at start (droce_cc_config). */
struct droce_cc_params {
	bool np_on;            /* CNPs for CE-marked frames */
	bool rp_on;            /* CNPs slow their QP down */
	uint8_t cnp_tos;       /* cnp_dscp << 2, Not-ECT */
	uint8_t cnp_pcp;       /* VLAN priority of CNPs on a VLAN port */
	uint64_t cnp_gap;      /* min_time_between_cnps in TSC cycles (per QP) */
	uint64_t tsc_hz;
	/* the reaction point's parameters per port (its line rate), TSC clock */
	struct droce_dcqcn_params rp[DROCE_MAX_PORTS];
};
extern struct droce_cc_params droce_cc;

/* Reads the [dcqcn] section into droce_cc (engines start, the ports up:
 * their link speed is the reaction point's line rate unless rpg_max_rate). */
void droce_cc_config(const struct droce_dcqcn_config *c, uint64_t tsc_hz);

/*
 * A QP's reaction point (allocated at its first CNP, freed with the QP):
 * DCQCN's state on the TSC and the pacer.  While the rate is below the
 * line's, the QP's transmit turns send no faster than Rc: a turn may send
 * when next_tx has come, up to the frames the time since allows (a few at
 * most), and next_tx moves on by what it sent at Rc; a QP with work that
 * must wait goes to the engine's timer wheel until next_tx.
 */
struct droce_cc_qp {
	struct droce_dcqcn s;
	uint64_t next_tx;      /* TSC from which it may send */
	uint64_t cpb_q16;      /* TSC cycles per byte at Rc, << 16 */
	uint64_t pkt_cycles;   /* ... per full frame of the port's MTU */
	uint64_t rc_seen;      /* the Rc they were computed for */
	uint64_t last_at;      /* when its last paced turn sent */
	uint64_t last_bytes;   /* ... and how much */
	bool limited;          /* Rc or Rt below the line rate: paced */
};

/* What a paced turn started from (droce_cc_pace_begin_lc). */
struct droce_cc_mark {
	bool paced;
	uint16_t ntx;          /* the port's waiting frames before the turn */
	uint64_t pkts;         /* the QP's tx_frames before the turn */
};

/* A CNP for @qp: its reaction point (allocated at the first). */
void droce_cc_rp_cnp_lc(struct droce_engine *eng, struct droce_qp *qp);
/* The turn of a QP with a reaction point: runs its timers and returns the
 * frames it may send (0 while it waits; its coalesced ACK goes anyway). */
unsigned int droce_cc_pace_begin_lc(struct droce_engine *eng, struct droce_qp *qp,
				    unsigned int budget, struct droce_cc_mark *mk);
/* After the turn: next_tx moves by the bytes it sent, the byte counter counts them. */
void droce_cc_pace_end_lc(struct droce_engine *eng, struct droce_qp *qp,
			  const struct droce_cc_mark *mk);
/* A QP moved to RESET starts again at the line rate. */
void droce_cc_qp_reset_lc(struct droce_qp *qp);

/* When a QP with work must wait for its pacer: next_tx (0: it need not;
 * an ACK or completions to push never wait). */
static inline uint64_t
droce_cc_pace_wait(const struct droce_qp *qp, uint64_t now)
{
	const struct droce_cc_qp *c = qp->cc;

	if (!c->limited || c->next_tx <= now || qp->ack_pending || droce_qp_stash_pending(qp))
		return 0;
	/* the rate-increase timer comes first: the rate it raises brings
	 * next_tx forward (as a NIC's limiter, whose timer runs while the QP
	 * waits), so a QP cut to the floor does not sit out its last frame's
	 * time at the floor rate */
	if (c->s.next_inc > now && c->s.next_inc < c->next_tx)
		return c->s.next_inc;
	return c->next_tx;
}

/* The traffic class and VLAN priority of the frames a QP of port @p sends
 * on @path: the DSCP of its traffic class (the port's `tclass` when it
 * gives 0) and the port's ECN codepoint (`[portN] ecn`: ECT(0) by default,
 * as ConnectX, whose firmware, not the application, chooses the ECN bits);
 * the port's `pcp` when the service level gave priority 0. */
static inline void
droce_cc_path(const struct droce_port *p, struct droce_path *path)
{
	uint8_t tc = path->traffic_class & 0xfcu ? path->traffic_class : p->tclass;

	path->traffic_class = (uint8_t)((tc & 0xfcu) | (p->ecn & 3u));
	if (path->vlan_pcp == 0)
		path->vlan_pcp = p->pcp & 7u;
}

/* True when a received frame needs droce_cc_rx_lc: a CNP, or CE-marked. */
static inline bool
droce_cc_rx_needed(const struct droce_pkt *p)
{
	return p->opcode == DROCE_OP_CNP || (p->traffic_class & 3u) == DROCE_ECN_CE;
}

/*
 * A frame for @qp (its port, P_Key and state checked) that is a CNP or
 * carries CE: a CNP is counted, handed to the reaction point and freed
 * (true: consumed); a CE mark is counted and, at most once per
 * min_time_between_cnps for the QP, answered with a CNP to the sender's QP
 * (false: the frame goes on to the transport).
 */
bool droce_cc_rx_lc(struct droce_engine *eng, struct droce_qp *qp, struct rte_mbuf *m,
		    const uint8_t *frame, const struct droce_pkt *p);

/*
 * Builds the CNP answering @p (received on @qp) into @buf (@cap bytes):
 * Ethernet and IP addresses swapped, the port's VLAN with cnp_802p_prio,
 * DSCP cnp_dscp (Not-ECT), the QP's UDP source port (a UD QP's: the
 * frame's), BTH opcode 0x81, BECN set, P_Key 0xFFFF, DestQP @dqpn, PSN 0,
 * 16 reserved zero bytes and the ICRC.  Returns its length, 0 if it does
 * not fit.
 */
size_t droce_cc_build_cnp(const struct droce_qp *qp, const uint8_t *frame,
			  const struct droce_pkt *p, uint32_t dqpn, uint8_t *buf, size_t cap);

#endif /* DROCE_DP_CC_H */
