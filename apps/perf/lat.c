/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: The latency run (every topology: the sides this process plays):
 * ping-pong for send and write, one at a time for read and atomics,
 * percentiles and --lat-samples.
 */
#include "perf.h"

/* ---- latency ---- */

/* Polls every side this process plays. */
void
poll_sides(void)
{
	for (int s = 0; s < 2; s++)
		if (plays(s))
			poll_side(s);
}

void
post_one(struct pair *p, int side, uint64_t seq, bool signaled, struct watch *w, uint64_t size)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	int rc;

	make_wr(&wr, &sge, p, 0, side, seq, signaled);
	while ((rc = post_send(p->qp[side], &wr, &bad)) == ENOMEM) {
		/* send queue full: let the engine retire some */
		poll_sides();
		if (rte_rdtsc() - w->last_progress > w->timeout)
			stuck(size, "send queue stays full");
	}
	if (rc != 0)
		fail("ibv_post_send (%s, message %" PRIu64 "): %s", R.s[side].role, seq,
		     strerror(rc));
	p->signaled[side] += signaled;
}

/* write_lat without --check: only the marker byte the peer polls changes. */
void
lat_prepare(struct pair *p, int side, uint64_t seq)
{
	if (o.check)
		check_prepare(p, 0, side, seq);
	else if (o.verb == V_WRITE)
		tx_slot(p, side, seq)[R.lay.size - 1] = (uint8_t)(seq + 1);
}

/*
 * Sorts @n samples in place, least significant 11-bit digit first, as many
 * digits as the largest sample has: linear in @n (qsort's comparisons cost
 * more per sample than a 2 B WRITE's round trip on the profile).
 */
#define SORT_DIGIT 11
static void
sort_u64(uint64_t *v, uint64_t n)
{
	uint64_t *tmp, *a = v, *b, max = 0, cnt[1u << SORT_DIGIT];

	for (uint64_t i = 0; i < n; i++)
		max |= v[i];
	if (n < 2 || max == 0)
		return;
	if ((tmp = malloc(n * sizeof(*tmp))) == NULL)
		fail("out of memory sorting %" PRIu64 " samples", n);
	b = tmp;
	for (unsigned int sh = 0; sh < 64 && (max >> sh) != 0; sh += SORT_DIGIT) {
		uint64_t sum = 0, *t;

		memset(cnt, 0, sizeof(cnt));
		for (uint64_t i = 0; i < n; i++)
			cnt[(a[i] >> sh) & ((1u << SORT_DIGIT) - 1)]++;
		for (unsigned int d = 0; d < (1u << SORT_DIGIT); d++) {
			uint64_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (uint64_t i = 0; i < n; i++)
			b[cnt[(a[i] >> sh) & ((1u << SORT_DIGIT) - 1)]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	if (a != v)
		memcpy(v, a, n * sizeof(*v));
	free(tmp);
}

/* --check of write_lat: message @seq in @side's buffer, as the peer wrote it. */
static void
lat_check_written(struct pair *p, int side, uint64_t seq, uint64_t size)
{
	uint8_t *b = rx_slot(p, side, seq);
	int64_t off;

	if (side == 1)
		inject(b, size, 0, seq);
	off = pattern_check(b, size, 0, seq);
	if (off >= 0)
		check_failed(side ? "RDMA WRITE, server's buffer" : "RDMA WRITE, client's buffer",
			     0, seq, b, size, off);
}

/* The server's turn in iteration @i of a ping-pong (send_lat, write_lat):
 * the client's message @i arrives and is answered.  @ahead (perftest's
 * write_lat server, which writes first): message 0 went before the loop,
 * message @i is answered with @i + 1, the last one with none. */
static void
lat_answer(struct pair *p, uint64_t i, uint64_t iters, bool ahead, struct watch *w,
	   uint64_t size)
{
	uint64_t seq = i + ahead;

	if (o.verb == V_SEND) {
		WAIT_UNTIL(p->recv_seen[1] > i, w, size, "server waiting for the SEND");
	} else {
		volatile uint8_t *mark = rx_slot(p, 1, i) + size - 1;

		WAIT_UNTIL(*mark == (uint8_t)(i + 1), w, size,
			   "server polling the last byte of its buffer");
		if (o.check)
			lat_check_written(p, 1, i, size);
	}
	if (seq >= iters)
		return;
	lat_prepare(p, 1, seq);
	post_one(p, 1, seq, (seq + 1) % LAT_SIGNAL_EVERY == 0 || seq + 1 == iters, w, size);
}

/*
 * The latency run, for every topology: each iteration does the client's
 * steps (post, wait for the answer or the completion, sample) and the
 * server's (lat_answer) for the sides this process plays (plays()).  READ
 * and atomics need nothing from the server.  Two processes: -D is refused
 * (the server could not know where the client stops), and only the client
 * keeps samples and adds a result.
 */
void
run_lat(uint64_t size)
{
	struct pair *p = &R.p[0];
	uint64_t *samples = NULL;
	uint64_t cap = o.duration > 0 ? MAX_LAT_SAMPLES : o.iters;
	uint64_t warm = (uint64_t)o.warmup;
	uint64_t n = 0, iters = o.duration > 0 ? UINT64_MAX : warm + o.iters;
	uint64_t dur = (uint64_t)(o.duration * (double)tsc_hz);
	bool pingpong = o.verb == V_SEND || o.verb == V_WRITE;
	bool cli = plays(0), srv = plays(1) && pingpong;
	/* perftest's write_lat: the server writes first, then answers each of
	 * the client's writes but the last (droce-perf peers do not) */
	bool srv_first = R.two && !R.oob.peer_droce && o.verb == V_WRITE && o.duration <= 0;
	struct result r = { .bytes = size };
	struct watch w;
	double sum = 0, sq = 0, unit;

	if (cap > MAX_LAT_SAMPLES)
		cap = MAX_LAT_SAMPLES;
	if (cli && (samples = malloc(cap * sizeof(*samples))) == NULL)
		fail("out of memory for %" PRIu64 " samples", cap);
	if (!cli && !srv)
		return; /* READ, atomics: the server's memory answers by itself */

	watch_start(&w);
	if (srv && srv_first) {
		lat_prepare(p, 1, 0);
		post_one(p, 1, 0, iters == 1, &w, size);
	}
	if (cli && srv_first) {
		volatile uint8_t *m0 = rx_slot(p, 0, 0) + size - 1;

		WAIT_UNTIL(*m0 == 1, &w, size, "client waiting for the server's first write");
		w.start = rte_rdtsc();
	}
	for (uint64_t i = 0; i < iters; i++) {
		bool sig = (i + 1) % LAT_SIGNAL_EVERY == 0 || i + 1 == iters;
		volatile uint8_t *mark;
		uint64_t t0 = 0, t1;

		if (cli) {
			lat_prepare(p, 0, i);
			t0 = rte_rdtsc();
			post_one(p, 0, i, sig || !pingpong, &w, size);
		}
		if (srv)
			lat_answer(p, i, iters, srv_first, &w, size);
		if (!cli) {
			w.last_progress = rte_rdtsc();
			continue;
		}
		if (!pingpong) {
			WAIT_UNTIL(p->sends_done[0] >= p->signaled[0], &w, size,
				   "waiting for the completion");
			t1 = rte_rdtsc();
			if (o.check)
				check_completed(p, 0, 0, i);
		} else if (o.verb == V_SEND) {
			WAIT_UNTIL(p->recv_seen[0] > i, &w, size, "client waiting for the reply");
			t1 = rte_rdtsc();
		} else { /* write: poll the last byte of the buffer the peer writes */
			mark = rx_slot(p, 0, i) + size - 1;
			if (srv_first && i + 1 == iters) /* no answer: its ACK */
				WAIT_UNTIL(p->sends_done[0] >= p->signaled[0], &w, size,
					   "waiting for the completion");
			else
				WAIT_UNTIL(*mark == (uint8_t)(i + 1 + srv_first), &w, size,
					   "client polling the last byte of its buffer");
			t1 = rte_rdtsc();
			if (o.check)
				lat_check_written(p, 0, i, size);
		}
		w.last_progress = t1;
		if (i < warm) {
			if (i + 1 == warm)
				w.start = rte_rdtsc(); /* -D and the progress line count from here */
			continue;
		}
		if (n < cap)
			samples[n++] = t1 - t0;
		if (o.duration > 0 && t1 - w.start >= dur)
			iters = i + 1; /* last one */
		progress(&w, t1, size, i + 1 - warm, o.duration > 0 ? UINT64_MAX : o.iters,
			 "iterations");
		r.iters = i + 1 - warm;
	}
	/* let the last signaled sends complete before the QPs go */
	WAIT_UNTIL(p->sends_done[0] >= p->signaled[0] && p->sends_done[1] >= p->signaled[1], &w,
		   size, "final completions");
	if (!cli)
		return; /* the server of two processes: the client has the figures */

	if (o.check && o.verb == V_ATOMIC && plays(1)) {
		uint64_t v;

		memcpy(&v, rx_slot(p, 1, 0), 8);
		if (v != warm + r.iters)
			fail("--check: remote word is %" PRIu64 " after %" PRIu64 " atomics", v,
			     warm + r.iters);
	}

	/* ping-pong reports half the round trip, as perftest does */
	unit = 1e6 / (double)tsc_hz / (pingpong ? 2.0 : 1.0);
	if (R.lat_f != NULL) {
		/* --lat-samples: the values below come from, in the order measured */
		for (uint64_t i = 0; i < n; i++) {
			if (R.multi_size)
				fprintf(R.lat_f, "%" PRIu64 " ", size);
			fprintf(R.lat_f, "%.3f\n", (double)samples[i] * unit);
		}
		if (ferror(R.lat_f))
			fail("--lat-samples %s: %s", o.lat_samples, strerror(errno));
	}
	sort_u64(samples, n);
	for (uint64_t i = 0; i < n; i++) {
		double v = (double)samples[i] * unit;

		sum += v;
		sq += v * v;
	}
	r.msgs = r.iters;
	r.seconds = secs(rte_rdtsc() - w.start);
	r.t_min = (double)samples[0] * unit;
	r.t_max = (double)samples[n - 1] * unit;
	r.t_typical = (double)samples[n / 2] * unit;
	r.t_avg = sum / (double)n;
	r.t_stdev = sqrt(fmax(0, sq / (double)n - r.t_avg * r.t_avg));
	r.p99 = (double)samples[(uint64_t)ceil(0.99 * (double)n) - 1] * unit;
	r.p999 = (double)samples[(uint64_t)ceil(0.999 * (double)n) - 1] * unit;
	free(samples);
	add_result(&r);
}
