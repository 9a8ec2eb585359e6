#!/bin/bash
# tunbed intranet --hosts between two hosts reachable only over SSH (hosts_lib.sh), the way it
# runs between two cloud VMs: no cap of ours, the inventory's tunbed_nominal as the reference;
# ping, one stream, UDP at half the nominal; the client's ping_group_range, which leaves root
# out, opened for the run and put back after; nothing left on either host; and the inventory's
# and the profiles' mistakes, one line and exit status 2 each. The hosts' build is this
# machine's release build (each tunbed_root's usr/bin links to it: the runner checks the bytes,
# not how they got there; provisioning is hosts_ras's).
#
#  P-mgmt [runner] ==ssh== P-client [sshd] --lan-a-- P-gwa ==transit== P-gwb --lan-b-- P-server [sshd]
#  (gwa and gwb forward between the two LANs: the network between the VMs)
# shellcheck source=hosts_lib.sh
source "$(dirname "$0")/hosts_lib.sh"
hosts_test_init
new_prefix P tbhi
MGMT_NS="$P-mgmt"
hosts_up "$P"

# The network between the two hosts, as a cloud gives it: routed both ways.
ip -n "$P-client" route add 198.18.3.0/24 via 198.18.1.1
ip -n "$P-gwa" route add 198.18.3.0/24 via 198.18.0.2
ip -n "$P-gwb" route add 198.18.1.0/24 via 198.18.0.1
ip -n "$P-server" route add 198.18.1.0/24 via 198.18.3.1
ip netns exec "$P-client" ping -c 1 -W 5 198.18.3.2 >/dev/null || die "client cannot reach the server"
for h in c1 s1; do
	mkdir -p "$TMP/root-$h/usr/bin"
	for b in "$TUNBED_SRC"/build/bin/*; do ln -s "$b" "$TMP/root-$h/usr/bin/"; done
done
inventory() { # file nominal
	cat >"$1" <<-INV
		[client]
		c1 ansible_host=${HOST_MGMT[client]} tunbed_addr=198.18.1.2 tunbed_root=$TMP/root-c1 tunbed_nominal=$2
		[server]
		s1 ansible_host=${HOST_MGMT[server]} tunbed_addr=198.18.3.2 tunbed_root=$TMP/root-s1
		[all:vars]
		ansible_user=root
		ansible_ssh_private_key_file=$SSH_DIR/id
		ansible_ssh_common_args='-o UserKnownHostsFile=$SSH_DIR/known_hosts -o StrictHostKeyChecking=yes'
	INV
}
inventory "$TMP/two.ini" 2gbit
range_before=$(ip netns exec "$P-client" sysctl -n net.ipv4.ping_group_range)
R="$TMP/results"
out=$(in_mgmt "$TUNBED" intranet --hosts "$TMP/two.ini" --streams 1 --time 1 --warmup 0.5 --repeats 1 --udp-rate 10% --ping-count 10 --ping-interval 0.05 --prefix "$P" --results "$R" 2>"$TMP/run.err") || die "tunbed intranet --hosts failed: $(tail -3 "$TMP/run.err")"
expect_match "headline: the hosts against their nominal bandwidth" "$out" "^c1 -> s1: 1 stream [0-9.]+ Gbit/s \([0-9]+% of nominal\), ping [0-9.e-]+ ms idle / [0-9.e-]+ ms loaded, UDP 200 Mbit/s [0-9.]+% loss"
dir=$(find "$R" -maxdepth 1 -name '*-intranet' | head -1)
python3 - "$dir" <<'PY' || fail "the hosts run's results"
import json, os, sys
d = sys.argv[1]
meta = json.load(open(os.path.join(d, "meta.json")))
assert meta["mode"] == "hosts" and meta["complete"], meta
p = meta["profiles"][0]
assert (p["name"], p["rate"], p["nominal"], p["title"]) == ("hosts", 0, 2e9, "c1 -> s1"), p
run = lambda n: json.load(open(os.path.join(d, "runs", n + "-r1.json")))
i = run("hosts-idle")
assert i["traffic"]["icmp"]["received"] == 10 and i["traffic"]["rr"]["p50_ms"] > 0, i["traffic"]
assert i["facts"]["client"]["nic"]["name"] == "lan-a" and i["facts"]["server"]["nic"]["name"] == "lan-b", i["facts"]
t = run("hosts-tcp-s1")["traffic"]
assert t["tcp"]["bits_per_second"] > 0 and t["icmp"]["received"] > 0, t
assert run("hosts-udp-200000000bps")["traffic"]["udp"]["sent"] > 0
md = open(os.path.join(d, "report.md")).read()
assert "| c1 -> s1 | none of ours (nominal 2 Gbit/s) | " in md, md
PY
expect_eq "the client's ping_group_range put back" "$(ip netns exec "$P-client" sysctl -n net.ipv4.ping_group_range)" "$range_before"
for role in client server; do
	left=$(ip netns pids "$P-$role" | xargs -r ps -o comm= -p | grep -vx sshd || true)
	expect_eq "nothing left running on $role" "$left" ""
done
for f in /run/tunbed/"$P"-*; do
	if [ -e "$f" ]; then fail "state left: $f"; fi
done

# Mistakes: one line, exit status 2, nothing started.
inventory "$TMP/bad.ini" fast
expect_refusal "a nominal bandwidth that does not parse" 2 "^tunbed: host c1: bad value 'fast' for tunbed_nominal: expected a bit rate such as 1gbit, 2\.5g or 100mbit$" in_mgmt "$TUNBED" intranet --hosts "$TMP/bad.ini" --prefix "$P" --results "$TMP/bad"
expect_refusal "a cap on real hosts" 2 "^tunbed: profile 'c1-1\.5g' sets vcpus, rate: the hosts mode measures the hosts as they are, with no cap of ours \(a profile there may set only congestion, sockbuf, label\)$" in_mgmt "$TUNBED" intranet --hosts "$TMP/two.ini" --profiles c1-1.5g --prefix "$P" --results "$TMP/bad"
[ ! -e "$TMP/bad" ] || fail "a refused run made $TMP/bad"
