#!/bin/bash
# Superpackets whole on the wire (--wire-tx tap, the default where the kernel has it): gregw
# writes each TCP superpacket it reads from gre0 whole into a queue of its TAP, whose tcx
# program redirects it to transit (plain GRE: after putting the outer IPv4 and GRE header
# before it, bpf_skb_adjust_room; GRE-in-UDP: written with its outer headers and a virtio
# header of GSO over a UDP tunnel, Linux 6.17). Checked, for plain GRE and GRE-in-UDP, over a
# verified tunbed-traffic transfer each way: gwa's stats count the superpackets written into
# the TAP and their segments; a packet ring with virtio headers beside gwb (tunbed-framebench
# recv --via vnet --no-drop) takes exactly those superpackets, each one skb with its gso_size
# and segments; gwb takes each whole (the ring's superpackets, or the UDP socket's); the
# wire audit on gwa's transit counts them as their segments, as gwa counted what it sent, and
# finds nothing wrong. Then what keeps the per-segment path: --wire-tx packet (no superpacket
# on the wire), --seq (said in config), a transit that cannot segment GRE itself (one warning
# naming the feature; GRE-in-UDP's with --wire-tx tap given: the kernel cuts in software and
# the receiving gregw completes the inner checksums it left partial); a receiving gregw without offloads, which cuts the superpackets it
# takes whole; a key, which the TAP's program writes into the GRE header, with --tos 10 and
# --ttl inherit, which it takes from each inner header; and GRE-in-UDP taken
# from the packet ring (--wire-rx ring), which tells each superpacket's gso_size, and cuts a
# UDP_SEGMENT send carried whole into its datagrams. Every transfer's sessions are marked DSCP
# 46 and negotiate ECN (ECT(0) data): the wire audit checks each outer header, a superpacket's
# too, against its inner one (--expect-tos inherit, RFC 6040's normal mode).
#
#  P-client --lan-a-- P-gwa [gregw: gre0 -> TAP gregw-tx0 -(tcx)-> transit] ==transit== [gregw] P-gwb --lan-b-- P-server
#                           [tunbed-wire on transit]          [tunbed-framebench recv --via vnet --no-drop on transit]
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbtap
FB="$TUNBED_BIN/tunbed-framebench"
WIRE="$TUNBED_BIN/tunbed-wire"
[ -x "$FB" ] || die "$FB not built"
[ -x "$WIRE" ] || die "$WIRE not built"
command -v ethtool >/dev/null || die "ethtool is not installed"
FB_PID=""
WIRE_PID=""

"$TOPO" up ras --prefix "$P" >/dev/null
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=1
tr_server "$P-server" 9400

# delta BEFORE AFTER KEY: a total's growth between two stats documents.
delta() {
	python3 -c 'import json,sys; print(json.loads(sys.argv[2])["total"][sys.argv[3]] - json.loads(sys.argv[1])["total"][sys.argv[3]])' "$1" "$2" "$3"
}

# watch_start WIRE-ARGS...: the vnet ring on gwb's transit and tunbed-wire on gwa's, ready.
watch_start() {
	rm -f "$TMP/wire.ready"
	ip netns exec "$P-gwb" "$FB" recv --dev transit --via vnet --no-drop >"$TMP/fb.out" 2>"$TMP/fb.err" &
	FB_PID=$!
	ip netns exec "$P-gwa" "$WIRE" --iface transit --json --check --ready-file "$TMP/wire.ready" \
		--local 198.18.0.1 --remote 198.18.0.2 --no-seq --no-csum --expect-tos inherit "$@" >"$TMP/wire.json" 2>"$TMP/wire.err" &
	WIRE_PID=$!
	poll 30 grep -q '"ready": true' "$TMP/fb.out" || die "the vnet ring never got ready: $(cat "$TMP/fb.err")"
	poll 30 grep -qx ready "$TMP/wire.ready" || die "tunbed-wire did not start: $(cat "$TMP/wire.err")"
}

# watch_stop WHAT: both stopped; the ring's counts in FBJ, the audit's in WJ.
watch_stop() {
	stop_bg "$FB_PID" TERM "$1: the vnet ring"
	expect_eq "$1: the vnet ring's exit status" "$BG_STATUS" 0
	stop_bg "$WIRE_PID" TERM "$1: tunbed-wire"
	expect_eq "$1: tunbed-wire's exit status (3: a frame broke a rule)" "$BG_STATUS" 0
	FB_PID=""
	WIRE_PID=""
	FBJ=$(tail -n 1 "$TMP/fb.out")
	WJ=$(cat "$TMP/wire.json")
}

# transfer WHAT PATTERN: XFER_SESSIONS (2) sessions of XFER_MIB (8) MiB client -> server (push)
# or back (pull), verified, marked DSCP 46, ECN negotiated.
XFER_SESSIONS=2
XFER_MIB=8
transfer() {
	local ok='s["sent"] == s["server_received"] == '"$XFER_MIB"' << 20'
	[ "$2" = pull ] && ok='s["received"] == s["server_sent"] == '"$XFER_MIB"' << 20'
	tr_client "$P-client" 198.18.3.2 --sessions "$XFER_SESSIONS" --bytes "${XFER_MIB}m" --pattern "$2" --verify --dscp 46 --ecn on --json
	expect_eq "$1: $2, $XFER_SESSIONS x $XFER_MIB MiB verified, equal on both sides, ECN negotiated" \
		"$TR_STATUS $(json_get "$TR_JSON" 'd["complete"] and d["tcp"]["verify"]["mismatches"] == 0 and d["tcp"]["ecn_negotiated"] == '"$XFER_SESSIONS"' and all('"$ok"' for s in d["tcp"]["per_session"])')" "0 True"
}

# resolved: the endpoints' learned path MTUs forgotten, a ping through the tunnel, and both
# gateways' next hops resolved (those that follow one): until then a gateway's first packets
# take the IP path, whose kernel may queue and drop some before the neighbour answers.
resolved() {
	# What the endpoints learned of the path MTU in an earlier case goes: a smaller one would
	# make their segments smaller than the tunnel's MTU, which the wire audit cannot see.
	ip -n "$P-client" route flush cache
	ip -n "$P-server" route flush cache
	poll 10 ip netns exec "$P-client" ping -c 1 -W 1 198.18.3.2 || fail "no ping through the tunnel"
	local g
	for g in gwa gwb; do
		poll 10 gw_true "$g" '"next_hop" not in d or d["next_hop"]["lladdr"] is not None' ||
			fail "$g's next hop never resolved"
	done
}

# watched WHAT WIRE-ARGS...: a verified push under the watchers (watch_start, watch_stop); the
# gateways' stats before and after it in a0, b0, a1, b1.
watched() {
	local what=$1
	shift
	watch_start "$@"
	a0=$(gw_stats gwa)
	b0=$(gw_stats gwb)
	transfer "$what" push
	a1=$(gw_stats gwa)
	b1=$(gw_stats gwb)
	watch_stop "$what"
}

# csum_errors HOST: TCP segments the host's kernel found with a wrong checksum.
csum_errors() { ip netns exec "$P-$1" nstat -saz TcpInCsumErrors | awk '/TcpInCsumErrors/ {print $2}'; }

# merge_cases ENCAP MTU: many sessions' small superpackets (the client's TCP held to 8 KB by its
# interface's gso_max_size, as each of 64 flows' window holds its own to a few segments): a
# pass reads several of a flow one after the other, which leave merged into one superpacket
# (--tx-merge on), longer than any read; they arrive byte for byte, the ring
# beside gwb takes exactly the superpackets gwa wrote, and the wire audit finds the frames the
# kernel cuts from them valid and as many as gwa's segments. With --tx-merge off, the default
# (gwa started without the option), nothing is merged and no superpacket is longer than a read.
merge_cases() {
	local encap=$1 mtu=$2 reads
	ip -n "$P-client" link set dev lan-a gso_max_size 8192
	XFER_SESSIONS=16
	XFER_MIB=4
	gw_pair4 "$P" --tx-merge on
	resolved
	e0=$(csum_errors server)
	watched "$encap, merged" --no-key --mtu "$mtu"
	reads=$(json_get "$a1" 'sum(v for k, v in d["total"]["cost"]["tun_to_wire"]["superpacket_segments"].items() if k not in ("1", "2", "3-4", "5-8"))')
	log "$encap, merged: gwa merged $(delta "$a0" "$a1" tx_merged_reads) of $(delta "$a0" "$a1" tun_reads) reads into $(delta "$a0" "$a1" tap_writes) TAP writes of $(delta "$a0" "$a1" tap_segments) segments; ring: $(json_get "$FBJ" '{k: d[k] for k in ("gso", "gso_segs", "len_max")}')"
	expect_eq "$encap, merged: config" "$(json_get "$a1" 'd["config"]["tx_merge"]')" True
	expect_eq "$encap, merged: no read of more than 8 segments (the client's 8 KB)" "$reads" 0
	expect_eq "$encap, merged: gwa merged reads" "$(($(delta "$a0" "$a1" tx_merged_reads) > 0))" 1
	expect_eq "$encap, merged: the ring beside gwb took a superpacket longer than any read" \
		"$(json_get "$FBJ" 'd["len_max"] > 8192 + 100')" True
	expect_eq "$encap, merged: the ring took exactly gwa's superpackets and segments" \
		"$(json_get "$FBJ" '(d["gso"], d["gso_segs"], d["not_ours"], d["drops"])')" "($(delta "$a0" "$a1" tap_writes), $(delta "$a0" "$a1" tap_segments), 0, 0)"
	expect_eq "$encap, merged: the wire audit is clean, as many frames as gwa's segments, its inner bytes" \
		"$(json_get "$WJ" '(d["clean"], d["violation_frames"], d["directions"][0]["frames"], d["directions"][0]["inner_bytes"])')" \
		"(True, 0, $(delta "$a0" "$a1" wire_tx_packets), $(delta "$a0" "$a1" tun_rx_bytes))"
	expect_eq "$encap, merged: no checksum error at the server, no drop" \
		"$(csum_errors server), $(json_get "$(gw_stats gwa)" 'd["total"]["dropped"]'), $(json_get "$(gw_stats gwb)" 'd["total"]["dropped"]')" "$e0, 0, 0"
	gw_stop gwa
	gw_stop gwb
	gw_a4 "$P"
	gw_b4 "$P"
	resolved
	watched "$encap, --tx-merge off" --no-key --mtu "$mtu"
	expect_eq "$encap, --tx-merge off: config, nothing merged, no superpacket longer than a read" \
		"$(json_get "$a1" '(d["config"]["tx_merge"], d["total"]["tx_merged_reads"])'), $(json_get "$FBJ" 'd["len_max"] <= 8192 + 100')" "(False, 0), True"
	expect_eq "$encap, --tx-merge off: the wire audit is clean" "$(json_get "$WJ" 'd["clean"]')" True
	gw_stop gwa
	gw_stop gwb
	ip -n "$P-client" link set dev lan-a gso_max_size 65536
	XFER_SESSIONS=2
	XFER_MIB=8
}

for encap in gre gre-udp; do
	GW_MODE_ARGS=(--encap "$encap")
	mtu=1476
	[ "$encap" = gre-udp ] && mtu=1468
	log "--- $encap: superpackets through the TAP"
	gw_pair4 "$P"
	resolved
	a=$(gw_stats gwa)
	expect_eq "$encap: config: through the TAP, nothing against it" \
		"$(json_get "$a" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"], d["config"]["tap"])')" "('tap', None, 'gregw-tx0')"
	expect_eq "$encap: the TAP is up in gwa's namespace, without IPv6" \
		"$(ip -n "$P-gwa" -j link show gregw-tx0 | json_get "$(cat)" '"UP" in d[0]["flags"]'), $(ip netns exec "$P-gwa" cat /proc/sys/net/ipv6/conf/gregw-tx0/disable_ipv6)" "True, 1"
	e0=$(csum_errors server)
	watched "$encap" --no-key --mtu "$mtu"
	writes=$(delta "$a0" "$a1" tap_writes)
	segs=$(delta "$a0" "$a1" tap_segments)
	sent=$(delta "$a0" "$a1" wire_tx_packets)
	log "$encap: gwa wrote $writes superpackets of $segs segments into the TAP, $sent packets in all; ring: $(json_get "$FBJ" '{k: d[k] for k in ("frames", "gso", "gso_segs", "gso_size_min", "gso_size_max", "len_max", "not_ours")}')"
	expect_eq "$encap: gwa wrote superpackets into the TAP, several segments each" "$((writes > 0 && segs >= 2 * writes))" 1
	expect_eq "$encap: and counted their segments as sent" "$((sent >= segs))" 1
	expect_eq "$encap: the ring beside gwb took them, each one skb of its segments with gso_size (TCPV4)" \
		"$(json_get "$FBJ" '(d["gso"], d["gso_tcpv4"], d["gso_segs"], d["not_ours"], d["drops"])')" "($writes, $writes, $segs, 0, 0)"
	expect_eq "$encap: their gso_size fills the tunnel MTU at most" \
		"$(json_get "$FBJ" '0 < d["gso_size_min"] <= d["gso_size_max"] <= '"$((mtu - 40))")" "True"
	if [ "$encap" = gre ]; then took=gre_gro_reads; else took=udp_whole_reads; fi
	expect_eq "$encap: gwb took each whole ($took)" "$(delta "$b0" "$b1" "$took")" "$writes"
	expect_eq "$encap: gwb received as many packets as gwa sent" "$(delta "$b0" "$b1" wire_rx_packets)" "$sent"
	expect_eq "$encap: the wire audit is clean" "$(json_get "$WJ" '(d["clean"], d["violation_frames"], d["source"]["capture_dropped"])')" "(True, 0, 0)"
	expect_eq "$encap: the wire audit counts the superpackets as gwa's segments" \
		"$(json_get "$WJ" '(d["directions"][0]["frames"], d["directions"][0]["gso_frames"] >= '"$writes"')')" "($sent, True)"
	expect_eq "$encap: inner bytes on the wire = what gwa read from gre0" \
		"$(json_get "$WJ" 'd["directions"][0]["inner_bytes"]')" "$(delta "$a0" "$a1" tun_rx_bytes)"
	expect_eq "$encap: no checksum error at the server" "$(csum_errors server)" "$e0"
	b0=$(gw_stats gwb)
	transfer "$encap" pull
	b1=$(gw_stats gwb)
	expect_eq "$encap: pull: gwb wrote superpackets into its TAP" "$(($(delta "$b0" "$b1" tap_writes) > 0))" 1
	for g in gwa gwb; do
		expect_eq "$encap: $g dropped nothing" "$(json_get "$(gw_stats "$g")" 'd["total"]["dropped"]')" 0
	done
	gw_stop gwa
	gw_stop gwb
	merge_cases "$encap" "$mtu"
done
GW_MODE_ARGS=(--encap gre)

log "--- --wire-tx packet: frames only"
gw_pair4 "$P" --wire-tx packet
resolved
expect_eq "--wire-tx packet: config" "$(json_get "$(gw_stats gwa)" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"], d["config"]["tap"])')" "('packet', '--wire-tx packet', None)"
watched "--wire-tx packet" --no-key --mtu 1476
expect_eq "--wire-tx packet: nothing written into a TAP, no superpacket on the wire" \
	"$(json_get "$(gw_stats gwa)" 'd["total"]["tap_writes"]'), $(json_get "$FBJ" 'd["gso"]'), $(json_get "$WJ" 'd["directions"][0]["gso_frames"]')" "0, 0, 0"
gw_stop gwa
gw_stop gwb

log "--- --seq: per-segment numbers keep the per-segment path"
gw_pair4 "$P" --seq
expect_eq "--seq: config says why" "$(json_get "$(gw_stats gwa)" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"])')" "('packet', '--seq')"
transfer "--seq" push
expect_eq "--seq: nothing written into a TAP" "$(json_get "$(gw_stats gwa)" 'd["total"]["tap_writes"]')" 0
gw_stop gwa
gw_stop gwb

log "--- a receiving gregw without offloads cuts the superpackets it takes whole"
e0=$(csum_errors server)
gw_a4 "$P"
gw_b4 "$P" --offload off
transfer "gwb without offloads" push
b=$(gw_stats gwb)
expect_eq "gwb without offloads: took superpackets whole and cut them" \
	"$(json_get "$b" 'd["total"]["gre_gro_reads"] > 0 and d["total"]["tun_cut_superpackets"] == d["total"]["gre_gro_reads"]')" "True"
expect_eq "gwb without offloads: dropped nothing, no checksum error at the server" \
	"$(json_get "$b" 'd["total"]["dropped"]'), $(csum_errors server)" "0, $e0"
gw_stop gwa
gw_stop gwb

log "--- a key, written by the TAP's program, with --tos 10 and --ttl inherit"
gw_pair4 "$P" --key 7 --tos 10 --ttl inherit
resolved
watched "key" --key 7 --mtu 1472 --expect-tos 10 --expect-ttl inherit
expect_eq "key: superpackets through the TAP" "$(($(delta "$a0" "$a1" tap_writes) > 0))" 1
expect_eq "key: the wire audit finds key 7, DSCP 10, the inner ECN field and TTL on every frame, nothing wrong" \
	"$(json_get "$WJ" '(d["clean"], d["directions"][0]["frames"])')" "(True, $(delta "$a0" "$a1" wire_tx_packets))"
gw_stop gwa
gw_stop gwb

log "--- GRE-in-UDP from the packet ring (--wire-rx ring): superpackets with their gso_size"
GW_MODE_ARGS=(--encap gre-udp --wire-rx ring)
gw_pair4 "$P"
resolved
expect_eq "--wire-rx ring: config" "$(json_get "$(gw_stats gwb)" '(d["config"]["wire_rx"], d["config"]["ingress_drop"])')" "('ring', 'tcx')"
# What gwb's stack took up of UDP, and the ICMP errors it sent (a port unreachable each).
# shellcheck disable=SC2016 # awk's fields, not the shell's
udp_in() { ip netns exec "$P-gwb" awk '/^Udp:/ && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp; }
# shellcheck disable=SC2016 # awk's fields, not the shell's
unreach() { ip netns exec "$P-gwb" awk '/^Icmp:/ && $2 ~ /^[0-9]+$/ { print $20 }' /proc/net/snmp; }
u0=$(udp_in)
i0=$(unreach)
watched "--wire-rx ring" --no-key --mtu 1468
expect_eq "--wire-rx ring: gwb took each superpacket whole from its ring, with its gso_size" \
	"$(delta "$b0" "$b1" gre_gro_reads), $(delta "$b0" "$b1" udp_whole_reads)" "$(delta "$a0" "$a1" tap_writes), 0"
expect_eq "--wire-rx ring: gwb received as many packets as gwa sent" "$(delta "$b0" "$b1" wire_rx_packets)" "$(delta "$a0" "$a1" wire_tx_packets)"
expect_eq "--wire-rx ring: the wire audit is clean" "$(json_get "$WJ" 'd["clean"]')" "True"
expect_eq "--wire-rx ring: gwb's stack took no UDP up, sent no ICMP unreachable" "$(($(udp_in) - u0)), $(($(unreach) - i0))" "0, 0"
transfer "--wire-rx ring" pull
gw_stop gwa
gw_stop gwb
# UDP_SEGMENT sends carried whole by the veth pair: the ring cuts them into their datagrams.
gw_a4 "$P" --wire-tx packet
gw_b4 "$P"
resolved
transfer "--wire-rx ring, UDP_SEGMENT sends" push
b=$(gw_stats gwb)
expect_eq "--wire-rx ring, UDP_SEGMENT sends: gwb cut them (udp_gro_reads), dropped nothing" \
	"$(json_get "$b" 'd["total"]["udp_gro_reads"] > 0 and d["total"]["dropped"] == 0')" "True"
gw_stop gwa
gw_stop gwb
GW_MODE_ARGS=(--encap gre)

log "--- a transit that cannot segment GRE: the TAP still, the kernel cuts in software"
ip netns exec "$P-gwa" ethtool -K transit tx-gre-segmentation off >/dev/null
gw_pair4 "$P"
expect_eq "no GRE segmentation: config" "$(json_get "$(gw_stats gwa)" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"])')" \
	"('tap', None)"
expect_eq "no GRE segmentation: no warning" "$(grep -c 'segmentation off' "$TMP/gwa.err")" 0
transfer "no GRE segmentation" push
expect_eq "no GRE segmentation: superpackets written into the TAP" "$(json_get "$(gw_stats gwa)" 'd["total"]["tap_writes"] > 0')" True
gw_stop gwa
gw_stop gwb
ip netns exec "$P-gwa" ethtool -K transit tx-gre-segmentation on >/dev/null

log "--- a transit that cannot segment GRE-in-UDP: the per-segment path, said once"
GW_MODE_ARGS=(--encap gre-udp)
ip netns exec "$P-gwa" ethtool -K transit tx-udp_tnl-segmentation off >/dev/null
gw_pair4 "$P"
expect_eq "no UDP tunnel segmentation: config" "$(json_get "$(gw_stats gwa)" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"])')" \
	"('udp', 'the interface towards the peer does not segment the tunnel')"
expect_eq "no UDP tunnel segmentation: one warning naming the feature" "$(grep -c 'tx-udp_tnl-segmentation off' "$TMP/gwa.err")" 1
transfer "no UDP tunnel segmentation" push
expect_eq "no UDP tunnel segmentation: nothing written into a TAP" "$(json_get "$(gw_stats gwa)" 'd["total"]["tap_writes"]')" 0
gw_stop gwa
gw_stop gwb
log "--- the same with --wire-tx tap given: the kernel cuts, gwb completes the inner checksums"
gw_a4 "$P" --wire-tx tap
gw_b4 "$P"
resolved
expect_eq "--wire-tx tap, no UDP tunnel segmentation: config" "$(json_get "$(gw_stats gwa)" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"])')" \
	"('tap', None)"
e0=$(csum_errors server)
a0=$(gw_stats gwa)
b0=$(gw_stats gwb)
transfer "--wire-tx tap, no UDP tunnel segmentation" push
a1=$(gw_stats gwa)
b1=$(gw_stats gwb)
# Cut by the kernel, the segments reach gwb's socket one datagram each (none whole), their
# inner checksums partial: each completed, none dropped by the server's TCP.
expect_eq "--wire-tx tap, no UDP tunnel segmentation: gwa wrote superpackets into the TAP" "$(($(delta "$a0" "$a1" tap_writes) > 0))" 1
expect_eq "--wire-tx tap, no UDP tunnel segmentation: gwb took none whole, completed checksums" \
	"$(delta "$b0" "$b1" udp_whole_reads), $(($(delta "$b0" "$b1" udp_csum_partial) >= $(delta "$a0" "$a1" tap_segments)))" "0, 1"
expect_eq "--wire-tx tap, no UDP tunnel segmentation: no checksum error at the server, nothing dropped" \
	"$(csum_errors server), $(json_get "$b1" 'd["total"]["dropped"]')" "$e0, 0"
gw_stop gwa
gw_stop gwb
ip netns exec "$P-gwa" ethtool -K transit tx-udp_tnl-segmentation on >/dev/null
GW_MODE_ARGS=(--encap gre)
tr_stop
