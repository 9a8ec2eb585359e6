#!/bin/bash
# tunbed-traffic's ping probes (--icmp) on direct.topo, unprivileged ICMP echo sockets: idle over
# IPv4 and IPv6 every probe is answered, with ordered figures; beside 4 sessions the probes run
# in the measured window only; a client whose group the namespace's ping_group_range leaves out
# is refused before the test with the line naming the sysctl; SIGTERM ends probes alone at once.
#
#  P-client 198.18.1.1, 2001:2:0:1::1 ---wire--- 198.18.1.2, 2001:2:0:1::2 P-server
#  (ping_group_range "0 2147483647" in P-client, the kernel's "1 0" in P-server)
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbicmp

sed '/^\[host client\]/a sysctl.net.ipv4.ping_group_range = 0 2147483647' "$TOPOLOGIES/direct.topo" >"$TMP/ping.topo"
"$TOPO" up "$TMP/ping.topo" --prefix "$P" >/dev/null

# Probes alone need no tunbed-traffic server: the server's kernel answers them.
tr_client "$P-client" 198.18.1.2 --icmp --icmp-count 20 --icmp-interval 0.01 --json
expect_eq "idle IPv4: exit status" "$TR_STATUS" "0"
expect_eq "idle IPv4: every probe answered once" "$(json_get "$TR_JSON" '(d["icmp"]["probes"], d["icmp"]["received"], d["icmp"]["lost"], d["icmp"]["loss_percent"], d["icmp"]["duplicates"], d["icmp"]["strays"], d["config"]["icmp"], d["icmp"]["error"])')" "(20, 20, 0, 0.0, 0, 0, True, None)"
expect_eq "idle IPv4: 0 < min <= avg <= max, mdev and jitter within them" "$(json_get "$TR_JSON" '(lambda i: 0 < i["min_ms"] <= i["avg_ms"] <= i["max_ms"] < 1000 and 0 <= i["mdev_ms"] <= i["max_ms"] and 0 <= i["jitter_ms"] <= i["max_ms"])(d["icmp"])')" "True"
expect_eq "idle IPv4: no server asked" "$(json_get "$TR_JSON" '"server_s" in d["cpu"]')" "False"
# IPv6: the first echo waits for neighbour discovery, so the count, not the figures, is checked.
tr_client "$P-client" 2001:2:0:1::2 --icmp --icmp-count 5 --icmp-interval 0.3 --json
expect_eq "idle IPv6: every probe answered" "$TR_STATUS $(json_get "$TR_JSON" '(d["icmp"]["probes"], d["icmp"]["received"])')" "0 (5, 5)"
tr_client "$P-client" 198.18.1.2 --icmp --icmp-count 3 --icmp-interval 0.01
expect_match "text: the ping line" "$(cat "$TMP/client.json")" "ping     3 probes, 3 received \(0\.0% loss\): min [0-9.]+ avg [0-9.]+ max [0-9.]+ mdev [0-9.]+ jitter [0-9.]+ ms"

# Beside a load: from the end of the warm-up to the deadline, at most the count.
tr_server "$P-server" 9400
tr_client "$P-client" 198.18.1.2 --sessions 4 --time 1 --warmup 0.5 --icmp --icmp-interval 0.05 --icmp-count 1000 --json
expect_eq "loaded: exit status" "$TR_STATUS" "0"
# Probes only in the measured window, one each 0.05 s (how many a busy machine manages to send
# in it is not the test's business), each answered or counted lost.
expect_eq "loaded: probes in the measured window only, at most one each 0.05 s, each accounted for" "$(json_get "$TR_JSON" '(lambda i, s: (1 <= i["probes"] <= int(s / 0.05) + 1, i["received"] + i["lost"] == i["probes"], i["received"] > 0 and i["avg_ms"] > 0))(d["icmp"], d["measured_s"])')" "(True, True, True)"
tr_stop

# A group outside the range: refused before anything is sent, the sysctl named.
expect_refusal "ping_group_range '1 0': refused" 1 "^tunbed-traffic: --icmp: group 0 may not open ICMP echo sockets here \(net.ipv4.ping_group_range is '1 0'; allow it: sysctl -w net.ipv4.ping_group_range='0 2147483647'\)$" ip netns exec "$P-server" "$TRAFFIC" client 198.18.1.1 --icmp --json

# SIGTERM ends probes alone at once, with what they have.
# Echo requests the server's kernel has answered so far (Icmp OutEchoReps of /proc/net/snmp).
# shellcheck disable=SC2016 # an awk program
echo_replies() { ip netns exec "$P-server" awk '/^Icmp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "OutEchoReps") c = i; h = 1 } else print $c }' /proc/net/snmp; }
three_sent() { [ "$(echo_replies)" -ge $((base + 3)) ]; }
base=$(echo_replies)
ip netns exec "$P-client" "$TRAFFIC" client 198.18.1.2 --icmp --icmp-count 1000 --icmp-interval 0.01 --json >"$TMP/term.json" 2>"$TMP/term.err" &
cpid=$!
poll 30 three_sent || fail "the probes did not start"
stop_bg "$cpid" TERM "tunbed-traffic client --icmp"
expect_eq "SIGTERM: exit 1, interrupted, fewer than the count" "$BG_STATUS $(json_get "$(cat "$TMP/term.json")" '(d["interrupted"], 0 < d["icmp"]["probes"] < 1000)')" "1 (True, True)"

"$TOPO" down "$TMP/ping.topo" --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
