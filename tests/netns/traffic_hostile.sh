#!/bin/bash
# tunbed-traffic's server against what a client may do to it: a hello asking for a 16 MiB
# buffer while the server lags (its reads must stay inside its 1 MiB scratch buffer); clients
# that send half a hello or half a request and go away, or stay and send nothing more (each
# connection gets a bounded time to complete them, SRV_HELLO_TIMEOUT_MS).
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

# fds_of PID: how many descriptors the process holds.
fds_of() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }

# server_let_go NS PORT PID FDS: no connection to PORT in NS waits in CLOSE-WAIT, and the
# server PID holds FDS descriptors again.
server_let_go() {
	[ "$(ip netns exec "$1" ss -Htn state close-wait "( sport = :$2 )" | wc -l)" = 0 ] &&
		[ "$(fds_of "$3")" = "$4" ]
}

# stall_status FILE TEXT: the stalling clients' status file says TEXT.
stall_status() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

# stall NAME N WHAT [--exit]: N stalling clients (stall_clients.py) in the background, their
# PID in STALL_PID, their status in $TMP/NAME.status; returns once all N are connected.
stall() {
	local name=$1 n=$2 what=$3
	shift 3
	ip netns exec "$P-client" python3 "$(dirname "$0")/stall_clients.py" $S 9400 "$n" "$what" \
		"$TMP/$name.status" "$@" 2>"$TMP/$name.err" &
	STALL_PID=$!
	poll 30 stall_status "$TMP/$name.status" "open $n" || die "$name: $n connections did not open: $(cat "$TMP/$name.err")"
}

"$TOPO" up direct --prefix "$P" >/dev/null

# 1. --buffer 16m is the write size the hello asks of the server, and was also the length of
# its reads into its 1 MiB scratch buffer: harmless while the server keeps up, a heap overflow
# as soon as more than 1 MiB waits for it (ASan: "WRITE of size 1233696 ... right of
# 1048576-byte region"; the release build died of SIGSEGV). The server is made to lag, stopped
# until more than 2 MiB wait on its socket, then let go. Socket buffers of 8 MiB from the
# start on both sides, so that the window holds that much whatever autotuning did so far.
ip netns exec "$P-server" sysctl -qw net.ipv4.tcp_rmem="4096 8388608 16777216"
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_wmem="4096 8388608 16777216"
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

# 2. 300 clients send a control hello and half a request, then exit. The server took the
# half request as "not yet" for good, peeking at it and never seeing the end behind it: 300
# descriptors in CLOSE-WAIT until the server stopped. Now an end inside a hello or request
# closes the connection at once.
tr_server "$P-server" 9400 --threads 1
base=$(fds_of "$TR_SERVER")
stall cut 300 control-half --exit
wait_bg "$STALL_PID" 30 "the 300 clients that exit"
poll 30 server_let_go "$P-server" 9400 "$TR_SERVER" "$base" || fail "half requests: the server still holds $(ip netns exec "$P-server" ss -Htn state close-wait "( sport = :9400 )" | wc -l) connections in CLOSE-WAIT, $(fds_of "$TR_SERVER") descriptors (before: $base)"

# ... and clients that stay: 100 with 10 bytes of a hello, 100 with nothing at all. Each
# connection has SRV_HELLO_TIMEOUT_MS (10 s) to complete its hello; then the server closes it.
stall part 100 hello-part
part_pid=$STALL_PID
stall none 100 nothing
none_pid=$STALL_PID
poll 30 stall_status "$TMP/part.status" "open 100 closed 100" || fail "partial hellos: still open after 30 s: $(cat "$TMP/part.status")"
poll 30 stall_status "$TMP/none.status" "open 100 closed 100" || fail "silent connections: still open after 30 s: $(cat "$TMP/none.status")"
stop_bg "$part_pid" TERM "the clients with partial hellos"
stop_bg "$none_pid" TERM "the silent clients"
poll 30 server_let_go "$P-server" 9400 "$TR_SERVER" "$base" || fail "after the timeouts the server holds $(fds_of "$TR_SERVER") descriptors (before: $base)"
# Served on, and said so: one line when it first closed a connection cut short, one when it
# first closed a stalled one, one count of each at the end.
tr_client "$P-client" $S --time 0.5 --json
expect_eq "after the stalled clients: a test runs" "$TR_STATUS $(json_get "$TR_JSON" 'd["complete"]')" "0 True"
tr_stop
expect_eq "one line for the first connection cut short" "$(grep -c "from 198.18.1.1 port [0-9]*: it ended inside a hello or request (further ones are counted)" "$TMP/server-9400.out")" "1"
expect_eq "one line for the first stalled connection" "$(grep -c "from 198.18.1.1 port [0-9]*: no complete hello or request within 10 s (further ones are counted)" "$TMP/server-9400.out")" "1"
expect_match "the count at the end" "$(cat "$TMP/server-9400.out")" "closed 200 connections that did not complete a hello or request within 10 s, and 300 that ended inside one"

"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
