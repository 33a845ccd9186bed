/* SPDX-License-Identifier: BSD-3-Clause
 * droce-view [-v] -- CMD [ARGS...]           (run by `droce-run --view`)
 * droce-view --host-net [-v] -- CMD [ARGS...] (run by plain `droce-run`)
 *
 * Runs CMD with a view of the machine in which droce's devices exist where
 * programs look for RDMA devices outside libibverbs: in private mount (and,
 * when needed, network) namespaces it puts
 *   /sys/class/infiniband/droceN/   node_type, node_guid, sys_image_guid,
 *        fw_ver, hw_rev, hca_type, board_id, node_desc, device/net/NETDEV,
 *        ports/1/{state, phys_state, link_layer, lid, sm_lid, cap_mask,
 *        gids/I, gid_attrs/types/I, gid_attrs/ndevs/I, pkeys/0}
 *   /sys/class/infiniband_verbs/   abi_version, droce_uverbsN/{ibdev, abi_version}
 *   /dev/infiniband/               droce_uverbsN and rdma_cm (links to /dev/null:
 *        what exists there is what UCX and others check; droce's libraries never
 *        open them)
 * with the values droce's ibv_query_device / ibv_query_port / ibv_query_gid
 * report, from the same config (DROCE_CONFIG, else the embedded loopback
 * config; read, not started: no EAL, no port is opened here).
 *
 * NETDEV: an af_packet, af_xdp or tap port's `iface`.  Ports with no kernel
 * interface (ring, memif, pci) get a veth interface named after the port
 * ("port0", its peer "port0-p") with the port's MAC and addresses, in a network namespace of
 * CMD's own (with its loopback up), so `ip addr show port0` answers what
 * droce's GID table says; sysfs is mounted again there so /sys/class/net
 * shows that namespace.  A config that mixes both kinds keeps the machine's
 * network namespace (the kernel ports need it) and its ring / memif / pci
 * ports get no netdev.
 *
 * Root is not needed where the kernel allows unprivileged user namespaces:
 * then the namespaces are created in a user namespace whose root is the
 * caller (uid 0 there maps to the caller's uid, nothing else), and CMD runs
 * as that root: privileged inside the namespaces only.  When
 * no namespace can be made droce-view says so and exits 126; nothing is
 * changed outside the namespaces (the scratch directory it mounts on is
 * removed before CMD starts).
 *
 * --host-net (plain droce-run's): the same sysfs and /dev entries in a
 * private mount namespace only: CMD keeps the machine's network namespace
 * (two droce processes still reach each other's TCP ports, as UCX's and
 * MPI's bootstraps need), so ring / memif / pci ports get no netdev.  This
 * is what UCX needs to use droce's devices: it skips an IB device whose
 * /dev/infiniband/<dev_name> is not a character device it may read and
 * write, and takes a RoCE GID for RoCE v1 unless sysfs's
 * ports/N/gid_attrs/types/I says "RoCE v2".  Not root: in a user namespace
 * that maps the caller's uid and gid to themselves, so CMD runs as the
 * caller, with no capability (they end at its exec).  When the entries are
 * there already (an outer view), or no namespace can be made, CMD runs as
 * it is, silently (-v says why): plain droce-run never fails for want of
 * the view.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <droce/config.h>
#include <droce/droce.h>

static bool verbose;
/* --host-net: what runs instead of failing (CMD, without the view) */
static char **fallback;
/* the scratch directory while it exists (removed when --host-net falls back) */
static const char *scratch_made;

static void
say(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	fputs("droce-view: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
die(const char *fmt, ...)
{
	va_list ap;

	/* --host-net is silent (-v says why), as plain droce-run was before it */
	if (fallback == NULL || verbose) {
		fputs("droce-view: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	if (fallback != NULL) {
		if (scratch_made != NULL) {
			umount2(scratch_made, MNT_DETACH);
			rmdir(scratch_made);
		}
		say("running %s without /dev/infiniband/droce_uverbs*", fallback[0]);
		execvp(fallback[0], fallback);
		fprintf(stderr, "droce-view: %s: %s\n", fallback[0], strerror(errno));
		exit(127);
	}
	exit(126);
}

/* mkdir -p of @fmt's path */
static void
mkpath(const char *fmt, ...)
{
	char p[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			die("mkdir %s: %s", p, strerror(errno));
		*s = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", p, strerror(errno));
}

/* writes @val and a newline to the file @dir/@name (directories made) */
static void
put(const char *dir, const char *name, const char *fmt, ...)
{
	char p[PATH_MAX], *slash;
	va_list ap;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	slash = strrchr(p, '/');
	*slash = '\0';
	mkpath("%s", p);
	*slash = '/';
	f = fopen(p, "w");
	if (f == NULL)
		die("write %s: %s", p, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static void
link_to(const char *target, const char *fmt, ...)
{
	char p[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	if (symlink(target, p) < 0)
		die("symlink %s: %s", p, strerror(errno));
}

static void
do_mount(const char *src, const char *dst, const char *type, unsigned long flags)
{
	if (mount(src, dst, type, flags, NULL) < 0)
		die("mount %s on %s: %s", src ? src : type, dst, strerror(errno));
}

/* runs argv (no shell); dies when it fails */
static void
run(const char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char line[512] = "";

		for (int i = 0; argv[i]; i++) {
			strncat(line, argv[i], sizeof(line) - strlen(line) - 2);
			strcat(line, " ");
		}
		die("'%s' failed", line);
	}
}

static void
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die("write %s: %s", path, strerror(errno));
	close(fd);
}

static bool
kernel_port(const struct droce_port_config *p)
{
	return p->kind == DROCE_PORT_KIND_AF_PACKET || p->kind == DROCE_PORT_KIND_AF_XDP ||
	       p->kind == DROCE_PORT_KIND_TAP;
}

/* the port's MAC: the config's, else the kernel interface's; false if unknown */
static bool
port_mac(const struct droce_port_config *p, uint8_t mac[6])
{
	char path[PATH_MAX];
	unsigned int b[6];
	FILE *f;
	int n;

	if (p->mac_set) {
		memcpy(mac, p->mac, 6);
		return true;
	}
	if (!kernel_port(p))
		return false;
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", p->iface);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	n = fscanf(f, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]);
	fclose(f);
	if (n != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

static void
gid_text(const uint8_t g[16], char *out, size_t len)
{
	snprintf(out, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

/* the tree of device @i under @cls (the new /sys/class) */
static void
write_device(const char *cls, unsigned int i, const struct droce_port_config *p, const char *netdev)
{
	char dev[PATH_MAX], port[PATH_MAX], g[64];
	uint8_t mac[6], guid[8] = { 0 }, zero[16] = { 0 };

	snprintf(dev, sizeof(dev), "%s/infiniband/droce%u", cls, i);
	snprintf(port, sizeof(port), "%s/ports/1", dev);
	if (port_mac(p, mac)) {
		/* EUI-64 from the MAC, as verbs_api/device.c's node GUID */
		guid[0] = mac[0] ^ 0x02;
		guid[1] = mac[1];
		guid[2] = mac[2];
		guid[3] = 0xff;
		guid[4] = 0xfe;
		guid[5] = mac[3];
		guid[6] = mac[4];
		guid[7] = mac[5];
	}
	snprintf(g, sizeof(g), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", guid[0], guid[1], guid[2],
		 guid[3], guid[4], guid[5], guid[6], guid[7]);
	put(dev, "node_type", "1: CA");
	put(dev, "node_guid", "%s", g);
	put(dev, "sys_image_guid", "%s", g);
	put(dev, "fw_ver", "%s", DROCE_VERSION);
	put(dev, "hw_rev", "0x%x", DROCE_HW_VER);
	put(dev, "hca_type", "droce");
	put(dev, "board_id", "droce");
	put(dev, "node_desc", "droce %s", p->name);
	if (netdev[0] != '\0') {
		char target[PATH_MAX];

		mkpath("%s/device/net", dev);
		snprintf(target, sizeof(target), "/sys/class/net/%s", netdev);
		link_to(target, "%s/device/net/%s", dev, netdev);
	}
	put(port, "state", "4: ACTIVE");
	put(port, "phys_state", "5: LinkUp");
	put(port, "link_layer", "Ethernet");
	put(port, "lid", "0x0");
	put(port, "sm_lid", "0x0");
	put(port, "lid_mask_count", "0");
	put(port, "sm_sl", "0");
	/* IBV_PORT_IP_BASED_GIDS | IBV_PORT_CM_SUP, as ibv_query_port */
	put(port, "cap_mask", "0x%08x", (1u << 26) | (1u << 16));
	put(port, "pkeys/0", "0xffff");
	for (unsigned int k = 0; k < DROCE_MAX_GIDS; k++) {
		char name[32];

		gid_text(k < p->n_gids ? p->gids[k] : zero, g, sizeof(g));
		snprintf(name, sizeof(name), "gids/%u", k);
		put(port, name, "%s", g);
		if (k >= p->n_gids)
			continue;
		snprintf(name, sizeof(name), "gid_attrs/types/%u", k);
		put(port, name, "RoCE v2");
		if (netdev[0] != '\0') {
			snprintf(name, sizeof(name), "gid_attrs/ndevs/%u", k);
			put(port, name, "%s", netdev);
		}
	}
	snprintf(dev, sizeof(dev), "%s/infiniband_verbs/droce_uverbs%u", cls, i);
	put(dev, "ibdev", "droce%u", i);
	put(dev, "abi_version", "1");
}

/* the interface of a port without a kernel one (in CMD's netns) */
static void
add_dummy(const struct droce_port_config *p)
{
	char mac[32], addr[96], peer[32];
	uint8_t m[6];

	/* a veth pair (its peer "<port>-p" up too, so the link has a carrier):
	 * kernels without the dummy module have veth, and it takes a MAC */
	snprintf(peer, sizeof(peer), "%s-p", p->name);
	run((const char *const[]){ "ip", "link", "add", p->name, "type", "veth", "peer", "name", peer,
				   NULL });
	run((const char *const[]){ "ip", "link", "set", peer, "up", NULL });
	if (port_mac(p, m)) {
		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
			 m[4], m[5]);
		run((const char *const[]){ "ip", "link", "set", p->name, "address", mac, NULL });
	}
	for (unsigned int k = 0; k < p->n_gids; k++) {
		const uint8_t *g = p->gids[k];
		static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (memcmp(g, v4, 12) == 0) {
			snprintf(addr, sizeof(addr), "%u.%u.%u.%u/24", g[12], g[13], g[14], g[15]);
			run((const char *const[]){ "ip", "addr", "add", addr, "dev", p->name, NULL });
		} else {
			char t[64];

			gid_text(g, t, sizeof(t));
			snprintf(addr, sizeof(addr), "%s/64", t);
			run((const char *const[]){ "ip", "-6", "addr", "add", addr, "dev", p->name,
						   "nodad", NULL });
		}
	}
	snprintf(mac, sizeof(mac), "%u", (unsigned int)p->mtu);
	run((const char *const[]){ "ip", "link", "set", p->name, "mtu", mac, "up", NULL });
}

/* @dst: a directory with a bind mount of every entry of @src but @skip
 * and @skip2 (directories and files alike; symbolic links copied), so @dst
 * can take @src's place with new entries added */
static void
mirror(const char *src, const char *dst, const char *skip, const char *skip2)
{
	DIR *d = opendir(src);
	struct dirent *e;

	if (d == NULL)
		return; /* nothing there (no /sys/class/...): only the new entries */
	while ((e = readdir(d)) != NULL) {
		char s[PATH_MAX], t[PATH_MAX], l[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, skip) == 0 || strcmp(e->d_name, skip2) == 0)
			continue;
		snprintf(s, sizeof(s), "%s/%s", src, e->d_name);
		snprintf(t, sizeof(t), "%s/%s", dst, e->d_name);
		if (lstat(s, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(s, l, sizeof(l) - 1);
			if (n < 0)
				continue;
			l[n] = '\0';
			link_to(l, "%s", t);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			mkpath("%s", t);
		} else {
			int fd = open(t, O_CREAT | O_WRONLY, 0644);

			if (fd < 0)
				die("create %s: %s", t, strerror(errno));
			close(fd);
		}
		do_mount(s, t, NULL, MS_BIND | MS_REC);
	}
	closedir(d);
}

/* @as_caller: CMD keeps the caller's uid and gid in a user namespace (the
 * --host-net view needs no privilege after its mounts), else it is that
 * namespace's root (the full view runs `ip` inside it) */
static void
enter_namespaces(bool netns, bool as_caller)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	int flags = CLONE_NEWNS | (netns ? CLONE_NEWNET : 0);

	if (geteuid() == 0) {
		if (unshare(flags) < 0)
			die("unshare (mount%s namespace): %s", netns ? ", network" : "",
			    strerror(errno));
		return;
	}
	/* not root: a user namespace owns the others, in which the caller is
	 * root (uid 0 maps to the caller's uid, nothing else is mapped): the
	 * `ip` commands run below need that, and so CMD runs as that root, with
	 * no privilege outside the namespaces */
	if (unshare(CLONE_NEWUSER | flags) < 0)
		die("not root, and no user namespace (%s): run as root, or allow unprivileged "
		    "user namespaces",
		    strerror(errno));
	{
		char m[64];

		write_file("/proc/self/setgroups", "deny");
		snprintf(m, sizeof(m), "%u %u 1", as_caller ? (unsigned int)uid : 0u, (unsigned int)uid);
		write_file("/proc/self/uid_map", m);
		snprintf(m, sizeof(m), "%u %u 1", as_caller ? (unsigned int)gid : 0u, (unsigned int)gid);
		write_file("/proc/self/gid_map", m);
	}
}

/* true when what UCX reads of each of the @n ports' devices is there: the
 * node /dev/infiniband/droce_uverbsN, a character device CMD may read and
 * write, and droceN's GID types in sysfs (an outer view made them) */
static bool
view_present(unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		char p[96];
		struct stat st;

		snprintf(p, sizeof(p), "/dev/infiniband/droce_uverbs%u", i);
		if (stat(p, &st) < 0 || !S_ISCHR(st.st_mode) || access(p, R_OK | W_OK) < 0)
			return false;
		snprintf(p, sizeof(p), "/sys/class/infiniband/droce%u/ports/1/gid_attrs/types/0", i);
		if (access(p, R_OK) < 0)
			return false;
	}
	return true;
}

int
main(int argc, char **argv)
{
	struct droce_config cfg;
	const char *path = getenv("DROCE_CONFIG");
	char netdev[DROCE_MAX_PORTS][16];
	char scratch[] = "/tmp/droce-view.XXXXXX", cls[PATH_MAX], dev[PATH_MAX];
	bool any_kernel = false, netns, host_net = false;
	int a = 1;

	for (; a < argc && argv[a][0] == '-' && strcmp(argv[a], "--") != 0; a++) {
		if (strcmp(argv[a], "-v") == 0) {
			verbose = true;
		} else if (strcmp(argv[a], "--host-net") == 0) {
			host_net = true;
		} else {
			fprintf(stderr, "droce-view: unknown option %s\n", argv[a]);
			return 2;
		}
	}
	if (a < argc && strcmp(argv[a], "--") == 0)
		a++;
	if (a >= argc) {
		fprintf(stderr, "usage: droce-view [--host-net] [-v] -- CMD [ARGS...]\n");
		return 2;
	}
	if (host_net)
		fallback = argv + a;
	if ((path && path[0] ? droce_config_load(path, &cfg) : droce_config_load_default(&cfg)) != 0)
		die("config: %s", droce_last_error());
	if (host_net && view_present(cfg.n_ports)) {
		say("droce's devices are in view already");
		execvp(argv[a], argv + a);
		die("%s: %s", argv[a], strerror(errno));
	}

	for (unsigned int i = 0; i < cfg.n_ports; i++)
		any_kernel |= kernel_port(&cfg.ports[i]);
	netns = !any_kernel && !host_net;
	for (unsigned int i = 0; i < cfg.n_ports; i++) {
		const struct droce_port_config *p = &cfg.ports[i];

		snprintf(netdev[i], sizeof(netdev[i]), "%s",
			 kernel_port(p) ? p->iface : netns ? p->name : "");
	}

	enter_namespaces(netns, host_net);
	/* nothing mounted here reaches the parent namespace */
	do_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE);
	if (netns) {
		int fd;

		run((const char *const[]){ "ip", "link", "set", "lo", "up", NULL });
		/* no IPv6 link-local address of the kernel's own: the interfaces
		 * carry exactly the addresses of droce's GID table */
		fd = open("/proc/sys/net/ipv6/conf/default/addr_gen_mode", O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "1", 1) != 1)
				say("addr_gen_mode: %s", strerror(errno));
			close(fd);
		}
		for (unsigned int i = 0; i < cfg.n_ports; i++)
			add_dummy(&cfg.ports[i]);
		/* sysfs as this network namespace sees it (/sys/class/net) */
		do_mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC);
	}

	if (mkdtemp(scratch) == NULL)
		die("mkdtemp: %s", strerror(errno));
	scratch_made = scratch;
	do_mount("droce-view", scratch, "tmpfs", MS_NOSUID);
	snprintf(cls, sizeof(cls), "%s/class", scratch);
	snprintf(dev, sizeof(dev), "%s/dev", scratch);
	mkpath("%s", cls);
	mkpath("%s", dev);
	/* a machine's own RDMA devices are not in the view: droce's libraries
	 * list only droce's */
	mirror("/sys/class", cls, "infiniband", "infiniband_verbs");
	mkpath("%s/infiniband", cls);
	put(cls, "infiniband_verbs/abi_version", "6");
	for (unsigned int i = 0; i < cfg.n_ports; i++)
		write_device(cls, i, &cfg.ports[i], netdev[i]);

	mirror("/dev", dev, "infiniband", "infiniband");
	mkpath("%s/infiniband", dev);
	for (unsigned int i = 0; i < cfg.n_ports; i++)
		link_to("/dev/null", "%s/infiniband/droce_uverbs%u", dev, i);
	link_to("/dev/null", "%s/infiniband/rdma_cm", dev);

	do_mount(cls, "/sys/class", NULL, MS_BIND | MS_REC);
	do_mount(dev, "/dev", NULL, MS_BIND | MS_REC);
	/* the scratch mount is left only through the binds above */
	if (umount2(scratch, MNT_DETACH) < 0 || rmdir(scratch) < 0)
		die("cleaning %s: %s", scratch, strerror(errno));
	scratch_made = NULL;
	fallback = NULL; /* from here CMD has the view, or nothing runs */
	for (unsigned int i = 0; i < cfg.n_ports; i++)
		say("droce%u: netdev %s", i, netdev[i][0] ? netdev[i] : "(none)");

	execvp(argv[a], argv + a);
	fprintf(stderr, "droce-view: %s: %s\n", argv[a], strerror(errno));
	return 127;
}
