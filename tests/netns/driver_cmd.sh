#!/bin/bash
# The driver contract (cmd:PATH, CONTRIBUTING.md "Adding a gateway"). The example driver
# (scripts/drivers/vxlan-example.sh) behind a wrapper that records each call, named in a
# scenario file relative to it: the runner calls up, up, pids, pids, version, down, down in that
# order, each inside its gateway's namespace with the contract's environment, one state
# directory per gateway; the transfer is verified, the inner MTU read back, what up printed
# kept, the state gone after. Then drivers that fail (up exits 3 on gwb, pids names a
# tunbed- label) fail their point with what they said last, a half-done up is taken down, a
# path that is not executable is skipped with its note, the run goes on with the gateway
# that works and exits 1; nothing is left.
#
#  P-client --lan-a-- P-gwa [PATH up: tbvx0 198.19.0.1] ==transit (VXLAN)== [PATH up: tbvx0 198.19.0.2] P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbcmd
TUNBED="$TUNBED_SRC/scripts/tunbed"
EXAMPLE="$TUNBED_SRC/scripts/drivers/vxlan-example.sh"
R="$TMP/results"

# A driver that writes down each call (verb, role, environment) and lets the example do it.
recorder() { # file log [what the gwb side's up does instead]
	cat >"$1" <<-EOF
		#!/bin/sh
		{ echo "== \$1 \$TUNBED_ROLE"; env | grep '^TUNBED_' | sort
		  if [ -d "\$TUNBED_STATE" ]; then echo "state: a directory"; fi; } >>"$2"
		${3:-}
		exec "$EXAMPLE" "\$@"
	EOF
	chmod +x "$1"
}
calls() { grep '^== ' "$1" | cut -c4- | tr '\n' ',' | sed 's/,$//'; }
env_of() { # log verb role var
	awk -v call="== $2 $3" -v var="$4=" '$0 == call {on = 1; next} /^== / {on = 0}
		on && index($0, var) == 1 {print substr($0, length(var) + 1)}' "$1"
}

# 1. The example, through the recorder, from a scenario file.
mkdir "$TMP/drv"
recorder "$TMP/drv/rec.sh" "$TMP/rec.log"
printf '%s\n' "[scenario]" "name = cmd" "gateways = cmd:rec.sh" "sessions = 2" "repeats = 1" \
	"time = 1" "warmup = 0" "verify = yes" >"$TMP/drv/cmd.scenario"
out=$("$TUNBED" run "$TMP/drv/cmd.scenario" --prefix "$P" --results "$R" 2>"$TMP/run.err") || die "tunbed run failed: $(tail -3 "$TMP/run.err")"
dir=$(sed -n 's|^report: \(.*\)/report.md$|\1|p' <<<"$out")
[ -d "$dir" ] || die "no report: $out"
expect_match "measured through the contract" "$out" "^cmd:rec\.sh, 2 sessions: [0-9.]+ Gbit/s"
expect_match "every byte right" "$out" "verify: every byte of every session checked at 1 point: 0 wrong"
expect_eq "the calls, in order" "$(calls "$TMP/rec.log")" "up gwa,up gwb,pids gwa,pids gwb,version gwa,down gwb,down gwa"
for pair in "NETNS $P-gwa" "HOST $P-gwa" "HOST_CLIENT $P-client" "HOST_GWB $P-gwb" "HOST_SERVER $P-server" \
	"LOCAL 198.18.0.1" "REMOTE 198.18.0.2" "ADDR 198.19.0.1/24" "PEER_ADDR 198.19.0.2/24" \
	"ROUTES 198.18.3.0/24" "LANS 198.18.1.0/24" "TRANSIT_IFACE transit" "TRANSIT_MTU 1500" \
	"CLIENT 198.18.1.2" "SERVER 198.18.3.2" "CPUS "; do
	read -r var want <<<"$pair"
	expect_eq "up gwa: TUNBED_$var" "$(env_of "$TMP/rec.log" up gwa "TUNBED_$var")" "$want"
done
expect_eq "up gwb: TUNBED_LOCAL" "$(env_of "$TMP/rec.log" up gwb TUNBED_LOCAL)" "198.18.0.2"
expect_eq "up gwb: TUNBED_ROUTES" "$(env_of "$TMP/rec.log" up gwb TUNBED_ROUTES)" "198.18.1.0/24"
state_a=$(env_of "$TMP/rec.log" up gwa TUNBED_STATE)
expect_eq "one state directory per gateway, the same for all its calls" \
	"$(env_of "$TMP/rec.log" down gwa TUNBED_STATE) $(env_of "$TMP/rec.log" pids gwa TUNBED_STATE)" "$state_a $state_a"
[ "$state_a" != "$(env_of "$TMP/rec.log" up gwb TUNBED_STATE)" ] || fail "gwa and gwb share a state directory"
expect_eq "the state directory exists for up" "$(grep -c '^state: a directory' "$TMP/rec.log")" "7"
[ ! -e "$state_a" ] || fail "the state directory $state_a was left"
rec=$(cat "$dir/runs/cmd_rec.sh---w0-mtu0-push-s2-r1.json")
expect_eq "the inner MTU, read back" "$(json_get "$rec" '(d["gateway_info"]["dev"], d["gateway_info"]["mtu"])')" "('tbvx0', 1450)"
expect_match "version" "$(json_get "$rec" 'd["gateway_info"]["version"]')" "^Linux "
expect_eq "what up printed" "$(json_get "$rec" 'd["gateway"]["gwa"]["up"]')" "tbvx0: VXLAN 43 from 198.18.0.1 to 198.18.0.2, routes 198.18.3.0/24"
expect_nothing_left "$P" "after the run"

# 2. Drivers that fail, one that is not there, and one that works.
# shellcheck disable=SC2016 # the drivers' own lines, expanded when they run
recorder "$TMP/fail.sh" "$TMP/fail.log" \
	'if [ "$1" = up ] && [ "$TUNBED_ROLE" = gwb ]; then echo half; echo "fail.sh: no tunnel today" >&2; exit 3; fi'
# shellcheck disable=SC2016
recorder "$TMP/badpids.sh" "$TMP/badpids.log" 'if [ "$1" = pids ]; then echo "1 tunbed-fake"; exit 0; fi'
printf '#!/bin/sh\n' >"$TMP/nonexec.sh"
status=0
out=$("$TUNBED" compare --gateways "cmd:$TMP/fail.sh,cmd:$TMP/nonexec.sh,cmd:$TMP/badpids.sh,route" \
	--sessions 1 --repeats 1 --time 1 --warmup 0 --no-rr --prefix "$P" --results "$R/f" 2>"$TMP/fail.err") || status=$?
expect_eq "failed points: exit status" "$status" "1"
err=$(grep -v '^tunbed: \[' "$TMP/fail.err" | grep -v '^bootstrap')
expect_match "not executable: skipped with its note" "$err" "tunbed: cmd:$TMP/nonexec\.sh skipped: $TMP/nonexec\.sh: no such executable file"
expect_match "up failed: one line with what the driver said last" "$err" \
	"tunbed: cmd:$TMP/fail\.sh, 1 session, repeat 1 FAILED: cmd:$TMP/fail\.sh up on $P-gwb failed \(exit 3\): fail\.sh: no tunnel today"
expect_match "pids refused" "$err" "cmd:$TMP/badpids\.sh pids on $P-gwa: '1 tunbed-fake': expected PID \[LABEL\], the label not starting with tunbed-"
expect_match "the last line counts the failures" "$(tail -1 <<<"$err")" "^tunbed: 2 of 3 runs failed: their gateway did not come up"
expect_eq "the half-done up taken down" "$(calls "$TMP/fail.log")" "up gwa,up gwb,down gwb,down gwa"
expect_match "route measured all the same" "$out" "^route, 1 session: [0-9.]+ Gbit/s"
fdir=$(sed -n 's|^report: \(.*\)/report.md$|\1|p' <<<"$out")
expect_match "the headline names the failure" "$(cat "$fdir/report.md")" "cmd:$TMP/fail\.sh, 1 session: FAILED \(1 repeat\): cmd:$TMP/fail\.sh up on $P-gwb"
expect_match "the table has its row" "$(cat "$fdir/report.md")" "\| cmd:$TMP/fail\.sh \| 1 \| FAILED \|"
expect_match "the peer table too" "$(cat "$fdir/report.md")" "\| 1 \| cmd:$TMP/badpids\.sh \| - \| - \| - \| FAILED \|"
expect_eq "summary.csv: route alone" "$(tail -n +2 "$fdir/summary.csv" | cut -d, -f2)" "route"
out2=$("$TUNBED" report "$fdir" 2>/dev/null) || fail "tunbed report failed"
expect_eq "tunbed report: the same headline" "$(grep -v '^report' <<<"$out2")" "$(grep -v '^report' <<<"$out")"
expect_nothing_left "$P" "after the failures"
