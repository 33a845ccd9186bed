#!/usr/bin/env bash
# The main job: installs what is missing, builds the release flavour and runs
# droce-perf's standard set on the loopback topology (one process, client and
# server on the embedded in-memory port pair 198.18.0.1 <-> 198.18.0.2,
# --no-huge --no-pci): RDMA WRITE, READ, SEND and atomics in bandwidth mode
# at 64 B and 64 KiB (message rate at 64 B with 1 and 8 QPs), and latency of
# SEND, WRITE, READ and atomics from 2 B to 4 KiB.  The SEND bandwidth and
# WRITE latency runs use --check (every byte of every message verified).
# About 30 s.  Exits non-zero if any run fails.
#
#   scripts/run.sh                      the standard set
#   scripts/run.sh write_bw -s 4096 ... one droce-perf run (any droce-perf arguments)
#   scripts/run.sh --loop [args]        the raw-frame loopback check, droce-loop
#                                       (try --loop --help)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release

if [ "${1:-}" = "--loop" ]; then
  shift
  exec build/apps/droce-loop "$@"
fi
if [ $# -gt 0 ]; then
  exec build/apps/droce-perf "$@"
fi

perf=build/apps/droce-perf
lat_sizes=2,4,8,16,32,64,128,256,512,1024,2048,4096
runs=(
  "write_bw -s 64,65536 -D 1"
  "write_bw -s 64 -q 8 -D 1"
  "read_bw -s 64,65536 -D 1"
  "send_bw -s 64,65536 -D 1 --check"
  "atomic_bw -D 1"
  "atomic_bw -A CMP_AND_SWAP -D 1"
  "send_lat -s $lat_sizes -n 2000"
  "write_lat -s $lat_sizes -n 2000 --check"
  "read_lat -s $lat_sizes -n 2000"
  "atomic_lat -n 2000"
)

echo "droce-perf standard set: loopback (one process, in-memory ring pair), $(nproc) CPUs"
failed=0
start=$SECONDS
for args in "${runs[@]}"; do
  out=$(mktemp)
  # shellcheck disable=SC2086
  if $perf $args >"$out" 2>&1; then
    # the test's title, then its table
    title=$(grep -m1 ' Test$' "$out" | sed 's/^ *//')
    echo
    echo "== droce-perf $args  ($title)"
    awk '/#bytes/ { on = 1 } on && /^---/ { exit } on' "$out"
  else
    rc=$?
    echo
    echo "== droce-perf $args: FAILED (exit $rc)"
    cat "$out"
    failed=$((failed + 1))
  fi
  rm -f "$out"
done
echo
echo "${#runs[@]} runs, $failed failed, $((SECONDS - start)) s"
[ "$failed" -eq 0 ]
