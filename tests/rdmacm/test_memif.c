/* SPDX-License-Identifier: BSD-3-Clause
 * rdma_cm across two processes joined by memif: the test forks; the child
 * is the seed pages' client (memif client, 198.18.0.2), the test process
 * the server (memif server, 198.18.0.1).  Each starts its own droce runtime
 * lazily from DROCE_CONFIG after the fork, as an unmodified program would.
 * Socket and config paths carry the pid.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "pmd_glue/port.h"
#include "common.h"
#include "proc.h"
#include "seed.h"

static char sock_path[64], ini[2][64];

/* Waits (bounded) until port0's link is up: the memif peers have met. */
static int
link_wait(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct timespec ts = { 0, 10 * 1000000L };

	if (l == NULL)
		return -1;
	ibv_free_device_list(l);
	for (int i = 0; i < 1000; i++) {
		if (droce_port_link_up(droce_port_get(0)))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void
cleanup(void)
{
	unlink(ini[0]);
	unlink(ini[1]);
	unlink(sock_path);
}

TestSuite(rdmacm_memif, .fini = rcm_fini, .timeout = 90);

Test(rdmacm_memif, seed_pages_across_processes)
{
	pid_t child;
	int st, rc;
	/* posted by the server once it listens: the child's link comes up
	 * before that, and a REQ before the listen is rejected (seen at load 4:
	 * ECONNREFUSED, then the server waited for a REQ that never came) */
	sem_t *ready = mmap(NULL, sizeof(*ready), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(ready, MAP_FAILED);
	cr_assert_eq(sem_init(ready, 1, 0), 0);
	snprintf(sock_path, sizeof(sock_path), "/tmp/droce-rcm-%ld.sock", (long)getpid());
	for (unsigned int k = 0; k < 2; k++)
		tc_memif_ini(ini[k], sizeof(ini[k]), "rcm", k, sock_path, 64,
			     "rxd = 512\ntxd = 512\n");
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		struct timespec ts = { 0, 10 * 1000000L };

		/* the server creates the socket when its runtime starts; a memif
		 * client started before that fails to start (bounded wait) */
		for (int i = 0; i < 1000 && access(sock_path, F_OK) != 0; i++)
			nanosleep(&ts, NULL);
		setenv("DROCE_CONFIG", ini[1], 1);
		if (link_wait() != 0)
			_exit(200);
		{
			struct timespec dl;

			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_sec += 60;
			while (sem_timedwait(ready, &dl) != 0)
				if (errno != EINTR)
					_exit(201);
		}
		rc = rcm_seed_client("198.18.0.1", "7471");
		droce_engines_stop();
		droce_stop();
		droce_shutdown();
		_exit(rc ? (rc & 0x7f) | 1 : 0);
	}
	setenv("DROCE_CONFIG", ini[0], 1);
	rc = rcm_seed_server("198.18.0.1", "7471", ready);
	if (rc != 0)
		kill(child, SIGKILL);
	cr_assert_eq(waitpid(child, &st, 0), child);
	sem_destroy(ready);
	munmap(ready, sizeof(*ready));
	cleanup();
	cr_assert_eq(rc, 0, "server failed at seed.c:%d", rc);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client exit %d (see stderr)",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
