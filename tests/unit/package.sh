#!/bin/bash
# The Debian package `tunbed provision` installs (scripts/package): the five programs, byte for
# byte those of the build it was made from (its version carries their build id), their man
# pages, the Open vSwitch driver, and the libraries and commands it needs declared; the runner,
# which runs from the unpacked package alone (no checkout on its paths) with the package's
# programs, its man page (rendered without a warning) and its bash completion.
set -eu
set -o pipefail
SRC=${1:?usage: package.sh SOURCE_DIR}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "[package] FAIL: $*" >&2; failures=$((failures + 1)); }
expect() { # what command...
	local what=$1
	shift
	if "$@"; then echo "[package] ok: $what"; else fail "$what"; fi
}
deb=$("$SRC/scripts/package") || { echo "[package] FAIL: scripts/package failed" >&2; exit 1; }
id=$("$SRC/scripts/build-id" "$SRC/build/bin")
expect "one package: $deb" [ -f "$deb" ]
expect "version 0.1.0+b$id.r<runner id>" grep -qxE "0\.1\.0\+b$id\.r[0-9a-f]{8}" \
	<<<"$(dpkg-deb -f "$deb" Version)"
dpkg-deb -x "$deb" "$TMP/root"
for p in gregw tunbed-traffic tunbed-wire tunbed-topo tunbed-sample; do
	expect "$p: the build's own bytes" cmp -s "$TMP/root/usr/bin/$p" "$SRC/build/bin/$p"
	expect "$p: man page" [ -s "$TMP/root/usr/share/man/man1/$p.1.gz" ]
	expect "$p: its man page names it" grep -q "^\.TH \"*$(echo "$p" | tr "[:lower:]" "[:upper:]")" <(zcat "$TMP/root/usr/share/man/man1/$p.1.gz")
done
expect "the build id of what it holds" [ "$("$SRC/scripts/build-id" "$TMP/root/usr/bin")" = "$id" ]
R=$TMP/root/usr/share/tunbed
expect "the Open vSwitch driver" [ -x "$R/scripts/drivers/ovs-gre.sh" ]
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libmnl0 liburing2 libnl-3-200 libnl-route-3-200 libpcap0.8 libseccomp2 libjansson4 libinih1 iproute2 ethtool python3; do
	expect "depends on $lib" grep -q "\b$lib\b" <<<"$depends"
done
expect "recommends python3-matplotlib" grep -q "\bpython3-matplotlib\b" <<<"$(dpkg-deb -f "$deb" Recommends)"

# The runner: usr/bin/tunbed, a link to the wrapper in usr/share/tunbed, run with nothing of the
# checkout on its paths (a clean environment, the temporary directory as its working directory).
expect "usr/bin/tunbed: the runner" [ "$(readlink -f "$TMP/root/usr/bin/tunbed")" = "$R/scripts/tunbed" ]
for f in scripts/tunbedlib/cli.py scripts/tunbedlib/kinds/matrix.py scripts/tunbedlib/drivers/gregw.py \
	scripts/tunbedlib/health.py scripts/build-id scripts/bootstrap topo/topologies/ras.topo VERSION; do
	expect "the runner's $f" [ -s "$R/$f" ]
done
expect "no path of the checkout in the runner" [ -z "$(grep -rlF "$SRC" "$R" || true)" ]
tunbed() { (cd "$TMP" && env -i PATH=/usr/bin:/bin "$TMP/root/usr/bin/tunbed" "$@"); }
expect "tunbed --version: the package's version and build" [ "$(tunbed --version)" = "tunbed 0.1.0 (build $id)" ]
expect "tunbed ras --help" grep -q "^usage: tunbed ras " <<<"$(tunbed ras --help)"
paths=$(cd "$TMP" && env -i PATH=/usr/bin:/bin PYTHONPATH="$R/scripts" /usr/bin/python3 -B -c \
	'from tunbedlib import common; print(common.INSTALLED, common.BIN, common.TOPO, common.TOPOLOGIES)')
expect "the runner's programs are the package's" \
	[ "$paths" = "True $TMP/root/usr/bin $TMP/root/usr/bin/tunbed-topo $R/topo/topologies" ]
expect "its bootstrap builds nothing and installs no compiler" \
	[ -z "$("$R/scripts/bootstrap" --installed --list --for compare | grep -xE 'gcc|cmake|make|libnl-3-dev')" ]

# Its man page, rendered by man with groff's warnings on, and its bash completion.
page=$TMP/root/usr/share/man/man1/tunbed.1.gz
expect "tunbed's man page" [ -s "$page" ]
warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >"$TMP/page.txt") || warnings="man failed: $warnings"
expect "the man page renders without a warning${warnings:+: $warnings}" [ -z "$warnings" ]
expect "the man page names tunbed ras's --sessions" grep -q -- "--sessions LIST" "$TMP/page.txt"
expect "the man page ends with the exit statuses" grep -qE "^ +130 +interrupted" <(sed -n '/^EXIT STATUS/,$p' "$TMP/page.txt")
expect "tunbed --help ends with them" grep -qE "^130 +interrupted" <<<"$(tunbed --help)"
complete() { # WORDS...: what completing the last word offers
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tunbed; echo "${COMPREPLY[*]}"' \
		- "$TMP/root/usr/share/bash-completion/completions/tunbed" "$@"
}
expect "tunbed r<TAB>: ras report run" [ "$(complete tunbed r | tr ' ' '\n' | sort | paste -sd ' ')" = "ras report run" ]
expect "tunbed ras --ses<TAB>: --sessions" [ "$(complete tunbed ras --ses)" = "--sessions" ]
[ "$failures" = 0 ] || { echo "[package] FAILED ($failures)" >&2; exit 1; }
echo "[package] PASSED"
