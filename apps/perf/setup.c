/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: One process playing both sides: devices, buffers and their slot layout,
 * CQs, QPs moved to RTS, address handles; teardown and the QP counters it sums.
 */
#include "perf.h"

/* ---- devices, buffers, QPs ---- */






uint8_t *
tx_slot(const struct pair *p, int side, uint64_t i)
{
	return p->base[side] + (i % R.lay.ntx) * R.lay.stride;
}

uint8_t *
rx_slot(const struct pair *p, int side, uint64_t i)
{
	return p->base[side] + ((uint64_t)R.lay.ntx + i % R.lay.nrx) * R.lay.stride;
}

uint32_t
clamp_slots(uint64_t stride, uint32_t want)
{
	/* 4 MiB per QP and direction, 256 MiB per side in all */
	uint64_t budget = RTE_MIN((uint64_t)AREA_BUDGET, (256ull << 20) / (2 * o.qps));
	uint64_t n = budget / stride;

	if (n < 1)
		n = 1;
	return n < want ? (uint32_t)n : want;
}

struct layout
layout_for(uint64_t size)
{
	struct layout l = { .size = size };

	/* UD: a receive slot takes the 40-byte GRH area, then the payload */
	l.stride = RTE_ALIGN_CEIL(size + R.grh, SLOT_ALIGN);
	if (o.mode == M_LAT) {
		l.ntx = 1;
		l.nrx = o.verb == V_SEND ? LAT_RX_SLOTS : 1;
	} else if (o.verb == V_ATOMIC) {
		l.ntx = o.tx_depth;
		l.nrx = 1;
	} else {
		l.ntx = clamp_slots(l.stride, o.tx_depth);
		l.nrx = clamp_slots(l.stride, o.verb == V_SEND ? o.rx_depth : o.tx_depth);
	}
	l.region = (uint64_t)(l.ntx + l.nrx) * l.stride;
	return l;
}

enum ibv_mtu
mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

uint32_t
mtu_bytes(enum ibv_mtu m)
{
	return 128u << m;
}


/*
 * Opens side @s's device (s->dev): its context, the port up (waiting up to
 * @wait_s seconds for it, driving droce meanwhile: a memif port is up once
 * the peer process is there; 0: it must be up now), its MTU, GID and a PD.
 */
void
side_open(struct side *s, double wait_s)
{
	struct ibv_port_attr pa;
	uint64_t t0 = rte_rdtsc();

	s->ctx = o.rdma_cm ? rcm_context_of(s->dev) : ibv_open_device(s->dev);
	if (s->ctx == NULL)
		fail("ibv_open_device %s: %s", ibv_get_device_name(s->dev), strerror(errno));
	for (;;) {
		if (ibv_query_port(s->ctx, 1, &pa) != 0)
			fail("ibv_query_port %s", ibv_get_device_name(s->dev));
		if (pa.state == IBV_PORT_ACTIVE)
			break;
		if (wait_s <= 0)
			fail("%s: port is %s", ibv_get_device_name(s->dev),
			     ibv_port_state_str(pa.state));
		if (rte_rdtsc() - t0 > (uint64_t)(wait_s * (double)rte_get_tsc_hz()))
			fail("%s: port is %s after %.0f s (is the peer process running?)",
			     ibv_get_device_name(s->dev), ibv_port_state_str(pa.state), wait_s);
		droce_progress();
		usleep(1000);
	}
	s->active_mtu = pa.active_mtu;
	if (ibv_query_gid(s->ctx, 1, o.gid_index, &s->gid) != 0)
		fail("%s: no GID index %d", ibv_get_device_name(s->dev), o.gid_index);
	s->pd = ibv_alloc_pd(s->ctx);
	if (s->pd == NULL)
		fail("ibv_alloc_pd: %s", strerror(errno));
}

/* ibv_get_device_list, or the run fails. */
struct ibv_device **
device_list(int *n)
{
	struct ibv_device **list = ibv_get_device_list(n);

	if (list == NULL)
		fail("ibv_get_device_list: %s", strerror(errno));
	return list;
}

/* The device of @list called @name, or NULL. */
struct ibv_device *
device_named(struct ibv_device **list, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			return list[i];
	return NULL;
}

void
open_devices(void)
{
	struct ibv_device **list;
	int n;

	list = device_list(&n);
	R.s[0].dev = device_named(list, n, o.dev);
	if (R.s[0].dev == NULL)
		fail("no device %s (%d devices)", o.dev, n);
	if (o.server_dev != NULL) {
		R.s[1].dev = device_named(list, n, o.server_dev);
		if (R.s[1].dev == NULL)
			fail("no device %s (%d devices)", o.server_dev, n);
	}
	for (int i = 0; i < n && R.s[1].dev == NULL; i++)
		if (list[i] != R.s[0].dev) {
			R.s[1].dev = list[i];
			break;
		}
	if (R.s[1].dev == NULL)
		fail("loopback needs two devices, the config has %d", n);
	R.s[0].role = "client";
	R.s[1].role = "server";
	for (int k = 0; k < 2; k++)
		side_open(&R.s[k], 0);
	ibv_free_device_list(list);
	stats_ready = true;

	R.mtu = R.s[0].active_mtu < R.s[1].active_mtu ? R.s[0].active_mtu : R.s[1].active_mtu;
	if (o.mtu) {
		if (mtu_enum(o.mtu) > R.mtu)
			fprintf(stderr, "droce-perf: requested MTU %u is larger than the active MTU "
				"%u: using %u\n", o.mtu, mtu_bytes(R.mtu), mtu_bytes(R.mtu));
		else
			R.mtu = mtu_enum(o.mtu);
	}
}

void
close_devices(void)
{
	for (int k = 0; k < 2; k++) {
		if (ibv_dealloc_pd(R.s[k].pd) != 0)
			fail("ibv_dealloc_pd");
		if (!o.rdma_cm && ibv_close_device(R.s[k].ctx) != 0)
			fail("ibv_close_device");
	}
	if (o.rdma_cm)
		pt_rcm_close(&R.cm);
}

/* ibv_modify_qp, or the run fails naming the transport and the state. */
static void
modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *state)
{
	int rc = ibv_modify_qp(qp, a, mask);

	if (rc != 0)
		fail("ibv_modify_qp %s QP to %s: %s", o.conn, state, strerror(rc));
}

void
to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

	if (o.qpt == IBV_QPT_UD) {
		/* UD: a Q_Key instead of access flags (perftest's DEF_QKEY) */
		a.qp_access_flags = 0;
		a.qkey = DEF_QKEY;
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	} else if (o.qpt == IBV_QPT_UC) {
		/* UC: RDMA WRITE is the only remote access there is */
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	}
	modify_qp(qp, &a, mask, "INIT");
}

/* INIT -> RTR -> RTS, as perftest's ctx_modify_qp_to_rtr / _rts.  RC:
 * max_dest_rd_atomic is this side's outstanding reads (-o), max_rd_atomic
 * the peer's.  UC: the path and the peer, but no responder resources, ACK
 * timeout, retries or RNR timer.  UD: no path and no peer in the QP (each
 * WR names its AH and QPN). */
void
to_rts(struct ibv_qp *qp, uint32_t psn, const struct ibv_qp *peer, uint32_t peer_psn,
       const union ibv_gid *peer_gid, uint32_t my_reads, uint32_t peer_reads)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = R.mtu, .dest_qp_num = peer->qp_num,
		.rq_psn = peer_psn, .max_dest_rd_atomic = (uint8_t)my_reads,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *peer_gid, .sgid_index = (uint8_t)o.gid_index,
				      .hop_limit = 64 } },
	};
	int rtr = IBV_QP_STATE, rts = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (o.qpt != IBV_QPT_UD)
		rtr |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (o.qpt == IBV_QPT_RC) {
		rtr |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		rts |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC;
	}
	modify_qp(qp, &a, rtr, "RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o.qp_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = (uint8_t)peer_reads;
	modify_qp(qp, &a, rts, "RTS");
}

/* UD: @side's address handle to the peer's GID, as perftest builds it
 * (RoCEv2: global, the peer's GID, our GID index, a hop limit). */
struct ibv_ah *
make_ah(int side, const union ibv_gid *dgid)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = *dgid, .sgid_index = (uint8_t)o.gid_index, .hop_limit = 64 },
	};
	struct ibv_ah *ah = ibv_create_ah(R.s[side].pd, &a);

	if (ah == NULL)
		fail("ibv_create_ah (%s, to the peer's GID): %s", R.s[side].role, strerror(errno));
	return ah;
}


/* Buffers, MRs, CQs and connected QP pairs for messages of @size. */
/* One side's registered buffer (the layout's region per QP pair) and its CQ. */
void
side_alloc(struct side *s, uint64_t cqe)
{
	s->buf_len = RTE_ALIGN_CEIL(R.lay.region * o.qps, 4096);
	if (posix_memalign((void **)&s->buf, 4096, s->buf_len) != 0)
		fail("out of memory for %zu B of buffers", s->buf_len);
	memset(s->buf, 0, s->buf_len);
	s->mr = ibv_reg_mr(s->pd, s->buf, s->buf_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (s->mr == NULL)
		fail("ibv_reg_mr %zu B: %s", s->buf_len, strerror(errno));
	if (o.use_event && s->ch == NULL) {
		s->ch = ibv_create_comp_channel(s->ctx);
		if (s->ch == NULL)
			fail("ibv_create_comp_channel: %s", strerror(errno));
	}
	s->cq = ibv_create_cq(s->ctx, (int)cqe, NULL, s->ch, 0);
	if (s->cq == NULL)
		fail("ibv_create_cq %" PRIu64 ": %s", cqe, strerror(errno));
}


/*
 * The plan of a run of @size, the same in every topology: the slot layout,
 * receives posted per QP (R.nrecv), send queue depth, WRs in flight and
 * completion moderation.
 */
void
plan_run(uint64_t size)
{
	uint32_t nrecv;

	R.lay = layout_for(size);
	/* receives posted per QP: one per slot with --check; without, -r of
	 * them share the slots (as perftest's receives share its buffer) */
	nrecv = o.verb != V_SEND ? 0 : (o.mode == M_BW && !o.check) ? o.rx_depth : R.lay.nrx;
	if (o.mode == M_LAT) {
		R.sq_depth = LAT_SQ_DEPTH;
		R.depth = 1;
	} else {
		R.sq_depth = o.tx_depth;
		R.depth = o.tx_depth;
		if (o.verb == V_SEND && R.depth > nrecv)
			R.depth = nrecv; /* never more in flight than receives posted */
		if (o.check && R.depth > R.lay.ntx)
			R.depth = R.lay.ntx; /* a slot is refilled only once its message completed */
		if (o.check && o.verb != V_SEND && R.depth > R.lay.nrx)
			R.depth = R.lay.nrx;
		if (o.check && R.depth < o.post_list)
			fail("--check with -l %u needs %u slots of %" PRIu64 " B; use a smaller -l "
			     "or -s", o.post_list, o.post_list, size);
		if (R.depth < o.post_list)
			R.depth = o.post_list; /* the slots then overlap: only without --check */
	}
	R.cq_mod = o.post_list > 1 ? o.post_list : o.cq_mod;
	if (R.cq_mod > R.depth)
		R.cq_mod = R.depth;
	R.nrecv = nrecv;
}

/* CQ entries a side needs for the planned run. */
uint64_t
plan_cqe(void)
{
	return (uint64_t)o.qps * (R.sq_depth + R.nrecv) + 16;
}

void
pair_post_recvs(uint32_t i, int side)
{
	/* receives first, so no SEND ever meets an empty queue */
	for (uint32_t j = 0; j < R.nrecv; j++)
		post_recv_slot(&R.p[i], i, side, j);
}

/* Creates @side's QP of pair @i (on rdma_cm id @id with -R, then rdma_cm
 * moves it through its states; else in INIT), and with @recvs posts its
 * receives. */
void
pair_qp(uint32_t i, int side, struct rdma_cm_id *id, bool recvs)
{
	struct pair *p = &R.p[i];
	struct side *s = &R.s[side];
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = o.qpt,
		.cap = { .max_send_wr = R.sq_depth, .max_recv_wr = R.nrecv ? R.nrecv : 1,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = (uint32_t)o.inline_size },
	};

	if (id != NULL) {
		uint8_t t = o.qp_timeout;

		/* -u with -R: the id's local ACK timeout (rdma_cm's own otherwise) */
		if (o.qp_timeout_set &&
		    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, 1) != 0)
			fail("rdma_set_option ACK_TIMEOUT %u: %s", t, strerror(errno));
		if (rdma_create_qp(id, s->pd, &ia) != 0)
			fail("rdma_create_qp (%s, QP pair %u): %s", s->role, i, strerror(errno));
		p->qp[side] = id->qp;
		p->cm_id[side] = id;
	} else {
		p->qp[side] = create_qp(s->pd, &ia);
		if (p->qp[side] == NULL)
			fail("ibv_create_qp (send queue %u, receive queue %u, inline %d): %s",
			     R.sq_depth, R.nrecv, o.inline_size, strerror(errno));
		to_init(p->qp[side]);
	}
	if (recvs)
		pair_post_recvs(i, side);
}

/* One process, both sides: buffers and CQs for a run of @size. */
void
setup_loop(uint64_t size)
{
	plan_run(size);
	for (int k = 0; k < 2; k++)
		side_alloc(&R.s[k], plan_cqe());
}

/* One process: -q QP pairs connected with ibv_modify_qp. */
void
connect_loop(void)
{
	for (uint32_t i = 0; i < o.qps; i++) {
		struct pair *p = &R.p[i];

		memset(p, 0, sizeof(*p));
		for (int k = 0; k < 2; k++) {
			pair_qp(i, k, NULL, false);
			p->psn[k] = (uint32_t)lrand48() & 0xffffff;
			p->base[k] = R.s[k].buf + (uint64_t)i * R.lay.region;
		}
	}
	for (uint32_t i = 0; i < o.qps; i++) {
		struct pair *p = &R.p[i];

		for (int k = 0; k < 2; k++)
			pair_post_recvs(i, k);
		to_rts(p->qp[0], p->psn[0], p->qp[1], p->psn[1], &R.s[1].gid, o.out_reads,
		       o.out_reads);
		to_rts(p->qp[1], p->psn[1], p->qp[0], p->psn[0], &R.s[0].gid, o.out_reads,
		       o.out_reads);
		if (o.qpt == IBV_QPT_UD) {
			for (int k = 0; k < 2; k++) {
				p->ah[k] = make_ah(k, &R.s[!k].gid);
				p->rem_qpn[k] = p->qp[!k]->qp_num;
			}
		}
	}
}


void
qp_stats_add(struct ibv_qp *qp)
{
	struct droce_stat s[STATS_MAX];
	int n;

	if (!o.stats || qp == NULL || (n = droce_stats_qp(qp, s, STATS_MAX)) < 0)
		return;
	qp_sum_n = RTE_MIN(n, STATS_MAX);
	for (int i = 2; i < qp_sum_n; i++) { /* after qpn and engine */
		memcpy(qp_sum[i].name, s[i].name, sizeof(s[i].name));
		qp_sum[i].value += s[i].value;
	}
	qp_sum_qps++;
}

void
teardown(void)
{
	for (uint32_t i = 0; i < o.qps; i++)
		for (int k = 0; k < 2; k++) {
			struct rdma_cm_id *id = R.p[i].cm_id[k];

			qp_stats_add(R.p[i].qp[k]);
			if (id != NULL) {
				rdma_destroy_qp(id);
				if (rdma_destroy_id(id) != 0)
					fail("rdma_destroy_id: %s", strerror(errno));
				R.p[i].cm_id[k] = NULL;
			} else if (ibv_destroy_qp(R.p[i].qp[k]) != 0) {
				fail("ibv_destroy_qp");
			}
			if (R.p[i].ah[k] != NULL && ibv_destroy_ah(R.p[i].ah[k]) != 0)
				fail("ibv_destroy_ah");
			R.p[i].ah[k] = NULL;
		}
	if (R.loop_cli_open) {
		pt_rcm_close(&loop_cli);
		R.loop_cli_open = false;
	}
	for (int k = 0; k < 2; k++) {
		struct side *s = &R.s[k];

		if (ibv_destroy_cq(s->cq) != 0)
			fail("ibv_destroy_cq");
		if (ibv_dereg_mr(s->mr) != 0)
			fail("ibv_dereg_mr");
		free(s->buf);
		s->buf = NULL;
	}
}
