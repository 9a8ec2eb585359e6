#!/bin/bash
# tunbed-sample through its command line: a header then samples as JSON lines, "watch PID" on
# stdin adds a process from the next sample on, a bad line is named and ignored, "stop" and
# the end of stdin end it with a last sample and exit 0, SIGTERM likewise; bad options exit 2.
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
