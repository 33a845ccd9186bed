/* SPDX-License-Identifier: BSD-3-Clause
 * droce-loop: loopback smoke run.
 *
 * Starts droce (default: the embedded two-port ring config), resolves each
 * port's peer with ARP, sends N RC SEND_ONLY frames port0 -> port1 and
 * port1 -> port0 with consecutive PSNs and a checkable payload, receives and
 * parses every frame, and checks opcode, QPN, PSN order and payload bytes.
 * Exits 0 only if every frame arrived intact.
 *
 * With an impaired link (impair_* config keys or --impair), loss, duplicates,
 * reordering and frames the parser rejects are expected and only reported
 * (with the impairment counters); the run fails only if a frame the parser
 * accepted carries wrong bytes, or the run times out.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "dataplane/wire.h"
#include "pmd_glue/port.h"

#define BURST 32
#define WINDOW 256          /* frames in flight per direction */
#define PSN_START 0xfffff0u /* wraps the 24-bit PSN early */

enum check_fail {
	FAIL_OPCODE,
	FAIL_QPN,
	FAIL_PSN,
	FAIL_LENGTH,
	FAIL_PAYLOAD,
	FAIL_NOT_ROCE,
	FAIL_COUNT
};

static const char *const fail_name[FAIL_COUNT] = {
	"opcode", "qpn", "psn", "length", "payload", "not_roce",
};

struct direction {
	const char *name;
	struct droce_port *tx, *rx;
	struct droce_hdr_tmpl tmpl;
	uint32_t dqpn;
	uint8_t seed;
	uint64_t sent, sent_bytes, received, received_bytes, ok;
	uint64_t next_rx; /* sequence number expected next */
	uint8_t *seen;    /* impaired: bit per sequence number received intact */
	uint64_t unique, dups, late;
	uint64_t drops[DROCE_DROP_COUNT];
	uint64_t fails[FAIL_COUNT];
};

static uint8_t
pattern(uint8_t seed, uint64_t seq, uint32_t j)
{
	return (uint8_t)(seed + seq * 31 + j * 7 + (j >> 8));
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: droce-loop [-c CONFIG] [-n COUNT] [-s SIZE] [-t SECONDS] [--capture PORT=PATH]... [--impair SPEC]...\n"
		"  -c, --config FILE    INI config (default: $DROCE_CONFIG, else embedded loopback)\n"
		"  -n, --count N        frames each way (default 10000)\n"
		"  -s, --size BYTES     payload bytes per frame (default 1024)\n"
		"  -t, --time SECONDS   give up after this long (default 10)\n"
		"      --capture P=F    write port P's frames to pcapng file F (e.g. port0=/tmp/p0.pcapng)\n"
		"      --impair SPEC    impair every port's link (or one: port1:SPEC); SPEC is\n"
		"                       drop=P,dup=P,reorder=P,delay=P,delay_us=N,corrupt=P,seed=N,dir=tx|rx|both\n"
		"                       (P a probability 0..1); loss is then reported, not a failure\n"
		"  -q, --quiet          print only errors and the verdict\n"
		"  -h, --help           this text\n");
}

static int
parse_num(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "droce-loop: %s %s: expected a number in %" PRIu64 "..%" PRIu64 "\n",
			opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* Resolves @to's first IPv4 address from @from with ARP; falls back to its MAC. */
static void
resolve(struct droce_port *from, struct droce_port *to, struct rte_ether_addr *mac, bool quiet)
{
	const uint8_t *gid = droce_port_gid(to, 0);
	struct rte_mbuf *pkts[BURST];
	rte_be32_t ip;
	uint64_t deadline = rte_get_tsc_cycles() + rte_get_tsc_hz() / 2;
	uint16_t n, i;

	*mac = *droce_port_mac(to);
	if (gid == NULL || !droce_gid_is_v4mapped(gid))
		return;
	memcpy(&ip, gid + 12, 4);
	if (droce_port_arp_request(from, 0, ip) < 0) {
		fprintf(stderr, "droce-loop: %s: ARP request failed: %s\n", droce_port_cfg(from)->name,
			strerror(errno));
		return;
	}
	while (rte_get_tsc_cycles() < deadline) {
		n = droce_port_rx_burst(to, 0, pkts, BURST);
		for (i = 0; i < n; i++)
			if (!droce_port_handle_frame(to, 0, pkts[i]))
				rte_pktmbuf_free(pkts[i]);
		n = droce_port_rx_burst(from, 0, pkts, BURST);
		for (i = 0; i < n; i++)
			if (!droce_port_handle_frame(from, 0, pkts[i]))
				rte_pktmbuf_free(pkts[i]);
		if (droce_port_arp_lookup(from, ip, mac) == 0) {
			char s[RTE_ETHER_ADDR_FMT_SIZE];

			rte_ether_format_addr(s, sizeof(s), mac);
			if (!quiet)
				printf("arp: %s resolved %u.%u.%u.%u (%s) to %s\n", droce_port_cfg(from)->name,
				       gid[12], gid[13], gid[14], gid[15], droce_port_cfg(to)->name, s);
			return;
		}
	}
	fprintf(stderr, "droce-loop: %s: no ARP reply from %s; using its configured MAC\n",
		droce_port_cfg(from)->name, droce_port_cfg(to)->name);
}

static void
setup_direction(struct direction *d, const char *name, struct droce_port *tx,
		struct droce_port *rx, uint32_t dqpn, uint8_t seed, const struct rte_ether_addr *dmac)
{
	struct droce_path path;

	memset(d, 0, sizeof(*d));
	d->name = name;
	d->tx = tx;
	d->rx = rx;
	d->dqpn = dqpn;
	d->seed = seed;
	memset(&path, 0, sizeof(path));
	path.src_mac = *droce_port_mac(tx);
	path.dst_mac = *dmac;
	memcpy(path.src_gid, droce_port_gid(tx, 0), 16);
	memcpy(path.dst_gid, droce_port_gid(rx, 0), 16);
	path.ipv6 = !droce_gid_is_v4mapped(path.src_gid) || !droce_gid_is_v4mapped(path.dst_gid);
	if (droce_port_vlan(tx) != 0) {
		path.vlan = true;
		path.vlan_id = droce_port_vlan(tx);
	}
	path.udp_sport = (uint16_t)(0xc000 | dqpn);
	path.ip_id = 1;
	droce_tmpl_init(&d->tmpl, &path);
}

/* Builds and sends up to one burst; returns -1 on a build failure. */
static int
send_some(struct direction *d, struct rte_mempool *mp, uint64_t count, uint32_t size,
	  uint8_t *payload)
{
	struct rte_mbuf *pkts[BURST];
	uint64_t inflight = d->sent - d->next_rx;
	uint16_t n, i, sent;

	if (d->sent >= count || inflight >= WINDOW)
		return 0;
	n = (uint16_t)RTE_MIN((uint64_t)BURST, RTE_MIN(count - d->sent, WINDOW - inflight));
	if (rte_pktmbuf_alloc_bulk(mp, pkts, n) != 0)
		return 0; /* pool busy: try again later */
	for (i = 0; i < n; i++) {
		struct droce_pkt_fields f;
		uint64_t seq = d->sent + i;
		size_t len;
		uint32_t j;

		for (j = 0; j < size; j++)
			payload[j] = pattern(d->seed, seq, j);
		memset(&f, 0, sizeof(f));
		f.opcode = DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY);
		f.pkey = 0xffff;
		f.dqpn = d->dqpn;
		f.psn = droce_psn_add(PSN_START, (uint32_t)seq);
		f.ackreq = (seq % 16) == 15;
		len = droce_build_frame(&d->tmpl, rte_pktmbuf_mtod(pkts[i], uint8_t *),
					rte_pktmbuf_tailroom(pkts[i]), &f, payload, size);
		if (len == 0 || rte_pktmbuf_append(pkts[i], (uint16_t)len) == NULL) {
			fprintf(stderr, "droce-loop: %s: frame of %u payload bytes does not fit an mbuf\n",
				d->name, size);
			rte_pktmbuf_free_bulk(pkts, n);
			return -1;
		}
	}
	sent = droce_port_tx_burst(d->tx, 0, pkts, n);
	for (i = 0; i < sent; i++)
		d->sent_bytes += rte_pktmbuf_pkt_len(pkts[i]);
	if (sent < n)
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	d->sent += sent;
	return 0;
}

static bool impaired; /* some port's link is impaired */

static bool
payload_ok(struct direction *d, const struct droce_pkt *pkt, const uint8_t *frame, uint64_t seq,
	   uint32_t size)
{
	const uint8_t *pl = frame + pkt->payload_off;
	uint32_t j;

	if (pkt->payload_len != size) {
		d->fails[FAIL_LENGTH]++;
		return false;
	}
	for (j = 0; j < size; j++) {
		if (pl[j] != pattern(d->seed, seq, j)) {
			d->fails[FAIL_PAYLOAD]++;
			return false;
		}
	}
	return true;
}

/*
 * Impaired link: the PSN says which frame this is; duplicates and late frames
 * are counted, not failures, but every accepted frame's bytes must be right.
 */
static void
check_frame_impaired(struct direction *d, const struct droce_pkt *pkt, const uint8_t *frame,
		     const struct droce_pkt_fields *f, uint32_t size)
{
	int32_t delta = droce_psn_diff(f->psn, droce_psn_add(PSN_START, (uint32_t)d->next_rx));
	int64_t seq = (int64_t)d->next_rx + delta;
	uint8_t bit;

	if (seq < 0 || (uint64_t)seq >= d->sent) {
		d->fails[FAIL_PSN]++; /* a PSN never sent */
		return;
	}
	if (!payload_ok(d, pkt, frame, (uint64_t)seq, size))
		return;
	d->ok++;
	if (delta >= 0)
		d->next_rx = (uint64_t)seq + 1;
	else
		d->late++;
	bit = (uint8_t)(1u << (seq & 7));
	if (d->seen[seq >> 3] & bit) {
		d->dups++;
	} else {
		d->seen[seq >> 3] |= bit;
		d->unique++;
	}
}

static void
check_frame(struct direction *d, struct rte_mbuf *m, uint32_t size)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	struct droce_pkt pkt;
	struct droce_pkt_fields f;
	enum droce_drop why;
	uint64_t seq;

	why = droce_parse_frame(frame, rte_pktmbuf_data_len(m), &pkt);
	if (why != DROCE_DROP_NONE) {
		d->drops[why]++;
		return;
	}
	droce_pkt_read_fields(&pkt, frame, &f);
	if (f.opcode != DROCE_OPC(DROCE_TRANSPORT_RC, DROCE_OP_SEND_ONLY)) {
		d->fails[FAIL_OPCODE]++;
		return;
	}
	if (f.dqpn != d->dqpn) {
		d->fails[FAIL_QPN]++;
		return;
	}
	if (impaired) {
		check_frame_impaired(d, &pkt, frame, &f, size);
		return;
	}
	seq = d->next_rx;
	if (f.psn != droce_psn_add(PSN_START, (uint32_t)seq)) {
		d->fails[FAIL_PSN]++;
		/* resynchronise on the PSN we got */
		seq += (uint64_t)(int64_t)droce_psn_diff(f.psn, droce_psn_add(PSN_START, (uint32_t)seq));
		d->next_rx = seq + 1;
		return;
	}
	d->next_rx = seq + 1;
	if (payload_ok(d, &pkt, frame, seq, size))
		d->ok++;
}

/* All sent, or the window is full. */
static bool
cannot_send(const struct direction *d, uint64_t count)
{
	return d->sent >= count || d->sent - d->next_rx >= WINDOW;
}

/* Every frame of this direction is in (impaired: each sequence number seen). */
static bool
all_in(const struct direction *d, uint64_t count)
{
	return impaired ? d->unique >= count : d->next_rx >= count;
}

static void
receive_some(struct direction *d, uint32_t size)
{
	struct rte_mbuf *pkts[BURST];
	uint16_t n, i;

	n = droce_port_rx_burst(d->rx, 0, pkts, BURST);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		if (droce_port_handle_frame(d->rx, 0, m))
			continue; /* ARP and the like */
		d->received++;
		d->received_bytes += rte_pktmbuf_pkt_len(m);
		if (m->nb_segs != 1)
			d->fails[FAIL_LENGTH]++;
		else
			check_frame(d, m, size);
		rte_pktmbuf_free(m);
	}
}

static uint64_t
report(const struct direction *d, bool quiet)
{
	uint64_t bad = 0;
	unsigned int i;

	for (i = 0; i < FAIL_COUNT; i++)
		bad += d->fails[i];
	if (!impaired) {
		for (i = 1; i < DROCE_DROP_COUNT; i++)
			bad += d->drops[i];
		bad += d->sent - RTE_MIN(d->sent, d->received);
	}
	if (impaired && (!quiet || bad != 0)) {
		/* Loss, duplicates and rejected frames are what the impairment does. */
		printf("%s: sent %" PRIu64 " frames (%" PRIu64 " bytes), received %" PRIu64
		       " (%" PRIu64 " bytes), intact %" PRIu64 " (distinct %" PRIu64
		       ", duplicates %" PRIu64 ", out of order %" PRIu64 "), lost %" PRIu64 "\n",
		       d->name, d->sent, d->sent_bytes, d->received, d->received_bytes, d->ok,
		       d->unique, d->dups, d->late, d->sent - RTE_MIN(d->sent, d->unique));
		for (i = 1; i < DROCE_DROP_COUNT; i++)
			if (d->drops[i] != 0)
				printf("%s:   rejected %" PRIu64 " x %s (%s)\n", d->name, d->drops[i],
				       droce_drop_name[i], droce_drop_desc[i]);
		for (i = 0; i < FAIL_COUNT; i++)
			if (d->fails[i] != 0)
				printf("%s:   bad %s: %" PRIu64 " (accepted by the parser with wrong content)\n",
				       d->name, fail_name[i], d->fails[i]);
	} else if (!quiet || bad != 0) {
		printf("%s: sent %" PRIu64 " frames (%" PRIu64 " bytes), received %" PRIu64
		       " (%" PRIu64 " bytes), intact %" PRIu64 ", lost %" PRIu64 "\n",
		       d->name, d->sent, d->sent_bytes, d->received, d->received_bytes, d->ok,
		       d->sent - RTE_MIN(d->sent, d->received));
		for (i = 1; i < DROCE_DROP_COUNT; i++)
			if (d->drops[i] != 0)
				printf("%s:   dropped %" PRIu64 " x %s (%s)\n", d->name, d->drops[i],
				       droce_drop_name[i], droce_drop_desc[i]);
		for (i = 0; i < FAIL_COUNT; i++)
			if (d->fails[i] != 0)
				printf("%s:   bad %s: %" PRIu64 "\n", d->name, fail_name[i], d->fails[i]);
	}
	return bad;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' },
		{ "capture", required_argument, NULL, 'C' },
		{ "impair", required_argument, NULL, 'I' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *captures[DROCE_MAX_PORTS * 2], *impairs[DROCE_MAX_PORTS * 2];
	unsigned int n_captures = 0, n_impairs = 0, i;
	uint32_t max_delay_us = 0;
	uint64_t count = 10000, size = 1024, seconds = 10, bad;
	struct droce_config *cfg;
	struct direction dirs[2];
	struct rte_ether_addr mac01, mac10;
	struct droce_port *p0, *p1;
	uint8_t *payload;
	uint64_t t0, deadline, cycles;
	bool quiet = false, timed_out = false;
	double secs;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:n:s:t:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config_path = optarg;
			break;
		case 'n':
			if (parse_num("-n", optarg, 1, UINT32_MAX, &count) < 0)
				return 2;
			break;
		case 's':
			if (parse_num("-s", optarg, 0, DROCE_MTU_MAX, &size) < 0)
				return 2;
			break;
		case 't':
			if (parse_num("-t", optarg, 1, 3600, &seconds) < 0)
				return 2;
			break;
		case 'C':
			if (n_captures == RTE_DIM(captures)) {
				fprintf(stderr, "droce-loop: too many --capture options\n");
				return 2;
			}
			captures[n_captures++] = optarg;
			break;
		case 'I':
			if (n_impairs == RTE_DIM(impairs)) {
				fprintf(stderr, "droce-loop: too many --impair options\n");
				return 2;
			}
			impairs[n_impairs++] = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "droce-loop: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (config_path == NULL && getenv("DROCE_CONFIG") != NULL && getenv("DROCE_CONFIG")[0])
		config_path = getenv("DROCE_CONFIG");

	cfg = malloc(sizeof(*cfg));
	payload = malloc(DROCE_MTU_MAX);
	if (cfg == NULL || payload == NULL) {
		fprintf(stderr, "droce-loop: out of memory\n");
		return 1;
	}
	rc = config_path != NULL ? droce_config_load(config_path, cfg) : droce_config_load_default(cfg);
	for (i = 0; rc == 0 && i < n_captures; i++)
		rc = droce_config_set_capture(cfg, captures[i]);
	for (i = 0; rc == 0 && i < n_impairs; i++)
		rc = droce_config_set_impair(cfg, impairs[i]);
	for (i = 0; rc == 0 && i < cfg->n_ports; i++) {
		if (droce_impair_config_active(&cfg->ports[i].impair))
			impaired = true;
		if (cfg->ports[i].impair.delay > 0)
			max_delay_us = RTE_MAX(max_delay_us, cfg->ports[i].impair.delay_us);
	}
	if (rc == 0 && cfg->n_ports < 2)
		rc = -1, fprintf(stderr, "droce-loop: %s: needs two ports (port0 and port1), has %u\n",
				 cfg->source, cfg->n_ports);
	if (rc == 0)
		rc = droce_start_config(cfg);
	if (rc != 0) {
		fprintf(stderr, "droce-loop: start-up failed; nothing sent\n");
		droce_shutdown();
		free(cfg);
		free(payload);
		return 1;
	}
	p0 = droce_port_get(0);
	p1 = droce_port_get(1);
	if (!quiet)
		printf("droce-loop: config %s: %s <-> %s, %" PRIu64 " frames of %" PRIu64
		       " payload bytes each way\n",
		       droce_get_config()->source, droce_port_name(p0), droce_port_name(p1), count, size);
	if (!droce_port_link_up(p0) || !droce_port_link_up(p1))
		fprintf(stderr, "droce-loop: warning: link down (%s %s, %s %s)\n", droce_port_cfg(p0)->name,
			droce_port_link_cached(p0) ? "up" : "down", droce_port_cfg(p1)->name, droce_port_link_cached(p1) ? "up" : "down");

	resolve(p0, p1, &mac01, quiet);
	resolve(p1, p0, &mac10, quiet);
	setup_direction(&dirs[0], "port0->port1", p0, p1, 0x000011, 0x5a, &mac01);
	setup_direction(&dirs[1], "port1->port0", p1, p0, 0x000012, 0xa5, &mac10);
	for (i = 0; i < 2; i++) {
		dirs[i].seen = calloc(count / 8 + 1, 1);
		if (dirs[i].seen == NULL) {
			fprintf(stderr, "droce-loop: out of memory\n");
			return 1;
		}
	}

	t0 = rte_get_tsc_cycles();
	deadline = t0 + seconds * rte_get_tsc_hz();
	while (!all_in(&dirs[0], count) || !all_in(&dirs[1], count)) {
		bool stalled = true;

		for (i = 0; i < 2; i++) {
			uint64_t before = dirs[i].received;

			if (send_some(&dirs[i], droce_pktmbuf_pool(), count, (uint32_t)size,
				      payload) < 0)
				goto done;
			receive_some(&dirs[i], (uint32_t)size);
			if (dirs[i].received != before)
				stalled = false;
		}
		if (rte_get_tsc_cycles() > deadline) {
			timed_out = true;
			break;
		}
		/*
		 * Everything sent (or, on an impaired link, the window full) and
		 * nothing more arriving: frames were lost.
		 */
		if (stalled && (impaired || (dirs[0].sent == count && dirs[1].sent == count)) &&
		    cannot_send(&dirs[0], count) && cannot_send(&dirs[1], count)) {
			uint64_t idle_until = rte_get_tsc_cycles() + rte_get_tsc_hz() / 10 +
					      rte_get_tsc_hz() / 1000000 * max_delay_us;
			bool more = false;

			while (!more && rte_get_tsc_cycles() < idle_until) {
				for (i = 0; i < 2; i++) {
					uint64_t before = dirs[i].received;

					receive_some(&dirs[i], (uint32_t)size);
					more |= dirs[i].received != before;
				}
			}
			if (!more && dirs[0].sent == count && dirs[1].sent == count)
				break;
			/* Impaired: give the frames in flight up for lost, open the window. */
			for (i = 0; !more && i < 2; i++)
				dirs[i].next_rx = dirs[i].sent;
		}
	}
done:
	cycles = rte_get_tsc_cycles() - t0;
	secs = (double)cycles / (double)rte_get_tsc_hz();

	bad = report(&dirs[0], quiet) + report(&dirs[1], quiet);
	if (dirs[0].sent < count || dirs[1].sent < count)
		bad += 1;
	if (!quiet) {
		printf("time %.3f s, %.3f Mpps, %.3f Gbit/s (frames received, both directions)\n",
		       secs, (double)(dirs[0].received + dirs[1].received) / secs / 1e6,
		       (double)(dirs[0].received_bytes + dirs[1].received_bytes) * 8 / secs / 1e9);
		droce_port_stats_print(p0, stdout);
		droce_port_stats_print(p1, stdout);
	} else if (impaired) {
		struct droce_port_stats st;

		for (i = 0; i < 2; i++) {
			struct droce_port *p = droce_port_get(i);
			const struct droce_impair_stats *is[2] = { &st.impair_tx, &st.impair_rx };
			unsigned int k;

			droce_port_stats_get(p, &st);
			for (k = 0; k < 2; k++)
				printf("%s: impair %s: dropped %" PRIu64 " duplicated %" PRIu64
				       " reordered %" PRIu64 " delayed %" PRIu64 " corrupted %" PRIu64
				       " link-down %" PRIu64 "\n",
				       droce_port_cfg(p)->name, k == 0 ? "tx" : "rx", is[k]->dropped,
				       is[k]->duplicated, is[k]->reordered, is[k]->delayed,
				       is[k]->corrupted, is[k]->link_down);
		}
	}
	if (timed_out)
		fprintf(stderr, "droce-loop: gave up after %" PRIu64 " s\n", seconds);
	printf("droce-loop: %s\n", bad == 0 && !timed_out ? "PASS" : "FAIL");
	droce_stop();
	droce_shutdown();
	free(cfg);
	free(payload);
	free(dirs[0].seen);
	free(dirs[1].seen);
	return bad == 0 && !timed_out ? 0 : 1;
}
