"""`tunbed intranet`: the cloud same-zone benchmark (docs/intranet.md), as a scenario kind. Its plan
is intranet_plan.py's (profiles, the scenario file, every check before anything starts), its
bed a pair of hosts built per profile (intranet_bed.py), each item one run of a profile (idle
latency, a stream count, a UDP rate) in every repeat, its report intranet_report.py's.

Records: runs/POINT-rREPEAT.json and meta.json, format 4. Format 3, the first, had the point's
kind (idle, tcp, udp) also as the record's `kind`, which is now the scenario kind (`intranet`),
as in every record; the point keeps its own."""

import dataclasses
import os

from .. import inventory
from ..common import ScenarioError
from ..records import FACTS, KEY, RR
from ..schema import BOOL, NUM, STR, List, Num, Obj, Opt, Str
from . import intranet_analysis, intranet_bed, intranet_report
from .base import Command, Item, Kind, output_options
from .intranet_plan import (SHIPPED, IntranetError, Scenario, cpu_list, inventory_nominal, load,
                            machine_cpus, overrides, plan_cpus, point_of, rate_text, resolve,
                            runs_of)

# What the report reads: a point per profile and kind, its profile in meta.json.
PROFILE = Obj({"name": STR, "title": Opt(STR), "rate": Opt(NUM), "nominal": Opt(NUM),
               "congestion": Opt(STR), "cpus": Opt(Obj({"shared": Opt(BOOL)}))}, need=("name",))
POINT = Obj({"key": KEY, "profile": STR, "kind": Str("idle|tcp|udp", "idle, tcp or udp"),
             "streams": Num(0, whole=True), "udp_rate_bps": Num(0)},
            need=("key", "profile", "kind"))
ICMP = Obj({k: Opt(NUM) for k in ("probes", "loss_percent", "avg_ms", "min_ms", "max_ms",
                                  "mdev_ms", "jitter_ms")})
UDP = Obj({k: Opt(NUM) for k in ("received", "lost", "loss_percent", "jitter_ms_max",
                                 "reordered", "duplicates", "not_sent", "bits_per_second")}
          | {"sent": NUM, "size": NUM})
RUN = {
    "point": POINT, "repeat": Num(1, whole=True), "started": NUM,
    "traffic": Opt(Obj({
        "icmp": Opt(ICMP), "rr": Opt(RR), "complete": Opt(BOOL), "measured_s": Opt(NUM),
        "tcp": Opt(Obj({"bits_per_second": Opt(NUM), "session_bps_min": Opt(NUM),
                        "session_bps_max": Opt(NUM), "jain": Opt(NUM), "retransmits": Opt(NUM),
                        "per_session": List(Obj({"bits_per_second": Opt(NUM)}))})),
        "config": Opt(Obj({"congestion": Opt(STR)})), "udp": Opt(UDP)})),
    "traffic_error": Opt(STR),
    "qdisc": Opt(Obj({"forward": Opt(Obj({"drops": Opt(NUM)})),
                      "client": Opt(Obj({"drops": Opt(NUM)}))})),
    "facts": Opt(Obj({"client": Opt(FACTS), "server": Opt(FACTS)})), "profile": Opt(PROFILE)}
RUN_SCHEMA_3 = Obj(RUN, need=("point", "repeat"))
RUN_SCHEMA = Obj(RUN | {"kind": Str("intranet", "intranet")}, need=("point", "repeat", "kind"))
META_SCHEMA = Obj({"kind": Str("intranet", "intranet"), "profiles": List(PROFILE)},
                  need=("kind",))


@dataclasses.dataclass
class Plan:
    sc: Scenario
    inv: object
    profiles: list
    plans: dict
    prefix: str
    hosts: str

    @property
    def name(self):
        return self.sc.name


def arguments(p):
    p.add_argument("--scenario", metavar="FILE", help="an intranet scenario file: [intranet] "
                                                      "and [profile NAME] sections")
    p.add_argument("--profiles", metavar="LIST", help="profiles to run, e.g. c1-1.5g,c2-2g "
                                                      "(default: the file's, else the shipped)")
    p.add_argument("--streams", metavar="LIST", help="TCP streams per run (default 1,4,8,16)")
    p.add_argument("--time", metavar="S", help="measured seconds per run (default 10)")
    p.add_argument("--warmup", metavar="S", help="warm-up seconds per TCP run (default 2)")
    p.add_argument("--repeats", metavar="N", help="repeats of every run (default 3)")
    p.add_argument("--udp-rate", metavar="LIST",
                   help="UDP rates: bit rates or shares of the profile's cap, e.g. 1gbit or "
                        "50%%,150%% (default 1gbit)")
    p.add_argument("--ping-count", metavar="N", help="ICMP echo probes idle, and at most under "
                                                     "load (default 100)")
    p.add_argument("--ping-interval", metavar="S", help="seconds between probes (default 0.2)")
    output_options(p)
    p.add_argument("--hosts", metavar="INVENTORY",
                   help="between the client and server hosts of an Ansible inventory, with no "
                        "cap of ours (docs/hosts.md, docs/intranet.md)")


class Intranet(Kind):
    name = "intranet"
    FORMAT = 4
    OLDEST = 3  # the first intranet runs wrote the matrix's format of the day, 3
    UNNUMBERED = None
    commands = (Command(
        "intranet", "the cloud same-zone benchmark: ping, 1 to 16 streams, UDP, instance "
                    "profiles (docs/intranet.md)", arguments,
        "Two hosts on one link, as the published VM-to-VM benchmarks of one cloud zone measure "
        "them: ICMP echo and TCP probes idle and during the transfer, 1, 4, 8 and 16 TCP "
        "streams, UDP at a rate with loss and jitter; per instance profile (tbf cap with its "
        "burst, CPUs per endpoint, socket buffers, congestion control). Shipped profiles: "
        + ", ".join(f"{p.name} ({p.title()})" for p in SHIPPED.values())
        + "; a scenario file defines more. With --hosts, two real hosts with no cap of ours, "
          "against the inventory's tunbed_nominal."),)

    def check(self, args):
        try:
            sc = overrides(load(args.scenario) if args.scenario else Scenario(), args)
            inv, nominal = None, 0
            if args.hosts:
                inv = inventory.parse(args.hosts, ("client", "server"))
                nominal = inventory_nominal(args.hosts, inv)
            with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
                available = f.read().split()
            profiles = resolve(sc, hosts=inv, nominal=nominal,
                               cpus=None if inv else machine_cpus(),
                               available_cc=None if inv else available)
        except IntranetError as e:
            # The command's own mistakes: one line, exit status 2, before anything started.
            raise ScenarioError(str(e)) from None
        plans = {p.name: ({"client": "", "server": "", "shared": False} if inv
                          else plan_cpus(p, machine_cpus())) for p in profiles}
        return Plan(sc, inv, profiles, plans, args.prefix, args.hosts)

    def items(self, plan):
        out = []
        for rep in range(1, plan.sc.repeats + 1):
            for p in plan.profiles:
                for kind, streams, rate in runs_of(plan.sc, p):
                    what = {"idle": "idle latency",
                            "tcp": f"{streams} stream{'s' if streams > 1 else ''}",
                            "udp": f"UDP {rate_text(rate)}"}[kind]
                    key = point_of(p, kind, streams, rate)["key"]
                    out.append(Item(f"{key}-r{rep}", f"{p.title()}: {what}, repeat {rep}",
                                    (p, kind, streams, rate), rep, (rep, p.name)))
        return out

    def meta(self, plan):
        sc, profiles, inv = plan.sc, plan.profiles, plan.inv
        return {"scenario": sc.name,
                "title": "cloud same-zone benchmark" + (f" between {profiles[0].title()}"
                                                        if inv else " (namespaces)"),
                "mode": "hosts" if inv else "namespaces",
                "hosts": plan.hosts and os.path.abspath(plan.hosts),
                "time": sc.time, "warmup": sc.warmup, "repeats": sc.repeats,
                "streams": sc.streams, "udp_rates": [r.text for r in sc.udp_rates],
                "ping_count": sc.ping_count, "ping_interval": sc.ping_interval,
                "prefix": plan.prefix,
                "profiles": [p.as_dict() | {"cpus": plan.plans[p.name]} for p in profiles],
                "cpus": cpu_list(machine_cpus())}

    def bed(self, plan):
        return intranet_bed.pair_bed(plan.inv, plan.prefix, plan.plans)

    def measure(self, plan, pair, item):
        p, kind, streams, rate = item.point
        rec = intranet_bed.measure(plan.sc, p, plan.plans[p.name], pair, kind, streams, rate,
                                   item.repeat)
        rec["point"] = point_of(p, kind, streams, rate)
        return rec

    def record_schema(self, fmt):
        return RUN_SCHEMA if fmt >= 4 else RUN_SCHEMA_3

    def meta_schema(self, fmt):
        return META_SCHEMA

    def upgrade_record(self, doc, fmt):
        return dict(doc, kind=self.name) if fmt == 3 else doc

    def report(self, meta, recs, complete):
        return intranet_report.document(intranet_analysis.analyse_all(recs, meta, complete))


KIND = Intranet()
