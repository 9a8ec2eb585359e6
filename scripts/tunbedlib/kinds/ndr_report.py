"""An NDR results directory (ndr.py): searches/*.json, one per gateway configuration and frame
size, and meta.json. From them: summary.json, summary.csv (a row per search), trials.csv (a
row per trial), report.md and report.html with the headline in words first, and the plots:
loss ratio against offered load per frame size, NDR and PDR against frame size with the
generator's ceiling, latency at 10, 50 and 90% of PDR. `tunbed report DIR` rebuilds them.

Rates: Mpps is millions of datagrams a second; Gbit/s inner counts the inner IP packets' bits,
Gbit/s on the wire the transit frames' with their preamble and inter-frame gap (20 bytes), what
a link must carry at that rate. CPU at PDR is over the final trial at the PDR rate: the box's
busy cores (every process, the generator's too) and the gateway's own processes', in cores,
and the CPU of processes tunbed did not start (verdict.foreign_cpu: flagged in the headline
from verdict.FOREIGN_FLAG percent of a machine)."""

import os

from .. import analysis, verdict
from ..document import Csv, Document, Plot, Section, Table, footer, title
from .ndr_plan import DIRECT, FRACTIONS, IMIX, WIRE_GAP, imix_note, size_key, size_of, size_words


def order(recs):
    """The records in the order the run measured their configurations, sizes ascending."""
    first = {}
    for r in sorted(recs, key=lambda r: r.get("started", 0)):
        first.setdefault(r["point"]["config"], len(first))
    return sorted(recs, key=lambda r: (first[r["point"]["config"]], size_key(r["frame"]["lan"])))


def label(s):
    """A search's configuration for people."""
    c = s["config"]
    return "direct (the generator alone)" if c == DIRECT else c


def rates(bound, fr):
    """A bound's rate in Mpps, Gbit/s of inner packets and Gbit/s on the wire; Nones if none.
    An IMIX frame's sizes are the means over its mix: the bits of the mix's datagrams."""
    pps = bound.get("rate")
    if pps is None:
        return None, None, None
    return (pps / 1e6, pps * fr["inner_ip"] * 8 / 1e9,
            pps * (fr["transit"] + WIRE_GAP) * 8 / 1e9)


def trial_cpu(rec, trial):
    """(box busy cores, gateway cores, the CPU of processes tunbed did not start per machine:
    verdict.foreign_cpu) over a trial's measured window; Nones without samples."""
    hosts = rec.get("hosts") or []
    start, end = trial.get("measure_start_mono_s"), trial.get("measure_end_mono_s")
    if not hosts or start is None or end is None or end <= start:
        return None, None, None
    cs = [(h, analysis.host_cpu(h, start, end)) for h in hosts]
    if not all(c["span"] for _, c in cs):
        return None, None, None
    box = sum(c["busy_s"] / c["span"] for _, c in cs)
    gw = sum(c["gateway_s"] / c["span"] for _, c in cs)
    has_gw = any(c["has_gateway"] for _, c in cs)
    foreign = [dict(verdict.foreign_cpu(c, h, kernel_gateway=not has_gw), host=h.get("name"))
               for h, c in cs]
    return box, gw if has_gw else None, foreign


def summarise(rec):
    """The numbers of one search."""
    res, fr = rec.get("result") or {}, rec["frame"]
    trials = rec.get("trials") or []
    out = {"key": rec["point"]["key"], "config": rec["point"]["config"],
           "gateway": rec["point"]["gateway"], "frame": fr, "trials": len(trials),
           "trial_seconds": sum(t["duration"] for t in trials),
           "invalid_trials": sum(not t["valid"] for t in trials),
           "max_rate": (rec.get("params") or {}).get("max_rate")}
    if rec.get("where"):  # format 3: which hosts ran it
        out["where"] = rec["where"]
    for name in ("ndr", "pdr"):
        b = res.get(name) or {}
        mpps, inner, wire = rates(b, fr)
        out[name] = {"rate_pps": b.get("rate"), "upper_pps": b.get("upper"), "mpps": mpps,
                     "inner_gbps": inner, "wire_gbps": wire, "width": b.get("width"),
                     "at_max": b.get("at_max"), "below_min": b.get("below_min"),
                     "limited": b.get("limited")}
    lower = (res.get("pdr") or {}).get("lower_trial")
    box, gw, foreign = trial_cpu(rec, trials[lower]) if lower is not None and \
        lower < len(trials) else (None, None, None)
    out["box_cores_at_pdr"], out["gateway_cores_at_pdr"] = box, gw
    out["foreign_at_pdr"] = foreign
    out["foreign_flagged"] = any(f["flagged"] for f in foreign or [])
    out["latency"] = {}
    for t in rec.get("latency_trials") or []:
        lat = t.get("latency") or {}
        out["latency"][str(t["fraction"])] = {
            "rate_pps": t["rate"], "samples": lat.get("samples"), "valid": t["valid"],
            "lost": t["lost"], **{k: lat.get(k) for k in ("p50_ms", "p90_ms", "p99_ms",
                                                           "max_ms")}}
    return out


def note(s):
    """What a search's result is, where it is not the gateway's own limit; an IMIX whose
    members the tunnel could not carry as they are."""
    words = [imix_note(s["frame"])] if imix_note(s["frame"]) else []
    for name in ("ndr", "pdr"):
        b = s[name]
        if b["below_min"]:
            words.append(f"{name.upper()} below the lowest rate")
        elif s["gateway"] == DIRECT:
            continue  # the generator's limit is what it measures
        elif b["at_max"]:
            words.append(f"{name.upper()} at the generator's ceiling")
        elif b["limited"]:
            words.append(f"{name.upper()} bound by the generator")
    return "; ".join(dict.fromkeys(words))


def both(lat):
    """Whether a latency has both its p50 and its p99."""
    return lat.get("p50_ms") is not None and lat.get("p99_ms") is not None


def mpps(x):
    return f"{x:.3f}" if x is not None else "-"


def gbps(x):
    return f"{x:.2f}" if x is not None else "-"


def sizes_words(fr):
    where = "the link" if not fr["overhead"] else "transit"
    if fr["lan"] == IMIX:
        mix = fr.get("mix") or []
        return (f"IMIX frames ({'/'.join(str(m['lan']) for m in mix)} bytes "
                f"{':'.join(str(m['weight']) for m in mix)}, a mean of "
                f"{fr['inner_ip']:.1f}-byte inner IP packets, {fr['transit']:.1f}-byte frames "
                f"on {where})")
    return (f"{fr['lan']}-byte frames ({fr['inner_ip']}-byte inner IP packets, "
            f"{fr['transit']}-byte frames on {where})")


def headline(summaries):
    """Per configuration, the smallest and the largest frame: NDR and PDR in words."""
    lines, by = [], {}
    for s in summaries:
        by.setdefault(s["config"], []).append(s)
    for config, ss in by.items():
        ss = sorted(ss, key=lambda x: size_key(x["frame"]["lan"]))
        fixed = [x for x in ss if x["frame"]["lan"] != IMIX]
        shown = [fixed[0], fixed[-1]] if len(fixed) > 1 else fixed
        for s in shown + [x for x in ss if x["frame"]["lan"] == IMIX]:
            n, p = s["ndr"], s["pdr"]
            text = (f"{label(s)}, {sizes_words(s['frame'])}: NDR {mpps(n['mpps'])} Mpps "
                    f"({gbps(n['inner_gbps'])} Gbit/s inner, {gbps(n['wire_gbps'])} on the "
                    f"wire), PDR {mpps(p['mpps'])} Mpps")
            lat = s["latency"].get(str(FRACTIONS[-1])) or {}
            if both(lat):
                text += (f"; at {FRACTIONS[-1]:.0%} of PDR latency p50 {lat['p50_ms']:.3f} ms, "
                         f"p99 {lat['p99_ms']:.3f} ms")
            if note(s):
                text += f" ({note(s)})"
            lines.append(text)
    # Per search: other processes busy during the PDR's trial (verdict.FOREIGN_FLAG).
    lines += [f"{label(s)}, {size_words(s['frame']['lan'])}: at PDR "
              f"{verdict.foreign_words(s['foreign_at_pdr'])} (flagged from "
              f"{verdict.FOREIGN_FLAG:g}%): its rates may be low"
              for s in summaries if s.get("foreign_flagged")]
    return lines


HEADER = ("gateway", "frame B", "inner IP B", "transit frame B", "NDR Mpps", "NDR Gbit/s inner",
          "NDR Gbit/s wire", "PDR Mpps", "PDR Gbit/s inner", "PDR Gbit/s wire",
          *(f"latency at {f:.0%} p50 / p99 ms" for f in FRACTIONS), "box cores at PDR",
          "gateway cores at PDR", "trials", "note")


def cells(s):
    n, p = s["ndr"], s["pdr"]
    lat = []
    for f in FRACTIONS:
        x = s["latency"].get(str(f)) or {}
        lat.append(f"{x['p50_ms']:.3f} / {x['p99_ms']:.3f}" if both(x) else "-")
    cores = lambda x: f"{x:.2f}" if x is not None else "-"  # noqa: E731
    fr = s["frame"]
    mean = lambda x: f"{x:.1f}" if isinstance(x, float) else str(x)  # noqa: E731
    return [label(s), str(fr["lan"]), mean(fr["inner_ip"]), mean(fr["transit"]), mpps(n["mpps"]),
            gbps(n["inner_gbps"]), gbps(n["wire_gbps"]), mpps(p["mpps"]), gbps(p["inner_gbps"]), gbps(p["wire_gbps"]),
            *lat, cores(s["box_cores_at_pdr"]), cores(s["gateway_cores_at_pdr"]),
            f"{s['trials']} ({s['trial_seconds']:.0f} s)", note(s) or "-"]


def method(meta):
    nd = meta.get("ndr") or {}
    where = (f"On the hosts of `{os.path.basename(meta.get('hosts') or '')}`"
             if meta.get("mode") == "hosts" else
             f"Topology `{meta.get('topology')}`, the generator alone on "
             f"`{meta.get('direct_topology')}`")
    return (f"{where}; {nd.get('flows')} UDP flows. Each search looks "
            f"for NDR (no datagram lost) and PDR (at most {nd.get('pdr_loss')}% lost) together, "
            f"as MLRsearch does: trials of {nd.get('initial_time')} s first, then longer, the "
            f"final ones {meta.get('time')} s, until the bounds are within {nd.get('width')} "
            "of each other (relative). A trial counts only where the generator offered the rate "
            "within 1% and its receiver dropped nothing; loss is counted by sequence number. The "
            "highest rate offered to a gateway is the generator's own PDR at that frame size. "
            "Frame sizes: the Ethernet frame the client sends (FCS included), its inner IP "
            "packet, and the frame the tunnel puts on transit. Gbit/s inner: the inner IP "
            "packets; on the wire: transit frames with preamble and gap. Latency: round trips "
            "of sampled datagrams (the server's hold taken out) during trials of the final "
            "duration at 10, 50 and 90% of PDR. CPU: over the final trial at PDR, the box's "
            "busy cores and the gateway's processes', in cores. docs/ndr.md.")


def where_words(summaries, lead="Where each part ran (hosts, docs/hosts.md): "):
    """On hosts: which hosts ran the generator alone and the gateways, in one sentence (the
    records' `where`) after lead; None in namespaces."""
    parts = []
    for s in summaries:
        w = s.get("where") or {}
        if w.get("mode") != "hosts":
            continue
        ends = f"between {w['client']} and {w['server']}"
        gws = f"{w.get('gwa') or '?'} and {w.get('gwb') or '?'}"
        if w["path"] == "direct":
            words = f"the generator alone {ends} (directly, to {w['target']})"
        elif w["path"] == "route":
            words = (f"the generator alone {ends} through the gateway hosts' routing (route, "
                     f"{gws}): the ceiling counts their forwarding too")
        else:
            words = f"the gateways on {gws}, the traffic {ends}"
        parts.append(words)
    if not parts:
        return None
    return lead + "; ".join(dict.fromkeys(parts)) + "."


TRIAL_FIELDS = ("config", "frame", "index", "purpose", "phase", "rate", "duration", "sent",
                "received", "lost", "loss_ratio", "valid", "offered_pps", "offered_ratio",
                "late", "not_sent", "receiver_drops", "latency_p50_ms", "latency_p99_ms")


def trial_rows(recs):
    for r in recs:
        for t in (r.get("trials") or []) + (r.get("latency_trials") or []):
            lat = t.get("latency") or {}
            row = dict(t, config=r["point"]["config"], frame=r["frame"]["lan"],
                       latency_p50_ms=lat.get("p50_ms"), latency_p99_ms=lat.get("p99_ms"))
            row.setdefault("index", "")
            row.setdefault("phase", "")
            row.setdefault("loss_ratio", (t["lost"] / t["sent"]) if t.get("sent") else None)
            yield [row.get(k) for k in TRIAL_FIELDS]


SUMMARY_HEADER = ["point", "gateway", "frame", "inner_ip", "transit", "ndr_pps", "ndr_upper_pps",
                  "ndr_inner_gbps", "ndr_wire_gbps", "pdr_pps", "pdr_upper_pps",
                  "pdr_inner_gbps", "pdr_wire_gbps", "box_cores_at_pdr", "gateway_cores_at_pdr",
                  "trials", "note"]


def summary_rows(summaries):
    for s in summaries:
        fr = s["frame"]
        yield [s["key"], s["gateway"], fr["lan"], fr["inner_ip"], fr["transit"],
               s["ndr"]["rate_pps"], s["ndr"]["upper_pps"], s["ndr"]["inner_gbps"],
               s["ndr"]["wire_gbps"], s["pdr"]["rate_pps"], s["pdr"]["upper_pps"],
               s["pdr"]["inner_gbps"], s["pdr"]["wire_gbps"], s["box_cores_at_pdr"],
               s["gateway_cores_at_pdr"], s["trials"], note(s)]


def ceiling_of(meta, summaries):
    """{frame size: the generator's PDR}: an earlier run's (meta.json) and this run's."""
    ceiling = {size_of(k): v for k, v in (meta.get("ceiling") or {}).items()}
    for s in summaries:
        if s["gateway"] == DIRECT and s["pdr"]["rate_pps"]:
            ceiling[s["frame"]["lan"]] = s["pdr"]["rate_pps"]
    return ceiling


def drawing(name, *args):
    """How to draw one of ndr_plots.py's plots (matplotlib imported only then)."""
    def draw(outdir):
        from . import ndr_plots
        return getattr(ndr_plots, name)(outdir, *args)
    return draw


def plot_list(recs, summaries, meta):
    """NDR and PDR against frame size; per frame size, loss against offered load and latency
    at 10, 50 and 90% of PDR (where there are samples)."""
    pdr_loss = (meta.get("ndr") or {}).get("pdr_loss", 0.5) / 100
    out = [Plot("NDR and PDR against frame size", "rates",
                draw=drawing("rates", summaries, ceiling_of(meta, summaries)))]
    for size in sorted({r["frame"]["lan"] for r in recs}, key=size_key):
        at = [r for r in recs if r["frame"]["lan"] == size]
        out += [Plot(f"Loss against offered load, {size_words(size)}", f"loss-f{size}",
                     draw=drawing("loss", at, size, pdr_loss)),
                Plot(f"Latency at 10, 50 and 90% of PDR, {size_words(size)}",
                     f"latency-f{size}", draw=drawing("latency", summaries, size))]
    return out


FOOTER = footer("`searches/*.json`, every trial of every search", "the numbers above are in "
                "`summary.json` and `summary.csv`, every trial in `trials.csv`")


def document(meta, complete, recs):
    """The report of an NDR run's search records."""
    recs = order(recs)
    summaries = [summarise(r) for r in recs]
    return Document(
        title=title(meta), complete=complete, headline=headline(summaries),
        notes=list(meta.get("notes", [])),
        paragraphs=[method(meta)] + [p for p in [where_words(summaries)] if p],
        sections=[Section(table=Table(HEADER, [cells(s) for s in summaries], "points"))],
        plots=plot_list(recs, summaries, meta), footer=FOOTER,
        summary={"meta": meta, "complete": complete, "searches": summaries},
        csv=[Csv("summary", SUMMARY_HEADER, list(summary_rows(summaries))),
             Csv("trials", TRIAL_FIELDS, list(trial_rows(recs)))])


