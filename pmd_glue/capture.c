/* SPDX-License-Identifier: BSD-3-Clause
 * Per-port pcapng capture with rte_pcapng (DPDK 22.11 API).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pcapng.h>
#include <rte_version.h>

#include "capture.h"
#include "internal.h"

#define CAPTURE_BURST 64

struct droce_capture {
	rte_pcapng_t *pcapng;
	struct rte_mempool *mp;
	uint16_t eth_port;
	uint32_t snaplen;
	uint64_t written;
	uint64_t dropped;
	uint64_t start_ns;
	char path[256];
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * rte_pcapng (22.11) sets its TSC-to-time base lazily, inside the first
 * conversion, from a TSC read taken after the caller's.  The first
 * timestamp is then "before" the base, wraps, and pushes every later one
 * centuries ahead.  Converting a timestamp slightly in the future first sets
 * the base safely; later TSC reads are all after it.
 */
static void
prime_pcapng_clock(struct rte_mempool *mp)
{
	static bool primed;
	struct rte_mbuf *m, *c;

	if (primed)
		return;
	m = rte_pktmbuf_alloc(mp);
	if (m == NULL)
		return;
	if (rte_pktmbuf_append(m, RTE_ETHER_MIN_LEN) != NULL) {
		memset(rte_pktmbuf_mtod(m, void *), 0, RTE_ETHER_MIN_LEN);
		c = rte_pcapng_copy(0, 0, m, mp, UINT32_MAX,
				    rte_get_tsc_cycles() + rte_get_tsc_hz() / 100,
				    RTE_PCAPNG_DIRECTION_UNKNOWN);
		rte_pktmbuf_free(c);
		primed = c != NULL;
	}
	rte_pktmbuf_free(m);
}

struct droce_capture *
droce_capture_open(const char *path, uint16_t eth_port, uint32_t nb_mbufs, uint32_t snaplen)
{
	struct droce_capture *c;
	char name[RTE_MEMPOOL_NAMESIZE];
	int fd;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		droce_err_set(ENOMEM, "capture %s: out of memory", path);
		return NULL;
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->eth_port = eth_port;
	c->snaplen = snaplen;

	snprintf(name, sizeof(name), "droce_cap%u", eth_port);
	c->mp = rte_pktmbuf_pool_create(name, nb_mbufs, 0, 0,
					(uint16_t)rte_pcapng_mbuf_size(snaplen), SOCKET_ID_ANY);
	if (c->mp == NULL) {
		droce_err_set(ENOMEM, "capture %s: cannot create a pool of %u mbufs: %s", path,
			      nb_mbufs, rte_strerror(rte_errno));
		free(c);
		return NULL;
	}

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		droce_err_set(errno, "capture %s: cannot create file: %s", path, strerror(errno));
		rte_mempool_free(c->mp);
		free(c);
		return NULL;
	}
	c->pcapng = rte_pcapng_fdopen(fd, NULL, NULL, "droce " DROCE_VERSION, NULL);
	if (c->pcapng == NULL) {
		droce_err_set(EIO, "capture %s: rte_pcapng_fdopen failed: %s", path,
			      rte_strerror(rte_errno));
		close(fd);
		rte_mempool_free(c->mp);
		free(c);
		return NULL;
	}
	prime_pcapng_clock(c->mp);
	c->start_ns = now_ns();
	PMD_LOG(INFO, "port %u: capturing to %s", eth_port, path);
	return c;
}

/* Writes @n copies (NULLs skipped); frees them all. */
static uint16_t
write_copies(struct droce_capture *c, struct rte_mbuf **copies, uint16_t n)
{
	uint16_t i, k = 0, lost = 0;

	for (i = 0; i < n; i++) {
		if (copies[i] != NULL)
			copies[k++] = copies[i];
		else
			lost++;
	}
	if (k > 0) {
		/* rte_pcapng_write_packets() does not free the copies (22.11). */
		if (rte_pcapng_write_packets(c->pcapng, copies, k) < 0)
			lost += k;
		else
			c->written += k;
		rte_pktmbuf_free_bulk(copies, k);
	}
	c->dropped += lost;
	return lost;
}

static void
copy_burst(struct droce_capture *c, uint16_t queue, struct rte_mbuf *const *pkts, uint16_t n,
	   struct rte_mbuf **copies, enum rte_pcapng_direction dir)
{
	uint64_t tsc = rte_get_tsc_cycles();
	uint16_t i;

	for (i = 0; i < n; i++)
		copies[i] = rte_pcapng_copy(c->eth_port, queue, pkts[i], c->mp, c->snaplen, tsc,
					    dir);
}

uint16_t
droce_capture_rx(struct droce_capture *c, uint16_t queue, struct rte_mbuf *const *pkts, uint16_t n)
{
	struct rte_mbuf *copies[CAPTURE_BURST];
	uint16_t lost = 0;

	while (n > 0) {
		uint16_t k = RTE_MIN(n, (uint16_t)CAPTURE_BURST);

		copy_burst(c, queue, pkts, k, copies, RTE_PCAPNG_DIRECTION_IN);
		lost += write_copies(c, copies, k);
		pkts += k;
		n -= k;
	}
	return lost;
}

uint16_t
droce_capture_tx_copy(struct droce_capture *c, uint16_t queue, struct rte_mbuf *const *pkts,
		      uint16_t n, struct rte_mbuf **copies)
{
	copy_burst(c, queue, pkts, n, copies, RTE_PCAPNG_DIRECTION_OUT);
	return n;
}

uint16_t
droce_capture_tx_commit(struct droce_capture *c, struct rte_mbuf **copies, uint16_t n,
			uint16_t sent)
{
	uint16_t i;

	for (i = sent; i < n; i++)
		rte_pktmbuf_free(copies[i]); /* NULL is fine */
	return write_copies(c, copies, sent);
}

uint64_t
droce_capture_count(const struct droce_capture *c)
{
	return c->written;
}

void
droce_capture_close(struct droce_capture *c)
{
	if (c == NULL)
		return;
	rte_pcapng_write_stats(c->pcapng, c->eth_port, "droce capture end", c->start_ns, now_ns(),
			       c->written + c->dropped, c->dropped);
	rte_pcapng_close(c->pcapng); /* closes the fd */
	rte_mempool_free(c->mp);
	PMD_LOG(INFO, "port %u: capture %s closed, %" PRIu64 " frames, %" PRIu64 " not written",
		c->eth_port, c->path, c->written, c->dropped);
	free(c);
}
