#!/bin/bash
# gregw's command line and config file: every bad value is one line naming the option (or
# FILE:LINE) and the value, with exit status 2; an address outside the benchmarking ranges is
# refused so, naming --any-address, and with it is taken (tried only where nothing routes to
# it: nothing is sent); what cannot work in the namespace (a device or control socket already
# taken, an MTU above the path's, no route) is one line and exit status 1; a config file gives
# the same gateway as the options it holds.
#
#  P-a 198.18.0.1 ---l--- 198.18.0.2 P-b      (mtu 1400)
#  P-bare: lo only, no route anywhere
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbcli

printf '%s\n' "[host a]" "[host b]" "[link l]" "a = a" "b = b" "mtu = 1400" \
	"a.addr = 198.18.0.1/24" "b.addr = 198.18.0.2/24" >"$TMP/pair.topo"
"$TOPO" up "$TMP/pair.topo" --prefix "$P" >/dev/null
run() { ip netns exec "$P-a" "$GREGW" --ctl "$TMP/cli.sock" "${GW_MODE_ARGS[@]}" "$@"; }

expect_refusal "no remote" 2 "^gregw: missing --remote ADDR" run
expect_refusal "bad remote" 2 "^gregw: bad value '198.18.0.300' for --remote: expected an IPv4 or IPv6 address$" run --remote 198.18.0.300
OUTSIDE="is outside the benchmarking ranges 198.18.0.0/15 and 2001:2::/48"
expect_refusal "remote outside the ranges" 2 "^gregw: --remote 10.1.2.3 $OUTSIDE \\(--any-address allows it\\)$" run --remote 10.1.2.3
expect_refusal "IPv6 remote outside the ranges" 2 "^gregw: --remote 2001:db8::2 $OUTSIDE \\(--any-address allows it\\)$" run --remote 2001:db8::2
expect_refusal "local outside the ranges" 2 "^gregw: --local 10.0.0.1 $OUTSIDE \\(--any-address allows it\\)$" run --remote 198.18.0.2 --local 10.0.0.1
expect_refusal "addr outside the ranges" 2 "^gregw: --addr 10.9.0.1/24 $OUTSIDE \\(--any-address allows it\\)$" run --remote 198.18.0.2 --addr 10.9.0.1/24
expect_refusal "addr6 outside the ranges" 2 "^gregw: --addr6 2001:db8::1/64 $OUTSIDE \\(--any-address allows it\\)$" run --remote 198.18.0.2 --addr6 2001:db8::1/64
expect_refusal "addr wider than the ranges" 2 "^gregw: --addr 198.18.0.1/14 $OUTSIDE \\(--any-address allows it\\)$" run --remote 198.18.0.2 --addr 198.18.0.1/14
expect_refusal "route outside the ranges" 2 "^gregw: --route 10.3.0.0/16 $OUTSIDE \\(--any-address allows it\\)$" run --remote 198.18.0.2 --route 198.18.3.0/24 --route 10.3.0.0/16
expect_refusal "default route" 2 "^gregw: --route 0.0.0.0/0 $OUTSIDE \\(--any-address allows it\\)$" run --remote 198.18.0.2 --route 0.0.0.0/0
expect_refusal "bad key" 2 "^gregw: bad value '4294967296' for --key: expected 0 to 4294967295$" run --remote 198.18.0.2 --key 4294967296
expect_refusal "bad workers" 2 "^gregw: bad value '0' for --workers: expected 1 to 64$" run --remote 198.18.0.2 --workers 0
expect_refusal "bad cpus" 2 "^gregw: bad value '2-1' for --cpus" run --remote 198.18.0.2 --cpus 2-1
# A CPU that does not exist: named while the options are read, before anything is set up.
expect_refusal "a CPU that does not exist" 2 "^gregw: --cpus 99: no CPU 99 on this machine \\(CPUs [0-9,-]+\\)$" run --remote 198.18.0.2 --cpus 99
# '%' would be the kernel's template (x%d becomes x0): refused, as are ':' and blanks.
TUN_EXPECT="expected an interface name of 1 to 15 characters, without '/', ':', '%' or blanks"
expect_refusal "a TUN name with %" 2 "^gregw: bad value 'x%d' for --tun: $TUN_EXPECT$" run --remote 198.18.0.2 --tun 'x%d'
expect_refusal "a TUN name with :" 2 "^gregw: bad value 'gre:0' for --tun: $TUN_EXPECT$" run --remote 198.18.0.2 --tun 'gre:0'
expect_refusal "a TUN name with a tab" 2 "^gregw: bad value 'gre.0' for --tun: $TUN_EXPECT$" run --remote 198.18.0.2 --tun "gre$(printf '\t')0"
if ip -n "$P-a" link show gre0 >/dev/null 2>&1 || ip -n "$P-a" link show x0 >/dev/null 2>&1; then fail "a refused option left a device"; fi
expect_refusal "bad encap" 2 "^gregw: bad value 'udp' for --encap: expected gre or gre-udp$" run --remote 198.18.0.2 --encap udp
expect_refusal "bad offload" 2 "^gregw: bad value 'yes' for --offload: expected on or off$" run --remote 198.18.0.2 --offload yes
expect_refusal "bad aqm" 2 "^gregw: bad value 'red' for --aqm: expected off or codel$" run --remote 198.18.0.2 --aqm red
expect_refusal "bad aqm target" 2 "^gregw: bad value '5' for --aqm-target: expected 10 to 10000000 microseconds$" run --remote 198.18.0.2 --aqm-target 5
expect_refusal "bad fair-queue" 2 "^gregw: bad value 'fifo' for --fair-queue: expected on or off$" run --remote 198.18.0.2 --fair-queue fifo
expect_refusal "bad tx-merge" 2 "^gregw: bad value 'yes' for --tx-merge: expected on or off$" run --remote 198.18.0.2 --tx-merge yes
expect_refusal "a DSCP above 63" 2 "^gregw: bad value '64' for --tos: expected inherit or a DSCP from 0 to 63$" run --remote 198.18.0.2 --tos 64
expect_refusal "a TOS that is no number" 2 "^gregw: bad value 'ef' for --tos: expected inherit or a DSCP from 0 to 63$" run --remote 198.18.0.2 --tos ef
expect_refusal "a TTL above 255" 2 "^gregw: bad value '256' for --ttl: expected inherit or 0 to 255 \\(0: inherit\\)$" run --remote 198.18.0.2 --ttl 256
expect_refusal "a negative TTL" 2 "^gregw: bad value '-1' for --ttl: expected inherit or 0 to 255 \\(0: inherit\\)$" run --remote 198.18.0.2 --ttl -1
expect_refusal "bad mtu" 2 "^gregw: bad value '67' for --mtu: expected 68 to 65535$" run --remote 198.18.0.2 --mtu 67
expect_refusal "addr without length" 2 "^gregw: bad value '198.19.0.1' for --addr: expected ADDR/LEN$" run --remote 198.18.0.2 --addr 198.19.0.1
expect_refusal "addr6 of the wrong family" 2 "^gregw: bad value '198.19.0.1/24' for --addr6: expected an IPv6 prefix$" run --remote 198.18.0.2 --addr6 198.19.0.1/24
expect_refusal "route with host bits" 2 "^gregw: bad value '198.18.3.1/24' for --route: has host bits set$" run --remote 198.18.0.2 --route 198.18.3.1/24
expect_refusal "allow-from with host bits" 2 "^gregw: bad value '198.18.1.1/24' for --allow-from: has host bits set$" run --remote 198.18.0.2 --allow-from 198.18.1.1/24
expect_refusal "allow-from that is no prefix" 2 "^gregw: bad value 'lan' for --allow-from: expected ADDR/LEN$" run --remote 198.18.0.2 --allow-from lan
expect_refusal "bad coalesce-hold" 2 "^gregw: bad value '1001' for --coalesce-hold: expected 0 to 1000 microseconds$" run --remote 198.18.0.2 --coalesce-hold 1001
expect_refusal "bad interval" 2 "^gregw: bad value '0' for --stats-interval" run --remote 198.18.0.2 --stats-interval 0
expect_refusal "bad ring" 2 "^gregw: bad value 'v4' for --rx-ring: expected v3 or v2$" run --remote 198.18.0.2 --rx-ring v4
expect_refusal "bad scheduling policy" 2 "^gregw: bad value 'fifo' for --sched: expected batch or normal$" run --remote 198.18.0.2 --sched fifo
expect_refusal "unknown option" 2 "unrecognized option '--bogus'" run --remote 198.18.0.2 --bogus
expect_refusal "stray argument" 2 "^gregw: unexpected argument 'extra'" run --remote 198.18.0.2 extra
expect_refusal "mixed families" 2 "^gregw: --local and --remote are of different families$" run --remote 198.18.0.2 --local 2001:2::1
# (Into a file first: grep -q stops at its match, and the help is longer than one write.)
"$GREGW" --help >"$TMP/help.txt" || fail "--help failed"
grep -q -- "--mss-clamp" "$TMP/help.txt" || fail "--help lacks --mss-clamp"
grep -q -- "--any-address" "$TMP/help.txt" || fail "--help lacks --any-address"
grep -q -- "--allow-from" "$TMP/help.txt" || fail "--help lacks --allow-from"
grep -q -- "--tos inherit|N" "$TMP/help.txt" || fail "--help lacks --tos"
grep -q -- "--ttl inherit|N" "$TMP/help.txt" || fail "--help lacks --ttl"

printf '%s\n' "remote = 198.18.0.2" "key = 12" "seq = yes" "colour = red" >"$TMP/bad.conf"
expect_refusal "unknown key in a file" 2 "^gregw: $TMP/bad.conf:4: unknown key 'colour'$" run --config "$TMP/bad.conf"
printf '%s\n' "remote = 198.18.0.2" "seq = maybe" >"$TMP/bad2.conf"
expect_refusal "bad value in a file" 2 "^gregw: $TMP/bad2.conf:2: bad value 'maybe' for seq: expected yes or no$" run --config "$TMP/bad2.conf"
expect_refusal "missing file" 2 "^gregw: $TMP/none.conf: cannot open: No such file or directory$" run --config "$TMP/none.conf"
# What a file may hold: whole lines of at most 198 bytes (libinih cut a longer one into pieces
# and parsed each: a long comment's tail became a setting), no NUL byte, each key once but
# route; and only a regular file is read (/dev/zero would never end, a FIFO never open).
long=$(printf 'x%.0s' $(seq 200))
printf '%s\n' "remote = 198.18.0.2" "; $long mtu = 1000" >"$TMP/longc.conf"
expect_refusal "a comment too long" 2 "^gregw: $TMP/longc.conf:2: line longer than 198 bytes$" run --config "$TMP/longc.conf"
printf '%s\n' "remote = 198.18.0.2" "key = 7" "addr = 198.19.0.1/24 ; $long mtu = 1000" >"$TMP/longv.conf"
expect_refusal "a line too long" 2 "^gregw: $TMP/longv.conf:3: line longer than 198 bytes$" run --config "$TMP/longv.conf"
printf 'remote = 198.18.0.2\nkey = 1\0002\n' >"$TMP/nul.conf"
expect_refusal "a NUL byte" 2 "^gregw: $TMP/nul.conf:2: a NUL byte$" run --config "$TMP/nul.conf"
printf '%s\n' "remote = 198.18.0.2" "mtu = 1300" "route = 198.18.5.0/24" "route = 198.18.6.0/24" "mtu = 1200" >"$TMP/dup.conf"
expect_refusal "a key twice" 2 "^gregw: $TMP/dup.conf:5: duplicate key 'mtu' \\(first at line 2\\)$" run --config "$TMP/dup.conf"
mkfifo "$TMP/fifo.conf"
for f in /dev/zero /dev/urandom "$TMP/fifo.conf" "$TMP"; do
	expect_refusal "$f as the file" 2 "^gregw: $f: not a regular file$" timeout 30 ip netns exec "$P-a" "$GREGW" --ctl "$TMP/cli.sock" --config "$f"
done
printf '%s\n' "remote = 198.18.0.2" "cpus = 99" >"$TMP/cpus.conf"
expect_refusal "a file's CPU that does not exist" 2 "^gregw: $TMP/cpus.conf:2: cpus 99: no CPU 99 on this machine \\(CPUs [0-9,-]+\\)$" run --config "$TMP/cpus.conf"
printf '%s\n' "key = 12" "remote = 10.1.2.3" >"$TMP/real.conf"
expect_refusal "remote outside the ranges in a file" 2 "^gregw: $TMP/real.conf:2: remote 10.1.2.3 $OUTSIDE \\(any-address = yes or --any-address allows it\\)$" run --config "$TMP/real.conf"
printf '%s\n' "remote = 198.18.0.2" "tos = 63" "ttl = inherited" >"$TMP/ttl.conf"
expect_refusal "bad ttl in a file" 2 "^gregw: $TMP/ttl.conf:3: bad value 'inherited' for ttl: expected inherit or 0 to 255 \\(0: inherit\\)$" run --config "$TMP/ttl.conf"
printf '%s\n' "remote = 198.18.0.2" "any-address = perhaps" >"$TMP/bad3.conf"
expect_refusal "bad any-address in a file" 2 "^gregw: $TMP/bad3.conf:2: bad value 'perhaps' for any-address: expected yes or no$" run --config "$TMP/bad3.conf"

# With --any-address (after the address, before it, or as the file's key, after the address)
# the option parsing lets 10.1.2.3 through, and setup then fails: P-bare has no route to it,
# and a route lookup is all gregw does before it stops (exit 1): nothing is sent.
ip netns add "$P-bare"
ip -n "$P-bare" link set lo up
bare() { ip netns exec "$P-bare" "$GREGW" --ctl "$TMP/bare.sock" "${GW_MODE_ARGS[@]}" "$@"; }
expect_refusal "--any-address after --remote: past the options, no route" 1 "^gregw: no route to --remote 10.1.2.3: Network is unreachable$" bare --remote 10.1.2.3 --any-address
expect_refusal "--any-address before the addresses" 1 "^gregw: no route to --remote 10.1.2.3: Network is unreachable$" bare --any-address --remote 10.1.2.3 --local 10.1.2.4 --addr 10.9.0.1/24 --route 10.3.0.0/16
printf '%s\n' "remote = 10.1.2.3" "route = 10.3.0.0/16" "any-address = yes" >"$TMP/any.conf"
expect_refusal "any-address = yes in a file" 1 "^gregw: no route to --remote 10.1.2.3: Network is unreachable$" bare --config "$TMP/any.conf"
expect_refusal "a file's address, --any-address on the command line" 1 "^gregw: no route to --remote 10.1.2.3: Network is unreachable$" bare --config "$TMP/real.conf" --any-address
ip netns del "$P-bare"

# In the namespace: the path MTU is 1400, so the tunnel gets 1376 and no more.
expect_refusal "mtu above the path" 1 "^gregw: --mtu 1390 does not fit: the path MTU 1400 towards the peer leaves $((1376 - GW_UDP)) for the tunnel \\($((24 + GW_UDP)) bytes of encapsulation\\)$" run --remote 198.18.0.2 --mtu 1390
expect_refusal "no route to the peer" 1 "^gregw: no route to --remote 198.19.9.9" run --remote 198.19.9.9

# A config file: the same gateway as its options, command line overriding.
# (any-address = yes with the benchmarking ranges: allowed, recorded, and nothing leaves P-a.)
printf '%s\n' "; gregw on P-a" "remote = 198.18.0.2" "addr = 198.19.0.1/24" "key = 12" "seq = yes" \
	"workers = 1" "route = 198.18.5.0/24" "route = 198.18.6.0/24" "any-address = yes" \
	"tos = 46" "ttl = 0" >"$TMP/a.conf"
# (The stats say whether a key is set, not which: the override is seen in workers.)
gw_start conf "$P-a" --config "$TMP/a.conf" --key 13 --workers 2 --tos 10
s=$(gw_stats conf)
# tos overridden by the command line; the file's ttl 0 is inherit, as ip tunnel takes it.
expect_eq "tos from the command line, ttl 0 from the file" "$(json_get "$s" '(d["config"]["tos"], d["config"]["ttl"])')" "(10, 'inherit')"
expect_eq "config file and override" "$(json_get "$s" '(d["config"]["key"], d["config"]["seq"], d["config"]["workers"], d["config"]["mtu"], d["config"]["addr"], d["config"]["any_address"])')" "(True, True, 2, $((1368 - GW_UDP)), '198.19.0.1/24', True)"
expect_eq "routes from the file" "$(ip -n "$P-a" route show dev gre0 proto static | awk '{print $1}' | tr '\n' ' ')" "198.18.5.0/24 198.18.6.0/24 "
# Inner sources by default: the routes and the tunnel subnet; never the TUN's own address
# (first: it lies in the subnet), nor the namespace's other prefixes.
expect_eq "allow_from by default" "$(json_get "$s" 'd["config"]["allow_from"]')" "['198.18.5.0/24', '198.18.6.0/24', '198.19.0.1/24']"
expect_eq "never_from: the TUN's address first, the namespace's prefixes" "$(json_get "$s" '(d["config"]["never_from"][0], sorted(d["config"]["never_from"][1:]))')" "('198.19.0.1/32', ['127.0.0.1/8', '198.18.0.1/24', '::1/128'])"

# What is taken cannot be taken twice.
expect_refusal "control socket in use" 1 "cannot listen on $TMP/conf.sock: Address already in use \\(another gregw answers there: give --ctl\\)$" \
	ip netns exec "$P-a" "$GREGW" --remote 198.18.0.2 --tun gre1 --ctl "$TMP/conf.sock"
expect_refusal "TUN name in use" 1 "cannot create TUN device gre0: File exists \\(a device of that name exists: choose another --tun\\)$" \
	ip netns exec "$P-a" "$GREGW" --remote 198.18.0.2 --ctl "$TMP/other.sock"
expect_refusal "ctl on a dead socket" 1 "^gregw: $TMP/none.sock: No such file or directory$" "$GREGW" ctl "$TMP/none.sock" stats
expect_refusal "ctl with a bad command" 2 "unknown control command 'reboot'" "$GREGW" ctl "$TMP/conf.sock" reboot
gw_stop conf

# --netns instead of ip netns exec; telemetry lines and the summary into --stats-json;
# allow-from twice in a file and once on the command line: they accumulate.
printf '%s\n' "allow-from = 198.18.7.0/24" "allow-from = 2001:2:7::/48" >"$TMP/allow.conf"
"$GREGW" --netns "$P-a" --remote 198.18.0.2 --ctl "$TMP/ns.sock" --stats-interval 0.1 \
	--config "$TMP/allow.conf" --allow-from 198.18.8.0/24 \
	--stats-json "$TMP/stats.jsonl" >"$TMP/ns.out" 2>&1 &
nspid=$!
poll 30 "$GREGW" ctl "$TMP/ns.sock" stats || fail "gregw --netns did not come up: $(cat "$TMP/ns.out")"
expect_eq "--netns: gre0 is in $P-a" "$(json_get "$(ip -n "$P-a" -j link show dev gre0)" 'd[0]["ifname"]')" "gre0"
# Three interval lines (0.3 s at 0.1 s) before the stop, so that the file has more than two.
three_lines() { [ "$(wc -l <"$TMP/stats.jsonl")" -ge 3 ]; }
poll 30 three_lines || fail "gregw --netns wrote fewer than 3 interval lines into --stats-json in 30 s"
stop_bg "$nspid" TERM "gregw --netns"
expect_eq "gregw --netns exit status" "$BG_STATUS" "0"
# (more than 2 documents, how many final, the last final, every other one not)
expect_eq "--stats-json: interval lines, then exactly one final summary, the last line" "$(gw_finals "$TMP/stats.jsonl")" "True 1 True True"
expect_eq "nothing on stdout with --stats-json" "$(cat "$TMP/ns.out")" ""
expect_eq "the defaults: tos inherit, ttl 64" "$(json_get "$(tail -n 1 "$TMP/stats.jsonl")" '(d["config"]["tos"], d["config"]["ttl"])')" "('inherit', 64)"
expect_eq "no --any-address: any_address false in the summary" "$(json_get "$(tail -n 1 "$TMP/stats.jsonl")" 'd["config"]["any_address"]')" "False"
expect_eq "allow-from from the file and the command line" "$(json_get "$(tail -n 1 "$TMP/stats.jsonl")" 'd["config"]["allow_from"]')" "['198.18.7.0/24', '2001:2:7::/48', '198.18.8.0/24']"
expect_refusal "--netns that does not exist" 1 "cannot open namespace 'nope$$'" "$GREGW" --netns "nope$$" --remote 198.18.0.2

"$TOPO" down "$TMP/pair.topo" --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
