#!/bin/bash
# What gregw keeps of its privileges once set up: every thread of both gateways (the main
# thread and each worker, /proc/PID/task/*/status) has no capability (CapEff, CapPrm, CapInh,
# CapAmb and the bounding set all zero), NoNewPrivs 1, and Seccomp 2 where the build loads
# the allow-list (TUNBED_GREGW_SECCOMP=1: builds without sanitizers; 0 otherwise). With that,
# verified transfers both ways, too-big pings (ICMP from gregw), stats, flows, an unknown
# command and the interval lines still work, and SIGTERM still exits 0 promptly, the TUN
# device and its routes gone.
#
#  P-client --lan-a-- P-gwa [gregw, 2 workers] ==transit== [gregw, 2 workers] P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbpriv
MB=$((1 << 20))
SECCOMP=${TUNBED_GREGW_SECCOMP:?ctest sets TUNBED_GREGW_SECCOMP (1 where the build loads the allow-list)}

"$TOPO" up ras --prefix "$P" >/dev/null
gw_pair4 "$P" --seq --workers 2 --stats-interval 0.5 --mss-clamp

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
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
