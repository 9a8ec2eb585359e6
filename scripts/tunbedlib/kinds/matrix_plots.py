"""The plots of a gateway scenario's report (matplotlib, through plots.py): throughput against
sessions with min-max bars, the same beside the RAS document's published shape with each
point's verdict, CPU-seconds per GB, latency under load, and per-core utilisation over time for
the fewest and the most sessions (the Task Manager view of the RAS test, by thread)."""

from .. import plots
from ..plots import plt
from matplotlib.lines import Line2D  # (after plots: it chooses the backend)
from matplotlib.patches import Patch
from .. import analysis
from . import matrix_scaling


def sessions_axis(ax, points):
    plots.counts_axis(ax, [p["sessions"] for p in points], "TCP sessions")


MARKERS = "os^vD<>ph*"


def style(i):
    """The colour and marker of the i-th gateway configuration, the same in every plot."""
    return {"color": f"C{i % 10}", "marker": MARKERS[(i // 10) % len(MARKERS)]}


def draw_lines(ax, lines, hollow=False):
    """Draws matrix_scaling.throughput_lines: medians in Gbit/s with min-max bars; with hollow,
    each point that is not gateway-bound hollow. Returns the lines' legend handles."""
    out = []
    for i, config, line in lines:
        xs = [x[0] for x in line]
        med = [x[1] / 1e9 for x in line]
        err = [[(x[1] - x[2]) / 1e9 for x in line], [(x[3] - x[1]) / 1e9 for x in line]]
        st = style(i)
        out.append(ax.errorbar(xs, med, yerr=err, capsize=4, label=config, **st))
        off = [(x, m) for x, m, p in zip(xs, med, line) if p[4] != "gateway"]
        if hollow and off:
            ax.plot(*zip(*off), linestyle="none", marker=st["marker"],
                    markeredgecolor=st["color"], markerfacecolor="white", zorder=3)
    return out


def hollow_handle(ax, words):
    """The legend's entry for the hollow points, or none without words."""
    return ax.plot([], [], linestyle="none", marker="o", color="grey",
                   markerfacecolor="white", label=words) if words else []


def throughput(outdir, points, summary, words):
    """Throughput against sessions, a line per configuration with min-max bars, each point
    hollow where the gateway did not limit it (words(verdict): a verdict's words, for the
    legend)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    lines = matrix_scaling.throughput_lines(points, summary)
    handles = draw_lines(ax, lines, hollow=True)
    handles += hollow_handle(ax, matrix_scaling.not_gateway(lines, words))
    sessions_axis(ax, points)
    ax.set_ylabel("throughput, Gbit/s (median, min-max)")
    ax.set_ylim(bottom=0)
    ax.legend(handles=handles, fontsize=8)
    ax.set_title("Tunnel throughput against sessions")
    return plots.save(fig, outdir, "throughput")


def ras_shape(outdir, shape):
    """Throughput against sessions (log 2), a line per configuration with min-max bars, each
    point hollow where the gateway did not limit it, and the RAS document's two published
    points beside them (shape: matrix_scaling.ras_shape)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    handles = draw_lines(ax, shape["lines"], hollow=True)
    pub = shape["published"]
    handles += ax.plot([p[0] for p in pub], [(p[1] + p[2]) / 2e9 for p in pub],
                       linestyle="none", marker="*", markersize=9, color="black",
                       label=matrix_scaling.PUBLISHED)
    for j, (n, lo, hi, words) in enumerate(pub):
        if hi > lo:
            ax.errorbar([n], [(lo + hi) / 2e9], yerr=[(hi - lo) / 2e9], color="black",
                        linestyle="none", capsize=7, elinewidth=2)
        # The fewest sessions' words below and right of their star, the most's above and left:
        # away from the measured lines that start and end there.
        ax.annotate(words, (n, (hi if j else lo) / 1e9), textcoords="offset points",
                    xytext=(-4, 8) if j else (8, -8), ha="right" if j else "left",
                    va="bottom" if j else "top", fontsize=7)
    handles += hollow_handle(ax, shape["not_gateway"])
    plots.counts_axis(ax, shape["sessions"] + [1], "TCP sessions", log=True)
    ax.set_ylabel("throughput, Gbit/s (median, min-max)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)  # room for the published points' words
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    ax.set_title("Throughput against sessions, beside the RAS document's shape")
    return plots.save(fig, outdir, "scaling")


def cost(outdir, points, summary):
    """CPU-seconds per GB, the whole box on the left and the gateway's processes on the
    right, a line per gateway configuration in both."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, key, what in ((axes[0], "box_cpu_s_per_gb", "whole box"),
                          (axes[1], "gateway_cpu_s_per_gb", "gateway processes")):
        for i, (config, ps) in enumerate(matrix_scaling.by_config(points).items()):
            qs = [p for p in ps if summary[p["key"]][key]]
            if qs:
                ax.plot([p["sessions"] for p in qs],
                        [summary[p["key"]][key]["median"] for p in qs], label=config,
                        **style(i))
        sessions_axis(ax, points)
        ax.set_ylim(bottom=0)
        ax.set_title(what, fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    axes[0].set_ylabel("CPU-seconds per GB")
    fig.suptitle("Cost: CPU-seconds per GB received (kernel gateways have no processes)")
    return plots.save(fig, outdir, "cost")


def latency(outdir, points, summary):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drawn = False
    for i, (config, ps) in enumerate(matrix_scaling.by_config(points).items()):
        qs = [p for p in ps if summary[p["key"]]["rr_load_p50_ms"]]
        if not qs:
            continue
        drawn = True
        line = ax.plot([p["sessions"] for p in qs],
                       [summary[p["key"]]["rr_load_p50_ms"]["median"] for p in qs],
                       label=f"{config}: p50 under load", **style(i))[0]
        ax.plot([p["sessions"] for p in qs],
                [summary[p["key"]]["rr_load_p99_ms"]["median"] for p in qs], ":", marker="^",
                color=line.get_color(), label=f"{config}: p99 under load")
        idle = [summary[p["key"]]["rr_idle_p50_ms"]["median"] for p in qs
                if summary[p["key"]]["rr_idle_p50_ms"]]
        if idle:
            ax.axhline(sorted(idle)[len(idle) // 2], color=line.get_color(), alpha=0.4,
                       linestyle="--", label=f"{config}: p50 idle")
    if not drawn:
        plt.close(fig)
        return None
    sessions_axis(ax, points)
    ax.set_yscale("log")
    ax.set_ylabel("request/response round trip, ms")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title("Latency, idle and under load")
    return plots.save(fig, outdir, "latency")


SATURATED_WORDS = f"saturated, {analysis.SATURATED:.0f}%"


def thread_colours(machines):
    """A colour per thread label, the same in every panel: the busiest first; other grey."""
    totals = {}
    for _, _, tl in machines:
        for _, row in tl:
            for who in row.values():
                for n, v in who.items():
                    totals[n] = totals.get(n, 0.0) + v
    names = [n for n in sorted(totals, key=lambda n: -totals[n]) if n != "other"]
    return {n: f"C{i % 10}" for i, n in enumerate(names)} | {"other": "lightgrey"}


def cores(outdir, name, record, title):
    """Per-core CPU over time, a column per sampled machine (the RAS test's Task Manager
    windows of its gateways, side by side), all on the first client's clock; each core's busy
    stacked by the threads that used it most (analysis.thread_timeline), the rest "other",
    the 95% line labelled, the legend outside the panels."""
    tr = record.get("traffic") or {}
    machines = []
    for host in record.get("hosts") or []:
        samples, hz = analysis.aligned(host)
        tl = analysis.thread_timeline(samples, hz, host)
        if tl:
            machines.append((host, samples, tl))
    if not machines:
        return None
    t0 = tr.get("measure_start_mono_s")
    t0 = machines[0][1][0]["t"] if t0 is None else t0
    ncpu = max(max(len(s) for _, s in tl) for _, _, tl in machines)
    if not ncpu:
        return None
    colours = thread_colours(machines)
    cols = len(machines)
    fig, axes = plt.subplots(ncpu, cols, figsize=(7 if cols == 1 else 4 * cols,
                                                  1.7 * ncpu + 0.9), sharex=True,
                             squeeze=False)
    used = set()
    for col, (host, _, tl) in enumerate(machines):
        n = max(len(s) for _, s in tl)
        for c in range(ncpu):
            ax = axes[c][col]
            if c >= n:
                ax.set_visible(False)
                continue
            ts = [t - t0 for t, _ in tl]
            rows = [row.get(str(c), {}) for _, row in tl]
            who = [k for k in dict.fromkeys(k for r in rows for k in r) if k != "other"]
            who.append("other")
            used.update(who)
            ax.stackplot(ts, *[[r.get(k, 0.0) for r in rows] for k in who], labels=who,
                         colors=[colours[k] for k in who], step="post", alpha=0.9)
            ax.axhline(analysis.SATURATED, color="red", linewidth=0.8, linestyle="--")
            if col == cols - 1:  # beside the line, right of the data
                ax.text(1.01, analysis.SATURATED, SATURATED_WORDS, color="red", fontsize=7,
                        ha="left", va="center", transform=ax.get_yaxis_transform())
            ax.axvspan(min(ts), 0, color="grey", alpha=0.15)
            ax.set_ylim(0, 100)
            ax.set_ylabel(f"{analysis.cpu_name(c)} %")
        if cols > 1:
            axes[0][col].set_title(f"{host['name']} ({', '.join(host.get('roles', []))})",
                                   fontsize=9)
    order = [k for k in colours if k in used]
    handles = [Patch(color=colours[k], label=k if k != "other" else
                     "other (the kernel, processes not watched)") for k in order]
    handles.append(Line2D([], [], color="red", linewidth=0.8, linestyle="--",
                          label=SATURATED_WORDS))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=7,
               title="CPU used by", title_fontsize=7)
    for col in range(cols):
        axes[-1][col].set_xlabel("s from the end of the warm-up (grey: warm-up)")
    fig.suptitle(title)
    fig.tight_layout()
    return plots.save(fig, outdir, name)
