/* SPDX-License-Identifier: BSD-3-Clause
 * RAW_PACKET QPs against the Linux kernel: a veth pair between two network
 * namespaces this test makes (rawD-PID: droce on af_packet, 198.18.3.1;
 * rawK-PID: the kernel, 198.18.3.2), removed afterwards.  Needs root;
 * skipped otherwise.
 *
 *  - tcp_stream_by_tso: the RAW QP plays a TCP connection to a plain kernel
 *    socket (SYN out, SYN-ACK in through a flow rule, ACK out, the data by
 *    TSO within the kernel's window, FIN), and the kernel must read every
 *    byte in order;
 *  - udp_checksums: datagrams whose checksums droce filled
 *    (IBV_SEND_IP_CSUM) reach a kernel UDP socket; one sent without the
 *    flag, with junk checksums, must not (the kernel drops bad checksums);
 *    tshark and scapy check the capture too;
 *  - tap_checksum_offload, tap_tso_offload: both again through a tap port,
 *    whose PMD offers checksum and TSO offloads (droce then hands the work to
 *    it with rte_mbuf offload flags).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <droce/config.h>
#include <droce/droce.h>

#include "env.h"
#include "pmd_glue/port.h"
#include "raw_common.h"

#define KPORT_TCP 18600
#define KPORT_UDP 18601
#define MY_PORT 40000
#define TCP_TOTAL 300000u
#define MSS 1448

static const uint8_t DMAC[6] = { 0x02, 0x00, 0xc6, 0x12, 0x03, 0x01 };
static const uint8_t KMAC[6] = { 0x02, 0x00, 0xc6, 0x12, 0x03, 0x02 };
static char nsD[32], nsK[32], cap_path[96];
static bool made;
/* where the kernel's socket lives and the addresses of both ends */
static struct {
	const char *ns;       /* nsK (veth), or nsD (tap: the kernel's end of the tap) */
	char kif[IFNAMSIZ];   /* the kernel's interface */
	struct raw_addr a;    /* droce -> kernel */
	const char *kip;
	uint16_t mss;
	uint64_t tx_frames;   /* frames droce handed its PMD (read before droce stops) */
} K;

static int
sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void
enter(const char *ns)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s", path);
	cr_assert_eq(setns(fd, CLONE_NEWNET), 0, "setns %s: %s", ns, strerror(errno));
	close(fd);
}

static void
setup(void)
{
	int tag = (int)getpid();

	if (geteuid() != 0)
		cr_skip_test("needs root (network namespaces)");
	snprintf(nsD, sizeof(nsD), "rawD-%d", tag);
	snprintf(nsK, sizeof(nsK), "rawK-%d", tag);
	snprintf(cap_path, sizeof(cap_path), "/tmp/droce-rawns-%d.pcapng", tag);
	cr_assert_eq(sh("ip netns add %s && ip netns add %s", nsD, nsK), 0);
	/* the veth pair's ends; the tap tests change them */
	K.ns = nsK;
	snprintf(K.kif, sizeof(K.kif), "rk%d", tag % 10000000);
	memcpy(K.a.smac, DMAC, 6);
	memcpy(K.a.dmac, KMAC, 6);
	K.a.sip = inet_addr("198.18.3.1");
	K.a.dip = inet_addr("198.18.3.2");
	K.kip = "198.18.3.2";
	K.mss = MSS;
	made = true;
	cr_assert_eq(sh("ip link add rd%d address 02:00:c6:12:03:01 type veth peer name rk%d "
			"address 02:00:c6:12:03:02 && ip link set rd%d netns %s && "
			"ip link set rk%d netns %s", tag, tag, tag, nsD, tag, nsK), 0);
	cr_assert_eq(sh("ip netns exec %s sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && "
			"ip netns exec %s sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && "
			"ip -n %s link set rd%d up && ip -n %s link set rk%d up && "
			"ip -n %s addr add 198.18.3.2/24 dev rk%d", nsD, nsK, nsD, tag, nsK, tag,
			nsK, tag), 0);

}

static void
teardown(void)
{
	if (made) {
		sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", nsD, nsK);
		unlink(cap_path);
	}
}

TestSuite(raw_netns, .init = setup, .fini = teardown, .timeout = 90);

/* droce on af_packet over the droce end of the veth, in its namespace. */
static struct ibv_context *
start_droce(void)
{
	static char text[1024];
	struct droce_config cfg;

	enter(nsD);
	snprintf(text, sizeof(text),
		 "[eal]\nargs = --no-huge --no-pci -m 256 --file-prefix=droce-rawns-%d "
		 "--log-level=lib.eal:warning\n"
		 "[engines]\nmode = colocated\ncount = 1\n"
		 "[port0]\nkind = af_packet\niface = rd%d\nipv4 = 198.18.3.1\ncapture = %s\n",
		 (int)getpid(), (int)getpid(), cap_path);
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<raw netns>", text, &cfg), 0, "%s", droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "%s", droce_last_error());
	return tc_open("droce0", NULL);
}

/* ethtool -K IFNAME tx off, in the calling thread's namespace: the kernel's
 * frames then carry full checksums (no CHECKSUM_PARTIAL left for a NIC veth
 * does not have), which is what droce verifies on receive. */
static int
tx_csum_off(const char *ifname)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_STXCSUM, .data = 0 };
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM, 0), rc;

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strnlen(ifname, sizeof(ifr.ifr_name) - 1));
	ifr.ifr_data = (void *)&ev;
	rc = s < 0 ? -1 : ioctl(s, SIOCETHTOOL, &ifr);
	if (s >= 0)
		close(s);
	return rc;
}

/* The kernel's side, in a child in rawK: one line of result on @fd. */
static pid_t
kernel_side(bool tcp, int fds[2])
{
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid != 0) {
		char c;

		close(fds[1]);
		cr_assert_eq(read(fds[0], &c, 1), 1, "kernel side not ready");
		return pid;
	}
	close(fds[0]);
	alarm(60);
	{
		char path[96];
		int nfd, s, one = 1;
		struct sockaddr_in a = { .sin_family = AF_INET };
		struct timeval tv = { .tv_sec = 5 };
		static uint8_t buf[TCP_TOTAL + 4096], want[TCP_TOTAL];
		char out[128];
		size_t got = 0;

		snprintf(path, sizeof(path), "/var/run/netns/%s", K.ns);
		nfd = open(path, O_RDONLY);
		if (nfd < 0 || setns(nfd, CLONE_NEWNET) != 0)
			_exit(3);
		if (K.ns == nsK && tx_csum_off(K.kif) != 0)
			_exit(8); /* (a tap's kernel end hands over full checksums anyway) */
		s = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		a.sin_port = htons(tcp ? KPORT_TCP : KPORT_UDP);
		a.sin_addr.s_addr = inet_addr(K.kip);
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || (tcp && listen(s, 1) != 0))
			_exit(4);
		if (write(fds[1], "r", 1) != 1)
			_exit(5);
		if (tcp) {
			int c = accept(s, NULL, NULL);
			ssize_t n;

			if (c < 0)
				_exit(6);
			setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			while ((n = read(c, buf + got, sizeof(buf) - got)) > 0)
				got += (size_t)n;
			tc_fill(want, TCP_TOTAL, 13);
			snprintf(out, sizeof(out), "%zu %d %d\n", got,
				 got == TCP_TOTAL && memcmp(buf, want, TCP_TOTAL) == 0, n == 0);
			close(c);
		} else {
			unsigned int count = 0, good = 0;
			ssize_t n;

			/* the first datagram may take as long as droce's start (the
			 * EAL's, under ASan on a loaded machine: seconds); after it,
			 * 2 s of silence end the stream */
			tv.tv_sec = 30;
			setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			while ((n = recv(s, buf, sizeof(buf), 0)) >= 0) {
				if (count == 0) {
					tv.tv_sec = 2;
					setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
				}
				count++;
				/* the first 4 bytes name the datagram, the rest its pattern */
				if (n >= 4) {
					uint32_t id;

					memcpy(&id, buf, 4);
					tc_fill(want, (size_t)n - 4, id);
					good += memcmp(buf + 4, want, (size_t)n - 4) == 0;
				}
			}
			snprintf(out, sizeof(out), "%u %u\n", count, good);
		}
		if (write(fds[1], out, strlen(out)) < 0)
			_exit(7);
		_exit(0);
	}
}

static void
kernel_result(pid_t pid, int fd, char *out, size_t cap)
{
	ssize_t n = 0, k;
	int st;

	while ((k = read(fd, out + n, cap - 1 - (size_t)n)) > 0)
		n += k;
	out[n > 0 ? n : 0] = 0;
	close(fd);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "kernel side exit %#x", st);
}

static struct raw_addr
addrs(void)
{
	return K.a;
}

/* The capture's checksums by tshark and scapy (skipped when either is missing). */
static void
check_capture(const char *opts)
{
	char cmd[512];
	int rc;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/check_raw.py %s %s >&2",
		 getenv("DECODERS") ? getenv("DECODERS") : "tests/decoders", opts, cap_path);
	rc = system(cmd);
	cr_assert(rc == 0 || (WIFEXITED(rc) && WEXITSTATUS(rc) == 77), "check_raw.py: %d", rc);
}

/* ---- TCP ---- */

struct tcp_state {
	struct raw_qp *r;
	struct raw_addr a;
	uint32_t snd_una, snd_nxt, rcv_nxt; /* our ISN-relative absolute values */
	uint32_t win;
	bool peer_fin, syn_ack;
};

static void
tcp_send(struct tcp_state *t, uint8_t flags, uint32_t seq, uint32_t off, uint32_t len)
{
	uint8_t hdr[64];
	size_t hl = raw_tcp_hdr(hdr, &t->a, MY_PORT, KPORT_TCP, seq, t->rcv_nxt, flags, 65535,
				(flags & 0x02) ? K.mss : 0, 0, 0);
	struct ibv_sge sge = { .addr = (uintptr_t)t->r->sbuf + off, .length = len,
			       .lkey = t->r->smr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = len ? 1 : 0,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM }, *bad;

	if (len == 0) {
		/* a bare segment: one frame, header only */
		memcpy(t->r->sbuf + RAW_SEND - 128, hdr, hl);
		sge.addr = (uintptr_t)t->r->sbuf + RAW_SEND - 128;
		sge.length = (uint32_t)hl;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
	} else {
		wr.opcode = IBV_WR_TSO;
		wr.tso.hdr = hdr;
		wr.tso.hdr_sz = (uint16_t)hl;
		wr.tso.mss = K.mss;
	}
	cr_assert_eq(ibv_post_send(t->r->qp, &wr, &bad), 0, "post TCP segment");
	raw_send_done(t->r, IBV_WC_SUCCESS);
}

/* Takes in what the kernel sent within @ms: ACKs, the SYN-ACK, its FIN. */
static void
tcp_input(struct tcp_state *t, unsigned int ms)
{
	unsigned int slot, fl;
	uint32_t len;

	while (raw_recv(t->r, ms, &slot, &len, &fl)) {
		const uint8_t *b = t->r->rbuf + (size_t)slot * RAW_BUF;
		uint32_t seq, ack;
		uint8_t flags = b[47];

		ms = 0;
		cr_assert_geq(len, 54);
		cr_assert(raw_csums_valid(b, len), "the kernel's checksums");
		cr_assert(fl & IBV_WC_IP_CSUM_OK, "verified checksums reported");
		cr_assert_eq(b[23], 6, "only TCP is steered here");
		memcpy(&seq, b + 38, 4);
		memcpy(&ack, b + 42, 4);
		seq = ntohl(seq);
		ack = ntohl(ack);
		cr_assert_not(flags & 0x04, "RST from the kernel");
		if ((flags & 0x12) == 0x12) {
			t->syn_ack = true;
			t->rcv_nxt = seq + 1;
		}
		if (flags & 0x10) {
			if ((int32_t)(ack - t->snd_una) > 0)
				t->snd_una = ack;
			t->win = (uint32_t)(b[48] << 8 | b[49]);
		}
		if (flags & 0x01) {
			uint32_t tot = (uint32_t)(b[16] << 8 | b[17]), thl = (uint32_t)(b[46] >> 4) * 4;

			t->peer_fin = true;
			t->rcv_nxt = seq + (tot - 20 - thl) + 1;
		}
		raw_post_recv(t->r, slot);
	}
}

/* The whole TCP exchange against a kernel socket listening already (@kid, @fd). */
static void
tcp_stream(struct ibv_context *ctx, pid_t kid, int fd)
{
	struct raw_qp R;
	struct raw_flow_attr f;
	struct ibv_flow *fl;
	struct tcp_state t = { 0 };
	const uint32_t isn = 1000000;
	uint64_t deadline, last_progress;
	uint32_t last_una;
	char res[128];
	size_t got;
	int ok, eof;

	raw_qp_open(&R, ctx);
	t.r = &R;
	t.a = addrs();
	raw_flow_init(&f, IBV_FLOW_ATTR_NORMAL, 0);
	raw_flow_ipv4(&f, t.a.dip, t.a.sip);
	raw_flow_l4(&f, true, KPORT_TCP, MY_PORT);
	fl = ibv_create_flow(R.qp, &f.attr);
	cr_assert_not_null(fl, "%s", strerror(errno));
	tc_fill(R.sbuf, TCP_TOTAL, 13);

	/* handshake: SYN (with an MSS option) out, SYN-ACK in, ACK out */
	t.snd_una = isn;
	t.snd_nxt = isn + 1;
	tcp_send(&t, 0x02, isn, 0, 0);
	for (deadline = tc_now_ms() + 5000; !t.syn_ack && tc_now_ms() < deadline;)
		tcp_input(&t, 100);
	cr_assert(t.syn_ack, "no SYN-ACK from the kernel");
	cr_assert_eq(t.snd_una, isn + 1, "the SYN acknowledged");
	tcp_send(&t, 0x10, t.snd_nxt, 0, 0);

	/* the data, by TSO, within the kernel's window; go back to snd_una if
	 * nothing moves for 500 ms (a bounded loop: 30 s) */
	deadline = tc_now_ms() + 30000;
	last_progress = tc_now_ms();
	last_una = t.snd_una;
	while (t.snd_una != isn + 1 + TCP_TOTAL && tc_now_ms() < deadline) {
		uint32_t off = t.snd_nxt - (isn + 1), inflight = t.snd_nxt - t.snd_una;
		uint32_t room = t.win > inflight ? t.win - inflight : 0;
		uint32_t n = TCP_TOTAL - off;

		if (n > room)
			n = room;
		if (n > 64u * 1024)
			n = 64u * 1024;

		if (n >= K.mss || (n > 0 && n == TCP_TOTAL - off)) {
			tcp_send(&t, 0x18, t.snd_nxt, off, n);
			t.snd_nxt += n;
		}
		tcp_input(&t, 20);
		if (t.snd_una != last_una) {
			last_una = t.snd_una;
			last_progress = tc_now_ms();
		} else if (tc_now_ms() - last_progress > 500) {
			t.snd_nxt = t.snd_una; /* retransmit from the first unacknowledged byte */
			last_progress = tc_now_ms();
		}
	}
	cr_assert_eq(t.snd_una, isn + 1 + TCP_TOTAL, "every byte acknowledged (%u of %u)",
		     t.snd_una - isn - 1, TCP_TOTAL);

	/* FIN out; the kernel reads EOF, closes, and its FIN comes back */
	tcp_send(&t, 0x11, t.snd_nxt, 0, 0);
	t.snd_nxt++;
	for (deadline = tc_now_ms() + 5000;
	     !(t.peer_fin && t.snd_una == t.snd_nxt) && tc_now_ms() < deadline;)
		tcp_input(&t, 100);
	cr_assert(t.peer_fin, "the kernel's FIN");
	cr_assert_eq(t.snd_una, t.snd_nxt, "our FIN acknowledged");
	tcp_send(&t, 0x10, t.snd_nxt, 0, 0);

	kernel_result(kid, fd, res, sizeof(res));
	cr_assert_eq(sscanf(res, "%zu %d %d", &got, &ok, &eof), 3, "kernel said '%s'", res);
	cr_assert_eq(got, TCP_TOTAL, "the kernel read %zu bytes", got);
	cr_assert(ok, "every byte in order");
	cr_assert(eof, "the stream ended with our FIN");
	cr_assert_eq(ibv_destroy_flow(fl), 0);
	raw_qp_close(&R);
	{
		struct droce_port_stats st;

		droce_port_stats_get(droce_port_get(0), &st);
		K.tx_frames = st.tx_pkts;
	}
	ibv_close_device(ctx);
	tc_stop();
}

Test(raw_netns, tcp_stream_by_tso)
{
	int fds[2];
	pid_t kid = kernel_side(true, fds);

	tcp_stream(start_droce(), kid, fds[0]);
	cr_assert_gt(K.tx_frames, TCP_TOTAL / MSS, "af_packet: droce cut the segments");
	/* tshark and scapy agree the segments' checksums are right */
	check_capture("-q --min 200");
}

/* ---- UDP ---- */

static void
udp_datagrams(struct ibv_context *ctx, pid_t kid, int fd)
{
	struct raw_qp R;
	struct raw_addr a = addrs();
	unsigned int count, good;
	char res[128];
	const unsigned int n = 20;

	raw_qp_open(&R, ctx);
	/* the control: junk checksums, no IBV_SEND_IP_CSUM; the kernel drops it */
	{
		uint32_t id = 999;
		size_t len = raw_udp_frame(R.sbuf, &a, 5000, KPORT_UDP, 100, 0, 1, 0xbeef);

		memcpy(R.sbuf + 42, &id, 4);
		tc_fill(R.sbuf + 46, 96, id);
		cr_assert_eq(raw_send(&R, 0, (uint32_t)len, 0), 0);
		raw_send_done(&R, IBV_WC_SUCCESS);
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t off = 2048 * i, plen = 4 + 70 * i + (i == n - 1 ? 1472 - 4 - 70 * i : 0);
		size_t len = raw_udp_frame(R.sbuf + off, &a, 5000, KPORT_UDP, plen, 0,
					   (uint16_t)(100 + i), 0xbeef);

		memcpy(R.sbuf + off + 42, &i, 4);
		tc_fill(R.sbuf + off + 46, plen - 4, i);
		cr_assert_eq(raw_send(&R, off, (uint32_t)len, IBV_SEND_IP_CSUM), 0, "datagram %u", i);
		raw_send_done(&R, IBV_WC_SUCCESS);
	}
	kernel_result(kid, fd, res, sizeof(res));
	cr_assert_eq(sscanf(res, "%u %u", &count, &good), 2, "kernel said '%s'", res);
	cr_assert_eq(count, n, "the kernel received %u datagrams (not the bad one)", count);
	cr_assert_eq(good, n, "every payload intact");
	raw_qp_close(&R);
	ibv_close_device(ctx);
	tc_stop();
}

Test(raw_netns, udp_checksums)
{
	int fds[2];
	pid_t kid = kernel_side(false, fds);

	udp_datagrams(start_droce(), kid, fds[0]);
	check_capture("--min 21 --bad 1");
}

/*
 * The same through a tap port, whose PMD offers the checksum and TSO
 * offloads: droce hands the frames over with rte_mbuf offload flags
 * (rte_eth_tx_prepare) instead of doing the work itself.  The tap's kernel
 * end is in droce's namespace (198.18.4.2), the kernel socket there too.
 */
static struct ibv_context *
start_droce_tap(void)
{
	static char text[1024];
	struct droce_config cfg;
	struct droce_port *p;
	struct ibv_context *ctx;

	enter(nsD);
	K.ns = nsD;
	snprintf(K.kif, sizeof(K.kif), "dt%d", (int)getpid() % 10000000);
	snprintf(text, sizeof(text),
		 "[eal]\nargs = --no-huge --no-pci -m 256 --file-prefix=droce-rawtap-%d "
		 "--log-level=lib.eal:warning\n"
		 "[engines]\nmode = colocated\ncount = 1\n"
		 "[port0]\nkind = tap\niface = %s\nipv4 = 198.18.4.1\n",
		 (int)getpid(), K.kif);
	unsetenv("DROCE_CONFIG");
	cr_assert_eq(droce_config_load_text("<raw tap>", text, &cfg), 0, "%s", droce_last_error());
	cr_assert_eq(droce_start_config(&cfg), 0, "%s", droce_last_error());
	ctx = tc_open("droce0", NULL);
	p = droce_port_get(0);
	cr_assert_not_null(p);
	cr_assert_eq(droce_port_offloads(p) & (DROCE_PORT_OFFLOAD_TX_IPV4_CSUM | DROCE_PORT_OFFLOAD_TX_UDP_CSUM |
				    DROCE_PORT_OFFLOAD_TX_TCP_CSUM | DROCE_PORT_OFFLOAD_TX_TSO),
		     DROCE_PORT_OFFLOAD_TX_IPV4_CSUM | DROCE_PORT_OFFLOAD_TX_UDP_CSUM |
			     DROCE_PORT_OFFLOAD_TX_TCP_CSUM | DROCE_PORT_OFFLOAD_TX_TSO,
		     "the tap offers the offloads (%#x)", droce_port_offloads(p));
	cr_assert_eq(sh("ip -n %s link set %s address 02:00:c6:12:04:02 && ip -n %s link set %s up && "
			"ip -n %s addr add 198.18.4.2/24 dev %s", nsD, K.kif, nsD, K.kif, nsD, K.kif), 0);
	memcpy(K.a.smac, droce_port_mac(p)->addr_bytes, 6);
	memcpy(K.a.dmac, (const uint8_t[6]){ 0x02, 0x00, 0xc6, 0x12, 0x04, 0x02 }, 6);
	K.a.sip = inet_addr("198.18.4.1");
	K.a.dip = inet_addr("198.18.4.2");
	K.kip = "198.18.4.2";
	/* net_tap cuts TCP segments only when headers + mss fit in the IP MTU:
	 * droce then gives it the TSO (else DPDK's GSO and checksum offload) */
	K.mss = 1400;
	return ctx;
}

Test(raw_netns, tap_checksum_offload)
{
	int fds[2];
	struct ibv_context *ctx = start_droce_tap();
	pid_t kid = kernel_side(false, fds);

	udp_datagrams(ctx, kid, fds[0]);
}

Test(raw_netns, tap_tso_offload)
{
	int fds[2];
	struct ibv_context *ctx = start_droce_tap();
	pid_t kid = kernel_side(true, fds);

	tcp_stream(ctx, kid, fds[0]);
	/* the PMD got the large frames, not 215 segments of 1400 bytes */
	cr_assert_lt(K.tx_frames, TCP_TOTAL / 1400 / 2, "%" PRIu64 " frames to the tap",
		     K.tx_frames);
}
