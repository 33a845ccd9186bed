/* SPDX-License-Identifier: BSD-3-Clause
 * Devices and contexts: one ibv_device per configured droce port (droce0,
 * droce1, ...), each with one port (number 1).  The runtime starts on the
 * first ibv_get_device_list() from DROCE_CONFIG or the embedded loopback
 * config.  Device and port queries, GIDs, P_Keys and async events.
 *
 * Over 800 lines because the fork hooks (a forked child's devices and
 * contexts served by its parent, fork.h) joined the device and context code
 * they route.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_byteorder.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "fork_cli.h"
#include "internal.h"

static pthread_mutex_t runtime_lock = PTHREAD_MUTEX_INITIALIZER;
static struct droce_vdev *devices;
static unsigned int n_devices;

static void
make_guid(struct droce_vdev *d, const struct rte_ether_addr *mac)
{
	uint8_t g[8];

	/* EUI-64 from the MAC, as RoCE devices derive it */
	g[0] = mac->addr_bytes[0] ^ 0x02;
	g[1] = mac->addr_bytes[1];
	g[2] = mac->addr_bytes[2];
	g[3] = 0xff;
	g[4] = 0xfe;
	g[5] = mac->addr_bytes[3];
	g[6] = mac->addr_bytes[4];
	g[7] = mac->addr_bytes[5];
	memcpy(&d->guid, g, sizeof(g));
}

/* fork(): the gate closed (no droce thread of ours is half-way through a
 * unit of work, so none holds the allocator's locks or its own state
 * half-changed for the child to inherit), the runtime lock held across it (a
 * child finds it free), and the socketpair through which the parent serves a
 * child (fork_srv.c).  The gate goes first: a request being served may take
 * the runtime lock. */
static void
fork_prepare(void)
{
	droce_fork_gate_close();
	pthread_mutex_lock(&runtime_lock);
	droce_fk_prepare();
}

static void
fork_parent(void)
{
	droce_fk_parent();
	pthread_mutex_unlock(&runtime_lock);
	droce_fork_gate_open();
}

static void
fork_child(void)
{
	droce_fk_child();
	pthread_mutex_unlock(&runtime_lock);
	droce_fork_gate_reset();
}

static void
fork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int
droce_verbs_runtime_up(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int rc = 0;

	pthread_once(&once, fork_register);
	pthread_mutex_lock(&runtime_lock);
	if (!droce_running() && droce_start(NULL) != 0) {
		rc = -1;
		goto out;
	}
	if (droce_engine_count() == 0) {
		int e = droce_engines_start();

		if (e != 0) {
			errno = e;
			rc = -1;
			goto out;
		}
	}
	if (devices == NULL) {
		unsigned int n = droce_port_count();

		devices = calloc(n ? n : 1, sizeof(*devices));
		if (devices == NULL) {
			errno = ENOMEM;
			rc = -1;
			goto out;
		}
		for (unsigned int i = 0; i < n; i++) {
			struct droce_vdev *d = &devices[i];
			struct droce_port *p = droce_port_get(i);

			d->port = i;
			d->dev.node_type = IBV_NODE_CA;
			d->dev.transport_type = IBV_TRANSPORT_IB;
			snprintf(d->dev.name, sizeof(d->dev.name), "droce%u", i);
			snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "droce_uverbs%u", i);
			snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/droce/%s",
				 p ? droce_port_name(p) : "");
			snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/droce/droce%u", i);
			if (p)
				make_guid(d, droce_port_mac(p));
		}
		n_devices = n;
	}
out:
	pthread_mutex_unlock(&runtime_lock);
	return rc;
}

struct ibv_device *
droce_verbs_device(unsigned int port)
{
	return devices != NULL && port < n_devices ? &devices[port].dev : NULL;
}

struct ibv_device **
ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;

	if (num_devices)
		*num_devices = 0;
	if (droce_verbs_runtime_up() != 0)
		return NULL;
	list = calloc(n_devices + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned int i = 0; i < n_devices; i++)
		list[i] = &devices[i].dev;
	if (num_devices)
		*num_devices = (int)n_devices;
	return list;
}

void
ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

__be64
ibv_get_device_guid(struct ibv_device *device)
{
	return device ? ((struct droce_vdev *)device)->guid : 0;
}

int
ibv_get_device_index(struct ibv_device *device)
{
	return device ? (int)((struct droce_vdev *)device)->port : -1;
}

struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	if (droce_fk_child_served() && device != NULL)
		return droce_fk_open_device(device, ((struct droce_vdev *)device)->port);
	struct droce_vdev *d = (struct droce_vdev *)device;
	struct droce_vctx *x;
	struct ibv_context *c;
	int fds[2];

	if (d == NULL || droce_port_get(d->port) == NULL) {
		errno = ENODEV;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		free(x);
		return NULL;
	}
	/* engines write events: never block them */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	x->port = d->port;
	x->async_wfd = fds[1];
	pthread_mutex_init(&x->lock, NULL);
	TAILQ_INIT(&x->cqs);
	TAILQ_INIT(&x->pds);

	x->vctx.sz = sizeof(struct verbs_context);
	x->vctx.query_port = droce_verbs_query_port;
	/* the extended verbs verbs.h's inline functions reach through here;
	 * alloc_td, alloc_parent_domain, modify_rwq_ind_table,
	 * modify_cq ... stay NULL, so verbs.h answers EOPNOTSUPP for them */
	x->vctx.query_device_ex = droce_verbs_query_device_ex;
	x->vctx.query_rt_values = droce_verbs_query_rt_values;
	x->vctx.create_cq_ex = droce_verbs_create_cq_ex;
	x->vctx.create_qp_ex = droce_verbs_create_qp_ex;
	x->vctx.create_srq_ex = droce_verbs_create_srq_ex;
	x->vctx.ibv_create_flow = droce_verbs_create_flow;
	x->vctx.ibv_destroy_flow = droce_verbs_destroy_flow;
	x->vctx.open_xrcd = droce_verbs_open_xrcd;
	x->vctx.close_xrcd = droce_verbs_close_xrcd;
	x->vctx.get_srq_num = droce_verbs_get_srq_num;
	x->vctx.open_qp = droce_verbs_open_qp;
	x->vctx.create_wq = droce_verbs_create_wq;
	x->vctx.modify_wq = droce_verbs_modify_wq;
	x->vctx.destroy_wq = droce_verbs_destroy_wq;
	x->vctx.create_rwq_ind_table = droce_verbs_create_rwq_ind_table;
	x->vctx.destroy_rwq_ind_table = droce_verbs_destroy_rwq_ind_table;
	c = &x->vctx.context;
	c->device = device;
	/* a real descriptor where rdma-core has the uverbs command fd: programs
	 * dup() or poll it, or hand it to ibv_import_device (EOPNOTSUPP) */
	c->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	c->async_fd = fds[0];
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->ops.poll_cq = droce_verbs_poll_cq;
	c->ops.req_notify_cq = droce_verbs_req_notify_cq;
	c->ops.post_send = droce_verbs_post_send;
	c->ops.post_recv = droce_verbs_post_recv;
	c->ops.alloc_mw = droce_verbs_alloc_mw;
	c->ops.dealloc_mw = droce_verbs_dealloc_mw;
	c->ops.bind_mw = droce_verbs_bind_mw;
	c->ops.post_srq_recv = droce_verbs_post_srq_recv;
	if (droce_verbs_events_open(x) != 0) {
		if (c->cmd_fd >= 0)
			close(c->cmd_fd);
		close(fds[0]);
		close(fds[1]);
		pthread_mutex_destroy(&x->lock);
		pthread_mutex_destroy(&c->mutex);
		free(x);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

/*
 * Destroys what a program left on a context it closes, as the kernel does
 * when rdma-core's ibv_close_device() closes the command fd: QPs, then
 * SRQs, then CQs, each through its destroy verb, except that events handed
 * out and never acknowledged no longer hold it up (nobody will ack them
 * now).  0, or the errno of the first object that could not be destroyed
 * (the context and what is left stay usable).  MRs, PDs, AHs and memory
 * windows hold no pointer the engines follow into the context: they stay
 * allocated, as leaked memory.
 */
static int
destroy_leftovers(struct droce_vctx *x)
{
	for (;;) {
		struct droce_vqp *q;
		uint32_t reported = 0;
		int rc;

		pthread_mutex_lock(&x->lock);
		TAILQ_FOREACH(q, &x->qps, ctx_link) /* a WQ's QP is left, as its WQ (wq.c) */
			if (q->wq == NULL)
				break;
		if (q != NULL)
			reported = q->async_reported;
		pthread_mutex_unlock(&x->lock);
		if (q == NULL)
			break;
		pthread_mutex_lock(&q->qp.mutex);
		q->qp.events_completed = reported;
		pthread_mutex_unlock(&q->qp.mutex);
		rc = ibv_destroy_qp(&q->qp);
		if (rc != 0)
			return rc;
	}
	for (;;) {
		struct droce_vsrq *s;
		uint32_t reported = 0;
		int rc;

		pthread_mutex_lock(&x->lock);
		s = TAILQ_FIRST(&x->srqs);
		if (s != NULL)
			reported = s->async_reported;
		pthread_mutex_unlock(&x->lock);
		if (s == NULL)
			break;
		pthread_mutex_lock(&s->srq.mutex);
		s->srq.events_completed = reported;
		pthread_mutex_unlock(&s->srq.mutex);
		rc = ibv_destroy_srq(&s->srq);
		if (rc != 0)
			return rc;
	}
	for (;;) {
		struct droce_vcq *cq;
		uint32_t async = 0, comp = 0;
		int rc;

		pthread_mutex_lock(&x->lock);
		cq = TAILQ_FIRST(&x->cqs);
		if (cq != NULL)
			async = cq->async_reported;
		pthread_mutex_unlock(&x->lock);
		if (cq == NULL)
			break;
		if (cq->chan != NULL) {
			pthread_mutex_lock(&cq->chan->lock);
			comp = cq->comp_reported;
			pthread_mutex_unlock(&cq->chan->lock);
		}
		pthread_mutex_lock(&cq->cq.mutex);
		cq->cq.comp_events_completed = comp;
		cq->cq.async_events_completed = async;
		pthread_mutex_unlock(&cq->cq.mutex);
		rc = ibv_destroy_cq(&cq->cq);
		if (rc != 0)
			return rc;
	}
	/* XRC domain handles (their SRQs and XRC_RECV QPs are gone) */
	{
		int rc = droce_verbs_xrcd_close_all(&x->vctx.context);

		if (rc != 0)
			return rc;
	}
	/* then what the PDs hold (windows before the MRs they may be bound to),
	 * and the PDs: an MR left registered would keep its memory reachable by
	 * a peer's rkey after the program closed the device */
	for (;;) {
		struct droce_vpd *pd;
		int rc;

		pthread_mutex_lock(&x->lock);
		pd = TAILQ_FIRST(&x->pds);
		pthread_mutex_unlock(&x->lock);
		if (pd == NULL)
			break;
		while (!TAILQ_EMPTY(&pd->mws))
			if ((rc = droce_verbs_dealloc_mw(&TAILQ_FIRST(&pd->mws)->mw)) != 0)
				return rc;
		while (!TAILQ_EMPTY(&pd->mrs))
			if ((rc = ibv_dereg_mr(&TAILQ_FIRST(&pd->mrs)->mr)) != 0)
				return rc;
		while (!TAILQ_EMPTY(&pd->ahs))
			if ((rc = ibv_destroy_ah(&TAILQ_FIRST(&pd->ahs)->ah)) != 0)
				return rc;
		rc = ibv_dealloc_pd(&pd->pd);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
ibv_close_device(struct ibv_context *context)
{
	if (droce_fk_ctx(context))
		return droce_fk_close_device(context);
	struct droce_vctx *x = droce_vctx_of(context);
	int rc;

	if (x == NULL)
		return EINVAL;
	/*
	 * rdma-core's ibv_close_device() frees the context whatever is left,
	 * and programs rely on it (perftest's ib_send_bw client never destroys
	 * its receive CQ).  A live CQ, QP or SRQ keeps pointers into this
	 * context that the engines use to raise events, so they are destroyed
	 * first (issue 12 §1: never leave an engine pointing at freed memory).
	 */
	rc = destroy_leftovers(x);
	if (rc != 0)
		return rc;
	droce_verbs_events_close(x); /* no more port events into the pipe */
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	close(context->async_fd);
	close(x->async_wfd);
	pthread_mutex_destroy(&x->lock);
	pthread_mutex_destroy(&context->mutex);
	free(x);
	return 0;
}

static struct droce_port *
ctx_port(struct ibv_context *c)
{
	return droce_port_get(droce_vctx_of(c)->port);
}

int
ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
	if (droce_fk_ctx(context))
		return droce_fk_query_device(context, a);
	struct droce_vdev *d = (struct droce_vdev *)context->device;

	memset(a, 0, sizeof(*a));
	/* fw_ver as kernel devices give it ("major.minor.sub"): droce's version */
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", DROCE_VERSION);
	a->node_guid = d->guid;
	a->sys_image_guid = d->guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = ~(uint64_t)0xfff; /* any power of two from 4 KiB */
	a->vendor_id = DROCE_VENDOR_ID;
	a->vendor_part_id = DROCE_VENDOR_PART_ID;
	a->hw_ver = DROCE_HW_VER;
	a->max_qp = (int)droce_dp_max_qps(); /* 262,143 per engine: the QPN space */
	a->max_qp_wr = DROCE_DP_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC |
			      IBV_DEVICE_RAW_IP_CSUM | IBV_DEVICE_MANAGED_FLOW_STEERING;
	a->max_mw = DROCE_VERBS_MAX_MR; /* windows share the MR key table */
	a->max_sge = DROCE_DP_MAX_SGE;
	a->max_sge_rd = DROCE_DP_MAX_SGE;
	a->max_cq = DROCE_VERBS_MAX_CQ;
	a->max_cqe = (int)DROCE_DP_MAX_CQE;
	a->max_mr = DROCE_VERBS_MAX_MR;
	a->max_pd = DROCE_VERBS_MAX_PD;
	a->max_ah = DROCE_VERBS_MAX_AH;
	/* SRQs are bounded by memory only, like AHs; what ibv_create_srq takes */
	a->max_srq = a->max_qp;
	a->max_srq_wr = DROCE_DP_MAX_SRQ_WR;
	a->max_srq_sge = DROCE_DP_MAX_SGE;
	a->max_qp_rd_atom = DROCE_DP_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = DROCE_DP_MAX_RD_ATOMIC;
	a->max_res_rd_atom = DROCE_DP_MAX_RD_ATOMIC * a->max_qp;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_pkeys = 1;
	/* UD multicast (dataplane/mcast.c): groups of the port, QPs per group */
	a->max_mcast_grp = DROCE_MCAST_MAX_GROUPS;
	a->max_mcast_qp_attach = DROCE_MCAST_MAX_QP_ATTACH;
	a->max_total_mcast_qp_attach = DROCE_MCAST_MAX_GROUPS * DROCE_MCAST_MAX_QP_ATTACH;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
	return 0;
}

/*
 * ibv_query_device_ex(3): the legacy attributes plus what droce has of the
 * extended ones (TSO and the checksum capability for RAW_PACKET QPs; RSS
 * and WQs, wq.c: Toeplitz, tables of up to 256 WQs).  No ODP, packet pacing, tag matching, CQ
 * moderation, device memory or PCIe atomics: those are 0.  Completion
 * timestamps are nanoseconds of the engines' clock: a 1 GHz "HCA clock"
 * with all 64 bits valid.
 */
int
droce_verbs_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			    struct ibv_device_attr_ex *out, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (out == NULL || (in != NULL && in->comp_mask != 0) ||
	    attr_size < sizeof(struct ibv_device_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	ibv_query_device(c, &a.orig_attr);
	a.comp_mask = 0;
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = 1000000; /* kHz: timestamps count nanoseconds */
	a.device_cap_flags_ex = (uint64_t)a.orig_attr.device_cap_flags;
	a.max_wq_type_rq = a.orig_attr.max_qp;
	a.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	a.rss_caps.max_rwq_indirection_tables = (uint32_t)a.orig_attr.max_qp;
	a.rss_caps.max_rwq_indirection_table_size = 1u << DROCE_RSS_MAX_LOG_TABLE;
	a.rss_caps.rx_hash_fields_mask = DROCE_RSS_FIELDS;
	a.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	/* RAW_PACKET QPs: checksums filled (IBV_SEND_IP_CSUM) and verified
	 * (IBV_WC_IP_CSUM_OK); TSO of TCP over IPv4 */
	a.raw_packet_caps = IBV_RAW_PACKET_CAP_IP_CSUM;
	a.tso_caps.max_tso = DROCE_DP_MAX_TSO;
	a.tso_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	memcpy(out, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

enum ibv_mtu
droce_verbs_mtu_of(unsigned int ip_mtu)
{
	unsigned int room = ip_mtu > DROCE_VERBS_ROCE_OVERHEAD ? ip_mtu - DROCE_VERBS_ROCE_OVERHEAD : 0;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256; /* the IB minimum; smaller port MTUs cannot carry it */
}

enum ibv_mtu
droce_verbs_port_mtu(unsigned int port)
{
	struct droce_port *p = droce_port_get(port);

	return p ? droce_verbs_mtu_of(droce_port_mtu(p)) : IBV_MTU_1024;
}

/* IB width and speed codes closest to a link speed in Mbps. */
static void
speed_of(uint32_t mbps, uint8_t *width, uint8_t *speed)
{
	static const struct { uint32_t mbps; uint8_t width, speed; } tab[] = {
		{ 2500, 1, 1 },     /* 1X SDR */
		{ 5000, 1, 2 },     /* 1X DDR */
		{ 10000, 1, 4 },    /* 1X QDR */
		{ 14000, 1, 16 },   /* 1X FDR */
		{ 25000, 1, 32 },   /* 1X EDR */
		{ 40000, 2, 4 },    /* 4X QDR */
		{ 50000, 1, 64 },   /* 1X HDR */
		{ 56000, 2, 16 },   /* 4X FDR */
		{ 100000, 2, 32 },  /* 4X EDR */
		{ 200000, 2, 64 },  /* 4X HDR */
		{ 400000, 2, 128 }, /* 4X NDR */
	};

	if (mbps == 0)
		mbps = 10000;
	for (size_t i = 0; i < RTE_DIM(tab); i++) {
		if (mbps <= tab[i].mbps) {
			*width = tab[i].width;
			*speed = tab[i].speed;
			return;
		}
	}
	*width = 4; /* 8X NDR */
	*speed = 128;
}

int
droce_verbs_query_port(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *out,
		       size_t attr_len)
{
	struct droce_port *p;
	struct ibv_port_attr a;

	if (port_num != DROCE_VERBS_PORT_NUM)
		return EINVAL;
	p = ctx_port(c);
	if (p == NULL)
		return ENODEV;
	memset(&a, 0, sizeof(a));
	droce_port_link_up(p);
	/* a link cut by droce_port_set_link is down too (the PORT_ERR event says so) */
	a.state = droce_port_link_cached(p) && droce_port_link_is_set_up(p) ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a.max_mtu = droce_verbs_mtu_of(droce_port_mtu(p));
	a.active_mtu = a.max_mtu;
	/* the table's size, as kernel devices give it: entries past the port's
	 * addresses are empty (ibv_query_gid: zeros; ibv_query_gid_ex: ENODATA) */
	a.gid_tbl_len = DROCE_MAX_GIDS;
	/* a CM answers on QP1 (verbs_api/cm.c) */
	a.port_cap_flags = IBV_PORT_IP_BASED_GIDS | IBV_PORT_CM_SUP;
	/* RoCE addresses by GID: every address vector needs its GRH */
	a.flags = IBV_QPF_GRH_REQUIRED;
	a.max_msg_sz = DROCE_DP_MAX_MSG;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.phys_state = a.state == IBV_PORT_ACTIVE ? 5 /* LinkUp */ : 3 /* Disabled */;
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	speed_of(droce_port_link_speed(p), &a.active_width, &a.active_speed);
	/* the speeds port_cap_flags2 must announce when active_speed uses them */
	if (a.active_speed == 64)
		a.port_cap_flags2 |= IBV_PORT_LINK_SPEED_HDR_SUP;
	else if (a.active_speed == 128)
		a.port_cap_flags2 |= IBV_PORT_LINK_SPEED_NDR_SUP;
	memcpy(out, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The exported symbol behind verbs.h's ibv_query_port() macro: old binaries
 * pass the compat struct, which ends before port_cap_flags2. */
int (ibv_query_port)(struct ibv_context *context, uint8_t port_num,
		     struct _compat_ibv_port_attr *port_attr)
{
	if (droce_fk_ctx(context))
		return droce_fk_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
					   offsetof(struct ibv_port_attr, port_cap_flags2));
	return droce_verbs_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
				      offsetof(struct ibv_port_attr, port_cap_flags2));
}

int
ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct droce_port *p;

	if (port_num != DROCE_VERBS_PORT_NUM || index < 0) {
		errno = EINVAL;
		return -1;
	}
	p = ctx_port(context);
	if (p == NULL || index >= DROCE_MAX_GIDS) {
		errno = EINVAL;
		return -1;
	}
	/* as rdma-core: an empty entry of the table reads as zeros */
	if ((unsigned int)index >= droce_port_gid_count(p))
		memset(gid->raw, 0, 16);
	else
		memcpy(gid->raw, droce_port_gid(p, (unsigned int)index), 16);
	return 0;
}

int
_ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		  struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	struct droce_port *p;

	if (flags != 0 || port_num != DROCE_VERBS_PORT_NUM)
		return EINVAL;
	p = ctx_port(context);
	if (p == NULL || gid_index >= DROCE_MAX_GIDS)
		return EINVAL;
	if (gid_index >= droce_port_gid_count(p))
		return ENODATA; /* an empty entry of the table */
	memset(&e, 0, sizeof(e));
	memcpy(e.gid.raw, droce_port_gid(p, gid_index), 16);
	e.gid_index = gid_index;
	e.port_num = port_num;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
	return 0;
}

/* rdma-core's private enum ibv_gid_type_sysfs (infiniband/driver.h, not
 * installed): the type ibv_devinfo prints per GID. */
enum droce_gid_type_sysfs {
	DROCE_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	DROCE_GID_TYPE_SYSFS_ROCE_V2 = 1,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum droce_gid_type_sysfs *type);

/* As rdma-core: an index past the table (an empty GID) reads as RoCE v1 / IB
 * with 0; other errors are -1 with errno.  droce's GIDs are all RoCE v2. */
int
ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		   enum droce_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int rc;

	if (context == NULL || type == NULL) {
		errno = EINVAL;
		return -1;
	}
	rc = _ibv_query_gid_ex(context, port_num, index, &e, 0, sizeof(e));
	if (rc == ENODATA) {
		*type = DROCE_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? DROCE_GID_TYPE_SYSFS_ROCE_V2
						    : DROCE_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

ssize_t
_ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
		     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct droce_port *p = ctx_port(context);
	size_t n;

	if (flags != 0 || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	if (p == NULL)
		return -ENODEV;
	n = droce_port_gid_count(p) < max_entries ? droce_port_gid_count(p) : max_entries;
	if (n < droce_port_gid_count(p))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct ibv_gid_entry *e = (struct ibv_gid_entry *)((uint8_t *)entries + i * entry_size);

		memset(e, 0, entry_size);
		memcpy(e->gid.raw, droce_port_gid(p, i), 16);
		e->gid_index = (uint32_t)i;
		e->port_num = DROCE_VERBS_PORT_NUM;
		e->gid_type = IBV_GID_TYPE_ROCE_V2;
	}
	return (ssize_t)n;
}

int
ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (port_num != DROCE_VERBS_PORT_NUM || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = rte_cpu_to_be_16(0xffff);
	return 0;
}

int
ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (port_num != DROCE_VERBS_PORT_NUM)
		return -EINVAL;
	return (rte_be_to_cpu_16(pkey) & 0x7fff) == 0x7fff ? 0 : -ENOENT;
}

int
ibv_fork_init(void)
{
	return 0; /* droce never pins pages: fork is always safe */
}

enum ibv_fork_status
ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

/* ---- async events ---- */

/* ibv_get_async_event and ibv_ack_async_event: events.c */

/* ---- strings ---- */

const char *
ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const names[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	if (node_type < IBV_NODE_CA || (size_t)node_type >= RTE_DIM(names) || !names[node_type])
		return "unknown";
	return names[node_type];
}

const char *
ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const names[] = {
		[IBV_PORT_NOP] = "PORT_NOP",
		[IBV_PORT_DOWN] = "PORT_DOWN",
		[IBV_PORT_INIT] = "PORT_INIT",
		[IBV_PORT_ARMED] = "PORT_ARMED",
		[IBV_PORT_ACTIVE] = "PORT_ACTIVE",
		[IBV_PORT_ACTIVE_DEFER] = "PORT_ACTIVE_DEFER",
	};

	if ((unsigned int)port_state >= RTE_DIM(names))
		return "unknown";
	return names[port_state];
}

const char *
ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const names[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	if ((unsigned int)event >= RTE_DIM(names) || !names[event])
		return "unknown";
	return names[event];
}

const char *
ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	if ((unsigned int)status >= RTE_DIM(names) || !names[status])
		return "unknown";
	return names[status];
}
