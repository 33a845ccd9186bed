/* SPDX-License-Identifier: BSD-3-Clause
 * droce-incast: an N-to-1 incast through the switch model (issue 25
 * section 5), one process, the verbs API only.  The configuration
 * (DROCE_CONFIG, written by scripts/incast) has N + 2 ports of kind =
 * switch: port0 the receiver, ports 1..N one sender QP each, port N+1 the
 * probe.  Each sender keeps --depth WRITEs of --size bytes outstanding to
 * its own buffer at the receiver; the probe sends one 64-byte WRITE at a
 * time through the same bottleneck queue (the receiver's egress) and times
 * it.  After --warmup-ms the switch's counters are zeroed, and for
 * --run-ms (real time) the receiver's queue is sampled; then one JSON line
 * of results goes to stdout and the samples to --series (CSV).
 *
 * Two processes (--serve / --receiver, through a switch's memif link):
 * the receiver's ends live in the process started with --serve PATH,
 * whose configuration has one memif port (role client) on a link of the
 * switch; the process started with --receiver PATH has the switch, the
 * senders on ports 0..N-1 and the probe on port N ([switch] memif_links =
 * 1), and reads the bottleneck queue from the link's counters.  The two
 * exchange QP numbers, GIDs, addresses and keys over the unix socket PATH
 * (and, at the end, the receiver's CNP count and its check of the bytes).
 *
 * Every sender's buffer holds a pattern; at the end the receiver's buffers
 * (of every flow that completed a WRITE) are compared with it, and a
 * mismatch fails the run.
 *
 * Times in the results are on droce's clock (the switch's: real time /
 * time_dilation, the gaps over clock_stall_us left out), so the figures are
 * those of the fabric the configuration describes (e.g. 25 Gb/s played 300
 * times slower) and do not depend on how much CPU the process got.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <infiniband/verbs.h>

#include <droce/stats.h>

#define MAXN 30
#define PROBE_SIZE 64
#define MAX_PROBES 200000
#define MAX_SAMPLES 200000

static struct {
	unsigned int n, depth, dilation, warmup_ms, run_ms, sample_us, probe_us;
	size_t size;
	const char *series;
	const char *serve;    /* --serve PATH: this process is the receiver */
	const char *receiver; /* --receiver PATH: the receiver is that process */
} opt = { .n = 8, .depth = 4, .dilation = 1, .warmup_ms = 300, .run_ms = 2000,
	  .sample_us = 500, .probe_us = 20, .size = 65536 };

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	void *buf;
	union ibv_gid gid;
};

/* flow k: a sender end (port k; k - 1 with the receiver in another
 * process) and its receiver end (port0, here or there); k = n+1 the probe */
struct flow {
	struct end s, r;
	/* the sender's peer: the receiver end, here or in the other process */
	uint32_t rqpn, rkey;
	uint64_t raddr;
	union ibv_gid rgid;
	unsigned int outstanding;
	uint64_t done, done_at_start;
};

/* What the two processes exchange over the unix socket (same machine, same ABI). */
struct wire_hello {
	uint32_t n, np, total_ms, pad;
	uint64_t size;
};
struct wire_end {
	uint32_t qpn, rkey;
	uint64_t addr;
	uint8_t gid[16];
};
enum { MSG_MEASURE = 1, MSG_DONE = 2 }; /* DONE: then np uint64_t, each flow's WRITEs done */
struct wire_report {
	uint64_t cnp_sent, ce_received, bytes_bad;
};

static struct flow flows[MAXN + 2];
static struct ibv_device **devs;

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void
die(const char *what)
{
	fprintf(stderr, "droce-incast: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void
end_open(struct end *e, unsigned int port, size_t bytes, struct ibv_context *shared)
{
	e->ctx = shared != NULL ? shared : ibv_open_device(devs[port]);
	if (e->ctx == NULL)
		die("ibv_open_device");
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	if (e->pd == NULL || e->cq == NULL)
		die("pd / cq");
	e->buf = calloc(1, bytes);
	e->mr = ibv_reg_mr(e->pd, e->buf, bytes,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (e->buf == NULL || e->mr == NULL)
		die("mr");
	struct ibv_qp_init_attr ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = PROBE_SIZE },
	};
	e->qp = ibv_create_qp(e->pd, &ia);
	if (e->qp == NULL)
		die("ibv_create_qp");
	if (ibv_query_gid(e->ctx, 1, 0, &e->gid) != 0)
		die("ibv_query_gid");
}

/* The pattern of flow @k's buffer: the bytes its WRITEs carry. */
static void
pattern_fill(uint8_t *p, size_t len, unsigned int k)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(k * 29 + i * 13 + (i >> 8));
}

static uint64_t
pattern_bad(const uint8_t *p, size_t len, unsigned int k)
{
	uint64_t bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += p[i] != (uint8_t)(k * 29 + i * 13 + (i >> 8));
	return bad;
}

static void
xfer(int fd, void *buf, size_t len, bool out)
{
	size_t off = 0;

	while (off < len) {
		ssize_t r = out ? write(fd, (char *)buf + off, len - off) :
				  read(fd, (char *)buf + off, len - off);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				errno = ECONNRESET;
			die(out ? "socket write" : "socket read");
		}
		off += (size_t)r;
	}
}

static void
connect_qp(struct end *a, uint32_t dest_qpn, const union ibv_gid *dgid)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(a->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS) != 0)
		die("INIT");
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = dest_qpn;
	at.rq_psn = 0;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 1;
	at.ah_attr.is_global = 1;
	at.ah_attr.grh.dgid = *dgid;
	at.ah_attr.grh.sgid_index = 0;
	at.ah_attr.grh.hop_limit = 64;
	at.ah_attr.port_num = 1;
	if (ibv_modify_qp(a->qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
		die("RTR");
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.timeout = 8; /* 1 ms of droce's clock */
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.sq_psn = 0;
	at.max_rd_atomic = 1;
	if (ibv_modify_qp(a->qp, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					   IBV_QP_MAX_QP_RD_ATOMIC) != 0)
		die("RTS");
}

static void
post_write(struct flow *f, size_t len, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)f->s.buf, .length = (uint32_t)len,
			       .lkey = f->s.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = f->raddr, .rkey = f->rkey } };
	struct ibv_send_wr *bad;

	if (len <= PROBE_SIZE)
		wr.send_flags |= IBV_SEND_INLINE;
	if (ibv_post_send(f->s.qp, &wr, &bad) != 0)
		die("ibv_post_send");
	f->outstanding++;
}

static uint64_t
pstat(int (*get)(unsigned int, struct droce_stat *, unsigned int), unsigned int id, const char *name)
{
	struct droce_stat s[200];
	int n = get(id, s, 200);
	uint64_t v = n > 0 ? droce_stat_find(s, (unsigned int)n, name) : UINT64_MAX;

	return v == UINT64_MAX ? 0 : v;
}

static uint64_t
qstat(struct ibv_qp *qp, const char *name)
{
	struct droce_stat s[200];
	int n = droce_stats_qp(qp, s, 200);
	uint64_t v = n > 0 ? droce_stat_find(s, (unsigned int)n, name) : UINT64_MAX;

	return v == UINT64_MAX ? 0 : v;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pct(double *v, unsigned int n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_d);
	return v[(unsigned int)fmin(n - 1, floor(q * n))];
}

static void
end_put(struct wire_end *w, const struct end *e)
{
	memset(w, 0, sizeof(*w));
	w->qpn = e->qp->qp_num;
	w->rkey = e->mr->rkey;
	w->addr = (uintptr_t)e->buf;
	memcpy(w->gid, e->gid.raw, sizeof(w->gid));
}

/* A unix socket: the receiver listens on @path and accepts one peer within
 * 60 s; the senders' side dials it for up to 60 s (the other process may
 * still be starting). */
static int
sock_open(const char *path, bool listen_side)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), c;

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
		die("socket");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (!listen_side) {
		for (unsigned int i = 0; connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0; i++) {
			if (i == 600)
				die(path);
			usleep(100000);
		}
		return fd;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1) != 0)
		die(path);
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	if (poll(&pf, 1, 60000) != 1) {
		errno = ETIMEDOUT;
		die("waiting for the senders' process");
	}
	c = accept(fd, NULL, NULL);
	if (c < 0)
		die("accept");
	close(fd);
	unlink(path);
	return c;
}

/*
 * --serve: the receiver's ends on port0 of this process.  Polls its CQs
 * (the application thread drives droce's engines) until the senders'
 * process closes the socket; answers MSG_MEASURE (counters from now) and
 * MSG_DONE (the CNPs sent since, and the bytes checked).
 */
static int
serve(void)
{
	struct wire_hello h;
	struct wire_end w;
	struct wire_report rep = { 0 };
	uint64_t cnp0 = 0, ce0 = 0, done[MAXN + 2];
	unsigned int ndev = 0;
	double deadline;
	int fd = sock_open(opt.serve, true);

	xfer(fd, &h, sizeof(h), false);
	if (h.n < 1 || h.n > MAXN || h.np != h.n + 1 || h.size < PROBE_SIZE || h.size > (1u << 30)) {
		fprintf(stderr, "droce-incast: bad hello from the senders' process\n");
		return 1;
	}
	deadline = now_us() + (h.total_ms + 120000.0) * 1000;
	devs = ibv_get_device_list((int *)&ndev);
	if (devs == NULL || ndev < 1)
		die("no droce device (DROCE_CONFIG with one memif port)");
	for (unsigned int k = 1; k <= h.np; k++) {
		end_open(&flows[k].r, 0, k == h.np ? PROBE_SIZE : h.size,
			 k == 1 ? NULL : flows[1].r.ctx);
		end_put(&w, &flows[k].r);
		xfer(fd, &w, sizeof(w), true);
	}
	for (unsigned int k = 1; k <= h.np; k++) {
		union ibv_gid g;

		xfer(fd, &w, sizeof(w), false);
		memcpy(g.raw, w.gid, sizeof(g.raw));
		connect_qp(&flows[k].r, w.qpn, &g);
	}
	for (unsigned int i = 0;; i++) {
		struct ibv_wc wc[16];
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint32_t msg;

		for (unsigned int k = 1; k <= h.np; k++)
			if (ibv_poll_cq(flows[k].r.cq, 16, wc) < 0)
				die("ibv_poll_cq");
		if (i % 256 != 0)
			continue;
		if (now_us() > deadline) {
			fprintf(stderr, "droce-incast: the senders' process never ended\n");
			return 1;
		}
		if (poll(&pf, 1, 0) != 1)
			continue;
		if (read(fd, &msg, sizeof(msg)) != sizeof(msg))
			break; /* closed: the senders are done */
		if (msg == MSG_MEASURE) {
			cnp0 = pstat(droce_stats_port, 0, "cnp_sent");
			ce0 = pstat(droce_stats_port, 0, "ecn_ce_received");
		} else if (msg == MSG_DONE) {
			xfer(fd, done, h.np * sizeof(done[0]), false);
			rep.cnp_sent = pstat(droce_stats_port, 0, "cnp_sent") - cnp0;
			rep.ce_received = pstat(droce_stats_port, 0, "ecn_ce_received") - ce0;
			rep.bytes_bad = 0;
			for (unsigned int k = 1; k <= h.np; k++)
				if (done[k - 1] != 0)
					rep.bytes_bad += pattern_bad(flows[k].r.buf, k == h.np ?
								     PROBE_SIZE : h.size, k);
			xfer(fd, &rep, sizeof(rep), true);
		}
	}
	for (unsigned int k = 1; k <= h.np; k++)
		ibv_destroy_qp(flows[k].r.qp);
	close(fd);
	return rep.bytes_bad != 0;
}

static void
usage(int rc)
{
	printf("usage: droce-incast [options]   (DROCE_CONFIG: N + 2 switch ports)\n"
	       "  -n, --senders N      sender QPs on ports 1..N (default 8, at most %d)\n"
	       "  -s, --size BYTES     WRITE size of the senders (default 65536)\n"
	       "  -d, --depth N        WRITEs each sender keeps outstanding (default 4)\n"
	       "  -D, --dilation S     the config's time_dilation (default 1)\n"
	       "  -w, --warmup-ms MS   real time before the counters are zeroed (default 300)\n"
	       "  -t, --run-ms MS      real time measured (default 2000)\n"
	       "  -i, --sample-us US   real time between queue samples (default 500)\n"
	       "  -o, --series PATH    CSV of the samples (time on droce's clock)\n"
	       "  -p, --probe-us US    a probe WRITE every US of droce's clock (default 20;\n"
	       "                       at most 16 outstanding)\n"
	       "  -R, --receiver PATH  the receiver is the process started with --serve PATH:\n"
	       "                       senders on ports 0..N-1, the probe on port N, the\n"
	       "                       bottleneck the switch's memif link 0\n"
	       "  -S, --serve PATH     be that receiver (port0: a memif port on the link)\n",
	       MAXN);
	exit(rc);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "senders", 1, NULL, 'n' }, { "size", 1, NULL, 's' }, { "depth", 1, NULL, 'd' },
		{ "dilation", 1, NULL, 'D' }, { "warmup-ms", 1, NULL, 'w' },
		{ "run-ms", 1, NULL, 't' }, { "sample-us", 1, NULL, 'i' },
		{ "series", 1, NULL, 'o' }, { "probe-us", 1, NULL, 'p' },
		{ "receiver", 1, NULL, 'R' }, { "serve", 1, NULL, 'S' }, { "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static double probe_us[MAX_PROBES];
	static double smp_t[MAX_SAMPLES], smp_q[MAX_SAMPLES], smp_r[MAX_SAMPLES][MAXN];
	unsigned int nprobe = 0, nsmp = 0, ndev = 0, n, np, base;
	double t0, t_meas = 0, next_sample = 0, next_probe = 0, end_t;
	static double probe_posted[16];
	uint64_t probe_seq = 0;
	uint64_t clock0 = 0, retx0 = 0, loops0 = 0, coal0 = 0, cnp0 = 0, cnprx0 = 0, bad = 0, ce0 = 0;
	struct wire_report report = { 0 };
	bool measuring = false, remote;
	int (*bottleneck)(unsigned int, struct droce_stat *, unsigned int);
	int c, fd = -1;

	while ((c = getopt_long(argc, argv, "n:s:d:D:w:t:i:o:p:R:S:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': opt.n = (unsigned int)atoi(optarg); break;
		case 's': opt.size = (size_t)atol(optarg); break;
		case 'd': opt.depth = (unsigned int)atoi(optarg); break;
		case 'D': opt.dilation = (unsigned int)atoi(optarg); break;
		case 'w': opt.warmup_ms = (unsigned int)atoi(optarg); break;
		case 't': opt.run_ms = (unsigned int)atoi(optarg); break;
		case 'i': opt.sample_us = (unsigned int)atoi(optarg); break;
		case 'o': opt.series = optarg; break;
		case 'p': opt.probe_us = (unsigned int)atoi(optarg); break;
		case 'R': opt.receiver = optarg; break;
		case 'S': opt.serve = optarg; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (opt.serve != NULL)
		return serve();
	n = opt.n;
	np = n + 1;
	remote = opt.receiver != NULL;
	if (n < 1 || n > MAXN || opt.depth < 1 || opt.depth > 32 || opt.size < 64 ||
	    opt.dilation < 1)
		usage(2);
	base = remote ? 1 : 0;
	/* the bottleneck queue: the receiver's switch port, or the link to it */
	bottleneck = remote ? droce_stats_switch_link : droce_stats_port;
	devs = ibv_get_device_list((int *)&ndev);
	if (devs == NULL || ndev < n + 2 - base) {
		fprintf(stderr, "droce-incast: %u devices, %u needed (DROCE_CONFIG with %u switch ports)\n",
			ndev, n + 2 - base, n + 2 - base);
		return 1;
	}
	for (unsigned int k = 1; k <= np; k++) {
		size_t bytes = k == np ? PROBE_SIZE : opt.size;

		end_open(&flows[k].s, k - base, bytes, NULL);
		pattern_fill(flows[k].s.buf, bytes, k);
		if (remote)
			continue;
		/* the receiver's ends share port0's context */
		end_open(&flows[k].r, 0, bytes, k == 1 ? NULL : flows[1].r.ctx);
		flows[k].rqpn = flows[k].r.qp->qp_num;
		flows[k].rkey = flows[k].r.mr->rkey;
		flows[k].raddr = (uintptr_t)flows[k].r.buf;
		flows[k].rgid = flows[k].r.gid;
	}
	if (remote) {
		struct wire_hello h = { .n = n, .np = np, .size = opt.size,
					.total_ms = opt.warmup_ms + opt.run_ms };
		struct wire_end w;

		fd = sock_open(opt.receiver, false);
		xfer(fd, &h, sizeof(h), true);
		for (unsigned int k = 1; k <= np; k++) {
			xfer(fd, &w, sizeof(w), false);
			flows[k].rqpn = w.qpn;
			flows[k].rkey = w.rkey;
			flows[k].raddr = w.addr;
			memcpy(flows[k].rgid.raw, w.gid, sizeof(w.gid));
		}
		for (unsigned int k = 1; k <= np; k++) {
			end_put(&w, &flows[k].s);
			xfer(fd, &w, sizeof(w), true);
		}
	}
	for (unsigned int k = 1; k <= np; k++) {
		connect_qp(&flows[k].s, flows[k].rqpn, &flows[k].rgid);
		if (!remote)
			connect_qp(&flows[k].r, flows[k].s.qp->qp_num, &flows[k].s.gid);
	}
	t0 = now_us();
	end_t = t0 + (opt.warmup_ms + opt.run_ms) * 1000.0;
	for (unsigned int k = 1; k <= n; k++)
		for (unsigned int d = 0; d < opt.depth; d++)
			post_write(&flows[k], opt.size, k);
	for (;;) {
		double t = now_us();
		struct ibv_wc wc[16];

		if (!measuring && t - t0 >= opt.warmup_ms * 1000.0) {
			measuring = true;
			droce_stats_switch_reset();
			if (remote) {
				uint32_t msg = MSG_MEASURE;

				xfer(fd, &msg, sizeof(msg), true);
			}
			clock0 = pstat(bottleneck, 0, "switch_clock_us");
			for (unsigned int k = 1; k <= n; k++) {
				flows[k].done_at_start = flows[k].done;
				retx0 += qstat(flows[k].s.qp, "retransmits");
			}
			t_meas = t;
			loops0 = pstat(droce_stats_engine, 0, "loops");
			coal0 = pstat(droce_stats_engine, 0, "cnp_coalesced");
			cnp0 = remote ? 0 : pstat(droce_stats_port, 0, "cnp_sent");
			ce0 = remote ? 0 : pstat(droce_stats_port, 0, "ecn_ce_received");
			for (unsigned int k = 1; k <= n; k++)
				cnprx0 += qstat(flows[k].s.qp, "cnp_received");
			nprobe = 0;
			next_sample = t;
		}
		if (t >= end_t)
			break;
		for (unsigned int k = 1; k <= np; k++) {
			int got = ibv_poll_cq(flows[k].s.cq, 16, wc);

			for (int i = 0; i < got; i++) {
				if (wc[i].status != IBV_WC_SUCCESS) {
					fprintf(stderr, "droce-incast: flow %u: %s\n", k,
						ibv_wc_status_str(wc[i].status));
					return 1;
				}
				flows[k].outstanding--;
				flows[k].done++;
				if (k == np) {
					if (measuring && nprobe < MAX_PROBES &&
					    probe_posted[wc[i].wr_id % 16] >= clock0)
						probe_us[nprobe++] = (double)pstat(droce_stats_port, 0,
										   "switch_clock_us") -
								     probe_posted[wc[i].wr_id % 16];
				} else {
					post_write(&flows[k], opt.size, k);
				}
			}
		}
		/* open loop: a probe every probe_us of droce's clock, so the
		 * probes sample time evenly (a closed loop would sample the
		 * moments the queue is short far more often) */
		if (t >= next_probe && flows[np].outstanding < 16) {
			/* on the switch's clock (droce's: dilated, stalls left out) */
			probe_posted[probe_seq % 16] = (double)pstat(bottleneck, 0, "switch_clock_us");
			post_write(&flows[np], PROBE_SIZE, probe_seq++);
			next_probe = t + (double)opt.probe_us * opt.dilation;
		}
		if (measuring && t >= next_sample && nsmp < MAX_SAMPLES) {
			smp_t[nsmp] = (double)(pstat(bottleneck, 0, "switch_clock_us") - clock0);
			smp_q[nsmp] = (double)pstat(bottleneck, 0, "switch_queue_bytes");
			for (unsigned int k = 1; k <= n; k++)
				smp_r[nsmp][k - 1] = (double)qstat(flows[k].s.qp, "cc_rate_mbps");
			nsmp++;
			next_sample = t + opt.sample_us;
		}
	}
	/* the bytes at the receiver (every flow that completed a WRITE: its
	 * buffer holds the pattern, an in-flight WRITE rewrites the same bytes) */
	if (remote) {
		uint32_t msg = MSG_DONE;
		uint64_t done[MAXN + 2];

		for (unsigned int k = 1; k <= np; k++)
			done[k - 1] = flows[k].done;
		xfer(fd, &msg, sizeof(msg), true);
		xfer(fd, done, np * sizeof(done[0]), true);
		xfer(fd, &report, sizeof(report), false);
		bad = report.bytes_bad;
	} else {
		for (unsigned int k = 1; k <= np; k++)
			if (flows[k].done != 0)
				bad += pattern_bad(flows[k].r.buf, k == np ? PROBE_SIZE : opt.size, k);
	}
	/* results: on the switch's clock */
	double clock_us = (double)(pstat(bottleneck, 0, "switch_clock_us") - clock0);
	double rate_mbps = (double)pstat(bottleneck, 0, "switch_rate_mbps");
	double sum = 0, sumsq = 0, gput[MAXN];
	uint64_t retx = 0, cnp_rx = 0;

	for (unsigned int k = 1; k <= n; k++) {
		gput[k - 1] = (double)(flows[k].done - flows[k].done_at_start) * (double)opt.size * 8 /
			      clock_us; /* Mb/s */
		sum += gput[k - 1];
		sumsq += gput[k - 1] * gput[k - 1];
		retx += qstat(flows[k].s.qp, "retransmits");
		cnp_rx += qstat(flows[k].s.qp, "cnp_received");
	}
	double jain = sumsq > 0 ? sum * sum / (n * sumsq) : 0;
	double p50 = pct(probe_us, nprobe, 0.5), p99 = pct(probe_us, nprobe, 0.99);

	printf("{\"senders\": %u, \"size\": %zu, \"dilation\": %u, \"real_ms\": %.0f, "
	       "\"clock_us\": %.0f, \"rate_mbps\": %.0f, \"goodput_mbps\": %.1f, "
	       "\"goodput_share\": %.3f, \"jain\": %.4f, "
	       "\"queue_p50_bytes\": %" PRIu64 ", \"queue_p99_bytes\": %" PRIu64
	       ", \"queue_max_bytes\": %" PRIu64 ", "
	       "\"probe_n\": %u, \"probe_p50_us\": %.1f, \"probe_p99_us\": %.1f, "
	       "\"probe_sojourn_p50_us\": %" PRIu64 ", \"probe_sojourn_p99_us\": %" PRIu64 ", "
	       "\"drops\": %" PRIu64 ", \"ce_marked\": %" PRIu64 ", \"retransmits\": %" PRIu64
	       ", \"cnp_sent\": %" PRIu64 ", \"cnp_received\": %" PRIu64 ", \"pfc_pauses\": %" PRIu64
	       ", \"utilization\": %.3f, \"engine_passes\": %" PRIu64 ", \"cnp_coalesced\": %" PRIu64 ", \"bytes_bad\": %" PRIu64
	       ", \"ce_received\": %" PRIu64 ", \"two_process\": %s, \"goodputs_mbps\": [",
	       n, opt.size, opt.dilation, (now_us() - t_meas) / 1000, clock_us, rate_mbps, sum,
	       sum / rate_mbps, jain, pstat(bottleneck, 0, "switch_queue_p50_bytes"),
	       pstat(bottleneck, 0, "switch_queue_p99_bytes"),
	       pstat(bottleneck, 0, "switch_queue_max_bytes"), nprobe, p50, p99,
	       pstat(droce_stats_port, np - base, "switch_in_sojourn_p50_us"),
	       pstat(droce_stats_port, np - base, "switch_in_sojourn_p99_us"),
	       pstat(bottleneck, 0, "switch_tail_drops"),
	       pstat(bottleneck, 0, "switch_ce_marked"), retx - retx0,
	       remote ? report.cnp_sent : pstat(droce_stats_port, 0, "cnp_sent") - cnp0,
	       cnp_rx - cnprx0, ({
		       uint64_t pz = 0;
		       for (unsigned int k = 1; k <= n; k++)
			       pz += pstat(droce_stats_port, k - base, "switch_in_pfc_pauses");
		       pz;
	       }), (double)pstat(bottleneck, 0, "switch_dequeued_bytes") * 8 / (rate_mbps * clock_us),
	       pstat(droce_stats_engine, 0, "loops") - loops0,
	       pstat(droce_stats_engine, 0, "cnp_coalesced") - coal0, bad,
	       remote ? report.ce_received : pstat(droce_stats_port, 0, "ecn_ce_received") - ce0,
	       remote ? "true" : "false");
	for (unsigned int k = 0; k < n; k++)
		printf("%s%.1f", k ? ", " : "", gput[k]);
	printf("]}\n");
	if (opt.series != NULL) {
		FILE *f = fopen(opt.series, "w");

		if (f == NULL)
			die(opt.series);
		fprintf(f, "t_us,queue_bytes");
		for (unsigned int k = 1; k <= n; k++)
			fprintf(f, ",rate%u_mbps", k);
		fprintf(f, "\n");
		for (unsigned int i = 0; i < nsmp; i++) {
			fprintf(f, "%.0f,%.0f", smp_t[i], smp_q[i]);
			for (unsigned int k = 0; k < n; k++)
				fprintf(f, ",%.0f", smp_r[i][k]);
			fprintf(f, "\n");
		}
		fclose(f);
	}
	if (getenv("INCAST_DEBUG"))
		for (unsigned int k = 0; k <= np - base; k++)
			fprintf(stderr, "port%u: loop_tx %" PRIu64 " tx %" PRIu64 " sw_in_drops %" PRIu64
				" soj50 %" PRIu64 " enq %" PRIu64 " arp_req_tx %" PRIu64 "\n", k,
				pstat(droce_stats_port, k, "loop_tx"), pstat(droce_stats_port, k, "tx_frames"),
				pstat(droce_stats_port, k, "switch_in_drops"),
				pstat(droce_stats_port, k, "switch_in_sojourn_p50_us"),
				pstat(droce_stats_port, k, "switch_enqueued_frames"),
				pstat(droce_stats_port, k, "arp_requests_tx"));
	/* drain what is outstanding, then close */
	double stop = now_us() + 2e6 * opt.dilation / 100;

	for (;;) {
		unsigned int left = 0;

		for (unsigned int k = 1; k <= np; k++) {
			struct ibv_wc wc[16];
			int got = ibv_poll_cq(flows[k].s.cq, 16, wc);

			flows[k].outstanding -= got > 0 ? (unsigned int)got : 0;
			left += flows[k].outstanding;
		}
		if (left == 0 || now_us() > stop)
			break;
	}
	for (unsigned int k = 1; k <= np; k++) {
		ibv_destroy_qp(flows[k].s.qp);
		if (!remote)
			ibv_destroy_qp(flows[k].r.qp);
	}
	if (fd >= 0)
		close(fd);
	if (bad != 0)
		fprintf(stderr, "droce-incast: %" PRIu64 " bytes at the receiver differ from the senders'\n",
			bad);
	return bad != 0;
}
