"""The plots of tunbed intranet's report (matplotlib, PNG and SVG, as plots.py writes them):
throughput against streams per profile with its cap drawn, round trips idle against loaded
(ICMP echo and TCP probe), and the spread of the streams' rates at each stream count."""

from .. import plots
from ..plots import plt
from . import intranet_analysis as ir


def streams_axis(ax, xs):
    plots.counts_axis(ax, xs, "TCP streams")


def throughput(outdir, res):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = []
    for p in res.profiles:
        ps = [s for s in ir.points(res, p, "tcp") if s["bits_per_second"]]
        if not ps:
            continue
        x = [s["streams"] for s in ps]
        xs += x
        med = [s["bits_per_second"]["median"] / 1e9 for s in ps]
        lo = [m - s["bits_per_second"]["min"] / 1e9 for m, s in zip(med, ps)]
        hi = [s["bits_per_second"]["max"] / 1e9 - m for m, s in zip(med, ps)]
        line = ax.errorbar(x, med, yerr=[lo, hi], marker="o", capsize=4, label=ir.title(p))
        ref, word = ir.reference(p)
        if ref:
            ax.axhline(ref / 1e9, color=line[0].get_color(), linestyle="--", alpha=0.6,
                       label=f"{ir.title(p)}: {word}")
    if not xs:
        plt.close(fig)
        return None
    streams_axis(ax, xs)
    ax.set_ylabel("throughput, Gbit/s (median, min-max)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.set_title("Throughput against streams, and each profile's cap")
    return plots.save(fig, outdir, "throughput")


def rtt(outdir, res):
    """Grouped bars per profile: echo and TCP probe, idle and loaded (medians)."""
    bars = (("ICMP echo idle", "idle", "icmp_avg_ms"),
            ("ICMP echo loaded", "loaded", "icmp_avg_ms"),
            ("TCP probe idle (p50)", "idle", "rr_p50_ms"),
            ("TCP probe loaded (p50)", "loaded", "rr_p50_ms"))
    rows = []
    for p in res.profiles:
        idle = next(iter(ir.points(res, p, "idle")), None)
        loaded = ir.loaded_point(res, p)
        runs = {"idle": idle, "loaded": loaded}
        rows.append((ir.title(p), [ir.med(runs[which], key) if runs[which] else None
                                   for _, which, key in bars]))
    if not any(v for _, vals in rows for v in vals):
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2))
    width = 0.8 / len(bars)
    for i, (label, _, _) in enumerate(bars):
        xs = [k + (i - (len(bars) - 1) / 2) * width for k in range(len(rows))]
        ax.bar(xs, [vals[i] or 0 for _, vals in rows], width, label=label)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([name for name, _ in rows], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("round trip, ms (median over repeats)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Round trip idle and during the transfer (most streams)")
    return plots.save(fig, outdir, "rtt")


def spread(outdir, res):
    """Every stream's rate of every repeat at each stream count, a panel per profile, with
    the fair share (the total over the streams) marked."""
    panels = [(p, [s for s in ir.points(res, p, "tcp") if s["per_stream_bps"]])
              for p in res.profiles]
    panels = [(p, ps) for p, ps in panels if ps]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1, 4), squeeze=False)
    for ax, (p, ps) in zip(axes[0], panels):
        for s in ps:
            rates = [r / 1e6 for rep in s["per_stream_bps"] for r in rep if r is not None]
            ax.scatter([s["streams"]] * len(rates), rates, s=12, alpha=0.5, color="tab:blue")
            if s["bits_per_second"] and s["streams"]:
                ax.scatter([s["streams"]], [s["bits_per_second"]["median"] / 1e6 / s["streams"]],
                           marker="_", s=300, color="tab:red")
        streams_axis(ax, [s["streams"] for s in ps])
        ax.set_ylim(bottom=0)
        ax.set_title(ir.title(p), fontsize=9)
    axes[0][0].set_ylabel("per stream, Mbit/s (red: the fair share)")
    fig.suptitle("Per-stream throughput: every stream of every repeat")
    return plots.save(fig, outdir, "streams")
