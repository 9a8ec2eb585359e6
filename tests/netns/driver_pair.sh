#!/bin/bash
# A gateway driver of the runner (TUNBED_DRIVER: wireguard-go, openvpn, openvpn-none, fastd,
# fastd-null, ovs-gre; ctest runs one test per driver) between gwa and gwb as the runner sets
# it up (driver_up.py): its processes are the program's, its device has the MTU the driver
# derives from the transit link's and carries exactly that much with DF set, the tunnel
# carries what crosses transit (UDP on the driver's port, or GRE) and no inner TCP shows there,
# a ping's payload is visible on transit without a cipher and not with one, verified bulk
# transfers (SHA-256 per flow) go both ways; after down the processes, devices, sockets and
# files are gone from both gateways, and after the topology nothing is left.
#
#  P-client 198.18.1.2 --lan-a-- P-gwa [daemon, DEV 198.19.0.1] ==transit (UDP PORT | GRE)== [daemon, DEV 198.19.0.2] P-gwb --lan-b-- 198.18.3.2 P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
GATEWAY=${TUNBED_DRIVER:?set TUNBED_DRIVER to a driver}
netns_test_init
TEST_NAME="driver_pair@$GATEWAY"
new_prefix P tbdrv
# The daemons the helper started, by PID: a helper killed before its teardown leaves them.
DRIVER_PIDS=""
drivers_down() {
	local pid
	for pid in $DRIVER_PIDS; do kill "$pid" 2>/dev/null || true; done
}
# shellcheck disable=SC2154 # rc is assigned inside the trap string
trap 'rc=$?; drivers_down; cleanup "$rc"' EXIT
had_wg_run=no
[ ! -e /run/wireguard ] || had_wg_run=yes

# What each driver must show: its processes' names, its device, how the tunnel crosses
# transit, the inner MTU for a 1500-byte transit link (IPv4), and whether it has a cipher.
case $GATEWAY in
wireguard-go) PROGS="wireguard-go" DEV=tbwg0 WIRE="udp port 51820" MTU=1440 CIPHER=yes ;;
openvpn) PROGS="openvpn" DEV=tbovpn0 WIRE="udp port 1194" MTU=1448 CIPHER=yes ;;
openvpn-none) PROGS="openvpn" DEV=tbovpn0 WIRE="udp port 1194" MTU=1472 CIPHER=no ;;
fastd) PROGS="fastd" DEV=tbfastd0 WIRE="udp port 10000" MTU=1447 CIPHER=yes ;;
fastd-null) PROGS="fastd" DEV=tbfastd0 WIRE="udp port 10000" MTU=1471 CIPHER=no ;;
ovs-gre) PROGS="ovsdb-server ovs-vswitchd" DEV=gre0 WIRE="ip proto 47" MTU=1472 CIPHER=no ;;
*) die "no expectations for driver '$GATEWAY'" ;;
esac
log "driver $GATEWAY: $PROGS, $DEV, $WIRE, MTU $MTU, cipher $CIPHER"

coproc HELPER { python3 "$HERE/driver_up.py" "$GATEWAY" "$P" 2>"$TMP/helper.err"; }
helper=$HELPER_PID to_helper=${HELPER[1]} from_helper=${HELPER[0]}
read -r -t 120 up <&"$from_helper" || die "$GATEWAY did not come up: $(tail -3 "$TMP/helper.err")"
[[ "$up" == *'"pids"'* ]] || die "$GATEWAY did not come up: $up $(tail -3 "$TMP/helper.err")"

# Its processes: the program's, on both gateways.
pids=$(json_get "$up" '" ".join(str(p[1]) for p in d["pids"])')
DRIVER_PIDS=$pids
names=$(json_get "$up" '" ".join(sorted({p[2].rsplit(" ", 1)[0] for p in d["pids"]}))')
roles=$(json_get "$up" '" ".join(sorted({p[0] for p in d["pids"]}))')
expect_eq "its processes on both gateways" "$roles" "gwa gwb"
for pid in $pids; do
	comm=$(cat "/proc/$pid/comm" 2>/dev/null || echo gone)
	expect_match "process $pid is one of the driver's" "$comm" "^($(tr ' ' '|' <<<"$PROGS"))$"
done
expect_eq "labels name the programs" "$names" "$(tr ' ' '\n' <<<"$PROGS" | sort | tr '\n' ' ' | sed 's/ $//')"
expect_match "its version is known" "$(json_get "$up" 'd["info"].get("version") or ""')" "[0-9]"
expect_eq "the runner read the inner MTU on gwa" "$(json_get "$up" '(d["info"]["dev"], d["info"]["mtu"])')" "('$DEV', $MTU)"
for gw in gwa gwb; do
	expect_match "$gw: $DEV is up with MTU $MTU" "$(ip -n "$P-$gw" -o link show dev "$DEV")" " mtu $MTU .*(UP|UNKNOWN)"
done

# What crosses transit while the pings below and the bulk transfers go through the tunnel.
ip netns exec "$P-gwa" tcpdump -i transit -n -s 400 -U --immediate-mode -w "$TMP/transit.pcap" 2>"$TMP/tcpdump.err" &
TCPDUMP=$!
poll 30 grep -q "listening on" "$TMP/tcpdump.err" || die "tcpdump did not start: $(cat "$TMP/tcpdump.err")"

# Exactly the inner MTU passes with DF set, as one outer packet (no fragments, below); one
# byte more does not.
if ip netns exec "$P-client" ping -n -q -c 3 -i 0.2 -W 2 -M "do" -s $((MTU - 28)) 198.18.3.2 >/dev/null; then
	log "ok: $MTU-byte packets with DF passed"
else
	fail "$MTU-byte packets with DF did not pass"
fi
if ip netns exec "$P-client" ping -n -q -c 2 -W 1 -M "do" -s $((MTU - 27)) 198.18.3.2 >/dev/null 2>&1; then
	fail "a $((MTU + 1))-byte packet with DF passed a $MTU-byte tunnel"
else
	log "ok: a $((MTU + 1))-byte packet with DF did not pass"
fi

PATTERN=74756e62656420636c65617274657874 # "tunbed cleartext"
ip netns exec "$P-client" ping -n -q -c 3 -i 0.2 -s 256 -p "$PATTERN" 198.18.3.2 >/dev/null || fail "pings with a pattern did not pass"
bulk_transfer "$P" 198.18.3.2 2 $((20 << 20))
bulk_transfer "$P" 198.18.1.2 2 $((20 << 20)) server client
frames_of_tunnel() { pcap_has "$TMP/transit.pcap" "host 198.18.0.1 and host 198.18.0.2 and $WIRE" $((40 * (1 << 20) / 1500)); }
poll 30 frames_of_tunnel || fail "transit did not carry the transfers as $WIRE ($(pcap_count "$TMP/transit.pcap" "$WIRE") frames)"
stop_bg "$TCPDUMP" INT tcpdump
expect_eq "no inner TCP on transit outside the tunnel" "$(pcap_count "$TMP/transit.pcap" "tcp")" "0"
expect_eq "no outer fragments on transit: the MTU leaves room for the encapsulation" "$(pcap_count "$TMP/transit.pcap" "ip[6:2] & 0x3fff != 0")" "0"
seen=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read().count(bytes.fromhex(sys.argv[2]) * 2))' "$TMP/transit.pcap" "$PATTERN")
if [ "$CIPHER" = yes ]; then
	expect_eq "the pings' payload is not visible on transit (a cipher)" "$seen" "0"
else
	expect_match "the pings' payload is visible on transit (no cipher)" "$seen" "^[1-9]"
fi

# Down: nothing of the gateway left on either gateway.
echo down >&"$to_helper"
read -r -t 60 down <&"$from_helper" || die "$GATEWAY did not come down: $(tail -3 "$TMP/helper.err")"
expect_eq "down" "$down" '{"down": true}'
for pid in $pids; do
	if [ -d "/proc/$pid" ]; then fail "process $pid ($(cat "/proc/$pid/comm")) is still there"; fi
done
port=$(grep -oE '[0-9]+$' <<<"$WIRE" || true)
for gw in gwa gwb; do
	if ip -n "$P-$gw" link show dev "$DEV" >/dev/null 2>&1; then fail "$gw: $DEV is still there"; fi
	links=$(ip -n "$P-$gw" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
	expect_eq "$gw: only the topology's links" "$links" "$( [ $gw = gwa ] && echo "lan-a " || echo "lan-b ")lo transit "
	if [ -n "$port" ]; then
		expect_eq "$gw: no socket on UDP port $port" "$(ip netns exec "$P-$gw" ss -Hunl "sport = :$port" | wc -l)" "0"
	fi
	state=$(json_get "$up" "d['state']['$gw']")
	expect_eq "$gw: the driver's files are gone" "$(find "$state" -mindepth 1 -maxdepth 1 ! -name 'undo.*' | wc -l)" "0"
done
if [ "$had_wg_run" = no ] && [ -e /run/wireguard ]; then
	fail "/run/wireguard was made (wireguard-go is to keep its socket in a /run of its own)"
fi
[ ! -e "/run/tunbed-ovs/$P-gwa" ] || fail "Open vSwitch's run directory of $P-gwa is still there"

exec {to_helper}>&-
wait "$helper" || fail "driver_up.py exited $?: $(tail -3 "$TMP/helper.err")"
expect_nothing_left "$P" "after the topology went down"
