/* SPDX-License-Identifier: BSD-3-Clause
 * NVMe over Fabrics on RDMA: the wire structures droce-nvmf and its test
 * initiator exchange (NVMe Base 2.0 ch.4-6, NVMe-oF 1.1, the NVMe RDMA
 * transport binding), as packed little-endian structs.  Every field's offset
 * is checked against the specification's byte offset at compile time, so no
 * code types an offset by hand.  Host byte order is little-endian here
 * (x86-64, aarch64): the checks at the end enforce it.
 */
#ifndef DROCE_NVMF_PROTO_H
#define DROCE_NVMF_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define NVMF_PORT 4420
#define NVMF_DISC_NQN "nqn.2014-08.org.nvmexpress.discovery"
#define NVMF_NQN_SIZE 256
#define NVMF_SQE_SIZE 64
#define NVMF_CQE_SIZE 16
#define NVMF_AQ_DEPTH 32         /* admin queue entries the host uses */
#define NVMF_ICD_SIZE 4096       /* in-capsule data advertised on I/O queues */
#define NVMF_MDTS 5              /* 2^5 pages of 4 KiB: 128 KiB per command */
#define NVMF_MAX_XFER (4096u << NVMF_MDTS)
#define NVMF_MAX_DEPTH 128       /* I/O queue entries the target accepts */
#define NVMF_CNTLID_MIN 1
#define NVMF_CNTLID_MAX 0xffef

/* ---- RDMA_CM private data (NVMe RDMA transport 1.0 §3.2) ---- */
struct nvmf_cm_req {
	uint16_t recfmt, qid, hrqsize, hsqsize;
	uint8_t rsvd[24];
} __attribute__((packed));
struct nvmf_cm_rep {
	uint16_t recfmt, crqsize;
	uint8_t rsvd[28];
} __attribute__((packed));
struct nvmf_cm_rej {
	uint16_t recfmt, sts;
} __attribute__((packed));

enum nvmf_cm_rej_sts {
	NVMF_CM_INVALID_LEN = 1,
	NVMF_CM_INVALID_RECFMT = 2,
	NVMF_CM_INVALID_QID = 3,
	NVMF_CM_INVALID_HSQSIZE = 4,
	NVMF_CM_INVALID_HRQSIZE = 5,
	NVMF_CM_NO_RSC = 6,
	NVMF_CM_INVALID_IRD = 7,
	NVMF_CM_INVALID_ORD = 8,
};

/* ---- SGL descriptor (bytes 24-39 of the SQE) ---- */
struct nvmf_sgl {
	uint64_t addr;
	uint8_t len[3];   /* keyed: 24-bit length; data block: the low 3 bytes of le32 */
	uint8_t key[4];   /* keyed: the rkey; data block: len's high byte + reserved */
	uint8_t type;     /* descriptor type << 4 | subtype */
} __attribute__((packed));

enum nvmf_sgl_type {
	NVMF_SGL_DATA_OFFSET = 0x01,   /* data block, in-capsule offset */
	NVMF_SGL_KEYED_ADDR = 0x40,    /* keyed data block, address */
	NVMF_SGL_KEYED_INV = 0x4f,     /* keyed data block, address, invalidate the key */
};

/* ---- submission and completion queue entries ---- */
struct nvmf_sqe {
	uint8_t opcode;
	uint8_t flags;        /* fused bits 1:0, PSDT bits 7:6 */
	uint16_t cid;
	uint32_t nsid;        /* fabrics commands: byte 4 is fctype */
	uint32_t cdw2, cdw3;
	uint64_t mptr;
	struct nvmf_sgl sgl;
	uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
} __attribute__((packed));

struct nvmf_cqe {
	uint64_t result;
	uint16_t sq_head, sq_id, cid, status;   /* status = sc << 1, phase 0 */
} __attribute__((packed));

/* Fabrics command views of the same 64 bytes. */
struct nvmf_connect_cmd {
	uint8_t opcode, rsvd1;
	uint16_t cid;
	uint8_t fctype, rsvd2[19];
	struct nvmf_sgl sgl;
	uint16_t recfmt, qid, sqsize;
	uint8_t cattr, rsvd3;
	uint32_t kato;
	uint8_t rsvd4[12];
} __attribute__((packed));

struct nvmf_prop_cmd {
	uint8_t opcode, rsvd1;
	uint16_t cid;
	uint8_t fctype, rsvd2[35];
	uint8_t attrib, rsvd3[3];
	uint32_t offset;
	uint64_t value;
	uint8_t rsvd4[8];
} __attribute__((packed));

struct nvmf_connect_data {
	uint8_t hostid[16];
	uint16_t cntlid;
	uint8_t rsvd[238];
	char subnqn[NVMF_NQN_SIZE];
	char hostnqn[NVMF_NQN_SIZE];
	uint8_t rsvd2[256];
} __attribute__((packed));

/* ---- opcodes ---- */
enum nvmf_admin_opc {
	NVMF_ADM_GET_LOG_PAGE = 0x02,
	NVMF_ADM_IDENTIFY = 0x06,
	NVMF_ADM_ABORT = 0x08,
	NVMF_ADM_SET_FEATURES = 0x09,
	NVMF_ADM_GET_FEATURES = 0x0a,
	NVMF_ADM_ASYNC_EVENT = 0x0c,
	NVMF_ADM_KEEP_ALIVE = 0x18,
	NVMF_FABRICS = 0x7f,
};
enum nvmf_fctype {
	NVMF_FCT_PROP_SET = 0x00,
	NVMF_FCT_CONNECT = 0x01,
	NVMF_FCT_PROP_GET = 0x04,
};
enum nvmf_io_opc {
	NVMF_IO_FLUSH = 0x00,
	NVMF_IO_WRITE = 0x01,
	NVMF_IO_READ = 0x02,
	NVMF_IO_WRITE_ZEROES = 0x08,
	NVMF_IO_DSM = 0x09,
};
/* Data direction: the low two bits of the opcode (and of fctype). */
enum nvmf_xfer { NVMF_XFER_NONE = 0, NVMF_XFER_TO_CTRL = 1, NVMF_XFER_TO_HOST = 2, NVMF_XFER_BIDI = 3 };

/* ---- status codes (the value before << 1) ---- */
#define NVMF_DNR 0x4000
enum nvmf_sc {
	NVMF_SC_SUCCESS = 0x00,
	NVMF_SC_INVALID_OPCODE = 0x01,
	NVMF_SC_INVALID_FIELD = 0x02,
	NVMF_SC_DATA_XFER_ERROR = 0x04,
	NVMF_SC_ABORT_REQ = 0x07,
	NVMF_SC_INTERNAL = 0x06,
	NVMF_SC_INVALID_NS = 0x0b,
	NVMF_SC_CMD_SEQ_ERROR = 0x0c,
	NVMF_SC_SGL_INVALID_LAST = 0x0d,
	NVMF_SC_SGL_INVALID_DATA = 0x0f,
	NVMF_SC_SGL_INVALID_TYPE = 0x11,
	NVMF_SC_SGL_INVALID_OFFSET = 0x16,
	NVMF_SC_KA_TIMEOUT_INVALID = 0x1b,
	NVMF_SC_LBA_RANGE = 0x80,
	NVMF_SC_CAP_EXCEEDED = 0x81,
	NVMF_SC_INVALID_QID = 0x101,
	NVMF_SC_ASYNC_LIMIT = 0x105,
	NVMF_SC_INVALID_LOG_PAGE = 0x109,
	NVMF_SC_FEATURE_NOT_SAVEABLE = 0x10d,
	NVMF_SC_CONNECT_FORMAT = 0x180,
	NVMF_SC_CONNECT_CTRL_BUSY = 0x181,
	NVMF_SC_CONNECT_INVALID_PARAM = 0x182,
	NVMF_SC_CONNECT_INVALID_HOST = 0x184,
};

/* Connect's result on 0x182: which attribute was invalid (IATTR) at which byte (IPO). */
#define NVMF_IPO_IATTR_SQE(off) (((uint64_t)(off) << 16) | 0)
#define NVMF_IPO_IATTR_DATA(off) (((uint64_t)(off) << 16) | 1)

/* ---- properties (controller registers) ---- */
enum nvmf_prop {
	NVMF_PROP_CAP = 0x00,
	NVMF_PROP_VS = 0x08,
	NVMF_PROP_CC = 0x14,
	NVMF_PROP_CSTS = 0x1c,
};
#define NVMF_CC_EN 0x1u
#define NVMF_CC_SHN_SHIFT 14
#define NVMF_CC_SHN_MASK (3u << NVMF_CC_SHN_SHIFT)
#define NVMF_CSTS_RDY 0x1u
#define NVMF_CSTS_CFS 0x2u
#define NVMF_CSTS_SHST_CMPLT (2u << 2)
#define NVMF_VS_1_3 0x00010300u

/* ---- Identify ---- */
enum nvmf_cns {
	NVMF_CNS_NS = 0x00,
	NVMF_CNS_CTRL = 0x01,
	NVMF_CNS_NS_ACTIVE_LIST = 0x02,
	NVMF_CNS_NS_DESC_LIST = 0x03,
	NVMF_CNS_CS_CTRL = 0x06,
};

struct nvmf_id_ctrl {
	uint16_t vid, ssvid;
	char sn[20], mn[40], fr[8];
	uint8_t rab, ieee[3], cmic, mdts;
	uint16_t cntlid;
	uint32_t ver, rtd3r, rtd3e, oaes, ctratt;
	uint8_t rsvd100[11], cntrltype, fguid[16];
	uint8_t rsvd128[128];
	uint16_t oacs;
	uint8_t acl, aerl, frmw, lpa, elpe, npss, avscc, apsta;
	uint16_t wctemp, cctemp;
	uint8_t rsvd270[50];
	uint16_t kas;
	uint8_t rsvd322[190];
	uint8_t sqes, cqes;
	uint16_t maxcmd;
	uint32_t nn;
	uint16_t oncs, fuses;
	uint8_t fna, vwc;
	uint16_t awun, awupf;
	uint8_t nvscc, nwpc;
	uint16_t acwu;
	uint8_t rsvd534[2];
	uint32_t sgls;
	uint8_t rsvd540[228];
	char subnqn[NVMF_NQN_SIZE];
	uint8_t rsvd1024[768];
	uint32_t ioccsz, iorcsz;
	uint16_t icdoff;
	uint8_t fcatt, msdbd;
	uint16_t ofcs;
	uint8_t rsvd1806[242];
	uint8_t psd[32][32];
	uint8_t vs[1024];
} __attribute__((packed));

struct nvmf_lbaf {
	uint16_t ms;
	uint8_t ds, rp;
} __attribute__((packed));

struct nvmf_id_ns {
	uint64_t nsze, ncap, nuse;
	uint8_t nsfeat, nlbaf, flbas, mc, dpc, dps, nmic, rescap, fpi, dlfeat;
	uint16_t nawun, nawupf, nacwu, nabsn, nabo, nabspf, noiob;
	uint8_t nvmcap[16];
	uint8_t rsvd64[35];
	uint8_t nsattr;
	uint16_t nvmsetid, endgid;
	uint8_t nguid[16], eui64[8];
	struct nvmf_lbaf lbaf[16];
	uint8_t rsvd192[3904];
} __attribute__((packed));

/* Namespace identification descriptor header (CNS 3). */
struct nvmf_ns_desc {
	uint8_t nidt, nidl;
	uint16_t rsvd;
} __attribute__((packed));
enum nvmf_nidt { NVMF_NIDT_EUI64 = 1, NVMF_NIDT_NGUID = 2, NVMF_NIDT_UUID = 3, NVMF_NIDT_CSI = 4 };

/* ---- log pages ---- */
enum nvmf_lid {
	NVMF_LID_ERROR = 0x01,
	NVMF_LID_SMART = 0x02,
	NVMF_LID_FW_SLOT = 0x03,
	NVMF_LID_DISC = 0x70,
};

struct nvmf_disc_hdr {
	uint64_t genctr, numrec;
	uint16_t recfmt;
	uint8_t rsvd[1006];
} __attribute__((packed));

struct nvmf_disc_entry {
	uint8_t trtype, adrfam, subtype, treq;
	uint16_t portid, cntlid, asqsz, eflags;
	uint8_t rsvd12[20];
	char trsvcid[32];
	uint8_t rsvd64[192];
	char subnqn[NVMF_NQN_SIZE];
	char traddr[256];
	uint8_t rdma_qptype, rdma_prtype, rdma_cms, rsvd771[5];
	uint16_t rdma_pkey;
	uint8_t rsvd778[246];
} __attribute__((packed));

struct nvmf_error_entry {
	uint64_t error_count;
	uint16_t sqid, cmdid, status, param_error_location;
	uint64_t lba;
	uint32_t nsid;
	uint8_t vs, trtype, rsvd30[2];
	uint64_t cs;
	uint16_t trtype_spec_info;
	uint8_t rsvd42[22];
} __attribute__((packed));

struct nvmf_smart_log {
	uint8_t critical_warning, temperature[2], avail_spare, spare_thresh, percent_used;
	uint8_t endu_grp_crit_warn_sumry, rsvd7[25];
	uint64_t data_units_read[2], data_units_written[2];
	uint64_t host_reads[2], host_writes[2];
	uint64_t ctrl_busy_time[2], power_cycles[2], power_on_hours[2], unsafe_shutdowns[2];
	uint64_t media_errors[2], num_err_log_entries[2];
	uint8_t rsvd192[320];
} __attribute__((packed));

/* Dataset Management range. */
struct nvmf_dsm_range {
	uint32_t cattr, nlb;
	uint64_t slba;
} __attribute__((packed));

/* ---- features ---- */
enum nvmf_fid {
	NVMF_FEAT_VWC = 0x06,
	NVMF_FEAT_NUM_QUEUES = 0x07,
	NVMF_FEAT_ASYNC_EVENT = 0x0b,
	NVMF_FEAT_KATO = 0x0f,
	NVMF_FEAT_HOST_ID = 0x81,
};

#define NVMF_CHECK_OFF(t, f, off) _Static_assert(offsetof(struct t, f) == (off), #t "." #f)
NVMF_CHECK_OFF(nvmf_sqe, sgl, 24);
NVMF_CHECK_OFF(nvmf_sqe, cdw10, 40);
_Static_assert(sizeof(struct nvmf_sqe) == NVMF_SQE_SIZE, "sqe");
_Static_assert(sizeof(struct nvmf_cqe) == NVMF_CQE_SIZE, "cqe");
_Static_assert(sizeof(struct nvmf_sgl) == 16, "sgl");
_Static_assert(sizeof(struct nvmf_cm_req) == 32 && sizeof(struct nvmf_cm_rep) == 32, "cm");
NVMF_CHECK_OFF(nvmf_connect_cmd, fctype, 4);
NVMF_CHECK_OFF(nvmf_connect_cmd, recfmt, 40);
NVMF_CHECK_OFF(nvmf_connect_cmd, qid, 42);
NVMF_CHECK_OFF(nvmf_connect_cmd, sqsize, 44);
NVMF_CHECK_OFF(nvmf_connect_cmd, cattr, 46);
NVMF_CHECK_OFF(nvmf_connect_cmd, kato, 48);
_Static_assert(sizeof(struct nvmf_connect_cmd) == 64, "connect");
NVMF_CHECK_OFF(nvmf_prop_cmd, attrib, 40);
NVMF_CHECK_OFF(nvmf_prop_cmd, offset, 44);
NVMF_CHECK_OFF(nvmf_prop_cmd, value, 48);
_Static_assert(sizeof(struct nvmf_prop_cmd) == 64, "prop");
NVMF_CHECK_OFF(nvmf_connect_data, cntlid, 16);
NVMF_CHECK_OFF(nvmf_connect_data, subnqn, 256);
NVMF_CHECK_OFF(nvmf_connect_data, hostnqn, 512);
_Static_assert(sizeof(struct nvmf_connect_data) == 1024, "connect data");
NVMF_CHECK_OFF(nvmf_id_ctrl, cmic, 76);
NVMF_CHECK_OFF(nvmf_id_ctrl, mdts, 77);
NVMF_CHECK_OFF(nvmf_id_ctrl, cntlid, 78);
NVMF_CHECK_OFF(nvmf_id_ctrl, ver, 80);
NVMF_CHECK_OFF(nvmf_id_ctrl, ctratt, 96);
NVMF_CHECK_OFF(nvmf_id_ctrl, cntrltype, 111);
NVMF_CHECK_OFF(nvmf_id_ctrl, oacs, 256);
NVMF_CHECK_OFF(nvmf_id_ctrl, aerl, 259);
NVMF_CHECK_OFF(nvmf_id_ctrl, lpa, 261);
NVMF_CHECK_OFF(nvmf_id_ctrl, kas, 320);
NVMF_CHECK_OFF(nvmf_id_ctrl, sqes, 512);
NVMF_CHECK_OFF(nvmf_id_ctrl, maxcmd, 514);
NVMF_CHECK_OFF(nvmf_id_ctrl, nn, 516);
NVMF_CHECK_OFF(nvmf_id_ctrl, oncs, 520);
NVMF_CHECK_OFF(nvmf_id_ctrl, vwc, 525);
NVMF_CHECK_OFF(nvmf_id_ctrl, sgls, 536);
NVMF_CHECK_OFF(nvmf_id_ctrl, subnqn, 768);
NVMF_CHECK_OFF(nvmf_id_ctrl, ioccsz, 1792);
NVMF_CHECK_OFF(nvmf_id_ctrl, iorcsz, 1796);
NVMF_CHECK_OFF(nvmf_id_ctrl, icdoff, 1800);
NVMF_CHECK_OFF(nvmf_id_ctrl, msdbd, 1803);
_Static_assert(sizeof(struct nvmf_id_ctrl) == 4096, "id ctrl");
NVMF_CHECK_OFF(nvmf_id_ns, nlbaf, 25);
NVMF_CHECK_OFF(nvmf_id_ns, flbas, 26);
NVMF_CHECK_OFF(nvmf_id_ns, nmic, 30);
NVMF_CHECK_OFF(nvmf_id_ns, nsattr, 99);
NVMF_CHECK_OFF(nvmf_id_ns, nguid, 104);
NVMF_CHECK_OFF(nvmf_id_ns, eui64, 120);
NVMF_CHECK_OFF(nvmf_id_ns, lbaf, 128);
_Static_assert(sizeof(struct nvmf_id_ns) == 4096, "id ns");
_Static_assert(sizeof(struct nvmf_disc_hdr) == 1024, "disc hdr");
NVMF_CHECK_OFF(nvmf_disc_entry, trsvcid, 32);
NVMF_CHECK_OFF(nvmf_disc_entry, subnqn, 256);
NVMF_CHECK_OFF(nvmf_disc_entry, traddr, 512);
NVMF_CHECK_OFF(nvmf_disc_entry, rdma_qptype, 768);
NVMF_CHECK_OFF(nvmf_disc_entry, rdma_pkey, 776);
_Static_assert(sizeof(struct nvmf_disc_entry) == 1024, "disc entry");
_Static_assert(sizeof(struct nvmf_error_entry) == 64, "error entry");
NVMF_CHECK_OFF(nvmf_smart_log, data_units_read, 32);
NVMF_CHECK_OFF(nvmf_smart_log, host_reads, 64);
_Static_assert(sizeof(struct nvmf_smart_log) == 512, "smart");
_Static_assert(sizeof(struct nvmf_dsm_range) == 16, "dsm range");
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the NVMe structures here are little-endian: a big-endian host needs conversions"
#endif

/* Keyed SGL accessors. */
static inline uint32_t
nvmf_sgl_keyed_len(const struct nvmf_sgl *s)
{
	return (uint32_t)s->len[0] | (uint32_t)s->len[1] << 8 | (uint32_t)s->len[2] << 16;
}
static inline uint32_t
nvmf_sgl_key(const struct nvmf_sgl *s)
{
	return (uint32_t)s->key[0] | (uint32_t)s->key[1] << 8 | (uint32_t)s->key[2] << 16 |
	       (uint32_t)s->key[3] << 24;
}
/* Data block descriptor: the length is a le32 at byte 8. */
static inline uint32_t
nvmf_sgl_data_len(const struct nvmf_sgl *s)
{
	return (uint32_t)s->len[0] | (uint32_t)s->len[1] << 8 | (uint32_t)s->len[2] << 16 |
	       (uint32_t)s->key[0] << 24;
}
static inline void
nvmf_sgl_set_keyed(struct nvmf_sgl *s, uint8_t type, uint64_t addr, uint32_t len, uint32_t key)
{
	s->addr = addr;
	for (int i = 0; i < 3; i++)
		s->len[i] = (uint8_t)(len >> (8 * i));
	for (int i = 0; i < 4; i++)
		s->key[i] = (uint8_t)(key >> (8 * i));
	s->type = type;
}
static inline void
nvmf_sgl_set_data(struct nvmf_sgl *s, uint64_t off, uint32_t len)
{
	nvmf_sgl_set_keyed(s, NVMF_SGL_DATA_OFFSET, off, len & 0xffffff, len >> 24);
}

#endif
