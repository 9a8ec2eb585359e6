#!/bin/bash
# Interop with the Linux kernel's own GRE over IPv4: gregw in gwa, the kernel's ip_gre (and
# fou) in a qemu guest with Debian's kernel in gwb's place (guest_lib.sh). One boot, every
# case in turn, each with the guest's tunnel made anew and a new gregw:
#
#  - plain GRE, a key, sequence numbers (oseq/iseq), checksums (ocsum/icsum), and the
#    kernel's tos inherit and ttl inherit against gregw's --tos inherit (its default) and
#    --ttl inherit with sessions marked DSCP 46 that negotiate ECN, the audit expecting the
#    DSCP and TTL copied both ways: DF pings of the tunnel MTU both ways, IPv4 and IPv6
#    inside, tunbed-traffic --verify push and pull through both tunnels, the wire audit
#    (tunbed-wire on transit) clean both ways with the frames each side sent, every counter
#    of a drop zero on both sides;
#  - the kernel's DSCP and ECN with tos inherit, counted as the datasheet counts a gateway's
#    (gt_tos_probes): datagrams of DSCP 46 and ECT(0), ECT(1), CE through its encapsulation,
#    their outer headers on transit; crafted GRE packets with an outer CE around ECT(0),
#    ECT(1) and Not-ECT datagrams through its decapsulation, what reaches the server;
#  - what each side refuses: a wrong key, a checksum or a sequence number missing or not
#    asked for, counted by gregw's drop reasons and by the guest's g0 counters or its ICMP;
#  - PMTU: ICMP "fragmentation needed" from gregw and from the kernel's tunnel, and from
#    beyond each tunnel carried through the other, and the segment sizes TCP then sends;
#  - GRE-in-UDP (RFC 8086) against the kernel's fou on port 4754, with its framing checked.
#
#  P-client --lan-a-- P-gwa [gregw gre0] ==transit (TAP)== guest [kernel g0] --lan-b (TAP)-- P-server
#                           [tunbed-wire on transit]
# shellcheck source=guest_lib.sh
source "$(dirname "$0")/guest_lib.sh"
guest_test_init
new_prefix P tbkg
gt_up "$P"
tr_server "$P-server" 9400

interop_case plain -- -- --no-key --no-seq --no-csum
gw_stop gwa
interop_case key --key 7 -- key 7 -- --key 7 --no-seq --no-csum
gw_stop gwa
# One worker: the kernel's iseq drops a packet numbered below the last one it took, and
# gregw's workers number their batches from one counter, so that two workers' batches
# interleave on the wire (docs/gregw.md).
interop_case seq --seq --workers 1 -- iseq oseq -- --no-key --seq --no-csum
a=$(gw_stats gwa)
expect_eq "seq: gregw numbered and received, none lost, reordered or duplicated" \
	"$(json_get "$a" 'd["total"]["seq_packets"] > 0 and d["seq"]["lost"] == 0 and d["total"]["seq_reordered"] == 0 and d["total"]["seq_duplicate"] == 0')" "True"
gw_stop gwa
interop_case csum --csum -- icsum ocsum -- --no-key --no-seq --csum
gw_stop gwa
# The kernel's tos inherit and ttl inherit against gregw's --tos inherit --ttl inherit: every
# outer TTL the inner one both ways; then, on the same tunnels, the kernel's ECN counted.
GT_TOS_TTL=inherit
interop_tos tos inherit
guest_do "ip -d link show g0"
expect_match "tos inherit: the kernel's g0 inherits the TOS" "$(echo "$GUEST_OUT" | tr -s ' \n' ' ')" " tos inherit "
expect_match "tos inherit: the kernel's g0 inherits the TTL" "$(echo "$GUEST_OUT" | tr -s ' \n' ' ')" " ttl inherit "
gt_tos_probes
gw_stop gwa

log "--- a wrong key: gregw 7, the kernel 8"
gt_tunnel gre key 8
gt_gregw gre 198.18.0.2 --key 7
refusal_start
refused_ping client 198.18.3.2 "wrong key"
refused_ping server 198.18.1.2 "wrong key"
# The kernel finds no tunnel for key 7 (the fallback gre0 is down) and answers with ICMP
# port unreachable; g0 never sees the packets.
refusal_expect 'drops["bad_key"] >= 3 and g["packets"] == 0 and u >= 1' \
	"wrong key: gregw drops the kernel's pings (bad_key); the kernel answers gregw's with ICMP port unreachable, g0 receives nothing"
gw_stop gwa

log "--- a checksum missing: the kernel icsum ocsum, gregw none"
gt_tunnel gre icsum ocsum
gt_gregw gre 198.18.0.2
refusal_start
refused_ping client 198.18.3.2 "checksum missing"
refused_ping server 198.18.1.2 "checksum missing"
# The server's requests reach the client (gregw takes a checksum it did not ask for, and
# checks it); every packet of gregw's is a CRC error to the kernel.
refusal_expect 'g["crc_errors"] >= 6 and g["crc_errors"] == g["errors"] and drops["bad_csum"] == 0' \
	"checksum missing: the kernel counts gregw's packets as rx crc_errors"
gw_stop gwa

log "--- a checksum not asked for: gregw --csum, the kernel none"
gt_tunnel gre
gt_gregw gre 198.18.0.2 --csum
refusal_start
refused_ping client 198.18.3.2 "checksum not asked for"
refused_ping server 198.18.1.2 "checksum not asked for"
refusal_expect 'drops["no_csum"] >= 3 and g["crc_errors"] >= 3 and g["crc_errors"] == g["errors"]' \
	"checksum not asked for: gregw drops the kernel's packets (no_csum), the kernel drops gregw's checksummed ones (rx crc_errors)"
gw_stop gwa

log "--- checksums one way only: the kernel ocsum, gregw none"
gt_tunnel gre ocsum
gt_gregw gre 198.18.0.2
gt_ping client 198.18.3.2 56 "the kernel's checksums, gregw's none"
gt_ping server 198.18.1.2 56 "the kernel's checksums, gregw's none"
expect_eq "the kernel's checksums, gregw's none: gregw dropped nothing" "$(json_get "$(gw_stats gwa)" 'd["total"]["dropped"]')" "0"
gw_stop gwa

log "--- a sequence number missing: the kernel iseq oseq, gregw none"
gt_tunnel gre iseq oseq
gt_gregw gre 198.18.0.2
refusal_start
refused_ping client 198.18.3.2 "sequence number missing"
refused_ping server 198.18.1.2 "sequence number missing"
refusal_expect 'g["fifo_errors"] >= 6 and g["fifo_errors"] == g["errors"] and drops["no_seq"] == 0' \
	"sequence number missing: the kernel counts gregw's packets as rx fifo_errors"
gw_stop gwa

log "--- sequence numbers one way: gregw --seq, the kernel none"
gt_tunnel gre
gt_gregw gre 198.18.0.2 --seq
refusal_start
refused_ping client 198.18.3.2 "sequence number not sent"
refused_ping server 198.18.1.2 "sequence number not sent"
# The kernel takes sequence numbers it did not ask for; gregw wants them.
refusal_expect 'drops["no_seq"] >= 3 and g["errors"] == 0 and g["packets"] >= 3' \
	"sequence number not sent: gregw drops the kernel's packets (no_seq); the kernel takes gregw's numbered ones"
gw_stop gwa

log "--- sequence numbers the other way: the kernel oseq, gregw none"
gt_tunnel gre oseq
gt_gregw gre 198.18.0.2
gt_ping client 198.18.3.2 56 "the kernel's sequence numbers, gregw's none"
gt_ping server 198.18.1.2 56 "the kernel's sequence numbers, gregw's none"
expect_eq "the kernel's sequence numbers, gregw's none: gregw dropped nothing" "$(json_get "$(gw_stats gwa)" 'd["total"]["dropped"]')" "0"
gw_stop gwa

gt_tunnel gre
gt_gregw gre 198.18.0.2
log "--- PMTU: gregw's own ICMP (its gre0 raised to 1500 by hand: gregw must refuse)"
ip -n "$P-gwa" link set gre0 mtu 1500
out=$(ip netns exec "$P-client" ping -c 1 -W 5 -Mdo -s 1472 198.18.3.2 2>&1 || true)
expect_match "gregw's ICMP: the client hears 'fragmentation needed' with MTU 1476 from 198.19.0.1" "$out" "198.19.0.1.*mtu ?= ?1476"
poll 30 gw_true gwa 'd["total"]["icmp_sent"] >= 1' || fail "gregw did not count its ICMP error"
expect_match "gregw's ICMP: the client's route learned 1476" "$(ip -n "$P-client" route get 198.18.3.2)" "mtu 1476"
pmtu_tcp client 198.18.3.2 push server lan-b 1476 "gregw-icmp-tcp"
expect_match "gregw's ICMP: it told the TCP sender too" "$(json_get "$(gw_stats gwa)" 'd["total"]["icmp_sent"]')" "^([2-9]|[1-9][0-9]+)$"
ip -n "$P-gwa" link set gre0 mtu 1476

log "--- PMTU: the kernel's ICMP from its tunnel (server -> client, g0's MTU 1476)"
u0=$(gt_snmp Icmp OutDestUnreachs)
out=$(ip netns exec "$P-server" ping -c 1 -W 5 -Mdo -s 1472 198.18.1.2 2>&1 || true)
expect_match "the kernel's ICMP: the server hears 'fragmentation needed' with MTU 1476 from the guest" "$out" "198.18.3.1.*mtu ?= ?1476"
expect_match "the kernel's ICMP: the server's route learned 1476" "$(ip -n "$P-server" route get 198.18.1.2)" "mtu 1476"
pmtu_tcp server 198.18.3.2 pull client lan-a 1476 "kernel-icmp-tcp"
expect_eq "the kernel's ICMP: the guest sent them" "$(($(gt_snmp Icmp OutDestUnreachs) - u0 >= 2))" "1"

log "--- PMTU: the kernel's ICMP from beyond its tunnel, carried by its GRE to gregw (guest's lan-b MTU 1400)"
guest_do "ip link set lan-b mtu 1400"
out=$(ip netns exec "$P-client" ping -c 1 -W 5 -Mdo -s 1448 198.18.3.2 2>&1 || true)
expect_match "through the kernel's tunnel: the client hears 'fragmentation needed' with MTU 1400 from the guest" "$out" "198.19.0.2.*mtu ?= ?1400"
expect_match "through the kernel's tunnel: the client's route learned 1400" "$(ip -n "$P-client" route get 198.18.3.2)" "mtu 1400"
pmtu_tcp client 198.18.3.2 push server lan-b 1400 "kernel-icmp-through-tcp"
guest_do "ip link set lan-b mtu 1500"

log "--- PMTU: gwa's ICMP from beyond gregw, carried by gregw to the kernel's side (gwa's lan-a MTU 1400)"
ip -n "$P-gwa" link set lan-a mtu 1400
out=$(ip netns exec "$P-server" ping -c 1 -W 5 -Mdo -s 1448 198.18.1.2 2>&1 || true)
expect_match "through gregw's tunnel: the server hears 'fragmentation needed' with MTU 1400 from gwa" "$out" "198.19.0.1.*mtu ?= ?1400"
expect_match "through gregw's tunnel: the server's route learned 1400" "$(ip -n "$P-server" route get 198.18.1.2)" "mtu 1400"
pmtu_tcp server 198.18.3.2 pull client lan-a 1400 "gregw-icmp-through-tcp"
ip -n "$P-gwa" link set lan-a mtu 1500
expect_eq "PMTU: gregw dropped nothing but its own too big" "$(json_get "$(gw_stats gwa)" '{k: v for k, v in d["total"]["drops"].items() if v}')" "{'tx_too_big': $(json_get "$(gw_stats gwa)" 'd["total"]["icmp_sent"]')}"
gw_stop gwa

# --- GRE-in-UDP (RFC 8086) against the kernel's fou: received on 4754 as GRE, sent with
# fou's encapsulation to gregw's 4754.
guest_do "ip fou add port 4754 ipproto 47 && ip fou show"
log "guest: $GUEST_OUT"
# The guest's GRO off on transit: with it on, Debian's 6.1 kernel loses every burst of one
# flow's TCP segments in fou (a burst of 10 counts 1 Udp InDatagrams and 9 InErrors), from any
# sender: gregw's datagrams, and datagrams built by hand with a zero UDP checksum as fou itself
# sends them (tests/guest/README.md). A transfer then stalls; pings pass.
guest_do "ethtool -K transit gro off"
ENCAP=gre-udp
FOU=(encap fou encap-sport auto encap-dport 4754)
interop_case fou -- "${FOU[@]}" -- --no-key --no-seq --no-csum
# What each side puts in UDP, read by tshark from the audit's copy of the wire.
udp_fields() { # src
	tshark -r "$TMP/fou.pcap" -d udp.port==4754,gre -Y "ip.src == $1 && udp.dstport == 4754 && gre" \
		-T fields -e udp.srcport -e udp.checksum -e gre.flags_and_version -e gre.proto 2>/dev/null
}
k=$(udp_fields 198.18.0.2)
g=$(udp_fields 198.18.0.1)
expect_match "fou: the kernel's frames are UDP to 4754 holding a bare GRE header (flags 0, IPv4 or IPv6)" "$(echo "$k" | awk '{print $3, $4}' | sort -u | tr '\n' ' ')" "^0x0000 0x0800 (0x0000 0x86dd )?$"
expect_match "fou: gregw's frames hold the same" "$(echo "$g" | awk '{print $3, $4}' | sort -u | tr '\n' ' ')" "^0x0000 0x0800 (0x0000 0x86dd )?$"
log "fou: the kernel's UDP source ports $(echo "$k" | awk '{print $1}' | sort -n | uniq | tr '\n' ' '), checksums $(echo "$k" | awk '{print $2}' | sort -u | head -n 3 | tr '\n' ' ')"
log "fou: gregw's UDP source ports $(echo "$g" | awk '{print $1}' | sort -n | uniq | tr '\n' ' ')"
expect_eq "fou: the kernel sends a zero UDP checksum (fou without encap-csum)" "$(echo "$k" | awk '{print $2}' | sort -u)" "0x0000"
expect_eq "fou: gregw's UDP checksums are never zero" "$(echo "$g" | awk '$2 == "0x0000"' | wc -l)" "0"
expect_eq "fou: the kernel's source ports lie in its local port range (32768-60999), not all in RFC 8086's 49152-65535" \
	"$(echo "$k" | awk '$1 < 32768 || $1 > 60999 { bad++ } $1 < 49152 { low++ } END { print bad + 0, (low > 0) }')" "0 1"
expect_eq "fou: gregw's source ports lie in 49152-65535" "$(echo "$g" | awk '$1 < 49152 { n++ } END { print n + 0 }')" "0"
gw_stop gwa
interop_case fou-key-seq-csum --key 7 --seq --csum --workers 1 -- key 7 iseq oseq icsum ocsum "${FOU[@]}" -- --key 7 --seq --csum
gw_stop gwa

tr_stop
guest_stop
"$TOPO" down --prefix "$P" >/dev/null
expect_eq "no qemu process, no TAP device left" "$(guest_left)" ""
expect_nothing_left "$P" "at the end"
log "took $SECONDS s"
