/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: Errors and exits (fail, usage) and the command line: perftest's options
 * and droce-perf's own, checked against what the test and transport allow.
 */
#include "perf.h"

/* ---- errors ---- */


/* "droce-perf: " and the message, one line on stderr. */
static void
say(const char *fmt, va_list ap)
{
	fprintf(stderr, "droce-perf: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
}

void __attribute__((format(printf, 1, 2), noreturn))
fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	if (o.stats && stats_ready) {
		/* a failed run's counters say the most (drops, retransmissions) */
		stats_ready = false;
		print_stats(stderr);
	}
	exit(EXIT_FAIL);
}

void
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
"      --server-dev=NAME   loopback: the server's device (droce0 with -d droce0:\n"
"                          client and server QPs on one port, looped inside droce)\n"
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

void __attribute__((format(printf, 1, 2), noreturn))
usage_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	usage(stderr);
	exit(EXIT_USAGE);
}

void __attribute__((format(printf, 1, 2), noreturn))
unsupported(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	exit(EXIT_USAGE);
}

uint64_t
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

double
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


void
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
		{ "server-dev", required_argument, NULL, OPT_SERVER_DEV },
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
		case OPT_SERVER_DEV:
			o.server_dev = optarg;
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
