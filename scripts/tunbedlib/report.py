"""A run's results directory: raw records in runs/, summary.csv and summary.json, report.md
with the headline in words first, and the plots. `tunbed report DIR` rebuilds all but the raw
records from them."""

import csv
import glob
import json
import os

from . import analysis

COLUMNS = ("bits_per_second", "retransmits", "jain", "box_cpu_s_per_gb", "gateway_cpu_s_per_gb",
           "rr_idle_p50_ms", "rr_load_p50_ms", "rr_load_p99_ms")


def load_runs(outdir):
    records = []
    for path in sorted(glob.glob(os.path.join(outdir, "runs", "*.json"))):
        with open(path) as f:
            records.append(json.load(f))
    return records


def gbps(x):
    return f"{x / 1e9:.2f}" if x is not None else "-"


def fmt(s, scale=1.0, digits=2):
    if not s:
        return "-"
    return (f"{s['median'] * scale:.{digits}f} ({s['min'] * scale:.{digits}f}-"
            f"{s['max'] * scale:.{digits}f})")


def headline(points, summary):
    """The report's first lines: per gateway configuration, the fewest and the most sessions,
    in words."""
    lines = []
    configs = {}
    for p in points:
        configs.setdefault(p["config"], []).append(p)
    for config, ps in configs.items():
        have = [p for p in ps if p["key"] in summary]
        if not have:
            continue
        for n in sorted({min(p["sessions"] for p in have), max(p["sessions"] for p in have)}):
            p = next(q for q in have if q["sessions"] == n)
            s = summary[p["key"]]
            t = s["bits_per_second"]
            rate = f"{gbps(t['median'])} Gbit/s" if t else "no throughput"
            if t and t["n"] > 1:
                rate += f" ({gbps(t['min'])}-{gbps(t['max'])})"
            lines.append(f"{config}, {n} session{'s' if n > 1 else ''}: {rate}, "
                         f"{analysis.saturation_words(s['saturated'])}")
    return lines


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def where(p):
    """'gregw gre 2w, 8 sessions': a point in words."""
    return f"{p['config']}, {plural(p['sessions'], 'session')}"


def wire_audited(points, summary):
    return [(p, summary[p["key"]]["wire"]) for p in points
            if p["key"] in summary and summary[p["key"]].get("wire")]


def wire_headline(points, summary):
    """One line on what the wire audit found, if it ran: where it failed, where frames broke
    an expectation or else that every tunnel frame was as expected, where the link carried no
    GRE at all, and how many points had capture drops."""
    audited = wire_audited(points, summary)
    if not audited:
        return []
    failed = [(p, w) for p, w in audited if w.get("failed")]
    measured = [(p, w) for p, w in audited if "tunnel_frames" in w]
    bad = [(p, w) for p, w in measured if w["violation_frames"]]
    good = [p for p, w in measured if w["tunnel_frames"] and not w["violation_frames"]]
    empty = [p for p, w in measured if not w["tunnel_frames"]]
    dropped = [p for p, w in measured if w["capture_dropped"]]
    parts = []
    if failed:
        parts.append("FAILED at " + "; ".join(
            f"{where(p)} ({w['failed']} of {plural(w['repeats'], 'repeat')}: "
            f"{'; '.join(w['errors'])})" for p, w in failed))
    if bad:
        words = "; ".join(f"{where(p)}: {w['violation_frames']} frames "
                          f"({', '.join(f'{k} {n}' for k, n in w['violations'].items())})"
                          for p, w in bad)
        parts.append(f"frames broke an expectation at {words}")
    elif good:
        parts.append(f"every tunnel frame of {plural(len(good), 'point')} as expected")
    if empty:
        configs = ", ".join(dict.fromkeys(p["config"] for p in empty))
        parts.append(f"no GRE on the link at {plural(len(empty), 'point')} ({configs})")
    line = "wire audit: " + "; ".join(parts)
    if dropped:
        line += f" (the capture dropped frames at {plural(len(dropped), 'point')}: counts are " \
                "partial)"
    return [line]


DATA_DIRS = {"local_to_remote": "gwa -> gwb", "remote_to_local": "gwb -> gwa"}


def wire_section(f, points, summary):
    rows = wire_audited(points, summary)
    if not rows:
        return
    f.write("## Wire audit\n\n"
            "tunbed-wire captured gwa's end of transit during every run (docs/wire.md): frames "
            "that broke an expectation (worst repeat), frames the capture dropped, and medians "
            "of the encapsulation overhead, GRE sequence numbers missing and out of order on "
            "the tunnel (`-`: the mode sends none), and of the TCP payload in the data "
            "direction, the one that carried more inner bytes (gwa -> gwb, client to server, "
            "with pattern push; back with pull): sent across the link twice (retransmitted), "
            "first seen after later data (late), and of the late data, what was sent after "
            "that later data, so lost before the link and resent (lost upstream), and what was "
            "overtaken on its way (reordered). The last two are told apart by the inner IPv4 "
            "identification; over inner IPv6 there is none, the late data stays unresolved and "
            "both show `-`. Runs whose audit failed are listed below the table and left out "
            "of its figures. The capture's CPU shows in the saturation attribution as "
            "tunbed-wire.\n\n")
    f.write("| gateway | sessions | tunnel frames | violations | capture dropped | data "
            "| overhead % | seq missing / reordered | TCP retransmitted % | TCP late % "
            "| TCP lost upstream % | TCP reordered % |\n")
    f.write("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")

    def pct(x):
        return f"{x:.3f}" if x is not None else "-"
    for p, w in rows:
        if "tunnel_frames" not in w:
            f.write(f"| {p['config']} | {p['sessions']} | audit failed |" + " - |" * 9 + "\n")
            continue
        seq = (f"{w['seq_missing']:.0f} / {w['seq_reordered']:.0f}" if w.get("seq_frames")
               else "-")
        f.write(f"| {p['config']} | {p['sessions']} | {w['tunnel_frames']:.0f} | "
                f"{w['violation_frames']} | {w['capture_dropped']} | "
                f"{DATA_DIRS.get(w.get('data_dir'), '-')} | {pct(w['overhead_pct'])} | "
                f"{seq} | {pct(w['tcp_retransmitted_pct'])} | {pct(w.get('tcp_late_pct'))} | "
                f"{pct(w['tcp_resent_pct'])} | {pct(w['tcp_reordered_pct'])} |\n")
    f.write("\n")
    failed = [(p, w) for p, w in rows if w.get("failed")]
    if failed:
        f.write("The audit failed (the raw records keep `wire_error`):\n\n")
        for p, w in failed:
            f.write(f"- {where(p)}: {w['failed']} of {plural(w['repeats'], 'repeat')}: "
                    f"{'; '.join(w['errors'])}\n")
        f.write("\n")


def table_row(p, s):
    sat = ", ".join(str(x["cpu"]) for x in s["saturated"]) or "-"
    idle = f"{s['rr_idle_p50_ms']['median']:.3f}" if s["rr_idle_p50_ms"] else "-"
    loaded = "-"
    if s["rr_load_p50_ms"] and s["rr_load_p99_ms"]:
        loaded = f"{s['rr_load_p50_ms']['median']:.3f} / {s['rr_load_p99_ms']['median']:.3f}"
    return (f"| {p['config']} | {p['sessions']} | {fmt(s['bits_per_second'], 1e-9)} | "
            f"{fmt(s['retransmits'], 1, 0)} | {fmt(s['jain'], 1, 3)} | "
            f"{fmt(s['box_cpu_s_per_gb'], 1, 1)} | {fmt(s['gateway_cpu_s_per_gb'], 1, 1)} | "
            f"{idle} | {loaded} | {sat} |\n")


def write(outdir, meta, complete=True):
    """Writes summary.csv, summary.json, report.md and the plots from outdir/runs/."""
    records = load_runs(outdir)
    runs = [analysis.analyse(r) for r in records]
    summary = analysis.summarise(runs)
    points, seen, order = [], set(), {}
    for r in sorted(records, key=lambda r: r.get("started", 0)):
        p = r["point"]
        order.setdefault(p["config"], len(order))
        if p["key"] not in seen:
            seen.add(p["key"])
            points.append(p)
    # In the order the run measured its configurations, sessions ascending within each.
    points.sort(key=lambda p: (order[p["config"]], p["sessions"], p["key"]))
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump({"meta": meta, "complete": complete, "points": points, "summary": summary,
                   "runs": runs}, f, indent=2)
        f.write("\n")
    with open(os.path.join(outdir, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["point", "gateway", "mode", "workers", "mtu", "pattern", "sessions",
                    "repeats"] + [f"{c}_{s}" for c in COLUMNS for s in ("median", "min", "max")]
                   + ["saturated_cores"])
        for p in points:
            s = summary[p["key"]]
            row = [p["key"], p["gateway"], p["mode"], p["workers"], p["mtu"], p["pattern"],
                   p["sessions"], s["repeats"]]
            for c in COLUMNS:
                row += [s[c][k] if s[c] else "" for k in ("median", "min", "max")]
            row.append(" ".join(str(x["cpu"]) for x in s["saturated"]))
            w.writerow(row)
    # Imported here, not at the top: the runner must start (and bootstrap, which installs
    # python3-matplotlib) with nothing but Python's standard library.
    from . import plots
    made = plots.make(outdir, records, runs, points, summary)
    lines = headline(points, summary) + wire_headline(points, summary)
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write(f"# tunbed {meta.get('scenario', '')}: {meta.get('title', '')}\n\n")
        if not complete:
            f.write("**PARTIAL: the run was interrupted or failed; these are the points "
                    "measured before it stopped.**\n\n")
        for line in lines:
            f.write(f"- {line}\n")
        f.write("\n")
        for note in meta.get("notes", []):
            f.write(f"> {note}\n")
        if meta.get("notes"):
            f.write("\n")
        ccs = sorted({(r.get("traffic") or {}).get("config", {}).get("congestion")
                      or "not recorded" for r in records})
        f.write(f"TCP congestion control of the sessions: {', '.join(ccs)}"
                f"{' (asked for)' if meta.get('congestion') else ' (the system default)'}.\n\n")
        f.write(f"Topology `{meta.get('topology')}`; each run {meta.get('time')} s measured after "
                f"{meta.get('warmup')} s of warm-up, {meta.get('repeats')} repeat(s); figures "
                "are medians with (min-max). Throughput is what the receiver counted in the "
                "measured window (tunbed-traffic); CPU is /proc/stat and each thread's "
                "/proc/PID/task/TID/stat sampled at 4 Hz on CLOCK_MONOTONIC over the same "
                "window. A core at 95% or more is saturated. CPU-s/GB: CPU seconds per 10^9 "
                "bytes received, for the whole box and for the gateway processes (kernel "
                "gateways have none).\n\n")
        f.write("| gateway | sessions | Gbit/s | retransmits | Jain | box CPU-s/GB | gateway "
                "CPU-s/GB | RTT idle p50 ms | RTT loaded p50 / p99 ms | saturated cores |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for p in points:
            f.write(table_row(p, summary[p["key"]]))
        f.write("\n")
        wire_section(f, points, summary)
        for title, name in made:
            f.write(f"## {title}\n\n![{title}](plots/{name}.svg)\n\n"
                    f"(PNG: [plots/{name}.png](plots/{name}.png))\n\n")
        f.write("Raw records: `runs/*.json`; every number above is in `summary.json` and "
                "`summary.csv`. Rebuild this report with `scripts/tunbed report DIR`.\n")
    return lines
