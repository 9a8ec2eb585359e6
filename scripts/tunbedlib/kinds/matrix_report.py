"""The report of a gateway scenario (ras, compare, run): from its raw records (runs/*.json),
the analysis (analysis.py, one Results), the order of the points (order()), and a document
(document.py): the headline in words, the table of points, the gateways side by side, the
hosts, gregw's cost, the wire audit, the plots and the numbers; render.py writes it. The words
and tables are made once here, for report.md and report.html alike."""

import dataclasses

from .. import analysis
from ..document import Csv, Document, Plot, Section, Table, footer, title
from . import matrix_baselines, matrix_pairview, matrix_scaling, matrix_verdict

COLUMNS = ("bits_per_second", "retransmits", "retransmits_per_gb", "jain", "box_cpu_s_per_gb",
           "gateway_cpu_s_per_gb", "rr_idle_p50_ms", "rr_load_p50_ms", "rr_load_p99_ms")


@dataclasses.dataclass
class Results:
    """What the document is made of: the run's meta, whether it completed, the raw records,
    each run's numbers (analysis.analyse), each point's (analysis.summarise), the points in
    report order (also those of which every run failed), and the runs whose gateway did not
    come up."""
    meta: dict
    complete: bool
    records: list
    runs: list
    summary: dict
    points: list
    failed: list = dataclasses.field(default_factory=list)
    noise_floor: float = None  # percent: the median over the points of their repeats' range


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
    """The Results of a run's raw records (today's layout, records.py), every run and point
    with its bottleneck verdict (matrix_verdict.py)."""
    runs = matrix_verdict.judge_runs(records, [analysis.analyse(r) for r in records])
    failed = meta.get("failed") or []
    summary = matrix_verdict.judge_points(analysis.summarise(runs), runs)
    return Results(meta=meta, complete=complete, records=records, runs=runs, summary=summary,
                   points=order(records + failed), failed=failed,
                   noise_floor=matrix_verdict.spread_flags(summary, runs))


# What both reports say, in words and tables.

fmt = analysis.fmt


def gbps(x):
    return f"{x / 1e9:.2f}" if x is not None else "-"


def headline(points, summary):
    """The report's first lines: a line per point measured (per gateway configuration, every
    session count, ascending), in words, with what limited each figure."""
    lines = []
    # A run of several transit MTUs or patterns names them, or two of its lines would read
    # the same.
    several = len({(p.get("mtu"), p.get("pattern")) for p in points}) > 1
    for config, ps in matrix_scaling.by_config(points).items():
        for p in (p for p in ps if p["key"] in summary):
            s = summary[p["key"]]
            t = s["bits_per_second"]
            rate = f"{gbps(t['median'])} Gbit/s" if t else "no throughput"
            if t and t["n"] > 1:
                rate += f" ({gbps(t['min'])}-{gbps(t['max'])})"
            why = f"; {s['verdict_reason']}" if s.get("verdict_reason") else ""
            variant = (f", transit MTU {p['mtu'] or 'of the topology'}, {p['pattern']}"
                       if several else "")
            lines.append(f"{where(p)}{variant}: {rate}, "
                         f"{analysis.saturation_words(s['saturated'])}{why}")
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
    return (headline(res.points, res.summary) + matrix_pairview.headline(res.points, res.records)
            + failed_headline(res.points, res.failed)
            + wire_headline(res.points, res.summary) + verify_headline(res.points, res.summary)
            + matrix_verdict.foreign_lines(res.runs)
            + matrix_verdict.spread_line(res.points, res.summary, res.noise_floor))


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
            "gateways have none). Limited by: what limited the figure (docs/scaling.md), "
            "the median repeat's verdict: the gateway (its threads at 95% of their core or "
            "90% of their budget, nothing else saturated), the generator (tunbed-traffic at "
            "its limit, or within 10% of route's figure at the same sessions in this run), "
            "the link (within 5% of the topology's rate cap), the box (every core saturated, "
            "the gateway below its allowance) or unclear; only a gateway-bound figure "
            "measures the gateway.")


POINT_HEADER = ("gateway", "sessions", "Gbit/s", "limited by", "retransmits", "Jain",
                "box CPU-s/GB", "gateway CPU-s/GB", "RTT idle p50 ms", "RTT loaded p50 / p99 ms",
                "saturated cores")


def point_cells(p, s):
    sat = analysis.saturated_names(s["saturated"])
    idle = f"{s['rr_idle_p50_ms']['median']:.3f}" if s["rr_idle_p50_ms"] else "-"
    loaded = "-"
    if s["rr_load_p50_ms"] and s["rr_load_p99_ms"]:
        loaded = f"{s['rr_load_p50_ms']['median']:.3f} / {s['rr_load_p99_ms']['median']:.3f}"
    return [p["config"], str(p["sessions"]), fmt(s["bits_per_second"], 1e-9),
            matrix_verdict.cell(s), fmt(s["retransmits"], 1, 0), fmt(s["jain"], 1, 3),
            fmt(s["box_cpu_s_per_gb"], 1, 1), fmt(s["gateway_cpu_s_per_gb"], 1, 1), idle, loaded,
            sat]


def point_table(points, summary):
    """The table of points: (header, rows of cells); a point of which no run came up has
    FAILED for its numbers."""
    return POINT_HEADER, [point_cells(p, summary[p["key"]]) if p["key"] in summary else
                          [p["config"], str(p["sessions"]), "FAILED"] + ["-"] * 8
                          for p in points]


PEER_INTRO = (
    "The gateways side by side, a row per gateway and session count (medians over the "
    "repeats): the version and cipher each ran with, the MTU of the device the tunnel's inner "
    "packets enter (read on gwa), throughput and what limited it, the CPU-seconds per GB of "
    "the whole box and of the gateway's own processes, TCP retransmissions per GB received, "
    "request/response round trips idle and under load, Jain's fairness index over the "
    "sessions, and on each saturated core the thread that ran on it most.")

PEER_HEADER = ("sessions", "gateway", "version", "cipher", "inner MTU", "Gbit/s", "limited by",
               "box CPU-s/GB", "gateway CPU-s/GB", "retransmits/GB", "RTT idle p50 ms",
               "RTT loaded p50 ms", "Jain", "saturated thread")


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
            rows.append([str(p["sessions"]), p["config"], "-", "-", "-", "FAILED"] + ["-"] * 7
                        + [errors.get(p["key"], "-")])
            continue
        info = s.get("gateway_info") or {}
        rows.append([str(p["sessions"]), p["config"], info.get("version") or "-",
                     info.get("cipher") or "-", str(info.get("mtu") or "-"),
                     median(s["bits_per_second"], 2, 1e-9), matrix_verdict.cell(s),
                     median(s["box_cpu_s_per_gb"], 1),
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


def wire_section(points, summary):
    """The wire audit's section: its table and the points where it failed; None when the
    audit did not run."""
    rows = wire_audited(points, summary)
    if not rows:
        return None
    failed = [f"{where(p)}: {w['failed']} of {plural(w['repeats'], 'repeat')}: "
              f"{'; '.join(w['errors'])}" for p, w in rows if w.get("failed")]
    return Section("Wire audit", "wire-audit", [WIRE_INTRO],
                   Table(WIRE_HEADER, [wire_cells(p, w) for p, w in rows], "wire"),
                   [WIRE_FAILED] if failed else [], failed)


WIRE_FAILED = "The audit failed (the raw records keep `wire_error`):"


def summary_rows(res):
    """summary.csv's rows: a point a row, with its version, cipher and inner MTU; a point of
    which every run failed is in the reports only, with what failed."""
    for p in res.points:
        s = res.summary.get(p["key"])
        if not s:
            continue
        row = [p["key"], p["gateway"], *(p.get(k, "") for k in ("mode", "workers", "mtu",
                                                                  "pattern")),
               p["sessions"], s["repeats"]]
        for c in COLUMNS:
            row += [s[c][k] if s[c] else "" for k in ("median", "min", "max")]
        row.append(analysis.saturated_names(s["saturated"], sep=" "))
        info = s.get("gateway_info") or {}
        row += [info.get("version") or "", info.get("cipher") or "", info.get("mtu") or "",
                s.get("verdict") or ""]
        yield row


SUMMARY_HEADER = (["point", "gateway", "mode", "workers", "mtu", "pattern", "sessions", "repeats"]
                  + [f"{c}_{s}" for c in COLUMNS for s in ("median", "min", "max")]
                  + ["saturated_cores", "version", "cipher", "inner_mtu", "verdict"])


def drawing(name, *args):
    """How to draw one of matrix_plots.py's plots: matplotlib is imported only when it is drawn (the
    runner must start, and bootstrap, with nothing but Python's standard library)."""
    def draw(outdir):
        from . import matrix_plots
        return getattr(matrix_plots, name)(outdir, *args)
    return draw


def plot_list(res):
    """The plots, in report order: throughput against sessions, the same beside the RAS
    document's published shape (with two session counts or more), cost and latency against
    sessions, and the per-core CPU of the median repeat at the fewest and the most sessions
    of each configuration."""
    points = [p for p in res.points if p["key"] in res.summary]
    out = [Plot("Throughput against sessions", "throughput",
                draw=drawing("throughput", points, res.summary, matrix_verdict.SHORT.get))]
    shape = matrix_scaling.ras_shape(points, res.summary, matrix_verdict.SHORT.get)
    if shape:
        out.append(Plot("Throughput against sessions beside the RAS document's shape",
                        "scaling", draw=drawing("ras_shape", shape)))
    out += [Plot("CPU-seconds per GB", "cost", draw=drawing("cost", points, res.summary)),
            Plot("Latency under load", "latency", draw=drawing("latency", points, res.summary))]
    for config, ps in matrix_scaling.by_config(points).items():
        for n in sorted({ps[0]["sessions"], ps[-1]["sessions"]}):
            point = next(q for q in ps if q["sessions"] == n)
            want = res.summary[point["key"]]["median_repeat"]
            rec = next((r for r in res.records if r["point"]["key"] == point["key"]
                        and r["repeat"] == want), None)
            t = f"{config}, {n} session{'s' if n > 1 else ''}: per-core CPU"
            if rec:
                out.append(Plot(t, f"cores-{point['key']}",
                                draw=drawing("cores", f"cores-{point['key']}", rec, t)))
    return out


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
FLOOR_HEADER = "gateway CPU-s/GB (x the copy floor)"


def copy_floor(meta):
    """What the four copies of each byte cost the pair of gateways at the least, CPU-s/GB:
    four times the copy the run measured as it started (machine.copy_cost); None when it did
    not (on hosts, or a run from before)."""
    one = meta.get("copy_s_per_gb")
    return 4 * one if isinstance(one, (int, float)) and not isinstance(one, bool) else None


def cost_intro(meta):
    floor = copy_floor(meta)
    if floor is None:
        return COST_INTRO + (" No copy floor: it is measured on the runner's machine, so only "
                             "for a run in namespaces.")
    return COST_INTRO + (
        f" The copy floor: a userspace gateway copies every byte four times (its TUN read, the "
        f"send, the peer's receive, the peer's TUN write), which costs this machine at least "
        f"{floor:.2f} CPU-s/GB, four times one copy's {meta['copy_s_per_gb']:.3f} (64 KB at a "
        f"time over 32 MB, measured as the run started); the last column is gregw's gateway "
        f"CPU-s/GB and its multiple of that floor.")


def cost_table(records, points, summary=None, floor=None):
    """gregw's cost along the data's way, (header, rows); None without gregw stats. With
    floor (copy_floor), a last column: the point's gateway CPU-s/GB (summary's median) and
    its multiple of floor."""
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
        if floor:
            gw = ((summary or {}).get(p["key"]) or {}).get("gateway_cpu_s_per_gb")
            gw = gw and gw.get("median")
            rows[-1].append("-" if gw is None else f"{gw:.2f} ({gw / floor:.1f}x)")
    if not rows:
        return None
    return (COST_HEADER + (FLOOR_HEADER,) if floor else COST_HEADER), rows


def document(res, plots=None):
    """The report of res (Results), with plots (plot_list(res) unless given)."""
    meta = res.meta
    sections = [Section(table=Table(*point_table(res.points, res.summary), "points"))]
    for heading, id_, intro, table, table_id in (
            ("Gateways side by side", "peers", PEER_INTRO,
             peer_table(res.points, res.summary, res.failed), "peer-table"),
            ("Against the baselines", "baselines", matrix_baselines.INTRO,
             matrix_baselines.table(res.points, res.summary), "baselines-table"),
            ("Scaling with workers", "scaling", matrix_scaling.INTRO,
             matrix_scaling.scaling_table(res.points, res.summary, matrix_verdict.cell),
             "scaling-table"),
            ("Hosts", "hosts", HOSTS_INTRO, host_table(res.records), "hosts"),
            ("What a packet costs in gregw", "cost", cost_intro(meta),
             cost_table(res.records, res.points, res.summary, copy_floor(meta)), "cost")):
        if table:
            sections.append(Section(heading, id_, [intro], Table(*table, table_id)))
    wire = wire_section(res.points, res.summary)
    if wire:
        sections.append(wire)
    return Document(
        title=title(meta), complete=res.complete, headline=headlines(res),
        notes=list(meta.get("notes", [])),
        paragraphs=[congestion_line(res), method(meta)] + list(filter(None, [
            matrix_verdict.budget_paragraph(meta, res.runs)])),
        sections=sections, plots=plot_list(res) if plots is None else plots, footer=footer(),
        summary={"meta": meta, "complete": res.complete, "noise_floor_pct": res.noise_floor,
                 "points": res.points,
                 "baselines": matrix_baselines.ratios(res.points, res.summary),
                 "summary": res.summary, "runs": res.runs},
        csv=[Csv("summary", SUMMARY_HEADER, list(summary_rows(res)))])
