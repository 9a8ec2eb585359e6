#!/bin/bash
# What gregw does when a worker's flow queue is full, measured: --fq-full drop (a queued read
# given up for each new one) against pause (TUN left unread until a send makes room), with the
# kernel's VXLAN between the same namespaces as the reference. Each repeat runs every
# configuration once, one after the other (gregw_quick.sh, one run each), so that what the
# machine does meanwhile falls on all of them alike; then the medians (min-max) per
# configuration: Gbit/s, retransmits per GB received, Jain's index, loaded RTT p50 and p99, and
# gwa's and gwb's tx_fq_overflow, tun_read_pauses and tun_device_tx_dropped summed (what each
# gregw gave up, paused, and what its TUN device dropped), the flow queue's CoDel marks and drops
# (tx_aqm_marked, tx_aqm) and the CE the receivers delivered. Run it alone on the machine.
#
#   scripts/bench/gregw_fq_full.sh [REPEATS [SECONDS]]     (default 3 repeats of 8 s)
#
# ENCAPS="gre gre-udp", SESSIONS="8 64", WORKERS="1 2", CCS="bbr cubic" and MODES="drop pause"
# choose the matrix: a mode is an --fq-full value, "codel" (--aqm codel, the flow queue's CoDel
# and the receive queue's), "nofq" (--fair-queue off) or "default"
# (neither option: a build from before --fq-full, whose full queue drops). VXLAN=no leaves the
# reference out. TXQUEUELEN=N sets the TUN devices' queue (default: gregw's, 1000), where a
# paused worker's backlog waits; GREGW_ARGS="--fq-limit 64" goes to every gregw. The runs'
# lines go to gregw_fq_full-DATE.jsonl in the current directory (KEEP=FILE to name it), the
# table to stdout. Needs root and build/bin (scripts/bootstrap).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
R=${1:-3} T=${2:-8}
case $R$T in *[!0-9]*) echo "usage: $0 [REPEATS [SECONDS]]" >&2; exit 2 ;; esac
read -r -a ENC <<<"${ENCAPS:-gre gre-udp}"
read -r -a SES <<<"${SESSIONS:-8 64}"
read -r -a WRK <<<"${WORKERS:-1 2}"
read -r -a CC <<<"${CCS:-bbr cubic}"
read -r -a MOD <<<"${MODES:-drop pause}"
read -r -a GA <<<"${GREGW_ARGS:-}"
OUT=${KEEP:-gregw_fq_full-$(date +%Y%m%d-%H%M%S).jsonl}
export QUICK_PREFIX=${QUICK_PREFIX:-tbfq}

# one LABEL ENCAP SESSIONS CC [gregw options...]: one run, its line tagged with LABEL and CC.
one() {
	local label=$1 encap=$2 s=$3 cc=$4 line
	shift 4
	QUICK_JSON=$TMPJ TRAFFIC_ARGS="--congestion $cc" \
		"$HERE/gregw_quick.sh" "$encap" "$s" "$T" "${TXQUEUELEN:--}" "$@" >/dev/null
	line=$(tail -1 "$TMPJ")
	python3 -c 'import json, sys; d = json.loads(sys.argv[1]); d["label"], d["cc"] = sys.argv[2], sys.argv[3]; print(json.dumps(d))' \
		"$line" "$label" "$cc" >>"$OUT"
	echo "  $label $cc $s sessions: done" >&2
}

TMPJ=$(mktemp)
trap 'rm -f "$TMPJ"' EXIT
echo "gregw_fq_full: $R repeats of $T s, runs into $OUT" >&2
for r in $(seq "$R"); do
	echo "repeat $r" >&2
	for cc in "${CC[@]}"; do
		for s in "${SES[@]}"; do
			if [ "${VXLAN:-yes}" != no ]; then one "vxlan" vxlan "$s" "$cc"; fi
			for e in "${ENC[@]}"; do
				for w in "${WRK[@]}"; do
					for m in "${MOD[@]}"; do
						case $m in
						nofq) opts=(--fair-queue off) ;;
						codel) opts=(--aqm codel) ;;
						default) opts=() ;;
						*) opts=(--fq-full "$m") ;;
						esac
						one "gregw $e ${w}w $m" "$e" "$s" "$cc" --workers "$w" "${opts[@]}" "${GA[@]}"
					done
				done
			done
		done
	done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
groups = {}
for x in runs:
    groups.setdefault((x["cc"], x["label"], x["sessions"]), []).append(x)
def fig(vals, fmt):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    m = statistics.median(vals)
    return f"{fmt.format(m)} ({fmt.format(min(vals))}-{fmt.format(max(vals))})" if len(vals) > 1 else fmt.format(m)
def gw(xs, key):
    vals = []
    for x in xs:
        g = x["gateways"]
        if not g:
            return "-"
        v = [g[n].get(key) for n in ("gwa", "gwb")]
        vals.append(None if None in v else sum(v))
    return fig(vals, "{:.0f}")
print("| CC | configuration | sessions | Gbit/s | retransmits/GB | Jain | RTT loaded p50 / p99 ms "
      "| tx_fq_overflow | tun_read_pauses | tun_device_tx_dropped | tx_aqm_marked | tx_aqm drops "
      "| CE delivered |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (cc, label, s), xs in sorted(groups.items()):
    print(f"| {cc} | {label} | {s} | {fig([x['gbit_s'] for x in xs], '{:.2f}')} "
          f"| {fig([x['retransmits_per_gb'] for x in xs], '{:.0f}')} "
          f"| {fig([x['jain'] for x in xs], '{:.3f}')} "
          f"| {fig([x['rtt_loaded_p50_ms'] for x in xs], '{:.2f}')} / "
          f"{fig([x['rtt_loaded_p99_ms'] for x in xs], '{:.2f}')} "
          f"| {gw(xs, 'tx_fq_overflow')} | {gw(xs, 'tun_read_pauses')} | {gw(xs, 'tun_device_tx_dropped')} "
          f"| {gw(xs, 'tx_aqm_marked')} | {gw(xs, 'tx_aqm_drops')} "
          f"| {fig([x.get('ce_delivered') for x in xs], '{:.0f}')} |")
PY
