/* SPDX-License-Identifier: BSD-3-Clause
 * droce's stand-in libefa.so.1: the efadv_* entry points of rdma-core 44's
 * libefa (EFA_1.0, EFA_1.1; Debian's perftest imports efadv_create_qp_ex and
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
