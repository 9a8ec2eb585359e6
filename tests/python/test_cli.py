"""The tunbed command line (scripts/tunbedlib/cli.py): which of scripts/bootstrap's sets each
subcommand installs before it needs them (issue 33: install by need), with a fake bootstrap in
runloop's seam that records each call and ends the run at the first that builds; --version; a
mistake's usage and line; the defaults in every --help; the run loop's progress lines."""

import contextlib
import argparse
import io
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import cli, inventory, provision, runloop  # noqa: E402
from tunbedlib.drivers import GATEWAYS  # noqa: E402
from tunbedlib.kinds.base import Item, Kind  # noqa: E402


class Stop(Exception):
    """The fake bootstrap's end of a run: what came before it is what the test reads."""


def calls(argv):
    """What `tunbed ARGV` asks in order, as root: ("bootstrap", sets, build) for each call of
    scripts/bootstrap, ("inventory", path) when it reads an inventory; a run ends at its first
    bootstrap that builds."""
    seen = []

    def bootstrap(sets=("ras",), build=True):
        seen.append(("bootstrap", ",".join(sets), build))
        if build:
            raise Stop

    def parse(path, need_roles=inventory.ROLES):
        seen.append(("inventory", path))
        return mock.MagicMock()

    def stop(*a, **k):
        seen.append(("results directory",))
        raise Stop

    # A run that got past bootstrap stops before it makes a directory or a bed.
    with mock.patch.object(runloop, "bootstrap", bootstrap), \
            mock.patch.object(runloop.files, "new_dir", stop), \
            mock.patch("os.execvp", stop), \
            mock.patch.object(inventory, "parse", parse), \
            mock.patch.object(provision, "down", lambda inv, prefix: seen.append(("down",))), \
            mock.patch("os.geteuid", return_value=0), \
            contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            status = cli.main(argv)
            seen.append(("exit", status))
        except Stop:
            pass
    if seen and seen[-1][0] == "exit" and seen[-1][1] not in (0, None):
        raise AssertionError(f"tunbed {' '.join(argv)}: exit {seen[-1][1]}: {err.getvalue()}")
    return seen


class InstallByNeed(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name, text):
        p = os.path.join(self.tmp.name, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def first(self, *argv):
        """The sets of the first bootstrap that builds, and whether one came before."""
        seen = calls(list(argv))
        builds = [c for c in seen if c[0] == "bootstrap" and c[2]]
        self.assertEqual(len(builds), 1, seen)
        return builds[0][1]

    def test_the_main_job_installs_its_set_and_gregw_s(self):
        self.assertEqual(self.first("ras"), "ras,gregw")
        self.assertEqual(self.first("smoke"), "ras")
        self.assertEqual(self.first("intranet"), "ras")
        self.assertEqual(self.first("tunnels"), "ras,gregw")

    def test_compare_installs_the_gateways_it_compares(self):
        self.assertEqual(self.first("compare", "--gateways", "gregw,ovs-gre,openvpn"),
                         "ras,gregw,ovs-gre,openvpn")

    def test_a_gateway_pair_s_topology_brings_frr(self):
        self.assertEqual(self.first("ras", "--topology", "ras-pair"), "ras,gregw,failover")
        self.assertEqual(self.first("failover"), "failover")

    def test_a_scenario_file_s_gateways(self):
        sc = self.path("s.ini", "[scenario]\nname = s\ngateways = vxlan, wireguard-go\n"
                                "sessions = 1\nrepeats = 1\ntime = 1\n")
        self.assertEqual(self.first("run", sc), "ras,vxlan,wireguard-go")

    def test_ndr_installs_the_main_job_and_its_gateways(self):
        self.assertEqual(self.first("ndr", "--gateways", "gregw,fastd"), "ras,gregw,fastd")

    def test_the_hosts_mode_installs_ansible_before_it_reads_the_inventory(self):
        inv = self.path("inv.ini", "[client]\nc\n")
        seen = calls(["ras", "--hosts", inv])
        self.assertEqual(seen[:3], [("bootstrap", "hosts", False), ("inventory", inv),
                                    ("bootstrap", "hosts", True)])
        seen = calls(["provision", "--hosts", inv])
        self.assertEqual(seen[:3], [("bootstrap", "hosts", False), ("inventory", inv),
                                    ("bootstrap", "hosts", True)])
        self.assertEqual(calls(["down", "--hosts", inv]),
                         [("bootstrap", "hosts", False), ("inventory", inv), ("down",),
                          ("exit", None)])

    def test_every_set_asked_for_is_in_bootstrap_s_table(self):
        sets = ["ras", "failover", "hosts", *GATEWAYS]
        p = subprocess.run([runloop.BOOTSTRAP, "--list", "--for", ",".join(sets)],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_a_mistake_installs_nothing(self):
        seen = []
        with mock.patch.object(runloop, "bootstrap", lambda *a, **k: seen.append(a)), \
                mock.patch("os.geteuid", return_value=0), \
                contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(cli.main(["ras", "--topology", "/nonexistent.topo"]), 2)
        self.assertEqual(seen, [])


TUNBED = os.path.join(HERE, "..", "..", "scripts", "tunbed")


def tunbed(*argv):
    """scripts/tunbed ARGV as this user (none of these reaches the root check)."""
    return subprocess.run([TUNBED, *argv], capture_output=True, text=True, timeout=60)


def parsed(argv, run=False):
    """(exit status, stdout, stderr) of cli.main(argv) where a command line that parses runs
    nothing: no command (with run, the commands' checks, up to their first bootstrap, or the
    one a test set), no bootstrap, no sudo (a parser that lets a mistake through must not
    start a run as root)."""
    def stop(*a, **k):
        raise Stop

    commands = contextlib.ExitStack()
    if not run:
        commands.enter_context(mock.patch.object(runloop, "execute", stop))
        commands.enter_context(mock.patch.object(runloop, "bootstrap", stop))
        commands.enter_context(mock.patch.multiple(cli, cmd_report=stop, cmd_provision=stop))
    with commands, mock.patch.object(runloop.files, "new_dir", stop), \
            mock.patch.object(cli, "cmd_down", stop), \
            mock.patch.object(provision, "provision", stop), \
            mock.patch("os.execvp", stop), mock.patch("os.geteuid", return_value=0), \
            contextlib.redirect_stdout(io.StringIO()) as out, \
            contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            status = cli.main(argv)
        except SystemExit as e:
            status = e.code
        except Stop:
            status = "ran"
    return status, out.getvalue(), err.getvalue()


class Conventions(unittest.TestCase):
    def test_version(self):
        p = tunbed("--version")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^tunbed [0-9]+\.[0-9]+\.[0-9]+ \((build [0-9a-f]{12}|not "
                                   r"built)(, commit [0-9a-f]{12}( with changes)?)?\)\n$")
        if os.path.isdir(os.path.join(HERE, "..", "..", ".git")):
            self.assertIn("commit ", p.stdout)

    def test_a_mistyped_option_gets_its_subcommand_s_usage_and_one_line(self):
        status, out, err = parsed(["ras", "--sesions", "3"])
        self.assertEqual(status, 2)
        self.assertTrue(err.startswith("usage: tunbed ras "), err)
        errors = [ln for ln in err.splitlines() if not ln.startswith(("usage:", " "))]
        self.assertEqual(errors, ["tunbed ras: unrecognized arguments: --sesions 3 (did you "
                                  "mean --sessions?)"])
        self.assertEqual(out, "")

    def test_every_subcommand_s_bad_option(self):
        for name in cli.parser().commands:
            status, _, err = parsed([name, "--no-such-option"])
            self.assertEqual(status, 2, name)
            self.assertTrue(err.startswith(f"usage: tunbed {name} "), err)
            errors = [ln for ln in err.splitlines() if not ln.startswith(("usage:", " "))]
            self.assertEqual(len(errors), 1, err)
            self.assertTrue(errors[0].startswith(f"tunbed {name}: "), err)
        status, _, err = parsed(["rsa"])
        self.assertEqual(status, 2)
        self.assertTrue(err.startswith("usage: tunbed "), err)

    # Options that have no default to state: each is a thing given or not (an inventory, a
    # file, CPUs to pin to, a directory to read a ceiling from).
    NO_DEFAULT = {"--hosts", "--scenario", "--pin", "--ceiling-from"}

    def test_every_help_states_the_defaults(self):
        for name, p in cli.parser().commands.items():
            text = p.format_help()
            self.assertNotIn("%%", text, name)
            fmt = p._get_formatter()
            for a in p._actions:
                if not a.option_strings or a.nargs == 0 or a.required or \
                        isinstance(a, argparse._HelpAction) or a.option_strings[0] in \
                        self.NO_DEFAULT:
                    continue
                with self.subTest(command=name, option=a.option_strings[0]):
                    self.assertIn("default", fmt._expand_help(a) if a.help else "")


class BadInput(unittest.TestCase):
    """Every subcommand's bad values: one line, exit status 2, before anything is built (the
    hosts mode's Ansible, installed without a build, aside)."""
    CASES = [["ras", "--sessions", "0"], ["ras", "--sessions", "x"], ["ras", "--pin", "bad"],
             ["ras", "--congestion", "no-such-algorithm"], ["ras", "--modes", "nope"],
             ["ras", "--repeats", "0"], ["ras", "--time", "-1"], ["ras", "--warmup", "-5"],
             ["ras", "--topology", "no-such-topology"], ["ras", "--prefix", "x" * 40],
             ["ras", "--hosts", "/nonexistent"], ["compare", "--gateways", "nope"],
             ["run", "/nonexistent"], ["smoke", "--time", "0"],
             ["intranet", "--profiles", "nope"], ["intranet", "--scenario", "/nonexistent"],
             ["ndr", "--sizes", "10"], ["ndr", "--ceiling-from", "/nonexistent"],
             ["ndr", "--gateways", "nope"], ["ndr", "--pdr-loss", "x"],
             ["failover", "--faults", "x"], ["failover", "--sessions", "0"],
             ["failover", "--udp-rate", "x"], ["failover", "--topology", "ras"],
             ["tunnels", "--tunnels-counts", "0"], ["tunnels", "--tunnels-counts", "16385"],
             ["tunnels", "--tunnels-counts", "1,x"], ["tunnels", "--tunnels-counts", "10,10"],
             ["tunnels", "--sessions", "0"], ["tunnels", "--sessions", "10001"],
             ["tunnels", "--workers", "0"], ["tunnels", "--time", "0"],
             ["tunnels", "--repeats", "0"], ["tunnels", "--gateway", "vxlan,vxlan"],
             ["tunnels", "--gateway", "route"], ["tunnels", "--gateway", "nope"],
             ["tunnels", "--encap", "ipip"], ["tunnels", "--churn", "0"],
             ["tunnels", "--gateway", "wireguard-go", "--tunnels-counts", "101"],
             ["tunnels", "--setup-limit", "0"],
             ["tunnels", "--churn", "-10"], ["tunnels", "--churn", "x"],
             ["tunnels", "--churn", "10", "--churn-tunnels", "7"],
             ["tunnels", "--churn", "10", "--churn-tunnels", "1"],
             ["tunnels", "--churn-tunnels", "8"],
             ["tunnels", "--churn", "10", "--tunnels-counts", "1"],
             ["down", "--prefix", "bad/x"], ["provision", "--hosts", "/nonexistent"],
             ["report", "/nonexistent"]]

    def test_refused_in_one_line_with_exit_status_2(self):
        for argv in self.CASES:
            with self.subTest(argv=" ".join(argv)):
                seen = []
                with mock.patch.object(runloop, "bootstrap",
                                       lambda sets=(), build=True: seen.append(build)):
                    status, out, err = parsed(argv, run=True)
                self.assertEqual(status, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertTrue(err.startswith("tunbed: "), err)
                self.assertNotIn(True, seen, "built before the refusal")


class Report(unittest.TestCase):
    def refusal(self, d):
        before = sorted(os.listdir(d))
        status, out, err = parsed_report(d)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertEqual(sorted(os.listdir(d)), before, "the directory was written to")
        return err

    def test_no_results_directory(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(self.refusal(d),
                             f"tunbed: {d}: not a results directory (no runs/)\n")

    def test_a_results_directory_without_a_record(self):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "runs"))
            self.assertEqual(self.refusal(d), f"tunbed: {d}: no run in runs/: nothing to report\n")


def parsed_report(d):
    """cli.main(["report", d]) with nothing to install."""
    def stop(*a, **k):
        raise Stop

    with mock.patch.object(runloop, "bootstrap", stop), \
            contextlib.redirect_stdout(io.StringIO()) as out, \
            contextlib.redirect_stderr(io.StringIO()) as err:
        status = cli.main(["report", d])
    return status, out.getvalue(), err.getvalue()


class Clock:
    """time.monotonic that moves only when told."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class FakeKind(Kind):
    """Items that take 10 s of a fake clock each; the second's gateway does not come up."""
    name, RECORD_DIR = "fake", "runs"

    def __init__(self, clock):
        self.clock = clock

    def measure(self, plan, bed, item):
        self.clock.now += 10
        if item.key == "b":
            raise runloop.GatewayFailure("gregw did not start")
        return {"traffic": {"tcp": {"bits_per_second": 2.5e9}}}


class FakeBed:
    def open(self):
        pass

    def close(self):
        pass

    @contextlib.contextmanager
    def point(self, item):
        yield self


class Progress(unittest.TestCase):
    def run_items(self, tty):
        clock = Clock()
        err = io.StringIO()
        err.isatty = lambda: tty
        items = [Item("a", "gregw gre 2w, 1 session"), Item("b", "gregw gre 2w, 8 sessions"),
                 Item("c", "gregw gre 2w, 64 sessions")]
        with tempfile.TemporaryDirectory() as d, mock.patch("time.monotonic", clock), \
                contextlib.redirect_stderr(err):
            os.mkdir(os.path.join(d, "runs"))
            clock.now += 65  # the install and the build, before the first item
            progress = runloop.Progress(len(items), start=1000.0)
            runloop.measure_all(FakeKind(clock), None, FakeBed(), items, d, [], progress)
            progress.finished(d)
        return err.getvalue(), d

    def test_each_item_s_result_the_time_left_and_done(self):
        out, d = self.run_items(tty=False)
        self.assertEqual(out.splitlines(), [
            # No time left before an item has finished; then the items' own pace, not the
            # install's.
            "tunbed: [1/3] gregw gre 2w, 1 session  elapsed 1:05",
            "tunbed: [1/3] gregw gre 2w, 1 session: 2.5 Gbit/s  elapsed 1:15  left ~0:20",
            "tunbed: [2/3] gregw gre 2w, 8 sessions  elapsed 1:15  left ~0:20",
            "tunbed: gregw gre 2w, 8 sessions FAILED: gregw did not start",
            "tunbed: [3/3] gregw gre 2w, 64 sessions  elapsed 1:25  left ~0:10",
            "tunbed: [3/3] gregw gre 2w, 64 sessions: 2.5 Gbit/s  elapsed 1:35  left ~0:00",
            f"tunbed: done in 1:35: {d}"])

    def test_a_terminal_s_lines_are_redrawn_and_results_stay(self):
        out, d = self.run_items(tty=True)
        self.assertEqual(out.split("\n"), [
            "\r[1/3] gregw gre 2w, 1 session  elapsed 1:05\033[K"
            "\r[1/3] gregw gre 2w, 1 session: 2.5 Gbit/s  elapsed 1:15  left ~0:20\033[K",
            "\r[2/3] gregw gre 2w, 8 sessions  elapsed 1:15  left ~0:20\033[K",
            "tunbed: gregw gre 2w, 8 sessions FAILED: gregw did not start",
            "\r[3/3] gregw gre 2w, 64 sessions  elapsed 1:25  left ~0:10\033[K"
            "\r[3/3] gregw gre 2w, 64 sessions: 2.5 Gbit/s  elapsed 1:35  left ~0:00\033[K",
            f"tunbed: done in 1:35: {d}", ""])

    def test_clock(self):
        self.assertEqual([runloop.clock(s) for s in (0, 59.9, 61, 3600, 3725)],
                         ["0:00", "0:59", "1:01", "1:00:00", "1:02:05"])


if __name__ == "__main__":
    unittest.main()
