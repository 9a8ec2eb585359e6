#!/bin/bash
# gregw with 100 tunnels (docs/gregw.md, "Many tunnels"): gwa and gwb read the tunnel files of
# topo/tunnels.sh (tunnel i: key i + 1, the client's site 198.18.64.0 + i, the server's
# 198.18.128.0 + i), and each tunnel carries a verified TCP transfer both ways between its two
# sites (the client's route to each server site names its own site as the source). Then the
# per-tunnel counters are exact: what gwa put into a tunnel gwb took out of the same tunnel,
# packets and bytes, both ways, no tunnel dropped anything, and nothing went into the wrong
# tunnel (every tunnel's count is its own transfer's: none left at zero). A packet for no
# tunnel is counted as tx_no_tunnel; the tunnels command pages; a bad tunnel file is refused
# with FILE:LINE and exit status 2. The superpackets go whole through each gregw's TAP, its
# program writing each frame's tunnel's key, and tunbed-wire on the transit, given gwa's
# tunnel file, finds every frame its tunnel's and every tunnel's key both ways.
#
#  P-client                P-gwa [gregw --tunnels]                [gregw --tunnels] P-gwb              P-server
#  198.18.64.i ---lan-a--- 198.18.1.1  198.18.0.1 ==100 keys== 198.18.0.2  198.18.3.1 ---lan-b--- 198.18.128.i
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbtuns
N=100
PARALLEL=10

"$TUNBED_SRC/topo/tunnels.sh" "$N" "$TMP" --encap "$GW_ENCAP" || die "tunnels.sh: exit status $?"
"$TOPO" up tunnels --prefix "$P" >/dev/null

# Refusals before anything runs: one line naming the file and line, exit status 2.
cp "$TMP/gwa.tunnels" "$TMP/bad.tunnels"
printf '[tunnel dup]\npeer = 198.18.0.2\nkey = 1\nprefixes = 198.18.200.0/24\n' >>"$TMP/bad.tunnels"
line=$(($(wc -l <"$TMP/gwa.tunnels") + 1))
expect_refusal "two tunnels on one peer and key" 2 \
	"^gregw: $TMP/bad.tunnels:$((line + 2)): tunnel 'dup': peer 198.18.0.2 key 1 is tunnel 't00000''s already" \
	ip netns exec "$P-gwa" "$GREGW" --tunnels "$TMP/bad.tunnels" --ctl "$TMP/bad.sock"
printf '[tunnel other]\npeer = 2001:2::3\nkey = 1\nprefixes = 198.18.201.0/24\n' >"$TMP/peers.tunnels"
printf '[tunnel zz]\npeer = 198.18.0.2\nprefixes = 198.18.202.0/24\n' >>"$TMP/peers.tunnels"
expect_refusal "tunnels of two outer families" 2 \
	"^gregw: $TMP/peers.tunnels:6: tunnel 'zz': peer 198.18.0.2 is not tunnel 'other''s 2001:2::3 \\(line 2\\): gregw serves peers of one outer family" \
	ip netns exec "$P-gwa" "$GREGW" --tunnels "$TMP/peers.tunnels" --ctl "$TMP/bad.sock"
expect_refusal "--key beside --tunnels" 2 "^gregw: --key and --tunnels" \
	ip netns exec "$P-gwa" "$GREGW" --tunnels "$TMP/gwa.tunnels" --key 5 --ctl "$TMP/bad.sock"
other=gre-udp
[ "$GW_ENCAP" = gre ] || other=gre
expect_refusal "--encap other than the tunnels'" 2 \
	"^gregw: $TMP/gwa.tunnels:2: tunnel 't00000': encap $GW_ENCAP, but --encap $other\$" \
	ip netns exec "$P-gwa" "$GREGW" --tunnels "$TMP/gwa.tunnels" --encap "$other" --ctl "$TMP/bad.sock"

gw_start gwa "$P-gwa" --tunnels "$TMP/gwa.tunnels" --addr 198.19.0.1/24 --addr6 2001:2:0:ff::1/64 \
	--workers 2
# gwb's tunnel file named in a config file, as tunnels = FILE.
printf 'tunnels = %s\naddr = 198.19.0.2/24\naddr6 = 2001:2:0:ff::2/64\n' "$TMP/gwb.tunnels" >"$TMP/gwb.conf"
gw_start gwb "$P-gwb" --config "$TMP/gwb.conf" --workers 2
a=$(gw_stats gwa)
expect_eq "gwa: the tunnel file, its tunnels" \
	"$(json_get "$a" '(d["config"]["tunnels"].endswith("gwa.tunnels"), d["tunnels"]["count"], d["tunnels"]["changeable"])')" \
	"(True, $N, True)"
expect_eq "gwa: superpackets through the TAP with a tunnel file, no warning" \
	"$(json_get "$a" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"])'), $(grep -c 'cannot go whole' "$TMP/gwa.err" || true)" \
	"('tap', None), 0"

# Each client site's route to its server site: through gwa, from the site's own address.
tail -n +2 "$TMP/tunnels.tsv" | while IFS=$'\t' read -r _ _ c4 _ s4 _; do
	echo "route add $s4/32 via 198.18.1.1 src $c4"
done >"$TMP/client-routes"
ip -n "$P-client" -batch "$TMP/client-routes" || die "client routes"
expect_eq "the client's route to a server site goes from its own site" \
	"$(ip -n "$P-client" route get 198.18.128.99 | grep -o 'src [0-9.]*')" "src 198.18.64.99"

# The wire audit on gwa's transit, with gwa's tunnel file: every frame held to its tunnel
# (gwb as the peer, the tunnel's key, no sequence numbers or checksums).
WIRE="$TUNBED_BIN/tunbed-wire"
[ -x "$WIRE" ] || die "$WIRE not built"
expect_refusal "tunbed-wire: --remote beside --tunnels" 2 "^tunbed-wire: --remote and --tunnels" \
	"$WIRE" --read /dev/null --tunnels "$TMP/gwa.tunnels" --local 198.18.0.1 --remote 198.18.0.2
expect_refusal "tunbed-wire: a bad tunnel file, by its line" 2 \
	"^tunbed-wire: $TMP/bad.tunnels:$((line + 2)): tunnel 'dup': peer 198.18.0.2 key 1 is tunnel 't00000''s already" \
	"$WIRE" --read /dev/null --tunnels "$TMP/bad.tunnels" --local 198.18.0.1
ip netns exec "$P-gwa" "$WIRE" --iface transit --json --ready-file "$TMP/wire.ready" \
	--tunnels "$TMP/gwa.tunnels" --local 198.18.0.1 >"$TMP/wire.json" 2>"$TMP/wire.err" &
wire_pid=$!
poll 30 grep -qx ready "$TMP/wire.ready" || die "tunbed-wire did not start: $(cat "$TMP/wire.err")"

# A verified duplex transfer on every tunnel, PARALLEL at a time.
tr_server "$P-server" 9400
transfer() { # index server-address
	ip netns exec "$P-client" "$TRAFFIC" client "$2" --port 9400 --pattern duplex \
		--bytes 256k --verify --json >"$TMP/t$1.json" 2>"$TMP/t$1.err"
	echo $? >"$TMP/t$1.rc"
}
i=0
pids=()
while IFS=$'\t' read -r _ _ _ _ s4 _; do
	transfer "$i" "$s4" &
	pids+=($!)
	i=$((i + 1))
	if [ "${#pids[@]}" -ge "$PARALLEL" ]; then
		wait "${pids[@]}"
		pids=()
	fi
done < <(tail -n +2 "$TMP/tunnels.tsv")
# (Never a bare wait: the server runs in the background too.)
[ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}"
ok=0
for ((i = 0; i < N; i++)); do
	if [ "$(cat "$TMP/t$i.rc")" = 0 ] &&
		[ "$(json_get "$(cat "$TMP/t$i.json")" 'd["complete"] and d["tcp"]["verify"]["mismatches"] == 0')" = True ] &&
		[ "$(sessions_equal "$(cat "$TMP/t$i.json")")" = True ]; then
		ok=$((ok + 1))
	else
		log "tunnel $i: $(cat "$TMP/t$i.err") $(head -c 400 "$TMP/t$i.json")"
	fi
done
expect_eq "verified transfers, one on each tunnel" "$ok" "$N"
tr_stop
stop_bg "$wire_pid" TERM tunbed-wire
expect_eq "tunbed-wire exit status" "$BG_STATUS" 0
w=$(cat "$TMP/wire.json")
expect_eq "the wire audit: every frame its tunnel's, every tunnel's key seen both ways" \
	"$(json_get "$w" '(d["clean"], d["tunnels"]["count"], d["tunnels"]["both_ways"], d["tunnels"]["no_tunnel_frames"], d["tunnel_frames"] > 0)')" \
	"(True, $N, $N, 0, True)"

# The counters, a page at a time (the largest page is 1024; 64 by default).
pages() { # gateway: every tunnel's counters as one JSON list, by the tunnels command's pages
	local from=0 out all="[]" next
	while :; do
		out=$(gw_stats "$1" "tunnels $from 30")
		all=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]) + json.loads(sys.argv[2])["list"]))' "$all" "$out")
		next=$(json_get "$out" 'd["next"]')
		[ "$next" = "$(json_get "$out" 'd["tunnels"]')" ] && break
		from=$next
	done
	echo "$all"
}
ta=$(pages gwa)
tb=$(pages gwb)
expect_eq "gwa: every tunnel listed once, in name order" \
	"$(json_get "$ta" '[t["name"] for t in d] == ["t%05d" % i for i in range('"$N"')]')" "True"
cat >"$TMP/exact.py" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
bad = []
for x, y in zip(a, b):
    if x["name"] != y["name"]:
        bad.append(f"{x['name']}/{y['name']}: not the same tunnel")
        continue
    for mine, theirs in (("tx_packets", "rx_packets"), ("tx_bytes", "rx_bytes"),
                         ("rx_packets", "tx_packets"), ("rx_bytes", "tx_bytes")):
        if x[mine] != y[theirs] or x[mine] == 0:
            bad.append(f"{x['name']}: gwa {mine} {x[mine]}, gwb {theirs} {y[theirs]}")
    for g, t in (("gwa", x), ("gwb", y)):
        if any(t["drops"].values()):
            bad.append(f"{t['name']}: {g} dropped {t['drops']}")
print("; ".join(bad[:5]) or "exact")
EOF
echo "$ta" >"$TMP/ta.json"
echo "$tb" >"$TMP/tb.json"
expect_eq "per-tunnel counters: gwa's into a tunnel are gwb's out of it, both ways" \
	"$(python3 "$TMP/exact.py" "$TMP/ta.json" "$TMP/tb.json")" "exact"
a=$(gw_stats gwa)
expect_eq "gwa and gwb: superpackets written whole into their TAPs (keys by tunnel)" \
	"$(json_get "$a" 'd["total"]["tap_writes"] > 0'), $(json_get "$(gw_stats gwb)" 'd["total"]["tap_writes"] > 0')" "True, True"
expect_eq "gwa: the tunnels' packets from TUN are all it took from TUN (the rest: dropped)" \
	"$(json_get "$ta" 'sum(t["tx_packets"] for t in d)')" "$(json_get "$a" 'd["total"]["tun_rx_packets"]')"
expect_eq "a page past the end is empty" "$(json_get "$(gw_stats gwa "tunnels $N")" '(d["list"], d["next"])')" "([], $N)"
expect_match "bad arguments to tunnels: an error" "$(gw_stats gwa "tunnels x")" '"error": "bad arguments'

# A packet for no tunnel: dropped, counted.
before=$(json_get "$(gw_stats gwa)" 'd["total"]["drops"]["tx_no_tunnel"]')
ip -n "$P-gwa" route add 198.18.250.0/24 dev gre0
ip netns exec "$P-gwa" ping -c 3 -i 0.2 -W 1 198.18.250.1 >/dev/null 2>&1 || true # none answers
expect_eq "gwa: three pings for no tunnel counted as tx_no_tunnel" \
	"$(json_get "$(gw_stats gwa)" 'd["total"]["drops"]["tx_no_tunnel"] - '"$before")" "3"

gw_stop gwa
gw_stop gwb
"$TOPO" down tunnels --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
