/* SPDX-License-Identifier: BSD-3-Clause
 * droce runtime configuration: the validated form of the INI file.
 *
 * The file has these sections (unknown sections and keys are errors):
 *
 *   [eal]      args = EAL arguments, split on blanks (no quoting)
 *   [engines]  mode = dedicated | colocated
 *              lcores = 1,2 | 1-3      (dedicated: worker lcores, one engine each)
 *              count = N               (colocated: number of engines, default 1)
 *              fallback_us = N         (colocated: an engine no application thread
 *                                       has driven for N µs is driven by droce's
 *                                       fallback progress thread; 0 = no fallback
 *                                       thread; default 50, at most 1000000)
 *              wait_spin_us = N        (colocated: a thread about to block in
 *                                       ibv_get_cq_event drives the engines
 *                                       itself for up to N µs first, adapted
 *                                       to how soon its events come; 0 = never;
 *                                       default 200, at most 100000)
 *              selective_repeat = 0 | 1  (RC: 1 = selective repeat with peers
 *                                       that are droce with it too, found by
 *                                       a BTH hint; default 0: plain IBTA
 *                                       go-back-N, frames unchanged)
 *              time_dilation = S       (droce's clock (engines, RC timers,
 *                                       pacer, DCQCN, the switch) runs S times
 *                                       slower than real time; default 1)
 *              clock_stall_us = N      (a gap over N us between two reads of
 *                                       droce's clock counts as N us: time
 *                                       off the CPU passes for nobody; 0 off)
 *   [mempool]  mbufs = N, cache = N, data_room = bytes, capture_mbufs = N
 *   [switch]   the in-process switch model the ports of kind = switch join
 *              (pmd_glue/switch.c): every port's egress queue drains at
 *              rate = Gb/s (default 10), the queues share buffer = bytes
 *              (default 1M; K/M suffixes), ECN marking RED-style on the
 *              instantaneous queue at dequeue: kmin = bytes, kmax = bytes
 *              (default 0: no marking), pmax = P (default 1), tail drop
 *              when full; pfc = 0 | 1 with pfc_xoff / pfc_xon = bytes per
 *              ingress port; seed = N (the marking draws)
 *   [portN]    kind = ring | memif | af_packet | af_xdp | tap | pci | switch
 *              peer = portM            (ring)
 *              role = server | client, socket = path, id = N   (memif)
 *              iface = name            (af_packet, af_xdp, tap)
 *              queue = N               (af_xdp: first queue)
 *              pci = 0000:03:00.0      (pci)
 *              mac = 02:00:c6:12:00:01
 *              ipv4 = a.b.c.d[, ...]   ipv6 = x::y[, ...]   (the GID table)
 *              mtu = 256..9000  rxq = N  txq = N  rxd = N  txd = N
 *              capture = path.pcapng   vlan = 1..4094
 *              zero_copy = bytes       (RC/XRC payloads from this size on are
 *                                       sent from registered memory; default
 *                                       4096, 0 = never)
 *              ecn = ect0 | ect1 | off (the ECN field of the RoCEv2 frames
 *                                       droce sends: ECT(0) by default, as
 *                                       ConnectX; off sends Not-ECT frames,
 *                                       which no switch marks)
 *              tclass = 0..255         (the traffic class (DSCP << 2) of a QP
 *                                       or AH that gives 0; default 0)
 *              pcp = 0..7              (the VLAN priority of a QP or AH whose
 *                                       service level is 0; default 0)
 *              The impaired link (all optional; off by default):
 *              impair_drop = P         drop a frame with probability P
 *              impair_dup = P          send a frame twice (byte-identical copy)
 *              impair_reorder = P      hold a frame back until 1..3 later
 *                                      frames have overtaken it (or 100 us)
 *              impair_delay_us = N     delay chosen frames by N us (0..1000000)
 *              impair_delay = P        ...chosen with probability P (default 1
 *                                      when impair_delay_us is set)
 *              impair_corrupt = P      flip one random bit past the Ethernet
 *                                      header (caught by IP/UDP checksum or ICRC)
 *              impair_ce = P           mark an ECN-capable IP frame CE (ECN 11),
 *                                      as a congested switch queue would
 *              impair_seed = N         PRNG seed (0..2^64-1, default 0); queue q
 *                                      of the port draws from seed, port, dir, q
 *              impair_dir = tx | rx | both   where it applies (default tx)
 *              P is a decimal 0..1 or a percentage ("0.5%").  Per frame the
 *              order is drop, corrupt, CE mark, duplicate, delay, reorder.
 *   [dcqcn]    congestion control (dataplane/cc.c, dcqcn.c), ConnectX's names:
 *              np_enable = 0 | 1       (CNPs for CE-marked frames; default 1)
 *              min_time_between_cnps = us   (per QP; default 2)
 *              cnp_dscp = 0..63 (48)   cnp_802p_prio = 0..7 (6)
 *              rp_enable = 0 | 1       (CNPs slow the QP down; default 1)
 *              algorithm = mlx5 | paper  (default mlx5: ConnectX's variant)
 *              rpg_time_reset, rpg_byte_reset, rpg_threshold, rpg_max_rate,
 *              rpg_ai_rate, rpg_hai_rate, rpg_gd, rpg_min_dec_fac,
 *              rpg_min_rate, rate_to_set_on_first_cnp, dce_tcp_g,
 *              dce_tcp_rtt, rate_reduce_monitor_period, initial_alpha_value,
 *              clamp_tgt_rate, clamp_tgt_rate_after_time_inc (the reaction
 *              point's parameters; each defaults to the algorithm's value)
 *
 * Comments start with '#' or ';' and run to the end of the line.
 * Ports are numbered port0, port1, ... without gaps.
 */
#ifndef DROCE_CONFIG_H
#define DROCE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

/* 32 at most: port sets are 32-bit masks (loopback's loop_peers) */
#define DROCE_MAX_PORTS 32
#define DROCE_MAX_GIDS 8
#define DROCE_MAX_ENGINES 64
#define DROCE_FALLBACK_US_DEFAULT 50u
#define DROCE_FALLBACK_US_MAX 1000000u
#define DROCE_WAIT_SPIN_US_DEFAULT 200u
#define DROCE_WAIT_SPIN_US_MAX 100000u
#define DROCE_MAX_EAL_ARGS 64
#define DROCE_MAX_QUEUES 16
#define DROCE_CONFIG_PATH_MAX 256
#define DROCE_CONFIG_NAME_MAX 64

#define DROCE_MTU_MIN 256
#define DROCE_MTU_MAX 9000

enum droce_port_kind {
	DROCE_PORT_KIND_RING,
	DROCE_PORT_KIND_MEMIF,
	DROCE_PORT_KIND_AF_PACKET,
	DROCE_PORT_KIND_AF_XDP,
	DROCE_PORT_KIND_TAP,
	DROCE_PORT_KIND_PCI,
	DROCE_PORT_KIND_SWITCH,
	DROCE_PORT_KIND_COUNT
};

extern const char *const droce_port_kind_name[DROCE_PORT_KIND_COUNT];

enum droce_engine_mode {
	DROCE_ENGINE_MODE_COLOCATED,
	DROCE_ENGINE_MODE_DEDICATED,
};

enum droce_memif_role {
	DROCE_MEMIF_ROLE_SERVER,
	DROCE_MEMIF_ROLE_CLIENT,
};

/* Where a port's impairment applies (bit mask). */
enum droce_impair_dir {
	DROCE_IMPAIR_DIR_RX = 1u << 0,
	DROCE_IMPAIR_DIR_TX = 1u << 1,
	DROCE_IMPAIR_DIR_BOTH = DROCE_IMPAIR_DIR_RX | DROCE_IMPAIR_DIR_TX,
};

#define DROCE_IMPAIR_DELAY_US_MAX 1000000u

/* The impaired link of one port (all zero = a perfect link). */
struct droce_impair_config {
	double drop;       /* probabilities, 0..1 */
	double dup;
	double reorder;
	double delay;      /* share of frames delayed by delay_us */
	double corrupt;
	double ce;         /* mark CE on ECN-capable frames */
	uint32_t delay_us; /* 0..DROCE_IMPAIR_DELAY_US_MAX */
	uint64_t seed;
	unsigned int dir;  /* enum droce_impair_dir bits; 0 counts as TX */
};

struct droce_port_config {
	char name[16];                   /* "port0" */
	enum droce_port_kind kind;
	int peer;                        /* ring: index of the peer port */
	enum droce_memif_role memif_role;
	char memif_socket[108];          /* sun_path size */
	uint32_t memif_id;
	char iface[16];                  /* IFNAMSIZ */
	uint32_t xdp_queue;
	char pci[DROCE_CONFIG_NAME_MAX];
	bool mac_set;
	uint8_t mac[6];
	unsigned int n_gids;
	uint8_t gids[DROCE_MAX_GIDS][16]; /* ipv4 (as ::ffff:a.b.c.d) first, then ipv6 */
	uint16_t mtu;                    /* IP MTU, default 1500 */
	uint16_t rxq, txq;               /* default 1 each */
	uint16_t rxd, txd;               /* descriptors per queue, default 1024 */
	char capture[DROCE_CONFIG_PATH_MAX]; /* "" = off */
	uint16_t vlan;                   /* 0 = untagged */
	struct droce_impair_config impair;
	uint32_t zero_copy;              /* RC payloads of this many bytes or more are sent
					    zero-copy from registered memory when the port
					    has multi-segment transmit; 0 = never */
	uint8_t ecn;                     /* ECN codepoint of sent frames: 2 ECT(0) (default),
					    1 ECT(1), 0 off (Not-ECT) */
	uint8_t tclass;                  /* traffic class of a path that gives 0 */
	uint8_t pcp;                     /* VLAN priority of a path whose SL is 0 */
};

/* [portN] zero_copy's default (bytes): full packets at path MTU 4096.  Below that
 * the three mbufs of a zero-copy frame cost more CPU than copying the payload
 * (docs/performance.md, Zero-copy transmit). */
#define DROCE_ZERO_COPY_DEFAULT 4096

/* [portN] ecn values */
#define DROCE_ECN_NOT_ECT 0u
#define DROCE_ECN_ECT1 1u
#define DROCE_ECN_ECT0 2u
#define DROCE_ECN_CE 3u

/* [dcqcn] algorithm */
enum droce_dcqcn_algo {
	DROCE_DCQCN_MLX5,  /* ConnectX's DCQCN (periodic alpha, coalesced cuts) */
	DROCE_DCQCN_PAPER, /* the SIGCOMM 2015 paper's (a cut per CNP) */
};

/* The reaction point's parameters, ConnectX's names and units (rates Mb/s,
 * times us, alpha and g in 1/1024).  DROCE_DCQCN_UNSET: the algorithm's
 * default (dataplane/dcqcn.h droce_dcqcn_defaults). */
#define DROCE_DCQCN_UNSET UINT32_MAX
#define DROCE_DCQCN_RP_PARAMS(X)                                                    \
	X(rpg_time_reset)  X(rpg_byte_reset) X(rpg_threshold) X(rpg_max_rate)          \
	X(rpg_ai_rate) X(rpg_hai_rate) X(rpg_gd) X(rpg_min_dec_fac) X(rpg_min_rate)    \
	X(rate_to_set_on_first_cnp) X(dce_tcp_g) X(dce_tcp_rtt)                        \
	X(rate_reduce_monitor_period) X(initial_alpha_value) X(clamp_tgt_rate)         \
	X(clamp_tgt_rate_after_time_inc)

struct droce_dcqcn_rp_config {
#define DROCE_DCQCN_FIELD(n) uint32_t n;
	DROCE_DCQCN_RP_PARAMS(DROCE_DCQCN_FIELD)
#undef DROCE_DCQCN_FIELD
};

#define DROCE_CNP_GAP_US_DEFAULT 2u  /* ConnectX-5's min_time_between_cnps */
#define DROCE_CNP_DSCP_DEFAULT 48u
#define DROCE_CNP_PRIO_DEFAULT 6u

struct droce_dcqcn_config {
	/* notification point */
	uint32_t np_enable;
	uint32_t min_time_between_cnps; /* us, per QP */
	uint32_t cnp_dscp;
	uint32_t cnp_802p_prio;
	/* reaction point */
	uint32_t rp_enable;
	enum droce_dcqcn_algo algorithm;
	struct droce_dcqcn_rp_config rp;
};

/* [switch]: the switch model (pmd_glue/switch.c) */
struct droce_switch_config {
	double rate_gbps;      /* every egress queue's line rate */
	uint64_t buffer;       /* shared buffer, bytes */
	uint64_t kmin, kmax;   /* ECN marking thresholds, bytes (kmax 0: no marking) */
	double pmax;           /* marking probability at kmax */
	uint32_t pfc;          /* 1: pause an ingress port holding pfc_xoff bytes */
	uint64_t pfc_xoff, pfc_xon;
	uint64_t seed;
	/* links to other processes (pmd_glue/switch_link.c): memif servers with
	 * ids 0..memif_links-1 on memif_socket, switch ports after the local
	 * ones; another process's memif port (role = client, that socket, id k)
	 * is then a port of this switch */
	char memif_socket[108];  /* sun_path size; "" = no links */
	uint32_t memif_links;
};

#define DROCE_SWITCH_LINKS_MAX 16

#define DROCE_SWITCH_RATE_DEFAULT 10.0
#define DROCE_SWITCH_BUFFER_DEFAULT (1u << 20)

struct droce_config {
	char source[DROCE_CONFIG_PATH_MAX]; /* file path, or "<embedded loopback.ini>" */
	/* [eal] */
	unsigned int n_eal_args;
	char eal_args[DROCE_MAX_EAL_ARGS][DROCE_CONFIG_PATH_MAX];
	/* [engines] */
	enum droce_engine_mode engine_mode;
	unsigned int n_engines;
	uint16_t engine_lcores[DROCE_MAX_ENGINES]; /* dedicated only */
	uint32_t fallback_us;                     /* colocated only, 0 = off */
	uint32_t wait_spin_us;                    /* colocated only, 0 = off */
	uint32_t selective_repeat;                /* 0 or 1 (dataplane/rc_sr.c) */
	uint32_t time_dilation;                   /* droce's clock runs this many times
						     slower than real time (pmd_glue/clock.h) */
	uint32_t clock_stall_us;                  /* a longer gap between its reads counts
						     as this long (0: off) */
	/* [mempool] */
	uint32_t mbufs, mbuf_cache, data_room, capture_mbufs;
	/* [dcqcn] */
	struct droce_dcqcn_config dcqcn;
	/* [switch] */
	struct droce_switch_config sw;
	/* [portN] */
	unsigned int n_ports;
	struct droce_port_config ports[DROCE_MAX_PORTS];
};

/* Text of config/loopback.ini, embedded at build time. */
extern const char droce_config_loopback_ini[];

/*
 * Loads and validates @path.  On error returns -1 with errno set (ENOENT,
 * EINVAL, ...) and a message naming file, section, key and value, which is
 * printed to stderr and kept for droce_last_error().
 */
int droce_config_load(const char *path, struct droce_config *cfg);

/* Same for INI text in memory; @name stands for the file in messages. */
int droce_config_load_text(const char *name, const char *text, struct droce_config *cfg);

/* The embedded loopback configuration. */
int droce_config_load_default(struct droce_config *cfg);

/* Applies a command-line override "portN=path" to the capture key. */
int droce_config_set_capture(struct droce_config *cfg, const char *spec);

/*
 * Applies a command-line impairment "key=value[,key=value...]" to every port
 * (keys as in [portN] without the impair_ prefix: drop, dup, reorder, delay,
 * delay_us, corrupt, ce, seed, dir), or to one with a "portN:" prefix.  Values are
 * checked like the config keys.
 */
int droce_config_set_impair(struct droce_config *cfg, const char *spec);

/* Checks @c; 0, or -1 with errno = EINVAL and a message naming the field. */
int droce_impair_config_check(const struct droce_impair_config *c);

/* True when @c impairs anything. */
bool droce_impair_config_active(const struct droce_impair_config *c);

/* The last error message of the config or runtime layer ("" if none). */
const char *droce_last_error(void);

#endif /* DROCE_CONFIG_H */
