"""The failover's results: per run and per fault (median, min-max over the repeats), the
headline in words, summary.json, report.md and two plots per fault (throughput over time at
100 ms with the fault, takeover, repair and failback marked; each gateway's CPU per core).
The raw records (runs/FAULT-rN.json) are failover.py's; docs/failover.md defines each figure.
"""

import json
import statistics

from . import files

FAULT_WORDS = {
    "kill": "kill -9 of gwb1's gregw",
    "stop": "SIGSTOP of gwb1's gregw",
    "link": "gwb1's link down",
    "cut": "gwb1 cut off",
}
UDP_SIZE = 1000
ROLE_WORDS = {"gwa": "client side", "gwb1": "active", "gwb2": "passive"}


def first_after(routes, t, want):
    """Seconds from t to the first route sample at or after t for which want(active) holds."""
    for ts, active in routes:
        if ts >= t and want(active):
            return ts - t
    return None


def tcp_gap(tcp, t_from, t_to):
    """The longest run of 100 ms intervals in [t_from, t_to) in which the client received
    nothing, in seconds (pull: the client's count is what was delivered)."""
    if not tcp or "intervals" not in tcp:
        return None
    base = tcp.get("measure_start_mono_s", 0)
    longest = run = 0.0
    for iv in tcp["intervals"]:
        a, b = base + iv["start"], base + iv["end"]
        if b <= t_from or a >= t_to:
            continue
        if iv.get("bytes", 0) == 0:
            run += b - a
            longest = max(longest, run)
        else:
            run = 0.0
    return round(longest, 3)


def udp_outage(doc, rate):
    """RFC 6201: datagrams lost over the stream's rate, in seconds."""
    if not doc or "udp" not in doc:
        return None, None
    pps = rate / (8 * UDP_SIZE)
    lost = doc["udp"].get("lost", 0)
    return round(lost / pps, 3), lost


def seq_of(stats):
    return (stats or {}).get("seq") or {}


def analyse(rec):
    t_f, t_r = rec["t_fault"], rec["t_repair"]
    routes = rec["routes"]
    down = [e["t"] for e in rec["health"].get("gwb1", []) if e["state"] == "down" and
            e["t"] >= t_f]
    moved = first_after(routes, t_f, lambda a: a != "gwb1")
    detection = min([x for x in ((down[0] - t_f) if down else None, moved) if x is not None],
                    default=None)
    tcp = rec["tcp"] or {}
    t_end = tcp.get("measure_end_mono_s", t_r + 60)
    out_f, lost_f = udp_outage(rec["udp"][0], rec["settings"]["udp_rate"])
    out_b, lost_b = udp_outage(rec["udp"][1], rec["settings"]["udp_rate"])
    t = tcp.get("tcp", {})
    sessions = tcp.get("config", {}).get("sessions", rec["settings"]["sessions"])
    failed = t.get("failed", sessions if not tcp else 0)
    gw = rec.get("gateways", {})
    return {
        "fault": rec["fault"], "repeat": rec["repeat"],
        "detection_s": r3(detection),
        "takeover_s": r3(first_after(routes, t_f, lambda a: a == "gwb2")),
        "failback_s": r3(first_after(routes, t_r, lambda a: a == "gwb1")),
        "outage_s": out_f, "udp_lost": lost_f,
        "failback_outage_s": out_b, "failback_udp_lost": lost_b,
        "tcp_gap_s": tcp_gap(tcp, t_f - 0.2, t_r),
        "failback_tcp_gap_s": tcp_gap(tcp, t_r - 0.05, t_end),
        "sessions": sessions, "survived": sessions - failed, "reset": failed,
        "bytes": sum(s.get("received", 0) for s in t.get("per_session", [])),
        "wrong_bytes": t.get("verify", {}).get("mismatches"),
        "retransmits": t.get("retransmits"),
        "gbps": r3(t.get("bits_per_second", 0) / 1e9),
        "passive_decap_packets": ((gw.get("gwb2") or {}).get("total") or {}).get(
            "tun_tx_packets"),
        "gwa_seq_resyncs": seq_of(gw.get("gwa")).get("resyncs"),
        "gwa_seq_out_of_window": seq_of(gw.get("gwa")).get("out_of_window"),
        "complete": bool(tcp.get("complete")),
    }


def r3(x):
    return None if x is None else round(x, 3)


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    if not v:
        return None
    return {"median": round(statistics.median(v), 3), "min": min(v), "max": max(v)}


def fmt(m, what=""):
    """'0.41 s outage (0.38-0.47)': the median, then what it is, then the range."""
    if m is None:
        return f"{what} not measured".strip()
    text = f"{m['median']:g} s" + (f" {what}" if what else "")
    return text if m["min"] == m["max"] else f"{text} ({m['min']:g}-{m['max']:g})"


def summarise(rows):
    by = {}
    for r in rows:
        by.setdefault(r["fault"], []).append(r)
    out = {}
    for fault, rs in by.items():
        out[fault] = {k: med(rs, k) for k in (
            "detection_s", "takeover_s", "outage_s", "tcp_gap_s", "failback_s",
            "failback_outage_s", "failback_tcp_gap_s", "retransmits", "gbps")}
        out[fault].update({
            "repeats": len(rs),
            "sessions": rs[0]["sessions"],
            "survived_min": min(r["survived"] for r in rs),
            "wrong_bytes": sum(r["wrong_bytes"] or 0 for r in rs),
            "unverified": sum(1 for r in rs if r["wrong_bytes"] is None),
            "took_over": sum(1 for r in rs if r["takeover_s"] is not None),
            "failed_back": sum(1 for r in rs if r["failback_s"] is not None),
        })
    return out


def headline(summary, complete):
    lines = []
    for fault, s in summary.items():
        lines.append(
            f"{FAULT_WORDS[fault]}: {fmt(s['outage_s'], 'outage')}, takeover after "
            f"{fmt(s['takeover_s'])} (detected after {fmt(s['detection_s'])}), longest TCP gap "
            f"{fmt(s['tcp_gap_s'])}, {s['survived_min']} of {s['sessions']} sessions survived, "
            f"{s['wrong_bytes']} wrong bytes; failback after {fmt(s['failback_s'])}, "
            f"{fmt(s['failback_outage_s'], 'outage')}"
            + ("" if s["took_over"] == s["repeats"] else
               f"; the passive took over in only {s['took_over']} of {s['repeats']} repeats"))
    if not complete:
        lines.append("PARTIAL: the run did not complete; these are the repeats it finished")
    return lines


def write(outdir, meta, runs):
    rows = [analyse(r) for r in runs]
    summary = summarise(rows)
    lines = headline(summary, meta.get("complete", False))
    with files.output(outdir, "summary.json") as f:
        json.dump({"meta": meta, "complete": meta.get("complete", False), "runs": rows,
                   "summary": summary}, f, indent=1)
    plots = plot_all(outdir, runs)
    write_md(outdir, meta, lines, rows, plots)
    return lines


def write_md(outdir, meta, lines, rows, plots):
    s = meta["settings"]
    md = ["# tunbed failover: the RAS gateway pair", ""]
    md += [f"- {ln}" for ln in lines]
    md += ["", "## Method", "",
           f"ras-pair topology: gwb1 active, gwb2 passive (hot) behind the service address "
           f"198.18.6.1, announced over BGP with BFD (FRR) to core; gregw mode {s['mode']}, key "
           f"7, {s['workers']} worker(s). {s['sessions']} verified TCP sessions (pull) and one "
           f"UDP stream of {s['udp_rate'] / 1e6:g} Mbit/s ({UDP_SIZE}-byte datagrams); fault at "
           f"{s['fail_at']:g} s, repaired {s['failback_after']:g} s later, {s['tail']:g} s more; "
           f"{s['repeats']} repeat(s), medians with min-max. Outage: UDP datagrams lost over "
           f"the stream's rate (RFC 6201). Timings come from a shared 2-core machine that "
           f"other jobs keep busy: compare them with care.", "",
           "## Runs", "",
           "| fault | repeat | detection s | takeover s | outage s | TCP gap s | survived | "
           "wrong bytes | retransmits | failback s | failback outage s | gwa seq resyncs |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        md.append(f"| {r['fault']} | {r['repeat']} | {r['detection_s']} | {r['takeover_s']} | "
                  f"{r['outage_s']} | {r['tcp_gap_s']} | {r['survived']}/{r['sessions']} | "
                  f"{r['wrong_bytes']} | {r['retransmits']} | {r['failback_s']} | "
                  f"{r['failback_outage_s']} | {r['gwa_seq_resyncs']} |")
    if plots:
        md += ["", "## Plots", ""] + [f"![{p}](plots/{p})" for p in plots]
    files.write(outdir, "report.md", "\n".join(md) + "\n")


def plot_all(outdir, runs):
    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["text.parse_math"] = False  # text is the run's: never math
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    done, names = set(), []
    for rec in runs:
        if rec["fault"] in done:
            continue
        done.add(rec["fault"])
        names += plot_run(plt, outdir, rec)
    return names


def marks(ax, rec, t0):
    routes = rec["routes"]
    ev = [(rec["t_fault"], "fault", "red"), (rec["t_repair"], "repair", "green")]
    tk = first_after(routes, rec["t_fault"], lambda a: a == "gwb2")
    fb = first_after(routes, rec["t_repair"], lambda a: a == "gwb1")
    if tk is not None:
        ev.append((rec["t_fault"] + tk, "takeover", "orange"))
    if fb is not None:
        ev.append((rec["t_repair"] + fb, "failback", "blue"))
    for t, label, color in ev:
        ax.axvline(t - t0, color=color, linestyle="--", linewidth=1, label=label)


def plot_run(plt, outdir, rec):
    fault, tcp = rec["fault"], rec["tcp"] or {}
    t0 = tcp.get("measure_start_mono_s", rec["t_start"])
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ivs = tcp.get("intervals", [])
    ax.step([iv["end"] for iv in ivs], [iv["bytes"] * 8 / (iv["end"] - iv["start"]) / 1e9
                                        for iv in ivs], where="pre", color="black",
            label="TCP delivered")
    marks(ax, rec, t0)
    ax.set_xlabel("s")
    ax.set_ylabel("Gbit/s (100 ms)")
    ax.set_title(f"{FAULT_WORDS[fault]}: throughput over time (repeat {rec['repeat']})")
    ax.legend(fontsize=7, loc="lower right")
    names = [f"{fault}-throughput.png"]
    fig.tight_layout()
    files.figure(fig, outdir, names[0], dpi=100)
    plt.close(fig)
    cpu = rec["cpu"]
    if len(cpu) >= 2:
        gws = ["gwa", "gwb1", "gwb2"]
        ncores = len(cpu[0]["cores"])
        fig, axes = plt.subplots(1, len(gws), figsize=(12, 3.2), sharey=True)
        for ax, gw in zip(axes, gws):
            for core in range(ncores):
                xs, ys = [], []
                for a, b in zip(cpu, cpu[1:]):
                    dt = b["cores"][core][1] - a["cores"][core][1]
                    prev = {tid: ticks for tid, ticks, _ in a["threads"].get(gw, [])}
                    used = sum(ticks - prev[tid] for tid, ticks, c in b["threads"].get(gw, [])
                               if c == core and tid in prev)
                    xs.append(b["t"] - t0)
                    ys.append(100.0 * used / dt if dt > 0 else 0)
                ax.plot(xs, ys, label=f"core {core}", linewidth=1)
            marks(ax, rec, t0)
            ax.set_title(f"{gw} ({ROLE_WORDS[gw]})", fontsize=9)
            ax.set_xlabel("s")
        axes[0].set_ylabel("gregw CPU % of the core")
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        names.append(f"{fault}-cpu.png")
        files.figure(fig, outdir, names[-1], dpi=100)
        plt.close(fig)
    return names
