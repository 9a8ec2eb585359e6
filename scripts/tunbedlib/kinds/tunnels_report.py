"""The report of `tunbed tunnels` (tunnels.py): per tunnel count, the matrix's numbers of each run
(analysis.analyse: throughput, Jain's index across sessions, CPU-s/GB of the box and the gateway,
retransmits) and the tunnels' own: Jain's index across the tunnels that carried sessions (each
tunnel's throughput its sessions' sum), which tunnels carried sessions, gregw's setup time and
memory, and its per-tunnel counters checked against the sessions (check()); the medians of the
repeats with their range (analysis.spread). Pure: records in, a document out."""

import dataclasses

from .. import analysis
from ..document import Csv, Document, Section, Table, footer, title

# The numbers of a run the summary spreads over its repeats, with the analysis' own.
SPREAD = ("bits_per_second", "jain", "tunnel_jain", "box_cpu_s_per_gb", "gateway_cpu_s_per_gb",
          "retransmits", "setup_gwa_s", "setup_gwb_s", "rss_gwa_kib", "rss_gwb_kib")
CSV_HEADER = ["tunnels", "sessions", "repeats", "bits_per_second", "tunnel_jain", "session_jain",
              "box_cpu_s_per_gb", "gateway_cpu_s_per_gb", "retransmits", "setup_gwa_s",
              "setup_gwb_s", "rss_gwa_kib", "rss_gwb_kib", "counters_ok"]


@dataclasses.dataclass
class Results:
    meta: dict
    complete: bool
    runs: list
    summary: dict


def check(tunnels):
    """What gregw's per-tunnel counters say against the sessions: a list of problems in words,
    empty when every tunnel that carried sessions carried their bytes (gwb took out at least
    what the server received, inner headers on top), no gateway took out of a tunnel more than
    the other put in, each way, what one put in and the other did not take out is no more than
    what both lost on the way by tunnel (per-tunnel drops) and by none (the receiver's ring
    and pre-lookup drops, `unattributed`), and no tunnel without sessions carried a packet."""
    out, lost = [], {"gwb": 0, "gwa": 0}
    explained = dict((tunnels.get("unattributed") or {}))
    for t in tunnels["carried"]:
        a, b, name = t["gwa"], t["gwb"], t["name"]
        if not a["tx_bytes"] or not b["rx_bytes"]:
            out.append(f"{name} carried no bytes")
        elif not t.get("server_received"):
            out.append(f"{name}: its {t['sessions']} session{'s' if t['sessions'] > 1 else ''} "
                       "moved nothing")
        elif b["rx_bytes"] < t.get("server_received", 0):
            out.append(f"{name}: gwb took out {b['rx_bytes']} bytes, less than its sessions' "
                       f"{t['server_received']}")
        for way, x, y, to in (("to the server", a, b, "gwb"), ("back", b, a, "gwa")):
            if y["rx_packets"] > x["tx_packets"] or y["rx_bytes"] > x["tx_bytes"]:
                out.append(f"{name} {way}: {x['tx_packets']} packets, {x['tx_bytes']} bytes in, "
                           f"{y['rx_packets']} packets, {y['rx_bytes']} bytes out")
            lost[to] += max(0, x["tx_packets"] - y["rx_packets"])
        for role in ("gwa", "gwb"):
            explained[role] = explained.get(role, 0) + a.get("drops", 0) + b.get("drops", 0)
    for role, n in lost.items():
        if n > explained.get(role, 0):
            out.append(f"{n} packets to {role} lost on the way, {explained.get(role, 0)} "
                       "counted as dropped")
    if tunnels["idle"]["packets"]:
        out.append(f"{tunnels['idle']['packets']} packets on tunnels without sessions")
    return out


def lost(tunnels):
    """Packets one gateway put into a tunnel with sessions and the other did not take out."""
    return sum(max(0, t[x]["tx_packets"] - t[y]["rx_packets"]) for t in tunnels["carried"]
               for x, y in (("gwa", "gwb"), ("gwb", "gwa")))


def carried_words(carried, count):
    """Which tunnels carried sessions, and how many each, in words: 'all 100, 1 session each',
    't00000 to t00063 (64 of 1000), 1 session each'; with uneven shares, what Jain's index across
    tunnels would be with every session alike (below 1 for that alone)."""
    names = sorted(t["name"] for t in carried)
    per = sorted({t["sessions"] for t in carried})
    if not names:
        return f"none of {count}"
    if count == 1:
        return f"the one tunnel, {per[0]} session{'s' if per[0] > 1 else ''}"
    which = (f"all {count}" if len(names) == count
             else f"{names[0]} to {names[-1]} ({len(names)} of {count})" if len(names) > 1
             else f"{names[0]} (1 of {count})")
    if len(per) == 1:
        return f"{which}, {per[0]} session{'s' if per[0] > 1 else ''} each"
    alike = analysis.jain([t["sessions"] for t in carried])
    return (f"{which}, {per[0]} to {per[-1]} sessions each: with every session alike, Jain's "
            f"index across tunnels would be {alike:.3f}")


def analyse_run(rec):
    res = analysis.analyse(rec)
    setup, tunnels = rec["setup"], rec["tunnels"]
    res.update({
        "tunnels": rec["point"]["tunnels"], "sessions": rec["point"]["sessions"],
        "tunnel_jain": analysis.jain([t["bits_per_second"] for t in tunnels["carried"]]),
        "carried": carried_words(tunnels["carried"], rec["point"]["tunnels"]),
        "problems": check(tunnels), "lost_packets": lost(tunnels),
        **{f"setup_{r}_s": (setup.get(r) or {}).get("ready_s") for r in ("gwa", "gwb")},
        **{f"rss_{r}_kib": (setup.get(r) or {}).get("rss_kib") for r in ("gwa", "gwb")},
        **{f"rss_loaded_{r}_kib": ((rec.get("loaded") or {}).get(r) or {}).get("rss_kib")
           for r in ("gwa", "gwb")}})
    res["counters_ok"] = not res["problems"]
    return res


def analyse(recs, meta, complete):
    runs = sorted((analyse_run(r) for r in recs), key=lambda r: (r["tunnels"], r["repeat"]))
    base = analysis.summarise(runs)
    summary = {}
    for key, s in base.items():
        rs = [r for r in runs if r["key"] == key]
        summary[key] = {"tunnels": rs[0]["tunnels"], "sessions": rs[0]["sessions"],
                        "repeats": s["repeats"], "complete": s["complete"],
                        "median_repeat": s["median_repeat"],
                        **{k: analysis.spread([r.get(k) for r in rs]) for k in SPREAD},
                        "carried": rs[0]["carried"],
                        "counters_ok": all(r["counters_ok"] for r in rs),
                        "problems": [p for r in rs for p in r["problems"]][:20]}
    # What summary.json keeps of each run: its numbers, not its CPU samples.
    keep = ("key", "repeat", "tunnels", "sessions", "complete", "measured_s", "bytes", *SPREAD,
            "rss_loaded_gwa_kib", "rss_loaded_gwb_kib", "carried", "lost_packets", "counters_ok",
            "problems")
    return Results(meta, complete, [{k: r.get(k) for k in keep} for r in runs], summary)


def fmt(s, scale=1.0, digits=2):
    return analysis.fmt(s, scale, digits)


def points(res):
    return sorted(res.summary.values(), key=lambda p: p["tunnels"])


def headline(p, gateway):
    bps = p["bits_per_second"]
    words = [f"{p['tunnels']} tunnel{'s' if p['tunnels'] > 1 else ''}, {p['sessions']} "
             f"session{'s' if p['sessions'] > 1 else ''}: "
             + (f"{bps['median'] / 1e9:.2f} Gbit/s" if bps else "no throughput")]
    if p["tunnel_jain"]:
        words.append(f"Jain across tunnels {p['tunnel_jain']['median']:.3f}")
    if p["setup_gwa_s"]:
        words.append(f"setup {p['setup_gwa_s']['median']:.3f} s")
    if p["rss_gwa_kib"]:
        words.append(f"RSS {p['rss_gwa_kib']['median'] / 1024:.1f} MiB")
    words.append("counters match" if p["counters_ok"] else "COUNTERS DISAGREE")
    return f"{gateway} " + ", ".join(words)


def main_table(res):
    rows = [[str(p["tunnels"]), str(p["sessions"]), fmt(p["bits_per_second"], 1e-9),
             fmt(p["tunnel_jain"], digits=3), fmt(p["jain"], digits=3),
             fmt(p["box_cpu_s_per_gb"]), fmt(p["gateway_cpu_s_per_gb"]),
             fmt(p["retransmits"], digits=0), fmt(p["setup_gwa_s"], digits=3),
             fmt(p["setup_gwb_s"], digits=3), fmt(p["rss_gwa_kib"], 1 / 1024, 1),
             fmt(p["rss_gwb_kib"], 1 / 1024, 1), "yes" if p["counters_ok"] else "NO"]
            for p in points(res)]
    return Table(("tunnels", "sessions", "Gbit/s", "Jain tunnels", "Jain sessions",
                  "box CPU-s/GB", "gateway CPU-s/GB", "retransmits", "setup gwa s",
                  "setup gwb s", "RSS gwa MiB", "RSS gwb MiB", "counters match"), rows, "points")


def method(meta):
    n = meta.get("repeats")
    return (f"{meta.get('gateway', 'gregw')} ({meta.get('mode', 'gre')}, {meta.get('workers')} "
            "workers) on the tunnels bed in namespaces, set up anew for every run with the "
            f"tunnel files of `topo/tunnels.sh N`; {meta.get('sessions')} TCP sessions (push) "
            "spread over the tunnels round-robin (session i on tunnel i mod N, tunbed-traffic "
            f"`--pairs`), {meta.get('warmup', 0):g} s of warm-up, then {meta.get('time', 0):g} s "
            f"measured; {n} repeat{'s' if n != 1 else ''}, medians with their range. Setup: the "
            "seconds from gregw's start until its control socket answers (its tunnels read, "
            "their prefixes routed, the table published), and its resident memory then. A "
            "tunnel's throughput is its sessions' sum; Jain's index across tunnels is over "
            "those that carried sessions. CPU-s/GB as the matrix computes it (docs/runner.md).")


def document(res):
    gateway = res.meta.get("gateway", "gregw")
    pts = points(res)
    carried = [f"{p['tunnels']} tunnel{'s' if p['tunnels'] > 1 else ''}: {p['carried']}"
               for p in pts]
    problems = [f"{p['tunnels']} tunnels: {x}" for p in pts for x in p["problems"]]
    return Document(
        title=title(res.meta), complete=res.complete,
        headline=[headline(p, gateway) for p in pts],
        paragraphs=[method(res.meta)],
        sections=[
            Section(table=main_table(res)),
            Section("Which tunnels carried sessions", "carried", items=carried),
            Section("Per-tunnel counters against the sessions", "counters", paragraphs=[
                "For every tunnel that carried sessions: neither gateway took out of it more "
                "than the other put in, and gwb took out at least the bytes the server "
                "received on its sessions (inner headers on top); the packets put in and not "
                "taken out are no more than the gateways counted as dropped (by tunnel, and "
                "by none: the receiver's packet rings and drops before the tunnel is known); "
                "no packet on a tunnel without sessions (gregw's `tunnels` pages and stats, "
                "after the load)."
                + (" Every count agrees." if not problems else " Where they disagree:")],
                items=problems)],
        footer=footer(),
        summary={"meta": res.meta, "complete": res.complete, "summary": res.summary,
                 "runs": res.runs},
        csv=[Csv("summary", CSV_HEADER, [
            [p["tunnels"], p["sessions"], p["repeats"],
             *[(p[k] or {}).get("median") for k in ("bits_per_second", "tunnel_jain", "jain",
                                                     "box_cpu_s_per_gb", "gateway_cpu_s_per_gb",
                                                     "retransmits", "setup_gwa_s", "setup_gwb_s",
                                                     "rss_gwa_kib", "rss_gwb_kib")],
             p["counters_ok"]] for p in pts])])
