#!/bin/bash
# The link verdict end to end: ras.topo with its transit capped by tbf at 200 Mbit/s (a rate
# any gateway here exceeds many times), gregw with 1 worker and no budget, 1 session. The
# record says the cap (rate_cap_bps) and the verdict `link`, its sentence the share of the cap
# (tbf counts every byte of a frame: through GRE TCP's payload is 94% of it, below the 95%
# the rule once asked, so the point was judged otherwise); nothing left.
#
#  P-client --lan-a-- P-gwa ==transit (GRE, tbf 200 Mbit/s)== P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tblnk
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

sed '/^\[link transit\]$/a rate = 200mbit' "$TUNBED_SRC/topo/topologies/ras.topo" >"$TMP/capped.topo"
grep -q "^rate = 200mbit$" "$TMP/capped.topo" || die "the capped topology has no rate"
printf '%s\n' "[scenario]" "topology = $TMP/capped.topo" "gateways = gregw" "sessions = 1" \
	"workers = 1" "repeats = 1" "time = 2" "warmup = 1" "rr = no" >"$TMP/link.scenario"
out=$("$TUNBED" run "$TMP/link.scenario" --gateway-cpu off --prefix "$P" --results "$R" 2>"$TMP/run.err") ||
	die "tunbed run failed: $(tail -3 "$TMP/run.err")"
expect_match "the headline says the link limited it" "$out" "^gregw gre 1w, 1 session: 0\.[0-9]+ Gbit/s, .*; measures the link, not the gateway: 0\.[0-9]+ Gbit/s is [0-9]+% of the 0\.20 Gbit/s rate cap"
dir=$(find "$R" -maxdepth 1 -name '*-link' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_eq "the run's record: the cap, the verdict" "$(python3 - "$dir" <<'PY'
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "summary.json")))
r = s["runs"][0]
print(r["rate_cap_bps"], r["verdict"], 0.9 <= r["bits_per_second"] / r["rate_cap_bps"] <= 1.0)
PY
)" "200000000 link True"
expect_nothing_left "$P" "after the run"
