#!/bin/bash
# gregw under a flood of hostile GRE: during a verified transfer, gre_inject.py puts 100
# packets of each defect it knows on transit, from the peer's namespace; gwb counts each
# exactly under its reason (or, for what it accepts, in its sequence accounting; for what the
# kernel drops first, in the kernel's counters gwb reports), and the transfer's bytes arrive
# intact. Then 20 pings to an unused address of the tunnel subnet cross the tunnel once each:
# gwb drops them as a loop instead of sending them back.
#
#  P-client --lan-a-- P-gwa [gregw] ==transit (gre_inject.py from P-gwa)== [gregw, 1 worker] P-gwb --lan-b-- P-server
#
# gwb runs one worker, so that the one window of its sequence accounting sees every number
# (several workers each see their flows' numbers and consult each other: tests/unit/test_flows).
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbflood
MB=$((1 << 20))
N=100

"$TOPO" up ras --prefix "$P" >/dev/null
gw_a4 "$P" --key 7 --seq --csum --workers 2
gw_b4 "$P" --key 7 --seq --csum --workers 1

# inject KIND [args...]: N packets of KIND from gwa's namespace to gwb, as the peer would
# send them (key 7, sequence numbers, checksums), unless args say otherwise.
inject() {
	local kind=$1
	shift
	ip netns exec "$P-gwa" python3 "$HERE/gre_inject.py" --src 198.18.0.1 --dst 198.18.0.2 \
		--key 7 --seq --csum "${GW_INJECT_ARGS[@]}" --kind "$kind" --count "$N" "$@" ||
		die "injecting $kind"
}
# The numbers gwa has taken so far: sent, or refused by the kernel.
gwa_numbers() { json_get "$(gw_stats gwa)" 'd["total"]["wire_tx_packets"] + d["total"]["drops"]["tx_send"]'; }
b() { json_get "$(gw_stats gwb)" "$1"; }
delta() { # before after python-expression-on-d
	echo $(($(json_get "$2" "$3") - $(json_get "$1" "$3")))
}

before=$(gw_stats gwb)
ip netns exec "$P-server" python3 "$HERE/bulk.py" server --bind 198.18.3.2 --port 9000 --flows 2 >"$TMP/server.out" 2>&1 &
spid=$!
poll 30 grep -q listening "$TMP/server.out" || die "bulk server did not say it listens: $(cat "$TMP/server.out")"
ip netns exec "$P-client" python3 "$HERE/bulk.py" client --connect 198.18.3.2 --port 9000 --flows 2 --bytes $((100 * MB)) >"$TMP/client.out" &
cpid=$!
poll 30 gw_true gwb 'd["total"]["tun_tx_packets"] > 1000' || die "the transfer did not reach gwb within 30 s"

# 1. Sequence numbers. A peer that restarted far from gwb's window, 4 numbers in a row:
# gwb's window follows them, and comes back with the next 4 of gwa's, which go on from its
# own. Each of the 8 is out of the window when it arrives; two resynchronisations. Nothing of
# it is dropped.
inject resync --count 4 --seq-base "$(gwa_numbers)"
poll 30 gw_true gwb 'd["seq"]["resyncs"] == 2' ||
	fail "gwb's window did not restart twice (the injected run, then gwa's numbers) within 30 s: $(b 'd["seq"]')"
# Spoofed numbers, each far from the window and from the others: counted, never a jump.
inject out_of_window --seq-base "$(gwa_numbers)"
# Well-formed packets numbered within the window go into TUN.
inject good --seq-base "$(gwa_numbers)"

# 2. Malformed and spoofed packets, each dropped under its reason.
declare -A WANT=()
for k in unknown_peer bad_version bad_flags bad_key no_seq no_csum bad_csum bad_proto bad_inner truncated zero_length tunnel_loop; do
	inject "$k"
	WANT[$k]=$N
done
# Inner sources gwb must not take from the tunnel: a host of its own LAN (the default), its
# own tunnel address, an address it routes nowhere, and IPv6, of which it has no prefix.
inject spoofed_source
inject spoofed_source --inner-src 198.19.0.2
inject spoofed_source --inner-src 198.18.99.1
inject spoofed_source6
WANT[spoofed_source]=$((4 * N))
# gwb (one worker) says why, for the first of them, in one line naming its source and how to
# allow it; then at most one line a minute, not one per packet (the 400 took seconds).
poll 30 grep -q "as spoofed_source" "$TMP/gwb.err" || fail "gwb said nothing of the spoofed packets within 30 s"
told=$(grep -c "as spoofed_source" "$TMP/gwb.err" || true)
expect_match "gwb says why it dropped the first spoofed packet" "$(grep -m1 "as spoofed_source" "$TMP/gwb.err")" \
	"^gregw: worker 0: dropped a packet from 198\.18\.3\.66 as spoofed_source: the peer may send only from --route and --allow-from prefixes"
expect_eq "gwb: at most a line a minute, not one per packet ($told)" "$((told >= 1 && told <= 4))" "1"
# Outer fragments: the tunnel sets DF and never fragments. Over GRE the ring sees each
# fragment; over UDP the kernel reassembles pairs before the socket (gregw drops the
# datagram it made) and keeps lone first fragments until its reassembly timer drops them.
inject outer_fragment
inject lone_fragment
if [ "$GW_ENCAP" = gre ]; then
	WANT[outer_fragment]=$((3 * N))
else
	WANT[outer_fragment]=$N
	inject bad_udp_csum
fi
want_dropped=0
for k in "${!WANT[@]}"; do want_dropped=$((want_dropped + WANT[$k])); done

wait "$cpid" || fail "bulk client failed during the flood"
wait "$spid" || fail "bulk server failed during the flood"
expect_eq "transfer during the flood: hashes equal" "$(tail -1 "$TMP/client.out")" "$(tail -1 "$TMP/server.out")"

# The ring (the socket over GRE-in-UDP) is read asynchronously: wait until gwb has dealt with
# everything it received (each packet into TUN or dropped) and the drops are all in.
accounted() {
	gw_true gwb "d['total']['dropped'] - $(json_get "$before" 'd["total"]["dropped"]') >= $want_dropped and d['total']['tun_tx_packets'] + d['total']['dropped'] == d['total']['wire_rx_packets']"
}
poll 30 accounted || fail "gwb did not account for the $want_dropped injected drops and everything else it received within 30 s"
after=$(gw_stats gwb)
for k in $(json_get "$after" '" ".join(sorted(d["total"]["drops"]))'); do
	expect_eq "gwb dropped as $k" "$(delta "$before" "$after" "d['total']['drops']['$k']")" "${WANT[$k]:-0}"
done
expect_eq "gwb: every packet not dropped went into TUN, the injected good ones too" "$(json_get "$after" 'd["total"]["tun_tx_packets"] - d["total"]["wire_rx_packets"] + d["total"]["dropped"]')" "0"
# The 4 + 4 of the resynchronisations and the N spoofed numbers: out of the window.
expect_eq "gwb: numbers out of the window" "$(json_get "$after" 'd["seq"]["out_of_window"]')" "$((N + 8))"
expect_eq "gwb: resynchronisations" "$(json_get "$after" 'd["seq"]["resyncs"]')" "2"
used=$(gwa_numbers)
# The good ones were numbered from gwa's count as it was then, up to N beyond.
expect_eq "gwb: lowest <= highest < the numbers gwa used ($used) + $N, lost no more than those" \
	"$(json_get "$after" "d['seq']['lowest'] <= d['seq']['highest'] < $used + $N and 0 <= d['seq']['lost'] <= $used")" "True"
log "gwb seq: $(json_get "$after" 'd["seq"]')"
log "gwb kernel drops: $(json_get "$after" '{k: v for k, v in d["total"].items() if "drops" in k or k.startswith("netns_")}')"
if [ "$GW_ENCAP" = gre-udp ]; then
	# Datagrams the kernel dropped before gregw could see them: the bad checksums, found at
	# the socket (the datagrams are longer than 76 bytes), are among the socket's drops, and
	# the namespace's UDP counters tell them from a full buffer's (gregw's sockets are the
	# namespace's only UDP sockets here).
	expect_eq "gwb: the namespace's UDP checksum errors" "$(delta "$before" "$after" 'd["total"]["netns_udp_csum_errors"]')" "$N"
	expect_eq "gwb: the sockets' drops beyond the namespace's full-buffer drops: the bad checksums" \
		"$(delta "$before" "$after" 'd["total"]["socket_drops"] - d["total"]["netns_udp_rcvbuf_errors"]')" "$N"
fi

# 3. A loop: 20 pings to 198.19.0.77, an unused address of the tunnel subnet. gwa routes the
# subnet into the tunnel; gwb, were it to deliver them, would route them back (its TUN holds
# the subnet too), until their TTL ran out. gwb drops them: 20 tunnel packets, no more. The
# flow tables count them (other packets may cross meanwhile: gwb's kernel answers the
# injected packets it could not deliver with ICMP errors, seconds later).
b0=$(gw_stats gwb)
ip netns exec "$P-client" ping -n -q -c 20 -i 0.05 -W 1 198.19.0.77 >/dev/null 2>&1 || true
loop_dropped() { gw_true gwb "d['total']['drops']['tunnel_loop'] - $(json_get "$b0" 'd["total"]["drops"]["tunnel_loop"]') >= 20"; }
poll 30 loop_dropped || fail "gwb did not drop the 20 pings as a tunnel loop within 30 s"
b1=$(gw_stats gwb)
# Packets of flows to 198.19.0.77 each gateway put into the tunnel.
sent_to_77() { json_get "$(gw_stats "$1" flows)" 'sum(f["encap_packets"] for f in d["flows"] if "198.19.0.77" in (f["a"], f["b"]))'; }
ta=$(sent_to_77 gwa)
tb=$(sent_to_77 gwb)
log "tunnel packets of the pings: gwa -> gwb $ta, gwb -> gwa $tb"
expect_eq "20 pings to 198.19.0.77: at most 20 tunnel packets (got $((ta + tb)))" "$((ta + tb <= 20))" "1"
expect_eq "gwb dropped them as tunnel_loop" "$(delta "$b0" "$b1" 'd["total"]["drops"]["tunnel_loop"]')" "20"

gw_stop gwa
gw_stop gwb
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
