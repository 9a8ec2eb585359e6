#!/bin/bash
# NDR searches on hosts reachable only over SSH (hosts_lib.sh), kept small (one frame size,
# 1 s trials). `tunbed ndr --hosts` without tunbed_direct_addr: the generator's ceiling goes
# through the gateway hosts' routing, and says so. Then the datasheet on the same hosts (its
# least plan, which runs the ndr kind's searches as `tunbed ndr --hosts` does): throughput
# and NDR there, the generator's ceiling between the client and server hosts directly (to
# the server's tunbed_direct_addr, over a link of their own), then gregw's search on gwa and
# gwb through the tunnel; the records say where each part ran, and the links' counters show
# that it ran there; DSCP/ECN and the failover not applicable with why. Nothing is left on
# any host; the mistakes are one line and exit status 2 each. The hosts' build is this machine's release build (each tunbed_root's
# usr/bin links to it, as in hosts_intranet). Each part prints how long it took (time:).
#
#  P-mgmt [runner] ==ssh== every host's sshd (hosts_lib.sh)
#  P-client 198.18.9.1 -------------------direct-------------------- 198.18.9.2 P-server
#  P-client --lan-a-- P-gwa [gregw] ==transit== [gregw] P-gwb --lan-b-- P-server
# shellcheck source=hosts_lib.sh
source "$(dirname "$0")/hosts_lib.sh"
hosts_test_init
new_prefix P tbhn
MGMT_NS="$P-mgmt"
part "hosts up"
hosts_up "$P"

ip link add "$P-dc" netns "$P-client" type veth peer name "$P-ds" netns "$P-server"
ip -n "$P-client" link set "$P-dc" name direct up
ip -n "$P-server" link set "$P-ds" name direct up
ip -n "$P-client" addr add 198.18.9.1/30 dev direct
ip -n "$P-server" addr add 198.18.9.2/30 dev direct
for h in c1 gw1 gw2 s1; do
	mkdir -p "$TMP/root-$h/usr/bin"
	for b in "$TUNBED_SRC"/build/bin/*; do ln -s "$b" "$TMP/root-$h/usr/bin/"; done
done
hosts_inventory "$TMP/hosts.ini" "[server:vars]" tunbed_direct_addr=198.18.9.2
rx() { # namespace interface: packets received
	ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_packets"
}
routes_before=$(for r in client gwa gwb server; do ip -n "$P-$r" route show; done)
SMALL=(--sizes 64 --time 1 --initial-time 1 --width 0.5 --flows 2 --prefix "$P")
# Without tunbed_direct_addr: the ceiling through the gateway hosts' kernels (route). Only the
# ceiling is searched here, so a highest rate only starts its search lower (no gateway is
# searched above a ceiling it could exceed).
part "ndr --hosts: the ceiling through route"
hosts_inventory "$TMP/routed.ini"
R2="$TMP/results2"
out=$(in_mgmt "$TUNBED" ndr --hosts "$TMP/routed.ini" --gateways direct "${SMALL[@]}" --max-rate 20k --results "$R2" 2>"$TMP/run2.err") ||
	die "tunbed ndr --hosts through route failed: $(tail -3 "$TMP/run2.err")"
expect_match "headline: the ceiling" "$out" "^direct \(the generator alone\), 64-byte frames .*: NDR [0-9]+\.[0-9]+ Mpps"
dir2=$(find "$R2" -maxdepth 1 -name '*-ndr' | head -1)
expect_eq "the run's meta: hosts mode, complete, format 3, its inventory" \
	"$(json_get "$(cat "$dir2/meta.json")" 'd["mode"] + " " + str(d["complete"]) + " " + str(d["format"]) + " " + d["hosts"].rsplit("/", 1)[-1]')" "hosts True 3 routed.ini"
expect_eq "the ceiling through the gateway hosts" "$(json_get "$(cat "$dir2/searches/direct-f64.json")" 'd["where"]["path"] + " " + d["where"]["gwa"] + " " + d["where"]["gwb"]')" "route gw1 gw2"
grep -q "the generator alone between c1 and s1 through the gateway hosts' routing (route, gw1 and gw2)" "$dir2/report.md" ||
	fail "the report does not say the ceiling went through the gateway hosts"

# The datasheet on the same hosts, its least plan (docs/datasheet.md, On hosts): throughput
# and NDR/PDR of gregw on them (route's reasons are runner_datasheet's, in namespaces), the DSCP/ECN part and the failover not applicable
# there with why, and the page saying where each part ran.
part "datasheet --hosts"
R3="$TMP/results3"
direct_rx=$(rx "$P-server" direct)
transit_rx=$(rx "$P-gwb" transit)
in_mgmt "$TUNBED" datasheet --hosts "$TMP/hosts.ini" --gateways gregw --budget 90s --prefix "$P" --results "$R3" >/dev/null 2>"$TMP/ds.err" ||
	die "tunbed datasheet --hosts failed: $(tail -3 "$TMP/ds.err")"
python3 - "$(find "$R3" -maxdepth 1 -name '*-datasheet' | head -1)" "$(($(rx "$P-server" direct) - direct_rx))" "$(($(rx "$P-gwb" transit) - transit_rx))" <<'PY' || fail "the hosts datasheet's results"
import json, os, sys
d, direct_rx, transit_rx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
meta = json.load(open(os.path.join(d, "meta.json")))
assert (meta["mode"], meta["complete"], meta["failed"], meta["plan"]["name"]) == ("hosts", True, [], "least"), meta
assert meta["hosts"].endswith("/hosts.ini") and meta["gateway_cpu"] is None, meta
assert any(n.startswith("emulated cores off: on hosts") for n in meta["notes"]), meta["notes"]
tput = [f"throughput-gregw-gre-w2-mtu0-push-s{n}-r1.json" for n in (1, 8, 64)]
searches = ["ndr-direct-f64.json", "ndr-gregw-gre-w2-f64.json"]
assert sorted(os.listdir(os.path.join(d, "runs"))) == sorted(tput + searches), os.listdir(os.path.join(d, "runs"))
rec = lambda n: json.load(open(os.path.join(d, "runs", n)))["record"]
for n in tput + searches:  # every host sampled: each part ran on them
    assert {h["name"] for h in rec(n)["hosts"]} == {"c1", "gw1", "gw2", "s1"}, n
gregw = rec("throughput-gregw-gre-w2-mtu0-push-s8-r1.json")["hosts"]
assert any("gregw" in p for h in gregw if h["name"] == "gw1" for p in h["processes"].values()), gregw
# The NDR searches (the ndr kind's, as `tunbed ndr --hosts` runs them): the ceiling from the
# client host to the server host's direct address, no gateway; gregw on gw1 and gw2, offered
# at most the ceiling; what went over the direct link and over transit at least what the
# searches say was received (transit carried the throughput part too).
received = lambda r: sum(t["received"] for t in r["trials"] + r["latency_trials"])
c, g = rec("ndr-direct-f64.json"), rec("ndr-gregw-gre-w2-f64.json")
assert c["where"] == {"mode": "hosts", "path": "direct", "target": "198.18.9.2",
                      "client": "c1", "server": "s1"}, c["where"]
# (A trial the generator fell short in, on a busy machine, is run again and does not count.)
assert c["result"]["pdr"]["rate"] > 0 and c["trials"][c["result"]["pdr"]["lower_trial"]]["valid"], c["result"]
assert all(t["valid"] or t.get("retried") or t["attempt"] == 2 for t in c["trials"]), c["trials"]
assert direct_rx >= received(c) > 0, (direct_rx, received(c))
assert c["gateway"] is None
assert g["where"] == {"mode": "hosts", "path": "gateway", "target": "198.18.3.2",
                      "client": "c1", "server": "s1", "gwa": "gw1", "gwb": "gw2"}, g["where"]
assert g["params"]["max_rate"] == c["result"]["pdr"]["rate"], (g["params"], c["result"])
assert g["result"]["pdr"]["rate"] > 0, g["result"]
assert transit_rx >= received(g) > 0, (transit_rx, received(g))
# Each host's own CPU samples, the generator's processes where they ran, clocks aligned.
hosts = {h["name"]: h for h in g["hosts"]}
assert any("tunbed-traffic client" in p for p in hosts["c1"]["processes"].values())
assert any("tunbed-traffic server" in p for p in hosts["s1"]["processes"].values())
assert any("gregw" in p for p in hosts["gw1"]["processes"].values()), hosts["gw1"]["processes"]
for h in hosts.values():
    assert h["cpu"] and h["facts"] and abs(h["clock"]["offset_s"]) <= h["clock"]["error_s"] + 0.5, h["name"]
s = json.load(open(os.path.join(d, "summary.json")))["gateways"]
assert list(s) == ["gregw"], list(s)
assert all(x["bits_per_second"]["median"] > 0 for x in s["gregw"]["throughput"].values()), s["gregw"]["throughput"]
assert s["gregw"]["ndr"]["64"]["pdr"]["rate_pps"] > 0, s["gregw"]["ndr"]
assert s["gregw"]["tos"] is None and s["gregw"]["failover"] == {}
gw = dict(s["gregw"]["figures"])
assert gw["DSCP carried (outer)"].startswith("not applicable: not on hosts yet: its decapsulation probes"), gw
assert gw["failover, kill"].startswith("not applicable: not on hosts: the pair is a topology of namespaces"), gw
md = open(os.path.join(d, "report.md")).read()
assert ("On the hosts of `hosts.ini` (docs/hosts.md), throughput: the gateways on gw1 and gw2, the traffic between c1 and s1. "
        "NDR / PDR: the generator alone between c1 and s1 (directly, to 198.18.9.2); the gateways on gw1 and gw2") in md, md[:3000]
PY
expect_refusal "a datasheet's --client-cpu on hosts" 2 "^tunbed: --client-cpu \(client_cpu\) budgets processes of this machine: the hosts mode has none$" in_mgmt "$TUNBED" datasheet --hosts "$TMP/hosts.ini" --gateways gregw --client-cpu 20 --prefix "$P" --results "$TMP/bad"

part "nothing left, refusals"
# Nothing left: processes, routes, state.
for role in client gwa gwb server; do
	left=$(ip netns pids "$P-$role" | xargs -r ps -o comm= -p | grep -vx sshd || true)
	expect_eq "nothing left running on $role" "$left" ""
done
expect_eq "every host's routes put back" "$(for r in client gwa gwb server; do ip -n "$P-$r" route show; done)" "$routes_before"
for f in /run/tunbed/"$P"-*; do
	if [ -e "$f" ]; then fail "state left: $f"; fi
done

# Mistakes: one line, exit status 2, nothing started.
expect_refusal "a transit MTU on hosts" 2 "^tunbed: a transit MTU \(--mtu, mtu =\) is the topology's: the hosts mode uses the hosts' own$" in_mgmt "$TUNBED" ndr --hosts "$TMP/hosts.ini" --mtu 9000 --prefix "$P" --results "$TMP/bad"
hosts_inventory "$TMP/bad.ini" "[server:vars]" tunbed_direct_addr=198.18.9.6
st=0
err=$(in_mgmt "$TUNBED" ndr --hosts "$TMP/bad.ini" --gateways direct "${SMALL[@]}" --results "$TMP/bad" 2>&1 >/dev/null) || st=$?
expect_eq "a direct address the server does not have: one line, exit 2" "$st: $(grep -v '^bootstrap' <<<"$err")" \
	"2: tunbed: host s1 (server): tunbed_direct_addr 198.18.9.6 is not an address of this host"
[ -z "$(find "$TMP/bad" -mindepth 1 2>/dev/null)" ] || fail "a refused run left results: $(ls "$TMP/bad")"
part ""
