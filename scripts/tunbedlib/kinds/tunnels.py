"""`tunbed tunnels`: how a gateway scales with the number of its tunnels (issue 34,
docs/tunnels.md). For each tunnel count, on the tunnels bed (topo/topologies/tunnels.topo) in
namespaces: the gateway set up with that many tunnels (gregw with topo/tunnels.sh's files), the
time it took and its memory, then the same sessions spread over the tunnels (tunnels_point.py);
the report of tunnels_report.py: throughput, Jain's index across tunnels and across sessions,
CPU-s/GB, retransmits, and gregw's per-tunnel counters checked against the sessions' bytes.
gregw is the one gateway today: the others that can have many tunnels are named and refused.

Records: runs/POINT-rREPEAT.json and meta.json, format 1."""

import dataclasses

from .. import bed as beds
from .. import limits, records, scenario
from ..common import Failure, ScenarioError
from ..drivers import DRIVERS
from ..drivers.gregw import ENCAPS
from ..schema import BOOL, NUM, STR, List, Map, Num, Obj, Opt, Str
from . import matrix, tunnels_point, tunnels_report
from .base import Command, Item, Kind, output_options

# gregw's tunnel table holds 16,384 (gateway/gw_limits.h TUNNELS_MAX), as topo/tunnels.sh and
# the bed's pools do; tunbed-traffic's sessions stop at 10,000 (PROTO_MAX_SESSIONS).
COUNTS_MAX = 16384
SESSIONS_MAX = 10000
WORKERS_MAX = 64
REPEATS_MAX = 100
TIME_MAX_S = 3600
DEFAULT_COUNTS = (1, 10, 100, 1000, 10000)
# The gateways issue 34 measures beside gregw, each a tunnel a VNI, a port or a peer: not built.
TO_COME = ("vxlan", "ovs-gre", "wireguard-go")

COUNTER = Obj({k: NUM for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "drops")},
              need=("tx_packets", "tx_bytes", "rx_packets", "rx_bytes"))
TUNNEL = Obj({"name": STR, "site": STR, "sessions": Num(1, whole=True),
              "bits_per_second": NUM, "sent": NUM, "server_received": NUM, "gwa": COUNTER,
              "gwb": COUNTER}, need=("name", "sessions", "bits_per_second", "gwa", "gwb"))
MEMORY = Obj({"rss_kib": Opt(NUM), "rss_peak_kib": Opt(NUM)})
SETUP = Obj(MEMORY.fields | {"ready_s": NUM}, need=("ready_s",))
POINT = Obj({"key": records.KEY, "config": STR, "gateway": STR, "mode": STR,
             "workers": Num(1, whole=True), "sessions": Num(1, whole=True),
             "tunnels": Num(1, COUNTS_MAX, whole=True)},
            need=("key", "config", "gateway", "tunnels", "sessions"))
RUN_SCHEMA = Obj(matrix.RUN | {
    "kind": Str("tunnels", "tunnels"), "point": POINT,
    "hosts": List(matrix.HOST_BUDGETS, most=limits.RECORD_HOSTS), "setup": Map(SETUP),
    "loaded": Opt(Map(MEMORY)),
    "tunnels": Obj({"carried": List(TUNNEL),
                    "idle": Obj({"tunnels": NUM, "packets": NUM}, need=("tunnels", "packets")),
                    "unattributed": Opt(Map(NUM))},
                   need=("carried", "idle")),
    "traffic_status": Opt(NUM)}, need=("kind", "point", "repeat", "setup", "tunnels"))
META_SCHEMA = Obj({"kind": Str("tunnels", "tunnels"), "counts": List(Num(1, COUNTS_MAX)),
                   "sessions": Num(1), "gateway": STR, "verify": Opt(BOOL)},
                  need=("kind", "counts", "sessions", "gateway"))


@dataclasses.dataclass(frozen=True)
class Point:
    """One tunnel count of one gateway, measured `repeats` times. mtu and pattern are the
    bed's and the sessions' (matrix_point.Run reads them): the topology's own, push."""
    gateway: str
    mode: str
    workers: int
    tunnels: int
    sessions: int
    mtu: int = 0
    pattern: str = "push"

    def key(self):
        return f"{self.gateway}-{self.mode}-w{self.workers}-n{self.tunnels}-s{self.sessions}"

    def config(self):
        return f"{self.gateway} {self.mode} {self.workers}w"

    def record(self):
        return {"key": self.key(), "config": self.config(), "gateway": self.gateway,
                "mode": self.mode, "workers": self.workers, "tunnels": self.tunnels,
                "sessions": self.sessions}


@dataclasses.dataclass
class Plan:
    sc: scenario.Scenario
    points: list
    prefix: str
    name: str = "tunnels"


def arguments(p):
    p.add_argument("--tunnels-counts", metavar="LIST",
                   help="tunnel counts, 1 to 16384 each, e.g. 1,100 (default "
                        + ",".join(map(str, DEFAULT_COUNTS)) + ")")
    p.add_argument("--sessions", metavar="N", default="64",
                   help=f"TCP sessions of every count, 1 to {SESSIONS_MAX}, spread over the "
                        "tunnels round-robin (default 64; fewer than the tunnels leave the last "
                        "tunnels without)")
    p.add_argument("--gateway", default="gregw",
                   help="the gateway: gregw (default; the only one today: the kernel's VXLAN, "
                        "Open vSwitch and wireguard-go are not built yet)")
    p.add_argument("--encap", default="gre",
                   help="every tunnel's encapsulation: gre or gre-udp (default gre)")
    p.add_argument("--workers", metavar="N", default="2",
                   help=f"gregw worker threads, 1 to {WORKERS_MAX} (default 2)")
    p.add_argument("--time", metavar="S", default="10",
                   help=f"measured seconds per run, 0.1 to {TIME_MAX_S} (default 10)")
    p.add_argument("--warmup", metavar="S", default="2",
                   help=f"warm-up seconds per run, 0 to {TIME_MAX_S} (default 2)")
    p.add_argument("--repeats", metavar="N", default="3",
                   help=f"repeats of every count, 1 to {REPEATS_MAX} (default 3)")
    p.add_argument("--verify", action="store_true",
                   help="check every byte of every session (tunbed-traffic --verify)")
    output_options(p)


def whole(option, text, lo, hi):
    """A whole number of an option, lo to hi; ScenarioError in one line otherwise."""
    if not text.strip().isdigit() or not lo <= int(text) <= hi:
        raise ScenarioError(f"{option}: '{text}' is not {lo} to {hi}")
    return int(text)


def seconds(option, text, lo, hi):
    try:
        v = float(text)
    except ValueError:
        v = None
    if v is None or not lo <= v <= hi:
        raise ScenarioError(f"{option}: '{text}' is not {lo:g} to {hi:g} seconds")
    return v


def gateway_of(name):
    if name == "gregw":
        return name
    if name in TO_COME:
        raise ScenarioError(f"--gateway {name}: not built yet: tunbed tunnels measures gregw "
                            f"alone today ({', '.join(TO_COME)} are to come)")
    raise ScenarioError(f"--gateway '{name}': expected gregw (the only gateway of tunbed "
                        "tunnels today)")


class Tunnels(Kind):
    name = "tunnels"
    FORMAT = 1
    UNNUMBERED = None
    commands = (Command(
        "tunnels", "how a gateway scales with its tunnels: 1 to 10,000 (docs/tunnels.md)",
        arguments,
        "gregw on the tunnels bed with 1, 10, 100, 1,000 and 10,000 tunnels (topo/tunnels.sh's "
        "files), the same TCP sessions spread over the tunnels round-robin each time: total "
        "throughput, Jain's index across tunnels and across sessions, CPU-s/GB (box and "
        "gateway), retransmits, the time gregw took to set its tunnels up and its memory, and "
        "its per-tunnel counters checked against the sessions' bytes."),)

    def check(self, args):
        counts = [c.strip() for c in (args.tunnels_counts or ",".join(
            map(str, DEFAULT_COUNTS))).split(",")]
        counts = [whole("--tunnels-counts", c, 1, COUNTS_MAX) for c in counts]
        if len(set(counts)) != len(counts):
            raise ScenarioError(f"--tunnels-counts: '{args.tunnels_counts}' names a count twice")
        gateway = gateway_of(args.gateway)
        if args.encap not in ENCAPS:
            raise ScenarioError(f"--encap '{args.encap}': expected {' or '.join(ENCAPS)}")
        sessions = whole("--sessions", args.sessions, 1, SESSIONS_MAX)
        workers = whole("--workers", args.workers, 1, WORKERS_MAX)
        sc = scenario.Scenario(name="tunnels", topology="tunnels", gateways=[gateway],
                               modes=[args.encap], workers=[workers], sessions=[sessions],
                               time=seconds("--time", args.time, 0.1, TIME_MAX_S),
                               warmup=seconds("--warmup", args.warmup, 0, TIME_MAX_S),
                               repeats=whole("--repeats", args.repeats, 1, REPEATS_MAX),
                               rr=False, verify=args.verify)
        return Plan(sc, [Point(gateway, args.encap, workers, n, sessions) for n in counts],
                    args.prefix)

    def needs(self, plan):
        return ["ras", *plan.sc.gateways]

    def prepare(self, plan):
        ok, why = DRIVERS[plan.sc.gateways[0]].available()
        if not ok:
            raise Failure(why)

    def items(self, plan):
        return [Item(f"{p.key()}-r{rep}", f"{p.config()}, {p.tunnels} tunnel"
                     f"{'s' if p.tunnels > 1 else ''}, {p.sessions} session"
                     f"{'s' if p.sessions > 1 else ''}, repeat {rep}", p, rep)
                for rep in range(1, plan.sc.repeats + 1) for p in plan.points]

    def meta(self, plan):
        sc = plan.sc
        return {"scenario": "tunnels", "title": f"tunnel-count scaling ({sc.gateways[0]})",
                "topology": sc.topology, "gateway": sc.gateways[0], "mode": sc.modes[0],
                "workers": sc.workers[0], "counts": [p.tunnels for p in plan.points],
                "sessions": sc.sessions[0], "time": sc.time, "warmup": sc.warmup,
                "repeats": sc.repeats, "verify": sc.verify, "prefix": plan.prefix}

    def bed(self, plan):
        return beds.NamespaceBed(plan.sc, plan.prefix, {})

    def measure(self, plan, bed, item):
        return tunnels_point.measure(plan.sc, item.point, item.repeat, bed)

    def failed(self, item, started, error):
        return {"point": item.point.record(), "repeat": item.repeat, "started": started,
                "error": error}

    def record_schema(self, fmt):
        return RUN_SCHEMA

    def meta_schema(self, fmt):
        return META_SCHEMA

    def report(self, meta, recs, complete):
        return tunnels_report.document(tunnels_report.analyse(recs, meta, complete))


KIND = Tunnels()
