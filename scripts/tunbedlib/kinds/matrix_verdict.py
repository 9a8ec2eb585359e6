"""The bottleneck verdict of every run and point of a gateway scenario (verdict.py's rules,
docs/scaling.md): each run judged from its record with the generator's ceiling (the kernel's
`route` at the same sessions, transit MTU and pattern, measured in the same run) and the
topology's rate cap (the record's rate_cap_bps); each point's verdict is its median repeat's,
with the count of every verdict over its repeats. And the words the report puts beside a
figure: what limited it, that a figure the gateway did not limit does not measure the
gateway, and whether the machine's noise lets the figure be trusted (other processes' CPU, a
point whose repeats spread far wider than the run's others)."""

import statistics

from .. import diff, verdict
from . import matrix_baselines

# A point's repeats are flagged when their relative range is more than this many times the
# run's noise floor (diff.noise_floor: the median of every point's): half the points of any
# run spread more than the median, so the median itself would flag noise as noise; twice it
# is an outlier among the run's own points.
WIDE_SPREAD = 2.0

SHORT = {"gateway": "gateway", "generator": "generator: measures the generator, not the gateway",
         "link": "link: measures the link, not the gateway",
         "box": "box: measures the box, not the gateway",
         "unclear": "unclear: does not measure the gateway"}


def ceilings(records, runs):
    """{matrix_baselines.like(point): the median throughput of route's runs there}."""
    by = {}
    for rec, run in zip(records, runs):
        p = rec["point"]
        if p.get("gateway") == "route" and run["bits_per_second"] is not None and \
                run["complete"]:
            by.setdefault(matrix_baselines.like(p), []).append(run["bits_per_second"])
    return {k: statistics.median(v) for k, v in by.items()}


def judge_runs(records, runs):
    """Adds to each run (analysis.analyse of its record) `verdict`, `verdict_reason` (the
    report's sentence), `verdict_hosts` (hosts mode: each machine's), `ceiling_bps`,
    `rate_cap_bps`, `budgeted_softirq` and the CPU of processes tunbed did not start
    (`foreign`: per machine; `foreign_flagged`)."""
    tops = ceilings(records, runs)
    for rec, run in zip(records, runs):
        p = rec["point"]
        # route's own runs are the ceiling: judged by their CPU alone.
        ceiling = None if p.get("gateway") == "route" else tops.get(matrix_baselines.like(p))
        cap = rec.get("rate_cap_bps")
        v = verdict.judge(rec, run["bits_per_second"], ceiling, cap)
        several = len(v["hosts"]) > 1
        run.update({"verdict": v["verdict"], "verdict_reason": v["sentence"],
                    "verdict_hosts": [{"name": h["name"], "verdict": h["verdict"]}
                                      for h in v["hosts"]] if several else None,
                    "ceiling_bps": ceiling, "rate_cap_bps": cap,
                    "budgeted_softirq": [dict(h["budgeted_softirq"], host=h["name"])
                                         for h in v["hosts"] if h["budgeted_softirq"]] or None,
                    "foreign": [{k: f[k] for k in ("host", "foreign_pct", "softirq_pct",
                                                   "steal_pct", "flagged")}
                                for f in v["foreign"]],
                    "foreign_flagged": v["foreign_flagged"],
                    "foreign_words": verdict.foreign_words(v["foreign"])})
    return runs


def judge_points(summary, runs):
    """Adds to each point of summary (analysis.summarise) its median repeat's `verdict`,
    `verdict_reason` and `verdict_hosts` (hosts mode: each machine's), and `verdicts`: how
    many repeats had each."""
    for key, s in summary.items():
        rs = [r for r in runs if r["key"] == key and "verdict" in r]
        med = next((r for r in rs if r["repeat"] == s["median_repeat"]), None)
        s["verdict"] = med["verdict"] if med else None
        s["verdict_reason"] = med["verdict_reason"] if med else None
        s["verdict_hosts"] = med.get("verdict_hosts") if med else None
        counts = {}
        for r in rs:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        s["verdicts"] = counts
    return summary


def cell(s):
    """A table's cell for a point's verdict: the word, and where it is not the gateway, that
    its figure measures something else; the other repeats' verdicts where they differ; in
    hosts mode each machine's."""
    v = s.get("verdict")
    if not v:
        return "-"
    out = SHORT[v]
    others = {k: n for k, n in (s.get("verdicts") or {}).items() if k != v}
    if others:
        out += " (" + ", ".join(f"{n} {'repeat' if n == 1 else 'repeats'} {k}"
                                for k, n in sorted(others.items())) + ")"
    if s.get("verdict_hosts"):  # hosts mode: each machine's own ("none": nothing at a limit)
        out += "; per host: " + ", ".join(f"{h['name']} {h['verdict']}"
                                          for h in s["verdict_hosts"])
    return out


def foreign_lines(runs):
    """A headline line per run where processes tunbed did not start used more than
    verdict.FOREIGN_FLAG percent of a machine's CPU."""
    return [f"{r['key']} repeat {r['repeat']}: {r['foreign_words']} (flagged from "
            f"{verdict.FOREIGN_FLAG:g}%): its figure may be low"
            for r in runs if r.get("foreign_flagged")]


def budget_paragraph(meta, runs):
    """With --gateway-cpu: what the budgets were, and the softirq on the budgeted threads' CPUs
    (the median over the runs), inside the budgets or outside them; with --client-cpu, the
    generator's; None without budgets."""
    share, client = meta.get("gateway_cpu"), meta.get("client_cpu")
    if not share and not client:
        return None
    generator = (f"The generator was budgeted: each traffic client process had {client:g}% of "
                 "one core for all its threads together." if client else "")
    if not share:
        return generator
    text = (f"Emulated cores: each gateway thread had {share:g}% of one core and a pin (the "
            "cpu controller's bandwidth limit, docs/scaling.md): a fast core that much of the "
            "time, not a slower core; kernel gateways are not budgeted." +
            (f" {generator}" if generator else ""))
    seen = [(pct, b["charged"]) for r in runs for b in r.get("budgeted_softirq") or []
            for pct in b["cpus"].values()]
    if seen:
        med = statistics.median(p for p, _ in seen)
        charged = all(c for _, c in seen)
        text += (f" Softirq on the budgeted threads' CPUs: {med:.1f}% of a CPU (median); "
                 + ("the run's kernel charges what runs in a thread's context to it, inside its "
                    "budget, and only ksoftirqd's share is outside." if charged else
                    "the run's kernel accounts IRQ time apart: all of it was gateway work outside "
                    "the budgets."))
    return text


def spread_flags(summary, runs):
    """Marks each point of summary whose repeats spread wider than WIDE_SPREAD times the run's
    noise floor (`spread_pct`, `spread_flagged`); returns the floor (None: no point has two
    repeats)."""
    by = diff.values(runs)
    floor = diff.noise_floor(by)
    for key, s in summary.items():
        rel = diff.rel_range(by.get(key, []))
        s["spread_pct"] = rel
        s["spread_flagged"] = bool(floor and rel is not None and rel > WIDE_SPREAD * floor)
    return floor


def spread_line(points, summary, floor):
    """A headline line naming the points whose repeats spread wider than the noise allows."""
    wide = [p for p in points if (summary.get(p["key"]) or {}).get("spread_flagged")]
    if not wide:
        return []
    return ["repeats spread wider than this run's noise (" + "; ".join(
        f"{p['config']}, {p['sessions']} session{'s' if p['sessions'] > 1 else ''}: "
        f"{summary[p['key']]['spread_pct']:.0f}%" for p in wide) +
        f", against a noise floor of {floor:.1f}%, the median of every point's (max - min) / "
        "median): those figures are not to be trusted"]
