"""The failover report's plots (matplotlib, through plots.py), of one run each: what the client
received over time at 100 ms, and each gateway's gregw CPU per core over time, with the fault,
the takeover, the repair and the failback marked on both."""

from .. import analysis, plots
from ..plots import plt
from .failover_analysis import FAULT_WORDS, ROLE_WORDS, core_shares, first_after


def marks(ax, rec, t0):
    routes = rec["routes"]
    ev = [(rec["t_fault"], "fault", "red"), (rec["t_repair"], "repair", "green")]
    tk = first_after(routes, rec["t_fault"], lambda a: a == "gwb2")
    fb = first_after(routes, rec["t_repair"], lambda a: a == "gwb1")
    if tk is not None:
        ev.append((rec["t_fault"] + tk, "takeover", "orange"))
    if fb is not None:
        ev.append((rec["t_repair"] + fb, "failback", "blue"))
    for t, label, color in ev:
        ax.axvline(t - t0, color=color, linestyle="--", linewidth=1, label=label)


def start(rec):
    return (rec["tcp"] or {}).get("measure_start_mono_s", rec["t_start"])


def throughput(outdir, rec):
    fault, tcp = rec["fault"], rec["tcp"] or {}
    t0 = start(rec)
    ivs = [iv for iv in tcp.get("intervals", []) if iv["end"] > iv["start"]]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.step([iv["end"] for iv in ivs], [iv["bytes"] * 8 / (iv["end"] - iv["start"]) / 1e9
                                        for iv in ivs], where="pre", color="black",
            label="TCP delivered")
    marks(ax, rec, t0)
    ax.set_xlabel("s")
    ax.set_ylabel("Gbit/s (100 ms)")
    ax.set_title(f"{FAULT_WORDS[fault]}: throughput over time (repeat {rec['repeat']})")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return plots.save(fig, outdir, f"{fault}-throughput")


def cpu(outdir, rec):
    """Each gateway's gregw CPU per core over time; None without two samples."""
    host = (rec.get("hosts") or [{}])[0]
    samples, _ = analysis.aligned(host) if host else ([], 0)
    if len(samples) < 2:
        return None
    t0 = start(rec)
    cores = sorted(samples[0]["cpus"], key=int)
    gws = ("gwa", "gwb1", "gwb2")
    fig, axes = plt.subplots(1, len(gws), figsize=(12, 3.2), sharey=True)
    for ax, gw in zip(axes, gws):
        for core in cores:
            pts = core_shares(host, f"gregw {gw}", core)
            ax.plot([t - t0 for t, _ in pts], [v for _, v in pts], label=analysis.cpu_name(core),
                    linewidth=1)
        marks(ax, rec, t0)
        ax.set_title(f"{gw} ({ROLE_WORDS[gw]})", fontsize=9)
        ax.set_xlabel("s")
    axes[0].set_ylabel("gregw CPU % of the core")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return plots.save(fig, outdir, f"{rec['fault']}-cpu")
