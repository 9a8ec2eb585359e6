#!/bin/bash
# A worker whose flow queue is full stops reading TUN (--fq-full pause, the default) instead
# of dropping what it read: through a transit slower than the sender, a verified Reno
# transfer completes with nothing dropped by gwa, its reads paused (counted), and the TUN
# device's own drops reported as the kernel counts them. The same with --fq-full drop: the
# queue gives up reads (tx_fq_overflow), which shows the queue did fill; the data still
# arrives whole. With a TUN queue of 8 packets the kernel's ring overflows instead: the device
# counts the drops, gwa still none. Bad values of the two options are refused. With --aqm codel
# the backlog that stands in gwa's flow queue is told to shrink there, per flow: TCP sessions
# that negotiated ECN are marked CE (tx_aqm_marked, CE delivered) and complete verified, while a
# Not-ECT UDP session beside them is dropped (tx_aqm), and every packet CoDel dropped was Not-ECT.
#
#  P-client [tunbed-traffic --verify, Reno] --lan-a-- P-gwa [gregw, 1 worker, flow queue of 4]
#      ==transit (tbf 50 Mbit/s on gwa's end)== [gregw] P-gwb --lan-b-- [tunbed-traffic server] P-server
#
# Why the queues fill whatever the timing: the token bucket lets 50 Mbit/s through and queues
# up to 4 MB, more than gwa's socket may hold (its send buffer), so gwa's sends wait for room
# instead of being dropped by the bucket. A Reno sender in slow start doubles its window each
# round trip until a packet is lost (no HyStart to leave slow start on a longer delay, as
# CUBIC's may; no window or threshold remembered from the last transfer: the client's
# namespace saves no TCP metrics), and the only queues that can lose one are gwa's flow queue
# (drop) and the TUN device's ring behind it (pause): the backlog passes gwa's socket and
# fills the flow queue's 4 reads, and with pause the TUN device's queue behind them, before
# the sender learns of any loss. gwa
# sends on its sockets (--wire-tx packet): a write into the TAP of --wire-tx tap never waits
# (its superpackets queue at the transit's qdisc, whose drops are the bucket's, as with the
# kernel's own tunnels), so its flow queue would not fill.
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbbp
BYTES=8m

expect_refusal "--fq-full maybe" 2 "bad value 'maybe' for --fq-full: expected pause or drop" \
	"$GREGW" --remote 198.18.0.2 --fq-full maybe
expect_refusal "--fq-limit 0" 2 "bad value '0' for --fq-limit: expected 1 to 4096 packets" \
	"$GREGW" --remote 198.18.0.2 --fq-limit 0
expect_refusal "--fq-limit 4097" 2 "bad value '4097' for --fq-limit: expected 1 to 4096 packets" \
	"$GREGW" --remote 198.18.0.2 --fq-limit 4097

"$TOPO" up ras --prefix "$P" >/dev/null
ip netns exec "$P-gwa" tc qdisc add dev transit root tbf rate 50mbit burst 100kb limit 4mb
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_no_metrics_save=1
tr_server "$P-server" 9400

# transfer: BYTES from client to server, every byte checked, Reno; the client's JSON in
# TR_JSON, gwa's stats in A.
transfer() {
	tr_client "$P-client" 198.18.3.2 --bytes "$BYTES" --verify --congestion reno --json
	expect_eq "$1: the transfer completed, verified" "$TR_STATUS $(json_get "$TR_JSON" '(d["tcp"]["verify"]["mismatches"], [(s["sent"], s.get("server_received")) for s in d["tcp"]["per_session"]])')" "0 (0, [(8388608, 8388608)])"
	A=$(gw_stats gwa)
	log "$1: gwa read $(json_get "$A" 'd["total"]["tun_reads"]') times, paused $(json_get "$A" 'd["total"]["tun_read_pauses"]'), dropped $(json_get "$A" '{k: v for k, v in d["total"]["drops"].items() if v}'); the TUN device dropped $(json_get "$A" 'd["total"]["tun_device_tx_dropped"]'); the client retransmitted $(json_get "$TR_JSON" 'd["tcp"]["retransmits"]')"
}

# The TUN device's own counter, as the kernel keeps it (sysfs of gwa's namespace: ip netns
# exec mounts it anew), and as gwa reports it: the same once the transfer is over.
device_drops_agree() {
	local sys
	sys=$(ip netns exec "$P-gwa" cat /sys/class/net/gre0/statistics/tx_dropped)
	expect_eq "$1: the TUN device's tx_dropped in gwa's stats" "$(json_get "$(gw_stats gwa)" 'd["total"]["tun_device_tx_dropped"]')" "$sys"
}

# Pause (the default).
gw_a4 "$P" --workers 1 --wire-tx packet --fq-limit 4
gw_b4 "$P" --workers 1
transfer pause
expect_eq "pause: configured" "$(json_get "$A" '(d["config"]["fair_queue"], d["config"]["fq_full"], d["config"]["fq_limit"])')" "(True, 'pause', 4)"
expect_eq "pause: gwa gave up no read" "$(json_get "$A" 'd["total"]["drops"]["tx_fq_overflow"]')" "0"
expect_eq "pause: gwa dropped nothing at all" "$(json_get "$A" 'd["total"]["dropped"]')" "0"
expect_eq "pause: gwa paused its reads under a full queue" "$(json_get "$A" 'd["total"]["tun_read_pauses"] > 0 and d["total"]["tun_read_pauses"] == d["workers"][0]["tun_read_pauses"]')" "True"
device_drops_agree pause

# A short TUN queue: the backlog overflows the device's ring, whose drops the kernel counts
# (tun_net_xmit drops when a queue's ring is full, and tells the qdisc nothing).
ip -n "$P-gwa" link set gre0 txqueuelen 8
transfer "pause, TUN queue of 8"
expect_eq "TUN queue of 8: gwa still dropped nothing" "$(json_get "$A" 'd["total"]["dropped"]')" "0"
expect_eq "TUN queue of 8: the device dropped" "$(json_get "$A" 'd["total"]["tun_device_tx_dropped"] > 0')" "True"
device_drops_agree "TUN queue of 8"

# Drop: what the queue did before pausing existed; the same transfer fills it.
gw_stop gwa
gw_a4 "$P" --workers 1 --wire-tx packet --fq-limit 4 --fq-full drop
transfer drop
expect_eq "drop: configured" "$(json_get "$A" 'd["config"]["fq_full"]')" "drop"
expect_eq "drop: the full queue gave up reads, and never paused" "$(json_get "$A" '(d["total"]["drops"]["tx_fq_overflow"] > 0, d["total"]["tun_read_pauses"])')" "(True, 0)"
device_drops_agree drop

# --aqm codel, CoDel per flow in gwa's flow queue (gwb runs none, so every mark is gwa's), its
# default size (4096 reads packed, 8 MB). Why the queue stands there whatever the timing: a
# paced UDP session of full-sized Not-ECT datagrams offers 56 Mbit/s (5000 x 1400 bytes a
# second) to the bucket's 50 alone, so gwa's sends wait for room in every pass and whatever
# waits in its flow queue waits longer than the target (10 us): CoDel signals on each flow
# once its packets have waited so for an interval (1 ms). Beside it, 2 TCP sessions that
# negotiate ECN (the client's namespace asks, net.ipv4.tcp_ecn = 1; ECT(0) data) carry BYTES
# each, verified. Their signals are CE marks, which their receiver delivers through gwb
# (RFC 6040); the UDP session's are drops. A packet CoDel dropped is Not-ECT by construction:
# the UDP session's, or a TCP retransmission (Linux sends those Not-ECT, RFC 3168 6.1.5), so
# the UDP session's loss and the TCP retransmissions together are at least CoDel's drops.
gw_stop gwa
gw_a4 "$P" --workers 1 --wire-tx packet --aqm codel --aqm-target 10 --aqm-interval 1000
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=1
ip netns exec "$P-client" "$TRAFFIC" client 198.18.3.2 --port 9400 --udp --size 1400 --pps 5000 \
	--time 5 --json >"$TMP/aqm-udp.json" 2>"$TMP/aqm-udp.err" &
upid=$!
tr_client "$P-client" 198.18.3.2 --port 9400 --sessions 2 --bytes 4m --verify --ecn on --json
wait "$upid" || fail "the UDP session beside the ECN sessions failed: $(cat "$TMP/aqm-udp.err")"
U=$(cat "$TMP/aqm-udp.json")
A=$(gw_stats gwa)
marked=$(json_get "$A" 'd["total"]["tx_aqm_marked"]')
aqm_drops=$(json_get "$A" 'd["total"]["drops"]["tx_aqm"]')
log "aqm: gwa marked $marked CE, dropped $aqm_drops (tx_aqm), paused $(json_get "$A" 'd["total"]["tun_read_pauses"]'); its TUN device dropped $(json_get "$A" 'd["total"]["tun_device_tx_dropped"]'); UDP lost $(json_get "$U" 'd["udp"]["lost"]') of $(json_get "$U" 'd["udp"]["sent"]'); TCP CE delivered $(json_get "$TR_JSON" 'd["tcp"]["ce_delivered"]'), retransmitted $(json_get "$TR_JSON" 'd["tcp"]["retransmits"]')"
expect_eq "aqm: configured, the flow queue at its default size" "$(json_get "$A" '(d["config"]["aqm"], d["config"]["aqm_target_us"], d["config"]["fq_full"], d["config"]["fq_limit"])')" "('codel', 10, 'pause', 4096)"
expect_eq "aqm: the ECN sessions completed, verified, both negotiated ECN, CE delivered" \
	"$TR_STATUS $(json_get "$TR_JSON" '(d["tcp"]["verify"]["mismatches"], [(s["sent"], s.get("server_received")) for s in d["tcp"]["per_session"]], d["tcp"]["ecn_negotiated"], d["tcp"]["ce_delivered"] > 0)')" \
	"0 (0, [(4194304, 4194304), (4194304, 4194304)], 2, True)"
expect_eq "aqm: gwa's CoDel marked CE, and dropped" "$((marked > 0)) $((aqm_drops > 0))" "1 1"
expect_eq "aqm: every packet CoDel dropped was Not-ECT (the UDP session lost at least CoDel's drops but the TCP retransmissions)" \
	"$(($(json_get "$U" 'd["udp"]["lost"]') + $(json_get "$TR_JSON" 'd["tcp"]["retransmits"]') >= aqm_drops))" "1"
expect_eq "aqm: gwa dropped nothing but CoDel's drops (nothing to overflow: pause)" "$(json_get "$A" 'd["total"]["dropped"] == d["total"]["drops"]["tx_aqm"]')" "True"
expect_eq "aqm: gwb, without --aqm, marked nothing" "$(json_get "$(gw_stats gwb)" '(d["total"]["aqm_marked"], d["total"]["tx_aqm_marked"], d["total"]["drops"]["aqm"], d["total"]["drops"]["tx_aqm"])')" "(0, 0, 0, 0)"
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=2

# The same CoDel on a Not-ECT TCP transfer (the client's namespace no longer asks for ECN): its
# signals are drops, of a whole read, or of one segment of a superpacket (cut for it, the rest
# sent on); the transfer still verifies.
a0=$(json_get "$A" 'd["total"]["drops"]["tx_aqm"]')
transfer "aqm, Not-ECT"
expect_eq "aqm, Not-ECT: gwa's CoDel dropped, and nothing else" "$(json_get "$A" '(d["total"]["drops"]["tx_aqm"] > '"$a0"', d["total"]["dropped"] == d["total"]["drops"]["tx_aqm"])')" "(True, True)"

tr_stop
gw_stop gwa
gw_stop gwb
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
