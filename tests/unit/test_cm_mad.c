/* SPDX-License-Identifier: BSD-3-Clause
 * The CM MAD codec (verbs_api/cm_mad.c): round trips of every message with
 * every field at its widest, exact bytes at the offsets IBTA vol. 1 ch. 12
 * gives (typed here as plain numbers, independently of cm_mad.c's tables),
 * what decode refuses, a fixed-seed fuzz loop, and tshark's InfiniBand CM
 * dissector reading the same MADs inside RoCEv2 UD SENDs to QP1.
 *
 * Over 800 lines because every CM message's every field is typed out here
 * as plain offsets and values, independently of cm_mad.c's tables: the
 * expected bytes are the bulk, not logic.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "dataplane/wire.h"
#include "pcap.h"
#include "verbs_api/cm_mad.h"

extern char **environ;

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const uint16_t all_attrs[] = {
	DROCE_CM_ATTR_REQ, DROCE_CM_ATTR_MRA, DROCE_CM_ATTR_REJ,
	DROCE_CM_ATTR_REP, DROCE_CM_ATTR_RTU, DROCE_CM_ATTR_DREQ,
	DROCE_CM_ATTR_DREP, DROCE_CM_ATTR_SIDR_REQ, DROCE_CM_ATTR_SIDR_REP,
};

/* Private data with a pattern that differs per message type and per byte
 * (one buffer per seed, so messages made one after another keep theirs). */
static const uint8_t *
pattern(uint8_t seed, size_t n)
{
	static uint8_t bufs[256][DROCE_MAD_SIZE];

	for (size_t i = 0; i < n; i++)
		bufs[seed][i] = (uint8_t)(seed + i * 7u + 1u);
	return bufs[seed];
}

/* 2001:db8::1 and ::ffff:198.18.0.2 */
static const uint8_t gid_a[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x01 };
static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };

/* A message of type @attr with every field non-zero, most at their maximum. */
static void
make_msg(struct droce_cm_msg *m, uint16_t attr)
{
	memset(m, 0, sizeof(*m));
	m->attr = attr;
	m->tid = 0xfedcba9876543210ull;
	m->local_comm_id = 0xdeadbeef;
	m->remote_comm_id = 0xc0ffee01;
	m->private_data_len = (uint8_t)droce_cm_pdata_size(attr);
	m->private_data = pattern((uint8_t)attr, m->private_data_len);

	switch (attr) {
	case DROCE_CM_ATTR_REQ: {
		struct droce_cm_req *r = &m->u.req.req;

		m->remote_comm_id = 0;
		m->local_ca_guid = 0x0002c903000a0b0cull;
		memcpy(r->addr.sgid, gid_a, 16);
		memcpy(r->addr.dgid, gid_b, 16);
		r->addr.flow_label = 0xfffff;
		r->addr.traffic_class = 0xff;
		r->addr.hop_limit = 0xfe;
		r->service_id = 0x0000000001060000ull | 0xabcd; /* RDMA_PS_TCP, port */
		r->qpn = 0xffffff;
		r->starting_psn = 0xffffff;
		r->qp_type = 3; /* UC: transport type 1 */
		r->responder_resources = 0xff;
		r->initiator_depth = 0xfe;
		r->path_mtu = 5;
		r->local_ack_timeout = 31;
		r->retry_count = 7;
		r->rnr_retry_count = 7;
		r->cm_response_timeout = 31;
		r->max_cm_retries = 15;
		r->srq = true;
		m->u.req.pkey = 0xffff;
		m->u.req.packet_rate = 63;
		m->u.req.sl = 15;
		m->u.req.subnet_local = 1;
		m->u.req.local_cm_response_timeout = 30;
		m->u.req.e2e_flow_control = 1;
		break;
	}
	case DROCE_CM_ATTR_REP: {
		struct droce_cm_rep *r = &m->u.rep.rep;

		m->local_ca_guid = 0xffffffffffffffffull;
		r->qpn = 0xffffff;
		r->starting_psn = 0xfffffe;
		r->responder_resources = 0xff;
		r->initiator_depth = 0xfd;
		r->rnr_retry_count = 7;
		r->target_ack_delay = 31;
		r->srq = true;
		m->u.rep.failover_accepted = 3;
		m->u.rep.e2e_flow_control = 1;
		break;
	}
	case DROCE_CM_ATTR_REJ:
		m->u.rej.msg_rejected = DROCE_CM_MSG_REF_OTHER;
		m->u.rej.reason = 0xffff;
		m->u.rej.ari_len = DROCE_CM_REJ_ARI;
		for (int i = 0; i < DROCE_CM_REJ_ARI; i++)
			m->u.rej.ari[i] = (uint8_t)(0xa0 ^ i);
		break;
	case DROCE_CM_ATTR_MRA:
		m->u.mra.msg_mraed = DROCE_CM_MSG_REF_OTHER;
		m->u.mra.service_timeout = 31;
		break;
	case DROCE_CM_ATTR_DREQ:
		m->u.dreq.remote_qpn = 0xffffff;
		break;
	case DROCE_CM_ATTR_SIDR_REQ:
		m->remote_comm_id = 0;
		m->u.sidr_req.pkey = 0xfffe;
		m->u.sidr_req.service_id = 0xffffffffffffffffull;
		break;
	case DROCE_CM_ATTR_SIDR_REP:
		m->remote_comm_id = 0;
		m->u.sidr_rep.status = 0xff;
		m->u.sidr_rep.qpn = 0xffffff;
		m->u.sidr_rep.qkey = 0xffffffff;
		m->sidr_rep_service_id = 0x8000000000000001ull;
		break;
	default:
		break;
	}
}

/* Every field decode fills, compared with what went in. */
static void
assert_same(const struct droce_cm_msg *a, const struct droce_cm_msg *b, const uint8_t *mad)
{
	size_t pl = droce_cm_pdata_size(a->attr);

	cr_assert_eq(b->attr, a->attr);
	cr_assert_eq(b->tid, a->tid);
	cr_assert_eq(b->local_comm_id, a->local_comm_id, "attr 0x%x", a->attr);
	cr_assert_eq(b->remote_comm_id, a->remote_comm_id, "attr 0x%x", a->attr);
	cr_assert_eq(b->local_ca_guid, a->local_ca_guid);
	cr_assert_eq(b->private_data_len, pl);
	cr_assert(b->private_data >= mad && b->private_data + pl == mad + DROCE_MAD_SIZE,
		  "attr 0x%x: private data is not the MAD's tail", a->attr);
	cr_assert_arr_eq(b->private_data, a->private_data, a->private_data_len);
	for (size_t i = a->private_data_len; i < pl; i++)
		cr_assert_eq(b->private_data[i], 0);

	switch (a->attr) {
	case DROCE_CM_ATTR_REQ: {
		const struct droce_cm_req *x = &a->u.req.req, *y = &b->u.req.req;

		cr_assert_arr_eq(y->addr.sgid, x->addr.sgid, 16);
		cr_assert_arr_eq(y->addr.dgid, x->addr.dgid, 16);
		cr_assert_eq(y->addr.flow_label, x->addr.flow_label);
		cr_assert_eq(y->addr.traffic_class, x->addr.traffic_class);
		cr_assert_eq(y->addr.hop_limit, x->addr.hop_limit);
		cr_assert_eq(y->service_id, x->service_id);
		cr_assert_eq(y->qpn, x->qpn);
		cr_assert_eq(y->starting_psn, x->starting_psn);
		cr_assert_eq(y->qp_type, x->qp_type);
		cr_assert_eq(y->responder_resources, x->responder_resources);
		cr_assert_eq(y->initiator_depth, x->initiator_depth);
		cr_assert_eq(y->path_mtu, x->path_mtu);
		cr_assert_eq(y->local_ack_timeout, x->local_ack_timeout);
		cr_assert_eq(y->retry_count, x->retry_count);
		cr_assert_eq(y->rnr_retry_count, x->rnr_retry_count);
		cr_assert_eq(y->cm_response_timeout, x->cm_response_timeout);
		cr_assert_eq(y->max_cm_retries, x->max_cm_retries);
		cr_assert_eq(y->srq, x->srq);
		cr_assert_eq(y->private_data, b->private_data);
		cr_assert_eq(y->private_data_len, DROCE_CM_REQ_PDATA);
		cr_assert_eq(b->u.req.pkey, a->u.req.pkey);
		cr_assert_eq(b->u.req.packet_rate, a->u.req.packet_rate);
		cr_assert_eq(b->u.req.sl, a->u.req.sl);
		cr_assert_eq(b->u.req.subnet_local, a->u.req.subnet_local);
		cr_assert_eq(b->u.req.local_cm_response_timeout, a->u.req.local_cm_response_timeout);
		cr_assert_eq(b->u.req.e2e_flow_control, a->u.req.e2e_flow_control);
		break;
	}
	case DROCE_CM_ATTR_REP: {
		const struct droce_cm_rep *x = &a->u.rep.rep, *y = &b->u.rep.rep;

		cr_assert_eq(y->qpn, x->qpn);
		cr_assert_eq(y->starting_psn, x->starting_psn);
		cr_assert_eq(y->responder_resources, x->responder_resources);
		cr_assert_eq(y->initiator_depth, x->initiator_depth);
		cr_assert_eq(y->rnr_retry_count, x->rnr_retry_count);
		cr_assert_eq(y->target_ack_delay, x->target_ack_delay);
		cr_assert_eq(y->srq, x->srq);
		cr_assert_eq(y->private_data, b->private_data);
		cr_assert_eq(y->private_data_len, DROCE_CM_REP_PDATA);
		cr_assert_eq(b->u.rep.failover_accepted, a->u.rep.failover_accepted);
		cr_assert_eq(b->u.rep.e2e_flow_control, a->u.rep.e2e_flow_control);
		break;
	}
	case DROCE_CM_ATTR_REJ:
		cr_assert_eq(b->u.rej.msg_rejected, a->u.rej.msg_rejected);
		cr_assert_eq(b->u.rej.reason, a->u.rej.reason);
		cr_assert_eq(b->u.rej.ari_len, a->u.rej.ari_len);
		cr_assert_arr_eq(b->u.rej.ari, a->u.rej.ari, a->u.rej.ari_len);
		break;
	case DROCE_CM_ATTR_MRA:
		cr_assert_eq(b->u.mra.msg_mraed, a->u.mra.msg_mraed);
		cr_assert_eq(b->u.mra.service_timeout, a->u.mra.service_timeout);
		break;
	case DROCE_CM_ATTR_DREQ:
		cr_assert_eq(b->u.dreq.remote_qpn, a->u.dreq.remote_qpn);
		break;
	case DROCE_CM_ATTR_SIDR_REQ:
		cr_assert_eq(b->u.sidr_req.pkey, a->u.sidr_req.pkey);
		cr_assert_eq(b->u.sidr_req.service_id, a->u.sidr_req.service_id);
		cr_assert_eq(b->u.sidr_req.private_data, b->private_data);
		cr_assert_eq(b->u.sidr_req.private_data_len, DROCE_CM_SIDR_REQ_PDATA);
		break;
	case DROCE_CM_ATTR_SIDR_REP:
		cr_assert_eq(b->u.sidr_rep.status, a->u.sidr_rep.status);
		cr_assert_eq(b->u.sidr_rep.qpn, a->u.sidr_rep.qpn);
		cr_assert_eq(b->u.sidr_rep.qkey, a->u.sidr_rep.qkey);
		cr_assert_eq(b->sidr_rep_service_id, a->sidr_rep_service_id);
		cr_assert_eq(b->u.sidr_rep.private_data, b->private_data);
		cr_assert_eq(b->u.sidr_rep.private_data_len, DROCE_CM_SIDR_REP_PDATA);
		break;
	default:
		break;
	}
}

/* Big-endian integer of @n bytes at MAD byte @off. */
static uint64_t
be(const uint8_t *mad, unsigned int off, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | mad[off + i];
	return v;
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- basics ---- */

Test(cm_mad, timeout_encoding)
{
	cr_assert_eq(droce_cm_timeout_us(0), 4);          /* 4.096 */
	cr_assert_eq(droce_cm_timeout_us(1), 8);          /* 8.192 */
	cr_assert_eq(droce_cm_timeout_us(8), 1048);       /* 1048.576 */
	cr_assert_eq(droce_cm_timeout_us(14), 67108);     /* 67108.864 */
	cr_assert_eq(droce_cm_timeout_us(20), 4294967);   /* 4294967.296 */
	cr_assert_eq(droce_cm_timeout_us(31), 8796093022ull); /* 8796093022.208 */
	cr_assert_eq(droce_cm_timeout_us(32), droce_cm_timeout_us(31));
	cr_assert_eq(droce_cm_timeout_us(255), droce_cm_timeout_us(31));
	for (uint8_t e = 1; e <= 31; e++)
		cr_assert_gt(droce_cm_timeout_us(e), droce_cm_timeout_us(e - 1));
}

Test(cm_mad, private_data_sizes)
{
	/* IBTA: 256 - 24 - the fixed part of each message */
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_REQ), 92);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_MRA), 222);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_REJ), 148);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_REP), 196);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_RTU), 224);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_DREQ), 220);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_DREP), 224);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_SIDR_REQ), 216);
	cr_assert_eq(droce_cm_pdata_size(DROCE_CM_ATTR_SIDR_REP), 136);
	cr_assert_eq(droce_cm_pdata_size(0x19), 0); /* LAP */
	cr_assert_eq(droce_cm_pdata_size(0), 0);
}

/* ---- (a) round trips ---- */

Test(cm_mad, every_message_round_trips_at_max_widths)
{
	for (size_t i = 0; i < NELEM(all_attrs); i++) {
		struct droce_cm_msg in, out;
		uint8_t mad[DROCE_MAD_SIZE];

		make_msg(&in, all_attrs[i]);
		cr_assert_eq(droce_cm_mad_encode(&in, mad), 0, "encode 0x%x", in.attr);
		cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &out), 0, "decode 0x%x", in.attr);
		assert_same(&in, &out, mad);
	}
}

Test(cm_mad, round_trips_with_other_values)
{
	/* RC, minimum MTU, zeros and alternating bits; short private data */
	for (size_t i = 0; i < NELEM(all_attrs); i++) {
		struct droce_cm_msg in, out;
		uint8_t mad[DROCE_MAD_SIZE];

		make_msg(&in, all_attrs[i]);
		in.tid = 1;
		in.local_comm_id = 0x55555555;
		in.private_data_len = 3;
		in.private_data = (const uint8_t *)"abc";
		switch (in.attr) {
		case DROCE_CM_ATTR_REQ:
			in.u.req.req.qp_type = 2;
			in.u.req.req.path_mtu = 1;
			in.u.req.req.qpn = 0x800001;
			in.u.req.req.starting_psn = 0;
			in.u.req.req.addr.flow_label = 0x80001;
			in.u.req.req.srq = false;
			in.u.req.req.retry_count = 5;
			in.u.req.packet_rate = 0x2a;
			in.u.req.e2e_flow_control = 0;
			break;
		case DROCE_CM_ATTR_REP:
			in.u.rep.failover_accepted = 1;
			in.u.rep.rep.srq = false;
			in.u.rep.rep.rnr_retry_count = 2;
			break;
		case DROCE_CM_ATTR_REJ:
			in.u.rej.msg_rejected = DROCE_CM_MSG_REF_REP;
			in.u.rej.ari_len = 0;
			in.u.rej.reason = DROCE_CM_REJ_CONSUMER_DEFINED;
			break;
		case DROCE_CM_ATTR_MRA:
			in.u.mra.msg_mraed = DROCE_CM_MSG_REF_REQ;
			in.u.mra.service_timeout = 0x15;
			break;
		default:
			break;
		}
		cr_assert_eq(droce_cm_mad_encode(&in, mad), 0, "encode 0x%x", in.attr);
		cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &out), 0, "decode 0x%x", in.attr);
		assert_same(&in, &out, mad);
	}
}

Test(cm_mad, null_private_data_is_zeros_and_longer_input_is_fine)
{
	struct droce_cm_msg in, out;
	uint8_t mad[300];

	make_msg(&in, DROCE_CM_ATTR_RTU);
	in.private_data = NULL;
	memset(mad, 0xee, sizeof(mad));
	cr_assert_eq(droce_cm_mad_encode(&in, mad), 0);
	cr_assert(all_zero(mad + 32, 224));
	cr_assert_eq(mad[256], 0xee, "encode wrote past 256 bytes");
	cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &out), 0);
	cr_assert_eq(out.private_data, mad + 32);
}

/* ---- (b) exact bytes at IBTA's offsets (MAD offsets = 24 + table offset) ---- */

static void
check_header(const uint8_t *mad, uint16_t attr, uint64_t tid)
{
	cr_assert_eq(mad[0], 1);    /* BaseVersion */
	cr_assert_eq(mad[1], 0x07); /* MgmtClass: CM */
	cr_assert_eq(mad[2], 2);    /* ClassVersion */
	cr_assert_eq(mad[3], 0x03); /* R = 0, Method = Send */
	cr_assert_eq(be(mad, 4, 2), 0);  /* Status */
	cr_assert_eq(be(mad, 6, 2), 0);  /* ClassSpecific */
	cr_assert_eq(be(mad, 8, 8), tid);
	cr_assert_eq(be(mad, 16, 2), attr);
	cr_assert_eq(be(mad, 18, 2), 0); /* reserved */
	cr_assert_eq(be(mad, 20, 4), 0); /* AttributeModifier */
}

Test(cm_mad, req_bytes_at_ibta_offsets)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_MAD_SIZE];

	make_msg(&m, DROCE_CM_ATTR_REQ);
	m.u.req.req.qpn = 0x123456;
	m.u.req.req.starting_psn = 0xabcdef;
	m.u.req.req.addr.flow_label = 0x12345;
	m.u.req.req.qp_type = 2; /* RC */
	m.u.req.req.retry_count = 5;
	m.u.req.req.rnr_retry_count = 6;
	m.u.req.req.path_mtu = 3;
	m.u.req.req.max_cm_retries = 9;
	m.u.req.req.local_ack_timeout = 19;
	m.u.req.req.cm_response_timeout = 22;
	m.u.req.local_cm_response_timeout = 21;
	m.u.req.packet_rate = 0x2b;
	m.u.req.sl = 0xa;
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);

	check_header(mad, 0x0010, m.tid);
	cr_assert_eq(be(mad, 24, 4), 0xdeadbeef);           /* Local Communication ID */
	cr_assert_eq(be(mad, 28, 4), 0);                    /* reserved */
	cr_assert_eq(be(mad, 32, 8), m.u.req.req.service_id); /* ServiceID */
	cr_assert_eq(be(mad, 40, 8), 0x0002c903000a0b0cull); /* Local CA GUID */
	cr_assert_eq(be(mad, 48, 4), 0);                    /* reserved */
	cr_assert_eq(be(mad, 52, 4), 0);                    /* Local Q_Key */
	cr_assert_eq(be(mad, 56, 3), 0x123456);             /* Local QPN */
	cr_assert_eq(mad[59], 0xff);                        /* Responder Resources */
	cr_assert_eq(be(mad, 60, 3), 0);                    /* Local EECN */
	cr_assert_eq(mad[63], 0xfe);                        /* Initiator Depth */
	cr_assert_eq(be(mad, 64, 3), 0);                    /* Remote EECN */
	/* Remote CM Response Timeout:5, Transport Service Type:2 (RC 0), E2E FC:1 */
	cr_assert_eq(mad[67], 22 << 3 | 0 << 1 | 1);
	cr_assert_eq(be(mad, 68, 3), 0xabcdef);             /* Starting PSN */
	cr_assert_eq(mad[71], 21 << 3 | 5);                 /* Local CM Resp Timeout:5, Retry:3 */
	cr_assert_eq(be(mad, 72, 2), 0xffff);               /* P_Key */
	cr_assert_eq(mad[74], 3 << 4 | 0 << 3 | 6);         /* MTU:4, RDC:1, RNR Retry:3 */
	cr_assert_eq(mad[75], 9 << 4 | 1 << 3 | 0);         /* Max CM Retries:4, SRQ:1, Ext:3 */
	cr_assert_eq(be(mad, 76, 2), 0xffff);               /* Primary Local Port LID */
	cr_assert_eq(be(mad, 78, 2), 0xffff);               /* Primary Remote Port LID */
	cr_assert_arr_eq(mad + 80, gid_a, 16);              /* Primary Local Port GID */
	cr_assert_arr_eq(mad + 96, gid_b, 16);              /* Primary Remote Port GID */
	cr_assert_eq(be(mad, 112, 4), 0x12345u << 12 | 0x2b); /* Flow Label:20, rsv:6, Rate:6 */
	cr_assert_eq(mad[116], 0xff);                       /* Traffic Class */
	cr_assert_eq(mad[117], 0xfe);                       /* Hop Limit */
	cr_assert_eq(mad[118], 0xa << 4 | 1 << 3);          /* SL:4, Subnet Local:1 */
	cr_assert_eq(mad[119], 19 << 3);                    /* Local ACK Timeout:5 */
	cr_assert(all_zero(mad + 120, 44), "alternate path not zero"); /* 120..163 */
	cr_assert_arr_eq(mad + 164, pattern(0x10, 92), 92); /* PrivateData */

	/* UC is transport type 1 */
	m.u.req.req.qp_type = 3;
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);
	cr_assert_eq(mad[67], 22 << 3 | 1 << 1 | 1);
}

Test(cm_mad, rep_bytes_at_ibta_offsets)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_MAD_SIZE];

	make_msg(&m, DROCE_CM_ATTR_REP);
	m.u.rep.rep.qpn = 0x010203;
	m.u.rep.rep.starting_psn = 0x0a0b0c;
	m.u.rep.rep.target_ack_delay = 17;
	m.u.rep.rep.rnr_retry_count = 5;
	m.u.rep.failover_accepted = 2;
	m.local_ca_guid = 0x1122334455667788ull;
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);

	check_header(mad, 0x0013, m.tid);
	cr_assert_eq(be(mad, 24, 4), 0xdeadbeef);    /* Local Communication ID */
	cr_assert_eq(be(mad, 28, 4), 0xc0ffee01);    /* Remote Communication ID */
	cr_assert_eq(be(mad, 32, 4), 0);             /* Local Q_Key */
	cr_assert_eq(be(mad, 36, 3), 0x010203);      /* Local QPN */
	cr_assert_eq(mad[39], 0);
	cr_assert_eq(be(mad, 40, 3), 0);             /* Local EE Context */
	cr_assert_eq(be(mad, 44, 3), 0x0a0b0c);      /* Starting PSN */
	cr_assert_eq(mad[48], 0xff);                 /* Responder Resources */
	cr_assert_eq(mad[49], 0xfd);                 /* Initiator Depth */
	cr_assert_eq(mad[50], 17 << 3 | 2 << 1 | 1); /* Target ACK Delay:5, Failover:2, E2E:1 */
	cr_assert_eq(mad[51], 5 << 5 | 1 << 4);      /* RNR Retry:3, SRQ:1 */
	cr_assert_eq(be(mad, 52, 8), 0x1122334455667788ull); /* Local CA GUID */
	cr_assert_arr_eq(mad + 60, pattern(0x13, 196), 196); /* PrivateData */
}

Test(cm_mad, rej_bytes_at_ibta_offsets)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_MAD_SIZE];

	make_msg(&m, DROCE_CM_ATTR_REJ);
	m.u.rej.msg_rejected = DROCE_CM_MSG_REF_REP;
	m.u.rej.ari_len = 5;
	m.u.rej.reason = DROCE_CM_REJ_INVALID_SERVICE_ID;
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);

	check_header(mad, 0x0012, m.tid);
	cr_assert_eq(be(mad, 24, 4), 0xdeadbeef);
	cr_assert_eq(be(mad, 28, 4), 0xc0ffee01);
	cr_assert_eq(mad[32], 1 << 6);              /* Message REJected:2 */
	cr_assert_eq(mad[33], 5 << 1);              /* Reject Info Length:7 */
	cr_assert_eq(be(mad, 34, 2), 8);            /* Reason */
	cr_assert_arr_eq(mad + 36, m.u.rej.ari, 5); /* ARI */
	cr_assert(all_zero(mad + 41, 67), "ARI past its length not zero"); /* 41..107 */
	cr_assert_arr_eq(mad + 108, pattern(0x12, 148), 148); /* PrivateData */
}

Test(cm_mad, other_messages_bytes_at_ibta_offsets)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_MAD_SIZE];

	make_msg(&m, DROCE_CM_ATTR_MRA);
	m.u.mra.msg_mraed = DROCE_CM_MSG_REF_REP;
	m.u.mra.service_timeout = 0x13;
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);
	check_header(mad, 0x0011, m.tid);
	cr_assert_eq(be(mad, 28, 4), 0xc0ffee01);
	cr_assert_eq(mad[32], 1 << 6);    /* Message MRAed:2 */
	cr_assert_eq(mad[33], 0x13 << 3); /* Service Timeout:5 */
	cr_assert_arr_eq(mad + 34, pattern(0x11, 222), 222);

	make_msg(&m, DROCE_CM_ATTR_DREQ);
	m.u.dreq.remote_qpn = 0x0c0d0e;
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);
	cr_assert_eq(be(mad, 32, 4), 0x0c0d0e00); /* Remote QPN/EECN:24, reserved:8 */
	cr_assert_arr_eq(mad + 36, pattern(0x15, 220), 220);

	make_msg(&m, DROCE_CM_ATTR_DREP);
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);
	cr_assert_eq(be(mad, 24, 8), 0xdeadbeefc0ffee01ull);
	cr_assert_arr_eq(mad + 32, pattern(0x16, 224), 224);

	make_msg(&m, DROCE_CM_ATTR_SIDR_REQ);
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);
	check_header(mad, 0x0017, m.tid);
	cr_assert_eq(be(mad, 24, 4), 0xdeadbeef); /* Request ID */
	cr_assert_eq(be(mad, 28, 4), 0xfffe0000); /* P_Key:16, reserved:16 */
	cr_assert_eq(be(mad, 32, 8), 0xffffffffffffffffull); /* ServiceID */
	cr_assert_arr_eq(mad + 40, pattern(0x17, 216), 216);

	make_msg(&m, DROCE_CM_ATTR_SIDR_REP);
	m.u.sidr_rep.status = DROCE_CM_SIDR_NO_QP;
	m.u.sidr_rep.qpn = 0x00abcd;
	m.u.sidr_rep.qkey = 0x80010000;
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);
	check_header(mad, 0x0018, m.tid);
	cr_assert_eq(be(mad, 24, 4), 0xdeadbeef); /* Request ID */
	cr_assert_eq(be(mad, 28, 4), 0x03000000); /* Status, AddInfoLen, reserved */
	cr_assert_eq(be(mad, 32, 4), 0x00abcd00); /* QPN:24, reserved:8 */
	cr_assert_eq(be(mad, 36, 8), 0x8000000000000001ull); /* ServiceID */
	cr_assert_eq(be(mad, 44, 4), 0x80010000); /* Q_Key */
	cr_assert(all_zero(mad + 48, 72));        /* ClassPortInfo */
	cr_assert_arr_eq(mad + 120, pattern(0x18, 136), 136);
}

/* ---- (c) what encode and decode refuse ---- */

Test(cm_mad, decode_rejects_bad_headers_and_attributes)
{
	struct droce_cm_msg m;
	uint8_t good[DROCE_MAD_SIZE], mad[DROCE_MAD_SIZE];

	make_msg(&m, DROCE_CM_ATTR_RTU);
	cr_assert_eq(droce_cm_mad_encode(&m, good), 0);

	cr_assert_eq(droce_cm_mad_decode(good, 255, &m), -EMSGSIZE);
	cr_assert_eq(droce_cm_mad_decode(good, 24, &m), -EMSGSIZE);
	cr_assert_eq(droce_cm_mad_decode(good, 0, &m), -EMSGSIZE);

	static const struct { unsigned int off; uint8_t v; } bad[] = {
		{ 0, 2 },    /* base version */
		{ 1, 0x03 }, /* SA class */
		{ 1, 0x87 },
		{ 2, 1 },    /* class version */
		{ 3, 0x01 }, /* Get */
		{ 3, 0x83 }, /* response bit */
		{ 3, 0x04 },
	};
	for (size_t i = 0; i < NELEM(bad); i++) {
		memcpy(mad, good, sizeof(mad));
		mad[bad[i].off] = bad[i].v;
		cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m), -EPROTONOSUPPORT,
			     "byte %u = 0x%x", bad[i].off, bad[i].v);
	}

	static const uint16_t unknown[] = { 0x0001, 0x000f, 0x0019 /* LAP */, 0x001a /* APR */,
					    0x0020, 0x1010, 0xff10 };
	for (size_t i = 0; i < NELEM(unknown); i++) {
		memcpy(mad, good, sizeof(mad));
		mad[16] = (uint8_t)(unknown[i] >> 8);
		mad[17] = (uint8_t)unknown[i];
		cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m), -ENOMSG,
			     "attribute 0x%04x", unknown[i]);
	}
	cr_assert_eq(droce_cm_mad_decode(good, sizeof(good), &m), 0);
}

Test(cm_mad, decode_rejects_out_of_range_fields)
{
	struct droce_cm_msg m;
	uint8_t good[DROCE_MAD_SIZE], mad[DROCE_MAD_SIZE];

	make_msg(&m, DROCE_CM_ATTR_REQ);
	m.u.req.req.qp_type = 2;
	cr_assert_eq(droce_cm_mad_encode(&m, good), 0);

	/* transport service type (byte 67 bits 5..6): RD (2) and 3 */
	for (uint8_t t = 2; t <= 3; t++) {
		memcpy(mad, good, sizeof(mad));
		mad[67] = (uint8_t)((mad[67] & ~0x06) | t << 1);
		cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m), -EINVAL, "type %u", t);
		cr_assert_eq(m.attr, 0, "a refused MAD left a half-decoded message");
	}
	/* path MTU (byte 74, high nibble): 0 and 6..15 */
	for (uint8_t mtu = 0; mtu < 16; mtu++) {
		memcpy(mad, good, sizeof(mad));
		mad[74] = (uint8_t)((mad[74] & 0x0f) | mtu << 4);
		cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m),
			     mtu >= 1 && mtu <= 5 ? 0 : -EINVAL, "mtu %u", mtu);
	}

	/* REJ: reject info length 73..127, message rejected 3 */
	make_msg(&m, DROCE_CM_ATTR_REJ);
	cr_assert_eq(droce_cm_mad_encode(&m, good), 0);
	memcpy(mad, good, sizeof(mad));
	mad[33] = 73 << 1;
	cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m), -EINVAL);
	mad[33] = 72 << 1;
	cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m), 0);
	mad[32] = 3 << 6;
	cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m), -EINVAL);

	/* MRA: message MRAed 3 */
	make_msg(&m, DROCE_CM_ATTR_MRA);
	cr_assert_eq(droce_cm_mad_encode(&m, mad), 0);
	mad[32] = 3 << 6;
	cr_assert_eq(droce_cm_mad_decode(mad, sizeof(mad), &m), -EINVAL);
}

Test(cm_mad, encode_rejects_what_does_not_fit)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_MAD_SIZE];

#define REFUSED(attr, stmt) do { \
		make_msg(&m, attr); \
		stmt; \
		cr_assert_eq(droce_cm_mad_encode(&m, mad), -EINVAL, "%s", #stmt); \
	} while (0)

	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.qpn = 0x1000000);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.starting_psn = 0x1000000);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.addr.flow_label = 0x100000);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.qp_type = 4); /* UD */
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.qp_type = 0);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.path_mtu = 0);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.path_mtu = 6);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.retry_count = 8);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.rnr_retry_count = 8);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.local_ack_timeout = 32);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.cm_response_timeout = 32);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.req.max_cm_retries = 16);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.sl = 16);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.packet_rate = 64);
	REFUSED(DROCE_CM_ATTR_REQ, m.u.req.subnet_local = 2);
	REFUSED(DROCE_CM_ATTR_REQ, m.private_data_len = 93);
	REFUSED(DROCE_CM_ATTR_REP, m.u.rep.rep.qpn = 0x1000000);
	REFUSED(DROCE_CM_ATTR_REP, m.u.rep.rep.target_ack_delay = 32);
	REFUSED(DROCE_CM_ATTR_REP, m.u.rep.failover_accepted = 4);
	REFUSED(DROCE_CM_ATTR_REP, m.private_data_len = 197);
	REFUSED(DROCE_CM_ATTR_REJ, m.u.rej.ari_len = 73);
	REFUSED(DROCE_CM_ATTR_REJ, m.u.rej.msg_rejected = 3);
	REFUSED(DROCE_CM_ATTR_MRA, m.u.mra.msg_mraed = 3);
	REFUSED(DROCE_CM_ATTR_MRA, m.u.mra.service_timeout = 32);
	REFUSED(DROCE_CM_ATTR_DREQ, m.u.dreq.remote_qpn = 0x1000000);
	REFUSED(DROCE_CM_ATTR_SIDR_REP, m.u.sidr_rep.qpn = 0x1000000);
	REFUSED(DROCE_CM_ATTR_SIDR_REP, m.private_data_len = 137);
	REFUSED(DROCE_CM_ATTR_REQ, m.attr = 0x19);
	REFUSED(DROCE_CM_ATTR_REQ, m.attr = 0);
#undef REFUSED
}

/* ---- (d) fuzz ---- */

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

Test(cm_mad, random_mads_never_crash_and_reencode_stably, .timeout = 60)
{
	/* exactly 256 heap bytes: ASan sees any read past them */
	uint8_t *mad = malloc(DROCE_MAD_SIZE);
	uint8_t *again = malloc(DROCE_MAD_SIZE);
	uint8_t *third = malloc(DROCE_MAD_SIZE);
	uint64_t seed = 0x243f6a8885a308d3ull;
	unsigned int ok = 0, einval = 0, per_attr[9] = { 0 };

	cr_assert(mad && again && third);
	for (unsigned int it = 0; it < 100000; it++) {
		struct droce_cm_msg m, m2;
		uint16_t attr;
		int rc;

		for (unsigned int i = 0; i < DROCE_MAD_SIZE; i += 8) {
			uint64_t r = xorshift(&seed);
			memcpy(mad + i, &r, 8);
		}
		attr = (uint16_t)(0x10 + xorshift(&seed) % 9);
		mad[0] = 1;
		mad[1] = 0x07;
		mad[2] = 2;
		mad[3] = 0x03;
		mad[16] = 0;
		mad[17] = (uint8_t)attr;

		if (it % 16 == 15) { /* now and then a short one */
			size_t len = xorshift(&seed) % DROCE_MAD_SIZE;

			cr_assert_eq(droce_cm_mad_decode(mad, len, &m), -EMSGSIZE);
			continue;
		}
		rc = droce_cm_mad_decode(mad, DROCE_MAD_SIZE, &m);
		if (rc == -EINVAL) {
			einval++;
			continue;
		}
		cr_assert_eq(rc, 0, "iteration %u attr 0x%x: %d", it, attr, rc);
		ok++;
		per_attr[attr - 0x10]++;
		cr_assert_eq(m.attr, attr);
		cr_assert_eq(m.private_data + m.private_data_len, mad + DROCE_MAD_SIZE);
		/* whatever decode accepts, encode takes back, and the result is a
		 * fixed point of decode + encode */
		cr_assert_eq(droce_cm_mad_encode(&m, again), 0, "iteration %u attr 0x%x", it, attr);
		cr_assert_eq(droce_cm_mad_decode(again, DROCE_MAD_SIZE, &m2), 0);
		cr_assert_eq(droce_cm_mad_encode(&m2, third), 0);
		cr_assert_arr_eq(third, again, DROCE_MAD_SIZE, "iteration %u attr 0x%x", it, attr);
	}
	cr_assert_gt(ok, 50000);
	cr_assert_gt(einval, 1000); /* REQs with bad transport / MTU, REJ / MRA refs */
	for (int i = 0; i < 9; i++)
		cr_assert_gt(per_attr[i], 1000, "attr 0x%x decoded only %u times", 0x10 + i,
			     per_attr[i]);
	free(mad);
	free(again);
	free(third);
}

/* ---- (e) tshark ---- */

#define FRAME_CAP 512

static const char *
find_tshark(void)
{
	static char path[512];
	const char *env = getenv("PATH");
	char *dirs, *save = NULL;

	if (env == NULL)
		env = "/usr/bin:/bin";
	dirs = strdup(env);
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/tshark", d);
		if (access(path, X_OK) == 0) {
			free(dirs);
			return path;
		}
	}
	free(dirs);
	return NULL;
}

/* Runs @argv with stdout to @out and stderr to @err; the exit status or -1. */
static int
run(char *const argv[], const char *out, const char *err)
{
	posix_spawn_file_actions_t fa;
	int status = -1;
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out, O_WRONLY | O_CREAT | O_TRUNC,
					 0644);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err, O_WRONLY | O_CREAT | O_TRUNC,
					 0644);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * The tshark fields compared, one column each, and what droce meant to put
 * there for frame @k (a message of all_attrs[k]).  NULL: the column must be
 * empty (the field belongs to another message).  Values are spelled the way
 * tshark 4.0 prints them (hex for fields it shows in hex, LIDs in decimal).
 *
 * Not compared: the REQ's Primary Flow Label and Packet Rate.  tshark 4.0
 * reads the flow label from 3 bytes under a 32-bit mask (0x12345 shows as
 * 0x123) and the packet rate from byte 88 instead of 91[2] (IBTA, Linux
 * CM_REQ_PRIMARY_PACKET_RATE); req_bytes_at_ibta_offsets checks both.
 */
static const char *const ts_fields[] = {
	"infiniband.mad.baseversion",
	"infiniband.mad.mgmtclass",
	"infiniband.mad.classversion",
	"infiniband.mad.method",
	"infiniband.mad.transactionid",
	"infiniband.mad.attributeid",
	"infiniband.bth.destqp",
	"infiniband.deth.q_key",
	"infiniband.cm.req",               /* REQ local comm ID */
	"infiniband.cm.req.serviceid",
	"infiniband.cm.req.localcaguid",
	"infiniband.cm.req.localqpn",
	"infiniband.cm.req.startpsn",
	"infiniband.cm.req.responderres",
	"infiniband.cm.req.initdepth",
	"infiniband.cm.req.remoteresptout",
	"infiniband.cm.req.transpsvctype",
	"infiniband.cm.req.e2eflowctrl",
	"infiniband.cm.req.localresptout",
	"infiniband.cm.req.retrcount",
	"infiniband.cm.req.pkey",
	"infiniband.cm.req.pppmtu",
	"infiniband.cm.req.rnrretrcount",
	"infiniband.cm.req.maxcmretr",
	"infiniband.cm.req.srq",
	"infiniband.cm.req.prim_locallid",
	"infiniband.cm.req.prim_remotelid",
	"infiniband.cm.req.prim_localgid",       /* IPv6 frames */
	"infiniband.cm.req.prim_remotegid",
	"infiniband.cm.req.prim_localgid_ipv4",  /* IPv4 frames */
	"infiniband.cm.req.prim_remotegid_ipv4",
	"infiniband.cm.req.prim_tfcclass",
	"infiniband.cm.req.prim_hoplim",
	"infiniband.cm.req.prim_sl",
	"infiniband.cm.req.prim_subnetlocal",
	"infiniband.cm.req.prim_localacktout",
	"infiniband.cm.rep",               /* REP local comm ID */
	"infiniband.cm.rep.remotecommid",
	"infiniband.cm.rep.localqpn",
	"infiniband.cm.rep.startpsn",
	"infiniband.cm.rep.respres",
	"infiniband.cm.rep.initdepth",
	"infiniband.cm.rep.tgtackdelay",
	"infiniband.cm.rep.failoveracc",
	"infiniband.cm.rep.e2eflowctrl",
	"infiniband.cm.rep.rnrretrcount",
	"infiniband.cm.rep.srq",
	"infiniband.cm.rep.localcaguid",
	"infiniband.cm.rtu.localcommid",
	"infiniband.cm.rtu.remotecommid",
	"infiniband.cm.rej.localcommid",
	"infiniband.cm.rej.remotecommid",
	"infiniband.cm.rej.msgrej",
	"infiniband.cm.rej.rejinfolen",
	"infiniband.cm.rej.reason",
	"infiniband.cm.dreq.localcommid",
	"infiniband.cm.dreq.remotecommid",
	"infiniband.cm.req.remoteqpneecn", /* tshark's name for the DREQ's remote QPN */
	"infiniband.cm.drsp.localcommid",
	"infiniband.cm.drsp.remotecommid",
	"infiniband.cm.rep.private",
	"infiniband.cm.rtu.private",
	"infiniband.cm.rej.ari",
	"infiniband.cm.rej.private",
	"infiniband.cm.dreq.private",
	"infiniband.cm.drsp.private",
};

#define TS_NFIELDS NELEM(ts_fields)

struct ts_expect {
	char v[TS_NFIELDS][3 * DROCE_MAD_SIZE];
};

static void
set_ex(struct ts_expect *x, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
set_ex(struct ts_expect *x, const char *field, const char *fmt, ...)
{
	va_list ap;

	for (size_t i = 0; i < TS_NFIELDS; i++) {
		if (strcmp(ts_fields[i], field) != 0)
			continue;
		va_start(ap, fmt);
		vsnprintf(x->v[i], sizeof(x->v[i]), fmt, ap);
		va_end(ap);
		return;
	}
	cr_assert_fail("no column %s", field);
}

/* Bytes the way tshark -T fields prints FT_BYTES: lower-case hex. */
static void
set_ex_bytes(struct ts_expect *x, const char *field, const uint8_t *b, size_t n)
{
	char s[3 * DROCE_MAD_SIZE] = "";
	size_t at = 0;

	for (size_t i = 0; i < n && at + 4 <= sizeof(s); i++)
		at += (size_t)snprintf(s + at, sizeof(s) - at, "%02x", b[i]);
	set_ex(x, field, "%s", s);
}

/* Private data as tshark shows it: what was sent, zero-padded to full size. */
static void
set_ex_pdata(struct ts_expect *x, const char *field, const struct droce_cm_msg *m)
{
	uint8_t full[DROCE_MAD_SIZE] = { 0 };

	memcpy(full, m->private_data, m->private_data_len);
	set_ex_bytes(x, field, full, droce_cm_pdata_size(m->attr));
}

static void
expect_for(struct ts_expect *x, const struct droce_cm_msg *m, bool v6)
{
	memset(x, 0, sizeof(*x));
	set_ex(x, "infiniband.mad.baseversion", "0x01");
	set_ex(x, "infiniband.mad.mgmtclass", "0x07");
	set_ex(x, "infiniband.mad.classversion", "0x02");
	set_ex(x, "infiniband.mad.method", "0x03");
	set_ex(x, "infiniband.mad.transactionid", "0x%016" PRIx64, m->tid);
	set_ex(x, "infiniband.mad.attributeid", "0x%04x", m->attr);
	set_ex(x, "infiniband.bth.destqp", "0x000001");
	set_ex(x, "infiniband.deth.q_key", "0x%016x", DROCE_CM_GSI_QKEY);

	switch (m->attr) {
	case DROCE_CM_ATTR_REQ: {
		const struct droce_cm_req *r = &m->u.req.req;
		char gid[64];

		set_ex(x, "infiniband.cm.req", "0x%08x", m->local_comm_id);
		set_ex(x, "infiniband.cm.req.serviceid", "0x%016" PRIx64, r->service_id);
		set_ex(x, "infiniband.cm.req.localcaguid", "0x%016" PRIx64, m->local_ca_guid);
		set_ex(x, "infiniband.cm.req.localqpn", "0x%06x", r->qpn);
		set_ex(x, "infiniband.cm.req.startpsn", "0x%06x", r->starting_psn);
		set_ex(x, "infiniband.cm.req.responderres", "0x%02x", r->responder_resources);
		set_ex(x, "infiniband.cm.req.initdepth", "0x%02x", r->initiator_depth);
		set_ex(x, "infiniband.cm.req.remoteresptout", "0x%02x", r->cm_response_timeout);
		set_ex(x, "infiniband.cm.req.transpsvctype", "0x%02x", r->qp_type == 2 ? 0 : 1);
		set_ex(x, "infiniband.cm.req.e2eflowctrl", "0x%02x", m->u.req.e2e_flow_control);
		set_ex(x, "infiniband.cm.req.localresptout", "0x%02x",
		       m->u.req.local_cm_response_timeout);
		set_ex(x, "infiniband.cm.req.retrcount", "0x%02x", r->retry_count);
		set_ex(x, "infiniband.cm.req.pkey", "0x%04x", m->u.req.pkey);
		set_ex(x, "infiniband.cm.req.pppmtu", "0x%02x", r->path_mtu);
		set_ex(x, "infiniband.cm.req.rnrretrcount", "0x%02x", r->rnr_retry_count);
		set_ex(x, "infiniband.cm.req.maxcmretr", "0x%02x", r->max_cm_retries);
		set_ex(x, "infiniband.cm.req.srq", "0x%02x", r->srq);
		set_ex(x, "infiniband.cm.req.prim_locallid", "65535");
		set_ex(x, "infiniband.cm.req.prim_remotelid", "65535");
		if (v6) {
			inet_ntop(AF_INET6, r->addr.sgid, gid, sizeof(gid));
			set_ex(x, "infiniband.cm.req.prim_localgid", "%s", gid);
			inet_ntop(AF_INET6, r->addr.dgid, gid, sizeof(gid));
			set_ex(x, "infiniband.cm.req.prim_remotegid", "%s", gid);
		} else { /* tshark shows a RoCEv2-over-IPv4 REQ's GIDs as IPv4 */
			inet_ntop(AF_INET, r->addr.sgid + 12, gid, sizeof(gid));
			set_ex(x, "infiniband.cm.req.prim_localgid_ipv4", "%s", gid);
			inet_ntop(AF_INET, r->addr.dgid + 12, gid, sizeof(gid));
			set_ex(x, "infiniband.cm.req.prim_remotegid_ipv4", "%s", gid);
		}
		set_ex(x, "infiniband.cm.req.prim_tfcclass", "0x%02x", r->addr.traffic_class);
		set_ex(x, "infiniband.cm.req.prim_hoplim", "0x%02x", r->addr.hop_limit);
		set_ex(x, "infiniband.cm.req.prim_sl", "0x%02x", m->u.req.sl);
		set_ex(x, "infiniband.cm.req.prim_subnetlocal", "0x%02x", m->u.req.subnet_local);
		set_ex(x, "infiniband.cm.req.prim_localacktout", "0x%02x", r->local_ack_timeout);
		break;
	}
	case DROCE_CM_ATTR_REP: {
		const struct droce_cm_rep *r = &m->u.rep.rep;

		set_ex(x, "infiniband.cm.rep", "0x%08x", m->local_comm_id);
		set_ex(x, "infiniband.cm.rep.remotecommid", "0x%08x", m->remote_comm_id);
		set_ex(x, "infiniband.cm.rep.localqpn", "0x%06x", r->qpn);
		set_ex(x, "infiniband.cm.rep.startpsn", "0x%06x", r->starting_psn);
		set_ex(x, "infiniband.cm.rep.respres", "0x%02x", r->responder_resources);
		set_ex(x, "infiniband.cm.rep.initdepth", "0x%02x", r->initiator_depth);
		set_ex(x, "infiniband.cm.rep.tgtackdelay", "0x%02x", r->target_ack_delay);
		set_ex(x, "infiniband.cm.rep.failoveracc", "0x%02x", m->u.rep.failover_accepted);
		set_ex(x, "infiniband.cm.rep.e2eflowctrl", "0x%02x", m->u.rep.e2e_flow_control);
		set_ex(x, "infiniband.cm.rep.rnrretrcount", "0x%02x", r->rnr_retry_count);
		set_ex(x, "infiniband.cm.rep.srq", "0x%02x", r->srq);
		set_ex(x, "infiniband.cm.rep.localcaguid", "0x%016" PRIx64, m->local_ca_guid);
		set_ex_pdata(x, "infiniband.cm.rep.private", m);
		break;
	}
	case DROCE_CM_ATTR_RTU:
		set_ex(x, "infiniband.cm.rtu.localcommid", "0x%08x", m->local_comm_id);
		set_ex(x, "infiniband.cm.rtu.remotecommid", "0x%08x", m->remote_comm_id);
		set_ex_pdata(x, "infiniband.cm.rtu.private", m);
		break;
	case DROCE_CM_ATTR_REJ:
		set_ex(x, "infiniband.cm.rej.localcommid", "0x%08x", m->local_comm_id);
		set_ex(x, "infiniband.cm.rej.remotecommid", "0x%08x", m->remote_comm_id);
		set_ex(x, "infiniband.cm.rej.msgrej", "0x%02x", m->u.rej.msg_rejected);
		set_ex(x, "infiniband.cm.rej.rejinfolen", "0x%02x", m->u.rej.ari_len);
		set_ex(x, "infiniband.cm.rej.reason", "0x%04x", m->u.rej.reason);
		{
			uint8_t ari[DROCE_CM_REJ_ARI] = { 0 };

			memcpy(ari, m->u.rej.ari, m->u.rej.ari_len);
			set_ex_bytes(x, "infiniband.cm.rej.ari", ari, sizeof(ari));
		}
		set_ex_pdata(x, "infiniband.cm.rej.private", m);
		break;
	case DROCE_CM_ATTR_DREQ:
		set_ex(x, "infiniband.cm.dreq.localcommid", "0x%08x", m->local_comm_id);
		set_ex(x, "infiniband.cm.dreq.remotecommid", "0x%08x", m->remote_comm_id);
		set_ex(x, "infiniband.cm.req.remoteqpneecn", "0x%06x", m->u.dreq.remote_qpn);
		set_ex_pdata(x, "infiniband.cm.dreq.private", m);
		break;
	case DROCE_CM_ATTR_DREP:
		set_ex(x, "infiniband.cm.drsp.localcommid", "0x%08x", m->local_comm_id);
		set_ex(x, "infiniband.cm.drsp.remotecommid", "0x%08x", m->remote_comm_id);
		set_ex_pdata(x, "infiniband.cm.drsp.private", m);
		break;
	default: /* MRA, SIDR: tshark 4.0 shows only the MAD header */
		break;
	}
}

Test(cm_mad, tshark_reads_the_same_fields, .timeout = 120)
{
	const char *tshark = find_tshark();
	char dir[] = "/tmp/droce-cmmad-XXXXXX";
	char pcap[64], out[64], err[64];
	static uint8_t frame[FRAME_CAP];
	struct droce_cm_msg msgs[NELEM(all_attrs) * 2];
	struct droce_hdr_tmpl tmpl[2]; /* [0] IPv4, [1] IPv6 */
	struct droce_path path;
	size_t nmsg = 0;
	FILE *pc;

	if (tshark == NULL)
		cr_skip_test("tshark not installed");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(pcap, sizeof(pcap), "%s/cm.pcap", dir);
	snprintf(out, sizeof(out), "%s/fields.txt", dir);
	snprintf(err, sizeof(err), "%s/stderr.txt", dir);

	memset(&path, 0, sizeof(path));
	path.src_mac = (struct rte_ether_addr){ { 0x02, 0xd0, 0xce, 0, 0, 1 } };
	path.dst_mac = (struct rte_ether_addr){ { 0x02, 0xd0, 0xce, 0, 0, 2 } };
	droce_gid_from_ipv4(path.src_gid, rte_cpu_to_be_32(198u << 24 | 18u << 16 | 1));
	droce_gid_from_ipv4(path.dst_gid, rte_cpu_to_be_32(198u << 24 | 18u << 16 | 2));
	path.udp_sport = 0xc0de;
	droce_tmpl_init(&tmpl[0], &path);
	path.ipv6 = true;
	memcpy(path.src_gid, gid_a, 16);
	memcpy(path.dst_gid, gid_a, 16);
	path.dst_gid[15] = 2;
	droce_tmpl_init(&tmpl[1], &path);

	/* each message twice: at its widest over IPv4, and with other values
	 * over IPv6; a REQ's GIDs are those of the frame carrying it */
	for (size_t i = 0; i < NELEM(all_attrs); i++) {
		make_msg(&msgs[nmsg], all_attrs[i]);
		if (all_attrs[i] == DROCE_CM_ATTR_REQ) {
			droce_gid_from_ipv4(msgs[nmsg].u.req.req.addr.sgid,
					    rte_cpu_to_be_32(198u << 24 | 18u << 16 | 1));
			droce_gid_from_ipv4(msgs[nmsg].u.req.req.addr.dgid,
					    rte_cpu_to_be_32(198u << 24 | 18u << 16 | 2));
		}
		nmsg++;
		make_msg(&msgs[nmsg], all_attrs[i]);
		msgs[nmsg].tid = 0x0000000100000002ull + i;
		msgs[nmsg].local_comm_id = 0x01020304u * (uint32_t)(i + 1);
		msgs[nmsg].remote_comm_id = 0x00a0b0c0u + (uint32_t)i;
		if (all_attrs[i] == DROCE_CM_ATTR_REQ) {
			struct droce_cm_req *r = &msgs[nmsg].u.req.req;

			memcpy(r->addr.sgid, path.src_gid, 16);
			memcpy(r->addr.dgid, path.dst_gid, 16);
			r->qp_type = 2;
			r->qpn = 0x000123;
			r->starting_psn = 0x800000;
			r->path_mtu = 3;
			r->srq = false;
			r->addr.flow_label = 0x12345;
			r->service_id = 0x0000000001060000ull | 18515;
			msgs[nmsg].u.req.e2e_flow_control = 0;
			msgs[nmsg].u.req.packet_rate = 3;
			msgs[nmsg].u.req.sl = 0;
			msgs[nmsg].u.req.subnet_local = 0;
		} else if (all_attrs[i] == DROCE_CM_ATTR_REP) {
			msgs[nmsg].u.rep.rep.qpn = 0x000042;
			msgs[nmsg].u.rep.rep.starting_psn = 0x000001;
			msgs[nmsg].u.rep.failover_accepted = 1;
			msgs[nmsg].u.rep.rep.srq = false;
		} else if (all_attrs[i] == DROCE_CM_ATTR_REJ) {
			msgs[nmsg].u.rej.reason = DROCE_CM_REJ_CONSUMER_DEFINED;
			msgs[nmsg].u.rej.msg_rejected = DROCE_CM_MSG_REF_REQ;
			msgs[nmsg].u.rej.ari_len = 0;
		} else if (all_attrs[i] == DROCE_CM_ATTR_DREQ) {
			msgs[nmsg].u.dreq.remote_qpn = 0x000011;
		}
		nmsg++;
	}

	pc = test_pcap_create(pcap);
	cr_assert_not_null(pc);
	for (size_t k = 0; k < nmsg; k++) {
		struct droce_pkt_fields f = { 0 };
		uint8_t mad[DROCE_MAD_SIZE];
		size_t len;

		cr_assert_eq(droce_cm_mad_encode(&msgs[k], mad), 0);
		f.opcode = 0x64; /* UD SEND only */
		f.pkey = 0xffff;
		f.dqpn = DROCE_CM_GSI_QPN;
		f.psn = (uint32_t)k;
		f.deth.qkey = DROCE_CM_GSI_QKEY;
		f.deth.src_qp = DROCE_CM_GSI_QPN;
		len = droce_build_frame(&tmpl[k & 1], frame, sizeof(frame), &f, mad, sizeof(mad));
		cr_assert_gt(len, 0);
		test_pcap_write(pc, frame, (uint32_t)len);
	}
	fclose(pc);

	{
		char *argv[8 + 2 * TS_NFIELDS + 1];
		int a = 0, rc;

		argv[a++] = (char *)tshark;
		argv[a++] = "-n";
		argv[a++] = "-r";
		argv[a++] = pcap;
		argv[a++] = "-d";
		argv[a++] = "udp.port==4791,infiniband";
		argv[a++] = "-T";
		argv[a++] = "fields";
		for (size_t i = 0; i < TS_NFIELDS; i++) {
			argv[a++] = "-e";
			argv[a++] = (char *)ts_fields[i];
		}
		argv[a] = NULL;
		rc = run(argv, out, err);
		cr_assert_eq(rc, 0, "tshark exited %d (see %s)", rc, err);
	}

	{
		FILE *f = fopen(out, "r");
		char line[8192];
		size_t k = 0;
		unsigned int bad = 0;

		cr_assert_not_null(f);
		while (fgets(line, sizeof(line), f) != NULL) {
			struct ts_expect x;
			char *col = line;
			size_t i = 0;

			cr_assert_lt(k, nmsg, "tshark printed more frames than written");
			line[strcspn(line, "\n")] = '\0';
			expect_for(&x, &msgs[k], k & 1);
			/* split on tabs, keeping empty columns */
			for (i = 0; i < TS_NFIELDS; i++) {
				char *tab = col ? strchr(col, '\t') : NULL;

				if (tab)
					*tab = '\0';
				if (strcmp(col ? col : "", x.v[i]) != 0) {
					cr_log_error("frame %zu (attr 0x%04x) %s: tshark '%s', droce '%s'",
						     k + 1, msgs[k].attr, ts_fields[i],
						     col ? col : "", x.v[i]);
					bad++;
				}
				col = tab ? tab + 1 : NULL;
			}
			k++;
		}
		fclose(f);
		cr_assert_eq(k, nmsg, "tshark printed %zu frames, %zu written; files kept in %s",
			     k, nmsg, dir);
		cr_assert_eq(bad, 0, "%u disagreements with tshark; files kept in %s", bad, dir);
	}
	unlink(pcap);
	unlink(out);
	unlink(err);
	rmdir(dir);
}
