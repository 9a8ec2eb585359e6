#!/bin/bash
# Plain GRE behind a receiving interface that merges packets (GRO), as a NIC driver does by
# default on real hosts: the kernel's GRE GRO merges a flow's GRE packets into superpackets
# before gregw's rings see them, too large for a frame sized to the MTU. gregw takes each whole
# from its socket (PACKET_COPY_THRESH, with the virtio header that says how it was merged) and
# writes it into TUN as one superpacket. Before, every merged packet was dropped as truncated
# and a transfer stalled.
#
# veth merges only in its NAPI mode (GRO on at the receiving end, TSO off at the sending one,
# which veth takes as "the sender could not have merged them itself"), and merges across
# packets only with a flush timeout: each packet is otherwise its own NAPI poll. Both ends of
# transit are set so, for both directions. Checked: transfers both ways with their hashes
# equal, superpackets taken whole on the receiving gateway, nothing dropped, every packet the
# wire brought in TUN; the same with a key and GRE checksums (the kernel checks each
# packet's checksum before it merges; the merged header keeps the first packet's); and with
# TPACKET_V3 rings, whose frames hold superpackets whole.
#
#  P-client --lan-a-- P-gwa [gregw] ==transit (GRO)== [gregw] P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbwgro
MB=$((1 << 20))
[ "$GW_MODE" = gre ] || die "plain GRE with offloads only (GREGW_MODE $GW_MODE)"

"$TOPO" up ras --prefix "$P" >/dev/null
for h in gwa gwb; do
	ip netns exec "$P-$h" ethtool -K transit tso off gro on >/dev/null || die "ethtool on $h"
	ip netns exec "$P-$h" sh -c 'echo 100000 >/sys/class/net/transit/gro_flush_timeout' || die "gro_flush_timeout on $h"
done
expect_eq "gwb's transit merges: GRO on" "$(ip netns exec "$P-gwb" ethtool -k transit | awk '/^generic-receive-offload:/ {print $2}')" "on"

# merged_ok NAME GATEWAY: the receiving gateway took superpackets whole, dropped nothing it
# received, and wrote every packet the wire brought into TUN. (What it sends the other way may
# meet a full wire: veth in NAPI mode queues packets in its peer's ring, which fills under
# load, and then a few hundred of the ACKs sent back were refused, counted tx_send; a NIC's full
# queue would do the same.)
merged_ok() {
	local s
	s=$(gw_stats "$2")
	expect_eq "$1: $2 took superpackets whole from the wire" "$(json_get "$s" 'd["total"]["gre_gro_reads"] > 10')" "True"
	expect_eq "$1: $2 dropped nothing it received" "$(json_get "$s" 'd["total"]["dropped"] - d["total"]["drops"]["tx_send"]')" "0"
	expect_eq "$1: $2 wrote every packet the wire brought into TUN" "$(json_get "$s" 'd["total"]["wire_rx_packets"] == d["total"]["tun_tx_packets"]')" "True"
	expect_eq "$1: $2 wrote superpackets into TUN" "$(json_get "$s" 'd["total"]["coalesced_superpackets"] >= d["total"]["gre_gro_reads"]')" "True"
	log "$1: $2 $(json_get "$s" '{k: d["total"][k] for k in ("wire_rx_packets", "gre_gro_reads", "tun_writes", "recv_calls")} | {k: v for k, v in d["total"]["drops"].items() if v}')"
}

gw_pair4 "$P" --workers 2
expect_eq "config: merged superpackets taken whole" "$(json_get "$(gw_stats gwb)" 'd["config"]["wire_gro"]')" "whole"
bulk_transfer "$P" 198.18.3.2 4 $((100 * MB))
merged_ok "client -> server" gwb
bulk_transfer "$P" 198.18.1.2 4 $((100 * MB)) server client
merged_ok "server -> client" gwa
gw_stop gwa
gw_stop gwb

gw_pair4 "$P" --workers 2 --key 7 --csum
bulk_transfer "$P" 198.18.3.2 4 $((50 * MB))
merged_ok "key and checksum" gwb
gw_stop gwa
gw_stop gwb

# TPACKET_V3's blocks hold a superpacket whole: its frame's own virtio header says how it was
# merged (as it does for a merged packet short enough for a V2 frame).
gw_pair4 "$P" --workers 2 --rx-ring v3
bulk_transfer "$P" 198.18.3.2 4 $((50 * MB))
merged_ok "--rx-ring v3" gwb
expect_eq "--rx-ring v3: none read from the socket (all whole in their frames)" "$(json_get "$(gw_stats gwb)" 'd["total"]["recv_calls"]')" "0"
gw_stop gwa
gw_stop gwb

"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
