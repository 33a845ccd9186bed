/* SPDX-License-Identifier: BSD-3-Clause
 * life_proc: a droce process for the life suite's tests (issue 28) to end in
 * various ways.  Starts droce through the verbs API (DROCE_CONFIG or the
 * embedded loopback config), prints "ready PID DIR" (DIR: the EAL runtime
 * directory droce claimed) and then, by MODE:
 *
 *   idle [S]   waits for a signal, at most S seconds (default 30), exit 0
 *   exit       exit(0) at once, devices open
 *   return     returns from main, devices open
 *   fork       fork()s a child that exits (exit(0)); prints "child-exited"
 *              and whether the directory is still there ("dir-kept" or
 *              "dir-gone"), then exits
 *   fork-verbs with a UD QP in RTS and a CQ, fork()s a child that uses them:
 *              prints "child post=R destroy=R poll=N ms=T" (each verb's
 *              return, T the time they took: the child must not wait for
 *              an engine that does not run in it), then the parent
 *              destroys its QP (its engine must still run) and prints
 *              "parent destroy=R"
 *   exit-busy  UD traffic from device 0 to device 1 driven by a second
 *              thread; after 300 ms the main thread prints "busy sent=N
 *              received=M" and calls exit(0) with everything alive
 *   cancel     the same traffic in a thread that also waits in
 *              ibv_get_cq_event; after 300 ms the main thread cancels it
 *              (deferred: at whatever cancellation point it is in, inside
 *              a verb or not), joins it, then sends and receives 100 more
 *              messages itself: "after-cancel received=M"
 *   cancel-waits  three threads block in rdma_get_cm_event, ibv_get_cq_event
 *              (an armed CQ nothing completes on) and ibv_get_async_event;
 *              the main thread cancels them, joins them (10 s at most),
 *              then destroys what they waited on: "cancel-waits joined=N
 *              cm-channel=closed|kept cq=R comp-channel=R close=R" (a
 *              channel whose reader count stayed raised is kept open for
 *              ever by rdma_destroy_event_channel); exit 0 when all is well
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "pmd_glue/residue.h"

static struct ibv_context *
open_first(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	if (list == NULL || list[0] == NULL) {
		fprintf(stderr, "life_proc: no device: %s\n", strerror(errno));
		exit(2);
	}
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL) {
		fprintf(stderr, "life_proc: ibv_open_device: %s\n", strerror(errno));
		exit(2);
	}
	ibv_free_device_list(list);
	return ctx;
}

static bool
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* UD from device 0 to device 1 (the embedded ring pair). */
struct traffic {
	struct ibv_context *c0, *c1;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq0, *cq1;
	struct ibv_qp *qp0, *qp1;
	struct ibv_mr *mr0, *mr1;
	struct ibv_ah *ah;
	char *b0, *b1;
	volatile unsigned long sent, received;
	unsigned int out;
	bool block; /* the driving thread also waits in ibv_get_cq_event */
};

static struct ibv_qp *
ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 64, .max_recv_wr = 128, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11 };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (qp == NULL ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) ||
	    ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR }, IBV_QP_STATE) ||
	    ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS }, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		fprintf(stderr, "life_proc: UD QP: %s\n", strerror(errno));
		exit(3);
	}
	return qp;
}

static void
t_recv(struct traffic *t, uint64_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(t->b1 + slot * 256), .length = 256, .lkey = t->mr1->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	ibv_post_recv(t->qp1, &wr, &bad);
}

static void
t_setup(struct traffic *t, struct ibv_context *c0)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_pd *pd0, *pd1;
	union ibv_gid gid;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };

	memset(t, 0, sizeof(*t));
	t->c0 = c0;
	if (list == NULL || list[0] == NULL || list[1] == NULL ||
	    (t->c1 = ibv_open_device(list[1])) == NULL)
		exit(3);
	ibv_free_device_list(list);
	pd0 = ibv_alloc_pd(c0);
	pd1 = ibv_alloc_pd(t->c1);
	t->ch = ibv_create_comp_channel(t->c1);
	t->cq0 = ibv_create_cq(c0, 256, NULL, NULL, 0);
	t->cq1 = ibv_create_cq(t->c1, 256, NULL, t->ch, 0);
	t->b0 = calloc(64, 256);
	t->b1 = calloc(128, 256);
	if (!pd0 || !pd1 || !t->ch || !t->cq0 || !t->cq1 || !t->b0 || !t->b1)
		exit(3);
	t->mr0 = ibv_reg_mr(pd0, t->b0, 64 * 256, IBV_ACCESS_LOCAL_WRITE);
	t->mr1 = ibv_reg_mr(pd1, t->b1, 128 * 256, IBV_ACCESS_LOCAL_WRITE);
	t->qp0 = ud_qp(pd0, t->cq0);
	t->qp1 = ud_qp(pd1, t->cq1);
	if (ibv_query_gid(t->c1, 1, 0, &gid) != 0)
		exit(3);
	aa.grh.dgid = gid;
	aa.grh.hop_limit = 64;
	t->ah = ibv_create_ah(pd0, &aa);
	if (!t->mr0 || !t->mr1 || !t->ah)
		exit(3);
	for (uint64_t i = 0; i < 128; i++)
		t_recv(t, i);
}

/* One round: fill the send queue, poll both CQs, repost receives. */
static void
t_step(struct traffic *t)
{
	struct ibv_wc wc[32];
	int n, i;

	while (t->out < 32) {
		struct ibv_sge sge = { .addr = (uintptr_t)t->b0, .length = 64, .lkey = t->mr0->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = t->ah, .remote_qpn = t->qp1->qp_num, .remote_qkey = 0x11 },
		}, *bad;

		if (ibv_post_send(t->qp0, &wr, &bad) != 0)
			break;
		t->out++;
		t->sent++;
	}
	n = ibv_poll_cq(t->cq0, 32, wc);
	for (i = 0; i < n; i++)
		t->out--;
	n = ibv_poll_cq(t->cq1, 32, wc);
	for (i = 0; i < n; i++) {
		if (wc[i].status == IBV_WC_SUCCESS)
			t->received++;
		t_recv(t, wc[i].wr_id);
	}
}

static void *
t_thread(void *arg)
{
	struct traffic *t = arg;

	for (;;) {
		t_step(t);
		if (t->block) {
			struct ibv_cq *cq;
			void *cctx;

			/* armed, then a blocking wait: cancellation points inside verbs */
			if (ibv_req_notify_cq(t->cq1, 0) == 0 && ibv_get_cq_event(t->ch, &cq, &cctx) == 0)
				ibv_ack_cq_events(cq, 1);
		}
		pthread_testcancel();
	}
	return NULL;
}

static int
exit_busy(struct ibv_context *ctx, bool cancel)
{
	static struct traffic t;
	pthread_t th;
	unsigned long before;

	t_setup(&t, ctx);
	t.block = cancel;
	if (pthread_create(&th, NULL, t_thread, &t) != 0)
		return 3;
	usleep(300 * 1000);
	printf("busy sent=%lu received=%lu\n", t.sent, t.received);
	fflush(stdout);
	if (!cancel)
		exit(0); /* everything alive, a thread in the middle of verbs */
	pthread_cancel(th);
	pthread_join(th, NULL);
	before = t.received;
	for (int i = 0; i < 200000 && t.received < before + 100; i++)
		t_step(&t);
	printf("after-cancel received=%lu\n", t.received - before);
	fflush(stdout);
	return t.received >= before + 100 ? 0 : 6;
}

/* ---- cancel-waits ---- */

struct waits {
	struct rdma_event_channel *cm;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_context *ctx;
	volatile int entered; /* threads about to block */
};

static void *
wait_cm(void *arg)
{
	struct waits *w = arg;
	struct rdma_cm_event *ev;

	__atomic_fetch_add(&w->entered, 1, __ATOMIC_SEQ_CST);
	if (rdma_get_cm_event(w->cm, &ev) == 0) /* nothing ever comes */
		rdma_ack_cm_event(ev);
	return NULL;
}

static void *
wait_cq(void *arg)
{
	struct waits *w = arg;
	struct ibv_cq *cq;
	void *cctx;

	__atomic_fetch_add(&w->entered, 1, __ATOMIC_SEQ_CST);
	if (ibv_get_cq_event(w->ch, &cq, &cctx) == 0)
		ibv_ack_cq_events(cq, 1);
	return NULL;
}

static void *
wait_async(void *arg)
{
	struct waits *w = arg;
	struct ibv_async_event ae;

	__atomic_fetch_add(&w->entered, 1, __ATOMIC_SEQ_CST);
	if (ibv_get_async_event(w->ctx, &ae) == 0)
		ibv_ack_async_event(&ae);
	return NULL;
}

static int
cancel_waits(struct ibv_context *ctx)
{
	static void *(*const fn[])(void *) = { wait_cm, wait_cq, wait_async };
	struct waits w = { .ctx = ctx };
	pthread_t th[3];
	struct stat before, after;
	int joined = 0, cmfd, cq_rc, ch_rc, close_rc;
	bool kept;

	w.cm = rdma_create_event_channel();
	w.ch = ibv_create_comp_channel(ctx);
	w.cq = w.ch ? ibv_create_cq(ctx, 16, NULL, w.ch, 0) : NULL;
	if (w.cm == NULL || w.cq == NULL || ibv_req_notify_cq(w.cq, 0) != 0)
		return 3;
	cmfd = w.cm->fd;
	if (fstat(cmfd, &before) != 0)
		return 3;
	for (unsigned int i = 0; i < 3; i++)
		if (pthread_create(&th[i], NULL, fn[i], &w) != 0)
			return 3;
	while (__atomic_load_n(&w.entered, __ATOMIC_SEQ_CST) < 3)
		usleep(1000);
	usleep(200 * 1000); /* inside their reads */
	for (unsigned int i = 0; i < 3; i++) {
		struct timespec ts;

		pthread_cancel(th[i]);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		joined += pthread_timedjoin_np(th[i], NULL, &ts) == 0;
	}
	rdma_destroy_event_channel(w.cm);
	/* closed: the descriptor is gone, or is another file by now */
	kept = fstat(cmfd, &after) == 0 && after.st_ino == before.st_ino &&
	       after.st_dev == before.st_dev;
	cq_rc = ibv_destroy_cq(w.cq);
	ch_rc = ibv_destroy_comp_channel(w.ch);
	close_rc = ibv_close_device(ctx);
	printf("cancel-waits joined=%d cm-channel=%s cq=%d comp-channel=%d close=%d\n", joined,
	       kept ? "kept" : "closed", cq_rc, ch_rc, close_rc);
	fflush(stdout);
	return joined == 3 && !kept && cq_rc == 0 && ch_rc == 0 && close_rc == 0 ? 0 : 5;
}

static long
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static int
fork_verbs(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11 };
	struct ibv_qp *qp;
	static char buf[64];
	pid_t pid;
	int st;

	if (pd == NULL || cq == NULL)
		return 3;
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (qp == NULL ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) ||
	    ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR }, IBV_QP_STATE) ||
	    ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS }, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return 4;
	pid = fork();
	if (pid < 0)
		return 5;
	if (pid == 0) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = sizeof(buf), .lkey = 0 };
		struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad;
		struct ibv_wc wc;
		struct timespec t0;
		int post, destroy, poll;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		post = ibv_post_recv(qp, &rwr, &rbad);
		poll = ibv_poll_cq(cq, 1, &wc);
		destroy = ibv_destroy_qp(qp);
		printf("child post=%d destroy=%d poll=%d ms=%ld\n", post, destroy, poll, ms_since(&t0));
		fflush(stdout);
		exit(0);
	}
	waitpid(pid, &st, 0);
	printf("parent destroy=%d child-status=%d\n", ibv_destroy_qp(qp), st);
	fflush(stdout);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

int
main(int argc, char **argv)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
	const char *mode = argc > 1 ? argv[1] : "idle";
	struct ibv_context *ctx;
	char dir[4096];

	/* As a program started from a shell: the test runner may ignore some. */
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	ctx = open_first();

	snprintf(dir, sizeof(dir), "%s", droce_residue_dir());
	printf("ready %ld %s\n", (long)getpid(), dir[0] ? dir : "-");
	fflush(stdout);
	if (strcmp(mode, "exit") == 0)
		exit(0);
	if (strcmp(mode, "return") == 0)
		return 0;
	if (strcmp(mode, "fork") == 0) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			return 3;
		if (pid == 0)
			exit(0); /* runs the inherited exit handler: it must remove nothing */
		waitpid(pid, &st, 0);
		printf("child-exited %s\n", exists(dir) ? "dir-kept" : "dir-gone");
		fflush(stdout);
		ibv_close_device(ctx);
		return 0;
	}
	if (strcmp(mode, "fork-verbs") == 0)
		return fork_verbs(ctx);
	if (strcmp(mode, "cancel-waits") == 0)
		return cancel_waits(ctx);
	if (strcmp(mode, "exit-busy") == 0 || strcmp(mode, "cancel") == 0)
		return exit_busy(ctx, strcmp(mode, "cancel") == 0);
	if (strcmp(mode, "idle") == 0) {
		int s = argc > 2 ? atoi(argv[2]) : 30;

		while (s-- > 0)
			sleep(1);
		return 0;
	}
	fprintf(stderr, "life_proc: unknown mode %s\n", mode);
	return 2;
}
