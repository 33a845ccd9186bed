/* SPDX-License-Identifier: BSD-3-Clause
 * droce-nvmf: an NVMe over Fabrics RDMA target on droce's verbs and rdma_cm.
 *
 * Threading: one thread (main.c's loop) owns every structure here: it polls
 * the CM channel, each queue's CQ, the keep-alive clocks and the file
 * workers' completion list.  File namespaces do their pread/pwrite on a
 * worker pool (backend.c); the workers touch only the request they were
 * handed and push it back through a mutex-protected list (a syscall is
 * already on that path; memory namespaces never go through it).
 */
#ifndef DROCE_NVMF_TARGET_H
#define DROCE_NVMF_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "proto.h"

#define NVMF_MAX_SUBSYS 16
#define NVMF_MAX_NS 16
#define NVMF_MAX_CTRL 64
#define NVMF_MAX_IOQ 32           /* I/O queues per controller */
#define NVMF_MAX_DEVS 8           /* verbs contexts (droce ports) */
#define NVMF_ERRLOG 16            /* error log entries kept per controller */
#define NVMF_KAS 10               /* Identify KAS: keep-alive granularity, 100 ms units */
#define NVMF_DISC_KATO_MS 120000  /* a discovery controller's keep-alive when the host gives 0 */

struct nvmf_dev;

enum nvmf_ns_kind { NVMF_NS_MEM, NVMF_NS_FILE };

struct nvmf_ns {
	uint32_t nsid;
	enum nvmf_ns_kind kind;
	uint64_t size;            /* bytes, a multiple of the block size */
	uint32_t lba_shift;       /* 9 or 12 */
	uint8_t *mem;             /* NVMF_NS_MEM: the storage itself (also the MR) */
	int fd;                   /* NVMF_NS_FILE */
	char path[256];
	uint8_t nguid[16];
	struct ibv_mr *mr[NVMF_MAX_DEVS]; /* NVMF_NS_MEM: per device, lazily */
};

struct nvmf_subsys {
	char nqn[NVMF_NQN_SIZE];
	char sn[21];
	unsigned int n_ns;
	struct nvmf_ns ns[NVMF_MAX_NS];
	bool discovery;
};

/* Per-request state (the manner of SPDK's nvmf_rdma_request_process). */
enum nvmf_req_state {
	NVMF_REQ_FREE,
	NVMF_REQ_NEW,                  /* capsule received: parse SGL, classify */
	NVMF_REQ_NEED_READ,            /* keyed host data: waits for read depth */
	NVMF_REQ_READING,              /* RDMA READ posted */
	NVMF_REQ_READY_TO_EXECUTE,
	NVMF_REQ_EXECUTING,            /* backend (file worker) or held (AER) */
	NVMF_REQ_EXECUTED,             /* status set: post WRITE + SEND */
	NVMF_REQ_COMPLETING,           /* SEND posted, waiting for its completion */
	NVMF_REQ_STATE_COUNT,
};

struct nvmf_queue;

struct nvmf_req {
	enum nvmf_req_state state;
	struct nvmf_queue *q;
	unsigned int idx;
	int recv_slot;                 /* the capsule's RECV buffer, -1 once reposted */
	struct nvmf_sqe sqe;           /* copied from the RECV buffer */
	enum nvmf_xfer xfer;
	uint32_t len;                  /* data length from the SGL */
	uint64_t raddr;                /* keyed: remote address and key */
	uint32_t rkey;
	bool keyed, invalidate, in_capsule;
	uint8_t *data;                 /* where the data lives: ns memory, icd, or buf */
	uint32_t lkey;
	uint8_t *buf;                  /* this request's bounce buffer (lazily) */
	struct ibv_mr *buf_mr;
	uint16_t status;               /* sc | DNR */
	uint64_t result;
	/* backend (file worker) */
	struct nvmf_ns *ns;
	off_t off;
	int err;
	struct nvmf_req *next;         /* free list, pending READ list, done list */
};

enum nvmf_queue_state {
	NVMF_Q_CONNECTING,             /* accepted, not yet ESTABLISHED */
	NVMF_Q_LIVE,
	NVMF_Q_CLOSING,                /* disconnected: waits for its requests */
};

struct nvmf_ctrl;

struct nvmf_queue {
	enum nvmf_queue_state state;
	struct rdma_cm_id *id;
	struct nvmf_dev *dev;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint16_t qid;
	unsigned int depth;            /* RECVs posted (hsqsize + 1) */
	unsigned int ord;              /* RDMA READs we may have outstanding */
	unsigned int reads_out;
	unsigned int icd;              /* in-capsule bytes per RECV */
	uint8_t *recv_buf;             /* depth * (64 + icd) */
	struct ibv_mr *recv_mr;
	unsigned int n_req;
	struct nvmf_req *reqs;
	struct nvmf_cqe *rsp;          /* n_req response slots */
	struct ibv_mr *rsp_mr;
	struct nvmf_req *free_list;
	struct nvmf_req *read_head, *read_tail; /* waiting for read depth */
	unsigned int busy;             /* requests not FREE */
	uint32_t buf_size;             /* bounce buffer size per request */
	struct nvmf_ctrl *ctrl;        /* after a successful Connect */
	uint16_t sq_head;
	bool cm_done;                  /* closing: the CM reported the end */
	uint64_t closing_ms;
	struct nvmf_queue *next;       /* the target's list */
};

struct nvmf_ctrl {
	bool used;
	uint16_t cntlid;
	struct nvmf_subsys *subsys;
	char hostnqn[NVMF_NQN_SIZE];
	uint8_t hostid[16];
	uint32_t cc, csts;
	uint32_t kato_ms;
	uint64_t last_ms;              /* last command seen, for keep-alive */
	uint32_t aec;
	unsigned int n_ioq;            /* granted by Set Features Number of Queues */
	struct nvmf_queue *admin;
	struct nvmf_queue *ioq[NVMF_MAX_IOQ + 1];
	struct nvmf_req *aer[4];       /* held AERs (AERL 3) */
	unsigned int n_aer;
	uint64_t err_count;
	struct nvmf_error_entry errlog[NVMF_ERRLOG];
	uint64_t units_read, units_written, host_reads, host_writes;
};

struct nvmf_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	unsigned int idx;
};

struct nvmf_target {
	char addr[64];
	uint16_t port;
	unsigned int n_subsys;
	struct nvmf_subsys subsys[NVMF_MAX_SUBSYS];
	struct nvmf_subsys disc;       /* the discovery subsystem */
	struct nvmf_ctrl ctrl[NVMF_MAX_CTRL];
	uint16_t next_cntlid;
	unsigned int n_dev;
	struct nvmf_dev dev[NVMF_MAX_DEVS];
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct nvmf_queue *queues;
	uint64_t genctr;
	unsigned int workers;
	unsigned int verbose;           /* -v: connections; -vv: every command; -vvv: capsules */
	/* counters printed at exit */
	uint64_t cmds, rejects, ka_expired;
};

extern struct nvmf_target nvmf_tgt;

uint64_t nvmf_now_ms(void);
void nvmf_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* config.c */
int nvmf_config_ini(const char *path);
int nvmf_add_subsys(const char *nqn);
int nvmf_add_ns(const char *spec);   /* "mem:SIZE" or "file:PATH[:SIZE]" */
int nvmf_ns_open_all(void);

/* transport.c */
int nvmf_transport_listen(void);
void nvmf_transport_cm_poll(void);
void nvmf_transport_poll(void);
void nvmf_transport_fini(void);
void nvmf_req_complete(struct nvmf_req *r, uint16_t status);  /* EXECUTING -> EXECUTED */
void nvmf_req_step(struct nvmf_req *r);
int nvmf_req_bounce(struct nvmf_req *r);  /* data into this request's buffer */
const char *nvmf_req_state_name(enum nvmf_req_state s);
void nvmf_queue_disconnect(struct nvmf_queue *q);
struct nvmf_ns *nvmf_ns_find(struct nvmf_subsys *s, uint32_t nsid);

/* ctrl.c: the admin, fabrics and discovery commands */
void nvmf_exec_admin(struct nvmf_req *r);
void nvmf_exec_connect(struct nvmf_req *r);
void nvmf_ctrl_check_kato(void);
void nvmf_ctrl_queue_gone(struct nvmf_queue *q);
bool nvmf_ctrl_ready(const struct nvmf_ctrl *c);
void nvmf_ctrl_log_error(struct nvmf_ctrl *c, const struct nvmf_req *r);

/* io.c: the NVM command set and the backends */
void nvmf_exec_io(struct nvmf_req *r);
int nvmf_prep_io(struct nvmf_req *r);   /* before data moves: bounds, where data goes */
int nvmf_backend_start(unsigned int workers);
void nvmf_backend_poll(void);
void nvmf_backend_stop(void);

#endif
