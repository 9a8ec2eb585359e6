#!/bin/bash
# What gregw puts on the wire, seen by an independent decoder, and what it does with what
# others put there: tshark decodes every frame on transit as GRE with key 7, a sequence
# number and a good checksum around an IPv4 packet; then malformed and spoofed GRE injected
# on transit during a verified transfer is counted exactly under its reason, and the
# transfer is unharmed. Then the outer header's DSCP, ECN and TTL against the inner packet's,
# audited by tunbed-wire: what gregw sends today around traffic marked DSCP 46 and ECT(0)
# (outer DSCP 0, Not-ECT, TTL 64: flagged frame for frame), and crafted frames of every
# violation kind (and a CE mark on the way, which is none).
#
#  P-client --lan-a-- P-gwa [gregw] ==transit (capture; gre_inject.py from P-gwa)== [gregw] P-gwb --lan-b-- P-server
#                               [tunbed-wire on transit]
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbwire
MB=$((1 << 20))
command -v tshark >/dev/null || die "tshark is not installed (scripts/bootstrap installs it)"

"$TOPO" up ras --prefix "$P" >/dev/null
gw_transit_datagrams "$P"
gw_pair4 "$P" --key 7 --seq --csum --workers 2
# The injected packets' inner UDP goes to 198.18.3.77, which nobody holds: dropped at gwb
# without a word. (Through lan-b, the failed ARP would send ICMP host-unreachable errors back
# through the tunnel seconds later, with the DSCP the kernel gives ICMP (CS6), into the
# audit of part 3.)
ip -n "$P-gwb" route add blackhole 198.18.3.77/32

# 1. A clean transfer, captured on gwb's transit, decoded by tshark. dumpcap stops by itself
# at 3000 frames, which the transfer's first few MB bring; the last of them may wait in the
# kernel for its ring block's timeout, so its exit may come a moment after the transfer's.
ip netns exec "$P-gwb" dumpcap -q -i transit -f "$GW_CAPTURE_FILTER" -c 3000 -w "$TMP/gre.pcapng" 2>"$TMP/dumpcap.err" &
DUMPCAP=$!
poll 30 grep -q "Capturing on" "$TMP/dumpcap.err" || die "dumpcap did not start: $(cat "$TMP/dumpcap.err")"
bulk_transfer "$P" 198.18.3.2 2 $((20 * MB))
wait_bg "$DUMPCAP" 30 "dumpcap on transit waiting for 3000 frames"
[ "$BG_STATUS" = 0 ] || fail "dumpcap failed (status $BG_STATUS): $(cat "$TMP/dumpcap.err")"
tshark "${GW_TSHARK_ARGS[@]}" -r "$TMP/gre.pcapng" -T fields -E separator=/t \
	-e gre.key -e gre.sequence_number -e gre.checksum.status -e gre.proto -e ip.version \
	>"$TMP/gre.fields" 2>/dev/null
frames=$(wc -l <"$TMP/gre.fields")
expect_eq "tshark read the capture" "$frames" "3000"
summary=$(python3 - "$TMP/gre.fields" <<'PY'
import sys
ok = bad = 0
for line in open(sys.argv[1]):
    key, seq, csum, proto, ver = line.rstrip("\n").split("\t")
    if key == "0x00000007" and seq.isdigit() and csum == "1" and proto == "0x0800" and ver == "4,4":
        ok += 1
    else:
        bad += 1
        if bad <= 3:
            print("unexpected:", line.strip(), file=sys.stderr)
print(ok, bad)
PY
)
expect_eq "every frame: GRE key 7, a sequence number, a good checksum, IPv4 in IPv4" "$summary" "$frames 0"

# 2. Injection during a transfer: each defect 50 times, counted exactly.
before=$(gw_stats gwb)
kinds=(unknown_peer bad_version bad_flags bad_key no_seq no_csum bad_csum bad_proto bad_inner truncated)
# (Files of its own: bulk_transfer's server said "listening" too; see bulk_transfer.)
ip netns exec "$P-server" python3 "$HERE/bulk.py" server --bind 198.18.3.2 --port 9000 --flows 2 >"$TMP/inject-server.out" 2>&1 &
spid=$!
poll 30 grep -q listening "$TMP/inject-server.out" || die "bulk server for the injection did not say it listens: $(cat "$TMP/inject-server.out")"
ip netns exec "$P-client" python3 "$HERE/bulk.py" client --connect 198.18.3.2 --port 9000 --flows 2 --bytes $((100 * MB)) >"$TMP/inject-client.out" &
cpid=$!
for k in "${kinds[@]}"; do
	ip netns exec "$P-gwa" python3 "$HERE/gre_inject.py" --src 198.18.0.1 --dst 198.18.0.2 \
		--key 7 --seq --csum "${GW_INJECT_ARGS[@]}" --kind "$k" --count 50 || fail "injecting $k"
done
# Well-formed GRE from the peer's address is accepted: its UDP goes nowhere, harmlessly.
ip netns exec "$P-gwa" python3 "$HERE/gre_inject.py" --src 198.18.0.1 --dst 198.18.0.2 \
	--key 7 --seq --csum "${GW_INJECT_ARGS[@]}" --kind good --count 50 || fail "injecting good packets"
wait "$cpid" || fail "bulk client failed during injection"
wait "$spid" || fail "bulk server failed during injection"
expect_eq "transfer during injection: hashes equal" "$(tail -1 "$TMP/inject-client.out")" "$(tail -1 "$TMP/inject-server.out")"
# The ring (the socket over GRE-in-UDP) is read asynchronously: wait until gwb has dealt
# with all it received (each packet either into TUN or dropped) and 500 drops at least are
# among them; the exact counts are checked below.
poll 30 gw_true gwb 'd["total"]["dropped"] >= 500 and d["total"]["tun_tx_packets"] + d["total"]["dropped"] == d["total"]["wire_rx_packets"]' ||
	fail "gwb did not account for the 500 injected defects and everything else it received within 30 s"
after=$(gw_stats gwb)
for k in "${kinds[@]}"; do
	expect_eq "gwb counted $k" "$(json_get "$after" "d['total']['drops']['$k']") - $(json_get "$before" "d['total']['drops']['$k']")" "50 - 0"
done
expect_eq "gwb: nothing else dropped" "$(json_get "$after" 'd["total"]["dropped"]')" "500"
expect_eq "gwb: every packet not dropped went into TUN, the 50 good injected ones too" "$(json_get "$after" 'd["total"]["tun_tx_packets"] - d["total"]["wire_rx_packets"] + d["total"]["dropped"]')" "0"

# 3. DSCP, ECN and TTL across gregw, as tunbed-wire sees them on gwa's transit (docs/gregw.md,
# "DSCP, ECN and TTL across the tunnel"): gregw runs with its defaults, --tos inherit and
# --ttl 64, so each datagram of a UDP session marked DSCP 46 and ECT(0) leaves in an outer
# header of DSCP 46 and ECT(0) (RFC 2983, RFC 6040 normal mode) and TTL 64, and none is
# flagged. With them, crafted frames from gwa, 20 of each: well made (DSCP 46, ECT(0) inside
# and out), ECT(0) in Not-ECT, CE in ECT(0) (RFC 3168's reset), Not-ECT in ECT(1), ECT(1) in CE
# (a mark on the way: no violation), DSCP 46 in 0, outer TTL 63: each flagged as its kind; and
# CE in Not-ECT (an ecn_mismatch too: no encapsulator makes ECT outside Not-ECT). What gwb makes of them (RFC 6040, 4.2), as a capture on its gre0 sees the inner
# packets: the outer CE reaches the ECT(1) packet (CE), CE and ECT(0) inside stay, Not-ECT inside
# ECT(1) is delivered and counted (ecn_alarms), CE outside Not-ECT is dropped (ecn_ce_not_ect).
WIRE="$TUNBED_BIN/tunbed-wire"
[ -x "$WIRE" ] || die "$WIRE not built"
tr_server "$P-server" 9400
rm -f "$TMP/tos.ready"
ip netns exec "$P-gwa" "$WIRE" --iface transit --json --ready-file "$TMP/tos.ready" \
	--local 198.18.0.1 --remote 198.18.0.2 --key 7 --seq --csum --expect-tos inherit \
	--expect-ttl 64 >"$TMP/tos.json" 2>"$TMP/tos.err" &
wpid=$!
poll 30 grep -qx ready "$TMP/tos.ready" || die "tunbed-wire did not start: $(cat "$TMP/tos.err")"
before=$(gw_stats gwb)
ip netns exec "$P-gwb" tcpdump -i gre0 -n -v -c 140 -U 'dst 198.18.3.77' >"$TMP/decap.txt" 2>"$TMP/decap.err" &
cap=$!
poll 30 grep -q "listening on" "$TMP/decap.err" || die "tcpdump on gwb's gre0 did not start: $(cat "$TMP/decap.err")"
tr_client "$P-client" 198.18.3.2 --udp --pps 100 --time 1 --dscp 46 --ecn ect0 --json
expect_eq "marked UDP through the tunnel: exit status, nothing lost" "$TR_STATUS $(json_get "$TR_JSON" 'd["udp"]["lost"]')" "0 0"
marked=$(json_get "$TR_JSON" 'd["udp"]["sent"]')
for crafted in "good 0xba 0xba 64" "not_copied 0xb8 0xba 64" "ce_reset 0xba 0xbb 64" \
	"mismatch 0xb9 0xb8 64" "path_ce 0xbb 0xb9 64" "dscp 0x00 0xb8 64" "ttl 0xb8 0xb8 63" \
	"ce_not_ect 0xbb 0xb8 64"; do
	read -r what otos itos ottl <<<"$crafted"
	ip netns exec "$P-gwa" python3 "$HERE/gre_inject.py" --src 198.18.0.1 --dst 198.18.0.2 \
		--key 7 --seq --csum "${GW_INJECT_ARGS[@]}" --kind good --count 20 \
		--outer-tos "$otos" --inner-tos "$itos" --outer-ttl "$ottl" || fail "injecting $what"
done
# gwb has taken the 160 (well-formed: into its TUN, but 20) and everything else it received.
poll 30 gw_true gwb "d['total']['wire_rx_packets'] - $(json_get "$before" 'd["total"]["wire_rx_packets"]') >= $marked + 160 and d['total']['tun_tx_packets'] + d['total']['dropped'] == d['total']['wire_rx_packets']" ||
	fail "gwb did not take the $marked datagrams and the 160 crafted frames within 30 s"
wait_bg "$cap" 30 "tcpdump on gwb's gre0 waiting for the 140 crafted packets delivered"
after=$(gw_stats gwb)
expect_eq "gwb: CE outside Not-ECT dropped, Not-ECT inside ECT(1) counted" \
	"$(json_get "$after" 'd["total"]["drops"]["ecn_ce_not_ect"]') - $(json_get "$before" 'd["total"]["drops"]["ecn_ce_not_ect"]'), $(json_get "$after" 'd["total"]["ecn_alarms"]') - $(json_get "$before" 'd["total"]["ecn_alarms"]')" "20 - 0, 20 - 0"
expect_eq "gwb delivered into gre0, by inner DS field: the path's CE on ECT(1) kept" \
	"$(grep -o 'tos 0x[0-9a-f]*' "$TMP/decap.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" " 60 tos 0xb8; 40 tos 0xba; 40 tos 0xbb;"
stop_bg "$wpid" TERM tunbed-wire
expect_eq "tunbed-wire exit status after SIGTERM" "$BG_STATUS" "0"
W=$(cat "$TMP/tos.json")
log "tos: $(json_get "$W" '({k: v["count"] for k, v in d["violations"].items() if v["count"]}, d["directions"][0]["tos"])')"
expect_eq "gregw's marked datagrams: none flagged; the crafted frames each of its kind" \
	"$(json_get "$W" 'sorted((k, v["count"]) for k, v in d["violations"].items() if v["count"])')" \
	"[('bad_dscp', 20), ('bad_ttl', 20), ('ecn_ce_reset', 20), ('ecn_mismatch', 40), ('ecn_not_copied', 20)]"
expect_eq "frames flagged: 120 crafted" "$(json_get "$W" 'd["violation_frames"]')" "120"
expect_eq "what crossed gwa -> gwb, inner>outer: the marked datagrams ECT(0) in ECT(0), DSCP copied" \
	"$(json_get "$W" '(lambda t: (t["ecn"]["ect0"]["not-ect"], t["ecn"]["ect0"]["ect0"], t["ecn"]["ce"]["ect0"], t["ecn"]["not-ect"]["ect1"], t["ecn"]["ect1"]["ce"], t["dscp_marked"], t["dscp_copied"]))(d["directions"][0]["tos"])')" \
	"(20, $((marked + 20)), 20, 20, 20, $((marked + 160)), $((marked + 140)))"
tr_stop

gw_stop gwa
gw_stop gwb
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
