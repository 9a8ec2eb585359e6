#!/bin/bash
# TUN reads through io_uring (--tun-io uring), plain GRE and GRE-in-UDP in one run: both
# gateways say so in config (tun_io uring, nothing against it), each holds one ring per worker,
# and verified tunbed-traffic transfers both ways (2 x 8 MiB, byte-exact) pass through them
# with nothing dropped; the TUN reads came back from the rings without a call each (no more
# tun_read_calls than tun_reads, where read(2) makes one call more than it reads every pass);
# SIGTERM still stops both promptly. The same transfers without offloads (no virtio header),
# and with --fq-full drop and a flow queue of 4. Then the fallback: --tun-io uring with --fair-queue off
# reads with read(2), said in one warning and in config, and carries a verified transfer; the
# default is read; a bad value is refused (exit 2) and a config file's tun-io is read.
#
#  P-client --lan-a-- P-gwa [gregw --tun-io uring] ==transit== [gregw --tun-io uring] P-gwb --lan-b-- P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
gregw_test_init
new_prefix P tbur

"$TOPO" up ras --prefix "$P" >/dev/null
tr_server "$P-server" 9400

# delta BEFORE AFTER KEY: a total's growth between two stats documents.
delta() {
	python3 -c 'import json,sys; print(json.loads(sys.argv[2])["total"][sys.argv[3]] - json.loads(sys.argv[1])["total"][sys.argv[3]])' "$1" "$2" "$3"
}

# rings NAME: the io_uring instances gregw NAME holds open.
rings() {
	local n=0 fd
	for fd in /proc/"${GW_PID[$1]}"/fd/*; do
		[ "$(readlink "$fd")" = "anon_inode:[io_uring]" ] && n=$((n + 1))
	done
	echo "$n"
}

# transfer WHAT PATTERN: 2 sessions of 8 MiB client -> server (push) or back (pull), verified.
transfer() {
	local ok='s["sent"] == s["server_received"] == 8 << 20'
	[ "$2" = pull ] && ok='s["received"] == s["server_sent"] == 8 << 20'
	tr_client "$P-client" 198.18.3.2 --sessions 2 --bytes 8m --pattern "$2" --verify --json
	expect_eq "$1: $2, 2 x 8 MiB verified, equal on both sides" \
		"$TR_STATUS $(json_get "$TR_JSON" 'd["complete"] and d["tcp"]["verify"]["mismatches"] == 0 and all('"$ok"' for s in d["tcp"]["per_session"])')" "0 True"
}

for encap in gre gre-udp; do
	GW_MODE_ARGS=(--encap "$encap")
	log "--- $encap: TUN reads through io_uring"
	gw_pair4 "$P" --workers 2 --tun-io uring
	for g in gwa gwb; do
		expect_eq "$encap: $g: config says uring, nothing against it" \
			"$(json_get "$(gw_stats "$g")" '(d["config"]["tun_io"], d["config"]["tun_io_why"])')" "('uring', None)"
		expect_eq "$encap: $g holds a ring per worker" "$(rings "$g")" 2
	done
	declare -A s0 s1
	for g in gwa gwb; do s0[$g]=$(gw_stats $g); done
	transfer "$encap" push
	transfer "$encap" pull
	for g in gwa gwb; do
		s1[$g]=$(gw_stats $g)
		reads=$(delta "${s0[$g]}" "${s1[$g]}" tun_reads)
		calls=$(delta "${s0[$g]}" "${s1[$g]}" tun_read_calls)
		log "$encap: $g: $reads TUN reads in $calls calls"
		expect_eq "$encap: $g read from TUN, no more calls than reads" "$((reads > 0 && calls <= reads))" 1
		expect_eq "$encap: $g dropped nothing" "$(json_get "${s1[$g]}" 'd["total"]["dropped"]')" 0
	done
	gw_stop gwa
	gw_stop gwb
done
GW_MODE_ARGS=(--encap gre)

# Without offloads the reads carry no virtio header; with --fq-full drop and a short flow
# queue a completed read makes room by giving up a queued one.
for opts in "--offload off" "--fq-full drop --fq-limit 4"; do
	log "--- $opts"
	read -r -a o <<<"$opts"
	gw_pair4 "$P" --workers 2 --tun-io uring "${o[@]}"
	expect_eq "$opts: config says uring" "$(json_get "$(gw_stats gwa)" 'd["config"]["tun_io"]')" uring
	transfer "$opts" push
	transfer "$opts" pull
	gw_stop gwa
	gw_stop gwb
done

log "--- --tun-io uring with --fair-queue off: read(2), said once"
gw_a4 "$P" --workers 2 --tun-io uring --fair-queue off
gw_b4 "$P" --workers 2
expect_eq "--fair-queue off: config says read, and why" \
	"$(json_get "$(gw_stats gwa)" '(d["config"]["tun_io"], d["config"]["tun_io_why"])')" "('read', '--fair-queue off')"
expect_eq "--fair-queue off: one warning" "$(grep -c 'tun-io uring needs --fair-queue on' "$TMP/gwa.err")" 1
expect_eq "--fair-queue off: no ring" "$(rings gwa)" 0
expect_eq "the default: read" \
	"$(json_get "$(gw_stats gwb)" '(d["config"]["tun_io"], d["config"]["tun_io_why"])')" "('read', '--tun-io read')"
transfer "--fair-queue off" push
gw_stop gwa
gw_stop gwb

log "--- the option's values"
expect_refusal "--tun-io mmap" 2 "bad value 'mmap' for --tun-io: expected read or uring" \
	"$GREGW" --remote 198.18.0.2 --tun-io mmap
echo "tun-io = uring" >"$TMP/uring.conf"
gw_a4 "$P" --config "$TMP/uring.conf"
expect_eq "a config file's tun-io = uring" "$(json_get "$(gw_stats gwa)" 'd["config"]["tun_io"]')" uring
gw_stop gwa
tr_stop
