/* SPDX-License-Identifier: BSD-3-Clause
 * droce ports: the port table, ethdev creation per link kind, queues,
 * offload discovery, start and stop.  Their I/O (bursts, counters) is in
 * port_io.c, ARP in arp.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <rte_arp.h>
#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "capture.h"
#include "impair.h"
#include "internal.h"
#include "port.h"
#include "port_internal.h"
#include "wake.h"
#include "redial.h"
#include "residue.h"
#include "switch.h"

RTE_LOG_REGISTER(droce_pmd_logtype, droce.pmd, INFO);

#define LINK_WAIT_MS 3000
/* How long a memif client waits for its server's socket to accept it. */
#define MEMIF_CONNECT_WAIT_MS 5000
/* How long a memif client's link may stay down while it starts before it
 * dials again (wait_link). */
#define MEMIF_REDIAL_MS 1000

static struct droce_port ports[DROCE_MAX_PORTS];
static unsigned int nb_ports;
static unsigned int generation; /* bumped by each droce_ports_create() */

/* Error naming the port's section. */
#define PORT_ERR(cfgsrc, p, err, fmt, ...) \
	droce_err_set((err), "%s: [%s]: " fmt, (cfgsrc), (p)->cfg->name, ##__VA_ARGS__)

struct droce_port *
droce_port_get(unsigned int index)
{
	return index < nb_ports ? &ports[index] : NULL;
}

unsigned int
droce_port_count(void)
{
	return nb_ports;
}

/* ---- device creation per kind ---- */

/* The ethdev over @p's rings (rings[0] received, rings[1] sent): a ring
 * port's and a switch port's.  A generation number keeps names unique across
 * stop/start; the vdev (and ethdev) is called net_ring_<name>. */
static int
ring_ethdev(const char *src, struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	char name[RTE_RING_NAMESIZE];
	int id;

	snprintf(name, sizeof(name), "droce%u_p%u", generation, p->index);
	id = rte_eth_from_rings(name, p->rings[0], pc->rxq, p->rings[1], pc->txq, SOCKET_ID_ANY);
	if (id < 0)
		return PORT_ERR(src, p, rte_errno, "rte_eth_from_rings(%s) failed: %s", name,
				rte_strerror(rte_errno));
	p->eth_port = (uint16_t)id;
	if (rte_eth_dev_get_name_by_port(p->eth_port, p->dev_name) != 0)
		snprintf(p->dev_name, sizeof(p->dev_name), "net_ring_%s", name);
	return 0;
}

static int
create_ring_port(const char *src, struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	struct droce_port *peer = &ports[pc->peer];
	char name[RTE_RING_NAMESIZE];
	unsigned int q;

	if (pc->peer > (int)p->index) {
		/* First of the pair: create both directions. rings[0] = rx, [1] = tx. */
		for (q = 0; q < pc->txq; q++) {
			snprintf(name, sizeof(name), "droce%u_r%u_%d_q%u", generation, p->index,
				 pc->peer, q);
			p->rings[1][q] = rte_ring_create(name, pc->txd, SOCKET_ID_ANY,
							 RING_F_SP_ENQ | RING_F_SC_DEQ |
							 RING_F_EXACT_SZ);
			if (p->rings[1][q] == NULL)
				return PORT_ERR(src, p, rte_errno, "cannot create ring %s: %s", name,
						rte_strerror(rte_errno));
		}
		for (q = 0; q < pc->rxq; q++) {
			snprintf(name, sizeof(name), "droce%u_r%d_%u_q%u", generation, pc->peer,
				 p->index, q);
			p->rings[0][q] = rte_ring_create(name, pc->rxd, SOCKET_ID_ANY,
							 RING_F_SP_ENQ | RING_F_SC_DEQ |
							 RING_F_EXACT_SZ);
			if (p->rings[0][q] == NULL)
				return PORT_ERR(src, p, rte_errno, "cannot create ring %s: %s", name,
						rte_strerror(rte_errno));
		}
		p->owns_rings = true;
	} else {
		for (q = 0; q < pc->rxq; q++)
			p->rings[0][q] = peer->rings[1][q];
		for (q = 0; q < pc->txq; q++)
			p->rings[1][q] = peer->rings[0][q];
	}
	return ring_ethdev(src, p);
}

/* A switch port: a ring ethdev whose rings have the switch (switch.c) at
 * the other end: rings[1] what the port sends, rings[0] what it receives. */
static int
create_switch_port(const char *src, struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	char name[RTE_RING_NAMESIZE];

	for (unsigned int d = 0; d < 2; d++) {
		unsigned int nq = d == 0 ? pc->rxq : pc->txq;

		for (unsigned int q = 0; q < nq; q++) {
			snprintf(name, sizeof(name), "droce%u_s%u_%c%u", generation, p->index,
				 d == 0 ? 'r' : 't', q);
			p->rings[d][q] = rte_ring_create(name, d == 0 ? pc->rxd : pc->txd,
							 SOCKET_ID_ANY,
							 RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
			if (p->rings[d][q] == NULL)
				return PORT_ERR(src, p, rte_errno, "cannot create ring %s: %s", name,
						rte_strerror(rte_errno));
		}
	}
	p->owns_rings = true;
	return ring_ethdev(src, p);
}

static int
probe_vdev(const char *src, struct droce_port *p, const char *args)
{
	char devargs[512];
	uint16_t id;
	int rc;

	snprintf(devargs, sizeof(devargs), "%s,%s", p->dev_name, args);
	rc = rte_dev_probe(devargs);
	if (rc < 0)
		return PORT_ERR(src, p, -rc, "kind = %s: cannot probe %s: %s",
				droce_port_kind_name[p->cfg->kind], devargs, rte_strerror(-rc));
	if (rte_eth_dev_get_port_by_name(p->dev_name, &id) != 0)
		return PORT_ERR(src, p, ENODEV, "kind = %s: %s probed but has no ethdev port",
				droce_port_kind_name[p->cfg->kind], p->dev_name);
	p->eth_port = id;
	return 0;
}

/* A memif server's socket path, before the probe (residue.c). */
static int
memif_server_path_prepare(const char *src, struct droce_port *p)
{
	char who[160];

	snprintf(who, sizeof(who), "%s: [%s]: socket", src, p->cfg->name);
	return droce_memif_socket_prepare(who, p->cfg->memif_socket);
}

static int
create_device(const char *src, struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	char args[384];

	switch (pc->kind) {
	case DROCE_PORT_KIND_RING:
		return create_ring_port(src, p);
	case DROCE_PORT_KIND_SWITCH:
		return create_switch_port(src, p);
	case DROCE_PORT_KIND_MEMIF:
		snprintf(p->dev_name, sizeof(p->dev_name), "net_memif_droce%u_p%u", generation, p->index);
		snprintf(args, sizeof(args), "role=%s,socket=%s,socket-abstract=no,id=%u",
			 pc->memif_role == DROCE_MEMIF_ROLE_SERVER ? "server" : "client",
			 pc->memif_socket, pc->memif_id);
		if (pc->memif_role == DROCE_MEMIF_ROLE_SERVER &&
		    memif_server_path_prepare(src, p) != 0)
			return -1;
		if (probe_vdev(src, p, args) != 0)
			return -1;
		/* The PMD bound the server's socket: removed at exit (residue.c). */
		if (pc->memif_role == DROCE_MEMIF_ROLE_SERVER)
			droce_residue_add_socket(pc->memif_socket);
		return 0;
	case DROCE_PORT_KIND_AF_PACKET:
		snprintf(p->dev_name, sizeof(p->dev_name), "net_af_packet_droce%u_p%u", generation, p->index);
		snprintf(args, sizeof(args), "iface=%s,qpairs=%u", pc->iface,
			 RTE_MAX(pc->rxq, pc->txq));
		return probe_vdev(src, p, args);
	case DROCE_PORT_KIND_AF_XDP:
		snprintf(p->dev_name, sizeof(p->dev_name), "net_af_xdp_droce%u_p%u", generation, p->index);
		snprintf(args, sizeof(args), "iface=%s,start_queue=%u,queue_count=%u", pc->iface,
			 pc->xdp_queue, RTE_MAX(pc->rxq, pc->txq));
		return probe_vdev(src, p, args);
	case DROCE_PORT_KIND_TAP:
		snprintf(p->dev_name, sizeof(p->dev_name), "net_tap_droce%u_p%u", generation, p->index);
		snprintf(args, sizeof(args), "iface=%s", pc->iface);
		return probe_vdev(src, p, args);
	case DROCE_PORT_KIND_PCI: {
		struct rte_dev_iterator it;
		uint16_t id;
		int rc;

		snprintf(p->dev_name, sizeof(p->dev_name), "%s", pc->pci);
		rc = rte_dev_probe(pc->pci);
		if (rc < 0 && rc != -EEXIST)
			return PORT_ERR(src, p, -rc, "pci = %s: cannot probe: %s (bound to vfio-pci?)",
					pc->pci, rte_strerror(-rc));
		RTE_ETH_FOREACH_MATCHING_DEV(id, pc->pci, &it) {
			p->eth_port = id;
			rte_eth_iterator_cleanup(&it);
			return 0;
		}
		return PORT_ERR(src, p, ENODEV, "pci = %s: no ethdev port on this device", pc->pci);
	}
	default:
		return PORT_ERR(src, p, EINVAL, "unsupported kind");
	}
}

/* ---- configuration ---- */

static uint32_t
discover_offloads(const struct rte_eth_dev_info *info, uint64_t *rx_off, uint64_t *tx_off)
{
	uint32_t o = 0;

	*rx_off = 0;
	*tx_off = 0;
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
		o |= DROCE_PORT_OFFLOAD_TX_IPV4_CSUM;
		*tx_off |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	}
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) {
		o |= DROCE_PORT_OFFLOAD_TX_UDP_CSUM;
		*tx_off |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	}
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) {
		o |= DROCE_PORT_OFFLOAD_TX_TCP_CSUM;
		*tx_off |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
	}
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_TSO) {
		o |= DROCE_PORT_OFFLOAD_TX_TSO;
		*tx_off |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
	}
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
		o |= DROCE_PORT_OFFLOAD_TX_MULTI_SEG;
		*tx_off |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	}
	if (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) {
		o |= DROCE_PORT_OFFLOAD_RX_IPV4_CSUM;
		*rx_off |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	}
	if (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) {
		o |= DROCE_PORT_OFFLOAD_RX_UDP_CSUM;
		*rx_off |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	}
	return o;
}

static int
configure_port(const char *src, struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	uint16_t nb_rxd = pc->rxd, nb_txd = pc->txd, q;
	uint64_t rx_off, tx_off;
	int rc;

	rc = rte_eth_dev_info_get(p->eth_port, &info);
	if (rc != 0)
		return PORT_ERR(src, p, -rc, "cannot read device info: %s", rte_strerror(-rc));
	if (pc->rxq > info.max_rx_queues)
		return PORT_ERR(src, p, EINVAL, "rxq = %u: device %s has at most %u receive queues",
				pc->rxq, p->dev_name, info.max_rx_queues);
	if (pc->txq > info.max_tx_queues)
		return PORT_ERR(src, p, EINVAL, "txq = %u: device %s has at most %u transmit queues",
				pc->txq, p->dev_name, info.max_tx_queues);
	/* DPDK 22.11's memif reports a 1518-byte frame limit it does not
	 * enforce: a longer frame goes out over chained ring buffers (bsize
	 * bytes each) and comes in gathered into the mempool's mbufs, so its
	 * ethdev is configured at its reported maximum and droce uses the
	 * configured MTU (up to what the mempool's data room holds: config.c) */
	uint32_t dev_mtu = RTE_MIN(info.max_mtu, info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
	bool memif_jumbo = pc->kind == DROCE_PORT_KIND_MEMIF && pc->mtu > dev_mtu;

	if ((pc->mtu > info.max_mtu && !memif_jumbo) || pc->mtu < info.min_mtu)
		return PORT_ERR(src, p, EINVAL, "mtu = %u: device %s allows %u..%u", pc->mtu,
				p->dev_name, info.min_mtu, info.max_mtu);

	p->offload_capa = discover_offloads(&info, &rx_off, &tx_off);
	p->offloads = p->offload_capa;
	p->zc_min = droce_port_zc_min(p->offloads, pc->zero_copy);
	p->max_rx_pktlen = info.max_rx_pktlen;

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = memif_jumbo ? (uint16_t)dev_mtu : pc->mtu;
	conf.rxmode.offloads = rx_off;
	conf.txmode.offloads = tx_off;
	rc = rte_eth_dev_configure(p->eth_port, pc->rxq, pc->txq, &conf);
	if (rc != 0)
		return PORT_ERR(src, p, -rc, "rte_eth_dev_configure(%u rxq, %u txq, mtu %u) failed: %s",
				pc->rxq, pc->txq, pc->mtu, rte_strerror(-rc));
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->eth_port, &nb_rxd, &nb_txd);
	if (rc != 0)
		return PORT_ERR(src, p, -rc, "rxd = %u / txd = %u not accepted: %s", pc->rxd,
				pc->txd, rte_strerror(-rc));
	for (q = 0; q < pc->rxq; q++) {
		rc = rte_eth_rx_queue_setup(p->eth_port, q, nb_rxd, rte_eth_dev_socket_id(p->eth_port),
					    NULL, p->mp);
		if (rc != 0)
			return PORT_ERR(src, p, -rc, "receive queue %u setup failed: %s", q,
					rte_strerror(-rc));
	}
	for (q = 0; q < pc->txq; q++) {
		rc = rte_eth_tx_queue_setup(p->eth_port, q, nb_txd, rte_eth_dev_socket_id(p->eth_port),
					    NULL);
		if (rc != 0)
			return PORT_ERR(src, p, -rc, "transmit queue %u setup failed: %s", q,
					rte_strerror(-rc));
	}
	p->nb_rxq = pc->rxq;
	p->nb_txq = pc->txq;
	p->mtu = pc->mtu;
	p->vlan = pc->vlan;

	if (pc->mac_set) {
		memcpy(p->mac.addr_bytes, pc->mac, 6);
		rc = rte_eth_dev_default_mac_addr_set(p->eth_port, &p->mac);
		if (rc != 0) {
			/* The PMD keeps its own address: receive everything instead. */
			PMD_LOG(DEBUG, "%s: cannot set MAC (%s), enabling promiscuous mode",
				pc->name, rte_strerror(-rc));
			rc = rte_eth_promiscuous_enable(p->eth_port);
			if (rc != 0 && rc != -ENOTSUP)
				PMD_LOG(WARNING, "%s: promiscuous mode failed: %s", pc->name,
					rte_strerror(-rc));
		}
	} else {
		rc = rte_eth_macaddr_get(p->eth_port, &p->mac);
		if (rc != 0)
			return PORT_ERR(src, p, -rc, "cannot read the MAC address: %s",
					rte_strerror(-rc));
	}
	return 0;
}

static bool
port_is_memif_client(const struct droce_port *p)
{
	return p->cfg->kind == DROCE_PORT_KIND_MEMIF && p->cfg->memif_role == DROCE_MEMIF_ROLE_CLIENT;
}

static void
redial_cb(void *arg)
{
	struct droce_port *p = arg;
	int memif_log = rte_log_register("pmd.net.memif");
	int level = memif_log >= 0 ? rte_log_get_level((uint32_t)memif_log) : -1;

	if (p->started)
		rte_eth_dev_stop(p->eth_port);
	if (level >= 0)
		rte_log_set_level((uint32_t)memif_log, RTE_LOG_CRIT);
	p->started = rte_eth_dev_start(p->eth_port) == 0;
	if (level >= 0)
		rte_log_set_level((uint32_t)memif_log, (uint32_t)level);
}

/*
 * Waits up to LINK_WAIT_MS for the link.  A memif client whose server
 * process was still starting when it dialled (the server's socket listens
 * from the probe, its device only from rte_eth_dev_start) was told "Device
 * not found" and DPDK's PMD does not dial again: while a server listens
 * and the link stays down, it dials again every MEMIF_REDIAL_MS (no engine
 * runs yet; the control channel is the interrupt thread's).
 */
static void
wait_link(struct droce_port *p)
{
	bool memif_client = port_is_memif_client(p);
	struct rte_eth_link link;
	unsigned int ms;

	for (ms = 0; ms <= LINK_WAIT_MS; ms += 10) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(p->eth_port, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			break;
		if (memif_client && ms > 0 && ms % MEMIF_REDIAL_MS == 0 &&
		    droce_unix_socket_live(p->cfg->memif_socket) == 1) {
			PMD_LOG(INFO, "%s: memif client: link down after %u ms, dialling again",
				p->cfg->name, ms);
			droce_call_in_intr_thread(redial_cb, p);
		}
		rte_delay_us_sleep(10000);
	}
	p->link_up = link.link_status == RTE_ETH_LINK_UP;
	p->link_speed = p->sw != NULL ? droce_switch_port_speed(p->sw) : link.link_speed;
	if (!p->link_up)
		PMD_LOG(WARNING, "%s (%s): link still down after %d ms", p->cfg->name, p->dev_name,
			LINK_WAIT_MS);
}

/*
 * Starts a port.  A memif client whose server is not listening yet (the
 * server process still starting: qperf's server, for one, forks a child
 * that brings droce up for each test while the client does the same) is
 * retried every 20 ms for up to MEMIF_CONNECT_WAIT_MS; DPDK's memif PMD
 * tries its connect() once per rte_eth_dev_start and cleans up after a
 * failed one.  Its error log is muted between tries.
 */
static int
port_start(struct droce_port *p)
{
	bool memif_client = port_is_memif_client(p);
	int memif_log = rte_log_register("pmd.net.memif");
	int level = memif_log >= 0 ? rte_log_get_level((uint32_t)memif_log) : -1;
	unsigned int ms = 0;
	int rc;

	for (;;) {
		bool last = !memif_client || ms >= MEMIF_CONNECT_WAIT_MS;

		if (!last && level >= 0)
			rte_log_set_level((uint32_t)memif_log, RTE_LOG_CRIT);
		rc = rte_eth_dev_start(p->eth_port);
		if (level >= 0)
			rte_log_set_level((uint32_t)memif_log, (uint32_t)level);
		if (rc == 0 || last)
			return rc;
		rte_delay_us_sleep(20000);
		ms += 20;
	}
}

bool
droce_port_link_up(struct droce_port *p)
{
	struct rte_eth_link link;

	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(p->eth_port, &link) != 0)
		return false;
	p->link_up = link.link_status == RTE_ETH_LINK_UP;
	p->link_speed = p->sw != NULL ? droce_switch_port_speed(p->sw) : link.link_speed;
	return p->link_up;
}

int
droce_port_redial(struct droce_port *p, void (*quiesce)(void))
{
	if (p == NULL || p->cfg == NULL || !port_is_memif_client(p))
		return 0;
	if (p->started && droce_port_link_up(p))
		return 0;
	if (droce_unix_socket_live(p->cfg->memif_socket) != 1)
		return 0; /* no server yet: nothing to dial */
	__atomic_store_n(&droce_port_redialing[p->index], true, __ATOMIC_RELEASE);
	quiesce(); /* no engine is inside a burst of the port any more */
	/* In the interrupt thread, which serves the memif control channel. */
	droce_call_in_intr_thread(redial_cb, p);
	if (!p->started) {
		PMD_LOG(DEBUG, "%s: memif client: dialling %s again failed", p->cfg->name,
			p->cfg->memif_socket);
		return -1; /* the bursts stay off until a start succeeds */
	}
	__atomic_store_n(&droce_port_redialing[p->index], false, __ATOMIC_RELEASE);
	PMD_LOG(INFO, "%s: memif client: server gone, dialled %s again", p->cfg->name,
		p->cfg->memif_socket);
	return 1;
}

/* Stops, closes and unplugs the port's ethdev (if it is still ours). */
static void
remove_device(struct droce_port *p)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	int rc;

	if (p->dev_name[0] == '\0' || !rte_eth_dev_is_valid_port(p->eth_port))
		return;
	if (p->started)
		rte_eth_dev_stop(p->eth_port);
	p->started = false;
	if (rte_eth_dev_get_name_by_port(p->eth_port, name) != 0 || strcmp(name, p->dev_name) != 0)
		return;
	/*
	 * Ring pairs are vdevs too (rte_eth_from_rings calls rte_vdev_init);
	 * their remove() releases the port and fails on a closed one, so they
	 * skip the close.
	 */
	if (p->cfg->kind != DROCE_PORT_KIND_RING && p->cfg->kind != DROCE_PORT_KIND_SWITCH)
		rte_eth_dev_close(p->eth_port);
	rc = rte_eal_hotplug_remove(p->cfg->kind == DROCE_PORT_KIND_PCI ? "pci" : "vdev", p->dev_name);
	if (rc != 0)
		PMD_LOG(DEBUG, "%s: removing %s: %s", p->cfg->name, p->dev_name, rte_strerror(-rc));
}

static void
remove_device_cb(void *arg)
{
	remove_device(arg);
}

/*
 * Each receive queue's loop inlet (port_io.c): a ring of its own, apart from
 * the PMD's (a ring pair's too, so what came over the link and what was
 * looped stay apart: cutting the link drops only the former), that
 * droce_port_rx_burst reads after the PMD once a loop points at the port.
 */
#define LOOP_RING_SIZE 1024

static int
loop_init(const char *src, struct droce_port *p)
{
	char name[RTE_RING_NAMESIZE];

	for (unsigned int q = 0; q < p->nb_rxq; q++) {
		snprintf(name, sizeof(name), "droce%u_lo%u_q%u", generation, p->index, q);
		p->lo[q] = rte_ring_create(name, LOOP_RING_SIZE, SOCKET_ID_ANY,
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (p->lo[q] == NULL)
			return PORT_ERR(src, p, rte_errno, "cannot create ring %s: %s", name,
					rte_strerror(rte_errno));
	}
	return 0;
}

static void
loop_fini(struct droce_port *p)
{
	void *m;

	for (unsigned int q = 0; q < DROCE_MAX_QUEUES; q++) {
		if (p->lo[q] == NULL)
			continue;
		while (rte_ring_dequeue(p->lo[q], &m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(p->lo[q]);
		p->lo[q] = NULL;
	}
}

static void
destroy_port(struct droce_port *p)
{
	unsigned int q;

	if (p->cfg == NULL)
		return;
	loop_fini(p);
	droce_port_mc_fini(p);
	droce_impair_port_fini(p);
	if (p->capture != NULL) {
		droce_capture_close(p->capture);
		p->capture = NULL;
	}
	/*
	 * Works around a race in DPDK's memif PMD (22.11): it serves its
	 * control channel in the EAL interrupt thread, and when the peer goes
	 * away that thread runs memif_disconnect() on the device with no
	 * synchronisation against the memif_disconnect() of rte_eth_dev_stop()
	 * or the close and release of the device in this thread.  With both
	 * sides of a link shutting down together, the two disconnects can free
	 * the regions twice ("EAL: Error: Invalid memory"), and the interrupt
	 * thread can still be freeing them after the device was released,
	 * while rte_eal_cleanup() runs: SIGSEGV in rte_free() under
	 * memif_free_regions().  Tearing the device down in the interrupt
	 * thread itself serialises the two; once it is stopped, no memif
	 * callback refers to the device any more.
	 */
	droce_wake_close(p);
	if (p->cfg->kind == DROCE_PORT_KIND_MEMIF) {
		droce_call_in_intr_thread(remove_device_cb, p);
		if (p->cfg->memif_role == DROCE_MEMIF_ROLE_SERVER)
			droce_residue_del_socket(p->cfg->memif_socket); /* the PMD removed it */
	} else
		remove_device(p);
	p->started = false;
	if (p->owns_rings) {
		for (q = 0; q < DROCE_MAX_QUEUES; q++) {
			rte_ring_free(p->rings[0][q]);
			rte_ring_free(p->rings[1][q]);
		}
	}
	memset(p, 0, sizeof(*p));
}

int
droce_ports_create(const struct droce_config *cfg, struct rte_mempool *mp)
{
	unsigned int i;
	int rc;

	memset(ports, 0, sizeof(ports));
	nb_ports = 0;
	generation++;
	for (i = 0; i < cfg->n_ports; i++) {
		struct droce_port *p = &ports[i];

		p->index = (uint16_t)i;
		p->cfg = &cfg->ports[i];
		p->ecn = cfg->ports[i].ecn;
		p->tclass = cfg->ports[i].tclass;
		p->pcp = cfg->ports[i].pcp;
		p->mp = mp;
		p->eth_port = RTE_MAX_ETHPORTS;
		p->n_gids = cfg->ports[i].n_gids;
		memcpy(p->gids, cfg->ports[i].gids, sizeof(p->gids));
		rte_spinlock_init(&p->neigh_lock);
		p->nd_announce = droce_port_has_ipv6(p); /* nd.c: an unsolicited NA once up */
		nb_ports = i + 1;
		if (create_device(cfg->source, p) < 0)
			goto fail;
		if (configure_port(cfg->source, p) < 0)
			goto fail;
		if (loop_init(cfg->source, p) < 0)
			goto fail;
		droce_wake_open(p); /* memif: best effort, none means a timer */
		if (droce_impair_port_init(p) < 0) {
			int e = errno;

			droce_err_set(e, "%s: %s", cfg->source, droce_last_error());
			goto fail;
		}
	}
	for (i = 0; i < nb_ports; i++)
		if (ports[i].cfg->kind == DROCE_PORT_KIND_RING)
			ports[i].ring_peer = &ports[ports[i].cfg->peer];
	/* the switch ports' bursts take the impaired path, which runs the switch */
	if (droce_switch_create(&cfg->sw, ports, nb_ports) < 0) {
		int e = errno;

		droce_err_set(e, "%s: %s", cfg->source, droce_last_error());
		goto fail;
	}
	for (i = 0; i < nb_ports; i++)
		if (ports[i].sw != NULL)
			__atomic_store_n(&ports[i].impair_used, true, __ATOMIC_RELEASE);
	/* Capture files list every ethdev port, so open them once all exist. */
	for (i = 0; i < nb_ports; i++) {
		struct droce_port *p = &ports[i];
		uint32_t snap = p->mtu + RTE_ETHER_HDR_LEN + 4 + (p->vlan ? 4 : 0);

		if (p->cfg->capture[0] == '\0')
			continue;
		p->capture = droce_capture_open(p->cfg->capture, p->eth_port, cfg->capture_mbufs,
						snap);
		if (p->capture == NULL) {
			int e = errno;

			droce_err_set(e, "%s: [%s] capture = %s: %s", cfg->source, p->cfg->name,
				      p->cfg->capture, droce_last_error());
			goto fail;
		}
	}
	for (i = 0; i < nb_ports; i++) {
		struct droce_port *p = &ports[i];

		rc = port_start(p);
		if (rc != 0) {
			PORT_ERR(cfg->source, p, -rc, "cannot start device %s: %s", p->dev_name,
				 rte_strerror(-rc));
			goto fail;
		}
		p->started = true;
		if (droce_port_has_ipv6(p))
			droce_port_mc_start(p); /* ND's groups through the PMD's filter */
	}
	for (i = 0; i < nb_ports; i++) {
		struct droce_port *p = &ports[i];
		char mac[RTE_ETHER_ADDR_FMT_SIZE];

		wait_link(p);
		rte_ether_format_addr(mac, sizeof(mac), &p->mac);
		PMD_LOG(INFO, "%s: %s %s (ethdev %u) mac %s mtu %u rxq %u txq %u link %s offloads 0x%x",
			p->cfg->name, droce_port_kind_name[p->cfg->kind], p->dev_name, p->eth_port,
			mac, p->mtu, p->nb_rxq, p->nb_txq, p->link_up ? "up" : "down",
			p->offloads);
	}
	return 0;

fail: {
	int e = errno;

	droce_ports_destroy();
	errno = e;
	return -1;
}
}

void
droce_ports_destroy(void)
{
	unsigned int i;

	/* the switch's frames first, then the ports (the second port of a
	 * ring pair first: the first owns the rings) */
	for (i = 0; i < nb_ports; i++)
		if (ports[i].started && ports[i].sw != NULL) {
			rte_eth_dev_stop(ports[i].eth_port);
			ports[i].started = false;
		}
	droce_switch_destroy();
	for (i = nb_ports; i-- > 0;)
		destroy_port(&ports[i]);
	nb_ports = 0;
}
