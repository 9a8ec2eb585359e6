#!/bin/bash
# One quick run through a gregw pair on ras.topo, for trying a knob before a full `tunbed
# compare`: throughput, retransmits, idle and loaded RTT (tunbed-traffic), and the gateways'
# drop and batching counters. One run: a hint, not a result.
#
#   scripts/bench/gregw_quick.sh ENCAP SESSIONS [SECONDS [TXQUEUELEN [gregw options...]]]
#   scripts/bench/gregw_quick.sh gre-udp 8 5 - --offload off
#
# ENCAP gre or gre-udp; vxlan runs the kernel's VXLAN between the same namespaces instead of
# gregw (no gregw options), the reference. TXQUEUELEN "-" keeps the TUN device's default.
# GWB_CPUS=1,0 pins gwb's workers in that order; TRAFFIC_ARGS="--congestion cubic" goes to the
# loaded tunbed-traffic client; QUICK_JSON=FILE appends the run's figures to FILE as a JSON line.
# FRAMES=1 turns the transits' tunnel segmentation off first (the runner's +frames, vxlan-frames).
# ECN=1 sets net.ipv4.tcp_ecn = 1 in the client's and the server's namespaces (give TRAFFIC_ARGS
# "--ecn on" to require it); the run then reports CE delivered, and gregw's CoDel marks and drops
# (--aqm codel): aqm_marked and aqm drops on the receive queue, tx_aqm_marked and tx_aqm drops in
# the flow queue.
# CLIENT_SYSCTLS="net.ipv4.tcp_timestamps=0 ..." sets those in the client's namespace first.
# Needs root and build/bin; uses the prefix tbq (QUICK_PREFIX) and removes it on exit.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build/bin
P=${QUICK_PREFIX:-tbq}
[ $# -ge 2 ] || { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
ENCAP=$1 S=$2 T=${3:-5} Q=${4:--}
shift $(($# < 4 ? $# : 4))
read -r -a TA <<<"${TRAFFIC_ARGS:-}"
D=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	"$B/tunbed-topo" down --prefix "$P" >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
"$B/tunbed-topo" up ras --prefix "$P" >/dev/null
for kv in ${CLIENT_SYSCTLS:-}; do
	ip netns exec "$P-client" sysctl -qw "$kv"
done
if [ "${FRAMES:-}" = 1 ]; then
	for g in gwa gwb; do
		ip netns exec "$P-$g" ethtool -K transit tx-gre-segmentation off tx-gre-csum-segmentation off \
			tx-udp_tnl-segmentation off tx-udp_tnl-csum-segmentation off tx-udp-segmentation off
	done
fi
if [ "${ECN:-}" = 1 ]; then
	for h in client server; do ip netns exec "$P-$h" sysctl -qw net.ipv4.tcp_ecn=1; done
fi
if [ "$ENCAP" = vxlan ]; then
	# As scripts/drivers/vxlan-example.sh sets it up: the reference, no gregw.
	vxlan() { # side local remote addr route via
		ip -n "$P-$1" link add vx0 type vxlan id 43 local "$2" remote "$3" dstport 4789 dev transit
		ip -n "$P-$1" link set dev vx0 mtu 1450 up
		ip -n "$P-$1" addr add "$4" dev vx0
		ip -n "$P-$1" route replace "$5" via "$6" dev vx0
	}
	vxlan gwa 198.18.0.1 198.18.0.2 198.19.0.1/24 198.18.3.0/24 198.19.0.2
	vxlan gwb 198.18.0.2 198.18.0.1 198.19.0.2/24 198.18.1.0/24 198.19.0.1
else
	ip netns exec "$P-gwa" "$B/gregw" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.3.0/24 \
		--workers 2 --encap "$ENCAP" --ctl "$D/a.sock" "$@" >/dev/null 2>"$D/a.err" &
	PIDS+=($!)
	ip netns exec "$P-gwb" "$B/gregw" --remote 198.18.0.1 --addr 198.19.0.2/24 --route 198.18.1.0/24 \
		--workers 2 --encap "$ENCAP" --ctl "$D/b.sock" ${GWB_CPUS:+--cpus "$GWB_CPUS"} "$@" >/dev/null 2>"$D/b.err" &
	PIDS+=($!)
	for s in a b; do
		for _ in $(seq 50); do "$B/gregw" ctl "$D/$s.sock" stats >/dev/null 2>&1 && break; sleep 0.1; done
	done
fi
if [ "$Q" != - ] && [ "$ENCAP" != vxlan ]; then
	ip -n "$P-gwa" link set gre0 txqueuelen "$Q"
	ip -n "$P-gwb" link set gre0 txqueuelen "$Q"
fi
ip netns exec "$P-server" "$B/tunbed-traffic" server >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -n "$(ip netns exec "$P-server" ss -Hltn 'sport = :9400')" ] && break; sleep 0.1; done
ip netns exec "$P-client" "$B/tunbed-traffic" client 198.18.3.2 --rr --time 1 --rr-rate 200 --json >"$D/idle.json"
ip netns exec "$P-client" "$B/tunbed-traffic" client 198.18.3.2 --sessions "$S" --time "$T" --warmup 1 --rr "${TA[@]}" --json >"$D/load.json"
if [ "$ENCAP" != vxlan ]; then
	"$B/gregw" ctl "$D/a.sock" stats >"$D/a.json"
	"$B/gregw" ctl "$D/b.sock" stats >"$D/b.json"
fi
python3 - "$D" "$ENCAP" "$Q" "$S" "${QUICK_JSON:-}" "$*" "${TRAFFIC_ARGS:-}" <<'PY'
import json, os, sys
d, encap, q, s, out, opts, targs = sys.argv[1:]
def load(n):
    with open(os.path.join(d, n)) as f:
        return json.load(f)
i, l = load("idle.json"), load("load.json")
t, r = l["tcp"], l["rr"]
gb = t["bytes"] / 1e9
print(f"{encap} txqueuelen={q} sessions={s}: {t['bits_per_second'] / 1e9:.2f} Gbit/s, "
      f"retransmits {t['retransmits']} ({t['retransmits'] / gb if gb else 0:.0f}/GB), "
      f"RTT idle p50 {i['rr']['p50_ms']:.3f} ms, "
      f"loaded p50 {r['p50_ms']:.3f} / p99 {r['p99_ms']:.3f} ms, Jain {t['jain']:.3f}"
      f", CE delivered {t.get('ce_delivered', 0)}")
run = {"encap": encap, "sessions": int(s), "txqueuelen": q, "gregw_options": opts,
       "traffic_args": targs, "gbit_s": t["bits_per_second"] / 1e9, "bytes": t["bytes"],
       "retransmits": t["retransmits"], "retransmits_per_gb": t["retransmits"] / gb if gb else None,
       "jain": t["jain"], "rtt_idle_p50_ms": i["rr"]["p50_ms"], "rtt_loaded_p50_ms": r["p50_ms"],
       "rtt_loaded_p99_ms": r["p99_ms"], "ce_delivered": t.get("ce_delivered"),
       "ecn_negotiated": t.get("ecn_negotiated"), "gateways": {}}
for g in ("a", "b") if encap != "vxlan" else ():
    x = load(g + ".json")["total"]
    run["gateways"]["gw" + g] = {k: x.get(k) for k in ("dropped", "tun_read_pauses", "tun_device_tx_dropped")}
    run["gateways"]["gw" + g]["tx_fq_overflow"] = x["drops"].get("tx_fq_overflow")
    run["gateways"]["gw" + g]["aqm_marked"] = x.get("aqm_marked")
    run["gateways"]["gw" + g]["aqm_drops"] = x["drops"].get("aqm")
    run["gateways"]["gw" + g]["tx_aqm_marked"] = x.get("tx_aqm_marked")
    run["gateways"]["gw" + g]["tx_aqm_drops"] = x["drops"].get("tx_aqm")
    for k in ("socket_drops", "ring_drops"):
        if k in x:
            run["gateways"]["gw" + g][k] = x[k]
    run["gateways"]["gw" + g]["tx_merged_reads"] = x.get("tx_merged_reads")
    run["gateways"]["gw" + g]["segments_per_tap_write"] = x["cost"]["tun_to_wire"].get("segments_per_tap_write")
    run["gateways"]["gw" + g]["tun_to_wire_segments_per_syscall"] = x["cost"]["tun_to_wire"]["segments_per_syscall"]
if out:
    with open(out, "a") as f:
        f.write(json.dumps(run) + "\n")
for g in ("a", "b") if encap != "vxlan" else ():
    whole = load(g + ".json")
    x = whole["total"]
    print(f"  gw{g}: " + ", ".join(f"{k} {x[k]}" for k in (
        "tun_reads", "tx_merged_reads", "gso_superpackets", "tun_writes", "coalesced_superpackets", "gre_gro_reads", "udp_gro_reads",
        "wire_tx_ip", "ring_drops" if "ring_drops" in x else "socket_drops", "dropped",
        "tun_read_pauses", "tun_device_tx_dropped") if k in x) +
          f", tx_fq_overflow {x['drops']['tx_fq_overflow']}, aqm_marked {x.get('aqm_marked')}"
          f", aqm drops {x['drops'].get('aqm')}, tx_aqm_marked {x.get('tx_aqm_marked')}"
          f", tx_aqm drops {x['drops'].get('tx_aqm')}")
    if "wire_tx" in whole["config"]:
        print(f"    wire_tx {whole['config']['wire_tx']}, why {whole['config'].get('wire_tx_why')}"
              f", next hop {whole.get('next_hop')}")
    for way in ("tun_to_wire", "wire_to_tun"):
        c = x["cost"][way]
        if c["segments"]:
            hist = " ".join(f"{k}:{v}" for k, v in c["superpacket_segments"].items() if v)
            tap = (f", {c['segments_per_tap_write']:.2f} segments/TAP write"
                   if c.get("segments_per_tap_write") else "")
            print(f"    {way}: {c['segments_per_syscall']:.2f} segments/syscall{tap}, "
                  f"{c['syscalls_per_gb']:.0f} syscalls/GB, superpackets by segments {hist}")
    print("    flows by worker: " + ", ".join(str(w["flows"]) for w in whole["workers"]))
    if x["cost"]["wakeups_per_gb"] is not None:
        print(f"    wake-ups {x['cost']['wakeups_per_gb']:.0f}/GB")
PY
