#!/bin/bash
# The README's two commands on a fresh Debian 12: a minimal root made with mmdebstrap
# (minbase plus git: bash and apt, no python3, no compiler, no library), this checkout cloned
# into it, and in it, as root in a chroot of its own (private mount and PID namespaces), the
# main job and the test command as a new user types them. Each must install what it needs
# from Debian's mirror and build first; the main job must write its report with every plot
# and install its own set of packages alone (none of the tests' or other jobs' tools), the
# test command must install the rest and pass; no service they installed may be enabled at
# boot, and nothing may be left running. It prints what each command installed: packages,
# download and disk.
#
#  host: mmdebstrap -> WORK/root --chroot--> scripts/tunbed ras ... && scripts/test -L "unit|browser" -E SLOW
#
# The main job's matrix is cut to one short point (same entry point, bootstrap and report as
# the full run) and the test command to the unit tests (same install and both builds) but the
# slowest three, pure Python that the suite runs anyway and that need nothing the others do
# not (SLOW: about 100 s of test time): the check is about the first run on a fresh machine,
# not the measurements. It needs root, the
# network to Debian's mirror and about 3 GB in /var/tmp.
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
# dpkg in the root writes without syncing every file (force-unsafe-io): that changes how fast
# the packages go in, not which, nor how they work (the root is thrown away after the test, a
# crash of the machine loses it anyway). Syncs cost about 6 ms each on the CI machine's disk,
# and the two commands install some 430 packages.
echo force-unsafe-io >"$ROOT/etc/dpkg/dpkg.cfg.d/tunbed-test-unsafe-io"
for t in python3 cc cmake pkg-config; do
	if chroot "$ROOT" /bin/sh -c "command -v $t" >/dev/null; then die "the fresh root already has $t"; fi
done

# What the root holds, read from outside: its installed packages and their Installed-Size
# (KiB), and the packages apt downloaded into its cache (it keeps them).
# shellcheck disable=SC2016 # dpkg-query's fields, not the shell's
packages() { chroot "$ROOT" dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" { print $2 }'; }
installed_kib() {
	# shellcheck disable=SC2016
	chroot "$ROOT" dpkg-query -W -f='${db:Status-Abbrev} ${Installed-Size}\n' |
		awk '$1 == "ii" { s += $2 } END { print s + 0 }'
}
downloaded() { find "$ROOT/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
# shellcheck disable=SC2016
has() { chroot "$ROOT" dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^ii'; }
# since N KIB BYTES: what was installed since a count of N packages, KIB installed and BYTES
# downloaded, in words.
since() {
	awk -v n="$(($(packages | wc -l) - $1))" -v kib="$(($(installed_kib) - $2))" \
		-v b="$(($(downloaded) - $3))" \
		'BEGIN { printf "%d packages, %.0f MB downloaded, %.0f MB on disk", n, b / 1e6, kib * 1024 / 1e6 }'
}
# The services of the gateway pair, the gateways and the hosts mode, which tunbed starts in
# its own namespaces: none of the system's may start at boot.
SERVICES="frr openvswitch-switch openvpn fastd ssh"
# What the main job does not use: the test command's and the other jobs' (issue 33).
NOT_MAIN="qemu-system-x86 chromium frr openvswitch-switch openssh-server tshark ansible-core
	clang mmdebstrap wireguard-go openvpn fastd iperf3"
# boot_links: what starts at boot, one a line (systemd's wants, System V's multi-user S links).
boot_links() {
	find "$ROOT/etc/systemd/system" -mindepth 2 -maxdepth 2 -type l -path '*.wants/*' 2>/dev/null || true
	find "$ROOT"/etc/rc[2-5].d -maxdepth 1 -type l -name 'S*' 2>/dev/null || true
}
n0=$(packages | wc -l) kib0=$(installed_kib) dl0=$(downloaded)

# What a clone of this working tree would hold (uncommitted edits included, so that the
# check tests the code at hand).
git clone --quiet --no-hardlinks "$SRC" "$ROOT/root/tunbed"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
	tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$ROOT/root/tunbed" -xf -
(cd "$SRC" && git ls-files -z --deleted) | (cd "$ROOT/root/tunbed" && xargs -0r rm -f --)
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# Run after each command in its PID namespace: nothing it started may still run (its first
# process, 1, is the shell that ran the command) and no network namespace may be left.
cat >"$ROOT/root/nothing_left" <<'EOF'
left=""
for p in /proc/[0-9]*; do
	n=${p#/proc/}
	if [ "$n" != 1 ] && [ "$n" != $$ ] && read -r c <"$p/comm" 2>/dev/null; then left+=" $n ($c)"; fi
done
[ -z "$left" ] || { echo "processes left running:$left" >&2; exit 9; }
ns=$(ls -A /run/netns 2>/dev/null || true)
[ -z "$ns" ] || { echo "namespaces left behind: $ns" >&2; exit 9; }
EOF

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
start=$SECONDS
in_root "scripts/tunbed ras --sessions 1 --workers 1 --repeats 1 --time 2 --warmup 1 --prefix $prefix
	bash /root/nothing_left" >"$WORK/ras.out" 2>"$WORK/ras.err" ||
	die "scripts/tunbed ras failed: $(tail -5 "$WORK/ras.err" | tr '\n' ' ')"
said=$(grep -m1 "^bootstrap: installing for ras\(,[a-z-]*\)*: .*python3-matplotlib.* ([0-9]* packages*, .* to download, .* on disk)$" \
	"$WORK/ras.err") || die "the main job did not install python3-matplotlib itself, saying how much: $(grep bootstrap "$WORK/ras.err" | tr '\n' ' ')"
reckoned=${said##*(}
for p in $NOT_MAIN; do
	if has "$p"; then die "the main job installed $p, which it does not use"; fi
done
for p in $("$SRC/scripts/bootstrap" --list --for ras); do
	has "$p" || die "the main job did not install $p (scripts/bootstrap's ras set)"
done
log "the main job installed $(since "$n0" "$kib0" "$dl0") in $((SECONDS - start)) s; bootstrap said: ${reckoned%)}"
n1=$(packages | wc -l) kib1=$(installed_kib) dl1=$(downloaded)
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
# The main job's emulated cores: 15% a worker, or off with the note that says why.
m = s["meta"]
cores = [n for n in m["notes"] if n.startswith("emulated cores off")]
assert (m["gateway_cpu"], cores) == (15, []) or (m["gateway_cpu"] is None and cores), (m["gateway_cpu"], m["notes"])
report = open(os.path.join(d, "report.md")).read()
plots = [l.split("](")[1].rstrip(")") for l in report.splitlines() if l.startswith("![")]
assert plots, "no plot in report.md"
for p in plots:
    for f in (p, p[:-4] + ".png"):
        assert os.path.getsize(os.path.join(d, f)) > 1000, f"{f} is empty"
print(f"[readme_commands] ok: summary with {len(rates)} point(s), {len(plots)} plots drawn, "
      f"emulated cores: {cores[0] if cores else str(m['gateway_cpu']) + '% a worker'}")
PY

SLOW='unit/test_(records_fuzz|inventory|trust)$'
log "scripts/test -L unit|browser -E $SLOW"
start=$SECONDS
if ! in_root "scripts/test -L 'unit|browser' -E '$SLOW'; bash /root/nothing_left" >"$WORK/test.out" 2>&1; then
	# What the failing tests said, for the log: ctest prints a test's output after its line;
	# the last 40 lines of each, Python's ResourceWarnings (and the line they quote) left out.
	awk 'function dump(  i) { for (i = (n > 40 ? n - 40 : 0); i < n; i++) print line[i]; n = 0 }
		/ResourceWarning/ { skip = 1; next }
		skip && /^ / { skip = 0; next }
		{ skip = 0 }
		/Test +#[0-9]+: |^[0-9]+% tests passed/ { dump(); keep = /\*\*\*(Failed|Timeout)/ }
		keep { line[n++] = $0 }
		END { dump() }' "$WORK/test.out" >&2
	die "scripts/test failed: $(tail -8 "$WORK/test.out" | tr '\n' ' ')"
fi
summary=$(grep -E "tests passed" "$WORK/test.out" || true)
[[ "$summary" =~ ^100%\ tests\ passed ]] || die "ctest summary: '$summary'"
log "ok: $summary"
for p in $NOT_MAIN; do
	has "$p" || die "the test command did not install $p"
done
log "the test command installed $(since "$n1" "$kib1" "$dl1") more in $((SECONDS - start)) s"
for s in $SERVICES; do
	[ -e "$ROOT/etc/init.d/$s" ] || [ -e "$ROOT/lib/systemd/system/$s.service" ] ||
		die "no service $s installed: its check below would prove nothing"
done
on=$(boot_links | grep -E "/(S[0-9][0-9])?($(tr ' ' '|' <<<"$SERVICES"))(\.service)?$" || true)
[ -z "$on" ] || die "enabled at boot: $(tr '\n' ' ' <<<"${on//"$ROOT"/}")"
log "ok: none of $SERVICES enabled at boot"
