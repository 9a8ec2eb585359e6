#!/bin/sh
# vxlan-example.sh: the smallest gateway driver of the runner's contract (CONTRIBUTING.md,
# "Adding a gateway"), the kernel's VXLAN between the two gateways:
#
#   scripts/tunbed compare --gateways vxlan,cmd:scripts/drivers/vxlan-example.sh
#
# The runner calls it on each gateway's host (in namespaces: inside the gateway's namespace)
# as root, with `up`, `pids`, `version` and `down`, the tunnel's addresses in TUNBED_*.
set -eu
dev=tbvx0
case "${1:-}" in
up)
	ip link add "$dev" type vxlan id 43 local "$TUNBED_LOCAL" remote "$TUNBED_REMOTE" \
		dstport 4789 dev "$TUNBED_TRANSIT_IFACE"
	# Beyond the outer IP header, VXLAN adds UDP (8), its own header (8) and the inner
	# Ethernet header (14).
	case $TUNBED_LOCAL in
	*:*) outer=40 ;;
	*) outer=20 ;;
	esac
	ip link set dev "$dev" mtu $((TUNBED_TRANSIT_MTU - outer - 30)) up
	ip addr add "$TUNBED_ADDR" dev "$dev"
	for net in $TUNBED_ROUTES; do
		ip route replace "$net" via "${TUNBED_PEER_ADDR%/*}" dev "$dev"
	done
	echo "$dev: VXLAN 43 from $TUNBED_LOCAL to $TUNBED_REMOTE, routes $TUNBED_ROUTES"
	;;
pids) ;; # the kernel's: no process of its own
version) echo "Linux $(uname -r)" ;;
down) ip link del "$dev" 2>/dev/null || true ;;
*)
	echo "vxlan-example.sh: unknown verb '${1:-}'" >&2
	exit 2
	;;
esac
