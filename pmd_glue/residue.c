/* SPDX-License-Identifier: BSD-3-Clause
 * What a droce process leaves outside itself, and its removal (issue 28).
 *
 * Outside its memory a droce process makes two kinds of things: the EAL
 * runtime directory <run>/dpdk/<file prefix> (runtime.c starts the EAL with
 * --no-shconf, or --in-memory with hugepages, so DPDK puts only its
 * telemetry sockets there: no config, fbarray or mp files, no hugepage
 * files) and the socket files of its memif servers.  droce claims the
 * directory before rte_eal_init(): it creates it with a lock file,
 * droce.lock, which the process holds (flock) for its life and which lists
 * the memif server sockets it bound.  Then:
 *   - exit() and return from main: an atexit handler removes the sockets and
 *     the directory;
 *   - a signal whose action was the default (terminate or core dump): a
 *     handler does the same with async-signal-safe calls, restores the
 *     default action and raises the signal again;
 *   - droce_shutdown(): runtime.c removes them after rte_eal_cleanup();
 *   - SIGKILL, or a crash with a handler of its own: the lock dies with the
 *     process, and the next droce start (any config) removes every runtime
 *     directory whose lock nobody holds, with the memif sockets it lists
 *     that nobody listens on.
 * A child made by fork() inherits the handlers but removes nothing: it
 * does not own them (res.owner is the claiming process's pid).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <droce/config.h>

#include "internal.h"
#include "residue.h"

#define SOCK_PATH_MAX sizeof(((struct sockaddr_un *)NULL)->sun_path)
#define LEGACY_PREFIX "droce"   /* droce's own prefixes, from before lock files */
#define LEGACY_AGE_S 60         /* a directory without lock file nobody changed for this long */
#define CLAIM_WAIT_MS 500       /* a sweeper holds a dead process's lock this long at most */
#define PROBE_GREETING_MS 2000  /* a connected liveness probe waits this long for the greeting */
#define UNIX_FLAG_ACCEPTCON 0x10000 /* /proc/net/unix: a listening socket (__SO_ACCEPTCON) */

struct owned_socket {
	int used; /* read by the signal handler: set last, cleared first */
	dev_t dev;
	ino_t ino;
	char path[SOCK_PATH_MAX];
};

static struct {
	pid_t owner; /* the process that claimed the directory; 0: none */
	int lock_fd;
	bool handlers; /* atexit and signal handlers installed (once per process) */
	char dir[PATH_MAX];
	struct owned_socket socks[DROCE_MAX_PORTS];
} res = { .lock_fd = -1 };

/* The signals whose default action ends the process and that can be caught. */
static const int end_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV,
	SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ,
};

/* What to remove from a runtime directory. */
enum dir_sweep {
	SWEEP_OURS, /* what droce makes there: sockets, the lock file, its temporaries */
	SWEEP_ALL,  /* every file (a directory of droce from before lock files) */
};

bool
droce_residue_runtime_dir(const char *prefix, char *out, size_t n)
{
	const char *run = getenv("RUNTIME_DIRECTORY");
	int len;

	if (run == NULL) {
		if (getuid() == 0)
			run = "/var/run";
		else if ((run = getenv("XDG_RUNTIME_DIR")) == NULL)
			run = "/tmp";
	}
	len = snprintf(out, n, "%s/dpdk/%s", run, prefix);
	return len > 0 && (size_t)len < n;
}

const char *
droce_residue_dir(void)
{
	return res.owner != 0 ? res.dir : "";
}

/*
 * Whether a listening socket of this network namespace is bound to @path
 * (/proc/net/unix, flag __SO_ACCEPTCON): 1 yes, 0 no, -1 the table is not
 * readable.  Connects to nothing.
 */
static int
unix_listener_listed(const char *path)
{
	FILE *f = fopen("/proc/self/net/unix", "re");
	char line[PATH_MAX + 128];
	int found = 0;

	if (f == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) == NULL) { /* the header */
		fclose(f);
		return -1;
	}
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		unsigned int refs, proto, flags, type, state;
		unsigned long inode;
		int off = 0;
		size_t len;

		if (sscanf(line, "%*[0-9a-fA-F]: %x %x %x %x %x %lu %n", &refs, &proto, &flags, &type,
			   &state, &inode, &off) < 6 || off == 0)
			continue;
		len = strcspn(line + off, "\n");
		found = (flags & UNIX_FLAG_ACCEPTCON) && len == strlen(path) &&
			memcmp(line + off, path, len) == 0;
	}
	fclose(f);
	return found;
}

int
droce_unix_socket_live(const char *path)
{
	static const int types[] = { SOCK_SEQPACKET, SOCK_STREAM, SOCK_DGRAM };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	struct stat st;
	unsigned int i;

	if (len >= sizeof(sa.sun_path) || stat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return -1;
	/*
	 * A listener of this namespace is in /proc/net/unix.  A connection
	 * that is closed at once is worse than useless to a memif server:
	 * DPDK 22.11's memif_listener_handler(), when the HELLO it sends on
	 * an accepted connection fails (EPIPE: the probe is gone), closes the
	 * fd and frees its interrupt handle without unregistering the
	 * callback, and the EAL interrupt thread then panics ("Error adding
	 * fd N epoll_ctl, Bad file descriptor") and aborts the server.
	 */
	if (unix_listener_listed(path) == 1)
		return 1;
	memcpy(sa.sun_path, path, len + 1);
	for (i = 0; i < RTE_DIM(types); i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		int rc, e;

		if (fd < 0)
			return -1;
		rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		e = errno;
		if (rc == 0 && types[i] != SOCK_DGRAM) {
			/* a listener of another namespace: let a server that
			 * greets (memif, DPDK telemetry) greet before closing */
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			char greeting[256];

			if (poll(&pfd, 1, PROBE_GREETING_MS) == 1 && (pfd.revents & POLLIN))
				(void)!recv(fd, greeting, sizeof(greeting), MSG_DONTWAIT);
		}
		close(fd);
		if (rc == 0)
			return 1;
		if (e == ECONNREFUSED)
			return 0;
		if (e != EPROTOTYPE)
			return -1;
	}
	return -1;
}

int
droce_memif_socket_prepare(const char *who, const char *path)
{
	struct stat st;
	int live;

	if (stat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return droce_err_set(EEXIST, "%s = %s: exists and is not a socket", who, path);
	live = droce_unix_socket_live(path); /* -1 for a too long path: the PMD reports it */
	if (live == 1)
		return droce_err_set(EADDRINUSE, "%s = %s: another memif server is listening on it",
				     who, path);
	if (live == 0 && unlink(path) == 0)
		PMD_LOG(NOTICE, "%s: removed stale memif socket %s", who, path);
	return 0;
}

/* ---- removing a directory's entries: async-signal-safe ---- */

struct dirent64_raw {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static bool
is_ours(const char *name, unsigned char type)
{
	return type == DT_SOCK || strncmp(name, DROCE_RESIDUE_LOCK, strlen(DROCE_RESIDUE_LOCK)) == 0;
}

/*
 * Unlinks the entries of directory @dfd that @how selects, never
 * subdirectories; getdents64 and unlinkat only (no allocation), so the
 * signal handler can call it.  Returns how many entries were left.
 */
static unsigned int
remove_entries(int dfd, enum dir_sweep how)
{
	char buf[2048] __attribute__((aligned(8)));
	unsigned int left = 0;
	int pass;

	/* Unlinking while reading may hide entries: read again until clean. */
	for (pass = 0; pass < 4; pass++) {
		unsigned int removed = 0;
		long n;

		left = 0;
		if (lseek(dfd, 0, SEEK_SET) != 0)
			return 1;
		while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
			long off = 0;

			while (off < n) {
				struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
				unsigned char type = d->d_type;
				struct stat st;

				off += d->d_reclen;
				if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
					continue;
				if (type == DT_UNKNOWN) {
					if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
						continue;
					type = S_ISDIR(st.st_mode) ? DT_DIR
					       : S_ISSOCK(st.st_mode) ? DT_SOCK : DT_REG;
				}
				if (type == DT_DIR || (how == SWEEP_OURS && !is_ours(d->d_name, type))) {
					left++;
					continue;
				}
				if (unlinkat(dfd, d->d_name, 0) == 0)
					removed++;
				else
					left++;
			}
		}
		if (removed == 0)
			break;
	}
	return left;
}

/* Removes what this process made: its memif sockets, its directory. */
static void
remove_own(void)
{
	unsigned int i;
	struct stat st;
	int dfd;

	if (res.owner == 0 || getpid() != res.owner)
		return;
	for (i = 0; i < RTE_DIM(res.socks); i++) {
		struct owned_socket *s = &res.socks[i];

		if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE))
			continue;
		/* The same file: a later server may have replaced it. */
		if (stat(s->path, &st) == 0 && st.st_ino == s->ino && st.st_dev == s->dev)
			unlink(s->path);
	}
	dfd = open(res.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		remove_entries(dfd, SWEEP_OURS);
		close(dfd);
	}
	rmdir(res.dir);
}

static void
at_exit(void)
{
	remove_own();
}

static void
on_signal(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int e = errno;

	remove_own();
	sigaction(sig, &dfl, NULL);
	errno = e;
	raise(sig); /* delivered with the default action once this returns */
}

static void
install_handlers(void)
{
	unsigned int i;

	if (res.handlers)
		return;
	res.handlers = true;
	if (atexit(at_exit) != 0)
		PMD_LOG(WARNING, "cannot register the exit handler: the runtime directory stays after exit");
	for (i = 0; i < RTE_DIM(end_signals); i++) {
		/* SA_RESTART: it ends the process, so whether a call it
		 * interrupted would go on never shows, and a wait that asks
		 * whether a handler interrupts calls (verbs_api/cq.c) is told no */
		struct sigaction old, sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

		/* Only where nobody chose an action: the application's stays. */
		if (sigaction(end_signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
		    old.sa_handler != SIG_DFL)
			continue;
		sigemptyset(&sa.sa_mask);
		sigaction(end_signals[i], &sa, NULL);
	}
}

/* ---- the lock file ---- */

/* Rewrites the lock file: the owner and the memif server sockets. */
static void
write_lock_file(void)
{
	char buf[64 + DROCE_MAX_PORTS * (SOCK_PATH_MAX + 48)];
	size_t len;
	unsigned int i;

	if (res.lock_fd < 0)
		return;
	len = (size_t)snprintf(buf, sizeof(buf), "pid %ld\n", (long)res.owner);
	for (i = 0; i < RTE_DIM(res.socks); i++) {
		const struct owned_socket *s = &res.socks[i];

		if (s->used)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "memif %" PRIu64 " %" PRIu64 " %s\n",
						(uint64_t)s->dev, (uint64_t)s->ino, s->path);
	}
	if (ftruncate(res.lock_fd, 0) != 0 || pwrite(res.lock_fd, buf, len, 0) != (ssize_t)len)
		PMD_LOG(WARNING, "%s/%s: cannot write: %s", res.dir, DROCE_RESIDUE_LOCK,
			strerror(errno));
}

/* Removes the memif sockets a dead process's lock file @fd lists, where
 * they are still the files it bound and nobody listens on them. */
static void
remove_listed_sockets(int fd)
{
	char buf[64 + DROCE_MAX_PORTS * (SOCK_PATH_MAX + 48)];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *line, *save = NULL;

	if (n <= 0)
		return;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		uint64_t dev, ino;
		char path[SOCK_PATH_MAX];
		struct stat st;

		if (sscanf(line, "memif %" SCNu64 " %" SCNu64 " %107s", &dev, &ino, path) != 3)
			continue;
		if (stat(path, &st) != 0 || st.st_dev != dev || st.st_ino != ino ||
		    droce_unix_socket_live(path) != 0)
			continue;
		if (unlink(path) == 0)
			PMD_LOG(INFO, "removed memif socket %s of a droce process that was killed", path);
	}
}

/*
 * The directory @name under @bfd has a lock file: removes the directory
 * when no process holds the lock.  1 removed, 0 in use, -1 could not.
 */
static int
sweep_locked(int bfd, const char *name, pid_t *holder)
{
	char lock[NAME_MAX + sizeof(DROCE_RESIDUE_LOCK) + 2];
	struct stat locked, now;
	char buf[32];
	ssize_t n;
	int fd, dfd, rc = -1;
	long pid = 0;

	snprintf(lock, sizeof(lock), "%s/%s", name, DROCE_RESIDUE_LOCK);
	fd = openat(bfd, lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			sscanf(buf, "pid %ld", &pid);
		}
		if (holder != NULL)
			*holder = (pid_t)pid;
		close(fd);
		return 0;
	}
	/* Still the file we locked: nobody claimed the directory again. */
	if (fstat(fd, &locked) == 0 && fstatat(bfd, lock, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    locked.st_ino == now.st_ino && locked.st_dev == now.st_dev) {
		remove_listed_sockets(fd);
		dfd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd >= 0) {
			remove_entries(dfd, SWEEP_OURS);
			close(dfd);
		}
		rc = unlinkat(bfd, name, AT_REMOVEDIR) == 0 ? 1 : -1;
	}
	close(fd);
	return rc;
}

/* A socket in directory @dfd somebody listens on. */
static bool
has_live_socket(const char *dir, int dfd)
{
	struct dirent *de;
	bool live = false;
	DIR *d;
	int fd = dup(dfd);

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return true;
	}
	rewinddir(d);
	while (!live && (de = readdir(d)) != NULL) {
		char path[PATH_MAX];

		if (de->d_type != DT_SOCK && de->d_type != DT_UNKNOWN)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		live = droce_unix_socket_live(path) == 1;
	}
	closedir(d);
	return live;
}

/*
 * A directory named droce* without lock file (made before droce had lock
 * files): removed when nobody changed it for LEGACY_AGE_S, no process holds
 * the EAL's lock on its config file, and nobody listens on its sockets.
 */
static int
sweep_legacy(const char *base, int bfd, const char *name)
{
	char dir[PATH_MAX];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st;
	int dfd, cfd, rc = 0;

	if (strncmp(name, LEGACY_PREFIX, strlen(LEGACY_PREFIX)) != 0 ||
	    fstatat(bfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_mtime + LEGACY_AGE_S > time(NULL))
		return 0;
	if (snprintf(dir, sizeof(dir), "%s/%s", base, name) >= (int)sizeof(dir))
		return 0;
	dfd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return 0;
	cfd = openat(dfd, "config", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (cfd >= 0) {
		if (fcntl(cfd, F_GETLK, &fl) != 0 || fl.l_type != F_UNLCK)
			rc = -1; /* a primary process holds it */
		close(cfd);
	}
	if (rc == 0 && !has_live_socket(dir, dfd) && remove_entries(dfd, SWEEP_ALL) == 0)
		rc = unlinkat(bfd, name, AT_REMOVEDIR) == 0 ? 1 : 0;
	close(dfd);
	return rc > 0;
}

unsigned int
droce_residue_sweep(const char *base)
{
	unsigned int removed = 0;
	struct dirent *de;
	DIR *d = opendir(base);

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		int r;

		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		r = sweep_locked(dirfd(d), de->d_name, NULL);
		if (r < 0)
			r = sweep_legacy(base, dirfd(d), de->d_name);
		if (r > 0) {
			removed++;
			PMD_LOG(DEBUG, "removed %s/%s, left by a droce process that was killed", base,
				de->d_name);
		}
	}
	closedir(d);
	if (removed > 0)
		PMD_LOG(INFO, "removed %u runtime directories under %s left by droce processes that were killed",
			removed, base);
	return removed;
}

/* ---- claim and release ---- */

/* Creates the lock file in @dir held by this process (a temporary name
 * locked first, then renamed: a sweeper never sees it unlocked). */
static int
make_lock(const char *dir)
{
	char tmp[PATH_MAX], final[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s/%s.%ld", dir, DROCE_RESIDUE_LOCK, (long)getpid()) >=
		    (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/%s", dir, DROCE_RESIDUE_LOCK) >= (int)sizeof(final))
		return droce_err_set(ENAMETOOLONG, "runtime directory %s: path too long", dir);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return droce_err_set(errno, "runtime directory %s: cannot create its lock file: %s",
				     dir, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(tmp, final) != 0) {
		int e = errno;

		unlink(tmp);
		close(fd);
		return droce_err_set(e, "runtime directory %s: cannot lock: %s", dir, strerror(e));
	}
	res.lock_fd = fd;
	return 0;
}

/* mkdir -p of @dir's parent, then @dir; an existing @dir must be stale. */
static int
make_dir(const char *dir)
{
	char parent[PATH_MAX], *slash;
	pid_t holder = 0;
	int waited, bfd, r;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash == NULL || slash == parent)
		return droce_err_set(EINVAL, "runtime directory %s: not an absolute path", dir);
	*slash = '\0';
	/* The parent of <run>/dpdk is the system's (/var/run, $XDG_RUNTIME_DIR, /tmp). */
	if (mkdir(parent, 0700) != 0 && errno != EEXIST)
		return droce_err_set(errno, "cannot create %s: %s", parent, strerror(errno));
	for (waited = 0;; waited += 10) {
		if (mkdir(dir, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return droce_err_set(errno, "cannot create %s: %s", dir, strerror(errno));
		bfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (bfd < 0)
			return droce_err_set(errno, "cannot open %s: %s", parent, strerror(errno));
		r = sweep_locked(bfd, slash + 1, &holder);
		if (r < 0) {
			/* No lock file: what a killed process or another program left.
			 * Keep what is in it; only the EAL's sockets are made again. */
			close(bfd);
			return 0;
		}
		close(bfd);
		if (r == 0 && waited >= CLAIM_WAIT_MS)
			return droce_err_set(EADDRINUSE, "runtime directory %s is used by droce process %ld: give each process its own --file-prefix",
					     dir, (long)holder);
		if (r == 0)
			usleep(10000); /* a sweeper may hold a dead process's lock for a moment */
	}
}

int
droce_residue_claim(const char *dir)
{
	char base[PATH_MAX], *slash;

	if (res.owner == getpid())
		return 0;
	if (snprintf(res.dir, sizeof(res.dir), "%s", dir) >= (int)sizeof(res.dir))
		return droce_err_set(ENAMETOOLONG, "runtime directory %s: path too long", dir);
	if (make_dir(dir) != 0) {
		res.dir[0] = '\0';
		return -1;
	}
	if (make_lock(dir) != 0) {
		rmdir(dir); /* only when empty: made just now */
		res.dir[0] = '\0';
		return -1;
	}
	memset(res.socks, 0, sizeof(res.socks));
	res.owner = getpid();
	write_lock_file();
	install_handlers();
	snprintf(base, sizeof(base), "%s", dir);
	slash = strrchr(base, '/');
	*slash = '\0';
	droce_residue_sweep(base);
	return 0;
}

void
droce_residue_release(void)
{
	if (res.owner == 0 || res.owner != getpid())
		return;
	remove_own();
	if (res.lock_fd >= 0)
		close(res.lock_fd);
	res.lock_fd = -1;
	res.owner = 0;
	res.dir[0] = '\0';
}

void
droce_residue_add_socket(const char *path)
{
	struct stat st;
	unsigned int i;

	if (res.owner == 0 || strlen(path) >= SOCK_PATH_MAX || stat(path, &st) != 0)
		return;
	for (i = 0; i < RTE_DIM(res.socks); i++) {
		struct owned_socket *s = &res.socks[i];

		if (s->used)
			continue;
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		memcpy(s->path, path, strlen(path) + 1);
		__atomic_store_n(&s->used, 1, __ATOMIC_RELEASE);
		write_lock_file();
		return;
	}
}

void
droce_residue_del_socket(const char *path)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(res.socks); i++) {
		struct owned_socket *s = &res.socks[i];

		if (s->used && strcmp(s->path, path) == 0) {
			__atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
			write_lock_file();
			return;
		}
	}
}
