"""Each gateway against the bed's baselines measured in the same run (docs/runner.md): its
median throughput over that of `route` (plain forwarding, the bed's ceiling), `vxlan` (the
kernel's tunnel with superpackets on the wire) and `vxlan-frames` (the kernel's tunnel with
frames of the MTU on the wire), at the same sessions, MTU and pattern. Pure: from the report's
points and summary."""

BASELINES = ("route", "vxlan", "vxlan-frames")

INTRO = (
    "Each configuration's throughput (median over the repeats) as a multiple of the baselines "
    "measured in the same run at the same sessions: `route`, plain forwarding, the bed's "
    "ceiling; `vxlan`, the kernel's tunnel, superpackets on the wire; `vxlan-frames`, the "
    "kernel's tunnel with frames of the MTU on the wire, to compare with gregw's `+frames` "
    "like with like. `-`: the baseline was not measured at that point.")


def like(p):
    """What a point shares with its baselines: (sessions, mtu, pattern)."""
    return (p["sessions"], p.get("mtu"), p.get("pattern"))


def bps(summary, p):
    s = (summary.get(p["key"]) or {}).get("bits_per_second")
    return s["median"] if s else None


def ratios(points, summary):
    """{point key: {baseline: ratio}} for every point measured beside a baseline of the run."""
    base = {}
    for p in points:
        if p["gateway"] in BASELINES and bps(summary, p):
            base[(p["gateway"], like(p))] = bps(summary, p)
    out = {}
    for p in points:
        x = bps(summary, p)
        if x is None:
            continue
        r = {b: x / base[(b, like(p))] for b in BASELINES
             if (b, like(p)) in base and b != p["gateway"]}
        if r:
            out[p["key"]] = r
    return out


def table(points, summary):
    """(header, rows), a row per point, a column per baseline the run measured; None when the
    run measured no baseline beside another gateway."""
    measured = [b for b in BASELINES if any(p["gateway"] == b for p in points)]
    r = ratios(points, summary)
    if not measured or not r:
        return None
    header = ("sessions", "gateway", "Gbit/s", *(f"x {b}" for b in measured))
    rows = []
    for p in sorted(points, key=lambda p: p["sessions"]):  # stable: the run's order within
        x = bps(summary, p)
        cells = [(f"{r[p['key']][b]:.2f}" if b in r.get(p["key"], {}) else "-")
                 for b in measured]
        rows.append([str(p["sessions"]), p["config"], f"{x / 1e9:.2f}" if x else "-", *cells])
    return header, rows
