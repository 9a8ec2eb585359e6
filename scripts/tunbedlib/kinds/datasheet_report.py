"""The datasheet's report (datasheet.py): each part's records analysed by its own kind's
functions (matrix_report.analyse and the verdict, ndr_report.summarise, failover_analysis),
then one page per gateway (a section: a figure a row), the gateways side by side (a column
each), a short legend of what each figure means with the docs that say how it was measured,
and the per-core CPU of each gateway at the most sessions. summary.json keeps every figure."""

import os

from .. import analysis
from ..document import Csv, Document, Plot, Section, Table, footer, title
from . import datasheet_interop, datasheet_tos, failover_analysis, matrix_report, matrix_verdict, ndr_report
from .datasheet_plan import SESSIONS, SIZES, ndr_size
from .ndr_plan import DIRECT, FRACTIONS, IMIX, size_key, size_of, size_words

LEGEND = (
    "Gbit/s: what the receiver counted over the measured window, the median over the "
    "repeats (min-max); TCP through the gateway on ras.topo (`docs/runner.md`).",
    "limited by: the bottleneck verdict of the median repeat (gateway, generator, link, box, "
    "unclear); only a gateway-bound figure measures the gateway (`docs/scaling.md`, the "
    "bottleneck verdict).",
    "emulated cores: each gateway thread given a share of one core and a pin, so that the "
    "gateway and not the box is the limit; a kernel gateway has no threads to budget "
    "(`docs/scaling.md`, emulated cores). generator budget: with --client-cpu, each traffic "
    "client's share of one core, so that a point the generator limits shows as such.",
    "saturated thread: on each core busy 95% or more, the thread that ran on it most (the "
    "per-core plots below show each core over time).",
    "cores per Gbit/s: the gateway's own CPU-seconds per GB divided by 8; CPU-s/GB: CPU "
    "seconds per 10^9 bytes received, of the whole box and of the gateway's processes.",
    "retransmits/GB: TCP retransmissions per 10^9 bytes received; RTT loaded: the median "
    "request/response round trip beside the load.",
    "DSCP carried: the frames on gwa's transit whose outer DSCP is their inner packet's, of "
    "those whose inner packet was marked DSCP 46 (RFC 2983's uniform model); ECN at "
    "encapsulation: the outer ECN field seen around inner ECT(0), ECT(1) and CE "
    "(RFC 6040's normal mode copies each; Linux resets CE to ECT(0)); CE at decapsulation: "
    "outer CE around ECT(0), ECT(1) and Not-ECT, counted at the server by DS field: the ECT "
    "ones must arrive CE, the Not-ECT one be dropped (RFC 6040, 4.2). Measured by: wire "
    "(tunbed-wire decodes the transit; the outer CE crafted in plain GRE packets there) or "
    "capture (any tunnel on one UDP port, encrypted ones too: the outer TOS byte read on the "
    "transit by a packet socket, the session's datagrams told apart by their length; the "
    "outer CE set by a tc program on gwb's transit) (`docs/datasheet.md`, `docs/wire.md`).",
    "marks / drops under load: 64 TCP sessions that negotiated ECN (CUBIC) through the "
    "gateway; marks: the segments the senders saw acknowledged under a CE echo "
    "(TcpExtTCPDeliveredCE: more than zero when CE marks reached the receivers, on the "
    "gateway or in a queue of its devices), retransmits/GB: the senders' retransmitted "
    "segments (TcpRetransSegs) per 10^9 bytes received; beside them the gateway's own counts "
    "where it has them (gregw: aqm_marked and its drops by reason) (`docs/datasheet.md`).",
    "NDR, PDR: the highest rate forwarded with no loss and with at most 0.5% loss, found in "
    "one search against the generator's own ceiling; latency at 10, 50 and 90% of PDR "
    "(`docs/ndr.md`): at 64- and 1518-byte frames and the simple IMIX (7:4:1 of 64, 594 and "
    "1518-byte frames, its largest member capped at what the tunnel carries, said beside the "
    "figure).",
    "failover outage: the datagrams a constant-rate UDP stream lost, divided by its rate "
    "(RFC 6201), when the active gateway of a pair fails; sessions survived: the verified TCP "
    "sessions that did not reset (`docs/failover.md`).",
    "interoperability: gregw against the kernel's GRE, ip6gre and fou in a qemu guest, the "
    "guest tests' result as each run of one records it for the build it ran, shown only for "
    "this datasheet's build id (`docs/testing.md`, `docs/datasheet.md`).",
)
def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def status_words(st):
    """'not applicable: why' of a part's status."""
    return f"{st['status']}: {st['reason']}" if st.get("reason") else st["status"]


def failures(meta):
    """{(part, gateway): [errors]} of the items whose gateway did not come up."""
    out = {}
    for f in meta.get("failed") or []:
        out.setdefault((f["part"], f["gateway"]), []).append(f["error"])
    return out


def median(s, digits, scale=1.0):
    return f"{s['median'] * scale:.{digits}f}" if s else "-"


def throughput(res, gateway):
    """{sessions: the point's numbers} of a gateway, from the matrix's analysis."""
    out = {}
    for p in res.points:
        s = res.summary.get(p["key"])
        if p["gateway"] != gateway or not s:
            continue
        rec = next(r for r in res.records if r["point"]["key"] == p["key"]
                   and r["repeat"] == s["median_repeat"])
        out[str(p["sessions"])] = {
            "key": p["key"], "config": p["config"], "repeats": s["repeats"],
            "bits_per_second": s["bits_per_second"], "verdict": s.get("verdict"),
            "verdict_reason": s.get("verdict_reason"), "limited_by": matrix_verdict.cell(s),
            "saturated": analysis.saturating_threads(s["saturated"]),
            "box_cpu_s_per_gb": s["box_cpu_s_per_gb"],
            "gateway_cpu_s_per_gb": s["gateway_cpu_s_per_gb"],
            "gateway_cores_per_gbps": (round(s["gateway_cpu_s_per_gb"]["median"] / 8, 4)
                                       if s["gateway_cpu_s_per_gb"] else None),
            "retransmits_per_gb": s["retransmits_per_gb"],
            "rr_load_p50_ms": s["rr_load_p50_ms"], "gateway_info": s.get("gateway_info"),
            "emulated_cores": emulated(rec), "generator_budget": generator_budget(rec)}
    return out


def emulated(rec):
    """What the record says of the gateway's budget: its threads' share, or why none."""
    if rec.get("budget_note"):
        return f"no: {rec['budget_note']}"
    budgets = [b for h in rec.get("hosts") or [] for b in (h.get("budgets") or {}).values()]
    if not budgets:
        return "off"
    shares = sorted({b["share_pct"] for b in budgets})
    return (f"{plural(len(budgets), 'thread')} at {'/'.join(f'{x:g}' for x in shares)}% of a "
            "core each")


def generator_budget(rec):
    """What the record says of the traffic clients' budget (--client-cpu): each one's share,
    or off."""
    budgets = [b for h in rec.get("hosts") or []
               for b in (h.get("process_budgets") or {}).values()]
    if not budgets:
        return "off"
    shares = sorted({b["share_pct"] for b in budgets})
    return (f"{plural(len(budgets), 'traffic client')} at {'/'.join(f'{x:g}' for x in shares)}% "
            "of a core each, all its threads together")


# The IMIX of a datasheet written before it had one.
IMIX_BEFORE = "not run: this datasheet was made before tunbed searched IMIX frames"


# The DSCP/ECN part of a datasheet written before it had one.
TOS_BEFORE = {"status": "not run", "reason": "this datasheet was made before tunbed measured "
                                             "DSCP and ECN"}


def tos_of(recs, gateway):
    """datasheet_tos.analyse of the gateway's DSCP/ECN record, or None."""
    return next((datasheet_tos.analyse(r["record"]) for r in recs if r["gateway"] == gateway),
                None)


def searches(recs, gateway):
    """{size: ndr_report.summarise of the gateway's search}."""
    return {str(r["frame"]["lan"]): ndr_report.summarise(r) for r in recs
            if r["point"]["gateway"] == gateway}


def failovers(recs, gateway):
    rows = [failover_analysis.analyse(r["record"]) for r in recs if r["gateway"] == gateway]
    return failover_analysis.summarise(rows)


def analyse(meta, recs, complete):
    """Every gateway's figures: {gateway: {part: numbers or status}}, and the matrix's
    Results of the throughput part."""
    by = {}
    for r in recs:
        by.setdefault(r["part"], []).append(r)
    res = matrix_report.analyse([r["record"] for r in by.get("throughput", [])], {}, complete)
    nd = [r["record"] for r in by.get("ndr", [])]
    out = {}
    for g in meta["gateways"]:
        parts = meta["parts"][g]
        out[g] = {"throughput": throughput(res, g), "tos": tos_of(by.get("tos", []), g),
                  "ndr": searches(nd, g),
                  "failover": failovers(by.get("failover", []), g), "parts": parts}
    return out, res, searches(nd, DIRECT)


def fails(meta, part, g):
    errs = failures(meta).get((part, g))
    return f"FAILED: {'; '.join(dict.fromkeys(errs))}" if errs else None


def throughput_rows(meta, g, t):
    st = meta["parts"][g]["throughput"]
    if st["status"] != "run":
        return [(f"throughput, {plural(n, 'session')}", status_words(st)) for n in SESSIONS]
    failed = fails(meta, "throughput", g)
    info = next((x["gateway_info"] for x in t.values() if x.get("gateway_info")), None) or {}
    rows = [("version", info.get("version") or "-"), ("cipher", info.get("cipher") or "-"),
            ("inner MTU", str(info.get("mtu") or "-")),
            ("emulated cores", next((x["emulated_cores"] for x in t.values()), "-")),
            ("generator budget", next((x["generator_budget"] for x in t.values()), "-"))]
    for n in SESSIONS:
        x = t.get(str(n))
        if not x:
            rows.append((f"throughput, {plural(n, 'session')}", failed or "not measured"))
            continue
        b = x["bits_per_second"]
        rate = f"{b['median'] / 1e9:.2f} Gbit/s" if b else "no throughput"
        if b and b["n"] > 1:
            rate += f" ({b['min'] / 1e9:.2f}-{b['max'] / 1e9:.2f})"
        rows += [(f"throughput, {plural(n, 'session')}", f"{rate}; limited by {x['limited_by']}"),
                 (f"saturated thread, {plural(n, 'session')}", x["saturated"])]

    def each(f):
        return " / ".join(f(t[str(n)]) if str(n) in t else "-" for n in SESSIONS)
    at = f" at {' / '.join(map(str, SESSIONS))} sessions"
    rows += [
        ("gateway cores per Gbit/s" + at, each(
            lambda x: f"{x['gateway_cores_per_gbps']:.2f}"
            if x["gateway_cores_per_gbps"] is not None else "-")),
        ("CPU-s/GB box" + at, each(lambda x: median(x["box_cpu_s_per_gb"], 1))),
        ("CPU-s/GB gateway" + at, each(lambda x: median(x["gateway_cpu_s_per_gb"], 1))),
        ("retransmits/GB" + at, each(lambda x: median(x["retransmits_per_gb"], 0))),
        ("RTT loaded p50 ms" + at, each(lambda x: median(x["rr_load_p50_ms"], 3)))]
    return rows


def tos_rows(meta, g, tos):
    st = meta["parts"][g].get("tos") or TOS_BEFORE
    if st["status"] != "run":
        return [(what, status_words(st)) for _, what in datasheet_tos.ROWS]
    if not tos:
        v = fails(meta, "tos", g) or "not measured"
        return [(what, v) for _, what in datasheet_tos.ROWS]
    return [(what, tos[k]["words"]) for k, what in datasheet_tos.ROWS]


def ndr_rows(meta, g, nd):
    rows = []
    st = meta["parts"][g]["ndr"]
    for size in SIZES:
        why = ndr_size(meta["parts"][g], size)
        if size == IMIX and st["status"] == "run" and IMIX not in (st.get("sizes") or {}):
            why = IMIX_BEFORE
        s = nd.get(str(size))
        what = f"NDR / PDR, {size_words(size)}"
        if why:
            rows.append((what, why))
            continue
        if not s:
            rows.append((what, fails(meta, "ndr", g) or "not measured"))
            continue
        n, p = s["ndr"], s["pdr"]
        note = ndr_report.note(s)
        rows.append((what, f"{ndr_report.mpps(n['mpps'])} / {ndr_report.mpps(p['mpps'])} Mpps "
                           f"({ndr_report.gbps(n['inner_gbps'])} / "
                           f"{ndr_report.gbps(p['inner_gbps'])} Gbit/s inner)"
                           + (f"; {note}" if note else "")))
        lat = [s["latency"].get(str(f)) or {} for f in FRACTIONS]
        rows.append((f"latency p50 ms at 10 / 50 / 90% of PDR, {size_words(size)}",
                     " / ".join(f"{x['p50_ms']:.3f}" if x.get("p50_ms") is not None else "-"
                                for x in lat)))
    return rows


def failover_rows(meta, g, fo):
    """A row per fault the run planned: its outage and the sessions that survived it, or why
    there is none."""
    st = meta["parts"][g]["failover"]
    rows = []
    for fault in meta["failover"]["faults"]:
        s = fo.get(fault)
        if st["status"] != "run":
            v = status_words(st)
        elif not s:
            v = fails(meta, "failover", g) or "not measured"
        else:
            v = (f"{failover_analysis.fmt(s['outage_s'], 'outage')}, takeover "
                 f"{failover_analysis.fmt(s['takeover_s'])}; {s['survived_min']} of "
                 f"{s['sessions']} sessions survived")
        rows.append((f"failover, {fault}", v))
    return rows


def rows_of(meta, g, figs):
    return (throughput_rows(meta, g, figs["throughput"]) + tos_rows(meta, g, figs["tos"])
            + ndr_rows(meta, g, figs["ndr"])
            + failover_rows(meta, g, figs["failover"])
            + [("interoperability", interop_words(meta["parts"][g]["interop"]))])


def interop_words(st):
    return datasheet_interop.words(st) if st["status"] == "run" else status_words(st)


def headline(meta, g, rows):
    """One line per gateway: throughput at the fewest and most sessions, NDR at 64 bytes,
    the failover."""
    d = dict(rows)
    words = [f"{g}:"]
    for n in (SESSIONS[0], SESSIONS[-1]):
        v = d.get(f"throughput, {plural(n, 'session')}") or d.get("throughput")
        words.append(f"{plural(n, 'session')} {v};")
    words.append(f"NDR / PDR 64 B {d.get(f'NDR / PDR, {SIZES[0]}-byte frames')};")
    words.append("failover " + "; ".join(f"{k.removeprefix('failover, ')} {v.split(': ')[0]}"
                                          for k, v in rows if k.startswith("failover, ")))
    return " ".join(words)


def side_by_side(pages):
    """(header, rows): every figure a row, every gateway a column, in the pages' order."""
    figures = list(dict.fromkeys(f for rows in pages.values() for f, _ in rows))
    vals = {g: dict(rows) for g, rows in pages.items()}
    return ("figure", *pages), [[f, *(vals[g].get(f, "-") for g in pages)] for f in figures]


def core_plots(figs, res):
    """Per gateway, the per-core CPU of the median repeat at the most sessions."""
    out = []
    for g, f in figs.items():
        t = f["throughput"]
        if not t:
            continue
        x = t[max(t, key=int)]
        key = x["key"]
        want = res.summary[key]["median_repeat"]
        rec = next(r for r in res.records if r["point"]["key"] == key and r["repeat"] == want)
        name = f"cores-{key}"
        ttl = f"{x['config']}, {max(t, key=int)} sessions: per-core CPU"
        out.append(Plot(ttl, name, draw=matrix_report.drawing("cores", name, rec, ttl)))
    return out


def where(meta, recs, nd):
    """Which parts ran where: every part in namespaces of this machine, or on the hosts of an
    inventory the throughput (its records' hosts, by role) and the searches (their own words,
    ndr_report.where_words), the parts that did not run there said with their rows."""
    if meta.get("mode") != "hosts":
        return ("Where each part ran: in network namespaces of this machine (throughput, "
                "DSCP/ECN and NDR on ras.topo, the generator alone on direct.topo, the failover "
                "on ras-pair.topo).")
    names = {}
    for r in (r for r in recs if r["part"] == "throughput"):
        for h in r["record"].get("hosts") or []:
            for role in h.get("roles") or ():
                names.setdefault(role, []).append(h["name"])
    who = lambda role: " and ".join(dict.fromkeys(names.get(role) or ["?"]))  # noqa: E731
    words = [f"On the hosts of `{os.path.basename(meta.get('hosts') or '')}` (docs/hosts.md)"
             + (f", throughput: the gateways on {who('gwa')} and {who('gwb')}, the traffic "
                f"between {who('client')} and {who('server')}." if names else ".")]
    words.append(ndr_report.where_words(nd, lead="NDR / PDR: ") or "")
    words.append("DSCP/ECN and the failover did not run on the hosts: their rows say why.")
    return " ".join(w for w in words if w)


def document(meta, recs, complete):
    figs, res, direct = analyse(meta, recs, complete)
    pages = {g: rows_of(meta, g, f) for g, f in figs.items()}
    sections = [Section(heading=g, id=f"gateway-{i}",
                        table=Table(("figure", "value"), [list(r) for r in rows],
                                    f"gateway-{i}"))
                for i, (g, rows) in enumerate(pages.items())]
    header, rows = side_by_side(pages)
    sections.append(Section(heading="Side by side", id="side-by-side",
                            table=Table(header, rows, "side-by-side")))
    sections.append(Section(heading="Legend", id="legend", paragraphs=list(LEGEND)))
    ceiling = {k: s["pdr"]["rate_pps"] for k, s in direct.items()}
    summary = {"meta": meta, "complete": complete,
               "gateways": {g: {"throughput": f["throughput"], "tos": f["tos"], "ndr": f["ndr"],
                                "failover": f["failover"], "parts": f["parts"],
                                "figures": [list(r) for r in pages[g]]}
                            for g, f in figs.items()},
               "ceiling_pps": ceiling,
               "runs": [{"key": r["key"], "bits_per_second": r["bits_per_second"]}
                        for r in res.runs]}
    plan = meta.get("plan") or {}
    return Document(
        title=title(meta), complete=complete,
        headline=[headline(meta, g, rows) for g, rows in pages.items()],
        notes=list(meta.get("notes", [])[1:]),
        paragraphs=[f"Chosen for {plan.get('words', 'the budget')}.",
                    where(meta, recs, [ndr_report.summarise(r["record"]) for r in recs
                                       if r["part"] == "ndr"]),
                    "The generator's ceiling (its PDR alone on a direct link): " + (
                        ", ".join(f"{size_words(size_of(k))} {v / 1e6:.3f} Mpps" for k, v in
                                  sorted(ceiling.items(), key=lambda kv: size_key(size_of(kv[0])))
                                  if v)
                        or "not measured") + "."],
        sections=sections, plots=core_plots(figs, res), footer=footer(),
        summary=summary,
        csv=[Csv("summary", ["gateway", "figure", "value"],
                 [[g, f, v] for g, rows in pages.items() for f, v in rows])])
