/* SPDX-License-Identifier: BSD-3-Clause
 * verbs_api internals: the objects behind rdma-core's struct ibv_* handles.
 *
 * Every droce object embeds the rdma-core struct the application sees as its
 * first member, so a handle converts back with a cast (container_of at
 * offset 0).  The context embeds a whole struct verbs_context, whose last
 * member is the struct ibv_context, so verbs.h's verbs_get_ctx() works.
 */
#ifndef DROCE_VERBS_API_INTERNAL_H
#define DROCE_VERBS_API_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <infiniband/verbs.h>

#include "dataplane/dp.h"

/* ibv_port numbers: each droce device has exactly one port, number 1. */
#define DROCE_VERBS_PORT_NUM 1

/* Limits dp.h does not name yet (see the verbs_api report). */
#define DROCE_VERBS_MAX_MR ((1 << 16) - 1)
#define DROCE_VERBS_MAX_CQ (1 << 16)
#define DROCE_VERBS_MAX_PD (1 << 24)
#define DROCE_VERBS_MAX_AH (1 << 24) /* not enforced: AHs cost only memory */

/* Headers around a RoCEv2 payload in the worst case: IPv6 40, UDP 8, BTH 12,
 * AtomicETH 28 (the largest extended header set), ICRC 4. */
#define DROCE_VERBS_ROCE_OVERHEAD (40 + 8 + 12 + 28 + 4)

struct droce_vdev {
	struct ibv_device dev;
	unsigned int port;        /* droce port index */
	__be64 guid;
};

struct droce_vcq;
struct droce_vqp;
struct droce_vsrq;

struct droce_vctx {
	struct verbs_context vctx; /* ends with the struct ibv_context */
	unsigned int port;
	int async_wfd;             /* write end of the async event pipe */
	pthread_mutex_t lock;      /* the CQ, QP and SRQ lists (events.c looks up by serial) */
	TAILQ_HEAD(, droce_vcq) cqs;
	TAILQ_HEAD(, droce_vqp) qps;
	TAILQ_HEAD(, droce_vsrq) srqs;
	TAILQ_HEAD(, droce_vpd) pds;
	int port_up;               /* link state last reported (events.c monitor) */
	TAILQ_ENTRY(droce_vctx) mon_link;
};

struct droce_vmr;
struct droce_vmw;
struct droce_vah;

struct droce_vpd {
	struct ibv_pd pd;
	uint32_t id;
	atomic_uint users;         /* MRs, MWs, AHs, QPs, SRQs */
	/* its MRs, MWs and AHs, so that ibv_close_device() can free what a
	 * program left (under lock) */
	pthread_mutex_t lock;
	TAILQ_HEAD(, droce_vmr) mrs;
	TAILQ_HEAD(, droce_vmw) mws;
	TAILQ_HEAD(, droce_vah) ahs;
	TAILQ_ENTRY(droce_vpd) ctx_link; /* under the context lock */
};

/* Set by the drop-in library's IBVERBS_1.0 layer (compat/ibverbs_1_0.c):
 * the current context a 1.0 program's context stands for, NULL for any
 * other pointer.  For the names both ABIs share that take a context
 * (ibv_create_comp_channel).  NULL in libdroce. */
extern struct ibv_context *(*droce_compat_ctx_1_0)(struct ibv_context *context);

/* A registered MR.  What the engines read is *dmr, replaced whole by
 * ibv_rereg_mr (the keys stay); a replaced one that frames still pointed
 * into when the rereg returned waits in @retired until dereg drains it. */
struct droce_mr_retired {
	struct droce_mr *dmr;
	struct droce_mr_retired *next;
};

struct droce_vmr {
	struct ibv_mr mr;
	struct droce_mr *dmr;
	pthread_mutex_t lock;      /* serialises rereg and dereg */
	struct droce_mr_retired *retired;
	TAILQ_ENTRY(droce_vmr) pd_link;
};

struct droce_vmw {
	struct ibv_mw mw;          /* handle: the rkey at allocation (names the window) */
	struct droce_mw *dmw;
	TAILQ_ENTRY(droce_vmw) pd_link;
};

struct droce_vchan {
	struct ibv_comp_channel ch;
	int wfd;                   /* write end of the event pipe */
	pthread_mutex_t lock;      /* the CQ list */
	TAILQ_HEAD(, droce_vcq) cqs;
	atomic_int users;          /* CQs */
	/* events made (counted before the pipe write or the in-memory mark) and
	 * taken: the spin phase of ibv_get_cq_event sees one without a system call */
	_Atomic uint32_t posted, taken;
	_Atomic uint64_t spin_budget; /* droce_engines_wait_spin's, learnt */
	/* ibv_get_cq_event calls in their spin phase: while there is one, an event
	 * is marked in its CQ (droce_vcq.mem_event) instead of written to the pipe */
	_Atomic uint32_t spinners;
	/* ibv_get_cq_event calls in read(): an event must go to the pipe */
	_Atomic uint32_t sleepers;
	/* an owed event (cq.c: owed_flush) had to be written to the pipe late: the
	 * program watches the fd, so events go there at once until a
	 * ibv_get_cq_event call finds nothing ready and waits */
	_Atomic bool fd_mode;
	/* a forked child's channel (fork_srv.c): the child waits on the fd, so
	 * every event goes to the pipe, none is marked in memory */
	bool remote;
	TAILQ_ENTRY(droce_vchan) all_link; /* cq.c's list of channels, for owed_flush */
};

/* Records written into the event pipes: fixed size, below PIPE_BUF, so
 * every write and read moves whole records. */
struct droce_vevent {
	uint64_t serial;           /* of the CQ or QP */
	uint32_t type;             /* enum ibv_event_type */
	uint32_t pad;
};

struct droce_vcq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cqx;  /* ibv_create_cq_ex's CQs (same leading fields) */
	};
	struct droce_cq *dcq;
	struct droce_vctx *ctx;
	struct droce_vchan *chan;  /* NULL without a completion channel */
	uint64_t serial;
	atomic_uint notify_pending; /* an event is in the channel (pipe or mem_event) */
	atomic_uint mem_event;      /* the event, handed over in memory (cq.c: cq_notify) */
	_Atomic uint64_t mark_tsc;  /* when mem_event was set */
	atomic_uint err_reported;   /* CQ_ERR already queued */
	atomic_uint users;          /* QPs */
	uint32_t comp_reported, async_reported; /* under the channel/context lock */
	TAILQ_ENTRY(droce_vcq) chan_link, ctx_link;
	/* extended polling (cq_ex.c): the completion start/next_poll made current */
	uint64_t wc_flags;          /* IBV_WC_EX_WITH_* asked at creation */
	struct droce_cqe_ts cur;
	int64_t wall_off_ns;        /* CLOCK_REALTIME - the engine clock's ns, at creation */
};

struct droce_vah {
	struct ibv_ah ah;
	struct droce_ah dah;       /* what the engines read */
	struct ibv_ah_attr attr;   /* as created */
	TAILQ_ENTRY(droce_vah) pd_link;
};

struct droce_vqp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qpx;  /* the WR builder (wr.c); qp_base is qp */
	};
	struct droce_qp *dqp;
	enum droce_qp_type type;
	struct ibv_qp_cap cap;     /* what the QP enforces */
	bool sq_sig_all;
	uint16_t max_tso_header;   /* RAW_PACKET: largest wr.tso.hdr_sz */
	uint32_t raw_max_frame;    /* RAW_PACKET: longest frame its port sends */
	int state;                 /* enum ibv_qp_state, atomic loads on the post path */
	pthread_mutex_t lock;      /* serialises modify and query */
	struct ibv_qp_attr attr;   /* last values set */
	uint64_t serial;           /* names it in async event records */
	bool dying;                /* ibv_destroy_qp has begun (context lock) */
	uint32_t async_reported;   /* under the context lock */
	TAILQ_ENTRY(droce_vqp) ctx_link;
	/* the WR builder (wr.c), between ibv_wr_start and ibv_wr_complete/abort,
	 * under the send queue's post lock */
	uint64_t send_ops;         /* IBV_QP_EX_WITH_* asked at creation */
	uint32_t wr_ops_ok;        /* 1 << IBV_WR_* the QP type may post */
	struct droce_sq_batch wr_sq; /* the send queue, first = the batch's first WQE */
	uint32_t wr_n;             /* WQEs in the batch */
	struct droce_wqe *wr_cur;  /* the WQE the setters fill; NULL: none */
	int wr_err;                /* first error in the batch, 0 if none */
	uint8_t wr_need;           /* what wr_cur still lacks (wr.c) */
	bool wr_open;              /* between ibv_wr_start and complete/abort */
	/* XRC (xrcd.c): the role, the domain handle an XRC_RECV QP was created
	 * in; an ibv_open_qp handle forwards to the QP it opened (real) */
	enum droce_xrc_role xrc_role;
	struct droce_vxrcd *xrcd;
	struct droce_vqp *real;    /* NULL: this is the QP itself */
	atomic_uint opened;        /* ibv_open_qp handles alive on this QP */
	/* RSS (wq.c): an RX hash QP's table and hash (receive only, no state);
	 * a WQ's QP names its WQ (only ibv_destroy_wq destroys it) */
	struct droce_vind *rss_tab;
	struct droce_rss_conf rss;
	struct droce_vwq *wq;
};

/* A work queue (wq.c): a receive-only RAW_PACKET QP underneath. */
struct droce_vwq {
	struct ibv_wq wq;
	struct droce_vqp *q;
	atomic_uint users;         /* indirection tables naming it */
};

/* An RSS indirection table (wq.c): 1 << log WQs. */
struct droce_vind {
	struct ibv_rwq_ind_table t;
	uint32_t n;
	struct droce_vwq **wq;
	struct droce_qp **dqp;     /* their QPs, as droce_rss_conf takes them */
	atomic_uint users;         /* RX hash QPs */
};

struct ibv_wq *droce_verbs_create_wq(struct ibv_context *c, struct ibv_wq_init_attr *a);
int droce_verbs_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *a);
int droce_verbs_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *droce_verbs_create_rwq_ind_table(struct ibv_context *c,
							   struct ibv_rwq_ind_table_init_attr *a);
int droce_verbs_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t);
/* ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH / IND_TABLE. */
struct ibv_qp *droce_verbs_create_rss_qp(struct ibv_context *c, struct ibv_qp_init_attr_ex *ax);

/* An XRC domain (xrcd.c): one per inode (or per fd -1 open) in this process,
 * shared by every handle ibv_open_xrcd returned for it. */
struct droce_xrc_domain;

struct droce_vxrcd {
	struct ibv_xrcd xrcd;      /* the handle */
	struct droce_xrc_domain *dom;
	atomic_uint users;         /* XRC SRQs and XRC_RECV QPs made with this handle */
	TAILQ_ENTRY(droce_vxrcd) link; /* every open handle (xrcd.c) */
};

struct droce_vsrq {
	struct ibv_srq srq;
	struct droce_srq *dsrq;
	/* XRC SRQs: the published number, the handle and CQ it was made with */
	uint32_t srqn;             /* 0: a basic SRQ */
	struct droce_vxrcd *xrcd;
	struct droce_vcq *cq;
	uint32_t max_wr, max_sge;  /* what it enforces */
	uint64_t serial;
	uint32_t async_reported;   /* under the context lock */
	atomic_uint users;         /* QPs */
	TAILQ_ENTRY(droce_vsrq) ctx_link;
};

static inline struct droce_vctx *
droce_vctx_of(struct ibv_context *c)
{
	return (struct droce_vctx *)verbs_get_ctx(c);
}

/* The last state set, unless the engine has since moved the QP to ERR/SQE itself. */
static inline int
droce_vqp_state(const struct droce_vqp *q)
{
	int async = q->dqp ? droce_qp_async_state(q->dqp) : -1;

	return async >= 0 ? async : __atomic_load_n(&q->state, __ATOMIC_ACQUIRE);
}

/* Ops the context table points at (post.c, cq.c). */
int droce_verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int droce_verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int droce_verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int droce_verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int droce_verbs_query_port(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *attr,
			   size_t attr_len);

/* Largest enum ibv_mtu whose payload fits in an IP MTU of @ip_mtu bytes. */
enum ibv_mtu droce_verbs_mtu_of(unsigned int ip_mtu);
/* The active MTU of device port @port (droce port index). */
enum ibv_mtu droce_verbs_port_mtu(unsigned int port);

/*
 * Resolves an address vector to a droce_path for a QP on droce port @port.
 * @lqpn and @rqpn pick the UDP source port.  0 or an errno.
 */
int droce_verbs_resolve_path(unsigned int port, const struct ibv_ah_attr *ah, uint32_t lqpn,
			     uint32_t rqpn, struct droce_path *out);

/* The UDP source port for a QP pair (in 0xC000..0xFFFF). */
uint16_t droce_verbs_udp_sport(uint32_t lqpn, uint32_t rqpn, uint32_t flow_label);

int droce_verbs_encode_recv(const struct droce_vqp *q, const struct ibv_recv_wr *wr,
			    struct droce_rqe *rqe);
/* The BIND_MW / LOCAL_INV part of post.c's encode_send (mw.c): 0 or EINVAL. */
int droce_verbs_encode_mw(const struct droce_vqp *q, const struct ibv_send_wr *wr,
			  struct droce_wqe *wqe);

/* Context ops for memory windows (mw.c). */
struct ibv_mw *droce_verbs_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int droce_verbs_dealloc_mw(struct ibv_mw *mw);
int droce_verbs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);

/*
 * The modify_qp transition table: true when moving @cur -> @next on a QP of
 * @type with attribute @mask is allowed (every required attribute present,
 * nothing outside required | optional | IBV_QP_STATE).
 */
bool droce_verbs_modify_ok(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
			   int mask);

/* Async events (events.c). */
/* A fresh serial for an object named in event records. */
uint64_t droce_verbs_serial(void);
/* The QP event callback droce_qp_create_ex() gets (arg: the struct droce_vqp). */
void droce_verbs_qp_event(struct droce_qp *dqp, enum droce_qp_event ev, void *arg);
/* The SRQ limit callback (arg: the struct droce_vsrq). */
void droce_verbs_srq_limit(struct droce_srq *dsrq, void *arg);
/* Context open / close: the port monitor that raises PORT_ACTIVE / PORT_ERR. */
int droce_verbs_events_open(struct droce_vctx *x);
void droce_verbs_events_close(struct droce_vctx *x);
/* Calls @fn for every live QP of every open context, with that context's
 * lock held (the QP cannot be destroyed meanwhile); stops when @fn returns
 * non-zero and returns that value, else 0. */
int droce_verbs_qp_walk(int (*fn)(struct droce_vqp *q, void *arg), void *arg);
/* Unlinks @q from its context's event lookup and waits until every event
 * handed out for it was acknowledged (rdma-core's destroy rule). */
void droce_verbs_qp_events_drain(struct droce_vqp *q);
/* Link state a port reports: the PMD's, unless droce_port_set_link cut it. */
bool droce_verbs_port_is_up(unsigned int port);
/* ibv_post_srq_recv (srq.c). */
int droce_verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr);

/* The WR builder's function pointers for @q (wr.c). */
void droce_verbs_wr_init(struct droce_vqp *q);
/* QP creation shared by ibv_create_qp and ibv_create_qp_ex (qp.c). */
struct ibv_qp *droce_verbs_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia,
				     uint64_t send_ops);
/* Context ops of the extended verbs (device.c, cq_ex.c, qp.c, srq.c). */
int droce_verbs_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
				struct ibv_device_attr_ex *attr, size_t attr_size);
int droce_verbs_query_rt_values(struct ibv_context *c, struct ibv_values_ex *values);
struct ibv_cq_ex *droce_verbs_create_cq_ex(struct ibv_context *c,
					   struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *droce_verbs_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
struct ibv_srq *droce_verbs_create_srq_ex(struct ibv_context *c,
					  struct ibv_srq_init_attr_ex *attr);
/* CQ creation shared by ibv_create_cq and ibv_create_cq_ex (cq.c). */
struct droce_vcq *droce_verbs_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					struct ibv_comp_channel *channel, int comp_vector,
					uint32_t dp_flags);
/* The engines' clock: a TSC value in nanoseconds (cq_ex.c). */
uint64_t droce_verbs_tsc_to_ns(uint64_t tsc);

/* XRC (xrcd.c): the context ops, the XRC SRQ part of create_srq_ex and
 * destroy_srq, the XRC QPs' part of create_qp_ex. */
struct ibv_xrcd *droce_verbs_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a);
int droce_verbs_close_xrcd(struct ibv_xrcd *xrcd);
/* ibv_close_device: closes the handles left open on @c (after its QPs and
 * SRQs are gone): 0 or the first close's errno. */
int droce_verbs_xrcd_close_all(struct ibv_context *c);
int droce_verbs_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_qp *droce_verbs_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a);
struct ibv_srq *droce_verbs_create_xrc_srq(struct ibv_context *c, struct ibv_srq_init_attr_ex *a);
/* Withdraws an XRC SRQ's number before it is destroyed: 0 or EBUSY. */
int droce_verbs_xrc_srq_retire(struct droce_vsrq *s);
/* The domain id of an XRC handle (what the dataplane compares). */
uint32_t droce_verbs_xrcd_id(const struct droce_vxrcd *x);
/* The QP an ibv_open_qp handle stands for (the QP itself otherwise). */
static inline struct droce_vqp *
droce_vqp_real(struct ibv_qp *qp)
{
	struct droce_vqp *q = (struct droce_vqp *)qp;

	return q != NULL && q->real != NULL ? q->real : q;
}
/* The dataplane's QP type for the post-time opcode table (qp.c). */
enum droce_qp_type droce_verbs_dp_type(enum ibv_qp_type t);
/* The XRC role of @ia's type and its checks (xrcd.c): 0 or EINVAL. */
int droce_verbs_xrc_role_of(struct ibv_context *c, struct ibv_pd *pd, struct ibv_qp_init_attr *ia,
			    struct droce_vxrcd *xrcd, enum droce_xrc_role *role);
/* QP creation for every type ibv_create_qp_ex makes (qp.c); @xrcd for XRC_RECV. */
int droce_verbs_wqe_data(const struct droce_vqp *q, const struct ibv_send_wr *wr,
			 struct droce_wqe *wqe, uint64_t *total);
/* @max_tso_header: RAW_PACKET only (ibv_create_qp_ex), 0 otherwise */
struct ibv_qp *droce_verbs_create_qp_in(struct ibv_context *c, struct ibv_pd *pd,
					struct ibv_qp_init_attr *ia, uint64_t send_ops,
					struct droce_vxrcd *xrcd, uint32_t max_tso_header);

/* Starts the runtime once (droce_start(NULL) + engines); 0 or -1 with errno. */
int droce_verbs_runtime_up(void);

/* RAW_PACKET QPs (raw.c) and their flows (flow.c) */
bool droce_verbs_raw_modify_ok(enum ibv_qp_state cur, enum ibv_qp_state next, int mask);
int droce_verbs_encode_raw(const struct droce_vqp *q, const struct ibv_send_wr *wr,
			   struct droce_wqe *wqe);
/* Checks @hdr_sz / @mss and copies the TSO header into @w; 0 or EINVAL. */
int droce_verbs_raw_tso_hdr(const struct droce_vqp *q, struct droce_wqe *w, const void *hdr,
			    uint16_t hdr_sz, uint16_t mss);
/* The lengths of a complete RAW_PACKET WQE; 0 or EINVAL. */
int droce_verbs_raw_check(const struct droce_vqp *q, const struct droce_wqe *w);
struct ibv_flow *droce_verbs_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int droce_verbs_destroy_flow(struct ibv_flow *flow);

#endif /* DROCE_VERBS_API_INTERNAL_H */
