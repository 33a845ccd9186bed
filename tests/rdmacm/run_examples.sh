#!/usr/bin/env bash
# Builds example_rdma_server.c / example_rdma_client.c with nothing but
# `pkg-config --cflags --libs droce` (against the build tree's uninstalled
# droce.pc), then runs them as two processes joined by memif (server
# 198.18.0.1, client 198.18.0.2), each started only with DROCE_CONFIG.
# Paths carry the pid; every wait is bounded.  Usage: run_examples.sh BUILD_DIR SRC_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d /tmp/droce-rcm-ex-$$-XXXX)
srv_pid=
cleanup() {
  [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

export PKG_CONFIG_PATH=$build/meson-uninstalled
flags=$(pkg-config --cflags --libs droce)
for p in server client; do
  cc -o "$tmp/rdma_$p" "$src/example_rdma_$p.c" $flags
done
# linked to libdroce, not to rdma-core's librdmacm / libibverbs
if ldd "$tmp/rdma_client" | grep -Eq 'librdmacm|libibverbs'; then
  echo "example links rdma-core's libraries"; exit 1
fi

. "$(dirname "$0")/../common/memif_ini.sh"
memif_configs "$tmp" "$tmp/memif.sock"

export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DROCE_CONFIG=$tmp/server.ini timeout 60 "$tmp/rdma_server" 198.18.0.1 7471 >"$tmp/srv.log" 2>&1 &
srv_pid=$!
sleep 1
# the client retries while the memif link comes up (bounded)
ok=0
for i in 1 2 3 4 5; do
  if DROCE_CONFIG=$tmp/client.ini timeout 60 "$tmp/rdma_client" 198.18.0.1 7471 >"$tmp/cli.log" 2>&1; then
    ok=1; break
  fi
  cat "$tmp/cli.log"
  sleep 1
done
wait "$srv_pid"; rc=$?; srv_pid=
cat "$tmp/srv.log" "$tmp/cli.log"
[ $ok = 1 ] && [ $rc = 0 ] && grep -q "rdma_client: ok" "$tmp/cli.log" && grep -q "rdma_server: ok" "$tmp/srv.log"
