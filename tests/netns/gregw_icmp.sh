#!/bin/bash
# The tunnel MTU, enforced and announced over IPv4: a DF packet too big for the tunnel gets
# ICMP "fragmentation needed" with the tunnel MTU from gregw, and --mss-clamp makes TCP SYNs
# announce a segment size that fits, in both directions.
#
#  P-client 198.18.1.2 --lan-a-- P-gwa [gregw gre0 198.19.0.1, mss-clamp] ==transit== [gregw, mss-clamp] P-gwb --lan-b (capture)-- 198.18.3.2 P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbicmp
MTU=$((1476 - GW_UDP))

"$TOPO" up ras --prefix "$P" >/dev/null
gw_pair4 "$P" --mss-clamp

# gre0 takes 1500 bytes, the tunnel carries 1476 (1468 over UDP): the excess must be refused
# with ICMP.
ip -n "$P-gwa" link set gre0 mtu 1500
out=$(ip netns exec "$P-client" ping -c 1 -W 2 -M "do" -s 1472 198.18.3.2 2>&1 || true)
expect_match "the client hears 'fragmentation needed' from gregw" "$out" "198.19.0.1.*(Frag needed|mtu ?= ?$MTU)"
# gregw counts the ICMP error after writing it: the ping may have it first.
poll 30 gw_true gwa 'd["total"]["drops"]["tx_too_big"] >= 1 and d["total"]["icmp_sent"] >= 1' ||
	fail "gwa did not count the packet too big and its ICMP error"
a=$(gw_stats gwa)
expect_eq "gwa: one too big" "$(json_get "$a" 'd["total"]["drops"]["tx_too_big"]')" "1"
expect_eq "gwa: one ICMP sent" "$(json_get "$a" 'd["total"]["icmp_sent"]')" "1"
expect_match "client learned the tunnel MTU" "$(ip -n "$P-client" route get 198.18.3.2)" "mtu $MTU"
ip netns exec "$P-client" ping -c 2 -i 0.1 -W 2 -M "do" -s $((MTU - 28)) 198.18.3.2 >/dev/null || fail "ping within the tunnel MTU"
# Without DF the packet is dropped and counted, but no ICMP goes back.
ip netns exec "$P-client" ip route flush cache
ip -n "$P-client" route del 198.18.3.0/24
ip -n "$P-client" route add 198.18.3.0/24 via 198.18.1.1
ip netns exec "$P-client" ping -c 1 -W 1 -M dont -s 1472 198.18.3.2 >/dev/null 2>&1 || true
# Nothing comes back to wait for: wait for the count (then check that it is exactly that).
poll 30 gw_true gwa 'd["total"]["drops"]["tx_too_big"] >= 2' || fail "gwa did not count the non-DF packet too big"
a=$(gw_stats gwa)
expect_eq "gwa: a non-DF packet too big is dropped" "$(json_get "$a" 'd["total"]["drops"]["tx_too_big"]')" "2"
expect_eq "gwa: still one ICMP" "$(json_get "$a" 'd["total"]["icmp_sent"]')" "1"
ip -n "$P-gwa" link set gre0 mtu "$MTU"

# MSS clamping: the SYN leaves the client with 1460 and reaches the server with MTU - 40.
# --immediate-mode: the two SYNs are handed over as they come, not with a ring block at
# its timeout; tcpdump exits by itself after them (-c 2).
ip netns exec "$P-server" tcpdump -i lan-b -n -v -U --immediate-mode -c 2 -w "$TMP/syn.pcap" 'tcp[tcpflags] & tcp-syn != 0' 2>"$TMP/tcpdump.err" &
TCPDUMP=$!
poll 30 grep -q "listening on" "$TMP/tcpdump.err" || die "tcpdump did not start: $(cat "$TMP/tcpdump.err")"
bulk_transfer "$P" 198.18.3.2 1 $((1 << 20))
wait_bg "$TCPDUMP" 30 "tcpdump on lan-b waiting for the SYN and the SYN-ACK"
expect_eq "tcpdump saw the SYN and the SYN-ACK and exited 0" "$BG_STATUS $(pcap_count "$TMP/syn.pcap" 'tcp[tcpflags] & tcp-syn != 0')" "0 2"
syns=$(tcpdump -r "$TMP/syn.pcap" -n -v 2>/dev/null)
expect_match "the server sees MSS $((MTU - 40)) in the SYN" "$syns" "198.18.1.2.* > 198.18.3.2.*mss $((MTU - 40))"
expect_match "the server's SYN-ACK leaves with MSS 1460" "$syns" "198.18.3.2.* > 198.18.1.2.*mss 1460"
b=$(gw_stats gwb)
a=$(gw_stats gwa)
expect_eq "gwa clamped the SYN" "$(json_get "$a" 'd["total"]["mss_clamped"]')" "1"
expect_eq "gwb clamped the SYN-ACK" "$(json_get "$b" 'd["total"]["mss_clamped"]')" "1"

gw_stop gwa
gw_stop gwb
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
