#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_cnp.py [options] CAPTURE

Checks the congestion notification frames of a droce capture with scapy
against the RoCEv2 CNP layout (IBTA Annex A17, NVIDIA's "RoCEv2 CNP Packet
Format Example", scapy.contrib.roce's cnp(); see
/work/shared/reference/congestion-control.md section 2.1):

  Eth [VLAN] | IPv4 (total length 60) or IPv6 (payload 40) | UDP dport 4791 |
  BTH: opcode 0x81, SE=M=PadCnt=TVer=0, P_Key 0xFFFF, FECN 0, BECN 1,
       Resv6 0, DestQP, A=0, PSN 0 | 16 reserved zero bytes | ICRC

plus the IP DSCP (--dscp, default 48), ECN Not-ECT, and, on a VLAN, the PCP
(--pcp, default 6).  scapy's CNPPadding must see exactly the 16 reserved
bytes.  Every other RoCE frame is a data frame: its ECN field must be
--data-ecn (default 2, ECT(0)) in the direction it was sent (before any
marking: frames with ECN 3 are counted as CE-marked, which --data-ecn allows
when it is 1 or 2).  The ICRC and the tshark/scapy agreement are
check_capture.py's.

Options:
  --cnps N        exactly N CNPs in the capture
  --dqpn QPN      every CNP's DestQP (hex or decimal)
  --ce N          exactly N CE-marked data frames
  --dscp N  --pcp N  --data-ecn N  --data-dscp N  --data-pcp N (the data
                  frames' DSCP and VLAN priority; with --data-pcp every frame
                  must be tagged)
  --json          one JSON object

Exit status: 0 all checks pass, 1 a check failed, 2 bad input, 77 scapy missing.
"""

import argparse
import json
import sys

sys.dont_write_bytecode = True
import roce_oracle as ro  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--cnps", type=int)
    ap.add_argument("--dqpn", type=lambda s: int(s, 0))
    ap.add_argument("--ce", type=int)
    ap.add_argument("--dscp", type=int, default=48)
    ap.add_argument("--pcp", type=int, default=6)
    ap.add_argument("--data-ecn", type=int, default=2)
    ap.add_argument("--data-dscp", type=int)
    ap.add_argument("--data-pcp", type=int)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv[1:])

    try:
        frames = ro.read_frames(args.capture)
        ro._scapy()
        from scapy.contrib.roce import BTH, CNPPadding
        from scapy.layers.l2 import Dot1Q
        from scapy.layers.inet import IP, UDP
        from scapy.layers.inet6 import IPv6
    except ro.ToolMissing as e:
        print("check_cnp: SKIP: %s" % e)
        return ro.EXIT_TOOL_MISSING
    except (OSError, ValueError) as e:
        print("check_cnp: %s: %s" % (args.capture, e))
        return 2

    problems = []
    cnps = ce = data = 0
    for n, frame in enumerate(frames, 1):
        info = ro.L3Info(frame)
        if not info.is_roce():
            continue
        pkt = ro.scapy_dissect(frame, info)
        bth = ro.scapy_bth(pkt)
        if bth is None:
            problems.append("frame %d: scapy found no BTH" % n)
            continue
        if IP in pkt:
            tos = pkt[IP].tos
        else:
            tos = pkt[IPv6].tc
        if bth.opcode != ro.CNP_OPCODE:
            data += 1
            ecn = tos & 3
            if args.data_pcp is not None and (Dot1Q not in pkt or pkt[Dot1Q].prio != args.data_pcp):
                problems.append("frame %d: data frame VLAN priority %s, want %d"
                                % (n, pkt[Dot1Q].prio if Dot1Q in pkt else "untagged", args.data_pcp))
            if args.data_dscp is not None and tos >> 2 != args.data_dscp:
                problems.append("frame %d: data frame DSCP %d, want %d" % (n, tos >> 2, args.data_dscp))
            if ecn == 3 and args.data_ecn in (1, 2):
                ce += 1
            elif ecn != args.data_ecn:
                problems.append("frame %d: data frame ECN %d, want %d" % (n, ecn, args.data_ecn))
            continue
        cnps += 1
        want = {"opcode": 0x81, "solicited": 0, "migreq": 0, "padcount": 0, "version": 0,
                "pkey": 0xFFFF, "fecn": 0, "becn": 1, "resv6": 0, "ackreq": 0, "psn": 0}
        for k, v in want.items():
            if getattr(bth, k) != v:
                problems.append("frame %d: CNP BTH %s = %#x, want %#x" % (n, k, getattr(bth, k), v))
        if args.dqpn is not None and bth.dqpn != args.dqpn:
            problems.append("frame %d: CNP DestQP %#x, want %#x" % (n, bth.dqpn, args.dqpn))
        if CNPPadding not in pkt:
            problems.append("frame %d: scapy sees no CNPPadding after the BTH" % n)
        body = frame[info.l4 + 8 + 12:info.end - 4]
        if body != bytes(16):
            problems.append("frame %d: CNP reserved bytes %s, want 16 zero bytes" % (n, body.hex()))
        if IP in pkt and pkt[IP].len != 60:
            problems.append("frame %d: CNP IPv4 total length %d, want 60" % (n, pkt[IP].len))
        if IPv6 in pkt and pkt[IPv6].plen != 40:
            problems.append("frame %d: CNP IPv6 payload length %d, want 40" % (n, pkt[IPv6].plen))
        if pkt[UDP].dport != 4791:
            problems.append("frame %d: CNP UDP port %d" % (n, pkt[UDP].dport))
        if tos >> 2 != args.dscp or tos & 3 != 0:
            problems.append("frame %d: CNP traffic class %#x, want DSCP %d Not-ECT" % (n, tos, args.dscp))
        if args.data_pcp is not None and Dot1Q not in pkt:
            problems.append("frame %d: CNP untagged on a VLAN" % n)
        if Dot1Q in pkt and pkt[Dot1Q].prio != args.pcp:
            problems.append("frame %d: CNP VLAN priority %d, want %d" % (n, pkt[Dot1Q].prio, args.pcp))
    if args.cnps is not None and cnps != args.cnps:
        problems.append("%d CNPs, want %d" % (cnps, args.cnps))
    if args.ce is not None and ce != args.ce:
        problems.append("%d CE-marked data frames, want %d" % (ce, args.ce))
    if args.json:
        print(json.dumps({"cnps": cnps, "ce": ce, "data": data, "problems": problems}))
    else:
        for p in problems:
            print("check_cnp: %s" % p)
        print("check_cnp: %s: %d RoCE data frames (%d CE), %d CNPs, %d problems"
              % (args.capture, data, ce, cnps, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
