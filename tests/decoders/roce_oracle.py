# SPDX-License-Identifier: BSD-3-Clause
"""Independent RoCEv2 oracles for droce's tests: tshark's InfiniBand dissector
and scapy's RoCE layer (plus a plain byte-offset ICRC over zlib).

Used by check_frames.py (droce's builder vs. what it meant to build) and
check_capture.py (any droce capture).  Run with /usr/bin/python3: the Debian
python3-scapy package is only installed for the system interpreter.

Tool caveats (see /work/shared/vectors/README.md):
- Wireshark 4.0 shows infiniband.invariant.crc but never verifies it.
- tshark's payload heuristics (RPC-over-RDMA, NVMe-oF, SMB Direct, ...) can
  claim valid frames and call them malformed: they are all disabled here.
- tshark 4.0 decodes only the BTH of a CNP (opcode 0x81); the 16 reserved
  bytes and the ICRC come out as one "vendor" blob.
- scapy 2.5.0 computes no IPv6 ICRC (it writes zeros) and folds Ethernet
  padding into the ICRC: frames are cut to the IP length and IPv6 frames are
  masked here with scapy's own field setters, then hashed with zlib.crc32.
"""

import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import zlib

EXIT_TOOL_MISSING = 77

# Heuristic sub-dissectors on infiniband.payload (tshark -G heuristic-decodes,
# by their internal names, which is what --disable-heuristic wants).
IB_HEURISTICS = [
    "rpcrdma_infiniband", "nvme_rdma", "smcr_infiniband", "smb_direct_infiniband",
    "lnet_ib", "iser_infiniband", "eth_over_ib", "mellanox_eoib", "sdp_infiniband",
    "fc_infiniband", "drbd_rdma",
]

TSHARK_PREFS = ["ip.check_checksum:TRUE", "udp.check_checksum:TRUE"]

ROCE_PORT = 4791
CNP_OPCODE = 0x81
ICRC_SEED_RESIDUE = 0x2144DF1C  # zlib crc32 over pseudo-packet + right trailer

# Top-level keys of tshark's infiniband layer that are headers.
IB_HEADERS = ("bth", "deth", "reth", "atomiceth", "aeth", "atomicacketh", "immdt",
              "ieth", "vendor", "payload")


class ToolMissing(Exception):
    pass


# ---------------------------------------------------------------- tshark --

class _Obj(list):
    """A JSON object kept as (key, value) pairs: tshark repeats keys."""


def _flatten(obj, tree, out):
    for key, val in obj:
        if isinstance(val, _Obj):
            _flatten(val, key, out)
            continue
        vals = val if isinstance(val, list) else [val]
        for v in vals:
            if isinstance(v, _Obj):
                _flatten(v, key, out)
                continue
            out.setdefault(key, []).append(v)
            if tree:
                out.setdefault(tree + "/" + key, []).append(v)


class TsharkFrame:
    """One decoded frame: layers (name -> _Obj) and flat fields.

    fields maps a tshark field name, and also "<enclosing tree>/<name>", to the
    list of values it had in the frame (a field may occur more than once, e.g.
    infiniband.reserved in both the BTH and the DETH)."""

    def __init__(self, layers):
        self.layers = {k: v for k, v in layers if isinstance(v, _Obj)}
        self.fields = {}
        _flatten(layers, "", self.fields)

    def get(self, name):
        vals = self.fields.get(name)
        return vals[0] if vals else None

    def protocols(self):
        return (self.get("frame.protocols") or "").split(":")

    def ib_headers(self):
        ib = self.layers.get("infiniband")
        if ib is None:
            return []
        names = []
        for key, _ in ib:
            short = key.split(".", 1)[1] if key.startswith("infiniband.") else ""
            if short in IB_HEADERS and short not in names:
                names.append(short)
        return names


def tshark_path():
    path = shutil.which("tshark")
    if path is None:
        raise ToolMissing("tshark not found in PATH")
    return path


def tshark_decode(capture):
    """Decodes every frame of @capture; returns a list of TsharkFrame."""
    tshark = tshark_path()
    heur = list(IB_HEURISTICS)
    while True:
        cmd = [tshark, "-n", "-r", capture, "-T", "json"]
        for pref in TSHARK_PREFS:
            cmd += ["-o", pref]
        for name in heur:
            cmd += ["--disable-heuristic", name]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            # Another tshark version may not know one of the heuristics: drop it.
            bad = [h for h in heur if ("No such protocol %s," % h) in res.stderr]
            if bad:
                heur = [h for h in heur if h not in bad]
                continue
            raise RuntimeError("tshark failed (%d): %s" % (res.returncode, res.stderr.strip()))
        break
    packets = json.loads(res.stdout or "[]", object_pairs_hook=_Obj)
    frames = []
    for pkt in packets:
        src = dict(pkt).get("_source")
        layers = dict(src).get("layers") if src is not None else _Obj()
        frames.append(TsharkFrame(layers))
    return frames


# ---------------------------------------------------------------- values --

def _is_hex_bytes(s):
    parts = s.split(":")
    return len(parts) > 1 and all(len(p) == 2 and all(c in "0123456789abcdef" for c in p)
                                  for p in parts)


def norm(value):
    """Canonical form for comparing a tshark value with an expected one."""
    if value is None:
        return None
    s = str(value).strip().lower()
    if _is_hex_bytes(s):
        return "bytes:" + s.replace(":", "")
    if s.startswith("0x"):
        try:
            return int(s, 16)
        except ValueError:
            return s
    if s.isdigit():
        return int(s, 10)
    if s in ("true", "false"):
        return int(s == "true")
    if ":" in s:
        try:
            import ipaddress
            return str(ipaddress.ip_address(s))
        except ValueError:
            pass
    return s


# ------------------------------------------------------------ raw frames --

def read_frames(capture):
    """Raw bytes of every frame of a pcap or pcapng file (via scapy)."""
    scapy_utils = _scapy()[0]
    frames = []
    rd = scapy_utils.RawPcapReader(capture)  # pcapng too, through its metaclass
    try:
        for data, _meta in rd:
            frames.append(bytes(data))
    finally:
        rd.close()
    return frames


class L3Info:
    """Where the IP header is and where the IP datagram ends (Ethernet
    padding and anything after the IP length excluded)."""

    def __init__(self, frame):
        off = 12
        etype = struct.unpack_from("!H", frame, off)[0] if len(frame) >= 14 else 0
        while etype in (0x8100, 0x88A8) and len(frame) >= off + 6:
            off += 4
            etype = struct.unpack_from("!H", frame, off)[0]
        self.l3 = off + 2
        self.ipver = 0
        self.end = len(frame)
        self.udp_dport = None
        l4 = None
        if etype == 0x0800 and len(frame) >= self.l3 + 20:
            self.ipver = 4
            ihl = (frame[self.l3] & 0xF) * 4
            self.end = self.l3 + struct.unpack_from("!H", frame, self.l3 + 2)[0]
            if frame[self.l3 + 9] == 17:
                l4 = self.l3 + ihl
        elif etype == 0x86DD and len(frame) >= self.l3 + 40:
            self.ipver = 6
            self.end = self.l3 + 40 + struct.unpack_from("!H", frame, self.l3 + 4)[0]
            if frame[self.l3 + 6] == 17:
                l4 = self.l3 + 40
        self.l4 = l4
        if l4 is not None and len(frame) >= l4 + 8:
            self.udp_dport = struct.unpack_from("!H", frame, l4 + 2)[0]
        self.end = min(self.end, len(frame))

    def is_roce(self):
        return self.udp_dport == ROCE_PORT


def icrc_bytewise(frame, info):
    """The recipe of vectors.md by byte offsets: an oracle that shares no code
    with droce or scapy.  Returns the 4 wire bytes."""
    l3 = bytearray(frame[info.l3:info.end - 4])
    if info.ipver == 4:
        ihl = (l3[0] & 0xF) * 4
        l3[1] = 0xFF                  # TOS
        l3[8] = 0xFF                  # TTL
        l3[10:12] = b"\xff\xff"       # header checksum
    else:
        ihl = 40
        l3[0] |= 0x0F                 # traffic class (low nibble of byte 0)
        l3[1:4] = b"\xff\xff\xff"     # traffic class + flow label
        l3[7] = 0xFF                  # hop limit
    l3[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    l3[ihl + 8 + 4] = 0xFF            # BTH FECN/BECN/resv6
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(l3)) & 0xFFFFFFFF)


_SCAPY = None


def _scapy():
    global _SCAPY
    if _SCAPY is None:
        logging.getLogger("scapy").setLevel(logging.ERROR)
        try:
            import scapy.utils as su
            from scapy.config import conf
            from scapy.main import load_contrib
            from scapy.layers.l2 import Ether
            from scapy.layers.inet import IP, UDP
            from scapy.layers.inet6 import IPv6
            from scapy.compat import raw
        except ImportError as e:
            raise ToolMissing("scapy not importable by %s (%s); use /usr/bin/python3"
                              % (sys.executable, e))
        load_contrib("roce")
        from scapy.contrib.roce import BTH
        conf.verb = 0
        _SCAPY = (su, Ether, IP, UDP, IPv6, BTH, raw)
    return _SCAPY


def scapy_dissect(frame, info):
    """scapy's view of the frame cut to its IP length (no Ethernet padding)."""
    _su, Ether, _IP, _UDP, _IPv6, _BTH, _raw = _scapy()
    return Ether(frame[:info.end])


def scapy_bth(pkt):
    BTH = _scapy()[5]
    return pkt[BTH] if BTH in pkt else None


def icrc_scapy(frame, info):
    """The ICRC as scapy computes it.  IPv4: scapy.contrib.roce's own
    BTH.compute_icrc.  IPv6 (which scapy 2.5.0 cannot do): the same masking
    done with scapy's field setters on a copy, hashed with zlib.crc32.
    Returns (wire bytes or None, note)."""
    _su, _Ether, _IP, UDP, IPv6, BTH, raw = _scapy()
    pkt = scapy_dissect(frame, info)
    if BTH not in pkt:
        return None, "scapy found no BTH"
    if info.ipver == 4:
        return bytes(pkt[BTH].compute_icrc(None)), "scapy BTH.compute_icrc"
    ip6 = pkt[IPv6]
    if raw(ip6) != frame[info.l3:info.end]:
        return None, "scapy does not rebuild this IPv6 datagram byte for byte"
    m = ip6.copy()
    m.tc = 0xFF
    m.fl = 0xFFFFF
    m.hlim = 0xFF
    m[UDP].chksum = 0xFFFF
    m[BTH].fecn = 1
    m[BTH].becn = 1
    m[BTH].resv6 = 0x3F
    masked = raw(m)
    if len(masked) != info.end - info.l3:
        return None, "masked IPv6 copy changed length"
    crc = zlib.crc32(b"\xff" * 8 + masked[:-4]) & 0xFFFFFFFF
    return struct.pack("<I", crc), "scapy IPv6 field masking + zlib.crc32"


def hexs(b):
    return b.hex() if b is not None else "None"
