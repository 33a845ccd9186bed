/* SPDX-License-Identifier: BSD-3-Clause
 * Processes for tests (proc.h).
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>

#include "proc.h"

int
tc_run(const char *cmd, char *out, size_t cap)
{
	size_t n = 0, k;
	FILE *f;
	int st;

	f = popen(cmd, "r");
	cr_assert_not_null(f, "popen %s", cmd);
	while (n + 1 < cap && (k = fread(out + n, 1, cap - 1 - n, f)) != 0)
		n += k;
	out[n] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int
tc_run_prog(const char *var, const char *args, char *out, size_t cap)
{
	const char *exe = getenv(var);
	char cmd[1024];

	cr_assert_not_null(exe, "%s not set (run through meson test)", var);
	snprintf(cmd, sizeof(cmd), "env -u DROCE_CONFIG %s %s 2>&1", exe, args);
	return tc_run(cmd, out, cap);
}

pid_t
tc_spawn(const char *cfg, const char *exe, const char *args, const char *out)
{
	char cmd[1024];
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "exec %s %s >%s 2>&1", exe, args, out);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		if (cfg != NULL)
			setenv("DROCE_CONFIG", cfg, 1);
		else
			unsetenv("DROCE_CONFIG");
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

int
tc_reap(pid_t pid, int timeout_s)
{
	int st;

	for (int i = 0; i < timeout_s * 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* The first @cap - 1 bytes of file @path, NUL-terminated; false if unreadable. */
static bool
slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return true;
}

void
tc_dump(const char *path)
{
	char buf[8192];

	if (slurp(path, buf, sizeof(buf)))
		fprintf(stderr, "---- %s ----\n%s\n", path, buf);
}

bool
tc_contains(const char *path, const char *what)
{
	char buf[16384];

	return slurp(path, buf, sizeof(buf)) && strstr(buf, what) != NULL;
}

void
tc_memif_ini(char *path, size_t n, const char *tag, unsigned int side, const char *sock,
	     unsigned int cache, const char *extra)
{
	FILE *f;

	snprintf(path, n, "/tmp/droce-%s-%ld-%u.ini", tag, (long)getpid(), side);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fprintf(f,
		"[eal]\nargs = --no-huge --no-pci -m 128 --log-level=lib.eal:warning\n"
		"[mempool]\nmbufs = 4095\ncache = %u\n"
		"[port0]\nkind = memif\nrole = %s\nsocket = %s\nid = 0\n"
		"mac = 02:00:c6:12:00:0%u\nipv4 = 198.18.0.%u\n%s",
		cache, side == 0 ? "server" : "client", sock, side + 1, side + 1,
		extra ? extra : "");
	cr_assert_eq(fclose(f), 0, "%s", path);
}

bool
tc_wait_path(const char *path)
{
	for (int i = 0; i < 1000 && access(path, F_OK) != 0; i++)
		usleep(10000);
	return access(path, F_OK) == 0;
}

int
tc_free_tcp_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(fd >= 0, "socket: %m");
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "bind: %m");
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0, "getsockname: %m");
	close(fd);
	return ntohs(sin.sin_port);
}

pid_t
tc_task_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	if (d == NULL)
		return 0;
	while (tid == 0 && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) != NULL) {
			comm[strcspn(comm, "\n")] = '\0';
			if (strcmp(comm, name) == 0)
				tid = (pid_t)atoi(e->d_name);
		}
		fclose(f);
	}
	closedir(d);
	return tid;
}
