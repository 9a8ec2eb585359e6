#!/bin/bash
# Plain GRE on packet sockets (--wire-tx packet; the TAP default sends what is not a whole
# superpacket so, and falls back to it): gregw sends whole frames to the next hop it looks up
# through rtnetlink and follows, inner checksums left to the device.
# Checked: the next hop is the peer's MAC once the kernel resolved it (the first packets take
# the IP path, whose sends make it do so); transfers both ways with their hashes equal, nearly
# every packet on the packet socket, no checksum error at the endpoints; a partial checksum
# completed by a receiving gregw without offloads; a neighbour entry replaced by hand is
# followed (a capture sees the new destination MAC), one deleted or a route removed sends
# on the IP path until they are back; the once-a-second probe on the IP path; and --wire-tx ip.
#
#  P-client --lan-a-- P-gwa [gregw] ==transit== [gregw] P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbwtx
MB=$((1 << 20))
[ "$GW_MODE" = gre ] || die "plain GRE with offloads only (GREGW_MODE $GW_MODE)"
MAC_B=""

# csum_errors HOST: TCP segments the host's kernel found with a wrong checksum.
csum_errors() { ip netns exec "$P-$1" nstat -saz TcpInCsumErrors | awk '/TcpInCsumErrors/ {print $2}'; }
# hop NAME EXPR: EXPR (Python, on h = the next_hop object of NAME's stats) is true now.
hop() { gw_true "$1" "(lambda h: $2)(d['next_hop'])"; }
ping_through() { ip netns exec "$P-client" ping -c "${1:-1}" -i 0.2 -W 2 198.18.3.2 >/dev/null; }

"$TOPO" up ras --prefix "$P" >/dev/null
MAC_B=$(ip -n "$P-gwb" -j link show transit | json_get "$(cat)" 'd[0]["address"]')

gw_pair4 "$P" --workers 2 --wire-tx packet
s=$(gw_stats gwa)
expect_eq "config: GRE leaves on packet sockets" "$(json_get "$s" 'd["config"]["wire_tx"]')" "packet"
expect_eq "config: inner checksums left to the device" "$(json_get "$s" 'd["config"]["tx_csum_offload"]')" "True"
# Nothing has resolved the peer yet: the first packets take the IP path, which resolves it.
poll 10 ping_through || fail "first ping through the tunnel"
poll 10 hop gwa "h['lladdr'] == '$MAC_B'" || fail "gwa's next hop never became gwb's MAC $MAC_B: $(json_get "$(gw_stats gwa)" 'd["next_hop"]')"
s=$(gw_stats gwa)
expect_eq "next hop: the device towards the peer" "$(json_get "$s" 'd["next_hop"]["dev"]')" "transit"
expect_eq "next hop: the peer itself, on the link" "$(json_get "$s" 'd["next_hop"]["via"]')" "198.18.0.2"
expect_eq "next hop: no reason for the IP path" "$(json_get "$s" 'd["next_hop"]["ip_path_why"]')" "None"
poll 10 hop gwb "h['lladdr'] is not None" || fail "gwb's next hop never resolved"

e0=$(csum_errors server)
e1=$(csum_errors client)
bulk_transfer "$P" 198.18.3.2 4 $((100 * MB))
bulk_transfer "$P" 198.18.1.2 4 $((100 * MB)) server client
expect_eq "no checksum error at the server" "$(csum_errors server)" "$e0"
expect_eq "no checksum error at the client" "$(csum_errors client)" "$e1"
for g in gwa gwb; do
	s=$(gw_stats "$g")
	expect_eq "$g dropped nothing" "$(json_get "$s" 'd["total"]["dropped"]')" "0"
	expect_eq "$g sent nearly all on the packet socket" "$(json_get "$s" 'd["total"]["wire_tx_ip"] * 100 < d["total"]["wire_tx_packets"]')" "True"
	log "$g $(json_get "$s" '{k: d["total"][k] for k in ("wire_tx_packets", "wire_tx_ip", "coalesced_superpackets")}')"
done

# The probe: one message a second on the IP path while the next hop is known.
ip0=$(json_get "$(gw_stats gwa)" 'd["total"]["wire_tx_ip"]')
ip netns exec "$P-client" ping -c 100 -i 0.1 -W 2 198.18.3.2 >/dev/null &
PING=$!
poll 10 gw_true gwa "d['total']['wire_tx_ip'] > $ip0" || fail "no probe on the IP path within 10 s"
log "ok: a probe on the IP path while the next hop is known"
stop_bg "$PING" INT ping

# A neighbour entry replaced by hand: followed, and the frames go to the new address (veth
# delivers them all the same; gwb's ring takes frames for other hosts too).
FAKE=02:00:5e:00:53:01
ip -n "$P-gwa" neigh replace 198.18.0.2 lladdr "$FAKE" dev transit nud permanent
poll 10 hop gwa "h['lladdr'] == '$FAKE' and h['state'] == 'permanent'" || fail "gwa did not follow the replaced neighbour: $(json_get "$(gw_stats gwa)" 'd["next_hop"]')"
ip netns exec "$P-gwb" tcpdump -i transit -n -e -U --immediate-mode -w "$TMP/mac.pcap" "ether dst $FAKE and ip proto 47" 2>"$TMP/tcpdump.err" &
TCPDUMP=$!
poll 30 grep -q "listening on" "$TMP/tcpdump.err" || die "tcpdump did not start: $(cat "$TMP/tcpdump.err")"
ping_through 3 || fail "ping through the tunnel to the replaced neighbour"
poll 30 pcap_has "$TMP/mac.pcap" "ether dst $FAKE" 3 || fail "the capture saw $(pcap_count "$TMP/mac.pcap" "ether dst $FAKE") GRE frames to $FAKE, not 3"
stop_bg "$TCPDUMP" INT tcpdump
log "ok: the replaced neighbour followed: GRE frames to $FAKE"

# The entry gone: the IP path, whose sends resolve the peer again, and back.
ip -n "$P-gwa" neigh del 198.18.0.2 dev transit
poll 10 hop gwa "h['lladdr'] is None and h['ip_path_why'] == 'neighbour not resolved'" || fail "gwa kept a next hop without a neighbour: $(json_get "$(gw_stats gwa)" 'd["next_hop"]')"
ping_through 3 || fail "ping through the tunnel while the neighbour resolves"
poll 10 hop gwa "h['lladdr'] == '$MAC_B'" || fail "gwa did not come back to gwb's MAC"
log "ok: the neighbour deleted: the IP path, then resolved again"

# No route to the peer: the IP path (whose sends fail: counted), and back with the route.
ip -n "$P-gwa" route del 198.18.0.0/24 dev transit
poll 10 hop gwa "h['ip_path_why'] == 'no route'" || fail "gwa kept a next hop without a route: $(json_get "$(gw_stats gwa)" 'd["next_hop"]')"
ip -n "$P-gwa" route add 198.18.0.0/24 dev transit src 198.18.0.1
poll 10 hop gwa "h['lladdr'] == '$MAC_B'" || fail "gwa did not come back with the route"
ping_through 3 || fail "ping through the tunnel with the route back"
log "ok: the route removed: the IP path, then the next hop again"
gw_stop gwa
gw_stop gwb

# A receiving gregw without offloads completes the checksums the sender left partial.
gw_a4 "$P" --workers 2 --wire-tx packet
gw_b4 "$P" --workers 2 --offload off --wire-tx packet
poll 10 ping_through || fail "ping through the tunnel, gwb without offloads"
e0=$(csum_errors server)
bulk_transfer "$P" 198.18.3.2 2 $((50 * MB))
expect_eq "gwb without offloads: no checksum error at the server" "$(csum_errors server)" "$e0"
expect_eq "gwb without offloads dropped nothing" "$(json_get "$(gw_stats gwb)" 'd["total"]["dropped"]')" "0"
gw_stop gwa
gw_stop gwb

# --wire-tx ip: the kernel's IP output sends every packet, as before packet sockets, the outer
# DS field and TTL from each send's control messages (IP_TOS, IP_TTL): here --ttl inherit.
gw_pair4 "$P" --workers 2 --wire-tx ip --ttl inherit
s=$(gw_stats gwa)
expect_eq "config: --wire-tx ip" "$(json_get "$s" 'd["config"]["wire_tx"]')" "ip"
expect_eq "config: --wire-tx ip completes every checksum" "$(json_get "$s" 'd["config"]["tx_csum_offload"]')" "False"
expect_eq "no next hop in the stats" "$(json_get "$s" '"next_hop" in d')" "False"
poll 10 ping_through || fail "ping through the tunnel with --wire-tx ip"
bulk_transfer "$P" 198.18.3.2 2 $((50 * MB))
expect_eq "--wire-tx ip: every packet on the IP path" "$(json_get "$(gw_stats gwa)" 'd["total"]["wire_tx_ip"] == d["total"]["wire_tx_packets"] > 0')" "True"
# Pings marked DSCP 46 and ECT(1), TTL 64 (63 once gwa forwarded them into gre0), as gwb's
# transit sees their outer headers: the inner DS field and TTL (--tos inherit, RFC 6040).
ip netns exec "$P-gwb" tcpdump -i transit -n -v -c 3 -U 'ip proto 47 and src 198.18.0.1' >"$TMP/ip-path.txt" 2>"$TMP/ip-path.err" &
cap=$!
poll 30 grep -q "listening on" "$TMP/ip-path.err" || die "tcpdump did not start: $(cat "$TMP/ip-path.err")"
ip netns exec "$P-client" ping -c 3 -i 0.2 -W 2 -Q 0xb9 198.18.3.2 >/dev/null || fail "marked pings through the tunnel"
wait_bg "$cap" 30 "tcpdump of the marked pings"
expect_eq "--wire-tx ip: the marked pings' outer headers" \
	"$(grep 'proto GRE' "$TMP/ip-path.txt" | grep -o 'tos [^ ]*, ttl [0-9]*' | sort | uniq -c | tr -s ' ')" " 3 tos 0xb9,ECT(1), ttl 63"
gw_stop gwa
gw_stop gwb

"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
