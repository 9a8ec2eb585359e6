#!/bin/bash
# Plain GRE's drop at tc ingress (--ingress-drop tcx, the default): gwb's receive rings take
# every GRE packet from the peer, and the namespace's IP stack takes none of them up: its Ip
# InDelivers and InUnknownProtos stay put while 300 injected packets arrive (their inner
# packets, which gregw writes into TUN, are forwarded: InReceives and ForwDatagrams count
# those). With --ingress-drop off the stack delivers each one (to the sink socket). The drop
# goes with gregw: after SIGTERM, and after kill -9, the stack takes them again (with no
# gregw there, as protocols it does not know). Last, gwb's transit interface is deleted under
# it: each receive ring's error (ENETDOWN) is taken and counted once, instead of waking the
# worker's poll at once for ever (the worker spun at 80% CPU), and SIGTERM still stops it.
#
#  P-client --lan-a-- P-gwa [gre_inject.py] ==transit== [gregw] P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbingr
N=300
[ "$GW_ENCAP" = gre ] || die "plain GRE only (GREGW_MODE $GW_MODE)"

"$TOPO" up ras --prefix "$P" >/dev/null
# What the namespace's IPv4 stack took up locally: InDelivers + InUnknownProtos (the second
# Ip: line of /proc/net/snmp holds the values).
# shellcheck disable=SC2016 # awk's fields, not the shell's
in_receives() { ip netns exec "$P-gwb" awk '/^Ip:/ && $2 ~ /^[0-9]+$/ { print $8 + $10 }' /proc/net/snmp; }
inject() { # N good GRE packets from the peer's address to gwb
	ip netns exec "$P-gwa" python3 "$HERE/gre_inject.py" --src 198.18.0.1 --dst 198.18.0.2 \
		--kind good --count "$N" || die "injecting"
}
# inject_counted: injects, waits until gwb took all of them (when a gregw runs), and prints
# how many the stack received meanwhile.
inject_counted() {
	local r0 w0
	r0=$(in_receives)
	if [ -n "${GW_PID[gwb]:-}" ]; then
		w0=$(json_get "$(gw_stats gwb)" 'd["total"]["wire_rx_packets"]')
		inject
		poll 30 gw_true gwb "d['total']['wire_rx_packets'] - $w0 >= $N" || fail "gwb's rings took fewer than $N"
	else
		inject
	fi
	# The stack's count is synchronous with the packet's arrival: the injector's sends
	# returned after each was delivered (veth delivers in the sender's context).
	echo $(($(in_receives) - r0))
}

gw_b4 "$P" --workers 2
expect_eq "gwb: the drop at tc ingress in place" "$(json_get "$(gw_stats gwb)" 'd["config"]["ingress_drop"]')" "tcx"
got=$(inject_counted)
expect_eq "tcx: gwb's IP stack received none of the $N GRE packets (+$got)" "$((got < N / 10))" "1"
expect_eq "tcx: gwb took them all, and dropped none" "$(json_get "$(gw_stats gwb)" 'd["total"]["dropped"]')" "0"
gw_stop gwb
got=$(inject_counted)
expect_eq "after SIGTERM the drop is gone: the stack received all $N" "$((got >= N))" "1"

gw_b4 "$P" --workers 2 --ingress-drop off
expect_eq "--ingress-drop off" "$(json_get "$(gw_stats gwb)" 'd["config"]["ingress_drop"]')" "off"
got=$(inject_counted)
expect_eq "off: the stack received all $N too" "$((got >= N))" "1"
gw_stop gwb

gw_b4 "$P" --workers 2
stop_bg "${GW_PID[gwb]}" KILL "gregw gwb (kill -9)"
GW_PID[gwb]=""
got=$(inject_counted)
expect_eq "after kill -9 the drop is gone too: the stack received all $N" "$((got >= N))" "1"

gw_b4 "$P" --workers 2
ip -n "$P-gwb" link del transit
poll 30 gw_true gwb 'all(w["rx_socket_errors"] == 1 for w in d["workers"])' ||
	fail "gwb's workers did not each take their ring's error once: $(json_get "$(gw_stats gwb)" '[w["rx_socket_errors"] for w in d["workers"]]')"
gw_stop gwb

"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
