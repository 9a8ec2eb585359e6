#!/bin/bash
# Shared by the namespace tests: names with this run's PID, cleanup on exit, assertions and
# polling. Source it; then call netns_test_init PREFIX_STEM.
# shellcheck disable=SC2034 # variables are used by the scripts that source this file

set -eu
set -o pipefail

# Debian's tools first: python3 is the interpreter scripts/bootstrap installs, started directly.
# A version manager's shim earlier on PATH (pyenv's is a shell script that runs more processes)
# took 0.6 s per start when idle and several seconds under load, which made polls miss
# their deadlines.
PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

TUNBED_BIN=${TUNBED_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bin}
TUNBED_SRC=$(cd "${TUNBED_SRC:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
TOPO="$TUNBED_BIN/tunbed-topo"
TOPOLOGIES="$TUNBED_SRC/topo/topologies"
PREFIXES=()
TMP=""
failures=0

log() { printf '[%s] %s\n' "${TEST_NAME:-test}" "$*"; }

fail() {
	printf '[%s] FAIL: %s\n' "${TEST_NAME:-test}" "$*" >&2
	failures=$((failures + 1))
}

# Stops the test at once: for failures that make the rest meaningless.
die() {
	fail "$*"
	exit 1
}

expect_eq() { # what got want
	if [ "$2" != "$3" ]; then fail "$1: got '$2', want '$3'"; else log "ok: $1 = '$3'"; fi
}

expect_match() { # what text regex
	if [[ "$2" =~ $3 ]]; then log "ok: $1"; else fail "$1: '$2' does not match /$3/"; fi
}

# Runs a command that must fail with the given exit status and print a line matching regex.
expect_refusal() { # what status regex cmd...
	local what=$1 want=$2 re=$3 out status=0
	shift 3
	out=$("$@" 2>&1) || status=$?
	if [ "$status" != "$want" ]; then
		fail "$what: exit status $status, want $want (output: $out)"
	elif ! [[ "$out" =~ $re ]]; then
		fail "$what: output '$out' does not match /$re/"
	else
		log "ok: $what -> $status: $out"
	fi
}

# Polls a command until it succeeds, for at most $1 seconds: no fixed sleeps.
poll() { # seconds cmd...
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# True once a background child of this shell has exited: bash reaps it as it ends (a later
# wait still gives its exit status), so kill -0 fails from then on.
exited() { ! kill -0 "$1" 2>/dev/null; }

# stop_bg PID SIGNAL WHAT: signals a background child and waits at most 30 s for it to exit;
# its exit status in BG_STATUS. One that outlives the 30 s is a failure, and is killed.
stop_bg() {
	local pid=$1 sig=$2 what=$3
	BG_STATUS=0
	kill "-$sig" "$pid" 2>/dev/null || true
	if ! poll 30 exited "$pid"; then
		fail "$what (pid $pid) did not exit within 30 s of SIG$sig"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" || BG_STATUS=$?
}

# wait_bg PID SECONDS WHAT: waits at most SECONDS for a background child that ends by itself
# (a capture with a packet count, say); its exit status in BG_STATUS. One still running
# then is a failure naming WHAT it was waited for, and is killed.
wait_bg() {
	local pid=$1 secs=$2 what=$3
	BG_STATUS=0
	if ! poll "$secs" exited "$pid"; then
		fail "$what: still running after $secs s"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" || BG_STATUS=$?
}

# The packets of a capture file that match a tcpdump filter; of a file tcpdump still writes
# (with -U: packet by packet), those it holds so far.
pcap_count() { # file filter
	{ tcpdump -r "$1" -n "$2" 2>/dev/null || true; } | wc -l
}
pcap_has() { # file filter n: the file holds at least n matching packets
	[ "$(pcap_count "$1" "$2")" -ge "$3" ]
}

# Everything of a prefix that could be left behind: namespaces (listed or mounted).
leftovers() { # prefix
	{ ip netns list | awk '{print $1}' | grep -E "^$1-" || true
	  grep -oE "/run/netns/$1-[^ ]*" /proc/mounts | sed 's|^/run/netns/||' || true
	  for f in /run/netns/"$1"-*; do if [ -e "$f" ]; then echo "${f#/run/netns/}"; fi; done; } | sort -u
}

expect_nothing_left() { # prefix what
	local left
	left=$(leftovers "$1")
	if [ -n "$left" ]; then fail "$2: left behind: $(echo "$left" | tr '\n' ' ')"; else log "ok: $2: nothing of $1 left"; fi
}

# tunbed report on a result directory prints what the run printed (OUT) and writes the same
# summary.json again (the runner's tests; TUNBED is the runner they run).
expect_report_rebuilds() { # dir out
	local again
	cp "$1/summary.json" "$TMP/summary.before-report.json"
	again=$("$TUNBED" report "$1" 2>"$TMP/report.err") || die "tunbed report failed: $(tail -3 "$TMP/report.err")"
	expect_eq "tunbed report: the same headline and reports" "$again" "$2"
	cmp -s "$1/summary.json" "$TMP/summary.before-report.json" || fail "tunbed report made another summary.json"
}

# cleanup [STATUS]: STATUS is the test's exit status when a trap runs other commands first.
cleanup() {
	local status=${1:-$?}
	# Background jobs of this test still running (only our own children, by PID), before
	# their namespaces go.
	local jobs_left
	jobs_left=$(jobs -p)
	for pid in $jobs_left; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $jobs_left; do
		wait "$pid" 2>/dev/null || true
	done
	for p in "${PREFIXES[@]}"; do
		"$TOPO" down --prefix "$p" >/dev/null 2>&1 || true
		for ns in $(leftovers "$p"); do ip netns del "$ns" 2>/dev/null || true; done
	done
	[ -n "$TMP" ] && rm -rf "$TMP"
	if [ "$status" -ne 0 ] || [ "$failures" -ne 0 ]; then
		echo "[${TEST_NAME:-test}] FAILED ($failures failures, status $status)" >&2
		exit 1
	fi
	echo "[${TEST_NAME:-test}] PASSED"
}

# new_prefix VAR STEM: a fresh prefix for this test, STEM plus PID, so that two runs never
# collide, stored in VAR and remembered for cleanup (so: not in a $(...) subshell).
new_prefix() {
	local -n var=$1
	var="$2$$"
	PREFIXES+=("$var")
}


netns_test_init() {
	TEST_NAME=$(basename "$0" .sh)
	[ "$(id -u)" -eq 0 ] || { echo "[$TEST_NAME] FAIL: namespace tests need root" >&2; exit 1; }
	[ -x "$TOPO" ] || { echo "[$TEST_NAME] FAIL: $TOPO not built" >&2; exit 1; }
	TMP=$(mktemp -d)
	trap cleanup EXIT
	trap 'exit 1' INT TERM
}

# JSON field extraction for assertions (python3 is a dependency of the runner anyway).
json_get() { # json python-expression-on-d
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" <<<"$1"
}
