/* SPDX-License-Identifier: BSD-3-Clause
 * UD multicast: the QPs attached to each group of each port.
 *
 * Engines read a port's members as one immutable snapshot
 * (droce_mcast_tab[], NULL while nobody on the port is attached): entries
 * (group GID, QPN, engine) sorted by GID, so a group's members are
 * contiguous.  Attach and detach change the list under a mutex, publish a
 * new snapshot and wait for every engine's quiescent point
 * (droce_dp_synchronize) before freeing the old one, as flow.c's rules.
 * Engines look the members' QPs up by QPN in their own table, so a snapshot
 * holds no pointer; droce_qp_destroy detaches a QP from every group first.
 *
 * The port's group membership (its multicast filter and IGMP / MLD, the
 * port's side: pmd_glue/mcast.c) is counted per attachment: the first
 * attachment to a group on a port sends the membership report, the last
 * detachment the leave, each through engine 0 (droce_dp_inject), and each
 * again once when due (droce_mcast_tick, the port monitor's).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "internal.h"
#include "pmd_glue/port.h"
#include "pmd_glue/stats_internal.h"

struct droce_mcast_tab *_Atomic droce_mcast_tab[DROCE_MAX_PORTS];

static pthread_mutex_t mc_lock = PTHREAD_MUTEX_INITIALIZER;
/* the members of each port (under mc_lock), any order */
static struct droce_mcast_ent *mc_list[DROCE_MAX_PORTS];
static unsigned int mc_n[DROCE_MAX_PORTS], mc_cap[DROCE_MAX_PORTS];

static int
ent_cmp(const void *a, const void *b)
{
	const struct droce_mcast_ent *x = a, *y = b;
	int c = memcmp(x->gid, y->gid, 16);

	return c != 0 ? c : (x->qpn > y->qpn) - (x->qpn < y->qpn);
}

/* Publishes a snapshot of @port's list and frees the old one when no engine
 * can see it any more (lock held).  0 or ENOMEM. */
static int
republish(unsigned int port)
{
	struct droce_mcast_tab *t = NULL, *old;
	unsigned int n = mc_n[port];

	if (n > 0) {
		t = malloc(sizeof(*t) + n * sizeof(t->e[0]));
		if (t == NULL)
			return ENOMEM;
		t->n = n;
		memcpy(t->e, mc_list[port], n * sizeof(t->e[0]));
		qsort(t->e, n, sizeof(t->e[0]), ent_cmp);
	}
	old = atomic_exchange_explicit(&droce_mcast_tab[port], t, memory_order_acq_rel);
	droce_dp_synchronize();
	free(old);
	return 0;
}

/* Sends @port's membership report (@join) or leave of @gid. */
static void
report(unsigned int port, const uint8_t gid[16], bool join)
{
	struct droce_port *p = droce_port_get(port);
	uint8_t frame[128];
	size_t len;

	if (p == NULL)
		return;
	len = droce_port_mc_report(p, gid, join, frame, sizeof(frame));
	if (len == 0)
		return; /* nothing to send (IGMPv1 has no leave) */
	if (droce_dp_inject(0, port, DROCE_INJECT_TX, frame, (uint32_t)len) != 0)
		DP_LOG(WARNING, "port%u: no %s report sent", port, join ? "membership" : "leave");
}

void
droce_mcast_tick(void)
{
	/* a foreign thread (the port monitor): the ports and engines must not
	 * be freed under it (droce_stop takes the lock exclusively) */
	droce_runtime_hold();
	for (unsigned int port = 0; port < droce_port_count(); port++) {
		uint8_t gids[8][16];
		bool join[8];
		unsigned int n = droce_port_mc_due(port, gids, join, 8);

		for (unsigned int i = 0; i < n; i++)
			report(port, gids[i], join[i]);
	}
	droce_runtime_release();
}

static int
find(unsigned int port, const uint8_t gid[16], uint32_t qpn)
{
	for (unsigned int i = 0; i < mc_n[port]; i++)
		if (mc_list[port][i].qpn == qpn && memcmp(mc_list[port][i].gid, gid, 16) == 0)
			return (int)i;
	return -1;
}

static unsigned int
group_size_locked(unsigned int port, const uint8_t gid[16])
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < mc_n[port]; i++)
		n += memcmp(mc_list[port][i].gid, gid, 16) == 0;
	return n;
}

unsigned int
droce_mcast_group_members(unsigned int port, const uint8_t gid[16])
{
	unsigned int n;

	if (port >= DROCE_MAX_PORTS)
		return 0;
	pthread_mutex_lock(&mc_lock);
	n = group_size_locked(port, gid);
	pthread_mutex_unlock(&mc_lock);
	return n;
}

int
droce_mcast_attach(struct droce_qp *qp, const uint8_t gid[16])
{
	unsigned int port;
	bool first = false;
	int rc;

	if (qp == NULL || gid == NULL || qp->type != DROCE_QPT_UD || !droce_gid_is_mcast(gid))
		return EINVAL;
	port = qp->port_index;
	pthread_mutex_lock(&mc_lock);
	if (find(port, gid, qp->qpn) >= 0) {
		pthread_mutex_unlock(&mc_lock);
		return 0; /* attached already: nothing changes (as the kernel's uverbs) */
	}
	if (group_size_locked(port, gid) >= DROCE_MCAST_MAX_QP_ATTACH) {
		pthread_mutex_unlock(&mc_lock);
		return ENOMEM; /* max_mcast_qp_attach, as rxe answers */
	}
	if (mc_n[port] == mc_cap[port]) {
		unsigned int cap = mc_cap[port] ? 2 * mc_cap[port] : 16;
		struct droce_mcast_ent *l = realloc(mc_list[port], cap * sizeof(*l));

		if (l == NULL) {
			pthread_mutex_unlock(&mc_lock);
			return ENOMEM;
		}
		mc_list[port] = l;
		mc_cap[port] = cap;
	}
	rc = droce_port_mc_join(qp->port, gid, &first);
	if (rc != 0) {
		pthread_mutex_unlock(&mc_lock);
		return rc;
	}
	memcpy(mc_list[port][mc_n[port]].gid, gid, 16);
	mc_list[port][mc_n[port]].qpn = qp->qpn;
	mc_list[port][mc_n[port]].engine = (uint16_t)qp->eng->id;
	mc_n[port]++;
	rc = republish(port);
	if (rc != 0) {
		bool last;

		mc_n[port]--;
		droce_port_mc_leave(qp->port, gid, &last);
		pthread_mutex_unlock(&mc_lock);
		return rc;
	}
	pthread_mutex_unlock(&mc_lock);
	if (first)
		report(port, gid, true);
	return 0;
}

/* Removes entry @i of @port (lock held); true when it was the group's last. */
static bool
remove_locked(unsigned int port, int i, const struct droce_qp *qp)
{
	uint8_t gid[16];
	bool last = false;

	memcpy(gid, mc_list[port][i].gid, 16);
	mc_list[port][i] = mc_list[port][--mc_n[port]];
	if (republish(port) != 0) {
		/* no memory for the smaller snapshot: unpublish the port's
		 * members rather than leave the engines delivering to it */
		struct droce_mcast_tab *old = atomic_exchange_explicit(&droce_mcast_tab[port], NULL,
								       memory_order_acq_rel);

		droce_dp_synchronize();
		free(old);
	}
	droce_port_mc_leave(qp->port, gid, &last);
	return last;
}

int
droce_mcast_detach(struct droce_qp *qp, const uint8_t gid[16])
{
	unsigned int port;
	bool last;
	int i;

	if (qp == NULL || gid == NULL || qp->type != DROCE_QPT_UD || !droce_gid_is_mcast(gid))
		return EINVAL;
	port = qp->port_index;
	droce_qp_ud_send_posted(qp); /* the leave follows what was posted to the group */
	pthread_mutex_lock(&mc_lock);
	i = find(port, gid, qp->qpn);
	if (i < 0) {
		pthread_mutex_unlock(&mc_lock);
		return ENOENT;
	}
	last = remove_locked(port, i, qp);
	pthread_mutex_unlock(&mc_lock);
	if (last)
		report(port, gid, false);
	return 0;
}

void
droce_mcast_detach_qp(struct droce_qp *qp)
{
	unsigned int port = qp->port_index;
	uint8_t left[64][16];
	unsigned int nleft = 0;

	if (qp->type != DROCE_QPT_UD || port >= DROCE_MAX_PORTS)
		return;
	pthread_mutex_lock(&mc_lock);
	for (unsigned int i = 0; i < mc_n[port];) {
		if (mc_list[port][i].qpn != qp->qpn) {
			i++;
			continue;
		}
		uint8_t gid[16];

		memcpy(gid, mc_list[port][i].gid, 16);
		if (remove_locked(port, (int)i, qp) && nleft < 64)
			memcpy(left[nleft++], gid, 16);
	}
	pthread_mutex_unlock(&mc_lock);
	for (unsigned int k = 0; k < nleft; k++)
		report(port, left[k], false);
}
