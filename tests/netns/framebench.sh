#!/bin/bash
# tunbed-framebench's senders and receivers on a veth pair, each pair the benchmark
# (scripts/bench/frame_paths.py) runs: the receiver takes the sender's test frames, every one
# of them and no more (none not ours), and with --verify every checksum a sender completed is
# right. A checksum left partial in the virtio header is one the ring is told of
# (TP_STATUS_CSUMNOTREADY) and AF_XDP is not: summed there, it is wrong in every frame, which
# is why the benchmark's AF_XDP receivers get frames whose sender completed it. The receiving
# stack takes none of the frames up (the ring's tcx drop, AF_XDP's redirect), and takes every
# one of them without a receiver. The XDP program goes with the receiver. Bad usage gets one
# line and exit status 2; so do a broadcast or multicast destination and an interface that is
# not a test's link (a veth or TAP outside the initial namespace), which --any-interface
# allows (issue 28, defect 19). Every wait is for what a process says or does, never for time.
#
#  P-a: [send] fa0 (198.18.0.1/30) ==veth== fb0 (198.18.0.2/30) [recv] :P-b
#       d0 (a bridge, no port)
#  initial namespace: tbfbiPID ==veth== tbfbj :P-a   (both down: refused before a frame)
# shellcheck source=framebench_lib.sh
source "$(dirname "$0")/framebench_lib.sh"
netns_test_init
new_prefix P tbfb
N=2000 # fewer than the ring's 4096 slots and AF_XDP's 4096 chunks: room for every frame
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

# pair NAME SEND_VIA CSUM RECV_VIA: N frames one way; their counts in SENT and GOT (JSON).
pair() {
	local name=$1
	recv_start "$name" "$P-b" --dev fb0 --via "$4" --verify --frames "$N"
	STACK0=$(stack_took "$P-b")
	SENT=$(ip netns exec "$P-a" "$FB" send --dev fa0 --dst-mac "$MAC" --via "$2" --csum "$3" \
		--frames "$N" --seconds "$FB_WAIT") || die "$name: the sender failed"
	recv_done "$name"
	expect_eq "$name: the receiver's exit status" "$BG_STATUS" 0
	expect_eq "$name: the sender sent $N" "$(json_get "$SENT" 'd["frames"]')" "$N"
	# It stops at N. One that counts a frame twice stops early: its last drain counts what
	# came meanwhile twice too (more than N), or the frames it left reach the stack (below).
	expect_eq "$name: every frame taken, none dropped, none more than went" \
		"$(json_get "$GOT" 'd["frames"], d["drops"]')" "($N, 0)"
	expect_eq "$name: every frame the sender's" "$(json_get "$GOT" 'd["not_ours"]')" 0
	# The ring's GRE is dropped at tc ingress, AF_XDP takes it before the stack: the stack of
	# P-b, whose address the frames are sent to, takes none of them up. Counted once the
	# receiver has them all: each went through its programs (or past them) by then.
	expect_eq "$name: P-b's IP stack took none up" "$(($(stack_took "$P-b") - STACK0))" 0
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

# What the stack check counts: without a receiver P-b's IP stack takes up every frame, and
# nothing else (one more would be a packet not the test's, taken for a frame of ours).
stack_grew() { [ "$(($(stack_took "$P-b") - STACK0))" -ge "$N" ]; }
STACK0=$(stack_took "$P-b")
SENT=$(ip netns exec "$P-a" "$FB" send --dev fa0 --dst-mac "$MAC" --frames "$N" --seconds "$FB_WAIT") ||
	die "no receiver: the sender failed"
poll "$FB_WAIT" stack_grew || true
expect_eq "no receiver: P-b's IP stack took every frame up, and nothing else" \
	"$(($(stack_took "$P-b") - STACK0))" "$N"

expect_refusal "no subcommand" 2 "expected a subcommand" "$FB"
expect_refusal "xsk cannot leave a checksum partial" 2 "cannot leave a checksum partial" \
	"$FB" send --dev fa0 --dst-mac "$MAC" --via xsk --csum partial
expect_refusal "a bad way" 2 "bad value 'rings' for --via" "$FB" recv --dev fb0 --via rings
expect_refusal "a send option to recv" 2 "--len is an option of send" "$FB" recv --dev fb0 --len 100
expect_refusal "no such interface" 1 "no interface 'nosuch0'" "$FB" recv --dev nosuch0

# Only a test's link, only to one station (issue 28, defect 19: it sent anywhere, even to
# broadcast; each of these was taken before). Every refusal before a frame goes; the
# initial namespace's veth is down, so a refusal that did not happen could send nothing.
expect_refusal "a broadcast destination" 2 "bad value 'ff:ff:ff:ff:ff:ff' for --dst-mac: a broadcast or multicast address" \
	ip netns exec "$P-a" "$FB" send --dev fa0 --dst-mac ff:ff:ff:ff:ff:ff --frames 1
expect_refusal "a multicast destination" 2 "bad value '01:00:5e:00:00:01' for --dst-mac: a broadcast or multicast address" \
	ip netns exec "$P-a" "$FB" send --dev fa0 --dst-mac 01:00:5e:00:00:01 --frames 1
ip -n "$P-a" link add d0 type bridge
ip -n "$P-a" link set d0 up
expect_refusal "a bridge, not a veth or TAP" 2 "d0 is not a veth or TAP device \\(driver bridge\\).*--any-interface allows it" \
	ip netns exec "$P-a" "$FB" send --dev d0 --dst-mac "$MAC" --frames 1
expect_refusal "the loopback, which names no driver" 2 "lo is not a veth or TAP device \\(driver none\\)" \
	ip netns exec "$P-a" timeout "$FB_WAIT" "$FB" recv --dev lo
ROOT_VETH=tbfbi$$
ip link add "$ROOT_VETH" type veth peer name tbfbj netns "$P-a"
expect_refusal "a veth in the initial namespace (send)" 2 "$ROOT_VETH is in the initial network namespace.*--any-interface allows it" \
	timeout "$FB_WAIT" "$FB" send --dev "$ROOT_VETH" --dst-mac "$MAC" --frames 1
expect_refusal "a veth in the initial namespace (recv: XDP would take its every frame)" 2 \
	"$ROOT_VETH is in the initial network namespace" timeout "$FB_WAIT" "$FB" recv --dev "$ROOT_VETH" --via xdp
ip link del "$ROOT_VETH"
SENT=$(ip netns exec "$P-a" "$FB" send --dev d0 --dst-mac "$MAC" --frames 100 --any-interface) ||
	fail "--any-interface: the send on d0 failed"
expect_eq "--any-interface: d0 takes the frames" "$(json_get "$SENT" 'd["frames"]')" 100
