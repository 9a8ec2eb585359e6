#!/bin/bash
# A test guest: a qemu machine with Debian's kernel (tests/guest/build.sh), started by a
# namespace test on top of lib.sh, its NICs TAP devices in the test's namespaces. Source it
# after lib.sh (or gregw_lib.sh) and the test's init; then:
#
#   guest_start VMNS SETUP NS:IFNAME:MAC...   boot, wait for the guest's ready line (with
#                                             GUEST_PROGRAMS in /guest/bin)
#   guest_sh 'CMD'                            run CMD in the guest: its output, its status
#   guest_stop                                poweroff, wait for qemu's exit, remove the TAPs
#
# The guest runs SETUP (a file, sourced by bash) at boot, after naming its NICs: guest_nic MAC
# NAME in SETUP renames the NIC with that MAC. qemu runs in VMNS (a namespace of the test's
# prefix) with one TAP device per NIC, made there and moved, once qemu holds it, to NS as
# IFNAME. Its console (ttyS0) goes to $GUEST_DIR/console.log, kept as build/guest/logs/TEST.log
# and shown on a failure; commands go over ttyS1. TCG only (-m 256, -smp 1): correctness,
# never a timing. Every wait is bounded; qemu is stopped by its PID, and guest_cleanup (in the
# test's EXIT trap) stops one still running and removes its TAP devices.
# shellcheck disable=SC2034 # variables are used by the scripts that source this file

GUEST_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GUEST_CACHE=${GUEST_CACHE:-$TUNBED_SRC/build/guest}
GUEST_PID=""
GUEST_DIR=""
GUEST_TAPS=()
GUEST_TAPS_MADE=()
GUEST_W=""
GUEST_READER=""
# Programs of this machine the guest gets too (guest_start), as /guest/bin/NAME, with the
# libraries each links at their own paths: a test's own, built here (gregw).
GUEST_PROGRAMS=()
# Seconds a guest command may take (TCG is slow, and a busy box slower still).
GUEST_CMD_TIMEOUT=${GUEST_CMD_TIMEOUT:-60}

guest_build() {
	command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (scripts/bootstrap installs qemu-system-x86)"
	"$GUEST_SRC/build.sh" "$GUEST_CACHE" >/dev/null || die "the guest's kernel and initramfs did not build"
}

guest_alive() { [ -n "$GUEST_PID" ] && kill -0 "$GUEST_PID" 2>/dev/null; }

# guest_console [N]: the console's last N lines (default 40), for a failure.
guest_console() {
	[ -n "$GUEST_DIR" ] && [ -f "$GUEST_DIR/console.log" ] || return 0
	echo "--- guest console (last ${1:-40} lines of $GUEST_DIR/console.log)" >&2
	tail -n "${1:-40}" "$GUEST_DIR/console.log" | tr -d '\r' >&2
	echo "---" >&2
}

guest_die() {
	guest_console
	die "$@"
}

guest_start() { # vmns setup ns:ifname:mac...
	local vmns=$1 setup=$2 nic ns ifname mac i=0 netargs=()
	shift 2
	guest_build
	GUEST_DIR="$TMP/guest"
	mkdir -p "$GUEST_DIR/extra/guest/bin"
	cp "$setup" "$GUEST_DIR/extra/guest/setup.sh"
	local prog lib
	for prog in "${GUEST_PROGRAMS[@]}"; do
		cp "$prog" "$GUEST_DIR/extra/guest/bin/" || die "cannot copy $prog into the guest"
		for lib in $(ldd "$prog" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
			mkdir -p "$GUEST_DIR/extra$(dirname "$lib")"
			cp -L "$lib" "$GUEST_DIR/extra$lib"
		done
	done
	# The test's setup in an archive of its own after the cached one: the kernel unpacks both.
	(cd "$GUEST_DIR/extra" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$GUEST_DIR/extra.cpio.gz"
	cat "$GUEST_CACHE/base.cpio.gz" "$GUEST_DIR/extra.cpio.gz" >"$GUEST_DIR/initrd"
	for nic in "$@"; do
		# NS, then IFNAME, then the MAC (which has colons of its own)
		ns=${nic%%:*}
		ifname=${nic#*:}
		mac=${ifname#*:}
		ifname=${ifname%%:*}
		ip -n "$vmns" tuntap add dev "$ifname" mode tap || die "tuntap add $ifname in $vmns"
		GUEST_TAPS+=("$vmns:$ifname:$ns")
		GUEST_TAPS_MADE+=("$vmns:$ifname:$ns")
		netargs+=(-netdev "tap,id=n$i,ifname=$ifname,script=no,downscript=no"
			-device "virtio-net-pci,netdev=n$i,mac=$mac,romfile=,csum=off,guest_csum=off")
		i=$((i + 1))
	done
	mkfifo "$GUEST_DIR/ctl.in" "$GUEST_DIR/ctl.out"
	# A real NIC hands over whole checksums: csum=off and guest_csum=off keep checksum
	# offload (and so TSO) off between guest and TAP, in both directions.
	ip netns exec "$vmns" qemu-system-x86_64 -nodefaults -no-user-config -machine pc,accel=tcg \
		-m 256 -smp 1 -display none -vga none -no-reboot \
		-kernel "$GUEST_CACHE/vmlinuz" -initrd "$GUEST_DIR/initrd" \
		-append "console=ttyS0 panic=-1 loglevel=5 mitigations=off" \
		-serial "file:$GUEST_DIR/console.log" \
		-chardev "pipe,id=ctl,path=$GUEST_DIR/ctl" -serial chardev:ctl \
		"${netargs[@]}" >"$GUEST_DIR/qemu.out" 2>&1 &
	GUEST_PID=$!
	# qemu opens both ends of each pipe read-write, so neither open here waits for it.
	exec {GUEST_W}<>"$GUEST_DIR/ctl.in"
	cat <>"$GUEST_DIR/ctl.out" >"$GUEST_DIR/ctl.log" &
	GUEST_READER=$!
	local t0=$SECONDS
	if ! poll 180 guest_ready; then
		cat "$GUEST_DIR/qemu.out" >&2
		guest_die "the guest did not say it is ready within 180 s"
	fi
	log "guest up in $((SECONDS - t0)) s (kernel $(cat "$GUEST_CACHE/kernel-version"), qemu pid $GUEST_PID)"
	local entry tap
	for entry in "${GUEST_TAPS[@]}"; do
		IFS=: read -r vmns tap ns <<<"$entry"
		ip -n "$vmns" link set "$tap" netns "$ns" || die "moving TAP $tap into $ns"
		ip -n "$ns" link set "$tap" up
	done
}

# The guest said @@READY; a qemu that exited first is a failure at once.
guest_ready() {
	guest_alive || guest_die "qemu exited before the guest was ready: $(cat "$GUEST_DIR/qemu.out")"
	grep -q '^@@READY' "$GUEST_DIR/ctl.log"
}

# guest_n: the next command's number, from a file (guest_sh runs in $(...) subshells too).
guest_n() {
	local n
	n=$(($(cat "$GUEST_DIR/n" 2>/dev/null || echo 0) + 1))
	echo "$n" >"$GUEST_DIR/n"
	echo "$n"
}

# guest_sh CMD: runs CMD (bash) in the guest; its output in GUEST_OUT, its exit status
# returned (and in GUEST_STATUS).
guest_sh() {
	local n
	n=$(guest_n)
	guest_alive || guest_die "the guest is not running (command: $1)"
	printf '%s %s\n' "$n" "$(printf '%s\n' "$1" | base64 -w 0)" >&"$GUEST_W"
	poll "$GUEST_CMD_TIMEOUT" grep -q "^@@END $n " "$GUEST_DIR/ctl.log" ||
		guest_die "the guest did not finish '$1' within $GUEST_CMD_TIMEOUT s"
	GUEST_OUT=$(awk -v n="$n" '$0 == "@@BEGIN " n { on = 1; next } on && $1 == "@@END" && $2 == n { exit } on' "$GUEST_DIR/ctl.log")
	GUEST_STATUS=$(awk -v n="$n" '$1 == "@@END" && $2 == n { print $3 }' "$GUEST_DIR/ctl.log")
	return "$GUEST_STATUS"
}

# guest_do CMD: guest_sh, its output in GUEST_OUT; a failing command is a test failure.
guest_do() {
	guest_sh "$1" || fail "guest: '$1' exited $GUEST_STATUS: $GUEST_OUT"
}

guest_stop() {
	[ -n "$GUEST_PID" ] || return 0
	local entry vmns tap ns
	if guest_alive; then
		# No reply comes: the guest powers off while it runs the command.
		printf '%s %s\n' "$(guest_n)" "$(printf 'poweroff -f\n' | base64 -w 0)" >&"$GUEST_W"
		if ! poll 60 exited "$GUEST_PID"; then
			fail "qemu (pid $GUEST_PID) did not exit within 60 s of the guest's poweroff"
			kill -KILL "$GUEST_PID" 2>/dev/null || true
		fi
	fi
	wait "$GUEST_PID" 2>/dev/null || true
	GUEST_PID=""
	[ -n "$GUEST_W" ] && exec {GUEST_W}>&-
	GUEST_W=""
	if [ -n "$GUEST_READER" ]; then
		kill "$GUEST_READER" 2>/dev/null || true
		wait "$GUEST_READER" 2>/dev/null || true
		GUEST_READER=""
	fi
	for entry in "${GUEST_TAPS[@]}"; do
		IFS=: read -r vmns tap ns <<<"$entry"
		ip -n "$ns" link del "$tap" 2>/dev/null || ip -n "$vmns" link del "$tap" 2>/dev/null || true
	done
	GUEST_TAPS=()
	if [ -f "$GUEST_DIR/console.log" ]; then
		mkdir -p "$GUEST_CACHE/logs"
		tr -d '\r' <"$GUEST_DIR/console.log" >"$GUEST_CACHE/logs/${TEST_NAME:-guest}.log"
	fi
}

# guest_left: what of the guest remains: a qemu process whose command line names this
# test's guest directory, and TAP devices it made.
guest_left() {
	local p entry vmns tap ns
	for p in /proc/[0-9]*; do
		if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q "qemu-system.*$GUEST_DIR/initrd"; then
			echo "qemu pid ${p#/proc/}"
		fi
	done
	for entry in "${GUEST_TAPS_MADE[@]}"; do
		IFS=: read -r vmns tap ns <<<"$entry"
		if ip -n "$ns" link show "$tap" >/dev/null 2>&1 || ip -n "$vmns" link show "$tap" >/dev/null 2>&1; then
			echo "TAP $tap"
		fi
	done
}

# guest_cleanup: for the EXIT trap, before lib.sh's cleanup takes the namespaces down.
guest_cleanup() {
	if [ -n "$GUEST_PID" ] && [ "${failures:-0}" -ne 0 ]; then guest_console 60; fi
	guest_stop
}
