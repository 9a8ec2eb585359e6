#!/bin/bash
# Interop: gregw in gwa against Open vSwitch's userspace GRE (datapath netdev, one
# ovsdb-server and ovs-vswitchd in gwb, through scripts/drivers/ovs-gre.sh). An independent
# implementation is the only proof of the wire format on a kernel without ip_gre: ping both
# ways and a verified transfer each way, with key and checksums (OVS checks ours, we check its), then
# with key and sequence numbers (OVS sends them, gregw requires them).
#
#  P-client 198.18.1.2 --lan-a-- P-gwa [gregw gre0 198.19.0.1] ==transit (GRE key 7)== [OVS gre0 198.19.0.2] P-gwb --lan-b-- 198.18.3.2 P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
DRIVER="$TUNBED_SRC/scripts/drivers/ovs-gre.sh"
command -v ovs-vswitchd >/dev/null || { echo "[gregw_ovs] FAIL: Open vSwitch is not installed (scripts/bootstrap installs it)" >&2; exit 1; }
netns_test_init
new_prefix P tbovs
OVS_NS=""
ovs_down() {
	if [ -n "$OVS_NS" ]; then "$DRIVER" down --netns "$OVS_NS" >/dev/null 2>&1 || true; fi
	OVS_NS=""
}
# shellcheck disable=SC2154 # rc is assigned inside the trap string
trap 'rc=$?; gw_cleanup; ovs_down; cleanup "$rc"' EXIT

"$TOPO" up ras --prefix "$P" >/dev/null
# OVS's userspace datapath takes frames from its veth as they are, and never completes a TCP
# checksum a sender on this host left partial (gregw, as the kernel, leaves them to the
# device: config.tx_csum_offload). On one machine, as OVS's maintainers advise for any local
# sender (openvswitch/ovs-issues#273), the veth that sends into it does not offload
# checksums: the kernel completes them.
ip netns exec "$P-gwa" ethtool -K transit tx-checksum-ip-generic off >/dev/null || die "ethtool on gwa"

phase() { # gregw-options... -- ovs-options...
	local gopts=() oopts=()
	while [ "$1" != -- ]; do gopts+=("$1"); shift; done
	shift
	oopts=("$@")
	OVS_NS="$P-gwb"
	"$DRIVER" up --netns "$P-gwb" --local 198.18.0.2 --remote 198.18.0.1 --addr 198.19.0.2/24 \
		--route 198.18.1.0/24 "${oopts[@]}" >"$TMP/ovs.out" 2>&1 || die "ovs-gre.sh up: $(tail -3 "$TMP/ovs.out")"
	gw_start gwa "$P-gwa" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.3.0/24 "${gopts[@]}"
	# OVS sets up its flows and learns the neighbour on the first packets: poll the first ping.
	poll 10 ip netns exec "$P-client" ping -c 1 -W 1 198.18.3.2 || fail "first ping through gregw -> OVS"
	ip netns exec "$P-client" ping -c 5 -i 0.1 -W 2 198.18.3.2 >/dev/null || fail "ping client -> server (gregw -> OVS)"
	ip netns exec "$P-server" ping -c 5 -i 0.1 -W 2 198.18.1.2 >/dev/null || fail "ping server -> client (OVS -> gregw)"
	bulk_transfer "$P" 198.18.3.2 2 $((50 << 20))
	bulk_transfer "$P" 198.18.1.2 2 $((50 << 20)) server client
	local a
	a=$(gw_stats gwa)
	expect_eq "gregw took OVS's packets: nothing dropped" "$(json_get "$a" 'd["total"]["dropped"]')" "0"
	expect_eq "gregw received 50 MB from OVS" "$(json_get "$a" 'd["total"]["tun_tx_bytes"] > 50 * 2**20')" "True"
	expect_eq "gregw sent to OVS" "$(json_get "$a" 'd["total"]["wire_tx_bytes"] > 50 * 2**20')" "True"
	gw_stop gwa
	ovs_down
}

log "phase 1: key 7 and checksums both ways"
phase --key 7 --csum -- --key 7 --csum
log "phase 2: key 7 and sequence numbers both ways"
phase --key 7 --seq -- --key 7 --seq

"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
