/* SPDX-License-Identifier: BSD-3-Clause
 * The RAW_PACKET suites' helpers (raw_common.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "env.h"
#include "raw_common.h"

void
raw_post_recv(struct raw_qp *r, unsigned int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(r->rbuf + (size_t)slot * RAW_BUF),
			       .length = RAW_BUF, .lkey = r->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(r->qp, &wr, &bad), 0, "post_recv slot %u", slot);
}

void
raw_qp_open(struct raw_qp *r, struct ibv_context *ctx)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 64, .max_recv_wr = RAW_SLOTS, .max_send_sge = 4,
			 .max_recv_sge = 1, .max_inline_data = 128 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
		.max_tso_header = 128,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	memset(r, 0, sizeof(*r));
	r->ctx = ctx;
	r->pd = ibv_alloc_pd(ctx);
	cr_assert_not_null(r->pd);
	r->scq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	r->rcq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	cr_assert(r->scq && r->rcq);
	r->sbuf = aligned_alloc(4096, RAW_SEND);
	r->rbuf = aligned_alloc(4096, (size_t)RAW_SLOTS * RAW_BUF);
	cr_assert(r->sbuf && r->rbuf);
	memset(r->sbuf, 0, RAW_SEND);
	memset(r->rbuf, 0, (size_t)RAW_SLOTS * RAW_BUF);
	r->smr = ibv_reg_mr(r->pd, r->sbuf, RAW_SEND, IBV_ACCESS_LOCAL_WRITE);
	r->rmr = ibv_reg_mr(r->pd, r->rbuf, (size_t)RAW_SLOTS * RAW_BUF, IBV_ACCESS_LOCAL_WRITE);
	cr_assert(r->smr && r->rmr);
	ia.pd = r->pd;
	ia.send_cq = r->scq;
	ia.recv_cq = r->rcq;
	r->qp = ibv_create_qp_ex(ctx, &ia);
	cr_assert_not_null(r->qp, "raw QP: %s", strerror(errno));
	cr_assert_eq(r->qp->qp_type, IBV_QPT_RAW_PACKET);
	cr_assert_eq(ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PORT), 0, "to INIT");
	for (unsigned int i = 0; i < RAW_SLOTS; i++)
		raw_post_recv(r, i);
	a.qp_state = IBV_QPS_RTR;
	cr_assert_eq(ibv_modify_qp(r->qp, &a, IBV_QP_STATE), 0, "to RTR");
	a.qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(r->qp, &a, IBV_QP_STATE), 0, "to RTS");
}

void
raw_qp_close(struct raw_qp *r)
{
	cr_assert_eq(ibv_destroy_qp(r->qp), 0);
	ibv_dereg_mr(r->smr);
	ibv_dereg_mr(r->rmr);
	ibv_destroy_cq(r->scq);
	ibv_destroy_cq(r->rcq);
	ibv_dealloc_pd(r->pd);
	free(r->sbuf);
	free(r->rbuf);
}

int
raw_send(struct raw_qp *r, uint32_t off, uint32_t len, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(r->sbuf + off), .length = len,
			       .lkey = r->smr->lkey };
	struct ibv_send_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | flags };
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(r->qp, &wr, &bad);

	if (rc != 0)
		cr_assert_eq(bad, &wr, "bad_wr names the WR");
	return rc;
}

void
raw_send_done(struct raw_qp *r, enum ibv_wc_status st)
{
	struct ibv_wc wc = tc_wait(r->scq, 2000, "raw send completion");

	cr_assert_eq(wc.status, st, "send status %s, expected %s", ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(st));
	if (st == IBV_WC_SUCCESS)
		cr_assert_eq(wc.opcode, IBV_WC_SEND);
}

bool
raw_recv(struct raw_qp *r, unsigned int ms, unsigned int *slot, uint32_t *len,
	 unsigned int *wc_flags)
{
	struct ibv_wc wc;

	if (tc_poll(r->rcq, &wc, 1, ms) != 1)
		return false;
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "recv status %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.qp_num, r->qp->qp_num);
	*slot = (unsigned int)wc.wr_id;
	*len = wc.byte_len;
	*wc_flags = wc.wc_flags;
	return true;
}

/* ---- flows ---- */

void
raw_flow_init(struct raw_flow_attr *f, enum ibv_flow_attr_type type, uint16_t priority)
{
	memset(f, 0, sizeof(*f));
	f->attr.type = type;
	f->attr.size = sizeof(f->attr);
	f->attr.priority = priority;
	f->attr.port = 1;
}

/* Appends spec @s (built aligned by the caller) right after the last one, as
 * rdma-core lays them out (packed: not necessarily aligned). */
static void
put_spec(struct raw_flow_attr *f, struct ibv_flow_spec *s, enum ibv_flow_spec_type type,
	 uint16_t size)
{
	_Static_assert(offsetof(struct raw_flow_attr, specs) == sizeof(struct ibv_flow_attr),
		       "specs follow the attributes");
	cr_assert_leq(f->attr.size + size, sizeof(*f));
	s->hdr.type = type;
	s->hdr.size = size;
	memcpy(f->specs + (f->attr.size - sizeof(f->attr)), s, size);
	f->attr.size = (uint16_t)(f->attr.size + size);
	f->attr.num_of_specs++;
}

void
raw_flow_eth(struct raw_flow_attr *f, const uint8_t *dmac, uint16_t ether_type)
{
	struct ibv_flow_spec sp;
	struct ibv_flow_spec_eth *e = &sp.eth;

	memset(&sp, 0, sizeof(sp)); /* the whole union: masks left out are 0 */

	if (dmac) {
		memcpy(e->val.dst_mac, dmac, 6);
		memset(e->mask.dst_mac, 0xff, 6);
	}
	if (ether_type) {
		e->val.ether_type = htons(ether_type);
		e->mask.ether_type = 0xffff;
	}
	put_spec(f, &sp, IBV_FLOW_SPEC_ETH, sizeof(*e));
}

void
raw_flow_ipv4(struct raw_flow_attr *f, uint32_t src_be, uint32_t dst_be)
{
	struct ibv_flow_spec sp;
	struct ibv_flow_spec_ipv4 *s = &sp.ipv4;

	memset(&sp, 0, sizeof(sp));

	s->val.src_ip = src_be;
	s->mask.src_ip = src_be ? 0xffffffff : 0;
	s->val.dst_ip = dst_be;
	s->mask.dst_ip = dst_be ? 0xffffffff : 0;
	put_spec(f, &sp, IBV_FLOW_SPEC_IPV4, sizeof(*s));
}

void
raw_flow_ipv6(struct raw_flow_attr *f, const uint8_t dst[16])
{
	struct ibv_flow_spec sp;
	struct ibv_flow_spec_ipv6 *s = &sp.ipv6;

	memset(&sp, 0, sizeof(sp));

	memcpy(s->val.dst_ip, dst, 16);
	memset(s->mask.dst_ip, 0xff, 16);
	put_spec(f, &sp, IBV_FLOW_SPEC_IPV6, sizeof(*s));
}

void
raw_flow_l4(struct raw_flow_attr *f, bool tcp, uint16_t sport, uint16_t dport)
{
	struct ibv_flow_spec sp;
	struct ibv_flow_spec_tcp_udp *s = &sp.tcp_udp;

	memset(&sp, 0, sizeof(sp));

	s->val.src_port = htons(sport);
	s->mask.src_port = sport ? 0xffff : 0;
	s->val.dst_port = htons(dport);
	s->mask.dst_port = dport ? 0xffff : 0;
	put_spec(f, &sp, tcp ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP, sizeof(*s));
}

/* ---- frames ---- */

uint16_t
raw_csum(const void *p, size_t n, uint32_t init)
{
	const uint8_t *b = p;
	uint32_t s = init;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static size_t
put_eth(uint8_t *b, const struct raw_addr *a)
{
	memcpy(b, a->dmac, 6);
	memcpy(b + 6, a->smac, 6);
	b[12] = a->ipv6 ? 0x86 : 0x08;
	b[13] = a->ipv6 ? 0xdd : 0x00;
	return 14;
}

static size_t
put_ip(uint8_t *b, const struct raw_addr *a, uint8_t proto, size_t l4len, uint16_t ip_id)
{
	if (a->ipv6) {
		memset(b, 0, 40);
		b[0] = 0x60;
		b[4] = (uint8_t)(l4len >> 8);
		b[5] = (uint8_t)l4len;
		b[6] = proto;
		b[7] = 64;
		memcpy(b + 8, a->sip6, 16);
		memcpy(b + 24, a->dip6, 16);
		return 40;
	}
	memset(b, 0, 20);
	b[0] = 0x45;
	b[2] = (uint8_t)((20 + l4len) >> 8);
	b[3] = (uint8_t)(20 + l4len);
	b[4] = (uint8_t)(ip_id >> 8);
	b[5] = (uint8_t)ip_id;
	b[6] = 0x40; /* DF */
	b[8] = 64;
	b[9] = proto;
	memcpy(b + 12, &a->sip, 4);
	memcpy(b + 16, &a->dip, 4);
	return 20;
}

size_t
raw_udp_frame(uint8_t *b, const struct raw_addr *a, uint16_t sport, uint16_t dport, size_t plen,
	      uint32_t seed, uint16_t ip_id, uint16_t junk)
{
	size_t o = put_eth(b, a);
	size_t l3 = o;

	o += put_ip(b + o, a, 17, 8 + plen, ip_id);
	if (!a->ipv6) {
		b[l3 + 10] = (uint8_t)(junk >> 8);
		b[l3 + 11] = (uint8_t)junk;
	}
	b[o] = (uint8_t)(sport >> 8);
	b[o + 1] = (uint8_t)sport;
	b[o + 2] = (uint8_t)(dport >> 8);
	b[o + 3] = (uint8_t)dport;
	b[o + 4] = (uint8_t)((8 + plen) >> 8);
	b[o + 5] = (uint8_t)(8 + plen);
	b[o + 6] = (uint8_t)(junk >> 8);
	b[o + 7] = (uint8_t)junk;
	tc_fill(b + o + 8, plen, seed);
	return o + 8 + plen;
}

size_t
raw_tcp_hdr(uint8_t *b, const struct raw_addr *a, uint16_t sport, uint16_t dport, uint32_t seq,
	    uint32_t ack, uint8_t flags, uint16_t win, uint16_t mss, size_t plen, uint16_t ip_id)
{
	size_t tl = mss ? 24 : 20;
	size_t o = put_eth(b, a);
	uint8_t *t;

	o += put_ip(b + o, a, 6, tl + plen, ip_id);
	t = b + o;
	memset(t, 0, tl);
	t[0] = (uint8_t)(sport >> 8);
	t[1] = (uint8_t)sport;
	t[2] = (uint8_t)(dport >> 8);
	t[3] = (uint8_t)dport;
	seq = htonl(seq);
	ack = htonl(ack);
	memcpy(t + 4, &seq, 4);
	memcpy(t + 8, &ack, 4);
	t[12] = (uint8_t)((tl / 4) << 4);
	t[13] = flags;
	t[14] = (uint8_t)(win >> 8);
	t[15] = (uint8_t)win;
	if (mss) {
		t[20] = 2;
		t[21] = 4;
		t[22] = (uint8_t)(mss >> 8);
		t[23] = (uint8_t)mss;
	}
	return o + tl;
}

bool
raw_csums_valid(const uint8_t *b, size_t len)
{
	size_t l3 = 14, l4, l4len;
	uint8_t proto;
	uint32_t ph = 0;

	if (len < 14 + 20)
		return false;
	if (b[12] == 0x08 && b[13] == 0x00) {
		size_t ihl = (size_t)(b[l3] & 0xf) * 4, tot = (size_t)(b[l3 + 2] << 8 | b[l3 + 3]);

		if (raw_csum(b + l3, ihl, 0) != 0 || l3 + tot > len)
			return false;
		l4 = l3 + ihl;
		l4len = tot - ihl;
		proto = b[l3 + 9];
		for (int i = 12; i < 20; i += 2)
			ph += (uint32_t)(b[l3 + i] << 8 | b[l3 + i + 1]);
	} else if (b[12] == 0x86 && b[13] == 0xdd && len >= 14 + 40) {
		l4 = l3 + 40;
		l4len = (size_t)(b[l3 + 4] << 8 | b[l3 + 5]);
		proto = b[l3 + 6];
		if (l4 + l4len > len)
			return false;
		for (int i = 8; i < 40; i += 2)
			ph += (uint32_t)(b[l3 + i] << 8 | b[l3 + i + 1]);
	} else {
		return false;
	}
	if (proto != 6 && proto != 17)
		return false;
	if (proto == 17 && b[l4 + 6] == 0 && b[l4 + 7] == 0)
		return false; /* no checksum at all */
	ph += proto + (uint32_t)l4len;
	return raw_csum(b + l4, l4len, ph) == 0;
}
