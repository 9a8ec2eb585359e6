"""Every format of every scenario kind, stored, rebuilt: tests/python/data/formats/ holds a results
directory of each format each kind has written (real runs; format 1 of the matrix and format 3 of
intranet are the records of data/ they name), with the summary.json the runner of its day
made of it. `tunbed report` reads each (kinds.for_dir picks its kind, records.load upgrades it
to today's format) and writes its report in every renderer, and its summary.json is the stored
one, but for meta.json's format (a rebuilt report says today's) and kind (which the upgrade of a
failover run adds). failover-1 is a run of the failover that `tunbed report` refused; its
summary.json is the one the run wrote itself. A record of a format newer than its kind's is
refused in one line."""

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
FORMATS = os.path.join(HERE, "data", "formats")
sys.path.insert(0, SCRIPTS)

from tunbedlib import kinds, plots, records, render  # noqa: E402

# Stored records of data/ that a directory of formats/ uses (its name: {file: (data file, a
# change)}).
BORROWED = {
    "matrix-1": {"runs/gregw-gre-w2-mtu0-push-s1-r1.json": ("run-gregw-s1.json", {})},
    "matrix-2": {"runs/gregw-gre-w2-mtu0-push-s8-r1.json": ("run-gregw-s8.json",
                                                            {"format": 2})},
}
# Which kind and format each directory is of.
DIRS = {"matrix-1": ("matrix", 1), "matrix-2": ("matrix", 2), "matrix-3": ("matrix", 3),
        "matrix-3-kind": ("matrix", 3), "intranet-3": ("intranet", 3),
        "intranet-4": ("intranet", 4), "ndr-1": ("ndr", 1), "ndr-2": ("ndr", 2),
        "ndr-3": ("ndr", 3),
        "failover-1": ("failover", 1), "failover-2": ("failover", 2), "smoke-1": ("smoke", 1),
        "datasheet-1": ("datasheet", 1), "tunnels-1": ("tunnels", 1),
        "tunnels-2": ("tunnels", 2), "tunnels-3": ("tunnels", 3)}


def copy_of(name, top):
    """A copy of formats/NAME in top, its records complete, without its summary.json."""
    d = os.path.join(top, name)
    shutil.copytree(os.path.join(FORMATS, name), d)
    os.unlink(os.path.join(d, "summary.json"))
    borrowed = dict(BORROWED.get(name, {}))
    if name == "intranet-3":
        with open(os.path.join(HERE, "data", "intranet-runs.json")) as f:
            for r in json.load(f)["records"]:
                borrowed[f"runs/{r['point']['key']}-r{r['repeat']}.json"] = r
    for path, what in borrowed.items():
        if isinstance(what, tuple):
            with open(os.path.join(HERE, "data", what[0])) as f:
                what = dict(json.load(f), **what[1])
        os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
        with open(os.path.join(d, path), "w") as f:
            json.dump(what, f)
    return d


# What the matrix's analysis has added since those runs' reports: the bottleneck verdict of
# each run and point (kinds/matrix_verdict.py; test_verdict's Report checks them).
ADDED = {"runs": ("verdict", "verdict_reason", "verdict_hosts", "ceiling_bps", "rate_cap_bps",
                  "budgeted_softirq", "foreign", "foreign_flagged", "foreign_words"),
         "summary": ("verdict", "verdict_reason", "verdicts", "spread_pct", "spread_flagged",
                     "verdict_hosts"),
         "top": ("noise_floor_pct", "baselines"),
         "searches": ("foreign_at_pdr", "foreign_flagged"),
         # The datasheet's: each throughput point's generator budget (--client-cpu), the
         # DSCP/ECN part (tos), and the page's rows of them and of the IMIX.
         "datasheet_throughput": ("generator_budget",),
         "datasheet_gateway": ("tos",),
         "datasheet_figures": ("generator budget", "DSCP carried (outer)",
                               "ECN at encapsulation (inner -> outer)",
                               "CE at decapsulation (outer CE -> inner)",
                               "marks / drops under load (ECN, CUBIC)",
                               "DSCP / ECN measured by",
                               "NDR / PDR, IMIX frames"),
         # tunnels' since format 3 (several gateways): meta.json's list of them (format 2's
         # one `gateway` upgraded to it), each point's and run's gateway and the kernel's
         # memory of a kernel gateway, and how far each gateway went.
         "tunnels_meta": ("gateways",),
         "tunnels_point": ("gateway", "kernel_gwa_kib", "kernel_gwb_kib"),
         "tunnels_top": ("how_far",)}


def comparable(summary):
    """A summary.json without what a rebuilt report says anew of its meta.json, and without
    what the analysis has added since (ADDED)."""
    s = copy.deepcopy(summary)
    matrix = s["meta"].get("kind", "matrix") == "matrix" and "points" in s
    datasheet = s["meta"].get("kind") == "datasheet"
    tunnels = s["meta"].get("kind") == "tunnels"
    for k in ("format", "kind"):
        s["meta"].pop(k, None)
    if matrix:
        for k in ADDED["top"]:
            s.pop(k, None)
        for r in s.get("runs") or []:
            for k in ADDED["runs"]:
                r.pop(k, None)
        for p in (s.get("summary") or {}).values():
            for k in ADDED["summary"]:
                p.pop(k, None)
    for g in s["gateways"].values() if datasheet else ():
        for x in g["throughput"].values():
            for k in ADDED["datasheet_throughput"]:
                x.pop(k, None)
        g["figures"] = [f for f in g["figures"] if f[0] not in ADDED["datasheet_figures"]]
        for k in ADDED["datasheet_gateway"]:
            g.pop(k, None)
    if tunnels:
        for k in ADDED["tunnels_meta"]:
            s["meta"].pop(k, None)
        s["meta"].pop("gateway", None)  # format 2's, now the list's
        for k in ADDED["tunnels_top"]:
            s.pop(k, None)
        for p in [*(s.get("summary") or {}).values(), *(s.get("runs") or [])]:
            for k in ADDED["tunnels_point"]:
                p.pop(k, None)
    if s["meta"].get("kind") == "ndr" or "searches" in s:
        for x in s.get("searches") or []:
            for k in ADDED["searches"]:
                x.pop(k, None)
    return s


def cheap_save(fig, outdir, name):
    """plots.save without drawing."""
    from tunbedlib.plots import plt
    plt.close(fig)
    return "<svg/>"


class Formats(unittest.TestCase):
    maxDiff = None
    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="tunbed-formats-")
        self.addCleanup(shutil.rmtree, self.top, ignore_errors=True)

    def test_every_format_of_every_kind_is_stored(self):
        self.assertEqual(sorted(os.listdir(FORMATS)), sorted(DIRS))
        for name, kind in kinds.KINDS.items():
            self.assertEqual(sorted({f for k, f in DIRS.values() if k == name}),
                             list(range(kind.OLDEST, kind.FORMAT + 1)), name)

    def test_rebuilt(self):
        for name, (kind_name, fmt) in DIRS.items():
            with self.subTest(name=name):
                d = copy_of(name, self.top)
                kind = kinds.for_dir(d)
                self.assertEqual(kind.name, kind_name)
                for path in records.record_paths(d, kind.RECORD_DIR):
                    doc = records.read_object(path)
                    self.assertEqual(doc.get("format", kind.UNNUMBERED), fmt, path)
                meta, recs = records.load(kind, d)
                self.assertEqual({r["format"] for r in recs} | {meta["format"]}, {kind.FORMAT})
                with mock.patch.object(plots, "save", cheap_save):
                    render.write_all(d, kind.report(meta, recs, meta.get("complete", False)))
                for f in ("report.md", "report.html", "summary.csv"):
                    self.assertTrue(os.path.getsize(os.path.join(d, f)), f)
                with open(os.path.join(d, "summary.json")) as f:
                    got = json.load(f)
                with open(os.path.join(FORMATS, name, "summary.json")) as f:
                    want = json.load(f)
                self.assertEqual(comparable(got), comparable(want))

    def test_tunbed_report_of_a_failover_run_of_format_1(self):
        """It was refused (`not a run record`); now its report is the one the run wrote, and
        report.html with its plots inline."""
        d = copy_of("failover-1", self.top)
        p = subprocess.run([sys.executable, "-B", "-m", "tunbedlib", "report", d],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=SCRIPTS))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("kill -9 of gwb1's gregw: 0.422 s outage, "),
                        p.stdout)
        self.assertEqual(p.stdout.splitlines()[-1], f"report: {d}/report.html")
        with open(os.path.join(d, "report.html")) as f:
            page = f.read()
        self.assertEqual(page.count("<svg"), 2)
        self.assertIn('id="plot-kill-cpu"', page)

    def test_the_kind_of_a_directory_before_kind(self):
        """meta.json without kind: a failover run's has its settings; a scenario file named
        failover.ini makes a matrix run of scenario failover, which stays the matrix's."""
        d = copy_of("matrix-3", self.top)
        path = os.path.join(d, "meta.json")
        records.write_object(path, dict(records.read_object(path), scenario="failover"))
        self.assertEqual(kinds.for_dir(d).name, "matrix")
        self.assertEqual(kinds.for_dir(copy_of("failover-1", self.top)).name, "failover")
        d = copy_of("ndr-1", self.top)
        os.unlink(os.path.join(d, "meta.json"))
        self.assertEqual(kinds.for_dir(d).name, "ndr")

    def test_a_newer_format_is_refused(self):
        for name in ("matrix-3-kind", "intranet-4", "ndr-2", "failover-2", "smoke-1",
                     "datasheet-1"):
            with self.subTest(name=name):
                d = copy_of(name, self.top)
                kind = kinds.for_dir(d)
                path = records.record_paths(d, kind.RECORD_DIR)[0]
                doc = dict(records.read_object(path), format=kind.FORMAT + 1)
                records.write_object(path, doc)
                with self.assertRaises(records.FormatError) as e:
                    records.load(kind, d)
                self.assertEqual(str(e.exception),
                                 f"{path}: {kind.WHAT} written by a newer tunbed (format "
                                 f"{kind.FORMAT + 1}); this one reads {kind.OLDEST}-"
                                 f"{kind.FORMAT}")

    def test_a_record_of_another_kind_is_refused(self):
        d = copy_of("smoke-1", self.top)
        path = os.path.join(d, "runs", "route-s1-r1.json")
        records.write_object(path, dict(records.read_object(path), kind="matrix"))
        with self.assertRaises(records.FormatError) as e:
            records.load(kinds.KINDS["smoke"], d)
        self.assertEqual(str(e.exception), f"{path}: kind: expected smoke")


if __name__ == "__main__":
    unittest.main()
