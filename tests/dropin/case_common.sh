# SPDX-License-Identifier: BSD-3-Clause
# What the dropin suite's case drivers (run_case.sh, stacks_case.sh) share,
# sourced after they set: build, case_, run, tmp, ns, srv_pid.  The exit
# trap (server process, network namespace, temporary directory), fail,
# need, the check that droce-run exists, the two memif configs, tcp_port.

cleanup() {
	if [ -n "$srv_pid" ] && kill -0 "$srv_pid" 2>/dev/null; then
		kill "$srv_pid" 2>/dev/null
		wait "$srv_pid" 2>/dev/null
	fi
	[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

# fail MESSAGE: says why, shows every log of the cell, exits 1
fail() {
	echo "FAIL [$case_]: $*"
	for f in "$tmp"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $(basename "$f")"
		cat -v "$f"
	done
	exit 1
}

# need PROGRAM...: skip the cell (77) when one is not installed
need() {
	local b
	for b in "$@"; do
		command -v "$b" >/dev/null || { echo "SKIP: $b is not installed (scripts/deps.sh)"; exit 77; }
	done
}

[ -x "$run" ] || fail "$run missing"

# Configs: one memif port each, as README's two-process examples.
. "$(dirname "${BASH_SOURCE[0]}")/../common/memif_ini.sh"
memif_configs "$tmp" "$tmp/memif.sock"

# tcp_port BASE: a TCP port nobody on this machine listens on, from a range
# per process above BASE (each driver its own BASE)
tcp_port() {
	local p=$(($1 + ($$ % 2000) * 7)) i
	for i in $(seq 0 50); do
		if ! ss -Htln "sport = :$((p + i))" | grep -q .; then
			echo $((p + i))
			return
		fi
	done
	echo $p
}
