"""The numbers of a tunbed intranet run (intranet.py): each run's, flat, from its raw record;
each point's median, min and max over its repeats; and the lookups the report and its plots
share (a profile's points of a kind, its reference rate, its loaded point). Pure: tested on
recorded runs (tests/python/test_intranet.py)."""

import dataclasses

from .. import analysis

spread = analysis.spread


def analyse(rec):
    """One run's numbers, flat, from its raw record."""
    p, tr = rec["point"], rec.get("traffic") or {}
    icmp, rr = tr.get("icmp") or {}, tr.get("rr") or {}
    out = {"key": p["key"], "repeat": rec["repeat"], "profile": p["profile"], "kind": p["kind"],
           "streams": p.get("streams", 0), "udp_rate_bps": p.get("udp_rate_bps", 0),
           "complete": bool(tr.get("complete")), "status": rec.get("traffic_status"),
           "error": rec.get("traffic_error"),
           "icmp_probes": icmp.get("probes"), "icmp_loss_pct": icmp.get("loss_percent"),
           "rr_p50_ms": rr.get("p50_ms"), "rr_p99_ms": rr.get("p99_ms")}
    for k in ("avg", "min", "max", "mdev", "jitter"):
        out[f"icmp_{k}_ms"] = icmp.get(f"{k}_ms")
    if p["kind"] == "tcp":
        tcp = tr.get("tcp") or {}
        out.update({"bits_per_second": tcp.get("bits_per_second"),
                    "session_min_bps": tcp.get("session_bps_min"),
                    "session_max_bps": tcp.get("session_bps_max"), "jain": tcp.get("jain"),
                    "retransmits": tcp.get("retransmits"),
                    "per_stream_bps": [s.get("bits_per_second") for s in
                                       tcp.get("per_session", [])],
                    "congestion": (tr.get("config") or {}).get("congestion")})
    elif p["kind"] == "udp":
        u = tr.get("udp") or {}
        span = tr.get("measured_s") or 0
        # In namespaces the cap's drops are the zone's egress into the server's; on hosts
        # there is no cap of ours, and the client's own qdisc is what its kernel dropped.
        q = rec.get("qdisc") or {}
        drops = (q.get("forward") or q.get("client") or {}).get("drops")
        out.update({"udp_sent": u.get("sent"), "udp_received": u.get("received"),
                    "udp_lost": u.get("lost"), "udp_loss_pct": u.get("loss_percent"),
                    "udp_jitter_ms": u.get("jitter_ms_max"), "udp_size": u.get("size"),
                    "udp_reordered": u.get("reordered"),
                    "udp_duplicates": u.get("duplicates"), "udp_not_sent": u.get("not_sent"),
                    "udp_received_bps": u.get("bits_per_second"),
                    "udp_offered_bps": u.get("sent", 0) * u.get("size", 0) * 8 / span
                    if span else None,
                    "cap_drops": drops})
    return out


NUMBERS = ("icmp_avg_ms", "icmp_min_ms", "icmp_max_ms", "icmp_mdev_ms", "icmp_jitter_ms",
           "icmp_loss_pct", "rr_p50_ms", "rr_p99_ms", "bits_per_second", "session_min_bps",
           "session_max_bps", "jain", "retransmits", "udp_loss_pct", "udp_jitter_ms",
           "udp_reordered", "udp_duplicates", "udp_not_sent", "udp_received_bps",
           "udp_offered_bps", "cap_drops", "udp_lost", "udp_sent")


def summarise(runs):
    """Per point: median, min and max over its repeats of every number, and the per-stream
    rates of every repeat (for the spread plot)."""
    out = {}
    for r in runs:
        out.setdefault(r["key"], []).append(r)
    return {key: {"profile": rs[0]["profile"], "kind": rs[0]["kind"],
                  "streams": rs[0]["streams"], "udp_rate_bps": rs[0]["udp_rate_bps"],
                  "repeats": len(rs), "complete": all(r["complete"] for r in rs),
                  "errors": sorted({r["error"] for r in rs if r["error"]}),
                  "per_stream_bps": [r.get("per_stream_bps") or [] for r in rs],
                  **{k: spread([r.get(k) for r in rs]) for k in NUMBERS}}
            for key, rs in out.items()}


@dataclasses.dataclass
class Results:
    meta: dict
    complete: bool
    records: list
    runs: list
    summary: dict
    profiles: list  # the profiles' dicts, in the run's order


def profiles_of(meta, records):
    """The profiles in the order the run measured them: meta's, else the records'."""
    have = {r["point"]["profile"] for r in records}
    out = [p for p in meta.get("profiles") or [] if p["name"] in have]
    seen = {p["name"] for p in out}
    for r in sorted(records, key=lambda r: r.get("started", 0)):
        p = r.get("profile") or {"name": r["point"]["profile"]}
        if p["name"] not in seen:
            seen.add(p["name"])
            out.append(p)
    return out


def analyse_all(records, meta, complete=True):
    runs = [analyse(r) for r in records]
    return Results(meta=meta, complete=complete, records=records, runs=runs,
                   summary=summarise(runs), profiles=profiles_of(meta, records))


def points(res, profile, kind):
    """The summaries of a profile's points of one kind, by stream count or rate."""
    ps = [s for s in res.summary.values() if s["profile"] == profile["name"] and s["kind"] == kind]
    return sorted(ps, key=lambda s: (s["streams"], s["udp_rate_bps"]))


def reference(profile):
    """(bit/s, word): what throughput is a share of: the cap, else the nominal bandwidth."""
    if profile.get("rate"):
        return profile["rate"], "cap"
    if profile.get("nominal"):
        return profile["nominal"], "nominal"
    return 0, ""


def med(s, key):
    v = s.get(key)
    return v["median"] if v else None


def ms(x):
    return f"{x:.2g}" if x is not None else "-"


def title(profile):
    return profile.get("title") or profile["name"]


def loaded_point(res, profile):
    """The run whose ping counts as loaded: the most streams (the fullest transfer)."""
    tcp = [s for s in points(res, profile, "tcp") if med(s, "icmp_avg_ms") is not None]
    return tcp[-1] if tcp else None
