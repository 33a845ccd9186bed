/* SPDX-License-Identifier: BSD-3-Clause
 * The IB CM's received MADs: one handler per message kind, each acting on
 * the connection's state (or answering statelessly).  See cm.c for the whole.
 */
#include "cm_internal.h"

/* ---- received MADs ---- */


/* Asks the peer to wait longer for our answer to its message @ref. */
static void
send_mra_locked(struct droce_cm_conn *c, uint8_t ref)
{
	struct droce_cm_msg m;

	msg_init(&m, DROCE_CM_ATTR_MRA, c);
	m.u.mra.msg_mraed = ref;
	m.u.mra.service_timeout = MRA_SERVICE_TIMEOUT;
	send_msg_locked(NULL, &c->addr, &m);
}

/* A REJ with no connection behind it (unknown service ID, ...). */
static void
reject_stateless(const struct rx_info *rx, const struct droce_cm_msg *in, uint16_t reason,
		 uint8_t msg_rejected)
{
	struct droce_cm_msg m;

	msg_init(&m, DROCE_CM_ATTR_REJ, NULL);
	m.tid = in->tid;
	m.remote_comm_id = in->local_comm_id;
	m.u.rej.msg_rejected = msg_rejected;
	m.u.rej.reason = reason;
	send_msg_locked(NULL, &rx->addr, &m);
}

/* A connection for a REQ / SIDR REQ @m that a listener takes: passive, in
 * @state, addressed back to the sender; NULL when out of memory. */
static struct droce_cm_conn *
passive_conn_locked(const struct rx_info *rx, const struct droce_cm_msg *m, enum cm_state state)
{
	struct droce_cm_conn *c = conn_new_locked(state);

	if (c == NULL)
		return NULL;
	c->passive = true;
	c->addr = rx->addr;
	c->remote_id = m->local_comm_id;
	c->tid = m->tid;
	return c;
}

/* The event of type @t announcing @c to listener @l (the connection is not
 * the user's until it answers: no conn on the event); NULL, and @c dropped,
 * when out of memory.  The caller fills the event's union and queues it. */
static struct cm_qev *
listener_event_locked(struct droce_cm_conn *c, struct droce_cm_listener *l,
		      enum droce_cm_event_type t, const struct droce_cm_msg *m)
{
	struct cm_qev *q = ev_new(c, t, m);

	if (q == NULL) {
		c->released = true;
		set_state(c, CM_DEAD);
		return NULL;
	}
	q->conn = NULL;
	q->l = l;
	return q;
}

void
rx_req(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	const struct droce_cm_req *r = &m->u.req.req;
	struct droce_cm_listener *l;
	struct droce_cm_conn *c;
	struct cm_qev *q;

	c = find_remote_locked(m->local_comm_id, rx->addr.dgid, false);
	if (c != NULL) {
		cm.stats.dups_rx++;
		switch (c->state) {
		case CM_REQ_RCVD:
			/* the user has not answered yet: ask the peer to wait */
			send_mra_locked(c, DROCE_CM_MSG_REF_REQ);
			break;
		case CM_REP_SENT:
		case CM_LINGER:
			resend_last_locked(c); /* the REP, or the REJ */
			break;
		default:
			break; /* established or later: a stale duplicate */
		}
		return;
	}
	l = find_listener_locked(r->service_id);
	if (l == NULL) {
		reject_stateless(rx, m, DROCE_CM_REJ_INVALID_SERVICE_ID, DROCE_CM_MSG_REF_REQ);
		return;
	}
	c = passive_conn_locked(rx, m, CM_REQ_RCVD);
	if (c == NULL)
		return;
	c->addr.flow_label = r->addr.flow_label;
	c->addr.traffic_class = r->addr.traffic_class;
	c->addr.hop_limit = r->addr.hop_limit;
	c->remote_qpn = r->qpn;
	c->ack_timeout = r->local_ack_timeout;
	c->peer_resp_timeout = m->u.req.local_cm_response_timeout;
	c->peer_max_retries = r->max_cm_retries;
	q = listener_event_locked(c, l, DROCE_CM_EV_REQ, m);
	if (q == NULL)
		return;
	q->ev.u.req = *r;
	q->ev.u.req.addr = c->addr;
	q->ev.u.req.private_data = q->ev.private_data;
	q->ev.u.req.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}

void
rx_rep(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL) {
		/* a REP for nothing we know: the connection is stale */
		reject_stateless(rx, m, DROCE_CM_REJ_STALE_CONN, DROCE_CM_MSG_REF_REP);
		return;
	}
	switch (c->state) {
	case CM_REQ_SENT:
		break;
	case CM_REP_RCVD:
		/* the user has not sent the RTU yet */
		cm.stats.dups_rx++;
		send_mra_locked(c, DROCE_CM_MSG_REF_REP);
		return;
	case CM_ESTABLISHED:
	case CM_LINGER:
		cm.stats.dups_rx++;
		resend_last_locked(c); /* the RTU (or our REJ) got lost */
		return;
	default:
		cm.stats.dups_rx++;
		return;
	}
	c->remote_id = m->local_comm_id;
	c->remote_qpn = m->u.rep.rep.qpn;
	timer_stop(c);
	set_state(c, CM_REP_RCVD);
	q = ev_new(c, DROCE_CM_EV_REP, m);
	if (q == NULL)
		return;
	q->ev.u.rep = m->u.rep.rep;
	q->ev.u.rep.private_data = q->ev.private_data;
	q->ev.u.rep.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}

void
rx_rtu(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL || c->state != CM_REP_SENT || c->remote_id != m->local_comm_id) {
		cm.stats.dups_rx++;
		return;
	}
	timer_stop(c);
	set_state(c, CM_ESTABLISHED);
	q = ev_new(c, DROCE_CM_EV_RTU, m);
	if (q != NULL)
		ev_queue(q);
}

void
rx_rej(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL)
		return;
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_REP_RCVD:
	case CM_REQ_RCVD:
	case CM_REP_SENT:
		break;
	default:
		cm.stats.dups_rx++;
		return;
	}
	if (c->state != CM_REQ_SENT && c->remote_id != m->local_comm_id && m->local_comm_id != 0)
		return; /* not from our peer */
	c->has_last = false;
	conn_finish(c, false);
	q = ev_new(c, DROCE_CM_EV_REJ, m);
	if (q == NULL)
		return;
	q->ev.u.rej.reason = m->u.rej.reason;
	q->ev.u.rej.ari_len = m->u.rej.ari_len;
	memcpy(q->ev.u.rej.ari, m->u.rej.ari, sizeof(q->ev.u.rej.ari));
	ev_queue(q);
}

void
rx_mra(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	uint64_t wait;

	if (c == NULL)
		return;
	wait = droce_cm_timeout_us(m->u.mra.service_timeout) + c->interval_us;
	if ((c->state == CM_REQ_SENT && m->u.mra.msg_mraed == DROCE_CM_MSG_REF_REQ) ||
	    (c->state == CM_REP_SENT && m->u.mra.msg_mraed == DROCE_CM_MSG_REF_REP)) {
		/* the peer needs longer: wait that long before resending */
		c->deadline_us = now_us() + wait;
		wake();
	}
}

void
rx_dreq(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct droce_cm_msg a;

	if (c == NULL || (c->remote_id != m->local_comm_id && c->state != CM_LINGER)) {
		/* IBTA 12.9.8.3: a DREQ for no connection is answered all the same */
		msg_init(&a, DROCE_CM_ATTR_DREP, NULL);
		a.tid = m->tid;
		a.local_comm_id = m->remote_comm_id;
		a.remote_comm_id = m->local_comm_id;
		send_msg_locked(NULL, &rx->addr, &a);
		return;
	}
	switch (c->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:  /* the RTU was lost: the DREQ proves the peer got the REP */
	case CM_REP_RCVD:
	case CM_DREQ_SENT: /* both sides at once */
		timer_stop(c);
		c->tid = m->tid;
		set_state(c, CM_DREQ_RCVD);
		{
			struct cm_qev *q = ev_new(c, DROCE_CM_EV_DREQ, m);

			if (q != NULL)
				ev_queue(q);
		}
		break;
	case CM_TIMEWAIT:
		cm.stats.dups_rx++;
		resend_last_locked(c); /* our DREP got lost */
		break;
	default:
		cm.stats.dups_rx++;
		break;
	}
}

void
rx_drep(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->remote_comm_id);
	struct cm_qev *q;

	if (c == NULL || c->state != CM_DREQ_SENT) {
		cm.stats.dups_rx++;
		return;
	}
	enter_timewait(c);
	q = ev_new(c, DROCE_CM_EV_DREP, m);
	if (q != NULL)
		ev_queue(q);
}

void
rx_sidr_req(const struct rx_info *rx, const struct droce_cm_msg *m)
{
	const struct droce_cm_sidr_req *r = &m->u.sidr_req;
	struct droce_cm_listener *l;
	struct droce_cm_conn *c;
	struct cm_qev *q;

	c = find_remote_locked(m->local_comm_id, rx->addr.dgid, true);
	if (c != NULL) {
		cm.stats.dups_rx++;
		if (c->state == CM_LINGER)
			resend_last_locked(c);
		return;
	}
	l = find_listener_locked(r->service_id);
	if (l == NULL) {
		struct droce_cm_msg a;

		msg_init(&a, DROCE_CM_ATTR_SIDR_REP, NULL);
		a.tid = m->tid;
		a.local_comm_id = m->local_comm_id; /* the request ID */
		a.u.sidr_rep.status = DROCE_CM_SIDR_UNSUPPORTED;
		a.sidr_rep_service_id = r->service_id; /* goes back as asked */
		send_msg_locked(NULL, &rx->addr, &a);
		return;
	}
	c = passive_conn_locked(rx, m, CM_SIDR_REQ_RCVD);
	if (c == NULL)
		return;
	c->local_qpn = UINT32_MAX; /* marks a SIDR connection once it lingers */
	c->service_id = r->service_id;
	q = listener_event_locked(c, l, DROCE_CM_EV_SIDR_REQ, m);
	if (q == NULL)
		return;
	q->ev.u.sidr_req = *r;
	q->ev.u.sidr_req.addr = c->addr;
	q->ev.u.sidr_req.private_data = q->ev.private_data;
	q->ev.u.sidr_req.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}

void
rx_sidr_rep(const struct droce_cm_msg *m)
{
	struct droce_cm_conn *c = find_local_locked(m->local_comm_id); /* the request ID */
	struct cm_qev *q;

	if (c == NULL || c->state != CM_SIDR_REQ_SENT) {
		cm.stats.dups_rx++;
		return;
	}
	conn_finish(c, false);
	q = ev_new(c, DROCE_CM_EV_SIDR_REP, m);
	if (q == NULL)
		return;
	q->ev.u.sidr_rep = m->u.sidr_rep;
	q->ev.u.sidr_rep.private_data = q->ev.private_data;
	q->ev.u.sidr_rep.private_data_len = q->ev.private_data_len;
	ev_queue(q);
}
