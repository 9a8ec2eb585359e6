"""The NDR report's pictures (matplotlib, PNG and SVG in plots/, the SVG also returned for
report.html): NDR and PDR against frame size for every gateway configuration with the
generator's ceiling; per frame size, loss ratio against offered load for every trial, and
latency at 10, 50 and 90% of PDR. The IMIX is a star at its mean frame size beside the lines
of the fixed sizes."""

from .. import plots
from ..plots import plt
from .ndr_plan import DIRECT, FRACTIONS, IMIX, size_key, size_words


def by_config(summaries):
    out = {}
    for s in summaries:
        out.setdefault(s["config"], []).append(s)
    for ss in out.values():
        ss.sort(key=lambda s: size_key(s["frame"]["lan"]))
    return out


def rates(outdir, summaries, ceiling):
    """NDR and PDR (Mpps) against frame size, one colour per configuration, the ceiling in
    grey: a gateway drawn on it is at the generator's limit, not its own."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for config, ss in by_config(summaries).items():
        if config == DIRECT:
            continue
        fixed = [s for s in ss if s["frame"]["lan"] != IMIX]
        mix = [s for s in ss if s["frame"]["lan"] == IMIX]
        xs = [s["frame"]["lan"] for s in fixed]
        line = ax.plot(xs, [s["ndr"]["mpps"] for s in fixed], marker="o",
                       label=f"{config}: NDR")[0]
        ax.plot(xs, [s["pdr"]["mpps"] for s in fixed], "--", marker="^",
                color=line.get_color(), label=f"{config}: PDR")
        for s in mix:
            x = s["frame"].get("lan_mean", s["frame"]["inner_ip"] + 18)
            ys = [s[k]["mpps"] if s[k]["mpps"] is not None else float("nan") for k in ("ndr", "pdr")]
            ax.scatter([x, x], ys,
                       marker="*", s=90, color=line.get_color(),
                       label=f"{config}: IMIX NDR, PDR (at its mean frame)")
    if ceiling:
        xs = sorted(x for x in ceiling if x != IMIX)
        ax.plot(xs, [ceiling[x] / 1e6 for x in xs], color="grey", linewidth=4, alpha=0.5,
                label="generator ceiling (its PDR alone)", zorder=0)
    ax.set_xscale("log", base=2)
    sizes = sorted({s["frame"]["lan"] for s in summaries if s["frame"]["lan"] != IMIX} |
                   {x for x in ceiling if x != IMIX})
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(x) for x in sizes])
    ax.set_xlabel("frame size, bytes (Ethernet frame the client sends)")
    ax.set_ylabel("million datagrams a second")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title("NDR and PDR against frame size")
    return plots.save(fig, outdir, "rates")


def loss(outdir, recs, size, pdr_loss):
    """Every trial at one frame size: loss ratio against the offered rate; filled: trials of
    the final duration, hollow: shorter ones, x: not valid (the generator fell short)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    final = max((t["duration"] for r in recs for t in r.get("trials") or []), default=0)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(recs):
        c = colours[i % len(colours)]
        styles = (("final", lambda t: t["valid"] and t["duration"] == final,
                   {"marker": "o", "color": c}),
                  ("shorter", lambda t: t["valid"] and t["duration"] != final,
                   {"marker": "o", "facecolors": "none", "edgecolors": c}),
                  ("not valid", lambda t: not t["valid"], {"marker": "x", "color": c}))
        for kind, pick, style in styles:
            ts = [t for t in r.get("trials") or [] if pick(t)]
            if ts:
                ax.scatter([(t.get("offered_pps") or t["rate"]) / 1e6 for t in ts],
                           [t["loss_ratio"] for t in ts], s=24,
                           label=f"{r['point']['config']} ({kind})", **style)
    ax.axhline(pdr_loss, color="red", linewidth=0.8, linestyle="--", label="PDR's loss ratio")
    ax.set_yscale("symlog", linthresh=1e-6)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("offered, million datagrams a second")
    ax.set_ylabel("loss ratio")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(f"Loss against offered load, {size_words(size)}")
    return plots.save(fig, outdir, f"loss-f{size}")


def latency(outdir, summaries, size):
    """Round-trip latency p50 and p99 at 10, 50 and 90% of PDR, one line pair per
    configuration; None without samples."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drawn = False
    for config, ss in by_config(summaries).items():
        s = next((x for x in ss if x["frame"]["lan"] == size), None)
        if not s:
            continue
        pts = [(f, s["latency"].get(str(f)) or {}) for f in FRACTIONS]
        pts = [(f, x) for f, x in pts if x.get("p50_ms") is not None and
               x.get("p99_ms") is not None]
        if not pts:
            continue
        drawn = True
        line = ax.plot([100 * f for f, _ in pts], [x["p50_ms"] for _, x in pts], marker="o",
                       label=f"{config}: p50")[0]
        ax.plot([100 * f for f, _ in pts], [x["p99_ms"] for _, x in pts], ":", marker="^",
                color=line.get_color(), label=f"{config}: p99")
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xticks([100 * f for f in FRACTIONS])
    ax.set_xlabel("load, % of PDR")
    ax.set_yscale("log")
    ax.set_ylabel("round trip of sampled datagrams, ms")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(f"Latency under load, {size_words(size)}")
    return plots.save(fig, outdir, f"latency-f{size}")
