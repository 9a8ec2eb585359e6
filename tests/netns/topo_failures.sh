#!/bin/bash
# A failure halfway through up undoes everything up made: at every single step of the RAS
# plan (forced with a test-only option), on a real kernel refusal, and on a bad file.
#
#  P-client --lan-a-- P-gwa ==transit== P-gwb --lan-b-- P-server   (never fully up here)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbfail

steps=$(json_get "$("$TOPO" check ras --json)" 'len(d["steps"])')
[ "$steps" -gt 40 ] || die "unexpected step count $steps"
for n in $(seq 1 "$steps"); do
	status=0
	out=$("$TOPO" up ras --prefix "$P" --fail-at-step "$n" 2>&1) || status=$?
	if [ "$status" != 1 ] || ! [[ "$out" =~ step\ $n\ failed\ .*Input/output\ error\;\ undone ]]; then
		fail "step $n: status $status, output: $out"
	fi
	left=$(leftovers "$P")
	[ -z "$left" ] || fail "step $n: left behind: $left"
done
log "ok: a failure at each of the $steps steps left nothing behind"

# A real refusal from the kernel late in the plan: a sysctl that does not exist.
sed '/^\[host server\]/a sysctl.net.ipv4.no_such_setting = 1' "$TOPOLOGIES/ras.topo" >"$TMP/late.topo"
expect_refusal "kernel refusal" 1 "late.topo:[0-9]+: step [0-9]+ failed \\(ip netns exec $P-server sysctl -w net.ipv4.no_such_setting=1\\): No such file or directory; undone \\(4 namespaces removed\\)$" \
	"$TOPO" up "$TMP/late.topo" --prefix "$P"
expect_nothing_left "$P" "after a kernel refusal"

# A link name already used in the peer's namespace cannot happen from one file, but a
# namespace made by someone else between check and up can: --replace is off, so refuse.
ip netns add "$P-gwb"
expect_refusal "namespace appears" 1 "namespace $P-gwb already exists" "$TOPO" up ras --prefix "$P"
expect_eq "only the foreign namespace remains" "$(leftovers "$P")" "$P-gwb"
ip netns del "$P-gwb"
expect_nothing_left "$P" "at the end"
