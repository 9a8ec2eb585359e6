#!/bin/bash
# tunbed-traffic's receive stall (docs/traffic.md, "Receive stall"): a pull session over one
# link, cut for half a second in the middle (the server's end of the link down, then up: TCP
# resends once it is back), reports a stall of the session (rx_stall_max_ms) at least as long
# as most of the cut, and tcp.rx_stall names it; a push test's client receives nothing and
# reports none. The stall is the longest gap between two reads with data at the client: no
# byte can arrive while the link is down, so the cut is a lower bound of it (half of it, as
# the check: what was in the socket's queue when the link went down is read at once).
#
#  P-client 198.18.1.1 ---wire--- 198.18.1.2 P-server   (the server's end down for CUT_S)
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbstl
CUT_S=0.5

"$TOPO" up direct --prefix "$P" >/dev/null
dev=$(ip -n "$P-server" -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print $2; exit }')
[ -n "$dev" ] || die "no link in $P-server"
tr_server "$P-server" 9400

receiving() { # the client's one session has received more than 1 MiB
	ip netns exec "$P-client" ss -Htin state established "( dport = :9400 )" |
		grep -oE 'bytes_received:[0-9]+' | awk -F: '$2 > 1048576 { n++ } END { exit !n }'
}

ip netns exec "$P-client" "$TRAFFIC" client 198.18.1.2 --port 9400 --pattern pull --sessions 1 \
	--time 4 --verify --json >"$TMP/pull.json" 2>"$TMP/pull.err" &
client=$!
poll 20 receiving || die "the pull session did not start: $(cat "$TMP/pull.err")"
cut_ns=$(date +%s%N)
ip -n "$P-server" link set "$dev" down
sleep "$CUT_S" # the stall itself, not a wait for readiness
ip -n "$P-server" link set "$dev" up
cut_ms=$((($(date +%s%N) - cut_ns) / 1000000))
log "the link was down for $cut_ms ms"
wait_bg "$client" 60 "the pull client"
expect_eq "pull: exit status" "$BG_STATUS" 0
j=$(cat "$TMP/pull.json")
expect_eq "pull: verified, nothing failed" "$(json_get "$j" '(d["tcp"]["verify"]["mismatches"], d["tcp"]["failed"])')" "(0, 0)"
expect_eq "pull: the session's stall covers most of the cut, and tcp.rx_stall names it" \
	"$(json_get "$j" "(lambda s: (s['rx_stall_max_ms'] >= $cut_ms / 2, d['tcp']['rx_stall'] == {'max_ms': s['rx_stall_max_ms'], 'session': 0}))(d['tcp']['per_session'][0])")" \
	"(True, True)"
log "pull: stall $(json_get "$j" 'd["tcp"]["rx_stall"]["max_ms"]') ms for a cut of $cut_ms ms"

tr_client "$P-client" 198.18.1.2 --port 9400 --pattern push --sessions 1 --time 0.5 --json
expect_eq "push: exit status" "$TR_STATUS" 0
expect_eq "push: no stall at the client, which receives nothing" \
	"$(json_get "$TR_JSON" '("rx_stall" in d["tcp"], "rx_stall_max_ms" in d["tcp"]["per_session"][0])')" "(False, False)"
tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
