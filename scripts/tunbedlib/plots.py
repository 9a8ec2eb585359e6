"""What every report's plots share (matplotlib, PNG and SVG): the backend, text drawn as it is
written, and save(), which writes plots/NAME.png and NAME.svg (files.py: never through a link)
and returns the SVG for report.html to inline. Text in a plot is the records' (gateway names,
paths, host names, labels): matplotlib reads none of it as math text (text.parse_math off), as
report.html escapes it. Every plot module imports this one first; the runner imports them only
when it draws (it must start, and bootstrap, on Python's standard library alone)."""

import io

import matplotlib

matplotlib.use("Agg")
# "$...$" in a name is that text, never math: a bad one would raise and lose the report, a
# good one be drawn as a formula.
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from . import files  # noqa: E402


def counts_axis(ax, xs, label, log=False):
    """An x axis of counts (sessions, streams): log 2 beyond two of them (or with log), a
    tick at each."""
    xs = sorted(set(xs))
    if log or len(xs) > 2:
        ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel(label)
    ax.grid(True, alpha=0.3)


def save(fig, outdir, name):
    """Writes plots/NAME.png and NAME.svg; returns the SVG."""
    try:
        files.figure(fig, outdir, f"{name}.png", dpi=110, bbox_inches="tight")
        buf = io.StringIO()
        fig.savefig(buf, format="svg", dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    files.write(outdir, f"plots/{name}.svg", buf.getvalue())
    return buf.getvalue()
