#!/usr/bin/env bash
# Two droce processes on ONE kernel netdev (the same veth end), each with an
# IPv4 address of its own, as two processes' QPs on one port: does the one's
# traffic reach the other?  (issue 22 §2's question; see docs/programming.md, "Loopback on one port")
#
#   tests/loop/netns-shared-port.sh [--kind af_packet|af_xdp] TEST [droce-perf options]
#   e.g. tests/loop/netns-shared-port.sh write_bw -s 4096 -n 2000 --check
#
# One network namespace: veth dA <-> dB, both droce processes on dA (server
# 198.18.1.1, client 198.18.1.3; the interface's one MAC), nothing on dB.
# perftest's TCP exchange runs over the namespace's lo (198.18.2.1).  Prints
# the client's output and both processes' port counters; exits with the
# client's status.  Needs root.  Removes the namespace on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
kind=af_packet
if [ "${1:-}" = "--kind" ]; then kind=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: tests/loop/netns-shared-port.sh [--kind K] TEST [options]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "netns-shared-port: needs root" >&2; exit 2; }
perf=${DROCE_PERF:-build/apps/droce-perf}
tag=$$
ns="droce-shr-$tag"
dir=$(mktemp -d /tmp/droce-shared.XXXXXX)
srv=""
cleanup() {
  if [ -n "$srv" ] && kill -0 "$srv" 2>/dev/null; then kill "$srv" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns"
ip link add "s$tag" type veth peer name "t$tag"
ip link set "s$tag" netns "$ns"
ip link set "t$tag" netns "$ns"
ip -n "$ns" link set "s$tag" name dA
ip -n "$ns" link set "t$tag" name dB
ip -n "$ns" link set lo up
ip -n "$ns" link set dA up
ip -n "$ns" link set dB up
ip -n "$ns" addr add 198.18.2.1/32 dev lo
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ini() { # side ipv4
  printf '[eal]\nargs = --no-huge --no-pci -m 256 --file-prefix=droce-shr-%s-%s --log-level=lib.eal:warning\n[engines]\nmode = colocated\ncount = 1\n[port0]\nkind = %s\niface = dA\nipv4 = %s\n' \
    "$tag" "$1" "$kind" "$2" >"$dir/$1.ini"
}
ini server 198.18.1.1
ini client 198.18.1.3
port=$((20000 + tag % 20000))
test_name=$1
shift
DROCE_CONFIG="$dir/server.ini" timeout 90 ip netns exec "$ns" \
  "$perf" "$test_name" --server --bind 198.18.2.1 -p "$port" --stats "$@" >"$dir/server.out" 2>&1 &
srv=$!
for _ in $(seq 1 100); do
  ip netns exec "$ns" ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
  kill -0 "$srv" 2>/dev/null || break
  sleep 0.1
done
set +e
DROCE_CONFIG="$dir/client.ini" timeout 60 ip netns exec "$ns" \
  "$perf" "$test_name" 198.18.2.1 -p "$port" --stats "$@"
rc=$?
wait "$srv"
rs=$?
srv=""
set -e
echo "--- server (exit $rs):"
tail -n 25 "$dir/server.out"
echo "netns-shared-port: $kind, client exit $rc, server exit $rs" >&2
exit $rc
