/* SPDX-License-Identifier: BSD-3-Clause
 * The IB CM's MAD codec (IBTA vol. 1 §12.6 and §13.4.2).  Every field's
 * position lives in one table per message, written the way IBTA's message
 * tables are: byte offset (from the end of the 24-byte common MAD header),
 * first bit (0 = the byte's most significant bit) and width in bits.  Fields
 * up to 64 bits wide are big-endian bit strings read and written by get() and
 * put(); wider ones (GIDs, ARI, class port info, private data) are byte
 * arrays.  Encode and decode walk the fields by name.
 *
 * Over 800 lines because half of it is the field tables themselves (one per
 * message, row for row as IBTA prints them); the code that walks them is
 * about 400 lines of static helpers that encode and decode share.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cm_mad.h"

/* IBTA's name of every field this codec knows, across all messages. */
enum field_id {
	/* common MAD header (§13.4.2) */
	F_BASE_VERSION,
	F_MGMT_CLASS,
	F_CLASS_VERSION,
	F_RESPONSE,
	F_METHOD,
	F_STATUS,
	F_CLASS_SPECIFIC,
	F_TID,
	F_ATTR_ID,
	F_ATTR_MOD,
	/* CM messages */
	F_LOCAL_COMM_ID,
	F_REMOTE_COMM_ID,
	F_SERVICE_ID,
	F_LOCAL_CA_GUID,
	F_LOCAL_QKEY,
	F_LOCAL_QPN,
	F_RESPONDER_RESOURCES,
	F_LOCAL_EECN,
	F_INITIATOR_DEPTH,
	F_REMOTE_EECN,
	F_REMOTE_CM_RESPONSE_TIMEOUT,
	F_TRANSPORT_SERVICE_TYPE,
	F_E2E_FLOW_CONTROL,
	F_STARTING_PSN,
	F_LOCAL_CM_RESPONSE_TIMEOUT,
	F_RETRY_COUNT,
	F_PKEY,
	F_PATH_MTU,
	F_RDC_EXISTS,
	F_RNR_RETRY_COUNT,
	F_MAX_CM_RETRIES,
	F_SRQ,
	F_EXT_TRANSPORT_TYPE,
	F_PRI_LOCAL_LID,
	F_PRI_REMOTE_LID,
	F_PRI_LOCAL_GID,
	F_PRI_REMOTE_GID,
	F_PRI_FLOW_LABEL,
	F_PRI_PACKET_RATE,
	F_PRI_TRAFFIC_CLASS,
	F_PRI_HOP_LIMIT,
	F_PRI_SL,
	F_PRI_SUBNET_LOCAL,
	F_PRI_LOCAL_ACK_TIMEOUT,
	F_ALT_LOCAL_LID,
	F_ALT_REMOTE_LID,
	F_ALT_LOCAL_GID,
	F_ALT_REMOTE_GID,
	F_ALT_FLOW_LABEL,
	F_ALT_PACKET_RATE,
	F_ALT_TRAFFIC_CLASS,
	F_ALT_HOP_LIMIT,
	F_ALT_SL,
	F_ALT_SUBNET_LOCAL,
	F_ALT_LOCAL_ACK_TIMEOUT,
	F_SAP_SUPPORTED,
	F_MSG_MRAED,
	F_SERVICE_TIMEOUT,
	F_MSG_REJECTED,
	F_REJ_INFO_LEN,
	F_REASON,
	F_ARI,
	F_TARGET_ACK_DELAY,
	F_FAILOVER_ACCEPTED,
	F_REMOTE_QPN_EECN,
	F_REQUEST_ID,
	F_SIDR_STATUS,
	F_ADD_INFO_LEN,
	F_QPN,
	F_QKEY,
	F_CLASS_PORT_INFO,
	F_PRIVATE_DATA,
};

struct field {
	uint8_t id;     /* enum field_id */
	uint8_t byte;   /* offset from the layout's base */
	uint8_t bit;    /* first bit: 0 = the byte's most significant */
	uint16_t width; /* bits; more than 64: a byte array (bit is then 0) */
};

struct layout {
	uint16_t attr;  /* enum droce_cm_attr; 0 for the MAD header */
	uint8_t base;   /* where the table's offsets start in the MAD */
	const struct field *fields;
	size_t n;
};

#define LAYOUT(a, b, t) { .attr = (a), .base = (b), .fields = (t), .n = sizeof(t) / sizeof((t)[0]) }

/* IBTA vol. 1 §13.4.2, the common MAD header; offsets from the MAD's start. */
static const struct field hdr_fields[] = {
	{ F_BASE_VERSION, 0, 0, 8 },
	{ F_MGMT_CLASS, 1, 0, 8 },
	{ F_CLASS_VERSION, 2, 0, 8 },
	{ F_RESPONSE, 3, 0, 1 },
	{ F_METHOD, 3, 1, 7 },
	{ F_STATUS, 4, 0, 16 },
	{ F_CLASS_SPECIFIC, 6, 0, 16 },
	{ F_TID, 8, 0, 64 },
	{ F_ATTR_ID, 16, 0, 16 },
	/* 18: 16 bits reserved */
	{ F_ATTR_MOD, 20, 0, 32 },
};

/* REQ (IBTA table 99 in release 1.2; "REQ message contents"). */
static const struct field req_fields[] = {
	{ F_LOCAL_COMM_ID, 0, 0, 32 },
	/* 4: 32 bits reserved */
	{ F_SERVICE_ID, 8, 0, 64 },
	{ F_LOCAL_CA_GUID, 16, 0, 64 },
	/* 24: 32 bits reserved */
	{ F_LOCAL_QKEY, 28, 0, 32 },
	{ F_LOCAL_QPN, 32, 0, 24 },
	{ F_RESPONDER_RESOURCES, 35, 0, 8 },
	{ F_LOCAL_EECN, 36, 0, 24 },
	{ F_INITIATOR_DEPTH, 39, 0, 8 },
	{ F_REMOTE_EECN, 40, 0, 24 },
	{ F_REMOTE_CM_RESPONSE_TIMEOUT, 43, 0, 5 },
	{ F_TRANSPORT_SERVICE_TYPE, 43, 5, 2 },
	{ F_E2E_FLOW_CONTROL, 43, 7, 1 },
	{ F_STARTING_PSN, 44, 0, 24 },
	{ F_LOCAL_CM_RESPONSE_TIMEOUT, 47, 0, 5 },
	{ F_RETRY_COUNT, 47, 5, 3 },
	{ F_PKEY, 48, 0, 16 },
	{ F_PATH_MTU, 50, 0, 4 },
	{ F_RDC_EXISTS, 50, 4, 1 },
	{ F_RNR_RETRY_COUNT, 50, 5, 3 },
	{ F_MAX_CM_RETRIES, 51, 0, 4 },
	{ F_SRQ, 51, 4, 1 },
	{ F_EXT_TRANSPORT_TYPE, 51, 5, 3 },
	{ F_PRI_LOCAL_LID, 52, 0, 16 },
	{ F_PRI_REMOTE_LID, 54, 0, 16 },
	{ F_PRI_LOCAL_GID, 56, 0, 128 },
	{ F_PRI_REMOTE_GID, 72, 0, 128 },
	{ F_PRI_FLOW_LABEL, 88, 0, 20 },
	/* 90[4]: 6 bits reserved */
	{ F_PRI_PACKET_RATE, 91, 2, 6 },
	{ F_PRI_TRAFFIC_CLASS, 92, 0, 8 },
	{ F_PRI_HOP_LIMIT, 93, 0, 8 },
	{ F_PRI_SL, 94, 0, 4 },
	{ F_PRI_SUBNET_LOCAL, 94, 4, 1 },
	/* 94[5]: 3 bits reserved */
	{ F_PRI_LOCAL_ACK_TIMEOUT, 95, 0, 5 },
	/* 95[5]: 3 bits reserved */
	{ F_ALT_LOCAL_LID, 96, 0, 16 },
	{ F_ALT_REMOTE_LID, 98, 0, 16 },
	{ F_ALT_LOCAL_GID, 100, 0, 128 },
	{ F_ALT_REMOTE_GID, 116, 0, 128 },
	{ F_ALT_FLOW_LABEL, 132, 0, 20 },
	{ F_ALT_PACKET_RATE, 135, 2, 6 },
	{ F_ALT_TRAFFIC_CLASS, 136, 0, 8 },
	{ F_ALT_HOP_LIMIT, 137, 0, 8 },
	{ F_ALT_SL, 138, 0, 4 },
	{ F_ALT_SUBNET_LOCAL, 138, 4, 1 },
	{ F_ALT_LOCAL_ACK_TIMEOUT, 139, 0, 5 },
	{ F_SAP_SUPPORTED, 139, 5, 1 },
	{ F_PRIVATE_DATA, 140, 0, DROCE_CM_REQ_PDATA * 8 },
};

/* MRA. */
static const struct field mra_fields[] = {
	{ F_LOCAL_COMM_ID, 0, 0, 32 },
	{ F_REMOTE_COMM_ID, 4, 0, 32 },
	{ F_MSG_MRAED, 8, 0, 2 },
	{ F_SERVICE_TIMEOUT, 9, 0, 5 },
	{ F_PRIVATE_DATA, 10, 0, DROCE_CM_MRA_PDATA * 8 },
};

/* REJ. */
static const struct field rej_fields[] = {
	{ F_LOCAL_COMM_ID, 0, 0, 32 },
	{ F_REMOTE_COMM_ID, 4, 0, 32 },
	{ F_MSG_REJECTED, 8, 0, 2 },
	{ F_REJ_INFO_LEN, 9, 0, 7 },
	{ F_REASON, 10, 0, 16 },
	{ F_ARI, 12, 0, DROCE_CM_REJ_ARI * 8 },
	{ F_PRIVATE_DATA, 84, 0, DROCE_CM_REJ_PDATA * 8 },
};

/* REP. */
static const struct field rep_fields[] = {
	{ F_LOCAL_COMM_ID, 0, 0, 32 },
	{ F_REMOTE_COMM_ID, 4, 0, 32 },
	{ F_LOCAL_QKEY, 8, 0, 32 },
	{ F_LOCAL_QPN, 12, 0, 24 },
	{ F_LOCAL_EECN, 16, 0, 24 },
	{ F_STARTING_PSN, 20, 0, 24 },
	{ F_RESPONDER_RESOURCES, 24, 0, 8 },
	{ F_INITIATOR_DEPTH, 25, 0, 8 },
	{ F_TARGET_ACK_DELAY, 26, 0, 5 },
	{ F_FAILOVER_ACCEPTED, 26, 5, 2 },
	{ F_E2E_FLOW_CONTROL, 26, 7, 1 },
	{ F_RNR_RETRY_COUNT, 27, 0, 3 },
	{ F_SRQ, 27, 3, 1 },
	{ F_LOCAL_CA_GUID, 28, 0, 64 },
	{ F_PRIVATE_DATA, 36, 0, DROCE_CM_REP_PDATA * 8 },
};

/* RTU. */
static const struct field rtu_fields[] = {
	{ F_LOCAL_COMM_ID, 0, 0, 32 },
	{ F_REMOTE_COMM_ID, 4, 0, 32 },
	{ F_PRIVATE_DATA, 8, 0, DROCE_CM_RTU_PDATA * 8 },
};

/* DREQ. */
static const struct field dreq_fields[] = {
	{ F_LOCAL_COMM_ID, 0, 0, 32 },
	{ F_REMOTE_COMM_ID, 4, 0, 32 },
	{ F_REMOTE_QPN_EECN, 8, 0, 24 },
	{ F_PRIVATE_DATA, 12, 0, DROCE_CM_DREQ_PDATA * 8 },
};

/* DREP. */
static const struct field drep_fields[] = {
	{ F_LOCAL_COMM_ID, 0, 0, 32 },
	{ F_REMOTE_COMM_ID, 4, 0, 32 },
	{ F_PRIVATE_DATA, 8, 0, DROCE_CM_DREP_PDATA * 8 },
};

/* SIDR REQ. */
static const struct field sidr_req_fields[] = {
	{ F_REQUEST_ID, 0, 0, 32 },
	{ F_PKEY, 4, 0, 16 },
	{ F_SERVICE_ID, 8, 0, 64 },
	{ F_PRIVATE_DATA, 16, 0, DROCE_CM_SIDR_REQ_PDATA * 8 },
};

/* SIDR REP. */
static const struct field sidr_rep_fields[] = {
	{ F_REQUEST_ID, 0, 0, 32 },
	{ F_SIDR_STATUS, 4, 0, 8 },
	{ F_ADD_INFO_LEN, 5, 0, 8 },
	{ F_QPN, 8, 0, 24 },
	{ F_SERVICE_ID, 12, 0, 64 },
	{ F_QKEY, 20, 0, 32 },
	{ F_CLASS_PORT_INFO, 24, 0, 72 * 8 },
	{ F_PRIVATE_DATA, 96, 0, DROCE_CM_SIDR_REP_PDATA * 8 },
};

static const struct layout hdr_layout = LAYOUT(0, 0, hdr_fields);

static const struct layout msg_layouts[] = {
	LAYOUT(DROCE_CM_ATTR_REQ, DROCE_MAD_HDR_SIZE, req_fields),
	LAYOUT(DROCE_CM_ATTR_MRA, DROCE_MAD_HDR_SIZE, mra_fields),
	LAYOUT(DROCE_CM_ATTR_REJ, DROCE_MAD_HDR_SIZE, rej_fields),
	LAYOUT(DROCE_CM_ATTR_REP, DROCE_MAD_HDR_SIZE, rep_fields),
	LAYOUT(DROCE_CM_ATTR_RTU, DROCE_MAD_HDR_SIZE, rtu_fields),
	LAYOUT(DROCE_CM_ATTR_DREQ, DROCE_MAD_HDR_SIZE, dreq_fields),
	LAYOUT(DROCE_CM_ATTR_DREP, DROCE_MAD_HDR_SIZE, drep_fields),
	LAYOUT(DROCE_CM_ATTR_SIDR_REQ, DROCE_MAD_HDR_SIZE, sidr_req_fields),
	LAYOUT(DROCE_CM_ATTR_SIDR_REP, DROCE_MAD_HDR_SIZE, sidr_rep_fields),
};

/* ibv_qp_type <-> REQ transport service type. */
#define QPT_RC 2
#define QPT_UC 3
#define TST_RC 0
#define TST_UC 1

/* IBTA path MTU codes 1..5 (256..4096), the same numbers as enum ibv_mtu. */
#define MTU_MIN 1
#define MTU_MAX 5

/* The permissive LID: what a RoCE REQ carries in its LID fields. */
#define LID_PERMISSIVE 0xffff

static const struct layout *
layout_of(uint16_t attr)
{
	for (size_t i = 0; i < sizeof(msg_layouts) / sizeof(msg_layouts[0]); i++)
		if (msg_layouts[i].attr == attr)
			return &msg_layouts[i];
	return NULL;
}

static const struct field *
field_of(const struct layout *l, enum field_id id)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->fields[i].id == id)
			return &l->fields[i];
	return NULL;
}

/* ---- Bit strings, big-endian, most significant bit first ---- */

static uint64_t
bits_get(const uint8_t *p, unsigned int pos, unsigned int width)
{
	unsigned int end = pos + width;
	uint64_t v = 0;

	while (pos < end) {
		unsigned int left = 8 - (pos & 7); /* bits from pos to the byte's end */
		unsigned int n = end - pos < left ? end - pos : left;
		unsigned int chunk = (unsigned int)(p[pos >> 3] >> (left - n)) & ((1u << n) - 1);

		v = v << n | chunk;
		pos += n;
	}
	return v;
}

static void
bits_put(uint8_t *p, unsigned int pos, unsigned int width, uint64_t v)
{
	unsigned int end = pos + width;

	while (pos < end) {
		unsigned int left = 8 - (pos & 7);
		unsigned int n = end - pos < left ? end - pos : left;
		unsigned int after = end - pos - n; /* field bits after this chunk */
		unsigned int ones = (1u << n) - 1;
		uint8_t mask = (uint8_t)(ones << (left - n));
		uint8_t bits = (uint8_t)((unsigned int)((v >> after) & ones) << (left - n));

		p[pos >> 3] = (uint8_t)((p[pos >> 3] & ~mask) | bits);
		pos += n;
	}
}

/* ---- Field access by name ---- */

struct enc {
	uint8_t *mad;
	const struct layout *l;
	int err;
};

struct dec {
	const uint8_t *mad;
	const struct layout *l;
};

static void
put(struct enc *e, enum field_id id, uint64_t v)
{
	const struct field *f = field_of(e->l, id);

	if (f == NULL || f->width > 64 || (f->width < 64 && v >> f->width)) {
		e->err = -EINVAL;
		return;
	}
	bits_put(e->mad + e->l->base, f->byte * 8u + f->bit, f->width, v);
}

/* Copies @n bytes of @src (NULL: leaves zeros) to byte-array field @id. */
static void
put_bytes(struct enc *e, enum field_id id, const void *src, size_t n)
{
	const struct field *f = field_of(e->l, id);

	if (f == NULL || n > f->width / 8u) {
		e->err = -EINVAL;
		return;
	}
	if (src != NULL && n != 0)
		memcpy(e->mad + e->l->base + f->byte, src, n);
}

static uint64_t
get(const struct dec *d, enum field_id id)
{
	const struct field *f = field_of(d->l, id);

	if (f == NULL || f->width > 64)
		return 0;
	return bits_get(d->mad + d->l->base, f->byte * 8u + f->bit, f->width);
}

static const uint8_t *
get_bytes(const struct dec *d, enum field_id id)
{
	const struct field *f = field_of(d->l, id);

	return f == NULL ? NULL : d->mad + d->l->base + f->byte;
}

static size_t
bytes_width(const struct layout *l, enum field_id id)
{
	const struct field *f = field_of(l, id);

	return f == NULL ? 0 : f->width / 8u;
}

size_t
droce_cm_pdata_size(uint16_t attr)
{
	const struct layout *l = layout_of(attr);

	return l == NULL ? 0 : bytes_width(l, F_PRIVATE_DATA);
}

uint64_t
droce_cm_timeout_us(uint8_t exp)
{
	if (exp > 31)
		exp = 31;
	return (4096ull << exp) / 1000u; /* 4.096 us = 4096 ns */
}

/* ---- Encode ---- */

static void
encode_req(struct enc *e, const struct droce_cm_msg *m)
{
	const struct droce_cm_req *r = &m->u.req.req;

	switch (r->qp_type) {
	case QPT_RC:
		put(e, F_TRANSPORT_SERVICE_TYPE, TST_RC);
		break;
	case QPT_UC:
		put(e, F_TRANSPORT_SERVICE_TYPE, TST_UC);
		break;
	default:
		e->err = -EINVAL;
		return;
	}
	if (r->path_mtu < MTU_MIN || r->path_mtu > MTU_MAX) {
		e->err = -EINVAL;
		return;
	}
	put(e, F_LOCAL_COMM_ID, m->local_comm_id);
	put(e, F_SERVICE_ID, r->service_id);
	put(e, F_LOCAL_CA_GUID, m->local_ca_guid);
	put(e, F_LOCAL_QKEY, 0); /* RC / UC: no Q_Key */
	put(e, F_LOCAL_QPN, r->qpn);
	put(e, F_RESPONDER_RESOURCES, r->responder_resources);
	put(e, F_LOCAL_EECN, 0);
	put(e, F_INITIATOR_DEPTH, r->initiator_depth);
	put(e, F_REMOTE_EECN, 0);
	put(e, F_REMOTE_CM_RESPONSE_TIMEOUT, r->cm_response_timeout);
	put(e, F_E2E_FLOW_CONTROL, m->u.req.e2e_flow_control);
	put(e, F_STARTING_PSN, r->starting_psn);
	put(e, F_LOCAL_CM_RESPONSE_TIMEOUT, m->u.req.local_cm_response_timeout);
	put(e, F_RETRY_COUNT, r->retry_count);
	put(e, F_PKEY, m->u.req.pkey);
	put(e, F_PATH_MTU, r->path_mtu);
	put(e, F_RDC_EXISTS, 0);
	put(e, F_RNR_RETRY_COUNT, r->rnr_retry_count);
	put(e, F_MAX_CM_RETRIES, r->max_cm_retries);
	put(e, F_SRQ, r->srq);
	put(e, F_EXT_TRANSPORT_TYPE, 0);
	put(e, F_PRI_LOCAL_LID, LID_PERMISSIVE);
	put(e, F_PRI_REMOTE_LID, LID_PERMISSIVE);
	put_bytes(e, F_PRI_LOCAL_GID, r->addr.sgid, sizeof(r->addr.sgid));
	put_bytes(e, F_PRI_REMOTE_GID, r->addr.dgid, sizeof(r->addr.dgid));
	put(e, F_PRI_FLOW_LABEL, r->addr.flow_label);
	put(e, F_PRI_PACKET_RATE, m->u.req.packet_rate);
	put(e, F_PRI_TRAFFIC_CLASS, r->addr.traffic_class);
	put(e, F_PRI_HOP_LIMIT, r->addr.hop_limit);
	put(e, F_PRI_SL, m->u.req.sl);
	put(e, F_PRI_SUBNET_LOCAL, m->u.req.subnet_local);
	put(e, F_PRI_LOCAL_ACK_TIMEOUT, r->local_ack_timeout);
	/* no alternate path: every alternate field stays zero */
	put(e, F_ALT_LOCAL_LID, 0);
	put(e, F_ALT_REMOTE_LID, 0);
	put_bytes(e, F_ALT_LOCAL_GID, NULL, 0);
	put_bytes(e, F_ALT_REMOTE_GID, NULL, 0);
	put(e, F_ALT_FLOW_LABEL, 0);
	put(e, F_ALT_PACKET_RATE, 0);
	put(e, F_ALT_TRAFFIC_CLASS, 0);
	put(e, F_ALT_HOP_LIMIT, 0);
	put(e, F_ALT_SL, 0);
	put(e, F_ALT_SUBNET_LOCAL, 0);
	put(e, F_ALT_LOCAL_ACK_TIMEOUT, 0);
	put(e, F_SAP_SUPPORTED, 0);
}

static void
encode_rep(struct enc *e, const struct droce_cm_msg *m)
{
	const struct droce_cm_rep *r = &m->u.rep.rep;

	put(e, F_LOCAL_COMM_ID, m->local_comm_id);
	put(e, F_REMOTE_COMM_ID, m->remote_comm_id);
	put(e, F_LOCAL_QKEY, 0);
	put(e, F_LOCAL_QPN, r->qpn);
	put(e, F_LOCAL_EECN, 0);
	put(e, F_STARTING_PSN, r->starting_psn);
	put(e, F_RESPONDER_RESOURCES, r->responder_resources);
	put(e, F_INITIATOR_DEPTH, r->initiator_depth);
	put(e, F_TARGET_ACK_DELAY, r->target_ack_delay);
	put(e, F_FAILOVER_ACCEPTED, m->u.rep.failover_accepted);
	put(e, F_E2E_FLOW_CONTROL, m->u.rep.e2e_flow_control);
	put(e, F_RNR_RETRY_COUNT, r->rnr_retry_count);
	put(e, F_SRQ, r->srq);
	put(e, F_LOCAL_CA_GUID, m->local_ca_guid);
}

static void
encode_rej(struct enc *e, const struct droce_cm_msg *m)
{
	if (m->u.rej.msg_rejected > DROCE_CM_MSG_REF_OTHER) {
		e->err = -EINVAL;
		return;
	}
	put(e, F_LOCAL_COMM_ID, m->local_comm_id);
	put(e, F_REMOTE_COMM_ID, m->remote_comm_id);
	put(e, F_MSG_REJECTED, m->u.rej.msg_rejected);
	put(e, F_REJ_INFO_LEN, m->u.rej.ari_len);
	put(e, F_REASON, m->u.rej.reason);
	put_bytes(e, F_ARI, m->u.rej.ari, m->u.rej.ari_len);
}

static void
encode_mra(struct enc *e, const struct droce_cm_msg *m)
{
	if (m->u.mra.msg_mraed > DROCE_CM_MSG_REF_OTHER) {
		e->err = -EINVAL;
		return;
	}
	put(e, F_LOCAL_COMM_ID, m->local_comm_id);
	put(e, F_REMOTE_COMM_ID, m->remote_comm_id);
	put(e, F_MSG_MRAED, m->u.mra.msg_mraed);
	put(e, F_SERVICE_TIMEOUT, m->u.mra.service_timeout);
}

static void
encode_sidr_req(struct enc *e, const struct droce_cm_msg *m)
{
	put(e, F_REQUEST_ID, m->local_comm_id);
	put(e, F_PKEY, m->u.sidr_req.pkey);
	put(e, F_SERVICE_ID, m->u.sidr_req.service_id);
}

static void
encode_sidr_rep(struct enc *e, const struct droce_cm_msg *m)
{
	put(e, F_REQUEST_ID, m->local_comm_id);
	put(e, F_SIDR_STATUS, m->u.sidr_rep.status);
	put(e, F_ADD_INFO_LEN, 0);
	put(e, F_QPN, m->u.sidr_rep.qpn);
	put(e, F_SERVICE_ID, m->sidr_rep_service_id);
	put(e, F_QKEY, m->u.sidr_rep.qkey);
	put_bytes(e, F_CLASS_PORT_INFO, NULL, 0);
}

int
droce_cm_mad_encode(const struct droce_cm_msg *m, uint8_t mad[DROCE_MAD_SIZE])
{
	const struct layout *l = layout_of(m->attr);
	struct enc h = { .mad = mad, .l = &hdr_layout };
	struct enc e = { .mad = mad, .l = l };

	if (l == NULL || m->private_data_len > bytes_width(l, F_PRIVATE_DATA))
		return -EINVAL;
	memset(mad, 0, DROCE_MAD_SIZE);
	put(&h, F_BASE_VERSION, DROCE_MAD_BASE_VERSION);
	put(&h, F_MGMT_CLASS, DROCE_MAD_CLASS_CM);
	put(&h, F_CLASS_VERSION, DROCE_MAD_CLASS_VERSION_CM);
	put(&h, F_RESPONSE, 0);
	put(&h, F_METHOD, DROCE_MAD_METHOD_SEND);
	put(&h, F_STATUS, 0);
	put(&h, F_CLASS_SPECIFIC, 0);
	put(&h, F_TID, m->tid);
	put(&h, F_ATTR_ID, m->attr);
	put(&h, F_ATTR_MOD, 0);
	if (h.err)
		return h.err;

	switch (m->attr) {
	case DROCE_CM_ATTR_REQ:
		encode_req(&e, m);
		break;
	case DROCE_CM_ATTR_REP:
		encode_rep(&e, m);
		break;
	case DROCE_CM_ATTR_REJ:
		encode_rej(&e, m);
		break;
	case DROCE_CM_ATTR_MRA:
		encode_mra(&e, m);
		break;
	case DROCE_CM_ATTR_DREQ:
		put(&e, F_LOCAL_COMM_ID, m->local_comm_id);
		put(&e, F_REMOTE_COMM_ID, m->remote_comm_id);
		put(&e, F_REMOTE_QPN_EECN, m->u.dreq.remote_qpn);
		break;
	case DROCE_CM_ATTR_RTU:
	case DROCE_CM_ATTR_DREP:
		put(&e, F_LOCAL_COMM_ID, m->local_comm_id);
		put(&e, F_REMOTE_COMM_ID, m->remote_comm_id);
		break;
	case DROCE_CM_ATTR_SIDR_REQ:
		encode_sidr_req(&e, m);
		break;
	case DROCE_CM_ATTR_SIDR_REP:
		encode_sidr_rep(&e, m);
		break;
	}
	put_bytes(&e, F_PRIVATE_DATA, m->private_data, m->private_data_len);
	return e.err;
}

/* ---- Decode ---- */

static int
decode_req(const struct dec *d, struct droce_cm_msg *m)
{
	struct droce_cm_req *r = &m->u.req.req;
	uint8_t mtu = (uint8_t)get(d, F_PATH_MTU);

	switch (get(d, F_TRANSPORT_SERVICE_TYPE)) {
	case TST_RC:
		r->qp_type = QPT_RC;
		break;
	case TST_UC:
		r->qp_type = QPT_UC;
		break;
	default: /* RD, or 3 (XRC via the extended transport type) */
		return -EINVAL;
	}
	if (mtu < MTU_MIN || mtu > MTU_MAX)
		return -EINVAL;
	m->local_comm_id = (uint32_t)get(d, F_LOCAL_COMM_ID);
	m->local_ca_guid = get(d, F_LOCAL_CA_GUID);
	r->service_id = get(d, F_SERVICE_ID);
	r->qpn = (uint32_t)get(d, F_LOCAL_QPN);
	r->responder_resources = (uint8_t)get(d, F_RESPONDER_RESOURCES);
	r->initiator_depth = (uint8_t)get(d, F_INITIATOR_DEPTH);
	r->cm_response_timeout = (uint8_t)get(d, F_REMOTE_CM_RESPONSE_TIMEOUT);
	m->u.req.e2e_flow_control = (uint8_t)get(d, F_E2E_FLOW_CONTROL);
	r->starting_psn = (uint32_t)get(d, F_STARTING_PSN);
	m->u.req.local_cm_response_timeout = (uint8_t)get(d, F_LOCAL_CM_RESPONSE_TIMEOUT);
	r->retry_count = (uint8_t)get(d, F_RETRY_COUNT);
	m->u.req.pkey = (uint16_t)get(d, F_PKEY);
	r->path_mtu = mtu;
	r->rnr_retry_count = (uint8_t)get(d, F_RNR_RETRY_COUNT);
	r->max_cm_retries = (uint8_t)get(d, F_MAX_CM_RETRIES);
	r->srq = get(d, F_SRQ) != 0;
	/* the LIDs mean nothing on RoCE: ignored */
	memcpy(r->addr.sgid, get_bytes(d, F_PRI_LOCAL_GID), sizeof(r->addr.sgid));
	memcpy(r->addr.dgid, get_bytes(d, F_PRI_REMOTE_GID), sizeof(r->addr.dgid));
	r->addr.flow_label = (uint32_t)get(d, F_PRI_FLOW_LABEL);
	m->u.req.packet_rate = (uint8_t)get(d, F_PRI_PACKET_RATE);
	r->addr.traffic_class = (uint8_t)get(d, F_PRI_TRAFFIC_CLASS);
	r->addr.hop_limit = (uint8_t)get(d, F_PRI_HOP_LIMIT);
	m->u.req.sl = (uint8_t)get(d, F_PRI_SL);
	m->u.req.subnet_local = (uint8_t)get(d, F_PRI_SUBNET_LOCAL);
	r->local_ack_timeout = (uint8_t)get(d, F_PRI_LOCAL_ACK_TIMEOUT);
	r->private_data = m->private_data;
	r->private_data_len = m->private_data_len;
	return 0;
}

static int
decode_rep(const struct dec *d, struct droce_cm_msg *m)
{
	struct droce_cm_rep *r = &m->u.rep.rep;

	m->local_comm_id = (uint32_t)get(d, F_LOCAL_COMM_ID);
	m->remote_comm_id = (uint32_t)get(d, F_REMOTE_COMM_ID);
	r->qpn = (uint32_t)get(d, F_LOCAL_QPN);
	r->starting_psn = (uint32_t)get(d, F_STARTING_PSN);
	r->responder_resources = (uint8_t)get(d, F_RESPONDER_RESOURCES);
	r->initiator_depth = (uint8_t)get(d, F_INITIATOR_DEPTH);
	r->target_ack_delay = (uint8_t)get(d, F_TARGET_ACK_DELAY);
	m->u.rep.failover_accepted = (uint8_t)get(d, F_FAILOVER_ACCEPTED);
	m->u.rep.e2e_flow_control = (uint8_t)get(d, F_E2E_FLOW_CONTROL);
	r->rnr_retry_count = (uint8_t)get(d, F_RNR_RETRY_COUNT);
	r->srq = get(d, F_SRQ) != 0;
	m->local_ca_guid = get(d, F_LOCAL_CA_GUID);
	r->private_data = m->private_data;
	r->private_data_len = m->private_data_len;
	return 0;
}

static int
decode_rej(const struct dec *d, struct droce_cm_msg *m)
{
	uint8_t msg = (uint8_t)get(d, F_MSG_REJECTED);
	uint8_t ari_len = (uint8_t)get(d, F_REJ_INFO_LEN);

	if (msg > DROCE_CM_MSG_REF_OTHER || ari_len > bytes_width(d->l, F_ARI))
		return -EINVAL;
	m->local_comm_id = (uint32_t)get(d, F_LOCAL_COMM_ID);
	m->remote_comm_id = (uint32_t)get(d, F_REMOTE_COMM_ID);
	m->u.rej.msg_rejected = msg;
	m->u.rej.ari_len = ari_len;
	m->u.rej.reason = (uint16_t)get(d, F_REASON);
	memcpy(m->u.rej.ari, get_bytes(d, F_ARI), ari_len);
	return 0;
}

static int
decode_mra(const struct dec *d, struct droce_cm_msg *m)
{
	uint8_t msg = (uint8_t)get(d, F_MSG_MRAED);

	if (msg > DROCE_CM_MSG_REF_OTHER)
		return -EINVAL;
	m->local_comm_id = (uint32_t)get(d, F_LOCAL_COMM_ID);
	m->remote_comm_id = (uint32_t)get(d, F_REMOTE_COMM_ID);
	m->u.mra.msg_mraed = msg;
	m->u.mra.service_timeout = (uint8_t)get(d, F_SERVICE_TIMEOUT);
	return 0;
}

static int
decode_sidr_req(const struct dec *d, struct droce_cm_msg *m)
{
	m->local_comm_id = (uint32_t)get(d, F_REQUEST_ID);
	m->u.sidr_req.pkey = (uint16_t)get(d, F_PKEY);
	m->u.sidr_req.service_id = get(d, F_SERVICE_ID);
	m->u.sidr_req.private_data = m->private_data;
	m->u.sidr_req.private_data_len = m->private_data_len;
	return 0;
}

static int
decode_sidr_rep(const struct dec *d, struct droce_cm_msg *m)
{
	/* additional information / class port info (redirect): ignored */
	m->local_comm_id = (uint32_t)get(d, F_REQUEST_ID);
	m->u.sidr_rep.status = (uint8_t)get(d, F_SIDR_STATUS);
	m->u.sidr_rep.qpn = (uint32_t)get(d, F_QPN);
	m->sidr_rep_service_id = get(d, F_SERVICE_ID);
	m->u.sidr_rep.qkey = (uint32_t)get(d, F_QKEY);
	m->u.sidr_rep.private_data = m->private_data;
	m->u.sidr_rep.private_data_len = m->private_data_len;
	return 0;
}

int
droce_cm_mad_decode(const uint8_t *mad, size_t len, struct droce_cm_msg *m)
{
	const struct dec h = { .mad = mad, .l = &hdr_layout };
	const struct layout *l;
	struct dec d;
	int rc;

	memset(m, 0, sizeof(*m));
	if (mad == NULL || len < DROCE_MAD_SIZE)
		return -EMSGSIZE;
	if (get(&h, F_BASE_VERSION) != DROCE_MAD_BASE_VERSION ||
	    get(&h, F_MGMT_CLASS) != DROCE_MAD_CLASS_CM ||
	    get(&h, F_CLASS_VERSION) != DROCE_MAD_CLASS_VERSION_CM ||
	    get(&h, F_RESPONSE) != 0 || get(&h, F_METHOD) != DROCE_MAD_METHOD_SEND)
		return -EPROTONOSUPPORT;
	l = layout_of((uint16_t)get(&h, F_ATTR_ID));
	if (l == NULL)
		return -ENOMSG;
	d.mad = mad;
	d.l = l;
	m->attr = l->attr;
	m->tid = get(&h, F_TID);
	m->private_data = get_bytes(&d, F_PRIVATE_DATA);
	m->private_data_len = (uint8_t)bytes_width(l, F_PRIVATE_DATA);

	switch (l->attr) {
	case DROCE_CM_ATTR_REQ:
		rc = decode_req(&d, m);
		break;
	case DROCE_CM_ATTR_REP:
		rc = decode_rep(&d, m);
		break;
	case DROCE_CM_ATTR_REJ:
		rc = decode_rej(&d, m);
		break;
	case DROCE_CM_ATTR_MRA:
		rc = decode_mra(&d, m);
		break;
	case DROCE_CM_ATTR_DREQ:
		m->u.dreq.remote_qpn = (uint32_t)get(&d, F_REMOTE_QPN_EECN);
		/* fall through */
	case DROCE_CM_ATTR_RTU:
	case DROCE_CM_ATTR_DREP:
		m->local_comm_id = (uint32_t)get(&d, F_LOCAL_COMM_ID);
		m->remote_comm_id = (uint32_t)get(&d, F_REMOTE_COMM_ID);
		rc = 0;
		break;
	case DROCE_CM_ATTR_SIDR_REQ:
		rc = decode_sidr_req(&d, m);
		break;
	case DROCE_CM_ATTR_SIDR_REP:
		rc = decode_sidr_rep(&d, m);
		break;
	default: /* a layout without a decoder */
		rc = -ENOMSG;
		break;
	}
	if (rc != 0)
		memset(m, 0, sizeof(*m)); /* nothing half-decoded */
	return rc;
}
