"""`tunbed datasheet --gateways G1,G2,...`: for each gateway, the measurements of the other kinds
that apply to it, within a time budget, and one page per gateway and one side by side
(docs/datasheet.md). The parts are the other kinds' own: throughput at 1, 8 and 64 sessions
with its verdict and per-core CPU (matrix_point.measure, with emulated cores as in tunbed ras),
DSCP and ECN across the tunnel (datasheet_tos.measure), NDR and PDR per frame size (the ndr kind's search, the generator's ceiling first), the failover
of the gateway pair (failover.measure) where the gateway can be paired; datasheet_plan.py
plans, datasheet_report.py reports. On the hosts of an inventory (--hosts), the throughput and
NDR parts, on one bed.

Records: runs/KEY.json, one per item, each with its `part` (throughput, tos, ndr, failover),
its `gateway` and the part's own record (`record`, with the kind and format of the kind that
wrote it, read back through that kind's schema and upgrades; the DSCP/ECN part's is the
datasheet's own), and meta.json; format 1."""

import contextlib
import dataclasses
import os
import subprocess

from .. import bed as beds
from .. import drivers, frr, records, scenario
from ..common import BIN, Failure, GatewayFailure, ScenarioError, log
from ..drivers import DRIVERS
from ..records import KEY
from ..schema import NUM, STR, Bad, List, Map, Num, Obj, Opt, Str, field, shown
from . import datasheet_plan as dplan
from . import datasheet_interop, datasheet_report, datasheet_tos, failover, failover_analysis, matrix, matrix_budget
from . import matrix_point
from . import ndr, ndr_plan
from .base import Command, Item, Kind, output_options
from .datasheet_plan import DIRECT, SESSIONS

# The kind that wrote each part's record.
PART_KINDS = {"throughput": matrix.KIND, "ndr": ndr.KIND, "failover": failover.KIND}
GREGW_MODE, GREGW_WORKERS = "gre", 2  # compare's gregw

RUN_SCHEMA = Obj({"kind": Str("datasheet", "datasheet"),
                  "part": Str("|".join(dplan.PARTS[:-1]), ", ".join(dplan.PARTS[:-1])),
                  "gateway": STR, "point": Obj({"key": KEY}, need=("key",)),
                  "repeat": Num(1, whole=True), "record": Obj({})},
                 need=("kind", "part", "gateway", "point", "repeat", "record"))
GUEST_RESULT = Obj({"result": Str("pass|fail", "pass or fail"), "finished_utc": STR},
                   need=("result", "finished_utc"))
STATUS = Obj({"status": Str("run|not applicable|not run", "run, not applicable or not run"),
              "reason": Opt(STR), "sizes": Opt(Map(Opt(STR), key=r"[0-9]{1,5}|imix",
                                                   keywhat="a frame size or imix")),
              # interop: each guest test's result recorded for the build, and its id.
              "tests": Opt(Map(Opt(GUEST_RESULT), key="|".join(datasheet_interop.GUEST_TESTS),
                               keywhat="a guest test")),
              "build_id": Opt(STR)},
             need=("status",))


class Meta(Obj):
    """meta.json: its fields, and a part of every kind for each of its gateways (the report
    reads them all)."""

    def check(self, v, where):
        super().check(v, where)
        for g in v["gateways"]:
            if g not in v["parts"]:
                raise Bad(field(where, "parts"), f"the parts of gateway {shown(g)}")


META_SCHEMA = Meta({"kind": Str("datasheet", "datasheet"),
                   "gateways": List(STR, least=1),
                   "parts": Map(Obj({p: STATUS for p in dplan.PARTS}, need=dplan.NEEDED_PARTS)),
                   "notes": List(STR),
                   "plan": Obj({"name": STR, "words": STR, "budget_s": NUM,
                                "estimate_s": Map(NUM)}, need=("name", "words", "budget_s")),
                   "failover": Obj({"faults": List(Str("|".join(failover.FAULTS),
                                                       ", ".join(failover.FAULTS)))},
                                   need=("faults",)),
                   "failed": List(Obj({"key": KEY, "part": STR, "gateway": STR, "error": STR},
                                      need=("key", "part", "gateway", "error"))),
                   # Where it ran (a datasheet written before --hosts has neither: namespaces).
                   "mode": Opt(Str("hosts|namespaces", "hosts or namespaces")),
                   "hosts": Opt(STR)},
                  need=("kind", "gateways", "parts", "plan", "failover"))


@dataclasses.dataclass
class Plan:
    """A datasheet: the gateways, what applies to each (parts), the chosen tier and its
    estimate, and each part's own plan: the throughput's scenario and budget controller, the
    NDR run's plan (ndr.Plan) and the failover's settings."""
    gateways: list
    parts: dict
    tier: object
    budget_s: int
    estimate: dict
    prefix: str
    sc: scenario.Scenario
    budget_ctl: object
    ndr: object
    failover: object
    notes: list = dataclasses.field(default_factory=list)
    no_ceiling: dict = dataclasses.field(default_factory=dict)
    name: str = "datasheet"
    inv: object = None     # the hosts of --hosts (inventory.Hosts), None: namespaces
    hosts: str = ""        # the inventory's path


def arguments(p):
    p.add_argument("--gateways", required=True, metavar="LIST",
                   help=f"some of {', '.join(drivers.GATEWAYS)}, between commas, or cmd:PATH; "
                        "a part a gateway cannot run is 'not applicable', with the reason")
    p.add_argument("--budget", default="20m", metavar="TIME",
                   help="the time the run may take, e.g. 20m or 1h30m: the richest plan that "
                        "fits is chosen and said; one too small for one point of each part is "
                        "refused (default 20m)")
    p.add_argument("--gateway-cpu", metavar="SHARE|off",
                   help="emulated cores for the throughput part, as for ras (default "
                        f"{matrix_budget.RAS_SHARE:g} in namespaces with a cpu controller, "
                        "else off)")
    p.add_argument("--client-cpu", metavar="SHARE|off",
                   help="a budget for the generator of the throughput part, as for ras: each "
                        "traffic client process, all its threads together, gets SHARE percent "
                        "of one core, 1 to 100 (default off)")
    p.add_argument("--hosts", metavar="INVENTORY",
                   help="on the hosts of an Ansible inventory over SSH: throughput and NDR/PDR "
                        "there, the generator's ceiling between the client and server hosts; "
                        "DSCP/ECN and the failover are not applicable on hosts "
                        "(docs/datasheet.md, On hosts)")
    output_options(p)


def frame_reasons(sc, nd, gateways, hosts_family=None):
    """(family, {gateway: {size: why the search cannot be, or None}}, {(gateway, mode):
    {size: frame}}) by ndr_plan.frames, one gateway and size at a time; hosts_family: on the
    hosts of an inventory, its family (the frames planned at the hosts' MTU)."""
    family, reasons, frames = hosts_family or 4, {}, {}
    for g in gateways:
        for size in dplan.SIZES:
            try:
                family, fr = ndr_plan.frames(dataclasses.replace(sc, gateways=[g]),
                                             dataclasses.replace(nd, sizes=[size]),
                                             hosts_family=hosts_family)
            except ScenarioError as e:
                reasons.setdefault(g, {})[size] = str(e)
                continue
            reasons.setdefault(g, {})[size] = None
            for k, v in fr.items():
                frames.setdefault(k, {}).update(v)
    return family, reasons, frames


def failover_settings(tier, topology):
    s = failover.Settings()
    s.faults, s.repeats = tier.faults, tier.failover_repeats
    s.fail_at, s.failback_after, s.tail = tier.timeline
    s.topology = failover.topology_path(topology)
    return s


@dataclasses.dataclass(frozen=True)
class Work:
    """What a datasheet item measures (its Item.point): the part, the gateway, and the part's
    own point: the matrix's scenario.Point (throughput), (ndr_plan's point, frame size) as the
    ndr kind takes it (ndr), the fault (failover)."""
    part: str
    gateway: str
    point: object = None


class Beds(beds.ItemBed):
    """Each part's own bed: the throughput's namespace bed (with the run's CPU budgets, opened
    around the whole run), the NDR run's two (ndr.Beds), and for the failover none here: its
    pair is built inside the measurement, so that a pair that does not come up fails that
    part alone."""

    def __init__(self, plan):
        self.tput = matrix_budget.namespace_bed(plan.sc, plan.prefix, {}, plan.budget_ctl)
        self.ndr = ndr.Beds(plan.ndr)
        self.undone = self.tput.undone

    def open(self):
        self.tput.open()

    def close(self):
        self.tput.close()

    @contextlib.contextmanager
    def point(self, item):
        bed = {"throughput": self.tput, "tos": self.tput, "ndr": self.ndr}.get(item.point.part)
        if bed is None:
            yield None
            return
        with bed.point(dataclasses.replace(item, point=item.point.point)) as here:
            yield here


class HostsBeds(beds.HostsBed):
    """On the hosts of an inventory (--hosts, docs/hosts.md): one bed for the throughput and
    NDR parts, connected once for the whole run; the DSCP/ECN and failover parts do not run
    there (datasheet_plan.TOS_ON_HOSTS, FAILOVER_ON_HOSTS)."""

    def __init__(self, plan):
        super().__init__(plan.inv, plan.prefix, {})

    def point(self, item):
        w = item.point
        return super().point(dataclasses.replace(
            item, point=w.point[0] if w.part == "ndr" else w.point))


class Datasheet(Kind):
    name = "datasheet"
    FORMAT = 1
    UNNUMBERED = None
    RECORD_NEEDS = ("part", "record")
    UNIT = "part"
    commands = (Command(
        "datasheet", "one page per gateway: throughput, DSCP/ECN, NDR/PDR, failover "
                     "(docs/datasheet.md)",
        arguments,
        "For each gateway, the parts of the other kinds that apply to it: throughput at 1, 8 "
        "and 64 sessions with its bottleneck verdict and per-core CPU, DSCP and ECN across the "
        "tunnel (where tunbed-wire reads its transit, or its tunnel crosses on one UDP port) "
        "and the CE marks and retransmissions of 64 ECN sessions under load, NDR and PDR at 64- and 1518-byte "
        "frames and the simple IMIX, the failover of a gateway pair; within --budget. One page "
        "per gateway and one side by side. With --hosts, throughput and NDR/PDR on the hosts "
        "of an inventory. docs/datasheet.md."),)

    def check(self, args):
        gateways = dplan.gateways_of(args.gateways, drivers.lookup)
        budget_s = dplan.parse_budget(args.budget)
        sc = scenario.Scenario(name="datasheet", gateways=gateways, modes=[GREGW_MODE],
                               workers=[GREGW_WORKERS], sessions=list(SESSIONS), repeats=1,
                               gateway_cpu=matrix_budget.RAS_SHARE)
        nd_sc = dataclasses.replace(sc, sessions=[8])
        nd = ndr_plan.Ndr(sizes=list(dplan.SIZES))
        hosts = getattr(args, "hosts", None)
        # The inventory is checked before anything is installed, built or connected to. A
        # datasheet has no --mtu nor --direct-topology, which ndr --hosts refuses: nothing to
        # refuse of them here.
        inv = ndr.hosts_of(hosts, nd_sc, nd) if hosts else None
        family, reasons, frames = frame_reasons(nd_sc, nd, gateways,
                                                inv.family() if inv else None)
        parts = dplan.applicability(gateways, reasons, hosts=bool(inv))
        tier, est = dplan.choose(budget_s, parts)
        dplan.leave_out(parts, tier.sizes, tier.name)
        notes = []
        # As tunbed ras: on hosts the emulated cores are off with a note, --gateway-cpu given
        # and --client-cpu are refused.
        _, ctl = matrix_budget.check(sc, args.gateway_cpu, hosts, args.prefix, notes)
        ctl = matrix_budget.check_client(sc, getattr(args, "client_cpu", None), hosts,
                                         args.prefix) or ctl
        sc.time, sc.warmup, sc.repeats = tier.time, tier.warmup, tier.repeats
        nd.sizes, nd.width, nd.initial_time = list(tier.sizes), tier.width, tier.ndr_initial
        nd_sc.time = tier.ndr_time
        nd_plan = ndr.Plan(nd_sc, nd, "datasheet", {}, args.prefix, ndr.KIND, family, frames,
                           inv=inv, hosts=hosts or "")
        words = (f"--budget {dplan.clock(budget_s)}: {tier.words()}; estimated "
                 f"{dplan.clock(sum(est.values()))} (" +
                 ", ".join(f"{k} {dplan.clock(v)}" for k, v in est.items() if v) + ")")
        log(words)
        for n in notes if not inv else ():  # on hosts, off is what a user expects
            log(n)
        return Plan(gateways, parts, tier, budget_s, est, args.prefix, sc, ctl, nd_plan,
                    failover_settings(tier, "ras-pair"), notes=[words, *notes], inv=inv,
                    hosts=hosts or "")

    def needs(self, plan):
        sets = ["ras", *(g for g in plan.gateways if not g.startswith("cmd:"))]
        if any(plan.parts[g]["failover"]["status"] == "run" for g in plan.gateways):
            sets.append("failover")
        return sets

    def prepare(self, plan):
        left = []
        for g in plan.gateways:
            ok, why = DRIVERS[g].available(hosts_mode=bool(plan.inv))
            if ok:
                left.append(g)
            else:
                dplan.skipped(plan.parts, g, why)
                plan.notes.append(f"{g} skipped: {why}")
                log(f"{g} skipped: {why}")
        if not left:
            raise Failure("nothing to run: every gateway was skipped")
        try:
            build = beds.local_build_id()
        except (OSError, subprocess.CalledProcessError):
            build = None
        for g in left:
            plan.parts[g]["interop"] = (
                datasheet_interop.status(g, BIN, build) if build else
                dplan.not_run(f"the build id of {BIN} could not be read (scripts/build-id)"))
        ok, why = frr.available()
        for g in left:
            if not ok and plan.parts[g]["failover"]["status"] == "run":
                plan.parts[g]["failover"] = dplan.not_applicable(why)
        plan.sc.gateways = plan.ndr.sc.gateways = left

    def items(self, plan):
        parts, out = plan.parts, []
        sc = plan.sc
        for rep in range(1, sc.repeats + 1):
            for p in scenario.points(sc):
                if parts[p.gateway]["throughput"]["status"] == "run":
                    out.append(Item(f"throughput-{p.key()}-r{rep}",
                                    f"{p.config()}, {p.sessions} session"
                                    f"{'s' if p.sessions > 1 else ''}, repeat {rep}",
                                    Work("throughput", p.gateway, p), rep,
                                    weight=dplan.run_s(plan.tier)))
        out += [Item(f"tos-{ndr_plan.point_key(p)}", f"DSCP and ECN through {p.config()}",
                     Work("tos", p.gateway, p), weight=dplan.tos_s(plan.tier))
                for p in scenario.points(sc) if p.sessions == SESSIONS[0]
                and parts[p.gateway]["tos"]["status"] == "run"]
        searches = [(p, size) for p, size in ndr_plan.plan(plan.ndr.sc, plan.ndr.nd)
                    if p.gateway == DIRECT or dplan.ndr_size(parts[p.gateway], size) is None]
        wanted = {size for p, size in searches if p.gateway != DIRECT}
        out += [Item(f"ndr-{ndr_plan.point_key(p)}-f{size}",
                     f"NDR {p.config()}, {ndr_plan.size_words(size)}",
                     Work("ndr", p.gateway, (p, size)),
                     weight=dplan.search_s(plan.tier))
                for p, size in searches if p.gateway != DIRECT or size in wanted]
        for g in plan.gateways:
            if parts[g]["failover"]["status"] == "run":
                s = plan.failover
                out += [Item(f"failover-{scenario.file_name(g)}-{fault}-r{rep}",
                             f"failover of {g}: {fault} ({failover.FAULTS[fault]}), repeat "
                             f"{rep}", Work("failover", g, fault), rep,
                             weight=dplan.pair_s(plan.tier))
                        for rep in range(1, s.repeats + 1) for fault in s.faults]
        return out

    def meta(self, plan):
        return {"scenario": "datasheet", "title": f"datasheet of {', '.join(plan.gateways)}",
                "gateways": plan.gateways, "parts": plan.parts, "notes": plan.notes,
                "plan": {"name": plan.tier.name, "words": plan.notes[0],
                         "budget_s": plan.budget_s, "estimate_s": plan.estimate},
                "time": plan.sc.time, "warmup": plan.sc.warmup, "repeats": plan.sc.repeats,
                "topology": plan.sc.topology, "gateway_cpu": plan.sc.gateway_cpu,
                "client_cpu": plan.sc.client_cpu,
                "ndr": dataclasses.asdict(plan.ndr.nd), "ndr_time": plan.ndr.sc.time,
                "failover": failover.settings_of(plan.failover), "prefix": plan.prefix,
                "mode": "hosts" if plan.inv else "namespaces",
                "hosts": plan.hosts and os.path.abspath(plan.hosts)}

    def bed(self, plan):
        return HostsBeds(plan) if plan.inv else Beds(plan)

    def measure(self, plan, bed, item):
        w = item.point
        part, gateway = w.part, w.gateway
        if part == "throughput":
            rec = matrix_point.measure(plan.sc, w.point, item.repeat, bed)
        elif part == "tos":
            try:
                load_s = plan.tier.load_s
                rec = datasheet_tos.measure(
                    plan.sc, w.point, bed, load_s=load_s,
                    load_why=None if load_s else dplan.LOAD_LEFT_OUT.format(plan.tier.name))
            except GatewayFailure:
                raise
            except Failure as e:  # the audit or the probe: this part's, not the run's
                raise GatewayFailure(f"DSCP/ECN: {e}") from None
        elif part == "ndr":
            size = w.point[1]
            if gateway != DIRECT and size not in plan.ndr.ceiling:
                raise GatewayFailure(plan.no_ceiling.get(size) or "no generator ceiling at "
                                     f"{ndr_plan.size_words(size)}")
            rec = ndr.KIND.measure(plan.ndr, bed, dataclasses.replace(item, point=w.point))
        else:
            try:
                with failover.Bed(plan.failover, plan.prefix).point(item) as p:
                    rec = failover.measure(plan.failover, w.point, item.repeat, p)
            except GatewayFailure:
                raise
            except Failure as e:
                raise GatewayFailure(f"the pair: {e}") from None
        kind = PART_KINDS.get(part, self)
        return {"part": part, "gateway": gateway, "point": {"key": item.key},
                "repeat": item.repeat, "record": dict(rec, kind=kind.name, format=kind.FORMAT)}

    def measured(self, plan, item, rec):
        w = item.point
        if w.part == "ndr" and w.gateway == DIRECT:
            try:
                ndr.KIND.measured(plan.ndr, dataclasses.replace(item, point=w.point),
                                  rec["record"])
            except Failure as e:
                plan.no_ceiling[w.point[1]] = str(e)

    def figure(self, plan, item, rec):
        part, sub = rec["part"], rec["record"]
        if part == "ndr":
            return ndr.KIND.figure(plan.ndr, item, sub)
        if part == "tos":
            a = datasheet_tos.analyse(sub)
            return "; ".join(f"{k} {a[k]['verdict'] or 'not measured'}"
                             for k in datasheet_tos.ASPECTS)
        if part == "failover":
            out = failover_analysis.analyse(sub)["outage_s"]
            return f"outage {out:g} s" if out is not None else "no outage measured"
        return super().figure(plan, item, sub)

    def failed(self, item, started, error):
        return {"key": item.key, "repeat": item.repeat, "part": item.point.part,
                "gateway": item.point.gateway, "started": started, "error": error}

    def record_schema(self, fmt):
        return RUN_SCHEMA

    def meta_schema(self, fmt):
        return META_SCHEMA

    def check_records(self, recs, paths):
        records.one_key_each(recs, paths)
        for r, path in zip(recs, paths):
            if r["part"] == "tos":
                records.check(r["record"], datasheet_tos.RECORD_SCHEMA, f"{path}: record")
                continue
            r["record"] = records.read_record(PART_KINDS[r["part"]], r["record"],
                                              f"{path}: record")

    def report(self, meta, recs, complete):
        return datasheet_report.document(meta, recs, complete)


KIND = Datasheet()
