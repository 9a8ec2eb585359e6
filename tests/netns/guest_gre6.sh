#!/bin/bash
# Interop with the Linux kernel's own GRE over IPv6: gregw in gwa with outer IPv6, the
# kernel's ip6_gre (and fou) in a qemu guest with Debian's kernel in gwb's place
# (guest_lib.sh). One boot, every case in turn, each with the guest's tunnel made anew and a
# new gregw:
#
#  - ip6gre without an encapsulation limit, plain, and as the kernel makes it by default
#    (encaplimit 4: its GRE follows a destination options header holding RFC 2473's tunnel
#    encapsulation limit) with key, sequence numbers and checksums: DF pings of the tunnel
#    MTU both ways with IPv4 and IPv6 inside, verified transfers, the wire audit clean both
#    ways, no drop or error on either side; and the kernel's tclass inherit against gregw's
#    default (--tos inherit), sessions marked DSCP 46 (the server's 12) that negotiate ECN,
#    the audit expecting the DSCP copied both ways;
#  - PMTU with IPv6 inside: ICMPv6 "packet too big" from gregw and from the kernel's tunnel,
#    and the segment sizes TCP then sends;
#  - GRE-in-UDP over IPv6 against the kernel's fou, whose UDP follows the same destination
#    options header, with its framing checked.
#
#  P-client --lan-a-- P-gwa [gregw gre0] ==transit (TAP)== guest [kernel g0] --lan-b (TAP)-- P-server
#                           2001:2::1                     2001:2::2
# shellcheck source=guest_lib.sh
source "$(dirname "$0")/guest_lib.sh"
guest_test_init
new_prefix P tbkg6
gt_up "$P"
tr_server "$P-server" 9400
GT_TYPE=ip6gre
GT_LOCAL=2001:2::1
GT_REMOTE=2001:2::2
NOLIMIT=(encaplimit none)

interop_case ip6gre -- "${NOLIMIT[@]}" -- --no-key --no-seq --no-csum
gw_stop gwa
interop_tos "${NOLIMIT[@]}" tclass inherit
gw_stop gwa
# The kernel's default encapsulation limit (4): a destination options header before GRE, 8
# bytes that its g0's MTU leaves room for; gregw is given the same MTU. gwa's IP stack must
# take none of the kernel's GRE up: gregw's drop at tc ingress knows the header too. What
# it delivers locally then is ICMPv6 alone (neighbour discovery): Ip6InDelivers less
# Icmp6InMsgs stays put.
# shellcheck disable=SC2016 # awk's fields, not the shell's
stack_gre() {
	ip netns exec "$P-gwa" awk '$1 == "Ip6InDelivers" { d = $2 } $1 == "Icmp6InMsgs" { i = $2 } END { print d - i }' /proc/net/snmp6
}
s0=$(stack_gre)
interop_case ip6gre-key-seq-csum-limit --key 7 --seq --csum --workers 1 --mtu 1436 -- key 7 iseq oseq icsum ocsum -- \
	--key 7 --seq --csum
a=$(gw_stats gwa)
expect_eq "ip6gre-key-seq-csum-limit: gregw's drop at tc ingress in force; gwa's stack delivered none of the kernel's GRE" \
	"$(json_get "$a" 'd["config"]["ingress_drop"]') $(($(stack_gre) - s0))" "tcx 0"
expect_eq "ip6gre-key-seq-csum-limit: gregw received numbered packets, none lost, reordered or duplicated" \
	"$(json_get "$a" 'd["total"]["seq_packets"] > 0 and d["seq"]["lost"] == 0 and d["total"]["seq_reordered"] == 0 and d["total"]["seq_duplicate"] == 0')" "True"
# Next header 60 (destination options) in the fixed header, 47 (GRE) in the options header,
# whose first option is type 4 (the tunnel encapsulation limit) with 4 left; gregw sends GRE
# right after the fixed header.
pcap=$TMP/ip6gre-key-seq-csum-limit.pcap
n=$(pcap_count "$pcap" "src host $GT_REMOTE")
expect_eq "ip6gre-key-seq-csum-limit: each of the kernel's $n frames is IPv6, the limit (4) in a destination options header, GRE" \
	"$(pcap_count "$pcap" "src host $GT_REMOTE and ip6[6] == 60 and ip6[40] == 47 and ip6[42] == 4 and ip6[44] == 4") $((n > 0))" "$n 1"
n=$(pcap_count "$pcap" "src host $GT_LOCAL")
expect_eq "ip6gre-key-seq-csum-limit: each of gregw's $n frames is IPv6 then GRE" \
	"$(pcap_count "$pcap" "src host $GT_LOCAL and ip6[6] == 47") $((n > 0))" "$n 1"
gw_stop gwa

log "--- PMTU with IPv6 inside: gregw's own ICMPv6 (its gre0 raised to 1500 by hand: gregw must refuse)"
gt_tunnel ip6gre "${NOLIMIT[@]}"
gt_gregw gre "$GT_REMOTE"
ip -n "$P-gwa" link set gre0 mtu 1500
out=$(ip netns exec "$P-client" ping -6 -c 1 -W 5 -Mdo -s 1452 2001:2:0:3::2 2>&1 || true)
expect_match "gregw's ICMPv6: the client hears 'packet too big' with MTU 1456 from 2001:2:0:ff::1" "$out" "2001:2:0:ff::1.*mtu=1456"
expect_match "gregw's ICMPv6: the client's route learned 1456" "$(ip -n "$P-client" -6 route get 2001:2:0:3::2)" "mtu 1456"
pmtu_tcp client 2001:2:0:3::2 push server lan-b 1456 "gregw-ptb-tcp"
ip -n "$P-gwa" link set gre0 mtu 1456

log "--- PMTU with IPv6 inside: the kernel's ICMPv6 from its tunnel (server -> client, g0's MTU 1456)"
out=$(ip netns exec "$P-server" ping -6 -c 1 -W 5 -Mdo -s 1452 2001:2:0:1::2 2>&1 || true)
expect_match "the kernel's ICMPv6: the server hears 'packet too big' with MTU 1456 from the guest" "$out" "2001:2:0:3::1.*mtu=1456"
expect_match "the kernel's ICMPv6: the server's route learned 1456" "$(ip -n "$P-server" -6 route get 2001:2:0:1::2)" "mtu 1456"
pmtu_tcp server 2001:2:0:3::2 pull client lan-a 1456 "kernel-ptb-tcp"
expect_eq "PMTU: gregw dropped nothing but its own too big" "$(json_get "$(gw_stats gwa)" '{k: v for k, v in d["total"]["drops"].items() if v}')" \
	"{'tx_too_big': $(json_get "$(gw_stats gwa)" 'd["total"]["icmp_sent"]')}"
gw_stop gwa

# --- GRE-in-UDP over IPv6 against the kernel's fou, as the kernel makes it (encaplimit 4):
# the destination options header comes before UDP, so that gregw's UDP socket gets the
# datagrams; the kernel's tunnel MTU is 8 bytes less than gregw's own, which is told so.
guest_do "ip fou add port 4754 ipproto 47 -6 && ip fou show"
log "guest: $GUEST_OUT"
# The guest's GRO off on transit: with it on, Debian's 6.1 kernel loses bursts of one flow's
# TCP segments in fou (guest_gre.sh, tests/guest/README.md).
guest_do "ethtool -K transit gro off"
ENCAP=gre-udp
FOU=(encap fou encap-sport auto encap-dport 4754)
interop_case fou6 --mtu 1440 -- "${FOU[@]}" -- --no-key --no-seq --no-csum
# What each side puts on the wire, read by tshark from the audit's copy: the UDP source
# port and checksum, GRE's flags and protocol, and the outer IPv6 header's next header (the first
# of the frame's: an inner IPv6 header has one too).
udp_fields() { # src
	tshark -r "$TMP/fou6.pcap" -d udp.port==4754,gre -Y "ipv6.src == $1 && udp.dstport == 4754 && gre" \
		-T fields -e udp.srcport -e udp.checksum -e gre.flags_and_version -e gre.proto -e ipv6.nxt 2>/dev/null
}
k=$(udp_fields "$GT_REMOTE")
g=$(udp_fields "$GT_LOCAL")
expect_match "fou6: the kernel's frames are a destination options header, UDP to 4754 and a bare GRE header" \
	"$(echo "$k" | awk '{ split($5, n, ","); print $3, $4, n[1] }' | sort -u | tr '\n' ' ')" "^0x0000 0x0800 60 (0x0000 0x86dd 60 )?$"
expect_match "fou6: gregw's frames are UDP right after the fixed header and the same GRE header" \
	"$(echo "$g" | awk '{ split($5, n, ","); print $3, $4, n[1] }' | sort -u | tr '\n' ' ')" "^0x0000 0x0800 17 (0x0000 0x86dd 17 )?$"
expect_eq "fou6: neither side sends a zero UDP checksum over IPv6" "$(echo "$k$g" | awk '$2 == "0x0000"' | wc -l)" "0"
log "fou6: the kernel's UDP source ports $(echo "$k" | awk '{print $1}' | sort -n | uniq | tr '\n' ' ')"
gw_stop gwa

tr_stop
guest_stop
"$TOPO" down --prefix "$P" >/dev/null
expect_eq "no qemu process, no TAP device left" "$(guest_left)" ""
expect_nothing_left "$P" "at the end"
log "took $SECONDS s"
