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
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <infiniband/mlx5dv.h>

#include "standin.h"

STANDIN_ERRNO(struct mlx5dv_var *, NULL, mlx5dv_alloc_var, struct ibv_context *context, uint32_t flags)
STANDIN_ERRNO(struct ibv_cq_ex *, NULL, mlx5dv_create_cq, struct ibv_context *context, struct ibv_cq_init_attr_ex *cq_attr, struct mlx5dv_cq_init_attr *mlx5_cq_attr)
STANDIN_ERRNO(struct ibv_flow *, NULL, mlx5dv_create_flow, struct mlx5dv_flow_matcher *matcher, struct mlx5dv_flow_match_parameters *match_value, size_t num_actions, struct mlx5dv_flow_action_attr actions_attr[])
STANDIN_ERRNO(struct ibv_flow_action *, NULL, mlx5dv_create_flow_action_modify_header, struct ibv_context *ctx, size_t actions_sz, uint64_t actions[], enum mlx5dv_flow_table_type ft_type)
STANDIN_ERRNO(struct ibv_flow_action *, NULL, mlx5dv_create_flow_action_packet_reformat, struct ibv_context *ctx, size_t data_sz, void *data, enum mlx5dv_flow_action_packet_reformat_type reformat_type, enum mlx5dv_flow_table_type ft_type)
STANDIN_ERRNO(struct mlx5dv_flow_matcher *, NULL, mlx5dv_create_flow_matcher, struct ibv_context *context, struct mlx5dv_flow_matcher_attr *matcher_attr)
STANDIN_ERRNO(struct mlx5dv_mkey *, NULL, mlx5dv_create_mkey, struct mlx5dv_mkey_init_attr *mkey_init_attr)
STANDIN_ERRNO(struct ibv_qp *, NULL, mlx5dv_create_qp, struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr, struct mlx5dv_qp_init_attr *mlx5_qp_attr)
STANDIN_ERRNO(struct ibv_wq *, NULL, mlx5dv_create_wq, struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr, struct mlx5dv_wq_init_attr *mlx5_wq_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_crypto_login, struct ibv_context *context, struct mlx5dv_crypto_login_attr *login_attr)
STANDIN_ERRNO(struct mlx5dv_dek *, NULL, mlx5dv_dek_create, struct ibv_context *context, struct mlx5dv_dek_init_attr *init_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dek_destroy, struct mlx5dv_dek *dek)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_destroy_flow_matcher, struct mlx5dv_flow_matcher *matcher)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_destroy_mkey, struct mlx5dv_mkey *mkey)
STANDIN_ERRNO(struct mlx5dv_devx_uar *, NULL, mlx5dv_devx_alloc_uar, struct ibv_context *context, uint32_t flags)
STANDIN_ERRNO(struct mlx5dv_devx_cmd_comp *, NULL, mlx5dv_devx_create_cmd_comp, struct ibv_context *context)
STANDIN_ERRNO(struct mlx5dv_devx_event_channel *, NULL, mlx5dv_devx_create_event_channel, struct ibv_context *context, enum mlx5dv_devx_create_event_channel_flags flags)
STANDIN_VOID(mlx5dv_devx_destroy_cmd_comp, struct mlx5dv_devx_cmd_comp *cmd_comp)
STANDIN_VOID(mlx5dv_devx_destroy_event_channel, struct mlx5dv_devx_event_channel *event_channel)
STANDIN_VOID(mlx5dv_devx_free_uar, struct mlx5dv_devx_uar *devx_uar)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_general_cmd, struct ibv_context *context, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_get_async_cmd_comp, struct mlx5dv_devx_cmd_comp *cmd_comp, struct mlx5dv_devx_async_cmd_hdr *cmd_resp, size_t cmd_resp_len)
STANDIN_ERRNO(ssize_t, -1, mlx5dv_devx_get_event, struct mlx5dv_devx_event_channel *event_channel, struct mlx5dv_devx_async_event_hdr *event_data, size_t event_resp_len)
STANDIN_ERRNO(struct mlx5dv_devx_obj *, NULL, mlx5dv_devx_obj_create, struct ibv_context *context, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_obj_destroy, struct mlx5dv_devx_obj *obj)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_obj_modify, struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_obj_query, struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_obj_query_async, struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, size_t outlen, uint64_t wr_id, struct mlx5dv_devx_cmd_comp *cmd_comp)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_qp_query, struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_query_eqn, struct ibv_context *context, uint32_t vector, uint32_t *eqn)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_subscribe_devx_event, struct mlx5dv_devx_event_channel *event_channel, struct mlx5dv_devx_obj *obj, uint16_t events_sz, uint16_t events_num[], uint64_t cookie)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_subscribe_devx_event_fd, struct mlx5dv_devx_event_channel *event_channel, int fd, struct mlx5dv_devx_obj *obj, uint16_t event_num)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_umem_dereg, struct mlx5dv_devx_umem *umem)
STANDIN_ERRNO(struct mlx5dv_devx_umem *, NULL, mlx5dv_devx_umem_reg, struct ibv_context *ctx, void *addr, size_t size, uint32_t access)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_wq_query, struct ibv_wq *wq, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_aso, struct mlx5dv_dr_domain *domain, struct mlx5dv_devx_obj *devx_obj, uint32_t offset, uint32_t flags, uint8_t return_reg_c)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_default_miss, void)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_dest_array, struct mlx5dv_dr_domain *domain, size_t num_dest, struct mlx5dv_dr_action_dest_attr *dests[])
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_dest_devx_tir, struct mlx5dv_devx_obj *devx_obj)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_dest_ib_port, struct mlx5dv_dr_domain *domain, uint32_t ib_port)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_dest_ibv_qp, struct ibv_qp *ibqp)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_dest_root_table, struct mlx5dv_dr_table *table, uint16_t priority)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_dest_table, struct mlx5dv_dr_table *table)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_drop, void)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_flow_counter, struct mlx5dv_devx_obj *devx_obj, uint32_t offset)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_flow_meter, struct mlx5dv_dr_flow_meter_attr *attr)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_flow_sampler, struct mlx5dv_dr_flow_sampler_attr *attr)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_modify_header, struct mlx5dv_dr_domain *domain, uint32_t flags, size_t actions_sz, __be64 actions[])
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_packet_reformat, struct mlx5dv_dr_domain *domain, uint32_t flags, enum mlx5dv_flow_action_packet_reformat_type reformat_type, size_t data_sz, void *data)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_pop_vlan, void)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_push_vlan, struct mlx5dv_dr_domain *domain, __be32 vlan_hdr)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_tag, uint32_t tag_value)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_action_destroy, struct mlx5dv_dr_action *action)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_action_modify_flow_meter, struct mlx5dv_dr_action *action, struct mlx5dv_dr_flow_meter_attr *attr, __be64 modify_field_select)
STANDIN_VOID(mlx5dv_dr_domain_allow_duplicate_rules, struct mlx5dv_dr_domain *domain, bool allow)
STANDIN_ERRNO(struct mlx5dv_dr_domain *, NULL, mlx5dv_dr_domain_create, struct ibv_context *ctx, enum mlx5dv_dr_domain_type type)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_domain_destroy, struct mlx5dv_dr_domain *domain)
STANDIN_VOID(mlx5dv_dr_domain_set_reclaim_device_memory, struct mlx5dv_dr_domain *dmn, bool enable)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_domain_sync, struct mlx5dv_dr_domain *domain, uint32_t flags)
STANDIN_ERRNO(struct mlx5dv_dr_matcher *, NULL, mlx5dv_dr_matcher_create, struct mlx5dv_dr_table *table, uint16_t priority, uint8_t match_criteria_enable, struct mlx5dv_flow_match_parameters *mask)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_matcher_destroy, struct mlx5dv_dr_matcher *matcher)
STANDIN_ERRNO(struct mlx5dv_dr_rule *, NULL, mlx5dv_dr_rule_create, struct mlx5dv_dr_matcher *matcher, struct mlx5dv_flow_match_parameters *value, size_t num_actions, struct mlx5dv_dr_action *actions[])
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_rule_destroy, struct mlx5dv_dr_rule *rule)
STANDIN_ERRNO(struct mlx5dv_dr_table *, NULL, mlx5dv_dr_table_create, struct mlx5dv_dr_domain *domain, uint32_t level)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_table_destroy, struct mlx5dv_dr_table *table)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dump_dr_domain, FILE *fout, struct mlx5dv_dr_domain *domain)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dump_dr_rule, FILE *fout, struct mlx5dv_dr_rule *rule)
STANDIN_VOID(mlx5dv_free_var, struct mlx5dv_var *dv_var)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_init_obj, struct mlx5dv_obj *obj, uint64_t obj_type)
STANDIN_RETURN(bool, false, mlx5dv_is_supported, struct ibv_device *device)
STANDIN_ERRNO(struct ibv_context *, NULL, mlx5dv_open_device, struct ibv_device *device, struct mlx5dv_context_attr *attr)
STANDIN_ERRNO(struct mlx5dv_pp *, NULL, mlx5dv_pp_alloc, struct ibv_context *context, size_t pp_context_sz, const void *pp_context, uint32_t flags)
STANDIN_VOID(mlx5dv_pp_free, struct mlx5dv_pp *pp)
STANDIN_ERRNO(struct mlx5dv_qp_ex *, NULL, mlx5dv_qp_ex_from_ibv_qp_ex, struct ibv_qp_ex *qp)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_query_device, struct ibv_context *ctx_in, struct mlx5dv_context *attrs_out)
STANDIN_RETURN(int, EOPNOTSUPP, _mlx5dv_query_port, struct ibv_context *context, uint32_t port_num, struct mlx5dv_port *info, size_t info_len)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_set_context_attr, struct ibv_context *context, enum mlx5dv_set_ctx_attr_type type, void *attr)

/* MLX5_1.4 ... MLX5_1.24: the rest of rdma-core 44's libmlx5 exports.  Each
 * answers as libmlx5 does when the context, QP or object is not an mlx5
 * one (its dv ops table is missing): EOPNOTSUPP returned by the int ones,
 * NULL with errno EOPNOTSUPP from the constructors.  The functions that take
 * an object only an mlx5 constructor makes (a DEK, a scheduling node, an
 * EQ ...) can never be reached with one here, and answer the same way. */
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_get_clock_info, struct ibv_context *context, struct mlx5dv_clock_info *clock_info)
STANDIN_ERRNO(struct ibv_flow_action *, NULL, mlx5dv_create_flow_action_esp, struct ibv_context *ctx, struct ibv_flow_action_esp_attr *esp, struct mlx5dv_flow_action_esp *mlx5_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_cq_modify, struct ibv_cq *cq, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_cq_query, struct ibv_cq *cq, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_ind_tbl_modify, struct ibv_rwq_ind_table *ind_tbl, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_ind_tbl_query, struct ibv_rwq_ind_table *ind_tbl, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_qp_modify, struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_srq_modify, struct ibv_srq *srq, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_srq_query, struct ibv_srq *srq, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_wq_modify, struct ibv_wq *wq, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_ERRNO(struct ibv_dm *, NULL, mlx5dv_alloc_dm, struct ibv_context *context, struct ibv_alloc_dm_attr *dm_attr, struct mlx5dv_alloc_dm_attr *mlx5_dm_attr)
STANDIN_ERRNO(struct mlx5dv_dr_action *, NULL, mlx5dv_dr_action_create_dest_vport, struct mlx5dv_dr_domain *domain, uint32_t vport)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dump_dr_matcher, FILE *fout, struct mlx5dv_dr_matcher *matcher)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dump_dr_table, FILE *fout, struct mlx5dv_dr_table *table)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_modify_qp_lag_port, struct ibv_qp *qp, uint8_t port_num)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_query_qp_lag_port, struct ibv_qp *qp, uint8_t *port_num, uint8_t *active_port_num)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_action_modify_aso, struct mlx5dv_dr_action *action, uint32_t offset, uint32_t flags, uint8_t return_reg_c)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_modify_qp_sched_elem, struct ibv_qp *qp, const struct mlx5dv_sched_leaf *requestor, const struct mlx5dv_sched_leaf *responder)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_modify_qp_udp_sport, struct ibv_qp *qp, uint16_t udp_sport)
STANDIN_ERRNO(struct mlx5dv_sched_leaf *, NULL, mlx5dv_sched_leaf_create, struct ibv_context *context, const struct mlx5dv_sched_attr *sched_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_sched_leaf_destroy, struct mlx5dv_sched_leaf *leaf)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_sched_leaf_modify, struct mlx5dv_sched_leaf *leaf, const struct mlx5dv_sched_attr *sched_attr)
STANDIN_ERRNO(struct mlx5dv_sched_node *, NULL, mlx5dv_sched_node_create, struct ibv_context *context, const struct mlx5dv_sched_attr *sched_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_sched_node_destroy, struct mlx5dv_sched_node *node)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_sched_node_modify, struct mlx5dv_sched_node *node, const struct mlx5dv_sched_attr *sched_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_reserved_qpn_alloc, struct ibv_context *ctx, uint32_t *qpn)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_reserved_qpn_dealloc, struct ibv_context *ctx, uint32_t qpn)
STANDIN_ERRNO(struct mlx5dv_devx_umem *, NULL, mlx5dv_devx_umem_reg_ex, struct ibv_context *ctx, struct mlx5dv_devx_umem_in *umem_in)
STANDIN_ERRNO(void *, NULL, mlx5dv_dm_map_op_addr, struct ibv_dm *dm, uint8_t op)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_map_ah_to_qp, struct ibv_ah *ah, uint32_t qp_num)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_qp_cancel_posted_send_wrs, struct mlx5dv_qp_ex *mqp, uint64_t wr_id)
STANDIN_RETURN(int, EOPNOTSUPP, _mlx5dv_mkey_check, struct mlx5dv_mkey *mkey, struct mlx5dv_mkey_err *err_info, size_t err_info_size)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_crypto_login_query_state, struct ibv_context *context, enum mlx5dv_crypto_login_state *state)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_crypto_logout, struct ibv_context *context)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dci_stream_id_reset, struct ibv_qp *qp, uint16_t stream_id)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dek_query, struct mlx5dv_dek *dek, struct mlx5dv_dek_attr *attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_matcher_set_layout, struct mlx5dv_dr_matcher *matcher, struct mlx5dv_dr_matcher_layout *layout)
/* No PCI function is an mlx5 device driven through VFIO by droce. */
STANDIN_ERRNO(struct ibv_device **, NULL, mlx5dv_get_vfio_device_list, struct mlx5dv_vfio_context_attr *attr)
STANDIN_ERRNO(int, -1, mlx5dv_vfio_get_events_fd, struct ibv_context *ibctx)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_vfio_process_events, struct ibv_context *context)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_aso_other_domain_link, struct mlx5dv_devx_obj *devx_obj, struct mlx5dv_dr_domain *peer_dmn, struct mlx5dv_dr_domain *dmn, uint32_t flags, uint8_t return_reg_c)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_dr_aso_other_domain_unlink, struct mlx5dv_devx_obj *devx_obj, struct mlx5dv_dr_domain *dmn)
STANDIN_ERRNO(struct mlx5dv_devx_msi_vector *, NULL, mlx5dv_devx_alloc_msi_vector, struct ibv_context *ibctx)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_free_msi_vector, struct mlx5dv_devx_msi_vector *msi)
STANDIN_ERRNO(struct mlx5dv_devx_eq *, NULL, mlx5dv_devx_create_eq, struct ibv_context *ibctx, const void *in, size_t inlen, void *out, size_t outlen)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_devx_destroy_eq, struct mlx5dv_devx_eq *eq)
STANDIN_ERRNO(struct mlx5dv_steering_anchor *, NULL, mlx5dv_create_steering_anchor, struct ibv_context *context, struct mlx5dv_steering_anchor_attr *attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_destroy_steering_anchor, struct mlx5dv_steering_anchor *sa)
STANDIN_ERRNO(struct mlx5dv_crypto_login_obj *, NULL, mlx5dv_crypto_login_create, struct ibv_context *context, struct mlx5dv_crypto_login_attr_ex *login_attr)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_crypto_login_destroy, struct mlx5dv_crypto_login_obj *crypto_login)
STANDIN_RETURN(int, EOPNOTSUPP, mlx5dv_crypto_login_query, struct mlx5dv_crypto_login_obj *crypto_login, struct mlx5dv_crypto_login_query_attr *query_attr)

/* mlx5dv_init_obj@MLX5_1.0: the name programs linked before rdma-core 16
 * import (the same function; MLX5_1.2 is its default version). */
__attribute__((symver("mlx5dv_init_obj@MLX5_1.0"))) int mlx5dv_init_obj_1_0(struct mlx5dv_obj *obj, uint64_t obj_type);
int
mlx5dv_init_obj_1_0(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return mlx5dv_init_obj(obj, obj_type);
}
