/* SPDX-License-Identifier: BSD-3-Clause
 * verbs over the real engines, tier (b): EAL (started by the first
 * ibv_get_device_list in each forked Criterion test, from the embedded
 * loopback config: --no-huge --no-pci, own --file-prefix) and the ring pair
 * droce0 <-> droce1.  What the validation suite cannot see: completion
 * channels woken by an engine, and errors found at execution time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>
#include <droce/stats.h>
#include <rte_eal.h>

#include "dataplane/dp.h"
#include "pmd_glue/port.h"
#include "env.h"

#define BUF_SIZE 65536

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
};

static struct end A, B;
static const char *config_path; /* NULL: the embedded loopback config */

TestSuite(verbs_rc, .fini = tc_stop, .timeout = 30);

/* receive caps of the QPs open_end creates (a test may change them first) */
static uint32_t recv_wr = 16, recv_sge = 2;

static void
open_end(struct end *e, const char *name, uint32_t send_wr)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 2,
			 .max_recv_sge = recv_sge, .max_inline_data = 64 },
	};

	if (config_path)
		setenv("DROCE_CONFIG", config_path, 1);
	else
		unsetenv("DROCE_CONFIG");
	e->ctx = tc_open(name, &e->gid);
	e->pd = ibv_alloc_pd(e->ctx);
	e->mr = tc_reg_buf(e->pd, BUF_SIZE, 0);
	e->buf = e->mr->addr;
	e->ch = ibv_create_comp_channel(e->ctx);
	cr_assert_not_null(e->ch);
	e->scq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 64, e, e->ch, 0);
	cr_assert(e->scq && e->rcq);
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	e->qp = ibv_create_qp(e->pd, &ia);
	cr_assert_not_null(e->qp, "ibv_create_qp: %s", strerror(errno));
}

/* RESET -> RTS towards @peer (PSN 0x300; remote write and read). */
static void
connect_end(struct end *e, const struct end *peer)
{
	/* timeout 17 (537 ms): the default 4 ms ACK timeout fired under a
	 * loaded ASan run, and a retransmitted SEND breaks the exact frame
	 * counts the counter tests assert; no test here wants a timeout */
	struct tc_conn c = { .dgid = peer->gid, .dest_qpn = peer->qp->qp_num, .psn = 0x300,
			     .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
			     .timeout = 17 };

	tc_qp_up(e->qp, &c);
}

static void
setup_pair(uint32_t send_wr)
{
	open_end(&A, "droce0", send_wr);
	open_end(&B, "droce1", send_wr);
	connect_end(&A, &B);
	connect_end(&B, &A);
}

static int
post_recv(struct end *e, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(e->qp, &w, &bad);
}

static int
post_send(struct end *e, uint64_t id, uint32_t off, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(e->qp, &w, &bad);
}

Test(verbs_rc, devices_ports_gids)
{
	struct ibv_port_attr pa;
	union ibv_gid want;

	open_end(&A, "droce0", 4);
	cr_assert_eq(ibv_query_port(A.ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	cr_assert_eq(pa.active_mtu, IBV_MTU_1024); /* loopback.ini: mtu 1500 */
	cr_assert_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(pa.gid_tbl_len, DROCE_MAX_GIDS, "the table's size; one entry used");
	memset(&want, 0, sizeof(want));
	want.raw[10] = want.raw[11] = 0xff;
	inet_pton(AF_INET, "198.18.0.1", want.raw + 12);
	cr_assert_arr_eq(A.gid.raw, want.raw, 16);
}

/* max_qp is what the engines can hold: the QPN space of one engine (the
 * loopback config has one), 2^18 - 1, not a fixed table's size. */
Test(verbs_rc, query_device_max_qp_is_the_true_limit)
{
	struct ibv_device_attr a;

	open_end(&A, "droce0", 4);
	cr_assert_eq(ibv_query_device(A.ctx, &a), 0);
	cr_assert_eq(droce_engine_count(), 1);
	cr_assert_eq(a.max_qp, 262143, "max_qp %d", a.max_qp);
	cr_assert_eq((uint32_t)a.max_qp, droce_dp_max_qps());
	cr_assert_eq(a.max_res_rd_atom, a.max_qp * a.max_qp_rd_atom);
}

Test(verbs_rc, send_recv_woken_through_epoll)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct ibv_cq *got;
	void *cctx;
	struct ibv_wc wc;
	int ep = epoll_create1(0);

	setup_pair(16);
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, B.ch->fd, &ev), 0);
	cr_assert_eq(ibv_req_notify_cq(B.rcq, 0), 0);
	cr_assert_eq(post_recv(&B, 7, 0, 4096), 0);
	memcpy(A.buf + 100, "ping over droce", 16);
	cr_assert_eq(post_send(&A, 8, 100, 16, A.mr->lkey), 0);
	wc = tc_wait(A.scq, 5000, "A.scq");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 8);
	/* the engine's notify callback wrote to the channel */
	cr_assert_eq(epoll_wait(ep, &out, 1, 5000), 1);
	cr_assert_eq(ibv_get_cq_event(B.ch, &got, &cctx), 0);
	cr_assert_eq(got, B.rcq);
	cr_assert_eq(cctx, &B);
	ibv_ack_cq_events(got, 1);
	cr_assert_eq(ibv_poll_cq(B.rcq, 1, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, 16);
	cr_assert_eq(wc.wr_id, 7);
	cr_assert_eq(wc.qp_num, B.qp->qp_num);
	cr_assert_str_eq(B.buf, "ping over droce");
	close(ep);
}

Test(verbs_rc, bad_lkey_completes_with_loc_prot_err)
{
	struct ibv_wc wc;

	setup_pair(16);
	cr_assert_eq(post_recv(&B, 1, 0, 4096), 0);
	/* accepted at post time: keys are checked when the engine executes */
	cr_assert_eq(post_send(&A, 2, 0, 64, A.mr->lkey ^ 0x5a5a00), 0);
	wc = tc_wait(A.scq, 5000, "A.scq");
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR, "%s", ibv_wc_status_str(wc.status));

	/* the engine moved the QP to ERR; ibv_query_qp says so */
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	cr_assert_eq(ibv_query_qp(A.qp, &attr, IBV_QP_STATE, &init), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_ERR, "state %d", attr.qp_state);
	/* and a later modify (to RESET) is what the application sees again */
	attr.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(A.qp, &attr, IBV_QP_STATE), 0);
	cr_assert_eq(ibv_query_qp(A.qp, &attr, IBV_QP_STATE, &init), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_RESET);
}

Test(verbs_rc, sge_out_of_bounds_completes_with_loc_prot_err)
{
	struct ibv_wc wc;

	setup_pair(16);
	cr_assert_eq(post_recv(&B, 1, 0, 4096), 0);
	cr_assert_eq(post_send(&A, 3, BUF_SIZE - 8, 64, A.mr->lkey), 0);
	wc = tc_wait(A.scq, 5000, "A.scq");
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR, "%s", ibv_wc_status_str(wc.status));
}

Test(verbs_rc, short_receive_buffer_is_loc_len_err)
{
	struct ibv_wc wc;

	setup_pair(16);
	cr_assert_eq(post_recv(&B, 1, 0, 8), 0);
	cr_assert_eq(post_send(&A, 2, 0, 64, A.mr->lkey), 0);
	wc = tc_wait(B.rcq, 5000, "B.rcq");
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR, "%s", ibv_wc_status_str(wc.status));
}

Test(verbs_rc, post_errors_through_the_real_dataplane)
{
	struct ibv_sge sge;
	struct ibv_send_wr w[3], *bad = NULL;

	setup_pair(2);
	sge = (struct ibv_sge){ .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
	for (int i = 0; i < 3; i++)
		w[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1,
					     .opcode = IBV_WR_RDMA_WRITE,
					     .next = i < 2 ? &w[i + 1] : NULL };
	/* the middle WR is bad: the first one is queued, the list stops there */
	w[1].opcode = IBV_WR_BIND_MW;
	cr_assert_eq(ibv_post_send(A.qp, w, &bad), EINVAL);
	cr_assert_eq(bad, &w[1]);
	w[1].opcode = IBV_WR_RDMA_WRITE;
	w[1].wr.atomic.remote_addr = 0;
	w[1].num_sge = 3;
	cr_assert_eq(ibv_post_send(A.qp, &w[1], &bad), EINVAL);
	cr_assert_eq(bad, &w[1]);
}

/* Dedicated mode: the engine spins on worker lcore 1; this thread only posts
 * and polls (ibv_poll_cq drives nothing). */
Test(verbs_rc, dedicated_engine_on_a_worker_lcore)
{
	static const char ini[] =
		"[eal]\nargs = --no-huge --no-pci -l 0-1 -m 128 --log-level=lib.eal:warning\n"
		"[engines]\nmode = dedicated\nlcores = 1\n"
		"[mempool]\nmbufs = 4095\ncache = 128\ndata_room = 2176\n"
		"[port0]\nkind = ring\npeer = port1\nmac = 02:00:c6:12:00:01\nipv4 = 198.18.0.1\n"
		"[port1]\nkind = ring\npeer = port0\nmac = 02:00:c6:12:00:02\nipv4 = 198.18.0.2\n";
	char path[] = "/tmp/droce-dedicated-XXXXXX";
	int fd = mkstemp(path);
	struct ibv_sge sge;
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, ini, sizeof(ini) - 1), (ssize_t)sizeof(ini) - 1);
	close(fd);
	config_path = path;
	setup_pair(16);
	unlink(path);
	cr_assert_eq(droce_get_config()->engine_mode, DROCE_ENGINE_MODE_DEDICATED);

	/* SEND */
	strcpy(A.buf, "dedicated engine");
	cr_assert_eq(post_recv(&B, 1, 1024, 1024), 0);
	cr_assert_eq(post_send(&A, 2, 0, 17, A.mr->lkey), 0);
	wc = tc_wait(A.scq, 5000, "A.scq");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 2);
	wc = tc_wait(B.rcq, 5000, "B.rcq");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 17);
	cr_assert_str_eq(B.buf + 1024, "dedicated engine");

	/* RDMA WRITE of 40000 bytes, then READ them back into another place */
	for (int i = 0; i < 40000; i++)
		A.buf[4096 + i] = (char)(i * 13 + 1);
	sge = (struct ibv_sge){ .addr = (uintptr_t)A.buf + 4096, .length = 40000, .lkey = A.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)B.buf + 8192, .rkey = B.mr->rkey } };
	cr_assert_eq(ibv_post_send(A.qp, &w, &bad), 0);
	wc = tc_wait(A.scq, 5000, "A.scq");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	cr_assert_arr_eq(B.buf + 8192, A.buf + 4096, 40000);
	sge.addr = (uintptr_t)A.buf + 20000;
	w.wr_id = 4;
	w.opcode = IBV_WR_RDMA_READ;
	cr_assert_eq(ibv_post_send(A.qp, &w, &bad), 0);
	wc = tc_wait(A.scq, 5000, "A.scq");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_READ);
	cr_assert_arr_eq(A.buf + 20000, B.buf + 8192, 40000);
}

/* A peer that is not a port of this process is found by ARP sent by an engine. */
Test(verbs_rc, arp_resolution_through_the_engine)
{
	const uint8_t peer_ip[4] = { 198, 18, 0, 2 }, nobody_ip[4] = { 198, 18, 0, 99 };
	const struct rte_ether_addr want = { { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x02 } };
	struct rte_ether_addr mac;
	rte_be32_t ip;

	setup_pair(16);
	memcpy(&ip, peer_ip, 4);
	cr_assert_neq(droce_port_arp_lookup(droce_port_get(0), ip, &mac), 0,
		      "port0 has not learnt 198.18.0.2 yet");
	cr_assert_eq(droce_dp_arp_resolve(0, ip, &mac, 2000), 0);
	cr_assert(rte_is_same_ether_addr(&mac, &want), "resolved to port1's MAC");
	cr_assert_eq(droce_port_arp_lookup(droce_port_get(0), ip, &mac), 0, "and learnt it");
	memcpy(&ip, nobody_ip, 4);
	cr_assert_eq(droce_dp_arp_resolve(0, ip, &mac, 300), ETIMEDOUT);
}

/* ---- counters: include/droce/stats.h and DPDK telemetry ---- */

static uint64_t
stat_of(int (*get)(unsigned int, struct droce_stat *, unsigned int), unsigned int id,
	const char *name)
{
	struct droce_stat s[128];
	int n = get(id, s, 128);

	cr_assert_gt(n, 0, "no counters for %u: %s", id, strerror(errno));
	cr_assert_leq(n, 128);
	return droce_stat_find(s, (unsigned int)n, name);
}

static uint64_t
qp_stat(struct ibv_qp *qp, const char *name)
{
	struct droce_stat s[64];
	int n = droce_stats_qp(qp, s, 64);

	cr_assert_gt(n, 0);
	return droce_stat_find(s, (unsigned int)n, name);
}

Test(verbs_rc, stats_api_counts_frames_per_port_engine_and_qp)
{
	struct droce_stat one[1];
	uint64_t p0_tx, p1_rx, e_rx, p0_txb, p1_rxb, bursts;
	int n;

	setup_pair(16);
	p0_tx = stat_of(droce_stats_port, 0, "tx_frames");
	p1_rx = stat_of(droce_stats_port, 1, "rx_frames");
	p0_txb = stat_of(droce_stats_port, 0, "tx_bursts");
	p1_rxb = stat_of(droce_stats_port, 1, "rx_bursts");
	e_rx = stat_of(droce_stats_engine, 0, "rx_frames");
	/* three 3000-byte SENDs at path MTU 1024: three frames each */
	for (uint32_t i = 0; i < 3; i++) {
		struct ibv_wc wc;

		cr_assert_eq(post_recv(&B, i, i * 4096, 4096), 0);
		cr_assert_eq(post_send(&A, i, i * 4096, 3000, A.mr->lkey), 0);
		wc = tc_wait(A.scq, 5000, "A.scq");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		wc = tc_wait(B.rcq, 5000, "B.rcq");
		cr_assert_eq(wc.byte_len, 3000);
	}
	cr_assert_eq(qp_stat(A.qp, "tx_frames"), 9);
	cr_assert_eq(qp_stat(B.qp, "rx_frames"), 9);
	cr_assert_eq(qp_stat(A.qp, "retransmits"), 0);
	cr_assert_eq(qp_stat(A.qp, "qpn"), A.qp->qp_num);
	cr_assert_geq(qp_stat(B.qp, "tx_frames"), 1, "B acknowledged");
	cr_assert_geq(stat_of(droce_stats_port, 0, "tx_frames") - p0_tx, 9);
	cr_assert_geq(stat_of(droce_stats_port, 1, "rx_frames") - p1_rx, 9);
	cr_assert_geq(stat_of(droce_stats_engine, 0, "rx_frames") - e_rx, 10, "9 requests, >= 1 ACK");
	/* each SEND waited for its completion: three bursts at least, never more than frames */
	bursts = stat_of(droce_stats_port, 0, "tx_bursts") - p0_txb;
	cr_assert(bursts >= 3 && bursts <= stat_of(droce_stats_port, 0, "tx_frames") - p0_tx,
		  "tx_bursts %" PRIu64, bursts);
	bursts = stat_of(droce_stats_port, 1, "rx_bursts") - p1_rxb;
	cr_assert(bursts >= 3 && bursts <= stat_of(droce_stats_port, 1, "rx_frames") - p1_rx,
		  "rx_bursts %" PRIu64, bursts);
	cr_assert_eq(stat_of(droce_stats_engine, 0, "drop_icrc"), 0);
	cr_assert_neq(stat_of(droce_stats_engine, 0, "drop_pkey"), UINT64_MAX, "every reason is listed");
	cr_assert_eq(stat_of(droce_stats_engine, 0, "no_such_counter"), UINT64_MAX);
	/* sizing call, and what does not exist */
	n = droce_stats_port(0, one, 0);
	cr_assert_gt(n, 10);
	cr_assert_eq(droce_stats_port(0, one, 1), n, "count, not what fits");
	cr_assert_str_eq(one[0].name, "rx_frames");
	errno = 0;
	cr_assert_eq(droce_stats_port(99, one, 1), -1);
	cr_assert_eq(errno, ENODEV);
	errno = 0;
	cr_assert_eq(droce_stats_engine(99, one, 1), -1);
	cr_assert_eq(errno, ENODEV);
	cr_assert_gt(droce_stats_cm(one, 0), 10);
}

/* One request over DPDK's telemetry socket; the reply's JSON in @out. */
static void
tel_query(int fd, const char *cmd, char *out, size_t cap)
{
	ssize_t n;

	cr_assert_eq(write(fd, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	n = read(fd, out, cap - 1);
	cr_assert_gt(n, 0, "%s: %s", cmd, strerror(errno));
	out[n] = '\0';
}

Test(verbs_rc, telemetry_serves_droce_counters)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[16384], want[64];
	int fd;

	setup_pair(16);
	cr_assert_eq(post_recv(&B, 1, 0, 4096), 0);
	cr_assert_eq(post_send(&A, 1, 0, 100, A.mr->lkey), 0);
	cr_assert_eq(tc_wait(A.scq, 5000, "A.scq").status, IBV_WC_SUCCESS);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dpdk_telemetry.v2", rte_eal_get_runtime_dir());
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s: %s", sa.sun_path,
		     strerror(errno));
	cr_assert_gt(read(fd, buf, sizeof(buf)), 0); /* the server's greeting */

	tel_query(fd, "/droce/ports", buf, sizeof(buf));
	cr_assert_str_eq(buf, "{\"/droce/ports\":[0,1]}");
	tel_query(fd, "/droce/port,0", buf, sizeof(buf));
	cr_assert(strstr(buf, "\"tx_frames\":") != NULL && strstr(buf, "\"pmd_opackets\":") != NULL, "%s", buf);
	tel_query(fd, "/droce/engines", buf, sizeof(buf));
	cr_assert_str_eq(buf, "{\"/droce/engines\":[0]}");
	tel_query(fd, "/droce/engine,0", buf, sizeof(buf));
	cr_assert(strstr(buf, "\"loops\":") != NULL && strstr(buf, "\"drop_icrc\":0") != NULL, "%s", buf);
	tel_query(fd, "/droce/qps", buf, sizeof(buf));
	snprintf(want, sizeof(want), "%u", A.qp->qp_num);
	cr_assert(strstr(buf, want) != NULL, "%s lacks %s", buf, want);
	snprintf(want, sizeof(want), "/droce/qp,%u", A.qp->qp_num);
	tel_query(fd, want, buf, sizeof(buf));
	cr_assert(strstr(buf, "\"tx_frames\":1,") != NULL, "%s", buf);
	tel_query(fd, "/droce/qp,16777215", buf, sizeof(buf));
	cr_assert_str_eq(buf, "{\"/droce/qp\":null}", "no such QP");
	tel_query(fd, "/droce/port,x", buf, sizeof(buf));
	cr_assert_str_eq(buf, "{\"/droce/port\":null}", "bad parameter");
	tel_query(fd, "/droce/cm", buf, sizeof(buf));
	cr_assert(strstr(buf, "\"mads_tx\":") != NULL, "%s", buf);
	close(fd);
}

/* A send queue of 3 (slots cut to 2 SGEs / 64 inline bytes, a power of two
 * of them inside): a list of 4 queues 3 and stops at the 4th with ENOMEM,
 * round after round as the indices wrap the slots; SGE lists and inline
 * bytes (sharing a slot's room) land byte for byte. */
Test(verbs_rc, small_send_queue_wraps_its_slots)
{
	setup_pair(3);
	for (uint32_t round = 0; round < 7; round++) {
		struct ibv_sge sg[3][2];
		struct ibv_send_wr w[4], *bad = NULL;
		uint8_t want[3][96];

		for (int i = 0; i < 3; i++) {
			uint32_t src = 4096 + (uint32_t)i * 256, dst = 8192 + (uint32_t)i * 256;

			for (int k = 0; k < 96; k++)
				A.buf[src + k] = (char)(round * 31 + (uint32_t)i * 7 + (uint32_t)k);
			/* WR 1 is inline: 64 bytes; the others two SGEs of 40 + 56 */
			sg[i][0] = (struct ibv_sge){ .addr = (uintptr_t)A.buf + src, .length = i == 1 ? 64 : 40,
						     .lkey = A.mr->lkey };
			sg[i][1] = (struct ibv_sge){ .addr = (uintptr_t)A.buf + src + 40, .length = 56,
						     .lkey = A.mr->lkey };
			w[i] = (struct ibv_send_wr){ .wr_id = round * 4 + (uint32_t)i, .sg_list = sg[i],
						     .num_sge = i == 1 ? 1 : 2, .opcode = IBV_WR_RDMA_WRITE,
						     .send_flags = IBV_SEND_SIGNALED |
								   (i == 1 ? IBV_SEND_INLINE : 0),
						     .next = &w[i + 1] };
			w[i].wr.rdma.remote_addr = (uintptr_t)B.buf + dst;
			w[i].wr.rdma.rkey = B.mr->rkey;
			memcpy(want[i], A.buf + src, 96);
		}
		w[3] = w[0];
		w[3].wr_id = 99;
		w[3].next = NULL;
		cr_assert_eq(ibv_post_send(A.qp, w, &bad), ENOMEM, "round %u", round);
		cr_assert_eq(bad, &w[3]);
		/* the inline WR's bytes were copied at post time */
		memset(A.buf + 4096 + 256, 0xee, 64);
		for (int i = 0; i < 3; i++) {
			struct ibv_wc wc = tc_wait(A.scq, 5000, "A.scq");

			cr_assert_eq(wc.status, IBV_WC_SUCCESS);
			cr_assert_eq(wc.wr_id, round * 4 + (uint32_t)i, "in order");
		}
		for (int i = 0; i < 3; i++)
			cr_assert_eq(memcmp(B.buf + 8192 + i * 256, want[i], i == 1 ? 64 : 96), 0,
				     "round %u WR %d", round, i);
	}
}

/* A receive queue of 3 with one SGE a slot (a power of two of 64-byte slots
 * inside): a 2-SGE receive is refused (EINVAL, bad_wr on it, nothing queued);
 * a list of 4 queues 3 and stops at the 4th with ENOMEM, round after round as
 * the indices wrap the slots; every message lands byte for byte in the
 * receive its slot held. */
Test(verbs_rc, small_receive_queue_wraps_its_slots)
{
	recv_wr = 3;
	recv_sge = 1;
	setup_pair(16);
	for (uint32_t round = 0; round < 7; round++) {
		struct ibv_sge rs[4], two[2], ss[3];
		struct ibv_recv_wr r[4], r2, *rbad = NULL;
		struct ibv_send_wr w[3], *bad = NULL;

		two[0] = (struct ibv_sge){ .addr = (uintptr_t)B.buf, .length = 8, .lkey = B.mr->lkey };
		two[1] = (struct ibv_sge){ .addr = (uintptr_t)B.buf + 8, .length = 8, .lkey = B.mr->lkey };
		r2 = (struct ibv_recv_wr){ .wr_id = 77, .sg_list = two, .num_sge = 2 };
		cr_assert_eq(ibv_post_recv(B.qp, &r2, &rbad), EINVAL, "round %u", round);
		cr_assert_eq(rbad, &r2);
		for (int i = 0; i < 4; i++) {
			rs[i] = (struct ibv_sge){ .addr = (uintptr_t)B.buf + 8192 + (uint32_t)i * 256,
						  .length = 200, .lkey = B.mr->lkey };
			r[i] = (struct ibv_recv_wr){ .wr_id = round * 4 + (uint32_t)i, .sg_list = &rs[i],
						     .num_sge = 1, .next = i < 3 ? &r[i + 1] : NULL };
		}
		memset(B.buf + 8192, 0, 4 * 256);
		cr_assert_eq(ibv_post_recv(B.qp, r, &rbad), ENOMEM, "round %u", round);
		cr_assert_eq(rbad, &r[3]);
		for (int i = 0; i < 3; i++) {
			uint32_t src = 4096 + (uint32_t)i * 256, len = 100 + (uint32_t)i * 40;

			for (uint32_t k = 0; k < len; k++)
				A.buf[src + k] = (char)(round * 29 + (uint32_t)i * 11 + k);
			ss[i] = (struct ibv_sge){ .addr = (uintptr_t)A.buf + src, .length = len,
						  .lkey = A.mr->lkey };
			w[i] = (struct ibv_send_wr){ .wr_id = round * 4 + (uint32_t)i, .sg_list = &ss[i],
						     .num_sge = 1, .opcode = IBV_WR_SEND,
						     .send_flags = IBV_SEND_SIGNALED,
						     .next = i < 2 ? &w[i + 1] : NULL };
		}
		cr_assert_eq(ibv_post_send(A.qp, w, &bad), 0);
		for (int i = 0; i < 3; i++) {
			struct ibv_wc wc = tc_wait(B.rcq, 5000, "B.rcq");
			uint32_t len = 100 + (uint32_t)i * 40;

			cr_assert_eq(wc.status, IBV_WC_SUCCESS, "round %u: %s", round,
				     ibv_wc_status_str(wc.status));
			cr_assert_eq(wc.wr_id, round * 4 + (uint32_t)i, "in order");
			cr_assert_eq(wc.byte_len, len);
			cr_assert_eq(memcmp(B.buf + 8192 + i * 256, A.buf + 4096 + i * 256, len), 0,
				     "round %u receive %d", round, i);
			cr_assert_eq(B.buf[8192 + i * 256 + len], 0, "nothing past the message");
			wc = tc_wait(A.scq, 5000, "A.scq");
			cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		}
	}
}

/*
 * RESET and back to RTS, then traffic at once, 20 times: the receive posted
 * in INIT and the SEND posted right after RTS are the QPs' new work, not
 * dropped by a RESET the engine applied late (ibv_modify_qp to RESET returns
 * once the engine has applied it).  Each round's first SEND completes and
 * its bytes land.
 */
Test(verbs_rc, work_posted_right_after_reset_and_rts_is_kept)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };

	setup_pair(16);
	for (uint32_t round = 0; round < 20; round++) {
		struct ibv_wc wc;

		cr_assert_eq(ibv_modify_qp(A.qp, &attr, IBV_QP_STATE), 0);
		cr_assert_eq(ibv_modify_qp(B.qp, &attr, IBV_QP_STATE), 0);
		connect_end(&B, &A);
		cr_assert_eq(post_recv(&B, 100 + round, 0, 256), 0);
		connect_end(&A, &B);
		for (uint32_t k = 0; k < 64; k++)
			A.buf[4096 + k] = (char)(round * 7 + k);
		cr_assert_eq(post_send(&A, 200 + round, 4096, 64, A.mr->lkey), 0);
		wc = tc_wait(A.scq, 5000, "the SEND after RESET -> RTS");
		cr_assert_eq(wc.wr_id, 200 + round);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "round %u: %s", round,
			     ibv_wc_status_str(wc.status));
		wc = tc_wait(B.rcq, 5000, "the receive posted in INIT");
		cr_assert_eq(wc.wr_id, 100 + round);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(memcmp(B.buf, A.buf + 4096, 64), 0, "round %u", round);
	}
}

/* Engine counter @name summed over the engines. */
static uint64_t
engines_stat(const char *name)
{
	struct droce_stat st[96];
	uint64_t sum = 0;
	int n;

	for (unsigned int e = 0; (n = droce_stats_engine(e, st, RTE_DIM(st))) >= 0; e++) {
		uint64_t v = droce_stat_find(st, (unsigned int)RTE_MIN(n, (int)RTE_DIM(st)), name);

		cr_assert_neq(v, UINT64_MAX, "engine %u has no %s", e, name);
		sum += v;
	}
	return sum;
}

/*
 * A QP moved to RESET takes its unpolled completions out of its CQs, as
 * rdma-core's providers do (mlx5_cq_clean): after an error and RESET the
 * program does not poll the old connection's flushes.  Another QP's
 * completions in the same CQ stay, in order, around the cleaned ones.  The
 * engines count them (cqe_cleaned).
 */
Test(verbs_rc, reset_removes_the_qps_completions_from_its_cqs)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR }, rst = { .qp_state = IBV_QPS_RESET };
	struct tc_conn c = { .psn = 0x300 };
	struct ibv_sge sge;
	struct ibv_recv_wr r = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc[8];
	struct ibv_qp *b2;
	uint64_t cleaned;
	int n;

	setup_pair(16);
	ia.send_cq = B.scq;
	ia.recv_cq = B.rcq;
	b2 = ibv_create_qp(B.pd, &ia);
	cr_assert_not_null(b2);
	c.dgid = A.gid;
	c.dest_qpn = A.qp->qp_num;
	tc_qp_up(b2, &c);
	cleaned = engines_stat("cqe_cleaned");
	/* B.rcq gets b2's flush (901), B's receive (1), B's two flushes (2, 3),
	 * b2's flush (902); B's three are there before the engine applies B's
	 * RESET (the responder completes a receive before it acknowledges it,
	 * and the ERR before it is applied first) */
	sge = (struct ibv_sge){ .addr = (uintptr_t)B.buf + 30000, .length = 64, .lkey = B.mr->lkey };
	r.wr_id = 901;
	cr_assert_eq(ibv_post_recv(b2, &r, &bad), 0);
	cr_assert_eq(ibv_modify_qp(b2, &err, IBV_QP_STATE), 0);
	for (uint32_t i = 1; i <= 3; i++)
		cr_assert_eq(post_recv(&B, i, (i - 1) * 256, 256), 0);
	cr_assert_eq(post_send(&A, 10, 4096, 64, A.mr->lkey), 0);
	cr_assert_eq(tc_wait(A.scq, 5000, "A's SEND").status, IBV_WC_SUCCESS);
	cr_assert_eq(ibv_modify_qp(B.qp, &err, IBV_QP_STATE), 0);
	r.wr_id = 902;
	cr_assert_eq(ibv_post_recv(b2, &r, &bad), 0); /* in ERR: flushed */
	cr_assert_eq(ibv_modify_qp(B.qp, &rst, IBV_QP_STATE), 0);
	n = tc_poll(B.rcq, wc, 8, 1000);
	cr_assert_eq(n, 2, "b2's two flushes stay, B's three completions left with its RESET");
	cr_assert_eq(wc[0].wr_id, 901);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc[1].wr_id, 902);
	cr_assert_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(engines_stat("cqe_cleaned") - cleaned, 3);
	cr_assert_eq(ibv_destroy_qp(b2), 0);
}
