#!/bin/bash
# Helpers for the tunbed-traffic namespace tests, on top of lib.sh: start a server in a
# namespace and wait until it listens; run a client and keep its JSON.
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TRAFFIC="$TUNBED_BIN/tunbed-traffic"

listening() { # ns port
	[ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2")" ]
}

# tr_server NS PORT [options]: the server's PID in TR_SERVER.
tr_server() {
	local ns=$1 port=$2
	shift 2
	[ -x "$TRAFFIC" ] || die "$TRAFFIC not built"
	ip netns exec "$ns" "$TRAFFIC" server --port "$port" "$@" >"$TMP/server-$port.out" 2>&1 &
	TR_SERVER=$!
	poll 30 listening "$ns" "$port" || die "tunbed-traffic server on port $port did not start: $(cat "$TMP/server-$port.out")"
}

# tr_stop: SIGTERM to the server in TR_SERVER, which must exit 0 (within 30 s: stop_bg).
tr_stop() {
	stop_bg "$TR_SERVER" TERM "tunbed-traffic server"
	[ "$BG_STATUS" = 0 ] || fail "tunbed-traffic server exit status $BG_STATUS"
}

# sessions_flowing NS PORT N: at least N connections to the server's PORT in NS have each
# brought it more than 1 MiB (data sessions: a control connection carries a few bytes).
sessions_flowing() {
	local n
	n=$(ip netns exec "$1" ss -Htin state established "( sport = :$2 )" |
		grep -oE 'bytes_received:[0-9]+' | awk -F: '$2 > 1048576' | wc -l)
	[ "$n" -ge "$3" ]
}

# tr_client NS args...: stdout in $TMP/client.json, exit status in TR_STATUS.
tr_client() {
	local ns=$1
	shift
	TR_STATUS=0
	ip netns exec "$ns" "$TRAFFIC" client "$@" >"$TMP/client.json" 2>"$TMP/client.err" || TR_STATUS=$?
	TR_JSON=$(cat "$TMP/client.json")
}

# The same bytes on both sides, for every session: what the client sent, the server got.
sessions_equal() { # json
	json_get "$1" 'all(s["sent"] == s.get("server_received", -1) and s["sent"] > 0 for s in d["tcp"]["per_session"])'
}
