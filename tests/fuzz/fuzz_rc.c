/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: live RC QPs fed hostile frames.
 *
 * Once per process: droce on the embedded loopback pair (fallback progress
 * thread off, so this thread alone drives the engine), an RC QP on droce0
 * (A) connected to one on droce1 (B), each with a 64 KiB MR between two
 * guard regions of 64 KiB that no MR covers.
 *
 * Per input: both QPs are reset and connected again (PSNs from 0), B posts
 * receives, A may post a READ, a SEND and a FETCH_ADD (so the completer has
 * requests outstanding), then the input's frames are injected into the
 * receive ring of A's or B's port, the engine driven after each, then until
 * idle.  Input format: byte 0 selects A's requests (bits 0-2), then frames as
 * [ctl u8][len u16 LE][len bytes].  ctl bit 0: to B (else A); bit 1: raw
 * (else the frame is made deliverable: IPv4/UDP 4791 lengths and checksum,
 * the target's MAC and QPN, a fresh ICRC); bit 2: RETH / AtomicETH aimed
 * into the target's MR (rkey, VA = MR start + the frame's low 16 VA bits);
 * bit 3: P_Key forced to the default.
 *
 * Checks: no crash, no ASan/UBSan report, guard bytes unchanged, and every
 * completion carries a valid status.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "dataplane/icrc.h"
#include "dataplane/wire.h"
/* frames are injected straight into the ring pair's receive ring */
#include "pmd_glue/port_struct.h"
#include "tests/common/pair_config.h"

#define MR_LEN 65536
#define GUARD 65536
#define GUARD_BYTE 0xa5

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *region; /* guard | MR | guard */
	uint8_t *buf;
	union ibv_gid gid;
	struct droce_port *port;
};

static struct end A, B;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
die(const char *what)
{
	fprintf(stderr, "fuzz_rc: %s: %s\n", what, strerror(errno));
	abort();
}

static void
open_end(struct end *e, struct ibv_device *dev, unsigned int port)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	e->ctx = ibv_open_device(dev);
	if (e->ctx == NULL || ibv_query_gid(e->ctx, 1, 0, &e->gid) != 0)
		die("open");
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	e->region = aligned_alloc(4096, GUARD + MR_LEN + GUARD);
	if (e->pd == NULL || e->cq == NULL || e->region == NULL)
		die("pd/cq/region");
	memset(e->region, GUARD_BYTE, GUARD + MR_LEN + GUARD);
	e->buf = e->region + GUARD;
	e->mr = ibv_reg_mr(e->pd, e->buf, MR_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	if (e->mr == NULL || e->qp == NULL)
		die("mr/qp");
	e->port = droce_port_get(port);
}

static void
connect_end(struct end *e, const struct end *peer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE) != 0)
		die("RESET");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC };
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS) != 0)
		die("INIT");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = peer->qp->qp_num, .rq_psn = 0,
				  .max_dest_rd_atomic = 4, .min_rnr_timer = 1,
				  .ah_attr = { .is_global = 1, .port_num = 1,
					       .grh = { .dgid = peer->gid, .hop_limit = 64 } } };
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER) != 0)
		die("RTR");
	/* short timers: a lost response times out within the input's budget */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 1, .retry_cnt = 1,
				  .rnr_retry = 1, .sq_psn = 0, .max_rd_atomic = 4 };
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
		die("RTS");
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the test pair, with the fallback progress thread off */
	static const struct tc_pair pair = { .fallback_us = -1, .eal_extra = "--log-level=droce.*:error",
					     /* frames with the hint exercise rc_sr.c too */
					     .engines_extra = "selective_repeat = 1" };
	char cfg[4096];
	char path[] = "/tmp/droce-fuzz-rc-XXXXXX";
	struct ibv_device **list;
	int fd = mkstemp(path), n;

	(void)argc;
	(void)argv;
	n = tc_pair_config(cfg, sizeof(cfg), &pair);
	if (fd < 0 || n < 0 || write(fd, cfg, (size_t)n) != n)
		die("config");
	close(fd);
	setenv("DROCE_CONFIG", path, 1);
	list = ibv_get_device_list(&n);
	unlink(path);
	if (list == NULL || n < 2)
		die("devices");
	open_end(&A, list[0], 0);
	open_end(&B, list[1], 1);
	ibv_free_device_list(list);
	return 0;
}

static void
drain(struct end *e)
{
	struct ibv_wc wc[32];
	int n;

	while ((n = ibv_poll_cq(e->cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++)
			if ((unsigned int)wc[i].status > IBV_WC_TM_RNDV_INCOMPLETE)
				abort();
	if (n < 0)
		abort();
}

static void
post(struct end *e, enum ibv_wr_opcode op, uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_send_wr w = { .wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = raddr;
		w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = 1;
	} else {
		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = rkey;
	}
	(void)ibv_post_send(e->qp, &w, &bad); /* a full queue is fine */
}

/* Makes @f (len bytes, room for it) a deliverable RoCEv2 IPv4 frame for @to. */
static void
make_deliverable(uint8_t *f, size_t len, const struct end *to, const struct end *from, uint8_t ctl)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + 14);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(f + 34);
	struct droce_bth *bth = (struct droce_bth *)(f + 42);
	const struct droce_opcode_info *info;

	memcpy(f, droce_port_mac(to->port), 6);
	memcpy(f + 6, droce_port_mac(from->port), 6);
	f[12] = 0x08;
	f[13] = 0x00;
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(len - 14));
	ip->fragment_offset = 0;
	ip->next_proto_id = IPPROTO_UDP;
	memcpy(&ip->src_addr, from->gid.raw + 12, 4);
	memcpy(&ip->dst_addr, to->gid.raw + 12, 4);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dst_port = rte_cpu_to_be_16(DROCE_UDP_PORT);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - 34));
	udp->dgram_cksum = 0;
	droce_bth_set_qpn(bth, to->qp->qp_num);
	droce_bth_set_tver(bth, 0);
	if (ctl & 8)
		droce_bth_set_pkey(bth, 0xffff);
	info = droce_opcode_info(droce_bth_opcode(bth));
	if ((ctl & 4) && info->name != NULL && 42 + (size_t)info->hdr_len <= len - 4) {
		if (info->off[DROCE_HDR_RETH]) {
			struct droce_reth *r = (struct droce_reth *)((uint8_t *)bth + info->off[DROCE_HDR_RETH]);

			droce_reth_set_rkey(r, to->mr->rkey);
			droce_reth_set_va(r, (uintptr_t)to->buf + (droce_reth_va(r) & 0xffff));
		}
		if (info->off[DROCE_HDR_ATMETH]) {
			struct droce_atmeth *a = (struct droce_atmeth *)((uint8_t *)bth + info->off[DROCE_HDR_ATMETH]);
			uint64_t va;

			memcpy(&va, &a->va, 8);
			va = rte_cpu_to_be_64((uintptr_t)to->buf + (rte_be_to_cpu_64(va) & 0xffff));
			memcpy(&a->va, &va, 8);
			a->rkey = rte_cpu_to_be_32(to->mr->rkey);
		}
	}
	droce_icrc_store(f + len - 4, droce_icrc_flat(f + 14, len - 14 - 4, false));
}

static void
inject(const struct end *to, const uint8_t *bytes, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(droce_pktmbuf_pool());
	char *p;

	if (m == NULL)
		return;
	p = rte_pktmbuf_append(m, (uint16_t)len);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(p, bytes, len);
	if (rte_ring_enqueue(to->port->rings[0][0], m) != 0)
		rte_pktmbuf_free(m);
}

static void
check_guards(const struct end *e)
{
	for (size_t i = 0; i < GUARD; i++)
		if (e->region[i] != GUARD_BYTE || e->region[GUARD + MR_LEN + i] != GUARD_BYTE)
			abort(); /* a remote access wrote outside the MR */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[2048];
	size_t off = 1;

	if (size < 1)
		return 0;
	connect_end(&A, &B);
	connect_end(&B, &A);
	for (int i = 0; i < 8; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)B.buf + 4096u * (unsigned int)i, .length = 4096,
				       .lkey = B.mr->lkey };
		struct ibv_recv_wr w = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

		(void)ibv_post_recv(B.qp, &w, &bad);
	}
	if (data[0] & 1)
		post(&A, IBV_WR_RDMA_READ, 0, 2048, (uintptr_t)B.buf + 8192, B.mr->rkey);
	if (data[0] & 2)
		post(&A, IBV_WR_SEND, 4096, 100, 0, 0);
	if (data[0] & 4)
		post(&A, IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8, (uintptr_t)B.buf + 64, B.mr->rkey);
	while (off + 3 <= size) {
		uint8_t ctl = data[off];
		size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
		struct end *to = (ctl & 1) ? &B : &A, *from = (ctl & 1) ? &A : &B;

		off += 3;
		if (len > size - off)
			len = size - off;
		if (len > sizeof(frame))
			len = sizeof(frame);
		memcpy(frame, data + off, len);
		off += len;
		if (!(ctl & 2) && len >= 42 + sizeof(struct droce_bth) + DROCE_ICRC_LEN)
			make_deliverable(frame, len, to, from, ctl);
		inject(to, frame, len);
		droce_engines_progress();
		drain(&A);
		drain(&B);
	}
	/* let what was started finish or time out (timeout 1 = 8 us, 2 tries) */
	for (int i = 0; i < 200; i++)
		droce_engines_progress();
	drain(&A);
	drain(&B);
	check_guards(&A);
	check_guards(&B);
	return 0;
}
