#!/bin/bash
# tunbed tunnels --churn end to end on the tunnels bed (docs/tunnels.md, "Churn under load"): 8
# tunnels, a baseline run and a run at 50 changes a second, 4 duplex verified sessions of 2 s
# (after a second of warm-up) on the steady tunnels t00000 to t00003 while tunnels_churn.py
# removes and adds t00004 to t00007 on both gateways. From each record: every steady session
# verified, every byte sent received both ways, the sessions on the steady tunnels alone, the
# receive stall recorded; the churn run's changes made as many as started, each acknowledged
# (gregw's own count of changes is the same on both gateways), none failed, every tunnel added
# again carried a ping within a second of its add (the first echo or the second: which, the
# report says); the baseline has no churn. The report's churn section and churn.csv, and
# `tunbed report` rebuilds the same summary.json. Bad input: one line, exit status 2, nothing
# started. Nothing left.
#
#  P-client 198.18.64.i --lan-a-- P-gwa [gregw --tunnels] ==8 keys== [gregw --tunnels] P-gwb --lan-b-- P-server 198.18.128.i
#  steady: i = 0..3 (sessions); churned: i = 4..7 (removed, added, pinged from the client's site)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbchu
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

expect_refusal "a rate of 0" 2 "^tunbed: --churn: '0' is not a rate above 0 and at most 100000 changes a second$" \
	"$TUNBED" tunnels --churn 10,0 --prefix "$P" --results "$R"
expect_refusal "a rate that is no number" 2 "^tunbed: --churn: 'fast' is not a rate above 0" \
	"$TUNBED" tunnels --churn fast --prefix "$P" --results "$R"
expect_refusal "an odd count of tunnels" 2 "^tunbed: --churn-tunnels: '7' is odd: half the tunnels are steady, half changed$" \
	"$TUNBED" tunnels --churn 10 --churn-tunnels 7 --prefix "$P" --results "$R"
expect_refusal "one tunnel" 2 "^tunbed: --churn-tunnels: '1' is not 2 to 16384$" \
	"$TUNBED" tunnels --churn 10 --churn-tunnels 1 --prefix "$P" --results "$R"
expect_refusal "--churn-tunnels alone" 2 "^tunbed: --churn-tunnels: only with --churn$" \
	"$TUNBED" tunnels --churn-tunnels 8 --prefix "$P" --results "$R"
expect_refusal "counts and churn" 2 "^tunbed: --tunnels-counts and --churn: one or the other" \
	"$TUNBED" tunnels --churn 10 --tunnels-counts 1,10 --prefix "$P" --results "$R"
[ ! -e "$R" ] || fail "a refusal made $R"

out=$("$TUNBED" tunnels --churn 50 --churn-tunnels 8 --sessions 4 --time 2 --warmup 1 \
	--repeats 1 --prefix "$P" --results "$R" 2>"$TMP/tunnels.err") ||
	die "tunbed tunnels --churn failed: $(tail -3 "$TMP/tunnels.err")"
log "$out"
dir=$(find "$R" -maxdepth 1 -name '*-tunnels' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "the headline, the baseline then the rate" "$out" \
	"^gregw 8 tunnels, no churn \(baseline\): [0-9.]+ Gbit/s, longest stall [0-9.]+ ms, verified"$'\n'"gregw 8 tunnels, churn 50/s: [0-9.]+ Gbit/s \([0-9.]+ of the baseline\), longest stall [0-9.]+ ms, [0-9]+ of [0-9]+ changes, [0-9]+ pings after an add: [0-9]+ first packet, [0-9]+ later, 0 never, verified"$'\n'"report: "
python3 - "$dir" <<'PY' || fail "the churn run's records"
import csv, json, os, sys
d = sys.argv[1]
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["kind"], meta["format"], meta["complete"], meta["counts"], meta["churn"]) == ("tunnels", 3, True, [8], [50.0]), meta
steady = {f"198.18.128.{i}" for i in range(4)}
for rate in (0, 50):
    rec = json.load(open(os.path.join(d, "runs", f"gregw-gre-w2-n8-s4-churn{rate}-r1.json")))
    assert (rec["format"], rec["point"]["churn"], rec["point"]["pattern"]) == (3, rate, "duplex"), rec["point"]
    tcp = rec["traffic"]["tcp"]
    assert rec["traffic"]["complete"] and tcp["failed"] == 0 and tcp["verify"]["on"] and tcp["verify"]["mismatches"] == 0, (rate, tcp.get("errors"), tcp["verify"])
    for s in tcp["per_session"]:
        assert s["remote"] in steady, (rate, s)
        assert s["sent"] == s["server_received"] > 0 and s["server_sent"] == s["received"] > 0, (rate, s)
        assert s["rx_stall_max_ms"] > 0, (rate, s)
    assert tcp["rx_stall"]["max_ms"] == max(s["rx_stall_max_ms"] for s in tcp["per_session"]), tcp["rx_stall"]
    t = rec["tunnels"]
    assert sorted(x["name"] for x in t["carried"]) == [f"t{i:05d}" for i in range(4)], t["carried"]
    assert t["churned"]["tunnels"] == 4 and t["idle"] == {"tunnels": 0, "packets": 0, "bytes": 0}, t
    if rate == 0:
        assert "churn" not in rec, rec.get("churn")
        continue
    c = rec["churn"]
    assert c["error"] is None, c["error"]
    assert c["done"] == c["started"] > 0 and c["add"] + c["remove"] == c["done"], c
    assert c["asked"] >= c["done"], c
    for role in ("gwa", "gwb"):
        assert c["gregw"][role]["changes"] == c["done"], (role, c["gregw"], c["done"])
    p = c["pings"]
    assert 0 < p["pinged"] <= c["add"] and p["still_out"] == 0, p
    assert p["first"] + p["later"] + p["never"] == p["pinged"] and p["never"] == 0, p
s = json.load(open(os.path.join(d, "summary.json")))
for p in s["summary"].values():
    assert p["verified"] and p["counters_ok"], p
x = s["summary"]["gregw-gre-w2-n8-s4-churn50"]
assert x["of_baseline"] > 0 and x["stall_ms"]["median"] > 0, x
rows = list(csv.DictReader(open(os.path.join(d, "churn.csv"))))
assert [float(r["churn_per_s"]) for r in rows] == [0, 50], rows
report = open(os.path.join(d, "report.md")).read()
assert "## Churn under load" in report, report
assert "- 8 tunnels: t00000 to t00003 (4 of 8), 1 session each" in report, report
PY
expect_report_rebuilds "$dir" "$out"
expect_nothing_left "$P" "after tunbed tunnels --churn"
