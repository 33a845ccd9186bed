/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's out-of-band exchange over TCP (default port 18515), both roles,
 * so droce-perf can face ib_write_bw & co.  Written from perftest's
 * protocol as perftest 6.06 (Debian 12's perftest 4.5-0.17) speaks it:
 *
 *   every exchange ("xchg") of N bytes: the client writes N bytes then reads
 *   N; the server reads N then writes N.  In order:
 *   1. version: 16 bytes, a NUL-terminated decimal string ("6.06").  droce
 *      puts "droce" after the NUL, which perftest ignores (it reads the
 *      number with atof); two droce-perf processes recognise each other so.
 *   2. system data, when the peer's version is >= 5.32: the cycle buffer
 *      (page size) then the cache line size, each a 32-bit int in network
 *      order; both sides take the larger.
 *   3. MTU, when the peer's version is >= 5.1: the ibv_mtu enum value as
 *      decimal text ("5" = 4096), 2 bytes when the peer is >= 5.31 (4 bytes
 *      before); both use the smaller.
 *   4. per QP a key message (perftest's "hand shake"): 108 bytes, the text
 *      "%04x:%04x:%06x:%06x:%08x:%016llx:" (LID, outstanding reads, QPN, PSN,
 *      rkey, vaddr), the 16 GID bytes as "%02x:", then "%08x:" (SRQ number)
 *      and a NUL.  The same message is reused as a barrier.  As recorded
 *      from Debian 12's perftest 6.06 (scripts/rxe-interop), every test does
 *      one key exchange before the per-QP ones and one after moving to RTR;
 *      send_bw and the latency tests one more before the run.  After the
 *      run: write_bw, read_bw, atomic_bw a barrier, the reports (5.) and a
 *      closing one; send_bw, read_lat, send_lat a closing one only (send_bw's
 *      server reports what it received); write_lat none.  A closing
 *      exchange is followed by "done\0" (5 bytes) that nobody reads.  In
 *      write_lat the server writes first.
 *   5. bandwidth reports (xchg_bw_reports): size (8 bytes, big endian),
 *      iterations (8 bytes big endian when the peer is >= 5.33, else 4),
 *      then BW peak, BW average and message rate as IEEE doubles in big
 *      endian (byte-swapped on little-endian hosts); each its own exchange.
 */
#ifndef DROCE_PERFTEST_OOB_H
#define DROCE_PERFTEST_OOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_DEFAULT_PORT 18515
#define PT_VERSION "6.06"      /* the perftest version droce-perf speaks as */
#define PT_VERSION_LEN 16      /* perftest's MAX_VERSION */
#define PT_DROCE_MARK "droce"  /* after the version's NUL: a droce-perf peer */
#define PT_KEY_MSG_LEN 108     /* perftest's KEY_MSG_SIZE_GID */
#define PT_CYCLE_BUFFER 4096   /* perftest's default: the page size */
#define PT_CACHE_LINE 64

/* perftest's rdma_cm channel (-R): each exchange is one SEND of its bytes
 * each way on an RC QP connected through rdma_cm (apps/perftest_rdmacm.h),
 * and the key message is perftest's struct pingpong_dest in big endian. */
struct pt_msg_ops {
	int (*send)(void *arg, const void *buf, size_t n, int timeout_ms, char *err,
		    size_t errlen);
	int (*recv)(void *arg, void *buf, size_t n, int timeout_ms, char *err, size_t errlen);
};

#define PT_KEY_BIN_LEN 56 /* sizeof(struct pingpong_dest) on x86-64 */

/* Called while a socket operation waits (droce's co-located engines must
 * keep running: the peer may be waiting for an ARP reply or an ACK). */
typedef void (*pt_idle_fn)(void *arg);

struct pt_oob {
	int fd;
	bool client;
	int timeout_ms;            /* per socket operation; <= 0: forever */
	pt_idle_fn idle;
	void *idle_arg;
	char rem_version[PT_VERSION_LEN + 1];
	double rem_ver;            /* atof(rem_version) */
	bool peer_droce;
	const struct pt_msg_ops *msg; /* NULL: TCP (fd); else perftest's rdma_cm channel */
	void *msg_arg;
	char err[160];             /* why the last call failed */
};

/* What one QP's key message carries (perftest's struct pingpong_dest). */
struct pt_dest {
	uint32_t lid, out_reads, qpn, psn, rkey, srqn;
	uint64_t vaddr;
	uint8_t gid[16];
};

/* One side's bandwidth result (perftest's struct bw_report_data, the part
 * that is exchanged). */
struct pt_bw_report {
	uint64_t size, iters;
	double bw_peak, bw_avg, msg_rate; /* MB/s (2^20) and Mpps, as perftest */
};

void pt_oob_init(struct pt_oob *c, bool client, int timeout_ms, pt_idle_fn idle, void *arg);

/* Server: listens on @bind_addr (NULL: every address, as perftest) and
 * @port, accepts one connection.  Client: connects to @host:@port, retrying
 * until the timeout (the server may not listen yet).  0 or -1 (c->err). */
int pt_oob_listen_accept(struct pt_oob *c, const char *bind_addr, int port);
int pt_oob_connect(struct pt_oob *c, const char *host, int port);
/* Uses a message channel instead of a socket (perftest's -R). */
void pt_oob_attach_msg(struct pt_oob *c, const struct pt_msg_ops *ops, void *arg);
/* Uses an already connected socket (tests: a socketpair). */
void pt_oob_attach(struct pt_oob *c, int fd);
void pt_oob_close(struct pt_oob *c);

/* One exchange of @n bytes in perftest's order (client writes first). */
int pt_xchg(struct pt_oob *c, const void *mine, void *theirs, size_t n);

int pt_xchg_version(struct pt_oob *c, const char *version);
/* Skipped (returns 0, *out = mine) when the peer is older than 5.32. */
int pt_xchg_sys_data(struct pt_oob *c, int cycle_buffer, int cache_line, int *cycle_out,
		     int *cache_line_out);
/* @mtu and *agreed are ibv_mtu enum values (1 = 256 .. 5 = 4096). */
int pt_xchg_mtu(struct pt_oob *c, int mtu, int *agreed);
int pt_hand_shake(struct pt_oob *c, const struct pt_dest *mine, struct pt_dest *theirs);
int pt_xchg_bw_reports(struct pt_oob *c, const struct pt_bw_report *mine,
		       struct pt_bw_report *theirs);

/* The key message text; pt_key_format writes exactly PT_KEY_MSG_LEN bytes. */
void pt_key_format(const struct pt_dest *d, char out[PT_KEY_MSG_LEN]);
int pt_key_parse(const char in[PT_KEY_MSG_LEN], struct pt_dest *d);

/* perftest's ctx_check_gid_compatibility: both IPv4-mapped or neither. */
/* The key message over perftest's rdma_cm channel: struct pingpong_dest
 * (lid, out_reads, qpn, psn, rkey as 32-bit big endian at 0, 4, 8, 12, 16;
 * vaddr 64-bit big endian at 24; the GID at 32; srqn at 48; gid_index at
 * 52), PT_KEY_BIN_LEN bytes. */
void pt_key_bin_format(const struct pt_dest *d, uint8_t out[PT_KEY_BIN_LEN]);
void pt_key_bin_parse(const uint8_t in[PT_KEY_BIN_LEN], struct pt_dest *d);

bool pt_gid_is_v4mapped(const uint8_t gid[16]);
bool pt_gid_compatible(const uint8_t a[16], const uint8_t b[16]);

#endif
