"""The bottleneck verdict of one measured point: what limited its figure (the gateway, the
generator, a link's rate cap, the box, or unclear), with its evidence and a sentence for the
report, from the CPU samples over the measured window (analysis.host_cpu); and the CPU that
processes tunbed did not start used during that window. Pure: docs/scaling.md defines every
rule, tests/python/test_verdict.py tests them on synthetic records."""

import math

from . import analysis

VERDICTS = ("gateway", "generator", "link", "box", "unclear")
# A thread (or the threads of one role sharing a core) holds its allowance at this percent of
# it: the same line as a core's "saturated" (analysis.SATURATED).
AT_ALLOWANCE = analysis.SATURATED
# A budgeted thread holds its budget at this percent of it: CFS bandwidth control gives a thread
# that never stops 94.5-97% of its quota over 2-s windows (a 20% budget: 18.9-19.4% of the CPU,
# docs/benchmarks.md, emulated cores), and a window's edges cut periods; 95% would miss a thread
# held at its budget half of the time.
AT_BUDGET = 90.0
# A figure at or above this percent of the generator's own ceiling (measured through the
# kernel's route on the same bed) is the generator's: the ceiling's own repeats spread by a few
# percent, so 90% leaves the generator no headroom worth the name.
CEILING_NEAR = 90.0
# A figure at or above this percent of a topology rate cap (tbf) is the link's: tbf counts every
# byte of a frame, so TCP's payload is 1448 of 1514 bytes (96%) without a tunnel and 1424 (94%)
# through GRE on a capped 1500-byte transit, less TCP's own sawtooth. Measured through a 200
# Mbit/s transit cap: route 95.5%, gregw's GRE 94.0% (docs/scaling.md).
CAP_NEAR = 90.0
# Processes tunbed did not start are flagged from this percent of a machine's CPU over the
# window. Without them the figure is not zero: tunbed-sample (not watched), ksoftirqd and
# kworkers doing the traffic's kernel work, and the rounding of thread times to ticks against
# /proc/stat's sampled ticks (250 Hz here: about 4,000 ticks per 8-s window on 2 CPUs, +-1% at
# one sigma) left 4.6% and 3.7% in the two recorded runs of tests/python/data (2 CPUs, nothing
# else running). 10% is twice that floor and half the 20% that distorted a figure when this
# was written (docs/scaling.md); on a box-bound point it costs about as much throughput.
FOREIGN_FLAG = 10.0


class BadBudget(ValueError):
    """A record's budget entry that is not a share of a core from 1 to 100 percent."""


def allowance(budgets, tid, what="thread"):
    """The budget of thread tid (or of a process, what) in percent of a core, or None (a
    whole core); budgets is a machine's record of them (budget.Budgets.export(): {tid:
    {"share_pct": ...}}, export_processes() by pid)."""
    b = budgets.get(str(tid))
    if b is None:
        return None
    share = b.get("share_pct") if isinstance(b, dict) else None
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 1 <= share <= 100:
        raise BadBudget(f"budget of {what} {tid}: {share!r} is not a share of a core from 1 to "
                        "100 percent")
    return float(share)


def units(c, host):
    """What each role holds on one machine (c: analysis.host_cpu of it): a budgeted thread
    holds its budget, the threads of a budgeted process (the generator's) theirs together;
    the unbudgeted threads of one role on one CPU (the CPU each ran on most)
    share that core. [{role, budgeted, cpu, threads: [(label, percent of a core)], pct: their
    percent of a core, allowance: percent of a core, use: percent of the allowance, softirq:
    the CPU's softirq and irq percent}]. Where the kernel accounts IRQ time apart from the
    threads (facts.irq_time_accounting), a shared core's softirq counts as its role's too: the
    threads did the work that caused it and the core was not free for them meanwhile."""
    budgets = host.get("budgets") or {}
    process_budgets = host.get("process_budgets") or {}
    irq_apart = bool((host.get("facts") or {}).get("irq_time_accounting"))
    span = c["span"]
    if not span:
        return []

    def irq_of(cpu):
        return sum(c["cores"].get(str(cpu), {}).get(f, 0.0) for f in ("softirq", "irq"))

    shared, whole, out = {}, {}, []
    for tid, t in c["threads"].items():
        pid = str(t["pid"])
        role = "gateway" if pid in c["gateway_pids"] else \
            "generator" if pid in c["generator_pids"] else None
        if role is None or not t["cores"]:
            continue
        cpu = int(max(t["cores"], key=t["cores"].get))
        pct = 100 * t["seconds"] / span
        irq = irq_of(cpu)
        thread = (analysis.label(tid, t, host), pct)
        share = allowance(process_budgets, pid, "process")
        if share is not None:  # a process's budget holds all its threads together
            u = whole.setdefault(pid, {"role": role, "budgeted": True, "threads": [],
                                       "pct": 0.0, "allowance": share, "on": {}})
            u["threads"].append(thread)
            u["pct"] += pct
            for k, v in t["cores"].items():
                u["on"][k] = u["on"].get(k, 0.0) + v
            continue
        share = allowance(budgets, tid)
        if share is not None:
            out.append({"role": role, "budgeted": True, "cpu": cpu, "threads": [thread],
                        "pct": pct, "allowance": share, "use": 100 * pct / share,
                        "softirq": irq})
            continue
        u = shared.setdefault((role, cpu), {"role": role, "budgeted": False, "cpu": cpu,
                                            "threads": [], "pct": 0.0, "allowance": 100.0,
                                            "softirq": irq})
        u["threads"].append(thread)
        u["pct"] += pct
    for u in shared.values():
        u["use"] = u["pct"] + (u["softirq"] if irq_apart else 0.0)
        u["threads"].sort(key=lambda x: -x[1])
        out.append(u)
    for u in whole.values():  # named by the CPU its threads ran on most
        on = u.pop("on")
        u["cpu"] = int(max(on, key=on.get))
        u["softirq"] = irq_of(u["cpu"])
        u["use"] = 100 * u["pct"] / u["allowance"]
        u["threads"].sort(key=lambda x: -x[1])
        out.append(u)
    out.sort(key=lambda u: (u["role"], -u["use"]))
    return out


def host_findings(c, host):
    """One machine's side of the verdict: its units, those at their allowance per role, its
    saturated CPUs, those no unit at its allowance explains, and its own verdict (as the
    point's, without the link and the ceiling, which are the point's: "none" where nothing on
    it was at a limit)."""
    us = units(c, host)
    hot = [u for u in us if u["use"] >= (AT_BUDGET if u["budgeted"] else AT_ALLOWANCE)]
    gw = [u for u in hot if u["role"] == "gateway"]
    gen = [u for u in hot if u["role"] == "generator"]
    sat = sorted(int(k) for k, s in c["cores"].items() if s["busy"] >= analysis.SATURATED)
    explained = {u["cpu"] for u in hot}
    other = [cpu for cpu in sat if cpu not in explained]
    every = bool(c["cores"]) and len(sat) == len(c["cores"])
    if gen:
        own = "generator"
    elif gw:
        own = "unclear" if other else "gateway"
    elif every:
        own = "box"
    else:
        own = "unclear" if sat else "none"
    busiest = max((u for u in us if u["role"] == "gateway"), key=lambda u: u["use"], default=None)
    return {"name": host.get("name"), "verdict": own, "units": us, "gateway_hot": gw,
            "generator_hot": gen, "saturated": sat, "other_saturated": other,
            "every_cpu_saturated": every, "busiest_gateway": busiest,
            "has_gateway": c["has_gateway"]}


def windowed(record):
    """Each sampled machine of a record with its CPU over the measured window."""
    tr = record.get("traffic") or {}
    start, end = tr.get("measure_start_mono_s"), tr.get("measure_end_mono_s")
    return [(h, analysis.host_cpu(h, start, end)) for h in record.get("hosts") or []]


def judge(record, bps, ceiling_bps=None, cap_bps=None):
    """The verdict of one run: record (today's layout) with each machine's `budgets` and
    `facts`, bps the figure it measured, ceiling_bps the generator's ceiling on the same bed
    (None: not measured), cap_bps the topology's rate cap on the path (None: none). Returns
    {"verdict", "sentence", "evidence": [...], "hosts": [{"name", "verdict"}], "foreign":
    [...], "foreign_flagged"}. Rules in order: link, generator, gateway, box, unclear."""
    machines = windowed(record)
    several = len(machines) > 1
    found = [host_findings(c, h) for h, c in machines]
    evidence = []
    if cap_bps and bps is not None and 100 * bps >= CAP_NEAR * cap_bps:
        evidence.append({"what": "cap", "bps": bps, "cap_bps": cap_bps,
                         "pct": 100 * bps / cap_bps})
        v = "link"
    elif any(f["generator_hot"] for f in found) or (
            ceiling_bps and bps is not None and 100 * bps >= CEILING_NEAR * ceiling_bps):
        evidence += [unit_evidence(u, f["name"] if several else None)
                     for f in found for u in f["generator_hot"]]
        if ceiling_bps and bps is not None and 100 * bps >= CEILING_NEAR * ceiling_bps:
            evidence.append({"what": "ceiling", "bps": bps, "ceiling_bps": ceiling_bps,
                             "pct": 100 * bps / ceiling_bps})
        v = "generator"
    elif any(f["gateway_hot"] for f in found) and not any(f["other_saturated"] for f in found):
        evidence += [unit_evidence(u, f["name"] if several else None)
                     for f in found for u in f["gateway_hot"]]
        v = "gateway"
    elif any(f["every_cpu_saturated"] for f in found) and not any(f["gateway_hot"]
                                                                   for f in found):
        evidence += [{"what": "box", "host": f["name"] if several else None,
                      "cpus": f["saturated"]} for f in found if f["every_cpu_saturated"]]
        evidence += busiest_evidence(found, several)
        v = "box"
    else:
        evidence += [unit_evidence(u, f["name"] if several else None)
                     for f in found for u in f["gateway_hot"]]
        evidence += [{"what": "cpu", "host": f["name"] if several else None, "cpus":
                      f["other_saturated"]} for f in found if f["other_saturated"]]
        if not any(f["gateway_hot"] for f in found):
            evidence += busiest_evidence(found, several)
        v = "unclear"
    kernel_gateway = not any(c["has_gateway"] for _, c in machines)
    foreign = [dict(foreign_cpu(c, h, kernel_gateway), host=h.get("name")) for h, c in machines]
    return {"verdict": v, "sentence": sentence(v, evidence), "evidence": evidence,
            "hosts": [{"name": f["name"], "verdict": f["verdict"],
                       "budgeted_softirq": budgeted_softirq(f, h)}
                      for f, (h, _) in zip(found, machines)],
            "foreign": foreign, "foreign_flagged": any(f["flagged"] for f in foreign)}


def budgeted_softirq(found, host):
    """The softirq (and irq) on the CPUs of a machine's budgeted gateway threads, percent of
    one CPU each, and whether the kernel charged it to the threads: {"cpus": {cpu: pct},
    "charged"}. Where it did not (IRQ time accounted apart) all of it is gateway work outside
    the budgets; where it did, what ran in the threads' context is inside, and ksoftirqd's is
    not. None without budgeted gateway threads."""
    cpus = {str(u["cpu"]): round(u["softirq"], 1) for u in found["units"]
            if u["budgeted"] and u["role"] == "gateway"}
    if not cpus:
        return None
    return {"cpus": cpus, "charged": not (host.get("facts") or {}).get("irq_time_accounting")}


def unit_evidence(u, host=None):
    """A unit as evidence: who, on which CPU, at what share of what allowance."""
    return {"what": u["role"], "host": host, "threads": [name for name, _ in u["threads"]],
            "cpu": u["cpu"], "budgeted": u["budgeted"], "pct": round(u["pct"], 1),
            "allowance": u["allowance"], "use": round(u["use"], 1),
            "softirq": round(u["softirq"], 1)}


def busiest_evidence(found, several):
    """The gateway's busiest unit on each machine that has one, for a point it did not limit."""
    return [dict(unit_evidence(f["busiest_gateway"], f["name"] if several else None),
                 what="busiest")
            for f in found if f["busiest_gateway"] is not None]


def gbps(bps):
    return f"{bps / 1e9:.2f} Gbit/s"


def unit_words(e):
    """'gregw gwa worker 0 at 98% of its 20% budget on cpu0' (hosts mode: 'on gw1:cpu0'): the
    share of its allowance rounded down, so that one below AT_ALLOWANCE (AT_BUDGET) never reads
    as at it."""
    use = math.floor(e["use"])
    who = " and ".join(e["threads"])
    cpu = analysis.cpu_name(e["cpu"], e.get("host"))
    together = " together" if len(e["threads"]) > 1 else ""
    if e["budgeted"] and together:  # a process's budget, its threads on any core
        return f"{who} together at {use}% of their {e['allowance']:g}% budget (mostly on " \
               f"{cpu})"
    if e["budgeted"]:
        return f"{who} at {use}% of its {e['allowance']:g}% budget on {cpu}"
    return f"{who}{together} at {use}% of {cpu}"


def sentence(v, evidence):
    """The report's sentence for a verdict: where it is not the gateway, that the figure
    measures something else, in words."""
    parts = []
    for e in evidence:
        if e["what"] == "cap":
            parts.append(f"{gbps(e['bps'])} is {e['pct']:.0f}% of the {gbps(e['cap_bps'])} "
                         "rate cap")
        elif e["what"] == "ceiling":
            parts.append(f"{gbps(e['bps'])} is {e['pct']:.0f}% of the generator's own ceiling "
                         f"({gbps(e['ceiling_bps'])} through route)")
        elif e["what"] in ("gateway", "generator"):
            parts.append(unit_words(e))
        elif e["what"] == "busiest":
            parts.append(f"the gateway's busiest: {unit_words(e)}")
        elif e["what"] in ("box", "cpu"):
            where = f" of {e['host']}" if e.get("host") else ""
            parts.append(f"every core{where} saturated" if e["what"] == "box" else
                         f"{analysis.cpu_names(e['cpus'], e.get('host'))} saturated by other "
                         "work")
    why = "; ".join(parts) or "no thread at its allowance and no core saturated"
    if v == "gateway":
        return f"gateway-bound: {why}"
    if v == "unclear":
        return f"unclear what limited it, so it does not measure the gateway: {why}"
    return f"measures the {v}, not the gateway: {why}"


def foreign_cpu(c, host, kernel_gateway=False):
    """The CPU of one machine over the window used by processes tunbed did not start: its
    CPUs' busy time less the watched threads' (the gateway's, the generator's, tunbed-wire's),
    with steal, and, where the kernel accounts IRQ time apart from the threads
    (facts.irq_time_accounting), softirq and irq kept apart. Without that accounting (this
    kernel) the kernel charges softirq to the thread it interrupted: the watched threads' time
    already holds theirs, and softirq run in ksoftirqd or in another process counts here. With
    a kernel gateway (no gateway process on any machine), softirq is kept apart too: it is the
    gateway's own work, run in ksoftirqd as much as in the threads it interrupted (the figure
    is then a lower bound). Percent of the machine's CPU capacity (CPUs x window); softirq and
    steal beside it."""
    span, cores = c["span"], c["cores"]
    cap = len(cores) * span
    if not cap:
        return {"foreign_pct": None, "softirq_pct": None, "steal_pct": None, "flagged": False}

    def part(*fields):
        return sum(s.get(f, 0.0) for s in cores.values() for f in fields) / 100 * span

    irq_apart = kernel_gateway or bool((host.get("facts") or {}).get("irq_time_accounting"))
    watched = sum(t["seconds"] for t in c["threads"].values())
    kept = part("steal") + (part("softirq", "irq") if irq_apart else 0.0)
    pct = 100 * max(0.0, c["busy_s"] - watched - kept) / cap
    return {"foreign_pct": pct, "softirq_pct": 100 * part("softirq", "irq") / cap,
            "steal_pct": 100 * part("steal") / cap, "flagged": pct >= FOREIGN_FLAG}


def foreign_words(foreign):
    """'processes tunbed did not start used 23% of this machine's CPU (softirq 12% apart)' for
    each flagged machine; None when none is."""
    parts = [f"processes tunbed did not start used {f['foreign_pct']:.0f}% of "
             f"{f['host'] or 'the machine'}'s CPU (softirq {f['softirq_pct']:.0f}% apart)"
             for f in foreign if f["flagged"]]
    return "; ".join(parts) or None
