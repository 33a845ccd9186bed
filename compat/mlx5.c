/* SPDX-License-Identifier: BSD-3-Clause
 * droce's stand-in libmlx5.so.1, for processes run through droce-run.
 *
 * Two kinds of programs load libmlx5.so.1 there: Debian's perftest (it links
 * it for DC QPs, AES-XTS and a DevX capability query), and DPDK itself: the
 * EAL dlopens every PMD of its plugin directory, and Debian's mlx5 PMDs
 * (librte_common_mlx5 and the net, crypto, compress, regex, vdpa ones) need
 * libmlx5.so.1 and libibverbs.so.1.  In a droce-run process
 * libibverbs.so.1 is droce's, so rdma-core's libmlx5 cannot load (it needs
 * libibverbs' provider ABI), and without a libmlx5.so.1 that loads the EAL
 * fails ("Cannot init plugins").  This library defines every mlx5dv_*
 * function those import, with rdma-core 44's symbol versions
 * (libmlx5.map), and each answers as rdma-core 44's libmlx5 does for a
 * device that is not a Mellanox one, which no droce device is: EOPNOTSUPP
 * (returned, or in errno with NULL / -1), false from mlx5dv_is_supported(),
 * nothing from the void ones.  perftest then takes its generic verbs path;
 * the PMDs never probe a device (droce runs the EAL with --no-pci, and a
 * Mellanox NIC cannot be a droce port in a droce-run process).
 *
 * The prototypes are mlx5dv.h's (rdma-core 44), so the compiler checks
 * every definition against the header.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <infiniband/mlx5dv.h>

struct mlx5dv_var *
mlx5dv_alloc_var(struct ibv_context *context, uint32_t flags)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_cq_ex *
mlx5dv_create_cq(struct ibv_context *context, struct ibv_cq_init_attr_ex *cq_attr, struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_flow *
mlx5dv_create_flow(struct mlx5dv_flow_matcher *matcher, struct mlx5dv_flow_match_parameters *match_value, size_t num_actions, struct mlx5dv_flow_action_attr actions_attr[])
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_flow_action *
mlx5dv_create_flow_action_modify_header(struct ibv_context *ctx, size_t actions_sz, uint64_t actions[], enum mlx5dv_flow_table_type ft_type)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_flow_action *
mlx5dv_create_flow_action_packet_reformat(struct ibv_context *ctx, size_t data_sz, void *data, enum mlx5dv_flow_action_packet_reformat_type reformat_type, enum mlx5dv_flow_table_type ft_type)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_flow_matcher *
mlx5dv_create_flow_matcher(struct ibv_context *context, struct mlx5dv_flow_matcher_attr *matcher_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_mkey *
mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_qp *
mlx5dv_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr, struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_wq *
mlx5dv_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr, struct mlx5dv_wq_init_attr *mlx5_wq_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_crypto_login(struct ibv_context *context, struct mlx5dv_crypto_login_attr *login_attr)
{
	return EOPNOTSUPP;
}

struct mlx5dv_dek *
mlx5dv_dek_create(struct ibv_context *context, struct mlx5dv_dek_init_attr *init_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
	return EOPNOTSUPP;
}

int
mlx5dv_destroy_flow_matcher(struct mlx5dv_flow_matcher *matcher)
{
	return EOPNOTSUPP;
}

int
mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
	return EOPNOTSUPP;
}

struct mlx5dv_devx_uar *
mlx5dv_devx_alloc_uar(struct ibv_context *context, uint32_t flags)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_devx_cmd_comp *
mlx5dv_devx_create_cmd_comp(struct ibv_context *context)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_devx_event_channel *
mlx5dv_devx_create_event_channel(struct ibv_context *context, enum mlx5dv_devx_create_event_channel_flags flags)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void
mlx5dv_devx_destroy_cmd_comp(struct mlx5dv_devx_cmd_comp *cmd_comp)
{
}

void
mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *event_channel)
{
}

void
mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *devx_uar)
{
}

int
mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out, size_t outlen)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_get_async_cmd_comp(struct mlx5dv_devx_cmd_comp *cmd_comp, struct mlx5dv_devx_async_cmd_hdr *cmd_resp, size_t cmd_resp_len)
{
	return EOPNOTSUPP;
}

ssize_t
mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *event_channel, struct mlx5dv_devx_async_event_hdr *event_data, size_t event_resp_len)
{
	errno = EOPNOTSUPP;
	return -1;
}

struct mlx5dv_devx_obj *
mlx5dv_devx_obj_create(struct ibv_context *context, const void *in, size_t inlen, void *out, size_t outlen)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_obj_query_async(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, size_t outlen, uint64_t wr_id, struct mlx5dv_devx_cmd_comp *cmd_comp)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_query_eqn(struct ibv_context *context, uint32_t vector, uint32_t *eqn)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_subscribe_devx_event(struct mlx5dv_devx_event_channel *event_channel, struct mlx5dv_devx_obj *obj, uint16_t events_sz, uint16_t events_num[], uint64_t cookie)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_subscribe_devx_event_fd(struct mlx5dv_devx_event_channel *event_channel, int fd, struct mlx5dv_devx_obj *obj, uint16_t event_num)
{
	return EOPNOTSUPP;
}

int
mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
	return EOPNOTSUPP;
}

struct mlx5dv_devx_umem *
mlx5dv_devx_umem_reg(struct ibv_context *ctx, void *addr, size_t size, uint32_t access)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_devx_wq_query(struct ibv_wq *wq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return EOPNOTSUPP;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_aso(struct mlx5dv_dr_domain *domain, struct mlx5dv_devx_obj *devx_obj, uint32_t offset, uint32_t flags, uint8_t return_reg_c)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_default_miss(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_array(struct mlx5dv_dr_domain *domain, size_t num_dest, struct mlx5dv_dr_action_dest_attr *dests[])
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_devx_tir(struct mlx5dv_devx_obj *devx_obj)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_ib_port(struct mlx5dv_dr_domain *domain, uint32_t ib_port)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_ibv_qp(struct ibv_qp *ibqp)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_root_table(struct mlx5dv_dr_table *table, uint16_t priority)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_table(struct mlx5dv_dr_table *table)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_drop(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_flow_counter(struct mlx5dv_devx_obj *devx_obj, uint32_t offset)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_flow_meter(struct mlx5dv_dr_flow_meter_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_flow_sampler(struct mlx5dv_dr_flow_sampler_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_modify_header(struct mlx5dv_dr_domain *domain, uint32_t flags, size_t actions_sz, __be64 actions[])
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_packet_reformat(struct mlx5dv_dr_domain *domain, uint32_t flags, enum mlx5dv_flow_action_packet_reformat_type reformat_type, size_t data_sz, void *data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_pop_vlan(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_push_vlan(struct mlx5dv_dr_domain *domain, __be32 vlan_hdr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_tag(uint32_t tag_value)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_dr_action_destroy(struct mlx5dv_dr_action *action)
{
	return EOPNOTSUPP;
}

int
mlx5dv_dr_action_modify_flow_meter(struct mlx5dv_dr_action *action, struct mlx5dv_dr_flow_meter_attr *attr, __be64 modify_field_select)
{
	return EOPNOTSUPP;
}

void
mlx5dv_dr_domain_allow_duplicate_rules(struct mlx5dv_dr_domain *domain, bool allow)
{
}

struct mlx5dv_dr_domain *
mlx5dv_dr_domain_create(struct ibv_context *ctx, enum mlx5dv_dr_domain_type type)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_dr_domain_destroy(struct mlx5dv_dr_domain *domain)
{
	return EOPNOTSUPP;
}

void
mlx5dv_dr_domain_set_reclaim_device_memory(struct mlx5dv_dr_domain *dmn, bool enable)
{
}

int
mlx5dv_dr_domain_sync(struct mlx5dv_dr_domain *domain, uint32_t flags)
{
	return EOPNOTSUPP;
}

struct mlx5dv_dr_matcher *
mlx5dv_dr_matcher_create(struct mlx5dv_dr_table *table, uint16_t priority, uint8_t match_criteria_enable, struct mlx5dv_flow_match_parameters *mask)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_dr_matcher_destroy(struct mlx5dv_dr_matcher *matcher)
{
	return EOPNOTSUPP;
}

struct mlx5dv_dr_rule *
mlx5dv_dr_rule_create(struct mlx5dv_dr_matcher *matcher, struct mlx5dv_flow_match_parameters *value, size_t num_actions, struct mlx5dv_dr_action *actions[])
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_dr_rule_destroy(struct mlx5dv_dr_rule *rule)
{
	return EOPNOTSUPP;
}

struct mlx5dv_dr_table *
mlx5dv_dr_table_create(struct mlx5dv_dr_domain *domain, uint32_t level)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_dr_table_destroy(struct mlx5dv_dr_table *table)
{
	return EOPNOTSUPP;
}

int
mlx5dv_dump_dr_domain(FILE *fout, struct mlx5dv_dr_domain *domain)
{
	return EOPNOTSUPP;
}

int
mlx5dv_dump_dr_rule(FILE *fout, struct mlx5dv_dr_rule *rule)
{
	return EOPNOTSUPP;
}

void
mlx5dv_free_var(struct mlx5dv_var *dv_var)
{
}

int
mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return EOPNOTSUPP;
}

bool
mlx5dv_is_supported(struct ibv_device *device)
{
	return false;
}

struct ibv_context *
mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct mlx5dv_pp *
mlx5dv_pp_alloc(struct ibv_context *context, size_t pp_context_sz, const void *pp_context, uint32_t flags)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void
mlx5dv_pp_free(struct mlx5dv_pp *pp)
{
}

struct mlx5dv_qp_ex *
mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_query_device(struct ibv_context *ctx_in, struct mlx5dv_context *attrs_out)
{
	return EOPNOTSUPP;
}

int
_mlx5dv_query_port(struct ibv_context *context, uint32_t port_num, struct mlx5dv_port *info, size_t info_len)
{
	return EOPNOTSUPP;
}

int
mlx5dv_set_context_attr(struct ibv_context *context, enum mlx5dv_set_ctx_attr_type type, void *attr)
{
	return EOPNOTSUPP;
}
