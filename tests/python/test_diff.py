"""Unit tests of `tunbed diff` (scripts/tunbedlib/diff.py): a directory against itself finds
no change; against a copy with one point halved it finds that one (exit 1), doubled it is
faster (exit 0); the rule's two halves (overlapping ranges, a change within the noise floor);
the threshold; too few repeats; the noise floor; and the refusals in one line with exit status
2 (different kinds, no common point, a bad summary.json, a bad threshold), through main() on
results directories written here; and `tunbed diff` itself (cli.py) on the stored results
directories of data/formats/: one against itself, against a copy with one point halved, of two
kinds, with no point in common. Two datasheets per gateway and part (Sheets): throughput,
NDR/PDR by the searches' bounds, the failover's outage, DSCP/ECN's verdicts and the guest tests'
results, each changed alone."""

import contextlib
import copy
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
FORMATS = os.path.join(HERE, "data", "formats")
sys.path.insert(0, SCRIPTS)

from tunbedlib import diff  # noqa: E402

# Three repeats of three points, spread 2-4% as on a quiet machine.
BASE = {"gregw-gre-w2-s1": (4.05e9, 4.00e9, 4.12e9), "gregw-gre-w2-s8": (4.82e9, 4.70e9, 4.90e9),
        "gregw-gre-w2-s64": (3.50e9, 3.41e9, 3.55e9)}


def runs(points=BASE, **scale):
    """Analysed runs as summary.json holds them; scale: {key: factor} for some points."""
    return [{"key": k, "repeat": i + 1, "bits_per_second": v * scale.get(k, 1.0),
             "complete": True}
            for k, vs in points.items() for i, v in enumerate(vs)]


def verdicts(res):
    return {k: p["verdict"] for k, p in res["points"]}


class Compare(unittest.TestCase):
    def test_itself(self):
        res = diff.compare(runs(), runs())
        self.assertEqual(set(verdicts(res).values()), {"same"})
        self.assertEqual(res["status"], 0)
        self.assertEqual(res["floor_a"], res["floor_b"])

    def test_one_point_halved(self):
        b = runs(**{"gregw-gre-w2-s8": 0.5})
        res = diff.compare(runs(), b)
        self.assertEqual(verdicts(res), {"gregw-gre-w2-s1": "same", "gregw-gre-w2-s8": "regression",
                                         "gregw-gre-w2-s64": "same"})
        self.assertEqual(res["status"], 1)
        self.assertAlmostEqual(dict(res["points"])["gregw-gre-w2-s8"]["change_pct"], -50.0)
        self.assertIn("gregw-gre-w2-s8: 4.82 -> 2.41 Gbit/s (-50.0%; A 4.70-4.90, B 2.35-2.45): "
                      "SLOWER beyond the noise and the 5% threshold: a regression",
                      diff.lines(res))
        self.assertEqual(diff.lines(res)[-1], "verdict: 1 regression beyond 5% "
                         "(gregw-gre-w2-s8); 2 unchanged")

    def test_one_point_doubled(self):
        res = diff.compare(runs(), runs(**{"gregw-gre-w2-s1": 2.0}))
        self.assertEqual(verdicts(res)["gregw-gre-w2-s1"], "faster")
        self.assertEqual(res["status"], 0)

    def test_overlapping_ranges_are_noise(self):
        # 6% slower at the median, beyond the floor, but one repeat of B reaches A's range.
        b = runs(**{"gregw-gre-w2-s8": 0.94})
        b[3]["bits_per_second"] = 4.75e9
        self.assertEqual(verdicts(diff.compare(runs(), b))["gregw-gre-w2-s8"], "same")

    def test_a_change_within_the_floor_is_noise(self):
        # Ranges of width 0.4% that do not overlap, but the other points spread 3-4%: the
        # floor is the median of 0.4, 3.0, 4.0 and 4.1%.
        a = runs({**BASE, "p": (1.000e9, 0.998e9, 1.002e9)})
        b = runs({**BASE, "p": (0.990e9, 0.988e9, 0.992e9)})
        res = diff.compare(a, b)
        self.assertEqual(verdicts(res)["p"], "same")
        self.assertIn("(would need 3.5%)", diff.lines(res)[-2])

    def test_threshold(self):
        b = runs(**{"gregw-gre-w2-s8": 0.9})
        self.assertEqual(verdicts(diff.compare(runs(), b))["gregw-gre-w2-s8"], "regression")
        res = diff.compare(runs(), b, threshold=15)
        self.assertEqual(verdicts(res)["gregw-gre-w2-s8"], "slower")
        self.assertEqual(res["status"], 0)

    def test_too_few_repeats(self):
        one = {k: vs[:1] for k, vs in BASE.items()}
        res = diff.compare(runs(one), runs(one, **{"gregw-gre-w2-s8": 0.5}))
        self.assertEqual(set(verdicts(res).values()), {"few"})
        self.assertEqual(res["status"], 0)
        self.assertIsNone(res["floor_a"])
        self.assertIn("too few repeats to tell a change from noise (A 1, B 1)",
                      diff.lines(res)[4])

    def test_one_point_with_one_repeat(self):
        b = [r for r in runs(**{"gregw-gre-w2-s8": 0.5})
             if r["key"] != "gregw-gre-w2-s8" or r["repeat"] == 1]
        res = diff.compare(runs(), b)
        self.assertEqual(verdicts(res)["gregw-gre-w2-s8"], "few")
        self.assertEqual(res["status"], 0)

    def test_noise_floor(self):
        # Relative ranges 3.0%, 4.1%, 4.0%: the median.
        self.assertAlmostEqual(diff.noise_floor(diff.values(runs())),
                               100 * 0.14e9 / 3.50e9)

    def test_only_in_one(self):
        b = [r for r in runs() if r["key"] != "gregw-gre-w2-s64"]
        res = diff.compare(runs(), b)
        self.assertEqual(res["only_a"], ["gregw-gre-w2-s64"])
        self.assertIn("only in A: gregw-gre-w2-s64", diff.lines(res))

    def test_incomplete_runs_and_udp_points_are_left_out(self):
        a = runs() + [{"key": "udp", "repeat": 1, "bits_per_second": None, "complete": True}]
        a[0]["complete"] = False
        self.assertEqual(len(diff.values(a)["gregw-gre-w2-s1"]), 2)
        self.assertNotIn("udp", diff.values(a))

    def test_no_common_point(self):
        with self.assertRaises(diff.DiffError):
            diff.compare(runs(), runs({"other": (1e9, 1e9)}))


class Main(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def results(self, name, rs, meta=None):
        d = os.path.join(self.tmp.name, name)
        os.mkdir(d)
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta or {"format": 3, "scenario": "ras"}, f)
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump({"runs": rs}, f)
        return d

    def main(self, *args, **kw):
        out, err = [], io.StringIO()
        with contextlib.redirect_stderr(err):
            status = diff.main(*args, out=out.append, **kw)
        return status, out, err.getvalue()

    def test_itself_and_halved(self):
        a = self.results("a", runs())
        status, out, err = self.main(a, a)
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(out[-1], "verdict: no regression beyond 5%; 3 unchanged")
        self.assertEqual(out[2], "noise floor (minimum detectable difference): A 4.0%, B 4.0%")
        b = self.results("b", runs(**{"gregw-gre-w2-s64": 0.5}))
        status, out, err = self.main(a, b, "10")
        self.assertEqual(status, 1)
        self.assertIn("a regression", [line for line in out if "s64" in line][0])

    def test_refusals(self):
        a = self.results("a", runs())
        cases = [
            (self.results("intranet", runs(), {"kind": "intranet"}),
             rf"{a} is of kind matrix and .*intranet of kind intranet: diff compares runs of "
             "one kind"),
            (self.results("other", runs({"x": (1e9, 1e9)})),
             "no point in common: the directories measured different things"),
            (self.results("bad", copy.deepcopy(runs()) + [{"key": "k", "bits_per_second": "1"}]),
             r".*/bad/summary.json: run 10: not a run with a key and a throughput"),
            (os.path.join(self.tmp.name, "none"), r".*/none/meta.json: cannot read: No such file"),
        ]
        for b, want in cases:
            status, out, err = self.main(a, b)
            self.assertEqual((status, out), (2, []), b)
            self.assertRegex(err, rf"^tunbed: {want}")
            self.assertEqual(err.count("\n"), 1)
        for bad in ("-1", "x", "101", "nan"):
            status, out, err = self.main(a, a, bad)
            self.assertEqual(status, 2)
            self.assertEqual(err, f"tunbed: bad value '{bad}' for --threshold: a percentage "
                             "from 0 to 100\n")


def bound(rate, upper, limited=False):
    return {"rate_pps": rate, "upper_pps": upper, "at_max": False, "limited": limited,
            "below_min": False}


def sheet(**change):
    """A datasheet's summary.json of gregw (three repeats at 1 and 64 sessions, its DSCP/ECN,
    NDR/PDR at 64 bytes, a failover of two repeats, the guest tests) and route; change: a
    function of it by name, applied."""
    tos = {k: {"verdict": v, "words": f"{v}: ..."} for k, v in
           (("dscp", "yes"), ("encap", "copied"), ("decap", "yes"))}
    g = {"throughput": {"1": {"key": "gregw-gre-w2-s1"}, "64": {"key": "gregw-gre-w2-s64"}},
         "tos": tos, "ndr": {"64": {"ndr": bound(1.0e6, 1.1e6), "pdr": bound(1.2e6, 1.3e6)}},
         "failover": {"kill": {"outage_s": {"median": 0.40, "min": 0.38, "max": 0.42},
                               "repeats": 2}},
         "parts": {"interop": {"status": "run", "tests": {"guest_gre": {"result": "pass"},
                                                           "guest_gre6": None}}},
         "figures": [["version", "gregw 0.1.0"]]}
    r = {"throughput": {"1": {"key": "route-s1"}}, "tos": None,
         "ndr": {"64": {"ndr": bound(2e6, None, True), "pdr": bound(2e6, None, True)}},
         "failover": {}, "parts": {"interop": {"status": "not applicable"}}, "figures": []}
    doc = {"gateways": {"gregw": g, "route": r},
           "runs": runs({"gregw-gre-w2-s1": BASE["gregw-gre-w2-s1"],
                         "gregw-gre-w2-s64": BASE["gregw-gre-w2-s64"],
                         "route-s1": (9e9, 9.1e9, 8.9e9)})}
    for f in change.values():
        f(doc)
    return doc


class Sheets(unittest.TestCase):
    """diff.main on two datasheets' directories written here."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def results(self, name, doc):
        d = os.path.join(self.tmp.name, name)
        os.mkdir(d)
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"kind": "datasheet", "format": 1}, f)
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(doc, f)
        return d

    def main(self, a, b):
        out, err = [], io.StringIO()
        with contextlib.redirect_stderr(err):
            status = diff.main(self.results("a", a), self.results("b", b), out=out.append)
        shutil.rmtree(os.path.join(self.tmp.name, "a"))
        shutil.rmtree(os.path.join(self.tmp.name, "b"))
        return status, out, err.getvalue()

    def changed(self, **change):
        """(status, the lines that are not unchanged, the verdict) of the sheet against itself
        changed."""
        status, out, err = self.main(sheet(), sheet(**change))
        self.assertEqual(err, "")
        return status, [ln for ln in out[3:-1] if not ln.endswith(("the same", "(would need "))
                        and "no change beyond" not in ln and "bound by the generator" not in ln
                        ], out[-1]

    def test_itself(self):
        status, out, err = self.main(sheet(), sheet())
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(out[2], "noise floor of the throughput (minimum detectable "
                                 "difference): A 3.0%, B 3.0%")
        self.assertIn("gregw, PDR, 64-byte frames: 1.200 -> 1.200 Mpps (+0.0%; passed-failed: "
                      "A 1.200-1.300, B 1.200-1.300): no change beyond the searches' bounds", out)
        self.assertIn("route, NDR, 64-byte frames: 2.000 -> 2.000 Mpps (+0.0%; passed-failed: "
                      "A 2.000, none failed above, B 2.000, none failed above): bound by the "
                      "generator: no change of the gateway's to tell", out)
        self.assertEqual(out[-1], "verdict: no regression beyond 5% nor of behaviour; 11 "
                                  "unchanged, 2 bound by the generator")

    def test_imix(self):
        # IMIX frames are a size of their own, after the numbers, said in words.
        def imix(pdr):
            return lambda d: d["gateways"]["gregw"]["ndr"].update(
                imix={"ndr": bound(0.5e6, 0.6e6), "pdr": bound(pdr, pdr + 1e5)})
        status, out, err = self.main(sheet(x=imix(0.7e6)), sheet(x=imix(0.5e6)))
        self.assertEqual((status, err), (1, ""))
        gregw = [ln for ln in out if ln.startswith(("gregw, NDR", "gregw, PDR"))]
        self.assertEqual([ln.split(":")[0] for ln in gregw],
                         ["gregw, NDR, 64-byte frames", "gregw, PDR, 64-byte frames",
                          "gregw, NDR, IMIX frames", "gregw, PDR, IMIX frames"])
        self.assertTrue(gregw[-1].endswith("a regression"), gregw)

    def test_each_part_changed_alone(self):
        def g(d):
            return d["gateways"]["gregw"]
        cases = {
            "throughput": (lambda d: d.update(runs=[dict(r, bits_per_second=r[
                "bits_per_second"] / 2) if r["key"] == "gregw-gre-w2-s64" else r
                for r in d["runs"]]), 1, "gregw, throughput, 64 sessions: 3.50 -> 1.75 Gbit/s"),
            "ndr": (lambda d: g(d)["ndr"]["64"].update(ndr=bound(0.8e6, 0.9e6)), 1,
                    "gregw, NDR, 64-byte frames: 1.000 -> 0.800 Mpps (-20.0%; passed-failed: "
                    "A 1.000-1.100, B 0.800-0.900): SLOWER beyond the searches' bounds and the "
                    "5% threshold: a regression"),
            "ndr within": (lambda d: g(d)["ndr"]["64"].update(ndr=bound(0.95e6, 1.05e6)), 0,
                           None),
            "faster pdr": (lambda d: g(d)["ndr"]["64"].update(pdr=bound(1.4e6, 1.5e6)), 0,
                           "gregw, PDR, 64-byte frames: 1.200 -> 1.400 Mpps (+16.7%; "
                           "passed-failed: A 1.200-1.300, B 1.400-1.500): FASTER beyond the "
                           "searches' bounds"),
            "outage": (lambda d: g(d)["failover"]["kill"].update(
                outage_s={"median": 0.9, "min": 0.8, "max": 1.0}), 1,
                "gregw, failover kill, outage: 0.400 -> 0.900 s (+125.0%; A 0.380-0.420, B "
                "0.800-1.000): LONGER beyond the repeats' ranges and the 5% threshold: a "
                "regression"),
            "decap": (lambda d: g(d)["tos"]["decap"].update(verdict="no"), 1,
                      "gregw, DSCP/ECN decap: yes -> no: CHANGED: a regression"),
            "method": (lambda d: g(d)["tos"].update(method={"name": "capture",
                                                            "words": "capture: ..."}), 0,
                       "gregw, DSCP/ECN measured by: wire -> capture: CHANGED, the verdicts "
                       "below are of two methods"),
            # Marks and drops under load: a change said, never a regression; a datasheet
            # written before them has none (not measured), and then no line when neither has.
            "load": (lambda d: g(d)["tos"].update(load={
                "verdict": "drops", "words": "drops: ...", "ce_echoed": 0,
                "retransmits_per_gb": 1234.4}), 0,
                "gregw, DSCP/ECN under load: not measured -> drops (0 segments under a CE "
                "echo, 1,234 retransmits/GB): CHANGED"),
            "interop": (lambda d: g(d)["parts"]["interop"]["tests"].update(
                guest_gre={"result": "fail"}, guest_gre6={"result": "pass"}), 1,
                "gregw, interoperability guest_gre: pass -> fail: CHANGED: a regression"),
        }
        for name, (f, want_status, want) in cases.items():
            with self.subTest(name=name):
                status, lines, verdict = self.changed(x=f)
                self.assertEqual(status, want_status, lines)
                if want is None:
                    self.assertEqual(lines, [])
                    continue
                self.assertTrue(lines[0].startswith(want), lines)
                if name == "interop":
                    self.assertEqual(lines[1], "gregw, interoperability guest_gre6: not run -> "
                                               "pass: CHANGED")
                self.assertTrue(verdict.startswith("verdict: 1 regression beyond 5% or of "
                                                   "behaviour" if want_status else
                                                   "verdict: no regression"), verdict)

    def test_marks_and_drops_under_load(self):
        def with_load(verdict, ce, per_gb):
            return lambda d: d["gateways"]["gregw"]["tos"].update(load={
                "verdict": verdict, "words": f"{verdict}: ...", "ce_echoed": ce,
                "retransmits_per_gb": per_gb, "gateway": {"gwb": {"aqm_marked": 9}}})
        status, out, err = self.main(sheet(x=with_load("marks", 1234, 12.0)),
                                     sheet(x=with_load("drops", 0, 850.0)))
        self.assertEqual((status, err), (0, ""))
        self.assertIn("gregw, DSCP/ECN under load: marks (1,234 segments under a CE echo, 12 "
                      "retransmits/GB) -> drops (0 segments under a CE echo, 850 "
                      "retransmits/GB): CHANGED", out)
        status, out, err = self.main(sheet(x=with_load("marks", 1234, 12.0)),
                                     sheet(x=with_load("marks", 999, 20.0)))
        self.assertIn("gregw, DSCP/ECN under load: marks (1,234 segments under a CE echo, 12 "
                      "retransmits/GB) -> marks (999 segments under a CE echo, 20 "
                      "retransmits/GB): the same", out)
        self.assertEqual(out[-1], "verdict: no regression beyond 5% nor of behaviour; 12 "
                                  "unchanged, 2 bound by the generator")
        # Not measured on both sides (two datasheets of before, or of the least plan): no line.
        status, out, err = self.main(sheet(), sheet(x=with_load(None, None, None)))
        self.assertEqual((status, err), (0, ""))
        self.assertFalse([ln for ln in out if "under load" in ln], out)

    def test_gateways_of_one_side_and_refusals(self):
        b = sheet(drop=lambda d: d["gateways"].pop("route"))
        status, out, err = self.main(sheet(), b)
        self.assertEqual((status, out[-2]), (0, "only in A: route"))
        other = sheet(x=lambda d: d.update(gateways={"vxlan": d["gateways"]["route"]}))
        for b, want in ((other, "no gateway in common: the datasheets measured different "
                                "gateways"),
                        (sheet(x=lambda d: d["gateways"]["gregw"]["ndr"]["64"]["ndr"].update(
                            rate_pps="1")), r".*/b/summary.json: gateways.gregw.ndr.64.ndr."
                                            r"rate_pps: expected a number of at least 0")):
            status, out, err = self.main(sheet(), b)
            self.assertEqual((status, out), (2, []))
            self.assertRegex(err, f"^tunbed: {want}\n$")


class Command(unittest.TestCase):
    """`tunbed diff` as a user runs it (python3 -m tunbedlib diff: no root needed), on stored
    results directories: intranet-3 has two repeats of two TCP points."""

    HALVED = "c1-1.5g-tcp-s4"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def tunbed(self, *args):
        p = subprocess.run([sys.executable, "-B", "-m", "tunbedlib", "diff", *args],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=SCRIPTS))
        return p.returncode, p.stdout.splitlines(), p.stderr

    def copy(self, name, change):
        """A copy of formats/NAME whose summary.json's runs change(run) changed."""
        d = os.path.join(self.tmp.name, name)
        shutil.copytree(os.path.join(FORMATS, name), d)
        path = os.path.join(d, "summary.json")
        with open(path) as f:
            doc = json.load(f)
        for r in doc["runs"]:
            change(r)
        with open(path, "w") as f:
            json.dump(doc, f)
        return d

    def test_itself(self):
        a = os.path.join(FORMATS, "intranet-3")
        status, out, err = self.tunbed(a, a)
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(out[-1], "verdict: no regression beyond 5%; 2 unchanged, 2 with too "
                                  "few repeats")

    def test_one_point_halved(self):
        def halve(r):
            if r["key"] == self.HALVED:
                r["bits_per_second"] /= 2
        a = os.path.join(FORMATS, "intranet-3")
        status, out, err = self.tunbed(a, self.copy("intranet-3", halve), "--threshold", "10")
        self.assertEqual((status, err), (1, ""))
        changed = [line for line in out if "no change" not in line and "too few" not in line
                   and line.startswith("c")]
        self.assertEqual(len(changed), 1, out)
        self.assertTrue(changed[0].startswith(f"{self.HALVED}: 1.23 -> 0.62 Gbit/s (-50.0%"),
                        changed[0])
        self.assertIn("a regression", changed[0])
        self.assertEqual(out[-1], f"verdict: 1 regression beyond 10% ({self.HALVED}); 1 "
                                  "unchanged, 2 with too few repeats")

    def test_datasheets(self):
        """Two datasheets (formats/datasheet-1 against itself; two copies whose gregw searches
        are not bound by the generator, the second's NDR at 64 bytes halved): a line per
        gateway and part, exit 1 for the halved NDR."""
        a = os.path.join(FORMATS, "datasheet-1")
        status, out, err = self.tunbed(a, a)
        self.assertEqual((status, err), (0, ""))
        self.assertIn("gregw, failover kill, outage: 0.372 -> 0.372 s (+0.0%; A 0.372-0.372, B "
                      "0.372-0.372): too few repeats to tell a change from noise (A 1, B 1)", out)
        def copy_of(name, halve):
            """datasheet-1 with gregw's searches not bound by the generator, NDR halved."""
            d = os.path.join(self.tmp.name, name)
            shutil.copytree(a, d)
            path = os.path.join(d, "summary.json")
            with open(path) as f:
                doc = json.load(f)
            for k in ("ndr", "pdr"):
                b = doc["gateways"]["gregw"]["ndr"]["64"][k]
                b.update(limited=False, at_max=False)
                if k == "ndr" and halve:
                    b.update(rate_pps=b["rate_pps"] / 2, upper_pps=b["rate_pps"] / 2 + 1)
            with open(path, "w") as f:
                json.dump(doc, f)
            return d
        status, out, err = self.tunbed(copy_of("a", False), copy_of("b", True))
        self.assertEqual((status, err), (1, ""))
        self.assertRegex([ln for ln in out if ln.startswith("gregw, NDR")][0],
                         r"^gregw, NDR, 64-byte frames: 0.086 -> 0.043 Mpps \(-50.0%; .*: a "
                         r"regression$")

    def test_refusals(self):
        a = os.path.join(FORMATS, "intranet-3")
        other = self.copy("intranet-3", lambda r: r.update(key="x" + r["key"]))
        for b, want in ((os.path.join(FORMATS, "matrix-3"), "is of kind intranet and "),
                        (other, "no point in common"),
                        (self.tmp.name, "meta.json: cannot read")):
            status, out, err = self.tunbed(a, b)
            self.assertEqual((status, out), (2, []), b)
            self.assertIn(want, err)
            self.assertEqual(err.count("\n"), 1, err)
        status, out, err = self.tunbed(a, a, "--threshold", "200")
        self.assertEqual((status, err), (2, "tunbed: bad value '200' for --threshold: a "
                                            "percentage from 0 to 100\n"))


if __name__ == "__main__":
    unittest.main()
