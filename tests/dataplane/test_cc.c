/* SPDX-License-Identifier: BSD-3-Clause
 * Congestion notification on the wire (dataplane/cc.c, issue 25 section 1):
 * ECT(0) on the RoCEv2 frames droce sends (or what [portN] ecn says), frames
 * a "switch" marks CE (the impaired link's impair_ce on port1's receive
 * side) counted per QP, port and engine and answered with CNPs to the
 * sender's QP at most once per min_time_between_cnps, CNPs counted where
 * they arrive; RC and UC by traffic, UD by injected datagrams.  The frames
 * of port0's capture are decoded by tshark and scapy
 * (tests/decoders/check_capture.py: they agree, ICRC included) and the CNPs
 * compared with the reference layout (tests/decoders/check_cnp.py).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_ip.h>

#include <droce/stats.h>

#include "harness.h"

#ifndef DROCE_SRC_ROOT
#error "DROCE_SRC_ROOT must name the source tree (set by tests/dataplane/meson.build)"
#endif
#define DECODERS DROCE_SRC_ROOT "/tests/decoders/"
#define DEFAULT_PYTHON "/usr/bin/python3" /* the one with python3-scapy */
#define POLL_MS 10000
#define NMSG 20u

TestSuite(cc, .fini = h_stop, .timeout = 120);

static uint64_t
stat_of(int (*get)(unsigned int, struct droce_stat *, unsigned int), unsigned int id,
	const char *name)
{
	struct droce_stat s[160];
	int n = get(id, s, RTE_DIM(s));
	uint64_t v;

	cr_assert_gt(n, 0, "stats of %u", id);
	cr_assert_leq(n, (int)RTE_DIM(s));
	v = droce_stat_find(s, (unsigned int)n, name);
	cr_assert_neq(v, UINT64_MAX, "no counter %s", name);
	return v;
}

static uint64_t
port_stat(unsigned int port, const char *name)
{
	return stat_of(droce_stats_port, port, name);
}

static uint64_t
engine_stat(const char *name)
{
	return stat_of(droce_stats_engine, 0, name);
}

static uint64_t
qp_stat(const struct droce_qp *qp, const char *name)
{
	struct droce_stat s[64];
	int n = droce_dp_qp_stats(qp, s, RTE_DIM(s));
	uint64_t v;

	cr_assert_gt(n, 0);
	cr_assert_leq(n, (int)RTE_DIM(s));
	v = droce_stat_find(s, (unsigned int)n, name);
	cr_assert_neq(v, UINT64_MAX, "no QP counter %s", name);
	return v;
}

static const char *
python(void)
{
	return getenv("DROCE_TEST_PYTHON") ? getenv("DROCE_TEST_PYTHON") : DEFAULT_PYTHON;
}

/* Runs a decoder script on @path; skips the test when its tools are missing. */
static void
decode(const char *script, const char *args, const char *path)
{
	char cmd[768];
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s%s %s %s 1>&2", python(), DECODERS, script, args, path);
	st = system(cmd);
	cr_assert(WIFEXITED(st), "%s: did not exit", cmd);
	if (WEXITSTATUS(st) == 77)
		cr_skip_test("tshark or scapy missing");
	cr_assert_eq(WEXITSTATUS(st), 0, "%s: exit %d (the capture stays at %s)", cmd,
		     WEXITSTATUS(st), path);
}

/* @n signaled one-packet WRITEs from @p's QP 0, each completed before the next. */
static void
writes(struct h_pair *p, unsigned int n)
{
	struct h_buf lb, rb;

	h_buf_init(&lb, 4096, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, 4096, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	h_fill(lb.p, 4096, 7);
	for (unsigned int i = 0; i < n; i++) {
		struct droce_cqe c;

		h_post_write(p->qp[0], 100 + i, &lb, &rb, 64 * i, 64);
		c = h_poll1(p->scq[0], POLL_MS, "WRITE");
		cr_assert_eq(c.status, DROCE_WC_SUCCESS, "WRITE %u: status %u", i, c.status);
	}
	cr_assert_eq(h_check_fill(rb.p, 64 * n, 7), -1, "WRITE data did not arrive");
}

/* Drives the engines until @qp counted @n CNPs received (5 s at most). */
static void
wait_cnps(const struct droce_qp *qp, uint64_t n)
{
	uint64_t end = tc_now_ms() + 5000;

	while (qp_stat(qp, "cnp_received") < n && tc_now_ms() < end)
		h_spin(1);
}

static void
capture_path(char *buf, size_t cap, const char *what)
{
	snprintf(buf, cap, "/tmp/droce-cc-%s-%d.pcapng", what, (int)getpid());
	unlink(buf);
}

/* Every CE-marked WRITE answered (interval 0): counters on both sides, and
 * the capture decoded. */
Test(cc, every_ce_frame_gets_a_cnp)
{
	char path[128], args[128];
	struct h_cfg cfg = {
		.capture0 = path,
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = "[dcqcn]\nmin_time_between_cnps = 0",
	};
	struct h_pair p;
	struct h_conn_opts o = h_conn_defaults(1024);

	capture_path(path, sizeof(path), "every");
	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	writes(&p, NMSG);
	wait_cnps(p.qp[0], NMSG);
	/* the receiver: every request arrived CE and was answered */
	cr_assert_eq(qp_stat(p.qp[1], "ecn_ce_received"), NMSG);
	cr_assert_eq(qp_stat(p.qp[1], "cnp_sent"), NMSG);
	cr_assert_eq(port_stat(1, "impair_rx_ce_marked"), NMSG);
	cr_assert_eq(port_stat(1, "ecn_ce_received"), NMSG);
	cr_assert_eq(port_stat(1, "cnp_sent"), NMSG);
	/* the sender: the CNPs arrived at its QP, nothing it received was CE */
	cr_assert_eq(qp_stat(p.qp[0], "cnp_received"), NMSG);
	cr_assert_eq(qp_stat(p.qp[0], "ecn_ce_received"), 0);
	cr_assert_eq(port_stat(0, "cnp_received"), NMSG);
	cr_assert_eq(qp_stat(p.qp[1], "cnp_received"), 0);
	/* one engine sees both sides */
	cr_assert_eq(engine_stat("ecn_ce_received"), NMSG);
	cr_assert_eq(engine_stat("cnp_sent"), NMSG);
	cr_assert_eq(engine_stat("cnp_received"), NMSG);
	cr_assert_eq(engine_stat("cnp_coalesced"), 0);
	cr_assert_eq(engine_stat("drop_no_qp"), 0);
	h_stop();
	/* port0 saw the WRITEs leave (ECT(0)), ACKs and CNPs arrive */
	decode("check_capture.py", "--min-roce 60 -q", path);
	snprintf(args, sizeof(args), "--cnps %u --dqpn %#x --ce 0 --data-ecn 2", NMSG, p.qpn[0]);
	decode("check_cnp.py", args, path);
	unlink(path);
}

/* min_time_between_cnps: one CNP for a burst of CE marks inside it. */
Test(cc, one_cnp_per_interval)
{
	struct h_cfg cfg = {
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = "[dcqcn]\nmin_time_between_cnps = 1000000",
	};
	struct h_pair p;
	struct h_conn_opts o = h_conn_defaults(1024);

	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	writes(&p, NMSG);
	wait_cnps(p.qp[0], 1);
	h_spin(20);
	cr_assert_eq(qp_stat(p.qp[1], "ecn_ce_received"), NMSG);
	cr_assert_eq(qp_stat(p.qp[1], "cnp_sent"), 1);
	cr_assert_eq(qp_stat(p.qp[0], "cnp_received"), 1);
	cr_assert_eq(engine_stat("cnp_coalesced"), NMSG - 1);
}

/* [portN] ecn = off: Not-ECT frames, which the "switch" does not mark. */
Test(cc, ecn_off_is_never_marked)
{
	char path[128];
	struct h_cfg cfg = {
		.capture0 = path,
		.port_extra = "ecn = off",
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = "[dcqcn]\nmin_time_between_cnps = 0",
	};
	struct h_pair p;
	struct h_conn_opts o = h_conn_defaults(1024);

	capture_path(path, sizeof(path), "off");
	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	writes(&p, NMSG);
	h_spin(20);
	cr_assert_eq(port_stat(1, "impair_rx_ce_marked"), 0);
	cr_assert_eq(port_stat(1, "ecn_ce_received"), 0);
	cr_assert_eq(port_stat(1, "cnp_sent"), 0);
	h_stop();
	decode("check_cnp.py", "--cnps 0 --data-ecn 0", path);
	unlink(path);
}

/* np_enable = 0: CE counted, nothing sent. */
Test(cc, np_disabled_counts_only)
{
	struct h_cfg cfg = {
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = "[dcqcn]\nnp_enable = 0",
	};
	struct h_pair p;
	struct h_conn_opts o = h_conn_defaults(1024);

	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	writes(&p, NMSG);
	h_spin(20);
	cr_assert_eq(qp_stat(p.qp[1], "ecn_ce_received"), NMSG);
	cr_assert_eq(port_stat(1, "cnp_sent"), 0);
	cr_assert_eq(port_stat(0, "cnp_received"), 0);
}

/* UC: the responder side answers CE-marked WRITEs as RC's does. */
Test(cc, uc_write_ce_gets_cnp)
{
	struct h_cfg cfg = {
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = "[dcqcn]\nmin_time_between_cnps = 0",
	};
	struct droce_qp_caps caps = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
				      .max_recv_sge = 1, .max_inline_data = 64 };
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_qp *qp[2];
	struct droce_cq *cq[2];
	struct h_buf lb, rb;

	h_start(&cfg, false);
	for (unsigned int i = 0; i < 2; i++) {
		cq[i] = h_cq_create(64);
		qp[i] = droce_qp_create(DROCE_QPT_UC, &caps, cq[i], cq[i], H_PD, i);
		cr_assert_not_null(qp[i]);
	}
	h_connect(qp[0], 0, 1, droce_qp_num(qp[1]), 0x10, 0x20, &o);
	h_connect(qp[1], 1, 0, droce_qp_num(qp[0]), 0x20, 0x10, &o);
	h_buf_init(&lb, 4096, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, 4096, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	for (unsigned int i = 0; i < 5; i++) {
		h_post_write(qp[0], i, &lb, &rb, 0, 3000); /* 3 packets at MTU 1024 */
		cr_assert_eq(h_poll1(cq[0], POLL_MS, "UC WRITE").status, DROCE_WC_SUCCESS);
	}
	wait_cnps(qp[0], 15);
	cr_assert_eq(qp_stat(qp[1], "ecn_ce_received"), 15);
	cr_assert_eq(qp_stat(qp[1], "cnp_sent"), 15);
	cr_assert_eq(qp_stat(qp[0], "cnp_received"), 15);
	droce_qp_destroy(qp[0]);
	droce_qp_destroy(qp[1]);
}

/* Moves UD QP @qp on @port to RTS with Q_Key @qkey. */
static void
ud_up(struct droce_qp *qp, unsigned int port, uint32_t qkey)
{
	struct droce_qp_mod m;

	memset(&m, 0, sizeof(m));
	m.mask = DROCE_QPM_STATE | DROCE_QPM_PKEY_INDEX | DROCE_QPM_PORT | DROCE_QPM_QKEY;
	m.state = DROCE_QPS_INIT;
	m.port = (uint8_t)(port + 1);
	m.qkey = qkey;
	cr_assert_eq(droce_qp_modify(qp, &m), 0);
	h_modify_state(qp, DROCE_QPS_RTR);
	h_modify_state(qp, DROCE_QPS_RTS);
}

/* Marks the IPv4 frame @f (no VLAN) CE, its header checksum redone. */
static void
mark_ce(uint8_t *f)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);

	ip->type_of_service |= 3;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

/* UD: a CE-marked datagram makes the receiving UD QP send a CNP to the DETH's
 * source QP, which counts it; a Not-ECT one does not; a CNP's own ECN is
 * never answered. */
Test(cc, ud_datagram_ce_gets_cnp)
{
	struct h_cfg cfg = { .sections = "[dcqcn]\nmin_time_between_cnps = 0" };
	struct droce_qp_caps caps = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				      .max_recv_sge = 1, .max_inline_data = 64 };
	struct droce_pkt_fields f;
	struct droce_qp *qp[2];
	struct droce_cq *cq[2];
	struct h_buf rb;
	struct droce_rqe r;
	uint8_t frame[256], payload[32] = { 1, 2, 3 };
	size_t len;

	h_start(&cfg, false);
	for (unsigned int i = 0; i < 2; i++) {
		cq[i] = h_cq_create(64);
		qp[i] = droce_qp_create(DROCE_QPT_UD, &caps, cq[i], cq[i], H_PD, i);
		cr_assert_not_null(qp[i]);
		ud_up(qp[i], i, 0x1111);
	}
	h_buf_init(&rb, 4096, DROCE_ACCESS_LOCAL_WRITE);
	for (unsigned int i = 0; i < 3; i++) {
		r = h_rqe(i);
		h_rqe_sge(&r, &rb, 256 * i, 256);
		h_post_recv(qp[1], &r);
	}
	memset(&f, 0, sizeof(f));
	f.opcode = DROCE_OPC(DROCE_TRANSPORT_UD, DROCE_OP_SEND_ONLY);
	f.pkey = 0xffff;
	f.dqpn = droce_qp_num(qp[1]);
	f.deth.qkey = 0x1111;
	f.deth.src_qp = droce_qp_num(qp[0]);
	len = h_build_frame(0, 1, &f, payload, sizeof(payload), frame, sizeof(frame));
	h_inject_raw(0, 1, frame, len, DROCE_INJECT_RX); /* Not-ECT: no CNP */
	mark_ce(frame);
	h_inject_raw(0, 1, frame, len, DROCE_INJECT_RX);
	h_inject_raw(0, 1, frame, len, DROCE_INJECT_RX);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(h_poll1(cq[1], POLL_MS, "UD receive").status, DROCE_WC_SUCCESS);
	wait_cnps(qp[0], 2);
	h_spin(10);
	cr_assert_eq(qp_stat(qp[1], "ecn_ce_received"), 2);
	cr_assert_eq(qp_stat(qp[1], "cnp_sent"), 2);
	cr_assert_eq(qp_stat(qp[0], "cnp_received"), 2);
	/* a CE-marked CNP to port1's QP: counted as a CNP, never answered */
	memset(&f, 0, sizeof(f));
	f.opcode = DROCE_OP_CNP;
	f.becn = true;
	f.pkey = 0xffff;
	f.dqpn = droce_qp_num(qp[1]);
	len = h_build_frame(0, 1, &f, NULL, 0, frame, sizeof(frame));
	mark_ce(frame);
	h_inject_raw(0, 1, frame, len, DROCE_INJECT_RX);
	h_spin(10);
	cr_assert_eq(qp_stat(qp[1], "cnp_received"), 1);
	cr_assert_eq(qp_stat(qp[1], "cnp_sent"), 2);
	cr_assert_eq(qp_stat(qp[1], "ecn_ce_received"), 2);
	cr_assert_eq(engine_stat("drop_no_qp"), 0);
	droce_qp_destroy(qp[0]);
	droce_qp_destroy(qp[1]);
}

/* A CNP for an RC QP is not taken for an ACK (before issue 25, nothing looked
 * at opcode 0x81 and the completer read its BTH as an AETH). */
Test(cc, cnp_is_not_an_ack)
{
	struct h_cfg cfg = { 0 };
	struct droce_pkt_fields f;
	struct h_pair p;
	struct h_conn_opts o = h_conn_defaults(1024);
	uint8_t frame[256];
	size_t len;

	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	memset(&f, 0, sizeof(f));
	f.opcode = DROCE_OP_CNP;
	f.becn = true;
	f.pkey = 0xffff;
	f.dqpn = p.qpn[0];
	len = h_build_frame(1, 0, &f, NULL, 0, frame, sizeof(frame));
	for (unsigned int i = 0; i < 3; i++)
		h_inject_raw(1, 0, frame, len, DROCE_INJECT_RX);
	wait_cnps(p.qp[0], 3);
	cr_assert_eq(qp_stat(p.qp[0], "cnp_received"), 3);
	cr_assert_eq(engine_stat("drop_ghost_ack"), 0);
	writes(&p, 3); /* and the QP works on */
	cr_assert_eq(h_qp_state(p.qp[0]), DROCE_QPS_RTS);
}

/* ---- the reaction point (cc.c's pacer, dcqcn.c) ---- */

/* A line of 1 Gb/s and a floor of 100 Mb/s, where the first CNP puts a QP
 * (rate_to_set_on_first_cnp: alpha depends on how often CNPs come, which a
 * loaded or sanitized run changes); every frame port1 receives is CE and
 * answered. */
#define RP_SECTIONS                                                                       \
	"[dcqcn]\nmin_time_between_cnps = 0\nrpg_max_rate = 1000\nrpg_min_rate = 100\n"      \
	"rate_to_set_on_first_cnp = 100\n"

/* One-packet WRITEs, each marked and answered, until @qp's rate is at the floor. */
static void
slow_down(struct h_pair *p, struct h_buf *lb, struct h_buf *rb)
{
	for (unsigned int i = 0; i < 40 && qp_stat(p->qp[0], "cc_rate_mbps") > 100; i++) {
		h_post_write(p->qp[0], 1000 + i, lb, rb, 0, 64);
		cr_assert_eq(h_poll1(p->scq[0], POLL_MS, "small WRITE").status, DROCE_WC_SUCCESS);
		wait_cnps(p->qp[0], qp_stat(p->qp[1], "cnp_sent"));
	}
	cr_assert_eq(qp_stat(p->qp[0], "cc_rate_mbps"), 100, "rate %lu Mb/s",
		     qp_stat(p->qp[0], "cc_rate_mbps"));
	cr_assert_eq(qp_stat(p->qp[0], "cc_limited"), 1);
	cr_assert_gt(qp_stat(p->qp[0], "cc_alpha"), 0);
}

/* CNPs slow the QP they name down to what DCQCN says, and its frames leave
 * no faster: 1 MiB at 100 Mb/s takes at least 84 ms (without a CNP the same
 * WRITE takes a few ms here). */
Test(cc, cnps_pace_the_sender)
{
	struct h_cfg cfg = {
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = RP_SECTIONS "rpg_time_reset = 1000000\nrpg_byte_reset = 0",
	};
	struct h_conn_opts o = h_conn_defaults(1024);
	const uint32_t len = 1u << 20;
	struct h_buf lb, rb;
	struct h_pair p;
	uint64_t t0, ms;

	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	cr_assert_eq(qp_stat(p.qp[0], "cc_rate_mbps"), 1000, "the line rate before any CNP");
	cr_assert_eq(qp_stat(p.qp[0], "cc_limited"), 0);
	h_buf_init(&lb, len, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, len, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	h_fill(lb.p, len, 11);
	slow_down(&p, &lb, &rb);
	t0 = tc_now_ms();
	h_post_write(p.qp[0], 1, &lb, &rb, 0, len);
	cr_assert_eq(h_poll1(p.scq[0], 20000, "1 MiB WRITE").status, DROCE_WC_SUCCESS);
	ms = tc_now_ms() - t0;
	cr_assert_eq(h_check_fill(rb.p, len, 11), -1, "the WRITE's data");
	cr_assert_geq(ms, (uint64_t)len * 8 / 100000 * 95 / 100, "1 MiB in %lu ms: faster than 100 Mb/s", ms);
	cr_log_info("1 MiB at a DCQCN rate of 100 Mb/s: %lu ms (%lu ms at the rate)", ms,
		    (uint64_t)len * 8 / 100000);
	cr_assert_eq(qp_stat(p.qp[0], "cc_rate_mbps"), 100);
	cr_assert_eq(qp_stat(p.qp[0], "timeouts"), 0, "pacing made the QP time out");
}

/* Once the CNPs stop, the rate climbs back to the line (ConnectX's timer,
 * 300 us: fast recovery, additive, hyper increase) and the QP is no longer
 * paced. */
Test(cc, rate_recovers_when_cnps_stop)
{
	struct h_cfg cfg = {
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = RP_SECTIONS,
	};
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_impair_config ic;
	struct h_buf lb, rb;
	struct h_pair p;
	uint64_t prev = 100, end;

	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	h_buf_init(&lb, 4096, DROCE_ACCESS_LOCAL_WRITE);
	h_buf_init(&rb, 4096, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	slow_down(&p, &lb, &rb);
	droce_port_impair_get(droce_port_get(1), &ic);
	ic.ce = 0;
	cr_assert_eq(droce_port_impair_set(droce_port_get(1), &ic), 0);
	/* a WRITE a millisecond: the QP's turns run its timers */
	end = tc_now_ms() + 5000;
	while (qp_stat(p.qp[0], "cc_limited") != 0 && tc_now_ms() < end) {
		uint64_t r;

		h_post_write(p.qp[0], 7, &lb, &rb, 0, 64);
		cr_assert_eq(h_poll1(p.scq[0], POLL_MS, "WRITE").status, DROCE_WC_SUCCESS);
		r = qp_stat(p.qp[0], "cc_rate_mbps");
		cr_assert_geq(r, prev, "the rate fell from %lu to %lu with no CNP", prev, r);
		prev = r;
		h_spin(1);
	}
	cr_assert_eq(qp_stat(p.qp[0], "cc_limited"), 0, "still paced after 5 s");
	cr_assert_eq(qp_stat(p.qp[0], "cc_rate_mbps"), 1000);
	cr_assert_gt(qp_stat(p.qp[0], "cc_rate_increases"), 3);
}

/* rp_enable = 0: CNPs are counted and change nothing. */
Test(cc, rp_disabled_ignores_cnps)
{
	struct h_cfg cfg = {
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = RP_SECTIONS "rp_enable = 0",
	};
	struct h_pair p;
	struct h_conn_opts o = h_conn_defaults(1024);

	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	writes(&p, NMSG);
	wait_cnps(p.qp[0], NMSG);
	cr_assert_eq(qp_stat(p.qp[0], "cnp_received"), NMSG);
	cr_assert_eq(qp_stat(p.qp[0], "cc_rate_mbps"), 1000);
	cr_assert_eq(qp_stat(p.qp[0], "cc_limited"), 0);
	cr_assert_eq(qp_stat(p.qp[0], "cc_rate_cuts"), 0);
}

/* The path's traffic class gives the DSCP of every frame the QP sends (its
 * requests, its ACKs), the port the ECN bits: DSCP 46 with the
 * application's ECN bits 01 goes out as DSCP 46, ECT(0). */
Test(cc, traffic_class_dscp_with_the_ports_ecn)
{
	char path[128];
	struct h_cfg cfg = { .capture0 = path };
	struct h_conn_opts o = h_conn_defaults(1024);
	struct h_pair p;

	capture_path(path, sizeof(path), "tclass");
	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	o.traffic_class = 46 << 2 | 1;
	h_pair_connect(&p, &o);
	writes(&p, 5);
	h_stop();
	decode("check_cnp.py", "--cnps 0 --data-ecn 2 --data-dscp 46", path);
	unlink(path);
}

/* On a VLAN port the service level is the data frames' priority and CNPs go
 * out with cnp_802p_prio (6), tagged with the port's VLAN. */
Test(cc, vlan_priorities)
{
	char path[128], args[160];
	struct h_cfg cfg = {
		.capture0 = path,
		.port_extra = "vlan = 100",
		.port1_extra = "impair_ce = 1\nimpair_dir = rx",
		.sections = "[dcqcn]\nmin_time_between_cnps = 0",
	};
	struct h_conn_opts o = h_conn_defaults(1024);
	struct h_pair p;

	capture_path(path, sizeof(path), "vlan");
	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	o.sl = 3;
	h_pair_connect(&p, &o);
	writes(&p, 5);
	wait_cnps(p.qp[0], 5);
	cr_assert_eq(qp_stat(p.qp[0], "cnp_received"), 5);
	h_stop();
	decode("check_capture.py", "--min-roce 15 -q", path);
	snprintf(args, sizeof(args), "--cnps 5 --dqpn %#x --pcp 6 --data-pcp 3", p.qpn[0]);
	decode("check_cnp.py", args, path);
	unlink(path);
}

/* The port's defaults: a path with traffic class 0 and service level 0 goes
 * out with [portN] tclass's DSCP and pcp's priority (ECN still the port's). */
Test(cc, port_default_tclass_and_pcp)
{
	char path[128];
	struct h_cfg cfg = {
		.capture0 = path,
		.port_extra = "vlan = 100\ntclass = 104\npcp = 5",
	};
	struct h_conn_opts o = h_conn_defaults(1024);
	struct h_pair p;

	capture_path(path, sizeof(path), "defaults");
	h_start(&cfg, false);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	writes(&p, 3);
	h_stop();
	decode("check_cnp.py", "--cnps 0 --data-ecn 2 --data-dscp 26 --data-pcp 5", path);
	unlink(path);
}
