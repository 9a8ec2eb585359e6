"""`tunbed diff A B`: two results directories point by point. Each point's change in
throughput with both spreads, whether it is larger than the machine's noise, a line per point,
each directory's noise floor (its minimum detectable difference), and an exit status a CI job
can fail on: 0 no regression, 1 a regression beyond the threshold, 2 bad input. Pure but for
load() and main(). The rule, in docs/scaling.md: a point changed when both sides have at
least two repeats, their ranges do not overlap, and the change of the medians exceeds the
noisier directory's noise floor; a slower change beyond --threshold is a regression."""

import json
import math
import os
import statistics

from .common import log

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


def kind_of(meta):
    """A directory's scenario kind as meta.json says it (ras, compare and run: matrix)."""
    if meta.get("kind"):
        return str(meta["kind"])
    return "failover" if meta.get("scenario") == "failover" else "matrix"


def load(outdir):
    """(kind, runs) of a results directory: meta.json's kind and summary.json's analysed
    runs, checked; a DiffError naming the file otherwise."""
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
    return kind_of(docs["meta.json"]), runs


def main(dir_a, dir_b, threshold=THRESHOLD_PCT, out=print, loader=load):
    """`tunbed diff A B [--threshold PCT]` (threshold a number or the option's text): prints
    the comparison and returns the exit status; bad input is one line on stderr and 2."""
    try:
        if isinstance(threshold, str):
            threshold = parse_threshold(threshold)
        kind_a, runs_a = loader(dir_a)
        kind_b, runs_b = loader(dir_b)
        if kind_a != kind_b:
            raise DiffError(f"{dir_a} is of kind {kind_a} and {dir_b} of kind {kind_b}: diff "
                            "compares runs of one kind")
        res = compare(runs_a, runs_b, threshold)
    except DiffError as e:
        log(str(e))
        return 2
    for line in lines(res, dir_a, dir_b):
        out(line)
    return res["status"]
