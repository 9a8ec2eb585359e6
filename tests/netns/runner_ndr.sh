#!/bin/bash
# `tunbed ndr` end to end (docs/ndr.md). Every bad value first: one line, exit 2, nothing
# made. Then the search against a rate cap: the generator alone on a direct link that tbf caps
# at 20 Mbit/s finds NDR and PDR near the cap in datagrams a second, every trial recorded,
# the bounds measured at the full duration, latency at 10, 50 and 90% of PDR. Then a gateway
# (gregw) through a scenario file with an [ndr] section, its ceiling taken from that run: the
# cap is far below what gregw forwards, so its result is the generator's ceiling and says so;
# a --max-rate above the ceiling is refused; `tunbed report` rebuilds the report; nothing is
# left behind. The simple IMIX through gregw, its largest member capped at what gregw carries.
#
#  the cap:     P-client 198.18.1.1 ---wire (tbf 20mbit)--- 198.18.1.2 P-server
#  the gateway: P-client --lan-a-- P-gwa [gregw] ==transit== [gregw] P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbndr
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"
N=(ndr --prefix "$P" --results "$R")

expect_refusal "a frame below the smallest" 2 "^tunbed: frame size 63 is below the smallest frame tunbed-traffic sends over IPv4: 64 bytes \(IP, UDP and its 18-byte header\)$" "$TUNBED" "${N[@]}" --sizes 63
expect_refusal "a frame above gregw's tunnel MTU" 2 "^tunbed: frame size 1518 is too big for gregw gre: its inner IP packet \(1500 bytes\) exceeds the tunnel MTU 1476 \(transit MTU 1500 - 24 of tunnel headers\)$" "$TUNBED" "${N[@]}" --sizes 64,1518
expect_refusal "a frame above GRE-in-UDP's with a key" 2 "^tunbed: frame size 1490 is too big for gregw gre-udp\+key: .* tunnel MTU 1464 " "$TUNBED" "${N[@]}" --modes gre-udp+key --sizes 1490
expect_refusal "a frame above VXLAN's" 2 "^tunbed: frame size 1469 is too big for vxlan: .* tunnel MTU 1450 " "$TUNBED" "${N[@]}" --gateways route,vxlan --sizes 1469
expect_refusal "IPv6's smallest frame" 2 "^tunbed: frame size 64 is below the smallest frame tunbed-traffic sends over IPv6: 84 bytes" "$TUNBED" "${N[@]}" --topology ras6 --sizes 64
expect_refusal "a bad rate" 2 "^tunbed: --max-rate: bad value 'lots' for max_rate: expected datagrams a second, e.g. 500k or 1.5m$" "$TUNBED" "${N[@]}" --max-rate lots
expect_refusal "a rate above 100 Mpps" 2 "^tunbed: --max-rate: bad value '200m' for max_rate: expected 1 to 100m datagrams a second$" "$TUNBED" "${N[@]}" --max-rate 200m
expect_refusal "the highest rate below the lowest" 2 "^tunbed: --max-rate 1000 is not above --min-rate 5000$" "$TUNBED" "${N[@]}" --max-rate 1k --min-rate 5k
expect_refusal "a width of 0" 2 "^tunbed: --width: bad value '0' for width: expected 0.001 to 0.5$" "$TUNBED" "${N[@]}" --width 0
expect_refusal "an unknown gateway" 2 "^tunbed: unknown gateway 'gregw2'" "$TUNBED" "${N[@]}" --gateways gregw2
expect_refusal "no ceiling to take" 2 "^tunbed: $TMP/nothing: no search of the generator alone \(direct\) to take the ceiling from$" "$TUNBED" "${N[@]}" --ceiling-from "$TMP/nothing"
printf '[scenario]\ngateways = gregw\nsessions = 8\n[ndr]\nsizes = 64\n' >"$TMP/bad.ini"
expect_refusal "a scenario key that does not apply" 2 "^tunbed: $TMP/bad.ini:3: 'sessions' does not apply to an NDR search \(its keys are in \[ndr\]\)$" "$TUNBED" run "$TMP/bad.ini" --prefix "$P" --results "$R"
printf '[scenario]\ngateways = gregw\n[ndr]\nsizes = 64\nflows = 0\n' >"$TMP/bad.ini"
expect_refusal "a bad [ndr] value" 2 "^tunbed: $TMP/bad.ini:5: bad value '0' for flows: expected 1 to 1000$" "$TUNBED" run "$TMP/bad.ini" --prefix "$P" --results "$R"
[ ! -e "$R" ] || fail "a refusal made results: $(ls "$R")"
expect_nothing_left "$P" "after the refusals"

# The cap: 20 Mbit/s of 1014-byte frames (tbf counts the Ethernet header, not the FCS): 2465
# datagrams a second.
sed '/^\[link wire\]/a rate = 20mbit' "$TOPOLOGIES/direct.topo" >"$TMP/capped.topo"
out=$("$TUNBED" "${N[@]}" --gateways direct --direct-topology "$TMP/capped.topo" --sizes 1018 --time 2 --initial-time 0.5 --width 0.05 --max-rate 20k 2>"$TMP/cap.err") || die "tunbed ndr on the cap failed: $(tail -3 "$TMP/cap.err")"
cap=$(find "$R" -maxdepth 1 -name '*-ndr' | head -1)
[ -n "$cap" ] || die "no results directory"
expect_match "the headline names the frame sizes" "$out" "^direct \(the generator alone\), 1018-byte frames \(1000-byte inner IP packets, 1018-byte frames on the link\): NDR 0\.00[0-9] Mpps"
expect_match "the command names both reports, last" "$out" "report: $cap/report\.md"$'\n'"report: $cap/report\.html$"
python3 - "$cap" <<'PY' || fail "the search did not find the cap"
import csv, json, os, sys
d = sys.argv[1]
cap = 20e6 / (8 * 1014)
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["format"], meta["kind"], meta["complete"]) == (3, "ndr", True), meta
rec = json.load(open(os.path.join(d, "searches", "direct-f1018.json")))
assert (rec["format"], rec["kind"]) == (3, "ndr") and rec["frame"]["udp_payload"] == 972, rec
assert rec["where"] == {"mode": "namespaces", "path": "direct", "target": "198.18.1.2",
                        "client": "client", "server": "server"}, rec["where"]
ndr, pdr = rec["result"]["ndr"], rec["result"]["pdr"]
# Within a wide margin of the cap (a busy machine's trials may fall short and count less).
assert 0.6 * cap <= ndr["rate"] <= 1.1 * cap, (ndr, cap)
assert ndr["rate"] <= pdr["rate"] <= 1.2 * cap, (pdr, cap)
trials = rec["trials"]
for name in ("ndr", "pdr"):
    r = rec["result"][name]
    lo = trials[r["lower_trial"]]
    assert lo["duration"] == 2 and lo["rate"] == r["rate"] and lo["valid"], (name, lo)
    if r["upper_trial"] is not None:
        up = trials[r["upper_trial"]]
        assert up["duration"] == 2 and up["rate"] == r["upper"] > r["rate"], (name, up)
        assert up["lost"] > 0 or not up["valid"], (name, up)
# Short trials first, every trial's count consistent, the first at the highest rate.
assert trials[0]["duration"] == 0.5 and trials[0]["rate"] == 20000, trials[0]
assert sorted(t["duration"] for t in trials) == [t["duration"] for t in trials], "durations"
for t in trials + rec["latency_trials"]:
    assert t["sent"] == t["received"] + t["lost"], t
    assert t["loss_ratio" if "loss_ratio" in t else "lost"] is not None
# Latency at 10, 50 and 90% of PDR, each a trial of the full duration with samples.
lat = rec["latency_trials"]
assert [t["fraction"] for t in lat] == [0.1, 0.5, 0.9], lat
for t in lat:
    assert t["rate"] == int(t["fraction"] * pdr["rate"]) and t["duration"] == 2, t
    assert t["latency"]["samples"] > 0 and t["latency"]["p50_ms"] <= t["latency"]["p99_ms"], t
rows = list(csv.DictReader(open(os.path.join(d, "trials.csv"))))
assert len(rows) == len(trials) + 3, len(rows)
s = list(csv.DictReader(open(os.path.join(d, "summary.csv"))))
assert len(s) == 1 and float(s[0]["ndr_pps"]) == ndr["rate"], s
for p in ("rates", "loss-f1018", "latency-f1018"):
    png = open(os.path.join(d, "plots", p + ".png"), "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", p
page = open(os.path.join(d, "report.html")).read()
assert page.count("<svg") == 3 and "<script" not in page
print(f"cap {cap:.0f}: NDR {ndr['rate']}, PDR {pdr['rate']}, {len(trials)} trials")
PY
expect_nothing_left "$P" "after the search on the cap"

# A gateway, from a scenario file, its ceiling the cap's: gregw forwards far more, so the
# result is the generator's and says so.
cat >"$TMP/gw.ini" <<INI
[scenario]
name = ndr-gregw
gateways = gregw
modes = gre
workers = 1
time = 1
[ndr]
sizes = 1018
initial_time = 0.5
ceiling_from = $cap
INI
out=$("$TUNBED" run "$TMP/gw.ini" --prefix "$P" --results "$R" 2>"$TMP/gw.err") || die "tunbed run (ndr) failed: $(tail -3 "$TMP/gw.err")"
gw=$(find "$R" -maxdepth 1 -name '*-ndr-gregw' | head -1)
[ -n "$gw" ] || die "no results directory of the gateway"
# At the ceiling, or (a busy machine's generator falling short in a trial near it) bounded by
# a trial the generator did not offer: either way the generator's limit, and said so.
expect_match "gregw: the headline says the generator was the limit" "$out" "^gregw gre 1w, 1018-byte frames \(1000-byte inner IP packets, 1042-byte frames on transit\): NDR .* \(NDR (at the generator's ceiling|bound by the generator); PDR (at the generator's ceiling|bound by the generator)\)"
python3 - "$gw" "$cap" <<'PY' || fail "the gateway's search is not what it should be"
import json, os, sys
gw, cap = sys.argv[1:]
ceiling = json.load(open(os.path.join(cap, "searches", "direct-f1018.json")))["result"]["pdr"]["rate"]
rec = json.load(open(os.path.join(gw, "searches", "gregw-gre-w1-f1018.json")))
assert rec["params"]["max_rate"] == ceiling, (rec["params"], ceiling)
ndr = rec["result"]["ndr"]
assert ndr["limited"] and ndr["rate"] >= 0.5 * ceiling, ndr
assert ndr["at_max"] == (ndr["rate"] == ceiling), ndr
if not ndr["at_max"]:
    assert not rec["trials"][ndr["upper_trial"]]["valid"], rec["trials"][ndr["upper_trial"]]
assert rec["frame"]["transit"] == 1042 and rec["frame"]["overhead"] == 24, rec["frame"]
procs = set(rec["hosts"][0]["processes"].values())
assert {"gregw gwa", "gregw gwb", "tunbed-traffic server", "tunbed-traffic client"} <= procs, procs
assert set(rec["gateway"]) == {"gwa", "gwb"}, rec["gateway"]
s = json.load(open(os.path.join(gw, "summary.json")))["searches"][0]
assert s["gateway_cores_at_pdr"] > 0 and s["box_cores_at_pdr"] >= s["gateway_cores_at_pdr"], s
assert json.load(open(os.path.join(gw, "meta.json")))["ceiling"] == {"1018": ceiling}
PY
out2=$("$TUNBED" report "$gw" 2>"$TMP/report.err") || die "tunbed report failed: $(tail -3 "$TMP/report.err")"
expect_eq "tunbed report: the same headline and both reports" "$out2" "$out"

# The simple IMIX through gregw, kept small (20,000 datagrams a second at most, 1 s trials):
# one client per member at 7:4:1 of the rate, its 1518-byte member capped at the 1494 bytes
# gregw gre carries (the generator alone sends it whole), said in the headline and the record.
out=$("$TUNBED" "${N[@]}" --gateways gregw --sizes imix --time 1 --initial-time 1 --width 0.5 --flows 2 --max-rate 20k 2>"$TMP/imix.err") || die "tunbed ndr --sizes imix failed: $(tail -3 "$TMP/imix.err")"
mix=$(find "$R" -maxdepth 1 -name '*-ndr' -newer "$gw/meta.json" | head -1)
expect_match "IMIX: the headline names the mix and the capped member" "$(grep '^gregw gre 2w, IMIX' <<<"$out")" "^gregw gre 2w, IMIX frames \(64/594/1494 bytes 7:4:1, a mean of 341\.8-byte inner IP packets, 383\.8-byte frames on transit\): NDR 0\.0[0-9]+ Mpps .*its 1518-byte member capped at 1494, the largest frame carried"
python3 - "$mix" <<'PY' || fail "the IMIX searches are not what they should be"
import json, os, sys
d = sys.argv[1]
rec = lambda n: json.load(open(os.path.join(d, "searches", n + ".json")))
c, g = rec("direct-fimix"), rec("gregw-gre-w2-fimix")
assert [(m["lan"], m["weight"]) for m in c["frame"]["mix"]] == [(64, 7), (594, 4), (1518, 1)]
assert [m["lan"] for m in g["frame"]["mix"]] == [64, 594, 1494], g["frame"]
assert g["frame"]["mix"][2]["capped_from"] == 1518 and g["frame"]["lan"] == "imix"
for r in (c, g):
    sizes = [m["udp_payload"] for m in r["frame"]["mix"]]
    for t in r["trials"] + r["latency_trials"]:
        ms = t["members"]
        # Each member its own client at its share of the rate, sending its own size.
        assert [m["udp"]["size"] for m in t["traffic"]["members"]] == sizes, t
        assert [m["rate"] for m in ms] == [max(1, round(t["rate"] * w / 12)) for w in (7, 4, 1)], (t["rate"], ms)
        assert t["sent"] == sum(m["sent"] for m in ms) and t["lost"] == sum(m["lost"] for m in ms)
        assert t["valid"] == all(m["valid"] for m in ms), t
    assert r["result"]["pdr"]["rate"] > 0, r["result"]
s = {x["key"]: x for x in json.load(open(os.path.join(d, "summary.json")))["searches"]}
pdr = g["result"]["pdr"]["rate"]
assert abs(s["gregw-gre-w2"]["pdr"]["inner_gbps"] - pdr * 4102 / 12 * 8 / 1e9) < 1e-9, s["gregw-gre-w2"]
page = open(os.path.join(d, "report.html")).read()
assert "Loss against offered load, IMIX frames" in page and page.count("<svg") == 3
PY
expect_nothing_left "$P" "after the IMIX"

# The ceiling is known: a --max-rate above it is refused before anything runs.
expect_refusal "a rate above the ceiling" 2 "^tunbed: --max-rate 5000 is above the generator's ceiling at 1018-byte frames \([0-9]+ datagrams/s, measured alone on direct\): a result there would be the generator's, not the gateway's$" "$TUNBED" "${N[@]}" --ceiling-from "$cap" --gateways route --sizes 1018 --max-rate 5k
expect_nothing_left "$P" "after tunbed ndr"
for f in /run/gregw/*"$P"*; do
	if [ -e "$f" ]; then fail "gregw control socket left: $f"; fi
done
