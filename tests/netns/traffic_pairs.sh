#!/bin/bash
# tunbed-traffic --pairs on direct.topo with more addresses on each side: one client process
# spreads its sessions over the pairs, session i on pair i mod n; the server sees each session
# arrive on its pair's remote address from its local one; the JSON names each session's pair;
# a pair whose local address the client does not have fails its sessions.
#
#  P-client 198.18.1.1 (control)          ---wire---  198.18.1.2 (control)  P-server :9400
#           198.18.1.11, .12, 2001:2:0:1::11           198.18.1.21, .22, 2001:2:0:1::21
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbpairs
S=198.18.1.2

"$TOPO" up direct --prefix "$P" >/dev/null
cdev=$(ip -n "$P-client" -o addr show to 198.18.1.1 | awk '{print $2}')
sdev=$(ip -n "$P-server" -o addr show to 198.18.1.2 | awk '{print $2}')
for a in 198.18.1.11/24 198.18.1.12/24; do ip -n "$P-client" addr add "$a" dev "$cdev"; done
for a in 198.18.1.21/24 198.18.1.22/24; do ip -n "$P-server" addr add "$a" dev "$sdev"; done
ip -n "$P-client" addr add 2001:2:0:1::11/64 dev "$cdev" nodad
ip -n "$P-server" addr add 2001:2:0:1::21/64 dev "$sdev" nodad
tr_server "$P-server" 9400

cat >"$TMP/pairs" <<'PAIRS'
# LOCAL REMOTE
198.18.1.11 198.18.1.21
198.18.1.12   198.18.1.22   # the second

2001:2:0:1::11 2001:2:0:1::21
PAIRS

# The data connections the server has on its port, as "LOCAL->REMOTE" of the client's side,
# sorted: the control connection (from 198.18.1.1) left out. The server's socket is dual-stack:
# IPv4 peers are IPv4-mapped there.
server_pairs() {
	ip netns exec "$P-server" ss -Htn state established "( sport = :9400 )" |
		awk '{print $4, $3}' | sed -E 's/::ffff://g; s/\[?([0-9a-f.:]+)\]?:[0-9]+ \[?([0-9a-f.:]+)\]?:[0-9]+/\1->\2/' |
		grep -v '^198\.18\.1\.1->' | LC_ALL=C sort
}
sessions_up() { [ "$(server_pairs | wc -l)" -ge "$1" ]; }

ip netns exec "$P-client" "$TRAFFIC" client $S --sessions 7 --time 3 --pairs "$TMP/pairs" --json \
	>"$TMP/client.json" 2>"$TMP/client.err" &
client=$!
poll 20 sessions_up 7 || fail "7 sessions did not reach the server: $(server_pairs | tr '\n' ' ')"
want="198.18.1.11->198.18.1.21 198.18.1.11->198.18.1.21 198.18.1.11->198.18.1.21 198.18.1.12->198.18.1.22 198.18.1.12->198.18.1.22 2001:2:0:1::11->2001:2:0:1::21 2001:2:0:1::11->2001:2:0:1::21"
expect_eq "the server sees the sessions on their pairs (3, 2 and 2)" "$(server_pairs | tr '\n' ' ' | sed 's/ $//')" "$want"
wait_bg "$client" 30 "tunbed-traffic client"
TR_JSON=$(cat "$TMP/client.json")
expect_eq "pairs: exit status" "$BG_STATUS" "0"
expect_eq "pairs: complete, bytes equal on both sides" "$(json_get "$TR_JSON" 'd["complete"]') $(sessions_equal "$TR_JSON")" "True True"
expect_eq "pairs: the JSON names session i's pair i mod 3" "$(json_get "$TR_JSON" '[(s["id"], s["local"], s["remote"]) for s in d["tcp"]["per_session"]][:4] + [d["config"]["pairs"]]')" "[(0, '198.18.1.11', '198.18.1.21'), (1, '198.18.1.12', '198.18.1.22'), (2, '2001:2:0:1::11', '2001:2:0:1::21'), (3, '198.18.1.11', '198.18.1.21'), 3]"

# Without --pairs the JSON says nothing of pairs.
tr_client "$P-client" $S --sessions 2 --bytes 1m --json
expect_eq "no pairs: no local or remote" "$TR_STATUS $(json_get "$TR_JSON" 'any("local" in s for s in d["tcp"]["per_session"]) or "pairs" in d["config"]')" "0 False"

# A local address the client does not have: its sessions fail to bind, the others run.
printf '198.18.1.11 198.18.1.21\n198.18.1.99 198.18.1.22\n' >"$TMP/pairs-bad"
tr_client "$P-client" $S --sessions 2 --bytes 1m --pairs "$TMP/pairs-bad" --json
expect_eq "a local address not here: exit 1, session 1 failed" "$TR_STATUS $(json_get "$TR_JSON" '[s["error"] for s in d["tcp"]["per_session"]]')" "1 [None, 'Cannot assign requested address']"

expect_refusal "a pipe for a pairs file" 2 "^tunbed-traffic: --pairs /dev/fd/[0-9]+: not a regular file$" \
	ip netns exec "$P-client" "$TRAFFIC" client $S --pairs <(echo 198.18.1.11 198.18.1.21) --json
printf '198.18.1.11\n' >"$TMP/pairs-worse"
expect_refusal "a bad pairs file names its line" 2 "^tunbed-traffic: --pairs $TMP/pairs-worse:1: expected 'LOCAL REMOTE': two addresses, found one$" \
	ip netns exec "$P-client" "$TRAFFIC" client $S --pairs "$TMP/pairs-worse" --json

tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
