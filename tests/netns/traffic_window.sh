#!/bin/bash
# tunbed-traffic counts only the measured window, after the warm-up: on a link capped by tbf,
# one session pushing for 1 s after a warm-up of 2 s reports at most the cap, whoever counts
# (the server for push, the client for pull). The client never told the server where the
# window starts (the hello's measure_ms was 0), so the server counted the warm-up's bytes too
# and push reported three times the cap.
#
#  P-client 198.18.1.1 ---wire (tbf 200mbit on both egresses)--- 198.18.1.2 P-server
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbwin

sed '/^\[link wire\]/a rate = 200mbit' "$TOPOLOGIES/direct.topo" >"$TMP/capped.topo"
"$TOPO" up "$TMP/capped.topo" --prefix "$P" >/dev/null
tr_server "$P-server" 9400
for pattern in push pull; do
	tr_client "$P-client" 198.18.1.2 --sessions 1 --time 1 --warmup 2 --pattern "$pattern" --json
	expect_eq "$pattern: exit status" "$TR_STATUS" "0"
	# The cap is the shaping margin: tbf lets a window through at most its rate and a 1 ms
	# bucket; half of it is what a busy machine still reaches.
	expect_eq "$pattern: what the receiver counted in the window is within the cap" "$(json_get "$TR_JSON" '(lambda t: (0.5 * 200e6 < t["bits_per_second"] <= 1.05 * 200e6, abs(t["bytes"] * 8 / d["measured_s"] - t["bits_per_second"]) < 1))(d["tcp"])')" "(True, True)"
done
tr_stop
"$TOPO" down "$TMP/capped.topo" --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
