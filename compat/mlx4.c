/* SPDX-License-Identifier: BSD-3-Clause
 * droce's stand-in libmlx4.so.1, for processes run through droce-run:
 * DPDK's EAL dlopens Debian's mlx4 PMD (librte_net_mlx4) with the other
 * plugins, and it needs libmlx4.so.1, which cannot load over droce's
 * libibverbs.so.1 (see mlx5.c).  These are rdma-core 44's mlx4dv_*
 * functions (MLX4_1.0), answering as libmlx4 does for a device that is not
 * a Mellanox one: EOPNOTSUPP.
 */
#include <stddef.h>

#include <infiniband/mlx4dv.h>

#include "standin.h"

STANDIN_RETURN(int, EOPNOTSUPP, mlx4dv_init_obj, struct mlx4dv_obj *obj, uint64_t obj_type)
STANDIN_ERRNO(struct ibv_qp *, NULL, mlx4dv_create_qp, struct ibv_context *context, struct ibv_qp_init_attr_ex *attr, struct mlx4dv_qp_init_attr *mlx4_qp_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx4dv_query_device, struct ibv_context *ctx_in, struct mlx4dv_context *attrs_out)
STANDIN_RETURN(int, EOPNOTSUPP, mlx4dv_set_context_attr, struct ibv_context *context, enum mlx4dv_set_ctx_attr_type attr_type, void *attr)
