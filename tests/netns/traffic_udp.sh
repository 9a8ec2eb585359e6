#!/bin/bash
# tunbed-traffic over UDP on direct.topo: a clean run loses nothing; many tests one after the
# other against one server lose nothing either (each test's sessions are forgotten once its
# results are taken); then with the wire capped by tbf below the sending rate, the loss the
# server reports equals exactly the packets tbf dropped, and every datagram sent is either
# received or lost.
#
#  P-client 198.18.1.1 ---wire (tbf 20mbit on both egresses, second run)--- 198.18.1.2 P-server
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbudp

"$TOPO" up direct --prefix "$P" >/dev/null
tr_server "$P-server" 9400
tr_client "$P-client" 198.18.1.2 --udp --rate 20m --size 1000 --sessions 2 --time 2 --json
expect_eq "clean: exit status" "$TR_STATUS" "0"
expect_eq "clean: nothing lost, duplicated or reordered" "$(json_get "$TR_JSON" '(d["udp"]["lost"], d["udp"]["duplicates"], d["udp"]["reordered"], d["udp"]["not_sent"])')" "(0, 0, 0, 0)"
# 2 x 20 Mbit/s for 2 s is 10,000 datagrams; a busy machine may send fewer, never more.
expect_eq "clean: everything sent arrived, at most the rate" "$(json_get "$TR_JSON" 'd["udp"]["received"] == d["udp"]["sent"] and 4000 <= d["udp"]["sent"] <= 10010')" "True"
expect_eq "clean: jitter is small and known" "$(json_get "$TR_JSON" '0 <= d["udp"]["jitter_ms_max"] < 50')" "True"
tr_stop

# One server thread tracks SRV_UDP_SLOTS (4096) sessions. Its slots were never freed: after
# some 4,000 sessions of earlier tests the table was full, and a new test's sessions went
# uncounted, so that what they sent looked lost. Six tests of 1,000 sessions one after the
# other, then one of 4, against one server thread: each must lose nothing on this clean link.
tr_server "$P-server" 9400 --threads 1
for run in 1 2 3 4 5 6 7; do
	n=1000
	[ "$run" = 7 ] && n=4
	# Three datagrams a session (--bytes, not --time): every session sends, however busy the
	# machine is.
	tr_client "$P-client" 198.18.1.2 --udp --rate 8k --size 100 --sessions $n --bytes 300 --json
	expect_eq "run $run of $n sessions after $(( (run - 1) * 1000 )): nothing lost, every session counted" "$TR_STATUS $(json_get "$TR_JSON" '(d["udp"]["lost"], d["udp"]["received"] == d["udp"]["sent"] > 0, d["udp"]["not_sent"], sum(1 for s in d["udp"]["per_session"] if s.get("received", 0) > 0))')" "0 (0, True, 0, $n)"
done
tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null

sed '/^\[link wire\]/a rate = 20mbit\nlimit = 30k' "$TOPOLOGIES/direct.topo" >"$TMP/capped.topo"
"$TOPO" up "$TMP/capped.topo" --prefix "$P" >/dev/null
tr_server "$P-server" 9400
tr_client "$P-client" 198.18.1.2 --udp --rate 40m --size 1000 --time 2 --json
dropped=$(json_get "$(tc -n "$P-client" -s -j qdisc show dev wire)" 'd[0]["drops"]')
expect_eq "capped: tbf dropped about half" "$(json_get "$TR_JSON" "0.3 < $dropped / d['udp']['sent'] < 0.7")" "True"
expect_eq "capped: loss equals tbf's drops exactly" "$(json_get "$TR_JSON" 'd["udp"]["lost"]')" "$dropped"
expect_eq "capped: sent = received + lost, nothing unsent" "$(json_get "$TR_JSON" '(d["udp"]["sent"] == d["udp"]["received"] + d["udp"]["lost"], d["udp"]["not_sent"])')" "(True, 0)"
tr_stop
"$TOPO" down "$TMP/capped.topo" --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
