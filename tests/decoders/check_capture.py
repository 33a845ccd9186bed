#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_capture.py [options] CAPTURE

Decodes a droce capture (pcap or pcapng, Ethernet) with tshark and scapy and
reports, frame by frame, whether the independent decoders agree:

- tshark and scapy both see a RoCEv2 frame (UDP/4791) or both do not;
- tshark decodes a readable BTH (opcode, SE, M, PadCnt, TVer, P_Key,
  FECN/BECN, DestQP, AckReq, PSN), is not "Malformed", and its BTH fields
  equal scapy's BTH fields;
- the ICRC recomputed with scapy (IPv4: BTH.compute_icrc; IPv6: scapy field
  masking + zlib.crc32) and by byte-offset masking + zlib both equal the
  frame's trailer, and so does tshark's infiniband.invariant.crc (for a CNP,
  which tshark 4.0 decodes only up to the BTH, the last 4 bytes of its
  vendor blob).

Frames that are not RoCE (ARP, ND, ...) are listed and skipped.

Options:
  --min-roce N   fail unless at least N RoCE frames were checked (default 1)
  --json         print one JSON object instead of the table
  -q, --quiet    print only failing frames and the summary

Exit status: 0 every RoCE frame agrees (and at least --min-roce of them),
1 a disagreement, 2 bad input or a decoder crash, 77 tshark or scapy missing.
Run with /usr/bin/python3 (the interpreter that has python3-scapy).
"""

import argparse
import json
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
import roce_oracle as ro  # noqa: E402

BTH_FIELDS = [
    # tshark field, scapy BTH attribute (None: derived), label
    ("infiniband.bth.opcode", "opcode", "opcode"),
    ("infiniband.bth.se", "solicited", "se"),
    ("infiniband.bth.m", "migreq", "m"),
    ("infiniband.bth.padcnt", "padcount", "padcnt"),
    ("infiniband.bth.tver", "version", "tver"),
    ("infiniband.bth.p_key", "pkey", "pkey"),
    ("infiniband.bth_tree/infiniband.reserved", None, "fecn/becn/resv6"),
    ("infiniband.bth.destqp", "dqpn", "dqpn"),
    ("infiniband.bth.a", "ackreq", "ackreq"),
    ("infiniband.bth.reserved7", "resv7", "resv7"),
    ("infiniband.bth.psn", "psn", "psn"),
]


def check_roce_frame(frame, info, tf, problems):
    """Appends to @problems; returns a one-line summary of the frame."""
    trailer = frame[info.end - 4:info.end]
    protos = tf.protocols()
    if "infiniband" not in protos:
        problems.append("tshark did not decode InfiniBand (protocols %s)" % ":".join(protos))
    if "_ws.malformed" in protos:
        problems.append("tshark: Malformed packet")
    # tshark checksum status 0 = bad (3 = absent and 4 = "illegal" zero UDP
    # checksum over IPv6 are not errors for RoCEv2).
    for field in ("ip.checksum.status", "udp.checksum.status"):
        if ro.norm(tf.get(field)) == 0:
            problems.append("tshark: %s bad" % field.rsplit(".", 2)[0])

    try:
        pkt = ro.scapy_dissect(frame, info)
        bth = ro.scapy_bth(pkt)
    except Exception as e:
        problems.append("scapy raised %r" % e)
        bth = None
    if bth is None:
        problems.append("scapy found no BTH")

    summary = {}
    for tfield, sattr, label in BTH_FIELDS:
        got = tf.get(tfield)
        if got is None:
            problems.append("tshark: no %s" % tfield)
            continue
        summary[label] = ro.norm(got)
        if bth is None:
            continue
        if sattr is None:
            want = "%02x" % ((bth.fecn << 7) | (bth.becn << 6) | bth.resv6)
        else:
            want = str(getattr(bth, sattr))
        if ro.norm(want) != ro.norm(got):
            problems.append("BTH %s: tshark %s, scapy %s" % (label, got, want))

    opcode = summary.get("opcode")
    crc_field = tf.get("infiniband.invariant.crc")
    if crc_field is not None:
        if ro.norm(crc_field) != int.from_bytes(trailer, "big"):
            problems.append("tshark invariant.crc %s != trailer %s" % (crc_field, trailer.hex()))
    elif opcode == ro.CNP_OPCODE:
        blob = tf.get("infiniband.vendor_tree/infiniband.vendor") or ""
        if not str(ro.norm(blob)).endswith(trailer.hex()):
            problems.append("CNP: tshark vendor blob %s does not end in trailer %s"
                            % (blob, trailer.hex()))
    else:
        problems.append("tshark shows no infiniband.invariant.crc")

    try:
        got, how = ro.icrc_scapy(frame, info)
    except ro.ToolMissing:
        raise
    except Exception as e:
        got, how = None, "scapy raised %r" % e
    if got != trailer:
        problems.append("ICRC: trailer %s, %s gives %s" % (trailer.hex(), how, ro.hexs(got)))
    got = ro.icrc_bytewise(frame, info)
    if got != trailer:
        problems.append("ICRC: trailer %s, byte-offset masking gives %s"
                        % (trailer.hex(), got.hex()))

    name = bth.get_field("opcode").i2repr(bth, bth.opcode) if bth is not None else "?"
    return "%s v%d qp=0x%06x psn=%s icrc=%s" % (
        name, info.ipver, summary.get("dqpn", 0) or 0, summary.get("psn"), trailer.hex())


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture")
    ap.add_argument("--min-roce", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv[1:])

    try:
        frames = ro.read_frames(args.capture)
        decoded = ro.tshark_decode(args.capture)
    except ro.ToolMissing as e:
        print("check_capture: SKIP: %s" % e)
        return ro.EXIT_TOOL_MISSING
    except (OSError, ValueError, RuntimeError) as e:
        print("check_capture: %s: %s" % (args.capture, e))
        return 2

    results = []
    n_roce = n_bad = 0
    if len(frames) != len(decoded):
        n_bad += 1
        results.append({"frame": 0, "status": "FAIL", "summary": "frame count",
                        "problems": ["scapy read %d frames, tshark %d"
                                     % (len(frames), len(decoded))]})
    for i, (frame, tf) in enumerate(zip(frames, decoded), 1):
        info = ro.L3Info(frame)
        tshark_roce = "infiniband" in tf.protocols()
        problems = []
        if not info.is_roce() and not tshark_roce:
            results.append({"frame": i, "status": "skip",
                            "summary": ":".join(tf.protocols()), "problems": []})
            continue
        n_roce += 1
        if not info.is_roce():
            problems.append("tshark decodes InfiniBand but the frame is not UDP/4791")
            summary = ":".join(tf.protocols())
        else:
            try:
                summary = check_roce_frame(frame, info, tf, problems)
            except ro.ToolMissing as e:
                print("check_capture: SKIP: %s" % e)
                return ro.EXIT_TOOL_MISSING
        if problems:
            n_bad += 1
        results.append({"frame": i, "status": "FAIL" if problems else "ok",
                        "summary": summary, "problems": problems})

    short = n_roce < args.min_roce
    ok = n_bad == 0 and not short
    if args.json:
        print(json.dumps({"capture": args.capture, "frames": len(frames), "roce": n_roce,
                          "failed": n_bad, "ok": ok, "results": results}, indent=1))
    else:
        for r in results:
            if args.quiet and r["status"] != "FAIL":
                continue
            print("%5d  %-4s  %s" % (r["frame"], r["status"], r["summary"]))
            for p in r["problems"]:
                print("             - %s" % p)
        print("check_capture: %s: %d frames, %d RoCE, %d disagree%s" % (
            args.capture, len(frames), n_roce, n_bad,
            " (fewer RoCE frames than --min-roce %d)" % args.min_roce if short else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception:
        import traceback
        traceback.print_exc()
        sys.exit(2)
