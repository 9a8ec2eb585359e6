#!/bin/bash
# tunbed-framebench's senders and receivers on a veth pair, each pair the benchmark
# (scripts/bench/frame_paths.py) runs: the receiver takes the sender's test frames (none not
# ours, no more than went), and with --verify every checksum a sender completed is right. A
# checksum left partial in the virtio header is one the ring is told of (TP_STATUS_CSUMNOTREADY)
# and AF_XDP is not: summed there, it is wrong in every frame, which is why the benchmark's
# AF_XDP receivers get frames whose sender completed it. The receiving stack takes none of
# the frames up (the ring's tcx drop, AF_XDP's redirect). The XDP program goes with the
# receiver. Bad usage gets one line and exit status 2.
#
#  P-a: [send] fa0 (198.18.0.1/30) ==veth== fb0 (198.18.0.2/30) [recv] :P-b
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbfb
FB="$TUNBED_BIN/tunbed-framebench"
N=2000
[ -x "$FB" ] || die "$FB not built"

for h in a b; do
	ip netns add "$P-$h"
	ip netns exec "$P-$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
# No IPv6 on the pair: its router solicitations would reach an AF_XDP socket as frames not ours.
ip -n "$P-a" link add fa0 type veth peer name fb0 netns "$P-b"
ip -n "$P-a" addr add 198.18.0.1/30 dev fa0
ip -n "$P-b" addr add 198.18.0.2/30 dev fb0
ip -n "$P-a" link set fa0 up
ip -n "$P-b" link set fb0 up
MAC=$(ip netns exec "$P-b" cat /sys/class/net/fb0/address)

recv_ready() { grep -q '"ready": true' "$TMP/recv.out"; }
# What P-b's IPv4 stack received: InReceives (the second Ip: line of /proc/net/snmp).
# shellcheck disable=SC2016 # awk's fields, not the shell's
stack_took() { ip netns exec "$P-b" awk '/^Ip:/ && $2 ~ /^[0-9]+$/ { print $4 }' /proc/net/snmp; }

# pair NAME SEND_VIA CSUM RECV_VIA: N frames one way; their counts in SENT and GOT (JSON).
pair() {
	local name=$1 rpid
	ip netns exec "$P-b" "$FB" recv --dev fb0 --via "$4" --verify >"$TMP/recv.out" 2>"$TMP/recv.err" &
	rpid=$!
	poll 30 recv_ready || die "$name: the receiver never got ready: $(cat "$TMP/recv.err")"
	STACK0=$(stack_took)
	SENT=$(ip netns exec "$P-a" "$FB" send --dev fa0 --dst-mac "$MAC" --via "$2" --csum "$3" \
		--frames "$N" --seconds 60) || die "$name: the sender failed"
	stop_bg "$rpid" TERM "$name: the receiver"
	expect_eq "$name: the receiver's exit status" "$BG_STATUS" 0
	GOT=$(tail -n 1 "$TMP/recv.out")
	expect_eq "$name: the sender sent $N" "$(json_get "$SENT" 'd["frames"]')" "$N"
	expect_eq "$name: frames taken, none more than went" \
		"$(json_get "$GOT" "0 < d['frames'] and d['frames'] + d['drops'] <= $N")" True
	expect_eq "$name: every frame the sender's" "$(json_get "$GOT" 'd["not_ours"]')" 0
	# The ring's GRE is dropped at tc ingress, AF_XDP takes it before the stack: the stack of
	# P-b, whose address the frames are sent to, takes none of them up (veth delivers in the
	# sender's context: counted once the send returned).
	expect_eq "$name: P-b's IP stack took none up" "$(($(stack_took) - STACK0))" 0
}
got() { json_get "$GOT" "$1"; }

pair "mmsg, partial -> ring" mmsg partial ring
expect_eq "the ring is told of each partial checksum" "$(got 'd["partial"] == d["frames"]')" True
expect_eq "so it sums none" "$(got 'd["verified"]')" 0

pair "mmsg, full -> ring" mmsg full ring
expect_eq "complete checksums: summed, all right" "$(got 'd["verified"] == d["frames"] and d["bad_csum"] == 0 and d["partial"] == 0')" True

pair "mmsg, full -> xdp-generic" mmsg full xdp-generic
expect_eq "AF_XDP: every checksum summed, all right" "$(got 'd["verified"] == d["frames"] and d["bad_csum"] == 0')" True

pair "mmsg, partial -> xdp-generic" mmsg partial xdp-generic
expect_eq "AF_XDP is not told of a partial checksum: wrong in every frame" "$(got 'd["bad_csum"] == d["frames"] and d["partial"] == 0')" True

pair "xsk, full -> xdp" xsk full xdp
expect_eq "AF_XDP both ways (veth's XDP): checksums right" "$(got 'd["verified"] == d["frames"] and d["bad_csum"] == 0')" True

pair "xsk, full -> ring" xsk full ring
expect_eq "AF_XDP send, ring: checksums right" "$(got 'd["bad_csum"] == 0')" True

pair "txring, partial -> ring" txring partial ring
expect_eq "TX ring: the partial checksum told" "$(got 'd["partial"] == d["frames"]')" True

link=$(ip -n "$P-b" -d link show fb0)
if [[ "$link" =~ xdp ]]; then fail "an XDP program stayed on fb0 after the receiver: $link"; else log "ok: no XDP program left on fb0"; fi

expect_refusal "no subcommand" 2 "expected a subcommand" "$FB"
expect_refusal "xsk cannot leave a checksum partial" 2 "cannot leave a checksum partial" \
	"$FB" send --dev fa0 --dst-mac "$MAC" --via xsk --csum partial
expect_refusal "a bad way" 2 "bad value 'rings' for --via" "$FB" recv --dev fb0 --via rings
expect_refusal "a send option to recv" 2 "--frames is an option of send" "$FB" recv --dev fb0 --frames 3
expect_refusal "no such interface" 1 "no interface 'nosuch0'" "$FB" recv --dev nosuch0
