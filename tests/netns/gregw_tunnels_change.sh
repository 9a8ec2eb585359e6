#!/bin/bash
# gregw's tunnel table changed at run time through the control socket (docs/gregw.md, "Many
# tunnels"), while another tunnel carries a verified duplex transfer: a tunnel added on both
# gateways carries a ping at once, replaced (a new key and the next sites) it carries the next
# one between its new sites, and none to its old ones; removed, its packets are dropped as
# tx_no_tunnel; a change that breaks a rule is answered with an error
# and changes nothing; 100 changes sent at once on one kept connection are answered in order.
# The steady tunnel loses no byte: its transfer verifies, every byte
# sent was received, and its counters on gwa and gwb agree exactly. The file's tunnels carry
# sequence numbers and checksums, the one added has neither: GRE headers of two lengths at
# once, each tunnel's own; each tunnel's receive windows take its numbers, from the lowest to
# the highest.
#
#  P-client                P-gwa [gregw --tunnels]              [gregw --tunnels] P-gwb              P-server
#  198.18.64.i ---lan-a--- 198.18.1.1  198.18.0.1 ==keys== 198.18.0.2  198.18.3.1 ---lan-b--- 198.18.128.i
#  tunnel t00000 (steady): 198.18.64.0 <-> 198.18.128.0; t00050 added (site 50), replaced
#  (site 51), removed
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbtunc
N=4
MIN_ROUNDS=3 # change rounds at least; more while the steady transfer runs

"$TUNBED_SRC/topo/tunnels.sh" "$N" "$TMP" --encap "$GW_ENCAP" --seq --csum || die "tunnels.sh: exit status $?"
"$TOPO" up tunnels --prefix "$P" >/dev/null
gw_start gwa "$P-gwa" --tunnels "$TMP/gwa.tunnels" --addr 198.19.0.1/24 --workers 2
gw_start gwb "$P-gwb" --tunnels "$TMP/gwb.tunnels" --addr 198.19.0.2/24 --workers 2
# The steady tunnel's client site is the source towards its server site.
ip -n "$P-client" route add 198.18.128.0/32 via 198.18.1.1 src 198.18.64.0
# gregw holds no capability once running: the routes of a tunnel added later are the
# operator's to make (here, before it exists: its packets are tx_no_tunnel until then).
for site in 50 51; do
	ip -n "$P-gwa" route add "198.18.128.$site/32" dev gre0
	ip -n "$P-gwb" route add "198.18.64.$site/32" dev gre0
done
# The kernel's own IPv6 packets into the TUN (router solicitations, MLD) would be counted as
# tx_no_tunnel beside the pings: IPv4 alone here.
ip netns exec "$P-gwa" sysctl -qw net.ipv6.conf.gre0.disable_ipv6=1

ctl() { # gateway line: the reply
	"$GREGW" ctl "${GW_SOCK[$1]}" "$2"
}
count() { json_get "$(gw_stats "$1")" 'd["tunnels"]["count"]'; }
no_tunnel() { json_get "$(gw_stats gwa)" 'd["total"]["drops"]["tx_no_tunnel"]'; }
ping_site() { # site count wait: pings from the client's site to the server's
	ip netns exec "$P-client" ping -c "$2" -i 0.2 -W "$3" -I "198.18.64.$1" "198.18.128.$1" \
		>/dev/null 2>&1
}
changed() { # what reply: the reply says the change was made
	expect_match "$1" "$2" '"changed": "'
}

tr_server "$P-server" 9400
ip netns exec "$P-client" "$TRAFFIC" client 198.18.128.0 --port 9400 --pattern duplex \
	--time 10 --verify --json >"$TMP/steady.json" 2>"$TMP/steady.err" &
steady=$!
poll 20 sessions_flowing "$P-server" 9400 1 || die "the steady transfer did not start: $(cat "$TMP/steady.err")"

# Refusals change nothing, on a gateway carrying traffic.
expect_match "a prefix of another tunnel: refused" \
	"$(ctl gwa "add t00050 peer = 198.18.0.2; key = 51; prefixes = 198.18.128.1/32; encap = $GW_ENCAP")" \
	"\"error\": \"tunnel 't00050': prefix 198.18.128.1/32 is tunnel 't00001''s already"
expect_match "the peer and key of another tunnel: refused" \
	"$(ctl gwa "add t00050 peer = 198.18.0.2; key = 2; prefixes = 198.18.128.50/32; encap = $GW_ENCAP")" \
	"\"error\": \"tunnel 't00050': peer 198.18.0.2 key 2 is tunnel 't00001''s already"
expect_match "a key out of range: refused" \
	"$(ctl gwa "add t00050 peer = 198.18.0.2; key = 4294967296; prefixes = 198.18.128.50/32; encap = $GW_ENCAP")" \
	"\"error\": \"tunnel 't00050', key 2: bad value '4294967296' for key"
expect_match "a tunnel not there: refused" "$(ctl gwa "remove t00050")" "\"error\": \"no tunnel 't00050'"
expect_eq "the refusals changed nothing" "$(count gwa)" "$N"

# Changes back to back under the steady transfer: 16 clients at once (the control socket's
# CTL_CONNS), each sending one change before any reads its reply: 100 adds, 50 replaces and
# 50 removes. A change that finds the workers holding the tables waits for their passes
# without holding up the control loop; each gets its reply, made, and the table ends as asked.
burst() { # gateway: prints "ok" or what went wrong
	python3 - "${GW_SOCK[$1]}" "$GW_ENCAP" <<'PY'
import json, socket, sys
path, encap = sys.argv[1], sys.argv[2]
def line(verb, i):
    if verb == "add":
        return f"add b{i:03d} peer = 198.18.0.2; key = {1000 + i}; prefixes = 198.18.200.{i}/32; encap = {encap}"
    if verb == "replace":
        return f"replace b{i:03d} peer = 198.18.0.2; key = {2000 + i}; prefixes = 198.18.201.{i}/32; encap = {encap}"
    return f"remove b{i:03d}"
bad = []
for verb, ids in (("add", range(100)), ("replace", range(50)), ("remove", range(50, 100))):
    ids = list(ids)
    for at in range(0, len(ids), 16):
        socks = []
        for i in ids[at:at + 16]:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(path)
            s.sendall((line(verb, i) + "\n").encode())
            socks.append((i, s))
        for i, s in socks:
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            s.close()
            try:
                d = json.loads(data)
            except ValueError:
                d = {"raw": data.decode(errors="replace")}
            if d.get("changed") != verb or d.get("tunnel") != f"b{i:03d}":
                bad.append(f"{verb} b{i:03d}: {d}")
print("ok" if not bad else "; ".join(bad[:5]) + f" ({len(bad)} in all)")
PY
}
expect_eq "gwa: 200 changes back to back, 16 clients at once, each answered as made" "$(burst gwa)" ok
t=$(ctl gwa "tunnels 0 1024")
expect_eq "gwa: the table ends as asked: the bed's, and b000 to b049 replaced" \
	"$(json_get "$t" '(d["tunnels"], sorted(x["name"] for x in d["list"] if x["name"].startswith("b")) == ["b%03d" % i for i in range(50)], all(x["prefixes"] == ["198.18.201.%d/32" % int(x["name"][1:])] for x in d["list"] if x["name"].startswith("b")))')" \
	"($((N + 50)), True, True)"
log "gwa: $(json_get "$(gw_stats gwa)" 'd["tunnels"]["busy_retries"]') publications found the workers holding the tables"
for i in $(seq 0 49); do printf 'remove b%03d\n' "$i"; done | while read -r l; do ctl gwa "$l" >/dev/null; done
expect_eq "gwa: back to its $N tunnels" "$(count gwa)" "$N"

# The same on one kept connection (docs/gregw.md, the control socket's `keep`), as
# tunnels_churn.py makes its changes: 50 adds and 50 removes sent at once, before any reply is
# read; each answered in order, one line each, as made.
kept_burst() { # gateway: prints "ok" or what went wrong
	python3 - "${GW_SOCK[$1]}" "$GW_ENCAP" <<'PY'
import json, socket, sys
path, encap = sys.argv[1], sys.argv[2]
lines = [f"add k{i:03d} peer = 198.18.0.2; key = {3000 + i}; prefixes = 198.18.202.{i}/32; encap = {encap}" for i in range(50)]
lines += [f"remove k{i:03d}" for i in range(50)]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(path)
s.sendall(("keep\n" + "".join(line + "\n" for line in lines)).encode())
buf = b""
while buf.count(b"\n") < len(lines) + 1:
    data = s.recv(65536)
    if not data:
        break
    buf += data
replies = [json.loads(r) for r in buf.split(b"\n")[:-1]]
bad = []
if len(replies) != len(lines) + 1 or replies[0] != {"keep": True}:
    bad.append(f"{len(replies)} replies, the first {replies[:1]}")
for line, d in zip(lines, replies[1:]):
    verb, name = line.split()[:2]
    if d.get("changed") != verb or d.get("tunnel") != name:
        bad.append(f"{line[:30]}: {d}")
print("ok" if not bad else "; ".join(bad[:5]) + f" ({len(bad)} in all)")
PY
}
expect_eq "gwa: 100 changes on one kept connection, sent at once, each answered in order as made" "$(kept_burst gwa)" ok
expect_eq "gwa: back to its $N tunnels after the kept connection's" "$(count gwa)" "$N"

before=$(no_tunnel)
ping_site 50 2 1 && fail "a ping through no tunnel got an answer"
expect_eq "before the tunnel exists: its packets are tx_no_tunnel" "$(($(no_tunnel) - before))" 2
r=0
overlapped=0
while [ "$r" -lt "$MIN_ROUNDS" ] || ! exited "$steady"; do
	r=$((r + 1))
	changed "round $r: add on gwa" "$(ctl gwa "add t00050 peer = 198.18.0.2; key = 51; prefixes = 198.18.128.50/32; encap = $GW_ENCAP")"
	changed "round $r: add on gwb" "$(ctl gwb "add t00050 peer = 198.18.0.1; key = 51; prefixes = 198.18.64.50/32; encap = $GW_ENCAP")"
	ping_site 50 1 2 || fail "round $r: no ping through the tunnel just added"
	changed "round $r: replace on gwa" "$(ctl gwa "replace t00050 peer = 198.18.0.2; key = $((100 + r)); prefixes = 198.18.128.51/32; encap = $GW_ENCAP")"
	changed "round $r: replace on gwb" "$(ctl gwb "replace t00050 peer = 198.18.0.1; key = $((100 + r)); prefixes = 198.18.64.51/32; encap = $GW_ENCAP")"
	ping_site 51 1 2 || fail "round $r: no ping through the tunnel just replaced"
	before=$(no_tunnel)
	ping_site 50 1 1 && fail "round $r: a ping to the replaced tunnel's old site got an answer"
	expect_eq "round $r: its old site is no tunnel's" "$(($(no_tunnel) - before))" 1
	expect_eq "round $r: its new key on the wire" \
		"$(json_get "$(ctl gwa "tunnels $N 1")" '(d["list"][0]["name"], d["list"][0]["rx_packets"] > 0)')" \
		"('t00050', True)"
	changed "round $r: remove on gwa" "$(ctl gwa "remove t00050")"
	changed "round $r: remove on gwb" "$(ctl gwb "remove t00050")"
	before=$(no_tunnel)
	ping_site 51 1 1 && fail "round $r: a ping through the removed tunnel got an answer"
	expect_eq "round $r: removed, its packets are tx_no_tunnel" "$(($(no_tunnel) - before))" 1
	if ! exited "$steady"; then overlapped=$r; fi
done
log "$overlapped of $r rounds of changes while the steady transfer ran"
expect_eq "gwa: back to its $N tunnels" "$(count gwa)" "$N"
expect_eq "gwa: the changes made" "$(json_get "$(gw_stats gwa)" 'd["tunnels"]["changes"]')" "$((3 * r + 350))"

wait_bg "$steady" 60 "the steady transfer"
expect_eq "the steady transfer's exit status" "$BG_STATUS" 0
j=$(cat "$TMP/steady.json")
expect_eq "the steady transfer: complete, every byte verified" \
	"$(json_get "$j" '(d["complete"], d["tcp"]["verify"]["mismatches"], d["tcp"]["failed"])')" "(True, 0, 0)"
expect_eq "the steady transfer: every byte sent was received, both ways" \
	"$(json_get "$j" 'all(s["sent"] == s["server_received"] > 0 and s["server_sent"] == s["received"] > 0 for s in d["tcp"]["per_session"])')" \
	"True"
tr_stop
a=$(ctl gwa "tunnels 0 1")
b=$(ctl gwb "tunnels 0 1")
expect_eq "the steady tunnel: with sequence numbers and checksums" "$(json_get "$a" '(d["list"][0]["seq"], d["list"][0]["csum"])')" "(True, True)"
expect_eq "the steady tunnel's counters: gwa's in are gwb's out, both ways, nothing dropped" \
	"$(json_get "$a" '(x := d["list"][0])["name"], x["tx_packets"], x["tx_bytes"], x["rx_packets"], x["rx_bytes"], sum(x["drops"].values())')" \
	"$(json_get "$b" '(x := d["list"][0])["name"], x["rx_packets"], x["rx_bytes"], x["tx_packets"], x["tx_bytes"], sum(x["drops"].values())')"
# Each tunnel has its receive windows (one a worker): the steady tunnel's numbers, among the
# other tunnels', are all in them, from the lowest to the highest, none out of a window.
for g in gwa gwb; do
	x=$(ctl "$g" "tunnels 0 1")
	expect_eq "$g: the steady tunnel's receive windows took each of its numbers" \
		"$(json_get "$x" '((x := d["list"][0])["rx_seq"] is not None, x["rx_seq"]["lost"], x["rx_seq"]["highest"] - x["rx_seq"]["lowest"] + 1 == x["rx_packets"])')" \
		"(True, 0, True)"
	expect_eq "$g: no number out of a window" \
		"$(json_get "$(gw_stats "$g")" '(d["total"]["seq_packets"] > 0, d["total"]["seq_out_of_window"])')" "(True, 0)"
done

gw_stop gwa
gw_stop gwb
"$TOPO" down tunnels --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
