#!/usr/bin/env bash
# Records real perftest 6.06 (Debian 12's perftest 4.5-0.17 on Linux rxe in
# the scripts/rxe-interop guest) speaking its TCP exchange with droce-perf:
# `ib_write_bw -q 2 --report_gbits -n 200 -s 65536`, once as the server
# (droce-perf the client) and once as the client (droce-perf --server).
# dumpcap on the namespace's bridge records port 18515 (matrix.py
# --tcpdump); extract_stream.py keeps the bytes perftest sent (198.18.0.2).
# Writes, next to this script:
#   perftest_server_write_bw_q2.bin   what ib_write_bw sent as the server
#   perftest_client_write_bw_q2.bin   what ib_write_bw sent as the client
#   perftest_{server,client}_write_bw_q2.txt   both programs' output of that
#                                     run (perftest prints the keys it sent)
# usage: tests/perf/data/record-perftest.sh [RXE_DIR]   (root; RXE_DIR holds
# the built guest image, default build-rxe)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
DIR=${1:-build-rxe}
flock /tmp/droce-rxe.lock scripts/rxe-interop --dir "$DIR" --tests write_bw+q2g --tcpdump
for role in guest-srv:server droce-srv:client; do
  cell=$DIR/logs/write_bw+q2g-s65536-${role%%:*}
  python3 "$here/extract_stream.py" "$cell.tcp.pcapng" 198.18.0.2 \
    > "$here/perftest_${role##*:}_write_bw_q2.bin"
  cp "$cell.log" "$here/perftest_${role##*:}_write_bw_q2.txt"
done
ls -l "$here"/perftest_*_q2.*
