#!/bin/bash
# Emulated cores end to end (--gateway-cpu, docs/scaling.md): `tunbed ras` points of gregw with
# 1 and 2 workers and a 20% budget per worker thread: the 1-worker point is gateway-bound in its
# record, each budgeted worker used at most its budget (+3 points) of a CPU over the measured
# window, 1 session on 2 workers used one worker's budget (the other idle), the record keeps
# the budgets and the kernel's IRQ time accounting; no cgroup of the run is left after it, nor
# after a run killed with SIGKILL and `tunbed down`; bad shares are refused before anything
# starts.
#
#  P-client --lan-a-- P-gwa [gregw, worker at 20%] ==transit== [gregw, worker at 20%] P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbbud
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

# What of the run's budgets is in any cgroup hierarchy (v1 per controller, v2).
cgroups_left() { find /sys/fs/cgroup -maxdepth 2 -name "tunbed-$P" 2>/dev/null; }
budget_cleanup() {
	"$TUNBED" down --prefix "$P" >/dev/null 2>&1 || true
}
# shellcheck disable=SC2154 # rc is assigned inside the trap string
trap 'rc=$?; budget_cleanup; cleanup "$rc"' EXIT

expect_refusal "a share of 0%" 2 "^tunbed: bad value '0' for --gateway-cpu: a share of one core from 1 to 100 \\(percent\\), or off$" "$TUNBED" ras --gateway-cpu 0 --prefix "$P" --results "$R"
expect_refusal "a share past 100%" 2 "^tunbed: bad value '100.5' for --gateway-cpu" "$TUNBED" ras --gateway-cpu 100.5 --prefix "$P" --results "$R"
printf '%s\n' "[scenario]" "gateway_cpu = lots" >"$TMP/bad.scenario"
expect_refusal "a bad gateway_cpu in a file" 2 "bad.scenario:2: bad value 'lots' for gateway_cpu" "$TUNBED" run "$TMP/bad.scenario" --prefix "$P" --results "$R"
[ ! -e "$R" ] || fail "a refused run made its results directory"

out=$("$TUNBED" ras --sessions 1 --workers 1,2 --repeats 1 --time 3 --warmup 1 --no-rr --gateway-cpu 20 --prefix "$P" --results "$R" 2>"$TMP/ras.err") || die "tunbed ras --gateway-cpu 20 failed: $(tail -3 "$TMP/ras.err")"
dir=$(find "$R" -maxdepth 1 -name '*-ras' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_eq "no cgroup left after the run" "$(cgroups_left)" ""
PYTHONPATH="$TUNBED_SRC/scripts" python3 - "$dir" <<'PY' || fail "the budgeted record is not what it should be"
import json, os, sys
from tunbedlib import analysis
d = sys.argv[1]
s = json.load(open(os.path.join(d, "summary.json")))
assert s["meta"]["gateway_cpu"] == 20, s["meta"]
rec = json.load(open(os.path.join(d, "runs", "gregw-gre-w1-mtu0-push-s1-r1.json")))
host = rec["hosts"][0]
budgets = host["budgets"]
labels = host["thread_labels"]
# gwa's and gwb's one worker each, at 20% of a core, pinned.
assert sorted(labels[t] for t in budgets) == ["gregw gwa worker 0", "gregw gwb worker 0"], (budgets, labels)
for tid, b in budgets.items():
    assert b["share_pct"] == 20 and b["quota_us"] * 100 == 20 * b["period_us"], b
    assert isinstance(b["cpu"], int) and b["throttling"]["nr_periods"] > 0, b
assert host["facts"]["irq_time_accounting"] in (True, False, None), host["facts"]
assert host["facts"]["kernel"] == os.uname().release, host["facts"]
tr = rec["traffic"]
c = analysis.host_cpu(host, tr["measure_start_mono_s"], tr["measure_end_mono_s"])
for tid in budgets:
    pct = 100 * c["threads"][tid]["seconds"] / c["span"]
    # The budget over the window, and a few points for the rounding of ticks to samples.
    assert pct <= 23, (labels[tid], pct)
    print(f"{labels[tid]}: {pct:.1f}% of a CPU at a 20% budget")
# 1 session with 2 workers a gateway: the session's packets on one worker of each, so one
# worker's budget does the work (at least half of it used by the gateway that limits the
# point) while the other worker idles (below a tenth of its own). Whether the busy one is at
# its budget is the verdict's to say, and over 3 s with one TCP session it is not always (CI:
# 89% of it, the verdict's line at 90%): the 1-worker point's verdict is asserted below.
rec = json.load(open(os.path.join(d, "runs", "gregw-gre-w2-mtu0-push-s1-r1.json")))
host = rec["hosts"][0]
tr = rec["traffic"]
c = analysis.host_cpu(host, tr["measure_start_mono_s"], tr["measure_end_mono_s"])
use = {}
for tid in host["budgets"]:
    gw, _, worker = host["thread_labels"][tid].rpartition(" worker ")
    # A worker that ran not at all in the window has no entry.
    secs = c["threads"][tid]["seconds"] if tid in c["threads"] else 0.0
    use.setdefault(gw, []).append(100 * secs / c["span"] / 20 * 100)
print("2 workers, 1 session, percent of each worker's budget:", {g: [round(u) for u in v] for g, v in use.items()})
assert sorted(use) == ["gregw gwa", "gregw gwb"] and all(len(v) == 2 for v in use.values()), use
assert all(sorted(v)[0] < 10 for v in use.values()), use
assert max(max(v) for v in use.values()) >= 50, use
# Last, as it needs a machine that nothing else keeps busy (the run flags one that is).
run = next(r for r in s["runs"] if r["key"] == "gregw-gre-w1-mtu0-push-s1")
assert run["verdict"] == "gateway", (run["verdict"], run["verdict_reason"], run["foreign_words"])
PY
expect_match "headline: gateway-bound, at the budget" "$out" "gregw gre 1w, 1 session: [0-9.]+ Gbit/s, .*; gateway-bound: gregw gw[ab] worker 0 at [0-9]+% of its 20% budget on cpu[0-9]+"

# A run killed (SIGKILL) while its budgets are given leaves them; tunbed down removes them.
"$TUNBED" ras --sessions 1 --workers 1 --repeats 3 --time 5 --warmup 0 --no-rr --gateway-cpu 20 --prefix "$P" --results "$TMP/killed" >"$TMP/kill.out" 2>"$TMP/kill.err" &
rpid=$!
budgeted() { [ -n "$(find /sys/fs/cgroup -maxdepth 3 -path "*/tunbed-$P/t*" 2>/dev/null)" ]; }
poll 60 budgeted || fail "no budget was given"
kill -KILL "$rpid"
wait "$rpid" 2>/dev/null || true
[ -n "$(cgroups_left)" ] || fail "the killed run left no cgroup (the test shows nothing)"
# Its point's topology file, under /run/tunbed by its prefix (not /tmp/tunbed-run-*); its
# namespaces' undo directories may or may not exist at that moment (removed below either way).
[ -n "$(find /run/tunbed/topo -maxdepth 1 -name "$P-*")" ] || fail "the killed run left no topology directory (the test shows nothing)"
# What the killed run left running in its namespaces (gregw at least): tunbed down ends it.
# (Whether any is left depends on where the run was when it was killed: gregw's own
# watchdog may have ended it with the runner.)
left=$(for r in client gwa gwb server; do ip netns pids "$P-$r"; done | sort -u | tr '\n' ' ')
out=$("$TUNBED" down --prefix "$P" 2>&1) || fail "tunbed down failed: $out"
expect_match "tunbed down says what it removed" "$out" "removed cgroup /sys/fs/cgroup/[a-z]+/tunbed-$P"
if [ -n "$left" ]; then
	expect_match "tunbed down says what it ended" "$out" "ended [0-9]+ processes a killed run left in the namespaces of $P"
else
	log "the killed run left no process in its namespaces"
fi
# Ended: gone, or a zombie that init has yet to reap (its exit is done; the reaping is init's).
ended() { [ ! -e "/proc/$1/stat" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
for pid in $left; do
	poll 30 ended "$pid" || fail "process $pid of the killed run still runs after tunbed down"
done
expect_eq "no state directory of the killed run left after tunbed down" \
	"$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name "tunbed-$P-*"; find /run/tunbed/topo /run/tunbed/netns -maxdepth 1 -name "$P-*")" ""
expect_eq "no cgroup left after SIGKILL and tunbed down" "$(cgroups_left)" ""
expect_nothing_left "$P" "after SIGKILL and tunbed down"
