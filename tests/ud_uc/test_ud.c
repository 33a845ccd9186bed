/* SPDX-License-Identifier: BSD-3-Clause
 * UD through the verbs API: address handles by IPv4-mapped and IPv6 GIDs,
 * the MTU boundary (an oversize send completes successfully and sends
 * nothing, as Linux rxe does: IBTA C10-93.1.1), the GRH area of receive
 * completions and ibv_create_ah_from_wc, Q_Key checks and the Q_Key high
 * bit rule of ibv_post_send(3).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>

#include "common.h"

#define QKEY 0x11110000u
#define RECV_SLOT 8192u

static struct t_end A, B;

TestSuite(ud, .fini = tc_stop, .timeout = 60);

static void
setup(unsigned int ip_mtu)
{
	t_start(ip_mtu, NULL);
	t_open(&A, "droce0", IBV_QPT_UD, 16, 64);
	t_open(&B, "droce1", IBV_QPT_UD, 16, 64);
	t_ud_up(&A, QKEY);
	t_ud_up(&B, QKEY);
}

static struct ibv_ah *
make_ah(struct t_end *from, const union ibv_gid *dgid, int sgid_index)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
				 .grh = { .dgid = *dgid, .sgid_index = (uint8_t)sgid_index,
					  .hop_limit = 64 } };
	struct ibv_ah *ah = ibv_create_ah(from->pd, &a);

	cr_assert_not_null(ah, "ibv_create_ah: %s", strerror(errno));
	return ah;
}

static int
ud_send(struct t_end *e, struct ibv_ah *ah, uint32_t rqpn, uint32_t qkey, uint64_t id,
	size_t off, uint32_t len, bool imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				 .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(0xabc00000u + (uint32_t)id) },
			   *bad = NULL;

	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = rqpn;
	w.wr.ud.remote_qkey = qkey;
	return ibv_post_send(e->qp, &w, &bad);
}

static void
check_send_wc(const struct ibv_wc *wc, uint64_t id, const struct t_end *e)
{
	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "send %llu: %s", (unsigned long long)id,
		     ibv_wc_status_str(wc->status));
	cr_assert_eq(wc->wr_id, id);
	cr_assert_eq(wc->opcode, IBV_WC_SEND);
	cr_assert_eq(wc->qp_num, e->qp->qp_num);
}

/* Checks the GRH area B received from A over @v6. */
static void
check_grh(const uint8_t *g, bool v6, uint32_t payload, bool imm)
{
	if (v6) {
		const struct rte_ipv6_hdr *ip6 = (const void *)g;

		cr_assert_eq(rte_be_to_cpu_32(ip6->vtc_flow) >> 28, 6, "GRH: IPv6 version");
		cr_assert_eq(ip6->proto, IPPROTO_UDP);
		/* UDP, BTH, DETH, ImmDt, payload, pad, ICRC */
		cr_assert_eq(rte_be_to_cpu_16(ip6->payload_len),
			     8 + 12 + 8 + (imm ? 4 : 0) + payload + (-payload & 3) + 4);
		cr_assert_arr_eq(ip6->src_addr, A.gid6.raw, 16, "GRH source is the sender's GID");
		cr_assert_arr_eq(ip6->dst_addr, B.gid6.raw, 16);
	} else {
		const struct rte_ipv4_hdr *ip4 = (const void *)(g + 20);
		static const uint8_t zero[20];

		cr_assert_arr_eq(g, zero, 20, "IPv4 form: the first 20 bytes are zero");
		cr_assert_eq(ip4->version_ihl, 0x45);
		cr_assert_eq(ip4->next_proto_id, IPPROTO_UDP);
		cr_assert_eq(memcmp(&ip4->src_addr, A.gid4.raw + 12, 4), 0);
		cr_assert_eq(memcmp(&ip4->dst_addr, B.gid4.raw + 12, 4), 0);
		cr_assert_eq(__rte_raw_cksum_reduce(__rte_raw_cksum(ip4, 20, 0)), 0xffff,
			     "IPv4 header checksum as received");
	}
}

/* MTU-1 and MTU arrive whole; MTU+1 completes successfully, sends nothing. */
static void
mtu_boundary(bool v6, unsigned int ip_mtu, uint32_t want_mtu)
{
	struct droce_engine_stats s0, s1;
	struct ibv_ah *ah;
	uint32_t mtu;
	uint64_t id = 1;

	setup(ip_mtu);
	mtu = t_port_mtu(&A);
	cr_assert_eq(mtu, want_mtu);
	ah = make_ah(&A, v6 ? &B.gid6 : &B.gid4, v6 ? 1 : 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(t_post_recv(&B, 100 + i, (size_t)i * RECV_SLOT, RECV_SLOT), 0);

	for (uint32_t len = mtu - 1; len <= mtu; len++, id++) {
		struct ibv_wc wc;
		const uint8_t *slot = B.buf + (id - 1) * RECV_SLOT;

		tc_fill(A.buf, len, (uint32_t)id);
		cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, id, 0, len, id == 2), 0);
		wc = tc_wait(A.scq, 3000, "send");
		check_send_wc(&wc, id, &A);
		wc = tc_wait(B.rcq, 3000, "receive");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
		cr_assert_eq(wc.wr_id, 100 + id - 1);
		cr_assert_eq(wc.opcode, IBV_WC_RECV);
		cr_assert_eq(wc.byte_len, 40 + len, "byte_len counts the 40-byte GRH");
		cr_assert_eq(wc.qp_num, B.qp->qp_num);
		cr_assert_eq(wc.src_qp, A.qp->qp_num);
		/* mlx5's RoCE packet type, which UCX's ud_verbs reads: v2, L3 */
		cr_assert_eq(wc.sl, v6 ? 0x9 : 0xa, "sl 0x%x", wc.sl);
		if (id == 2) {
			cr_assert_eq(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
			cr_assert_eq(ntohl(wc.imm_data), 0xabc00000u + 2);
		} else {
			cr_assert_eq(wc.wc_flags, IBV_WC_GRH);
		}
		cr_assert(tc_check(slot + 40, len, (uint32_t)id), "payload of %u bytes", len);
		check_grh(slot, v6, len, id == 2);
	}

	/* MTU + 1: the post succeeds, the WR completes successfully, nothing is sent */
	s0 = t_stats();
	tc_fill(A.buf, mtu + 1, 99);
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 3, 0, mtu + 1, false), 0,
		     "rxe accepts the post");
	{
		struct ibv_wc wc = tc_wait(A.scq, 3000, "oversize send");

		check_send_wc(&wc, 3, &A);
	}
	tc_expect_none(B.rcq, 300, "oversize UD message");
	s1 = t_stats();
	cr_assert_eq(s1.ud_oversize - s0.ud_oversize, 1);

	/* the receive WQE it did not use takes the next message */
	tc_fill(A.buf, 17, 4);
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 4, 0, 17, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 4, &A);
	{
		struct ibv_wc wc = tc_wait(B.rcq, 3000, "after oversize");

		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, 102);
		cr_assert_eq(wc.byte_len, 40 + 17);
		cr_assert(tc_check(B.buf + 2 * RECV_SLOT + 40, 17, 4));
	}
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(ud, mtu_boundary_ipv4)
{
	mtu_boundary(false, 1500, 1024);
}

Test(ud, mtu_boundary_ipv6)
{
	mtu_boundary(true, 9000, 4096);
}

/* B answers A through an AH made from the receive completion. */
static void
round_trip(bool v6)
{
	struct ibv_ah *ah = make_ah(&A, v6 ? &B.gid6 : &B.gid4, v6 ? 1 : 0), *back;
	struct ibv_ah_attr attr;
	struct ibv_wc wc;

	cr_assert_eq(t_post_recv(&B, 1, 0, 4096), 0);
	cr_assert_eq(t_post_recv(&A, 2, 0, 4096), 0);
	tc_fill(A.buf + 8192, 300, 7);
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 1, 8192, 300, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 1, &A);
	wc = tc_wait(B.rcq, 3000, "receive");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert(wc.wc_flags & IBV_WC_GRH);

	cr_assert_eq(ibv_init_ah_from_wc(B.ctx, 1, &wc, (struct ibv_grh *)B.buf, &attr), 0, "%s",
		     strerror(errno));
	cr_assert_eq(attr.is_global, 1);
	cr_assert_eq(attr.port_num, 1);
	cr_assert_arr_eq(attr.grh.dgid.raw, (v6 ? A.gid6 : A.gid4).raw, 16,
			 "the sender's GID comes back");
	cr_assert_eq(attr.grh.sgid_index, v6 ? 1 : 0, "the GID the message was sent to");

	back = ibv_create_ah_from_wc(B.pd, &wc, (struct ibv_grh *)B.buf, 1);
	cr_assert_not_null(back, "ibv_create_ah_from_wc: %s", strerror(errno));
	tc_fill(B.buf + 8192, 123, 8);
	cr_assert_eq(ud_send(&B, back, wc.src_qp, QKEY, 9, 8192, 123, true), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(B.scq, 3000, "reply") }, 9, &B);
	wc = tc_wait(A.rcq, 3000, "reply received");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.src_qp, B.qp->qp_num);
	cr_assert_eq(wc.byte_len, 40 + 123);
	cr_assert_eq(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	cr_assert(tc_check(A.buf + 40, 123, 8));
	if (v6)
		cr_assert_arr_eq(A.buf + 8, B.gid6.raw, 16, "reply GRH source");
	else
		cr_assert_eq(memcmp(A.buf + 20 + 12, B.gid4.raw + 12, 4), 0, "reply GRH source");
	cr_assert_eq(ibv_destroy_ah(back), 0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(ud, ah_from_wc_round_trip_ipv4)
{
	setup(1500);
	round_trip(false);
}

Test(ud, ah_from_wc_round_trip_ipv6)
{
	setup(1500);
	round_trip(true);
}

Test(ud, qkey_mismatch_dropped_and_counted)
{
	struct droce_engine_stats s0, s1;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	setup(1500);
	ah = make_ah(&A, &B.gid4, 0);
	cr_assert_eq(t_post_recv(&B, 1, 0, 4096), 0);
	s0 = t_stats();
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY + 1, 1, 0, 64, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 1, &A);
	tc_expect_none(B.rcq, 300, "wrong Q_Key");
	s1 = t_stats();
	cr_assert_eq(s1.qkey_drops - s0.qkey_drops, 1);

	tc_fill(A.buf, 64, 2);
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 2, 0, 64, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 2, &A);
	wc = tc_wait(B.rcq, 3000, "right Q_Key");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 1, "the receive WQE was not used by the dropped datagram");
	cr_assert(tc_check(B.buf + 40, 64, 2));
	cr_assert_eq(t_stats().qkey_drops, s1.qkey_drops);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(ud, qkey_high_bit_uses_the_qps_own)
{
	struct droce_engine_stats s0;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .qkey = QKEY + 5 };
	struct ibv_ah *ah;
	struct ibv_wc wc;

	setup(1500);
	ah = make_ah(&A, &B.gid6, 1);
	cr_assert_eq(t_post_recv(&B, 1, 0, 4096), 0);
	/* A's qkey equals B's: a WR qkey with the high bit set takes it */
	tc_fill(A.buf, 32, 1);
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, 0x80000000u, 1, 0, 32, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 1, &A);
	wc = tc_wait(B.rcq, 3000, "high-bit Q_Key");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert(tc_check(B.buf + 40, 32, 1));

	/* now A's own qkey differs from B's: the same WR is dropped */
	cr_assert_eq(ibv_modify_qp(A.qp, &a, IBV_QP_STATE | IBV_QP_QKEY), 0);
	cr_assert_eq(t_post_recv(&B, 2, 0, 4096), 0);
	s0 = t_stats();
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, 0xffffffffu, 2, 0, 32, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 2, &A);
	tc_expect_none(B.rcq, 300, "A's own (now wrong) Q_Key");
	cr_assert_eq(t_stats().qkey_drops - s0.qkey_drops, 1);
	/* and a WR naming B's qkey explicitly still arrives */
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 3, 0, 32, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 3, &A);
	wc = tc_wait(B.rcq, 3000, "explicit Q_Key");
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(ud, ah_busy_until_its_wr_completes)
{
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_send_wr w, *bad = NULL;

	setup(1500);
	ah = make_ah(&A, &B.gid4, 0);
	cr_assert_eq(ibv_dealloc_pd(A.pd), EBUSY, "the AH holds its PD");
	/* co-located engine: nothing runs until we poll */
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 1, 0, 8, false), 0);
	cr_assert_eq(ibv_destroy_ah(ah), EBUSY, "a posted WR still names the AH");
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 1, &A);
	cr_assert_eq(ibv_destroy_ah(ah), 0);

	/* post validation: a UD send needs an AH; UD has no RDMA */
	memset(&w, 0, sizeof(w));
	sge = (struct ibv_sge){ .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND;
	w.wr.ud.remote_qpn = B.qp->qp_num;
	cr_assert_eq(ibv_post_send(A.qp, &w, &bad), EINVAL);
	cr_assert_eq(bad, &w);
	w.opcode = IBV_WR_RDMA_WRITE;
	cr_assert_eq(ibv_post_send(A.qp, &w, &bad), EINVAL);
}

Test(ud, create_ah_errors)
{
	struct ibv_ah_attr a = { .is_global = 0, .port_num = 1 };
	union ibv_gid nowhere;

	setup(1500);
	errno = 0;
	cr_assert_null(ibv_create_ah(A.pd, &a), "RoCE needs a GRH");
	cr_assert_eq(errno, EINVAL);
	memset(&nowhere, 0, sizeof(nowhere));
	nowhere.raw[10] = nowhere.raw[11] = 0xff;
	inet_pton(AF_INET, "198.18.0.77", nowhere.raw + 12);
	a.is_global = 1;
	a.grh.dgid = nowhere;
	errno = 0;
	cr_assert_null(ibv_create_ah(A.pd, &a), "no MAC known for the address");
	cr_assert_eq(errno, EHOSTUNREACH);
	a.grh.dgid = B.gid6; /* sgid 0 is IPv4: families differ */
	errno = 0;
	cr_assert_null(ibv_create_ah(A.pd, &a));
	cr_assert_eq(errno, EINVAL);
}

/* A datagram longer than its receive buffer (GRH included) completes that
 * WQE with LOC_LEN_ERR, the error table's status, and the QP carries on. */
Test(ud, receive_too_long_completes_in_error_and_carries_on)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	setup(1500);
	ah = make_ah(&A, &B.gid4, 0);
	cr_assert_eq(t_post_recv(&B, 1, 0, 40 + 63), 0); /* one byte short */
	cr_assert_eq(t_post_recv(&B, 2, 8192, 4096), 0);
	tc_fill(A.buf, 64, 3);
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 1, 0, 64, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 1, &A);
	wc = tc_wait(B.rcq, 3000, "too long");
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(ud_send(&A, ah, B.qp->qp_num, QKEY, 2, 0, 64, false), 0);
	check_send_wc((struct ibv_wc[]){ tc_wait(A.scq, 3000, "send") }, 2, &A);
	wc = tc_wait(B.rcq, 3000, "the next datagram");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(wc.byte_len, 40 + 64);
	cr_assert(tc_check(B.buf + 8192 + 40, 64, 3));
	cr_assert_eq(ibv_query_qp(B.qp, &qa, IBV_QP_STATE, &init), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}
