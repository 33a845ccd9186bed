#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One cell of the `dropin` suite (issue 10 §3): a Debian binary, unmodified
# (ibverbs-utils, perftest, rdmacm-utils, qperf), run on droce through
# build/droce-run.  Two-process cells join the two droce instances by memif
# (server side 198.18.0.1, memif server; client side 198.18.0.2, memif
# client); every process runs under `timeout`, and every wait is bounded.
#
# Usage: run_case.sh BUILD_DIR CASE
# Exit 0 = pass, 77 = skipped (the Debian package is missing, or qperf's
# network namespace cannot be made), anything else = fail.
set -uo pipefail
build=$(cd "$1" && pwd)
case_=$2
run="$build/droce-run"
tmp=$(mktemp -d "/tmp/droce-dropin-$case_-$$-XXXX")
ns=
srv_pid=

. "$(dirname "$0")/case_common.sh"

# wait_tcp PORT: until something listens on 127.0.0.1:PORT (20 s at most)
wait_tcp() {
	local i
	for i in $(seq 1 200); do
		ss -Htln "sport = :$1" | grep -q . && return 0
		kill -0 "$srv_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# wait_memif: until the server side's memif socket exists (20 s at most)
wait_memif() {
	local i
	for i in $(seq 1 200); do
		[ -S "$tmp/memif.sock" ] && return 0
		kill -0 "$srv_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# start_server SECONDS CMD...: the server side in the background
start_server() {
	local t=$1
	shift
	$nsexec timeout "$t" "$run" --config "$tmp/server.ini" "$@" >"$tmp/server.log" 2>&1 &
	srv_pid=$!
}

# client SECONDS CMD...: the client side; its exit status
client() {
	local t=$1
	shift
	$nsexec timeout "$t" "$run" --config "$tmp/client.ini" "$@" >"$tmp/client.log" 2>&1
}

# server_status: waits for the server side (bounded by its timeout)
server_status() {
	local rc
	wait "$srv_pid"
	rc=$?
	srv_pid=
	return $rc
}

# split_pair SERVERCMD... -- CLIENTCMD...: into the caller's arrays s and c
split_pair() {
	while [ "$1" != "--" ]; do s+=("$1"); shift; done
	shift
	c=("$@")
}

# rping_cm_race SIDE RC: RC, or 0 when SIDE is Debian's rping (rdma-core 44)
# ending 255 after a clean run by its own race: main destroys the CM event
# channel while the CM thread, done with the DISCONNECTED event, is on its
# way back into rdma_get_cm_event, which fails with EBADF and the thread
# exits the process (librdmacm does the same; upstream fixed rping in 2025,
# "rping: terminate CM event thread before exiting").  Only that ending is
# let through: 255, the DISCONNECT event, and the EBADF as the last line.
rping_cm_race() {
	local log="$tmp/$1.log"
	if [ "$2" = 255 ] && [ "${c[0]:-}" = rping ] &&
		grep -q "^$1 DISCONNECT EVENT" "$log" &&
		[ "$(tail -n 1 "$log")" = "rdma_get_cm_event: Bad file descriptor" ]; then
		echo "note: $1 rping exited 255 by rping 44's CM-thread race after a clean run" >&2
		echo 0
	else
		echo "$2"
	fi
}

# both_exit_0 CRC: waits for the server side; it and the client (exit
# status CRC) must have exited 0
both_exit_0() {
	local src crc
	server_status
	src=$(rping_cm_race server $?)
	crc=$(rping_cm_race client "$1")
	[ "$crc" = 0 ] || fail "client exited $crc"
	[ "$src" = 0 ] || fail "server exited $src"
}

# pair_tcp SECONDS PORT SERVERCMD -- CLIENTCMD: both sides must exit 0
pair_tcp() {
	local t=$1 port=$2
	shift 2
	local -a s=() c=()
	split_pair "$@"
	start_server "$t" "${s[@]}"
	wait_tcp "$port" || fail "server never listened on TCP $port"
	client "$t" "${c[@]}"
	local crc=$?
	both_exit_0 "$crc"
}

# pair_perftest SECONDS PORT SERVERCMD -- CLIENTCMD: perftest's server
# listens on TCP only once its port is ACTIVE, which over memif takes the
# client side's droce (the memif link comes up when both ends are there),
# and perftest's client connects to TCP once, right after its own port is
# up.  So the client starts when the server's memif socket exists; if it
# came before the server listened ("Couldn't connect"), it runs again once
# the server listens (the memif link comes up again with it).
pair_perftest() {
	local t=$1 port=$2
	shift 2
	local -a s=() c=()
	split_pair "$@"
	start_server "$t" "${s[@]}"
	wait_memif || fail "the server side never made its memif socket"
	client "$t" "${c[@]}"
	local crc=$?
	if [ $crc != 0 ] && grep -q "Couldn't connect to" "$tmp/client.log"; then
		echo "client connected before the server listened: again"
		wait_tcp "$port" || fail "server never listened on TCP $port"
		client "$t" "${c[@]}"
		crc=$?
	fi
	both_exit_0 "$crc"
}

# pair_cm SECONDS SERVERCMD -- CLIENTCMD: an rdma_cm pair.  The server
# listens some time after its memif socket appears; a client that came too
# early is rejected (REJ, invalid service ID, as the kernel's CM answers;
# rdma_client says "Connection refused"): only then it is started again (3
# tries).
pair_cm() {
	local t=$1
	shift
	local -a s=() c=()
	split_pair "$@"
	start_server "$t" "${s[@]}"
	wait_memif || fail "the server side never made its memif socket"
	sleep 1
	local try crc
	for try in 1 2 3; do
		client "$t" "${c[@]}"
		crc=$?
		[ $crc = 0 ] && break
		grep -qiE "REJECTED|reject|Connection refused" "$tmp/client.log" || break
		kill -0 "$srv_pid" 2>/dev/null || break
		echo "client rejected (server not listening yet), try $try"
		sleep 1
	done
	both_exit_0 "$crc"
}

# grep_in LOG PATTERN WHAT
grep_in() {
	grep -qE "$2" "$tmp/$1.log" || fail "$1: $3 (no /$2/)"
}

# positive NUMBER WHAT: NUMBER > 0
positive() {
	awk -v v="$1" 'BEGIN { exit !(v + 0 > 0) }' || fail "$2 is '$1', not > 0"
}

# pingpong PROGRAM ARGS...: ibv_*_pingpong, both sides, data checked
pingpong() {
	local prog=$1
	shift
	need "$prog"
	local port
	port=$(tcp_port 20000)
	pair_tcp 90 "$port" "$prog" -d droce0 -g 0 -p "$port" -n 200 -c "$@" -- \
		"$prog" -d droce0 -g 0 -p "$port" -n 200 -c "$@" 127.0.0.1
	local side
	for side in server client; do
		grep_in $side "^200 iters in" "no iteration count"
		grep_in $side "GID ::ffff:198\.18\.0\.[12]" "no RoCE v2 GID"
		positive "$(sed -nE 's/.* = ([0-9.]+) Mbit\/sec/\1/p' "$tmp/$side.log")" "$side Mbit/sec"
	done
}

# xsrq ARGS...: ibv_xsrq_pingpong (XRC: an XRC_SEND and an XRC_RECV QP per
# side, one XRC SRQ each, in the domain of /tmp/xrc_domain; each process has
# its own domain on droce), both sides end with "success" after every
# message came back and every object was destroyed in the program's order
xsrq() {
	need ibv_xsrq_pingpong
	local port
	port=$(tcp_port 20000)
	pair_tcp 90 "$port" ibv_xsrq_pingpong -d droce0 -g 0 -p "$port" -n 100 "$@" -- \
		ibv_xsrq_pingpong -d droce0 -g 0 -p "$port" -n 100 "$@" 127.0.0.1
	local side
	for side in server client; do
		grep_in $side "^success" "did not finish"
		grep_in $side "local: LID .*SRQN 0*[1-9a-f]" "no XRC SRQ number"
		grep_in $side "GID ::ffff:198\.18\.0\.[12]" "no RoCE v2 GID"
	done
}

# perftest TOOL ARGS...: server and client, the client's result row > 0
perftest() {
	local tool=$1
	shift
	need "$tool"
	local port
	port=$(tcp_port 20000)
	pair_perftest 120 "$port" "$tool" -d droce0 -x 0 -F -p "$port" "$@" -- \
		"$tool" -d droce0 -x 0 -F -p "$port" "$@" 127.0.0.1
	local row
	row=$(awk '/#bytes/ { getline; print; exit }' "$tmp/client.log")
	[ -n "$row" ] || fail "client printed no result row"
	case $tool in
	*_bw)
		# bytes iterations BW-peak BW-average MsgRate
		positive "$(echo "$row" | awk '{ print $4 }')" "BW average"
		positive "$(echo "$row" | awk '{ print $5 }')" "MsgRate"
		;;
	*_lat)
		# bytes iterations t_min t_max t_typical t_avg ...
		positive "$(echo "$row" | awk '{ print $5 }')" "t_typical"
		positive "$(echo "$row" | awk '{ print $6 }')" "t_avg"
		;;
	esac
	echo "result: $row"
}

# qperf_case TEST: qperf's RC tests connect through rdma_cm (-cm1) to the
# control host's address, so that address must be droce's: both sides run
# in a network namespace made here whose loopback carries 198.18.0.1 and
# .2 (the TCP control connection; droce's memif link is a unix socket).
qperf_case() {
	local test=$1
	need qperf ip
	[ "$(id -u)" = 0 ] || { echo "SKIP: qperf cells need root (network namespace)"; exit 77; }
	ns=droce-dropin-$$
	ip netns add "$ns" 2>/dev/null || { ns=; echo "SKIP: cannot create a network namespace"; exit 77; }
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add 198.18.0.1/32 dev lo
	ip -n "$ns" addr add 198.18.0.2/32 dev lo
	nsexec="ip netns exec $ns"
	local port
	port=$(tcp_port 20000)
	start_server 120 qperf -lp "$port"
	local i
	for i in $(seq 1 200); do
		ip netns exec "$ns" ss -Htln "sport = :$port" | grep -q . && break
		sleep 0.1
	done
	client 90 qperf -lp "$port" -cm1 -t 2 198.18.0.1 "$test"
	local crc=$?
	kill "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	srv_pid=
	[ $crc = 0 ] || fail "qperf client exited $crc"
	local v
	case $test in
	*_bw) v=$(sed -nE 's/^ *bw *= *([0-9.]+) .*/\1/p' "$tmp/client.log") ;;
	*_lat) v=$(sed -nE 's/^ *latency *= *([0-9.]+) .*/\1/p' "$tmp/client.log") ;;
	esac
	positive "$v" "qperf $test"
	grep -E "bw|latency" "$tmp/client.log"
}

# pair_rs SECONDS SERVERCMD -- CLIENTCMD: an rsocket pair (rdma_cm
# underneath): as pair_cm, a client refused because the server did not
# listen yet (ECONNREFUSED from the REJ) is started again (3 tries).
pair_rs() {
	local t=$1
	shift
	local -a s=() c=()
	split_pair "$@"
	start_server "$t" "${s[@]}"
	wait_memif || fail "the server side never made its memif socket"
	sleep 1
	local try crc
	for try in 1 2 3; do
		client "$t" "${c[@]}"
		crc=$?
		[ $crc = 0 ] && break
		grep -qiE "refused|reject" "$tmp/client.log" || break
		kill -0 "$srv_pid" 2>/dev/null || break
		echo "client refused (server not listening yet), try $try"
		sleep 1
	done
	both_exit_0 "$crc"
}

# rstream_row LOG: rstream's / riostream's result row (name bytes xfers
# iters total time Gb/sec usec/xfer): the Gb/sec column > 0
rstream_row() {
	local row
	row=$(awk 'NF == 8 && $1 != "name" && $6 ~ /s$/ && $7 ~ /^[0-9.]+$/' "$tmp/$1.log" | tail -1)
	[ -n "$row" ] || fail "$1 printed no result row"
	positive "$(echo "$row" | awk '{ print $7 }')" "$1 Gb/sec"
	echo "$1: $row"
}

# preload_pair SECONDS SERVERCMD -- CLIENTCMD: unmodified TCP programs with
# Debian's librspreload.so under droce-run: their TCP sockets are rsockets
rspreload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
preload_pair() {
	[ -r "$rspreload" ] || { echo "SKIP: $rspreload missing (librdmacm1)"; exit 77; }
	local t=$1
	shift
	local -a s=() c=()
	split_pair "$@"
	start_server "$t" env LD_PRELOAD="$rspreload" "${s[@]}"
	wait_memif || fail "the server side never made its memif socket"
	sleep 2
	client "$t" env LD_PRELOAD="$rspreload" "${c[@]}"
}

nsexec=
case $case_ in
symbols)
	# Every symbol each Debian program imports resolves in droce's libraries
	# with its rdma-core version, and droce-run's library path is droce's.
	need ibv_devinfo rping ib_write_bw qperf
	n=0
	for lib in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1; do
		nm -D --defined-only "$build/compat/$lib" | awk '{ print $3 }' >"$tmp/$lib.syms"
	done
	for b in ibv_devinfo ibv_devices ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong \
		ibv_srq_pingpong ibv_xsrq_pingpong rping rdma_server rdma_client udaddy ucmatose \
		ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat \
		ib_atomic_bw ib_atomic_lat qperf rstream riostream rcopy; do
		p=$(command -v $b) || fail "$b not installed"
		"$run" ldd -r "$p" >"$tmp/ldd.log" 2>&1 || fail "ldd -r $b failed"
		if grep -E "not found|undefined symbol" "$tmp/ldd.log"; then
			fail "$b: unresolved under droce-run"
		fi
		for lib in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1; do
			if grep -q "$lib =>" "$tmp/ldd.log" &&
				! grep -q "$lib => $build/compat/$lib" "$tmp/ldd.log"; then
				fail "$b: $lib is not droce's"
			fi
		done
		grep -q "libibverbs.so.1 => $build/compat/" "$tmp/ldd.log" || fail "$b: no droce libibverbs"
		# the import list, version by version, against the libraries' definitions
		while read -r sym; do
			name=${sym%@*}
			ver=${sym#*@}
			case $ver in
			IBVERBS*) lib=libibverbs.so.1 ;;
			RDMACM*) lib=librdmacm.so.1 ;;
			MLX5*) lib=libmlx5.so.1 ;;
			EFA*) lib=libefa.so.1 ;;
			*) continue ;;
			esac
			grep -qxE "$name@@?$ver" "$tmp/$lib.syms" ||
				fail "$b imports $sym, $lib does not define it"
			n=$((n + 1))
		done < <(nm -D --undefined-only "$p" | awk '{ print $2 }' | grep -E "@(IBVERBS|RDMACM|MLX5|EFA)_")
	done
	rm -f "$tmp"/*.log
	echo "$n imported symbols resolve with their versions"
	;;
devinfo)
	need ibv_devinfo
	# the embedded loopback config: droce0 and droce1
	timeout 60 "$run" ibv_devinfo -v >"$tmp/devinfo.log" 2>&1 || fail "ibv_devinfo -v exited $?"
	for d in 0 1; do
		grep_in devinfo "hca_id:.droce$d\$" "device droce$d missing"
		grep_in devinfo "GID\[  0\]:[[:space:]]+::ffff:198\.18\.0\.$((d + 1)), RoCE v2" "GID of droce$d"
	done
	grep_in devinfo "state:[[:space:]]+PORT_ACTIVE" "port not active"
	grep_in devinfo "link_layer:[[:space:]]+Ethernet" "link layer"
	grep_in devinfo "board_id:[[:space:]]+DROCE_SOFT_ROCE" "board_id"
	grep_in devinfo "max_srq:[[:space:]]+[1-9]" "SRQs not advertised"
	grep_in devinfo "atomic_cap:[[:space:]]+ATOMIC_HCA" "atomics"
	;;
devices)
	need ibv_devices
	timeout 60 "$run" ibv_devices >"$tmp/devices.log" 2>&1 || fail "ibv_devices exited $?"
	grep_in devices "droce0[[:space:]]+0000c6fffe120001" "droce0 and its GUID"
	grep_in devices "droce1[[:space:]]+0000c6fffe120002" "droce1 and its GUID"
	;;
rc_pingpong) pingpong ibv_rc_pingpong ;;
rc_pingpong_events) pingpong ibv_rc_pingpong -e ;;
rc_pingpong_new_send) pingpong ibv_rc_pingpong -N ;;
rc_pingpong_ts) pingpong ibv_rc_pingpong -t ;;
uc_pingpong) pingpong ibv_uc_pingpong ;;
ud_pingpong) pingpong ibv_ud_pingpong -s 512 ;;
srq_pingpong) pingpong ibv_srq_pingpong ;;
srq_pingpong_events) pingpong ibv_srq_pingpong -e ;;
xsrq_pingpong) xsrq ;;
xsrq_pingpong_events) xsrq -e ;;
rping)
	need rping
	pair_cm 90 rping -s -a 198.18.0.1 -V -v -C 10 -- rping -c -a 198.18.0.1 -V -v -C 10
	n=$(grep -c "^ping data: rdma-ping-" "$tmp/client.log")
	[ "$n" = 10 ] || fail "client printed $n verified pings, not 10"
	n=$(grep -c "^server ping data: rdma-ping-" "$tmp/server.log")
	[ "$n" = 10 ] || fail "server printed $n pings, not 10"
	grep -q "data mismatch" "$tmp/client.log" && fail "rping -V found a data mismatch"
	;;
rping_large)
	need rping
	# 65000-byte pings: multi-packet RDMA READs and WRITEs at MTU 1024
	pair_cm 90 rping -s -a 198.18.0.1 -V -S 65000 -C 5 -- rping -c -a 198.18.0.1 -V -S 65000 -C 5
	grep -q "data mismatch" "$tmp/client.log" && fail "rping -V found a data mismatch"
	;;
rdma_server)
	need rdma_server rdma_client
	pair_cm 60 rdma_server -s 198.18.0.1 -- rdma_client -s 198.18.0.1
	grep_in server "rdma_server: end 0" "server did not end 0"
	grep_in client "rdma_client: end 0" "client did not end 0"
	;;
udaddy)
	need udaddy
	pair_cm 60 udaddy -b 198.18.0.1 -- udaddy -s 198.18.0.1
	grep_in server "return status 0" "server status"
	grep_in client "return status 0" "client status"
	grep_in client "data transfers complete" "no data transfers"
	;;
ucmatose)
	need ucmatose
	pair_cm 60 ucmatose -b 198.18.0.1 -- ucmatose -s 198.18.0.1
	grep_in server "return status 0" "server status"
	grep_in client "return status 0" "client status"
	;;
mckey | mckey_sendonly)
	# UD multicast through rdma_cm: the receiver (memif server side) joins
	# first, the sender joins (a full member: its own datagrams loop back
	# to it too; -o: send-only, no attach, no loop, no IGMP) and sends; the
	# receiver counts the datagrams.  Both ports are captured: the frames
	# (group MAC and address, QPN 0xFFFFFF, Q_Key, ICRC), the local loop
	# and the IGMP reports and leaves are checked with tshark.
	need mckey
	n=20
	cargs=(-s)
	[ "$case_" = mckey_sendonly ] && cargs+=(-o -S 1024)
	echo "capture = $tmp/server.pcapng" >>"$tmp/server.ini"
	echo "capture = $tmp/client.pcapng" >>"$tmp/client.ini"
	pair_cm 60 mckey -m 239.1.2.3 -b 198.18.0.1 -C $n -- \
		mckey -m 239.1.2.3 -b 198.18.0.2 -C $n "${cargs[@]}"
	grep_in server "joined dgid: ::ffff:239.1.2.3" "server did not join the group's MGID"
	grep_in client "joined dgid: ::ffff:239.1.2.3" "client did not join the group's MGID"
	grep_in server "data transfers complete" "server did not receive the datagrams"
	grep_in client "data transfers complete" "client did not end its transfers"
	[ -x /usr/bin/tshark ] || { echo "SKIP: tshark is not installed: the frames are not checked"; exit 77; }
	copts=()
	[ "$case_" = mckey_sendonly ] && copts+=(--sendonly)
	/usr/bin/python3 "$(dirname "$0")/../decoders/check_mckey.py" --group 239.1.2.3 --count $n \
		--sender "$tmp/client.pcapng,198.18.0.2" --receiver "$tmp/server.pcapng,198.18.0.1" \
		"${copts[@]}" >"$tmp/check.log" 2>&1
	crc=$?
	cat "$tmp/check.log"
	[ $crc = 77 ] && { echo "SKIP: tshark or scapy missing"; exit 77; }
	[ $crc = 0 ] || fail "the captured frames (tests/decoders/check_mckey.py)"
	;;
qperf_rc_bw | qperf_rc_lat | qperf_rc_rdma_write_bw | qperf_rc_rdma_read_lat)
	qperf_case "${case_#qperf_}"
	;;
rstream | rstream_async | rstream_nonblocking | rstream_large)
	# rdmacm-utils' rstream: rsend / rrecv of verified data, ping-pong and
	# bandwidth, blocking (-T b), through rpoll (-T a), MSG_DONTWAIT (-T n)
	need rstream
	opts=(-S 10000 -C 200 -T v)
	case $case_ in
	rstream_async) opts+=(-T a) ;;
	rstream_nonblocking) opts+=(-T n -T a) ;;
	rstream_large) opts=(-S 1000000 -C 20 -T v -T b) ;;
	esac
	pair_rs 120 rstream -b 198.18.0.1 "${opts[@]}" -- rstream -s 198.18.0.1 "${opts[@]}"
	rstream_row client
	;;
riostream | riostream_async)
	# riostream: riomap on both sides, riowrite into the peer's mapping
	need riostream
	opts=(-S 10000 -C 200 -T v)
	[ $case_ = riostream_async ] && opts+=(-T a)
	pair_rs 120 riostream -b 198.18.0.1 "${opts[@]}" -- riostream -s 198.18.0.1 "${opts[@]}"
	rstream_row client
	;;
rcopy)
	# rcopy: a 3 MB file through rsend / rrecv, written by the server
	need rcopy
	head -c 3000000 /dev/urandom >"$tmp/src.bin"
	port=$(tcp_port 20000)
	start_server 90 rcopy -p "$port"
	wait_memif || fail "the server side never made its memif socket"
	sleep 1
	for try in 1 2 3; do
		client 60 rcopy "$tmp/src.bin" "198.18.0.1:$tmp/dst.bin" -p "$port"
		crc=$?
		[ $crc = 0 ] && break
		grep -qiE "refused|reject" "$tmp/client.log" || break
		sleep 1
	done
	[ $crc = 0 ] || fail "rcopy client exited $crc"
	cmp "$tmp/src.bin" "$tmp/dst.bin" || fail "the copy differs"
	echo "3000000 bytes copied and compared"
	;;
rspreload_iperf3)
	# iperf3, unmodified, with librspreload: its control and data
	# connections are rsockets over droce
	need iperf3
	port=$(tcp_port 20000)
	preload_pair 60 iperf3 -s -1 -B 198.18.0.1 -p "$port" -- iperf3 -c 198.18.0.1 -p "$port" -t 2 -f m
	crc=$?
	both_exit_0 $crc
	bw=$(sed -nE 's/.* ([0-9.]+) Mbits\/sec.*receiver.*/\1/p' "$tmp/client.log" | tail -1)
	positive "$bw" "iperf3 receiver Mbits/sec"
	echo "iperf3 over rsockets: $bw Mbits/sec"
	;;
rspreload_sockperf)
	# sockperf ping-pong over TCP (select-based), unmodified, with librspreload
	need sockperf
	port=$(tcp_port 20000)
	echo "T:198.18.0.1:$port" >"$tmp/feed"
	preload_pair 60 sockperf sr -f "$tmp/feed" -F s -- \
		sockperf pp --tcp -i 198.18.0.1 -p "$port" -t 2
	crc=$?
	[ $crc = 0 ] || fail "sockperf client exited $crc"
	grep -qE "dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0" \
		"$tmp/client.log" || fail "sockperf saw lost, duplicated or reordered messages"
	lat=$(sed -nE 's/.*Summary: Latency is ([0-9.]+) usec.*/\1/p' "$tmp/client.log" | tail -1)
	positive "$lat" "sockperf latency"
	echo "sockperf over rsockets: latency $lat usec"
	;;
perftest_*)
	# perftest_TOOL[_CONN][_old]: e.g. perftest_write_bw, perftest_send_lat_UD,
	# perftest_read_bw_old (--use_old_post_send)
	spec=${case_#perftest_}
	args=()
	if [[ $spec == *_old ]]; then
		args+=(--use_old_post_send)
		spec=${spec%_old}
	fi
	conn=RC
	if [[ $spec =~ _(UC|UD)$ ]]; then
		conn=${BASH_REMATCH[1]}
		spec=${spec%_*}
	fi
	tool=ib_$spec
	case $spec in
	*_bw) args+=(-n 500) ;;
	*_lat) args+=(-n 500) ;;
	esac
	case $spec in
	atomic_*) args+=(-s 8) ;;
	*) [ $conn = UD ] && args+=(-s 512) || args+=(-s 4096) ;;
	esac
	perftest "$tool" -c "$conn" "${args[@]}"
	;;
*)
	echo "unknown case $case_"
	exit 2
	;;
esac
echo "ok [$case_]"
exit 0
