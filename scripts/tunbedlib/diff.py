"""`tunbed diff A B`: two results directories point by point. Each point's change in
throughput with both spreads, whether it is larger than the machine's noise, a line per point,
each directory's noise floor (its minimum detectable difference), and an exit status a CI job
can fail on: 0 no regression, 1 a regression beyond the threshold, 2 bad input. Pure but for
load() and main(). The rule, in docs/scaling.md: a point changed when both sides have at
least two repeats, their ranges do not overlap, and the change of the medians exceeds the
noisier directory's noise floor; a slower change beyond --threshold is a regression.

Two datasheets (docs/datasheet.md) are compared per gateway and part: each throughput point as
above; each NDR and PDR by the two searches' bounds (the rate that passed and the one that
failed next above it: apart when they do not overlap); each failover's outage by its repeats'
ranges; DSCP/ECN's verdicts and the guest tests' results as they are (a good one lost is a
regression), and DSCP/ECN's method where the two differ; DSCP/ECN's marks and drops under load
by their verdict, a change said but never a regression (one run's counts, no spread)."""

import json
import math
import os
import statistics

from .common import log
from .kinds.ndr_plan import size_key, size_of, size_words
from .schema import BOOL, NUM, STR, Bad, List, Map, Num, Obj, Opt, Tup

THRESHOLD_PCT = 5.0  # a slowdown beyond the noise is a regression from this size (--threshold)
MIN_REPEATS = 2  # below this a point's spread, and so its noise, is unknown
METRIC = "bits_per_second"
VERDICTS = ("same", "slower", "regression", "faster", "few", "nothing")


class DiffError(Exception):
    """Input diff cannot compare: one line, exit status 2."""


def parse_threshold(text):
    """--threshold: percent, from 0 to 100."""
    try:
        t = float(text.strip().removesuffix("%"))
    except ValueError:
        t = None
    if t is None or not math.isfinite(t) or not 0 <= t <= 100:
        raise DiffError(f"bad value '{text}' for --threshold: a percentage from 0 to 100")
    return t


def values(runs, metric=METRIC):
    """{key: [metric of each complete run]} in the order the keys first appear; runs without
    the metric (a UDP point of intranet) are left out."""
    out = {}
    for r in runs:
        v = r.get(metric)
        if v is None or r.get("complete") is False:
            continue
        out.setdefault(r["key"], []).append(v)
    return out


def rel_range(vs):
    """(max - min) / median in percent; None below MIN_REPEATS or with a median of 0."""
    if len(vs) < MIN_REPEATS:
        return None
    med = statistics.median(vs)
    return 100 * (max(vs) - min(vs)) / med if med > 0 else None


def noise_floor(by_key):
    """A directory's noise floor: the median over its points of their repeats' relative range
    (an A/A measurement: the runner interleaves the repeats of every point over the run);
    None when no point has MIN_REPEATS."""
    rs = [r for r in (rel_range(vs) for vs in by_key.values()) if r is not None]
    return statistics.median(rs) if rs else None


def needed(a, b, slower):
    """The change (percent of A's median, positive) at which B's range would clear A's:
    below A's least for a slowdown, above its most for a speed-up, the spreads kept."""
    ma, mb = statistics.median(a), statistics.median(b)
    if slower:
        return 100 * (1 - (min(a) / ma) * (mb / max(b))) if max(b) > 0 else 100.0
    return 100 * ((max(a) / ma) * (mb / min(b)) - 1) if min(b) > 0 else math.inf


def compare_point(a, b, noise, threshold):
    """One point: {"verdict": same|slower|regression|faster|few|nothing, "change_pct",
    "needed_pct", medians and ranges}."""
    ma, mb = statistics.median(a), statistics.median(b)
    out = {"a": {"median": ma, "min": min(a), "max": max(a), "n": len(a)},
           "b": {"median": mb, "min": min(b), "max": max(b), "n": len(b)},
           "change_pct": 100 * (mb - ma) / ma if ma > 0 else None, "needed_pct": None}
    if ma <= 0:
        out["verdict"] = "nothing"
    elif len(a) < MIN_REPEATS or len(b) < MIN_REPEATS or noise is None:
        out["verdict"] = "few"
    else:
        slower = mb < ma
        out["needed_pct"] = max(noise, needed(a, b, slower))
        apart = max(b) < min(a) or min(b) > max(a)
        if not apart or abs(out["change_pct"]) <= noise:
            out["verdict"] = "same"
        elif not slower:
            out["verdict"] = "faster"
        else:
            out["verdict"] = "regression" if -out["change_pct"] > threshold else "slower"
    return out


def compare(runs_a, runs_b, threshold=THRESHOLD_PCT, metric=METRIC):
    """Two directories' runs (analysed: key, repeat, the metric, complete), point by point.
    {"points": [(key, compare_point)], "floor_a", "floor_b", "only_a", "only_b", "status"};
    a DiffError when they have no point with the metric in common."""
    va, vb = values(runs_a, metric), values(runs_b, metric)
    common = [k for k in va if k in vb]
    if not common:
        raise DiffError("no point in common: the directories measured different things")
    fa, fb = noise_floor(va), noise_floor(vb)
    noise = max(fa, fb) if fa is not None and fb is not None else None
    points = [(k, compare_point(va[k], vb[k], noise, threshold)) for k in common]
    bad = any(p["verdict"] == "regression" for _, p in points)
    return {"points": points, "floor_a": fa, "floor_b": fb, "threshold": threshold,
            "only_a": [k for k in va if k not in vb], "only_b": [k for k in vb if k not in va],
            "status": 1 if bad else 0}


def gbps(x):
    return f"{x / 1e9:.2f}"


def pct(x):
    return "unknown" if x is None else f"{x:.1f}%"


WORDS = {
    "same": "no change beyond the noise",
    "faster": "FASTER beyond the noise",
    "slower": "slower beyond the noise, within the {t:g}% threshold",
    "regression": "SLOWER beyond the noise and the {t:g}% threshold: a regression",
    "nothing": "A measured nothing here: no change to tell",
}


def point_line(key, p, threshold):
    """'KEY: 4.82 -> 2.41 Gbit/s (-50.0%; A 4.70-4.90, B 2.35-2.45): SLOWER ...'."""
    a, b = p["a"], p["b"]
    change = "" if p["change_pct"] is None else f"{p['change_pct']:+.1f}%; "
    head = (f"{key}: {gbps(a['median'])} -> {gbps(b['median'])} Gbit/s ({change}A "
            f"{gbps(a['min'])}-{gbps(a['max'])}, B {gbps(b['min'])}-{gbps(b['max'])})")
    if p["verdict"] == "few":
        return f"{head}: too few repeats to tell a change from noise (A {a['n']}, B {b['n']})"
    words = WORDS[p["verdict"]].format(t=threshold)
    if p["verdict"] == "same":
        words += f" (would need {p['needed_pct']:.1f}%)"
    return f"{head}: {words}"


def lines(res, name_a="A", name_b="B"):
    """The report of compare(): the directories' noise, a line per point, what only one
    has, and the verdict."""
    out = [f"A = {name_a}", f"B = {name_b}",
           f"noise floor (minimum detectable difference): A {pct(res['floor_a'])}, B "
           f"{pct(res['floor_b'])}"]
    out += [point_line(k, p, res["threshold"]) for k, p in res["points"]]
    for side in ("a", "b"):
        if res[f"only_{side}"]:
            out.append(f"only in {side.upper()}: {', '.join(res[f'only_{side}'])}")
    count = {v: [k for k, p in res["points"] if p["verdict"] == v] for v in VERDICTS}
    n = len(count["regression"])
    verdict = (f"{n} regression{'s' if n != 1 else ''} beyond {res['threshold']:g}% "
               f"({', '.join(count['regression'])})" if n else
               f"no regression beyond {res['threshold']:g}%")
    rest = [f"{len(count[v])} {w}" for v, w in (("slower", "slower within the threshold"),
                                                 ("faster", "faster"), ("same", "unchanged"),
                                                 ("few", "with too few repeats"))
            if count[v]]
    out.append(f"verdict: {verdict}" + (f"; {', '.join(rest)}" if rest else ""))
    return out


# What a datasheet's summary.json must hold for diff (datasheet_report.document writes it).
SPREAD = Obj({"median": NUM, "min": NUM, "max": NUM}, need=("median", "min", "max"))
BOUND = Obj({"rate_pps": Opt(Num(0)), "upper_pps": Opt(Num(0)), "at_max": Opt(BOOL),
             "limited": Opt(BOOL), "below_min": Opt(BOOL)})
VERDICT = Obj({"verdict": Opt(STR), "words": STR}, need=("words",))
TOS_ASPECTS = ("dscp", "encap", "decap")
GUEST = Obj({"result": STR}, need=("result",))
SHEET = Obj({"gateways": Map(Obj({
    "throughput": Map(Obj({"key": STR}, need=("key",))),
    "tos": Opt(Obj({**{k: VERDICT for k in TOS_ASPECTS},
                    "method": Opt(Obj({"name": STR}, need=("name",))),
                    # Under load: a datasheet written before it has none (not measured).
                    "load": Opt(Obj({"verdict": Opt(STR), "words": STR,
                                     "ce_echoed": Opt(Num(whole=True)),
                                     "retransmits_per_gb": Opt(NUM)}, need=("words",)))},
                   need=TOS_ASPECTS)),
    "ndr": Map(Obj({"ndr": BOUND, "pdr": BOUND}, need=("ndr", "pdr")), key="[0-9]{1,5}|imix",
               keywhat="a frame size or imix"),
    "failover": Map(Obj({"outage_s": Opt(SPREAD), "repeats": Num(1, whole=True)},
                        need=("repeats",))),
    "parts": Obj({"interop": Obj({"tests": Opt(Map(Opt(GUEST)))})}),
    "figures": List(Tup(STR, STR))}, need=("throughput", "ndr", "failover")))},
    need=("gateways",))
GOOD = ("yes", "copied")  # a DSCP/ECN verdict that, lost, is a regression


def sessions(n):
    return f"{n} session{'' if int(n) == 1 else 's'}"


def bounds(b):
    """(lower, upper) of a search's figure: the rate that passed, the one that failed next
    (None above: none failed)."""
    return b["rate_pps"], b["upper_pps"]


def compare_search(a, b, threshold):
    """One NDR or PDR of two searches: apart when the bounds do not overlap; a drop beyond
    the threshold is a regression; either bound by the generator tells nothing of the
    gateway."""
    (la, ua), (lb, ub) = bounds(a), bounds(b)
    out = {"a": (la, ua), "b": (lb, ub), "change_pct": None}
    if not la or not lb:
        out["verdict"] = "nothing"
        return out
    out["change_pct"] = 100 * (lb - la) / la
    if any(x.get(k) for x in (a, b) for k in ("at_max", "limited", "below_min")):
        out["verdict"] = "generator"
    elif ub is not None and ub <= la:
        out["verdict"] = "regression" if -out["change_pct"] > threshold else "slower"
    elif ua is not None and lb >= ua:
        out["verdict"] = "faster"
    else:
        out["verdict"] = "same"
    return out


SEARCH_WORDS = dict(WORDS, same="no change beyond the searches' bounds",
                    faster="FASTER beyond the searches' bounds",
                    slower="slower beyond the searches' bounds, within the {t:g}% threshold",
                    regression="SLOWER beyond the searches' bounds and the {t:g}% threshold: a "
                               "regression",
                    generator="bound by the generator: no change of the gateway's to tell")


def mpps(x):
    return "-" if x is None else f"{x / 1e6:.3f}"


def between(lo, up):
    """A search's bounds in words: passed-failed, or what passed with no failure above."""
    return f"{mpps(lo)}-{mpps(up)}" if up is not None else f"{mpps(lo)}, none failed above"


def search_line(label, p, threshold):
    (la, ua), (lb, ub) = p["a"], p["b"]
    change = "" if p["change_pct"] is None else f"{p['change_pct']:+.1f}%; "
    return (f"{label}: {mpps(la)} -> {mpps(lb)} Mpps ({change}passed-failed: A "
            f"{between(la, ua)}, B {between(lb, ub)}): "
            f"{SEARCH_WORDS[p['verdict']].format(t=threshold)}")


def compare_outage(a, b, threshold):
    """One failover's outage (lower is better): apart when both have MIN_REPEATS and their
    ranges do not overlap; longer beyond the threshold is a regression."""
    sa, sb = a.get("outage_s"), b.get("outage_s")
    out = {"a": sa, "b": sb, "n": (a["repeats"], b["repeats"]), "change_pct": None}
    if not sa or not sb:
        out["verdict"] = "nothing"
        return out
    if sa["median"] > 0:
        out["change_pct"] = 100 * (sb["median"] - sa["median"]) / sa["median"]
    if min(out["n"]) < MIN_REPEATS:
        out["verdict"] = "few"
    elif sb["min"] > sa["max"]:
        out["verdict"] = ("regression" if out["change_pct"] is None or
                          out["change_pct"] > threshold else "slower")
    elif sb["max"] < sa["min"]:
        out["verdict"] = "faster"
    else:
        out["verdict"] = "same"
    return out


OUTAGE_WORDS = dict(WORDS, faster="SHORTER beyond the repeats' ranges",
                    slower="longer beyond the repeats' ranges, within the {t:g}% threshold",
                    regression="LONGER beyond the repeats' ranges and the {t:g}% threshold: a "
                               "regression",
                    same="no change beyond the repeats' ranges",
                    nothing="no outage measured on one side")


def outage_line(label, p, threshold):
    a, b = p["a"], p["b"]
    if not a or not b:
        return f"{label}: {OUTAGE_WORDS['nothing']}"
    change = "" if p["change_pct"] is None else f"{p['change_pct']:+.1f}%; "
    head = (f"{label}: {a['median']:.3f} -> {b['median']:.3f} s ({change}A {a['min']:.3f}-"
            f"{a['max']:.3f}, B {b['min']:.3f}-{b['max']:.3f})")
    if p["verdict"] == "few":
        return (f"{head}: too few repeats to tell a change from noise (A {p['n'][0]}, B "
                f"{p['n'][1]})")
    return f"{head}: {OUTAGE_WORDS[p['verdict']].format(t=threshold)}"


def behaviour(label, a, b, good, none):
    """(verdict, line) of a behaviour's two verdicts: the same, CHANGED, or a regression when
    a good one is lost; none: the words of a side that has no verdict."""
    v = "same" if a == b else "regression" if a in good else "changed"
    words = {"same": "the same", "changed": "CHANGED", "regression": "CHANGED: a regression"}
    return v, f"{label}: {a or none} -> {b or none}: {words[v]}"


def tos_method(t):
    """The DSCP/ECN part's method (wire or capture); a datasheet written before the capture
    method has none in its summary, and was measured on the wire."""
    return None if t is None else ((t.get("method") or {}).get("name") or "wire")


def tos_lines(g, ta, tb):
    if ta is None and tb is None:
        return []
    out = []
    ma, mb = tos_method(ta), tos_method(tb)
    if ma and mb and ma != mb:
        out.append(("changed", f"{g}, DSCP/ECN measured by: {ma} -> {mb}: CHANGED, the "
                               "verdicts below are of two methods (docs/datasheet.md)"))
    out += [behaviour(f"{g}, DSCP/ECN {k}", ((ta or {}).get(k) or {}).get("verdict"),
                      ((tb or {}).get(k) or {}).get("verdict"), GOOD, "not measured")
            for k in TOS_ASPECTS]
    line = load_line(g, ta, tb)
    return out + ([line] if line else [])


def load_words(t):
    """A side's marks and drops under load in short, or 'not measured'."""
    if not t or t.get("verdict") is None:
        return "not measured"
    return (f"{t['verdict']} ({t.get('ce_echoed') or 0:,} segments under a CE echo, "
            f"{t.get('retransmits_per_gb') or 0:,.0f} retransmits/GB)")


def load_line(g, ta, tb):
    """(verdict, line) of the marks and drops under load: the same or CHANGED by their verdict
    (marks, drops, neither), never a regression: one run's counts under load are no figure
    with a spread to tell a change from noise; or None when neither side measured them."""
    la, lb = ((t or {}).get("load") for t in (ta, tb))
    va, vb = ((x or {}).get("verdict") for x in (la, lb))
    if va is None and vb is None:
        return None
    v = "same" if va == vb else "changed"
    return v, (f"{g}, DSCP/ECN under load: {load_words(la)} -> {load_words(lb)}: "
               f"{'the same' if v == 'same' else 'CHANGED'}")


def interop_lines(g, ia, ib):
    return [behaviour(f"{g}, interoperability {t}", (ia.get(t) or {}).get("result"),
                      (ib.get(t) or {}).get("result"), ("pass",), "not run")
            for t in sorted(set(ia) | set(ib))]


def compare_sheets(sa, sb, runs_a, runs_b, threshold=THRESHOLD_PCT):
    """Two datasheets' summaries, per gateway and part: {"lines": [(verdict, line)], "floor_a",
    "floor_b", "only_a", "only_b", "status"}."""
    va, vb = values(runs_a), values(runs_b)
    fa, fb = noise_floor(va), noise_floor(vb)
    noise = max(fa, fb) if fa is not None and fb is not None else None
    ga, gb = sa["gateways"], sb["gateways"]
    common = [g for g in ga if g in gb]
    if not common:
        raise DiffError("no gateway in common: the datasheets measured different gateways")
    res = []
    for g in common:
        a, b = ga[g], gb[g]
        for n in sorted(set(a["throughput"]) & set(b["throughput"]), key=int):
            ka, kb = a["throughput"][n]["key"], b["throughput"][n]["key"]
            if ka in va and kb in vb:
                p = compare_point(va[ka], vb[kb], noise, threshold)
                res.append((p["verdict"], point_line(f"{g}, throughput, {sessions(n)}", p,
                                                     threshold)))
        res += tos_lines(g, a.get("tos"), b.get("tos"))
        for size in sorted(set(a["ndr"]) & set(b["ndr"]), key=lambda k: size_key(size_of(k))):
            for name in ("ndr", "pdr"):
                p = compare_search(a["ndr"][size][name], b["ndr"][size][name], threshold)
                res.append((p["verdict"], search_line(
                    f"{g}, {name.upper()}, {size_words(size_of(size))}", p, threshold)))
        for fault in [f for f in a["failover"] if f in b["failover"]]:
            p = compare_outage(a["failover"][fault], b["failover"][fault], threshold)
            res.append((p["verdict"], outage_line(f"{g}, failover {fault}, outage", p,
                                                  threshold)))
        res += interop_lines(g, a["parts"]["interop"].get("tests") or {},
                             b["parts"]["interop"].get("tests") or {})
    return {"lines": res, "floor_a": fa, "floor_b": fb, "threshold": threshold,
            "only_a": [g for g in ga if g not in gb], "only_b": [g for g in gb if g not in ga],
            "status": 1 if any(v == "regression" for v, _ in res) else 0}


def sheet_lines(res, name_a="A", name_b="B"):
    """The report of compare_sheets()."""
    out = [f"A = {name_a}", f"B = {name_b}",
           f"noise floor of the throughput (minimum detectable difference): A "
           f"{pct(res['floor_a'])}, B {pct(res['floor_b'])}"]
    out += [line for _, line in res["lines"]]
    for side in ("a", "b"):
        if res[f"only_{side}"]:
            out.append(f"only in {side.upper()}: {', '.join(res[f'only_{side}'])}")
    n = sum(v == "regression" for v, _ in res["lines"])
    changed = sum(v in ("slower", "faster", "changed") for v, _ in res["lines"])
    same = sum(v == "same" for v, _ in res["lines"])
    verdict = (f"{n} regression{'s' if n != 1 else ''} beyond {res['threshold']:g}% or of "
               "behaviour" if n else f"no regression beyond {res['threshold']:g}% nor of "
                                     "behaviour")
    few = sum(v == "few" for v, _ in res["lines"])
    gen = sum(v == "generator" for v, _ in res["lines"])
    rest = [w for c, w in ((changed, f"{changed} changed within the threshold or for the "
                                     "better"), (same, f"{same} unchanged"),
                           (few, f"{few} with too few repeats"),
                           (gen, f"{gen} bound by the generator")) if c]
    out.append(f"verdict: {verdict}" + (f"; {', '.join(rest)}" if rest else ""))
    return out


def kind_of(meta):
    """A directory's scenario kind as meta.json says it (ras, compare and run: matrix)."""
    if meta.get("kind"):
        return str(meta["kind"])
    return "failover" if meta.get("scenario") == "failover" else "matrix"


def load(outdir):
    """(kind, runs, summary) of a results directory: meta.json's kind, summary.json's analysed
    runs and the whole of it (a datasheet's checked against SHEET), checked; a DiffError naming
    the file otherwise."""
    docs = {}
    for name in ("meta.json", "summary.json"):
        path = os.path.join(outdir, name)
        try:
            with open(path) as f:
                docs[name] = json.load(f)
        except OSError as e:
            raise DiffError(f"{path}: cannot read: {e.strerror} (not a results directory, or "
                            "no report made: tunbed report DIR)") from None
        except ValueError as e:
            raise DiffError(f"{path}: not JSON: {e}") from None
        if not isinstance(docs[name], dict):
            raise DiffError(f"{path}: not a tunbed results file (expected a JSON object)")
    path = os.path.join(outdir, "summary.json")
    runs = docs["summary.json"].get("runs")
    if not isinstance(runs, list):
        raise DiffError(f"{path}: no runs (a kind without throughput per run)")
    for i, r in enumerate(runs):
        v = r.get(METRIC) if isinstance(r, dict) else None
        if not isinstance(r, dict) or not isinstance(r.get("key"), str) or (
                v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                   or not math.isfinite(v) or v < 0)):
            raise DiffError(f"{path}: run {i + 1}: not a run with a key and a throughput")
    kind = kind_of(docs["meta.json"])
    if kind == "datasheet":
        try:
            SHEET.check(docs["summary.json"], "")
        except Bad as e:
            raise DiffError(f"{path}: {e}") from None
    return kind, runs, docs["summary.json"]


def main(dir_a, dir_b, threshold=THRESHOLD_PCT, out=print, loader=load):
    """`tunbed diff A B [--threshold PCT]` (threshold a number or the option's text): prints
    the comparison and returns the exit status; bad input is one line on stderr and 2."""
    try:
        if isinstance(threshold, str):
            threshold = parse_threshold(threshold)
        kind_a, runs_a, sum_a = loader(dir_a)
        kind_b, runs_b, sum_b = loader(dir_b)
        if kind_a != kind_b:
            raise DiffError(f"{dir_a} is of kind {kind_a} and {dir_b} of kind {kind_b}: diff "
                            "compares runs of one kind")
        if kind_a == "datasheet":
            res = compare_sheets(sum_a, sum_b, runs_a, runs_b, threshold)
            text = sheet_lines(res, dir_a, dir_b)
        else:
            res = compare(runs_a, runs_b, threshold)
            text = lines(res, dir_a, dir_b)
    except DiffError as e:
        log(str(e))
        return 2
    for line in text:
        out(line)
    return res["status"]
