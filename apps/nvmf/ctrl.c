/* SPDX-License-Identifier: BSD-3-Clause
 * droce-nvmf's controllers: Fabrics Connect (the dynamic controller model),
 * Property Get/Set with the enable and shutdown handshake, Identify, Get Log
 * Page (discovery with offsets, error, SMART, firmware slots), Set/Get
 * Features, Keep Alive with its timeout, AER and Abort.  The executors set
 * r->status / r->result and leave the request EXECUTED, or EXECUTING when
 * it is held (AER).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

#define CAP_TO 15 /* CAP.TO: 7.5 s */

static void
done(struct nvmf_req *r, uint16_t status)
{
	r->status = status;
	r->state = NVMF_REQ_EXECUTED;
}

bool
nvmf_ctrl_ready(const struct nvmf_ctrl *c)
{
	return (c->cc & NVMF_CC_EN) && (c->csts & NVMF_CSTS_RDY) && !(c->csts & NVMF_CSTS_CFS);
}

void
nvmf_ctrl_log_error(struct nvmf_ctrl *c, const struct nvmf_req *r)
{
	struct nvmf_error_entry *e = &c->errlog[c->err_count % NVMF_ERRLOG];

	memset(e, 0, sizeof(*e));
	e->error_count = ++c->err_count;
	e->sqid = r->q->qid;
	e->cmdid = r->sqe.cid;
	e->status = (uint16_t)(r->status << 1);
	e->param_error_location = 0xffff;
	e->nsid = r->sqe.opcode == NVMF_FABRICS ? 0 : r->sqe.nsid;
	e->trtype = 1; /* RDMA */
}

static void
fail_aers(struct nvmf_ctrl *c)
{
	/* held AERs end with the admin queue (nvmet: INTERNAL|DNR) */
	for (unsigned int i = 0; i < c->n_aer; i++)
		nvmf_req_complete(c->aer[i], NVMF_SC_INTERNAL | NVMF_DNR);
	c->n_aer = 0;
}

static void
ctrl_free(struct nvmf_ctrl *c)
{
	if (nvmf_tgt.verbose)
		nvmf_log("controller %u (%s) freed", c->cntlid, c->subsys->nqn);
	fail_aers(c);
	if (c->admin) {
		c->admin->ctrl = NULL;
		nvmf_queue_disconnect(c->admin);
	}
	for (unsigned int i = 1; i <= NVMF_MAX_IOQ; i++)
		if (c->ioq[i]) {
			c->ioq[i]->ctrl = NULL;
			nvmf_queue_disconnect(c->ioq[i]);
		}
	memset(c, 0, sizeof(*c));
}

void
nvmf_ctrl_queue_gone(struct nvmf_queue *q)
{
	struct nvmf_ctrl *c = q->ctrl;

	if (c == NULL)
		return;
	q->ctrl = NULL;
	if (q->qid == 0) {
		c->admin = NULL;
		ctrl_free(c); /* the association ends with its admin queue */
	} else if (q->qid <= NVMF_MAX_IOQ && c->ioq[q->qid] == q) {
		c->ioq[q->qid] = NULL;
	}
}

void
nvmf_ctrl_check_kato(void)
{
	uint64_t now = nvmf_now_ms();

	for (unsigned int i = 0; i < NVMF_MAX_CTRL; i++) {
		struct nvmf_ctrl *c = &nvmf_tgt.ctrl[i];

		if (!c->used || c->kato_ms == 0 || now - c->last_ms <= c->kato_ms)
			continue;
		nvmf_log("controller %u: keep-alive timer (%u ms) expired, freeing it", c->cntlid,
			 c->kato_ms);
		nvmf_tgt.ka_expired++;
		c->csts |= NVMF_CSTS_CFS;
		ctrl_free(c);
	}
}

static struct nvmf_subsys *
subsys_find(const char *nqn)
{
	if (strcmp(nqn, NVMF_DISC_NQN) == 0)
		return &nvmf_tgt.disc;
	for (unsigned int i = 0; i < nvmf_tgt.n_subsys; i++)
		if (strcmp(nvmf_tgt.subsys[i].nqn, nqn) == 0)
			return &nvmf_tgt.subsys[i];
	return NULL;
}

static struct nvmf_ctrl *
ctrl_new(void)
{
	for (unsigned int i = 0; i < NVMF_MAX_CTRL; i++) {
		struct nvmf_ctrl *c = &nvmf_tgt.ctrl[i];

		if (c->used)
			continue;
		c->used = true;
		/* dynamic model: a fresh id per association, 1..0xffef, skipping live ones */
		for (;;) {
			bool taken = false;

			if (++nvmf_tgt.next_cntlid > NVMF_CNTLID_MAX || nvmf_tgt.next_cntlid < NVMF_CNTLID_MIN)
				nvmf_tgt.next_cntlid = NVMF_CNTLID_MIN;
			for (unsigned int j = 0; j < NVMF_MAX_CTRL; j++)
				taken |= j != i && nvmf_tgt.ctrl[j].used &&
					 nvmf_tgt.ctrl[j].cntlid == nvmf_tgt.next_cntlid;
			if (!taken)
				break;
		}
		c->cntlid = nvmf_tgt.next_cntlid;
		return c;
	}
	return NULL;
}

void
nvmf_exec_connect(struct nvmf_req *r)
{
	const struct nvmf_connect_cmd *cmd = (const void *)&r->sqe;
	struct nvmf_connect_data d;
	struct nvmf_queue *q = r->q;
	struct nvmf_subsys *s;
	struct nvmf_ctrl *c = NULL;

	if (r->len != sizeof(d) || r->xfer != NVMF_XFER_TO_CTRL)
		return done(r, NVMF_SC_SGL_INVALID_DATA | NVMF_DNR);
	memcpy(&d, r->data, sizeof(d));
	d.subnqn[NVMF_NQN_SIZE - 1] = d.hostnqn[NVMF_NQN_SIZE - 1] = '\0';
	if (cmd->recfmt != 0)
		return done(r, NVMF_SC_CONNECT_FORMAT | NVMF_DNR);
	if (q->ctrl != NULL)
		return done(r, NVMF_SC_CONNECT_CTRL_BUSY | NVMF_DNR);
	if (cmd->qid != q->qid) {
		r->result = NVMF_IPO_IATTR_SQE(offsetof(struct nvmf_connect_cmd, qid));
		return done(r, NVMF_SC_CONNECT_INVALID_PARAM | NVMF_DNR);
	}
	if (cmd->sqsize == 0 || (unsigned int)cmd->sqsize + 1 > q->depth) {
		r->result = NVMF_IPO_IATTR_SQE(offsetof(struct nvmf_connect_cmd, sqsize));
		return done(r, NVMF_SC_CONNECT_INVALID_PARAM | NVMF_DNR);
	}
	s = subsys_find(d.subnqn);
	if (s == NULL) {
		r->result = NVMF_IPO_IATTR_DATA(offsetof(struct nvmf_connect_data, subnqn));
		return done(r, NVMF_SC_CONNECT_INVALID_PARAM | NVMF_DNR);
	}
	if (q->qid == 0) {
		if (d.cntlid != 0xffff) {
			r->result = NVMF_IPO_IATTR_DATA(offsetof(struct nvmf_connect_data, cntlid));
			return done(r, NVMF_SC_CONNECT_INVALID_PARAM | NVMF_DNR);
		}
		c = ctrl_new();
		if (c == NULL)
			return done(r, NVMF_SC_CONNECT_CTRL_BUSY);
		c->subsys = s;
		memcpy(c->hostnqn, d.hostnqn, sizeof(c->hostnqn));
		memcpy(c->hostid, d.hostid, sizeof(c->hostid));
		/* a discovery host that asked for none still gets a timeout, so
		 * one that vanishes does not hold its controller forever (nvmet) */
		c->kato_ms = cmd->kato ? cmd->kato : s->discovery ? NVMF_DISC_KATO_MS : 0;
		c->admin = q;
		c->n_ioq = 0;
	} else {
		for (unsigned int i = 0; i < NVMF_MAX_CTRL && c == NULL; i++) {
			struct nvmf_ctrl *k = &nvmf_tgt.ctrl[i];

			if (k->used && k->cntlid == d.cntlid && k->subsys == s &&
			    strcmp(k->hostnqn, d.hostnqn) == 0)
				c = k;
		}
		if (c == NULL || s->discovery) {
			r->result = NVMF_IPO_IATTR_DATA(offsetof(struct nvmf_connect_data, cntlid));
			return done(r, NVMF_SC_CONNECT_INVALID_PARAM | NVMF_DNR);
		}
		if (!nvmf_ctrl_ready(c)) {
			return done(r, NVMF_SC_CMD_SEQ_ERROR | NVMF_DNR);
		}
		if (q->qid > c->n_ioq) {
			r->result = NVMF_IPO_IATTR_SQE(offsetof(struct nvmf_connect_cmd, qid));
			return done(r, NVMF_SC_CONNECT_INVALID_PARAM | NVMF_DNR);
		}
		if (c->ioq[q->qid] != NULL)
			return done(r, NVMF_SC_CONNECT_CTRL_BUSY | NVMF_DNR);
		c->ioq[q->qid] = q;
	}
	q->ctrl = c;
	c->last_ms = nvmf_now_ms();
	if (nvmf_tgt.verbose)
		nvmf_log("connect: queue %u of controller %u (%s) for %s", q->qid, c->cntlid, s->nqn,
			 c->hostnqn);
	r->result = c->cntlid; /* AUTHREQ bits 17-18 stay 0: no authentication */
	done(r, 0);
}

/* ---- properties ---- */

static uint64_t
cap_of(const struct nvmf_ctrl *c)
{
	uint64_t mqes = (c->subsys->discovery ? NVMF_AQ_DEPTH : NVMF_MAX_DEPTH) - 1;

	/* MQES, CQR (bit 16), TO (bits 31:24), CSS NVM (bit 37); MPSMIN 0 */
	return mqes | 1ull << 16 | (uint64_t)CAP_TO << 24 | 1ull << 37;
}

static void
prop_set_cc(struct nvmf_ctrl *c, uint32_t cc)
{
	uint32_t old = c->cc;

	c->cc = cc;
	if ((cc & NVMF_CC_EN) && !(old & NVMF_CC_EN)) {
		/* MPS 0, AMS 0, CSS NVM; IOSQES 6 and IOCQES 4 on I/O controllers */
		bool ok = ((cc >> 7) & 0xf) == 0 && ((cc >> 11) & 7) == 0 && ((cc >> 4) & 7) == 0 &&
			  (c->subsys->discovery || (((cc >> 16) & 0xf) == 6 && ((cc >> 20) & 0xf) == 4));
		c->csts = ok ? NVMF_CSTS_RDY : NVMF_CSTS_CFS;
	}
	if (!(cc & NVMF_CC_EN) && (old & NVMF_CC_EN))
		c->csts &= ~(NVMF_CSTS_RDY | NVMF_CSTS_SHST_CMPLT);
	if ((cc & NVMF_CC_SHN_MASK) && !(old & NVMF_CC_SHN_MASK)) {
		/* shutdown: nothing is cached (memory is direct, files are
		 * written through by pwrite; fdatasync each file) */
		for (unsigned int i = 0; i < c->subsys->n_ns; i++)
			if (c->subsys->ns[i].kind == NVMF_NS_FILE)
				(void)fdatasync(c->subsys->ns[i].fd);
		c->csts |= NVMF_CSTS_SHST_CMPLT;
		c->csts &= ~NVMF_CSTS_RDY;
		fail_aers(c);
	}
}

static void
exec_prop(struct nvmf_req *r, bool get)
{
	const struct nvmf_prop_cmd *p = (const void *)&r->sqe;
	struct nvmf_ctrl *c = r->q->ctrl;
	bool wide = p->attrib & 1;

	if (r->q->qid != 0)
		return done(r, NVMF_SC_INVALID_OPCODE | NVMF_DNR); /* admin queue only */
	if (get) {
		switch (p->offset) {
		case NVMF_PROP_CAP:
			if (!wide)
				return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
			r->result = cap_of(c);
			return done(r, 0);
		case NVMF_PROP_VS: r->result = NVMF_VS_1_3; break;
		case NVMF_PROP_CC: r->result = c->cc; break;
		case NVMF_PROP_CSTS: r->result = c->csts; break;
		default: return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
		}
		return done(r, wide ? NVMF_SC_INVALID_FIELD | NVMF_DNR : 0);
	}
	if (p->offset != NVMF_PROP_CC || wide)
		return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
	prop_set_cc(c, (uint32_t)p->value);
	done(r, 0);
}

/* ---- identify ---- */

static void
pad(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);

	memset(dst, ' ', n);
	memcpy(dst, src, l < n ? l : n);
}

static void
identify_ctrl(struct nvmf_req *r, struct nvmf_id_ctrl *id)
{
	struct nvmf_ctrl *c = r->q->ctrl;
	struct nvmf_subsys *s = c->subsys;

	pad(id->sn, sizeof(id->sn), s->sn);
	pad(id->mn, sizeof(id->mn), "droce-nvmf");
	pad(id->fr, sizeof(id->fr), DROCE_VERSION);
	id->cmic = s->discovery ? 0 : 1u << 1; /* several controllers per subsystem */
	id->mdts = NVMF_MDTS;
	id->cntlid = c->cntlid;
	id->ver = NVMF_VS_1_3;
	id->cntrltype = s->discovery ? 2 : 1;
	id->aerl = 3;
	id->lpa = 1u << 2; /* extended Get Log Page data (offsets) */
	id->elpe = NVMF_ERRLOG - 1;
	id->kas = NVMF_KAS;
	id->sqes = 0x66;
	id->cqes = 0x44;
	id->maxcmd = s->discovery ? NVMF_AQ_DEPTH : NVMF_MAX_DEPTH;
	id->nn = s->discovery ? 0 : NVMF_MAX_NS;
	id->oncs = s->discovery ? 0 : (1u << 2 | 1u << 3); /* DSM, Write Zeroes */
	id->vwc = s->discovery ? 0 : 1;
	/* SGLs supported, keyed data blocks, in-capsule data with an offset */
	id->sgls = 1u << 0 | 1u << 2 | 1u << 20;
	memcpy(id->subnqn, s->nqn, sizeof(id->subnqn));
	id->ioccsz = (NVMF_SQE_SIZE + NVMF_ICD_SIZE) / 16;
	id->iorcsz = NVMF_CQE_SIZE / 16;
	id->icdoff = 0;
	id->msdbd = 1;
}

static uint16_t
identify_ns(struct nvmf_req *r, struct nvmf_id_ns *id)
{
	struct nvmf_ns *ns;

	if (r->sqe.nsid == 0 || r->sqe.nsid == 0xffffffffu)
		return NVMF_SC_INVALID_NS | NVMF_DNR;
	ns = nvmf_ns_find(r->q->ctrl->subsys, r->sqe.nsid);
	if (ns == NULL)
		return r->sqe.nsid <= NVMF_MAX_NS ? 0 : NVMF_SC_INVALID_NS | NVMF_DNR; /* inactive: zeros */
	id->nsze = id->ncap = id->nuse = ns->size >> ns->lba_shift;
	id->nmic = 1;
	id->nlbaf = 0;
	id->flbas = 0;
	id->lbaf[0].ds = (uint8_t)ns->lba_shift;
	id->dlfeat = 1u << 3 | 1; /* deallocated blocks read as zeros; Write Zeroes may deallocate */
	memcpy(id->nguid, ns->nguid, sizeof(id->nguid));
	return 0;
}

static uint16_t
identify_list(struct nvmf_req *r, uint32_t *list)
{
	struct nvmf_subsys *s = r->q->ctrl->subsys;
	unsigned int n = 0;

	if (r->sqe.nsid >= 0xfffffffeu)
		return NVMF_SC_INVALID_NS | NVMF_DNR;
	for (unsigned int i = 0; i < s->n_ns; i++)
		if (s->ns[i].nsid > r->sqe.nsid)
			list[n++] = s->ns[i].nsid; /* ascending: config order is nsid order */
	return 0;
}

static uint16_t
identify_desc(struct nvmf_req *r, uint8_t *buf)
{
	struct nvmf_ns *ns = nvmf_ns_find(r->q->ctrl->subsys, r->sqe.nsid);
	struct nvmf_ns_desc d = { .nidt = NVMF_NIDT_NGUID, .nidl = 16 };

	if (ns == NULL)
		return NVMF_SC_INVALID_NS | NVMF_DNR;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), ns->nguid, 16);
	d.nidt = NVMF_NIDT_CSI;
	d.nidl = 1;
	memcpy(buf + sizeof(d) + 16, &d, sizeof(d));
	buf[2 * sizeof(d) + 16] = 0; /* CSI 0: the NVM command set */
	return 0;
}

static void
exec_identify(struct nvmf_req *r)
{
	uint8_t page[4096] = { 0 };
	uint8_t cns = (uint8_t)r->sqe.cdw10;
	bool disc = r->q->ctrl->subsys->discovery;
	uint16_t st = 0;

	if (r->len != sizeof(page) || r->xfer != NVMF_XFER_TO_HOST)
		return done(r, NVMF_SC_SGL_INVALID_DATA | NVMF_DNR);
	if (disc && cns != NVMF_CNS_CTRL)
		return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
	switch (cns) {
	case NVMF_CNS_CTRL: identify_ctrl(r, (struct nvmf_id_ctrl *)page); break;
	case NVMF_CNS_NS: st = identify_ns(r, (struct nvmf_id_ns *)page); break;
	case NVMF_CNS_NS_ACTIVE_LIST: st = identify_list(r, (uint32_t *)page); break;
	case NVMF_CNS_NS_DESC_LIST: st = identify_desc(r, page); break;
	case NVMF_CNS_CS_CTRL:
		/* I/O command set specific controller data of the NVM set: zeros */
		st = (r->sqe.cdw11 >> 24) == 0 ? 0 : NVMF_SC_INVALID_FIELD | NVMF_DNR;
		break;
	default: st = NVMF_SC_INVALID_FIELD | NVMF_DNR; break;
	}
	if (st == 0)
		memcpy(r->data, page, sizeof(page));
	done(r, st);
}

/* ---- log pages ---- */

static size_t
disc_log(struct nvmf_req *r, uint8_t *buf, size_t cap)
{
	struct nvmf_disc_hdr *h = (void *)buf;
	struct sockaddr *sa = rdma_get_local_addr(r->q->id);
	char ip[64] = "";
	size_t n = sizeof(*h);

	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip));
	h->genctr = nvmf_tgt.genctr;
	h->numrec = nvmf_tgt.n_subsys;
	for (unsigned int i = 0; i < nvmf_tgt.n_subsys && n + 1024 <= cap; i++, n += 1024) {
		struct nvmf_disc_entry *e = (void *)(buf + n);

		e->trtype = 1;  /* RDMA */
		e->adrfam = 1;  /* IPv4 */
		e->subtype = 2; /* NVMe subsystem */
		e->treq = 0;
		e->portid = 1;
		e->cntlid = 0xffff; /* dynamic */
		e->asqsz = NVMF_AQ_DEPTH;
		snprintf(e->trsvcid, sizeof(e->trsvcid), "%u", nvmf_tgt.port);
		memcpy(e->subnqn, nvmf_tgt.subsys[i].nqn, sizeof(e->subnqn));
		/* the address the host reached us on (never 0.0.0.0) */
		snprintf(e->traddr, sizeof(e->traddr), "%s",
			 strcmp(nvmf_tgt.addr, "0.0.0.0") == 0 ? ip : nvmf_tgt.addr);
		e->rdma_qptype = 1; /* reliable connected */
		e->rdma_prtype = 1; /* not specified */
		e->rdma_cms = 1;    /* RDMA_CM */
	}
	return n;
}

static void
exec_get_log(struct nvmf_req *r)
{
	static uint8_t page[sizeof(struct nvmf_disc_hdr) + NVMF_MAX_SUBSYS * 1024];
	struct nvmf_ctrl *c = r->q->ctrl;
	uint8_t lid = (uint8_t)r->sqe.cdw10;
	uint64_t numd = ((uint64_t)(r->sqe.cdw11 & 0xffff) << 16 | (r->sqe.cdw10 >> 16)) + 1;
	uint64_t len = numd * 4, off = (uint64_t)r->sqe.cdw13 << 32 | r->sqe.cdw12;
	size_t total;

	if (r->xfer != NVMF_XFER_TO_HOST || r->len != len)
		return done(r, NVMF_SC_SGL_INVALID_DATA | NVMF_DNR);
	if (off & 3)
		return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
	memset(page, 0, sizeof(page));
	switch (lid) {
	case NVMF_LID_DISC:
		if (!c->subsys->discovery)
			return done(r, NVMF_SC_INVALID_LOG_PAGE | NVMF_DNR);
		total = disc_log(r, page, sizeof(page));
		break;
	case NVMF_LID_ERROR:
		if (c->subsys->discovery)
			return done(r, NVMF_SC_INVALID_LOG_PAGE | NVMF_DNR);
		/* newest first */
		for (unsigned int i = 0; i < NVMF_ERRLOG && i < c->err_count; i++)
			memcpy(page + i * 64, &c->errlog[(c->err_count - 1 - i) % NVMF_ERRLOG], 64);
		total = NVMF_ERRLOG * 64;
		break;
	case NVMF_LID_SMART: {
		struct nvmf_smart_log *s = (void *)page;

		if (c->subsys->discovery)
			return done(r, NVMF_SC_INVALID_LOG_PAGE | NVMF_DNR);
		s->temperature[0] = 0x2b; /* 300 K */
		s->temperature[1] = 0x01;
		s->avail_spare = 100;
		s->spare_thresh = 10;
		s->data_units_read[0] = (c->units_read + 999) / 1000;   /* 1000 x 512 bytes */
		s->data_units_written[0] = (c->units_written + 999) / 1000;
		s->host_reads[0] = c->host_reads;
		s->host_writes[0] = c->host_writes;
		s->power_cycles[0] = 1;
		s->num_err_log_entries[0] = c->err_count;
		total = sizeof(*s);
		break;
	}
	case NVMF_LID_FW_SLOT:
		if (c->subsys->discovery)
			return done(r, NVMF_SC_INVALID_LOG_PAGE | NVMF_DNR);
		page[0] = 1; /* slot 1 active */
		memcpy(page + 8, DROCE_VERSION "        ", 8);
		total = 512;
		break;
	default:
		return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
	}
	if (off > total)
		return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
	/* past the page's end the host reads zeros */
	memset(r->data, 0, len);
	memcpy(r->data, page + off, total - off < len ? total - off : len);
	done(r, 0);
}

/* ---- features ---- */

static void
exec_features(struct nvmf_req *r, bool set)
{
	struct nvmf_ctrl *c = r->q->ctrl;
	uint8_t fid = (uint8_t)r->sqe.cdw10;
	uint32_t v = r->sqe.cdw11;

	if (set && (r->sqe.cdw10 >> 31))
		return done(r, NVMF_SC_FEATURE_NOT_SAVEABLE | NVMF_DNR);
	switch (fid) {
	case NVMF_FEAT_NUM_QUEUES:
		if (c->subsys->discovery)
			return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
		if (set) {
			unsigned int nsq = (v & 0xffff) + 1, ncq = (v >> 16) + 1;

			if ((v & 0xffff) == 0xffff || (v >> 16) == 0xffff)
				return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
			c->n_ioq = nsq < ncq ? nsq : ncq;
			if (c->n_ioq > NVMF_MAX_IOQ)
				c->n_ioq = NVMF_MAX_IOQ;
		}
		r->result = (NVMF_MAX_IOQ - 1) | (uint32_t)(NVMF_MAX_IOQ - 1) << 16;
		return done(r, 0);
	case NVMF_FEAT_KATO:
		if (set) {
			c->kato_ms = v;
			c->last_ms = nvmf_now_ms();
		}
		r->result = c->kato_ms;
		return done(r, 0);
	case NVMF_FEAT_ASYNC_EVENT:
		if (set)
			c->aec = v & (1u << 31 | 1u << 9 | 1u << 8); /* discovery log, fw, ns attr */
		r->result = c->aec;
		return done(r, 0);
	case NVMF_FEAT_VWC:
		if (set)
			return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR); /* always on */
		r->result = 1;
		return done(r, 0);
	case NVMF_FEAT_HOST_ID:
		if (set || !(v & 1) || r->len != 16 || r->xfer != NVMF_XFER_TO_HOST)
			return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
		memcpy(r->data, c->hostid, 16);
		return done(r, 0);
	default:
		return done(r, NVMF_SC_INVALID_FIELD | NVMF_DNR);
	}
}

void
nvmf_exec_admin(struct nvmf_req *r)
{
	struct nvmf_ctrl *c = r->q->ctrl;
	bool disc = c->subsys->discovery;

	if (r->sqe.opcode == NVMF_FABRICS) {
		uint8_t fct = ((const struct nvmf_connect_cmd *)&r->sqe)->fctype;

		if (fct == NVMF_FCT_PROP_GET || fct == NVMF_FCT_PROP_SET)
			return exec_prop(r, fct == NVMF_FCT_PROP_GET);
		return done(r, NVMF_SC_INVALID_OPCODE | NVMF_DNR);
	}
	if (!nvmf_ctrl_ready(c))
		return done(r, NVMF_SC_CMD_SEQ_ERROR | NVMF_DNR);
	switch (r->sqe.opcode) {
	case NVMF_ADM_IDENTIFY: return exec_identify(r);
	case NVMF_ADM_GET_LOG_PAGE: return exec_get_log(r);
	case NVMF_ADM_SET_FEATURES: return exec_features(r, true);
	case NVMF_ADM_GET_FEATURES: return exec_features(r, false);
	case NVMF_ADM_KEEP_ALIVE:
		if (c->kato_ms == 0 && !disc)
			return done(r, NVMF_SC_KA_TIMEOUT_INVALID | NVMF_DNR);
		c->last_ms = nvmf_now_ms();
		return done(r, 0);
	case NVMF_ADM_ASYNC_EVENT:
		if (c->n_aer >= 4)
			return done(r, NVMF_SC_ASYNC_LIMIT | NVMF_DNR);
		c->aer[c->n_aer++] = r;
		r->state = NVMF_REQ_EXECUTING; /* held until an event or the end */
		return;
	case NVMF_ADM_ABORT:
		if (disc)
			break;
		r->result = 1; /* not aborted: commands here finish quickly */
		return done(r, 0);
	default:
		break;
	}
	done(r, NVMF_SC_INVALID_OPCODE | NVMF_DNR);
}
