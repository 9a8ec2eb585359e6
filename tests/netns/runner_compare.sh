#!/bin/bash
# The runner's compare of every gateway it has a driver for, and one of the contract (the
# example), at 1 and 8 sessions, 1 s each: every gateway measured at both, the report's peer
# table with a row per gateway and session count (version, cipher, the inner MTU each
# gateway's device has, throughput, box and gateway CPU-s/GB, retransmits per GB, idle and
# loaded round trips, Jain, the saturated thread), the gateway's own CPU counted for the
# userspace gateways and none for the kernel's, the throughput and cost plots drawing every
# gateway, the results consistent with summary.json; nothing left. Timings decide nothing.
#
#  P-client --lan-a-- P-gwa [gateway] ==transit== [gateway] P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbcmp
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"
EXAMPLE="cmd:$TUNBED_SRC/scripts/drivers/vxlan-example.sh"

# gateway: inner MTU on a 1500-byte transit link, cipher, whether it has processes of its own.
declare -A WANT=(
	[gregw]="1476 none yes" [route]="1500 none no" [vxlan]="1450 none no"
	[ovs-gre]="1472 - yes" [wireguard-go]="1440 ChaCha20-Poly1305 yes"
	[openvpn-none]="1472 none yes" [openvpn]="1448 AES-256-GCM yes"
	[fastd]="1447 salsa2012+umac yes" [fastd-null]="1471 null yes" [$EXAMPLE]="1450 - no"
)
GATEWAYS="gregw,route,vxlan,ovs-gre,wireguard-go,openvpn-none,openvpn,fastd,fastd-null,$EXAMPLE"

out=$("$TUNBED" compare --gateways "$GATEWAYS" --sessions 1,8 --workers 1 --repeats 1 --time 1 \
	--warmup 0 --prefix "$P" --results "$R" 2>"$TMP/cmp.err") || die "tunbed compare failed: $(grep -v '^tunbed: \[' "$TMP/cmp.err" | tail -3)"
dir=$(sed -n 's|^report: \(.*\)/report.md$|\1|p' <<<"$out")
[ -d "$dir" ] || die "no report: $out"
IFS=, read -ra gws <<<"$GATEWAYS"
for g in "${gws[@]}"; do
	config=$g
	[ "$g" != gregw ] || config="gregw gre 1w"
	for n in "1 session" "8 sessions"; do
		line=$(grep -F -- "$config, $n: " <<<"$out" | head -1)
		expect_match "headline: $config, $n" "$line" "^$config, $n: [0-9.]+ Gbit/s"
	done
done
grep -q '^## Gateways side by side' "$dir/report.md" || fail "report.md has no peer table"
grep -q '<table id="peer-table">' "$dir/report.html" || fail "report.html has no peer table"

python3 - "$dir" "$GATEWAYS" "$(for g in "${!WANT[@]}"; do echo "$g ${WANT[$g]}"; done)" <<'PY' || fail "the peer table is not what the results say"
import json, os, re, sys
d, gateways, want = sys.argv[1], sys.argv[2].split(","), {}
for line in sys.argv[3].splitlines():
    g, mtu, cipher, own = line.split()
    want[g] = (int(mtu), cipher, own == "yes")
s = json.load(open(os.path.join(d, "summary.json")))
md = open(os.path.join(d, "report.md")).read()
section = md.split("## Gateways side by side", 1)[1].split("\n## ", 1)[0]
rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in section.splitlines()
        if ln.startswith("| ") and not ln.startswith(("| sessions", "| ---"))]
header = [c.strip() for c in section.split("\n| sessions", 1)[1].split("\n")[0].strip("|").split("|")]
header = ["sessions"] + header[1:]
assert len(rows) == 2 * len(gateways), (len(rows), rows)
# Sessions first, the run's order of the gateways within.
assert [(r[0], r[1]) for r in rows] == [(n, "gregw gre 1w" if g == "gregw" else g)
                                        for n in ("1", "8") for g in gateways], rows
col = {h: i for i, h in enumerate(header)}
for p in s["points"]:
    g, summ = p["gateway"], s["summary"][p["key"]]
    row = next(r for r in rows if r[0] == str(p["sessions"]) and r[1] == p["config"])
    mtu, cipher, own = want[g]
    info = summ["gateway_info"]
    assert info["mtu"] == mtu and row[col["inner MTU"]] == str(mtu), (g, info, row)
    assert (info.get("cipher") or "-") == cipher == row[col["cipher"]], (g, info, row)
    assert info.get("version") and row[col["version"]] == info["version"], (g, info)
    assert summ["bits_per_second"]["median"] > 0 and summ["box_cpu_s_per_gb"]["median"] > 0, g
    assert row[col["Gbit/s"]] == f"{summ['bits_per_second']['median'] / 1e9:.2f}", (g, row)
    assert (summ["gateway_cpu_s_per_gb"] is not None) == own, (g, summ["gateway_cpu_s_per_gb"])
    assert (row[col["gateway CPU-s/GB"]] != "-") == own, (g, row)
    r = summ["retransmits_per_gb"]["median"]
    assert abs(float(row[col["retransmits/GB"]]) - r) <= 0.5, (g, row, r)
    for c in ("RTT idle p50 ms", "RTT loaded p50 ms", "Jain"):
        assert re.fullmatch(r"[0-9]+\.[0-9]{3}", row[col[c]]), (g, c, row)
    sat = row[col["saturated thread"]]
    assert sat == "none" or all(re.fullmatch(r".+ \([0-9]+% of cpu[0-9]+\)|the kernel \(cpu[0-9]+\)",
                                             part) for part in sat.split("; ")), (g, sat)
# Both plots draw every gateway: matplotlib writes each legend text as a comment in the SVG.
for plot in ("throughput", "cost"):
    svg = open(os.path.join(d, "plots", plot + ".svg")).read()
    for g in gateways:
        label = "gregw gre 1w" if g == "gregw" else g
        assert f"<!-- {label} -->" in svg, (plot, label)
print("peer table consistent")
PY
expect_nothing_left "$P" "after the compare"
