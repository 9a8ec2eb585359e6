#!/bin/bash
# gregw's control socket against hostile and careless clients: the main thread never waits
# on one. Slow clients (a byte every 0.9 s, connecting again when closed) and 200 idle
# connections are each closed by their deadline, while stats requests are answered, the
# --stats-interval lines go on, and SIGTERM stops gregw promptly (within 5 s); a client that
# asks for the flow tables and reads nothing is dropped while others are served. A reply to
# any command line is one JSON document (quotes, backslashes, control bytes, invalid UTF-8,
# NUL, a line too long); a kept connection ("keep") answers each of its lines in order, one
# line of JSON each, a bad line with its error and the connection still open, a line too long
# with its error and then closed. The socket is mode 0600 under umask 000 and tells whether a key is
# set, never the key. A control socket gregw left behind (kill -9) is replaced at the next
# start, and taken away by tunbed-topo down --prefix; a live one is refused, and so is a
# path that is not a socket (left as it was).
#
#  P-a [gregw] 198.18.0.1 ---l--- 198.18.0.2 P-b [gregw, default control path]
#   gre0 198.19.0.1/24, 198.18.5.0/24 routed into it (nothing answers there)
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbctl

printf '%s\n' "[host a]" "[host b]" "[link l]" "a = a" "b = b" \
	"a.addr = 198.18.0.1/24" "b.addr = 198.18.0.2/24" >"$TMP/pair.topo"
"$TOPO" up "$TMP/pair.topo" --prefix "$P" >/dev/null
CLIENTS=(python3 "$HERE/ctl_clients.py")

# Under umask 000, with a key: the socket is still 0600, and says only that a key is set.
umask 000
gw_start gwa "$P-a" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.5.0/24 \
	--workers 2 --key 7 --stats-interval 1
umask 022
expect_eq "control socket mode under umask 000" "$(stat -c %a "$TMP/gwa.sock")" "600"
expect_eq "config.key says a key is set, not which" "$(json_get "$(gw_stats gwa)" 'd["config"]["key"]')" "True"
if gw_stats gwa | grep -q '"key": 7'; then fail "the stats hold the key"; fi

# Every reply is one JSON document; an unknown command is named in it, quoted.
reply() { "${CLIENTS[@]}" request "$TMP/gwa.sock" "$1"; }
expect_error() { # what bytes-literal expected-message
	local r
	r=$(reply "$2")
	expect_eq "$1: valid JSON" "$(json_get "$r" 'd["valid"]')" "True"
	expect_eq "$1: the error" "$(json_get "$r" 'd["doc"].get("error")')" "$3"
}
expect_error "quotes" 'b"say \"hi\"\n"' "unknown command 'say \"hi\"': expected stats, flows, tunnels, add, replace or remove"
expect_error "backslashes" 'b"a\\b\\\\c\n"' "unknown command 'a\\\\b\\\\\\\\c': expected stats, flows, tunnels, add, replace or remove"
expect_error "control bytes" 'b"x\x01\x1b[2J\x7f\ty\n"' "unknown command 'x\\x01\\x1b[2J\\x7f\\x09y': expected stats, flows, tunnels, add, replace or remove"
expect_error "invalid UTF-8" 'b"\xff\xfe\xc3(\n"' "unknown command '\\xff\\xfe\\xc3(': expected stats, flows, tunnels, add, replace or remove"
expect_error "a NUL inside" 'b"stats\x00flows\n"' "unknown command 'stats\\x00flows': expected stats, flows, tunnels, add, replace or remove"
expect_error "a line too long" "b'$(printf 'q%.0s' $(seq 1100))'" "unknown command '$(printf 'q%.0s' $(seq 1024))' (too long): expected stats, flows, tunnels, add, replace or remove"
expect_eq "stats without a newline (the client's end of writing)" "$(json_get "$(reply 'b"stats"')" 'd["doc"]["config"]["tun"]')" "gre0"

# A kept connection: its commands sent at once, answered in order, one line of JSON each; a
# bad line among them answered with its error, the connection still open after; a line too
# long answered, then the connection closed (where the next line begins is unknown). The
# one-shot clients above and below are the old ones, unchanged.
k=$("${CLIENTS[@]}" keep "$TMP/gwa.sock" stats 'say "hi"' tunnels flows "" stats)
expect_eq "kept: keep, then each command's reply in order" \
	"$(json_get "$k" '[next(iter(r)) for r in d["replies"]]')" \
	"['keep', 'gregw', 'error', 'tunnels', 'flows', 'gregw', 'gregw']"
expect_eq "kept: the bad line's error" "$(json_get "$k" 'd["replies"][2]["error"]')" \
	"unknown command 'say \"hi\"': expected stats, flows, tunnels, add, replace or remove"
expect_eq "kept: still open after its replies, nothing more sent" "$(json_get "$k" '(d["open"], d["rest"], d["replies"][1]["config"]["tun"])')" "(True, '', 'gre0')"
k=$("${CLIENTS[@]}" keep "$TMP/gwa.sock" stats "$(printf 'q%.0s' $(seq 1100))" stats)
expect_eq "kept: a line too long answered, then closed" \
	"$(json_get "$k" '([next(iter(r)) for r in d["replies"]], d["replies"][2]["error"].endswith("(too long): expected stats, flows, tunnels, add, replace or remove"), d["open"])')" \
	"(['keep', 'gregw', 'error'], True, False)"

# Slow and idle clients, while stats requests and interval lines go on, and then SIGTERM.
"${CLIENTS[@]}" abuse "$TMP/gwa.sock" --slow 4 --idle 200 --ticks 20 >"$TMP/abuse.out" 2>&1 &
apid=$!
poll 60 grep -q ready "$TMP/abuse.out" || die "the abusing clients did not get their connections: $(cat "$TMP/abuse.out")"
lines0=$(wc -l <"${GW_OUT[gwa]}")
for i in 1 2 3; do
	s=$(timeout 30 "$GREGW" ctl "$TMP/gwa.sock" stats) || fail "stats request $i under abuse got no answer"
	expect_eq "stats request $i under abuse" "$(json_get "$s" 'd["config"]["tun"]')" "gre0"
done
kill -0 "$apid" 2>/dev/null || fail "the stats requests were answered only after the abuse ended"
eight_ticks() { [ "$(grep -c '^tick' "$TMP/abuse.out")" -ge 8 ]; }
poll 60 eight_ticks || fail "the abusing clients did not get to 8 ticks"
lines=$(($(wc -l <"${GW_OUT[gwa]}") - lines0))
# 8 ticks of 0.9 s hold about 7 lines at --stats-interval 1; the main thread held up by a
# client wrote none.
if [ "$lines" -ge 3 ]; then log "ok: $lines interval lines during 8 ticks of abuse"; else fail "only $lines interval lines during 8 ticks of abuse (about 7 due)"; fi
kill -0 "$apid" 2>/dev/null || fail "the abuse ended before SIGTERM"
gw_stop gwa
wait_bg "$apid" 30 "the abusing clients after gregw stopped"
sum=$(tail -n 1 "$TMP/abuse.out")
log "abuse: $sum"
expect_eq "gregw stopped during the abuse" "$(json_get "$sum" 'd["gone_at_tick"] is not None and d["gone_at_tick"] < 20')" "True"
# A byte every 0.9 s and 1 s to send a line: closed after 2 bytes; 4 allows gregw 2.7 s late.
expect_eq "each slow connection closed within 4 bytes" "$(json_get "$sum" 'd["slow_most_bytes"] <= 4')" "True"
expect_eq "slow connections closed and made again" "$(json_get "$sum" 'd["slow_closed"] >= 8')" "True"
expect_eq "every idle connection closed while gregw ran" "$(json_get "$sum" 'd["idle_closed"]')" "200"
expect_eq "final summary after the abuse" "$(gw_finals "${GW_OUT[gwa]}")" "True 1 True True"

# A client that asks for the flow tables and reads nothing: dropped at its deadline, while
# others are served. The tables are made large: 1600 flows to 198.18.5.0/24 through gre0.
gw_start gwa2 "$P-a" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.5.0/24 --workers 2
ip netns exec "$P-a" python3 -c '
import socket
for i in range(1600):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("198.18.5.%d" % (1 + i % 200), 9000 + i // 200))
    s.close()
'
many_flows() { gw_true gwa2 'sum(w["flows"] + w["flows_untracked"] for w in d["workers"]) >= 1600'; }
poll 30 many_flows || fail "gregw did not count 1600 flows"
f=$(gw_stats gwa2 flows)
nflows=$(json_get "$f" 'len(d["flows"])')
expect_eq "the whole flow tables in one reply ($(printf %s "$f" | wc -c) bytes)" "$(json_get "$(gw_stats gwa2)" "sum(w['flows'] for w in d['workers']) == $nflows")" "True"
"${CLIENTS[@]}" hold "$TMP/gwa2.sock" flows >"$TMP/hold.out" 2>&1 &
hpid=$!
poll 30 grep -q holding "$TMP/hold.out" || die "the client that reads nothing did not connect"
s=$(timeout 30 "$GREGW" ctl "$TMP/gwa2.sock" stats) || fail "stats request beside a client that reads nothing got no answer"
expect_eq "stats beside a client that reads nothing" "$(json_get "$s" 'd["config"]["tun"]')" "gre0"
kill -0 "$hpid" 2>/dev/null || fail "the stats request was answered only after the client that reads nothing was dropped"
wait_bg "$hpid" 60 "the client that reads nothing"
h=$(tail -n 1 "$TMP/hold.out")
expect_eq "the client that reads nothing: hung up on, its reply cut short" "$(json_get "$h" '(d["hup"], d["complete"])')" "(True, False)"
gw_stop gwa2

# The default control path under /run/gregw: killed with SIGKILL, its socket is left; the
# next gregw replaces it; a live one is refused; tunbed-topo down --prefix takes it away.
DEF="/run/gregw/$P-b.gre0.sock"
start_b() {
	ip netns exec "$P-b" "$GREGW" "${GW_MODE_ARGS[@]}" --remote 198.18.0.1 >"$TMP/b.out" 2>&1 &
	bpid=$!
	poll 30 "$GREGW" ctl "$DEF" stats || die "gregw on $P-b did not answer on $DEF: $(cat "$TMP/b.out")"
}
start_b
expect_eq "default control socket mode" "$(stat -c %a "$DEF")" "600"
expect_refusal "another user cannot connect" 1 "Permission denied" setpriv --reuid=65534 --regid=65534 --clear-groups "$GREGW" ctl "$DEF" stats
expect_refusal "a live control socket is refused" 1 "cannot listen on $DEF: Address already in use \\(another gregw answers there: give --ctl\\)$" \
	timeout 30 ip netns exec "$P-b" "$GREGW" "${GW_MODE_ARGS[@]}" --remote 198.18.0.1 --tun gre1 --ctl "$DEF"
kill -KILL "$bpid"
wait "$bpid" 2>/dev/null || true
[ -S "$DEF" ] || fail "SIGKILL left no control socket (the test needs one)"
start_b
log "ok: a stale control socket was replaced"
kill -KILL "$bpid"
wait "$bpid" 2>/dev/null || true
[ -S "$DEF" ] || fail "SIGKILL left no control socket (the test needs one)"

# Not a socket: refused, and the file stays as it was.
echo precious >"$TMP/file.sock"
expect_refusal "a file that is not a socket" 1 "cannot listen on $TMP/file.sock: File exists \\(not a socket: give --ctl\\)$" \
	timeout 30 ip netns exec "$P-a" "$GREGW" "${GW_MODE_ARGS[@]}" --remote 198.18.0.2 --ctl "$TMP/file.sock"
expect_eq "the file that is not a socket is kept" "$(cat "$TMP/file.sock")" "precious"

"$TOPO" down --prefix "$P" >/dev/null
if [ -e "$DEF" ]; then fail "tunbed-topo down --prefix $P left $DEF"; else log "ok: down --prefix took $DEF away"; fi
expect_nothing_left "$P" "after down"
