"""The datasheet's DSCP/ECN part (docs/datasheet.md): what a gateway does with the DS field of
the packets it carries, measured on ras.topo with the gateway up, in two steps, by one of two
methods (the driver's tos_method): "wire" where tunbed-wire decodes the transit (GRE,
GRE-in-UDP), "capture" where the tunnel's packets cross it on one UDP port (VXLAN, the VPNs).

1. Encapsulation (RFC 2983's uniform model, RFC 6040's normal mode): a UDP session of
   tunbed-traffic from the client to the server for each ECN codepoint an encapsulator must
   copy (ECT(0), ECT(1), CE), every datagram DSCP 46; what the outer headers carried on gwa's
   transit. Wire: tunbed-wire's `tos` of the direction (ecn.INNER.OUTER, dscp_marked,
   dscp_copied). Capture: a packet socket there (tosprobe.py capture) counts the TOS bytes of
   the outer packets on the tunnel's port long enough to carry one of the session's datagrams,
   one capture per session, so each count is of one inner codepoint.
2. Decapsulation (RFC 6040, 4.2): packets whose outer ECN field is CE, as a router's mark on
   the way, around UDP datagrams to the server of ECT(0), ECT(1) and Not-ECT (each its own
   DSCP, which decapsulation leaves); a receiver on the server counts what arrives by DS field:
   CE where the far gateway carried the mark in, and the Not-ECT ones dropped. Wire: plain GRE
   packets crafted on gwa's transit (tosprobe.py send). Capture: the datagrams sent from the
   client through the gateway, their outer packets re-marked CE as they come in on gwb's
   transit (tosprobe.py remark, a tc program attached with tcx).
3. Under load (RFC 3168, RFC 8311): 64 TCP sessions of tunbed-traffic that negotiate ECN
   (net.ipv4.tcp_ecn = 1 in the client's and server's namespaces, --ecn on), CUBIC, for a
   few seconds through the gateway; the client's nstat before and after (the senders'
   TcpExtTCPDeliveredCE: the CE marks that reached the receivers, as the echo the senders
   got back; TcpRetransSegs: the losses), and the gateway's own counters where it has them
   (gregw: aqm_marked, drops by reason).

Pure but for measure(): the analysis reads the record only."""

import json
import os
import signal
import sys
import time

from ..common import Failure, GatewayFailure
from ..common import TRAFFIC_PORT as PORT
from ..hosts import HostLost
from ..records import KEY
from ..schema import INT, STR, List, Map, Num, Obj, Opt, Str
from . import matrix_point
from .datasheet_plan import SESSIONS

TOSPROBE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tosprobe.py")
ECN = {"not-ect": 0, "ect1": 1, "ect0": 2, "ce": 3}
NAMES = {"not-ect": "Not-ECT", "ect1": "ECT(1)", "ect0": "ECT(0)", "ce": "CE"}
DSCP = 46                              # the encapsulation's sessions' (EF, RFC 3246)
ENCAP = ("ect0", "ect1", "ce")         # the codepoints RFC 6040 has an encapsulator copy
ENCAP_PPS, ENCAP_S = 200, 1
# Decapsulation: each inner codepoint under an outer CE, with a DSCP of its own (AF11, AF21,
# AF31) to tell its datagrams apart at the server.
DECAP = (("ect0", 10), ("ect1", 18), ("not-ect", 26))
PROBES = 100                           # crafted packets of each
PROBE_PORT = PORT + 7
RECV_S = 2.0                           # the receiver's window: the sends take milliseconds
READY_TIMEOUT_S = 10                   # the receiver's exit after its window
METHODS = ("wire", "capture")
# The capture method's datagrams, sessions and probes alike: long enough that an outer packet
# at least as long as one of them (CAPTURE_MIN_LEN, its inner IPv4 packet) is one of them and
# not a tunnel's keepalive or handshake, short enough for every tunnel's MTU.
CAPTURE_SIZE = 1000
CAPTURE_MIN_LEN = CAPTURE_SIZE + 28
CAPTURE_PPS = 1000                     # the probes' pace: no burst into a userspace tunnel
RECV_MAX_S = 30.0                      # the receiver's end if send-udp --end does not arrive
HELPER_STOP_S = 10
# Step 3: the throughput part's most sessions, a loss-based sender that also slows for a CE
# (RFC 3168, 6.1.2), for LOAD_S seconds unless the plan says otherwise.
LOAD_SESSIONS = SESSIONS[-1]
LOAD_CC = "cubic"
LOAD_S = 4
# The client's counters (nstat's names: TcpExt for the Linux MIB): segments sent, retransmitted,
# acknowledged, and acknowledged by an ACK with ECE (tcp_input.c, tcp_newly_delivered).
NSTAT = ("TcpOutSegs", "TcpRetransSegs", "TcpExtTCPDelivered", "TcpExtTCPDeliveredCE")
# What a gateway's telemetry says of its marks and drops (gregw's `total`, docs/gregw.md).
GATEWAY_COUNTERS = ("aqm_marked", "tx_aqm_marked", "dropped", "tun_read_pauses",
                    "tun_device_tx_dropped")


def tos_byte(dscp, ecn):
    return dscp << 2 | ECN[ecn]


def encapsulate(sc, bed, run):
    """Step 1: {codepoint: the session's exit status and udp counts}, the wire's document and
    error."""
    wire = run.wire = matrix_point.wire_start(bed, run.driver)
    sessions = {}
    for cp in ENCAP:
        doc, status, err = matrix_point.traffic_client(bed, [
            bed.addrs["server"], "--port", str(PORT), "--udp", "--pps", str(ENCAP_PPS),
            "--time", str(ENCAP_S), "--dscp", str(DSCP), "--ecn", cp])
        sessions[cp] = {"status": status, "error": err or None, "udp": doc.get("udp")}
    run.wire = None
    doc, error = matrix_point.wire_stop(wire)
    return sessions, doc, error


def decapsulate(bed, opts):
    """Step 2: {"probes": [{inner, dscp, outer_tos, inner_tos, sent}], "arrived": {TOS byte:
    datagrams}}."""
    srv, gwa, a = bed.host("server"), bed.host("gwa"), bed.addrs
    recv = srv.spawn("tosprobe", [sys.executable, TOSPROBE, "recv", "--port", str(PROBE_PORT),
                                  "--time", f"{RECV_S:g}"], stdout=-1)
    try:
        matrix_point.wait_listening(srv, PROBE_PORT, udp=True,
                                    what="the DSCP/ECN probe's receiver")
        probes = []
        for inner, dscp in DECAP:
            p = {"inner": inner, "dscp": dscp, "outer_tos": tos_byte(dscp, "ce"),
                 "inner_tos": tos_byte(dscp, inner), "sent": PROBES}
            gwa.run([sys.executable, TOSPROBE, "send", "--src", a["a"], "--dst", a["b"],
                     "--inner-src", a["client"], "--inner-dst", a["server"],
                     "--port", str(PROBE_PORT), "--count", str(PROBES),
                     "--outer-tos", str(p["outer_tos"]), "--inner-tos", str(p["inner_tos"]),
                     *(["--key", str(opts["key"])] if opts["key"] is not None else []),
                     *(["--csum"] if opts["csum"] else [])])
            probes.append(p)
        out, err = recv.communicate(timeout=RECV_S + READY_TIMEOUT_S)
    finally:
        if recv.poll() is None:
            recv.stop()
    last = (out or "").strip().splitlines()
    try:
        arrived = json.loads(last[-1])["tos"]
    except (ValueError, IndexError, KeyError, TypeError):
        raise Failure("the DSCP/ECN probe's receiver: " + (
            (err or "").strip().splitlines() or ["no count"])[-1]) from None
    return {"probes": probes, "arrived": arrived}


def helper_start(h, tag, args):
    """tosprobe.py CMD ARGS on host h, once it says it is ready (its --ready-file)."""
    ready = f"{h.state}/tosprobe-{tag}.ready"
    h.run(["rm", "-f", ready])
    proc = h.spawn(f"tosprobe-{tag}", [sys.executable, TOSPROBE, *args, "--ready-file", ready],
                   stdout=-1)
    deadline = time.monotonic() + matrix_point.READY_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if h.call(["test", "-e", ready]).returncode == 0:
            return proc
        time.sleep(0.05)
    _, err = proc.stop(signal.SIGKILL)
    raise Failure(f"tosprobe.py {tag} on {h.label()}: " +
                  ((err or "").strip().splitlines() or ["did not start"])[-1])


def helper_stop(proc, what):
    """SIGTERM ends it; its one JSON line, or Failure with what it said last."""
    out, err = proc.stop(signal.SIGTERM, timeout=HELPER_STOP_S)
    try:
        return json.loads((out or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise Failure(f"{what}: " + ((err or "").strip().splitlines() or
                                     [f"exit status {proc.local.returncode}"])[-1]) from None


def encapsulate_capture(bed, port):
    """Step 1 by capture: {codepoint: the session's exit status and udp counts} and {"dev",
    "port", "min_len", "sessions": {codepoint: the capture's {"tos": {TOS byte: packets},
    "packets", "socket_drops"}}}."""
    gwa, a = bed.host("gwa"), bed.addrs
    dev = bed.transit_iface("gwa")
    sessions, caught = {}, {}
    for cp in ENCAP:
        cap = helper_start(gwa, "capture", [
            "capture", "--dev", dev, "--src", a["a"], "--dst", a["b"], "--port", str(port),
            "--min-len", str(CAPTURE_MIN_LEN)])
        try:
            doc, status, err = matrix_point.traffic_client(bed, [
                a["server"], "--port", str(PORT), "--udp", "--pps", str(ENCAP_PPS), "--time",
                str(ENCAP_S), "--size", str(CAPTURE_SIZE), "--dscp", str(DSCP), "--ecn", cp])
            sessions[cp] = {"status": status, "error": err or None, "udp": doc.get("udp")}
        finally:
            caught[cp] = helper_stop(cap, f"the capture on {gwa.label()}'s {dev}")
    return sessions, {"dev": dev, "port": port, "min_len": CAPTURE_MIN_LEN, "sessions": caught}


def decapsulate_capture(bed, port):
    """Step 2 by capture: {"probes": [{inner, dscp, inner_tos, sent}], "arrived": {TOS byte:
    datagrams}, "ended": whether the receiver saw the end, "remarked": outer packets set to
    CE on gwb's transit}."""
    srv, gwb, cl, a = bed.host("server"), bed.host("gwb"), bed.host("client"), bed.addrs
    dev = bed.transit_iface("gwb")
    mark = helper_start(gwb, "remark", ["remark", "--dev", dev, "--src", a["a"], "--port",
                                        str(port), "--min-len", str(CAPTURE_MIN_LEN)])
    try:
        recv = srv.spawn("tosprobe", [sys.executable, TOSPROBE, "recv", "--port",
                                      str(PROBE_PORT), "--time", f"{RECV_MAX_S:g}"], stdout=-1)
        try:
            matrix_point.wait_listening(srv, PROBE_PORT, udp=True,
                                        what="the DSCP/ECN probe's receiver")
            probes, send = [], [sys.executable, TOSPROBE, "send-udp", "--dst", a["server"],
                                "--port", str(PROBE_PORT)]
            for inner, dscp in DECAP:
                p = {"inner": inner, "dscp": dscp, "inner_tos": tos_byte(dscp, inner),
                     "sent": PROBES}
                cl.run([*send, "--count", str(PROBES), "--tos", str(p["inner_tos"]), "--size",
                        str(CAPTURE_SIZE), "--pps", str(CAPTURE_PPS)])
                probes.append(p)
            cl.run([*send, "--end"])
            out, err = recv.communicate(timeout=RECV_MAX_S + READY_TIMEOUT_S)
        finally:
            if recv.poll() is None:
                recv.stop()
    finally:
        remarked = helper_stop(mark, f"the re-mark on {gwb.label()}'s {dev}")
    last = (out or "").strip().splitlines()
    try:
        doc = json.loads(last[-1])
        arrived, ended = doc["tos"], doc.get("end")
    except (ValueError, IndexError, KeyError, TypeError):
        raise Failure("the DSCP/ECN probe's receiver: " + (
            (err or "").strip().splitlines() or ["no count"])[-1]) from None
    return {"probes": probes, "arrived": arrived, "ended": ended,
            "remarked": remarked.get("remarked")}


def nstat(h):
    """{name: value} of NSTAT in h's namespace: its counters since the namespace was made (-a),
    without nstat's history file (-s)."""
    out, vals = h.run(["nstat", "-saz", *NSTAT]), {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0] in NSTAT and f[1].isdigit():
            vals[f[0]] = int(f[1])
    missing = [n for n in NSTAT if n not in vals]
    if missing:
        raise Failure(f"nstat on {h.label()} has no {', '.join(missing)}")
    return vals


def gateway_counters(tel):
    """{role: {counter: value, "drops": {reason: n}}} of what a gateway's telemetry says of
    its marks and drops (gregw's `total`), or {} for a gateway that says nothing of them."""
    out = {}
    for role, doc in (tel or {}).items() if isinstance(tel, dict) else ():
        total = doc.get("total") if isinstance(doc, dict) else None
        if not isinstance(total, dict) or "aqm_marked" not in total:
            continue
        c = {k: total[k] for k in GATEWAY_COUNTERS if isinstance(total.get(k), int)}
        c["drops"] = {k: v for k, v in (total.get("drops") or {}).items() if isinstance(v, int)}
        out[role] = c
    return out


def counted(before, after):
    """after - before, counter by counter (those in both), drops by reason: what the load
    added."""
    out = {}
    for role, a in after.items():
        b = before.get(role) or {}
        d = {k: v - b[k] for k, v in a.items() if k != "drops" and k in b}
        d["drops"] = {k: v - (b.get("drops") or {}).get(k, 0) for k, v in a["drops"].items()
                      if v - (b.get("drops") or {}).get(k, 0)}
        out[role] = d
    return out


def under_load(bed, run, seconds):
    """Step 3: {"sessions", "seconds", "congestion", "status", "error", "bytes",
    "bits_per_second", "ecn_negotiated", "nstat": the client's counters the load added (the
    marks and retransmits are read there alone: tunbed-traffic's own sums of the same would
    be the same measure twice), "gateway": the gateway's (gateway_counters), or null}."""
    cl, srv = bed.host("client"), bed.host("server")
    # The namespaces are the point's own (bed.point makes them and takes them down): the
    # setting goes with them.
    for h in (cl, srv):
        h.run(["sysctl", "-qw", "net.ipv4.tcp_ecn=1"])
    # A SYN sent again keeps asking for ECN (Linux's fallback drops the ask from it, and a
    # session whose first SYN a full queue took would then negotiate none).
    cl.run(["sysctl", "-qw", "net.ipv4.tcp_ecn_fallback=0"])
    before, g0 = nstat(cl), gateway_counters(run.driver.telemetry())
    doc, status, err = matrix_point.traffic_client(bed, [
        bed.addrs["server"], "--port", str(PORT), "--sessions", str(LOAD_SESSIONS), "--time",
        f"{seconds:g}", "--warmup", "0", "--pattern", "push", "--congestion", LOAD_CC, "--ecn",
        "on"])
    after, g1 = nstat(cl), gateway_counters(run.driver.telemetry())
    tcp = doc.get("tcp") or {}
    return {"sessions": LOAD_SESSIONS, "seconds": seconds, "congestion": LOAD_CC,
            "status": status, "error": err or None, "bytes": tcp.get("bytes"),
            "bits_per_second": tcp.get("bits_per_second"),
            "ecn_negotiated": tcp.get("ecn_negotiated"),
            "nstat": {k: after[k] - before[k] for k in NSTAT},
            "gateway": counted(g0, g1) or None}


def measure(sc, point, bed, load_s=LOAD_S, load_why=None):
    """The part's record of point's gateway on bed (up for it): what it started it stops. The
    load runs load_s seconds; with none, the record says load_why instead."""
    record = {"point": point.__dict__ | {"key": point.key(), "config": point.config()},
              "started": time.time()}
    run = matrix_point.Run(sc, point, bed)
    try:
        _, record["gateway_info"] = run.gateway_up()
        run.servers_up()
        d = run.driver
        record["method"] = method = d.tos_method(point.mode)
        if method == "capture":
            if ":" in bed.addrs["a"]:
                raise Failure("the capture method reads IPv4 outer headers: this transit is "
                              "IPv6")
            port = d.transit_port()
            record["sessions"], record["capture"] = encapsulate_capture(bed, port)
            record["wire"], record["wire_error"] = None, None
            record["decap"] = decapsulate_capture(bed, port)
        else:
            record["sessions"], record["wire"], record["wire_error"] = encapsulate(sc, bed,
                                                                                   run)
            opts = d.gre_options(point.mode)
            record["decap"] = decapsulate(bed, opts) if opts else None
            if not opts:
                record["decap_why"] = (f"{point.config()} takes no plain GRE packet crafted "
                                       "on the transit (another encapsulation, or sequence "
                                       "numbers a crafted packet cannot know)")
        if load_s:
            try:
                record["load"] = under_load(bed, run, load_s)
            except (GatewayFailure, HostLost):
                raise
            except Failure as e:  # the load's alone: the steps before it stand
                record["load"], record["load_why"] = None, f"failed: {e}"
        else:
            record["load"], record["load_why"] = None, load_why or "not run"
    finally:
        run.stop()
    record["finished"] = time.time()
    return record


# The analysis: what the record says, in words for the page and numbers for summary.json.

def method(rec):
    """How the record was measured: a record written before the capture method has no
    `method`, and was measured on the wire."""
    return rec.get("method") or "wire"


def captured(rec):
    """The capture's counts in the shape of tunbed-wire's tos (ecn.INNER.OUTER, dscp_marked,
    dscp_copied: each outer packet counted under its session's codepoint), or None."""
    sessions = (rec.get("capture") or {}).get("sessions") or {}
    if not any((c.get("tos") or {}) for c in sessions.values()):
        return None
    names = {v: k for k, v in ECN.items()}
    ecn, marked, copied = {}, 0, 0
    for cp, c in sessions.items():
        for t, n in (c.get("tos") or {}).items():
            t = int(t)
            outer = ecn.setdefault(cp, {})
            outer[names[t & 3]] = outer.get(names[t & 3], 0) + n
            marked += n
            copied += n if t >> 2 == DSCP else 0
    return {"ecn": ecn, "dscp_marked": marked, "dscp_copied": copied}


def direction(rec):
    """What the outer headers from gwa to gwb carried, as tunbed-wire's tos, or None."""
    if method(rec) == "capture":
        return captured(rec)
    dirs = (rec.get("wire") or {}).get("directions") or []
    return (dirs[0].get("tos") if dirs else None) or None


def dscp(rec):
    tos = direction(rec)
    if tos is None:
        return {"verdict": None, "words": f"not measured: {wire_why(rec)}"}
    marked, copied = tos.get("dscp_marked", 0), tos.get("dscp_copied", 0)
    cap = method(rec) == "capture"
    unit = "outer packets of datagrams" if cap else "frames of packets"
    if not marked:
        return {"verdict": None, "marked": 0, "copied": 0,
                "words": "not measured: no " + ("outer packet carried a marked datagram" if cap
                                                 else "frame carried a marked packet")}
    verdict = "yes" if copied == marked else "no" if copied == 0 else "partly"
    model = {"yes": " (the uniform model, RFC 2983)",
             "no": " (an outer DSCP of its own: the pipe model, RFC 2983)"}.get(verdict, "")
    return {"verdict": verdict, "marked": marked, "copied": copied,
            "words": f"{verdict}: {copied} of {marked} {unit} marked DSCP {DSCP} "
                     f"carried it outside{model}"}


def wire_why(rec):
    if method(rec) == "capture":
        return rec.get("capture_error") or ("the capture on the transit saw no packet of the "
                                            "sessions")
    return rec.get("wire_error") or "tunbed-wire gave no document"


def encap(rec):
    """Per inner codepoint sent, the outer codepoints its frames carried."""
    tos = direction(rec)
    if tos is None:
        return {"verdict": None, "words": f"not measured: {wire_why(rec)}", "outer": {}}
    outer, words, copied = {}, [], True
    for cp in ENCAP:
        got = {o: n for o, n in ((tos.get("ecn") or {}).get(cp) or {}).items() if n}
        outer[cp] = got
        if not got:
            words.append(f"{NAMES[cp]} -> none seen")
            copied = False
            continue
        copied &= set(got) == {cp}
        words.append(f"{NAMES[cp]} -> " + (NAMES[next(iter(got))] if len(got) == 1 else
                                           ", ".join(f"{NAMES[o]} {n}" for o, n in got.items())))
    verdict = "copied" if copied else "not copied"
    rule = ("RFC 6040's normal mode" if copied else
            "CE reset to ECT(0): RFC 3168's full functionality, not RFC 6040's copy"
            if outer.get("ce") == {"ect0": sum(outer["ce"].values())} and
            all(set(outer[c]) == {c} for c in ("ect0", "ect1")) else "not RFC 6040's copy")
    return {"verdict": verdict, "outer": outer,
            "words": f"{verdict} ({rule}): " + "; ".join(words)}


def decap(rec):
    """Per crafted probe (inner codepoint under an outer CE), what arrived at the server."""
    d = rec.get("decap")
    if d is None:
        return {"verdict": None, "probes": [],
                "words": f"not measured: {rec.get('decap_why') or 'no probe'}"}
    if method(rec) == "capture" and not d.get("remarked"):
        return {"verdict": None, "probes": [],
                "words": "not measured: the re-mark on gwb's transit set no probe's outer "
                         "packet to CE"}
    arrived = {int(k): v for k, v in (d.get("arrived") or {}).items()}
    rows, words = [], []
    for p in d["probes"]:
        mine = {t: n for t, n in arrived.items() if t >> 2 == p["dscp"]}
        n = sum(mine.values())
        ce = mine.get(p["dscp"] << 2 | ECN["ce"], 0)
        rows.append({"inner": p["inner"], "sent": p["sent"], "arrived": n, "ce": ce})
        if p["inner"] == "not-ect":
            words.append(f"Not-ECT under CE: {'dropped' if n == 0 else 'delivered'} "
                         f"({n} of {p['sent']} arrived)")
        else:
            words.append(f"{NAMES[p['inner']]} under CE: {ce} of {n} arrived CE"
                         + (f" ({p['sent']} sent)" if n != p["sent"] else ""))
    marked = [r for r in rows if r["inner"] != "not-ect"]
    if not any(r["arrived"] for r in marked):
        return {"verdict": None, "probes": rows,
                "words": "not measured: none of the crafted packets arrived (" +
                         "; ".join(words) + ")"}
    ok = all(r["ce"] == r["arrived"] for r in marked if r["arrived"])
    none = all(r["ce"] == 0 for r in marked)
    verdict = "yes" if ok else "no" if none else "partly"
    how = (f" ({d['remarked']} outer packets re-marked CE on the way)"
           if method(rec) == "capture" else "")
    return {"verdict": verdict, "probes": rows, "remarked": d.get("remarked"),
            "words": f"{verdict}: " + "; ".join(words) + how}


# The load of a record written before tunbed measured it.
LOAD_BEFORE = "this record was made before tunbed measured marks and drops under load"


def gateway_words(counters):
    """'gwa 5,000 marked CE in its flow queue (tx_aqm_marked) and 0 on receive (aqm_marked),
    12 dropped (tx_aqm 12); gwb 0 marked CE ...' of the gateway's counters under load, by role
    (a record of a gregw without CoDel in its flow queue has no tx_aqm_marked: 'gwb 1,234
    marked CE (aqm_marked), 3 dropped (aqm 3)')."""
    out = []
    for role, c in sorted((counters or {}).items()):
        drops = c.get("drops") or {}
        marked = (f"{c['tx_aqm_marked']:,} marked CE in its flow queue (tx_aqm_marked) and "
                  f"{c.get('aqm_marked', 0):,} on receive (aqm_marked)"
                  if "tx_aqm_marked" in c else f"{c.get('aqm_marked', 0):,} marked CE (aqm_marked)")
        w = f"{role} {marked}, {c.get('dropped', 0):,} dropped"
        if drops:
            w += " (" + ", ".join(f"{k} {v:,}" for k, v in sorted(drops.items())) + ")"
        if c.get("tun_device_tx_dropped"):
            w += f", its TUN device dropped {c['tun_device_tx_dropped']:,}"
        out.append(w)
    return "; ".join(out)


def load(rec):
    """Marks and drops under load: {"verdict": "marks" (CE reached the receivers), "drops"
    (none did, segments were retransmitted), "neither", or None (not measured), "ce_echoed",
    "delivered", "retransmits", "retransmits_per_gb", "gateway", "words"}."""
    ld = rec.get("load")
    if ld is None:
        return {"verdict": None, "words": f"not measured: {rec.get('load_why') or LOAD_BEFORE}"}
    n = ld["sessions"]
    why = (ld.get("error") or "").strip().splitlines() or [
        f"the client's exit status {ld['status']}"]
    if not ld.get("bytes"):
        return {"verdict": None, "words": f"not measured: the {n} sessions failed: {why[-1]}"}
    # A session that did not negotiate ECN answers a mark only by chance: not this load.
    if ld.get("ecn_negotiated") != n:
        return {"verdict": None, "words": f"not measured: {ld.get('ecn_negotiated') or 0} of {n} "
                                          "sessions negotiated ECN"}
    ns = ld["nstat"]
    ce, rtx = ns["TcpExtTCPDeliveredCE"], ns["TcpRetransSegs"]
    gb = ld["bytes"] / 1e9
    per_gb = rtx / gb
    verdict = "marks" if ce else "drops" if rtx else "neither"
    gw = gateway_words(ld.get("gateway"))
    words = (f"{verdict}: {ce:,} segments delivered under a CE echo, {per_gb:,.0f} "
             f"retransmits/GB ({rtx:,} of {ns['TcpOutSegs']:,} segments; {n} ECN sessions, "
             f"{ld['congestion'].upper()}, {ld['seconds']:g} s, "
             f"{(ld.get('bits_per_second') or 0) / 1e9:.2f} Gbit/s)"
             + (f"; the gateway: {gw}" if gw else "")
             # Sessions that negotiated ECN and carried the load, and then failed (a close
             # that did not come within the client's grace): the counts stand, with why.
             + (f"; the client exited {ld['status']}: {why[-1]}" if ld["status"] else ""))
    return {"verdict": verdict, "ce_echoed": ce, "delivered": ns["TcpExtTCPDelivered"],
            "retransmits": rtx, "retransmits_per_gb": round(per_gb, 1),
            "gateway": ld.get("gateway"), "words": words}


METHOD_WORDS = {
    "wire": "wire: tunbed-wire read the inner and outer headers on the transit; the outer CE "
            "crafted in GRE packets there",
    "capture": "capture: the outer TOS byte read on the transit by a packet socket, the inner "
               "one where the datagrams arrived; the outer CE set on the way (a tc program on "
               "gwb's transit)"}


def analyse(rec):
    """{"method", "dscp", "encap", "decap", "load"}: the method's name and words, and each
    aspect's verdict, numbers and words."""
    m = method(rec)
    return {"method": {"name": m, "words": METHOD_WORDS[m]}, "dscp": dscp(rec),
            "encap": encap(rec), "decap": decap(rec), "load": load(rec)}


ASPECTS = ("dscp", "encap", "decap", "load")
ROWS = (("dscp", "DSCP carried (outer)"), ("encap", "ECN at encapsulation (inner -> outer)"),
        ("decap", "CE at decapsulation (outer CE -> inner)"),
        ("load", "marks / drops under load (ECN, CUBIC)"),
        ("method", "DSCP / ECN measured by"))


# What the analysis reads of a record (records.py checks it when the record is read).
CODEPOINT = Str("|".join(ECN), ", ".join(ECN))
COUNT = Num(0, whole=True)
WIRE_TOS = Obj({"ecn": Map(Map(COUNT, key="|".join(ECN), keywhat="an ECN codepoint"),
                           key="|".join(ECN), keywhat="an ECN codepoint"),
                "dscp_marked": COUNT, "dscp_copied": COUNT})
RECORD_SCHEMA = Obj({
    "point": Obj({"key": KEY, "gateway": STR, "mode": STR}, need=("key", "gateway", "mode")),
    "wire": Opt(Obj({"directions": List(Obj({"tos": Opt(WIRE_TOS)}))})),
    "wire_error": Opt(STR),
    "sessions": Map(Obj({"status": INT}), key="|".join(ENCAP), keywhat="an ECN codepoint"),
    "decap": Opt(Obj({"probes": List(Obj({"inner": CODEPOINT, "dscp": Num(0, 63, whole=True),
                                          "sent": COUNT}, need=("inner", "dscp", "sent"))),
                      "arrived": Map(COUNT, key="[0-9]{1,3}", keywhat="a TOS byte"),
                      "remarked": Opt(COUNT)},
                     need=("probes", "arrived"))),
    "decap_why": Opt(STR),
    # The capture method's (optional: a record written before it has none, and was measured
    # on the wire).
    "method": Opt(Str("|".join(METHODS), ", ".join(METHODS))),
    "capture": Opt(Obj({"sessions": Map(Obj({"tos": Map(COUNT, key="[0-9]{1,3}",
                                                        keywhat="a TOS byte")}),
                                        key="|".join(ENCAP), keywhat="an ECN codepoint")},
                       need=("sessions",))),
    "capture_error": Opt(STR),
    # Under load (optional: a record written before it has none, and reads as not measured).
    "load": Opt(Obj({"sessions": Num(1, whole=True), "seconds": Num(0), "congestion": STR,
                     "status": INT, "error": Opt(STR), "bytes": Opt(COUNT),
                     "bits_per_second": Opt(Num(0)), "ecn_negotiated": Opt(COUNT),
                     "nstat": Obj({k: Num(whole=True) for k in NSTAT}, need=NSTAT),
                     "gateway": Opt(Map(Obj({**{k: Num(whole=True) for k in GATEWAY_COUNTERS},
                                             "drops": Map(Num(whole=True))}),
                                        key="[a-z0-9]{1,16}", keywhat="a role"))},
                    need=("sessions", "seconds", "congestion", "status", "nstat"))),
    "load_why": Opt(STR)}, need=("point", "sessions"))
