/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf's shared declarations: options, the run's state (one process
 * playing both sides, or one side of two processes), results, and every
 * function one file of apps/perf/ calls in another.  What droce-perf does is
 * described at the top of main.c.
 */
#ifndef DROCE_PERF_PERF_H
#define DROCE_PERF_PERF_H

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
#include "../perftest_oob.h"
#include "../perftest_rdmacm.h"
#define EXIT_FAIL 1
#define EXIT_USAGE 2

#define MAX_QPS 16384 /* issue 11 measures 1,000 and 10,000 */
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
	const char *server_dev; /* loopback: the server's device (NULL: the other one) */
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


/* --new-post / --old-post: how QPs are created and WRs posted */

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
	OPT_SERVER_DEV,
};

#define PAT_STEP 0x9e3779b97f4a7c15ull

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
	bool queued;           /* run_bw: in R.ready (it may be able to post) */
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
	/* run_bw with many QPs: the pairs that may be able to post, a FIFO of
	 * pair indices (each at most once), so one loop visits those alone; a
	 * completion puts its pair back (bw_wake).  And the sums its figures
	 * need, kept as completions are polled rather than summed per poll. */
	uint32_t *ready;
	uint32_t ready_head, ready_n;
	uint64_t completed_all; /* sum of every pair's `completed` */
	uint64_t recv_all[2];   /* sum of every pair's recv_seen[side] */
};

/* --stats: every QP's counters, summed as the QPs are destroyed */
#define STATS_MAX 128

/* UC and UD lose messages (no retransmission) but never reorder them: the
 * message that arrived is the first from @seq on whose start matches.  Up
 * to a million lost in a row; -1 when none matches (the start is corrupt).
 * Messages under 8 bytes may alias a later one: a corrupt tiny message can
 * pass for a loss. */
#define MAX_LOST_RUN (1u << 20)

struct watch {
	uint64_t start, last_progress, last_print, timeout;
	uint64_t polls;
};

struct result {
	uint64_t bytes, iters, msgs;
	double seconds;
	double bw_peak, bw_avg; /* bytes per second */
	double msg_rate;        /* messages per second */
	double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999; /* usec */
	uint64_t lost; /* UC/UD: messages sent that never arrived */
	double gap_p99, gap_max; /* bw: usec between successive completions seen */
};

struct peak_point {
	uint64_t tsc, msgs;
};

/* @p can post nothing more now: all posted, or the window is full.  Then
 * only polling is left, and what polling does not bring in is lost: after
 * IDLE_POLLS polls (each of them runs the co-located engines) and
 * IDLE_SECONDS (dedicated engines run on their own) without an arrival,
 * run_bw gives up on what is out; otherwise after DRAIN_QUIET. */
#define IDLE_POLLS 2000

#define IDLE_SECONDS 0.01

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

/* ---- globals (main.c) ---- */

extern const char *const verb_name[4];
extern const char *const verb_title[4];
extern struct opts o;
extern uint64_t tsc_hz;
extern bool stats_ready;
extern struct run R;
extern struct pt_rcm loop_cli;
extern struct droce_stat qp_sum[STATS_MAX];
extern int qp_sum_n;
extern unsigned int qp_sum_qps;
extern struct result *results;
extern unsigned int n_results;
extern uint32_t loop_accepted;

/* Whether this process plays @side (0 the client, 1 the server): both on
 * the loopback, one of them in two processes.  The runs (bw.c, lat.c) do a
 * side's steps where it is played; the topology adds only its exchange. */
static inline bool
plays(int side)
{
	return !R.two || R.me == side;
}


/* ---- options.c ---- */

void __attribute__((format(printf, 1, 2), noreturn)) fail(const char *fmt, ...);
void usage(FILE *f);
void __attribute__((format(printf, 1, 2), noreturn)) usage_fail(const char *fmt, ...);
void __attribute__((format(printf, 1, 2), noreturn)) unsupported(const char *fmt, ...);
uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max);
double parse_seconds(const char *opt, const char *s);
void parse_args(int argc, char **argv);

/* ---- check.c ---- */

uint64_t mix64(uint64_t x);
void pattern_fill(uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq);
int64_t pattern_check(const uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq);
void inject(uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq);
void __attribute__((noreturn)) check_failed(const char *what, uint32_t qp, uint64_t seq, const uint8_t *p, uint64_t len, int64_t off);

/* ---- setup.c ---- */

uint8_t * tx_slot(const struct pair *p, int side, uint64_t i);
uint8_t * rx_slot(const struct pair *p, int side, uint64_t i);
uint32_t clamp_slots(uint64_t stride, uint32_t want);
struct layout layout_for(uint64_t size);
enum ibv_mtu mtu_enum(uint32_t bytes);
uint32_t mtu_bytes(enum ibv_mtu m);
void side_open(struct side *s, double wait_s);
struct ibv_device **device_list(int *n);
struct ibv_device *device_named(struct ibv_device **list, int n, const char *name);
void open_devices(void);
void close_devices(void);
void to_init(struct ibv_qp *qp);
void to_rts(struct ibv_qp *qp, uint32_t psn, const struct ibv_qp *peer, uint32_t peer_psn, const union ibv_gid *peer_gid, uint32_t my_reads, uint32_t peer_reads);
struct ibv_ah * make_ah(int side, const union ibv_gid *dgid);
void side_alloc(struct side *s, uint64_t cqe);
void plan_run(uint64_t size);
uint64_t plan_cqe(void);
void setup_loop(uint64_t size);
void connect_loop(void);
void qp_stats_add(struct ibv_qp *qp);
void teardown(void);

/* ---- post.c ---- */

void post_recv_slot(struct pair *p, uint32_t pi, int side, uint32_t slot);
uint64_t peer_slot(const struct pair *p, int peer, uint64_t i);
struct ibv_qp * create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia);
int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
void make_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, struct pair *p, uint32_t pi, int side, uint64_t seq, bool signaled);
void check_prepare(struct pair *p, uint32_t pi, int side, uint64_t seq);
void check_completed(struct pair *p, uint32_t pi, int side, uint64_t seq);
bool pattern_end_matches(const uint8_t *p, uint64_t len, uint32_t qp, uint64_t seq, bool tail);
int64_t find_arrived(const uint8_t *b, uint64_t len, uint32_t qp, uint64_t seq);
void check_received(struct pair *p, uint32_t pi, int side, const struct ibv_wc *wc);
bool landed(const uint8_t *b, uint32_t pi, uint64_t seq);
void uc_write_verify(struct pair *p, uint32_t pi, bool force, uint64_t now);

/* ---- poll.c ---- */

double secs(uint64_t cycles);
void watch_start(struct watch *w);
void __attribute__((noreturn)) stuck(uint64_t size, const char *state);
void __attribute__((noreturn)) wc_error(int side, const struct ibv_wc *wc);
int event_wait(void);
int poll_side(int side);
int poll_side_cq(int side);

/* ---- report.c ---- */

double bw_unit(double bytes_per_sec);
void print_line(void);
void print_banner(void);
void print_gid(const union ibv_gid *g);
void print_addresses(void);
void print_header(void);
void print_result(const struct result *r);
void add_result(const struct result *r);
void progress(struct watch *w, uint64_t now, uint64_t size, uint64_t done, uint64_t want, const char *unit);

/* ---- bw.c ---- */

double peak_bw(const struct peak_point *pt, size_t n, uint64_t size, uint64_t min_msgs);
void completion_gaps(const struct peak_point *pt, size_t n, struct result *r);
bool track_arrivals(void);
uint64_t resolved(const struct pair *p);
uint64_t msgs_sent(void);
uint64_t quiet_cycles(void);
bool sender_idle(const struct pair *p, uint64_t window);
void give_up_on(struct pair *p, uint32_t pi, uint64_t now);
void run_bw(uint64_t size);
void bw_wake(uint32_t pi);

/* ---- lat.c ---- */

void poll_sides(void);
void post_one(struct pair *p, int side, uint64_t seq, bool signaled, struct watch *w, uint64_t size);
void lat_prepare(struct pair *p, int side, uint64_t seq);
void run_lat(uint64_t size);

/* ---- stats.c ---- */

void print_counters(FILE *f, const char *what, int (*get)(unsigned int, struct droce_stat *, unsigned int), unsigned int id);
int cm_counters(unsigned int id, struct droce_stat *out, unsigned int n);
void print_stats(FILE *f);
void json_counters(const char *key, unsigned int id, int (*get)(unsigned int, struct droce_stat *, unsigned int));
void json_stats(void);
void print_json(void);

/* ---- two.c ---- */

void oob_idle(void *arg);
void oob_check(int rc, const char *what);
struct ibv_context * rcm_context_of(struct ibv_device *dev);
void open_local(void);
void params_line(char *buf, size_t n);
void connect_peer(void);
void pair_post_recvs(uint32_t i, int side);
void pair_qp(uint32_t i, int side, struct rdma_cm_id *id, bool recvs);
void setup_two(uint64_t size);
void my_dest(uint32_t i, struct pt_dest *d);
void barrier(const char *what);
void key_loop(const char *what, bool keep);
uint32_t peer_reads(const struct pair *p);
void cm_param(struct rdma_conn_param *c);
void cm_ud_peer(const struct pt_rcm *c, uint32_t i, int side);
int cm_make_qp(struct rdma_cm_id *id, void *arg);
void cm_accept(struct pt_rcm *c, uint32_t i, int side);
void connect_qps_rdma_cm(void);
void loop_cm_idle(void *arg);
void setup_loop_rdma_cm(void);
void connect_qps(void);
void teardown_two(void);
uint64_t last_in_slot(uint64_t count, uint32_t j);
uint64_t slots_not_landed(const uint64_t *count);
void check_written_slots(const uint64_t *count);
void add_result_received(uint64_t size, const uint64_t *sent);
void bw_end_two(uint64_t size);
void lat_end_two(uint64_t size);
unsigned int ud_fit_sizes(uint64_t *sizes, unsigned int n);
void lat_samples_open(void);
void lat_samples_close(void);
/* ---- topology.c ---- */

/* Runs the test on the topology: two processes (@two) or loopback, -R or not. */
void run_topology(bool two, uint64_t *sizes, unsigned int n_sizes);

#endif /* DROCE_PERF_PERF_H */
