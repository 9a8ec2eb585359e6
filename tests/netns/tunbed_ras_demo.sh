#!/bin/bash
# The README's main command as it stands: tunbed ras (the one-session demo) builds ras.topo,
# measures one TCP session across it with kernel forwarding and then through the gregw pair,
# writes its report and takes everything down.
#
#  P-client 198.18.1.2 --lan-a-- P-gwa [gregw] ==transit== [gregw] P-gwb --lan-b-- 198.18.3.2 P-server
#  (iperf3 client in P-client, server in P-server; CPU sampled from /proc/stat at 4 Hz)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbdemo

out=$("$TUNBED_SRC/scripts/tunbed" ras --time 2 --prefix "$P" --results "$TMP/results" 2>&1) ||
	die "tunbed ras failed: $out"
expect_match "prints the kernel forwarding headline" "$out" "kernel forwarding, 1 session: [0-9.]+ Gbit/s \\(receiver\\)"
expect_match "prints the gregw headline with its workers" "$out" "gregw GRE pair, 1 session: [0-9.]+ Gbit/s \\(receiver\\).*per core cpu0 [0-9]+%.*gregw workers gwa#[0-9] on cpu[0-9]"
report=$(find "$TMP/results" -name report.md)
[ -n "$report" ] || die "no report.md written"
dir=$(dirname "$report")
result=$(cat "$dir/result.json")
expect_eq "two points: route and gregw" "$(json_get "$result" '[p["gateway"] for p in d["points"]]')" "['route', 'gregw']"
expect_eq "throughput positive" "$(json_get "$result" 'all(p["transfer"]["receiver_bits_per_second"] > 0 for p in d["points"])')" "True"
expect_eq "bytes received match the rate" "$(json_get "$result" 'all(abs(t["receiver_bytes"]*8/t["seconds"] - t["receiver_bits_per_second"]) / t["receiver_bits_per_second"] < 0.05 for t in (p["transfer"] for p in d["points"]))')" "True"
expect_eq "CPU samples at 4 Hz over 3 s" "$(json_get "$result" 'all(p["transfer"]["cpu_samples"] >= 8 for p in d["points"])')" "True"
expect_eq "every core accounted" "$(json_get "$result" 'len(d["points"][1]["transfer"]["cpu_per_core"])')" "$(nproc)"
expect_eq "gregw carried the session and dropped nothing" "$(json_get "$result" 'sum(w["tun_tx_packets"] for w in d["points"][1]["gregw"]["gwb"]["workers"]) > 1000 and d["points"][1]["gregw"]["gwb"]["dropped"] == 0')" "True"
expect_eq "topology recorded" "$(json_get "$result" 'd["points"][1]["topology"]["prefix"]')" "$P"
grep -q "^| cpu | busy %" "$report" || fail "report has no per-core table"
expect_nothing_left "$P" "after tunbed ras"

expect_refusal "bad --time" 2 "bad value '0' for --time" "$TUNBED_SRC/scripts/tunbed" ras --time 0 --prefix "$P"
