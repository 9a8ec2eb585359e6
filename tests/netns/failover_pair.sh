#!/bin/bash
# The gateway pair's failover end to end (docs/failover.md): `tunbed failover` kills gwb1's
# gregw (kill -9), then cuts gwb1 off, each under 4 verified TCP sessions and a UDP stream:
# the sessions survive with 0 wrong bytes, the passive gwb2 takes over (core's route moves to
# it and it forwards), the outage is measured and bounded (generously: 5 s means BFD or the
# health check did not work), gwa resynchronises its sequence window on the new active's
# numbers, failback to gwb1 works, and nothing is left. Bad input is refused in one line
# before anything starts; an interrupted run removes everything, and `tunbed down` what a
# killed one left. `tunbed ras` on the pair
# topology runs the passive hot and shows its cores beside the active's.
#
#  P-client --lan-a-- P-gwa ==transit== P-core ==t1== P-gwb1 (active)   lo 198.18.6.1, BGP+BFD
#                                          |   \==t2== P-gwb2 (passive)  lo 198.18.6.1, BGP+BFD
#                                        lan-b
#                                          |
#                                       P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbfo
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"
frr_left() { # prefix: FRR daemons, gregw, health checks or their directories still there
	pgrep -af -- "/run/tunbed/(frr|failover)/$1-|$1-(core|gwb1|gwb2)" || true
	find /run/tunbed/frr /run/tunbed/failover -maxdepth 1 -name "$1-*" 2>/dev/null || true
}

expect_refusal "an unknown fault" 2 "^tunbed: --faults: unknown fault 'reboot': expected some of kill, stop, link, cut$" "$TUNBED" failover --faults kill,reboot --prefix "$P" --results "$R"
expect_refusal "a topology without the pair" 2 "^tunbed: --topology: ras has no gateway pair for the failover \(no host core, gwb1, gwb2\): use ras-pair$" "$TUNBED" failover --topology ras --prefix "$P" --results "$R"
expect_refusal "a bad mode" 2 "^tunbed: --mode: bad gregw mode 'gre\+fast'" "$TUNBED" failover --mode gre+fast --prefix "$P" --results "$R"
expect_nothing_left "$P" "after the refusals"

out=$("$TUNBED" failover --faults kill,cut --repeats 1 --sessions 4 --fail-at 1 --failback-after 3 --tail 2 --prefix "$P" --results "$R" 2>"$TMP/fo.err") || die "tunbed failover failed: $(tail -3 "$TMP/fo.err")"
dir=$(find "$R" -maxdepth 1 -name '*-failover' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "headline: kill -9, in words" "$out" "kill -9 of gwb1's gregw: [0-9.]+ s outage, takeover after [0-9.]+ s \(detected after [0-9.]+ s\), longest TCP gap [0-9.]+ s, 4 of 4 sessions survived, 0 wrong bytes; failback after [0-9.]+ s"
expect_match "headline: cut off" "$out" "gwb1 cut off: [0-9.]+ s outage, takeover after [0-9.]+ s"
if python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "summary.json")))
assert s["complete"] is True, "not complete"
assert [r["fault"] for r in s["runs"]] == ["kill", "cut"], s["runs"]
for r in s["runs"]:
    f = r["fault"]
    assert r["survived"] == 4 and r["reset"] == 0 and r["complete"], (f, r)
    assert r["wrong_bytes"] == 0 and r["bytes"] > 0, (f, r)
    # The passive took over: core routed the service address to it, and it forwarded.
    assert r["takeover_s"] is not None and r["passive_decap_packets"] > 1000, (f, r)
    assert r["detection_s"] is not None and r["detection_s"] <= r["takeover_s"], (f, r)
    # Measured, and bounded generously (a test never fails on a timing, but several
    # seconds mean the mechanism did not work).
    assert r["udp_lost"] > 0 and 0 < r["outage_s"] < 5, (f, r)
    assert r["tcp_gap_s"] is not None and r["tcp_gap_s"] < 5, (f, r)
    assert r["failback_s"] is not None and r["failback_s"] < 5, (f, r)
    assert r["failback_outage_s"] is not None and r["failback_outage_s"] < 5, (f, r)
    # gwb2 numbers its packets from 0: gwa's window resynchronised instead of counting the
    # rest of the transfer out of the window.
    assert r["gwa_seq_resyncs"] >= 1 and r["gwa_seq_out_of_window"] < 1000, (f, r)
for p in ("kill-throughput", "kill-cpu", "cut-throughput", "cut-cpu"):
    png = open(os.path.join(d, "plots", p + ".png"), "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", p
md = open(os.path.join(d, "report.md")).read()
assert md.startswith("# tunbed failover") and "\n- kill -9 of gwb1's gregw: " in md, md[:300]
print("consistent")
PY
then
	:
else
	fail "failover results"
	# What happened, for the log: core's route over time, the health checks, the sessions.
	python3 - "$dir" <<'PY' || true
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/runs/*.json")):
    r = json.load(open(f))
    t0 = r["t_fault"]
    print(f, "repair at", round(r["t_repair"] - t0, 3))
    print(" routes", [(round(t - t0, 3), a) for t, a in r["routes"]])
    print(" health", {h: [(round(e["t"] - t0, 3), e["state"], e["why"]) for e in ev] for h, ev in r["health"].items()})
    tcp = (r["tcp"] or {}).get("tcp", {})
    print(" tcp errors", tcp.get("errors"), [s.get("error") for s in tcp.get("per_session", [])])
    print(" udp", [(u or {}).get("udp", {}).get("sent") for u in r["udp"]], [(u or {}).get("udp", {}).get("lost") for u in r["udp"]])
PY
fi
expect_nothing_left "$P" "after tunbed failover"
expect_eq "no FRR daemon or health check left" "$(frr_left "$P")" ""

# Interrupted under load, the active stopped (SIGSTOP): exit 130, one line, everything removed.
"$TUNBED" failover --faults stop --repeats 3 --sessions 2 --fail-at 1 --prefix "$P" --results "$TMP/int" >"$TMP/int.out" 2>"$TMP/int.err" &
rpid=$!
stopped() { grep -q "^State:.*stopped" /proc/"$(pgrep -f -- "bin/gregw .*/run/tunbed/failover/$P-[^ ]*/gwb1\.sock" | head -1)"/status; }
poll 60 stopped || fail "the run did not reach its fault (gwb1's gregw stopped)"
stop_bg "$rpid" INT "tunbed failover"
expect_eq "interrupted: exit status" "$BG_STATUS" "130"
# Interrupted in its first fault: no run finished, so no report.
expect_match "interrupted: one line, and that nothing is reported" "$(grep -v '^bootstrap' "$TMP/int.err" | tail -2)" "^tunbed: interrupted; everything it started is removed; partial results in $TMP/int/[0-9TZ]+-failover"$'\n'"tunbed: no run finished: nothing to report in $TMP/int/[0-9TZ]+-failover$"
expect_nothing_left "$P" "after the interruption"
expect_eq "interrupted: no FRR daemon or health check left" "$(frr_left "$P")" ""

# The runner killed (SIGKILL) with the active stopped: `tunbed down` ends what it left (gregw
# continued first, the health checks, the traffic, FRR) and removes the namespaces.
"$TUNBED" failover --faults stop --repeats 3 --sessions 2 --fail-at 1 --prefix "$P" --results "$TMP/killed" >/dev/null 2>&1 &
rpid=$!
poll 60 stopped || fail "the killed run did not reach its fault"
kill -KILL "$rpid"
wait "$rpid" 2>/dev/null || true
expect_match "the killed run left its pair" "$(frr_left "$P")" "bgpd"
# What any user can plant in /tmp, in the form `tunbed down` once trusted there: a pids file
# naming a process and a word of its command line.
sleep 300 &
planted=$!
mkdir "/tmp/tunbed-failover-$P-planted"
echo "$planted sleep" >"/tmp/tunbed-failover-$P-planted/pids"
down=$("$TUNBED" down --prefix "$P" 2>&1) || fail "tunbed down failed: $down"
expect_match "tunbed down: ended what the run left" "$down" "ended [0-9]+ processes of a failover run or gateway pair under $P"
kill -0 "$planted" 2>/dev/null || fail "tunbed down signalled the process a file in /tmp named"
kill "$planted"
wait "$planted" 2>/dev/null || true
rm -r "/tmp/tunbed-failover-$P-planted"
expect_nothing_left "$P" "after tunbed down"
expect_eq "after tunbed down: no FRR daemon, health check, gregw or directory left" "$(frr_left "$P")" ""

# tunbed ras on the pair: gregw runs on gwa, gwb1 (the role gwb, behind the service address)
# and hot on gwb2; the headline shows each gateway's cores, the active's beside the passive's.
out=$("$TUNBED" ras --topology ras-pair --sessions 4 --workers 1 --repeats 1 --time 1 --warmup 0 --no-rr --prefix "$P" --results "$TMP/ras" 2>"$TMP/ras.err") || die "tunbed ras on ras-pair failed: $(tail -3 "$TMP/ras.err")"
expect_match "ras on the pair: the gateways' cores" "$out" "gregw gre 1w, 4 sessions, gateway pair \(gregw's CPU per core\): gwa cpu0 [0-9]+%, cpu1 [0-9]+%; gwb1 \(active\) cpu0 [0-9]+%, cpu1 [0-9]+%; gwb2 \(passive\) cpu0 [0-9]+%, cpu1 [0-9]+%"
python3 - "$(find "$TMP/ras" -name '*-s4-r1.json')" <<'PY' || fail "ras on the pair: the passive ran hot and idle"
import json, sys
r = json.load(open(sys.argv[1]))
procs = r["hosts"][0]["processes"]
assert {"gregw gwa", "gregw gwb", "gregw gwb2"} <= set(procs.values()), procs
assert r["traffic"]["tcp"]["bytes"] > 0
PY
expect_nothing_left "$P" "after tunbed ras on the pair"
expect_eq "ras on the pair: no FRR daemon left" "$(frr_left "$P")" ""
