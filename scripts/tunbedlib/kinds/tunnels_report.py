"""The report of `tunbed tunnels` (tunnels.py): per gateway and tunnel count, the matrix's numbers
of each run (analysis.analyse: throughput, Jain's index across sessions, CPU-s/GB of the box and
the gateway, retransmits) and the tunnels' own: Jain's index across the tunnels that carried
sessions (each tunnel's throughput its sessions' sum), which tunnels carried sessions, the
gateway's setup time and memory (gregw's resident set, the kernel's growth for vxlan), and its
per-tunnel counters checked against the sessions (check()); the medians of the repeats with
their range (analysis.spread); and how far each gateway went (how_far()). A churn run's points
(a rate each, 0 the baseline) add the churn's own: the steady tunnels' throughput against the
baseline's, the longest receive stall of a steady session, the changes made against those
asked, the pings after an add and gregw's drops meanwhile (churn_run()). Pure: records in, a
document out."""

import dataclasses

from .. import analysis, units
from ..document import Csv, Document, Section, Table, footer, title
from .tunnels_churn import CTL_IN_FLIGHT

# The numbers of a run the summary spreads over its repeats, with the analysis' own.
SPREAD = ("bits_per_second", "jain", "tunnel_jain", "box_cpu_s_per_gb", "gateway_cpu_s_per_gb",
          "retransmits", "setup_gwa_s", "setup_gwb_s", "rss_gwa_kib", "rss_gwb_kib",
          "kernel_gwa_kib", "kernel_gwb_kib")
CSV_HEADER = ["gateway", "tunnels", "sessions", "repeats", "bits_per_second", "tunnel_jain",
              "session_jain", "box_cpu_s_per_gb", "gateway_cpu_s_per_gb", "retransmits",
              "setup_gwa_s", "setup_gwb_s", "rss_gwa_kib", "rss_gwb_kib", "kernel_gwa_kib",
              "kernel_gwb_kib", "counters_ok"]
HOW_FAR_HEADER = ["gateway", "largest_count", "setup_gwa_s", "setup_gwb_s", "beyond"]
# A churn run's numbers, spread over the repeats as SPREAD's are.
CHURN_SPREAD = ("stall_ms", "changes_asked", "changes_done", "pinged", "ping_first",
                "ping_later", "ping_never", "bad_key_gwa", "bad_key_gwb", "no_tunnel_gwa",
                "no_tunnel_gwb", "busy_retries")
CHURN_HEADER = ["churn_per_s", "tunnels", "sessions", "repeats", "bits_per_second",
                "of_baseline", "stall_ms", "changes_asked", "changes_done", "pinged",
                "ping_first", "ping_later", "ping_never", "bad_key_gwa", "bad_key_gwb",
                "no_tunnel_gwa", "no_tunnel_gwb", "busy_retries", "verified", "counters_ok"]


@dataclasses.dataclass
class Results:
    meta: dict
    complete: bool
    runs: list
    summary: dict
    how_far: list


def check(tunnels):
    """What gregw's per-tunnel counters say against the sessions: a list of problems in words,
    empty when every tunnel that carried sessions carried their bytes (gwb took out at least
    what the server received, inner headers on top), no gateway took out of a tunnel more than
    the other put in, each way, what one put in and the other did not take out is no more than
    what both lost on the way by tunnel (per-tunnel drops) and by none (the receiver's ring
    and pre-lookup drops, `unattributed`, each of them a superpacket of at most the sender's
    `segments_max` segments where gregw sent them whole), and no tunnel without sessions
    carried a packet."""
    out, lost = [], {"gwb": 0, "gwa": 0}
    per = tunnels.get("segments_max") or {}
    sender = {"gwb": "gwa", "gwa": "gwb"}
    explained = {role: n * per.get(sender[role], 1)
                 for role, n in (tunnels.get("unattributed") or {}).items()}
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
        elif a["rx_bytes"] < t.get("received", 0):
            out.append(f"{name}: gwa took out {a['rx_bytes']} bytes, less than the client "
                       f"received on its sessions, {t['received']}")
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
                       "counted as dropped" + (
                           f" (its {(tunnels.get('unattributed') or {}).get(role, 0)} drops "
                           f"before a tunnel, superpackets of up to {per[sender[role]]} "
                           "segments)" if per.get(sender[role], 1) > 1 else ""))
    if tunnels["idle"]["packets"]:
        out.append(f"{tunnels['idle']['packets']} packets on tunnels without sessions")
    elif tunnels["idle"].get("bytes"):
        out.append(f"{tunnels['idle']['bytes']} bytes on tunnels without sessions")
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


def churn_run(rec):
    """A churn run's own numbers (its point has a `churn` rate; 0: the baseline): the
    longest receive stall of a session (tunbed-traffic's tcp.rx_stall), whether every session
    verified and moved every byte it sent, and what tunnels_churn.py and gregw counted."""
    tcp = (rec.get("traffic") or {}).get("tcp") or {}
    ch = rec.get("churn") or {}
    pings, gregw = ch.get("pings") or {}, ch.get("gregw") or {}
    sessions = tcp.get("per_session") or []
    verified = bool((rec.get("traffic") or {}).get("complete")) and not tcp.get("failed") and \
        not (tcp.get("verify") or {}).get("mismatches") and bool(sessions) and \
        all(s.get("sent") == s.get("server_received") and
            s.get("server_sent") == s.get("received") for s in sessions)
    out = {"churn": rec["point"]["churn"],
           "stall_ms": (tcp.get("rx_stall") or {}).get("max_ms"),
           "stall_session": (tcp.get("rx_stall") or {}).get("session"),
           "verified": verified}
    if rec["point"]["churn"]:
        out.update({"changes_asked": ch.get("asked"), "changes_done": ch.get("done"),
                    "pinged": pings.get("pinged"), "ping_first": pings.get("first"),
                    "ping_later": pings.get("later"), "ping_never": pings.get("never"),
                    "bad_key_gwa": (gregw.get("gwa") or {}).get("bad_key"),
                    "bad_key_gwb": (gregw.get("gwb") or {}).get("bad_key"),
                    "no_tunnel_gwa": (gregw.get("gwa") or {}).get("tx_no_tunnel"),
                    "no_tunnel_gwb": (gregw.get("gwb") or {}).get("tx_no_tunnel"),
                    "busy_retries": sum((g or {}).get("busy_retries", 0)
                                        for g in gregw.values()) if gregw else None,
                    "churn_error": ch.get("error")})
    return out


def churn_words(p, base):
    """A churn point's results in words, against its baseline's throughput (base, a
    spread, or None)."""
    bps = p["bits_per_second"]
    words = [(f"{bps['median'] / 1e9:.2f} Gbit/s" if bps else "no throughput")
             + (f" ({bps['median'] / base['median']:.2f} of the baseline)"
                if bps and base and base["median"] else "")]
    if p.get("stall_ms"):
        words.append(f"longest stall {p['stall_ms']['median']:.1f} ms")
    if p["churn"]:
        asked, done = p.get("changes_asked"), p.get("changes_done")
        if asked and done:
            words.append(f"{done['median']:.0f} of {asked['median']:.0f} changes")
        if p.get("pinged") and p["pinged"]["median"]:
            words.append(f"{p['pinged']['median']:.0f} pings after an add: "
                         f"{p['ping_first']['median']:.0f} first packet, "
                         f"{p['ping_later']['median']:.0f} later, "
                         f"{p['ping_never']['median']:.0f} never")
    words.append("verified" if p["verified"] else "NOT VERIFIED")
    return ", ".join(words)


def analyse_run(rec):
    res = analysis.analyse(rec)
    setup, tunnels = rec["setup"], rec["tunnels"]
    res.update({
        "gateway": rec["point"]["gateway"],
        "tunnels": rec["point"]["tunnels"], "sessions": rec["point"]["sessions"],
        "tunnel_jain": analysis.jain([t["bits_per_second"] for t in tunnels["carried"]]),
        "carried": carried_words(tunnels["carried"], rec["point"]["tunnels"]),
        "problems": check(tunnels), "lost_packets": lost(tunnels),
        **{f"setup_{r}_s": (setup.get(r) or {}).get("ready_s") for r in ("gwa", "gwb")},
        **{f"rss_{r}_kib": (setup.get(r) or {}).get("rss_kib") for r in ("gwa", "gwb")},
        **{f"kernel_{r}_kib": (setup.get(r) or {}).get("kernel_kib") for r in ("gwa", "gwb")},
        **{f"rss_loaded_{r}_kib": ((rec.get("loaded") or {}).get(r) or {}).get("rss_kib")
           for r in ("gwa", "gwb")}})
    res["counters_ok"] = not res["problems"]
    if rec["point"].get("churn") is not None:
        res.update(churn_run(rec))
    return res


def order(meta):
    """A gateway's place in the report: meta.json's order of the gateways."""
    gateways = list(meta.get("gateways") or [])
    return lambda g: gateways.index(g) if g in gateways else len(gateways)


def how_far(meta, runs):
    """Per gateway of the run: the largest count it was set up with (a run recorded), the
    medians of its setup times there, and beyond it the counts that failed (meta.json's
    `failed`, their first error) or were not run (`not_run`, with why), in words."""
    out = []
    for g in meta.get("gateways") or []:
        done = [r for r in runs if r["gateway"] == g]
        top = max((r["tunnels"] for r in done), default=None)
        at = [r for r in done if r["tunnels"] == top]
        beyond, failed = [], set()
        for f in meta.get("failed") or []:
            p = f.get("point") or {}
            n = p.get("tunnels")
            if p.get("gateway") == g and isinstance(n, int) and n not in failed:
                failed.add(n)
                beyond.append(f"{n} tunnels failed: {f.get('error')}")
        beyond += [f"{x['tunnels']} tunnels {x['why']}" for x in meta.get("not_run") or []
                   if x.get("gateway") == g]
        out.append({"gateway": g, "largest_count": top,
                    **{k: analysis.spread([r.get(k) for r in at])
                       for k in ("setup_gwa_s", "setup_gwb_s")},
                    "beyond": beyond})
    return out


def analyse(recs, meta, complete):
    where = order(meta)
    runs = sorted((analyse_run(r) for r in recs),
                  key=lambda r: (where(r["gateway"]), r["tunnels"], r.get("churn") or 0,
                                 r["repeat"]))
    base = analysis.summarise(runs)
    summary = {}
    for key, s in base.items():
        rs = [r for r in runs if r["key"] == key]
        summary[key] = {"gateway": rs[0]["gateway"],
                        "tunnels": rs[0]["tunnels"], "sessions": rs[0]["sessions"],
                        "repeats": s["repeats"], "complete": s["complete"],
                        "median_repeat": s["median_repeat"],
                        **{k: analysis.spread([r.get(k) for r in rs]) for k in SPREAD},
                        "carried": rs[0]["carried"],
                        "counters_ok": all(r["counters_ok"] for r in rs),
                        "problems": [p for r in rs for p in r["problems"]][:20]}
        if rs[0].get("churn") is not None:
            summary[key].update({"churn": rs[0]["churn"],
                                 "verified": all(r["verified"] for r in rs),
                                 **{k: analysis.spread([r.get(k) for r in rs])
                                    for k in CHURN_SPREAD}})
    zero = [p for p in summary.values() if p.get("churn") == 0]
    for p in summary.values():
        if p.get("churn") is not None and p["bits_per_second"] and zero and \
                zero[0]["bits_per_second"] and zero[0]["bits_per_second"]["median"]:
            p["of_baseline"] = (p["bits_per_second"]["median"]
                                / zero[0]["bits_per_second"]["median"])
    # What summary.json keeps of each run: its numbers, not its CPU samples.
    keep = ("key", "repeat", "gateway", "tunnels", "sessions", "complete", "measured_s", "bytes",
            *SPREAD, "rss_loaded_gwa_kib", "rss_loaded_gwb_kib", "carried", "lost_packets",
            "counters_ok", "problems")
    churn_keep = ("churn", "stall_session", "verified", *CHURN_SPREAD, "churn_error")
    return Results(meta, complete, [{k: r.get(k) for k in keep + (
        churn_keep if r.get("churn") is not None else ())} for r in runs], summary,
        how_far(meta, runs))


def fmt(s, scale=1.0, digits=2):
    return analysis.fmt(s, scale, digits)


def points(res, gateway=None):
    """The summary's points in the report's order (gateway, count, churn): all, or the
    gateway's."""
    where = order(res.meta)
    return sorted((p for p in res.summary.values() if gateway in (None, p["gateway"])),
                  key=lambda p: (where(p["gateway"]), p["tunnels"], p.get("churn") or 0))


def baseline(res):
    """The throughput of the churn run's baseline (a spread), or None."""
    b = [p for p in res.summary.values() if p.get("churn") == 0]
    return b[0]["bits_per_second"] if b else None


def headline(p, gateway, base=None):
    if p.get("churn") is not None:
        return (f"{gateway} {p['tunnels']} tunnels, "
                + (f"churn {p['churn']:g}/s: " if p["churn"] else "no churn (baseline): ")
                + churn_words(p, base if p["churn"] else None)
                + ("" if p["counters_ok"] else ", COUNTERS DISAGREE"))
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
    if p.get("kernel_gwa_kib"):
        words.append(f"kernel {p['kernel_gwa_kib']['median'] / 1024:.1f} MiB")
    words.append("counters match" if p["counters_ok"] else "COUNTERS DISAGREE")
    return f"{gateway} " + ", ".join(words)


def churn_table(res):
    rows = [[f"{p['churn']:g}" if p["churn"] else "0 (baseline)", fmt(p["bits_per_second"], 1e-9),
             f"{p['of_baseline']:.3f}" if p.get("of_baseline") is not None else "-",
             fmt(p.get("stall_ms"), digits=1), fmt(p.get("changes_asked"), digits=0),
             fmt(p.get("changes_done"), digits=0), fmt(p.get("pinged"), digits=0),
             fmt(p.get("ping_first"), digits=0), fmt(p.get("ping_later"), digits=0),
             fmt(p.get("ping_never"), digits=0), fmt(p.get("bad_key_gwa"), digits=0),
             fmt(p.get("bad_key_gwb"), digits=0), fmt(p.get("no_tunnel_gwa"), digits=0),
             fmt(p.get("no_tunnel_gwb"), digits=0), "yes" if p["verified"] else "NO"]
            for p in points(res) if p.get("churn") is not None]
    return Table(("changes/s", "Gbit/s", "of baseline", "longest stall ms", "asked", "done",
                  "pings", "first packet", "later", "never", "bad_key gwa", "bad_key gwb",
                  "tx_no_tunnel gwa", "tx_no_tunnel gwb", "verified"), rows, "churn")


def paced(meta):
    """', each paced at R' where the sessions were (--rate), else ''."""
    return f", each paced at {units.rate_text(meta['rate'])}" if meta.get("rate") else ""


def churn_method(meta):
    n = meta.get("repeats")
    return (f"Churn under load: {meta.get('counts', ['?'])[0]} tunnels, the first half steady "
            f"with {meta.get('sessions')} verified duplex sessions over them{paced(meta)}, the "
            "second half "
            "changed: a baseline run without changes, then a run a rate, in which "
            "tunnels_churn.py (in the client's namespace) removes tunnels of the second half "
            "and adds them again through gregw's control socket on both gateways, a change "
            "(one tunnel, both gateways) due every 1/rate s, one kept connection a gateway "
            "with the commands sent ahead of the replies (a change's reply time from its send), "
            f"at most {CTL_IN_FLIGHT} commands out on a gateway, every reply checked; right "
            "after both "
            "replies "
            "of an add, an ICMP echo from the tunnel's client site to its server site, and "
            "while none is answered, another 10 ms later and then every 100 ms (first packet: "
            "the first echo was answered; later: another; never: none within 5 s). The "
            "longest stall "
            "is the longest gap between two reads with data of a steady session at the "
            "client in the measured seconds (tunbed-traffic's rx_stall, docs/traffic.md); "
            "'of baseline' is the median throughput over the baseline's; bad_key: the packets each gregw dropped for a "
            "key it did not know during the run, as it came in from the other; tx_no_tunnel: "
            "those it read from its TUN and found no tunnel for (a packet that met a worker "
            "still on the table before an add, or came after a remove; the kernel's own "
            f"packets into the TUN too). {n} repeat{'s' if n != 1 else ''}, medians "
            "with their range.")


def main_table(res, gateway, anchor="points"):
    """The table of the gateway's points; its memory columns gregw's resident set, or the
    kernel's growth over the setup for a gateway of the kernel's (vxlan)."""
    pts = points(res, gateway)
    kernel = any(p.get("kernel_gwa_kib") or p.get("kernel_gwb_kib") for p in pts)
    mem = ("kernel", "kernel_{}_kib") if kernel else ("RSS", "rss_{}_kib")
    rows = [[str(p["tunnels"]), str(p["sessions"]), fmt(p["bits_per_second"], 1e-9),
             fmt(p["tunnel_jain"], digits=3), fmt(p["jain"], digits=3),
             fmt(p["box_cpu_s_per_gb"]), fmt(p["gateway_cpu_s_per_gb"]),
             fmt(p["retransmits"], digits=0), fmt(p["setup_gwa_s"], digits=3),
             fmt(p["setup_gwb_s"], digits=3), fmt(p.get(mem[1].format("gwa")), 1 / 1024, 1),
             fmt(p.get(mem[1].format("gwb")), 1 / 1024, 1),
             "yes" if p["counters_ok"] else "NO"]
            for p in pts]
    head = ("tunnels", "sessions", "Gbit/s", "Jain tunnels", "Jain sessions", "box CPU-s/GB",
            "gateway CPU-s/GB", "retransmits", "setup gwa s", "setup gwb s",
            f"{mem[0]} gwa MiB", f"{mem[0]} gwb MiB", "counters match")
    if any(p.get("churn") is not None for p in pts):
        rows = [[f"{p['churn']:g}", *r] for p, r in zip(pts, rows)]
        return Table(("changes/s", *head), rows, anchor)
    return Table(head, rows, anchor)


def how_far_section(res):
    """How far each gateway went: its largest count set up, the setup times there, and the
    counts beyond (failed, not run)."""
    rows = [[h["gateway"], str(h["largest_count"]) if h["largest_count"] else "none",
             fmt(h["setup_gwa_s"], digits=3), fmt(h["setup_gwb_s"], digits=3),
             "; ".join(h["beyond"]) or "-"] for h in res.how_far]
    return Section("How far each gateway goes", "how-far", paragraphs=[
        "The largest tunnel count each gateway was set up with in this run (a run recorded "
        "at it), the medians of its setup times there, and the counts beyond it that failed "
        "or were not run, with why."],
        table=Table(("gateway", "largest count", "setup gwa s", "setup gwb s", "beyond"), rows,
                    "how-far-table"))


def method(meta):
    n = meta.get("repeats")
    gateways = meta.get("gateways") or ["gregw"]
    who = ", ".join(f"gregw ({meta.get('mode', 'gre')}, {meta.get('workers')} workers)"
                    if g == "gregw" else g for g in gateways)
    return (f"{who} on the tunnels bed in namespaces, set up anew for every run with the "
            f"tunnel files of `topo/tunnels.sh N`; {meta.get('sessions')} TCP sessions (push"
            f"{paced(meta)}) "
            "spread over the tunnels round-robin (session i on tunnel i mod N, tunbed-traffic "
            f"`--pairs`), {meta.get('warmup', 0):g} s of warm-up, then {meta.get('time', 0):g} s "
            f"measured; {n} repeat{'s' if n != 1 else ''}, medians with their range. Setup: the "
            "seconds from gregw's start until its control socket answers (its tunnels read, "
            "their prefixes routed, the table published), and its resident memory then. A "
            "tunnel's throughput is its sessions' sum; Jain's index across tunnels is over "
            "those that carried sessions. CPU-s/GB as the matrix computes it (docs/runner.md)."
            + (" vxlan: the kernel's VXLAN with a device a tunnel (VNI the tunnel's key), its "
               "prefixes routed into it via a permanent neighbour, all of a side set up by one "
               "`ip -batch`; setup: the seconds that batch took on each gateway; memory: the "
               "growth of the kernel's Slab and Percpu (/proc/meminfo) over it, the whole "
               "machine's, other work included; its counters: each device's statistics "
               "(ip -s link); gateway CPU-s/GB: none, the kernel's work is in the box's."
               if "vxlan" in gateways else "")
            + (" ovs-gre: Open vSwitch's userspace datapath with a GRE port a tunnel (its key, "
               "its peer the remote) on one bridge of each gateway, OpenFlow rules that send "
               "each tunnel's prefixes from the bridge's internal port to its GRE port and what "
               "the port receives back, the prefixes routed into the internal port "
               "(scripts/drivers/ovs-gre.sh --tunnels); setup: the seconds of a side's up, "
               "ovsdb-server's and ovs-vswitchd's start included; memory: ovs-vswitchd's "
               "resident set; its counters: each tunnel's rules' packets and bytes."
               if "ovs-gre" in gateways else ""))


def document(res):
    gateways = res.meta.get("gateways") or ["gregw"]
    pts = points(res)
    churn = any(p.get("churn") is not None for p in pts)
    base = baseline(res)
    # With several gateways, each line names its own.
    who = (lambda p: f"{p['gateway']} ") if len(gateways) > 1 else (lambda p: "")
    carried = [f"{who(p)}{p['tunnels']} tunnel{'s' if p['tunnels'] > 1 else ''}: "
               f"{p['carried']}" for p in pts]
    problems = [f"{who(p)}{p['tunnels']} tunnels: {x}" for p in pts for x in p["problems"]]
    tables = ([Section(table=main_table(res, gateways[0]))] if len(gateways) == 1 else
              [Section(g, f"points-{g}", table=main_table(res, g, f"points-{g}"))
               for g in gateways if points(res, g)])
    return Document(
        title=title(res.meta), complete=res.complete,
        headline=[headline(p, p["gateway"], base) for p in pts],
        paragraphs=[method(res.meta)] + ([churn_method(res.meta)] if churn else []),
        sections=[
            *tables,
            *([Section("Churn under load", "churn", table=churn_table(res), items=[
                f"{p['churn']:g} changes/s: {p['problems'][0]}" for p in pts
                if p.get("churn") and not p["verified"] and p["problems"]])] if churn else []),
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
                items=problems),
            *([] if churn else [how_far_section(res)])],
        footer=footer(),
        summary={"meta": res.meta, "complete": res.complete, "summary": res.summary,
                 "runs": res.runs, **({} if churn else {"how_far": res.how_far})},
        csv=[Csv("summary", CSV_HEADER, [
            [p["gateway"], p["tunnels"], p["sessions"], p["repeats"],
             *[(p.get(k) or {}).get("median") for k in (
                 "bits_per_second", "tunnel_jain", "jain", "box_cpu_s_per_gb",
                 "gateway_cpu_s_per_gb", "retransmits", "setup_gwa_s", "setup_gwb_s",
                 "rss_gwa_kib", "rss_gwb_kib", "kernel_gwa_kib", "kernel_gwb_kib")],
             p["counters_ok"]] for p in pts])] + ([] if churn else [Csv("how_far", HOW_FAR_HEADER, [
                 [h["gateway"], h["largest_count"], (h["setup_gwa_s"] or {}).get("median"),
                  (h["setup_gwb_s"] or {}).get("median"), "; ".join(h["beyond"])]
                 for h in res.how_far])]) + ([Csv("churn", CHURN_HEADER, [
            [p["churn"], p["tunnels"], p["sessions"], p["repeats"],
             (p["bits_per_second"] or {}).get("median"), p.get("of_baseline"),
             *[(p.get(k) or {}).get("median") for k in CHURN_SPREAD],
             p["verified"], p["counters_ok"]] for p in pts if p.get("churn") is not None])]
            if churn else []))
