#!/bin/bash
# gregw's tunnels to two peers (docs/gregw.md "Many tunnels"), plain GRE and GRE-in-UDP
# (GREGW_MODE): gwa has 8 tunnels, 4 to gwb's 198.18.0.2 and 4 to 198.18.0.3, a second address
# of gwb's transit where a second gregw answers (its own TUN, gre1); the two peers use the same
# keys 1 to 4, so only the outer source tells gwa's tunnels apart. Each tunnel carries a
# verified duplex transfer between its sites; gwa's per-tunnel counters equal those of the
# gregw at the tunnel's other end, both ways. Plain GRE: the first peer's packets leave gwa as
# frames to its next hop, the second's on the IP path (wire_tx_ip). GRE-in-UDP: the first
# peer's superpackets whole through gwa's TAP (gwb1 reads them whole), the second peer's cut
# and sent from the same sockets as the rest (the second's messages name it; UDP_SEGMENT),
# gwa receiving from its packet ring (--wire-rx ring), and a datagram from a third address of
# gwb's is gwa's unknown_peer. A tunnel added at run time to the second peer with key 5
# carries a ping.
#
#  P-client              P-gwa [gregw, 8 tunnels]                 P-gwb [gregw gre0 .2] [gregw gre1 .3]     P-server
#  198.18.64.i --lan-a-- 198.18.1.1  198.18.0.1 ==transit== 198.18.0.2, 198.18.0.3  198.18.3.1 --lan-b-- 198.18.128.i
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbtunp

"$TOPO" up tunnels --prefix "$P" >/dev/null
ip -n "$P-gwb" addr add 198.18.0.3/24 dev transit
# Tunnel i (0 to 7): key i % 4 + 1, to 198.18.0.2 for i < 4, else 198.18.0.3; the sites of
# the bed's tunnel i.
tunnel() { # file i peer
	printf '[tunnel t%d]\npeer = %s\nkey = %d\nprefixes = %s\nencap = %s\n' "$2" "$3" \
		$(($2 % 4 + 1)) "$4" "$GW_ENCAP" >>"$1"
}
# Plain GRE: gwa's frames on packet sockets. GRE-in-UDP: gwa takes the peers' datagrams
# from the packet ring (--wire-rx ring: the outer source read from the frame, a UDP_SEGMENT
# burst cut there), the gwb gregws from their sockets.
wire_tx=(--wire-tx packet)
[ "$GW_ENCAP" = gre ] || wire_tx=(--wire-rx ring)
for i in 0 1 2 3 4 5 6 7; do
	if [ "$i" -lt 4 ]; then peer=198.18.0.2 b=gwb1; else peer=198.18.0.3 b=gwb2; fi
	tunnel "$TMP/gwa.tunnels" "$i" "$peer" "198.18.128.$i/32"
	tunnel "$TMP/$b.tunnels" "$i" 198.18.0.1 "198.18.64.$i/32"
	ip -n "$P-client" route add "198.18.128.$i/32" via 198.18.1.1 src "198.18.64.$i"
done
gw_start gwa "$P-gwa" --tunnels "$TMP/gwa.tunnels" --addr 198.19.0.1/24 --workers 2 \
	"${wire_tx[@]}"
gw_start gwb1 "$P-gwb" --tunnels "$TMP/gwb1.tunnels" --local 198.18.0.2 --addr 198.19.0.2/24 \
	--workers 1
gw_start gwb2 "$P-gwb" --tunnels "$TMP/gwb2.tunnels" --local 198.18.0.3 --tun gre1 \
	--addr 198.19.1.2/24 --workers 1

tr_server "$P-server" 9400
for i in 0 1 2 3 4 5 6 7; do
	tr_client "$P-client" "198.18.128.$i" --port 9400 --pattern duplex --bytes 256k --verify --json
	expect_eq "tunnel t$i: a verified transfer" \
		"$TR_STATUS $(json_get "$TR_JSON" '(d["complete"], d["tcp"]["verify"]["mismatches"])') $(sessions_equal "$TR_JSON")" \
		"0 (True, 0) True"
done
tr_stop

# gwa's tunnels against the gregw at each one's other end: what one put in, the other took out.
a=$(gw_stats gwa "tunnels")
for i in 0 1 2 3 4 5 6 7; do
	if [ "$i" -lt 4 ]; then b=gwb1; else b=gwb2; fi
	mine=$(json_get "$a" '[(x["tx_packets"], x["tx_bytes"], x["rx_packets"], x["rx_bytes"]) for x in d["list"] if x["name"] == "t'"$i"'"][0]')
	theirs=$(json_get "$(gw_stats "$b" tunnels)" '[(x["rx_packets"], x["rx_bytes"], x["tx_packets"], x["tx_bytes"]) for x in d["list"] if x["name"] == "t'"$i"'"][0]')
	expect_eq "t$i: gwa's counters are $b's, both ways" "$mine" "$theirs"
	expect_eq "t$i: it carried packets" "$(json_get "$a" '[x["tx_packets"] > 0 for x in d["list"] if x["name"] == "t'"$i"'"][0]')" "True"
done
expect_eq "gwa: nothing dropped but tx_no_tunnel" \
	"$(json_get "$(gw_stats gwa)" 'd["total"]["dropped"] == d["total"]["drops"]["tx_no_tunnel"]')" "True"
for b in gwb1 gwb2; do
	expect_eq "$b: the other's packets, to the other address, are all it dropped (unknown_peer)" \
		"$(json_get "$(gw_stats "$b")" '(d["total"]["dropped"] == d["total"]["drops"]["unknown_peer"], d["total"]["drops"]["bad_key"])')" \
		"(True, 0)"
done
s=$(gw_stats gwa)
if [ "$GW_ENCAP" = gre ]; then
	expect_eq "gwa: frames to the first peer's next hop, the IP path for the second" \
		"$(json_get "$s" '(d["config"]["wire_tx"], 0 < d["total"]["wire_tx_ip"] < d["total"]["wire_tx_packets"])')" \
		"('packet', True)"
else
	# The first peer's superpackets go whole through gwa's TAP (the default where the kernel
	# has it), which gwb1 reads whole (udp_whole_reads); the second peer's are cut (the TAP's
	# frames follow the first peer's next hop): gwb2 reads none whole.
	gro_peers="gwb1 gwb2"
	if [ "$(json_get "$s" 'd["config"]["wire_tx"]')" = tap ]; then
		gro_peers=gwb2
		expect_eq "gwa: superpackets through the TAP; gwb1 read them whole, gwb2 none" \
			"$(json_get "$s" 'd["total"]["tap_writes"] > 0'), $(json_get "$(gw_stats gwb1)" 'd["total"]["udp_whole_reads"] > 0'), $(json_get "$(gw_stats gwb2)" 'd["total"]["udp_whole_reads"]')" \
			"True, True, 0"
	fi
	# veth carries a UDP_SEGMENT send whole, and a socket with UDP_GRO takes it so: each
	# peer's gregw read superpackets of gwa's cut for it (where the kernel offers both).
	if [ "$(json_get "$s" 'd["config"]["udp_gso"]')" = True ]; then
		expect_eq "gwa: superpackets sent (UDP_SEGMENT)" \
			"$(json_get "$s" 'd["total"]["udp_gso_sends"] > 0')" "True"
		for b in $gro_peers; do
			if [ "$(json_get "$(gw_stats "$b")" 'd["config"]["udp_gro"]')" = True ]; then
				expect_eq "$b: gwa's superpackets came whole (UDP_GRO)" \
					"$(json_get "$(gw_stats "$b")" 'd["total"]["udp_gro_reads"] > 0')" "True"
			fi
		done
	fi
	# ... and the peers' superpackets came to gwa's ring whole, cut there (their source
	# read from the frame).
	if [ "$(json_get "$(gw_stats gwb2)" 'd["config"]["udp_gso"]')" = True ]; then
		expect_eq "gwa: the peers' superpackets cut at the ring" \
			"$(json_get "$s" '(d["config"]["wire_rx"], d["total"]["udp_gro_reads"] > 0)')" "('ring', True)"
	fi
	# Any source may send to the port: the tunnel table, not the socket or the ring, refuses
	# a stranger (key 1 is both peers' t0 and t4's).
	ip -n "$P-gwb" addr add 198.18.0.4/24 dev transit
	stranger() { # gateway address: sends it one GRE-in-UDP datagram from 198.18.0.4
		ip netns exec "$P-gwb" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.4", 0))
s.sendto(bytes([0x20, 0, 8, 0, 0, 0, 0, 1]) + bytes(28), (sys.argv[1], 4754))' "$2"
	}
	for g in gwa:198.18.0.1 gwb1:198.18.0.2; do
		u0=$(json_get "$(gw_stats "${g%%:*}")" 'd["total"]["drops"]["unknown_peer"]')
		stranger "${g%%:*}" "${g#*:}"
		if poll 10 gw_true "${g%%:*}" 'd["total"]["drops"]["unknown_peer"] == '"$((u0 + 1))"; then
			log "ok: ${g%%:*}: a datagram from 198.18.0.4, no tunnel's peer, is unknown_peer"
		else
			fail "${g%%:*}: a datagram from 198.18.0.4, no tunnel's peer, was not unknown_peer"
		fi
	done
fi

# A tunnel to the second peer added at run time (its routes the operator's), with a key
# neither peer had: it carries a ping at once.
ip -n "$P-gwa" route add 198.18.128.8/32 dev gre0
ip -n "$P-gwb" route add 198.18.64.8/32 dev gre1
expect_match "gwa: added to the second peer" \
	"$("$GREGW" ctl "${GW_SOCK[gwa]}" "add t8 peer = 198.18.0.3; key = 5; prefixes = 198.18.128.8/32; encap = $GW_ENCAP")" '"changed": "add"'
expect_match "gwb2: added" \
	"$("$GREGW" ctl "${GW_SOCK[gwb2]}" "add t8 peer = 198.18.0.1; key = 5; prefixes = 198.18.64.8/32; encap = $GW_ENCAP")" '"changed": "add"'
ip netns exec "$P-client" ping -c 1 -W 2 -I 198.18.64.8 198.18.128.8 >/dev/null ||
	fail "no ping through the tunnel added to the second peer"
expect_eq "gwb2: the ping came through t8" \
	"$(json_get "$(gw_stats gwb2 "tunnels")" '[x["rx_packets"] for x in d["list"] if x["name"] == "t8"][0]')" "1"

gw_stop gwa
gw_stop gwb1
gw_stop gwb2
"$TOPO" down tunnels --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
