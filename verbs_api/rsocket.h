/* SPDX-License-Identifier: BSD-3-Clause
 * rsockets (librdmacm's socket API, <rdma/rsocket.h>) over droce's rdma_cm
 * and verbs, speaking rdma-core's rsocket wire protocol (librdmacm/docs/
 * rsocket): what rsocket.c (sockets, connections, options), rsocket_io.c
 * (the data path) and rpoll.c (rpoll, rselect) share.
 *
 * The protocol, as rdma-core 44 speaks it on the wire:
 * - The REQ's and the REP's private data is a struct droce_rs_conn_data
 *   (version 1): the initial receive credits, the address/rkey of the
 *   sender's target SGL (two struct droce_rs_sge, then the iomap entries),
 *   and the first half of its receive buffer.
 * - Every message is an RDMA WRITE WITH IMMEDIATE; the immediate's top 3 bits
 *   are the op (enum droce_rs_op), the low 29 its argument: DATA (bytes
 *   written into the peer's receive buffer at the current target SGE),
 *   SGL (credits: the peer may send while its sequence number differs from
 *   this one; the write itself may update one of our target SGEs with a
 *   freed half of the peer's receive buffer), IOMAP_SGL (an iomap entry was
 *   written) and CTRL (DISCONNECT, KEEPALIVE, SHUTDOWN; zero-length).
 * - riowrite's direct transfers are plain RDMA WRITEs into an iomapped buffer.
 *
 * Threading: every entry point may be called from any thread.  A socket's
 * mutex guards all its state; it is let go only while a call waits in poll()
 * on the socket's CQ and CM channels.  The descriptor table is read without a
 * lock (atomic slots) and written under its own mutex; a socket is freed by
 * rclose only, which takes it out of the table first.
 */
#ifndef DROCE_VERBS_API_RSOCKET_H
#define DROCE_VERBS_API_RSOCKET_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define RS_HIDDEN __attribute__((visibility("hidden")))

/* rdma-core's defaults and limits (rsocket.c), so both ends size alike. */
#define DROCE_RS_OLAP_START 2048u     /* first chunk of a send, doubling... */
#define DROCE_RS_MAX_TRANSFER 65536u  /* ...up to this */
#define DROCE_RS_SNDLOWAT 2048u       /* writable while this much send buffer is free */
#define DROCE_RS_QP_MIN 16u
#define DROCE_RS_QP_MAX 0xFFFEu
#define DROCE_RS_CTRL_SLOTS 4u        /* send slots reserved for control messages */
#define DROCE_RS_SGL_SIZE 2u          /* target SGEs: the two halves of a receive buffer */
#define DROCE_RS_DEF_INLINE 64u
#define DROCE_RS_DEF_QSIZE 384u
#define DROCE_RS_DEF_MEM (1u << 17)
#define DROCE_RS_CONN_VERSION 1
#define DROCE_RS_CONN_FLAG_NET 0x1    /* sender is big-endian: SGL writes in its order */
#define DROCE_RS_CONN_FLAG_IOMAP 0x2

/* Immediate data: op in bits 31:29, argument in 28:0. */
enum droce_rs_op {
	DROCE_RS_OP_DATA = 0,
	DROCE_RS_OP_WRITE = 2,        /* local only: a riowrite's completion */
	DROCE_RS_OP_SGL = 4,
	DROCE_RS_OP_IOMAP_SGL = 6,
	DROCE_RS_OP_CTRL = 7,
};
enum droce_rs_ctrl {
	DROCE_RS_CTRL_DISCONNECT = 0,
	DROCE_RS_CTRL_KEEPALIVE = 1,
	DROCE_RS_CTRL_SHUTDOWN = 2,
};
static inline uint32_t
droce_rs_msg(enum droce_rs_op op, uint32_t arg)
{
	return ((uint32_t)op << 29) | (arg & 0x1FFFFFFFu);
}
#define DROCE_RS_MSG_OP(m) ((m) >> 29)
#define DROCE_RS_MSG_ARG(m) ((m) & 0x1FFFFFFFu)
#define DROCE_RS_WRID_RECV (1ull << 63)

/* struct rs_sge: in a peer's memory, in the writer's byte order. */
struct droce_rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};
static_assert(sizeof(struct droce_rs_sge) == 16, "rs_sge is 16 bytes on the wire");

/* struct rs_iomap */
struct droce_rs_iomap {
	uint64_t offset;
	struct droce_rs_sge sge;
};
static_assert(sizeof(struct droce_rs_iomap) == 24, "rs_iomap is 24 bytes on the wire");

/* struct rs_conn_data: the REQ's / REP's private data, multi-byte fields big-endian */
struct droce_rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t target_iomap_size;    /* rs_value_to_scale(entries, 8) */
	struct droce_rs_sge target_sgl;
	struct droce_rs_sge data_buf;
};
static_assert(sizeof(struct droce_rs_conn_data) == 40, "rs_conn_data is 40 bytes");

/* A socket's life.  Readable / writable halves are droce_rs.rd_open/wr_open
 * while CONNECTED. */
enum droce_rs_state {
	DROCE_RS_INIT,
	DROCE_RS_BOUND,
	DROCE_RS_LISTENING,
	DROCE_RS_RESOLVING_ADDR,      /* rconnect: the opening states */
	DROCE_RS_RESOLVING_ROUTE,
	DROCE_RS_CONNECTING,
	DROCE_RS_CONNECTED,
	DROCE_RS_DISCONNECTED,        /* peer or we closed: queued data still readable */
	DROCE_RS_CONNECT_ERROR,       /* rconnect failed (err) */
	DROCE_RS_ERROR,               /* a transfer failed (err) */
};

static inline bool
droce_rs_opening(enum droce_rs_state s)
{
	return s == DROCE_RS_RESOLVING_ADDR || s == DROCE_RS_RESOLVING_ROUTE ||
	       s == DROCE_RS_CONNECTING;
}

struct droce_rs_rmsg {
	uint32_t op;
	uint32_t data;
};

/* A local buffer riomap'ed for the peer's riowrite. */
struct droce_rs_iomap_mr {
	uint64_t offset;
	struct ibv_mr *mr;
	int index;                    /* slot in the peer's target iomap */
	bool queued;                  /* not yet written to the peer */
	struct droce_rs_iomap_mr *next;
};

struct droce_rs {
	int fd;                       /* the descriptor: the CM channel's fd */
	int type;                     /* SOCK_STREAM */
	pthread_mutex_t lock;
	struct rdma_event_channel *cmch;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cqch;
	struct ibv_cq *cq;

	enum droce_rs_state state;
	bool rd_open, wr_open;
	int err;                      /* SO_ERROR */
	int fs_flags, fd_flags;       /* O_NONBLOCK; FD_CLOEXEC */
	bool cq_armed;
	unsigned int unacked;         /* CQ events not yet acknowledged */
	bool swap;                    /* peer writes SGEs in the other byte order */

	/* sizes (options before connecting) */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline, target_iomap_size;

	/* flow control, as rdma-core's */
	unsigned int ctrl_seqno, ctrl_max_seqno;
	uint16_t sseq_no, sseq_comp, rseq_no, rseq_comp;
	int sqe_avail;

	/* where we write: the peer's target SGL and iomap, our copy of its SGEs */
	unsigned int remote_sge;
	struct droce_rs_sge remote_sgl, remote_iomap;
	void *target_buf;             /* our target SGL + iomap, written by the peer */
	struct ibv_mr *target_mr;
	unsigned int target_sge;
	volatile struct droce_rs_sge *target_sgl;
	volatile struct droce_rs_iomap *target_iomap;

	/* receive buffer (the peer writes into its halves) and its messages */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	int rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
	struct droce_rs_rmsg *rmsg;   /* rq_size + 1 entries */
	int rmsg_head, rmsg_tail;

	/* send buffer: a ring the data is copied through (+ control slots) */
	uint8_t *sbuf;
	struct ibv_mr *smr;
	int sbuf_bytes_avail;
	struct ibv_sge ssgl[2];

	/* riomap */
	struct droce_rs_iomap_mr *iomaps;     /* ours, mapped or queued */
	bool iomap_pending;
	uint8_t *remote_slots;                /* peer iomap slots in use (remote_iomap.length) */

	/* options */
	uint64_t so_opts, tcp_opts, ipv6_opts;
	int ip_tos;
	unsigned int keepalive_time;          /* s */
	bool keepalive;
	uint64_t keepalive_due;               /* ms, monotonic */
	void *route;                          /* RDMA_ROUTE (kept, reported back) */
	socklen_t route_len;
	int backlog;
	struct droce_rs *ka_next;             /* keepalive list */
};

/* ---- rsocket.c ---- */
RS_HIDDEN struct droce_rs *droce_rs_lookup(int fd);
/* Takes what the CM channel has (non-blocking) and moves the state on.  Lock held. */
RS_HIDDEN void droce_rs_cm_progress(struct droce_rs *rs);
/* Sets errno and returns -1. */
RS_HIDDEN int droce_rs_errno(int e);
RS_HIDDEN uint64_t droce_rs_now_ms(void);

/* ---- rsocket_io.c ---- */
/* Creates the CQ, QP, buffers and posts the receives (id has its device).  Lock held. */
RS_HIDDEN int droce_rs_create_ep(struct droce_rs *rs);
RS_HIDDEN void droce_rs_free_ep(struct droce_rs *rs);
RS_HIDDEN void droce_rs_format_conn(struct droce_rs *rs, struct droce_rs_conn_data *c);
RS_HIDDEN int droce_rs_save_conn(struct droce_rs *rs, const void *pdata, size_t len);
/* Polls the CQ, handles every completion, reposts receives, gives credits.  Lock held. */
RS_HIDDEN void droce_rs_progress(struct droce_rs *rs);
/* Arms the CQ if not armed.  Lock held. */
RS_HIDDEN void droce_rs_arm(struct droce_rs *rs);
/* After the CQ channel polled readable: takes the event (non-blocking). */
RS_HIDDEN void droce_rs_take_cq_event(struct droce_rs *rs);
RS_HIDDEN bool droce_rs_have_rdata(const struct droce_rs *rs);
RS_HIDDEN bool droce_rs_can_send(const struct droce_rs *rs);
RS_HIDDEN bool droce_rs_all_sends_done(const struct droce_rs *rs);
RS_HIDDEN bool droce_rs_ctrl_avail(const struct droce_rs *rs);
/* Posts a zero-length control message (counts a control slot).  Lock held. */
RS_HIDDEN int droce_rs_post_ctrl(struct droce_rs *rs, enum droce_rs_ctrl ctrl);
/* Waits (lock held, let go while blocked) until test(rs); -1/EAGAIN if nonblock. */
RS_HIDDEN int droce_rs_wait(struct droce_rs *rs, bool nonblock, bool (*test)(const struct droce_rs *rs),
			    int timeout_ms);

#endif
