/* SPDX-License-Identifier: BSD-3-Clause
 * Two processes joined by memif: the test forks, the child starts droce as
 * memif client, the parent as server (each its own EAL, started after the
 * fork).  Each side sends RoCE frames and checks the other's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "dataplane/wire.h"
#include "pmd_glue/port.h"
#include "clock.h"
#include "proc.h"

#define FRAMES 8

static char socket_path[64], ini_path[2][64];

/* proc.c's memif side (its 4095-mbuf pool, 128 MiB each) with short rings:
 * FRAMES frames need no more (the foundation's -m 64 / 2047 mbufs only
 * made it smaller, nothing here depends on them). */
static void
write_ini(unsigned int side)
{
	tc_memif_ini(ini_path[side], sizeof(ini_path[side]), "memif", side, socket_path, 32,
		     "rxd = 256\ntxd = 256\n");
}

/* One side's whole run; returns a process exit status (0 = all good). */
static int run_side_started(unsigned int side);

static int
run_side(unsigned int side)
{
	int rc;

	if (droce_start(ini_path[side]) < 0) {
		droce_shutdown();
		return 10;
	}
	rc = run_side_started(side);
	droce_shutdown(); /* also removes the EAL runtime directory */
	return rc;
}

static int
run_side_started(unsigned int side)
{
	struct droce_port *p;
	struct droce_hdr_tmpl t;
	struct droce_path path;
	struct rte_mbuf *pkts[FRAMES];
	unsigned int got = 0, i;
	uint64_t deadline;
	uint8_t payload[64];
	int bad = 0;

	p = droce_port_get(0);
	deadline = rte_get_tsc_cycles() + 5 * rte_get_tsc_hz();
	while (!droce_port_link_up(p) && rte_get_tsc_cycles() < deadline)
		rte_delay_us_sleep(10000);
	if (!droce_port_link_cached(p))
		return 11;

	memset(&path, 0, sizeof(path));
	path.src_mac = *droce_port_mac(p);
	path.dst_mac = *droce_port_mac(p);
	path.dst_mac.addr_bytes[5] = (uint8_t)(2 - side); /* the other side's MAC */
	memcpy(path.src_gid, droce_port_gid(p, 0), 16);
	memcpy(path.dst_gid, droce_port_gid(p, 0), 16);
	path.dst_gid[15] = (uint8_t)(2 - side);
	droce_tmpl_init(&t, &path);

	for (i = 0; i < FRAMES; i++) {
		struct droce_pkt_fields f;
		struct rte_mbuf *m = rte_pktmbuf_alloc(droce_pktmbuf_pool());
		size_t len;

		if (m == NULL)
			return 12;
		memset(payload, (int)(side * 16 + i), sizeof(payload));
		memset(&f, 0, sizeof(f));
		f.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY);
		f.pkey = 0xffff;
		f.dqpn = 0x20 + side;
		f.psn = side * 1000 + i;
		len = droce_build_frame(&t, rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m),
					&f, payload, sizeof(payload));
		rte_pktmbuf_append(m, (uint16_t)len);
		/* Right after connecting the peer's rings may not be ready yet. */
		deadline = rte_get_tsc_cycles() + rte_get_tsc_hz();
		while (droce_port_tx_burst(p, 0, &m, 1) != 1) {
			if (rte_get_tsc_cycles() > deadline) {
				rte_pktmbuf_free(m);
				return 13;
			}
			rte_delay_us_sleep(1000);
		}
	}

	deadline = rte_get_tsc_cycles() + 3 * rte_get_tsc_hz();
	while (got < FRAMES && rte_get_tsc_cycles() < deadline) {
		uint16_t n = droce_port_rx_burst(p, 0, pkts, FRAMES);

		for (i = 0; i < n; i++) {
			const uint8_t *fr = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
			struct droce_pkt pkt;
			unsigned int other = 1 - side;

			if (droce_parse_frame(fr, rte_pktmbuf_data_len(pkts[i]), &pkt) != DROCE_DROP_NONE ||
			    droce_bth_psn(droce_pkt_bth(&pkt, fr)) != other * 1000 + got ||
			    droce_bth_qpn(droce_pkt_bth(&pkt, fr)) != 0x20 + other ||
			    pkt.payload_len != sizeof(payload) ||
			    fr[pkt.payload_off] != (uint8_t)(other * 16 + got))
				bad++;
			got++;
			rte_pktmbuf_free(pkts[i]);
		}
	}
	/* Let the peer drain before the link goes away. */
	rte_delay_us_sleep(300000);
	if (got != FRAMES)
		return 14;
	return bad ? 15 : 0;
}

/* A unix socket bound at @path; closed again (a stale file) unless @listen. */
static int
bind_socket(const char *path, bool listening)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	cr_assert(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind %s: %s", path,
		     strerror(errno));
	if (listening) {
		cr_assert_eq(listen(fd, 1), 0);
		return fd;
	}
	close(fd);
	return -1;
}

/* The same file: a freed inode number is often reused at once. */
static bool
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* How a child ended, for messages: "exited with code N" or "killed by signal N (NAME)". */
static void
describe_status(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with code %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(st), strsignal(WTERMSIG(st)),
			 WCOREDUMP(st) ? ", core dumped" : "");
	else
		snprintf(buf, len, "ended with wait status 0x%x", (unsigned int)st);
}

static void
exchange(bool stale, bool client_first)
{
	char client_how[96];
	struct stat old, now;
	unsigned int i;
	pid_t child;
	int st, rc;

	snprintf(socket_path, sizeof(socket_path), "/tmp/droce-memif-%ld.sock", (long)getpid());
	write_ini(0);
	write_ini(1);
	if (stale)
		bind_socket(socket_path, false); /* what a killed server leaves */

	if (stat(socket_path, &old) != 0)
		memset(&old, 0, sizeof(old));

	child = fork();
	cr_assert(child >= 0);
	if (child == 0 && client_first)
		_exit(run_side(1)); /* droce waits for the server's socket */
	if (child == 0) {
		/*
		 * The memif client fails to start unless the server listens, and
		 * a fixed delay is too short on a loaded machine: wait for the
		 * server's socket (a new one where a stale one was).
		 */
		for (i = 0; i < 1000 && !(stat(socket_path, &now) == 0 && S_ISSOCK(now.st_mode) &&
					  !same_file(&now, &old)); i++)
			usleep(10000);
		usleep(20000); /* from bind() to listen() */
		_exit(run_side(1));
	}
	if (client_first)
		usleep(500 * 1000); /* as a server process still starting */
	rc = run_side(0);
	cr_assert_eq(waitpid(child, &st, 0), child);
	unlink(ini_path[0]);
	unlink(ini_path[1]);
	unlink(socket_path);
	/*
	 * How each side failed, on stderr as well (Criterion silences a test's
	 * stderr when it writes TAP, so there the assertion messages carry it).
	 */
	if (rc != 0)
		fprintf(stderr, "memif test: server side failed with exit code %d (%s)\n", rc,
			droce_last_error());
	describe_status(st, client_how, sizeof(client_how));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "memif test: client side (pid %ld) %s\n", (long)child, client_how);
	cr_expect_eq(rc, 0, "server side failed with exit code %d (%s)", rc, droce_last_error());
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client side %s", client_how);
}

Test(memif, two_processes_exchange_frames, .timeout = 30)
{
	exchange(false, false);
}

Test(memif, server_replaces_a_stale_socket, .timeout = 30)
{
	exchange(true, false);
}

/* qperf's server brings droce up for each test as its client does: the
 * memif client starting first waits for the server (it failed at once). */
Test(memif, client_started_before_the_server_waits_for_it, .timeout = 30)
{
	exchange(false, true);
}

/* ... but not for ever: about 5 s, then droce_start fails naming the port. */
Test(memif, client_without_a_server_gives_up, .timeout = 30)
{
	uint64_t t0;
	double s;

	snprintf(socket_path, sizeof(socket_path), "/tmp/droce-memif-%ld.none", (long)getpid());
	write_ini(1);
	t0 = tc_now_ms();
	cr_assert_lt(droce_start(ini_path[1]), 0, "started without a server");
	s = (double)(tc_now_ms() - t0) / 1e3;
	cr_assert_not_null(strstr(droce_last_error(), "cannot start device"), "%s",
			   droce_last_error());
	cr_assert(s >= 4.5 && s < 15.0, "gave up after %.1f s", s);
	droce_shutdown();
	unlink(ini_path[1]);
}

/* droce_start fails with @err and a message naming the socket. */
static void
server_refused(int err, const char *why)
{
	cr_assert_lt(droce_start(ini_path[0]), 0, "started over %s", why);
	cr_assert_eq(errno, err, "errno %d (%s)", errno, droce_last_error());
	cr_assert_not_null(strstr(droce_last_error(), socket_path), "%s", droce_last_error());
	cr_assert_not_null(strstr(droce_last_error(), why), "%s", droce_last_error());
	droce_shutdown();
	unlink(ini_path[0]);
	unlink(socket_path);
}

Test(memif, server_refuses_a_path_that_is_no_socket, .timeout = 30)
{
	FILE *f;

	snprintf(socket_path, sizeof(socket_path), "/tmp/droce-memif-%ld.file", (long)getpid());
	write_ini(0);
	f = fopen(socket_path, "w");
	cr_assert_not_null(f);
	fclose(f);
	server_refused(EEXIST, "is not a socket");
}

Test(memif, server_refuses_a_socket_somebody_listens_on, .timeout = 30)
{
	int fd;

	snprintf(socket_path, sizeof(socket_path), "/tmp/droce-memif-%ld.sock", (long)getpid());
	write_ini(0);
	fd = bind_socket(socket_path, true);
	server_refused(EADDRINUSE, "another memif server is listening");
	close(fd);
}
