#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_raw.py [--min N] [--bad N] [-q] CAPTURE

Checks the IPv4 header checksum and the TCP / UDP checksum (IPv4 and IPv6)
of every TCP or UDP frame in a capture that is not RoCEv2 (UDP 4791), with
two independent decoders: tshark (its checksum validation turned on) and
scapy (each checksum recomputed from the frame's bytes).  Prints one line
per frame (protocol, lengths, IP id, TCP sequence number and flags).

Exit status: 0 when both decoders agree on every frame, at least --min
frames were checked and exactly --bad of them have a wrong checksum;
1 otherwise; 2 bad input; 77 tshark or scapy missing.
"""

import argparse
import shutil
import subprocess
import sys

try:
    from scapy.all import IP, IPv6, TCP, UDP, Ether, rdpcap  # noqa: F401
except ImportError:
    sys.exit(77)


def scapy_ok(pkt):
    """(checked, good) by recomputing the checksums with scapy."""
    if IP in pkt:
        l3 = pkt[IP]
    elif IPv6 in pkt:
        l3 = pkt[IPv6]
    else:
        return False, False
    l4 = TCP if TCP in pkt else UDP if UDP in pkt else None
    if l4 is None or (l4 is UDP and 4791 in (pkt[UDP].dport,)):
        return False, False
    good = True
    if IP in pkt:
        ip = pkt[IP].copy()
        want = ip.chksum
        del ip.chksum
        good &= IP(bytes(ip)).chksum == want
    seg = pkt[l4].copy()
    want = seg.chksum
    del seg.chksum
    rebuilt = (l3.copy())
    rebuilt[l4].chksum = None
    good &= rebuilt.__class__(bytes(rebuilt))[l4].chksum == want
    return True, good


def tshark_status(path):
    """frame number -> True (all good) / False (one bad) for TCP / UDP frames."""
    out = subprocess.run(
        ["tshark", "-r", path, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
         "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=;",
         "-e", "frame.number", "-e", "ip.checksum.status", "-e", "tcp.checksum.status",
         "-e", "udp.checksum.status", "-e", "udp.dstport"],
        capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        num, ips, tcps, udps, dport = (line.split(";") + [""] * 5)[:5]
        if not (tcps or udps) or dport == "4791":
            continue
        # 0 bad, 1 good, 2 unverified (a checksum tshark did not check counts as bad)
        vals = [v for v in (ips, tcps, udps) if v]
        res[int(num)] = all(v == "1" for v in vals)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=int, default=1)
    ap.add_argument("--bad", type=int, default=0)
    ap.add_argument("-q", "--quiet", action="store_true", help="print failing frames only")
    ap.add_argument("capture")
    a = ap.parse_args()
    if shutil.which("tshark") is None:
        return 77
    try:
        pkts = rdpcap(a.capture)
        ts = tshark_status(a.capture)
    except Exception as e:  # noqa: BLE001
        print(f"check_raw: {e}", file=sys.stderr)
        return 2
    checked = bad = disagree = 0
    for i, p in enumerate(pkts, 1):
        done, good = scapy_ok(p)
        if not done:
            continue
        checked += 1
        t = ts.get(i)
        desc = f"frame {i}: {len(p)} B"
        if IP in p:
            desc += f" ip id {p[IP].id} len {p[IP].len}"
        if TCP in p:
            desc += f" tcp seq {p[TCP].seq} flags {p[TCP].flags}"
        elif UDP in p:
            desc += f" udp {p[UDP].sport}->{p[UDP].dport}"
        if t is None or t != good:
            disagree += 1
            desc += f"  DISAGREE scapy={good} tshark={t}"
        elif not good:
            bad += 1
            desc += "  bad checksum"
        if not a.quiet or "DISAGREE" in desc or "bad" in desc:
            print(desc)
    print(f"check_raw: {checked} frames, {bad} with bad checksums, {disagree} disagreements")
    if checked < a.min or bad != a.bad or disagree:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
