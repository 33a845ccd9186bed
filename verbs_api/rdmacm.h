/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm layer (librdmacm's API over droce's IB CM, verbs_api/cm.h):
 * internal objects shared by rdmacm.c (ids, event channels, connections)
 * and rdmacm_addr.c (devices, addresses, port bindings, rdma_getaddrinfo).
 *
 * Threading: every rdma_* entry point may be called from any thread.  One
 * process-wide mutex (droce_rcm_lock) guards the ids' connection state and
 * the binding table; a channel's event queue has its own lock, taken inside
 * droce_rcm_lock when both are held.  droce_cm_* functions are called with
 * droce_rcm_lock held, except droce_cm_conn_release() and
 * droce_cm_unlisten(), which wait for an in-flight CM handler that may be
 * waiting for droce_rcm_lock.  CM handlers (the CM service thread) take
 * droce_rcm_lock, queue events and return; QP state changes that can block
 * (RTR resolves the peer's MAC) happen in application threads, inside
 * rdma_get_cm_event / rdma_accept, as librdmacm does them.
 */
#ifndef DROCE_VERBS_API_RDMACM_H
#define DROCE_VERBS_API_RDMACM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <rdma/rdma_cma.h>

#include "cm.h"

/* The rdma_cm header librdmacm / the kernel's cma put before the user's
 * private data in REQ and SIDR REQ (cma_hdr): 36 bytes. */
#define DROCE_RCM_HDR_LEN 36
#define DROCE_RCM_HDR_VERSION 0x00


/* Ephemeral ports, as Linux's default ip_local_port_range. */
#define DROCE_RCM_EPHEMERAL_LO 32768
#define DROCE_RCM_EPHEMERAL_HI 60999

/* Defaults the kernel's cma uses (or droce picks, said in the README). */
#define DROCE_RCM_DEFAULT_ACK_TIMEOUT 14 /* 4.096 us * 2^14 = 67 ms */
#define DROCE_RCM_DEFAULT_HOP_LIMIT 64
#define DROCE_RCM_MAX_BACKLOG 1024

enum droce_rcm_state {
	DROCE_RCM_IDLE,
	DROCE_RCM_ADDR_RESOLVED,
	DROCE_RCM_ROUTE_RESOLVED,
	DROCE_RCM_CONNECT,        /* active: REQ / SIDR REQ sent */
	DROCE_RCM_CONN_RESPONSE,  /* active: REP in the queue or handed out (no QP: rdma_establish) */
	DROCE_RCM_REQ_RCVD,       /* passive: CONNECT_REQUEST queued, not yet accepted */
	DROCE_RCM_ACCEPTED,       /* passive: REP sent, waiting for RTU */
	DROCE_RCM_ESTABLISHED,
	DROCE_RCM_DISCONNECTED,   /* DREQ sent or received */
	DROCE_RCM_LISTEN,
	DROCE_RCM_ERROR,          /* rejected, timed out, or failed */
};

struct droce_rcm_id;
struct droce_rcm_bind;

/* An event channel: a FIFO of events and a pipe that carries one byte per
 * queued event, so the read end (the channel's fd) polls readable exactly
 * while events wait, honours O_NONBLOCK, and works with epoll. */
struct droce_rcm_chan {
	struct rdma_event_channel ch;   /* ch.fd: the pipe's read end */
	int wfd;                        /* write end, O_NONBLOCK */
	pthread_mutex_t lock;
	TAILQ_HEAD(, droce_rcm_event) q;
	unsigned int owed;              /* tokens not written (pipe full) */
	atomic_uint readers;            /* threads inside rdma_get_cm_event's read */
};

/* What an event still needs from the application thread that takes it. */
enum droce_rcm_ev_kind {
	DROCE_RCM_EVK_PLAIN,
	DROCE_RCM_EVK_CONN_RESP,  /* a REP: QP to RTR/RTS + RTU, or CONNECT_RESPONSE */
	DROCE_RCM_EVK_REJECTED,   /* QP to ERR */
	DROCE_RCM_EVK_MC_JOIN,    /* MULTICAST_JOIN: the id's QP attached to the group */
};

struct droce_rcm_event {
	struct rdma_cm_event ev;
	struct droce_rcm_id *owner;     /* its ack completes on this id */
	enum droce_rcm_ev_kind kind;
	TAILQ_ENTRY(droce_rcm_event) link;
	uint8_t pdata[256];             /* the private data ev.param points at */
};

/* Ids bound to one (port space, port): the service ID's listener. */
struct droce_rcm_bind {
	uint16_t ps;
	uint16_t port;                  /* host order */
	TAILQ_HEAD(, droce_rcm_id) ids;
	struct droce_cm_listener *listener;
	TAILQ_ENTRY(droce_rcm_bind) link;
};

/* A multicast group an id joined (rdmacm_mcast.c), under droce_rcm_lock. */
struct droce_rcm_mc {
	struct sockaddr_storage addr;
	uint8_t mgid[16];
	void *context;
	uint32_t join_flags;            /* RDMA_MC_JOIN_FLAG_* */
	bool attached;                  /* the id's QP, by the JOIN event */
	TAILQ_ENTRY(droce_rcm_mc) link;
};

struct droce_rcm_id {
	struct rdma_cm_id id;
	struct droce_rcm_chan *chan;    /* == id.channel */
	bool sync;                      /* created with a NULL channel */
	pthread_mutex_t mut;            /* events_reported / completed */
	pthread_cond_t cond;
	unsigned int events_reported, events_completed;

	/* under droce_rcm_lock */
	enum droce_rcm_state state;
	bool destroying;
	int port;                       /* droce port index, -1: not bound to a device */
	bool bound;
	struct droce_rcm_bind *bind;
	TAILQ_ENTRY(droce_rcm_id) bind_link;
	int backlog, pending;           /* listener: CONNECT_REQUESTs not yet taken */
	struct droce_rcm_id *listener;  /* passive ids: who got the REQ (until taken) */
	struct droce_cm_conn *conn;
	bool dreq_rcvd, drep_sent, dreq_sent, disc_reported, connect_error;

	/* options (rdma_set_option) */
	uint8_t tos;
	bool reuseaddr;
	int afonly;
	uint8_t ack_timeout;            /* 0: default */

	/* connection parameters: what rdma_init_qp_attr answers */
	uint8_t initiator_depth, responder_resources; /* as librdmacm's id_priv */
	bool have_remote;
	/* local_psn: the Starting PSN of our REQ / REP (our RQ's first PSN);
	 * remote_psn: the peer's (our SQ's first PSN) */
	uint32_t remote_qpn, remote_psn, local_psn;
	uint8_t path_mtu, local_ack_timeout, retry_count, rnr_retry_count;
	uint32_t qkey;                  /* UD */
	uint32_t flow_label;

	/* ECE (rdma_set_local_ece / rdma_get_remote_ece): kept, not carried */
	struct ibv_ece local_ece, remote_ece;

	struct ibv_qp_init_attr *qp_init_attr; /* rdma_create_ep listener */
	TAILQ_HEAD(, droce_rcm_mc) mcs;  /* groups joined (rdmacm_mcast.c) */
	struct ibv_sa_path_rec path;
};

extern pthread_mutex_t droce_rcm_lock;

static inline struct droce_rcm_id *
droce_rcm_id_of(struct rdma_cm_id *id)
{
	return (struct droce_rcm_id *)id; /* first member */
}

/* ---- rdmacm_addr.c ---- */

/* Starts the runtime and the CM once: 0 or -1 with errno. */
int droce_rcm_init(void);
/* The shared context and PD of droce port @port (opened once): 0 or -1. */
int droce_rcm_dev_get(unsigned int port, struct ibv_context **ctx, struct ibv_pd **pd);
/* Max RDMA READ / atomic depth of a device (responder resources, initiator depth). */
uint8_t droce_rcm_max_rd_atomic(void);

/* GID of a sockaddr (IPv4-mapped for AF_INET); false for other families. */
bool droce_rcm_sa_to_gid(const struct sockaddr *sa, uint8_t gid[16]);
/* Fills a sockaddr (AF_INET for an IPv4-mapped GID) with @gid and @port (host order). */
void droce_rcm_gid_to_sa(const uint8_t gid[16], uint16_t port, struct sockaddr_storage *out);
/* The wildcard or a loopback address, as the kernel's cma_any_addr: binding
 * one puts the id on no device (a listener on 127.0.0.1 hears every
 * address, libfabric's verbs provider binds "localhost" that way), and
 * resolving one as a destination is cma_resolve_loopback. */
bool droce_rcm_sa_is_any(const struct sockaddr *sa);
/* 127.0.0.0/8 or ::1 (the kernel's cma_loopback_addr) */
bool droce_rcm_sa_is_loopback(const struct sockaddr *sa);
socklen_t droce_rcm_sa_len(const struct sockaddr *sa);
uint16_t droce_rcm_sa_port(const struct sockaddr *sa); /* host order */
void droce_rcm_sa_set_port(struct sockaddr *sa, uint16_t port);
/* The droce port one of whose GIDs is @gid, or -1. */
int droce_rcm_port_of_gid(const uint8_t gid[16], int *gid_index);
/* The droce port to reach @dgid from (bound port @bound_port or -1): -1 if none. */
int droce_rcm_route(const uint8_t dgid[16], int bound_port);

/* Binds @p to @addr (port 0: an ephemeral one).  Lock held.  0 or errno. */
int droce_rcm_bind_locked(struct droce_rcm_id *p, const struct sockaddr *addr);
/* Drops @p's binding; returns the listener to unlisten (lock released) and
 * the bind to free after that (both may be NULL). */
void droce_rcm_unbind_locked(struct droce_rcm_id *p, struct droce_cm_listener **unlisten,
			     struct droce_rcm_bind **free_bind);
/* Listening id of @b for a REQ to @dgid, or NULL.  Lock held. */
struct droce_rcm_id *droce_rcm_find_listener(struct droce_rcm_bind *b, const uint8_t dgid[16]);

/* ---- rdmacm.c ---- */

/* The CM's listener handler (ctx: the struct droce_rcm_bind). */
void droce_rcm_listen_handler(const struct droce_cm_event *ev);

static inline uint64_t
droce_rcm_service_id(uint16_t ps, uint16_t port)
{
	/* as the kernel's cma: RDMA_PS_TCP 0x0106 -> 0x0000000001060000 | port */
	return ((uint64_t)ps << 16) | port;
}

/* ---- shared by rdmacm.c, rdmacm_events.c, rdmacm_qp.c, rdmacm_conn.c, rdmacm_handlers.c ---- */

#define RCM_HIDDEN __attribute__((visibility("hidden")))
#define ERR(e) (errno = (e), -1)

/* rdmacm.c */
RCM_HIDDEN int rcm_complete_sync(struct droce_rcm_id *p);
RCM_HIDDEN void rcm_fill_path(struct droce_rcm_id *p);
RCM_HIDDEN int rcm_gid_index_on(int port, const uint8_t gid[16]);
RCM_HIDDEN struct droce_rcm_id * rcm_id_alloc(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps, enum ibv_qp_type qp_type);
RCM_HIDDEN void rcm_id_free(struct droce_rcm_id *p);

/* rdmacm_conn.c, rdmacm_handlers.c */
RCM_HIDDEN bool rcm_hdr_get(const uint8_t *h, size_t len, struct sockaddr_storage *src, struct sockaddr_storage *dst, uint16_t dst_port);
RCM_HIDDEN void rcm_conn_handler(const struct droce_cm_event *ev);

/* rdmacm_mcast.c */
RCM_HIDDEN void rcm_mc_process_join(struct droce_rcm_event *e);
RCM_HIDDEN void rcm_mc_free_all(struct droce_rcm_id *p);

/* rdmacm_events.c */
RCM_HIDDEN void rcm_chan_push(struct droce_rcm_chan *c, struct droce_rcm_event *e);
RCM_HIDDEN void rcm_ev_conn_pdata(struct droce_rcm_event *e, const void *pd, size_t len);
RCM_HIDDEN struct droce_rcm_event * rcm_ev_new(struct droce_rcm_id *owner, struct droce_rcm_id *id, enum rdma_cm_event_type type, int status);
RCM_HIDDEN void rcm_ev_queue(struct droce_rcm_event *e);
RCM_HIDDEN void rcm_ev_ud_pdata(struct droce_rcm_event *e, const void *pd, size_t len);
RCM_HIDDEN int rcm_modify_qp_err(struct droce_rcm_id *p);
RCM_HIDDEN int rcm_modify_qp_rtr(struct droce_rcm_id *p, uint8_t resp_res);
RCM_HIDDEN int rcm_modify_qp_rts(struct droce_rcm_id *p, uint8_t init_depth);
RCM_HIDDEN struct droce_rcm_event * rcm_queue_simple(struct droce_rcm_id *p, enum rdma_cm_event_type type, int status);

#endif /* DROCE_VERBS_API_RDMACM_H */
