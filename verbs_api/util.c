/* SPDX-License-Identifier: BSD-3-Clause
 * libibverbs' functions that need no verbs object of droce's own, and the
 * answers for the features droce leaves out:
 *  - rate conversions (ibv_rate_to_mult, ibv_rate_to_mbps and inverses),
 *    one table;
 *  - the kernel-ABI copies of <infiniband/marshall.h> (field by field, the
 *    kernel structures' fields named as in <rdma/ib_user_verbs.h> and
 *    <rdma/ib_user_sa.h>);
 *  - ibv_get_sysfs_path, ibv_dofork_range / ibv_dontfork_range,
 *    ibv_resolve_eth_l2_from_gid (from droce's own neighbour tables);
 *  - importing MRs and device memory, dmabuf MRs and ECE: answered as
 *    rdma-core 44 answers for a provider without them (its dummy ops).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <infiniband/sa.h>

#include "pmd_glue/port.h"
#include "internal.h"

/* <infiniband/marshall.h>'s prototypes (Debian does not install the header). */
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
/* exported by libibverbs, declared by no installed header of rdma-core 44 */
const char *ibv_get_sysfs_path(void);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* ---- rates ---- */

/* Each rate with its multiple of 2.5 Gb/s (-1: not a multiple
 * ibv_rate_to_mult knows) and its data rate in Mb/s (rdma-core 44's values:
 * the 14, 56, 112, 168 rates are FDR's 64b/66b, 25 ... 300 EDR's and HDR's). */
static const struct rate_row {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },     { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },     { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },    { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },    { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },  { IBV_RATE_14_GBPS, -1, 14062 },
	{ IBV_RATE_56_GBPS, -1, 56250 },    { IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 },  { IBV_RATE_25_GBPS, -1, 25781 },
	{ IBV_RATE_100_GBPS, -1, 103125 },  { IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 },  { IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },    { IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 }, { IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
};

static const struct rate_row *
rate_find(enum ibv_rate rate)
{
	for (size_t i = 0; i < RTE_DIM(rates); i++)
		if (rates[i].rate == rate)
			return &rates[i];
	return NULL;
}

int
ibv_rate_to_mult(enum ibv_rate rate)
{
	const struct rate_row *r = rate_find(rate);

	return r ? r->mult : -1;
}

enum ibv_rate
mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < RTE_DIM(rates); i++)
		if (mult > 0 && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

int
ibv_rate_to_mbps(enum ibv_rate rate)
{
	const struct rate_row *r = rate_find(rate);

	return r ? r->mbps : -1;
}

enum ibv_rate
mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < RTE_DIM(rates); i++)
		if (mbps > 0 && rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- kernel ABI copies ---- */

void
ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

/* Every attribute but qp_state (the kernel's answer to a query carries the
 * state in cur_qp_state; rdma-core leaves dst->qp_state alone too). */
void
ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = (unsigned int)src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/* The path record's fields have the same names and byte orders on both
 * sides; only the GIDs differ in type (a union and a byte array). */
#define PATH_REC_FIELDS(X) \
	X(dlid) X(slid) X(raw_traffic) X(flow_label) X(hop_limit) X(traffic_class) \
	X(reversible) X(numb_path) X(pkey) X(sl) X(mtu_selector) X(mtu) X(rate_selector) \
	X(rate) X(packet_life_time) X(preference) X(packet_life_time_selector)

void
ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
#define COPY(f) dst->f = src->f;
	memcpy(dst->dgid.raw, src->dgid, sizeof(src->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(src->sgid));
	PATH_REC_FIELDS(COPY)
#undef COPY
}

void
ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
#define COPY(f) dst->f = src->f;
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	PATH_REC_FIELDS(COPY)
#undef COPY
}

/* ---- sysfs path, fork ranges ---- */

static char *sysfs_path;
static pthread_once_t sysfs_once = PTHREAD_ONCE_INIT;

static void
sysfs_path_init(void)
{
	/* as rdma-core: $SYSFS_PATH (ignored in a set-uid process), trailing
	 * slashes removed; else /sys */
	const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;
	size_t n;

	if (env == NULL || (sysfs_path = strndup(env, 256)) == NULL)
		return;
	n = strlen(sysfs_path);
	while (n > 0 && sysfs_path[n - 1] == '/')
		sysfs_path[--n] = '\0';
}

const char *
ibv_get_sysfs_path(void)
{
	pthread_once(&sysfs_once, sysfs_path_init);
	return sysfs_path ? sysfs_path : "/sys";
}

/* droce pins nothing, so fork needs no protection (ibv_is_fork_initialized
 * answers IBV_FORK_UNNEEDED): rdma-core returns 0 without madvise then. */
int
ibv_dontfork_range(void *base, size_t size)
{
	RTE_SET_USED(base);
	RTE_SET_USED(size);
	return 0;
}

int
ibv_dofork_range(void *base, size_t size)
{
	RTE_SET_USED(base);
	RTE_SET_USED(size);
	return 0;
}

/*
 * The destination MAC (and VLAN id, 0xffff without one) for @attr's DGID,
 * from the same resolution ibv_create_ah uses (a droce port owning the GID,
 * else the port's neighbour table, asking by ARP).  0, a positive errno
 * from the GID query, or -EINVAL / -EHOSTUNREACH as rdma-core returns them.
 */
int
ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
			    uint8_t eth_mac[6], uint16_t *vid)
{
	struct droce_vctx *x;
	struct droce_path path;
	union ibv_gid sgid;
	int rc;

	if (context == NULL || attr == NULL || eth_mac == NULL ||
	    (x = droce_vctx_of(context)) == NULL)
		return -EINVAL;
	rc = ibv_query_gid(context, attr->port_num, attr->grh.sgid_index, &sgid);
	if (rc != 0)
		return rc;
	rc = droce_verbs_resolve_path(x->port, attr, 0, 0, &path);
	if (rc != 0)
		return rc == EINVAL ? -EINVAL : -EHOSTUNREACH;
	memcpy(eth_mac, path.dst_mac.addr_bytes, 6);
	if (vid)
		*vid = path.vlan ? path.vlan_id : 0xffff;
	return 0;
}

/* ---- features droce leaves out ---- */

/* Importing needs a kernel command fd another process shares; droce's
 * objects live in the process that made them (rdma-core's dummy ops). */
struct ibv_mr *
ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	RTE_SET_USED(pd);
	RTE_SET_USED(mr_handle);
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_mr(struct ibv_mr *mr)
{
	RTE_SET_USED(mr); /* no MR is ever imported */
}

/* droce has no device memory (ibv_alloc_dm answers EOPNOTSUPP too). */
struct ibv_dm *
ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	RTE_SET_USED(context);
	RTE_SET_USED(dm_handle);
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_dm(struct ibv_dm *dm)
{
	RTE_SET_USED(dm);
}

/* A dmabuf is device memory another driver exports; droce reads only
 * process memory. */
struct ibv_mr *
ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
		  int access)
{
	RTE_SET_USED(pd);
	RTE_SET_USED(offset);
	RTE_SET_USED(length);
	RTE_SET_USED(iova);
	RTE_SET_USED(fd);
	RTE_SET_USED(access);
	errno = EOPNOTSUPP;
	return NULL;
}

/* Enhanced Connection Establishment: droce has no vendor options.  As
 * rdma-core: a zero vendor_id is EOPNOTSUPP in errno and returned, any other
 * reaches the provider, which returns EOPNOTSUPP. */
int
ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	RTE_SET_USED(qp);
	if (ece == NULL || ece->vendor_id == 0) {
		errno = EOPNOTSUPP;
		return EOPNOTSUPP;
	}
	return EOPNOTSUPP;
}

int
ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	RTE_SET_USED(qp);
	RTE_SET_USED(ece);
	return EOPNOTSUPP;
}
