"""The figures of a failover run (failover.py; docs/failover.md defines each): per run,
detection, takeover, the RFC 6201 outage, the longest TCP gap, failback, the sessions that
survived; per fault, their median and range over the repeats. Pure: tested on a made-up record
(tests/python/test_failover.py)."""

import statistics

from .. import analysis

FAULT_WORDS = {
    "kill": "kill -9 of gwb1's gregw",
    "stop": "SIGSTOP of gwb1's gregw",
    "link": "gwb1's link down",
    "cut": "gwb1 cut off",
}
UDP_SIZE = 1000
ROLE_WORDS = {"gwa": "client side", "gwb1": "active", "gwb2": "passive"}


def first_after(routes, t, want):
    """Seconds from t to the first route sample at or after t for which want(active) holds."""
    for ts, active in routes:
        if ts >= t and want(active):
            return ts - t
    return None


def tcp_gap(tcp, t_from, t_to):
    """The longest run of 100 ms intervals in [t_from, t_to) in which the client received
    nothing, in seconds (pull: the client's count is what was delivered)."""
    if not tcp or "intervals" not in tcp:
        return None
    base = tcp.get("measure_start_mono_s", 0)
    longest = run = 0.0
    for iv in tcp["intervals"]:
        a, b = base + iv["start"], base + iv["end"]
        if b <= t_from or a >= t_to:
            continue
        if iv.get("bytes", 0) == 0:
            run += b - a
            longest = max(longest, run)
        else:
            run = 0.0
    return round(longest, 3)


def udp_outage(doc, rate):
    """RFC 6201: datagrams lost over the stream's rate, in seconds."""
    if not doc or "udp" not in doc:
        return None, None
    pps = rate / (8 * UDP_SIZE)
    lost = doc["udp"].get("lost", 0)
    return round(lost / pps, 3), lost


def seq_of(stats):
    return (stats or {}).get("seq") or {}


def analyse(rec):
    t_f, t_r = rec["t_fault"], rec["t_repair"]
    routes = rec["routes"]
    down = [e["t"] for e in rec["health"].get("gwb1", []) if e["state"] == "down" and
            e["t"] >= t_f]
    moved = first_after(routes, t_f, lambda a: a != "gwb1")
    detection = min([x for x in ((down[0] - t_f) if down else None, moved) if x is not None],
                    default=None)
    tcp = rec["tcp"] or {}
    t_end = tcp.get("measure_end_mono_s", t_r + 60)
    out_f, lost_f = udp_outage(rec["udp"][0], rec["settings"]["udp_rate"])
    out_b, lost_b = udp_outage(rec["udp"][1], rec["settings"]["udp_rate"])
    t = tcp.get("tcp", {})
    sessions = tcp.get("config", {}).get("sessions", rec["settings"]["sessions"])
    failed = t.get("failed", sessions if not tcp else 0)
    gw = rec.get("gateways", {})
    return {
        "fault": rec["fault"], "repeat": rec["repeat"],
        "detection_s": r3(detection),
        "takeover_s": r3(first_after(routes, t_f, lambda a: a == "gwb2")),
        "failback_s": r3(first_after(routes, t_r, lambda a: a == "gwb1")),
        "outage_s": out_f, "udp_lost": lost_f,
        "failback_outage_s": out_b, "failback_udp_lost": lost_b,
        "tcp_gap_s": tcp_gap(tcp, t_f - 0.2, t_r),
        "failback_tcp_gap_s": tcp_gap(tcp, t_r - 0.05, t_end),
        "sessions": sessions, "survived": sessions - failed, "reset": failed,
        "bytes": sum(s.get("received", 0) for s in t.get("per_session", [])),
        "wrong_bytes": t.get("verify", {}).get("mismatches"),
        "retransmits": t.get("retransmits"),
        "gbps": r3(t.get("bits_per_second", 0) / 1e9),
        "passive_decap_packets": ((gw.get("gwb2") or {}).get("total") or {}).get(
            "tun_tx_packets"),
        "gwa_seq_resyncs": seq_of(gw.get("gwa")).get("resyncs"),
        "gwa_seq_out_of_window": seq_of(gw.get("gwa")).get("out_of_window"),
        "complete": bool(tcp.get("complete")),
    }


def r3(x):
    return None if x is None else round(x, 3)


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    if not v:
        return None
    return {"median": round(statistics.median(v), 3), "min": min(v), "max": max(v)}


def fmt(m, what=""):
    """'0.41 s outage (0.38-0.47)': the median, then what it is, then the range."""
    if m is None:
        return f"{what} not measured".strip()
    text = f"{m['median']:g} s" + (f" {what}" if what else "")
    return text if m["min"] == m["max"] else f"{text} ({m['min']:g}-{m['max']:g})"


def summarise(rows):
    by = {}
    for r in rows:
        by.setdefault(r["fault"], []).append(r)
    out = {}
    for fault, rs in by.items():
        out[fault] = {k: med(rs, k) for k in (
            "detection_s", "takeover_s", "outage_s", "tcp_gap_s", "failback_s",
            "failback_outage_s", "failback_tcp_gap_s", "retransmits", "gbps")}
        out[fault].update({
            "repeats": len(rs),
            "sessions": rs[0]["sessions"],
            "survived_min": min(r["survived"] for r in rs),
            "wrong_bytes": sum(r["wrong_bytes"] or 0 for r in rs),
            "unverified": sum(1 for r in rs if r["wrong_bytes"] is None),
            "took_over": sum(1 for r in rs if r["takeover_s"] is not None),
            "failed_back": sum(1 for r in rs if r["failback_s"] is not None),
        })
    return out


def core_shares(host, label, core):
    """[(t, percent of the core)] of the gregw threads of the process labelled label between
    consecutive samples: each interval's ticks go to the CPU a thread is on at its end."""
    samples, _ = analysis.aligned(host)
    pids = {pid for pid, name in (host.get("processes") or {}).items() if name == label}
    out = []
    for a, b in zip(samples, samples[1:]):
        ca, cb = a["cpus"].get(core), b["cpus"].get(core)
        if ca is None or cb is None:
            continue
        total = sum(cb.values()) - sum(ca.values())
        used = sum(ticks - a["threads"][tid][2]
                   for tid, (pid, _, ticks, c) in b["threads"].items()
                   if str(pid) in pids and str(c) == core and tid in a["threads"])
        out.append((b["t"], 100.0 * used / total if total > 0 else 0.0))
    return out
