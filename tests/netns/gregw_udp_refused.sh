#!/bin/bash
# GRE-in-UDP when the peer's port was closed a while: gwa's sending sockets are connected, so
# the peer's "port unreachable" for what gwa sent before gwb's gregw was up stays on a socket as
# a pending error, and that socket's next send fails with it (ECONNREFUSED), unsent. gregw
# sends again once: with gwb up, the first ping of the same flow crosses, and gwa counts no
# tx_send drop. (Before, that ping was lost: a TCP SYN so lost went again without ECN,
# gregw_ras6's failure now and then.) Nothing left.
#
#  P-client --lan-a-- P-gwa ==transit (GRE-in-UDP)== P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbrefu

"$TOPO" up ras --prefix "$P" >/dev/null
gw_a4 "$P" --encap gre-udp --workers 1
# gwb's kernel answers what gwa sends with "port unreachable": nothing listens on its port yet.
unreach() { ip netns exec "$P-gwb" nstat -saz IcmpOutDestUnreachs | awk '$1 == "IcmpOutDestUnreachs" {print $2}'; }
u0=$(unreach)
ip netns exec "$P-client" ping -n -q -c 1 -W 1 -e 4242 198.18.3.2 >/dev/null 2>&1 || true
more_unreach() { [ "$(unreach)" -gt "$u0" ]; }
poll 30 more_unreach ||
	die "gwb sent no port unreachable for the ping gwa carried while gwb was down"
gw_b4 "$P" --encap gre-udp --workers 1
# The same flow (ICMP id 4242: the same socket of gwa's), once gwb is up.
ip netns exec "$P-client" ping -n -q -c 1 -W 5 -e 4242 198.18.3.2 >/dev/null 2>&1 ||
	fail "the first ping after gwb came up was lost"
expect_eq "gwa: no send failed" "$(json_get "$(gw_stats gwa)" 'd["total"]["drops"]["tx_send"]')" "0"
gw_stop gwa
gw_stop gwb
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
