/* SPDX-License-Identifier: BSD-3-Clause
 * An RC QP, a registered buffer and a port with an mbuf pool in plain
 * memory, without the EAL (plain_qp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "plain_qp.h"
#include "dataplane/rc_internal.h"
#include "pmd_glue/port_struct.h"

struct droce_engine *eng;
struct droce_qp *qp;
struct droce_rd_resp rd_resp[DROCE_RD_RESP_CAP];
uint8_t local[4096] __attribute__((aligned(64))); /* atomics: its words aligned */
struct droce_mr local_mr;

static struct droce_sq_slot *sq;
static struct droce_swqe *swqe;
static struct droce_rq_slot *rq; /* none posted (a QP in error flushes it) */

void
qp_setup(void)
{
	eng = calloc(1, sizeof(*eng));
	/* a struct droce_qp is cache-line aligned (engine.h) */
	qp = aligned_alloc(RTE_CACHE_LINE_SIZE, sizeof(*qp));
	if (qp != NULL)
		memset(qp, 0, sizeof(*qp));
	sq = calloc(PLAIN_SQ_SLOTS, sizeof(*sq));
	swqe = calloc(PLAIN_SQ_SLOTS, sizeof(*swqe));
	rq = calloc(PLAIN_SQ_SLOTS, sizeof(*rq));
	cr_assert(eng && qp && sq && swqe && rq);
	memset(rd_resp, 0, sizeof(rd_resp));
	memset(local, 0, sizeof(local));
	eng->tsc_hz = 1000000000;
	eng->now = 1000;
	qp->eng = eng;
	qp->qpn = 17;
	qp->type = DROCE_QPT_RC;
	qp->xport = DROCE_TRANSPORT_RC;
	qp->state = DROCE_QPS_RTS;
	qp->req_state = DROCE_REQ_IDLE;
	qp->attr.pmtu = 1024;
	qp->attr.max_rd_atomic = 2;
	qp->attr.timeout = 14;
	qp->attr.retry_cnt = 7;
	qp->sq = sq;
	qp->sq_stride = sizeof(*sq);
	qp->sq_mask = PLAIN_SQ_SLOTS - 1;
	qp->swqe = swqe;
	qp->rq = rq;
	qp->rq_stride = sizeof(*rq);
	qp->rq_mask = PLAIN_SQ_SLOTS - 1;
	qp->rd_resp = rd_resp;
	qp->psn_next = qp->psn_una = qp->psn_max = 100;
}

void
qp_teardown(void)
{
	droce_rc_rdmap_free(qp); /* a READ response past a hole allocates the map */
	free(rq);
	free(swqe);
	free(sq);
	free(qp);
	free(eng);
}

struct droce_wqe *
post(uint8_t opcode, uint32_t length)
{
	struct droce_wqe *w = droce_qp_wqe(qp, qp->sq_avail);

	memset(w, 0, sizeof(*w));
	w->opcode = opcode;
	w->length = length;
	w->flags = DROCE_WQE_INLINE;
	qp->sq_avail++;
	return w;
}

struct droce_swqe *
sent(uint32_t idx, uint32_t npkts)
{
	struct droce_swqe *s = droce_qp_swqe(qp, idx);

	s->started = true;
	s->first_psn = qp->psn_next;
	s->npkts = s->sent_pkts = npkts;
	qp->psn_next = qp->psn_max = droce_psn_add(qp->psn_next, npkts);
	qp->sq_cur = idx + 1;
	return s;
}

uint8_t
syn(enum droce_aeth_kind kind, uint8_t value)
{
	return droce_aeth_make_syndrome(kind, value);
}

void
local_register(void)
{
	if (local_mr.addr != NULL)
		return; /* once per test (each runs in its own process) */
	local_mr.addr = local;
	local_mr.iova = PLAIN_LOCAL_IOVA;
	local_mr.length = sizeof(local);
	local_mr.access = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_READ |
			  DROCE_ACCESS_REMOTE_WRITE;
	local_mr.pd_id = qp->pd_id;
	cr_assert_eq(droce_mr_register(&local_mr), 0);
}

void
local_sge(struct droce_wqe *w, uint32_t length)
{
	local_register();
	w->flags = 0;
	w->num_sge = 1;
	w->sge[0] = (struct droce_sge){ .addr = PLAIN_LOCAL_IOVA, .length = length,
					.lkey = local_mr.lkey };
}

/* ---- an mbuf pool in plain memory ---- */

#define POOL_MBUFS 16
#define POOL_ROOM 2048 /* data room past the headroom */

struct plain_pool {
	unsigned int top;
	void *free[POOL_MBUFS];
};

static int
pool_alloc(struct rte_mempool *mp)
{
	RTE_SET_USED(mp);
	return 0;
}

static void
pool_free(struct rte_mempool *mp)
{
	RTE_SET_USED(mp);
}

static int
pool_enqueue(struct rte_mempool *mp, void *const *objs, unsigned int n)
{
	struct plain_pool *pp = mp->pool_data;

	if (pp->top + n > POOL_MBUFS)
		return -ENOBUFS;
	for (unsigned int i = 0; i < n; i++)
		pp->free[pp->top++] = objs[i];
	return 0;
}

static int
pool_dequeue(struct rte_mempool *mp, void **objs, unsigned int n)
{
	struct plain_pool *pp = mp->pool_data;

	if (pp->top < n)
		return -ENOENT;
	for (unsigned int i = 0; i < n; i++)
		objs[i] = pp->free[--pp->top];
	return 0;
}

static unsigned int
pool_count(const struct rte_mempool *mp)
{
	return ((const struct plain_pool *)mp->pool_data)->top;
}

static const struct rte_mempool_ops plain_ops = {
	.name = "droce_test_plain",
	.alloc = pool_alloc,
	.free = pool_free,
	.enqueue = pool_enqueue,
	.dequeue = pool_dequeue,
	.get_count = pool_count,
};

static struct rte_mempool *pool;
static struct plain_pool pool_state;
static uint8_t *pool_mem;
static struct droce_port *port;

/* Each element: the mempool object header, then the mbuf (cache-line
 * aligned), its headroom and data room, as rte_mempool_populate lays them. */
#define ELT_HDR RTE_CACHE_LINE_SIZE
#define ELT_SIZE RTE_ALIGN_CEIL(ELT_HDR + sizeof(struct rte_mbuf) + RTE_PKTMBUF_HEADROOM + POOL_ROOM, \
				RTE_CACHE_LINE_SIZE)

static struct rte_mempool *
pool_create(void)
{
	size_t hsz = RTE_ALIGN_CEIL(sizeof(struct rte_mempool) + sizeof(struct rte_pktmbuf_pool_private),
				    RTE_CACHE_LINE_SIZE);
	struct rte_mempool *mp = aligned_alloc(RTE_CACHE_LINE_SIZE, hsz);
	struct rte_pktmbuf_pool_private *priv;
	int ops = rte_mempool_register_ops(&plain_ops);

	cr_assert(mp != NULL && ops >= 0, "mempool ops: %d", ops);
	memset(mp, 0, hsz);
	strcpy(mp->name, "plain");
	mp->pool_data = &pool_state;
	mp->ops_index = ops;
	mp->cache_size = 0; /* no per-lcore cache: every get and put reaches the ops */
	mp->size = POOL_MBUFS;
	mp->elt_size = (uint32_t)(ELT_SIZE - ELT_HDR);
	mp->header_size = ELT_HDR;
	mp->private_data_size = sizeof(*priv);
	priv = rte_mempool_get_priv(mp);
	priv->mbuf_data_room_size = RTE_PKTMBUF_HEADROOM + POOL_ROOM;
	priv->mbuf_priv_size = 0;
	pool_mem = aligned_alloc(RTE_CACHE_LINE_SIZE, ELT_SIZE * POOL_MBUFS);
	cr_assert_not_null(pool_mem);
	memset(pool_mem, 0, ELT_SIZE * POOL_MBUFS);
	pool_state.top = 0;
	for (unsigned int i = 0; i < POOL_MBUFS; i++) {
		struct rte_mbuf *m = (struct rte_mbuf *)(void *)(pool_mem + i * ELT_SIZE + ELT_HDR);
		struct rte_mempool_objhdr *h = (struct rte_mempool_objhdr *)(void *)((uint8_t *)m - sizeof(*h));

		h->mp = mp;
		h->iova = RTE_BAD_IOVA;
		rte_pktmbuf_init(mp, NULL, m, 0);
		pool_state.free[pool_state.top++] = m;
	}
	return mp;
}

void
tx_setup(void)
{
	struct droce_path p;

	qp_setup();
	pool = pool_create();
	port = calloc(1, sizeof(*port));
	cr_assert_not_null(port);
	port->mp = pool;
	port->zc_min = UINT32_MAX;
	qp->port = port;
	qp->port_index = 0;
	qp->attr.dest_qpn = 0x123456;
	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 6; i++) {
		p.src_mac.addr_bytes[i] = (uint8_t)(0x02 + i);
		p.dst_mac.addr_bytes[i] = (uint8_t)(0x12 + i);
	}
	droce_gid_from_ipv4(p.src_gid, rte_cpu_to_be_32(0xc6120001)); /* 198.18.0.1 */
	droce_gid_from_ipv4(p.dst_gid, rte_cpu_to_be_32(0xc6120002));
	p.udp_sport = 0xc123;
	p.ip_id = 7;
	droce_tmpl_init(&qp->tmpl, &p);
}

void
tx_teardown(void)
{
	for (unsigned int i = 0; i < eng->ntx[0]; i++)
		rte_pktmbuf_free(eng->txq[0][i]);
	eng->ntx[0] = 0;
	cr_assert_eq(pool_state.top, POOL_MBUFS, "every mbuf back in the pool");
	cr_assert_eq(local_mr.zc_refs, 0, "no frame holds the MR");
	free(pool_mem);
	free(pool);
	free(port);
	qp_teardown();
}

unsigned int
tx_count(void)
{
	return eng->ntx[0];
}

uint32_t
tx_frame(unsigned int i, uint8_t *buf, uint32_t cap, unsigned int *nsegs)
{
	const struct rte_mbuf *m = eng->txq[0][i];
	uint32_t len = 0;

	cr_assert_lt(i, eng->ntx[0]);
	*nsegs = 0;
	for (; m != NULL; m = m->next) {
		cr_assert_leq(len + m->data_len, cap);
		memcpy(buf + len, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len);
		len += m->data_len;
		(*nsegs)++;
	}
	cr_assert_eq(len, eng->txq[0][i]->pkt_len, "pkt_len is the segments' sum");
	return len;
}

unsigned int
tx_pool_free(void)
{
	return pool_state.top;
}
