#!/bin/bash
# Helpers for the tunbed-framebench namespace tests, on top of lib.sh: a receiver (or a
# capture) waited for by what it says, never by the clock, and what the receiving namespace's
# IP stack took up.
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FB="$TUNBED_BIN/tunbed-framebench"
# The longest any wait here lasts. Not a verdict on speed: a loaded machine, even one
# thrashing for memory, only makes a wait longer. It ends a hang, well inside ctest's TIMEOUT
# (300 s), which kills the test without its cleanup.
FB_WAIT=120
recv_n=0

# True once FILE has a line matching REGEX, or PID has exited.
said_or_exited() { # pid file regex
	grep -qE "$3" "$2" 2>/dev/null || exited "$1"
}

# wait_said WHAT PID FILE REGEX ERRFILE: waits until the background child PID writes a line
# matching REGEX into FILE, its readiness; one that exits first, or is still silent after
# FB_WAIT s, stops the test with its stderr (ERRFILE).
wait_said() {
	local what=$1 pid=$2 file=$3 re=$4 err=$5 status=0
	poll "$FB_WAIT" said_or_exited "$pid" "$file" "$re" || true
	grep -qE "$re" "$file" 2>/dev/null && return 0
	if exited "$pid"; then
		wait "$pid" || status=$?
		die "$what exited (status $status) before it was ready: $(cat "$err")"
	fi
	die "$what not ready after $FB_WAIT s: $(cat "$err")"
}

# recv_start WHAT NS ARGS...: starts tunbed-framebench recv ARGS in NS and waits until it is
# ready (its programs attached); its PID in RECV_PID, its output in RECV_OUT. Each receiver
# writes a file of its own: the last one's ready line would pass for this one's, and the
# sender would race its setup (frames to the stack before the tcx drop or the XDP program).
recv_start() {
	local what=$1 ns=$2
	shift 2
	recv_n=$((recv_n + 1))
	RECV_OUT="$TMP/recv.$recv_n.out"
	RECV_ERR="$TMP/recv.$recv_n.err"
	ip netns exec "$ns" "$FB" recv "$@" >"$RECV_OUT" 2>"$RECV_ERR" &
	RECV_PID=$!
	wait_said "$what: the receiver" "$RECV_PID" "$RECV_OUT" '"ready": true' "$RECV_ERR"
}

# recv_done WHAT: waits for the receiver of recv_start, given --frames, to end by itself once
# it has taken them, every frame through its programs: veth hands frames on in the sender's
# softirq, or later in ksoftirqd's when that is deferred under load, so the sender's return
# says nothing about what is still on its way. Its exit status in BG_STATUS, its counts in
# GOT. One still waiting after FB_WAIT s is stopped, and stops the test with what it took
# (another such wait could pass ctest's TIMEOUT).
recv_done() {
	local what=$1
	BG_STATUS=0
	if poll "$FB_WAIT" exited "$RECV_PID"; then
		wait "$RECV_PID" || BG_STATUS=$?
		GOT=$(tail -n 1 "$RECV_OUT")
		return 0
	fi
	stop_bg "$RECV_PID" TERM "$what: the receiver"
	die "$what: the receiver still waited for frames after $FB_WAIT s; it took: $(tail -n 1 "$RECV_OUT")"
}

# The IPv4 packets NS's stack received (InReceives, the second Ip: line of /proc/net/snmp). In
# these tests only the test's frames can be among them: nothing in either namespace sends
# IPv4 of its own, IPv6 is off (and would count in Ip6), ARP is not IP.
# shellcheck disable=SC2016 # awk's fields, not the shell's
stack_took() { # ns
	ip netns exec "$1" awk '/^Ip:/ && $2 ~ /^[0-9]+$/ { print $4 }' /proc/net/snmp
}
