/* SPDX-License-Identifier: BSD-3-Clause
 * droce configuration: INI text -> validated struct droce_config.
 *
 * The text is first checked line by line (so syntax errors carry a line
 * number), comments are stripped, and the result is handed to rte_cfgfile
 * through a memfd.  Every section and key is then checked against the tables
 * below; anything unknown is an error.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cfgfile.h>
#include <rte_ether.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <droce/config.h>

#include "config_internal.h"
#include "internal.h"

RTE_LOG_REGISTER(droce_config_logtype, droce.config, INFO);

const char *const droce_port_kind_name[DROCE_PORT_KIND_COUNT] = {
	[DROCE_PORT_KIND_RING] = "ring",
	[DROCE_PORT_KIND_MEMIF] = "memif",
	[DROCE_PORT_KIND_AF_PACKET] = "af_packet",
	[DROCE_PORT_KIND_AF_XDP] = "af_xdp",
	[DROCE_PORT_KIND_TAP] = "tap",
	[DROCE_PORT_KIND_PCI] = "pci",
	[DROCE_PORT_KIND_SWITCH] = "switch",
};

/* ---- the loader's context ---- */

#define MAX_SECTIONS (DROCE_MAX_PORTS + 8)
#define MAX_ENTRIES 32

struct loader {
	const char *file;
	struct rte_cfgfile *cf;
	struct droce_config *cfg;
};

/* Error about one key's value. */
#define BAD_VALUE(ld, sec, key, val, fmt, ...)                                       \
	droce_err_set(EINVAL, "%s: [%s] %s = %s: " fmt, (ld)->file, (sec), (key), (val), \
		      ##__VA_ARGS__)
/* Error about a whole section. */
#define BAD_SECTION(ld, sec, fmt, ...) \
	droce_err_set(EINVAL, "%s: [%s]: " fmt, (ld)->file, (sec), ##__VA_ARGS__)
/* ---- sections ---- */

typedef int (*key_fn)(struct loader *ld, const char *sec, const char *key, const char *val,
		      void *obj);

struct key_def {
	const char *name;
	key_fn fn;
	uint32_t kinds; /* port keys: bit per enum droce_port_kind; 0 = all */
};

#define KIND(k) (1u << DROCE_PORT_KIND_##k)

static int
key_eal_args(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_config *cfg = obj;
	char buf[CFG_VALUE_LEN], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", val);
	for (tok = strtok_r(buf, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save)) {
		if (cfg->n_eal_args >= DROCE_MAX_EAL_ARGS)
			return BAD_VALUE(ld, sec, key, val, "more than %d arguments",
					 DROCE_MAX_EAL_ARGS);
		snprintf(cfg->eal_args[cfg->n_eal_args++], DROCE_CONFIG_PATH_MAX, "%s", tok);
	}
	return 0;
}

static int
key_engines_mode(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_config *cfg = obj;

	if (strcmp(val, "dedicated") == 0)
		cfg->engine_mode = DROCE_ENGINE_MODE_DEDICATED;
	else if (strcmp(val, "colocated") == 0)
		cfg->engine_mode = DROCE_ENGINE_MODE_COLOCATED;
	else
		return BAD_VALUE(ld, sec, key, val, "not an engine mode (dedicated or colocated)");
	return 0;
}

static int
key_engines_lcores(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_cfg_lcore_acc acc = { .cfg = obj, .bad = "not an lcore list (e.g. 1,2 or 1-3)" };

	acc.cfg->n_engines = 0;
	if (droce_cfg_for_each_item(val, droce_cfg_add_lcores, &acc) < 0)
		return BAD_VALUE(ld, sec, key, val, "%s", acc.bad);
	return 0;
}

static int
key_engines_count(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_config *cfg = obj;
	uint32_t v;

	if (droce_cfg_parse_u32(val, 1, DROCE_MAX_ENGINES, &v) < 0)
		return BAD_VALUE(ld, sec, key, val, "not a valid engine count (1..%d)",
				 DROCE_MAX_ENGINES);
	cfg->n_engines = v;
	return 0;
}

#define U32_KEY(fname, field, min, max, what)                                        \
	static int fname(struct loader *ld, const char *sec, const char *key,          \
			 const char *val, void *obj)                                   \
	{                                                                              \
		uint32_t v;                                                            \
		if (droce_cfg_parse_u32(val, (min), (max), &v) < 0)                              \
			return BAD_VALUE(ld, sec, key, val, "not a valid %s (%u..%u)", \
					 what, (unsigned)(min), (unsigned)(max));      \
		field = v;                                                             \
		return 0;                                                              \
	}

U32_KEY(key_engines_fallback_us, ((struct droce_config *)obj)->fallback_us, 0,
	DROCE_FALLBACK_US_MAX, "fallback delay in microseconds")
U32_KEY(key_engines_wait_spin_us, ((struct droce_config *)obj)->wait_spin_us, 0,
	DROCE_WAIT_SPIN_US_MAX, "spin budget in microseconds")
U32_KEY(key_engines_sr, ((struct droce_config *)obj)->selective_repeat, 0, 1,
	"selective_repeat switch (0 or 1)")
U32_KEY(key_engines_dilation, ((struct droce_config *)obj)->time_dilation, 1, 100000, "dilation")
U32_KEY(key_engines_stall, ((struct droce_config *)obj)->clock_stall_us, 0, 1000000, "time in us")
U32_KEY(key_pool_mbufs, ((struct droce_config *)obj)->mbufs, 63, 4u << 20, "mbuf count")
U32_KEY(key_pool_cache, ((struct droce_config *)obj)->mbuf_cache, 0, RTE_MEMPOOL_CACHE_MAX_SIZE,
	"mempool cache size")
U32_KEY(key_pool_data_room, ((struct droce_config *)obj)->data_room,
	RTE_PKTMBUF_HEADROOM + DROCE_MTU_MIN + 18, UINT16_MAX, "mbuf data room")
U32_KEY(key_pool_capture_mbufs, ((struct droce_config *)obj)->capture_mbufs, 63, 1u << 20,
	"capture mbuf count")

U32_KEY(key_port_mtu, ((struct droce_port_config *)obj)->mtu, DROCE_MTU_MIN, DROCE_MTU_MAX,
	"MTU")
U32_KEY(key_port_rxq, ((struct droce_port_config *)obj)->rxq, 1, DROCE_MAX_QUEUES,
	"receive queue count")
U32_KEY(key_port_txq, ((struct droce_port_config *)obj)->txq, 1, DROCE_MAX_QUEUES,
	"transmit queue count")
U32_KEY(key_port_rxd, ((struct droce_port_config *)obj)->rxd, 32, 32768,
	"receive descriptor count")
U32_KEY(key_port_txd, ((struct droce_port_config *)obj)->txd, 32, 32768,
	"transmit descriptor count")
U32_KEY(key_port_zero_copy, ((struct droce_port_config *)obj)->zero_copy, 0, UINT16_MAX,
	"zero-copy threshold in bytes")
U32_KEY(key_port_vlan, ((struct droce_port_config *)obj)->vlan, 1, 4094, "VLAN id")
U32_KEY(key_port_tclass, ((struct droce_port_config *)obj)->tclass, 0, 255, "traffic class")
U32_KEY(key_port_pcp, ((struct droce_port_config *)obj)->pcp, 0, 7, "VLAN priority")
U32_KEY(key_port_memif_id, ((struct droce_port_config *)obj)->memif_id, 0, UINT32_MAX,
	"memif id")
U32_KEY(key_port_queue, ((struct droce_port_config *)obj)->xdp_queue, 0, 1023, "queue index")

static int
key_port_ecn(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;

	if (strcmp(val, "ect0") == 0)
		pc->ecn = DROCE_ECN_ECT0;
	else if (strcmp(val, "ect1") == 0)
		pc->ecn = DROCE_ECN_ECT1;
	else if (strcmp(val, "off") == 0)
		pc->ecn = DROCE_ECN_NOT_ECT;
	else
		return BAD_VALUE(ld, sec, key, val, "not an ECN setting (ect0, ect1 or off)");
	return 0;
}

/* Every [dcqcn] key (config_dcqcn.c has the table). */
static int
key_dcqcn(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	const char *why = "";
	char range[96];

	if (droce_cfg_dcqcn_key(key, val, &((struct droce_config *)obj)->dcqcn, &why, range,
				sizeof(range)) < 0)
		return BAD_VALUE(ld, sec, key, val, "%s%s", why, range);
	return 0;
}

static int
key_port_kind(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	/* Read before the other keys; see load_port(). */
	return 0;
}

static int
key_port_peer(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;
	uint32_t v;

	if (strncmp(val, "port", 4) != 0 || droce_cfg_parse_u32(val + 4, 0, DROCE_MAX_PORTS - 1, &v) < 0)
		return BAD_VALUE(ld, sec, key, val, "not a port name (port0..port%d)",
				 DROCE_MAX_PORTS - 1);
	pc->peer = (int)v;
	return 0;
}

static int
key_port_role(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;

	if (strcmp(val, "server") == 0)
		pc->memif_role = DROCE_MEMIF_ROLE_SERVER;
	else if (strcmp(val, "client") == 0)
		pc->memif_role = DROCE_MEMIF_ROLE_CLIENT;
	else
		return BAD_VALUE(ld, sec, key, val, "not a memif role (server or client)");
	return 0;
}

static int
copy_str(struct loader *ld, const char *sec, const char *key, const char *val, char *dst,
	 size_t cap)
{
	if (strlen(val) >= cap)
		return BAD_VALUE(ld, sec, key, val, "longer than %zu characters", cap - 1);
	strcpy(dst, val);
	return 0;
}

static int
key_port_socket(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;

	if (strchr(val, ',') != NULL)
		return BAD_VALUE(ld, sec, key, val, "socket path must not contain ','");
	return copy_str(ld, sec, key, val, pc->memif_socket, sizeof(pc->memif_socket));
}

static int
key_port_iface(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;
	const char *c;

	for (c = val; *c != '\0'; c++)
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
			return BAD_VALUE(ld, sec, key, val, "not a network interface name");
	return copy_str(ld, sec, key, val, pc->iface, sizeof(pc->iface));
}

static int
key_port_pci(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;
	unsigned int dom, bus, dev, fn;
	char tail;

	if (sscanf(val, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 || dom > 0xffff ||
	    bus > 0xff || dev > 0x1f || fn > 7)
		return BAD_VALUE(ld, sec, key, val,
				 "not a PCI address (domain:bus:device.function, e.g. 0000:03:00.0)");
	return copy_str(ld, sec, key, val, pc->pci, sizeof(pc->pci));
}

static int
key_port_mac(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;
	struct rte_ether_addr ea;

	if (rte_ether_unformat_addr(val, &ea) < 0)
		return BAD_VALUE(ld, sec, key, val, "not a MAC address (e.g. 02:00:c6:12:00:01)");
	if (!rte_is_valid_assigned_ether_addr(&ea))
		return BAD_VALUE(ld, sec, key, val, "not a unicast MAC address");
	memcpy(pc->mac, ea.addr_bytes, 6);
	pc->mac_set = true;
	return 0;
}

static int
key_port_ip(struct loader *ld, const char *sec, const char *key, const char *val, void *obj,
	    int family)
{
	struct droce_cfg_gid_acc acc = { .pc = obj, .family = family,
			       .bad = family == AF_INET ? "not an IPv4 address list"
							: "not an IPv6 address list" };

	if (droce_cfg_for_each_item(val, droce_cfg_add_gid, &acc) < 0)
		return BAD_VALUE(ld, sec, key, val, "%s", acc.bad);
	return 0;
}

static int
key_port_ipv4(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	return key_port_ip(ld, sec, key, val, obj, AF_INET);
}

static int
key_port_ipv6(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	return key_port_ip(ld, sec, key, val, obj, AF_INET6);
}

static int
key_port_capture(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;

	return copy_str(ld, sec, key, val, pc->capture, sizeof(pc->capture));
}

static int
key_port_impair(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	struct droce_port_config *pc = obj;
	const char *why = "";

	if (droce_cfg_impair_key(key + strlen("impair_"), val, &pc->impair, &why) < 0)
		return BAD_VALUE(ld, sec, key, val, "%s", why);
	return 0;
}

static int /* [switch]: config_switch.c */
key_switch(struct loader *ld, const char *sec, const char *key, const char *val, void *obj)
{
	const char *why = "";

	if (droce_cfg_switch_key(key, val, &((struct droce_config *)obj)->sw, &why) < 0)
		return BAD_VALUE(ld, sec, key, val, "%s", why);
	return 0;
}

static const struct key_def switch_keys[] = {
#define SWITCH_KEY(n) { #n, key_switch, 0 },
	DROCE_SWITCH_KEYS(SWITCH_KEY)
	{ NULL, NULL, 0 },
};

static const struct key_def eal_keys[] = {
	{ "args", key_eal_args, 0 },
	{ NULL, NULL, 0 },
};

static const struct key_def engine_keys[] = {
	{ "mode", key_engines_mode, 0 },
	{ "lcores", key_engines_lcores, 0 },
	{ "count", key_engines_count, 0 },
	{ "fallback_us", key_engines_fallback_us, 0 },
	{ "wait_spin_us", key_engines_wait_spin_us, 0 },
	{ "selective_repeat", key_engines_sr, 0 },
	{ "time_dilation", key_engines_dilation, 0 },
	{ "clock_stall_us", key_engines_stall, 0 },
	{ NULL, NULL, 0 },
};

static const struct key_def dcqcn_keys[] = {
#define DCQCN_KEY(n) { #n, key_dcqcn, 0 },
	DROCE_DCQCN_KEYS(DCQCN_KEY)
#undef DCQCN_KEY
	{ NULL, NULL, 0 },
};

static const struct key_def mempool_keys[] = {
	{ "mbufs", key_pool_mbufs, 0 },
	{ "cache", key_pool_cache, 0 },
	{ "data_room", key_pool_data_room, 0 },
	{ "capture_mbufs", key_pool_capture_mbufs, 0 },
	{ NULL, NULL, 0 },
};

static const struct key_def port_keys[] = {
	{ "kind", key_port_kind, 0 },
	{ "peer", key_port_peer, KIND(RING) },
	{ "role", key_port_role, KIND(MEMIF) },
	{ "socket", key_port_socket, KIND(MEMIF) },
	{ "id", key_port_memif_id, KIND(MEMIF) },
	{ "iface", key_port_iface, KIND(AF_PACKET) | KIND(AF_XDP) | KIND(TAP) },
	{ "queue", key_port_queue, KIND(AF_XDP) },
	{ "pci", key_port_pci, KIND(PCI) },
	{ "mac", key_port_mac, 0 },
	{ "ipv4", key_port_ipv4, 0 },
	{ "ipv6", key_port_ipv6, 0 },
	{ "mtu", key_port_mtu, 0 },
	{ "rxq", key_port_rxq, 0 },
	{ "txq", key_port_txq, 0 },
	{ "rxd", key_port_rxd, 0 },
	{ "txd", key_port_txd, 0 },
	{ "capture", key_port_capture, 0 },
	{ "vlan", key_port_vlan, 0 },
	{ "zero_copy", key_port_zero_copy, 0 },
	{ "ecn", key_port_ecn, 0 },
	{ "tclass", key_port_tclass, 0 },
	{ "pcp", key_port_pcp, 0 },
	{ "impair_drop", key_port_impair, 0 },
	{ "impair_dup", key_port_impair, 0 },
	{ "impair_reorder", key_port_impair, 0 },
	{ "impair_delay", key_port_impair, 0 },
	{ "impair_delay_us", key_port_impair, 0 },
	{ "impair_corrupt", key_port_impair, 0 },
	{ "impair_ce", key_port_impair, 0 },
	{ "impair_seed", key_port_impair, 0 },
	{ "impair_dir", key_port_impair, 0 },
	{ NULL, NULL, 0 },
};

static void
kinds_str(uint32_t kinds, char *buf, size_t cap)
{
	unsigned int k;
	size_t off = 0;

	buf[0] = '\0';
	for (k = 0; k < DROCE_PORT_KIND_COUNT; k++)
		if (kinds & (1u << k))
			off += (size_t)snprintf(buf + off, off < cap ? cap - off : 0, "%s%s",
						off ? ", " : "", droce_port_kind_name[k]);
}

/*
 * Applies every entry of section @idx through @defs.  @kind < 0 means the
 * section is not a port.
 */
static int
load_section(struct loader *ld, int idx, const char *sec, const struct key_def *defs,
	     void *obj, int kind)
{
	struct rte_cfgfile_entry entries[MAX_ENTRIES];
	char name[CFG_NAME_LEN];
	int n, i, j;

	n = rte_cfgfile_section_num_entries_by_index(ld->cf, name, idx);
	if (n > MAX_ENTRIES)
		return BAD_SECTION(ld, sec, "more than %d keys", MAX_ENTRIES);
	n = rte_cfgfile_section_entries_by_index(ld->cf, idx, name, entries, MAX_ENTRIES);
	if (n < 0)
		return droce_err_set(EINVAL, "%s: [%s]: cannot read section", ld->file, sec);
	for (i = 0; i < n; i++) {
		const struct key_def *d;

		for (j = 0; j < i; j++)
			if (strcmp(entries[j].name, entries[i].name) == 0)
				return BAD_VALUE(ld, sec, entries[i].name, entries[i].value,
						 "key given twice (first value %s)",
						 entries[j].value);
		for (d = defs; d->name != NULL; d++)
			if (strcmp(d->name, entries[i].name) == 0)
				break;
		if (d->name == NULL)
			return BAD_VALUE(ld, sec, entries[i].name, entries[i].value,
					 "unknown key in section [%s]", sec);
		if (kind >= 0 && d->kinds != 0 && !(d->kinds & (1u << kind))) {
			char ks[96];

			kinds_str(d->kinds, ks, sizeof(ks));
			return BAD_VALUE(ld, sec, entries[i].name, entries[i].value,
					 "key not used by kind = %s (only by %s)",
					 droce_port_kind_name[kind], ks);
		}
		if (d->fn(ld, sec, entries[i].name, entries[i].value, obj) < 0)
			return -1;
	}
	return 0;
}

static void
port_defaults(struct droce_port_config *pc, unsigned int idx)
{
	memset(pc, 0, sizeof(*pc));
	snprintf(pc->name, sizeof(pc->name), "port%u", idx);
	pc->peer = -1;
	pc->mtu = 1500;
	pc->zero_copy = DROCE_ZERO_COPY_DEFAULT;
	pc->ecn = DROCE_ECN_ECT0;
	pc->rxq = 1;
	pc->txq = 1;
	pc->rxd = 1024;
	pc->txd = 1024;
	pc->impair.dir = DROCE_IMPAIR_DIR_TX;
}

static int
load_port(struct loader *ld, int idx, const char *sec, unsigned int pidx)
{
	struct droce_port_config *pc = &ld->cfg->ports[pidx];
	const char *kind = rte_cfgfile_get_entry(ld->cf, sec, "kind");
	int k;

	port_defaults(pc, pidx);
	if (kind == NULL)
		return BAD_SECTION(ld, sec, "missing key 'kind' (ring, memif, af_packet, af_xdp, tap, pci or switch)");
	for (k = 0; k < DROCE_PORT_KIND_COUNT; k++)
		if (strcmp(kind, droce_port_kind_name[k]) == 0)
			break;
	if (k == DROCE_PORT_KIND_COUNT)
		return BAD_VALUE(ld, sec, "kind", kind,
				 "not a port kind (ring, memif, af_packet, af_xdp, tap, pci or switch)");
	pc->kind = (enum droce_port_kind)k;
	if (load_section(ld, idx, sec, port_keys, pc, k) < 0)
		return -1;
	if (pc->impair.delay_us > 0 && rte_cfgfile_get_entry(ld->cf, sec, "impair_delay") == NULL)
		pc->impair.delay = 1.0; /* a fixed-latency link */
	if (pc->impair.delay > 0 && pc->impair.delay_us == 0)
		return BAD_VALUE(ld, sec, "impair_delay", rte_cfgfile_get_entry(ld->cf, sec, "impair_delay"),
				 "needs impair_delay_us > 0 (how long to delay)");

	switch (pc->kind) {
	case DROCE_PORT_KIND_RING:
		if (pc->peer < 0)
			return BAD_SECTION(ld, sec, "kind = ring needs key 'peer' (the other port of the pair)");
		break;
	case DROCE_PORT_KIND_MEMIF:
		if (pc->memif_socket[0] == '\0')
			return BAD_SECTION(ld, sec, "kind = memif needs key 'socket' (unix socket path)");
		if (rte_cfgfile_get_entry(ld->cf, sec, "role") == NULL)
			return BAD_SECTION(ld, sec, "kind = memif needs key 'role' (server or client)");
		break;
	case DROCE_PORT_KIND_AF_PACKET:
	case DROCE_PORT_KIND_AF_XDP:
	case DROCE_PORT_KIND_TAP:
		if (pc->iface[0] == '\0')
			return BAD_SECTION(ld, sec, "kind = %s needs key 'iface'",
					   droce_port_kind_name[k]);
		break;
	case DROCE_PORT_KIND_PCI:
		if (pc->pci[0] == '\0')
			return BAD_SECTION(ld, sec, "kind = pci needs key 'pci' (PCI address)");
		break;
	default:
		break;
	}
	if (pc->n_gids == 0)
		return BAD_SECTION(ld, sec, "no address: a port needs 'ipv4' or 'ipv6' (its GIDs)");
	return 0;
}

/* Checks that involve more than one key or section. */
static int
check_whole(struct loader *ld)
{
	struct droce_config *cfg = ld->cfg;
	unsigned int i, j;
	uint32_t need;

	if (cfg->n_ports == 0)
		return droce_err_set(EINVAL, "%s: no [port0] section: at least one port is needed",
				     ld->file);
	for (i = 0; i < cfg->n_ports; i++) {
		struct droce_port_config *pc = &cfg->ports[i];
		char peer_s[16];

		if (pc->kind == DROCE_PORT_KIND_RING) {
			struct droce_port_config *pp;

			snprintf(peer_s, sizeof(peer_s), "port%d", pc->peer);
			if ((unsigned int)pc->peer >= cfg->n_ports)
				return BAD_VALUE(ld, pc->name, "peer", peer_s, "no such port");
			if ((unsigned int)pc->peer == i)
				return BAD_VALUE(ld, pc->name, "peer", peer_s,
						 "a ring port cannot be its own peer");
			pp = &cfg->ports[pc->peer];
			if (pp->kind != DROCE_PORT_KIND_RING || pp->peer != (int)i)
				return BAD_VALUE(ld, pc->name, "peer", peer_s,
						 "[%s] must be kind = ring with peer = %s",
						 pp->name, pc->name);
			if (pc->txq != pp->rxq || pc->rxq != pp->txq)
				return BAD_SECTION(ld, pc->name,
						   "txq/rxq (%u/%u) must match the peer's rxq/txq (%u/%u)",
						   pc->txq, pc->rxq, pp->rxq, pp->txq);
		}
		if (pc->kind == DROCE_PORT_KIND_PCI) {
			for (j = 0; j < cfg->n_eal_args; j++)
				if (strcmp(cfg->eal_args[j], "--no-pci") == 0)
					return BAD_VALUE(ld, pc->name, "kind", "pci",
							 "[eal] args contain --no-pci");
		}
		if (pc->kind == DROCE_PORT_KIND_MEMIF) {
			for (j = 0; j < i; j++) {
				struct droce_port_config *o = &cfg->ports[j];

				if (o->kind == DROCE_PORT_KIND_MEMIF &&
				    strcmp(o->memif_socket, pc->memif_socket) == 0 &&
				    o->memif_id == pc->memif_id && o->memif_role == pc->memif_role)
					return BAD_SECTION(ld, pc->name,
							   "same memif socket, id and role as [%s]",
							   o->name);
			}
		}
		need = RTE_PKTMBUF_HEADROOM + pc->mtu + RTE_ETHER_HDR_LEN + 4 +
		       (pc->vlan ? 4 : 0);
		if (cfg->data_room < need) {
			char v[16];

			snprintf(v, sizeof(v), "%u", cfg->data_room);
			return BAD_VALUE(ld, "mempool", "data_room", v,
					 "too small for [%s] mtu = %u (needs %u with headroom)",
					 pc->name, pc->mtu, need);
		}
	}
	if (cfg->mbuf_cache > 0 && cfg->mbuf_cache * 3 / 2 > cfg->mbufs) {
		char v[16];

		snprintf(v, sizeof(v), "%u", cfg->mbuf_cache);
		return BAD_VALUE(ld, "mempool", "cache", v,
				 "larger than mbufs / 1.5 (mbufs = %u)", cfg->mbufs);
	}
	if (cfg->engine_mode == DROCE_ENGINE_MODE_DEDICATED) {
		if (rte_cfgfile_get_entry(ld->cf, "engines", "count") != NULL)
			return BAD_VALUE(ld, "engines", "count",
					 rte_cfgfile_get_entry(ld->cf, "engines", "count"),
					 "mode = dedicated takes 'lcores', not 'count'");
		if (cfg->n_engines == 0)
			return BAD_SECTION(ld, "engines", "mode = dedicated needs key 'lcores'");
		if (rte_cfgfile_get_entry(ld->cf, "engines", "fallback_us") != NULL)
			return BAD_VALUE(ld, "engines", "fallback_us",
					 rte_cfgfile_get_entry(ld->cf, "engines", "fallback_us"),
					 "mode = dedicated has no fallback thread (colocated only)");
		if (rte_cfgfile_get_entry(ld->cf, "engines", "wait_spin_us") != NULL)
			return BAD_VALUE(ld, "engines", "wait_spin_us",
					 rte_cfgfile_get_entry(ld->cf, "engines", "wait_spin_us"),
					 "mode = dedicated: the engines' own lcores drive them (colocated only)");
	} else {
		if (rte_cfgfile_get_entry(ld->cf, "engines", "lcores") != NULL)
			return BAD_VALUE(ld, "engines", "lcores",
					 rte_cfgfile_get_entry(ld->cf, "engines", "lcores"),
					 "mode = colocated takes 'count', not 'lcores'");
		if (cfg->n_engines == 0)
			cfg->n_engines = 1;
	}
	return 0;
}

static void
config_defaults(struct droce_config *cfg, const char *file)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->source, sizeof(cfg->source), "%s", file);
	cfg->engine_mode = DROCE_ENGINE_MODE_COLOCATED;
	cfg->fallback_us = DROCE_FALLBACK_US_DEFAULT;
	cfg->wait_spin_us = DROCE_WAIT_SPIN_US_DEFAULT;
	cfg->mbufs = 8191;
	cfg->mbuf_cache = 256;
	cfg->data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
	cfg->capture_mbufs = 1023;
	droce_cfg_dcqcn_defaults(&cfg->dcqcn);
	cfg->time_dilation = 1;
	droce_cfg_switch_defaults(&cfg->sw);
}

static int
load_all(struct loader *ld)
{
	char *names[MAX_SECTIONS];
	char storage[MAX_SECTIONS][CFG_NAME_LEN];
	bool seen_port[DROCE_MAX_PORTS] = { false };
	char buf_why[192];
	int n, i, j, rc = 0;

	n = rte_cfgfile_num_sections(ld->cf, NULL, 0);
	if (n > MAX_SECTIONS)
		return droce_err_set(EINVAL, "%s: more than %d sections", ld->file, MAX_SECTIONS);
	for (i = 0; i < MAX_SECTIONS; i++)
		names[i] = storage[i];
	n = rte_cfgfile_sections(ld->cf, names, MAX_SECTIONS);

	for (i = 0; i < n && rc == 0; i++) {
		const char *sec = names[i];
		uint32_t pidx;

		for (j = 0; j < i; j++)
			if (strcmp(names[j], sec) == 0)
				return BAD_SECTION(ld, sec, "section given twice");
		if (strcmp(sec, "eal") == 0)
			rc = load_section(ld, i, sec, eal_keys, ld->cfg, -1);
		else if (strcmp(sec, "engines") == 0)
			rc = load_section(ld, i, sec, engine_keys, ld->cfg, -1);
		else if (strcmp(sec, "mempool") == 0)
			rc = load_section(ld, i, sec, mempool_keys, ld->cfg, -1);
		else if (strcmp(sec, "dcqcn") == 0)
			rc = load_section(ld, i, sec, dcqcn_keys, ld->cfg, -1);
		else if (strcmp(sec, "switch") == 0)
			rc = load_section(ld, i, sec, switch_keys, ld->cfg, -1);
		else if (strncmp(sec, "port", 4) == 0 &&
			 droce_cfg_parse_u32(sec + 4, 0, DROCE_MAX_PORTS - 1, &pidx) == 0 &&
			 (sec[4] != '0' || sec[5] == '\0')) {
			seen_port[pidx] = true;
			if (pidx + 1 > ld->cfg->n_ports)
				ld->cfg->n_ports = pidx + 1;
			rc = load_port(ld, i, sec, pidx);
		} else {
			return BAD_SECTION(ld, sec,
					   "unknown section (expected eal, engines, mempool, dcqcn, switch or port0..port%d)",
					   DROCE_MAX_PORTS - 1);
		}
	}
	if (rc < 0)
		return -1;
	if (droce_cfg_switch_check(&ld->cfg->sw, ld->cfg, buf_why, sizeof(buf_why)) < 0)
		return BAD_SECTION(ld, "switch", "%s", buf_why);
	for (i = 0; i < (int)ld->cfg->n_ports; i++)
		if (!seen_port[i])
			return droce_err_set(EINVAL, "%s: [port%d] missing: ports are numbered from port0 without gaps (port%u exists)",
					     ld->file, i, ld->cfg->n_ports - 1);
	return check_whole(ld);
}

int
droce_config_load_text(const char *name, const char *text, struct droce_config *cfg)
{
	struct loader ld = { .file = name, .cfg = cfg };
	char fdpath[64];
	int fd, rc;

	droce_err_clear();
	config_defaults(cfg, name);
	fd = droce_cfg_stage_fd();
	if (fd < 0)
		return droce_err_set(errno, "%s: cannot stage config: %s", name, strerror(errno));
	if (droce_cfg_prepare_text(name, text, fd) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	ld.cf = rte_cfgfile_load(fdpath, 0);
	close(fd);
	if (ld.cf == NULL)
		return droce_err_set(EINVAL, "%s: rte_cfgfile could not parse the file", name);
	rc = load_all(&ld);
	rte_cfgfile_close(ld.cf);
	if (rc == 0)
		CFG_LOG(DEBUG, "%s: %u ports, %u engines", name, cfg->n_ports, cfg->n_engines);
	return rc;
}

int
droce_config_load(const char *path, struct droce_config *cfg)
{
	struct stat st;
	char *text;
	FILE *f;
	size_t n;
	int rc;

	droce_err_clear();
	if (path == NULL || path[0] == '\0')
		return droce_err_set(EINVAL, "config: empty file name");
	f = fopen(path, "r");
	if (f == NULL)
		return droce_err_set(errno, "%s: cannot open config file: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
		fclose(f);
		return droce_err_set(EINVAL, "%s: not a regular config file of at most 1 MiB", path);
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		fclose(f);
		return droce_err_set(ENOMEM, "%s: out of memory", path);
	}
	n = fread(text, 1, (size_t)st.st_size, f);
	fclose(f);
	text[n] = '\0';
	if (strlen(text) != n) {
		free(text);
		return droce_err_set(EINVAL, "%s: config file contains a NUL byte", path);
	}
	rc = droce_config_load_text(path, text, cfg);
	free(text);
	return rc;
}

int
droce_config_load_default(struct droce_config *cfg)
{
	return droce_config_load_text("<embedded loopback.ini>", droce_config_loopback_ini, cfg);
}
