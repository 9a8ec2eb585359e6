"""From raw run records to numbers: statistics of repeats, per-core shares over the measured
window, saturation and who caused it, CPU-seconds per GB. Pure: tested on recorded data."""

import math
import statistics

SATURATED = 95.0  # percent busy: "one core at maximum"
BUSY = ("user", "nice", "system", "irq", "softirq", "steal")


def spread(values):
    """Median, min and max of a list of numbers (None when empty)."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def fmt(s, scale=1.0, digits=2):
    """A spread (spread()) for a table: '4.82 (4.70-4.90)'; '-' for none."""
    if not s:
        return "-"
    return (f"{s['median'] * scale:.{digits}f} ({s['min'] * scale:.{digits}f}-"
            f"{s['max'] * scale:.{digits}f})")


def core_shares(a, b):
    """{cpu: {field: percent, "busy": percent}} between two /proc/stat samples (ticks)."""
    out = {}
    for c in b:
        if c not in a:
            continue
        d = {f: b[c][f] - a[c][f] for f in b[c] if f in a[c]}
        total = sum(d.values())
        if total <= 0:
            continue
        pct = {f: 100.0 * v / total for f, v in d.items()}
        pct["busy"] = 100.0 * sum(d[f] for f in BUSY if f in d) / total
        out[c] = pct
    return out


def window(samples, start, end):
    """The samples from the last one at or before start to the first at or after end."""
    if not samples:
        return []
    i = max([k for k, s in enumerate(samples) if s["t"] <= start] or [0])
    j = min([k for k, s in enumerate(samples) if s["t"] >= end] or [len(samples) - 1])
    return samples[i:j + 1] if j > i else samples


def timeline(samples):
    """[(t, {cpu: shares})] between consecutive samples: the Task Manager view."""
    out = []
    for a, b in zip(samples, samples[1:]):
        out.append((b["t"], core_shares(a["cpus"], b["cpus"])))
    return out


def thread_cpu(samples, hz):
    """{tid: {"pid", "comm", "seconds", "cores": {cpu: seconds}}} over the samples: each
    interval's ticks go to the CPU the thread was on at its end."""
    out = {}
    for a, b in zip(samples, samples[1:]):
        for tid, (pid, comm, ticks, proc) in b["threads"].items():
            if tid not in a["threads"]:
                continue
            d = (ticks - a["threads"][tid][2]) / hz
            if d <= 0:
                continue
            t = out.setdefault(tid, {"pid": pid, "comm": comm, "seconds": 0.0, "cores": {}})
            t["seconds"] += d
            t["cores"][str(proc)] = t["cores"].get(str(proc), 0.0) + d
    return out


def thread_timeline(samples, hz, host, most=4):
    """Who used each core, over time: [(t, {cpu: {label: percent of the core}})] between
    consecutive samples (timeline()'s instants), each interval's CPU time of a thread on the
    CPU it was on at the interval's end, threads of one label together. Per core, the labels
    with the most time on it over the samples (at most `most`, each with 5% of the core's
    busy time or more); the rest is "other", with every CPU time the watched threads do not
    hold (the kernel's, other processes'). Where the threads' share of an interval passes the
    core's busy (a thread that moved within it), theirs is scaled down to it: the stack is the
    core's busy."""
    names = {}
    raw = []
    for a, b in zip(samples, samples[1:]):
        dt = b["t"] - a["t"]
        cores = core_shares(a["cpus"], b["cpus"])
        on = {c: {} for c in cores}
        for tid, (pid, comm, ticks, proc) in b["threads"].items():
            if tid not in a["threads"] or dt <= 0 or str(proc) not in on:
                continue
            d = (ticks - a["threads"][tid][2]) / hz
            if d > 0:
                who = names.setdefault((tid, pid), label(tid, {"pid": pid, "comm": comm}, host))
                on[str(proc)][who] = on[str(proc)].get(who, 0.0) + 100.0 * d / dt
        raw.append((b["t"], cores, on))
    totals = {}
    for _, cores, on in raw:
        for c, who in on.items():
            mine = totals.setdefault(c, {})
            for name, pct in who.items():
                mine[name] = mine.get(name, 0.0) + pct
    busy = {c: sum(cores.get(c, {}).get("busy", 0.0) for _, cores, _ in raw) for c in totals}
    kept = {c: [n for n, v in sorted(t.items(), key=lambda kv: -kv[1])
                if v >= 0.05 * busy[c]][:most] for c, t in totals.items()}
    out = []
    for t, cores, on in raw:
        row = {}
        for c, share in cores.items():
            who = {n: on[c].get(n, 0.0) for n in kept.get(c, [])}
            total = sum(who.values())
            if total > share["busy"]:
                who = {n: v * share["busy"] / total for n, v in who.items()}
                total = share["busy"]
            who["other"] = share["busy"] - total
            row[c] = who
        out.append((t, row))
    return out


def label(tid, t, host):
    """A person's name for a thread: gregw's workers by id, else its process and comm."""
    named = (host.get("thread_labels") or {}).get(str(tid))
    if named:
        return named
    proc = (host.get("processes") or {}).get(str(t["pid"]), f"pid {t['pid']}")
    return proc if proc.split()[:1] == [t["comm"]] or t["comm"] in proc \
        else f"{proc} ({t['comm']})"


def aligned(host):
    """A machine's CPU samples with their times on the first client's clock."""
    cpu = host.get("cpu") or {"samples": [], "ticks_per_second": 100}
    off = (host.get("clock") or {}).get("offset_s", 0.0)
    samples = [dict(s, t=s["t"] + off) for s in cpu["samples"]] if off else cpu["samples"]
    return samples, cpu.get("ticks_per_second") or 100


def host_cpu(host, start, end):
    """One machine over the measured window: its cores' shares, its busy CPU-seconds, its
    threads' CPU, the window's length, the CPU of the gateway's and the generator's processes
    on it, and their pids."""
    samples, hz = aligned(host)
    win = window(samples, start, end) if start is not None and end is not None else samples
    cores = core_shares(win[0]["cpus"], win[-1]["cpus"]) if len(win) > 1 else {}
    span = (win[-1]["t"] - win[0]["t"]) if len(win) > 1 else 0
    threads = thread_cpu(win, hz)
    procs = host.get("processes") or {}
    # The gateway is every process the driver started; the testbed's own tools are not.
    gw = {pid for pid, name in procs.items() if not name.startswith("tunbed-")}
    gen = {pid for pid, name in procs.items() if name.startswith("tunbed-traffic")}
    return {"cores": cores, "span": span, "threads": threads,
            "busy_s": sum(c["busy"] for c in cores.values()) / 100 * span,
            "gateway_s": sum(t["seconds"] for t in threads.values() if str(t["pid"]) in gw),
            "generator_s": sum(t["seconds"] for t in threads.values() if str(t["pid"]) in gen),
            "has_gateway": bool(gw), "gateway_pids": gw, "generator_pids": gen}


def analyse(record):
    """The numbers of one run (a flat dict), from its raw record."""
    tr = record.get("traffic") or {}
    tcp = tr.get("tcp") or {}
    start, end = tr.get("measure_start_mono_s"), tr.get("measure_end_mono_s")
    res = {
        "key": record["point"]["key"],
        "repeat": record["repeat"],
        "bits_per_second": tcp.get("bits_per_second"),
        "bytes": tcp.get("bytes"),
        "measured_s": tr.get("measured_s"),
        "retransmits": tcp.get("retransmits"),
        "jain": tcp.get("jain"),
        "complete": tr.get("complete", False),
        "rr_idle_p50_ms": (record.get("rr_idle") or {}).get("p50_ms"),
        "rr_load_p50_ms": (tr.get("rr") or {}).get("p50_ms"),
        "rr_load_p99_ms": (tr.get("rr") or {}).get("p99_ms"),
        # Bytes that arrived other than sent, where every byte was checked; None unchecked.
        "wrong_bytes": (tcp.get("verify") or {}).get("mismatches")
        if (tcp.get("verify") or {}).get("on") else None,
    }
    machines = record.get("hosts") or []
    several = len(machines) > 1
    box_s = gw_s = gen_s = 0.0
    has_gw = False
    res["hosts"], res["saturated"] = [], []
    for host in machines:
        c = host_cpu(host, start, end)
        # The CPU window and the traffic window differ by up to one sampling period: scale
        # the CPU to the traffic's length so that seconds per GB compare like with like.
        scale = (res["measured_s"] / c["span"]) if c["span"] and res["measured_s"] else 1.0
        box_s += c["busy_s"] * scale
        gw_s += c["gateway_s"] * scale
        gen_s += c["generator_s"] * scale
        has_gw = has_gw or c["has_gateway"]
        res["hosts"].append({"name": host["name"], "roles": host.get("roles", []),
                             "cores": c["cores"], "busy_cpu_s": c["busy_s"] * scale,
                             "clock_error_s": (host.get("clock") or {}).get("error_s", 0.0)})
        res["saturated"] += saturation(c["cores"], c["threads"], c["span"], host,
                                       host["name"] if several else None)
    res["cores"] = res["hosts"][0]["cores"] if res["hosts"] else {}
    gb = (res["bytes"] or 0) / 1e9
    res["box_cpu_s"] = box_s
    res["gateway_cpu_s"] = gw_s if has_gw else None
    res["generator_cpu_s"] = gen_s
    res["box_cpu_s_per_gb"] = res["box_cpu_s"] / gb if gb else None
    res["gateway_cpu_s_per_gb"] = res["gateway_cpu_s"] / gb if gb and has_gw else None
    res["retransmits_per_gb"] = res["retransmits"] / gb if gb and res["retransmits"] is not None \
        else None
    # What the driver said of the gateway (version, cipher) and the inner MTU the runner read.
    res["gateway_info"] = record.get("gateway_info")
    res["wire"] = wire_summary(record.get("wire"), record.get("wire_error"))
    return res


def wire_summary(doc, error=None):
    """What tunbed-wire saw on transit during one run (docs/wire.md), in a few numbers. A run
    whose audit failed (error: what tunbed-wire said last) is only {"error": ...}."""
    if error:
        return {"error": error}
    if not doc:
        return None
    dirs = doc["directions"]
    # The data direction carries more inner bytes: gwa to gwb with pattern push, back with pull.
    data = max(dirs, key=lambda d: d["inner_bytes"])
    tcp = data["tcp"]
    pay = tcp["payload_bytes"]
    late, resent = tcp["late_bytes"], tcp["late_resent_bytes"]
    # Without an inner IPv4 identification (IPv6) late data cannot be split into lost upstream
    # and reordered. Documents from before late_unresolved_bytes read as resolved.
    split = pay and not tcp.get("late_unresolved_bytes", 0)
    return {
        "tunnel_frames": doc["tunnel_frames"],
        "violation_frames": doc["violation_frames"],
        "violations": {k: v["count"] for k, v in doc["violations"].items() if v["count"]},
        "capture_dropped": doc["source"].get("capture_dropped"),
        "data_dir": data["name"],
        "overhead_pct": data["overhead_pct"],
        "seq_frames": sum(d["seq"]["frames"] for d in dirs),
        "seq_missing": sum(d["seq"]["missing"] for d in dirs),
        "seq_reordered": sum(d["seq"]["reordered"] for d in dirs),
        "tcp_retransmitted_pct": 100 * tcp["retransmitted_bytes"] / pay if pay else None,
        "tcp_late_pct": 100 * late / pay if pay else None,
        "tcp_resent_pct": 100 * resent / pay if split else None,
        "tcp_reordered_pct": 100 * (late - resent) / pay if split else None,
    }


def wire_spread(ws):
    """Over the repeats of a point: the worst for what must be zero, medians for the rest;
    repeats whose audit failed are counted (failed) with what they said (errors), apart."""
    if not ws:
        return None
    errors = [w["error"] for w in ws if w.get("error")]
    ws = [w for w in ws if not w.get("error")]
    out = {"repeats": len(ws) + len(errors), "failed": len(errors),
           "errors": list(dict.fromkeys(errors))}
    if not ws:
        return out
    violations = {}
    for w in ws:
        for k, n in w["violations"].items():
            violations[k] = max(violations.get(k, 0), n)
    out.update({k: max(w[k] or 0 for w in ws) for k in ("violation_frames", "capture_dropped")})
    out["violations"] = violations
    dirs = [w.get("data_dir") for w in ws]
    out["data_dir"] = max(dirs, key=dirs.count)
    for k in ("tunnel_frames", "overhead_pct", "seq_frames", "seq_missing", "seq_reordered",
              "tcp_retransmitted_pct", "tcp_late_pct", "tcp_resent_pct", "tcp_reordered_pct"):
        vals = [w.get(k) for w in ws if w.get(k) is not None]
        out[k] = statistics.median(vals) if vals else None
    return out


def saturation(cores, threads, span, host, name=None):
    """[{cpu, busy, user, system, softirq, by: [(label, percent of the core)]}] for every core
    at SATURATED% or more of a machine, the threads that ran on it first; with name (a run of
    several machines), also "host"."""
    out = []
    for c, s in sorted(cores.items(), key=lambda kv: int(kv[0])):
        if s["busy"] < SATURATED:
            continue
        # Threads of one name (a server's several threads) count together.
        shares = {}
        for tid, t in threads.items():
            on = t["cores"].get(str(c), 0.0)
            if span and on:
                who = label(tid, t, host)
                shares[who] = shares.get(who, 0.0) + on / span
        # (A share past any core's, from a record's made-up times, is no one's.)
        by = [(name, round(100 * v)) for name, v in shares.items() if 0.05 <= v < math.inf]
        by.sort(key=lambda x: -x[1])
        out.append({"cpu": int(c), "busy": round(s["busy"], 1),
                    **{f: round(s.get(f, 0.0), 1) for f in ("user", "system", "softirq")},
                    "by": by[:4]} | ({"host": name} if name else {}))
    return out


def cpu_name(cpu, host=None):
    """A CPU as every report names it: 'cpu1', and on a run of several machines with its
    host's name, 'gw-a:cpu1'."""
    return f"{host}:cpu{cpu}" if host else f"cpu{cpu}"


def cpu_names(cpus, host=None):
    """'cpu0, cpu1' (cpu_name), or 'none' for no CPU."""
    return ", ".join(cpu_name(c, host) for c in cpus) or "none"


def saturated_names(sat, sep=", "):
    """The saturated cores of saturation(): 'cpu1, gw-b:cpu0', or 'none'."""
    return sep.join(cpu_name(s["cpu"], s.get("host")) for s in sat) or "none"


def saturation_words(sat):
    """'cpu1 saturated by gregw gwa worker 1 (58%) (softirq 34%, sys 51%, user 15%)'."""
    if not sat:
        return "no core saturated"
    parts = []
    for s in sat:
        who = ", ".join(f"{name} ({pct}%)" for name, pct in s["by"]) or "the kernel"
        parts.append(f"{cpu_name(s['cpu'], s.get('host'))} saturated by {who} (softirq "
                     f"{s['softirq']:.0f}%, sys {s['system']:.0f}%, user {s['user']:.0f}%)")
    return "; ".join(parts)


def saturating_threads(sat):
    """'wireguard-go gwa (97% of cpu1)': per saturated core, the thread that ran on it most;
    'none' when no core was saturated."""
    if not sat:
        return "none"
    parts = []
    for s in sat:
        core = cpu_name(s["cpu"], s.get("host"))
        parts.append(f"{s['by'][0][0]} ({s['by'][0][1]}% of {core})" if s["by"]
                     else f"the kernel ({core})")
    return "; ".join(parts)


def jain(values):
    """Jain's fairness index of throughputs, (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n
    when one has everything; None for none, or when all are 0."""
    v = [x for x in values if x is not None]
    # At most 1 (Cauchy-Schwarz); rounding of equal values would give 1.0000000000000002.
    return min(1.0, sum(v) ** 2 / (len(v) * sum(x * x for x in v))) if v and any(v) else None


def cpu_per_gb(cpu_s, nbytes):
    """CPU-seconds per GB (10^9 bytes); None without bytes."""
    return cpu_s / (nbytes / 1e9) if nbytes else None


def summarise(runs):
    """Per point: the spread of each number over its repeats, and the median run."""
    by_key = {}
    for r in runs:
        by_key.setdefault(r["key"], []).append(r)
    out = {}
    for key, rs in by_key.items():
        tput = [r["bits_per_second"] for r in rs if r["bits_per_second"] is not None]
        med = statistics.median(tput) if tput else None
        median_run = min(rs, key=lambda r: abs((r["bits_per_second"] or 0) - (med or 0)))
        out[key] = {
            "repeats": len(rs),
            "complete": all(r["complete"] for r in rs),
            **{k: spread([r.get(k) for r in rs]) for k in (
                "bits_per_second", "retransmits", "retransmits_per_gb", "jain",
                "box_cpu_s_per_gb", "gateway_cpu_s_per_gb", "rr_idle_p50_ms", "rr_load_p50_ms",
                "rr_load_p99_ms")},
            "saturated": median_run["saturated"],
            "median_repeat": median_run["repeat"],
            "gateway_info": next((r["gateway_info"] for r in rs if r.get("gateway_info")), None),
            "wire": wire_spread([r["wire"] for r in rs if r.get("wire")]),
            # The worst repeat: one wrong byte is a failure of the gateway.
            "wrong_bytes": max((r["wrong_bytes"] for r in rs if r.get("wrong_bytes") is not None),
                               default=None),
        }
    return out
