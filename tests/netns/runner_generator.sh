#!/bin/bash
# The generator verdict end to end: gregw with 1 worker and no budget, 1 session, the traffic
# client budgeted at 10% of a core for all its threads (--client-cpu). The record keeps the
# client's budget (process_budgets) and the verdict `generator`, its sentence the client at its
# budget; the report's paragraph names the budget; nothing left, no cgroup of the run's.
#
#  P-client --lan-a-- P-gwa ==transit (GRE)== P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbgen
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

printf '%s\n' "[scenario]" "gateways = gregw" "sessions = 1" "workers = 1" "repeats = 1" \
	"time = 3" "warmup = 1" "rr = no" >"$TMP/gen.scenario"
out=$("$TUNBED" run "$TMP/gen.scenario" --gateway-cpu off --client-cpu 10 --prefix "$P" \
	--results "$R" 2>"$TMP/run.err") || die "tunbed run failed: $(tail -3 "$TMP/run.err")"
expect_match "the headline says the generator limited it" "$out" \
	"^gregw gre 1w, 1 session: [0-9.]+ Gbit/s, .*; measures the generator, not the gateway: tunbed-traffic client.* of (its|their) 10% budget"
dir=$(find "$R" -maxdepth 1 -name '*-gen' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_eq "the run's record: the client's budget, the verdict" "$(python3 - "$dir" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "summary.json")))
rec = json.load(open(glob.glob(os.path.join(d, "runs", "*.json"))[0]))
pb = rec["hosts"][0].get("process_budgets") or {}
client = [p for p, name in rec["hosts"][0]["processes"].items()
          if name.startswith("tunbed-traffic client")]
print(s["runs"][0]["verdict"], list(pb) == client, [b["share_pct"] for b in pb.values()],
      rec["hosts"][0].get("budgets") or {})
PY
)" "generator True [10.0] {}"
expect_match "the report names the budget" "$(cat "$dir/report.md")" \
	"The generator was budgeted: each traffic client process had 10% of one core"
expect_nothing_left "$P" "after the run"
[ ! -e "/sys/fs/cgroup/cpu/tunbed-$P" ] || die "the run's cgroup is left"
