#!/bin/bash
# tunbed tunnels with Open vSwitch's userspace GRE, a port a tunnel (docs/tunnels.md): counts 1
# and 10 with 4 sessions for a second each after a second of warm-up (with 16, on a busy 2-CPU
# machine, ovs-vswitchd's packet socket dropped so much that a session now and then was still
# in TCP's retransmission backoff 5 s after its end, and failed). On each gateway one
# ovsdb-server and one ovs-vswitchd (scripts/drivers/ovs-gre.sh --tunnels): one bridge with the
# tunnel device gre0 and a GRE port a tunnel (key i + 1, the other gateway its remote), the
# tunnels' prefixes routed into gre0 and OpenFlow rules picking the port by the inner
# destination. From each record: both sides set up (seconds and ovs-vswitchd's resident set),
# both daemons of each side watched by the sampler, the sessions round-robin over the tunnels'
# sites, every tunnel with sessions carried bytes on its rules on both gateways (nothing taken
# out of a tunnel that was not put in, what was put in and not taken out no more than the drops
# counted, among them ovs-vswitchd's receive buffer's, gwb's bytes cover the server's), tunnels
# without sessions silent. The report names ovs-gre in every headline and says how far it went;
# `tunbed report` rebuilds the same summary.json. Bad input: one line, exit status 2, nothing
# started. Nothing left: no daemon, run directory, device or namespace.
#
#  P-client 198.18.64.i --lan-a-- P-gwa [gre0 -> gre-t0000i, key i+1] ==N GRE ports== [gre-t0000i -> gre0] P-gwb --lan-b-- P-server 198.18.128.i
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbtovs
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

expect_refusal "a gateway named twice" 2 "^tunbed: --gateway: ovs-gre given twice in gateways$" \
	"$TUNBED" tunnels --gateway ovs-gre,gregw,ovs-gre --prefix "$P" --results "$R"
expect_refusal "churn of ovs-gre" 2 "^tunbed: --churn: gregw's alone" \
	"$TUNBED" tunnels --gateway ovs-gre --churn 10 --prefix "$P" --results "$R"
[ ! -e "$R" ] || fail "a refusal made $R"

out=$("$TUNBED" tunnels --gateway ovs-gre --tunnels-counts 1,10 --sessions 4 --time 1 \
	--warmup 1 --repeats 1 --prefix "$P" --results "$R" 2>"$TMP/tunnels.err") ||
	die "tunbed tunnels failed: $(tail -3 "$TMP/tunnels.err")"
dir=$(find "$R" -maxdepth 1 -name '*-tunnels' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "the headline, a line a count" "$out" "^ovs-gre 1 tunnel, 4 sessions: [0-9.]+ Gbit/s, Jain across tunnels 1\.000, setup [0-9.]+ s, RSS [0-9.]+ MiB, counters match"$'\n'"ovs-gre 10 tunnels, .*counters match"$'\n'"report: "
python3 -B - "$dir" "$TUNBED_SRC/tests/netns" <<'PY' || fail "the ovs-gre tunnels run's records"
import json, os, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from tunnels_records import check_point  # noqa: E402
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["kind"], meta["format"], meta["complete"], meta["gateways"]) == ("tunnels", 3, True, ["ovs-gre"]), meta
assert not meta["failed"] and not meta["not_run"], meta
for n in (1, 10):
    rec = json.load(open(os.path.join(d, "runs", f"ovs-gre-n{n}-s4-r1.json")))
    assert rec["point"]["gateway"] == "ovs-gre" and rec["gateway_info"]["dev"] == "gre0", (rec["point"], rec["gateway_info"])
    assert rec["gateway_info"]["mtu"] == 1472, rec["gateway_info"]  # 1500 - 20 - 8 (the key)
    for role in ("gwa", "gwb"):
        s = rec["setup"][role]
        assert 0 < s["ready_s"] < 30 and s["rss_kib"] > 0, (n, role, s)
    # Both daemons of each side, watched.
    procs = sorted(label for h in rec["hosts"] for label in h["processes"].values() if label.startswith("ovs"))
    assert procs == ["ovs-vswitchd gwa", "ovs-vswitchd gwb", "ovsdb-server gwa", "ovsdb-server gwb"], procs
    check_point(rec, n, 4)
s = json.load(open(os.path.join(d, "summary.json")))
for p in s["summary"].values():
    assert p["gateway"] == "ovs-gre" and p["counters_ok"] and not p["problems"], p
    assert p["gateway_cpu_s_per_gb"]["median"] > 0, p
(h,) = s["how_far"]
assert (h["gateway"], h["largest_count"], h["beyond"]) == ("ovs-gre", 10, []), h
assert h["setup_gwa_s"]["median"] > 0, h
report = open(os.path.join(d, "report.md")).read()
assert "ovs-gre: Open vSwitch's userspace datapath with a GRE port a tunnel" in report, report
assert "| ovs-gre | 10 |" in report, report
PY
expect_report_rebuilds "$dir" "$out"
expect_nothing_left "$P" "after tunbed tunnels --gateway ovs-gre"
for ns in "$P-gwa" "$P-gwb"; do
	[ ! -e "/run/tunbed-ovs/$ns" ] || fail "ovs-gre.sh left /run/tunbed-ovs/$ns"
done
if pgrep -f "/run/tunbed-ovs/$P-" >/dev/null; then
	fail "an OVS daemon of $P is still running: $(pgrep -af "/run/tunbed-ovs/$P-" | head -2)"
fi
