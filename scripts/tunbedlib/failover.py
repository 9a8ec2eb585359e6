"""tunbed failover: the RAS gateway pair, active and passive, and its failover measured
(docs/failover.md; RFC 6201's reset characterisation: lost frames of a constant-rate stream
divided by its rate).

On ras-pair.topo: gregw on gwa and on both gwb1 (active) and gwb2 (passive, hot), FRR (bgpd,
bfdd) on core, gwb1 and gwb2, the health check (health.py) beside each gwb's gregw. During N
verified TCP sessions (pull) and one constant-rate UDP stream, the fault hits gwb1, and after
--failback-after it is repaired; each repeat starts from scratch. failreport.py writes the
results.
"""

import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from . import failreport, files, frr, limits, pair, records, rundir, scenario, units
from .drivers import gregw
from .common import GREGW, ROOT, TOPO, TOPOLOGIES, TRAFFIC, Failure, deferred_signals, log, run
from .common import TRAFFIC_PORT as PORT
from .pair import ASN_PAIR, CLIENT_LAN, GWA, GWB, HOSTS, SERVER, SERVER_LAN, SERVICE

FAULTS = {
    "kill": "kill -9 of gregw",
    "stop": "SIGSTOP of gregw (a hung gateway)",
    "link": "its link down",
    "cut": "its host cut off (every packet dropped, links up)",
}
READY_S = pair.READY_S


# Every option of gregw's modes but the key, which the pair always has (7).
MODE_OPTIONS = tuple(o for o in gregw.OPTIONS if o != "key")


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
            raise scenario.ScenarioError(f"--faults: unknown fault '{(bad or [''])[0]}': "
                                         f"expected some of {', '.join(FAULTS)}")
    for key, lo, hi in (("sessions", 1, 10000), ("repeats", 1, 100), ("workers", 1, 64)):
        v = getattr(args, key)
        if v is not None:
            if not lo <= v <= hi:
                raise scenario.ScenarioError(f"--{key}: '{v}' is not {lo} to {hi}")
            setattr(s, key, v)
    for key, lo, hi in (("fail_at", 1, 600), ("failback_after", 1, 600), ("tail", 1, 600)):
        v = getattr(args, key)
        if v is not None:
            if not lo <= v <= hi:
                raise scenario.ScenarioError(f"--{key.replace('_', '-')}: '{v:g}' is not "
                                             f"{lo} to {hi} seconds")
            setattr(s, key, v)
    if args.udp_rate is not None:
        s.udp_rate = scenario_rate(args.udp_rate)
    if args.mode is not None:
        try:
            gregw.check_mode(args.mode, MODE_OPTIONS, "gregw mode")
        except ValueError as e:
            raise scenario.ScenarioError(f"--mode: {e} (the key is always 7)") from None
        s.mode = args.mode
    s.topology = topology_path(args.topology)
    return s


def check_machine():
    """What needs the packages bootstrap installs: FRR."""
    ok, why = frr.available()
    if not ok:
        raise scenario.ScenarioError(why)


def scenario_rate(text):
    """The UDP stream's rate (units.rate), 8 kbit/s to 10 Gbit/s."""
    try:
        v = units.rate(text, "--udp-rate")
    except ValueError:
        v = 0
    if not 8e3 <= v <= 10e9:
        raise scenario.ScenarioError(f"--udp-rate: '{text}' is not a rate of 8kbit to 10gbit")
    return int(v)


def topology_path(name):
    """The topology file; one without the pair's hosts is refused here, before the build
    (tunbed-topo checks the rest when it builds it)."""
    path = name if os.sep in name or name.endswith(".topo") else \
        os.path.join(TOPOLOGIES, f"{name}.topo")
    try:
        text = files.read_text(path, limits.SCENARIO_BYTES, scenario.ScenarioError,
                               "topology file")
    except scenario.ScenarioError as e:
        raise scenario.ScenarioError(f"--topology: {e}") from None
    hosts = set(re.findall(r"^\s*\[host\s+([^\]\s]+)\s*\]", text, re.M))
    missing = [h for h in HOSTS if h not in hosts]
    if missing:
        raise scenario.ScenarioError(
            f"--topology: {name} has no gateway pair for the failover (no host "
            f"{', '.join(missing)}): use ras-pair")
    return path


class Bed:
    """One repeat's topology and processes; close() removes all of it, in reverse order."""

    def __init__(self, s, prefix, tmp):
        self.s, self.prefix, self.tmp = s, prefix, tmp
        self.frr, self.gregw, self.health, self.others = {}, {}, {}, []
        self.up = False
        self.cut_rules = False
        self.routing = None

    def ns(self, host):
        return f"{self.prefix}-{host}"

    def sh(self, host, *cmd, check=True):
        return run(["ip", "netns", "exec", self.ns(host), *cmd], check=check)

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

    def open(self):
        # Ctrl-C waits until the topology is up (tunbed-topo undoes an interrupted up, and
        # the namespaces must be ours to remove), then unwinds through close().
        with deferred_signals():
            run([TOPO, "up", self.s.topology, "--prefix", self.prefix])
            self.up = True
        self.routing = pair.Routing(self.prefix)
        self.routing.start()
        self.frr = self.routing.frr
        for h in ("gwa", *GWB):
            self.start_gregw(h)
        self.routing.wait_active()
        for h in GWB:
            self.start_health(h)
        self.others.append(self.spawn("server", "server", [TRAFFIC, "server", "--port",
                                                           str(PORT)]))
        self.wait(lambda: self.sh("server", "ss", "-Hltn", f"sport = :{PORT}").strip(),
                  "tunbed-traffic server listening")

    def wait(self, ready, what, timeout=READY_S):
        pair.wait(ready, what, timeout)

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
        self.wait(lambda: p.poll() is not None or self.gregw_stats(host) is not None,
                  f"gregw on {host} answering")
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
        """{label: pid} of the gateways, for the CPU sampler."""
        return {h: p.pid for h, (p, _) in self.gregw.items() if p.poll() is None}

    def close(self):
        # A second Ctrl-C waits until everything is removed.
        with deferred_signals():
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
            if self.up:
                subprocess.run([TOPO, "down", "--prefix", self.prefix], capture_output=True)
                self.up = False


class Watch:
    """Two samplers, each on its own thread so that a slow one never delays the other: every
    20 ms which gateway core routes the service address to; every 100 ms the CPU of every
    core and of every gregw thread."""

    def __init__(self, bed):
        self.bed, self.stop_flag = bed, threading.Event()
        self.routes, self.cpu = [], []
        self.threads = [threading.Thread(target=self.watch_routes, daemon=True),
                        threading.Thread(target=self.watch_cpu, daemon=True)]

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join()

    def watch_routes(self):
        while not self.stop_flag.is_set():
            t = time.monotonic()
            try:
                active = self.bed.active()
            except Exception:  # noqa: BLE001 - a sample lost while the bed goes down
                active = None
            if not self.routes or self.routes[-1][1] != active:
                self.routes.append((round(t, 4), active))
            self.stop_flag.wait(0.02)

    def watch_cpu(self):
        while not self.stop_flag.is_set():
            t = time.monotonic()
            self.cpu.append(cpu_sample(self.bed.pids()))
            self.stop_flag.wait(max(0.1 - (time.monotonic() - t), 0.001))


def cpu_sample(pids):
    """{"t", "cores": [ticks busy, ticks total] per CPU, "threads": {label: [[tid, ticks,
    cpu]]}}, ticks as /proc gives them."""
    t = time.monotonic()
    cores = []
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + v[4]
                cores.append([sum(v[:8]) - idle, sum(v[:8])])
    threads = {}
    for label, pid in pids.items():
        rows = []
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            tids = []
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
                rows.append([int(tid), int(st[11]) + int(st[12]), int(st[36])])
            except (OSError, IndexError, ValueError):
                pass
        threads[label] = rows
    return {"t": round(t, 4), "cores": cores, "threads": threads}


def one_run(s, fault, repeat, prefix, outdir):
    # Its pids decide what `tunbed down` signals: root's, under /run/tunbed (rundir.py).
    tmp = rundir.make(pair.FAILOVER_STATE, prefix)
    bed = Bed(s, prefix, tmp)
    watch = None
    try:
        bed.open()
        total = s.fail_at + s.failback_after + s.tail
        split = s.fail_at + s.failback_after / 2
        tcp = bed.spawn("client", "tcp", [TRAFFIC, "client", SERVER, "--port", str(PORT),
                                          "--sessions", str(s.sessions), "--pattern", "pull",
                                          "--verify", "--time", f"{total:g}", "--interval",
                                          "0.1", "--json"])
        udp1 = bed.spawn("client", "udp1", [TRAFFIC, "client", SERVER, "--port", str(PORT),
                                            "--udp", "--rate", str(s.udp_rate), "--size",
                                            "1000", "--time", f"{split:g}", "--json"])
        bed.others += [tcp, udp1]
        watch = Watch(bed)
        watch.start()
        t0 = time.monotonic()
        sleep_until(t0 + s.fail_at, [tcp, udp1])
        t_fault = time.monotonic()
        bed.fault(fault)
        sleep_until(t_fault + s.failback_after / 2, [tcp])
        try:
            udp1.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Failure("the first UDP client did not end within 30 s of its time") from None
        udp2 = bed.spawn("client", "udp2", [TRAFFIC, "client", SERVER, "--port", str(PORT),
                                            "--udp", "--rate", str(s.udp_rate), "--size",
                                            "1000", "--time", f"{total - split - 0.5:g}",
                                            "--json"])
        bed.others.append(udp2)
        sleep_until(t_fault + s.failback_after, [tcp])
        t_repair = time.monotonic()
        bed.repair(fault)
        for p in (tcp, udp2):
            try:
                p.wait(timeout=total + 30)
            except subprocess.TimeoutExpired:
                raise Failure("a traffic client did not end within 30 s of its time") from None
        time.sleep(0.1)
        watch.stop()
        rec = {
            "format": 1, "fault": fault, "repeat": repeat, "settings": vars_of(s),
            "t_start": t0, "t_fault": t_fault, "t_repair": t_repair,
            "routes": watch.routes, "cpu": watch.cpu,
            "tcp": load_json(os.path.join(tmp, "tcp.out")),
            "udp": [load_json(os.path.join(tmp, "udp1.out")),
                    load_json(os.path.join(tmp, "udp2.out"))],
            "health": {h: read_lines(os.path.join(tmp, f"health-{h}.out")) for h in GWB},
            "gateways": {h: bed.gregw_stats(h) for h in bed.gregw},
        }
        os.makedirs(os.path.join(outdir, "runs"), exist_ok=True)
        records.write_object(os.path.join(outdir, "runs", f"{fault}-r{repeat}.json"), rec)
        return rec
    finally:
        if watch is not None:
            watch.stop()
        bed.uncut()
        bed.close()
        shutil.rmtree(tmp, ignore_errors=True)


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


def vars_of(s):
    return {k: getattr(s, k) for k in ("faults", "sessions", "repeats", "udp_rate", "fail_at",
                                       "failback_after", "tail", "mode", "workers", "topology")}


def cmd_failover(args):
    from .runloop import bootstrap
    s = parse(args)
    bootstrap()
    check_machine()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    outdir = os.path.join(args.results, f"{stamp}-failover")
    os.makedirs(outdir, exist_ok=True)
    meta = {"format": 1, "scenario": "failover", "settings": vars_of(s), "prefix": args.prefix,
            "started_utc": stamp, "complete": False}
    runs, status = [], 0
    try:
        for repeat in range(1, s.repeats + 1):
            for fault in s.faults:
                log(f"{fault} ({FAULTS[fault]}), repeat {repeat} of {s.repeats}")
                runs.append(one_run(s, fault, repeat, args.prefix, outdir))
        meta["complete"] = True
    except KeyboardInterrupt:
        log("interrupted: everything it started is removed; the report is PARTIAL")
        status = 130
    except Failure as e:
        log(f"{e}; everything it started is removed; the report is PARTIAL")
        status = 1
    meta["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y%m%dT%H%M%SZ")
    records.write_object(os.path.join(outdir, "meta.json"), meta, indent=1)
    for line in failreport.write(outdir, meta, runs):
        print(line)
    print(f"report: {os.path.join(outdir, 'report.md')}")
    return status


def add_parser(sub):
    p = sub.add_parser("failover", help="the RAS gateway pair: fail the active gateway under "
                                        "load and measure the takeover (docs/failover.md)")
    p.add_argument("--faults", metavar="LIST",
                   help=f"some of {', '.join(FAULTS)} (default: all)")
    p.add_argument("--sessions", type=int, metavar="N", help="verified TCP sessions (default 8)")
    p.add_argument("--repeats", type=int, metavar="N", help="repeats of every fault (default 3)")
    p.add_argument("--udp-rate", metavar="RATE", help="the UDP stream's rate (default 20mbit)")
    p.add_argument("--fail-at", type=float, metavar="S", help="seconds before the fault (3)")
    p.add_argument("--failback-after", type=float, metavar="S",
                   help="seconds from the fault to its repair (4)")
    p.add_argument("--tail", type=float, metavar="S", help="seconds after the repair (3)")
    p.add_argument("--mode", metavar="MODE", help="gregw mode (default gre+seq)")
    p.add_argument("--workers", type=int, metavar="N", help="gregw workers (default 1)")
    p.add_argument("--topology", default="ras-pair", help="a pair topology (default ras-pair)")
    p.add_argument("--prefix", default="tb", help="namespace prefix (default tb)")
    p.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR")
    p.set_defaults(func=cmd_failover)
