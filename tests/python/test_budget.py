"""Unit tests of emulated cores' input (scripts/tunbedlib/budget.py), no root needed: shares
parsed and refused in one line, the period and quota of a share against the kernel's 1 ms
floor, prefixes, and which cpu controller a machine's mounts offer (fake /proc/self/mounts and
cgroup trees: v1's cpu hierarchy, v2 with and without cpu, none); and the runner's option and
scenario key (`--gateway-cpu`, `gateway_cpu =`, kinds/matrix_budget.check): one share, off, the
hosts mode and a machine without a cpu controller refused in one line, the option over the
file; the main job's default of 15% and where it is off. The cgroups themselves: test_budget_cgroup.py (root); the runner with budgets:
netns/runner_budget."""

import gzip
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import budget, cli, scenario  # noqa: E402
from tunbedlib.common import ScenarioError  # noqa: E402
from tunbedlib.kinds import matrix_budget  # noqa: E402
from tunbedlib.kinds.matrix import KIND as MATRIX  # noqa: E402


class Shares(unittest.TestCase):
    def test_good(self):
        self.assertEqual(budget.parse_shares("20"), [20.0])
        self.assertEqual(budget.parse_shares("20, 30%,12.5"), [20.0, 30.0, 12.5])
        self.assertEqual(budget.parse_shares("1,100"), [1.0, 100.0])
        self.assertIsNone(budget.parse_shares("off"))

    def test_bad(self):
        for bad in ("0", "0.99", "100.01", "101", "-5", "abc", "nan", "inf", "", "20,", "1e9"):
            with self.assertRaises(budget.BudgetError) as e:
                budget.parse_shares(bad)
            self.assertRegex(str(e.exception), r"^bad value '.*' for --gateway-cpu: a share of "
                             r"one core from 1 to 100 \(percent\), or off$", bad)
        with self.assertRaises(budget.BudgetError) as e:
            budget.parse_shares("20,0", "--client-cpu")
        self.assertEqual(str(e.exception), "bad value '0' for --client-cpu: a share of one core "
                         "from 1 to 100 (percent), or off")

    def test_period_and_quota(self):
        self.assertEqual(budget.period_quota(20), (5000, 1000))
        self.assertEqual(budget.period_quota(100), (5000, 5000))
        self.assertEqual(budget.period_quota(50), (5000, 2500))
        # Below 20% the period grows so that the quota stays at the kernel's 1 ms floor.
        self.assertEqual(budget.period_quota(10), (10000, 1000))
        self.assertEqual(budget.period_quota(1), (100000, 1000))
        self.assertEqual(budget.period_quota(20, 100000), (100000, 20000))
        self.assertEqual(budget.period_quota(20, 2000000), (1000000, 200000))
        self.assertEqual(budget.period_quota(50, 1000), (2000, 1000))
        for share in (1, 1.5, 7, 15, 19.9, 33.3, 99.9):
            period, quota = budget.period_quota(share)
            self.assertGreaterEqual(quota, budget.MIN_US, share)
            self.assertLessEqual(period, 1000000, share)
            self.assertAlmostEqual(100 * quota / period, share, delta=0.05, msg=share)

    def test_prefix(self):
        self.assertEqual(budget.parent_name("tb"), "tunbed-tb")
        for bad in ("", "a-b", "a/../b", "x" * 16, "a b", None):
            with self.assertRaises(budget.BudgetError):
                budget.parent_name(bad)


def find(mounts):
    """budget.find() on a fake tree: this user's, where the real one must be root's."""
    return budget.find(mounts, owner=os.geteuid())


class Controllers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        os.chmod(self.tmp.name, 0o755)

    def tree(self, name, *files, controllers=None):
        d = os.path.join(self.tmp.name, name)
        os.mkdir(d, 0o755)
        for f in files:
            open(os.path.join(d, f), "w").close()
        if controllers is not None:
            with open(os.path.join(d, "cgroup.controllers"), "w") as f:
                f.write(controllers + "\n")
        return d

    def mounts(self, *lines):
        path = os.path.join(self.tmp.name, "mounts")
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    def test_v1_cpu(self):
        cpu = self.tree("cpu", "cpu.cfs_quota_us")
        v2 = self.tree("unified", controllers="cpu memory")
        m = self.mounts(f"cgroup {cpu} cgroup rw,relatime,cpu 0 0",
                        f"cgroup2 {v2} cgroup2 rw 0 0")
        self.assertEqual(find(m), budget.Controller(1, cpu))

    def test_v1_cpu_with_cpuacct(self):
        cpu = self.tree("cpu,cpuacct", "cpu.cfs_quota_us")
        m = self.mounts(f"cgroup {cpu} cgroup rw,nosuid,cpu,cpuacct 0 0")
        self.assertEqual(find(m).root, cpu)

    def test_v2_cpu(self):
        v2 = self.tree("with space", controllers="cpuset cpu io memory pids")
        m = self.mounts("cgroup x cgroup rw,cpuset 0 0",
                        f"cgroup2 {v2.replace(' ', chr(92) + '040')} cgroup2 rw 0 0")
        self.assertEqual(find(m), budget.Controller(2, v2))

    def test_none(self):
        v2 = self.tree("unified", controllers="hugetlb")
        acct = self.tree("cpuacct")
        m = self.mounts(f"cgroup {acct} cgroup rw,cpuacct 0 0", f"cgroup2 {v2} cgroup2 rw 0 0")
        with self.assertRaises(budget.BudgetError) as e:
            find(m)
        self.assertEqual(str(e.exception), "no cpu controller to budget threads with: cgroup "
                         "v1's cpu hierarchy is not mounted; cgroup v2 at "
                         f"{v2} has no cpu controller (it has: hugetlb)")

    def test_no_cfs_bandwidth(self):
        cpu = self.tree("cpu")
        m = self.mounts(f"cgroup {cpu} cgroup rw,cpu 0 0")
        with self.assertRaises(budget.BudgetError) as e:
            find(m)
        self.assertEqual(str(e.exception), "no cpu controller to budget threads with: cgroup "
                         f"v1's cpu hierarchy at {cpu} has no CFS bandwidth control "
                         "(CONFIG_CFS_BANDWIDTH)")

    def test_a_hierarchy_others_may_write_is_refused(self):
        cpu = self.tree("cpu", "cpu.cfs_quota_us")
        os.chmod(cpu, 0o777)
        m = self.mounts(f"cgroup {cpu} cgroup rw,cpu 0 0")
        with self.assertRaises(budget.BudgetError) as e:
            find(m)
        self.assertRegex(str(e.exception), r"not a cgroup hierarchy of root's .*mode 777\): "
                         "budgets refused$")

    def test_irq_time_accounting(self):
        on, off = os.path.join(self.tmp.name, "on.gz"), os.path.join(self.tmp.name, "off")
        with gzip.open(on, "wt") as f:
            f.write("CONFIG_HZ=250\nCONFIG_IRQ_TIME_ACCOUNTING=y\n")
        with open(off, "w") as f:
            f.write("CONFIG_HAVE_IRQ_TIME_ACCOUNTING=y\n# CONFIG_IRQ_TIME_ACCOUNTING is not set\n")
        self.assertIs(budget.irq_time_accounting([on]), True)
        self.assertIs(budget.irq_time_accounting([off, on]), False)
        self.assertIsNone(budget.irq_time_accounting([os.path.join(self.tmp.name, "none")]))

    def test_check_off_needs_no_controller(self):
        self.assertEqual(budget.check("off"), (None, None))


class Option(unittest.TestCase):
    CTL = budget.Controller(1, "/sys/fs/cgroup/cpu")

    def check(self, text, file_text="[scenario]\n", hosts=None):
        sc = scenario.parse(file_text, "s.ini")
        with mock.patch.object(budget, "find", return_value=self.CTL):
            return sc, matrix_budget.check(sc, text, hosts)

    def test_off_by_default(self):
        sc, got = self.check(None)
        self.assertEqual((sc.gateway_cpu, got), (None, (None, None)))

    def test_share(self):
        sc, got = self.check("20")
        self.assertEqual((sc.gateway_cpu, got), (20.0, (20.0, self.CTL)))
        sc, got = self.check(None, "[scenario]\ngateway_cpu = 12.5%\n")
        self.assertEqual(got, (12.5, self.CTL))
        # The option over the file, both ways.
        self.assertEqual(self.check("off", "[scenario]\ngateway_cpu = 30\n")[1], (None, None))
        self.assertEqual(self.check("40", "[scenario]\ngateway_cpu = off\n")[1][0], 40.0)

    def test_refused(self):
        for text, want in (
                ("0", "bad value '0' for --gateway-cpu: a share of one core from 1 to 100 "
                      "(percent), or off"),
                ("20,30", "bad value '20,30' for --gateway-cpu: one share for every gateway "
                          "thread")):
            with self.assertRaises(ScenarioError) as e:
                self.check(text)
            self.assertEqual(str(e.exception), want)
        with self.assertRaises(ScenarioError) as e:
            self.check("20", hosts="inv.ini")
        self.assertIn("the hosts mode has none", str(e.exception))
        with self.assertRaises(ScenarioError) as e:
            scenario.parse("[scenario]\ngateway_cpu = 101\n", "s.ini")
        self.assertEqual(str(e.exception), "s.ini:2: bad value '101' for gateway_cpu: a share "
                                           "of one core from 1 to 100 (percent), or off")

    def test_a_run_of_the_prefix_left_its_budgets(self):
        with tempfile.TemporaryDirectory() as root:
            sc = scenario.parse("[scenario]\n", "s.ini")
            ctl = budget.Controller(1, root)
            with mock.patch.object(budget, "find", return_value=ctl):
                self.assertEqual(matrix_budget.check(sc, "20", None, "h1"), (20.0, ctl))
                os.mkdir(os.path.join(root, "tunbed-h1"))
                with self.assertRaises(ScenarioError) as e:
                    matrix_budget.check(sc, "20", None, "h1")
                self.assertEqual(str(e.exception), f"{root}/tunbed-h1 exists: a run with prefix "
                                 "h1 is going on or was killed (tunbed down --prefix h1 removes "
                                 "what it left)")
                # Another prefix's are not this run's business.
                self.assertEqual(matrix_budget.check(sc, "20", None, "h2")[0], 20.0)

    def test_not_for_an_ndr_search(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "n.ini")
            with open(path, "w") as f:
                f.write("[scenario]\ngateways = route\n[ndr]\n")
            args = cli.parser().parse_args(["run", path, "--gateway-cpu", "20"])
            with self.assertRaises(ScenarioError) as e:
                MATRIX.check(args)
            self.assertEqual(str(e.exception), "--gateway-cpu: an NDR search has no emulated "
                                               "cores; ras, compare and run of a matrix do")
            with self.assertRaises(ScenarioError) as e:
                MATRIX.check(cli.parser().parse_args(["run", path, "--client-cpu", "20"]))
            self.assertEqual(str(e.exception), "--client-cpu: an NDR search has no generator "
                                               "budget; ras, compare and run of a matrix do")
            with open(path, "w") as f:
                f.write("[scenario]\ngateway_cpu = 20\n[ndr]\n")
            with self.assertRaises(ScenarioError) as e:
                MATRIX.check(cli.parser().parse_args(["run", path]))
            self.assertEqual(str(e.exception), f"{path}:2: 'gateway_cpu' does not apply to an "
                                               "NDR search (its keys are in [ndr])")

    def test_no_cpu_controller(self):
        sc = scenario.parse("[scenario]\n", "s.ini")
        nothing = budget.BudgetError("no cpu controller to budget threads with: cgroup v1's cpu "
                                     "hierarchy is not mounted")
        with mock.patch.object(budget, "find", side_effect=nothing):
            with self.assertRaises(ScenarioError) as e:
                matrix_budget.check(sc, "20", None)
            self.assertEqual(str(e.exception), str(nothing))
            # Off asks nothing of the machine.
            self.assertEqual(matrix_budget.check(sc, "off", None), (None, None))


class ClientOption(unittest.TestCase):
    """--client-cpu (client_cpu): the generator's budget, off by default, checked as
    --gateway-cpu is; a plan with it alone has a controller (a budgeted bed)."""
    CTL = budget.Controller(1, "/sys/fs/cgroup/cpu")

    def check(self, text, file_text="[scenario]\n", hosts=None):
        sc = scenario.parse(file_text, "s.ini")
        with mock.patch.object(budget, "find", return_value=self.CTL):
            return sc, matrix_budget.check_client(sc, text, hosts)

    def test_off_by_default(self):
        self.assertEqual(self.check(None)[0].client_cpu, None)
        self.assertIsNone(self.check(None)[1])

    def test_share(self):
        sc, ctl = self.check("5")
        self.assertEqual((sc.client_cpu, ctl), (5.0, self.CTL))
        sc, ctl = self.check(None, "[scenario]\nclient_cpu = 7%\n")
        self.assertEqual((sc.client_cpu, ctl), (7.0, self.CTL))
        sc, ctl = self.check("off", "[scenario]\nclient_cpu = 7\n")
        self.assertEqual((sc.client_cpu, ctl), (None, None))

    def test_refused(self):
        for text, want in (
                ("0.5", "bad value '0.5' for --client-cpu: a share of one core from 1 to 100 "
                        "(percent), or off"),
                ("5,6", "bad value '5,6' for --client-cpu: one share for every client")):
            with self.assertRaises(ScenarioError) as e:
                self.check(text)
            self.assertEqual(str(e.exception), want)
        with self.assertRaises(ScenarioError) as e:
            self.check("5", hosts="inv.ini")
        self.assertEqual(str(e.exception), "--client-cpu (client_cpu) budgets processes of this "
                                           "machine: the hosts mode has none")
        with self.assertRaises(ScenarioError) as e:
            scenario.parse("[scenario]\nclient_cpu = 5,6\n", "s.ini")
        self.assertEqual(str(e.exception), "s.ini:2: bad value '5,6' for client_cpu: one share "
                                           "for every client")
        nothing = budget.BudgetError("no cpu controller to budget threads with: cgroup v1's cpu "
                                     "hierarchy is not mounted")
        with mock.patch.object(budget, "find", side_effect=nothing), \
                self.assertRaises(ScenarioError) as e:
            matrix_budget.check_client(scenario.parse("[scenario]\n", "s.ini"), "5", None)
        self.assertEqual(str(e.exception), str(nothing))

    def test_plan(self):
        with tempfile.TemporaryDirectory() as root, \
                mock.patch.object(budget, "find", return_value=budget.Controller(1, root)):
            plan = MATRIX.check(cli.parser().parse_args(
                ["compare", "--gateways", "gregw", "--client-cpu", "5", "--prefix", "tbco"]))
            self.assertEqual((plan.sc.gateway_cpu, plan.sc.client_cpu), (None, 5.0))
            self.assertIsNotNone(plan.budget_ctl)
            self.assertEqual(MATRIX.meta(plan)["client_cpu"], 5.0)
            with self.assertRaises(ScenarioError) as e:
                MATRIX.check(cli.parser().parse_args(
                    ["ras", "--client-cpu", "5", "--hosts", "inv.ini"]))
            self.assertIn("--client-cpu", str(e.exception))


class RasDefault(unittest.TestCase):
    """The main job's emulated cores (matrix_budget.check with notes): 15% a worker in namespaces on
    a machine with a cpu controller; off, with a note, on hosts or without one; the option
    over it both ways; compare and a file keep off."""

    def plan(self, argv, find):
        with tempfile.TemporaryDirectory() as root, \
                mock.patch.object(budget, "find", **find(budget.Controller(1, root))):
            return MATRIX.check(cli.parser().parse_args(argv + ["--prefix", "tbrd"]))

    def test_in_namespaces(self):
        plan = self.plan(["ras"], lambda ctl: {"return_value": ctl})
        self.assertEqual((plan.sc.gateway_cpu, plan.budget_ctl is not None, plan.notes),
                         (matrix_budget.RAS_SHARE, True, []))
        self.assertEqual(matrix_budget.RAS_SHARE, 15.0)

    def test_the_option_over_it(self):
        plan = self.plan(["ras", "--gateway-cpu", "off"], lambda ctl: {"return_value": ctl})
        self.assertEqual((plan.sc.gateway_cpu, plan.budget_ctl, plan.notes), (None, None, []))
        plan = self.plan(["ras", "--gateway-cpu", "40"], lambda ctl: {"return_value": ctl})
        self.assertEqual((plan.sc.gateway_cpu, plan.notes), (40.0, []))

    def test_no_cpu_controller(self):
        nothing = budget.BudgetError("no cpu controller to budget threads with: cgroup v1's cpu "
                                     "hierarchy is not mounted")
        plan = self.plan(["ras"], lambda ctl: {"side_effect": nothing})
        self.assertEqual((plan.sc.gateway_cpu, plan.budget_ctl), (None, None))
        self.assertEqual(plan.notes, [
            "emulated cores off, no cpu controller to budget threads with: cgroup v1's cpu "
            "hierarchy is not mounted: the four roles share this machine's CPUs, so a point "
            "may measure the box rather than the gateway (its verdict says)"])
        # Asked for, it is still refused.
        with self.assertRaises(ScenarioError):
            self.plan(["ras", "--gateway-cpu", "15"], lambda ctl: {"side_effect": nothing})

    def test_on_hosts(self):
        sc, notes = scenario.Scenario(gateway_cpu=matrix_budget.RAS_SHARE), []
        self.assertEqual(matrix_budget.check(sc, None, "inv.ini", notes=notes), (None, None))
        self.assertEqual(notes, ["emulated cores off: on hosts the gateways run on their own "
                                 "cores (--gateway-cpu budgets threads of this machine)"])
        self.assertIsNone(sc.gateway_cpu)
        # Asked for on hosts: refused, whatever the command's default (Option.test_refused).
        sc, notes = scenario.Scenario(gateway_cpu=20.0), []
        with self.assertRaises(ScenarioError):
            matrix_budget.check(sc, "20", "inv.ini", notes=notes)
        self.assertEqual(notes, [])

    def test_compare_keeps_off(self):
        plan = self.plan(["compare", "--gateways", "gregw"], lambda ctl: {"return_value": ctl})
        self.assertEqual((plan.sc.gateway_cpu, plan.notes), (None, []))


class Give(unittest.TestCase):
    """matrix_budget.give: the gateway's threads budgeted once every worker says its thread id
    (a worker started a moment before may still say 0; budgeting thread 0 failed as "cannot
    budget process None")."""

    class Driver:
        name, can_budget = "gregw", True

        def __init__(self, answers):
            self.answers, self.asked = answers, 0

        def telemetry(self):
            self.asked += 1

        def thread_labels(self):
            tids = self.answers[min(self.asked, len(self.answers)) - 1]
            return {("gwa", t): f"gregw gwa worker {i}" for i, t in enumerate(tids)}

    class Bed:
        share = 15.0

        def __init__(self):
            self.budgets = mock.Mock()

    def test_waits_for_every_thread_id(self):
        bed, driver = self.Bed(), self.Driver([[0, 0], [101, 0], [101, 102]])
        with mock.patch.object(matrix_budget, "pin_of", lambda tid, i: i):
            self.assertIsNone(matrix_budget.give(bed, driver, []))
        self.assertEqual(driver.asked, 3)
        self.assertEqual([c.args for c in bed.budgets.add.call_args_list],
                         [(101, 15.0, 0), (102, 15.0, 1)])

    def test_a_thread_id_that_never_comes(self):
        bed, driver = self.Bed(), self.Driver([[101, 0]])
        with mock.patch.object(matrix_budget.limits, "THREADS_READY_S", 0.05):
            with self.assertRaisesRegex(Exception, "^gregw: a worker did not say its thread id "
                                        "within 0.05 s$"):
                matrix_budget.give(bed, driver, [])
        bed.budgets.add.assert_not_called()


if __name__ == "__main__":
    unittest.main()
