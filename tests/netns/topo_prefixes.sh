#!/bin/bash
# Two prefixes up at once do not collide; down of one leaves the other working; down
# --prefix removes leftovers of a crashed run and nothing of a similar prefix.
#
#  A-client --lan-a-- A-gwa ==transit== A-gwb --lan-b-- A-server     (ras, prefix A)
#  B-client --lan-a-- B-gwa ==transit== B-gwb --lan-b-- B-server     (ras, prefix B)
#  C-client --wire-- C-server                                         (direct, prefix C)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix A tbpa
new_prefix B tbpb
new_prefix C tbpc

"$TOPO" up ras --prefix "$A" >/dev/null
"$TOPO" up ras --prefix "$B" >/dev/null
"$TOPO" up direct --prefix "$C" >/dev/null
for p in "$A" "$B"; do
	ip netns exec "$p-client" ping -c 2 -i 0.2 -W 2 198.18.3.2 >/dev/null || fail "ping in $p"
done
ip netns exec "$C-client" ping -c 1 -W 2 198.18.1.2 >/dev/null || fail "direct ping"
ip netns exec "$C-client" ping -6 -c 1 -W 2 2001:2:0:1::2 >/dev/null || fail "direct ping6"

"$TOPO" down ras --prefix "$A" >/dev/null
expect_nothing_left "$A" "after down of A"
ip netns exec "$B-client" ping -c 2 -i 0.2 -W 2 198.18.3.2 >/dev/null || fail "B stopped working after down of A"

# Leftovers of a crash: a namespace up never finished, and a file whose mount is gone.
ip netns add "$B-stray"
touch "/run/netns/$B-ghost"
# A prefix that merely starts like B must survive down --prefix B.
ip netns add "${B}x-keep"
PREFIXES+=("${B}x")
out=$("$TOPO" down --prefix "$B")
expect_match "down --prefix lists what it removed" "$out" "removed 6 namespaces:"
expect_nothing_left "$B" "after down --prefix"
ip netns list | grep -q "^${B}x-keep" || fail "down --prefix $B removed ${B}x-keep"
ip netns del "${B}x-keep"

"$TOPO" down direct --prefix "$C" >/dev/null
expect_nothing_left "$C" "after down of C"
expect_eq "down --prefix with nothing there" "$("$TOPO" down --prefix "$C")" "nothing to remove for $C"
