#!/bin/bash
# tunbed tunnels with wireguard-go, a peer a tunnel (docs/tunnels.md): counts 1 and 10 with 4
# sessions for a second each after a second of warm-up (with 16, in a fresh CI run, a session
# through the one tunnel was still in TCP's retransmission backoff 5 s after its end, when
# tunbed-traffic gives up on it: wireguard-go's socket drops that much on a busy 2-CPU machine,
# as ovs-vswitchd's does in runner_tunnels_ovs). gwa runs one wireguard-go device with a
# peer a tunnel, gwb a wireguard-go process and device a tunnel (WireGuard picks a peer by its
# key). From each record: both sides set up (their seconds and resident sets, gwb's the sum of
# its processes'), every process watched by the sampler, the sessions round-robin over the
# tunnels' sites, every tunnel with sessions carried bytes both ways (wg's counts a peer:
# neither side took out more than the other put in, gwb's bytes cover the server's), tunnels
# without sessions silent. The report names wireguard-go in every headline and says how far
# it went; `tunbed report` rebuilds the same summary.json. A count above its limit (100): one
# line, exit status 2, nothing started. Nothing left.
#
#  P-client 198.18.64.i --lan-a-- P-gwa [tbwg0: N peers] ==N key pairs== [wgt0000i: 1 peer, N of them] P-gwb --lan-b-- P-server 198.18.128.i
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbtwg
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

expect_refusal "a count above wireguard-go's limit" 2 "^tunbed: --tunnels-counts: '101' is more than wireguard-go's 100 tunnels" \
	"$TUNBED" tunnels --gateway wireguard-go --tunnels-counts 1,101 --prefix "$P" --results "$R"
[ ! -e "$R" ] || fail "a refusal made $R"

out=$("$TUNBED" tunnels --gateway wireguard-go --tunnels-counts 1,10 --sessions 4 --time 1 \
	--warmup 1 --repeats 1 --prefix "$P" --results "$R" 2>"$TMP/tunnels.err") ||
	die "tunbed tunnels failed: $(tail -3 "$TMP/tunnels.err")"
dir=$(find "$R" -maxdepth 1 -name '*-tunnels' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "the headline, a line a count" "$out" "^wireguard-go 1 tunnel, 4 sessions: [0-9.]+ Gbit/s, Jain across tunnels 1\.000, setup [0-9.]+ s, RSS [0-9.]+ MiB, counters match"$'\n'"wireguard-go 10 tunnels, .*counters match"$'\n'"report: "
python3 -B - "$dir" "$TUNBED_SRC/tests/netns" <<'PY' || fail "the wireguard-go tunnels run's records"
import json, os, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from tunnels_records import check_point  # noqa: E402
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["kind"], meta["format"], meta["complete"], meta["gateways"]) == ("tunnels", 3, True, ["wireguard-go"]), meta
for n in (1, 10):
    rec = json.load(open(os.path.join(d, "runs", f"wireguard-go-n{n}-s4-r1.json")))
    assert rec["point"]["gateway"] == "wireguard-go" and rec["gateway_info"]["dev"] == "tbwg0", (rec["point"], rec["gateway_info"])
    for role in ("gwa", "gwb"):
        s = rec["setup"][role]
        assert 0 < s["ready_s"] < 30 and s["rss_kib"] > 0, (n, role, s)
    # One process on gwa, one a tunnel on gwb, each watched.
    procs = [label for h in rec["hosts"] for label in h["processes"].values()]
    assert (procs.count("wireguard-go gwa"), procs.count("wireguard-go gwb")) == (1, n), procs
    check_point(rec, n, 4, packets=False)  # WireGuard counts bytes, not packets
s = json.load(open(os.path.join(d, "summary.json")))
for p in s["summary"].values():
    assert p["gateway"] == "wireguard-go" and p["counters_ok"] and not p["problems"], p
    assert p["gateway_cpu_s_per_gb"]["median"] > 0, p
(h,) = s["how_far"]
assert (h["gateway"], h["largest_count"], h["beyond"]) == ("wireguard-go", 10, []), h
PY
expect_report_rebuilds "$dir" "$out"
expect_nothing_left "$P" "after tunbed tunnels --gateway wireguard-go"
