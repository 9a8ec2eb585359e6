#!/bin/bash
# tunbed-traffic's client stopped by SIGTERM when the path to its server is gone (the link
# down, as when a tunnel stops): its wind-down (threads, probes, the server's side over the
# control connection) is bounded by CL_STOP_WAIT_MS (3 s), after which it prints what it has
# and exits 1. One client with sessions and latency probes, one churning (its sessions keep
# reconnecting, so some are always connecting when the path goes).
#
#  P-client 198.18.1.1 ---wire (taken down on the server's side)--- 198.18.1.2 P-server
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbstop
S=198.18.1.2

# churning NS N: at least N connections to port 9400 in NS are being set up or used.
churning() {
	[ "$(ip netns exec "$1" ss -Htn "( dport = :9400 )" | wc -l)" -ge "$2" ]
}

"$TOPO" up direct --prefix "$P" >/dev/null
tr_server "$P-server" 9400
ip netns exec "$P-client" "$TRAFFIC" client $S --sessions 4 --time 60 --rr --json \
	>"$TMP/rr.json" 2>"$TMP/rr.err" &
rr_pid=$!
ip netns exec "$P-client" "$TRAFFIC" client $S --sessions 8 --churn --bytes 64k --time 60 \
	--json >"$TMP/churn.json" 2>"$TMP/churn.err" &
churn_pid=$!
poll 30 sessions_flowing "$P-server" 9400 4 || die "the 4 sessions did not bring data to the server"
poll 30 churning "$P-client" 8 || die "the churning client did not connect"

# The path goes: the server's end of the link is down, nothing comes back any more.
ip -n "$P-server" link set wire down
kill -TERM "$rr_pid" "$churn_pid"
start=$SECONDS
wait_bg "$rr_pid" 6 "the client with probes, 6 s after SIGTERM (its bound is 3 s)"
expect_eq "path gone, SIGTERM: the client with probes exits 1" "$BG_STATUS" "1"
wait_bg "$churn_pid" 6 "the churning client, 6 s after SIGTERM (its bound is 3 s)"
expect_eq "path gone, SIGTERM: the churning client exits 1" "$BG_STATUS" "1"
log "both clients exited $((SECONDS - start)) s after SIGTERM"
for c in rr churn; do
	out=$(cat "$TMP/$c.json")
	expect_eq "$c: its JSON, interrupted, with what it counted" "$(json_get "$out" '(d["interrupted"], d["complete"], len(d["tcp"]["per_session"]) > 0, all(s["sent"] > 0 for s in d["tcp"]["per_session"]))')" "(True, False, True, True)"
	expect_match "$c: says the server's side is missing" "$(cat "$TMP/$c.err")" "198.18.1.2 port 9400: no answer within 3 s of the stop: the server's side of the test is missing"
done
expect_eq "the probes' results are there" "$(json_get "$(cat "$TMP/rr.json")" 'd["rr"]["probes"] > 0')" "True"

ip -n "$P-server" link set wire up
tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
