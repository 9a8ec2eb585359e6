#!/bin/bash
# tunbed-sample through its command line: a header then samples as JSON lines, "watch PID" on
# stdin adds a process from the next sample on, a bad line is named and ignored (a line longer
# than 63 bytes or with a NUL byte whole: no part of it is a command, and the next lines are
# read), "stop" and the end of stdin end it with a last sample and exit 0, SIGTERM likewise;
# bad options exit 2.
set -eu
set -o pipefail
SAMPLE=${1:?usage: sample_cli.sh PATH-TO-tunbed-sample}
TMP=$(mktemp -d)
SLEEPER=""
cleanup() {
	if [ -n "$SLEEPER" ]; then kill "$SLEEPER" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
failures=0
fail() { echo "[sample_cli] FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "[sample_cli] ok: $*"; }
expect() { # what command...: ok when the command succeeds
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
json() { /usr/bin/python3 -c "import json,sys; L=[json.loads(l) for l in open(sys.argv[1])]; print(eval(sys.argv[2]))" "$@"; }

sleep infinity &
SLEEPER=$!
# The commands follow each sample they wait for: the test waits for output, not for time.
coproc S { exec "$SAMPLE" --hz 50 2>"$TMP/err"; }
spid=$S_PID
exec 3<&"${S[0]}" 4>&"${S[1]}"
head -n 2 <&3 >"$TMP/out"
echo "watch $SLEEPER" >&4
echo "bogus line" >&4
# Read until a sample holds the sleeper (bounded: 500 samples = 10 s at 50 Hz).
for _ in $(seq 500); do
	IFS= read -r line <&3
	echo "$line" >>"$TMP/out"
	case $line in *"\"$SLEEPER\""*) break ;; esac
done
echo stop >&4
exec 4>&-
cat <&3 >>"$TMP/out"
wait "$spid" && status=0 || status=$?
expect "stop: exit 0" [ "$status" = 0 ]
expect "header" [ "$(json "$TMP/out" 'L[0]["sampler"], L[0]["hz"], L[0]["clock"]')" = "('tunbed-sample', 50, 'CLOCK_MONOTONIC')" ]
expect "samples in time order" [ "$(json "$TMP/out" 'all(L[i]["t"] < L[i + 1]["t"] for i in range(1, len(L) - 1))')" = True ]
expect "watch PID: from the next sample on" [ "$(json "$TMP/out" "str($SLEEPER) not in L[1]['threads'] and str($SLEEPER) in L[-1]['threads']")" = True ]
expect "the thread's name" [ "$(json "$TMP/out" "L[-1]['threads'][str($SLEEPER)][1]")" = sleep ]
expect "a bad line is named" grep -q "ignored 'bogus line' on stdin" "$TMP/err"

# A line longer than 63 bytes (and its newline) is refused whole, however long: no part of
# it is a command. A line with a NUL byte is refused, and the lines after it are read. Each
# input is whole in the pipe before the sampler reads it, in order, so its last sample (at
# the stop or the end of stdin) tells whether the sleeper was watched.
long=$(printf 'x%.0s' $(seq 63))
watched() { # NAME INPUT (printf format, one %s for the sleeper): stdout is yes or no
	# shellcheck disable=SC2059 # the input is the format
	printf "$2" "$SLEEPER" | "$SAMPLE" --hz 50 >"$TMP/$1.out" 2>"$TMP/$1.err" || echo "exit $?"
	json "$TMP/$1.out" "'yes' if str($SLEEPER) in L[-1]['threads'] else 'no'"
}
refused() { # NAME REGEX: the sampler said so once
	[ "$(grep -cE "$2" "$TMP/$1.err")" = 1 ]
}
expect "a long line ending in stop: no stop" [ "$(watched stop "${long}stop\nwatch %s\nstop\n")" = yes ]
expect "a long line: refused in one line" refused stop "ignored a line longer than 63 bytes on stdin"
expect "a long line ending in watch: no watch" [ "$(watched watch "${long}watch %s\nstop\n")" = no ]
expect "a line of three buffers: refused once, whole" [ "$(watched three "${long}${long}${long}stop\nwatch %s\nstop\n")" = yes ]
expect "a line of three buffers: one line said" refused three "longer than 63 bytes"
expect "63 bytes: a command" [ "$(watched edge 'watch %057d\nstop\n')" = yes ]
expect "a NUL byte: the next lines are read" [ "$(watched nul 'bad\0line\nwatch %s\nstop\n')" = yes ]
expect "a NUL byte: the line refused" refused nul "ignored a line with a NUL byte on stdin"
watched esc 'bogus\033[2J%s\nstop\n' >/dev/null
expect "a control byte is named as '?'" refused esc "ignored 'bogus\\?\\[2J[0-9]+' on stdin"
expect "a NUL byte at the start: the next lines are read" [ "$(watched nul0 '\0stop\nwatch %s\nstop\n')" = yes ]

# The end of stdin stops it too; SIGTERM as well.
"$SAMPLE" </dev/null >"$TMP/eof" && status=0 || status=$?
expect "end of stdin: exit 0" [ "$status" = 0 ]
expect "end of stdin: header and two samples" [ "$(wc -l <"$TMP/eof")" -ge 3 ]
coproc T { exec "$SAMPLE" --hz 50; }
tpid=$T_PID
exec 5<&"${T[0]}" 6>&"${T[1]}"
head -n 2 <&5 >/dev/null
kill -TERM "$tpid"
cat <&5 >/dev/null
wait "$tpid" && status=0 || status=$?
expect "SIGTERM: exit 0" [ "$status" = 0 ]

for bad in "--hz 0" "--hz 101" "--hz x" "--pid 0" "--pid abc" "extra" "--nope"; do
	# shellcheck disable=SC2086 # the options are meant to split
	out=$("$SAMPLE" $bad </dev/null 2>&1 >/dev/null) && status=0 || status=$?
	if [ "$status" = 2 ] && [ "$(echo "$out" | wc -l)" = 1 ]; then ok "$bad -> 2: $out"; else fail "$bad: status $status, '$out'"; fi
done
expect "--help" grep -q "usage: tunbed-sample" <<<"$("$SAMPLE" --help)"

[ "$failures" = 0 ] || { echo "[sample_cli] FAILED ($failures)" >&2; exit 1; }
echo "[sample_cli] PASSED"
