/* SPDX-License-Identifier: BSD-3-Clause
 * droce-wake-bench: how soon a program asleep waiting for a completion wakes
 * after its peer sends, and how much CPU it uses while idle (issue 23 §4;
 * scripts/wake-bench runs it).
 *
 * Two droce processes over memif, forked from this one (each starts its own
 * droce from DROCE_CONFIG: the configs of tests/common/memif_ini.sh); an RC
 * QP between them, QP numbers swapped over a socketpair.  The sender posts a
 * 16-byte SEND carrying its CLOCK_MONOTONIC time, drives its engine for
 * 20 µs (ibv_poll_cq: the frame leaves), then sleeps until the sleeper's
 * report and polls the SEND's completion only then (no spinning of its own
 * while the sleeper's threads wait for a CPU); the sleeper waits for the receive completion in one of
 * these ways:
 *
 *   busy   spins on ibv_poll_cq (the floor: the engines driven by the caller)
 *   event  ibv_req_notify_cq, then sleeps in ibv_get_cq_event
 *   poll   poll() on the completion channel's fd, then ibv_get_cq_event
 *   epoll  epoll_wait() on the channel's fd (level-triggered)
 *   pipe   no droce: the sender writes its time into a socketpair and the
 *          sleeper wakes in read() (the kernel's own wake-up between two
 *          processes: the floor of the modes above on this machine)
 *
 * The wake latency of a sample is (the sleeper's wait returning) - (the
 * sender's time just before ibv_post_send): the transport's one-way time
 * plus the wake-up; the busy mode's figure is the transport alone.  After
 * each sample the sleeper re-arms and tells the sender (socketpair), which
 * waits GAP µs before the next: with a gap over 50 ms the sleeper's
 * fallback thread has gone to sleep on the memif wake line.
 *
 * Idle CPU (-i SEC): before the samples, the sleeper waits in its mode with
 * no traffic; the sender reads /proc/PID/stat and each thread's
 * /proc/PID/task/TID/{stat,status} of both processes 1 s after the sleeper
 * began to wait and again SEC seconds later: clock ticks (1/100 s) used and
 * wake-ups (context switches) per thread.
 *
 *   droce-wake-bench -m MODE [-n SAMPLES] [-g GAP_US] [-i IDLE_S] SLEEPER.ini SENDER.ini
 *
 * Prints one line "wake MODE gap=..us n=.. median=.. p90=.. p99=.. max=.. us
 * lost=.." and, with -i, "idle MODE sleeper|sender ticks=.. wakeups=.." and
 * one line per thread that ran.  Every wait is bounded (alarm, poll
 * timeouts): exits non-zero when a side fails or a sample is lost.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>
#include <droce/stats.h>

#include "bench_pair.h"
#include "dataplane/dp.h"

enum mode { MODE_BUSY, MODE_EVENT, MODE_POLL, MODE_EPOLL, MODE_PIPE };
static const char *const mode_name[] = { "busy", "event", "poll", "epoll", "pipe" };

#define MSG_LEN 16
#define WAIT_MS 5000 /* a sample not woken in this long is lost */
#define MAX_THREADS 64
#define LOST INT64_MIN /* the sleeper's report of a sample it did not get */
#define SEND_SPIN_NS 20000 /* the sender drives its engine this long after a post */

struct info {
	uint32_t qpn;
	int32_t pid;
	union ibv_gid gid;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct info me;
};

static struct {
	enum mode mode;
	unsigned int n;
	unsigned int gap_us;
	unsigned int idle_s;
} opt = { .mode = MODE_POLL, .n = 200, .gap_us = 20000 };

#define CHECK(c)                                                                              \
	do {                                                                                  \
		if (!(c)) {                                                                   \
			fprintf(stderr, "droce-wake-bench: %s:%d: %s (%s)\n", __FILE__,       \
				__LINE__, #c, strerror(errno));                               \
			_exit(3);                                                             \
		}                                                                             \
	} while (0)

/* bench_pair.h's: as CHECK, the process ends with 3 */
static void
die(const char *what, int e)
{
	fprintf(stderr, "droce-wake-bench: %s: %s\n", what, strerror(e));
	_exit(3);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
xfer(int fd, void *p, size_t n, bool out)
{
	CHECK((out ? write(fd, p, n) : read(fd, p, n)) == (ssize_t)n);
}

static void
side_open(struct side *d)
{
	struct ibv_device **l;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int n;

	l = ibv_get_device_list(&n);
	CHECK(l != NULL && n >= 1);
	d->ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	CHECK(d->ctx != NULL);
	d->pd = ibv_alloc_pd(d->ctx);
	d->buf = calloc(1, 4096);
	CHECK(d->pd != NULL && d->buf != NULL);
	d->mr = ibv_reg_mr(d->pd, d->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	d->ch = ibv_create_comp_channel(d->ctx);
	CHECK(d->mr != NULL && d->ch != NULL);
	d->cq = ibv_create_cq(d->ctx, 64, NULL, d->ch, 0);
	CHECK(d->cq != NULL);
	ia.send_cq = ia.recv_cq = d->cq;
	d->qp = ibv_create_qp(d->pd, &ia);
	CHECK(d->qp != NULL);
	CHECK(ibv_query_gid(d->ctx, 1, 0, &d->me.gid) == 0);
	d->me.qpn = d->qp->qp_num;
	d->me.pid = (int32_t)getpid();
}

/* INIT, then RTR (resolves the peer's MAC by ARP) and RTS (bench_pair.h). */
static void
side_connect(struct side *d, const struct info *peer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	CHECK(ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS) == 0);
	bench_qp_connect(d->qp, peer->qpn, &peer->gid);
}

static void
post_recv(struct side *d)
{
	struct ibv_sge sge = { .addr = (uintptr_t)d->buf + 2048, .length = MSG_LEN,
			       .lkey = d->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(d->qp, &w, &bad) == 0);
}

/* A lost sample's evidence: the QP's and port 0's non-zero counters. */
static void
dump_stats(const char *who, struct side *d)
{
	struct droce_stat st[256];
	int n;

	n = droce_stats_qp(d->qp, st, 256);
	for (int i = 0; i < n && i < 256; i++)
		if (st[i].value != 0)
			fprintf(stderr, "%s qp %s %llu\n", who, st[i].name,
				(unsigned long long)st[i].value);
	n = droce_stats_port(0, st, 256);
	for (int i = 0; i < n && i < 256; i++)
		if (st[i].value != 0)
			fprintf(stderr, "%s port %s %llu\n", who, st[i].name,
				(unsigned long long)st[i].value);
}

/* ---- the sleeper ---- */

/* Takes the channel's events (non-blocking fd: until EAGAIN) and re-arms. */
static void
drain_events(struct side *d)
{
	struct ibv_cq *cq;
	void *cctx;

	while (ibv_get_cq_event(d->ch, &cq, &cctx) == 0)
		ibv_ack_cq_events(cq, 1);
	CHECK(errno == EAGAIN);
}

/*
 * Waits for one receive completion in opt.mode, at most WAIT_MS per sleep;
 * *woke: when the wait (poll, epoll_wait, ibv_get_cq_event) returned for
 * the sleep that brought it.  False if none came in time.
 */
static bool
wait_recv(struct side *d, int ep, uint64_t *woke, unsigned int extra_s)
{
	uint64_t deadline = now_ns() + ((uint64_t)WAIT_MS + extra_s * 1000u) * 1000000u;
	struct ibv_wc wc;
	int k;

	for (;;) {
		if (opt.mode != MODE_BUSY)
			CHECK(ibv_req_notify_cq(d->cq, 0) == 0);
		k = ibv_poll_cq(d->cq, 1, &wc); /* after the arm: none missed */
		CHECK(k >= 0);
		if (k == 1) {
			if (opt.mode == MODE_BUSY)
				*woke = now_ns();
			CHECK(wc.status == IBV_WC_SUCCESS);
			if (wc.opcode == IBV_WC_RECV)
				return true;
			continue;
		}
		if (now_ns() > deadline) {
			struct pollfd pfd = { .fd = d->ch->fd, .events = POLLIN };

			/* what was lost: the event (the completion is there) or
			 * the completion itself */
			k = ibv_poll_cq(d->cq, 1, &wc);
			fprintf(stderr, "droce-wake-bench: no wake in %u ms: completion in the CQ %s, "
				"channel fd %s\n", WAIT_MS, k == 1 ? "yes" : "no",
				poll(&pfd, 1, 0) == 1 ? "readable" : "not readable");
			dump_stats("sleeper", d);
			return false;
		}
		switch (opt.mode) {
		case MODE_BUSY:
		case MODE_PIPE: /* not here: pipe_sleeper */
			break;
		case MODE_EVENT: {
			struct ibv_cq *cq;
			void *cctx;

			/* blocking fd: a bounded wait needs poll first only past the
			 * deadline, which alarm() covers */
			CHECK(ibv_get_cq_event(d->ch, &cq, &cctx) == 0);
			*woke = now_ns();
			ibv_ack_cq_events(cq, 1);
			break;
		}
		case MODE_POLL: {
			struct pollfd pfd = { .fd = d->ch->fd, .events = POLLIN };

			k = poll(&pfd, 1, WAIT_MS + (int)extra_s * 1000);
			*woke = now_ns();
			CHECK(k >= 0);
			if (k == 1)
				drain_events(d);
			break;
		}
		case MODE_EPOLL: {
			struct epoll_event ev;

			k = epoll_wait(ep, &ev, 1, WAIT_MS + (int)extra_s * 1000);
			*woke = now_ns();
			CHECK(k >= 0);
			if (k == 1)
				drain_events(d);
			break;
		}
		}
	}
}

static int pipe_sleeper(int fd);

static int
sleeper(int fd)
{
	struct side d = { 0 };
	struct info peer;
	int ep = -1;
	char c;

	if (opt.mode == MODE_PIPE)
		return pipe_sleeper(fd);
	side_open(&d);
	if (opt.mode == MODE_POLL || opt.mode == MODE_EPOLL) {
		int fl = fcntl(d.ch->fd, F_GETFL);

		CHECK(fl >= 0 && fcntl(d.ch->fd, F_SETFL, fl | O_NONBLOCK) == 0);
	}
	if (opt.mode == MODE_EPOLL) {
		struct epoll_event ev = { .events = EPOLLIN };

		ep = epoll_create1(EPOLL_CLOEXEC);
		CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, d.ch->fd, &ev) == 0);
	}
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	post_recv(&d);
	c = 'r';
	xfer(fd, &c, 1, true);
	/* the idle phase (if any) is the wait for sample 0 */
	for (unsigned int s = 0; s < opt.n; s++) {
		uint64_t woke = 0, sent;
		uint32_t seq;
		int64_t lat;

		/* sample 0 comes after the idle phase (and its second of settling) */
		if (!wait_recv(&d, ep, &woke, s == 0 && opt.idle_s ? opt.idle_s + 2 : 0)) {
			fprintf(stderr, "droce-wake-bench: sample %u: no completion\n", s);
			lat = LOST;
			xfer(fd, &lat, sizeof(lat), true);
			return 4;
		}
		memcpy(&sent, d.buf + 2048, sizeof(sent));
		/* a wait that returned before the SEND was posted (a stale event,
		 * then the completion found by the next poll): the time found */
		if (woke < sent)
			woke = now_ns();
		memcpy(&seq, d.buf + 2048 + 8, sizeof(seq));
		if (seq != s) { /* the SENDs carry their sample's number */
			fprintf(stderr, "droce-wake-bench: sample %u's wait got SEND %u\n", s, seq);
			lat = LOST;
			xfer(fd, &lat, sizeof(lat), true);
			return 5;
		}
		lat = (int64_t)(woke - sent);
		post_recv(&d);
		xfer(fd, &lat, sizeof(lat), true); /* re-armed: the next may come */
	}
	xfer(fd, &c, 1, false); /* the sender's end */
	return 0;
}

/* ---- the sender: samples, and the idle figures ---- */

struct th {
	int tid;
	char comm[20];
	long ticks, switches;
};

static unsigned int
threads_read(int pid, struct th *t, unsigned int max)
{
	char path[320], buf[1024];
	unsigned int n = 0;
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (dir == NULL)
		return 0;
	while ((e = readdir(dir)) != NULL && n < max) {
		FILE *f;
		char *rp;
		long ut, st, v = 0, nv = 0;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		buf[0] = 0;
		if (fgets(buf, sizeof(buf), f) == NULL)
			buf[0] = 0;
		fclose(f);
		/* comm is in parentheses and may hold spaces: fields after the last ')' */
		rp = strrchr(buf, ')');
		if (rp == NULL || sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld",
					 &ut, &st) != 2)
			continue;
		t[n].tid = atoi(e->d_name);
		snprintf(t[n].comm, sizeof(t[n].comm), "%.*s", (int)(rp - strchr(buf, '(') - 1),
			 strchr(buf, '(') + 1);
		t[n].ticks = ut + st;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", pid, e->d_name);
		f = fopen(path, "r");
		if (f != NULL) {
			while (fgets(buf, sizeof(buf), f) != NULL) {
				sscanf(buf, "voluntary_ctxt_switches: %ld", &v);
				sscanf(buf, "nonvoluntary_ctxt_switches: %ld", &nv);
			}
			fclose(f);
		}
		t[n].switches = v + nv;
		n++;
	}
	closedir(dir);
	return n;
}

static long
proc_ticks(int pid)
{
	char path[64], buf[1024], *rp;
	long ut = -1, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) != NULL && (rp = strrchr(buf, ')')) != NULL &&
	    sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st) == 2)
		ut += st;
	fclose(f);
	return ut;
}

static void
idle_report(const char *who, int pid, long t0, long t1, const struct th *a, unsigned int na,
	    const struct th *b, unsigned int nb)
{
	long sw = 0;

	for (unsigned int j = 0; j < nb; j++)
		for (unsigned int i = 0; i < na; i++)
			if (a[i].tid == b[j].tid)
				sw += b[j].switches - a[i].switches;
	printf("idle %s %s %us: ticks=%ld wakeups=%ld\n", mode_name[opt.mode], who, opt.idle_s,
	       t1 - t0, sw);
	for (unsigned int j = 0; j < nb; j++)
		for (unsigned int i = 0; i < na; i++)
			if (a[i].tid == b[j].tid &&
			    (b[j].ticks != a[i].ticks || b[j].switches != a[i].switches))
				printf("  %s %s: ticks=%ld wakeups=%ld\n", who, b[j].comm,
				       b[j].ticks - a[i].ticks, b[j].switches - a[i].switches);
	(void)pid;
}

static void
idle_phase(int peer_pid)
{
	static struct th a[2][MAX_THREADS], b[2][MAX_THREADS];
	int pids[2] = { peer_pid, (int)getpid() };
	const char *who[2] = { "sleeper", "sender" };
	unsigned int na[2], nb[2];
	long t0[2], t1[2];

	sleep(1); /* past the sleeper's spin and the fallback's 50 ms lull */
	for (int k = 0; k < 2; k++) {
		t0[k] = proc_ticks(pids[k]);
		na[k] = threads_read(pids[k], a[k], MAX_THREADS);
	}
	sleep(opt.idle_s);
	for (int k = 0; k < 2; k++) {
		t1[k] = proc_ticks(pids[k]);
		nb[k] = threads_read(pids[k], b[k], MAX_THREADS);
	}
	for (int k = 0; k < 2; k++)
		idle_report(who[k], pids[k], t0[k], t1[k], a[k], na[k], b[k], nb[k]);
	fflush(stdout);
}

static int
cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

/* The sample line (sorts @lat). */
static void
report(int64_t *lat, unsigned int n, unsigned int lost)
{
	int64_t first = lat[0];

	qsort(lat, n, sizeof(*lat), cmp_i64);
	printf("wake %s gap=%uus n=%u", mode_name[opt.mode], opt.gap_us, n);
	if (n > 0)
		printf(" first=%.1f median=%.1f p90=%.1f p99=%.1f max=%.1f us",
		       first / 1e3, lat[n / 2] / 1e3, lat[n * 9 / 10] / 1e3,
		       lat[(n * 99) / 100] / 1e3, lat[n - 1] / 1e3);
	printf(" lost=%u\n", lost);
}

/*
 * The machine's own floor, no droce: the sender writes its time into the
 * socketpair, the sleeper wakes in read() (one kernel wake-up of a blocked
 * thread between two processes, what a droce wake can at best cost here).
 */
static int
pipe_sleeper(int fd)
{
	for (unsigned int s = 0; s < opt.n; s++) {
		uint64_t sent;
		int64_t lat;

		xfer(fd, &sent, sizeof(sent), false);
		lat = (int64_t)(now_ns() - sent);
		xfer(fd, &lat, sizeof(lat), true);
	}
	return 0;
}

static int
pipe_sender(int fd)
{
	int64_t *lat = calloc(opt.n, sizeof(*lat));

	CHECK(lat != NULL);
	for (unsigned int s = 0; s < opt.n; s++) {
		uint64_t t0;

		usleep(opt.gap_us);
		t0 = now_ns();
		xfer(fd, &t0, sizeof(t0), true);
		xfer(fd, &lat[s], sizeof(lat[s]), false);
	}
	report(lat, opt.n, 0);
	free(lat);
	return 0;
}

static int
sender(int fd)
{
	struct side d = { 0 };
	struct info peer;
	int64_t *lat = calloc(opt.n, sizeof(*lat));
	unsigned int lost = 0;
	char c;

	if (opt.mode == MODE_PIPE) {
		free(lat);
		return pipe_sender(fd);
	}
	CHECK(lat != NULL);
	side_open(&d);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &c, 1, false); /* the sleeper's receive is posted */
	if (opt.idle_s > 0)
		idle_phase(peer.pid);
	for (unsigned int s = 0; s < opt.n; s++) {
		struct ibv_sge sge = { .addr = (uintptr_t)d.buf, .length = MSG_LEN,
				       .lkey = d.mr->lkey };
		struct ibv_send_wr w = { .wr_id = s, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct ibv_wc wc;
		uint64_t t0;
		int k;

		if (s > 0 || opt.idle_s == 0)
			usleep(opt.gap_us);
		t0 = now_ns();
		memcpy(d.buf, &t0, sizeof(t0));
		memcpy(d.buf + 8, &s, sizeof(s));
		CHECK(ibv_post_send(d.qp, &w, &bad) == 0);
		/* drives its engine long enough to send the frame, then sleeps
		 * until the sleeper reports: no spinning of its own while the
		 * sleeper's threads wait for a CPU */
		while ((k = ibv_poll_cq(d.cq, 1, &wc)) == 0 && now_ns() - t0 < SEND_SPIN_NS)
			;
		CHECK(k >= 0);
		xfer(fd, &lat[s], sizeof(lat[s]), false);
		if (lat[s] == LOST) {
			uint64_t t1 = now_ns();

			while ((k = ibv_poll_cq(d.cq, 1, &wc)) == 0 && now_ns() - t1 < 2000000000u)
				;
			fprintf(stderr, "droce-wake-bench: sample %u lost; the SEND %s\n", s,
				k == 1 ? ibv_wc_status_str(wc.status) : "not completed in 2 s more");
			dump_stats("sender", &d);
			lost++;
			break;
		}
		if (k == 0) { /* the ACK: the sleeper's side has answered by now */
			uint64_t t1 = now_ns();

			while ((k = ibv_poll_cq(d.cq, 1, &wc)) == 0 &&
			       now_ns() - t1 < (uint64_t)WAIT_MS * 1000000u)
				;
		}
		CHECK(k == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == s);
	}
	c = 'e';
	if (lost == 0)
		xfer(fd, &c, 1, true);
	report(lat, lost ? 0 : opt.n, lost);
	free(lat);
	return lost ? 4 : 0;
}

/* ---- harness ---- */

static pid_t
spawn(const char *ini, int fd, int (*fn)(int))
{
	pid_t pid = fork();

	CHECK(pid != -1);
	if (pid == 0) {
		int rc;

		alarm(opt.idle_s + 60 + (opt.n * (opt.gap_us / 1000 + 10)) / 1000);
		setenv("DROCE_CONFIG", ini, 1);
		rc = fn(fd);
		fflush(stdout);
		droce_engines_stop();
		droce_stop();
		droce_shutdown();
		_exit(rc);
	}
	return pid;
}

static const char *
ini_socket(const char *ini, char *out, size_t n)
{
	char line[512];
	FILE *f = fopen(ini, "r");

	out[0] = 0;
	if (f == NULL)
		return out;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "socket = %511s", out) == 1 && strlen(out) < n)
			break;
	fclose(f);
	return out;
}

int
main(int argc, char **argv)
{
	char sock[512];
	int sv[2], st, o, rc = 0;
	pid_t pid[2];

	while ((o = getopt(argc, argv, "m:n:g:i:")) != -1) {
		switch (o) {
		case 'm':
			for (opt.mode = 0; opt.mode <= MODE_PIPE; opt.mode++)
				if (strcmp(optarg, mode_name[opt.mode]) == 0)
					break;
			if (opt.mode > MODE_PIPE)
				goto usage;
			break;
		case 'n':
			opt.n = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'g':
			opt.gap_us = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			opt.idle_s = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2 || opt.n == 0)
		goto usage;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	ini_socket(argv[optind], sock, sizeof(sock));
	unlink(sock);
	pid[0] = spawn(argv[optind], sv[0], sleeper);
	/* the memif client needs the server's socket (bounded wait) */
	for (int i = 0; i < 200 && opt.mode != MODE_PIPE && access(sock, F_OK) != 0; i++)
		usleep(50000);
	pid[1] = spawn(argv[optind + 1], sv[1], sender);
	for (int s = 0; s < 2; s++) {
		CHECK(waitpid(pid[s], &st, 0) == pid[s]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "droce-wake-bench: %s %s %d\n", s ? "sender" : "sleeper",
				WIFEXITED(st) ? "exit" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			rc = 1;
		}
	}
	unlink(sock);
	return rc;
usage:
	fprintf(stderr, "usage: droce-wake-bench -m busy|event|poll|epoll|pipe [-n SAMPLES] "
			"[-g GAP_US] [-i IDLE_S] SLEEPER.ini SENDER.ini\n");
	return 2;
}
