"""`tunbed ndr` (and a scenario file with an [ndr] section): per frame size and gateway, the
no-drop rate (NDR) and the partial-drop rate (PDR) in one search (search.py), then latency at
10, 50 and 90% of PDR (docs/ndr.md). First the generator's own ceiling: the same search on the
direct topology (client and server on one link), whose PDR at each frame size is the highest
rate offered to the gateways; a result at that ceiling is the generator's, and says so.

Frame sizes are RFC 2544's: the Ethernet frame the client sends (FCS included), whose inner IP
packet is 18 bytes shorter. On transit the tunnel adds its overhead (overhead()). Each search
of one gateway configuration at one frame size builds the topology from scratch and leaves one
record, searches/<point>-f<size>.json: every trial, the result, the gateway's telemetry and
the CPU samples of the whole search. ndr_report.py makes the report."""

import contextlib
import dataclasses
import datetime
import json
import os
import re
import subprocess
import time

from . import cpu, files, inifile, limits, records, scenario, search, units
from .bed import NamespaceBed
from .common import TOPO, Failure, deferred_signals, log, run
from .common import TRAFFIC_PORT as PORT
from .drivers import DRIVERS
from .hosts import Netns
from .point import pinned, wait_listening

NDR_FORMAT = 1             # searches/*.json and an NDR meta.json: the version of their layout
ETHERNET = 18              # Ethernet header and FCS: RFC 2544's frame sizes count both
ETHERNET_MIN = 64          # a shorter frame is padded to this
WIRE_GAP = 20              # preamble and inter-frame gap: what a frame costs on a wire beyond itself
IP_HEADER = {4: 20, 6: 40}
UDP_HEADER = 8
PAYLOAD_MIN = 18           # tunbed-traffic's short header (PROTO_UDP_SHORT_HLEN)
DEFAULT_SIZES = [64, 512, 1280]
FULL_SIZES = [64, 128, 256, 512, 1024, 1280, 1518]  # RFC 2544, section 9.1
FRACTIONS = (0.1, 0.5, 0.9)  # of PDR, where latency is measured (as CSIT does)
SAMPLE_HZ = 10             # CPU samples a second: a 1 s trial gets ten
SAMPLES_PER_S = 1000       # latency samples a second of a trial (every N-th datagram)
SAMPLE_EVERY_MIN = 100     # at most one datagram in this many asks for a reply
TRIAL_GRACE_S = 60         # a trial's client beyond its duration (start, results) at most
DIRECT = "direct"          # the pseudo-gateway of the ceiling: no gateway at all
DIRECT_MAX_RATE = 2e7      # where the ceiling's search starts: above any rate a host's stack
                           # sends (10GbE carries 14.88 million 64-byte frames a second)


def overhead(gateway, mode, family):
    """Bytes a gateway's tunnel adds to each inner IP packet on transit (its driver's
    overhead()), or None if unknown."""
    if gateway == DIRECT:
        return 0
    driver = DRIVERS.get(gateway)
    return driver.overhead(mode, IP_HEADER[family]) if driver else None


def frame(size, gateway, mode, family, transit_mtu, lan_mtu):
    """The frame sizes of one search: `lan` (asked: the client's Ethernet frame), `inner_ip`,
    `udp_payload` (tunbed-traffic's --size), `transit` (the Ethernet frame the tunnel puts on
    transit), `overhead` and `tunnel_mtu`. Raises ValueError with one line for a size the
    generator cannot build or the tunnel cannot carry."""
    inner = size - ETHERNET
    payload = inner - IP_HEADER[family] - UDP_HEADER
    smallest = PAYLOAD_MIN + UDP_HEADER + IP_HEADER[family] + ETHERNET
    if payload < PAYLOAD_MIN:
        raise ValueError(f"frame size {size} is below the smallest frame tunbed-traffic sends "
                         f"over IPv{family}: {smallest} bytes (IP, UDP and its {PAYLOAD_MIN}-byte "
                         "header)")
    oh = overhead(gateway, mode, family)
    if oh is None:
        raise ValueError(f"gateway {gateway}: its tunnel overhead is not known to tunbed ndr "
                         "(its driver's overhead(), scripts/tunbedlib/drivers/)")
    what = gateway if mode == "-" else f"{gateway} {mode}"
    if inner > lan_mtu:
        raise ValueError(f"frame size {size} is too big for the LAN: its inner IP packet "
                         f"({inner} bytes) exceeds the link MTU {lan_mtu}")
    if inner > transit_mtu - oh:
        raise ValueError(f"frame size {size} is too big for {what}: its inner IP packet "
                         f"({inner} bytes) exceeds the tunnel MTU {transit_mtu - oh} (transit "
                         f"MTU {transit_mtu} - {oh} of tunnel headers)")
    return {"lan": size, "inner_ip": inner, "udp_payload": payload, "overhead": oh,
            "transit": max(ETHERNET_MIN, inner + oh + ETHERNET), "tunnel_mtu": transit_mtu - oh,
            "family": family}


def parse_rate(v, what):
    """Datagrams a second (units.rate): '800000', '800k', '1.5m'; 1 to 100 million."""
    x = units.rate(v, what, "pps")
    if not 1 <= x <= 1e8:
        raise ValueError(f"bad value '{v}' for {what}: expected 1 to 100m datagrams a second")
    return x


@dataclasses.dataclass
class Ndr:
    """What an NDR run searches, beyond the scenario's gateways, modes, workers, mtu and time
    (the final trials' duration)."""
    sizes: list = dataclasses.field(default_factory=lambda: list(DEFAULT_SIZES))
    flows: int = 8             # UDP sessions, each its own source port
    width: float = 0.02        # the goal width at the final duration
    pdr_loss: float = 0.5      # percent
    initial_time: float = 1.0  # the first phase's trials, seconds
    min_rate: float = 1000.0
    max_rate: float = 0.0      # 0: the generator's ceiling
    direct_topology: str = "direct"
    ceiling_from: str = ""     # a results directory whose direct searches are the ceiling


def _sizes(v):
    return sorted(inifile.ints(v, 1, 65535, "sizes"))


NDR_SETTERS = {
    "sizes": lambda n, v: setattr(n, "sizes", _sizes(v)),
    "flows": lambda n, v: setattr(n, "flows", inifile.ints(v, 1, 1000, "flows")[0]),
    "width": lambda n, v: setattr(n, "width", inifile.number(v, 0.001, 0.5, "width")),
    "pdr_loss": lambda n, v: setattr(n, "pdr_loss", inifile.number(v, 0, 50, "pdr_loss")),
    "initial_time": lambda n, v: setattr(n, "initial_time",
                                         inifile.number(v, 0.1, 3600, "initial_time")),
    "min_rate": lambda n, v: setattr(n, "min_rate", parse_rate(v, "min_rate")),
    "max_rate": lambda n, v: setattr(n, "max_rate", parse_rate(v, "max_rate")),
    "direct_topology": lambda n, v: setattr(n, "direct_topology", v),
    "ceiling_from": lambda n, v: setattr(n, "ceiling_from", v),
}
# Scenario keys an NDR run has no use for: refused in a file with an [ndr] section.
NOT_FOR_NDR = ("sessions", "pattern", "rr", "congestion", "wire_audit", "verify", "warmup")


def from_section(sc, path):
    """The Ndr of a scenario's [ndr] section (scenario.py keeps its lines); ScenarioError
    FILE:LINE for a bad key or value, or a [scenario] key that does not apply."""
    nd = Ndr()
    for key in NOT_FOR_NDR:
        if key in sc.lines:
            raise scenario.ScenarioError(f"{path}:{sc.lines[key]}: '{key}' does not apply to an "
                                         "NDR search (its keys are in [ndr])")
    for n, key, value in sc.ndr:
        inifile.apply(NDR_SETTERS, nd, key, value, f"{path}:{n}", scenario.ScenarioError,
                      f"unknown key '{key}' in [ndr]")
    return nd


topology_path = scenario.topology_path


def links(path):
    """{link: {"mtu": int, "addrs": [a.addr values]}} of a topology file, read before anything
    runs (tunbed-topo checks the file itself when it builds it)."""
    out, cur = {}, None
    text = files.read_text(path, limits.SCENARIO_BYTES, scenario.ScenarioError, "topology file")
    for line in text.splitlines():
        line = line.split(" ;")[0].strip()
        m = re.fullmatch(r"\[link\s+(\S+)\]", line)
        if m:
            cur = out.setdefault(m[1], {"mtu": 1500, "addrs": []})
        elif line.startswith("["):
            cur = None
        elif cur is not None and "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            if k == "mtu" and re.fullmatch(r"[0-9]{1,6}", v):
                cur["mtu"] = int(v)
            elif k == "a.addr":
                cur["addrs"] += v.replace(",", " ").split()
    return out


def frames(sc, nd):
    """{(gateway, mode): {size: frame}} for every configuration of the run, direct first;
    ScenarioError (one line, exit 2) for a size one of them cannot take."""
    path = topology_path(sc.topology)
    ls = links(path)
    transit = ls.get("transit")
    if not transit or not transit["addrs"]:
        raise scenario.ScenarioError(f"topology '{sc.topology}': no link 'transit' with "
                                     "addresses (tunbed ndr needs a RAS-shaped topology)")
    family = 6 if ":" in transit["addrs"][0] else 4
    lan = min(ls.get(n, {"mtu": 1500})["mtu"] for n in ("lan-a", "lan-b"))
    wire = links(topology_path(nd.direct_topology)).get("wire", {"mtu": 1500})["mtu"]
    out = {}
    configs = [(DIRECT, "-", wire, wire)] if not nd.ceiling_from else []
    for g in sc.gateways:
        for m in (sc.modes if DRIVERS[g].has_modes else ["-"]):
            for mtu in sc.mtu:
                configs.append((g, m, mtu or transit["mtu"], lan))
    for g, m, tmtu, lmtu in configs:
        for size in nd.sizes:
            try:
                out.setdefault((g, m), {})[size] = frame(size, g, m, family, tmtu, lmtu)
            except ValueError as e:
                raise scenario.ScenarioError(str(e)) from None
    return family, out


class DirectBed(NamespaceBed):
    """The generator alone: client and server on one link (direct.topo, or another file with
    hosts client and server and a link wire)."""

    def __init__(self, topology, family, prefix, pins):
        self.topology, self.family, self.prefix, self.pin_override = topology, family, prefix, pins
        self.roles = {r: [Netns(prefix, r)] for r in ("client", "server")}
        self.clients, self.servers = self.roles["client"], self.roles["server"]

    @contextlib.contextmanager
    def point(self, point):
        topo = topology_path(self.topology)
        try:
            # As NamespaceBed: Ctrl-C waits until the topology is up, inside the try whose
            # finally takes it down again.
            with deferred_signals():
                run([TOPO, "up", topo, "--prefix", self.prefix])
            shown = json.loads(run([TOPO, "show", topo, "--prefix", self.prefix, "--json"]))
            hosts = {h["name"]: h for h in shown["hosts"]}
            if "client" not in hosts or "server" not in hosts:
                raise Failure(f"{topo}: the generator's topology needs hosts client and server")
            addrs = [a.split("/")[0] for i in hosts["server"].get("interfaces", [])
                     if i.get("link") == "wire" for a in i.get("addresses", [])]
            addr = next((a for a in addrs if (":" in a) == (self.family == 6)), None)
            if not addr:
                raise Failure(f"{topo}: the server has no IPv{self.family} address on link "
                              "'wire'")
            self.pair = {"server": addr}
            self.pins = {h: hosts[h]["cpus"] for h in hosts if hosts[h].get("cpus")}
            self.pins.update(self.pin_override)
            for hs in self.roles.values():
                for h in hs:
                    h.open()
            yield self
        finally:
            with deferred_signals():
                for hs in self.roles.values():
                    for h in hs:
                        h.close()
                run([TOPO, "down", topo, "--prefix", self.prefix], check=False)


def udp_counters(h):
    """The Udp line of /proc/net/snmp in a host's namespace: the receiver's socket drops."""
    lines = [ln.split() for ln in h.run(["cat", "/proc/net/snmp"]).splitlines()
             if ln.startswith("Udp:")]
    return dict(zip(lines[0][1:], map(int, lines[1][1:]))) if len(lines) >= 2 else {}


def point_key(point):
    """A search's name without its frame size: gregw-gre-w2, vxlan, direct, gregw-gre-w2-mtu9000."""
    gw = scenario.file_name(point.gateway)
    key = gw if point.mode == "-" else f"{gw}-{point.mode}-w{point.workers}"
    return key + (f"-mtu{point.mtu}" if point.mtu else "")


def sample_every(rate):
    return max(SAMPLE_EVERY_MIN, int(rate // SAMPLES_PER_S))


class Trials:
    """The trials of one search on a bed that is up: each a tunbed-traffic client run, its
    process watched by the CPU sampler, the receiver's socket drops read around it."""

    def __init__(self, bed, nd, fr, sampler, processes):
        self.bed, self.nd, self.fr = bed, nd, fr
        self.sampler, self.processes = sampler, processes

    def __call__(self, rate, duration, purpose="search"):
        h, srv = self.bed.clients[0], self.bed.servers[0]
        args = [self.bed.pair["server"], "--port", str(PORT), "--udp", "--pps", str(int(rate)),
                "--size", str(self.fr["udp_payload"]), "--sessions", str(self.nd.flows),
                "--time", f"{duration:g}", "--sample", str(sample_every(rate)), "--json"]
        before = udp_counters(srv)
        p = h.spawn("traffic-client", pinned(self.bed.pins, "client",
                                             [h.bin("tunbed-traffic"), "client", *args]),
                    stdout=-1)
        self.sampler.watch(p.pid)
        self.processes[str(p.pid)] = "tunbed-traffic client"
        try:
            out, err = p.communicate(timeout=duration + TRIAL_GRACE_S)
        except subprocess.TimeoutExpired:
            p.stop()
            raise Failure(f"tunbed-traffic client: no result within {duration:g} s + "
                          f"{TRIAL_GRACE_S} s") from None
        after = udp_counters(srv)
        try:
            doc = json.loads(out)
        except (TypeError, ValueError):
            raise Failure("tunbed-traffic client: " + ((err or "").strip().splitlines()
                                                       or ["no output"])[-1]) from None
        u = doc.get("udp") or {}
        # InErrors: every datagram the receiver's kernel dropped (a full socket buffer counts
        # in RcvbufErrors too).
        drops = after.get("InErrors", 0) - before.get("InErrors", 0)
        status = p.local.returncode
        # The generator's own shortfalls make a trial say nothing of the gateway: a rate not
        # offered within 1%, datagrams its receiver dropped, a session that failed.
        valid = bool(u.get("offered_ok")) and drops <= 0 and status == 0 and \
            not doc.get("interrupted")
        doc.get("udp", {}).pop("per_session", None)
        return {"purpose": purpose, "sent": u.get("sent", 0), "received": u.get("received", 0),
                "lost": u.get("lost", 0), "valid": valid, "offered_pps": u.get("offered_pps"),
                "offered_ratio": u.get("offered_ratio"), "late": u.get("late"),
                "not_sent": u.get("not_sent"), "receiver_drops": drops,
                "latency": u.get("latency"), "status": status,
                "error": ((err or "").strip().splitlines() or [None])[-1],
                "measure_start_mono_s": doc.get("measure_start_mono_s"),
                "measure_end_mono_s": doc.get("measure_end_mono_s"), "traffic": doc}


def search_one(bed, nd, sc, point, fr, max_rate):
    """One search of one gateway configuration at one frame size, on a bed built for it; the
    raw record."""
    params = search.Params(min_rate=min(nd.min_rate, max_rate / 2), max_rate=max_rate,
                           final_s=sc.time, initial_s=min(nd.initial_time, sc.time),
                           width=nd.width, pdr_loss=nd.pdr_loss / 100)
    rec = {"format": NDR_FORMAT, "kind": "ndr-search",
           "point": point.__dict__ | {"key": point_key(point), "config": point.config()},
           "frame": fr, "flows": nd.flows, "params": dataclasses.asdict(params),
           "started": time.time()}
    driver = server = sampler = None
    with bed.point(point):
        try:
            rec["pins"] = bed.pins
            processes = {}
            sampler = cpu.Sampler(hz=SAMPLE_HZ)
            if point.gateway != DIRECT:
                driver = DRIVERS[point.gateway](bed, point)
                driver.setup()
                for role, pid, label in driver.pids():
                    sampler.watch(pid)
                    processes[str(pid)] = label
            h = bed.servers[0]
            server = h.spawn("traffic-server", pinned(bed.pins, "server", [
                h.bin("tunbed-traffic"), "server", "--port", str(PORT)]))
            wait_listening(h)
            sampler.watch(server.pid)
            processes[str(server.pid)] = "tunbed-traffic server"
            sampler.start()
            trials = Trials(bed, nd, fr, sampler, processes)
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
            sampler.stop()
            rec["gateway"] = driver.telemetry() if driver else None
            labels = driver.thread_labels() if driver else {}
            rec["hosts"] = [{"name": "this machine", "roles": list(bed.roles),
                             "cpu": sampler.export(), "processes": processes,
                             "thread_labels": {str(tid): lb for (_, tid), lb in labels.items()},
                             "clock": {"offset_s": 0.0, "error_s": 0.0}, "facts": None}]
        finally:
            with deferred_signals():
                if server and server.poll() is None:
                    server.stop()
                if sampler:
                    sampler.abort()
                if driver:
                    driver.teardown()
    rec["finished"] = time.time()
    return rec


def load_ceiling(outdir):
    """{frame size: PDR of the direct searches} of an earlier NDR results directory."""
    from . import ndr_report
    recs = [r for r in ndr_report.load_searches(outdir) if r["point"]["gateway"] == DIRECT]
    if not recs:
        raise scenario.ScenarioError(f"{outdir}: no search of the generator alone (direct) to "
                                     "take the ceiling from")
    # A size where the generator found no PDR has no ceiling: check() refuses it.
    return {r["frame"]["lan"]: r["result"]["pdr"]["rate"] for r in recs
            if ((r.get("result") or {}).get("pdr") or {}).get("rate")}


def above_ceiling(nd, ceiling):
    """The line for a --max-rate the generator cannot offer at some frame size, or None."""
    for size in nd.sizes:
        c = ceiling.get(size)
        if c is not None and nd.max_rate > c:
            return (f"--max-rate {nd.max_rate:g} is above the generator's ceiling at {size}-byte "
                    f"frames ({c:g} datagrams/s, measured alone on {nd.direct_topology}): a "
                    "result there would be the generator's, not the gateway's")
    return None


def plan(sc, nd):
    """The searches of a run, in order: the generator alone at every frame size (unless the
    ceiling comes from an earlier run), then every gateway configuration at every size."""
    direct = [] if nd.ceiling_from else [scenario.Point(DIRECT, "-", 0, 0, "udp", nd.flows)]
    gws = [scenario.Point(p.gateway, p.mode, p.workers, p.mtu, "udp", nd.flows)
           for p in scenario.points(dataclasses.replace(sc, sessions=[nd.flows],
                                                        pattern=["udp"]))]
    return [(p, size) for p in direct + list(dict.fromkeys(gws)) for size in nd.sizes]


def check(sc, nd):
    """Everything that can be refused before anything runs (ScenarioError: one line, exit 2);
    returns (family, frames, ceiling)."""
    try:
        search.Params(min_rate=nd.min_rate, max_rate=max(nd.max_rate, nd.min_rate * 2),
                      final_s=sc.time, initial_s=min(nd.initial_time, sc.time), width=nd.width,
                      pdr_loss=nd.pdr_loss / 100).check()
    except ValueError as e:
        raise scenario.ScenarioError(str(e)) from None
    if nd.max_rate and nd.max_rate <= nd.min_rate:
        raise scenario.ScenarioError(f"--max-rate {nd.max_rate:g} is not above --min-rate "
                                     f"{nd.min_rate:g}")
    family, fr = frames(sc, nd)
    ceiling = load_ceiling(nd.ceiling_from) if nd.ceiling_from else {}
    for size in nd.sizes:
        if nd.ceiling_from and size not in ceiling:
            raise scenario.ScenarioError(f"{nd.ceiling_from}: no ceiling measured at "
                                         f"{size}-byte frames")
    line = above_ceiling(nd, ceiling)
    if line:
        raise scenario.ScenarioError(line)
    return family, fr, ceiling


def execute(sc, nd, args, title):
    """Runs an NDR scenario into a new results directory; returns the exit status."""
    from . import ndr_report
    from .bed import parse_pins
    from .runloop import Progress, bootstrap, measure_into, print_reports
    if getattr(args, "hosts", None):
        raise scenario.ScenarioError("tunbed ndr runs in namespaces only (no --hosts yet)")
    pins = parse_pins(args.pin)
    family, fr, ceiling = check(sc, nd)
    bootstrap()
    notes, gateways = [], []
    for g in sc.gateways:
        ok, why = DRIVERS[g].available()
        if ok:
            gateways.append(g)
        else:
            notes.append(f"{g} skipped: {why}")
            log(f"{g} skipped: {why}")
    if sc.gateways and not gateways:
        raise Failure("nothing to run: every gateway was skipped")
    sc.gateways = gateways
    work = plan(sc, nd)
    started = datetime.datetime.now(datetime.timezone.utc)
    outdir = os.path.join(args.results, started.strftime("%Y%m%dT%H%M%SZ") + f"-{sc.name}")
    files.new_dir(outdir, "searches")
    meta = {"format": NDR_FORMAT, "kind": "ndr", "scenario": sc.name, "title": title,
            "topology": sc.topology, "direct_topology": nd.direct_topology, "family": family,
            "time": sc.time, "ndr": dataclasses.asdict(nd), "gateways": sc.gateways,
            "notes": notes, "pins": pins, "prefix": args.prefix,
            "started_utc": started.isoformat()}
    if nd.ceiling_from:
        meta["ceiling"] = {str(k): v for k, v in ceiling.items()}
    progress = Progress(len(work))
    gw_bed = NamespaceBed(sc, args.prefix, pins)
    direct_bed = DirectBed(nd.direct_topology, family, args.prefix, pins)
    refused = None

    def measure_all():
        nonlocal refused
        for i, (p, size) in enumerate(work):
            if p.gateway == DIRECT:
                # Below --max-rate the generator must manage alone, or the gateways are not
                # searched up there (refused below); without it, from far above anything.
                max_rate = nd.max_rate or DIRECT_MAX_RATE
            else:
                # Once the ceiling is known, a --max-rate above it is refused (exit 2): the
                # searches measured so far stay, with their report.
                refused = refused or above_ceiling(nd, ceiling)
                if refused:
                    break
                max_rate = min(nd.max_rate or ceiling[size], ceiling[size])
            progress.show(i, f"{p.config()}, {size}-byte frames")
            rec = search_one(direct_bed if p.gateway == DIRECT else gw_bed, nd, sc, p,
                             fr[(p.gateway, p.mode)][size], max_rate)
            records.write_object(
                os.path.join(outdir, "searches", f"{point_key(p)}-f{size}.json"), rec)
            if p.gateway == DIRECT:
                got = rec["result"]["pdr"]["rate"]
                if not got:
                    raise Failure(f"the generator alone lost over {nd.pdr_loss:g}% of datagrams "
                                  f"at every rate at {size}-byte frames: no ceiling to measure "
                                  "gateways against")
                ceiling[size] = got
        return not refused

    complete, status = measure_into(outdir, meta, progress, measure_all,
                                    lambda: "topology and processes removed")
    if ndr_report.load_searches(outdir):
        for text in ndr_report.write(outdir, meta, complete):
            print(text)
        print_reports(outdir)
    elif not refused:
        log(f"no search finished: nothing to report in {outdir}")
        return status or 1
    if refused:
        log(refused)
        return 2
    return status
