"""A run's results directory: raw records in runs/, summary.csv and summary.json, report.md
and report.html with the headline in words first, and the plots. `tunbed report DIR` rebuilds
all but the raw records from them.

write() composes three steps: the analysis (analysis.py, one Results for all writers), the
order of the points (order()), and one writer per output, each taking the Results: summary.json,
summary.csv, the plots, report.md and report.html. The words and tables both reports show are
made once here (headline(), point_table(), wire_table(), ...); the two writers only format
them."""

import csv
import dataclasses
import html
import json
import re

from . import analysis, files, pairview, records as recordfiles

COLUMNS = ("bits_per_second", "retransmits", "retransmits_per_gb", "jain", "box_cpu_s_per_gb",
           "gateway_cpu_s_per_gb", "rr_idle_p50_ms", "rr_load_p50_ms", "rr_load_p99_ms")


def load_runs(outdir):
    """The raw records of outdir/runs/ in today's layout (records.py)."""
    return recordfiles.load_runs(outdir)


@dataclasses.dataclass
class Results:
    """What every writer takes: the run's meta, whether it completed, the raw records, each
    run's numbers (analysis.analyse), each point's (analysis.summarise), the points in report
    order (also those of which every run failed), and the runs whose gateway did not come
    up."""
    meta: dict
    complete: bool
    records: list
    runs: list
    summary: dict
    points: list
    failed: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Plot:
    """A drawn plot: its title, its file name in plots/ (without .svg or .png), and its SVG."""
    title: str
    name: str
    svg: str


def order(records):
    """The points of records, each once, in the order the run measured their configurations
    (a configuration's place is that of its first run), sessions ascending within each."""
    points, seen, first = [], set(), {}
    for r in sorted(records, key=lambda r: r.get("started", 0)):
        p = r["point"]
        first.setdefault(p["config"], len(first))
        if p["key"] not in seen:
            seen.add(p["key"])
            points.append(p)
    points.sort(key=lambda p: (first[p["config"]], p["sessions"], p["key"]))
    return points


def analyse(records, meta, complete=True):
    """The Results of a run's raw records (today's layout, records.py)."""
    runs = [analysis.analyse(r) for r in records]
    failed = meta.get("failed") or []
    return Results(meta=meta, complete=complete, records=records, runs=runs,
                   summary=analysis.summarise(runs), points=order(records + failed),
                   failed=failed)


# What both reports say, in words and tables.

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


def verify_headline(points, summary):
    """With --verify: that every byte was right, or where it was not."""
    checked = [p for p in points if summary.get(p["key"], {}).get("wrong_bytes") is not None]
    if not checked:
        return []
    bad = [p for p in checked if summary[p["key"]]["wrong_bytes"]]
    if not bad:
        return [f"verify: every byte of every session checked at {plural(len(checked), 'point')}"
                ": 0 wrong"]
    return ["verify: WRONG BYTES at " + "; ".join(
        f"{where(p)}: {summary[p['key']]['wrong_bytes']}" for p in bad)]


def failed_by_point(points, failed):
    """[(point, repeats that failed, their errors once each)] in report order."""
    out = []
    for p in points:
        fs = [f for f in failed if f["point"]["key"] == p["key"]]
        if fs:
            out.append((p, len(fs), list(dict.fromkeys(f["error"] for f in fs))))
    return out


def failed_headline(points, failed):
    """A line per point where the gateway did not come up, with what it said last."""
    return [f"{where(p)}: FAILED ({n} {'repeat' if n == 1 else 'repeats'}): {'; '.join(errs)}"
            for p, n, errs in failed_by_point(points, failed)]


def headlines(res):
    """Every headline line of a run: the points', the pair's, the failed ones', then the wire
    audit's and the check's."""
    return (headline(res.points, res.summary) + pairview.headline(res.points, res.records)
            + failed_headline(res.points, res.failed)
            + wire_headline(res.points, res.summary) + verify_headline(res.points, res.summary))


def title(meta):
    return f"tunbed {meta.get('scenario', '')}: {meta.get('title', '')}"


PARTIAL = ("PARTIAL: the run was interrupted or failed; these are the points measured before "
           "it stopped.")


def congestion_line(res):
    ccs = sorted({((r.get("traffic") or {}).get("config") or {}).get("congestion") or "not recorded"
                  for r in res.records})
    return (f"TCP congestion control of the sessions: {', '.join(ccs)}"
            f"{' (asked for)' if res.meta.get('congestion') else ' (the system default)'}.")


def method(meta):
    return (f"Topology `{meta.get('topology')}`; each run {meta.get('time')} s measured after "
            f"{meta.get('warmup')} s of warm-up, {meta.get('repeats')} repeat(s); figures "
            "are medians with (min-max). Throughput is what the receiver counted in the "
            "measured window (tunbed-traffic); CPU is /proc/stat and each thread's "
            "/proc/PID/task/TID/stat sampled at 4 Hz on CLOCK_MONOTONIC over the same "
            "window. A core at 95% or more is saturated. CPU-s/GB: CPU seconds per 10^9 "
            "bytes received, for the whole box and for the gateway processes (kernel "
            "gateways have none).")


POINT_HEADER = ("gateway", "sessions", "Gbit/s", "retransmits", "Jain", "box CPU-s/GB",
                "gateway CPU-s/GB", "RTT idle p50 ms", "RTT loaded p50 / p99 ms",
                "saturated cores")


def core_name(sat):
    """A saturated core: its number, and on a run of several machines its host's name."""
    return f"{sat['host']}:{sat['cpu']}" if sat.get("host") else str(sat["cpu"])


def point_cells(p, s):
    sat = ", ".join(core_name(x) for x in s["saturated"]) or "-"
    idle = f"{s['rr_idle_p50_ms']['median']:.3f}" if s["rr_idle_p50_ms"] else "-"
    loaded = "-"
    if s["rr_load_p50_ms"] and s["rr_load_p99_ms"]:
        loaded = f"{s['rr_load_p50_ms']['median']:.3f} / {s['rr_load_p99_ms']['median']:.3f}"
    return [p["config"], str(p["sessions"]), fmt(s["bits_per_second"], 1e-9),
            fmt(s["retransmits"], 1, 0), fmt(s["jain"], 1, 3), fmt(s["box_cpu_s_per_gb"], 1, 1),
            fmt(s["gateway_cpu_s_per_gb"], 1, 1), idle, loaded, sat]


def point_table(points, summary):
    """The table of points: (header, rows of cells); a point of which no run came up has
    FAILED for its numbers."""
    return POINT_HEADER, [point_cells(p, summary[p["key"]]) if p["key"] in summary else
                          [p["config"], str(p["sessions"]), "FAILED"] + ["-"] * 7
                          for p in points]


PEER_INTRO = (
    "The gateways side by side, a row per gateway and session count (medians over the "
    "repeats): the version and cipher each ran with, the MTU of the device the tunnel's inner "
    "packets enter (read on gwa), throughput, the CPU-seconds per GB of the whole box and of "
    "the gateway's own processes, TCP retransmissions per GB received, request/response round "
    "trips idle and under load, Jain's fairness index over the sessions, and on each saturated "
    "core the thread that ran on it most.")

PEER_HEADER = ("sessions", "gateway", "version", "cipher", "inner MTU", "Gbit/s", "box CPU-s/GB",
               "gateway CPU-s/GB", "retransmits/GB", "RTT idle p50 ms", "RTT loaded p50 ms",
               "Jain", "saturated thread")


def median(s, digits, scale=1.0):
    return f"{s['median'] * scale:.{digits}f}" if s else "-"


def peer_table(points, summary, failed=()):
    """The gateways side by side: (header, rows), sessions first; None for a run of one
    gateway."""
    if len({p["gateway"] for p in points}) < 2:
        return None
    errors = {p["key"]: "; ".join(errs) for p, _, errs in failed_by_point(points, failed)}
    rows = []
    for p in sorted(points, key=lambda p: p["sessions"]):  # stable: the run's order within
        s = summary.get(p["key"])
        if not s:
            rows.append([str(p["sessions"]), p["config"], "-", "-", "-", "FAILED"] + ["-"] * 6
                        + [errors.get(p["key"], "-")])
            continue
        info = s.get("gateway_info") or {}
        rows.append([str(p["sessions"]), p["config"], info.get("version") or "-",
                     info.get("cipher") or "-", str(info.get("mtu") or "-"),
                     median(s["bits_per_second"], 2, 1e-9), median(s["box_cpu_s_per_gb"], 1),
                     median(s["gateway_cpu_s_per_gb"], 1), median(s["retransmits_per_gb"], 0),
                     median(s["rr_idle_p50_ms"], 3), median(s["rr_load_p50_ms"], 3),
                     median(s["jain"], 3), analysis.saturating_threads(s["saturated"])])
    return PEER_HEADER, rows


WIRE_INTRO = (
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
    "tunbed-wire.")

WIRE_HEADER = ("gateway", "sessions", "tunnel frames", "violations", "capture dropped", "data",
               "overhead %", "seq missing / reordered", "TCP retransmitted %", "TCP late %",
               "TCP lost upstream %", "TCP reordered %")

DATA_DIRS = {"local_to_remote": "gwa -> gwb", "remote_to_local": "gwb -> gwa"}


def wire_cells(p, w):
    if "tunnel_frames" not in w:
        return [p["config"], str(p["sessions"]), "audit failed"] + ["-"] * 9

    def pct(x):
        return f"{x:.3f}" if x is not None else "-"
    seq = (f"{w['seq_missing']:.0f} / {w['seq_reordered']:.0f}" if w.get("seq_frames")
           else "-")
    return [p["config"], str(p["sessions"]), f"{w['tunnel_frames']:.0f}",
            str(w["violation_frames"]), str(w["capture_dropped"]),
            DATA_DIRS.get(w.get("data_dir"), "-"), pct(w["overhead_pct"]), seq,
            pct(w["tcp_retransmitted_pct"]), pct(w.get("tcp_late_pct")),
            pct(w["tcp_resent_pct"]), pct(w["tcp_reordered_pct"])]


def wire_table(points, summary):
    """The wire audit's table, (header, rows of cells), and the lines on the points where it
    failed; None when the audit did not run."""
    rows = wire_audited(points, summary)
    if not rows:
        return None
    failed = [f"{where(p)}: {w['failed']} of {plural(w['repeats'], 'repeat')}: "
              f"{'; '.join(w['errors'])}" for p, w in rows if w.get("failed")]
    return WIRE_HEADER, [wire_cells(p, w) for p, w in rows], failed


WIRE_FAILED = "The audit failed (the raw records keep `wire_error`):"

FOOTER = ("Raw records: `runs/*.json`; every number above is in `summary.json` and "
          "`summary.csv`. Rebuild this report with `scripts/tunbed report DIR`.")


# The writers: one per output, each taking the Results.

def write_summary_json(outdir, res):
    with files.output(outdir, "summary.json") as f:
        json.dump({"meta": res.meta, "complete": res.complete, "points": res.points,
                   "summary": res.summary, "runs": res.runs}, f, indent=2)
        f.write("\n")


def write_summary_csv(outdir, res):
    with files.output(outdir, "summary.csv") as f:
        w = csv.writer(f)
        w.writerow(["point", "gateway", "mode", "workers", "mtu", "pattern", "sessions",
                    "repeats"] + [f"{c}_{s}" for c in COLUMNS for s in ("median", "min", "max")]
                   + ["saturated_cores", "version", "cipher", "inner_mtu"])
        for p in res.points:
            s = res.summary.get(p["key"])
            if not s:
                continue  # every run failed: in the reports, with what failed
            row = [p["key"], p["gateway"], *(p.get(k, "") for k in ("mode", "workers", "mtu",
                                                                      "pattern")),
                   p["sessions"], s["repeats"]]
            for c in COLUMNS:
                row += [s[c][k] if s[c] else "" for k in ("median", "min", "max")]
            row.append(" ".join(core_name(x) for x in s["saturated"]))
            info = s.get("gateway_info") or {}
            row += [info.get("version") or "", info.get("cipher") or "", info.get("mtu") or ""]
            w.writerow(row)


def write_plots(outdir, res):
    """plots/*.png and *.svg; returns the [Plot] drawn, in report order."""
    # Imported here, not at the top: the runner must start (and bootstrap, which installs
    # python3-matplotlib) with nothing but Python's standard library.
    from . import plots
    points = [p for p in res.points if p["key"] in res.summary]
    return [Plot(t, name, svg) for t, name, svg in
            plots.make(outdir, res.records, res.runs, points, res.summary)]


def md_cell(text):
    """A table cell of report.md: a record's text (a gateway's path, a host's name) cannot end
    the cell or the row."""
    return " ".join(text.splitlines()).replace("|", "\\|")


def md_table(f, header, rows):
    f.write("| " + " | ".join(header) + " |\n")
    f.write("|" + " --- |" * len(header) + "\n")
    for cells in rows:
        f.write("| " + " | ".join(md_cell(c) for c in cells) + " |\n")
    f.write("\n")


HOSTS_INTRO = ("Each host's facts as the run read them (the first run's), and how far its "
               "clock may be from the first client's, to which its CPU samples are aligned (the "
               "largest bound of any run).")


def host_table(records):
    """The machines of a run of several hosts, (header, rows); None for one machine."""
    machines = {}
    for r in records:
        for h in r.get("hosts") or []:
            m = machines.setdefault(h["name"], {"roles": h.get("roles", []), "facts": None,
                                                "error": 0.0})
            m["facts"] = m["facts"] or h.get("facts")
            m["error"] = max(m["error"], (h.get("clock") or {}).get("error_s", 0.0))
    if len(machines) < 2:
        return None
    header = ["host", "roles", "kernel", "CPUs", "NIC (driver, MTU, queues)", "offloads on",
              "congestion control", "rmem_max / wmem_max", "tcp_rmem / tcp_wmem",
              "clock error ms"]
    rows = []
    for name, m in machines.items():
        f = m["facts"] or {}
        nic = f.get("nic") or {}
        queues = ", ".join(f"{k} {v}" for k, v in (nic.get("queues") or {}).items()) or "-"
        offs = ", ".join(k.replace("-offload", "").replace("generic-", "g")
                         for k, v in (nic.get("offloads") or {}).items() if v == "on") or "-"
        rows.append([name, ", ".join(m["roles"]), f.get("kernel", "-"),
                     f"{f.get('cpus', '-')} ({f.get('cpu_model', '?')})",
                     f"{nic.get('name') or '-'} ({nic.get('driver') or '-'}, "
                     f"{nic.get('mtu') or '-'}, {queues})", offs,
                     f.get("net.ipv4.tcp_congestion_control", "-"),
                     f"{f.get('net.core.rmem_max', '-')} / {f.get('net.core.wmem_max', '-')}",
                     f"{f.get('net.ipv4.tcp_rmem', '-')} / {f.get('net.ipv4.tcp_wmem', '-')}",
                     f"{m['error'] * 1e3:.3f}"])
    return header, rows


COST_INTRO = (
    "What a packet costs in gregw (its stats' total.cost, docs/gregw.md), medians over the "
    "repeats, along the data's way: the sending gateway reads superpackets from TUN and sends "
    "them, the receiving one takes them from the wire and writes them into TUN. Segments a "
    "system call carries, system calls per GB, the share of TUN writes that carried one "
    "segment (nothing merged), and each gateway's wake-ups per GB.")

COST_HEADER = ("gateway", "sessions", "sender: segments/call", "sender: calls/GB",
               "receiver: segments/call", "receiver: calls/GB", "receiver: 1-segment writes",
               "wake-ups/GB sender / receiver")


def cost_table(records, points):
    """gregw's cost along the data's way, (header, rows); None without gregw stats."""
    def med(xs):
        xs = sorted(x for x in xs if x is not None)
        return xs[len(xs) // 2] if xs else None

    def num(x, digits=1):
        return "-" if x is None else f"{x:,.{digits}f}"

    rows = []
    for p in points:
        runs = [r for r in records if r["point"]["key"] == p["key"]
                and all("cost" in ((r.get("gateway") or {}).get(g) or {}).get("total", {})
                        for g in ("gwa", "gwb"))]
        if not runs:
            continue
        snd, rcv = ("gwb", "gwa") if p.get("pattern") == "pull" else ("gwa", "gwb")
        cells = {k: [] for k in ("ss", "sc", "rs", "rc", "one", "sw", "rw")}
        for r in runs:
            s = r["gateway"][snd]["total"]["cost"]
            c = r["gateway"][rcv]["total"]["cost"]
            hist = c["wire_to_tun"]["superpacket_segments"]
            writes = sum(hist.values())
            cells["ss"].append(s["tun_to_wire"]["segments_per_syscall"])
            cells["sc"].append(s["tun_to_wire"]["syscalls_per_gb"])
            cells["rs"].append(c["wire_to_tun"]["segments_per_syscall"])
            cells["rc"].append(c["wire_to_tun"]["syscalls_per_gb"])
            cells["one"].append(100.0 * hist.get("1", 0) / writes if writes else None)
            cells["sw"].append(s["wakeups_per_gb"])
            cells["rw"].append(c["wakeups_per_gb"])
        m = {k: med(v) for k, v in cells.items()}
        rows.append([p["config"], str(p["sessions"]), num(m["ss"]), num(m["sc"], 0),
                     num(m["rs"]), num(m["rc"], 0),
                     "-" if m["one"] is None else f"{m['one']:.0f}%",
                     f"{num(m['sw'], 0)} / {num(m['rw'], 0)}"])
    return (COST_HEADER, rows) if rows else None


def wire_section(f, points, summary):
    """report.md's "Wire audit" section, if the audit ran."""
    wire = wire_table(points, summary)
    if not wire:
        return
    header, rows, failed = wire
    f.write(f"## Wire audit\n\n{WIRE_INTRO}\n\n")
    md_table(f, header, rows)
    if failed:
        f.write(f"{WIRE_FAILED}\n\n")
        for line in failed:
            f.write(f"- {line}\n")
        f.write("\n")


def write_markdown(outdir, res, plots):
    meta = res.meta
    with files.output(outdir, "report.md") as f:
        f.write(f"# {title(meta)}\n\n")
        if not res.complete:
            f.write(f"**{PARTIAL}**\n\n")
        for line in headlines(res):
            f.write(f"- {line}\n")
        f.write("\n")
        for note in meta.get("notes", []):
            f.write(f"> {note}\n")
        if meta.get("notes"):
            f.write("\n")
        f.write(f"{congestion_line(res)}\n\n{method(meta)}\n\n")
        md_table(f, *point_table(res.points, res.summary))
        peers = peer_table(res.points, res.summary, res.failed)
        if peers:
            f.write(f"## Gateways side by side\n\n{PEER_INTRO}\n\n")
            md_table(f, *peers)
        hosts = host_table(res.records)
        if hosts:
            f.write(f"## Hosts\n\n{HOSTS_INTRO}\n\n")
            md_table(f, *hosts)
        cost = cost_table(res.records, res.points)
        if cost:
            f.write(f"## What a packet costs in gregw\n\n{COST_INTRO}\n\n")
            md_table(f, *cost)
        wire_section(f, res.points, res.summary)
        for p in plots:
            f.write(f"## {p.title}\n\n![{p.title}](plots/{p.name}.svg)\n\n"
                    f"(PNG: [plots/{p.name}.png](plots/{p.name}.png))\n\n")
        f.write(f"{FOOTER}\n")


def words(text):
    """Text for HTML: escaped, with `code` as <code>."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text))


def inline_svg(svg, prefix):
    """A plot's SVG document as an element of an HTML page: without the XML prolog and the
    metadata (links to vocabularies, never loaded, but links all the same), and with every id
    and reference to one prefixed, since the page's plots share one space of ids."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\bid="([^"]*)"', lambda m: f'id="{prefix}{m[1]}"', svg)
    return re.sub(r'(href="#|url\(#)', lambda m: m[1] + prefix, svg)


HTML_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 80em; padding: 0 1em;
       line-height: 1.4; color: #222; }
.partial { color: #b00; font-weight: bold; }
.headline li { font-weight: bold; margin: 0.3em 0; }
blockquote { border-left: 3px solid #ccc; margin: 1em 0; padding: 0 1em; color: #555; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
th { background: #f3f3f3; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def html_table(header, rows, id_):
    out = [f'<table id="{id_}">\n<thead><tr>'
           + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead>\n<tbody>\n"]
    for cells in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>\n")
    out.append("</tbody>\n</table>\n")
    return "".join(out)


def write_html(outdir, res, plots):
    """report.html: report.md's content in one file that needs nothing else, every plot
    inline as SVG. Its policy forbids the page to load anything at all."""
    meta = res.meta
    out = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
           'style-src \'unsafe-inline\'">\n'
           f"<title>{html.escape(title(meta))}</title>\n<style>{HTML_STYLE}</style>\n"
           f"</head>\n<body>\n<h1>{html.escape(title(meta))}</h1>\n"]
    if not res.complete:
        out.append(f'<p class="partial">{html.escape(PARTIAL)}</p>\n')
    out.append('<ul class="headline" id="headline">\n'
               + "".join(f"<li>{html.escape(line)}</li>\n" for line in headlines(res))
               + "</ul>\n")
    if meta.get("notes"):
        out.append("<blockquote>\n" + "".join(f"<p>{html.escape(n)}</p>\n"
                                              for n in meta["notes"]) + "</blockquote>\n")
    out.append(f"<p>{words(congestion_line(res))}</p>\n<p>{words(method(meta))}</p>\n")
    out.append(html_table(*point_table(res.points, res.summary), "points"))
    peers = peer_table(res.points, res.summary, res.failed)
    if peers:
        out.append(f'<h2 id="peers">Gateways side by side</h2>\n<p>{words(PEER_INTRO)}</p>\n')
        out.append(html_table(*peers, "peer-table"))
    hosts = host_table(res.records)
    if hosts:
        out.append(f'<h2 id="hosts">Hosts</h2>\n<p>{words(HOSTS_INTRO)}</p>\n')
        out.append(html_table(*hosts, "hosts"))
    cost = cost_table(res.records, res.points)
    if cost:
        out.append(f'<h2 id="cost">What a packet costs in gregw</h2>\n<p>{words(COST_INTRO)}</p>\n')
        out.append(html_table(*cost, "cost"))
    wire = wire_table(res.points, res.summary)
    if wire:
        header, rows, failed = wire
        out.append(f'<h2 id="wire-audit">Wire audit</h2>\n<p>{words(WIRE_INTRO)}</p>\n')
        out.append(html_table(header, rows, "wire"))
        if failed:
            out.append(f"<p>{words(WIRE_FAILED)}</p>\n<ul>\n"
                       + "".join(f"<li>{html.escape(line)}</li>\n" for line in failed)
                       + "</ul>\n")
    for i, p in enumerate(plots):
        out.append(f'<h2>{html.escape(p.title)}</h2>\n<figure class="plot" '
                   f'id="plot-{html.escape(p.name)}">\n{inline_svg(p.svg, f"plot{i}-")}\n'
                   f"<figcaption>{html.escape(p.title)} (also plots/{html.escape(p.name)}.svg "
                   f"and .png)</figcaption>\n</figure>\n")
    out.append(f"<p>{words(FOOTER)}</p>\n</body>\n</html>\n")
    files.write(outdir, "report.html", "".join(out))


def write(outdir, meta, complete=True, records=None):
    """Writes summary.json, summary.csv, the plots, report.md and report.html from the raw
    records (outdir/runs/ unless given, in today's layout); returns the headline lines."""
    res = analyse(load_runs(outdir) if records is None else records, meta, complete)
    write_summary_json(outdir, res)
    write_summary_csv(outdir, res)
    plots = write_plots(outdir, res)
    write_markdown(outdir, res, plots)
    write_html(outdir, res, plots)
    return headlines(res)
