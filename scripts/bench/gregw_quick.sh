#!/bin/bash
# One quick run through a gregw pair on ras.topo, for trying a knob before a full `tunbed
# compare`: throughput, retransmits, idle and loaded RTT (tunbed-traffic), and the gateways'
# drop and batching counters. One run: a hint, not a result.
#
#   scripts/bench/gregw_quick.sh ENCAP SESSIONS [SECONDS [TXQUEUELEN [gregw options...]]]
#   scripts/bench/gregw_quick.sh gre-udp 8 5 - --offload off
#
# TXQUEUELEN "-" keeps the TUN device's default. GWB_CPUS=1,0 pins gwb's workers in that order;
# TRAFFIC_ARGS="--congestion cubic" goes to the loaded tunbed-traffic client.
# Needs root and build/bin; uses the prefix tbq and removes it on exit.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build/bin
P=tbq
[ $# -ge 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
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
ip netns exec "$P-gwa" "$B/gregw" --remote 198.18.0.2 --addr 198.19.0.1/24 --route 198.18.3.0/24 \
	--workers 2 --encap "$ENCAP" --ctl "$D/a.sock" "$@" >/dev/null 2>"$D/a.err" &
PIDS+=($!)
ip netns exec "$P-gwb" "$B/gregw" --remote 198.18.0.1 --addr 198.19.0.2/24 --route 198.18.1.0/24 \
	--workers 2 --encap "$ENCAP" --ctl "$D/b.sock" ${GWB_CPUS:+--cpus "$GWB_CPUS"} "$@" >/dev/null 2>"$D/b.err" &
PIDS+=($!)
for s in a b; do
	for _ in $(seq 50); do "$B/gregw" ctl "$D/$s.sock" stats >/dev/null 2>&1 && break; sleep 0.1; done
done
if [ "$Q" != - ]; then
	ip -n "$P-gwa" link set gre0 txqueuelen "$Q"
	ip -n "$P-gwb" link set gre0 txqueuelen "$Q"
fi
ip netns exec "$P-server" "$B/tunbed-traffic" server >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -n "$(ip netns exec "$P-server" ss -Hltn 'sport = :9400')" ] && break; sleep 0.1; done
ip netns exec "$P-client" "$B/tunbed-traffic" client 198.18.3.2 --rr --time 1 --rr-rate 200 --json >"$D/idle.json"
ip netns exec "$P-client" "$B/tunbed-traffic" client 198.18.3.2 --sessions "$S" --time "$T" --warmup 1 --rr "${TA[@]}" --json >"$D/load.json"
"$B/gregw" ctl "$D/a.sock" stats >"$D/a.json"
"$B/gregw" ctl "$D/b.sock" stats >"$D/b.json"
python3 - "$D" "$ENCAP" "$Q" "$S" <<'PY'
import json, os, sys
d, encap, q, s = sys.argv[1:]
def load(n):
    with open(os.path.join(d, n)) as f:
        return json.load(f)
i, l = load("idle.json"), load("load.json")
t, r = l["tcp"], l["rr"]
print(f"{encap} txqueuelen={q} sessions={s}: {t['bits_per_second'] / 1e9:.2f} Gbit/s, "
      f"retransmits {t['retransmits']}, RTT idle p50 {i['rr']['p50_ms']:.3f} ms, "
      f"loaded p50 {r['p50_ms']:.3f} / p99 {r['p99_ms']:.3f} ms, Jain {t['jain']:.3f}")
for g in ("a", "b"):
    whole = load(g + ".json")
    x = whole["total"]
    print(f"  gw{g}: " + ", ".join(f"{k} {x[k]}" for k in (
        "tun_reads", "gso_superpackets", "tun_writes", "gro_superpackets", "gre_gro_reads", "udp_gro_reads",
        "wire_tx_ip", "ring_drops" if "ring_drops" in x else "socket_drops", "dropped")))
    if "wire_tx" in whole["config"]:
        print(f"    wire_tx {whole['config']['wire_tx']}, inner checksums to the device "
              f"{whole['config']['tx_csum_offload']}, next hop {whole.get('next_hop')}")
    for way in ("tun_to_wire", "wire_to_tun"):
        c = x["cost"][way]
        if c["segments"]:
            hist = " ".join(f"{k}:{v}" for k, v in c["superpacket_segments"].items() if v)
            print(f"    {way}: {c['segments_per_syscall']:.2f} segments/syscall, "
                  f"{c['syscalls_per_gb']:.0f} syscalls/GB, superpackets by segments {hist}")
    print("    flows by worker: " + ", ".join(str(w["flows"]) for w in whole["workers"]))
    if x["cost"]["wakeups_per_gb"] is not None:
        print(f"    wake-ups {x['cost']['wakeups_per_gb']:.0f}/GB")
PY
