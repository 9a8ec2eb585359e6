#!/bin/bash
# The tunnels of the bed topo/topologies/tunnels.topo (docs/topology.md, "Many tunnels"):
# gregw's tunnel files for gwa and gwb with N tunnels, and a table of each tunnel's addresses.
# Tunnel i (0 to N - 1) is named tNNNNN (i in five digits), has key i + 1, and joins the
# client's site 198.18.64.0 + i, 2001:2:0:4000+i::/64 to the server's 198.18.128.0 + i,
# 2001:2:0:8000+i::/64 (i in hex). Writes nothing into the namespaces: tunbed-topo builds the
# bed, which is the same for every N.
set -eu

usage() {
	cat <<'EOF'
usage: topo/tunnels.sh N DIR [--outer 4|6] [--encap gre|gre-udp] [--seq] [--csum]

Writes, for N tunnels (1 to 16384) of the bed topo/topologies/tunnels.topo:
  DIR/gwa.tunnels  gwa's tunnel file: each tunnel to gwb, the server's site its prefixes
  DIR/gwb.tunnels  gwb's: each tunnel to gwa, the client's site its prefixes
  DIR/tunnels.tsv  a line a tunnel: name, key, the client's IPv4 and IPv6 address in its
                   site, the server's (after a first line naming the columns)
DIR must exist. --outer: the peers' family (default 4: 198.18.0.1 and 198.18.0.2; 6:
2001:2::1 and 2001:2::2). --encap, --seq, --csum: every tunnel's options (default gre,
without sequence numbers or checksums).
EOF
}

bad() {
	echo "tunnels.sh: $*" >&2
	exit 2
}

max=16384 # gateway/gw_limits.h TUNNELS_MAX, and what the bed's pools (/18, /50) hold
outer=4
encap=gre
seq=no
csum=no
args=()
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--outer | --encap)
		[ $# -ge 2 ] || bad "$1 needs a value (see --help)"
		if [ "$1" = --outer ]; then outer=$2; else encap=$2; fi
		shift 2
		;;
	--seq) seq=yes && shift ;;
	--csum) csum=yes && shift ;;
	-*) bad "unknown option '$1' (see --help)" ;;
	*) args+=("$1") && shift ;;
	esac
done
[ "${#args[@]}" -eq 2 ] || bad "expected N and DIR (see --help)"
n=${args[0]}
dir=${args[1]}
if ! [[ $n =~ ^[1-9][0-9]{0,4}$ ]] || [ "$n" -gt "$max" ]; then
	bad "bad number of tunnels '$n': expected 1 to $max"
fi
[ -d "$dir" ] || bad "no directory '$dir'"
case $outer in
4) peer_a=198.18.0.1 peer_b=198.18.0.2 ;;
6) peer_a=2001:2::1 peer_b=2001:2::2 ;;
*) bad "bad value '$outer' for --outer: expected 4 or 6" ;;
esac
case $encap in
gre | gre-udp) ;;
*) bad "bad value '$encap' for --encap: expected gre or gre-udp" ;;
esac

# Each file is written beside and renamed over, so that a reader never sees half of one.
# A site of tunnel i: 198.18.(octet + i / 256).(i % 256)/32 and 2001:2:0:(group + i)::/64.
write() { # file peer octet group
	local file=$1 peer=$2 octet=$3 group=$4 i
	{
		printf '; %s of the bed tunnels.topo, %d tunnels (topo/tunnels.sh)\n' "${file##*/}" "$n"
		for ((i = 0; i < n; i++)); do
			printf '[tunnel t%05d]\npeer = %s\nkey = %d\nprefixes = 198.18.%d.%d/32, 2001:2:0:%x::/64\n' \
				"$i" "$peer" $((i + 1)) $((octet + i / 256)) $((i % 256)) $((group + i))
			printf 'encap = %s\nseq = %s\ncsum = %s\n' "$encap" "$seq" "$csum"
		done
	} >"$file.tmp"
	mv -f "$file.tmp" "$file"
}

# Each tunnel's hosts: IPv4 the site's one address, IPv6 ::2 in its /64.
{
	printf 'name\tkey\tclient4\tclient6\tserver4\tserver6\n'
	for ((i = 0; i < n; i++)); do
		printf 't%05d\t%d\t198.18.%d.%d\t2001:2:0:%x::2\t198.18.%d.%d\t2001:2:0:%x::2\n' \
			"$i" $((i + 1)) $((64 + i / 256)) $((i % 256)) $((0x4000 + i)) \
			$((128 + i / 256)) $((i % 256)) $((0x8000 + i))
	done
} >"$dir/tunnels.tsv.tmp"
mv -f "$dir/tunnels.tsv.tmp" "$dir/tunnels.tsv"
write "$dir/gwa.tunnels" "$peer_b" 128 $((0x8000))
write "$dir/gwb.tunnels" "$peer_a" 64 $((0x4000))
