/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues, engine side (srq.c): the QP helpers in qp.c take
 * receive WQEs from here for QPs created with an SRQ.
 */
#ifndef DROCE_SRQ_H
#define DROCE_SRQ_H

#include <stdbool.h>

#include "dp.h"

/*
 * Takes the oldest posted receive WQE into @out (a copy: the SRQ slot is
 * free again on return) and, when that leaves fewer WQEs posted than an
 * armed limit, disarms the limit and calls the limit callback.  False when
 * the SRQ is empty.  Lock-free; any engine may call it at any time.
 */
bool droce_srq_take_lc(struct droce_srq *srq, struct droce_rqe *out);

/* A QP attached to / detached from @srq (droce_srq_destroy fails while any are). */
void droce_srq_attach(struct droce_srq *srq);
void droce_srq_detach(struct droce_srq *srq);
/* True while a QP is attached. */
bool droce_srq_in_use(const struct droce_srq *srq);

#endif /* DROCE_SRQ_H */
