/* SPDX-License-Identifier: BSD-3-Clause
 * droce-nvmf against the suite's host over memif (issue 26 §3): discovery,
 * connect and identify, verified reads and writes in every SGL form, the
 * error statuses, a host leaving mid-I/O, the keep-alive timeout, and a
 * file namespace across a target restart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <droce/droce.h>

#include "common.h"
#include "proc.h"

static struct tgt T;

static void
fini(void)
{
	tgt_stop(&T);
	tgt_cleanup();
}

TestSuite(nvmf, .fini = fini, .timeout = 120);

static void
fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

Test(nvmf, discovery_log_page)
{
	static uint8_t page[4096];
	struct nvmf_id_ctrl *id = (void *)page;
	struct nvmf_disc_hdr *h = (void *)page;
	struct nvmf_disc_entry *e = (void *)(page + 1024);
	struct nvmf_sqe s = { .opcode = NVMF_ADM_GET_LOG_PAGE };
	struct ctl c;

	char ini[64], args[160];
	FILE *f;

	/* two subsystems from droce-nvmf's INI file, a third from the command line */
	snprintf(ini, sizeof(ini), "/tmp/droce-nvmf-%ld.ini", (long)getpid());
	f = fopen(ini, "w");
	cr_assert_not_null(f);
	fprintf(f, "# test\n[target]\nworkers = 2\nblock = 4096\n[subsystem]\nnqn = " SUBNQN
		   "\nmem = 1M\n[subsystem]\nnqn = " SUBNQN "2\nmem = 1M\nmem = 2M\n");
	fclose(f);
	snprintf(args, sizeof(args), "-f %s -n " SUBNQN "3 --mem 1M", ini);
	tgt_start(&T, args);
	unlink(ini);
	cr_assert(tc_contains(T.out, SUBNQN "2 nsid 2: memory, 512 blocks of 4096 bytes"));
	cr_assert_eq(ctl_connect(&c, NVMF_DISC_NQN, HOSTNQN, 0), 0);
	ctl_enable(&c);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_CTRL, 0, page), 0);
	cr_assert_str_eq(id->subnqn, NVMF_DISC_NQN);
	cr_assert_eq(id->cntlid, c.cntlid);
	cr_assert_eq(id->cntrltype, 2);
	{
		struct nvmf_sqe g = { .opcode = NVMF_ADM_GET_FEATURES, .cdw10 = NVMF_FEAT_KATO };
		struct nvmf_cqe cqe;

		cr_assert_eq(nh_cmd(&c.aq, &g, NH_SGL_NULL, NULL, 0, &cqe, TMO), 0);
		cr_assert_eq(cqe.result, 120000, "KATO 0 on discovery: nvmet's 120 s");
	}
	cr_assert(id->lpa & 4, "extended log page data");
	/* the header alone (1024 bytes), then entries 1.. at offset 2048 */
	s.cdw10 = NVMF_LID_DISC | (1024 / 4 - 1) << 16;
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_KEYED, page, 1024, NULL, TMO), 0);
	cr_assert_eq(h->numrec, 3);
	cr_assert_eq(h->recfmt, 0);
	memset(&s, 0, sizeof(s));
	s.opcode = NVMF_ADM_GET_LOG_PAGE;
	s.cdw10 = NVMF_LID_DISC | (2048 / 4 - 1) << 16;
	s.cdw12 = 2048; /* LPOL: skip the header and the first entry */
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_KEYED, page, 2048, NULL, TMO), 0);
	e = (void *)page;
	cr_assert_str_eq(e[0].subnqn, SUBNQN "2");
	cr_assert_str_eq(e[1].subnqn, SUBNQN "3");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(e[i].trtype, 1);
		cr_assert_eq(e[i].adrfam, 1);
		cr_assert_eq(e[i].subtype, 2);
		cr_assert_eq(e[i].cntlid, 0xffff);
		cr_assert_eq(e[i].asqsz, 32);
		cr_assert_str_eq(e[i].trsvcid, "4420");
		cr_assert_str_eq(e[i].traddr, TGT_ADDR);
		cr_assert_eq(e[i].rdma_qptype, 1);
		cr_assert_eq(e[i].rdma_cms, 1);
	}
	/* a discovery controller has no namespaces and no I/O queues */
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS, 1, page), NVMF_SC_INVALID_FIELD | NVMF_DNR);
	ctl_close(&c);
}

Test(nvmf, connect_identify_features)
{
	static uint8_t page[4096];
	struct nvmf_id_ctrl *id = (void *)page;
	struct nvmf_id_ns *ns = (void *)page;
	uint32_t *list = (void *)page;
	struct nvmf_sqe s;
	struct nvmf_cqe cqe;
	uint64_t v;
	struct ctl c;

	tgt_start(&T, "-n " SUBNQN " --mem 4M --mem 2M");
	cr_assert_eq(ctl_connect(&c, SUBNQN, HOSTNQN, 5000), 0);
	cr_assert(c.cntlid >= 1 && c.cntlid <= 0xffef, "dynamic cntlid %u", c.cntlid);
	cr_assert_eq(c.aq.crqsize, NVMF_AQ_DEPTH, "accept's crqsize");
	/* the enable handshake as Linux does it */
	cr_assert_eq(ctl_prop_get(&c, NVMF_PROP_CAP, true, &v), 0);
	cr_assert_eq(v & 0xffff, NVMF_MAX_DEPTH - 1, "CAP.MQES");
	cr_assert_eq((v >> 37) & 0xff, 1, "CAP.CSS: NVM only (bit 43 clear)");
	cr_assert_eq((v >> 48) & 0xf, 0, "CAP.MPSMIN");
	cr_assert_eq(ctl_prop_get(&c, NVMF_PROP_VS, false, &v), 0);
	cr_assert_eq(v, NVMF_VS_1_3);
	cr_assert_eq(ctl_prop_get(&c, NVMF_PROP_CSTS, false, &v), 0);
	cr_assert_eq(v, 0, "not ready before CC.EN");
	/* admin commands before enable: command sequence error */
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_CTRL, 0, page), NVMF_SC_CMD_SEQ_ERROR | NVMF_DNR);
	ctl_enable(&c);
	cr_assert_eq(ctl_prop_get(&c, NVMF_PROP_CC, false, &v), 0);
	cr_assert_eq(v, 0x00460001);

	cr_assert_eq(ctl_identify(&c, NVMF_CNS_CTRL, 0, page), 0);
	cr_assert_eq(id->cntlid, c.cntlid, "Identify cntlid = Connect cntlid");
	cr_assert_str_eq(id->subnqn, SUBNQN);
	cr_assert_neq(id->kas, 0, "keep-alive support (mandatory for fabrics)");
	cr_assert_eq(id->sgls & 0x7, 0x5, "SGLs and keyed SGLs");
	cr_assert(id->sgls & (1u << 20), "in-capsule data with offset");
	cr_assert_eq(id->ioccsz, (64 + 4096) / 16);
	cr_assert_eq(id->iorcsz, 1);
	cr_assert_eq(id->icdoff, 0);
	cr_assert_eq(id->msdbd, 1);
	cr_assert_geq(id->maxcmd, 128);
	cr_assert_eq(id->mdts, NVMF_MDTS);
	cr_assert_eq(id->cmic & 2, 2);
	cr_assert_eq(id->cntrltype, 1);
	cr_assert_eq(id->oncs & 0xc, 0xc, "DSM and Write Zeroes");
	cr_assert_neq(id->sn[0], ' ');
	cr_assert_eq(memcmp(id->mn, "droce-nvmf ", 11), 0);

	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS_ACTIVE_LIST, 0, page), 0);
	cr_assert_eq(list[0], 1);
	cr_assert_eq(list[1], 2);
	cr_assert_eq(list[2], 0);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS_ACTIVE_LIST, 1, page), 0);
	cr_assert_eq(list[0], 2, "the list starts after the command's NSID");
	cr_assert_eq(list[1], 0);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS, 2, page), 0);
	cr_assert_eq(ns->nsze, 2u << 20 >> 9);
	cr_assert_eq(ns->ncap, ns->nsze);
	cr_assert_eq(ns->lbaf[0].ds, 9);
	cr_assert_eq(ns->flbas, 0);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS, 7, page), 0, "inactive NSID: zeros");
	cr_assert_eq(ns->nsze, 0);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS, 0xffffffffu, page), NVMF_SC_INVALID_NS | NVMF_DNR);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS_DESC_LIST, 1, page), 0);
	cr_assert_eq(page[0], NVMF_NIDT_NGUID);
	cr_assert_eq(page[1], 16);
	cr_assert_eq(page[20], NVMF_NIDT_CSI);
	cr_assert_eq(page[21], 1);
	cr_assert_eq(page[24], 0);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_NS_DESC_LIST, 9, page), NVMF_SC_INVALID_NS | NVMF_DNR);
	cr_assert_eq(ctl_identify(&c, NVMF_CNS_CS_CTRL, 0, page), 0);
	cr_assert_eq(ctl_identify(&c, 0x55, 0, page), NVMF_SC_INVALID_FIELD | NVMF_DNR);

	/* features */
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_GET_FEATURES, .cdw10 = NVMF_FEAT_KATO };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_NULL, NULL, 0, &cqe, TMO), 0);
	cr_assert_eq(cqe.result, 5000, "KATO from Connect");
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_SET_FEATURES, .cdw10 = NVMF_FEAT_NUM_QUEUES,
			       .cdw11 = 0xffff };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_NULL, NULL, 0, NULL, TMO), NVMF_SC_INVALID_FIELD | NVMF_DNR);
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_GET_FEATURES, .cdw10 = NVMF_FEAT_VWC };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_NULL, NULL, 0, &cqe, TMO), 0);
	cr_assert_eq(cqe.result, 1);
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_GET_FEATURES, .cdw10 = NVMF_FEAT_HOST_ID, .cdw11 = 1 };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_KEYED, page, 16, NULL, TMO), 0);
	cr_assert_eq(page[0], 0x5a);
	cr_assert_eq(page[15], 0x5a);
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_SET_FEATURES, .cdw10 = 0x7e };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_NULL, NULL, 0, NULL, TMO), NVMF_SC_INVALID_FIELD | NVMF_DNR);
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_KEEP_ALIVE };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_NULL, NULL, 0, NULL, TMO), 0);
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_ABORT, .cdw10 = 5 };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_NULL, NULL, 0, &cqe, TMO), 0);
	cr_assert_eq(cqe.result & 1, 1, "not aborted");

	/* SMART and error log pages */
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_GET_LOG_PAGE, .cdw10 = NVMF_LID_SMART | (512 / 4 - 1) << 16 };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_KEYED, page, 512, NULL, TMO), 0);
	cr_assert_eq(((struct nvmf_smart_log *)page)->avail_spare, 100);
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_GET_LOG_PAGE, .cdw10 = NVMF_LID_ERROR | (64 / 4 - 1) << 16 };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_KEYED, page, 64, NULL, TMO), 0);
	{
		struct nvmf_error_entry *e = (void *)page;

		cr_assert_geq(e->error_count, 3, "the errors above are logged");
		cr_assert_eq(e->sqid, 0);
		cr_assert_eq(e->status >> 1, NVMF_SC_INVALID_FIELD | NVMF_DNR, "newest first");
	}
	s = (struct nvmf_sqe){ .opcode = NVMF_ADM_GET_LOG_PAGE, .cdw10 = NVMF_LID_DISC | (1024 / 4 - 1) << 16 };
	cr_assert_eq(nh_cmd(&c.aq, &s, NH_SGL_KEYED, page, 1024, NULL, TMO),
		     NVMF_SC_INVALID_LOG_PAGE | NVMF_DNR, "no discovery log on an I/O controller");

	/* I/O queues, then an AER held until shutdown */
	ctl_io_queues(&c, 2, 32, 4096);
	cr_assert_eq(c.ioq[0].crqsize, 32);
	{
		struct nvmf_sqe aer = { .opcode = NVMF_ADM_ASYNC_EVENT };
		int slot = nh_slot_get(&c.aq);

		cr_assert_eq(nh_submit(&c.aq, slot, &aer, NH_SGL_NULL, 0), 0);
		for (int i = 0; i < 50; i++) {
			nh_poll(&c.aq);
			usleep(1000);
		}
		cr_assert_not(nh_reap(&c.aq, slot, NULL), "the AER is held");
		/* shutdown: CC.SHN = normal, CSTS.SHST = complete */
		cr_assert_eq(ctl_prop_set(&c, NVMF_PROP_CC, 0x00464001), 0);
		cr_assert_eq(ctl_prop_get(&c, NVMF_PROP_CSTS, false, &v), 0);
		cr_assert_eq(v & 0xc, NVMF_CSTS_SHST_CMPLT);
		for (int i = 0; i < 1000 && !nh_reap(&c.aq, slot, &cqe); i++) {
			nh_poll(&c.aq);
			droce_progress();
		}
		cr_assert_eq(cqe.status >> 1, NVMF_SC_INTERNAL | NVMF_DNR, "the AER ends with the shutdown");
	}
	ctl_close(&c);
}

/* Writes and reads back through every SGL form, compared byte for byte. */
Test(nvmf, verified_reads_and_writes)
{
	static uint8_t w[131072], r[131072];
	static const enum nh_sgl wmode[] = { NH_SGL_KEYED, NH_SGL_KEYED_INV, NH_SGL_INCAPSULE };
	static const enum nh_sgl rmode[] = { NH_SGL_KEYED, NH_SGL_KEYED_INV };
	struct nvmf_sqe s;
	struct nvmf_cqe cqe;
	struct ctl c;

	tgt_start(&T, "-n " SUBNQN " --mem 8M");
	cr_assert_eq(ctl_connect(&c, SUBNQN, HOSTNQN, 0), 0);
	ctl_enable(&c);
	ctl_io_queues(&c, 2, 32, sizeof(w));
	/* never written: zeros (the first thing a host reads is LBA 0) */
	cr_assert_eq(io_rw(&c.ioq[0], NVMF_IO_READ, 1, 0, 256, r, NH_SGL_KEYED_INV), 0);
	for (size_t i = 0; i < 256 * 512; i++)
		cr_assert_eq(r[i], 0, "byte %zu of a block never written", i);
	for (unsigned int k = 0; k < 24; k++) {
		struct nh_queue *q = &c.ioq[k % 2];
		uint32_t nlb = k < 12 ? 1 + k % 8 : 256 - k; /* in-capsule sizes, then large */
		uint64_t slba = (k * 2731u) % (8u * 2048 - 256);
		enum nh_sgl wm = wmode[k % 3], rm = rmode[(k / 3) % 2];

		if (wm == NH_SGL_INCAPSULE && nlb * 512 > NVMF_ICD_SIZE)
			wm = NH_SGL_KEYED_INV;
		fill(w, nlb * 512, k + 1);
		cr_assert_eq(io_rw(q, NVMF_IO_WRITE, 1, slba, nlb, w, wm), 0, "write %u", k);
		cr_assert_eq(io_rw(&c.ioq[(k + 1) % 2], NVMF_IO_READ, 1, slba, nlb, r, rm), 0, "read %u", k);
		cr_assert_eq(memcmp(w, r, nlb * 512), 0, "case %u: %u blocks at %llu (write mode %d, read mode %d)",
			     k, nlb, (unsigned long long)slba, wm, rm);
	}
	/* the 0x4F form: the target's response carries SEND_WITH_INVALIDATE of that key */
	{
		struct nh_queue *q = &c.ioq[0];
		int slot = nh_slot_get(q);
		uint32_t key;

		s = (struct nvmf_sqe){ .opcode = NVMF_IO_READ, .nsid = 1, .cdw10 = 0, .cdw12 = 7 };
		cr_assert_eq(nh_submit(q, slot, &s, NH_SGL_KEYED_INV, 4096), 0);
		key = q->slot[slot].bound_rkey;
		for (int i = 0; i < 100000 && !(q->slot[slot].rsp_done && q->slot[slot].send_done); i++)
			nh_poll(q);
		cr_assert(q->slot[slot].with_inv, "SEND_WITH_INV");
		cr_assert_eq(q->slot[slot].inv_rkey, key);
		cr_assert(nh_reap(q, slot, &cqe));
		cr_assert_eq(cqe.status, 0);
		/* 0x40: a plain SEND */
		slot = nh_slot_get(q);
		cr_assert_eq(nh_submit(q, slot, &s, NH_SGL_KEYED, 4096), 0);
		for (int i = 0; i < 100000 && !(q->slot[slot].rsp_done && q->slot[slot].send_done); i++)
			nh_poll(q);
		cr_assert_not(q->slot[slot].with_inv);
		cr_assert(nh_reap(q, slot, NULL));
	}
	/* Write Zeroes, Dataset Management deallocate, Flush */
	fill(w, 8192, 99);
	cr_assert_eq(io_rw(&c.ioq[0], NVMF_IO_WRITE, 1, 100, 16, w, NH_SGL_KEYED), 0);
	s = (struct nvmf_sqe){ .opcode = NVMF_IO_WRITE_ZEROES, .nsid = 1, .cdw10 = 102, .cdw12 = 1 };
	cr_assert_eq(nh_cmd(&c.ioq[0], &s, NH_SGL_NULL, NULL, 0, NULL, TMO), 0);
	{
		struct nvmf_dsm_range rg[2] = { { 0, 2, 110 }, { 0, 1, 114 } };
		uint8_t dsm[4096] = { 0 };

		memcpy(dsm, rg, sizeof(rg));
		/* Linux always sends 4096 bytes of ranges */
		s = (struct nvmf_sqe){ .opcode = NVMF_IO_DSM, .nsid = 1, .cdw10 = 1, .cdw11 = 1u << 2 };
		cr_assert_eq(nh_cmd(&c.ioq[1], &s, NH_SGL_INCAPSULE, dsm, sizeof(dsm), NULL, TMO), 0);
	}
	s = (struct nvmf_sqe){ .opcode = NVMF_IO_FLUSH, .nsid = 1 };
	cr_assert_eq(nh_cmd(&c.ioq[1], &s, NH_SGL_NULL, NULL, 0, NULL, TMO), 0);
	cr_assert_eq(io_rw(&c.ioq[1], NVMF_IO_READ, 1, 100, 16, r, NH_SGL_KEYED), 0);
	for (unsigned int b = 0; b < 16; b++) {
		bool zero = b == 2 || b == 3 || b == 10 || b == 11 || b == 14;
		static const uint8_t z[512];

		cr_assert_eq(memcmp(r + b * 512, zero ? z : w + b * 512, 512), 0, "block %u (zero %d)", 100 + b,
			     zero);
	}
	/* queue depth: 32 writes in flight on one queue, then 32 reads */
	{
		struct nh_queue *q = &c.ioq[0];
		const uint32_t nlb = 16;

		for (int dir = 0; dir < 2; dir++) {
			for (int i = 0; i < 32; i++) {
				int slot = nh_slot_get(q);

				cr_assert_geq(slot, 0);
				s = (struct nvmf_sqe){ .opcode = dir ? NVMF_IO_READ : NVMF_IO_WRITE, .nsid = 1,
						       .cdw10 = 4096 + (uint32_t)slot * nlb, .cdw12 = nlb - 1 };
				if (!dir)
					fill(nh_buf(q, slot), nlb * 512, 1000 + (uint32_t)slot);
				else
					memset(nh_buf(q, slot), 0, nlb * 512);
				cr_assert_eq(nh_submit(q, slot, &s, i % 2 ? NH_SGL_KEYED : NH_SGL_KEYED_INV,
						       nlb * 512), 0, "%s", q->err);
			}
			for (int i = 0; i < 200000 && q->outstanding; i++) {
				nh_poll(q);
				for (unsigned int k = 0; k < q->depth; k++)
					if (q->slot[k].busy && nh_reap(q, (int)k, &cqe)) {
						cr_assert_eq(cqe.status, 0);
						if (dir) {
							fill(w, nlb * 512, 1000 + k);
							cr_assert_eq(memcmp(nh_buf(q, (int)k), w, nlb * 512), 0, "slot %u", k);
						}
					}
			}
			cr_assert_eq(q->outstanding, 0, "%s", q->err);
		}
	}
	ctl_close(&c);
}
