/* SPDX-License-Identifier: BSD-3-Clause
 * Progress while nobody polls, across two processes joined by memif on the
 * default co-located config (fallback progress thread on).  The test forks two
 * children, each starting its own droce (DROCE_CONFIG, memif server / client,
 * 198.18.0.1 / 198.18.0.2) after the fork; they exchange QP numbers over a
 * socketpair.  passive_target: the target sits in read() while the initiator
 * resolves its MAC by ARP, connects and RDMA WRITEs into it; then it checks
 * the bytes.  event_pingpong: both sides sleep in ibv_get_cq_event.  fd_poller:
 * the target sleeps in poll / epoll on its completion channel's fd while idle.
 * lines / signals: threads asleep in ibv_get_cq_event on the memif wake lines
 * themselves, two at once, and interrupted by signals.
 * Threading: one thread per child (two in the lines case); every wait is
 * bounded (alarm()).
 * Over 800 lines: one two-process harness (fork, memif configs, QP exchange)
 * shared by every way a program can wait without polling.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>

#include "dataplane/dp.h"

#include "proc.h"

#define WRITE_LEN 150000u
#define PINGS 500u

struct info {
	uint32_t qpn, rkey;
	uint64_t addr;
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

static char sock_path[80], ini[2][80];

#define CHECK(c, code)                                                                  \
	do {                                                                            \
		if (!(c)) {                                                             \
			fprintf(stderr, "side failed at %s:%d: %s (%s)\n", __FILE__,    \
				__LINE__, #c, strerror(errno));                         \
			_exit(code);                                                    \
		}                                                                       \
	} while (0)

static void
side_open(struct side *d)
{
	struct ibv_device **l;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int n;

	l = ibv_get_device_list(&n);
	CHECK(l && n >= 1, 20);
	d->ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	CHECK(d->ctx, 21);
	d->pd = ibv_alloc_pd(d->ctx);
	d->buf = calloc(1, 1u << 20);
	CHECK(d->pd && d->buf, 22);
	d->mr = ibv_reg_mr(d->pd, d->buf, 1u << 20,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	d->ch = ibv_create_comp_channel(d->ctx);
	CHECK(d->mr && d->ch, 23);
	d->cq = ibv_create_cq(d->ctx, 256, NULL, d->ch, 0);
	CHECK(d->cq, 24);
	ia.send_cq = ia.recv_cq = d->cq;
	d->qp = ibv_create_qp(d->pd, &ia);
	CHECK(d->qp, 25);
	CHECK(ibv_query_gid(d->ctx, 1, 0, &d->me.gid) == 0, 26);
	d->me.qpn = d->qp->qp_num;
	d->me.rkey = d->mr->rkey;
	d->me.addr = (uintptr_t)d->buf;
}

/* INIT -> RTR (resolves the peer's MAC by ARP) -> RTS. */
static void
side_connect(struct side *d, const struct info *peer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	CHECK(ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS) == 0, 30);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.hop_limit = 64;
	CHECK(ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == 0, 31);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0, 32);
}

static void
xfer(int fd, void *p, size_t n, bool out)
{
	CHECK((out ? write(fd, p, n) : read(fd, p, n)) == (ssize_t)n, 40);
}

/* Sleeps in ibv_get_cq_event until one completion; returns it. */
static struct ibv_wc
wait_one(struct side *d)
{
	struct ibv_wc wc;

	for (;;) {
		struct ibv_cq *cq;
		void *ctx;
		int k;

		CHECK(ibv_req_notify_cq(d->cq, 0) == 0, 50);
		k = ibv_poll_cq(d->cq, 1, &wc);
		CHECK(k >= 0, 51);
		if (k == 1)
			return wc;
		CHECK(ibv_get_cq_event(d->ch, &cq, &ctx) == 0, 52);
		ibv_ack_cq_events(cq, 1);
	}
}

static uint8_t
pat(size_t i)
{
	return (uint8_t)(i * 13u + (i >> 9) + 5u);
}

/* ---- passive target ---- */

static int
target_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	char c;

	side_open(&d);
	xfer(fd, &d.me, sizeof(d.me), true);
	/* blocked here while the initiator ARPs for us and moves to RTR */
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	c = 'r';
	xfer(fd, &c, 1, true);
	/* blocked again, never polling, while the WRITE lands */
	xfer(fd, &c, 1, false);
	CHECK(c == 'd', 60);
	for (size_t i = 0; i < WRITE_LEN; i++)
		CHECK(d.buf[4096 + i] == pat(i), 61);
	return 0;
}

static int
initiator_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	struct ibv_sge sge;
	struct ibv_send_wr w = { 0 }, *bad;
	struct ibv_wc wc;
	char c;

	side_open(&d);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer); /* the peer sits in read(): only its fallback answers ARP */
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &c, 1, false);
	for (size_t i = 0; i < WRITE_LEN; i++)
		d.buf[i] = pat(i);
	sge = (struct ibv_sge){ .addr = (uintptr_t)d.buf, .length = WRITE_LEN, .lkey = d.mr->lkey };
	w.wr_id = 1;
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = peer.addr + 4096;
	w.wr.rdma.rkey = peer.rkey;
	CHECK(ibv_post_send(d.qp, &w, &bad) == 0, 70);
	wc = wait_one(&d);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1, 71);
	c = 'd';
	xfer(fd, &c, 1, true);
	return 0;
}

/* ---- event-driven ping-pong ---- */

static void
post_recv1(struct side *d)
{
	struct ibv_sge sge = { .addr = (uintptr_t)d->buf + 8192, .length = 64, .lkey = d->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(d->qp, &w, &bad) == 0, 80);
}

static void
post_send1(struct side *d, uint32_t seq)
{
	struct ibv_sge sge = { .addr = (uintptr_t)d->buf, .length = 64, .lkey = d->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	memcpy(d->buf, &seq, sizeof(seq));
	CHECK(ibv_post_send(d->qp, &w, &bad) == 0, 81);
}

/* post_send1, then its completion polled (alarm() bounds the wait): a
 * successful SEND, or the side exits with @code. */
static void
send1_completed(struct side *d, uint32_t seq, int code)
{
	struct ibv_wc wc;
	int n;

	post_send1(d, seq);
	while ((n = ibv_poll_cq(d->cq, 1, &wc)) == 0)
		;
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, code);
}

static int
pingpong_side(int fd, bool first)
{
	struct side d = { 0 };
	struct info peer;
	uint32_t got_seq, posted = 0, sent = 0;

	side_open(&d);
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	post_recv1(&d);
	xfer(fd, &got_seq, 1, true); /* both connected before the first SEND */
	xfer(fd, &got_seq, 1, false);
	/* send completions come before or after the next receive: count them */
	for (uint32_t i = 0; i < PINGS; i++) {
		bool recv_done = false;

		if (first) {
			post_send1(&d, 2 * i);
			posted++;
		}
		while (!recv_done) {
			struct ibv_wc wc = wait_one(&d);

			CHECK(wc.status == IBV_WC_SUCCESS, 82);
			if (wc.opcode != IBV_WC_RECV) {
				CHECK(wc.opcode == IBV_WC_SEND, 84);
				sent++;
				continue;
			}
			memcpy(&got_seq, d.buf + 8192, sizeof(got_seq));
			CHECK(got_seq == 2 * i + (first ? 1u : 0u), 83);
			recv_done = true;
			post_recv1(&d);
			if (!first) {
				post_send1(&d, 2 * i + 1);
				posted++;
			}
		}
	}
	while (sent < posted) {
		struct ibv_wc wc = wait_one(&d);

		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, 85);
		sent++;
	}
	CHECK(posted == PINGS, 86);
	/* neither leaves before the other's last SEND is acknowledged (its ACK goes
	 * out while this side sleeps in read()) */
	xfer(fd, &got_seq, 1, true);
	xfer(fd, &got_seq, 1, false);
	return 0;
}

/* ---- a program asleep in poll / epoll on the channel's fd, not in droce ---- */

#define FD_SAMPLES 8u

/* The gap before sample @k: the sleeper's fallback thread in its timer sleeps
 * (3 ms after the last frame), then asleep on the memif wake line (150 ms). */
static unsigned int
fd_gap_us(uint32_t k)
{
	return (k / 2) % 2 == 0 ? 3000u : 150000u;
}

/*
 * Sample k: arm, poll the CQ (empty), then sleep in poll() (k even) or
 * epoll_wait() (k odd) on the non-blocking channel fd: droce runs no code in
 * this thread until the kernel wakes it, so only droce's own threads can make
 * the fd readable for the SEND the peer posts meanwhile.
 */
static int
fd_sleeper_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	struct epoll_event ev = { .events = EPOLLIN };
	int ep, fl;
	char c;

	side_open(&d);
	fl = fcntl(d.ch->fd, F_GETFL);
	CHECK(fl >= 0 && fcntl(d.ch->fd, F_SETFL, fl | O_NONBLOCK) == 0, 110);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, d.ch->fd, &ev) == 0, 111);
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	post_recv1(&d);
	for (uint32_t k = 0; k < FD_SAMPLES; k++) {
		struct ibv_wc wc;
		struct ibv_cq *cq;
		void *cctx;
		uint32_t seq;
		int n, got = 0;

		CHECK(ibv_req_notify_cq(d.cq, 0) == 0, 112);
		CHECK(ibv_poll_cq(d.cq, 1, &wc) == 0, 113); /* nothing before the peer sends */
		c = 'k';
		xfer(fd, &c, 1, true);
		if (k % 2 == 0) {
			struct pollfd pfd = { .fd = d.ch->fd, .events = POLLIN };

			n = poll(&pfd, 1, 10000);
			CHECK(n == 1 && (pfd.revents & POLLIN), 114);
		} else {
			n = epoll_wait(ep, &ev, 1, 10000);
			CHECK(n == 1 && (ev.events & EPOLLIN), 115);
		}
		/* the event is in the pipe, and its completion in the CQ */
		while (ibv_get_cq_event(d.ch, &cq, &cctx) == 0) {
			CHECK(cq == d.cq, 116);
			ibv_ack_cq_events(cq, 1);
			got++;
		}
		CHECK(errno == EAGAIN && got >= 1, 117);
		CHECK(ibv_poll_cq(d.cq, 1, &wc) == 1, 118);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 64, 119);
		memcpy(&seq, d.buf + 8192, sizeof(seq));
		CHECK(seq == 1000u + k, 120);
		post_recv1(&d);
	}
	c = 'e';
	xfer(fd, &c, 1, true);
	close(ep);
	return 0;
}

static int
fd_sender_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	char c;

	side_open(&d);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	xfer(fd, &d.me, sizeof(d.me), true);
	for (uint32_t k = 0; k < FD_SAMPLES; k++) {
		xfer(fd, &c, 1, false); /* the sleeper is (about to be) asleep */
		CHECK(c == 'k', 121);
		usleep(fd_gap_us(k));
		send1_completed(&d, 1000u + k, 122);
	}
	xfer(fd, &c, 1, false);
	CHECK(c == 'e', 123);
	return 0;
}

static int
role_fd(int fd, unsigned int s)
{
	return s == 0 ? fd_sleeper_side(fd) : fd_sender_side(fd);
}

/* ---- two threads asleep in ibv_get_cq_event on the wake lines ---- */

#define LINE_SAMPLES 6u

struct line_waiter {
	struct side *d;
	uint32_t base;
};

/* One thread: LINE_SAMPLES receives, each awaited in ibv_get_cq_event. */
static void *
line_waiter_main(void *arg)
{
	struct line_waiter *a = arg;

	for (uint32_t k = 0; k < LINE_SAMPLES; k++) {
		struct ibv_wc wc = wait_one(a->d);
		uint32_t seq;

		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 64, 130);
		memcpy(&seq, a->d->buf + 8192, sizeof(seq));
		CHECK(seq == a->base + k, 131);
		post_recv1(a->d);
	}
	return NULL;
}

/* Two QPs, each with its own channel, each awaited by its own thread. */
static int
line_sleepers_side(int fd)
{
	struct side d[2] = { 0 };
	struct info peer[2];
	struct line_waiter a[2] = { { &d[0], 2000 }, { &d[1], 3000 } };
	pthread_t t[2];
	uint64_t before;
	char c;

	for (int i = 0; i < 2; i++) {
		side_open(&d[i]);
		xfer(fd, &d[i].me, sizeof(d[i].me), true);
	}
	for (int i = 0; i < 2; i++)
		xfer(fd, &peer[i], sizeof(peer[i]), false);
	for (int i = 0; i < 2; i++) {
		side_connect(&d[i], &peer[i]);
		post_recv1(&d[i]);
	}
	usleep(300000); /* the fallback thread's lull: its lines know the peer */
	before = droce_engines_line_sleeps();
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, line_waiter_main, &a[i]) == 0, 132);
	c = 'r';
	xfer(fd, &c, 1, true);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0, 133);
	/* the waiters slept on the lines themselves (the fallback thread's way
	 * would have kept this count where it was) */
	CHECK(droce_engines_line_sleeps() > before, 134);
	c = 'e';
	xfer(fd, &c, 1, true);
	return 0;
}

/* SENDs to the two QPs in turn, with gaps that put the peer's fallback
 * thread in its timer sleeps (3 ms) and past its lull (150 ms). */
static int
line_sender_side(int fd)
{
	struct side d[2] = { 0 };
	struct info peer[2];
	char c;

	for (int i = 0; i < 2; i++) {
		side_open(&d[i]);
		xfer(fd, &peer[i], sizeof(peer[i]), false);
	}
	for (int i = 0; i < 2; i++) {
		side_connect(&d[i], &peer[i]);
		xfer(fd, &d[i].me, sizeof(d[i].me), true);
	}
	xfer(fd, &c, 1, false);
	CHECK(c == 'r', 135);
	for (uint32_t k = 0; k < LINE_SAMPLES; k++) {
		for (int i = 0; i < 2; i++) {
			usleep(k % 2 == 0 ? 3000u : 150000u);
			send1_completed(&d[i], (i == 0 ? 2000u : 3000u) + k, 136);
		}
	}
	xfer(fd, &c, 1, false);
	CHECK(c == 'e', 137);
	return 0;
}

static int
role_lines(int fd, unsigned int s)
{
	return s == 0 ? line_sleepers_side(fd) : line_sender_side(fd);
}

/* ---- a signal and a waiter asleep on the lines ---- */

static void
on_usr1(int sig)
{
	(void)sig;
}

static void
usr1_handler(bool restart)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = restart ? SA_RESTART : 0 };

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, 140);
}

/*
 * ibv_get_cq_event's read() of the channel fails with EINTR when a handler
 * without SA_RESTART interrupts it, and is restarted after one with: the
 * sleep on the wake lines must do the same (ppoll itself always fails).
 */
static int
signal_sleeper_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cctx;
	uint64_t before;
	uint32_t seq;
	pid_t me = getpid();
	char c;

	side_open(&d);
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	post_recv1(&d);
	xfer(fd, &me, sizeof(me), true);
	usleep(300000); /* the fallback thread's lull: its lines know the peer */
	before = droce_engines_line_sleeps();
	usr1_handler(false);
	CHECK(ibv_req_notify_cq(d.cq, 0) == 0, 141);
	CHECK(ibv_poll_cq(d.cq, 1, &wc) == 0, 142);
	c = 'w';
	xfer(fd, &c, 1, true);
	errno = 0;
	CHECK(ibv_get_cq_event(d.ch, &cq, &cctx) == -1 && errno == EINTR, 143);
	CHECK(droce_engines_line_sleeps() > before, 144); /* it slept on the lines */
	usr1_handler(true);
	c = 'x';
	xfer(fd, &c, 1, true);
	/* signals, then the SEND: the wait goes on through the signals */
	CHECK(ibv_get_cq_event(d.ch, &cq, &cctx) == 0 && cq == d.cq, 145);
	ibv_ack_cq_events(cq, 1);
	CHECK(ibv_poll_cq(d.cq, 1, &wc) == 1, 146);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 64, 147);
	memcpy(&seq, d.buf + 8192, sizeof(seq));
	CHECK(seq == 4242u, 148);
	c = 'e';
	xfer(fd, &c, 1, true);
	return 0;
}

static int
signal_sender_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	pid_t sleeper;
	char c;
	int k;

	side_open(&d);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &sleeper, sizeof(sleeper), false);
	xfer(fd, &c, 1, false);
	CHECK(c == 'w', 150);
	/* a signal every 100 ms until the sleeper's wait has ended with EINTR
	 * (one that lands before it sleeps interrupts nothing) */
	for (k = 0; k < 50; k++) {
		usleep(100000);
		CHECK(kill(sleeper, SIGUSR1) == 0, 151);
		if (poll(&pfd, 1, 0) == 1)
			break;
	}
	xfer(fd, &c, 1, false);
	CHECK(c == 'x', 152);
	for (k = 0; k < 3; k++) {
		usleep(100000);
		CHECK(kill(sleeper, SIGUSR1) == 0, 153);
	}
	send1_completed(&d, 4242u, 154);
	xfer(fd, &c, 1, false);
	CHECK(c == 'e', 155);
	return 0;
}

static int
role_signal(int fd, unsigned int s)
{
	return s == 0 ? signal_sleeper_side(fd) : signal_sender_side(fd);
}

/* ---- an idle passive target sleeps on its wake line, and wakes ---- */

#define SPARSE_WRITES 12u
#define SPARSE_GAP_US 80000u

/* voluntary context switches of this process's droce-fallback thread */
static long
fallback_switches(void)
{
	char path[64], line[256];
	long n = -1;
	pid_t tid = tc_task_named("droce-fallback");
	FILE *f;

	CHECK(tid != 0, 90);
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	CHECK(f != NULL, 91);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	CHECK(n >= 0, 92);
	return n;
}

static int
idle_target_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	uint64_t sleeps, deep0, deep1;
	long sw0, sw1;
	char c;

	side_open(&d);
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	c = 'r';
	xfer(fd, &c, 1, true);
	/* idle (in read(): nothing of droce runs but its threads) for a second */
	usleep(300000);
	droce_engines_fallback_sleeps(&sleeps, &deep0);
	sw0 = fallback_switches();
	usleep(1000000);
	droce_engines_fallback_sleeps(&sleeps, &deep1);
	sw1 = fallback_switches();
	fprintf(stderr, "idle target: %ld fallback wake-ups in 1 s, %llu on the wake line\n",
		sw1 - sw0, (unsigned long long)(deep1 - deep0));
	/* on a timer it wakes 500-1000 times a second; on its wake line only
	 * on the safety timer (10 a second) or a stray frame */
	CHECK(deep1 > deep0, 93);
	CHECK(sw1 - sw0 < 60, 94);
	c = 'i';
	xfer(fd, &c, 1, true);
	/* sparse WRITEs land while it sleeps on the line */
	xfer(fd, &c, 1, false);
	CHECK(c == 'd', 95);
	for (uint32_t k = 0; k < SPARSE_WRITES; k++)
		for (size_t i = 0; i < 256; i++)
			CHECK(d.buf[4096 + k * 256 + i] == pat(i + k), 96);
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int
sparse_initiator_side(int fd)
{
	struct side d = { 0 };
	struct info peer;
	uint64_t rtt[SPARSE_WRITES];
	char c;

	side_open(&d);
	xfer(fd, &peer, sizeof(peer), false);
	side_connect(&d, &peer);
	xfer(fd, &d.me, sizeof(d.me), true);
	xfer(fd, &c, 1, false);
	xfer(fd, &c, 1, false); /* the target measured its idle second */
	CHECK(c == 'i', 97);
	for (uint32_t k = 0; k < SPARSE_WRITES; k++) {
		struct ibv_sge sge = { .addr = (uintptr_t)d.buf + k * 256, .length = 256,
				       .lkey = d.mr->lkey };
		struct ibv_send_wr w = { .wr_id = k, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct ibv_wc wc;
		uint64_t t0;
		int n;

		for (size_t i = 0; i < 256; i++)
			d.buf[k * 256 + i] = pat(i + k);
		w.wr.rdma.remote_addr = peer.addr + 4096 + k * 256;
		w.wr.rdma.rkey = peer.rkey;
		usleep(SPARSE_GAP_US); /* long enough for the target to sleep again */
		t0 = now_us();
		CHECK(ibv_post_send(d.qp, &w, &bad) == 0, 98);
		while ((n = ibv_poll_cq(d.cq, 1, &wc)) == 0) /* this side polls */
			;
		CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == k, 99);
		rtt[k] = now_us() - t0;
	}
	qsort(rtt, SPARSE_WRITES, sizeof(rtt[0]), cmp_u64);
	fprintf(stderr, "sparse WRITE to a sleeping target: median %llu us, max %llu us\n",
		(unsigned long long)rtt[SPARSE_WRITES / 2],
		(unsigned long long)rtt[SPARSE_WRITES - 1]);
	/* the target's safety timer alone would make it tens of ms */
	CHECK(rtt[SPARSE_WRITES / 2] < 20000, 100);
	c = 'd';
	xfer(fd, &c, 1, true);
	return 0;
}

static int
role_idle(int fd, unsigned int s)
{
	return s == 0 ? idle_target_side(fd) : sparse_initiator_side(fd);
}

/* ---- harness ---- */

static pid_t
spawn(unsigned int s, int fd, int (*fn)(int, unsigned int))
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int rc;

		alarm(60);
		setenv("DROCE_CONFIG", ini[s], 1);
		rc = fn(fd, s);
		/* _exit() runs no atexit handler: stop droce, engines first (the
		 * fallback thread would drive them over ports being torn down; the
		 * side's verbs objects stay open), so the child leaves no runtime
		 * directory behind (issue 28's residue check) */
		droce_engines_stop();
		droce_stop();
		droce_shutdown();
		_exit(rc);
	}
	return pid;
}

static int
role_passive(int fd, unsigned int s)
{
	return s == 0 ? target_side(fd) : initiator_side(fd);
}

static int
role_pingpong(int fd, unsigned int s)
{
	return pingpong_side(fd, s == 1);
}

static void
run_pair(int (*fn)(int, unsigned int))
{
	int sv[2], st;
	pid_t pid[2];

	snprintf(sock_path, sizeof(sock_path), "/tmp/droce-progress-%ld.sock", (long)getpid());
	unlink(sock_path);
	for (unsigned int k = 0; k < 2; k++)
		tc_memif_ini(ini[k], sizeof(ini[k]), "progress", k, sock_path, 64, NULL);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid[0] = spawn(0, sv[0], fn);
	/* a memif client needs the server's socket: wait for it (bounded) */
	for (int i = 0; i < 200 && access(sock_path, F_OK) != 0; i++)
		usleep(50000);
	cr_assert_eq(access(sock_path, F_OK), 0, "the memif server made no socket");
	pid[1] = spawn(1, sv[1], fn);
	for (int s = 0; s < 2; s++) {
		cr_assert_eq(waitpid(pid[s], &st, 0), pid[s]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "side %d: %s %d", s,
			  WIFEXITED(st) ? "exit" : "signal",
			  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	close(sv[0]);
	close(sv[1]);
	unlink(sock_path);
	unlink(ini[0]);
	unlink(ini[1]);
}

TestSuite(progress_memif, .timeout = 90);

Test(progress_memif, passive_target_blocked_in_read)
{
	run_pair(role_passive);
}

Test(progress_memif, event_driven_pingpong)
{
	run_pair(role_pingpong);
}

/* Issue 23 §4: an idle process uses no CPU (its fallback thread sleeps on the
 * memif wake line, not a timer) and still wakes for the peer's frames. */
Test(progress_memif, idle_target_sleeps_on_its_wake_line_and_wakes)
{
	run_pair(role_idle);
}

/* Issue 23 §4: a program that sleeps in poll() / epoll_wait() on the
 * completion channel's fd (droce runs nothing in its thread) is woken for
 * completions from its memif peer, whether its fallback thread was in its
 * timer sleeps or asleep on the wake line; bytes and sequence checked. */
Test(progress_memif, fd_poller_wakes_for_a_peer_completion_while_idle)
{
	run_pair(role_fd);
}

/* Issue 23 §4: a thread asleep in ibv_get_cq_event sleeps on the memif wake
 * lines itself and is woken by its peer's frame (one wake-up, not the
 * fallback thread's and then its own); two such threads on two channels in
 * one process each get every event, whichever of them a frame woke. */
Test(progress_memif, get_cq_event_sleepers_wake_on_the_lines)
{
	run_pair(role_lines);
}

/* ibv_get_cq_event asleep on the wake lines and a signal: EINTR after a
 * handler without SA_RESTART (as rdma-core's read() of the channel), the
 * wait goes on after one with SA_RESTART and returns the peer's event. */
Test(progress_memif, get_cq_event_on_the_lines_and_signals)
{
	run_pair(role_signal);
}
