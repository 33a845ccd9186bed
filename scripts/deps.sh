#!/usr/bin/env bash
# Installs the Debian 12 packages droce needs to build, test and benchmark,
# if any is missing.  Safe to run again: it does nothing when all are there.
set -euo pipefail

PKGS=(
  gcc make pkg-config meson ninja-build
  libdpdk-dev dpdk
  libibverbs-dev librdmacm-dev
  libcriterion-dev
  libisal-dev zlib1g-dev
  tshark python3-scapy
  clang
  iproute2
  # Debian's own RDMA programs, run unmodified on droce (suite dropin)
  ibverbs-utils perftest rdmacm-utils qperf
  # programs and libraries whose every object must load on droce's
  # libraries (suite abi, issue 22): rdma-core's pyverbs, libfabric, UCX, fio
  python3-pyverbs libfabric1 libfabric-bin libucx0 ucx-utils fio
  # Open MPI over UCX on droce (dropin mpi_ucx cells: mpirun, mpicc)
  openmpi-bin libopenmpi-dev
  # TCP programs run over rsockets with librspreload (dropin rspreload_*)
  iperf3 sockperf
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "droce: installing missing packages: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture: answer no, quietly
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
