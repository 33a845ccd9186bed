/* SPDX-License-Identifier: BSD-3-Clause
 * A small NVMe over Fabrics RDMA host (initiator) on droce's verbs and
 * rdma_cm, the test suite's side of droce-nvmf: it speaks what Linux's
 * nvme-rdma sends (CM private data, 64-byte capsules, keyed SGLs with the
 * key bound per command like FRWR, in-capsule data on I/O queues) and checks
 * what comes back.  Single-threaded; a queue is polled by its caller.
 */
#ifndef DROCE_TESTS_NVMF_HOST_H
#define DROCE_TESTS_NVMF_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "../../apps/nvmf/proto.h"

/* How a command's data is described. */
enum nh_sgl {
	NH_SGL_NULL,       /* keyed, address 0 length 0 (no data) */
	NH_SGL_KEYED,      /* 0x40: the slot buffer's MR rkey */
	NH_SGL_KEYED_INV,  /* 0x4F: a type 2 window bound for this command, invalidated by the target */
	NH_SGL_INCAPSULE,  /* 0x01: the data follows the SQE in the capsule */
	NH_SGL_RAW,        /* the caller's SGL as it is; @len in-capsule bytes follow the SQE */
};

struct nh_slot {
	bool busy, send_done, rsp_done;
	bool with_inv;          /* the response came with invalidate */
	uint32_t inv_rkey;      /* ... of this key */
	uint32_t bound_rkey;    /* the window's key for this command (KEYED_INV) */
	struct nvmf_cqe cqe;
	uint64_t t0_ns;         /* submit time */
	uint16_t cid;
};

struct nh_queue {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint16_t qid;
	unsigned int depth;      /* commands outstanding at most (hsqsize + 1) */
	unsigned int icd;        /* in-capsule bytes this queue may send */
	size_t slot_size;        /* data buffer per slot */
	uint8_t *cmd;            /* depth capsules of 64 + icd */
	struct ibv_mr *cmd_mr;
	struct nvmf_cqe *rsp;    /* depth response RECV buffers */
	struct ibv_mr *rsp_mr;
	uint8_t *data;           /* depth * slot_size, remotely readable and writable */
	struct ibv_mr *data_mr;
	struct ibv_mw **mw;
	struct nh_slot *slot;
	uint16_t gen;
	unsigned int outstanding;
	uint16_t rej_sts;        /* the NVMe-oF status of a CM reject */
	uint16_t crqsize;        /* from the accept */
	bool established;        /* the CM connection came up */
	bool disconnected;       /* the target ended the connection */
	char err[160];
};

/* Connects queue @qid to ADDR:PORT with hsqsize = @depth - 1 and hrqsize =
 * @hrqsize (0: @depth), allowing @ird target READs (0 is sent as 0), data
 * buffers of @slot_size per slot and @icd in-capsule bytes (I/O queues).
 * 0; -1 when the target rejected (q->rej_sts); -2 on any other failure
 * (q->err).  @recfmt is sent as given (0 is valid). */
int nh_connect(struct nh_queue *q, const char *addr, uint16_t port, uint16_t qid, unsigned int depth,
	       unsigned int hrqsize, unsigned int ird, size_t slot_size, unsigned int icd,
	       uint16_t recfmt);
/* Disconnects and frees (outstanding commands are abandoned). */
void nh_close(struct nh_queue *q);

/* A free slot (its buffer is nh_buf), or -1. */
int nh_slot_get(struct nh_queue *q);
static inline uint8_t *
nh_buf(struct nh_queue *q, int slot)
{
	return q->data + (size_t)slot * q->slot_size;
}
/* Sends @sqe (its cid and SGL filled here) from @slot with @len bytes of the
 * slot's buffer described as @mode.  0 or -1 (q->err). */
int nh_submit(struct nh_queue *q, int slot, struct nvmf_sqe *sqe, enum nh_sgl mode, uint32_t len);
/* Polls completions and CM events; the number of slots that finished. */
int nh_poll(struct nh_queue *q);
/* Whether @slot finished (response and send both); frees it and copies the CQE. */
bool nh_reap(struct nh_queue *q, int slot, struct nvmf_cqe *cqe);

/* Runs one command synchronously: @data (@len bytes) copied into the slot
 * before (to the controller) or out of it after (to the host).  Returns the
 * CQE status field >> 1 (sc | DNR), or -1 on a transport failure or a
 * timeout of @timeout_ms. */
int nh_cmd(struct nh_queue *q, struct nvmf_sqe *sqe, enum nh_sgl mode, void *data, uint32_t len,
	   struct nvmf_cqe *cqe, int timeout_ms);

uint64_t nh_now_ns(void);

#endif
