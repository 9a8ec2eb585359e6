#!/bin/bash
# What gregw keeps of its privileges once set up: every thread of both gateways (the main
# thread and each worker, /proc/PID/task/*/status) has no capability (CapEff, CapPrm, CapInh,
# CapAmb and the bounding set all zero), NoNewPrivs 1, and Seccomp 2 where the build loads
# the allow-list (TUNBED_GREGW_SECCOMP=1: builds without sanitizers; 0 otherwise). With that,
# verified transfers both ways, too-big pings (ICMP from gregw), stats, flows, an unknown
# command and the interval lines still work, and SIGTERM still exits 0 promptly, the TUN
# device and its routes gone. gwb runs as nobody (--user): every thread's uids and gids are
# nobody's, with no supplementary group, its control socket is nobody's, and nobody removes it
# at exit; it reads TUN through io_uring (--tun-io uring), its rings made before the drop.
# --user refuses a user that does not exist (exit 2) and a control socket nobody
# could not remove (exit 1), and makes the default socket /run/gregw/USER/NETNS.TUN.sock.
#
#  P-client --lan-a-- P-gwa [gregw, 2 workers] ==transit== [gregw --user nobody, 2 workers] P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbpriv
MB=$((1 << 20))
SECCOMP=${TUNBED_GREGW_SECCOMP:?ctest sets TUNBED_GREGW_SECCOMP (1 where the build loads the allow-list)}

"$TOPO" up ras --prefix "$P" >/dev/null
# nobody's directory for gwb's control socket: nobody must reach it through $TMP.
chmod 711 "$TMP"
install -d -o nobody -m 700 "$TMP/nobody"
NOBODY="$(id -u nobody) $(id -g nobody)"
gw_a4 "$P" --seq --workers 2 --stats-interval 0.5 --mss-clamp
GW_CTL_DIR="$TMP/nobody" gw_b4 "$P" --seq --workers 2 --stats-interval 0.5 --mss-clamp --user nobody --tun-io uring
# gwb's rings, made as root, read TUN after the drop, under the allow-list.
expect_eq "gwb reads TUN through io_uring" "$(json_get "$(gw_stats gwb)" 'd["config"]["tun_io"]')" uring

# One line per thread: "CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp".
threads_privs() { # pid
	for st in /proc/"$1"/task/*/status; do
		awk '/^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):/ {printf "%s ", $2} END {print ""}' "$st"
	done
}
Z=0000000000000000
for gw in gwa gwb; do
	pid=${GW_PID[$gw]}
	privs=$(threads_privs "$pid")
	log "$gw threads: $(echo "$privs" | tr '\n' '|')"
	expect_eq "$gw: threads (main and 2 workers)" "$(echo "$privs" | wc -l)" "3"
	expect_eq "$gw: every thread without capabilities, NoNewPrivs, Seccomp $((SECCOMP * 2))" \
		"$(echo "$privs" | sort -u)" "$Z $Z $Z $Z $Z 1 $((SECCOMP * 2)) "
done
# Real, effective, saved and filesystem ids, and the supplementary groups, of every thread.
ids() { # pid
	for st in /proc/"$1"/task/*/status; do
		awk '/^Uid:/ {u = $2 " " $3 " " $4 " " $5} /^Gid:/ {g = $2 " " $3 " " $4 " " $5} /^Groups:/ {n = NF - 1} END {print u " | " g " | groups " n}' "$st"
	done | sort -u
}
read -r nuid ngid <<<"$NOBODY"
expect_eq "gwa: every thread root's" "$(ids "${GW_PID[gwa]}")" "0 0 0 0 | 0 0 0 0 | groups 0"
expect_eq "gwb --user nobody: every thread nobody's, no supplementary group" "$(ids "${GW_PID[gwb]}")" \
	"$nuid $nuid $nuid $nuid | $ngid $ngid $ngid $ngid | groups 0"
expect_eq "gwb's control socket: nobody's, 0600" "$(stat -c '%u %g %a' "$TMP/nobody/gwb.sock")" "$nuid $ngid 600"

bulk_transfer "$P" 198.18.3.2 16 $((50 * MB))
bulk_transfer "$P" 198.18.1.2 4 $((20 * MB)) server client
# Too big for the tunnel, with DF, past a device MTU raised by hand (as gregw_icmp does):
# gregw writes "fragmentation needed" into TUN.
mtu=$(json_get "$(gw_stats gwa)" 'd["config"]["mtu"]')
ip -n "$P-gwa" link set gre0 mtu 1500
ip netns exec "$P-client" ping -c 1 -W 2 -M "do" -s 1472 198.18.3.2 >/dev/null 2>&1 || true
poll 30 gw_true gwa 'd["total"]["icmp_sent"] >= 1' || fail "gwa sent no ICMP error for a packet too big"
ip -n "$P-gwa" link set gre0 mtu "$mtu"
ip -n "$P-client" route flush cache
expect_eq "ping through the gateways" "$(ip netns exec "$P-client" ping -c 1 -W 5 198.18.3.2 >/dev/null && echo ok)" "ok"
expect_eq "flows still answer" "$(json_get "$(gw_stats gwa flows)" 'len(d["flows"]) > 0')" "True"
expect_eq "an unknown command still answers" "$(json_get "$(python3 "$HERE/ctl_clients.py" request "$TMP/gwa.sock" 'b"nope\n"')" 'd["valid"]')" "True"
for gw in gwa gwb; do
	expect_eq "$gw: no drop but the ping too big" "$(json_get "$(gw_stats $gw)" 'd["total"]["dropped"] - d["total"]["drops"]["tx_too_big"]')" "0"
	# Interval lines, written by the main thread under the same filter.
	two_lines() { [ "$(wc -l <"${GW_OUT[$gw]}")" -ge 2 ]; }
	poll 30 two_lines || fail "$gw wrote fewer than 2 interval lines in 30 s"
done
gw_stop gwa
gw_stop gwb
for gw in gwa gwb; do
	expect_eq "$gw: interval lines, then exactly one final summary" "$(gw_finals "${GW_OUT[$gw]}")" "True 1 True True"
	if ip -n "$P-$gw" link show gre0 >/dev/null 2>&1; then fail "$gw: gre0 outlived gregw"; fi
	if [ -n "$(ip -n "$P-$gw" route show dev gre0 2>/dev/null)" ]; then fail "$gw: routes into gre0 outlived gregw"; fi
done
expect_eq "gwb (nobody) removed its control socket at exit" "$(ls -A "$TMP/nobody")" ""

# --user refusals, before anything is set up; and the default socket of a --user.
expect_refusal "no such user" 2 "^gregw: bad value 'tbnouser$$' for --user: no such user$" \
	ip netns exec "$P-gwb" "$GREGW" --remote 198.18.0.1 --user "tbnouser$$"
expect_refusal "a socket nobody could not remove" 1 \
	"^gregw: cannot listen on $TMP/x.sock: user nobody may not remove it at exit \\(give --ctl in a directory nobody may write\\)$" \
	ip netns exec "$P-gwb" "$GREGW" --remote 198.18.0.1 --addr 198.19.0.2/24 --user nobody --ctl "$TMP/x.sock"
had_dir=""
if [ -d /run/gregw/nobody ]; then had_dir=1; fi
ip netns exec "$P-gwb" "$GREGW" --remote 198.18.0.1 --addr 198.19.0.2/24 --user nobody "${GW_MODE_ARGS[@]}" >"$TMP/dflt.out" 2>&1 &
dpid=$!
sock=/run/gregw/nobody/$P-gwb.gre0.sock
poll 30 "$GREGW" ctl "$sock" stats || fail "gregw --user nobody: no control socket at $sock: $(cat "$TMP/dflt.out")"
expect_eq "the default socket of --user nobody: nobody's, in nobody's 0700 directory" \
	"$(stat -c '%u %a' "$sock" /run/gregw/nobody | tr '\n' ' ')" "$nuid 600 $nuid 700 "
stop_bg "$dpid" TERM "gregw --user nobody"
expect_eq "gregw --user nobody (default socket) exit status" "$BG_STATUS" "0"
[ ! -e "$sock" ] || fail "gregw --user nobody left $sock"
# Killed, it leaves the socket; tunbed-topo down removes it from nobody's directory too.
ip netns exec "$P-gwb" "$GREGW" --remote 198.18.0.1 --addr 198.19.0.2/24 --user nobody "${GW_MODE_ARGS[@]}" >"$TMP/dflt.out" 2>&1 &
dpid=$!
poll 30 "$GREGW" ctl "$sock" stats || fail "gregw --user nobody (again): no control socket at $sock: $(cat "$TMP/dflt.out")"
stop_bg "$dpid" KILL "gregw --user nobody (kill -9)"
[ -S "$sock" ] || fail "kill -9: the socket is gone already (nothing for down to remove)"

"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
[ ! -e "$sock" ] || fail "tunbed-topo down left the stale $sock"
# The directory stays for nobody's next gregw; this test made it, and takes it away.
[ -n "$had_dir" ] || rmdir /run/gregw/nobody
