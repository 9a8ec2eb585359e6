"""tunbed failover: the RAS gateway pair, active and passive, and its failover measured
(docs/failover.md; RFC 6201's reset characterisation: lost frames of a constant-rate stream
divided by its rate), as a scenario kind.

On ras-pair.topo: gregw on gwa and on both gwb1 (active) and gwb2 (passive, hot), FRR (bgpd,
bfdd) on core, gwb1 and gwb2, the health check (health.py) beside each gwb's gregw. Each item
is one fault in one repeat, on a pair built for it from scratch (the bed's point): during N
verified TCP sessions (pull) and one constant-rate UDP stream the fault hits gwb1, and after
--failback-after it is repaired, while core's route to the service address is watched every
20 ms and tunbed-sample takes the CPU of every core and gregw thread every 100 ms.
failover_report.py reports.

Records: runs/FAULT-rREPEAT.json and meta.json, format 2. Format 1 (without `kind`) had the CPU
samples of the runner's own /proc reader under `cpu`; format 2 has tunbed-sample's, one
machine's, under `hosts` as the other kinds do."""

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from .. import bed as beds
from .. import cpu, files, frr, limits, pair, records, rundir, scenario, units
from ..common import GREGW, ROOT, TOPOLOGIES, TRAFFIC, Failure, ScenarioError, deferred_signals
from ..common import TRAFFIC_PORT as PORT
from ..drivers import gregw
from ..pair import ASN_PAIR, CLIENT_LAN, GWA, GWB, HOSTS, SERVER, SERVER_LAN, SERVICE
from ..records import HOST
from ..schema import BOOL, NUM, STR, List, Map, Num, Obj, Opt, Str, Tup
from . import failover_report
from .base import Command, Item, Kind, output_options

FAULTS = {
    "kill": "kill -9 of gregw",
    "stop": "SIGSTOP of gregw (a hung gateway)",
    "link": "its link down",
    "cut": "its host cut off (every packet dropped, links up)",
}
READY_S = pair.READY_S
CPU_HZ = 10  # CPU samples a second: the takeover is a few hundred ms
ROUTE_EVERY_S = 0.02  # core's route to the service address, looked at this often
# Every option of gregw's modes but the key, which the pair always has (7).
# The key is the pair's own (7); +frames is the matrix bed's (its two transit devices).
MODE_OPTIONS = tuple(o for o in gregw.OPTIONS if o not in ("key", "frames"))
GATEWAYS = ("gwa", *GWB)


class Settings:
    faults = ("kill", "stop", "link", "cut")
    sessions = 8
    repeats = 3
    udp_rate = 20_000_000
    fail_at = 3.0
    failback_after = 4.0
    tail = 3.0
    mode = "gre+seq"
    workers = 1
    topology = None


def parse(args):
    """Settings from the command line; a bad value raises ScenarioError (one line, exit 2)."""
    s = Settings()
    if args.faults:
        s.faults = tuple(f.strip() for f in args.faults.split(",") if f.strip())
        bad = [f for f in s.faults if f not in FAULTS]
        if bad or not s.faults:
            raise ScenarioError(f"--faults: unknown fault '{(bad or [''])[0]}': expected some "
                                f"of {', '.join(FAULTS)}")
    for key, lo, hi in (("sessions", 1, 10000), ("repeats", 1, 100), ("workers", 1, 64)):
        v = getattr(args, key)
        if v is not None:
            if not lo <= v <= hi:
                raise ScenarioError(f"--{key}: '{v}' is not {lo} to {hi}")
            setattr(s, key, v)
    for key, lo, hi in (("fail_at", 1, 600), ("failback_after", 1, 600), ("tail", 1, 600)):
        v = getattr(args, key)
        if v is not None:
            if not lo <= v <= hi:
                raise ScenarioError(f"--{key.replace('_', '-')}: '{v:g}' is not {lo} to {hi} "
                                    "seconds")
            setattr(s, key, v)
    if args.udp_rate is not None:
        s.udp_rate = scenario_rate(args.udp_rate)
    if args.mode is not None:
        try:
            gregw.check_mode(args.mode, MODE_OPTIONS, "gregw mode")
        except ValueError as e:
            raise ScenarioError(f"--mode: {e} (the key is always 7)") from None
        s.mode = args.mode
    s.topology = topology_path(args.topology)
    return s


def scenario_rate(text):
    """The UDP stream's rate (units.rate), 8 kbit/s to 10 Gbit/s."""
    try:
        v = units.rate(text, "--udp-rate")
    except ValueError:
        v = 0
    if not 8e3 <= v <= 10e9:
        raise ScenarioError(f"--udp-rate: '{text}' is not a rate of 8kbit to 10gbit")
    return int(v)


def topology_path(name):
    """The topology file; one without the pair's hosts is refused here, before the build
    (tunbed-topo checks the rest when it builds it)."""
    path = name if os.sep in name or name.endswith(".topo") else \
        os.path.join(TOPOLOGIES, f"{name}.topo")
    try:
        text = files.read_text(path, limits.SCENARIO_BYTES, ScenarioError, "topology file")
    except ScenarioError as e:
        raise ScenarioError(f"--topology: {e}") from None
    hosts = scenario.topology_hosts(text)
    missing = [h for h in HOSTS if h not in hosts]
    if missing:
        raise ScenarioError(f"--topology: {name} has no gateway pair for the failover (no host "
                            f"{', '.join(missing)}): use ras-pair")
    return path


def settings_of(s):
    return {k: getattr(s, k) for k in ("faults", "sessions", "repeats", "udp_rate", "fail_at",
                                       "failback_after", "tail", "mode", "workers", "topology")}


class Pair:
    """One item's pair, up (bed's point): its processes, the faults and their repairs."""

    def __init__(self, s, prefix, tmp):
        self.s, self.prefix, self.tmp = s, prefix, tmp
        self.frr, self.gregw, self.health, self.others = {}, {}, {}, []
        self.cut_rules = False
        self.routing = None

    def ns(self, host):
        return f"{self.prefix}-{host}"

    def sh(self, host, *cmd, check=True):
        return beds.run(["ip", "netns", "exec", self.ns(host), *cmd], check=check)

    def spawn(self, host, name, cmd, out=None):
        f = open(os.path.join(self.tmp, f"{name}.out" if out is None else out), "w")
        err = open(os.path.join(self.tmp, f"{name}.err"), "w")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(host), *cmd], stdout=f,
                             stderr=err, stdin=subprocess.DEVNULL)
        f.close()
        err.close()
        # For `tunbed down` after a runner that was killed (pair.down), which takes only the
        # PID from it (the word is for a reader).
        with open(os.path.join(self.tmp, "pids"), "a") as pf:
            pf.write(f"{p.pid} {cmd[0]}\n")
        return p

    def start(self):
        self.routing = pair.Routing(self.prefix)
        self.routing.start()
        self.frr = self.routing.frr
        for h in GATEWAYS:
            self.start_gregw(h)
        self.routing.wait_active()
        for h in GWB:
            self.start_health(h)
        self.others.append(self.spawn("server", "server", [TRAFFIC, "server", "--port",
                                                           str(PORT)]))
        pair.wait(lambda: self.sh("server", "ss", "-Hltn", f"sport = :{PORT}").strip(),
                  "tunbed-traffic server listening", READY_S)

    def gregw_cmd(self, host):
        sock = os.path.join(self.tmp, f"{host}.sock")
        if host == "gwa":
            ends = ["--remote", SERVICE, "--addr", "198.19.0.1/24", "--route", SERVER_LAN]
        else:
            ends = ["--local", SERVICE, "--remote", GWA, "--addr", "198.19.0.2/24",
                    "--route", CLIENT_LAN]
        cmd = [GREGW, *ends, *gregw.flags(self.s.mode + "+key"), "--ctl", sock,
               "--workers", str(self.s.workers)]
        return cmd, sock

    def start_gregw(self, host):
        cmd, sock = self.gregw_cmd(host)
        p = self.spawn(host, f"gregw-{host}", cmd)
        self.gregw[host] = (p, sock)
        pair.wait(lambda: p.poll() is not None or self.gregw_stats(host) is not None,
                  f"gregw on {host} answering", READY_S)
        if p.poll() is not None:
            with open(os.path.join(self.tmp, f"gregw-{host}.err")) as f:
                last = (f.read().strip().splitlines() or ["no message"])[-1]
            raise Failure(f"gregw on {host} did not start: {last}")

    def gregw_stats(self, host):
        p = subprocess.run([GREGW, "ctl", self.gregw[host][1], "stats"], capture_output=True,
                           text=True, timeout=5)
        try:
            return json.loads(p.stdout) if p.returncode == 0 else None
        except ValueError:
            return None

    def start_health(self, host):
        _, sock = self.gregw[host]
        self.health[host] = self.spawn(host, f"health-{host}", [
            sys.executable, os.path.join(ROOT, "scripts", "tunbedlib", "health.py"),
            "--ctl", sock, "--vty-socket", self.frr[host].dir, "--asn", str(ASN_PAIR),
            "--service", f"{SERVICE}/32", "--up"])

    def active(self):
        return self.routing.active()

    # The faults and their repairs; each returns at once.
    def fault(self, kind):
        p, _ = self.gregw["gwb1"]
        if kind == "kill":
            p.send_signal(signal.SIGKILL)
            p.wait()
        elif kind == "stop":
            p.send_signal(signal.SIGSTOP)
        elif kind == "link":
            self.sh("gwb1", "ip", "link", "set", "dev", "t1", "down")
        elif kind == "cut":
            # A blackhole rule ahead of every table, also the local one: nothing comes in or
            # goes out, while the link keeps its carrier (no fast failover from the kernel).
            self.sh("gwb1", "ip", "rule", "add", "pref", "0", "blackhole")
            self.sh("gwb1", "ip", "rule", "del", "pref", "0", "table", "local")
            self.sh("gwb1", "ip", "rule", "add", "pref", "1", "table", "local")
            self.cut_rules = True

    def repair(self, kind):
        p, _ = self.gregw["gwb1"]
        if kind == "kill":
            self.start_gregw("gwb1")
        elif kind == "stop":
            p.send_signal(signal.SIGCONT)
        elif kind == "link":
            self.sh("gwb1", "ip", "link", "set", "dev", "t1", "up")
        elif kind == "cut":
            self.uncut()

    def uncut(self):
        if self.cut_rules:
            self.sh("gwb1", "ip", "rule", "add", "pref", "0", "table", "local", check=False)
            self.sh("gwb1", "ip", "rule", "del", "pref", "1", "table", "local", check=False)
            self.sh("gwb1", "ip", "rule", "del", "pref", "0", "blackhole", check=False)
            self.cut_rules = False

    def pids(self):
        """{host: pid} of the gateways' gregw that run."""
        return {h: p.pid for h, (p, _) in self.gregw.items() if p.poll() is None}

    def stop(self):
        """Everything started here ended (a stopped gregw continued first), FRR stopped."""
        self.uncut()
        procs = list(self.health.values()) + list(self.others)
        for p, _ in self.gregw.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
            procs.append(p)
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.routing is not None:
            self.routing.stop()


class Bed(beds.ItemBed):
    """The bed of a failover run: for each item, the pair topology built and its processes
    started, and all of it removed after, in reverse order."""
    undone = "everything it started is removed"

    def __init__(self, s, prefix):
        self.s, self.prefix = s, prefix

    @contextlib.contextmanager
    def point(self, item):
        # Its pids decide what `tunbed down` signals: root's, under /run/tunbed (rundir.py).
        tmp = rundir.make(pair.FAILOVER_STATE, self.prefix)
        try:
            with beds.topology(self.s.topology, self.prefix, show=False):
                p = Pair(self.s, self.prefix, tmp)
                try:
                    p.start()
                    yield p
                finally:
                    # A second Ctrl-C waits until everything is removed.
                    with deferred_signals():
                        p.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class Routes:
    """Which gateway core routes the service address to, every ROUTE_EVERY_S on a thread of
    its own: [(t, gwb1 | gwb2 | None)] at each change."""

    def __init__(self, p):
        self.pair, self.stop_flag, self.routes = p, threading.Event(), []
        self.thread = threading.Thread(target=self.watch, daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stop_flag.set()
        self.thread.join()

    def watch(self):
        while not self.stop_flag.is_set():
            t = time.monotonic()
            try:
                active = self.pair.active()
            except Exception:  # noqa: BLE001 - a sample lost while the bed goes down
                active = None
            if not self.routes or self.routes[-1][1] != active:
                self.routes.append((round(t, 4), active))
            self.stop_flag.wait(ROUTE_EVERY_S)


def sleep_until(t, procs):
    """Until t; a client that ends before is not a failure of the run (sessions that reset
    are a result), but the waiting ends with it."""
    while time.monotonic() < t and all(p.poll() is None for p in procs):
        time.sleep(min(0.02, max(t - time.monotonic(), 0)))


def read_lines(path):
    try:
        with open(path) as f:
            return [json.loads(ln) for ln in f if ln.strip()]
    except (OSError, ValueError):
        return []


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def clients(p, s, total, split):
    """The verified TCP sessions and the first UDP stream, started."""
    tcp = p.spawn("client", "tcp", [TRAFFIC, "client", SERVER, "--port", str(PORT),
                                    "--sessions", str(s.sessions), "--pattern", "pull",
                                    "--verify", "--time", f"{total:g}", "--interval", "0.1",
                                    "--json"])
    udp1 = p.spawn("client", "udp1", [TRAFFIC, "client", SERVER, "--port", str(PORT), "--udp",
                                      "--rate", str(s.udp_rate), "--size", "1000", "--time",
                                      f"{split:g}", "--json"])
    p.others += [tcp, udp1]
    return tcp, udp1


def wait_for(proc, timeout, what):
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what} did not end within 30 s of its time") from None


def run_fault(s, fault, p, sampler, processes):
    """The fault's timeline on a pair that is up: the load, the fault at fail_at, the second
    UDP stream from half way to the repair, the repair failback_after later, the tail.
    Returns (t_start, t_fault, t_repair, routes)."""
    total = s.fail_at + s.failback_after + s.tail
    split = s.fail_at + s.failback_after / 2
    tcp, udp1 = clients(p, s, total, split)
    routes = Routes(p)
    routes.start()
    try:
        t0 = time.monotonic()
        sleep_until(t0 + s.fail_at, [tcp, udp1])
        t_fault = time.monotonic()
        p.fault(fault)
        sleep_until(t_fault + s.failback_after / 2, [tcp])
        wait_for(udp1, 30, "the first UDP client")
        udp2 = p.spawn("client", "udp2", [TRAFFIC, "client", SERVER, "--port", str(PORT),
                                          "--udp", "--rate", str(s.udp_rate), "--size", "1000",
                                          "--time", f"{total - split - 0.5:g}", "--json"])
        p.others.append(udp2)
        sleep_until(t_fault + s.failback_after, [tcp])
        t_repair = time.monotonic()
        p.repair(fault)
        if fault == "kill":
            # The new gregw of gwb1 is the active's CPU from now on.
            pid = p.gregw["gwb1"][0].pid
            sampler.watch(pid)
            processes[str(pid)] = "gregw gwb1"
        for proc in (tcp, udp2):
            wait_for(proc, total + 30, "a traffic client")
        time.sleep(0.1)
    finally:
        routes.stop()
    return t0, t_fault, t_repair, routes.routes


def measure(s, fault, repeat, p):
    """One fault in one repeat on a pair that is up; the raw record."""
    sampler = cpu.Sampler(hz=CPU_HZ)
    processes = {}
    for host, pid in p.pids().items():
        sampler.watch(pid)
        processes[str(pid)] = f"gregw {host}"
    sampler.start()
    try:
        t0, t_fault, t_repair, routes = run_fault(s, fault, p, sampler, processes)
        sampler.stop()
    finally:
        sampler.abort()
    return {
        "fault": fault, "repeat": repeat, "settings": settings_of(s),
        "t_start": t0, "t_fault": t_fault, "t_repair": t_repair, "routes": routes,
        "hosts": [{"name": records.ONE_MACHINE, "roles": list(HOSTS), "cpu": sampler.export(),
                   "processes": processes, "thread_labels": {},
                   "clock": {"offset_s": 0.0, "error_s": 0.0}, "facts": None}],
        "tcp": load_json(os.path.join(p.tmp, "tcp.out")),
        "udp": [load_json(os.path.join(p.tmp, "udp1.out")),
                load_json(os.path.join(p.tmp, "udp2.out"))],
        "health": {h: read_lines(os.path.join(p.tmp, f"health-{h}.out")) for h in GWB},
        "gateways": {h: p.gregw_stats(h) for h in p.gregw},
    }


def cpu_of(samples):
    """Format 1's CPU samples (the runner's own /proc reader: per core [busy, total] ticks,
    per gateway [tid, ticks, cpu]) as one machine of tunbed-sample's, each gateway's process
    the one of its lowest thread id (its main thread's, which is its PID)."""
    pids = {}
    for smp in samples:
        for gw, rows in smp["threads"].items():
            for tid, _, _ in rows:
                pids[gw] = min(pids.get(gw, tid), tid)
    out = [{"t": smp["t"],
            "cpus": {str(i): {"user": busy, "idle": total - busy}
                     for i, (busy, total) in enumerate(smp["cores"])},
            "threads": {str(tid): [pids[gw], "gregw", ticks, c]
                        for gw, rows in smp["threads"].items() for tid, ticks, c in rows}}
           for smp in samples]
    return out, {str(pid): f"gregw {gw}" for gw, pid in pids.items()}


# What the report reads (failover_report.py), each field as it uses it.
TCP = Obj({"measure_start_mono_s": NUM, "measure_end_mono_s": NUM,
           "complete": Opt(BOOL), "config": Obj({"sessions": Num(0, whole=True)}),
           "intervals": List(Obj({"start": NUM, "end": NUM, "bytes": NUM},
                                 need=("start", "end", "bytes"))),
           "tcp": Obj({"failed": Num(0), "retransmits": Opt(NUM), "bits_per_second": NUM,
                       "verify": Obj({"mismatches": Opt(NUM)}),
                       "per_session": List(Obj({"received": NUM}))})})
UDP = Opt(Obj({"udp": Obj({"lost": Num(0)})}))
RUN = {"fault": Str("|".join(FAULTS), "a fault: " + ", ".join(FAULTS)),
       "repeat": Num(1, whole=True),
       "settings": Obj({"udp_rate": Num(1), "sessions": Num(0, whole=True)},
                       need=("udp_rate", "sessions")),
       "t_start": NUM, "t_fault": NUM, "t_repair": NUM,
       "routes": List(Tup(NUM, Opt(Str("gwb1|gwb2", "gwb1 or gwb2")))),
       "tcp": Opt(TCP), "udp": Tup(UDP, UDP),
       "health": Map(List(Obj({"t": NUM, "state": STR}, need=("t", "state")))),
       "gateways": Map(Opt(Obj({"seq": Opt(Obj({"resyncs": Opt(NUM),
                                                "out_of_window": Opt(NUM)})),
                                "total": Opt(Obj({"tun_tx_packets": Opt(NUM)}))})))}
NEED = ("fault", "repeat", "settings", "t_start", "t_fault", "t_repair", "routes", "tcp", "udp",
        "health")
# Format 1's CPU samples: per core [busy, total] ticks, per gateway its threads [tid, ticks, cpu].
CPU_1 = List(Obj({"t": NUM, "cores": List(Tup(NUM, NUM), most=limits.RECORD_CPUS),
                  "threads": Map(List(Tup(Num(1, whole=True), NUM, Num(0, whole=True))),
                                 key="gwa|gwb1|gwb2", keywhat="gwa, gwb1 or gwb2")},
                 need=("t", "cores", "threads")))
RUN_SCHEMA = {1: Obj(RUN | {"cpu": CPU_1}, need=(*NEED, "cpu")),
              2: Obj(RUN | {"kind": Str("failover", "failover"),
                            "hosts": List(HOST, most=limits.RECORD_HOSTS)},
                     need=(*NEED, "kind"))}
META_SCHEMA = Obj({"kind": Opt(Str("failover", "failover")),
                   "settings": Obj({"mode": STR, "workers": NUM, "sessions": NUM,
                                    "udp_rate": NUM, "fail_at": NUM, "failback_after": NUM,
                                    "tail": NUM, "repeats": NUM},
                                   need=("mode", "workers", "sessions", "udp_rate", "fail_at",
                                         "failback_after", "tail", "repeats"))},
                  need=("settings",))


def arguments(p):
    p.add_argument("--faults", metavar="LIST",
                   help=f"some of {', '.join(FAULTS)} (default: all)")
    p.add_argument("--sessions", type=int, metavar="N", help="verified TCP sessions (default 8)")
    p.add_argument("--repeats", type=int, metavar="N", help="repeats of every fault (default 3)")
    p.add_argument("--udp-rate", metavar="RATE", help="the UDP stream's rate (default 20mbit)")
    p.add_argument("--fail-at", type=float, metavar="S",
                   help=f"seconds before the fault (default {Settings.fail_at:g})")
    p.add_argument("--failback-after", type=float, metavar="S",
                   help="seconds from the fault to its repair "
                        f"(default {Settings.failback_after:g})")
    p.add_argument("--tail", type=float, metavar="S",
                   help=f"seconds after the repair (default {Settings.tail:g})")
    p.add_argument("--mode", metavar="MODE", help="gregw mode (default gre+seq)")
    p.add_argument("--workers", type=int, metavar="N", help="gregw workers (default 1)")
    p.add_argument("--topology", default="ras-pair", help="a pair topology (default ras-pair)")
    output_options(p)


@dataclasses.dataclass
class Plan:
    s: Settings
    prefix: str
    name: str = "failover"


class Failover(Kind):
    name = "failover"
    FORMAT = 2
    UNNUMBERED = None  # format 1 wrote its number
    RECORD_NEEDS = ("fault", "repeat")
    commands = (Command("failover", "the RAS gateway pair: fail the active gateway under load "
                                    "and measure the takeover (docs/failover.md)", arguments),)

    def check(self, args):
        return Plan(parse(args), args.prefix)

    def needs(self, plan):
        return ["failover"]

    def prepare(self, plan):
        ok, why = frr.available()  # FRR comes with bootstrap
        if not ok:
            raise ScenarioError(why)

    def items(self, plan):
        s = plan.s
        return [Item(f"{fault}-r{repeat}", f"{fault} ({FAULTS[fault]}), repeat {repeat} of "
                     f"{s.repeats}", fault, repeat)
                for repeat in range(1, s.repeats + 1) for fault in s.faults]

    def meta(self, plan):
        return {"scenario": "failover", "title": failover_report.TITLE,
                "settings": settings_of(plan.s), "prefix": plan.prefix}

    def bed(self, plan):
        return Bed(plan.s, plan.prefix)

    def measure(self, plan, p, item):
        return measure(plan.s, item.point, item.repeat, p)

    def record_schema(self, fmt):
        return RUN_SCHEMA[fmt]

    def meta_schema(self, fmt):
        return META_SCHEMA

    def upgrade_record(self, doc, fmt):
        doc = dict(doc, kind=self.name)
        samples, processes = cpu_of(doc.pop("cpu"))
        doc["hosts"] = [{"name": records.ONE_MACHINE, "roles": list(HOSTS),
                         "cpu": {"hz": CPU_HZ, "ticks_per_second": 100, "samples": samples},
                         "processes": processes, "thread_labels": {},
                         "clock": {"offset_s": 0.0, "error_s": 0.0}, "facts": None}]
        return doc

    def upgrade_meta(self, doc, fmt):
        return dict(doc, kind=self.name)

    def check_records(self, recs, paths):
        records.one_each(recs, paths, lambda r: (r["fault"], r["repeat"]),
                         lambda r: f"repeat {r['repeat']} of fault {r['fault']}")

    def report(self, meta, recs, complete):
        return failover_report.document(meta, recs, complete)


KIND = Failover()
