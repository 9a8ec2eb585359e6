#!/bin/bash
# Helpers for the gregw namespace tests, on top of lib.sh: start a gregw in a namespace and
# wait until its control socket answers, query it, stop it with SIGTERM and check it exits
# 0 within a second. Every gregw started here is stopped by the cleanup, by PID.
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GREGW="$TUNBED_BIN/gregw"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -A GW_PID GW_OUT
GW_STARTED=()

# The data path mode every gregw of a test runs in, from GREGW_MODE (ctest runs each test in
# each mode): "gre" or "gre-udp", with offloads on, or with "-nooffload" appended.
GW_MODE=${GREGW_MODE:-gre}
GW_ENCAP=${GW_MODE%-nooffload}
GW_MODE_ARGS=(--encap "$GW_ENCAP")
case $GW_MODE in
*-nooffload) GW_MODE_ARGS+=(--offload off) ;;
esac
# GRE-in-UDP adds a UDP header: every MTU a test expects is this much lower. Captures,
# tshark and the injector take the transport as well.
GW_UDP=0
GW_CAPTURE_FILTER="ip proto 47"
GW_TSHARK_ARGS=()
GW_INJECT_ARGS=()
case $GW_ENCAP in
gre) ;;
gre-udp)
	GW_UDP=8
	GW_CAPTURE_FILTER="udp port 4754"
	GW_TSHARK_ARGS=(-d "udp.port==4754,gre")
	GW_INJECT_ARGS=(--udp 4754)
	;;
*) die "GREGW_MODE $GW_MODE: expected gre, gre-udp, gre-nooffload or gre-udp-nooffload" ;;
esac

# Over GRE-in-UDP with offloads, gregw hands the kernel a superpacket's datagrams in one
# UDP_SEGMENT send, and veth carries them as one frame to the peer's socket. A capture on the
# link would see those frames whole; with UDP segmentation off on both ends of transit the
# kernel cuts them first, as a NIC without USO would, and captures see datagrams.
gw_transit_datagrams() { # prefix
	if [ "$GW_ENCAP" = gre-udp ]; then
		ip netns exec "$1-gwa" ethtool -K transit tx-udp-segmentation off >/dev/null
		ip netns exec "$1-gwb" ethtool -K transit tx-udp-segmentation off >/dev/null
	fi
}

# gw_start NAME NETNS args...: gregw in NETNS, stdout (its JSON) to $TMP/NAME.out.
gw_start() {
	local name=$1 ns=$2
	shift 2
	[ -x "$GREGW" ] || die "$GREGW not built"
	GW_OUT[$name]="$TMP/$name.out"
	ip netns exec "$ns" "$GREGW" --ctl "$TMP/$name.sock" "${GW_MODE_ARGS[@]}" "$@" >"${GW_OUT[$name]}" 2>"$TMP/$name.err" &
	GW_PID[$name]=$!
	GW_STARTED+=("$name")
	if ! poll 30 "$GREGW" ctl "$TMP/$name.sock" stats; then
		cat "$TMP/$name.err" >&2
		die "gregw $name did not come up"
	fi
}

gw_stats() { "$GREGW" ctl "$TMP/$1.sock" "${2:-stats}"; }

# gw_stop NAME: SIGTERM, then the exit status must be 0 and come within a second.
gw_stop() {
	local name=$1 pid=${GW_PID[$1]} t0 status=0
	[ -n "$pid" ] || return 0
	t0=$(date +%s%N)
	kill -TERM "$pid"
	wait "$pid" || status=$?
	GW_PID[$name]=""
	local ms=$((($(date +%s%N) - t0) / 1000000))
	expect_eq "gregw $name exit status" "$status" "0"
	if [ "$ms" -gt 1000 ]; then fail "gregw $name took $ms ms to stop"; else log "ok: gregw $name stopped in $ms ms"; fi
	if [ -e "$TMP/$name.sock" ]; then fail "gregw $name left its control socket"; fi
}

gw_cleanup() {
	for name in "${GW_STARTED[@]}"; do
		local pid=${GW_PID[$name]}
		if [ -n "$pid" ]; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
}

# gw_a4 / gw_b4 PREFIX extra-args...: one side of gw_pair4 (started with its own
# environment, say).
gw_a4() {
	local p=$1
	shift
	gw_start gwa "$p-gwa" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.3.0/24 "$@"
}
gw_b4() {
	local p=$1
	shift
	gw_start gwb "$p-gwb" --remote 198.18.0.1 --addr 198.19.0.2/24 --route 198.18.1.0/24 "$@"
}
# The RAS pair over IPv4: gwa 198.19.0.1 <-> gwb 198.19.0.2, extra options for both.
gw_pair4() { # prefix extra-args...
	gw_a4 "$@"
	gw_b4 "$@"
}

# A verified transfer, from client to server unless two other hosts are named; sets
# BULK_OK=1 when both sides agree.
bulk_transfer() { # prefix receiver-addr flows bytes [sender-host receiver-host]
	local p=$1 addr=$2 flows=$3 bytes=$4 from=${5:-client} to=${6:-server} sout cout
	ip netns exec "$p-$to" python3 "$HERE/bulk.py" server --bind "$addr" --port 9000 \
		--flows "$flows" >"$TMP/bulk-server.out" 2>&1 &
	local spid=$!
	poll 30 grep -q listening "$TMP/bulk-server.out" || die "bulk server did not start"
	cout=$(ip netns exec "$p-$from" python3 "$HERE/bulk.py" client --connect "$addr" --port 9000 \
		--flows "$flows" --bytes "$bytes") || fail "bulk client failed"
	wait "$spid" || fail "bulk server failed"
	sout=$(tail -1 "$TMP/bulk-server.out")
	BULK_OK=0
	if [ -n "$cout" ] && [ "$cout" = "$sout" ]; then BULK_OK=1; fi
	expect_eq "bulk $from -> $to, $flows flows, $bytes bytes: hashes equal on both sides" "$BULK_OK" "1"
	[ "$BULK_OK" = 1 ] || echo "client: $cout / server: $sout" >&2
}

gregw_test_init() {
	netns_test_init
	# shellcheck disable=SC2154 # rc is assigned inside the trap string
	trap 'rc=$?; gw_cleanup; cleanup "$rc"' EXIT
}
