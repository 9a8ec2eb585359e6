#!/bin/bash
# tunbed-traffic's server against what a client may do to it: a hello asking for a 16 MiB
# buffer while the server lags (its reads must stay inside its 1 MiB scratch buffer); clients
# that send half a hello or half a request and go away, or stay and send nothing more (each
# connection gets a bounded time to complete them, SRV_HELLO_TIMEOUT_MS); a server held at
# its descriptor limit (no spinning on accept, and a client is served once descriptors free).
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

# cpu_ticks PID: the user and system CPU time of the process, all its threads, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# accept_queue NS PORT: connections waiting in PORT's accept queue in NS (one listener).
accept_queue() { ip netns exec "$1" ss -Hltn "sport = :$2" | awk '{ print $2 }'; }

# queue_over NS PORT N: more than N wait in the accept queue.
queue_over() { [ "$(accept_queue "$1" "$2")" -gt "$3" ]; }

# connected NS PID: the process PID in NS has a TCP connection to port 9400.
connected() { ip netns exec "$1" ss -Htnp state established "( dport = :9400 )" | grep -q "pid=$2,"; }

# stall_closed FILE: the server closed at least one of the stalling clients' connections.
stall_closed() { grep -qE "closed [1-9]" "$1" 2>/dev/null; }

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

# 3. At its descriptor limit, accept fails with EMFILE while the connection stays in the
# queue: the level-triggered listener woke the thread again at once, and it spun one CPU at
# 100% for as long as it stayed there. Now the thread stops polling the listener for a
# moment (SRV_ACCEPT_PAUSE_MS), or until one of its connections closes. The server gets 64
# descriptors; 200 clients connect and send nothing (a batch times out, the next fills it). Over the 10 s until their first
# connections time out, the server's CPU time must stay under 2 s (spinning, it was about 10).
ip netns exec "$P-server" prlimit --nofile=64:64 "$TRAFFIC" server --port 9400 --threads 1 \
	>"$TMP/limited.out" 2>&1 &
TR_SERVER=$!
poll 30 listening "$P-server" 9400 || die "the server with 64 descriptors did not start: $(cat "$TMP/limited.out")"
stall full 200 nothing
full_pid=$STALL_PID
poll 30 queue_over "$P-server" 9400 0 || fail "the server took every connection with 64 descriptors: it holds $(fds_of "$TR_SERVER")"
ticks0=$(cpu_ticks "$TR_SERVER")
poll 30 stall_closed "$TMP/full.status" || fail "the server closed none of the silent connections at its limit: $(cat "$TMP/full.status")"
ticks=$(( $(cpu_ticks "$TR_SERVER") - ticks0 ))
log "server CPU at its descriptor limit, until the first timeouts: $ticks ticks"
expect_eq "at the descriptor limit: no spinning (under 2 s of CPU in 10 s)" "$([ "$ticks" -lt 200 ] && echo yes || echo "no: $ticks ticks")" "yes"
# A client that comes while the server is full waits in the queue, and is served as soon as
# the clients that hold the descriptors go.
queue_over "$P-server" 9400 0 || fail "the server is no longer full"
ip netns exec "$P-client" "$TRAFFIC" client $S --time 0.5 --json >"$TMP/late.json" 2>"$TMP/late.err" &
late_pid=$!
poll 30 connected "$P-client" "$late_pid" || fail "the late client did not connect"
stop_bg "$full_pid" TERM "the clients that hold the descriptors"
wait_bg "$late_pid" 30 "the client that came while the server was full"
expect_eq "at the descriptor limit: the late client is served once descriptors free" "$BG_STATUS $(json_get "$(cat "$TMP/late.json")" 'd["complete"]')" "0 True"
stop_bg "$TR_SERVER" TERM "the server with 64 descriptors"
expect_eq "the server with 64 descriptors: exit status" "$BG_STATUS" "0"
expect_eq "the descriptor limit said once" "$(grep -c "Too many open files" "$TMP/limited.out")" "1"

"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
