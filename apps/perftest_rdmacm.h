/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's -R (--rdma_cm) mode, both roles, over droce's librdmacm API
 * (verbs_api/rdmacm.c and the IB CM in verbs_api/cm.c).  As perftest 6.06
 * (Debian 12's 4.5-0.17) does it, -R means two things:
 *
 *  1. No TCP at all: the out-of-band channel (versions, system data, MTU,
 *     keys, reports) is itself an rdma_cm RC connection to the server's
 *     port (-p, default 18515, RDMA_PS_TCP; perftest_parameters.c turns
 *     use_rdma_cm on with work_rdma_cm).  Each exchange of N bytes is one
 *     SEND of N bytes each way, the client first (ctx_xchg_data_rdma), into
 *     a receive of sizeof(struct pingpong_dest) = 56 bytes that is reposted
 *     after every message; the key message is that struct in big endian
 *     (rdma_write_keys).  No private data; conn_param: no responder
 *     resources, retry_count 7, rnr_retry_count 7.  The server destroys its
 *     listening id once it accepted the one connection.
 *  2. The test QPs are connected by rdma_cm too (create_rdma_cm_connection):
 *     after one key exchange on the channel, the server listens again on
 *     the same port (RDMA_PS_TCP; RDMA_PS_UDP for UD) with a backlog of -q
 *     and accepts -q connections; the client resolves and connects -q ids
 *     to server:port, no private data, responder_resources = initiator_depth
 *     = the outstanding reads (-o) for READ and atomics, retry and RNR retry
 *     counts 7; a REJECTED connect (the server not listening yet) is tried
 *     again (perftest: 10 times, 100 ms apart).  Then one more key exchange,
 *     and the test goes on as without -R (keys per QP give rkey and vaddr;
 *     the QP numbers and PSNs in them are not used).
 *
 * The connection setup waits on the event channel's fd with the idle
 * callback, so droce's co-located engines keep running.
 */
#ifndef DROCE_PERFTEST_RDMACM_H
#define DROCE_PERFTEST_RDMACM_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "perftest_oob.h"

#define PT_RCM_BUF 4096     /* per direction; a perftest peer receives 56 B at most */
#define PT_RCM_RETRY_MS 100 /* perftest's delay between connect attempts */

struct pt_rcm {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	int timeout_ms;            /* per wait; <= 0: forever */
	pt_idle_fn idle;
	void *idle_arg;
	char err[160];
	/* the out-of-band channel (pt_rcm_chan_*) */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	uint8_t *buf;              /* [0, PT_RCM_BUF) send, then receive */
	bool disconnected;         /* the peer sent a DREQ */
	/* pt_rcm_connect on RDMA_PS_UDP: the peer's address handle attributes,
	 * QP number and Q_Key from the ESTABLISHED event (SIDR REP) */
	struct rdma_ud_param ud;
};

extern const struct pt_msg_ops pt_rcm_msg_ops; /* arg: struct pt_rcm * */

void pt_rcm_init(struct pt_rcm *c, int timeout_ms, pt_idle_fn idle, void *arg);

/* Creates the event channel and a listening id on @bind_addr (NULL: every
 * address) and @port in port space @ps with @backlog.  0 or -1 (c->err). */
int pt_rcm_listen(struct pt_rcm *c, const char *bind_addr, int port, enum rdma_port_space ps,
		  int backlog);
/* Destroys the listening id (perftest does once it has its connections). */
void pt_rcm_unlisten(struct pt_rcm *c);

/* The next event of @want on the channel, waiting up to the timeout and
 * running the idle callback; any other event is acked and dropped, an
 * error event fails (message in c->err).  The caller acks *ev. */
int pt_rcm_wait(struct pt_rcm *c, enum rdma_cm_event_type want, struct rdma_cm_event **ev);

/* Non-blocking: 1 and *ev when an event is there (the caller acks it), 0
 * when none is, -1 on error. */
int pt_rcm_try(struct pt_rcm *c, struct rdma_cm_event **ev);

/* Client side of one connection: resolves @host:@port, calls @make_qp(id,
 * arg) once the route is there (it creates the id's QP), connects with
 * @param and waits for ESTABLISHED; a REJECTED or UNREACHABLE attempt is
 * repeated (a new id) every PT_RCM_RETRY_MS until the timeout.  *out: the
 * connected id. */
typedef int (*pt_rcm_make_qp_fn)(struct rdma_cm_id *id, void *arg);
int pt_rcm_connect(struct pt_rcm *c, const char *host, int port, enum rdma_port_space ps,
		   pt_rcm_make_qp_fn make_qp, void *arg, struct rdma_conn_param *param,
		   struct rdma_cm_id **out);

/* The out-of-band channel.  Server: pt_rcm_listen first, then this accepts
 * one connection and destroys the listener.  Client: connects to
 * @host:@port.  Both set up the QP, its buffers and one receive. */
int pt_rcm_chan_accept(struct pt_rcm *c);
int pt_rcm_chan_connect(struct pt_rcm *c, const char *host, int port);
/* Disconnects and frees the channel, the listener and the event channel. */
void pt_rcm_close(struct pt_rcm *c);

#endif
