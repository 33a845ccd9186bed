/* SPDX-License-Identifier: BSD-3-Clause
 * The nvmf suite's fixture (common.h).
 */
#include "common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <droce/droce.h>

#include "pmd_glue/port.h"
#include "proc.h"

static char sock[108], ini[2][128];

static void
link_wait(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);

	cr_assert_not_null(l, "droce did not start from %s", ini[1]);
	ibv_free_device_list(l);
	for (int i = 0; i < 1000; i++) {
		if (droce_port_link_up(droce_port_get(0)))
			return;
		usleep(10000);
	}
	cr_assert_fail("memif link not up");
}

void
tgt_start(struct tgt *t, const char *args)
{
	const char *exe = getenv("DROCE_NVMF");
	char full[768];
	static unsigned int n;

	cr_assert_not_null(exe, "DROCE_NVMF not set (run through meson test)");
	if (sock[0] == '\0') {
		snprintf(sock, sizeof(sock), "/tmp/droce-nvmf-%ld.sock", (long)getpid());
		for (unsigned int k = 0; k < 2; k++)
			tc_memif_ini(ini[k], sizeof(ini[k]), "nvmf", k, sock, 64,
				     "rxd = 1024\ntxd = 1024\n");
	}
	snprintf(t->out, sizeof(t->out), "/tmp/droce-nvmf-%ld-%u.out", (long)getpid(), n++);
	snprintf(full, sizeof(full), "-a " TGT_ADDR " -v -t 150 %s", args);
	t->pid = tc_spawn(ini[0], exe, full, t->out);
	for (int i = 0; i < 3000 && !tc_contains(t->out, "listening on"); i++) {
		if (waitpid(t->pid, NULL, WNOHANG) == t->pid) {
			tc_dump(t->out);
			cr_assert_fail("droce-nvmf ended before listening");
		}
		usleep(10000);
	}
	cr_assert(tc_contains(t->out, "listening on"), "droce-nvmf did not start");
	setenv("DROCE_CONFIG", ini[1], 1);
	link_wait();
}

void
tgt_stop(struct tgt *t)
{
	int st;

	if (t->pid <= 0)
		return;
	kill(t->pid, SIGTERM);
	st = tc_reap(t->pid, 20);
	t->pid = 0;
	if (st != 0 || getenv("NVMF_SHOW_TARGET"))
		tc_dump(t->out); /* NVMF_SHOW_TARGET=1: the target's log in any case */
	cr_expect_eq(st, 0, "droce-nvmf exit status %d", st);
	unlink(t->out);
}

void
tgt_cleanup(void)
{
	for (unsigned int k = 0; k < 2; k++)
		if (ini[k][0])
			unlink(ini[k]);
	if (sock[0])
		unlink(sock);
}

int
ctl_connect(struct ctl *c, const char *subnqn, const char *hostnqn, uint32_t kato_ms)
{
	struct nvmf_connect_data d = { 0 };
	struct nvmf_connect_cmd cmd = { .opcode = NVMF_FABRICS, .fctype = NVMF_FCT_CONNECT };
	struct nvmf_cqe cqe;
	int st;

	memset(c, 0, sizeof(*c));
	snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", hostnqn);
	cr_assert_eq(nh_connect(&c->aq, TGT_ADDR, NVMF_PORT, 0, NVMF_AQ_DEPTH, 0, 16, 8192, 0, 0), 0,
		     "admin queue: %s", c->aq.err);
	cmd.qid = 0;
	cmd.sqsize = NVMF_AQ_DEPTH - 1;
	cmd.kato = kato_ms;
	memset(d.hostid, 0x5a, sizeof(d.hostid));
	d.cntlid = 0xffff;
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", subnqn);
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", hostnqn);
	/* admin capsules carry no data: Connect's 1024 bytes go keyed (RDMA READ) */
	st = nh_cmd(&c->aq, (struct nvmf_sqe *)&cmd, NH_SGL_KEYED_INV, &d, sizeof(d), &cqe, TMO);
	cr_assert_geq(st, 0, "Connect: %s", c->aq.err);
	if (st == 0)
		c->cntlid = (uint16_t)cqe.result;
	return st;
}

int
ctl_prop_get(struct ctl *c, uint32_t off, bool wide, uint64_t *val)
{
	struct nvmf_prop_cmd p = { .opcode = NVMF_FABRICS, .fctype = NVMF_FCT_PROP_GET,
				   .attrib = wide, .offset = off };
	struct nvmf_cqe cqe;
	int st = nh_cmd(&c->aq, (struct nvmf_sqe *)&p, NH_SGL_NULL, NULL, 0, &cqe, TMO);

	cr_assert_geq(st, 0, "Property Get: %s", c->aq.err);
	*val = cqe.result;
	return st;
}

int
ctl_prop_set(struct ctl *c, uint32_t off, uint32_t val)
{
	struct nvmf_prop_cmd p = { .opcode = NVMF_FABRICS, .fctype = NVMF_FCT_PROP_SET,
				   .offset = off, .value = val };
	int st = nh_cmd(&c->aq, (struct nvmf_sqe *)&p, NH_SGL_NULL, NULL, 0, NULL, TMO);

	cr_assert_geq(st, 0, "Property Set: %s", c->aq.err);
	return st;
}

void
ctl_enable(struct ctl *c)
{
	uint64_t v = 0;

	cr_assert_eq(ctl_prop_set(c, NVMF_PROP_CC, 0x00460001), 0);
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(ctl_prop_get(c, NVMF_PROP_CSTS, false, &v), 0);
		if (v & NVMF_CSTS_RDY)
			return;
		usleep(1000);
	}
	cr_assert_fail("CSTS.RDY not set: 0x%llx", (unsigned long long)v);
}

int
ctl_identify(struct ctl *c, uint8_t cns, uint32_t nsid, void *buf)
{
	struct nvmf_sqe s = { .opcode = NVMF_ADM_IDENTIFY, .nsid = nsid, .cdw10 = cns };
	int st = nh_cmd(&c->aq, &s, NH_SGL_KEYED_INV, buf, 4096, NULL, TMO);

	cr_assert_geq(st, 0, "Identify: %s", c->aq.err);
	return st;
}

int
ctl_io_connect(struct ctl *c, struct nh_queue *q, uint16_t qid, uint16_t cntlid,
	       const char *hostnqn, enum nh_sgl mode)
{
	struct nvmf_connect_data d = { 0 };
	struct nvmf_connect_cmd cmd = { .opcode = NVMF_FABRICS, .fctype = NVMF_FCT_CONNECT };
	int st;

	(void)c;
	cmd.qid = qid;
	cmd.sqsize = (uint16_t)(q->depth - 1);
	memset(d.hostid, 0x5a, sizeof(d.hostid));
	d.cntlid = cntlid;
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", SUBNQN);
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", hostnqn);
	st = nh_cmd(q, (struct nvmf_sqe *)&cmd, mode, &d, sizeof(d), NULL, TMO);
	cr_assert_geq(st, 0, "I/O Connect: %s", q->err);
	return st;
}

void
ctl_io_queues(struct ctl *c, unsigned int n, unsigned int depth, size_t slot_size)
{
	struct nvmf_sqe s = { .opcode = NVMF_ADM_SET_FEATURES, .cdw10 = NVMF_FEAT_NUM_QUEUES,
			      .cdw11 = (n - 1) | (n - 1) << 16 };
	struct nvmf_cqe cqe;

	cr_assert_eq(nh_cmd(&c->aq, &s, NH_SGL_NULL, NULL, 0, &cqe, TMO), 0, "Number of Queues");
	cr_assert_geq((cqe.result & 0xffff) + 1, n);
	for (unsigned int i = 0; i < n; i++) {
		struct nh_queue *q = &c->ioq[i];

		cr_assert_eq(nh_connect(q, TGT_ADDR, NVMF_PORT, (uint16_t)(i + 1), depth, 0, 16,
					slot_size, NVMF_ICD_SIZE, 0), 0, "I/O queue %u: %s", i + 1, q->err);
		/* the I/O Connect's data fits in the capsule (Linux sends it so) */
		cr_assert_eq(ctl_io_connect(c, q, (uint16_t)(i + 1), c->cntlid, c->hostnqn,
					    NH_SGL_INCAPSULE), 0);
	}
	c->n_ioq = n;
}

void
ctl_close(struct ctl *c)
{
	for (unsigned int i = 0; i < c->n_ioq; i++)
		nh_close(&c->ioq[i]);
	nh_close(&c->aq);
	c->n_ioq = 0;
}

int
io_rw(struct nh_queue *q, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, void *buf,
      enum nh_sgl mode)
{
	struct nvmf_sqe s = { .opcode = opc, .nsid = nsid, .cdw10 = (uint32_t)slba,
			      .cdw11 = (uint32_t)(slba >> 32), .cdw12 = nlb - 1 };
	int st = nh_cmd(q, &s, mode, buf, nlb * 512, NULL, TMO);

	cr_assert_geq(st, 0, "I/O 0x%x: %s", opc, q->err);
	return st;
}
