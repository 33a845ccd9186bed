/* SPDX-License-Identifier: BSD-3-Clause
 * RC end-to-end test harness at the dataplane level (dp.h, no verbs API).
 *
 * Every Criterion test runs in its own forked process; h_start() starts the
 * EAL and droce there from a config text (ring pair port0 198.18.0.1 <->
 * port1 198.18.0.2, co-located engines), so polling a CQ drives the engines.
 */
#ifndef DROCE_TESTS_DP_HARNESS_H
#define DROCE_TESTS_DP_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <droce/config.h>
#include <droce/droce.h>

#include "dataplane/dp.h"
#include "dataplane/engine.h"
#include "pmd_glue/port.h"
/* tests/common: the clock (tc_now_ms) and the port pair's config text */
#include "env.h"
#include "pair_config.h"

#define H_PD 7u

/* PSNs the harness starts from: close enough to 2^24 that long messages wrap. */
#define H_PSN_A 0xffff00u /* port0 side's send PSN */
#define H_PSN_B 0xfffff8u /* port1 side's send PSN */

struct h_cfg {
	unsigned int engines;    /* colocated engines (and rx/tx queues per port); 0 = 1 */
	unsigned int port_mtu;   /* 0 = 9000 */
	unsigned int data_room;  /* 0 = 10240 */
	unsigned int mbufs;      /* 0 = 16383 */
	unsigned int mem_mb;     /* EAL -m; 0 = 512 */
	const char *capture0;    /* port0 capture file; NULL = $DROCE_TEST_CAPTURE if set, else none */
	const char *port_extra;  /* extra "key = value" lines for every [portN], NULL = none */
	const char *port0_extra; /* ... for [port0] alone */
	const char *port1_extra; /* ... for [port1] alone */
	const char *sections;    /* more sections after the ports (e.g. "[dcqcn]\n...") */
	int fallback_us;         /* [engines] fallback_us: 0 the default, -1 off (only the test drives) */
	bool selective_repeat;   /* [engines] selective_repeat = 1 (dataplane/rc_sr.c) */
	const char *text;        /* the whole config text instead of the pair's (the
				    fields above are then ignored); h_connect takes
				    each port's GID 0 */
};

/*
 * Starts droce and the engines.  Asserts success unless @may_fail, in which
 * case it returns -1 (with droce_last_error()) when the config is refused.
 */
int h_start(const struct h_cfg *cfg, bool may_fail);
/* Destroys the QPs, CQs and MRs made through the harness, then stops engines
 * and droce (used as the suites' .fini; a second call does nothing). */
void h_stop(void);

/* A CQ without notifications, destroyed by h_stop(). */
struct droce_cq *h_cq_create(uint32_t cqe);

/* A registered buffer (malloc'd, iova = host address unless given).  The MR
 * the engines see is a heap copy owned by the harness; b->mr holds its keys. */
struct h_buf {
	uint8_t *p;
	size_t len;
	struct droce_mr mr;
};

void h_buf_init(struct h_buf *b, size_t len, uint32_t access);
/* Same with an explicit PD and an iova that differs from the host address. */
void h_buf_init_ex(struct h_buf *b, size_t len, uint32_t access, uint32_t pd, uint64_t iova);
void h_buf_free(struct h_buf *b);
/* iova of byte @off of @b. */
static inline uint64_t h_va(const struct h_buf *b, size_t off) { return b->mr.iova + off; }

/* Fills @n bytes with a pattern derived from @seed (never all-equal bytes). */
void h_fill(uint8_t *p, size_t n, uint32_t seed);
/* Index of the first byte that differs from h_fill(@seed), or -1. */
long h_check_fill(const uint8_t *p, size_t n, uint32_t seed);

struct h_conn_opts {
	uint32_t pmtu;            /* 256..4096; 0 = 1024 */
	uint8_t timeout;          /* 0 = 12 (~16.8 ms); H_TIMEOUT_NONE for 0 */
	uint8_t retry_cnt;        /* 0xff = 7 default handled by h_conn_defaults */
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint32_t access;          /* remote access the responder allows */
	uint16_t udp_sport;
	uint8_t traffic_class;    /* the path's GRH traffic class (DSCP << 2 | ECN) */
	uint8_t sl;               /* the VLAN priority on a port with a vlan */
};

/* timeout 12, retry 7, rnr 7, min_rnr_timer 1 (10 us), rd_atomic 16, all access. */
struct h_conn_opts h_conn_defaults(uint32_t pmtu);

/* Two RC QPs: [0] on port0, [1] on port1. */
struct h_pair {
	struct droce_qp *qp[2];
	uint32_t qpn[2];
	struct droce_cq *scq[2], *rcq[2];
};

/* Creates both QPs (caps: @sq/@rq slots, 16 SGEs, 256 inline) on the given CQs. */
void h_pair_create(struct h_pair *p, uint32_t sq, uint32_t rq, struct droce_cq *scq0,
		   struct droce_cq *rcq0, struct droce_cq *scq1, struct droce_cq *rcq1);
/* Same; QPs are spread over engines round robin in creation order, so
 * @port1_first puts port1's QP on the engine port0's would have had. */
void h_pair_create_ex(struct h_pair *p, uint32_t sq, uint32_t rq, struct droce_cq *scq0,
		      struct droce_cq *rcq0, struct droce_cq *scq1, struct droce_cq *rcq1,
		      bool port1_first);
/* One RC QP for port @port (destroyed by h_stop). */
struct droce_qp *h_qp_create(unsigned int port, uint32_t sq, uint32_t rq, struct droce_cq *scq,
			     struct droce_cq *rcq);
/* Creates a pair with its own four CQs of @cqe entries. */
void h_pair_create_cqs(struct h_pair *p, uint32_t sq, uint32_t rq, uint32_t cqe);

/*
 * RESET -> INIT -> RTR -> RTS for QP @qp on @port towards @peer_port's QP
 * @dest_qpn, with send PSN @sq_psn and expected PSN @rq_psn.
 */
void h_connect(struct droce_qp *qp, unsigned int port, unsigned int peer_port, uint32_t dest_qpn,
	       uint32_t sq_psn, uint32_t rq_psn, const struct h_conn_opts *o);
/* The same without waiting for the engine to apply the modifies (see h_settle). */
void h_connect_nowait(struct droce_qp *qp, unsigned int port, unsigned int peer_port,
		      uint32_t dest_qpn, uint32_t sq_psn, uint32_t rq_psn, const struct h_conn_opts *o);
/* Connects both QPs of @p with the same options (PSNs H_PSN_A / H_PSN_B). */
void h_pair_connect(struct h_pair *p, const struct h_conn_opts *o);

/* Waits (driving the engines, 5 s at most) until @qp's engine applied its modifies;
 * h_connect and h_modify_state end with it. */
void h_settle(struct droce_qp *qp);

/*
 * A hostile peer's frame: built by hand from @f (every field as given, the
 * BTH P_Key included) and @plen bytes of @payload, addressed from port @port
 * to @peer_port (the path h_connect gives a QP there), padded, with its ICRC;
 * engine 0 sends it on @port through droce_dp_inject(), after everything this
 * thread sent the engines before.  Race-free: the test thread touches no
 * engine state.
 */
void h_inject_frame(unsigned int port, unsigned int peer_port, const struct droce_pkt_fields *f,
		    const void *payload, uint32_t plen);
/* The same; DROCE_INJECT_RX hands it to the engine as received on @peer_port
 * (no link in between: no capture, no impairment). */
void h_inject_frame_dir(unsigned int port, unsigned int peer_port, const struct droce_pkt_fields *f,
			const void *payload, uint32_t plen, enum droce_inject_dir dir);

/* The frame h_inject_frame() would send, built into @frame (@cap bytes): its length. */
size_t h_build_frame(unsigned int port, unsigned int peer_port, const struct droce_pkt_fields *f,
		     const void *payload, uint32_t plen, uint8_t *frame, size_t cap);
/* Injects @len raw bytes (any bytes: truncated, corrupted) as h_inject_frame_dir() does. */
void h_inject_raw(unsigned int port, unsigned int peer_port, const uint8_t *frame, size_t len,
		  enum droce_inject_dir dir);

/* Moves @qp to @state (mask STATE only). */
void h_modify_state(struct droce_qp *qp, enum droce_qp_state state);

/* ---- work requests ---- */

struct droce_wqe h_wqe(uint64_t wr_id, uint8_t opcode, uint8_t flags);
/* Appends one SGE of @len bytes at @off in @b (length grows). */
void h_wqe_sge(struct droce_wqe *w, const struct h_buf *b, size_t off, uint32_t len);
/* Splits [off, off + len) of @b into @n SGEs of uneven sizes. */
void h_wqe_sges(struct droce_wqe *w, const struct h_buf *b, size_t off, uint32_t len, unsigned int n);
void h_post_send(struct droce_qp *qp, const struct droce_wqe *w);
/* Posts a signaled WRITE of @len bytes from @local at @off to @remote at @off. */
void h_post_write(struct droce_qp *qp, uint64_t wr_id, const struct h_buf *local,
		  const struct h_buf *remote, size_t off, uint32_t len);
/* Posts a signaled READ of @len bytes from @remote at @off into @local at @off. */
void h_post_read(struct droce_qp *qp, uint64_t wr_id, const struct h_buf *local,
		 const struct h_buf *remote, size_t off, uint32_t len);
/* Drives the engines until @qp has sent @n frames (fails after 5 s, naming @what). */
void h_wait_tx(struct droce_qp *qp, uint64_t n, const char *what);

struct droce_rqe h_rqe(uint64_t wr_id);
void h_rqe_sge(struct droce_rqe *r, const struct h_buf *b, size_t off, uint32_t len);
void h_rqe_sges(struct droce_rqe *r, const struct h_buf *b, size_t off, uint32_t len, unsigned int n);
void h_post_recv(struct droce_qp *qp, const struct droce_rqe *r);

/* ---- completions ---- */

/* Polls @cq until @n completions arrived or @timeout_ms passed; returns how many. */
int h_poll(struct droce_cq *cq, int n, struct droce_cqe *out, unsigned int timeout_ms);
/* Asserts exactly one completion arrives within @timeout_ms and returns it. */
struct droce_cqe h_poll1(struct droce_cq *cq, unsigned int timeout_ms, const char *what);
/* Drives the engines for @ms and asserts @cq stays empty. */
void h_expect_empty(struct droce_cq *cq, unsigned int ms, const char *what);
/* Drives the engines for @ms. */
void h_spin(unsigned int ms);

struct h_expect {
	uint64_t wr_id;
	uint32_t status, opcode, byte_len;
	uint32_t imm;      /* network order, checked when wc_flags has WITH_IMM, else must be 0 */
	uint32_t wc_flags;
	uint32_t qp_num, src_qp;
};

/* Asserts every field of @c; @ctx prefixes the messages. */
void h_check_cqe(const struct droce_cqe *c, const struct h_expect *e, const char *ctx);
/* Asserts the fields an error completion must carry: wr_id, status, qp_num. */
void h_check_err_cqe(const struct droce_cqe *c, uint64_t wr_id, uint32_t status, uint32_t qp_num,
		     const char *ctx);

/* ---- misc ---- */

/* Stats of the QP (read from the test thread: co-located engines only). */
static inline const struct droce_qp_stats *h_qp_stats(const struct droce_qp *qp) { return &qp->stats; }
static inline enum droce_qp_state h_qp_state(const struct droce_qp *qp) { return qp->state; }
/* Logs @qp's transport state and counters (co-located engines only). */
void h_dump_qp(const char *name, const struct droce_qp *qp);
/* Prints every engine's and port's counters to stderr. */
void h_dump_engines(void);
/* An environment variable as unsigned, or @def. */
unsigned long h_env_ulong(const char *name, unsigned long def);
/* True when built with AddressSanitizer. */
bool h_asan(void);

#endif
