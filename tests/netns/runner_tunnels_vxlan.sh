#!/bin/bash
# tunbed tunnels with the kernel's VXLAN, a device a tunnel (docs/tunnels.md): counts 1, 10 and
# 100 with 16 sessions for a second each after a second of warm-up, and 16384, which a setup
# limit of 2 s leaves out (the probe's estimate: 16 s at 0.5 ms a tunnel a side on an idle
# 2-CPU VM, 90 s at 2.8 ms on a busy one; 100 tunnels would need 10 ms a tunnel to be left out
# too): it is named as not run, and the run goes on. From each record: every side set up by its ip -batch (its seconds and the
# kernel's memory recorded), the sessions round-robin over the tunnels' sites, every tunnel with
# sessions carried bytes on its devices on both gateways (nothing taken out of a tunnel that
# was not put in, what was put in and not taken out no more than the drops counted, gwb's bytes
# cover the server's), tunnels without sessions silent. The report names vxlan in every
# headline and says how far it went; `tunbed report` rebuilds the same summary.json. Bad
# input: one line, exit status 2, nothing started. Nothing left: no device, no namespace.
#
#  P-client 198.18.64.i --lan-a-- P-gwa [vxt0000i, VNI i+1] ==N VNIs== [vxt0000i] P-gwb --lan-b-- P-server 198.18.128.i
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbtvx
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

expect_refusal "a gateway named twice" 2 "^tunbed: --gateway: vxlan given twice in gateways$" \
	"$TUNBED" tunnels --gateway vxlan,vxlan --prefix "$P" --results "$R"
expect_refusal "churn of vxlan" 2 "^tunbed: --churn: gregw's alone" \
	"$TUNBED" tunnels --gateway vxlan --churn 10 --prefix "$P" --results "$R"
expect_refusal "a setup limit of 0" 2 "^tunbed: --setup-limit: '0' is not 1 to 3600 seconds$" \
	"$TUNBED" tunnels --gateway vxlan --setup-limit 0 --prefix "$P" --results "$R"
[ ! -e "$R" ] || fail "a refusal made $R"

out=$("$TUNBED" tunnels --gateway vxlan --tunnels-counts 1,10,100,16384 --setup-limit 2 \
	--sessions 16 --time 1 --warmup 1 --repeats 1 --prefix "$P" --results "$R" \
	2>"$TMP/tunnels.err") || die "tunbed tunnels failed: $(tail -3 "$TMP/tunnels.err")"
grep -q "^tunbed: vxlan 16384 tunnels not run: setup of 16384 vxlan tunnels would take ~[0-9]* s on both gateways" "$TMP/tunnels.err" ||
	fail "no line on the count not run: $(cat "$TMP/tunnels.err")"
dir=$(find "$R" -maxdepth 1 -name '*-tunnels' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "the headline, a line a count" "$out" "^vxlan 1 tunnel, 16 sessions: [0-9.]+ Gbit/s, Jain across tunnels 1\.000, setup [0-9.]+ s, (kernel -?[0-9.]+ MiB, )?counters match"$'\n'"vxlan 10 tunnels, .*counters match"$'\n'"vxlan 100 tunnels, .*counters match"$'\n'"report: "
python3 -B - "$dir" "$TUNBED_SRC/tests/netns" <<'PY' || fail "the vxlan tunnels run's records"
import json, os, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from tunnels_records import check_point  # noqa: E402
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["kind"], meta["format"], meta["complete"], meta["gateways"]) == ("tunnels", 3, True, ["vxlan"]), meta
assert meta["counts"] == [1, 10, 100, 16384], meta["counts"]
assert [(x["gateway"], x["tunnels"]) for x in meta["not_run"]] == [("vxlan", 16384)], meta["not_run"]
assert not meta["failed"], meta["failed"]
for n in (1, 10, 100):
    rec = json.load(open(os.path.join(d, "runs", f"vxlan-n{n}-s16-r1.json")))
    assert (rec["kind"], rec["format"], rec["point"]["tunnels"], rec["point"]["gateway"]) == ("tunnels", 3, n, "vxlan"), rec["point"]
    assert rec["gateway_info"]["dev"] == "vxt00000", rec["gateway_info"]
    for role in ("gwa", "gwb"):
        s = rec["setup"][role]
        assert 0 < s["ready_s"] < 30 and "kernel_kib" in s and "rss_kib" not in s, (n, role, s)
    check_point(rec, n, 16)
s = json.load(open(os.path.join(d, "summary.json")))
for p in s["summary"].values():
    assert p["gateway"] == "vxlan" and p["counters_ok"] and not p["problems"], p
    assert 0 < p["tunnel_jain"]["median"] <= 1 and p["box_cpu_s_per_gb"]["median"] > 0, p
(h,) = s["how_far"]
assert (h["gateway"], h["largest_count"]) == ("vxlan", 100) and h["setup_gwa_s"]["median"] > 0, h
assert len(h["beyond"]) == 1 and h["beyond"][0].startswith("16384 tunnels not run: setup of 16384 vxlan tunnels would take"), h
report = open(os.path.join(d, "report.md")).read()
assert "- 100 tunnels: t00000 to t00015 (16 of 100), 1 session each\n" in report, report
assert "## How far each gateway goes" in report and "| vxlan | 100 |" in report, report
assert "kernel gwa MiB" in report, report
PY
expect_report_rebuilds "$dir" "$out"
expect_nothing_left "$P" "after tunbed tunnels --gateway vxlan"
