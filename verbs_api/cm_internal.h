/* SPDX-License-Identifier: BSD-3-Clause
 * The IB CM's internals, shared by its three files: cm.c (connections,
 * events and the API of cm.h), cm_gsi.c (QP1 I/O, timers, the service
 * thread, start and stop) and cm_rx.c (one handler per received message
 * kind).  Everything here is hidden from the library's exports.
 */
#ifndef DROCE_VERBS_API_CM_INTERNAL_H
#define DROCE_VERBS_API_CM_INTERNAL_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_random.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "pmd_glue/port.h"
#include "cm.h"
#include "cm_mad.h"
#include "internal.h"

#define CM_HIDDEN __attribute__((visibility("hidden")))

/* <sys/queue.h> has no safe iteration */
#define TAILQ_FOREACH_SAFE_(var, head, field, tvar)                                    \
	for ((var) = TAILQ_FIRST(head); (var) && ((tvar) = TAILQ_NEXT(var, field), 1);   \
	     (var) = (tvar))

#define GSI_RECV 128               /* receive buffers per port */
#define GSI_SEND 256               /* send queue slots per port */
#define GRH_LEN 40
#define RECV_BUF (GRH_LEN + DROCE_MAD_SIZE)
#define GSI_PD_ID UINT32_MAX       /* no verbs PD has it */

#define DEF_RESP_TIMEOUT 16        /* 4.096 us * 2^16 = 268 ms */
#define DEF_MAX_RETRIES 15         /* the kernel's cma: CMA_MAX_CM_RETRIES */
#define MRA_SERVICE_TIMEOUT 20     /* what our MRA asks for: 4.3 s */
#define TIMEWAIT_MIN_US 50000
#define LINGER_US 2000000          /* rejected / SIDR-answered: answer duplicates this long */
#define IDLE_WAIT_MS 100           /* the service thread's longest sleep */

enum cm_state {
	CM_IDLE,
	CM_REQ_SENT,       /* active: REQ out, resent until REP / REJ / MRA */
	CM_REP_RCVD,       /* active: EV_REP delivered, waiting for droce_cm_rtu() */
	CM_REQ_RCVD,       /* passive: EV_REQ delivered, waiting for accept / reject */
	CM_REP_SENT,       /* passive: REP out, resent until RTU */
	CM_ESTABLISHED,
	CM_DREQ_SENT,      /* resent until DREP */
	CM_DREQ_RCVD,      /* EV_DREQ delivered, waiting for droce_cm_drep() */
	CM_TIMEWAIT,       /* then EV_TIMEWAIT_EXIT */
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
	CM_LINGER,         /* over (rejected, SIDR answered): answers duplicates */
	CM_DEAD,           /* over: waiting only for the user's release */
};

static const char *const state_names[] = {
	[CM_IDLE] = "IDLE", [CM_REQ_SENT] = "REQ_SENT", [CM_REP_RCVD] = "REP_RCVD",
	[CM_REQ_RCVD] = "REQ_RCVD", [CM_REP_SENT] = "REP_SENT", [CM_ESTABLISHED] = "ESTABLISHED",
	[CM_DREQ_SENT] = "DREQ_SENT", [CM_DREQ_RCVD] = "DREQ_RCVD", [CM_TIMEWAIT] = "TIMEWAIT",
	[CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT", [CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	[CM_LINGER] = "LINGER", [CM_DEAD] = "DEAD",
};

struct droce_cm_conn {
	TAILQ_ENTRY(droce_cm_conn) link;
	enum cm_state state;
	bool released;                /* the user gave its reference back */
	bool releasing;               /* droce_cm_conn_release still uses it: not reaped */
	bool passive;                 /* made from the peer's REQ / SIDR REQ */
	droce_cm_handler_fn handler;
	void *ctx;
	struct droce_cm_addr addr;    /* ours: sgid local, dgid the peer's */
	uint32_t local_id, remote_id; /* comm IDs (SIDR: the request ID) */
	uint64_t tid;                 /* of the exchange in progress */
	uint32_t local_qpn, remote_qpn;
	uint8_t ack_timeout;          /* local ACK timeout of the connection */
	uint8_t last_mad[DROCE_MAD_SIZE];
	bool has_last;
	uint64_t deadline_us;         /* 0: no timer */
	uint64_t interval_us;
	unsigned int retries_left;
	uint8_t peer_resp_timeout;    /* REQ's local CM response timeout (passive) */
	uint8_t peer_max_retries;
	uint64_t service_id;          /* SIDR: what the REQ asked for */
};

struct droce_cm_listener {
	TAILQ_ENTRY(droce_cm_listener) link;
	uint64_t service_id;
	droce_cm_handler_fn handler;
	void *ctx;
};

/* An event waiting for the service thread; private data copied in. */
struct cm_qev {
	TAILQ_ENTRY(cm_qev) link;
	struct droce_cm_conn *conn;
	struct droce_cm_listener *l;  /* REQ / SIDR REQ: the listener's handler */
	struct droce_cm_event ev;
	uint8_t pdata[DROCE_CM_RTU_PDATA];
};

/* An address handle a posted MAD names, freed once no WQE does. */
struct cm_ah {
	SLIST_ENTRY(cm_ah) link;
	struct droce_ah ah;
};

struct gsi_port {
	struct droce_qp *qp;
	uint8_t *buf;                 /* GSI_RECV * RECV_BUF */
	struct droce_mr mr;
	bool mr_ok;
};

struct cm_global {
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* a delivery finished */
	bool started;
	bool stop;
	pthread_t thr;
	int efd;                      /* wakes the service thread */
	unsigned int n_ports;
	struct gsi_port gsi[DROCE_MAX_PORTS];
	struct droce_cq *rcq, *scq;
	TAILQ_HEAD(, droce_cm_conn) conns;
	TAILQ_HEAD(, droce_cm_listener) listeners;
	TAILQ_HEAD(, cm_qev) events;
	SLIST_HEAD(, cm_ah) ahs;
	const void *delivering;       /* conn or listener whose handler runs */
	uint32_t next_id;
	uint32_t tid_hi, tid_lo;
	struct droce_cm_stats stats;
};

extern CM_HIDDEN struct cm_global cm;

extern int droce_cm_logtype;
#define CM_LOG(level, ...) rte_log(RTE_LOG_##level, droce_cm_logtype, "droce.cm: " __VA_ARGS__)

/* Where a received MAD came from, seen from here. */
struct rx_info {
	struct droce_cm_addr addr;    /* port; sgid = the packet's destination, dgid its source */
};

CM_HIDDEN void conn_finish(struct droce_cm_conn *c, bool linger);
CM_HIDDEN struct droce_cm_conn * conn_new_locked(enum cm_state st);
CM_HIDDEN void conns_reap_locked(void);
CM_HIDDEN void enter_timewait(struct droce_cm_conn *c);
CM_HIDDEN struct cm_qev * ev_new(struct droce_cm_conn *c, enum droce_cm_event_type t, const struct droce_cm_msg *m);
CM_HIDDEN void ev_queue(struct cm_qev *q);
CM_HIDDEN void ev_simple(struct droce_cm_conn *c, enum droce_cm_event_type t);
CM_HIDDEN struct droce_cm_listener * find_listener_locked(uint64_t sid);
CM_HIDDEN struct droce_cm_conn * find_local_locked(uint32_t local_id);
CM_HIDDEN struct droce_cm_conn * find_remote_locked(uint32_t remote_id, const uint8_t peer[16], bool sidr);
CM_HIDDEN uint64_t now_us(void);
CM_HIDDEN void set_state(struct droce_cm_conn *c, enum cm_state st);
CM_HIDDEN void timer_stop(struct droce_cm_conn *c);
CM_HIDDEN void wake(void);
CM_HIDDEN void msg_init(struct droce_cm_msg *m, uint16_t attr, const struct droce_cm_conn *c);
CM_HIDDEN uint64_t new_tid_locked(void);
CM_HIDDEN uint64_t port_guid(unsigned int port);
CM_HIDDEN int resend_last_locked(struct droce_cm_conn *c);
CM_HIDDEN int send_msg_locked(struct droce_cm_conn *c, const struct droce_cm_addr *a, const struct droce_cm_msg *m);
CM_HIDDEN void rx_drep(const struct droce_cm_msg *m);
CM_HIDDEN void rx_dreq(const struct rx_info *rx, const struct droce_cm_msg *m);
CM_HIDDEN void rx_mra(const struct droce_cm_msg *m);
CM_HIDDEN void rx_rej(const struct droce_cm_msg *m);
CM_HIDDEN void rx_rep(const struct rx_info *rx, const struct droce_cm_msg *m);
CM_HIDDEN void rx_req(const struct rx_info *rx, const struct droce_cm_msg *m);
CM_HIDDEN void rx_rtu(const struct droce_cm_msg *m);
CM_HIDDEN void rx_sidr_rep(const struct droce_cm_msg *m);
CM_HIDDEN void rx_sidr_req(const struct rx_info *rx, const struct droce_cm_msg *m);

#endif /* DROCE_VERBS_API_CM_INTERNAL_H */
