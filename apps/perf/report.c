/* SPDX-License-Identifier: BSD-3-Clause
 * droce-perf: Results: perftest's banner, address lines, header and result rows, and
 * the progress line of long runs.
 */
#include "perf.h"

/* ---- results ---- */



double
bw_unit(double bytes_per_sec)
{
	return o.report_gbits ? bytes_per_sec * 8 / 1e9 : bytes_per_sec / 1048576.0;
}

void
print_line(void)
{
	if (!o.json)
		printf("---------------------------------------------------------------------------------------\n");
}

void
print_banner(void)
{
	if (o.json)
		return;
	print_line();
	if (o.verb == V_ATOMIC)
		printf("                    Atomic %s %s Test\n",
		       o.cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD",
		       o.mode == M_BW ? "BW" : "Latency");
	else
		printf("                    %s %s Test\n", verb_title[o.verb],
		       o.mode == M_BW ? "BW" : "Latency");
	if (R.two)
		printf(" Dual-port       : OFF\t\tDevice         : %s (%s, two processes)\n",
		       ibv_get_device_name(R.s[R.me].dev), R.s[R.me].role);
	else
		printf(" Dual-port       : OFF\t\tDevice         : %s -> %s (loopback, one process)\n",
		       ibv_get_device_name(R.s[0].dev), ibv_get_device_name(R.s[1].dev));
	printf(" Number of qps   : %u\t\tTransport type : IB\n", o.qps);
	printf(" Connection type : %s\t\tUsing SRQ      : OFF\n", o.conn);
	if (o.mode == M_BW) {
		printf(" PCIe relax order: OFF\n");
		printf(" TX depth        : %u\n", o.tx_depth);
		if (o.verb == V_SEND)
			printf(" RX depth        : %u\n", o.rx_depth);
		printf(" CQ Moderation   : %u\n", o.post_list > 1 ? o.post_list : o.cq_mod);
		if (o.post_list > 1)
			printf(" Post List       : %u\n", o.post_list);
	}
	printf(" Mtu             : %u[B]\n", mtu_bytes(R.mtu));
	printf(" Link type       : Ethernet\n");
	printf(" GID index       : %d\n", o.gid_index);
	if (o.verb == V_WRITE || o.verb == V_SEND)
		printf(" Max inline data : %d[B]\n", o.inline_size);
	if (o.verb == V_READ || o.verb == V_ATOMIC)
		printf(" Outstand reads  : %u\n", o.out_reads);
	printf(" rdma_cm QPs\t : %s\n", o.rdma_cm ? "ON" : "OFF");
	printf(" Data ex. method : %s\n", !R.two ? "in process (loopback)" : o.rdma_cm ?
	       "rdma_cm (perftest's -R exchange)" : "Ethernet (perftest's TCP exchange)");
	printf(" Data check      : %s\n", o.check ? "ON (every byte)" : "OFF");
	print_line();
}

void
print_gid(const union ibv_gid *g)
{
	printf(" GID: ");
	for (int i = 0; i < 16; i++)
		printf("%02d%s", g->raw[i], i < 15 ? ":" : "\n");
}

void
print_addresses(void)
{
	if (o.json)
		return;
	if (R.two) {
		for (uint32_t i = 0; i < o.qps; i++) {
			const struct pair *p = &R.p[i];
			const struct pt_dest *r = &p->rem;
			union ibv_gid g;

			printf(" local address: LID 0000 QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIxPTR "\n",
			       p->qp[R.me]->qp_num, p->psn[R.me], R.s[R.me].mr->rkey,
			       (uintptr_t)rx_slot(p, R.me, 0));
			print_gid(&R.s[R.me].gid);
			printf(" remote address: LID %04x QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIx64 "\n",
			       r->lid, r->qpn, r->psn, r->rkey, r->vaddr);
			memcpy(g.raw, r->gid, 16);
			print_gid(&g);
		}
		print_line();
		return;
	}
	for (int k = 0; k < 2; k++) {
		for (uint32_t i = 0; i < o.qps; i++) {
			const struct pair *p = &R.p[i];

			printf(" %s address: LID 0000 QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIxPTR "\n",
			       k == 0 ? "local" : "remote", p->qp[k]->qp_num, p->psn[k],
			       R.s[k].mr->rkey, (uintptr_t)p->base[k]);
			print_gid(&R.s[k].gid);
		}
	}
	print_line();
}

void
print_header(void)
{
	if (o.json)
		return;
	if (o.mode == M_BW)
		printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n",
		       o.report_gbits ? "Gb/sec" : "MB/sec", o.report_gbits ? "Gb/sec" : "MB/sec");
	else
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
	fflush(stdout);
}

void
print_result(const struct result *r)
{
	if (o.json)
		return;
	if (o.mode == M_BW) {
		printf(" %-10" PRIu64 " %-10" PRIu64 "       %-10.2f         %-10.2f         %-10.6f\n",
		       r->bytes, r->iters, bw_unit(r->bw_peak), bw_unit(r->bw_avg),
		       r->msg_rate / 1e6);
		if (o.stats && r->gap_max > 0)
			printf(" completion gap: p99 %.1f usec, max %.1f usec\n", r->gap_p99,
			       r->gap_max);
	} else
		printf(" %-7" PRIu64 " %-10" PRIu64 "     %-10.2f     %-10.2f   %-10.2f       "
		       "%-10.2f       %-10.2f      %-10.2f              %-10.2f\n",
		       r->bytes, r->iters, r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev,
		       r->p99, r->p999);
	fflush(stdout);
}

void
add_result(const struct result *r)
{
	struct result *n = realloc(results, (n_results + 1) * sizeof(*results));

	if (n == NULL)
		fail("out of memory");
	results = n;
	results[n_results++] = *r;
	print_result(r);
}

void
progress(struct watch *w, uint64_t now, uint64_t size, uint64_t done, uint64_t want,
	 const char *unit)
{
	double t = secs(now - w->start);

	if (t < PROGRESS_AFTER || now - w->last_print < tsc_hz)
		return;
	w->last_print = now;
	if (want != UINT64_MAX)
		fprintf(stderr, "droce-perf: %s %" PRIu64 " B: %" PRIu64 " of %" PRIu64 " %s, %.1f s",
			o.test, size, done, want, unit, t);
	else
		fprintf(stderr, "droce-perf: %s %" PRIu64 " B: %" PRIu64 " %s, %.1f of %.1f s",
			o.test, size, done, unit, t, o.duration);
	if (o.mode == M_BW)
		fprintf(stderr, ", %.2f %s", bw_unit((double)done * (double)size / t),
			o.report_gbits ? "Gb/sec" : "MB/sec");
	fprintf(stderr, "\n");
}
