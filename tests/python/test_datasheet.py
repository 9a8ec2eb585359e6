"""Unit tests of `tunbed datasheet` (scripts/tunbedlib/kinds/datasheet*.py): the budget's
plan (what fits, what is refused, what is left out), which part applies to which gateway, the
command line's refusals before anything starts, and the report of synthetic records made from
the recorded runs of tests/python/data/formats/ (route and gregw: every section in each
renderer, the side-by-side page with both columns, failover not applicable for route, and the
same summary.json when rebuilt from the directory)."""

import argparse
import copy
import csv
import html
import json
import os
import random
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)

from tunbedlib import budget, cli, inventory, plots, records, render, runloop, scenario, tosprobe  # noqa: E402
from tunbedlib.drivers import DRIVERS  # noqa: E402
from tunbedlib.common import ScenarioError  # noqa: E402
from tunbedlib.kinds import datasheet_plan as dplan  # noqa: E402
from tunbedlib.kinds import datasheet_interop, datasheet_tos, for_dir, matrix  # noqa: E402
from tunbedlib.kinds import matrix_budget  # noqa: E402
from tunbedlib.kinds.datasheet import KIND  # noqa: E402

import test_records_fuzz as fuzz  # noqa: E402  (its random changes of a record)

FORMATS = os.path.join(HERE, "data", "formats")
GREGW_1518 = ("frame size 1518 is too big for gregw gre: its inner IP packet (1500 bytes) "
              "exceeds the tunnel MTU 1476 (transit MTU 1500 - 24 of tunnel headers)")


def tos_record():
    """The DSCP/ECN part's record of gregw gre, 2 workers, as a run wrote it."""
    with open(os.path.join(HERE, "data", "datasheet-tos-gregw.json")) as f:
        return json.load(f)["record"]


def load(*path):
    return json.loads(read(FORMATS, *path))


def read(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


def parts():
    return dplan.applicability(["route", "gregw"], {"route": {64: None, 1518: None},
                                                    "gregw": {64: None, 1518: GREGW_1518}})


class Budget(unittest.TestCase):
    def test_parse(self):
        for text, s in (("20m", 1200), ("1h30m", 5400), ("90s", 90), ("600", 600),
                        ("1h", 3600), (" 2m ", 120)):
            self.assertEqual(dplan.parse_budget(text), s, text)
        for text in ("", "x", "0", "25h", "20 m", "-5m", "1.5h", "m"):
            with self.assertRaises(ScenarioError) as e:
                dplan.parse_budget(text)
            self.assertEqual(len(str(e.exception).splitlines()), 1)
            self.assertIn("--budget", str(e.exception))

    def test_richer_with_more_time(self):
        ps = parts()
        names = [t.name for t in dplan.TIERS]
        last = len(names)
        for seconds in (120, 180, 300, 900, 1200, 3600, 86400):
            tier, est = dplan.choose(seconds, ps)
            self.assertLessEqual(sum(est.values()), seconds)
            self.assertLessEqual(names.index(tier.name), last, seconds)  # never poorer
            last = names.index(tier.name)
        self.assertEqual(dplan.choose(86400, ps)[0].name, "full")
        self.assertEqual(dplan.choose(120, ps)[0].name, "least")

    def test_too_small_refused_in_one_line(self):
        least = sum(dplan.estimate(dplan.TIERS[-1], parts()).values())
        with self.assertRaises(ScenarioError) as e:
            dplan.choose(int(least) - 1, parts())
        line = str(e.exception)
        self.assertEqual(len(line.splitlines()), 1)
        self.assertRegex(line, r"^--budget 1:[0-9]{2} is too small for one point of each part: "
                               r"the least is ~1:[0-9]{2} for route, gregw \(throughput ~")
        self.assertEqual(dplan.choose(int(least) + 1, parts())[0].name, "least")

    def test_estimate_counts_what_applies(self):
        tier = dplan.TIERS[0]
        both = dplan.estimate(tier, parts())
        route = dplan.estimate(tier, {"route": parts()["route"]})
        self.assertEqual(route["failover"], 0)  # route cannot be paired
        self.assertGreater(both["failover"], 0)
        self.assertEqual(both["throughput"], 2 * route["throughput"])
        # route at 64, 1518 and IMIX with the generator alone at each; gregw at 64 and IMIX.
        self.assertEqual(route["ndr"], 6 * dplan.search_s(tier))
        self.assertEqual(both["ndr"], 8 * dplan.search_s(tier))

    def test_imix_but_in_the_least_plan(self):
        # The least plan is 64-byte frames alone, so that route and gregw fit two minutes
        # (netns/runner_datasheet); every other searches the IMIX too.
        self.assertEqual([t.sizes for t in dplan.TIERS],
                         [(64, 1518, "imix")] * 4 + [(64,)])
        self.assertEqual(dplan.choose(120, parts())[0].name, "least")
        self.assertIn("NDR and PDR at 64-byte, 1518-byte and IMIX frames, final trials",
                      dplan.TIERS[0].words())
        self.assertIn("NDR and PDR at 64-byte frames, final", dplan.TIERS[-1].words())

    def test_left_out_sizes(self):
        ps = parts()
        tier = dplan.TIERS[-1]
        dplan.leave_out(ps, tier.sizes, tier.name)
        self.assertIsNone(dplan.ndr_size(ps["route"], 64))
        self.assertEqual(dplan.ndr_size(ps["route"], 1518),
                         "not run: left out to fit --budget (the least plan)")
        self.assertEqual(dplan.ndr_size(ps["gregw"], 1518), f"not applicable: {GREGW_1518}")
        self.assertEqual(dplan.ndr_size(ps["gregw"], "imix"),
                         "not run: left out to fit --budget (the least plan)")


class Applicability(unittest.TestCase):
    def test_parts(self):
        ps = parts()
        self.assertEqual(ps["gregw"]["failover"], {"status": "run", "reason": None})
        self.assertEqual(ps["route"]["failover"]["status"], "not applicable")
        self.assertIn("route cannot run as an active and passive pair",
                      ps["route"]["failover"]["reason"])
        self.assertEqual(ps["gregw"]["interop"]["status"], "not run")
        self.assertEqual(ps["route"]["interop"]["status"], "not applicable")
        no_frr = dplan.applicability(["gregw"], {}, failover_why="no FRR")
        self.assertEqual(no_frr["gregw"]["failover"], {"status": "not applicable",
                                                       "reason": "no FRR"})
        none = dplan.applicability(["gregw"], {"gregw": {64: "a", 1518: "b", "imix": "a"}})
        self.assertEqual(none["gregw"]["ndr"], {"status": "not applicable", "reason": "a; b"})
        dplan.skipped(ps, "route", "missing")
        self.assertEqual(ps["route"]["throughput"]["reason"], "route skipped: missing")

    def test_gateways(self):
        lookup = {"gregw": 1, "route": 1}.get
        self.assertEqual(dplan.gateways_of("gregw, route", lookup), ["gregw", "route"])
        for text, what in (("", "expected a list"), ("gregw,gregw", "twice"),
                           ("direct", "unknown gateway 'direct'"), ("nope", "unknown")):
            with self.assertRaises(ScenarioError) as e:
                dplan.gateways_of(text, lookup)
            self.assertIn(what, str(e.exception))


class Tos(unittest.TestCase):
    """The DSCP/ECN part: which gateway it applies to, the probe's packets, and the verdicts
    read from a record (a real one of gregw, and the same changed as Linux's GRE, or a gateway
    that loses the marks, would make it)."""

    def test_applies_where_tunbed_wire_reads_the_transit_or_a_udp_port_carries_it(self):
        for g, why in (("gregw", None), ("gre", None), ("ovs-gre", None), ("vxlan", None),
                       ("wireguard-go", None), ("openvpn", None), ("openvpn-none", None),
                       ("fastd", None), ("fastd-null", None),
                       ("route", "route has no tunnel")):
            st = dplan.tos_applies(g, DRIVERS[g])
            if why is None:
                self.assertEqual(st["status"], "run", g)
            else:
                self.assertEqual(st["status"], "not applicable", g)
                self.assertTrue(st["reason"].startswith(why), st["reason"])

    def test_gre_options_of_the_far_gateway(self):
        gregw = DRIVERS["gregw"]
        self.assertEqual(gregw.gre_options("gre"), {"key": None, "csum": False})
        self.assertEqual(gregw.gre_options("gre+key+csum"), {"key": 7, "csum": True})
        self.assertIsNone(gregw.gre_options("gre+seq"))
        self.assertIsNone(gregw.gre_options("gre-udp"))
        self.assertEqual(DRIVERS["ovs-gre"].gre_options("-"), {"key": 7, "csum": False})

    def test_probe_packet(self):
        a = argparse.Namespace(src="198.18.0.1", dst="198.18.0.2", inner_src="198.18.1.2",
                               inner_dst="198.18.3.2", port=9407, outer_tos=0x2B,
                               inner_tos=0x2A, key=7, csum=True)
        f = tosprobe.frame(a)
        self.assertEqual((f[1], f[9], tosprobe.csum(f[:20])), (0x2B, 47, 0))
        g = f[20:]
        self.assertEqual(g[:4], bytes([0xA0, 0, 8, 0]))  # checksum and key present, IPv4
        self.assertEqual(tosprobe.csum(g), 0)
        self.assertEqual(int.from_bytes(g[8:12], "big"), 7)
        inner = g[12:]
        self.assertEqual((inner[1], inner[9], tosprobe.csum(inner[:20])), (0x2A, 17, 0))
        self.assertEqual(int.from_bytes(inner[22:24], "big"), 9407)
        with self.assertRaises(SystemExit), \
                mock.patch.object(sys, "stderr", new=open(os.devnull, "w")) as err:
            self.addCleanup(err.close)
            tosprobe.main(["send", "--src", "x", "--dst", "198.18.0.2", "--inner-src",
                           "198.18.1.2", "--inner-dst", "198.18.3.2", "--port", "1",
                           "--count", "1", "--outer-tos", "3", "--inner-tos", "2"])

    def test_gregw_carries_and_copies(self):
        a = datasheet_tos.analyse(tos_record())
        self.assertEqual([a[k]["verdict"] for k in ("dscp", "encap", "decap")],
                         ["yes", "copied", "yes"])
        self.assertEqual(a["encap"]["words"], "copied (RFC 6040's normal mode): ECT(0) -> "
                                              "ECT(0); ECT(1) -> ECT(1); CE -> CE")
        self.assertRegex(a["decap"]["words"], r"^yes: ECT\(0\) under CE: 100 of 100 arrived "
                                              r"CE; .*Not-ECT under CE: dropped")

    def test_as_linux_gre_and_a_gateway_that_loses_the_marks(self):
        rec = tos_record()
        tos = rec["wire"]["directions"][0]["tos"]
        tos["dscp_copied"] = 0
        n = tos["ecn"]["ce"]["ce"]
        tos["ecn"]["ce"].update(ce=0, ect0=n)
        rec["decap"]["arrived"] = {"42": 100, "73": 60, "104": 100}
        a = datasheet_tos.analyse(rec)
        self.assertTrue(a["dscp"]["words"].startswith("no: 0 of "), a["dscp"])
        self.assertEqual(a["encap"]["words"],
                         "not copied (CE reset to ECT(0): RFC 3168's full functionality, not "
                         "RFC 6040's copy): ECT(0) -> ECT(0); ECT(1) -> ECT(1); CE -> ECT(0)")
        self.assertEqual(a["decap"]["words"],
                         "no: ECT(0) under CE: 0 of 100 arrived CE; ECT(1) under CE: 0 of 60 "
                         "arrived CE (100 sent); Not-ECT under CE: delivered (100 of 100 "
                         "arrived)")
        rec["decap"]["arrived"] = {}
        self.assertEqual(datasheet_tos.analyse(rec)["decap"]["verdict"], None)
        rec["decap"], rec["decap_why"] = None, "gregw gre-udp takes none"
        rec["wire"] = None
        a = datasheet_tos.analyse(rec)
        self.assertEqual((a["decap"]["words"], a["dscp"]["verdict"]),
                         ("not measured: gregw gre-udp takes none", None))

    def test_a_failure_of_the_part_fails_its_item_alone(self):
        """tunbed-wire or the probe failing is the item's failure (GatewayFailure: the run goes
        on), not the run's."""
        from tunbedlib.common import Failure, GatewayFailure
        plan = KIND.check(args(budget="2m"))
        item = next(i for i in KIND.items(plan) if i.point.part == "tos")

        def fails(*a, **kw):
            raise Failure("tunbed-wire: did not start")
        with mock.patch.object(datasheet_tos, "measure", fails), \
                self.assertRaises(GatewayFailure) as e:
            KIND.measure(plan, None, item)
        self.assertEqual(str(e.exception), "DSCP/ECN: tunbed-wire: did not start")

    def test_a_bad_record_refused(self):
        rec = tos_record()
        rec["decap"]["probes"][0]["inner"] = "ect2"
        with self.assertRaises(records.FormatError) as e:
            records.check(rec, datasheet_tos.RECORD_SCHEMA, "x.json: record")
        self.assertEqual(str(e.exception), "x.json: record: decap.probes[0].inner: expected "
                                           "not-ect, ect1, ect0, ce")


def loaded(**change):
    """A load of 64 ECN sessions as datasheet_tos.under_load records it, gregw's counters of
    both gateways with it; change: fields replaced."""
    ld = {"sessions": 64, "seconds": 4, "congestion": "cubic", "status": 0, "error": None,
          "bytes": 2_000_000_000, "bits_per_second": 4.0e9, "ecn_negotiated": 64,
          "nstat": {"TcpOutSegs": 1_400_000, "TcpRetransSegs": 25, "TcpExtTCPDelivered":
                    1_399_000, "TcpExtTCPDeliveredCE": 1_234},
          "gateway": {"gwa": {"aqm_marked": 0, "dropped": 0, "tun_read_pauses": 310,
                              "tun_device_tx_dropped": 0, "drops": {}},
                      "gwb": {"aqm_marked": 345, "dropped": 3, "tun_read_pauses": 0,
                              "tun_device_tx_dropped": 0, "drops": {"aqm": 3}}}}
    ld.update(change)
    return ld


class Load(unittest.TestCase):
    """The DSCP/ECN part's marks and drops under load: what a record of them says, an old
    record without them, the counters they are taken from, and the plan's seconds."""

    def test_marks_with_the_gateways_own(self):
        rec = dict(tos_record(), load=loaded())
        records.check(rec, datasheet_tos.RECORD_SCHEMA, "x.json: record")
        a = datasheet_tos.analyse(rec)["load"]
        self.assertEqual((a["verdict"], a["ce_echoed"], a["retransmits"],
                          a["retransmits_per_gb"]), ("marks", 1234, 25, 12.5))
        self.assertEqual(a["words"],
                         "marks: 1,234 segments delivered under a CE echo, 12 retransmits/GB "
                         "(25 of 1,400,000 segments; 64 ECN sessions, CUBIC, 4 s, 4.00 Gbit/s); "
                         "the gateway: gwa 0 marked CE (aqm_marked), 0 dropped; gwb 345 marked "
                         "CE (aqm_marked), 3 dropped (aqm 3)")

    def test_marks_in_the_flow_queue(self):
        """A gregw with CoDel in its flow queue says its tx_aqm_marked beside aqm_marked."""
        gw = loaded()["gateway"]
        gw["gwa"].update(tx_aqm_marked=5000, dropped=12, drops={"tx_aqm": 12})
        gw["gwb"]["tx_aqm_marked"] = 0
        rec = dict(tos_record(), load=loaded(gateway=gw))
        records.check(rec, datasheet_tos.RECORD_SCHEMA, "x.json: record")
        self.assertTrue(datasheet_tos.analyse(rec)["load"]["words"].endswith(
            "the gateway: gwa 5,000 marked CE in its flow queue (tx_aqm_marked) and 0 on receive "
            "(aqm_marked), 12 dropped (tx_aqm 12); gwb 0 marked CE in its flow queue "
            "(tx_aqm_marked) and 345 on receive (aqm_marked), 3 dropped (aqm 3)"))

    def test_measured_though_the_client_failed_at_the_end(self):
        """Sessions that all negotiated ECN and carried the load but did not close within the
        client's grace: the counts stand, and the row says why the client failed."""
        a = datasheet_tos.load({"load": loaded(
            status=1, error="tunbed-traffic: 198.18.3.2 port 9400: Connection timed out (35 "
                            "of 64 sessions)", gateway=None)})
        self.assertEqual(a["verdict"], "marks")
        self.assertTrue(a["words"].endswith("Gbit/s); the client exited 1: tunbed-traffic: "
                                            "198.18.3.2 port 9400: Connection timed out (35 of "
                                            "64 sessions)"), a["words"])

    def test_drops_and_neither_without_counters(self):
        ns = {"TcpOutSegs": 900_000, "TcpRetransSegs": 2_468, "TcpExtTCPDelivered": 890_000,
              "TcpExtTCPDeliveredCE": 0}
        a = datasheet_tos.load({"load": loaded(nstat=ns, gateway=None)})
        self.assertEqual(a["verdict"], "drops")
        self.assertTrue(a["words"].startswith("drops: 0 segments delivered under a CE echo, "
                                              "1,234 retransmits/GB (2,468 of 900,000"),
                        a["words"])
        self.assertNotIn("the gateway", a["words"])
        a = datasheet_tos.load({"load": loaded(nstat=dict(ns, TcpRetransSegs=0))})
        self.assertEqual(a["verdict"], "neither")

    def test_not_measured(self):
        for rec, words in (
                (tos_record(), "not measured: this record was made before tunbed measured "
                               "marks and drops under load"),
                ({"load": None, "load_why": "not run: left out to fit --budget (the least "
                                            "plan)"},
                 "not measured: not run: left out to fit --budget (the least plan)"),
                ({"load": loaded(status=1, error="tunbed-traffic: --ecn on: 3 of 64 sessions "
                                                 "negotiated no ECN (...)", ecn_negotiated=61)},
                 "not measured: 61 of 64 sessions negotiated ECN"),
                ({"load": loaded(status=1, error=None, bytes=0)},
                 "not measured: the 64 sessions failed: the client's exit status 1"),
                ({"load": loaded(ecn_negotiated=60)},
                 "not measured: 60 of 64 sessions negotiated ECN")):
            a = datasheet_tos.load(rec)
            self.assertEqual((a["verdict"], a["words"]), (None, words))
        self.assertEqual(datasheet_tos.analyse(tos_record())["load"]["verdict"], None)

    def test_a_bad_load_refused(self):
        for change, what in ((lambda ld: ld["nstat"].pop("TcpRetransSegs"),
                              "load.nstat.TcpRetransSegs: expected a whole number"),
                             (lambda ld: ld.update(sessions=0),
                              "load.sessions: expected a whole number of at least 1"),
                             (lambda ld: ld["gateway"]["gwb"]["drops"].update(aqm="3"),
                              "load.gateway.gwb.drops.aqm: expected a whole number")):
            rec = dict(tos_record(), load=loaded())
            change(rec["load"])
            with self.assertRaises(records.FormatError) as e:
                records.check(rec, datasheet_tos.RECORD_SCHEMA, "x.json: record")
            self.assertEqual(str(e.exception), f"x.json: record: {what}")

    def test_the_counters(self):
        def stats(marked, aqm, pauses):
            return {"total": {"aqm_marked": marked, "dropped": aqm, "tun_read_pauses": pauses,
                              "tun_device_tx_dropped": None, "drops": {"aqm": aqm, "bad_key": 0}}}
        before = datasheet_tos.gateway_counters({"gwa": stats(0, 0, 5), "gwb": stats(10, 1, 0)})
        after = datasheet_tos.gateway_counters({"gwa": stats(0, 0, 9), "gwb": stats(40, 4, 0)})
        self.assertEqual(datasheet_tos.counted(before, after),
                         {"gwa": {"aqm_marked": 0, "dropped": 0, "tun_read_pauses": 4,
                                  "drops": {}},
                          "gwb": {"aqm_marked": 30, "dropped": 3, "tun_read_pauses": 0,
                                  "drops": {"aqm": 3}}})
        # A gateway that says nothing of marks (the kernel's: no telemetry) has no counters.
        self.assertEqual(datasheet_tos.gateway_counters(None), {})
        self.assertEqual(datasheet_tos.gateway_counters({"gwa": {"flows": 3}}), {})

    def test_nstat(self):
        class Host:
            def __init__(self, out):
                self.out, self.argv = out, None

            def run(self, argv):
                self.argv = argv
                return self.out

            def label(self):
                return "P-client"
        h = Host("#kernel\nTcpOutSegs                      1400              0.0\n"
                 "TcpRetransSegs                  3                 0.0\n"
                 "TcpExtTCPDelivered              1390              0.0\n"
                 "TcpExtTCPDeliveredCE            0                 0.0\n")
        self.assertEqual(datasheet_tos.nstat(h), {"TcpOutSegs": 1400, "TcpRetransSegs": 3,
                                                  "TcpExtTCPDelivered": 1390,
                                                  "TcpExtTCPDeliveredCE": 0})
        self.assertEqual(h.argv[:2], ["nstat", "-saz"])
        from tunbedlib.common import Failure
        with self.assertRaises(Failure) as e:
            datasheet_tos.nstat(Host("#kernel\nTcpOutSegs 1 0.0\n"))
        self.assertEqual(str(e.exception), "nstat on P-client has no TcpRetransSegs, "
                                           "TcpExtTCPDelivered, TcpExtTCPDeliveredCE")

    def test_the_plan_seconds(self):
        least, full = dplan.TIERS[-1], dplan.TIERS[0]
        self.assertEqual((least.load_s, dplan.tos_s(least)), (0, dplan.TOS_S))
        self.assertEqual(dplan.tos_s(full), dplan.TOS_S + full.load_s + dplan.LOAD_SETUP_S)
        self.assertTrue(all(t.load_s for t in dplan.TIERS[:-1]))
        self.assertTrue(least.words().endswith("; DSCP/ECN under load: left out"))
        self.assertTrue(full.words().endswith("; DSCP/ECN under load: 64 ECN sessions (CUBIC) "
                                              "for 5 s"), full.words())

    def test_the_plan_passes_its_seconds_or_why_not(self):
        plan = KIND.check(args(budget="2m"))
        item = next(i for i in KIND.items(plan) if i.point.part == "tos")
        got = {}

        def measure(sc, point, bed, **kw):
            got.update(kw)
            return {"load": None}
        with mock.patch.object(datasheet_tos, "measure", measure):
            KIND.measure(plan, None, item)
        self.assertEqual(got, {"load_s": 0, "load_why": "not run: left out to fit --budget "
                                                        "(the least plan)"})
        plan = KIND.check(args(budget="1h"))
        item = next(i for i in KIND.items(plan) if i.point.part == "tos")
        self.assertEqual(item.weight, dplan.tos_s(plan.tier))
        with mock.patch.object(datasheet_tos, "measure", measure):
            KIND.measure(plan, None, item)
        self.assertEqual(got, {"load_s": plan.tier.load_s, "load_why": None})


class Interop(unittest.TestCase):
    """The guest tests' results as their runs record them (tests/netns/guest_lib.sh,
    guest_record), counted for this build id only."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.bin = os.path.join(self.tmp.name, "bin")
        self.dir = os.path.join(self.tmp.name, "interop")
        os.makedirs(self.dir)

    def record(self, test, build="0123456789ab", result="pass", name=None):
        with open(os.path.join(self.dir, (name or test) + ".json"), "w") as f:
            json.dump({"test": test, "result": result, "build_id": build,
                       "finished_utc": "2026-12-03T23:50:00Z"}, f)

    def test_not_run_without_a_record_of_this_build(self):
        self.record("guest_gre", build="ba9876543210")
        st = datasheet_interop.status("gregw", self.bin, "0123456789ab")
        self.assertEqual(st["status"], "not run")
        self.assertRegex(st["reason"], r"^no result of the guest tests \(guest_gre, guest_gre6, "
                                       r"guest_gregw\) is recorded for this build "
                                       r"\(0123456789ab\): sudo env TUNBED_BIN=.*/bin sh -c "
                                       r"'tests/netns/guest_gre.sh && ")

    def test_recorded_results_of_this_build(self):
        self.record("guest_gre")
        self.record("guest_gre6", result="fail")
        self.record("guest_gre", name="guest_gregw")  # another test's record under its name
        st = datasheet_interop.status("gregw", self.bin, "0123456789ab")
        self.assertEqual(st["status"], "run")
        self.assertEqual(datasheet_interop.words(st),
                         "guest_gre passed (2026-12-03T23:50:00Z); guest_gre6 FAILED "
                         "(2026-12-03T23:50:00Z); guest_gregw not run for this build (build "
                         "0123456789ab)")
        self.assertEqual(datasheet_interop.status("route", self.bin, "0123456789ab")["status"],
                         "not applicable")

    def test_a_bad_record_is_not_a_result(self):
        with open(os.path.join(self.dir, "guest_gre.json"), "w") as f:
            f.write('{"test": "guest_gre", "result": "passed"')
        self.record("guest_gre6", result="maybe")
        os.symlink(os.path.join(self.dir, "guest_gre6.json"),
                   os.path.join(self.dir, "guest_gregw.json"))
        st = datasheet_interop.status("gregw", self.bin, "0123456789ab")
        self.assertEqual(st["status"], "not run")
        self.assertIn("guest_gre6.json: result: expected pass or fail", st["reason"])
        self.assertIn("guest_gregw.json: a link", st["reason"])


def args(**kw):
    a = dict(command="datasheet", gateways="route,gregw", budget="20m", gateway_cpu="off",
             client_cpu=None, hosts=None, prefix="w35u", results="/nonexistent")
    return argparse.Namespace(**(a | kw))


class Check(unittest.TestCase):
    def refused(self, what, **kw):
        with self.assertRaises(ScenarioError) as e:
            KIND.check(args(**kw))
        self.assertEqual(len(str(e.exception).splitlines()), 1)
        self.assertRegex(str(e.exception), what)

    def test_refusals(self):
        self.refused(r"^--budget 0:30 is too small for one point of each part", budget="30s")
        self.refused(r"^unknown gateway 'bogus'", gateways="route,bogus")
        self.refused(r"^bad value 'x' for --gateway-cpu", gateway_cpu="x")
        self.refused(r"^bad value '0' for --client-cpu", client_cpu="0")

    def test_client_cpu_as_ras_has_it(self):
        """--client-cpu budgets the throughput part's traffic clients: the bed is the one
        matrix_budget.namespace_bed gives tunbed ras, with each client's share."""
        with tempfile.TemporaryDirectory() as root, \
                mock.patch.object(budget, "find", lambda: budget.Controller(2, root)):
            plan = KIND.check(args(client_cpu="40", gateway_cpu="15"))
            self.assertEqual((plan.sc.client_cpu, plan.sc.gateway_cpu), (40.0, 15.0))
            bed = KIND.bed(plan).tput
            self.assertIsInstance(bed, matrix_budget.BudgetedBed)
            self.assertEqual((bed.share, bed.client_share), (15.0, 40.0))
            self.assertEqual(KIND.meta(plan)["client_cpu"], 40.0)
            sc = scenario.Scenario(gateways=["gregw"], client_cpu=40.0)
            ras = matrix.KIND.bed(matrix.Plan(sc, "t", {}, None, "w35u", None,
                                              budget.Controller(2, root)))
            self.assertEqual((type(ras), ras.client_share), (type(bed), 40.0))
            off = KIND.bed(KIND.check(args())).tput
            self.assertNotIsInstance(off, matrix_budget.BudgetedBed)

    def test_failed_items_name_their_part_and_gateway(self):
        """What meta.json keeps of a failed item comes from the item's own fields."""
        plan = KIND.check(args(budget="2m"))
        got = {(f["part"], f["gateway"]) for f in (KIND.failed(i, 0.0, "down")
                                                   for i in KIND.items(plan))}
        self.assertEqual(got, {("throughput", "route"), ("throughput", "gregw"),
                               ("tos", "gregw"), ("ndr", "direct"), ("ndr", "route"),
                               ("ndr", "gregw"),
                               ("failover", "gregw")})

    def test_plan(self):
        plan = KIND.check(args(budget="2m"))
        self.assertEqual(plan.tier.name, "least")
        self.assertRegex(plan.notes[0], r"^--budget 2:00: the least plan: throughput 1 repeat "
                                        r"of 1 s .*; estimated 1:[0-9]{2} \(")
        items = KIND.items(plan)
        keys = [i.key for i in items]
        self.assertEqual(sum(k.startswith("throughput-") for k in keys), 6)
        self.assertEqual([k for k in keys if k.startswith("ndr-")],
                         ["ndr-direct-f64", "ndr-route-f64", "ndr-gregw-gre-w2-f64"])
        self.assertEqual([k for k in keys if k.startswith("failover-")],
                         ["failover-gregw-kill-r1"])
        self.assertEqual(KIND.needs(plan), ["ras", "route", "gregw", "failover"])
        self.assertEqual([k for k in keys if k.startswith("tos-")], ["tos-gregw-gre-w2"])
        self.assertEqual({i.key.split("-")[0]: i.weight for i in items},
                         {"throughput": dplan.run_s(plan.tier), "tos": dplan.TOS_S,
                          "ndr": dplan.search_s(plan.tier), "failover": dplan.pair_s(plan.tier)})

    def test_time_left_by_the_items_weights(self):
        """The run loop's time left counts each item by its weight (its estimate): after a
        throughput run of 5 s, a search estimated four times as long is ~0:20 more."""
        now = [100.0]
        with mock.patch("time.monotonic", lambda: now[0]), \
                mock.patch.object(sys, "stderr", new=open(os.devnull, "w")) as err:
            self.addCleanup(err.close)
            p = runloop.Progress(2, start=100.0, weights=[2.5, 10.0])
            p.times(0)
            now[0] += 5
            self.assertEqual(p.times(1), "  elapsed 0:05  left ~0:20")
            self.assertEqual(runloop.Progress(2, start=100.0).times(0), "  elapsed 0:05")
        self.assertEqual(KIND.check(args(budget="2h")).tier.name, "full")


# An inventory of four hosts as ansible-inventory gives it (inventory.load's groups, vars).
INVENTORY = ({"client": ["c1"], "server": ["s1"], "gwa": ["gw1"], "gwb": ["gw2"]},
             {"c1": {"tunbed_addr": "198.18.1.2"},
              "s1": {"tunbed_addr": "198.18.3.2", "tunbed_direct_addr": "198.18.9.2"},
              "gw1": {"tunbed_transit_addr": "198.18.0.1", "tunbed_lan_addr": "198.18.1.1",
                      "tunbed_lan_prefix": "198.18.1.0/24"},
              "gw2": {"tunbed_transit_addr": "198.18.0.2", "tunbed_lan_addr": "198.18.3.1",
                      "tunbed_lan_prefix": "198.18.3.0/24"}})


class OnHosts(unittest.TestCase):
    """--hosts: the inventory checked before anything starts; throughput and NDR on its hosts,
    DSCP/ECN and the failover not applicable there with why; the CPU budgets as tunbed ras has
    them on hosts."""

    def setUp(self):
        groups, hv = copy.deepcopy(INVENTORY)
        self.groups, self.hv = groups, hv
        patch = mock.patch.object(inventory, "load", lambda path: (self.groups, self.hv))
        patch.start()
        self.addCleanup(patch.stop)

    def check(self, **kw):
        with mock.patch.object(sys, "stderr", new=open(os.devnull, "w")) as err:
            self.addCleanup(err.close)
            return KIND.check(args(**(dict(hosts="hosts.ini", gateway_cpu=None) | kw)))

    def refused(self, what, error=ScenarioError, **kw):
        with self.assertRaises(error) as e:
            self.check(**kw)
        self.assertEqual(len(str(e.exception).splitlines()), 1)
        self.assertRegex(str(e.exception), what)

    def test_plan(self):
        plan = self.check(budget="2m")
        self.assertEqual((plan.tier.name, plan.hosts, plan.ndr.hosts), ("least", "hosts.ini",
                                                                        "hosts.ini"))
        self.assertIs(plan.ndr.inv, plan.inv)
        self.assertEqual([h.name for h in plan.inv.roles["gwa"]], ["gw1"])
        for g in ("route", "gregw"):
            self.assertEqual(plan.parts[g]["throughput"], dplan.RUN)
            self.assertEqual(plan.parts[g]["ndr"]["status"], "run")
        # Not on hosts: gregw's with the hosts' reason, route's with its own (no tunnel, no
        # pair), which holds wherever it runs.
        self.assertEqual(plan.parts["gregw"]["tos"], dplan.not_applicable(dplan.TOS_ON_HOSTS))
        self.assertEqual(plan.parts["gregw"]["failover"],
                         dplan.not_applicable(dplan.FAILOVER_ON_HOSTS))
        self.assertIn("a topology of namespaces", dplan.FAILOVER_ON_HOSTS)
        self.assertIn("route has no tunnel", plan.parts["route"]["tos"]["reason"])
        self.assertIn("route cannot run as an active and passive pair",
                      plan.parts["route"]["failover"]["reason"])
        keys = [i.key for i in KIND.items(plan)]
        self.assertEqual(sum(k.startswith("throughput-") for k in keys), 6)
        self.assertEqual([k for k in keys if not k.startswith("throughput-")],
                         ["ndr-direct-f64", "ndr-route-f64", "ndr-gregw-gre-w2-f64"])
        # Without the DSCP/ECN and failover parts the estimate is less than in namespaces.
        self.assertEqual((plan.estimate["tos"], plan.estimate["failover"]), (0, 0))
        # Emulated cores off with a note (as tunbed ras on hosts), kept in the report's notes.
        self.assertIsNone(plan.sc.gateway_cpu)
        self.assertIn("emulated cores off: on hosts", plan.notes[1])
        meta = KIND.meta(plan)
        self.assertEqual((meta["mode"], meta["hosts"]), ("hosts", os.path.abspath("hosts.ini")))
        self.assertEqual(KIND.meta(KIND.check(args()))["mode"], "namespaces")

    def test_one_bed_for_throughput_and_ndr(self):
        from tunbedlib import bed as beds
        plan = self.check(budget="2m")
        bed = KIND.bed(plan)
        self.addCleanup(bed.close)
        self.assertIsInstance(bed, beds.HostsBed)
        self.assertEqual(bed.addrs["server"], "198.18.3.2")
        seen = []
        with mock.patch.object(beds.HostsBed, "point",
                               lambda self, item: seen.append(item.point)):
            for i in KIND.items(plan):
                bed.point(i)
        self.assertTrue(all(isinstance(p, scenario.Point) for p in seen), seen)
        self.assertEqual({p.gateway for p in seen}, {"route", "gregw", "direct"})

    def test_frames_at_the_hosts_mtu(self):
        # The inventory's family and HOSTS_MTU, not ras.topo's: an IPv6 inventory's frames.
        for h, a in (("c1", "2001:2:0:1::2"), ("s1", "2001:2:0:3::2")):
            self.hv[h]["tunbed_addr"] = a
        del self.hv["s1"]["tunbed_direct_addr"]
        for h, t, lan, net in (("gw1", "2001:2::1", "2001:2:0:1::1", "2001:2:0:1::/64"),
                               ("gw2", "2001:2::2", "2001:2:0:3::1", "2001:2:0:3::/64")):
            self.hv[h].update(tunbed_transit_addr=t, tunbed_lan_addr=lan, tunbed_lan_prefix=net)
        plan = self.check(budget="2m")
        self.assertEqual(plan.ndr.family, 6)
        self.assertEqual(plan.ndr.frames[("gregw", "gre")]["imix"]["family"], 6)
        self.assertIn("below the smallest frame tunbed-traffic sends over IPv6",
                      plan.parts["gregw"]["ndr"]["sizes"]["64"])

    def test_refusals(self):
        # As tunbed ras on hosts: a share asked for is refused, not turned off.
        self.refused(r"^--gateway-cpu \(gateway_cpu\) budgets threads of this machine: the "
                     r"hosts mode has none$", gateway_cpu="20")
        self.refused(r"^--client-cpu \(client_cpu\) budgets processes of this machine: the "
                     r"hosts mode has none$", client_cpu="20")
        # The inventory: the gateway hosts a gateway needs, before anything connects.
        del self.groups["gwb"]
        self.refused(r"^hosts.ini: no host in group 'gwb'", inventory.InventoryError)

    def test_the_page_says_where(self):
        from tunbedlib.kinds import datasheet_report
        meta = {"mode": "hosts", "hosts": "/x/hosts.ini"}
        hosts = [{"name": n, "roles": [r]} for n, r in (("c1", "client"), ("gw1", "gwa"),
                                                        ("gw2", "gwb"), ("s1", "server"))]
        recs = [{"part": "throughput", "record": {"hosts": hosts}}]
        nd = [{"where": {"mode": "hosts", "path": "direct", "target": "198.18.9.2",
                         "client": "c1", "server": "s1"}},
              {"where": {"mode": "hosts", "path": "gateway", "target": "198.18.3.2",
                         "client": "c1", "server": "s1", "gwa": "gw1", "gwb": "gw2"}}]
        self.assertEqual(datasheet_report.where(meta, recs, nd),
                         "On the hosts of `hosts.ini` (docs/hosts.md), throughput: the gateways "
                         "on gw1 and gw2, the traffic between c1 and s1. NDR / PDR: the "
                         "generator alone between c1 and s1 (directly, to 198.18.9.2); the "
                         "gateways on gw1 and gw2, the traffic between c1 and s1. DSCP/ECN and "
                         "the failover did not run on the hosts: their rows say why.")
        self.assertTrue(datasheet_report.where({}, [], []).startswith(
            "Where each part ran: in network namespaces of this machine"))


def wrap(part, gateway, key, rec, repeat=1):
    return {"kind": "datasheet", "format": 1, "part": part, "gateway": gateway,
            "point": {"key": key}, "repeat": repeat, "record": rec}


def results(outdir):
    """A datasheet's directory of route and gregw from the recorded runs of other kinds."""
    os.makedirs(os.path.join(outdir, "runs"))
    ps = parts()
    tier = dplan.TIERS[-1]
    dplan.leave_out(ps, tier.sizes, tier.name)
    meta = {"format": 1, "kind": "datasheet", "scenario": "datasheet",
            "title": "datasheet of route, gregw", "gateways": ["route", "gregw"], "parts": ps,
            "notes": ["--budget 2:00: the least plan"],
            "plan": {"name": "least", "words": "--budget 2:00: the least plan", "budget_s": 120,
                     "estimate_s": {"throughput": 27}},
            "failover": {"faults": ["stop"]}, "failed": [], "complete": True}
    tput = load("matrix-3-kind", "runs", "route---w0-mtu0-push-s1-r1.json")
    recs = []
    for g, mode, workers in (("route", "-", 0), ("gregw", "gre", 2)):
        for n in dplan.SESSIONS:
            r = copy.deepcopy(tput)
            key = f"{g}-{mode}-w{workers}-mtu0-push-s{n}"
            r["point"] = dict(r["point"], gateway=g, mode=mode, workers=workers, sessions=n,
                              key=key, config=g if mode == "-" else f"{g} {mode} {workers}w")
            r["traffic"]["tcp"]["bits_per_second"] = 1e9 * n * (2 if g == "route" else 1)
            recs.append(wrap("throughput", g, f"throughput-{key}-r1", r))
    search = load("ndr-2", "searches", "route-f64.json")
    for g, key in (("direct", "direct"), ("route", "route"), ("gregw", "gregw-gre-w2")):
        r = copy.deepcopy(search)
        r["point"] = dict(r["point"], gateway=g, key=key, config=g)
        recs.append(wrap("ndr", g, f"ndr-{key}-f64", r))
    recs.append(wrap("tos", "gregw", "tos-gregw-gre-w2", tos_record()))
    recs.append(wrap("failover", "gregw", "failover-gregw-stop-r1",
                     load("failover-2", "runs", "stop-r1.json")))
    for r in recs:
        records.write_object(os.path.join(outdir, "runs", r["point"]["key"] + ".json"), r)
    records.write_object(os.path.join(outdir, "meta.json"), meta)


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.join(cls.tmp.name, "ds")
        results(cls.dir)
        meta, recs = records.load(for_dir(cls.dir), cls.dir)
        render.write_all(cls.dir, KIND.report(meta, recs, True))
        cls.md = read(cls.dir, "report.md")
        cls.html = read(cls.dir, "report.html")
        cls.summary = json.loads(read(cls.dir, "summary.json"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_section_in_each_renderer(self):
        for heading in ("route", "gregw", "Side by side", "Legend"):
            self.assertIn(f"\n## {heading}\n", self.md)
            self.assertTrue(f">{heading}</h2>" in self.html, heading)
        for figure in ("throughput, 1 session", "throughput, 64 sessions",
                       "saturated thread, 8 sessions", "gateway cores per Gbit/s",
                       "CPU-s/GB box", "retransmits/GB", "RTT loaded p50 ms", "emulated cores",
                       "NDR / PDR, 64-byte frames", "NDR / PDR, 1518-byte frames",
                       "NDR / PDR, IMIX frames",
                       "DSCP carried (outer)", "ECN at encapsulation (inner -> outer)",
                       "CE at decapsulation (outer CE -> inner)", "DSCP / ECN measured by",
                       "marks / drops under load (ECN, CUBIC)",
                       "generator budget",
                       "latency p50 ms at 10 / 50 / 90% of PDR", "failover, stop",
                       "interoperability", "inner MTU", "version", "cipher"):
            self.assertIn(f"| {figure}", self.md)
            self.assertEqual(self.html.count(f"<tr><td>{html.escape(figure)}"), 3, figure)
            for g in ("route", "gregw"):
                self.assertTrue(any(f.startswith(figure)
                                    for f, _ in self.summary["gateways"][g]["figures"]),
                                (g, figure))
        self.assertIn("`docs/scaling.md`", self.md)
        self.assertTrue("<code>docs/ndr.md</code>" in self.html, "the legend's links")
        self.assertEqual(self.html.count("<svg "), 2)
        self.assertEqual(len(self.summary["runs"]), 6)
        with open(os.path.join(self.dir, "summary.csv")) as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0], ["gateway", "figure", "value"])
        self.assertEqual({r[0] for r in rows[1:]}, {"route", "gregw"})

    def test_side_by_side(self):
        table = self.md.split("\n## Side by side\n")[1].split("\n## ")[0]
        self.assertIn("| figure | route | gregw |", table)
        rows = {ln.split(" | ")[0].lstrip("| "): ln.split(" | ")[1:]
                for ln in table.splitlines() if ln.startswith("| ")}
        self.assertTrue(rows["throughput, 1 session"][0].startswith("2.00 Gbit/s"))
        self.assertTrue(rows["throughput, 1 session"][1].startswith("1.00 Gbit/s"))
        self.assertTrue('<table id="side-by-side">\n<thead><tr><th>figure</th><th>route</th>'
                        "<th>gregw</th></tr>" in self.html, "the side-by-side table")

    def test_failover_not_applicable_for_route(self):
        route = dict(self.summary["gateways"]["route"]["figures"])
        gregw = dict(self.summary["gateways"]["gregw"]["figures"])
        self.assertRegex(route["failover, stop"], "^not applicable: route cannot run as an "
                                                  "active and passive pair")
        self.assertRegex(gregw["failover, stop"], r"s outage, takeover .* sessions survived$")
        self.assertEqual(route["NDR / PDR, 1518-byte frames"],
                         "not run: left out to fit --budget (the least plan)")
        self.assertEqual(gregw["NDR / PDR, 1518-byte frames"], f"not applicable: {GREGW_1518}")
        self.assertEqual(gregw["NDR / PDR, IMIX frames"],
                         "not run: left out to fit --budget (the least plan)")
        self.assertRegex(route["interoperability"], "^not applicable: the guest tests are "
                                                    "gregw's")
        self.assertRegex(gregw["interoperability"], "^not run: the guest tests")

    def test_a_datasheet_made_before_the_imix(self):
        meta, recs = records.load(for_dir(self.dir), self.dir)
        for g in ("route", "gregw"):
            meta["parts"][g]["ndr"]["sizes"].pop("imix")
        doc = KIND.report(meta, recs, True)
        gregw = dict(doc.summary["gateways"]["gregw"]["figures"])
        self.assertEqual(gregw["NDR / PDR, IMIX frames"],
                         "not run: this datasheet was made before tunbed searched IMIX frames")
        self.assertRegex(gregw["NDR / PDR, 64-byte frames"], r"^[0-9.]+ / [0-9.]+ Mpps")

    def test_rebuilt_from_the_directory(self):
        before = read(self.dir, "summary.json")
        os.remove(os.path.join(self.dir, "summary.json"))
        parser = cli.parser()
        self.assertEqual(cli.cmd_report(parser.parse_args(["report", self.dir])), 0)
        self.assertEqual(read(self.dir, "summary.json"), before)

    def test_meta_without_a_gateways_parts_refused(self):
        for change, what in (
                (lambda m: m["gateways"].append("vxlan"), "parts: expected the parts of "
                                                          "gateway vxlan"),
                (lambda m: m["parts"]["route"].pop("interop"), "parts.route.interop: "),
                (lambda m: m.pop("failover"), "failover: ")):
            d = os.path.join(self.tmp.name, "meta")
            results(d)
            path = os.path.join(d, "meta.json")
            meta = records.read_object(path)
            change(meta)
            records.write_object(path, meta)
            with self.assertRaises(records.FormatError) as e:
                records.load(KIND, d)
            self.assertTrue(str(e.exception).startswith(f"{path}: {what}"), str(e.exception))
            __import__("shutil").rmtree(d)

    def test_changed_records_refused_in_one_line_or_reported(self):
        """test_records_fuzz's property on a datasheet: a directory with random changes is
        refused in one line naming a file, or reported; never a traceback."""
        rng = random.Random(35)
        base = os.path.join(self.tmp.name, "base")
        results(base)
        docs = {os.path.relpath(os.path.join(dp, n), base): records.read_object(
            os.path.join(dp, n)) for dp, _, ns in os.walk(base) for n in ns}
        seen = {"refused": 0, "reported": 0}
        for i in range(60):
            mine = copy.deepcopy(docs)
            target = rng.choice(sorted(mine))
            what = [fuzz.change(rng, mine[target]) for _ in range(rng.randint(1, 3))]
            d = os.path.join(self.tmp.name, f"fuzz{i}")
            for name, doc in mine.items():
                os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
                records.write_object(os.path.join(d, name), doc)
            try:
                with mock.patch.object(plots, "save", fuzz.cheap_save):
                    meta, recs = records.load(KIND, d)
                    render.write_all(d, KIND.report(meta, recs, True))
            except records.FormatError as e:
                self.assertTrue(str(e).startswith(d + "/"), str(e))
                seen["refused"] += 1
            except Exception as e:  # noqa: BLE001 - the property: nothing else escapes
                self.fail(f"#{i} ({target}: {'; '.join(what)}): {type(e).__name__}: {e}")
            else:
                seen["reported"] += 1
        self.assertGreater(min(seen.values()), 5, seen)

    def test_a_bad_part_record_refused(self):
        bad = os.path.join(self.tmp.name, "bad")
        results(bad)
        path = os.path.join(bad, "runs", "ndr-route-f64.json")
        with open(path) as f:
            doc = json.load(f)
        del doc["record"]["frame"]
        records.write_object(path, doc)
        with self.assertRaises(records.FormatError) as e:
            records.load(KIND, bad)
        self.assertIn("ndr-route-f64.json: record: ", str(e.exception))


if __name__ == "__main__":
    unittest.main()
