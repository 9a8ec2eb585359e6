"""`tunbed ndr` (and `tunbed run` of a scenario file with an [ndr] section), as a scenario kind:
per frame size and gateway, the no-drop rate (NDR) and the partial-drop rate (PDR) in one search
(search.py), then latency at 10, 50 and 90% of PDR (docs/ndr.md). First the generator's own
ceiling: the same search on the direct topology (client and server on one link), whose PDR at
each frame size is the highest rate offered to the gateways; a result at that ceiling is the
generator's, and says so. ndr_plan.py plans and checks, ndr_report.py makes the report.

Records: searches/POINT-fSIZE.json, one per gateway configuration and frame size (every trial,
the result, the gateway's telemetry and the CPU samples of the whole search), and meta.json;
format 2. Format 1 named a search record's kind `ndr-search`; today it is the scenario kind,
`ndr`, as in every record."""

import contextlib
import dataclasses
import json
import os
import subprocess
import time

from .. import bed as beds
from .. import inifile, inventory, limits, records, scenario, search
from ..common import Failure, GatewayFailure, Refused, ScenarioError, deferred_signals, log
from ..common import TRAFFIC_PORT as PORT
from ..drivers import DRIVERS
from ..hosts import Netns
from ..records import HOST, KEY
from ..schema import ANY, NUM, STR, Either, List, Map, Num, Obj, Opt, Str
from . import ndr_report
from .base import Command, Item, Kind, bed_options, gateway_sets
from .matrix_point import Run, pinned
from .ndr_plan import (DEFAULT_SIZES, DIRECT, FRACTIONS, FULL_SIZES, HOSTS_MTU, IMIX,
                       NDR_SETTERS, Ndr, above_ceiling, check, check_ceiling, frame, plan,
                       point_key, size_words, topology_path)

SAMPLE_HZ = 10             # CPU samples a second: a 1 s trial gets ten
SAMPLES_PER_S = 1000       # latency samples a second of a trial (every N-th datagram)
SAMPLE_EVERY_MIN = 100     # at most one datagram in this many asks for a reply
TRIAL_GRACE_S = 60         # a trial's client beyond its duration (start, results) at most
DIRECT_MAX_RATE = 2e7      # where the ceiling's search starts: above any rate a host's stack
                           # sends (10GbE carries 14.88 million 64-byte frames a second)
# The options of the command line that set [ndr] keys.
NDR_OPTIONS = ("sizes", "flows", "width", "pdr_loss", "initial_time", "min_rate", "max_rate",
               "direct_topology")

# What the report reads of a search and of meta.json (schema.py, records.py).
BOUND = Obj({"rate": Opt(NUM), "upper": Opt(NUM), "width": Opt(NUM),
             "lower_trial": Opt(Num(0, whole=True))})
LATENCY = Opt(Obj({"samples": Opt(NUM), "p50_ms": Opt(NUM), "p90_ms": Opt(NUM),
                   "p99_ms": Opt(NUM), "max_ms": Opt(NUM)}))
TRIAL = {"duration": NUM, "valid": ANY, "rate": NUM, "sent": NUM, "lost": NUM,
         "offered_pps": Opt(NUM), "loss_ratio": NUM, "latency": LATENCY,
         "measure_start_mono_s": Opt(NUM), "measure_end_mono_s": Opt(NUM)}
FRAME = {"lan": Num(1, 1 << 20, whole=True), "inner_ip": NUM, "transit": NUM, "overhead": NUM}
SEARCH = {
    "point": Obj({"key": KEY, "config": STR, "gateway": STR}, need=("key", "config", "gateway")),
    "frame": Obj(FRAME, need=("lan", "inner_ip", "transit", "overhead")),
    "started": NUM, "params": Opt(Obj({"max_rate": Opt(NUM)})),
    "result": Opt(Obj({"ndr": Opt(BOUND), "pdr": Opt(BOUND)})),
    "trials": Opt(List(Obj(TRIAL, need=("duration", "valid", "rate", "sent", "lost",
                                        "loss_ratio")))),
    "latency_trials": Opt(List(Obj(TRIAL | {"fraction": NUM},
                                   need=("fraction", "rate", "valid", "sent", "lost")))),
    "hosts": Opt(List(HOST, most=limits.RECORD_HOSTS))}
# Format 3 may have the IMIX frame (lan "imix", its members in mix, the means) and `where`.
SEARCH_3 = SEARCH | {
    "frame": Obj(FRAME | {"lan": Either(Num(1, 1 << 20, whole=True), Str(IMIX, IMIX)),
                          "lan_mean": NUM,
                          "mix": Opt(List(Obj({"lan": Num(1, 1 << 20, whole=True),
                                               "weight": Num(1, 1000, whole=True)},
                                              need=("lan", "weight")), least=1, most=16))},
                 need=("lan", "inner_ip", "transit", "overhead")),
    "where": Opt(Obj({"mode": STR, "path": STR, "target": STR, "client": STR, "server": STR,
                      "gwa": Opt(STR), "gwb": Opt(STR)},
                     need=("mode", "path", "target", "client", "server")))}
SEARCH_SCHEMA = {fmt: Obj(fields | {"kind": Str(kind, f"{kind}, an NDR search's kind")},
                          need=("point", "frame", "kind"))
                 for fmt, kind, fields in ((1, "ndr-search", SEARCH), (2, "ndr", SEARCH),
                                           (3, "ndr", SEARCH_3))}
META_SCHEMA = Obj({"kind": Opt(Str("ndr", "ndr")), "notes": List(STR),
                   "ndr": Opt(Obj({"pdr_loss": NUM})),
                   "mode": Opt(STR), "hosts": Opt(STR),
                   "ceiling": Opt(Map(NUM, key=r"[0-9]{1,7}|imix", keywhat="a frame size"))})


class DirectBed(beds.NamespaceBed):
    """The generator alone: client and server on one link (direct.topo, or another file with
    hosts client and server and a link wire)."""

    def __init__(self, topology, family, prefix, pins):
        self.topology, self.family, self.prefix, self.pin_override = topology, family, prefix, pins
        self.roles = {r: [Netns(prefix, r)] for r in ("client", "server")}
        self.clients, self.servers = self.roles["client"], self.roles["server"]

    @contextlib.contextmanager
    def point(self, item):
        topo = topology_path(self.topology)
        with beds.topology(topo, self.prefix) as shown:
            try:
                hosts = {h["name"]: h for h in shown["hosts"]}
                if "client" not in hosts or "server" not in hosts:
                    raise Failure(f"{topo}: the generator's topology needs hosts client and "
                                  "server")
                addrs = [a.split("/")[0] for i in hosts["server"].get("interfaces", [])
                         if i.get("link") == "wire" for a in i.get("addresses", [])]
                addr = next((a for a in addrs if (":" in a) == (self.family == 6)), None)
                if not addr:
                    raise Failure(f"{topo}: the server has no IPv{self.family} address on link "
                                  "'wire'")
                self.addrs = {"server": addr}
                self.pins = {h: hosts[h]["cpus"] for h in hosts if hosts[h].get("cpus")}
                self.pins.update(self.pin_override)
                self.open_hosts()
                yield self
            finally:
                with deferred_signals():
                    self.close_hosts()

    def samplers(self):
        return [("this machine", None, ["client", "server"])]


class Beds(beds.ItemBed):
    """The two beds of a run in namespaces: the generator alone (direct), and the gateways'
    topology."""

    def __init__(self, plan):
        self.gateways = beds.NamespaceBed(plan.sc, plan.prefix, plan.pins)
        self.direct = DirectBed(plan.nd.direct_topology, plan.family, plan.prefix, plan.pins)

    def point(self, item):
        p, _ = item.point
        bed = self.direct if p.gateway == DIRECT else self.gateways
        return bed.point(dataclasses.replace(item, point=p))


class HostsBeds(beds.HostsBed):
    """The hosts of an inventory (docs/hosts.md), one bed for the generator alone and the
    gateways: search_one's where() says which hosts and which path each search uses."""

    def point(self, item):
        p, _ = item.point
        return super().point(dataclasses.replace(item, point=p))


def udp_counters(h):
    """The Udp line of /proc/net/snmp in a host's namespace: the receiver's socket drops."""
    lines = [ln.split() for ln in h.run(["cat", "/proc/net/snmp"]).splitlines()
             if ln.startswith("Udp:")]
    return dict(zip(lines[0][1:], map(int, lines[1][1:]))) if len(lines) >= 2 else {}


def sample_every(rate):
    return max(SAMPLE_EVERY_MIN, int(rate // SAMPLES_PER_S))


def client_part(m, rate, p, out, err, drops):
    """One tunbed-traffic client's share of a trial (the one client's, or an IMIX member's)."""
    try:
        doc = json.loads(out)
    except (TypeError, ValueError):
        raise Failure("tunbed-traffic client: " + ((err or "").strip().splitlines()
                                                   or ["no output"])[-1]) from None
    u = doc.get("udp") or {}
    status = p.local.returncode
    # The generator's own shortfalls make a trial say nothing of the gateway: a rate not
    # offered within 1%, datagrams its receiver dropped, a session that failed.
    valid = bool(u.get("offered_ok")) and drops <= 0 and status == 0 and \
        not doc.get("interrupted")
    u.pop("per_session", None)
    return {"lan": m["lan"], "rate": rate, "sent": u.get("sent", 0),
            "received": u.get("received", 0), "lost": u.get("lost", 0), "valid": valid,
            "offered_pps": u.get("offered_pps"), "offered_ratio": u.get("offered_ratio"),
            "late": u.get("late"), "not_sent": u.get("not_sent"), "receiver_drops": drops,
            "latency": u.get("latency"), "status": status,
            "error": ((err or "").strip().splitlines() or [None])[-1],
            "measure_start_mono_s": doc.get("measure_start_mono_s"),
            "measure_end_mono_s": doc.get("measure_end_mono_s"), "traffic": doc}


def total(xs):
    return None if any(x is None for x in xs) else sum(xs)


def merge_parts(parts):
    """One trial of an IMIX's members, each its own client: counts summed, valid if every
    member's was, the window from the first start to the last end, and each latency
    percentile the worst member's (percentiles of unlike samples do not add up)."""
    lats = [pt["latency"] for pt in parts if pt.get("latency")]
    lat = None
    if lats:
        lat = {k: max((x.get(k) for x in lats if x.get(k) is not None), default=None)
               for k in ("min_ms", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms",
                         "mean_ms")}
        lat["samples"] = sum(x.get("samples") or 0 for x in lats)
        lat["merged"] = "the worst member's each percentile"
    starts = [pt["measure_start_mono_s"] for pt in parts
              if pt["measure_start_mono_s"] is not None]
    ends = [pt["measure_end_mono_s"] for pt in parts if pt["measure_end_mono_s"] is not None]
    offered = total([pt["offered_pps"] for pt in parts])
    asked = sum(pt["rate"] for pt in parts)
    return {"sent": sum(pt["sent"] for pt in parts),
            "received": sum(pt["received"] for pt in parts),
            "lost": sum(pt["lost"] for pt in parts), "valid": all(pt["valid"] for pt in parts),
            "offered_pps": offered,
            "offered_ratio": offered / asked if offered is not None and asked else None,
            "late": total([pt["late"] for pt in parts]),
            "not_sent": total([pt["not_sent"] for pt in parts]),
            "receiver_drops": parts[0]["receiver_drops"], "latency": lat,
            "status": max(pt["status"] for pt in parts),
            "error": "; ".join(pt["error"] for pt in parts if pt["error"]) or None,
            "measure_start_mono_s": min(starts) if starts else None,
            "measure_end_mono_s": max(ends) if ends else None,
            "members": [{k: v for k, v in pt.items() if k != "traffic"} for pt in parts],
            "traffic": {"members": [pt["traffic"] for pt in parts]}}


class Trials:
    """The trials of one search on a bed that is up: each a tunbed-traffic client run on the
    first client host towards target (an IMIX's: one client per member, at its share of the
    rate, all at once), its processes watched by the CPU samplers (run: matrix_point.Run), the
    receiver's socket drops read around it."""

    def __init__(self, bed, nd, fr, run, target):
        self.bed, self.nd, self.fr = bed, nd, fr
        self.run, self.target = run, target

    def client(self, i, rate, payload, duration):
        h = self.bed.clients[0]
        args = [self.target, "--port", str(PORT), "--udp", "--pps", str(rate),
                "--size", str(payload), "--sessions", str(self.nd.flows),
                "--time", f"{duration:g}", "--sample", str(sample_every(rate)), "--json",
                *self.bed.any_address("client")]
        p = h.spawn(f"traffic-client-{i}", pinned(self.bed.pins, "client",
                                                  [h.bin("tunbed-traffic"), "client", *args]),
                    stdout=-1)
        self.run.watch("client", p.pid, "tunbed-traffic client")
        return p

    def __call__(self, rate, duration, purpose="search"):
        srv = self.bed.servers[0]
        members = self.fr.get("mix") or [dict(self.fr, weight=1)]
        weights = sum(m["weight"] for m in members)
        before = udp_counters(srv)
        procs = []
        try:
            for i, m in enumerate(members):
                r = max(1, int(round(rate * m["weight"] / weights)))
                procs.append((m, r, self.client(i, r, m["udp_payload"], duration)))
            outs = []
            deadline = time.monotonic() + duration + TRIAL_GRACE_S
            for m, r, p in procs:
                try:
                    outs.append((m, r, p, *p.communicate(
                        timeout=max(0.1, deadline - time.monotonic()))))
                except subprocess.TimeoutExpired:
                    raise Failure(f"tunbed-traffic client: no result within {duration:g} s + "
                                  f"{TRIAL_GRACE_S} s") from None
        finally:
            with deferred_signals():
                for _, _, p in procs:
                    if p.poll() is None:
                        p.stop()
        # InErrors: every datagram the receiver's kernel dropped (a full socket buffer counts
        # in RcvbufErrors too).
        drops = udp_counters(srv).get("InErrors", 0) - before.get("InErrors", 0)
        parts = [client_part(m, r, p, out, err, drops) for m, r, p, out, err in outs]
        if len(parts) == 1:
            t = parts[0]
            t.pop("lan")
            t.pop("rate")
        else:
            t = merge_parts(parts)
        return {"purpose": purpose, **t}


def where(bed, point):
    """(the address the trials send to, the gateway the search starts or None, and the
    record's `where`: which host ran each part, the mode and the path). The generator alone
    (direct) in namespaces is client and server on one link; on hosts, the client host sends
    to the server host's tunbed_direct_addr (a path without the gateways) where the inventory
    gives one, else through the gateway hosts' kernels forwarding (route): the ceiling then
    counts their forwarding too, and the record says so."""
    hosts = isinstance(bed, beds.HostsBed)
    target, gateway, path = bed.addrs["server"], point.gateway, "gateway"
    if point.gateway == DIRECT:
        direct = hosts and bed.servers[0].spec.direct_addr
        gateway, path = (None, "direct") if direct or not hosts else ("route", "route")
        target = direct or target
    out = {"mode": "hosts" if hosts else "namespaces", "path": path, "target": target,
           "client": bed.clients[0].name, "server": bed.servers[0].name}
    if gateway:
        out.update(gwa=bed.host("gwa").name, gwb=bed.host("gwb").name)
    return target, gateway, out


def check_host_mtus(bed, fr, point):
    """On hosts: the frame planned at HOSTS_MTU again at the MTUs found on the hosts (their
    facts: the client's interface, gwa's transit), returned (an IMIX's members capped at what
    they carry); one they cannot carry fails its search with the line ndr_plan.frame gives."""
    facts = bed.facts()
    nic = lambda h: ((facts.get(h.name) or {}).get("nic") or {}).get("mtu")  # noqa: E731
    lan = nic(bed.clients[0]) or HOSTS_MTU
    transit = HOSTS_MTU
    if point.gateway != DIRECT and bed.roles.get("gwa") and bed.host("gwa").spec.reach:
        transit = nic(bed.host("gwa")) or HOSTS_MTU
    if (lan, transit) == (HOSTS_MTU, HOSTS_MTU):
        return fr
    try:
        return frame(fr["lan"], point.gateway, point.mode, fr["family"], transit, lan)
    except ValueError as e:
        raise GatewayFailure(f"on the hosts: {e}") from None


def search_one(bed, nd, sc, point, fr, max_rate):
    """One search of one gateway configuration at one frame size, on a bed that is up for it
    (bed.point); the raw record. What it starts it stops, whatever happens."""
    params = search.Params(min_rate=min(nd.min_rate, max_rate / 2), max_rate=max_rate,
                           final_s=sc.time, initial_s=min(nd.initial_time, sc.time),
                           width=nd.width, pdr_loss=nd.pdr_loss / 100)
    rec = {"point": point.__dict__ | {"key": point_key(point), "config": point.config()},
           "frame": fr, "flows": nd.flows, "params": dataclasses.asdict(params),
           "started": time.time()}
    target, gateway, rec["where"] = where(bed, point)
    run = Run(sc, dataclasses.replace(point, gateway=gateway or DIRECT), bed, hz=SAMPLE_HZ)
    try:
        rec["pins"] = bed.pins
        if rec["where"]["mode"] == "hosts":
            rec["frame"] = fr = check_host_mtus(bed, fr, point)
        driver_pids = []
        if gateway:
            driver_pids, rec["gateway_info"] = run.gateway_up()
        run.servers_up()
        clocks = run.sample(driver_pids)
        trials = Trials(bed, nd, fr, run, target)
        s = search.Search(trials, params)
        try:
            rec["result"] = s.run()
        finally:
            rec["trials"] = s.trials
        pdr = rec["result"]["pdr"]["rate"]
        rec["latency_trials"] = []
        for f in FRACTIONS if pdr else ():
            t = trials(max(1, pdr * f), sc.time, purpose="latency")
            rec["latency_trials"].append(dict(t, fraction=f, rate=int(max(1, pdr * f)),
                                              duration=sc.time,
                                              loss_ratio=search.loss_ratio(t)))
        for _, _, sampler in run.samplers:
            sampler.stop()
        rec["gateway"] = run.driver.telemetry() if run.driver else None
        rec["hosts"] = run.hosts(clocks)
    finally:
        run.stop()
    rec["finished"] = time.time()
    return rec


def load_ceiling(outdir):
    """{frame size: PDR of the direct searches} of an earlier NDR results directory."""
    _, recs = records.load(KIND, outdir)
    recs = [r for r in recs if r["point"]["gateway"] == DIRECT]
    if not recs:
        raise ScenarioError(f"{outdir}: no search of the generator alone (direct) to take the "
                            "ceiling from")
    # A size where the generator found no PDR has no ceiling: check_ceiling refuses it.
    return {r["frame"]["lan"]: r["result"]["pdr"]["rate"] for r in recs
            if ((r.get("result") or {}).get("pdr") or {}).get("rate")}


def hosts_of(path, sc, nd):
    """The inventory of `ndr --hosts`, checked before anything connects: a client and a
    server host, and gwa and gwb where a gateway runs or where the generator's ceiling goes
    through them (the first server host has no tunbed_direct_addr)."""
    inv = inventory.parse(path, ("client", "server"))
    need = any(DRIVERS[g].needs_gateways for g in sc.gateways) or \
        (not nd.ceiling_from and not inv.one("server").direct_addr)
    for role in inventory.GATEWAY_ROLES if need else ():
        if not inv.roles.get(role):
            raise inventory.InventoryError(
                f"{path}: no host in group '{role}' (the scenario needs "
                f"{', '.join(inventory.ROLES)}" + ("" if sc.gateways else
                                                   ": the ceiling goes through the gateway "
                                                   "hosts without tunbed_direct_addr") + ")")
    return inv


@dataclasses.dataclass
class Plan:
    """An NDR run: the scenario's gateways, modes, workers, mtu and time (the final trials'),
    the searches' settings, and what check() found."""
    sc: scenario.Scenario
    nd: Ndr
    title: str
    pins: dict
    prefix: str
    kind: object
    family: int = 4
    frames: dict = dataclasses.field(default_factory=dict)
    ceiling: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)
    inv: object = None     # the hosts of --hosts (inventory.Hosts), None: namespaces
    hosts: str = ""        # the inventory's path

    @property
    def name(self):
        return self.sc.name


def arguments(p):
    p.add_argument("--gateways", metavar="LIST",
                   help="gateways, e.g. gregw,vxlan (default gregw; 'direct' alone: only the "
                        "generator's ceiling)")
    p.add_argument("--modes", metavar="LIST", help="gregw modes (default gre)")
    p.add_argument("--workers", metavar="LIST", help="gregw worker threads (default 2)")
    p.add_argument("--mtu", metavar="LIST", help="transit MTU, 0: the topology's (default 0)")
    p.add_argument("--sizes", metavar="LIST",
                   help="Ethernet frame sizes the client sends, FCS included, and imix: the "
                        "simple IMIX, 7:4:1 of 64, 594 and 1518 bytes (default "
                        f"{','.join(map(str, DEFAULT_SIZES))})")
    p.add_argument("--full", action="store_true",
                   help=f"RFC 2544's sizes: {','.join(map(str, FULL_SIZES))}")
    p.add_argument("--time", type=float, metavar="S", help="the final trials' duration (default 5)")
    p.add_argument("--initial-time", metavar="S", help="the first trials' duration (default 1)")
    p.add_argument("--width", metavar="W", help="goal width of the final bounds, relative "
                                                "(default 0.02)")
    p.add_argument("--pdr-loss", metavar="PCT", help="the loss PDR may have, %% (default 0.5)")
    p.add_argument("--flows", metavar="N", help="UDP flows, each its own source port (default 8)")
    p.add_argument("--min-rate", metavar="PPS", help="lowest rate searched (default 1k)")
    p.add_argument("--max-rate", metavar="PPS",
                   help="highest rate searched (default: the generator's ceiling; above it: "
                        "refused)")
    p.add_argument("--ceiling-from", metavar="DIR",
                   help="take the generator's ceiling from an earlier NDR results directory "
                        "instead of measuring it")
    p.add_argument("--direct-topology", metavar="FILE",
                   help="where the ceiling is measured in namespaces (default direct)")
    bed_options(p, "as for ras")
    p.add_argument("--hosts", metavar="INVENTORY",
                   help="on the hosts of an Ansible inventory over SSH: the ceiling between the "
                        "client and server hosts (directly to the server's tunbed_direct_addr, "
                        "else through the gateway hosts' routing), the gateways on gwa and gwb "
                        "(docs/ndr.md, On hosts)")


class NdrKind(Kind):
    name = "ndr"
    RECORD_DIR = "searches"
    FORMAT = 3
    UNNUMBERED = None
    WHAT = "NDR results"
    UNIT = "search"
    RECORD_NEEDS = ()
    commands = (Command(
        "ndr", "NDR and PDR per frame size: the packet rates a gateway forwards without loss "
               "(docs/ndr.md)", arguments,
        "For each frame size and gateway, the no-drop rate (NDR) and the partial-drop rate "
        "(PDR, loss <= 0.5%) in one MLRsearch-like search, short trials first and the final "
        "ones at --time; then latency at 10, 50 and 90% of PDR. The generator's own ceiling "
        "is measured first, on the direct topology (with --hosts, between the client and "
        "server hosts). docs/ndr.md."),)

    def check(self, args):
        sc = scenario.Scenario(name="ndr", topology=args.topology, gateways=["gregw"],
                               workers=[2], time=5.0, repeats=1)
        if args.gateways is not None:
            gws = [g.strip() for g in args.gateways.split(",") if g.strip()]
            # --gateways direct (or none): the generator alone, its ceiling.
            args.gateways = None
            sc.gateways = [g for g in gws if g not in (DIRECT, "none")]
            for g in sc.gateways:
                if g not in DRIVERS:
                    raise ScenarioError(f"unknown gateway '{g}': expected some of direct, "
                                        f"{', '.join(DRIVERS)}")
        title = ("NDR and PDR per frame size ("
                 + (", ".join(sc.gateways) or "the generator alone") + ")")
        return self.plan_of(sc, Ndr(), args, title)

    def plan_of(self, sc, nd, args, title):
        """The plan of an NDR run: the command line's options over the file's (sc, nd) or the
        defaults, everything checked (also by `tunbed run` of a file with [ndr])."""
        inifile.override(scenario.SETTERS, sc, args, ("gateways", "modes", "workers", "time",
                                                      "mtu"), ScenarioError)
        inifile.override(NDR_SETTERS, nd, args, NDR_OPTIONS, ScenarioError)
        if getattr(args, "full", False) and getattr(args, "sizes", None) is None:
            nd.sizes = list(FULL_SIZES)
        if getattr(args, "ceiling_from", None):
            nd.ceiling_from = args.ceiling_from
        for g in sc.gateways:
            if g not in DRIVERS:
                raise ScenarioError(f"unknown gateway '{g}': expected some of "
                                    f"{', '.join(DRIVERS)}")
        pl = Plan(sc, nd, title, beds.parse_pins(args.pin), args.prefix, self)
        if getattr(args, "hosts", None):
            if any(m for m in sc.mtu):
                raise ScenarioError("a transit MTU (--mtu, mtu =) is the topology's: the hosts "
                                    "mode uses the hosts' own")
            if nd.direct_topology != Ndr().direct_topology:
                raise ScenarioError("--direct-topology (direct_topology =) is the namespaces': "
                                    "on hosts the ceiling is measured between the client and "
                                    "server hosts (tunbed_direct_addr, docs/ndr.md)")
            pl.hosts, pl.inv = args.hosts, hosts_of(args.hosts, sc, nd)
        pl.family, pl.frames = check(sc, nd, pl.inv.family() if pl.inv else None)
        if nd.ceiling_from:
            pl.ceiling = load_ceiling(nd.ceiling_from)
            check_ceiling(nd, pl.ceiling)
        return pl

    def needs(self, plan):
        return gateway_sets(plan.sc)

    def figure(self, plan, item, record):
        found = record.get("result") or {}
        return ", ".join(f"{k.upper()} {ndr_report.mpps(found[k]['rate'] / 1e6)} Mpps"
                         for k in ("ndr", "pdr") if (found.get(k) or {}).get("rate")) or None

    def prepare(self, plan):
        gateways = []
        for g in plan.sc.gateways:
            ok, why = DRIVERS[g].available(hosts_mode=bool(plan.inv))
            if ok:
                gateways.append(g)
            else:
                plan.notes.append(f"{g} skipped: {why}")
                log(f"{g} skipped: {why}")
        if plan.sc.gateways and not gateways:
            raise Failure("nothing to run: every gateway was skipped")
        plan.sc.gateways = gateways

    def items(self, pl):
        return [Item(f"{point_key(p)}-f{size}", f"{p.config()}, {size_words(size)}", (p, size))
                for p, size in plan(pl.sc, pl.nd)]

    def meta(self, plan):
        sc, nd = plan.sc, plan.nd
        meta = {"scenario": sc.name, "title": plan.title, "topology": sc.topology,
                "direct_topology": nd.direct_topology, "family": plan.family, "time": sc.time,
                "ndr": dataclasses.asdict(nd), "gateways": sc.gateways, "notes": plan.notes,
                "pins": plan.pins, "prefix": plan.prefix,
                "mode": "hosts" if plan.inv else "namespaces",
                "hosts": plan.hosts and os.path.abspath(plan.hosts)}
        if nd.ceiling_from:
            meta["ceiling"] = {str(k): v for k, v in plan.ceiling.items()}
        return meta

    def bed(self, plan):
        if plan.inv:
            return HostsBeds(plan.inv, plan.prefix, plan.pins)
        return Beds(plan)

    def admit(self, plan, item):
        p, size = item.point
        if p.gateway != DIRECT:
            # Once the ceiling is known, a --max-rate above it is refused (exit 2): the
            # searches measured so far stay, with their report.
            line = above_ceiling(plan.nd, plan.ceiling)
            if line:
                raise Refused(line)

    def measure(self, plan, bed, item):
        p, size = item.point
        nd = plan.nd
        if p.gateway == DIRECT:
            # Below --max-rate the generator must manage alone, or the gateways are not
            # searched up there (refused by admit); without it, from far above anything.
            max_rate = nd.max_rate or DIRECT_MAX_RATE
        elif size not in plan.ceiling:
            raise Failure(f"no ceiling at {size_words(size)}: the generator's search there "
                          "failed")
        else:
            max_rate = min(nd.max_rate or plan.ceiling[size], plan.ceiling[size])
        try:
            return search_one(bed, nd, plan.sc, p, plan.frames[(p.gateway, p.mode)][size],
                              max_rate)
        except GatewayFailure as e:
            if p.gateway == DIRECT:
                raise Failure(f"the generator alone: {e}") from None  # no ceiling, no run
            raise

    def measured(self, plan, item, rec):
        p, size = item.point
        if p.gateway == DIRECT:
            got = rec["result"]["pdr"]["rate"]
            if not got:
                raise Failure(f"the generator alone lost over {plan.nd.pdr_loss:g}% of "
                              f"datagrams at every rate at {size_words(size)}: no ceiling to "
                              "measure gateways against")
            plan.ceiling[size] = got

    def record_schema(self, fmt):
        return SEARCH_SCHEMA[fmt]

    def meta_schema(self, fmt):
        return META_SCHEMA

    def upgrade_record(self, doc, fmt):
        return dict(doc, kind=self.name)  # 1 -> 2: ndr-search becomes ndr; 2 -> 3: as it is

    def check_records(self, recs, paths):
        records.one_each(recs, paths, lambda r: (r["point"]["key"], r["frame"]["lan"]),
                         lambda r: f"the search of {r['point']['key']} at "
                                   f"{size_words(r['frame']['lan'])}")

    def report(self, meta, recs, complete):
        return ndr_report.document(meta, complete, recs)


KIND = NdrKind()
