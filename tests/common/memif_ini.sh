# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the shell drivers that run droce as two processes over memif
# (tests/dropin/run_case.sh, tests/rdmacm/run_examples.sh,
# scripts/dropin-vs-perf): the two configs of README's two-process
# examples, the C tests' tc_memif_config in tests/common/ spelled as INI.
#
# memif_configs DIR SOCKET [EAL_EXTRA]: writes DIR/server.ini (memif server,
# 198.18.0.1) and DIR/client.ini (memif client, 198.18.0.2), one memif port
# each on SOCKET; EAL_EXTRA is appended to both sides' EAL arguments.
memif_configs() {
	local dir=$1 sock=$2 extra=${3:-} side role
	for side in 1 2; do
		role=$([ $side = 1 ] && echo server || echo client)
		cat >"$dir/$role.ini" <<INI
[eal]
args = --no-huge --no-pci -m 128 --log-level=lib.eal:warning${extra:+ $extra}
[mempool]
mbufs = 4095
cache = 64
[port0]
kind = memif
role = $role
socket = $sock
id = 0
mac = 02:00:c6:12:00:0$side
ipv4 = 198.18.0.$side
rxd = 512
txd = 512
INI
	done
}
