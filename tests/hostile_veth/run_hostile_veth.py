#!/usr/bin/python3
"""Hostile peer over a real kernel link (issue 12 sec. 2): scapy against droce.

Makes a network namespace with a veth pair (hv0 <-> hv1), runs hv_target (droce
on an af_packet port on hv0, 198.18.3.1; RC QPs in RTS towards 198.18.3.2, QPNs
0x100 + i, expected PSN 0x1000; a UD QP) and, from hv1 (198.18.3.2), sends
hand-made RoCEv2 frames with scapy: a good WRITE (the control: ACKed, bytes
placed), a forged rkey, VA + length wrapping 2^64, a PSN 2^22 ahead, a bad
P_Key, a wrong Q_Key, a truncated frame and a bad ICRC.  For each it asserts
droce's exact answer on the wire (captured on hv1: the ACK, the NAK with its
syndrome and PSN, or nothing), the counter that moved (engine / port stats) and
that the MR (or, for the control, everything but the bytes written) and the
guard memory around it are unchanged.

Root only (exit 77 = skipped otherwise).  Usage: run_hostile_veth.py BUILD_DIR
"""
import os
import re
import shutil
import subprocess
import struct
import sys
import time

NS = os.environ.get("DROCE_HV_NS") or "droce-hv%d" % os.getpid()  # inner: the outer's
DROCE_IP, PEER_IP = "198.18.3.1", "198.18.3.2"
DROCE_MAC = "02:00:c6:12:03:01"
RQ_PSN = 0x1000
UD_QKEY = 0x11111111


def skip(why):
    print("1..0 # SKIP " + why)
    sys.exit(77)


def outer(build):
    if os.geteuid() != 0:
        skip("needs root (network namespace, veth)")
    if not shutil.which("ip"):
        skip("no ip(8)")
    try:
        import scapy  # noqa: F401
    except ImportError:
        skip("no python3-scapy")
    run = lambda *a: subprocess.run(a, check=True)
    run("ip", "netns", "add", NS)
    try:
        run("ip", "-n", NS, "link", "add", "hv0", "type", "veth", "peer", "name", "hv1")
        for dev in ("hv0", "hv1"):
            subprocess.run(["ip", "netns", "exec", NS, "sysctl", "-qw",
                            "net.ipv6.conf.%s.disable_ipv6=1" % dev])
            run("ip", "-n", NS, "link", "set", dev, "up")
        run("ip", "-n", NS, "addr", "add", PEER_IP + "/24", "dev", "hv1")
        rc = subprocess.run(["ip", "netns", "exec", NS, sys.executable, __file__, "--inner",
                             build], env=dict(os.environ, DROCE_HV_NS=NS)).returncode
    finally:
        subprocess.run(["ip", "netns", "del", NS])
        if os.path.exists("/tmp/%s.ini" % NS):
            os.unlink("/tmp/%s.ini" % NS)
    sys.exit(rc)


class Target:
    def __init__(self, build):
        cfg = os.path.join("/tmp", NS + ".ini")
        with open(cfg, "w") as f:
            f.write("[eal]\nargs = --no-huge --no-pci -m 256 --log-level=lib.eal:warning\n"
                    "[engines]\nmode = colocated\ncount = 1\n"
                    "[port0]\nkind = af_packet\niface = hv0\nmac = %s\nipv4 = %s\nmtu = 1500\n"
                    % (DROCE_MAC, DROCE_IP))
        env = dict(os.environ, DROCE_CONFIG=cfg)
        self.p = subprocess.Popen([os.path.join(build, "tests/hostile_veth/hv_target")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                  text=True)
        line = self.p.stdout.readline()
        m = re.match(r"ready rc=([\d,]+) ud=(\d+) rkey=(\d+) va=(\d+) len=(\d+)", line)
        if not m:
            raise SystemExit("hv_target did not start: %r" % line)
        self.rc = [int(x) for x in m.group(1).split(",")]
        self.ud, self.rkey, self.va, self.len = (int(m.group(i)) for i in range(2, 6))

    def stats(self):
        self.p.stdin.write("stats\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().split()
        assert line and line[0] == "stats", line
        return {k: int(v) for k, v in (kv.split("=", 1) for kv in line[1:])}

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        return self.p.wait(10)


def inner(build):
    from scapy.all import Ether, IP, UDP, Raw, AsyncSniffer, sendp, get_if_hwaddr
    from scapy.contrib.roce import BTH, AETH, opcode

    t = Target(build)
    peer_mac = get_if_hwaddr("hv1")
    results = []

    def frame(op, dqpn, psn, hdrs=b"", payload=b"", pkey=0xffff, ackreq=True, tr="RC"):
        pad = (4 - len(payload) % 4) % 4
        return (Ether(src=peer_mac, dst=DROCE_MAC) / IP(src=PEER_IP, dst=DROCE_IP, flags="DF") /
                UDP(sport=49152, dport=4791, chksum=0) /
                BTH(opcode=opcode(tr, op)[0], dqpn=dqpn, psn=psn, pkey=pkey, ackreq=ackreq,
                    padcount=pad) /
                Raw(hdrs + payload + b"\0" * pad))

    def reth(va, rkey, ln):
        return struct.pack("!QII", va & (2**64 - 1), rkey, ln)

    def exchange(pkt, raw=None, wait=0.5):
        """Sends one frame from hv1; returns droce's RoCE replies seen on hv1."""
        sn = AsyncSniffer(iface="hv1", filter="udp dst port 4791 and src host " + DROCE_IP)
        sn.start()
        time.sleep(0.2)
        sendp(raw if raw is not None else pkt, iface="hv1", verbose=False)
        time.sleep(wait)
        got = sn.stop() or []
        out = []
        for r in got:
            if BTH in r:
                b = r[BTH]
                syn = r[AETH].syndrome if AETH in r else None
                out.append((b.opcode, b.dqpn, b.psn, syn))
        return out

    def check(name, cond, detail):
        results.append((name, bool(cond), detail))

    # make droce learn hv1's MAC (it answers to 198.18.3.2 through ARP)
    time.sleep(0.5)
    s0 = t.stats()
    data = bytes(range(64))

    # 0. the control: a good WRITE ONLY, ACKed, bytes placed
    rep = exchange(frame("RDMA_WRITE_ONLY", t.rc[0], RQ_PSN, reth(t.va, t.rkey, 64), data),
                   wait=1.5)
    s1 = t.stats()
    check("good WRITE ACKed", rep == [(0x11, 0x100, RQ_PSN, 0x1f)] or
          (len(rep) == 1 and rep[0][0] == 0x11 and rep[0][2] == RQ_PSN and rep[0][3] >> 5 == 0),
          rep)
    check("good WRITE placed", s1["mr_sum"] != s0["mr_sum"] and s1["guard_ok"] == 1, "")
    base = s1

    def no_change(name, s):
        check(name + ": MR and guards unchanged",
              s["mr_sum"] == base["mr_sum"] and s["guard_ok"] == 1, "")

    # 1. forged rkey: NAK remote access error (syndrome 0x62) at its PSN, QP to ERR
    rep = exchange(frame("RDMA_WRITE_ONLY", t.rc[1], RQ_PSN, reth(t.va, t.rkey ^ 0x5a5a00, 64),
                         data))
    s = t.stats()
    check("forged rkey NAKed", rep == [(0x11, 0x101, RQ_PSN, 0x62)], rep)
    check("forged rkey: QP in ERR", s["qp1_state"] == 6, s["qp1_state"])
    no_change("forged rkey", s)

    # 2. VA + length wrapping 2^64: NAK remote access error
    rep = exchange(frame("RDMA_WRITE_ONLY", t.rc[2], RQ_PSN, reth(2**64 - 16, t.rkey, 64), data))
    s = t.stats()
    check("VA+len wrap NAKed", rep == [(0x11, 0x102, RQ_PSN, 0x62)], rep)
    no_change("VA+len wrap", s)

    # 3. PSN 2^22 ahead: at most one sequence NAK naming the expected PSN, nothing placed
    rep = exchange(frame("RDMA_WRITE_ONLY", t.rc[3], RQ_PSN + (1 << 22), reth(t.va, t.rkey, 64),
                         data))
    s = t.stats()
    check("PSN far ahead: a sequence NAK or nothing",
          rep in ([], [(0x11, 0x103, RQ_PSN, 0x60)]), rep)
    check("PSN far ahead: QP still RTS", s["qp3_state"] == 3, s["qp3_state"])
    no_change("PSN far ahead", s)

    # 4. bad P_Key: dropped, counted, no answer
    before = t.stats()
    rep = exchange(frame("RDMA_WRITE_ONLY", t.rc[4], RQ_PSN, reth(t.va, t.rkey, 64), data,
                         pkey=0x1234))
    s = t.stats()
    check("bad P_Key: no answer", rep == [], rep)
    check("bad P_Key: drop_pkey counted",
          s.get("engine.drop_pkey", 0) - before.get("engine.drop_pkey", 0) == 1,
          {k: v for k, v in s.items() if "drop" in k})
    no_change("bad P_Key", s)

    # 5. wrong Q_Key on a UD SEND: dropped, counted, nothing received
    before = s
    deth = struct.pack("!II", 0x22222222, 0x42)
    rep = exchange(frame("SEND_ONLY", t.ud, 0, deth, data, ackreq=False, tr="UD"))
    s = t.stats()
    check("wrong Q_Key: no answer, not received", rep == [] and s["ud_recvs"] == before["ud_recvs"],
          (rep, s["ud_recvs"]))
    check("wrong Q_Key: drop_qkey counted",
          s.get("engine.drop_qkey", 0) - before.get("engine.drop_qkey", 0) == 1,
          {k: v for k, v in s.items() if "drop" in k})
    # and the right Q_Key is received (the case above failed on the key only)
    deth = struct.pack("!II", UD_QKEY, 0x42)
    exchange(frame("SEND_ONLY", t.ud, 1, deth, data, ackreq=False, tr="UD"))
    s = t.stats()
    check("right Q_Key received", s["ud_recvs"] == before["ud_recvs"] + 1, s["ud_recvs"])

    # 6. truncated frame (cut inside the RETH): dropped, counted, no answer
    before = s
    good = bytes(frame("RDMA_WRITE_ONLY", t.rc[5], RQ_PSN, reth(t.va, t.rkey, 64), data))
    rep = exchange(None, raw=Ether(good[:14 + 20 + 8 + 12 + 6]))
    s = t.stats()
    drops = lambda st: sum(v for k, v in st.items() if k.startswith("engine.drop_"))
    check("truncated: no answer", rep == [], rep)
    check("truncated: a drop counted", drops(s) - drops(before) == 1,
          {k: v for k, v in s.items() if "drop" in k})
    check("truncated: QP still RTS", s["qp5_state"] == 3, s["qp5_state"])
    no_change("truncated", s)

    # 7. bad ICRC: dropped as ICRC, no answer
    before = s
    bad = bytearray(good)
    bad[-1] ^= 0xff
    rep = exchange(None, raw=Ether(bytes(bad)))
    s = t.stats()
    check("bad ICRC: no answer", rep == [], rep)
    check("bad ICRC: drop_icrc counted",
          s.get("engine.drop_icrc", 0) - before.get("engine.drop_icrc", 0) == 1,
          {k: v for k, v in s.items() if "drop" in k})
    no_change("bad ICRC", s)

    rc = t.quit()
    check("hv_target exits cleanly", rc == 0, rc)
    print("1..%d" % len(results))
    ok = True
    for i, (name, good_, detail) in enumerate(results, 1):
        print("%s %d - %s%s" % ("ok" if good_ else "not ok", i, name,
                                "" if good_ else " # got %r" % (detail,)))
        ok &= good_
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--inner":
        sys.exit(inner(sys.argv[2]))
    outer(sys.argv[1] if len(sys.argv) > 1 else "build")
