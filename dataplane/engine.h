/* SPDX-License-Identifier: BSD-3-Clause
 * Engine internals: one engine per dataplane lcore (or co-located: driven,
 * one pass at a time under its `driving` flag, by whichever application thread
 * or the fallback progress thread takes it).  An engine alone owns its QPs' transport state; the
 * application side reaches it only through channels (SPSC rings) and the
 * ready flags of WQE/RQE slots.  Functions ending in _lc run on the engine.
 */
#ifndef DROCE_ENGINE_H
#define DROCE_ENGINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/queue.h>

#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include <droce/config.h>

#include "dp.h"
#include "icrc.h"
#include "seqcheck.h"
#include "wire.h"

struct droce_port;
struct droce_engine;

#define DROCE_BURST 32
#define DROCE_TXBUF 512     /* per port: frames waiting for the PMD */
#define DROCE_TXROOM_SWITCH (2 * DROCE_BURST + 8) /* ... a switch port's (engine.h txroom) */
#define DROCE_TXSTASH 64    /* free mbufs an engine keeps at hand (droce_engine_mbuf_lc) */
#define DROCE_RX_BURSTS 4   /* rx bursts per port per pass, at most */
/* the timer wheel (engine_sched.c): slots, and ticks per second (a slot's
 * span is the power of two of TSC cycles nearest below) */
#define DROCE_TW_SLOTS 256
#define DROCE_TW_TICKS_PER_SEC 250000
/* an engine pause longer than this is not waiting time for the timers (rc_retx.c) */
#define DROCE_ENGINE_STALL_US 100
/* QPs of a port run in a pass after its waiting room has no budget left */
#define DROCE_FULL_TURNS 8
#define DROCE_QPN_ENGINE_BITS 6 /* QPN = (local index + 1) << 6 | engine */
#define DROCE_MAX_CHANNELS 64
#define DROCE_CHANNEL_SIZE 4096
#define DROCE_ATOMIC_REPLAY 16 /* remembered atomic results per QP */
#define DROCE_RD_REPLAY 16     /* remembered READ requests per QP */

static_assert(DROCE_MAX_ENGINES <= (1u << DROCE_QPN_ENGINE_BITS), "QPN engine bits");

/* QP table: QPN = (index + 1) << 6 | engine fits 24 bits, so an engine has
 * DROCE_QP_INDEXES indices (0 .. 2^18 - 2), in pages of DROCE_QPT_PAGE. */
#define DROCE_QP_INDEXES ((1u << (24 - DROCE_QPN_ENGINE_BITS)) - 1)
#define DROCE_QPT_PAGE_BITS 10
#define DROCE_QPT_PAGE (1u << DROCE_QPT_PAGE_BITS)
#define DROCE_QPT_PAGES ((DROCE_QP_INDEXES + DROCE_QPT_PAGE - 1) >> DROCE_QPT_PAGE_BITS)
#define DROCE_QP_REUSE_AFTER 1024 /* an index given back is reused after this many others */
/* doorbells (engine_chan.c): a bit per QP index in 64-bit words (leaf), a
 * bit per leaf word (mid), a bit per mid word (top) */
#define DROCE_BELL_LEAF ((DROCE_QP_INDEXES + 63) / 64)
#define DROCE_BELL_MID ((DROCE_BELL_LEAF + 63) / 64)
static_assert(DROCE_BELL_MID <= 64, "one top word of doorbells");

static inline unsigned int droce_qpn_engine(uint32_t qpn) { return qpn & ((1u << DROCE_QPN_ENGINE_BITS) - 1); }
static inline uint32_t droce_qpn_index(uint32_t qpn) { return (qpn >> DROCE_QPN_ENGINE_BITS) - 1; }

/* ---- control messages from application threads ---- */

enum droce_msg_type {
	DROCE_MSG_ATTACH,   /* qp joins the engine */
	DROCE_MSG_MODIFY,   /* ptr: struct droce_qp_mod (engine frees it) */
	DROCE_MSG_SQ_BELL,  /* the GSI qp has new send WQEs (others: droce_engine_ring) */
	DROCE_MSG_RQ_BELL,  /* the GSI qp has new receive WQEs */
	DROCE_MSG_DETACH,   /* qp leaves; engine sets qp->detached */
	DROCE_MSG_ARP,      /* send an ARP request: arg = port, rsvd = IPv4 address */
	DROCE_MSG_ND,       /* arg = port; send an NS for addr, or (addr ::) the unsolicited NA */
	DROCE_MSG_INJECT,   /* ptr: a raw frame (mbuf); arg = port | dir << 16 (droce_dp_inject) */
	DROCE_MSG_CQ_SWAP,  /* ptr: struct droce_cq_swap (the sender's, it waits for the answer) */
};

/* A CQ resize's request to one engine (cq.c): its sub-ring becomes @ring
 * (its completions moved over in order) and @ring the old one, or REFUSED
 * when they do not fit. */
enum droce_cq_swap_state { DROCE_CQ_SWAP_PENDING, DROCE_CQ_SWAP_DONE, DROCE_CQ_SWAP_REFUSED };
struct droce_cq_swap {
	struct droce_cq *cq;
	struct rte_ring *ring;
	_Atomic int state;   /* enum droce_cq_swap_state, written last by the engine */
};
void droce_cq_swap_lc(struct droce_engine *eng, struct droce_cq_swap *s);

struct droce_msg {
	uint32_t type;
	uint32_t arg;
	struct droce_qp *qp;
	union {
		struct {
			void *ptr;
			uint64_t rsvd;
		};
		uint8_t addr[16]; /* DROCE_MSG_ND's target */
	};
};

static_assert(sizeof(struct droce_msg) == 32, "channel element size");

/* ---- the QP ---- */

/* A send WQE slot: written by the application, then published by seq.  Its
 * WQE is cut to the QP's caps (droce_wqe_room): slots are qp->sq_stride bytes
 * apart, so reach them through droce_qp_sq_slot(), never by indexing. */
struct droce_sq_slot {
	_Atomic uint32_t seq; /* posted index + 1 once the WQE is complete */
	struct droce_wqe wqe;
};

/* A receive slot, the same way: its RQE is cut to the QP's max_recv_sge
 * (all DROCE_DP_MAX_SGE for the staging slot of a QP on an SRQ or an XRC
 * target), slots are qp->rq_stride bytes apart: droce_qp_rq_at(). */
struct droce_rq_slot {
	_Atomic uint32_t seq; /* posted index + 1 once the RQE is complete */
	struct droce_rqe rqe;
};

/* Engine-side progress of one send WQE. */
struct droce_swqe {
	uint32_t first_psn;
	uint32_t npkts;      /* PSNs it takes */
	uint32_t sent;       /* bytes sent (requester cursor) */
	uint32_t sent_pkts;  /* packets sent */
	uint32_t got;        /* READ: bytes received */
	uint32_t gap_mark;   /* READ: expected PSN + 1 we already went back for */
	uint32_t gap_hi;     /* READ: highest response PSN seen past the gap since */
	uint8_t err;         /* enum droce_err found when starting it, 0 if none */
	bool started;        /* first packet sent at least once */
	bool done;           /* answered (READ, atomics) */
	bool rd_counted;     /* counted in qp->rd_atomic_out */
	bool reask;          /* READ: asked again for what has not arrived (rc_read.c) */
	uint32_t sr_asked;   /* READ, selective repeat: holes below this response asked (rc_sr.c) */
};

enum droce_qp_sched {
	DROCE_QP_SCHED_NONE,   /* nothing to do, no timer */
	DROCE_QP_SCHED_ACTIVE, /* on the engine's active list */
	DROCE_QP_SCHED_WHEEL,  /* only timers: in the engine's timer wheel */
};

enum droce_req_state {
	DROCE_REQ_IDLE,
	DROCE_REQ_RNR_WAIT,  /* waiting for the RNR timer */
	DROCE_REQ_ERROR,     /* stopped: QP is in ERR or SQE */
};

struct droce_qp_stats {
	uint64_t tx_pkts, rx_pkts;
	uint64_t retransmits, timeouts, rnr_naks_rx, rnr_naks_tx;
	uint64_t seq_naks_rx, seq_naks_tx, dup_reqs, dup_reads, dup_atomics;
	uint64_t rem_err_naks_tx, rem_err_naks_rx, implicit_naks;
	/* loss recovery (rc_retx.c) */
	uint64_t probes;       /* timeouts answered by resending only the last packet */
	uint64_t retries;      /* retry_cnt units spent (one per attribute timeout stalled) */
	uint64_t read_resumes; /* READs asked again from their first missing response */
	uint64_t resp_cut;     /* queued READ responses dropped: the requester went back */
	uint64_t read_ooo;     /* READ responses placed past a missing one (rc_read.c) */
	uint64_t read_reasks;  /* READ requests for a missing range of a READ asked before */
	/* selective repeat between droce ends (rc_sr.c) */
	uint64_t sr_peer;      /* a gauge: 1 once the peer showed the hint */
	uint64_t sr_held;      /* requests past a hole kept by the responder */
	uint64_t sr_released;  /* ... and let go (executed in order, stale, or flushed) */
	uint64_t sr_resent;    /* packets re-sent alone for a sequence NAK (no go-back) */
	uint64_t srtt_ns;      /* a gauge: the smoothed RTT (0: no sample yet) */
	uint64_t rto_ns;       /* a gauge: the retransmission timer now */
	uint64_t xrc_srq_naks;     /* XRC target: requests naming no SRQ of its domain */
	/* congestion notification (cc.c) */
	uint64_t ecn_ce_received;  /* frames received with ECN = CE */
	uint64_t cnp_sent, cnp_received;
};

/* READ responses and atomic ACKs, sent in PSN order by the tx phase */
struct droce_rd_resp {
	uint32_t psn, len, off, rkey;
	uint64_t va;      /* READ */
	uint64_t orig;    /* atomic: the value before */
	bool atomic;
	bool dup;         /* answers a duplicate request */
	uint8_t nak_err;  /* a NAK for this enum droce_err (0: a response) */
};
#define DROCE_RD_RESP_CAP (2 * DROCE_DP_MAX_RD_ATOMIC + 2)

/* Results of recent atomics, replayed to a duplicate request. */
struct droce_atomic_replay {
	uint32_t psn;
	uint64_t orig;
	bool valid;
};

/*
 * A responder's READ / atomic resources (1.7 KiB).  Most QPs never receive a
 * READ or an atomic, so the engine allocates them at the first one
 * (droce_qp_resp_res_lc) and they go with the QP; a QP holds no memory for
 * them before.
 */
struct droce_resp_res {
	struct droce_atomic_replay atomic_replay[DROCE_ATOMIC_REPLAY];
	struct droce_rd_resp rd_resp[DROCE_RD_RESP_CAP];
};

/*
 * Laid out for many QPs (issue 11): with thousands of them their structs
 * do not stay in the caches, and a message costs a miss per 64-byte line it
 * touches in its two QPs (the requester's and the responder's).  So what
 * every message reads or writes comes first, in this order: the fields fixed
 * at create the fast path reads; the requester's and completer's state with
 * the scheduling (engine_sched.c); the application side's counters, lock and
 * bell; the responder's state; the header template; the packet counters
 * (stats opens with them) and the current attributes (whose first 36 bytes,
 * state to pkey_index, are the ones read per packet).  What only errors,
 * loss recovery, READs, atomics and modifies touch comes after.  The struct
 * is allocated on a cache line (droce_qp_create), so the lines are these.
 * (Application- and engine-written fields share lines: separating them
 * cost about 370 bytes of RSS per idle QP, against issue 12's 2 KiB budget,
 * and gained nothing measurable co-located.)
 */
struct droce_qp {
	/* ---- fixed at create (srq, rcq and pd_id change on an XRC target) ---- */
	uint32_t qpn;
	enum droce_qp_type type;
	struct droce_engine *eng;
	struct droce_port *port;
	unsigned int port_index;
	uint32_t pd_id;
	struct droce_cq *scq, *rcq;
	struct droce_sq_slot *sq;  /* droce_qp_sq_slot() */
	struct droce_swqe *swqe;   /* engine-side, parallel to sq */
	uint32_t sq_size, rq_size; /* slots */
	uint32_t sq_stride;        /* bytes from one send slot to the next */
	uint32_t sq_mask;          /* send slots - 1 (a power of two; sq_size WQEs fit) */
	struct droce_rq_slot *rq;  /* droce_qp_rq_at() */
	uint32_t rq_stride;        /* bytes from one receive slot to the next */
	uint32_t rq_mask;          /* receive slots - 1 (a power of two; rq_size RQEs fit) */
	struct droce_srq *srq;     /* receive WQEs come from here (rq: one staging slot) */
	/* XRC (xrc.c): an RC QP whose requests carry the XRCETH (initiator) or
	 * whose responder takes its SRQ, CQ and PD from each request's XRCETH
	 * (target: srq, rcq and pd_id then change on the engine) */
	uint8_t xport;             /* transport bits of its opcodes: RC or XRC */
	uint8_t xrc_role;          /* enum droce_xrc_role */

	/* ---- engine side: requester + completer, scheduling ---- */
	uint8_t sched;             /* enum droce_qp_sched (engine_sched.c) */
	bool cq_overrun;           /* a CQE found its CQ full: ERR after this call */
	/* the requester's last turn stopped to wait for ACKs or responses (the
	 * window, max_rd_atomic, a fence, the loss window: rc_req.c): no work
	 * now, so off the active list until a frame or a timer brings it back */
	bool req_blocked;
	enum droce_qp_state state;
	enum droce_req_state req_state;
	uint32_t sq_head;     /* oldest WQE not retired */
	uint32_t sq_next;     /* next WQE to start sending */
	uint32_t sq_avail;    /* WQEs seen ready (index past last ready) */
	uint32_t sq_cur;      /* WQE being sent (sq_head..sq_next) */
	uint32_t psn_next;    /* next PSN to send */
	uint32_t psn_una;     /* oldest unacknowledged PSN */
	uint32_t psn_max;     /* one past the highest PSN ever sent */
	uint32_t rd_atomic_out; /* READs/atomics outstanding */
	uint32_t cwnd;          /* PSNs that may be unacknowledged (0: the whole window) */
	uint32_t cwnd_una, cwnd_acc; /* additive increase: acknowledged since */
	uint32_t pkts_since_ackreq;
	uint32_t rtt_psn;       /* the PSN being timed (never a retransmitted one) */
	uint8_t retry_left, rnr_left;
	uint8_t rto_backoff;    /* adaptive timeouts in a row (doubles the timer) */
	uint8_t alive_defers;   /* retries not spent since progress: the peer was answering */
	bool peer_heard;        /* an answer in the window arrived since the last timeout */
	bool sr_peer;           /* selective repeat: the peer showed the hint (rc_sr.c) */
	bool sr_tail_check;     /* a timeout re-sent psn_una alone: an ACK to it means a lost tail */
	uint8_t rto_attr_key;   /* attr.timeout + 1 that rto_attr_cyc / rto_floor_cyc are of (0: none) */
	uint64_t rto_deadline; /* 0 = no timer */
	uint64_t rnr_deadline;
	/* adaptive retransmission (rc_retx.c): RTT estimate in TSC cycles */
	uint64_t srtt, rttvar;  /* 0 = no sample yet */
	uint64_t rto_attr_cyc;  /* T = 4.096 us * 2^timeout in cycles (droce_rc_rto_attr's cache) */
	uint64_t rto_floor_cyc; /* the adaptive timer's floor for that T */
	uint64_t rto_last;      /* the adaptive timer last computed (stats.rto_ns is of it) */
	uint64_t rtt_tsc;       /* when rtt_psn was sent (0 = not timing) */
	uint64_t retry_epoch;   /* start of the current attribute-timeout period without progress */
	uint64_t pause_excused; /* engine pauses not counted as waiting in that period (at most T) */
	/* the engine's scheduling (engine_sched.c): on its port's active list,
	 * in a slot of its timer wheel (tw_slot; tw_key the deadline filed), or neither */
	TAILQ_ENTRY(droce_qp) active_link;
	uint64_t tw_paused;                /* the engine's pauses at its last turn ... */
	uint64_t tw_rto, tw_epoch;         /* ... and its rto_deadline, retry_epoch then */
	/* CQ overrun (qp.c): completions waiting, in order, for room in their CQ */
	struct droce_cqe_stash *stash;     /* allocated at the first overrun */
	/* DCQCN's reaction point and pacer (cc.c): NULL until the QP's first
	 * CNP, so a QP never notified pays one load per turn */
	struct droce_cc_qp *cc;

	/* ---- application side: written by posting threads ---- */
	uint32_t sq_posted, rq_posted;     /* producer counters (under post locks) */
	rte_spinlock_t sq_lock, rq_lock;
	struct droce_qp_caps caps;
	/*
	 * A bell is on its way to the engine: set by the poster that rings
	 * (exchange), cleared by the engine when it takes it (exchange,
	 * acquire: the slots published before the set are seen).  While it
	 * is set, posts publish their slots and ring nothing: one bell per
	 * engine pass, not per post.  Ringing is an OR of bell_bit into
	 * *bell_leaf, the QP's word of the engine's doorbell bitmap (set at
	 * create), and the parents through droce_engine_ring_up; the GSI QP
	 * (no index: bell_leaf NULL) sends SQ_BELL / RQ_BELL instead.
	 */
	_Atomic uint32_t bell;
	_Atomic uint64_t *bell_leaf;
	uint64_t bell_bit;
	/* ---- written by the engine, read by the application ---- */
	_Atomic uint32_t sq_retired, rq_retired;

	/* ---- engine side: responder ---- */
	uint32_t epsn;        /* expected request PSN */
	uint32_t msn;
	uint32_t rq_head;     /* next RQE to use */
	uint32_t rq_avail;
	struct droce_seq_rx rxseq;
	uint32_t recv_off;    /* bytes placed in the open RQE */
	uint32_t write_rkey;
	uint64_t write_va;    /* open RDMA WRITE cursor */
	uint32_t nak_hi;      /* highest PSN seen past the gap since that NAK */
	uint32_t ack_psn;
	uint32_t rd_resp_head, rd_resp_count;
	bool rqe_open;        /* a SEND message is filling rq_head */
	bool recv_len_err;
	bool nak_seq_sent;    /* one sequence NAK per gap and retransmission round */
	bool resp_failing;    /* an error NAK waits behind earlier responses */
	bool ack_pending;
	uint8_t ack_syndrome;

	struct droce_qp_mod attr;          /* current attributes (the first 36 bytes hot) */

	/* ---- cold: modifies, the wheel's key, events ---- */
	uint32_t mod_gen;                  /* modifies sent (application side) */
	_Atomic uint32_t applied_gen;      /* modifies applied (engine side, release) */
	_Atomic uint64_t async_state;      /* gen << 32 | 1 << 8 | state, see droce_qp_async_state */
	_Atomic bool detached;             /* engine has let go */
	uint16_t tw_slot;
	uint32_t xrcd;                     /* the target's XRC domain */
	uint64_t tw_key;                   /* its deadline as filed (TSC) */
	uint64_t tmpl_ah_serial;           /* UD: the AH tmpl was last built for (0 = none) */
	uint64_t cnp_last;                 /* TSC of the last CNP it sent (cc.c; 0 = none) */

	/* ---- hot again: the template on lines of its own, then the counters ---- */
	struct droce_hdr_tmpl tmpl __rte_cache_aligned;
	struct droce_qp_stats stats;       /* tx_pkts, rx_pkts first: with the template's tail */

	/* ---- cold: errors, loss recovery, READs, atomics ---- */
	droce_qp_event_fn event_fn;        /* affiliated async events (engine thread) */
	void *event_arg;
	uint32_t rd_hi;         /* the highest READ response PSN seen in the window */
	uint32_t goback_psn;    /* where the last sequence NAK sent us back to ... */
	uint64_t goback_tsc;    /* ... and when (0: none) */
	uint32_t sr_resent_psn; /* the last packet re-sent alone ... */
	uint64_t sr_resent_tsc; /* ... and when (0: none) */
	struct droce_rc_rdmap *rdmap; /* READ responses placed past a hole (rc_read.c; lazily) */
	struct droce_rc_srhold *srhold; /* responder: requests past a hole (lazily) */
	/* READ / atomic resources (struct droce_resp_res): NULL until the first
	 * READ or atomic request; the two pointers are into res */
	struct droce_resp_res *res;
	struct droce_atomic_replay *atomic_replay; /* DROCE_ATOMIC_REPLAY entries */
	struct droce_rd_resp *rd_resp;             /* DROCE_RD_RESP_CAP entries */
	uint32_t atomic_replay_next;
};

/* Asks for the lines of @qp a turn of it reads first (the fixed fields, the
 * requester's state and scheduling, the template): the work phase names the
 * QP after the one it runs, so with thousands of QPs their misses overlap
 * that turn instead of stalling the next. */
static inline void
droce_qp_prefetch(const struct droce_qp *qp)
{
	const uint8_t *b = (const uint8_t *)qp;

	rte_prefetch0(b);
	rte_prefetch0(b + RTE_CACHE_LINE_SIZE);
	rte_prefetch0(b + 2 * RTE_CACHE_LINE_SIZE);
	rte_prefetch0(b + 3 * RTE_CACHE_LINE_SIZE);
	rte_prefetch0(&qp->tmpl);
	rte_prefetch0((const uint8_t *)&qp->tmpl + RTE_CACHE_LINE_SIZE);
}

/* Send slot @idx (any index: taken modulo the queue size). */
static inline struct droce_sq_slot *
droce_qp_sq_slot(const struct droce_qp *qp, uint32_t idx)
{
	return (struct droce_sq_slot *)((uint8_t *)qp->sq + (size_t)(idx & qp->sq_mask) * qp->sq_stride);
}

/* Receive slot @idx (any index: taken modulo the queue size). */
static inline struct droce_rq_slot *
droce_qp_rq_at(const struct droce_qp *qp, uint32_t idx)
{
	return (struct droce_rq_slot *)((uint8_t *)qp->rq + (size_t)(idx & qp->rq_mask) * qp->rq_stride);
}

/* ---- engine ---- */

struct droce_engine_stats {
	uint64_t loops, rx_pkts, tx_pkts, tx_drops;
	uint64_t drops[DROCE_DROP_COUNT];
	uint64_t no_qp, forwarded, non_roce, seq_drops, cqe_overflows, alloc_fail;
	/* UD and UC (ud.c, uc.c) */
	uint64_t qkey_drops;      /* UD packets whose DETH Q_Key is not the QP's */
	uint64_t ud_oversize;     /* UD sends above the MTU: completed, nothing sent (as rxe) */
	uint64_t rq_empty_drops;  /* UD / UC messages dropped: no receive WQE posted */
	uint64_t uc_msg_drops;    /* UC messages dropped whole (lost packet, bad order or size) */
	uint64_t uc_access_drops; /* UC RDMA WRITEs dropped for a remote access error */
	uint64_t xport_drops;     /* packets of another transport than their QP's */
	uint64_t ghost_acks;      /* RC NAKs naming no outstanding request (dropped) */
	uint64_t qp_state_drops;  /* packets for a QP in RESET, INIT or ERR (dropped) */
	uint64_t injected;        /* raw frames handed over by droce_dp_inject (test support) */
	uint64_t cqe_stashed;     /* completions that found their CQ full and waited in their QP */
	uint64_t cqe_lost;        /* ... and that found no room there either (must stay 0) */
	uint64_t zc_tx;           /* frames sent zero-copy (payload in registered memory, zcopy.c) */
	uint64_t qp_turns;        /* QPs phase 3 ran (active ones only: engine_sched.c) */
	/* UD multicast (mcast.c, engine_pass.c) */
	uint64_t mcast_rx;        /* copies of group datagrams handed to attached QPs */
	uint64_t mcast_no_group;  /* group datagrams for a group no QP of the port attached (dropped) */
	uint64_t mcast_loop;      /* group datagrams sent and also received on the sending port */
	uint64_t cqe_cleaned;     /* completions removed from CQs by their QP's move to RESET */
	/* congestion notification (cc.c) */
	uint64_t ecn_ce_received; /* RoCEv2 frames received with ECN = CE */
	uint64_t cnp_sent, cnp_received;
	uint64_t cnp_coalesced;   /* CE marks within min_time_between_cnps of the QP's last CNP */
};

TAILQ_HEAD(droce_qp_list, droce_qp);

/* The completions of one QP that found their CQ full (qp.c), a ring. */
struct droce_cqe_stash {
	uint32_t head, count, cap;
	struct droce_stashed {
		struct droce_cqe c;
		bool recv;      /* for the receive CQ (else the send CQ) */
		bool solicited;
	} e[];
};

static inline uint32_t droce_qp_stash_count(const struct droce_cqe_stash *st) { return st->count; }

struct droce_engine {
	unsigned int id;
	uint16_t queue;        /* queue this engine polls on every port */
	/* co-located: whoever holds `driving` runs passes (any thread, one at a time) */
	_Atomic uint32_t driving; /* 0 = free; taken by try-CAS (acquire), freed (release) */
	_Atomic bool wanted;      /* an application thread found it held: fallback, let go */
	_Atomic uint64_t app_tsc; /* TSC of the last pass or attempt by an application thread */
	_Atomic uint64_t work_tsc; /* TSC of the last pass that had work (any thread's) */
	unsigned int n_ports;
	struct droce_port *ports[DROCE_MAX_PORTS];

	struct rte_ring *chan[DROCE_MAX_CHANNELS];
	_Atomic unsigned int n_chan;
	struct rte_ring *chan_free[DROCE_MAX_CHANNELS]; /* of exited threads (channel lock) */
	unsigned int n_chan_free;
	struct rte_ring *xfer_in[DROCE_MAX_ENGINES]; /* frames other engines pass us */
	uint64_t xfer_in_mask;   /* the engines with an xfer_in ring (bit per engine) */
	/* frames this pass hands to other engines, enqueued on their xfer_in
	 * rings in one burst per engine at the end of the receive phase */
	struct rte_mbuf *xfer_out[DROCE_MAX_ENGINES][DROCE_BURST];
	uint8_t nxfer_out[DROCE_MAX_ENGINES];
	uint64_t xfer_pending;   /* engines with frames in xfer_out (bit per engine) */

	/*
	 * The QP table, by local index, in two levels so that it grows without
	 * moving.  The application side allocates a page (zeroed, under the
	 * engines' lock) before it hands out the first index in it and publishes
	 * it with a release store; pages stay until the engines stop.  The
	 * entries are written (ATTACH, DETACH) and read (lookup) by the engine
	 * alone, so the fast path needs no atomics beyond the page load.
	 */
	struct droce_qp **_Atomic qpt[DROCE_QPT_PAGES];
	struct droce_qp *gsi[DROCE_MAX_PORTS]; /* QP1 of each port (engine 0 only) */
	/* index allocation (application side, under the engines' lock) */
	uint32_t qp_fresh;        /* indices never handed out: qp_fresh .. DROCE_QP_INDEXES - 1 */
	uint32_t *qp_freed;       /* ring of indices given back, oldest first */
	uint32_t freed_head, freed_count, freed_cap;
	uint32_t n_qps;           /* indices in use */
	uint32_t n_attached;      /* QPs in the table (engine side: ATTACH, DETACH) */
	/* QPs with work now, per port (engine_sched.c) */
	struct droce_qp_list active[DROCE_MAX_PORTS];
	uint32_t n_active[DROCE_MAX_PORTS];
	uint32_t n_active_all;
	/* QPs with only timers, by deadline (engine_sched.c) */
	struct droce_qp_list tw[DROCE_TW_SLOTS];
	uint64_t tw_tick;              /* the first tick not yet taken */
	uint32_t tw_count;             /* QPs in the wheel */
	unsigned int tw_shift;         /* a tick is 2^tw_shift TSC cycles */
	uint64_t stall_cycles;         /* DROCE_ENGINE_STALL_US in TSC cycles */
	uint64_t paused;               /* TSC cycles of engine pauses, passes before this one */
	uint64_t pause_now;            /* ... and of this pass's (phase 3-4) */

	/* frames built and not yet taken by the PMD; they wait here (backpressure) */
	struct rte_mbuf *txq[DROCE_MAX_PORTS][DROCE_TXBUF];
	uint16_t ntx[DROCE_MAX_PORTS];
	uint32_t tx_ports;     /* the ports whose ntx may be non-zero (bit per port) */
	/* how full the transport may fill a port's waiting room: DROCE_TXBUF,
	 * less for a switch port (a NIC builds frames just ahead of its link,
	 * so its pacer, not a queue of frames built before a CNP, meets it) */
	uint16_t txroom[DROCE_MAX_PORTS];
	/* the engine's own mempool cache for its ports' pool (NULL: the pool has
	 * no caches): whichever thread drives the engine allocates and frees
	 * through it, an EAL lcore or not, with no per-lcore lookup */
	struct rte_mempool_cache *mcache;
	struct rte_mempool *mcache_mp;
	/* received frames done with, freed together (droce_engine_rx_free_lc) */
	struct rte_mbuf *rxfree[DROCE_BURST];
	uint16_t nrxfree;
	/* mbufs of mcache_mp for the frames the engine builds: refilled from
	 * mcache DROCE_BURST at a time, and fed straight by received frames of
	 * that pool done with (one segment, refcnt 1, direct), so a frame
	 * received and one sent cost no mempool round (droce_engine_mbuf_lc) */
	struct rte_mbuf *txstash[DROCE_TXSTASH];
	uint16_t ntxstash;
	/* header constants of the flows received last (the ICRC check, icrc.h) */
	struct droce_icrc_cache icrc_rx;
	uint64_t now;          /* TSC, read once per loop */
	uint64_t pass_gap;     /* TSC since the pass before (the engine was not running) */
	uint64_t tsc_hz;
	struct droce_engine_stats stats;
	_Atomic bool stop;

	/*
	 * Doorbells (engine_chan.c): bit i of bell_leaf rings QP index i; a
	 * leaf word's bit in bell_mid and a mid word's in bell_top say it may
	 * be non-zero.  Posters set them bottom up by atomic ORs (a level's
	 * parent only when the OR found the level zero), the engine takes
	 * them top down by exchanges once per pass.  Their own lines: posting
	 * threads write them.
	 */
	_Atomic uint64_t bell_top __rte_cache_aligned;
	/* non-zero: a message may wait on a channel (engine_chan.c): the
	 * sender stores it after its enqueue, the pass that finds it takes it
	 * by an exchange and drains every channel; an idle pass reads it and
	 * bell_top, one line, instead of looking into each channel */
	_Atomic uint32_t chan_msgs;
	_Atomic uint64_t bell_mid[DROCE_BELL_MID] __rte_cache_aligned;
	_Atomic uint64_t bell_leaf[DROCE_BELL_LEAF] __rte_cache_aligned;
};

struct droce_engine *droce_engine_get(unsigned int id);

/* Application side: sends @msg over this thread's channel to @eng (0 or errno). */
int droce_engine_send_msg(struct droce_engine *eng, const struct droce_msg *msg);
/* Application side: rings the doorbell of QP index @index on @eng after its
 * slots were published (0, or EIO in a forked child); no message, and
 * nothing more than one atomic OR when the bell is already rung. */
int droce_engine_ring(struct droce_engine *eng, uint32_t index);
/* The same once the OR of @index's leaf bit found its word zero: the parents. */
int droce_engine_ring_up(struct droce_engine *eng, uint32_t index);
/* Application side: reserves a QP index on @eng and gives @qp its QPN (0 or ENOMEM). */
int droce_engine_add_qp(struct droce_engine *eng, struct droce_qp *qp);
/* Application side: gives @qp's index back (the engine has detached it, or never
 * attached it); reused only after DROCE_QP_REUSE_AFTER other indices. */
void droce_engine_del_qp(struct droce_engine *eng, const struct droce_qp *qp);
/* Application side: the same for @qp as its port's GSI QP (QPN 1); EBUSY if taken. */
int droce_engine_add_gsi(struct droce_engine *eng, struct droce_qp *qp);
/* Gives port @port's GSI slot back (its QP has been detached). */
void droce_engine_del_gsi(unsigned int port);
void droce_engine_stats_get(unsigned int id, struct droce_engine_stats *out);

/* One pass of the engine loop (drain, rx, tx work, timers, flush). */
void droce_engine_poll_lc(struct droce_engine *eng);

/* droce_engine_tx_lc with @port's waiting room full: hands the PMD what it
 * takes, then queues @m, or drops it (tx_drops) when the link is not draining. */
void droce_engine_tx_full_lc(struct droce_engine *eng, unsigned int port, struct rte_mbuf *m);

/* Queues a frame for transmission on @port (flushed at the end of the pass). */
static inline void
droce_engine_tx_lc(struct droce_engine *eng, unsigned int port, struct rte_mbuf *m)
{
	if (unlikely(eng->ntx[port] == DROCE_TXBUF)) {
		droce_engine_tx_full_lc(eng, port, m);
		return;
	}
	eng->txq[port][eng->ntx[port]++] = m;
	eng->tx_ports |= 1u << port;
}

static_assert(DROCE_MAX_PORTS <= 32, "tx_ports: a bit per port");
static_assert(offsetof(struct rte_mbuf, port) - offsetof(struct rte_mbuf, rearm_data) == 6,
	      "data_off, refcnt, nb_segs, port: the 8 bytes of rearm_data");

/* Makes a free mbuf (next NULL, nb_segs 1, refcnt 1: a pool's invariants,
 * and the stash's) a fresh empty frame: what rte_pktmbuf_reset sets, with
 * data_off, refcnt, nb_segs and port in one store (@rearm, the pool's). */
static __rte_always_inline void
droce_engine_mbuf_fresh(struct rte_mbuf *m, uint64_t rearm)
{
	memcpy((uint8_t *)m + offsetof(struct rte_mbuf, rearm_data), &rearm, sizeof(rearm));
	m->ol_flags &= RTE_MBUF_F_EXTERNAL;
	m->packet_type = 0;
	m->pkt_len = 0;
	m->data_len = 0;
	m->vlan_tci = 0;
	m->vlan_tci_outer = 0;
	m->tx_offload = 0;
}

/* The stash's rearm word: data_off RTE_PKTMBUF_HEADROOM (engine.c takes no
 * pool whose buffers are smaller), refcnt 1, nb_segs 1, port invalid; a
 * constant (the four 16-bit fields in memory order, little endian). */
static_assert(offsetof(struct rte_mbuf, refcnt) - offsetof(struct rte_mbuf, rearm_data) == 2 &&
		      offsetof(struct rte_mbuf, nb_segs) - offsetof(struct rte_mbuf, rearm_data) == 4 &&
		      offsetof(struct rte_mbuf, data_off) == offsetof(struct rte_mbuf, rearm_data),
	      "rearm_data: data_off, refcnt, nb_segs, port");
static_assert(RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN, "the rearm word's byte order");
static inline uint64_t
droce_engine_rearm_word(void)
{
	return (uint64_t)RTE_PKTMBUF_HEADROOM | (uint64_t)1 << 16 | (uint64_t)1 << 32 |
	       (uint64_t)RTE_MBUF_PORT_INVALID << 48;
}

/* Refills the empty stash from the engine's cache (engine_pass.c); false
 * when the pool is empty. */
bool droce_engine_stash_refill_lc(struct droce_engine *eng);
/* Gives the stash's mbufs back to the pool (the engine stops). */
void droce_engine_stash_flush(struct droce_engine *eng);

/* An mbuf of @mp for a frame the engine builds (the engine's stash for its
 * ports' pool, rte_pktmbuf_alloc otherwise); NULL when the pool is empty. */
static inline struct rte_mbuf *
droce_engine_mbuf_lc(struct droce_engine *eng, struct rte_mempool *mp)
{
	struct rte_mbuf *m;

	if (likely(mp == eng->mcache_mp)) {
		if (unlikely(eng->ntxstash == 0) && !droce_engine_stash_refill_lc(eng))
			return NULL;
		m = eng->txstash[--eng->ntxstash];
		droce_engine_mbuf_fresh(m, droce_engine_rearm_word());
		return m;
	}
	return rte_pktmbuf_alloc(mp);
}

/* @n mbufs of @mp at once, as droce_engine_mbuf_lc: 0, or -1 (none taken). */
static inline int
droce_engine_mbufs_lc(struct droce_engine *eng, struct rte_mempool *mp, struct rte_mbuf **ms,
		      unsigned int n)
{
	if (likely(mp == eng->mcache_mp)) {
		if (rte_mempool_generic_get(mp, (void **)ms, n, eng->mcache) != 0)
			return -1;
		for (unsigned int i = 0; i < n; i++)
			rte_pktmbuf_reset(ms[i]);
		return 0;
	}
	return rte_pktmbuf_alloc_bulk(mp, ms, n);
}

/* Frees the frames droce_engine_rx_free_lc() collected (one bulk free). */
void droce_engine_rx_free_flush_lc(struct droce_engine *eng);

/* Frees a received frame the transport is done with: into the transmit
 * stash when it is a plain one-segment mbuf of the engine's pool that no one
 * else holds (the next frame built reuses it), else in a bulk at the end of
 * its receive burst (or pass), not one mempool round per frame. */
static inline void
droce_engine_rx_free_lc(struct droce_engine *eng, struct rte_mbuf *m)
{
	if (likely(m->pool == eng->mcache_mp && eng->ntxstash < DROCE_TXSTASH &&
		   m->next == NULL && RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1)) {
		m->nb_segs = 1;
		eng->txstash[eng->ntxstash++] = m;
		return;
	}
	if (unlikely(eng->nrxfree == DROCE_BURST))
		droce_engine_rx_free_flush_lc(eng);
	eng->rxfree[eng->nrxfree++] = m;
}

/* Pushes a completion to @cq's sub-ring of @eng; false on overflow (counted, and
 * the CQ's error callback runs at its first overflow). */
bool droce_cq_push_lc(struct droce_cq *cq, struct droce_engine *eng, const struct droce_cqe *cqe,
		      bool solicited);
/* True when @cq's sub-ring of @eng has room for one more completion. */
bool droce_cq_room_lc(const struct droce_cq *cq, const struct droce_engine *eng);
/* Removes QP @qpn's completions from @cq's sub-ring of @eng, the others
 * kept in order (a QP moved to RESET: as rdma-core's providers clean it). */
void droce_cq_clean_lc(struct droce_cq *cq, struct droce_engine *eng, uint32_t qpn);

/* Memory key lookup for engines (NULL if no such key). */
const struct droce_mr *droce_mr_lookup_lc(uint32_t key);

/* A group datagram @m (complete, not yet queued) that @qp sends on its port:
 * when a QP of the port is attached to group @gid, a copy goes into the
 * port's loop (droce_port_loop_deliver_lc on this engine's queue) and is
 * received there as any looped frame (the local multicast loop). */
void droce_engine_mcast_loop_lc(struct droce_engine *eng, const struct droce_qp *qp,
				const struct rte_mbuf *m, const uint8_t gid[16]);

/* Marks @qp as having work for the tx phase. */
void droce_engine_activate_lc(struct droce_engine *eng, struct droce_qp *qp);

/* Transport entry points (rc.c) */
void droce_rc_rx_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p);
/* Sends what the QP may send now; returns packets queued. */
unsigned int droce_rc_tx_lc(struct droce_qp *qp, unsigned int budget);
void droce_rc_timers_lc(struct droce_qp *qp);
/* Whether droce_rc_timers_lc has anything to do this pass: the retransmission
 * deadline passed, an RNR wait runs, or the engine paused (the deadlines move);
 * a few loads, so the common pass (a deadline ahead) makes no call. */
static inline bool
droce_rc_timers_due(const struct droce_qp *qp)
{
	const struct droce_engine *eng = qp->eng;

	return (qp->rto_deadline != 0 && eng->now >= qp->rto_deadline) ||
	       qp->req_state == DROCE_REQ_RNR_WAIT || eng->pass_gap > eng->stall_cycles;
}
/* Sends the coalesced ACK now if one is due and no READ response waits before it. */
void droce_rc_ack_now_lc(struct droce_qp *qp);
/* UC (uc.c) and UD (ud.c): the same entry points without timers (no ACKs). */
void droce_uc_rx_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p);
unsigned int droce_uc_tx_lc(struct droce_qp *qp, unsigned int budget);
void droce_ud_rx_lc(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *p);
unsigned int droce_ud_tx_lc(struct droce_qp *qp, unsigned int budget);
void droce_qp_set_state_lc(struct droce_qp *qp, enum droce_qp_state state);
/* Allocates the QP's READ / atomic resources if it has none yet: 0 or ENOMEM. */
int droce_qp_resp_res_lc(struct droce_qp *qp);
void droce_qp_apply_mod_lc(struct droce_qp *qp, const struct droce_qp_mod *mod);
/* True while the QP has something to do now (its timers aside: engine_sched.c
 * keeps a QP with only timers in the timer wheel). */
bool droce_qp_busy_lc(const struct droce_qp *qp);

/* CQ overrun (qp.c): moves the QP to ERR once the call that overran is done. */
void droce_qp_overrun_lc(struct droce_qp *qp);
static inline void
droce_qp_overrun_check_lc(struct droce_qp *qp)
{
	if (unlikely(qp->cq_overrun))
		droce_qp_overrun_lc(qp);
}
/* Moves waiting completions into their CQs while they have room. */
void droce_qp_stash_drain_lc(struct droce_qp *qp);
static inline bool
droce_qp_stash_pending(const struct droce_qp *qp)
{
	return unlikely(qp->stash != NULL) && droce_qp_stash_count(qp->stash) != 0;
}

#endif /* DROCE_ENGINE_H */
