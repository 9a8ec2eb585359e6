#!/bin/bash
# The smallest scenario kind end to end, and CONTRIBUTING.md's recipe "Adding a kind", which
# shows it whole: the module in the recipe is scripts/tunbedlib/kinds/smoke.py to the byte, and
# `tunbed smoke` runs it through the one run loop: its record (kind smoke, format 1), the
# report in every renderer with the headline the command printed, `tunbed report` rebuilding
# the same summary.json, a bad value refused in one line, nothing left.
#
#  P-client --lan-a-- P-gwa ==transit (route)== P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbsmk
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

# The recipe's code block is the kind the runner runs.
python3 - "$TUNBED_SRC" <<'PY' || fail "CONTRIBUTING.md's kind is not scripts/tunbedlib/kinds/smoke.py"
import os, re, sys
src = sys.argv[1]
text = open(os.path.join(src, "CONTRIBUTING.md")).read()
section = text[text.index("## Adding a kind"):]
block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
assert block == open(os.path.join(src, "scripts", "tunbedlib", "kinds", "smoke.py")).read()
PY

expect_refusal "a time out of range" 2 "^tunbed: --time: '0.5' is not 1 to 60 seconds$" "$TUNBED" smoke --time 0.5 --prefix "$P" --results "$R"
out=$("$TUNBED" smoke --time 1 --prefix "$P" --results "$R" 2>"$TMP/smoke.err") || die "tunbed smoke failed: $(tail -3 "$TMP/smoke.err")"
dir=$(find "$R" -maxdepth 1 -name '*-smoke' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "the headline" "$out" "^route, 1 session: [0-9.]+ Gbit/s"$'\n'"report: $dir/report\.md"$'\n'"report: $dir/report\.html$"
expect_match "progress" "$(cat "$TMP/smoke.err")" "tunbed: \[1/1\] route, 1 session"
python3 - "$dir" "$out" <<'PY' || fail "the smoke run's results"
import csv, html, json, os, sys
d, out = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["kind"], meta["format"], meta["complete"]) == ("smoke", 1, True), meta
assert meta["provenance"]["command"][1:] == ["smoke", "--time", "1", "--prefix", meta["prefix"], "--results", os.path.dirname(d)], meta["provenance"]
rec = json.load(open(os.path.join(d, "runs", "route-s1-r1.json")))
assert (rec["kind"], rec["format"]) == ("smoke", 1), rec
assert rec["traffic"]["tcp"]["bits_per_second"] > 0, rec["traffic"]
s = json.load(open(os.path.join(d, "summary.json")))
assert [r["key"] for r in s["runs"]] == ["route-s1"] and s["complete"], s
line = out.splitlines()[0]
page = open(os.path.join(d, "report.html")).read()
assert f"<li>{html.escape(line)}</li>" in page and "<script" not in page, "report.html"
assert f"- {line}\n" in open(os.path.join(d, "report.md")).read(), "report.md"
rows = list(csv.reader(open(os.path.join(d, "summary.csv"))))
assert rows[0] == ["point", "bits_per_second"] and rows[1][0] == "route-s1" and len(rows) == 2, rows
PY
expect_report_rebuilds "$dir" "$out"
expect_nothing_left "$P" "after tunbed smoke"
