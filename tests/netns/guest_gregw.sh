#!/bin/bash
# gregw on Debian 12's own kernel (6.1, linux-image-amd64): gregw runs inside the qemu guest
# in gwb's place (guest_lib.sh), against gregw on this machine's kernel in gwa, in every data
# path mode (GRE and GRE-in-UDP, with offloads and without), one boot. Each mode: DF pings of
# the tunnel MTU both ways, a verified tunbed-traffic transfer each way (push and pull), the
# wire audit on transit clean with frames both ways, nothing dropped on either side; and the
# guest's gregw says in its stats which path each missing feature left it on (no tcx: the
# GRE drop at tc ingress off, the TAP's superpackets cut; no GSO over a UDP tunnel in a TAP;
# no USO from TUN; UDP_SEGMENT refused through a NIC that does not checksum) and in one
# warning each, naming the kernel version that has it, and nothing else. SIGTERM stops it
# with its final summary.
#
#  P-client --lan-a-- P-gwa [gregw on this kernel] ==transit (TAP)== guest [gregw on 6.1] --lan-b (TAP)-- P-server
#                           [tunbed-wire on transit]
# shellcheck source=guest_lib.sh
source "$(dirname "$0")/guest_lib.sh"
# The release build: under software emulation the sanitizer build's gregw would crawl.
GUEST_GREGW="$TUNBED_SRC/build/bin/gregw"
[ -x "$GUEST_GREGW" ] || die "$GUEST_GREGW not built (scripts/bootstrap builds it)"
GUEST_PROGRAMS=("$GUEST_GREGW")
guest_test_init
new_prefix P tbgg
gt_up "$P"
tr_server "$P-server" 9400
guest_do "uname -r"
log "guest kernel: $GUEST_OUT"

# gg_stats: the guest gregw's stats document.
gg_stats() {
	guest_do "/guest/bin/gregw ctl /tmp/gw.sock stats"
	echo "$GUEST_OUT"
}

# gg_warned WHAT TEXT: the guest gregw's stderr holds exactly one line with TEXT.
gg_warned() {
	guest_do "grep -c -F '$2' /tmp/gw.err || true"
	expect_eq "$1: one warning: $2" "$GUEST_OUT" 1
}

for mode in gre gre-nooffload gre-udp gre-udp-nooffload; do
	encap=${mode%-nooffload}
	off=()
	[ "$mode" = "$encap" ] || off=(--offload off)
	log "--- $mode"
	# The guest's ip_gre has made a gre0 of its own (the fallback device): another name.
	guest_do "/guest/bin/gregw --tun gw0 --remote 198.18.0.1 --addr 198.19.0.2/24 --route 198.18.1.0/24 \
		--encap $encap ${off[*]} --workers 1 --ctl /tmp/gw.sock >/tmp/gw.out 2>/tmp/gw.err &
		echo \$! >/tmp/gw.pid"
	guest_sh "for i in \$(seq 600); do /guest/bin/gregw ctl /tmp/gw.sock stats >/dev/null 2>&1 &&
		exit 0; kill -0 \$(cat /tmp/gw.pid) 2>/dev/null || break; sleep 0.1; done; cat /tmp/gw.err; exit 1" ||
		guest_die "$mode: the guest's gregw did not come up: $GUEST_OUT"
	GW_MODE_ARGS=(--encap "$encap" "${off[@]}")
	gw_start gwa "$P-gwa" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.3.0/24
	mtu=$(json_get "$(gw_stats gwa)" 'd["config"]["mtu"]')
	expect_eq "$mode: the guest's gregw has gwa's MTU" "$(json_get "$(gg_stats)" 'd["config"]["mtu"]')" "$mtu"
	wire_start "$mode" --local 198.18.0.1 --remote 198.18.0.2 --no-key --no-seq --no-csum --mtu "$mtu"
	gt_forget_pmtu
	gt_ping client 198.18.3.2 $((mtu - 28)) "$mode: tunnel MTU"
	gt_ping server 198.18.1.2 $((mtu - 28)) "$mode: tunnel MTU"
	gt_traffic 198.18.3.2 push "$mode"
	gt_traffic 198.18.3.2 pull "$mode"
	wire_stop "$mode" "$mode"
	gs=$(gg_stats)
	expect_eq "$mode: gwa dropped nothing" "$(json_get "$(gw_stats gwa)" 'd["total"]["dropped"]')" 0
	expect_eq "$mode: the guest's gregw dropped nothing, and carried both ways" \
		"$(json_get "$gs" 'd["total"]["dropped"] == 0 and d["total"]["tun_rx_packets"] > 0 and d["total"]["tun_tx_packets"] > 0')" "True"
	log "$mode: the guest's gregw: $(json_get "$gs" '{k: d["config"].get(k) for k in ("wire_tx", "wire_tx_why", "wire_rx", "ingress_drop", "tun_offloads", "udp_gso", "udp_gro", "steering")}')"
	# Over GRE-in-UDP 6.1 takes UDP_SEGMENT but refuses a send through a device that does not
	# checksum (the guest's NIC: csum=off; Linux 6.11 lifts that): said once, datagram by
	# datagram from then on (docs/gregw.md).
	lines=1
	case $mode in
	gre)
		lines=3
		expect_eq "$mode: 6.1's paths in config" \
			"$(json_get "$gs" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"], d["config"]["ingress_drop"], d["config"]["steering"])')" \
			"('packet', 'no tcx (Linux 6.6)', 'off', 'table')"
		gg_warned "$mode" "no GRE drop at tc ingress (tcx: Linux 6.6"
		gg_warned "$mode" "its tcx program needs Linux 6.6"
		gg_warned "$mode" "no UDP superpackets from TUN (USO: Linux 6.2)"
		;;
	gre-nooffload)
		expect_eq "$mode: 6.1's paths in config" \
			"$(json_get "$gs" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"], d["config"]["ingress_drop"])')" \
			"('packet', '--offload off', 'off')"
		gg_warned "$mode" "no GRE drop at tc ingress (tcx: Linux 6.6"
		;;
	gre-udp)
		lines=3
		expect_eq "$mode: 6.1's paths in config" \
			"$(json_get "$gs" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"], d["config"]["wire_rx"], d["config"]["udp_gso"], d["config"]["udp_gro"])')" \
			"('udp', 'no UDP tunnel GSO in a TAP (Linux 6.17)', 'socket', False, True)"
		gg_warned "$mode" "UDP tunnel GSO in a TAP needs Linux 6.17"
		gg_warned "$mode" "no UDP superpackets from TUN (USO: Linux 6.2)"
		gg_warned "$mode" "UDP_SEGMENT refused"
		;;
	gre-udp-nooffload)
		expect_eq "$mode: 6.1's paths in config" \
			"$(json_get "$gs" '(d["config"]["wire_tx"], d["config"]["wire_tx_why"], d["config"]["wire_rx"], d["config"]["udp_gso"])')" \
			"('udp', '--offload off', 'socket', False)"
		gg_warned "$mode" "UDP_SEGMENT refused"
		;;
	esac
	guest_do "wc -l </tmp/gw.err"
	expect_eq "$mode: the guest's gregw said nothing else on stderr" "$GUEST_OUT" "$lines"
	guest_sh "kill -TERM \$(cat /tmp/gw.pid); for i in \$(seq 300); do kill -0 \$(cat /tmp/gw.pid) 2>/dev/null || exit 0;
		sleep 0.1; done; exit 1" || fail "$mode: the guest's gregw did not stop on SIGTERM"
	guest_do "tail -n 1 /tmp/gw.out"
	expect_eq "$mode: the guest's gregw wrote its final summary" "$(json_get "$GUEST_OUT" 'd["final"]')" "True"
	gw_stop gwa
done
tr_stop
guest_stop
expect_eq "nothing of the guest left" "$(guest_left)" ""
