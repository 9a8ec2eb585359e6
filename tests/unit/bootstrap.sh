#!/bin/bash
# scripts/bootstrap's sets (its --list, which installs and builds nothing; no root): the main
# job's set holds what it runs and none of the tests' or other jobs' tools; every gateway the
# runner knows has a set, and compare's holds each one's packages; the test set holds every
# set; bad input is refused in one line with exit status 2.
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
sets="bench build compare external failover fastd fastd-null gre gregw hosts openvpn openvpn-none ovs-gre python ras route test vxlan vxlan-frames wireguard-go"
refused --list --for nosuch "bootstrap: unknown set 'nosuch' (sets: $sets)"
# Before anything is installed or built, and without root.
refused --sanitize --for ras,nosuch "bootstrap: unknown set 'nosuch' (sets: $sets)"
refused --list --for ras,,failover "bootstrap: --for: an empty set name"
refused --list --for "" "bootstrap: --for needs a list of sets (see --help)"
refused --list --for "bootstrap: --for needs a list of sets (see --help)"
refused --bogus "bootstrap: unknown option '--bogus' (see --help)"
if "$B" --help | grep -q -- "--for SETS"; then ok "--help names --for"; else fail "--help does not name --for"; fi

[ "$failures" = 0 ] || { echo "[bootstrap] $failures failure(s)" >&2; exit 1; }
echo "[bootstrap] PASSED"
