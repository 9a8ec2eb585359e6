"""The report of tunbed intranet (intranet.py), shaped like the tables of the cloud benchmarks it
follows: per profile a headline in words; latency idle and loaded, ICMP echo and TCP probe side
by side; throughput at each stream count against the cap; UDP at each rate; the instances'
facts; and the plots (throughput against streams with the cap drawn, RTT idle against loaded,
the per-stream spread). One analysis of the raw records makes the document (document.py)
that render.py writes. Pure: tested on recorded runs."""

from .. import analysis
from ..document import Csv, Document, Plot, Section, Table, footer
from ..document import title as document_title
from ..units import rate_text
from .intranet_analysis import loaded_point, med, ms, points, reference, title


def profile_headline(res, profile):
    """'2 vCPU, 2 Gbit/s cap: 1 stream 1.86 Gbit/s (93% of cap), 4 streams ..., ping 0.05 ms
    idle / 1.9 ms loaded, UDP 1 Gbit/s 0.00% loss'."""
    ref, word = reference(profile)
    parts = []
    for s in points(res, profile, "tcp"):
        bps = med(s, "bits_per_second")
        n = s["streams"]
        text = f"{n} stream{'s' if n > 1 else ''} "
        text += f"{bps / 1e9:.2f} Gbit/s" if bps is not None else "no throughput"
        if bps is not None and ref:
            text += f" ({100 * bps / ref:.0f}% of {word})"
        parts.append(text)
    idle = next(iter(points(res, profile, "idle")), None)
    loaded = loaded_point(res, profile)
    if idle or loaded:
        parts.append(f"ping {ms(med(idle, 'icmp_avg_ms')) if idle else '-'} ms idle / "
                     f"{ms(med(loaded, 'icmp_avg_ms')) if loaded else '-'} ms loaded")
    for s in points(res, profile, "udp"):
        loss = med(s, "udp_loss_pct")
        parts.append(f"UDP {rate_text(s['udp_rate_bps'])} "
                     + (f"{loss:.2f}% loss" if loss is not None else "no result"))
    return f"{title(profile)}: " + ", ".join(parts)


def failures(res):
    """Points whose client failed in some repeat, and UDP rates the client could not offer
    (its own limit, not the network's): one line each."""
    out = []
    for key, s in res.summary.items():
        off = med(s, "udp_offered_bps")
        if s["kind"] == "udp" and off is not None and off < 0.95 * s["udp_rate_bps"]:
            out.append(f"{key}: the client offered {rate_text(off)} of the "
                       f"{rate_text(s['udp_rate_bps'])} asked: the generator's limit here, so "
                       "the loss is not the network's at that rate")
    for key, s in res.summary.items():
        if not s["complete"]:
            out.append(f"{key}: incomplete in some repeat" +
                       (f" ({'; '.join(s['errors'])})" if s["errors"] else ""))
    return out


def headlines(res):
    return [profile_headline(res, p) for p in res.profiles] + \
        [f"NOTE: {line}" for line in failures(res)]


def method(meta):
    where = ("between the hosts of the inventory, over their own network, no cap of ours"
             if meta.get("mode") == "hosts" else
             "in network namespaces of this machine, joined by a third that forwards as the "
             "zone's network does and holds the profile's tbf cap on its egress into the "
             "server (outside both VMs, as a provider's), built anew for each profile and "
             "repeat, each endpoint's processes pinned to the profile's CPUs")
    return (f"Client and server {where}. Each TCP run: {meta.get('warmup')} s of warm-up, then "
            f"{meta.get('time')} s measured (what the server received in the window, "
            f"tunbed-traffic), streams pushing from client to server; {meta.get('repeats')} "
            f"repeat(s), figures are medians with (min-max). Ping: {meta.get('ping_count')} "
            f"ICMP echo probes at {meta.get('ping_interval')} s idle, and beside each TCP run "
            "from the end of its warm-up (loaded: at the most streams); TCP probe: "
            "request/response on a connection of its own, 100 a second, idle and beside "
            f"each TCP run. UDP: one flow of datagrams that fill the MTU (1472 bytes at 1500) "
            f"at each rate for {meta.get('time')} s, loss and RFC 3550 jitter counted by the "
            "server.")


PROBES = (
    "The two probes measure different paths. The ICMP echo is answered by the server's kernel "
    "as it arrives (softirq): no socket, no application, no TCP; it shows the network and the "
    "queues in it. The TCP probe crosses both TCP stacks and waits for the tunbed-traffic "
    "server's thread, and under load queues behind the streams' data in the sender's socket "
    "and qdisc: it is what an application sees.")


def probe_words(res):
    """Per profile, how the TCP probe and the echo differ, idle and loaded, in words."""
    out = []
    for p in res.profiles:
        idle = next(iter(points(res, p, "idle")), None)
        loaded = loaded_point(res, p)
        parts = []
        for what, s in (("idle", idle),
                        (f"at {loaded['streams']} streams" if loaded else "", loaded)):
            e, t = (med(s, "icmp_avg_ms"), med(s, "rr_p50_ms")) if s else (None, None)
            if e is not None and t is not None:
                parts.append(f"{what} the TCP probe's p50 {ms(t)} ms against the echo's "
                             f"average {ms(e)} ms ({ms(t - e) if t >= e else '-' + ms(e - t)} "
                             "ms apart)")
        if parts:
            out.append(f"{title(p)}: " + "; ".join(parts))
    return out


fmt = analysis.fmt


LATENCY_HEADER = ("profile", "ICMP idle avg / min / max / mdev ms", "idle loss %",
                  "ICMP loaded avg / max / mdev ms", "loaded loss %",
                  "TCP probe idle p50 / p99 ms", "TCP probe loaded p50 / p99 ms")


def latency_table(res):
    rows = []
    for p in res.profiles:
        idle = next(iter(points(res, p, "idle")), {})
        loaded = loaded_point(res, p) or {}

        def four(s, keys):
            return " / ".join(ms(med(s, k)) for k in keys) if s else "-"
        loss = (lambda s: f"{med(s, 'icmp_loss_pct'):.1f}"
                if s and med(s, "icmp_loss_pct") is not None else "-")
        lkeys = ("icmp_avg_ms", "icmp_max_ms", "icmp_mdev_ms")
        rows.append([title(p), four(idle, ("icmp_avg_ms", "icmp_min_ms", "icmp_max_ms",
                                           "icmp_mdev_ms")), loss(idle),
                     (four(loaded, lkeys) + f" ({loaded['streams']} streams)") if loaded
                     else "-", loss(loaded),
                     four(idle, ("rr_p50_ms", "rr_p99_ms")),
                     four(loaded, ("rr_p50_ms", "rr_p99_ms"))])
    return LATENCY_HEADER, rows


THROUGHPUT_HEADER = ("profile", "streams", "Gbit/s", "% of cap", "lowest stream Mbit/s",
                     "Jain", "retransmits", "ICMP loaded avg ms", "TCP probe loaded p50 ms")


def throughput_table(res):
    rows = []
    for p in res.profiles:
        ref, word = reference(p)
        for s in points(res, p, "tcp"):
            bps = med(s, "bits_per_second")
            share = f"{100 * bps / ref:.0f}%" + (f" of {word}" if word != "cap" else "") \
                if ref and bps is not None else "-"
            rows.append([title(p), str(s["streams"]), fmt(s["bits_per_second"], 1e-9),
                         share, fmt(s["session_min_bps"], 1e-6, 0), fmt(s["jain"], 1, 3),
                         fmt(s["retransmits"], 1, 0), ms(med(s, "icmp_avg_ms")),
                         ms(med(s, "rr_p50_ms"))])
    return THROUGHPUT_HEADER, rows


UDP_HEADER = ("profile", "rate", "offered Gbit/s", "received Gbit/s", "loss %", "jitter ms",
              "reordered", "duplicates", "not sent", "cap drops")


def udp_table(res):
    rows = []
    for p in res.profiles:
        for s in points(res, p, "udp"):
            rows.append([title(p), rate_text(s["udp_rate_bps"]),
                         fmt(s["udp_offered_bps"], 1e-9, 3), fmt(s["udp_received_bps"], 1e-9, 3),
                         fmt(s["udp_loss_pct"], 1, 2), fmt(s["udp_jitter_ms"], 1, 3),
                         fmt(s["udp_reordered"], 1, 0), fmt(s["udp_duplicates"], 1, 0),
                         fmt(s["udp_not_sent"], 1, 0), fmt(s["cap_drops"], 1, 0)])
    return UDP_HEADER, rows


INSTANCE_HEADER = ("profile", "cap: rate, burst, limit", "CPUs client / server",
                   "congestion control", "socket buffers", "NIC (driver, MTU, queues)",
                   "offloads on", "tcp_rmem / tcp_wmem", "kernel, CPUs")


def facts_of(res, profile):
    """The first idle run's facts of a profile's hosts: {"client": {...}, "server": {...}}."""
    for r in sorted(res.records, key=lambda r: (r["repeat"], r.get("started", 0))):
        if r["point"]["profile"] == profile["name"] and r.get("facts"):
            return r["facts"]
    return {}


def instance_table(res):
    rows = []
    for p in res.profiles:
        f = facts_of(res, p)
        c, s = f.get("client") or {}, f.get("server") or {}
        cpus = p.get("cpus") or {}
        mtu = (c.get("nic") or {}).get("mtu") or p.get("mtu") or "-"
        if res.meta.get("mode") == "hosts":
            cap = "none of ours" + (f" (nominal {rate_text(p['nominal'])})"
                                    if p.get("nominal") else "")
            pins = f"{c.get('cpus', '-')} / {s.get('cpus', '-')} (the hosts')"
        else:
            cap = (f"{rate_text(p['rate'])}, {p.get('burst', '-')} B, {p.get('limit', '-')} B"
                   if p.get("rate") else "none")
            pins = (f"{cpus.get('client') or 'all'} / {cpus.get('server') or 'all'}"
                    + (" (shared)" if cpus.get("shared") else ""))
        nic = c.get("nic") or {}
        queues = ", ".join(f"{k} {v}" for k, v in (nic.get("queues") or {}).items()) or "-"
        offs = ", ".join(k.replace("-offload", "").replace("generic-", "g")
                         for k, v in (nic.get("offloads") or {}).items() if v == "on") or "-"
        ccs = sorted({r.get("congestion") for r in res.runs
                      if r["profile"] == p["name"] and r.get("congestion")})
        cc = ", ".join(ccs) or c.get("net.ipv4.tcp_congestion_control", "-")
        cc += " (asked for)" if p.get("congestion") else " (the system's)"
        bufs = (f"client SO_SNDBUF/SO_RCVBUF {p['sockbuf']}" if p.get("sockbuf") else
                "autotuned") + f"; rmem_max / wmem_max {c.get('net.core.rmem_max', '-')} / " \
            f"{c.get('net.core.wmem_max', '-')}"
        rows.append([title(p), cap, pins, cc, bufs,
                     f"{nic.get('name') or '-'} ({nic.get('driver') or '-'}, {mtu}, {queues})",
                     offs,
                     f"{c.get('net.ipv4.tcp_rmem', '-')} / {c.get('net.ipv4.tcp_wmem', '-')}",
                     f"{c.get('kernel', '-')}, {c.get('cpus', '-')} ({c.get('cpu_model', '?')})"])
    return INSTANCE_HEADER, rows


INTRO = {
    "latency": "ICMP echo (tunbed-traffic --icmp: unprivileged ping sockets) and the TCP "
               "request/response probe, idle and during the transfer with the most streams.",
    "throughput": "What the server received in the measured window, summed over the streams; "
                  "% of the profile's cap (or of the inventory's nominal bandwidth); the "
                  "slowest stream and Jain's fairness index over the streams; TCP "
                  "retransmits; the probes beside the transfer.",
    "udp": "One UDP flow at each rate: offered is what the client sent, received what the "
           "server counted; loss is sent less received, jitter RFC 3550's (the largest of the "
           "flow's), reordered and duplicates by sequence number, not sent what the client's "
           "kernel refused; cap drops are the packets the profile's tbf dropped (in "
           "namespaces: the zone's egress into the server).",
    "instances": "What each profile gave the pair, and the client's facts as the run read them "
                 "(its interface, buffers, kernel).",
}

def sections(res):
    """The report's sections, in order: latency, throughput, UDP, the instances."""
    return [
        Section("Latency", "latency", [INTRO["latency"], PROBES, *probe_words(res)],
                Table(*latency_table(res), "latency")),
        Section("Throughput", "throughput", [INTRO["throughput"]],
                Table(*throughput_table(res), "throughput")),
        Section("UDP", "udp", [INTRO["udp"]], Table(*udp_table(res), "udp")),
        Section("Instances", "instances", [INTRO["instances"]],
                Table(*instance_table(res), "instances")),
    ]


CSV_COLUMNS = ("bits_per_second", "session_min_bps", "jain", "retransmits", "icmp_avg_ms",
               "icmp_max_ms", "icmp_mdev_ms", "icmp_loss_pct", "rr_p50_ms", "rr_p99_ms",
               "udp_loss_pct", "udp_jitter_ms", "udp_received_bps")
SUMMARY_HEADER = (["point", "profile", "kind", "streams", "udp_rate_bps", "repeats"]
                  + [f"{c}_{k}" for c in CSV_COLUMNS for k in ("median", "min", "max")])


def summary_rows(res):
    for p in res.profiles:
        for kind in ("idle", "tcp", "udp"):
            for s in points(res, p, kind):
                key = next(k for k, v in res.summary.items() if v is s)
                row = [key, s["profile"], kind, s["streams"], s["udp_rate_bps"], s["repeats"]]
                for c in CSV_COLUMNS:
                    row += [s[c][k] if s[c] else "" for k in ("median", "min", "max")]
                yield row


def drawing(name, res):
    """How to draw one of intranet_plots.py's plots (matplotlib imported only then)."""
    def draw(outdir):
        from . import intranet_plots
        return getattr(intranet_plots, name)(outdir, res)
    return draw


def document(res):
    """The report of an intranet run (Results)."""
    return Document(
        title=document_title(res.meta), complete=res.complete, headline=headlines(res),
        paragraphs=[method(res.meta)], sections=sections(res),
        plots=[Plot("Throughput against streams", "throughput", draw=drawing("throughput", res)),
               Plot("Round trip idle and loaded", "rtt", draw=drawing("rtt", res)),
               Plot("Per-stream throughput", "streams", draw=drawing("spread", res))],
        footer=footer(),
        summary={"meta": res.meta, "complete": res.complete, "profiles": res.profiles,
                 "summary": res.summary, "runs": res.runs},
        csv=[Csv("summary", SUMMARY_HEADER, list(summary_rows(res)))])
