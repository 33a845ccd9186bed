/* SPDX-License-Identifier: BSD-3-Clause
 * droce's stand-in libefa.so.1: the efadv_* entry points of rdma-core 44's
 * libefa (EFA_1.0 to EFA_1.2; Debian's perftest imports efadv_create_qp_ex and
 * efadv_query_device), each answering as libefa answers for a device that
 * is not an EFA device: EOPNOTSUPP, returned or in errno.  perftest calls
 * them only for SRD QPs.
 */
#include <stddef.h>

#include <infiniband/efadv.h>

#include "standin.h"

STANDIN_ERRNO(struct ibv_qp *, NULL, efadv_create_driver_qp, struct ibv_pd *ibvpd, struct ibv_qp_init_attr *attr, uint32_t driver_qp_type)
STANDIN_ERRNO(struct ibv_qp *, NULL, efadv_create_qp_ex, struct ibv_context *ibvctx, struct ibv_qp_init_attr_ex *attr_ex, struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
STANDIN_RETURN(int, EOPNOTSUPP, efadv_query_device, struct ibv_context *ibvctx, struct efadv_device_attr *attr, uint32_t inlen)
STANDIN_RETURN(int, EOPNOTSUPP, efadv_query_ah, struct ibv_ah *ibvah, struct efadv_ah_attr *attr, uint32_t inlen)

/* EFA_1.2.  efadv_create_cq answers as libefa does for a device that is not
 * an EFA (errno EOPNOTSUPP).  libefa's efadv_cq_from_ibv_cq_ex returns a
 * pointer into its own CQ structure without a check; no CQ here ever comes
 * from efadv_create_cq, so there is none to return: NULL, errno EOPNOTSUPP
 * (libfabric's efa provider only calls it on a CQ efadv_create_cq made). */
STANDIN_ERRNO(struct ibv_cq_ex *, NULL, efadv_create_cq, struct ibv_context *ibvctx, struct ibv_cq_init_attr_ex *attr_ex, struct efadv_cq_init_attr *efa_attr, uint32_t inlen)
STANDIN_ERRNO(struct efadv_cq *, NULL, efadv_cq_from_ibv_cq_ex, struct ibv_cq_ex *ibvcqx)
