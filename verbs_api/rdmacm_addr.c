/* SPDX-License-Identifier: BSD-3-Clause
 * rdma_cm addresses: the devices rdma_cm ids use (one shared ibv_context and
 * PD per droce port, opened once, as librdmacm does), the IPv4 / IPv6
 * addresses of droce's ports (their GID tables), routing a destination to
 * the port whose subnet holds it, port bindings per port space (ephemeral
 * ports, EADDRINUSE, the CM listener of each service ID), and
 * rdma_getaddrinfo.
 *
 * Threading: any thread.  Device opening is serialised by dev_lock; the
 * binding table is guarded by droce_rcm_lock (functions named _locked).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <rte_random.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "internal.h"
#include "rdmacm.h"

pthread_mutex_t droce_rcm_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
} *devs;
static unsigned int n_devs;
static TAILQ_HEAD(, droce_rcm_bind) binds = TAILQ_HEAD_INITIALIZER(binds);

int
droce_rcm_init(void)
{
	if (droce_verbs_runtime_up() != 0)
		return -1;
	return droce_cm_start();
}

/* Lock held: the device table sized for the running config. */
static int
devs_ready(void)
{
	unsigned int n = droce_port_count();

	if (devs != NULL && n_devs == n)
		return 0;
	if (devs != NULL) {
		/* the runtime was restarted with another config (tests):
		 * contexts of the old one are gone with it */
		free(devs);
		devs = NULL;
	}
	devs = calloc(n ? n : 1, sizeof(*devs));
	if (devs == NULL) {
		errno = ENOMEM;
		return -1;
	}
	n_devs = n;
	return 0;
}

static int
dev_open_locked(unsigned int port)
{
	struct ibv_device **list;
	int n = 0;

	if (devs[port].ctx != NULL)
		return 0;
	list = ibv_get_device_list(&n);
	if (list == NULL)
		return -1;
	for (int i = 0; i < n; i++) {
		if (ibv_get_device_index(list[i]) == (int)port) {
			devs[port].ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	if (devs[port].ctx == NULL) {
		errno = ENODEV;
		return -1;
	}
	devs[port].pd = ibv_alloc_pd(devs[port].ctx);
	if (devs[port].pd == NULL) {
		ibv_close_device(devs[port].ctx);
		devs[port].ctx = NULL;
		return -1;
	}
	return 0;
}

int
droce_rcm_dev_get(unsigned int port, struct ibv_context **ctx, struct ibv_pd **pd)
{
	int rc = -1;

	if (droce_rcm_init() != 0)
		return -1;
	pthread_mutex_lock(&dev_lock);
	if (devs_ready() != 0)
		goto out;
	if (port >= n_devs) {
		errno = ENODEV;
		goto out;
	}
	if (dev_open_locked(port) != 0)
		goto out;
	*ctx = devs[port].ctx;
	if (pd)
		*pd = devs[port].pd;
	rc = 0;
out:
	pthread_mutex_unlock(&dev_lock);
	return rc;
}

uint8_t
droce_rcm_max_rd_atomic(void)
{
	return DROCE_DP_MAX_RD_ATOMIC;
}

struct ibv_context **
rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = NULL;
	unsigned int n = 0;

	if (num_devices)
		*num_devices = 0;
	if (droce_rcm_init() != 0)
		return NULL;
	pthread_mutex_lock(&dev_lock);
	if (devs_ready() != 0)
		goto out;
	list = calloc(n_devs + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < n_devs; i++)
		if (dev_open_locked(i) == 0)
			list[n++] = devs[i].ctx;
	if (num_devices)
		*num_devices = (int)n;
out:
	pthread_mutex_unlock(&dev_lock);
	return list;
}

void
rdma_free_devices(struct ibv_context **list)
{
	free(list); /* the contexts stay open, as librdmacm keeps them */
}

/* ---- sockaddrs and GIDs ---- */

static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool
droce_rcm_sa_to_gid(const struct sockaddr *sa, uint8_t gid[16])
{
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		memcpy(gid, v4_mapped, 12);
		memcpy(gid + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(gid, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

void
droce_rcm_gid_to_sa(const uint8_t gid[16], uint16_t port, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (memcmp(gid, v4_mapped, 12) == 0) {
		struct sockaddr_in *in = (struct sockaddr_in *)out;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, gid + 12, 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, gid, 16);
	}
}

bool
droce_rcm_sa_is_any(const struct sockaddr *sa)
{
	if (droce_rcm_sa_is_loopback(sa))
		return true;
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool
droce_rcm_sa_is_loopback(const struct sockaddr *sa)
{
	const struct in6_addr *a6;

	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family != AF_INET6)
		return false;
	a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	return IN6_IS_ADDR_LOOPBACK(a6); /* ipv6_addr_loopback: ::1 only */
}

socklen_t
droce_rcm_sa_len(const struct sockaddr *sa)
{
	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

uint16_t
droce_rcm_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void
droce_rcm_sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

int
droce_rcm_port_of_gid(const uint8_t gid[16], int *gid_index)
{
	unsigned int n = droce_port_count();

	for (unsigned int i = 0; i < n; i++) {
		struct droce_port *p = droce_port_get(i);
		int g = p ? droce_port_find_gid(p, gid) : -1;

		if (g >= 0) {
			if (gid_index)
				*gid_index = g;
			return (int)i;
		}
	}
	return -1;
}

/* Same subnet: /24 for IPv4, /64 for IPv6 (droce's config has no prefix
 * lengths; the README says so). */
static bool
same_subnet(const uint8_t a[16], const uint8_t b[16])
{
	bool a4 = memcmp(a, v4_mapped, 12) == 0, b4 = memcmp(b, v4_mapped, 12) == 0;

	if (a4 != b4)
		return false;
	return a4 ? memcmp(a + 12, b + 12, 3) == 0 : memcmp(a, b, 8) == 0;
}

int
droce_rcm_route(const uint8_t dgid[16], int bound_port)
{
	unsigned int n = droce_port_count();
	int local = -1;

	if (bound_port >= 0)
		return bound_port < (int)n ? bound_port : -1;
	if (droce_gid_is_mcast(dgid)) {
		/* a group: the first port with an address of its family (the
		 * kernel's route to a group is the default interface) */
		for (unsigned int i = 0; i < n; i++) {
			struct droce_port *p = droce_port_get(i);

			for (unsigned int g = 0; p != NULL && g < droce_port_gid_count(p); g++)
				if (droce_gid_is_v4mapped(droce_port_gid(p, g)) ==
				    droce_gid_is_v4mapped(dgid))
					return (int)i;
		}
		return -1;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct droce_port *p = droce_port_get(i);

		if (p == NULL)
			continue;
		for (unsigned int g = 0; g < droce_port_gid_count(p); g++) {
			if (!same_subnet(droce_port_gid(p, g), dgid))
				continue;
			/* a port does not reach its own address over its link:
			 * prefer another port on the subnet (the ring pair's peer) */
			if (memcmp(droce_port_gid(p, g), dgid, 16) == 0 || droce_port_find_gid(p, dgid) >= 0) {
				if (local < 0)
					local = (int)i;
				continue;
			}
			return (int)i;
		}
	}
	return local;
}

/* ---- bindings ---- */

static struct droce_rcm_bind *
bind_find(uint16_t ps, uint16_t port)
{
	struct droce_rcm_bind *b;

	TAILQ_FOREACH(b, &binds, link)
		if (b->ps == ps && b->port == port)
			return b;
	return NULL;
}

static bool
addr_overlap(const struct sockaddr *a, const struct sockaddr *b)
{
	uint8_t ga[16], gb[16];

	if (droce_rcm_sa_is_any(a) || droce_rcm_sa_is_any(b))
		return true;
	droce_rcm_sa_to_gid(a, ga);
	droce_rcm_sa_to_gid(b, gb);
	return memcmp(ga, gb, 16) == 0;
}

static bool
port_free(uint16_t ps, uint16_t port, const struct droce_rcm_id *p, const struct sockaddr *addr)
{
	struct droce_rcm_bind *b = bind_find(ps, port);
	struct droce_rcm_id *o;

	if (b == NULL)
		return true;
	TAILQ_FOREACH(o, &b->ids, bind_link) {
		if (!addr_overlap(&o->id.route.addr.src_addr, addr))
			continue;
		/* like SO_REUSEADDR: shared while neither listens */
		if (p->reuseaddr && o->reuseaddr && o->state != DROCE_RCM_LISTEN)
			continue;
		return false;
	}
	return true;
}

int
droce_rcm_bind_locked(struct droce_rcm_id *p, const struct sockaddr *addr)
{
	uint16_t port = droce_rcm_sa_port(addr);
	uint16_t ps = (uint16_t)p->id.ps;
	struct droce_rcm_bind *b;
	uint8_t gid[16];
	int dev = -1;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return EAFNOSUPPORT;
	if (!droce_rcm_sa_is_any(addr)) {
		droce_rcm_sa_to_gid(addr, gid);
		dev = droce_rcm_port_of_gid(gid, NULL);
		if (dev < 0)
			return EADDRNOTAVAIL;
	}
	if (port == 0) {
		unsigned int range = DROCE_RCM_EPHEMERAL_HI - DROCE_RCM_EPHEMERAL_LO + 1;
		unsigned int start = (unsigned int)(rte_rand() % range), i;

		for (i = 0; i < range; i++) {
			uint16_t cand = (uint16_t)(DROCE_RCM_EPHEMERAL_LO + (start + i) % range);

			if (port_free(ps, cand, p, addr)) {
				port = cand;
				break;
			}
		}
		if (i == range)
			return EADDRINUSE;
	} else if (!port_free(ps, port, p, addr)) {
		return EADDRINUSE;
	}
	b = bind_find(ps, port);
	if (b == NULL) {
		b = calloc(1, sizeof(*b));
		if (b == NULL)
			return ENOMEM;
		b->ps = ps;
		b->port = port;
		TAILQ_INIT(&b->ids);
		TAILQ_INSERT_TAIL(&binds, b, link);
	}
	memset(&p->id.route.addr.src_storage, 0, sizeof(p->id.route.addr.src_storage));
	memcpy(&p->id.route.addr.src_storage, addr, droce_rcm_sa_len(addr));
	droce_rcm_sa_set_port(&p->id.route.addr.src_addr, port);
	p->bind = b;
	p->bound = true;
	TAILQ_INSERT_TAIL(&b->ids, p, bind_link);
	if (dev >= 0) {
		p->port = dev;
		memcpy(p->id.route.addr.addr.ibaddr.sgid.raw, gid, 16);
	}
	return 0;
}

void
droce_rcm_unbind_locked(struct droce_rcm_id *p, struct droce_cm_listener **unlisten,
			struct droce_rcm_bind **free_bind)
{
	struct droce_rcm_bind *b = p->bind;
	struct droce_rcm_id *o;
	bool listening = false;

	*unlisten = NULL;
	*free_bind = NULL;
	if (b == NULL)
		return;
	TAILQ_REMOVE(&b->ids, p, bind_link);
	p->bind = NULL;
	p->bound = false;
	TAILQ_FOREACH(o, &b->ids, bind_link)
		if (o->state == DROCE_RCM_LISTEN)
			listening = true;
	if (!listening && b->listener) {
		*unlisten = b->listener;
		b->listener = NULL;
	}
	if (TAILQ_EMPTY(&b->ids)) {
		TAILQ_REMOVE(&binds, b, link);
		*free_bind = b;
	}
}

struct droce_rcm_id *
droce_rcm_find_listener(struct droce_rcm_bind *b, const uint8_t dgid[16])
{
	struct droce_rcm_id *o, *any = NULL;
	bool v4 = memcmp(dgid, v4_mapped, 12) == 0;

	TAILQ_FOREACH(o, &b->ids, bind_link) {
		const struct sockaddr *sa = &o->id.route.addr.src_addr;
		uint8_t g[16];

		if (o->state != DROCE_RCM_LISTEN || o->destroying)
			continue;
		if (droce_rcm_sa_is_any(sa)) {
			/* an IPv6 wildcard takes IPv4 too unless AFONLY */
			if (sa->sa_family == AF_INET ? v4 : (!v4 || !o->afonly))
				if (any == NULL)
					any = o;
			continue;
		}
		droce_rcm_sa_to_gid(sa, g);
		if (memcmp(g, dgid, 16) == 0)
			return o;
	}
	return any;
}

/* ---- rdma_getaddrinfo ---- */

static int
copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (*dst == NULL) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

int
rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		 struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	struct addrinfo aih, *ai = NULL;
	int ret = 0;

	if (res == NULL || (!node && !service && !hints)) {
		errno = EINVAL;
		return -1;
	}
	if (hints && hints->ai_family == AF_IB) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (hints == NULL)
		hints = &nohints;
	rai = calloc(1, sizeof(*rai));
	if (rai == NULL) {
		errno = ENOMEM;
		return -1;
	}
	if (node || service) {
		memset(&aih, 0, sizeof(aih));
		if (hints->ai_flags & RAI_PASSIVE)
			aih.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			aih.ai_flags |= AI_NUMERICHOST;
		aih.ai_family = hints->ai_family;
		if (hints->ai_qp_type == IBV_QPT_UD)
			aih.ai_socktype = SOCK_DGRAM;
		else if (hints->ai_qp_type)
			aih.ai_socktype = SOCK_STREAM;
		if (hints->ai_port_space == RDMA_PS_TCP)
			aih.ai_protocol = IPPROTO_TCP;
		else if (hints->ai_port_space == RDMA_PS_UDP || hints->ai_port_space == RDMA_PS_IPOIB)
			aih.ai_protocol = IPPROTO_UDP;
		ret = getaddrinfo(node, service, &aih, &ai);
		if (ret != 0) {
			/* librdmacm returns getaddrinfo's EAI_* code */
			free(rai);
			return ret;
		}
		if (hints->ai_qp_type)
			rai->ai_qp_type = hints->ai_qp_type;
		else
			rai->ai_qp_type = ai->ai_socktype == SOCK_DGRAM ? IBV_QPT_UD : IBV_QPT_RC;
		if (hints->ai_port_space)
			rai->ai_port_space = hints->ai_port_space;
		else
			rai->ai_port_space = ai->ai_protocol == IPPROTO_UDP ? RDMA_PS_UDP : RDMA_PS_TCP;
		rai->ai_family = ai->ai_family;
		if (ai->ai_flags & AI_PASSIVE) {
			rai->ai_flags = RAI_PASSIVE;
			ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr,
					ai->ai_addrlen);
		} else {
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr,
					ai->ai_addrlen);
		}
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					hints->ai_dst_len);
	}
	if (ret == 0 && !rai->ai_src_len && hints->ai_src_len)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				hints->ai_src_len);
	if (ret != 0) {
		rdma_freeaddrinfo(rai);
		return ret;
	}
	*res = rai;
	return 0;
}

void
rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}
