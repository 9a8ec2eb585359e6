#!/bin/bash
# The Debian package `tunbed provision` installs (scripts/package): the five programs, byte for
# byte those of the build it was made from (its version carries their build id), their man
# pages, the Open vSwitch driver, and the libraries and commands it needs declared.
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
expect "version 0.1.0+b$id" [ "$(dpkg-deb -f "$deb" Version)" = "0.1.0+b$id" ]
dpkg-deb -x "$deb" "$TMP/root"
for p in gregw tunbed-traffic tunbed-wire tunbed-topo tunbed-sample; do
	expect "$p: the build's own bytes" cmp -s "$TMP/root/usr/bin/$p" "$SRC/build/bin/$p"
	expect "$p: man page" [ -s "$TMP/root/usr/share/man/man1/$p.1.gz" ]
	expect "$p: its man page names it" grep -q "^\.TH \"*$(echo "$p" | tr "[:lower:]" "[:upper:]")" <(zcat "$TMP/root/usr/share/man/man1/$p.1.gz")
done
expect "the build id of what it holds" [ "$("$SRC/scripts/build-id" "$TMP/root/usr/bin")" = "$id" ]
expect "the Open vSwitch driver" [ -x "$TMP/root/usr/lib/tunbed/ovs-gre.sh" ]
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libmnl0 libnl-3-200 libnl-route-3-200 libpcap0.8 libseccomp2 libjansson4 libinih1 iproute2 ethtool; do
	expect "depends on $lib" grep -q "\b$lib\b" <<<"$depends"
done
[ "$failures" = 0 ] || { echo "[package] FAILED ($failures)" >&2; exit 1; }
echo "[package] PASSED"
