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

/* Ports, indexed as in the config (port0 = 0). */
unsigned int droce_port_count(void);
struct droce_port *droce_port_get(unsigned int index);

#endif /* DROCE_DROCE_H */
