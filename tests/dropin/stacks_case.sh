#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One cell of the `stacks` suite, the stacks above verbs (issue 23 §1-2):
# Debian's UCX 1.13 (ucx-utils) and libfabric 1.17 (libfabric-bin), run
# unmodified on droce through build/droce-run, which gives them droce's
# sysfs and /dev/infiniband entries (UCX lists no device without them).
# Two-process cells join two droce instances by memif (server side
# 198.18.0.1, memif server; client side 198.18.0.2, memif client), the
# configs of tests/common/memif_ini.sh; every process runs under
# `timeout`, every wait is bounded.
#
# Usage: stacks_case.sh BUILD_DIR CASE
# Exit 0 = pass, 77 = skipped (a Debian package is missing, or the network
# namespace cannot be made), anything else = fail.
set -uo pipefail
build=$(cd "$1" && pwd)
case_=$2
run="$build/droce-run"
tmp=$(mktemp -d "/tmp/droce-stacks-$case_-$$-XXXX")
ns=
srv_pid=

. "$(dirname "$0")/case_common.sh"

# In the sanitizer build (issue 23 §5) the programs, not built with
# -fsanitize, load droce's ASan libraries with the ASan runtime preloaded
# into them alone (STACKS_ASAN_RUNTIME, set by meson): droce-run's own
# shell and the tools the cell uses run without it.
if [ -n "${STACKS_ASAN_RUNTIME:-}" ]; then
	cat >"$tmp/run-asan" <<EOF
#!/usr/bin/env bash
opts=()
while [ "\${1:-}" = --config ]; do opts+=("\$1" "\$2"); shift 2; done
exec "$run" "\${opts[@]}" env LD_PRELOAD="$STACKS_ASAN_RUNTIME" "\$@"
EOF
	chmod +x "$tmp/run-asan"
	run=$tmp/run-asan
fi

# wait_listen PORT: until the server side listens on TCP PORT, in the
# cell's network namespace if it has one (30 s at most)
wait_listen() {
	local i
	for i in $(seq 1 300); do
		$nsexec ss -Htln "sport = :$1" | grep -q . && return 0
		kill -0 "$srv_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

nsexec=
start_server() { # SECONDS CMD...
	local t=$1
	shift
	$nsexec timeout "$t" "$run" --config "$tmp/server.ini" "$@" >"$tmp/server.log" 2>&1 &
	srv_pid=$!
}
client() { # SECONDS CMD...: its exit status
	local t=$1
	shift
	$nsexec timeout "$t" "$run" --config "$tmp/client.ini" "$@" >"$tmp/client.log" 2>&1
}
server_status() {
	local rc
	wait "$srv_pid"
	rc=$?
	srv_pid=
	return $rc
}

# ---- UCX ----

ucx_env() {
	export UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=droce0:1 UCX_WARN_UNUSED_ENV_VARS=n
}

# ucx_final LOG ITERS: ucx_perftest's "Final:" line has ITERS iterations
# and its message rates (the last two figures) above zero (latency or
# overhead may print 0.000, bandwidth 0.00 for 8-byte messages); prints it
ucx_final() {
	local line
	line=$(grep -a '^Final:' "$1" | tail -1)
	[ -n "$line" ] || fail "no Final: line in $(basename "$1")"
	echo "$line"
	awk -v n="$2" '{ if (NF != 9 || $2 != n) exit 1; for (i = 8; i <= NF; i++) if ($i + 0 <= 0) exit 1 }' \
		<<<"$line" || fail "Final: line without $2 iterations or with a zero rate: $line"
}

# ucx_pair ITERS ARGS...: ucx_perftest between the two processes (its TCP
# exchange on a free port).  The server's droce starts when UCX loads and
# waits 3 s for its memif link; the client comes once the server listens
# and its link comes up then (UCX reads the port's state at ucp_init, after
# the TCP exchange).  A side whose port was still down at that moment
# ("no usable transports" from UCP, "Cannot use ud_verbs/droce0:1" from UCT;
# seen on a machine loaded with 20 runnable threads, and under ASan with
# both links still down after droce's 3 s wait) fails the run: then, and
# only then, it runs once more.
ucx_pair() {
	local n=$1 port try crc src
	shift
	need ucx_perftest
	ucx_env
	for try in 1 2; do
		port=$(tcp_port 30000)
		rm -f "$tmp/memif.sock"
		start_server 120 ucx_perftest -p "$port" "$@"
		wait_listen "$port" || fail "ucx_perftest server never listened on $port"
		client 120 ucx_perftest 127.0.0.1 -p "$port" "$@"
		crc=$?
		server_status
		src=$?
		if [ $crc = 0 ] && [ $src = 0 ]; then
			ucx_final "$tmp/client.log" "$n"
			return 0
		fi
		# UCP says "no usable transports", UCT "Cannot use ud_verbs/droce0:1"
		grep -aqE "no usable transports|Cannot use [a-z_]+/droce" \
			"$tmp/client.log" "$tmp/server.log" || break
		echo "try $try: a port was still down when UCX looked at it: again"
	done
	fail "ucx_perftest: client exited $crc, server $src"
}

# ---- libfabric ----

# fi_pair PROVIDER EP ARGS...: fi_pingpong between the two processes in a
# network namespace whose veth pair carries 198.18.0.1 and .2 (the TCP
# control connection; the verbs provider maps droce's devices to those
# addresses).  fi_pingpong's server calls fi_getinfo only after its client
# connected, and its client only after the server's answer, so both start
# droce as they load (DROCE_EARLY_START=1, compat/early_start.c): the
# server's link is down until the client comes, after the server listens.
fi_pair() {
	local prov=$1 ep=$2 crc
	shift 2
	need fi_pingpong ip
	[ "$(id -u)" = 0 ] || { echo "SKIP: libfabric cells need root (network namespace)"; exit 77; }
	ns=droce-stacks-$$
	ip netns add "$ns" 2>/dev/null || { ns=; echo "SKIP: cannot create a network namespace"; exit 77; }
	ip -n "$ns" link set lo up
	ip -n "$ns" link add v0 type veth peer name v1 || fail "veth"
	ip -n "$ns" addr add 198.18.0.1/32 dev v0
	ip -n "$ns" addr add 198.18.0.2/32 dev v1
	ip -n "$ns" link set v0 up
	ip -n "$ns" link set v1 up
	nsexec="ip netns exec $ns"
	start_server 90 env DROCE_EARLY_START=1 fi_pingpong -p "$prov" -e "$ep" "$@"
	wait_listen 47592 || fail "fi_pingpong server never listened"
	client 90 env DROCE_EARLY_START=1 fi_pingpong -p "$prov" -e "$ep" "$@" 198.18.0.1
	crc=$?
	server_status || fail "fi_pingpong server exited $?"
	[ $crc = 0 ] || fail "fi_pingpong client exited $crc"
	# -c: every message's bytes checked ("Error at iteration" otherwise)
	grep -aq "Error at iteration" "$tmp/client.log" "$tmp/server.log" && fail "corrupt data"
	grep -aE '^[0-9]+[kmg]? +[0-9]+ +=[0-9]+' "$tmp/client.log" || fail "no result line"
	grep -aqE '^[0-9]+[kmg]? +([0-9]+) +=\1 ' "$tmp/client.log" || fail "acks differ from sends"
}

# ---- fio ----

# fio's rdma engine (fio 3.33 engines/rdma.c): the side with rw=read is
# the server (rdma_listen on INADDR_ANY:PORT, whatever --verb says), the
# side with rw=write the client, which does the verb: RDMA WRITEs into or
# READs from the server's io_u buffers (the server only waits for the
# client's end message), or SENDs into the server's posted receives.
# Both sides wait in ibv_get_cq_event.  Only SEND moves fio's own blocks,
# so only it can be verified: the client writes fio's verify headers
# (--verify=crc32c), the server (a read job) checks every block it
# receives.  fio connects with rnr_retry_count 0: a SEND that finds no
# receive posted fails the client at once (RNR retry exceeded) on any RC
# device, so as fio's source advises the receiving side is deeper.

# fio_server / fio_client SECONDS ARGS...: fio under timeout with a kill
# 5 s later (a job waiting in a verbs call outlives SIGTERM, as over the
# kernel's uverbs: fio's handler has SA_RESTART).  --thread: fio's default
# job processes call setsid(), so timeout's kill of its process group
# would miss them and a failed cell would leave them behind; the forked
# jobs run as well (docs/running-programs.md, "fio, Open MPI and libfabric MSG endpoints").  In $tmp: a fio that is ended
# leaves its verify state file in its working directory.
fio_server() {
	local t=$1
	shift
	(cd "$tmp" && exec timeout -k 5 "$t" "$run" --config "$tmp/server.ini" fio --name=srv \
		--ioengine=rdma --thread --port="$fio_port" --rw=read "$@") >"$tmp/server.log" 2>&1 &
	srv_pid=$!
}
fio_client() { # its exit status
	local t=$1
	shift
	(cd "$tmp" && exec timeout -k 5 "$t" "$run" --config "$tmp/client.ini" fio --name=cli \
		--ioengine=rdma --thread --hostname=198.18.0.1 --port="$fio_port" --rw=write "$@") \
		>"$tmp/client.log" 2>&1
}
# fio_wait_listen: until the server printed that it listens (30 s at most)
fio_wait_listen() {
	local i
	for i in $(seq 1 300); do
		grep -aq "fio: waiting for connection" "$tmp/server.log" && return 0
		kill -0 "$srv_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# fio_issued LOG R W: fio's "issued rwts" line says R reads and W writes
fio_issued() {
	grep -aq "issued rwts: total=$2,$3,0,0 short=0,0,0,0" "$1" ||
		fail "$(basename "$1"): not $2 reads, $3 writes: $(grep -a 'issued rwts' "$1")"
}
fio_port=$((19100 + $$ % 500))

# fio_pair VERB BS CLIENT_DEPTH SERVER_DEPTH SIZE_MIB [fio options for both]
fio_pair() {
	local verb=$1 bs=$2 cqd=$3 sqd=$4 mib=$5 crc n
	shift 5
	need fio
	n=$((mib * 1024 * 1024 / $(numfmt --from=iec "${bs^^}")))
	fio_server 120 --bs="$bs" --iodepth="$sqd" --size="${mib}m" "$@"
	fio_wait_listen || fail "fio server never listened"
	fio_client 120 --bs="$bs" --iodepth="$cqd" --size="${mib}m" --verb="$verb" "$@"
	crc=$?
	server_status || fail "fio server exited $?"
	[ $crc = 0 ] || fail "fio client exited $crc"
	grep -aq "cli: (groupid=0, jobs=1): err= 0" "$tmp/client.log" || fail "client job error"
	grep -aq "srv: (groupid=0, jobs=1): err= 0" "$tmp/server.log" || fail "server job error"
	grep -aqE "completion status|verify:" "$tmp/client.log" "$tmp/server.log" && fail "error completion or verify failure"
	fio_issued "$tmp/client.log" 0 "$n"
	# SEND: every block arrived in one of the server's receives
	[ "$verb" = send ] && fio_issued "$tmp/server.log" "$n" 0
	grep -a "WRITE: bw=" "$tmp/client.log"
	[ "$verb" = send ] && grep -a "READ: bw=" "$tmp/server.log"
	return 0
}

# ---- Open MPI ----

# mpi_pair ARGS...: tests/dropin/mpi_pingpong.c (built here with mpicc) as
# two ranks in mpirun's MPMD form, one per droce process (rank 0 on the
# memif server's config, rank 1 on the client's), pml ucx over
# rc_verbs/ud_verbs on droce0:1 and no shared memory (UCX_TLS without
# sm/posix/cma; "self" only for a rank's messages to itself; btl self).
# Open MPI's pml ucx takes only Mellanox devices unless told otherwise
# (pml_ucx_devices, pml_ucx_tls: "any").  UCX's info lines show the
# transport each endpoint chose; the program checks every byte.
mpi_pair() {
	local root= rc try
	need mpirun mpicc
	[ "$(id -u)" = 0 ] && root=--allow-run-as-root
	mpicc -O2 -o "$tmp/mpi_pingpong" "$(dirname "$0")/mpi_pingpong.c" 2>"$tmp/mpicc.log" ||
		fail "mpicc failed"
	# as ucx_pair: a port still down when UCX looked at it runs once more,
	# nothing else does (UCP says "no usable transports"; under Open MPI,
	# "network device 'droce0:1' is not available", both ports having
	# logged "link still down": seen with two CPU burners running)
	for try in 1 2; do
		rm -f "$tmp/memif.sock"
		timeout -k 5 150 mpirun $root --oversubscribe --mca pml ucx --mca pml_ucx_tls any \
			--mca pml_ucx_devices any --mca btl self \
			-x UCX_TLS=self,rc_verbs,ud_verbs -x UCX_NET_DEVICES=droce0:1 \
			-x UCX_WARN_UNUSED_ENV_VARS=n -x UCX_LOG_LEVEL=info \
			-np 1 "$run" --config "$tmp/server.ini" "$tmp/mpi_pingpong" "$@" : \
			-np 1 "$run" --config "$tmp/client.ini" "$tmp/mpi_pingpong" "$@" >"$tmp/mpirun.log" 2>&1
		rc=$?
		[ $rc = 0 ] && break
		grep -aqE "no usable transports|network device 'droce0:1' is not available" \
			"$tmp/mpirun.log" || break
		echo "try $try: a port was still down when UCX looked at it: again"
	done
	[ $rc = 0 ] || fail "mpirun exited $rc"
	grep -aq "^bad 0$" "$tmp/mpirun.log" || fail "corrupt bytes or no check"
	grep -aqE "^pingpong [0-9]+ [0-9]+ [0-9.]*[1-9]" "$tmp/mpirun.log" || fail "no ping-pong figure"
	grep -aqE "^bw [0-9]+ [0-9]+ [0-9]+ [0-9.]*[1-9]" "$tmp/mpirun.log" || fail "no bandwidth figure"
	# the ranks' endpoint to each other is droce's rc_verbs (UCX prints
	# one ep_cfg line per endpoint configuration)
	grep -aE "ep_cfg\[[0-9]+\]: tag\(rc_verbs/droce0:1\)" "$tmp/mpirun.log" | head -1 | grep -q . ||
		fail "the ranks did not connect over rc_verbs/droce0:1"
	grep -aE "^(pingpong|bw|bad) " "$tmp/mpirun.log"
}

case $case_ in
ucx_info)
	# UCX lists droce's devices with rc_verbs and ud_verbs (the embedded
	# loopback pair: droce0, droce1), a RoCE v2 GID found in sysfs
	need ucx_info
	timeout 60 "$run" ucx_info -d >"$tmp/info.log" 2>&1 || fail "ucx_info exited $?"
	for d in droce0 droce1; do
		for t in rc_verbs ud_verbs; do
			grep -aA2 "Transport: $t" "$tmp/info.log" | grep -q "Device: $d:1" ||
				fail "$t on $d:1 not listed"
		done
	done
	grep -a "Transport: \(rc\|ud\)_verbs" -A1 "$tmp/info.log"
	# and it is the view that does it: without it UCX lists none
	DROCE_VIEW=0 timeout 60 "$run" ucx_info -d >"$tmp/noview.log" 2>&1 || fail "ucx_info exited $?"
	grep -aq "Device: droce0:1" "$tmp/noview.log" && fail "droce0 listed without the view?"
	echo "without the view (DROCE_VIEW=0): no droce device, as expected"
	;;
ucx_info_user)
	# the same as an ordinary user (nobody): droce-run's view is then made
	# in a user namespace that keeps the caller's uid, and UCX runs as it
	need ucx_info setpriv unshare
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to become nobody"; exit 77; }
	# a runtime area of its own: the test command's (RUNTIME_DIRECTORY) is root's, 0700
	mkdir -p "$tmp/rt-nobody" && chown 65534:65534 "$tmp/rt-nobody"
	as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp
		RUNTIME_DIRECTORY="$tmp/rt-nobody")
	"${as_nobody[@]}" unshare -U true 2>/dev/null ||
		{ echo "SKIP: unprivileged user namespaces are disabled here"; exit 77; }
	chmod 0777 "$tmp"
	"${as_nobody[@]}" test -x "$run" || { echo "SKIP: $run is not reachable as nobody"; exit 77; }
	"${as_nobody[@]}" timeout 60 "$run" sh -c 'id -u; ucx_info -d' >"$tmp/info.log" 2>&1 ||
		fail "ucx_info as nobody exited $?"
	[ "$(head -1 "$tmp/info.log")" = 65534 ] || fail "the program did not run as nobody"
	for t in rc_verbs ud_verbs; do
		grep -aA2 "Transport: $t" "$tmp/info.log" | grep -q "Device: droce0:1" ||
			fail "$t on droce0:1 not listed"
	done
	echo "ucx_info as uid 65534: rc_verbs and ud_verbs on droce0:1"
	;;
ucx_peer_dies)
	# issue 23 §5: the server process is killed (SIGKILL) in the middle
	# of a tag_bw run.  The client's UCX must learn it from droce: its RC
	# QP's retries run out, the QP goes to ERR and UCX (endpoints with
	# error handling, -e) calls the error handler ("Endpoint timeout").
	# ucx_perftest itself then keeps running (it is a benchmark: its error
	# handler only logs), so the cell ends it once the error was seen.
	need ucx_perftest pgrep
	ucx_env
	port=$(tcp_port 30000)
	rm -f "$tmp/memif.sock"
	start_server 120 ucx_perftest -p "$port" -t tag_bw -s 65536 -n 100000000 -e
	wait_listen "$port" || fail "ucx_perftest server never listened on $port"
	$nsexec timeout 120 "$run" --config "$tmp/client.ini" ucx_perftest 127.0.0.1 -p "$port" \
		-t tag_bw -s 65536 -n 100000000 -e >"$tmp/client.log" 2>&1 &
	cli=$!
	# until the client has run a while (ucx_perftest's report lines)
	for i in $(seq 1 300); do
		[ "$(grep -ac '^\[thread 0\] *[0-9]\+ ' "$tmp/client.log")" -ge 2 ] && break
		kill -0 "$cli" 2>/dev/null || fail "the client ended before the server was killed"
		sleep 0.1
	done
	kill -9 $(pgrep -f "^ucx_perftest -p $port ") 2>/dev/null || fail "no server process to kill"
	wait "$srv_pid" 2>/dev/null
	srv_pid=
	t0=$(date +%s)
	seen=
	for i in $(seq 1 600); do
		grep -aq "error handler called" "$tmp/client.log" && { seen=1; break; }
		kill -0 "$cli" 2>/dev/null || break
		sleep 0.1
	done
	t1=$(date +%s)
	kill $(pgrep -f "^ucx_perftest 127.0.0.1 -p $port ") 2>/dev/null
	wait "$cli" 2>/dev/null
	[ -n "$seen" ] || fail "the client's UCX saw no error within 60 s of its peer's death"
	echo "the client's UCX had its error $((t1 - t0)) s after the server was killed:"
	grep -a "UCX  ERROR" "$tmp/client.log" | head -3
	# The killed server could not remove its runtime directory; the next
	# droce start removes it (issue 28: its lock died with it).  Start one
	# as a user would, so the suite's residue check sees that sweep.
	$nsexec timeout 60 "$run" --config "$tmp/server.ini" ibv_devices >"$tmp/sweep.log" 2>&1 ||
		fail "droce did not start after the server was killed ($(tail -1 "$tmp/sweep.log"))"
	;;
ucx_tag_lat) ucx_pair 2000 -t tag_lat -n 2000 -w 100 ;;
ucx_tag_bw) ucx_pair 2000 -t tag_bw -n 2000 -w 100 -s 65536 ;;
ucx_put_bw) ucx_pair 2000 -t ucp_put_bw -n 2000 -w 100 -s 65536 ;;
ucx_get_bw) ucx_pair 2000 -t ucp_get -n 2000 -w 100 -s 65536 ;;
ucx_am_lat) ucx_pair 2000 -t ucp_am_lat -n 2000 -w 100 ;;
ucx_stream_bw) ucx_pair 2000 -t stream_bw -n 2000 -w 100 -s 65536 ;;
# UCT level, one transport each
ucx_uct_rc_am_lat) ucx_pair 2000 -d droce0:1 -x rc_verbs -t am_lat -n 2000 -w 100 ;;
ucx_uct_rc_put_bw) ucx_pair 2000 -d droce0:1 -x rc_verbs -t put_bw -D zcopy -n 2000 -w 100 -s 65536 ;;
ucx_uct_ud_am_lat) ucx_pair 2000 -d droce0:1 -x ud_verbs -t am_lat -n 2000 -w 100 ;;
fi_info)
	# libfabric's verbs provider lists droce's UD domains (the embedded
	# loopback pair; MSG domains need an interface with the port's address)
	need fi_info
	timeout 60 "$run" fi_info -p verbs >"$tmp/info.log" 2>&1 || fail "fi_info exited $?"
	for d in droce0-dgram droce1-dgram; do
		grep -aq "domain: $d\$" "$tmp/info.log" || fail "verbs domain $d not listed"
	done
	timeout 60 "$run" fi_info -p "verbs;ofi_rxd" >"$tmp/rxd.log" 2>&1 || fail "fi_info rxd exited $?"
	grep -aq "FI_EP_RDM" "$tmp/rxd.log" || fail "verbs;ofi_rxd lists no RDM endpoint"
	grep -a "domain:" "$tmp/info.log"
	;;
fi_pingpong_dgram) fi_pair verbs dgram -I 200 -S 1024 -c ;;
fi_pingpong_rxd) fi_pair "verbs;ofi_rxd" rdm -I 200 -S 4096 -c ;;
# MSG endpoints and ofi_rxm over them: the provider binds "localhost" to
# find its device, which binds as the wildcard (the kernel's cma_any_addr)
fi_pingpong_msg) fi_pair verbs msg -I 200 -S 4096 -c ;;
fi_pingpong_rxm) fi_pair "verbs;ofi_rxm" rdm -I 200 -S 4096 -c ;;
mpi_ucx) mpi_pair -l 8 -n 2000 -s 65536 -w 16 -m 100 ;;
mpi_ucx_large) mpi_pair -l 65536 -n 500 -s 1048576 -w 4 -m 20 ;;
fio_write) fio_pair write 64k 16 16 64 ;;
fio_write_4k) fio_pair write 4k 1 1 8 ;;
fio_read) fio_pair read 64k 16 16 64 ;;
fio_read_1m) fio_pair read 1m 4 4 64 ;;
fio_send_verify) fio_pair send 64k 16 512 64 --verify=crc32c ;;
fio_send_verify_4k) fio_pair send 4k 4 512 8 --verify=crc32c ;;
fio_verify_detects)
	# the server's check is real: blocks without fio's verify headers
	# (the client not verifying) fail the server job
	need fio
	fio_server 60 --bs=64k --iodepth=64 --size=8m --verify=crc32c
	fio_wait_listen || fail "fio server never listened"
	(cd "$tmp" && exec timeout -k 5 60 "$run" --config "$tmp/client.ini" fio --name=cli \
		--ioengine=rdma --thread --hostname=198.18.0.1 --port="$fio_port" --rw=write \
		--bs=64k --iodepth=16 --size=8m --verb=send) >"$tmp/client.log" 2>&1 &
	cli_pid=$!
	server_status && fail "the server accepted blocks without verify headers"
	grep -aq "verify: bad magic header" "$tmp/server.log" || fail "no verify failure reported"
	grep -a -m1 "verify: bad magic header" "$tmp/server.log"
	# fio's client then waits for completions that never come (fio
	# loops on a failed completion): end it
	kill "$cli_pid" 2>/dev/null
	wait "$cli_pid"
	;;
*)
	echo "unknown case $case_" >&2
	exit 2
	;;
esac
echo "PASS [$case_]"
