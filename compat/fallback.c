/* SPDX-License-Identifier: BSD-3-Clause
 * Entry points rdma-core exports that droce's drop-in libibverbs.so.1 needs
 * before the verbs layer defines them (issue 10 §2 owns them there).  They
 * are weak: a definition in verbs_api/ takes their place at link time.
 *
 * Debian's binaries are linked with BIND_NOW, so every symbol they import
 * must exist when they load, even one they only call on some paths.
 */
#include <errno.h>

#include <infiniband/verbs.h>

/* From rdma-core's libibverbs/driver.h (IBVERBS_PRIVATE_34), which is not
 * installed. */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum ibv_gid_type_sysfs *type);

/*
 * No droce QP is created with ibv_create_qp_ex() yet, so none has the
 * ibv_qp_ex interface: NULL, as rdma-core answers for such a QP.
 * (rdma-core reads verbs_qp.comp_mask; droce's QPs embed a plain ibv_qp.)
 */
__attribute__((weak)) struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return NULL;
}

/*
 * rdma-core 44 (libibverbs/verbs.c): the sysfs GID type of a GID table
 * entry; 0, or -1 when the entry cannot be read.  An empty entry reads as
 * RoCE v1 there; droce's GIDs are all RoCE v2.
 */
__attribute__((weak)) int
ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		   enum ibv_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int rc = _ibv_query_gid_ex(context, port_num, index, &e, 0, sizeof(e));

	if (rc == ENODATA) {
		*type = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? IBV_GID_TYPE_SYSFS_ROCE_V2
						   : IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}
