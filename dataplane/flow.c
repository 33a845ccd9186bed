/* SPDX-License-Identifier: BSD-3-Clause
 * Receive steering for RAW_PACKET QPs (ibv_create_flow): the rules of each
 * port, and the classifier the engines run on received frames (dp.h has the
 * order rules are tried in).
 *
 * Engines read a port's rules as one immutable snapshot (droce_flow_tab[],
 * NULL while the port has none: the RoCE receive path then pays one load per
 * burst).  Creating or destroying a rule builds a new snapshot under a mutex,
 * publishes it, and waits for every engine's quiescent point
 * (droce_dp_synchronize) before freeing the old one and a destroyed rule.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_thash.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "internal.h"
#include "pmd_glue/port.h"
#include "raw.h"

/* An RSS rule's spread (immutable while the rule lives). */
struct droce_flow_rss {
	uint32_t fields;
	uint32_t mask;                /* table size - 1 */
	uint32_t key[DROCE_RSS_KEY_LEN / 4]; /* rte_convert_rss_key's form */
	struct {
		struct droce_qp *qp;
		uint32_t qpn;
	} t[];
};

struct droce_flow {
	unsigned int port;
	struct droce_qp *qp;          /* the target; an RSS rule: the QP it counts against */
	uint32_t qpn;
	struct droce_flow_rss *rss;   /* NULL: every frame to qp */
	enum droce_flow_kind kind;
	uint16_t priority;
	uint64_t seq;                 /* creation order: older first among equals */
	struct droce_flow_spec spec;
	struct droce_flow *next;      /* the port's list (under flow_lock) */
};

struct droce_flow_table {
	unsigned int n;
	struct droce_flow *r[];       /* sniffers, NORMAL by (priority, seq), MC_DEFAULT, ALL_DEFAULT */
};

struct droce_flow_table *_Atomic droce_flow_tab[DROCE_MAX_PORTS];

static pthread_mutex_t flow_lock = PTHREAD_MUTEX_INITIALIZER;
static struct droce_flow *flow_list[DROCE_MAX_PORTS];
static uint64_t flow_seq;

/* ---- the classifier (engine side) ---- */

static bool
bytes_match(const uint8_t *frame, const uint8_t *val, const uint8_t *mask, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((frame[i] & mask[i]) != (val[i] & mask[i]))
			return false;
	return true;
}

#define FIELD_MATCH(f, v, m) ((((f) ^ (v)) & (m)) == 0)

static bool
spec_match(const struct droce_flow_spec *s, const uint8_t *b, const struct droce_raw_hdrs *h)
{
	const struct droce_flow_fields *v = &s->val, *m = &s->mask;

	if (s->have & DROCE_FLOW_ETH) {
		uint16_t et = rte_cpu_to_be_16(h->ether_type);
		uint16_t tag = rte_cpu_to_be_16(h->vlan ? h->tci : 0);

		if (!bytes_match(b, v->dmac, m->dmac, 6) || !bytes_match(b + 6, v->smac, m->smac, 6) ||
		    !FIELD_MATCH(et, v->ether_type, m->ether_type) ||
		    !FIELD_MATCH(tag, v->vlan_tag, m->vlan_tag))
			return false;
	}
	if (s->have & DROCE_FLOW_IPV4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(b + h->l3_off);

		if (!h->ipv4 || !FIELD_MATCH(ip->src_addr, v->src_ip, m->src_ip) ||
		    !FIELD_MATCH(ip->dst_addr, v->dst_ip, m->dst_ip) ||
		    !FIELD_MATCH(ip->next_proto_id, v->proto, m->proto) ||
		    !FIELD_MATCH(ip->type_of_service, v->tos, m->tos) ||
		    !FIELD_MATCH(ip->time_to_live, v->ttl, m->ttl) ||
		    !FIELD_MATCH((uint8_t)(rte_be_to_cpu_16(ip->fragment_offset) >> 13), v->ip_flags,
				 m->ip_flags))
			return false;
	}
	if (s->have & DROCE_FLOW_IPV6) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(b + h->l3_off);
		uint32_t vtc = rte_be_to_cpu_32(ip->vtc_flow);

		if (!h->ipv6 || !bytes_match(ip->src_addr, v->src_ip6, m->src_ip6, 16) ||
		    !bytes_match(ip->dst_addr, v->dst_ip6, m->dst_ip6, 16) ||
		    !FIELD_MATCH(vtc & 0xfffff, v->flow_label, m->flow_label) ||
		    !FIELD_MATCH((uint8_t)(vtc >> 20), v->traffic_class, m->traffic_class) ||
		    !FIELD_MATCH(ip->proto, v->next_hdr, m->next_hdr) ||
		    !FIELD_MATCH(ip->hop_limits, v->hop_limit, m->hop_limit))
			return false;
	}
	if (s->have & (DROCE_FLOW_TCP | DROCE_FLOW_UDP)) {
		const rte_be16_t *ports = (const rte_be16_t *)(b + h->l4_off);

		if (h->l4 != ((s->have & DROCE_FLOW_TCP) ? IPPROTO_TCP : IPPROTO_UDP) ||
		    !FIELD_MATCH(ports[0], v->src_port, m->src_port) ||
		    !FIELD_MATCH(ports[1], v->dst_port, m->dst_port))
			return false;
	}
	return true;
}

/* A frame droce itself handles: ARP, RoCEv2 (UDP destination port 4791). */
static bool
droce_own(const struct droce_raw_hdrs *h, const uint8_t *b)
{
	if (h->ether_type == RTE_ETHER_TYPE_ARP)
		return true;
	return h->l4 == IPPROTO_UDP &&
	       ((const struct rte_udp_hdr *)(b + h->l4_off))->dst_port ==
		       rte_cpu_to_be_16(DROCE_UDP_PORT);
}

/*
 * The Toeplitz input of a frame for @fields, as 32-bit words in host order:
 * source then destination address, then the ports as one word (source in the
 * high half; a port not selected is left out, the one selected moves up: a
 * word's trailing zero bits add nothing to the hash).  Returns the words used.
 */
static unsigned int
rss_input(uint32_t fields, const uint8_t *b, const struct droce_raw_hdrs *h, uint32_t in[9])
{
	unsigned int n = 0;
	uint32_t pf = 0;

	if (h->ipv4 && (fields & (DROCE_RSS_SRC_IPV4 | DROCE_RSS_DST_IPV4))) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(b + h->l3_off);

		if (fields & DROCE_RSS_SRC_IPV4)
			in[n++] = rte_be_to_cpu_32(ip->src_addr);
		if (fields & DROCE_RSS_DST_IPV4)
			in[n++] = rte_be_to_cpu_32(ip->dst_addr);
	} else if (h->ipv6 && (fields & (DROCE_RSS_SRC_IPV6 | DROCE_RSS_DST_IPV6))) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(b + h->l3_off);

		for (unsigned int a = 0; a < 2; a++) {
			const uint8_t *addr = a == 0 ? ip->src_addr : ip->dst_addr;

			if (!(fields & (a == 0 ? DROCE_RSS_SRC_IPV6 : DROCE_RSS_DST_IPV6)))
				continue;
			for (unsigned int w = 0; w < 4; w++) {
				uint32_t v;

				memcpy(&v, addr + 4 * w, 4);
				in[n++] = rte_be_to_cpu_32(v);
			}
		}
	}
	if (h->l4 == IPPROTO_TCP)
		pf = fields & (DROCE_RSS_SRC_PORT_TCP | DROCE_RSS_DST_PORT_TCP);
	else if (h->l4 == IPPROTO_UDP)
		pf = (fields & (DROCE_RSS_SRC_PORT_UDP | DROCE_RSS_DST_PORT_UDP)) >> 2;
	if (pf != 0) {
		const rte_be16_t *ports = (const rte_be16_t *)(b + h->l4_off);
		uint32_t w = 0, sh = 16;

		if (pf & DROCE_RSS_SRC_PORT_TCP) {
			w = (uint32_t)rte_be_to_cpu_16(ports[0]) << sh;
			sh = 0;
		}
		if (pf & DROCE_RSS_DST_PORT_TCP)
			w |= (uint32_t)rte_be_to_cpu_16(ports[1]) << sh;
		in[n++] = w;
	}
	return n;
}

static uint32_t
rss_hash(const struct droce_flow_rss *r, const uint8_t *b, const struct droce_raw_hdrs *h)
{
	uint32_t in[9];
	unsigned int n = rss_input(r->fields, b, h, in);

	return n == 0 ? 0 : rte_softrss_be(in, n, (const uint8_t *)r->key);
}

static void
deliver(struct droce_engine *eng, struct droce_port *port, const struct droce_flow *f,
	struct rte_mbuf *m, const uint8_t *b, const struct droce_raw_hdrs *h)
{
	struct droce_qp *qp = f->qp;
	uint32_t qpn = f->qpn;

	if (f->rss != NULL) {
		/* @b and @h: the frame @m is or a copy of */
		uint32_t i = rss_hash(f->rss, b, h) & f->rss->mask;

		qp = f->rss->t[i].qp;
		qpn = f->rss->t[i].qpn;
	}
	if (qp->eng == eng)
		droce_raw_rx_lc(qp, m);
	else
		droce_engine_raw_deliver_lc(eng, port, qpn, m);
}

static void
rss_key_convert(uint32_t out[DROCE_RSS_KEY_LEN / 4], const uint8_t key[DROCE_RSS_KEY_LEN])
{
	uint32_t raw[DROCE_RSS_KEY_LEN / 4];

	memcpy(raw, key, sizeof(raw));
	rte_convert_rss_key(raw, out, DROCE_RSS_KEY_LEN);
}

uint32_t
droce_rss_hash_frame(const struct droce_rss_conf *rss, const uint8_t *frame, uint32_t len)
{
	struct droce_flow_rss r = { .fields = rss->fields };
	struct droce_raw_hdrs h;

	rss_key_convert(r.key, rss->key);
	droce_raw_parse(frame, len, &h);
	return rss_hash(&r, frame, &h);
}

bool
droce_flow_rx_lc(struct droce_engine *eng, struct droce_port *port, struct rte_mbuf *m)
{
	const struct droce_flow_table *t =
		atomic_load_explicit(&droce_flow_tab[port->index], memory_order_acquire);
	const uint8_t *b;
	struct droce_raw_hdrs h;
	unsigned int i = 0;

	if (t == NULL)
		return false;
	if ((m->nb_segs != 1 && rte_pktmbuf_linearize(m) != 0) ||
	    rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN)
		return false; /* the engine counts and drops it */
	b = rte_pktmbuf_mtod(m, const uint8_t *);
	droce_raw_parse(b, rte_pktmbuf_data_len(m), &h);
	for (; i < t->n && t->r[i]->kind == DROCE_FLOW_SNIFFER; i++) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, port->mp, 0, UINT32_MAX);

		if (c == NULL)
			eng->stats.alloc_fail++;
		else
			deliver(eng, port, t->r[i], c, b, &h);
	}
	for (; i < t->n && t->r[i]->kind == DROCE_FLOW_NORMAL; i++) {
		if (!spec_match(&t->r[i]->spec, b, &h))
			continue;
		if (t->r[i]->spec.dont_trap) {
			struct rte_mbuf *c = rte_pktmbuf_copy(m, port->mp, 0, UINT32_MAX);

			if (c == NULL)
				eng->stats.alloc_fail++;
			else
				deliver(eng, port, t->r[i], c, b, &h);
			continue;
		}
		deliver(eng, port, t->r[i], m, b, &h);
		return true;
	}
	if (i == t->n || droce_own(&h, b))
		return false;
	for (; i < t->n; i++) {
		if (t->r[i]->kind == DROCE_FLOW_MC_DEFAULT && !(b[0] & 1))
			continue; /* unicast: for ALL_DEFAULT only */
		deliver(eng, port, t->r[i], m, b, &h);
		return true;
	}
	return false;
}

/* ---- rules (application side) ---- */

static int
kind_rank(enum droce_flow_kind k)
{
	switch (k) {
	case DROCE_FLOW_SNIFFER:
		return 0;
	case DROCE_FLOW_NORMAL:
		return 1;
	case DROCE_FLOW_MC_DEFAULT:
		return 2;
	default:
		return 3;
	}
}

static int
rule_cmp(const void *a, const void *b)
{
	const struct droce_flow *x = *(const struct droce_flow *const *)a;
	const struct droce_flow *y = *(const struct droce_flow *const *)b;

	if (kind_rank(x->kind) != kind_rank(y->kind))
		return kind_rank(x->kind) - kind_rank(y->kind);
	if (x->kind == DROCE_FLOW_NORMAL && x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Publishes a snapshot of @port's list (under flow_lock); waits for the
 * engines to let go of the old one and frees it.  0 or ENOMEM. */
static int
republish(unsigned int port)
{
	struct droce_flow_table *t = NULL, *old;
	unsigned int n = 0;

	for (struct droce_flow *f = flow_list[port]; f != NULL; f = f->next)
		n++;
	if (n > 0) {
		t = malloc(sizeof(*t) + n * sizeof(t->r[0]));
		if (t == NULL)
			return ENOMEM;
		t->n = 0;
		for (struct droce_flow *f = flow_list[port]; f != NULL; f = f->next)
			t->r[t->n++] = f;
		qsort(t->r, t->n, sizeof(t->r[0]), rule_cmp);
	}
	old = atomic_exchange_explicit(&droce_flow_tab[port], t, memory_order_acq_rel);
	droce_dp_synchronize();
	free(old);
	return 0;
}

static bool
spec_ok(const struct droce_flow_spec *s)
{
	uint32_t l3 = s->have & (DROCE_FLOW_IPV4 | DROCE_FLOW_IPV6);
	uint32_t l4 = s->have & (DROCE_FLOW_TCP | DROCE_FLOW_UDP);

	if (s->have & ~(uint32_t)(DROCE_FLOW_ETH | DROCE_FLOW_IPV4 | DROCE_FLOW_IPV6 |
				  DROCE_FLOW_TCP | DROCE_FLOW_UDP))
		return false;
	/* one of each layer at most */
	return l3 != (DROCE_FLOW_IPV4 | DROCE_FLOW_IPV6) && l4 != (DROCE_FLOW_TCP | DROCE_FLOW_UDP);
}

static bool
rss_ok(unsigned int port, const struct droce_rss_conf *r)
{
	uint32_t v4 = DROCE_RSS_SRC_IPV4 | DROCE_RSS_DST_IPV4;
	uint32_t v6 = DROCE_RSS_SRC_IPV6 | DROCE_RSS_DST_IPV6;
	uint32_t tcp = DROCE_RSS_SRC_PORT_TCP | DROCE_RSS_DST_PORT_TCP;
	uint32_t udp = DROCE_RSS_SRC_PORT_UDP | DROCE_RSS_DST_PORT_UDP;

	if ((r->fields & ~DROCE_RSS_FIELDS) || ((r->fields & v4) && (r->fields & v6)) ||
	    ((r->fields & tcp) && (r->fields & udp)) || r->n == 0 || (r->n & (r->n - 1)) ||
	    r->n > (1u << DROCE_RSS_MAX_LOG_TABLE) || r->qp == NULL)
		return false;
	for (uint32_t i = 0; i < r->n; i++)
		if (r->qp[i] == NULL || r->qp[i]->type != DROCE_QPT_RAW_PACKET ||
		    r->qp[i]->port_index != port)
			return false;
	return true;
}

struct droce_flow *
droce_flow_create(unsigned int port, struct droce_qp *qp, enum droce_flow_kind kind,
		  uint16_t priority, const struct droce_flow_spec *spec)
{
	return droce_flow_create_rss(port, qp, kind, priority, spec, NULL);
}

struct droce_flow *
droce_flow_create_rss(unsigned int port, struct droce_qp *qp, enum droce_flow_kind kind,
		      uint16_t priority, const struct droce_flow_spec *spec,
		      const struct droce_rss_conf *rss)
{
	struct droce_flow *f;
	int rc;

	if (port >= DROCE_MAX_PORTS || qp == NULL || qp->type != DROCE_QPT_RAW_PACKET ||
	    qp->port_index != port || (unsigned int)kind > DROCE_FLOW_SNIFFER ||
	    (kind == DROCE_FLOW_NORMAL && (spec == NULL || !spec_ok(spec))) ||
	    (rss != NULL && !rss_ok(port, rss))) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (rss != NULL) {
		f->rss = calloc(1, sizeof(*f->rss) + rss->n * sizeof(f->rss->t[0]));
		if (f->rss == NULL) {
			free(f);
			errno = ENOMEM;
			return NULL;
		}
		f->rss->fields = rss->fields;
		f->rss->mask = rss->n - 1;
		rss_key_convert(f->rss->key, rss->key);
		for (uint32_t i = 0; i < rss->n; i++) {
			f->rss->t[i].qp = rss->qp[i];
			f->rss->t[i].qpn = droce_qp_num(rss->qp[i]);
		}
	}
	f->port = port;
	f->qp = qp;
	f->qpn = droce_qp_num(qp);
	f->kind = kind;
	f->priority = priority;
	if (kind == DROCE_FLOW_NORMAL)
		f->spec = *spec;
	pthread_mutex_lock(&flow_lock);
	f->seq = ++flow_seq;
	f->next = flow_list[port];
	flow_list[port] = f;
	rc = republish(port);
	if (rc != 0) {
		flow_list[port] = f->next;
		pthread_mutex_unlock(&flow_lock);
		free(f->rss);
		free(f);
		errno = rc;
		return NULL;
	}
	pthread_mutex_unlock(&flow_lock);
	return f;
}

void
droce_flow_destroy(struct droce_flow *f)
{
	struct droce_flow **pp;

	if (f == NULL)
		return;
	pthread_mutex_lock(&flow_lock);
	for (pp = &flow_list[f->port]; *pp != NULL && *pp != f; pp = &(*pp)->next)
		;
	if (*pp == f)
		*pp = f->next;
	while (republish(f->port) != 0) {
		/* no memory for the smaller snapshot: unpublish the port's rules
		 * rather than leave the engines pointing at @f */
		struct droce_flow_table *old =
			atomic_exchange_explicit(&droce_flow_tab[f->port], NULL, memory_order_acq_rel);

		droce_dp_synchronize();
		free(old);
		break;
	}
	pthread_mutex_unlock(&flow_lock);
	free(f->rss);
	free(f);
}

unsigned int
droce_flow_count_qp(const struct droce_qp *qp)
{
	unsigned int n = 0;

	pthread_mutex_lock(&flow_lock);
	for (unsigned int p = 0; p < DROCE_MAX_PORTS; p++)
		for (struct droce_flow *f = flow_list[p]; f != NULL; f = f->next)
			n += f->qp == qp;
	pthread_mutex_unlock(&flow_lock);
	return n;
}
