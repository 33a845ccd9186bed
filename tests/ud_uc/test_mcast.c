/* SPDX-License-Identifier: BSD-3-Clause
 * UD multicast through the verbs API: ibv_attach_mcast / ibv_detach_mcast
 * and their errnos (the kernel's), delivery of one group datagram to every
 * attached QP of both engines (bytes and CQEs), the Q_Key checked per QP,
 * groups nobody joined dropped and counted, the local loop on the sending
 * port, IPv4 and IPv6 groups, and the frames on the wire (a capture checked
 * with tshark and scapy by tests/decoders/check_mcast.py: destination QPN
 * 0xFFFFFF, the group's MAC and IP address, the ICRC, IGMP / MLD reports).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "pmd_glue/port.h"
#include "wait.h"

#define QKEY 0x01234567u /* RDMA_UDP_QKEY, what rdma_cm uses for groups */
#define NRECV 4          /* QPs attached on droce1 (two per engine) */
#define SLOT 4096u

#ifndef DROCE_SRC_ROOT
#define DROCE_SRC_ROOT "."
#endif
#define CHECK_SCRIPT DROCE_SRC_ROOT "/tests/decoders/check_mcast.py"

TestSuite(mcast, .fini = tc_stop, .timeout = 90);

/* one side: a context, PD, buffer, CQs and @n UD QPs */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *scq, *rcq[NRECV];
	struct ibv_qp *qp[NRECV];
	unsigned int n;
	union ibv_gid gid4, gid6;
};

static struct side S, R; /* sender on droce0, receivers on droce1 */

static void
start(const char *port0_extra)
{
	struct tc_pair o = { .engines = 2, .ipv6 = true, .port0_extra = port0_extra };

	tc_start(&o);
}

static void
side_open(struct side *s, const char *dev, unsigned int n, const uint32_t *qkeys)
{
	memset(s, 0, sizeof(*s));
	s->ctx = tc_open(dev, NULL);
	cr_assert_eq(ibv_query_gid(s->ctx, 1, 0, &s->gid4), 0);
	cr_assert_eq(ibv_query_gid(s->ctx, 1, 1, &s->gid6), 0);
	s->pd = ibv_alloc_pd(s->ctx);
	s->mr = tc_reg_buf(s->pd, NRECV * 4 * SLOT, 0);
	s->buf = s->mr->addr;
	s->scq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	cr_assert_not_null(s->scq);
	s->n = n;
	for (unsigned int i = 0; i < n; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_UD,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct tc_conn c = { .qkey = qkeys ? qkeys[i] : QKEY };

		s->rcq[i] = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
		cr_assert_not_null(s->rcq[i]);
		ia.send_cq = s->scq;
		ia.recv_cq = s->rcq[i];
		s->qp[i] = ibv_create_qp(s->pd, &ia);
		cr_assert_not_null(s->qp[i], "ibv_create_qp: %s", strerror(errno));
		tc_qp_up(s->qp[i], &c);
	}
}

static void
group_gid(union ibv_gid *g, const char *addr)
{
	memset(g, 0, sizeof(*g));
	if (strchr(addr, ':') != NULL) {
		cr_assert_eq(inet_pton(AF_INET6, addr, g->raw), 1);
	} else {
		g->raw[10] = g->raw[11] = 0xff;
		cr_assert_eq(inet_pton(AF_INET, addr, g->raw + 12), 1);
	}
}

static struct ibv_ah *
group_ah(struct side *s, const union ibv_gid *g, bool v6)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
				 .grh = { .dgid = *g, .sgid_index = v6 ? 1 : 0, .hop_limit = 64 } };
	struct ibv_ah *ah = ibv_create_ah(s->pd, &a);

	cr_assert_not_null(ah, "ibv_create_ah (group): %s", strerror(errno));
	return ah;
}

static void
post_recv(struct side *s, unsigned int i, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf + (size_t)i * SLOT, .length = SLOT,
			       .lkey = s->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	memset(s->buf + (size_t)i * SLOT, 0, SLOT);
	cr_assert_eq(ibv_post_recv(s->qp[i], &w, &bad), 0);
}

static void
send_group(struct side *s, struct ibv_ah *ah, uint32_t qkey, uint32_t len, uint8_t seed)
{
	uint8_t *p = s->buf + (size_t)(NRECV * 3) * SLOT;
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr w = { .wr_id = seed, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htonl(0xc0de0000u | seed) },
			   *bad;
	struct ibv_wc wc;

	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = 0xffffff;
	w.wr.ud.remote_qkey = qkey;
	cr_assert_eq(ibv_post_send(s->qp[0], &w, &bad), 0);
	wc = tc_wait(s->scq, 2000, "group send");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
}

/* QP @i of @s received the datagram of @seed (@len bytes, from @from's QP 0). */
static void
check_recv(struct side *s, unsigned int i, uint32_t len, uint8_t seed, const struct side *from)
{
	struct ibv_wc wc = tc_wait(s->rcq[i], 2000, "group receive");
	const uint8_t *p = s->buf + (size_t)i * SLOT + 40;

	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "QP %u: %s", i, ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, len + 40);
	cr_assert_eq(wc.qp_num, s->qp[i]->qp_num);
	cr_assert_eq(wc.src_qp, from->qp[0]->qp_num);
	cr_assert(wc.wc_flags & IBV_WC_GRH);
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(wc.imm_data), 0xc0de0000u | seed);
	for (uint32_t k = 0; k < len; k++)
		cr_assert_eq(p[k], (uint8_t)(seed + k * 7), "QP %u byte %u", i, k);
}

static void
expect_nothing(struct ibv_cq *cq, unsigned int ms)
{
	struct ibv_wc wc;

	cr_assert_eq(tc_poll(cq, &wc, 1, ms), 0, "an unexpected completion");
}

static struct droce_engine_stats
stats(void)
{
	struct droce_engine_stats sum, s;

	memset(&sum, 0, sizeof(sum));
	for (unsigned int e = 0; e < droce_engine_count(); e++) {
		droce_engine_stats_get(e, &s);
		sum.mcast_rx += s.mcast_rx;
		sum.mcast_no_group += s.mcast_no_group;
		sum.mcast_loop += s.mcast_loop;
		sum.qkey_drops += s.qkey_drops;
		sum.forwarded += s.forwarded;
	}
	return sum;
}

Test(mcast, attach_errnos)
{
	union ibv_gid g, uni;
	struct ibv_device_attr da;
	struct t_end rc;

	start(NULL);
	side_open(&R, "droce1", 1, NULL);
	group_gid(&g, "239.1.2.3");
	group_gid(&uni, "198.18.0.9");
	cr_assert_eq(ibv_query_device(R.ctx, &da), 0);
	cr_assert_eq(da.max_mcast_grp, DROCE_MCAST_MAX_GROUPS);
	cr_assert_eq(da.max_mcast_qp_attach, DROCE_MCAST_MAX_QP_ATTACH);
	cr_assert_gt(da.max_total_mcast_qp_attach, 0);
	/* not a group: EINVAL, IPv4 (a unicast address) and IPv6 (not ff00::/8) */
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &uni, 0), EINVAL);
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &R.gid6, 0), EINVAL);
	cr_assert_eq(ibv_detach_mcast(R.qp[0], &uni, 0), EINVAL);
	cr_assert_eq(ibv_attach_mcast(NULL, &g, 0), EINVAL);
	cr_assert_eq(ibv_attach_mcast(R.qp[0], NULL, 0), EINVAL);
	/* not attached: EINVAL (uverbs finds no attachment) */
	cr_assert_eq(ibv_detach_mcast(R.qp[0], &g, 0), EINVAL);
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &g, 0), 0);
	cr_assert_eq(droce_mcast_group_members(1, g.raw), 1);
	/* twice: nothing changes, success */
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &g, 0), 0);
	cr_assert_eq(droce_mcast_group_members(1, g.raw), 1);
	cr_assert_eq(ibv_detach_mcast(R.qp[0], &g, 0), 0);
	cr_assert_eq(droce_mcast_group_members(1, g.raw), 0);
	cr_assert_eq(ibv_detach_mcast(R.qp[0], &g, 0), EINVAL);
	/* an RC QP: EINVAL */
	t_open(&rc, "droce1", IBV_QPT_RC, 4, 4);
	cr_assert_eq(ibv_attach_mcast(rc.qp, &g, 0), EINVAL);
	cr_assert_eq(ibv_detach_mcast(rc.qp, &g, 0), EINVAL);
	/* a group AH is for UD only: an RC path to a group is EINVAL */
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					 .dest_qp_num = 0xffffff, .max_dest_rd_atomic = 1,
					 .min_rnr_timer = 1,
					 .ah_attr = { .is_global = 1, .port_num = 1,
						      .grh = { .dgid = g, .hop_limit = 64 } } };
		struct ibv_qp_attr i = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qp_access_flags = 0 };

		cr_assert_eq(ibv_modify_qp(rc.qp, &i,
					   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						   IBV_QP_ACCESS_FLAGS),
			     0);
		cr_assert_eq(ibv_modify_qp(rc.qp, &a,
					   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
			     EINVAL);
	}
	/* a destroyed QP leaves its groups */
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &g, 0), 0);
	cr_assert_eq(ibv_destroy_qp(R.qp[0]), 0);
	cr_assert_eq(droce_mcast_group_members(1, g.raw), 0);
}

/* One group datagram to 4 QPs on two engines of droce1, IPv4 or IPv6. */
static void
fan_out(const char *group, bool v6)
{
	struct droce_engine_stats s0, s1;
	union ibv_gid g;
	struct ibv_ah *ah;

	start(NULL);
	side_open(&S, "droce0", 1, NULL);
	side_open(&R, "droce1", NRECV, NULL);
	group_gid(&g, group);
	for (unsigned int i = 0; i < NRECV; i++) {
		cr_assert_eq(ibv_attach_mcast(R.qp[i], &g, 0), 0);
		post_recv(&R, i, 100 + i);
	}
	ah = group_ah(&S, &g, v6);
	s0 = stats();
	for (uint8_t round = 1; round <= 3; round++) {
		send_group(&S, ah, QKEY, 1000 + round, round);
		for (unsigned int i = 0; i < NRECV; i++) {
			check_recv(&R, i, 1000 + round, round, &S);
			post_recv(&R, i, 100 + i);
		}
	}
	s1 = stats();
	cr_assert_eq(s1.mcast_rx - s0.mcast_rx, 3 * NRECV);
	cr_assert_geq(s1.forwarded - s0.forwarded, 3, "no copy went to the other engine");
	/* a QP that left gets nothing more; the others still do */
	cr_assert_eq(ibv_detach_mcast(R.qp[1], &g, 0), 0);
	send_group(&S, ah, QKEY, 64, 9);
	for (unsigned int i = 0; i < NRECV; i++) {
		if (i == 1)
			expect_nothing(R.rcq[i], 200);
		else
			check_recv(&R, i, 64, 9, &S);
	}
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(mcast, fan_out_ipv4_two_engines)
{
	fan_out("239.1.2.3", false);
}

Test(mcast, fan_out_ipv6_two_engines)
{
	fan_out("ff0e::1234:5678", true);
}

Test(mcast, qkey_checked_per_qp)
{
	static const uint32_t qkeys[NRECV] = { QKEY, 0x1111, QKEY, 0x2222 };
	struct droce_engine_stats s0, s1;
	union ibv_gid g;
	struct ibv_ah *ah;

	start(NULL);
	side_open(&S, "droce0", 1, NULL);
	side_open(&R, "droce1", NRECV, qkeys);
	group_gid(&g, "239.9.9.9");
	for (unsigned int i = 0; i < NRECV; i++) {
		cr_assert_eq(ibv_attach_mcast(R.qp[i], &g, 0), 0);
		post_recv(&R, i, i);
	}
	ah = group_ah(&S, &g, false);
	s0 = stats();
	send_group(&S, ah, QKEY, 200, 5);
	check_recv(&R, 0, 200, 5, &S);
	check_recv(&R, 2, 200, 5, &S);
	expect_nothing(R.rcq[1], 200);
	expect_nothing(R.rcq[3], 100);
	s1 = stats();
	cr_assert_eq(s1.qkey_drops - s0.qkey_drops, 2);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(mcast, no_group_dropped_and_counted)
{
	struct droce_engine_stats s0, s1;
	union ibv_gid g, other;
	struct ibv_ah *ah;

	start(NULL);
	side_open(&S, "droce0", 1, NULL);
	side_open(&R, "droce1", 1, NULL);
	group_gid(&g, "239.7.7.7");
	group_gid(&other, "239.7.7.8");
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &other, 0), 0);
	post_recv(&R, 0, 1);
	ah = group_ah(&S, &g, false);
	s0 = stats();
	send_group(&S, ah, QKEY, 100, 3);
	expect_nothing(R.rcq[0], 300);
	s1 = stats();
	cr_assert_eq(s1.mcast_no_group - s0.mcast_no_group, 1);
	cr_assert_eq(s1.mcast_rx, s0.mcast_rx);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

/* The sending port's own attached QPs get the datagram too (and the sender's
 * QP itself when it is attached, as rxe and ConnectX without the block-self
 * flag); the peer port's as well. */
Test(mcast, local_loop_on_sending_port)
{
	struct droce_port_stats p0;
	struct droce_engine_stats s0, s1;
	union ibv_gid g;
	struct ibv_ah *ah;

	start(NULL);
	side_open(&S, "droce0", 3, NULL);
	side_open(&R, "droce1", 1, NULL);
	group_gid(&g, "239.4.4.4");
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_eq(ibv_attach_mcast(S.qp[i], &g, 0), 0);
		post_recv(&S, i, i);
	}
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &g, 0), 0);
	post_recv(&R, 0, 9);
	ah = group_ah(&S, &g, false);
	s0 = stats();
	send_group(&S, ah, QKEY, 300, 11);
	for (unsigned int i = 0; i < 3; i++)
		check_recv(&S, i, 300, 11, &S);
	check_recv(&R, 0, 300, 11, &S);
	s1 = stats();
	cr_assert_eq(s1.mcast_loop - s0.mcast_loop, 1);
	cr_assert_eq(s1.mcast_rx - s0.mcast_rx, 4);
	/* the copy went through the port's loop, as every looped frame */
	droce_port_stats_get(droce_port_get(0), &p0);
	cr_assert_eq(p0.loop_tx, 1, "one copy turned around by droce0");
	cr_assert_eq(p0.loop_rx, 1, "and received on droce0's queue");
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

/* The local loop never touches the link: with droce0's link cut, its own
 * attached QPs still get the datagram, droce1's does not (dropped at the cut). */
Test(mcast, local_loop_with_the_link_cut)
{
	struct droce_port_stats p0;
	union ibv_gid g;
	struct ibv_ah *ah;

	start(NULL);
	side_open(&S, "droce0", 2, NULL);
	side_open(&R, "droce1", 1, NULL);
	group_gid(&g, "239.4.4.5");
	for (unsigned int i = 0; i < 2; i++) {
		cr_assert_eq(ibv_attach_mcast(S.qp[i], &g, 0), 0);
		post_recv(&S, i, i);
	}
	cr_assert_eq(ibv_attach_mcast(R.qp[0], &g, 0), 0);
	post_recv(&R, 0, 9);
	ah = group_ah(&S, &g, false);
	for (unsigned int i = 0; i < 1500; i++) {
		droce_engines_progress(); /* the membership reports and their repeats go first */
		usleep(1000);
	}
	droce_port_set_link(droce_port_get(0), false);
	droce_port_stats_get(droce_port_get(0), &p0);
	cr_assert_eq(p0.impair_tx.link_down, 0);
	send_group(&S, ah, QKEY, 200, 12);
	for (unsigned int i = 0; i < 2; i++)
		check_recv(&S, i, 200, 12, &S);
	expect_nothing(R.rcq[0], 200);
	droce_port_stats_get(droce_port_get(0), &p0);
	cr_assert_eq(p0.impair_tx.link_down, 1, "the wire's copy dropped at the cut (%lu)",
		     (unsigned long)p0.impair_tx.link_down);
	cr_assert_eq(p0.loop_rx, 1);
	droce_port_set_link(droce_port_get(0), true);
	send_group(&S, ah, QKEY, 200, 13);
	post_recv(&S, 0, 0);
	check_recv(&S, 0, 200, 13, &S);
	check_recv(&R, 0, 200, 13, &S);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

/* The frames on the wire: a capture of droce0 checked by tshark and scapy. */
Test(mcast, frames_on_the_wire)
{
	char path[128], extra[192], cmd[512];
	union ibv_gid g4, g6;
	struct ibv_ah *ah4, *ah6;
	int st;

	if (access("/usr/bin/tshark", X_OK) != 0)
		cr_skip_test("tshark is not installed");
	snprintf(path, sizeof(path), "/tmp/droce-mcast-%d.pcapng", (int)getpid());
	snprintf(extra, sizeof(extra), "capture = %s\n", path);
	start(extra);
	side_open(&S, "droce0", 1, NULL);
	side_open(&R, "droce1", 1, NULL);
	group_gid(&g4, "239.1.2.3");
	group_gid(&g6, "ff0e::1234:5678");
	/* droce0 joins both (reports), sends to both, leaves both */
	cr_assert_eq(ibv_attach_mcast(S.qp[0], &g4, 0), 0);
	cr_assert_eq(ibv_attach_mcast(S.qp[0], &g6, 0), 0);
	ah4 = group_ah(&S, &g4, false);
	ah6 = group_ah(&S, &g6, true);
	send_group(&S, ah4, QKEY, 77, 1);
	send_group(&S, ah6, QKEY, 78, 2);
	cr_assert_eq(ibv_detach_mcast(S.qp[0], &g4, 0), 0);
	cr_assert_eq(ibv_detach_mcast(S.qp[0], &g6, 0), 0);
	cr_assert_eq(ibv_destroy_ah(ah4), 0);
	cr_assert_eq(ibv_destroy_ah(ah6), 0);
	for (unsigned int i = 0; i < 20; i++)
		droce_engines_progress();
	tc_stop(); /* flushes and closes the capture */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s >&2", CHECK_SCRIPT, path);
	st = system(cmd);
	cr_assert(WIFEXITED(st), "%s: did not exit", cmd);
	if (WEXITSTATUS(st) == 77)
		cr_skip_test("tshark or scapy missing");
	cr_assert(WEXITSTATUS(st) == 0, "%s: exit %d (capture kept at %s)", cmd,
		  WEXITSTATUS(st), path);
	unlink(path);
}

/* ---- membership as a host's (IGMP / MLD) ---- */

static uint16_t
csum16(const uint8_t *b, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		sum += (uint32_t)b[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* A general IGMP query received on droce0 (from 198.18.0.9): v3 (12 bytes)
 * or v2 (8 bytes, max resp time 10 s). */
static void
igmp_query(bool v3)
{
	uint8_t f[64] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01, 0x02, 0x00, 0xc6, 0x12, 0x00, 0x09,
			  0x08, 0x00 };
	uint8_t *ip = f + 14, *q = ip + 24;
	size_t qlen = v3 ? 12 : 8;
	uint16_t c;

	ip[0] = 0x46, ip[1] = 0xc0;
	ip[3] = (uint8_t)(24 + qlen);
	ip[8] = 1, ip[9] = 2; /* TTL 1, IGMP */
	ip[12] = 198, ip[13] = 18, ip[14] = 0, ip[15] = 9;
	ip[16] = 224, ip[19] = 1;
	ip[20] = 0x94, ip[21] = 0x04;
	c = csum16(ip, 24, 0);
	ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
	q[0] = 0x11, q[1] = 100;
	if (v3)
		q[8] = 2, q[9] = 125; /* QRV 2, QQIC 125 s */
	c = csum16(q, qlen, 0);
	q[2] = (uint8_t)(c >> 8), q[3] = (uint8_t)c;
	cr_assert_eq(droce_dp_inject(0, 0, DROCE_INJECT_RX, f, (uint32_t)(14 + 24 + qlen)), 0);
}

/* A general MLDv2 query received on droce0 (from fe80::9 to ff02::1). */
static void
mld_query(void)
{
	uint8_t f[14 + 40 + 8 + 28] = { 0x33, 0x33, 0, 0, 0, 1, 0x02, 0x00, 0xc6, 0x12, 0x00, 0x09,
					0x86, 0xdd };
	uint8_t *ip = f + 14, *h = ip + 40, *q = h + 8, ph[40] = { 0 };
	uint16_t c;

	ip[0] = 0x60;
	ip[5] = 8 + 28;
	ip[6] = 0, ip[7] = 1; /* Hop-by-Hop, hop limit 1 */
	ip[8] = 0xfe, ip[9] = 0x80, ip[23] = 9;
	ip[24] = 0xff, ip[25] = 0x02, ip[39] = 1;
	h[0] = 58, h[2] = 5, h[3] = 2, h[6] = 1;
	q[0] = 130;
	q[5] = 100; /* max resp code */
	q[24] = 2, q[25] = 125;
	memcpy(ph, ip + 8, 32);
	ph[35] = 28, ph[39] = 58; /* pseudo-header: length, next header */
	c = csum16(q, 28, (uint32_t)(uint16_t)~csum16(ph, 40, 0));
	q[2] = (uint8_t)(c >> 8), q[3] = (uint8_t)c;
	cr_assert_eq(droce_dp_inject(0, 0, DROCE_INJECT_RX, f, sizeof(f)), 0);
}

static void
run_for(unsigned int ms)
{
	for (unsigned int i = 0; i < ms; i++) {
		droce_engines_progress();
		usleep(1000);
	}
}

/*
 * droce0's membership as Linux's: IGMPv3 and MLDv2 state-change reports on
 * join and leave, each sent twice (robustness 2, the repeat within 1 s),
 * a current-state record per group in answer to a general query, IGMPv2
 * once a v2 querier was heard (its report in answer, its leave sent once).
 * The capture is checked by check_mcast.py --host (tshark and scapy).
 */
Test(mcast, membership_as_a_host)
{
	char path[128], extra[192], cmd[512];
	union ibv_gid g4, g6;
	int st;

	if (access("/usr/bin/tshark", X_OK) != 0)
		cr_skip_test("tshark is not installed");
	snprintf(path, sizeof(path), "/tmp/droce-mcast-host-%d.pcapng", (int)getpid());
	snprintf(extra, sizeof(extra), "capture = %s\n", path);
	start(extra);
	side_open(&S, "droce0", 1, NULL);
	group_gid(&g4, "239.1.2.3");
	group_gid(&g6, "ff0e::1234:5678");
	cr_assert_eq(ibv_attach_mcast(S.qp[0], &g4, 0), 0);
	cr_assert_eq(ibv_attach_mcast(S.qp[0], &g6, 0), 0);
	run_for(1500); /* the reports and their repeats */
	igmp_query(true);
	mld_query();
	run_for(50);
	mld_query();
	igmp_query(false);
	run_for(50);
	cr_assert_eq(ibv_detach_mcast(S.qp[0], &g4, 0), 0);
	cr_assert_eq(ibv_detach_mcast(S.qp[0], &g6, 0), 0);
	run_for(1500); /* the leaves and their repeats */
	tc_stop(); /* flushes and closes the capture */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s --host %s >&2", CHECK_SCRIPT, path);
	st = system(cmd);
	cr_assert(WIFEXITED(st), "%s: did not exit", cmd);
	if (WEXITSTATUS(st) == 77)
		cr_skip_test("tshark or scapy missing");
	cr_assert(WEXITSTATUS(st) == 0, "%s: exit %d (capture kept at %s)", cmd,
		  WEXITSTATUS(st), path);
	unlink(path);
}
