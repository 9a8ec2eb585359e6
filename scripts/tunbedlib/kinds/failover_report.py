"""The failover's report: per run and per fault (median, min-max over the repeats), the headline
in words, the runs' table, and two plots per fault (throughput over time at 100 ms with the
fault, takeover, repair and failback marked; each gateway's CPU per core), as a document
(document.py). The raw records (runs/FAULT-rN.json) are failover.py's; docs/failover.md defines
each figure. Pure: tested on a made-up record (tests/python/test_failover.py)."""

from ..document import Csv, Document, Plot, Section, Table, footer
from .failover_analysis import FAULT_WORDS, UDP_SIZE, analyse, fmt, summarise

def headline(summary):
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
    return lines


def method(s):
    return (f"ras-pair topology: gwb1 active, gwb2 passive (hot) behind the service address "
            f"198.18.6.1, announced over BGP with BFD (FRR) to core; gregw mode {s['mode']}, key "
            f"7, {s['workers']} worker(s). {s['sessions']} verified TCP sessions (pull) and one "
            f"UDP stream of {s['udp_rate'] / 1e6:g} Mbit/s ({UDP_SIZE}-byte datagrams); fault at "
            f"{s['fail_at']:g} s, repaired {s['failback_after']:g} s later, {s['tail']:g} s "
            f"more; {s['repeats']} repeat(s), medians with min-max. Outage: UDP datagrams lost "
            "over the stream's rate (RFC 6201). CPU: every core and every gregw thread, 10 "
            "times a second. Timings come from a shared 2-core machine that other jobs keep "
            "busy: compare them with care.")


RUN_COLUMNS = (("fault", "fault"), ("repeat", "repeat"), ("detection s", "detection_s"),
               ("takeover s", "takeover_s"), ("outage s", "outage_s"),
               ("TCP gap s", "tcp_gap_s"), ("survived", None), ("wrong bytes", "wrong_bytes"),
               ("retransmits", "retransmits"), ("failback s", "failback_s"),
               ("failback outage s", "failback_outage_s"),
               ("gwa seq resyncs", "gwa_seq_resyncs"))
CSV_COLUMNS = ("fault", "repeat", "detection_s", "takeover_s", "failback_s", "outage_s",
               "udp_lost", "failback_outage_s", "failback_udp_lost", "tcp_gap_s",
               "failback_tcp_gap_s", "sessions", "survived", "reset", "bytes", "wrong_bytes",
               "retransmits", "gbps", "passive_decap_packets", "gwa_seq_resyncs",
               "gwa_seq_out_of_window", "complete")


def cell(x):
    return "-" if x is None else str(x)


def run_cells(r):
    return [f"{r['survived']}/{r['sessions']}" if key is None else cell(r[key])
            for _, key in RUN_COLUMNS]


def drawing(name, *args):
    """How to draw one of failover_plots.py's plots (matplotlib imported only then)."""
    def draw(outdir):
        from . import failover_plots
        return getattr(failover_plots, name)(outdir, *args)
    return draw


def plot_list(recs):
    """Per fault, its first run: throughput over time with the fault, takeover, repair and
    failback marked; each gateway's CPU per core."""
    out, done = [], set()
    for rec in sorted(recs, key=lambda r: (r["repeat"], r["t_start"])):
        fault = rec["fault"]
        if fault in done:
            continue
        done.add(fault)
        out += [Plot(f"{FAULT_WORDS[fault]}: throughput over time (repeat {rec['repeat']})",
                     f"{fault}-throughput", draw=drawing("throughput", rec)),
                Plot(f"{FAULT_WORDS[fault]}: each gateway's gregw CPU per core",
                     f"{fault}-cpu", draw=drawing("cpu", rec))]
    return out


TITLE = "the RAS gateway pair"


def document(meta, recs, complete):
    """The report of a failover run's records."""
    recs = sorted(recs, key=lambda r: (r["repeat"], r["t_start"]))
    rows = [analyse(r) for r in recs]
    summary = summarise(rows)
    return Document(
        title=f"tunbed failover: {meta.get('title') or TITLE}", complete=complete,
        headline=headline(summary),
        sections=[Section("Method", "method", [method(meta["settings"])]),
                  Section("Runs", "runs", [], Table(tuple(h for h, _ in RUN_COLUMNS),
                                                    [run_cells(r) for r in rows], "runs"))],
        plots=plot_list(recs), footer=footer(),
        summary={"meta": meta, "complete": complete, "runs": rows, "summary": summary},
        csv=[Csv("summary", list(CSV_COLUMNS), [[r[k] for k in CSV_COLUMNS] for r in rows])])
