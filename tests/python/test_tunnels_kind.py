"""tunbed tunnels without root (docs/tunnels.md): the pairing of sessions with tunnels from
tunbed-traffic's per-session sites (tunnels_point.counters), the per-tunnel counters checked
against the sessions (tunnels_report.check: each disagreement in words), which tunnels carried
sessions in words, Jain's index across tunnels (each tunnel its sessions' sum), and the plan's
points and keys."""

import argparse
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))

from tunbedlib import analysis  # noqa: E402
from tunbedlib.common import ScenarioError  # noqa: E402
from tunbedlib.kinds import tunnels, tunnels_point, tunnels_report  # noqa: E402


def rows(n):
    """tunnels.tsv's rows of n tunnels, as topo/tunnels.sh writes them."""
    return [{"name": f"t{i:05d}", "client4": f"198.18.{64 + i // 256}.{i % 256}",
             "server4": f"198.18.{128 + i // 256}.{i % 256}"} for i in range(n)]


def tunnel(tx, rx, back=10, back_bytes=520):
    return {"tx_packets": tx, "tx_bytes": tx * 1500, "rx_packets": back, "rx_bytes": back_bytes,
            "drops": {"no_seq": 0}}, \
        {"tx_packets": back, "tx_bytes": back_bytes, "rx_packets": rx, "rx_bytes": rx * 1500,
         "drops": {}}


class Counters(unittest.TestCase):
    def test_sessions_pair_with_their_tunnels(self):
        r = rows(4)
        sessions = [{"id": i, "remote": r[i % 3]["server4"], "bits_per_second": 1e8 * (i + 1),
                     "sent": 1000 * (i + 1), "server_received": 1000 * (i + 1)}
                    for i in range(5)]
        a, b = {}, {}
        for x in r[:3]:
            a[x["name"]], b[x["name"]] = tunnel(100, 100)
        a["t00003"], b["t00003"] = {"tx_packets": 0, "rx_packets": 2}, {"tx_packets": 1}
        out = tunnels_point.counters(r, {"tcp": {"per_session": sessions}}, a, b)
        self.assertEqual([(t["name"], t["sessions"], t["bits_per_second"], t["server_received"])
                          for t in out["carried"]],
                         [("t00000", 2, 5e8, 5000), ("t00001", 2, 7e8, 7000),
                          ("t00002", 1, 3e8, 3000)])
        self.assertEqual(out["carried"][0]["gwa"], {"tx_packets": 100, "tx_bytes": 150000,
                                                    "rx_packets": 10, "rx_bytes": 520,
                                                    "drops": 0})
        self.assertEqual(out["idle"], {"tunnels": 1, "packets": 3})


class Check(unittest.TestCase):
    def carried(self, **change):
        a, b = tunnel(100, 100)
        t = {"name": "t00007", "sessions": 1, "bits_per_second": 1e9, "server_received": 140000,
             "gwa": dict(a, drops=0), "gwb": dict(b, drops=0)}
        for k, v in change.items():
            role, field = k.split("_", 1)
            t[role][field] = v
        return {"carried": [t], "idle": {"tunnels": 3, "packets": 0}}

    def test_agreeing_counters(self):
        self.assertEqual(tunnels_report.check(self.carried()), [])

    def test_each_disagreement_in_words(self):
        rows_ = [
            ({"gwb_rx_packets": 101}, "t00007 to the server: 100 packets, 150000 bytes in, 101 "
                                      "packets, 150000 bytes out"),
            ({"gwa_rx_bytes": 521}, "t00007 back: 10 packets, 520 bytes in, 10 packets, 521 "
                                    "bytes out"),
            ({"gwb_rx_packets": 97}, "3 packets to gwb lost on the way, 0 counted as dropped"),
            ({"gwb_tx_packets": 12}, "2 packets to gwa lost on the way, 0 counted as dropped"),
        ]
        for change, words in rows_:
            with self.subTest(change=change):
                self.assertEqual(tunnels_report.check(self.carried(**change)), [words])
        t = self.carried(gwa_tx_bytes=100000, gwb_rx_bytes=100000)
        self.assertEqual(tunnels_report.check(t), [
            "t00007: gwb took out 100000 bytes, less than its sessions' 140000"])
        t = self.carried()
        t["carried"][0]["server_received"] = 0
        self.assertEqual(tunnels_report.check(t), ["t00007: its 1 session moved nothing"])
        t = self.carried(gwa_tx_bytes=0, gwb_rx_bytes=0)
        self.assertEqual(tunnels_report.check(t)[0], "t00007 carried no bytes")
        t = self.carried()
        t["idle"]["packets"] = 4
        self.assertEqual(tunnels_report.check(t),
                         ["4 packets on tunnels without sessions"])

    def test_losses_counted_as_drops_agree(self):
        """Packets lost between the gateways agree when as many were counted as dropped: by
        the receiver before it knew their tunnel (its rings, its transit device), or by
        tunnel."""
        t = self.carried(gwb_rx_packets=97)
        t["unattributed"] = {"gwa": 0, "gwb": 3}
        self.assertEqual(tunnels_report.check(t), [])
        self.assertEqual(tunnels_report.lost(t), 3)
        t = self.carried(gwb_rx_packets=97, gwa_drops=2)
        self.assertEqual(tunnels_report.check(t),
                         ["3 packets to gwb lost on the way, 2 counted as dropped"])
        t["unattributed"] = {"gwb": 1}
        self.assertEqual(tunnels_report.check(t), [])


class Words(unittest.TestCase):
    def test_carried(self):
        one = lambda i, s=1: {"name": f"t{i:05d}", "sessions": s}  # noqa: E731
        w = tunnels_report.carried_words
        self.assertEqual(w([one(0, 64)], 1), "the one tunnel, 64 sessions")
        self.assertEqual(w([one(i) for i in range(100)], 100), "all 100, 1 session each")
        self.assertEqual(w([one(i) for i in range(64)], 1000),
                         "t00000 to t00063 (64 of 1000), 1 session each")
        self.assertEqual(w([one(0)], 10), "t00000 (1 of 10), 1 session each")
        self.assertEqual(w([one(i, 2 if i < 6 else 1) for i in range(10)], 10),
                         "all 10, 1 to 2 sessions each: with every session alike, Jain's index "
                         "across tunnels would be 0.914")

    def test_jain(self):
        self.assertEqual(analysis.jain([3.0] * 7), 1.0)
        self.assertAlmostEqual(analysis.jain([1, 0, 0, 0]), 0.25)
        self.assertIsNone(analysis.jain([]))
        self.assertIsNone(analysis.jain([0, 0]))


class Plan(unittest.TestCase):
    def args(self, **kw):
        base = {"tunnels_counts": None, "sessions": "64", "gateway": "gregw", "encap": "gre",
                "workers": "2", "time": "10", "warmup": "2", "repeats": "3", "verify": False,
                "prefix": "tb", "results": "/nonexistent"}
        return argparse.Namespace(**(base | kw))

    def test_default_counts_and_keys(self):
        plan = tunnels.KIND.check(self.args())
        self.assertEqual([p.tunnels for p in plan.points], [1, 10, 100, 1000, 10000])
        items = tunnels.KIND.items(plan)
        self.assertEqual(len(items), 15)
        self.assertEqual(items[4].key, "gregw-gre-w2-n10000-s64-r1")
        self.assertEqual(items[0].label, "gregw gre 2w, 1 tunnel, 64 sessions, repeat 1")

    def test_refusals(self):
        for kw, words in [({"tunnels_counts": "0"}, "--tunnels-counts: '0' is not 1 to 16384"),
                          ({"sessions": "10001"}, "--sessions: '10001' is not 1 to 10000"),
                          ({"gateway": "wireguard-go"}, "--gateway wireguard-go: not built yet"),
                          ({"time": "x"}, "--time: 'x' is not 0.1 to 3600 seconds")]:
            with self.subTest(kw=kw):
                with self.assertRaises(ScenarioError) as e:
                    tunnels.KIND.check(self.args(**kw))
                self.assertTrue(str(e.exception).startswith(words), str(e.exception))


if __name__ == "__main__":
    unittest.main()
