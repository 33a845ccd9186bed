/* SPDX-License-Identifier: BSD-3-Clause
 * droce runtime: start and stop the DPDK side from a configuration.
 */
#ifndef DROCE_DROCE_H
#define DROCE_DROCE_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/config.h>

struct droce_port;
struct rte_mempool;

/*
 * The device identity ibv_query_device reports (and droce-run --view's
 * sysfs).  vendor_id 0x02D0CE: an identifier in the IEEE OUI format from
 * the locally administered space (the first octet's U/L bit set, its I/G bit
 * clear: the AAI quadrant of IEEE 802c), which the IEEE assigns to no
 * organisation.  So droce borrows no company's OUI, and programs (and
 * rdma-core's own tests) that switch on vendor_id, such as Mellanox's
 * 0x02C9 and its part ids for quirks and RoCE v2 bugs, never take droce for
 * another vendor's device.  The part id and hardware version are droce's own
 * numbering (1: the software RoCE v2 device of this tree); fw_ver is
 * DROCE_VERSION (meson's project version).
 */
#define DROCE_VENDOR_ID 0x02d0ceu
#define DROCE_VENDOR_PART_ID 1u
#define DROCE_HW_VER 1u

/*
 * Starts droce from the INI file @config_path; NULL means the file named by
 * the DROCE_CONFIG environment variable, else the embedded loopback config.
 * Initialises the EAL (once per process; a later start after droce_stop()
 * reuses it), creates the mempool and brings every port up.
 * Returns 0, or -1 with errno set and a message (droce_last_error()).
 */
int droce_start(const char *config_path);

/* Same with an already loaded and validated configuration (copied). */
int droce_start_config(const struct droce_config *cfg);

/* Stops and removes the ports, closes captures, frees the mempools. */
void droce_stop(void);

/* Releases the EAL too (after droce_stop); no start is possible after it. */
void droce_shutdown(void);

bool droce_running(void);

/* The configuration droce is running with (NULL when stopped). */
const struct droce_config *droce_get_config(void);

/* The packet mempool all ports receive into and the dataplane builds in. */
struct rte_mempool *droce_pktmbuf_pool(void);

/* Limits of droce's verbs: what ibv_query_device() reports for them, and
 * those it has no field for (inline data). */
#define DROCE_MAX_QP_WR 8192     /* work requests per send or receive queue */
#define DROCE_MAX_INLINE 256     /* IBV_SEND_INLINE bytes per WR */
#define DROCE_MAX_RD_ATOMIC 16   /* READs / atomics outstanding per QP, each way */

/*
 * Co-located engines (the default): one pass of every engine no other thread
 * is driving right now.  ibv_poll_cq, ibv_post_send and droce's blocking calls
 * do this already; a program that waits on something else (a socket, its own
 * flag) and wants its QPs to move meanwhile calls it in its loop.  Any thread;
 * nothing in dedicated mode.
 */
void droce_progress(void);

/* The calling thread is about to block outside droce (a read() on a socket,
 * a condition variable): the fallback progress thread takes the engines over
 * now rather than after [engines] fallback_us. */
void droce_progress_blocking(void);

/* Ports, indexed as in the config (port0 = 0). */
unsigned int droce_port_count(void);
struct droce_port *droce_port_get(unsigned int index);

#endif /* DROCE_DROCE_H */
