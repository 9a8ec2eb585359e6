"""`tunbed smoke`: one TCP session through the kernel's plain forwarding (route) on ras.topo for
a second or two: whether the testbed works on this machine. The smallest scenario kind, and the
one CONTRIBUTING.md's "Adding a kind" shows whole (tests/netns/runner_smoke.sh runs it and
checks that the two are the same).

Records: runs/route-s1-r1.json and meta.json, format 1."""

import dataclasses

from .. import bed as beds
from .. import records, scenario
from ..common import TRAFFIC_PORT, deferred_signals
from ..document import Csv, Document, Section, Table, footer, title
from ..drivers import DRIVERS
from ..schema import NUM, Num, Obj, Opt, Str
from .base import Command, Item, Kind, output_options
from .matrix_point import traffic_client, wait_listening

TCP = Obj({"bits_per_second": NUM}, need=("bits_per_second",))
RUN_SCHEMA = Obj({"kind": Str("smoke", "smoke"),
                  "point": Obj({"key": records.KEY}, need=("key",)), "repeat": Num(1, 1),
                  "traffic": Obj({"tcp": TCP, "measured_s": Opt(NUM)}, need=("tcp",))},
                 need=("kind", "point", "repeat", "traffic"))
META_SCHEMA = Obj({"kind": Str("smoke", "smoke"), "time": Num(1, 60)}, need=("kind", "time"))


@dataclasses.dataclass
class Plan:
    time: float
    prefix: str
    name: str = "smoke"


def arguments(p):
    p.add_argument("--time", type=float, default=2.0, metavar="S",
                   help="measured seconds, 1 to 60 (default 2)")
    output_options(p)


class Smoke(Kind):
    name = "smoke"
    FORMAT = 1
    commands = (Command("smoke", "one session through the kernel's route on ras.topo: whether "
                                 "the testbed works here", arguments),)

    # 1. The plan: checked before anything is installed or started.
    def check(self, args):
        if not 1 <= args.time <= 60:
            raise scenario.ScenarioError(f"--time: '{args.time:g}' is not 1 to 60 seconds")
        return Plan(args.time, args.prefix)

    def items(self, plan):
        return [Item("route-s1-r1", "route, 1 session",
                     scenario.Point("route", "-", 0, 0, "push", 1))]

    def meta(self, plan):
        return {"scenario": "smoke", "title": "one session through route", "time": plan.time,
                "prefix": plan.prefix}

    # 2. The bed: ras.topo in namespaces, built for each item.
    def bed(self, plan):
        return beds.NamespaceBed(scenario.Scenario(topology="ras"), plan.prefix, {})

    # 3. The measurement: what it starts, it stops.
    def measure(self, plan, bed, item):
        driver, server = DRIVERS["route"](bed, item.point), None
        try:
            driver.setup()
            h = bed.host("server")
            server = h.spawn("server", [h.bin("tunbed-traffic"), "server", "--port",
                                        str(TRAFFIC_PORT)])
            wait_listening(h)
            doc, _, _ = traffic_client(bed, [bed.addrs["server"], "--port", str(TRAFFIC_PORT),
                                             "--time", f"{plan.time:g}"])
        finally:
            with deferred_signals():
                if server and server.poll() is None:
                    server.stop()
                driver.teardown()
        return {"point": {"key": "route-s1"}, "repeat": item.repeat, "traffic": doc}

    # 4. The records: the schema of each format (and an upgrade step for each older one).
    def record_schema(self, fmt):
        return RUN_SCHEMA

    def meta_schema(self, fmt):
        return META_SCHEMA

    # 5. The report.
    def report(self, meta, recs, complete):
        runs = [{"key": r["point"]["key"], "bits_per_second": r["traffic"]["tcp"]
                 ["bits_per_second"], "measured_s": r["traffic"].get("measured_s")}
                for r in recs]
        rows = [[r["key"], f"{r['bits_per_second'] / 1e9:.2f}"] for r in runs]
        return Document(
            title=title(meta), complete=complete,
            headline=[f"route, 1 session: {r['bits_per_second'] / 1e9:.2f} Gbit/s"
                      for r in runs],
            sections=[Section(table=Table(("point", "Gbit/s"), rows, "points"))],
            footer=footer(), summary={"meta": meta, "complete": complete, "runs": runs},
            csv=[Csv("summary", ["point", "bits_per_second"],
                     [[r["key"], r["bits_per_second"]] for r in runs])])


KIND = Smoke()
