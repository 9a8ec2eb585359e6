"""The gateway pair in the RAS report (docs/failover.md): with a passive gateway in the run
(a process labelled `gregw gwb2`), one headline line per point with the most sessions of its
configuration: each gateway's CPU per core over the measured window, the active's beside the
passive's, as the RAS figures show the two gateway VMs side by side."""

from .. import analysis

GATEWAYS = (("gregw gwa", "gwa"), ("gregw gwb", "gwb1 (active)"), ("gregw gwb2", "gwb2 (passive)"))


def gateway_cores(record):
    """{gateway label: {cpu: percent of the window}} of one run, or {} without the pair."""
    tr = record.get("traffic") or {}
    start, end = tr.get("measure_start_mono_s"), tr.get("measure_end_mono_s")
    out = {}
    for host in record.get("hosts") or []:
        procs = host.get("processes") or {}
        if "gregw gwb2" not in procs.values():
            continue
        samples, hz = analysis.aligned(host)
        win = analysis.window(samples, start, end) if start is not None and end is not None \
            else samples
        span = win[-1]["t"] - win[0]["t"] if len(win) > 1 else 0
        if span <= 0:
            continue
        cpus = sorted(win[0]["cpus"], key=int)
        for t in analysis.thread_cpu(win, hz).values():
            name = procs.get(str(t["pid"]))
            if name in dict(GATEWAYS):
                cores = out.setdefault(name, {c: 0.0 for c in cpus})
                for c, sec in t["cores"].items():
                    cores[c] = cores.get(c, 0.0) + 100.0 * sec / span
        for name, _ in GATEWAYS:
            out.setdefault(name, {c: 0.0 for c in cpus})
    return out


def headline(points, records):
    lines, seen = [], set()
    by_key = {}
    for r in records:
        by_key.setdefault(r["point"]["key"], []).append(r)
    for p in sorted(points, key=lambda q: -q["sessions"]):
        if p["config"] in seen or p["key"] not in by_key:
            continue
        cores = gateway_cores(sorted(by_key[p["key"]], key=lambda r: r["repeat"])[0])
        if not cores:
            continue
        seen.add(p["config"])
        parts = []
        for name, words in GATEWAYS:
            shares = ", ".join(f"{analysis.cpu_name(c)} {v:.0f}%" for c, v in sorted(
                cores[name].items(), key=lambda kv: int(kv[0])))
            parts.append(f"{words} {shares}")
        n = p["sessions"]
        lines.append(f"{p['config']}, {n} session{'s' if n > 1 else ''}, gateway pair "
                     f"(gregw's CPU per core): {'; '.join(parts)}")
    return lines
