"""Unit tests of the runner (scripts/tunbedlib) on recorded data: statistics of repeats,
per-core shares, saturation and its attribution, CPU-seconds per GB, scenario files good and
bad, the wire audit's summary, the format of result files, the report's order and writers, what
drivers say of themselves. The two records in data/ are real runs of gregw on ras.topo (1 and 8
sessions, 3 s), in format 1 (no format field); wire-gregw-seq-2w-64s.json is tunbed-wire's
document of a real run (gregw gre+seq, 2 workers, 64 sessions)."""

import csv
import html
import json
import os
import signal
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import analysis, document, drivers, inventory, records, render  # noqa: E402
from tunbedlib import machine, scenario  # noqa: E402
from tunbedlib import bed as beds  # noqa: E402
from tunbedlib.drivers import contract, vpn  # noqa: E402
from tunbedlib.kinds import matrix, matrix_baselines  # noqa: E402
from tunbedlib.schema import Bad  # noqa: E402
from tunbedlib.kinds import matrix_point as point, matrix_report as report  # noqa: E402
from tunbedlib.kinds.base import Item  # noqa: E402
from tunbedlib.kinds.matrix import KIND as MATRIX  # noqa: E402


def record(name):
    with open(os.path.join(HERE, "data", name)) as f:
        return json.load(f)


def upgraded(name):
    """A recorded run as the runner reads it (records.py converts it to today's layout)."""
    return records.read_record(MATRIX, record(name))


class Statistics(unittest.TestCase):
    def test_spread(self):
        self.assertEqual(analysis.spread([3, 1, 2]), {"median": 2, "min": 1, "max": 3, "n": 3})
        self.assertEqual(analysis.spread([4, 1]), {"median": 2.5, "min": 1, "max": 4, "n": 2})
        self.assertEqual(analysis.spread([None, 5])["n"], 1)
        self.assertIsNone(analysis.spread([]))

    def test_cpu_per_gb(self):
        self.assertAlmostEqual(analysis.cpu_per_gb(3.0, 1.5e9), 2.0)
        self.assertIsNone(analysis.cpu_per_gb(3.0, 0))

    def test_summarise_picks_the_median_run(self):
        runs = [{"key": "k", "repeat": i, "bits_per_second": b, "complete": True,
                 "retransmits": 0, "jain": 1, "box_cpu_s_per_gb": 1, "gateway_cpu_s_per_gb": None,
                 "rr_idle_p50_ms": None, "rr_load_p50_ms": None, "rr_load_p99_ms": None,
                 "saturated": [{"cpu": i}]} for i, b in ((1, 5e8), (2, 9e8), (3, 7e8))]
        s = analysis.summarise(runs)["k"]
        self.assertEqual(s["bits_per_second"], {"median": 7e8, "min": 5e8, "max": 9e8, "n": 3})
        self.assertEqual(s["median_repeat"], 3)
        self.assertEqual(s["saturated"], [{"cpu": 3}])
        self.assertIsNone(s["gateway_cpu_s_per_gb"])


class Cores(unittest.TestCase):
    def test_shares_add_up(self):
        a = {"0": dict(user=100, nice=0, system=100, idle=800, iowait=0, irq=0, softirq=0, steal=0)}
        b = {"0": dict(user=150, nice=0, system=200, idle=800, iowait=0, irq=0, softirq=50, steal=0)}
        s = analysis.core_shares(a, b)["0"]
        self.assertAlmostEqual(s["busy"], 100.0)
        self.assertAlmostEqual(s["user"], 25.0)
        self.assertAlmostEqual(s["softirq"], 25.0)
        self.assertAlmostEqual(sum(v for k, v in s.items() if k != "busy"), 100.0)

    def test_recorded_shares_add_up(self):
        for name in ("run-gregw-s1.json", "run-gregw-s8.json"):
            res = analysis.analyse(upgraded(name))
            for c, s in res["cores"].items():
                self.assertAlmostEqual(sum(v for k, v in s.items() if k != "busy"), 100.0,
                                       places=6, msg=f"{name} cpu{c}")
                self.assertAlmostEqual(s["busy"], 100 - s["idle"] - s["iowait"], places=6)

    def test_window_follows_the_traffic(self):
        r = upgraded("run-gregw-s1.json")
        tr = r["traffic"]
        samples = r["hosts"][0]["cpu"]["samples"]
        w = analysis.window(samples, tr["measure_start_mono_s"], tr["measure_end_mono_s"])
        self.assertLessEqual(w[0]["t"], tr["measure_start_mono_s"])
        self.assertGreaterEqual(w[-1]["t"], tr["measure_end_mono_s"] - 0.25)
        self.assertLess(len(w), len(samples))


class Saturation(unittest.TestCase):
    def test_one_session_one_core(self):
        res = analysis.analyse(upgraded("run-gregw-s1.json"))
        sat = res["saturated"]
        self.assertEqual([s["cpu"] for s in sat], [1])
        names = [n for n, _ in sat[0]["by"]]
        self.assertEqual(set(names[:2]), {"gregw gwa worker 1", "gregw gwb worker 1"})
        words = analysis.saturation_words(sat)
        self.assertTrue(words.startswith("cpu1 saturated by gregw gw"), words)
        self.assertIn("softirq", words)

    def test_eight_sessions_every_core(self):
        res = analysis.analyse(upgraded("run-gregw-s8.json"))
        self.assertEqual([s["cpu"] for s in res["saturated"]], [0, 1])

    def test_threshold(self):
        cores = {"0": {"busy": 94.9, "user": 0, "system": 0, "softirq": 0},
                 "1": {"busy": 95.0, "user": 10, "system": 80, "softirq": 5}}
        sat = analysis.saturation(cores, {}, 1.0, {})
        self.assertEqual([s["cpu"] for s in sat], [1])
        self.assertEqual(analysis.saturation_words(sat),
                         "cpu1 saturated by the kernel (softirq 5%, sys 80%, user 10%)")
        self.assertEqual(analysis.saturation_words([]), "no core saturated")

    def test_attribution_by_core(self):
        # Two samples one second apart: thread 7 ran 0.9 s on cpu1, thread 8 0.5 s on cpu0.
        samples = [{"t": 0.0, "cpus": {}, "threads": {"7": [1, "gregw", 0, 1], "8": [2, "x", 0, 0]}},
                   {"t": 1.0, "cpus": {}, "threads": {"7": [1, "gregw", 90, 1], "8": [2, "x", 50, 0]}}]
        threads = analysis.thread_cpu(samples, 100)
        self.assertAlmostEqual(threads["7"]["cores"]["1"], 0.9)
        rec = {"thread_labels": {"7": "gregw gwa worker 1"}, "processes": {"2": "tunbed-traffic server"}}
        cores = {"1": {"busy": 99, "user": 1, "system": 90, "softirq": 8},
                 "0": {"busy": 99, "user": 1, "system": 90, "softirq": 8}}
        sat = analysis.saturation(cores, threads, 1.0, rec)
        self.assertEqual(sat[1]["by"], [("gregw gwa worker 1", 90)])
        self.assertEqual(sat[0]["by"], [("tunbed-traffic server (x)", 50)])


    def test_who_used_each_core(self):
        # One second, cpu1 90% busy: thread 7 ran 0.6 s on it, thread 9 0.6 s (it moved
        # there at the end: more than the core held, so both are scaled to its 90%), thread 8
        # 0.02 s (under 5% of the core's busy: other). cpu0 idle, no thread.
        def stat(busy):
            return {"user": busy, "nice": 0, "system": 0, "idle": 100 - busy, "iowait": 0,
                    "irq": 0, "softirq": 0, "steal": 0}
        zero = dict.fromkeys(stat(0), 0)
        samples = [{"t": 0.0, "cpus": {"0": zero, "1": zero},
                    "threads": {"7": [1, "gregw", 0, 1], "8": [2, "x", 0, 1],
                                "9": [3, "y", 0, 0]}},
                   {"t": 1.0, "cpus": {"0": stat(0), "1": stat(90)},
                    "threads": {"7": [1, "gregw", 60, 1], "8": [2, "x", 2, 1],
                                "9": [3, "y", 60, 1]}}]
        host = {"thread_labels": {"7": "gregw gwa worker 1"},
                "processes": {"2": "tunbed-traffic server", "3": "tunbed-traffic client"}}
        (t, row), = analysis.thread_timeline(samples, 100, host)
        self.assertEqual(t, 1.0)
        self.assertEqual(row["0"], {"other": 0.0})
        self.assertEqual(set(row["1"]), {"gregw gwa worker 1", "tunbed-traffic client (y)",
                                         "other"})
        self.assertAlmostEqual(row["1"]["gregw gwa worker 1"], 45.0)
        self.assertAlmostEqual(row["1"]["tunbed-traffic client (y)"], 45.0)
        self.assertAlmostEqual(row["1"]["other"], 0.0)
        # At most `most` threads a core, the busiest: the rest is other.
        samples[1]["threads"]["9"][2] = 50
        (_, row), = analysis.thread_timeline(samples, 100, host, most=1)
        self.assertEqual(row["1"], {"gregw gwa worker 1": 60.0, "other": 30.0})


class Cost(unittest.TestCase):
    def test_recorded_cost(self):
        r = upgraded("run-gregw-s1.json")
        res = analysis.analyse(r)
        tr = r["traffic"]["tcp"]
        # Bytes over the measured time is the throughput the generator reported.
        self.assertAlmostEqual(res["bytes"] * 8 / res["measured_s"], tr["bits_per_second"],
                               delta=tr["bits_per_second"] * 1e-6)
        self.assertAlmostEqual(res["box_cpu_s_per_gb"], res["box_cpu_s"] / (res["bytes"] / 1e9))
        self.assertGreater(res["box_cpu_s_per_gb"], res["gateway_cpu_s_per_gb"])
        # Two cores for 3 s: the box cannot have spent more than 6 CPU-seconds.
        self.assertLessEqual(res["box_cpu_s"], 2 * res["measured_s"] + 1e-6)


class Wire(unittest.TestCase):
    def test_summary_of_a_recorded_audit(self):
        doc = record("wire-gregw-seq-2w-64s.json")
        w = analysis.wire_summary(doc)
        tcp = doc["directions"][0]["tcp"]
        self.assertEqual(w["tunnel_frames"], 340359)
        self.assertEqual((w["violation_frames"], w["violations"], w["capture_dropped"]), (0, {}, 0))
        # Both directions' sequence numbers count; the overhead is the data direction's.
        self.assertEqual(w["seq_frames"], 249420 + 90939)
        self.assertEqual(w["seq_reordered"], 45225 + 5895)
        self.assertEqual(w["data_dir"], "local_to_remote")
        self.assertAlmostEqual(w["overhead_pct"], doc["directions"][0]["overhead_pct"])
        self.assertAlmostEqual(w["tcp_retransmitted_pct"], 100 * 491384 / 353570344)
        self.assertAlmostEqual(w["tcp_late_pct"], 100 * 5366292 / 353570344)
        self.assertAlmostEqual(w["tcp_resent_pct"], 100 * 5366292 / 353570344)
        self.assertEqual(w["tcp_reordered_pct"], 0)
        # New and twice-sent bytes make up all the payload; late bytes are new ones.
        self.assertEqual(tcp["new_bytes"] + tcp["retransmitted_bytes"], tcp["payload_bytes"])
        self.assertLessEqual(tcp["late_resent_bytes"], tcp["late_bytes"])
        self.assertLessEqual(tcp["late_bytes"], tcp["new_bytes"])
        self.assertIsNone(analysis.wire_summary(None))

    def test_data_direction(self):
        # Pattern pull: the data runs gwb -> gwa, the second direction; the TCP figures and the
        # overhead are taken from it, not from the client's few bytes the other way.
        doc = record("wire-gregw-seq-2w-64s.json")
        push = analysis.wire_summary(doc)
        a, b = doc["directions"]
        for k in set(a) - {"name", "src", "dst"}:
            a[k], b[k] = b[k], a[k]
        pull = analysis.wire_summary(doc)
        self.assertEqual(pull["data_dir"], "remote_to_local")
        for k in ("overhead_pct", "tcp_retransmitted_pct", "tcp_late_pct", "tcp_resent_pct",
                  "tcp_reordered_pct"):
            self.assertEqual(pull[k], push[k], k)

    def test_inner_ipv6_late_data_is_unresolved(self):
        # No inner IPv4 identification: late data cannot be split into lost upstream and
        # reordered. Both are unknown (-), not 0 and everything; the late share stays.
        doc = record("wire-gregw-seq-2w-64s.json")
        tcp = doc["directions"][0]["tcp"]
        tcp["late_resent_bytes"], tcp["late_unresolved_bytes"] = 0, tcp["late_bytes"]
        w = analysis.wire_summary(doc)
        self.assertIsNone(w["tcp_resent_pct"])
        self.assertIsNone(w["tcp_reordered_pct"])
        self.assertAlmostEqual(w["tcp_late_pct"], 100 * 5366292 / 353570344)
        s = analysis.wire_spread([w, w])
        self.assertIsNone(s["tcp_resent_pct"])
        points = [{"key": "a", "config": "gregw gre+seq 2w", "sessions": 64}]
        text = render.md_section(report.wire_section(points, {"a": {"wire": s}}))
        rows = [line for line in text.splitlines() if line.startswith("| gregw")]
        self.assertEqual(rows, ["| gregw gre+seq 2w | 64 | 340359 | 0 | 0 | gwa -> gwb | 1.870 "
                                "| 0 / 51120 | 0.139 | 1.518 | - | - |"])

    def test_spread_keeps_the_worst(self):
        doc = record("wire-gregw-seq-2w-64s.json")
        good = analysis.wire_summary(doc)
        bad = dict(good, violation_frames=7, violations={"bad_key": 5, "no_seq": 2},
                   capture_dropped=3, tunnel_frames=100, overhead_pct=3.0)
        worse = dict(good, violation_frames=4, violations={"bad_key": 4}, tunnel_frames=200,
                     overhead_pct=2.0)
        s = analysis.wire_spread([good, bad, worse])
        self.assertEqual((s["violation_frames"], s["capture_dropped"]), (7, 3))
        self.assertEqual(s["violations"], {"bad_key": 5, "no_seq": 2})
        self.assertEqual((s["tunnel_frames"], s["overhead_pct"]), (200, 2.0))
        self.assertEqual((s["repeats"], s["failed"], s["errors"]), (3, 0, []))
        self.assertIsNone(analysis.wire_spread([]))

    def test_failed_audit(self):
        # A run whose audit failed is a failure of that run, not a silent gap.
        r = record("run-gregw-s1.json")
        r["wire"], r["wire_error"] = None, "tunbed-wire: capture on \"transit\" stopped: gone"
        w = analysis.analyse(r)["wire"]
        self.assertEqual(w, {"error": "tunbed-wire: capture on \"transit\" stopped: gone"})
        good = analysis.wire_summary(record("wire-gregw-seq-2w-64s.json"))
        s = analysis.wire_spread([w, good, w])
        self.assertEqual((s["repeats"], s["failed"]), (3, 2))
        self.assertEqual(s["errors"], ["tunbed-wire: capture on \"transit\" stopped: gone"])
        self.assertEqual(s["tunnel_frames"], 340359)
        only = analysis.wire_spread([w])
        self.assertNotIn("tunnel_frames", only)
        points = [{"key": "a", "config": "gregw gre+seq 2w", "sessions": 64},
                  {"key": "b", "config": "gregw gre 2w", "sessions": 1}]
        summary = {"a": {"wire": s}, "b": {"wire": only}}
        self.assertEqual(report.wire_headline(points, summary),
                         ["wire audit: FAILED at gregw gre+seq 2w, 64 sessions (2 of 3 repeats: "
                          "tunbed-wire: capture on \"transit\" stopped: gone); gregw gre 2w, 1 "
                          "session (1 of 1 repeat: tunbed-wire: capture on \"transit\" stopped: "
                          "gone); every tunnel frame of 1 point as expected"])
        text = render.md_section(report.wire_section(points, summary))
        rows = [line for line in text.splitlines() if line.startswith("| gregw")]
        self.assertEqual(rows[1], "| gregw gre 2w | 1 | audit failed | - | - | - | - | - | - "
                         "| - | - | - |")
        self.assertIn("- gregw gre+seq 2w, 64 sessions: 2 of 3 repeats: tunbed-wire: capture "
                      "on \"transit\" stopped: gone\n", text)
        self.assertIn("- gregw gre 2w, 1 session: 1 of 1 repeat: tunbed-wire: capture on "
                      "\"transit\" stopped: gone\n", text)

    def test_no_gre_on_the_link(self):
        # route and vxlan put no GRE on transit: 0 tunnel frames is said, not "as expected".
        w = analysis.wire_summary(record("wire-gregw-seq-2w-64s.json"))
        none = dict(w, tunnel_frames=0, seq_frames=0)
        points = [{"key": "a", "config": "gregw gre+seq 2w", "sessions": 64},
                  {"key": "b", "config": "route", "sessions": 1},
                  {"key": "c", "config": "route", "sessions": 8}]
        summary = {"a": {"wire": w}, "b": {"wire": none}, "c": {"wire": none}}
        self.assertEqual(report.wire_headline(points, summary),
                         ["wire audit: every tunnel frame of 1 point as expected; no GRE on the "
                          "link at 2 points (route)"])
        self.assertEqual(report.wire_headline(points[1:], summary),
                         ["wire audit: no GRE on the link at 2 points (route)"])

    def test_wire_stop_checks_the_exit_status(self):
        class Proc:
            """What wire_stop sees of a tunbed-wire that printed out and err, then exited."""
            def __init__(self, out, err, status):
                self.out, self.err, self.status, self.signals = out, err, status, []

            def stop(self, sig):
                self.signals.append(sig)
                self.local = self
                self.returncode = self.status
                return self.out, self.err

        doc = '{"tool": "tunbed-wire"}'
        for out, err, status, want in (
                (doc, "", 0, None),
                (doc, "", 3, None),
                (doc, "tunbed-wire: capture on \"transit\" stopped: gone\n", 1,
                 "tunbed-wire: capture on \"transit\" stopped: gone"),
                (doc, "", -9, "exit status -9"),
                ("", "tunbed-wire: no interface \"transit\"\n", 1,
                 "tunbed-wire: no interface \"transit\""),
                ("", "", 0, "exit status 0")):
            with self.subTest(status=status, err=err):
                p = Proc(out, err, status)
                got, error = point.wire_stop(p)
                self.assertEqual(error, want)
                self.assertEqual(got, json.loads(out) if out else None)
                self.assertEqual(len(p.signals), 1)

    def test_report(self):
        w = analysis.wire_summary(record("wire-gregw-seq-2w-64s.json"))
        points = [{"key": "a", "config": "gregw gre+seq 2w", "sessions": 64},
                  {"key": "b", "config": "gregw gre 2w", "sessions": 1}]
        nokey = dict(w, violation_frames=2, violations={"unexpected_seq": 2}, seq_frames=0)
        summary = {"a": {"wire": analysis.wire_spread([w])}, "b": {"wire": nokey}}
        self.assertEqual(report.wire_headline(points[:1], summary),
                         ["wire audit: every tunnel frame of 1 point as expected"])
        self.assertEqual(report.wire_headline(points, summary),
                         ["wire audit: frames broke an expectation at gregw gre 2w, 1 session: 2 "
                          "frames (unexpected_seq 2)"])
        text = render.md_section(report.wire_section(points, summary))
        rows = [line for line in text.splitlines() if line.startswith("| gregw")]
        self.assertEqual(rows[0], "| gregw gre+seq 2w | 64 | 340359 | 0 | 0 | gwa -> gwb | 1.870 "
                         "| 0 / 51120 | 0.139 | 1.518 | 1.518 | 0.000 |")
        self.assertEqual(rows[1], "| gregw gre 2w | 1 | 340359 | 2 | 0 | gwa -> gwb | 1.870 | - "
                         "| 0.139 | 1.518 | 1.518 | 0.000 |")


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


class Formats(unittest.TestCase):
    NEWER = "results written by a newer tunbed (format 4); this one reads 1-3"

    def test_format_1_reads_as_today(self):
        old = record("run-gregw-s1.json")
        self.assertNotIn("format", old)
        new = records.read_record(MATRIX, old)
        self.assertEqual(MATRIX.FORMAT, 3)
        self.assertEqual(new["format"], 3)
        # Format 3: the one machine's CPU, processes and threads, under hosts.
        moved = ("cpu", "processes", "thread_labels")
        self.assertEqual({k: v for k, v in new.items() if k not in ("format", "hosts")},
                         {k: v for k, v in old.items() if k not in moved})
        self.assertEqual(new["hosts"], [{"name": "this machine",
                                         "roles": ["client", "server", "gwa", "gwb"],
                                         "cpu": old["cpu"], "processes": old["processes"],
                                         "thread_labels": old["thread_labels"],
                                         "clock": {"offset_s": 0.0, "error_s": 0.0},
                                         "facts": None}])
        self.assertEqual(records.read_record(MATRIX, dict(old, format=2)), new)
        self.assertEqual(records.read_record(MATRIX, new), new)
        self.assertEqual(records.read_meta(MATRIX, {"scenario": "ras"}), {"scenario": "ras",
                                                                          "format": 3})

    def test_refusals(self):
        r = record("run-gregw-s1.json")
        for fmt, want in ((4, self.NEWER), (99, self.NEWER.replace("4", "99", 1)),
                          (0, "bad format 0: expected a whole number from 1"),
                          ("2", 'bad format "2": expected a whole number from 1'),
                          (True, "bad format true: expected a whole number from 1")):
            with self.subTest(format=fmt):
                with self.assertRaises(records.FormatError) as e:
                    records.read_record(MATRIX, dict(r, format=fmt), "d/runs/x-r1.json")
                self.assertEqual(str(e.exception), f"d/runs/x-r1.json: {want}")
        with self.assertRaises(records.FormatError) as e:
            records.read_meta(MATRIX, {"format": 4}, "d/meta.json")
        self.assertEqual(str(e.exception), f"d/meta.json: {self.NEWER}")
        with self.assertRaises(records.FormatError) as e:
            records.read_record(MATRIX, {"format": 2}, "d/runs/x.json")
        self.assertEqual(str(e.exception), "d/runs/x.json: not a run record (no point or repeat)")

    def test_a_write_is_whole_or_none(self):
        """An interrupt in the middle of writing a record (Ctrl-C during json.dump) left a
        file cut short, which the partial report then refused (CI, runner_ras): the file is
        written whole or not at all, and what was there stays."""
        class Interrupting:
            def __init__(self):
                self.calls = 0

            def __call__(self, obj):
                self.calls += 1
                raise KeyboardInterrupt

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x-r1.json")
            records.write_object(path, {"a": 1}, indent=2)
            self.assertEqual(records.read_object(path), {"a": 1})
            stop = Interrupting()
            big = {"runs": ["x" * 100] * 1000, "last": object()}
            with mock.patch("json.JSONEncoder.default", lambda self, o: stop(o)):
                with self.assertRaises(KeyboardInterrupt):
                    records.write_object(path, big)
            self.assertEqual(stop.calls, 1)
            self.assertEqual(records.read_object(path), {"a": 1})
            self.assertEqual(os.listdir(d), ["x-r1.json"])
            records.write_object(os.path.join(d, "new.json"), {"b": 2})
            self.assertEqual(records.load(MATRIX, d)[0], {"format": 3, "kind": "matrix"})
            self.assertEqual(sorted(os.listdir(d)), ["new.json", "x-r1.json"])

    def test_a_directory_of_both_formats(self):
        with tempfile.TemporaryDirectory() as d:
            write_json(os.path.join(d, "runs", "a-r1.json"), record("run-gregw-s1.json"))
            write_json(os.path.join(d, "runs", "b-r1.json"),
                       dict(record("run-gregw-s8.json"), format=2))
            meta, recs = records.load(MATRIX, d)
            self.assertEqual([r["format"] for r in recs], [3, 3])
            self.assertEqual(meta, {"format": 3, "kind": "matrix"})
            with open(os.path.join(d, "runs", "c-r1.json"), "w") as f:
                f.write("{")
            with self.assertRaises(records.FormatError) as e:
                records.load(MATRIX, d)
            self.assertRegex(str(e.exception), r"/runs/c-r1\.json: not JSON: ")

    def test_tunbed_report_refuses_a_newer_format(self):
        """One line, exit status 2, before anything is installed or written."""
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "scripts"))
        for newer in ("runs/b-r1.json", "meta.json"):
            with self.subTest(newer=newer), tempfile.TemporaryDirectory() as d:
                write_json(os.path.join(d, "runs", "a-r1.json"), record("run-gregw-s1.json"))
                write_json(os.path.join(d, "meta.json"), {"scenario": "ras", "format": 2})
                write_json(os.path.join(d, newer), dict(record("run-gregw-s8.json"), format=4))
                p = subprocess.run([sys.executable, "-B", "-m", "tunbedlib", "report", d],
                                   capture_output=True, text=True, env=env, timeout=30)
                self.assertEqual((p.returncode, p.stdout), (2, ""))
                self.assertEqual(p.stderr, f"tunbed: {os.path.join(d, newer)}: {self.NEWER}\n")
                self.assertEqual(sorted(os.listdir(d)), ["meta.json", "runs"])


def run_record(config, sessions, started, gateway="gregw"):
    key = f"{config.replace(' ', '-')}-s{sessions}"
    return {"point": {"key": key, "config": config, "sessions": sessions, "gateway": gateway},
            "repeat": 1, "started": started}


class Writers(unittest.TestCase):
    def test_order(self):
        # Configurations in the order the run first measured them, sessions ascending in each,
        # each point once however many repeats it had.
        recs = [run_record("route", 8, 5), run_record("gregw gre 2w", 64, 2),
                run_record("route", 1, 3), run_record("gregw gre 2w", 1, 1),
                run_record("gregw gre 2w", 64, 6), run_record("vxlan", 1, 4)]
        self.assertEqual([(p["config"], p["sessions"]) for p in report.order(recs)],
                         [("gregw gre 2w", 1), ("gregw gre 2w", 64), ("route", 1), ("route", 8),
                          ("vxlan", 1)])

    @staticmethod
    def summary_of(n, saturated):
        sat = [{"cpu": c, "by": [("gregw gwa worker 1", 97)], "user": 10, "system": 60,
                "softirq": 25} | ({"host": h} if h else {}) for h, c in saturated]
        return {"bits_per_second": analysis.spread([n * 1e8]), "saturated": sat,
                "repeats": 1, **{c: None for c in report.COLUMNS if c != "bits_per_second"}}

    def test_headline_has_every_point(self):
        # Every session count of a configuration has its line, the middle ones too (8
        # sessions: the best 2-worker figure of the main job), in the run's order; each core
        # by its name, cpu0 never a bare 0.
        points = [dict(run_record(c, n, 0)["point"], mtu=0, pattern="push")
                  for c in ("gregw gre 2w", "route") for n in (1, 8, 64)]
        sat = {1: [(None, 1)], 8: [(None, 0), (None, 1)], 64: []}
        summary = {p["key"]: self.summary_of(p["sessions"], sat[p["sessions"]]) for p in points}
        lines = report.headline(points, summary)
        self.assertEqual([line.split(":")[0] for line in lines],
                         [f"{c}, {n}" for c in ("gregw gre 2w", "route")
                          for n in ("1 session", "8 sessions", "64 sessions")])
        self.assertEqual(lines[1], "gregw gre 2w, 8 sessions: 0.80 Gbit/s, cpu0 saturated by "
                         "gregw gwa worker 1 (97%) (softirq 25%, sys 60%, user 10%); cpu1 "
                         "saturated by gregw gwa worker 1 (97%) (softirq 25%, sys 60%, user 10%)")
        self.assertTrue(lines[2].endswith(", no core saturated"), lines[2])
        # The table and summary.csv name them the same, and say none for none.
        rows = report.point_table(points, summary)[1]
        self.assertEqual([r[-1] for r in rows[:3]], ["cpu1", "cpu0, cpu1", "none"])
        res = report.Results(meta={}, complete=True, records=[], runs=[], summary=summary,
                             points=points)
        col = report.SUMMARY_HEADER.index("saturated_cores")
        self.assertEqual([r[col] for r in report.summary_rows(res)][:3],
                         ["cpu1", "cpu0 cpu1", "none"])
        # Hosts mode: each with its host's name.
        summary[points[0]["key"]] = self.summary_of(1, [("gw-a", 1), ("c1", 0)])
        self.assertEqual(report.point_table(points, summary)[1][0][-1], "gw-a:cpu1, c1:cpu0")
        self.assertIn("1 session: 0.10 Gbit/s, gw-a:cpu1 saturated by",
                      report.headline(points, summary)[0])
        # Only a run of several transit MTUs or patterns names them in each line.
        points[1]["pattern"] = "pull"
        self.assertEqual([line.split(":")[0] for line in report.headline(points, summary)[:2]],
                         ["gregw gre 2w, 1 session, transit MTU of the topology, push",
                          "gregw gre 2w, 8 sessions, transit MTU of the topology, pull"])

    SVG = ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n<!DOCTYPE svg PUBLIC '
           '"-//W3C//DTD SVG 1.1//EN"\n  "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
           '<svg xmlns="http://www.w3.org/2000/svg" width="10pt" height="10pt">\n <metadata>\n'
           '  <rdf:RDF><cc:Work><dc:type rdf:resource="http://purl.org/dc/dcmitype/StillImage"/>'
           '</cc:Work></rdf:RDF>\n </metadata>\n <defs><path id="m1" d="M 0 0"/>'
           '<clipPath id="p1"><rect width="5" height="5"/></clipPath></defs>\n'
           ' <g id="figure_1" clip-path="url(#p1)"><use xlink:href="#m1"/></g>\n</svg>\n')

    def test_both_reports_from_one_analysis(self):
        recs = [records.read_record(MATRIX, record(n)) for n in ("run-gregw-s8.json",
                                                                 "run-gregw-s1.json")]
        meta = {"scenario": "ras", "title": "a <script>x</script> & b", "topology": "ras",
                "notes": ["gre skipped: <none>"]}
        res = report.analyse(recs, meta, complete=False)
        self.assertEqual([p["sessions"] for p in res.points], [1, 8])
        plots = [document.Plot("Throughput <1>", "throughput", self.SVG),
                 document.Plot("Cost", "cost", self.SVG)]
        doc = report.document(res, plots)
        md, page = render.markdown(doc), render.page(doc)
        lines = report.headlines(res)
        self.assertEqual(len(lines), 2)
        self.assertIn("".join(f"- {line}\n" for line in lines), md)
        # (The page escapes them: the verdict's words have "the gateway's".)
        self.assertIn("".join(f"<li>{html.escape(line)}</li>\n" for line in lines), page)
        # The headline comes first: after the title and the PARTIAL mark, before all else.
        self.assertLess(page.index("PARTIAL"), page.index('<ul class="headline"'))
        self.assertLess(page.index(html.escape(lines[-1])), page.index("<table"))
        # report.md's table rows are report.html's.
        for p, cells in zip(res.points, report.point_table(res.points, res.summary)[1]):
            self.assertIn("| " + " | ".join(cells) + " |\n", md)
            self.assertIn("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>", page)
        # Every text escaped; no markup from the data.
        self.assertIn("<title>tunbed ras: a &lt;script&gt;x&lt;/script&gt; &amp; b</title>", page)
        self.assertIn("gre skipped: &lt;none&gt;", page)
        self.assertIn("<h2>Throughput &lt;1&gt;</h2>", page)
        self.assertNotIn("<script", page)
        # The plots inline, without prolog or metadata, each with ids of its own.
        self.assertEqual(page.count("<svg"), 2)
        self.assertNotIn("<?xml", page)
        self.assertNotIn("DOCTYPE svg", page)
        self.assertNotIn("metadata", page)
        self.assertNotIn("purl.org", page)
        for i in (0, 1):
            self.assertIn(f'<path id="plot{i}-m1"', page)
            self.assertIn(f'<g id="plot{i}-figure_1" clip-path="url(#plot{i}-p1)">'
                          f'<use xlink:href="#plot{i}-m1"/>', page)
        self.assertIn("![Cost](plots/cost.svg)", md)


def as_gateway(rec, gateway, info):
    """A recorded gregw run as if it were of another gateway, with what its driver said."""
    rec = json.loads(json.dumps(rec))
    p = rec["point"]
    p.update(gateway=gateway, mode="-", workers=0)
    p["key"], p["config"] = scenario.Point(gateway, "-", 0, 0, "push", p["sessions"]).key(), gateway
    rec["gateway_info"] = info
    return rec


class Peers(unittest.TestCase):
    """The compare report's peer table, and the points whose gateway did not come up."""

    def results(self):
        recs = [records.read_record(MATRIX, record(n)) for n in ("run-gregw-s1.json",
                                                                 "run-gregw-s8.json")]
        for r in recs:
            r["gateway_info"] = {"version": "gregw 0.1.0", "cipher": "none", "dev": "gre0",
                                 "mtu": 1476}
        wg = [as_gateway(r, "wireguard-go", {"version": "wireguard-go v0.0.20220316",
                                             "cipher": "ChaCha20-Poly1305", "dev": "tbwg0",
                                             "mtu": 1440}) for r in recs]
        failed = [{"point": scenario.Point("fastd", "-", 0, 0, "push", 1).__dict__ |
                   {"key": "fastd---w0-mtu0-push-s1", "config": "fastd"}, "repeat": r,
                   "started": wg[-1]["started"] + r, "error": "fastd on tb-gwa: exited (1): x"}
                  for r in (1, 2)]
        return report.analyse(recs + wg, {"scenario": "compare", "failed": failed})

    def test_peer_table(self):
        res = self.results()
        header, rows = report.peer_table(res.points, res.summary, res.failed)
        self.assertEqual(header[:5], ("sessions", "gateway", "version", "cipher", "inner MTU"))
        self.assertEqual(header[-1], "saturated thread")
        # A row per gateway and session count, sessions first, the run's order within.
        self.assertEqual([(r[0], r[1]) for r in rows],
                         [("1", "gregw gre 2w"), ("1", "wireguard-go"), ("1", "fastd"),
                          ("8", "gregw gre 2w"), ("8", "wireguard-go")])
        by = {(r[0], r[1]): dict(zip(header, r)) for r in rows}
        g1, w1 = by[("1", "gregw gre 2w")], by[("1", "wireguard-go")]
        self.assertEqual((w1["version"], w1["cipher"], w1["inner MTU"]),
                         ("wireguard-go v0.0.20220316", "ChaCha20-Poly1305", "1440"))
        self.assertEqual(g1["inner MTU"], "1476")
        s = res.summary["gregw-gre-w2-mtu0-push-s1"]
        self.assertEqual(g1["Gbit/s"], f"{s['bits_per_second']['median'] / 1e9:.2f}")
        run = res.runs[0]
        self.assertAlmostEqual(run["retransmits_per_gb"], run["retransmits"] / (run["bytes"] / 1e9))
        self.assertEqual(g1["retransmits/GB"], f"{s['retransmits_per_gb']['median']:.0f}")
        self.assertEqual(g1["saturated thread"], analysis.saturating_threads(s["saturated"]))
        self.assertRegex(g1["saturated thread"],
                         r"^gregw gw[ab] worker [01] \([0-9]+% of cpu[01]\)")
        f1 = by[("1", "fastd")]
        self.assertEqual(f1["Gbit/s"], "FAILED")
        self.assertEqual(f1["saturated thread"], "fastd on tb-gwa: exited (1): x")
        # One gateway: no peer table.
        one = report.analyse(res.records[:2], {})
        self.assertIsNone(report.peer_table(one.points, one.summary))

    def test_failed_points(self):
        res = self.results()
        self.assertIn("fastd, 1 session: FAILED (2 repeats): fastd on tb-gwa: exited (1): x",
                      report.headlines(res))
        rows = report.point_table(res.points, res.summary)[1]
        self.assertEqual(rows[-1], ["fastd", "1", "FAILED"] + ["-"] * 8)
        with tempfile.TemporaryDirectory() as d:
            render.write_all(d, report.document(res, plots=[]))
            with open(os.path.join(d, "summary.csv")) as f:
                csv_rows = list(csv.DictReader(f))
            with open(os.path.join(d, "report.md")) as f:
                md = f.read()
        self.assertEqual([r["gateway"] for r in csv_rows], ["gregw"] * 2 + ["wireguard-go"] * 2)
        self.assertEqual(csv_rows[2]["inner_mtu"], "1440")
        self.assertIn("## Gateways side by side", md)
        self.assertIn("| fastd | 1 | FAILED |", md)

    def test_saturating_threads(self):
        self.assertEqual(analysis.saturating_threads([]), "none")
        self.assertEqual(analysis.saturating_threads([
            {"cpu": 1, "by": [("openvpn gwa", 97), ("openvpn gwb", 2)]},
            {"cpu": 0, "host": "gw-b", "by": []}]),
            "openvpn gwa (97% of cpu1); the kernel (gw-b:cpu0)")



class Baselines(unittest.TestCase):
    """Each point over the baselines of the run at the same sessions, MTU and pattern."""

    @staticmethod
    def pt(gateway, sessions, mode="-", mtu=0):
        key = f"{gateway}-{mode}-s{sessions}-mtu{mtu}"
        return {"key": key, "gateway": gateway, "mode": mode, "sessions": sessions, "mtu": mtu,
                "pattern": "push", "config": f"{gateway} {mode}"}

    def test_ratios_and_table(self):
        pts = [self.pt("route", 1), self.pt("vxlan", 1), self.pt("vxlan-frames", 1),
               self.pt("gregw", 1, "gre"), self.pt("gregw", 8, "gre"), self.pt("vxlan", 8),
               self.pt("gregw", 1, "gre", mtu=9000)]
        gbit = (20, 10, 5, 8, 6, 12, 9)  # each point's Gbit/s, in pts' order
        summary = {p["key"]: {"bits_per_second": {"median": g * 1e9}} for p, g in zip(pts, gbit)}
        r = matrix_baselines.ratios(pts, summary)
        self.assertEqual(r["gregw-gre-s1-mtu0"], {"route": 0.4, "vxlan": 0.8, "vxlan-frames": 1.6})
        self.assertEqual(r["gregw-gre-s8-mtu0"], {"vxlan": 0.5})  # only vxlan ran at 8
        self.assertNotIn("gregw-gre-s1-mtu9000", r)  # no baseline at that MTU
        self.assertEqual(r["vxlan-frames---s1-mtu0"], {"route": 0.25, "vxlan": 0.5})
        header, rows = matrix_baselines.table(pts, summary)
        self.assertEqual(header, ("sessions", "gateway", "Gbit/s", "x route", "x vxlan",
                                  "x vxlan-frames"))
        self.assertIn(["1", "gregw gre", "8.00", "0.40", "0.80", "1.60"], rows)
        self.assertIn(["8", "gregw gre", "6.00", "-", "0.50", "-"], rows)

    def test_no_baseline_no_table(self):
        pts = [self.pt("gregw", 1, "gre"), self.pt("gregw", 1, "gre-udp")]
        summary = {p["key"]: {"bits_per_second": {"median": 1e9}} for p in pts}
        self.assertIsNone(matrix_baselines.table(pts, summary))
        self.assertEqual(matrix_baselines.ratios(pts, summary), {})

class GregwCost(unittest.TestCase):
    """report.cost_table: gregw's cost along the data's way, medians over the repeats."""

    @staticmethod
    def stats(spc, calls, hist, wake):
        way = {"segments_per_syscall": spc, "syscalls_per_gb": calls,
               "superpacket_segments": hist}
        return {"total": {"cost": {"tun_to_wire": way, "wire_to_tun": way,
                                   "wakeups_per_gb": wake}}}

    def record(self, pattern, rep, a, b):
        key = f"gregw-gre-w2-mtu0-{pattern}-s8"
        return {"point": {"key": key, "config": "gregw gre 2w", "sessions": 8,
                          "pattern": pattern}, "repeat": rep, "gateway": {"gwa": a, "gwb": b}}

    def test_push_and_pull(self):
        one = {"1": 3, "33-64": 1}
        recs = [self.record("push", r, self.stats(30 + r, 1000 * r, one, 10),
                            self.stats(5 + r, 9000, {"1": 1, "33-64": 3}, 20 + r))
                for r in (1, 2, 3)]
        recs += [self.record("pull", 1, self.stats(1, 1, {"1": 1}, 1),
                             self.stats(7, 700, one, 70))]
        header, rows = report.cost_table(recs, report.order(recs))
        self.assertEqual(len(header), len(rows[0]))
        # (pull's row first: the points of one configuration and session count in key order)
        # push: gwa sends (medians 32, 2000), gwb receives (7, 9000, 1 of 4 writes alone)
        self.assertEqual(rows[1], ["gregw gre 2w", "8", "32.0", "2,000", "7.0", "9,000", "25%",
                                   "10 / 22"])
        # pull: gwb sends, gwa receives (its writes: 1 of 1 alone)
        self.assertEqual(rows[0][2:], ["7.0", "700", "1.0", "1", "100%", "70 / 1"])

    def test_without_gregw_stats(self):
        rec = {"point": {"key": "vxlan-s1", "config": "vxlan", "sessions": 1}, "gateway": {}}
        self.assertIsNone(report.cost_table([rec], report.order([rec])))

    def test_copy_floor(self):
        # four copies of each byte: four times the copy the run measured; none on hosts
        self.assertAlmostEqual(report.copy_floor({"copy_s_per_gb": 0.1}), 0.4)
        for meta in ({}, {"copy_s_per_gb": None}, {"copy_s_per_gb": True},
                     {"copy_s_per_gb": "0.1"}):
            self.assertIsNone(report.copy_floor(meta))
        self.assertIn("at least 0.40 CPU-s/GB", report.cost_intro({"copy_s_per_gb": 0.1}))
        self.assertIn("No copy floor", report.cost_intro({"copy_s_per_gb": None}))
        recs = [self.record("push", 1, self.stats(30, 1000, {"1": 1}, 10),
                            self.stats(5, 9000, {"1": 1}, 20))]
        key = recs[0]["point"]["key"]
        summary = {key: {"gateway_cpu_s_per_gb": {"median": 1.2}}}
        header, rows = report.cost_table(recs, report.order(recs), summary, 0.4)
        self.assertEqual(header[-1], report.FLOOR_HEADER)
        self.assertEqual(rows[0][-1], "1.20 (3.0x)")
        self.assertEqual(len(header), len(rows[0]))
        # a point without the gateway's CPU keeps its row, the cell says so
        header, rows = report.cost_table(recs, report.order(recs), {key: {}}, 0.4)
        self.assertEqual(rows[0][-1], "-")
        # without a floor, no column
        header, rows = report.cost_table(recs, report.order(recs), summary, None)
        self.assertEqual(len(header), len(report.COST_HEADER))

    def test_copy_cost_measured(self):
        # one copy of a GB costs something, and less than a second on any machine that runs this
        self.assertTrue(0 < machine.copy_cost() < 1)
        schema = matrix.META_SCHEMA
        schema.check({"notes": [], "failed": [], "copy_s_per_gb": 0.1}, "meta")
        for bad in ("0.1", -1, 1e9, float("nan")):
            with self.assertRaises(Bad):
                schema.check({"notes": [], "failed": [], "copy_s_per_gb": bad}, "meta")


class SampledWhere(unittest.TestCase):
    """Each client's (and server's) process is sampled on its own host, not the role's first."""

    def test_each_host_of_a_role(self):
        spec = types.SimpleNamespace(reach=True, sample=True)
        c1, c2 = (types.SimpleNamespace(name=n, spec=spec) for n in ("c1", "c2"))
        bed = types.SimpleNamespace(host=lambda role: c1)
        self.assertEqual(beds.HostsBed.sampler_of(bed, "client"), "c1")
        self.assertEqual(beds.HostsBed.sampler_of(bed, "client", c2), "c2")
        unsampled = types.SimpleNamespace(name="c3", spec=types.SimpleNamespace(
            reach=True, sample=False))
        self.assertIsNone(beds.HostsBed.sampler_of(bed, "client", unsampled))

    def test_run_watches_on_the_host(self):
        asked, watched = [], []
        bed = types.SimpleNamespace(sampler_of=lambda role, host=None: asked.append(
            (role, host)) or (host.name if host else "first"))
        run = point.Run(types.SimpleNamespace(congestion=None), None, bed)
        run.by_name = {"first": types.SimpleNamespace(watch=watched.append),
                       "c2": types.SimpleNamespace(watch=watched.append)}
        run.processes = {"first": {}, "c2": {}}
        c2 = types.SimpleNamespace(name="c2")
        run.watch("client", 42, "tunbed-traffic client c2", c2)
        self.assertEqual(asked, [("client", c2)])
        self.assertEqual(run.processes, {"first": {}, "c2": {"42": "tunbed-traffic client c2"}})


class Contract(unittest.TestCase):
    def test_lookup(self):
        with tempfile.TemporaryDirectory() as d:
            sc = scenario.parse("[scenario]\ngateways = cmd:my/gw.sh, route\n",
                                os.path.join(d, "x.scenario"))
            cls = drivers.DRIVERS["cmd:my/gw.sh"]
            self.assertEqual(cls.path, os.path.join(d, "my", "gw.sh"))
            self.assertEqual(cls.name, "cmd:my/gw.sh")
            self.assertEqual(cls.available(), (False, f"{cls.path}: no such executable file"))
            os.makedirs(os.path.join(d, "my"))
            with open(cls.path, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(cls.path, 0o755)
            self.assertEqual(cls.available(), (True, ""))
        # A file name of the point, whatever the path.
        self.assertEqual([p.key() for p in scenario.points(sc)],
                         ["cmd_my_gw.sh---w0-mtu0-push-s1", "cmd_my_gw.sh---w0-mtu0-push-s8",
                          "route---w0-mtu0-push-s1", "route---w0-mtu0-push-s8"])
        self.assertIsNone(drivers.lookup("ipsec"))
        self.assertIsNone(drivers.lookup("cmd:"))
        self.assertTrue(issubclass(drivers.lookup("ovs-gre"), contract.Cmd))

    def test_missing_programs_are_named(self):
        """A gateway whose program is missing is skipped with a note naming it and its Debian
        package; on hosts it is known only when it starts there."""
        for cls, missing, want in (
                (vpn.WireguardGo, "wg", "wg not installed (Debian: wireguard-go, wireguard-tools)"),
                (vpn.OpenVpn, "openssl", "openssl not installed (Debian: openvpn, openssl)"),
                (vpn.OpenVpnNone, "openvpn", "openvpn not installed (Debian: openvpn)"),
                (vpn.FastdNull, "fastd", "fastd not installed (Debian: fastd)")):
            with self.subTest(cls=cls.name), mock.patch.object(vpn, "have",
                                                               lambda p, m=missing: p != m):
                self.assertEqual(cls.available(), (False, want))
                self.assertEqual(cls.available(hosts_mode=True), (True, ""))
        with mock.patch.object(vpn, "have", lambda p: True):
            self.assertEqual(vpn.Fastd.available(), (True, ""))

    def test_ndr_knows_the_daemons_overhead(self):
        # tunbed ndr sizes its frames by what each VPN daemon adds on transit (vpn.py).
        from tunbedlib.kinds import ndr_plan as ndr
        for gateway, want in (("wireguard-go", 60), ("openvpn", 52), ("openvpn-none", 28),
                              ("fastd", 53), ("fastd-null", 29)):
            self.assertEqual(ndr.frame(512, gateway, "-", 4, 1500, 1500)["tunnel_mtu"],
                             1500 - want)
            self.assertEqual(ndr.overhead(gateway, "-", 6), want + 20)

    def test_every_driver_is_in_the_docs(self):
        """docs/runner.md's table of gateways has a row for every driver of the registry, in
        its order, and cmd:PATH and no other."""
        with open(os.path.join(HERE, "..", "..", "docs", "runner.md")) as f:
            text = f.read()
        table = text[text.index("## Gateways (drivers)"):]
        table = table[table.index("| name |"):]
        table = table[:table.index("\n\n")]
        names = [line.split("|")[1].strip().strip("`") for line in table.splitlines()[2:]]
        self.assertEqual(names, [*drivers.GATEWAYS, "cmd:PATH"])

    def test_environment(self):
        addrs = beds.ADDRS[4]
        h = types.SimpleNamespace(ns="tb-gwa", name="gwa", state="/s", shares_files=True,
                                  run=lambda *a, **k: '[{"mtu": 1500}]', undo=lambda *a: None,
                                  label=lambda: "tb-gwa")
        bed = types.SimpleNamespace(addrs=addrs, pins={"gwa": "1"}, host=lambda r: h,
                                    transit_iface=lambda r: "transit",
                                    roles={"client": [types.SimpleNamespace(ns="tb-client")]})
        d = drivers.DRIVERS["ovs-gre"](bed, scenario.Point("ovs-gre", "-", 0, 0, "push", 1))
        env = d.environment(*d.sides()[0])
        self.assertEqual({k: env[k] for k in ("TUNBED_ROLE", "TUNBED_NETNS", "TUNBED_LOCAL",
                                              "TUNBED_REMOTE", "TUNBED_ADDR", "TUNBED_PEER_ADDR",
                                              "TUNBED_ROUTES", "TUNBED_LANS", "TUNBED_CPUS",
                                              "TUNBED_TRANSIT_MTU", "TUNBED_STATE",
                                              "TUNBED_HOST_CLIENT", "TUNBED_HOST_SERVER")},
                         {"TUNBED_ROLE": "gwa", "TUNBED_NETNS": "tb-gwa",
                          "TUNBED_LOCAL": "198.18.0.1", "TUNBED_REMOTE": "198.18.0.2",
                          "TUNBED_ADDR": "198.19.0.1/24", "TUNBED_PEER_ADDR": "198.19.0.2/24",
                          "TUNBED_ROUTES": "198.18.3.0/24", "TUNBED_LANS": "198.18.1.0/24",
                          "TUNBED_CPUS": "1", "TUNBED_TRANSIT_MTU": "1500",
                          "TUNBED_STATE": "/s/ovs-gre", "TUNBED_HOST_CLIENT": "tb-client",
                          "TUNBED_HOST_SERVER": ""})


class Drivers(unittest.TestCase):
    def test_wire_expectations(self):
        for gateway, mode, want in (
                ("gregw", "gre", ["--no-key", "--no-seq", "--no-csum"]),
                ("gregw", "gre-udp+key+csum", ["--key", "7", "--no-seq", "--csum"]),
                ("gregw", "gre+seq+nooffload", ["--no-key", "--seq", "--no-csum"]),
                ("route", "-", []), ("vxlan", "-", []), ("ovs-gre", "-", [])):
            with self.subTest(gateway=gateway, mode=mode):
                bed = types.SimpleNamespace(addrs=beds.ADDRS[4], pins={})
                d = drivers.DRIVERS[gateway](bed, scenario.Point(gateway, mode, 2, 0, "push", 1))
                try:
                    self.assertEqual(d.wire_expectations(), want)
                    args = point.wire_args(d, beds.ADDRS[4], "transit", "/r")
                    self.assertEqual(args[-len(want) - 4:], ["--local", "198.18.0.1", "--remote",
                                                             "198.18.0.2", *want])
                finally:
                    d.teardown()

    def test_vxlan_devices(self):
        """vxlan-inherit is vxlan's device with `tos inherit` (the outer DSCP the inner one),
        on both sides; vxlan and vxlan-frames keep the kernel's default tos."""
        for gateway, extra in (("vxlan", []), ("vxlan-frames", []),
                               ("vxlan-inherit", ["tos", "inherit"])):
            with self.subTest(gateway=gateway):
                ran = []
                h = types.SimpleNamespace(run=lambda c, **k: ran.append(c) or "",
                                          undo=lambda c: None)
                bed = types.SimpleNamespace(addrs=beds.ADDRS[4], pins={}, host=lambda r: h,
                                            transit_iface=lambda r: "transit")
                d = drivers.DRIVERS[gateway](bed, scenario.Point(gateway, "-", 0, 0, "push", 1))
                with mock.patch.object(d, "transit_frames", lambda: None):
                    d.setup()
                adds = [c for c in ran if c[:3] == ["ip", "link", "add"]]
                self.assertEqual(adds, [
                    ["ip", "link", "add", "vx0", "type", "vxlan", "id", "42", "local", a, "remote",
                     b, "dstport", "4789", "dev", "transit", *extra]
                    for a, b in (("198.18.0.1", "198.18.0.2"), ("198.18.0.2", "198.18.0.1"))])
                self.assertEqual(d.tos_method("-"), "capture")

    def test_modes(self):
        self.assertEqual([n for n, d in drivers.DRIVERS.items() if d.has_modes], ["gregw"])
        sc = scenario.Scenario(gateways=["route", "gregw"], modes=["gre", "gre-udp"],
                               workers=[1], sessions=[1])
        self.assertEqual([(p.key(), p.config()) for p in scenario.points(sc)],
                         [("route---w0-mtu0-push-s1", "route"),
                          ("gregw-gre-w1-mtu0-push-s1", "gregw gre 1w"),
                          ("gregw-gre-udp-w1-mtu0-push-s1", "gregw gre-udp 1w")])


class Scenarios(unittest.TestCase):
    GOOD = ("[scenario]\nname = t1\ntopology = ras6\ngateways = gregw, route\n"
            "modes = gre, gre+key+seq, gre-udp+nooffload\nworkers = 1, 2\nsessions = 1 8 64\n"
            "mtu = 0, 9000\n"
            "pattern = push, duplex\ntime = 5\nwarmup = 0.5\nrepeats = 2\nrr = no\n"
            "congestion = cubic\n")

    def test_good(self):
        sc = scenario.parse(self.GOOD, "t1.scenario")
        self.assertEqual(sc.name, "t1")
        self.assertEqual(sc.gateways, ["gregw", "route"])
        self.assertEqual(sc.modes, ["gre", "gre+key+seq", "gre-udp+nooffload"])
        self.assertEqual(sc.sessions, [1, 8, 64])
        self.assertEqual(sc.mtu, [0, 9000])
        self.assertEqual((sc.time, sc.warmup, sc.repeats, sc.rr), (5.0, 0.5, 2, False))
        self.assertEqual(sc.congestion, "cubic")
        pts = scenario.points(sc)
        # gregw: 3 modes x 2 workers x 2 mtu x 2 patterns x 3 sessions; route: 2 x 2 x 3.
        self.assertEqual(len(pts), 72 + 12)
        self.assertIn("gregw-gre-udp+nooffload-w2-mtu9000-duplex-s64", [p.key() for p in pts])
        self.assertEqual(pts[0].key(), "gregw-gre-w1-mtu0-push-s1")
        self.assertEqual(pts[-1].config(), "route")

    def test_defaults_and_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".scenario", delete=False) as f:
            f.write("[scenario]\n; only the gateways\ngateways = vxlan\n")
        try:
            sc = scenario.load(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(sc.gateways, ["vxlan"])
        self.assertEqual(sc.sessions, [1, 8])
        self.assertEqual(sc.repeats, 3)
        self.assertEqual(sc.congestion, "")
        with self.assertRaises(scenario.ScenarioError) as e:
            scenario.load("/nonexistent/x.scenario")
        self.assertEqual(str(e.exception),
                         "/nonexistent/x.scenario: cannot read: No such file or directory")

    def test_bad(self):
        rows = [
            ("gateways = gregw", "f:1: 'gateways = gregw' outside [scenario]"),
            ("[scenario]\ngateways = ipsec", "f:2: unknown gateway 'ipsec': expected one of "
             "gregw, route, vxlan, vxlan-frames, vxlan-inherit, gre, ovs-gre, external, "
             "wireguard-go, openvpn, openvpn-none, fastd, fastd-null, or cmd:PATH"),
            ("[scenario]\ngateways = cmd:", "f:2: unknown gateway 'cmd:': expected one of "
             "gregw, route, vxlan, vxlan-frames, vxlan-inherit, gre, ovs-gre, external, "
             "wireguard-go, openvpn, openvpn-none, fastd, fastd-null, or cmd:PATH"),
            ("[scenario]\nsessions = 0", "f:2: bad value '0' for sessions: expected 1 to 10000"),
            ("[scenario]\nsessions = 1, x", "f:2: bad value 'x' for sessions: expected whole numbers"),
            ("[scenario]\nworkers = 65", "f:2: bad value '65' for workers: expected 1 to 64"),
            ("[scenario]\nmodes = gre+aqm+aqm", "f:2: bad mode 'gre+aqm+aqm': expected gre or "
             "gre-udp, optionally +key, +seq, +csum, +nooffload, +aqm, +iptx, +nofq, +merge, "
             "+frames"),
            ("[scenario]\ncongestion = cubic;rm", "f:2: bad value 'cubic;rm' for congestion: "
             "expected an algorithm's name, e.g. cubic or bbr"),
            ("[scenario]\nmodes = gre+fast", "f:2: bad mode 'gre+fast': expected gre or gre-udp, "
             "optionally +key, +seq, +csum, +nooffload, +aqm, +iptx, +nofq, +merge, +frames"),
            ("[scenario]\nmodes = gre+key+key", "f:2: bad mode 'gre+key+key': expected gre or "
             "gre-udp, optionally +key, +seq, +csum, +nooffload, +aqm, +iptx, +nofq, +merge, "
             "+frames"),
            ("[scenario]\nmodes = udp+seq", "f:2: bad mode 'udp+seq': expected gre or gre-udp, "
             "optionally +key, +seq, +csum, +nooffload, +aqm, +iptx, +nofq, +merge, +frames"),
            ("[scenario]\nmodes = gre-udp+iptx", "f:2: bad mode 'gre-udp+iptx': +iptx is plain "
             "GRE's (gre): GRE-in-UDP always leaves on UDP sockets"),
            ("[scenario]\nmtu = 1000", "f:2: bad value '1000' for mtu: 0 (the topology's) or 1280 "
             "to 65535"),
            ("[scenario]\ntime = 0", "f:2: bad value '0' for time: expected 1 to 3600"),
            ("[scenario]\nrr = maybe", "f:2: bad value 'maybe' for rr: expected yes or no"),
            ("[scenario]\npattern = sideways", "f:2: unknown pattern 'sideways': expected one of "
             "push, pull, duplex"),
            ("[scenario]\ncolour = red", "f:2: unknown key 'colour'"),
            ("[scenario]\ntime = 5\ntime = 6", "f:3: duplicate key 'time' (first at line 2)"),
            ("[scenario]\njunk", "f:2: expected 'key = value', got 'junk'"),
            ("[scenarios]", "f:1: unknown section [scenarios]: expected [scenario] or [ndr]"),
            ("[scenario", "f:1: missing ']' in '[scenario'"),
            ("[scenario]\nname = a b", "f:2: bad name 'a b': use letters, digits, '-' and '_' "
             "(at most 64)"),
        ]
        for text, want in rows:
            with self.subTest(text=text):
                with self.assertRaises(scenario.ScenarioError) as e:
                    scenario.parse(text, "f")
                self.assertEqual(str(e.exception), want)


class Interrupt(unittest.TestCase):
    def test_ctrl_c_while_the_topology_goes_up(self):
        """Ctrl-C during `tunbed-topo up` waits for it, then the topology comes down again:
        the run ends with KeyboardInterrupt after `down`, nothing left up."""
        calls = []

        def fake_run(cmd, check=True):
            calls.append(cmd[1])
            if cmd[1] == "up":
                os.kill(os.getpid(), signal.SIGINT)  # blocked: delivered when up is done
            return ""

        saved = beds.run, signal.getsignal(signal.SIGINT)
        beds.run = fake_run
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            sc = scenario.Scenario()
            p = scenario.Point("route", "-", 2, 0, "push", 1)
            with self.assertRaises(KeyboardInterrupt):
                with beds.NamespaceBed(sc, "tbunit", {}).point(Item("k", "l", p)):
                    pass
        finally:
            beds.run = saved[0]
            signal.signal(signal.SIGINT, saved[1])
        self.assertEqual(calls, ["up", "down"])


INI = """
[client]
c1 ansible_host=198.18.200.2 tunbed_addr=198.18.1.2
[gwa]
gw1 ansible_host=198.18.200.6 tunbed_transit_addr=198.18.0.1 tunbed_lan_addr=198.18.1.1 tunbed_lan_prefix=198.18.1.0/24
[gwb]
gw2 ansible_host=198.18.200.10 tunbed_transit_addr=198.18.0.2 tunbed_lan_addr=198.18.3.1 tunbed_lan_prefix=198.18.3.0/24,198.18.4.0/24
[server]
s1 tunbed_addr=198.18.3.2 ansible_port=2222
[all:vars]
ansible_user=bench
ansible_become=true
tunbed_root=/opt/tb
"""

YAML = """
all:
  vars: {ansible_user: bench, ansible_become: true, tunbed_root: /opt/tb}
  children:
    client: {hosts: {c1: {ansible_host: 198.18.200.2, tunbed_addr: 198.18.1.2}}}
    gwa:
      hosts:
        gw1: {ansible_host: 198.18.200.6, tunbed_transit_addr: 198.18.0.1,
              tunbed_lan_addr: 198.18.1.1, tunbed_lan_prefix: 198.18.1.0/24}
    gwb:
      hosts:
        gw2: {ansible_host: 198.18.200.10, tunbed_transit_addr: 198.18.0.2,
              tunbed_lan_addr: 198.18.3.1, tunbed_lan_prefix: "198.18.3.0/24,198.18.4.0/24"}
    server: {hosts: {s1: {tunbed_addr: 198.18.3.2, ansible_port: 2222}}}
"""


class Inventory(unittest.TestCase):
    """An inventory read as Ansible reads it (ansible-inventory), INI and YAML alike, and every
    mistake in it refused in one line naming the host (docs/hosts.md)."""

    def parse(self, text, suffix=".ini", roles=inventory.ROLES):
        with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
            f.write(text)
        try:
            return inventory.parse(f.name, roles)
        finally:
            os.unlink(f.name)

    def test_ini_and_yaml_alike(self):
        a, b = self.parse(INI), self.parse(YAML, ".yml")
        for inv in (a, b):
            gw2 = inv.one("gwb")
            self.assertEqual((gw2.name, gw2.address, gw2.user, gw2.become, gw2.root),
                             ("gw2", "198.18.200.10", "bench", True, "/opt/tb"))
            self.assertEqual(gw2.lan_prefix, "198.18.3.0/24,198.18.4.0/24")
            self.assertEqual(gw2.tunnel_addr, "198.19.0.2/24")
            self.assertEqual(gw2.bin("gregw"), "/opt/tb/usr/bin/gregw")
            s1 = inv.one("server")
            self.assertEqual((s1.address, s1.port, s1.addr), ("s1", 2222, "198.18.3.2"))
            self.assertEqual([h.name for h in inv.all()], ["c1", "s1", "gw1", "gw2"])
        self.assertEqual([vars(h) for h in a.all()], [vars(h) for h in b.all()])

    def test_mistakes(self):
        rows = [
            (INI.replace(" tunbed_addr=198.18.1.2", ""),
             "host c1: client needs tunbed_addr (docs/hosts.md)"),
            (INI.replace("tunbed_addr=198.18.1.2", "tunbed_addr=10.0.1.4"),
             "host c1: tunbed_addr 10.0.1.4 is outside the benchmarking ranges 198.18.0.0/15 "
             "and 2001:2::/48: set tunbed_any_address=true for this host to use it "
             "(--any-address)"),
            (INI.replace("tunbed_addr=198.18.1.2", "tunbed_addr=1.2.3"),
             "host c1: bad value '1.2.3' for tunbed_addr: expected an IPv4 or IPv6 address"),
            (INI.replace("tunbed_lan_prefix=198.18.1.0/24", "tunbed_lan_prefix=198.18.1.1"),
             "host gw1: bad value '198.18.1.1' for tunbed_lan_prefix: expected a prefix such "
             "as 198.18.3.0/24"),
            (INI.replace("ansible_become=true", "ansible_become=maybe"),
             "host c1: bad value 'maybe' for ansible_become: expected true or false"),
            (INI.replace("ansible_port=2222", "ansible_port=ssh"),
             "host s1: bad value 'ssh' for ansible_port: expected a port number"),
            (INI + "ansible_become_method=su\n",
             "host c1: ansible_become_method 'su': tunbed uses sudo only (passwordless: sudo -n)"),
            (INI.replace("[server]\n", "[server]\ngw1\n"),
             "host gw1: in groups server and gwa: a host has one role"),
            (INI.replace("[gwb]\n", "[gwb]\ngw3 tunbed_transit_addr=198.18.0.3 "
                         "tunbed_lan_addr=198.18.5.1 tunbed_lan_prefix=198.18.5.0/24\n"),
             "group 'gwb' has 2 hosts: one gateway a side"),
            (INI.replace("tunbed_addr=198.18.1.2", "tunbed_addr=2001:2::9"),
             "IPv4 and IPv6 data-plane addresses mixed: one family a run"),
        ]
        for text, want in rows:
            with self.subTest(want=want):
                with self.assertRaises(inventory.InventoryError) as e:
                    self.parse(text)
                self.assertTrue(str(e.exception).endswith(want), str(e.exception))
        with self.assertRaises(inventory.InventoryError) as e:
            gwb = INI.index("[gwb]")
            self.parse(INI[:gwb] + INI[INI.index("[server]"):], roles=inventory.ROLES)
        self.assertRegex(str(e.exception), r"no host in group 'gwb' \(the scenario needs ")
        self.assertEqual(len(self.parse(INI.split("[gwa]")[0] + "[server]\ns1 tunbed_addr="
                                        "198.18.3.2\n", roles=("client", "server")).all()), 2)
        with self.assertRaises(inventory.InventoryError) as e:
            inventory.parse("/nonexistent.ini")
        self.assertEqual(str(e.exception), "/nonexistent.ini: no such inventory file")
        with self.assertRaises(inventory.InventoryError) as e:
            self.parse("[client\nc1 x=\n")
        self.assertIn("not an inventory Ansible can read", str(e.exception))

    def test_allowed_outside_the_ranges(self):
        inv = self.parse(INI.replace("tunbed_addr=198.18.1.2",
                                     "tunbed_addr=10.0.1.4 tunbed_any_address=true"))
        self.assertTrue(inv.one("client").any_address)
        self.assertFalse(inv.one("server").any_address)


# Run in a child: imports outside Python's standard library fail (as on a fresh machine, where
# bootstrap has not installed python3-matplotlib yet); the bootstrap is a stand-in that exits
# 42 and says which modules were loaded by then.
FRESH_CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in sys.stdlib_module_names and top != "tunbedlib":
            raise ModuleNotFoundError(f"No module named '{name}' (blocked)")
        return None

sys.meta_path.insert(0, NotInstalled())
from tunbedlib import cli, runloop

def bootstrap(kind=None):
    print(" ".join(sorted(m for m in sys.modules if m.startswith("tunbedlib"))))
    sys.exit(42)

runloop.bootstrap = bootstrap
os.geteuid = lambda: 0
sys.argv = ["tunbed", "ras"]
cli.main()
"""


class FreshMachine(unittest.TestCase):
    def test_reaches_bootstrap_with_the_standard_library_alone(self):
        scripts = os.path.join(HERE, "..", "..", "scripts")
        p = subprocess.run([sys.executable, "-B", "-c", FRESH_CHILD, scripts],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 42, f"did not reach bootstrap: {p.stderr[-800:]}")
        self.assertIn("tunbedlib.cli", p.stdout)
        self.assertNotIn("tunbedlib.plots", p.stdout)

    def test_the_blocker_blocks(self):
        # The stand-in for a fresh machine must itself refuse matplotlib, or the test above
        # proves nothing.
        child = FRESH_CHILD.replace("from tunbedlib import cli, runloop", "import matplotlib")
        p = subprocess.run([sys.executable, "-B", "-c", child, "."], capture_output=True,
                           text=True, timeout=30)
        self.assertIn("No module named 'matplotlib' (blocked)", p.stderr)


if __name__ == "__main__":
    unittest.main()
