#!/bin/bash
# tunbed-wire on the transit link of a gregw pair: what it counts crossing the wire agrees
# with both gateways' own counters (frames and outer bytes each way, inner bytes read from
# TUN) and with the generator's bytes; a clean run flags nothing; tshark, decoding the
# capture tunbed-wire wrote, finds the same frames. While it captures, tunbed-wire holds no
# capability, has NoNewPrivs and, in builds without sanitizers, its seccomp allow-list. Then
# a peer that lies: frames injected on transit with one defect each are counted under their
# kind.
#
#  P-client [tunbed-traffic] --lan-a-- P-gwa [gregw] ==transit (GRE, key 7, seq, csum)== [gregw] P-gwb --lan-b-- [server] P-server
#                                           [tunbed-wire on transit]
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbwire
WIRE="$TUNBED_BIN/tunbed-wire"
[ -x "$WIRE" ] || die "$WIRE not built"
command -v tshark >/dev/null || die "tshark is not installed"
A=198.18.0.1
B=198.18.0.2

"$TOPO" up ras --prefix "$P" >/dev/null
gw_transit_datagrams "$P"
gw_pair4 "$P" --key 7 --seq --csum
MTU=$(json_get "$(gw_stats gwa)" 'd["config"]["mtu"]')
tr_server "$P-server" 9400

# wire_start NAME args...: tunbed-wire on gwa's transit, JSON in $TMP/NAME.json. The ready
# file says "ready" once the capture runs with its privileges dropped.
wire_start() {
	local name=$1
	shift
	rm -f "$TMP/$name.ready"
	ip netns exec "$P-gwa" "$WIRE" --iface transit --json --ready-file "$TMP/$name.ready" "$@" \
		>"$TMP/$name.json" 2>"$TMP/$name.err" &
	WIRE_PID=$!
	poll 30 grep -qx ready "$TMP/$name.ready" || die "tunbed-wire did not start: $(cat "$TMP/$name.err")"
}

# wire_privileges USER: what the running tunbed-wire holds (docs/wire.md, "Privileges"): no
# capability in any set, NoNewPrivs, and seccomp filtering (2) where the build loads its
# allow-list: TUNBED_WIRE_SECCOMP, which CMake sets (1 without sanitizers, 0 with); USER's
# uids and gids (--user), no supplementary group.
wire_privileges() {
	local st=/proc/$WIRE_PID/status zero=0000000000000000 u g
	u=$(id -u "$1")
	g=$(id -g "$1")
	expect_eq "tunbed-wire capturing: Uid, Gid, supplementary groups" \
		"$(awk '/^(Uid|Gid):/ { printf "%s %s %s %s | ", $2, $3, $4, $5 } /^Groups:/ { print NF - 1 }' "$st")" \
		"$u $u $u $u | $g $g $g $g | 0"
	[ -n "${TUNBED_WIRE_SECCOMP:-}" ] || die "TUNBED_WIRE_SECCOMP is not set (ctest sets it)"
	expect_eq "the process started is tunbed-wire" "$(cat "/proc/$WIRE_PID/comm")" "tunbed-wire"
	expect_eq "tunbed-wire capturing: CapInh CapPrm CapEff CapBnd CapAmb" \
		"$(awk '/^Cap(Inh|Prm|Eff|Bnd|Amb):/ { printf "%s%s", sep, $2; sep = " " }' "$st")" \
		"$zero $zero $zero $zero $zero"
	expect_eq "tunbed-wire capturing: NoNewPrivs" "$(awk '/^NoNewPrivs:/ { print $2 }' "$st")" "1"
	expect_eq "tunbed-wire capturing: Seccomp (2 with the allow-list)" \
		"$(awk '/^Seccomp:/ { print $2 }' "$st")" "$((TUNBED_WIRE_SECCOMP ? 2 : 0))"
}

# wire_stop: SIGTERM ends the capture; the report follows, exit status 0. (tunbed-wire reads
# what the kernel still holds for 3 ring-block timeouts after the signal, so what crossed
# before it is counted.)
wire_stop() {
	stop_bg "$WIRE_PID" TERM tunbed-wire
	expect_eq "tunbed-wire exit status after SIGTERM" "$BG_STATUS" "0"
}

# Nothing is left to cross transit: the endpoints have no TCP connection that may still send
# (only listening sockets and TIME-WAIT), and each gateway has received all the other sent.
quiet() { # namespace
	[ -z "$(ip netns exec "$1" ss -Htan | awk '$1 != "LISTEN" && $1 != "TIME-WAIT"')" ]
}
settled() {
	local a b
	if ! quiet "$P-client" || ! quiet "$P-server"; then return 1; fi
	a=$(gw_stats gwa)
	b=$(gw_stats gwb)
	[ "$(json_get "$a" 'd["total"]["wire_tx_packets"], d["total"]["wire_rx_packets"]')" = \
		"$(json_get "$b" 'd["total"]["wire_rx_packets"], d["total"]["wire_tx_packets"]')" ]
}

a0=$(gw_stats gwa)
b0=$(gw_stats gwb)
wire_start clean --local $A --remote $B --key 7 --seq --csum --mtu "$MTU" --write "$TMP/clean.pcap" --user nobody
wire_privileges nobody
tr_client "$P-client" 198.18.3.2 --sessions 4 --bytes 8m --rate 200m --json
expect_eq "traffic: exit status" "$TR_STATUS" "0"
poll 30 settled || fail "traffic did not settle within 30 s: connections still open, or a gateway has not received all the other sent"
wire_stop
a1=$(gw_stats gwa)
b1=$(gw_stats gwb)
W=$(cat "$TMP/clean.json")
delta() { # before after key
	python3 -c 'import json,sys; print(json.loads(sys.argv[2])["total"][sys.argv[3]] - json.loads(sys.argv[1])["total"][sys.argv[3]])' "$1" "$2" "$3"
}
expect_eq "the capture lost nothing" "$(json_get "$W" 'd["source"]["capture_dropped"]')" "0"
expect_eq "a clean run: nothing flagged" "$(json_get "$W" '(d["clean"], d["violation_frames"], d["snapped_frames"])')" "(True, 0, 0)"
if [ "$(json_get "$W" 'd["violation_frames"]')" != 0 ]; then
	log "violations: $(json_get "$W" '{k: v for k, v in d["violations"].items() if v["count"]}')"
fi
expect_eq "frames gwa -> gwb: wire = gwa sent" "$(json_get "$W" 'd["directions"][0]["frames"]')" "$(delta "$a0" "$a1" wire_tx_packets)"
expect_eq "frames gwa -> gwb: wire = gwb received" "$(json_get "$W" 'd["directions"][0]["frames"]')" "$(delta "$b0" "$b1" wire_rx_packets)"
expect_eq "frames gwb -> gwa: wire = gwb sent" "$(json_get "$W" 'd["directions"][1]["frames"]')" "$(delta "$b0" "$b1" wire_tx_packets)"
expect_eq "frames gwb -> gwa: wire = gwa received" "$(json_get "$W" 'd["directions"][1]["frames"]')" "$(delta "$a0" "$a1" wire_rx_packets)"
expect_eq "outer bytes gwa -> gwb: wire = gwa sent" "$(json_get "$W" 'd["directions"][0]["ip_bytes"]')" "$(delta "$a0" "$a1" wire_tx_bytes)"
expect_eq "inner bytes gwa -> gwb: wire = gwa read from TUN" "$(json_get "$W" 'd["directions"][0]["inner_bytes"]')" "$(delta "$a0" "$a1" tun_rx_bytes)"
expect_eq "inner bytes gwb -> gwa: wire = gwb read from TUN" "$(json_get "$W" 'd["directions"][1]["inner_bytes"]')" "$(delta "$b0" "$b1" tun_rx_bytes)"
expect_eq "inner bytes gwa -> gwb: wire = gwb wrote into TUN" "$(json_get "$W" 'd["directions"][0]["inner_bytes"]')" "$(delta "$b0" "$b1" tun_tx_bytes)"
sent=$(json_get "$TR_JSON" 'sum(s["sent"] for s in d["tcp"]["per_session"])')
expect_eq "the generator sent 4 x 8 MiB" "$sent" "$((4 * 8 << 20))"
new=$(json_get "$W" 'd["directions"][0]["tcp"]["new_bytes"]')
# New TCP bytes on the wire: the sessions' data, plus their hellos and the control
# connection's messages, a few kB.
expect_eq "new TCP bytes client -> server: the generator's bytes plus its protocol, < 64 KiB" "$((new >= sent && new - sent < 65536))" "1"
log "wire: new TCP bytes $new = sent $sent + $((new - sent)) protocol bytes"
expect_eq "sequence numbers: none missing, none duplicated, none reordered within a flow" "$(json_get "$W" '[(x["seq"]["missing"], x["seq"]["duplicates"], x["seq"]["flow_reordered"]) for x in d["directions"]]')" "[(0, 0, 0), (0, 0, 0)]"
expect_eq "every frame numbered" "$(json_get "$W" 'all(x["seq"]["frames"] == x["frames"] for x in d["directions"])')" "True"
expect_eq "the generator's four sessions lead the top flows" "$(json_get "$W" 'sorted(f["dport"] for f in d["flows"]["top"][:4])')" "[9400, 9400, 9400, 9400]"
log "wire: $(json_get "$W" '{k: d["directions"][0][k] for k in ("frames", "inner_bytes", "overhead_pct")} | {"seq_reordered": d["directions"][0]["seq"]["reordered"]} | d["directions"][0]["tcp"]')"

# tshark, an independent decoder, reads the capture tunbed-wire wrote.
ts_count() { tshark "${GW_TSHARK_ARGS[@]}" -r "$TMP/clean.pcap" -Y "$1" 2>/dev/null | wc -l; }
expect_eq "tshark: GRE frames gwa -> gwb" "$(ts_count "gre && ip.src == $A && ip.dst == $B")" "$(json_get "$W" 'd["directions"][0]["frames"]')"
expect_eq "tshark: GRE frames gwb -> gwa" "$(ts_count "gre && ip.src == $B && ip.dst == $A")" "$(json_get "$W" 'd["directions"][1]["frames"]')"
expect_eq "tshark: no frame with another key, a bad checksum or malformed" "$(ts_count "gre.key != 7 || gre.checksum.status == 0 || _ws.malformed")" "0"

# A liar on transit: 20 frames of each defect from gwb's side; tunbed-wire counts each under
# its kind, and gwa, which drops them, counts the same.
a0=$(gw_stats gwa)
wire_start liar --local $A --remote $B --key 7 --seq --csum
declare -A KIND=([bad_key]=bad_key [bad_csum]=bad_csum [no_seq]=no_seq [no_csum]=no_csum
	[bad_proto]=bad_proto [bad_inner]=bad_inner [truncated]=truncated [bad_version]=bad_gre
	[bad_flags]=bad_gre [unknown_peer]=bad_peer)
for kind in "${!KIND[@]}"; do
	ip netns exec "$P-gwb" python3 "$HERE/gre_inject.py" --src $B --dst $A --kind "$kind" \
		--key 7 --seq --csum "${GW_INJECT_ARGS[@]}" --count 20 || die "gre_inject.py $kind failed"
done
# gwa has dealt with all 200 (they are dropped there): they have crossed transit.
liar_counted() { [ "$(delta "$a0" "$(gw_stats gwa)" dropped)" -ge 200 ]; }
poll 30 liar_counted || fail "gwa did not count the 200 injected frames as dropped within 30 s"
wire_stop
W=$(cat "$TMP/liar.json")
expect_eq "the liar: 200 frames flagged" "$(json_get "$W" 'd["violation_frames"]')" "200"
expect_eq "the liar: each defect counted under its kind" "$(json_get "$W" 'sorted((k, v["count"]) for k, v in d["violations"].items() if v["count"])')" \
	"[('bad_csum', 20), ('bad_gre', 40), ('bad_inner', 20), ('bad_key', 20), ('bad_peer', 20), ('bad_proto', 20), ('no_csum', 20), ('no_seq', 20), ('truncated', 20)]"
expect_eq "the liar: gwa dropped as many as tunbed-wire flagged" "$(delta "$a0" "$(gw_stats gwa)" dropped)" "200"

gw_stop gwa
gw_stop gwb
stop_bg "$TR_SERVER" TERM "tunbed-traffic server"
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
