#!/bin/bash
# `tunbed datasheet` end to end (docs/datasheet.md): the refusals first (a budget too small
# for one point of each part, a bad budget, an unknown gateway: one line, exit 2, nothing
# made; those of --hosts are netns/hosts_ndr's); then route and gregw in the least plan
# (--budget 2m): throughput at 1, 8 and 64 sessions with verdicts, gregw's DSCP and ECN
# measured (route's "not applicable": no tunnel), NDR and PDR at 64-byte frames after the
# generator's ceiling, the failover of gregw's pair and route's "not applicable", every
# section in summary.json, report.md and report.html, each part's raw record kept and read
# back by its own kind, `tunbed report` giving the same summary.json, `tunbed diff` of it
# against itself finding no change per gateway and part, nothing left.
#
#  throughput, NDR: P-client --lan-a-- P-gwa ==transit (route | gregw)== P-gwb --lan-b-- P-server
#  the ceiling:     P-client ---wire--- P-server
#  failover:        P-client -- P-gwa == P-core == P-gwb1 (active) | P-gwb2 (passive) -- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbds
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"
D=(datasheet --prefix "$P" --results "$R")

expect_refusal "a budget too small" 2 "^tunbed: --budget 0:40 is too small for one point of each part: the least is ~1:[0-9]{2} for route, gregw \(throughput ~[0-9]:[0-9]{2}, tos ~[0-9]:[0-9]{2}, ndr ~[0-9]:[0-9]{2}, failover ~[0-9]:[0-9]{2}\)$" "$TUNBED" "${D[@]}" --gateways route,gregw --budget 40s
expect_refusal "a bad budget" 2 "^tunbed: --budget: bad value '20 minutes': expected a duration such as 20m, 1h30m or 90s$" "$TUNBED" "${D[@]}" --gateways route --budget "20 minutes"
expect_refusal "an unknown gateway" 2 "^tunbed: unknown gateway 'gregw2'" "$TUNBED" "${D[@]}" --gateways route,gregw2
[ ! -e "$R" ] || fail "a refusal made results: $(ls "$R")"
expect_nothing_left "$P" "after the refusals"

out=$("$TUNBED" "${D[@]}" --gateways route,gregw --budget 2m 2>"$TMP/ds.err") || die "tunbed datasheet failed: $(tail -5 "$TMP/ds.err")"
dir=$(find "$R" -maxdepth 1 -name '*-datasheet' | head -1)
[ -n "$dir" ] || die "no results directory"
err=$(cat "$TMP/ds.err")
expect_match "the plan chosen and said" "$err" "tunbed: --budget 2:00: the least plan: throughput 1 repeat of 1 s"
expect_match "progress with the time left" "$err" "tunbed: \[2/11\] route, 8 sessions, repeat 1: [0-9.]+ [GMk]bit/s  elapsed [0-9:]+  left ~[0-9:]+"
expect_match "the DSCP/ECN part's progress" "$err" "tunbed: \[7/11\] DSCP and ECN through gregw gre 2w: dscp yes; encap copied; decap yes; load not measured  elapsed [0-9:]+  left ~[0-9:]+"
expect_match "the NDR part's progress" "$err" "tunbed: \[8/11\] NDR direct, 64-byte frames: NDR [0-9.]+ Mpps"
expect_match "a headline per gateway" "$out" "^route: 1 session [0-9.]+ Gbit/s; limited by .*failover kill not applicable"$'\n'"gregw: 1 session [0-9.]+ Gbit/s; limited by .*; failover kill [0-9.]+ s outage"
python3 - "$dir" "$out" "$TUNBED_SRC" <<'PY' || fail "the datasheet's results"
import html, json, os, subprocess, sys
d, out, src = sys.argv[1], sys.argv[2], sys.argv[3]
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["kind"], meta["format"], meta["complete"], meta["failed"]) == ("datasheet", 1, True, []), meta
assert meta["plan"]["name"] == "least" and meta["gateways"] == ["route", "gregw"], meta["plan"]
runs = sorted(os.listdir(os.path.join(d, "runs")))
assert runs == sorted([f"throughput-{k}-push-s{n}-r1.json" for k in ("route---w0-mtu0", "gregw-gre-w2-mtu0") for n in (1, 8, 64)]
                      + ["tos-gregw-gre-w2.json", "ndr-direct-f64.json", "ndr-route-f64.json", "ndr-gregw-gre-w2-f64.json", "failover-gregw-kill-r1.json"]), runs
kinds = {"throughput": ("matrix", 3), "tos": ("datasheet", 1), "ndr": ("ndr", 3), "failover": ("failover", 2)}
for name in runs:
    rec = json.load(open(os.path.join(d, "runs", name)))
    assert (rec["kind"], rec["format"]) == ("datasheet", 1), name
    assert (rec["record"]["kind"], rec["record"]["format"]) == kinds[rec["part"]], name
s = json.load(open(os.path.join(d, "summary.json")))
gw = s["gateways"]
assert list(gw) == ["route", "gregw"], list(gw)
for g in gw:
    t = gw[g]["throughput"]
    assert sorted(t, key=int) == ["1", "8", "64"], t
    for n, x in t.items():
        assert x["bits_per_second"]["median"] > 0 and x["verdict"] in ("gateway", "generator", "link", "box", "unclear"), (g, n, x)
    ndr = gw[g]["ndr"]["64"]
    assert ndr["pdr"]["rate_pps"] and ndr["ndr"]["rate_pps"] <= ndr["pdr"]["rate_pps"], (g, ndr)
    assert sorted(ndr["latency"]) == ["0.1", "0.5", "0.9"], ndr["latency"]
assert s["ceiling_pps"]["64"] > 0, s["ceiling_pps"]
route, gregw = dict(gw["route"]["figures"]), dict(gw["gregw"]["figures"])
assert route["failover, kill"].startswith("not applicable: route cannot run as an active and passive pair"), route
assert gw["route"]["failover"] == {} and gw["gregw"]["failover"]["kill"]["repeats"] == 1, gw["gregw"]["failover"]
assert gregw["failover, kill"].endswith("sessions survived") and "s outage" in gregw["failover, kill"], gregw
assert gregw["NDR / PDR, 1518-byte frames"].startswith("not applicable: frame size 1518 is too big for gregw gre"), gregw
assert route["NDR / PDR, 1518-byte frames"] == "not run: left out to fit --budget (the least plan)", route
assert route["DSCP carried (outer)"].startswith("not applicable: route has no tunnel"), route
assert gregw["DSCP carried (outer)"].startswith("yes: "), gregw
assert gregw["ECN at encapsulation (inner -> outer)"] == "copied (RFC 6040's normal mode): ECT(0) -> ECT(0); ECT(1) -> ECT(1); CE -> CE", gregw
assert gregw["CE at decapsulation (outer CE -> inner)"].startswith("yes: ECT(0) under CE: 100 of 100 arrived CE; ECT(1) under CE: 100 of 100 arrived CE; Not-ECT under CE: dropped"), gregw
assert gw["gregw"]["tos"]["dscp"]["marked"] == gw["gregw"]["tos"]["dscp"]["copied"] > 0 and gw["route"]["tos"] is None, gw["gregw"]["tos"]
# The least plan leaves the part's load out, and says so.
assert gregw["marks / drops under load (ECN, CUBIC)"] == "not measured: not run: left out to fit --budget (the least plan)", gregw
tos = json.load(open(os.path.join(d, "runs", "tos-gregw-gre-w2.json")))["record"]
assert gw["gregw"]["tos"]["load"]["verdict"] is None and tos["load"] is None and tos["load_why"] == "not run: left out to fit --budget (the least plan)", tos.get("load")
# The guest tests' results count for the build the datasheet ran (build/bin) only, as their
# runs recorded them in build/interop (tests/netns/guest_lib.sh); this test never writes one.
build = subprocess.run([f"{src}/scripts/build-id", f"{src}/build/bin"], capture_output=True, text=True, check=True).stdout.strip()
mine = {}
for t in ("guest_gre", "guest_gre6", "guest_gregw"):
    try:
        r = json.load(open(f"{src}/build/interop/{t}.json"))
    except (OSError, ValueError):
        continue
    if isinstance(r, dict) and r.get("build_id") == build and r.get("test") == t:
        mine[t] = r["result"]
assert route["interoperability"].startswith("not applicable: the guest tests are gregw's"), route
if mine:
    assert gregw["interoperability"].endswith(f"(build {build})") and all(f"{t} {'passed' if v == 'pass' else 'FAILED'}" in gregw["interoperability"] for t, v in mine.items()), (mine, gregw)
else:
    assert gregw["interoperability"].startswith(f"not run: no result of the guest tests (guest_gre, guest_gre6, guest_gregw) is recorded for this build ({build}): sudo env TUNBED_BIN="), gregw
assert route["emulated cores"].startswith("no: route: a kernel gateway"), route
assert gregw["inner MTU"] == "1476" and gregw["version"].startswith("gregw "), gregw
md = open(os.path.join(d, "report.md")).read()
page = open(os.path.join(d, "report.html")).read()
for heading in ("route", "gregw", "Side by side", "Legend"):
    assert f"\n## {heading}\n" in md and f">{heading}</h2>" in page, heading
assert "| figure | route | gregw |" in md and "<th>figure</th><th>route</th><th>gregw</th>" in page, "side by side"
for line in out.splitlines()[:2]:
    assert f"- {line}\n" in md and f"<li>{html.escape(line)}</li>" in page, line
assert page.count("<svg ") == 2 and "<script" not in page, "report.html's plots"
PY
expect_report_rebuilds "$dir" "$out"
# tunbed diff of the datasheet against itself: a line per gateway and part, nothing changed.
diffed=$("$TUNBED" diff "$dir" "$dir" 2>&1) || fail "tunbed diff of the datasheet against itself: exit status $?: $diffed"
expect_match "tunbed diff: gregw's throughput" "$diffed" $'\n''gregw, throughput, 64 sessions: [0-9.]+ -> [0-9.]+ Gbit/s \(\+0\.0%; .*too few repeats'
expect_match "tunbed diff: gregw's DSCP/ECN" "$diffed" $'\n''gregw, DSCP/ECN decap: yes -> yes: the same'$'\n'
expect_match "tunbed diff: the NDR searches" "$diffed" $'\n''route, NDR, 64-byte frames: [0-9.]+ -> [0-9.]+ Mpps \(\+0\.0%; passed-failed: '
expect_match "tunbed diff: the failover" "$diffed" $'\n''gregw, failover kill, outage: [0-9.]+ -> [0-9.]+ s '
expect_match "tunbed diff: the verdict" "$diffed" $'\n''verdict: no regression beyond 5% nor of behaviour; '
expect_nothing_left "$P" "after tunbed datasheet"
