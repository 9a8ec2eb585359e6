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
