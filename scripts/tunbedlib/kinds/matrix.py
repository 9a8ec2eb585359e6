"""The gateway scenarios, `tunbed ras`, `compare` and `run` (docs/runner.md): a matrix of points
(gateway x gregw mode x workers x transit MTU x pattern x sessions, scenario.py), each measured
`repeats` times from scratch on the RAS topology in namespaces or on the hosts of an inventory
(bed.py): TCP sessions through the gateway with latency probes and CPU samples
(matrix_point.py), and the report of matrix_report.py. `tunbed run` of a file with an [ndr]
section is an NDR search (ndr.py).

Records: runs/POINT-rREPEAT.json and meta.json, format 3. Format 1 had no `format`; format 2
added it; format 3 keeps each sampled machine's CPU, processes and named threads in `hosts`
(before, a run had one machine, and they were the record's `cpu`, `processes` and
`thread_labels`). Optional in format 3, read by the verdict (docs/scaling.md) where present:
the topology's rate cap (`rate_cap_bps`), each machine's CPU budgets (`hosts[].budgets`) and
whether its kernel accounts IRQ time apart (`hosts[].facts.irq_time_accounting`)."""

import dataclasses
import os
from argparse import Namespace

from .. import bed as beds
from .. import drivers, inifile, inventory, limits, machine, scenario
from ..common import Failure, ScenarioError, log
from ..drivers import DRIVERS, gregw
from ..records import FACTS, HOST, KEY, MACHINE, ONE_MACHINE, RR
from ..schema import BOOL, NUM, STR, List, Map, Num, Obj, Opt, Str
from . import matrix_budget, matrix_point, matrix_report, ndr, ndr_plan
from .base import Command, Item, Kind, bed_options, gateway_sets

ROLES = ["client", "server", "gwa", "gwb"]  # of the one machine of formats 1 and 2

POINT = Obj({"key": KEY, "config": STR, "gateway": STR, "sessions": Num(1, whole=True),
             "mode": STR, "workers": Num(0, whole=True), "mtu": Num(0, whole=True),
             "pattern": STR}, need=("key", "config", "gateway", "sessions"))
TRAFFIC = Obj({
    "tcp": Opt(Obj({"bits_per_second": Opt(NUM), "bytes": Opt(NUM), "retransmits": Opt(NUM),
                    "jain": Opt(NUM),
                    "verify": Opt(Obj({"on": Opt(BOOL), "mismatches": Opt(NUM)}))})),
    "measure_start_mono_s": Opt(NUM), "measure_end_mono_s": Opt(NUM), "measured_s": Opt(NUM),
    "complete": Opt(BOOL), "rr": Opt(RR), "config": Opt(Obj({"congestion": Opt(STR)}))})
WAY = {"segments_per_syscall": Opt(NUM), "syscalls_per_gb": Opt(NUM)}
COST = Obj({"tun_to_wire": Obj(WAY, need=WAY),
            "wire_to_tun": Obj(WAY | {"superpacket_segments": Map(NUM)},
                               need=("superpacket_segments", *WAY)),
            "wakeups_per_gb": Opt(NUM)}, need=("tun_to_wire", "wire_to_tun", "wakeups_per_gb"))
DIRECTION = Obj({
    "name": STR, "inner_bytes": NUM, "overhead_pct": Opt(NUM),
    "tcp": Obj({k: NUM for k in ("payload_bytes", "late_bytes", "late_resent_bytes",
                                 "retransmitted_bytes")} | {"late_unresolved_bytes": Opt(NUM)},
               need=("payload_bytes", "late_bytes", "late_resent_bytes", "retransmitted_bytes")),
    "seq": Obj({k: NUM for k in ("frames", "missing", "reordered")},
               need=("frames", "missing", "reordered"))},
    need=("name", "inner_bytes", "tcp", "seq"))
WIRE = Obj({"directions": List(DIRECTION, least=1), "tunnel_frames": NUM,
            "violation_frames": NUM, "violations": Map(Obj({"count": NUM}, need=("count",))),
            "source": Obj({"capture_dropped": Opt(NUM)})},
           need=("directions", "tunnel_frames", "violation_frames", "violations", "source"))
# A thread's CPU budget (budget.Budgets.export()): a share of one core; its TID the key.
BUDGET = Obj({"share_pct": Num(1, 100), "period_us": Opt(Num(1, whole=True)),
              "quota_us": Opt(Num(1, whole=True)), "cpu": Opt(Num(0, whole=True))},
             need=("share_pct",))
HOST_BUDGETS = Obj(HOST.fields | {"budgets": Opt(Map(BUDGET, key=r"[0-9]{1,7}",
                                                     keywhat="a thread id",
                                                     most=limits.RECORD_BUDGETS)),
                                  "process_budgets": Opt(Map(BUDGET, key=r"[0-9]{1,7}",
                                                             keywhat="a process id",
                                                             most=limits.RECORD_BUDGETS)),
                                  "facts": Opt(Obj(FACTS.fields |
                                                   {"irq_time_accounting": Opt(BOOL)}))},
                   need=HOST.need)
RUN = {"kind": Opt(Str("matrix", "matrix")), "point": POINT, "repeat": Num(1, whole=True),
       "started": NUM, "finished": Opt(NUM), "traffic": Opt(TRAFFIC), "rr_idle": Opt(RR),
       "gateway_info": Opt(Obj({"version": Opt(STR), "cipher": Opt(STR), "dev": Opt(STR),
                                "mtu": Opt(Num(whole=True))})),
       "gateway": Opt(Map(Opt(Obj({"total": Obj({"cost": COST})})))),
       "wire": Opt(WIRE), "wire_error": Opt(STR), "rate_cap_bps": Opt(Num(1))}
# Today's record keeps each machine's CPU under hosts; formats 1 and 2, the one machine's in
# the record itself.
RUN_SCHEMA = Obj(RUN | {"hosts": List(HOST_BUDGETS, most=limits.RECORD_HOSTS)},
                 need=("point", "repeat"))
RUN_SCHEMA_2 = Obj(RUN | MACHINE, need=("point", "repeat"))
META_SCHEMA = Obj({"kind": Opt(Str("matrix", "matrix")), "notes": List(STR),
                   "congestion": Opt(STR), "gateway_cpu": Opt(Num(1, 100)),
                   "client_cpu": Opt(Num(1, 100)), "copy_s_per_gb": Opt(Num(1e-4, 100)),
                   "failed": List(Obj({"point": POINT, "repeat": Num(1, whole=True),
                                       "started": NUM, "error": STR},
                                      need=("point", "repeat", "error")))})


@dataclasses.dataclass
class Plan:
    sc: scenario.Scenario
    title: str
    pins: dict
    inv: object
    prefix: str
    hosts: str
    budget_ctl: object = None  # budget.Controller of --gateway-cpu, --client-cpu; None: off
    notes: list = dataclasses.field(default_factory=list)
    points: list = dataclasses.field(default_factory=list)

    @property
    def name(self):
        return self.sc.name


def ras_scenario(args):
    sc = scenario.Scenario(name="ras", topology=args.topology, gateways=["gregw"])
    if args.full:
        sc.sessions, sc.workers, sc.time, sc.repeats = [1, 2, 4, 8, 16, 32, 64], [1, 2], 10, 3
    else:
        # About four minutes on two cores: the ends and the middle of the session range.
        sc.sessions, sc.workers, sc.time, sc.repeats = [1, 8, 64], [1, 2], 8, 3
    # Emulated cores, so that the points are the gateway's (off on hosts or without a cpu
    # controller: matrix_budget.check).
    sc.gateway_cpu = matrix_budget.RAS_SHARE
    return sc


def compare_scenario(args):
    gws = [g.strip() for g in args.gateways.split(",") if g.strip()]
    for g in gws:
        if not drivers.lookup(g):
            known = ", ".join(n for n in DRIVERS if not n.startswith("cmd:"))
            raise ScenarioError(f"unknown gateway '{g}': expected some of {known}, or cmd:PATH")
    return scenario.Scenario(name="compare", topology=args.topology, gateways=gws,
                             sessions=[1, 8, 64], workers=[2], time=10, repeats=3)


def overrides(sc, args):
    """The command line over the scenario."""
    inifile.override(scenario.SETTERS, sc, args, ("sessions", "workers", "repeats", "time",
                                                  "warmup", "modes", "congestion"),
                     ScenarioError)
    if getattr(args, "no_rr", False):
        sc.rr = False
    if getattr(args, "wire_audit", False):
        sc.wire_audit = True
    if getattr(args, "verify", False):
        sc.verify = True
    return sc


def checked_topology(sc, where):
    """sc's topology file, a regular file of bounded size, before anything is built;
    ScenarioError naming where it was given."""
    try:
        scenario.topology_file(sc.topology)
    except ScenarioError as e:
        raise ScenarioError(f"{where}: {e}") from None
    return sc


def available_congestion():
    with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
        return f.read().split()


def matrix_options(p, defaults):
    """The matrix's options; defaults: {key: the words of its default}."""
    p.add_argument("--sessions", metavar="LIST", help=f"sessions per point, e.g. 1,8,64 "
                                                     f"(default {defaults['sessions']})")
    p.add_argument("--workers", metavar="LIST", help="gregw worker threads, e.g. 1,2 "
                                                    f"(default {defaults['workers']})")
    p.add_argument("--modes", metavar="LIST",
                   help=f"{gregw.modes_help()} (default {defaults['modes']})")
    p.add_argument("--repeats", type=int, metavar="N",
                   help=f"repeats of every point (default {defaults['repeats']})")
    p.add_argument("--time", type=float, metavar="S",
                   help=f"measured seconds per run (default {defaults['time']})")
    p.add_argument("--warmup", type=float, metavar="S",
                   help=f"warm-up seconds per run (default {defaults['warmup']})")
    p.add_argument("--no-rr", action="store_true", help="no latency probes")
    p.add_argument("--congestion", metavar="ALG",
                   help="TCP congestion control of the sessions, e.g. cubic or bbr "
                        "(default: the system's; the report names the one used)")
    p.add_argument("--wire-audit", action="store_true",
                   help="run tunbed-wire on the transit link during each run and report what "
                        "crossed it (it costs CPU, which the report attributes to it)")
    p.add_argument("--verify", action="store_true",
                   help="check every byte of every session against its pattern (tunbed-traffic "
                        "--verify); the report says how many were wrong")
    p.add_argument("--gateway-cpu", metavar="SHARE|off",
                   help="emulated cores: each gateway thread (gregw's workers) gets SHARE "
                        "percent of one core, 1 to 100, and a pin, through the cpu controller "
                        "(docs/scaling.md); kernel gateways cannot be budgeted (default "
                        f"{defaults['gateway_cpu']})")
    p.add_argument("--client-cpu", metavar="SHARE|off",
                   help="a budget for the generator: each traffic client process, all its "
                        "threads together, gets SHARE percent of one core, 1 to 100, through "
                        "the cpu controller; namespaces only (default off)")
    bed_options(p, "pin a host's processes (client, gwa, gwb, server) to CPUs, over the "
                   "topology's cpus =; use + between CPUs: gwa=0+1")
    p.add_argument("--hosts", metavar="INVENTORY",
                   help="run on the hosts of an Ansible inventory over SSH instead of in "
                        "namespaces; they need this build first (docs/hosts.md)")


def defaults_of(sc, full=None, prefix=""):
    """The words of sc's values for --help, with full's where they differ (--full's)."""
    def words(s, key):
        v = getattr(s, key)
        return ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v) \
            if isinstance(v, list) else (f"{v:g}" if isinstance(v, float) else str(v))
    return {k: prefix + words(sc, k) + (f"; --full: {words(full, k)}" if full and
                                        words(full, k) != words(sc, k) else "")
            for k in ("sessions", "workers", "modes", "repeats", "time", "warmup")} | \
        {"gateway_cpu": prefix + ("off" if sc.gateway_cpu is None else
                                  f"{sc.gateway_cpu:g} in namespaces with a cpu controller, "
                                  "else off")}


def ras_arguments(p):
    p.add_argument("--full", action="store_true", help="the whole session matrix")
    args = {"topology": "ras"}
    matrix_options(p, defaults_of(ras_scenario(Namespace(**args, full=False)),
                                  ras_scenario(Namespace(**args, full=True))))


def run_arguments(p):
    p.add_argument("file", help="a scenario file (docs/runner.md)")
    matrix_options(p, defaults_of(scenario.Scenario(), prefix=": the file's, else "))


def compare_arguments(p):
    p.add_argument("--gateways", required=True, metavar="LIST",
                   help=f"some of {', '.join(drivers.GATEWAYS)}, between commas (one this "
                        "machine cannot run is skipped with a note); cmd:PATH for a gateway of "
                        "your own (CONTRIBUTING.md)")
    matrix_options(p, defaults_of(compare_scenario(Namespace(gateways="gregw",
                                                             topology="ras"))))


class Matrix(Kind):
    name = "matrix"
    FORMAT = 3
    commands = (
        Command("ras", "the RAS-style scenario: gregw on ras.topo", ras_arguments,
                "gregw on ras.topo, 1 to 64 sessions, 1 and 2 workers, 3 repeats, each gregw "
                f"worker an emulated core of {matrix_budget.RAS_SHARE:g}% of a CPU "
                "(--gateway-cpu; off on --hosts or "
                "without a cpu controller). Default: 1, 8 and 64 sessions, 8 s each (about 4 "
                "minutes on 2 cores); --full: 1, 2, 4, ... 64 sessions, 10 s each."),
        Command("run", "run a scenario file (docs/runner.md)", run_arguments),
        Command("compare", "the same points for several gateways, side by side",
                compare_arguments),
    )

    def check(self, args):
        if args.command == "run":
            sc = scenario.load(args.file)
            where = (f"{args.file}:{sc.lines['topology']}: topology" if "topology" in sc.lines
                     else "topology")
            checked_topology(sc, where)
            title = f"scenario {args.file}"
            if sc.ndr is not None:
                nd = ndr_plan.from_section(sc, args.file)
                if matrix_budget.asked(sc, getattr(args, "gateway_cpu", None)) is not None:
                    raise ScenarioError("--gateway-cpu: an NDR search has no emulated cores; "
                                        "ras, compare and run of a matrix do")
                if getattr(args, "client_cpu", None) is not None:
                    raise ScenarioError("--client-cpu: an NDR search has no generator budget; "
                                        "ras, compare and run of a matrix do")
                return ndr.KIND.plan_of(sc, nd, args, title)
        elif args.command == "compare":
            sc = checked_topology(compare_scenario(args), "--topology")
            title = f"comparison of {', '.join(sc.gateways)}"
        else:
            sc = checked_topology(ras_scenario(args), "--topology")
            title = "RAS-style gateway test (gregw)"
        sc = overrides(sc, args)
        # tunbed ras's own share gives way on hosts and without a cpu controller, with a note.
        notes = [] if args.command == "ras" else None
        _, ctl = matrix_budget.check(sc, getattr(args, "gateway_cpu", None), args.hosts,
                                     args.prefix, notes)
        ctl = matrix_budget.check_client(sc, getattr(args, "client_cpu", None), args.hosts,
                                         args.prefix) or ctl
        pins = beds.parse_pins(args.pin)
        if sc.congestion and sc.congestion not in available_congestion():
            raise ScenarioError(f"congestion control '{sc.congestion}' is not available here "
                                f"(available: {', '.join(available_congestion())})")
        scenario.points(sc)  # the matrix's size and keys, before anything is installed
        inv = None
        if args.hosts:
            # The inventory is checked before anything is installed, built or connected to.
            need = inventory.ROLES if any(DRIVERS[g].needs_gateways for g in sc.gateways) \
                else ("client", "server")
            inv = inventory.parse(args.hosts, need)
            if any(p for p in sc.mtu if p):
                raise ScenarioError("a transit MTU (mtu =) is the topology's: the hosts mode "
                                    "uses the hosts' own")
        plan = Plan(sc, title, pins, inv, args.prefix, args.hosts, ctl, notes=notes or [])
        if notes and not args.hosts:  # on hosts, off is what a user expects: the report says it
            log(notes[0])
        return plan

    def needs(self, plan):
        return gateway_sets(plan.sc)

    def prepare(self, plan):
        gateways = []
        for g in plan.sc.gateways:
            ok, why = DRIVERS[g].available(hosts_mode=bool(plan.inv))
            if ok:
                gateways.append(g)
            else:
                plan.notes.append(f"{g} skipped: {why}")
                log(f"{g} skipped: {why}")
        plan.sc.gateways = gateways
        plan.points = scenario.points(plan.sc)
        if not plan.points:
            raise Failure("nothing to run: every gateway was skipped")

    def items(self, plan):
        return [Item(f"{p.key()}-r{rep}", f"{p.config()}, {p.sessions} "
                     f"session{'s' if p.sessions > 1 else ''}, repeat {rep}", p, rep)
                for rep in range(1, plan.sc.repeats + 1) for p in plan.points]

    def meta(self, plan):
        sc = plan.sc
        return {"scenario": sc.name, "title": plan.title, "topology": sc.topology,
                "time": sc.time, "warmup": sc.warmup, "repeats": sc.repeats,
                "gateways": sc.gateways, "notes": plan.notes, "pins": plan.pins,
                "prefix": plan.prefix, "wire_audit": sc.wire_audit,
                "congestion": sc.congestion or None, "verify": sc.verify,
                "hosts": plan.hosts and os.path.abspath(plan.hosts),
                "gateway_cpu": sc.gateway_cpu, "client_cpu": sc.client_cpu,
                # the gateways' machine is this one only in namespaces
                "copy_s_per_gb": None if plan.hosts else machine.copy_cost()}

    def bed(self, plan):
        if plan.inv:
            return beds.HostsBed(plan.inv, plan.prefix, plan.pins)
        return matrix_budget.namespace_bed(plan.sc, plan.prefix, plan.pins, plan.budget_ctl)

    def measure(self, plan, bed, item):
        return matrix_point.measure(plan.sc, item.point, item.repeat, bed)

    def failed(self, item, started, error):
        p = item.point
        return {"point": p.__dict__ | {"key": p.key(), "config": p.config()},
                "repeat": item.repeat, "started": started, "error": error}

    def record_schema(self, fmt):
        return RUN_SCHEMA if fmt >= 3 else RUN_SCHEMA_2

    def meta_schema(self, fmt):
        return META_SCHEMA

    def upgrade_record(self, doc, fmt):
        if fmt == 2:
            doc = dict(doc)
            doc["hosts"] = [{"name": ONE_MACHINE, "roles": ROLES, "cpu": doc.pop("cpu", None),
                             "processes": doc.pop("processes", {}),
                             "thread_labels": doc.pop("thread_labels", {}),
                             "clock": {"offset_s": 0.0, "error_s": 0.0}, "facts": None}]
        return doc

    def report(self, meta, recs, complete):
        return matrix_report.document(matrix_report.analyse(recs, meta, complete))


KIND = Matrix()
