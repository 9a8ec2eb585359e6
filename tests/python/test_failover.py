"""Unit tests of the failover's runner logic (scripts/tunbedlib/failover.py, failreport.py,
health.py): refusals of bad input, FRR's configuration of the pair, and the figures a raw
record gives (detection, takeover, RFC 6201 outage, the longest TCP gap, failback), on a
record made up to have known answers."""

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import health, pair, records, scenario  # noqa: E402
from tunbedlib.kinds import failover, failover_analysis as failreport  # noqa: E402
from tunbedlib.kinds import failover_report  # noqa: E402


def args(**kw):
    base = dict(faults=None, sessions=None, repeats=None, workers=None, fail_at=None,
                failback_after=None, tail=None, udp_rate=None, mode=None, topology="ras-pair")
    base.update(kw)
    return types.SimpleNamespace(**base)


class Refusals(unittest.TestCase):
    def refused(self, msg, **kw):
        with self.assertRaises(scenario.ScenarioError) as e:
            failover.parse(args(**kw))
        self.assertEqual(str(e.exception), msg)

    def test_defaults(self):
        s = failover.parse(args())
        self.assertEqual((s.faults, s.sessions, s.mode, s.udp_rate),
                         (("kill", "stop", "link", "cut"), 8, "gre+seq", 20_000_000))
        self.assertTrue(s.topology.endswith("ras-pair.topo"))

    def test_bad_values(self):
        self.refused("--faults: unknown fault 'boom': expected some of kill, stop, link, cut",
                     faults="kill,boom")
        self.refused("--sessions: '0' is not 1 to 10000", sessions=0)
        self.refused("--fail-at: '0.5' is not 1 to 600 seconds", fail_at=0.5)
        self.refused("--udp-rate: 'fast' is not a rate of 8kbit to 10gbit", udp_rate="fast")
        self.refused("--mode: bad gregw mode 'gre+seq+seq': expected gre or gre-udp, "
                     "optionally +seq, +csum, +nooffload, +aqm, +iptx, +nofq, +merge (the key "
                     "is always 7)", mode="gre+seq+seq")
        self.refused("--mode: bad gregw mode 'gre+key': expected gre or gre-udp, optionally "
                     "+seq, +csum, +nooffload, +aqm, +iptx, +nofq, +merge (the key is always 7)",
                     mode="gre+key")
        self.refused("--mode: bad gregw mode 'gre-udp+iptx': +iptx is plain GRE's (gre): "
                     "GRE-in-UDP always leaves on UDP sockets (the key is always 7)",
                     mode="gre-udp+iptx")
        self.refused("--topology: ras has no gateway pair for the failover (no host core, "
                     "gwb1, gwb2): use ras-pair", topology="ras")
        self.refused("--topology: nope.topo: cannot read: No such file or directory",
                     topology="nope.topo")

    def test_rates(self):
        self.assertEqual(failover.parse(args(udp_rate="100mbit")).udp_rate, 100_000_000)
        self.assertEqual(failover.parse(args(udp_rate="64k")).udp_rate, 64_000)

    def test_one_mapping_of_modes(self):
        """The pair's gregw takes its flags from the one mapping of modes (drivers/gregw.py),
        with the key always on: every option of a mode, aqm, iptx and nofq too."""
        p = failover.Pair(failover.parse(args(mode="gre+seq+aqm+nofq")), "tbx", "/s")
        cmd, sock = p.gregw_cmd("gwb1")
        self.assertEqual(cmd[cmd.index("--encap"):], [
            "--encap", "gre", "--key", "7", "--seq", "--aqm", "codel", "--fair-queue", "off",
            "--ctl", "/s/gwb1.sock", "--workers", "1"])


class FrrConfig(unittest.TestCase):
    def test_passive_announces_a_longer_path(self):
        b1, b2 = pair.frr_configs("gwb1")["bgpd"], pair.frr_configs("gwb2")["bgpd"]
        for b in (b1, b2):
            self.assertIn("network 198.18.6.1/32", b)
            self.assertIn("bfd profile fast", b)
        self.assertNotIn("prepend", b1)
        self.assertIn("set as-path prepend 65010 65010", b2)
        self.assertIn("neighbor 198.18.5.1 route-map passive out", b2)

    def test_core_routes_the_client_lan_via_the_service_address(self):
        c = pair.frr_configs("core")
        self.assertEqual(c["staticd"].splitlines()[-1], "ip route 198.18.1.0/24 198.18.6.1")
        for peer in ("198.18.4.2", "198.18.5.2"):
            self.assertIn(f"neighbor {peer} bfd profile fast", c["bgpd"])


def made_up_record():
    """Fault at 10.0 s, repair at 14.0 s; core moves to gwb2 at 10.4, back at 14.5; TCP
    delivers nothing from 10.0 to 10.6; 500 of 2500 datagrams/s lost before the repair."""
    ivs = []
    for i in range(100):
        start = 8.0 + i * 0.1 - 8.0
        zero = 10.0 <= 8.0 + i * 0.1 < 10.6
        ivs.append({"start": round(start, 1), "end": round(start + 0.1, 1),
                    "bytes": 0 if zero else 1000})
    return {
        "fault": "kill", "repeat": 1, "t_start": 8.0, "t_fault": 10.0, "t_repair": 14.0,
        "settings": {"udp_rate": 20_000_000, "sessions": 4},
        "routes": [(8.0, "gwb1"), (10.3, None), (10.4, "gwb2"), (14.5, "gwb1")],
        "health": {"gwb1": [{"t": 8.1, "state": "up", "why": "start"},
                            {"t": 10.3, "state": "down", "why": "connection refused"}]},
        "tcp": {"measure_start_mono_s": 8.0, "measure_end_mono_s": 18.0, "complete": True,
                "config": {"sessions": 4}, "intervals": ivs,
                "tcp": {"failed": 0, "verify": {"mismatches": 0}, "retransmits": 7,
                        "bits_per_second": 2e9,
                        "per_session": [{"received": 10}, {"received": 20}]}},
        "udp": [{"udp": {"lost": 1000}}, {"udp": {"lost": 0}}],
        "gateways": {"gwa": {"seq": {"resyncs": 2, "out_of_window": 8}},
                     "gwb2": {"total": {"tun_tx_packets": 5000}}},
    }


class Figures(unittest.TestCase):
    def test_made_up_record(self):
        r = failreport.analyse(made_up_record())
        self.assertEqual(r["detection_s"], 0.3)
        self.assertEqual(r["takeover_s"], 0.4)
        self.assertEqual(r["failback_s"], 0.5)
        self.assertEqual(r["outage_s"], 0.4)  # 1000 lost / 2500 per second
        self.assertEqual(r["failback_outage_s"], 0.0)
        self.assertEqual(r["tcp_gap_s"], 0.6)
        self.assertEqual((r["survived"], r["reset"], r["wrong_bytes"], r["bytes"]), (4, 0, 0, 30))
        self.assertEqual((r["gwa_seq_resyncs"], r["passive_decap_packets"]), (2, 5000))

    def test_no_takeover_is_said(self):
        rec = made_up_record()
        rec["routes"] = [(8.0, "gwb1"), (10.3, None)]
        s = failreport.summarise([failreport.analyse(rec)])
        line = failover_report.headline(s)[0]
        self.assertIn("takeover after not measured", line)
        self.assertIn("the passive took over in only 0 of 1 repeats", line)

    def test_headline_medians(self):
        rows = []
        for lost in (1000, 1250, 2500):
            rec = made_up_record()
            rec["udp"][0]["udp"]["lost"] = lost
            rows.append(failreport.analyse(rec))
        line = failover_report.headline(failreport.summarise(rows))[0]
        self.assertTrue(line.startswith("kill -9 of gwb1's gregw: 0.5 s outage (0.4-1)"), line)
        self.assertIn("4 of 4 sessions survived, 0 wrong bytes", line)


class Format1(unittest.TestCase):
    def test_cpu_as_tunbed_sample_has_it(self):
        """A format 1 record's CPU (the runner's own /proc reader: per core busy and total
        ticks, per gateway its threads) reads as one machine of tunbed-sample's, and gives
        each gateway's share of each core over time as format 1's plot computed it."""
        with open(os.path.join(HERE, "data", "formats", "failover-1", "runs",
                               "kill-r1.json")) as f:
            old = json.load(f)
        new = records.read_record(failover.KIND, old)
        self.assertEqual((new["format"], new["kind"]), (2, "failover"))
        host = new["hosts"][0]
        self.assertEqual(sorted(host["processes"].values()),
                         ["gregw gwa", "gregw gwb1", "gregw gwb2"])
        cpu = old["cpu"]
        for gw in ("gwa", "gwb1", "gwb2"):
            for core in range(len(cpu[0]["cores"])):
                want = []
                for a, b in zip(cpu, cpu[1:]):
                    dt = b["cores"][core][1] - a["cores"][core][1]
                    prev = {tid: ticks for tid, ticks, _ in a["threads"].get(gw, [])}
                    used = sum(ticks - prev[tid] for tid, ticks, c in b["threads"].get(gw, [])
                               if c == core and tid in prev)
                    want.append((b["t"], 100.0 * used / dt if dt > 0 else 0))
                got = failreport.core_shares(host, f"gregw {gw}", str(core))
                self.assertEqual(got, want, (gw, core))
                self.assertGreater(max(v for _, v in got), 10 if core == 0 else -1)


class HealthCheck(unittest.TestCase):
    def test_refused_missing_and_hung(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        path = os.path.join(d, "gw.sock")
        self.assertEqual(health.ask(path, 0.1), "no control socket")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(4)
        # Accepted and never answered: a hung (SIGSTOPped) gregw.
        self.assertEqual(health.ask(path, 0.1), "no answer within 0.1 s")

        def answer():
            c, _ = srv.accept()
            c.recv(100)
            c.sendall(b'{"total": {}}')
            c.close()
        srv.close()
        os.unlink(path)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(4)
        t = threading.Thread(target=answer)
        t.start()
        self.assertIsNone(health.ask(path, 2.0))
        t.join()
        srv.close()
        os.unlink(path)
        os.rmdir(d)


if __name__ == "__main__":
    unittest.main()
