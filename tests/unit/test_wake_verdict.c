/* SPDX-License-Identifier: BSD-3-Clause
 * The memif wake line's verdict on a burst (pmd_glue/wake.c): a fallback
 * thread asleep for frames that ask (DROCE_WAKE_ASKED) is woken by any frame
 * but a RoCE answer (ACK, READ response, atomic ACK, CNP), over IPv4 and
 * IPv6, VLAN tagged or not.  Checked on the scapy-made frames of
 * tests/data/vectors, each frame's opcode read by the parser.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dataplane/engine_internal.h"
#include "dataplane/wire.h"
#include "pcap.h"
#include "pmd_glue/wake.h"

static const char *captures[] = {
	"rc_send_only_v4.pcap", "rc_write_v4.pcap",         "rc_read_v4.pcap",
	"rc_send_imm_v4.pcap",  "rc_atomic_v4.pcap",        "ud_send_v4.pcap",
	"rc_send_only_v6.pcap", "rc_send_zero_len_v4.pcap", "rc_retransmit_v4.pcap",
	"rc_write_imm_vlan_v4.pcap", "opcode_zoo_v4.pcap",  "cnp_v4.pcap",
};

/* An mbuf over a frame in plain memory: all the verdict reads. */
static void
frame_mbuf(struct rte_mbuf *m, uint8_t *data, uint32_t len)
{
	memset(m, 0, sizeof(*m));
	m->buf_addr = data;
	m->data_off = 0;
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	m->nb_segs = 1;
}

static enum droce_wake_verdict
verdict_of(uint8_t *data, uint32_t len)
{
	struct rte_mbuf m, *pkts[1] = { &m };

	frame_mbuf(&m, data, len);
	return droce_wake_look_slow(pkts, 1);
}

/* Every frame of the vectors, one at a time: the answers (by the opcode
 * table's flags) leave an ASKED sleeper asleep, the rest wake it; and a
 * burst wakes it as soon as one frame of it asks. */
Test(wake_verdict, answers_alone_do_not_wake_a_sleeper_asleep_for_questions)
{
	unsigned int answers = 0, asks = 0, vlan = 0, v6 = 0;

	droce_engines_wake_answers_set();
	for (size_t c = 0; c < sizeof(captures) / sizeof(captures[0]); c++) {
		struct test_capture cap;
		char rel[256];

		snprintf(rel, sizeof(rel), "vectors/%s", captures[c]);
		cr_assert_eq(test_pcap_load(test_data_path(rel), &cap), 0, "cannot load %s", rel);
		for (size_t i = 0; i < cap.count; i++) {
			struct droce_pkt p;
			uint8_t op;
			bool answer;

			cr_assert_eq(droce_parse_frame(cap.frames[i].data, cap.frames[i].len, &p),
				     DROCE_DROP_NONE, "%s frame %zu", captures[c], i + 1);
			op = droce_bth_opcode(droce_pkt_bth(&p, cap.frames[i].data));
			answer = (droce_opcode_info(op)->flags & (DROCE_OPF_RESP | DROCE_OPF_CNP)) != 0;
			cr_assert_eq(verdict_of(cap.frames[i].data, cap.frames[i].len),
				     answer ? DROCE_WAKE_ANSWERS : DROCE_WAKE_ASKS,
				     "%s frame %zu (%s)", captures[c], i + 1, droce_opcode_info(op)->name);
			answers += answer;
			asks += !answer;
			vlan += p.vlan;
			v6 += p.ipv6;
		}
		test_pcap_free(&cap);
	}
	/* the vectors hold both kinds, tagged and IPv6 frames among them */
	cr_assert_geq(answers, 8, "answers seen: %u", answers);
	cr_assert_geq(asks, 30, "questions seen: %u", asks);
	cr_assert_gt(vlan, 0);
	cr_assert_gt(v6, 0);
}

Test(wake_verdict, a_burst_asks_when_one_frame_does)
{
	struct test_capture zoo;
	struct rte_mbuf m[3], *pkts[3] = { &m[0], &m[1], &m[2] };

	droce_engines_wake_answers_set();
	cr_assert_eq(test_pcap_load(test_data_path("vectors/opcode_zoo_v4.pcap"), &zoo), 0);
	cr_assert_geq(zoo.count, 20);
	/* frames 15, 16, 17 of the zoo: ACK, atomic ACK, READ response first */
	for (int i = 0; i < 3; i++)
		frame_mbuf(&m[i], zoo.frames[14 + i].data, zoo.frames[14 + i].len);
	cr_assert_eq(droce_wake_look_slow(pkts, 3), DROCE_WAKE_ANSWERS);
	/* the last one a SEND (frame 13): the burst asks */
	frame_mbuf(&m[2], zoo.frames[12].data, zoo.frames[12].len);
	cr_assert_eq(droce_wake_look_slow(pkts, 3), DROCE_WAKE_ASKS);
	test_pcap_free(&zoo);
}

/* What is not RoCE, or is too short to tell, asks (an ARP request wants
 * its reply; a frame cut inside its headers is not known to be an answer). */
Test(wake_verdict, anything_else_asks)
{
	struct test_capture zoo;
	uint8_t arp[60] = { 0 };
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)arp;

	droce_engines_wake_answers_set();
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	cr_assert_eq(verdict_of(arp, sizeof(arp)), DROCE_WAKE_ASKS);
	cr_assert_eq(test_pcap_load(test_data_path("vectors/opcode_zoo_v4.pcap"), &zoo), 0);
	/* the ACK (frame 15) cut short of its BTH, then of its IP header */
	cr_assert_eq(verdict_of(zoo.frames[14].data, zoo.frames[14].len), DROCE_WAKE_ANSWERS);
	for (uint32_t len = 0; len < RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) + 1; len++)
		cr_assert_eq(verdict_of(zoo.frames[14].data, len), DROCE_WAKE_ASKS, "cut at %u", len);
	test_pcap_free(&zoo);
}
