"""Unit tests of the bottleneck verdict (scripts/tunbedlib/verdict.py) on synthetic records: each
verdict, its edges (95.0% of a core against 94.9%, 90.0% of a budget against 89.9%, the 10% of
the generator's ceiling, the 5% of a rate cap), the order of the rules, budgets, IRQ time
accounted apart, hosts mode (per machine), the CPU of processes tunbed did not start with its
threshold; and the two recorded runs of data/ (1 session: the gateway pair's workers share core
1; 8 sessions: the box); and the matrix's report of those runs (kinds/matrix_verdict.py): each
point's verdict in the headline, the table and summary.json, in words where the figure is not
the gateway's, the generator's ceiling from route's runs of the same run, the topology's rate
cap from the record, budgets refused by the record's schema, the budgets' paragraph, repeats
wider than the run's noise flagged, the provenance line of every kind's report; the plot of
throughput against sessions (alone, and beside the RAS document's published shape), each point
hollow where the gateway did not limit it; in hosts mode each machine's verdict in the table."""

import copy
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import analysis, plots, records, render, verdict  # noqa: E402
from tunbedlib.kinds import matrix_plots, matrix_report, matrix_scaling  # noqa: E402
from tunbedlib.kinds import matrix_verdict  # noqa: E402
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
        self.assertEqual(v["sentence"], "gateway-bound: gregw gwa worker 0 at 97% of cpu1")
        e = v["evidence"][0]
        self.assertEqual((e["what"], e["cpu"], e["pct"], e["allowance"]), ("gateway", 1, 97.0,
                                                                          100.0))
        self.assertEqual(v["hosts"], [{"name": "this machine", "verdict": "gateway",
                                       "budgeted_softirq": None}])

    def test_edge_of_the_allowance(self):
        at = judge(run(machine([(50, 0), (99, 0)], {101: (GWA, 95.0, 1)})))
        below = judge(run(machine([(50, 0), (99, 0)], {101: (GWA, 94.9, 1)})))
        self.assertEqual(at["verdict"], "gateway")
        # cpu1 saturated and the worker below its core: something else took the rest.
        self.assertEqual(below["verdict"], "unclear")
        self.assertIn("cpu1 saturated by other work", below["sentence"])
        self.assertIn("does not measure the gateway", below["sentence"])

    def test_threads_sharing_a_core_hold_it_together(self):
        v = judge(run(machine([(40, 0), (99, 30)], {101: (GWA, 50, 1), 102: (GWA, 45, 1)})))
        self.assertEqual(v["verdict"], "gateway")
        self.assertIn("gregw gwa worker 0 and gregw gwa worker 1 together at 95% of cpu1",
                      v["sentence"])

    def test_budget(self):
        budgets = {"101": {"share_pct": 20}}
        # A budget is held from 90% of it (verdict.AT_BUDGET: a busy thread gets 94.5-97%).
        at = judge(run(machine([(40, 0), (30, 0)], {101: (GWA, 18.0, 0)}, budgets=budgets)))
        self.assertEqual(at["verdict"], "gateway")
        self.assertEqual(at["sentence"],
                         "gateway-bound: gregw gwa worker 0 at 90% of its 20% budget on cpu0")
        below = judge(run(machine([(40, 0), (30, 0)], {101: (GWA, 17.98, 0)}, span=50,
                                  budgets=budgets)))
        self.assertEqual(below["verdict"], "unclear")
        self.assertIn("the gateway's busiest: gregw gwa worker 0 at 89% of its 20% budget",
                      below["sentence"])  # 89.9: rounded down, never read as at it
        self.assertEqual(below["evidence"][0]["use"], 89.9)

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
                         "tunbed-traffic client at 98% of cpu0")

    def test_budgeted_client(self):
        v = judge(run(machine([(40, 0), (60, 0)], {201: (CLIENT, 29, 0), 101: (GWA, 60, 1)},
                              budgets={"201": {"share_pct": 30}})))
        self.assertEqual(v["verdict"], "generator")
        self.assertIn("at 96% of its 30% budget on cpu0", v["sentence"])  # 96.7

    def test_budgeted_client_process(self):
        # --client-cpu: the client process's threads hold its budget together, wherever each
        # ran; the CPU named is the one they ran on most.
        pb = {str(CLIENT): {"share_pct": 10}}
        m = machine([(40, 0), (60, 0)], {201: (CLIENT, 6, 0), 202: (CLIENT, 3, 1),
                                         101: (GWA, 30, 1)})
        m["process_budgets"] = pb
        v = judge(run(m))
        self.assertEqual(v["verdict"], "generator")
        self.assertIn("together at 90% of their 10% budget (mostly on cpu0)", v["sentence"])
        e = v["evidence"][0]
        self.assertEqual((e["what"], e["budgeted"], e["pct"], e["allowance"]),
                         ("generator", True, 9.0, 10.0))
        # Below it (89.9%): not the generator's; without the budget, far from a core.
        m = machine([(40, 0), (60, 0)], {201: (CLIENT, 5.99, 0), 202: (CLIENT, 3, 1),
                                         101: (GWA, 30, 1)}, span=100)
        m["process_budgets"] = pb
        self.assertEqual(judge(run(m))["verdict"], "unclear")
        m.pop("process_budgets")
        self.assertEqual(judge(run(m))["verdict"], "unclear")
        m["process_budgets"] = {str(CLIENT): {"share_pct": 0}}
        with self.assertRaises(verdict.BadBudget) as e:
            judge(run(m))
        self.assertIn("budget of process 200", str(e.exception))

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
        at = judge(rec, bps=9.0e8, cap_bps=1e9)
        self.assertEqual(at["verdict"], "link")
        self.assertEqual(at["sentence"], "measures the link, not the gateway: 0.90 Gbit/s is 90% "
                         "of the 1.00 Gbit/s rate cap")
        self.assertEqual(judge(rec, bps=8.999e8, cap_bps=1e9)["verdict"], "unclear")
        # Through GRE on a capped transit TCP's payload is 94% of the frames tbf counts.
        self.assertEqual(judge(rec, bps=9.4e8, cap_bps=1e9)["verdict"], "link")

    def test_link_before_generator(self):
        rec = run(machine([(99, 0), (40, 0)], {201: (CLIENT, 97, 0)}))
        self.assertEqual(judge(rec, bps=9.6e8, cap_bps=1e9, ceiling_bps=1e9)["verdict"], "link")


class Box(unittest.TestCase):
    def test_every_core_saturated_gateway_below(self):
        v = judge(run(machine([(99, 20), (98, 20)], {101: (GWA, 66, 0), 201: (CLIENT, 30, 0),
                                                     301: (SERVER, 60, 1)})))
        self.assertEqual(v["verdict"], "box")
        self.assertEqual(v["sentence"], "measures the box, not the gateway: every core saturated; "
                         "the gateway's busiest: gregw gwa worker 0 at 66% of cpu0")

    def test_one_core_short_of_the_box(self):
        v = judge(run(machine([(99, 20), (94.9, 20)], {101: (GWA, 66, 0)})))
        self.assertEqual(v["verdict"], "unclear")

    def test_gateway_at_allowance_with_the_rest_saturated(self):
        v = judge(run(machine([(99, 0), (99, 0)], {101: (GWA, 96, 0), 201: (CLIENT, 60, 1)})))
        self.assertEqual(v["verdict"], "unclear")
        self.assertIn("gregw gwa worker 0 at 96% of cpu0; cpu1 saturated by other work",
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
        self.assertIn("gregw gwa worker 0 at 96% of gw1:cpu1", v["sentence"])

    def test_a_saturated_client_host_is_the_box(self):
        v = two_hosts([(20, 0), (60, 10)], 60, [(99, 30), (98, 30)], 60)
        self.assertEqual(v["verdict"], "box")
        self.assertIn("every core of client1 saturated", v["sentence"])
        self.assertIn("gregw gwa worker 0 at 60% of gw1:cpu1", v["sentence"])

    def test_each_hosts_verdict_in_the_table(self):
        # Hosts mode: a point's cell names each machine's verdict; one machine's has none.
        v = two_hosts([(20, 0), (97, 10)], 96, [(30, 0), (10, 0)], 30)
        runs = [{"key": "k", "repeat": 1, "verdict": v["verdict"],
                 "verdict_reason": v["sentence"],
                 "verdict_hosts": [{"name": h["name"], "verdict": h["verdict"]}
                                   for h in v["hosts"]]}]
        summary = matrix_verdict.judge_points({"k": {"median_repeat": 1}}, runs)
        self.assertEqual(matrix_verdict.cell(summary["k"]),
                         "gateway; per host: gw1 gateway, client1 none")
        runs[0]["verdict_hosts"] = None
        summary = matrix_verdict.judge_points({"k": {"median_repeat": 1}}, runs)
        self.assertEqual(matrix_verdict.cell(summary["k"]), "gateway")

    def test_other_host_saturated(self):
        v = two_hosts([(20, 0), (99, 10)], 97, [(99, 30), (40, 0)], 50)
        self.assertEqual(v["verdict"], "unclear")
        self.assertEqual([h["verdict"] for h in v["hosts"]], ["gateway", "unclear"])
        self.assertIn("client1:cpu0 saturated by other work", v["sentence"])


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

    def test_a_kernel_gateways_softirq_is_kept_apart(self):
        # No gateway process (route, vxlan): its work is softirq, in ksoftirqd too, not another
        # process's; kept apart as where IRQ time is accounted apart.
        m = machine([(90, 30), (90, 30)], {201: (CLIENT, 50, 0), 301: (SERVER, 50, 1)},
                    processes={str(CLIENT): "tunbed-traffic client",
                               str(SERVER): "tunbed-traffic server"})
        f = judge(run(m))["foreign"][0]
        self.assertAlmostEqual(f["foreign_pct"], 10.0)
        self.assertAlmostEqual(f["softirq_pct"], 30.0)
        m["processes"] = PROCESSES  # with gregw there: counted
        self.assertAlmostEqual(judge(run(m))["foreign"][0]["foreign_pct"], 40.0)

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
        self.assertIn("gregw gwb worker 1 and gregw gwa worker 1 together at 97% of cpu1",
                      v["sentence"])
        self.assertFalse(v["foreign_flagged"])

    def test_eight_sessions_the_box(self):
        v = self.judged("run-gregw-s8.json")
        self.assertEqual(v["verdict"], "box")
        self.assertTrue(v["sentence"].startswith("measures the box, not the gateway"))


def recorded(name, **change):
    """A recorded run of data/ as the runner reads it (today's format), with changes."""
    with open(os.path.join(HERE, "data", name)) as f:
        return dict(records.read_record(MATRIX, json.load(f)), **change)


def as_route(rec, bps):
    """rec as a run of the kernel's route at the same sessions, MTU and pattern, at bps."""
    r = copy.deepcopy(rec)
    r["point"].update(gateway="route", mode="-", workers=0, config="route",
                      key=r["point"]["key"].replace("gregw-gre-w2", "route---w0"))
    r["traffic"]["tcp"]["bits_per_second"] = bps
    r["hosts"][0]["processes"] = {}
    return r


def cheap_save(fig, outdir, name):
    from tunbedlib.plots import plt
    plt.close(fig)
    return "<svg/>"


class Report(unittest.TestCase):
    """The matrix's report of stored runs says what limited each figure."""

    def report(self, recs):
        res = matrix_report.analyse(recs, {"notes": [], "topology": "ras"})
        return res, matrix_report.document(res)

    def test_stored_runs(self):
        res, doc = self.report([recorded("run-gregw-s1.json"), recorded("run-gregw-s8.json")])
        s1, s8 = (res.summary[f"gregw-gre-w2-mtu0-push-s{n}"] for n in (1, 8))
        self.assertEqual((s1["verdict"], s8["verdict"]), ("gateway", "box"))
        self.assertEqual(s8["verdicts"], {"box": 1})
        self.assertTrue(doc.headline[0].endswith(
            "; gateway-bound: gregw gwb worker 1 and gregw gwa worker 1 together at 97% of "
            "cpu1"), doc.headline[0])
        self.assertIn("; measures the box, not the gateway: every core saturated; ",
                      doc.headline[1])
        table = doc.sections[0].table
        col = table.header.index("limited by")
        self.assertEqual([row[col] for row in table.rows],
                         ["gateway", "box: measures the box, not the gateway"])
        with tempfile.TemporaryDirectory() as d:
            with mock.patch.object(plots, "save", cheap_save):
                render.write_all(d, doc)
            with open(os.path.join(d, "report.md")) as f:
                md = f.read()
            with open(os.path.join(d, "summary.json")) as f:
                summary = json.load(f)
        self.assertIn("| box: measures the box, not the gateway |", md)
        self.assertIn("measures the box, not the gateway: every core saturated", md)
        self.assertEqual([r["verdict"] for r in summary["runs"]], ["gateway", "box"])

    def test_route_is_the_generators_ceiling(self):
        # gregw's 0.62 Gbit/s is 95% of route's 0.65 at the same point: the generator's;
        # route's own run is judged by its CPU alone.
        s1 = recorded("run-gregw-s1.json")
        res, doc = self.report([as_route(s1, 0.65e9), s1])
        gregw = res.summary["gregw-gre-w2-mtu0-push-s1"]
        self.assertEqual(gregw["verdict"], "generator")
        self.assertIn("of the generator's own ceiling (0.65 Gbit/s through route)",
                      gregw["verdict_reason"])
        self.assertEqual(res.runs[0]["ceiling_bps"], None)
        self.assertEqual(res.runs[1]["ceiling_bps"], 0.65e9)
        peers = doc.sections[1].table
        self.assertIn("generator: measures the generator, not the gateway",
                      peers.rows[1][peers.header.index("limited by")])
        # At another session count route is no ceiling.
        res, _ = self.report([as_route(recorded("run-gregw-s8.json"), 0.65e9), s1])
        self.assertEqual(res.summary["gregw-gre-w2-mtu0-push-s1"]["verdict"], "gateway")

    def test_rate_cap_of_the_record(self):
        res, _ = self.report([recorded("run-gregw-s1.json", rate_cap_bps=0.64e9)])
        s = res.summary["gregw-gre-w2-mtu0-push-s1"]
        self.assertEqual(s["verdict"], "link")
        self.assertEqual(res.runs[0]["rate_cap_bps"], 0.64e9)

    def test_budgets_in_the_report(self):
        # The stored 1-session run as if gwa's worker 1 had a 50% budget: at 86% of it (43% of
        # core 1), below its budget; the paragraph says what the budgets were.
        rec = recorded("run-gregw-s1.json")
        rec["hosts"][0]["budgets"] = {"21714": {"share_pct": 50, "cpu": 1}}
        res, doc = self.report([rec])
        self.assertNotEqual(res.runs[0]["verdict"], "gateway")  # 86% of its budget
        self.assertEqual(res.runs[0]["budgeted_softirq"],
                         [{"cpus": {"1": 37.3}, "charged": True, "host": "this machine"}])
        self.assertEqual([p for p in doc.paragraphs if p.startswith("Emulated")], [])
        doc = matrix_report.document(
            matrix_report.analyse([rec], {"notes": [], "gateway_cpu": 50}), plots=[])
        para = [p for p in doc.paragraphs if p.startswith("Emulated cores")]
        self.assertEqual(len(para), 1)
        self.assertIn("each gateway thread had 50% of one core", para[0])
        self.assertIn("Softirq on the budgeted threads' CPUs: 37.3% of a CPU (median)", para[0])
        # The generator's budget, alone or with the gateway's.
        for meta, first in (({"client_cpu": 5}, "The generator was budgeted"),
                            ({"gateway_cpu": 50, "client_cpu": 5}, "Emulated cores")):
            doc = matrix_report.document(
                matrix_report.analyse([rec], {"notes": []} | meta), plots=[])
            para = [p for p in doc.paragraphs if p.startswith(first)]
            self.assertEqual(len(para), 1)
            self.assertIn("each traffic client process had 5% of one core for all its threads "
                          "together", para[0])

    def test_repeats_wider_than_the_noise(self):
        # Three points of three repeats: 2% and 4% wide, and one 40% wide, past twice the
        # run's noise floor (the median, 4%).
        recs = []
        for rec, spread in ((recorded("run-gregw-s1.json"), (1.0, 1.01, 0.99)),
                            (recorded("run-gregw-s8.json"), (1.0, 1.02, 0.98)),
                            (as_route(recorded("run-gregw-s1.json"), 0), (1.0, 1.2, 0.8))):
            for i, f in enumerate(spread):
                r = copy.deepcopy(rec)
                r["repeat"], r["started"] = i + 1, i
                r["traffic"]["tcp"]["bits_per_second"] = 1e9 * f
                recs.append(r)
        res, doc = self.report(recs)
        self.assertAlmostEqual(res.noise_floor, 4.0)
        self.assertEqual([k for k, s in res.summary.items() if s["spread_flagged"]],
                         ["route---w0-mtu0-push-s1"])
        self.assertEqual(doc.headline[-1], "repeats spread wider than this run's noise (route, "
                         "1 session: 40%, against a noise floor of 4.0%, the median of every "
                         "point's (max - min) / median): those figures are not to be trusted")
        self.assertEqual(doc.summary["noise_floor_pct"], res.noise_floor)
        # Two points cannot make an outlier of one: their median is their mean.
        res, doc = self.report([r for r in recs if r["point"]["gateway"] == "gregw"])
        self.assertFalse(any(s["spread_flagged"] for s in res.summary.values()))
        self.assertFalse(any(line.startswith("repeats spread") for line in doc.headline))

    def test_scaling_with_workers(self):
        # The stored runs as 1 and 2 workers at 1 and 8 sessions: 2 workers carry 1.5x one
        # at 8 sessions (efficiency 0.75) and as much at 1 (0.50).
        recs = []
        for name, workers, bps in (("run-gregw-s1.json", 1, 1e9), ("run-gregw-s8.json", 1, 2e9),
                                   ("run-gregw-s1.json", 2, 1e9), ("run-gregw-s8.json", 2, 3e9)):
            r = recorded(name)
            r["point"] = dict(r["point"], workers=workers, config=f"gregw gre {workers}w",
                              key=r["point"]["key"].replace("-w2-", f"-w{workers}-"))
            r["traffic"]["tcp"]["bits_per_second"] = bps
            recs.append(r)
        res, doc = self.report(recs)
        sec = [x for x in doc.sections if x.id == "scaling"]
        self.assertEqual(len(sec), 1)
        rows = {(r[1], r[2]): r for r in sec[0].table.rows}
        self.assertEqual(rows[("8", "2")][3:6], ["3.00", "1.50", "0.75"])
        self.assertEqual(rows[("1", "2")][5], "0.50")
        self.assertEqual(rows[("1", "1")][5], "1.00")
        # cores per Gbit/s: the gateway's CPU-s per GB over 8.
        s = res.summary["gregw-gre-w1-mtu0-push-s1"]
        self.assertEqual(rows[("1", "1")][6], f"{s['gateway_cpu_s_per_gb']['median'] / 8:.2f}")
        # The plot beside the RAS document's shape: a line per worker count.
        shape = matrix_scaling.ras_shape(res.points, res.summary, matrix_verdict.SHORT.get)
        self.assertEqual([line[:2] for line in shape["lines"]],
                         [(0, "gregw gre 1w"), (1, "gregw gre 2w")])
        # One worker count: no section.
        _, doc = self.report(recs[:2])
        self.assertEqual([x for x in doc.sections if x.id == "scaling"], [])

    def test_the_per_core_plot_names_the_threads(self):
        # The stored 1-session run: cpu1 used by the pair's workers 1, cpu0 by the server;
        # each core's busy stacked by them, the rest other; the 95% line labelled beside the
        # panels and in the legend, which is outside them.
        rec = recorded("run-gregw-s1.json")
        kept = {}

        def keep(fig, outdir, name):
            kept[name] = fig
            return "<svg/>"
        with mock.patch.object(plots, "save", keep):
            matrix_plots.cores(None, "cores-x", rec, "t")
        fig = kept["cores-x"]
        ax0, ax1 = fig.axes
        self.assertEqual([ax.get_ylabel() for ax in fig.axes], ["cpu0 %", "cpu1 %"])
        stacked = [[c.get_label() for c in ax.collections if not c.get_label().startswith("_")]
                   for ax in fig.axes]
        self.assertEqual(stacked, [["tunbed-traffic server", "other"],
                                   ["gregw gwb worker 1", "gregw gwa worker 1", "other"]])
        # The stack is the core's busy, interval by interval.
        host = rec["hosts"][0]
        samples, hz = analysis.aligned(host)
        busy = [s["1"]["busy"] for _, s in analysis.timeline(samples)]
        who = [row["1"] for _, row in analysis.thread_timeline(samples, hz, host)]
        for b, w in zip(busy, who):
            self.assertAlmostEqual(sum(w.values()), b, places=6)
        self.assertGreater(sum(w["gregw gwb worker 1"] + w["gregw gwa worker 1"] for w in who)
                           / sum(busy), 0.9)
        # The 95% line: red, dashed, at 95 in both; its words right of the last column.
        for ax in fig.axes:
            self.assertIn(95.0, [line.get_ydata()[0] for line in ax.get_lines()])
            self.assertIsNone(ax.get_legend())
        self.assertEqual([(t.get_text(), t.get_position()[1]) for t in ax1.texts],
                         [("saturated, 95%", 95.0)])
        legend, = fig.legends
        self.assertEqual([t.get_text() for t in legend.get_texts()],
                         ["gregw gwb worker 1", "gregw gwa worker 1", "tunbed-traffic server",
                          "other (the kernel, processes not watched)", "saturated, 95%"])
        fig.canvas.draw()
        right = max(ax.get_window_extent().x1 for ax in fig.axes)
        self.assertGreater(legend.get_window_extent().x0,
                           max(t.get_window_extent().x1 for t in ax1.texts))
        self.assertGreater(ax1.texts[0].get_window_extent().x0, right)
        plots.plt.close(fig)

    def test_the_ras_shape_plot(self):
        # The stored runs, 1 session gateway-bound and 8 the box's: a line of two points, the
        # second hollow, and the document's two points, its "many" at the run's 8 sessions.
        res, doc = self.report([recorded("run-gregw-s1.json"), recorded("run-gregw-s8.json")])
        self.assertEqual([p.name for p in doc.plots][:4],
                         ["throughput", "scaling", "cost", "latency"])
        shape = matrix_scaling.ras_shape(res.points, res.summary, matrix_verdict.SHORT.get)
        s1, s8 = (res.summary[f"gregw-gre-w2-mtu0-push-s{n}"]["bits_per_second"]
                  for n in (1, 8))
        self.assertEqual(shape["sessions"], [1, 8])
        self.assertEqual(shape["lines"], [(0, "gregw gre 2w", [
            (1, s1["median"], s1["min"], s1["max"], "gateway"),
            (8, s8["median"], s8["min"], s8["max"], "box")])])
        one = "1 session: 0.4-0.5 Gbit/s, one core saturated"
        many = ("many sessions: 2.0 Gbit/s, every core at 100% (the document gives no count: "
                "drawn at 8)")
        self.assertEqual(shape["published"], [(1, 0.4e9, 0.5e9, one), (8, 2.0e9, 2.0e9, many)])
        label = "hollow: not gateway-bound (box: measures the box, not the gateway)"
        self.assertEqual(shape["not_gateway"], label)
        published = "Windows Server 1709 RAS Gateway, GRE, 10-core VMs (published)"
        with tempfile.TemporaryDirectory() as d:
            svg = matrix_plots.ras_shape(d, shape)
            for ext in ("png", "svg"):
                self.assertTrue(os.path.getsize(os.path.join(d, "plots", f"scaling.{ext}")))
        # The text as written (matplotlib's SVG keeps each text in a comment).
        for text in (published, label, one, many, "gregw gre 2w"):
            self.assertIn(f"<!-- {text} -->", svg)
        # What is drawn: the 8-session point hollow, the 1-session one not; the published
        # points black stars at 1 and 8; sessions on a log-2 axis.
        kept = {}

        def keep(fig, outdir, name):
            kept[name] = fig
            return "<svg/>"
        with mock.patch.object(plots, "save", keep):
            matrix_plots.ras_shape(None, shape)
        ax = kept["scaling"].axes[0]
        lines = ax.get_lines()
        hollow = [list(x.get_xdata()) for x in lines
                  if x.get_markerfacecolor() == "white" and len(x.get_xdata())]
        self.assertEqual(hollow, [[8]])
        stars = [x for x in lines if x.get_label() == published]
        self.assertEqual([list(x.get_xdata()) for x in stars], [[1, 8]])
        self.assertEqual([list(x.get_ydata()) for x in stars], [[0.45, 2.0]])
        self.assertEqual([t.get_text() for t in ax.get_legend().get_texts()],
                         ["gregw gre 2w", published, label])
        self.assertEqual((ax.get_xscale(), list(ax.get_xticks())), ("log", [1, 8]))
        plots.plt.close(kept["scaling"])
        # The plain throughput plot marks them the same way.
        with mock.patch.object(plots, "save", keep):
            matrix_plots.throughput(None, res.points, res.summary, matrix_verdict.SHORT.get)
        ax = kept["throughput"].axes[0]
        self.assertEqual([list(x.get_xdata()) for x in ax.get_lines()
                          if x.get_markerfacecolor() == "white" and len(x.get_xdata())], [[8]])
        self.assertEqual([t.get_text() for t in ax.get_legend().get_texts()],
                         ["gregw gre 2w", label])
        plots.plt.close(kept["throughput"])
        # Every point gateway-bound: nothing hollow, no such legend entry.
        for s in res.summary.values():
            s["verdict"] = "gateway"
        shape = matrix_scaling.ras_shape(res.points, res.summary, matrix_verdict.SHORT.get)
        self.assertIsNone(shape["not_gateway"])
        # One session count: no such plot, the others as they were.
        res, doc = self.report([recorded("run-gregw-s1.json")])
        self.assertIsNone(matrix_scaling.ras_shape(res.points, res.summary,
                                                   matrix_verdict.SHORT.get))
        self.assertEqual([p.name for p in doc.plots],
                         ["throughput", "cost", "latency", "cores-gregw-gre-w2-mtu0-push-s1"])

    def test_provenance_in_every_report(self):
        meta = {"started_utc": "2026-12-03T13:32:05+00:00", "provenance": {
            "command": ["tunbed", "ras", "--gateway-cpu", "20"], "commit": "a3553ce01234567",
            "changed": True, "build_id": "33cd527cefae",
            "machine": {"cpus": 2, "cpu_model": "AMD <EPYC>", "memory_bytes": 4 * 2**30,
                        "kernel": "6.1.0-18-amd64"}}}
        want = ("Run started 2026-12-03T13:32:05+00:00 (UTC): `tunbed ras --gateway-cpu 20`, "
                "commit a3553ce01234 with uncommitted changes, build 33cd527cefae; machine: 2 "
                "CPUs (AMD <EPYC>), 4.0 GiB, Linux 6.1.0-18-amd64.")
        doc = matrix_report.document(matrix_report.analyse(
            [recorded("run-gregw-s1.json")], dict(meta, notes=[])), plots=[])
        self.assertIn(f"\n{want}\n\n{doc.footer}\n", render.markdown(doc))
        self.assertIn("<p id=\"provenance\">Run started 2026-12-03T13:32:05+00:00 (UTC): <code>"
                      "tunbed ras --gateway-cpu 20</code>, commit a3553ce01234 with uncommitted "
                      "changes, build 33cd527cefae; machine: 2 CPUs (AMD &lt;EPYC&gt;), 4.0 GiB, "
                      "Linux 6.1.0-18-amd64.</p>", render.page(doc))
        # Any kind's: the smoke kind's document, and none for a run from before provenance.
        from tunbedlib.kinds import smoke
        doc = smoke.KIND.report(dict(meta, scenario="smoke"), [{"point": {"key": "route-s1"},
                                "traffic": {"tcp": {"bits_per_second": 1e9}}}], True)
        self.assertIn(want, render.markdown(doc))
        doc.summary["meta"].pop("provenance")
        self.assertNotIn("Run started", render.markdown(doc))

    def test_budgets_in_a_record_are_checked(self):
        with open(os.path.join(HERE, "data", "run-gregw-s1.json")) as f:
            doc = records.read_record(MATRIX, json.load(f))
        doc["hosts"][0]["budgets"] = {"123": {"share_pct": 20, "period_us": 5000,
                                              "quota_us": 1000, "cpu": 0}}
        records.read_record(MATRIX, dict(doc, format=MATRIX.FORMAT))
        for bad, field in (({"123": {"share_pct": 0}}, "share_pct"),
                           ({"x": {"share_pct": 20}}, "x")):
            doc["hosts"][0]["budgets"] = bad
            with self.assertRaises(records.FormatError) as e:
                records.read_record(MATRIX, dict(doc, format=MATRIX.FORMAT))
            self.assertIn("budgets", str(e.exception))
            self.assertIn(field, str(e.exception))
        doc["hosts"][0]["budgets"] = {}
        doc["hosts"][0]["process_budgets"] = {"200": {"share_pct": 5, "period_us": 20000,
                                                      "quota_us": 1000}}
        records.read_record(MATRIX, dict(doc, format=MATRIX.FORMAT))
        doc["hosts"][0]["process_budgets"] = {"200": {"share_pct": 500}}
        with self.assertRaises(records.FormatError) as e:
            records.read_record(MATRIX, dict(doc, format=MATRIX.FORMAT))
        self.assertIn("process_budgets", str(e.exception))


if __name__ == "__main__":
    unittest.main()
