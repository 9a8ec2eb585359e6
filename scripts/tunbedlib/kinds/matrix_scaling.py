"""The scaling answer of a gateway scenario (docs/scaling.md): for each gregw configuration run
with more than one worker count, per session count and worker count, the throughput, its share
per worker, the scaling efficiency against one worker (N workers' figure over N times one
worker's at the same sessions), the gateway's cores per Gbit/s and what limited the figure;
and what the plot of throughput against sessions draws beside the RAS document's published
shape (ras_shape). Pure: from the report's points and summary."""

SCALING_HEADER = ("gateway", "sessions", "workers", "Gbit/s", "Gbit/s per worker",
                  "efficiency vs 1 worker", "gateway cores per Gbit/s", "limited by")

INTRO = (
    "How the gateway scales with its workers, medians over the repeats: per worker, the "
    "throughput divided by the workers; the scaling efficiency, the throughput with N workers "
    "over N times the throughput with one at the same sessions (1.00: every worker carries "
    "what one alone did); the gateway's cores per Gbit/s, its processes' CPU-seconds per GB "
    "over 8 (a GB is 8 Gbit). A figure that is not gateway-bound measures something else "
    "(its last column), and so does its efficiency.")


def family(p):
    """A point's configuration without its worker count: (gateway, mode, mtu, pattern)."""
    return (p["gateway"], p.get("mode"), p.get("mtu"), p.get("pattern"))


def median(s, key):
    x = s.get(key)
    return x["median"] if x else None


def scaling_table(points, summary, cell):
    """(header, rows) for every family of points with two worker counts or more; None when
    there is none. cell(summary of a point) is the verdict's cell."""
    fams = {}
    for p in points:
        if p.get("workers") and p["key"] in summary:
            fams.setdefault(family(p), []).append(p)
    rows = []
    for fam, ps in fams.items():
        if len({p["workers"] for p in ps}) < 2:
            continue
        one = {p["sessions"]: median(summary[p["key"]], "bits_per_second")
               for p in ps if p["workers"] == 1}
        for p in sorted(ps, key=lambda p: (p["sessions"], p["workers"])):
            s = summary[p["key"]]
            bps = median(s, "bits_per_second")
            base = one.get(p["sessions"])
            eff = bps / (p["workers"] * base) if bps is not None and base else None
            cost = median(s, "gateway_cpu_s_per_gb")
            rows.append([f"{fam[0]} {fam[1]}", str(p["sessions"]), str(p["workers"]),
                         num(bps, 1e-9), num(bps / p["workers"] if bps is not None else None,
                                             1e-9), num(eff), num(cost / 8 if cost else None),
                         cell(s)])
    return (SCALING_HEADER, rows) if rows else None


def num(x, scale=1.0):
    return "-" if x is None else f"{x * scale:.2f}"


# The RAS document ("RAS Gateway GRE Tunnel Throughput and Performance", Windows Server 1709,
# GRE, gateway VMs of 10 cores) publishes two points of its shape and nothing more: one TCP
# session saturates one core at 400-500 Mbit/s; many sessions put every core at 100% and carry
# 2.0 Gbit/s. It gives no session count for "many": the plot draws that point at the run's
# largest session count and says so.
PUBLISHED = "Windows Server 1709 RAS Gateway, GRE, 10-core VMs (published)"
PUBLISHED_ONE_BPS = (0.4e9, 0.5e9)
PUBLISHED_MANY_BPS = 2.0e9


def by_config(points):
    """{config: its points, sessions ascending}, configurations in the points' order."""
    out = {}
    for p in points:
        out.setdefault(p["config"], []).append(p)
    for ps in out.values():
        ps.sort(key=lambda p: p["sessions"])
    return out


def throughput_lines(points, summary):
    """A line of throughput against sessions per configuration that has a throughput, in
    bit/s: [(i, config, [(sessions, median, min, max, verdict)])], sessions ascending; i is the
    configuration's place among the points' (its colour in every plot)."""
    lines = []
    for i, (config, ps) in enumerate(by_config(points).items()):
        line = []
        for p in ps:
            s = summary.get(p["key"]) or {}
            t = s.get("bits_per_second")
            if t:
                line.append((p["sessions"], t["median"], t["min"], t["max"], s.get("verdict")))
        if line:
            lines.append((i, config, line))
    return lines


def ras_shape(points, summary, words):
    """What the plot of throughput against sessions beside the RAS document's shape draws, in
    bit/s: {"sessions": the run's session counts with a throughput, "lines":
    throughput_lines(), "published": [(sessions, low, high, words)], "not_gateway": the
    legend's words for the points that are not gateway-bound, or None where there is none}.
    words(verdict) is a verdict's words. None when the run measured fewer than two session
    counts: there is no shape to draw."""
    lines = throughput_lines(points, summary)
    sessions = sorted({x[0] for _, _, line in lines for x in line})
    if len(sessions) < 2:
        return None
    many = sessions[-1]
    return {"sessions": sessions, "lines": lines,
            "published": [(1, *PUBLISHED_ONE_BPS,
                           "1 session: 0.4-0.5 Gbit/s, one core saturated"),
                          (many, PUBLISHED_MANY_BPS, PUBLISHED_MANY_BPS,
                           "many sessions: 2.0 Gbit/s, every core at 100% (the document gives "
                           f"no count: drawn at {many})")],
            "not_gateway": not_gateway(lines, words)}


def not_gateway(lines, words):
    """The legend's words for the points of throughput_lines() that are not gateway-bound
    (drawn hollow), with each verdict among them in words(verdict); None where every point
    is gateway-bound."""
    verdicts = {x[4] for _, _, line in lines for x in line if x[4] != "gateway"}
    if not verdicts:
        return None
    return "hollow: not gateway-bound (" + "; ".join(
        words(v) if v else "no verdict" for v in sorted(verdicts, key=str)) + ")"
