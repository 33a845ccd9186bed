/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: Time (TSC), the progress watchdog, and completions: polling or waiting on
 * the completion channels (-e), per side.
 */
#include "perf.h"

/* ---- time ---- */

double
secs(uint64_t cycles)
{
	return (double)cycles / (double)tsc_hz;
}


void
watch_start(struct watch *w)
{
	w->start = rte_rdtsc();
	w->last_progress = w->start;
	w->last_print = w->start;
	w->timeout = (uint64_t)(o.timeout * (double)tsc_hz);
	w->polls = 0;
}

void __attribute__((noreturn))
stuck(uint64_t size, const char *state)
{
	fail("%s, %" PRIu64 " B: no completion for %.0f s (%s): aborting%s%s%s", o.test, size,
	     o.timeout, state, o.qpt != IBV_QPT_RC && o.mode == M_LAT ? " (" : "",
	     o.qpt != IBV_QPT_RC && o.mode == M_LAT ? o.conn : "",
	     o.qpt != IBV_QPT_RC && o.mode == M_LAT ?
	     " does not retransmit: a lost message stops a ping-pong)" : "");
}

/* ---- completions ---- */

void __attribute__((noreturn))
wc_error(int side, const struct ibv_wc *wc)
{
	fail("%s completion error on QP 0x%x (QP pair %" PRIu64 ", wr_id %" PRIu64 "): %s "
	     "(status %d, opcode %d, vendor_err 0x%x)", R.s[side].role, wc->qp_num,
	     wc->wr_id >> WRID_SHIFT, wc->wr_id & WRID_MASK, ibv_wc_status_str(wc->status),
	     wc->status, wc->opcode, wc->vendor_err);
}

/*
 * Drains @side's CQ.  Send completions advance `completed` (bandwidth, the
 * client) or `sends_done`; receive completions are checked, counted and
 * reposted.  Returns the completions handled.
 */

/*
 * -e: arms the CQ of every side this process plays and sleeps until one has a
 * completion event (poll(2) on the channels, at most 100 ms, then
 * ibv_get_cq_event on the one that fired).  Returns the completions handled on the way.
 */
int
event_wait(void)
{
	int sides[2], n = 0, got = 0;
	struct pollfd pf[2];

	for (int s = 0; s < 2; s++) {
		if (!plays(s))
			continue;
		if (R.s[s].cq == NULL || R.s[s].ch == NULL)
			continue;
		if (ibv_req_notify_cq(R.s[s].cq, 0) != 0)
			fail("ibv_req_notify_cq (%s): %s", R.s[s].role, strerror(errno));
		sides[n] = s;
		pf[n].fd = R.s[s].ch->fd;
		pf[n].events = POLLIN;
		n++;
	}
	/* what completed before the CQ was armed raises no event */
	for (int i = 0; i < n; i++)
		got += poll_side_cq(sides[i]);
	if (got > 0 || n == 0)
		return got;
	/* poll(2) with a bound first, so the loops' watchdogs and quiet periods still
	 * run; ibv_get_cq_event tells the engines before it sleeps, poll(2) does not */
	droce_progress_blocking();
	if (poll(pf, (nfds_t)n, 100) < 0 && errno != EINTR)
		fail("poll: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		struct ibv_cq *cq;
		void *ctx;

		if (!(pf[i].revents & POLLIN))
			continue;
		if (ibv_get_cq_event(R.s[sides[i]].ch, &cq, &ctx) != 0)
			fail("ibv_get_cq_event (%s): %s", R.s[sides[i]].role, strerror(errno));
		ibv_ack_cq_events(cq, 1);
	}
	return 0;
}

int
poll_side(int side)
{
	int n = poll_side_cq(side);

	if (n == 0 && o.use_event && plays(side))
		n = event_wait();
	return n;
}

int
poll_side_cq(int side)
{
	struct ibv_wc wc[POLL_BATCH];
	int n = ibv_poll_cq(R.s[side].cq, POLL_BATCH, wc);

	if (n < 0)
		fail("ibv_poll_cq (%s): %d", R.s[side].role, n);
	for (int i = 0; i < n; i++) {
		uint32_t pi = (uint32_t)(wc[i].wr_id >> WRID_SHIFT);
		struct pair *p;

		if (wc[i].status != IBV_WC_SUCCESS)
			wc_error(side, &wc[i]);
		if (pi >= o.qps)
			fail("%s: completion with unknown wr_id 0x%" PRIx64, R.s[side].role,
			     wc[i].wr_id);
		p = &R.p[pi];
		if (wc[i].opcode & IBV_WC_RECV) {
			if (o.check)
				check_received(p, pi, side, &wc[i]);
			p->recv_seen[side]++;
			R.recv_all[side]++;
			R.last_recv = rte_rdtsc(); /* also RC: a server's send_bw figures */
			if (o.qpt != IBV_QPT_RC) {
				p->last_arrival = R.last_recv;
				/* run_bw gave up on it, and it came after all */
				if (!o.check && !R.two && side == 1 && p->lost[1] > 0 &&
				    p->recv_seen[1] + p->lost[1] > p->posted)
					p->lost[1]--;
			}
			post_recv_slot(p, pi, side, (uint32_t)(wc[i].wr_id & WRID_MASK));
		} else if (o.mode == M_BW && side == 0) {
			uint64_t seq = wc[i].wr_id & WRID_MASK;

			/* RC completes in order: every message up to seq is done */
			if (o.check)
				for (uint64_t s = p->completed; s <= seq; s++)
					check_completed(p, pi, side, s);
			R.completed_all += seq + 1 - p->completed;
			p->completed = seq + 1;
			if (R.ready != NULL)
				bw_wake(pi); /* room in its window again */
		} else {
			p->sends_done[side]++;
		}
	}
	return n;
}
