/* SPDX-License-Identifier: BSD-3-Clause
 * The switch model's links to other processes (issue 25 section 5): with
 * [switch] memif_links = N and memif_socket = PATH, the switch serves N
 * memif interfaces (role server, ids 0..N-1) on PATH.  Each is a switch
 * port after the local ones (switch.c reads and writes its ethdev itself);
 * another process's memif port with role = client, socket = PATH and
 * id = k is then a port of this switch, so an incast can cross processes.
 *
 * Only the devices' life is here: probe, configure (one queue each way,
 * droce's mempool), start; stop and unplug in the EAL interrupt thread (as
 * port.c does for memif ports: DPDK 22.11's memif serves its control
 * channel there and races a disconnect done elsewhere).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "internal.h"
#include "residue.h"
#include "switch.h"

#define LINK_DESC 256 /* frames each way in the memif rings */

static unsigned int link_generation;

struct link_dev {
	uint16_t eth;
	char name[RTE_ETH_NAME_MAX_LEN];
};

static int
link_setup(uint16_t eth, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(eth, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(eth, 0, LINK_DESC, rte_eth_dev_socket_id(eth), NULL, mp);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(eth, 0, LINK_DESC, rte_eth_dev_socket_id(eth), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(eth);
	return rc;
}

int
droce_switch_link_open(const struct droce_switch_config *c, unsigned int k,
		       struct rte_mempool *mp, uint16_t *eth)
{
	char name[RTE_ETH_NAME_MAX_LEN], args[384];
	uint16_t id;
	int rc;

	if (k == 0) {
		link_generation++;
		if (droce_memif_socket_prepare("[switch] memif_socket", c->memif_socket) != 0)
			return -1;
	}
	snprintf(name, sizeof(name), "net_memif_droce_sw%u_l%u", link_generation, k);
	snprintf(args, sizeof(args), "%s,role=server,socket=%s,socket-abstract=no,id=%u", name,
		 c->memif_socket, k);
	rc = rte_dev_probe(args);
	if (rc != 0)
		return droce_err_set(-rc, "[switch] memif link %u (socket %s): cannot create %s: %s",
				     k, c->memif_socket, name, rte_strerror(-rc));
	if (k == 0)
		droce_residue_add_socket(c->memif_socket); /* the PMD bound it */
	if (rte_eth_dev_get_port_by_name(name, &id) != 0) {
		rte_eal_hotplug_remove("vdev", name);
		return droce_err_set(ENODEV, "[switch] memif link %u: %s has no ethdev port", k, name);
	}
	rc = link_setup(id, mp);
	if (rc != 0) {
		rte_eth_dev_close(id);
		rte_eal_hotplug_remove("vdev", name);
		return droce_err_set(-rc, "[switch] memif link %u: cannot set %s up: %s", k, name,
				     rte_strerror(-rc));
	}
	*eth = id;
	return 0;
}

static void
link_remove_cb(void *arg)
{
	struct link_dev *d = arg;

	rte_eth_dev_stop(d->eth);
	rte_eth_dev_close(d->eth);
	if (rte_eal_hotplug_remove("vdev", d->name) != 0)
		PMD_LOG(DEBUG, "[switch] removing %s failed", d->name);
}

void
droce_switch_link_close(const struct droce_switch_config *c, unsigned int k, uint16_t eth)
{
	struct link_dev d = { .eth = eth };

	if (!rte_eth_dev_is_valid_port(eth) || rte_eth_dev_get_name_by_port(eth, d.name) != 0)
		return;
	droce_call_in_intr_thread(link_remove_cb, &d);
	if (k == 0)
		droce_residue_del_socket(c->memif_socket); /* the PMD removed it */
}
