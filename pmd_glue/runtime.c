/* SPDX-License-Identifier: BSD-3-Clause
 * droce runtime: EAL start from the configuration, mempools, ports.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <droce/droce.h>

#include "clock.h"
#include "internal.h"
#include "port_internal.h"
#include "residue.h"
#include "stats_internal.h"

struct droce_clock droce_clock = { .plain = true }; /* clock.h */

uint64_t
droce_clock_shaped(uint64_t t)
{
	if (droce_clock.cap != 0) {
		uint64_t last = __atomic_load_n(&droce_clock.last, __ATOMIC_RELAXED);

		/* whoever sees the gap first excuses it; a read racing it may
		 * be ahead by one gap's excuse (no engine time goes backwards
		 * by more than clock_stall_us within a pass) */
		while (t > last) {
			if (__atomic_compare_exchange_n(&droce_clock.last, &last, t, false,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				if (t - last > droce_clock.cap)
					__atomic_add_fetch(&droce_clock.skipped, t - last - droce_clock.cap,
							   __ATOMIC_RELAXED);
				break;
			}
		}
		t -= __atomic_load_n(&droce_clock.skipped, __ATOMIC_RELAXED);
	}
	if (droce_clock.div > 1)
		t = droce_clock.tsc0 + (t - droce_clock.tsc0) / droce_clock.div;
	return t;
}

enum eal_state {
	EAL_NONE,
	EAL_READY,
	EAL_FAILED,
	EAL_CLEANED,
};

static struct {
	enum eal_state eal;
	bool running;
	struct droce_config cfg;
	struct rte_mempool *pool;
	char own_prefix[32]; /* the --file-prefix droce added, "" if none */
} rt;

bool
droce_running(void)
{
	return rt.running;
}

const struct droce_config *
droce_get_config(void)
{
	return rt.running ? &rt.cfg : NULL;
}

struct rte_mempool *
droce_pktmbuf_pool(void)
{
	return rt.pool;
}

static bool
has_arg(const struct droce_config *cfg, const char *opt)
{
	size_t n = strlen(opt);
	unsigned int i;

	for (i = 0; i < cfg->n_eal_args; i++)
		if (strncmp(cfg->eal_args[i], opt, n) == 0 &&
		    (cfg->eal_args[i][n] == '\0' || cfg->eal_args[i][n] == '='))
			return true;
	return false;
}

/* The value of option @opt in the [eal] args ("--opt=v" or "--opt v"), or NULL. */
static const char *
arg_value(const struct droce_config *cfg, const char *opt)
{
	size_t n = strlen(opt);
	unsigned int i;

	for (i = 0; i < cfg->n_eal_args; i++) {
		if (strncmp(cfg->eal_args[i], opt, n) != 0)
			continue;
		if (cfg->eal_args[i][n] == '=')
			return cfg->eal_args[i] + n + 1;
		if (cfg->eal_args[i][n] == '\0' && i + 1 < cfg->n_eal_args)
			return cfg->eal_args[i + 1];
	}
	return NULL;
}

/* The [eal] args choose the lcores (-l, -c, --lcores, --main-lcore). */
static bool
selects_cores(const struct droce_config *cfg)
{
	for (unsigned int i = 0; i < cfg->n_eal_args; i++) {
		const char *a = cfg->eal_args[i];

		if ((a[0] == '-' && (a[1] == 'l' || a[1] == 'c')) ||
		    strncmp(a, "--lcores", 8) == 0 || strncmp(a, "--main-lcore", 12) == 0)
			return true;
	}
	return false;
}

static int
eal_start(const struct droce_config *cfg)
{
	cpu_set_t before;
	bool restore;

	char *argv[DROCE_MAX_EAL_ARGS + 4];
	char prefix[64];
	char joined[1024];
	char run_dir[PATH_MAX];
	const char *pfx;
	bool claim;
	size_t off = 0;
	int argc = 0, rc;
	unsigned int i;

	switch (rt.eal) {
	case EAL_READY:
		PMD_LOG(DEBUG, "EAL already initialised; [eal] args of %s not applied", cfg->source);
		return 0;
	case EAL_FAILED:
		return droce_err_set(EALREADY, "%s: EAL initialisation failed earlier in this process; it cannot be retried",
				     cfg->source);
	case EAL_CLEANED:
		return droce_err_set(EALREADY, "%s: EAL was shut down (droce_shutdown); it cannot start again in this process",
				     cfg->source);
	default:
		break;
	}
	if (has_arg(cfg, "--in-memory") && has_arg(cfg, "--no-huge"))
		return droce_err_set(EINVAL, "%s: [eal] args: --in-memory cannot be combined with --no-huge on DPDK 22.11; use --file-prefix or --no-shconf",
				     cfg->source);

	argv[argc++] = (char *)"droce";
	for (i = 0; i < cfg->n_eal_args; i++)
		argv[argc++] = (char *)cfg->eal_args[i];
	pfx = arg_value(cfg, "--file-prefix");
	if (pfx == NULL) {
		snprintf(rt.own_prefix, sizeof(rt.own_prefix), "droce%ld", (long)getpid());
		snprintf(prefix, sizeof(prefix), "--file-prefix=%s", rt.own_prefix);
		argv[argc++] = prefix;
		pfx = rt.own_prefix;
	}
	/*
	 * Nothing of the EAL outlives the process (issue 28): without shared
	 * config files (--no-shconf; --in-memory with hugepages, which also
	 * unlinks the hugepage files) the runtime directory holds only the
	 * telemetry sockets, and droce claims it (residue.c) to remove it at
	 * exit.  A config asking for DPDK multi-process (--proc-type) keeps
	 * DPDK's files, and its directory is left to DPDK.
	 */
	claim = !has_arg(cfg, "--proc-type");
	if (claim && !has_arg(cfg, "--no-shconf") && !has_arg(cfg, "--in-memory"))
		argv[argc++] = (char *)(has_arg(cfg, "--no-huge") ? "--no-shconf" : "--in-memory");
	argv[argc] = NULL;
	if (claim && !droce_residue_runtime_dir(pfx, run_dir, sizeof(run_dir)))
		return droce_err_set(ENAMETOOLONG, "%s: [eal] args: --file-prefix %s: runtime directory path too long",
				     cfg->source, pfx);
	if (claim && droce_residue_claim(run_dir) != 0)
		return -1;
	for (i = 0; i < (unsigned int)argc && off < sizeof(joined); i++)
		off += (size_t)snprintf(joined + off, sizeof(joined) - off, "%s%s", i ? " " : "",
					argv[i]);

	/*
	 * The EAL pins the calling thread to its main lcore (CPU 0 unless the
	 * args choose).  A co-located engine runs in that thread, so two droce
	 * processes started without core options would share CPU 0 and take
	 * turns by the scheduler's time slice (milliseconds of latency).  Unless
	 * the config chose cores, the thread keeps the CPUs it had.
	 */
	restore = !selects_cores(cfg) &&
		  pthread_getaffinity_np(pthread_self(), sizeof(before), &before) == 0;
	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		int e = rte_errno;

		droce_residue_release(); /* the directory is not droce's */
		if (e == EALREADY) {
			/* Someone else (the application) started the EAL: use it. */
			rt.eal = EAL_READY;
			PMD_LOG(INFO, "EAL was initialised by the application; using it");
			return 0;
		}
		rt.eal = EAL_FAILED;
		return droce_err_set(e ? e : EINVAL, "%s: [eal] args: EAL initialisation failed (%s): %s",
				     cfg->source, rte_strerror(e), joined);
	}
	rt.eal = EAL_READY;
	if (claim && strcmp(rte_eal_get_runtime_dir(), run_dir) != 0)
		PMD_LOG(WARNING, "the EAL chose runtime directory %s, not %s: it stays after exit",
			rte_eal_get_runtime_dir(), run_dir);
	if (restore && pthread_setaffinity_np(pthread_self(), sizeof(before), &before) != 0)
		PMD_LOG(WARNING, "could not restore the thread's CPU affinity after EAL init");
	PMD_LOG(DEBUG, "EAL up: %s", joined);
	return 0;
}

static int
check_engines(const struct droce_config *cfg)
{
	unsigned int i;

	if (cfg->engine_mode != DROCE_ENGINE_MODE_DEDICATED)
		return 0;
	for (i = 0; i < cfg->n_engines; i++) {
		unsigned int lc = cfg->engine_lcores[i];

		if (!rte_lcore_is_enabled(lc))
			return droce_err_set(EINVAL, "%s: [engines] lcores: lcore %u is not enabled by [eal] args (add it to -l)",
					     cfg->source, lc);
		if (lc == rte_get_main_lcore())
			return droce_err_set(EINVAL, "%s: [engines] lcores: lcore %u is the main lcore; dedicated engines need worker lcores",
					     cfg->source, lc);
	}
	return 0;
}

int
droce_start_config(const struct droce_config *cfg)
{
	unsigned int pool_need = 0, i;

	if (rt.running)
		return droce_err_set(EALREADY, "droce is already running (from %s)", rt.cfg.source);
	droce_err_clear();
	if (&rt.cfg != cfg)
		rt.cfg = *cfg;
	cfg = &rt.cfg;
	if (eal_start(cfg) < 0)
		return -1;
	if (check_engines(cfg) < 0)
		return -1;

	for (i = 0; i < cfg->n_ports; i++)
		pool_need += (unsigned int)cfg->ports[i].rxq * cfg->ports[i].rxd;
	if (pool_need >= cfg->mbufs) {
		char v[16];

		snprintf(v, sizeof(v), "%u", cfg->mbufs);
		return droce_err_set(EINVAL, "%s: [mempool] mbufs = %s: the receive rings alone hold %u mbufs; raise mbufs or lower rxd",
				     cfg->source, v, pool_need);
	}
	rt.pool = rte_pktmbuf_pool_create("droce_pkt", cfg->mbufs, cfg->mbuf_cache, 0,
					  (uint16_t)cfg->data_room, SOCKET_ID_ANY);
	if (rt.pool == NULL)
		return droce_err_set(rte_errno, "%s: [mempool]: cannot create %u mbufs of %u bytes: %s (with --no-huge, raise -m)",
				     cfg->source, cfg->mbufs, cfg->data_room, rte_strerror(rte_errno));
	droce_clock.tsc0 = rte_rdtsc();
	droce_clock.div = cfg->time_dilation;
	droce_clock.cap = rte_get_tsc_hz() / 1000000 * cfg->clock_stall_us;
	droce_clock.last = droce_clock.tsc0;
	droce_clock.skipped = 0;
	droce_clock.plain = droce_clock.div <= 1 && droce_clock.cap == 0;
	if (droce_ports_create(cfg, rt.pool) < 0) {
		int e = errno;

		rte_mempool_free(rt.pool);
		rt.pool = NULL;
		errno = e;
		return -1;
	}
	rt.running = true;
	return 0;
}

int
droce_start(const char *config_path)
{
	struct droce_config *cfg;
	int rc;

	if (rt.running)
		return droce_err_set(EALREADY, "droce is already running (from %s)", rt.cfg.source);
	if (config_path == NULL) {
		config_path = getenv("DROCE_CONFIG");
		if (config_path != NULL && config_path[0] == '\0')
			config_path = NULL;
	}
	/* Load into a scratch copy so a bad file leaves nothing half set. */
	cfg = malloc(sizeof(*cfg));
	if (cfg == NULL)
		return droce_err_set(ENOMEM, "out of memory");
	rc = config_path != NULL ? droce_config_load(config_path, cfg)
				 : droce_config_load_default(cfg);
	if (rc == 0)
		rc = droce_start_config(cfg);
	free(cfg);
	return rc;
}

/* ---- the EAL interrupt thread ---- */

#define INTR_WAIT_S 5

struct intr_call {
	void (*fn)(void *);
	void *arg;
	int done;
};

static bool intr_parked; /* the interrupt thread sleeps in park_cb for good */

static void
intr_call_cb(void *arg)
{
	struct intr_call *c = arg;

	c->fn(c->arg);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

/*
 * Sets an alarm running intr_call_cb(@c) and waits for it.  False when the
 * interrupt thread did not run it (then it never will).
 */
static bool
intr_call_wait(struct intr_call *c)
{
	uint64_t deadline;

	if (rt.eal != EAL_READY || intr_parked || rte_thread_is_intr() ||
	    rte_eal_alarm_set(1, intr_call_cb, c) != 0)
		return false;
	deadline = rte_get_tsc_cycles() + INTR_WAIT_S * rte_get_tsc_hz();
	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		if (rte_get_tsc_cycles() > deadline) {
			/* Returns 0 only after a callback already running returned. */
			if (rte_eal_alarm_cancel(intr_call_cb, c) > 0) {
				PMD_LOG(WARNING, "the EAL interrupt thread did not run droce's call in %d s",
					INTR_WAIT_S);
				return false;
			}
			break;
		}
		rte_delay_us_sleep(100);
	}
	return true;
}

void
droce_call_in_intr_thread(void (*fn)(void *), void *arg)
{
	struct intr_call c = { .fn = fn, .arg = arg, .done = 0 };

	if (!intr_call_wait(&c))
		fn(arg);
}

static void
park_cb(void *arg __rte_unused)
{
	__atomic_store_n(&intr_parked, true, __ATOMIC_RELEASE);
	for (;;)
		pause();
}

/*
 * Works around DPDK 22.11's rte_eal_cleanup(), which unmaps the DPDK memory
 * but leaves the EAL interrupt thread running.  Whenever that thread wakes
 * (rte_eal_cleanup() itself wakes it when it unregisters the alarm timer) it
 * walks its interrupt sources, whose handles live in that memory (the memif
 * listener's stays registered after the device is closed), and can die of
 * SIGSEGV in rte_intr_fd_get() once the memory is gone.  Before cleanup,
 * droce makes the interrupt thread run a callback that never returns, so it
 * touches nothing any more; EAL cannot start again in this process anyway.
 * The callback belongs to an event fd of droce's own, with a handle in
 * process memory: rte_eal_cleanup() waits for a running alarm callback, so
 * an alarm cannot park the thread.
 */
static void
park_intr_thread(void)
{
	struct rte_intr_handle *ih;
	uint64_t deadline, one = 1;
	int fd;

	if (rt.eal != EAL_READY || intr_parked || rte_thread_is_intr())
		return;
	ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ih == NULL || fd < 0 || rte_intr_fd_set(ih, fd) != 0 ||
	    rte_intr_type_set(ih, RTE_INTR_HANDLE_EXT) != 0 ||
	    rte_intr_callback_register(ih, park_cb, NULL) != 0) {
		PMD_LOG(WARNING, "cannot stop the EAL interrupt thread before EAL cleanup");
		if (fd >= 0)
			close(fd);
		rte_intr_instance_free(ih);
		return;
	}
	/* The handle and the fd stay: the thread keeps running park_cb. */
	if (write(fd, &one, sizeof(one)) != sizeof(one))
		PMD_LOG(WARNING, "cannot wake the EAL interrupt thread: %s", strerror(errno));
	deadline = rte_get_tsc_cycles() + INTR_WAIT_S * rte_get_tsc_hz();
	while (!__atomic_load_n(&intr_parked, __ATOMIC_ACQUIRE)) {
		if (rte_get_tsc_cycles() > deadline) {
			PMD_LOG(WARNING, "the EAL interrupt thread did not stop in %d s", INTR_WAIT_S);
			return;
		}
		rte_delay_us_sleep(100);
	}
}

static void (*_Atomic stop_first)(void); /* droce_runtime_set_stop_first */

void
droce_runtime_set_stop_first(void (*fn)(void))
{
	atomic_store(&stop_first, fn);
}

void
droce_stop(void)
{
	void (*first)(void) = atomic_load(&stop_first);

	if (!rt.running)
		return;
	if (first != NULL)
		first(); /* the engines stop before their ports go */
	droce_runtime_lock_excl(); /* counter readers (telemetry) are out */
	droce_ports_destroy();
	rte_mempool_free(rt.pool);
	rt.pool = NULL;
	rt.running = false;
	droce_runtime_unlock_excl();
}

void
droce_shutdown(void)
{
	droce_stop();
	if (rt.eal == EAL_READY) {
		park_intr_thread();
		rte_eal_cleanup();
		rt.eal = EAL_CLEANED;
		droce_residue_release();
	}
}
