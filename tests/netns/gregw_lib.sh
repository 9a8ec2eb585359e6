#!/bin/bash
# Helpers for the gregw namespace tests, on top of lib.sh: start a gregw in a namespace and
# wait until its control socket answers, query it, stop it with SIGTERM and check it exits
# 0 promptly. Every gregw started here is stopped by the cleanup, by PID.
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GREGW="$TUNBED_BIN/gregw"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -A GW_PID GW_OUT GW_SOCK
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

# gw_start NAME NETNS args...: gregw in NETNS, stdout (its JSON) to $TMP/NAME.out, its control
# socket $TMP/NAME.sock (in GW_CTL_DIR instead when that is set).
gw_start() {
	local name=$1 ns=$2
	shift 2
	[ -x "$GREGW" ] || die "$GREGW not built"
	GW_OUT[$name]="$TMP/$name.out"
	GW_SOCK[$name]="${GW_CTL_DIR:-$TMP}/$name.sock"
	ip netns exec "$ns" "$GREGW" --ctl "${GW_SOCK[$name]}" "${GW_MODE_ARGS[@]}" "$@" >"${GW_OUT[$name]}" 2>"$TMP/$name.err" &
	GW_PID[$name]=$!
	GW_STARTED+=("$name")
	if ! poll 30 "$GREGW" ctl "${GW_SOCK[$name]}" stats; then
		cat "$TMP/$name.err" >&2
		die "gregw $name did not come up"
	fi
}

gw_stats() { "$GREGW" ctl "${GW_SOCK[$1]}" "${2:-stats}"; }

# gw_true NAME EXPR: the Python expression EXPR on NAME's stats document (d) is true now. For
# polls on counters: a worker counts a packet after it has passed it on (the ICMP error it
# writes into TUN can reach the pinger before icmp_sent counts it).
gw_true() { [ "$(json_get "$(gw_stats "$1")" "$2")" = True ]; }

# gw_stop NAME: SIGTERM; gregw must exit 0 within GW_STOP_MS and remove its control socket.
# The point is that SIGTERM stops it promptly (an eventfd wakes its workers): measured here
# at 50 to 160 ms (sanitizer build; idle, and with gregw_sigterm's eight flows running), in
# steps of poll's 50 ms. The bound is 5 s, not 1 s, because closing the TUN device takes the
# kernel's RTNL lock, which another test's namespaces going up or down hold at the same time
# on a loaded two-CPU box; a gregw that ignored the signal, or noticed it only seconds later,
# still fails. No exit 30 s after the signal is a hang: failed, and killed (stop_bg).
GW_STOP_MS=5000
gw_stop() {
	local name=$1 pid=${GW_PID[$1]} t0 ms
	[ -n "$pid" ] || return 0
	t0=$(date +%s%N)
	stop_bg "$pid" TERM "gregw $name"
	ms=$((($(date +%s%N) - t0) / 1000000))
	GW_PID[$name]=""
	expect_eq "gregw $name exit status" "$BG_STATUS" "0"
	if [ "$ms" -gt "$GW_STOP_MS" ]; then
		fail "gregw $name took $ms ms to stop, more than $GW_STOP_MS"
	else
		log "ok: gregw $name stopped in $ms ms"
	fi
	if [ -e "${GW_SOCK[$name]}" ]; then fail "gregw $name left its control socket"; fi
}

gw_cleanup() {
	for name in "${GW_STARTED[@]}"; do
		local pid=${GW_PID[$name]}
		if [ -n "$pid" ]; then
			stop_bg "$pid" TERM "gregw $name (at cleanup)"
			GW_PID[$name]=""
		fi
	done
}

# gw_finals FILE: what a gregw's JSON output (one document a line) holds, as "N D F A":
# whether there are more than N=2 documents (True/False), how many say "final": true, whether
# the last does, and whether every other one says "final": false.
gw_finals() {
	python3 - "$1" <<'PY'
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
finals = sum(d.get("final") is True for d in docs)
print(len(docs) > 2, finals, bool(docs) and docs[-1].get("final") is True,
      all(d.get("final") is False for d in docs[:-1]))
PY
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
# BULK_OK=1 when both sides agree. Each transfer's server writes a file of its own: the
# redirect truncates a file only in the forked child, after the poll may have looked, so a
# reused file could show the previous server's "listening" to a client that then connects
# before this server listens. (The server's wait is bounded by bulk.py's --timeout, 60 s.)
BULK_N=0
bulk_transfer() { # prefix receiver-addr flows bytes [sender-host receiver-host]
	local p=$1 addr=$2 flows=$3 bytes=$4 from=${5:-client} to=${6:-server} sout cout out
	BULK_N=$((BULK_N + 1))
	out="$TMP/bulk-server-$BULK_N.out"
	ip netns exec "$p-$to" python3 "$HERE/bulk.py" server --bind "$addr" --port 9000 \
		--flows "$flows" >"$out" 2>&1 &
	local spid=$!
	poll 30 grep -q listening "$out" || die "bulk server $BULK_N did not say it listens: $(cat "$out")"
	cout=$(ip netns exec "$p-$from" python3 "$HERE/bulk.py" client --connect "$addr" --port 9000 \
		--flows "$flows" --bytes "$bytes") || fail "bulk client failed"
	wait "$spid" || fail "bulk server failed: $(cat "$out")"
	sout=$(tail -1 "$out")
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
