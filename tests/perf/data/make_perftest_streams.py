#!/usr/bin/env python3
"""Writes the byte streams a perftest 6.06 peer (Debian 12's perftest
4.5-0.17) sends in ib_write_bw's out-of-band TCP exchange, built from
perftest's formats (src/perftest_communication.[ch]):
  version      16 B  "6.06" NUL-padded                  (exchange_versions)
  sys data     2 x 4 B big-endian: cycle buffer, cache line (check_sys_data)
  MTU          2 B   ibv_mtu enum as text + NUL          (check_mtu, >= 5.31)
  keys         108 B KEY_PRINT_FMT_GID + NUL             (ctx_hand_shake)
  bw report    size u64, iters u64, peak, avg, msg rate as big-endian doubles
Run it to regenerate perftest_{client,server}_write_bw.bin.
"""
import struct

def key(lid, out_reads, qpn, psn, rkey, vaddr, gid, srqn=0):
    s = "%04x:%04x:%06x:%06x:%08x:%016x:" % (lid, out_reads, qpn, psn, rkey, vaddr)
    s += "".join("%02x:" % b for b in gid) + "%08x:" % srqn
    b = s.encode()
    assert len(b) == 107
    return b + b"\0"

def gid4(a, b, c, d):
    return bytes(10) + b"\xff\xff" + bytes([a, b, c, d])

def stream(dest, report):
    out = b"6.06".ljust(16, b"\0")
    out += struct.pack(">ii", 4096, 64)
    out += b"3\0"                              # IBV_MTU_1024
    k = key(*dest)
    out += k                                   # QP 0 keys
    out += k                                   # barrier after RTR
    out += k                                   # end of the run
    if report is not None:
        out += struct.pack(">QQddd", *report)  # xchg_bw_reports
    out += k                                   # ctx_close_connection
    return out

# perftest as client (ib_write_bw 198.18.0.1): QPN 0x000123 ...
client = stream((0, 0x10, 0x000123, 0xabcdef, 0x00001234, 0x00007f1234560000,
                 gid4(198, 18, 0, 2)), (65536, 5000, 1234.5, 1200.25, 0.0192))
# perftest as server (ib_write_bw): its report is unused by the client, zeros
server = stream((0, 0x10, 0x000456, 0x123456, 0x0000abcd, 0x00007fabcdef0000,
                 gid4(198, 18, 0, 1)), (0, 0, 0.0, 0.0, 0.0))
open("perftest_client_write_bw.bin", "wb").write(client)
open("perftest_server_write_bw.bin", "wb").write(server)
