#!/usr/bin/env bash
# Builds droce in two flavours: build/ (release) and build-asan/ (ASan+UBSan).
# Usage: scripts/build.sh [release|asan|all]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}

setup() { # dir, meson options...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir" >/dev/null
}

case $what in
  release|all) setup build --buildtype=release ;;&
  asan|all) setup build-asan --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false ;;
  release|asan|all) ;;
  *) echo "usage: $0 [release|asan|all]" >&2; exit 2 ;;
esac
