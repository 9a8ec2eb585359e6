#!/bin/bash
# Superpackets whole through the TAP with a tunnel file (docs/gregw.md, "Many tunnels"), plain
# GRE and (@gre-udp) GRE-in-UDP: gwa and gwb with 5 tunnels to each other (one peer), tunnel i
# between the client's site 198.18.64.i and the server's 198.18.128.i of the bed tunnels.topo:
# t0 key 1, t1 key 2, t2 key 0xdeadbeef (its top bit set), t3 without a key, t4 key 5 with
# sequence numbers, which the kernel's segmentation cannot make. Both gregws run with --ttl
# inherit, every session marked DSCP 46 with ECN negotiated. The TAP is in use (config, no
# warning) and the tunnels listing says which tunnels it takes (all but t4). A verified push
# on each tunnel: gwa wrote superpackets into its TAP for t0 to t3 and none for t4, whose
# superpackets were cut, and gwa's frames of t2 (tcpdump) all carry transit's own source
# address, which the program writes back over the key; a verified pull on t2, t3 and t4, the
# same of gwb's TAP. tunbed-wire on gwa's transit, given gwa's tunnel file, from before the
# first packet: every frame valid (its tunnel's key, or none for t3; sequence numbers on t4's
# alone; the outer DSCP, ECN field and TTL the inner ones), superpackets on the wire, each
# tunnel's frames seen each way; per tunnel, gwa's counters are gwb's, both ways, nothing
# dropped. Then a change at run time, on both gateways, with no program loaded again: t0 gets
# sequence numbers, t1 loses its key, t3 gets key 0xffffffff, t4 loses its sequence numbers;
# the listing follows, a verified push on each of the four writes superpackets into the TAP
# for t1, t3 and t4 and none for t0, and a second audit with the changed file finds every
# frame valid, frames of the four tunnels alone, and what each counted since the change the
# other's. Then gwa's transit gets another address at run time: plain GRE's superpackets are
# cut until it is back (the program writes the address of start), GRE-in-UDP's go on whole,
# every frame from the new address. Then over IPv6 (2001:2::1 to 2001:2::2), t0 with key 7
# and t1 without: a verified push on each through the TAP, the audit clean, the counters
# gwa's and gwb's alike.
#
#  P-client                P-gwa [gregw --tunnels, TAP gregw-tx0]    [gregw --tunnels] P-gwb           P-server
#  198.18.64.i ---lan-a--- 198.18.1.1  198.18.0.1 ====5 tunnels==== 198.18.0.2  198.18.3.1 ---lan-b--- 198.18.128.i
#                                      [tunbed-wire --tunnels on transit]
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbtapt
WIRE="$TUNBED_BIN/tunbed-wire"
[ -x "$WIRE" ] || die "$WIRE not built"
WIRE_PID=""
TCPDUMP=""

"$TOPO" up tunnels --prefix "$P" >/dev/null
ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=1

# tunnels FILE PEER SITE-OCTET OPTIONS...: tunnel i of OPTIONS[i] (its key and seq lines,
# ';' between them) to PEER, for the site 198.18.SITE-OCTET.i.
tunnels() {
	local file=$1 peer=$2 octet=$3 i=0 opts
	shift 3
	: >"$file.tmp"
	for opts in "$@"; do
		printf '[tunnel t%d]\npeer = %s\nprefixes = 198.18.%d.%d/32\nencap = %s\n%s\n' "$i" \
			"$peer" "$octet" "$i" "$GW_ENCAP" "${opts//; /$'\n'}" >>"$file.tmp"
		i=$((i + 1))
	done
	mv -f "$file.tmp" "$file"
}
# The tunnels' keys and options at start, and after the change.
START=("key = 1" "key = 2" "key = 3735928559" "seq = no" "key = 5; seq = yes")
CHANGED=("key = 1; seq = yes" "seq = no" "key = 3735928559" "key = 4294967295" "key = 5")
tunnels "$TMP/gwa.tunnels" 198.18.0.2 128 "${START[@]}"
tunnels "$TMP/gwb.tunnels" 198.18.0.1 64 "${START[@]}"
for i in 0 1 2 3 4; do
	ip -n "$P-client" route add "198.18.128.$i/32" via 198.18.1.1 src "198.18.64.$i"
done

gw_start gwa "$P-gwa" --tunnels "$TMP/gwa.tunnels" --addr 198.19.0.1/24 --workers 2 --ttl inherit
gw_start gwb "$P-gwb" --tunnels "$TMP/gwb.tunnels" --addr 198.19.0.2/24 --workers 2 --ttl inherit
expect_eq "gwa: config: through the TAP with the tunnel file, nothing against it" \
	"$(json_get "$(gw_stats gwa)" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"], d["config"]["tap"], d["tunnels"]["count"])')" \
	"('tap', None, 'gregw-tx0', 5)"
expect_eq "gwa: no warning about the TAP" "$(grep -c 'cannot go whole' "$TMP/gwa.err" || true)" 0

# takes NAME: which of a gateway's tunnels the TAP takes, as the tunnels command lists them.
takes() { json_get "$(gw_stats "$1" tunnels)" '[t["name"] for t in d["list"] if t["tap"]]'; }
expect_eq "gwa: the TAP takes every tunnel but t4 (seq)" "$(takes gwa)" "['t0', 't1', 't2', 't3']"

# wire_start FILE [LOCAL]: the audit on gwa's transit with the tunnel file FILE, gwa's address
# LOCAL (198.18.0.1), ready.
wire_start() {
	rm -f "$TMP/wire.ready"
	ip netns exec "$P-gwa" "$WIRE" --iface transit --json --check --ready-file "$TMP/wire.ready" \
		--tunnels "$1" --local "${2:-198.18.0.1}" --expect-tos inherit --expect-ttl inherit \
		>"$TMP/wire.json" 2>"$TMP/wire.err" &
	WIRE_PID=$!
	poll 30 grep -qx ready "$TMP/wire.ready" || die "tunbed-wire did not start: $(cat "$TMP/wire.err")"
}
# wire_stop WHAT: the audit stopped, its exit status 0 (3: a frame broke a rule); its JSON in WJ.
wire_stop() {
	stop_bg "$WIRE_PID" TERM "$1: tunbed-wire"
	WIRE_PID=""
	expect_eq "$1: tunbed-wire's exit status (3: a frame broke a rule)" "$BG_STATUS" 0
	WJ=$(cat "$TMP/wire.json")
}

# tunnels_ready N [WHAT]: a ping through each of tunnels t0 to tN-1, then both gateways' next
# hops resolved; failures start with WHAT.
tunnels_ready() {
	local i g
	for ((i = 0; i < $1; i++)); do
		poll 10 ip netns exec "$P-client" ping -c 1 -W 1 "198.18.128.$i" || fail "${2:-}no ping through t$i"
	done
	for g in gwa gwb; do
		poll 10 gw_true "$g" 'd["next_hop"]["lladdr"] is not None' || fail "${2:-}$g's next hop never resolved"
	done
}

# From before the first packet through a tunnel: every one of them is in the audit.
wire_start "$TMP/gwa.tunnels"
tunnels_ready 5

# xfer I PATTERN: a verified transfer of 2 sessions x 4 MiB on tunnel i, marked DSCP 46 with
# ECN; how many superpackets gwa and gwb wrote into their TAPs meanwhile in TAPA and TAPB.
tr_server "$P-server" 9400
tapw() { json_get "$(gw_stats "$1")" 'd["total"]["tap_writes"]'; }
xfer() {
	local a0 b0 ok='s["sent"] == s["server_received"] == 4 << 20'
	[ "$2" = pull ] && ok='s["received"] == s["server_sent"] == 4 << 20'
	a0=$(tapw gwa)
	b0=$(tapw gwb)
	# A transfer whose superpackets the peer drops (a wrong key) would never end: 60 s bound
	# the failure (under a second here), so that it is told, not the test's timeout.
	TR_STATUS=0
	timeout 60 ip netns exec "$P-client" "$TRAFFIC" client "198.18.128.$1" --port 9400 \
		--sessions 2 --bytes 4m --pattern "$2" --verify --dscp 46 --ecn on --json \
		>"$TMP/client.json" 2>"$TMP/client.err" || TR_STATUS=$?
	TR_JSON=$(cat "$TMP/client.json")
	[ "$TR_STATUS" != 124 ] || die "t$1: $2 not done in 60 s ($(json_get "$(gw_stats gwb)" 'd["total"]["drops"]'))"
	expect_eq "t$1: $2, 2 x 4 MiB verified, equal on both sides, ECN negotiated" \
		"$TR_STATUS $(json_get "$TR_JSON" 'd["complete"] and d["tcp"]["verify"]["mismatches"] == 0 and d["tcp"]["ecn_negotiated"] == 2 and all('"$ok"' for s in d["tcp"]["per_session"])')" "0 True"
	TAPA=$(($(tapw gwa) - a0))
	TAPB=$(($(tapw gwb) - b0))
}
# whole WHAT GATEWAY WRITES YES: the gateway wrote superpackets into its TAP (YES 1) or none.
whole() {
	if [ "$4" = 1 ]; then
		expect_eq "$1: $2 wrote superpackets into its TAP" "$(($3 > 0))" 1
	else
		expect_eq "$1: $2 wrote nothing into its TAP (cut)" "$3" 0
	fi
}

for i in 0 1 2 3 4; do
	# t2's frames from gwa captured too: the program writes the key over the source address
	# gwa's frames carry there, and the interface's own back.
	if [ "$i" = 2 ]; then
		ip netns exec "$P-gwa" tcpdump -i transit -n -s 64 -U --immediate-mode -w "$TMP/t2.pcap" \
			src host 198.18.0.1 2>"$TMP/tcpdump.err" &
		TCPDUMP=$!
		poll 30 grep -q "listening on" "$TMP/tcpdump.err" || die "tcpdump did not start: $(cat "$TMP/tcpdump.err")"
	fi
	xfer "$i" push
	whole "t$i push" gwa "$TAPA" "$((i < 4))"
done
stop_bg "$TCPDUMP" INT tcpdump
mac=$(ip -n "$P-gwa" -j link show transit | json_get "$(cat)" 'd[0]["address"]')
# Each line: time, source address, '>', destination, ethertype ..., length N: ...
expect_eq "t2: gwa's frames all from transit's address, superpackets among them" \
	"$(tcpdump -r "$TMP/t2.pcap" -e -n 2>/dev/null | python3 -c '
import re, sys
lines = sys.stdin.read().splitlines()
lens = [int(m.group(1)) for m in (re.search(r"ethertype [^,]*, length (\d+)", l) for l in lines) if m]
print(len(lines) > 100, sum(l.split()[1] != sys.argv[1] for l in lines), max(lens or [0]) > 1514)' "$mac")" \
	"True 0 True"
for i in 2 3 4; do
	xfer "$i" pull
	whole "t$i pull" gwb "$TAPB" "$((i < 4))"
done

# listing GATEWAY: every tunnel's counters, as the tunnels command lists them.
listing() { json_get "$(gw_stats "$1" tunnels)" 'json.dumps(d["list"])'; }
cat >"$TMP/exact.py" <<'EOF'
"""Per tunnel: gwa's counters since BEFORE are gwb's, both ways; the audit saw frames each way
of the tunnels that carried packets, none of the others; no drop. (The audit counts a
superpacket as the segments the link's MTU would give, and the tunnel MTU leaves room for the
longest header of all tunnels: a shorter header's superpacket may count one segment less.)
Arguments: gwa's listing before and after, gwb's before and after, the audit, the tunnels that
must have carried packets each way."""
import json, sys
a0, a1, b0, b1, wire = (json.loads(open(f).read() or "[]") for f in sys.argv[1:6])
busy = sys.argv[6].split(",")
def by_name(l):
    return {t["name"]: t for t in l}
def since(now, before, name, key):
    return now[name][key] - (before[name][key] if name in before else 0)
a0, a1, b0, b1 = map(by_name, (a0, a1, b0, b1))
frames = {t["name"]: t["frames"] for t in wire["tunnels"]["list"]}
bad = []
for n in sorted(a1):
    ga = {k: since(a1, a0, n, k) for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes")}
    gb = {k: since(b1, b0, n, k) for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes")}
    if (ga["tx_packets"], ga["tx_bytes"]) != (gb["rx_packets"], gb["rx_bytes"]):
        bad.append(f"{n}: gwa sent {ga['tx_packets']} ({ga['tx_bytes']} B), gwb took {gb['rx_packets']} ({gb['rx_bytes']} B)")
    if (gb["tx_packets"], gb["tx_bytes"]) != (ga["rx_packets"], ga["rx_bytes"]):
        bad.append(f"{n}: gwb sent {gb['tx_packets']} ({gb['tx_bytes']} B), gwa took {ga['rx_packets']} ({ga['rx_bytes']} B)")
    want = n in busy
    if want != (ga["tx_packets"] > 0 and gb["tx_packets"] > 0) or ([want, want] != [f > 0 for f in frames.get(n, [0, 0])]):
        bad.append(f"{n}: {ga['tx_packets']} and {gb['tx_packets']} packets each way, the audit's frames {frames.get(n)}")
    for g, t in (("gwa", a1[n]), ("gwb", b1[n])):
        if any(t["drops"].values()):
            bad.append(f"{n}: {g} dropped {t['drops']}")
print("; ".join(bad[:5]) or "exact")
EOF
tr_stop
wire_stop "at start"
listing gwa >"$TMP/a1.json"
listing gwb >"$TMP/b1.json"
echo "$WJ" >"$TMP/wire1.json"
: >"$TMP/none.json"
expect_eq "at start: the audit is clean, every tunnel both ways, no frame of no tunnel, nothing missed" \
	"$(json_get "$WJ" '(d["clean"], d["violation_frames"], d["source"]["capture_dropped"], d["tunnels"]["count"], d["tunnels"]["both_ways"], d["tunnels"]["no_tunnel_frames"])')" \
	"(True, 0, 0, 5, 5, 0)"
expect_eq "at start: superpackets on the wire, as gwa and gwb wrote them" \
	"$(json_get "$WJ" '(d["directions"][0]["gso_frames"] > 0, d["directions"][1]["gso_frames"] > 0)')" "(True, True)"
expect_eq "at start: per tunnel, gwa's counters are gwb's both ways, the audit saw it both ways, no drop" \
	"$(python3 "$TMP/exact.py" "$TMP/none.json" "$TMP/a1.json" "$TMP/none.json" "$TMP/b1.json" "$TMP/wire1.json" t0,t1,t2,t3,t4)" "exact"

log "--- a change at run time: the next superpackets go by it"
# change GATEWAY PEER SITE-OCTET I OPTIONS: tunnel i replaced with OPTIONS.
change() {
	expect_match "$1: t$4 replaced with $5" \
		"$("$GREGW" ctl "${GW_SOCK[$1]}" "replace t$4 peer = $2; prefixes = 198.18.$3.$4/32; encap = $GW_ENCAP; $5")" \
		'"changed": "replace"'
}
# t3 takes its key before t1 gives up its own: one peer has one tunnel without a key.
for i in 0 3 1 4; do
	change gwa 198.18.0.2 128 "$i" "${CHANGED[$i]}"
	change gwb 198.18.0.1 64 "$i" "${CHANGED[$i]}"
done
expect_eq "gwa: the TAP takes every tunnel but t0 (seq now)" "$(takes gwa)" "['t1', 't2', 't3', 't4']"
tunnels "$TMP/gwa2.tunnels" 198.18.0.2 128 "${CHANGED[@]}"
wire_start "$TMP/gwa2.tunnels"
tr_server "$P-server" 9400
for i in 0 1 3 4; do
	xfer "$i" push
	whole "after the change, t$i push" gwa "$TAPA" "$((i > 0))"
done
tr_stop
wire_stop "after the change"
listing gwa >"$TMP/a2.json"
listing gwb >"$TMP/b2.json"
echo "$WJ" >"$TMP/wire2.json"
expect_eq "after the change: the audit with the changed file is clean, four tunnels both ways" \
	"$(json_get "$WJ" '(d["clean"], d["violation_frames"], d["source"]["capture_dropped"], d["tunnels"]["both_ways"], d["tunnels"]["no_tunnel_frames"])')" \
	"(True, 0, 0, 4, 0)"
expect_eq "after the change: per tunnel, what each counted since is the other's, the audit saw the busy ones, no drop" \
	"$(python3 "$TMP/exact.py" "$TMP/a1.json" "$TMP/a2.json" "$TMP/b1.json" "$TMP/b2.json" "$TMP/wire2.json" t0,t1,t3,t4)" "exact"
for g in gwa gwb; do
	expect_eq "$g: nothing dropped but tx_no_tunnel" \
		"$(json_get "$(gw_stats "$g")" 'd["total"]["dropped"] == d["total"]["drops"]["tx_no_tunnel"]')" True
done

log "--- transit's address changed at run time: plain GRE's program would write the old one"
# set_mac MAC: gwa's transit address MAC, gwb's neighbour entry of it too, and gwa's next hop
# looked up again since and resolved.
set_mac() {
	local n0
	n0=$(json_get "$(gw_stats gwa)" 'd["next_hop"]["lookups"]')
	ip -n "$P-gwa" link set dev transit address "$1"
	ip -n "$P-gwb" neigh replace 198.18.0.1 lladdr "$1" dev transit
	poll 10 ip netns exec "$P-client" ping -c 1 -W 1 198.18.128.1 || fail "no ping through t1 after the change of address"
	poll 10 gw_true gwa 'd["next_hop"]["lookups"] > '"$n0"' and d["next_hop"]["lladdr"] is not None' ||
		fail "gwa's next hop not looked up again after the change of address"
}
new_mac=02:00:5e:10:00:01
set_mac "$new_mac"
tr_server "$P-server" 9400
ip netns exec "$P-gwa" tcpdump -i transit -n -s 64 -U --immediate-mode -w "$TMP/mac.pcap" \
	src host 198.18.0.1 2>"$TMP/tcpdump.err" &
TCPDUMP=$!
poll 30 grep -q "listening on" "$TMP/tcpdump.err" || die "tcpdump did not start: $(cat "$TMP/tcpdump.err")"
xfer 1 push
stop_bg "$TCPDUMP" INT tcpdump
# GRE-in-UDP's frames are gregw's whole, the new address among them: the TAP goes on.
whole "a new address, t1 push" gwa "$TAPA" "$([ "$GW_ENCAP" = gre-udp ] && echo 1 || echo 0)"
expect_eq "a new address: gwa's frames all from it" \
	"$(tcpdump -r "$TMP/mac.pcap" -e -n 2>/dev/null | python3 -c '
import sys
lines = sys.stdin.read().splitlines()
print(len(lines) > 100, sum(l.split()[1] != sys.argv[1] for l in lines))' "$new_mac")" "True 0"
set_mac "$mac"
xfer 1 push
whole "the address back, t1 push" gwa "$TAPA" 1
tr_stop

gw_stop gwa
gw_stop gwb

log "--- over IPv6: the program's IPv6 header, with a key and without"
tunnels "$TMP/gwa6.tunnels" 2001:2::2 128 "key = 7" "seq = no"
tunnels "$TMP/gwb6.tunnels" 2001:2::1 64 "key = 7" "seq = no"
gw_start gwa "$P-gwa" --tunnels "$TMP/gwa6.tunnels" --addr 198.19.0.1/24 --workers 2 --ttl inherit
gw_start gwb "$P-gwb" --tunnels "$TMP/gwb6.tunnels" --addr 198.19.0.2/24 --workers 2 --ttl inherit
expect_eq "IPv6: gwa through the TAP, both tunnels" \
	"$(json_get "$(gw_stats gwa)" '(d["config"]["wire_tx"], d["config"]["local"])'), $(takes gwa)" \
	"('tap', '2001:2::1'), ['t0', 't1']"
wire_start "$TMP/gwa6.tunnels" 2001:2::1
tunnels_ready 2 "IPv6: "
tr_server "$P-server" 9400
for i in 0 1; do
	xfer "$i" push
	whole "IPv6, t$i push" gwa "$TAPA" 1
done
tr_stop
wire_stop "IPv6"
listing gwa >"$TMP/a6.json"
listing gwb >"$TMP/b6.json"
echo "$WJ" >"$TMP/wire6.json"
expect_eq "IPv6: the audit is clean, both tunnels both ways, superpackets on the wire" \
	"$(json_get "$WJ" '(d["clean"], d["violation_frames"], d["source"]["capture_dropped"], d["tunnels"]["both_ways"], d["tunnels"]["no_tunnel_frames"], d["directions"][0]["gso_frames"] > 0)')" \
	"(True, 0, 0, 2, 0, True)"
expect_eq "IPv6: per tunnel, gwa's counters are gwb's both ways, no drop" \
	"$(python3 "$TMP/exact.py" "$TMP/none.json" "$TMP/a6.json" "$TMP/none.json" "$TMP/b6.json" "$TMP/wire6.json" t0,t1)" "exact"
gw_stop gwa
gw_stop gwb
"$TOPO" down tunnels --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
