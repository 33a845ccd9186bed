/* SPDX-License-Identifier: BSD-3-Clause
 * Per-port pcapng capture (rte_pcapng).
 */
#ifndef DROCE_PMD_GLUE_CAPTURE_H
#define DROCE_PMD_GLUE_CAPTURE_H

#include <stdint.h>

#include <rte_mbuf.h>

struct droce_capture;

/*
 * Opens @path for writing and returns a capture for ethdev @eth_port.  All
 * ethdev ports must exist already (the file gets one interface block per
 * port).  @nb_mbufs sizes the copy pool; @snaplen the largest frame.
 */
struct droce_capture *droce_capture_open(const char *path, uint16_t eth_port,
					 uint32_t nb_mbufs, uint32_t snaplen);

/* Copies and writes @n frames; returns how many could not be written. */
uint16_t droce_capture_rx(struct droce_capture *c, uint16_t queue, struct rte_mbuf *const *pkts,
			  uint16_t n);

/*
 * Transmit side in two steps: copy before rte_eth_tx_burst (the PMD owns the
 * mbufs afterwards), then write the @sent first copies and drop the others.
 */
uint16_t droce_capture_tx_copy(struct droce_capture *c, uint16_t queue,
			       struct rte_mbuf *const *pkts, uint16_t n, struct rte_mbuf **copies);
uint16_t droce_capture_tx_commit(struct droce_capture *c, struct rte_mbuf **copies, uint16_t n,
				 uint16_t sent);

/* Frames written so far. */
uint64_t droce_capture_count(const struct droce_capture *c);

/* Writes the statistics block, closes the file and frees the pool. */
void droce_capture_close(struct droce_capture *c);

#endif /* DROCE_PMD_GLUE_CAPTURE_H */
