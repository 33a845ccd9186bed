/* SPDX-License-Identifier: BSD-3-Clause
 * FAKE dataplane for verbs_api validation tests only.
 *
 * Implements dp.h (MRs, CQs, QPs, engines) and the few runtime/port calls
 * verbs_api makes, with no EAL, no engine and no traffic: it records what
 * verbs_api hands to the dataplane so tests can check it, and lets tests
 * drive completions, notifications and CQ errors by hand.  Never link it
 * into anything but tests/verbs/test_validation.c.
 */
#ifndef DROCE_TESTS_FAKE_DP_H
#define DROCE_TESTS_FAKE_DP_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/dp.h"
/* the fake runtime fills its ports in; their accessors are pmd_glue's port_info.c */
#include "pmd_glue/port_struct.h"

#define FAKE_PORTS 2
#define FAKE_CQ_MAX 4096

struct droce_cq {
	uint32_t cap;
	droce_cq_notify_fn notify;
	droce_cq_error_fn error;
	void *arg;
	bool armed, solicited_only;
	unsigned int head, tail;
	struct droce_cqe ring[FAKE_CQ_MAX];
};

/* WRs one post list (or ibv_wr_* batch) may hold in the fake: more is ENOMEM */
#define FAKE_BATCH 64

struct droce_qp {
	enum droce_qp_type type;
	struct droce_qp_caps caps;
	struct droce_cq *scq, *rcq;
	uint32_t pd_id;
	unsigned int port;
	uint32_t qpn;
	uint32_t sq_posted, sq_retired, rq_posted, rq_retired;
	struct droce_wqe last_wqe;
	struct droce_wqe batch[FAKE_BATCH]; /* the builder's and ibv_post_send's slots (index % FAKE_BATCH) */
	bool in_batch;                 /* between droce_qp_sq_begin and commit/cancel */
	uint32_t batch_retired;        /* what droce_sq_batch_slot sees as retired */
	unsigned int n_commits;
	struct droce_rqe last_rqe;
	struct droce_rqe rbatch[FAKE_BATCH]; /* slots of droce_qp_rq_slot */
	bool in_rbatch;
	unsigned int n_mods;
	struct droce_qp_mod last_mod;
};

/* The fake ports: port0 198.18.0.1 + fd00::1, port1 198.18.0.2. */
extern struct droce_port fake_ports[FAKE_PORTS];

/* Resets the fake (ports, counters); the runtime counts as started. */
void fake_dp_reset(void);
/* Makes the next droce_mr_register / droce_cq_create / droce_qp_create fail. */
extern int fake_fail_next_create;
/* The number of live MRs, CQs and QPs. */
extern int fake_live_mrs, fake_live_cqs, fake_live_qps;

/* Retires @n posted send / receive WQEs (frees queue slots). */
void fake_qp_retire(struct droce_qp *qp, uint32_t n_send, uint32_t n_recv);
/* Adds a completion as an engine would: fires notify if armed. */
void fake_cq_push(struct droce_cq *cq, const struct droce_cqe *cqe, bool solicited);
/* Reports an overflow as an engine would. */
void fake_cq_overflow(struct droce_cq *cq);

#endif
