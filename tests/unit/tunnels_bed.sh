#!/bin/bash
# topo/tunnels.sh and the bed's tunnel files (docs/topology.md, "Many tunnels"), without root:
# the files of 10,000 tunnels read by gregw's tunnel file reader and every tunnel looked up
# both ways on both gateways (test_tunfile --bed); the most the pools hold, 16,384, with IPv6
# peers and GRE-in-UDP, sequence numbers and checksums; the table of addresses, line by line
# for three tunnels; tunnels.topo checked, its local routes planned as iproute2 makes them; bad
# arguments refused in one line each, exit status 2, nothing written.
set -eu
set -o pipefail
SRC=${1:?usage: tunnels_bed.sh SOURCE_DIR TEST_TUNFILE TUNBED_TOPO}
TUNFILE=${2:?}
TOPO=${3:?}
GEN="$SRC/topo/tunnels.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "[tunnels_bed] FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "[tunnels_bed] ok: $*"; }
expect_eq() { # what got want
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi
}

"$GEN" 10000 "$TMP" || fail "10,000 tunnels: exit status $?"
"$TUNFILE" --bed "$TMP" 10000 || fail "10,000 tunnels: the files' lookups"
expect_eq "the table: a line a tunnel and one of names" "$(wc -l <"$TMP/tunnels.tsv")" 10001
expect_eq "the table's names" "$(sed -n 1p "$TMP/tunnels.tsv")" \
	"$(printf 'name\tkey\tclient4\tclient6\tserver4\tserver6')"
expect_eq "tunnel 0's addresses" "$(sed -n 2p "$TMP/tunnels.tsv")" \
	"$(printf 't00000\t1\t198.18.64.0\t2001:2:0:4000::2\t198.18.128.0\t2001:2:0:8000::2')"
expect_eq "tunnel 300's addresses" "$(sed -n 302p "$TMP/tunnels.tsv")" \
	"$(printf 't00300\t301\t198.18.65.44\t2001:2:0:412c::2\t198.18.129.44\t2001:2:0:812c::2')"
expect_eq "tunnel 9,999's addresses" "$(sed -n 10001p "$TMP/tunnels.tsv")" \
	"$(printf 't09999\t10000\t198.18.103.15\t2001:2:0:670f::2\t198.18.167.15\t2001:2:0:a70f::2')"
expect_eq "gwa's tunnels go to gwb" "$(grep -c '^peer = 198.18.0.2$' "$TMP/gwa.tunnels")" 10000
expect_eq "gwb's to gwa" "$(grep -c '^peer = 198.18.0.1$' "$TMP/gwb.tunnels")" 10000
expect_eq "no file half written is left" "$(ls "$TMP")" "$(printf 'gwa.tunnels\ngwb.tunnels\ntunnels.tsv')"

"$GEN" 16384 "$TMP" --outer 6 --encap gre-udp --seq --csum || fail "16,384 tunnels: exit status $?"
"$TUNFILE" --bed "$TMP" 16384 || fail "16,384 tunnels, IPv6 peers: the files' lookups"
expect_eq "IPv6 peers" "$(grep -c '^peer = 2001:2::2$' "$TMP/gwa.tunnels")" 16384
expect_eq "every option" "$(grep -cE '^(encap = gre-udp|seq = yes|csum = yes)$' "$TMP/gwb.tunnels")" \
	$((3 * 16384))
expect_eq "the last site of the pools" "$(tail -1 "$TMP/tunnels.tsv")" \
	"$(printf 't16383\t16384\t198.18.127.255\t2001:2:0:7fff::2\t198.18.191.255\t2001:2:0:bfff::2')"

# The bed itself: checked without root, the pools' local routes as iproute2 makes them.
plan=$("$TOPO" check tunnels --prefix tbt) || fail "tunbed-topo check tunnels: exit status $?"
for want in "ip -n tbt-client route add local 198.18.64.0/18 dev lo" \
	"ip -n tbt-server route add local 2001:2:0:8000::/50 dev lo" \
	"ip -n tbt-gwa route add 198.18.128.0/18 via 198.18.0.2" \
	"ip netns exec tbt-client sysctl -w net.ipv6.ip_nonlocal_bind=1"; do
	if grep -qxF "$want" <<<"$plan"; then ok "planned: $want"; else fail "not planned: $want"; fi
done

# Bad arguments: one line naming the fault, exit 2, nothing written.
mkdir "$TMP/empty"
refuse() { # what want-line args...
	local what=$1 want=$2 out status=0
	shift 2
	out=$("$GEN" "$@" 2>&1) || status=$?
	if [ "$status" = 2 ] && [ "$out" = "$want" ] && [ -z "$(ls "$TMP/empty")" ]; then
		ok "refused: $what"
	else
		fail "$what: exit status $status, output '$out' (want 2, '$want')"
	fi
}
refuse "no tunnels" "tunnels.sh: bad number of tunnels '0': expected 1 to 16384" 0 "$TMP/empty"
refuse "more than the pools hold" "tunnels.sh: bad number of tunnels '16385': expected 1 to 16384" \
	16385 "$TMP/empty"
refuse "a leading zero" "tunnels.sh: bad number of tunnels '010': expected 1 to 16384" 010 "$TMP/empty"
refuse "not a number" "tunnels.sh: bad number of tunnels 'ten': expected 1 to 16384" ten "$TMP/empty"
refuse "no such directory" "tunnels.sh: no directory '$TMP/none'" 10 "$TMP/none"
refuse "a bad family" "tunnels.sh: bad value '5' for --outer: expected 4 or 6" 10 "$TMP/empty" --outer 5
refuse "a bad encapsulation" "tunnels.sh: bad value 'udp' for --encap: expected gre or gre-udp" \
	10 "$TMP/empty" --encap udp
refuse "an option without its value" "tunnels.sh: --encap needs a value (see --help)" 10 "$TMP/empty" --encap
refuse "an unknown option" "tunnels.sh: unknown option '--keys' (see --help)" 10 "$TMP/empty" --keys
refuse "no directory given" "tunnels.sh: expected N and DIR (see --help)" 10

if [ "$failures" -ne 0 ]; then
	echo "[tunnels_bed] FAILED ($failures failures)" >&2
	exit 1
fi
echo "[tunnels_bed] PASSED"
