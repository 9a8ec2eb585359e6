#!/bin/bash
# Helpers for the interop tests against the Linux kernel's own GRE, on top of gregw_lib.sh,
# traffic_lib.sh and tests/guest/guest.sh: a guest with Debian's kernel takes gwb's place in
# the RAS topology, so that gregw in gwa meets the kernel's tunnel (ip_gre, ip6_gre, fou) in
# the guest, and the client and the server stay in namespaces of this machine:
#
#  P-client --lan-a (veth)-- P-gwa [gregw gre0] ==transit (TAP)== guest [kernel g0] --lan-b (TAP)-- P-server
#  198.18.1.2                198.18.1.1  198.18.0.1            198.18.0.2   198.18.3.1       198.18.3.2
#  2001:2:0:1::2             2001:2:0:1::1  2001:2::1          2001:2::2    2001:2:0:3::1    2001:2:0:3::2
#                            tunnel 198.19.0.1, 2001:2:0:ff::1 tunnel 198.19.0.2, 2001:2:0:ff::2
#
# qemu runs in P-vm, which holds nothing else. Source it, then call guest_test_init.
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# shellcheck source=gregw_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/traffic_lib.sh"
# shellcheck source=../guest/guest.sh
source "$(dirname "${BASH_SOURCE[0]}")/../guest/guest.sh"

WIRE="$TUNBED_BIN/tunbed-wire"
MAC_TRANSIT=52:54:00:7b:00:01
MAC_LANB=52:54:00:7b:00:02
# gregw's offloads follow GREGW_MODE (gregw_lib.sh); each case names its encapsulation.
GT_OFFLOAD=()
case $GW_MODE in
*-nooffload) GT_OFFLOAD=(--offload off) ;;
esac

guest_test_init() {
	gregw_test_init
	# shellcheck disable=SC2154 # rc is assigned inside the trap string
	trap 'rc=$?; gw_cleanup; guest_cleanup; guest_record "$rc"; cleanup "$rc"' EXIT
	[ -x "$WIRE" ] || die "$WIRE not built"
	command -v tcpdump >/dev/null || die "tcpdump is not installed"
}

# guest_record STATUS: this run's result (pass: exit status 0 and no failure, as cleanup
# judges it; else fail) for the programs it ran, by their build id (scripts/build-id
# TUNBED_BIN), in INTEROP_DIR/TEST.json (default: interop/ beside TUNBED_BIN), written beside
# and renamed over: where tunbed datasheet finds the guest tests' result for the build it
# measures (docs/datasheet.md). It never fails the trap it runs in: a record not written is
# a datasheet's "not run".
guest_record() {
	local result=pass dir id f
	{ [ "$1" -eq 0 ] && [ "$failures" -eq 0 ]; } || result=fail
	dir=${INTEROP_DIR:-$(dirname "$TUNBED_BIN")/interop}
	id=$("$TUNBED_SRC/scripts/build-id" "$TUNBED_BIN" 2>/dev/null) || return 0
	mkdir -p "$dir" 2>/dev/null || return 0
	f=$(mktemp "$dir/.$TEST_NAME.XXXXXX" 2>/dev/null) || return 0
	if printf '{"test": "%s", "result": "%s", "build_id": "%s", "finished_utc": "%s"}\n' \
		"$TEST_NAME" "$result" "$id" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$f" &&
		mv -f "$f" "$dir/$TEST_NAME.json"; then
		log "result recorded: $result for build $id in $dir/$TEST_NAME.json"
	else
		rm -f "$f"
	fi
}

# gt_up PREFIX: the namespaces, the veth, the guest (its TAPs moved into gwa and server) and
# the addresses and routes of both sides; the guest's side is its setup at boot.
gt_up() {
	local p=$1 ns
	for ns in vm client gwa server; do ip netns add "$p-$ns"; done
	for ns in client gwa server; do
		ip -n "$p-$ns" link set lo up
		ip netns exec "$p-$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	done
	ip netns exec "$p-gwa" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	ip link add lan-a netns "$p-client" type veth peer name lan-a netns "$p-gwa"
	cat >"$TMP/guest-setup.sh" <<EOF
guest_nic $MAC_TRANSIT transit
guest_nic $MAC_LANB lan-b
sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 net.ipv4.conf.all.rp_filter=0 \
	net.ipv4.conf.default.rp_filter=0 net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
ip addr add 198.18.0.2/24 dev transit
ip addr add 2001:2::2/64 dev transit nodad
ip addr add 198.18.3.1/24 dev lan-b
ip addr add 2001:2:0:3::1/64 dev lan-b nodad
EOF
	guest_start "$p-vm" "$TMP/guest-setup.sh" "$p-gwa:transit:$MAC_TRANSIT" "$p-server:lan-b:$MAC_LANB"
	ip -n "$p-client" addr add 198.18.1.2/24 dev lan-a
	ip -n "$p-client" addr add 2001:2:0:1::2/64 dev lan-a nodad
	ip -n "$p-client" link set lan-a up
	ip -n "$p-gwa" addr add 198.18.1.1/24 dev lan-a
	ip -n "$p-gwa" addr add 2001:2:0:1::1/64 dev lan-a nodad
	ip -n "$p-gwa" link set lan-a up
	ip -n "$p-gwa" addr add 198.18.0.1/24 dev transit
	ip -n "$p-gwa" addr add 2001:2::1/64 dev transit nodad
	ip -n "$p-server" addr add 198.18.3.2/24 dev lan-b
	ip -n "$p-server" addr add 2001:2:0:3::2/64 dev lan-b nodad
	local net
	for net in 198.18.3.0/24 198.19.0.0/24 198.18.0.0/24; do
		ip -n "$p-client" route add "$net" via 198.18.1.1
	done
	for net in 2001:2:0:3::/64 2001:2:0:ff::/64 2001:2::/64; do
		ip -n "$p-client" route add "$net" via 2001:2:0:1::1
	done
	for net in 198.18.1.0/24 198.19.0.0/24 198.18.0.0/24; do
		ip -n "$p-server" route add "$net" via 198.18.3.1
	done
	for net in 2001:2:0:1::/64 2001:2:0:ff::/64 2001:2::/64; do
		ip -n "$p-server" route add "$net" via 2001:2:0:3::1
	done
	poll 30 ip netns exec "$p-gwa" ping -c 1 -W 1 198.18.0.2 || guest_die "gwa does not reach the guest on transit"
	poll 30 ip netns exec "$p-gwa" ping -c 1 -W 1 2001:2::2 || guest_die "gwa does not reach the guest on transit over IPv6"
}

# gt_tunnel TYPE ARGS...: the guest's tunnel g0 made anew: TYPE gre (outer IPv4) or ip6gre
# (outer IPv6), ARGS the rest of ip link add's (key, iseq, ocsum, encap ...); its addresses
# and the routes to the client's LAN through it.
gt_tunnel() {
	local type=$1 ends
	shift
	case $type in
	gre) ends="local 198.18.0.2 remote 198.18.0.1" ;;
	ip6gre) ends="local 2001:2::2 remote 2001:2::1" ;;
	esac
	guest_do "ip link del g0 2>/dev/null; ip link add g0 type $type $ends ttl 64 $* &&
		ip addr add 198.19.0.2/24 dev g0 && ip addr add 2001:2:0:ff::2/64 dev g0 nodad &&
		ip link set g0 up && ip route replace 198.18.1.0/24 dev g0 &&
		ip -6 route replace 2001:2:0:1::/64 dev g0 && ip -d link show g0"
	log "guest: $(echo "$GUEST_OUT" | tr -s ' \n' ' ')"
	gt_forget_pmtu
}

# gt_forget_pmtu: the client's and the server's path MTUs learned so far are forgotten, so
# that a case starts from the links' MTUs whatever the case before taught them.
gt_forget_pmtu() {
	local ns
	for ns in client server; do
		ip -n "$P-$ns" route flush cache
		ip -n "$P-$ns" -6 route flush cache
	done
}

# gt_gregw ENCAP REMOTE ARGS...: gregw in gwa (name gwa) towards the guest.
gt_gregw() {
	local encap=$1 remote=$2
	shift 2
	GW_MODE_ARGS=(--encap "$encap" "${GT_OFFLOAD[@]}")
	gw_start gwa "$P-gwa" --remote "$remote" --addr 198.19.0.1/24 --addr6 2001:2:0:ff::1/64 \
		--route 198.18.3.0/24 --route 2001:2:0:3::/64 "$@"
}

# gt_link_stats: the guest's g0 counters as ip -j -s -s gives them (a JSON list).
gt_link_stats() {
	guest_do "ip -j -s -s link show g0"
	echo "$GUEST_OUT"
}
# gt_rx FIELD: one receive counter of g0 (packets, errors, crc_errors, fifo_errors, ...).
gt_rx() { json_get "$(gt_link_stats)" "d[0]['stats64']['rx']['$1']"; }
# gt_snmp PROTO FIELD: a counter of the guest's /proc/net/snmp (Icmp OutDestUnreachs, ...).
gt_snmp() {
	guest_do "cat /proc/net/snmp"
	echo "$GUEST_OUT" | awk -v p="$1:" -v f="$2" '$1 == p && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next } $1 == p && h { print $c[f] }'
}

# gt_drop NAME REASON: one of gregw's drop counters.
gt_drop() { json_get "$(gw_stats "$1")" "d['total']['drops']['$2']"; }

# gt_ping FROM DEST SIZE WHAT: DF pings of SIZE payload bytes that must all come back.
gt_ping() {
	local from=$1 dest=$2 size=$3 what=$4 out
	if out=$(ip netns exec "$P-$from" ping -c 3 -i 0.2 -W 5 -Mdo -s "$size" "$dest" 2>&1); then
		log "ok: $what: $from -> $dest, $size bytes, DF"
	else
		fail "$what: $from -> $dest, $size bytes, DF: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}

# gt_traffic DEST PATTERN WHAT [options]: tunbed-traffic client -> server, 2 sessions of
# 1 MiB verified, which must complete with every byte on both sides; GT_TRAFFIC_ARGS too.
gt_traffic() {
	local dest=$1 pattern=$2 what=$3 ok
	shift 3
	tr_client "$P-client" "$dest" --sessions 2 --bytes 1m --pattern "$pattern" --verify --json "${GT_TRAFFIC_ARGS[@]}" "$@"
	if [ "$TR_STATUS" != 0 ]; then
		fail "$what: tunbed-traffic $pattern to $dest exited $TR_STATUS: $(tail -n 3 "$TMP/client.err")"
		return
	fi
	case $pattern in
	push) ok=$(json_get "$TR_JSON" 'd["complete"] and d["tcp"]["verify"]["mismatches"] == 0 and all(s["sent"] == s["server_received"] == 1048576 for s in d["tcp"]["per_session"])') ;;
	pull) ok=$(json_get "$TR_JSON" 'd["complete"] and d["tcp"]["verify"]["mismatches"] == 0 and all(s["received"] == s["server_sent"] == 1048576 for s in d["tcp"]["per_session"])') ;;
	esac
	expect_eq "$what: $pattern to $dest, 2 x 1 MiB verified, equal on both sides" "$ok" "True"
}

# wire_start NAME args...: tunbed-wire on gwa's transit (the TAP), JSON in $TMP/NAME.json.
wire_start() {
	local name=$1
	shift
	rm -f "$TMP/$name.ready"
	ip netns exec "$P-gwa" "$WIRE" --iface transit --json --ready-file "$TMP/$name.ready" "$@" \
		>"$TMP/$name.json" 2>"$TMP/$name.err" &
	WIRE_PID=$!
	poll 30 grep -qx ready "$TMP/$name.ready" || die "tunbed-wire did not start: $(cat "$TMP/$name.err")"
}

# wire_stop NAME WHAT: SIGTERM; its report must be clean with frames both ways.
wire_stop() {
	local name=$1 what=$2 w
	stop_bg "$WIRE_PID" TERM tunbed-wire
	expect_eq "$what: tunbed-wire exit status" "$BG_STATUS" "0"
	w=$(cat "$TMP/$name.json")
	WIRE_JSON=$w
	expect_eq "$what: wire audit clean, frames both ways (gregw's and the kernel's)" \
		"$(json_get "$w" 'd["clean"] and d["directions"][0]["frames"] > 0 and d["directions"][1]["frames"] > 0')" "True"
	if [ "$(json_get "$w" 'd["clean"]')" != True ]; then
		json_get "$w" '{k: v for k, v in d["violations"].items() if v["count"]}' >&2
	fi
	log "$what: wire: $(json_get "$w" '[(x["name"], x["frames"], x["inner_bytes"]) for x in d["directions"]]')"
}

# gt_capture NS IFACE FILTER NAME: tcpdump -v in the background into $TMP/NAME.pcap.
gt_capture() {
	local ns=$1 iface=$2 filter=$3 name=$4
	rm -f "$TMP/$name.pcap"
	ip netns exec "$P-$ns" tcpdump -i "$iface" -n -U --immediate-mode -s 200 -w "$TMP/$name.pcap" "$filter" \
		2>"$TMP/$name.tcpdump.err" &
	CAP_PID=$!
	poll 30 grep -q "listening on" "$TMP/$name.tcpdump.err" || die "tcpdump on $iface in $ns did not start"
}

# The outer family of a test's tunnel: the guest's tunnel type (gre or ip6gre) and the two
# ends, gwa's (GT_LOCAL) and the guest's (GT_REMOTE). guest_gre6.sh sets them for IPv6.
GT_TYPE=gre
GT_LOCAL=198.18.0.1
GT_REMOTE=198.18.0.2
ENCAP=gre
# What interop_case's transfers add to tunbed-traffic's options (--dscp, --ecn).
GT_TRAFFIC_ARGS=()

# interop_case WHAT GREGW-ARGS -- KERNEL-ARGS -- WIRE-ARGS: the guest's tunnel with the
# kernel's options, gregw with its own (over $ENCAP), then everything that must work: the
# same MTU on both, DF pings of the tunnel MTU both ways with IPv4 and IPv6 inside, verified
# transfers both ways, the wire audit clean both ways, no drop or error on either side.
interop_case() {
	local what=$1 mtu t0=$SECONDS
	shift
	local gargs=() kargs=() wargs=()
	while [ "$1" != -- ]; do gargs+=("$1"); shift; done
	shift
	while [ "$1" != -- ]; do kargs+=("$1"); shift; done
	shift
	wargs=("$@")
	log "--- $what: gregw --encap $ENCAP ${gargs[*]}; kernel $GT_TYPE ${kargs[*]:-(no options)}"
	gt_tunnel "$GT_TYPE" "${kargs[@]}"
	gt_gregw "$ENCAP" "$GT_REMOTE" "${gargs[@]}"
	mtu=$(json_get "$(gw_stats gwa)" 'd["config"]["mtu"]')
	expect_eq "$what: the kernel's g0 has gregw's MTU" "$(json_get "$(gt_link_stats)" 'd[0]["mtu"]')" "$mtu"
	wire_start "$what" --local "$GT_LOCAL" --remote "$GT_REMOTE" --mtu "$mtu" --write "$TMP/$what.pcap" "${wargs[@]}"
	gt_ping client 198.18.3.2 $((mtu - 28)) "$what: tunnel MTU"
	gt_ping server 198.18.1.2 $((mtu - 28)) "$what: tunnel MTU"
	gt_ping client 2001:2:0:3::2 $((mtu - 48)) "$what: tunnel MTU, IPv6 inside"
	gt_ping server 2001:2:0:1::2 $((mtu - 48)) "$what: tunnel MTU, IPv6 inside"
	gt_traffic 198.18.3.2 push "$what"
	gt_traffic 198.18.3.2 pull "$what"
	gt_traffic 2001:2:0:3::2 push "$what, IPv6 inside"
	wire_stop "$what" "$what"
	expect_eq "$what: gregw dropped nothing" "$(json_get "$(gw_stats gwa)" 'd["total"]["dropped"]')" "0"
	expect_eq "$what: g0 rx errors (crc, fifo, all)" \
		"$(json_get "$(gt_link_stats)" '"%d %d %d" % (d[0]["stats64"]["rx"]["crc_errors"], d[0]["stats64"]["rx"]["fifo_errors"], d[0]["stats64"]["rx"]["errors"])')" "0 0 0"
	log "$what: $((SECONDS - t0)) s"
}

# --- What each side refuses. refused_ping FROM DEST WHAT: pings that must not come back.
refused_ping() {
	if ip netns exec "$P-$1" ping -c 3 -i 0.2 -W 1 "$2" >/dev/null 2>&1; then
		fail "$3: $1 -> $2 answered"
	else
		log "ok: $3: $1 -> $2 gets no answer"
	fi
}
# g0_rx: "packets crc_errors fifo_errors errors" of the guest's g0.
g0_rx() {
	json_get "$(gt_link_stats)" '"%d %d %d %d" % tuple(d[0]["stats64"]["rx"][k] for k in ("packets", "crc_errors", "fifo_errors", "errors"))'
}
# refusal_start: the counters now. refusal_expect EXPR WHAT: EXPR (Python, over drops =
# gregw's drops by reason, gw = gregw's totals, g = g0's rx counters since refusal_start as
# a dict, u = the guest's ICMP destination unreachables sent since then) becomes true
# within 30 s.
refusal_start() {
	R_G0=$(g0_rx)
	R_UNREACH=$(gt_snmp Icmp OutDestUnreachs)
}
refusal_true() {
	local now unreach
	now=$(g0_rx)
	unreach=$(gt_snmp Icmp OutDestUnreachs)
	[ "$(python3 - "$1" "$R_G0" "$now" "$R_UNREACH" "$unreach" "$(gw_stats gwa)" <<'PY'
import json, sys
expr, g0, now, u0, u1, gw = sys.argv[1:]
keys = ("packets", "crc_errors", "fifo_errors", "errors")
g = {k: int(b) - int(a) for k, a, b in zip(keys, g0.split(), now.split())}
t = json.loads(gw)["total"]
print(eval(expr, {"g": g, "u": int(u1) - int(u0), "drops": t["drops"], "gw": t}))
PY
)" = True ]
}
refusal_expect() { # expr what
	if poll 30 refusal_true "$1"; then
		log "ok: $2 ($1)"
	else
		fail "$2: not within 30 s: $1 (g0 rx now $(g0_rx), was $R_G0; gregw drops $(json_get "$(gw_stats gwa)" '{k: v for k, v in d["total"]["drops"].items() if v}'))"
	fi
}

# --- PMTU. tcp_sizes NAME: the largest IP packet (IPv4 total length, or IPv6 payload length
# plus its 40-byte header) and the largest TCP payload of the capture's data segments, "IP
# PAYLOAD".
tcp_sizes() {
	tcpdump -r "$TMP/$1.pcap" -n -v 'tcp port 9400' 2>/dev/null | awk '
		/proto TCP/ { match($0, /length [0-9]+\)/); l = substr($0, RSTART + 7, RLENGTH - 8) + 0; if (l > ip) ip = l }
		/next-header TCP/ { match($0, /payload length: [0-9]+\)/); l = substr($0, RSTART + 16, RLENGTH - 17) + 40; if (l > ip) ip = l }
		/ > / && /length [0-9]+$/ { n = $NF + 0; if (n > pl) pl = n }
		END { print ip + 0, pl + 0 }'
}
# pmtu_tcp SENDER DEST PATTERN CAP-NS CAP-IFACE WANT WHAT: a 1 MiB verified session (client to
# DEST, PATTERN push or pull) after the path MTUs learned so far are forgotten; the
# receiver's capture must hold data segments of exactly WANT bytes and none larger, whose
# TCP payload is WANT less the IP header, 20 bytes of TCP and 12 of timestamps: the MSS the
# sender's TCP took from the ICMP error.
pmtu_tcp() {
	local sender=$1 dest=$2 pattern=$3 cns=$4 cif=$5 want=$6 what=$7 sizes hdr=52
	[[ $dest == *:* ]] && hdr=72
	gt_forget_pmtu
	# gregw writes the segments it merged into TUN as superpackets, and gwa's kernel would
	# hand them to the client's veth whole: with segmentation off there, it cuts them first.
	ip netns exec "$P-gwa" ethtool -K lan-a tso off gso off >/dev/null
	gt_capture "$cns" "$cif" "tcp port 9400" "$what"
	tr_client "$P-client" "$dest" --sessions 1 --bytes 1m --pattern "$pattern" --verify --json
	expect_eq "$what: 1 MiB $pattern verified" "$TR_STATUS $(json_get "$TR_JSON" 'd["complete"] and d["tcp"]["verify"]["mismatches"] == 0')" "0 True"
	poll 30 pcap_has "$TMP/$what.pcap" "tcp port 9400 and greater $want" 1 || fail "$what: no full-sized segment in the capture"
	stop_bg "$CAP_PID" TERM tcpdump
	ip netns exec "$P-gwa" ethtool -K lan-a tso on gso on >/dev/null
	sizes=$(tcp_sizes "$what")
	expect_eq "$what: largest IP packet and TCP payload $sender's TCP sends" "$sizes" "$want $((want - hdr))"
}

# interop_tos KERNEL-ARGS...: interop_case with the kernel's tunnel copying the inner DSCP
# (tos inherit; tclass inherit over IPv6) and gregw's default, --tos inherit: RFC 2983's
# uniform model on both ends, and ECN as each does it (RFC 6040's normal mode; the kernel's
# differs for an inner CE only, which no sender here makes: gt_tos_probes sends one). The
# client's sessions are marked DSCP 46, the server's DSCP 12, ECN negotiated; the audit
# expects the DSCP copied both ways, and every marked frame each way was. The TTL is
# GT_TOS_TTL: 64 on both ends (the kernel's ttl 64, gregw's default), or inherit (the kernel's
# ttl inherit, gregw's --ttl inherit), which the audit expects: every outer TTL the inner
# one, both ways.
GT_TOS_TTL=64
interop_tos() {
	local gargs=() kargs=("$@")
	if [ "$GT_TOS_TTL" = inherit ]; then
		gargs=(--ttl inherit)
		kargs+=(ttl inherit)
	fi
	tr_stop
	tr_server "$P-server" 9400 --dscp 12
	ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=1
	GT_TRAFFIC_ARGS=(--dscp 46 --ecn on)
	interop_case tos_inherit "${gargs[@]}" -- "${kargs[@]}" -- --no-key --no-seq --no-csum --expect-tos inherit --expect-ttl "$GT_TOS_TTL"
	expect_eq "tos inherit: the DSCP copied outside by both (every marked frame each way)" \
		"$(json_get "$WIRE_JSON" '[(x["tos"]["dscp_marked"] > 0, x["tos"]["dscp_copied"] == x["tos"]["dscp_marked"]) for x in d["directions"]]')" "[(True, True), (True, True)]"
	expect_eq "tos inherit: the audit checked DSCP and TTL as asked" "$(json_get "$WIRE_JSON" '(d["expect"]["tos"], d["expect"]["ttl"])')" \
		"$(python3 -c 'import sys; t = sys.argv[1]; print(("inherit", t if t == "inherit" else int(t)))' "$GT_TOS_TTL")"
	GT_TRAFFIC_ARGS=()
	ip netns exec "$P-client" sysctl -qw net.ipv4.tcp_ecn=2
	tr_stop
	tr_server "$P-server" 9400
}

# --- The kernel's DSCP and ECN across its tunnel, counted as the datasheet's DSCP/ECN part
# counts a gateway's by the wire (scripts/tunbedlib/kinds/datasheet_tos.py, the probes of
# scripts/tunbedlib/tosprobe.py): IPv4 outer only (tosprobe.py crafts IPv4).
TOSPROBE="$TUNBED_SRC/scripts/tunbedlib/tosprobe.py"
TOS_PROBES=100 # datagrams, or crafted packets, of each codepoint: the datasheet's count
TOS_PORT=9407
TOS_DSCP=46 # the encapsulation's datagrams' (EF), as the datasheet's sessions'

# tos_recv NS NAME: tosprobe.py recv on TOS_PORT in P-NS, counting datagrams by TOS byte until
# send-udp --end's datagram (or 60 s), its JSON lines in $TMP/NAME.recv, once it is bound.
tos_recv() {
	ip netns exec "$P-$1" python3 "$TOSPROBE" recv --port "$TOS_PORT" --time 60 >"$TMP/$2.recv" 2>"$TMP/$2.err" &
	TOS_RECV=$!
	poll 30 grep -q '"ready"' "$TMP/$2.recv" || die "tosprobe.py recv in $1 did not start: $(cat "$TMP/$2.err")"
}
# tos_arrived NAME: once the receiver has the end datagram, its counts in TOS_ARRIVED as
# {TOS byte: datagrams}, the non-zero ones.
tos_arrived() {
	wait_bg "$TOS_RECV" 70 "tosprobe.py recv ($1)"
	local last
	last=$(tail -n 1 "$TMP/$1.recv")
	expect_eq "$1: the receiver saw the end datagram and exited 0" "$BG_STATUS $(json_get "$last" 'd["end"]')" "0 True"
	TOS_ARRIVED=$(json_get "$last" 'dict(sorted((int(k), v) for k, v in d["tos"].items() if v))')
}
# g0_frame_errors: "rx_frame_errors rx_errors" of the guest's g0.
g0_frame_errors() {
	json_get "$(gt_link_stats)" '"%d %d" % (d[0]["stats64"]["rx"]["frame_errors"], d[0]["stats64"]["rx"]["errors"])'
}

# gt_tos_probes: with the tunnels of interop_tos still up (the kernel's tos inherit, gregw's
# --tos inherit), what the kernel does with the DS field (RFC 2983, RFC 6040):
#  - encapsulation: TOS_PROBES UDP datagrams from the server to the client of each of
#    ECT(0), ECT(1) and CE, all DSCP 46; tunbed-wire on gwa's transit counts the kernel's
#    frames by inner and outer codepoint. The kernel copies the DSCP (tos inherit), ECT(0)
#    and ECT(1), and sets ECT(0) outside CE (INET_ECN_encapsulate: RFC 3168's full
#    functionality, ecn_ce_reset to the audit); gregw then carries each datagram out with the
#    codepoint it went in with (Figure 4: CE inside ECT(0) stays CE);
#  - decapsulation: GRE packets crafted on gwa's transit (tosprobe.py send), outer CE, around
#    TOS_PROBES datagrams to the server of each of ECT(0), ECT(1) and Not-ECT (DSCP 10, 18
#    and 26 to tell them apart); the server counts what arrives: the ECT ones CE, the Not-ECT
#    ones none, each dropped by the kernel as a frame error of its g0 (ip_tunnel_rcv).
gt_tos_probes() {
	local w f0 f1 p cp ecn dscp n=$TOS_PROBES t0=$SECONDS
	# The kernel's direction's tos: (inner: {outer: frames}) for ECT(0), ECT(1), CE; DSCP
	# copied and marked.
	local ecn_of='(lambda t: [(i, {o: n for o, n in t["ecn"][i].items() if n}) for i in ("ect0", "ect1", "ce")])(d["directions"][1]["tos"])'
	local dscp_of='(lambda t: (t["dscp_copied"], t["dscp_marked"]))(d["directions"][1]["tos"])'
	log "--- the kernel's encapsulation (tos inherit): datagrams DSCP $TOS_DSCP of ECT(0), ECT(1) and CE from the server, their outer headers on transit"
	wire_start tos_encap --local "$GT_LOCAL" --remote "$GT_REMOTE" --no-key --no-seq --no-csum --expect-tos inherit --expect-ttl "$GT_TOS_TTL"
	tos_recv client tos_encap
	for p in ect0:2 ect1:1 ce:3; do
		ip netns exec "$P-server" python3 "$TOSPROBE" send-udp --dst 198.18.1.2 --port "$TOS_PORT" --count "$n" \
			--tos $((TOS_DSCP << 2 | ${p#*:})) --size 200 --pps 500 >/dev/null || fail "tosprobe.py send-udp (${p%:*}) failed"
	done
	ip netns exec "$P-server" python3 "$TOSPROBE" send-udp --dst 198.18.1.2 --port "$TOS_PORT" --end >/dev/null ||
		fail "tosprobe.py send-udp --end failed"
	tos_arrived tos_encap
	stop_bg "$WIRE_PID" TERM tunbed-wire
	expect_eq "tos probes: tunbed-wire exit status" "$BG_STATUS" "0"
	w=$(cat "$TMP/tos_encap.json")
	log "tos probes: the kernel's frames (inner: {outer: frames}) $(json_get "$w" "$ecn_of"), DSCP copied of marked $(json_get "$w" "$dscp_of")"
	expect_eq "tos probes: the kernel's frames are the guest's" "$(json_get "$w" 'd["directions"][1]["src"]')" "$GT_REMOTE"
	expect_eq "tos probes: the kernel copied ECT(0) and ECT(1) outside and set ECT(0) outside CE, every datagram" \
		"$(json_get "$w" "$ecn_of")" "[('ect0', {'ect0': $n}), ('ect1', {'ect1': $n}), ('ce', {'ect0': $n})]"
	expect_eq "tos probes: the kernel copied DSCP $TOS_DSCP outside, every datagram (copied, marked)" \
		"$(json_get "$w" "$dscp_of")" "($((3 * n)), $((3 * n)))"
	expect_eq "tos probes: the audit's violations: the kernel's CE reset alone (DSCP and TTL as expected)" \
		"$(json_get "$w" '{k: v["count"] for k, v in d["violations"].items() if v["count"]}')" "{'ecn_ce_reset': $n}"
	expect_eq "tos probes: at the client, after gregw's decapsulation, each datagram as it was sent (CE stays CE)" \
		"$TOS_ARRIVED" "{$((TOS_DSCP << 2 | 1)): $n, $((TOS_DSCP << 2 | 2)): $n, $((TOS_DSCP << 2 | 3)): $n}"

	log "--- the kernel's decapsulation (RFC 6040, 4.2): GRE packets crafted on transit, outer CE, around datagrams of ECT(0), ECT(1) and Not-ECT to the server"
	f0=$(g0_frame_errors)
	tos_recv server tos_decap
	for p in ect0:2:10 ect1:1:18 not-ect:0:26; do
		IFS=: read -r cp ecn dscp <<<"$p"
		ip netns exec "$P-gwa" python3 "$TOSPROBE" send --src "$GT_LOCAL" --dst "$GT_REMOTE" --inner-src 198.18.1.2 --inner-dst 198.18.3.2 \
			--port "$TOS_PORT" --count "$n" --outer-tos $((dscp << 2 | 3)) --inner-tos $((dscp << 2 | ecn)) >/dev/null ||
			fail "tosprobe.py send ($cp under CE) failed"
	done
	# The end datagram through gregw and the kernel's tunnel, behind the probes on transit.
	ip netns exec "$P-client" python3 "$TOSPROBE" send-udp --dst 198.18.3.2 --port "$TOS_PORT" --end >/dev/null ||
		fail "tosprobe.py send-udp --end failed"
	tos_arrived tos_decap
	f1=$(g0_frame_errors)
	log "tos probes: at the server (TOS byte: datagrams) $TOS_ARRIVED; g0's rx frame_errors and errors $f0 -> $f1"
	expect_eq "tos probes: every ECT(0) and ECT(1) datagram arrived CE, no Not-ECT one" \
		"$TOS_ARRIVED" "{$((10 << 2 | 3)): $n, $((18 << 2 | 3)): $n}"
	expect_eq "tos probes: the kernel dropped each Not-ECT one under CE as a frame error of g0 (rx frame_errors, errors)" \
		"$(python3 -c 'import sys; a, b = (list(map(int, x.split())) for x in sys.argv[1:]); print(b[0] - a[0], b[1] - a[1])' "$f0" "$f1")" "$n $n"
	log "tos probes: $((SECONDS - t0)) s"
}
