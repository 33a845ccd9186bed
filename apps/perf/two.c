/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: Two processes, like perftest: the TCP exchange (perftest_oob.h) or
 * rdma_cm (-R, perftest_rdmacm.h): one side's setup and connection, and the
 * end of its bandwidth and latency runs with the reports both sides swap.  topology.c's table runs it; the runs themselves
 * are bw.c's and lat.c's, for the side this process plays.
 */
#include "perf.h"

/* ---- two processes: perftest's TCP exchange (apps/perftest_oob.h) ---- */

/* Keeps the co-located engines running while the socket waits: the peer
 * may be resolving our MAC, or (send_bw server) the SENDs keep coming. */
void
oob_idle(void *arg)
{
	(void)arg;
	if (R.s[R.me].cq != NULL)
		poll_side_cq(R.me); /* never sleeps here, even with -e */
	else
		droce_progress();
}

void
oob_check(int rc, const char *what)
{
	if (rc != 0)
		fail("perftest exchange (%s) with the peer failed: %s", what, R.oob.err);
}

/* Opens this process's one device and waits for its port to come up (a
 * memif port is up once the peer process is there). */
void
open_local(void)
{
	struct ibv_device **list;
	struct side *s = &R.s[R.me];
	int n;

	list = device_list(&n);
	s->dev = device_named(list, n, o.dev);
	if (s->dev == NULL && n == 1 && strcmp(o.dev, "droce0") == 0)
		s->dev = list[0];
	if (s->dev == NULL)
		fail("no device %s (%d devices)", o.dev, n);
	s->role = R.me ? "server" : "client";
	side_open(s, o.timeout);
	stats_ready = true;
	ibv_free_device_list(list);
	R.mtu = s->active_mtu;
	if (o.mtu && mtu_enum(o.mtu) < R.mtu)
		R.mtu = mtu_enum(o.mtu);
}

/* What both droce-perf processes must agree on (sent only between droce
 * peers, recognised by the mark after the version string). */
void
params_line(char *buf, size_t n)
{
	snprintf(buf, n, "droce-perf %s c=%s A=%d s=%" PRIu64 " q=%u n=%" PRIu64 " D=%.3f t=%u "
		 "r=%u l=%u Q=%u check=%d w=%" PRId64, o.test, o.conn, o.cmp_swap, o.size, o.qps,
		 o.iters, o.duration, o.tx_depth, o.rx_depth, o.post_list,
		 o.cq_mod, o.check, o.warmup);
}

void
connect_peer(void)
{
	char mine[256] = { 0 }, theirs[256];
	int cb, cl, mtu;

	pt_oob_init(&R.oob, !R.me, (int)(o.timeout * 1000), oob_idle, NULL);
	if (o.rdma_cm) {
		/* perftest's -R: the exchange itself runs over an rdma_cm RC
		 * connection to -p (apps/perftest_rdmacm.h) */
		pt_rcm_init(&R.chan, (int)(o.timeout * 1000), oob_idle, NULL);
		if (R.me) {
			R.chan.timeout_ms = 0;
			if (pt_rcm_listen(&R.chan, o.bind, o.tcp_port, RDMA_PS_TCP, 1) != 0)
				fail("rdma_cm listen: %s", R.chan.err);
			if (!o.json)
				printf("\n************************************\n"
				       "* Waiting for client to connect... *\n"
				       "************************************\n");
			fflush(stdout);
			if (pt_rcm_chan_accept(&R.chan) != 0)
				fail("rdma_cm channel: %s", R.chan.err);
			R.chan.timeout_ms = (int)(o.timeout * 1000);
		} else if (pt_rcm_chan_connect(&R.chan, o.host, o.tcp_port) != 0) {
			fail("rdma_cm channel to %s:%d: %s", o.host, o.tcp_port, R.chan.err);
		}
		pt_oob_attach_msg(&R.oob, &pt_rcm_msg_ops, &R.chan);
	} else if (R.me) {
		if (!o.json)
			printf("\n************************************\n"
			       "* Waiting for client to connect... *\n"
			       "************************************\n");
		fflush(stdout);
		R.oob.timeout_ms = 0; /* a server waits as long as it takes */
		oob_check(pt_oob_listen_accept(&R.oob, o.bind, o.tcp_port), "listen");
		R.oob.timeout_ms = (int)(o.timeout * 1000);
	} else {
		oob_check(pt_oob_connect(&R.oob, o.host, o.tcp_port), "connect");
	}
	oob_check(pt_xchg_version(&R.oob, PT_VERSION), "version");
	if (!R.oob.peer_droce)
		o.warmup = 0; /* perftest's latency loops have no warm-up */
	if (R.oob.peer_droce) {
		params_line(mine, sizeof(mine));
		oob_check(pt_xchg(&R.oob, mine, theirs, sizeof(mine)), "droce parameters");
		theirs[sizeof(theirs) - 1] = '\0';
		if (strcmp(mine, theirs) != 0)
			fail("the peer runs different options:\n  here: %s\n  peer: %s", mine, theirs);
	} else if (o.check) {
		unsupported("--check needs droce-perf on both sides (the peer is perftest %s)",
			    R.oob.rem_version);
	}
	oob_check(pt_xchg_sys_data(&R.oob, PT_CYCLE_BUFFER, PT_CACHE_LINE, &cb, &cl), "sys data");
	oob_check(pt_xchg_mtu(&R.oob, (int)R.mtu, &mtu), "MTU");
	R.mtu = (enum ibv_mtu)mtu;
	R.rem_nrx = 0;
	(void)cl;
	/* a perftest peer's area at vaddr holds max(size, cycle buffer) bytes */
	R.rem_nrx = (uint32_t)cb; /* refined in setup_two */
}

void
setup_two(uint64_t size)
{
	struct side *s = &R.s[R.me];
	int cb = (int)R.rem_nrx;

	plan_run(size);
	if (R.oob.peer_droce) {
		R.rem_nrx = R.lay.nrx; /* same options, same layout */
	} else {
		uint64_t area = RTE_MAX(size, (uint64_t)cb);

		R.rem_nrx = (uint32_t)RTE_MAX(area / R.lay.stride, (uint64_t)1);
		if (o.mode == M_LAT)
			R.rem_nrx = 1; /* perftest's latency loops use one message, at vaddr */
		/* our own area must take what a perftest peer writes there */
		if (o.mode != M_LAT && (uint64_t)R.lay.nrx * R.lay.stride < area) {
			R.lay.nrx = (uint32_t)((area + R.lay.stride - 1) / R.lay.stride);
			R.lay.region = (uint64_t)(R.lay.ntx + R.lay.nrx) * R.lay.stride;
		}
	}

	side_alloc(s, plan_cqe());
	for (uint32_t i = 0; i < o.qps; i++) {
		struct pair *p = &R.p[i];

		memset(p, 0, sizeof(*p));
		p->psn[R.me] = (uint32_t)lrand48() & 0xffffff;
		p->base[R.me] = s->buf + (uint64_t)i * R.lay.region;
		if (!o.rdma_cm)
			pair_qp(i, R.me, NULL, true); /* -R: once rdma_cm has the id */
		/* --check of READ: slot j of the server holds message j */
		if (o.check && o.verb == V_READ && R.me == 1)
			for (uint32_t j = 0; j < R.lay.nrx; j++)
				pattern_fill(rx_slot(p, 1, j), size, i, j);
	}
}

void
my_dest(uint32_t i, struct pt_dest *d)
{
	const struct pair *p = &R.p[i];

	memset(d, 0, sizeof(*d));
	d->out_reads = o.out_reads;
	d->qpn = p->qp[R.me] ? p->qp[R.me]->qp_num : 0; /* -R: no QP before rdma_cm's */
	d->psn = p->psn[R.me];
	d->rkey = R.s[R.me].mr->rkey;
	d->vaddr = (uintptr_t)rx_slot(p, R.me, 0); /* where the peer writes / reads */
	memcpy(d->gid, R.s[R.me].gid.raw, 16);
}

void
barrier(const char *what)
{
	struct pt_dest d, r;

	my_dest(0, &d);
	oob_check(pt_hand_shake(&R.oob, &d, &r), what);
}

/* One key message per QP, in QP order (perftest's loops of ctx_hand_shake);
 * @keep: the peer's keys go to R.p[i].rem. */
void
key_loop(const char *what, bool keep)
{
	struct pt_dest d, r;

	for (uint32_t i = 0; i < o.qps; i++) {
		my_dest(i, &d);
		oob_check(pt_hand_shake(&R.oob, &d, keep ? &R.p[i].rem : &r), what);
		if (!keep && (r.rkey != R.p[i].rem.rkey || r.vaddr != R.p[i].rem.vaddr))
			fail("the peer's keys for QP %u changed between its two key rounds", i);
	}
}

/* The peer's requester may keep this many READs / atomics outstanding
 * here (its -o), within what droce's QPs take. */
uint32_t
peer_reads(const struct pair *p)
{
	uint32_t r = p->rem.out_reads;

	return r < 1 ? 1 : r > DROCE_MAX_RD_ATOMIC ? DROCE_MAX_RD_ATOMIC : r;
}

/* The key exchanges and the connection, in perftest 6.06's order (one key
 * message per QP in each loop, Q below):
 *   write_bw, read_bw, atomic_bw:           Q, connect, Q, 1
 *   send_bw, send_lat:                      Q, connect, 1, Q, 1
 *   write_lat, read_lat, atomic_lat:     1, Q, connect, Q, 1
 * With -R, create_rdma_cm_connection's 1, rdma_cm, 1 come first and
 * "connect" is rdma_cm's. */
void
connect_qps(void)
{
	bool send_like = o.verb == V_SEND;

	if (o.rdma_cm)
		connect_qps_rdma_cm();
	if (o.mode == M_LAT && !send_like)
		barrier("key exchange before the QP keys");
	key_loop("QP keys", true);
	if (!o.rdma_cm && !pt_gid_compatible(R.s[R.me].gid.raw, R.p[0].rem.gid))
		fail("the peer's GID is %s, this one is %s: use the same IP version",
		     pt_gid_is_v4mapped(R.p[0].rem.gid) ? "IPv4" : "IPv6",
		     pt_gid_is_v4mapped(R.s[R.me].gid.raw) ? "IPv4" : "IPv6");
	for (uint32_t i = 0; i < o.qps && !o.rdma_cm; i++) {
		struct pair *p = &R.p[i];
		struct ibv_qp peer = { .qp_num = p->rem.qpn };
		union ibv_gid g;

		memcpy(g.raw, p->rem.gid, 16);
		to_rts(p->qp[R.me], p->psn[R.me], &peer, p->rem.psn, &g, o.out_reads,
		       peer_reads(p));
		if (o.qpt == IBV_QPT_UD) {
			/* UD, as perftest: the AH from the GID, the QPN from the key message */
			p->ah[R.me] = make_ah(R.me, &g);
			p->rem_qpn[R.me] = p->rem.qpn;
		}
	}
	if (send_like)
		barrier("barrier after RTR");
	key_loop("QP keys, second round", false);
	barrier(send_like ? "barrier before the run" : "barrier after RTR");
}

void
teardown_two(void)
{
	struct side *s = &R.s[R.me];

	for (uint32_t i = 0; i < o.qps; i++) {
		struct rdma_cm_id *id = R.p[i].cm_id[R.me];

		if (qp_sum_qps < o.qps)
			qp_stats_add(R.p[i].qp[R.me]); /* unless print_stats did */
		if (id != NULL) {
			/* the id's DREQ (or the DREP to the peer's) goes with it */
			rdma_destroy_qp(id);
			if (rdma_destroy_id(id) != 0)
				fail("rdma_destroy_id: %s", strerror(errno));
			R.p[i].cm_id[R.me] = NULL;
		} else if (ibv_destroy_qp(R.p[i].qp[R.me]) != 0) {
			fail("ibv_destroy_qp");
		}
		R.p[i].qp[R.me] = NULL; /* poll_side_cq must not repost on it */
		if (R.p[i].ah[R.me] != NULL && ibv_destroy_ah(R.p[i].ah[R.me]) != 0)
			fail("ibv_destroy_ah");
	}
	if (o.rdma_cm) {
		pt_rcm_close(&R.cm);
		pt_rcm_close(&R.chan);
	}
	if (ibv_destroy_cq(s->cq) != 0)
		fail("ibv_destroy_cq");
	s->cq = NULL;
	if (ibv_dereg_mr(s->mr) != 0)
		fail("ibv_dereg_mr");
	free(s->buf);
	s->buf = NULL;
	if (ibv_dealloc_pd(s->pd) != 0)
		fail("ibv_dealloc_pd");
	if (!o.rdma_cm && ibv_close_device(s->ctx) != 0)
		fail("ibv_close_device");
}

/* The last of @count messages written to slot @j. */
uint64_t
last_in_slot(uint64_t count, uint32_t j)
{
	uint64_t seq = (count - 1 - j) / R.lay.nrx * R.lay.nrx + j;

	return seq >= count ? seq - R.lay.nrx : seq;
}

/* UC: slots whose last message has not landed (yet, or ever). */
uint64_t
slots_not_landed(const uint64_t *count)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < o.qps; i++)
		for (uint32_t j = 0; j < R.lay.nrx && j < count[i]; j++)
			n += !landed(rx_slot(&R.p[i], 1, j), i, last_in_slot(count[i], j));
	return n;
}

/* write_bw --check, server: slot j holds the last message written to it. */
void
check_written_slots(const uint64_t *count)
{
	uint64_t lost = 0;

	if (o.qpt == IBV_QPT_UC) {
		/* UC: sent is not landed; let what is in flight land, until nothing
		 * changes for a while (a lost message never lands) */
		uint64_t t = rte_rdtsc(), quiet = quiet_cycles(), prev = UINT64_MAX, n;

		while ((n = slots_not_landed(count)) != 0) {
			if (n != prev) {
				prev = n;
				t = rte_rdtsc();
			} else if (rte_rdtsc() - t > quiet) {
				break;
			}
			poll_side(1);
		}
	}
	for (uint32_t i = 0; i < o.qps; i++) {
		const struct pair *p = &R.p[i];

		for (uint32_t j = 0; j < R.lay.nrx && j < count[i]; j++) {
			uint64_t seq = last_in_slot(count[i], j);
			uint8_t *b = rx_slot(p, 1, j);
			int64_t off;

			if (o.qpt == IBV_QPT_UC && !landed(b, i, seq)) {
				lost++; /* UC: never landed, nothing to check */
				continue;
			}
			inject(b, R.lay.size, i, seq);
			off = pattern_check(b, R.lay.size, i, seq);
			if (off >= 0)
				check_failed("RDMA WRITE, server's memory", i, seq, b, R.lay.size, off);
		}
	}
	if (lost > 0)
		fprintf(stderr, "droce-perf: --check: %" PRIu64 " slots did not get their last UC "
			"WRITE (lost: UC does not retransmit); the others are correct\n", lost);
}

/* UC/UD send_bw, server: the client is done; what is still in flight
 * arrives now or never.  Then its figures are what it received, timed from
 * the start of the run to the last arrival. */
void
add_result_received(uint64_t size, const uint64_t *sent)
{
	struct result r = { .bytes = size };
	uint64_t quiet = quiet_cycles(), want = 0;

	for (uint32_t i = 0; i < o.qps; i++)
		want += sent[i];
	for (;;) {
		uint64_t got = 0;

		poll_side(1);
		for (uint32_t i = 0; i < o.qps; i++)
			got += R.p[i].recv_seen[1];
		if (got >= want || rte_rdtsc() - R.last_recv > quiet)
			break;
	}
	for (uint32_t i = 0; i < o.qps; i++)
		r.msgs += R.p[i].recv_seen[1];
	if (r.msgs == 0)
		fail("%s, %" PRIu64 " B: none of the %" PRIu64 " messages arrived", o.test, size, want);
	r.lost = want > r.msgs ? want - r.msgs : 0;
	r.iters = r.msgs / o.qps;
	r.seconds = secs(R.last_recv - R.run_start);
	if (r.seconds > 0) {
		r.bw_avg = (double)r.msgs * (double)size / r.seconds;
		r.msg_rate = (double)r.msgs / r.seconds;
	}
	r.bw_peak = r.bw_avg; /* the server keeps no per-interval record */
	if (r.lost > 0)
		fprintf(stderr, "droce-perf: %s %" PRIu64 " B: %" PRIu64 " of %" PRIu64 " messages "
			"never arrived (%s does not retransmit); the figures count what arrived\n",
			o.test, size, r.lost, want, o.conn);
	add_result(&r);
}

/* After run_bw, both roles: the end of the run and the reports, in
 * perftest's order.  The server serves until the client's end barrier (its
 * receives checked and reposted by oob_idle's polling), then reports the
 * client's figures (UC/UD send_bw: what it received). */
void
bw_end_two(uint64_t size)
{
	struct pt_bw_report mine = { .size = size }, theirs;
	uint64_t count[MAX_QPS] = { 0 }, rcount[MAX_QPS];
	bool unreliable_send = o.verb == V_SEND && o.qpt != IBV_QPT_RC;
	/* perftest sends (and its server prints) the bandwidths in the unit it
	 * reports in: MB/sec (2^20 B), or 10^9 bits with --report_gbits */
	double unit = o.report_gbits ? 125e6 : 1048576.0;

	if (R.me == 0) {
		const struct result *r = &results[n_results - 1]; /* run_bw's */

		mine.iters = r->iters;
		mine.bw_peak = r->bw_peak / unit;
		mine.bw_avg = r->bw_avg / unit;
		mine.msg_rate = r->msg_rate / 1e6;
		for (uint32_t i = 0; i < o.qps; i++)
			count[i] = rte_cpu_to_be_64(R.p[i].completed);
	}
	if (!R.oob.peer_droce && o.verb == V_SEND) {
		/* perftest 6.06's send_bw exchanges no reports: the client's closing
		 * handshake ends the run and the server reports what it received */
		R.oob.timeout_ms = 0;
		barrier("closing");
		R.oob.timeout_ms = (int)(o.timeout * 1000);
		if (R.me == 1) {
			for (uint32_t i = 0; i < o.qps; i++)
				rcount[i] = R.p[i].recv_seen[1];
			add_result_received(size, rcount);
		}
		return;
	}
	R.oob.timeout_ms = 0; /* the server waits for the whole run */
	barrier("end of the run");
	R.oob.timeout_ms = (int)(o.timeout * 1000);
	oob_check(pt_xchg_bw_reports(&R.oob, &mine, &theirs), "bandwidth reports");
	if (R.oob.peer_droce && ((o.check && o.verb == V_WRITE) || unreliable_send)) {
		oob_check(pt_xchg(&R.oob, count, rcount, 8 * o.qps), "message counts");
		if (R.me == 1) {
			for (uint32_t i = 0; i < o.qps; i++)
				rcount[i] = rte_be_to_cpu_64(rcount[i]);
			if (o.verb == V_WRITE)
				check_written_slots(rcount);
		}
	} else {
		for (uint32_t i = 0; i < o.qps; i++)
			rcount[i] = theirs.iters; /* a perftest peer: what it says it sent */
	}
	if (o.check && o.verb == V_SEND && R.me == 1 && !unreliable_send) {
		for (uint32_t i = 0; i < o.qps; i++)
			if (R.p[i].recv_seen[1] == 0)
				fail("--check: QP pair %u received no SEND", i);
	}
	if (R.me == 1 && unreliable_send) {
		/* UC/UD send_bw: the server reports what it received, as perftest's */
		add_result_received(size, rcount);
	} else if (R.me == 1) {
		/* the server reports the client's figures, as perftest does */
		struct result r = { .bytes = theirs.size, .iters = theirs.iters,
				    .bw_peak = theirs.bw_peak * unit,
				    .bw_avg = theirs.bw_avg * unit,
				    .msg_rate = theirs.msg_rate * 1e6 };

		r.msgs = theirs.iters * o.qps;
		if (r.bw_avg > 0)
			r.seconds = (double)r.msgs * (double)size / r.bw_avg;
		add_result(&r);
	}
	barrier("closing");
}


/* After run_lat, both roles: droce peers end with a barrier, so neither
 * leaves early; perftest 6.06's read_lat, send_lat and atomic_lat with a
 * closing handshake, its write_lat with none. */
void
lat_end_two(uint64_t size)
{
	(void)size;
	if (!R.oob.peer_droce && o.verb == V_WRITE)
		return;
	R.oob.timeout_ms = 0;
	barrier(R.oob.peer_droce ? "end of the run" : "closing");
}
