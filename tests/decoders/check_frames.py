#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_frames.py CAPTURE EXPECTED

Checks frames droce built (tests/unit/test_decoders.c) against two decoders
that share no code with droce:

1. tshark: every field listed in EXPECTED ("<frame> <field> <value>" lines,
   field names as tshark spells them, "tree/field" to pick one occurrence)
   must be reported with that value; the protocol stack and the set of
   InfiniBand headers must match; infiniband.invariant.crc must equal the
   trailer (Wireshark shows it but never checks it).
2. scapy: the ICRC is recomputed (IPv4 with scapy.contrib.roce's
   BTH.compute_icrc, IPv6 by masking with scapy field setters + zlib.crc32)
   and must equal the frame's trailer; so must a byte-offset recomputation.

Special keys in EXPECTED: _name (label), _ipver, _layers (frame.protocols
without "ethertype"), _ibhdrs (infiniband headers in order), _cnp_reserved
(CNP: tshark's vendor blob must be that many zero bytes + the ICRC),
_vendor_blob (XRC, whose headers tshark 4.0 does not decode: the vendor blob
must be these bytes + the ICRC).

Exit status: 0 all agree, 1 a mismatch, 2 bad input, 77 tshark or scapy missing.
Run with /usr/bin/python3 (the interpreter that has python3-scapy).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean
import roce_oracle as ro  # noqa: E402


def load_expected(path):
    exp = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split(" ", 2)
            if len(parts) != 3:
                raise ValueError("%s:%d: want '<frame> <field> <value>'" % (path, lineno))
            exp.setdefault(int(parts[0]), []).append((parts[1], parts[2]))
    return exp


class Report:
    def __init__(self):
        self.bad = []
        self.checks = 0

    def check(self, frame, name, field, expected, got, ok=None):
        self.checks += 1
        if ok is None:
            ok = got is not None and ro.norm(expected) == ro.norm(got)
        if not ok:
            self.bad.append((frame, name, field, expected, got))
        return ok


def check_frame(n, name, fields, frame, tf, rep):
    info = ro.L3Info(frame)
    trailer = frame[info.end - 4:info.end]

    for key, want in fields:
        if key in ("_name", "_ipver"):
            continue
        if key == "_layers":
            got = ":".join(p for p in tf.protocols() if p != "ethertype")
            rep.check(n, name, "frame.protocols", want, got, ok=(got == want))
        elif key == "_ibhdrs":
            got = ",".join(tf.ib_headers())
            rep.check(n, name, "infiniband headers", want, got, ok=(got == want))
        elif key == "_vendor_blob":
            # headers tshark does not decode (XRC): their bytes + the ICRC
            want_blob = (bytes.fromhex(want.replace(":", "")) if want else b"") + trailer
            got = tf.get("infiniband.vendor_tree/infiniband.vendor")
            rep.check(n, name, "undecoded headers+payload+ICRC (infiniband.vendor)",
                      ":".join("%02x" % b for b in want_blob), got)
        elif key == "_cnp_reserved":
            want_blob = bytes(int(want)) + trailer
            got = tf.get("infiniband.vendor_tree/infiniband.vendor")
            rep.check(n, name, "CNP reserved+ICRC (infiniband.vendor)",
                      ":".join("%02x" % b for b in want_blob), got)
        else:
            vals = tf.fields.get(key)
            if vals and len({ro.norm(v) for v in vals}) > 1:
                rep.check(n, name, key, want, "several values: %s" % vals, ok=False)
                continue
            rep.check(n, name, key, want, vals[0] if vals else None)

    # Every ICRC the decoders can see must equal the trailer.
    want_ipver = dict(fields).get("_ipver")
    if want_ipver is not None:
        rep.check(n, name, "IP version (frame bytes)", want_ipver, info.ipver,
                  ok=(int(want_ipver) == info.ipver))
    opcode = ro.norm(tf.get("infiniband.bth.opcode"))
    crc_field = tf.get("infiniband.invariant.crc")
    # (CNP and XRC: tshark shows the ICRC inside the vendor blob, checked above)
    undecoded = opcode == ro.CNP_OPCODE or "_vendor_blob" in dict(fields)
    if not undecoded or crc_field is not None:
        rep.check(n, name, "infiniband.invariant.crc vs trailer",
                  "0x" + trailer.hex(), crc_field)
    try:
        got, how = ro.icrc_scapy(frame, info)
    except ro.ToolMissing:
        raise
    except Exception as e:  # an oracle crash is a failure, not a pass
        got, how = None, "scapy raised %r" % e
    rep.check(n, name, "ICRC: trailer vs %s" % how, trailer.hex(), ro.hexs(got), ok=(got == trailer))
    got = ro.icrc_bytewise(frame, info)
    rep.check(n, name, "ICRC: trailer vs byte-offset masking + zlib", trailer.hex(), got.hex(),
              ok=(got == trailer))


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    capture, expected = argv[1], argv[2]
    try:
        exp = load_expected(expected)
        frames = ro.read_frames(capture)
        decoded = ro.tshark_decode(capture)
    except ro.ToolMissing as e:
        print("check_frames: SKIP: %s" % e)
        return ro.EXIT_TOOL_MISSING
    except (OSError, ValueError, RuntimeError) as e:
        print("check_frames: %s" % e)
        return 2

    rep = Report()
    count = max(len(frames), len(decoded), max(exp) if exp else 0)
    rep.check(0, "-", "frame count (pcap/tshark/expected)", len(exp),
              "%d/%d" % (len(frames), len(decoded)),
              ok=(len(frames) == len(decoded) == len(exp) and
                  sorted(exp) == list(range(1, len(exp) + 1))))
    for n in range(1, count + 1):
        if n not in exp or n > len(frames) or n > len(decoded):
            continue
        fields = exp[n]
        name = dict(fields).get("_name", "?")
        try:
            check_frame(n, name, fields, frames[n - 1], decoded[n - 1], rep)
        except ro.ToolMissing as e:
            print("check_frames: SKIP: %s" % e)
            return ro.EXIT_TOOL_MISSING

    if rep.bad:
        print("check_frames: %d of %d checks FAILED over %d frames:" %
              (len(rep.bad), rep.checks, len(frames)))
        print("%-6s %-40s %-44s %-24s %s" % ("frame", "what", "field", "expected", "got"))
        for frame, name, field, want, got in rep.bad:
            print("%-6s %-40s %-44s %-24s %s" % (frame, name, field, want, got))
        return 1
    print("check_frames: %d frames, %d checks, tshark and scapy agree with droce" %
          (len(frames), rep.checks))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception:  # a crashed checker must not look like a mismatch report
        import traceback
        traceback.print_exc()
        sys.exit(2)
