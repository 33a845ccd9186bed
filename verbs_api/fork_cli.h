/* SPDX-License-Identifier: BSD-3-Clause
 * The child's side of verbs in forked children (fork.h), what fork_cli.c
 * (verbs) and fork_cli_cm.c (rdma_cm, in librdmacm's library) share: the
 * shadows, their registry by handle, one request.
 */
#ifndef DROCE_VERBS_API_FORK_CLI_H
#define DROCE_VERBS_API_FORK_CLI_H

#include "fork.h"
#include "internal.h"

struct fk_ctx {
	struct droce_vctx x;
	uint64_t h;
};

struct fk_pd {
	struct droce_vpd p;
	uint64_t h;
};

struct fk_mr {
	struct droce_vmr m;
	uint64_t h;
};

struct fk_chan {
	struct droce_vchan c;
	uint64_t h;
};

struct fk_cq {
	struct droce_vcq c;
	uint64_t h;
};

struct fk_qp {
	struct droce_vqp q;
	uint64_t h;
};

struct fk_ah {
	struct droce_vah a;
	uint64_t h;
};

/* Shadows by (type, handle): the child's own objects and the rdma_cm's
 * (borrowed: what its rdma_cm calls made in the parent). */
enum fk_kind { FK_K_CTX, FK_K_PD, FK_K_CHAN, FK_K_CQ, FK_K_QP, FK_K_ID };

void *droce_fk_reg_get(enum fk_kind k, uint64_t h);
/* 0 or ENOMEM */
int droce_fk_reg_put(enum fk_kind k, uint64_t h, void *p, bool borrowed);
void droce_fk_reg_del(enum fk_kind k, uint64_t h);
bool droce_fk_reg_borrowed(enum fk_kind k, uint64_t h);
void droce_fk_reg_set_borrowed(enum fk_kind k, uint64_t h, bool borrowed);

/* Shadows of the parent's objects named by handle @h (registered, borrowed);
 * NULL with errno ENOMEM.  @fd: the object's event fd (taken). */
struct fk_ctx *droce_fk_ctx_shadow(uint64_t h, unsigned int dev, int fd, int ncomp);
struct fk_pd *droce_fk_pd_shadow(uint64_t h, struct ibv_context *c);
struct fk_chan *droce_fk_chan_shadow(uint64_t h, struct ibv_context *c, int fd);
struct fk_cq *droce_fk_cq_shadow(uint64_t h, struct ibv_context *c, struct ibv_comp_channel *ch,
				 int cqe, void *cq_context);
struct fk_qp *droce_fk_qp_shadow(uint64_t h, struct ibv_pd *pd, struct ibv_cq *scq,
				 struct ibv_cq *rcq, uint32_t qpn, enum ibv_qp_type t,
				 const struct ibv_qp_cap *cap, void *qp_context);
/* Frees a shadow the parent destroyed (unregistered). */
void droce_fk_shadow_free(enum fk_kind k, void *p);

struct fk_ctx *droce_fk_ctx_of(struct ibv_context *c);
/* errno = @rc; NULL */
void *droce_fk_fail_null(int rc);
/* One request and its response (fork_cli.c xfer): the response's rc or EIO;
 * its descriptors into @rfds (DROCE_FK_MAX_FDS), their count into *@nrfd. */
int droce_fk_call_fds(struct droce_fk_msg *m, const void *pl, size_t plen, void *out, size_t *olen,
		      int *rfds, int *nrfd);
int droce_fk_call(struct droce_fk_msg *m, const void *pl, size_t plen, void *out, size_t *olen);
/* Waits on @fd as the program set it up, then has the server take the
 * event (@req, the response into it): 0, or -1 with errno. */
int droce_fk_event_wait(int fd, struct droce_fk_msg *req);

/* The droce device of port @port in this process (device.c). */
struct ibv_device *droce_verbs_device(unsigned int port);

#endif
