/* SPDX-License-Identifier: BSD-3-Clause
 * The nvmf suite's fixture: droce-nvmf as a second process (memif server,
 * 198.18.0.1), the test process the host (memif client, 198.18.0.2), and the
 * NVMe-oF steps a host takes (connect, properties, enable, identify).
 */
#ifndef DROCE_TESTS_NVMF_COMMON_H
#define DROCE_TESTS_NVMF_COMMON_H

#include <sys/types.h>

#include "host.h"

#define TGT_ADDR "198.18.0.1"
#define SUBNQN "nqn.2026-11.dev.droce:test"
#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:droce-test-host"
#define TMO 5000

struct tgt {
	pid_t pid;
	char out[128];
	bool host_started;
};

/* Starts droce-nvmf with @args (after -a TGT_ADDR -v), waits until it
 * listens and the memif link is up. */
void tgt_start(struct tgt *t, const char *args);
/* SIGTERM, reaps it (its exit status must be 0), removes the files. */
void tgt_stop(struct tgt *t);
void tgt_cleanup(void);

struct ctl {
	struct nh_queue aq;
	struct nh_queue ioq[4];
	unsigned int n_ioq;
	uint16_t cntlid;
	char hostnqn[NVMF_NQN_SIZE];
};

/* Admin queue + Fabrics Connect; the Connect status (cntlid in c->cntlid). */
int ctl_connect(struct ctl *c, const char *subnqn, const char *hostnqn, uint32_t kato_ms);
/* Property Get/Set: status; *val the value. */
int ctl_prop_get(struct ctl *c, uint32_t off, bool wide, uint64_t *val);
int ctl_prop_set(struct ctl *c, uint32_t off, uint32_t val);
/* CC.EN = 1 and wait for CSTS.RDY (asserts). */
void ctl_enable(struct ctl *c);
/* Identify @cns for @nsid into @buf (4096 bytes): status. */
int ctl_identify(struct ctl *c, uint8_t cns, uint32_t nsid, void *buf);
/* Set Features Number of Queues (asserts), then connects @n I/O queues of @depth. */
void ctl_io_queues(struct ctl *c, unsigned int n, unsigned int depth, size_t slot_size);
/* Fabrics Connect on an I/O queue already connected at the CM level: status. */
int ctl_io_connect(struct ctl *c, struct nh_queue *q, uint16_t qid, uint16_t cntlid,
		   const char *hostnqn, enum nh_sgl mode);
void ctl_close(struct ctl *c);

/* Read/Write @nlb blocks of 512 bytes at @slba through @q: status. */
int io_rw(struct nh_queue *q, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, void *buf,
	  enum nh_sgl mode);

#endif
