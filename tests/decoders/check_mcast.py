#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_mcast.py CAPTURE

Checks the UD multicast frames of a capture of the port that joined groups
239.1.2.3 and ff0e::1234:5678, sent one datagram to each and left both
(tests/ud_uc/test_mcast.c frames_on_the_wire), with tshark's decoders and
scapy's, independently of droce's code:

- the RoCE datagrams: destination QPN 0xFFFFFF, a DETH, the group's Ethernet
  address (01:00:5e + 23 bits / 33:33 + 32 bits) and IP destination, and the
  ICRC (check_capture.py: tshark, scapy and byte masking agree);
- IGMPv2: a membership report (0x16) to the group and a leave (0x17) to
  224.0.0.2, TTL 1, Router Alert, checksum good (tshark and scapy);
- MLDv2: reports (ICMPv6 143) to ff02::16, hop limit 1, a Hop-by-Hop Router
  Alert, record CHANGE_TO_EXCLUDE (4) on join and CHANGE_TO_INCLUDE (3) on
  leave for the group, checksum good (tshark and scapy).

Exit status 0 all found and right, 1 otherwise, 77 tshark or scapy missing.
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
import roce_oracle as ro  # noqa: E402

G4, G6 = "239.1.2.3", "ff0e::1234:5678"
MAC4, MAC6 = "01:00:5e:01:02:03", "33:33:12:34:56:78"


def main():
    cap = sys.argv[1]
    try:
        frames = ro.tshark_decode(cap)
        raw = ro.read_frames(cap)
        scapy = ro._scapy()
    except ro.ToolMissing as e:
        print("skip: %s" % e)
        return 77
    from scapy.layers.l2 import Ether
    from scapy.layers.inet import IP
    from scapy.contrib.igmp import IGMP
    from scapy.layers.inet6 import IPv6, ICMPv6MLReport2
    del scapy
    errors = []
    seen = {"roce4": 0, "roce6": 0, "igmp_join": 0, "igmp_leave": 0, "mld_join": 0,
            "mld_leave": 0}

    def want(cond, what):
        if not cond:
            errors.append(what)

    for i, (f, b) in enumerate(zip(frames, raw)):
        protos = f.protocols()
        pkt = Ether(b)
        if "infiniband" in protos:
            dqp = ro.norm(f.get("infiniband.bth.destqp"))
            if dqp != 0xFFFFFF:
                continue
            v6 = "ipv6" in protos
            key = "roce6" if v6 else "roce4"
            seen[key] += 1
            want(f.get("eth.dst") == (MAC6 if v6 else MAC4), "frame %d: eth.dst %s" %
                 (i + 1, f.get("eth.dst")))
            want(ro.norm(f.get("ipv6.dst" if v6 else "ip.dst")) == (G6 if v6 else G4),
                 "frame %d: IP destination" % (i + 1))
            want(ro.norm(f.get("infiniband.deth.q_key")) == 0x01234567,
                 "frame %d: Q_Key %s" % (i + 1, f.get("infiniband.deth.q_key")))
            want(pkt.dst == (MAC6 if v6 else MAC4), "frame %d: scapy eth.dst" % (i + 1))
            want((pkt[IPv6].dst if v6 else pkt[IP].dst) == (G6 if v6 else G4),
                 "frame %d: scapy IP destination" % (i + 1))
        elif "igmp" in protos:
            t = ro.norm(f.get("igmp.type"))
            join = t == 0x16
            seen["igmp_join" if join else "igmp_leave"] += 1
            want(t in (0x16, 0x17), "frame %d: IGMP type %s" % (i + 1, t))
            want(f.get("igmp.maddr") == G4, "frame %d: IGMP group" % (i + 1))
            want(f.get("ip.dst") == (G4 if join else "224.0.0.2"), "frame %d: IGMP ip.dst" %
                 (i + 1))
            want(f.get("eth.dst") == (MAC4 if join else "01:00:5e:00:00:02"),
                 "frame %d: IGMP eth.dst" % (i + 1))
            want(ro.norm(f.get("ip.ttl")) == 1, "frame %d: IGMP TTL" % (i + 1))
            want(ro.norm(f.get("ip.opt.type")) == 0x94, "frame %d: no Router Alert" % (i + 1))
            # tshark's checksum status: 0 bad, 1 good, 2 not verified
            want(ro.norm(f.get("igmp.checksum.status")) == 1,
                 "frame %d: IGMP checksum status %s" % (i + 1, f.get("igmp.checksum.status")))
            # scapy: recompute both checksums and compare
            ip = pkt[IP]
            ig = ip[IGMP]
            c_ip, c_ig = ip.chksum, ig.chksum
            del ip.chksum
            del ig.chksum
            r = Ether(bytes(pkt))
            want(r[IP].chksum == c_ip, "frame %d: scapy IP checksum" % (i + 1))
            want(r[IGMP].chksum == c_ig, "frame %d: scapy IGMP checksum" % (i + 1))
            want(r[IGMP].gaddr == G4, "frame %d: scapy IGMP group" % (i + 1))
        elif ro.norm(f.get("icmpv6.type")) == 143:
            rt = ro.norm(f.get("icmpv6.mldr.mar.record_type"))
            seen["mld_join" if rt == 4 else "mld_leave"] += 1
            want(rt in (3, 4), "frame %d: MLD record type %s" % (i + 1, rt))
            want(ro.norm(f.get("icmpv6.mldr.mar.multicast_address")) == G6,
                 "frame %d: MLD group" % (i + 1))
            want(ro.norm(f.get("ipv6.dst")) == "ff02::16", "frame %d: MLD ipv6.dst" % (i + 1))
            want(f.get("eth.dst") == "33:33:00:00:00:16", "frame %d: MLD eth.dst" % (i + 1))
            want(ro.norm(f.get("ipv6.hlim")) == 1, "frame %d: MLD hop limit" % (i + 1))
            want(ro.norm(f.get("icmpv6.checksum.status")) == 1,
                 "frame %d: MLD checksum status %s" % (i + 1, f.get("icmpv6.checksum.status")))
            rep = pkt[ICMPv6MLReport2]
            c = rep.cksum
            del rep.cksum
            r = Ether(bytes(pkt))
            want(r[ICMPv6MLReport2].cksum == c, "frame %d: scapy MLD checksum" % (i + 1))
    for k, n in seen.items():
        want(n >= 1, "no %s frame" % k)
    errors = [e for e in errors if e]
    # the ICRC of every RoCE frame, three ways (the suite's decoder check)
    here = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run([sys.executable, os.path.join(here, "check_capture.py"),
                          "--min-roce", "2", "-q", cap])
    if res.returncode == 77:
        return 77
    want(res.returncode == 0, "check_capture.py: exit %d" % res.returncode)
    errors = [e for e in errors if e]
    print("frames: %s" % seen)
    for e in errors:
        print("FAIL: %s" % e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
