#!/bin/bash
# tunbed-traffic at packet rates (--pps, docs/traffic.md): small datagrams (the 18-byte short
# header of a 64-byte frame) and large ones on a packet schedule, never more than it allows
# and every slot of it sent, refused or counted late; rate x time datagrams in all, the
# sessions taking turns (also fewer a second than sessions); sampled latency with ordered
# percentiles; then the receiver stopped for a moment: the loss the client reports equals
# exactly the datagrams the server's sockets dropped (the counters the runner reads to tell a
# generator's loss from a gateway's); and every bad value refused with one line, exit 2.
#
#  P-client 198.18.1.1 ---wire--- 198.18.1.2 P-server
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbpps

# udp_stat NS FIELD: a field of the Udp line of /proc/net/snmp in NS.
udp_stat() {
	ip netns exec "$1" cat /proc/net/snmp |
		awk -v f="$2" '$1 == "Udp:" { if (!n++) { for (i = 2; i <= NF; i++) k[i] = $i } else { for (i = 2; i <= NF; i++) if (k[i] == f) print $i } }'
}
stat_above() { # ns field n
	[ "$(udp_stat "$1" "$2")" -gt "$3" ]
}

"$TOPO" up direct --prefix "$P" >/dev/null
tr_server "$P-server" 9400

for size in 18 1000; do
	tr_client "$P-client" 198.18.1.2 --udp --pps 20k --size $size --sessions 4 --time 2 --sample 20 --json
	expect_eq "$size bytes: exit status" "$TR_STATUS" "0"
	expect_eq "$size bytes: nothing lost, duplicated or reordered" "$(json_get "$TR_JSON" '(d["udp"]["lost"], d["udp"]["duplicates"], d["udp"]["reordered"], d["udp"]["not_sent"])')" "(0, 0, 0, 0)"
	# The schedule allows 5,000 a second a session, over its own span of at most 2 s: never
	# more than 40,000; each slot sent, refused or skipped late. A busy machine may send fewer
	# (late), and the offered rate then says so.
	expect_eq "$size bytes: at most the schedule, every slot dealt with" "$(json_get "$TR_JSON" 'd["udp"]["sent"] <= 40000 and d["udp"]["sent"] + d["udp"]["not_sent"] + d["udp"]["late"] == d["udp"]["scheduled"] <= 40000 and d["udp"]["received"] == d["udp"]["sent"]')" "True"
	expect_eq "$size bytes: the offered rate is the sent one's" "$(json_get "$TR_JSON" '[(u["pps"], abs(u["offered_ratio"] - u["offered_pps"] / u["pps"]) < 1e-9, u["offered_ok"] == (abs(u["offered_ratio"] - 1) <= 0.01 or u["late"] + u["not_sent"] == 0), u["offered_pps"] > 0.5 * 20000) for u in [d["udp"]]][0]')" "(20000.0, True, True, True)"
	# Every 20th datagram asks for a reply: 2,000 samples at most, each a round trip.
	expect_eq "$size bytes: latency sampled, percentiles in order" "$(json_get "$TR_JSON" '[(l["every"], 0 < l["samples"] <= l["sampled"] <= 2000, 0 < l["min_ms"] <= l["p50_ms"] <= l["p90_ms"] <= l["p99_ms"] <= l["max_ms"] < 1000) for l in [d["udp"]["latency"]]][0]')" "(20, True, True)"
	if [ $size = 18 ]; then
		expect_eq "18 bytes: the short header carries no send time, so no jitter" "$(json_get "$TR_JSON" 'd["udp"]["jitter_ms_max"]')" "0.0"
	fi
done

# The count: a test of T seconds at N datagrams a second offers N x T of them (the warm-up
# included), the sessions taking turns on one evenly spaced stream, also when N does not
# share out evenly and when N is below the sessions (some then send nothing in a short test).
# A thread's schedule starts once its sockets are open, and ends at the test's deadline:
# at these rates (a slot every 100 ms at least, far longer than a thread takes to start) it
# holds every slot of the test. A slot a busy machine sends late is counted late.
while read -r pps sessions time warmup want per_session; do
	what="--pps $pps --sessions $sessions --time $time --warmup $warmup"
	tr_client "$P-client" 198.18.1.2 --udp --pps "$pps" --sessions "$sessions" --time "$time" --warmup "$warmup" --json
	expect_eq "$what: exit status" "$TR_STATUS" "0"
	expect_eq "$what: $want scheduled, each dealt with" "$(json_get "$TR_JSON" '[(u["scheduled"], u["sent"] + u["not_sent"] + u["late"], u["received"] == u["sent"]) for u in [d["udp"]]][0]')" "($want, $want, True)"
	# What NDR takes a trial by: every slot sent on time (a span of a few slots has no rate
	# within 1%: 5 over 0.99 s), or else the rate offered within 1%.
	expect_eq "$what: offered_ok" "$(json_get "$TR_JSON" '[u["offered_ok"] == (u["late"] + u["not_sent"] == 0 or abs(u["offered_ratio"] - 1) <= 0.01) for u in [d["udp"]]][0]')" "True"
	# Each session's share, at most (the sum above makes it exact when nothing was late).
	expect_eq "$what: each session's share" "$(json_get "$TR_JSON" "all(s['sent'] + s['not_sent'] <= n for s, n in zip(d['udp']['per_session'], [$per_session]))")" "True"
done <<'EOF2'
10 1 1 0 10 10
10 3 1 0 10 4,3,3
10 1 1 0.5 15 15
4 8 2 0 8 1,1,1,1,1,1,1,1
5 10 1 0 5 1,1,1,1,1,0,0,0,0,0
EOF2

# The receiver stopped while the datagrams come: its sockets' buffers fill and the kernel
# drops the rest (Udp InErrors, RcvbufErrors); the client's loss is exactly that.
errors0=$(udp_stat "$P-server" InErrors)
rcvbuf0=$(udp_stat "$P-server" RcvbufErrors)
in0=$(udp_stat "$P-server" InDatagrams)
ip netns exec "$P-client" "$TRAFFIC" client 198.18.1.2 --udp --pps 20k --size 18 --sessions 2 --time 4 --json >"$TMP/stopped.json" 2>"$TMP/stopped.err" &
client=$!
poll 30 stat_above "$P-server" InDatagrams $((in0 + 1000)) || die "no datagrams reached the server"
kill -STOP "$TR_SERVER"
poll 30 stat_above "$P-server" InErrors $((errors0 + 1000)) || { kill -CONT "$TR_SERVER"; die "the stopped server's sockets dropped nothing"; }
kill -CONT "$TR_SERVER"
wait_bg "$client" 30 "the client, its receiver stopped for a while"
expect_eq "stopped receiver: exit status" "$BG_STATUS" "0"
dropped=$(( $(udp_stat "$P-server" InErrors) - errors0 ))
expect_eq "stopped receiver: every drop was a full buffer" "$(( $(udp_stat "$P-server" RcvbufErrors) - rcvbuf0 ))" "$dropped"
json=$(cat "$TMP/stopped.json")
expect_eq "stopped receiver: the loss is exactly what the sockets dropped" "$(json_get "$json" 'd["udp"]["lost"]')" "$dropped"
expect_eq "stopped receiver: sent = received + lost" "$(json_get "$json" 'd["udp"]["sent"] == d["udp"]["received"] + d["udp"]["lost"] and d["udp"]["lost"] >= 1000')" "True"
tr_stop

C=(client 198.18.1.2 --udp)
expect_refusal "--pps 0" 2 "^tunbed-traffic: bad value '0' for --pps: expected 1 to 100m datagrams a second$" "$TRAFFIC" "${C[@]}" --pps 0
expect_refusal "--pps 101m" 2 "^tunbed-traffic: bad value '101m' for --pps" "$TRAFFIC" "${C[@]}" --pps 101m
expect_refusal "--size 17" 2 "^tunbed-traffic: bad value '17' for --size: expected 18 to 65507$" "$TRAFFIC" "${C[@]}" --pps 1k --size 17
expect_refusal "--pps and --rate" 2 "^tunbed-traffic: --pps and --rate exclude each other" "$TRAFFIC" "${C[@]}" --pps 1k --rate 1m
expect_refusal "--pps without --udp" 2 "^tunbed-traffic: --pps is for --udp$" "$TRAFFIC" client 198.18.1.2 --pps 1k
expect_refusal "--sample 0" 2 "^tunbed-traffic: bad value '0' for --sample" "$TRAFFIC" "${C[@]}" --pps 1k --sample 0
expect_refusal "--udp alone" 2 "^tunbed-traffic: --udp needs --rate or --pps" "$TRAFFIC" "${C[@]}"
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
