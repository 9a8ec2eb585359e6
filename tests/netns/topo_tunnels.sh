#!/bin/bash
# The bed for many tunnels (docs/topology.md, "Many tunnels"), built and read back, with the
# tunnel files of 1,000 tunnels (topo/tunnels.sh): every tunnel's four sites, IPv4 and IPv6,
# are the client's or the server's own (a local route each pool) and routed through gwa and
# gwb by plain forwarding, each checked with ip route get on every host; show --json names the
# pools' local routes; the first, a middle and the last tunnel carry a ping from site to site
# both ways and a TCP connection whose two ends are the sites' addresses; down leaves nothing.
#
#  P-client                 P-gwa                                      P-gwb               P-server
#  198.18.1.2 --lan-a-- 198.18.1.1   198.18.0.1 ==transit== 198.18.0.2   198.18.3.1 --lan-b-- 198.18.3.2
#  local 198.18.64.0/18       (and the same in IPv6)                        local 198.18.128.0/18
#  local 2001:2:0:4000::/50                                                 local 2001:2:0:8000::/50
#  tunnel i: client 198.18.64.0 + i, 2001:2:0:4000+i::2 <-> server 198.18.128.0 + i, 2001:2:0:8000+i::2
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbtun
N=1000

"$TUNBED_SRC/topo/tunnels.sh" "$N" "$TMP" || die "tunnels.sh $N: exit status $?"
out=$("$TOPO" up tunnels --prefix "$P")
expect_match "up prints a summary" "$out" "tunnels up: 4 namespaces \\($P-\\*\\), 3 links, 28 routes"

# Every tunnel's sites, by the hosts' own routing: one batch of ip route get per host.
col() { tail -n +2 "$TMP/tunnels.tsv" | cut -f "$1"; }
route_get() { # host column... : one line per address, "local" or the next hop
	local host=$1 c
	shift
	for c in "$@"; do col "$c"; done | sed 's/^/route get /' >"$TMP/batch-$host"
	ip -n "$P-$host" -batch "$TMP/batch-$host" | awk '{
		if ($1 == "local") print "local"; else for (i = 1; i < NF; i++) if ($i == "via") print $(i + 1) }'
}
count() { sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ' | sed 's/ $//'; }
expect_eq "client: its $N sites are its own" "$(route_get client 3 4 | count)" "localx$((2 * N))"
expect_eq "client: the server's sites via gwa" "$(route_get client 5 6 | count)" \
	"198.18.1.1x$N 2001:2:0:1::1x$N"
expect_eq "gwa: the server's sites via gwb" "$(route_get gwa 5 6 | count)" "198.18.0.2x$N 2001:2::2x$N"
expect_eq "gwa: the client's sites via the client" "$(route_get gwa 3 4 | count)" \
	"198.18.1.2x$N 2001:2:0:1::2x$N"
expect_eq "gwb: the client's sites via gwa" "$(route_get gwb 3 4 | count)" "198.18.0.1x$N 2001:2::1x$N"
expect_eq "gwb: the server's sites via the server" "$(route_get gwb 5 6 | count)" \
	"198.18.3.2x$N 2001:2:0:3::2x$N"
expect_eq "server: its $N sites are its own" "$(route_get server 5 6 | count)" "localx$((2 * N))"
expect_eq "server: the client's sites via gwb" "$(route_get server 3 4 | count)" \
	"198.18.3.1x$N 2001:2:0:3::1x$N"

# show --json: the local routes it made, and none of the kernel's own.
show=$("$TOPO" show tunnels --prefix "$P" --json)
expect_eq "show: the client's local routes" \
	"$(json_get "$show" '[(r["dst"], r["dev"], r["protocol"]) for r in d["hosts"][0]["routes"] if r["type"] == "local"]')" \
	"[('198.18.64.0/18', 'lo', 'static'), ('2001:2:0:4000::/50', 'lo', 'static')]"
expect_eq "show: the server's" \
	"$(json_get "$show" '[r["dst"] for r in d["hosts"][3]["routes"] if r["type"] == "local"]')" \
	"['198.18.128.0/18', '2001:2:0:8000::/50']"
expect_eq "show: gwa's pools routed" \
	"$(json_get "$show" 'sorted(r["dst"] + " " + r["via"] for r in d["hosts"][1]["routes"] if r["dst"].endswith(("/18", "/50")))')" \
	"['198.18.128.0/18 198.18.0.2', '198.18.64.0/18 198.18.1.2', '2001:2:0:4000::/50 2001:2:0:1::2', '2001:2:0:8000::/50 2001:2::2']"
"$TOPO" show tunnels --prefix "$P" | grep -qF "route local 198.18.64.0/18 dev lo proto static" ||
	fail "show text lacks the client's local route"

# A few tunnels end to end: ping from a site's address to the other side's, both ways and both
# families, and TCP between two sites' addresses (the server sees the client's site, the
# client the server's).
cat >"$TMP/tcp.py" <<'EOF'
import socket, sys
family = socket.AF_INET6 if ":" in sys.argv[2] else socket.AF_INET
if sys.argv[1] == "serve":
    s = socket.socket(family)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", 9700))
    s.listen(8)
    open(sys.argv[3], "w").close()
    for _ in range(int(sys.argv[4])):
        c, peer = s.accept()
        c.sendall(f"{c.getsockname()[0]} {peer[0]}\n".encode())
        c.close()
else:
    s = socket.socket(family)
    s.bind((sys.argv[2], 0))
    s.connect((sys.argv[3], 9700))
    print(s.makefile().readline().strip())
EOF
picks=(1 $((N / 2)) "$N") # lines of the table after its first: the first, a middle and the last
for fam in 4 6; do
	if [ "$fam" = 4 ]; then any=0.0.0.0 cc=3 sc=5; else any=:: cc=4 sc=6; fi
	rm -f "$TMP/ready"
	ip netns exec "$P-server" python3 "$TMP/tcp.py" serve "$any" "$TMP/ready" "${#picks[@]}" &
	server=$!
	poll 10 test -e "$TMP/ready" || die "the TCP server (IPv$fam) did not start"
	for k in "${picks[@]}"; do
		line=$(sed -n "$((k + 1))p" "$TMP/tunnels.tsv")
		name=$(cut -f 1 <<<"$line")
		c=$(cut -f "$cc" <<<"$line")
		s=$(cut -f "$sc" <<<"$line")
		ip netns exec "$P-client" ping -c 1 -W 2 -I "$c" "$s" >/dev/null || fail "$name: ping $c -> $s"
		ip netns exec "$P-server" ping -c 1 -W 2 -I "$s" "$c" >/dev/null || fail "$name: ping $s -> $c"
		expect_eq "$name: TCP from site to site, IPv$fam (server's end, client's end)" \
			"$(ip netns exec "$P-client" timeout 10 python3 "$TMP/tcp.py" connect "$c" "$s")" "$s $c"
	done
	wait_bg "$server" 10 "the TCP server (IPv$fam)"
	expect_eq "the TCP server (IPv$fam) served every connection" "$BG_STATUS" 0
done

"$TOPO" down tunnels --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
