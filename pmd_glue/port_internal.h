/* SPDX-License-Identifier: BSD-3-Clause
 * Port set management, called by the runtime only.
 */
#ifndef DROCE_PMD_GLUE_PORT_INTERNAL_H
#define DROCE_PMD_GLUE_PORT_INTERNAL_H

#include <rte_mempool.h>

#include <droce/config.h>

#include "port_struct.h"

/* Creates, configures and starts every port of @cfg (kept by reference). */
int droce_ports_create(const struct droce_config *cfg, struct rte_mempool *mp);

/* Stops and removes all ports, closing their captures. */
void droce_ports_destroy(void);
/* The started port's multicast filter: its groups and neighbour
 * discovery's (mcast.c). */
void droce_port_mc_start(struct droce_port *p);
/* Forgets port @p's multicast groups and pending reports (mcast.c). */
void droce_port_mc_fini(struct droce_port *p);

/* A control frame (ARP, ND) of @p for @queue: the Ethernet header to @dmac
 * with @ethertype (VLAN-tagged on a VLAN port), then @l3_len zero bytes
 * (padded to Ethernet's minimum), that part in *@l3; NULL and errno
 * (EINVAL: no such queue, ENOMEM) on failure (arp.c). */
struct rte_mbuf *droce_port_ctl_frame(struct droce_port *p, uint16_t queue,
				      const struct rte_ether_addr *dmac, uint16_t ethertype,
				      uint32_t l3_len, void **l3);
/* Sends it on @queue: 0, or -1 and ENOBUFS (the frame freed). */
int droce_port_ctl_send(struct droce_port *p, uint16_t queue, struct rte_mbuf *m);

/* By port index: the device is being restarted (droce_port_redial), its
 * bursts return nothing (port_io.c).  Release / acquire. */
extern bool droce_port_redialing[DROCE_MAX_PORTS];

#endif
