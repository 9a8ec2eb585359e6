"""tunbed tunnels without root (docs/tunnels.md): the pairing of sessions with tunnels from
tunbed-traffic's per-session sites (tunnels_point.counters), the per-tunnel counters checked
against the sessions (tunnels_report.check: each disagreement in words), which tunnels carried
sessions in words, Jain's index across tunnels (each tunnel its sessions' sum), and the plan's
points and keys; the churn's pure parts (tunnels_churn.py: which change comes next, the add
lines of a tunnel file, replies, ICMP echoes, changes due), its plan and refusals, the upgrade
of a format 1 record, and a churn run's analysis against its baseline; vxlan's pure parts
(drivers/kernel.py: its ip -batch, its devices' counters, the kernel's memory), the tunnel
file read for it, the gateways of a run, the counts not run, and how far each gateway went;
ovs-gre's (drivers/ovs.py: its tunnel list, its rules' counters, its drops, its failures'
words)."""

import argparse
import copy
import json
import os
import select
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))

from tunbedlib import analysis, records  # noqa: E402
from tunbedlib.common import ScenarioError  # noqa: E402
from tunbedlib.drivers import DRIVERS, kernel, ovs, vpn  # noqa: E402
from tunbedlib.kinds import tunnels, tunnels_churn, tunnels_point, tunnels_report  # noqa: E402

FORMAT_1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "formats",
                        "tunnels-1", "runs", "gregw-gre-w2-n10-s16-r1.json")


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
        self.assertEqual(out["idle"], {"tunnels": 1, "packets": 3, "bytes": 0})


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

    def test_a_drop_before_the_tunnel_may_be_a_superpacket(self):
        """The transit device and the receiver's ring count a superpacket gwa wrote whole as
        one drop; gwa counted its segments: each such drop explains up to gwa's segments_max
        (the top of its histogram's largest bucket), and only gwa's towards gwb."""
        t = self.carried(gwb_rx_packets=20)
        t["unattributed"] = {"gwa": 0, "gwb": 2}
        self.assertEqual(tunnels_report.check(t),
                         ["80 packets to gwb lost on the way, 2 counted as dropped"])
        t["segments_max"] = {"gwa": 64, "gwb": 1}
        self.assertEqual(tunnels_report.check(t), [])
        t["segments_max"] = {"gwa": 32, "gwb": 64}
        self.assertEqual(tunnels_report.check(t), [
            "80 packets to gwb lost on the way, 64 counted as dropped (its 2 drops before a "
            "tunnel, superpackets of up to 32 segments)"])
        hist = {"1": 5, "2": 0, "3-4": 1, "5-8": 0, "9-16": 0, "17-32": 7, "33-64": 0, "65+": 0}
        stats = {"total": {"cost": {"tun_to_wire": {"superpacket_segments": hist}}}}
        self.assertEqual(tunnels_point.segments_max(stats), 32)
        hist["65+"] = 1
        self.assertEqual(tunnels_point.segments_max(stats), 123)
        self.assertEqual(tunnels_point.segments_max({}), 1)
        self.assertEqual(tunnels_point.segments_max(None), 1)


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
                "prefix": "tb", "results": "/nonexistent", "churn": None, "churn_tunnels": None,
                "setup_limit": "300", "rate": None}
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
                          ({"gateway": "vxlan,nope"}, "--gateway: unknown gateway 'nope': "
                           "expected one of gregw, vxlan, wireguard-go, ovs-gre"),
                          ({"gateway": "route"}, "--gateway: unknown gateway 'route': "
                           "expected one of gregw, vxlan, wireguard-go, ovs-gre"),
                          ({"gateway": " , "}, "--gateway: gateway needs at least one value"),
                          ({"gateway": "wireguard-go", "tunnels_counts": "1,101"},
                           "--tunnels-counts: '101' is more than wireguard-go's 100 tunnels"),
                          ({"gateway": "vxlan,vxlan"}, "--gateway: vxlan given twice in "
                                                       "gateways"),
                          ({"gateway": "vxlan", "churn": "10"}, "--churn: gregw's alone"),
                          ({"setup_limit": "0"}, "--setup-limit: '0' is not 1 to 3600 seconds"),
                          ({"time": "x"}, "--time: 'x' is not 0.1 to 3600 seconds")]:
            with self.subTest(kw=kw):
                with self.assertRaises(ScenarioError) as e:
                    tunnels.KIND.check(self.args(**kw))
                self.assertTrue(str(e.exception).startswith(words), str(e.exception))

    def test_churn_points_and_keys(self):
        plan = tunnels.KIND.check(self.args(churn="10,100", churn_tunnels="8", sessions="4"))
        self.assertEqual([(p.tunnels, p.churn, p.pattern, p.steady()) for p in plan.points],
                         [(8, 0.0, "duplex", 4), (8, 10.0, "duplex", 4), (8, 100.0, "duplex", 4)])
        self.assertTrue(plan.sc.verify)
        self.assertEqual([i.key for i in tunnels.KIND.items(plan)][:3],
                         ["gregw-gre-w2-n8-s4-churn0-r1", "gregw-gre-w2-n8-s4-churn10-r1",
                          "gregw-gre-w2-n8-s4-churn100-r1"])
        self.assertEqual(tunnels.KIND.items(plan)[1].label,
                         "gregw gre 2w, 8 tunnels, 4 sessions, churn 10/s, repeat 1")
        meta = tunnels.KIND.meta(plan)
        self.assertEqual((meta["counts"], meta["churn"]), ([8], [10.0, 100.0]))
        plan = tunnels.KIND.check(self.args(churn="1000"))
        self.assertEqual(plan.points[0].tunnels, tunnels.DEFAULT_CHURN_TUNNELS)
        self.assertEqual(plan.points[0].record()["churn"], 0.0)
        self.assertNotIn("churn", tunnels.KIND.check(self.args()).points[0].record())

    def test_churn_refusals(self):
        for kw, words in [
                ({"churn": "0"}, "--churn: '0' is not a rate above 0 and at most 100000 "
                                 "changes a second"),
                ({"churn": "10,-5"}, "--churn: '-5' is not a rate above 0"),
                ({"churn": "fast"}, "--churn: 'fast' is not a rate above 0"),
                ({"churn": "nan"}, "--churn: 'nan' is not a rate above 0"),
                ({"churn": "100001"}, "--churn: '100001' is not a rate above 0"),
                ({"churn": "10,10"}, "--churn: '10,10' names a rate twice"),
                ({"churn": "10", "churn_tunnels": "1"}, "--churn-tunnels: '1' is not 2 to 16384"),
                ({"churn": "10", "churn_tunnels": "7"},
                 "--churn-tunnels: '7' is odd: half the tunnels are steady, half changed"),
                ({"churn_tunnels": "8"}, "--churn-tunnels: only with --churn"),
                ({"churn": "10", "tunnels_counts": "1,10"},
                 "--tunnels-counts and --churn: one or the other"),
                ({"churn": "10", "rate": "fast"}, "bad value 'fast' for --rate: expected a bit "
                                                  "rate"),
                ({"churn": "10", "rate": "999"}, "--rate: '999' is not 1 kbit/s to 100 Gbit/s"),
                ({"rate": "1e6"}, "bad value '1e6' for --rate")]:
            with self.subTest(kw=kw):
                with self.assertRaises(ScenarioError) as e:
                    tunnels.KIND.check(self.args(**kw))
                self.assertTrue(str(e.exception).startswith(words), str(e.exception))

    def test_paced_sessions(self):
        plan = tunnels.KIND.check(self.args(churn="100", churn_tunnels="8", sessions="4",
                                            rate="50m"))
        self.assertEqual([p.rate for p in plan.points], [50000000, 50000000])
        items = tunnels.KIND.items(plan)
        self.assertEqual(items[1].key, "gregw-gre-w2-n8-s4-p50000000-churn100-r1")
        self.assertEqual(items[1].label,
                         "gregw gre 2w, 8 tunnels, 4 sessions at 50 Mbit/s, churn 100/s, repeat 1")
        self.assertEqual(plan.points[0].record()["rate"], 50000000)
        self.assertEqual(tunnels.KIND.meta(plan)["rate"], 50000000)
        self.assertEqual(tunnels_point.client_args("/files", plan.points[0]), [
            "--pairs", "/files/pairs", "--rate", "50000000"])
        plan = tunnels.KIND.check(self.args(gateway="vxlan", tunnels_counts="1", rate="1g"))
        self.assertEqual(tunnels.KIND.items(plan)[0].key, "vxlan-n1-s64-p1000000000-r1")
        plan = tunnels.KIND.check(self.args())
        self.assertNotIn("rate", plan.points[0].record())
        self.assertNotIn("rate", tunnels.KIND.meta(plan))
        self.assertEqual(tunnels_point.client_args("/files", plan.points[0]),
                         ["--pairs", "/files/pairs"])

    def test_gateways_points_and_keys(self):
        plan = tunnels.KIND.check(self.args(gateway="gregw,vxlan", tunnels_counts="1,10"))
        self.assertEqual([(p.gateway, p.tunnels, p.mode, p.workers) for p in plan.points],
                         [("gregw", 1, "gre", 2), ("gregw", 10, "gre", 2), ("vxlan", 1, "-", 0),
                          ("vxlan", 10, "-", 0)])
        items = tunnels.KIND.items(plan)
        self.assertEqual([i.key for i in items[:4]], [
            "gregw-gre-w2-n1-s64-r1", "gregw-gre-w2-n10-s64-r1", "vxlan-n1-s64-r1",
            "vxlan-n10-s64-r1"])
        self.assertEqual(items[3].label, "vxlan, 10 tunnels, 64 sessions, repeat 1")
        rec = plan.points[2].record()
        self.assertNotIn("workers", rec)
        self.assertEqual(rec["gateway"], "vxlan")
        meta = tunnels.KIND.meta(plan)
        self.assertEqual((meta["gateways"], meta["title"], meta["not_run"]),
                         (["gregw", "vxlan"], "tunnel-count scaling (gregw, vxlan)", []))
        self.assertNotIn("gateway", meta)

    def test_not_run(self):
        self.assertIsNone(tunnels.not_run("vxlan", 1000, 0.003, 300))
        self.assertEqual(tunnels.not_run("vxlan", 10000, 0.02, 300),
                         "not run: setup of 10000 vxlan tunnels would take ~400 s on both "
                         "gateways (20.0 ms a tunnel a side, a probe of 200 here), over "
                         "--setup-limit 300 s")
        self.assertIsNone(tunnels.not_run("vxlan", 10000, None, 300))


class Churn(unittest.TestCase):
    def test_schedule_removes_to_the_lag_then_alternates(self):
        s = tunnels_churn.Schedule(["a", "b", "c", "d"])
        self.assertEqual(s.lag, 2)
        got = []
        for _ in range(6):
            verb, name = s.next()
            got.append((verb, name))
            s.made(verb, name)
            s.free(name)
        self.assertEqual(got, [("remove", "a"), ("remove", "b"), ("add", "a"),
                               ("remove", "c"), ("add", "b"), ("remove", "d")])
        self.assertEqual((s.present, s.absent), (["a", "b"], ["c", "d"]))

    def test_schedule_skips_busy_tunnels(self):
        s = tunnels_churn.Schedule(["a", "b", "c"], lag=1)
        self.assertEqual(s.next(), ("remove", "a"))    # a: its change out, not made yet
        self.assertEqual(s.next(), ("remove", "b"))    # nothing absent yet: remove again
        s.made("remove", "a")
        self.assertEqual(s.next(), ("remove", "c"))    # a still busy: not added yet
        s.free("a")
        self.assertEqual(s.next(), ("add", "a"))
        self.assertEqual(s.next(), None)               # every tunnel busy: the change waits
        s.made("remove", "b")
        s.free("b")
        self.assertEqual(s.next(), ("add", "b"))

    def test_due(self):
        for now, want in ((9.99, 0), (10.0, 1), (10.005, 1), (10.01, 2), (10.5, 51)):
            with self.subTest(now=now):
                self.assertEqual(tunnels_churn.due(10.0, 100, now), want)

    def test_add_lines(self):
        text = ("; gwa.tunnels of the bed tunnels.topo, 2 tunnels (topo/tunnels.sh)\n"
                "[tunnel t00000]\npeer = 198.18.0.2\nkey = 1\n"
                "prefixes = 198.18.128.0/32, 2001:2:0:8000::/64\n"
                "encap = gre\nseq = no\ncsum = no\n"
                "[tunnel t00001]\npeer = 198.18.0.2 ; the far end\nkey = 2\n"
                "prefixes = 198.18.128.1/32\n")
        self.assertEqual(tunnels_churn.add_lines(text), {
            "t00000": "add t00000 peer = 198.18.0.2; key = 1; prefixes = 198.18.128.0/32, "
                      "2001:2:0:8000::/64; encap = gre; seq = no; csum = no",
            "t00001": "add t00001 peer = 198.18.0.2; key = 2; prefixes = 198.18.128.1/32"})

    def test_replies(self):
        ok = json.dumps({"changed": "add", "tunnel": "t00004", "tunnels": 8, "gen": 12})
        self.assertIsNone(tunnels_churn.reply_error(ok, "add", "t00004"))
        for reply, words in [
                ('{"error": "no tunnel \'t00004\'"}', "no tunnel 't00004'"),
                (ok, "unexpected reply"),
                ("", "not JSON"),
                ("[1]", "not a JSON object")]:
            with self.subTest(reply=reply):
                self.assertTrue(tunnels_churn.reply_error(reply, "remove", "t00004")
                                .startswith(words))

    def test_echoes(self):
        e = tunnels_churn.echo(0x1234, 7)
        self.assertEqual(e[:2], bytes([8, 0]))
        self.assertEqual(tunnels_churn.checksum(e), 0)  # a valid checksum sums to all ones
        self.assertEqual(struct.unpack("!HH", e[4:8]), (0x1234, 7))
        ip = bytes([0x45]) + bytes(19)
        reply = bytes([0]) + e[1:]
        self.assertEqual(tunnels_churn.echo_reply(ip + reply, 0x1234), 7)
        self.assertIsNone(tunnels_churn.echo_reply(ip + e, 0x1234))      # a request
        self.assertIsNone(tunnels_churn.echo_reply(ip + reply, 0x4321))  # another's
        self.assertIsNone(tunnels_churn.echo_reply(ip + reply[:7], 0x1234))
        self.assertIsNone(tunnels_churn.echo_reply(bytes([0x46]) + bytes(19) + reply, 0x1234))

    def test_churn_stats(self):
        before = {"gwa": {"tunnels": {"changes": 0, "busy_retries": 1},
                          "total": {"drops": {"bad_key": 2}}}}
        after = {"gwa": {"tunnels": {"changes": 40, "busy_retries": 3},
                         "total": {"drops": {"bad_key": 7, "tx_no_tunnel": 1}}}}
        self.assertEqual(tunnels_point.churn_stats(before, after), {"gwa": {
            "changes": 40, "busy_retries": 2, "bad_key": 5, "unknown_peer": 0,
            "tx_no_tunnel": 1}})


class FakeGregw:
    """A control socket that answers as gregw would: a first line `keep` keeps the connection
    (a reply of one line a command, in order), any other is answered and the connection
    closed (keep=False: an older gregw, which answers `keep` with an error); each change after
    delay_s, refusing the commands refuse(line) says. Counts the lines, the connections, and
    the most lines received and not yet answered."""

    def __init__(self, path, delay_s=0.0, refuse=lambda line: False, keep=True):
        self.delay_s, self.refuse, self.keep = delay_s, refuse, keep
        self.lines, self.connections, self.waiting, self.most = [], 0, 0, 0
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self.answer, args=(c,), daemon=True).start()

    def reply(self, line):
        if line == "keep":
            return ({"keep": True} if self.keep
                    else {"error": "unknown command 'keep': expected stats, flows, tunnels, "
                                   "add, replace or remove"})
        time.sleep(self.delay_s)
        verb, name = line.split()[:2]
        with self.lock:
            self.lines.append(line)
        return ({"error": f"tunnel '{name}': refused by the test"} if self.refuse(line)
                else {"changed": verb, "tunnel": name, "tunnels": 1, "gen": 1})

    def answer(self, c):
        buf, kept = b"", False
        with c:
            while True:
                data = c.recv(4096)
                if not data:
                    return
                *lines, buf = (buf + data).split(b"\n")
                with self.lock:
                    self.waiting += len(lines)
                    self.most = max(self.most, self.waiting - (0 if kept else 1))
                for i, raw in enumerate(lines):
                    line = raw.decode().strip()
                    reply = self.reply(line)
                    with self.lock:
                        self.waiting -= 1
                    c.sendall(json.dumps(reply).encode() + b"\n")
                    if not kept and not (line == "keep" and self.keep):
                        with self.lock:
                            self.waiting -= len(lines) - i - 1
                        return
                    kept = True

    def close(self):
        self.sock.close()


class ChurnLoop(unittest.TestCase):
    """tunnels_churn.Churn's loop against two fake gregws (no pings: they need root)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tunbed-churn-")
        self.addCleanup(lambda: __import__("shutil").rmtree(self.dir, ignore_errors=True))

    def churn(self, rate, stop_after_s, **fake):
        gw = {r: FakeGregw(os.path.join(self.dir, f"{r}.sock"), **fake) for r in ("gwa", "gwb")}
        for g in gw.values():
            self.addCleanup(g.close)
        plan = {"rate": rate, "ping": False,
                "socks": {r: os.path.join(self.dir, f"{r}.sock") for r in gw},
                "tunnels": [{"name": f"t{i}", "src": "198.18.64.1", "dst": "198.18.128.1",
                             "add": {r: f"add t{i} peer = 198.18.0.2; key = {i}" for r in gw}}
                            for i in range(20)]}
        r, w = os.pipe()
        end = os.fdopen(w, "w")
        timer = threading.Timer(stop_after_s, end.close)  # the end of the churn's input
        timer.start()
        with os.fdopen(r) as stdin:
            out = tunnels_churn.Churn(plan).run(stdin)
        timer.cancel()
        end.close()
        return out, gw

    def test_changes_made_as_asked_at_most_8_out_one_connection(self):
        # Replies 20 ms late at 2000 changes a second: without the bound, 40 would be out.
        out, gw = self.churn(2000, 0.3, delay_s=0.02)
        self.assertIsNone(out["error"])
        self.assertEqual(out["done"], out["started"])
        self.assertGreater(out["done"], 10)
        self.assertLess(out["done"], out["asked"])  # behind: 8 out, 20 ms each
        self.assertEqual(out["add"] + out["remove"], out["done"])
        # A change's reply time runs from its send: behind up to 7 others of 20 ms each, it
        # waits more than one reply's 20 ms.
        self.assertGreater(out["reply_ms"]["max"], 40)
        for g in gw.values():
            self.assertEqual(len(g.lines), out["done"])
            self.assertEqual(g.connections, 1)  # one kept connection for the whole churn
            self.assertLessEqual(g.most, tunnels_churn.CTL_IN_FLIGHT)
            self.assertGreater(g.most, 1)  # sent ahead of their replies
        # Each tunnel's changes alternate, a removal first, on each gateway.
        for name in ("t0", "t1", "t5"):
            verbs = [x.split()[0] for x in gw["gwa"].lines if x.split()[1] == name]
            self.assertEqual(verbs, ["remove", "add"] * (len(verbs) // 2)
                             + ["remove"] * (len(verbs) % 2), name)

    def test_a_refusal_stops_the_churn_with_its_text(self):
        out, gw = self.churn(1000, 5, refuse=lambda line: line.startswith("add t0 "))
        self.assertTrue(out["error"].startswith("gw"), out["error"])
        self.assertIn(": add t0 peer = 198.18.0.2; key = 0: tunnel 't0': refused by the test",
                      out["error"])
        # The refused change is not made; those out with it are answered and made.
        self.assertEqual(out["done"], out["started"] - 1)
        self.assertEqual(len(gw["gwa"].lines), out["started"])
        self.assertLess(out["span_s"], 5)  # stopped at the refusal, not at the input's end

    def test_a_gregw_that_does_not_keep_stops_the_churn(self):
        out, gw = self.churn(100, 5, keep=False)
        self.assertIn("keep: gregw does not keep the connection: ", out["error"])
        self.assertIn("unknown command 'keep'", out["error"])
        self.assertEqual(out["done"], 0)
        self.assertLess(out["span_s"], 5)

    def test_an_idle_connection_opened_again(self):
        path = os.path.join(self.dir, "gwa.sock")
        fake = FakeGregw(path)
        self.addCleanup(fake.close)
        poller, socks = select.poll(), {}
        gw = tunnels_churn.Gateway("gwa", path, poller, socks)
        self.addCleanup(gw.close)

        def change(name, at):
            ch = tunnels_churn.Change("remove", name, at, at)
            gw.send(tunnels_churn.Command("gwa", f"remove {name}", ch, at), at)
            replies = []
            while len(replies) < len(gw.pending):  # the keep line's, if new, and this one's
                self.assertTrue(poller.poll(30000), "no reply within 30 s")
                gw.buf += gw.sock.recv(65536)
                *replies, _ = gw.buf.split(b"\n")
            gw.buf, last = b"", gw.pending[-1]
            gw.pending.clear()
            gw.last_io = at
            return json.loads(replies[-1]), last

        gw.open(0.0)
        self.assertEqual(change("t1", 0.0)[0]["tunnel"], "t1")
        sock = gw.sock
        # Idle no longer than IDLE_REOPEN_S: the same connection; longer: a new one.
        self.assertEqual(change("t2", tunnels_churn.IDLE_REOPEN_S)[0]["tunnel"], "t2")
        self.assertIs(gw.sock, sock)
        reply, last = change("t3", 2 * tunnels_churn.IDLE_REOPEN_S + 0.001)
        self.assertEqual(reply["tunnel"], "t3")
        self.assertIsNot(gw.sock, sock)
        self.assertEqual((fake.connections, fake.lines), (2, ["remove t1", "remove t2",
                                                              "remove t3"]))
        # Closed with a command out: the command is given back, without its reply.
        gw.pending.append(last)
        self.assertEqual(gw.close(), [last])
        self.assertEqual(socks, {})


class Vxlan(unittest.TestCase):
    TUNNELS = [("t00000", 1, ["198.18.128.0/32", "2001:2:0:8000::/64"]),
               ("t00300", 301, ["198.18.129.44/32", "2001:2:0:812c::/64"])]

    def test_batch(self):
        text = kernel.vxlan_batch(self.TUNNELS, "gwa", "198.18.0.1", "198.18.0.2", "tb-gwa-t",
                                  "198.19.0.2", 4789)
        self.assertEqual(text.splitlines(), [
            "link add vxt00000 group 34 address 02:34:00:01:00:01 type vxlan id 1 local "
            "198.18.0.1 remote 198.18.0.2 dstport 4789 dev tb-gwa-t nolearning",
            "link set dev vxt00000 addrgenmode none",
            "link add vxt00300 group 34 address 02:34:00:01:01:2d type vxlan id 301 local "
            "198.18.0.1 remote 198.18.0.2 dstport 4789 dev tb-gwa-t nolearning",
            "link set dev vxt00300 addrgenmode none",
            "link set group 34 up",
            # The far side's MAC of the same tunnel: gwb's.
            "neigh add 198.19.0.2 lladdr 02:34:00:02:00:01 dev vxt00000 nud permanent",
            "neigh add fe80::2 lladdr 02:34:00:02:00:01 dev vxt00000 nud permanent",
            "route add 198.18.128.0/32 via 198.19.0.2 dev vxt00000 onlink",
            "route add 2001:2:0:8000::/64 via fe80::2 dev vxt00000",
            "neigh add 198.19.0.2 lladdr 02:34:00:02:01:2d dev vxt00300 nud permanent",
            "neigh add fe80::2 lladdr 02:34:00:02:01:2d dev vxt00300 nud permanent",
            "route add 198.18.129.44/32 via 198.19.0.2 dev vxt00300 onlink",
            "route add 2001:2:0:812c::/64 via fe80::2 dev vxt00300"])
        gwb = kernel.vxlan_batch(self.TUNNELS[:1], "gwb", "198.18.0.2", "198.18.0.1", "t",
                                 "198.19.0.1", 4789).splitlines()
        self.assertIn("address 02:34:00:02:00:01 ", gwb[0])
        self.assertEqual(gwb[4], "neigh add fe80::1 lladdr 02:34:00:01:00:01 dev vxt00000 nud "
                                 "permanent")

    def test_counters(self):
        links = [{}, {"ifname": "lo"}, {"ifname": "vxt00001", "stats64": {
            "rx": {"bytes": 900, "packets": 9, "errors": 0, "dropped": 1},
            "tx": {"bytes": 1000, "packets": 10, "errors": 2, "dropped": 0}}},
            {"ifname": "vxt00002", "stats64": {"rx": {"bytes": -5, "packets": "x"}}}]
        self.assertEqual(kernel.tunnel_counters(links), {
            "t00001": {"tx_packets": 10, "tx_bytes": 1000, "rx_packets": 9, "rx_bytes": 900,
                       "drops": {"rx_dropped": 1, "tx_dropped": 0, "rx_errors": 0,
                                 "tx_errors": 2}},
            "t00002": {"tx_packets": 0, "tx_bytes": 0, "rx_packets": 0, "rx_bytes": 0,
                       "drops": {"rx_dropped": 0, "tx_dropped": 0, "rx_errors": 0,
                                 "tx_errors": 0}}})
        self.assertEqual(kernel.tunnel_counters("nonsense"), {})

    def test_kernel_memory(self):
        self.assertEqual(kernel.kernel_kib("MemTotal: 100 kB\nSlab:   2048 kB\nPercpu: 512 kB\n"),
                         2560)
        self.assertIsNone(kernel.kernel_kib("Slab: 1 kB\n"))

    def test_tunnel_file(self):
        with tempfile.TemporaryDirectory() as d:
            tunnels_point.run([os.path.join(tunnels_point.ROOT, "topo", "tunnels.sh"), "300", d])
            with open(os.path.join(d, "gwa.tunnels")) as f:
                got = tunnels_point.read_tunnel_file(f.read())
        self.assertEqual(len(got), 300)
        self.assertEqual(got[0], self.TUNNELS[0])
        self.assertEqual(got[299], ("t00299", 300, ["198.18.129.43/32", "2001:2:0:812b::/64"]))
        with self.assertRaises(tunnels_point.Failure):
            tunnels_point.read_tunnel_file("[tunnel t1]\nkey = 1\n")
        with self.assertRaises(tunnels_point.Failure):
            tunnels_point.read_tunnel_file("garbage\n")


class WireguardGo(unittest.TestCase):
    def test_setconf_text(self):
        self.assertEqual(vpn.wg_peers("PRIV", 40001, [
            ("PUB1", "198.18.0.2:40000", ["198.18.128.0/32", "2001:2:0:8000::/64"]),
            ("PUB2", None, ["198.18.128.1/32"])]),
            "[Interface]\nPrivateKey = PRIV\nListenPort = 40001\n\n"
            "[Peer]\nPublicKey = PUB1\nEndpoint = 198.18.0.2:40000\n"
            "AllowedIPs = 198.18.128.0/32, 2001:2:0:8000::/64\n\n"
            "[Peer]\nPublicKey = PUB2\nAllowedIPs = 198.18.128.1/32\n")

    def test_transfer_and_counters(self):
        dump = ("PRIV\tPUB\t51820\toff\n"
                "K1=\t(none)\t198.18.0.2:40000\t198.18.128.0/32\t1700000000\t900\t1200\toff\n"
                "K2=\t(none)\t(none)\t198.18.128.1/32\t0\t0\t0\toff\n"
                "K3=\tbroken\n")
        self.assertEqual(vpn.wg_transfer(dump), {"K1=": (900, 1200), "K2=": (0, 0)})
        self.assertEqual(vpn.wg_counters((900, 1200)), {
            "tx_packets": 0, "tx_bytes": 1200, "rx_packets": 0, "rx_bytes": 900, "drops": {}})

    def test_idle_bytes_without_packets(self):
        t = {"carried": [], "idle": {"tunnels": 2, "packets": 0, "bytes": 148}}
        self.assertEqual(tunnels_report.check(t), ["148 bytes on tunnels without sessions"])

    def test_default_counts_beyond_its_limit_are_not_run(self):
        plan = tunnels.KIND.check(Plan.args(self, gateway="wireguard-go"))
        self.assertEqual([p.tunnels for p in plan.points], [1, 10, 100, 1000, 10000])
        # Whether wireguard-go is installed here is not this test's matter.
        with mock.patch.object(DRIVERS["wireguard-go"], "available", return_value=(True, "")):
            tunnels.KIND.prepare(plan)
        self.assertEqual([p.tunnels for p in plan.points], [1, 10, 100])
        self.assertEqual([x["tunnels"] for x in plan.not_run], [1000, 10000])
        self.assertEqual(plan.not_run[0]["why"], "not run: more than wireguard-go's 100 tunnels "
                                                 "(a wireguard-go process a tunnel on gwb)")


class OvsGre(unittest.TestCase):
    """ovs-gre's pure parts (drivers/ovs.py): the --tunnels file of ovs-gre.sh, the rules'
    counters by cookie, the drops by no tunnel, the words of a failed up."""

    def test_tunnel_lines_and_peers(self):
        with tempfile.TemporaryDirectory() as d:
            tunnels_point.run([os.path.join(tunnels_point.ROOT, "topo", "tunnels.sh"), "3", d])
            with open(os.path.join(d, "gwb.tunnels")) as f:
                got = tunnels_point.read_tunnel_file(f.read(), peers=True)
        self.assertEqual(got[2], ("t00002", 3, ["198.18.64.2/32", "2001:2:0:4002::/64"],
                                  "198.18.0.1"))
        self.assertEqual(ovs.ovs_tunnel_lines(got[:1] + [("t9", 9, ["198.18.9.9/32"], None)],
                                              "198.18.0.7"),
                         "t00000 1 198.18.0.1 198.18.64.0/32 2001:2:0:4000::/64\n"
                         "t9 9 198.18.0.7 198.18.9.9/32\n")

    def test_flow_counters(self):
        text = (
            "NXST_FLOW reply (xid=0x4):\n"
            " cookie=0x2, duration=3.1s, table=0, n_packets=10, n_bytes=15000, priority=100,"
            "ip,in_port=LOCAL,nw_dst=198.18.128.0 actions=output:1\n"
            " cookie=0x2, duration=3.1s, table=0, n_packets=1, n_bytes=90, priority=100,"
            "ipv6,in_port=LOCAL,ipv6_dst=2001:2:0:8000::/64 actions=output:1\n"
            " cookie=0x3, duration=3.1s, table=0, n_packets=4, n_bytes=208, priority=100,"
            "ip,in_port=1 actions=mod_dl_dst:02:00:00:00:00:01,LOCAL\n"
            " cookie=0x5, duration=3.1s, table=0, n_packets=0, n_bytes=0, priority=100,"
            "ip,in_port=2 actions=mod_dl_dst:02:00:00:00:00:01,LOCAL\n"
            " cookie=0x9, duration=3.1s, table=0, n_packets=7, n_bytes=7, priority=100,"
            "ip,in_port=4 actions=LOCAL\n"
            " duration=3.1s, table=0, n_packets=5, n_bytes=300, priority=0 actions=drop\n")
        self.assertEqual(ovs.flow_counters(text, ["t00000", "t00001"]), {
            "t00000": {"tx_packets": 11, "tx_bytes": 15090, "rx_packets": 4, "rx_bytes": 208,
                       "drops": {}},
            "t00001": {"tx_packets": 0, "tx_bytes": 0, "rx_packets": 0, "rx_bytes": 0,
                       "drops": {}}})
        self.assertEqual(ovs.flow_counters("nonsense", ["t00000"]), {})

    def test_drops_by_no_tunnel(self):
        self.assertEqual(ovs.port_drops(
            "OFPST_PORT reply (xid=0x2): 2 ports\n"
            "  port LOCAL: rx pkts=28, bytes=2296, drop=9, errs=0, frame=0, over=0, crc=0\n"
            "  port  1: rx pkts=38616, bytes=4035896, drop=3, errs=0, frame=0, over=0, crc=0\n"
            "  port  2: rx pkts=1, bytes=1, drop=?, errs=?, frame=?, over=?, crc=?\n"), 3)
        self.assertEqual(ovs.socket_drops(
            "p_raw UNCONN 0 0 *:transit *\n\t skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d3166)"
            "\nu_str ESTAB 0 0 * 1 * 2\n\t skmem:(r0,rb1,t0,tb1,f0,w0,o0,bl0,d4)\n"), 3170)
        self.assertEqual(ovs.socket_drops(""), 0)

    def test_up_error(self):
        said = ("ovs-gre.sh: 500 of 3000 GRE ports in the database after 4.0 s (not waiting "
                "for ovs-vswitchd)\novs-gre.sh: up failed in tb-gwa; undoing\n"
                "2026-12-04T22:00:00Z|00042|bridge|WARN|could not add port\n")
        self.assertEqual(ovs.up_error(said), "ovs-gre.sh: 500 of 3000 GRE ports in the database "
                         "after 4.0 s (not waiting for ovs-vswitchd) (ovs-vswitchd: "
                         "2026-12-04T22:00:00Z|00042|bridge|WARN|could not add port)")
        self.assertEqual(ovs.up_error("ovs-gre.sh: up failed in tb-gwa; undoing\n"),
                         "ovs-gre.sh: up failed in tb-gwa; undoing")
        self.assertIsNone(ovs.up_error("Killed\n"))
        self.assertEqual(ovs.up_error("ovs-gre.sh: 500 of 9 ...\novs-gre.sh: up failed in tb-gwa; "
                                      "undoing\nKilled\n"), "ovs-gre.sh: 500 of 9 ...")

    def test_a_run_of_it(self):
        plan = tunnels.KIND.check(Plan.args(self, gateway="gregw ovs-gre",
                                            tunnels_counts="1,10"))
        self.assertEqual([(p.gateway, p.tunnels) for p in plan.points],
                         [("gregw", 1), ("gregw", 10), ("ovs-gre", 1), ("ovs-gre", 10)])
        self.assertEqual(plan.points[3].key(), "ovs-gre-n10-s64")


class HowFar(unittest.TestCase):
    def test_largest_count_and_beyond(self):
        meta = {"gateways": ["gregw", "vxlan"],
                "failed": [{"point": {"gateway": "vxlan", "tunnels": 1000}, "repeat": 1,
                            "error": "vxlan on tb-gwa: ip -batch of 1000 tunnels: boom"}],
                "not_run": [{"gateway": "vxlan", "tunnels": 10000, "why": "not run: slow"}]}
        runs = [{"gateway": "gregw", "tunnels": n, "setup_gwa_s": 0.01 * n, "setup_gwb_s": 0.02}
                for n in (1, 1000)] + [
            {"gateway": "vxlan", "tunnels": 100, "setup_gwa_s": s, "setup_gwb_s": s}
            for s in (0.3, 0.5)]
        got = tunnels_report.how_far(meta, runs)
        self.assertEqual([(h["gateway"], h["largest_count"], h["setup_gwa_s"]["median"])
                          for h in got], [("gregw", 1000, 10.0), ("vxlan", 100, 0.4)])
        self.assertEqual(got[0]["beyond"], [])
        self.assertEqual(got[1]["beyond"], [
            "1000 tunnels failed: vxlan on tb-gwa: ip -batch of 1000 tunnels: boom",
            "10000 tunnels not run: slow"])
        res = tunnels_report.Results(meta, True, [], {}, got)
        table = tunnels_report.how_far_section(res).table
        self.assertEqual(table.rows[1][:2], ["vxlan", "100"])


class Format(unittest.TestCase):
    def format_1(self):
        with open(FORMAT_1) as f:
            return json.load(f)

    def test_upgrade_of_format_1(self):
        rec = records.read_record(tunnels.KIND, self.format_1(), FORMAT_1)
        self.assertEqual((rec["format"], rec["point"]["pattern"]), (3, "push"))
        self.assertNotIn("churn", rec["point"])
        self.assertTrue(all(t["received"] == 0 for t in rec["tunnels"]["carried"]))

    def churn_record(self, rate, bps_scale, stall_ms):
        rec = records.read_record(tunnels.KIND, self.format_1(), FORMAT_1)
        rec = copy.deepcopy(rec)
        rec["point"] |= {"churn": rate, "pattern": "duplex",
                         "key": f"gregw-gre-w2-n10-s16-churn{rate:g}"}
        tcp = rec["traffic"]["tcp"]
        tcp["bits_per_second"] *= bps_scale
        tcp["rx_stall"] = {"max_ms": stall_ms, "session": 3}
        rec["traffic"]["complete"] = True
        if rate:
            rec["churn"] = {"rate": rate, "span_s": 2.0, "asked": 200, "done": 199,
                            "pings": {"pinged": 99, "first": 90, "later": 9, "never": 0},
                            "gregw": {"gwa": {"bad_key": 4, "busy_retries": 1},
                                      "gwb": {"bad_key": 5, "busy_retries": 0}}}
        return records.read_record(tunnels.KIND, dict(rec, format=2))

    def test_churn_analysis(self):
        meta = {"counts": [10], "sessions": 16, "repeats": 1, "gateway": "gregw"}
        res = tunnels_report.analyse([self.churn_record(0, 1.0, 1.5),
                                      self.churn_record(100, 0.9, 12.0)], meta, True)
        p = res.summary["gregw-gre-w2-n10-s16-churn100"]
        self.assertAlmostEqual(p["of_baseline"], 0.9)
        self.assertEqual((p["stall_ms"]["median"], p["changes_done"]["median"],
                          p["ping_first"]["median"], p["bad_key_gwb"]["median"],
                          p["busy_retries"]["median"]), (12.0, 199, 90, 5, 1))
        # Format 1's sessions were push: each sent byte was received, none went back.
        self.assertTrue(p["verified"])
        doc = tunnels_report.document(res)
        self.assertEqual(doc.headline[1].split(": ", 1)[0], "gregw 10 tunnels, churn 100/s")
        self.assertIn("(0.90 of the baseline), longest stall 12.0 ms, 199 of 200 changes, 99 "
                      "pings after an add: 90 first packet, 9 later, 0 never, verified",
                      doc.headline[1])
        self.assertTrue(doc.headline[0].startswith("gregw 10 tunnels, no churn (baseline): "))
        self.assertEqual([c.name for c in doc.csv], ["summary", "churn"])
        self.assertEqual(doc.csv[1].rows[1][:2], [100, 10])
        self.assertEqual({len(r) for r in doc.csv[1].rows}, {len(doc.csv[1].header)})
        self.assertEqual(dict(zip(doc.csv[1].header, doc.csv[1].rows[1]))["stall_ms"], 12.0)
        run = [r for r in res.runs if r["churn"] == 100][0]
        self.assertEqual((run["stall_session"], run["changes_asked"]), (3, 200))

    def test_a_count_run_keeps_its_summary(self):
        res = tunnels_report.analyse([records.read_record(tunnels.KIND, self.format_1())],
                                     {"counts": [10]}, True)
        self.assertNotIn("churn", res.runs[0])
        self.assertNotIn("churn", res.summary["gregw-gre-w2-n10-s16"])


if __name__ == "__main__":
    unittest.main()
