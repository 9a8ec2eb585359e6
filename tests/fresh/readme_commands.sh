#!/bin/bash
# The README's two commands on a fresh Debian 12: a minimal root made with mmdebstrap
# (minbase plus git: bash and apt, no python3, no compiler, no library), this checkout cloned
# into it, and in it, as root in a chroot of its own (private mount and PID namespaces), the
# main job and the test command as a new user types them. Each must install what it needs
# from Debian's mirror and build first; the main job must write its report with every plot,
# the test command must pass.
#
#  host: mmdebstrap -> WORK/root --chroot--> scripts/tunbed ras ... && scripts/test -L "unit|browser"
#
# The main job's matrix is cut to one short point (same entry point, bootstrap and report as
# the full run) and the test command to the unit tests (same install and both builds): the
# check is about the first run on a fresh machine, not the measurements. It needs root, the
# network to Debian's mirror and about 2 GB in /var/tmp.
set -eu
set -o pipefail
PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"
TEST_NAME=readme_commands
SRC=$(cd "${TUNBED_SRC:-$(dirname "$0")/../..}" && pwd)
MIRROR=${TUNBED_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${TUNBED_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}

log() { printf '[%s] %s\n' "$TEST_NAME" "$*"; }
die() {
	printf '[%s] FAIL: %s\n' "$TEST_NAME" "$*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (a chroot with its own namespaces)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (scripts/bootstrap installs it)"

WORK=$(mktemp -d /var/tmp/tbfresh.XXXXXX)
ROOT="$WORK/root"
CHROOT_PID=""
cleanup() {
	local status=$?
	if [ -n "$CHROOT_PID" ]; then
		kill "$CHROOT_PID" 2>/dev/null || true
		wait "$CHROOT_PID" 2>/dev/null || true
	fi
	# The chroot's mounts live in its own mount namespace, gone with its last process; never
	# remove a tree that still has something mounted inside.
	if grep -q " $WORK/" /proc/mounts; then
		echo "[$TEST_NAME] FAIL: mounts left under $WORK, not removed" >&2
		exit 1
	fi
	rm -rf "$WORK"
	[ "$status" -eq 0 ] && echo "[$TEST_NAME] PASSED" || echo "[$TEST_NAME] FAILED (status $status)" >&2
	exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

log "making a minimal Debian 12 root with mmdebstrap ($MIRROR)"
mmdebstrap --quiet --variant=minbase --include=git bookworm "$ROOT" \
	"deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
	"deb $SECURITY bookworm-security main" >"$WORK/mmdebstrap.log" 2>&1 ||
	die "mmdebstrap failed: $(tail -3 "$WORK/mmdebstrap.log" | tr '\n' ' ')"
for t in python3 cc cmake pkg-config; do
	if chroot "$ROOT" /bin/sh -c "command -v $t" >/dev/null; then die "the fresh root already has $t"; fi
done

# What a clone of this working tree would hold (uncommitted edits included, so that the
# check tests the code at hand).
git clone --quiet --no-hardlinks "$SRC" "$ROOT/root/tunbed"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
	tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$ROOT/root/tunbed" -xf -
(cd "$SRC" && git ls-files -z --deleted) | (cd "$ROOT/root/tunbed" && xargs -0r rm -f --)
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"

# in_root COMMAND: runs COMMAND as root in the fresh root, with a login's bare environment,
# in mount and PID namespaces of its own (everything it starts ends with it).
in_root() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount --pid --fork --kill-child=SIGKILL --propagation private \
		/bin/bash -c 'set -e; r=$1
			mount --bind "$r" "$r"
			mount -t proc proc "$r/proc"; mount -t sysfs sysfs "$r/sys"
			mount --rbind /dev "$r/dev"; mount -t tmpfs tmpfs "$r/run"
			exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
				TERM=dumb /bin/bash -ec "cd /root/tunbed; $2"' _ "$ROOT" "$1" &
	CHROOT_PID=$!
	local status=0
	wait "$CHROOT_PID" || status=$?
	CHROOT_PID=""
	return "$status"
}

prefix="tbfr$$"
log "scripts/tunbed ras (one point: 1 session, 1 worker, 2 s)"
in_root "scripts/tunbed ras --sessions 1 --workers 1 --repeats 1 --time 2 --warmup 1 --prefix $prefix
	left=\$(ls -A /run/netns 2>/dev/null || true)
	[ -z \"\$left\" ] || { echo \"namespaces left behind: \$left\" >&2; exit 9; }" \
	>"$WORK/ras.out" 2>"$WORK/ras.err" ||
	die "scripts/tunbed ras failed: $(tail -5 "$WORK/ras.err" | tr '\n' ' ')"
grep -q "^bootstrap: installing .*python3-matplotlib" "$WORK/ras.err" ||
	die "the main job did not install python3-matplotlib itself: $(grep bootstrap "$WORK/ras.err" | tr '\n' ' ')"
report=$(sed -n 's/^report: \(.*\/report\.md\)$/\1/p' "$WORK/ras.out")
[ -n "$report" ] || die "the main job printed no report path: $(cat "$WORK/ras.out")"
dir="$ROOT$(dirname "$report")"
[ -s "$dir/report.md" ] || die "no report.md in $dir"
[ -s "$dir/report.html" ] || die "no report.html in $dir"
log "ok: $(grep -m1 'session' "$WORK/ras.out")"
python3 - "$dir" <<'PY' || die "the report is incomplete"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "summary.json")))
rates = [v["bits_per_second"]["median"] for v in s["summary"].values() if v["bits_per_second"]]
assert rates and all(r > 0 for r in rates), f"throughput {rates}"
report = open(os.path.join(d, "report.md")).read()
plots = [l.split("](")[1].rstrip(")") for l in report.splitlines() if l.startswith("![")]
assert plots, "no plot in report.md"
for p in plots:
    for f in (p, p[:-4] + ".png"):
        assert os.path.getsize(os.path.join(d, f)) > 1000, f"{f} is empty"
print(f"[readme_commands] ok: summary with {len(rates)} point(s), {len(plots)} plots drawn")
PY

log "scripts/test -L unit|browser"
if ! in_root "scripts/test -L 'unit|browser'" >"$WORK/test.out" 2>&1; then
	# What the failing tests said, for the log: ctest prints their output after their line.
	grep -A30 '\*\*\*Failed\|\*\*\*Timeout' "$WORK/test.out" | head -80 >&2 || tail -30 "$WORK/test.out" >&2
	die "scripts/test failed: $(tail -8 "$WORK/test.out" | tr '\n' ' ')"
fi
summary=$(grep -E "tests passed" "$WORK/test.out" || true)
[[ "$summary" =~ ^100%\ tests\ passed ]] || die "ctest summary: '$summary'"
log "ok: $summary"
