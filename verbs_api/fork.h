/* SPDX-License-Identifier: BSD-3-Clause
 * Verbs in a process forked after droce started (issue 22): the parent's
 * droce serves its forked children.
 *
 * A child made by fork() has no engine threads, cannot start DPDK again and
 * holds only a private copy of the ports' memory.  So, when the parent had
 * droce running, the fork hands the child one end of a socketpair
 * (pthread_atfork: made in prepare, the other end kept by the parent's
 * `droce-fork` server thread).  The child's ibv_open_device then opens a
 * context in the parent, and every verb on that context and on what is made
 * from it is a request over the socket (fork_cli.c); the server thread
 * (fork_srv.c) runs it with the ordinary verbs on objects it owns for that
 * child, and the parent's engines carry the child's QPs.  The child's
 * objects are small shadows that name the parent's ("handles").
 *
 * The child's registered memory is shared with the parent: the pages of the
 * MR are replaced, at the same address in the child, by a memfd mapping of
 * the same contents (MAP_FIXED | MAP_SHARED), the memfd goes to the parent
 * (SCM_RIGHTS), which maps it and registers it with the child's address as
 * iova: lkeys, rkeys and addresses are the child's as on any device.
 *
 * Completion channels and the async event fd are the parent's pipes, whose
 * read end the child holds (SCM_RIGHTS): a child waits on the fd, then asks
 * the server for the event (the server reads the record, so the parent's
 * bookkeeping of events handed out stays whole).
 *
 * A child that exits or dies hangs up its socket: the server destroys every
 * object it made for it.
 */
#ifndef DROCE_VERBS_API_FORK_H
#define DROCE_VERBS_API_FORK_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* The largest datagram either side sends (header + payload). */
#define DROCE_FK_MAX_MSG (64 * 1024)
/* File descriptors one message may carry (an MR's memfd pieces, a
 * response's event fds). */
#define DROCE_FK_MAX_FDS 16

enum droce_fk_op {
	DROCE_FK_OPEN = 1,
	DROCE_FK_CLOSE,
	DROCE_FK_QUERY_DEVICE,
	DROCE_FK_QUERY_DEVICE_EX,
	DROCE_FK_QUERY_PORT,
	DROCE_FK_ALLOC_PD,
	DROCE_FK_DEALLOC_PD,
	DROCE_FK_REG_MR,
	DROCE_FK_DEREG_MR,
	DROCE_FK_CREATE_CHAN,
	DROCE_FK_DESTROY_CHAN,
	DROCE_FK_CREATE_CQ,
	DROCE_FK_DESTROY_CQ,
	DROCE_FK_POLL_CQ,
	DROCE_FK_REQ_NOTIFY,
	DROCE_FK_GET_CQ_EVENT,
	DROCE_FK_CREATE_QP,
	DROCE_FK_MODIFY_QP,
	DROCE_FK_QUERY_QP,
	DROCE_FK_DESTROY_QP,
	DROCE_FK_POST_SEND,
	DROCE_FK_POST_RECV,
	DROCE_FK_CREATE_AH,
	DROCE_FK_DESTROY_AH,
	DROCE_FK_GET_ASYNC_EVENT,
	DROCE_FK_ATTACH_MCAST,
	DROCE_FK_DETACH_MCAST,
	/* rdma_cm */
	DROCE_FK_CM_CREATE_CHAN,
	DROCE_FK_CM_DESTROY_CHAN,
	DROCE_FK_CM_CREATE_ID,
	DROCE_FK_CM_CREATE_EP,
	DROCE_FK_CM_DESTROY_ID,
	DROCE_FK_CM_BIND,
	DROCE_FK_CM_RESOLVE_ADDR,
	DROCE_FK_CM_RESOLVE_ROUTE,
	DROCE_FK_CM_LISTEN,
	DROCE_FK_CM_CONNECT,
	DROCE_FK_CM_ACCEPT,
	DROCE_FK_CM_REJECT,
	DROCE_FK_CM_DISCONNECT,
	DROCE_FK_CM_ESTABLISH,
	DROCE_FK_CM_SET_OPTION,
	DROCE_FK_CM_INIT_QP_ATTR,
	DROCE_FK_CM_CREATE_QP,
	DROCE_FK_CM_DESTROY_QP,
	DROCE_FK_CM_JOIN_MC,
	DROCE_FK_CM_LEAVE_MC,
	DROCE_FK_CM_GET_EVENT,
	DROCE_FK_CM_ACK_EVENT,
	DROCE_FK_CM_GET_REQUEST,
	DROCE_FK_OP_COUNT
};

/*
 * Every message, request or response, starts with this; a payload follows
 * in the same datagram (SOCK_SEQPACKET keeps the boundaries).  Requests set
 * @op, @h (the object the verb is called on, a server handle) and @a; the
 * response echoes @op and sets @rc (0 or an errno), @h (a new object's
 * handle) and @a.
 */
struct droce_fk_msg {
	uint32_t op;
	int32_t rc;
	uint64_t h;
	uint64_t a[6];
};

/* A piece of an MR's memory: @len bytes at @off of the message's fd number
 * @fd (index into the SCM_RIGHTS array), in address order. */
struct droce_fk_piece {
	uint32_t fd;
	uint32_t pad;
	uint64_t off;
	uint64_t len;
};

/* A posted WR on the wire: the verbs struct with its pointers meaningless
 * (sg_list, next, wr.ud.ah: the AH travels in @ah), then @num_sge SGEs; an
 * inline send's SGEs are followed by their bytes (the server points the
 * SGEs at them). */
struct droce_fk_swr {
	struct ibv_send_wr wr;
	uint64_t ah;
};

/*
 * What a child's shadow of an rdma_cm id mirrors, sent after every request
 * on an id: the handles of the objects it names (the rdma_cm's own context,
 * PD, and the QP, CQs and channels rdma_create_qp made are registered in
 * the child's table on first sight, "borrowed": the rdma_cm destroys them),
 * the descriptors of the newly seen ones' event fds (indices into the
 * message's descriptors, -1: none) and the id's public fields.
 */
struct droce_fk_id_state {
	uint64_t id, ctx, pd, qp, scq, rcq, schan, rchan;
	uint32_t dev;          /* the droce port of ctx's device */
	int32_t ncomp;         /* ctx's num_comp_vectors */
	int32_t fd_ctx, fd_schan, fd_rchan;
	uint32_t port_num, ps, qp_type, qp_num, qp_state;
	int32_t scqe, rcqe;
	int32_t num_paths;
	struct ibv_qp_cap cap;
	struct rdma_addr addr;
	struct ibv_sa_path_rec path;
};

/* An rdma_cm event: the parent's event (a handle the ack names), its fields,
 * private data, and the states of its id and listen_id. */
struct droce_fk_cm_event {
	uint64_t ev;
	uint32_t event;
	int32_t status;
	uint32_t is_ud;
	uint32_t pdlen;
	uint64_t pdptr;        /* a multicast event's private_data: the join's context */
	struct rdma_conn_param conn; /* private_data meaningless */
	struct rdma_ud_param ud;     /* private_data meaningless */
	uint8_t pdata[256];
	struct droce_fk_id_state id, listen;
};

/* rdma_create_ep's arguments: the addrinfo (its pointers meaningless,
 * route and connect data not carried), its addresses, the QP's attributes. */
struct droce_fk_ep_req {
	struct rdma_addrinfo ai;
	struct sockaddr_storage src, dst;
	uint32_t has_qp;
	uint32_t pad;
	struct ibv_qp_init_attr qia;
};

/* ---- the parent (fork_srv.c) ---- */

/* pthread_atfork's handlers, with device.c's runtime lock held around them:
 * prepare makes the socketpair when droce runs here, parent hands its end to
 * the server thread, child keeps the other. */
void droce_fk_prepare(void);
void droce_fk_parent(void);
void droce_fk_child(void);


/* ---- the child (fork_cli.c) ---- */

/* True in a child the parent serves (its first verbs reach the parent). */
bool droce_fk_child_served(void);
/* The child's socket end (fork_srv.c hands it over at fork). */
void droce_fk_client_set(int fd);

/* The context ops of a child's context. */
int droce_fk_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int droce_fk_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int droce_fk_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int droce_fk_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* Set in a served child (droce_fk_client_set): only there can an object's
 * context be a child's, so no other process ever reads it here (a comp
 * channel may outlive its closed context: ibv_destroy_comp_channel after
 * ibv_close_device). */
extern bool droce_fk_served_child;

/* True if @c is a context a forked child opened through its parent. */
static inline bool
droce_fk_ctx(const struct ibv_context *c)
{
	return droce_fk_served_child && c != NULL && c->ops.post_send == droce_fk_post_send;
}

/* What an async event's element is (ibv_get_async_event(3)); the server
 * sends it as one word (a CQ's or QP's handle, a port number, nothing for
 * SRQ and device events: a child makes no SRQs). */
enum droce_fk_elem { DROCE_FK_ELEM_QP, DROCE_FK_ELEM_CQ, DROCE_FK_ELEM_PORT, DROCE_FK_ELEM_NONE };

static inline enum droce_fk_elem
droce_fk_event_elem(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return DROCE_FK_ELEM_CQ;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		return DROCE_FK_ELEM_PORT;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_DEVICE_FATAL:
		return DROCE_FK_ELEM_NONE;
	default:
		return DROCE_FK_ELEM_QP;
	}
}

struct ibv_context *droce_fk_open_device(struct ibv_device *device, unsigned int port);
int droce_fk_close_device(struct ibv_context *c);
int droce_fk_query_device(struct ibv_context *c, struct ibv_device_attr *a);
int droce_fk_query_port(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *a,
			size_t len);
struct ibv_pd *droce_fk_alloc_pd(struct ibv_context *c);
int droce_fk_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *droce_fk_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       unsigned int access);
int droce_fk_dereg_mr(struct ibv_mr *mr);
struct ibv_comp_channel *droce_fk_create_comp_channel(struct ibv_context *c);
int droce_fk_destroy_comp_channel(struct ibv_comp_channel *ch);
struct ibv_cq *droce_fk_create_cq(struct ibv_context *c, int cqe, void *cq_context,
				  struct ibv_comp_channel *ch, int comp_vector);
int droce_fk_destroy_cq(struct ibv_cq *cq);
int droce_fk_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context);
void droce_fk_ack_cq_events(struct ibv_cq *cq, unsigned int n);
struct ibv_qp *droce_fk_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia);
int droce_fk_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int droce_fk_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      struct ibv_qp_init_attr *ia);
int droce_fk_destroy_qp(struct ibv_qp *qp);
struct ibv_ah *droce_fk_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int droce_fk_destroy_ah(struct ibv_ah *ah);
int droce_fk_get_async_event(struct ibv_context *c, struct ibv_async_event *ev);
void droce_fk_ack_async_event(struct ibv_async_event *ev);
int droce_fk_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid, bool attach);

/* rdma_cm in a served child (rdmacm*.c route here when droce_fk_child_served()) */
struct rdma_event_channel *droce_fk_cm_create_event_channel(void);
int droce_fk_cm_destroy_event_channel(struct rdma_event_channel *ch);
int droce_fk_cm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *context,
			  enum rdma_port_space ps);
int droce_fk_cm_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			  struct ibv_qp_init_attr *qp_init_attr);
int droce_fk_cm_destroy_id(struct rdma_cm_id *id, bool ep);
int droce_fk_cm_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr);
int droce_fk_cm_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			     int timeout_ms);
int droce_fk_cm_resolve_route(struct rdma_cm_id *id, int timeout_ms);
int droce_fk_cm_listen(struct rdma_cm_id *id, int backlog);
int droce_fk_cm_connect(struct rdma_cm_id *id, struct rdma_conn_param *param);
int droce_fk_cm_accept(struct rdma_cm_id *id, struct rdma_conn_param *param);
int droce_fk_cm_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len);
int droce_fk_cm_disconnect(struct rdma_cm_id *id);
int droce_fk_cm_establish(struct rdma_cm_id *id);
int droce_fk_cm_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			   size_t optlen);
int droce_fk_cm_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask);
int droce_fk_cm_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
void droce_fk_cm_destroy_qp(struct rdma_cm_id *id);
int droce_fk_cm_join_mc(struct rdma_cm_id *id, struct sockaddr *addr, uint32_t flags,
			void *context);
int droce_fk_cm_leave_mc(struct rdma_cm_id *id, struct sockaddr *addr);
int droce_fk_cm_get_event(struct rdma_event_channel *ch, struct rdma_cm_event **event);
int droce_fk_cm_ack_event(struct rdma_cm_event *event);
int droce_fk_cm_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id);

#endif
