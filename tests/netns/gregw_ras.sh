#!/bin/bash
# gregw on the RAS topology, IPv4 in IPv4 with key, sequence numbers and checksums: the
# routes of gwa and gwb go into the tunnel, ping works both ways through it, the counters
# show it carried the traffic, no ICMP "protocol unreachable" crosses transit, and SIGTERM
# stops both gateways cleanly.
#
#  P-client 198.18.1.2 --lan-a-- P-gwa [gregw gre0 198.19.0.1] ==transit (GRE key 7)== [gregw gre0 198.19.0.2] P-gwb --lan-b-- 198.18.3.2 P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbgw

"$TOPO" up ras --prefix "$P" >/dev/null
# Capture everything ICMP on transit, from both ends, for the whole test. --immediate-mode:
# otherwise libpcap (TPACKET_V3) hands packets over a ring block at a time, when the block
# fills or at its timeout (tcpdump's default 1 s), and what came last would still be in the
# kernel when tcpdump is stopped.
ip netns exec "$P-gwb" tcpdump -i transit -n -U --immediate-mode -w "$TMP/icmp.pcap" icmp 2>"$TMP/tcpdump.err" &
TCPDUMP=$!
poll 30 grep -q "listening on" "$TMP/tcpdump.err" || die "tcpdump did not start: $(cat "$TMP/tcpdump.err")"

# gwb's workers pinned in the order given (worker 0 on CPU 1), gwa's in the default order;
# gwa's under SCHED_BATCH (the default), gwb's normal threads.
gw_start gwa "$P-gwa" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.3.0/24 --key 7 --seq --csum --workers 2
gw_start gwb "$P-gwb" --remote 198.18.0.1 --addr 198.19.0.2/24 --route 198.18.1.0/24 --key 7 --seq --csum --workers 2 --cpus 1,0 --sched normal
expect_eq "gwa route into the tunnel" "$(json_get "$(ip -n "$P-gwa" -j route show 198.18.3.0/24)" 'd[0]["dev"]')" "gre0"
link=$(ip -n "$P-gwa" -j link show dev gre0)
expect_eq "gre0 mtu: 1500 - 20 - 16 ($GW_ENCAP)" "$(json_get "$link" 'd[0]["mtu"]')" "$((1464 - GW_UDP))"
expect_eq "gre0 is up" "$(json_get "$link" '"UP" in d[0]["flags"]')" "True"

ip netns exec "$P-client" ping -c 5 -i 0.1 -W 2 198.18.3.2 >/dev/null || fail "ping client -> server through the tunnel"
ip netns exec "$P-server" ping -c 5 -i 0.1 -W 2 198.18.1.2 >/dev/null || fail "ping server -> client through the tunnel"
ip netns exec "$P-client" ping -c 2 -i 0.1 -W 2 198.19.0.2 >/dev/null || fail "ping client -> gwb's tunnel address"
ip netns exec "$P-gwa" ping -c 2 -i 0.1 -W 2 198.19.0.2 >/dev/null || fail "ping gwa -> gwb over gre0"
# Outside the tunnel, for the capture to prove it sees ICMP on transit at all.
ip netns exec "$P-gwa" ping -c 3 -i 0.1 -W 2 198.18.0.2 >/dev/null || fail "ping gwa -> gwb on transit"

a=$(gw_stats gwa)
b=$(gw_stats gwb)
expect_eq "gwa encapsulated the pings" "$(json_get "$a" 'd["total"]["wire_tx_packets"] >= 12')" "True"
expect_eq "gwb decapsulated them" "$(json_get "$b" 'd["total"]["tun_tx_packets"] >= 12')" "True"
expect_eq "gwb dropped nothing" "$(json_get "$b" 'd["total"]["dropped"]')" "0"
expect_eq "gwa dropped nothing" "$(json_get "$a" 'd["total"]["dropped"]')" "0"
expect_eq "gwb saw no gap, reorder or duplicate" "$(json_get "$b" '(d["seq"]["lost"], d["seq"]["reordered"], d["seq"]["duplicate"])')" "(0, 0, 0)"
expect_eq "stats: config" "$(json_get "$a" '(d["config"]["key"], d["config"]["seq"], d["config"]["csum"], d["config"]["workers"], d["config"]["local"])')" "(True, True, True, 2, '198.18.0.1')"
expect_eq "stats: workers pinned" "$(json_get "$a" '[w["cpu"] for w in d["workers"]]')" "[0, 1]"
expect_eq "stats: --cpus 1,0 pins in that order" "$(json_get "$b" '[w["cpu"] for w in d["workers"]]')" "[1, 0]"
# The scheduling policy of each worker thread, as the kernel has it (chrt reads it back).
policies() { # stats-json
	local tid out=()
	for tid in $(json_get "$1" '" ".join(str(w["tid"]) for w in d["workers"])'); do
		out+=("$(chrt -p "$tid" | sed -n 's/.*scheduling policy: //p')")
	done
	echo "${out[*]}"
}
expect_eq "--sched batch (default): config and the workers' policy" "$(json_get "$a" 'd["config"]["sched"]') $(policies "$a")" "batch SCHED_BATCH SCHED_BATCH"
expect_eq "--sched normal: config and the workers' policy" "$(json_get "$b" 'd["config"]["sched"]') $(policies "$b")" "normal SCHED_OTHER SCHED_OTHER"
# Per-worker CPU time: every worker has it and its last CPU; on each gateway one worker at
# least moved the pings, and every one that moved packets has used CPU time (its thread's own
# clock, in nanoseconds: only a thread that never ran reads 0).
cpu_times() { # stats-json
	json_get "$1" '(lambda moved: (len(moved) > 0, all(w["cpu_s"] > 0 for w in moved), all(w["cpu_s"] >= 0 and "last_cpu" in w for w in d["workers"])))([w for w in d["workers"] if w["tun_rx_packets"] + w["wire_rx_packets"] > 0])'
}
expect_eq "stats: per-worker CPU time (gwa): some worker moved packets, each that did used CPU, all report it" "$(cpu_times "$a")" "(True, True, True)"
expect_eq "stats: per-worker CPU time (gwb)" "$(cpu_times "$b")" "(True, True, True)"
log "workers (packets in from TUN and wire, cpu_s): gwa $(json_get "$a" '[(w["tun_rx_packets"] + w["wire_rx_packets"], w["cpu_s"]) for w in d["workers"]]'), gwb $(json_get "$b" '[(w["tun_rx_packets"] + w["wire_rx_packets"], w["cpu_s"]) for w in d["workers"]]')"
flows=$(gw_stats gwa flows)
expect_eq "flows: the ICMP flow client <-> server is known" "$(json_get "$flows" 'any(f["proto"] == 1 and {f["a"], f["b"]} == {"198.18.1.2", "198.18.3.2"} for f in d["flows"])')" "True"

gw_stop gwa
gw_stop gwb
expect_eq "final summary on stdout" "$(json_get "$(tail -1 "$TMP/gwa.out")" '(d["final"], d["total"]["wire_tx_packets"] >= 12)')" "(True, True)"
if ip -n "$P-gwa" link show gre0 >/dev/null 2>&1; then fail "gre0 outlived gregw"; fi

# The pings on transit went last: once their 3 echo requests are in the file, whatever ICMP
# crossed transit before them is too. Only then is tcpdump stopped.
poll 30 pcap_has "$TMP/icmp.pcap" 'icmp[0] == 8' 3 ||
	fail "the capture on transit did not get the 3 echo requests of the transit pings within 30 s ($(pcap_count "$TMP/icmp.pcap" 'icmp[0] == 8') so far)"
stop_bg "$TCPDUMP" INT tcpdump
echoes=$(pcap_count "$TMP/icmp.pcap" 'icmp[0] == 8')
unreach=$(pcap_count "$TMP/icmp.pcap" 'icmp[0] == 3 and icmp[1] == 2')
expect_eq "the capture saw the echo requests on transit" "$echoes" "3"
expect_eq "ICMP protocol-unreachable on transit" "$unreach" "0"

"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
