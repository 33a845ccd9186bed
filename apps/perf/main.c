/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: a perftest-compatible RDMA benchmark over droce's verbs.
 *
 *     droce-perf write_bw -s 65536           (like ib_write_bw)
 *     droce-perf send_lat -a                 (like ib_send_lat -a)
 *     droce-perf atomic_bw -A CMP_AND_SWAP   (like ib_atomic_bw)
 *
 * Topologies (topology.c, one table entry each): loopback below, two
 * processes (two.c), either with -R.  Loopback: one process opens two
 * devices (droce0 and droce1 of the embedded in-memory config, or whatever
 * DROCE_CONFIG names), plays client on
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
#include "perf.h"

const char *const verb_name[] = { "write", "read", "send", "atomic" };
const char *const verb_title[] = { "RDMA_Write", "RDMA_Read", "Send", "Atomic" };
struct opts o;
uint64_t tsc_hz;
bool stats_ready; /* --stats: the engines and ports are there to report */
struct run R;
struct pt_rcm loop_cli; /* -R loopback: the client side's rdma_cm channel */
struct droce_stat qp_sum[STATS_MAX];
int qp_sum_n;
unsigned int qp_sum_qps;
struct result *results;
unsigned int n_results;
uint32_t loop_accepted;

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
	if (o.host != NULL || o.server)
		R.me = o.server ? 1 : 0;
	run_topology(o.host != NULL || o.server, sizes, n_sizes);
	return 0;
}
