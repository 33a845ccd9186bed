/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues and completion channels.
 *
 * A channel is a pipe.  When an armed CQ fires, the engine's notify callback
 * writes one fixed-size record (the CQ's serial) into it, at most one per CQ
 * until ibv_get_cq_event() takes it: no lock and no allocation on the engine
 * side, and the fd works with poll/epoll.  Records name CQs by serial, not
 * pointer, so a record left behind by a destroyed CQ is skipped, never
 * dereferenced.  CQ overflow goes the same way into the context's async pipe.
 *
 * Without a system call on either side when it can (issue 23 §4): an event
 * is marked in its CQ (mem_event) instead of written when a thread waits in
 * ibv_get_cq_event's spin phase, or when an application thread's own engine
 * pass (inside ibv_poll_cq, ibv_post_send ...) made it and no thread sleeps
 * in read(): that program calls ibv_get_cq_event next, which takes the mark.
 * Such an "owed" mark that no call takes within OWED_AGE_US is written to the
 * pipe by the fallback progress thread (owed_flush), and its channel goes to
 * fd mode: the program waits on the fd (poll, epoll), so events go to the
 * pipe at once from then on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "fork.h"
#include "internal.h"

/* ---- struct droce_cqe is struct ibv_wc ---- */

#define SAME_FIELD(df, wf)                                                               \
	static_assert(offsetof(struct droce_cqe, df) == offsetof(struct ibv_wc, wf) &&   \
		      sizeof(((struct droce_cqe *)0)->df) == sizeof(((struct ibv_wc *)0)->wf), \
		      "droce_cqe." #df " vs ibv_wc." #wf)
static_assert(sizeof(struct droce_cqe) == sizeof(struct ibv_wc), "droce_cqe size");
SAME_FIELD(wr_id, wr_id);
SAME_FIELD(status, status);
SAME_FIELD(opcode, opcode);
SAME_FIELD(vendor_err, vendor_err);
SAME_FIELD(byte_len, byte_len);
SAME_FIELD(imm_or_inv, imm_data);
SAME_FIELD(imm_or_inv, invalidated_rkey);
SAME_FIELD(qp_num, qp_num);
SAME_FIELD(src_qp, src_qp);
SAME_FIELD(wc_flags, wc_flags);
SAME_FIELD(pkey_index, pkey_index);
SAME_FIELD(slid, slid);
SAME_FIELD(sl, sl);
SAME_FIELD(dlid_path_bits, dlid_path_bits);
#undef SAME_FIELD

#define SAME(d, i) static_assert((int)(d) == (int)(i), #d " == " #i)
SAME(DROCE_WC_SUCCESS, IBV_WC_SUCCESS);
SAME(DROCE_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR);
SAME(DROCE_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR);
SAME(DROCE_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
SAME(DROCE_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
SAME(DROCE_WC_MW_BIND_ERR, IBV_WC_MW_BIND_ERR);
SAME(DROCE_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR);
SAME(DROCE_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR);
SAME(DROCE_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR);
SAME(DROCE_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
SAME(DROCE_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR);
SAME(DROCE_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
SAME(DROCE_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
SAME(DROCE_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR);
SAME(DROCE_WC_FATAL_ERR, IBV_WC_FATAL_ERR);
SAME(DROCE_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);
SAME(DROCE_WC_SEND, IBV_WC_SEND);
SAME(DROCE_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE);
SAME(DROCE_WC_RDMA_READ, IBV_WC_RDMA_READ);
SAME(DROCE_WC_COMP_SWAP, IBV_WC_COMP_SWAP);
SAME(DROCE_WC_FETCH_ADD, IBV_WC_FETCH_ADD);
SAME(DROCE_WC_BIND_MW, IBV_WC_BIND_MW);
SAME(DROCE_WC_LOCAL_INV, IBV_WC_LOCAL_INV);
SAME(DROCE_WC_RECV, IBV_WC_RECV);
SAME(DROCE_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
SAME(DROCE_WC_F_GRH, IBV_WC_GRH);
SAME(DROCE_WC_F_WITH_IMM, IBV_WC_WITH_IMM);
SAME(DROCE_WC_F_WITH_INV, IBV_WC_WITH_INV);
#undef SAME

static atomic_uint_fast64_t next_serial = 1;

/* ---- completion channels ---- */

#define OWED_AGE_US 50 /* an owed mark older than this goes to the pipe */

static struct {
	pthread_mutex_t lock;
	TAILQ_HEAD(, droce_vchan) chans;
	_Atomic bool owed;  /* a mark may wait for owed_flush */
	bool hooked;
} all_chans = { .lock = PTHREAD_MUTEX_INITIALIZER,
		.chans = TAILQ_HEAD_INITIALIZER(all_chans.chans) };

static bool owed_flush(void);

struct ibv_context *(*droce_compat_ctx_1_0)(struct ibv_context *context);

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	if (droce_fk_ctx(context))
		return droce_fk_create_comp_channel(context);
	struct droce_vchan *ch;
	int fds[2];

	/* the name is the same in the 1.0 ABI, whose programs pass their 1.0
	 * context: the one it stands for (never read a 1.0 one as ours) */
	if (context != NULL && droce_compat_ctx_1_0 != NULL) {
		struct ibv_context *real = droce_compat_ctx_1_0(context);

		if (real != NULL)
			context = real;
	}
	if (context == NULL || droce_vctx_of(context) == NULL) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		free(ch);
		return NULL;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK); /* the engine must never block */
	ch->ch.context = context;
	ch->ch.fd = fds[0];
	ch->ch.refcnt = 0;
	ch->wfd = fds[1];
	pthread_mutex_init(&ch->lock, NULL);
	TAILQ_INIT(&ch->cqs);
	pthread_mutex_lock(&all_chans.lock);
	TAILQ_INSERT_TAIL(&all_chans.chans, ch, all_link);
	if (!all_chans.hooked) {
		droce_engines_set_fallback_hook(owed_flush);
		all_chans.hooked = true;
	}
	pthread_mutex_unlock(&all_chans.lock);
	return &ch->ch;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (droce_fk_ctx(channel ? channel->context : NULL))
		return droce_fk_destroy_comp_channel(channel);
	struct droce_vchan *ch = (struct droce_vchan *)channel;

	if (ch == NULL)
		return EINVAL;
	if (atomic_load(&ch->users) != 0)
		return EBUSY;
	pthread_mutex_lock(&all_chans.lock);
	TAILQ_REMOVE(&all_chans.chans, ch, all_link);
	pthread_mutex_unlock(&all_chans.lock);
	close(ch->ch.fd);
	close(ch->wfd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/* ---- engine callbacks: a write to a non-blocking pipe, nothing else ---- */

/*
 * write() from an engine callback: the thread may be driving an engine, so
 * it must not be cancelled here (pthread_cancel), or the engine stays
 * taken for ever (issue 28 §3); write() is a cancellation point.
 */
static ssize_t
write_nocancel(int fd, const void *buf, size_t n)
{
	int old;
	ssize_t w;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	w = write(fd, buf, n);
	pthread_setcancelstate(old, NULL);
	return w;
}

/* The event of @cq into its channel's pipe (already counted in posted). */
static void
event_to_pipe(struct droce_vcq *cq)
{
	struct droce_vevent rec = { .serial = cq->serial };

	if (write_nocancel(cq->chan->wfd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec)) {
		atomic_fetch_sub_explicit(&cq->chan->posted, 1, memory_order_relaxed);
		atomic_store(&cq->notify_pending, 0); /* pipe full: cannot happen below 4096 CQs */
	}
}

/*
 * One event of @cq.  @own_call: made inside a verb call of the program (an
 * application thread's engine pass, or ibv_req_notify_cq on a CQ that already
 * held completions), which may take it in memory with its next
 * ibv_get_cq_event.
 */
static void
cq_event(struct droce_vcq *cq, bool own_call)
{
	struct droce_vchan *ch = cq->chan;
	bool owed;

	if (ch == NULL || atomic_exchange(&cq->notify_pending, 1) != 0)
		return;
	atomic_fetch_add_explicit(&ch->posted, 1, memory_order_release);
	/*
	 * Marked in memory while a waiter spins, or owed to the application
	 * thread whose pass made it.  Against a waiter ending its spin (spinners--)
	 * or going to sleep (sleepers++), each followed by one look at the marks
	 * (take_mem_event), this is Dekker's pattern in sequentially consistent
	 * operations: mark, then look at spinners and sleepers; at least one side
	 * sees the other, and the exchange gives the event to exactly one of them.
	 */
	owed = own_call && !atomic_load_explicit(&ch->fd_mode, memory_order_relaxed) &&
	       droce_engines_fallback_on() && !ch->remote;
	if (owed || (!ch->remote && atomic_load(&ch->spinners) != 0)) {
		atomic_store_explicit(&cq->mark_tsc, rte_rdtsc(), memory_order_relaxed);
		atomic_store(&cq->mem_event, 1);
		if (atomic_load(&ch->spinners) != 0)
			return; /* the spinner takes it (take_mem_event, after its spin) */
		if (owed && atomic_load(&ch->sleepers) == 0) {
			atomic_store(&all_chans.owed, true);
			droce_engines_fallback_wake(); /* it may sleep on its wake lines */
			return;
		}
		if (atomic_exchange(&cq->mem_event, 0) == 0)
			return; /* a waiter took it */
	}
	event_to_pipe(cq);
}

static void
cq_notify(struct droce_cq *dcq, void *arg)
{
	RTE_SET_USED(dcq);
	cq_event(arg, droce_engines_in_app_pass());
}

/*
 * The fallback thread's hook: an owed mark no ibv_get_cq_event call took
 * within OWED_AGE_US goes to the pipe, and its channel to fd mode.
 */
static bool
owed_flush(void)
{
	uint64_t now, age = rte_get_tsc_hz() / 1000000 * OWED_AGE_US;
	struct droce_vchan *ch;
	bool again = false;

	if (!atomic_load_explicit(&all_chans.owed, memory_order_relaxed))
		return false;
	atomic_store(&all_chans.owed, false);
	now = rte_rdtsc();
	pthread_mutex_lock(&all_chans.lock);
	TAILQ_FOREACH(ch, &all_chans.chans, all_link) {
		struct droce_vcq *cq;

		pthread_mutex_lock(&ch->lock);
		TAILQ_FOREACH(cq, &ch->cqs, chan_link) {
			if (atomic_load(&cq->mem_event) == 0)
				continue;
			if (atomic_load(&ch->spinners) != 0 ||
			    now - atomic_load_explicit(&cq->mark_tsc, memory_order_relaxed) < age) {
				again = true;
				continue;
			}
			if (atomic_exchange(&cq->mem_event, 0) != 0) {
				atomic_store_explicit(&ch->fd_mode, true, memory_order_relaxed);
				event_to_pipe(cq);
			}
		}
		pthread_mutex_unlock(&ch->lock);
	}
	pthread_mutex_unlock(&all_chans.lock);
	if (again)
		atomic_store(&all_chans.owed, true);
	return again;
}

static void
cq_error(struct droce_cq *dcq, void *arg)
{
	struct droce_vcq *cq = arg;
	struct droce_vevent rec = { .serial = cq->serial, .type = IBV_EVENT_CQ_ERR };

	RTE_SET_USED(dcq);
	if (atomic_exchange(&cq->err_reported, 1) != 0)
		return;
	if (write_nocancel(cq->ctx->async_wfd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec))
		atomic_store(&cq->err_reported, 0);
}

/* ---- CQs ---- */

struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	if (droce_fk_ctx(context))
		return droce_fk_create_cq(context, cqe, cq_context, channel, comp_vector);
	struct droce_vcq *cq = droce_verbs_create_cq(context, cqe, cq_context, channel,
						     comp_vector, 0);

	return cq ? &cq->cq : NULL;
}

struct droce_vcq *
droce_verbs_create_cq(struct ibv_context *context, int cqe, void *cq_context,
		      struct ibv_comp_channel *channel, int comp_vector, uint32_t dp_flags)
{
	struct droce_vctx *x = context ? droce_vctx_of(context) : NULL;
	struct droce_vchan *ch = (struct droce_vchan *)channel;
	struct droce_vcq *cq;

	if (x == NULL || cqe < 1 || (uint32_t)cqe > DROCE_DP_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors ||
	    (ch != NULL && ch->ch.context != context)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ctx = x;
	cq->chan = ch;
	cq->serial = atomic_fetch_add(&next_serial, 1);
	cq->dcq = droce_cq_create_ex((uint32_t)cqe, cq_notify, cq_error, cq, dp_flags);
	if (cq->dcq == NULL) {
		int e = errno ? errno : ENOMEM;

		free(cq);
		errno = e;
		return NULL;
	}
	cq->cq.context = context;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.handle = (uint32_t)cq->serial;
	cq->cq.cqe = (int)droce_cq_capacity(cq->dcq);
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);

	pthread_mutex_lock(&x->lock);
	TAILQ_INSERT_TAIL(&x->cqs, cq, ctx_link);
	pthread_mutex_unlock(&x->lock);
	if (ch != NULL) {
		pthread_mutex_lock(&ch->lock);
		TAILQ_INSERT_TAIL(&ch->cqs, cq, chan_link);
		ch->ch.refcnt++;
		pthread_mutex_unlock(&ch->lock);
		atomic_fetch_add(&ch->users, 1);
	}
	return cq;
}

int
ibv_destroy_cq(struct ibv_cq *ibcq)
{
	if (droce_fk_ctx(ibcq ? ibcq->context : NULL))
		return droce_fk_destroy_cq(ibcq);
	struct droce_vcq *cq = (struct droce_vcq *)ibcq;
	struct droce_vchan *ch;
	uint32_t comp, async;

	if (cq == NULL)
		return EINVAL;
	if (atomic_load(&cq->users) != 0)
		return EBUSY;
	ch = cq->chan;

	/* unlink first: no event can be handed out for it from now on */
	pthread_mutex_lock(&cq->ctx->lock);
	TAILQ_REMOVE(&cq->ctx->cqs, cq, ctx_link);
	async = cq->async_reported;
	pthread_mutex_unlock(&cq->ctx->lock);
	comp = 0;
	if (ch != NULL) {
		pthread_mutex_lock(&ch->lock);
		TAILQ_REMOVE(&ch->cqs, cq, chan_link);
		if (atomic_exchange(&cq->mem_event, 0) != 0) /* an event no one will take now */
			atomic_fetch_add_explicit(&ch->taken, 1, memory_order_relaxed);
		ch->ch.refcnt--;
		comp = cq->comp_reported;
		pthread_mutex_unlock(&ch->lock);
	}
	/* as rdma-core: wait until every event handed out was acknowledged */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != comp || ibcq->async_events_completed != async)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);

	droce_cq_destroy(cq->dcq);
	if (ch != NULL)
		atomic_fetch_sub(&ch->users, 1);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq);
	return 0;
}

/* A record is in the channel's pipe (or about to be: counted before the write). */
static bool
chan_ready(const void *arg)
{
	const struct droce_vchan *ch = arg;

	return atomic_load_explicit(&ch->posted, memory_order_acquire) !=
	       atomic_load_explicit(&ch->taken, memory_order_relaxed);
}

/*
 * Co-located engines: the thread first drives them itself while it waits
 * (droce_engines_wait_spin: [engines] wait_spin_us, adapted to how soon this
 * channel's events come), and only when that runs out hands them to the
 * fallback thread and sleeps in read().  A channel whose fd the program made
 * non-blocking gets EAGAIN after the spin, as from rdma-core.
 */
/* Delivery of one event of @cq, under the channel lock. */
static void
event_taken_locked(struct droce_vchan *ch, struct droce_vcq *cq)
{
	atomic_fetch_add_explicit(&ch->taken, 1, memory_order_relaxed);
	cq->comp_reported++;
	atomic_store(&cq->notify_pending, 0);
}

/* The cleanup of a waiter cancelled in read(). */
static void
sleeper_gone(void *arg)
{
	droce_engines_waiting(false);
	atomic_fetch_sub(&((struct droce_vchan *)arg)->sleepers, 1);
}

/*
 * An event handed over in memory (cq_notify's mark), or NULL.  A waiter
 * takes one after its spin; a mark of another CQ of the channel, made in the
 * same spin, is left owed: the fallback thread writes it to the pipe if no
 * call takes it within OWED_AGE_US.
 */
static struct droce_vcq *
take_mem_event(struct droce_vchan *ch)
{
	struct droce_vcq *cq, *got = NULL;
	bool more = false;

	pthread_mutex_lock(&ch->lock);
	TAILQ_FOREACH(cq, &ch->cqs, chan_link) {
		if (atomic_load(&cq->mem_event) == 0)
			continue;
		if (got != NULL) {
			more = true;
			break;
		}
		if (atomic_exchange(&cq->mem_event, 0) != 0) {
			event_taken_locked(ch, cq);
			got = cq;
		}
	}
	pthread_mutex_unlock(&ch->lock);
	if (more && droce_engines_fallback_on()) {
		atomic_store(&all_chans.owed, true);
		droce_engines_fallback_wake();
	}
	return got;
}

/*
 * One sleep of a waiter on the memif wake lines (droce_engines_line_sleep),
 * and after a frame woke it, its drive of the engines as a spinner: an event
 * made then is marked in memory (cq_event), and a mark left after the drive
 * is taken by the caller's take_mem_event (the spin's pattern: spinners up
 * before sleepers down, sleepers up before spinners down).  -1: the lines
 * cannot wake this thread; 1: the fd is readable; 2: a signal ends the wait
 * (EINTR); 0: look in memory.
 */
#define LINE_SLEEP_MS 100 /* the longest sleep on the lines before a look */
#define LINE_DRIVE_US 10  /* after a wake, driving ends once idle this long */

/*
 * Whether a sleep interrupted by a signal ends the call with EINTR, as
 * rdma-core's read() of the channel would: read() is restarted after a
 * handler installed with SA_RESTART and fails with EINTR after one without,
 * where ppoll always fails.  Which handler ran is not known here: EINTR when
 * any installed handler of a signal that can interrupt a sleep (not a
 * fault's) lacks SA_RESTART (a program that stops a blocked wait with
 * alarm(), as qperf and perftest's duration mode do, installs one).
 */
static bool
signal_ends_wait(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		/* a fault's handler (a crash reporter) interrupts no sleep */
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
		    sig == SIGFPE || sig == SIGILL || sig == SIGABRT || sig == SIGTRAP ||
		    sig == SIGSYS || sigaction(sig, NULL, &sa) != 0)
			continue;
		if (!(sa.sa_flags & SA_SIGINFO) &&
		    (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return true;
	}
	return false;
}

static int
line_wait(struct droce_vchan *ch)
{
	int ls = droce_engines_line_sleep(ch->ch.fd, LINE_SLEEP_MS, chan_ready, ch);

	if (ls == 2) {
		if (signal_ends_wait())
			return 2;
		ls = 0; /* restarted, as read() would be: look first */
	}
	if (ls != 0)
		return ls;
	atomic_fetch_add(&ch->spinners, 1);
	atomic_fetch_sub(&ch->sleepers, 1);
	(void)droce_engines_drive(chan_ready, ch, LINE_DRIVE_US);
	atomic_fetch_add(&ch->sleepers, 1);
	atomic_fetch_sub(&ch->spinners, 1);
	return 0;
}

/* A waiter's event of @cq handed to the caller: it sleeps no more, its
 * spin budget learns from the wait. */
static int
event_out(struct droce_vchan *ch, const struct droce_wait *w, struct droce_vcq *cq,
	  struct ibv_cq **cq_out, void **cq_context)
{
	atomic_fetch_sub(&ch->sleepers, 1);
	droce_engines_wait_end(&ch->spin_budget, w, true);
	*cq_out = &cq->cq;
	*cq_context = cq->cq.cq_context;
	return 0;
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_out, void **cq_context)
{
	if (droce_fk_ctx(channel ? channel->context : NULL))
		return droce_fk_get_cq_event(channel, cq_out, cq_context);
	struct droce_vchan *ch = (struct droce_vchan *)channel;
	struct droce_wait w;
	struct droce_vcq *mcq;
	bool ready, lines;

	if (!chan_ready(ch) && atomic_load_explicit(&ch->fd_mode, memory_order_relaxed))
		atomic_store_explicit(&ch->fd_mode, false, memory_order_relaxed); /* a waiter */
	atomic_fetch_add(&ch->spinners, 1);
	ready = droce_engines_wait_spin(&ch->spin_budget, &w, chan_ready, ch);
	atomic_fetch_add(&ch->sleepers, 1); /* before the spin ends: see cq_notify */
	atomic_fetch_sub(&ch->spinners, 1);
	mcq = take_mem_event(ch);
	if (mcq != NULL)
		return event_out(ch, &w, mcq, cq_out, cq_context);
	/* a non-blocking fd gets EAGAIN from read, as from rdma-core */
	lines = !ready && !(fcntl(channel->fd, F_GETFL) & O_NONBLOCK);
	for (;;) {
		struct droce_vevent rec;
		struct droce_vcq *cq;
		ssize_t n;
		int ls = -1;

		/* asleep on the wake lines itself where it can: its peer's frame
		 * wakes it, it drives the engines and takes its event in memory */
		if (!ready && lines)
			ls = line_wait(ch);
		if (ls == 2) {
			atomic_fetch_sub(&ch->sleepers, 1);
			droce_engines_wait_end(&ch->spin_budget, &w, false);
			errno = EINTR;
			return -1;
		}
		if (ls == 0) {
			if ((mcq = take_mem_event(ch)) != NULL)
				return event_out(ch, &w, mcq, cq_out, cq_context);
			if (!chan_ready(ch))
				continue;
			/* an event in the pipe: read it */
		}
		if (ls < 0) {
			lines = false; /* not for this call: the fallback's way */
			if (!ready)
				droce_engines_blocking(); /* co-located engines: the fallback drives them now */
		}
		ready = false;
		droce_engines_waiting(true);
		pthread_cleanup_push(sleeper_gone, ch); /* read() is a cancellation point */
		n = read(channel->fd, &rec, sizeof(rec));
		pthread_cleanup_pop(0);
		droce_engines_waiting(false);
		if (n < 0) {
			atomic_fetch_sub(&ch->sleepers, 1);
			droce_engines_wait_end(&ch->spin_budget, &w, false);
			return -1;
		}
		if (n != sizeof(rec)) {
			atomic_fetch_sub(&ch->sleepers, 1);
			errno = EIO;
			return -1;
		}
		pthread_mutex_lock(&ch->lock);
		TAILQ_FOREACH(cq, &ch->cqs, chan_link)
			if (cq->serial == rec.serial)
				break;
		if (cq != NULL)
			event_taken_locked(ch, cq);
		else
			atomic_fetch_add_explicit(&ch->taken, 1, memory_order_relaxed);
		pthread_mutex_unlock(&ch->lock);
		if (cq == NULL)
			continue; /* destroyed since */
		return event_out(ch, &w, cq, cq_out, cq_context);
	}
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ibv_resize_cq(3): the CQ holds at least @cqe completions afterwards (cq->cqe
 * says how many), and the ones not yet polled stay, in order.  EINVAL for
 * @cqe below 1, above max_cqe or below the completions outstanding (the
 * CQ is unchanged then), ENOMEM; returned and in errno. */
int
ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	if (droce_fk_ctx(ibcq ? ibcq->context : NULL)) {
		errno = EOPNOTSUPP; /* not in a forked child yet */
		return EOPNOTSUPP;
	}
	struct droce_vcq *cq = (struct droce_vcq *)ibcq;
	int rc;

	if (cq == NULL || cqe < 1) {
		errno = EINVAL;
		return EINVAL;
	}
	rc = droce_cq_resize(cq->dcq, (uint32_t)cqe);
	if (rc != 0) {
		errno = rc;
		return rc;
	}
	cq->cq.cqe = (int)droce_cq_capacity(cq->dcq);
	return 0;
}

/* ---- fast path: straight into the dataplane ---- */

int
droce_verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	if (n <= 0)
		return 0;
	return droce_cq_poll(((struct droce_vcq *)cq)->dcq, n, (struct droce_cqe *)wc);
}

/* A CQ armed while it already holds completions has its event at once (as
 * mlx5): a program that polled it empty, then armed it, is not left asleep by
 * a completion that came between the two (UCX's idle interfaces). */
int
droce_verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct droce_vcq *vcq = (struct droce_vcq *)cq;

	if (droce_cq_arm(vcq->dcq, solicited_only != 0) > 0)
		cq_event(vcq, true);
	return 0;
}
