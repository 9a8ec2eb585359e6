#!/bin/bash
# SIGTERM under load: with eight flows running flat out through the gateways, each gregw
# stops promptly (gw_stop: within 5 s), exits 0, writes interval lines and then exactly one
# final summary, and leaves no device, socket or thread behind.
#
#  P-client [8 flows] --lan-a-- P-gwa [gregw] ==transit== [gregw] P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbterm

"$TOPO" up ras --prefix "$P" >/dev/null
gw_pair4 "$P" --seq --workers 2 --stats-interval 0.2
ip netns exec "$P-server" python3 "$HERE/bulk.py" server --bind 198.18.3.2 --port 9000 --flows 8 --timeout 5 >"$TMP/server.out" 2>&1 &
spid=$!
poll 30 grep -q listening "$TMP/server.out" || die "bulk server did not start"
ip netns exec "$P-client" python3 "$HERE/bulk.py" client --connect 198.18.3.2 --port 9000 --flows 8 --bytes $((1 << 40)) --timeout 5 >/dev/null 2>&1 &
cpid=$!
# Under load: the gateways have moved a good deal and are still moving it (the transfer is
# far larger than the test lets it run: it is stopped with the gateways).
last=0
loaded() {
	local now
	now=$(json_get "$(gw_stats gwb)" 'd["total"]["tun_tx_packets"]')
	[ "$now" -gt 20000 ] && [ "$now" -gt "$last" ] && [ "$last" -gt 0 ] && return 0
	last=$now
	return 1
}
poll 20 loaded || fail "no load reached gwb"
# And each has written interval lines already (a release build reaches the load above within
# one or two of its 0.2 s intervals).
intervals() { [ "$(wc -l <"$TMP/gwa.out")" -ge 3 ] && [ "$(wc -l <"$TMP/gwb.out")" -ge 3 ]; }
poll 20 intervals || fail "fewer than 3 interval lines from a gateway"
poll 20 loaded || fail "the load stopped before the stop"
gw_stop gwb
gw_stop gwa
for gw in gwb gwa; do
	# (more than 2 documents, how many final, the last final, every other one not)
	expect_eq "$gw: interval lines, then exactly one final summary, the last line" "$(gw_finals "$TMP/$gw.out")" "True 1 True True"
done
if ip -n "$P-gwb" link show gre0 >/dev/null 2>&1; then fail "gre0 outlived gregw"; fi
# The transfer cannot finish now; end what this test started.
kill "$cpid" "$spid" 2>/dev/null || true
wait "$cpid" "$spid" 2>/dev/null || true
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
