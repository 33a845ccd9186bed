#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_mcast.py [--host] CAPTURE

Checks the UD multicast frames of a capture of droce0, with tshark's
decoders and scapy's, independently of droce's code.

Without --host (tests/ud_uc/test_mcast.c frames_on_the_wire: joined
239.1.2.3 and ff0e::1234:5678, sent one datagram to each, left both):

- the RoCE datagrams: destination QPN 0xFFFFFF, a DETH, the group's Ethernet
  address (01:00:5e + 23 bits / 33:33 + 32 bits) and IP destination, and the
  ICRC (check_capture.py: tshark, scapy and byte masking agree);
- IGMPv3 (Linux's default): reports to 224.0.0.22 with one record for the
  group, CHANGE_TO_EXCLUDE (4) on join and CHANGE_TO_INCLUDE (3) on leave;
  TTL 1, TOS 0xc0, Router Alert, checksums good (tshark, scapy, summed);
- MLDv2: reports (ICMPv6 143) to ff02::16, hop limit 1, a Hop-by-Hop Router
  Alert, record CHANGE_TO_EXCLUDE (4) on join and CHANGE_TO_INCLUDE (3) on
  leave for the group, checksum good (tshark and scapy).

With --host (membership_as_a_host: joined both, an IGMPv3 and an MLDv2
general query, an MLDv2 one again and an IGMPv2 query, left both): every
state change twice (robustness 2), a MODE_IS_EXCLUDE (2) record per query,
an IGMPv2 report after the v2 query and its leave (0x17 to 224.0.0.2) once.

Exit status 0 all found and right, 1 otherwise, 77 tshark or scapy missing.
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
import roce_oracle as ro  # noqa: E402

G4, G6 = "239.1.2.3", "ff0e::1234:5678"
MAC4, MAC6 = "01:00:5e:01:02:03", "33:33:12:34:56:78"


def inet_sum(b):
    """The 16-bit one's complement sum of @b (0xffff over a message whose
    checksum is right)."""
    if len(b) % 2:
        b += b"\0"
    s = sum((b[i] << 8) | b[i + 1] for i in range(0, len(b), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def main():
    mode = "wire"
    if sys.argv[1] == "--host":
        mode = "host"
        del sys.argv[1]
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
    from scapy.layers.inet6 import IPv6, ICMPv6MLReport2
    del scapy
    errors = []
    seen = {"roce4": 0, "roce6": 0}
    order = []  # the reports, in capture order

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
            if ro.norm(f.get("frame.packet_flags_direction")) == 1:
                continue  # received (a query injected by the test)
            t = ro.norm(f.get("igmp.type"))
            if t == 0x22:
                rt = ro.norm(f.get("igmp.record_type"))
                key = "igmp3_%s" % rt
                want(rt in (2, 3, 4), "frame %d: IGMPv3 record type %s" % (i + 1, rt))
                want(ro.norm(f.get("igmp.num_grp_recs")) == 1, "frame %d: records" % (i + 1))
                want(ro.norm(f.get("igmp.num_src")) == 0, "frame %d: sources" % (i + 1))
                want(f.get("ip.dst") == "224.0.0.22", "frame %d: IGMPv3 ip.dst" % (i + 1))
                want(f.get("eth.dst") == "01:00:5e:00:00:16", "frame %d: IGMPv3 eth.dst" % (i + 1))
            else:
                join = t == 0x16
                key = "igmp2_join" if join else "igmp2_leave"
                want(t in (0x16, 0x17), "frame %d: IGMP type %s" % (i + 1, t))
                want(f.get("ip.dst") == (G4 if join else "224.0.0.2"), "frame %d: IGMP ip.dst" %
                     (i + 1))
                want(f.get("eth.dst") == (MAC4 if join else "01:00:5e:00:00:02"),
                     "frame %d: IGMP eth.dst" % (i + 1))
            seen[key] = seen.get(key, 0) + 1
            order.append(key)
            want(f.get("igmp.maddr") == G4, "frame %d: IGMP group %s" % (i + 1, f.get("igmp.maddr")))
            want(ro.norm(f.get("ip.ttl")) == 1, "frame %d: IGMP TTL" % (i + 1))
            want(ro.norm(f.get("ip.opt.type")) == 0x94, "frame %d: no Router Alert" % (i + 1))
            want(ro.norm(f.get("ip.dsfield")) == 0xC0, "frame %d: TOS %s" % (i + 1, f.get("ip.dsfield")))
            # tshark's checksum status: 0 bad, 1 good, 2 not verified
            want(ro.norm(f.get("igmp.checksum.status")) == 1,
                 "frame %d: IGMP checksum status %s" % (i + 1, f.get("igmp.checksum.status")))
            # scapy: the IP checksum recomputed; the IGMP one summed here
            ip = pkt[IP]
            c_ip = ip.chksum
            del ip.chksum
            r = Ether(bytes(pkt))
            want(r[IP].chksum == c_ip, "frame %d: scapy IP checksum" % (i + 1))
            want(inet_sum(bytes(r[IP].payload)[:r[IP].len - r[IP].ihl * 4]) == 0xFFFF,
                 "frame %d: IGMP checksum (summed)" % (i + 1))
        elif ro.norm(f.get("icmpv6.type")) == 143:
            rt = ro.norm(f.get("icmpv6.mldr.mar.record_type"))
            key = "mld_%s" % rt
            seen[key] = seen.get(key, 0) + 1
            order.append(key)
            want(rt in (2, 3, 4), "frame %d: MLD record type %s" % (i + 1, rt))
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
    if mode == "wire":
        # joined (IGMPv3 CHANGE_TO_EXCLUDE, MLDv2 the same), sent, left
        for k in ("roce4", "roce6", "igmp3_4", "igmp3_3", "mld_4", "mld_3"):
            want(seen.get(k, 0) >= 1, "no %s frame" % k)
    else:
        # test_mcast.c membership_as_a_host: each state change twice (the
        # robustness), an answer per query, IGMPv2 after a v2 query (its
        # leave once), MLDv2 throughout
        expect = {"igmp3_4": 2, "igmp3_2": 1, "igmp2_join": 1, "igmp2_leave": 1,
                  "mld_4": 2, "mld_2": 2, "mld_3": 2}
        for k, n in expect.items():
            want(seen.get(k, 0) == n, "%d %s frame(s), not %d" % (seen.get(k, 0), k, n))
        for k, n in seen.items():
            want(k in expect or n == 0, "unexpected %s frames" % k)
        v4 = [k for k in order if k.startswith("igmp")]
        want(v4 == ["igmp3_4", "igmp3_4", "igmp3_2", "igmp2_join", "igmp2_leave"],
             "IGMP in this order: %s" % v4)
        v6 = [k for k in order if k.startswith("mld")]
        want(v6 == ["mld_4", "mld_4", "mld_2", "mld_2", "mld_3", "mld_3"],
             "MLD in this order: %s" % v6)
    errors = [e for e in errors if e]
    if mode == "wire":
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
