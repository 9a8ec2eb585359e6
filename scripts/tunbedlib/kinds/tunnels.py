"""`tunbed tunnels`: how a gateway scales with the number of its tunnels (issue 34,
docs/tunnels.md). For each tunnel count, on the tunnels bed (topo/topologies/tunnels.topo) in
namespaces: each gateway of --gateway set up with that many tunnels (gregw with
topo/tunnels.sh's files; vxlan with a device a tunnel, the same keys and prefixes;
wireguard-go with a peer a tunnel, up to WG_TUNNELS_MAX; ovs-gre, Open vSwitch's userspace
GRE with a port a tunnel), the
time it took and its memory, then the same sessions spread over the tunnels (tunnels_point.py);
the report of tunnels_report.py: throughput, Jain's index across tunnels and across sessions,
CPU-s/GB, retransmits, the gateway's per-tunnel counters checked against the sessions' bytes,
and how far each gateway went (the largest count it was set up with; a count whose setup would
take longer than --setup-limit is not run, said in the report).
With --churn, the churn under load in place of the counts (issue 34, step 4): on one count of
tunnels, a baseline run and a run a rate, the sessions on the steady half of the tunnels while
tunnels_churn.py removes and adds the other half's at the rate.

Records: runs/POINT-rREPEAT.json and meta.json, format 3 (format 2: meta.json's one `gateway`,
gregw; format 1: the point had no pattern, push, and no churn; a tunnel no `received`, 0 in
push)."""

import dataclasses

from .. import bed as beds
from .. import limits, records, scenario, units
from ..common import Failure, ScenarioError, log
from ..drivers import DRIVERS
from ..drivers.gregw import ENCAPS
from ..drivers.kernel import PROBE_TUNNELS, VxlanTunnels
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
# --rate: a session's pace, from 1 kbit/s to what a session could carry (tunbed-traffic's own
# bounds are wider).
RATE_MIN, RATE_MAX = 1000, 100e9
# Churn: the rates (changes a second), and the tunnels of the bed, half steady, half changed.
CHURN_RATE_MAX = 100000
DEFAULT_CHURN_TUNNELS = 100
# The steady sessions of a churn run: both ways, so that the client's receive stall
# (tunbed-traffic's rx_stall) and the server's count both see the tunnels.
CHURN_PATTERN = "duplex"
# The gateways of many tunnels: gregw's tunnel table, the kernel's VXLAN with a device (a VNI)
# a tunnel, wireguard-go with a peer a tunnel, Open vSwitch's userspace GRE with a port a
# tunnel (drivers/ovs.py, OvsGreTunnels).
GATEWAYS = ("gregw", "vxlan", "wireguard-go", "ovs-gre")
# wireguard-go's tunnels are peers, and the far end of each is a wireguard-go process of its
# own on gwb (drivers/vpn.py, WireguardGoTunnels): the most tunnels it is set up with, as
# measured (docs/tunnels.md, "How far a gateway goes").
WG_TUNNELS_MAX = 100
# The longest a gateway's setup of one count may take, estimated from a probe before the run
# (vxlan: VxlanTunnels.probe_s, both sides), by default; a count beyond it is not run.
SETUP_LIMIT_S = 300
SETUP_LIMIT_MAX_S = 3600

COUNTER = Obj({k: NUM for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "drops")},
              need=("tx_packets", "tx_bytes", "rx_packets", "rx_bytes"))
TUNNEL_1 = Obj({"name": STR, "site": STR, "sessions": Num(1, whole=True),
                "bits_per_second": NUM, "sent": NUM, "server_received": NUM, "gwa": COUNTER,
                "gwb": COUNTER}, need=("name", "sessions", "bits_per_second", "gwa", "gwb"))
# Format 2: what the client received on the tunnel's sessions (duplex, pull).
TUNNEL = Obj(TUNNEL_1.fields | {"received": NUM}, need=TUNNEL_1.need + ("received",))
MEMORY = Obj({"rss_kib": Opt(NUM), "rss_peak_kib": Opt(NUM)})
# Format 3: a kernel gateway's memory, the growth of the kernel's over its setup (may be < 0).
SETUP = Obj(MEMORY.fields | {"ready_s": NUM, "kernel_kib": Opt(Num())}, need=("ready_s",))
POINT_1 = Obj({"key": records.KEY, "config": STR, "gateway": STR, "mode": STR,
               "workers": Num(1, whole=True), "sessions": Num(1, whole=True),
               "tunnels": Num(1, COUNTS_MAX, whole=True)},
              need=("key", "config", "gateway", "tunnels", "sessions"))
# Format 2: the sessions' pattern, and a churn run's rate (0: its baseline; none: a count).
POINT = Obj(POINT_1.fields | {"pattern": Str("push|duplex", "push or duplex"),
                              "churn": Opt(Num(0, CHURN_RATE_MAX)),
                              "rate": Opt(Num(1))},
            need=POINT_1.need + ("pattern",))
# Format 3 adds bytes (wireguard-go counts no packets).
IDLE = Obj({"tunnels": NUM, "packets": NUM, "bytes": Opt(NUM)}, need=("tunnels", "packets"))
COUNT = Num(0, whole=True)
# What tunnels_churn.py did (its result line), and gregw's own counts of it.
CHURN = Obj({"rate": Num(0, CHURN_RATE_MAX), "span_s": NUM, "asked": COUNT, "started": COUNT,
             "done": COUNT, "add": COUNT, "remove": COUNT, "late_max_ms": NUM,
             "reply_ms": Opt(Obj({"median": NUM, "max": NUM})),
             "absent_at_end": List(STR),
             "pings": Obj({"pinged": COUNT, "first": COUNT, "later": COUNT, "never": COUNT,
                           "still_out": COUNT, "first_rtt_ms_max": Opt(NUM),
                           "later_echo_max": Opt(COUNT)},
                          need=("pinged", "first", "later", "never")),
             "error": Opt(STR),
             "gregw": Opt(Map(Map(NUM)))},
            need=("rate", "span_s", "asked", "done", "pings"))


def run_schema(point, tunnel, churn):
    tunnels = {"carried": List(tunnel), "idle": IDLE, "unattributed": Opt(Map(NUM)),
               "segments_max": Opt(Map(Num(1)))}
    if churn:
        tunnels["churned"] = Opt(IDLE)
    return Obj(matrix.RUN | {
        "kind": Str("tunnels", "tunnels"), "point": point,
        "hosts": List(matrix.HOST_BUDGETS, most=limits.RECORD_HOSTS), "setup": Map(SETUP),
        "loaded": Opt(Map(MEMORY)),
        "tunnels": Obj(tunnels, need=("carried", "idle")),
        **({"churn": Opt(CHURN)} if churn else {}),
        "traffic_status": Opt(NUM)}, need=("kind", "point", "repeat", "setup", "tunnels"))


RUN_SCHEMAS = {1: run_schema(POINT_1, TUNNEL_1, False), 2: run_schema(POINT, TUNNEL, True),
               3: run_schema(POINT, TUNNEL, True)}
META_2 = {"kind": Str("tunnels", "tunnels"), "counts": List(Num(1, COUNTS_MAX)),
          "sessions": Num(1), "verify": Opt(BOOL), "churn": Opt(List(Num(0, CHURN_RATE_MAX))),
          "rate": Opt(Num(1))}
META_SCHEMAS = {fmt: Obj(META_2 | {"gateway": STR}, need=("kind", "counts", "sessions", "gateway"))
                for fmt in (1, 2)}
# Format 3: the gateways in order (several in a run), and the counts not run, with why.
NOT_RUN = Obj({"gateway": STR, "tunnels": Num(1, COUNTS_MAX, whole=True), "why": STR},
              need=("gateway", "tunnels", "why"))
META_SCHEMAS[3] = Obj(META_2 | {"gateways": List(STR, 1), "not_run": Opt(List(NOT_RUN))},
                      need=("kind", "counts", "sessions", "gateways"))


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
    churn: float = None  # a churn run's changes a second (0: its baseline); None: a count
    rate: int = 0  # bit/s each session is paced at (tunbed-traffic --rate); 0: unpaced

    def key(self):
        if not self.workers:  # a gateway without modes and workers (vxlan)
            return (f"{self.gateway}-n{self.tunnels}-s{self.sessions}"
                    + (f"-p{self.rate}" if self.rate else ""))
        return (f"{self.gateway}-{self.mode}-w{self.workers}-n{self.tunnels}-s{self.sessions}"
                + (f"-p{self.rate}" if self.rate else "")
                + ("" if self.churn is None else f"-churn{self.churn:g}"))

    def config(self):
        return f"{self.gateway} {self.mode} {self.workers}w" if self.workers else self.gateway

    def steady(self):
        """The tunnels that carry sessions: all of them, or a churn run's first half."""
        return self.tunnels if self.churn is None else self.tunnels // 2

    def record(self):
        return {"key": self.key(), "config": self.config(), "gateway": self.gateway,
                **({"mode": self.mode, "workers": self.workers} if self.workers else {}),
                "tunnels": self.tunnels, "sessions": self.sessions, "pattern": self.pattern,
                **({} if self.churn is None else {"churn": self.churn}),
                **({"rate": self.rate} if self.rate else {})}


@dataclasses.dataclass
class Plan:
    sc: scenario.Scenario
    points: list
    prefix: str
    name: str = "tunnels"
    setup_limit: float = SETUP_LIMIT_S
    not_run: list = dataclasses.field(default_factory=list)


def arguments(p):
    p.add_argument("--tunnels-counts", metavar="LIST",
                   help="tunnel counts, 1 to 16384 each, e.g. 1,100 (default "
                        + ",".join(map(str, DEFAULT_COUNTS)) + ")")
    p.add_argument("--sessions", metavar="N", default="64",
                   help=f"TCP sessions of every count, 1 to {SESSIONS_MAX}, spread over the "
                        "tunnels round-robin (default 64; fewer than the tunnels leave the last "
                        "tunnels without)")
    p.add_argument("--gateway", default="gregw", metavar="LIST",
                   help="the gateways, each measured at every count in turn: gregw (default), "
                        "vxlan (the kernel's VXLAN, a device a tunnel), wireguard-go (a peer a "
                        f"tunnel, at most {WG_TUNNELS_MAX}), ovs-gre (Open vSwitch's userspace "
                        "GRE, a port a tunnel), e.g. gregw,vxlan")
    p.add_argument("--setup-limit", metavar="S", default=str(SETUP_LIMIT_S),
                   help="the longest a gateway's setup of one count may take, 1 to "
                        f"{SETUP_LIMIT_MAX_S} s: a count whose setup a probe before the run "
                        "says would take longer is not run, and the report says so (vxlan); "
                        "a side's setup is stopped at it (vxlan's batch, ovs-gre's up; "
                        f"default {SETUP_LIMIT_S})")
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
    p.add_argument("--rate", metavar="R",
                   help="pace each session at R bit/s (tunbed-traffic --rate), e.g. 100m or "
                        "1gbit, so that the sessions leave the CPUs room: a churn run's stall "
                        "then says what the changes do rather than how long the scheduler "
                        "keeps a session waiting (default: unpaced)")
    p.add_argument("--verify", action="store_true",
                   help="check every byte of every session (tunbed-traffic --verify)")
    p.add_argument("--churn", metavar="RATES",
                   help="churn under load in place of the counts: on --churn-tunnels tunnels, a "
                        "baseline run, then a run a rate (changes a second, each above 0, up to "
                        f"{CHURN_RATE_MAX}, e.g. 10,100,1000) with the sessions (duplex, "
                        "verified) on the first half of the tunnels while the other half are "
                        "removed and added again on both gateways (default none: the counts)")
    p.add_argument("--churn-tunnels", metavar="N",
                   help=f"the tunnels of a churn run, even, 2 to {COUNTS_MAX}: half steady, "
                        f"half changed (default {DEFAULT_CHURN_TUNNELS})")
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


def rates(text):
    """The rates of --churn: numbers above 0 and at most CHURN_RATE_MAX, each once."""
    out = []
    for r in text.split(","):
        try:
            v = float(r)
        except ValueError:
            v = None
        if v is None or not 0 < v <= CHURN_RATE_MAX or v != v:
            raise ScenarioError(f"--churn: '{r.strip()}' is not a rate above 0 and at most "
                                f"{CHURN_RATE_MAX} changes a second")
        if v in out:
            raise ScenarioError(f"--churn: '{text}' names a rate twice")
        out.append(v)
    return out


def pace(text):
    """The bit rate of --rate, whole bit/s at least 1 kbit/s; ScenarioError in one line."""
    try:
        v = units.rate(text, "--rate")
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    if not RATE_MIN <= v <= RATE_MAX:
        raise ScenarioError(f"--rate: '{text}' is not {units.rate_text(RATE_MIN)} to "
                            f"{units.rate_text(RATE_MAX)}")
    return int(v)


def churn_tunnels(text):
    n = whole("--churn-tunnels", text, 2, COUNTS_MAX)
    if n % 2:
        raise ScenarioError(f"--churn-tunnels: '{text}' is odd: half the tunnels are steady, "
                            "half changed")
    return n


def gateways_of(text):
    """The gateways of --gateway, each of GATEWAYS and named once: the scenario files' list
    reader (scenario.listed), its words after `--gateway: `."""
    try:
        return scenario.listed(text, GATEWAYS, "gateway")
    except ValueError as e:
        raise ScenarioError(f"--gateway: {e}") from None


def not_run(gateway, count, per_tunnel_s, limit):
    """Why a count is not run, in words, or None: the setup of count tunnels on both sides
    at per_tunnel_s a tunnel a side (a probe's) would take longer than limit seconds."""
    if per_tunnel_s is None or 2 * count * per_tunnel_s <= limit:
        return None
    return (f"not run: setup of {count} {gateway} tunnels would take "
            f"~{2 * count * per_tunnel_s:.0f} s on both gateways ({per_tunnel_s * 1000:.1f} "
            f"ms a tunnel a side, a probe of {PROBE_TUNNELS} here), over --setup-limit "
            f"{limit:g} s")


class Tunnels(Kind):
    name = "tunnels"
    FORMAT = 3
    UNNUMBERED = None
    commands = (Command(
        "tunnels", "how a gateway scales with its tunnels: 1 to 10,000 (docs/tunnels.md)",
        arguments,
        "gregw (or each gateway of --gateway: gregw; vxlan, the kernel's VXLAN with a device "
        "a tunnel; wireguard-go with a peer a tunnel, to 100; ovs-gre, Open vSwitch's userspace "
        "GRE with a port a tunnel) on the tunnels bed with 1, 10, 100, 1,000 and 10,000 tunnels "
        "(topo/tunnels.sh's files), the same TCP sessions spread over the tunnels round-robin "
        "each time: total throughput, Jain's index across tunnels and across sessions, "
        "CPU-s/GB (box and gateway), retransmits, the time the gateway took to set its tunnels "
        "up and its memory (the resident sets of gregw, wireguard-go and ovs-vswitchd, the "
        "kernel's growth for vxlan), its "
        "per-tunnel counters checked against the sessions' bytes, and how far each gateway "
        "went (a count whose setup a probe says would take longer than --setup-limit is not "
        "run, and said so). With --churn RATES (gregw alone), "
        "churn under load in place of the counts: on --churn-tunnels tunnels, verified duplex "
        "sessions on the first half while the other half are removed and added again through "
        "gregw's control socket on both gateways at each rate: the steady tunnels' throughput "
        "against a baseline run without churn, the longest stall of a steady session, the "
        "changes made against those asked, and whether a ping right after an add gets "
        "through."),)

    def check(self, args):
        churn = getattr(args, "churn", None)
        if churn is not None and args.tunnels_counts:
            raise ScenarioError("--tunnels-counts and --churn: one or the other (a churn run "
                                "has one count, --churn-tunnels)")
        if churn is None and getattr(args, "churn_tunnels", None):
            raise ScenarioError("--churn-tunnels: only with --churn")
        if churn is not None:
            churn = rates(churn)
            args.tunnels_counts = str(churn_tunnels(args.churn_tunnels or
                                                    str(DEFAULT_CHURN_TUNNELS)))
        counts = [c.strip() for c in (args.tunnels_counts or ",".join(
            map(str, DEFAULT_COUNTS))).split(",")]
        counts = [whole("--tunnels-counts", c, 1, COUNTS_MAX) for c in counts]
        if len(set(counts)) != len(counts):
            raise ScenarioError(f"--tunnels-counts: '{args.tunnels_counts}' names a count twice")
        gateways = gateways_of(args.gateway)
        if churn is not None and gateways != ["gregw"]:
            raise ScenarioError(f"--churn: gregw's alone (its tunnels change through its "
                                f"control socket), not {', '.join(gateways)}'s")
        if "wireguard-go" in gateways and args.tunnels_counts and max(counts) > WG_TUNNELS_MAX:
            raise ScenarioError(f"--tunnels-counts: '{max(counts)}' is more than wireguard-go's "
                                f"{WG_TUNNELS_MAX} tunnels (a wireguard-go process a tunnel on "
                                "gwb: docs/tunnels.md)")
        setup_limit = seconds("--setup-limit", getattr(args, "setup_limit", None) or
                              str(SETUP_LIMIT_S), 1, SETUP_LIMIT_MAX_S)
        if args.encap not in ENCAPS:
            raise ScenarioError(f"--encap '{args.encap}': expected {' or '.join(ENCAPS)}")
        sessions = whole("--sessions", args.sessions, 1, SESSIONS_MAX)
        workers = whole("--workers", args.workers, 1, WORKERS_MAX)
        rate = pace(args.rate) if getattr(args, "rate", None) is not None else 0
        sc = scenario.Scenario(name="tunnels", topology="tunnels", gateways=gateways,
                               modes=[args.encap], workers=[workers], sessions=[sessions],
                               time=seconds("--time", args.time, 0.1, TIME_MAX_S),
                               warmup=seconds("--warmup", args.warmup, 0, TIME_MAX_S),
                               repeats=whole("--repeats", args.repeats, 1, REPEATS_MAX),
                               rr=False, verify=args.verify or churn is not None)
        if churn is not None:
            return Plan(sc, [Point("gregw", args.encap, workers, counts[0], sessions,
                                   pattern=CHURN_PATTERN, churn=r, rate=rate)
                             for r in [0.0, *churn]],
                        args.prefix, setup_limit=setup_limit)
        return Plan(sc, [Point(g, *((args.encap, workers) if DRIVERS[g].has_modes
                                    else ("-", 0)), n, sessions, rate=rate)
                         for g in gateways for n in counts], args.prefix,
                    setup_limit=setup_limit)

    def needs(self, plan):
        return ["ras", *plan.sc.gateways]

    def prepare(self, plan):
        """Each gateway available here; a vxlan count whose setup a probe says would take
        longer than the plan's limit, and a wireguard-go count (of the default counts) beyond
        WG_TUNNELS_MAX, left out, with its words in meta.json's not_run."""
        for g in plan.sc.gateways:
            ok, why = DRIVERS[g].available()
            if not ok:
                raise Failure(why)
        per = VxlanTunnels.probe_s() if "vxlan" in plan.sc.gateways else None
        if "vxlan" in plan.sc.gateways and per is None:
            raise Failure("vxlan: the probe of its setup time failed: this kernel cannot make "
                          "VXLAN devices in a namespace")
        keep = []
        for p in plan.points:
            why = (not_run(p.gateway, p.tunnels, per, plan.setup_limit) if p.gateway == "vxlan"
                   else f"not run: more than wireguard-go's {WG_TUNNELS_MAX} tunnels (a "
                        "wireguard-go process a tunnel on gwb)"
                   if p.gateway == "wireguard-go" and p.tunnels > WG_TUNNELS_MAX else None)
            if why:
                plan.not_run.append({"gateway": p.gateway, "tunnels": p.tunnels, "why": why})
                log(f"{p.gateway} {p.tunnels} tunnels {why}")
            else:
                keep.append(p)
        plan.points = keep
        if not keep:
            raise Failure("nothing to run: every count's setup would take longer than "
                          f"--setup-limit {plan.setup_limit:g} s")

    def items(self, plan):
        return [Item(f"{p.key()}-r{rep}", f"{p.config()}, {p.tunnels} tunnel"
                     f"{'s' if p.tunnels > 1 else ''}, {p.sessions} session"
                     f"{'s' if p.sessions > 1 else ''}"
                     + (f" at {units.rate_text(p.rate)}" if p.rate else "")
                     + ("" if p.churn is None else ", no churn (baseline)" if not p.churn
                        else f", churn {p.churn:g}/s")
                     + f", repeat {rep}", p, rep)
                for rep in range(1, plan.sc.repeats + 1) for p in plan.points]

    def meta(self, plan):
        sc = plan.sc
        return {"scenario": "tunnels",
                "title": f"tunnel-count scaling ({', '.join(sc.gateways)})",
                "topology": sc.topology, "gateways": sc.gateways, "mode": sc.modes[0],
                "workers": sc.workers[0], "setup_limit": plan.setup_limit,
                "not_run": plan.not_run,
                "counts": list(dict.fromkeys(p.tunnels for p in plan.points)) + [
                    x["tunnels"] for x in plan.not_run
                    if x["tunnels"] not in {p.tunnels for p in plan.points}],
                "sessions": sc.sessions[0], "time": sc.time, "warmup": sc.warmup,
                "repeats": sc.repeats, "verify": sc.verify, "prefix": plan.prefix,
                **({"rate": plan.points[0].rate} if plan.points[0].rate else {}),
                **({"churn": [p.churn for p in plan.points if p.churn],
                    "title": f"tunnel churn under load ({sc.gateways[0]})"}
                   if plan.points[0].churn is not None else {})}

    def bed(self, plan):
        return beds.NamespaceBed(plan.sc, plan.prefix, {})

    def measure(self, plan, bed, item):
        return tunnels_point.measure(plan.sc, item.point, item.repeat, bed, plan.setup_limit)

    def failed(self, item, started, error):
        return {"point": item.point.record(), "repeat": item.repeat, "started": started,
                "error": error}

    def record_schema(self, fmt):
        return RUN_SCHEMAS[fmt]

    def upgrade_record(self, doc, fmt):
        """1 -> 2: format 1's sessions were push (the client received nothing on them);
        2 -> 3: the same record (format 3 adds a kernel gateway's setup.kernel_kib)."""
        if fmt == 2:
            return doc
        tunnels = dict(doc["tunnels"], carried=[dict(t, received=0)
                                                for t in doc["tunnels"]["carried"]])
        return dict(doc, point=dict(doc["point"], pattern="push"), tunnels=tunnels)

    def meta_schema(self, fmt):
        return META_SCHEMAS[fmt]

    def upgrade_meta(self, doc, fmt):
        """2 -> 3: the one gateway of format 2 (gregw) as the list of the gateways."""
        if fmt != 2:
            return doc
        doc = dict(doc, gateways=[doc.get("gateway")])
        doc.pop("gateway", None)
        return doc

    def report(self, meta, recs, complete):
        return tunnels_report.document(tunnels_report.analyse(recs, meta, complete))


KIND = Tunnels()
