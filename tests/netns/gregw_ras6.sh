#!/bin/bash
# gregw on the IPv6 RAS topology: IPv6 in IPv6 GRE with a key; ping both ways; a verified
# transfer; and an IPv6 packet too big for the tunnel gets ICMPv6 "packet too big" back. gwb
# holds the superpackets it merges for their bursts (--coalesce-hold 200): its writes into TUN are
# counted, and the transfer stays intact. Then DSCP and ECN over IPv6 (RFC 2983, RFC 6040):
# tunbed-wire on gwa's transit audits TCP sessions marked DSCP 46 that negotiate ECN, and a
# UDP session of DSCP 10 and ECT(1), and flags nothing; then crafted GRE from gwa's address
# whose outer traffic class gwb decapsulates by RFC 6040's table (CE reaches an ECT(1) inner
# packet, CE over Not-ECT is dropped, ECT(1) over Not-ECT counted).
#
#  P-client 2001:2:0:1::2 --lan-a-- P-gwa [gregw gre0 2001:2:0:ff::1] ==transit 2001:2::1 <-> 2001:2::2== [gregw gre0 2001:2:0:ff::2] P-gwb --lan-b-- 2001:2:0:3::2 P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbgw6

"$TOPO" up ras6 --prefix "$P" >/dev/null
gw_start gwa "$P-gwa" --remote 2001:2::2 --addr6 2001:2:0:ff::1/64 --route 2001:2:0:3::/64 --key 9 --workers 2
gw_start gwb "$P-gwb" --remote 2001:2::1 --addr6 2001:2:0:ff::2/64 --route 2001:2:0:1::/64 --key 9 --workers 2 --coalesce-hold 200
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
expect_eq "gwb: --coalesce-hold in the config" "$(json_get "$b" 'd["config"]["coalesce_hold_us"]')" "200"
# Whatever was held went into TUN: every segment gwb took from the wire is written (the last
# ones of the connection's close may still be on their way when the stats above were taken).
poll 30 gw_true gwb 'd["total"]["wire_rx_packets"] == d["total"]["tun_tx_packets"]' ||
	fail "gwb: segments taken from the wire but not written into TUN: $(json_get "$(gw_stats gwb)" 'd["total"]["wire_rx_packets"] - d["total"]["tun_tx_packets"]')"

# DSCP and ECN over IPv6, audited on gwa's transit (--tos inherit and --ttl 64, gregw's
# defaults; RFC 6040's normal mode, tunbed-wire's).
WIRE="$TUNBED_BIN/tunbed-wire"
[ -x "$WIRE" ] || die "$WIRE not built"
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=1
tr_server "$P-server" 9400
rm -f "$TMP/tos6.ready"
ip netns exec "$P-gwa" "$WIRE" --iface transit --json --ready-file "$TMP/tos6.ready" \
	--local 2001:2::1 --remote 2001:2::2 --key 9 --no-seq --no-csum --expect-tos inherit \
	--expect-ttl 64 >"$TMP/tos6.json" 2>"$TMP/tos6.err" &
wpid=$!
poll 30 grep -qx ready "$TMP/tos6.ready" || die "tunbed-wire did not start: $(cat "$TMP/tos6.err")"
tr_client "$P-client" 2001:2:0:3::2 --udp --pps 100 --time 1 --dscp 10 --ecn ect1 --json
expect_eq "IPv6: marked UDP through the tunnel: exit status, nothing lost" "$TR_STATUS $(json_get "$TR_JSON" 'd["udp"]["lost"]')" "0 0"
usent=$(json_get "$TR_JSON" 'd["udp"]["sent"]')
tr_client "$P-client" 2001:2:0:3::2 --sessions 2 --bytes 4m --dscp 46 --ecn on --json
[ "$TR_STATUS" = 0 ] || log "IPv6 TCP with ECN: $(tail -2 "$TMP/client.err" | tr '\n' ' ') gwa drops $(json_get "$(gw_stats gwa)" '{k: v for k, v in d["total"]["drops"].items() if v}')"
expect_eq "IPv6: TCP with ECN through the tunnel: exit status, complete, ECN negotiated" "$TR_STATUS $(json_get "$TR_JSON" '(d["complete"], d["tcp"]["ecn_negotiated"])')" "0 (True, 2)"
stop_bg "$wpid" TERM tunbed-wire
expect_eq "IPv6: tunbed-wire exit status after SIGTERM" "$BG_STATUS" "0"
W=$(cat "$TMP/tos6.json")
log "IPv6 tos ($usent UDP datagrams sent): $(json_get "$W" 'd["directions"][0]["tos"]')"
expect_eq "IPv6: no frame flagged; gwa's frames carried the DSCP, ECT(1) (every UDP datagram) and ECT(0) copied" \
	"$(json_get "$W" '(lambda t: (d["violation_frames"], t["dscp_marked"] > 100, t["dscp_copied"] == t["dscp_marked"], t["ecn"]["ect1"]["ect1"] >= '"$usent"', t["ecn"]["ect0"]["ect0"] > 100))(d["directions"][0]["tos"])')" \
	"(0, True, True, True, True)"

# Decapsulation over IPv6 (RFC 6040, 4.2): GRE (in UDP too) from gwa's address with the outer
# traffic class set by the sending socket (IPV6_TCLASS; a capture on gwb's gre0 reads the inner
# packets), 20 each: CE over DSCP 10 and ECT(1), delivered CE; ECT(1) over Not-ECT, delivered
# and counted (ecn_alarms); CE over Not-ECT, dropped (ecn_ce_not_ect). The inner packets go to
# 2001:2:0:3::77, which gwb blackholes.
ip -n "$P-gwb" -6 route add blackhole 2001:2:0:3::77/128
b0=$(gw_stats gwb)
ip netns exec "$P-gwb" tcpdump -i gre0 -n -v -c 40 -U 'dst 2001:2:0:3::77' >"$TMP/decap6.txt" 2>"$TMP/decap6.err" &
cap=$!
poll 30 grep -q "listening on" "$TMP/decap6.err" || die "tcpdump on gwb's gre0 did not start: $(cat "$TMP/decap6.err")"
ip netns exec "$P-gwa" python3 - "$GW_ENCAP" <<'PY' || fail "sending the crafted IPv6 GRE"
import socket, struct, sys
src, dst = "2001:2::1", "2001:2::2"
isrc, idst = socket.inet_pton(socket.AF_INET6, "2001:2:0:1::77"), socket.inet_pton(socket.AF_INET6, "2001:2:0:3::77")
def inner(tclass):
    udp = struct.pack("!HHHH", 9, 9, 8 + 16, 0) + b"tunbed-decap6..."
    pseudo = isrc + idst + struct.pack("!IxxxB", len(udp), 17)
    b = pseudo + udp
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    udp = udp[:6] + struct.pack("!H", ~s & 0xFFFF or 0xFFFF) + udp[8:]
    return struct.pack("!IHBB", 6 << 28 | tclass << 20, len(udp), 17, 64) + isrc + idst + udp
gre = struct.pack("!HHI", 0x2000, 0x86DD, 9)  # key 9
for outer, itc in ((0x03, 0x29), (0x01, 0x28), (0x03, 0x28)):
    if sys.argv[1] == "gre-udp":
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        to = (dst, 4754)
    else:
        s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, 47)
        to = (dst, 0)
    s.bind((src, 0))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, outer)
    for _ in range(20):
        s.sendto(gre + inner(itc), to)
    s.close()
PY
wait_bg "$cap" 30 "tcpdump on gwb's gre0 waiting for the 40 crafted packets delivered"
poll 30 gw_true gwb "d['total']['drops']['ecn_ce_not_ect'] - $(json_get "$b0" 'd["total"]["drops"]["ecn_ce_not_ect"]') >= 20" ||
	fail "gwb did not drop the 20 CE over Not-ECT within 30 s"
b=$(gw_stats gwb)
expect_eq "IPv6: gwb dropped CE over Not-ECT, counted Not-ECT inside ECT(1), dropped nothing else" \
	"$(json_get "$b" 'd["total"]["drops"]["ecn_ce_not_ect"]') $(json_get "$b" 'd["total"]["ecn_alarms"]') $(json_get "$b" 'd["total"]["dropped"]')" \
	"$(($(json_get "$b0" 'd["total"]["drops"]["ecn_ce_not_ect"]') + 20)) $(($(json_get "$b0" 'd["total"]["ecn_alarms"]') + 20)) $(($(json_get "$b0" 'd["total"]["dropped"]') + 20))"
expect_eq "IPv6: gwb delivered into gre0, by inner traffic class: the outer CE on ECT(1) kept" \
	"$(grep -o 'class 0x[0-9a-f]*' "$TMP/decap6.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" " 20 class 0x28; 20 class 0x2b;"
tr_stop

gw_stop gwa
gw_stop gwb
"$TOPO" down ras6 --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
