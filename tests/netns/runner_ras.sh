#!/bin/bash
# The runner end to end: a short `tunbed ras --wire-audit` (1 repeat, 2 points, 2 s) writes its
# results directory with consistent numbers, valid plots, a clean wire audit, result files of
# today's format and report.html opening with the headline, and `tunbed report` rebuilds it;
# `tunbed compare` skips a gateway this machine cannot run, with its note; `tunbed run` takes a
# scenario file; Ctrl-C keeps and marks partial results; nothing is left behind.
#
#  P-client --lan-a-- P-gwa [gateway] ==transit== [gateway] P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbrun
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

out=$("$TUNBED" ras --sessions 1,8 --workers 2 --repeats 1 --time 2 --warmup 0 --wire-audit --prefix "$P" --results "$R" 2>"$TMP/ras.err") || die "tunbed ras failed: $(tail -3 "$TMP/ras.err")"
dir=$(find "$R" -maxdepth 1 -name '*-ras' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "headline: 1 session, in words" "$out" "gregw gre 2w, 1 session: [0-9.]+ Gbit/s, (cpu[0-9]+ saturated by|no core saturated)"
expect_match "headline: 8 sessions" "$out" "gregw gre 2w, 8 sessions: [0-9.]+ Gbit/s"
expect_match "headline: the wire audit" "$out" "wire audit: every tunnel frame of 2 points as expected"
expect_match "the command names both reports, last" "$out" "report: $dir/report\.md"$'\n'"report: $dir/report\.html$"
grep -q "^## Wire audit" "$dir/report.md" || fail "report.md has no wire audit section"
for f in report.md report.html summary.csv summary.json meta.json runs/gregw-gre-w2-mtu0-push-s1-r1.json runs/gregw-gre-w2-mtu0-push-s8-r1.json; do
	[ -s "$dir/$f" ] || fail "missing $f"
done
head -3 "$dir/report.md" | grep -q "^- gregw gre 2w, 1 session: " || fail "report.md does not start with the headline"
# New namespaces start with the system's default congestion control.
grep -q "^TCP congestion control of the sessions: $(sysctl -n net.ipv4.tcp_congestion_control) (the system default)\.$" "$dir/report.md" || fail "report.md does not name the system's congestion control"
expect_eq "summary.csv: a header and two points" "$(wc -l <"$dir/summary.csv")" "3"
python3 - "$dir" "$out" <<'PY' || fail "results are not consistent"
import glob, html, json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "summary.json")))
assert s["complete"] is True, "not complete"
# Today's result files carry their kind and format (docs/runner.md).
for f in [os.path.join(d, "meta.json")] + glob.glob(os.path.join(d, "runs", "*.json")):
    doc = json.load(open(f))
    assert (doc.get("kind"), doc.get("format")) == ("matrix", 3), f
# In namespaces one machine is sampled, for every role, on its own clock.
for f in glob.glob(os.path.join(d, "runs", "*.json")):
    hosts = json.load(open(f))["hosts"]
    assert [(h["name"], h["roles"]) for h in hosts] == [("this machine", ["client", "server", "gwa", "gwb"])], f
    assert len(hosts[0]["cpu"]["samples"]) >= 4 and hosts[0]["clock"] == {"offset_s": 0.0, "error_s": 0.0}, f
    assert {"gregw gwa", "gregw gwb", "tunbed-traffic server", "tunbed-traffic client", "tunbed-wire"} <= set(hosts[0]["processes"].values()), f
    # The machine's facts, also in namespaces (machine.py).
    assert hosts[0]["facts"]["kernel"] == os.uname().release and hosts[0]["facts"]["cpus"] == os.cpu_count(), f
# Every run and point says what limited it; the report says how the run was made.
assert all(r["verdict"] in ("gateway", "generator", "link", "box", "unclear") and r["verdict_reason"] for r in s["runs"]), s["runs"]
assert all(p["verdict"] for p in s["summary"].values()), s["summary"]
prov = s["meta"]["provenance"]
assert prov["command"][:2] == ["tunbed", "ras"] and prov["machine"]["kernel"] == os.uname().release, prov
assert "\nRun started " + s["meta"]["started_utc"] + " (UTC): `tunbed ras " in open(os.path.join(d, "report.md")).read(), "report.md: no provenance"
# report.html opens with the headline the command printed, every line of it.
page = open(os.path.join(d, "report.html"), encoding="utf-8").read()
lines = [x for x in sys.argv[2].splitlines() if not x.startswith("report: ")]
# Two points and the wire audit, and a line per run that other processes' CPU made suspect
# (a machine busy with other work).
assert len([x for x in lines if "processes tunbed did not start" not in x]) == 3, lines
want = '<ul class="headline" id="headline">\n' + "".join(f"<li>{html.escape(x)}</li>\n" for x in lines)
assert want in page and page.index(want) < page.index("<table"), "report.html: no headline first"
assert page.count("<svg") == 6 and "<img" not in page and "<script" not in page, "report.html: plots"
for r in s["runs"]:
    # Throughput is bytes over the measured time.
    assert abs(r["bytes"] * 8 / r["measured_s"] - r["bits_per_second"]) <= 1e-6 * r["bits_per_second"], r["key"]
    # Per-core shares add up, and busy is what is not idle.
    for c, sh in r["cores"].items():
        assert abs(sum(v for k, v in sh.items() if k != "busy") - 100) < 1e-6, (r["key"], c)
        assert abs(sh["busy"] - (100 - sh["idle"] - sh["iowait"])) < 1e-6
    assert r["box_cpu_s_per_gb"] > 0 and r["gateway_cpu_s_per_gb"] > 0
    assert r["rr_idle_p50_ms"] > 0 and r["rr_load_p50_ms"] > 0
    # The wire audit saw the tunnel carry at least the measured bytes, all as expected.
    w = r["wire"]
    assert w["violation_frames"] == 0 and w["violations"] == {}, (r["key"], w)
    # A captured frame is at most 64 KB: a superpacket gregw sent whole (--wire-tx tap) crosses
    # the veth pair so, counted once as a frame.
    assert w["tunnel_frames"] * 65535 >= r["bytes"], (r["key"], w["tunnel_frames"], r["bytes"])
    assert w["seq_frames"] == 0 and 0 < w["overhead_pct"] < 5, (r["key"], w)
# Two session counts: the plot beside the RAS document's shape too.
plots = ["throughput", "scaling", "cost", "latency", "cores-gregw-gre-w2-mtu0-push-s1", "cores-gregw-gre-w2-mtu0-push-s8"]
for p in plots:
    png = open(os.path.join(d, "plots", p + ".png"), "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR" and png[-8:-4] == b"IEND", p
    assert b"<svg" in open(os.path.join(d, "plots", p + ".svg"), "rb").read(400), p
print("consistent")
PY
out2=$("$TUNBED" report "$dir" 2>"$TMP/report.err") || die "tunbed report failed: $(tail -3 "$TMP/report.err")"
expect_eq "tunbed report: the same headline and both reports" "$out2" "$out"
expect_nothing_left "$P" "after tunbed ras"
for f in /run/gregw/*"$P"*; do
	if [ -e "$f" ]; then fail "gregw control socket left: $f"; fi
done

# A gateway this kernel cannot run (ip_gre) is skipped with its note, the other measured.
out=$("$TUNBED" compare --gateways route,gre --sessions 1 --repeats 1 --time 1 --warmup 0 --no-rr --prefix "$P" --results "$R" 2>"$TMP/cmp.err") || die "tunbed compare failed: $(tail -3 "$TMP/cmp.err")"
dir=$(find "$R" -maxdepth 1 -name '*-compare' | head -1)
expect_match "compare: gre skipped, said on stderr" "$(cat "$TMP/cmp.err")" "gre skipped: this kernel has no GRE module"
grep -q "^> gre skipped: this kernel has no GRE module" "$dir/report.md" || fail "the report does not carry the skip note"
expect_match "compare: route measured" "$out" "^route, 1 session: [0-9.]+ Gbit/s"
# The congestion control asked for is the one the sessions had, and the reports say so; the
# ras run above had the system's.
out=$("$TUNBED" compare --gateways route --sessions 1 --repeats 1 --time 1 --warmup 0 --no-rr --congestion reno --prefix "$P" --results "$R/cc" 2>"$TMP/cc.err") || die "tunbed compare --congestion failed: $(tail -3 "$TMP/cc.err")"
cdir=$(find "$R/cc" -maxdepth 1 -name '*-compare' | head -1)
expect_eq "--congestion reno: the sessions' congestion control" "$(json_get "$(cat "$cdir"/runs/route-*-s1-r1.json)" 'd["traffic"]["config"]["congestion"]')" "reno"
grep -q "^TCP congestion control of the sessions: reno (asked for)" "$cdir/report.md" || fail "the report does not name reno"
expect_refusal "compare: a malformed congestion control" 2 "^tunbed: --congestion: bad value 'no way' for congestion" "$TUNBED" compare --gateways route --congestion "no way" --prefix "$P" --results "$R/cc"
expect_refusal "compare: a congestion control this kernel lacks" 2 "congestion control 'vegas1' is not available here \\(available: " "$TUNBED" compare --gateways route --congestion vegas1 --prefix "$P" --results "$R/cc"

# A scenario file: kernel VXLAN, one point.
printf '%s\n' "[scenario]" "name = vx" "gateways = vxlan" "sessions = 2" "repeats = 1" "time = 1" "warmup = 0" "rr = no" >"$TMP/vx.scenario"
out=$("$TUNBED" run "$TMP/vx.scenario" --prefix "$P" --results "$R" 2>"$TMP/run.err") || die "tunbed run failed: $(tail -3 "$TMP/run.err")"
expect_match "run: vxlan measured" "$out" "^vxlan, 2 sessions: [0-9.]+ Gbit/s"
printf '%s\n' "[scenario]" "sessions = many" >"$TMP/bad.scenario"
expect_refusal "run: a bad scenario" 2 "bad.scenario:2: bad value 'many' for sessions: expected whole numbers$" "$TUNBED" run "$TMP/bad.scenario" --prefix "$P" --results "$R"

# Ctrl-C after the first run: partial results kept and marked, one line, nothing left (the
# main job's emulated cores included: no cgroup of the run's stays).
"$TUNBED" ras --sessions 1 --workers 1 --repeats 3 --time 2 --warmup 0 --no-rr --prefix "$P" --results "$TMP/partial" >"$TMP/int.out" 2>"$TMP/int.err" &
rpid=$!
one_run() { [ -n "$(find "$TMP/partial" -name '*-r1.json' 2>/dev/null)" ]; }
poll 60 one_run || fail "the first run did not finish"
stop_bg "$rpid" INT "tunbed ras"
expect_eq "interrupted: exit status" "$BG_STATUS" "130"
expect_match "interrupted: one line" "$(grep -v '^tunbed: \[' "$TMP/int.err" | grep -v '^bootstrap' | tail -1)" "^tunbed: interrupted; topology, processes and CPU budgets removed; partial results in "
grep -q "PARTIAL" "$(find "$TMP/partial" -name report.md)" || fail "the partial report is not marked"
grep -q '<p class="partial">PARTIAL' "$(find "$TMP/partial" -name report.html)" || fail "the partial report.html is not marked"
expect_nothing_left "$P" "after the interruption"
expect_eq "no cgroup left after the interruption" "$(find /sys/fs/cgroup -maxdepth 2 -name "tunbed-$P" 2>/dev/null)" ""
