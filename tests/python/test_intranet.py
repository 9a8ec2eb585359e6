"""Unit tests of tunbed intranet (scripts/tunbedlib/intranet*.py): rates and sizes as the C tools
read them, scenario files good and bad with their exact lines, the checks made before anything
starts, the CPU plan, the topology each profile gets, and the analysis, headline and tables of
a recorded run (data/intranet-runs.json: the shipped c1-1.5g, two repeats, and c2-nocap, one,
at 1 and 4 streams, 2 s each, on a busy 2-CPU machine)."""

import html
import json
import os
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import document, render  # noqa: E402
from tunbedlib.kinds import intranet_analysis, intranet_bed as intranet_run  # noqa: E402
from tunbedlib.kinds import intranet_plan as intranet, intranet_report as ir  # noqa: E402
from tunbedlib.kinds.intranet_plan import IntranetError, Profile  # noqa: E402


def recorded():
    with open(os.path.join(HERE, "data", "intranet-runs.json")) as f:
        return json.load(f)


class Values(unittest.TestCase):
    def test_rates(self):
        for text, want in (("1gbit", 10**9), ("2.5g", 2500 * 10**6), ("100mbit", 10**8),
                           ("1000000", 10**6), ("1.5G", 1500 * 10**6), ("8kbit", 8000),
                           ("1t", 10**12), (".5g", 500 * 10**6)):
            self.assertEqual(intranet.parse_rate(text, "rate"), want, text)
        for text in ("", "-1", "1gbitt", "1 g", "0", "fast", "1e9", "1gbps"):
            with self.assertRaises(IntranetError, msg=text):
                intranet.parse_rate(text, "rate")

    def test_sizes(self):
        for text, want in (("125000", 125000), ("64k", 65536), ("1m", 1 << 20),
                           ("1MiB", 1 << 20), ("2kb", 2048)):
            self.assertEqual(intranet.parse_size(text, "burst"), want, text)
        for text in ("", "1.5m", "-1", "1x"):
            with self.assertRaises(IntranetError, msg=text):
                intranet.parse_size(text, "burst")

    def test_rate_text(self):
        self.assertEqual([intranet.rate_text(x) for x in (1.5e9, 2e9, 5e8, 64e3, 12)],
                         ["1.5 Gbit/s", "2 Gbit/s", "500 Mbit/s", "64 kbit/s", "12 bit/s"])

    def test_profiles(self):
        self.assertEqual(list(intranet.SHIPPED), ["c1-1.5g", "c2-2g", "c2-nocap"])
        self.assertEqual([p.title() for p in intranet.SHIPPED.values()],
                         ["1 vCPU, 1.5 Gbit/s cap", "2 vCPU, 2 Gbit/s cap", "2 vCPU, uncapped"])
        # tunbed-topo's defaults: the bucket holds 1 ms at the rate, the queue 10 ms more.
        self.assertEqual(Profile("a", rate=10**9).bucket(), (125000, 1375000))
        self.assertEqual(Profile("a", rate=10**9, burst=65536).bucket(), (65536, 65536 + 1250000))
        self.assertEqual(Profile("a").bucket(), (0, 0))
        self.assertEqual(intranet.udp_size(1500, "198.18.5.2"), 1472)
        self.assertEqual(intranet.udp_size(9000, "2001:2::2"), 8952)


FILE = """; a zone
[intranet]
name = zone-a
profiles = big, c2-2g        ; one of the file's, one shipped
streams = 16, 1, 4, 4
time = 30
warmup = 5
repeats = 2
udp_rate = 1gbit, 50%
ping_count = 20
ping_interval = 0.5

[profile big]
label = 8 vCPU, 10 Gbit/s cap
vcpus = 8
rate = 10gbit
burst = 1m
limit = 4m
congestion = cubic
sockbuf = 1m
tcp_rmem = 4096 131072 16777216
tcp_wmem = 4096  16384 16777216
mtu = 9001
"""


class Files(unittest.TestCase):
    def test_good(self):
        sc = intranet.parse(FILE, "zone.ini")
        self.assertEqual((sc.name, sc.profiles, sc.streams, sc.time, sc.warmup, sc.repeats),
                         ("zone-a", ["big", "c2-2g"], [1, 4, 16], 30, 5, 2))
        self.assertEqual([(r.text, r.bps, r.percent) for r in sc.udp_rates],
                         [("1gbit", 10**9, 0), ("50%", 0, 50)])
        self.assertEqual((sc.ping_count, sc.ping_interval), (20, 0.5))
        p = sc.defined["big"]
        self.assertEqual((p.label, p.vcpus, p.rate, p.burst, p.limit, p.congestion, p.sockbuf,
                          p.tcp_rmem, p.tcp_wmem, p.mtu),
                         ("8 vCPU, 10 Gbit/s cap", 8, 10**10, 1 << 20, 4 << 20, "cubic", 1 << 20,
                          "4096 131072 16777216", "4096 16384 16777216", 9001))
        self.assertEqual(sc.udp_rates[1].of(p), 5 * 10**9)
        # Defaults: the matrix.
        d = intranet.Scenario()
        self.assertEqual((d.streams, d.time, d.warmup, d.repeats, d.ping_count, d.ping_interval,
                          [r.bps for r in d.udp_rates]), ([1, 4, 8, 16], 10, 2, 3, 100, 0.2,
                                                          [10**9]))

    def test_bad(self):
        for text, want in (
                ("[intranet]\nstreams = 1, 10001\n",
                 "f:2: bad value '10001' for streams: expected 1 to 10000"),
                ("[intranet]\nstreams = many\n",
                 "f:2: bad value 'many' for streams: expected a whole number"),
                ("[intranet]\ntime = 0\n", "f:2: bad value '0' for time: expected 1 to 3600"),
                ("[intranet]\nudp_rate = 1gbps\n",
                 "f:2: bad value '1gbps' for udp_rate: expected a bit rate such as 1gbit, 2.5g "
                 "or 100mbit"),
                ("[intranet]\nudp_rate = 200g\n",
                 "f:2: bad value '200g' for udp_rate: expected at most 100gbit"),
                ("[intranet]\nudp_rate = 0%\n",
                 "f:2: bad value '0' for udp_rate: expected 1 to 1000"),
                ("[intranet]\nping_count = 0\n",
                 "f:2: bad value '0' for ping_count: expected 1 to 100000"),
                ("[intranet]\nspeed = 1\n",
                 "f:2: unknown key 'speed' in [intranet]: expected one of name, profiles, "
                 "streams, time, warmup, repeats, udp_rate, ping_count, ping_interval"),
                ("[intranet]\ntime = 1\ntime = 2\n",
                 "f:3: duplicate key 'time' (first at line 2)"),
                ("[intranet]\n[intranet]\n", "f:2: [intranet] given twice (first at line 1)"),
                ("[profile a]\n[profile  a]\n",
                 "f:2: profile 'a' defined twice (first at line 1)"),
                ("[profile a/b]\n",
                 "f:1: bad profile name 'a/b': 1 to 32 of letters, digits, '.', '-' and '_'"),
                ("[scenario]\n", "f:1: unknown section [scenario]: expected [intranet] or "
                                 "[profile NAME]"),
                ("[intranet\n", "f:1: missing ']' in '[intranet'"),
                ("time = 1\n", "f:1: 'time = 1' outside a section"),
                ("[intranet]\ntime\n", "f:2: expected 'key = value', got 'time'"),
                ("[intranet]\ntime =\n", "f:2: key 'time' has no value"),
                ("[profile a]\nrate = 1gbitt\n",
                 "f:2: bad value '1gbitt' for rate: expected a bit rate such as 1gbit, 2.5g or "
                 "100mbit"),
                ("[profile a]\nrate = 40g\n",
                 "f:2: bad value '40g' for rate: expected 8kbit to 32gbit (tbf's range)"),
                ("[profile a]\nburst = 1.5m\n",
                 "f:2: bad value '1.5m' for burst: expected bytes such as 125k or 1m"),
                ("[profile a]\nvcpus = 0\n", "f:2: bad value '0' for vcpus: expected 1 to 1024"),
                ("[profile a]\nmtu = 1000\n", "f:2: bad value '1000' for mtu: expected 1280 to "
                                              "65535"),
                ("[profile a]\ncongestion = no way\n",
                 "f:2: bad value 'no way' for congestion: expected an algorithm's name, e.g. "
                 "cubic or bbr"),
                ("[profile a]\ntcp_rmem = 4096 131072\n",
                 "f:2: bad value '4096 131072' for tcp_rmem: expected three byte counts, min "
                 "default max, such as 4096 131072 16777216"),
                ("[profile a]\nsockbuf = 1k\n",
                 "f:2: bad value '1k' for sockbuf: expected 4096 to 1073741824 bytes"),
                ("[profile a]\nstreams = 4\n",
                 "f:2: unknown key 'streams' in [profile a]: expected one of label, vcpus, rate, "
                 "burst, limit, congestion, sockbuf, tcp_rmem, tcp_wmem, mtu")):
            with self.subTest(text=text):
                with self.assertRaises(IntranetError) as e:
                    intranet.parse(text, "f")
                self.assertEqual(str(e.exception), want)

    def test_overrides(self):
        args = types.SimpleNamespace(profiles="c2-2g,c1-1.5g", streams="8,2", time="3",
                                     warmup="0", repeats="1", udp_rate="150%", ping_count="5",
                                     ping_interval="0.01")
        sc = intranet.overrides(intranet.Scenario(), args)
        self.assertEqual((sc.profiles, sc.streams, sc.time, sc.warmup, sc.repeats,
                          sc.udp_rates[0].percent, sc.ping_count, sc.ping_interval),
                         (["c2-2g", "c1-1.5g"], [2, 8], 3, 0, 1, 150, 5, 0.01))
        for key, value, want in (
                ("streams", "0", "bad value '0' for --streams: expected 1 to 10000"),
                ("udp_rate", "fast", "bad value 'fast' for --udp-rate: expected a bit rate such "
                                     "as 1gbit, 2.5g or 100mbit"),
                ("ping_interval", "0", "bad value '0' for --ping-interval: expected 0.001 to 60"),
                ("repeats", "2.5", "bad value '2.5' for --repeats: expected a whole number")):
            a = types.SimpleNamespace(**{k: None for k in vars(args)} | {key: value})
            with self.assertRaises(IntranetError) as e:
                intranet.overrides(intranet.Scenario(), a)
            self.assertEqual(str(e.exception), want)


class Checks(unittest.TestCase):
    def test_namespaces(self):
        sc = intranet.parse(FILE, "zone.ini")
        got = intranet.resolve(sc, cpus=list(range(16)), available_cc=["reno", "cubic", "bbr"])
        self.assertEqual([p.name for p in got], ["big", "c2-2g"])
        # By default the file's profiles, else the shipped ones.
        sc.profiles = []
        self.assertEqual([p.name for p in intranet.resolve(sc, cpus=[0, 1, 2, 3, 4, 5, 6, 7])],
                         ["big"])
        self.assertEqual([p.name for p in intranet.resolve(intranet.Scenario(), cpus=[0, 1])],
                         ["c1-1.5g", "c2-2g", "c2-nocap"])
        for change, want in (
                ({"profiles": ["c9"]}, "unknown profile 'c9': expected one of c1-1.5g, c2-2g, "
                                       "c2-nocap, big"),
                ({"profiles": ["big"]}, "profile 'big': 8 vCPUs per endpoint, but this machine "
                                        "has 2 CPUs (0,1)"),
                ({"profiles": ["c2-nocap"], "udp_rates": intranet.parse_udp_rates("1g 50%")},
                 "--udp-rate 50%: profile 'c2-nocap' has no cap to take a share of: give a bit "
                 "rate such as 1gbit")):
            s = intranet.parse(FILE, "zone.ini")
            for k, v in change.items():
                setattr(s, k, v)
            with self.assertRaises(IntranetError) as e:
                intranet.resolve(s, cpus=[0, 1], available_cc=["reno", "cubic"])
            self.assertEqual(str(e.exception), want)
        s = intranet.parse(FILE.replace("vcpus = 8", "vcpus = 1"), "zone.ini")
        with self.assertRaises(IntranetError) as e:
            intranet.resolve(s, cpus=[0, 1], available_cc=["reno", "bbr"])
        self.assertEqual(str(e.exception), "profile 'big': congestion control 'cubic' is not "
                                           "available here (available: reno, bbr)")
        s = intranet.parse(FILE.replace("limit = 4m", "limit = 64k"), "zone.ini")
        s.profiles = ["big"]
        with self.assertRaises(IntranetError) as e:
            intranet.resolve(s, cpus=list(range(8)))
        self.assertEqual(str(e.exception), "profile 'big': limit 65536 is below the burst "
                                           "1048576: tbf's queue must hold its bucket")

    def test_hosts(self):
        hosts = types.SimpleNamespace(one=lambda role: types.SimpleNamespace(
            name={"client": "vm1", "server": "vm2"}[role]))
        got = intranet.resolve(intranet.Scenario(), hosts=hosts, nominal=2 * 10**9)
        self.assertEqual([(p.name, p.title(), p.nominal, p.rate) for p in got],
                         [("hosts", "vm1 -> vm2", 2 * 10**9, 0)])
        sc = intranet.Scenario(udp_rates=intranet.parse_udp_rates("50%"))
        self.assertEqual(sc.udp_rates[0].of(got[0]), 10**9)
        with self.assertRaises(IntranetError) as e:
            intranet.resolve(sc, hosts=hosts, nominal=0)
        self.assertEqual(str(e.exception), "--udp-rate 50%: profile 'hosts' has no cap or "
                                           "nominal bandwidth to take a share of: give a bit "
                                           "rate such as 1gbit")
        sc = intranet.parse("[profile cc]\ncongestion = cubic\n[profile c]\nrate = 1g\n", "f")
        sc.profiles = ["cc"]
        self.assertEqual([p.congestion for p in intranet.resolve(sc, hosts=hosts)], ["cubic"])
        sc.profiles = ["c"]
        with self.assertRaises(IntranetError) as e:
            intranet.resolve(sc, hosts=hosts)
        self.assertEqual(str(e.exception), "profile 'c' sets rate: the hosts mode measures the "
                                           "hosts as they are, with no cap of ours (a profile "
                                           "there may set only congestion, sockbuf, label)")

    def test_cpu_plan(self):
        plan = intranet.plan_cpus
        self.assertEqual(plan(Profile("a", vcpus=1), [0, 1]),
                         {"client": "0", "server": "1", "shared": False})
        self.assertEqual(plan(Profile("a", vcpus=2), [0, 1]),
                         {"client": "0,1", "server": "0,1", "shared": True})
        self.assertEqual(plan(Profile("a", vcpus=2), [0, 1, 2, 3, 4]),
                         {"client": "0,1", "server": "2,3", "shared": False})
        self.assertEqual(plan(Profile("a", vcpus=2), [2, 5, 7]),
                         {"client": "2,5", "server": "5,7", "shared": True})
        self.assertEqual(plan(Profile("a"), [0, 1]), {"client": "", "server": "", "shared": True})

    def test_runs_and_points(self):
        sc = intranet.Scenario(streams=[1, 4], udp_rates=intranet.parse_udp_rates("50%,1g"))
        p = Profile("c", rate=2 * 10**9)
        # 50% of the cap is 1g: one point, measured once (two would share one record's file).
        self.assertEqual(intranet.runs_of(sc, p), [("idle", 0, 0), ("tcp", 1, 0), ("tcp", 4, 0),
                                                   ("udp", 0, 10**9)])
        self.assertEqual(intranet.point_of(p, "udp", 0, 10**9)["key"], "c-udp-1000000000bps")
        self.assertEqual(intranet.point_of(p, "tcp", 16, 0)["key"], "c-tcp-s16")

    def test_topology(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.topo")
            intranet_run.topology(Profile("a", rate=10**9, mtu=9000,
                                          tcp_rmem="4096 131072 16777216"), path)
            with open(path) as f:
                text = f.read()
        # The cap on the link into the server only (the zone's egress and the server's), the
        # MTU on both links, the sysctls on both hosts.
        cap = text.split("[link cap]\n")[1]
        lan = text.split("[link lan]\n")[1].split("[link cap]")[0]
        self.assertTrue(cap.startswith("mtu = 9000\nrate = 1000000000bit\nburst = 125000\n"
                                       "limit = 1375000\n"), cap)
        self.assertTrue(lan.startswith("mtu = 9000\na = client\n"), lan)
        self.assertEqual(text.count("sysctl.net.ipv4.tcp_rmem = 4096 131072 16777216\n"), 2)
        self.assertIn("sysctl.net.ipv4.ping_group_range = 0 2147483647\n", text)


class Report(unittest.TestCase):
    def setUp(self):
        d = recorded()
        self.res = intranet_analysis.analyse_all(d["records"], d["meta"])

    def test_headline(self):
        self.assertEqual(ir.headlines(self.res), [
            "1 vCPU, 1.5 Gbit/s cap: 1 stream 1.07 Gbit/s (71% of cap), 4 streams 1.23 Gbit/s "
            "(82% of cap), ping 0.023 ms idle / 5.3 ms loaded, UDP 1 Gbit/s 0.00% loss",
            "2 vCPU, uncapped: 1 stream 10.53 Gbit/s, 4 streams 11.80 Gbit/s, ping 0.029 ms "
            "idle / 0.051 ms loaded, UDP 1 Gbit/s 0.00% loss",
            "NOTE: c1-1.5g-udp-1000000000bps: the client offered 501 Mbit/s of the 1 Gbit/s "
            "asked: the generator's limit here, so the loss is not the network's at that rate",
            "NOTE: c2-nocap-udp-1000000000bps: the client offered 540 Mbit/s of the 1 Gbit/s "
            "asked: the generator's limit here, so the loss is not the network's at that rate"])

    def test_numbers(self):
        s = self.res.summary["c1-1.5g-tcp-s4"]
        self.assertEqual(s["repeats"], 2)
        runs = [r for r in self.res.runs if r["key"] == "c1-1.5g-tcp-s4"]
        self.assertEqual(s["bits_per_second"]["median"],
                         sum(r["bits_per_second"] for r in runs) / 2)
        # The lowest stream is the lowest of the per-stream rates; every stream is kept.
        for r in runs:
            self.assertEqual(r["session_min_bps"], min(r["per_stream_bps"]))
            self.assertEqual(len(r["per_stream_bps"]), 4)
        u = [r for r in self.res.runs if r["kind"] == "udp"][0]
        self.assertEqual(u["udp_offered_bps"], u["udp_sent"] * 1472 * 8 / 2.0)

    def test_tables(self):
        header, rows = ir.throughput_table(self.res)
        self.assertEqual(header[:4], ("profile", "streams", "Gbit/s", "% of cap"))
        self.assertEqual(rows[0], ["1 vCPU, 1.5 Gbit/s cap", "1", "1.07 (0.77-1.36)", "71%",
                                   "1066 (774-1358)", "1.000 (1.000-1.000)", "0 (0-0)", "1", "2"])
        self.assertEqual([r[:4] for r in rows[2:]], [["2 vCPU, uncapped", "1",
                                                      "10.53 (10.53-10.53)", "-"],
                                                     ["2 vCPU, uncapped", "4",
                                                      "11.80 (11.80-11.80)", "-"]])
        _, rows = ir.latency_table(self.res)
        self.assertEqual(rows[0], ["1 vCPU, 1.5 Gbit/s cap", "0.023 / 0.015 / 0.033 / 0.0056",
                                   "0.0", "5.3 / 6.8 / 1.2 (4 streams)", "0.0", "0.13 / 17",
                                   "5.6 / 27"])
        _, rows = ir.udp_table(self.res)
        self.assertEqual(rows[0][:5], ["1 vCPU, 1.5 Gbit/s cap", "1 Gbit/s", "0.501 (0.489-0.514)",
                                       "0.501 (0.489-0.514)", "0.00 (0.00-0.00)"])
        _, rows = ir.instance_table(self.res)
        self.assertEqual(rows[0][:4], ["1 vCPU, 1.5 Gbit/s cap",
                                       "1.5 Gbit/s, 187500 B, 2062500 B", "0 / 1",
                                       "bbr (the system's)"])
        self.assertEqual(rows[1][1:3], ["none", "0,1 / 0,1 (shared)"])
        self.assertEqual(ir.probe_words(self.res)[0],
                         "1 vCPU, 1.5 Gbit/s cap: idle the TCP probe's p50 0.13 ms against the "
                         "echo's average 0.023 ms (0.11 ms apart); at 4 streams the TCP probe's "
                         "p50 5.6 ms against the echo's average 5.3 ms (0.33 ms apart)")

    def test_writers(self):
        svg = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>'
        res = intranet_analysis.analyse_all(self.res.records, dict(self.res.meta, scenario="a<b>"),
                                            False)
        doc = ir.document(res)
        doc.plots = [document.Plot("Throughput against streams", "throughput", svg)]
        with tempfile.TemporaryDirectory() as d:
            render.write_all(d, doc)
            with open(os.path.join(d, "report.md")) as f:
                md = f.read()
            with open(os.path.join(d, "report.html"), encoding="utf-8") as f:
                page = f.read()
            with open(os.path.join(d, "summary.csv")) as f:
                csv_lines = f.read().splitlines()
            with open(os.path.join(d, "summary.json")) as f:
                summary = json.load(f)
        lines = ir.headlines(res)
        self.assertIn("".join(f"- {line}\n" for line in lines), md)
        self.assertIn("**PARTIAL", md)
        self.assertIn("".join(f"<li>{html.escape(line)}</li>\n" for line in lines), page)
        self.assertLess(page.index('<ul class="headline"'), page.index("<table"))
        for section in ir.sections(res):
            for cells in section.table.rows:
                self.assertIn("| " + " | ".join(cells) + " |\n", md)
        self.assertIn("<title>tunbed a&lt;b&gt;: ", page)
        self.assertNotIn("<script", page)
        self.assertEqual(page.count("<svg"), 1)
        # A row per point: idle, 2 stream counts and UDP for each of the 2 profiles.
        self.assertEqual(len(csv_lines), 1 + 8)
        self.assertEqual(sorted(summary["summary"]), sorted({r["key"] for r in res.runs}))


if __name__ == "__main__":
    unittest.main(verbosity=2)
