#!/bin/bash
# tunbed tunnels end to end on the tunnels bed (docs/tunnels.md): counts 1, 10 and 100 with 16
# sessions for a second each, after a second of warm-up (a session whose SYN was lost connects
# after TCP's 1 s retransmission, and moves nothing in a window that ended by then). From each record: gregw came up with that many tunnels (its
# setup time and memory recorded), the sessions went round-robin over the tunnels' sites
# (session i on tunnel i mod N), every tunnel with sessions carried bytes, and gregw's
# per-tunnel counters match across the two gateways (nothing taken out of a tunnel that was
# not put in; what was put in and not taken out no more than what was counted as dropped) and
# cover the bytes the server received on the tunnel's sessions; tunnels without sessions
# carried nothing; Jain's index across
# tunnels and across sessions present. The report names which tunnels carried sessions, and
# `tunbed report` rebuilds the same summary.json. Bad input: one line, exit status 2, nothing
# started. Nothing left.
#
#  P-client 198.18.64.i --lan-a-- P-gwa [gregw --tunnels] ==N keys== [gregw --tunnels] P-gwb --lan-b-- P-server 198.18.128.i
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbtun
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

expect_refusal "a count of 0" 2 "^tunbed: --tunnels-counts: '0' is not 1 to 16384$" \
	"$TUNBED" tunnels --tunnels-counts 1,0 --prefix "$P" --results "$R"
expect_refusal "a count over 16384" 2 "^tunbed: --tunnels-counts: '16385' is not 1 to 16384$" \
	"$TUNBED" tunnels --tunnels-counts 16385 --prefix "$P" --results "$R"
expect_refusal "0 sessions" 2 "^tunbed: --sessions: '0' is not 1 to 10000$" \
	"$TUNBED" tunnels --sessions 0 --prefix "$P" --results "$R"
expect_refusal "a gateway of no tunnels" 2 "^tunbed: --gateway: unknown gateway 'route': expected one of gregw, vxlan, wireguard-go, ovs-gre$" \
	"$TUNBED" tunnels --gateway route --prefix "$P" --results "$R"
expect_refusal "an unknown gateway" 2 "^tunbed: --gateway: unknown gateway 'nope': expected one of gregw, vxlan, wireguard-go, ovs-gre$" \
	"$TUNBED" tunnels --gateway nope --prefix "$P" --results "$R"
[ ! -e "$R" ] || fail "a refusal made $R"

out=$("$TUNBED" tunnels --tunnels-counts 1,10,100 --sessions 16 --time 1 --warmup 1 --repeats 1 \
	--prefix "$P" --results "$R" 2>"$TMP/tunnels.err") || die "tunbed tunnels failed: $(tail -3 "$TMP/tunnels.err")"
dir=$(find "$R" -maxdepth 1 -name '*-tunnels' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "the headline, a line a count" "$out" "^gregw 1 tunnel, 16 sessions: [0-9.]+ Gbit/s, Jain across tunnels 1\.000, setup [0-9.]+ s, RSS [0-9.]+ MiB, counters match"$'\n'"gregw 10 tunnels, .*counters match"$'\n'"gregw 100 tunnels, .*counters match"$'\n'"report: "
python3 -B - "$dir" "$TUNBED_SRC/tests/netns" <<'PY' || fail "the tunnels run's records"
import json, os, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from tunnels_records import check_point  # noqa: E402
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["kind"], meta["format"], meta["complete"], meta["counts"]) == ("tunnels", 3, True, [1, 10, 100]), meta
for n in (1, 10, 100):
    rec = json.load(open(os.path.join(d, "runs", f"gregw-gre-w2-n{n}-s16-r1.json")))
    assert (rec["kind"], rec["format"], rec["point"]["tunnels"]) == ("tunnels", 3, n), rec["point"]
    for role in ("gwa", "gwb"):
        assert rec["gateway"][role]["tunnels"]["count"] == n, (n, role)
        s = rec["setup"][role]
        assert 0 < s["ready_s"] < 30 and s["rss_kib"] > 0, (n, role, s)
    check_point(rec, n, 16)
s = json.load(open(os.path.join(d, "summary.json")))
for p in s["summary"].values():
    assert p["counters_ok"] and not p["problems"], p
    assert 0 < p["tunnel_jain"]["median"] <= 1 and 0 < p["jain"]["median"] <= 1, p
    assert p["box_cpu_s_per_gb"]["median"] > 0 and p["gateway_cpu_s_per_gb"]["median"] > 0, p
report = open(os.path.join(d, "report.md")).read()
assert "- 100 tunnels: t00000 to t00015 (16 of 100), 1 session each\n" in report, report
assert "- 10 tunnels: all 10, 1 to 2 sessions each" in report, report
PY
expect_report_rebuilds "$dir" "$out"
expect_nothing_left "$P" "after tunbed tunnels"
