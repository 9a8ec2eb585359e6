#!/bin/bash
# The README's main command as it stands: tunbed ras (the kernel-forwarding demo) builds
# ras.topo, measures across it, writes its report and takes everything down.
#
#  P-client 198.18.1.2 --lan-a-- P-gwa ==transit== P-gwb --lan-b-- 198.18.3.2 P-server
#  (iperf3 client in P-client, server in P-server; CPU sampled from /proc/stat at 4 Hz)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbdemo

out=$("$TUNBED_SRC/scripts/tunbed" ras --time 2 --prefix "$P" --results "$TMP/results" 2>&1) ||
	die "tunbed ras failed: $out"
expect_match "prints the headline" "$out" "1 session, kernel forwarding over ras.topo: [0-9.]+ Gbit/s \\(receiver\\)"
expect_match "prints per-core CPU" "$out" "per core: cpu0 [0-9]+%"
report=$(find "$TMP/results" -name report.md)
[ -n "$report" ] || die "no report.md written"
dir=$(dirname "$report")
result=$(cat "$dir/result.json")
bps=$(json_get "$result" 'd["transfer"]["receiver_bits_per_second"]')
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$bps" || fail "throughput $bps is not positive"
expect_eq "bytes received match the rate" "$(json_get "$result" 'abs(d["transfer"]["receiver_bytes"]*8/d["transfer"]["seconds"] - d["transfer"]["receiver_bits_per_second"]) / d["transfer"]["receiver_bits_per_second"] < 0.05')" "True"
expect_eq "CPU samples at 4 Hz over 3 s" "$(json_get "$result" 'd["transfer"]["cpu_samples"] >= 8')" "True"
expect_eq "every core accounted" "$(json_get "$result" 'len(d["transfer"]["cpu_per_core"])')" "$(nproc)"
expect_eq "topology recorded" "$(json_get "$result" 'd["topology"]["prefix"]')" "$P"
grep -q "^| cpu | busy %" "$report" || fail "report has no per-core table"
expect_nothing_left "$P" "after tunbed ras"

expect_refusal "bad --time" 2 "bad value '0' for --time" "$TUNBED_SRC/scripts/tunbed" ras --time 0 --prefix "$P"
