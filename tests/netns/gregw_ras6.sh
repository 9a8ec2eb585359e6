#!/bin/bash
# gregw on the IPv6 RAS topology: IPv6 in IPv6 GRE with a key; ping both ways; a verified
# transfer; and an IPv6 packet too big for the tunnel gets ICMPv6 "packet too big" back. gwb
# holds the superpackets it merges for their bursts (--gro-hold 200): its writes into TUN are
# counted, and the transfer stays intact.
#
#  P-client 2001:2:0:1::2 --lan-a-- P-gwa [gregw gre0 2001:2:0:ff::1] ==transit 2001:2::1 <-> 2001:2::2== [gregw gre0 2001:2:0:ff::2] P-gwb --lan-b-- 2001:2:0:3::2 P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbgw6

"$TOPO" up ras6 --prefix "$P" >/dev/null
gw_start gwa "$P-gwa" --remote 2001:2::2 --addr6 2001:2:0:ff::1/64 --route 2001:2:0:3::/64 --key 9 --workers 2
gw_start gwb "$P-gwb" --remote 2001:2::1 --addr6 2001:2:0:ff::2/64 --route 2001:2:0:1::/64 --key 9 --workers 2 --gro-hold 200
MTU=$((1452 - GW_UDP))
expect_eq "gre0 mtu: 1500 - 40 - 8 ($GW_ENCAP)" "$(json_get "$(ip -n "$P-gwa" -j link show dev gre0)" 'd[0]["mtu"]')" "$MTU"
ip netns exec "$P-client" ping -6 -c 5 -i 0.1 -W 2 2001:2:0:3::2 >/dev/null || fail "ping6 client -> server through the tunnel"
ip netns exec "$P-server" ping -6 -c 5 -i 0.1 -W 2 2001:2:0:1::2 >/dev/null || fail "ping6 server -> client through the tunnel"
ip netns exec "$P-client" ping -6 -c 2 -i 0.1 -W 2 2001:2:0:ff::2 >/dev/null || fail "ping6 client -> gwb's tunnel address"
# Let gre0 take 1500-byte packets although the tunnel carries less: gregw answers with PTB.
ip -n "$P-gwa" link set gre0 mtu 1500
out=$(ip netns exec "$P-client" ping -6 -c 1 -W 2 -M "do" -s "$MTU" 2001:2:0:3::2 2>&1 || true)
expect_match "the client hears packet too big from gregw" "$out" "From 2001:2:0:ff::1.*Packet too big: mtu=$MTU"
# gregw counts the ICMPv6 error after writing it: the ping may have it first.
poll 30 gw_true gwa 'd["total"]["drops"]["tx_too_big"] >= 1 and d["total"]["icmp_sent"] >= 1' ||
	fail "gwa did not count the packet too big and its ICMPv6 error"
a=$(gw_stats gwa)
expect_eq "gwa: too big, counted" "$(json_get "$a" 'd["total"]["drops"]["tx_too_big"]')" "1"
expect_eq "gwa: packet too big sent" "$(json_get "$a" 'd["total"]["icmp_sent"]')" "1"
expect_match "client learned the tunnel MTU" "$(ip -n "$P-client" -6 route get 2001:2:0:3::2)" "mtu $MTU"
ip netns exec "$P-client" ping -6 -c 2 -i 0.1 -W 2 -s $((MTU - 48)) 2001:2:0:3::2 >/dev/null || fail "ping6 within the learned MTU"
ip -n "$P-gwa" link set gre0 mtu "$MTU"

# What gwb's IPv6 stack takes up locally (Ip6InDelivers + Ip6InUnknownProtos).
# shellcheck disable=SC2016 # awk's fields, not the shell's
ip6_local() { ip netns exec "$P-gwb" awk '$1 == "Ip6InDelivers" || $1 == "Ip6InUnknownProtos" { n += $2 } END { print n }' /proc/net/snmp6; }
l0=$(ip6_local)
w0=$(json_get "$(gw_stats gwb)" 'd["total"]["wire_rx_packets"]')
bulk_transfer "$P" 2001:2:0:3::2 4 $((40 << 20))
b=$(gw_stats gwb)
# The drop at tc ingress over IPv6: the GRE packets reach gwb's rings, not its IP stack
# (which still sees its neighbour discovery).
w=$(($(json_get "$b" 'd["total"]["wire_rx_packets"]') - w0))
l=$(($(ip6_local) - l0))
expect_eq "gwb: the drop at tc ingress, over IPv6 ($GW_ENCAP)" "$(json_get "$b" 'd["config"].get("ingress_drop", "n/a")')" "$([ "$GW_ENCAP" = gre ] && echo tcx || echo n/a)"
if [ "$GW_ENCAP" = gre ]; then
	expect_eq "gwb's IPv6 stack delivered under a tenth of the $w GRE packets (+$l)" "$((l * 10 < w))" "1"
fi
expect_eq "gwb decapsulated IPv6 GRE" "$(json_get "$b" 'd["total"]["tun_tx_bytes"] > 40 * 2**20')" "True"
expect_eq "gwb: outer family" "$(json_get "$b" 'd["config"]["local"]')" "2001:2::2"
expect_eq "gwb dropped nothing" "$(json_get "$b" 'd["total"]["dropped"]')" "0"
expect_eq "gwb: --gro-hold in the config" "$(json_get "$b" 'd["config"]["gro_hold_us"]')" "200"
# Whatever was held went into TUN: every segment gwb took from the wire is written (the last
# ones of the connection's close may still be on their way when the stats above were taken).
poll 30 gw_true gwb 'd["total"]["wire_rx_packets"] == d["total"]["tun_tx_packets"]' ||
	fail "gwb: segments taken from the wire but not written into TUN: $(json_get "$(gw_stats gwb)" 'd["total"]["wire_rx_packets"] - d["total"]["tun_tx_packets"]')"

gw_stop gwa
gw_stop gwb
"$TOPO" down ras6 --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
