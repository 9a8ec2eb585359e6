#!/bin/bash
# A tunnel change takes effect for the next packet (docs/gregw.md, "Many tunnels": a change's
# reply means every worker has left the pass it held the table before in). ROUNDS times, while
# a UDP load from the server's steady site to the client's keeps both gateways' workers in
# their passes: tunnel t00050 is added on gwa and gwb, and right after the second reply one
# UDP datagram goes each way through it: every one arrives. Then it is removed on both, and
# right after the second reply one datagram for it is counted by gwa as tx_no_tunnel (polled
# for), and never arrives. Neither gateway counts bad_key or unknown_peer, and gwa counts
# tx_no_tunnel exactly once a round. The order of the gateways alternates, so that each is
# the one changed last, just before its packet. Each round's replies are timed: the median
# and the longest are logged, with how many replies waited for a worker's pass (logged, never
# judged). ROUNDS (default 200) and LOAD_PPS (default 20000; 0: no load, idle workers) change
# the run, for the measurements of docs/gregw.md.
#
#  P-client                P-gwa [gregw --tunnels]              [gregw --tunnels] P-gwb              P-server
#  198.18.64.i ---lan-a--- 198.18.1.1  198.18.0.1 ==keys== 198.18.0.2  198.18.3.1 ---lan-b--- 198.18.128.i
#  tunnel t00000 (steady): 198.18.64.0 <-UDP load-- 198.18.128.0; t00050 (site 50) added and
#  removed, a datagram each way after each add, one towards the server after each remove
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbtunn
N=4
ROUNDS=${ROUNDS:-200}
LOAD_PPS=${LOAD_PPS:-20000}

"$TUNBED_SRC/topo/tunnels.sh" "$N" "$TMP" --encap "$GW_ENCAP" || die "tunnels.sh: exit status $?"
"$TOPO" up tunnels --prefix "$P" >/dev/null
gw_start gwa "$P-gwa" --tunnels "$TMP/gwa.tunnels" --addr 198.19.0.1/24 --workers 2
gw_start gwb "$P-gwb" --tunnels "$TMP/gwb.tunnels" --addr 198.19.0.2/24 --workers 2
# The steady tunnel's server site is the load's source towards the client's site. Site 50's
# routes go into the TUNs before its tunnel exists (gregw routes only its file's at start).
ip -n "$P-server" route add 198.18.64.0/32 via 198.18.3.1 src 198.18.128.0
ip -n "$P-gwa" route add 198.18.128.50/32 dev gre0
ip -n "$P-gwb" route add 198.18.64.50/32 dev gre0
# The kernel's own IPv6 packets into gwa's TUN (router solicitations, MLD) would be counted as
# tx_no_tunnel beside the datagrams this test counts: IPv4 alone there.
ip netns exec "$P-gwa" sysctl -qw net.ipv6.conf.gre0.disable_ipv6=1

# The load: datagrams from the server's steady site to the client's, through t00000, paced
# well below what the gateways carry (none of this test's datagrams may be lost to a full
# queue), until the rounds are done.
load=
if [ "$LOAD_PPS" -gt 0 ]; then
	tr_server "$P-client" 9500
	ip netns exec "$P-server" "$TRAFFIC" client 198.18.64.0 --port 9500 --udp --pps "$LOAD_PPS" \
		--sessions 8 --size 200 --time 3600 --json >"$TMP/load.json" 2>"$TMP/load.err" &
	load=$!
	poll 20 gw_true gwa 'd["total"]["tun_tx_packets"] > 1000' ||
		die "the load did not reach the client's site: $(cat "$TMP/load.err")"
fi

# gwa's TUN came up before its IPv6 went off: its first router solicitations are counted.
no_tunnel0=$(json_get "$(gw_stats gwa)" 'd["total"]["drops"]["tx_no_tunnel"]')

# The rounds, in one process in the client's namespace (a datagram leaves as soon as the reply
# is read); the server's socket is opened in the server's namespace (setns). Prints a line
# "changes N MEDIAN_US MAX_US WAITED" (the replies' times as the client saw them, from its
# connect to the end of the reply), then "ok ROUNDS", or what went wrong, a line each (it
# stops after 10).
ip netns exec "$P-client" python3 - "${GW_SOCK[gwa]}" "${GW_SOCK[gwb]}" "/run/netns/$P-server" \
	"$ROUNDS" "$GW_ENCAP" >"$TMP/rounds.out" 2>&1 <<'PY' || fail "the rounds: $(tail -5 "$TMP/rounds.out")"
import ctypes, json, os, select, socket, sys, time

sock_a, sock_b, server_ns, rounds, encap = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
PORT = 9600
CLIENT, SERVER = "198.18.64.50", "198.18.128.50"


def ctl(path, line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    s.sendall((line + "\n").encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return json.loads(data)


def drops(path):
    return ctl(path, "stats")["total"]["drops"]


cs = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
cs.bind((CLIENT, PORT))
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(server_ns, os.O_RDONLY)
if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
    sys.exit(f"setns {server_ns}: {os.strerror(ctypes.get_errno())}")
os.close(fd)
ss = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ss.bind((SERVER, PORT))

adds = {
    sock_a: f"add t00050 peer = 198.18.0.2; key = 51; prefixes = {SERVER}/32; encap = {encap}",
    sock_b: f"add t00050 peer = 198.18.0.1; key = 51; prefixes = {CLIENT}/32; encap = {encap}",
}
bad, took = [], []
waited0 = sum(ctl(p, "stats")["tunnels"].get("effect_waits", 0) for p in (sock_a, sock_b))


def change(paths, line_of, verb):
    for p in paths:
        t0 = time.monotonic()
        r = ctl(p, line_of(p))
        took.append(time.monotonic() - t0)
        if r.get("changed") != verb or r.get("tunnel") != "t00050":
            bad.append(f"round {i}: {verb} on {p}: {r}")


def arrives(s, want):
    """Waits for datagram want on s; what came instead is an error."""
    deadline = time.monotonic() + 10
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([s], [], [], left)[0]:
            break
        got = s.recv(2048)
        if got == want:
            return True
        bad.append(f"round {i}: {got!r} came where {want!r} was due")
    return False


for i in range(rounds):
    order = (sock_a, sock_b) if i % 2 == 0 else (sock_b, sock_a)
    change(order, adds.get, "add")
    there, back = f"there {i}".encode(), f"back {i}".encode()
    cs.sendto(there, (SERVER, PORT))
    ss.sendto(back, (CLIENT, PORT))
    if not arrives(ss, there):
        bad.append(f"round {i}: the datagram to the server's site 50 did not arrive")
    if not arrives(cs, back):
        bad.append(f"round {i}: the datagram to the client's site 50 did not arrive")
    change(reversed(order), lambda p: "remove t00050", "remove")
    before = drops(sock_a)["tx_no_tunnel"]
    cs.sendto(f"gone {i}".encode(), (SERVER, PORT))
    deadline = time.monotonic() + 10
    while (now := drops(sock_a)["tx_no_tunnel"]) == before and time.monotonic() < deadline:
        time.sleep(0.001)
    if now != before + 1:
        bad.append(f"round {i}: removed, gwa counted {now - before} tx_no_tunnel, want 1")
    if len(bad) >= 10:
        break

# A datagram sent after a remove that still went through would be here by now: the next
# round's datagram came after it on the same path, or the stats were read after it.
ss.setblocking(False)
try:
    bad.append(f"a datagram came through a removed tunnel: {ss.recv(2048)!r}")
except BlockingIOError:
    pass
waited = sum(ctl(p, "stats")["tunnels"].get("effect_waits", 0) for p in (sock_a, sock_b)) - waited0
took.sort()
print(f"changes {len(took)} {took[len(took) // 2] * 1e6:.0f} {took[-1] * 1e6:.0f} {waited}")
for b in bad[:10]:
    print(b)
if not bad:
    print(f"ok {rounds}")
PY
expect_eq "$ROUNDS rounds: each datagram through the tunnel just added arrived, each for it just removed was tx_no_tunnel" \
	"$(tail -1 "$TMP/rounds.out")" "ok $ROUNDS"
grep -v '^changes \|^ok ' "$TMP/rounds.out" >&2 || true
if read -r _ n med max waited < <(grep '^changes ' "$TMP/rounds.out"); then
	log "$n changes' replies as the client saw them: median $med us, longest $max us; $waited held for a worker's pass"
fi

expect_eq "gwa: tx_no_tunnel exactly once a round" \
	"$(($(json_get "$(gw_stats gwa)" 'd["total"]["drops"]["tx_no_tunnel"]') - no_tunnel0))" "$ROUNDS"
if [ -n "$load" ]; then
	kill -TERM "$load" 2>/dev/null || true
	wait "$load" || true
	tr_stop
	expect_eq "gwa: the load's datagrams came through t00000" \
		"$(json_get "$("$GREGW" ctl "${GW_SOCK[gwa]}" "tunnels 0 1")" '(d["list"][0]["name"], d["list"][0]["rx_packets"] > 1000)')" \
		"('t00000', True)"
fi
for g in gwa gwb; do
	expect_eq "$g: no bad_key, no unknown_peer" \
		"$(json_get "$(gw_stats "$g")" '(d["total"]["drops"]["bad_key"], d["total"]["drops"]["unknown_peer"])')" "(0, 0)"
done
expect_eq "both: back to the file's $N tunnels" \
	"$(json_get "$(gw_stats gwa)" 'd["tunnels"]["count"]') $(json_get "$(gw_stats gwb)" 'd["tunnels"]["count"]')" "$N $N"

gw_stop gwa
gw_stop gwb
"$TOPO" down tunnels --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
