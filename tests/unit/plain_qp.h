/* SPDX-License-Identifier: BSD-3-Clause
 * An RC QP in plain memory for the state machines' single steps
 * (unit_rc_states, no EAL): the engine, the QP, its send queue and READ
 * response ring calloc'd; a registered local buffer; and, for the steps
 * that build packets, a port whose mbuf pool is a struct rte_mempool in
 * plain memory (mempool ops of our own handing out mbufs from a calloc'd
 * array: rte_pktmbuf_alloc / free work on it unchanged, no EAL, nothing in
 * the data path knows).  Criterion runs each test in its own process.
 */
#ifndef DROCE_TEST_PLAIN_QP_H
#define DROCE_TEST_PLAIN_QP_H

#include <stdint.h>

#include "dataplane/qp_internal.h"
#include "dataplane/rc_sm.h"
#include "dataplane/wire.h"

#define PLAIN_SQ_SLOTS 8
#define PLAIN_LOCAL_IOVA 0x10000u

extern struct droce_engine *eng;
extern struct droce_qp *qp;
extern struct droce_rd_resp rd_resp[DROCE_RD_RESP_CAP];
extern uint8_t local[4096];          /* registered (local_sge), zeroed by qp_setup */
extern struct droce_mr local_mr;

/* The QP: RC, RTS, path MTU 1024, PSNs from 100, max_rd_atomic 2. */
void qp_setup(void);
void qp_teardown(void);

/* Posts a WQE (as the application's side would publish it), inline. */
struct droce_wqe *post(uint8_t opcode, uint32_t length);
/* Marks the WQE at @idx as started and wholly sent, from the current psn_next. */
struct droce_swqe *sent(uint32_t idx, uint32_t npkts);
uint8_t syn(enum droce_aeth_kind kind, uint8_t value);

/* Registers local[] at PLAIN_LOCAL_IOVA (local and remote rights; the key
 * table needs no EAL), once per test. */
void local_register(void);
/* local_register, and gives @w one SGE of @length bytes at local[]'s start. */
void local_sge(struct droce_wqe *w, uint32_t length);

/* ---- the port and its mbuf pool (packet-building steps) ---- */

/* qp_setup, then port 0 with a plain-memory pool and the QP's header
 * template (IPv4 198.18.0.1 -> 198.18.0.2); zero-copy off (zc_min). */
void tx_setup(void);
/* Frees the frames still queued, checks every mbuf came back, qp_teardown. */
void tx_teardown(void);

/* Frames the steps queued on port 0 (the engine's tx buffer). */
unsigned int tx_count(void);
/* Frame @i, its segments copied out flat into @buf; its length, and in
 * *@nsegs its segment count. */
uint32_t tx_frame(unsigned int i, uint8_t *buf, uint32_t cap, unsigned int *nsegs);
/* Mbufs of the pool not handed out. */
unsigned int tx_pool_free(void);

#endif
