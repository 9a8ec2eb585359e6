#!/bin/bash
# tunbed-topo on the RAS topology: up, ping across both gateways with kernel forwarding,
# everything read back with ip -j and tunbed-topo show --json, then down and nothing left.
#
#  P-client 198.18.1.2 --lan-a-- 198.18.1.1 P-gwa 198.18.0.1 ==transit== 198.18.0.2 P-gwb 198.18.3.1 --lan-b-- 198.18.3.2 P-server
#                                   (in the shaped copy: transit has tbf 500mbit, mtu 1400, 3 queues,
#                                    GRO on and TSO off; the client's route has mtu 1300)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbras

# The built-in file, with shaping and offload settings added to the transit link.
sed -e '/^\[link transit\]/a rate = 500mbit\nmtu = 1400\nqueues = 3\ngro = on\ntso = off' \
	-e 's|^route = 198.19.0.0/24 via 198.18.1.1$|& mtu 1300|' \
	"$TOPOLOGIES/ras.topo" >"$TMP/ras-shaped.topo"

out=$("$TOPO" up "$TMP/ras-shaped.topo" --prefix "$P")
expect_match "up prints a summary" "$out" "ras up: 4 namespaces \\($P-\\*\\), 3 links, 6 routes"
for h in client gwa gwb server; do
	ip netns list | grep -q "^$P-$h\\b" || fail "namespace $P-$h missing from ip netns list"
done

# Kernel forwarding client -> gwa -> gwb -> server, and back.
ip netns exec "$P-client" ping -c 3 -i 0.2 -W 2 198.18.3.2 >/dev/null || fail "ping client -> server"
ip netns exec "$P-server" ping -c 2 -i 0.2 -W 2 198.18.1.2 >/dev/null || fail "ping server -> client"
# A 1372-byte ping fits the 1400 MTU of transit; 1373 with DF must not cross it.
ip netns exec "$P-client" ping -c 1 -W 2 -M "do" -s 1372 198.18.3.2 >/dev/null || fail "1400-byte ping"
if ip netns exec "$P-client" ping -c 1 -W 2 -M "do" -s 1373 198.18.3.2 >/dev/null 2>&1; then
	fail "a 1401-byte DF packet crossed a 1400 MTU link"
fi

# Read back with iproute2's JSON, independently of our own code.
addrs=$(ip -n "$P-gwa" -j addr show dev transit)
expect_eq "gwa transit address" "$(json_get "$addrs" '[a["local"]+"/"+str(a["prefixlen"]) for a in d[0]["addr_info"] if a["family"]=="inet"][0]')" "198.18.0.1/24"
expect_eq "gwa transit mtu" "$(json_get "$addrs" 'd[0]["mtu"]')" "1400"
expect_eq "gwb transit mtu" "$(json_get "$(ip -n "$P-gwb" -j link show dev transit)" 'd[0]["mtu"]')" "1400"
expect_eq "client lan-a mtu" "$(json_get "$(ip -n "$P-client" -j link show dev lan-a)" 'd[0]["mtu"]')" "1500"
expect_eq "server address" "$(json_get "$(ip -n "$P-server" -j addr show dev lan-b)" 'd[0]["addr_info"][0]["local"]')" "198.18.3.2"
routes=$(ip -n "$P-client" -j route show 198.18.3.0/24)
expect_eq "client route to server lan" "$(json_get "$routes" 'd[0]["gateway"]+" "+d[0]["dev"]')" "198.18.1.1 lan-a"
routes=$(ip -n "$P-gwb" -j route show 198.18.1.0/24)
expect_eq "gwb route to client lan" "$(json_get "$routes" 'd[0]["gateway"]+" "+d[0]["dev"]')" "198.18.0.1 transit"
expect_eq "gwa forwarding" "$(ip netns exec "$P-gwa" sysctl -n net.ipv4.ip_forward)" "1"
expect_eq "client not forwarding" "$(ip netns exec "$P-client" sysctl -n net.ipv4.ip_forward)" "0"
qdisc=$(tc -n "$P-gwa" -j qdisc show dev transit)
expect_eq "gwa transit qdisc" "$(json_get "$qdisc" 'd[0]["kind"]')" "tbf"
expect_eq "gwa transit tbf rate (bytes/s)" "$(json_get "$qdisc" 'd[0]["options"]["rate"]')" "62500000"
qdisc=$(tc -n "$P-gwb" -j qdisc show dev transit)
expect_eq "gwb transit tbf rate (bytes/s)" "$(json_get "$qdisc" 'd[0]["options"]["rate"]')" "62500000"
link=$(ip -n "$P-gwa" -j -d link show dev transit)
expect_eq "gwa transit queues" "$(json_get "$link" '(d[0]["num_tx_queues"], d[0]["num_rx_queues"])')" "(3, 3)"
expect_eq "client route mtu" "$(json_get "$(ip -n "$P-client" -j route show 198.19.0.0/24)" 'd[0]["metrics"][0]["mtu"]')" "1300"
for h in gwa gwb; do
	feat=$(ip netns exec "$P-$h" ethtool -k transit)
	expect_match "$h transit GRO on (ethtool)" "$feat" "generic-receive-offload: on"
	expect_match "$h transit TSO off (ethtool)" "$feat" "tcp-segmentation-offload: off"
	if grep -E "tx-tcp.*segmentation: on" <<<"$feat"; then fail "$h: a TSO variant stayed on"; fi
done
expect_eq "lan-a has no tbf" "$(json_get "$(tc -n "$P-gwa" -j qdisc show dev lan-a)" 'd[0]["kind"]')" "noqueue"

# show --json agrees with the kernel.
show=$("$TOPO" show "$TMP/ras-shaped.topo" --prefix "$P" --json)
expect_eq "show: hosts" "$(json_get "$show" '" ".join(h["netns"] for h in d["hosts"] if h["exists"])')" "$P-client $P-gwa $P-gwb $P-server"
expect_eq "show: gwa transit" "$(json_get "$show" '[(i["mtu"],i["addresses"],i["qdisc"]["rate_bps"]) for i in d["hosts"][1]["interfaces"] if i["name"]=="transit"][0]')" "(1400, ['198.18.0.1/24'], 500000000)"
expect_eq "show: gwa transit offloads" "$(json_get "$show" '[(i["gro"],i["tso"]) for i in d["hosts"][1]["interfaces"] if i["name"]=="transit"][0]')" "(True, False)"
expect_eq "show: gwa lan-a offloads" "$(json_get "$show" '[(i["gro"],i["tso"]) for i in d["hosts"][1]["interfaces"] if i["name"]=="lan-a"][0]')" "(False, True)"
expect_eq "show: gwa forwarding" "$(json_get "$show" 'd["hosts"][1]["forwarding"]["ipv4"]')" "True"
expect_eq "show: client static route" "$(json_get "$show" '[r["via"] for r in d["hosts"][0]["routes"] if r["dst"]=="198.18.3.0/24"][0]')" "198.18.1.1"
"$TOPO" show "$TMP/ras-shaped.topo" --prefix "$P" | grep -q "tbf rate 500mbit" || fail "show text lacks the tbf rate"

# A process inside a namespace is named by down, and does not stop it. (It sleeps until it
# is killed: however long down takes on a loaded box, it is still inside.)
ip netns exec "$P-server" sleep infinity &
sleeper=$!
poll 30 bash -c "ip netns pids $P-server | grep -qx $sleeper" || fail "sleeper not seen in $P-server"
out=$("$TOPO" down "$TMP/ras-shaped.topo" --prefix "$P" 2>&1)
kill "$sleeper" 2>/dev/null || true
wait "$sleeper" 2>/dev/null || true
expect_match "down names the process inside" "$out" "$P-server: 1 process still inside \\(pid $sleeper\\)"
expect_match "down lists what it removed" "$out" "removed 4 namespaces: $P-client $P-gwa $P-gwb $P-server"
expect_nothing_left "$P" "after down"
if ip -o link show | grep -qE ': (lan-a|lan-b|transit)[@:]'; then fail "a link leaked into the initial namespace"; fi

show=$("$TOPO" show ras --prefix "$P" --json)
expect_eq "show after down" "$(json_get "$show" '[h["exists"] for h in d["hosts"]]')" "[False, False, False, False]"
out=$("$TOPO" down ras --prefix "$P")
expect_eq "down twice" "$out" "nothing to remove for $TOPOLOGIES/ras.topo"
