/* SPDX-License-Identifier: BSD-3-Clause
 * droce ports: ethdev creation per link kind, queues, offload discovery,
 * burst wrappers with capture and the impaired link (impair.c), and ARP for
 * the port's own IPv4 addresses.
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

RTE_LOG_REGISTER(droce_pmd_logtype, droce.pmd, INFO);

#define LINK_WAIT_MS 3000
/* How long a memif client waits for its server's socket to accept it. */
#define MEMIF_CONNECT_WAIT_MS 5000
#define CAPTURE_CHUNK 64

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

int
droce_port_find_gid(const struct droce_port *p, const uint8_t gid[16])
{
	unsigned int i;

	for (i = 0; i < p->n_gids; i++)
		if (memcmp(p->gids[i], gid, 16) == 0)
			return (int)i;
	return -1;
}

/* ---- device creation per kind ---- */

static int
create_ring_port(const char *src, struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	struct droce_port *peer = &ports[pc->peer];
	char name[RTE_RING_NAMESIZE];
	unsigned int q;
	int id;

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
	/* A generation number keeps names unique across stop/start. */
	snprintf(name, sizeof(name), "droce%u_p%u", generation, p->index);
	id = rte_eth_from_rings(name, p->rings[0], pc->rxq, p->rings[1], pc->txq, SOCKET_ID_ANY);
	if (id < 0)
		return PORT_ERR(src, p, rte_errno, "rte_eth_from_rings(%s) failed: %s", name,
				rte_strerror(rte_errno));
	p->eth_port = (uint16_t)id;
	/* The vdev (and ethdev) is called net_ring_<name>. */
	if (rte_eth_dev_get_name_by_port(p->eth_port, p->dev_name) != 0)
		snprintf(p->dev_name, sizeof(p->dev_name), "net_ring_%s", name);
	return 0;
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

/*
 * A memif server binds its socket path, which fails while the file exists.
 * A socket file nobody listens on is what a killed server leaves behind:
 * remove it.  One somebody listens on, or a file that is no socket, is an
 * error the user must resolve.
 */
static int
memif_server_path_prepare(const char *src, struct droce_port *p)
{
	const char *path = p->cfg->memif_socket;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (stat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return PORT_ERR(src, p, EEXIST, "socket = %s: exists and is not a socket", path);
	if (strlen(path) >= sizeof(sa.sun_path))
		return 0; /* the PMD reports the too long path */
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0)
		return 0;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0)
		return PORT_ERR(src, p, EADDRINUSE,
				"socket = %s: another memif server is listening on it", path);
	if (errno != ECONNREFUSED)
		return 0;
	if (unlink(path) == 0)
		PMD_LOG(NOTICE, "%s: [%s] removed stale memif socket %s", src, p->cfg->name, path);
	return 0;
}

static int
create_device(const char *src, struct droce_port *p)
{
	const struct droce_port_config *pc = p->cfg;
	char args[384];

	switch (pc->kind) {
	case DROCE_PORT_KIND_RING:
		return create_ring_port(src, p);
	case DROCE_PORT_KIND_MEMIF:
		snprintf(p->dev_name, sizeof(p->dev_name), "net_memif_droce%u_p%u", generation, p->index);
		snprintf(args, sizeof(args), "role=%s,socket=%s,socket-abstract=no,id=%u",
			 pc->memif_role == DROCE_MEMIF_ROLE_SERVER ? "server" : "client",
			 pc->memif_socket, pc->memif_id);
		if (pc->memif_role == DROCE_MEMIF_ROLE_SERVER &&
		    memif_server_path_prepare(src, p) != 0)
			return -1;
		return probe_vdev(src, p, args);
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
	if (pc->mtu > info.max_mtu || pc->mtu < info.min_mtu)
		return PORT_ERR(src, p, EINVAL, "mtu = %u: device %s allows %u..%u", pc->mtu,
				p->dev_name, info.min_mtu, info.max_mtu);

	p->offload_capa = discover_offloads(&info, &rx_off, &tx_off);
	p->offloads = p->offload_capa;
	p->max_rx_pktlen = info.max_rx_pktlen;

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = pc->mtu;
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

static void
wait_link(struct droce_port *p)
{
	struct rte_eth_link link;
	unsigned int ms;

	for (ms = 0; ms <= LINK_WAIT_MS; ms += 10) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(p->eth_port, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			break;
		rte_delay_us_sleep(10000);
	}
	p->link_up = link.link_status == RTE_ETH_LINK_UP;
	p->link_speed = link.link_speed;
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
	bool memif_client = p->cfg->kind == DROCE_PORT_KIND_MEMIF &&
			    p->cfg->memif_role == DROCE_MEMIF_ROLE_CLIENT;
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
	p->link_speed = link.link_speed;
	return p->link_up;
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
	if (p->cfg->kind != DROCE_PORT_KIND_RING)
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

static void
destroy_port(struct droce_port *p)
{
	unsigned int q;

	if (p->cfg == NULL)
		return;
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
	if (p->cfg->kind == DROCE_PORT_KIND_MEMIF)
		droce_call_in_intr_thread(remove_device_cb, p);
	else
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
		p->mp = mp;
		p->eth_port = RTE_MAX_ETHPORTS;
		p->n_gids = cfg->ports[i].n_gids;
		memcpy(p->gids, cfg->ports[i].gids, sizeof(p->gids));
		rte_spinlock_init(&p->arp_lock);
		nb_ports = i + 1;
		if (create_device(cfg->source, p) < 0)
			goto fail;
		if (configure_port(cfg->source, p) < 0)
			goto fail;
		if (droce_impair_port_init(p) < 0) {
			int e = errno;

			droce_err_set(e, "%s: %s", cfg->source, droce_last_error());
			goto fail;
		}
	}
	for (i = 0; i < nb_ports; i++)
		if (ports[i].cfg->kind == DROCE_PORT_KIND_RING)
			ports[i].ring_peer = &ports[ports[i].cfg->peer];
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

	/* Second port of a ring pair first: the first owns the rings. */
	for (i = nb_ports; i-- > 0;)
		destroy_port(&ports[i]);
	nb_ports = 0;
}

/* ---- burst wrappers ---- */

void
droce_port_rx_account_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts,
			 uint16_t got)
{
	struct droce_port_stats *st = &p->qstats[queue];
	uint64_t bytes = 0;
	uint16_t i;

	if (got == 0)
		return;
	for (i = 0; i < got; i++)
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	st->rx_pkts += got;
	st->rx_bytes += bytes;
	if (unlikely(p->capture != NULL))
		st->capture_drops += droce_capture_rx(p->capture, queue, pkts, got);
}

uint16_t
droce_port_rx_burst(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t got;

	if (unlikely(__atomic_load_n(&p->impair_used, __ATOMIC_RELAXED)))
		return droce_impair_rx_lc(p, queue, pkts, n);
	got = rte_eth_rx_burst(p->eth_port, queue, pkts, n);
	droce_port_rx_account_lc(p, queue, pkts, got);
	return got;
}

/* Sends to the PMD with counters and capture; does not count tx_full. */
uint16_t
droce_port_xmit_lc(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct droce_port_stats *st = &p->qstats[queue];
	uint16_t sent = 0, i;
	uint64_t bytes = 0;

	if (likely(p->capture == NULL)) {
		for (i = 0; i < n; i++)
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sent = rte_eth_tx_burst(p->eth_port, queue, pkts, n);
		if (unlikely(sent < n)) {
			for (i = sent; i < n; i++)
				bytes -= rte_pktmbuf_pkt_len(pkts[i]);
		}
	} else {
		while (sent < n) {
			struct rte_mbuf *copies[CAPTURE_CHUNK];
			uint16_t k = RTE_MIN((uint16_t)(n - sent), (uint16_t)CAPTURE_CHUNK), s;
			uint64_t kb = 0;

			droce_capture_tx_copy(p->capture, queue, pkts + sent, k, copies);
			for (i = 0; i < k; i++)
				kb += rte_pktmbuf_pkt_len(pkts[sent + i]);
			s = rte_eth_tx_burst(p->eth_port, queue, pkts + sent, k);
			for (i = s; i < k; i++)
				kb -= rte_pktmbuf_pkt_len(pkts[sent + i]);
			bytes += kb;
			st->capture_drops += droce_capture_tx_commit(p->capture, copies, k, s);
			sent += s;
			if (s < k)
				break;
		}
	}
	st->tx_pkts += sent;
	st->tx_bytes += bytes;
	return sent;
}

uint16_t
droce_port_tx_burst(struct droce_port *p, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent;

	if (unlikely(__atomic_load_n(&p->impair_used, __ATOMIC_RELAXED)))
		return droce_impair_tx_lc(p, queue, pkts, n);
	sent = droce_port_xmit_lc(p, queue, pkts, n);
	p->qstats[queue].tx_full += n - sent;
	return sent;
}

static void
impair_stats_add(struct droce_impair_stats *o, const struct droce_impair_stats *s)
{
	o->dropped += s->dropped;
	o->duplicated += s->duplicated;
	o->reordered += s->reordered;
	o->delayed += s->delayed;
	o->corrupted += s->corrupted;
	o->link_down += s->link_down;
	o->nomem += s->nomem;
	o->overflow += s->overflow;
}

void
droce_port_stats_get(const struct droce_port *p, struct droce_port_stats *out)
{
	unsigned int q;

	memset(out, 0, sizeof(*out));
	for (q = 0; q < DROCE_MAX_QUEUES; q++) {
		const struct droce_port_stats *s = &p->qstats[q];

		out->rx_pkts += s->rx_pkts;
		out->rx_bytes += s->rx_bytes;
		out->tx_pkts += s->tx_pkts;
		out->tx_bytes += s->tx_bytes;
		out->tx_full += s->tx_full;
		out->arp_requests_rx += s->arp_requests_rx;
		out->arp_replies_rx += s->arp_replies_rx;
		out->arp_replies_tx += s->arp_replies_tx;
		out->arp_requests_tx += s->arp_requests_tx;
		out->arp_bad += s->arp_bad;
		out->capture_drops += s->capture_drops;
		impair_stats_add(&out->impair_rx, &s->impair_rx);
		impair_stats_add(&out->impair_tx, &s->impair_tx);
	}
}

int
droce_port_stats_print(const struct droce_port *p, FILE *f)
{
	struct droce_port_stats s;
	struct rte_eth_stats es;

	droce_port_stats_get(p, &s);
	fprintf(f, "%s: rx %" PRIu64 " frames %" PRIu64 " bytes, tx %" PRIu64 " frames %" PRIu64
		   " bytes, tx ring full %" PRIu64 ", arp rx req %" PRIu64 " rep %" PRIu64
		   " bad %" PRIu64 ", arp tx req %" PRIu64 " rep %" PRIu64 ", capture lost %" PRIu64 "\n",
		p->cfg->name, s.rx_pkts, s.rx_bytes, s.tx_pkts, s.tx_bytes, s.tx_full,
		s.arp_requests_rx, s.arp_replies_rx, s.arp_bad, s.arp_requests_tx, s.arp_replies_tx,
		s.capture_drops);
	if (rte_eth_stats_get(p->eth_port, &es) == 0)
		fprintf(f, "%s: pmd ipackets %" PRIu64 " opackets %" PRIu64 " imissed %" PRIu64
			   " ierrors %" PRIu64 " oerrors %" PRIu64 " rx_nombuf %" PRIu64 "\n",
			p->cfg->name, es.ipackets, es.opackets, es.imissed, es.ierrors, es.oerrors,
			es.rx_nombuf);
	droce_impair_print(p, &s, f);
	return 0;
}

/* ---- ARP ---- */

void
droce_port_arp_learn(struct droce_port *p, rte_be32_t ip, const struct rte_ether_addr *mac)
{
	struct droce_arp_entry *slot = NULL;
	unsigned int i;

	if (ip == 0 || !rte_is_valid_assigned_ether_addr(mac))
		return;
	rte_spinlock_lock(&p->arp_lock);
	for (i = 0; i < DROCE_ARP_TABLE_SIZE; i++) {
		struct droce_arp_entry *e = &p->arp[i];

		if (e->ip == ip) {
			slot = e;
			break;
		}
		if (slot == NULL || (slot->ip != 0 && (e->ip == 0 || e->tsc < slot->tsc)))
			slot = e;
	}
	slot->ip = ip;
	slot->mac = *mac;
	slot->tsc = rte_get_tsc_cycles();
	rte_spinlock_unlock(&p->arp_lock);
}

int
droce_port_arp_lookup(struct droce_port *p, rte_be32_t ip, struct rte_ether_addr *mac)
{
	unsigned int i;
	int rc = -1;

	rte_spinlock_lock(&p->arp_lock);
	for (i = 0; i < DROCE_ARP_TABLE_SIZE; i++) {
		if (p->arp[i].ip == ip && ip != 0) {
			*mac = p->arp[i].mac;
			rc = 0;
			break;
		}
	}
	rte_spinlock_unlock(&p->arp_lock);
	if (rc < 0)
		errno = ENOENT;
	return rc;
}

static bool
arp_known(struct droce_port *p, rte_be32_t ip)
{
	struct rte_ether_addr mac;

	return droce_port_arp_lookup(p, ip, &mac) == 0;
}

/* True when @ip (network order) is one of the port's IPv4 GIDs. */
static bool
own_ipv4(const struct droce_port *p, rte_be32_t ip)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	unsigned int i;

	for (i = 0; i < p->n_gids; i++)
		if (memcmp(p->gids[i], v4mapped, 12) == 0 && memcmp(&p->gids[i][12], &ip, 4) == 0)
			return true;
	return false;
}

static bool
first_ipv4(const struct droce_port *p, rte_be32_t *ip)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	unsigned int i;

	for (i = 0; i < p->n_gids; i++) {
		if (memcmp(p->gids[i], v4mapped, 12) == 0) {
			memcpy(ip, &p->gids[i][12], 4);
			return true;
		}
	}
	return false;
}

bool
droce_port_handle_frame(struct droce_port *p, uint16_t queue, struct rte_mbuf *m)
{
	struct droce_port_stats *st = &p->qstats[queue];
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	uint32_t off = sizeof(struct rte_ether_hdr);
	uint16_t et;
	rte_be32_t sip, tip;

	if (rte_pktmbuf_data_len(m) < off)
		return false;
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	et = rte_be_to_cpu_16(eth->ether_type);
	if (et == RTE_ETHER_TYPE_VLAN) {
		const struct rte_vlan_hdr *vh;

		if (rte_pktmbuf_data_len(m) < off + sizeof(*vh))
			return false;
		vh = rte_pktmbuf_mtod_offset(m, const struct rte_vlan_hdr *, off);
		et = rte_be_to_cpu_16(vh->eth_proto);
		off += sizeof(*vh);
	}
	if (et != RTE_ETHER_TYPE_ARP)
		return false;

	if (rte_pktmbuf_data_len(m) < off + sizeof(*arp))
		goto bad;
	arp = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, off);
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4)
		goto bad;
	sip = arp->arp_data.arp_sip;
	tip = arp->arp_data.arp_tip;

	switch (rte_be_to_cpu_16(arp->arp_opcode)) {
	case RTE_ARP_OP_REQUEST:
		st->arp_requests_rx++;
		if (!own_ipv4(p, tip)) {
			/* Not for us: refresh an entry we already have, learn nothing new. */
			if (arp_known(p, sip))
				droce_port_arp_learn(p, sip, &arp->arp_data.arp_sha);
			rte_pktmbuf_free(m);
			return true;
		}
		droce_port_arp_learn(p, sip, &arp->arp_data.arp_sha);
		/* Turn the request into the reply in place. */
		arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
		arp->arp_data.arp_tha = arp->arp_data.arp_sha;
		arp->arp_data.arp_tip = sip;
		arp->arp_data.arp_sha = p->mac;
		arp->arp_data.arp_sip = tip;
		eth->dst_addr = eth->src_addr;
		eth->src_addr = p->mac;
		m->ol_flags = 0;
		if (droce_port_tx_burst(p, queue, &m, 1) == 1)
			st->arp_replies_tx++;
		else
			rte_pktmbuf_free(m);
		return true;
	case RTE_ARP_OP_REPLY:
		st->arp_replies_rx++;
		if (own_ipv4(p, tip) || arp_known(p, sip))
			droce_port_arp_learn(p, sip, &arp->arp_data.arp_sha);
		rte_pktmbuf_free(m);
		return true;
	default:
		break;
	}
bad:
	st->arp_bad++;
	rte_pktmbuf_free(m);
	return true;
}

int
droce_port_arp_request(struct droce_port *p, uint16_t queue, rte_be32_t ip)
{
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	struct rte_mbuf *m;
	rte_be32_t sip;
	uint32_t off = sizeof(*eth), len;
	char *d;

	if (queue >= p->nb_txq) {
		errno = EINVAL;
		return -1;
	}
	if (!first_ipv4(p, &sip)) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	m = rte_pktmbuf_alloc(p->mp);
	if (m == NULL) {
		errno = ENOMEM;
		return -1;
	}
	len = off + (p->vlan ? sizeof(struct rte_vlan_hdr) : 0) + sizeof(*arp);
	len = RTE_MAX(len, (uint32_t)RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	d = rte_pktmbuf_append(m, (uint16_t)len);
	if (d == NULL) {
		rte_pktmbuf_free(m);
		errno = ENOMEM;
		return -1;
	}
	memset(d, 0, len);
	eth = (struct rte_ether_hdr *)d;
	memset(&eth->dst_addr, 0xff, sizeof(eth->dst_addr));
	eth->src_addr = p->mac;
	if (p->vlan) {
		struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(eth + 1);

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16(p->vlan);
		vh->eth_proto = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		off += sizeof(*vh);
	} else {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	}
	arp = (struct rte_arp_hdr *)(d + off);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = p->mac;
	arp->arp_data.arp_sip = sip;
	arp->arp_data.arp_tip = ip;
	if (droce_port_tx_burst(p, queue, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		errno = ENOBUFS;
		return -1;
	}
	p->qstats[queue].arp_requests_tx++;
	return 0;
}
