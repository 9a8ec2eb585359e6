#!/bin/bash
# tunbed-traffic's --dscp and --ecn as the wire shows them (tcpdump on the server's end,
# tshark reading the DS field): UDP datagrams carry the DSCP and the ECN codepoint asked, each
# of the four by name and on/off, over IPv4 and IPv6; TCP data segments carry the client's
# DSCP one way and the server's the other, with ECT(0) both ways once the client's namespace
# asks for ECN (net.ipv4.tcp_ecn = 1), which the JSON's ecn_negotiated counts; with the
# namespace's default (2: ECN answered, never asked) --ecn on ends with one line, exit 1.
#
#  P-client 198.18.1.1 2001:2:0:1::1 ---wire (tcpdump)--- 198.18.1.2 2001:2:0:1::2 P-server
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbtos
command -v tshark >/dev/null || die "tshark is not installed (scripts/bootstrap installs it)"

"$TOPO" up direct --prefix "$P" >/dev/null
tr_server "$P-server" 9400 --dscp 12

# capture NAME: tcpdump on the server's end of the wire, packet by packet, into NAME.pcap.
capture() {
	ip netns exec "$P-server" tcpdump -i wire -n -s 128 -U --immediate-mode -w "$TMP/$1.pcap" \
		port 9400 2>"$TMP/$1.err" &
	CAPTURE=$!
	poll 30 grep -q "listening on" "$TMP/$1.err" || die "tcpdump did not start: $(cat "$TMP/$1.err")"
}

# ds_of FILE FILTER: the DS fields of the matching packets, as DSCP/ECN with their counts
# ("46/1 x10, 10/3 x10"), by value.
ds_of() {
	tshark -r "$1" -Y "$2" -T fields -e ip.dsfield.dscp -e ip.dsfield.ecn \
		-e ipv6.tclass.dscp -e ipv6.tclass.ecn 2>/dev/null |
		awk '{ print $1 "/" $2 }' | sort -t/ -n -k1,1 -k2,2 | uniq -c |
		awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }'
}

# 1. UDP: each run its own DSCP, so that one capture tells them apart; ECN by every name.
# (ECN codepoints: Not-ECT 0, ECT(1) 1, ECT(0) 2, CE 3.)
capture udp
want=""
sent_all=0
for run in "1 not-ect 0" "2 ect0 2" "3 ect1 1" "4 ce 3" "5 on 2" "6 off 0"; do
	read -r dscp ecn cp <<<"$run"
	tr_client "$P-client" 198.18.1.2 --udp --pps 40 --time 0.5 --dscp "$dscp" --ecn "$ecn" --json
	expect_eq "UDP --dscp $dscp --ecn $ecn: exit status, config" "$TR_STATUS $(json_get "$TR_JSON" '(d["config"]["dscp"], d["config"]["ecn"])')" "0 ($dscp, '$ecn')"
	sent=$(json_get "$TR_JSON" 'd["udp"]["sent"]')
	sent_all=$((sent_all + sent))
	want="$want${want:+, }$dscp/$cp x$sent"
done
tr_client "$P-client" 2001:2:0:1::2 --udp --pps 40 --time 0.5 --dscp 46 --ecn ect1 --json
expect_eq "UDP over IPv6: exit status" "$TR_STATUS" "0"
sent6=$(json_get "$TR_JSON" 'd["udp"]["sent"]')
poll 30 pcap_has "$TMP/udp.pcap" "udp and dst port 9400" $((sent_all + sent6)) ||
	fail "tcpdump did not see the $((sent_all + sent6)) datagrams sent within 30 s"
stop_bg "$CAPTURE" INT tcpdump
expect_eq "UDP over IPv4: every datagram with the DSCP and codepoint of its run" "$(ds_of "$TMP/udp.pcap" "ip && udp.dstport == 9400")" "$want"
expect_eq "UDP over IPv6: the traffic class, DSCP 46 and ECT(1)" "$(ds_of "$TMP/udp.pcap" "ipv6 && udp.dstport == 9400")" "46/1 x$sent6"

# 2. TCP with ECN asked by the client's namespace: data segments (longer than any hello or
# control message) ECT(0), the client's DSCP 10 towards the server, the server's 12 back.
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=1
capture tcp
tr_client "$P-client" 198.18.1.2 --sessions 2 --time 0.5 --pattern duplex --dscp 10 --ecn on --json
expect_eq "TCP --ecn on: exit status, complete, sessions that negotiated ECN" "$TR_STATUS $(json_get "$TR_JSON" '(d["complete"], d["tcp"]["ecn_negotiated"], d["config"]["ecn"])')" "0 (True, 2, 'on')"
tr_client "$P-client" 2001:2:0:1::2 --sessions 1 --time 0.3 --pattern duplex --dscp 10 --ecn on --json
expect_eq "TCP over IPv6 --ecn on: exit status, ECN negotiated" "$TR_STATUS $(json_get "$TR_JSON" 'd["tcp"]["ecn_negotiated"]')" "0 1"
# A datagram after the sessions, on the same link: once the capture holds it, it holds
# every segment sent before it either way.
tr_client "$P-client" 198.18.1.2 --udp --pps 10 --time 0.1 --json
poll 30 pcap_has "$TMP/tcp.pcap" "udp and dst port 9400" 1 || fail "tcpdump did not see the datagram after the sessions within 30 s"
stop_bg "$CAPTURE" INT tcpdump
# Retransmitted segments go Not-ECT (RFC 3168, 6.1.5): ECT(0) on the others, Not-ECT at most
# on those, the DSCP on all.
data="tcp.len > 1000"
expect_match "TCP over IPv4, client to server: DSCP 10, ECT(0)" "$(ds_of "$TMP/tcp.pcap" "$data && ip.src == 198.18.1.1")" "^(10/0 x[0-9]+, )?10/2 x[0-9]+$"
expect_match "TCP over IPv4, server to client: DSCP 12, ECT(0)" "$(ds_of "$TMP/tcp.pcap" "$data && ip.src == 198.18.1.2")" "^(12/0 x[0-9]+, )?12/2 x[0-9]+$"
expect_match "TCP over IPv6, client to server: DSCP 10, ECT(0)" "$(ds_of "$TMP/tcp.pcap" "$data && ipv6.src == 2001:2:0:1::1")" "^(10/0 x[0-9]+, )?10/2 x[0-9]+$"
expect_match "TCP over IPv6, server to client: DSCP 12, ECT(0)" "$(ds_of "$TMP/tcp.pcap" "$data && ipv6.src == 2001:2:0:1::2")" "^(12/0 x[0-9]+, )?12/2 x[0-9]+$"
log "TCP's DS fields: $(ds_of "$TMP/tcp.pcap" "$data")"

# 3. The namespace's default answers ECN and never asks for it: --ecn on cannot be had.
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=2
expect_refusal "TCP --ecn on, tcp_ecn 2" 1 "tunbed-traffic: --ecn on: 2 of 2 sessions negotiated no ECN \\(net.ipv4.tcp_ecn = 1 in the client's namespace asks for it\\)" \
	ip netns exec "$P-client" "$TRAFFIC" client 198.18.1.2 --sessions 2 --time 0.3 --ecn on
tr_client "$P-client" 198.18.1.2 --sessions 2 --time 0.3 --json
expect_eq "TCP without --ecn, tcp_ecn 2: no ECN, complete" "$TR_STATUS $(json_get "$TR_JSON" '(d["complete"], d["tcp"]["ecn_negotiated"], d["config"]["ecn"], d["config"]["dscp"])')" "0 (True, 0, 'off', 0)"

tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
