#!/bin/bash
# tunbed-traffic's server against what a client may do to it: a hello asking for a 16 MiB
# buffer while the server lags (its reads must stay inside its 1 MiB scratch buffer).
#
#  P-client 198.18.1.1 ---wire--- 198.18.1.2 P-server [tunbed-traffic server --threads 1]
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbhost
S=198.18.1.2

# recv_queue_over NS PORT BYTES: a connection to PORT in NS holds more than BYTES unread.
recv_queue_over() {
	ip netns exec "$1" ss -Htn state established "( sport = :$2 )" |
		awk -v min="$3" '$1 > min { found = 1 } END { exit !found }'
}

"$TOPO" up direct --prefix "$P" >/dev/null

# 1. --buffer 16m is the write size the hello asks of the server, and was also the length of
# its reads into its 1 MiB scratch buffer: harmless while the server keeps up, a heap overflow
# as soon as more than 1 MiB waits for it (ASan: "WRITE of size 1233696 ... right of
# 1048576-byte region"; the release build died of SIGSEGV). The server is made to lag, stopped
# until more than 2 MiB wait on its socket, then let go.
tr_server "$P-server" 9400 --threads 1
ip netns exec "$P-client" "$TRAFFIC" client $S --buffer 16m --pattern duplex --verify --time 4 \
	--json >"$TMP/big.json" 2>"$TMP/big.err" &
cpid=$!
poll 30 sessions_flowing "$P-server" 9400 1 || fail "the 16 MiB session did not bring data to the server"
kill -STOP "$TR_SERVER"
poll 30 recv_queue_over "$P-server" 9400 $((2 << 20)) || fail "2 MiB did not queue up at the stopped server"
kill -CONT "$TR_SERVER"
wait_bg "$cpid" 60 "the 16 MiB client"
expect_eq "16 MiB buffer, server lagging: client exit status" "$BG_STATUS" "0"
out=$(cat "$TMP/big.json")
expect_eq "16 MiB buffer: complete, verified, bytes equal on both sides" "$(json_get "$out" '(d["complete"], d["tcp"]["verify"]["mismatches"])') $(sessions_equal "$out")" "(True, 0) True"
kill -0 "$TR_SERVER" 2>/dev/null || fail "the server died: $(tail -5 "$TMP/server-9400.out")"
tr_stop

"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
