/* SPDX-License-Identifier: BSD-3-Clause
 * droce-soak: long life (issue 28 §4).  For a bounded time, on the in-memory
 * port pair with loss on the link, while an RC stream runs: creates and
 * destroys CQs, MRs, SRQs, RC QP pairs (through an SRQ) and rdma_cm
 * connections; every interval prints RSS, open fds, mbufs in use, memzones
 * and every droce counter (ports, engines, CM) as one JSON line; at the end
 * says whether a resource grew after the warm-up (exit 1 if one did).
 * See man/droce-soak.1.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rte_mempool.h>
#include <rte_memzone.h>

#include <droce/droce.h>
#include <droce/stats.h>

#define MSG 4096
#define STREAM_WIN 16
#define CHURN_MSGS 8
#define CM_PORT "7491"
#define MAX_SAMPLES 100000

static struct {
	double seconds, interval, loss;
	long rss_slack_kb;
	const char *config;
	bool quiet;
} opt = { .seconds = 10, .interval = 1, .loss = 0.005, .rss_slack_kb = 4096 };

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void __attribute__((noreturn))
die(const char *what)
{
	fprintf(stderr, "droce-soak: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* ---- one device side ---- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
};

static struct dev dev[2];

/* An RC QP pair, a on dev 0, b on dev 1, connected by hand. */
struct pair {
	struct ibv_cq *cq[2];
	struct ibv_srq *srq;  /* b's receives, or NULL */
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	uint8_t *buf[2];
	size_t len;
	unsigned int out;     /* a's sends outstanding */
	uint64_t done;        /* a's sends completed */
};

static void
qp_connect(struct ibv_qp *qp, const struct ibv_qp *peer, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 12;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

static void
pair_recv(struct pair *p, uint64_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(p->buf[1] + slot * MSG), .length = MSG,
			       .lkey = p->mr[1]->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if ((p->srq ? ibv_post_srq_recv(p->srq, &wr, &bad) : ibv_post_recv(p->qp[1], &wr, &bad)) != 0)
		die("post recv");
}

static void
pair_create(struct pair *p, unsigned int slots, bool srq)
{
	struct ibv_qp_init_attr ia;

	memset(p, 0, sizeof(*p));
	p->len = (size_t)slots * MSG;
	for (int s = 0; s < 2; s++) {
		p->cq[s] = ibv_create_cq(dev[s].ctx, 2 * (int)slots + 8, NULL, NULL, 0);
		p->buf[s] = aligned_alloc(64, p->len);
		if (p->cq[s] == NULL || p->buf[s] == NULL)
			die("cq");
		p->mr[s] = ibv_reg_mr(dev[s].pd, p->buf[s], p->len,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (p->mr[s] == NULL)
			die("ibv_reg_mr");
	}
	if (srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = slots, .max_sge = 1 } };

		p->srq = ibv_create_srq(dev[1].pd, &sa);
		if (p->srq == NULL)
			die("ibv_create_srq");
	}
	for (int s = 0; s < 2; s++) {
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = p->cq[s];
		ia.recv_cq = p->cq[s];
		ia.srq = s == 1 ? p->srq : NULL;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = slots;
		ia.cap.max_recv_wr = slots;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		p->qp[s] = ibv_create_qp(dev[s].pd, &ia);
		if (p->qp[s] == NULL)
			die("ibv_create_qp");
	}
	qp_connect(p->qp[0], p->qp[1], &dev[1].gid);
	qp_connect(p->qp[1], p->qp[0], &dev[0].gid);
	for (unsigned int i = 0; i < slots; i++)
		pair_recv(p, i);
}

static void
pair_destroy(struct pair *p)
{
	for (int s = 0; s < 2; s++)
		if (p->qp[s] && ibv_destroy_qp(p->qp[s]))
			die("ibv_destroy_qp");
	if (p->srq && ibv_destroy_srq(p->srq))
		die("ibv_destroy_srq");
	for (int s = 0; s < 2; s++) {
		if (ibv_dereg_mr(p->mr[s]) || ibv_destroy_cq(p->cq[s]))
			die("dereg / destroy cq");
		free(p->buf[s]);
	}
}

/* a sends one message (a SEND, every fourth a WRITE). */
static bool
pair_send(struct pair *p, uint64_t n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf[0], .length = MSG, .lkey = p->mr[0]->lkey };
	struct ibv_send_wr wr = {
		.wr_id = n, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
		.opcode = n % 4 == 3 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
	}, *bad;

	if (wr.opcode == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = (uintptr_t)p->buf[1];
		wr.wr.rdma.rkey = p->mr[1]->rkey;
	}
	if (ibv_post_send(p->qp[0], &wr, &bad) != 0)
		return false;
	p->out++;
	return true;
}

/* Polls both sides; reposts b's receives.  Exits on a failed completion. */
static void
pair_poll(struct pair *p)
{
	struct ibv_wc wc[32];
	int n, i;

	n = ibv_poll_cq(p->cq[0], 32, wc);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "droce-soak: send completion %s\n", ibv_wc_status_str(wc[i].status));
			exit(2);
		}
		p->out--;
		p->done++;
	}
	n = ibv_poll_cq(p->cq[1], 32, wc);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "droce-soak: receive completion %s\n", ibv_wc_status_str(wc[i].status));
			exit(2);
		}
		pair_recv(p, wc[i].wr_id);
	}
}

/* ---- rdma_cm: a listener on droce0, connections from droce1 ---- */

static struct rdma_event_channel *ch;
static struct rdma_cm_id *listener;

static struct rdma_cm_event *
cm_wait(enum rdma_cm_event_type want, struct rdma_cm_id **id)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	uint64_t end = now_ms() + 10000;

	while (now_ms() < end) {
		droce_progress();
		if (poll(&pfd, 1, 1) <= 0)
			continue;
		if (rdma_get_cm_event(ch, &ev) != 0)
			die("rdma_get_cm_event");
		if (ev->event == want) {
			if (id != NULL)
				*id = ev->id;
			return ev;
		}
		if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			rdma_ack_cm_event(ev); /* an earlier connection's, late */
			continue;
		}
		fprintf(stderr, "droce-soak: %s while waiting for %s\n", rdma_event_str(ev->event),
			rdma_event_str(want));
		exit(2);
	}
	fprintf(stderr, "droce-soak: no %s in 10 s\n", rdma_event_str(want));
	exit(2);
}

static void
cm_listen(void)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res;

	ch = rdma_create_event_channel();
	if (ch == NULL || rdma_getaddrinfo("198.18.0.1", CM_PORT, &hints, &res) ||
	    rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listener, res->ai_src_addr) || rdma_listen(listener, 8))
		die("rdma_cm listen");
	rdma_freeaddrinfo(res);
}

/* One connection: connect, accept, a SEND each way, disconnect, destroy. */
static void
cm_cycle(void)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.sq_sig_all = 1,
	};
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *cli, *srv = NULL;
	struct rdma_cm_event *ev;
	struct ibv_mr *mr[2];
	struct ibv_wc wc;
	static char rbuf[2][64];
	char msg[16] = "soak";

	if (rdma_getaddrinfo("198.18.0.1", CM_PORT, &hints, &res) ||
	    rdma_create_id(ch, &cli, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cli, NULL, res->ai_dst_addr, 2000))
		die("rdma_resolve_addr");
	rdma_freeaddrinfo(res);
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ADDR_RESOLVED, NULL));
	if (rdma_resolve_route(cli, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ROUTE_RESOLVED, NULL));
	struct ibv_qp_init_attr ia2 = ia; /* rdma_create_qp writes the CQs it made into its attr */

	if (rdma_create_qp(cli, NULL, &ia))
		die("rdma_create_qp (client)");
	mr[1] = rdma_reg_msgs(cli, rbuf[1], sizeof(rbuf[1]));
	if (mr[1] == NULL || rdma_post_recv(cli, NULL, rbuf[1], sizeof(rbuf[1]), mr[1]))
		die("client recv");
	if (rdma_connect(cli, &cp))
		die("rdma_connect");
	ev = cm_wait(RDMA_CM_EVENT_CONNECT_REQUEST, &srv);
	rdma_ack_cm_event(ev);
	if (rdma_create_qp(srv, NULL, &ia2))
		die("rdma_create_qp (server)");
	mr[0] = rdma_reg_msgs(srv, rbuf[0], sizeof(rbuf[0]));
	if (mr[0] == NULL || rdma_post_recv(srv, NULL, rbuf[0], sizeof(rbuf[0]), mr[0]))
		die("server recv");
	if (rdma_accept(srv, &cp))
		die("rdma_accept");
	/* Both sides' ESTABLISHED, in either order. */
	for (int k = 0; k < 2; k++)
		rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ESTABLISHED, NULL));
	if (rdma_post_send(cli, NULL, msg, sizeof(msg), NULL, IBV_SEND_INLINE) ||
	    rdma_post_send(srv, NULL, msg, sizeof(msg), NULL, IBV_SEND_INLINE))
		die("rdma_post_send");
	for (int k = 0; k < 2; k++) {
		struct rdma_cm_id *id = k ? srv : cli;
		uint64_t end = now_ms() + 10000;

		while (rdma_get_send_comp(id, &wc) == 0 && now_ms() < end)
			;
		while (rdma_get_recv_comp(id, &wc) == 0 && now_ms() < end)
			;
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "droce-soak: cm exchange: %s\n", ibv_wc_status_str(wc.status));
			exit(2);
		}
	}
	if (rdma_disconnect(cli))
		die("rdma_disconnect");
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_DISCONNECTED, NULL));
	rdma_disconnect(srv);
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_DISCONNECTED, NULL));
	rdma_dereg_mr(mr[0]);
	rdma_dereg_mr(mr[1]);
	rdma_destroy_qp(cli);
	rdma_destroy_qp(srv);
	rdma_destroy_id(cli);
	rdma_destroy_id(srv);
}

/* ---- samples ---- */

struct sample {
	double t;
	long rss_kb, fds;
	unsigned int mbufs, memzones;
};

static long
rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f != NULL) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static long
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	long n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

static void
count_mz(const struct rte_memzone *mz, void *arg)
{
	(void)mz;
	(*(unsigned int *)arg)++;
}

static void
print_counters(const char *kind, int (*get)(unsigned int, struct droce_stat *, unsigned int),
	       unsigned int max)
{
	struct droce_stat st[256];
	bool first = true;

	printf(", \"%s\": [", kind);
	for (unsigned int i = 0; i < max; i++) {
		int n = get(i, st, 256);

		if (n < 0)
			break;
		printf("%s{", first ? "" : ", ");
		for (int k = 0; k < n && k < 256; k++)
			printf("%s\"%s\": %" PRIu64, k ? ", " : "", st[k].name, st[k].value);
		printf("}");
		first = false;
	}
	printf("]");
}

static int
cm_stats(unsigned int i, struct droce_stat *out, unsigned int n)
{
	return i == 0 ? droce_stats_cm(out, n) : -1;
}

static void
take(struct sample *s, double t, uint64_t cycles, uint64_t conns, uint64_t stream)
{
	s->t = t;
	s->rss_kb = rss_kb();
	s->fds = open_fds();
	s->mbufs = rte_mempool_in_use_count(droce_pktmbuf_pool());
	s->memzones = 0;
	rte_memzone_walk(count_mz, &s->memzones);
	if (opt.quiet)
		return;
	printf("{\"t\": %.1f, \"rss_kb\": %ld, \"fds\": %ld, \"mbufs_in_use\": %u, \"memzones\": %u, "
	       "\"churn_cycles\": %" PRIu64 ", \"cm_connections\": %" PRIu64 ", \"stream_msgs\": %" PRIu64,
	       t, s->rss_kb, s->fds, s->mbufs, s->memzones, cycles, conns, stream);
	print_counters("ports", droce_stats_port, 8);
	print_counters("engines", droce_stats_engine, 64);
	print_counters("cm", cm_stats, 1);
	printf("}\n");
	fflush(stdout);
}

/*
 * After the warm-up (the first quarter of the samples, at least two), no
 * resource may end above its value at the end of the warm-up by more than
 * noise: RSS -r KiB (4 MiB: malloc arenas settle), mbufs 256 (frames in flight
 * on a lossy link at the sample's moment), fds and memzones nothing.
 */
static int
verdict(const struct sample *s, unsigned int n)
{
	unsigned int w = n / 4 > 2 ? n / 4 : 2, i;
	const struct sample *b;
	struct sample top;
	int grows = 0;

	if (n < w + 2) {
		printf("droce-soak: %u samples: too few to judge (run longer or sample more often)\n", n);
		return 0;
	}
	b = &s[w - 1];
	top = *b;
	for (i = w; i < n; i++) {
		top.rss_kb = s[i].rss_kb > top.rss_kb ? s[i].rss_kb : top.rss_kb;
		top.fds = s[i].fds > top.fds ? s[i].fds : top.fds;
		top.mbufs = s[i].mbufs > top.mbufs ? s[i].mbufs : top.mbufs;
		top.memzones = s[i].memzones > top.memzones ? s[i].memzones : top.memzones;
	}
	printf("droce-soak: after warm-up (t=%.1f s): rss %ld -> max %ld KiB, fds %ld -> %ld, mbufs in use %u -> %u, memzones %u -> %u; at the end rss %ld KiB, fds %ld, mbufs %u, memzones %u\n",
	       b->t, b->rss_kb, top.rss_kb, b->fds, top.fds, b->mbufs, top.mbufs, b->memzones,
	       top.memzones, s[n - 1].rss_kb, s[n - 1].fds, s[n - 1].mbufs, s[n - 1].memzones);
	if (top.rss_kb > b->rss_kb + opt.rss_slack_kb)
		grows |= printf("droce-soak: GROWS: rss\n") > 0;
	if (top.fds > b->fds)
		grows |= printf("droce-soak: GROWS: open fds\n") > 0;
	if (top.mbufs > b->mbufs + 256)
		grows |= printf("droce-soak: GROWS: mbufs in use\n") > 0;
	if (top.memzones > b->memzones)
		grows |= printf("droce-soak: GROWS: memzones\n") > 0;
	if (!grows)
		printf("droce-soak: flat\n");
	return grows;
}

static const char *
write_config(void)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/droce-soak-%ld.ini", (long)getpid());
	f = fopen(path, "w");
	if (f == NULL)
		die(path);
	fprintf(f,
		"[eal]\nargs = --no-huge --no-pci -m 256 --log-level=lib.eal:warning\n"
		"[engines]\nmode = colocated\ncount = 1\n"
		"[mempool]\nmbufs = 8191\ncache = 128\ndata_room = 2176\n"
		"[port0]\nkind = ring\npeer = port1\nmac = 02:00:c6:12:00:01\nipv4 = 198.18.0.1\nmtu = 1500\n"
		"impair_drop = %g\nimpair_seed = 28\n"
		"[port1]\nkind = ring\npeer = port0\nmac = 02:00:c6:12:00:02\nipv4 = 198.18.0.2\nmtu = 1500\n"
		"impair_drop = %g\nimpair_seed = 29\n",
		opt.loss, opt.loss);
	if (fclose(f) != 0)
		die(path);
	return path;
}

static void
usage(FILE *f, int status)
{
	fprintf(f,
		"usage: droce-soak [-t SECONDS] [-i INTERVAL] [-l LOSS] [-c CONFIG] [-r RSS_SLACK_KB] [-q]\n"
		"  -t SECONDS        how long to run (default 10; at most a week)\n"
		"  -i INTERVAL       seconds between samples (default 1)\n"
		"  -l LOSS           each port's frame drop probability, 0..0.2 (default 0.005)\n"
		"  -c CONFIG         run on this configuration instead\n"
		"  -r RSS_SLACK_KB   RSS growth allowed after the warm-up, KiB (default 4096)\n"
		"  -q                print no samples, only the summary and the verdict\n"
		"  -h, --help        this text\n");
	exit(status);
}

int
main(int argc, char **argv)
{
	static struct sample samples[MAX_SAMPLES];
	uint64_t t0, next, end, cycles = 0, conns = 0, n = 0;
	unsigned int ns = 0;
	struct ibv_device **list;
	struct pair stream, churn;
	const char *cfg;
	int c;

	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	while ((c = getopt_long(argc, argv, "t:i:l:c:r:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 't': opt.seconds = atof(optarg); break;
		case 'i': opt.interval = atof(optarg); break;
		case 'l': opt.loss = atof(optarg); break;
		case 'c': opt.config = optarg; break;
		case 'r': opt.rss_slack_kb = atol(optarg); break;
		case 'q': opt.quiet = true; break;
		case 'h': usage(stdout, 0); break;
		default: usage(stderr, 2);
		}
	}
	if (opt.seconds <= 0 || opt.seconds > 7 * 86400 || opt.interval <= 0 || opt.loss < 0 ||
	    opt.loss > 0.2)
		usage(stderr, 2);
	cfg = opt.config ? opt.config : write_config();
	if (droce_start(cfg) != 0) {
		fprintf(stderr, "droce-soak: %s\n", droce_last_error());
		return 2;
	}
	if (opt.config == NULL)
		unlink(cfg);
	list = ibv_get_device_list(NULL);
	if (list == NULL || list[0] == NULL || list[1] == NULL)
		die("two devices (droce0, droce1)");
	for (int s = 0; s < 2; s++) {
		dev[s].ctx = ibv_open_device(list[s]);
		if (dev[s].ctx == NULL || (dev[s].pd = ibv_alloc_pd(dev[s].ctx)) == NULL ||
		    ibv_query_gid(dev[s].ctx, 1, 0, &dev[s].gid))
			die("device");
	}
	ibv_free_device_list(list);
	cm_listen();
	pair_create(&stream, STREAM_WIN * 2, false);
	t0 = now_ms();
	end = t0 + (uint64_t)(opt.seconds * 1000);
	next = t0 + (uint64_t)(opt.interval * 1000);
	while (now_ms() < end) {
		/* the stream: keep it full */
		while (stream.out < STREAM_WIN && pair_send(&stream, n))
			n++;
		pair_poll(&stream);
		/* churn: CQs, MRs, an SRQ and a QP pair, a few messages through */
		pair_create(&churn, CHURN_MSGS, cycles % 2 == 0);
		for (uint64_t k = 0; k < CHURN_MSGS; k++)
			if (!pair_send(&churn, k * 4)) /* SENDs only: they consume receives */
				die("churn send");
		for (uint64_t stop = now_ms() + 20000; churn.done < CHURN_MSGS && now_ms() < stop;) {
			pair_poll(&churn);
			pair_poll(&stream);
		}
		if (churn.done < CHURN_MSGS)
			die("churn: messages did not complete in 20 s");
		pair_destroy(&churn);
		cycles++;
		if (cycles % 8 == 0) {
			cm_cycle();
			conns++;
		}
		if (now_ms() >= next) {
			if (ns < MAX_SAMPLES)
				take(&samples[ns++], (double)(now_ms() - t0) / 1000.0, cycles, conns,
				     stream.done);
			next += (uint64_t)(opt.interval * 1000);
			if (next <= now_ms()) /* behind (a slow cycle): no catch-up burst */
				next = now_ms() + (uint64_t)(opt.interval * 1000);
		}
	}
	/* drain the stream */
	for (uint64_t stop = now_ms() + 20000; stream.out > 0 && now_ms() < stop;)
		pair_poll(&stream);
	pair_destroy(&stream);
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ch);
	printf("droce-soak: %.0f s, %" PRIu64 " churn cycles, %" PRIu64 " rdma_cm connections, %" PRIu64
	       " stream messages (loss %g on each port)\n",
	       opt.seconds, cycles, conns, stream.done, opt.loss);
	c = verdict(samples, ns);
	for (int s = 0; s < 2; s++) {
		ibv_dealloc_pd(dev[s].pd);
		ibv_close_device(dev[s].ctx);
	}
	return c;
}
