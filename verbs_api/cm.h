/* SPDX-License-Identifier: BSD-3-Clause
 * The InfiniBand Communication Manager (IBTA vol. 1 ch. 12) over RoCEv2:
 * the contract between the CM (cm_*.c: MAD codec, connection state machines,
 * timers and retries, the GSI QP1 of every port and the service thread that
 * drives them) and its one user, the rdma_cm layer (rdmacm*.c).
 *
 * Threading:
 *  - Every function here may be called from any thread.  The CM serialises
 *    them internally.
 *  - Events are delivered by calling the handler given to droce_cm_listen()
 *    or droce_cm_connect() / droce_cm_sidr_req(), on the CM service thread,
 *    with no CM lock held: a handler may call any droce_cm_* function, but
 *    must not block for long (it queues an rdma_cm event and returns).
 *  - Events of one connection are delivered in order, one at a time.
 *
 * Lifetime: a struct droce_cm_conn is owned by the CM.  Its user holds one
 * reference from droce_cm_connect() / droce_cm_sidr_req() (active side) or
 * from the DROCE_CM_EV_REQ / DROCE_CM_EV_SIDR_REQ event (passive side) until
 * it calls droce_cm_conn_release(); after that call no event names the
 * connection again, and the CM finishes any protocol still owed (time wait,
 * answering a duplicate DREQ) on its own.
 *
 * Addresses are GIDs: IPv6, or IPv4-mapped (::ffff:a.b.c.d) for IPv4.
 */
#ifndef DROCE_VERBS_API_CM_H
#define DROCE_VERBS_API_CM_H

#include <stdbool.h>
#include <stdint.h>

/* IBTA private data sizes of each message (bytes). */
#define DROCE_CM_REQ_PDATA 92
#define DROCE_CM_REP_PDATA 196
#define DROCE_CM_RTU_PDATA 224
#define DROCE_CM_REJ_PDATA 148
#define DROCE_CM_REJ_ARI 72
#define DROCE_CM_DREQ_PDATA 220
#define DROCE_CM_DREP_PDATA 224
#define DROCE_CM_MRA_PDATA 222
#define DROCE_CM_SIDR_REQ_PDATA 216
#define DROCE_CM_SIDR_REP_PDATA 136

/* GSI (QP1) constants. */
#define DROCE_CM_GSI_QPN 1
#define DROCE_CM_GSI_QKEY 0x80010000u

/* REJ reasons (IBTA table 112) the CM and the rdma_cm layer use. */
enum droce_cm_rej_reason {
	DROCE_CM_REJ_NO_QP = 1,
	DROCE_CM_REJ_INVALID_SERVICE_ID = 8,
	DROCE_CM_REJ_STALE_CONN = 10,
	DROCE_CM_REJ_TIMEOUT = 26,
	DROCE_CM_REJ_CONSUMER_DEFINED = 28,
};

/* SIDR REP status (IBTA table 123). */
enum droce_cm_sidr_status {
	DROCE_CM_SIDR_SUCCESS = 0,
	DROCE_CM_SIDR_UNSUPPORTED = 1, /* service ID not supported */
	DROCE_CM_SIDR_REJECT = 2,      /* service provider rejected */
	DROCE_CM_SIDR_NO_QP = 3,
	DROCE_CM_SIDR_REDIRECT = 4,
	DROCE_CM_SIDR_UNSUPPORTED_VERSION = 5,
};

struct droce_cm_conn;
struct droce_cm_listener;

/* Where a connection runs: local droce port and the two GIDs. */
struct droce_cm_addr {
	unsigned int port;      /* droce port index (device droce<port>) */
	uint8_t sgid[16];       /* local GID: one of the port's addresses */
	uint8_t dgid[16];       /* the peer's GID */
	uint32_t flow_label;
	uint8_t traffic_class;
	uint8_t hop_limit;      /* 0: the CM's default (64) */
};

/* What an active side asks for in a REQ (and a passive side learns from it). */
struct droce_cm_req {
	struct droce_cm_addr addr;
	uint64_t service_id;           /* host order */
	uint32_t qpn;                  /* the sender's QP */
	uint32_t starting_psn;         /* the sender's RQ PSN (the receiver's SQ PSN), as
					* the kernel's IB CM reads it (REP likewise) */
	uint8_t qp_type;               /* 2 = RC, 3 = UC (enum ibv_qp_type values) */
	uint8_t responder_resources;   /* max_dest_rd_atomic the sender offers */
	uint8_t initiator_depth;       /* max_rd_atomic the sender wants */
	uint8_t path_mtu;              /* enum ibv_mtu */
	uint8_t local_ack_timeout;     /* 5-bit exponent (ibv_qp_attr.timeout) */
	uint8_t retry_count;           /* 0..7 */
	uint8_t rnr_retry_count;       /* 0..7 */
	uint8_t cm_response_timeout;   /* 5-bit exponent; 0: the CM's default */
	uint8_t max_cm_retries;        /* 0..15; 0: the CM's default */
	bool srq;                      /* the sender's QP has an SRQ */
	const void *private_data;      /* for the event: points into the MAD */
	uint8_t private_data_len;      /* <= DROCE_CM_REQ_PDATA */
};

/* What a passive side answers in a REP (and the active side learns from it). */
struct droce_cm_rep {
	uint32_t qpn;
	uint32_t starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t rnr_retry_count;
	uint8_t target_ack_delay;
	bool srq;
	const void *private_data;
	uint8_t private_data_len;      /* <= DROCE_CM_REP_PDATA */
};

/* SIDR (UD service resolution). */
struct droce_cm_sidr_req {
	struct droce_cm_addr addr;
	uint64_t service_id;
	uint16_t pkey;
	uint8_t cm_response_timeout;   /* 0: default */
	uint8_t max_cm_retries;        /* 0: default */
	const void *private_data;
	uint8_t private_data_len;      /* <= DROCE_CM_SIDR_REQ_PDATA */
};

struct droce_cm_sidr_rep {
	uint8_t status;                /* enum droce_cm_sidr_status */
	uint32_t qpn;
	uint32_t qkey;
	const void *private_data;
	uint8_t private_data_len;      /* <= DROCE_CM_SIDR_REP_PDATA */
};

enum droce_cm_event_type {
	DROCE_CM_EV_REQ,           /* listener: a new passive connection (ev->conn) */
	DROCE_CM_EV_REP,           /* active: the peer accepted; send RTU once the QP is ready */
	DROCE_CM_EV_RTU,           /* passive: established (also: first data before RTU, see below) */
	DROCE_CM_EV_REJ,           /* either side: the peer rejected */
	DROCE_CM_EV_REQ_TIMEOUT,   /* active: no REP (or MRA) after every retry */
	DROCE_CM_EV_REP_TIMEOUT,   /* passive: no RTU after every retry */
	DROCE_CM_EV_DREQ,          /* the peer disconnects; answer with droce_cm_drep() */
	DROCE_CM_EV_DREP,          /* our DREQ was answered */
	DROCE_CM_EV_DREQ_TIMEOUT,  /* our DREQ was never answered */
	DROCE_CM_EV_TIMEWAIT_EXIT, /* the connection's time wait ended: its QP may be reused */
	DROCE_CM_EV_SIDR_REQ,      /* listener: a SIDR REQ (ev->conn answers it) */
	DROCE_CM_EV_SIDR_REP,      /* active: the SIDR answer */
	DROCE_CM_EV_SIDR_TIMEOUT,  /* active: no SIDR REP after every retry */
};

struct droce_cm_event {
	enum droce_cm_event_type type;
	struct droce_cm_conn *conn;
	void *ctx;                        /* the connection's (or listener's, for REQ) ctx */
	union {
		struct droce_cm_req req;           /* EV_REQ */
		struct droce_cm_rep rep;           /* EV_REP */
		struct {
			uint16_t reason;           /* enum droce_cm_rej_reason / IBTA code */
			uint8_t ari_len;
			uint8_t ari[DROCE_CM_REJ_ARI];
		} rej;                             /* EV_REJ */
		struct droce_cm_sidr_req sidr_req; /* EV_SIDR_REQ */
		struct droce_cm_sidr_rep sidr_rep; /* EV_SIDR_REP */
	} u;
	/* private data of the message (REQ/REP/SIDR: also in u.*.private_data);
	 * valid during the handler call only */
	const uint8_t *private_data;
	uint8_t private_data_len;
};

typedef void (*droce_cm_handler_fn)(const struct droce_cm_event *ev);

/*
 * Starts the CM once per process (its GSI QP1 on every port and its service
 * thread); later calls return 0 at once.  Needs the droce runtime up.
 * 0 or -1 with errno.
 */
int droce_cm_start(void);
/* Stops it (droce_stop calls it): every connection is dropped without events. */
void droce_cm_stop(void);

/*
 * Listens for REQs and SIDR REQs naming @service_id, on every port.  REQs for
 * a service ID nobody listens on are answered by the CM with REJ reason 8
 * (invalid service ID) and SIDR REQs with SIDR status 1.  EADDRINUSE when
 * the service ID already has a listener.  0 or -1 with errno.
 */
int droce_cm_listen(uint64_t service_id, droce_cm_handler_fn handler, void *ctx,
		    struct droce_cm_listener **out);
/* Stops listening; no REQ event for it follows the return. */
void droce_cm_unlisten(struct droce_cm_listener *l);

/*
 * Sends a REQ (resent until a REP, REJ or MRA arrives, or the retries run
 * out).  @handler and @ctx receive the connection's events.  0 or -1 with
 * errno (EINVAL: bad fields; ENETUNREACH: the peer's MAC cannot be found).
 */
int droce_cm_connect(const struct droce_cm_req *req, droce_cm_handler_fn handler, void *ctx,
		     struct droce_cm_conn **out);

/* Passive side, after EV_REQ: where the connection's events go from now on. */
void droce_cm_conn_set_handler(struct droce_cm_conn *c, droce_cm_handler_fn handler, void *ctx);

/* Passive: answers the REQ with a REP (resent until RTU / timeout). */
int droce_cm_accept(struct droce_cm_conn *c, const struct droce_cm_rep *rep);
/* Either side before establishment: sends a REJ with @reason. */
int droce_cm_reject(struct droce_cm_conn *c, uint16_t reason, const void *pdata, uint8_t len);
/* Active, after EV_REP: sends the RTU; the connection is established. */
int droce_cm_rtu(struct droce_cm_conn *c, const void *pdata, uint8_t len);
/* Passive: the connection is established without an RTU (first data arrived). */
int droce_cm_establish(struct droce_cm_conn *c);
/* Either side when established: sends a DREQ (resent until DREP / timeout). */
int droce_cm_disconnect(struct droce_cm_conn *c, const void *pdata, uint8_t len);
/* After EV_DREQ: sends the DREP (a duplicate DREQ later is answered again). */
int droce_cm_drep(struct droce_cm_conn *c, const void *pdata, uint8_t len);

/* Sends a SIDR REQ (resent until a SIDR REP or the retries run out). */
int droce_cm_sidr_req(const struct droce_cm_sidr_req *req, droce_cm_handler_fn handler,
		      void *ctx, struct droce_cm_conn **out);
/* Passive, after EV_SIDR_REQ: answers it. */
int droce_cm_sidr_rep(struct droce_cm_conn *c, const struct droce_cm_sidr_rep *rep);

/* Gives up the caller's reference: no event names @c after this returns. */
void droce_cm_conn_release(struct droce_cm_conn *c);

/* Counters for tests and --stats. */
struct droce_cm_stats {
	uint64_t mads_tx, mads_rx, resends, dups_rx, drops_rx;
	uint64_t req_tx, rep_tx, rtu_tx, rej_tx, dreq_tx, drep_tx, mra_tx, sidr_req_tx, sidr_rep_tx;
	uint64_t req_rx, rep_rx, rtu_rx, rej_rx, dreq_rx, drep_rx, mra_rx, sidr_req_rx, sidr_rep_rx;
};
void droce_cm_stats_get(struct droce_cm_stats *out);

#endif /* DROCE_VERBS_API_CM_H */
