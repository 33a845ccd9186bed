/* SPDX-License-Identifier: BSD-3-Clause
 * droce-nvmf: an NVMe over Fabrics RDMA target on droce (issue 26).
 *
 *   droce-nvmf --mem 64M                      one subsystem, one 64 MiB namespace
 *   droce-nvmf -c droce.ini -a 198.18.0.1 -n nqn.2026-11.dev.droce:d1 --file /var/tmp/d1:1G
 *   droce-nvmf -c droce.ini -f nvmf.ini       subsystems from an INI file
 *
 * The droce configuration (-c, else DROCE_CONFIG, else the embedded loopback
 * pair) gives the ports; the target listens with rdma_cm on ADDRESS:4420 and
 * serves the discovery controller and every subsystem.  One thread runs the
 * loop (apps/nvmf/target.h); file namespaces use a worker pool.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <droce/droce.h>

#include "dataplane/dp.h"
#include "nvmf/target.h"

struct nvmf_target nvmf_tgt = { .addr = "0.0.0.0", .port = NVMF_PORT, .workers = 4 };
static volatile sig_atomic_t stop;

uint64_t
nvmf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
nvmf_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("droce-nvmf: ", stdout);
	vfprintf(stdout, fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	va_end(ap);
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(FILE *f, int status)
{
	fprintf(f,
		"usage: droce-nvmf [options]\n"
		"  -c, --config FILE        droce configuration (default: $DROCE_CONFIG, else the embedded loopback)\n"
		"  -a, --address IP         listen address (default 0.0.0.0: every port)\n"
		"  -p, --port N             rdma_cm port (default 4420)\n"
		"  -n, --nqn NQN            start a subsystem; the namespaces that follow belong to it\n"
		"  -m, --mem SIZE           a memory namespace (e.g. 64M)\n"
		"  -F, --file PATH[:SIZE]   a file or block device namespace (created or extended to SIZE)\n"
		"  -b, --block 512|4096     logical block size (default 512)\n"
		"  -f, --ini FILE           subsystems and namespaces from an INI file ([target], [subsystem])\n"
		"  -w, --workers N          file I/O worker threads (default 4)\n"
		"  -t, --time SECONDS       exit after this long (default: until SIGINT or SIGTERM)\n"
		"  -v, --verbose            log connections and controllers (-vv: every command, -vvv: capsules)\n"
		"  -h, --help               this text\n");
	exit(status);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' }, { "address", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },   { "nqn", required_argument, NULL, 'n' },
		{ "mem", required_argument, NULL, 'm' },    { "file", required_argument, NULL, 'F' },
		{ "block", required_argument, NULL, 'b' },  { "ini", required_argument, NULL, 'f' },
		{ "workers", required_argument, NULL, 'w' }, { "time", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },      { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	extern unsigned int nvmf_block_shift;
	const char *droce_cfg = NULL;
	char spec[300];
	double seconds = 0;
	uint64_t end = 0, next_ka = 0;
	unsigned int idle = 0;
	int c;

	while ((c = getopt_long(argc, argv, "c:a:p:n:m:F:b:f:w:t:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': droce_cfg = optarg; break;
		case 'a': snprintf(nvmf_tgt.addr, sizeof(nvmf_tgt.addr), "%s", optarg); break;
		case 'p': nvmf_tgt.port = (uint16_t)atoi(optarg); break;
		case 'n': if (nvmf_add_subsys(optarg)) return 2; break;
		case 'm':
			snprintf(spec, sizeof(spec), "mem:%s", optarg);
			if (nvmf_add_ns(spec))
				return 2;
			break;
		case 'F':
			snprintf(spec, sizeof(spec), "file:%s", optarg);
			if (nvmf_add_ns(spec))
				return 2;
			break;
		case 'b':
			if (strcmp(optarg, "512") && strcmp(optarg, "4096"))
				usage(stderr, 2);
			nvmf_block_shift = strcmp(optarg, "512") == 0 ? 9 : 12;
			break;
		case 'f': if (nvmf_config_ini(optarg)) return 2; break;
		case 'w': nvmf_tgt.workers = (unsigned int)atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'v': nvmf_tgt.verbose++; break;
		case 'h': usage(stdout, 0); break;
		default: usage(stderr, 2);
		}
	}
	if (optind != argc || nvmf_tgt.port == 0 || seconds < 0)
		usage(stderr, 2);
	if (nvmf_tgt.n_subsys == 0 && nvmf_add_ns("mem:64M") != 0)
		return 2;
	if (nvmf_ns_open_all() != 0)
		return 2;
	if (droce_start(droce_cfg) != 0) {
		fprintf(stderr, "droce-nvmf: %s\n", droce_last_error());
		return 2;
	}
	if (nvmf_backend_start(nvmf_tgt.workers ? nvmf_tgt.workers : 1) != 0 ||
	    nvmf_transport_listen() != 0)
		return 2;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	for (unsigned int i = 0; i < nvmf_tgt.n_subsys; i++)
		for (unsigned int n = 0; n < nvmf_tgt.subsys[i].n_ns; n++) {
			const struct nvmf_ns *ns = &nvmf_tgt.subsys[i].ns[n];

			nvmf_log("%s nsid %u: %s%s, %llu blocks of %u bytes", nvmf_tgt.subsys[i].nqn,
				 ns->nsid, ns->kind == NVMF_NS_MEM ? "memory" : "file ", ns->path,
				 (unsigned long long)(ns->size >> ns->lba_shift), 1u << ns->lba_shift);
		}
	nvmf_log("listening on %s:%u", nvmf_tgt.addr, nvmf_tgt.port);
	if (seconds > 0)
		end = nvmf_now_ms() + (uint64_t)(seconds * 1000);
	while (!stop) {
		uint64_t before = nvmf_tgt.cmds;

		nvmf_transport_cm_poll();
		nvmf_transport_poll();
		nvmf_backend_poll();
		droce_progress();
		if (nvmf_tgt.cmds != before) {
			idle = 0;
		} else if (++idle > (nvmf_tgt.queues ? 20000u : 2000u)) {
			/* no command for a while: let the fallback thread drive
			 * the engines and sleep a little (a busy target never does) */
			droce_progress_blocking();
			usleep(200);
		}
		if ((idle & 63) == 0) {
			uint64_t now = nvmf_now_ms();

			if (now >= next_ka) {
				nvmf_ctrl_check_kato();
				next_ka = now + 50;
			}
			if (end && now >= end)
				break;
		}
	}
	nvmf_log("stopping: %llu commands, %llu CM rejects, %llu keep-alive expiries",
		 (unsigned long long)nvmf_tgt.cmds, (unsigned long long)nvmf_tgt.rejects,
		 (unsigned long long)nvmf_tgt.ka_expired);
	nvmf_transport_fini();
	nvmf_backend_stop();
	for (unsigned int i = 0; i < nvmf_tgt.n_subsys; i++)
		for (unsigned int n = 0; n < nvmf_tgt.subsys[i].n_ns; n++) {
			struct nvmf_ns *ns = &nvmf_tgt.subsys[i].ns[n];

			if (ns->kind == NVMF_NS_FILE) {
				(void)fdatasync(ns->fd);
				close(ns->fd);
			} else {
				munmap(ns->mem, ns->size);
			}
		}
	droce_engines_stop();
	droce_stop();
	droce_shutdown();
	return 0;
}
