#!/bin/bash
# Frames of the MTU on the wire (docs/runner.md, vxlan-frames and gregw's +frames): with the
# transit devices' tunnel segmentation off, what gwb's transit device receives averages at most
# one frame of the link's MTU (its rx_bytes over rx_packets, read while the point runs), where
# the same gateway without it receives superpackets (more than one frame each, on average);
# gregw keeps the TAP for plain GRE (the kernel cuts in software) and says why GRE-in-UDP goes
# frame by frame. Nothing left.
#
#  P-client --lan-a-- P-gwa ==transit== P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbfrm
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

# rx_bytes and rx_packets of gwb's transit device, the last read while the namespace lived.
sample() {
	while [ ! -e "$TMP/stop" ]; do
		ip -n "$P-gwb" -s -j link show transit 2>/dev/null |
			python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]["rx"]; print(s["bytes"], s["packets"])' \
				>"$TMP/rx.new" 2>/dev/null && [ -s "$TMP/rx.new" ] && mv "$TMP/rx.new" "$TMP/rx"
		sleep 0.1
	done
}

# run NAME GATEWAY [MODE]: one point of 3 s; prints the bytes per packet gwb's transit received.
run() {
	local name=$1 gw=$2 mode=${3:-} sampler
	rm -f "$TMP/stop" "$TMP/rx"
	sample &
	sampler=$!
	"$TUNBED" compare --gateways "$gw" ${mode:+--modes "$mode"} --sessions 1 --workers 1 \
		--repeats 1 --time 3 --warmup 0 --no-rr --prefix "$P" --results "$R/$name" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" || fail "$name: the run failed: $(tail -2 "$TMP/$name.err")"
	touch "$TMP/stop"
	wait "$sampler"
	[ -s "$TMP/rx" ] || die "$name: gwb's transit was never read"
	read -r bytes packets <"$TMP/rx"
	[ "$bytes" -gt 10000000 ] || fail "$name: only $bytes bytes crossed the transit"
	echo $((bytes / packets))
}

for g in "vxlan-frames vxlan-frames" "gre+frames gregw gre+frames" "gre-udp+frames gregw gre-udp+frames"; do
	read -r name gw mode <<<"$g"
	size=$(run "$name" "$gw" "$mode")
	log "$name: $size bytes a packet on gwb's transit"
	[ "$size" -le 1514 ] || fail "$name: $size bytes a packet on the transit: superpackets, not frames of the MTU"
done
# The same gateways without it put superpackets on the link: the check above can fail.
for g in "vxlan vxlan" "gre-udp gregw gre-udp"; do
	read -r name gw mode <<<"$g"
	size=$(run "$name" "$gw" "$mode")
	log "$name: $size bytes a packet on gwb's transit"
	[ "$size" -gt 1514 ] || fail "$name: $size bytes a packet on the transit: no superpacket"
done
# Plain GRE kept the TAP (the kernel cut its superpackets in software); GRE-in-UDP chose its
# per-frame path because of the device, and says so.
python3 - "$R" <<'PY' || fail "gregw's config under +frames"
import glob, json, sys
for mode in ("gre+frames", "gre-udp+frames"):
    f, = glob.glob(f"{sys.argv[1]}/{mode}/*/runs/gregw-{mode}-*.json")
    tel = json.load(open(f))["gateway"]
    for role in ("gwa", "gwb"):
        cfg = tel[role]["config"]
        if mode == "gre+frames":
            assert cfg["wire_tx"] == "tap", (mode, role, cfg["wire_tx"], cfg["wire_tx_why"])
        else:
            assert "does not segment the tunnel" in cfg["wire_tx_why"], (mode, role, cfg)
PY
expect_nothing_left "$P" "after the frames runs"
