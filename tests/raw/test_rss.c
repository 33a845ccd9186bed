/* SPDX-License-Identifier: BSD-3-Clause
 * Receive-side scaling on the in-memory port pair (droce0 -> droce1): WQs, an
 * indirection table and an RX hash RAW_PACKET QP with a flow.  The test has
 * its own bit-by-bit Toeplitz hash, checked against Microsoft's RSS
 * verification values for the standard key, then droce's hash against it
 * (IPv4, IPv6, ports), and each frame sent must arrive intact on the WQ
 * table[hash & (size - 1)] says.  Then the errno cases (EBUSY while a table /
 * QP / flow holds the object, EINVAL, EOPNOTSUPP), the WQ states
 * (ERR flushes) and query_device_ex's rss_caps.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "dataplane/dp.h"
#include "env.h"
#include "raw_common.h"

static const uint8_t MAC0[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };
static const uint8_t MAC1[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x02 };

/* Microsoft's RSS verification key (the 40-byte default of many NICs). */
static const uint8_t MS_KEY[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* Toeplitz, as the Microsoft RSS specification writes it: for each set bit of
 * the input (most significant first), XOR the 32 key bits starting there. */
static uint32_t
toeplitz(const uint8_t *key, const uint8_t *in, size_t n)
{
	uint32_t h = 0, win = (uint32_t)key[0] << 24 | key[1] << 16 | key[2] << 8 | key[3];

	for (size_t i = 0; i < n; i++)
		for (int b = 7; b >= 0; b--) {
			if (in[i] & (1u << b))
				h ^= win;
			win = win << 1 | ((key[i + 4] >> b) & 1u);
		}
	return h;
}

/* The input of an IPv4 frame: source and destination address, then (when
 * @ports) source and destination port, in network order. */
static uint32_t
ref_v4(const char *src, const char *dst, int sport, int dport, bool ports)
{
	uint8_t in[12];
	uint32_t s = inet_addr(src), d = inet_addr(dst);
	uint16_t sp = htons((uint16_t)sport), dp = htons((uint16_t)dport);

	memcpy(in, &s, 4);
	memcpy(in + 4, &d, 4);
	memcpy(in + 8, &sp, 2);
	memcpy(in + 10, &dp, 2);
	return toeplitz(MS_KEY, in, ports ? 12 : 8);
}

Test(rss_ref, toeplitz_matches_microsofts_values)
{
	static const struct {
		const char *src, *dst;
		int sport, dport;
		uint32_t ip, ip_ports;
	} v[] = {
		{ "66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178 },
		{ "199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea },
		{ "24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a },
		{ "38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f },
		{ "153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_expect_eq(ref_v4(v[i].src, v[i].dst, 0, 0, false), v[i].ip, "%s -> %s", v[i].src,
			     v[i].dst);
		cr_expect_eq(ref_v4(v[i].src, v[i].dst, v[i].sport, v[i].dport, true), v[i].ip_ports,
			     "%s:%d -> %s:%d", v[i].src, v[i].sport, v[i].dst, v[i].dport);
	}
}

/* droce's hash of whole frames (dataplane/flow.c, rte_softrss_be) against the
 * reference: IPv4 addresses, one address, addresses and UDP ports, IPv6. */
Test(rss_ref, droce_hash_of_frames_matches_the_reference)
{
	struct droce_rss_conf c = { 0 };
	struct raw_addr a = { 0 };
	uint8_t f[256], in[36];
	size_t len;

	memcpy(c.key, MS_KEY, 40);
	memcpy(a.smac, MAC0, 6);
	memcpy(a.dmac, MAC1, 6);
	a.sip = inet_addr("66.9.149.187");
	a.dip = inet_addr("161.142.100.80");
	len = raw_udp_frame(f, &a, 2794, 1766, 20, 1, 1, 0);
	c.fields = DROCE_RSS_SRC_IPV4 | DROCE_RSS_DST_IPV4;
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), 0x323e8fc2u);
	c.fields |= DROCE_RSS_SRC_PORT_UDP | DROCE_RSS_DST_PORT_UDP;
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), 0x51ccc178u);
	/* TCP port fields on a UDP frame: addresses only */
	c.fields = DROCE_RSS_SRC_IPV4 | DROCE_RSS_DST_IPV4 | DROCE_RSS_SRC_PORT_TCP;
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), 0x323e8fc2u);
	/* the destination address alone; the destination port alone */
	c.fields = DROCE_RSS_DST_IPV4;
	memcpy(in, &a.dip, 4);
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), toeplitz(MS_KEY, in, 4));
	c.fields = DROCE_RSS_DST_PORT_UDP;
	in[0] = 1766 >> 8;
	in[1] = 1766 & 0xff;
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), toeplitz(MS_KEY, in, 2));
	/* IPv6 addresses and ports */
	a.ipv6 = true;
	inet_pton(AF_INET6, "2001:2::1", a.sip6);
	inet_pton(AF_INET6, "2001:2:0:ff::2", a.dip6);
	len = raw_udp_frame(f, &a, 1000, 2000, 20, 1, 1, 0);
	memcpy(in, a.sip6, 16);
	memcpy(in + 16, a.dip6, 16);
	in[32] = 1000 >> 8;
	in[33] = 1000 & 0xff;
	in[34] = 2000 >> 8;
	in[35] = 2000 & 0xff;
	c.fields = DROCE_RSS_SRC_IPV6 | DROCE_RSS_DST_IPV6;
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), toeplitz(MS_KEY, in, 32));
	c.fields |= DROCE_RSS_SRC_PORT_UDP | DROCE_RSS_DST_PORT_UDP;
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), toeplitz(MS_KEY, in, 36));
	/* IPv4 fields on an IPv6 frame: nothing to hash */
	c.fields = DROCE_RSS_SRC_IPV4 | DROCE_RSS_DST_IPV4;
	cr_assert_eq(droce_rss_hash_frame(&c, f, (uint32_t)len), 0u);
}

/* ---- on the port pair ---- */

#define NWQ 4
#define WQ_SLOTS 64
#define SLOT 2048

static struct ibv_context *c0, *c1;
static struct raw_qp A;
static struct ibv_pd *pd;
static struct ibv_cq *cqs[2];
static struct ibv_wq *wqs[NWQ];
static uint8_t *rbuf;
static struct ibv_mr *rmr;

static void
setup(void)
{
	struct tc_pair o = { 0 };

	tc_start(&o);
	c0 = tc_open("droce0", NULL);
	c1 = tc_open("droce1", NULL);
	raw_qp_open(&A, c0);
	pd = ibv_alloc_pd(c1);
	cr_assert_not_null(pd);
	cqs[0] = ibv_create_cq(c1, 256, NULL, NULL, 0);
	cqs[1] = ibv_create_cq(c1, 256, NULL, NULL, 0);
	cr_assert(cqs[0] && cqs[1]);
	rbuf = aligned_alloc(4096, (size_t)NWQ * WQ_SLOTS * SLOT);
	cr_assert_not_null(rbuf);
	memset(rbuf, 0, (size_t)NWQ * WQ_SLOTS * SLOT);
	rmr = ibv_reg_mr(pd, rbuf, (size_t)NWQ * WQ_SLOTS * SLOT, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(rmr);
}

TestSuite(rss, .init = setup, .timeout = 60);

static struct ibv_wq *
make_wq(struct ibv_cq *cq)
{
	struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ, .max_wr = WQ_SLOTS, .max_sge = 1,
				       .pd = pd, .cq = cq };
	struct ibv_wq *wq = ibv_create_wq(c1, &wa);

	cr_assert_not_null(wq, "ibv_create_wq: %s", strerror(errno));
	return wq;
}

static int
wq_state(struct ibv_wq *wq, enum ibv_wq_state s)
{
	struct ibv_wq_attr a = { .attr_mask = IBV_WQ_ATTR_STATE, .wq_state = s };

	return ibv_modify_wq(wq, &a);
}

/* Slot @s of WQ @w: wr_id w << 16 | s. */
static int
wq_post(unsigned int w, unsigned int s)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(rbuf + ((size_t)w * WQ_SLOTS + s) * SLOT),
			       .length = SLOT, .lkey = rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = w << 16 | s, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_wq_recv(wqs[w], &wr, &bad);
}

static struct ibv_rwq_ind_table *
make_table(void)
{
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 2, .ind_tbl = wqs };
	struct ibv_rwq_ind_table *t = ibv_create_rwq_ind_table(c1, &ta);

	cr_assert_not_null(t, "ibv_create_rwq_ind_table: %s", strerror(errno));
	return t;
}

static struct ibv_qp *
make_rss_qp(struct ibv_rwq_ind_table *t, uint8_t func, uint8_t key_len, uint64_t fields)
{
	static uint8_t key[40];
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_RX_HASH |
			     IBV_QP_INIT_ATTR_IND_TABLE,
		.pd = pd,
		.rwq_ind_tbl = t,
		.rx_hash_conf = { .rx_hash_function = func, .rx_hash_key_len = key_len,
				  .rx_hash_key = key, .rx_hash_fields_mask = fields },
	};

	memcpy(key, MS_KEY, 40);
	return ibv_create_qp_ex(c1, &ia);
}

static struct ibv_flow *
flow_to(struct ibv_qp *qp)
{
	struct raw_flow_attr f;
	struct ibv_flow *fl;

	raw_flow_init(&f, IBV_FLOW_ATTR_NORMAL, 0);
	raw_flow_eth(&f, MAC1, 0);
	fl = ibv_create_flow(qp, &f.attr);
	cr_assert_not_null(fl, "ibv_create_flow: %s", strerror(errno));
	return fl;
}

Test(rss, frames_spread_as_toeplitz_says_bytes_intact)
{
	enum { N = 48 };
	struct raw_addr a = { 0 };
	struct ibv_rwq_ind_table *t;
	struct ibv_flow *fl;
	struct ibv_qp *qp;
	unsigned int seen[NWQ] = { 0 }, used = 0;

	for (unsigned int w = 0; w < NWQ; w++) {
		wqs[w] = make_wq(cqs[w % 2]);
		cr_assert_eq(wq_state(wqs[w], IBV_WQS_RDY), 0);
		cr_assert_eq(wqs[w]->state, IBV_WQS_RDY);
		for (unsigned int s = 0; s < WQ_SLOTS; s++)
			cr_assert_eq(wq_post(w, s), 0);
	}
	t = make_table();
	qp = make_rss_qp(t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
			 IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4);
	cr_assert_not_null(qp, "RSS QP: %s", strerror(errno));
	fl = flow_to(qp);
	memcpy(a.smac, MAC0, 6);
	memcpy(a.dmac, MAC1, 6);
	a.dip = inet_addr("198.18.0.2");
	for (unsigned int i = 0; i < N; i++) {
		char src[32];
		uint8_t *b = A.sbuf + (size_t)i * 256;
		size_t len;
		unsigned int w;
		struct ibv_wc wc;

		snprintf(src, sizeof(src), "198.18.%u.%u", 1 + i / 7, 1 + (i * 37) % 250);
		a.sip = inet_addr(src);
		len = raw_udp_frame(b, &a, 4000 + i, 5000, 100 + i, 7 + i, (uint16_t)i, 0);
		w = ref_v4(src, "198.18.0.2", 0, 0, false) & (NWQ - 1);
		cr_assert_eq(raw_send(&A, i * 256, (uint32_t)len, 0), 0);
		raw_send_done(&A, IBV_WC_SUCCESS);
		wc = tc_wait(cqs[w % 2], 5000, "frame on its WQ");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
		cr_assert_eq(wc.qp_num, wqs[w]->wq_num, "frame %u from %s: WQ %u expected", i, src, w);
		cr_assert_eq(wc.wr_id >> 16, w);
		cr_assert_eq(wc.byte_len, len);
		cr_assert_eq(memcmp(rbuf + ((size_t)w * WQ_SLOTS + (wc.wr_id & 0xffff)) * SLOT, b,
				    len), 0, "frame %u bytes", i);
		if (seen[w]++ == 0)
			used++;
	}
	cr_assert_geq(used, 3, "the addresses spread over %u WQs", used);
	tc_expect_none(cqs[0], 50, "cq0");
	tc_expect_none(cqs[1], 50, "cq1");

	/* what holds what */
	cr_assert_eq(ibv_destroy_wq(wqs[0]), EBUSY);
	cr_assert_eq(ibv_destroy_rwq_ind_table(t), EBUSY);
	cr_assert_eq(ibv_destroy_qp(qp), EBUSY);
	cr_assert_eq(ibv_destroy_flow(fl), 0);
	cr_assert_eq(ibv_destroy_rwq_ind_table(t), EBUSY);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_wq(wqs[0]), EBUSY);
	cr_assert_eq(ibv_destroy_rwq_ind_table(t), 0);
	for (unsigned int w = 0; w < NWQ; w++)
		cr_assert_eq(ibv_destroy_wq(wqs[w]), 0);
	cr_assert_eq(ibv_destroy_cq(cqs[0]), 0, "the WQs let go of their CQs");
}

Test(rss, errors_and_states)
{
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 9, .ind_tbl = wqs };
	struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ, .max_wr = 4, .max_sge = 1,
				       .pd = pd, .cq = cqs[0] };
	struct ibv_send_wr sw = { .opcode = IBV_WR_SEND }, *sbad;
	struct ibv_recv_wr rw = { 0 }, *rbad;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_device_attr_ex dx;
	struct ibv_rwq_ind_table *t;
	struct ibv_qp *qp;
	struct ibv_wc wc;

	cr_assert_eq(ibv_query_device_ex(c1, NULL, &dx), 0);
	cr_assert_eq(dx.rss_caps.supported_qpts, 1u << IBV_QPT_RAW_PACKET);
	cr_assert_eq(dx.rss_caps.rx_hash_function, IBV_RX_HASH_FUNC_TOEPLITZ);
	cr_assert_eq(dx.rss_caps.max_rwq_indirection_table_size, 256u);
	cr_assert_eq(dx.rss_caps.rx_hash_fields_mask, 0xffu);
	cr_assert_gt(dx.max_wq_type_rq, 0u);

	wa.wq_type = (enum ibv_wq_type)1;
	errno = 0;
	cr_assert_null(ibv_create_wq(c1, &wa));
	cr_assert_eq(errno, EOPNOTSUPP);
	wa.wq_type = IBV_WQT_RQ;
	wa.cq = NULL;
	cr_assert_null(ibv_create_wq(c1, &wa));
	cr_assert_eq(errno, EINVAL);
	wa.cq = cqs[0];
	for (unsigned int w = 0; w < NWQ; w++)
		wqs[w] = ibv_create_wq(c1, &wa);
	/* RESET takes no receive WR */
	cr_assert_eq(wq_post(0, 0), EINVAL);
	/* a table of 512 WQs: over rss_caps */
	cr_assert_null(ibv_create_rwq_ind_table(c1, &ta));
	cr_assert_eq(errno, EINVAL);
	ta.log_ind_tbl_size = 2;
	ta.comp_mask = 1;
	cr_assert_null(ibv_create_rwq_ind_table(c1, &ta));
	cr_assert_eq(errno, EINVAL);
	t = make_table();
	/* RX hash QPs: IPv4 with IPv6, TCP with UDP, a short key: EINVAL;
	 * XOR or the IPsec SPI: EOPNOTSUPP */
	cr_assert_null(make_rss_qp(t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
				   IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV6));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(make_rss_qp(t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
				   IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(make_rss_qp(t, IBV_RX_HASH_FUNC_TOEPLITZ, 20, IBV_RX_HASH_SRC_IPV4));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(make_rss_qp(t, 2, 40, IBV_RX_HASH_SRC_IPV4));
	cr_assert_eq(errno, EOPNOTSUPP);
	cr_assert_null(make_rss_qp(t, IBV_RX_HASH_FUNC_TOEPLITZ, 40, IBV_RX_HASH_IPSEC_SPI));
	cr_assert_eq(errno, EOPNOTSUPP);
	qp = make_rss_qp(t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
			 IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP |
				 IBV_RX_HASH_DST_PORT_TCP);
	cr_assert_not_null(qp, "%s", strerror(errno));
	/* receive only, no state */
	cr_assert_eq(ibv_post_send(qp, &sw, &sbad), EINVAL);
	cr_assert_eq(ibv_post_recv(qp, &rw, &rbad), EINVAL);
	cr_assert_eq(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT), EOPNOTSUPP);
	{
		struct ibv_qp_init_attr qi;

		cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), EOPNOTSUPP);
	}
	/* WQ states: RDY takes receives, ERR flushes them, RESET back */
	cr_assert_eq(wq_state(wqs[1], IBV_WQS_RDY), 0);
	cr_assert_eq(wq_post(1, 0), 0);
	cr_assert_eq(wq_state(wqs[1], IBV_WQS_ERR), 0);
	cr_assert_eq(wqs[1]->state, IBV_WQS_ERR);
	wc = tc_wait(cqs[0], 2000, "flushed receive");
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc.wr_id, 1u << 16);
	cr_assert_eq(wc.qp_num, wqs[1]->wq_num);
	cr_assert_eq(wq_state(wqs[1], IBV_WQS_RDY), EINVAL, "ERR -> RDY goes through RESET");
	cr_assert_eq(wq_state(wqs[1], IBV_WQS_RESET), 0);
	cr_assert_eq(wq_state(wqs[1], IBV_WQS_RDY), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_rwq_ind_table(t), 0);
	for (unsigned int w = 0; w < NWQ; w++)
		cr_assert_eq(ibv_destroy_wq(wqs[w]), 0);
}
