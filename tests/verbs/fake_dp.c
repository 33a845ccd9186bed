/* SPDX-License-Identifier: BSD-3-Clause
 * FAKE dataplane for verbs_api validation tests only (see fake_dp.h).
 *
 * Why it stays a separate implementation (issue 14): it shares no logic
 * worth sharing with dataplane/.  Its CQ is one plain array that tests fill
 * by hand (fake_cq_push) where the real one is a ring per engine drained
 * across threads; its QPs only record the last WQE/RQE and count posts where
 * the real ones build frames; keys and QPNs are counters.  What overlaps is
 * the limit check of droce_qp_create (DROCE_DP_MAX_* against the caps, as
 * dataplane/qp.c's first test, which also checks XRC, TSO and CQ rules the
 * fake never sees) and the arm rule of fake_cq_push (dataplane/cq.c's
 * ARM_SOLICITED test): two conditions, not logic to factor.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <droce/droce.h>

#include "fake_dp.h"

struct droce_port fake_ports[FAKE_PORTS];
int fake_fail_next_create;
int fake_live_mrs, fake_live_cqs, fake_live_qps;
static bool running;
static bool engines;
static uint32_t next_key = 0x100, next_qpn = 0x11;

void
fake_dp_reset(void)
{
	memset(fake_ports, 0, sizeof(fake_ports));
	for (unsigned int i = 0; i < FAKE_PORTS; i++) {
		struct droce_port *p = &fake_ports[i];
		uint8_t mac[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, (uint8_t)(i + 1) };

		p->index = (uint16_t)i;
		memcpy(p->mac.addr_bytes, mac, 6);
		droce_gid_from_ipv4(p->gids[0], htonl(0xc6120001u + i)); /* 198.18.0.1 + i */
		p->n_gids = 1;
		p->mtu = 1500;
		p->link_up = true;
		p->link_speed = 25000;
		snprintf(p->dev_name, sizeof(p->dev_name), "fake_ring%u", i);
	}
	/* port0 also has fd00::1 */
	inet_pton(AF_INET6, "fd00::1", fake_ports[0].gids[1]);
	fake_ports[0].n_gids = 2;
	fake_fail_next_create = 0;
}

/* ---- runtime and ports ---- */

int
droce_start(const char *config_path)
{
	(void)config_path;
	if (fake_ports[0].mtu == 0)
		fake_dp_reset();
	running = true;
	return 0;
}

bool
droce_running(void)
{
	return running;
}

void
droce_stop(void)
{
	running = false;
}

unsigned int
droce_port_count(void)
{
	return running ? FAKE_PORTS : 0;
}

struct droce_port *
droce_port_get(unsigned int index)
{
	return running && index < FAKE_PORTS ? &fake_ports[index] : NULL;
}

bool
droce_port_link_up(struct droce_port *p)
{
	return p->link_up;
}

/* The port monitor's memif redial (pmd_glue/redial.h): no memif here. */
int
droce_port_redial(struct droce_port *p, void (*quiesce)(void))
{
	(void)p;
	(void)quiesce;
	return 0;
}

int
droce_port_neigh_lookup(struct droce_port *p, const uint8_t addr[16], struct rte_ether_addr *mac)
{
	static const uint8_t zero[16];

	for (unsigned int i = 0; i < DROCE_NEIGH_TABLE_SIZE; i++) {
		if (memcmp(p->neigh[i].addr, zero, 16) != 0 && memcmp(p->neigh[i].addr, addr, 16) == 0) {
			*mac = p->neigh[i].mac;
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}

void
droce_port_neigh_learn(struct droce_port *p, const uint8_t addr[16],
		       const struct rte_ether_addr *mac)
{
	static const uint8_t zero[16];

	for (unsigned int i = 0; i < DROCE_NEIGH_TABLE_SIZE; i++) {
		if (memcmp(p->neigh[i].addr, zero, 16) == 0 ||
		    memcmp(p->neigh[i].addr, addr, 16) == 0) {
			memcpy(p->neigh[i].addr, addr, 16);
			p->neigh[i].mac = *mac;
			return;
		}
	}
}

int
droce_port_arp_lookup(struct droce_port *p, rte_be32_t ip, struct rte_ether_addr *mac)
{
	uint8_t addr[16] = { [10] = 0xff, [11] = 0xff };

	memcpy(addr + 12, &ip, 4);
	return droce_port_neigh_lookup(p, addr, mac);
}

void
droce_port_arp_learn(struct droce_port *p, rte_be32_t ip, const struct rte_ether_addr *mac)
{
	uint8_t addr[16] = { [10] = 0xff, [11] = 0xff };

	memcpy(addr + 12, &ip, 4);
	droce_port_neigh_learn(p, addr, mac);
}

/* ---- engines ---- */

int
droce_engines_start(void)
{
	engines = true;
	return 0;
}

void
droce_engines_stop(void)
{
	engines = false;
}

unsigned int
droce_engine_count(void)
{
	return engines ? 1 : 0;
}

uint32_t
droce_dp_max_qps(void)
{
	return 262143; /* one engine's QPN space, as the real dataplane reports */
}

bool
droce_engines_progress(void)
{
	return false;
}

void
droce_engines_blocking(void)
{
}

bool
droce_engines_wait_spin(_Atomic uint64_t *budget, struct droce_wait *w,
			bool (*ready)(const void *), const void *arg)
{
	(void)budget;
	w->slept = false;
	return ready(arg);
}

void
droce_engines_waiting(bool on)
{
	(void)on;
}

int
droce_engines_line_sleep(int fd, unsigned int ms, bool (*ready)(const void *), const void *arg)
{
	(void)fd;
	(void)ms;
	(void)ready;
	(void)arg;
	return -1; /* no lines without engines: the caller's own way */
}

bool
droce_engines_drive(bool (*ready)(const void *), const void *arg, unsigned int idle_us)
{
	(void)idle_us;
	return ready(arg);
}

void
droce_engines_wait_end(_Atomic uint64_t *budget, const struct droce_wait *w, bool got)
{
	(void)budget;
	(void)w;
	(void)got;
}

bool
droce_engines_in_app_pass(void)
{
	return false;
}

bool
droce_engines_fallback_on(void)
{
	return false;
}

void
droce_engines_set_fallback_hook(bool (*fn)(void))
{
	(void)fn;
}

void
droce_engines_fallback_wake(void)
{
}

void
droce_dp_synchronize(void)
{
}

/* the port monitor's call: the double has no multicast groups */
void
droce_mcast_tick(void)
{
}

/* nor neighbour discovery */
void
droce_dp_nd_tick(void)
{
}

uint64_t
droce_engines_fallback_passes(void)
{
	return 0;
}

uint64_t
droce_engines_waiter_blocks(void)
{
	return 0;
}

/* ---- MRs ---- */

int
droce_mr_register(struct droce_mr *mr)
{
	if (fake_fail_next_create) {
		fake_fail_next_create = 0;
		return ENOMEM; /* dp.h: 0 or a positive errno */
	}
	mr->lkey = next_key;
	mr->rkey = next_key | 0x80000000u;
	next_key += 0x100;
	fake_live_mrs++;
	return 0;
}

int
droce_mr_unregister(struct droce_mr *mr)
{
	(void)mr;
	fake_live_mrs--;
	return 0;
}

int
droce_mr_replace(struct droce_mr *mr, struct droce_mr *next)
{
	next->lkey = mr->lkey;
	next->rkey = mr->rkey;
	return 0;
}

int
droce_mr_drain(struct droce_mr *mr)
{
	(void)mr;
	return 0;
}

/* ---- memory windows (a key each; binding happens on engines only) ---- */

struct droce_mw {
	uint32_t key;
};

struct droce_mw *
droce_mw_alloc(uint32_t pd_id, unsigned int type)
{
	struct droce_mw *mw = calloc(1, sizeof(*mw));

	(void)pd_id;
	(void)type;
	if (mw == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mw->key = next_key;
	next_key += 0x100;
	return mw;
}

uint32_t
droce_mw_rkey(const struct droce_mw *mw)
{
	return mw->key;
}

void
droce_mw_free(struct droce_mw *mw)
{
	free(mw);
}

/* ---- CQs ---- */

struct droce_cq *
droce_cq_create(uint32_t cqe, droce_cq_notify_fn notify, droce_cq_error_fn error, void *arg)
{
	struct droce_cq *cq;

	if (fake_fail_next_create) {
		fake_fail_next_create = 0;
		errno = ENOMEM;
		return NULL;
	}
	if (cqe == 0 || cqe > DROCE_DP_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return NULL;
	cq->cap = cqe < FAKE_CQ_MAX ? cqe : FAKE_CQ_MAX - 1;
	cq->notify = notify;
	cq->error = error;
	cq->arg = arg;
	fake_live_cqs++;
	return cq;
}

struct droce_cq *
droce_cq_create_ex(uint32_t cqe, droce_cq_notify_fn notify, droce_cq_error_fn error, void *arg,
		   uint32_t flags)
{
	if (flags & ~(uint32_t)DROCE_CQ_TIMESTAMP) {
		errno = EINVAL;
		return NULL;
	}
	return droce_cq_create(cqe, notify, error, arg);
}

int
droce_cq_poll_ts(struct droce_cq *cq, int n, struct droce_cqe_ts *out, bool progress)
{
	int got = 0;

	(void)progress;
	while (got < n && cq->head != cq->tail) {
		out[got].cqe = cq->ring[cq->head % FAKE_CQ_MAX];
		out[got++].tsc = 0;
		cq->head++;
	}
	return got;
}

void
droce_cq_destroy(struct droce_cq *cq)
{
	free(cq);
	fake_live_cqs--;
}

uint32_t
droce_cq_capacity(const struct droce_cq *cq)
{
	return cq->cap;
}

int
droce_cq_resize(struct droce_cq *cq, uint32_t cqe)
{
	if (cqe == 0 || cqe > DROCE_DP_MAX_CQE || cq->tail - cq->head > cqe)
		return EINVAL;
	cq->cap = cqe < FAKE_CQ_MAX ? cqe : FAKE_CQ_MAX - 1;
	return 0;
}

int
droce_cq_poll(struct droce_cq *cq, int n, struct droce_cqe *out)
{
	int got = 0;

	while (got < n && cq->head != cq->tail) {
		out[got++] = cq->ring[cq->head % FAKE_CQ_MAX];
		cq->head++;
	}
	return got;
}

int
droce_cq_arm(struct droce_cq *cq, bool solicited_only)
{
	cq->armed = true;
	cq->solicited_only = solicited_only;
	return 0;
}

void
fake_cq_push(struct droce_cq *cq, const struct droce_cqe *cqe, bool solicited)
{
	if (cq->tail - cq->head >= cq->cap) {
		fake_cq_overflow(cq);
		return;
	}
	cq->ring[cq->tail % FAKE_CQ_MAX] = *cqe;
	cq->tail++;
	if (cq->armed && (!cq->solicited_only || solicited || cqe->status != DROCE_WC_SUCCESS)) {
		cq->armed = false;
		cq->notify(cq, cq->arg);
	}
}

void
fake_cq_overflow(struct droce_cq *cq)
{
	cq->error(cq, cq->arg);
}

/* ---- QPs ---- */

struct droce_qp *
droce_qp_create(enum droce_qp_type type, const struct droce_qp_caps *caps,
		struct droce_cq *send_cq, struct droce_cq *recv_cq, uint32_t pd_id,
		unsigned int port)
{
	struct droce_qp *qp;

	if (fake_fail_next_create) {
		fake_fail_next_create = 0;
		errno = ENOMEM;
		return NULL;
	}
	if (caps->max_send_wr > DROCE_DP_MAX_QP_WR || caps->max_recv_wr > DROCE_DP_MAX_QP_WR ||
	    caps->max_send_sge > DROCE_DP_MAX_SGE || caps->max_recv_sge > DROCE_DP_MAX_SGE ||
	    caps->max_inline_data > DROCE_DP_MAX_INLINE || port >= FAKE_PORTS) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return NULL;
	qp->type = type;
	qp->caps = *caps;
	qp->scq = send_cq;
	qp->rcq = recv_cq;
	qp->pd_id = pd_id;
	qp->port = port;
	qp->qpn = next_qpn++;
	fake_live_qps++;
	return qp;
}

uint32_t
droce_qp_num(const struct droce_qp *qp)
{
	return qp->qpn;
}

unsigned int
droce_qp_engine(const struct droce_qp *qp)
{
	(void)qp;
	return 0;
}

int
droce_dp_arp_resolve(unsigned int port, rte_be32_t ip, struct rte_ether_addr *mac,
		     unsigned int timeout_ms)
{
	(void)port;
	(void)ip;
	(void)mac;
	(void)timeout_ms;
	return ETIMEDOUT; /* the fake has no wire */
}

int
droce_dp_neigh_resolve(unsigned int port, const uint8_t addr[16], struct rte_ether_addr *mac,
		       unsigned int timeout_ms)
{
	(void)port;
	(void)addr;
	(void)mac;
	(void)timeout_ms;
	return ETIMEDOUT; /* the fake has no wire */
}

int
droce_qp_async_state(const struct droce_qp *qp)
{
	(void)qp;
	return -1; /* the fake never moves a QP by itself */
}

int
droce_qp_modify(struct droce_qp *qp, const struct droce_qp_mod *mod)
{
	qp->last_mod = *mod;
	qp->n_mods++;
	return 0;
}

int
droce_qp_post_send(struct droce_qp *qp, const struct droce_wqe *wqe)
{
	uint32_t size = qp->caps.max_send_wr ? qp->caps.max_send_wr : 1;

	if (qp->sq_posted - qp->sq_retired >= size)
		return ENOMEM;
	memcpy(&qp->last_wqe, wqe, offsetof(struct droce_wqe, sge) +
	       wqe->num_sge * sizeof(wqe->sge[0]));
	if (wqe->flags & DROCE_WQE_INLINE)
		memcpy(qp->last_wqe.inline_data, wqe->inline_data, wqe->length);
	qp->sq_posted++;
	return 0;
}

void
droce_qp_sq_begin(struct droce_qp *qp, struct droce_sq_batch *b)
{
	uint32_t size = qp->caps.max_send_wr ? qp->caps.max_send_wr : 1;

	qp->in_batch = true;
	/* the fake's slots: batch[idx % FAKE_BATCH]; room for min(size, FAKE_BATCH) */
	qp->batch_retired = qp->sq_posted - (size < FAKE_BATCH ? FAKE_BATCH - size : 0) - (qp->sq_posted - qp->sq_retired);
	b->wqe0 = (uint8_t *)&qp->batch[0];
	b->stride = sizeof(qp->batch[0]);
	b->size = FAKE_BATCH;
	b->mask = FAKE_BATCH - 1;
	b->retired = &qp->batch_retired;
	b->first = qp->sq_posted;
}

int
droce_qp_sq_commit(struct droce_qp *qp, uint32_t n)
{
	if (n)
		qp->last_wqe = qp->batch[(qp->sq_posted + n - 1) % FAKE_BATCH];
	qp->sq_posted += n;
	qp->in_batch = false;
	qp->n_commits++;
	return 0;
}

void
droce_qp_sq_cancel(struct droce_qp *qp)
{
	qp->in_batch = false;
}

int
droce_qp_post_recv(struct droce_qp *qp, const struct droce_rqe *rqe)
{
	uint32_t size = qp->caps.max_recv_wr ? qp->caps.max_recv_wr : 1;

	if (qp->rq_posted - qp->rq_retired >= size)
		return ENOMEM;
	memcpy(&qp->last_rqe, rqe, offsetof(struct droce_rqe, sge) +
	       rqe->num_sge * sizeof(rqe->sge[0]));
	qp->rq_posted++;
	return 0;
}

uint32_t
droce_qp_rq_begin(struct droce_qp *qp)
{
	qp->in_rbatch = true;
	return qp->rq_posted;
}

struct droce_rqe *
droce_qp_rq_slot(struct droce_qp *qp, uint32_t idx)
{
	uint32_t size = qp->caps.max_recv_wr ? qp->caps.max_recv_wr : 1;

	if (idx - qp->rq_retired >= size || idx - qp->rq_posted >= FAKE_BATCH)
		return NULL;
	return &qp->rbatch[idx % FAKE_BATCH];
}

int
droce_qp_rq_commit(struct droce_qp *qp, uint32_t n)
{
	if (n)
		qp->last_rqe = qp->rbatch[(qp->rq_posted + n - 1) % FAKE_BATCH];
	qp->rq_posted += n;
	qp->in_rbatch = false;
	qp->n_commits++;
	return 0;
}

int
droce_qp_destroy(struct droce_qp *qp)
{
	free(qp);
	fake_live_qps--;
	return 0;
}

void
fake_qp_retire(struct droce_qp *qp, uint32_t n_send, uint32_t n_recv)
{
	qp->sq_retired += n_send;
	qp->rq_retired += n_recv;
}

/* RAW_PACKET steering and frame sizes: the validation suite makes no flows */
uint32_t
droce_raw_max_frame(unsigned int port)
{
	(void)port;
	return 1500 + 18;
}

struct droce_flow *
droce_flow_create(unsigned int port, struct droce_qp *qp, enum droce_flow_kind kind,
		  uint16_t priority, const struct droce_flow_spec *spec)
{
	(void)port;
	(void)qp;
	(void)kind;
	(void)priority;
	(void)spec;
	errno = EOPNOTSUPP;
	return NULL;
}

struct droce_flow *
droce_flow_create_rss(unsigned int port, struct droce_qp *qp, enum droce_flow_kind kind,
		      uint16_t priority, const struct droce_flow_spec *spec,
		      const struct droce_rss_conf *rss)
{
	(void)rss;
	return droce_flow_create(port, qp, kind, priority, spec);
}

void
droce_flow_destroy(struct droce_flow *f)
{
	(void)f;
}

unsigned int
droce_flow_count_qp(const struct droce_qp *qp)
{
	(void)qp;
	return 0;
}

bool
droce_qp_settled(const struct droce_qp *qp)
{
	(void)qp;
	return true; /* the fake applies modifies at once */
}

/* the fork gate: no droce threads of ours in the fake world */
void
droce_fork_gate_enter(void)
{
}

void
droce_fork_gate_leave(void)
{
}

void
droce_fork_gate_close(void)
{
}

void
droce_fork_gate_open(void)
{
}

void
droce_fork_gate_reset(void)
{
}
