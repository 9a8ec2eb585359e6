"""The runner's trust boundaries of issue 28 (docs/security.md, "Result directories" and
"Drivers"): outputs never written through a link planted in a results directory; a record's
point key never a path of its own, two points of one key refused; text from records never
read as matplotlib's math text; scenario and topology files regular and bounded, a matrix
bounded; a contract driver's output bounded, a hung call killed with its children, its PIDs
checked; `tunbed report` on malformed records, `ndr --ceiling-from` on a malformed directory
and bad command lines: one line and exit status 2; `tunbed report` of someone else's results:
one line. Each test failed on the runner before the fixes (d18b644)."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
sys.path.insert(0, HERE)

from tunbedlib import limits, records, render  # noqa: E402
from tunbedlib.kinds import intranet_plan as intranet, matrix_report as report  # noqa: E402
from tunbedlib.kinds import ndr_plan as ndr  # noqa: E402
from tunbedlib.kinds.intranet import KIND as INTRANET  # noqa: E402
from tunbedlib.kinds.matrix import KIND as MATRIX  # noqa: E402
from tunbedlib.kinds.ndr import KIND as NDR  # noqa: E402
from tunbedlib.drivers import contract  # noqa: E402
from tunbedlib import scenario  # noqa: E402
from tunbedlib import bed as beds  # noqa: E402
from tunbedlib import hosts as hostlib  # noqa: E402
from tunbedlib.common import Failure  # noqa: E402

import test_ndr  # noqa: E402  (its recorded-like NDR searches)

ENV = dict(os.environ, PYTHONPATH=SCRIPTS)


def record(name):
    with open(os.path.join(HERE, "data", name)) as f:
        return json.load(f)


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def tunbed_report(d):
    return subprocess.run([sys.executable, "-B", "-m", "tunbedlib", "report", d],
                          capture_output=True, text=True, env=ENV, timeout=120)


def content(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def tree(d):
    """Every path under d with what it is (a link's target), for comparing before and after."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            out[os.path.relpath(p, d)] = (os.readlink(p) if os.path.islink(p) else
                                          content(p) if os.path.isfile(p) else "dir")
    return out


def run_dir(d, recs=None, meta=None):
    """A results directory of the two recorded runs (or recs), as `tunbed run` leaves it."""
    recs = recs or [record("run-gregw-s1.json"), record("run-gregw-s8.json")]
    for i, r in enumerate(recs):
        write_json(os.path.join(d, "runs", f"run{i}-r{r['repeat']}.json"), r)
    write_json(os.path.join(d, "meta.json"), {"format": 3, "scenario": "ras", "title": "t",
                                              "complete": True} if meta is None else meta)
    return d


class Outputs(unittest.TestCase):
    """Defect 4: `tunbed report DIR` wrote through links planted in DIR."""

    LINKED = ("report.html", "report.md", "summary.json", "summary.csv", "plots/throughput.png",
              "plots/throughput.svg", "plots/cost.svg")

    def setUp(self):
        self.top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.top, ignore_errors=True)
        self.victim = os.path.join(self.top, "victim")
        os.makedirs(self.victim)

    def plant(self, d, names):
        for n in names:
            target = os.path.join(self.victim, n.replace("/", "_"))
            with open(target, "w") as f:
                f.write("victim\n")
            os.makedirs(os.path.dirname(os.path.join(d, n)), exist_ok=True)
            os.symlink(target, os.path.join(d, n))

    def check(self, d, names, before):
        self.assertEqual(tree(self.victim), before, "a file outside DIR was written")
        for n in names:
            p = os.path.join(d, n)
            self.assertTrue(stat.S_ISREG(os.lstat(p).st_mode), f"{n} is still a link")
            self.assertNotEqual(content(p), b"victim\n")
        self.assertEqual([n for n in os.listdir(d) if n.endswith(".tmp")], [])

    def test_gateway_report(self):
        d = run_dir(os.path.join(self.top, "r"))
        self.plant(d, self.LINKED)
        before = tree(self.victim)
        meta, recs = records.load(MATRIX, d)
        render.write_all(d, MATRIX.report(meta, recs, True))
        self.check(d, self.LINKED, before)

    def test_records_and_meta(self):
        d = os.path.join(self.top, "r")
        self.plant(d, ["runs/a-r1.json", "meta.json"])
        before = tree(self.victim)
        records.write_object(os.path.join(d, "runs", "a-r1.json"), {"a": 1})
        records.write_object(os.path.join(d, "meta.json"), {"b": 2})
        self.check(d, ["runs/a-r1.json", "meta.json"], before)

    def test_ndr_report(self):
        d = os.path.join(self.top, "n")
        recs = [test_ndr.fake_record("direct", "direct", 64, 900000, 1, 0),
                test_ndr.fake_record("gregw gre 2w", "gregw", 64, 200000, 2)]
        for r in recs:
            write_json(os.path.join(d, "searches", f"{r['point']['key']}-f64.json"), r)
        names = ["report.html", "report.md", "summary.json", "summary.csv", "trials.csv",
                 "plots/rates.png", "plots/loss-f64.svg"]
        self.plant(d, names)
        before = tree(self.victim)
        render.write_all(d, NDR.report({"format": 2, "kind": "ndr", "scenario": "ndr"},
                                       records.load(NDR, d)[1], True))
        self.check(d, names, before)

    def test_intranet_report(self):
        d = os.path.join(self.top, "i")
        data = record("intranet-runs.json")
        names = ["report.html", "report.md", "summary.json", "summary.csv",
                 "plots/throughput.png"]
        for i, r in enumerate(data["records"]):
            write_json(os.path.join(d, "runs", f"r{i}.json"), r)
        self.plant(d, names)
        before = tree(self.victim)
        render.write_all(d, INTRANET.report(data["meta"], records.load(INTRANET, d)[1], True))
        self.check(d, names, before)

    def test_a_new_results_directory(self):
        """A run's directory is made anew: a link planted under its (predictable) name is
        refused, not written into."""
        from tunbedlib import files
        d = os.path.join(self.top, "results", "20261203T000000Z-ras")
        files.new_dir(d, "runs")
        self.assertTrue(os.path.isdir(os.path.join(d, "runs")))
        planted = os.path.join(self.top, "results", "20261203T000001Z-ras")
        os.symlink(self.victim, planted)
        with self.assertRaises(Failure) as e:
            files.new_dir(planted, "runs")
        self.assertEqual(str(e.exception), f"{planted}: cannot make the results directory: "
                                           "File exists")
        self.assertEqual(os.listdir(self.victim), [])

    def test_plots_a_link(self):
        """plots/ itself a link to a directory elsewhere: refused in one line, nothing written
        there."""
        d = run_dir(os.path.join(self.top, "r"))
        os.symlink(self.victim, os.path.join(d, "plots"))
        p = tunbed_report(d)
        self.assertEqual(os.listdir(self.victim), [])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"^tunbed: .*/plots: not a directory of its own \(a link\?\)"
                                   r": the runner writes only into one\n$")


class Keys(unittest.TestCase):
    """Defects 4 and 11: a record's key became a file name unchecked; two points of one key
    overwrote each other's records and were merged in the report."""

    def test_a_key_is_never_a_path(self):
        for key in ("../../../escaped", "a/b", "", ".hidden", "x" * 201, "a\nb", 7):
            with self.subTest(key=key), tempfile.TemporaryDirectory() as top:
                rec = record("run-gregw-s1.json")
                rec["point"]["key"] = key
                d = run_dir(os.path.join(top, "a", "b", "c", "r"), [rec])
                p = tunbed_report(d)
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertRegex(p.stderr, rf"^tunbed: {d}/runs/.*\.json: point\.key: ")
                self.assertEqual(sorted(os.listdir(os.path.join(top, "a", "b", "c"))), ["r"])
                self.assertEqual(sorted(os.listdir(d)), ["meta.json", "runs"])

    def test_two_points_of_one_key_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = record("run-gregw-s1.json"), record("run-gregw-s8.json")
            b["point"]["key"] = a["point"]["key"]
            write_json(os.path.join(d, "runs", "a-r1.json"), a)
            write_json(os.path.join(d, "runs", "b-r1.json"), b)
            p = tunbed_report(d)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr, f"tunbed: {d}/runs/b-r1.json: point "
                             f"{a['point']['key']} is also {d}/runs/a-r1.json's, another point "
                             "(two points of one key)\n")
            b = dict(a)
            write_json(os.path.join(d, "runs", "b-r1.json"), b)
            p = tunbed_report(d)
            self.assertEqual(p.stderr, f"tunbed: {d}/runs/b-r1.json: repeat 1 of point "
                             f"{a['point']['key']} is also {d}/runs/a-r1.json\n")

    def test_a_matrix_of_two_points_of_one_key(self):
        for text, want in (
                ("sessions = 1, 1", "f:2: 1 given twice in sessions"),
                ("modes = gre, gre", "f:2: gre given twice in modes"),
                ("gateways = route route", "f:2: route given twice in gateways"),
                ("pattern = push, pull, push", "f:2: push given twice in pattern"),
                ("gateways = cmd:a/b.sh, cmd:a_b.sh",
                 "f:2: gateways cmd:a/b.sh and cmd:a_b.sh have one file name (cmd_a_b.sh): "
                 "rename one")):
            with self.subTest(text=text), tempfile.TemporaryDirectory() as d:
                os.makedirs(os.path.join(d, "a"))
                for name in ("a/b.sh", "a_b.sh"):
                    with open(os.path.join(d, name), "w") as f:
                        f.write("#!/bin/sh\n")
                    os.chmod(os.path.join(d, name), 0o755)
                with self.assertRaises(scenario.ScenarioError) as e:
                    sc = scenario.parse(f"[scenario]\n{text}\n", os.path.join(d, "f"))
                    scenario.points(sc)
                self.assertEqual(str(e.exception), os.path.join(d, want))

    def test_intranet_points_of_one_key(self):
        """Two UDP rates that are one for a profile are one point, measured once (as stream
        counts given twice are); a profile given twice is refused."""
        sc = intranet.parse("[intranet]\nprofiles = c1-1.5g\nudp_rate = 50%, 750mbit, 1g\n",
                            "f")
        p, = intranet.resolve(sc, cpus=[0, 1], available_cc=["cubic"])
        runs = intranet.runs_of(sc, p)
        self.assertEqual([r for r in runs if r[0] == "udp"],
                         [("udp", 0, 750 * 10**6), ("udp", 0, 10**9)])
        keys = [intranet.point_of(p, *r)["key"] for r in runs]
        self.assertEqual(len(keys), len(set(keys)))
        sc = intranet.parse("[intranet]\nprofiles = c1-1.5g, c2-2g, c1-1.5g\n", "f")
        with self.assertRaises(intranet.IntranetError) as e:
            intranet.resolve(sc, cpus=[0, 1], available_cc=["cubic"])
        self.assertEqual(str(e.exception), "profile 'c1-1.5g' given twice")


class MathText(unittest.TestCase):
    """Defect 5: `$...$` in a gateway's name, a host's or an intranet label was matplotlib's
    math text: a bad one lost the report, a good one was drawn as math."""

    DOLLAR = "DejaVuSans-24"  # the glyph of '$' in matplotlib's SVG

    def test_gateway_and_host_names(self):
        a, b = record("run-gregw-s1.json"), record("run-gregw-s8.json")
        for r, name in ((a, "cmd:/x/$\\notacommand{$.sh"), (b, "cmd:/x/$x^2$.sh")):
            r["point"]["config"] = r["point"]["gateway"] = name
        recs = [records.read_record(MATRIX, r) for r in (a, b)]
        for r in recs:
            twin = dict(r["hosts"][0], name="$\\bad{$")
            r["hosts"].append(twin)
        with tempfile.TemporaryDirectory() as d:
            lines = render.write_all(d, MATRIX.report({"scenario": "x"}, recs, True))
            svg = content(os.path.join(d, "plots", "throughput.svg"), "r")
        self.assertEqual(len(lines), 2)
        self.assertIn(self.DOLLAR, svg, "a name's $ was not drawn as itself")

    def test_markdown_cells(self):
        """A '|' or a line break in a name ended report.md's table cell, or its row."""
        recs = [records.read_record(MATRIX, record("run-gregw-s1.json"))]
        recs[0]["point"]["config"] = "cmd:/x/a|b\nc.sh"
        md = render.markdown(report.document(report.analyse(recs, {}), plots=[]))
        rows = [ln for ln in md.splitlines() if ln.startswith("| cmd:")]
        self.assertEqual(len(rows), 1, md)
        self.assertTrue(rows[0].startswith("| cmd:/x/a\\|b c.sh | 1 | "), rows[0])
        self.assertEqual(rows[0].count(" | "), len(report.POINT_HEADER) - 1)

    def test_intranet_label(self):
        data = record("intranet-runs.json")
        for p in data["meta"]["profiles"]:
            p["title"] = "$\\notacommand{$"
        with tempfile.TemporaryDirectory() as d:
            render.write_all(d, INTRANET.report(data["meta"], data["records"], True))
            self.assertTrue(os.path.exists(os.path.join(d, "report.html")))


class Files(unittest.TestCase):
    """Defects 12 and 16: what the runner reads itself is a regular file of bounded size, a
    matrix is bounded, and Unicode digits are not numbers."""

    def test_scenario_files(self):
        with tempfile.TemporaryDirectory() as d:
            big = os.path.join(d, "big.scenario")
            with open(big, "w") as f:
                f.write("[scenario]\n" + ";" * limits.SCENARIO_BYTES)
            fifo = os.path.join(d, "fifo.scenario")
            os.mkfifo(fifo)
            for path, want in (
                    ("/dev/zero", "/dev/zero: not a regular file (a scenario file must be one)"),
                    (d, f"{d}: not a regular file (a scenario file must be one)"),
                    (fifo, f"{fifo}: not a regular file (a scenario file must be one)"),
                    (big, f"{big}: {limits.SCENARIO_BYTES + 11} bytes: a scenario file has at "
                          f"most {limits.SCENARIO_BYTES}")):
                for load, error in ((scenario.load, scenario.ScenarioError),
                                    (intranet.load, intranet.IntranetError)):
                    with self.subTest(path=path, load=load.__module__):
                        # In a child: a FIFO would block a read forever.
                        code = (f"from {load.__module__} import load\n"
                                f"try:\n    load({path!r})\n"
                                f"except Exception as e:\n    print(type(e).__name__, e)\n")
                        p = subprocess.run([sys.executable, "-B", "-c", code], env=ENV,
                                           capture_output=True, text=True, timeout=20)
                        self.assertEqual(p.stdout, f"{error.__name__} {want}\n", p.stderr)

    def test_topology_files(self):
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "t.topo")
            os.mkfifo(fifo)
            for what in ("ndr.links", "failover.topology_path", "scenario.topology_file"):
                for path in ("/dev/zero", fifo):
                    with self.subTest(what=what, path=path):
                        code = (f"from tunbedlib import scenario\n"
                                f"from tunbedlib.kinds import failover, ndr_plan as ndr\n"
                                f"try:\n    {what}({path!r})\n"
                                f"except Exception as e:\n    print(type(e).__name__, e)\n")
                        p = subprocess.run([sys.executable, "-B", "-c", code], env=ENV,
                                           capture_output=True, text=True, timeout=20)
                        self.assertRegex(p.stdout, rf"^ScenarioError .*{path}: not a regular "
                                                   r"file \(a topology file must be one\)\n$",
                                         p.stderr)

    def test_a_matrix_is_bounded(self):
        sc = scenario.parse("[scenario]\nsessions = " + " ".join(map(str, range(1, 10001)))
                            + "\nworkers = " + " ".join(map(str, range(1, 65)))
                            + "\nmodes = gre gre+key gre+seq gre+csum gre+aqm gre-udp "
                            "gre+nofq\nrepeats = 100\n", "f")
        start = time.monotonic()
        with self.assertRaises(scenario.ScenarioError) as e:
            scenario.points(sc)
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(str(e.exception), f"the matrix has 448,000,000 runs (4,480,000 points, "
                                           f"100 repeats): at most {limits.MATRIX_RUNS:,}")

    def test_unicode_digits(self):
        with tempfile.TemporaryDirectory() as d:
            topo = os.path.join(d, "x.topo")
            with open(topo, "w") as f:
                f.write("[link transit]\nmtu = \u00b2\n")
            self.assertEqual(ndr.links(topo)["transit"]["mtu"], 1500)
        with self.assertRaises(intranet.IntranetError) as e:
            intranet.parse("[profile p]\ntcp_rmem = 4096 \u00b2 16777216\n", "f")
        self.assertEqual(str(e.exception), "f:2: bad value '4096 \u00b2 16777216' for tcp_rmem: "
                         "expected three byte counts, min default max, such as 4096 131072 "
                         "16777216")


class LocalHost(hostlib.Host):
    """A host that is this machine, without a namespace: for drivers' calls without root."""
    shares_files = True
    name = "local"
    roles = ("gwa",)

    def __init__(self, state):
        self.state = state

    def label(self):
        return "local"

    def argv(self, cmd):
        return cmd

    def undo(self, cmd, whole_run=False):
        pass


class Drivers(unittest.TestCase):
    """Defects 6 and 13: a contract driver's output, a hung call, and the PIDs it names."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.host = LocalHost(self.dir)
        self.bed = types.SimpleNamespace(addrs=beds.ADDRS[4], pins={}, roles={},
                                         host=lambda role: self.host,
                                         transit_iface=lambda role: "lo")

    def driver(self, verbs):
        """The driver class of a script whose verbs do what verbs says (sh case branches)."""
        path = os.path.join(self.dir, "drv.sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\ncase $1 in\n" + "".join(f"{v}) {body} ;;\n"
                                                         for v, body in verbs.items())
                    + "*) ;;\nesac\n")
        os.chmod(path, 0o755)
        cls = contract.command(f"cmd:{path}")
        return cls(self.bed, scenario.Point(cls.name, "-", 0, 0, "push", 1))

    def setup_of(self, d):
        with mock.patch.object(contract.Cmd, "wait_path", lambda self: None):
            try:
                d.setup()
            finally:
                d.teardown()

    def test_output_kept_bounded(self):
        d = self.driver({"up": "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo done"})
        self.setup_of(d)
        up = d.telemetry()["gwa"]["up"]
        self.assertLessEqual(len(up), limits.DRIVER_OUTPUT_BYTES + 100)
        self.assertTrue(up.startswith("x" * 1000))
        self.assertTrue(up.endswith(f"[cut: only its first {limits.DRIVER_OUTPUT_BYTES} bytes "
                                    "are kept]"), up[-200:])

    def test_a_long_error_line(self):
        d = self.driver({"up": "head -c 1000000 /dev/zero | tr '\\0' y >&2; exit 3"})
        with self.assertRaises(Failure) as e:
            self.setup_of(d)
        msg = str(e.exception)
        self.assertLess(len(msg), limits.DRIVER_LINE_CHARS + 200)
        self.assertRegex(msg, rf"^cmd:{d.path} up on local failed \(exit 3\): "
                              rf"y{{{limits.DRIVER_LINE_CHARS}}}\.\.\.$")

    def test_a_hung_up_is_killed_with_its_children(self):
        child, driver = os.path.join(self.dir, "child.pid"), os.path.join(self.dir, "up.pid")
        d = self.driver({"up": f'sleep 600 & echo $! >{child}; echo $$ >{driver}; exec sleep 600'})
        self.addCleanup(self.kill_left, child, driver)
        with mock.patch.object(limits, "DRIVER_CALL_S", 2):
            start = time.monotonic()
            with self.assertRaises(Failure) as e:
                self.setup_of(d)
        self.assertLess(time.monotonic() - start, 30)
        self.assertEqual(str(e.exception), f"cmd:{d.path} up on local: did not finish within "
                                           "2 s: killed, with what it started")
        # The call and its child are gone (or zombies no one waits for any more).
        deadline = time.monotonic() + 10
        while any(self.running(p) for p in (child, driver)):
            if time.monotonic() > deadline:
                self.fail("the hung up or its child still runs")
            time.sleep(0.05)

    @staticmethod
    def running(pidfile):
        with open(pidfile) as f:
            pid = int(f.read())
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    def kill_left(self, *pidfiles):
        """What a failing test left running, by the PIDs it wrote."""
        for p in pidfiles:
            if os.path.exists(p) and self.running(p):
                with open(p) as f:
                    os.kill(int(f.read()), signal.SIGKILL)

    def test_pids(self):
        ok = self.driver({"pids": "echo 1234 mydaemon; echo 4194303"})
        self.setup_of(ok)
        self.assertEqual(ok.pids(), [("gwa", 1234, "mydaemon gwa"), ("gwa", 4194303, "drv.sh gwa"),
                                     ("gwb", 1234, "mydaemon gwb"), ("gwb", 4194303, "drv.sh gwb")])
        many = "; ".join(f"echo {1000 + i}" for i in range(limits.PIDS_PER_DRIVER + 1))
        for out, want in (
                ("echo \u00b2", "'\u00b2': expected PID [LABEL]"),
                ("echo 0", "'0': no such PID (expected 2 to 4194303)"),
                ("echo 1 init", "'1 init': no such PID (expected 2 to 4194303)"),
                ("echo 2147483648", "'2147483648': no such PID (expected 2 to 4194303)"),
                ("echo 99999999999999999999999", "'99999999999999999999999': no such PID "
                 "(expected 2 to 4194303)"),
                ("echo -5", "'-5': expected PID [LABEL]"),
                ("echo '12 tunbed-x'", "'12 tunbed-x': expected PID [LABEL], the label not "
                 "starting with tunbed-"),
                (many, f"{limits.PIDS_PER_DRIVER + 1} PIDs: at most {limits.PIDS_PER_DRIVER}")):
            with self.subTest(out=out):
                d = self.driver({"pids": out})
                with self.assertRaises(Failure) as e:
                    self.setup_of(d)
                self.assertEqual(str(e.exception), f"cmd:{d.path} pids on local: {want}")


CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
from tunbedlib import cli, runloop

def bootstrap(kind=None):
    print("reached bootstrap")
    sys.exit(42)

runloop.bootstrap = bootstrap
os.geteuid = lambda: 0
sys.argv = ["tunbed", *sys.argv[2:]]
sys.exit(cli.main())
"""


def tunbed(*args):
    """The runner's command line as root would run it, stopped where it would bootstrap."""
    return subprocess.run([sys.executable, "-B", "-c", CHILD, SCRIPTS, *args],
                          capture_output=True, text=True, timeout=60)


class CommandLine(unittest.TestCase):
    """Defects 12, 15 and 20: bad command lines and files, one line and exit status 2 before
    anything is installed or built."""

    def test_bad_values(self):
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "t.topo")
            os.mkfifo(fifo)
            sc = os.path.join(d, "x.scenario")
            with open(sc, "w") as f:
                f.write(f"[scenario]\ntopology = {fifo}\n")
            for args, want in (
                    (["ras", "--pin", "bogus"], "bad value 'bogus' for --pin: expected "
                     "HOST=CPUS, HOST one of client, gwa, gwb, server"),
                    (["ras", "--pin", "gwa=0;reboot"], "bad value 'gwa=0;reboot' for --pin: "
                     "expected HOST=CPUS, HOST one of client, gwa, gwb, server"),
                    (["compare", "--gateways", "nosuch"], "unknown gateway 'nosuch': expected "
                     "some of "),
                    (["ras", "--congestion", "nosuchalg"], "congestion control 'nosuchalg' is "
                     "not available here (available: "),
                    (["ras", "--topology", "/dev/zero"], "--topology: /dev/zero: not a regular "
                     "file (a topology file must be one)"),
                    (["run", sc], f"{sc}:2: topology: {fifo}: not a regular file (a topology "
                     "file must be one)"),
                    (["run", "/dev/zero"], "/dev/zero: not a regular file (a scenario file must "
                     "be one)")):
                with self.subTest(args=args):
                    p = tunbed(*args)
                    self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                    self.assertTrue(p.stderr.startswith(f"tunbed: {want}"), p.stderr)
                    self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)

    def test_ceiling_from_a_malformed_directory(self):
        rows = (("not a dict", "searches/direct-s8-f64.json: point: expected an object"),
                ({"frame": {"lan": "64"}}, "searches/direct-s8-f64.json: frame.lan: expected a "
                 "whole number from 1 to 1048576"),
                ({"result": {"pdr": {"rate": float("nan")}}}, "searches/direct-s8-f64.json: not "
                 "JSON: NaN is not a number"),
                ({"result": {"pdr": []}}, "searches/direct-s8-f64.json: result.pdr: expected an "
                 "object"))
        for change, want in rows:
            with self.subTest(change=change), tempfile.TemporaryDirectory() as d:
                r = test_ndr.fake_record("direct", "direct", 64, 900000, 1, 0)
                if isinstance(change, str):
                    r["point"] = change
                else:
                    for k, v in change.items():
                        r[k] = dict(r[k], **v) if isinstance(v, dict) else v
                write_json(os.path.join(d, "searches", "direct-s8-f64.json"), r)
                p = tunbed("ndr", "--sizes", "64", "--ceiling-from", d)
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertEqual(p.stderr, f"tunbed: {d}/{want}\n")


class Reports(unittest.TestCase):
    """Defects 15 and 21: `tunbed report` on malformed records, and on results the user cannot
    write."""

    ROWS = (
        (lambda r: r.update(point="x"), "point: expected an object"),
        (lambda r: r.update(repeat="1"), "repeat: expected a whole number of at least 1"),
        (lambda r: r["point"].update(sessions=None), "point.sessions: expected a whole number of "
         "at least 1"),
        (lambda r: r.update(traffic=[]), "traffic: expected an object"),
        (lambda r: r["traffic"]["tcp"].update(bits_per_second="fast"),
         "traffic.tcp.bits_per_second: expected a number"),
        (lambda r: r["traffic"]["tcp"].update(bits_per_second=1e400),
         "not JSON: 1e400 is not a finite number"),
        (lambda r: r.update(cpu={"samples": "none"}), "cpu.samples: expected a list"),
        (lambda r: r["cpu"]["samples"][0].update(t=None), "cpu.samples[0].t: expected a number"),
        (lambda r: r["cpu"]["samples"][1]["cpus"].update({"x": {}}),
         "cpu.samples[1].cpus: key x: expected a CPU's number"),
        (lambda r: r["cpu"]["samples"][1]["threads"].update({"1": [1, "x"]}),
         "cpu.samples[1].threads.1: expected a list of 4"),
        (lambda r: r.update(processes={"1": 5}), "processes.1: expected a string"),
        (lambda r: r["gateway"]["gwa"].update(total=[]), "gateway.gwa.total: expected an object"),
        (lambda r: r.update(wire={"directions": "x"}), "wire.directions: expected a list that "
         "is not empty"),
        (lambda r: r.update(gateway_info={"mtu": "big"}), "gateway_info.mtu: expected a whole "
         "number"),
    )

    def test_malformed_records(self):
        for change, want in self.ROWS:
            with self.subTest(want=want), tempfile.TemporaryDirectory() as d:
                r = record("run-gregw-s1.json")
                change(r)
                path = os.path.join(d, "runs", "a-r1.json")
                os.makedirs(os.path.dirname(path))
                with open(path, "w") as f:
                    f.write(json.dumps(r).replace("Infinity", "1e400"))
                p = tunbed_report(d)
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertEqual(p.stderr, f"tunbed: {path}: {want}\n")
                self.assertEqual(sorted(os.listdir(d)), ["runs"])

    def test_nan(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "runs", "a-r1.json")
            os.makedirs(os.path.dirname(path))
            r = record("run-gregw-s1.json")
            r["traffic"]["tcp"]["jain"] = float("nan")
            with open(path, "w") as f:
                json.dump(r, f)
            p = tunbed_report(d)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr, f"tunbed: {path}: not JSON: NaN is not a number\n")

    def test_malformed_meta(self):
        for meta, want in (([], "not a tunbed results file (expected a JSON object)"),
                           ({"notes": "x"}, "notes: expected a list"),
                           ({"failed": [{"point": {"key": "../x"}}]},
                            "failed[0].point.key: expected a point's key")):
            with self.subTest(meta=meta), tempfile.TemporaryDirectory() as d:
                run_dir(d, meta=meta)
                p = tunbed_report(d)
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertTrue(p.stderr.startswith(f"tunbed: {d}/meta.json: {want}"), p.stderr)

    def test_someone_elses_results(self):
        """Results of root, reported by a user: one line, nothing written."""
        with tempfile.TemporaryDirectory() as top:
            d = run_dir(os.path.join(top, "r"))
            os.chmod(top, 0o755)
            env = ENV
            if os.geteuid() == 0:
                argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                # the checkout may be where the user cannot read (a fresh root's
                # /root is 0700): the user runs a readable copy of the runner
                lib = os.path.join(top, "lib")
                shutil.copytree(os.path.join(SCRIPTS, "tunbedlib"),
                                os.path.join(lib, "tunbedlib"))
                subprocess.run(["chmod", "-R", "a+rX", lib], check=True)
                env = dict(ENV, PYTHONPATH=lib)
            else:
                os.chmod(d, 0o555)
                argv = []
            try:
                p = subprocess.run([*argv, sys.executable, "-B", "-m", "tunbedlib", "report", d],
                                   capture_output=True, text=True, env=env, cwd=top,
                                   timeout=60)
            finally:
                os.chmod(d, 0o755)
            self.assertEqual((p.returncode, p.stdout), (1, ""), p.stderr)
            self.assertEqual(p.stderr, f"tunbed: {d}: cannot write the report here as uid "
                                       f"{65534 if argv else os.geteuid()}: run tunbed report "
                                       "as the directory's owner (or root), or on a copy\n")
            self.assertEqual(sorted(os.listdir(d)), ["meta.json", "runs"])


if __name__ == "__main__":
    unittest.main()
