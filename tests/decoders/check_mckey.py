#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_mckey.py --group G --count N --sender CAP,IP --receiver CAP,IP
                  [--sendonly] [--igmp 2|3]

Checks the two port captures of a run of Debian's mckey between two droce
processes (tests/dropin/run_case.sh, cells mckey*), with tshark's decoders,
independently of droce's code:

- the sender's port sent N RoCEv2 datagrams to the group: Ethernet
  destination 01:00:5e + the group's low 23 bits, IPv4 source the sender's
  address and destination the group (rdma_cm's MGID ::ffff:G), UDP 4791,
  UD SEND_ONLY with immediate, destination QPN 0xFFFFFF, Q_Key 0x01234567
  (RDMA_UDP_QKEY), one source QPN; the receiver's port received the same N;
- a full member sender (no --sendonly) received its own N back (the local
  loop, as rxe and ConnectX do), a send-only one none;
- membership: each full member's port sent an IGMP report for the group
  before the first datagram and a leave after the last (IGMPv3: to
  224.0.0.22, one record CHANGE_TO_EXCLUDE / CHANGE_TO_INCLUDE for the
  group; IGMPv2: report to the group, leave to 224.0.0.2), TTL 1, the Router
  Alert option, checksums good; a send-only sender none;
- the ICRC of every RoCE frame (check_capture.py: tshark, scapy, masking).

Exit status 0 all right, 1 otherwise, 77 tshark or scapy missing.
"""

import argparse
import os
import subprocess
import sys

sys.dont_write_bytecode = True
import roce_oracle as ro  # noqa: E402

IN, OUT = 1, 2  # pcapng EPB direction flags
UD_SEND_ONLY_IMM = 0x65
QKEY = 0x01234567


def group_mac(g):
    b = [int(x) for x in g.split(".")]
    return "01:00:5e:%02x:%02x:%02x" % (b[1] & 0x7F, b[2], b[3])


def igmp_of(f):
    """(kind, group) of an IGMP frame: kind 'join' or 'leave', any version;
    (None, None) for anything else."""
    if "igmp" not in f.protocols():
        return None, None
    t = ro.norm(f.get("igmp.type"))
    if t == 0x22:  # IGMPv3 report: one record per group
        rt = ro.norm(f.get("igmp.record_type"))
        kind = {4: "join", 3: "leave", 2: "current"}.get(rt)
        return kind, f.get("igmp.maddr")
    if t in (0x16, 0x12):
        return "join", f.get("igmp.maddr")
    if t == 0x17:
        return "leave", f.get("igmp.maddr")
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--sender", required=True)
    ap.add_argument("--receiver", required=True)
    ap.add_argument("--sendonly", action="store_true")
    ap.add_argument("--igmp", type=int, default=3)
    a = ap.parse_args()
    scap, sip = a.sender.split(",")
    rcap, rip = a.receiver.split(",")
    errors = []

    def want(cond, what):
        if not cond:
            errors.append(what)

    try:
        caps = {"sender": ro.tshark_decode(scap), "receiver": ro.tshark_decode(rcap)}
        ro._scapy()
    except ro.ToolMissing as e:
        print("skip: %s" % e)
        return 77
    gmac = group_mac(a.group)
    for side, frames in caps.items():
        full = side == "receiver" or not a.sendonly
        roce = {IN: [], OUT: []}
        joins, leaves = [], []
        srcqp = set()
        for i, f in enumerate(frames):
            d = ro.norm(f.get("frame.packet_flags_direction"))
            where = "%s frame %d" % (side, i + 1)
            protos = f.protocols()
            if "infiniband" in protos:
                if ro.norm(f.get("infiniband.bth.destqp")) != 0xFFFFFF:
                    continue
                roce.setdefault(d, []).append(i)
                want(f.get("eth.dst") == gmac, "%s: eth.dst %s" % (where, f.get("eth.dst")))
                want(f.get("ip.dst") == a.group, "%s: ip.dst %s" % (where, f.get("ip.dst")))
                want(f.get("ip.src") == sip, "%s: ip.src %s, not the sender's" %
                     (where, f.get("ip.src")))
                want(ro.norm(f.get("udp.dstport")) == 4791, "%s: UDP port" % where)
                want(ro.norm(f.get("infiniband.bth.opcode")) == UD_SEND_ONLY_IMM,
                     "%s: opcode %s" % (where, f.get("infiniband.bth.opcode")))
                want(ro.norm(f.get("infiniband.deth.q_key")) == QKEY,
                     "%s: Q_Key %s" % (where, f.get("infiniband.deth.q_key")))
                srcqp.add(ro.norm(f.get("infiniband.deth.srcqp")))
                continue
            kind, grp = igmp_of(f)
            if kind is None:
                continue
            if d != OUT:
                continue  # the other side's reports, received
            want(grp == a.group, "%s: IGMP group %s" % (where, grp))
            want(ro.norm(f.get("ip.ttl")) == 1, "%s: IGMP TTL" % where)
            want(ro.norm(f.get("ip.opt.type")) == 0x94, "%s: no Router Alert" % where)
            want(ro.norm(f.get("igmp.checksum.status")) == 1, "%s: IGMP checksum" % where)
            want(ro.norm(f.get("ip.checksum.status")) in (1, 2, None), "%s: IP checksum" % where)
            if a.igmp == 3:
                want(ro.norm(f.get("igmp.type")) == 0x22, "%s: not IGMPv3 (type %s)" %
                     (where, f.get("igmp.type")))
                want(f.get("ip.dst") == "224.0.0.22", "%s: IGMPv3 to %s" % (where, f.get("ip.dst")))
                want(f.get("eth.dst") == "01:00:5e:00:00:16", "%s: IGMPv3 eth.dst" % where)
            else:
                want(f.get("ip.dst") == (a.group if kind == "join" else "224.0.0.2"),
                     "%s: IGMPv2 ip.dst %s" % (where, f.get("ip.dst")))
            (joins if kind == "join" else leaves).append(i)
        sent = roce[OUT] if side == "sender" else roce[IN]
        want(len(sent) == a.count, "%s: %d group datagrams %s, not %d" %
             (side, len(sent), "sent" if side == "sender" else "received", a.count))
        if side == "sender":
            want(len(roce[IN]) == (a.count if full else 0),
                 "sender: %d of its own datagrams looped back, not %d" %
                 (len(roce[IN]), a.count if full else 0))
        else:
            want(len(roce[OUT]) == 0, "receiver: it sent %d group datagrams" % len(roce[OUT]))
        want(len(srcqp) == 1, "%s: source QPNs %s" % (side, sorted(srcqp)))
        if full:
            want(joins and (not sent or joins[0] < sent[0]),
                 "%s: no membership report before the first datagram" % side)
            want(leaves and (not sent or leaves[-1] > sent[-1]),
                 "%s: no leave after the last datagram" % side)
        else:
            want(not joins and not leaves, "%s: a send-only sender sent IGMP" % side)
        print("%s: %d datagrams out, %d in, IGMP %d report(s) %d leave(s)" %
              (side, len(roce[OUT]), len(roce[IN]), len(joins), len(leaves)))
    here = os.path.dirname(os.path.abspath(__file__))
    for cap in (scap, rcap):
        res = subprocess.run([sys.executable, os.path.join(here, "check_capture.py"),
                              "--min-roce", str(a.count), "-q", cap])
        if res.returncode == 77:
            return 77
        want(res.returncode == 0, "check_capture.py %s: exit %d" % (cap, res.returncode))
    for e in errors:
        print("FAIL: %s" % e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
