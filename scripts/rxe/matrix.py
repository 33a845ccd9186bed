#!/usr/bin/python3
# The rxe interop matrix: every perftest test in the guest (Linux rdma_rxe)
# against droce-perf on this host, in both roles, and the rdma_cm cells:
# rdma-core's rdma_server / rdma_client (rdmacm-utils, the kernel's IB CM over
# rxe) against droce's tests/rdmacm/example_rdma_client / _server (libdroce's
# rdma_cm and IB CM).  Run by scripts/rxe-interop inside the droce-rxe network
# namespace once the guest agent answers.
# Over 800 lines because every cell kind (perftest, rdma_cm, drop-in
# programs, rsockets, UCX, the IPv6 cells) shares the guest agent, the
# namespace's addresses and one result table; the cell kinds are the place
# to split it next time it grows.
import argparse, atexit, json, math, os, re, signal, socket, subprocess, sys, threading, time

started = []  # droce-perf processes: killed (by pid) if this script ends early

@atexit.register
def _kill_started():
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()

signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

BW = ("write_bw", "read_bw", "send_bw", "atomic_bw")
ROLES = ("guest-srv", "droce-srv")   # who runs the server side
# rdma_cm cells: named after the rdma-core program the guest runs, which
# fixes the role (rdma_server: the guest serves, droce's example client
# connects; rdma_client: droce's example server, the guest connects);
# udaddy (RDMA_PS_UDP, SIDR) runs in both roles against droce's
# tests/rdmacm/example_udaddy
RDMACM = {"rdma_server": ("guest-srv",), "rdma_client": ("droce-srv",),
          "udaddy": ("guest-srv", "droce-srv")}
PERFTEST = ("write_bw", "write_lat", "read_bw", "read_lat", "send_bw", "send_lat", "atomic_bw")
# option cells: TEST+VARIANT runs TEST with the variant's options on both
# sides (perftest and droce-perf take the same ones); -R: perftest's
# rdma_cm mode (no TCP: the exchange and the QPs go through the IB CM).
# -q 4 adds -u 18 (a 1 s local ACK timeout): rxe under TCG answers the READs
# of 4 QPs one QP after the other, and the last QP's first READ can wait
# longer than perftest's default 67 ms x 7 retries
VARIANTS = {"q4": ["-q", "4", "-u", "18"], "gbits": ["--report_gbits"], "o4": ["-o", "4"], "R": ["-R"],
            # UD over rdma_cm (RDMA_PS_UDP, SIDR); a UD message is one packet
            "udR": ["-c", "UD", "-R"],
            # not in the default set: the recording of tests/perf/data/
            "q2g": ["-q", "2", "--report_gbits"],
            # not in the default set (issue 25 section 4): RoCEv2 over IPv6,
            # both sides on their IPv6 GID (-x), peers found by neighbour
            # discovery (no entry set by hand); perftest's TCP stays IPv4
            "v6": []}
OPTCELLS = tuple("%s+%s" % (t, v) for v, ts in (
    ("q4", ("write_bw", "read_bw", "send_bw")),
    ("gbits", ("write_bw", "read_bw", "send_bw")),
    ("o4", ("read_bw", "atomic_bw")),
    ("R", ("write_bw", "read_bw", "send_bw", "write_lat", "read_lat", "send_lat")),
    ("udR", ("send_bw",)))
    for t in ts)

def split_cell(t):
    """'write_bw+q4' -> ('write_bw', ['-q', '4'], 'q4'); 'write_bw' -> ('write_bw', [], '')."""
    base, _, v = t.partition("+")
    return base, VARIANTS.get(v, []), v

RDMACM_PORT = {"rdma_server": 7471, "rdma_client": 7471, "udaddy": 7174}
# drop-in cells: the same Debian binary on both sides, droce's side through
# droce-run (build/compat's libibverbs.so.1 / librdmacm.so.1), both roles
# (UCX's cells: below, DROPIN_UCX)
DROPIN = ("rping", "ibv_rc_pingpong", "ib_write_bw", "ucx_tag_lat", "ucx_put_bw")
# optional drop-in cells (--tests only): mckey, UD multicast through
# rdma_cm (the server side receives, the client side sends with -s)
DROPIN_OPT = ("mckey", "rping6")   # rping6: rping over IPv6 (V6_GUEST / V6_DROCE)
DROPIN_PINGS = 10
MCKEY_GROUP, MCKEY_COUNT = "239.1.2.3", 10
# the IPv6 cells' addresses (RFC 5180's benchmarking range, as droce's own
# IPv6 tests), made by the cells in the guest and droce's config; droce's
# IPv6 GID is its index 1 (after the IPv4 one)
V6_GUEST, V6_DROCE, V6_DROCE_GIDX, V6_HOST = "2001:2::2", "2001:2::11", "1", "2001:2::1"
# rsockets (issue 22 §4): rdmacm-utils' rstream / riostream, verified data,
# optional (--tests rstream,riostream): not in the default matrix
DROPIN_RS = ("rstream", "riostream")
DROPIN_RS_XFERS = 100
# rcopy (optional, --tests rcopy): a file through rsockets, the server
# writes it where the client says; the same pseudo-random bytes are made on
# both sides and compared by SHA-256
RCOPY_PORT, RCOPY_BYTES = 7427, 3000000
RCOPY_MAKE = ("import random, sys; sys.stdout.buffer.write(random.Random(22).randbytes(%d))"
              % RCOPY_BYTES)
# NVMe over Fabrics (issue 26 §2), optional (--tests nvmf): droce-nvmf here,
# Linux's nvme-rdma host in the guest (scripts/rxe/nvmf_guest.py: discovery,
# connect, fio with crc32c verification, disconnect)
NVMF = ("nvmf", "nvmf_figures")   # nvmf_figures: also fio figures, droce and nvmet-rdma
NVMF_NQN = "nqn.2026-11.dev.droce:rxe"
# UCX 1.13 (issue 23 §5), in the default set since 2026-11-27 (12 of 12 cells
# passed in 3 runs at load 8-21, 9-46 s each under TCG): Debian's
# ucx_perftest on rxe0 in the guest and through droce-run here, rc_verbs and
# ud_verbs only; its TCP exchange on UCX_PORT
DROPIN_UCX = {"ucx_tag_lat": ["-t", "tag_lat", "-n", "1000"],
              "ucx_put_bw": ["-t", "ucp_put_bw", "-n", "1000", "-s", "65536"]}
UCX_PORT = 13337
# libfabric 1.17's fi_pingpong (issue 23 §5), optional (--tests fi_dgram,fi_rxd):
# the verbs provider's DGRAM endpoints (UD QPs) and ofi_rxd's RDM over them,
# -c (every message's bytes checked); the endpoint names go over its TCP
# control connection (port 47592), no rdma_cm; the guest's rxe0 on its
# IPv4 GID index (FI_VERBS_GID_IDX; the provider's default 0 is rxe's
# link-local IPv6 GID), droce's on its index 0.  The guest's fi_pingpong
# never exits after a clean run: it hangs freeing its resources, rxe to rxe
# as well (two fi_pingpong on the guest's rxe0: the client ends, the server
# hangs after its result row), so it runs -v and under `timeout`, and a
# guest side ended by that timeout passes when it said "Test terminated"
# (both "fin" messages exchanged over the fabric, after the result row)
DROPIN_FI = {"fi_dgram": ["-v", "-p", "verbs", "-e", "dgram", "-S", "1024"],
             "fi_rxd": ["-v", "-p", "verbs;ofi_rxd", "-e", "rdm", "-S", "4096"],
             "fi_msg": ["-p", "verbs", "-e", "msg", "-S", "4096"],
             "fi_rxm": ["-p", "verbs;ofi_rxm", "-e", "rdm", "-S", "4096"]}
# MSG endpoints (fi_msg) and ofi_rxm's RDM over them (fi_rxm) connect through
# rdma_cm (the endpoint names, with the IP addresses, over the TCP control
# connection), on the devices' domains (rxe0, droce0), not the -dgram ones.
# The verbs provider offers a device's MSG endpoints only when an IP address
# of a kernel interface that is not a loopback binds to it (vrb_getifaddrs):
# droce's address must be on one here (fi_iface_up).  The guest's ofi_rxm
# asks rxe for a CQ bigger than rxe's max_cqe with the default universe
# size (fi_enable EINVAL, "Unable to create verbs CQ", rxe to rxe as well):
# FI_UNIVERSE_SIZE=16 on the guest's side.  These end cleanly on both sides
# (no -v: it prints a line per byte checked, 800,000 of them per side).
FI_CONNECTED = ("fi_msg", "fi_rxm")
FI_GUEST_SECS = 40
FI_PORT, FI_ITERS = 47592, 200
DROPIN_ALL = DROPIN + DROPIN_OPT + DROPIN_RS + ("rcopy",) + tuple(DROPIN_FI)

def variants(tests, lat_sizes, bw_size):
    out = []
    for t in tests:
        if t not in PERFTEST and t not in RDMACM and t not in OPTCELLS and t not in DROPIN_ALL \
                and t not in NVMF \
                and not ("+" in t and split_cell(t)[0] in PERFTEST and t.split("+")[1] in VARIANTS):
            raise SystemExit("rxe: unknown test %r (perftest: %s; with options: %s; "
                             "rdma_cm: %s; drop-in: %s)" % (t, ",".join(PERFTEST),
                                                            ",".join(OPTCELLS), ",".join(RDMACM),
                                                            ",".join(DROPIN_ALL)))
        if t in NVMF:
            out.append((t, 4096))
        elif t in DROPIN_RS:
            out.append((t, 10000))
        elif t == "rcopy":
            out.append((t, RCOPY_BYTES))
        elif t in ("rping", "rping6"):
            out.append((t, 64))          # rping's default ping size
        elif t == "ibv_rc_pingpong":
            out.append((t, 4096))        # its default message size
        elif t == "mckey":
            out.append((t, 100))         # its default message size
        elif t in DROPIN_UCX:
            out.append((t, 65536 if t == "ucx_put_bw" else 8))
        elif t in DROPIN_FI:
            out.append((t, int(DROPIN_FI[t][-1])))
        elif t == "ib_write_bw":
            out.append((t, bw_size))
        elif t in RDMACM:
            out.append((t, 16 if t != "udaddy" else 100))   # their message sizes
        elif split_cell(t)[0] == "atomic_bw":
            out.append((t, 8))
        elif split_cell(t)[2] == "udR":
            out.append((t, 1024))   # the guest's path MTU
        elif split_cell(t)[0] in BW:
            out.append((t, bw_size))
        else:
            out.extend((t, s) for s in lat_sizes)
    return out

def agent(host, port, cmd, timeout):
    """Runs argv in the guest; returns {"rc", "out", "secs"} (rc -1: no answer)."""
    try:
        return agent_call(host, port, cmd, timeout)
    except (OSError, ValueError) as e:
        return {"rc": -1, "out": "rxe: no answer from the guest agent: %r\n" % e}

def agent_call(host, port, cmd, timeout):
    with socket.create_connection((host, port), timeout=10) as s:
        s.settimeout(timeout + 30)
        s.sendall((json.dumps({"cmd": cmd, "timeout": timeout}) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            k = s.recv(65536)
            if not k:
                break
            buf += k
    return json.loads(buf)

def listening(port):
    """True when a TCP socket listens on @port in this namespace."""
    hexport = ":%04X" % port
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                for line in f.readlines()[1:]:
                    p = line.split()
                    if p[1].endswith(hexport) and p[3] == "0A":
                        return True
        except OSError:
            pass
    return False

NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)"

def result_line(out, size):
    """The numbers of perftest's (or droce-perf's) result row for @size, or None."""
    rows = []
    for line in out.splitlines():
        tok = line.split()
        if len(tok) >= 5 and tok[0] == str(size) and all(re.fullmatch(NUM, x) for x in tok):
            rows.append([float(x) for x in tok])
    return rows[-1] if rows else None

def sane(out, test, size, iters, must):
    """'' when the output is sane, else why not.  @must: a result row is required."""
    row = result_line(out, size)
    if row is None:
        return "no result row" if must else ""
    if not all(math.isfinite(x) for x in row):
        return "non-finite numbers"
    if int(row[1]) <= 0:
        return "zero iterations"
    if test.endswith("_bw"):
        # BW average; perftest prints it in MB/s with two decimals, so 8-byte
        # atomics under TCG (a few hundred a second) show 0.00: then the
        # message rate (Mpps, six decimals) says whether anything moved
        if row[3] <= 0 and not (len(row) > 4 and row[4] > 0):
            return "BW average %.2f, message rate %s" % (row[3], row[4] if len(row) > 4 else "-")
    elif not (0 < row[5] < 10e6):  # t_avg, usec
        return "t_avg %.2f" % row[5]
    return ""

def same_figures(gout, dout, test, size, variant):
    """bw tests: the server prints the client's figures as the client sent
    them (perftest's xchg_bw_reports, in the unit both report in), so both
    rows must agree on BW average (to the printed 2 decimals).  '' or why not."""
    if not test.endswith("_bw") or test == "send_bw":
        return ""   # send_bw's server reports what it received itself
    g, d = result_line(gout, size), result_line(dout, size)
    if g is None or d is None:
        return ""
    if abs(g[3] - d[3]) > 0.011 + 0.0001 * max(g[3], d[3]):
        return "BW average: guest %.2f, droce %.2f (the exchanged report is off)" % (g[3], d[3])
    return ""

def where_hung(monitor):
    """' at RIP=... (symbol)' from qemu's monitor, or ''."""
    if not monitor:
        return ""
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        s.connect(monitor)
        time.sleep(0.3)
        s.recv(65536)
        s.sendall(b"info registers\n")
        time.sleep(0.5)
        out = s.recv(65536).decode(errors="replace")
        s.close()
        m = re.search(r"RIP=([0-9a-f]+)", out)
        if not m:
            return ""
        rip, sym = int(m.group(1), 16), ""
        import glob
        for path in glob.glob(os.path.join(os.path.dirname(monitor), "rootfs/boot/System.map-*")):
            best = None
            with open(path) as f:
                for line in f:
                    addr, _, name = line.split()[:3]
                    addr = int(addr, 16)
                    if addr <= rip and (best is None or addr > best[0]):
                        best = (addr, name)
            if best:
                sym = " (%s+0x%x)" % (best[1], rip - best[0])
        return " (vCPU at RIP=%x%s)" % (rip, sym)
    except (OSError, ValueError):
        return ""

def _timeout_out(e):
    """What a timed-out subprocess.run printed before it was killed."""
    out = e.stdout or ""
    return out.decode(errors="replace") if isinstance(out, bytes) else out

def guest_serves(a, gcmd, hcmd, hname, env, ready=None, host_timeout=None):
    """A cell with the guest as server: @gcmd runs in the guest (through the
    agent, in a thread); once @ready() says it listens (None: at once),
    droce's side @hcmd (@hname in messages) runs here as the client.
    Returns (guest result, host rc, host output, why)."""
    gres, why = {}, ""
    th = threading.Thread(target=lambda: gres.update(
        agent(a.guest_ip, a.agent_port, gcmd, a.timeout)))
    th.start()
    if ready is not None and not ready():
        why = "%s in the guest did not listen" % gcmd[2]
        drc, dout = -1, ""
    else:
        try:
            dres = subprocess.run(hcmd, env=env, capture_output=True, text=True,
                                  timeout=host_timeout or a.timeout)
            drc, dout = dres.returncode, dres.stdout + dres.stderr
        except subprocess.TimeoutExpired as e:
            drc, dout = 124, _timeout_out(e) + "\nrxe: %s timed out\n" % hname
    th.join(10 if drc == 0 else 3)
    if th.is_alive():  # droce's side is done: do not wait for a stuck server
        agent(a.guest_ip, a.agent_port, ["killjobs"], 10)
    th.join(a.timeout + 40)
    return gres, drc, dout, why

def until(p, cond, secs):
    """Polls @cond every 0.1 s while @p runs, up to @secs; True when it held."""
    dl = time.monotonic() + secs
    while p.poll() is None and time.monotonic() < dl and not cond():
        time.sleep(0.1)
    return p.poll() is None and cond()

def host_serves(a, hcmd, hname, env, ready, guest_client, stays=False):
    """A cell with droce as server: @hcmd (@hname in messages) runs here;
    once @ready(p, lines) says it listens (it waits, bounded; @lines is its
    output so far), @guest_client() runs the guest's side and returns the
    agent's result.  @stays: a server that never ends by itself (rcopy's):
    stopped 2 s after the client, its rc then 0 when it was still running.
    Returns (guest result, host rc, host output, why)."""
    p = subprocess.Popen(hcmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    started.append(p)
    lines, gres, why, killed = [], {}, "", False
    def reader():
        for line in p.stdout:
            lines.append(line)
    rt = threading.Thread(target=reader, daemon=True)
    rt.start()
    try:
        if ready(p, lines):
            gres = guest_client()
        else:
            why = "%s did not listen" % hname
        try:
            # a client that failed leaves the server waiting: 10 s of grace
            p.wait(timeout=2 if stays else a.timeout + 30 if gres.get("rc") == 0 else 10)
        except subprocess.TimeoutExpired:
            killed = True
        if killed and stays:
            p.terminate()
            p.wait()
            return gres, 0, "".join(lines), why
    finally:
        if p.poll() is None:  # killed, or an exception above: never leave it running
            p.kill()
            p.wait()
    rt.join(5)
    if killed:
        lines.append("\nrxe: %s killed after the client ended\n" % hname)
    return gres, 124 if killed else p.returncode, "".join(lines), why

def guest_wait_listen(a, port, secs):
    """Waits until a listening rdma_cm id on @port shows in the guest's
    `rdma res show cm_id`; True when it did."""
    r = agent(a.guest_ip, a.agent_port, ["sh", "-c",
        "for i in $(seq %d); do rdma res show cm_id 2>/dev/null | grep -q 'state LISTEN.*:%d' "
        "&& exit 0; sleep 0.2; done; exit 1" % (secs * 5, port)], secs + 10)
    return r["rc"] == 0

def run_rdmacm(a, test, role, cfg, env):
    """One rdma_cm cell.  Returns (guest argv, grc, gout, host argv, drc, dout, why)."""
    gdiag = ["sh", "-c", "echo '## guest: rdma res show cm_id'; rdma res show cm_id; "
             "echo '## guest: dmesg (last 20 lines)'; dmesg | tail -20"]
    why = ""
    port = RDMACM_PORT[test]
    ex = lambda name: os.path.join(a.rdmacm_bin, name)
    if test == "udaddy":
        gok, hok = "return status 0", "example_udaddy: ok"
        if role == "guest-srv":
            gcmd = ["stdbuf", "-oL", "udaddy", "-b", a.guest_ip]
            hcmd = [ex("example_udaddy"), "-s", a.guest_ip]
        else:
            gcmd = ["stdbuf", "-oL", "udaddy", "-s", a.droce_ip]
            hcmd = [ex("example_udaddy"), "-b", a.droce_ip]
    elif role == "guest-srv":  # the guest's rdma_server, droce's example client
        gok, hok = "rdma_server: end 0", "rdma_client: ok"
        gcmd = ["stdbuf", "-oL", "rdma_server", "-s", a.guest_ip, "-p", str(port)]
        hcmd = [ex("example_rdma_client"), "-s", a.guest_ip, "-p", str(port)]
    else:                      # droce's example server, the guest's rdma_client
        gok, hok = "rdma_client: end 0", "rdma_server: ok"
        gcmd = ["stdbuf", "-oL", "rdma_client", "-s", a.droce_ip, "-p", str(port)]
        hcmd = [ex("example_rdma_server"), "-s", a.droce_ip, "-p", str(port)]
    hname = os.path.basename(hcmd[0])
    if role == "guest-srv":
        gres, drc, dout, why = guest_serves(a, gcmd, hcmd, hname, env,
                                            lambda: guest_wait_listen(a, port, 20))
    else:
        gres, drc, dout, why = host_serves(
            a, hcmd, hname, env,
            lambda p, lines: until(p, lambda: any("listening" in l for l in lines), 30),
            lambda: agent(a.guest_ip, a.agent_port, gcmd, a.timeout))
    grc, gout = gres.get("rc", -1), gres.get("out", "")
    if not why:
        if grc != 0 or drc != 0:
            why = "exit: %s %d, %s %d" % (gcmd[2], grc, hname, drc)
        elif gok not in gout:
            why = "no '%s' in the guest's output" % gok
        elif hok not in dout:
            why = "no '%s' in droce's output" % hok
    d = agent(a.guest_ip, a.agent_port, gdiag, 20)
    gout += d.get("out", "")
    return gcmd, grc, gout, hcmd, drc, dout, why

def guest_wait_tcp(a, port, secs):
    """Waits until a TCP socket listens on @port in the guest; True when it did."""
    r = agent(a.guest_ip, a.agent_port, ["sh", "-c",
        "for i in $(seq %d); do ss -Hltn 'sport = :%d' | grep -q . && exit 0; sleep 0.2; done; "
        "exit 1" % (secs * 5, port)], secs + 10)
    return r["rc"] == 0

def fi_iface(a, up):
    """Puts droce's address on a kernel interface of this namespace (@up) or
    takes it off: a veth pair outside the bridge (rd0 / rd1), so that the
    verbs provider's MSG endpoints find droce's device (FI_CONNECTED).  br0
    then must not answer ARP for that address (arp_ignore=1: only for its
    own), nor source its ARP requests from it (arp_announce=2): the guest
    keeps learning droce's MAC for it, and the RoCE frames keep going to
    droce.  True when it is done."""
    def sh(*argv):
        return subprocess.run(list(argv), capture_output=True).returncode == 0
    if not up:
        return sh("ip", "link", "del", "rd0")
    sh("ip", "link", "del", "rd0")          # one left by an interrupted run
    return (sh("sysctl", "-qw", "net.ipv4.conf.br0.arp_ignore=1",
               "net.ipv4.conf.br0.arp_announce=2", "net.ipv4.conf.all.arp_announce=2")
            and sh("ip", "link", "add", "rd0", "type", "veth", "peer", "name", "rd1")
            and sh("ip", "addr", "add", a.droce_ip + "/32", "dev", "rd0")
            and sh("ip", "link", "set", "rd0", "up") and sh("ip", "link", "set", "rd1", "up"))

def run_dropin(a, test, size, role, env, gidx):
    if test in FI_CONNECTED:
        if not fi_iface(a, True):
            return [], -1, "", [], -1, "", "could not put %s on a veth here" % a.droce_ip
        try:
            return run_dropin_cell(a, test, size, role, env, gidx)
        finally:
            fi_iface(a, False)
    return run_dropin_cell(a, test, size, role, env, gidx)

def run_dropin_cell(a, test, size, role, env, gidx):
    """One drop-in cell: Debian's @test in the guest (rxe0) and the same binary
    on this host through droce-run.  Returns (guest argv, grc, gout, host argv,
    drc, dout, why)."""
    run = [a.droce_run]
    why = ""
    server_is_guest = role == "guest-srv"
    peer = a.guest_ip if server_is_guest else a.host_ip     # where a client connects
    if test in ("rping", "rping6"):
        # rdma_cm: the address is the server's RDMA address
        if test == "rping6":
            addr = V6_GUEST if server_is_guest else V6_DROCE
        else:
            addr = a.guest_ip if server_is_guest else a.droce_ip
        srv = ["rping", "-s", "-a", addr, "-V", "-v", "-C", str(DROPIN_PINGS)]
        cli = ["rping", "-c", "-a", addr, "-V", "-v", "-C", str(DROPIN_PINGS)]
        gargs, hargs = (srv, cli) if server_is_guest else (cli, srv)
        port, kind = 7174, "cm"
    elif test == "mckey":
        # the receiver (server) joins first; the guest needs a route to the
        # groups for rxe to send to one (its cma resolves the group's route)
        recv_ip, send_ip = (a.guest_ip, a.droce_ip) if server_is_guest else (a.droce_ip, a.guest_ip)
        rcv = ["mckey", "-m", MCKEY_GROUP, "-C", str(MCKEY_COUNT), "-b", recv_ip]
        snd = ["mckey", "-m", MCKEY_GROUP, "-C", str(MCKEY_COUNT), "-b", send_ip, "-s"]
        gm, hargs = (rcv, snd) if server_is_guest else (snd, rcv)
        gargs = ["sh", "-c", "ip route replace 224.0.0.0/4 dev $(ip -o -4 addr show | "
                 "awk '/%s\\//{print $2; exit}') && exec %s" % (a.guest_ip, " ".join(gm))]
        port, kind = 0, "mc"
    elif test == "rcopy":
        # the guest makes its file (client) or gets it (server) in /tmp; this
        # side's file is in the log directory
        gsrc, gdst = "/tmp/rcopy.src", "/tmp/rcopy.dst"
        hfile = os.path.join(a.logdir, "rcopy-%s.bin" % role)
        port_s = str(RCOPY_PORT)
        if server_is_guest:
            with open(hfile, "wb") as f:
                subprocess.run([sys.executable, "-c", RCOPY_MAKE], stdout=f, check=True)
            gargs = ["sh", "-c", "rm -f %s; exec rcopy -p %s" % (gdst, port_s)]
            hargs = ["rcopy", hfile, "%s:%s" % (a.guest_ip, gdst), "-p", port_s]
        else:
            if os.path.exists(hfile):
                os.unlink(hfile)
            gargs = ["sh", "-c", "python3 -c '%s' > %s && exec rcopy %s %s:%s -p %s"
                     % (RCOPY_MAKE, gsrc, gsrc, a.droce_ip, hfile, port_s)]
            hargs = ["rcopy", "-p", port_s]
        port, kind = RCOPY_PORT, "cm"
    elif test in DROPIN_RS:
        # rsockets over rdma_cm: the server binds its RDMA address (port 7471)
        addr = a.guest_ip if server_is_guest else a.droce_ip
        opts = ["-S", str(size), "-C", str(DROPIN_RS_XFERS), "-T", "v"]
        srv = [test, "-b", addr] + opts
        cli = [test, "-s", addr] + opts
        gargs, hargs = (srv, cli) if server_is_guest else (cli, srv)
        port, kind = 7471, "cm"
    elif test in DROPIN_UCX:
        ucx = ["env", "UCX_TLS=rc_verbs,ud_verbs", "UCX_WARN_UNUSED_ENV_VARS=n"]
        # the guest's UCX 1.13 reads a UD datagram's IP version from wc.sl
        # (mlx5's packet type), which rxe leaves 0: it reads every IPv4
        # datagram's GRH area as IPv6 and drops it as "wrong dgid", rxe to
        # rxe too (UCX PR #10209 later reads the GRH instead); its own switch
        # turns that check off.  droce sets wc.sl as mlx5 does.
        gargs = ucx + ["UCX_UD_VERBS_ETH_DGID_CHECK=n",
                       "UCX_NET_DEVICES=rxe0:1", "ucx_perftest", "-p", str(UCX_PORT)] + \
            DROPIN_UCX[test]
        hargs = ucx + ["UCX_NET_DEVICES=droce0:1", "ucx_perftest", "-p", str(UCX_PORT)] + \
            DROPIN_UCX[test]
        port, kind = UCX_PORT, "tcp"
    elif test in DROPIN_FI:
        common = DROPIN_FI[test] + ["-I", str(FI_ITERS), "-c"]
        if test in FI_CONNECTED:
            gargs = ["timeout", str(FI_GUEST_SECS), "env", "FI_UNIVERSE_SIZE=16",
                     "fi_pingpong", "-d", "rxe0"] + common
            hargs = ["fi_pingpong", "-d", "droce0"] + common
        else:
            gargs = ["timeout", str(FI_GUEST_SECS), "env", "FI_VERBS_GID_IDX=%s" % gidx,
                     "fi_pingpong", "-d", "rxe0-dgram"] + common
            hargs = ["fi_pingpong", "-d", "droce0-dgram"] + common
        port, kind = FI_PORT, "tcp"
    elif test == "ibv_rc_pingpong":
        common = ["-n", "100", "-s", str(size), "-c"]
        gargs = ["ibv_rc_pingpong", "-d", "rxe0", "-g", gidx] + common
        hargs = ["ibv_rc_pingpong", "-d", "droce0", "-g", "0"] + common
        port, kind = 18515, "tcp"
    else:  # ib_write_bw
        common = ["-F", "-n", str(a.iters), "-s", str(size)]
        gargs = ["ib_write_bw", "-d", "rxe0", "-x", gidx] + common
        hargs = ["ib_write_bw", "-d", "droce0", "-x", "0"] + common
        port, kind = 18515, "tcp"
    if kind == "tcp":
        # the client names the server's TCP address (the control connection)
        if server_is_guest:
            hargs = hargs + [a.guest_ip]
        else:
            gargs = gargs + [a.host_ip]
    gcmd = ["stdbuf", "-oL"] + gargs
    # mckey's "joined dgid" line is what says droce's receiver is ready: its
    # stdout is a pipe here, so line-buffered (stdbuf), or it comes at exit
    hcmd = run + (["stdbuf", "-oL"] if kind == "mc" else []) + hargs
    hname = "droce-run " + next(x for x in hargs if x != "env" and "=" not in x)
    if server_is_guest:
        gres, drc, dout, why = guest_serves(
            a, gcmd, hcmd, hname, env,
            lambda: guest_wait_listen(a, port, 20) if kind == "cm" else
            (time.sleep(5) or True) if kind == "mc" else guest_wait_tcp(a, port, 20))
    else:
        def ready(p, lines):
            if kind == "tcp":
                return until(p, lambda: listening(port), 30)
            if kind == "mc":
                return until(p, lambda: any("joined dgid" in l for l in lines), 30)
            # rping prints nothing when it listens: give droce's start a moment
            time.sleep(3)
            return p.poll() is None
        def guest_client():
            # a REJ (nobody listening yet on rdma_cm) lets the guest try again
            for attempt in range(3):
                r = agent(a.guest_ip, a.agent_port, gcmd, a.timeout)
                out = r.get("out", "")
                if r.get("rc") == 0 or kind != "cm" or ("REJECTED" not in out and
                                                       "refused" not in out):
                    break
                time.sleep(2)
            return r
        gres, drc, dout, why = host_serves(a, hcmd, hname, env, ready, guest_client,
                                           stays=test == "rcopy")
    grc, gout = gres.get("rc", -1), gres.get("out", "")
    if test == "rcopy" and server_is_guest and not why and drc == 0:
        grc = 0   # the guest's rcopy server never ends by itself: stopped by the agent
    if test in DROPIN_FI and grc in (124, -9) and drc == 0 and "Test terminated" in gout:
        grc = 0   # the guest's fi_pingpong hangs freeing its resources (DROPIN_FI)
    if not why:
        cout = dout if server_is_guest else gout           # the client's output
        if grc != 0 or drc != 0:
            why = "exit: guest %s %d, %s %d" % (gargs[0], grc, hname, drc)
        elif test in ("rping", "rping6"):
            n = len(re.findall(r"^ping data: rdma-ping-", cout, re.M))
            if "data mismatch" in cout:
                why = "rping -V: data mismatch"
            elif n != DROPIN_PINGS:
                why = "the client verified %d pings, not %d" % (n, DROPIN_PINGS)
        elif test == "mckey":
            if "data transfers complete" not in gout or "data transfers complete" not in dout:
                why = "no 'data transfers complete' on both sides"
        elif test in DROPIN_RS:
            # name bytes xfers iters total time Gb/sec usec/xfer, on both sides
            row = r"^custom\s+\S+\s+%d\s+1\s+\S+\s+[0-9.]+s\s+[0-9.]+\s+[0-9.]+" % DROPIN_RS_XFERS
            if not re.search(row, gout, re.M) or not re.search(row, dout, re.M):
                why = "no %s result row on both sides" % test
        elif test == "rcopy":
            import hashlib
            want = hashlib.sha256(subprocess.run([sys.executable, "-c", RCOPY_MAKE],
                                                 capture_output=True).stdout).hexdigest()
            if server_is_guest:
                r = agent(a.guest_ip, a.agent_port, ["sha256sum", "/tmp/rcopy.dst"], 30)
                got = (r.get("out") or "?").split()[0]
            else:
                got = hashlib.sha256(open(hfile, "rb").read()).hexdigest() \
                    if os.path.exists(hfile) else "no file"
            if got != want:
                why = "the copy's SHA-256 is %s, not %s" % (got[:16], want[:16])
        elif test in DROPIN_UCX:
            # "Final: iterations ... msg rates": 1000 iterations, rates above zero
            m = re.search(r"^Final:\s+(\d+)\s+.*\s([0-9.]+)\s+([0-9.]+)\s*$", cout, re.M)
            if not m or int(m.group(1)) != 1000 or float(m.group(3)) <= 0:
                why = "no 'Final:' line with 1000 iterations and a rate above zero"
        elif test in DROPIN_FI:
            # "bytes iters total time MB/sec usec/xfer Mxfers/sec", the
            # client's; -c: a corrupt message ends it "Error at iteration"
            row = r"^%s\s+%d\s+=?%d\s+" % (re.escape(str(size) if size < 1024 else
                                                       "%dk" % (size // 1024)),
                                            FI_ITERS, FI_ITERS)
            if "Error at iteration" in gout + dout:
                why = "fi_pingpong -c: a message's bytes differed"
            elif not re.search(row, cout, re.M):
                why = "no result row with %d iterations" % FI_ITERS
        elif test == "ibv_rc_pingpong":
            if not re.search(r"^100 iters in", gout, re.M) or \
               not re.search(r"^100 iters in", dout, re.M):
                why = "no '100 iters in' on both sides"
        else:
            why = sane(cout, "write_bw", size, a.iters, True)
    return gcmd, grc, gout, hcmd, drc, dout, why

def run_nvmf(a, env, test):
    """The nvmf cell.  Returns (guest argv, grc, gout, host argv, drc, dout, why)."""
    here = os.path.dirname(os.path.abspath(__file__))
    tgt = os.path.join(os.path.dirname(a.droce_perf), "droce-nvmf")
    hcmd = [tgt, "-a", a.droce_ip, "-n", NVMF_NQN, "--mem", "64M", "-v", "-t", str(a.timeout + 60)]
    src = open(os.path.join(here, "nvmf_guest.py")).read()
    gcmd = ["python3", "-c", src, a.droce_ip, NVMF_NQN] + (["figures"] if test == "nvmf_figures" else [])
    p = subprocess.Popen(hcmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started.append(p)
    lines, gres, why = [], {}, ""
    rt = threading.Thread(target=lambda: [lines.append(l) for l in p.stdout], daemon=True)
    rt.start()
    try:
        if until(p, lambda: any("listening on" in l for l in lines), 30):
            gres = agent(a.guest_ip, a.agent_port, gcmd, a.timeout)
        else:
            why = "droce-nvmf did not listen"
    finally:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    rt.join(5)
    grc, gout, drc, dout = gres.get("rc", -1), gres.get("out", ""), p.returncode, "".join(lines)
    if not why:
        if grc != 0 or drc != 0:
            why = "exit: nvmf_guest.py %d, droce-nvmf %d" % (grc, drc)
        elif "nvmf-guest: ok" not in gout:
            why = "no 'nvmf-guest: ok' in the guest's output"
    d = agent(a.guest_ip, a.agent_port, ["sh", "-c", "echo '## guest: dmesg (last 30 lines)'; dmesg | tail -30"], 20)
    gout += d.get("out", "")
    return ["python3", "-c", "<scripts/rxe/nvmf_guest.py>", a.droce_ip, NVMF_NQN], grc, gout, hcmd, drc, dout, why

def finish_cell(a, results, key, t0, why, label, log_path, log_text):
    """Records a cell: its result (a failure with the guest no longer
    answering says so), its log, its PASS/FAIL line.  True when the guest hung."""
    secs = time.monotonic() - t0
    note = "2nd boot" if a.resume else ""
    hung = bool(why) and agent(a.guest_ip, a.agent_port, ["ping"], 5)["rc"] != 0
    if hung:
        why = "the guest stopped answering" + where_hung(a.monitor) + "; was: " + why
    results[key] = (why, secs, note)
    with open(log_path, "w") as f:
        f.write(log_text)
    print("%s %s (%.1f s)%s" % (label, "PASS" if not why else "FAIL", secs,
                                "" if not why else ": " + why))
    sys.stdout.flush()
    return hung

def guest_ipv6(a):
    """The IPv6 cells' guest side, once: IPv6 on eth0 (the guest boots with it
    off) with V6_GUEST, and rxe0's RoCE v2 GID index of that address (rxe adds
    it when the address appears).  The index, or None."""
    raw = socket.inet_pton(socket.AF_INET6, V6_GUEST).hex()
    want = ":".join(raw[i:i + 4] for i in range(0, 32, 4))   # sysfs's GID form
    r = agent(a.guest_ip, a.agent_port, ["sh", "-c",
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.eth0.disable_ipv6=0; "
        "ip -6 addr replace %s/64 dev eth0 nodad; d=/sys/class/infiniband/rxe0/ports/1; "
        # one grep over the table (1,024 entries: a cat each is minutes under TCG)
        "for t in $(seq 50); do for f in $(grep -lx '%s' $d/gids/* 2>/dev/null); do i=${f##*/}; "
        "[ \"$(cat $d/gid_attrs/types/$i 2>/dev/null)\" = 'RoCE v2' ] "
        "&& echo $i && exit 0; done; sleep 0.2; done; ip -6 addr show dev eth0; exit 1"
        % (V6_GUEST, want)], 60)
    if r.get("rc") != 0:
        print("rxe: guest IPv6 set-up (rc %s):\n%s" % (r.get("rc"), r.get("out", "")),
              file=sys.stderr)
        return None
    return r["out"].strip()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--droce-perf", required=True)
    ap.add_argument("--rdmacm-bin", default="",
                    help="directory of example_rdma_server / example_rdma_client (rdma_cm cells)")
    ap.add_argument("--droce-run", default="",
                    help="build/droce-run (drop-in cells: Debian's binaries on droce)")
    ap.add_argument("--iface", default="vh1")
    ap.add_argument("--droce-ip", default="198.18.0.11")
    ap.add_argument("--host-ip", default="198.18.0.1")
    ap.add_argument("--guest-ip", default="198.18.0.2")
    ap.add_argument("--agent-port", type=int, default=7100)
    ap.add_argument("--tests", default=",".join(PERFTEST + OPTCELLS + tuple(RDMACM) + DROPIN))
    ap.add_argument("--roles", default=",".join(ROLES))
    ap.add_argument("-n", "--iters", type=int, default=200)
    ap.add_argument("--bw-size", type=int, default=65536)
    ap.add_argument("--lat-sizes", default="2,4096")
    ap.add_argument("--timeout", type=int, default=120, help="per side of a cell, seconds")
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--capture", action="store_true")
    ap.add_argument("--extra-guest", default="", help="extra perftest options")
    ap.add_argument("--extra-droce", default="", help="extra droce-perf options")
    ap.add_argument("--state", help="results so far (JSON), for --resume")
    ap.add_argument("--resume", action="store_true", help="rerun only the cells not passed in --state")
    ap.add_argument("--monitor", help="qemu's monitor socket: where the guest hung")
    ap.add_argument("--tcpdump", action="store_true",
                    help="perftest cells: record the TCP exchange (port 18515 on br0) to "
                         "LOGDIR/<cell>.tcp.pcapng with dumpcap")
    a = ap.parse_args()
    os.makedirs(a.logdir, exist_ok=True)

    g = agent(a.guest_ip, a.agent_port, ["sh", "-c",
        "d=/sys/class/infiniband/rxe0/ports/1; for f in $d/gids/*; do i=${f##*/}; "
        "case $(cat $f) in 0000:0000:0000:0000:0000:ffff:*) "
        "[ \"$(cat $d/gid_attrs/types/$i 2>/dev/null)\" = 'RoCE v2' ] && echo $i && exit 0;; esac; done; exit 1"], 20)
    if g["rc"] != 0:
        print("rxe: no RoCE v2 IPv4 GID on rxe0 in the guest", file=sys.stderr)
        return 2
    gidx = g["out"].strip()
    v = agent(a.guest_ip, a.agent_port, ["sh", "-c", "ib_write_bw --version; uname -r; rdma link; "
              "dpkg-query -W rdmacm-utils 2>/dev/null || echo 'no rdmacm-utils'"], 20)
    print("guest: %s" % " | ".join(l for l in v["out"].splitlines() if l.strip()))
    print("guest rxe0 GID index %s (RoCE v2, IPv4); iterations -n %d" % (gidx, a.iters))
    sys.stdout.flush()

    cells, results = variants(a.tests.split(","), [int(x) for x in a.lat_sizes.split(",")], a.bw_size), {}
    prev = {}
    if a.resume and a.state and os.path.exists(a.state):
        with open(a.state) as f:
            prev = {tuple(k.split("|")[:1]) + (int(k.split("|")[1]), k.split("|")[2]): v
                    for k, v in json.load(f).items()}
    def save():
        if a.state:
            with open(a.state, "w") as f:
                json.dump({"%s|%d|%s" % k: v for k, v in results.items()}, f)
    gidx6 = None
    if any(t == "rping6" or split_cell(t)[2] == "v6" for t, _ in cells):
        # this namespace has IPv6 off; glibc's getaddrinfo (AI_ADDRCONFIG, its
        # default) then refuses the IPv6 literal rping names: an address of
        # the bridge's own (V6_HOST, not droce's, the kernel answers for it)
        subprocess.run(["sysctl", "-qw", "net.ipv6.conf.br0.disable_ipv6=0"], check=False)
        subprocess.run(["ip", "-6", "addr", "replace", V6_HOST + "/64", "dev", "br0", "nodad"],
                       check=False)
        gidx6 = guest_ipv6(a)
        if gidx6 is None:
            print("rxe: no RoCE v2 GID for %s on rxe0 in the guest" % V6_GUEST, file=sys.stderr)
            return 2
        print("guest rxe0 GID index %s (RoCE v2, IPv6 %s); droce %s at GID index %s"
              % (gidx6, V6_GUEST, V6_DROCE, V6_DROCE_GIDX))
        sys.stdout.flush()
    for test, size in cells:
        v6 = test == "rping6" or split_cell(test)[2] == "v6"
        for role in a.roles.split(","):
            if test in RDMACM and role not in RDMACM[test]:
                continue
            if test in NVMF and role != "droce-srv":
                continue   # the target is droce's
            old = prev.get((test, size, role))
            if old is not None and not old[0]:
                results[(test, size, role)] = old  # passed before the reboot
                continue
            t0 = time.monotonic()
            tag = "%s-s%d-%s" % (test, size, role)
            cfg = os.path.join(a.logdir, tag + ".ini")
            with open(cfg, "w") as f:
                f.write("[eal]\nargs = --no-huge --no-pci -m 256 --file-prefix=droce-rxe "
                        "--log-level=lib.eal:warning\n[engines]\nmode = colocated\ncount = 1\n"
                        "[port0]\nkind = af_packet\niface = %s\nipv4 = %s\n" % (a.iface, a.droce_ip))
                if v6:
                    f.write("ipv6 = %s\n" % V6_DROCE)
                if a.capture:
                    f.write("capture = %s\n" % os.path.join(a.logdir, tag + ".pcapng"))
            if test in RDMACM or test in DROPIN_ALL or test in NVMF:
                env = dict(os.environ, DROCE_CONFIG=cfg)
                if test in NVMF:
                    gcmd, grc, gout, hcmd, drc, dout, why = run_nvmf(a, env, test)
                elif test in DROPIN_ALL:
                    gcmd, grc, gout, hcmd, drc, dout, why = run_dropin(a, test, size, role, env,
                                                                       gidx)
                else:
                    gcmd, grc, gout, hcmd, drc, dout, why = run_rdmacm(a, test, role, cfg, env)
                if finish_cell(a, results, (test, size, role), t0, why, "%-15s %-9s" % (test, role),
                               os.path.join(a.logdir, tag + ".log"),
                               "# guest: %s\n# rc %d\n%s\n# host: DROCE_CONFIG=%s %s\n# rc %d\n%s" % (
                                   " ".join(gcmd), grc, gout, cfg, " ".join(hcmd), drc, dout)):
                    save()
                    print("rxe: the guest hung during this cell", file=sys.stderr)
                    return 3
                continue
            base, vopts, variant = split_cell(test)
            rcm = variant in ("R", "udR")
            common = ["-n", str(a.iters)] + ([] if base == "atomic_bw" else ["-s", str(size)]) \
                     + vopts
            pt = ["ib_" + base, "-d", "rxe0", "-x", gidx6 if v6 else gidx, "-F"] + common \
                 + a.extra_guest.split()
            dp = [a.droce_perf, base] + common + ["--stats", "--timeout", str(a.timeout // 2)] \
                 + (["-x", V6_DROCE_GIDX] if v6 else []) + a.extra_droce.split()
            # -R: no TCP; the guest's client connects to droce's own address
            srv_addr = a.droce_ip if rcm else a.host_ip
            env = dict(os.environ, DROCE_CONFIG=cfg)
            dump = None
            if a.tcpdump and not rcm:
                dump = subprocess.Popen(["dumpcap", "-q", "-i", "br0", "-f", "tcp port 18515",
                                         "-w", os.path.join(a.logdir, tag + ".tcp.pcapng")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                started.append(dump)
                time.sleep(2)   # dumpcap is capturing before the first SYN
            if role == "guest-srv":
                gres, drc, dout, why = guest_serves(a, pt, dp + [a.guest_ip], "droce-perf", env,
                                                    host_timeout=a.timeout + 30)
            else:
                # TCP: listening on 18515; -R: droce-perf says it waits once its
                # rdma_cm id listens
                gres, drc, dout, why = host_serves(
                    a, dp + ["--server"], "droce-perf --server", env,
                    lambda p, lines: until(p, (lambda: any("Waiting for client" in l for l in lines))
                                           if rcm else (lambda: listening(18515)), 30),
                    lambda: agent(a.guest_ip, a.agent_port, pt + [srv_addr], a.timeout))
            if dump is not None:
                time.sleep(1)
                dump.terminate()
                dump.wait()
            grc, gout = gres.get("rc", -1), gres.get("out", "")
            server_is_guest = role == "guest-srv"
            if not why:
                if grc != 0 or drc != 0:
                    why = "exit: perftest %d, droce-perf %d" % (grc, drc)
                else:
                    # the client always prints a result row; a server may (bw tests)
                    why = sane(gout, base, size, a.iters, not server_is_guest) or \
                          sane(dout, base, size, a.iters, server_is_guest) or \
                          same_figures(gout, dout, base, size, variant)
            if finish_cell(a, results, (test, size, role), t0, why,
                           "%-9s -s %-6d %-9s" % (test, size, role),
                           os.path.join(a.logdir, tag + ".log"),
                           "# guest: %s%s\n# rc %d\n%s\n# host: DROCE_CONFIG=%s %s%s\n# rc %d\n%s" % (
                               " ".join(pt), "" if server_is_guest else " " + srv_addr, grc, gout,
                               cfg, " ".join(dp), " " + a.guest_ip if server_is_guest else " --server",
                               drc, dout)):
                save()
                print("rxe: the guest hung during this cell", file=sys.stderr)
                return 3
    save()

    print()
    roles = a.roles.split(",")
    hdr = "%-38s" % "test" + "".join("%-24s" % r for r in
          ("guest srv/droce cli" if r == "guest-srv" else "droce srv/guest cli" for r in roles))
    print(hdr)
    print("-" * len(hdr))
    ok = True
    for test, size in cells:
        if test in DROPIN_ALL:
            name = "droce-run %s" % test + (" -s %d" % size if test == "ib_write_bw" else
                                            " -S %d" % size if test in DROPIN_RS else "")
        elif test in NVMF:
            name = "nvmf (nvme-rdma + fio --verify)" + (" + figures" if test == "nvmf_figures" else "")
        elif test in RDMACM:
            name = "rdma_cm %s" % test + (" -S 100" if test == "udaddy" else "")
        else:
            name = "ib_%s -s %d%s" % (split_cell(test)[0], size,
                                      "".join(" " + x for x in split_cell(test)[1]))
        line = "%-38s" % name
        for r in roles:
            if (test, size, r) not in results:
                line += "%-24s" % "-"
                continue
            why, secs, note = results[(test, size, r)]
            ok &= not why
            line += "%-24s" % ("%s %5.1fs%s" % ("pass" if not why else "FAIL", secs,
                                              " " + note if note else ""))
        print(line)
    n = len(results)
    bad = sum(1 for w, _, _ in results.values() if w)
    print("\n%d of %d cells passed; logs in %s" % (n - bad, n, a.logdir))
    return 0 if ok else 1

sys.exit(main())
