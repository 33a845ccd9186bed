#!/usr/bin/env python3
"""Prints (to stdout, binary) the TCP payload one host sent on port 18515 in
a capture, reassembled in order (tshark's follow,tcp,raw).
usage: extract_stream.py CAPTURE SENDER_IP > stream.bin"""
import subprocess, sys

cap, sender = sys.argv[1], sys.argv[2]
# the connection that carried data (a client may have been refused first)
streams = subprocess.run(["tshark", "-r", cap, "-Y", "ip.src==%s && tcp.len>0" % sender,
                          "-T", "fields", "-e", "tcp.stream"],
                         capture_output=True, text=True, check=True).stdout.split()
if len(set(streams)) != 1:
    sys.exit("extract_stream: %s sent data on %d connections in %s" % (
        sender, len(set(streams)), cap))
out = subprocess.run(["tshark", "-r", cap, "-q", "-z", "follow,tcp,raw," + streams[0]],
                     capture_output=True, text=True, check=True).stdout
node = {}
data = {0: b"", 1: b""}
for line in out.splitlines():
    if line.startswith("Node 0:") or line.startswith("Node 1:"):
        node[int(line[5])] = line.split(":", 1)[1].strip().rsplit(":", 1)[0]
    elif line and not line.startswith("=") and not line.startswith("Follow") and \
            not line.startswith("Filter") and not line.startswith("Node"):
        side = 1 if line.startswith("\t") else 0
        data[side] += bytes.fromhex(line.strip())
want = [k for k, v in node.items() if v == sender]
if not want:
    sys.exit("extract_stream: %s is not in %s (%s)" % (sender, cap, node))
sys.stdout.buffer.write(data[want[0]])
