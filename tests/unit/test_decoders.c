/* SPDX-License-Identifier: BSD-3-Clause
 * Independent decoders: droce builds one frame of every valid opcode in three
 * flavours (IPv4, IPv6, IPv4 behind an 802.1Q tag), writes them to a pcap and
 * writes what it meant to build to a sidecar file.  tests/decoders/
 * check_frames.py then decodes the pcap with tshark, recomputes every ICRC
 * with scapy/zlib, and fails on any disagreement.
 *
 * The expected values are derived from the builder's *inputs* and from header
 * sizes typed here, never read back from the built bytes, so a builder bug
 * shows up as a mismatch rather than being copied into the expectations.
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

#ifndef DROCE_SRC_ROOT
#error "DROCE_SRC_ROOT must name the source tree (set by tests/unit/meson.build)"
#endif

#define CHECK_SCRIPT DROCE_SRC_ROOT "/tests/decoders/check_frames.py"
#define DEFAULT_PYTHON "/usr/bin/python3" /* the one with python3-scapy */
#define FRAME_CAP 9216
#define EXIT_TOOL_MISSING 77

extern char **environ;

/* Header sizes as IBTA defines them, typed independently of droce_hdr_size. */
static const struct {
	enum droce_hdr h;
	unsigned int size;
	const char *tshark; /* infiniband.<name> layer tshark shows for it */
} ib_hdrs[] = {
	{ DROCE_HDR_DETH, 8, "deth" },
	{ DROCE_HDR_XRCETH, 4, "xrceth" }, /* not decoded by tshark 4.0: see xrc_blob */
	{ DROCE_HDR_RETH, 16, "reth" },
	{ DROCE_HDR_ATMETH, 28, "atomiceth" },
	{ DROCE_HDR_AETH, 4, "aeth" },
	{ DROCE_HDR_ATMACK, 8, "atomicacketh" },
	{ DROCE_HDR_IMMDT, 4, "immdt" },
	{ DROCE_HDR_IETH, 4, "ieth" },
	{ DROCE_HDR_CNP, 16, "vendor" }, /* tshark 4.0: CNP body shown as vendor data */
};

enum flavour { FL_V4, FL_V6, FL_V4_VLAN, FL_COUNT };

static const char *const flavour_name[FL_COUNT] = { "v4", "v6", "v4vlan" };

/* Payload lengths cycled over payload-carrying opcodes: every pad count 0..3,
 * zero length, and a few multi-cache-line sizes. */
static const uint32_t payload_lens[] = { 13, 6, 1, 0, 255, 4, 1027, 62, 3, 2049, 40, 7 };

static const uint16_t pkeys[] = { 0xffff, 0x8001, 0x7fff, 0x1234, 0xabcd };

struct expect {
	FILE *f;
	unsigned int frame; /* 1-based, as tshark numbers them */
};

static void __attribute__((format(printf, 3, 4)))
expect(struct expect *e, const char *key, const char *fmt, ...)
{
	va_list ap;

	fprintf(e->f, "%u %s ", e->frame, key);
	va_start(ap, fmt);
	vfprintf(e->f, fmt, ap);
	va_end(ap);
	fputc('\n', e->f);
}

/* Bytes the way tshark prints FT_BYTES: lower-case hex joined by ':'. */
static void
expect_bytes(struct expect *e, const char *key, const uint8_t *b, size_t n)
{
	fprintf(e->f, "%u %s ", e->frame, key);
	for (size_t i = 0; i < n; i++)
		fprintf(e->f, "%s%02x", i ? ":" : "", b[i]);
	fputc('\n', e->f);
}

static void
be32_bytes(uint8_t out[4], uint32_t v)
{
	out[0] = (uint8_t)(v >> 24);
	out[1] = (uint8_t)(v >> 16);
	out[2] = (uint8_t)(v >> 8);
	out[3] = (uint8_t)v;
}

/* Host-order IPv4 address (RTE_IPV4 shifts a signed int: UB for 198.x). */
static uint32_t
ipv4(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	return a << 24 | b << 16 | c << 8 | d;
}

static void
path_for(struct droce_path *p, enum flavour fl)
{
	static const struct rte_ether_addr src = { { 0x02, 0xd0, 0xce, 0x00, 0x00, 0x01 } };
	static const struct rte_ether_addr dst = { { 0x02, 0xd0, 0xce, 0x00, 0x00, 0x02 } };
	/* 2001:2::1 and 2001:2::2 (RFC 5180 benchmarking range) */
	static const uint8_t v6src[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 0x01 };
	static const uint8_t v6dst[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 0x02 };

	memset(p, 0, sizeof(*p));
	p->src_mac = src;
	p->dst_mac = dst;
	switch (fl) {
	case FL_V4:
		droce_gid_from_ipv4(p->src_gid, rte_cpu_to_be_32(ipv4(198, 18, 0, 1)));
		droce_gid_from_ipv4(p->dst_gid, rte_cpu_to_be_32(ipv4(198, 19, 255, 254)));
		p->traffic_class = 46 << 2 | 2; /* EF, ECT(0) */
		p->hop_limit = 0;               /* default: 64 */
		p->udp_sport = 0xc0de;
		p->ip_id = 0xfff0;              /* wraps within the flavour */
		p->udp_csum = false;
		break;
	case FL_V6:
		p->ipv6 = true;
		memcpy(p->src_gid, v6src, 16);
		memcpy(p->dst_gid, v6dst, 16);
		p->traffic_class = 26 << 2 | 1; /* AF31, ECT(1) */
		p->hop_limit = 17;
		p->flow_label = 0xabcde;
		p->udp_sport = 49152 + 777;
		p->udp_csum = true;
		break;
	case FL_V4_VLAN:
	default:
		p->vlan = true;
		p->vlan_id = 0x9a5;
		p->vlan_pcp = 5;
		droce_gid_from_ipv4(p->src_gid, rte_cpu_to_be_32(ipv4(198, 18, 200, 7)));
		droce_gid_from_ipv4(p->dst_gid, rte_cpu_to_be_32(ipv4(198, 18, 200, 8)));
		p->traffic_class = 48 << 2 | 3; /* CS6, CE */
		p->hop_limit = 200;
		p->udp_sport = 0xffff;
		p->ip_id = 1234;
		p->udp_csum = true;
		break;
	}
}

/* Varied, mostly non-zero field values for frame @k (global) / @idx (in flavour). */
static void
fields_for(struct droce_pkt_fields *f, uint8_t opcode, unsigned int k, unsigned int idx,
	   enum flavour fl)
{
	uint32_t h = (uint32_t)(k + 1) * 0x9e3779b1u;
	uint32_t flags = droce_opcode_table[opcode].flags;

	memset(f, 0, sizeof(*f));
	f->opcode = opcode;
	f->se = (h >> 31) & 1;
	f->mig = (h >> 30) & 1;
	f->ackreq = (h >> 29) & 1;
	f->fecn = k & 1;
	f->becn = (k >> 1) & 1;
	f->pkey = pkeys[k % RTE_DIM(pkeys)];
	f->dqpn = ((0x123456u + k * 0x010203u) & DROCE_PSN_MASK) | 2u;
	f->psn = (DROCE_PSN_MASK - 9u + idx) & DROCE_PSN_MASK; /* crosses 2^24 */
	f->reth.va = 0x00007f5a3c000123ull + (uint64_t)k * 0x10000ull;
	f->reth.rkey = 0xa5000000u | (k * 0x10101u);
	f->reth.len = 0x00012340u + k;
	if (flags & DROCE_OPF_ACK && !(flags & DROCE_OPF_ATOMIC)) {
		static const uint8_t syn[FL_COUNT] = { 0x0d, 0x2e, 0x62 }; /* ACK, RNR NAK, NAK */
		f->aeth.syndrome = syn[fl];
	} else {
		f->aeth.syndrome = droce_aeth_make_syndrome(DROCE_AETH_ACK, (uint8_t)(k & 0x1f));
	}
	f->aeth.msn = (0xfffff0u + k * 7u) & DROCE_PSN_MASK;
	f->atomic.va = 0x00007f5a3c001008ull + (uint64_t)k * 8u;
	f->atomic.rkey = 0x00a1b2c3u + k;
	f->atomic.swap_add = 0x0123456789abcdefull ^ k;
	f->atomic.cmp = 0xfedcba9876543210ull - k;
	f->atomic_orig = 0x8000000000000001ull + k;
	{
		uint8_t b[4] = { 0xde, 0xad, (uint8_t)(0x10 + fl), (uint8_t)k };
		memcpy(&f->imm, b, 4); /* ImmDt goes on the wire as is */
	}
	f->ieth_rkey = 0x00c0ff00u | (k & 0xff);
	f->deth.qkey = (k & 1) ? 0x80010000u + k : 0x11111111u + k;
	f->deth.src_qp = 0x00c600u + k;
	f->xrc_srqn = (0x00a5c3u + k * 0x0b0a09u) & DROCE_PSN_MASK;
	if (flags & DROCE_OPF_CNP) {
		f->becn = true; /* what a CNP carries */
		f->se = f->mig = f->ackreq = false;
	}
}

static size_t
put_be(uint8_t *o, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		o[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	return n;
}

/* An XRC opcode's bytes after the BTH, from the builder's inputs in IBTA
 * order (XRCETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, payload,
 * pad); the checker appends the frame's ICRC trailer. */
static void
xrc_blob(struct expect *e, const struct droce_opcode_info *oi, const struct droce_pkt_fields *f,
	 const uint8_t *payload, uint32_t plen, unsigned int pad)
{
	static uint8_t blob[FRAME_CAP];
	size_t n = 0;

	if (oi->hdr_mask & DROCE_HDRM(XRCETH))
		n += put_be(blob + n, f->xrc_srqn, 4);
	if (oi->hdr_mask & DROCE_HDRM(RETH)) {
		n += put_be(blob + n, f->reth.va, 8);
		n += put_be(blob + n, f->reth.rkey, 4);
		n += put_be(blob + n, f->reth.len, 4);
	}
	if (oi->hdr_mask & DROCE_HDRM(ATMETH)) {
		n += put_be(blob + n, f->atomic.va, 8);
		n += put_be(blob + n, f->atomic.rkey, 4);
		n += put_be(blob + n, f->atomic.swap_add, 8);
		n += put_be(blob + n, f->atomic.cmp, 8);
	}
	if (oi->hdr_mask & DROCE_HDRM(AETH))
		n += put_be(blob + n, (uint32_t)f->aeth.syndrome << 24 | f->aeth.msn, 4);
	if (oi->hdr_mask & DROCE_HDRM(ATMACK))
		n += put_be(blob + n, f->atomic_orig, 8);
	if (oi->hdr_mask & DROCE_HDRM(IMMDT)) {
		memcpy(blob + n, &f->imm, 4);
		n += 4;
	}
	if (oi->hdr_mask & DROCE_HDRM(IETH))
		n += put_be(blob + n, f->ieth_rkey, 4);
	memcpy(blob + n, payload, plen);
	n += plen;
	memset(blob + n, 0, pad);
	n += pad;
	expect_bytes(e, "_vendor_blob", blob, n);
}

static void
write_expectations(struct expect *e, const struct droce_path *p, enum flavour fl,
		   const struct droce_pkt_fields *f, uint16_t ip_id,
		   const uint8_t *payload, uint32_t plen)
{
	const struct droce_opcode_info *oi = &droce_opcode_table[f->opcode];
	unsigned int ext = 0, l2 = p->vlan ? 18 : 14, l3 = p->ipv6 ? 40 : 20;
	unsigned int pad = (4 - (plen & 3)) & 3;
	unsigned int frame_len, ip_len, udp_len;
	char hdrs[128] = "bth", layers[64];
	/* tshark 4.0 names the XRC opcodes but decodes none of their headers:
	 * everything after the BTH is one vendor blob (checked byte by byte) */
	bool xrc = (f->opcode & 0xe0) == DROCE_TRANSPORT_XRC;
	uint8_t b[4];
	char ip[64];

	for (size_t i = 0; i < RTE_DIM(ib_hdrs); i++) {
		if (!(oi->hdr_mask & (1u << ib_hdrs[i].h)))
			continue;
		ext += ib_hdrs[i].size;
		if (!xrc) {
			strcat(hdrs, ",");
			strcat(hdrs, ib_hdrs[i].tshark);
		}
	}
	if (xrc)
		strcat(hdrs, ",vendor");
	frame_len = l2 + l3 + 8 + 12 + ext + plen + pad + 4;
	ip_len = frame_len - l2;
	udp_len = ip_len - l3;

	snprintf(layers, sizeof(layers), "eth%s:%s:udp:infiniband%s", p->vlan ? ":vlan" : "",
		 p->ipv6 ? "ipv6" : "ip", plen + pad && !xrc ? ":data" : "");
	expect(e, "_name", "%s/%s", oi->name, flavour_name[fl]);
	expect(e, "_ipver", "%d", p->ipv6 ? 6 : 4);
	expect(e, "_layers", "%s", layers);
	expect(e, "_ibhdrs", "%s", hdrs);
	expect(e, "frame.len", "%u", frame_len);

	expect_bytes(e, "eth.dst", p->dst_mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	expect_bytes(e, "eth.src", p->src_mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	expect(e, "eth.type", "0x%04x", p->vlan ? 0x8100 : p->ipv6 ? 0x86dd : 0x0800);
	if (p->vlan) {
		expect(e, "vlan.priority", "%u", p->vlan_pcp);
		expect(e, "vlan.dei", "0");
		expect(e, "vlan.id", "%u", p->vlan_id);
		expect(e, "vlan.etype", "0x%04x", p->ipv6 ? 0x86dd : 0x0800);
	}
	if (p->ipv6) {
		inet_ntop(AF_INET6, p->src_gid, ip, sizeof(ip));
		expect(e, "ipv6.src", "%s", ip);
		inet_ntop(AF_INET6, p->dst_gid, ip, sizeof(ip));
		expect(e, "ipv6.dst", "%s", ip);
		expect(e, "ipv6.version", "6");
		expect(e, "ipv6.tclass", "0x%08x", p->traffic_class);
		expect(e, "ipv6.tclass.dscp", "%u", p->traffic_class >> 2);
		expect(e, "ipv6.tclass.ecn", "%u", p->traffic_class & 3);
		expect(e, "ipv6.flow", "0x%06x", p->flow_label);
		expect(e, "ipv6.plen", "%u", ip_len - 40);
		expect(e, "ipv6.nxt", "17");
		expect(e, "ipv6.hlim", "%u", p->hop_limit ? p->hop_limit : 64);
	} else {
		inet_ntop(AF_INET, p->src_gid + 12, ip, sizeof(ip));
		expect(e, "ip.src", "%s", ip);
		inet_ntop(AF_INET, p->dst_gid + 12, ip, sizeof(ip));
		expect(e, "ip.dst", "%s", ip);
		expect(e, "ip.version", "4");
		expect(e, "ip.hdr_len", "20");
		expect(e, "ip.dsfield", "0x%02x", p->traffic_class);
		expect(e, "ip.dsfield.dscp", "%u", p->traffic_class >> 2);
		expect(e, "ip.dsfield.ecn", "%u", p->traffic_class & 3);
		expect(e, "ip.len", "%u", ip_len);
		expect(e, "ip.id", "0x%04x", ip_id);
		expect(e, "ip.flags.df", "1");
		expect(e, "ip.flags.mf", "0");
		expect(e, "ip.frag_offset", "0");
		expect(e, "ip.ttl", "%u", p->hop_limit ? p->hop_limit : 64);
		expect(e, "ip.proto", "17");
		expect(e, "ip.checksum.status", "1"); /* tshark verified it: good */
	}
	expect(e, "udp.srcport", "%u", p->udp_sport);
	expect(e, "udp.dstport", "4791");
	expect(e, "udp.length", "%u", udp_len);
	expect(e, "udp.checksum.status", "%d", p->udp_csum ? 1 : 3); /* good / absent */

	expect(e, "infiniband.bth.opcode", "%u", f->opcode);
	expect(e, "infiniband.bth.se", "%d", f->se);
	expect(e, "infiniband.bth.m", "%d", f->mig);
	expect(e, "infiniband.bth.padcnt", "%u", pad);
	expect(e, "infiniband.bth.tver", "0");
	expect(e, "infiniband.bth.p_key", "%u", f->pkey);
	expect(e, "infiniband.bth_tree/infiniband.reserved", "%02x",
	       (f->fecn ? 0x80 : 0) | (f->becn ? 0x40 : 0));
	expect(e, "infiniband.bth.destqp", "0x%06x", f->dqpn);
	expect(e, "infiniband.bth.a", "%d", f->ackreq);
	expect(e, "infiniband.bth.reserved7", "0");
	expect(e, "infiniband.bth.psn", "%u", f->psn);

	if (xrc) {
		xrc_blob(e, oi, f, payload, plen, pad);
		return;
	}
	if (oi->hdr_mask & DROCE_HDRM(DETH)) {
		expect(e, "infiniband.deth.q_key", "0x%08x", f->deth.qkey);
		expect(e, "infiniband.deth_tree/infiniband.reserved", "00");
		expect(e, "infiniband.deth.srcqp", "0x%06x", f->deth.src_qp);
	}
	if (oi->hdr_mask & DROCE_HDRM(RETH)) {
		expect(e, "infiniband.reth_tree/infiniband.reth.va", "0x%016" PRIx64, f->reth.va);
		expect(e, "infiniband.reth_tree/infiniband.reth.r_key", "0x%08x", f->reth.rkey);
		expect(e, "infiniband.reth.dmalen", "%u", f->reth.len);
	}
	if (oi->hdr_mask & DROCE_HDRM(ATMETH)) {
		expect(e, "infiniband.atomiceth_tree/infiniband.reth.va", "0x%016" PRIx64,
		       f->atomic.va);
		expect(e, "infiniband.atomiceth_tree/infiniband.reth.r_key", "0x%08x",
		       f->atomic.rkey);
		expect(e, "infiniband.atomiceth.swapdt", "%" PRIu64, f->atomic.swap_add);
		expect(e, "infiniband.atomiceth.cmpdt", "%" PRIu64, f->atomic.cmp);
	}
	if (oi->hdr_mask & DROCE_HDRM(AETH)) {
		expect(e, "infiniband.aeth.syndrome", "%u", f->aeth.syndrome);
		expect(e, "infiniband.aeth.syndrome.opcode", "%u", (f->aeth.syndrome >> 5) & 3);
		expect(e, "infiniband.aeth.msn", "%u", f->aeth.msn);
	}
	if (oi->hdr_mask & DROCE_HDRM(ATMACK))
		expect(e, "infiniband.atomicacketh.origremdt", "%" PRIu64, f->atomic_orig);
	if (oi->hdr_mask & DROCE_HDRM(IMMDT)) {
		memcpy(b, &f->imm, 4);
		expect_bytes(e, "infiniband.immdt_tree/infiniband.immdt", b, 4);
	}
	if (oi->hdr_mask & DROCE_HDRM(IETH)) {
		be32_bytes(b, f->ieth_rkey);
		expect_bytes(e, "infiniband.ieth_tree/infiniband.ieth", b, 4);
	}
	if (oi->hdr_mask & DROCE_HDRM(CNP))
		expect(e, "_cnp_reserved", "16");
	if (plen + pad) {
		uint8_t body[FRAME_CAP];

		memcpy(body, payload, plen);
		memset(body + plen, 0, pad);
		expect(e, "data.len", "%u", plen + pad); /* tshark counts the pad as data */
		expect_bytes(e, "data.data", body, plen + pad);
	}
}

/* Runs the checker with its stdout and stderr in @report (Criterion's TAP
 * mode swallows a test's own output, so the report comes back as text). */
static int
run_checker(const char *pcap, const char *expected, const char *report)
{
	const char *py = getenv("DROCE_PYTHON") ? getenv("DROCE_PYTHON") : DEFAULT_PYTHON;
	char *argv[] = { (char *)py, (char *)CHECK_SCRIPT, (char *)pcap, (char *)expected, NULL };
	posix_spawn_file_actions_t fa;
	int status = -1;
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, report, O_WRONLY | O_CREAT | O_TRUNC,
					 0644);
	posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	rc = posix_spawn(&pid, py, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		cr_log_error("cannot run %s: %s", py, strerror(rc));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The first @cap - 1 bytes of a text file, for an assertion message. */
static const char *
slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, cap - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	if (n == cap - 1 && cap > 4)
		memcpy(buf + cap - 5, "...\n", 5);
	return buf;
}

Test(decoders, every_opcode_every_flavour_agrees_with_tshark_and_scapy)
{
	char dir[] = "/tmp/droce-decoders-XXXXXX";
	char pcap_path[sizeof(dir) + 32], exp_path[sizeof(dir) + 32], rep_path[sizeof(dir) + 32];
	static char report[6144];
	static uint8_t frame[FRAME_CAP], payload[FRAME_CAP];
	struct expect e = { 0 };
	unsigned int k = 0, npay = 0, per_flavour[FL_COUNT] = { 0 };
	bool pad_seen[4] = { false };
	FILE *pc;
	int rc;

	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(pcap_path, sizeof(pcap_path), "%s/frames.pcap", dir);
	snprintf(exp_path, sizeof(exp_path), "%s/expected.txt", dir);
	snprintf(rep_path, sizeof(rep_path), "%s/report.txt", dir);
	pc = test_pcap_create(pcap_path);
	cr_assert_not_null(pc);
	e.f = fopen(exp_path, "w");
	cr_assert_not_null(e.f);
	fprintf(e.f, "# droce test_decoders expectations: <frame> <tshark field> <value>\n");

	for (int fl = 0; fl < FL_COUNT; fl++) {
		struct droce_path path;
		struct droce_hdr_tmpl tmpl;

		path_for(&path, (enum flavour)fl);
		droce_tmpl_init(&tmpl, &path);
		for (unsigned int op = 0; op < 256; op++) {
			const struct droce_opcode_info *oi = &droce_opcode_table[op];
			struct droce_pkt_fields f;
			uint32_t plen = 0;
			/* path.ip_id, one more per frame, wrapping (v4 starts at 0xfff0) */
			uint16_t ip_id = (uint16_t)(path.ip_id + per_flavour[fl]);
			size_t len;

			if (!(oi->flags & DROCE_OPF_VALID))
				continue;
			fields_for(&f, (uint8_t)op, k, per_flavour[fl], (enum flavour)fl);
			if (oi->flags & DROCE_OPF_PAYLOAD)
				plen = payload_lens[npay++ % RTE_DIM(payload_lens)];
			for (uint32_t i = 0; i < plen; i++)
				payload[i] = (uint8_t)(i * 13u + k * 7u + 1u);
			pad_seen[(4 - (plen & 3)) & 3] = true;

			len = droce_build_frame(&tmpl, frame, sizeof(frame), &f, payload, plen);
			cr_assert_gt(len, 0, "droce_build_frame refused %s/%s", oi->name,
				     flavour_name[fl]);
			test_pcap_write(pc, frame, (uint32_t)len);
			e.frame = ++k;
			write_expectations(&e, &path, (enum flavour)fl, &f, ip_id, payload, plen);
			per_flavour[fl]++;
		}
	}
	fclose(pc);
	fclose(e.f);

	/* Sanity on the set itself: RC 23 + UC 12 + UD 2 + CNP = 38 opcodes per
	 * flavour, and every pad count. */
	cr_assert_eq(per_flavour[FL_V4], per_flavour[FL_V6]);
	cr_assert_eq(per_flavour[FL_V4], per_flavour[FL_V4_VLAN]);
	cr_assert_geq(per_flavour[FL_V4], 38, "only %u valid opcodes", per_flavour[FL_V4]);
	for (int p = 0; p < 4; p++)
		cr_assert(pad_seen[p], "no frame with pad count %d", p);

	rc = run_checker(pcap_path, exp_path, rep_path);
	slurp(rep_path, report, sizeof(report));
	if (rc == EXIT_TOOL_MISSING)
		cr_skip_test("%s", report);
	cr_assert_eq(rc, 0, "%s exited %d; frames, expectations and report kept in %s:\n%s",
		     CHECK_SCRIPT, rc, dir, report);
	cr_log_info("%s", report);
	unlink(pcap_path);
	unlink(exp_path);
	unlink(rep_path);
	rmdir(dir);
}
