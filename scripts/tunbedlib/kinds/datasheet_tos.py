"""The datasheet's DSCP/ECN part (docs/datasheet.md): what a gateway does with the DS field of
the packets it carries, measured on ras.topo with the gateway up, in two steps.

1. Encapsulation (RFC 2983's uniform model, RFC 6040's normal mode): tunbed-wire on gwa's
   transit while a UDP session of tunbed-traffic crosses from the client to the server for each
   ECN codepoint an encapsulator must copy (ECT(0), ECT(1), CE), every datagram DSCP 46; what
   the frames carried, tunbed-wire's `tos` of the direction (ecn.INNER.OUTER, dscp_marked,
   dscp_copied).
2. Decapsulation (RFC 6040, 4.2): plain GRE packets crafted on gwa's transit (tosprobe.py),
   their outer ECN field CE as a router's mark on the way, around UDP datagrams to the server
   of ECT(0), ECT(1) and Not-ECT (each its own DSCP, which decapsulation leaves); a receiver on
   the server counts what arrives by DS field: CE where the far gateway carried the mark in,
   and the Not-ECT ones dropped.

Pure but for measure(): the analysis reads the record only."""

import json
import os
import sys
import time

from ..common import Failure
from ..common import TRAFFIC_PORT as PORT
from ..records import KEY
from ..schema import INT, STR, List, Map, Num, Obj, Opt, Str
from . import matrix_point

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


def measure(sc, point, bed):
    """The part's record of point's gateway on bed (up for it): what it started it stops."""
    record = {"point": point.__dict__ | {"key": point.key(), "config": point.config()},
              "started": time.time()}
    run = matrix_point.Run(sc, point, bed)
    try:
        _, record["gateway_info"] = run.gateway_up()
        run.servers_up()
        record["sessions"], record["wire"], record["wire_error"] = encapsulate(sc, bed, run)
        opts = run.driver.gre_options(point.mode)
        record["decap"] = decapsulate(bed, opts) if opts else None
        if not opts:
            record["decap_why"] = (f"{point.config()} takes no plain GRE packet crafted on the "
                                   "transit (another encapsulation, or sequence numbers a "
                                   "crafted packet cannot know)")
    finally:
        run.stop()
    record["finished"] = time.time()
    return record


# The analysis: what the record says, in words for the page and numbers for summary.json.

def direction(rec):
    """tunbed-wire's tos of the frames from gwa to gwb, or None."""
    dirs = (rec.get("wire") or {}).get("directions") or []
    return (dirs[0].get("tos") if dirs else None) or None


def dscp(rec):
    tos = direction(rec)
    if tos is None:
        return {"verdict": None, "words": f"not measured: {wire_why(rec)}"}
    marked, copied = tos.get("dscp_marked", 0), tos.get("dscp_copied", 0)
    if not marked:
        return {"verdict": None, "marked": 0, "copied": 0,
                "words": "not measured: no frame carried a marked packet"}
    verdict = "yes" if copied == marked else "no" if copied == 0 else "partly"
    model = {"yes": " (the uniform model, RFC 2983)",
             "no": " (an outer DSCP of its own: the pipe model, RFC 2983)"}.get(verdict, "")
    return {"verdict": verdict, "marked": marked, "copied": copied,
            "words": f"{verdict}: {copied} of {marked} frames of packets marked DSCP {DSCP} "
                     f"carried it outside{model}"}


def wire_why(rec):
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
    return {"verdict": verdict, "probes": rows, "words": f"{verdict}: " + "; ".join(words)}


def analyse(rec):
    """{"dscp", "encap", "decap"}: each its verdict, numbers and words."""
    return {"dscp": dscp(rec), "encap": encap(rec), "decap": decap(rec)}


ROWS = (("dscp", "DSCP carried (outer)"), ("encap", "ECN at encapsulation (inner -> outer)"),
        ("decap", "CE at decapsulation (outer CE -> inner)"))


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
                      "arrived": Map(COUNT, key="[0-9]{1,3}", keywhat="a TOS byte")},
                     need=("probes", "arrived"))),
    "decap_why": Opt(STR)}, need=("point", "sessions"))
