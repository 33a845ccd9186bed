/* SPDX-License-Identifier: BSD-3-Clause
 * What RC puts on the wire, checked by independent decoders: one run with
 * port0 capturing (both directions) carries every request and response
 * opcode (SEND/WRITE first/middle/last/only with and without immediate,
 * READ request and responses, both atomics and atomic ACKs, ACKs, an RNR NAK
 * and a remote access error NAK), PSNs crossing 2^24, then
 * tests/decoders/check_capture.py decodes the capture with tshark and scapy
 * and they must agree on every frame (BTH fields, ICRC).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_byteorder.h>

#include "harness.h"

#ifndef DROCE_SRC_ROOT
#error "DROCE_SRC_ROOT must name the source tree (set by tests/dataplane/meson.build)"
#endif
#define CHECK_SCRIPT DROCE_SRC_ROOT "/tests/decoders/check_capture.py"
#define DEFAULT_PYTHON "/usr/bin/python3" /* the one with python3-scapy */
#define POLL_MS 10000
#define ALL_ACCESS                                                                              \
	(DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |      \
	 DROCE_ACCESS_REMOTE_ATOMIC)

TestSuite(rc_capture, .fini = h_stop, .timeout = 120);

static void
expect_ok(struct droce_cq *cq, uint64_t wr_id, const char *what)
{
	struct droce_cqe c = h_poll1(cq, POLL_MS, what);

	cr_assert_eq(c.wr_id, wr_id, "%s: wr_id %" PRIu64, what, c.wr_id);
	cr_assert_eq(c.status, DROCE_WC_SUCCESS, "%s: status %u", what, c.status);
}

static void
traffic(void)
{
	static const uint8_t ops[] = { DROCE_WR_SEND, DROCE_WR_SEND_WITH_IMM, DROCE_WR_RDMA_WRITE,
				       DROCE_WR_RDMA_WRITE_WITH_IMM, DROCE_WR_RDMA_READ };
	static const uint32_t sizes[] = { 0, 3, 1024, 3000 }; /* only; only (pad); only; first/middle/last */
	struct h_pair p, q;
	struct h_buf lb, rb;
	struct h_conn_opts o = h_conn_defaults(1024);
	struct droce_wqe w;
	struct droce_rqe r;
	struct droce_cqe c;
	uint64_t id = 1;

	h_buf_init(&lb, 65536, ALL_ACCESS);
	h_buf_init(&rb, 65536, ALL_ACCESS);
	h_fill(lb.p, 65536, 1);
	h_fill(rb.p, 65536, 2);
	h_pair_create_cqs(&p, 64, 64, 256);
	h_pair_connect(&p, &o);
	for (unsigned int i = 0; i < RTE_DIM(ops); i++)
		for (unsigned int s = 0; s < RTE_DIM(sizes); s++, id++) {
			bool recv = ops[i] == DROCE_WR_SEND || ops[i] == DROCE_WR_SEND_WITH_IMM ||
				    ops[i] == DROCE_WR_RDMA_WRITE_WITH_IMM;

			w = h_wqe(id, ops[i], DROCE_WQE_SIGNALED | (s == 1 ? DROCE_WQE_SOLICITED : 0));
			h_wqe_sge(&w, ops[i] == DROCE_WR_RDMA_READ ? &lb : &lb, 8192, sizes[s]);
			w.imm = rte_cpu_to_be_32(0xc0de0000u + (uint32_t)id);
			w.remote_addr = h_va(&rb, 4096 + s);
			w.rkey = rb.mr.rkey;
			if (recv) {
				r = h_rqe(id);
				h_rqe_sge(&r, &rb, 32768, 4096);
				h_post_recv(p.qp[1], &r);
			}
			h_post_send(p.qp[0], &w);
			expect_ok(p.scq[0], id, droce_wr_opcode_name[ops[i]]);
			if (recv)
				expect_ok(p.rcq[1], id, "receive");
		}
	/* the other direction too (PSNs from 0xfffff8 wrap at once) */
	for (unsigned int s = 0; s < RTE_DIM(sizes); s++, id++) {
		r = h_rqe(id);
		h_rqe_sge(&r, &lb, 32768, 4096);
		h_post_recv(p.qp[0], &r);
		w = h_wqe(id, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
		h_wqe_sge(&w, &rb, 0, sizes[s]);
		h_post_send(p.qp[1], &w);
		expect_ok(p.scq[1], id, "SEND port1 -> port0");
		expect_ok(p.rcq[0], id, "receive on port0");
	}
	/* atomics */
	for (unsigned int i = 0; i < 2; i++, id++) {
		w = h_wqe(id, i ? DROCE_WR_ATOMIC_CMP_AND_SWP : DROCE_WR_ATOMIC_FETCH_AND_ADD,
			  DROCE_WQE_SIGNALED);
		h_wqe_sge(&w, &lb, 0, 8);
		w.remote_addr = h_va(&rb, 0);
		w.rkey = rb.mr.rkey;
		w.compare_add = 0x1111;
		w.swap = 0x2222;
		h_post_send(p.qp[0], &w);
		expect_ok(p.scq[0], id, "atomic");
	}
	/* RNR NAK: SEND before the receive */
	w = h_wqe(id, DROCE_WR_SEND, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 100);
	h_post_send(p.qp[0], &w);
	h_spin(2);
	cr_assert_gt(h_qp_stats(p.qp[1])->rnr_naks_tx, 0, "no RNR NAK sent");
	r = h_rqe(id);
	h_rqe_sge(&r, &rb, 32768, 4096);
	h_post_recv(p.qp[1], &r);
	expect_ok(p.scq[0], id, "SEND after RNR");
	expect_ok(p.rcq[1], id, "late receive");
	id++;
	/* remote access error NAK on a second pair */
	h_pair_create_cqs(&q, 16, 16, 64);
	o.udp_sport = 0xc999;
	h_pair_connect(&q, &o);
	w = h_wqe(id, DROCE_WR_RDMA_WRITE, DROCE_WQE_SIGNALED);
	h_wqe_sge(&w, &lb, 0, 100);
	w.remote_addr = h_va(&rb, 0);
	w.rkey = rb.mr.rkey ^ 0x100;
	h_post_send(q.qp[0], &w);
	c = h_poll1(q.scq[0], POLL_MS, "wrong rkey");
	cr_assert_eq(c.status, DROCE_WC_REM_ACCESS_ERR);
}

Test(rc_capture, tshark_and_scapy_agree)
{
	char path[128], cmd[512];
	const char *py = getenv("DROCE_TEST_PYTHON") ? getenv("DROCE_TEST_PYTHON") : DEFAULT_PYTHON;
	struct h_cfg cfg = { .capture0 = path };
	int st;

	snprintf(path, sizeof(path), "/tmp/droce-dp-capture-%d.pcapng", (int)getpid());
	unlink(path);
	h_start(&cfg, false);
	cr_assert(droce_port_capturing(droce_port_get(0)), "port0 does not capture");
	traffic();
	h_stop(); /* flushes and closes the capture */
	snprintf(cmd, sizeof(cmd), "%s %s --min-roce 60 -q %s 1>&2", py, CHECK_SCRIPT, path);
	st = system(cmd);
	cr_assert(WIFEXITED(st), "%s: did not exit", cmd);
	if (WEXITSTATUS(st) == 77) {
		unlink(path);
		cr_skip_test("tshark or scapy missing");
	}
	cr_assert_eq(WEXITSTATUS(st), 0, "%s: exit %d (the capture stays at %s)", cmd,
		     WEXITSTATUS(st), path);
	unlink(path);
}
