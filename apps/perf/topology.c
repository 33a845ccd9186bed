/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf's topologies: a table entry each (how this process reaches the
 * peer, connects its QPs and runs one message size), and the one driver that
 * runs every topology (sizes, banner, tables, latency samples, reports).
 *
 *   loopback          one process, both sides, QPs by ibv_modify_qp; the
 *                     engines co-located or dedicated as the config says
 *   loopback -R       the same, the QPs connected through rdma_cm
 *   two processes     this process plays one side; perftest's TCP exchange
 *                     (the peer droce-perf or perftest itself, over memif or
 *                     any link)
 *   two processes -R  the same, the exchange over rdma_cm (perftest's -R)
 */
#include "perf.h"

struct topology {
	const char *name;
	bool two;                      /* this process plays one side (R.me) */
	bool rdma_cm;                  /* for -R */
	void (*check)(unsigned int n_sizes); /* refuses what it cannot run */
	void (*open)(void);            /* devices, and the peer's exchange */
	void (*setup)(uint64_t size);  /* buffers and CQs for one size */
	void (*connect)(void);         /* the QPs, connected */
	void (*run_end[2])(uint64_t size); /* after run_bw [M_BW], run_lat [M_LAT] */
	void (*end)(void);             /* after the last size, before the reports */
	void (*close)(void);           /* after the reports */
};

/* UD: a message is one packet.  As perftest: an -s over the path MTU is
 * refused; the default size, and -a's sizes, are brought down to it. */
unsigned int
ud_fit_sizes(uint64_t *sizes, unsigned int n)
{
	uint32_t mtu = mtu_bytes(R.mtu);
	unsigned int k = 0;

	if (o.qpt != IBV_QPT_UD)
		return n;
	for (unsigned int i = 0; i < n; i++) {
		if (sizes[i] <= mtu) {
			sizes[k++] = sizes[i];
		} else if (o.all) {
			/* -a: the sizes stop at the MTU */
		} else if (o.size_set) {
			unsupported("-s %" PRIu64 ": max message size in UD is the path MTU, %u B "
				    "(a UD message is one packet)", sizes[i], mtu);
		} else {
			fprintf(stderr, "droce-perf: max message size in UD is the path MTU, %u B: "
				"using it\n", mtu);
			sizes[k++] = mtu;
		}
	}
	return k;
}

void
lat_samples_open(void)
{
	if (o.lat_samples == NULL)
		return;
	R.lat_f = fopen(o.lat_samples, "w");
	if (R.lat_f == NULL)
		fail("--lat-samples %s: %s", o.lat_samples, strerror(errno));
}

void
lat_samples_close(void)
{
	if (R.lat_f == NULL)
		return;
	if (fclose(R.lat_f) != 0)
		fail("--lat-samples %s: %s", o.lat_samples, strerror(errno));
	R.lat_f = NULL;
}

static void
check_loop(unsigned int n_sizes)
{
	if (o.rdma_cm && n_sizes > 1)
		unsupported("-R on the loopback topology runs one message size (no -a or -s lists "
			    "yet: the next size's connections meet the last ones' CM time wait)");
}

/* ---- the two-process entries' steps ---- */

static void
check_two(unsigned int n_sizes)
{
	if (n_sizes != 1)
		unsupported("two processes run one message size at a time (no -a or -s "
			    "lists yet)");
	if (o.duration > 0 && o.mode == M_LAT)
		unsupported("-D: latency tests across two processes run -n iterations");
	if (o.qps > 1 && o.mode == M_LAT)
		unsupported("-q: latency tests use one QP");
}

static void
open_two(void)
{
	srand48((long)getpid() ^ (long)time(NULL)); /* two processes: distinct PSNs */
	open_local();
	connect_peer();
}

static void
connect_two(void)
{
	connect_qps();
	R.run_start = rte_rdtsc();
	R.last_recv = R.run_start;
}

static void
end_two(void)
{
	pt_oob_close(&R.oob);
}

static void
nothing(void)
{
}

static void
nothing_size(uint64_t size)
{
	(void)size;
}

static const struct topology topologies[] = {
	{ "loopback", false, false, check_loop, open_devices, setup_loop, connect_loop,
	  { nothing_size, nothing_size }, nothing, close_devices },
	{ "loopback, rdma_cm", false, true, check_loop, open_devices, setup_loop, setup_loop_rdma_cm,
	  { nothing_size, nothing_size }, nothing, close_devices },
	{ "two processes", true, false, check_two, open_two, setup_two, connect_two,
	  { bw_end_two, lat_end_two }, end_two, teardown_two },
	{ "two processes, rdma_cm", true, true, check_two, open_two, setup_two, connect_two,
	  { bw_end_two, lat_end_two }, end_two, teardown_two },
};

void
run_topology(bool two, uint64_t *sizes, unsigned int n_sizes)
{
	const struct topology *t = NULL;

	for (size_t i = 0; i < RTE_DIM(topologies); i++)
		if (topologies[i].two == two && topologies[i].rdma_cm == o.rdma_cm)
			t = &topologies[i];
	R.two = two;
	t->check(n_sizes);
	t->open();
	tsc_hz = rte_get_tsc_hz();
	if (tsc_hz == 0)
		fail("no TSC frequency");
	n_sizes = ud_fit_sizes(sizes, n_sizes); /* two: the agreed MTU, both sides alike */
	R.multi_size = n_sizes > 1;
	if (R.me == 0)
		lat_samples_open();
	else if (o.lat_samples != NULL)
		fprintf(stderr, "droce-perf: --lat-samples: the client measures latency; the "
			"server writes no samples\n");
	print_banner();
	for (unsigned int i = 0; i < n_sizes; i++) {
		t->setup(sizes[i]);
		t->connect();
		if (i == 0) {
			print_addresses();
			if (R.me == 0 || o.mode == M_BW)
				print_header();
		}
		if (o.mode == M_BW)
			run_bw(sizes[i]);
		else
			run_lat(sizes[i]);
		t->run_end[o.mode](sizes[i]);
		if (!t->two)
			teardown(); /* two processes: after the reports (--stats reads the QPs) */
	}
	t->end();
	print_line();
	lat_samples_close();
	if (o.json)
		print_json();
	else if (o.stats)
		print_stats(stdout);
	fflush(stdout);
	t->close();
}
