#!/bin/bash
# tunbed-traffic at scale on direct.topo: 2,000 TCP sessions open at once for the whole test,
# each one's bytes the same on both sides, none failing.
#
#  P-client 198.18.1.1 ---wire--- 198.18.1.2 P-server [tunbed-traffic server]
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbscale

"$TOPO" up direct --prefix "$P" >/dev/null
tr_server "$P-server" 9400
tr_client "$P-client" 198.18.1.2 --sessions 2000 --time 3 --json
expect_eq "2000 sessions: exit status" "$TR_STATUS" "0"
expect_eq "2000 sessions: all complete, none failed" "$(json_get "$TR_JSON" '(d["complete"], d["tcp"]["failed"], len(d["tcp"]["per_session"]))')" "(True, 0, 2000)"
expect_eq "2000 sessions: bytes equal on both sides" "$(sessions_equal "$TR_JSON")" "True"
expect_eq "2000 sessions: each a single connection over the whole test" "$(json_get "$TR_JSON" 'all(s.get("connections", 1) == 1 for s in d["tcp"]["per_session"]) and d["tcp"]["connections"] == 2000')" "True"
log "2000 sessions: $(json_get "$TR_JSON" 'round(d["tcp"]["bits_per_second"] / 1e9, 2)') Gbit/s, Jain $(json_get "$TR_JSON" 'round(d["tcp"]["jain"], 3)')"
tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
