/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the fallback thread runs (issue 23 §4).
 *
 * On a machine with more runnable threads than CPUs (the fallback's crowd
 * rule), a program that spins on its memory (perftest's write_lat) keeps its
 * CPU busy while the peer's frames wait for this process's fallback thread.
 * The scheduler puts a thread back where it ran last, and nothing moves a
 * thread that sleeps most of the time: measured on the 2-vCPU machine, a
 * run whose fallback thread shared its application thread's CPU (with the
 * other process's fallback) waited 60-200 µs for each wake-up (that CPU's
 * spinner kept it for its slice) and reported 60-90 µs, one where each CPU
 * held one application thread and the other process's fallback thread
 * 14-22 µs, and the threads never migrated within a run.
 *
 * So, while crowded, the fallback thread leaves the CPU of the application
 * thread that drove an engine last: every PLACE_EVERY_MS it reads that
 * thread's CPU (/proc/self/task/TID/stat) and, when it changed, narrows its
 * own affinity to what it was allowed minus that CPU (never to nothing).
 * The crowd over, it gets its whole set back.  Application threads note
 * their TID at most every PLACE_EVERY_MS (droce_place_note_app, called from
 * their passes: a load and a compare otherwise, nothing without a fallback
 * thread).
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dp.h"
#include "engine_internal.h"

#define PLACE_EVERY_MS 10 /* the TID noted, and its CPU looked at, at most this often */

/* PLACE_EVERY_MS in TSC cycles, set when the fallback thread starts: 0 until
 * then, so without a fallback thread nobody notes a TID nobody reads */
static _Atomic uint64_t every_tsc;
static _Atomic int32_t app_tid;         /* the application thread that drove last (noted) */
static _Atomic uint64_t app_noted_tsc;  /* when it was noted */
static __thread int32_t my_tid;         /* gettid(), once per thread */

static struct {
	cpu_set_t allowed;  /* the fallback thread's own set at its start */
	bool have_allowed;
	_Atomic int avoided; /* the CPU left out now (-1: none); others read it */
	uint64_t looked_tsc;
} place = { .avoided = -1 };

void
droce_place_note_app(uint64_t now_tsc)
{
	uint64_t every = atomic_load_explicit(&every_tsc, memory_order_relaxed);

	if (every == 0 || now_tsc - atomic_load_explicit(&app_noted_tsc, memory_order_relaxed) < every)
		return;
	atomic_store_explicit(&app_noted_tsc, now_tsc, memory_order_relaxed);
	if (my_tid == 0)
		my_tid = (int32_t)gettid();
	atomic_store_explicit(&app_tid, my_tid, memory_order_relaxed);
}

/* The CPU thread @tid of this process last ran on, or -1. */
static int
task_cpu(int32_t tid)
{
	char path[64], b[1024], *p;
	int fd, cpu = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	/* "pid (comm) state ppid ...": the comm may hold spaces and ')'; the
	 * k-th space after the last ')' starts field 2 + k, and field 39 is
	 * the CPU the task ran on last */
	p = strrchr(b, ')');
	for (int k = 0; k < 37 && p != NULL; k++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%d", &cpu) != 1)
		return -1;
	return cpu;
}

void
droce_place_start(void)
{
	place.have_allowed = sched_getaffinity(0, sizeof(place.allowed), &place.allowed) == 0;
	place.avoided = -1;
	place.looked_tsc = 0;
	atomic_store_explicit(&every_tsc, rte_get_tsc_hz() / 1000 * PLACE_EVERY_MS, memory_order_relaxed);
}

void
droce_place_step(bool crowd, uint64_t now_tsc)
{
	cpu_set_t set;
	int32_t tid;
	int cpu;

	if (!place.have_allowed)
		return;
	if (!crowd) {
		if (place.avoided >= 0 && sched_setaffinity(0, sizeof(place.allowed), &place.allowed) == 0)
			place.avoided = -1;
		return;
	}
	if (now_tsc - place.looked_tsc < atomic_load_explicit(&every_tsc, memory_order_relaxed))
		return;
	place.looked_tsc = now_tsc;
	tid = atomic_load_explicit(&app_tid, memory_order_relaxed);
	if (tid == 0)
		return;
	cpu = task_cpu(tid);
	if (cpu < 0 || cpu == place.avoided || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &place.allowed))
		return;
	set = place.allowed;
	CPU_CLR(cpu, &set);
	if (CPU_COUNT(&set) == 0)
		return; /* the program's only CPU: nowhere else to go */
	if (sched_setaffinity(0, sizeof(set), &set) == 0)
		place.avoided = cpu;
}

int
droce_place_avoided(void)
{
	return place.avoided;
}
