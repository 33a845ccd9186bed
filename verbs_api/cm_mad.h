/* SPDX-License-Identifier: BSD-3-Clause
 * The IB CM's MADs (IBTA vol. 1 §12.6, §16.7): the 24-byte common MAD
 * header and the CM messages REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR REQ
 * and SIDR REP, encoded into and decoded from a 256-byte MAD.  Pure code:
 * no state, no I/O, no DPDK; the CM (cm.c) keeps the connection state.
 *
 * Every field is stored in host order here; byte order, bit packing and
 * offsets live only in cm_mad.c (one table of field positions per message).
 */
#ifndef DROCE_VERBS_API_CM_MAD_H
#define DROCE_VERBS_API_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

#include "cm.h"

#define DROCE_MAD_SIZE 256
#define DROCE_MAD_HDR_SIZE 24
#define DROCE_MAD_BASE_VERSION 1
#define DROCE_MAD_CLASS_CM 0x07
#define DROCE_MAD_CLASS_VERSION_CM 2
#define DROCE_MAD_METHOD_SEND 0x03

/* CM attribute IDs (IBTA table 98). */
enum droce_cm_attr {
	DROCE_CM_ATTR_REQ = 0x0010,
	DROCE_CM_ATTR_MRA = 0x0011,
	DROCE_CM_ATTR_REJ = 0x0012,
	DROCE_CM_ATTR_REP = 0x0013,
	DROCE_CM_ATTR_RTU = 0x0014,
	DROCE_CM_ATTR_DREQ = 0x0015,
	DROCE_CM_ATTR_DREP = 0x0016,
	DROCE_CM_ATTR_SIDR_REQ = 0x0017,
	DROCE_CM_ATTR_SIDR_REP = 0x0018,
};

/* "Message REJected / MRAed" values (REJ and MRA). */
enum droce_cm_msg_ref {
	DROCE_CM_MSG_REF_REQ = 0,
	DROCE_CM_MSG_REF_REP = 1,
	DROCE_CM_MSG_REF_OTHER = 2,
};

/*
 * One decoded CM message.  Which union member is valid follows @attr.
 * REQ: u.req.addr.sgid / dgid are the REQ's primary local / remote GIDs as
 * the sender wrote them (the receiver flips them).  SIDR: local_comm_id
 * holds the Request ID.  private_data points into the MAD it came from
 * (decode) or is copied from (encode; NULL means zeros); on decode its
 * length is always the message's full IBTA private data size.  Encode reads
 * only this top-level pair; decode also copies it into u.req.req, u.rep.rep,
 * u.sidr_req and u.sidr_rep.
 */
struct droce_cm_msg {
	uint16_t attr;                 /* enum droce_cm_attr */
	uint64_t tid;                  /* transaction ID */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;       /* 0 in REQ, SIDR */
	uint64_t local_ca_guid;        /* REQ, REP */
	union {
		struct {
			struct droce_cm_req req; /* incl. service_id, qpn, psn, ... */
			uint16_t pkey;
			uint8_t packet_rate;     /* IBTA rate code; 0: none */
			uint8_t sl;
			uint8_t subnet_local;
			/* req.cm_response_timeout is the REQ's "remote CM response
			 * timeout" (how long the sender waits for a REP); this is
			 * its "local CM response timeout" */
			uint8_t local_cm_response_timeout;
			uint8_t e2e_flow_control; /* the REQ's end-to-end flow control bit */
		} req;
		struct {
			struct droce_cm_rep rep;
			uint8_t failover_accepted;
			uint8_t e2e_flow_control;
		} rep;
		struct {
			uint8_t msg_rejected;    /* enum droce_cm_msg_ref */
			uint16_t reason;
			uint8_t ari_len;         /* <= DROCE_CM_REJ_ARI */
			uint8_t ari[DROCE_CM_REJ_ARI];
		} rej;
		struct {
			uint8_t msg_mraed;       /* enum droce_cm_msg_ref */
			uint8_t service_timeout; /* 5-bit exponent */
		} mra;
		struct {
			uint32_t remote_qpn;     /* the receiver's QPN */
		} dreq;
		struct droce_cm_sidr_req sidr_req; /* service_id, pkey */
		struct droce_cm_sidr_rep sidr_rep; /* status, qpn, qkey */
	} u;
	const uint8_t *private_data;
	uint8_t private_data_len;
	/* SIDR REP: the service ID it answers (a SIDR REQ's is u.sidr_req.service_id).
	 * Class port info / redirect not used (zeros). */
	uint64_t sidr_rep_service_id;
};

/* Full private data size of message @attr (REQ 92, REP 196, ...); 0 if unknown. */
size_t droce_cm_pdata_size(uint16_t attr);

/*
 * Writes @m as a complete 256-byte MAD (header: base version 1, class 0x07,
 * class version 2, method SEND, status 0, attribute ID, TID; every reserved
 * bit zero; private data padded with zeros).  0, or -EINVAL when a field
 * does not fit its width or private_data_len exceeds the message's size
 * (also: a REQ qp_type other than 2 / 3, a path MTU outside 1..5, a message
 * REJected / MRAed value of 3, ari_len > DROCE_CM_REJ_ARI: what decode
 * would refuse).  On error @mad holds no usable message.
 */
int droce_cm_mad_encode(const struct droce_cm_msg *m, uint8_t mad[DROCE_MAD_SIZE]);

/*
 * Parses a received MAD of @len bytes.  0, or a negative errno:
 * -EMSGSIZE (len < 256), -EPROTONOSUPPORT (base version, class, class
 * version or method not the CM's SEND), -ENOMSG (an attribute this CM does
 * not handle: LAP, APR, ClassPortInfo, ...), -EINVAL (a field out of range,
 * e.g. a REQ transport type other than RC/UC, a path MTU code outside 1..5).
 */
int droce_cm_mad_decode(const uint8_t *mad, size_t len, struct droce_cm_msg *m);

/* 4.096 µs * 2^@exp in microseconds (IBTA's timeout encoding); @exp <= 31. */
uint64_t droce_cm_timeout_us(uint8_t exp);

#endif /* DROCE_VERBS_API_CM_MAD_H */
