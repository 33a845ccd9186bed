/* SPDX-License-Identifier: BSD-3-Clause
 * Over 800 lines: one suite, one port set-up and one set of frame and capture
 * helpers shared by every transport's loop test; the cut-link tests made it
 * cross the limit.
 * Loopback on one port (issue 22 §2): QPs of droce0 talking to QPs of droce0,
 * as rdma-core's pyverbs suite does on one device and port (rxe and ConnectX
 * deliver a frame for their own GID locally).  Frames to the port's own MAC
 * are turned around in the port layer (pmd_glue/port_io.c) and received as
 * from the wire: every transport (RC, UC, UD, XRC, RAW_PACKET with the
 * port's MAC), a QP connected to itself, loss recovery through the port's
 * impairment, both directions in the port's capture, the loop counters, the
 * hand-over to another engine, one's own address by ARP and by rdma_cm, and
 * zero-copy frames.  Nothing crosses the ring to droce1: its counters stay 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <droce/droce.h>
#include <droce/stats.h>

#include "dataplane/dp.h"
#include "pmd_glue/port.h"
#include "env.h"
#include "raw/raw_common.h"

#define BUF_LEN (256 * 1024)

static const uint8_t MAC0[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };
static const uint8_t MAC1[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x02 };

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *rcq; /* send, receive completions */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static struct end A, B;

TestSuite(loop, .fini = tc_stop, .timeout = 120);

/* ---- helpers ---- */

static void
end_open(struct end *e, const char *dev)
{
	e->ctx = tc_open(dev, &e->gid);
	e->pd = ibv_alloc_pd(e->ctx);
	cr_assert_not_null(e->pd);
	e->buf = aligned_alloc(4096, BUF_LEN);
	cr_assert_not_null(e->buf);
	memset(e->buf, 0, BUF_LEN);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_not_null(e->mr, "ibv_reg_mr: %s", strerror(errno));
	e->cq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	cr_assert(e->cq && e->rcq);
}

static struct ibv_qp *
qp_make(struct end *e, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->cq,
		.recv_cq = e->rcq,
		.qp_type = t,
		.cap = { .max_send_wr = 512, .max_recv_wr = 512, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};
	struct ibv_qp *q = ibv_create_qp(e->pd, &ia);

	cr_assert_not_null(q, "ibv_create_qp: %s", strerror(errno));
	return q;
}

/* A's and B's QPs to each other (a QP of @t each). */
static void
pair_connect(uint8_t retry_cnt)
{
	struct tc_conn c = { .retry_cnt = retry_cnt, .timeout = 12 };

	cr_assert_arr_eq(A.gid.raw, B.gid.raw, 16, "one port, one GID");
	c.dgid = B.gid;
	c.dest_qpn = B.qp->qp_num;
	tc_qp_up(A.qp, &c);
	c.dgid = A.gid;
	c.dest_qpn = A.qp->qp_num;
	tc_qp_up(B.qp, &c);
}

/* A and B: two contexts of droce0, a QP of type @t each, connected to each other. */
static void
pair_up(enum ibv_qp_type t, uint8_t retry_cnt)
{
	end_open(&A, "droce0");
	end_open(&B, "droce0");
	A.qp = qp_make(&A, t);
	B.qp = qp_make(&B, t);
	pair_connect(retry_cnt);
}

static void
post_recv(struct end *e, struct ibv_qp *qp, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(qp, &w, &bad), 0);
}

/* One signaled WR from @e's buffer at @off; @peer's buffer at @roff for RDMA and atomics. */
static void
post(struct end *e, struct ibv_qp *qp, const struct end *peer, enum ibv_wr_opcode op,
     uint64_t id, size_t off, uint32_t len, size_t roff, uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htonl(0xabc00000u | (uint32_t)id) }, *bad;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = (uintptr_t)peer->buf + roff;
		w.wr.atomic.rkey = peer->mr->rkey;
		w.wr.atomic.compare_add = cmp_add;
		w.wr.atomic.swap = swap;
	} else if (peer != NULL) {
		w.wr.rdma.remote_addr = (uintptr_t)peer->buf + roff;
		w.wr.rdma.rkey = peer->mr->rkey;
	}
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0, "ibv_post_send op %d", op);
}

static struct ibv_wc
done(struct ibv_cq *cq, uint64_t id, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc = tc_wait(cq, 10000, what);

	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, id, "%s: wr_id %" PRIu64 " for %" PRIu64, what, wc.wr_id, id);
	cr_assert_eq(wc.opcode, op, "%s: opcode %d", what, wc.opcode);
	return wc;
}

static uint64_t
port_stat(unsigned int port, const char *name)
{
	struct droce_stat s[96];
	int n = droce_stats_port(port, s, 96);
	uint64_t v;

	cr_assert_gt(n, 0);
	v = droce_stat_find(s, (unsigned int)n, name);
	cr_assert_neq(v, UINT64_MAX, "no port counter %s", name);
	return v;
}

static uint64_t
engine_stat(unsigned int e, const char *name)
{
	struct droce_stat s[128];
	int n = droce_stats_engine(e, s, 128);
	uint64_t v;

	cr_assert_gt(n, 0);
	v = droce_stat_find(s, (unsigned int)n, name);
	cr_assert_neq(v, UINT64_MAX, "no engine counter %s", name);
	return v;
}

static uint64_t
qp_stat(struct ibv_qp *qp, const char *name)
{
	struct droce_stat s[96];
	int n = droce_stats_qp(qp, s, 96);
	uint64_t v;

	cr_assert_gt(n, 0);
	v = droce_stat_find(s, (unsigned int)n, name);
	cr_assert_neq(v, UINT64_MAX, "no QP counter %s", name);
	return v;
}

/* Every frame stayed on droce0: turned around, none through the ring to droce1. */
static void
assert_stayed_on_port0(void)
{
	uint64_t lt = port_stat(0, "loop_tx"), lr = port_stat(0, "loop_rx");

	cr_assert_gt(lt, 0, "frames looped on droce0");
	cr_assert_eq(lt, lr, "every frame turned around arrived on droce0's receive queue");
	cr_assert_eq(port_stat(0, "tx_frames"), lt, "droce0 sent nothing to the PMD");
	cr_assert_eq(port_stat(0, "rx_frames"), lr, "droce0 received only its own frames");
	cr_assert_eq(port_stat(1, "rx_frames"), 0, "nothing crossed the ring to droce1");
	cr_assert_eq(port_stat(1, "tx_frames"), 0);
	cr_assert_eq(port_stat(0, "arp_requests_tx"), 0, "one's own address needs no ARP");
}

/* SEND, WRITE, WRITE_WITH_IMM, READ and both atomics from A to B, bytes checked. */
static void
rc_every_opcode(struct end *a, struct ibv_qp *aq, struct end *b, struct ibv_qp *bq)
{
	struct ibv_wc wc;
	uint64_t *word;

	/* SEND */
	tc_fill(a->buf, 3000, 1);
	post_recv(b, bq, 100, 4096, 4096);
	post(a, aq, NULL, IBV_WR_SEND, 1, 0, 3000, 0, 0, 0);
	wc = done(b->rcq, 100, IBV_WC_RECV, "receive of the SEND");
	cr_assert_eq(wc.byte_len, 3000);
	cr_assert_eq(wc.qp_num, bq->qp_num);
	cr_assert_eq(wc.src_qp, aq->qp_num);
	done(a->cq, 1, IBV_WC_SEND, "SEND");
	cr_assert(tc_check(b->buf + 4096, 3000, 1), "SEND's bytes (first bad at %ld)",
		  tc_first_diff(b->buf + 4096, 3000, 1));
	/* WRITE of many packets */
	tc_fill(a->buf + 16384, 40000, 2);
	post(a, aq, b, IBV_WR_RDMA_WRITE, 2, 16384, 40000, 65536, 0, 0);
	done(a->cq, 2, IBV_WC_RDMA_WRITE, "WRITE");
	cr_assert(tc_check(b->buf + 65536, 40000, 2), "WRITE's bytes");
	/* WRITE_WITH_IMM */
	tc_fill(a->buf + 8192, 100, 3);
	post_recv(b, bq, 101, 0, 16);
	post(a, aq, b, IBV_WR_RDMA_WRITE_WITH_IMM, 3, 8192, 100, 120000, 0, 0);
	done(a->cq, 3, IBV_WC_RDMA_WRITE, "WRITE_WITH_IMM");
	wc = done(b->rcq, 101, IBV_WC_RECV_RDMA_WITH_IMM, "its receive");
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(wc.imm_data), 0xabc00003u);
	cr_assert(tc_check(b->buf + 120000, 100, 3));
	/* READ */
	tc_fill(b->buf + 131072, 30000, 4);
	memset(a->buf + 162000, 0, 30000);
	post(a, aq, b, IBV_WR_RDMA_READ, 4, 162000, 30000, 131072, 0, 0);
	done(a->cq, 4, IBV_WC_RDMA_READ, "READ");
	cr_assert(tc_check(a->buf + 162000, 30000, 4), "READ's bytes");
	/* atomics */
	word = (uint64_t *)(b->buf + 200000);
	*word = 5;
	post(a, aq, b, IBV_WR_ATOMIC_CMP_AND_SWP, 5, 200008, 8, 200000, 5, 9);
	done(a->cq, 5, IBV_WC_COMP_SWAP, "CMP_AND_SWP");
	cr_assert_eq(*(uint64_t *)(a->buf + 200008), 5, "the original value");
	cr_assert_eq(*word, 9, "swapped");
	post(a, aq, b, IBV_WR_ATOMIC_FETCH_AND_ADD, 6, 200016, 8, 200000, 3, 0);
	done(a->cq, 6, IBV_WC_FETCH_ADD, "FETCH_AND_ADD");
	cr_assert_eq(*(uint64_t *)(a->buf + 200016), 9);
	cr_assert_eq(*word, 12, "added");
}

/* ---- the transports ---- */

/* The embedded default config (config/loopback.ini): RC QPs on droce0 only. */
Test(loop, rc_every_opcode_on_one_port_default_config)
{
	unsetenv("DROCE_CONFIG");
	pair_up(IBV_QPT_RC, 3);
	rc_every_opcode(&A, A.qp, &B, B.qp);
	/* and back the other way */
	rc_every_opcode(&B, B.qp, &A, A.qp);
	assert_stayed_on_port0();
	cr_assert_eq(qp_stat(A.qp, "retransmits"), 0, "a clean loop loses nothing");
}

/* rxe allows a QP whose destination is itself. */
Test(loop, rc_qp_connected_to_itself)
{
	struct tc_conn c = { .timeout = 12 };

	tc_start(NULL);
	end_open(&A, "droce0");
	A.qp = qp_make(&A, IBV_QPT_RC);
	c.dgid = A.gid;
	c.dest_qpn = A.qp->qp_num;
	tc_qp_up(A.qp, &c);
	rc_every_opcode(&A, A.qp, &A, A.qp);
	assert_stayed_on_port0();
}

Test(loop, uc_send_and_write_on_one_port)
{
	struct ibv_wc wc;

	tc_start(NULL);
	pair_up(IBV_QPT_UC, 0);
	tc_fill(A.buf, 5000, 7);
	post_recv(&B, B.qp, 200, 8192, 8192);
	post(&A, A.qp, NULL, IBV_WR_SEND, 1, 0, 5000, 0, 0, 0);
	done(A.cq, 1, IBV_WC_SEND, "UC SEND");
	wc = done(B.rcq, 200, IBV_WC_RECV, "UC receive");
	cr_assert_eq(wc.byte_len, 5000);
	cr_assert(tc_check(B.buf + 8192, 5000, 7));
	tc_fill(A.buf + 32768, 20000, 8);
	post_recv(&B, B.qp, 201, 0, 16);
	post(&A, A.qp, &B, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 32768, 20000, 65536, 0, 0);
	done(A.cq, 2, IBV_WC_RDMA_WRITE, "UC WRITE_WITH_IMM");
	wc = done(B.rcq, 201, IBV_WC_RECV_RDMA_WITH_IMM, "its receive");
	cr_assert_eq(wc.byte_len, 20000);
	cr_assert(tc_check(B.buf + 65536, 20000, 8));
	assert_stayed_on_port0();
}

Test(loop, ud_to_ones_own_gid)
{
	struct tc_conn c = { 0 };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_send_wr w = { 0 }, *bad;
	struct ibv_wc wc;
	const struct ibv_grh *grh;

	tc_start(NULL);
	end_open(&A, "droce0");
	end_open(&B, "droce0");
	A.qp = qp_make(&A, IBV_QPT_UD);
	B.qp = qp_make(&B, IBV_QPT_UD);
	tc_qp_up(A.qp, &c);
	tc_qp_up(B.qp, &c);
	aa.grh.dgid = B.gid;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(A.pd, &aa);
	cr_assert_not_null(ah, "ibv_create_ah to one's own GID: %s", strerror(errno));
	post_recv(&B, B.qp, 300, 0, 40 + 1024);
	tc_fill(A.buf, 1024, 9);
	sge = (struct ibv_sge){ (uintptr_t)A.buf, 1024, A.mr->lkey };
	w.wr_id = 1;
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = B.qp->qp_num;
	w.wr.ud.remote_qkey = 0x11111111;
	cr_assert_eq(ibv_post_send(A.qp, &w, &bad), 0);
	done(A.cq, 1, IBV_WC_SEND, "UD SEND");
	wc = done(B.rcq, 300, IBV_WC_RECV, "UD receive");
	cr_assert_eq(wc.byte_len, 40 + 1024);
	cr_assert_eq(wc.src_qp, A.qp->qp_num);
	cr_assert(wc.wc_flags & IBV_WC_GRH);
	grh = (const struct ibv_grh *)B.buf;
	/* RoCEv2 over IPv4: the IPv4 header sits in the GRH's last 20 bytes */
	cr_assert(tc_check(B.buf + 40, 1024, 9), "UD payload");
	(void)grh;
	ibv_destroy_ah(ah);
	assert_stayed_on_port0();
}

Test(loop, xrc_on_one_port)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						       IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = -1, .oflags = O_CREAT };
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	struct ibv_qp *snd, *rcv;
	uint32_t srqn;
	struct tc_conn c = { .timeout = 12 };
	struct ibv_sge sge;
	struct ibv_recv_wr rw = { 0 }, *rbad;
	struct ibv_send_wr w = { 0 }, *bad;
	struct ibv_wc wc;

	tc_start(NULL);
	end_open(&A, "droce0");
	end_open(&B, "droce0");
	xrcd = ibv_open_xrcd(B.ctx, &xa);
	cr_assert_not_null(xrcd, "ibv_open_xrcd: %s", strerror(errno));
	{
		struct ibv_srq_init_attr_ex sa = {
			.attr = { .max_wr = 64, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
				     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
			.srq_type = IBV_SRQT_XRC, .xrcd = xrcd, .cq = B.rcq, .pd = B.pd,
		};
		struct ibv_qp_init_attr_ex sqa = {
			.qp_type = IBV_QPT_XRC_SEND, .send_cq = A.cq,
			.cap = { .max_send_wr = 64, .max_send_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = A.pd,
		};
		struct ibv_qp_init_attr_ex rqa = {
			.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = xrcd,
		};

		srq = ibv_create_srq_ex(B.ctx, &sa);
		cr_assert_not_null(srq, "XRC SRQ: %s", strerror(errno));
		cr_assert_eq(ibv_get_srq_num(srq, &srqn), 0);
		snd = ibv_create_qp_ex(A.ctx, &sqa);
		rcv = ibv_create_qp_ex(B.ctx, &rqa);
		cr_assert(snd && rcv, "XRC QPs: %s", strerror(errno));
	}
	c.dgid = B.gid;
	c.dest_qpn = rcv->qp_num;
	tc_qp_up(snd, &c);
	c.dgid = A.gid;
	c.dest_qpn = snd->qp_num;
	tc_qp_up(rcv, &c);
	sge = (struct ibv_sge){ (uintptr_t)B.buf, 8192, B.mr->lkey };
	rw.wr_id = 400;
	rw.sg_list = &sge;
	rw.num_sge = 1;
	cr_assert_eq(ibv_post_srq_recv(srq, &rw, &rbad), 0);
	tc_fill(A.buf, 6000, 11);
	sge = (struct ibv_sge){ (uintptr_t)A.buf, 6000, A.mr->lkey };
	w.wr_id = 1;
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.qp_type.xrc.remote_srqn = srqn;
	cr_assert_eq(ibv_post_send(snd, &w, &bad), 0);
	done(A.cq, 1, IBV_WC_SEND, "XRC SEND");
	wc = done(B.rcq, 400, IBV_WC_RECV, "XRC receive");
	cr_assert_eq(wc.byte_len, 6000);
	cr_assert_eq(wc.qp_num, rcv->qp_num);
	cr_assert(tc_check(B.buf, 6000, 11), "XRC SEND's bytes");
	/* an RDMA WRITE through the XRC pair */
	tc_fill(A.buf + 16384, 30000, 12);
	sge = (struct ibv_sge){ (uintptr_t)A.buf + 16384, 30000, A.mr->lkey };
	w.wr_id = 2;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.wr.rdma.remote_addr = (uintptr_t)B.buf + 65536;
	w.wr.rdma.rkey = B.mr->rkey;
	cr_assert_eq(ibv_post_send(snd, &w, &bad), 0);
	done(A.cq, 2, IBV_WC_RDMA_WRITE, "XRC WRITE");
	cr_assert(tc_check(B.buf + 65536, 30000, 12), "XRC WRITE's bytes");
	assert_stayed_on_port0();
}

/* RAW_PACKET: a frame to the port's own MAC comes back to it, where a flow
 * rule takes it; one to droce1's MAC goes over the ring and does not. */
Test(loop, raw_packet_to_the_ports_own_mac)
{
	struct raw_qp tx, rx;
	struct raw_flow_attr f;
	struct raw_addr ad;
	struct ibv_flow *fl;
	struct ibv_context *c0;
	unsigned int slot, flags;
	uint32_t len;
	size_t n;

	tc_start(NULL);
	c0 = tc_open("droce0", NULL);
	raw_qp_open(&tx, c0);
	raw_qp_open(&rx, c0);
	raw_flow_init(&f, IBV_FLOW_ATTR_NORMAL, 0);
	raw_flow_eth(&f, MAC0, 0);
	raw_flow_l4(&f, false, 0, 4000);
	fl = ibv_create_flow(rx.qp, &f.attr);
	cr_assert_not_null(fl, "ibv_create_flow: %s", strerror(errno));
	memset(&ad, 0, sizeof(ad));
	memcpy(ad.smac, MAC0, 6);
	memcpy(ad.dmac, MAC0, 6);
	ad.sip = inet_addr("198.18.0.1");
	ad.dip = inet_addr("198.18.0.1");
	n = raw_udp_frame(tx.sbuf, &ad, 1234, 4000, 300, 21, 1, 0);
	cr_assert_eq(raw_send(&tx, 0, (uint32_t)n, IBV_SEND_IP_CSUM), 0);
	raw_send_done(&tx, IBV_WC_SUCCESS);
	cr_assert(raw_recv(&rx, 5000, &slot, &len, &flags), "the frame to one's own MAC");
	cr_assert_eq(len, n);
	/* byte for byte but the checksums IBV_SEND_IP_CSUM filled in */
	cr_assert(raw_csums_valid(rx.rbuf + (size_t)slot * RAW_BUF, len), "checksums filled");
	cr_assert_arr_eq(rx.rbuf + (size_t)slot * RAW_BUF, tx.sbuf, 24, "Ethernet, IP to the checksum");
	cr_assert_arr_eq(rx.rbuf + (size_t)slot * RAW_BUF + 26, tx.sbuf + 26, 14, "addresses, UDP ports and length");
	cr_assert_arr_eq(rx.rbuf + (size_t)slot * RAW_BUF + 42, tx.sbuf + 42, n - 42, "payload");
	raw_post_recv(&rx, slot);
	/* droce1's MAC: out over the ring (droce1 has no rule: dropped there) */
	memcpy(ad.dmac, MAC1, 6);
	n = raw_udp_frame(tx.sbuf, &ad, 1234, 4000, 300, 22, 2, 0);
	cr_assert_eq(raw_send(&tx, 0, (uint32_t)n, IBV_SEND_IP_CSUM), 0);
	raw_send_done(&tx, IBV_WC_SUCCESS);
	cr_assert_not(raw_recv(&rx, 300, &slot, &len, &flags), "not one's own MAC: not looped");
	cr_assert_eq(port_stat(0, "loop_tx"), 1);
	cr_assert_eq(port_stat(1, "rx_frames"), 1, "the other went to droce1");
	ibv_destroy_flow(fl);
}

/* ---- the impaired port, capture, engines ---- */

/* Drop, duplicate and reorder on droce0 hit looped frames (both on their way
 * out and in): RC recovers, every message arrives once, in order. */
Test(loop, rc_recovers_losses_of_the_impaired_port)
{
	struct tc_pair o = { .port0_extra = "impair_drop = 0.03\nimpair_dup = 0.03\n"
					    "impair_reorder = 0.03\nimpair_seed = 7\n" };
	enum { N = 200, LEN = 3000 };
	struct ibv_wc wc;

	tc_start(&o);
	pair_up(IBV_QPT_RC, 7);
	for (unsigned int i = 0; i < N; i++)
		post_recv(&B, B.qp, 1000 + i, (size_t)i * 1024, 1024);
	for (unsigned int i = 0; i < N; i++) {
		/* a WRITE and a SEND of the same bytes, both to B's slot i */
		tc_fill(A.buf + (size_t)i * 1024, 1024, 5000 + i);
		post(&A, A.qp, &B, IBV_WR_RDMA_WRITE, 2 * i, (size_t)i * 1024, 1024,
		     (size_t)i * 1024, 0, 0);
		post(&A, A.qp, NULL, IBV_WR_SEND, 2 * i + 1, (size_t)i * 1024, 1024, 0, 0, 0);
		if (i % 64 == 63) {
			for (unsigned int k = 0; k < 128; k++) {
				wc = tc_wait(A.cq, 20000, "send completions");
				cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
			}
		}
	}
	for (unsigned int k = 0; k < 2 * (N % 64); k++) {
		wc = tc_wait(A.cq, 20000, "send completions");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	}
	/* SENDs land at the start of B's buffer one after the other; the
	 * receive slots are the WRITEs' places, so B's slot i holds message i */
	for (unsigned int i = 0; i < N; i++) {
		wc = done(B.rcq, 1000 + i, IBV_WC_RECV, "in order, once");
		cr_assert_eq(wc.byte_len, 1024);
		cr_assert(tc_check(B.buf + (size_t)i * 1024, 1024, 5000 + i), "message %u", i);
	}
	tc_expect_none(B.rcq, 200, "no duplicate completion");
	cr_assert_gt(port_stat(0, "impair_tx_dropped") + port_stat(0, "impair_rx_dropped"), 0);
	cr_assert_gt(port_stat(0, "impair_tx_duplicated") + port_stat(0, "impair_rx_duplicated"), 0);
	cr_assert_gt(port_stat(0, "impair_tx_reordered") + port_stat(0, "impair_rx_reordered"), 0);
	cr_assert_gt(qp_stat(A.qp, "retransmits") + qp_stat(B.qp, "retransmits"), 0,
		     "losses were recovered by retransmission");
	cr_assert_eq(port_stat(1, "rx_frames"), 0, "nothing crossed the ring to droce1");
}

/* Sends one non-RoCE frame from droce0 to droce1's MAC (it crosses the link). */
static void
frame_to_port1(void)
{
	uint8_t f[60] = { 0 };

	memcpy(f, MAC1, 6);
	memcpy(f + 6, MAC0, 6);
	f[12] = 0x88, f[13] = 0xb5; /* local experimental EtherType */
	cr_assert_eq(droce_dp_inject(0, 0, DROCE_INJECT_TX, f, sizeof(f)), 0);
	for (unsigned int i = 0; i < 50; i++)
		droce_engines_progress();
}

/*
 * A cut link drops what would cross it, never a looped frame (which never
 * touches the link): with the ring peer's link cut, then droce0's own too,
 * A and B on droce0 go on (every RC opcode both ways), while a frame for
 * droce1 is dropped and counted.  The port delays its frames (2 ms), so the cut finds looped frames held in the impairment:
 * they are kept, not purged with what was bound for the link.
 */
Test(loop, cut_link_keeps_looped_frames)
{
	struct tc_pair o = { .port0_extra = "impair_delay = 1\nimpair_delay_us = 2000\n" };
	struct droce_port *p0, *p1;

	tc_start(&o);
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	pair_up(IBV_QPT_RC, 3);
	/* a SEND whose frame waits in the delay when the ring peer's link goes */
	tc_fill(A.buf, 2000, 41);
	post_recv(&B, B.qp, 1, 4096, 4096);
	post(&A, A.qp, NULL, IBV_WR_SEND, 1, 0, 2000, 0, 0, 0);
	for (unsigned int i = 0; i < 4; i++)
		droce_engines_progress();
	droce_port_set_link(p1, false);
	done(A.cq, 1, IBV_WC_SEND, "SEND held across the cut");
	done(B.rcq, 1, IBV_WC_RECV, "its receive");
	cr_assert(tc_check(B.buf + 4096, 2000, 41));
	rc_every_opcode(&A, A.qp, &B, B.qp);
	/* droce0's own link too */
	droce_port_set_link(p0, false);
	rc_every_opcode(&B, B.qp, &A, A.qp);
	/* (retransmissions may happen: the delay is a good part of the RTO) */
	cr_assert_eq(port_stat(0, "impair_tx_link_down"), 0, "nothing looped was lost to the cut");
	cr_assert_eq(port_stat(0, "impair_rx_link_down"), 0);
	cr_assert_gt(port_stat(0, "impair_tx_delayed"), 0, "the port delayed the looped frames");
	/* what crosses the link is still cut */
	frame_to_port1();
	cr_assert_eq(port_stat(0, "impair_tx_link_down"), 1, "a frame for droce1 dropped at the cut");
	droce_port_set_link(p0, true);
	frame_to_port1();
	cr_assert_eq(port_stat(0, "impair_tx_link_down"), 2, "droce1's link is still cut");
	cr_assert_eq(port_stat(1, "rx_frames"), 0, "nothing crossed the ring to droce1");
	droce_port_set_link(p1, true);
	frame_to_port1();
	for (unsigned int i = 0; i < 200 && port_stat(1, "rx_frames") == 0; i++) {
		droce_engines_progress();
		usleep(1000);
	}
	cr_assert_eq(port_stat(1, "rx_frames"), 1, "the link is back: the frame crosses it");
}

/* The corrupting port: the ICRC check drops what it flipped; RC still recovers. */
Test(loop, corrupted_loop_frames_are_dropped_and_recovered)
{
	struct tc_pair o = { .port0_extra = "impair_corrupt = 0.05\nimpair_seed = 3\n" };

	tc_start(&o);
	pair_up(IBV_QPT_RC, 7);
	for (unsigned int i = 0; i < 40; i++) {
		tc_fill(A.buf, 8000, 600 + i);
		post(&A, A.qp, &B, IBV_WR_RDMA_WRITE, i, 0, 8000, 8192, 0, 0);
		done(A.cq, i, IBV_WC_RDMA_WRITE, "WRITE through corruption");
		cr_assert(tc_check(B.buf + 8192, 8000, 600 + i), "WRITE %u's bytes", i);
	}
	cr_assert_gt(port_stat(0, "impair_tx_corrupted") + port_stat(0, "impair_rx_corrupted"), 0);
}

/* ---- pcapng reading: Enhanced Packet Blocks and their direction flag ---- */

struct epb {
	uint8_t data[256];
	uint32_t len;
	unsigned int dir; /* 1 inbound, 2 outbound, 0 unknown */
};

static size_t
read_epbs(const char *path, struct epb *out, size_t max)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0;
	uint8_t *blk = NULL;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	for (;;) {
		uint32_t h[2];

		if (fread(h, 4, 2, f) != 2 || h[1] < 12 || h[1] > (1u << 20))
			break;
		blk = realloc(blk, h[1]);
		cr_assert_not_null(blk);
		if (fread(blk, 1, h[1] - 8, f) != h[1] - 8)
			break;
		if (h[0] == 6 && n < max) { /* Enhanced Packet Block */
			uint32_t caplen, off, end = h[1] - 12;
			struct epb *e = &out[n++];

			memcpy(&caplen, blk + 12, 4);
			e->len = caplen;
			memcpy(e->data, blk + 20, RTE_MIN(caplen, (uint32_t)sizeof(e->data)));
			e->dir = 0;
			for (off = 20 + ((caplen + 3) & ~3u); off + 4 <= end;) {
				uint16_t code, olen;

				memcpy(&code, blk + off, 2);
				memcpy(&olen, blk + off + 2, 2);
				if (code == 0)
					break;
				if (code == 2 && olen == 4) { /* epb_flags */
					uint32_t fl;

					memcpy(&fl, blk + off + 4, 4);
					e->dir = fl & 3;
				}
				off += 4 + ((olen + 3u) & ~3u);
			}
		}
	}
	free(blk);
	fclose(f);
	return n;
}

/* The port's capture shows each looped frame twice: as sent and as received. */
Test(loop, capture_shows_both_directions)
{
	static char extra[160], path[96];
	static struct epb frames[256];
	struct tc_pair o = { 0 };
	unsigned int out_send = 0, in_send = 0, out_ack = 0, in_ack = 0;
	size_t n;

	snprintf(path, sizeof(path), "/tmp/droce-loop-%d.pcapng", (int)getpid());
	snprintf(extra, sizeof(extra), "capture = %s\n", path);
	o.port0_extra = extra;
	tc_start(&o);
	pair_up(IBV_QPT_RC, 3);
	tc_fill(A.buf, 200, 31);
	post_recv(&B, B.qp, 1, 4096, 4096);
	post(&A, A.qp, NULL, IBV_WR_SEND, 1, 0, 200, 0, 0, 0);
	done(A.cq, 1, IBV_WC_SEND, "SEND");
	done(B.rcq, 1, IBV_WC_RECV, "receive");
	tc_stop(); /* closes the capture */
	n = read_epbs(path, frames, 256);
	unlink(path);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *d = frames[i].data;
		uint8_t opcode;

		if (frames[i].len < 14 + 20 + 8 + 12 || d[12] != 0x08 || d[13] != 0x00)
			continue;
		cr_assert_arr_eq(d, MAC0, 6, "to droce0's own MAC");
		cr_assert_arr_eq(d + 6, MAC0, 6, "from droce0's own MAC");
		opcode = d[14 + 20 + 8];
		if (opcode == 0x04) { /* RC SEND_ONLY */
			out_send += frames[i].dir == 2;
			in_send += frames[i].dir == 1;
		} else if (opcode == 0x11) { /* RC ACKNOWLEDGE */
			out_ack += frames[i].dir == 2;
			in_ack += frames[i].dir == 1;
		}
	}
	cr_assert_eq(out_send, 1, "the SEND as sent");
	cr_assert_eq(in_send, 1, "the SEND as received");
	cr_assert_geq(out_ack, 1, "its ACK as sent");
	cr_assert_eq(in_ack, out_ack, "its ACK as received");
}

/* Two engines: each frame arrives on the sending engine's queue and is handed
 * over to the engine owning the destination QP (config/loopback-2engines.ini). */
Test(loop, cross_engine_hand_over)
{
	struct tc_pair o = { .engines = 2 };
	unsigned int tries = 0;

	tc_start(&o);
	end_open(&A, "droce0");
	end_open(&B, "droce0");
	A.qp = qp_make(&A, IBV_QPT_RC);
	B.qp = qp_make(&B, IBV_QPT_RC);
	/* QPN = (index + 1) << 6 | engine: one QP on each engine */
	while ((A.qp->qp_num & 0x3f) == (B.qp->qp_num & 0x3f) && tries++ < 4)
		B.qp = qp_make(&B, IBV_QPT_RC);
	cr_assert_neq(A.qp->qp_num & 0x3f, B.qp->qp_num & 0x3f, "QPs on different engines");
	pair_connect(3);
	rc_every_opcode(&A, A.qp, &B, B.qp);
	rc_every_opcode(&B, B.qp, &A, A.qp);
	cr_assert_gt(engine_stat(0, "forwarded"), 0, "engine 0 handed frames to engine 1");
	cr_assert_gt(engine_stat(1, "forwarded"), 0, "engine 1 handed frames to engine 0");
	assert_stayed_on_port0();
}

/* Zero-copy frames (payload an external mbuf into the MR) are placed from the
 * sender's memory and then release it: the MR deregisters at once after. */
Test(loop, zero_copy_frames_release_the_mr)
{
	/* every 1024-byte packet zero-copy (the default threshold is 4096) */
	struct tc_pair o = { .port0_extra = "zero_copy = 256\n" };

	tc_start(&o);
	pair_up(IBV_QPT_RC, 3);
	for (unsigned int i = 0; i < 8; i++) {
		tc_fill(A.buf, 65536, 70 + i);
		post(&A, A.qp, &B, IBV_WR_RDMA_WRITE, i, 0, 65536, 131072, 0, 0);
		done(A.cq, i, IBV_WC_RDMA_WRITE, "zero-copy WRITE");
		cr_assert(tc_check(B.buf + 131072, 65536, 70 + i), "WRITE %u's bytes", i);
	}
	cr_assert_gt(engine_stat(0, "tx_zero_copy"), 0, "sent zero-copy");
	/* the receive side's READ response too: B's memory, zero-copy */
	tc_fill(B.buf, 65536, 90);
	post(&A, A.qp, &B, IBV_WR_RDMA_READ, 100, 0, 65536, 0, 0, 0);
	done(A.cq, 100, IBV_WC_RDMA_READ, "zero-copy READ");
	cr_assert(tc_check(A.buf, 65536, 90));
	ibv_destroy_qp(A.qp);
	ibv_destroy_qp(B.qp);
	cr_assert_eq(ibv_dereg_mr(A.mr), 0, "no frame holds A's MR any more");
	cr_assert_eq(ibv_dereg_mr(B.mr), 0, "nor B's");
	assert_stayed_on_port0();
}

/* ---- one's own address ---- */

Test(loop, arp_of_ones_own_address)
{
	struct rte_ether_addr mac;

	tc_start(NULL);
	(void)tc_open("droce0", NULL); /* the engines run from the first open on */
	cr_assert_eq(droce_dp_arp_resolve(0, inet_addr("198.18.0.1"), &mac, 100), 0);
	cr_assert_arr_eq(mac.addr_bytes, MAC0, 6, "droce0's own MAC");
	cr_assert_eq(port_stat(0, "arp_requests_tx"), 0, "answered without a request");
}

static struct rdma_cm_event *
cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0, "rdma_get_cm_event: %s", strerror(errno));
	cr_assert_eq(ev->event, want, "event %s (status %d), expected %s", rdma_event_str(ev->event),
		     ev->status, rdma_event_str(want));
	return ev;
}

/* rdma_cm on one address: bind, resolve one's own address, connect to a
 * listener on the same port, accept, a SEND both ways (the CM's MADs loop too). */
Test(loop, rdma_cm_connects_to_its_own_address)
{
	struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(7600) };
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *l, *c, *s;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
						.max_recv_sge = 1, .max_inline_data = 64 } };
	char cbuf[64] = { 0 }, sbuf[64] = { 0 };
	struct ibv_mr *cmr, *smr;
	struct ibv_wc wc;

	tc_start(NULL);
	la.sin_addr.s_addr = inet_addr("198.18.0.1");
	src.sin_addr.s_addr = inet_addr("198.18.0.1");
	ch = rdma_create_event_channel();
	cr_assert_not_null(ch);
	cr_assert_eq(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(l, (struct sockaddr *)&la), 0);
	cr_assert_eq(rdma_listen(l, 4), 0);
	cr_assert_eq(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&la, 2000), 0);
	rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	cr_assert_str_eq(ibv_get_device_name(c->verbs->device), "droce0");
	cr_assert_eq(rdma_resolve_route(c, 2000), 0);
	rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	cr_assert_eq(rdma_create_qp(c, NULL, &ia), 0, "rdma_create_qp: %s", strerror(errno));
	cr_assert_eq(rdma_connect(c, &cp), 0, "rdma_connect: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	s = ev->id;
	cr_assert_str_eq(ibv_get_device_name(s->verbs->device), "droce0");
	rdma_ack_cm_event(ev);
	ia.send_cq = ia.recv_cq = NULL; /* rdma_create_qp wrote c's CQs into it */
	cr_assert_eq(rdma_create_qp(s, NULL, &ia), 0);
	cr_assert_eq(rdma_accept(s, &cp), 0, "rdma_accept: %s", strerror(errno));
	for (unsigned int k = 0; k < 2; k++) {
		ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED);
		cr_assert(ev->id == c || ev->id == s);
		rdma_ack_cm_event(ev);
	}
	cmr = rdma_reg_msgs(c, cbuf, sizeof(cbuf));
	smr = rdma_reg_msgs(s, sbuf, sizeof(sbuf));
	cr_assert(cmr && smr);
	cr_assert_eq(rdma_post_recv(s, NULL, sbuf, sizeof(sbuf), smr), 0);
	cr_assert_eq(rdma_post_send(c, NULL, "to myself", 9, NULL, IBV_SEND_INLINE), 0);
	cr_assert_eq(tc_poll(c->qp->send_cq, &wc, 1, 10000), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(tc_poll(s->qp->recv_cq, &wc, 1, 10000), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_arr_eq(sbuf, "to myself", 9);
	cr_assert_eq(port_stat(1, "rx_frames"), 0, "nothing crossed the ring to droce1");
	cr_assert_gt(port_stat(0, "loop_tx"), 0);
	rdma_disconnect(c);
	rdma_dereg_mr(cmr);
	rdma_dereg_mr(smr);
}
