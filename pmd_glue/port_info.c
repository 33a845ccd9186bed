/* SPDX-License-Identifier: BSD-3-Clause
 * What a port is, read through functions by everyone outside pmd_glue and
 * the dataplane (struct droce_port is opaque to them).  Depends on the
 * struct only, no ethdev: verbs_api's test double links it too.
 */
#include <string.h>

#include "port_struct.h"

unsigned int
droce_port_index(const struct droce_port *p)
{
	return p->index;
}

const char *
droce_port_name(const struct droce_port *p)
{
	return p->dev_name;
}

const struct droce_port_config *
droce_port_cfg(const struct droce_port *p)
{
	return p->cfg;
}

const struct rte_ether_addr *
droce_port_mac(const struct droce_port *p)
{
	return &p->mac;
}

uint16_t
droce_port_mtu(const struct droce_port *p)
{
	return p->mtu;
}

uint32_t
droce_port_offloads(const struct droce_port *p)
{
	return p->offloads;
}

uint16_t
droce_port_vlan(const struct droce_port *p)
{
	return p->vlan;
}

uint32_t
droce_port_link_speed(const struct droce_port *p)
{
	return p->link_speed;
}

bool
droce_port_link_cached(const struct droce_port *p)
{
	return p->link_up;
}

bool
droce_port_link_is_set_up(const struct droce_port *p)
{
	return !__atomic_load_n(&p->link_set_down, __ATOMIC_RELAXED);
}

unsigned int
droce_port_gid_count(const struct droce_port *p)
{
	return p->n_gids;
}

uint16_t
droce_port_rx_queues(const struct droce_port *p)
{
	return p->nb_rxq;
}

bool
droce_port_capturing(const struct droce_port *p)
{
	return p->capture != NULL;
}

const uint8_t *
droce_port_gid(const struct droce_port *p, unsigned int idx)
{
	return idx < p->n_gids ? p->gids[idx] : NULL;
}

int
droce_port_find_gid(const struct droce_port *p, const uint8_t gid[16])
{
	for (unsigned int i = 0; i < p->n_gids; i++)
		if (memcmp(p->gids[i], gid, 16) == 0)
			return (int)i;
	return -1;
}

/* Loopback's switches (the loop itself is port_io.c's). */
void
droce_port_loop_enable(struct droce_port *p, struct droce_port *to)
{
	if (to != p)
		__atomic_fetch_or(&p->loop_peers, 1u << to->index, __ATOMIC_RELEASE);
	__atomic_store_n(&to->loop_in, true, __ATOMIC_RELEASE);
	__atomic_store_n(&p->loop_on, true, __ATOMIC_RELEASE);
}

bool
droce_port_ring_peers(const struct droce_port *p, const struct droce_port *q)
{
	return p->ring_peer != NULL && p->ring_peer == q;
}
