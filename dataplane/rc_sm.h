/* SPDX-License-Identifier: BSD-3-Clause
 * The RC transport's state machines (in the manner of Linux rxe's rxe_req.c,
 * rxe_comp.c and rxe_resp.c): for each, an enum of states, a name table for
 * the logs (droce_rc_*_state_name) and one step function per state that
 * returns the next.  The engine runs each machine from its first state to
 * DONE (the entry points below); droce_rc_*_step_lc() runs one step, for
 * tests that drive single steps on a QP built in plain memory (no EAL; the
 * steps that build packets take mbufs from the port's pool, which the tests
 * give them in plain memory).  Those are flattened (every step
 * inlined into them), so that the engine's loop stays the step functions'
 * only caller and the compiler inlines them there as it did before.
 * Engine thread only.
 *
 *   requester  rc_req.c   a transmit turn: send WQEs -> request packets
 *   completer  rc_comp.c  one ACKNOWLEDGE packet (ACK / NAK), READ response
 *                         or atomic ACK -> placement, completions, re-asks
 *   responder  rc_resp.c  one request packet (receive side), and a transmit
 *                         turn of queued READ responses, atomic ACKs, ACKs
 */
#ifndef DROCE_DP_RC_SM_H
#define DROCE_DP_RC_SM_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "errors.h"

#define DROCE_RC_SM_STEP __attribute__((flatten))

/* ---- requester (rc_req.c): one transmit turn ---- */
enum droce_rc_req_state {
	REQ_CHECK_QP_STATE, /* RTS and no RNR wait / error; a WQE failed at start at the head: FAIL */
	REQ_RETIRE_LOCAL,   /* complete executed BIND_MW / LOCAL_INV WQEs at the head */
	REQ_NEXT_WQE,       /* budget left and a WQE at sq_cur: take it, else DONE */
	REQ_WINDOW,         /* a SEND / WRITE with the send window full: DONE */
	REQ_CHECK_LOCAL,    /* READ/atomic and fence limits (DONE), then wqe_start: FAIL on error */
	REQ_LOCAL_OP,       /* a BIND_MW / LOCAL_INV (executed at start): passed, RETIRE_LOCAL */
	REQ_SEND_PKT,       /* one request packet (no mbuf: DONE) */
	REQ_NOTE_SENT,      /* PSNs sent, RTT sample, timer; the last packet: WQE_DONE */
	REQ_WQE_DONE,       /* all of the WQE is out: sq_cur moves on */
	REQ_FAIL,           /* the WQE fails (in order: once it is the head) */
	REQ_DONE,
	REQ_STATE_COUNT
};

struct droce_rc_req_ctx {
	unsigned int budget, sent;   /* packets this turn may send, has sent */
	uint32_t idx;                /* the WQE (sq_cur when taken) */
	const struct droce_wqe *w;
	struct droce_swqe *s;
	bool rd;                     /* READ or atomic */
	bool last;                   /* the packet just sent was the WQE's last */
	enum droce_err err;          /* for FAIL */
	/* the MR of WQE mr_idx's one SGE, checked when it started this turn
	 * (NULL: none; the gather checks its lkey) */
	const struct droce_mr *mr;
	uint32_t mr_idx;
};

enum droce_rc_req_state droce_rc_req_step_lc(struct droce_qp *qp, enum droce_rc_req_state st,
					     struct droce_rc_req_ctx *c);
const char *droce_rc_req_state_name(unsigned int state);

/* A transmit turn of the requester: request packets sent (at most @budget). */
unsigned int droce_rc_req_tx_lc(struct droce_qp *qp, unsigned int budget);

/* ---- completer (rc_comp.c): one ACKNOWLEDGE, READ response or atomic ACK ---- */
enum droce_rc_comp_state {
	COMP_CHECK_WINDOW,   /* PSN in [una - 1, max - 1], else dropped (seq_drops) */
	COMP_CHECK_GHOST,    /* a NAK must name an outstanding request (IBTA 9.7.5.1.2) */
	COMP_CHECK_SYNDROME, /* to ACK, RNR_NAK, SEQ_NAK or ERR_NAK (reserved: dropped) */
	COMP_ACK,            /* retire the WQEs the ACK covers */
	COMP_RNR_NAK,        /* retire what it covers, then wait the RNR timer or fail */
	COMP_SEQ_NAK,        /* retire what it covers, go back to the PSN */
	COMP_ERR_NAK,        /* retire what it covers, fail the head with the NAK's error */
	COMP_RETIRE_BEFORE,  /* a READ response / atomic ACK: retire what its PSN acknowledges */
	COMP_READ_WQE,       /* the READ it answers (RTS/SQD), else dropped; holes below: REASK */
	COMP_READ_REASK,     /* responses lost below it: ask for them again (rc_read.c) */
	COMP_READ_PLACE,     /* its bytes where its PSN says (the hole map); bad: ERROR or dropped */
	COMP_READ_COMPLETE,  /* the prefix grew: the head READ whole: ANSWERED, else una moves */
	COMP_ATOMIC_WQE,     /* the head is the atomic at this PSN, unanswered, else dropped */
	COMP_ATOMIC_PLACE,   /* the original value to the local SGE (LOC_PROT: ERROR) */
	COMP_ANSWERED,       /* the head READ / atomic has its whole answer: retired */
	COMP_ERROR,          /* the head fails with ctx->err (the error table's status) */
	COMP_DONE,
	COMP_STATE_COUNT
};

enum droce_rc_comp_kind {
	COMP_KIND_ACK,    /* an ACKNOWLEDGE (ACK or NAK): psn, syndrome */
	COMP_KIND_READ,   /* a READ response: psn, p, frame */
	COMP_KIND_ATOMIC, /* an atomic ACKNOWLEDGE: psn, p, frame */
};

struct droce_pkt;
struct droce_rc_comp_ctx {
	enum droce_rc_comp_kind kind;
	uint32_t psn;
	uint8_t syndrome;             /* an ACKNOWLEDGE's AETH syndrome */
	const struct droce_pkt *p;    /* a READ response / atomic ACK */
	const uint8_t *frame;
	const struct droce_wqe *w;    /* the WQE it answers (READ_WQE, ATOMIC_WQE) */
	struct droce_swqe *s;
	uint32_t expect;              /* READ: the PSN its in-order prefix waits for */
	uint32_t got;                 /* READ: that prefix's bytes before this response */
	bool head;                    /* the WQE it answers is the oldest */
	enum droce_err err;           /* for ERROR */
};

enum droce_rc_comp_state droce_rc_comp_step_lc(struct droce_qp *qp, enum droce_rc_comp_state st,
					       struct droce_rc_comp_ctx *c);
const char *droce_rc_comp_state_name(unsigned int state);

/* An ACKNOWLEDGE packet (ACK or NAK) at @psn with AETH @syndrome. */
void droce_rc_comp_ack_lc(struct droce_qp *qp, uint32_t psn, uint8_t syndrome);
/* A READ response at @psn. */
void droce_rc_comp_read_resp_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame,
				uint32_t psn);
/* An atomic ACKNOWLEDGE at @psn. */
void droce_rc_comp_atomic_ack_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame,
				 uint32_t psn);

/* ---- responder, receive side (rc_resp.c): one request packet ---- */
enum droce_rc_resp_state {
	RESP_CHECK_QP_STATE, /* RTR/RTS/SQD and no responder error pending, else DONE */
	RESP_CHECK_PSN,      /* expected PSN: on; ahead: SEQ_NAK; behind: DUPLICATE */
	RESP_CHECK_RESOURCE, /* room for a READ/atomic response; a receive WQE, else RNR_NAK */
	RESP_CHECK_OP_SEQ,   /* FIRST/MIDDLE/LAST order, lengths (seqcheck.c), else ERR_INV_REQ */
	RESP_EXECUTE,        /* place the SEND / WRITE, queue the READ / atomic response */
	RESP_ACKNOWLEDGE,    /* an AckReq on a SEND / WRITE arms the coalesced ACK */
	RESP_SEQ_NAK,        /* one sequence NAK per gap and round */
	RESP_DUPLICATE,      /* answered again: READ / atomic replay, or an ACK */
	RESP_RNR_NAK,
	RESP_ERR_INV_REQ,
	RESP_DONE,
	RESP_STATE_COUNT
};

enum droce_rc_resp_state droce_rc_resp_step_lc(struct droce_qp *qp, enum droce_rc_resp_state st,
					       const struct droce_pkt *p, const uint8_t *frame);
const char *droce_rc_resp_state_name(unsigned int state);

/* A request packet. */
void droce_rc_resp_rx_lc(struct droce_qp *qp, const struct droce_pkt *p, const uint8_t *frame);

/* ---- responder, transmit side (rc_resp.c): one transmit turn ---- */
enum droce_rc_rtx_state {
	RTX_NEXT,        /* the oldest queued answer (budget left): NAK, ATOMIC_ACK or READ_RESP; else ACK */
	RTX_NAK,         /* a NAK queued behind earlier answers: the responder's error, now (DONE) */
	RTX_ATOMIC_ACK,  /* the atomic's ACK (no mbuf: ACK) */
	RTX_READ_RESP,   /* one READ response packet (no mbuf: ACK; MR gone: the error, DONE) */
	RTX_SENT,        /* a packet out; the answer complete: dequeued */
	RTX_ACK,         /* the pending coalesced ACK, once nothing is queued */
	RTX_DONE,
	RTX_STATE_COUNT
};

struct droce_rc_rtx_ctx {
	unsigned int budget, sent;
	struct droce_rd_resp *e;     /* the oldest queued answer */
	bool whole;                  /* its last packet went out */
};

enum droce_rc_rtx_state droce_rc_rtx_step_lc(struct droce_qp *qp, enum droce_rc_rtx_state st,
					     struct droce_rc_rtx_ctx *c);
const char *droce_rc_rtx_state_name(unsigned int state);

/* A transmit turn of the responder: packets sent (at most @budget). */
unsigned int droce_rc_resp_tx_lc(struct droce_qp *qp, unsigned int budget);

#endif
