#!/bin/bash
# Every refusal of tunbed-topo's command line, end to end: one clear line, the right exit
# status, and nothing created. (The parser's refusals are unit-tested one by one in
# test_topo_parse; here a sample of them goes through the real binary.)
#
#  P-a 198.18.0.1 ---l--- 198.18.0.2 P-b    (the only topology this test brings up)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbref

bad() { # name line... : writes $TMP/name.topo
	local name=$1
	shift
	printf '%s\n' "$@" >"$TMP/$name.topo"
}

bad unknown-key "[host a]" "colour = red"
bad outside "[host a]" "[host b]" "[link l]" "a = a" "b = b" "a.addr = 10.0.0.1/24"
bad dup-host "[host a]" "[host a]"
bad dup-link "[host a]" "[host b]" "[link l]" "[link l]"
bad undefined "[host a]" "[link l]" "a = a" "b = ghost"
bad unreachable "[host a]" "route = 198.18.3.0/24 via 198.18.7.7"
bad bad-addr "[host a]" "[host b]" "[link l]" "a = a" "b = b" "b.addr = 198.18.0.999/24"

expect_refusal "unknown key" 2 "unknown-key.topo:2: unknown key 'colour' in \\[host a\\]$" \
	"$TOPO" up "$TMP/unknown-key.topo" --prefix "$P"
expect_refusal "address outside the ranges" 2 "outside.topo:6: address '10.0.0.1/24' is outside 198.18.0.0/15 and 2001:2::/48$" \
	"$TOPO" up "$TMP/outside.topo" --prefix "$P"
expect_refusal "duplicate host" 2 "dup-host.topo:2: duplicate host 'a' \\(first defined at line 1\\)$" \
	"$TOPO" up "$TMP/dup-host.topo" --prefix "$P"
expect_refusal "duplicate link" 2 "dup-link.topo:4: duplicate link 'l' \\(first defined at line 3\\)$" \
	"$TOPO" up "$TMP/dup-link.topo" --prefix "$P"
expect_refusal "undefined host" 2 "undefined.topo:4: link 'l': end b is on undefined host 'ghost'$" \
	"$TOPO" up "$TMP/undefined.topo" --prefix "$P"
expect_refusal "unreachable next hop" 2 "unreachable.topo:2: route '198.18.3.0/24 via 198.18.7.7' on host 'a': next hop 198.18.7.7 is not on any of its links$" \
	"$TOPO" up "$TMP/unreachable.topo" --prefix "$P"
expect_refusal "bad address" 2 "bad-addr.topo:6: bad address '198.18.0.999/24' for b.addr: expected ADDR/LEN$" \
	"$TOPO" check "$TMP/bad-addr.topo"
expect_refusal "missing file" 2 "nope.topo: cannot open: No such file or directory$" \
	"$TOPO" up "$TMP/nope.topo" --prefix "$P"
expect_refusal "directory as file" 2 "cannot read: Is a directory$" "$TOPO" check "$TMP"
expect_nothing_left "$P" "after bad files"

expect_refusal "no command" 2 "missing command" "$TOPO"
expect_refusal "unknown command" 2 "unknown command 'upp': expected up, down, show or check$" "$TOPO" upp ras
expect_refusal "bad prefix" 2 "bad value 'a-b' for --prefix" "$TOPO" up ras --prefix a-b
expect_refusal "prefix too long" 2 "bad value 'abcdefghijklmnop' for --prefix" "$TOPO" up ras --prefix abcdefghijklmnop
expect_refusal "no file" 2 "up needs a topology FILE$" "$TOPO" up
expect_refusal "down without file or prefix" 2 "down needs a topology FILE or --prefix P$" "$TOPO" down
expect_refusal "extra argument" 2 "unexpected argument 'extra'" "$TOPO" check ras extra
expect_refusal "unknown option" 2 "unrecognized option" "$TOPO" up ras --bogus
"$TOPO" --help | grep -q "usage: tunbed-topo COMMAND" || fail "--help"
if "$TOPO" --help | grep -q fail-at-step; then fail "the test hook shows in --help"; fi

# Without root: say so, exit 1; check needs no root.
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
expect_refusal "up as non-root" 1 "up needs root .*run it with sudo$" "${nobody[@]}" "$TOPO" up ras --prefix "$P"
expect_refusal "down as non-root" 1 "down needs root" "${nobody[@]}" "$TOPO" down --prefix "$P"
expect_refusal "show as non-root" 1 "show needs root" "${nobody[@]}" "$TOPO" show ras
out=$("${nobody[@]}" "$TOPO" check ras --prefix "$P") || fail "check as non-root failed"
expect_match "check as non-root prints the plan" "$out" "ip netns add $P-client"
expect_eq "check --json step count" "$(json_get "$("$TOPO" check ras --json)" 'len(d["steps"])')" "45"

# An existing namespace: refused unless --replace.
bad pair "[host a]" "[host b]" "[link l]" "a = a" "b = b" "a.addr = 198.18.0.1/24" "b.addr = 198.18.0.2/24"
ip netns add "$P-b"
expect_refusal "existing namespace" 1 "pair.topo:2: namespace $P-b already exists: take it down first, or use --replace$" \
	"$TOPO" up "$TMP/pair.topo" --prefix "$P"
expect_eq "refusal leaves the existing one alone" "$(ip netns list | grep -c "^$P-")" "1"
"$TOPO" up "$TMP/pair.topo" --prefix "$P" --replace >/dev/null || fail "up --replace"
ip netns exec "$P-a" ping -c 1 -W 2 198.18.0.2 >/dev/null || fail "ping after --replace"
"$TOPO" down --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down --prefix"
