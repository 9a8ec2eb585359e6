"""Unit tests of the bottleneck verdict (scripts/tunbedlib/verdict.py) on synthetic records:
each verdict, its edges (95.0% of an allowance against 94.9%, the 10% of the generator's
ceiling, the 5% of a rate cap), the order of the rules, budgets, IRQ time accounted apart,
hosts mode (per machine), the CPU of processes tunbed did not start with its threshold; and
the two recorded runs of data/ (1 session: the gateway pair's workers share core 1; 8
sessions: the box)."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import records, verdict  # noqa: E402
from tunbedlib.kinds.matrix import KIND as MATRIX  # noqa: E402

HZ = 100
GWA, CLIENT, SERVER = 100, 200, 300
PROCESSES = {str(GWA): "gregw gwa", str(CLIENT): "tunbed-traffic client",
             str(SERVER): "tunbed-traffic server"}
LABELS = {"101": "gregw gwa worker 0", "102": "gregw gwa worker 1"}


def cpu_ticks(busy, softirq, span):
    """One CPU's /proc/stat ticks over span seconds at busy percent, softirq of it."""
    total = round(span * HZ)
    b, s = round(total * busy / 100), round(total * softirq / 100)
    return {"user": b - s, "nice": 0, "system": 0, "idle": total - b, "iowait": 0, "irq": 0,
            "softirq": s, "steal": 0}


def machine(cpus, threads, span=10, name="this machine", budgets=None, facts=None,
            processes=None):
    """A sampled machine: cpus [(busy %, softirq %)], threads {tid: (pid, % of a core, cpu)};
    two samples, at 0 and span."""
    zero = {str(i): {f: 0 for f in cpu_ticks(0, 0, span)} for i in range(len(cpus))}
    end = {str(i): cpu_ticks(b, s, span) for i, (b, s) in enumerate(cpus)}
    comm = {GWA: "gregw", CLIENT: "tunbed-traffic", SERVER: "tunbed-traffic"}
    t0 = {str(t): [pid, comm.get(pid, "x"), 0, cpu] for t, (pid, _, cpu) in threads.items()}
    t1 = {str(t): [pid, comm.get(pid, "x"), round(pct * span * HZ / 100), cpu]
          for t, (pid, pct, cpu) in threads.items()}
    return {"name": name, "roles": [], "processes": processes or PROCESSES,
            "thread_labels": LABELS, "clock": {"offset_s": 0.0, "error_s": 0.0},
            "facts": facts, "budgets": budgets or {},
            "cpu": {"hz": 4, "ticks_per_second": HZ,
                    "samples": [{"t": 0.0, "cpus": zero, "threads": t0},
                                {"t": float(span), "cpus": end, "threads": t1}]}}


def run(*hosts, span=10):
    return {"point": {"key": "k"}, "repeat": 1, "hosts": list(hosts),
            "traffic": {"measure_start_mono_s": 0.0, "measure_end_mono_s": float(span)}}


def judge(rec, bps=1e9, **kw):
    return verdict.judge(rec, bps, **kw)


class Gateway(unittest.TestCase):
    def test_worker_at_its_core(self):
        v = judge(run(machine([(50, 5), (99, 30)], {101: (GWA, 97, 1), 201: (CLIENT, 40, 0)})))
        self.assertEqual(v["verdict"], "gateway")
        self.assertEqual(v["sentence"], "gateway-bound: gregw gwa worker 0 at 97% of core 1")
        e = v["evidence"][0]
        self.assertEqual((e["what"], e["cpu"], e["pct"], e["allowance"]), ("gateway", 1, 97.0,
                                                                          100.0))
        self.assertEqual(v["hosts"], [{"name": "this machine", "verdict": "gateway",
                                       "budgeted_softirq": None}])

    def test_edge_of_the_allowance(self):
        at = judge(run(machine([(50, 0), (99, 0)], {101: (GWA, 95.0, 1)})))
        below = judge(run(machine([(50, 0), (99, 0)], {101: (GWA, 94.9, 1)})))
        self.assertEqual(at["verdict"], "gateway")
        # Core 1 saturated and the worker below its core: something else took the rest.
        self.assertEqual(below["verdict"], "unclear")
        self.assertIn("core 1 saturated by other work", below["sentence"])
        self.assertIn("does not measure the gateway", below["sentence"])

    def test_threads_sharing_a_core_hold_it_together(self):
        v = judge(run(machine([(40, 0), (99, 30)], {101: (GWA, 50, 1), 102: (GWA, 45, 1)})))
        self.assertEqual(v["verdict"], "gateway")
        self.assertIn("gregw gwa worker 0 and gregw gwa worker 1 together at 95% of core 1",
                      v["sentence"])

    def test_budget(self):
        budgets = {"101": {"share_pct": 20}}
        at = judge(run(machine([(40, 0), (30, 0)], {101: (GWA, 19.0, 0)}, budgets=budgets)))
        self.assertEqual(at["verdict"], "gateway")
        self.assertEqual(at["sentence"],
                         "gateway-bound: gregw gwa worker 0 at 95% of its 20% budget on core 0")
        below = judge(run(machine([(40, 0), (30, 0)], {101: (GWA, 18.98, 0)}, span=50,
                                  budgets=budgets)))
        self.assertEqual(below["verdict"], "unclear")
        self.assertIn("the gateway's busiest: gregw gwa worker 0 at 94% of its 20% budget",
                      below["sentence"])  # 94.9: rounded down, never read as at it
        self.assertEqual(below["evidence"][0]["use"], 94.9)

    def test_softirq_on_budgeted_cpus(self):
        budgets = {"101": {"share_pct": 20}}
        m = machine([(40, 12), (30, 5)], {101: (GWA, 19.0, 0), 201: (CLIENT, 20, 1)},
                    budgets=budgets)
        self.assertEqual(judge(run(m))["hosts"][0]["budgeted_softirq"],
                         {"cpus": {"0": 12.0}, "charged": True})
        m["facts"] = {"irq_time_accounting": True}
        self.assertFalse(judge(run(m))["hosts"][0]["budgeted_softirq"]["charged"])
        self.assertIsNone(judge(run(machine([(40, 12)], {101: (GWA, 19.0, 0)})))["hosts"][0][
            "budgeted_softirq"])

    def test_a_bad_budget_is_refused(self):
        for bad in (0, 101, "20", True, None):
            with self.assertRaises(verdict.BadBudget):
                judge(run(machine([(40, 0)], {101: (GWA, 19.0, 0)},
                                  budgets={"101": {"share_pct": bad}})))

    def test_softirq_counts_where_irq_time_is_apart(self):
        # A worker at 70% of core 1 whose softirq (27%) the kernel did not charge to it.
        apart = machine([(30, 0), (97, 27)], {101: (GWA, 70, 1)},
                        facts={"irq_time_accounting": True})
        charged = machine([(30, 0), (97, 27)], {101: (GWA, 70, 1)},
                          facts={"irq_time_accounting": False})
        self.assertEqual(judge(run(apart))["verdict"], "gateway")
        self.assertEqual(judge(run(charged))["verdict"], "unclear")


class Generator(unittest.TestCase):
    def test_client_at_its_core(self):
        v = judge(run(machine([(99, 10), (60, 0)], {201: (CLIENT, 98, 0), 101: (GWA, 60, 1)})))
        self.assertEqual(v["verdict"], "generator")
        self.assertEqual(v["sentence"], "measures the generator, not the gateway: "
                         "tunbed-traffic client at 98% of core 0")

    def test_budgeted_client(self):
        v = judge(run(machine([(40, 0), (60, 0)], {201: (CLIENT, 29, 0), 101: (GWA, 60, 1)},
                              budgets={"201": {"share_pct": 30}})))
        self.assertEqual(v["verdict"], "generator")
        self.assertIn("at 96% of its 30% budget on core 0", v["sentence"])  # 96.7

    def test_ceiling_edge(self):
        rec = run(machine([(40, 0), (40, 0)], {101: (GWA, 30, 1)}))
        at = judge(rec, bps=9e8, ceiling_bps=1e9)
        self.assertEqual(at["verdict"], "generator")
        self.assertIn("0.90 Gbit/s is 90% of the generator's own ceiling (1.00 Gbit/s through "
                      "route)", at["sentence"])
        self.assertEqual(judge(rec, bps=8.999e8, ceiling_bps=1e9)["verdict"], "unclear")
        self.assertEqual(judge(rec, bps=9e8)["verdict"], "unclear")  # no ceiling measured

    def test_generator_before_gateway(self):
        v = judge(run(machine([(99, 0), (99, 0)], {201: (CLIENT, 97, 0), 101: (GWA, 97, 1)})))
        self.assertEqual(v["verdict"], "generator")


class Link(unittest.TestCase):
    def test_cap_edge(self):
        rec = run(machine([(40, 0), (40, 0)], {101: (GWA, 30, 1)}))
        at = judge(rec, bps=9.5e8, cap_bps=1e9)
        self.assertEqual(at["verdict"], "link")
        self.assertEqual(at["sentence"], "measures the link, not the gateway: 0.95 Gbit/s is 95% "
                         "of the 1.00 Gbit/s rate cap")
        self.assertEqual(judge(rec, bps=9.499e8, cap_bps=1e9)["verdict"], "unclear")

    def test_link_before_generator(self):
        rec = run(machine([(99, 0), (40, 0)], {201: (CLIENT, 97, 0)}))
        self.assertEqual(judge(rec, bps=9.6e8, cap_bps=1e9, ceiling_bps=1e9)["verdict"], "link")


class Box(unittest.TestCase):
    def test_every_core_saturated_gateway_below(self):
        v = judge(run(machine([(99, 20), (98, 20)], {101: (GWA, 66, 0), 201: (CLIENT, 30, 0),
                                                     301: (SERVER, 60, 1)})))
        self.assertEqual(v["verdict"], "box")
        self.assertEqual(v["sentence"], "measures the box, not the gateway: every core saturated; "
                         "the gateway's busiest: gregw gwa worker 0 at 66% of core 0")

    def test_one_core_short_of_the_box(self):
        v = judge(run(machine([(99, 20), (94.9, 20)], {101: (GWA, 66, 0)})))
        self.assertEqual(v["verdict"], "unclear")

    def test_gateway_at_allowance_with_the_rest_saturated(self):
        v = judge(run(machine([(99, 0), (99, 0)], {101: (GWA, 96, 0), 201: (CLIENT, 60, 1)})))
        self.assertEqual(v["verdict"], "unclear")
        self.assertIn("gregw gwa worker 0 at 96% of core 0; core 1 saturated by other work",
                      v["sentence"])
        self.assertEqual(v["hosts"][0]["verdict"], "unclear")

    def test_nothing_at_a_limit(self):
        v = judge(run(machine([(40, 0), (30, 0)], {101: (GWA, 30, 0)})))
        self.assertEqual(v["verdict"], "unclear")
        self.assertEqual(v["hosts"][0]["verdict"], "none")


def two_hosts(gw_cpus, gw_pct, client_cpus, client_pct):
    """gw1 with gregw gwa's worker 0 on core 1, client1 with the client on core 0: judged."""
    return judge(run(machine(gw_cpus, {101: (GWA, gw_pct, 1)}, name="gw1"),
                     machine(client_cpus, {201: (CLIENT, client_pct, 0)}, name="client1")))


class Hosts(unittest.TestCase):
    def test_per_host(self):
        v = two_hosts([(20, 0), (97, 10)], 96, [(30, 0), (10, 0)], 30)
        self.assertEqual(v["verdict"], "gateway")
        self.assertEqual([(h["name"], h["verdict"]) for h in v["hosts"]],
                         [("gw1", "gateway"), ("client1", "none")])
        self.assertIn("gregw gwa worker 0 on gw1 at 96% of core 1", v["sentence"])

    def test_a_saturated_client_host_is_the_box(self):
        v = two_hosts([(20, 0), (60, 10)], 60, [(99, 30), (98, 30)], 60)
        self.assertEqual(v["verdict"], "box")
        self.assertIn("every core of client1 saturated", v["sentence"])
        self.assertIn("gregw gwa worker 0 on gw1 at 60% of core 1", v["sentence"])

    def test_other_host_saturated(self):
        v = two_hosts([(20, 0), (99, 10)], 97, [(99, 30), (40, 0)], 50)
        self.assertEqual(v["verdict"], "unclear")
        self.assertEqual([h["verdict"] for h in v["hosts"]], ["gateway", "unclear"])
        self.assertIn("core 0 of client1 saturated by other work", v["sentence"])


class Foreign(unittest.TestCase):
    def foreign(self, busy, watched, softirq=0, facts=None):
        m = machine([(busy, softirq), (busy, softirq)],
                    {101: (GWA, watched, 0), 102: (GWA, watched, 1)}, facts=facts)
        return judge(run(m))["foreign"][0]

    def test_busy_less_watched(self):
        f = self.foreign(80, 40)
        self.assertAlmostEqual(f["foreign_pct"], 40.0)
        self.assertTrue(f["flagged"])
        self.assertEqual(verdict.foreign_words([f]),
                         "processes tunbed did not start used 40% of this machine's CPU "
                         "(softirq 0% apart)")

    def test_threshold_edge(self):
        self.assertTrue(self.foreign(50, 40)["flagged"])
        self.assertFalse(self.foreign(49.9, 40)["flagged"])
        self.assertIsNone(verdict.foreign_words([self.foreign(49.9, 40)]))

    def test_softirq_kept_apart_where_accounted_apart(self):
        # 30% softirq: charged to the watched threads on this kernel, apart where IRQ time is.
        self.assertAlmostEqual(self.foreign(90, 50, 30)["foreign_pct"], 40.0)
        f = self.foreign(90, 50, 30, facts={"irq_time_accounting": True})
        self.assertAlmostEqual(f["foreign_pct"], 10.0)
        self.assertAlmostEqual(f["softirq_pct"], 30.0)


class Recorded(unittest.TestCase):
    def judged(self, name):
        with open(os.path.join(HERE, "data", name)) as f:
            r = records.read_record(MATRIX, json.load(f))
        return judge(r, r["traffic"]["tcp"]["bits_per_second"])

    def test_one_session_the_pair_shares_core_1(self):
        v = self.judged("run-gregw-s1.json")
        self.assertEqual(v["verdict"], "gateway")
        self.assertIn("gregw gwb worker 1 and gregw gwa worker 1 together at 97% of core 1",
                      v["sentence"])
        self.assertFalse(v["foreign_flagged"])

    def test_eight_sessions_the_box(self):
        v = self.judged("run-gregw-s8.json")
        self.assertEqual(v["verdict"], "box")
        self.assertTrue(v["sentence"].startswith("measures the box, not the gateway"))


if __name__ == "__main__":
    unittest.main()
