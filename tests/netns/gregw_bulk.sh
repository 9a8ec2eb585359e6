#!/bin/bash
# gregw carries bulk TCP intact: 200 MB with 1 flow and with 16 flows through 2 workers on
# each gateway, every byte checked (SHA-256 on both sides); each flow is handled by a single
# worker on each gateway, in both directions, and the receiver counts no reordering (all
# through the flow queue, --fair-queue on by default). Again with --aqm codel at a tiny
# target: CoDel drops, every byte still arrives; CoDel marks CE on sessions that negotiated
# ECN instead (none of their packets dropped) while a Not-ECT UDP session beside them, through
# one worker, loses its datagrams to it; and with --fair-queue off, first in, first
# out, every byte intact. Over GRE-in-UDP,
# once more with UDP_SEGMENT refused at run time (a preloaded fault).
#
#  P-client [bulk.py client] --lan-a-- P-gwa [gregw, 2 workers] ==transit (GRE, seq)== [gregw, 2 workers] P-gwb --lan-b-- [bulk.py server] P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbbulk
MB=$((1 << 20))

"$TOPO" up ras --prefix "$P" >/dev/null
gw_pair4 "$P" --seq --workers 2

# One worker per flow on each gateway: both directions of every TCP flow in one table. (The
# TUN device and the receiving side both pick the worker through one flow table:
# gateway/steer.h, docs/gregw.md.)
one_worker_per_flow() { # gateway-name
	python3 - "$(gw_stats "$1" flows)" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
workers = {}
for f in d["flows"]:
    if f["proto"] == 6 and 9000 in (f["a_port"], f["b_port"]):
        workers.setdefault((f["a"], f["a_port"], f["b"], f["b_port"]), set()).add(f["worker"])
print(bool(workers) and all(len(w) == 1 for w in workers.values()))
PY
}

bulk_transfer "$P" 198.18.3.2 1 $((200 * MB))
expect_eq "1 flow: one worker per gateway (gwa)" "$(one_worker_per_flow gwa)" "True"
expect_eq "1 flow: one worker per gateway (gwb)" "$(one_worker_per_flow gwb)" "True"

bulk_transfer "$P" 198.18.3.2 16 $((200 * MB))
expect_eq "16 flows: one worker per flow (gwa)" "$(one_worker_per_flow gwa)" "True"
expect_eq "16 flows: one worker per flow (gwb)" "$(one_worker_per_flow gwb)" "True"
# The flow table (gateway/steer.h) hands new flows to the workers in turn: the first
# transfer's flow and these 16, 17 flows in turn, are 9 and 8 on each gateway (a hash splits
# them so about one time in three).
flows_by_worker() { # gateway-name
	python3 - "$(gw_stats "$1" flows)" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
n = {}
for f in d["flows"]:
    if f["proto"] == 6 and 9000 in (f["a_port"], f["b_port"]):
        n[f["worker"]] = n.get(f["worker"], 0) + 1
print(sorted(n.values()))
PY
}
expect_eq "steering by the flow table" "$(json_get "$(gw_stats gwa)" 'd["config"]["steering"]'), $(json_get "$(gw_stats gwb)" 'd["config"]["steering"]')" "table, table"
expect_eq "17 flows in turn: 9 and 8 (gwa)" "$(flows_by_worker gwa)" "[8, 9]"
expect_eq "17 flows in turn: 9 and 8 (gwb)" "$(flows_by_worker gwb)" "[8, 9]"
b=$(gw_stats gwb)
a=$(gw_stats gwa)
expect_eq "gwb: no reordering" "$(json_get "$b" 'd["seq"]["reordered"]')" "0"
expect_eq "gwa: no reordering (the ACKs)" "$(json_get "$a" 'd["seq"]["reordered"]')" "0"
expect_eq "gwb carried at least 400 MB into TUN" "$(json_get "$b" 'd["total"]["tun_tx_bytes"] >= 400 * 2**20')" "True"
expect_eq "both workers of gwb worked" "$(json_get "$b" 'all(w["tun_tx_packets"] > 0 for w in d["workers"])')" "True"
expect_eq "gwb: nothing dropped" "$(json_get "$b" 'd["total"]["dropped"]')" "0"
expect_eq "fair queue by default on both" "$(json_get "$a" 'd["config"]["fair_queue"]'), $(json_get "$b" 'd["config"]["fair_queue"]')" "True, True"
expect_eq "gwa sent what it read, or its flow queue gave it up on overflow" "$(json_get "$a" 'd["total"]["dropped"] - d["total"]["drops"]["tx_send"] == d["total"]["drops"]["tx_fq_overflow"]')" "True"
# What the packets cost (total.cost): every TUN read and write counted once in its
# superpacket histogram, at least one system call per read or write, the segments of each
# direction those the TUN device saw, and the figures per GB present.
cost_consistent() { # stats
	json_get "$1" 'all(((c := d["total"]["cost"][w])["superpacket_segments"] and sum(c["superpacket_segments"].values()) == d["total"][n]) and c["segments"] == d["total"][s] and c["syscalls"] >= d["total"][n] and c["syscalls_per_gb"] > 0 for w, n, s in (("tun_to_wire", "tun_reads", "tun_rx_packets"), ("wire_to_tun", "tun_writes", "tun_tx_packets"))) and d["total"]["cost"]["wakeups"] == d["total"]["polls"]'
}
expect_eq "gwa: the cost of each direction, consistent with the counters" "$(cost_consistent "$a")" "True"
expect_eq "gwb: the cost of each direction, consistent with the counters" "$(cost_consistent "$b")" "True"
case $GW_MODE in
*-nooffload) want="1 segment a TUN read and write" ;;
*) want="superpackets of 33-64 segments read from TUN" ;;
esac
expect_eq "gwa: $want" "$(json_get "$a" 'd["total"]["cost"]["tun_to_wire"]["superpacket_segments"]["33-64"] > 0 if d["config"]["offload"] else all(v == 0 for c in d["total"]["cost"].values() if isinstance(c, dict) for k, v in c["superpacket_segments"].items() if k != "1")')" "True"
# The mode did what it says: superpackets cut on gwa and made on gwb with offloads, none
# without; over GRE-in-UDP the kernel's UDP segmentation and coalescing in use.
case $GW_MODE in
*-nooffload)
	expect_eq "no offloads: no superpackets" "$(json_get "$a" '(d["config"]["tun_offloads"], d["total"]["gso_superpackets"], d["total"]["coalesced_superpackets"])'), $(json_get "$b" '(d["total"]["gso_superpackets"], d["total"]["coalesced_superpackets"])')" "('none', 0, 0), (0, 0)" ;;
*)
	expect_eq "offloads: TSO from TUN" "$(json_get "$a" '"tso4" in d["config"]["tun_offloads"].split(",")')" "True"
	expect_eq "offloads: gwa cut superpackets, gwb made them" "$(json_get "$a" 'd["total"]["gso_superpackets"] > 100'), $(json_get "$b" 'd["total"]["coalesced_superpackets"] > 100')" "True, True" ;;
esac
if [ "$GW_ENCAP" = gre-udp ]; then
	expect_eq "gre-udp: UDP_SEGMENT and UDP_GRO on" "$(json_get "$b" '(d["config"]["udp_gso"], d["config"]["udp_gro"])')" "(True, True)"
	expect_eq "gre-udp: gwa sent several datagrams a message, gwb read several a message" "$(json_get "$a" 'd["total"]["udp_gso_sends"] > 0'), $(json_get "$b" 'd["total"]["udp_gro_reads"] > 0')" "True, True"
fi
log "gwb totals: $(json_get "$b" '{k: d["total"][k] for k in ("wire_rx_packets", "tun_tx_packets", "ring_drops", "socket_drops") if k in d["total"]} | d["seq"]')"

# --aqm codel: with a 10 us target over 1 ms, any queue under a bulk transfer is a standing
# one, so CoDel must drop (the inner packets are not ECN-capable); TCP recovers and every
# byte still arrives. (The receive ring over GRE, the socket over GRE-in-UDP.)
gw_stop gwa
gw_stop gwb
gw_pair4 "$P" --seq --workers 2 --aqm codel --aqm-target 10 --aqm-interval 1000
bulk_transfer "$P" 198.18.3.2 8 $((100 * MB))
b=$(gw_stats gwb)
expect_eq "aqm: configured" "$(json_get "$b" '(d["config"]["aqm"], d["config"]["aqm_target_us"], d["config"]["aqm_interval_us"])')" "('codel', 10, 1000)"
expect_eq "aqm: CoDel dropped from gwb's queue" "$(json_get "$b" 'd["total"]["drops"]["aqm"] > 0')" "True"
expect_eq "aqm: nothing marked (no ECN here)" "$(json_get "$b" 'd["total"]["aqm_marked"]')" "0"
expect_eq "aqm: its drops are all gwb dropped" "$(json_get "$b" 'd["total"]["dropped"] == d["total"]["drops"]["aqm"]')" "True"
log "aqm: gwb dropped $(json_get "$b" 'd["total"]["drops"]["aqm"]') of $(json_get "$b" 'd["total"]["wire_rx_packets"]')"

# --aqm codel and ECN (RFC 3168, RFC 8311): 4 TCP sessions that negotiate ECN (the client's
# namespace asks, net.ipv4.tcp_ecn = 1; ECT(0) data) and, beside them through the same
# queue, a paced UDP session of full-sized Not-ECT datagrams. CoDel's signals reach the TCP
# sessions as CE marks, which their receivers deliver, and the UDP session as drops: what
# CoDel dropped is the UDP session's loss (more where a full queue took some on the way), but
# for the TCP sessions' retransmissions, the one full-sized TCP data that is Not-ECT (RFC 3168
# 6.1.5; a busy machine makes a few); and gwb dropped nothing else.
# One worker a gateway here, so that the UDP session shares its receive queue (CoDel's) with the
# TCP sessions whatever flow gets which worker: alone on a worker, a paced session never holds
# a queue to drop from (under CI's load it once had a worker to itself and lost nothing).
gw_stop gwa
gw_stop gwb
gw_pair4 "$P" --seq --workers 1 --aqm codel --aqm-target 10 --aqm-interval 1000
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=1
tr_server "$P-server" 9400
b0=$(gw_stats gwb)
ip netns exec "$P-client" "$TRAFFIC" client 198.18.3.2 --port 9400 --udp --size 1400 --pps 5000 \
	--time 4 --json >"$TMP/aqm-udp.json" 2>"$TMP/aqm-udp.err" &
upid=$!
tr_client "$P-client" 198.18.3.2 --port 9400 --sessions 4 --time 3 --ecn on --json
wait "$upid" || fail "the UDP session beside the ECN sessions failed: $(cat "$TMP/aqm-udp.err")"
U=$(cat "$TMP/aqm-udp.json")
b=$(gw_stats gwb)
marked=$(($(json_get "$b" 'd["total"]["aqm_marked"]') - $(json_get "$b0" 'd["total"]["aqm_marked"]')))
aqm_drops=$(($(json_get "$b" 'd["total"]["drops"]["aqm"]') - $(json_get "$b0" 'd["total"]["drops"]["aqm"]')))
log "aqm, ECN: gwb marked $marked, dropped $aqm_drops; UDP lost $(json_get "$U" 'd["udp"]["lost"]') of $(json_get "$U" 'd["udp"]["sent"]'); TCP CE delivered $(json_get "$TR_JSON" 'd["tcp"]["ce_delivered"]'), retransmitted $(json_get "$TR_JSON" 'd["tcp"]["retransmits"]')"
expect_eq "aqm, ECN: the TCP sessions complete, all 4 negotiated ECN, CE delivered" \
	"$TR_STATUS $(json_get "$TR_JSON" '(d["complete"], d["tcp"]["ecn_negotiated"], d["tcp"]["ce_delivered"] > 0)')" "0 (True, 4, True)"
expect_eq "aqm, ECN: CoDel marked, and dropped UDP datagrams" "$((marked > 0)) $((aqm_drops > 0))" "1 1"
expect_eq "aqm, ECN: the UDP session lost at least CoDel's drops but the TCP retransmissions, gwb dropped nothing else" \
	"$(($(json_get "$U" 'd["udp"]["lost"]') + $(json_get "$TR_JSON" 'd["tcp"]["retransmits"]') >= aqm_drops)) $(($(json_get "$b" 'd["total"]["dropped"]') - $(json_get "$b0" 'd["total"]["dropped"]')))" "1 $aqm_drops"
tr_stop
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=2

# --fair-queue off: first in, first out, no flow queue (gateway/fq.h is the default); 16
# flows, every byte checked, each flow still on one worker, nothing given up by a queue.
gw_stop gwa
gw_stop gwb
gw_pair4 "$P" --seq --workers 2 --fair-queue off
bulk_transfer "$P" 198.18.3.2 16 $((100 * MB))
a=$(gw_stats gwa)
b=$(gw_stats gwb)
expect_eq "no fair queue: configured off on both" "$(json_get "$a" 'd["config"]["fair_queue"]'), $(json_get "$b" 'd["config"]["fair_queue"]')" "False, False"
expect_eq "no fair queue: one worker per flow (gwa)" "$(one_worker_per_flow gwa)" "True"
expect_eq "no fair queue: nothing given up on overflow" "$(json_get "$a" 'd["total"]["drops"]["tx_fq_overflow"]')" "0"
expect_eq "no fair queue: gwb carried the 100 MB into TUN" "$(json_get "$b" 'd["total"]["tun_tx_bytes"] >= 100 * 2**20')" "True"

# GRE-in-UDP where the kernel refuses UDP_SEGMENT sends at run time (EIO: an IPsec policy on
# the route; before Linux 6.11 also a device without checksum offload; this kernel has
# neither, so tests/shim/gso_eio.c stands in for it): gwa says so once per worker, sends
# datagram by datagram from then on and loses nothing.
if [ "$GW_ENCAP" = gre-udp ]; then
	[ -f "${GSO_EIO_SHIM:-}" ] || die "GSO_EIO_SHIM (the preloadable fault, built with the tests) not set"
	gw_stop gwa
	gw_stop gwb
	LD_PRELOAD=$GSO_EIO_SHIM ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		gw_a4 "$P" --seq --workers 2
	gw_b4 "$P" --seq --workers 2
	bulk_transfer "$P" 198.18.3.2 4 $((50 * MB))
	a=$(gw_stats gwa)
	# (Each worker that sent a flow's data fell back; config says whether all still use it.)
	expect_eq "UDP_SEGMENT refused: gwa stopped using it" "$(json_get "$a" '(d["config"]["udp_gso"], all(w["udp_gso"] for w in d["workers"]))')" "(False, False)"
	expect_eq "UDP_SEGMENT refused: gwa dropped nothing" "$(json_get "$a" 'd["total"]["dropped"]')" "0"
	expect_eq "UDP_SEGMENT refused: said once per worker at most" "$(grep -c 'UDP_SEGMENT refused' "$TMP/gwa.err" | awk '$1 >= 1 && $1 <= 2 {print "yes"}')" "yes"
	expect_eq "UDP_SEGMENT refused: gwb still uses it" "$(json_get "$(gw_stats gwb)" 'd["config"]["udp_gso"]')" "True"
fi

gw_stop gwa
gw_stop gwb
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
