/* SPDX-License-Identifier: BSD-3-Clause
 * Over 950 lines: the 1.0 layouts of every object and the 33 wrappers over them belong together (one ABI).
 * libibverbs' IBVERBS_1.0 ABI: the names a program linked against
 * libibverbs 1.0 (before the 1.1 structures of 2006) imports, for example
 * ibv_create_qp@IBVERBS_1.0.  rdma-core 44 still exports them, so droce's
 * drop-in libibverbs.so.1 does too.
 *
 * In the 1.0 ABI every object is a smaller structure whose first fields a
 * 1.0 program reads directly (context, handles, keys, QP number) and whose
 * context carries the operations table the 1.0 header's inline functions
 * call: ibv_poll_cq, ibv_req_notify_cq, ibv_post_send, ibv_post_recv and
 * ibv_post_srq_recv jump through ctx->ops.  Each 1.0 object here wraps a
 * droce object made by the current API: it ends with a pointer to it, the
 * current object's user context (cq_context, qp_context, srq_context)
 * points back at the wrapper so completion and async events can be
 * translated, and the user's own context is kept in the wrapper.  Work
 * requests are translated per call (the 1.0 send WR has no XRC / bind / TSO
 * fields, and a UD WR names a 1.0 address handle).
 *
 * The layouts below are the 1.0 ABI (libibverbs 1.0's <infiniband/verbs.h>):
 * changing one breaks the binaries this file exists for.  Built only into
 * the drop-in library (its version script defines IBVERBS_1.0); the
 * functions are bound to their versioned names with symver attributes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define COMPAT_1_0(name) __attribute__((symver(#name "@IBVERBS_1.0")))

struct ibv_device_1_0;
struct ibv_context_1_0;
struct ibv_cq_1_0;
struct ibv_qp_1_0;
struct ibv_srq_1_0;
struct ibv_ah_1_0;

struct ibv_pd_1_0 {
	struct ibv_context_1_0 *context;
	uint32_t handle;
	struct ibv_pd *real_pd;
};

struct ibv_mr_1_0 {
	struct ibv_context_1_0 *context;
	struct ibv_pd_1_0 *pd;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
	struct ibv_mr *real_mr;
};

struct ibv_srq_1_0 {
	struct ibv_context_1_0 *context;
	void *srq_context;
	struct ibv_pd_1_0 *pd;
	uint32_t handle;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
	struct ibv_srq *real_srq;
};

struct ibv_qp_init_attr_1_0 {
	void *qp_context;
	struct ibv_cq_1_0 *send_cq;
	struct ibv_cq_1_0 *recv_cq;
	struct ibv_srq_1_0 *srq;
	struct ibv_qp_cap cap;
	enum ibv_qp_type qp_type;
	int sq_sig_all;
};

struct ibv_send_wr_1_0 {
	struct ibv_send_wr_1_0 *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
	enum ibv_wr_opcode opcode;
	int send_flags;
	__be32 imm_data;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct ibv_ah_1_0 *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
};

struct ibv_recv_wr_1_0 {
	struct ibv_recv_wr_1_0 *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
};

struct ibv_qp_1_0 {
	struct ibv_context_1_0 *context;
	void *qp_context;
	struct ibv_pd_1_0 *pd;
	struct ibv_cq_1_0 *send_cq;
	struct ibv_cq_1_0 *recv_cq;
	struct ibv_srq_1_0 *srq;
	uint32_t handle;
	uint32_t qp_num;
	enum ibv_qp_state state;
	enum ibv_qp_type qp_type;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
	struct ibv_qp *real_qp;
};

struct ibv_cq_1_0 {
	struct ibv_context_1_0 *context;
	void *cq_context;
	uint32_t handle;
	int cqe;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t comp_events_completed;
	uint32_t async_events_completed;
	struct ibv_cq *real_cq;
};

struct ibv_ah_1_0 {
	struct ibv_context_1_0 *context;
	struct ibv_pd_1_0 *pd;
	uint32_t handle;
	struct ibv_ah *real_ah;
};

struct ibv_device_1_0 {
	void *obsolete_sysfs_dev;
	void *obsolete_sysfs_ibdev;
	struct ibv_device *real_device; /* the 1.0 driver pointer's place */
	struct _ibv_device_ops _ops;
};

/* The 1.0 operations table, in its order.  Only the five entries the 1.0
 * header's inline functions call are set; the rest were never part of the
 * programs' interface (NULL). */
struct ibv_context_ops_1_0 {
	void *query_device, *query_port, *alloc_pd, *dealloc_pd, *reg_mr, *dereg_mr, *create_cq;
	int (*poll_cq)(struct ibv_cq_1_0 *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq_1_0 *cq, int solicited_only);
	void *cq_event, *resize_cq, *destroy_cq, *create_srq, *modify_srq, *query_srq, *destroy_srq;
	int (*post_srq_recv)(struct ibv_srq_1_0 *srq, struct ibv_recv_wr_1_0 *recv_wr,
			     struct ibv_recv_wr_1_0 **bad_recv_wr);
	void *create_qp, *query_qp, *modify_qp, *destroy_qp;
	int (*post_send)(struct ibv_qp_1_0 *qp, struct ibv_send_wr_1_0 *wr,
			 struct ibv_send_wr_1_0 **bad_wr);
	int (*post_recv)(struct ibv_qp_1_0 *qp, struct ibv_recv_wr_1_0 *wr,
			 struct ibv_recv_wr_1_0 **bad_wr);
	void *create_ah, *destroy_ah, *attach_mcast, *detach_mcast;
};

struct ibv_context_1_0 {
	struct ibv_device_1_0 *device;
	struct ibv_context_ops_1_0 ops;
	int cmd_fd;
	int async_fd;
	int num_comp_vectors;
	struct ibv_context *real_context; /* the 1.0 abi_compat member's place */
};

/* The 1.0 layouts as the 64-bit 1.0 ABI has them (the inline functions of a
 * 1.0 program read ops at these offsets). */
_Static_assert(offsetof(struct ibv_context_1_0, ops) == 8, "1.0 ABI");
_Static_assert(offsetof(struct ibv_context_ops_1_0, poll_cq) == 7 * sizeof(void *), "1.0 ABI");
_Static_assert(offsetof(struct ibv_context_ops_1_0, post_srq_recv) == 16 * sizeof(void *), "1.0 ABI");
_Static_assert(offsetof(struct ibv_context_ops_1_0, post_send) == 21 * sizeof(void *), "1.0 ABI");
_Static_assert(sizeof(struct ibv_context_ops_1_0) == 27 * sizeof(void *), "1.0 ABI");
_Static_assert(offsetof(struct ibv_send_wr_1_0, wr) == 40, "1.0 ABI");

/* ---- devices ---- */

/* What ibv_get_device_list@IBVERBS_1.0 hands out: the 1.0 array (NULL
 * terminated) follows the current list and the wrappers it points at. */
struct device_list_1_0 {
	struct ibv_device **real;
	struct ibv_device_1_0 *devs;
	struct ibv_device_1_0 *list[]; /* what the program gets */
};

COMPAT_1_0(ibv_get_device_list) struct ibv_device_1_0 **ibv_get_device_list_1_0(int *num);
struct ibv_device_1_0 **
ibv_get_device_list_1_0(int *num)
{
	struct device_list_1_0 *l;
	struct ibv_device **real;
	int n;

	real = ibv_get_device_list(&n);
	if (real == NULL)
		return NULL;
	l = calloc(1, sizeof(*l) + (size_t)(n + 1) * sizeof(l->list[0]));
	if (l != NULL)
		l->devs = calloc((size_t)n + 1, sizeof(*l->devs));
	if (l == NULL || l->devs == NULL) {
		free(l);
		ibv_free_device_list(real);
		errno = ENOMEM;
		return NULL;
	}
	l->real = real;
	for (int i = 0; i < n; i++) {
		l->devs[i].real_device = real[i];
		l->list[i] = &l->devs[i];
	}
	if (num)
		*num = n;
	return l->list;
}

COMPAT_1_0(ibv_free_device_list) void ibv_free_device_list_1_0(struct ibv_device_1_0 **list);
void
ibv_free_device_list_1_0(struct ibv_device_1_0 **list)
{
	struct device_list_1_0 *l;

	if (list == NULL)
		return;
	l = (struct device_list_1_0 *)((char *)list - offsetof(struct device_list_1_0, list));
	ibv_free_device_list(l->real);
	free(l->devs);
	free(l);
}

COMPAT_1_0(ibv_get_device_name) const char *ibv_get_device_name_1_0(struct ibv_device_1_0 *device);
const char *
ibv_get_device_name_1_0(struct ibv_device_1_0 *device)
{
	return ibv_get_device_name(device->real_device);
}

COMPAT_1_0(ibv_get_device_guid) __be64 ibv_get_device_guid_1_0(struct ibv_device_1_0 *device);
__be64
ibv_get_device_guid_1_0(struct ibv_device_1_0 *device)
{
	return ibv_get_device_guid(device->real_device);
}

/* ---- the data path the 1.0 inline functions reach through ctx->ops ---- */

/* A work request list's translation: up to SMALL_LIST on the stack. */
#define SMALL_LIST 16

static int
poll_cq_1_0(struct ibv_cq_1_0 *cq, int num_entries, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq->real_cq, num_entries, wc);
}

static int
req_notify_cq_1_0(struct ibv_cq_1_0 *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq->real_cq, solicited_only);
}

static size_t
recv_list_len(const struct ibv_recv_wr_1_0 *wr)
{
	size_t n = 0;

	for (; wr; wr = wr->next)
		n++;
	return n;
}

/* Translates the 1.0 receive list @wr into @out (@n entries, linked). */
static void
recv_list_make(const struct ibv_recv_wr_1_0 *wr, struct ibv_recv_wr *out, size_t n)
{
	for (size_t i = 0; i < n; i++, wr = wr->next) {
		out[i] = (struct ibv_recv_wr){ .wr_id = wr->wr_id,
					       .sg_list = wr->sg_list,
					       .num_sge = wr->num_sge,
					       .next = i + 1 < n ? &out[i + 1] : NULL };
	}
}

/* The 1.0 WR at the position of @bad in @out. */
static void *
bad_1_0(void *list, const void *out, const void *bad, size_t elem, size_t next_off)
{
	size_t k = bad ? (size_t)((const char *)bad - (const char *)out) / elem : 0;
	char *w = list;

	while (k-- > 0 && w)
		w = *(char **)(w + next_off);
	return w;
}

typedef int (*post_recv_fn)(void *obj, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

static int
post_recv_list(void *obj, post_recv_fn post, struct ibv_recv_wr_1_0 *wr,
	       struct ibv_recv_wr_1_0 **bad_wr)
{
	struct ibv_recv_wr small[SMALL_LIST], *out = small, *bad = NULL;
	size_t n = recv_list_len(wr);
	int rc;

	if (n == 0)
		return 0;
	if (n > SMALL_LIST && (out = calloc(n, sizeof(*out))) == NULL) {
		*bad_wr = wr;
		return ENOMEM;
	}
	recv_list_make(wr, out, n);
	rc = post(obj, out, &bad);
	if (rc != 0)
		*bad_wr = bad_1_0(wr, out, bad, sizeof(*out), offsetof(struct ibv_recv_wr_1_0, next));
	if (out != small)
		free(out);
	return rc;
}

static int
post_qp_recv(void *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

static int
post_srq_recv(void *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_srq_recv(srq, wr, bad);
}

static int
post_recv_1_0(struct ibv_qp_1_0 *qp, struct ibv_recv_wr_1_0 *wr, struct ibv_recv_wr_1_0 **bad_wr)
{
	return post_recv_list(qp->real_qp, post_qp_recv, wr, bad_wr);
}

static int
post_srq_recv_1_0(struct ibv_srq_1_0 *srq, struct ibv_recv_wr_1_0 *wr,
		  struct ibv_recv_wr_1_0 **bad_wr)
{
	return post_recv_list(srq->real_srq, post_srq_recv, wr, bad_wr);
}

static void
send_wr_make(const struct ibv_send_wr_1_0 *w, struct ibv_send_wr *o, bool ud)
{
	memset(o, 0, sizeof(*o));
	o->wr_id = w->wr_id;
	o->sg_list = w->sg_list;
	o->num_sge = w->num_sge;
	o->opcode = w->opcode;
	o->send_flags = (unsigned int)w->send_flags;
	o->imm_data = w->imm_data;
	if (ud) {
		o->wr.ud.ah = w->wr.ud.ah ? w->wr.ud.ah->real_ah : NULL;
		o->wr.ud.remote_qpn = w->wr.ud.remote_qpn;
		o->wr.ud.remote_qkey = w->wr.ud.remote_qkey;
	} else if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		o->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		o->wr.atomic.compare_add = w->wr.atomic.compare_add;
		o->wr.atomic.swap = w->wr.atomic.swap;
		o->wr.atomic.rkey = w->wr.atomic.rkey;
	} else {
		o->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		o->wr.rdma.rkey = w->wr.rdma.rkey;
	}
}

static int
post_send_1_0(struct ibv_qp_1_0 *qp, struct ibv_send_wr_1_0 *wr, struct ibv_send_wr_1_0 **bad_wr)
{
	struct ibv_send_wr small[SMALL_LIST], *out = small, *bad = NULL;
	const struct ibv_send_wr_1_0 *w;
	size_t n = 0, i = 0;
	int rc;

	for (w = wr; w; w = w->next)
		n++;
	if (n == 0)
		return 0;
	if (n > SMALL_LIST && (out = calloc(n, sizeof(*out))) == NULL) {
		*bad_wr = wr;
		return ENOMEM;
	}
	for (w = wr; w; w = w->next, i++) {
		send_wr_make(w, &out[i], qp->qp_type == IBV_QPT_UD);
		out[i].next = i + 1 < n ? &out[i + 1] : NULL;
	}
	rc = ibv_post_send(qp->real_qp, out, &bad);
	if (rc != 0)
		*bad_wr = bad_1_0(wr, out, bad, sizeof(*out), offsetof(struct ibv_send_wr_1_0, next));
	if (out != small)
		free(out);
	return rc;
}

/* ---- contexts and async events ---- */

/* The 1.0 contexts open now: ibv_create_comp_channel, a name both ABIs
 * share, is given one by a 1.0 program (droce_compat_ctx_1_0, cq.c). */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_context_1_0 **ctxs;
static size_t n_ctxs, cap_ctxs;

extern struct ibv_context *(*droce_compat_ctx_1_0)(struct ibv_context *context);

static bool
ctx_add(struct ibv_context_1_0 *c)
{
	bool ok = true;

	pthread_mutex_lock(&ctx_lock);
	if (n_ctxs == cap_ctxs) {
		size_t cap = cap_ctxs ? 2 * cap_ctxs : 8;
		struct ibv_context_1_0 **n = realloc(ctxs, cap * sizeof(*n));

		if (n == NULL)
			ok = false;
		else {
			ctxs = n;
			cap_ctxs = cap;
		}
	}
	if (ok)
		ctxs[n_ctxs++] = c;
	pthread_mutex_unlock(&ctx_lock);
	return ok;
}

static void
ctx_del(struct ibv_context_1_0 *c)
{
	pthread_mutex_lock(&ctx_lock);
	for (size_t i = 0; i < n_ctxs; i++)
		if (ctxs[i] == c) {
			ctxs[i] = ctxs[--n_ctxs];
			break;
		}
	pthread_mutex_unlock(&ctx_lock);
}

static struct ibv_context *
real_context_of(struct ibv_context *maybe)
{
	struct ibv_context *real = NULL;

	pthread_mutex_lock(&ctx_lock);
	for (size_t i = 0; i < n_ctxs && real == NULL; i++)
		if ((void *)ctxs[i] == (void *)maybe)
			real = ctxs[i]->real_context;
	pthread_mutex_unlock(&ctx_lock);
	return real;
}

__attribute__((constructor)) static void
compat_1_0_init(void)
{
	droce_compat_ctx_1_0 = real_context_of;
}

COMPAT_1_0(ibv_open_device) struct ibv_context_1_0 *ibv_open_device_1_0(struct ibv_device_1_0 *device);
struct ibv_context_1_0 *
ibv_open_device_1_0(struct ibv_device_1_0 *device)
{
	struct ibv_context_1_0 *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->real_context = ibv_open_device(device->real_device);
	if (ctx->real_context == NULL) {
		free(ctx);
		return NULL;
	}
	ctx->device = device;
	ctx->cmd_fd = ctx->real_context->cmd_fd;
	ctx->async_fd = ctx->real_context->async_fd;
	ctx->num_comp_vectors = ctx->real_context->num_comp_vectors;
	ctx->ops.poll_cq = poll_cq_1_0;
	ctx->ops.req_notify_cq = req_notify_cq_1_0;
	ctx->ops.post_send = post_send_1_0;
	ctx->ops.post_recv = post_recv_1_0;
	ctx->ops.post_srq_recv = post_srq_recv_1_0;
	if (!ctx_add(ctx)) {
		ibv_close_device(ctx->real_context);
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	return ctx;
}

COMPAT_1_0(ibv_close_device) int ibv_close_device_1_0(struct ibv_context_1_0 *context);
int
ibv_close_device_1_0(struct ibv_context_1_0 *context)
{
	int rc = ibv_close_device(context->real_context);

	if (rc == 0) {
		ctx_del(context);
		free(context);
	}
	return rc;
}

/* Which object an async event names. */
enum event_obj { EV_OTHER, EV_CQ, EV_QP, EV_SRQ };

static enum event_obj
event_obj(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return EV_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return EV_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return EV_SRQ;
	default:
		return EV_OTHER;
	}
}

/* The event's object becomes the 1.0 wrapper (the current object's user
 * context points at it). */
COMPAT_1_0(ibv_get_async_event) int ibv_get_async_event_1_0(struct ibv_context_1_0 *context, struct ibv_async_event *event);
int
ibv_get_async_event_1_0(struct ibv_context_1_0 *context, struct ibv_async_event *event)
{
	int rc = ibv_get_async_event(context->real_context, event);

	if (rc != 0)
		return rc;
	switch (event_obj(event->event_type)) {
	case EV_CQ:
		event->element.cq = event->element.cq->cq_context;
		break;
	case EV_QP:
		event->element.qp = event->element.qp->qp_context;
		break;
	case EV_SRQ:
		event->element.srq = event->element.srq->srq_context;
		break;
	case EV_OTHER:
		break;
	}
	return 0;
}

COMPAT_1_0(ibv_ack_async_event) void ibv_ack_async_event_1_0(struct ibv_async_event *event);
void
ibv_ack_async_event_1_0(struct ibv_async_event *event)
{
	struct ibv_async_event real = *event;

	switch (event_obj(event->event_type)) {
	case EV_CQ:
		real.element.cq = ((struct ibv_cq_1_0 *)(void *)event->element.cq)->real_cq;
		break;
	case EV_QP:
		real.element.qp = ((struct ibv_qp_1_0 *)(void *)event->element.qp)->real_qp;
		break;
	case EV_SRQ:
		real.element.srq = ((struct ibv_srq_1_0 *)(void *)event->element.srq)->real_srq;
		break;
	case EV_OTHER:
		break;
	}
	ibv_ack_async_event(&real);
}

COMPAT_1_0(ibv_query_device) int ibv_query_device_1_0(struct ibv_context_1_0 *context, struct ibv_device_attr *attr);
int
ibv_query_device_1_0(struct ibv_context_1_0 *context, struct ibv_device_attr *attr)
{
	return ibv_query_device(context->real_context, attr);
}

COMPAT_1_0(ibv_query_port) int ibv_query_port_1_0(struct ibv_context_1_0 *context, uint8_t port_num, struct ibv_port_attr *attr);
int
ibv_query_port_1_0(struct ibv_context_1_0 *context, uint8_t port_num, struct ibv_port_attr *attr)
{
	/* the function, not verbs.h's inline (which would write the newer
	 * fields' comp_mask path); 1.0's ibv_port_attr is a prefix of today's */
	return (ibv_query_port)(context->real_context, port_num,
				(struct _compat_ibv_port_attr *)(void *)attr);
}

COMPAT_1_0(ibv_query_gid) int ibv_query_gid_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index, union ibv_gid *gid);
int
ibv_query_gid_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	return ibv_query_gid(context->real_context, port_num, index, gid);
}

COMPAT_1_0(ibv_query_pkey) int ibv_query_pkey_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index, __be16 *pkey);
int
ibv_query_pkey_1_0(struct ibv_context_1_0 *context, uint8_t port_num, int index, __be16 *pkey)
{
	return ibv_query_pkey(context->real_context, port_num, index, pkey);
}

/* ---- PDs, MRs, AHs ---- */

COMPAT_1_0(ibv_alloc_pd) struct ibv_pd_1_0 *ibv_alloc_pd_1_0(struct ibv_context_1_0 *context);
struct ibv_pd_1_0 *
ibv_alloc_pd_1_0(struct ibv_context_1_0 *context)
{
	struct ibv_pd_1_0 *pd = calloc(1, sizeof(*pd));

	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->real_pd = ibv_alloc_pd(context->real_context);
	if (pd->real_pd == NULL) {
		free(pd);
		return NULL;
	}
	pd->context = context;
	pd->handle = pd->real_pd->handle;
	return pd;
}

COMPAT_1_0(ibv_dealloc_pd) int ibv_dealloc_pd_1_0(struct ibv_pd_1_0 *pd);
int
ibv_dealloc_pd_1_0(struct ibv_pd_1_0 *pd)
{
	int rc = ibv_dealloc_pd(pd->real_pd);

	if (rc == 0)
		free(pd);
	return rc;
}

COMPAT_1_0(ibv_reg_mr) struct ibv_mr_1_0 *ibv_reg_mr_1_0(struct ibv_pd_1_0 *pd, void *addr, size_t length, int access);
struct ibv_mr_1_0 *
ibv_reg_mr_1_0(struct ibv_pd_1_0 *pd, void *addr, size_t length, int access)
{
	struct ibv_mr_1_0 *mr = calloc(1, sizeof(*mr));

	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mr->real_mr = (ibv_reg_mr)(pd->real_pd, addr, length, access);
	if (mr->real_mr == NULL) {
		free(mr);
		return NULL;
	}
	mr->context = pd->context;
	mr->pd = pd;
	mr->handle = mr->real_mr->handle;
	mr->lkey = mr->real_mr->lkey;
	mr->rkey = mr->real_mr->rkey;
	return mr;
}

COMPAT_1_0(ibv_dereg_mr) int ibv_dereg_mr_1_0(struct ibv_mr_1_0 *mr);
int
ibv_dereg_mr_1_0(struct ibv_mr_1_0 *mr)
{
	int rc = ibv_dereg_mr(mr->real_mr);

	if (rc == 0)
		free(mr);
	return rc;
}

COMPAT_1_0(ibv_create_ah) struct ibv_ah_1_0 *ibv_create_ah_1_0(struct ibv_pd_1_0 *pd, struct ibv_ah_attr *attr);
struct ibv_ah_1_0 *
ibv_create_ah_1_0(struct ibv_pd_1_0 *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah_1_0 *ah = calloc(1, sizeof(*ah));

	if (ah == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ah->real_ah = ibv_create_ah(pd->real_pd, attr);
	if (ah->real_ah == NULL) {
		free(ah);
		return NULL;
	}
	ah->context = pd->context;
	ah->pd = pd;
	ah->handle = ah->real_ah->handle;
	return ah;
}

COMPAT_1_0(ibv_destroy_ah) int ibv_destroy_ah_1_0(struct ibv_ah_1_0 *ah);
int
ibv_destroy_ah_1_0(struct ibv_ah_1_0 *ah)
{
	int rc = ibv_destroy_ah(ah->real_ah);

	if (rc == 0)
		free(ah);
	return rc;
}

/* ---- CQs ---- */

COMPAT_1_0(ibv_create_cq) struct ibv_cq_1_0 *ibv_create_cq_1_0(struct ibv_context_1_0 *context, int cqe, void *cq_context, struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_1_0 *
ibv_create_cq_1_0(struct ibv_context_1_0 *context, int cqe, void *cq_context,
		  struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_1_0 *cq = calloc(1, sizeof(*cq));

	if (cq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	cq->real_cq = ibv_create_cq(context->real_context, cqe, cq, channel, comp_vector);
	if (cq->real_cq == NULL) {
		free(cq);
		return NULL;
	}
	cq->context = context;
	cq->cq_context = cq_context;
	cq->handle = cq->real_cq->handle;
	cq->cqe = cq->real_cq->cqe;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	return cq;
}

COMPAT_1_0(ibv_resize_cq) int ibv_resize_cq_1_0(struct ibv_cq_1_0 *cq, int cqe);
int
ibv_resize_cq_1_0(struct ibv_cq_1_0 *cq, int cqe)
{
	int rc = ibv_resize_cq(cq->real_cq, cqe);

	if (rc == 0)
		cq->cqe = cq->real_cq->cqe;
	return rc;
}

COMPAT_1_0(ibv_destroy_cq) int ibv_destroy_cq_1_0(struct ibv_cq_1_0 *cq);
int
ibv_destroy_cq_1_0(struct ibv_cq_1_0 *cq)
{
	int rc = ibv_destroy_cq(cq->real_cq);

	if (rc != 0)
		return rc;
	pthread_cond_destroy(&cq->cond);
	pthread_mutex_destroy(&cq->mutex);
	free(cq);
	return 0;
}

/* The CQ's user context is the 1.0 wrapper (ibv_create_cq_1_0). */
COMPAT_1_0(ibv_get_cq_event) int ibv_get_cq_event_1_0(struct ibv_comp_channel *channel, struct ibv_cq_1_0 **cq, void **cq_context);
int
ibv_get_cq_event_1_0(struct ibv_comp_channel *channel, struct ibv_cq_1_0 **cq, void **cq_context)
{
	struct ibv_cq *real;
	void *wrapper;
	int rc = ibv_get_cq_event(channel, &real, &wrapper);

	if (rc != 0)
		return rc;
	*cq = wrapper;
	*cq_context = (*cq)->cq_context;
	return 0;
}

COMPAT_1_0(ibv_ack_cq_events) void ibv_ack_cq_events_1_0(struct ibv_cq_1_0 *cq, unsigned int nevents);
void
ibv_ack_cq_events_1_0(struct ibv_cq_1_0 *cq, unsigned int nevents)
{
	ibv_ack_cq_events(cq->real_cq, nevents);
}

/* ---- SRQs ---- */

COMPAT_1_0(ibv_create_srq) struct ibv_srq_1_0 *ibv_create_srq_1_0(struct ibv_pd_1_0 *pd, struct ibv_srq_init_attr *attr);
struct ibv_srq_1_0 *
ibv_create_srq_1_0(struct ibv_pd_1_0 *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_1_0 *srq = calloc(1, sizeof(*srq));
	void *user_context;

	if (srq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	user_context = attr->srq_context;
	attr->srq_context = srq;
	srq->real_srq = ibv_create_srq(pd->real_pd, attr);
	attr->srq_context = user_context;
	if (srq->real_srq == NULL) {
		free(srq);
		return NULL;
	}
	srq->context = pd->context;
	srq->srq_context = user_context;
	srq->pd = pd;
	srq->handle = srq->real_srq->handle;
	pthread_mutex_init(&srq->mutex, NULL);
	pthread_cond_init(&srq->cond, NULL);
	return srq;
}

COMPAT_1_0(ibv_modify_srq) int ibv_modify_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *attr, int mask);
int
ibv_modify_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *attr, int mask)
{
	return ibv_modify_srq(srq->real_srq, attr, mask);
}

COMPAT_1_0(ibv_query_srq) int ibv_query_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *attr);
int
ibv_query_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *attr)
{
	return ibv_query_srq(srq->real_srq, attr);
}

COMPAT_1_0(ibv_destroy_srq) int ibv_destroy_srq_1_0(struct ibv_srq_1_0 *srq);
int
ibv_destroy_srq_1_0(struct ibv_srq_1_0 *srq)
{
	int rc = ibv_destroy_srq(srq->real_srq);

	if (rc != 0)
		return rc;
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&srq->mutex);
	free(srq);
	return 0;
}

/* ---- QPs ---- */

COMPAT_1_0(ibv_create_qp) struct ibv_qp_1_0 *ibv_create_qp_1_0(struct ibv_pd_1_0 *pd, struct ibv_qp_init_attr_1_0 *attr);
struct ibv_qp_1_0 *
ibv_create_qp_1_0(struct ibv_pd_1_0 *pd, struct ibv_qp_init_attr_1_0 *attr)
{
	struct ibv_qp_init_attr real_attr;
	struct ibv_qp_1_0 *qp;

	if (attr == NULL || attr->send_cq == NULL || attr->recv_cq == NULL) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&real_attr, 0, sizeof(real_attr));
	real_attr.qp_context = qp;
	real_attr.send_cq = attr->send_cq->real_cq;
	real_attr.recv_cq = attr->recv_cq->real_cq;
	real_attr.srq = attr->srq ? attr->srq->real_srq : NULL;
	real_attr.cap = attr->cap;
	real_attr.qp_type = attr->qp_type;
	real_attr.sq_sig_all = attr->sq_sig_all;
	qp->real_qp = ibv_create_qp(pd->real_pd, &real_attr);
	if (qp->real_qp == NULL) {
		free(qp);
		return NULL;
	}
	attr->cap = real_attr.cap;
	qp->context = pd->context;
	qp->qp_context = attr->qp_context;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->handle = qp->real_qp->handle;
	qp->qp_num = qp->real_qp->qp_num;
	qp->state = qp->real_qp->state;
	qp->qp_type = attr->qp_type;
	pthread_mutex_init(&qp->mutex, NULL);
	pthread_cond_init(&qp->cond, NULL);
	return qp;
}

COMPAT_1_0(ibv_query_qp) int ibv_query_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr_1_0 *init_attr);
int
ibv_query_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr_1_0 *init_attr)
{
	struct ibv_qp_init_attr real_init;
	int rc = ibv_query_qp(qp->real_qp, attr, mask, &real_init);

	if (rc != 0)
		return rc;
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap = real_init.cap;
	init_attr->qp_type = real_init.qp_type;
	init_attr->sq_sig_all = real_init.sq_sig_all;
	return 0;
}

COMPAT_1_0(ibv_modify_qp) int ibv_modify_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int mask);
int
ibv_modify_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr, int mask)
{
	int rc = ibv_modify_qp(qp->real_qp, attr, mask);

	if (rc == 0 && (mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	return rc;
}

COMPAT_1_0(ibv_destroy_qp) int ibv_destroy_qp_1_0(struct ibv_qp_1_0 *qp);
int
ibv_destroy_qp_1_0(struct ibv_qp_1_0 *qp)
{
	int rc = ibv_destroy_qp(qp->real_qp);

	if (rc != 0)
		return rc;
	pthread_cond_destroy(&qp->cond);
	pthread_mutex_destroy(&qp->mutex);
	free(qp);
	return 0;
}

COMPAT_1_0(ibv_attach_mcast) int ibv_attach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid);
int
ibv_attach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid)
{
	return ibv_attach_mcast(qp->real_qp, gid, lid);
}

COMPAT_1_0(ibv_detach_mcast) int ibv_detach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid);
int
ibv_detach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid, uint16_t lid)
{
	return ibv_detach_mcast(qp->real_qp, gid, lid);
}

/* ---- IBVERBS_1.1's ibv_register_driver (no default version) ---- */

/* Drivers registered themselves with it before rdma-core 13 made the
 * provider interface private; old libfabric usnic providers still call it.
 * droce loads no providers: nothing to register. */
__attribute__((symver("ibv_register_driver@IBVERBS_1.1"))) void
ibv_register_driver_1_1(const char *name, void *init_func);
void
ibv_register_driver_1_1(const char *name, void *init_func)
{
	(void)name;
	(void)init_func;
}
