#!/bin/bash
# scripts/bootstrap's sets (its --list, which installs and builds nothing; no root): the main
# job's set holds what it runs and none of the tests' or other jobs' tools; every gateway the
# runner knows has a set, and compare's holds each one's packages; the test set holds every
# set; bad input is refused in one line with exit status 2; the build is skipped when nothing it
# depends on changed since bootstrap's last one, and made when something did.
set -eu
set -o pipefail
SRC=${1:?usage: bootstrap.sh SOURCE_DIR}
B="$SRC/scripts/bootstrap"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "[bootstrap] FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "[bootstrap] ok: $*"; }
list() { "$B" --list "$@"; }
# holds LIST WORD: whether the list (one a line) holds the word.
holds() { grep -qxF -- "$2" <<<"$1"; }

ras=$(list)
if [ "$ras" = "$(list --for ras)" ]; then ok "the default set is ras"; else fail "the default set is not ras"; fi
for p in python3 gcc cmake pkg-config libnl-3-dev libmnl-dev liburing-dev libpcap-dev python3-matplotlib \
	iproute2 ethtool; do
	holds "$ras" "$p" || fail "the main job's set lacks $p"
done
# What the main job does not use (issue 33): the test command's and the other jobs' tools.
NOT_MAIN="qemu-system-x86 chromium frr openvswitch-switch openssh-server tshark ansible-core clang
	mmdebstrap wireguard-go openvpn fastd iperf3 g++ build-essential python3-scipy"
for p in $NOT_MAIN; do
	if holds "$ras" "$p"; then fail "the main job's set holds $p"; fi
done
ok "the main job's set: $(wc -l <<<"$ras") packages, none of the others' tools"

# Installed from the Debian package (--installed), the runner asks for a set without the build's:
# the package's programs are built.
installed=$(list --installed --for ras,failover)
for p in $(list --for build); do
	if holds "$installed" "$p"; then fail "--installed holds the build's $p"; fi
done
for p in python3-matplotlib iproute2 ethtool frr; do
	holds "$installed" "$p" || fail "--installed lacks $p"
done
ok "--installed: the sets without the build's ($(wc -l <<<"$installed") packages)"

# Every gateway of the runner (scenario.GATEWAYS, which unit/test_runner keeps equal to its
# drivers), so that the runner can ask for the sets of the gateways it runs.
gateways=$(cd "$SRC/scripts" && python3 -B -c 'from tunbedlib import scenario; print(*scenario.GATEWAYS)')
[ -n "$gateways" ] || fail "no gateways read from the runner"
compare=$(list --for compare)
for g in $gateways; do
	if ! set=$(list --for "$g" 2>&1); then
		fail "no set for the gateway $g: $set"
		continue
	fi
	for p in $set; do holds "$compare" "$p" || fail "compare's set lacks $p (the gateway $g's)"; done
done
ok "a set for each of $(wc -w <<<"$gateways") gateways, within compare's"
for g in "ovs-gre openvswitch-switch" "wireguard-go wireguard-go" "wireguard-go wireguard-tools" \
	"openvpn openvpn" "openvpn openssl" "openvpn-none openvpn" "fastd fastd" "fastd-null fastd"; do
	read -r name p <<<"$g"
	holds "$(list --for "$name")" "$p" || fail "the gateway $name's set lacks $p"
done
holds "$(list --for failover)" frr || fail "failover's set lacks frr"
for p in ansible-core openssh-client dpkg-dev help2man; do
	holds "$(list --for hosts)" "$p" || fail "the hosts mode's set lacks $p"
done

# The test command's set holds every set, and its own tools.
test=$(list --for test)
for s in ras compare failover hosts bench; do
	for p in $(list --for "$s"); do holds "$test" "$p" || fail "the test set lacks $p ($s's)"; done
done
for p in $NOT_MAIN; do
	case "$p" in g++ | build-essential | python3-scipy) continue ;; esac
	holds "$test" "$p" || fail "the test set lacks $p"
done
[ "$(sort <<<"$test" | uniq -d)" = "" ] || fail "the test set names a package twice"
[ "$(list --for ras,failover)" = "$(list --for ras --for failover)" ] ||
	fail "--for A,B differs from --for A --for B"
ok "the test set: $(wc -l <<<"$test") packages, every set's"

# refused ARGS... EXPECTED: one line on stderr, exit status 2, nothing on stdout.
refused() {
	local want=${*: -1} out err status=0
	out=$("$B" "${@:1:$#-1}" 2>"$TMP/err") || status=$?
	err=$(cat "$TMP/err")
	if [ "$status" = 2 ] && [ -z "$out" ] && [ "$(wc -l <<<"$err")" = 1 ] && [[ "$err" == "$want" ]]; then
		ok "refused: ${*:1:$#-1}"
	else
		fail "${*:1:$#-1}: status $status, stdout '$out', stderr '$err' (expected '$want')"
	fi
}
sets="bench build compare external failover fastd fastd-null gre gregw hosts openvpn openvpn-none ovs-gre python ras route test vxlan vxlan-frames vxlan-inherit wireguard-go"
refused --list --for nosuch "bootstrap: unknown set 'nosuch' (sets: $sets)"
# Before anything is installed or built, and without root.
refused --sanitize --for ras,nosuch "bootstrap: unknown set 'nosuch' (sets: $sets)"
refused --list --for ras,,failover "bootstrap: --for: an empty set name"
refused --list --for "" "bootstrap: --for needs a list of sets (see --help)"
refused --list --for "bootstrap: --for needs a list of sets (see --help)"
refused --bogus "bootstrap: unknown option '--bogus' (see --help)"
if "$B" --help | grep -q -- "--for SETS"; then ok "--help names --for"; else fail "--help does not name --for"; fi

# The build's up-to-date check, in a tree of its own whose cmake records its calls and writes
# the five programs (each holding FAKE_BYTES): nothing is compiled. python3's set is installed
# wherever this runs, so bootstrap goes straight to the build.
T="$TMP/tree"
mkdir -p "$T/scripts/__pycache__" "$T/gateway" "$T/results" "$T/fake"
cp "$B" "$SRC/scripts/build-id" "$T/scripts/"
echo 'project(x C)' >"$T/CMakeLists.txt"
echo 'int a;' >"$T/gateway/a.c"
echo 'int b;' >"$T/gateway/b.c"
cat >"$T/fake/cmake" <<'CMAKE'
#!/bin/bash
echo "cmake $*" >>"$CALLS"
if [ "$1" = --build ]; then
	[ -z "${FAKE_FAIL:-}" ] || exit 1
	mkdir -p "$2/bin"
	for p in gregw tunbed-traffic tunbed-wire tunbed-topo tunbed-sample; do echo "$p" >"$2/bin/$p"; done
fi
CMAKE
chmod +x "$T/fake/cmake"
export CALLS="$TMP/cmake-calls"
# build WANT WHAT [ARGS...]: bootstrap's build of the tree; WANT "built" (configured and built),
# "up to date" (cmake not run) or "failed".
build() {
	local want=$1 what=$2 out status=0 got
	shift 2
	: >"$CALLS"
	out=$(PATH="$T/fake:$PATH" "$T/scripts/bootstrap" --for python "$@" 2>&1) || status=$?
	if [ "$status" != 0 ]; then
		got=failed
	elif [ "$(wc -l <"$CALLS")" = 2 ] && grep -q "^bootstrap: built build[a-z-]*/bin$" <<<"$out"; then
		got=built
	elif [ ! -s "$CALLS" ] && grep -q "^bootstrap: build[a-z-]*/bin is up to date$" <<<"$out"; then
		got="up to date"
	else
		got="neither"
	fi
	if [ "$got" = "$want" ]; then ok "$what: $want"; else fail "$what: $got, want $want ($out; $(cat "$CALLS"))"; fi
}
build built "a tree never built"
build "up to date" "the same tree again"
echo x >"$T/results/run.json"
echo x >"$T/scripts/__pycache__/m.pyc"
echo x >"$T/build/bin/extra"
mkdir "$T/build-other"
build "up to date" "results, Python's caches and build directories written"
touch "$T/gateway/a.c"
build built "a source touched"
build "up to date" "after that build"
rm "$T/gateway/b.c"
build built "a source removed"
echo 'int c;' >"$T/gateway/c.c"
build built "a source added"
mv "$T/gateway/c.c" "$T/gateway/d.c"
build built "a source renamed"
echo "another build" >"$T/build/bin/gregw"
build built "a program that another build made"
build built "the sanitizer build, in a directory of its own" --sanitize
build "up to date" "the sanitizer build again" --sanitize
build "up to date" "the release build beside it"
touch "$T/gateway/a.c"
FAKE_FAIL=1 build failed "a build that fails"
build built "after a failed build"

[ "$failures" = 0 ] || { echo "[bootstrap] $failures failure(s)" >&2; exit 1; }
echo "[bootstrap] PASSED"
