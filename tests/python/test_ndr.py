"""Unit tests of the NDR/PDR search (scripts/tunbedlib/search.py) against simulated gateways:
a rate cap, a cap with a buffer that short trials do not fill, a gateway that always loses a
little, a generator slower than the gateway; and of the frame sizes (the IMIX's too), bad
values, the trials of an IMIX, where each search runs (namespaces, hosts) and the report of
scripts/tunbedlib/ndr.py on recorded searches."""

import json
import os
import shutil
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import records, render, scenario, search  # noqa: E402
from tunbedlib.kinds import ndr_plan as ndr  # noqa: E402
from tunbedlib.kinds.ndr import KIND as NDR  # noqa: E402


def capped(cap, buffer=0, loss=0.0, offer=None):
    """measure() of a gateway that forwards at most cap datagrams a second, after a buffer of
    buffer datagrams fills, and loses the ratio loss of what it forwards; with offer, a
    generator that cannot send more than offer a second (its trials above are not valid)."""
    def measure(rate, duration):
        sent = int(min(rate, offer or rate) * duration)
        through = min(sent, int(cap * duration) + buffer)
        received = through - int(round(through * loss))
        return {"sent": sent, "received": received,
                "valid": offer is None or rate <= offer * 1.01}
    return measure


def final_trials(s, name):
    r = s.result()[name]
    return [s.trials[i] for i in (r["lower_trial"], r["upper_trial"]) if i is not None]


class Phases(unittest.TestCase):
    def test_durations_and_widths(self):
        p = search.Params(min_rate=100, max_rate=1e6, final_s=10, initial_s=1, width=0.01)
        ph = search.phases(p)
        self.assertEqual(ph[0][0], 1)
        self.assertEqual(ph[-1], (10, 0.01))
        for (d0, w0), (d1, w1) in zip(ph, ph[1:]):
            self.assertLessEqual(d1 / d0, search.PHASE_RATIO + 1e-9)
            self.assertAlmostEqual(w0, 2 * w1)
        self.assertEqual(search.phases(search.Params(1, 10, final_s=2, initial_s=2)), [(2, 0.02)])
        self.assertEqual(len(search.phases(search.Params(1, 10, final_s=3, initial_s=1))), 2)

    def test_bad_params(self):
        for p, what in ((search.Params(0, 10), "lowest rate"), (search.Params(10, 10), "lowest"),
                        (search.Params(1, 10, retries=11), "retries"),
                        (search.Params(1, 10, final_s=1, initial_s=2), "first trials"),
                        (search.Params(1, 10, width=0), "width"),
                        (search.Params(1, 10, pdr_loss=1), "PDR")):
            with self.assertRaises(ValueError) as e:
                p.check()
            self.assertIn(what, str(e.exception))
            self.assertEqual(len(str(e.exception).splitlines()), 1)


class Converges(unittest.TestCase):
    def run_search(self, measure, **kw):
        p = search.Params(**({"min_rate": 1000, "max_rate": 2e6, "final_s": 5, "initial_s": 1,
                              "width": 0.02} | kw))
        s = search.Search(measure, p)
        return s, s.run()

    def test_a_rate_cap(self):
        s, r = self.run_search(capped(300000))
        ndr, pdr = r["ndr"], r["pdr"]
        # Within the goal width below the cap; PDR where loss reaches 0.5%: cap / 0.995.
        self.assertTrue(300000 * 0.98 <= ndr["rate"] <= 300000, ndr)
        self.assertTrue(ndr["upper"] > 300000 and ndr["width"] <= 0.02, ndr)
        self.assertTrue(300000 / 0.995 * 0.98 <= pdr["rate"] <= 300000 / 0.995, pdr)
        self.assertFalse(ndr["limited"] or pdr["limited"] or ndr["at_max"])
        # The bounds are trials of the full duration; every trial is kept, in order.
        for name in ("ndr", "pdr"):
            self.assertTrue(all(t["duration"] == 5 for t in final_trials(s, name)))
        self.assertEqual([t["index"] for t in s.trials], list(range(len(s.trials))))
        self.assertEqual(s.trials[0]["rate"], 2000000)
        self.assertEqual(s.trials[0]["duration"], 1)
        # Short trials do most of the work.
        self.assertLess(sum(t["duration"] == 5 for t in s.trials), 10)
        self.assertLess(len(s.trials), 30)
        self.assertEqual({t["phase"] for t in s.trials}, {0, 1, 2})

    def test_each_trial_has_its_numbers(self):
        s, _ = self.run_search(capped(50000))
        for t in s.trials:
            self.assertEqual(t["loss_ratio"], (t["sent"] - t["received"]) / t["sent"])
            self.assertIn(t["rate"], range(1000, 2000001))

    def test_a_buffer_that_short_trials_do_not_fill(self):
        # 100,000 datagrams of buffer: a 1 s trial passes at cap + 100k/s, a 5 s one at
        # cap + 20k/s. The result is the full duration's.
        s, r = self.run_search(capped(200000, buffer=100000))
        self.assertTrue(200000 <= r["ndr"]["rate"] <= 220000, r["ndr"])
        first = [t for t in s.trials if t["duration"] == 1 and search.passes(t, 0)]
        self.assertGreater(max(t["rate"] for t in first), 250000)

    def test_a_gateway_that_always_loses_a_little(self):
        # 0.1% lost at any rate: no NDR above the lowest rate; PDR at the highest.
        _, r = self.run_search(capped(10 ** 9, loss=0.001))
        self.assertTrue(r["ndr"]["below_min"] and r["ndr"]["rate"] is None, r["ndr"])
        self.assertTrue(r["pdr"]["at_max"] and r["pdr"]["rate"] == 2000000, r["pdr"])
        _, r = self.run_search(capped(10 ** 9, loss=0.01))
        self.assertTrue(r["ndr"]["below_min"] and r["pdr"]["below_min"], r)

    def test_the_generator_is_the_limit(self):
        # The highest rate passes: the result is the generator's, and says so.
        _, r = self.run_search(capped(10 ** 9), max_rate=100000)
        self.assertTrue(r["ndr"]["at_max"] and r["ndr"]["limited"] and r["ndr"]["rate"] == 100000)
        # A generator that offers only 150,000 a second: above that no trial is valid, and an
        # invalid trial bounds the result from above, marked limited.
        s, r = self.run_search(capped(10 ** 9, offer=150000))
        self.assertTrue(r["ndr"]["limited"] and not r["ndr"]["at_max"], r["ndr"])
        self.assertFalse(s.trials[r["ndr"]["upper_trial"]]["valid"])
        self.assertTrue(140000 <= r["ndr"]["rate"] <= 151500, r["ndr"])
        # Each trial that is not valid was run three times, the first two marked retried.
        bad = [t for t in s.trials if not t["valid"]]
        self.assertEqual(len(bad) % 3, 0)
        self.assertEqual(sum(bool(t.get("retried")) for t in bad), 2 * len(bad) // 3)

    def test_a_generator_that_falls_short_now_and_then(self):
        # Every other trial is not valid (the generator was starved for a moment): run again,
        # the search finds the cap as if nothing happened, every attempt kept.
        calls = [0]
        inner = capped(300000)

        def flaky(rate, duration):
            calls[0] += 1
            return dict(inner(rate, duration), valid=calls[0] % 2 == 0)
        s, r = self.run_search(flaky)
        self.assertTrue(300000 * 0.98 <= r["ndr"]["rate"] <= 300000, r["ndr"])
        self.assertFalse(r["ndr"]["limited"])
        self.assertEqual(len(s.trials), calls[0])
        self.assertTrue(all(t["retried"] for t in s.trials if not t["valid"]))

    def test_noise(self):
        # A pass above a failure does not make a lower bound above it.
        s = search.Search(capped(1), search.Params(1, 100, final_s=1))
        s.trials = [{"rate": 50, "duration": 1, "sent": 50, "received": 49, "valid": True},
                    {"rate": 80, "duration": 1, "sent": 80, "received": 80, "valid": True},
                    {"rate": 30, "duration": 1, "sent": 30, "received": 30, "valid": True}]
        self.assertEqual(s.bounds(1, 0.0), (30, 50))
        self.assertEqual(s.bounds(1, 0.05), (80, None))


class Frames(unittest.TestCase):
    def test_sizes(self):
        f = ndr.frame(64, "gregw", "gre", 4, 1500, 1500)
        self.assertEqual(f, {"lan": 64, "inner_ip": 46, "udp_payload": 18, "overhead": 24,
                             "transit": 88, "tunnel_mtu": 1476, "family": 4})
        self.assertEqual(ndr.frame(64, "route", "-", 4, 1500, 1500)["transit"], 64)
        self.assertEqual(ndr.frame(64, ndr.DIRECT, "-", 4, 1500, 1500)["transit"], 64)
        self.assertEqual(ndr.frame(64, "vxlan", "-", 4, 1500, 1500)["transit"], 114)
        self.assertEqual(ndr.frame(64, "ovs-gre", "-", 4, 1500, 1500)["overhead"], 28)
        self.assertEqual(ndr.frame(64, "gre", "-", 4, 1500, 1500)["overhead"], 24)
        self.assertEqual(ndr.overhead("gregw", "gre-udp+key+seq+csum", 4), 44)
        self.assertEqual(ndr.overhead("gregw", "gre+nooffload+aqm", 6), 44)
        f = ndr.frame(84, "gregw", "gre", 6, 1500, 1500)
        self.assertEqual((f["udp_payload"], f["overhead"], f["transit"]), (18, 44, 128))
        # The largest each carries at a transit MTU of 1500, and with 9000.
        self.assertEqual(ndr.frame(1494, "gregw", "gre", 4, 1500, 1500)["inner_ip"], 1476)
        self.assertEqual(ndr.frame(1518, "route", "-", 4, 1500, 1500)["transit"], 1518)
        self.assertEqual(ndr.frame(1518, "vxlan", "-", 4, 9000, 1500)["transit"], 1568)

    def test_refusals(self):
        for args, want in (
                ((63, "gregw", "gre", 4, 1500, 1500),
                 "frame size 63 is below the smallest frame tunbed-traffic sends over IPv4: 64 "
                 "bytes (IP, UDP and its 18-byte header)"),
                ((83, "route", "-", 6, 1500, 1500), "smallest frame tunbed-traffic sends over "
                                                    "IPv6: 84 bytes"),
                ((1518, "gregw", "gre", 4, 1500, 1500),
                 "frame size 1518 is too big for gregw gre: its inner IP packet (1500 bytes) "
                 "exceeds the tunnel MTU 1476 (transit MTU 1500 - 24 of tunnel headers)"),
                ((1495, "gregw", "gre", 4, 1500, 1500), "exceeds the tunnel MTU 1476"),
                ((1487, "gregw", "gre-udp", 4, 1500, 1500), "exceeds the tunnel MTU 1468"),
                ((1469, "vxlan", "-", 4, 1500, 1500), "too big for vxlan"),
                ((1519, "route", "-", 4, 9000, 1500), "frame size 1519 is too big for the LAN: "
                                                      "its inner IP packet (1501 bytes) exceeds "
                                                      "the link MTU 1500"),
                ((512, "external", "-", 4, 1500, 1500), "gateway external: its tunnel overhead "
                                                        "is not known")):
            with self.assertRaises(ValueError) as e:
                ndr.frame(*args)
            self.assertIn(want, str(e.exception))
            self.assertEqual(len(str(e.exception).splitlines()), 1)

    def test_a_run_checked_before_anything_starts(self):
        sc = scenario.Scenario(topology="ras", gateways=["gregw", "vxlan"], modes=["gre"])
        family, fr = ndr.frames(sc, ndr.Ndr(sizes=[64, 1280]))
        self.assertEqual(family, 4)
        self.assertEqual(sorted(fr), [("direct", "-"), ("gregw", "gre"), ("vxlan", "-")])
        self.assertEqual(fr[("vxlan", "-")][1280]["transit"], 1330)
        self.assertEqual(ndr.frames(dataclass_replace(sc, topology="ras6"),
                                    ndr.Ndr(sizes=[84]))[0], 6)
        with self.assertRaises(scenario.ScenarioError) as e:
            ndr.frames(sc, ndr.Ndr(sizes=[1494]))
        self.assertIn("too big for vxlan", str(e.exception))
        with self.assertRaises(scenario.ScenarioError) as e:
            ndr.frames(dataclass_replace(sc, topology="ras6"), ndr.Ndr(sizes=[64]))
        self.assertIn("IPv6: 84 bytes", str(e.exception))
        # A larger transit MTU (mtu =) lets the tunnels carry the LAN's largest frame.
        ndr.frames(dataclass_replace(sc, mtu=[9000]), ndr.Ndr(sizes=[1518]))

    def test_rates(self):
        self.assertEqual(ndr.parse_rate("1.5m", "x"), 1.5e6)
        self.assertEqual(ndr.parse_rate("800k", "x"), 8e5)
        self.assertEqual(ndr.parse_rate("1000", "x"), 1000)
        for bad in ("0", "1.5q", "-1", "", "101m"):
            with self.assertRaises(ValueError):
                ndr.parse_rate(bad, "--max-rate")

    def test_above_the_ceiling(self):
        nd = ndr.Ndr(sizes=[64, 512], max_rate=500000)
        self.assertIsNone(ndr.above_ceiling(nd, {64: 600000, 512: 700000}))
        self.assertEqual(ndr.above_ceiling(nd, {64: 400000.0, 512: 700000}),
                         "--max-rate 500000 is above the generator's ceiling at 64-byte frames "
                         "(400000 datagrams/s, measured alone on direct): a result there would "
                         "be the generator's, not the gateway's")


class Imix(unittest.TestCase):
    def test_the_mix(self):
        # The simple IMIX, 7:4:1 of 64, 594 and 1518-byte frames: through route every member
        # as it is, a mean of 361.8-byte frames.
        f = ndr.frame(ndr.IMIX, "route", "-", 4, 1500, 1500)
        self.assertEqual([(m["lan"], m["weight"]) for m in f["mix"]],
                         [(64, 7), (594, 4), (1518, 1)])
        self.assertAlmostEqual(f["lan_mean"], 4342 / 12)
        self.assertAlmostEqual(f["inner_ip"], 4342 / 12 - 18)
        self.assertAlmostEqual(f["udp_payload"], 4342 / 12 - 46)
        self.assertEqual((f["lan"], f["overhead"]), ("imix", 0))
        self.assertEqual(ndr.imix_note(f), "")
        # gregw gre carries 1494-byte frames: the largest member capped there, said so; the
        # transit frames are each member's with its tunnel headers.
        f = ndr.frame(ndr.IMIX, "gregw", "gre", 4, 1500, 1500)
        self.assertEqual([m["lan"] for m in f["mix"]], [64, 594, 1494])
        self.assertEqual(f["mix"][2]["capped_from"], 1518)
        self.assertNotIn("capped_from", f["mix"][1])
        self.assertEqual([m["transit"] for m in f["mix"]], [88, 618, 1518])
        self.assertAlmostEqual(f["transit"], (7 * 88 + 4 * 618 + 1518) / 12)
        self.assertEqual(ndr.imix_note(f), "its 1518-byte member capped at 1494, the largest "
                                           "frame carried")
        # A transit MTU of 9000 carries it whole; a tunnel below 576 caps two members.
        self.assertEqual(ndr.frame(ndr.IMIX, "vxlan", "-", 4, 9000, 1500)["mix"][2]["lan"], 1518)
        f = ndr.frame(ndr.IMIX, "gregw", "gre", 4, 524, 1500)
        self.assertEqual([m["lan"] for m in f["mix"]], [64, 518, 518])
        # Over IPv6 the smallest member is the smallest frame tunbed-traffic sends there.
        f = ndr.frame(ndr.IMIX, "route", "-", 6, 1500, 1500)
        self.assertEqual((f["mix"][0]["lan"], f["mix"][0]["raised_from"]), (84, 64))
        self.assertIn("its 64-byte member raised to 84, the smallest frame over IPv6",
                      ndr.imix_note(f))
        # A tunnel that carries not even the smallest frame: refused with frame()'s line.
        with self.assertRaises(ValueError) as e:
            ndr.frame(ndr.IMIX, "gregw", "gre", 4, 60, 1500)
        self.assertIn("frame size 64 is too big for gregw gre", str(e.exception))
        with self.assertRaises(ValueError) as e:
            ndr.frame(ndr.IMIX, "external", "-", 4, 1500, 1500)
        self.assertIn("its tunnel overhead is not known", str(e.exception))

    def test_sizes(self):
        nd = ndr.from_section(scenario.parse("[ndr]\nsizes = imix, 1518, 64\n", "f"), "f")
        self.assertEqual(nd.sizes, [64, 1518, "imix"])
        self.assertEqual(ndr._sizes("IMIX"), ["imix"])
        for text, want in (("imix imix", "imix given twice in sizes"),
                           ("mix", "bad value 'mix' for sizes: expected whole numbers"),
                           ("", "sizes needs at least one value")):
            with self.assertRaises(ValueError) as e:
                ndr._sizes(text)
            self.assertEqual(str(e.exception), want)
        self.assertEqual(sorted(["imix", 1518, 64], key=ndr.size_key), [64, 1518, "imix"])
        sc = scenario.Scenario(topology="ras", gateways=["gregw"], modes=["gre"])
        _, fr = ndr.frames(sc, ndr.Ndr(sizes=[64, "imix"]))
        self.assertEqual(fr[("gregw", "gre")]["imix"]["mix"][2]["lan"], 1494)
        self.assertEqual(fr[("direct", "-")]["imix"]["mix"][2]["lan"], 1518)
        self.assertEqual([(p.gateway, s) for p, s in ndr.plan(sc, ndr.Ndr(sizes=[64, "imix"]))],
                         [("direct", 64), ("direct", "imix"), ("gregw", 64), ("gregw", "imix")])
        self.assertIn("at IMIX frames", ndr.above_ceiling(ndr.Ndr(sizes=["imix"], max_rate=5e5),
                                                          {"imix": 4e5}))

    def test_a_trial_of_the_mix(self):
        # One client per member, each at its share: counts summed, valid only if each was,
        # the window from the first start to the last end, each percentile the worst member's.
        from tunbedlib.kinds import ndr as kind

        def part(lan, rate, sent, lost, valid, p50, start):
            return {"lan": lan, "rate": rate, "sent": sent, "received": sent - lost,
                    "lost": lost, "valid": valid, "offered_pps": rate, "offered_ratio": 1.0,
                    "late": 0, "not_sent": 0, "receiver_drops": 0, "status": 0, "error": None,
                    "latency": {"samples": 10, "p50_ms": p50, "p99_ms": 2 * p50},
                    "measure_start_mono_s": start, "measure_end_mono_s": start + 1,
                    "traffic": {"udp": {"sent": sent}}}
        parts = [part(64, 7000, 7000, 0, True, 0.1, 5.0), part(594, 4000, 4000, 3, True, 0.3, 5.1),
                 part(1518, 1000, 1000, 0, True, 0.2, 4.9)]
        t = kind.merge_parts(parts)
        self.assertEqual((t["sent"], t["received"], t["lost"], t["valid"]),
                         (12000, 11997, 3, True))
        self.assertEqual((t["offered_pps"], t["offered_ratio"]), (12000, 1.0))
        self.assertEqual((t["latency"]["p50_ms"], t["latency"]["p99_ms"],
                          t["latency"]["samples"]), (0.3, 0.6, 30))
        self.assertEqual((t["measure_start_mono_s"], t["measure_end_mono_s"]), (4.9, 6.1))
        self.assertEqual([m["lan"] for m in t["members"]], [64, 594, 1518])
        self.assertNotIn("traffic", t["members"][0])
        self.assertEqual(len(t["traffic"]["members"]), 3)
        parts[2]["valid"] = False
        parts[1]["offered_pps"] = None
        t = kind.merge_parts(parts)
        self.assertFalse(t["valid"])
        self.assertIsNone(t["offered_pps"])


class Where(unittest.TestCase):
    """Where each search runs, and what its record says of it (search_one's `where`)."""

    def hosts_bed(self, direct_addr=""):
        from tunbedlib import bed as beds
        from tunbedlib import inventory
        bed = object.__new__(beds.HostsBed)
        spec = lambda name, role, **kw: inventory.HostSpec(name, role, name, **kw)  # noqa
        host = lambda s: type("H", (), {"spec": s, "name": s.name})()  # noqa
        bed.clients = [host(spec("c1", "client", addr="198.18.1.2"))]
        bed.servers = [host(spec("s1", "server", addr="198.18.3.2",
                                 direct_addr=direct_addr))]
        bed.roles = {"client": bed.clients, "server": bed.servers,
                     "gwa": [host(spec("gw1", "gwa"))], "gwb": [host(spec("gw2", "gwb"))]}
        bed.inv = type("I", (), {"path": "hosts.ini"})()
        bed.addrs = {"server": "198.18.3.2"}
        return bed

    def test_where(self):
        from tunbedlib.kinds.ndr import where
        gregw = scenario.Point("gregw", "gre", 2, 0, "udp", 8)
        direct = scenario.Point(ndr.DIRECT, "-", 0, 0, "udp", 8)
        # On hosts: the generator alone to the server's direct address, no gateway started.
        bed = self.hosts_bed("198.18.9.2")
        self.assertEqual(where(bed, direct), ("198.18.9.2", None, {
            "mode": "hosts", "path": "direct", "target": "198.18.9.2", "client": "c1",
            "server": "s1"}))
        # Without one: through the gateway hosts' kernels (route), and said so.
        self.assertEqual(where(self.hosts_bed(), direct), ("198.18.3.2", "route", {
            "mode": "hosts", "path": "route", "target": "198.18.3.2", "client": "c1",
            "server": "s1", "gwa": "gw1", "gwb": "gw2"}))
        self.assertEqual(where(bed, gregw)[1:], ("gregw", {
            "mode": "hosts", "path": "gateway", "target": "198.18.3.2", "client": "c1",
            "server": "s1", "gwa": "gw1", "gwb": "gw2"}))


    def test_the_hosts_mtus(self):
        # Planned at 1500; once the hosts are reached, a frame their interfaces cannot carry
        # fails its search (a GatewayFailure: the others go on) with frame()'s line.
        from tunbedlib.common import GatewayFailure
        from tunbedlib.kinds.ndr import check_host_mtus
        gregw = scenario.Point("gregw", "gre", 2, 0, "udp", 8)
        bed = self.hosts_bed()
        bed.roles["gwa"][0].spec.reach = True
        mtus = {"c1": 1500, "gw1": 1500}
        bed.facts = lambda: {n: {"nic": {"mtu": m}} for n, m in mtus.items()}
        f = ndr.frame(1494, "gregw", "gre", 4, 1500, 1500)
        self.assertIs(check_host_mtus(bed, f, gregw), f)
        mtus["gw1"] = 1400
        with self.assertRaises(GatewayFailure) as e:
            check_host_mtus(bed, ndr.frame(1494, "gregw", "gre", 4, 1500, 1500), gregw)
        self.assertEqual(str(e.exception), "on the hosts: frame size 1494 is too big for gregw "
                         "gre: its inner IP packet (1476 bytes) exceeds the tunnel MTU 1376 "
                         "(transit MTU 1400 - 24 of tunnel headers)")
        # The IMIX is capped again, at what the hosts carry, not failed.
        f = check_host_mtus(bed, ndr.frame(ndr.IMIX, "gregw", "gre", 4, 1500, 1500), gregw)
        self.assertEqual([m["lan"] for m in f["mix"]], [64, 594, 1394])
        mtus.update(c1=1280, gw1=1500)
        with self.assertRaises(GatewayFailure) as e:
            check_host_mtus(bed, ndr.frame(1494, ndr.DIRECT, "-", 4, 1500, 1500),
                            scenario.Point(ndr.DIRECT, "-", 0, 0, "udp", 8))
        self.assertIn("too big for the LAN: its inner IP packet (1476 bytes) exceeds the link "
                      "MTU 1280", str(e.exception))

    def test_the_inventory(self):
        # tunbed_direct_addr: the server's, checked as every address is.
        from tunbedlib import inventory
        groups = {"client": ["c1"], "server": ["s1"]}
        hv = {"c1": {"tunbed_addr": "198.18.1.2"},
              "s1": {"tunbed_addr": "198.18.3.2", "tunbed_direct_addr": "198.18.9.2"}}
        inv = inventory.hosts_of(groups, hv, "h.ini", ("client", "server"))
        self.assertEqual(inv.one("server").direct_addr, "198.18.9.2")
        for value, want in (
                ("10.0.0.1", "host s1: tunbed_direct_addr 10.0.0.1 is outside the benchmarking "
                             "ranges"),
                ("2001:2::9", "host s1: bad value '2001:2::9' for tunbed_direct_addr: expected "
                              "an address of tunbed_addr's family"),
                ("198.18.9.0/24", "host s1: bad value '198.18.9.0/24' for tunbed_direct_addr: "
                                  "expected an IPv4 or IPv6 address")):
            hv["s1"]["tunbed_direct_addr"] = value
            with self.assertRaises(inventory.InventoryError) as e:
                inventory.hosts_of(groups, hv, "h.ini", ("client", "server"))
            self.assertTrue(str(e.exception).startswith(want), str(e.exception))


def dataclass_replace(sc, **kw):
    import dataclasses
    return dataclasses.replace(sc, **kw)


class ScenarioFiles(unittest.TestCase):
    def test_an_ndr_section(self):
        sc = scenario.parse("[scenario]\ngateways = gregw, vxlan\ntime = 3\n[ndr]\n"
                            "sizes = 512, 64 ; two\nflows = 4\nmax_rate = 200k\n", "f")
        nd = ndr.from_section(sc, "f")
        self.assertEqual((nd.sizes, nd.flows, nd.max_rate, sc.time), ([64, 512], 4, 2e5, 3))
        self.assertIsNone(scenario.parse("[scenario]\ntime = 3\n", "f").ndr)

    def test_bad(self):
        for text, want in (
                ("[scenario]\nsessions = 8\n[ndr]\n", "f:2: 'sessions' does not apply to an "
                                                       "NDR search (its keys are in [ndr])"),
                ("[ndr]\nsizes = 64\nframes = 1\n", "f:3: unknown key 'frames' in [ndr]"),
                ("[ndr]\nflows = 1\nflows = 2\n", "f:3: duplicate key 'flows' (first at "
                                                    "line 2)"),
                ("[ndr]\nsizes = 64, 64\n", "f:2: 64 given twice in sizes"),
                ("[ndr]\nwidth = 0.9\n", "f:2: bad value '0.9' for width: expected 0.001 to "
                                          "0.5"),
                ("[ndr]\nmax_rate = lots\n", "f:2: bad value 'lots' for max_rate")):
            with self.subTest(text=text):
                with self.assertRaises(scenario.ScenarioError) as e:
                    ndr.from_section(scenario.parse(text, "f"), "f")
                self.assertIn(want, str(e.exception))


def fake_record(config, gateway, size, cap, started, overhead=24):
    """A search record as ndr.search_one writes it, of a simulated gateway capped at cap (at
    size imix: the IMIX through gregw gre, its largest member capped)."""
    s = search.Search(capped(cap), search.Params(1000, 1e6, final_s=2, initial_s=0.5))
    result = s.run()
    for i, t in enumerate(s.trials):
        t.update(offered_pps=t["rate"], lost=t["sent"] - t["received"], purpose="search",
                 latency={"samples": 10, "p50_ms": 0.01, "p99_ms": 0.05})
    pdr = result["pdr"]["rate"]
    lat = [{"fraction": f, "rate": int(pdr * f), "duration": 2, "sent": 100, "received": 100,
            "lost": 0, "valid": True,
            "latency": {"samples": 50, "p50_ms": 0.01 * (1 + f), "p99_ms": 0.1 * (1 + f)}}
           for f in ndr.FRACTIONS]
    fr = {"lan": size, "inner_ip": size - 18, "udp_payload": size - 46, "overhead": overhead,
          "transit": max(64, size - 18 + overhead + 18), "tunnel_mtu": 1500 - overhead,
          "family": 4} if size != ndr.IMIX else \
        ndr.frame(size, gateway, "gre" if overhead else "-", 4, 1500, 1500)
    return {"format": 1, "kind": "ndr-search", "started": started, "frame": fr, "flows": 8,
            "point": {"gateway": gateway, "mode": "-", "workers": 0, "mtu": 0,
                      "pattern": "udp", "sessions": 8, "key": f"{gateway}-s8", "config": config},
            "params": {"max_rate": 1e6}, "trials": s.trials, "latency_trials": lat,
            "result": result, "hosts": []}


class Report(unittest.TestCase):
    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "searches"))
        self.recs = [fake_record("direct", "direct", 64, 900000, 1, 0),
                     fake_record("direct", "direct", 512, 800000, 2, 0),
                     fake_record("gregw gre 2w", "gregw", 64, 200000, 3),
                     fake_record("gregw gre 2w", "gregw", 512, 180000, 4)]
        for r in self.recs:
            with open(os.path.join(self.dir, "searches",
                                   f"{r['point']['key']}-f{r['frame']['lan']}.json"), "w") as f:
                json.dump(r, f)
        self.meta = {"format": 1, "kind": "ndr", "scenario": "ndr", "title": "a <b>test</b>",
                     "topology": "ras", "direct_topology": "direct", "time": 2,
                     "ndr": {"flows": 8, "pdr_loss": 0.5, "initial_time": 0.5, "width": 0.02}}
        with open(os.path.join(self.dir, "meta.json"), "w") as f:
            json.dump(self.meta, f)

    def test_writers(self):
        import csv
        lines = render.write_all(self.dir, NDR.report(*records.load(NDR, self.dir), True))
        self.assertEqual(len(lines), 4)
        self.assertTrue(lines[2].startswith(
            "gregw gre 2w, 64-byte frames (46-byte inner IP packets, 88-byte frames on "
            "transit): NDR 0.200 Mpps (0.07 Gbit/s inner, 0.17 on the wire), PDR 0.200 Mpps; "
            "at 90% of PDR latency p50 0.019 ms, p99 0.190 ms"), lines[2])
        self.assertIn("direct (the generator alone), 64-byte frames", lines[0])
        with open(os.path.join(self.dir, "summary.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([(r["gateway"], r["frame"], r["transit"]) for r in rows],
                         [("direct", "64", "64"), ("direct", "512", "512"),
                          ("gregw", "64", "88"), ("gregw", "512", "536")])
        self.assertEqual(float(rows[2]["ndr_pps"]), self.recs[2]["result"]["ndr"]["rate"])
        with open(os.path.join(self.dir, "trials.csv")) as f:
            trials = list(csv.DictReader(f))
        self.assertEqual(len(trials), sum(len(r["trials"]) + 3 for r in self.recs))
        md = open(os.path.join(self.dir, "report.md")).read()
        page = open(os.path.join(self.dir, "report.html")).read()
        self.assertTrue(md.startswith("# tunbed ndr: a <b>test</b>\n\n- direct"))
        self.assertIn("<title>tunbed ndr: a &lt;b&gt;test&lt;/b&gt;</title>", page)
        self.assertNotIn("<script", page)
        names = ["rates", "loss-f64", "latency-f64", "loss-f512", "latency-f512"]
        self.assertEqual(page.count("<svg"), len(names))
        for n in names:
            self.assertIn(f"plots/{n}.svg", md)
            self.assertTrue(os.path.getsize(os.path.join(self.dir, "plots", f"{n}.png")) > 1000)

    def test_other_processes_at_pdr(self):
        # The stored route search: 29.6% of the box busy beyond the watched threads, 25.5% of it
        # softirq, route's own forwarding: not flagged. The same with gregw's process in it
        # (a userspace gateway): flagged, one headline line.
        from tunbedlib.kinds import ndr_report
        path = os.path.join(HERE, "data", "formats", "ndr-2", "searches", "route-f64.json")
        with open(path) as f:
            rec = json.load(f)
        s = ndr_report.summarise(rec)
        self.assertFalse(s["foreign_flagged"])
        self.assertAlmostEqual(s["foreign_at_pdr"][0]["foreign_pct"], 4.2, places=1)
        self.assertEqual([x for x in ndr_report.headline([s]) if "did not start" in x], [])
        rec["hosts"][0]["processes"]["1"] = "gregw gwa"
        s = ndr_report.summarise(rec)
        self.assertTrue(s["foreign_flagged"])
        self.assertEqual([x for x in ndr_report.headline([s]) if "did not start" in x], [
            f"{ndr_report.label(s)}, 64-byte frames: at PDR processes tunbed did not start used "
            "30% of this machine's CPU (softirq 25% apart) (flagged from 10%): its rates may be "
            "low"])

    def test_imix(self):
        # An IMIX search beside the fixed sizes: its own headline line (the mix, the means),
        # its rates in bits of the mix's mean, the capped member in its note, its plots.
        import csv
        imix = fake_record("gregw gre 2w", "gregw", ndr.IMIX, 150000, 5)
        with open(os.path.join(self.dir, "searches", "gregw-s8-fimix.json"), "w") as f:
            json.dump(dict(imix, format=3, kind="ndr"), f)
        lines = render.write_all(self.dir, NDR.report(*records.load(NDR, self.dir), True))
        line = next(x for x in lines if x.startswith("gregw gre 2w, IMIX"))
        rate = imix["result"]["ndr"]["rate"]
        self.assertTrue(line.startswith(
            "gregw gre 2w, IMIX frames (64/594/1494 bytes 7:4:1, a mean of 341.8-byte inner IP "
            f"packets, 383.8-byte frames on transit): NDR {rate / 1e6:.3f} Mpps "
            f"({rate * 4102 / 12 * 8 / 1e9:.2f} Gbit/s inner, "
            f"{rate * (4606 / 12 + 20) * 8 / 1e9:.2f} on the wire)"), line)
        self.assertIn("its 1518-byte member capped at 1494, the largest frame carried", line)
        with open(os.path.join(self.dir, "summary.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(rows[-1]["frame"], "imix")
        names = ["rates", "loss-f64", "latency-f64", "loss-f512", "latency-f512", "loss-fimix",
                 "latency-fimix"]
        with open(os.path.join(self.dir, "report.md")) as f:
            md = f.read()
        for n in names:
            self.assertIn(f"plots/{n}.svg", md)
        self.assertIn("Latency at 10, 50 and 90% of PDR, IMIX frames", md)

    def test_tunbed_report(self):
        import subprocess
        tunbed = os.path.join(HERE, "..", "..", "scripts", "tunbed")
        p = subprocess.run([tunbed, "report", self.dir], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines()[-2:], [
            f"report: {self.dir}/report.md", f"report: {self.dir}/report.html"])
        self.assertEqual(len(p.stdout.splitlines()), 6)
        with open(os.path.join(self.dir, "searches", "gregw-s8-f64.json"), "w") as f:
            f.write('{"format": 4, "kind": "ndr", "point": {}}')
        p = subprocess.run([tunbed, "report", self.dir], capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr, f"tunbed: {self.dir}/searches/gregw-s8-f64.json: NDR results "
                                   "written by a newer tunbed (format 4); this one reads 1-3\n")


if __name__ == "__main__":
    unittest.main()
