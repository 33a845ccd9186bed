/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: a perftest-compatible RDMA benchmark over droce's verbs.
 *
 *     droce-perf write_bw -s 65536           (like ib_write_bw)
 *     droce-perf send_lat -a                 (like ib_send_lat -a)
 *     droce-perf atomic_bw -A CMP_AND_SWAP   (like ib_atomic_bw)
 *
 * Topology: loopback.  One process opens two devices (droce0 and droce1 of the
 * embedded in-memory config, or whatever DROCE_CONFIG names), plays client on
 * the first and server on the second, connects -q QP pairs with
 * ibv_modify_qp, and drives both ends from one thread: in co-located mode the
 * engines make progress inside ibv_poll_cq / ibv_post_send (with -e, droce's
 * fallback progress thread drives them while this one sleeps on the channels).
 *
 * Transports (-c): RC; UC (write and send tests); UD (send tests, messages
 * up to the path MTU, receive buffers 40 B longer for the GRH, perftest's
 * Q_Key 0x11111111, an address handle per QP built from the peer's GID).
 * UC and UD do not retransmit: a lost packet loses its message.  send_bw
 * then reports what the receiver got (as perftest's server does), and the
 * run ends once nothing more arrives for a second; only corrupt bytes
 * (--check) or nothing arriving for --timeout fail it.
 *
 * Bandwidth: -t operations outstanding per QP, every N-th one signaled
 * (perftest's CQ moderation), -l WRs per ibv_post_send.  BW average is bytes
 * over the time from the first post to the last completion; BW peak is the
 * best rate over any stretch holding a sixteenth of the messages (and one CQ
 * moderation round of every QP); perftest's peak is the best over any
 * stretch of completions, which jitter inflates.  MB = 2^20 bytes, as in
 * perftest; --report_gbits gives 10^9 bits.
 *
 * Latency: send_lat and write_lat ping-pong (write_lat polls the last byte of
 * the buffer the peer writes, as perftest does) and report half the round
 * trip; read_lat and atomic_lat time one operation at a time.  TSC-timed.
 *
 * --check: every message carries a pattern derived from its QP and sequence
 * number; the receiving side checks every byte (WRITE: the remote buffer once
 * the WRITE completed; SEND: the receive buffer at its completion; READ: the
 * local buffer at the READ's completion; atomics: each returned value, and
 * the final remote word).  Any mismatch fails the run.  UC and UD: a
 * received message is matched to the first unreceived one it can be (the
 * ones skipped were lost), UD's payload after the 40-byte GRH; a UC WRITE
 * is checked once it landed in the responder's memory (a sent one need not).
 *
 * Exit status: 0 ok; 1 the run failed (setup, completion error, data
 * mismatch, no progress within --timeout); 2 bad command line or an option
 * value droce does not support.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_log.h>

#include <droce/droce.h>
#include <droce/stats.h>


#include "perftest_oob.h"
#include "perftest_rdmacm.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2

#define MAX_QPS 256
#define MAX_SIZE (1ull << 30)
#define ALL_MIN_LOG 1  /* -a: 2 B .. */
#define ALL_MAX_LOG 23 /* .. 8 MiB */
#define AREA_BUDGET (4u << 20) /* bytes of slots per QP and direction */
#define SLOT_ALIGN 64
#define LAT_SQ_DEPTH 64
#define LAT_SIGNAL_EVERY 16
#define LAT_WARMUP 1024     /* unmeasured latency iterations before the measured ones */
#define LAT_RX_SLOTS 16
#define POLL_BATCH 32
#define WRID_SHIFT 40
#define WRID_MASK ((UINT64_C(1) << WRID_SHIFT) - 1)
#define PROGRESS_AFTER 3.0 /* seconds before the first progress line */
#define MAX_PEAK_POINTS (1u << 22)
#define MAX_LAT_SAMPLES (1u << 26)
#define DEF_LAT_INLINE 220
#define DEF_QKEY 0x11111111u /* perftest's DEF_QKEY */
#define GRH_LEN 40           /* UD receive buffers start with the GRH area */
#define DRAIN_QUIET 1.0      /* UC/UD: seconds without an arrival before the rest is lost */

enum verb { V_WRITE, V_READ, V_SEND, V_ATOMIC };
enum mode { M_BW, M_LAT };

static const char *const verb_name[] = { "write", "read", "send", "atomic" };
static const char *const verb_title[] = { "RDMA_Write", "RDMA_Read", "Send", "Atomic" };

struct opts {
	enum verb verb;
	enum mode mode;
	char test[32];
	uint64_t size;
	uint64_t sizes[64]; /* -s A,B,C (a droce extension) */
	unsigned int n_sizes;
	bool size_set, all;
	uint64_t iters;
	bool iters_set;
	double duration; /* 0: iterations */
	uint32_t tx_depth, rx_depth;
	bool tx_depth_set;
	uint32_t qps;
	uint32_t post_list;
	int inline_size; /* -1: default */
	uint32_t mtu;    /* bytes, 0: the port's active MTU */
	uint32_t cq_mod;
	bool cq_mod_set;
	bool report_gbits;
	int tcp_port;
	bool json, stats, check, verbose;
	bool cmp_swap;
	const char *dev;
	int gid_index;
	double timeout;
	int64_t inject; /* --inject-error: message whose arrival is corrupted, -1 none */
	const char *host; /* two processes: the server to connect to (client role) */
	bool server;      /* two processes: wait for a client on -p */
	const char *bind; /* server: the address to listen on (default: every one) */
	enum ibv_qp_type qpt; /* -c: IBV_QPT_RC, IBV_QPT_UC or IBV_QPT_UD */
	const char *conn;     /* -c as text: "RC", "UC", "UD" */
	const char *lat_samples; /* --lat-samples: every latency sample to this file */
	int64_t warmup;          /* --warmup: unmeasured latency iterations (-1: default) */
	bool use_event;          /* -e: block in ibv_get_cq_event instead of busy-polling */
	int outs;                /* -o: outstanding READs / atomics (0: the device's maximum) */
	uint32_t out_reads;      /* what this side offers: -o for READ and atomics, else 1 */
	bool rdma_cm;            /* -R: connect the QPs (and talk) through rdma_cm */
	uint8_t qp_timeout;      /* -u: RC local ACK timeout, 4.096 us * 2^N (perftest: 14) */
	bool qp_timeout_set;
	bool new_post;           /* --new-post: the ibv_wr_* builder, not ibv_post_send */
};

static struct opts o;
static uint64_t tsc_hz;

/* --new-post / --old-post: how QPs are created and WRs posted */
static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia);
static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);

/* ---- errors ---- */

static bool stats_ready; /* --stats: the engines and ports are there to report */
static void print_stats(FILE *f);

static void __attribute__((format(printf, 1, 2), noreturn))
fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "droce-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (o.stats && stats_ready) {
		/* a failed run's counters say the most (drops, retransmissions) */
		stats_ready = false;
		print_stats(stderr);
	}
	exit(EXIT_FAIL);
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: droce-perf TEST [options]\n"
"  TEST: write_bw write_lat read_bw read_lat send_bw send_lat atomic_bw atomic_lat\n"
"        (perftest's ib_write_bw etc.; the ib_ prefix is accepted)\n"
"       droce-perf TEST --server [options]     (two processes: the server)\n"
"       droce-perf TEST SERVER_ADDR [options]  (two processes: the client)\n"
"Without --server and without SERVER_ADDR, runs client and server in this\n"
"process over two droce devices (loopback: droce0 -> droce1 of the embedded\n"
"in-memory config, or $DROCE_CONFIG); a config with one device implies\n"
"--server.  Two processes (each with its own DROCE_CONFIG, e.g. one memif port\n"
"each) meet over perftest's TCP handshake on -p, so either side may also be\n"
"perftest's ib_write_bw & co.\n"
"  -s, --size=BYTES[,..]   message size (default 65536 for bw, 2 for lat; atomics 8);\n"
"                          a comma-separated list runs each size in turn (droce)\n"
"  -a, --all               every power of two from 2 B to 8 MiB\n"
"  -n, --iters=N           iterations per QP (default 5000 bw, 1000 lat)\n"
"  -D, --duration=SEC      run each size for SEC seconds instead of -n\n"
"  -t, --tx-depth=N        operations outstanding per QP (default 128 bw, 1 lat)\n"
"  -r, --rx-depth=N        receives posted per QP for send tests (default 512)\n"
"  -q, --qp=N              QP pairs (bw tests; default 1)\n"
"  -l, --post_list=N       WRs per ibv_post_send (default 1)\n"
"      --new-post          post with the ibv_wr_* builder (ibv_create_qp_ex with\n"
"                          send_ops_flags, ibv_wr_start ... ibv_wr_complete; one\n"
"                          batch per -l WRs), as perftest does by default\n"
"      --old-post, --use_old_post_send  post with ibv_post_send (droce-perf's default)\n"
"  -Q, --cq-mod=N          signal one completion every N operations (default 100)\n"
"  -I, --inline_size=N     inline WRITE/SEND payloads up to N bytes (max 256;\n"
"                          default 0 for bw, 220 for lat)\n"
"  -m, --mtu=BYTES         path MTU 256..4096 (default: the port's active MTU)\n"
"  -c, --connection=TYPE   transport: RC (default), UC (write and send tests) or UD\n"
"                          (send tests; messages up to the path MTU, Q_Key 0x11111111).\n"
"                          UC and UD do not retransmit: a lost message is lost, and\n"
"                          send_bw reports what the receiver got\n"
"  -A, --atomic_type=TYPE  FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
"  -d, --ib-dev=NAME       client device (default droce0; the server is the other)\n"
"  -x, --gid-index=N       GID index (default 0)\n"
"  -i, --ib-port=1         device port (droce devices have one)\n"
"  -p, --port=N            TCP port of perftest's handshake (default 18515)\n"
"      --server            two processes: wait for a client on -p\n"
"      --bind=ADDR         server: listen on ADDR only (default: every address)\n"
"  -F, --CPU-freq          accepted (perftest compatibility)\n"
"  -e, --use_event         sleep in ibv_get_cq_event on a completion channel instead\n"
"                          of busy-polling the CQ (bw tests and send_lat)\n"
"      --report_gbits      bandwidth in Gb/sec instead of MB/sec (and, as perftest, the\n"
"                          figures exchanged with the peer are in Gb/sec too)\n"
"  -o, --outs=N            READ and atomic tests: operations outstanding at the\n"
"                          responder (max_dest_rd_atomic) and, the peer's value,\n"
"                          at the requester (max_rd_atomic); default the device's\n"
"                          maximum (%d)\n"
"  -u, --qp-timeout=N      RC local ACK timeout, 4.096 us * 2^N (default 14, 67 ms;\n"
"                          7 retries), as perftest's -u; with -R, the rdma_cm ids'\n"
"                          ACK timeout (RDMA_OPTION_ID_ACK_TIMEOUT)\n"
"  -R, --rdma_cm           connect the QPs through rdma_cm (droce's IB CM), and talk\n"
"                          to the peer over an rdma_cm connection instead of TCP,\n"
"                          both on -p, as perftest's -R (RC only)\n"
"      --json              results as one JSON object on stdout\n"
"      --stats             print engine and port counters at the end\n"
"      --check             check every byte of every message (and atomic results)\n"
"      --timeout=SEC       fail when no completion arrives for SEC seconds (default 10)\n"
"      --inject-error=N    with --check: flip a bit of message N of QP pair 0 where it\n"
"                          landed, before checking it (proves --check catches it)\n"
"      --warmup=N          latency tests: N iterations before the measured ones (default\n"
"                          1024; 0 against perftest, which has none): the first pass\n"
"                          over fresh rings and buffers costs page faults\n"
"      --lat-samples=FILE  latency tests: write every sample (the values t_min, typical\n"
"                          and the percentiles come from) to FILE, one per line, in usec\n"
"                          with 3 decimals, in the order measured; with several sizes\n"
"                          (-s A,B or -a) each line is \"SIZE USEC\"\n"
"  -v, --verbose           keep DPDK's start-up log\n"
"  -h, --help\n"
"Exit status: 0 ok, 1 run failed (error completion, data mismatch, timeout),\n"
"2 bad command line or unsupported option.\n", DROCE_MAX_RD_ATOMIC);
}

static void __attribute__((format(printf, 1, 2), noreturn))
usage_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "droce-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	usage(stderr);
	exit(EXIT_USAGE);
}

static void __attribute__((format(printf, 1, 2), noreturn))
unsupported(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "droce-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(EXIT_USAGE);
}

static uint64_t
parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (s[0] == '-')
		usage_fail("%s %s: not a number in %" PRIu64 "..%" PRIu64, opt, s, min, max);
	v = strtoull(s, &end, 0);
	if (errno == 0 && end != s) {
		/* sizes may carry K / M / G */
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		else if (*end == 'g' || *end == 'G')
			v <<= 30, end++;
	}
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		usage_fail("%s %s: not a number in %" PRIu64 "..%" PRIu64, opt, s, min, max);
	return v;
}

static double
parse_seconds(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > 86400)
		usage_fail("%s %s: not a number of seconds in (0, 86400]", opt, s);
	return v;
}

enum {
	OPT_REPORT_GBITS = 256,
	OPT_JSON,
	OPT_STATS,
	OPT_CHECK,
	OPT_TIMEOUT,
	OPT_INJECT,
	OPT_SERVER,
	OPT_BIND,
	OPT_LAT_SAMPLES,
	OPT_WARMUP,
	OPT_NEW_POST,
	OPT_OLD_POST,
};

static void
parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "qp", required_argument, NULL, 'q' },
		{ "post_list", required_argument, NULL, 'l' },
		{ "cq-mod", required_argument, NULL, 'Q' },
		{ "inline_size", required_argument, NULL, 'I' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "connection", required_argument, NULL, 'c' },
		{ "atomic_type", required_argument, NULL, 'A' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "gid-index", required_argument, NULL, 'x' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "port", required_argument, NULL, 'p' },
		{ "CPU-freq", no_argument, NULL, 'F' },
		{ "report_gbits", no_argument, NULL, OPT_REPORT_GBITS },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "inject-error", required_argument, NULL, OPT_INJECT },
		{ "server", no_argument, NULL, OPT_SERVER },
		{ "bind", required_argument, NULL, OPT_BIND },
		{ "lat-samples", required_argument, NULL, OPT_LAT_SAMPLES },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "use_event", no_argument, NULL, 'e' },
		{ "outs", required_argument, NULL, 'o' },
		{ "rdma_cm", no_argument, NULL, 'R' },
		{ "qp-timeout", required_argument, NULL, 'u' },
		{ "new-post", no_argument, NULL, OPT_NEW_POST },
		{ "old-post", no_argument, NULL, OPT_OLD_POST },
		{ "use_old_post_send", no_argument, NULL, OPT_OLD_POST },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *test = NULL, *conn = "RC";
	bool outs_set = false;
	int opt;

	o.inline_size = -1;
	o.qps = 1;
	o.post_list = 1;
	o.rx_depth = 512;
	o.cq_mod = 100;
	o.tcp_port = 18515;
	o.timeout = 10;
	o.warmup = -1;
	o.dev = "droce0";
	o.inject = -1;
	o.qp_timeout = 14;

	while ((opt = getopt_long(argc, argv, "s:an:D:t:r:q:l:Q:I:m:c:A:d:x:i:p:Fevho:Ru:", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 's':
			o.n_sizes = 0;
			for (char *save = NULL, *tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (o.n_sizes == RTE_DIM(o.sizes))
					usage_fail("-s: at most %zu sizes", RTE_DIM(o.sizes));
				o.sizes[o.n_sizes++] = parse_u64("-s", tok, 1, MAX_SIZE);
			}
			if (o.n_sizes == 0)
				usage_fail("-s: no size given");
			o.size = o.sizes[0];
			o.size_set = true;
			break;
		case 'a':
			o.all = true;
			break;
		case 'n':
			o.iters = parse_u64("-n", optarg, 1, 1ull << 36);
			o.iters_set = true;
			break;
		case 'D':
			o.duration = parse_seconds("-D", optarg);
			break;
		case 't':
			o.tx_depth = (uint32_t)parse_u64("-t", optarg, 1, DROCE_MAX_QP_WR);
			o.tx_depth_set = true;
			break;
		case 'r':
			o.rx_depth = (uint32_t)parse_u64("-r", optarg, 1, DROCE_MAX_QP_WR);
			break;
		case 'q':
			o.qps = (uint32_t)parse_u64("-q", optarg, 1, MAX_QPS);
			break;
		case 'l':
			o.post_list = (uint32_t)parse_u64("-l", optarg, 1, 1024);
			break;
		case 'Q':
			o.cq_mod = (uint32_t)parse_u64("-Q", optarg, 1, DROCE_MAX_QP_WR);
			o.cq_mod_set = true;
			break;
		case 'I':
			o.inline_size = (int)parse_u64("-I", optarg, 0, 1u << 20);
			break;
		case 'm':
			o.mtu = (uint32_t)parse_u64("-m", optarg, 256, 4096);
			if (o.mtu & (o.mtu - 1))
				usage_fail("-m %s: path MTU is one of 256, 512, 1024, 2048, 4096", optarg);
			break;
		case 'c':
			conn = optarg;
			break;
		case 'A':
			if (strcmp(optarg, "FETCH_AND_ADD") == 0)
				o.cmp_swap = false;
			else if (strcmp(optarg, "CMP_AND_SWAP") == 0)
				o.cmp_swap = true;
			else
				usage_fail("-A %s: atomic type is FETCH_AND_ADD or CMP_AND_SWAP", optarg);
			break;
		case 'd':
			o.dev = optarg;
			break;
		case 'x':
			o.gid_index = (int)parse_u64("-x", optarg, 0, DROCE_MAX_GIDS - 1);
			break;
		case 'i':
			parse_u64("-i", optarg, 1, 1);
			break;
		case 'p':
			o.tcp_port = (int)parse_u64("-p", optarg, 1, 65535);
			break;
		case 'F':
			break;
		case OPT_REPORT_GBITS:
			o.report_gbits = true;
			break;
		case OPT_JSON:
			o.json = true;
			break;
		case OPT_STATS:
			o.stats = true;
			break;
		case OPT_CHECK:
			o.check = true;
			break;
		case OPT_TIMEOUT:
			o.timeout = parse_seconds("--timeout", optarg);
			break;
		case OPT_INJECT:
			o.inject = (int64_t)parse_u64("--inject-error", optarg, 0, 1ull << 36);
			break;
		case OPT_SERVER:
			o.server = true;
			break;
		case OPT_BIND:
			o.bind = optarg;
			break;
		case OPT_LAT_SAMPLES:
			if (optarg[0] == '\0')
				usage_fail("--lat-samples: no file name given");
			o.lat_samples = optarg;
			break;
		case OPT_WARMUP:
			o.warmup = (int64_t)parse_u64("--warmup", optarg, 0, 1u << 24);
			break;
		case 'e':
			o.use_event = true;
			break;
		case 'o':
			o.outs = (int)parse_u64("-o", optarg, 0, 1u << 16);
			outs_set = true;
			break;
		case 'R':
			o.rdma_cm = true;
			break;
		case 'u':
			o.qp_timeout = (uint8_t)parse_u64("-u", optarg, 1, 31);
			o.qp_timeout_set = true;
			break;
		case OPT_NEW_POST:
			o.new_post = true;
			break;
		case OPT_OLD_POST:
			o.new_post = false;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		test = argv[optind++];
	if (optind < argc)
		o.host = argv[optind++];
	if (optind < argc)
		usage_fail("unexpected argument '%s'", argv[optind]);
	if (o.host && o.server)
		usage_fail("--server and a server address '%s' exclude each other", o.host);
	if (test == NULL)
		usage_fail("no test given");

	/* the test: [ib_]{write,read,send,atomic}_{bw,lat} */
	{
		const char *t = strncmp(test, "ib_", 3) == 0 ? test + 3 : test;
		const char *us = strrchr(t, '_');
		bool found = false;

		if (us != NULL && (strcmp(us, "_bw") == 0 || strcmp(us, "_lat") == 0)) {
			for (unsigned int v = 0; v < RTE_DIM(verb_name); v++) {
				if (strlen(verb_name[v]) == (size_t)(us - t) &&
				    strncmp(t, verb_name[v], (size_t)(us - t)) == 0) {
					o.verb = (enum verb)v;
					found = true;
				}
			}
			o.mode = strcmp(us, "_bw") == 0 ? M_BW : M_LAT;
		}
		if (!found)
			usage_fail("unknown test '%s'", test);
		snprintf(o.test, sizeof(o.test), "%s", t);
	}

	if (strcmp(conn, "RC") == 0) {
		o.qpt = IBV_QPT_RC;
		o.conn = "RC";
	} else if (strcmp(conn, "UC") == 0) {
		/* perftest: UC has RDMA WRITE and SEND, no READ or atomics */
		if (o.verb == V_READ || o.verb == V_ATOMIC)
			unsupported("-c UC: UC connection not possible in %s tests (UC has RDMA "
				    "WRITE and SEND only; use -c RC)", o.verb == V_READ ?
				    "READ" : "ATOMIC");
		o.qpt = IBV_QPT_UC;
		o.conn = "UC";
	} else if (strcmp(conn, "UD") == 0) {
		/* perftest: UD is for send_bw and send_lat only */
		if (o.verb != V_SEND)
			unsupported("-c UD: UD connection only possible in SEND tests (send_bw, "
				    "send_lat), not %s", o.test);
		o.qpt = IBV_QPT_UD;
		o.conn = "UD";
	} else if (strcmp(conn, "XRC") == 0 || strcmp(conn, "DC") == 0 ||
		   strcmp(conn, "SRD") == 0) {
		unsupported("-c %s: droce does not support %s", conn, conn);
	} else {
		usage_fail("-c %s: connection type is RC, UC or UD", conn);
	}

	/* -o: perftest's ctx_set_out_reads (READ and atomics only; above the
	 * device's max_qp_rd_atom it is brought down, 0 means the max) */
	if (outs_set && o.verb != V_READ && o.verb != V_ATOMIC)
		usage_fail("-o %d: setting outstanding reads is only for the READ and atomic tests",
			   o.outs);
	if (o.verb == V_READ || o.verb == V_ATOMIC) {
		if (o.outs > DROCE_MAX_RD_ATOMIC) {
			fprintf(stderr, "droce-perf: -o %d: number of outstanding reads is above the "
				"max = %d; using it\n", o.outs, DROCE_MAX_RD_ATOMIC);
			o.outs = DROCE_MAX_RD_ATOMIC;
		}
		o.out_reads = o.outs > 0 ? (uint32_t)o.outs : DROCE_MAX_RD_ATOMIC;
	} else {
		o.out_reads = 1;
	}
	if (o.rdma_cm && o.qpt == IBV_QPT_UC)
		unsupported("-R: UC is not supported in librdmacm (perftest says so too)");
	if (o.rdma_cm && o.new_post)
		unsupported("--new-post with -R: droce's rdma_create_qp_ex takes no send_ops_flags "
			    "yet (use --old-post)");
	if (o.rdma_cm && o.qpt == IBV_QPT_UD && o.mode == M_LAT)
		unsupported("-R with -c UD: send_bw only (send_lat's UD address exchange over "
			    "rdma_cm is not done in droce-perf yet)");

	if (o.inject >= 0 && !o.check)
		usage_fail("--inject-error needs --check");
	if (o.lat_samples && o.mode != M_LAT)
		usage_fail("--lat-samples: only for the latency tests (*_lat)");
	if (!o.iters_set)
		o.iters = o.mode == M_BW ? 5000 : 1000;
	if (o.warmup >= 0 && o.mode != M_LAT)
		usage_fail("--warmup: only for the latency tests (*_lat)");
	if (o.warmup < 0)
		o.warmup = o.mode == M_LAT ? LAT_WARMUP : 0;
	if (o.verb == V_ATOMIC) {
		if (o.size_set && (o.size != 8 || o.n_sizes > 1))
			fprintf(stderr, "droce-perf: atomics move 8 bytes: -s ignored\n");
		o.size = 8;
		o.sizes[0] = 8;
		o.n_sizes = 1;
		o.all = false;
	} else if (!o.size_set) {
		o.size = o.mode == M_BW ? 65536 : 2;
		o.sizes[0] = o.size;
		o.n_sizes = 1;
	}
	if (o.use_event && o.mode == M_LAT && o.verb != V_SEND)
		unsupported("-e: %s polls the buffer the peer writes, not a CQ (send_lat takes -e)",
			    o.test);
	if (o.mode == M_LAT) {
		if (o.qps != 1)
			usage_fail("-q %u: latency tests use one QP", o.qps);
		if (o.post_list != 1)
			usage_fail("-l %u: latency tests post one WR at a time", o.post_list);
		if (o.tx_depth_set && o.tx_depth != 1)
			usage_fail("-t %u: latency tests keep one operation outstanding", o.tx_depth);
		o.tx_depth = 1;
	} else {
		if (!o.tx_depth_set)
			o.tx_depth = 128;
		if (o.post_list > o.tx_depth)
			usage_fail("-l %u: post list larger than the TX depth (-t %u)", o.post_list,
				   o.tx_depth);
	}
	if (o.inline_size < 0)
		o.inline_size = (o.mode == M_LAT && (o.verb == V_WRITE || o.verb == V_SEND)) ?
					DEF_LAT_INLINE : 0;
	if (o.inline_size > DROCE_MAX_INLINE)
		unsupported("-I %d: droce inlines at most %d bytes", o.inline_size,
			    DROCE_MAX_INLINE);
	if (o.verb == V_READ || o.verb == V_ATOMIC)
		o.inline_size = 0; /* the data comes back: nothing to inline */
}

/* ---- the pattern --check uses ---- */

static inline uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

#define PAT_STEP 0x9e3779b97f4a7c15ull

/* Message @seq of QP pair @qp: distinct 8-byte words, and the last byte is
 * (uint8_t)(seq + 1) so a poller sees every new message arrive. */
static void
pattern_fill(uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq)
{
	uint64_t k = mix64(((uint64_t)qp << 44) ^ seq ^ 0x5eed);
	uint64_t n = len / 8, i;

	for (i = 0; i < n; i++) {
		uint64_t v = k + i * PAT_STEP;

		memcpy(p + 8 * i, &v, 8);
	}
	if (len % 8) {
		uint64_t v = k + n * PAT_STEP;

		memcpy(p + 8 * n, &v, len % 8);
	}
	if (len)
		p[len - 1] = (uint8_t)(seq + 1);
}

/* Offset of the first byte that differs from the pattern, or -1. */
static int64_t
pattern_check(const uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq)
{
	uint64_t k = mix64(((uint64_t)qp << 44) ^ seq ^ 0x5eed);
	uint64_t n = len / 8, i;
	uint8_t w[8];

	for (i = 0; i < n; i++) {
		uint64_t v = k + i * PAT_STEP;

		if (8 * i + 8 == len)
			break; /* the last word holds the marker byte */
		if (memcmp(p + 8 * i, &v, 8) != 0) {
			memcpy(w, &v, 8);
			for (unsigned int b = 0; b < 8; b++)
				if (p[8 * i + b] != w[b])
					return (int64_t)(8 * i + b);
		}
	}
	for (uint64_t off = 8 * i; off < len; off++) {
		uint64_t v = k + (off / 8) * PAT_STEP;
		uint8_t want;

		memcpy(w, &v, 8);
		want = off == len - 1 ? (uint8_t)(seq + 1) : w[off % 8];
		if (p[off] != want)
			return (int64_t)off;
	}
	return -1;
}

/* --inject-error: a wrong byte where message @seq of pair @qp landed. */
static inline void
inject(uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq)
{
	if (o.inject >= 0 && qp == 0 && seq == (uint64_t)o.inject)
		p[len / 2] ^= 0x10;
}

static void __attribute__((noreturn))
check_failed(const char *what, uint32_t qp, uint64_t seq, const uint8_t *p, uint64_t len,
	     int64_t off)
{
	uint8_t want[8] = { 0 };
	uint8_t *tmp = malloc(len);

	if (tmp) {
		pattern_fill(tmp, len, qp, seq);
		want[0] = tmp[off];
		free(tmp);
	}
	fail("--check: %s: QP pair %u message %" PRIu64 " (%" PRIu64 " B): byte %" PRId64
	     " is 0x%02x, expected 0x%02x", what, qp, seq, len, off, p[off], want[0]);
}

/* ---- devices, buffers, QPs ---- */

struct side {
	const char *role;
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch; /* -e */
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	union ibv_gid gid;
	enum ibv_mtu active_mtu;
};

/* Layout of each side's region for one QP pair: ntx transmit slots, then nrx
 * receive slots (the area the peer writes, reads, sends into, or does atomics
 * on). */
struct layout {
	uint64_t size, stride;
	uint32_t ntx, nrx;
	uint64_t region; /* bytes per QP pair and side */
};

struct pair {
	struct ibv_qp *qp[2];
	uint32_t psn[2];
	uint8_t *base[2];
	/* bandwidth: client -> server */
	uint64_t posted, completed, target;
	uint64_t recv_seen[2]; /* receive completions per side (in order on RC) */
	uint64_t sends_done[2];
	uint64_t signaled[2];  /* latency: signaled WRs posted per side */
	struct pt_dest rem;    /* two processes: the peer's QP, rkey, vaddr, GID */
	struct rdma_cm_id *cm_id[2]; /* -R: the rdma_cm id each side's QP belongs to */
	/* UC and UD (no retransmission) */
	struct ibv_ah *ah[2];  /* UD: each side's address handle to the other */
	uint32_t rem_qpn[2];   /* UD: the QPN each side sends to */
	uint64_t next_seq[2];  /* --check: the message expected next on this side */
	uint64_t lost[2];      /* messages to this side known never to arrive */
	uint64_t checked;      /* UC write_bw --check: messages verified at the responder */
	uint64_t late_from;    /* SEND: the first message run_bw gave up on ... */
	bool gave_up;          /* ... if it did */
	uint64_t res_seen, idle_polls; /* run_bw: polls since resolved() last moved */
	uint64_t last_arrival; /* TSC of the last arrival seen (receive or verified WRITE) */
};

struct run {
	struct side s[2]; /* [0] client, [1] server */
	struct layout lay;
	struct pair p[MAX_QPS];
	uint32_t sq_depth, depth; /* QP send queue size; outstanding allowed per QP */
	uint32_t cq_mod;
	enum ibv_mtu mtu;
	/* two processes: this process plays side `me` only */
	bool two;
	int me;
	uint32_t rem_nrx;      /* slots in the peer's receive area */
	struct pt_oob oob;
	struct pt_rcm chan;    /* -R: perftest's rdma_cm channel (instead of TCP) */
	struct pt_rcm cm;      /* -R: the test QPs' rdma_cm connections */
	uint32_t nrecv;        /* receives posted per QP (send tests) */
	uint32_t grh;          /* UD: GRH_LEN bytes ahead of each received payload */
	uint64_t last_recv;    /* TSC of the last receive completion on either side */
	FILE *lat_f;           /* --lat-samples */
	uint64_t run_start;    /* two processes: TSC when the QPs were connected */
	bool multi_size;       /* several sizes in the run: --lat-samples lines say which */
	bool loop_cli_open;    /* -R loopback: the client's event channel is open */
	uint32_t rem_qkey;     /* UD: the peer's Q_Key (perftest's DEF_QKEY; -R: rdma_cm's) */
};

static struct run R;
static struct pt_rcm loop_cli; /* -R loopback: the client side's rdma_cm channel */

static inline uint8_t *
tx_slot(const struct pair *p, int side, uint64_t i)
{
	return p->base[side] + (i % R.lay.ntx) * R.lay.stride;
}

static inline uint8_t *
rx_slot(const struct pair *p, int side, uint64_t i)
{
	return p->base[side] + ((uint64_t)R.lay.ntx + i % R.lay.nrx) * R.lay.stride;
}

static uint32_t
clamp_slots(uint64_t stride, uint32_t want)
{
	/* 4 MiB per QP and direction, 256 MiB per side in all */
	uint64_t budget = RTE_MIN((uint64_t)AREA_BUDGET, (256ull << 20) / (2 * o.qps));
	uint64_t n = budget / stride;

	if (n < 1)
		n = 1;
	return n < want ? (uint32_t)n : want;
}

static struct layout
layout_for(uint64_t size)
{
	struct layout l = { .size = size };

	/* UD: a receive slot takes the 40-byte GRH area, then the payload */
	l.stride = RTE_ALIGN_CEIL(size + R.grh, SLOT_ALIGN);
	if (o.mode == M_LAT) {
		l.ntx = 1;
		l.nrx = o.verb == V_SEND ? LAT_RX_SLOTS : 1;
	} else if (o.verb == V_ATOMIC) {
		l.ntx = o.tx_depth;
		l.nrx = 1;
	} else {
		l.ntx = clamp_slots(l.stride, o.tx_depth);
		l.nrx = clamp_slots(l.stride, o.verb == V_SEND ? o.rx_depth : o.tx_depth);
	}
	l.region = (uint64_t)(l.ntx + l.nrx) * l.stride;
	return l;
}

static enum ibv_mtu
mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

static uint32_t
mtu_bytes(enum ibv_mtu m)
{
	return 128u << m;
}

static struct ibv_context *rcm_context_of(struct ibv_device *dev);

static void
open_devices(void)
{
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		fail("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), o.dev) == 0)
			R.s[0].dev = list[i];
	if (R.s[0].dev == NULL)
		fail("no device %s (%d devices)", o.dev, n);
	for (int i = 0; i < n; i++)
		if (list[i] != R.s[0].dev) {
			R.s[1].dev = list[i];
			break;
		}
	if (R.s[1].dev == NULL)
		fail("loopback needs two devices, the config has %d", n);
	R.s[0].role = "client";
	R.s[1].role = "server";
	for (int k = 0; k < 2; k++) {
		struct side *s = &R.s[k];
		struct ibv_port_attr pa;

		s->ctx = o.rdma_cm ? rcm_context_of(s->dev) : ibv_open_device(s->dev);
		if (s->ctx == NULL)
			fail("ibv_open_device %s: %s", ibv_get_device_name(s->dev), strerror(errno));
		if (ibv_query_port(s->ctx, 1, &pa) != 0)
			fail("ibv_query_port %s", ibv_get_device_name(s->dev));
		if (pa.state != IBV_PORT_ACTIVE)
			fail("%s: port is %s", ibv_get_device_name(s->dev),
			     ibv_port_state_str(pa.state));
		s->active_mtu = pa.active_mtu;
		if (ibv_query_gid(s->ctx, 1, o.gid_index, &s->gid) != 0)
			fail("%s: no GID index %d", ibv_get_device_name(s->dev), o.gid_index);
		s->pd = ibv_alloc_pd(s->ctx);
		if (s->pd == NULL)
			fail("ibv_alloc_pd: %s", strerror(errno));
	}
	ibv_free_device_list(list);
	stats_ready = true;

	R.mtu = R.s[0].active_mtu < R.s[1].active_mtu ? R.s[0].active_mtu : R.s[1].active_mtu;
	if (o.mtu) {
		if (mtu_enum(o.mtu) > R.mtu)
			fprintf(stderr, "droce-perf: requested MTU %u is larger than the active MTU "
				"%u: using %u\n", o.mtu, mtu_bytes(R.mtu), mtu_bytes(R.mtu));
		else
			R.mtu = mtu_enum(o.mtu);
	}
}

static void
close_devices(void)
{
	for (int k = 0; k < 2; k++) {
		if (ibv_dealloc_pd(R.s[k].pd) != 0)
			fail("ibv_dealloc_pd");
		if (!o.rdma_cm && ibv_close_device(R.s[k].ctx) != 0)
			fail("ibv_close_device");
	}
	if (o.rdma_cm)
		pt_rcm_close(&R.cm);
}

static void
to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	int rc;

	if (o.qpt == IBV_QPT_UD) {
		/* UD: a Q_Key instead of access flags (perftest's DEF_QKEY) */
		a.qp_access_flags = 0;
		a.qkey = DEF_QKEY;
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	} else if (o.qpt == IBV_QPT_UC) {
		/* UC: RDMA WRITE is the only remote access there is */
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	}
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc != 0)
		fail("ibv_modify_qp %s QP to INIT: %s", o.conn, strerror(rc));
}

/* RC, as perftest's ctx_modify_qp_to_rtr / _rts: max_dest_rd_atomic is this
 * side's outstanding reads (-o), max_rd_atomic the peer's. */
static void
to_rts(struct ibv_qp *qp, uint32_t psn, const struct ibv_qp *peer, uint32_t peer_psn,
       const union ibv_gid *peer_gid, uint32_t my_reads, uint32_t peer_reads)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = R.mtu, .dest_qp_num = peer->qp_num,
		.rq_psn = peer_psn, .max_dest_rd_atomic = (uint8_t)my_reads,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *peer_gid, .sgid_index = (uint8_t)o.gid_index,
				      .hop_limit = 64 } },
	};
	int rc;

	if (o.qpt == IBV_QPT_UD) {
		/* UD: no path, no peer in the QP (each WR names its AH and QPN) */
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		if (rc != 0)
			fail("ibv_modify_qp UD QP to RTR: %s", strerror(rc));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = psn;
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		if (rc != 0)
			fail("ibv_modify_qp UD QP to RTS: %s", strerror(rc));
		return;
	}
	if (o.qpt == IBV_QPT_UC) {
		/* UC: the path and the peer, but no responder resources, ACK
		 * timeout, retries or RNR timer */
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
		if (rc != 0)
			fail("ibv_modify_qp UC QP to RTR: %s", strerror(rc));
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = psn;
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		if (rc != 0)
			fail("ibv_modify_qp UC QP to RTS: %s", strerror(rc));
		return;
	}
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc != 0)
		fail("ibv_modify_qp to RTR: %s", strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o.qp_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = (uint8_t)peer_reads;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc != 0)
		fail("ibv_modify_qp to RTS: %s", strerror(rc));
}

/* UD: @side's address handle to the peer's GID, as perftest builds it
 * (RoCEv2: global, the peer's GID, our GID index, a hop limit). */
static struct ibv_ah *
make_ah(int side, const union ibv_gid *dgid)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = *dgid, .sgid_index = (uint8_t)o.gid_index, .hop_limit = 64 },
	};
	struct ibv_ah *ah = ibv_create_ah(R.s[side].pd, &a);

	if (ah == NULL)
		fail("ibv_create_ah (%s, to the peer's GID): %s", R.s[side].role, strerror(errno));
	return ah;
}

static void post_recv_slot(struct pair *p, uint32_t pi, int side, uint32_t slot);

/* Buffers, MRs, CQs and connected QP pairs for messages of @size. */
/* One side's registered buffer (the layout's region per QP pair) and its CQ. */
static void
side_alloc(struct side *s, uint64_t cqe)
{
	s->buf_len = RTE_ALIGN_CEIL(R.lay.region * o.qps, 4096);
	if (posix_memalign((void **)&s->buf, 4096, s->buf_len) != 0)
		fail("out of memory for %zu B of buffers", s->buf_len);
	memset(s->buf, 0, s->buf_len);
	s->mr = ibv_reg_mr(s->pd, s->buf, s->buf_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (s->mr == NULL)
		fail("ibv_reg_mr %zu B: %s", s->buf_len, strerror(errno));
	if (o.use_event && s->ch == NULL) {
		s->ch = ibv_create_comp_channel(s->ctx);
		if (s->ch == NULL)
			fail("ibv_create_comp_channel: %s", strerror(errno));
	}
	s->cq = ibv_create_cq(s->ctx, (int)cqe, NULL, s->ch, 0);
	if (s->cq == NULL)
		fail("ibv_create_cq %" PRIu64 ": %s", cqe, strerror(errno));
}

static void setup_loop_rdma_cm(void);

static void
setup(uint64_t size)
{
	uint32_t nrecv;
	uint64_t cqe;

	R.lay = layout_for(size);
	/* receives posted per QP: one per slot with --check; without, -r of
	 * them share the slots (as perftest's receives share its buffer) */
	nrecv = o.verb != V_SEND ? 0 : (o.mode == M_BW && !o.check) ? o.rx_depth : R.lay.nrx;
	if (o.mode == M_LAT) {
		R.sq_depth = LAT_SQ_DEPTH;
		R.depth = 1;
	} else {
		R.sq_depth = o.tx_depth;
		R.depth = o.tx_depth;
		if (o.verb == V_SEND && R.depth > nrecv)
			R.depth = nrecv; /* never more in flight than receives posted */
		if (o.check && R.depth > R.lay.ntx)
			R.depth = R.lay.ntx; /* a slot is refilled only once its message completed */
		if (o.check && o.verb != V_SEND && R.depth > R.lay.nrx)
			R.depth = R.lay.nrx;
		if (o.check && R.depth < o.post_list)
			fail("--check with -l %u needs %u slots of %" PRIu64 " B; use a smaller -l "
			     "or -s", o.post_list, o.post_list, size);
		if (R.depth < o.post_list)
			R.depth = o.post_list; /* the slots then overlap: only without --check */
	}
	R.cq_mod = o.post_list > 1 ? o.post_list : o.cq_mod;
	if (R.cq_mod > R.depth)
		R.cq_mod = R.depth;

	R.nrecv = nrecv;
	cqe = (uint64_t)o.qps * (R.sq_depth + nrecv) + 16;
	for (int k = 0; k < 2; k++) {
		struct side *s = &R.s[k];

		side_alloc(s, cqe);
	}
	if (o.rdma_cm) {
		setup_loop_rdma_cm();
		return;
	}
	for (uint32_t i = 0; i < o.qps; i++) {
		struct pair *p = &R.p[i];

		memset(p, 0, sizeof(*p));
		for (int k = 0; k < 2; k++) {
			struct side *s = &R.s[k];
			struct ibv_qp_init_attr ia = {
				.send_cq = s->cq, .recv_cq = s->cq, .qp_type = o.qpt,
				.cap = { .max_send_wr = R.sq_depth,
					 .max_recv_wr = nrecv ? nrecv : 1,
					 .max_send_sge = 1, .max_recv_sge = 1,
					 .max_inline_data = (uint32_t)o.inline_size },
			};

			p->qp[k] = create_qp(s->pd, &ia);
			if (p->qp[k] == NULL)
				fail("ibv_create_qp (send queue %u, receive queue %u, inline %d): %s",
				     R.sq_depth, nrecv, o.inline_size, strerror(errno));
			p->psn[k] = (uint32_t)lrand48() & 0xffffff;
			p->base[k] = s->buf + (uint64_t)i * R.lay.region;
			to_init(p->qp[k]);
		}
	}
	for (uint32_t i = 0; i < o.qps; i++) {
		struct pair *p = &R.p[i];

		/* receives first, so no SEND ever meets an empty queue */
		for (int k = 0; k < 2; k++)
			for (uint32_t j = 0; j < nrecv; j++)
				post_recv_slot(p, i, k, j);
		to_rts(p->qp[0], p->psn[0], p->qp[1], p->psn[1], &R.s[1].gid, o.out_reads,
		       o.out_reads);
		to_rts(p->qp[1], p->psn[1], p->qp[0], p->psn[0], &R.s[0].gid, o.out_reads,
		       o.out_reads);
		if (o.qpt == IBV_QPT_UD) {
			for (int k = 0; k < 2; k++) {
				p->ah[k] = make_ah(k, &R.s[!k].gid);
				p->rem_qpn[k] = p->qp[!k]->qp_num;
			}
		}
	}
}

/* --stats: every QP's counters, summed as the QPs are destroyed */
#define STATS_MAX 128
static struct droce_stat qp_sum[STATS_MAX];
static int qp_sum_n;
static unsigned int qp_sum_qps;

static void
qp_stats_add(struct ibv_qp *qp)
{
	struct droce_stat s[STATS_MAX];
	int n;

	if (!o.stats || qp == NULL || (n = droce_stats_qp(qp, s, STATS_MAX)) < 0)
		return;
	qp_sum_n = RTE_MIN(n, STATS_MAX);
	for (int i = 2; i < qp_sum_n; i++) { /* after qpn and engine */
		memcpy(qp_sum[i].name, s[i].name, sizeof(s[i].name));
		qp_sum[i].value += s[i].value;
	}
	qp_sum_qps++;
}

static void
teardown(void)
{
	for (uint32_t i = 0; i < o.qps; i++)
		for (int k = 0; k < 2; k++) {
			struct rdma_cm_id *id = R.p[i].cm_id[k];

			qp_stats_add(R.p[i].qp[k]);
			if (id != NULL) {
				rdma_destroy_qp(id);
				if (rdma_destroy_id(id) != 0)
					fail("rdma_destroy_id: %s", strerror(errno));
				R.p[i].cm_id[k] = NULL;
			} else if (ibv_destroy_qp(R.p[i].qp[k]) != 0) {
				fail("ibv_destroy_qp");
			}
			if (R.p[i].ah[k] != NULL && ibv_destroy_ah(R.p[i].ah[k]) != 0)
				fail("ibv_destroy_ah");
			R.p[i].ah[k] = NULL;
		}
	if (R.loop_cli_open) {
		pt_rcm_close(&loop_cli);
		R.loop_cli_open = false;
	}
	for (int k = 0; k < 2; k++) {
		struct side *s = &R.s[k];

		if (ibv_destroy_cq(s->cq) != 0)
			fail("ibv_destroy_cq");
		if (ibv_dereg_mr(s->mr) != 0)
			fail("ibv_dereg_mr");
		free(s->buf);
		s->buf = NULL;
	}
}

/* ---- posting ---- */

static void
post_recv_slot(struct pair *p, uint32_t pi, int side, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rx_slot(p, side, slot),
		.length = (uint32_t)(R.lay.size + R.grh),
		.lkey = R.s[side].mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = ((uint64_t)pi << WRID_SHIFT) | slot, .sg_list = &sge, .num_sge = 1,
	};
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(p->qp[side], &wr, &bad);

	if (rc != 0)
		fail("ibv_post_recv (%s, QP pair %u): %s", R.s[side].role, pi, strerror(rc));
}

/* Address of receive slot @i of @peer: in this process, or (two processes)
 * in the peer's receive area, which starts at the vaddr it sent. */
static inline uint64_t
peer_slot(const struct pair *p, int peer, uint64_t i)
{
	if (!R.two)
		return (uintptr_t)rx_slot(p, peer, i);
	return p->rem.vaddr + (i % R.rem_nrx) * R.lay.stride;
}

/* ibv_create_qp, or with --new-post ibv_create_qp_ex asking the builder
 * operation the test posts (as perftest). */
static struct ibv_qp *
create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *qp;

	if (!o.new_post)
		return ibv_create_qp(pd, ia);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, ia, sizeof(*ia));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.pd = pd;
	switch (o.verb) {
	case V_WRITE:
		ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
		break;
	case V_READ:
		ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ;
		break;
	case V_SEND:
		ax.send_ops_flags = IBV_QP_EX_WITH_SEND;
		break;
	case V_ATOMIC:
		ax.send_ops_flags = o.cmp_swap ? IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
					       : IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		break;
	}
	qp = ibv_create_qp_ex(pd->context, &ax);
	if (qp != NULL) {
		memcpy(ia, &ax, sizeof(*ia));
		if (ibv_qp_to_qp_ex(qp) == NULL)
			fail("ibv_qp_to_qp_ex: the QP has no ibv_wr_* builder");
	}
	return qp;
}

/* ibv_post_send, or with --new-post the same WRs through the ibv_wr_* builder
 * as one batch (perftest's new post: nothing of a failed batch is posted, so
 * *bad is then the first WR). */
static int
post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	static struct ibv_qp *last_qp; /* the QP last posted to, and its ibv_qp_ex */
	static struct ibv_qp_ex *last_x;
	struct ibv_qp_ex *x;
	int rc;

	if (!o.new_post)
		return ibv_post_send(qp, wr, bad);
	if (qp != last_qp) {
		last_x = ibv_qp_to_qp_ex(qp);
		last_qp = qp;
	}
	x = last_x;
	ibv_wr_start(x);
	for (struct ibv_send_wr *w = wr; w != NULL; w = w->next) {
		x->wr_id = w->wr_id;
		x->wr_flags = w->send_flags;
		switch (w->opcode) {
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(x, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
			break;
		case IBV_WR_SEND:
			ibv_wr_send(x);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(x, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
					      w->wr.atomic.compare_add, w->wr.atomic.swap);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(x, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
						w->wr.atomic.compare_add);
			break;
		default:
			ibv_wr_abort(x);
			*bad = w;
			return EINVAL;
		}
		if (o.qpt == IBV_QPT_UD)
			ibv_wr_set_ud_addr(x, w->wr.ud.ah, w->wr.ud.remote_qpn, w->wr.ud.remote_qkey);
		if (w->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(x, (void *)(uintptr_t)w->sg_list[0].addr,
					       w->sg_list[0].length);
		else if (w->num_sge == 1)
			ibv_wr_set_sge(x, w->sg_list[0].lkey, w->sg_list[0].addr,
				       w->sg_list[0].length);
		else
			ibv_wr_set_sge_list(x, (size_t)w->num_sge, w->sg_list);
	}
	rc = ibv_wr_complete(x);
	if (rc != 0)
		*bad = wr;
	return rc;
}

/* Fills the WR for message @seq of pair @pi from @side to the other side. */
static void
make_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, struct pair *p, uint32_t pi, int side,
	uint64_t seq, bool signaled)
{
	int peer = !side;
	uint8_t *src = tx_slot(p, side, seq);
	uint64_t dst = peer_slot(p, peer, seq);
	uint32_t rkey = R.two ? p->rem.rkey : R.s[peer].mr->rkey;
	uint32_t len = (uint32_t)R.lay.size;

	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)src;
	sge->length = len;
	sge->lkey = R.s[side].mr->lkey;
	wr->wr_id = ((uint64_t)pi << WRID_SHIFT) | (seq & WRID_MASK);
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	switch (o.verb) {
	case V_WRITE:
		wr->opcode = IBV_WR_RDMA_WRITE;
		wr->wr.rdma.remote_addr = dst;
		wr->wr.rdma.rkey = rkey;
		break;
	case V_READ:
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = dst;
		wr->wr.rdma.rkey = rkey;
		break;
	case V_SEND:
		wr->opcode = IBV_WR_SEND;
		if (o.qpt == IBV_QPT_UD) {
			wr->wr.ud.ah = p->ah[side];
			wr->wr.ud.remote_qpn = p->rem_qpn[side];
			wr->wr.ud.remote_qkey = R.rem_qkey;
		}
		break;
	case V_ATOMIC:
		sge->length = 8;
		wr->wr.atomic.remote_addr = peer_slot(p, peer, 0);
		wr->wr.atomic.rkey = rkey;
		if (o.cmp_swap) {
			wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			wr->wr.atomic.compare_add = seq;
			wr->wr.atomic.swap = seq + 1;
		} else {
			wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr->wr.atomic.compare_add = 1;
		}
		break;
	}
	if ((o.verb == V_WRITE || o.verb == V_SEND) && len <= (uint32_t)o.inline_size)
		wr->send_flags |= IBV_SEND_INLINE;
}

/* What --check puts in place before message @seq is posted. */
static void
check_prepare(struct pair *p, uint32_t pi, int side, uint64_t seq)
{
	switch (o.verb) {
	case V_WRITE:
	case V_SEND:
		pattern_fill(tx_slot(p, side, seq), R.lay.size, pi, seq);
		break;
	case V_READ:
		/* the responder's memory holds the message the READ fetches (two
		 * processes: the server filled slot j with message j at setup) */
		if (!R.two)
			pattern_fill(rx_slot(p, !side, seq), R.lay.size, pi, seq);
		break;
	case V_ATOMIC:
		memset(tx_slot(p, side, seq), 0xee, 8);
		break;
	}
}

/* --check once message @seq from @side completed (WRITE, READ, atomics). */
static void
check_completed(struct pair *p, uint32_t pi, int side, uint64_t seq)
{
	const uint8_t *b;
	int64_t off;
	uint64_t v;

	switch (o.verb) {
	case V_WRITE:
		if (R.two)
			break; /* the server checks its memory at the end of the run */
		if (o.qpt == IBV_QPT_UC)
			break; /* sent is not landed: uc_write_verify checks it later */
		b = rx_slot(p, !side, seq);
		inject(rx_slot(p, !side, seq), R.lay.size, pi, seq);
		off = pattern_check(b, R.lay.size, pi, seq);
		if (off >= 0)
			check_failed("RDMA WRITE, responder's memory", pi, seq, b, R.lay.size, off);
		break;
	case V_READ:
		b = tx_slot(p, side, seq);
		inject(tx_slot(p, side, seq), R.lay.size, pi, seq);
		{
			uint64_t want = R.two ? seq % R.rem_nrx : seq;

			off = pattern_check(b, R.lay.size, pi, want);
			if (off >= 0)
				check_failed("RDMA READ, requester's buffer", pi, want, b,
					     R.lay.size, off);
		}
		break;
	case V_ATOMIC:
		inject(tx_slot(p, side, seq), 8, pi, seq);
		memcpy(&v, tx_slot(p, side, seq), 8);
		if (v != seq)
			fail("--check: %s on QP pair %u, operation %" PRIu64 ": returned %" PRIu64
			     ", expected %" PRIu64, o.cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD",
			     pi, seq, v, seq);
		break;
	case V_SEND:
		break; /* checked at the receive completion */
	}
}

/* The first (@tail false) or last (@tail true) up to 8 bytes at @p are
 * those of message @seq (as pattern_fill writes them). */
static bool
pattern_end_matches(const uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq, bool tail)
{
	uint64_t k = mix64(((uint64_t)qp << 44) ^ seq ^ 0x5eed);
	uint64_t n = len < 8 ? len : 8, from = tail ? len - n : 0;

	for (uint64_t off = from; off < from + n; off++) {
		uint64_t v = k + (off / 8) * PAT_STEP;
		uint8_t w[8];

		memcpy(w, &v, 8);
		if (p[off] != (off == len - 1 ? (uint8_t)(seq + 1) : w[off % 8]))
			return false;
	}
	return true;
}

/* UC and UD lose messages (no retransmission) but never reorder them: the
 * message that arrived is the first from @seq on whose start matches.  Up
 * to a million lost in a row; -1 when none matches (the start is corrupt).
 * Messages under 8 bytes may alias a later one: a corrupt tiny message can
 * pass for a loss. */
#define MAX_LOST_RUN (1u << 20)

static int64_t
find_arrived(const uint8_t *b, uint64_t len, uint32_t qp, uint64_t seq)
{
	for (uint64_t d = 0; d < MAX_LOST_RUN; d++)
		if (pattern_end_matches(b, len, qp, seq + d, false))
			return (int64_t)d;
	return -1;
}

static void
check_received(struct pair *p, uint32_t pi, int side, const struct ibv_wc *wc)
{
	uint64_t seq = p->next_seq[side];
	uint32_t slot = (uint32_t)(wc->wr_id & WRID_MASK);
	uint8_t *b = rx_slot(p, side, slot) + R.grh; /* UD: the payload follows the GRH */
	int64_t off;

	if (wc->byte_len != R.lay.size + R.grh)
		fail("--check: SEND on QP pair %u message %" PRIu64 ": received %u B, sent %" PRIu64
		     "%s", pi, seq, wc->byte_len, R.lay.size,
		     R.grh ? " (+ the 40-byte GRH)" : "");
	if (o.qpt != IBV_QPT_RC) {
		int64_t d = find_arrived(b, R.lay.size, pi, seq);

		if (d > 0) {
			p->lost[side] += (uint64_t)d; /* never came: UC/UD do not resend */
			seq += (uint64_t)d;
		}
		for (uint64_t s = p->late_from; d < 0 && p->gave_up && s < seq; s++) {
			/* one that run_bw had given up on, come after all */
			if (pattern_end_matches(b, R.lay.size, pi, s, false)) {
				inject(b, R.lay.size, pi, s);
				off = pattern_check(b, R.lay.size, pi, s);
				if (off >= 0)
					check_failed("SEND, receive buffer", pi, s, b, R.lay.size,
						     off);
				if (p->lost[side] > 0)
					p->lost[side]--;
				return;
			}
		}
	}
	inject(b, R.lay.size, pi, seq);
	off = pattern_check(b, R.lay.size, pi, seq);
	if (off >= 0)
		check_failed("SEND, receive buffer", pi, seq, b, R.lay.size, off);
	p->next_seq[side] = seq + 1;
}

/* A slot's last bytes hold message @seq: its last packet landed (UC drops
 * the rest of a message after a lost packet, so every packet landed). */
static inline bool
landed(const uint8_t *b, uint32_t pi, uint64_t seq)
{
	return pattern_end_matches(b, R.lay.size, pi, seq, true);
}

/*
 * UC write_bw --check, loopback.  A UC WRITE completes at the requester
 * once sent; it lands in the responder's memory a little later, or never
 * (a lost packet loses the message).  Messages posted and not yet checked
 * get their verdict up to the newest one that landed (those before it that
 * did not land never will: UC does not reorder), or all of them with
 * @force, when nothing landed for a while.  A landed message must hold every
 * byte of its pattern; one that did not land is counted lost.  run_bw posts
 * into a slot only once its previous message was checked.
 */
static void
uc_write_verify(struct pair *p, uint32_t pi, bool force, uint64_t now)
{
	uint64_t upto = p->posted;

	if (p->checked >= upto)
		return;
	if (!force) {
		/* the newest landed message, by bisection: the landed ones come
		 * first, then those in flight (a lost one in the way only makes
		 * this step shorter) */
		uint64_t a = p->checked, b = p->posted;

		upto = 0;
		while (a < b) {
			uint64_t m = a + (b - a) / 2;

			if (landed(rx_slot(p, 1, m), pi, m)) {
				upto = m + 1;
				a = m + 1;
			} else {
				b = m;
			}
		}
		if (upto == 0)
			return;
	}
	for (uint64_t s = p->checked; s < upto; s++) {
		uint8_t *b = rx_slot(p, 1, s);
		int64_t off;

		if (!landed(b, pi, s)) {
			p->lost[1]++;
			continue;
		}
		p->last_arrival = now;
		R.last_recv = now;
		inject(b, R.lay.size, pi, s);
		off = pattern_check(b, R.lay.size, pi, s);
		if (off >= 0)
			check_failed("RDMA WRITE (UC), responder's memory", pi, s, b, R.lay.size,
				     off);
	}
	p->checked = upto;
}

/* ---- time ---- */

static inline double
secs(uint64_t cycles)
{
	return (double)cycles / (double)tsc_hz;
}

struct watch {
	uint64_t start, last_progress, last_print, timeout;
	uint64_t polls;
};

static void
watch_start(struct watch *w)
{
	w->start = rte_rdtsc();
	w->last_progress = w->start;
	w->last_print = w->start;
	w->timeout = (uint64_t)(o.timeout * (double)tsc_hz);
	w->polls = 0;
}

static void __attribute__((noreturn))
stuck(uint64_t size, const char *state)
{
	fail("%s, %" PRIu64 " B: no completion for %.0f s (%s): aborting%s%s%s", o.test, size,
	     o.timeout, state, o.qpt != IBV_QPT_RC && o.mode == M_LAT ? " (" : "",
	     o.qpt != IBV_QPT_RC && o.mode == M_LAT ? o.conn : "",
	     o.qpt != IBV_QPT_RC && o.mode == M_LAT ?
	     " does not retransmit: a lost message stops a ping-pong)" : "");
}

/* ---- completions ---- */

static void __attribute__((noreturn))
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
static int poll_side_cq(int side);

/*
 * -e: arms the CQ of every side this process plays and sleeps until one has a
 * completion event (poll(2) on the channels, at most 100 ms, then
 * ibv_get_cq_event on the one that fired).  Returns the completions handled on the way.
 */
static int
event_wait(void)
{
	int sides[2], n = 0, got = 0;
	struct pollfd pf[2];

	for (int s = 0; s < 2; s++) {
		if (R.two && s != R.me)
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

static int
poll_side(int side)
{
	int n = poll_side_cq(side);

	if (n == 0 && o.use_event && (!R.two || side == R.me))
		n = event_wait();
	return n;
}

static int
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
			p->completed = seq + 1;
		} else {
			p->sends_done[side]++;
		}
	}
	return n;
}

/* ---- results ---- */

struct result {
	uint64_t bytes, iters, msgs;
	double seconds;
	double bw_peak, bw_avg; /* bytes per second */
	double msg_rate;        /* messages per second */
	double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999; /* usec */
	uint64_t lost; /* UC/UD: messages sent that never arrived */
};

static struct result *results;
static unsigned int n_results;

static double
bw_unit(double bytes_per_sec)
{
	return o.report_gbits ? bytes_per_sec * 8 / 1e9 : bytes_per_sec / 1048576.0;
}

static void
print_line(void)
{
	if (!o.json)
		printf("---------------------------------------------------------------------------------------\n");
}

static void
print_banner(void)
{
	if (o.json)
		return;
	print_line();
	if (o.verb == V_ATOMIC)
		printf("                    Atomic %s %s Test\n",
		       o.cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD",
		       o.mode == M_BW ? "BW" : "Latency");
	else
		printf("                    %s %s Test\n", verb_title[o.verb],
		       o.mode == M_BW ? "BW" : "Latency");
	if (R.two)
		printf(" Dual-port       : OFF\t\tDevice         : %s (%s, two processes)\n",
		       ibv_get_device_name(R.s[R.me].dev), R.s[R.me].role);
	else
		printf(" Dual-port       : OFF\t\tDevice         : %s -> %s (loopback, one process)\n",
		       ibv_get_device_name(R.s[0].dev), ibv_get_device_name(R.s[1].dev));
	printf(" Number of qps   : %u\t\tTransport type : IB\n", o.qps);
	printf(" Connection type : %s\t\tUsing SRQ      : OFF\n", o.conn);
	if (o.mode == M_BW) {
		printf(" PCIe relax order: OFF\n");
		printf(" TX depth        : %u\n", o.tx_depth);
		if (o.verb == V_SEND)
			printf(" RX depth        : %u\n", o.rx_depth);
		printf(" CQ Moderation   : %u\n", o.post_list > 1 ? o.post_list : o.cq_mod);
		if (o.post_list > 1)
			printf(" Post List       : %u\n", o.post_list);
	}
	printf(" Mtu             : %u[B]\n", mtu_bytes(R.mtu));
	printf(" Link type       : Ethernet\n");
	printf(" GID index       : %d\n", o.gid_index);
	if (o.verb == V_WRITE || o.verb == V_SEND)
		printf(" Max inline data : %d[B]\n", o.inline_size);
	if (o.verb == V_READ || o.verb == V_ATOMIC)
		printf(" Outstand reads  : %u\n", o.out_reads);
	printf(" rdma_cm QPs\t : %s\n", o.rdma_cm ? "ON" : "OFF");
	printf(" Data ex. method : %s\n", !R.two ? "in process (loopback)" : o.rdma_cm ?
	       "rdma_cm (perftest's -R exchange)" : "Ethernet (perftest's TCP exchange)");
	printf(" Data check      : %s\n", o.check ? "ON (every byte)" : "OFF");
	print_line();
}

static void
print_gid(const union ibv_gid *g)
{
	printf(" GID: ");
	for (int i = 0; i < 16; i++)
		printf("%02d%s", g->raw[i], i < 15 ? ":" : "\n");
}

static void
print_addresses(void)
{
	if (o.json)
		return;
	if (R.two) {
		for (uint32_t i = 0; i < o.qps; i++) {
			const struct pair *p = &R.p[i];
			const struct pt_dest *r = &p->rem;
			union ibv_gid g;

			printf(" local address: LID 0000 QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIxPTR "\n",
			       p->qp[R.me]->qp_num, p->psn[R.me], R.s[R.me].mr->rkey,
			       (uintptr_t)rx_slot(p, R.me, 0));
			print_gid(&R.s[R.me].gid);
			printf(" remote address: LID %04x QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIx64 "\n",
			       r->lid, r->qpn, r->psn, r->rkey, r->vaddr);
			memcpy(g.raw, r->gid, 16);
			print_gid(&g);
		}
		print_line();
		return;
	}
	for (int k = 0; k < 2; k++) {
		for (uint32_t i = 0; i < o.qps; i++) {
			const struct pair *p = &R.p[i];

			printf(" %s address: LID 0000 QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIxPTR "\n",
			       k == 0 ? "local" : "remote", p->qp[k]->qp_num, p->psn[k],
			       R.s[k].mr->rkey, (uintptr_t)p->base[k]);
			print_gid(&R.s[k].gid);
		}
	}
	print_line();
}

static void
print_header(void)
{
	if (o.json)
		return;
	if (o.mode == M_BW)
		printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n",
		       o.report_gbits ? "Gb/sec" : "MB/sec", o.report_gbits ? "Gb/sec" : "MB/sec");
	else
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
	fflush(stdout);
}

static void
print_result(const struct result *r)
{
	if (o.json)
		return;
	if (o.mode == M_BW)
		printf(" %-10" PRIu64 " %-10" PRIu64 "       %-10.2f         %-10.2f         %-10.6f\n",
		       r->bytes, r->iters, bw_unit(r->bw_peak), bw_unit(r->bw_avg),
		       r->msg_rate / 1e6);
	else
		printf(" %-7" PRIu64 " %-10" PRIu64 "     %-10.2f     %-10.2f   %-10.2f       "
		       "%-10.2f       %-10.2f      %-10.2f              %-10.2f\n",
		       r->bytes, r->iters, r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev,
		       r->p99, r->p999);
	fflush(stdout);
}

static void
add_result(const struct result *r)
{
	struct result *n = realloc(results, (n_results + 1) * sizeof(*results));

	if (n == NULL)
		fail("out of memory");
	results = n;
	results[n_results++] = *r;
	print_result(r);
}

static void
progress(struct watch *w, uint64_t now, uint64_t size, uint64_t done, uint64_t want,
	 const char *unit)
{
	double t = secs(now - w->start);

	if (t < PROGRESS_AFTER || now - w->last_print < tsc_hz)
		return;
	w->last_print = now;
	if (want != UINT64_MAX)
		fprintf(stderr, "droce-perf: %s %" PRIu64 " B: %" PRIu64 " of %" PRIu64 " %s, %.1f s",
			o.test, size, done, want, unit, t);
	else
		fprintf(stderr, "droce-perf: %s %" PRIu64 " B: %" PRIu64 " %s, %.1f of %.1f s",
			o.test, size, done, unit, t, o.duration);
	if (o.mode == M_BW)
		fprintf(stderr, ", %.2f %s", bw_unit((double)done * (double)size / t),
			o.report_gbits ? "Gb/sec" : "MB/sec");
	fprintf(stderr, "\n");
}

/* ---- bandwidth ---- */

struct peak_point {
	uint64_t tsc, msgs;
};

/* Best rate over any stretch of the run holding at least @min_msgs messages
 * (a sixteenth of them, and at least one CQ moderation round of every QP). */
static double
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
static inline bool
track_arrivals(void)
{
	return o.qpt != IBV_QPT_RC && !R.two &&
	       (o.verb == V_SEND || (o.verb == V_WRITE && o.check));
}

/* Messages of @p that arrived or are known lost. */
static inline uint64_t
resolved(const struct pair *p)
{
	return o.verb == V_SEND ? p->recv_seen[1] + p->lost[1] : p->checked;
}

static uint64_t
msgs_sent(void)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < o.qps; i++)
		n += R.p[i].posted;
	return n;
}

/* No arrival for this long: what is still out is lost (UC/UD). */
static inline uint64_t
quiet_cycles(void)
{
	return (uint64_t)(fmin(DRAIN_QUIET, o.timeout / 2) * (double)tsc_hz);
}

/* @p can post nothing more now: all posted, or the window is full.  Then
 * only polling is left, and what polling does not bring in is lost: after
 * IDLE_POLLS polls (each of them runs the co-located engines) and
 * IDLE_SECONDS (dedicated engines run on their own) without an arrival,
 * run_bw gives up on what is out; otherwise after DRAIN_QUIET. */
#define IDLE_POLLS 2000
#define IDLE_SECONDS 0.01

static bool
sender_idle(const struct pair *p, uint64_t window)
{
	uint64_t n = RTE_MIN((uint64_t)o.post_list, p->target - p->posted);

	return p->posted >= p->target || p->posted - p->completed + n > R.depth ||
	       (p->posted > resolved(p) && p->posted - resolved(p) + n > window);
}

/* UC/UD, loopback: nothing arrived on @p for a while: its messages still
 * out will not come (the receiver keeps counting if one does). */
static void
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

static void
run_bw(uint64_t size)
{
	struct ibv_send_wr wr[1024];
	struct ibv_sge sge[1024];
	struct peak_point *pt;
	size_t npt = 0, npt_full = 0, cap;
	struct watch w;
	struct result r = { .bytes = size };
	uint64_t per_qp = o.duration > 0 ? UINT64_MAX : o.iters;
	uint64_t dur = (uint64_t)(o.duration * (double)tsc_hz);
	uint64_t last_done = 0, total = 0, msgs_want;
	bool stopping = o.duration == 0;
	bool track = track_arrivals();
	/* UC/UD send_bw: the figures are what the receiver got, as perftest's */
	bool count_rx = track && o.verb == V_SEND;
	uint64_t quiet = quiet_cycles(), quiet_fast = (uint64_t)(IDLE_SECONDS * (double)tsc_hz);
	/* in flight per QP: SENDs no more than the receives posted; UC WRITEs
	 * (--check) no more than the slots */
	uint64_t window = o.verb == V_SEND ? R.nrecv : R.depth;

	cap = o.duration > 0 ? MAX_PEAK_POINTS :
	      count_rx ? (size_t)(o.iters * o.qps + 2) :
			       (size_t)(o.iters * o.qps / R.cq_mod + o.qps + 2);
	if (cap > MAX_PEAK_POINTS)
		cap = MAX_PEAK_POINTS;
	pt = malloc(cap * sizeof(*pt));
	if (pt == NULL)
		fail("out of memory");
	for (uint32_t i = 0; i < o.qps; i++)
		R.p[i].target = per_qp;
	msgs_want = per_qp == UINT64_MAX ? UINT64_MAX : per_qp * o.qps;

	watch_start(&w);
	R.last_recv = w.start;
	for (uint32_t i = 0; i < o.qps; i++)
		R.p[i].last_arrival = w.start;
	pt[npt++] = (struct peak_point){ w.start, 0 };
	for (;;) {
		bool done = true;
		uint64_t now;
		int got;

		/* post */
		for (uint32_t i = 0; i < o.qps; i++) {
			struct pair *p = &R.p[i];

			while (p->posted < p->target) {
				uint64_t left = p->target - p->posted;
				uint32_t n = left < o.post_list ? (uint32_t)left : o.post_list;
				struct ibv_send_wr *bad = NULL;
				int rc;

				if (p->posted - p->completed + n > R.depth)
					break;
				if (track && p->posted > resolved(p) &&
				    p->posted - resolved(p) + n > window)
					break;
				for (uint32_t j = 0; j < n; j++) {
					uint64_t seq = p->posted + j;
					bool sig = (seq + 1) % R.cq_mod == 0 || seq + 1 == p->target;

					if (o.check)
						check_prepare(p, i, 0, seq);
					make_wr(&wr[j], &sge[j], p, i, 0, seq, sig);
					wr[j].next = j + 1 < n ? &wr[j + 1] : NULL;
				}
				rc = post_send(p->qp[0], wr, &bad);
				if (rc == ENOMEM) {
					/* send queue full: post what went, retry after polling */
					p->posted += (uint64_t)(bad - wr);
					break;
				}
				if (rc != 0)
					fail("ibv_post_send (QP pair %u, message %" PRIu64 "): %s", i,
					     p->posted + (uint64_t)(bad ? bad - wr : 0), strerror(rc));
				p->posted += n;
			}
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
		if (o.verb == V_SEND && !R.two)
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
			}
		}
		if (got > 0) {
			w.last_progress = now;
			total = 0;
			for (uint32_t i = 0; i < o.qps; i++)
				total += count_rx ? R.p[i].recv_seen[1] : R.p[i].completed;
			if (total != last_done) {
				last_done = total;
				r.seconds = secs(now - w.start);
				if (npt < cap)
					pt[npt++] = (struct peak_point){ now, total };
			}
		}
		for (uint32_t i = 0; i < o.qps; i++) {
			const struct pair *p = &R.p[i];

			if (p->completed < p->target ||
			    (track && resolved(p) < p->target) ||
			    (!track && o.verb == V_SEND && !R.two && p->recv_seen[1] < p->target)) {
				done = false;
				break;
			}
		}
		if (done && stopping)
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

	if (o.check && o.verb == V_ATOMIC && !R.two) {
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
	free(pt);
	if (r.lost > 0)
		fprintf(stderr, "droce-perf: %s %" PRIu64 " B: %" PRIu64 " of %" PRIu64 " messages "
			"never arrived (%s does not retransmit)%s\n", o.test, size, r.lost,
			msgs_sent(), o.conn, o.verb == V_SEND ? "; the figures count what arrived" :
			"");
	add_result(&r);
}

/* ---- latency ---- */

/* Polls every side this process plays. */
static void
poll_sides(void)
{
	if (R.two) {
		poll_side(R.me);
	} else {
		poll_side(0);
		poll_side(1);
	}
}

static void
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
static void
lat_prepare(struct pair *p, int side, uint64_t seq)
{
	if (o.check)
		check_prepare(p, 0, side, seq);
	else if (o.verb == V_WRITE)
		tx_slot(p, side, seq)[R.lay.size - 1] = (uint8_t)(seq + 1);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Waits until *flag (a receive counter, or the marker byte) reaches @want. */
#define WAIT_UNTIL(cond, w, size, what)                                                \
	do {                                                                           \
		uint64_t spins_ = 0;                                                   \
		while (!(cond)) {                                                      \
			poll_sides();                                                  \
			if ((++spins_ & 255) == 0 &&                                   \
			    rte_rdtsc() - (w)->last_progress > (w)->timeout)           \
				stuck(size, what);                                     \
		}                                                                      \
	} while (0)

static void
run_lat(uint64_t size)
{
	struct pair *p = &R.p[0];
	uint64_t *samples;
	uint64_t cap = o.duration > 0 ? MAX_LAT_SAMPLES : o.iters;
	uint64_t warm = (uint64_t)o.warmup;
	uint64_t n = 0, iters = o.duration > 0 ? UINT64_MAX : warm + o.iters;
	uint64_t dur = (uint64_t)(o.duration * (double)tsc_hz);
	bool pingpong = o.verb == V_SEND || o.verb == V_WRITE;
	bool srv_first = R.two && !R.oob.peer_droce && o.verb == V_WRITE && o.duration <= 0;
	struct result r = { .bytes = size };
	struct watch w;
	double sum = 0, sq = 0, unit;

	if (cap > MAX_LAT_SAMPLES)
		cap = MAX_LAT_SAMPLES;
	samples = malloc(cap * sizeof(*samples));
	if (samples == NULL)
		fail("out of memory for %" PRIu64 " samples", cap);

	watch_start(&w);
	if (srv_first) {
		/* perftest's write_lat server writes first (byte 1); each of our
		 * writes but the last is then answered with the next byte */
		volatile uint8_t *m0 = rx_slot(p, 0, 0) + size - 1;

		WAIT_UNTIL(*m0 == 1, &w, size, "client waiting for the server's first write");
		w.start = rte_rdtsc();
	}
	for (uint64_t i = 0; i < iters; i++) {
		bool sig = (i + 1) % LAT_SIGNAL_EVERY == 0 || i + 1 == iters;
		volatile uint8_t *mark;
		uint64_t t0, t1;

		lat_prepare(p, 0, i);
		if (!pingpong) {
			uint64_t before = p->sends_done[0];

			t0 = rte_rdtsc();
			post_one(p, 0, i, true, &w, size);
			WAIT_UNTIL(p->sends_done[0] > before, &w, size, "waiting for the completion");
			t1 = rte_rdtsc();
			if (o.check)
				check_completed(p, 0, 0, i);
		} else if (o.verb == V_SEND) {
			t0 = rte_rdtsc();
			post_one(p, 0, i, sig, &w, size);
			if (!R.two) {
				WAIT_UNTIL(p->recv_seen[1] > i, &w, size,
					   "server waiting for the SEND");
				lat_prepare(p, 1, i);
				post_one(p, 1, i, sig, &w, size);
			}
			WAIT_UNTIL(p->recv_seen[0] > i, &w, size, "client waiting for the reply");
			t1 = rte_rdtsc();
		} else { /* write: poll the last byte of the buffer the peer writes */
			t0 = rte_rdtsc();
			post_one(p, 0, i, sig, &w, size);
			if (!R.two) {
				mark = rx_slot(p, 1, i) + size - 1;
				WAIT_UNTIL(*mark == (uint8_t)(i + 1), &w, size,
					   "server polling the last byte of its buffer");
				lat_prepare(p, 1, i);
				post_one(p, 1, i, sig, &w, size);
			}
			mark = rx_slot(p, 0, i) + size - 1;
			if (srv_first && i + 1 == iters) /* no answer: its ACK */
				WAIT_UNTIL(p->sends_done[0] >= p->signaled[0], &w, size,
					   "waiting for the completion");
			else
				WAIT_UNTIL(*mark == (uint8_t)(i + 1 + srv_first), &w, size,
					   "client polling the last byte of its buffer");
			t1 = rte_rdtsc();
			if (o.check && R.two) {
				int64_t off = pattern_check(rx_slot(p, 0, i), size, 0, i);

				if (off >= 0)
					check_failed("RDMA WRITE, client's buffer", 0, i,
						     rx_slot(p, 0, i), size, off);
			} else if (o.check) {
				int64_t off;

				inject(rx_slot(p, 1, i), size, 0, i);
				off = pattern_check(rx_slot(p, 1, i), size, 0, i);

				if (off >= 0)
					check_failed("RDMA WRITE, server's buffer", 0, i,
						     rx_slot(p, 1, i), size, off);
				off = pattern_check(rx_slot(p, 0, i), size, 0, i);
				if (off >= 0)
					check_failed("RDMA WRITE, client's buffer", 0, i,
						     rx_slot(p, 0, i), size, off);
			}
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

	if (o.check && o.verb == V_ATOMIC && !R.two) {
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
	qsort(samples, n, sizeof(*samples), cmp_u64);
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

/* ---- --stats and --json: droce's counters through include/droce/stats.h ---- */

/* One line per object: its non-zero counters (all of them with --json). */
static void
print_counters(FILE *f, const char *what, int (*get)(unsigned int, struct droce_stat *, unsigned int),
	       unsigned int id)
{
	struct droce_stat s[STATS_MAX];
	int n = get(id, s, STATS_MAX);
	const char *sep = ": ";

	if (n < 0)
		return;
	fprintf(f, "%s%u", what, id);
	for (int i = 0; i < RTE_MIN(n, STATS_MAX); i++) {
		if (s[i].value == 0)
			continue;
		fprintf(f, "%s%s %" PRIu64, sep, s[i].name, s[i].value);
		sep = ", ";
	}
	fprintf(f, "\n");
}

static int
cm_counters(unsigned int id, struct droce_stat *out, unsigned int n)
{
	RTE_SET_USED(id);
	return droce_stats_cm(out, n);
}

static void
print_stats(FILE *f)
{
	struct droce_stat s[STATS_MAX];

	fprintf(f, "droce counters (non-zero):\n");
	for (unsigned int e = 0; droce_stats_engine(e, s, 0) >= 0; e++)
		print_counters(f, "engine ", droce_stats_engine, e);
	for (unsigned int i = 0; droce_stats_port(i, s, 0) >= 0; i++)
		print_counters(f, "port", droce_stats_port, i);
	if (R.two) /* the QPs still live: teardown_two comes after */
		for (uint32_t i = 0; i < o.qps; i++)
			qp_stats_add(R.p[i].qp[R.me]);
	if (qp_sum_qps > 0) {
		const char *sep = ": ";

		fprintf(f, "%u QPs summed", qp_sum_qps);
		for (int i = 2; i < qp_sum_n; i++)
			if (qp_sum[i].value != 0) {
				fprintf(f, "%s%s %" PRIu64, sep, qp_sum[i].name, qp_sum[i].value);
				sep = ", ";
			}
		fprintf(f, "\n");
	}
	if (droce_stats_cm(s, STATS_MAX) > 0 && droce_stat_find(s, STATS_MAX, "mads_tx") != 0)
		print_counters(f, "cm ", cm_counters, 0);
}

static void
json_counters(const char *key, unsigned int id, int (*get)(unsigned int, struct droce_stat *, unsigned int))
{
	struct droce_stat s[STATS_MAX];
	int n = get(id, s, STATS_MAX);

	printf("{\"%s\": %u", key, id);
	for (int i = 0; i < RTE_MIN(n, STATS_MAX); i++)
		printf(", \"%s\": %" PRIu64, s[i].name, s[i].value);
	printf("}");
}

static void
json_stats(void)
{
	struct droce_stat s[1];

	printf(",\n  \"stats\": {\n    \"engines\": [");
	for (unsigned int e = 0; droce_stats_engine(e, s, 0) >= 0; e++) {
		printf("%s\n      ", e ? "," : "");
		json_counters("id", e, droce_stats_engine);
	}
	printf("\n    ],\n    \"ports\": [");
	for (unsigned int i = 0; droce_stats_port(i, s, 0) >= 0; i++) {
		printf("%s\n      ", i ? "," : "");
		json_counters("port", i, droce_stats_port);
	}
	printf("\n    ]\n  }");
}

static void
print_json(void)
{
	printf("{\n  \"tool\": \"droce-perf\",\n  \"test\": \"%s\",\n  \"mode\": \"%s\",\n"
	       "  \"verb\": \"%s\",\n", o.test, o.mode == M_BW ? "bw" : "lat", verb_name[o.verb]);
	if (o.verb == V_ATOMIC)
		printf("  \"atomic_type\": \"%s\",\n", o.cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	printf("  \"topology\": \"%s\",\n  \"client_dev\": \"%s\",\n  \"server_dev\": \"%s\",\n"
	       "  \"connection\": \"%s\",\n  \"qps\": %u,\n  \"tx_depth\": %u,\n  \"post_list\": %u,\n"
	       "  \"cq_mod\": %u,\n  \"inline_size\": %d,\n  \"mtu\": %u,\n  \"check\": %s,\n"
	       "  \"duration\": %.3f,\n  \"out_reads\": %u,\n  \"rdma_cm\": %s,\n"
	       "  \"report_gbits\": %s,\n  \"results\": [",
	       R.two ? (R.me ? "two processes, server" : "two processes, client") : "loopback",
	       R.s[0].dev ? ibv_get_device_name(R.s[0].dev) : "(peer)",
	       R.s[1].dev ? ibv_get_device_name(R.s[1].dev) : "(peer)", o.conn, o.qps, o.tx_depth,
	       o.post_list, o.post_list > 1 ? o.post_list : o.cq_mod, o.inline_size,
	       mtu_bytes(R.mtu), o.check ? "true" : "false", o.duration, o.out_reads,
	       o.rdma_cm ? "true" : "false", o.report_gbits ? "true" : "false");
	for (unsigned int i = 0; i < n_results; i++) {
		const struct result *r = &results[i];

		printf("%s\n    {\"bytes\": %" PRIu64 ", \"iterations\": %" PRIu64
		       ", \"messages\": %" PRIu64 ", \"seconds\": %.6f, ",
		       i ? "," : "", r->bytes, r->iters, r->msgs, r->seconds);
		/* UC/UD: where the receiver's count is known */
		if (o.mode == M_BW && (track_arrivals() || (o.qpt != IBV_QPT_RC && R.two &&
							     R.me == 1 && o.verb == V_SEND)))
			printf("\"lost\": %" PRIu64 ", ", r->lost);
		if (o.mode == M_BW)
			printf("\"bw_peak_MBps\": %.3f, \"bw_avg_MBps\": %.3f, \"bw_peak_Gbps\": %.4f, "
			       "\"bw_avg_Gbps\": %.4f, \"msg_rate_Mpps\": %.6f}",
			       r->bw_peak / 1048576.0, r->bw_avg / 1048576.0, r->bw_peak * 8 / 1e9,
			       r->bw_avg * 8 / 1e9, r->msg_rate / 1e6);
		else
			printf("\"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": %.3f, "
			       "\"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, \"p99_us\": %.3f, "
			       "\"p99_9_us\": %.3f}",
			       r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev, r->p99, r->p999);
	}
	printf("\n  ]");
	if (o.stats)
		json_stats();
	printf("\n}\n");
}

/* ---- two processes: perftest's TCP exchange (apps/perftest_oob.h) ---- */

/* Keeps the co-located engines running while the socket waits: the peer
 * may be resolving our MAC, or (send_bw server) the SENDs keep coming. */
static void
oob_idle(void *arg)
{
	(void)arg;
	if (R.s[R.me].cq != NULL)
		poll_side_cq(R.me); /* never sleeps here, even with -e */
	else
		droce_progress();
}

static void
oob_check(int rc, const char *what)
{
	if (rc != 0)
		fail("perftest exchange (%s) with the peer failed: %s", what, R.oob.err);
}

/* -R: rdma_cm's QPs must share a PD with the buffers, and rdma_create_qp
 * wants the PD of the id's own context: rdma_cm's context of @dev (which
 * stays open, as librdmacm keeps its contexts). */
static struct ibv_context *
rcm_context_of(struct ibv_device *dev)
{
	struct ibv_context **list, *ctx = NULL;
	int n = 0;

	list = rdma_get_devices(&n);
	if (list == NULL)
		fail("rdma_get_devices: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]->device), ibv_get_device_name(dev)) == 0)
			ctx = list[i];
	rdma_free_devices(list);
	if (ctx == NULL)
		errno = ENODEV;
	return ctx;
}

/* Opens this process's one device and waits for its port to come up (a
 * memif port is up once the peer process is there). */
static void
open_local(void)
{
	struct ibv_device **list;
	struct side *s = &R.s[R.me];
	struct ibv_port_attr pa;
	uint64_t t0;
	int n;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		fail("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), o.dev) == 0)
			s->dev = list[i];
	if (s->dev == NULL && n == 1 && strcmp(o.dev, "droce0") == 0)
		s->dev = list[0];
	if (s->dev == NULL)
		fail("no device %s (%d devices)", o.dev, n);
	s->role = R.me ? "server" : "client";
	s->ctx = o.rdma_cm ? rcm_context_of(s->dev) : ibv_open_device(s->dev);
	if (s->ctx == NULL)
		fail("ibv_open_device %s: %s", ibv_get_device_name(s->dev), strerror(errno));
	t0 = rte_rdtsc();
	for (;;) {
		if (ibv_query_port(s->ctx, 1, &pa) != 0)
			fail("ibv_query_port %s", ibv_get_device_name(s->dev));
		if (pa.state == IBV_PORT_ACTIVE)
			break;
		if (rte_rdtsc() - t0 > (uint64_t)(o.timeout * (double)rte_get_tsc_hz()))
			fail("%s: port is %s after %.0f s (is the peer process running?)",
			     ibv_get_device_name(s->dev), ibv_port_state_str(pa.state), o.timeout);
		droce_progress();
		usleep(1000);
	}
	s->active_mtu = pa.active_mtu;
	stats_ready = true;
	if (ibv_query_gid(s->ctx, 1, o.gid_index, &s->gid) != 0)
		fail("%s: no GID index %d", ibv_get_device_name(s->dev), o.gid_index);
	s->pd = ibv_alloc_pd(s->ctx);
	if (s->pd == NULL)
		fail("ibv_alloc_pd: %s", strerror(errno));
	ibv_free_device_list(list);
	R.mtu = s->active_mtu;
	if (o.mtu && mtu_enum(o.mtu) < R.mtu)
		R.mtu = mtu_enum(o.mtu);
}

/* What both droce-perf processes must agree on (sent only between droce
 * peers, recognised by the mark after the version string). */
static void
params_line(char *buf, size_t n)
{
	snprintf(buf, n, "droce-perf %s c=%s A=%d s=%" PRIu64 " q=%u n=%" PRIu64 " D=%.3f t=%u "
		 "r=%u l=%u Q=%u check=%d w=%" PRId64, o.test, o.conn, o.cmp_swap, o.size, o.qps,
		 o.iters, o.duration, o.tx_depth, o.rx_depth, o.post_list,
		 o.cq_mod, o.check, o.warmup);
}

static void
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

static void
pair_post_recvs(uint32_t i, int side)
{
	/* receives first, so no SEND ever meets an empty queue */
	for (uint32_t j = 0; j < R.nrecv; j++)
		post_recv_slot(&R.p[i], i, side, j);
}

/* Creates @side's QP of pair @i (on rdma_cm id @id with -R, then rdma_cm
 * moves it through its states; else in INIT), and with @recvs posts its
 * receives. */
static void
pair_qp(uint32_t i, int side, struct rdma_cm_id *id, bool recvs)
{
	struct pair *p = &R.p[i];
	struct side *s = &R.s[side];
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = o.qpt,
		.cap = { .max_send_wr = R.sq_depth, .max_recv_wr = R.nrecv ? R.nrecv : 1,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = (uint32_t)o.inline_size },
	};

	if (id != NULL) {
		uint8_t t = o.qp_timeout;

		/* -u with -R: the id's local ACK timeout (rdma_cm's own otherwise) */
		if (o.qp_timeout_set &&
		    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, 1) != 0)
			fail("rdma_set_option ACK_TIMEOUT %u: %s", t, strerror(errno));
		if (rdma_create_qp(id, s->pd, &ia) != 0)
			fail("rdma_create_qp (%s, QP pair %u): %s", s->role, i, strerror(errno));
		p->qp[side] = id->qp;
		p->cm_id[side] = id;
	} else {
		p->qp[side] = create_qp(s->pd, &ia);
		if (p->qp[side] == NULL)
			fail("ibv_create_qp (send queue %u, receive queue %u, inline %d): %s",
			     R.sq_depth, R.nrecv, o.inline_size, strerror(errno));
		to_init(p->qp[side]);
	}
	if (recvs)
		pair_post_recvs(i, side);
}

static void
setup_two(uint64_t size)
{
	struct side *s = &R.s[R.me];
	uint32_t nrecv;
	uint64_t cqe;
	int cb = (int)R.rem_nrx;

	R.lay = layout_for(size);
	nrecv = o.verb != V_SEND ? 0 : (o.mode == M_BW && !o.check) ? o.rx_depth : R.lay.nrx;
	if (o.mode == M_LAT) {
		R.sq_depth = LAT_SQ_DEPTH;
		R.depth = 1;
	} else {
		R.sq_depth = o.tx_depth;
		R.depth = o.tx_depth;
		if (o.verb == V_SEND && R.depth > nrecv)
			R.depth = nrecv;
		if (o.check && R.depth > R.lay.ntx)
			R.depth = R.lay.ntx;
		if (o.check && o.verb != V_SEND && R.depth > R.lay.nrx)
			R.depth = R.lay.nrx;
		if (o.check && R.depth < o.post_list)
			fail("--check with -l %u needs %u slots of %" PRIu64 " B; use a smaller -l "
			     "or -s", o.post_list, o.post_list, size);
		if (R.depth < o.post_list)
			R.depth = o.post_list;
	}
	R.cq_mod = o.post_list > 1 ? o.post_list : o.cq_mod;
	if (R.cq_mod > R.depth)
		R.cq_mod = R.depth;
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

	R.nrecv = nrecv;
	cqe = (uint64_t)o.qps * (R.sq_depth + nrecv) + 16;
	side_alloc(s, cqe);
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

static void
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

static void
barrier(const char *what)
{
	struct pt_dest d, r;

	my_dest(0, &d);
	oob_check(pt_hand_shake(&R.oob, &d, &r), what);
}

/* One key message per QP, in QP order (perftest's loops of ctx_hand_shake);
 * @keep: the peer's keys go to R.p[i].rem. */
static void
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
static uint32_t
peer_reads(const struct pair *p)
{
	uint32_t r = p->rem.out_reads;

	return r < 1 ? 1 : r > DROCE_MAX_RD_ATOMIC ? DROCE_MAX_RD_ATOMIC : r;
}

/* -R: rdma_cm's connection parameters, as perftest's: responder resources
 * and initiator depth are the outstanding reads for READ and atomics. */
static void
cm_param(struct rdma_conn_param *c)
{
	memset(c, 0, sizeof(*c));
	if (o.verb == V_READ || o.verb == V_ATOMIC)
		c->responder_resources = c->initiator_depth = (uint8_t)o.out_reads;
	c->retry_count = 7;
	c->rnr_retry_count = 7;
}

/* -R, RDMA_PS_UDP: @side's address handle to the peer, its QPN and Q_Key,
 * from the ESTABLISHED event (the SIDR REP) @c kept. */
static void
cm_ud_peer(const struct pt_rcm *c, uint32_t i, int side)
{
	struct pair *p = &R.p[i];
	struct ibv_ah_attr ah = c->ud.ah_attr;

	p->ah[side] = ibv_create_ah(R.s[side].pd, &ah);
	if (p->ah[side] == NULL)
		fail("ibv_create_ah (QP pair %u, from rdma_cm): %s", i, strerror(errno));
	p->rem_qpn[side] = c->ud.qp_num;
	R.rem_qkey = c->ud.qkey;
}

/* -R, client: the QP of pair @arg once rdma_cm resolved the route; its
 * receives once connected (a rejected attempt's QP goes away, and its
 * flushed receives would land in the CQ). */
static int
cm_make_qp(struct rdma_cm_id *id, void *arg)
{
	pair_qp((uint32_t)(uintptr_t)arg, R.me, id, false);
	return 0;
}

/* -R, server: accepts one connection request for pair @i from @c's listener. */
static void
cm_accept(struct pt_rcm *c, uint32_t i, int side)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (pt_rcm_wait(c, RDMA_CM_EVENT_CONNECT_REQUEST, &ev) != 0)
		fail("rdma_cm: QP pair %u: %s", i, c->err);
	id = ev->id;
	rdma_ack_cm_event(ev);
	pair_qp(i, side, id, true);
	cm_param(&param);
	if (rdma_accept(id, &param) != 0)
		fail("rdma_accept (QP pair %u): %s", i, strerror(errno));
}

/* -R (perftest's create_rdma_cm_connection): a key exchange, the -q
 * connections through rdma_cm on -p, another key exchange.  The server
 * listens before the first exchange; the client retries a connection the
 * server rejected because it was not listening yet. */
static void
connect_qps_rdma_cm(void)
{
	enum rdma_port_space ps = o.qpt == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	struct rdma_conn_param param;

	pt_rcm_init(&R.cm, (int)(o.timeout * 1000), oob_idle, NULL);
	if (R.me && pt_rcm_listen(&R.cm, o.bind, o.tcp_port, ps, (int)o.qps) != 0)
		fail("rdma_cm listen for the QPs: %s", R.cm.err);
	barrier("sync before the rdma_cm connections");
	for (uint32_t i = 0; i < o.qps; i++) {
		struct rdma_cm_id *id;

		if (R.me) {
			cm_accept(&R.cm, i, R.me);
			continue;
		}
		cm_param(&param);
		if (pt_rcm_connect(&R.cm, o.host, o.tcp_port, ps, cm_make_qp, (void *)(uintptr_t)i,
				   &param, &id) != 0)
			fail("rdma_cm: connecting QP pair %u to %s:%d: %s", i, o.host, o.tcp_port,
			     R.cm.err);
		pair_post_recvs(i, R.me);
		if (o.qpt == IBV_QPT_UD)
			cm_ud_peer(&R.cm, i, R.me);
	}
	pt_rcm_unlisten(&R.cm);
	barrier("sync after the rdma_cm connections");
}

/* -R on the loopback topology: droce1 (the server) listens on -p at its
 * address; droce0 connects each pair to it from this thread, whose idle
 * callback accepts the server's requests as they come (both ends' QPs on
 * rdma_cm's contexts, moved to RTS by rdma_cm). */
static uint32_t loop_accepted;

static void
loop_cm_idle(void *arg)
{
	struct rdma_cm_event *ev;

	(void)arg;
	droce_progress();
	if (pt_rcm_try(&R.cm, &ev) <= 0)
		return;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && loop_accepted < o.qps) {
		struct rdma_cm_id *id = ev->id;
		struct rdma_conn_param param;
		uint32_t i = loop_accepted++;

		rdma_ack_cm_event(ev);
		pair_qp(i, 1, id, true);
		cm_param(&param);
		if (rdma_accept(id, &param) != 0)
			fail("rdma_accept (loopback, QP pair %u): %s", i, strerror(errno));
		return;
	}
	rdma_ack_cm_event(ev); /* ESTABLISHED and the like: nothing to do */
}

static void
setup_loop_rdma_cm(void)
{
	enum rdma_port_space ps = o.qpt == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	struct rdma_conn_param param;
	char addr[INET_ADDRSTRLEN];

	if (!pt_gid_is_v4mapped(R.s[1].gid.raw))
		fail("-R on the loopback topology needs an IPv4 address on %s",
		     ibv_get_device_name(R.s[1].dev));
	inet_ntop(AF_INET, R.s[1].gid.raw + 12, addr, sizeof(addr));
	if (R.cm.listen_id == NULL) {
		pt_rcm_init(&R.cm, (int)(o.timeout * 1000), NULL, NULL);
		if (pt_rcm_listen(&R.cm, addr, o.tcp_port, ps, (int)o.qps) != 0)
			fail("rdma_cm listen on %s:%d: %s", addr, o.tcp_port, R.cm.err);
	}
	loop_accepted = 0;
	pt_rcm_init(&loop_cli, (int)(o.timeout * 1000), loop_cm_idle, NULL);
	for (uint32_t i = 0; i < o.qps; i++) {
		struct pair *p = &R.p[i];
		struct rdma_cm_id *id;

		memset(p, 0, sizeof(*p));
		for (int k = 0; k < 2; k++) {
			p->psn[k] = (uint32_t)lrand48() & 0xffffff;
			p->base[k] = R.s[k].buf + (uint64_t)i * R.lay.region;
		}
		R.me = 0; /* cm_make_qp makes side R.me's QP */
		cm_param(&param);
		if (pt_rcm_connect(&loop_cli, addr, o.tcp_port, ps, cm_make_qp,
				   (void *)(uintptr_t)i, &param, &id) != 0)
			fail("rdma_cm: connecting QP pair %u to %s:%d: %s", i, addr, o.tcp_port,
			     loop_cli.err);
		if (loop_accepted != i + 1)
			fail("rdma_cm: QP pair %u connected, but the server accepted %u", i,
			     loop_accepted);
		pair_post_recvs(i, 0);
		if (o.qpt == IBV_QPT_UD)
			cm_ud_peer(&loop_cli, i, 0);
	}
	/* the client ids' events are all in: its channel stays for teardown's */
	R.loop_cli_open = true;
}

/* The key exchanges and the connection, in perftest 6.06's order (one key
 * message per QP in each loop, Q below):
 *   write_bw, read_bw, atomic_bw:           Q, connect, Q, 1
 *   send_bw, send_lat:                      Q, connect, 1, Q, 1
 *   write_lat, read_lat, atomic_lat:     1, Q, connect, Q, 1
 * With -R, create_rdma_cm_connection's 1, rdma_cm, 1 come first and
 * "connect" is rdma_cm's. */
static void
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

static void
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
static inline uint64_t
last_in_slot(uint64_t count, uint32_t j)
{
	uint64_t seq = (count - 1 - j) / R.lay.nrx * R.lay.nrx + j;

	return seq >= count ? seq - R.lay.nrx : seq;
}

/* UC: slots whose last message has not landed (yet, or ever). */
static uint64_t
slots_not_landed(const uint64_t *count)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < o.qps; i++)
		for (uint32_t j = 0; j < R.lay.nrx && j < count[i]; j++)
			n += !landed(rx_slot(&R.p[i], 1, j), i, last_in_slot(count[i], j));
	return n;
}

/* write_bw --check, server: slot j holds the last message written to it. */
static void
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
static void
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

/* Bandwidth, both roles: the client runs; the server serves (SEND: its
 * receives are checked and reposted) until the client's end barrier. */
static void
run_bw_two(uint64_t size)
{
	struct pt_bw_report mine = { .size = size }, theirs;
	uint64_t count[MAX_QPS] = { 0 }, rcount[MAX_QPS];
	bool unreliable_send = o.verb == V_SEND && o.qpt != IBV_QPT_RC;
	/* perftest sends (and its server prints) the bandwidths in the unit it
	 * reports in: MB/sec (2^20 B), or 10^9 bits with --report_gbits */
	double unit = o.report_gbits ? 125e6 : 1048576.0;

	if (R.me == 0) {
		const struct result *r;

		run_bw(size);
		r = &results[n_results - 1];
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

/* Latency, server: the mirror of the client's ping-pong (send_lat,
 * write_lat); read_lat and atomic_lat need nothing from it. */
static void
serve_lat(uint64_t size)
{
	struct pair *p = &R.p[0];
	struct watch w;

	watch_start(&w);
	if (o.verb == V_READ || o.verb == V_ATOMIC)
		return;
	if (o.verb == V_WRITE && !R.oob.peer_droce) {
		/* perftest's write_lat: the server writes first, then answers each
		 * of the client's writes but the last; one buffer, at vaddr */
		volatile uint8_t *mark = rx_slot(p, 1, 0) + size - 1;

		for (uint64_t i = 0; i < o.iters; i++) {
			if (i > 0)
				WAIT_UNTIL(*mark == (uint8_t)i, &w, size,
					   "server polling the last byte of its buffer");
			w.last_progress = rte_rdtsc();
			lat_prepare(p, 1, i);
			post_one(p, 1, i, (i + 1) % LAT_SIGNAL_EVERY == 0 || i + 1 == o.iters,
				 &w, size);
		}
		WAIT_UNTIL(*mark == (uint8_t)o.iters, &w, size,
			   "server polling the last byte of its buffer");
		WAIT_UNTIL(p->sends_done[1] >= p->signaled[1], &w, size, "final completions");
		return;
	}
	for (uint64_t i = 0, total = (uint64_t)o.warmup + o.iters; i < total; i++) {
		bool sig = (i + 1) % LAT_SIGNAL_EVERY == 0 || i + 1 == total;

		if (o.verb == V_SEND) {
			WAIT_UNTIL(p->recv_seen[1] > i, &w, size, "server waiting for the SEND");
		} else {
			volatile uint8_t *mark = rx_slot(p, 1, i) + size - 1;

			WAIT_UNTIL(*mark == (uint8_t)(i + 1), &w, size,
				   "server polling the last byte of its buffer");
			if (o.check) {
				int64_t off;

				inject(rx_slot(p, 1, i), size, 0, i);
				off = pattern_check(rx_slot(p, 1, i), size, 0, i);
				if (off >= 0)
					check_failed("RDMA WRITE, server's buffer", 0, i,
						     rx_slot(p, 1, i), size, off);
			}
		}
		w.last_progress = rte_rdtsc();
		lat_prepare(p, 1, i);
		post_one(p, 1, i, sig, &w, size);
	}
	WAIT_UNTIL(p->sends_done[1] >= p->signaled[1], &w, size, "final completions");
}

/* UD: a message is one packet.  As perftest: an -s over the path MTU is
 * refused; the default size, and -a's sizes, are brought down to it. */
static unsigned int
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

static void
lat_samples_open(void)
{
	if (o.lat_samples == NULL)
		return;
	R.lat_f = fopen(o.lat_samples, "w");
	if (R.lat_f == NULL)
		fail("--lat-samples %s: %s", o.lat_samples, strerror(errno));
}

static void
lat_samples_close(void)
{
	if (R.lat_f == NULL)
		return;
	if (fclose(R.lat_f) != 0)
		fail("--lat-samples %s: %s", o.lat_samples, strerror(errno));
	R.lat_f = NULL;
}

static void
run_two(uint64_t size)
{
	srand48((long)getpid() ^ (long)time(NULL)); /* two processes: distinct PSNs */
	open_local();
	connect_peer();
	tsc_hz = rte_get_tsc_hz();
	ud_fit_sizes(&size, 1); /* the agreed MTU: both sides decide alike */
	if (R.me == 0)
		lat_samples_open();
	else if (o.lat_samples != NULL)
		fprintf(stderr, "droce-perf: --lat-samples: the client measures latency; the "
			"server writes no samples\n");
	print_banner();
	setup_two(size);
	connect_qps();
	R.run_start = rte_rdtsc();
	R.last_recv = R.run_start;
	print_addresses();
	if (R.me == 0 || o.mode == M_BW)
		print_header();
	if (o.mode == M_BW) {
		run_bw_two(size);
	} else {
		if (R.me == 0)
			run_lat(size);
		else
			serve_lat(size);
		if (R.oob.peer_droce) {
			/* droce peers: a last barrier, so neither leaves early */
			R.oob.timeout_ms = 0;
			barrier("end of the run");
		} else if (o.verb != V_WRITE) {
			/* perftest 6.06: read_lat, send_lat, atomic_lat end with a
			 * closing handshake (write_lat with none) */
			R.oob.timeout_ms = 0;
			barrier("closing");
		}
	}
	pt_oob_close(&R.oob);
	print_line();
	lat_samples_close();
	if (o.json)
		print_json();
	else if (o.stats)
		print_stats(stdout);
	fflush(stdout);
	teardown_two();
}

int
main(int argc, char **argv)
{
	uint64_t sizes[64];
	unsigned int n_sizes = 0;

	parse_args(argc, argv);
	R.grh = o.qpt == IBV_QPT_UD ? GRH_LEN : 0;
	R.rem_qkey = DEF_QKEY;
	if (!o.verbose) {
		/* DPDK's start-up chatter goes to stderr; keep warnings and errors */
		rte_log_set_global_level(RTE_LOG_WARNING);
		rte_log_set_level_pattern("droce.*", RTE_LOG_WARNING);
	}
	srand48(0x5eed);
	if (o.all)
		for (unsigned int l = ALL_MIN_LOG; l <= ALL_MAX_LOG; l++)
			sizes[n_sizes++] = 1ull << l;
	else
		for (unsigned int i = 0; i < o.n_sizes; i++)
			sizes[n_sizes++] = o.sizes[i];

	if (o.host == NULL && !o.server) {
		/* no peer named: loopback, unless the config has one device */
		struct ibv_device **list;
		int n = 0;

		list = ibv_get_device_list(&n);
		if (list == NULL)
			fail("ibv_get_device_list: %s", strerror(errno));
		ibv_free_device_list(list);
		o.server = n == 1;
	}
	if (o.host != NULL || o.server) {
		R.two = true;
		R.me = o.server ? 1 : 0;
		if (n_sizes != 1)
			unsupported("two processes run one message size at a time (no -a or -s "
				    "lists yet)");
		if (o.duration > 0 && o.mode == M_LAT)
			unsupported("-D: latency tests across two processes run -n iterations");
		if (o.qps > 1 && o.mode == M_LAT)
			unsupported("-q: latency tests use one QP");
		run_two(sizes[0]);
		return 0;
	}
	if (o.rdma_cm && n_sizes > 1)
		unsupported("-R on the loopback topology runs one message size (no -a or -s lists "
			    "yet: the next size's connections meet the last ones' CM time wait)");
	open_devices();
	tsc_hz = rte_get_tsc_hz();
	if (tsc_hz == 0)
		fail("no TSC frequency");
	n_sizes = ud_fit_sizes(sizes, n_sizes);
	R.multi_size = n_sizes > 1;
	lat_samples_open();
	print_banner();
	for (unsigned int i = 0; i < n_sizes; i++) {
		setup(sizes[i]);
		if (i == 0) {
			print_addresses();
			print_header();
		}
		if (o.mode == M_BW)
			run_bw(sizes[i]);
		else
			run_lat(sizes[i]);
		teardown();
	}
	print_line();
	lat_samples_close();
	if (o.json)
		print_json();
	else if (o.stats)
		print_stats(stdout);
	fflush(stdout);
	close_devices();
	return 0;
}
