/* SPDX-License-Identifier: BSD-3-Clause
 * verbs_api validation, tier (a), against the fake dataplane: ibv_modify_qp(3)'s
 * rules (the IBTA state table, required and optional attributes, bad values,
 * address resolution, the UDP source port range).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include "fake_dp.h"
#include "verbs_api/internal.h"
#include "validation.h"

Test(modify, rc_reset_init_rtr_rts)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	const struct droce_qp_mod *m = &dqp(qp)->last_mod;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(m->state, DROCE_QPS_INIT);
	cr_assert_eq(m->access, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_eq(qp->state, IBV_QPS_INIT);

	cr_assert_eq(to_rtr(qp), 0);
	cr_assert_eq(m->state, DROCE_QPS_RTR);
	cr_assert_eq(m->mask, (uint32_t)RC_RTR_MASK);
	cr_assert_eq(m->pmtu, 1024);
	cr_assert_eq(m->dest_qpn, 0x42);
	cr_assert_eq(m->rq_psn, 0x100);
	cr_assert_eq(m->max_dest_rd_atomic, 4);
	cr_assert_eq(m->min_rnr_timer, 12);
	/* the AV, resolved: port1 owns 198.18.0.2, so its MAC is the destination */
	cr_assert_arr_eq(m->path.src_mac.addr_bytes, fake_ports[0].mac.addr_bytes, 6);
	cr_assert_arr_eq(m->path.dst_mac.addr_bytes, fake_ports[1].mac.addr_bytes, 6);
	cr_assert_arr_eq(m->path.src_gid, fake_ports[0].gids[0], 16);
	cr_assert_arr_eq(m->path.dst_gid, fake_ports[1].gids[0], 16);
	cr_assert_not(m->path.ipv6);
	cr_assert_eq(m->path.hop_limit, 64);
	cr_assert_geq(m->path.udp_sport, 0xc000);
	cr_assert_eq(m->path.udp_sport, droce_verbs_udp_sport(qp->qp_num, 0x42, 0));

	cr_assert_eq(to_rts(qp), 0);
	cr_assert_eq(m->state, DROCE_QPS_RTS);
	cr_assert_eq(m->timeout, 14);
	cr_assert_eq(m->retry_cnt, 7);
	cr_assert_eq(m->rnr_retry, 7);
	cr_assert_eq(m->sq_psn, 0x200);
	cr_assert_eq(m->max_rd_atomic, 4);
	cr_assert_eq(dqp(qp)->n_mods, 3);

	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS);
	cr_assert_eq(qa.path_mtu, IBV_MTU_1024);
	cr_assert_eq(qa.dest_qp_num, 0x42);
	cr_assert_eq(qa.sq_psn, 0x200);
	cr_assert_eq(qa.rq_psn, 0x100);
	cr_assert_eq(qa.timeout, 14);
	cr_assert_eq(qa.max_rd_atomic, 4);
	cr_assert_eq(qa.max_dest_rd_atomic, 4);
	cr_assert_eq(qa.ah_attr.grh.hop_limit, 64);
	cr_assert_eq(qa.port_num, 1);

	/* back to RESET: attributes forgotten */
	qa.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RESET);
	cr_assert_eq(qa.dest_qp_num, 0);
}

Test(modify, uc_and_ud_paths)
{
	struct ibv_qp *uc = rts_qp(IBV_QPT_UC, 4, 1, 0, 0);
	struct ibv_qp *ud = rts_qp(IBV_QPT_UD, 4, 1, 0, 0);
	struct ibv_qp_attr a;

	cr_assert_eq(dqp(uc)->type, DROCE_QPT_UC);
	cr_assert_eq(dqp(ud)->type, DROCE_QPT_UD);
	/* UC may not name MAX_DEST_RD_ATOMIC (it has no RDMA READ) */
	struct ibv_qp *uc2 = make_qp(IBV_QPT_UC, 4, 1, 0, 0);

	cr_assert_eq(to_init(uc2), 0);
	rtr_attr(&a, "198.18.0.2");
	cr_assert_eq(ibv_modify_qp(uc2, &a, UC_RTR_MASK | IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	cr_assert_eq(ibv_modify_qp(uc2, &a, UC_RTR_MASK), 0);
	/* UD needs a QKEY to reach INIT, and no ACCESS_FLAGS */
	struct ibv_qp *ud2 = make_qp(IBV_QPT_UD, 4, 1, 0, 0);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
	cr_assert_eq(ibv_modify_qp(ud2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		     EINVAL);
	cr_assert_eq(ibv_modify_qp(ud2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS), EINVAL);
	cr_assert_eq(ibv_modify_qp(ud2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_QKEY), 0);
}

Test(modify, transition_table)
{
	/* the valid (cur, next) pairs: IBTA / kernel qp_state_table */
	static const bool valid[7][7] = {
		/*            RESET  INIT   RTR    RTS    SQD    SQE    ERR */
		[IBV_QPS_RESET] = { 1, 1, 0, 0, 0, 0, 1 },
		[IBV_QPS_INIT] = { 1, 1, 1, 0, 0, 0, 1 },
		[IBV_QPS_RTR] = { 1, 0, 0, 1, 0, 0, 1 },
		[IBV_QPS_RTS] = { 1, 0, 0, 1, 1, 0, 1 },
		[IBV_QPS_SQD] = { 1, 0, 0, 1, 1, 0, 1 },
		[IBV_QPS_SQE] = { 1, 0, 0, 1, 0, 0, 1 },
		[IBV_QPS_ERR] = { 1, 0, 0, 0, 0, 0, 1 },
	};
	static const int rc_req[7][7] = {
		[IBV_QPS_RESET][IBV_QPS_INIT] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		[IBV_QPS_INIT][IBV_QPS_RTR] = RC_RTR_MASK & ~IBV_QP_STATE,
		[IBV_QPS_RTR][IBV_QPS_RTS] = RC_RTS_MASK & ~IBV_QP_STATE,
	};

	for (int c = 0; c < 7; c++) {
		for (int n = 0; n < 7; n++) {
			int req = rc_req[c][n] | IBV_QP_STATE;

			cr_assert_eq(droce_verbs_modify_ok(IBV_QPT_RC, c, n, req), valid[c][n],
				     "RC %d -> %d", c, n);
			if (!valid[c][n] || rc_req[c][n] == 0)
				continue;
			/* each required attribute is required */
			for (int bit = 0; bit < 21; bit++)
				if (rc_req[c][n] & (1 << bit))
					cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RC, c, n,
									    req & ~(1 << bit)),
						      "RC %d -> %d without bit %d", c, n, bit);
		}
	}
	/* an attribute outside required | optional */
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
					    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MTU));
	/* optional ones are fine */
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
					IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD,
					IBV_QP_STATE | IBV_QP_AV | IBV_QP_TIMEOUT));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQD,
					IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY));
	/* CUR_STATE only from RTR, RTS, SQD, SQE */
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_ERR,
					    IBV_QP_STATE | IBV_QP_CUR_STATE));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_CUR_STATE));
	/* UD: RTR -> RTS needs SQ_PSN only, INIT -> RTR needs nothing */
	cr_assert(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_STATE));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
					IBV_QP_STATE | IBV_QP_SQ_PSN));
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
					    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT));
	/* RAW_PACKET: RESET -> INIT needs the port, the rest nothing */
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT,
					IBV_QP_STATE | IBV_QP_PORT));
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT,
					    IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX));
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT,
					    IBV_QP_STATE));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_STATE));
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_INIT, IBV_QPS_RTR,
					    IBV_QP_STATE | IBV_QP_AV));
	cr_assert(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_STATE));
	cr_assert_not(droce_verbs_modify_ok(IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_RTS,
					    IBV_QP_STATE | IBV_QP_SQ_PSN));
}

Test(modify, invalid_transitions_through_the_verb)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	struct ibv_qp_attr a;

	/* RESET -> RTR */
	rtr_attr(&a, "198.18.0.2");
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(dqp(qp)->n_mods, 0, "nothing reaches the dataplane");
	cr_assert_eq(to_init(qp), 0);
	/* INIT -> RTS */
	cr_assert_eq(to_rts(qp), EINVAL);
	cr_assert_eq(to_rtr(qp), 0);
	/* RTR -> RTR is not a transition */
	cr_assert_eq(to_rtr(qp), EINVAL);
	cr_assert_eq(to_rts(qp), 0);
	/* RTS -> SQD -> RTS */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_SQD };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	cr_assert_eq(qp->state, IBV_QPS_SQD);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	/* RTS -> RTS without STATE, with an optional attribute */
	a = (struct ibv_qp_attr){ .min_rnr_timer = 3 };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER), 0);
	cr_assert_eq(dqp(qp)->last_mod.state, DROCE_QPS_RTS);
	/* ... but not a required-elsewhere one */
	a = (struct ibv_qp_attr){ .timeout = 3 };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_TIMEOUT), EINVAL);
	/* CUR_STATE must match */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQD };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	a.cur_qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	/* any -> ERR; ERR -> INIT no; ERR -> RESET yes */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	cr_assert_eq(to_init(qp), EINVAL);
	a.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	/* out-of-range state, unknown mask bit */
	a.qp_state = (enum ibv_qp_state)9;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | (1 << 30)), EINVAL);
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT), EINVAL);
}

Test(modify, missing_required_attribute)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	cr_assert_eq(to_init(qp), 0);
	rtr_attr(&a, "198.18.0.2");
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK & ~IBV_QP_AV), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_INIT);
	cr_assert_eq(to_rtr(qp), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK & ~IBV_QP_SQ_PSN), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_RTR);
}

/* One INIT -> RTR attempt with attribute @field set to @value: @err expected. */
#define RTR_BAD(field, value, err)                                                        \
	do {                                                                              \
		struct ibv_qp_attr a_;                                                    \
		rtr_attr(&a_, "198.18.0.2");                                              \
		a_.field = value;                                                         \
		cr_assert_eq(ibv_modify_qp(qp, &a_, RC_RTR_MASK), err, #field " = " #value); \
		cr_assert_eq(qp->state, IBV_QPS_INIT);                                    \
	} while (0)

Test(modify, bad_values)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 2 };
	int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

	cr_assert_eq(ibv_modify_qp(qp, &a, init_mask), EINVAL); /* port 2 */
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | (1 << 9);
	cr_assert_eq(ibv_modify_qp(qp, &a, init_mask), EINVAL);
	cr_assert_eq(to_init(qp), 0);

	RTR_BAD(path_mtu, (enum ibv_mtu)0, EINVAL);
	RTR_BAD(path_mtu, (enum ibv_mtu)6, EINVAL);
	RTR_BAD(path_mtu, IBV_MTU_2048, EINVAL); /* over the 1500-byte port's 1024 */
	RTR_BAD(max_dest_rd_atomic, DROCE_DP_MAX_RD_ATOMIC + 1, EINVAL);
	RTR_BAD(min_rnr_timer, 32, EINVAL);
	RTR_BAD(dest_qp_num, 1u << 24, EINVAL);
	RTR_BAD(ah_attr.is_global, 0, EINVAL);
	RTR_BAD(ah_attr.port_num, 2, EINVAL);
	RTR_BAD(ah_attr.grh.sgid_index, 2, ENODATA); /* empty, in the table */
	RTR_BAD(ah_attr.grh.sgid_index, 7, ENODATA);
	RTR_BAD(ah_attr.grh.sgid_index, 8, EINVAL); /* past the table's 8 */
	RTR_BAD(ah_attr.grh.sgid_index, 255, EINVAL);
	RTR_BAD(ah_attr.grh.sgid_index, 1, EINVAL); /* IPv6 source, IPv4 destination */
	RTR_BAD(ah_attr.grh.dgid.global.interface_id, 0, EINVAL);
	{
		struct ibv_qp_attr z;

		rtr_attr(&z, "198.18.0.2");
		memset(&z.ah_attr.grh.dgid, 0, 16);
		cr_assert_eq(ibv_modify_qp(qp, &z, RC_RTR_MASK), EINVAL, "zero dgid");
	}
	/* ALT_PATH: droce has no alternate paths */
	{
		struct ibv_qp_attr b;

		rtr_attr(&b, "198.18.0.2");
		cr_assert_eq(ibv_modify_qp(qp, &b, RC_RTR_MASK | IBV_QP_ALT_PATH), EINVAL);
	}
	cr_assert_eq(dqp(qp)->n_mods, 1);
	cr_assert_eq(to_rtr(qp), 0);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 32, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.timeout = 31;
	a.retry_cnt = 8;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.retry_cnt = 7;
	a.rnr_retry = 8;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.rnr_retry = 7;
	a.max_rd_atomic = DROCE_DP_MAX_RD_ATOMIC + 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	a.max_rd_atomic = DROCE_DP_MAX_RD_ATOMIC;
	a.sq_psn = 0x7654321; /* 24 bits are kept */
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTS_MASK), 0);
	cr_assert_eq(dqp(qp)->last_mod.sq_psn, 0x654321);
}

Test(modify, address_resolution)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	const struct droce_qp_mod *m = &dqp(qp)->last_mod;
	struct rte_ether_addr peer = { .addr_bytes = { 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f } };
	struct ibv_qp_attr a;

	cr_assert_eq(to_init(qp), 0);
	/* not a local port, not in the ARP table */
	{
		struct ibv_qp_attr b;

		rtr_attr(&b, "198.18.0.99");
		cr_assert_eq(ibv_modify_qp(qp, &b, RC_RTR_MASK), EHOSTUNREACH);
		droce_port_arp_learn(&fake_ports[0], htonl(0xc6120063), &peer); /* .99 */
		b.ah_attr.grh.traffic_class = 0x68;
		b.ah_attr.grh.flow_label = 0x12345;
		b.ah_attr.sl = 5;
		cr_assert_eq(ibv_modify_qp(qp, &b, RC_RTR_MASK), 0);
	}
	cr_assert_arr_eq(m->path.dst_mac.addr_bytes, peer.addr_bytes, 6);
	cr_assert_eq(m->path.traffic_class, 0x68);
	cr_assert_eq(m->path.flow_label, 0x12345);
	cr_assert_eq(m->path.vlan_pcp, 5);
	cr_assert_not(m->path.vlan);
	cr_assert_eq(m->path.udp_sport, droce_verbs_udp_sport(0, 0, 0x12345));

	/* IPv6: link-local EUI-64 carries the MAC */
	qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	m = &dqp(qp)->last_mod;
	cr_assert_eq(to_init(qp), 0);
	rtr_attr(&a, "0.0.0.0");
	inet_pton(AF_INET6, "fe80::0800:27ff:fe01:0203", a.ah_attr.grh.dgid.raw);
	a.ah_attr.grh.sgid_index = 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK), 0);
	cr_assert(m->path.ipv6);
	{
		const uint8_t want[6] = { 0x0a, 0x00, 0x27, 0x01, 0x02, 0x03 };

		cr_assert_arr_eq(m->path.dst_mac.addr_bytes, want, 6);
	}
	/* IPv6 global, unknown: unreachable */
	qp = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
	cr_assert_eq(to_init(qp), 0);
	inet_pton(AF_INET6, "fd00::99", a.ah_attr.grh.dgid.raw);
	cr_assert_eq(ibv_modify_qp(qp, &a, RC_RTR_MASK), EHOSTUNREACH);
}

Test(modify, udp_sport_range)
{
	for (uint32_t l = 1; l < 2000; l += 7)
		for (uint32_t r = 1; r < 2000; r += 13) {
			uint16_t s = droce_verbs_udp_sport(l, r, 0);

			cr_assert_geq(s, 0xc000);
		}
	cr_assert_neq(droce_verbs_udp_sport(0x11, 0x12, 0), droce_verbs_udp_sport(0x11, 0x13, 0));
}

/* ================= post_send / post_recv ================= */

TestSuite(post, .init = setup, .timeout = 10);

/*
 * What the kernel accepts of a RoCE address vector, droce accepts (issue 23
 * §1): uverbs' modify_qp and create_ah check the port, the GRH and the
 * source GID (rdma_check_ah_attr, rdma_get_gid_attr); dlid, src_path_bits
 * and static_rate are InfiniBand's and ignored on RoCE; rxe checks no sl,
 * no flow label width and (ib_security being InfiniBand's only) no P_Key
 * index.  Each attribute alone, at values the kernel takes.
 */
#define RTR_OK(field, value)                                                              \
	do {                                                                              \
		struct ibv_qp *q_ = make_qp(IBV_QPT_RC, 4, 1, 0, 0);                      \
		struct ibv_qp_attr a_, g_;                                                \
		struct ibv_qp_init_attr i_;                                               \
		cr_assert_eq(to_init(q_), 0);                                             \
		rtr_attr(&a_, "198.18.0.2");                                              \
		a_.field = value;                                                         \
		cr_assert_eq(ibv_modify_qp(q_, &a_, RC_RTR_MASK), 0, #field " = " #value); \
		cr_assert_eq(q_->state, IBV_QPS_RTR);                                     \
		cr_assert_eq(ibv_query_qp(q_, &g_, IBV_QP_AV, &i_), 0);                   \
		cr_assert_eq(g_.field, a_.field, #field " reported as given");            \
		qp = q_;                                                                  \
	} while (0)

Test(modify, roce_av_as_kernel)
{
	struct ibv_qp *qp;
	const struct droce_qp_mod *m;

	/* dlid: UCX's 0xC000 + path; ignored */
	RTR_OK(ah_attr.dlid, 0xc000);
	m = &dqp(qp)->last_mod;
	cr_assert_eq(m->path.udp_sport, droce_verbs_udp_sport(qp->qp_num, 0x42, 0));
	cr_assert_arr_eq(m->path.dst_mac.addr_bytes, fake_ports[1].mac.addr_bytes, 6);
	RTR_OK(ah_attr.dlid, 0xffff);
	RTR_OK(ah_attr.src_path_bits, 0x7f);
	RTR_OK(ah_attr.static_rate, IBV_RATE_100_GBPS);
	RTR_OK(ah_attr.static_rate, 0xff);
	/* sl: any; its low three bits are the VLAN priority */
	RTR_OK(ah_attr.sl, 16);
	cr_assert_eq(dqp(qp)->last_mod.path.vlan_pcp, 0);
	RTR_OK(ah_attr.sl, 0xff);
	cr_assert_eq(dqp(qp)->last_mod.path.vlan_pcp, 7);
	/* flow label: the low 20 bits (UCX gives ~0) */
	RTR_OK(ah_attr.grh.flow_label, 0xffffffffu);
	m = &dqp(qp)->last_mod;
	cr_assert_eq(m->path.flow_label, 0xfffff);
	cr_assert_eq(m->path.udp_sport, droce_verbs_udp_sport(qp->qp_num, 0x42, 0xfffff));
	RTR_OK(ah_attr.grh.flow_label, 1u << 20);
	cr_assert_eq(dqp(qp)->last_mod.path.flow_label, 0);

	/* P_Key index: taken and reported; the QP keeps the port's one P_Key */
	{
		struct ibv_qp *q = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 5,
					 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
		struct ibv_qp_init_attr i;

		cr_assert_eq(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							  IBV_QP_ACCESS_FLAGS),
			     0);
		cr_assert_eq(dqp(q)->last_mod.pkey_index, 0);
		memset(&a, 0, sizeof(a));
		cr_assert_eq(ibv_query_qp(q, &a, IBV_QP_PKEY_INDEX, &i), 0);
		cr_assert_eq(a.pkey_index, 5);
	}
	/* still refused: another port, no GRH (RoCE needs it), in the AV too */
	{
		struct ibv_qp *q = make_qp(IBV_QPT_RC, 4, 1, 0, 0);
		struct ibv_qp_attr a;

		cr_assert_eq(to_init(q), 0);
		rtr_attr(&a, "198.18.0.2");
		a.ah_attr.port_num = 0;
		cr_assert_eq(ibv_modify_qp(q, &a, RC_RTR_MASK), EINVAL);
		rtr_attr(&a, "198.18.0.2");
		a.ah_attr.is_global = 0;
		a.ah_attr.dlid = 0xc000;
		cr_assert_eq(ibv_modify_qp(q, &a, RC_RTR_MASK), EINVAL);
		cr_assert_eq(q->state, IBV_QPS_INIT);
	}
}

/* ibv_create_ah with UCX 1.13's RoCE attributes (its GID probe and its UD
 * wire-up: dlid 0xC000, flow label ~0, traffic class 106), and the
 * kernel's errno for each attribute it refuses. */
Test(modify, create_ah_as_kernel)
{
	struct ibv_ah_attr at = {
		.dlid = 0xc000, .sl = 0, .port_num = 1, .is_global = 1,
		.grh = { .sgid_index = 0, .hop_limit = 255, .traffic_class = 106,
			 .flow_label = 0xffffffffu },
	};
	struct droce_vah *v;
	struct ibv_ah *ah;

	gid_v4(&at.grh.dgid, "198.18.0.2");
	ah = ibv_create_ah(pd, &at);
	cr_assert_not_null(ah, "UCX's AH: %s", strerror(errno));
	v = (struct droce_vah *)ah;
	cr_assert_arr_eq(v->dah.path.dst_mac.addr_bytes, fake_ports[1].mac.addr_bytes, 6);
	cr_assert_eq(v->dah.path.traffic_class, 106);
	cr_assert_eq(v->dah.path.flow_label, 0xfffff);
	cr_assert_eq(v->dah.path.udp_sport, droce_verbs_udp_sport(0, 0, 0xfffff));
	cr_assert_eq(ibv_destroy_ah(ah), 0);

	at.sl = 200;
	at.src_path_bits = 3;
	at.static_rate = IBV_RATE_40_GBPS;
	ah = ibv_create_ah(pd, &at);
	cr_assert_not_null(ah);
	cr_assert_eq(((struct droce_vah *)ah)->dah.path.vlan_pcp, 200 & 7);
	cr_assert_eq(ibv_destroy_ah(ah), 0);

	at.grh.sgid_index = 3; /* empty */
	errno = 0;
	cr_assert_null(ibv_create_ah(pd, &at));
	cr_assert_eq(errno, ENODATA);
	at.grh.sgid_index = 8;
	errno = 0;
	cr_assert_null(ibv_create_ah(pd, &at));
	cr_assert_eq(errno, EINVAL);
	at.grh.sgid_index = 0;
	at.port_num = 2;
	errno = 0;
	cr_assert_null(ibv_create_ah(pd, &at));
	cr_assert_eq(errno, EINVAL);
	at.port_num = 1;
	at.is_global = 0;
	errno = 0;
	cr_assert_null(ibv_create_ah(pd, &at));
	cr_assert_eq(errno, EINVAL);
}
