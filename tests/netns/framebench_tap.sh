#!/bin/bash
# Superpackets through a TAP (issue 31's experiment, kept true): tunbed-framebench writes
# superpackets of 45 segments into a TAP with the 24-byte virtio header, GRE-in-UDP with the
# UDP tunnel GSO type (Linux 6.17), or the inner TCP packet that a tcx program at the TAP's
# ingress puts in GRE (bpf_skb_adjust_room); that program, or one for GRE-in-UDP, redirects
# each to the transit veth fa0 (bpf_redirect), or, as a reference, the namespace's routing
# forwards it there. With fa0's tunnel segmentation on (veth's default), each superpacket
# crosses whole: the far end's TPACKET ring with PACKET_VNET_HDR (recv --via vnet) takes one
# frame of the superpacket's length with GSO type TCPV4 and the gso_size written, fa0 and
# tap0 drop nothing; with it off (ethtool -K fa0 tx-udp_tnl-segmentation off
# tx-udp_tnl-csum-segmentation off tx-gre-segmentation off), 45 frames of 1514 bytes come of
# each. tunbed-wire, capturing on fb0, finds every frame valid either way, and counts a
# superpacket as the 45 segments a NIC would send. The receiving stack takes none of it up.
# Every wait is for what a process says or does, never for time.
#
#  P-a                                                          P-b
#  [framebench send --via tap]                                  [framebench recv --via vnet]
#        | write(): 24-byte virtio header + superpacket         [tunbed-wire --check]
#      tap0 198.18.1.1/24                                             |
#        | tcx ingress: (GRE: adjust_room, then) redirect to fa0,     |
#        | or routing (ip_forward, neighbour 198.18.0.2 permanent)    |
#      fa0 198.18.0.5/24 ================== veth ================== fb0 198.18.0.2/24
# shellcheck source=framebench_lib.sh
source "$(dirname "$0")/framebench_lib.sh"
netns_test_init
new_prefix P tbfbtap
WIRE="$TUNBED_BIN/tunbed-wire"
[ -x "$FB" ] || die "$FB not built"
[ -x "$WIRE" ] || die "$WIRE not built"
command -v ethtool >/dev/null || die "ethtool is not installed"
K=3    # superpackets a case
SEGS=45 # of 1514-byte frames each: as many as an IPv4 packet of 65535 bytes holds

for h in a b; do
	ip netns add "$P-$h"
	ip netns exec "$P-$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip -n "$P-a" link add fa0 type veth peer name fb0 netns "$P-b"
ip -n "$P-a" addr add 198.18.0.5/24 dev fa0
ip -n "$P-b" addr add 198.18.0.2/24 dev fb0
ip -n "$P-a" tuntap add dev tap0 mode tap
ip -n "$P-a" addr add 198.18.1.1/24 dev tap0
for l in fa0 tap0; do ip -n "$P-a" link set "$l" up; done
ip -n "$P-b" link set fb0 up
# The reference path: P-a routes the outer 198.18.0.1 -> 198.18.0.2 from tap0 to fa0. New
# namespaces inherit rp_filter from the initial one; the superpackets' source is no address
# of tap0's subnet.
ip netns exec "$P-a" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
	net.ipv4.conf.tap0.rp_filter=0
MAC=$(ip netns exec "$P-b" cat /sys/class/net/fb0/address)
TAP_MAC=$(ip netns exec "$P-a" cat /sys/class/net/tap0/address)
ip -n "$P-a" neigh replace 198.18.0.2 lladdr "$MAC" dev fa0 nud permanent
# veth's GRO would merge frames on the way in: the receiver must see what crossed.
ip netns exec "$P-b" ethtool -K fb0 gro off

# A counter of a link's (ip -s -j): NS DEV EXPR on d, the stats64 object.
link_stat() {
	ip -n "$1" -s -j link show "$2" | python3 -c 'import json, sys; d = json.load(sys.stdin)[0]["stats64"]; print(eval(sys.argv[1]))' "$3"
}

# case ENCAP PATH SEG: K superpackets of ENCAP (gre-udp, gre) through tap0 by PATH (redirect,
# forward) with fa0's tunnel segmentation SEG (on, off); the receiver's counts in GOT, the
# audit's in AUDIT (JSON).
case_run() {
	local encap=$1 path=$2 seg=$3 name="$1 $2, segmentation $3" want wpid
	local -a to=(--redirect fa0 --dst-mac "$MAC")
	[ "$path" = forward ] && to=(--dst-mac "$TAP_MAC")
	ip netns exec "$P-a" ethtool -K fa0 tx-udp_tnl-segmentation "$seg" \
		tx-udp_tnl-csum-segmentation "$seg" tx-gre-segmentation "$seg"
	want=$K
	[ "$seg" = off ] && want=$((K * SEGS))
	rm -f "$TMP/wire.ready"
	"$WIRE" --netns "$P-b" --iface fb0 --json --check --ready-file "$TMP/wire.ready" \
		--local 198.18.0.1 --remote 198.18.0.2 --no-key --no-seq --no-csum \
		>"$TMP/wire.json" 2>"$TMP/wire.err" &
	wpid=$!
	wait_said "$name: tunbed-wire" "$wpid" "$TMP/wire.ready" '^ready$' "$TMP/wire.err"
	recv_start "$name" "$P-b" --dev fb0 --via vnet --frames "$want"
	TX0=$(link_stat "$P-a" fa0 'd["tx"]["dropped"]')
	RX0=$(link_stat "$P-a" tap0 'd["rx"]["dropped"] + d["rx"]["errors"]')
	STACK0=$(stack_took "$P-b")
	SENT=$(ip netns exec "$P-a" "$FB" send --via tap --dev tap0 --encap "$encap" "${to[@]}" \
		--frames "$K" --seconds "$FB_WAIT") || die "$name: the sender failed"
	recv_done "$name"
	expect_eq "$name: the receiver's exit status" "$BG_STATUS" 0
	stop_bg "$wpid" TERM "$name: tunbed-wire"
	expect_eq "$name: tunbed-wire's exit status (3: a frame broke a rule)" "$BG_STATUS" 0
	AUDIT=$(cat "$TMP/wire.json")
	expect_eq "$name: the sender wrote $K superpackets of $SEGS segments" \
		"$(json_get "$SENT" 'd["frames"], d["segs"]')" "($K, $SEGS)"
	expect_eq "$name: fa0 dropped none (tx_dropped)" "$(($(link_stat "$P-a" fa0 'd["tx"]["dropped"]') - TX0))" 0
	expect_eq "$name: tap0 refused none" "$(($(link_stat "$P-a" tap0 'd["rx"]["dropped"] + d["rx"]["errors"]') - RX0))" 0
	expect_eq "$name: tunbed-wire: every frame a tunnel frame, none with a violation" \
		"$(json_get "$AUDIT" 'd["tunnel_frames"], d["other_frames"], d["violation_frames"], d["clean"]')" \
		"($want, 0, 0, True)"
	expect_eq "$name: the ring's frames, all of them test frames, none dropped" \
		"$(json_get "$GOT" 'd["frames"], d["not_ours"], d["drops"]')" "($want, 0, 0)"
	expect_eq "$name: P-b's IP stack took none up" "$(($(stack_took "$P-b") - STACK0))" 0
}
got() { json_get "$GOT" "$1"; }

for encap in gre-udp gre; do
	for path in redirect forward; do
		case_run "$encap" "$path" on
		super=$(json_get "$SENT" 'd["super_len"] + (24 if d["encap"] == "gre" else 0)')
		gso=$(json_get "$SENT" 'd["gso_size"]')
		expect_eq "$encap $path: each superpacket crossed whole, $super bytes" \
			"$(got 'd["len_min"], d["len_max"]')" "($super, $super)"
		expect_eq "$encap $path: about 64 KB" "$((super > 64000 && super <= 65549))" 1
		expect_eq "$encap $path: as GSO TCPV4 with gso_size $gso, $SEGS segments each" \
			"$(got 'd["gso"], d["gso_tcpv4"], d["gso_size_min"], d["gso_size_max"], d["gso_segs"]')" \
			"($K, $K, $gso, $gso, $((K * SEGS)))"
		expect_eq "$encap $path: the inner checksum left partial" "$(got 'd["partial"]')" "$K"
		expect_eq "$encap $path: tunbed-wire saw the superpackets whole and counted each as $SEGS segments" \
			"$(json_get "$AUDIT" '(d["directions"][0]["gso_frames"], d["directions"][0]["frames"], d["directions"][0]["sizes"][-1]["frames"])')" "($K, $((K * SEGS)), 0)"

		case_run "$encap" "$path" off
		expect_eq "$encap $path: cut into frames of 1514 bytes, none a superpacket" \
			"$(got 'd["len_min"], d["len_max"], d["gso"]')" "(1514, 1514, 0)"
		expect_eq "$encap $path: of its encapsulation" \
			"$(got 'd["gre_udp"] if "'"$encap"'" == "gre-udp" else d["gre"]')" "$((K * SEGS))"
	done
done

# A TAP the far end of which writes plain frames: refused before anything is sent.
expect_refusal "--via tap on a veth" 2 "fa0 is not a TAP" \
	ip netns exec "$P-a" "$FB" send --via tap --dev fa0 --dst-mac "$MAC" --frames 1
expect_refusal "more segments than an IPv4 packet holds" 2 "bad value '46' for --segs: expected 1 to 45" \
	"$FB" send --via tap --dev tap0 --dst-mac "$MAC" --segs 46
expect_refusal "a full checksum asked of tap" 2 "leaves the inner checksum partial" \
	"$FB" send --via tap --dev tap0 --dst-mac "$MAC" --csum full
expect_refusal "--encap without tap" 2 "--encap is an option of send --via tap" \
	"$FB" send --dev fa0 --dst-mac "$MAC" --encap gre-udp
expect_refusal "--verify with vnet" 2 "--verify is not for --via vnet" \
	"$FB" recv --dev fb0 --via vnet --verify
