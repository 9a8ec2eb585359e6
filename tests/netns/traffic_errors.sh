#!/bin/bash
# tunbed-traffic when things go wrong: no server, an unreachable one, a server killed in the
# middle (partial results still printed, non-zero exit), garbage sent to the server (it
# serves on), and every bad option (one line, exit status 2), an address outside the
# benchmarking ranges without --any-address among them, a DSCP above 63 and an ECN
# codepoint that does not exist.
#
#  P-client 198.18.1.1 ---wire--- 198.18.1.2 P-server [tunbed-traffic server]
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tberr
C=(ip netns exec "$P-client" "$TRAFFIC" client)

"$TOPO" up direct --prefix "$P" >/dev/null
expect_refusal "no server" 1 "^tunbed-traffic: 198.18.1.2 port 9400: Connection refused$" "${C[@]}" 198.18.1.2 --time 1
expect_refusal "unreachable" 1 "^tunbed-traffic: 198.18.9.9 port 9400: Network is unreachable$" "${C[@]}" 198.18.9.9 --time 1

# A server killed while 4 sessions run: the client says so and keeps what it counted. The
# kill comes once all 4 sessions carry data to the server, well inside the test's 60 s (the
# client stops at the kill, not at the end of its time).
tr_server "$P-server" 9400
"${C[@]}" 198.18.1.2 --sessions 4 --time 60 --json >"$TMP/killed.json" 2>"$TMP/killed.err" &
cpid=$!
poll 30 sessions_flowing "$P-server" 9400 4 || fail "the 4 sessions did not all bring data to the server within 30 s"
kill -KILL "$TR_SERVER"
wait "$TR_SERVER" 2>/dev/null || true
wait_bg "$cpid" 30 "the client, after its server was killed"
expect_eq "killed server: client exit status" "$BG_STATUS" "1"
out=$(cat "$TMP/killed.json")
expect_eq "killed server: partial results printed" "$(json_get "$out" '(d["complete"], all(s["sent"] > 0 for s in d["tcp"]["per_session"]), d["tcp"]["failed"])')" "(False, True, 4)"
expect_match "killed server: one line on stderr" "$(cat "$TMP/killed.err")" "^tunbed-traffic: 198.18.1.2 port 9400: Connection reset by peer \\([1-4] of 4 sessions\\)"
expect_eq "killed server: exactly one line" "$(wc -l <"$TMP/killed.err")" "1"

# Garbage does not stop the server.
tr_server "$P-server" 9400
python3 - "$P" <<'PY' || fail "sending garbage"
import socket, subprocess, sys
for data in (b"GET / HTTP/1.0\r\n\r\n", b"TBTR" + b"\xff" * 60, b"\x00" * 100, b"TBTR\x00\x01\x09"):
    subprocess.run(["ip", "netns", "exec", sys.argv[1] + "-client", "python3", "-c",
                    "import socket,sys; s=socket.create_connection(('198.18.1.2', 9400)); "
                    "s.sendall(bytes.fromhex(sys.argv[1])); s.close()", data.hex()], check=True)
subprocess.run(["ip", "netns", "exec", sys.argv[1] + "-client", "python3", "-c",
                "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                "[s.sendto(b'x' * n, ('198.18.1.2', 9400)) for n in (0, 1, 31, 32, 1000)]"], check=True)
PY
tr_client "$P-client" 198.18.1.2 --time 1 --json
expect_eq "server serves on after garbage" "$TR_STATUS $(json_get "$TR_JSON" 'd["complete"]')" "0 True"
# The congestion control: the one asked for is the one reported; one this kernel lacks is
# refused before any session starts.
tr_client "$P-client" 198.18.1.2 --time 0.5 --congestion reno --json
expect_eq "--congestion reno: reported" "$TR_STATUS $(json_get "$TR_JSON" 'd["config"]["congestion"]')" "0 reno"
expect_eq "no --any-address: any_address false" "$(json_get "$TR_JSON" 'd["config"]["any_address"]')" "False"
# --any-address is recorded; here with the benchmarking ranges, so nothing leaves the namespaces.
tr_client "$P-client" 198.18.1.2 --time 0.5 --any-address --json
expect_eq "--any-address: recorded in the config" "$TR_STATUS $(json_get "$TR_JSON" 'd["config"]["any_address"]')" "0 True"
expect_refusal "--congestion unknown" 1 "^tunbed-traffic: --congestion vegas1: not available here" ip netns exec "$P-client" "$TRAFFIC" client 198.18.1.2 --time 1 --congestion vegas1
kill -0 "$TR_SERVER" || fail "the server died"

expect_refusal "no role" 2 "expected 'server' or 'client HOST'" "$TRAFFIC"
expect_refusal "no host" 2 "client needs the server's address" "$TRAFFIC" client
# Refused while the options are read, before anything is sent.
OUTSIDE="is outside the benchmarking ranges 198.18.0.0/15 and 2001:2::/48 \\(--any-address allows it\\)"
expect_refusal "host outside the ranges" 2 "^tunbed-traffic: server address 10.1.2.3 $OUTSIDE$" "$TRAFFIC" client 10.1.2.3
expect_refusal "IPv6 host outside the ranges" 2 "^tunbed-traffic: server address 2001:db8::2 $OUTSIDE$" "$TRAFFIC" client 2001:db8::2 --time 1
expect_refusal "--bind outside the ranges" 2 "^tunbed-traffic: --bind 10.0.0.1 $OUTSIDE$" "$TRAFFIC" server --bind 10.0.0.1
expect_refusal "host name" 2 "bad server address 'localhost'" "$TRAFFIC" client localhost
expect_refusal "sessions 0" 2 "bad value '0' for --sessions: expected 1 to 10000$" "$TRAFFIC" client 198.18.1.2 --sessions 0
expect_refusal "sessions 10001" 2 "bad value '10001' for --sessions" "$TRAFFIC" client 198.18.1.2 --sessions 10001
expect_refusal "bad rate" 2 "bad value 'fast' for --rate" "$TRAFFIC" client 198.18.1.2 --rate fast
expect_refusal "bad time" 2 "bad value '0' for --time: expected seconds from 0.1 to 86400$" "$TRAFFIC" client 198.18.1.2 --time 0
expect_refusal "bad pattern" 2 "bad value 'sideways' for --pattern: expected push, pull or duplex$" "$TRAFFIC" client 198.18.1.2 --pattern sideways
expect_refusal "udp without rate" 2 "--udp needs --rate" "$TRAFFIC" client 198.18.1.2 --udp
expect_refusal "time and bytes" 2 "--time and --bytes exclude each other" "$TRAFFIC" client 198.18.1.2 --time 1 --bytes 1m
expect_refusal "warmup with bytes" 2 "--warmup needs --time" "$TRAFFIC" client 198.18.1.2 --bytes 1m --warmup 1
expect_refusal "churn without bytes" 2 "--churn needs --bytes" "$TRAFFIC" client 198.18.1.2 --churn
expect_refusal "client option on the server" 2 "--sessions is a client option" "$TRAFFIC" server --sessions 2
expect_refusal "a DSCP above 63" 2 "^tunbed-traffic: bad value '64' for --dscp: expected a DSCP from 0 to 63$" "$TRAFFIC" client 198.18.1.2 --dscp 64
expect_refusal "the server's DSCP above 63" 2 "^tunbed-traffic: bad value '99' for --dscp: expected a DSCP from 0 to 63$" "$TRAFFIC" server --dscp 99
expect_refusal "no such ECN codepoint" 2 "^tunbed-traffic: bad value 'ect2' for --ecn: expected on, off, not-ect, ect0, ect1 or ce$" "$TRAFFIC" client 198.18.1.2 --udp --rate 1m --ecn ect2
expect_refusal "a codepoint for TCP" 2 "^tunbed-traffic: --ecn ce is for --udp: TCP's ECN codepoints are the kernel's \\(--ecn on or off\\)$" "$TRAFFIC" client 198.18.1.2 --ecn ce
expect_refusal "--ecn on the server" 2 "^tunbed-traffic: --ecn is a client option$" "$TRAFFIC" server --ecn on
expect_refusal "unknown option" 2 "unrecognized option '--frobnicate'" "$TRAFFIC" client 198.18.1.2 --frobnicate
# A CPU the machine lacks: refused while the options are read, client and server alike,
# naming the CPUs there are (both started, then failed with "cannot start thread 0: Invalid
# argument", exit 1). Run inside the namespaces and bounded, as before the check they did start.
CPUS_RE="^tunbed-traffic: --cpus 1023: no CPU 1023 on this machine \\(CPUs [0-9,-]+\\)$"
expect_refusal "client --cpus 1023" 2 "$CPUS_RE" timeout 20 ip netns exec "$P-client" "$TRAFFIC" client 198.18.1.2 --time 1 --cpus 1023
expect_refusal "server --cpus 1023" 2 "$CPUS_RE" timeout 20 ip netns exec "$P-server" "$TRAFFIC" server --port 9401 --cpus 1023
# (Into a file first: grep -q stops at its match, and the help is longer than one write, whose
# rest would then fail with SIGPIPE.)
"$TRAFFIC" --help >"$TMP/help.txt" || fail "--help failed"
for opt in --rr-rate --any-address --dscp --ecn; do
	grep -q -- "$opt" "$TMP/help.txt" || fail "--help lacks $opt"
done
if "$TRAFFIC" --help | grep -q corrupt; then fail "the test hook shows in --help"; fi

tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
