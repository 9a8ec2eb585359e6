"""The scaling answer of a gateway scenario (docs/scaling.md): for each gregw configuration run
with more than one worker count, per session count and worker count, the throughput, its share
per worker, the scaling efficiency against one worker (N workers' figure over N times one
worker's at the same sessions), the gateway's cores per Gbit/s and what limited the figure.
Pure: from the report's points and summary."""

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
