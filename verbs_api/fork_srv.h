/* SPDX-License-Identifier: BSD-3-Clause
 * The parent's side of verbs in forked children (fork.h), what fork_srv.c
 * (verbs) and fork_srv_cm.c (rdma_cm, in librdmacm's library) share: a
 * child's object table and one request's buffers.
 */
#ifndef DROCE_VERBS_API_FORK_SRV_H
#define DROCE_VERBS_API_FORK_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "fork.h"

enum fk_type {
	FK_T_FREE, FK_T_CTX, FK_T_PD, FK_T_MR, FK_T_CHAN, FK_T_CQ, FK_T_QP, FK_T_AH,
	FK_T_EVCH, FK_T_ID, FK_T_EVENT, /* rdma_cm */
};

struct fk_obj {
	enum fk_type type;
	uint32_t gen;
	void *p;          /* the parent's ibv_context / ibv_pd / ibv_mr ... */
	void *map;        /* MR: the parent's mapping of the child's pages */
	size_t map_len;
	int fd;           /* CTX, CHAN, EVCH: the server's own non-blocking description of the event fd */
	bool borrowed;    /* the rdma_cm's (its context and PD, what rdma_create_qp made): not ours to destroy */
	uint64_t owner;   /* borrowed QP, CQ, CHAN: the id whose rdma_destroy_qp destroys them */
	bool ep;          /* ID: made by rdma_create_ep */
};

#define FK_MAX_WR 1024

struct fk_client {
	int fd;
	struct fk_obj *o;
	uint32_t n, cap;
	uint32_t slot;    /* index in srv.clients */
	uint8_t in[DROCE_FK_MAX_MSG] __attribute__((aligned(16)));
	uint8_t out[DROCE_FK_MAX_MSG] __attribute__((aligned(16)));
	union {
		struct ibv_send_wr s[FK_MAX_WR];
		struct ibv_recv_wr r[FK_MAX_WR];
	} wr;
};

/* One request as received and its response as built. */
struct fk_io {
	struct droce_fk_msg m;           /* request in, response out (same struct) */
	const uint8_t *pl;               /* request payload */
	size_t plen;
	int fds[DROCE_FK_MAX_FDS];
	int nfds;
	uint8_t *out;                    /* response payload (DROCE_FK_MAX_MSG - header) */
	size_t olen;
	int ofds[DROCE_FK_MAX_FDS];      /* descriptors to pass back */
	int nofd;
};

#define FK_OUT_MAX (DROCE_FK_MAX_MSG - sizeof(struct droce_fk_msg))

typedef void (*fk_op_fn)(struct fk_client *c, struct fk_io *io);

/* The request handlers by op; fork_srv_cm.c fills the rdma_cm ones when
 * librdmacm's library loads (a constructor). */
extern fk_op_fn droce_fk_ops[DROCE_FK_OP_COUNT];
/* Ends an rdma_cm object a child left (FK_T_EVENT, FK_T_ID, FK_T_EVCH): 0
 * or an errno (fork_srv_cm.c). */
extern int (*droce_fk_cm_end)(struct fk_client *c, struct fk_obj *o, uint64_t h);

/* A new entry for @p: its handle, 0 when out of memory. */
uint64_t droce_fk_obj_add(struct fk_client *c, enum fk_type t, void *p);
/* The entry handle @h names if it is of type @t, else NULL. */
struct fk_obj *droce_fk_obj_get(struct fk_client *c, uint64_t h, enum fk_type t);
/* The handle of @p (of type @t) in the table, 0 if absent. */
uint64_t droce_fk_obj_find(struct fk_client *c, enum fk_type t, const void *p);
/* Frees the entry (its mapping and descriptor), not the object. */
void droce_fk_obj_free(struct fk_obj *o);
/* A non-blocking open file description of its own for the pipe @fd. */
int droce_fk_own_fd(int fd);
/* True if @fd has something to read now. */
bool droce_fk_readable(int fd);
/* errno, or @dflt when errno is 0. */
int droce_fk_errno_or(int dflt);

#define OBJ(var, type, h)                                                                  \
	struct fk_obj *var = droce_fk_obj_get(c, (h), (type));                                      \
	if (var == NULL) {                                                                 \
		io->m.rc = EINVAL;                                                         \
		return;                                                                    \
	}

#endif
