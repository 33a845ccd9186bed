/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: The bandwidth run (every topology): -t outstanding per QP, CQ moderation,
 * post lists, peak and average rates, UC/UD arrivals and losses.
 */
#include "perf.h"

/* ---- bandwidth ---- */

static int
cmp_gap(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The gaps between successive completions polled (pt[0] is the start): their
 * 99th percentile and maximum, in usec.  A stall under loss shows here. */
void
completion_gaps(const struct peak_point *pt, size_t n, struct result *r)
{
	uint64_t *g;

	r->gap_p99 = r->gap_max = 0;
	if (n < 2 || (g = malloc((n - 1) * sizeof(*g))) == NULL)
		return;
	for (size_t i = 1; i < n; i++)
		g[i - 1] = pt[i].tsc - pt[i - 1].tsc;
	qsort(g, n - 1, sizeof(*g), cmp_gap);
	r->gap_p99 = (double)g[(size_t)ceil(0.99 * (double)(n - 1)) - 1] * 1e6 / (double)tsc_hz;
	r->gap_max = (double)g[n - 2] * 1e6 / (double)tsc_hz;
	free(g);
}

/* Best rate over any stretch of the run holding at least @min_msgs messages
 * (a sixteenth of them, and at least one CQ moderation round of every QP). */
double
peak_bw(const struct peak_point *pt, size_t n, uint64_t size, uint64_t min_msgs)
{
	double best = 0;
	size_t j = 0;

	if (n < 2)
		return 0;
	if (min_msgs < (pt[n - 1].msgs - pt[0].msgs) / 16)
		min_msgs = (pt[n - 1].msgs - pt[0].msgs) / 16;
	for (size_t i = 0; i < n; i++) {
		uint64_t dt;
		double bw;

		if (j <= i)
			j = i + 1;
		while (j < n && pt[j].msgs - pt[i].msgs < min_msgs)
			j++;
		if (j >= n)
			break;
		dt = pt[j].tsc - pt[i].tsc;
		if (dt == 0)
			continue;
		bw = (double)(pt[j].msgs - pt[i].msgs) * (double)size / secs(dt);
		if (bw > best)
			best = bw;
	}
	return best;
}

/*
 * UC and UD on the loopback: the receiving side is in this process, so the
 * run follows what arrives there (SEND: receive completions; UC WRITE with
 * --check: the verified responder memory), not only what was sent.
 */
bool
track_arrivals(void)
{
	return o.qpt != IBV_QPT_RC && plays(1) &&
	       (o.verb == V_SEND || (o.verb == V_WRITE && o.check));
}

/* Messages of @p that arrived or are known lost. */
uint64_t
resolved(const struct pair *p)
{
	return o.verb == V_SEND ? p->recv_seen[1] + p->lost[1] : p->checked;
}

uint64_t
msgs_sent(void)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < o.qps; i++)
		n += R.p[i].posted;
	return n;
}

/* No arrival for this long: what is still out is lost (UC/UD). */
uint64_t
quiet_cycles(void)
{
	return (uint64_t)(fmin(DRAIN_QUIET, o.timeout / 2) * (double)tsc_hz);
}


bool
sender_idle(const struct pair *p, uint64_t window)
{
	uint64_t n = RTE_MIN((uint64_t)o.post_list, p->target - p->posted);

	return p->posted >= p->target || p->posted - p->completed + n > R.depth ||
	       (p->posted > resolved(p) && p->posted - resolved(p) + n > window);
}

/* UC/UD, loopback: nothing arrived on @p for a while: its messages still
 * out will not come (the receiver keeps counting if one does). */
void
give_up_on(struct pair *p, uint32_t pi, uint64_t now)
{
	if (o.verb == V_SEND) {
		if (p->posted > resolved(p))
			p->lost[1] += p->posted - resolved(p);
		if (p->next_seq[1] < p->posted) {
			/* if one comes after all: see check_received */
			if (!p->gave_up)
				p->late_from = p->next_seq[1];
			p->gave_up = true;
			p->next_seq[1] = p->posted;
		}
	} else {
		uc_write_verify(p, pi, true, now);
	}
	p->last_arrival = now;
}

/* The pairs that may post: a FIFO of indices in R.ready (see struct run). */
void
bw_wake(uint32_t pi)
{
	struct pair *p = &R.p[pi];
	uint32_t at;

	if (p->queued)
		return;
	p->queued = true;
	at = R.ready_head + R.ready_n++;
	R.ready[at >= o.qps ? at - o.qps : at] = pi;
}

static uint32_t
ready_pop(void)
{
	uint32_t pi = R.ready[R.ready_head];

	R.ready_head = R.ready_head + 1 == o.qps ? 0 : R.ready_head + 1;
	R.ready_n--;
	R.p[pi].queued = false;
	return pi;
}

static void
wake_all(void)
{
	for (uint32_t i = 0; i < o.qps; i++)
		bw_wake(i);
}

/* Is pair @p's part of the run done (all completed, and arrived where this
 * process follows arrivals)? */
static bool
pair_done(const struct pair *p, bool track)
{
	return p->completed >= p->target && (!track || resolved(p) >= p->target) &&
	       (track || o.verb != V_SEND || !plays(1) || p->recv_seen[1] >= p->target);
}

/*
 * run_bw's WRs are built once and then advanced, as perftest's run_iter_bw
 * builds ctx->wr once per QP and changes only what moves: the first message
 * through wr[j] gets make_wr, each later one only its wr_id, its signaled
 * flag, its transmit slot and its slot at the peer (CMP_AND_SWAP: its
 * operands).  The slots advance by the stride and wrap, and the next
 * signaled message is counted down, so no division per message.  The
 * cursor starts over when another pair posts through the array or a pair
 * posts from elsewhere than where it stopped (after a full send queue).
 */
struct wr_cursor {
	uint32_t pair;       /* whose WRs wr[0 .. built) are (UINT32_MAX: nobody's) */
	uint32_t built;
	uint64_t seq;        /* the message the cursor is at */
	uint64_t tx_i, rx_i; /* its transmit slot and its slot at the peer, by index */
	uint8_t *src;        /* ... and by address */
	uint64_t dst;
	uint32_t sig_in;     /* messages up to the next one signaled by cq_mod (1: this one) */
	/* R's, for the pair: transmit slots, slots at the peer, their stride, cq_mod */
	uint64_t ntx, nrx, stride;
	uint32_t cq_mod;
};

static uint32_t
peer_slots(void)
{
	return R.two ? R.rem_nrx : R.lay.nrx;
}

static void
cursor_at(struct wr_cursor *c, const struct pair *p, uint32_t i, uint64_t seq)
{
	if (c->pair != i)
		c->built = 0;
	c->pair = i;
	c->ntx = R.lay.ntx;
	c->nrx = peer_slots();
	c->stride = R.lay.stride;
	c->cq_mod = R.cq_mod;
	c->seq = seq;
	c->tx_i = seq % R.lay.ntx;
	c->rx_i = seq % peer_slots();
	c->src = tx_slot(p, 0, seq);
	c->dst = peer_slot(p, 1, seq);
	c->sig_in = R.cq_mod - (uint32_t)(seq % R.cq_mod);
}

/* The cursor to the next message. */
static inline void
cursor_step(struct wr_cursor *c, const struct pair *p)
{
	c->seq++;
	if (--c->sig_in == 0)
		c->sig_in = c->cq_mod;
	if (++c->tx_i == c->ntx) {
		c->tx_i = 0;
		c->src = tx_slot(p, 0, 0);
	} else {
		c->src += c->stride;
	}
	if (++c->rx_i == c->nrx) {
		c->rx_i = 0;
		c->dst = peer_slot(p, 1, 0);
	} else {
		c->dst += c->stride;
	}
}

/* @w, built by make_wr for an earlier message of the cursor's pair, for the
 * cursor's message (@verb and @cas: o.verb and o.cmp_swap). */
static inline void
wr_advance(struct ibv_send_wr *w, const struct wr_cursor *c, bool sig, int verb, bool cas)
{
	w->wr_id = ((uint64_t)c->pair << WRID_SHIFT) | (c->seq & WRID_MASK);
	w->send_flags = (w->send_flags & ~(unsigned int)IBV_SEND_SIGNALED) |
			(sig ? IBV_SEND_SIGNALED : 0);
	w->sg_list->addr = (uintptr_t)c->src;
	if (verb == V_WRITE || verb == V_READ) {
		w->wr.rdma.remote_addr = c->dst;
	} else if (verb == V_ATOMIC && cas) {
		w->wr.atomic.compare_add = c->seq;
		w->wr.atomic.swap = c->seq + 1;
	}
}

/*
 * Posts what pair @i may: up to its target, within its window (-t, and for
 * UC/UD what has not arrived), in post lists of @list (-l).  True when its
 * send queue was full (it may post again after polling); otherwise it waits
 * for a completion (or stops at its target).  What does not change while it
 * posts (the options, the pair's target and completions) is read once, into
 * locals, and so is the cursor: the stores into the WRs and the call into
 * the provider would otherwise make the compiler load them again for every
 * message.
 */
static inline __attribute__((always_inline)) bool
post_lists(struct pair *p, uint32_t i, struct ibv_send_wr *wr, struct wr_cursor *cursor,
	   bool track, uint64_t window, const uint32_t list)
{
	struct wr_cursor c = *cursor;
	const uint64_t target = p->target, completed = p->completed, depth = R.depth;
	const bool check = o.check, cas = o.cmp_swap;
	const int verb = o.verb;
	struct ibv_qp *qp = p->qp[0];
	uint64_t posted = p->posted;
	bool full = false;

	while (posted < target) {
		uint64_t left = target - posted;
		uint32_t n = left < list ? (uint32_t)left : list;
		struct ibv_send_wr *bad = NULL;
		int rc;

		if (posted - completed + n > depth)
			break;
		if (track && posted > resolved(p) && posted - resolved(p) + n > window)
			break;
		if (c.pair != i || c.seq != posted)
			cursor_at(&c, p, i, posted);
		for (uint32_t j = 0; j < n; j++) {
			bool sig = c.sig_in == 1 || c.seq + 1 == target;

			if (check)
				check_prepare(p, i, 0, c.seq);
			if (j < c.built) {
				wr_advance(&wr[j], &c, sig, verb, cas);
			} else {
				make_wr(&wr[j], wr[j].sg_list, p, i, 0, c.seq, sig);
				c.built = j + 1;
			}
			wr[j].next = j + 1 < n ? &wr[j + 1] : NULL;
			cursor_step(&c, p);
		}
		rc = post_send(qp, wr, &bad);
		if (rc == ENOMEM) {
			/* send queue full: post what went, retry after polling */
			posted += (uint64_t)(bad - wr);
			full = true;
			break;
		}
		if (rc != 0)
			fail("ibv_post_send (QP pair %u, message %" PRIu64 "): %s", i,
			     posted + (uint64_t)(bad ? bad - wr : 0), strerror(rc));
		posted += n;
	}
	p->posted = posted;
	*cursor = c;
	return full;
}

/* post_lists, compiled apart for one WR per post (perftest's default, -l 1):
 * no list to chain then. */
static bool
post_pair(struct pair *p, uint32_t i, struct ibv_send_wr *wr, struct wr_cursor *cursor,
	  bool track, uint64_t window)
{
	if (o.post_list == 1)
		return post_lists(p, i, wr, cursor, track, window, 1);
	return post_lists(p, i, wr, cursor, track, window, o.post_list);
}

/*
 * The bandwidth run, for every topology: the client posts -t per QP and
 * polls; where this process also plays the server (the loopback), it polls
 * that side too and follows what arrives there.  The server of two
 * processes has no loop of its own: its receives are checked and reposted
 * by poll_side_cq while the topology's end-of-run exchange waits
 * (oob_idle), and the exchange tells it the client's figures.
 */
void
run_bw(uint64_t size)
{
	struct ibv_send_wr wr[1024];
	struct ibv_sge sge[1024];
	struct wr_cursor cur = { .pair = UINT32_MAX };
	struct peak_point *pt;
	size_t npt = 0, npt_full = 0, cap;
	struct watch w;
	struct result r = { .bytes = size };
	uint64_t per_qp = o.duration > 0 ? UINT64_MAX : o.iters;
	uint64_t dur = (uint64_t)(o.duration * (double)tsc_hz);
	uint64_t last_done = 0, total = 0, msgs_want;
	uint32_t undone = 0; /* pairs below it are done */
	bool stopping = o.duration == 0;
	bool track = track_arrivals();
	/* UC/UD send_bw: the figures are what the receiver got, as perftest's */
	bool count_rx = track && o.verb == V_SEND;
	uint64_t quiet = quiet_cycles(), quiet_fast = (uint64_t)(IDLE_SECONDS * (double)tsc_hz);
	/* in flight per QP: SENDs no more than the receives posted; UC WRITEs
	 * (--check) no more than the slots */
	uint64_t window = o.verb == V_SEND ? R.nrecv : R.depth;

	if (!plays(0))
		return;
	for (uint32_t j = 0; j < o.post_list; j++)
		wr[j].sg_list = &sge[j]; /* make_wr fills sge[j] in */
	cap = o.duration > 0 ? MAX_PEAK_POINTS :
	      count_rx ? (size_t)(o.iters * o.qps + 2) :
			       (size_t)(o.iters * o.qps / R.cq_mod + o.qps + 2);
	if (cap > MAX_PEAK_POINTS)
		cap = MAX_PEAK_POINTS;
	pt = malloc(cap * sizeof(*pt));
	if (pt == NULL)
		fail("out of memory");
	R.ready = malloc(o.qps * sizeof(*R.ready));
	if (R.ready == NULL)
		fail("out of memory");
	R.ready_head = R.ready_n = 0;
	R.completed_all = R.recv_all[0] = R.recv_all[1] = 0;
	for (uint32_t i = 0; i < o.qps; i++) {
		R.p[i].target = per_qp;
		R.p[i].queued = false;
		R.completed_all += R.p[i].completed;
		R.recv_all[0] += R.p[i].recv_seen[0];
		R.recv_all[1] += R.p[i].recv_seen[1];
	}
	wake_all();
	msgs_want = per_qp == UINT64_MAX ? UINT64_MAX : per_qp * o.qps;

	watch_start(&w);
	R.last_recv = w.start;
	for (uint32_t i = 0; i < o.qps; i++)
		R.p[i].last_arrival = w.start;
	pt[npt++] = (struct peak_point){ w.start, 0 };
	for (;;) {
		uint64_t now;
		int got;

		/* post: the pairs that may have room (each visited once a loop) */
		for (uint32_t k = R.ready_n; k > 0; k--) {
			uint32_t i = ready_pop();

			if (post_pair(&R.p[i], i, wr, &cur, track, window))
				bw_wake(i); /* its send queue was full: again after polling */
		}

		if (count_rx && stopping && npt_full == 0) {
			bool all = true;

			for (uint32_t i = 0; i < o.qps && all; i++)
				all = R.p[i].posted >= R.p[i].target;
			if (all)
				npt_full = npt;
		}

		/* complete */
		got = poll_side(0);
		if (o.verb == V_SEND && plays(1))
			got += poll_side(1);
		now = rte_rdtsc();
		if (track) {
			for (uint32_t i = 0; i < o.qps; i++) {
				struct pair *p = &R.p[i];

				if (o.verb == V_WRITE) {
					uint64_t c = p->checked;

					uc_write_verify(p, i, false, now);
					got += p->checked != c;
				}
				if (resolved(p) != p->res_seen) {
					p->res_seen = resolved(p);
					p->idle_polls = 0;
				} else {
					p->idle_polls++;
				}
				if (resolved(p) < p->posted &&
				    (now - p->last_arrival > quiet ||
				     (sender_idle(p, window) && p->idle_polls > IDLE_POLLS &&
				      now - p->last_arrival > quiet_fast)))
					give_up_on(p, i, now);
				bw_wake(i); /* what arrived (or was lost) opens its window */
			}
		}
		if (got > 0) {
			w.last_progress = now;
			total = count_rx ? R.recv_all[1] : R.completed_all;
			if (total != last_done) {
				last_done = total;
				r.seconds = secs(now - w.start);
				if (npt < cap)
					pt[npt++] = (struct peak_point){ now, total };
			}
		}
		/* pairs below `undone` are done (they stay done until the targets move) */
		while (undone < o.qps && pair_done(&R.p[undone], track))
			undone++;
		if (undone == o.qps && stopping)
			break;
		if (!stopping && now - w.start >= dur) {
			/* time is up: finish at the next signaled message */
			stopping = true;
			for (uint32_t i = 0; i < o.qps; i++) {
				struct pair *p = &R.p[i];

				/* cq_mod need not be a power of two */
				p->target = (p->posted + R.cq_mod - 1) / R.cq_mod * R.cq_mod;
				if (p->target == 0)
					p->target = R.cq_mod;
			}
			undone = 0;
			wake_all();
		}
		if ((++w.polls & 1023) == 0) {
			if (now - w.last_progress > w.timeout ||
			    (track && now - R.last_recv > w.timeout)) {
				char st[200];

				snprintf(st, sizeof(st), "QP pair 0: posted %" PRIu64 ", completed %"
					 PRIu64 ", received %" PRIu64 "%s", R.p[0].posted,
					 R.p[0].completed, o.verb == V_SEND ? R.p[0].recv_seen[1] :
					 R.p[0].checked - R.p[0].lost[1],
					 track && now - R.last_recv > w.timeout ?
					 "; nothing arrived at the receiver" : "");
				stuck(size, st);
			}
			progress(&w, now, size, last_done, msgs_want, "messages");
		}
	}

	if (o.check && o.verb == V_ATOMIC && plays(1)) {
		for (uint32_t i = 0; i < o.qps; i++) {
			uint64_t v;

			memcpy(&v, rx_slot(&R.p[i], 1, 0), 8);
			if (v != R.p[i].target)
				fail("--check: QP pair %u: remote word is %" PRIu64 " after %" PRIu64
				     " atomics, expected %" PRIu64, i, v, R.p[i].target, R.p[i].target);
		}
	}
	r.msgs = last_done;
	r.iters = o.duration > 0 || count_rx ? last_done / o.qps : o.iters;
	if (track) {
		for (uint32_t i = 0; i < o.qps; i++)
			r.lost += R.p[i].lost[1];
		if (r.lost >= msgs_sent())
			fail("%s, %" PRIu64 " B: none of the %" PRIu64 " messages arrived", o.test,
			     size, msgs_sent());
	}
	if (r.seconds > 0) {
		r.bw_avg = (double)r.msgs * (double)size / r.seconds;
		r.msg_rate = (double)r.msgs / r.seconds;
	}
	/* receive completions come in bursts of what queued up in the window,
	 * and the window drains faster than a full pipeline runs: with them, a
	 * stretch holds at least a window of every QP, and ends before the
	 * last message was posted */
	r.bw_peak = peak_bw(pt, npt_full ? npt_full : npt, size, (count_rx ? RTE_MAX((uint64_t)R.cq_mod, window) :
					    (uint64_t)R.cq_mod) * o.qps);
	if (r.bw_peak < r.bw_avg)
		r.bw_peak = r.bw_avg;
	completion_gaps(pt, npt, &r);
	free(pt);
	free(R.ready);
	R.ready = NULL;
	if (r.lost > 0)
		fprintf(stderr, "droce-perf: %s %" PRIu64 " B: %" PRIu64 " of %" PRIu64 " messages "
			"never arrived (%s does not retransmit)%s\n", o.test, size, r.lost,
			msgs_sent(), o.conn, o.verb == V_SEND ? "; the figures count what arrived" :
			"");
	add_result(&r);
}
