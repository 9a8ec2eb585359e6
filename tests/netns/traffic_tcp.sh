#!/bin/bash
# tunbed-traffic over TCP on direct.topo: 1 and 256 sessions with the same bytes on both
# sides, pull and duplex verified byte for byte, paced duplex alike both ways, a corrupted
# byte caught and located, iterations, churn, RST shutdown, latency probes idle and under load,
# interval reports.
#
#  P-client 198.18.1.1 ---wire--- 198.18.1.2 P-server [tunbed-traffic server :9400, :9401 corrupting]
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbtcp
S=198.18.1.2

"$TOPO" up direct --prefix "$P" >/dev/null
tr_server "$P-server" 9400

tr_client "$P-client" $S --time 2 --json
expect_eq "1 session: exit status" "$TR_STATUS" "0"
expect_eq "1 session: complete, bytes equal on both sides" "$(json_get "$TR_JSON" 'd["complete"]') $(sessions_equal "$TR_JSON")" "True True"
expect_eq "1 session: receiver-counted throughput" "$(json_get "$TR_JSON" 'd["tcp"]["per_session"][0]["receiver_counted"] and d["tcp"]["bits_per_second"] > 1e8')" "True"
expect_eq "1 session: TCP_INFO and CPU reported" "$(json_get "$TR_JSON" '"rtt_ms" in d["tcp"]["per_session"][0] and d["cpu"]["client_s"] > 0 and d["cpu"]["server_s"] > 0')" "True"

tr_client "$P-client" $S --sessions 256 --bytes 1m --json
expect_eq "256 sessions: exit status" "$TR_STATUS" "0"
expect_eq "256 sessions: every one moved 1 MiB, both sides agree" "$(json_get "$TR_JSON" 'len(d["tcp"]["per_session"]) == 256 and all(s["sent"] == s["server_received"] == 2**20 for s in d["tcp"]["per_session"])')" "True"
expect_eq "256 sessions: Jain index in (0, 1]" "$(json_get "$TR_JSON" '0 < d["tcp"]["jain"] <= 1')" "True"

tr_client "$P-client" $S --sessions 4 --bytes 4m --pattern pull --verify --json
expect_eq "pull, verified: exit status" "$TR_STATUS" "0"
expect_eq "pull: every session received 4 MiB, none wrong" "$(json_get "$TR_JSON" 'all(s["received"] == 4 * 2**20 and s["mismatches"] == 0 for s in d["tcp"]["per_session"])')" "True"

tr_client "$P-client" $S --sessions 3 --time 1.5 --pattern duplex --verify --json
expect_eq "duplex, verified: complete, no mismatch" "$TR_STATUS $(json_get "$TR_JSON" 'd["tcp"]["verify"]["mismatches"], all(s["received"] > 0 and s["sent"] == s.get("server_received") for s in d["tcp"]["per_session"])')" "0 (0, True)"
log "duplex sessions (sent, server received, received, server sent): $(json_get "$TR_JSON" '[(s["sent"], s.get("server_received"), s["received"], s.get("server_sent")) for s in d["tcp"]["per_session"]]')"
# Paced duplex: both ends pace at the one rate on the same clock, so each session's two
# directions carry alike whatever the machine's load. A sender whose loop was never told to
# wait (each call earned a few bytes) sent crumbs and never read: the server sent 5% of what
# the client did, and the client's receive stalled for the whole test.
tr_client "$P-client" $S --sessions 2 --time 1.5 --pattern duplex --rate 100m --json
expect_eq "paced duplex: each session's downstream at least half its upstream" "$TR_STATUS $(json_get "$TR_JSON" 'all(s["received"] >= s["sent"] / 2 > 0 for s in d["tcp"]["per_session"])')" "0 True"
log "paced duplex sessions (sent, received, stall ms): $(json_get "$TR_JSON" '[(s["sent"], s["received"], s["rx_stall_max_ms"]) for s in d["tcp"]["per_session"]]')"

# A server that corrupts one byte it sends: the client finds it, and says where.
tr_server "$P-server" 9401 --corrupt-offset 12345
tr_client "$P-client" $S --port 9401 --sessions 2 --bytes 1m --pattern pull --verify --json
expect_eq "corruption: exit status 1" "$TR_STATUS" "1"
expect_eq "corruption: one byte, session 0, offset 12345, seen by the client" "$(json_get "$TR_JSON" '(d["tcp"]["verify"]["mismatches"], d["tcp"]["verify"]["first_session"], d["tcp"]["verify"]["first_offset"], d["tcp"]["verify"]["first_side"])')" "(1, 0, 12345, 'client')"
tr_client "$P-client" $S --port 9401 --sessions 2 --bytes 1m --pattern pull --json
expect_eq "corruption unnoticed without --verify" "$TR_STATUS" "0"

tr_client "$P-client" $S --sessions 4 --bytes 1m --iterations 3 --json
expect_eq "iterations: 3 connections a session, 3 MiB each on the server" "$TR_STATUS $(json_get "$TR_JSON" 'all(s["connections"] == 3 and s["server_received"] == 3 * 2**20 for s in d["tcp"]["per_session"])')" "0 True"

tr_client "$P-client" $S --sessions 4 --bytes 64k --churn --time 2 --json
expect_eq "churn: exit status" "$TR_STATUS" "0"
expect_eq "churn: many connections, counted per second" "$(json_get "$TR_JSON" 'd["tcp"]["connections"] > 40 and d["tcp"]["connections_per_second"] > 20')" "True"

tr_client "$P-client" $S --sessions 2 --bytes 8m --shutdown rst --json
expect_eq "rst: no session failed" "$TR_STATUS $(json_get "$TR_JSON" 'd["tcp"]["failed"]')" "0 0"

tr_client "$P-client" $S --rr --rr-rate 200 --time 2 --json
expect_eq "rr idle: exit status" "$TR_STATUS" "0"
expect_eq "rr idle: 300+ probes, percentiles ordered, all under a second" "$(json_get "$TR_JSON" '(lambda r: r["probes"] > 300 and 0 < r["min_ms"] <= r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"] <= r["p99_9_ms"] <= r["max_ms"] < 1000)(d["rr"])')" "True"
idle=$(json_get "$TR_JSON" 'd["rr"]["p50_ms"]')
tr_client "$P-client" $S --sessions 4 --time 2 --rr --json
expect_eq "rr under load: load and probes both ran" "$TR_STATUS $(json_get "$TR_JSON" 'd["rr"]["probes"] > 100 and d["tcp"]["bytes"] > 0 and d["rr"]["p50_ms"] <= d["rr"]["p99_ms"] <= d["rr"]["max_ms"]')" "0 True"
log "rr p50: idle $idle ms, under load $(json_get "$TR_JSON" 'd["rr"]["p50_ms"]') ms"

ip netns exec "$P-client" "$TRAFFIC" client $S --sessions 2 --time 2 --interval 0.5 --json-stream >"$TMP/stream.jsonl"
# Intervals end at 0.5, 1.0, 1.5 and 2.0 s; the last may race the end of the test.
expect_eq "json-stream: interval lines, then the final one" "$(python3 -c 'import json,sys; L=[json.loads(l) for l in open(sys.argv[1])]; print(3 <= sum("interval" in x for x in L) <= 4, "complete" in L[-1])' "$TMP/stream.jsonl")" "True True"
text=$(ip netns exec "$P-client" "$TRAFFIC" client $S --time 1 --interval 0.5)
# The first interval ends when the report is made: at 0.5 s, or later on a loaded box, never
# before.
expect_match "text: interval lines and the sum" "$text" "\\[ +0\\.00- +(0\\.[5-9]|[1-9][0-9]*\\.[0-9])[0-9] s\\].*sum +[0-9.]+ (G|M)bit/s"

tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
