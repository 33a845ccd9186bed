/* SPDX-License-Identifier: BSD-3-Clause
 * FAKE dataplane, continued: SRQs and droce_qp_create_ex for the verbs_api
 * validation tests (see fake_dp.h).  An SRQ only counts its posted WQEs.
 */
#include <errno.h>
#include <stdlib.h>

#include "fake_dp.h"

struct droce_srq {
	uint32_t max_wr, max_sge, posted, limit;
};

struct droce_qp *
droce_qp_create_ex(enum droce_qp_type type, const struct droce_qp_caps *caps,
		   struct droce_cq *send_cq, struct droce_cq *recv_cq, uint32_t pd_id,
		   unsigned int port, const struct droce_qp_ext *ext)
{
	(void)ext; /* no engine: no events, no receive traffic */
	return droce_qp_create(type, caps, send_cq, recv_cq, pd_id, port);
}

struct droce_srq *
droce_srq_create(uint32_t max_wr, uint32_t max_sge, droce_srq_limit_fn limit, void *arg)
{
	struct droce_srq *s;

	(void)limit;
	(void)arg;
	if (max_wr == 0 || max_wr > DROCE_DP_MAX_SRQ_WR || max_sge > DROCE_DP_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->max_wr = max_wr;
	s->max_sge = max_sge;
	return s;
}

int
droce_srq_destroy(struct droce_srq *s)
{
	free(s);
	return 0;
}

int
droce_srq_post_recv(struct droce_srq *s, const struct droce_rqe *rqe)
{
	if (rqe->num_sge > s->max_sge)
		return EINVAL;
	if (s->posted >= s->max_wr)
		return ENOMEM;
	s->posted++;
	return 0;
}

void
droce_srq_arm(struct droce_srq *s, uint32_t limit)
{
	s->limit = limit;
}

uint32_t
droce_srq_limit(const struct droce_srq *s)
{
	return s->limit;
}

uint32_t
droce_srq_capacity(const struct droce_srq *s)
{
	return s->max_wr;
}

uint32_t
droce_srq_count(const struct droce_srq *s)
{
	return s->posted;
}

/* XRC SRQ numbers: handed out in order, never busy (no engines here). */
static uint32_t fake_next_srqn = 1;

int
droce_xrc_srq_publish(struct droce_srq *srq, uint32_t xrcd, uint32_t pd_id, struct droce_cq *cq,
		      uint32_t *srqn)
{
	(void)srq;
	(void)xrcd;
	(void)pd_id;
	if (cq == NULL)
		return EINVAL;
	*srqn = fake_next_srqn++;
	return 0;
}

int
droce_xrc_srq_unpublish(uint32_t srqn)
{
	return srqn == 0 ? EINVAL : 0;
}
