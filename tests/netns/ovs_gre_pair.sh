#!/bin/bash
# Open vSwitch's userspace datapath as the GRE gateway on both sides of ras.topo, through
# scripts/drivers/ovs-gre.sh (one ovsdb-server and one ovs-vswitchd in each gateway):
#
#  P-client 198.18.1.2 --lan-a-- P-gwa 198.18.0.1 ==transit== 198.18.0.2 P-gwb --lan-b-- 198.18.3.2 P-server
#                          gre0 198.19.0.1/24 ---GRE key 7--- gre0 198.19.0.2/24 (OVS internal ports)
#
# Checks: ping client -> server through the tunnel; GRE (IP protocol 47) with key 7 on gwb's
# transit (tshark); the MTU of gre0 (1472: 1500 - 20 - 8) end to end with DF; the kernels saw
# no GRE themselves (Ip InUnknownProtos stays 0); a 50 MB TCP transfer whose SHA-256 matches; down
# restores the gateways to kernel forwarding, twice is fine, and nothing is left (namespaces,
# the OVS processes, run directories, tap devices).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
DRIVER="$TUNBED_SRC/scripts/drivers/ovs-gre.sh"
netns_test_init
new_prefix P ovsgre
BG_PIDS=() # processes this test started in the background and has not reaped yet
reaped() { # pid: wait for it, and forget it (its PID may be reused later)
	local st=0 keep=() p
	wait "$1" || st=$?
	for p in "${BG_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	BG_PIDS=("${keep[@]}")
	return "$st"
}
OVS_UP=()  # namespaces where the driver was started

# Waits (30 s at most) until no process is left in the namespaces of the prefix: tshark's
# dumpcap, say, may outlive tshark for a moment, and a namespace with a process stays.
ns_empty() { [ -z "$(ip netns pids "$1" 2>/dev/null)" ]; }
settle() {
	local ns
	for ns in "$P-client" "$P-gwa" "$P-gwb" "$P-server"; do
		if [ -e "/run/netns/$ns" ] && ! poll 30 ns_empty "$ns"; then
			fail "processes still in $ns after 30 s: $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
		fi
	done
}

ovs_cleanup() {
	local status=$? pid ns
	for pid in "${BG_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	for ns in "${OVS_UP[@]}"; do
		"$DRIVER" down --netns "$ns" || echo "[$TEST_NAME] cleanup: down of $ns failed" >&2
	done
	settle
	"$TOPO" down --prefix "$P" >/dev/null || true # its complaints are worth seeing
	cleanup "$status" # lib.sh: takes down every prefix, removes $TMP, prints the verdict
}
trap ovs_cleanup EXIT

for t in ovs-vswitchd ovsdb-server tshark python3; do
	command -v "$t" >/dev/null || die "$t not installed (Debian: openvswitch-switch, tshark, python3)"
done

"$TOPO" up ras --prefix "$P" >/dev/null || die "tunbed-topo up ras failed"

# --- up ----------------------------------------------------------------------------------

OVS_UP+=("$P-gwa")
"$DRIVER" up --netns "$P-gwa" --local 198.18.0.1 --remote 198.18.0.2 --addr 198.19.0.1/24 \
	--key 7 --route 198.18.3.0/24 || die "ovs-gre.sh up on gwa failed"
OVS_UP+=("$P-gwb")
"$DRIVER" up --netns "$P-gwb" --local 198.18.0.2 --remote 198.18.0.1 --addr 198.19.0.2/24 \
	--key 7 --route 198.18.1.0/24 || die "ovs-gre.sh up on gwb failed"

expect_refusal "a second up" 1 "already up" "$DRIVER" up --netns "$P-gwa" --local 198.18.0.1 \
	--remote 198.18.0.2 --addr 198.19.0.1/24

declare -A DAEMONS # pid -> namespace
for gw in gwa gwb; do
	pids=$("$DRIVER" pids --netns "$P-$gw") || die "ovs-gre.sh pids on $gw failed"
	expect_eq "$gw: two daemons" "$(wc -l <<<"$pids")" 2
	expect_eq "$gw: first pid is ovsdb-server" "$(cat "/proc/$(sed -n 1p <<<"$pids")/comm")" ovsdb-server
	expect_eq "$gw: second pid is ovs-vswitchd" "$(cat "/proc/$(sed -n 2p <<<"$pids")/comm")" ovs-vswitchd
	for pid in $pids; do
		DAEMONS[$pid]=$P-$gw
		expect_eq "$gw: pid $pid runs in its namespace" "$(ip netns identify "$pid")" "$P-$gw"
	done
	[ -d "/run/tunbed-ovs/$P-$gw" ] || fail "$gw: no run directory /run/tunbed-ovs/$P-$gw"
	expect_match "$gw: GRE port with key 7" \
		"$("$DRIVER" ctl --netns "$P-$gw" -- vsctl get interface gre0-gre type options)" \
		'^gre.*key="7".*packet_type=legacy_l3'
	expect_eq "$gw: datapath_type" \
		"$("$DRIVER" ctl --netns "$P-$gw" -- vsctl get bridge gre0 datapath_type)" netdev
done
expect_match "gwa: route into the tunnel" "$(ip -n "$P-gwa" route get 198.18.3.2)" "dev gre0"
expect_match "gwb: route into the tunnel" "$(ip -n "$P-gwb" route get 198.18.1.2)" "dev gre0"
expect_match "gwa: gre0 MTU" "$(ip -n "$P-gwa" -o link show dev gre0)" " mtu 1472 "

# --- ping, seen as GRE key 7 on gwb's transit ---------------------------------------------

ip netns exec "$P-gwb" env TMPDIR="$TMP" timeout 60 tshark -n -i transit -f 'ip proto 47' -c 10 \
	-T fields -E separator=, -E occurrence=f -e ip.proto -e gre.key -e gre.proto \
	>"$TMP/gre.txt" 2>"$TMP/tshark.err" &
CAP=$!
BG_PIDS+=("$CAP")
poll 20 grep -q "Capturing on" "$TMP/tshark.err" || die "tshark did not start: $(cat "$TMP/tshark.err")"

# The first packet of a flow waits for OVS's upcall and ARP: poll, then count.
poll 10 ip netns exec "$P-client" ping -c 1 -W 1 198.18.3.2 || die "client cannot ping server"
out=$(ip netns exec "$P-client" ping -c 5 -i 0.2 -W 2 198.18.3.2) || fail "ping: $out"
expect_match "ping client -> server" "$out" " 5 received, 0% packet loss"
out=$(ip netns exec "$P-client" ping -c 1 -W 2 198.19.0.2 2>&1) || fail "ping 198.19.0.2: $out"
expect_match "ping client -> gwb's tunnel address" "$out" " 1 received"

# (tshark stops by itself at 10 packets; timeout ends it after 60 s without them.)
reaped "$CAP" || fail "tshark did not capture 10 GRE packets on gwb's transit (status $?; 124: 60 s passed): $(cat "$TMP/tshark.err")"
expect_eq "tshark: 10 GRE packets" "$(wc -l <"$TMP/gre.txt")" 10
bad=$(python3 -c '
import sys
for line in open(sys.argv[1]):
    proto, key, inner = line.strip().split(",")
    if proto != "47" or int(key, 0) != 7 or int(inner, 0) != 0x0800:
        print(line.strip())' "$TMP/gre.txt")
expect_eq "every GRE packet: protocol 47, key 7, IPv4 inside" "$bad" ""

# --- 50 MB over TCP, checked with SHA-256 -------------------------------------------------

SIZE=$((50 * 1000 * 1000))
ip netns exec "$P-server" timeout 120 python3 -c '
import hashlib, socket, sys
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((sys.argv[1], int(sys.argv[2])))
ls.listen(1)
open(sys.argv[3], "w").write("listening\n")
ls.settimeout(60)
c, _ = ls.accept()
c.settimeout(60)
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
c.close()
print(n, h.hexdigest())' 198.18.3.2 5555 "$TMP/listening" >"$TMP/server.out" 2>"$TMP/server.err" &
SRV=$!
BG_PIDS+=("$SRV")
poll 10 test -s "$TMP/listening" || die "server did not listen: $(cat "$TMP/server.err")"
client=$(ip netns exec "$P-client" timeout 120 python3 -c '
import hashlib, random, socket, sys
size = int(sys.argv[3])
rng = random.Random(7)
h, n = hashlib.sha256(), 0
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
while n < size:
    b = rng.randbytes(min(1 << 16, size - n))
    s.sendall(b)
    h.update(b)
    n += len(b)
s.shutdown(socket.SHUT_WR)
while s.recv(4096):
    pass
print(n, h.hexdigest())' 198.18.3.2 5555 "$SIZE") || fail "TCP client failed"
reaped "$SRV" || fail "TCP server failed: $(cat "$TMP/server.err")"
server=$(cat "$TMP/server.out")
expect_match "client sent $SIZE bytes" "$client" "^$SIZE [0-9a-f]{64}$"
expect_eq "server received what the client sent (bytes, sha256)" "$server" "$client"
# The OpenFlow counters follow the datapath's flows one revalidator pass later (about every
# 500 ms, later on a busy machine): read just after the transfer they held 7.5 of its 50 MB
# once. Wait until they count it all.
ip_flow() { "$DRIVER" ctl --netns "$P-gwa" -- ofctl dump-flows gre0 | grep 'priority=100,ip,in_port=LOCAL'; }
flow_counts_transfer() { [ "$(ip_flow | grep -oE 'n_bytes=[0-9]+' | cut -d= -f2)" -ge "$SIZE" ]; }
if poll 30 flow_counts_transfer; then
	log "ok: gwa: the transfer went through OVS's gre0 bridge ($(ip_flow | grep -oE 'n_bytes=[0-9]+'))"
else
	fail "gwa: OVS's gre0 bridge counted less than the transfer's $SIZE bytes: $(ip_flow)"
fi

# A kernel without ip_gre that got a GRE packet for itself counts it in Ip InUnknownProtos
# (and answers with ICMP protocol unreachable): OVS must have taken every one.
for gw in gwa gwb; do
	# shellcheck disable=SC2016 # an awk program
	unknown=$(ip netns exec "$P-$gw" awk '/^Ip:/ {
		if (!c) { for (i = 1; i <= NF; i++) if ($i == "InUnknownProtos") c = i } else print $c }' /proc/net/snmp)
	expect_eq "$gw: the kernel saw no GRE packet itself (Ip InUnknownProtos)" "$unknown" 0
done

# 1472-byte packets with DF cross (1500 on the wire); 1473 get "frag needed" from gwa (or
# the client knows the path MTU already from the transfer).
out=$(ip netns exec "$P-client" ping -c 1 -W 2 -M "do" -s 1444 198.18.3.2 2>&1) || fail "1472-byte ping: $out"
expect_match "1472 bytes with DF pass" "$out" " 1 received"
out=$(ip netns exec "$P-client" ping -c 1 -W 2 -M "do" -s 1445 198.18.3.2 2>&1) || true
expect_match "1473 bytes with DF do not" "$out" "mtu ?= ?1472"

# --- down --------------------------------------------------------------------------------

for gw in gwa gwb; do
	"$DRIVER" down --netns "$P-$gw" || fail "ovs-gre.sh down on $gw failed"
	"$DRIVER" down --netns "$P-$gw" || fail "a second ovs-gre.sh down on $gw failed"
done
OVS_UP=()
for pid in "${!DAEMONS[@]}"; do
	if [ -d "/proc/$pid" ] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == ovs* ]]; then
		fail "OVS daemon $pid of ${DAEMONS[$pid]} still running"
	fi
done
log "ok: the ${#DAEMONS[@]} OVS daemons are gone"
for gw in gwa gwb; do
	[ ! -e "/run/tunbed-ovs/$P-$gw" ] || fail "$gw: run directory left"
	links=$(ip -n "$P-$gw" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
	expect_eq "$gw: links after down" "$links" "$([ "$gw" = gwa ] && echo "lan-a lo transit " || echo "lan-b lo transit ")"
done
expect_match "gwa: transit address back" "$(ip -n "$P-gwa" -o -4 addr show dev transit)" "198.18.0.1/24"
expect_match "gwa: kernel route back" "$(ip -n "$P-gwa" route show 198.18.3.0/24)" "via 198.18.0.2 dev transit"
expect_match "gwb: kernel route back" "$(ip -n "$P-gwb" route show 198.18.1.0/24)" "via 198.18.0.1 dev transit"
poll 10 ip netns exec "$P-client" ping -c 1 -W 1 198.18.3.2 ||
	fail "no kernel forwarding after down"
log "ok: kernel forwarding works again after down"

settle
"$TOPO" down --prefix "$P" >/dev/null || fail "tunbed-topo down failed"
expect_nothing_left "$P" "after down"
left=$(find /run/tunbed-ovs -mindepth 1 -maxdepth 1 -name "$P-*" 2>/dev/null || true)
expect_eq "no run directories of $P" "$left" ""
