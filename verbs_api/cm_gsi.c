/* SPDX-License-Identifier: BSD-3-Clause
 * The IB CM's QP1 I/O (the GSI QP of every port, MAD send and receive),
 * its timers, its service thread, start and stop.  See cm.c for the whole.
 */
#include "cm_internal.h"

/* ---- GSI I/O ---- */

static void
cq_notify(struct droce_cq *cq, void *arg)
{
	wake();
}

uint64_t
port_guid(unsigned int port)
{
	struct droce_port *p = droce_port_get(port);
	const uint8_t *m;

	if (p == NULL)
		return 0;
	m = droce_port_mac(p)->addr_bytes;
	/* EUI-64 from the MAC, as the device's node GUID (device.c) */
	return (uint64_t)(m[0] ^ 0x02) << 56 | (uint64_t)m[1] << 48 | (uint64_t)m[2] << 40 |
	       (uint64_t)0xfffe << 24 | (uint64_t)m[3] << 16 | (uint64_t)m[4] << 8 | m[5];
}

static void
ahs_reap_locked(void)
{
	struct cm_ah **pp = &SLIST_FIRST(&cm.ahs);

	while (*pp != NULL) {
		struct cm_ah *a = *pp;

		if (!droce_ah_busy(&a->ah)) {
			*pp = SLIST_NEXT(a, link);
			free(a);
		} else {
			pp = &SLIST_NEXT(a, link);
		}
	}
}

/* Sends a 256-byte MAD from @a's port to the peer's QP1.  0 or an errno. */
static int
gsi_send_locked(const struct droce_cm_addr *a, const uint8_t *mad)
{
	struct droce_port *p = droce_port_get(a->port);
	struct ibv_ah_attr at;
	struct droce_path path;
	struct droce_wqe w;
	struct cm_ah *ah;
	int gi, rc;

	if (p == NULL || a->port >= cm.n_ports || cm.gsi[a->port].qp == NULL)
		return ENODEV;
	gi = droce_port_find_gid(p, a->sgid);
	if (gi < 0)
		return EADDRNOTAVAIL;
	memset(&at, 0, sizeof(at));
	at.is_global = 1;
	at.port_num = DROCE_VERBS_PORT_NUM;
	at.grh.sgid_index = (uint8_t)gi;
	memcpy(at.grh.dgid.raw, a->dgid, 16);
	at.grh.hop_limit = a->hop_limit ? a->hop_limit : 64;
	at.grh.traffic_class = a->traffic_class;
	at.grh.flow_label = a->flow_label & 0xfffff;
	rc = droce_verbs_resolve_path(a->port, &at, DROCE_CM_GSI_QPN, DROCE_CM_GSI_QPN, &path);
	if (rc != 0)
		return rc;
	ahs_reap_locked();
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL)
		return ENOMEM;
	droce_ah_init(&ah->ah, &path, a->port);
	memset(&w, 0, offsetof(struct droce_wqe, sge));
	w.opcode = DROCE_WR_SEND;
	w.flags = DROCE_WQE_INLINE;
	w.length = DROCE_MAD_SIZE;
	w.ah = &ah->ah;
	w.remote_qpn = DROCE_CM_GSI_QPN;
	w.remote_qkey = DROCE_CM_GSI_QKEY;
	memcpy(w.inline_data, mad, DROCE_MAD_SIZE);
	rc = droce_qp_post_send(cm.gsi[a->port].qp, &w);
	if (rc != 0) {
		free(ah);
		return rc;
	}
	SLIST_INSERT_HEAD(&cm.ahs, ah, link);
	cm.stats.mads_tx++;
	return 0;
}

/* Each CM message kind's sent and received counters in cm.stats. */
#define CM_COUNTERS(attr, f)                                                          \
	{ DROCE_CM_ATTR_##attr, offsetof(struct droce_cm_stats, f##_tx),                 \
	  offsetof(struct droce_cm_stats, f##_rx) }
static const struct {
	uint16_t attr;
	size_t tx, rx;
} cm_counters[] = {
	CM_COUNTERS(REQ, req), CM_COUNTERS(REP, rep), CM_COUNTERS(RTU, rtu),
	CM_COUNTERS(REJ, rej), CM_COUNTERS(DREQ, dreq), CM_COUNTERS(DREP, drep),
	CM_COUNTERS(MRA, mra), CM_COUNTERS(SIDR_REQ, sidr_req), CM_COUNTERS(SIDR_REP, sidr_rep),
};
#undef CM_COUNTERS

/* Counts one message of kind @attr sent (@rx false) or received. */
static void
count_msg(uint16_t attr, bool rx)
{
	for (size_t i = 0; i < RTE_DIM(cm_counters); i++)
		if (cm_counters[i].attr == attr) {
			(*(uint64_t *)((char *)&cm.stats +
				       (rx ? cm_counters[i].rx : cm_counters[i].tx)))++;
			return;
		}
}

/* Encodes @m and sends it to @a; when @c is given it becomes c's last MAD. */
int
send_msg_locked(struct droce_cm_conn *c, const struct droce_cm_addr *a,
		const struct droce_cm_msg *m)
{
	uint8_t mad[DROCE_MAD_SIZE];
	int rc = droce_cm_mad_encode(m, mad);

	if (rc != 0)
		return -rc;
	if (c != NULL) {
		memcpy(c->last_mad, mad, sizeof(mad));
		c->has_last = true;
	}
	count_msg(m->attr, false);
	rc = gsi_send_locked(a, mad);
	if (rc != 0)
		CM_LOG(DEBUG, "MAD 0x%x not sent: %s\n", m->attr, strerror(rc));
	return rc;
}

int
resend_last_locked(struct droce_cm_conn *c)
{
	if (!c->has_last)
		return 0;
	cm.stats.resends++;
	return gsi_send_locked(&c->addr, c->last_mad);
}

uint64_t
new_tid_locked(void)
{
	return (uint64_t)cm.tid_hi << 32 | ++cm.tid_lo;
}

void
msg_init(struct droce_cm_msg *m, uint16_t attr, const struct droce_cm_conn *c)
{
	memset(m, 0, sizeof(*m));
	m->attr = attr;
	if (c != NULL) {
		m->tid = c->tid;
		m->local_comm_id = c->local_id;
		m->remote_comm_id = c->remote_id;
	}
}

/* The sender's and receiver's GIDs from the 40-byte GRH area of a UD receive. */
static bool
grh_gids(const uint8_t *grh, uint8_t src[16], uint8_t dst[16], uint8_t *tclass)
{
	const uint8_t *ip4 = grh + 20;

	if ((ip4[0] >> 4) == 4 && (grh[0] >> 4) != 6) {
		static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };

		memcpy(src, v4map, 12);
		memcpy(src + 12, ip4 + 12, 4);
		memcpy(dst, v4map, 12);
		memcpy(dst + 12, ip4 + 16, 4);
		*tclass = ip4[1];
		return true;
	}
	if ((grh[0] >> 4) == 6) {
		memcpy(src, grh + 8, 16);
		memcpy(dst, grh + 24, 16);
		*tclass = (uint8_t)((grh[0] << 4) | (grh[1] >> 4));
		return true;
	}
	return false;
}

static void
rx_mad_locked(unsigned int port, const uint8_t *buf, uint32_t len)
{
	struct droce_cm_msg m;
	struct rx_info rx;
	int rc;

	cm.stats.mads_rx++;
	memset(&rx, 0, sizeof(rx));
	rx.addr.port = port;
	if (len < GRH_LEN || !grh_gids(buf, rx.addr.dgid, rx.addr.sgid, &rx.addr.traffic_class)) {
		cm.stats.drops_rx++;
		return;
	}
	rc = droce_cm_mad_decode(buf + GRH_LEN, len - GRH_LEN, &m);
	if (rc != 0) {
		cm.stats.drops_rx++;
		return;
	}
	count_msg(m.attr, true);
	switch (m.attr) {
	case DROCE_CM_ATTR_REQ: rx_req(&rx, &m); break;
	case DROCE_CM_ATTR_REP: rx_rep(&rx, &m); break;
	case DROCE_CM_ATTR_RTU: rx_rtu(&m); break;
	case DROCE_CM_ATTR_REJ: rx_rej(&m); break;
	case DROCE_CM_ATTR_MRA: rx_mra(&m); break;
	case DROCE_CM_ATTR_DREQ: rx_dreq(&rx, &m); break;
	case DROCE_CM_ATTR_DREP: rx_drep(&m); break;
	case DROCE_CM_ATTR_SIDR_REQ: rx_sidr_req(&rx, &m); break;
	case DROCE_CM_ATTR_SIDR_REP: rx_sidr_rep(&m); break;
	default: cm.stats.drops_rx++; break;
	}
}

static int
gsi_post_recv(unsigned int port, unsigned int idx)
{
	struct gsi_port *g = &cm.gsi[port];
	struct droce_rqe r;

	memset(&r, 0, sizeof(r));
	r.wr_id = (uint64_t)port << 16 | idx;
	r.num_sge = 1;
	r.length = RECV_BUF;
	r.sge[0].addr = (uint64_t)(uintptr_t)(g->buf + (size_t)idx * RECV_BUF);
	r.sge[0].length = RECV_BUF;
	r.sge[0].lkey = g->mr.lkey;
	return droce_qp_post_recv(g->qp, &r);
}

/* ---- timers ---- */

static void
timer_fire_locked(struct droce_cm_conn *c)
{
	c->deadline_us = 0;
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
	case CM_SIDR_REQ_SENT:
		if (c->retries_left > 0) {
			c->retries_left--;
			c->deadline_us = now_us() + c->interval_us;
			resend_last_locked(c);
			return;
		}
		break;
	case CM_TIMEWAIT:
		set_state(c, CM_DEAD);
		ev_simple(c, DROCE_CM_EV_TIMEWAIT_EXIT);
		return;
	case CM_LINGER:
		set_state(c, CM_DEAD);
		return;
	default:
		return;
	}
	/* retries exhausted */
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_REP_SENT: {
		struct droce_cm_msg m;
		bool req = c->state == CM_REQ_SENT;

		msg_init(&m, DROCE_CM_ATTR_REJ, c);
		m.u.rej.msg_rejected = req ? DROCE_CM_MSG_REF_REQ : DROCE_CM_MSG_REF_REP;
		m.u.rej.reason = DROCE_CM_REJ_TIMEOUT;
		send_msg_locked(c, &c->addr, &m);
		conn_finish(c, true);
		ev_simple(c, req ? DROCE_CM_EV_REQ_TIMEOUT : DROCE_CM_EV_REP_TIMEOUT);
		break;
	}
	case CM_DREQ_SENT:
		enter_timewait(c);
		ev_simple(c, DROCE_CM_EV_DREQ_TIMEOUT);
		break;
	case CM_SIDR_REQ_SENT:
		conn_finish(c, false);
		ev_simple(c, DROCE_CM_EV_SIDR_TIMEOUT);
		break;
	default:
		break;
	}
}

/* Runs due timers; returns the µs until the next one (capped). */
static uint64_t
timers_run_locked(void)
{
	uint64_t now = now_us(), next = (uint64_t)IDLE_WAIT_MS * 1000;
	struct droce_cm_conn *c;

	TAILQ_FOREACH(c, &cm.conns, link) {
		if (c->deadline_us == 0)
			continue;
		if (c->deadline_us <= now)
			timer_fire_locked(c);
		if (c->deadline_us != 0)
			next = RTE_MIN(next, c->deadline_us > now ? c->deadline_us - now : 0);
	}
	return next;
}

/* ---- the service thread ---- */

/* Delivers queued events one at a time, with no lock held.  Lock held on entry and exit. */
static void
deliver_locked(void)
{
	struct cm_qev *q;

	while (!cm.stop && (q = TAILQ_FIRST(&cm.events)) != NULL) {
		droce_cm_handler_fn h;
		const void *target;

		TAILQ_REMOVE(&cm.events, q, link);
		if (q->l != NULL) {
			/* a REQ / SIDR REQ: droce_cm_unlisten() detached those of gone listeners */
			h = q->l->handler;
			q->ev.ctx = q->l->ctx;
			target = q->l;
		} else {
			if (q->conn->released) {
				free(q);
				continue;
			}
			h = q->conn->handler;
			q->ev.ctx = q->conn->ctx;
			target = q->conn;
		}
		cm.delivering = target;
		pthread_mutex_unlock(&cm.lock);
		if (h != NULL)
			h(&q->ev);
		pthread_mutex_lock(&cm.lock);
		cm.delivering = NULL;
		pthread_cond_broadcast(&cm.cond);
		free(q);
	}
}

/* Handles received MADs and gives their buffers back to the receive queue. */
static void
rx_batch_locked(const struct droce_cqe *wc, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned int port = (unsigned int)(wc[i].wr_id >> 16);
		unsigned int idx = (unsigned int)(wc[i].wr_id & 0xffff);

		if (port >= cm.n_ports || idx >= GSI_RECV)
			continue;
		if (wc[i].status == DROCE_WC_SUCCESS)
			rx_mad_locked(port, cm.gsi[port].buf + (size_t)idx * RECV_BUF, wc[i].byte_len);
		if (wc[i].status != DROCE_WC_WR_FLUSH_ERR)
			gsi_post_recv(port, idx);
	}
}

/*
 * The service thread: receive, timers, events, reaping; when there is
 * nothing to do it arms the receive CQ and sleeps on the eventfd until a MAD
 * arrives, an API call needs it, or the next timer is due.
 */
/* The service thread's work is done under cm.lock and the fork gate
 * (dataplane/dp.h): a fork never leaves a child this thread's work half-done. */
static void
service_lock(void)
{
	droce_fork_gate_enter();
	pthread_mutex_lock(&cm.lock);
}

static void
service_unlock(void)
{
	pthread_mutex_unlock(&cm.lock);
	droce_fork_gate_leave();
}

static void *
service(void *arg)
{
	struct droce_cqe wc[32], swc[32];
	int n = 0;

	service_lock();
	while (!cm.stop) {
		uint64_t wait_us;

		rx_batch_locked(wc, n);
		wait_us = timers_run_locked();
		deliver_locked();
		conns_reap_locked();
		ahs_reap_locked();
		service_unlock();
		droce_cq_poll(cm.scq, 32, swc); /* only failed sends complete: nothing to do */
		n = droce_cq_poll(cm.rcq, 32, wc);
		if (n == 0) {
			/* arm, then look once more: a MAD that raced the arm is not missed */
			droce_cq_arm(cm.rcq, false);
			n = droce_cq_poll(cm.rcq, 32, wc);
		}
		if (n == 0 && wait_us > 0 && !cm.stop) {
			struct pollfd pfd = { .fd = cm.efd, .events = POLLIN };
			uint64_t v;

			service_lock();
			if (!TAILQ_EMPTY(&cm.events))
				continue;
			service_unlock();
			droce_engines_blocking();
			if (poll(&pfd, 1, (int)((wait_us + 999) / 1000)) > 0 &&
			    read(cm.efd, &v, sizeof(v)) < 0) {
				/* nothing to read after all: fine */
			}
		}
		service_lock();
	}
	service_unlock();
	return NULL;
}

/* ---- start / stop ---- */

static int
gsi_open(unsigned int port)
{
	struct gsi_port *g = &cm.gsi[port];
	struct droce_qp_caps caps = {
		.max_send_wr = GSI_SEND, .max_recv_wr = GSI_RECV, .max_send_sge = 1,
		.max_recv_sge = 1, .max_inline_data = DROCE_MAD_SIZE,
	};
	struct droce_qp_ext ext = { .gsi = true };
	struct droce_qp_mod mod;
	int rc;

	g->buf = calloc(GSI_RECV, RECV_BUF);
	if (g->buf == NULL)
		return ENOMEM;
	memset(&g->mr, 0, sizeof(g->mr));
	g->mr.addr = g->buf;
	g->mr.iova = (uint64_t)(uintptr_t)g->buf;
	g->mr.length = (uint64_t)GSI_RECV * RECV_BUF;
	g->mr.access = DROCE_ACCESS_LOCAL_WRITE;
	g->mr.pd_id = GSI_PD_ID;
	rc = droce_mr_register(&g->mr);
	if (rc != 0)
		return rc;
	g->mr_ok = true;
	g->qp = droce_qp_create_ex(DROCE_QPT_UD, &caps, cm.scq, cm.rcq, GSI_PD_ID, port, &ext);
	if (g->qp == NULL)
		return errno ? errno : ENOMEM;
	memset(&mod, 0, sizeof(mod));
	mod.mask = DROCE_QPM_STATE | DROCE_QPM_PKEY_INDEX | DROCE_QPM_PORT | DROCE_QPM_QKEY;
	mod.state = DROCE_QPS_INIT;
	mod.qkey = DROCE_CM_GSI_QKEY;
	mod.pmtu = 1024;
	rc = droce_qp_modify(g->qp, &mod);
	for (unsigned int i = 0; rc == 0 && i < GSI_RECV; i++)
		rc = gsi_post_recv(port, i);
	if (rc == 0) {
		mod.mask = DROCE_QPM_STATE;
		mod.state = DROCE_QPS_RTR;
		rc = droce_qp_modify(g->qp, &mod);
	}
	if (rc == 0) {
		mod.mask = DROCE_QPM_STATE | DROCE_QPM_SQ_PSN;
		mod.state = DROCE_QPS_RTS;
		mod.sq_psn = (uint32_t)(rte_rand() & 0xffffff);
		rc = droce_qp_modify(g->qp, &mod);
	}
	return rc;
}

static void
gsi_close(unsigned int port)
{
	struct gsi_port *g = &cm.gsi[port];

	if (g->qp != NULL)
		droce_qp_destroy(g->qp);
	g->qp = NULL;
	if (g->mr_ok && droce_mr_unregister(&g->mr) != 0) {
		g->buf = NULL; /* frames still point into it: left allocated */
		g->mr_ok = false;
		return;
	}
	g->mr_ok = false;
	free(g->buf);
	g->buf = NULL;
}

int
droce_cm_start(void)
{
	int rc = 0;

	pthread_mutex_lock(&cm.lock);
	if (cm.started)
		goto out;
	cm.n_ports = RTE_MIN(droce_port_count(), (unsigned int)DROCE_MAX_PORTS);
	cm.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cm.efd < 0) {
		rc = errno;
		goto out;
	}
	cm.rcq = droce_cq_create(GSI_RECV * RTE_MAX(cm.n_ports, 1u), cq_notify, NULL, NULL);
	cm.scq = droce_cq_create(GSI_SEND * RTE_MAX(cm.n_ports, 1u), NULL, NULL, NULL);
	if (cm.rcq == NULL || cm.scq == NULL) {
		rc = ENOMEM;
		goto fail;
	}
	for (unsigned int i = 0; i < cm.n_ports && rc == 0; i++)
		rc = gsi_open(i);
	if (rc != 0)
		goto fail;
	cm.next_id = (uint32_t)rte_rand();
	cm.tid_hi = (uint32_t)rte_rand();
	cm.stop = false;
	rc = pthread_create(&cm.thr, NULL, service, NULL);
	if (rc != 0)
		goto fail;
	pthread_setname_np(cm.thr, "droce-cm");
	cm.started = true;
	droce_engines_at_stop(droce_cm_stop);
	goto out;
fail:
	for (unsigned int i = 0; i < cm.n_ports; i++)
		gsi_close(i);
	if (cm.rcq)
		droce_cq_destroy(cm.rcq);
	if (cm.scq)
		droce_cq_destroy(cm.scq);
	cm.rcq = cm.scq = NULL;
	close(cm.efd);
	cm.efd = -1;
out:
	pthread_mutex_unlock(&cm.lock);
	if (rc != 0) {
		CM_LOG(ERR, "cannot start the CM: %s\n", strerror(rc));
		errno = rc;
		return -1;
	}
	return 0;
}

void
droce_cm_stop(void)
{
	struct droce_cm_conn *c;
	struct cm_qev *q;

	pthread_mutex_lock(&cm.lock);
	if (!cm.started) {
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	cm.stop = true;
	wake();
	pthread_mutex_unlock(&cm.lock);
	pthread_join(cm.thr, NULL);
	pthread_mutex_lock(&cm.lock);
	while ((q = TAILQ_FIRST(&cm.events)) != NULL) {
		TAILQ_REMOVE(&cm.events, q, link);
		free(q);
	}
	while ((c = TAILQ_FIRST(&cm.conns)) != NULL) {
		TAILQ_REMOVE(&cm.conns, c, link);
		free(c);
	}
	for (unsigned int i = 0; i < cm.n_ports; i++)
		gsi_close(i);
	droce_cq_destroy(cm.rcq);
	droce_cq_destroy(cm.scq);
	cm.rcq = cm.scq = NULL;
	while (!SLIST_EMPTY(&cm.ahs)) {
		struct cm_ah *a = SLIST_FIRST(&cm.ahs);

		SLIST_REMOVE_HEAD(&cm.ahs, link);
		free(a);
	}
	close(cm.efd);
	cm.efd = -1;
	cm.started = false;
	pthread_mutex_unlock(&cm.lock);
}
