#!/bin/bash
# tunbed-topo on the IPv6 RAS topology (2001:2::/48): up, ping across both gateways, read
# back, down.
#
#  P-client 2001:2:0:1::2 --lan-a-- ::1 P-gwa 2001:2::1 ==transit== 2001:2::2 P-gwb 2001:2:0:3::1 --lan-b-- ::2 P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbras6

"$TOPO" up ras6 --prefix "$P" >/dev/null
# DAD is off, so addresses are usable at once: no waiting for them to leave "tentative".
ip netns exec "$P-client" ping -6 -c 3 -i 0.2 -W 2 2001:2:0:3::2 >/dev/null || fail "ping6 client -> server"
ip netns exec "$P-server" ping -6 -c 2 -i 0.2 -W 2 2001:2:0:1::2 >/dev/null || fail "ping6 server -> client"

addrs=$(ip -n "$P-gwb" -j -6 addr show dev transit scope global)
expect_eq "gwb transit address" "$(json_get "$addrs" 'd[0]["addr_info"][0]["local"]+"/"+str(d[0]["addr_info"][0]["prefixlen"])')" "2001:2::2/64"
routes=$(ip -n "$P-gwa" -j -6 route show 2001:2:0:3::/64)
expect_eq "gwa route" "$(json_get "$routes" 'd[0]["gateway"]+" "+d[0]["dev"]')" "2001:2::2 transit"
expect_eq "gwa ipv6 forwarding" "$(ip netns exec "$P-gwa" sysctl -n net.ipv6.conf.all.forwarding)" "1"
expect_eq "no tentative address" "$(ip -n "$P-client" -6 addr show tentative | wc -l)" "0"
show=$("$TOPO" show ras6 --prefix "$P" --json)
expect_eq "show: server address" "$(json_get "$show" 'd["hosts"][3]["interfaces"][0]["addresses"]')" "['2001:2:0:3::2/64']"

"$TOPO" down ras6 --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
