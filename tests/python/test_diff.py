"""Unit tests of `tunbed diff` (scripts/tunbedlib/diff.py): a directory against itself finds
no change; against a copy with one point halved it finds that one (exit 1), doubled it is
faster (exit 0); the rule's two halves (overlapping ranges, a change within the noise floor);
the threshold; too few repeats; the noise floor; and the refusals in one line with exit status
2 (different kinds, no common point, a bad summary.json, a bad threshold), through main() on
results directories written here; and `tunbed diff` itself (cli.py) on the stored results
directories of data/formats/: one against itself, against a copy with one point halved, of two
kinds, with no point in common."""

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
