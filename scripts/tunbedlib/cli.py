"""The tunbed command: ras, run, compare, intranet, ndr, report, down, provision, failover."""

import argparse
import datetime
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from . import bed as beds
from . import drivers, failover, files, intranet, inventory, ndr, provision, records, report
from . import scenario
from .common import ROOT, TOPO, Failure, GatewayFailure, log, run
from .drivers import DRIVERS, gregw
from .point import measure
from .bed import parse_pins
from .runloop import Progress, bootstrap, measure_into, opened, print_reports

DEFAULT_PREFIX = "tb"


def ras_scenario(args):
    sc = scenario.Scenario(name="ras", topology=args.topology, gateways=["gregw"])
    if args.full:
        sc.sessions, sc.workers, sc.time, sc.repeats = [1, 2, 4, 8, 16, 32, 64], [1, 2], 10, 3
    else:
        # About five minutes on two cores: the ends and the middle of the session range.
        sc.sessions, sc.workers, sc.time, sc.repeats = [1, 8, 64], [1, 2], 8, 3
    return sc


def apply_overrides(sc, args):
    for key in ("sessions", "workers", "repeats", "time", "warmup", "modes", "congestion"):
        v = getattr(args, key, None)
        if v is not None:
            try:
                scenario.SETTERS[key](sc, str(v))
            except ValueError as e:
                raise scenario.ScenarioError(f"--{key}: {e}") from None
    if getattr(args, "no_rr", False):
        sc.rr = False
    if getattr(args, "wire_audit", False):
        sc.wire_audit = True
    if getattr(args, "verify", False):
        sc.verify = True
    return sc


def execute(sc, args, title):
    """Runs a scenario into a new results directory; returns the process exit status."""
    # What the command line asks is checked before anything is installed or built.
    pins = parse_pins(args.pin)
    if sc.congestion:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            available = f.read().split()
        if sc.congestion not in available:
            raise scenario.ScenarioError(f"congestion control '{sc.congestion}' is not "
                                         f"available here (available: {', '.join(available)})")
    scenario.points(sc)  # the matrix's size and keys, before anything is installed
    hosts_file = getattr(args, "hosts", None)
    inv = None
    if hosts_file:
        # The inventory is checked before anything is installed, built or connected to.
        need = inventory.ROLES if any(DRIVERS[g].needs_gateways for g in sc.gateways) \
            else ("client", "server")
        inv = inventory.parse(hosts_file, need)
        if any(p for p in sc.mtu if p):
            raise scenario.ScenarioError("a transit MTU (mtu =) is the topology's: the hosts "
                                         "mode uses the hosts' own")
    bootstrap()
    prefix = args.prefix
    notes, gateways = [], []
    for g in sc.gateways:
        ok, why = DRIVERS[g].available(hosts_mode=bool(inv))
        if ok:
            gateways.append(g)
        else:
            notes.append(f"{g} skipped: {why}")
            log(f"{g} skipped: {why}")
    sc.gateways = gateways
    pts = scenario.points(sc)
    if not pts:
        raise Failure("nothing to run: every gateway was skipped")
    started = datetime.datetime.now(datetime.timezone.utc)
    outdir = os.path.join(args.results, started.strftime("%Y%m%dT%H%M%SZ") + f"-{sc.name}")
    files.new_dir(outdir, "runs")
    meta = {"format": records.FORMAT, "scenario": sc.name, "title": title,
            "topology": sc.topology, "time": sc.time,
            "warmup": sc.warmup, "repeats": sc.repeats, "started_utc": started.isoformat(),
            "gateways": sc.gateways, "notes": notes, "pins": pins, "prefix": prefix,
            "wire_audit": sc.wire_audit, "congestion": sc.congestion or None,
            "verify": sc.verify,
            "hosts": hosts_file and os.path.abspath(hosts_file)}
    runs = [(p, r) for r in range(1, sc.repeats + 1) for p in pts]
    progress = Progress(len(runs))
    # Runs whose gateway did not come up, each as the record it would have had: its point,
    # repeat and start, and what failed.
    meta["failed"] = failed = []
    bed = beds.HostsBed(inv, prefix, pins) if inv else beds.NamespaceBed(sc, prefix, pins)

    def measure_all():
        with opened(bed):
            for i, (p, rep) in enumerate(runs):
                progress.show(i, f"{p.config()}, {p.sessions} "
                                 f"session{'s' if p.sessions > 1 else ''}, repeat {rep}")
                started_run = time.time()
                try:
                    rec = measure(sc, p, rep, bed)
                except GatewayFailure as e:
                    progress.done()
                    log(f"{p.config()}, {p.sessions} session{'s' if p.sessions > 1 else ''}, "
                        f"repeat {rep} FAILED: {e}")
                    failed.append({"point": p.__dict__ | {"key": p.key(), "config": p.config()},
                                   "repeat": rep, "started": started_run, "error": str(e)})
                    continue
                records.write_object(os.path.join(outdir, "runs", f"{p.key()}-r{rep}.json"), rec)
        return True

    what = ("processes stopped and changes undone on every host reached" if inv
            else "topology and processes removed")
    complete, status = measure_into(outdir, meta, progress, measure_all, lambda: what)
    if not report.load_runs(outdir):
        log(f"no run finished: nothing to report in {outdir}")
        return status or 1
    lines = report.write(outdir, meta, complete)
    for line in lines:
        print(line)
    print_reports(outdir)
    if failed and not status:
        log(f"{len(failed)} of {len(runs)} runs failed: their gateway did not come up (above, "
            "and in the report)")
        status = 1
    return status


def checked_topology(sc, where):
    """sc's topology file, a regular file of bounded size, before anything is built;
    ScenarioError naming where it was given."""
    try:
        scenario.topology_file(sc.topology)
    except scenario.ScenarioError as e:
        raise scenario.ScenarioError(f"{where}: {e}") from None
    return sc


def cmd_ras(args):
    sc = apply_overrides(checked_topology(ras_scenario(args), "--topology"), args)
    return execute(sc, args, "RAS-style gateway test (gregw)")


def cmd_run(args):
    sc = scenario.load(args.file)
    if "topology" in sc.lines:
        checked_topology(sc, f"{args.file}:{sc.lines['topology']}: topology")
    else:
        checked_topology(sc, "topology")
    if sc.ndr is not None:
        return ndr_execute(sc, ndr.from_section(sc, args.file), args, f"scenario {args.file}")
    sc = apply_overrides(sc, args)
    return execute(sc, args, f"scenario {args.file}")


NDR_OPTIONS = ("sizes", "flows", "width", "pdr_loss", "initial_time", "min_rate", "max_rate",
               "direct_topology")


def ndr_execute(sc, nd, args, title):
    """An NDR search (ndr.py): the command line's options over the file's or the defaults."""
    for key in ("gateways", "modes", "workers", "time", "mtu"):
        v = getattr(args, key, None)
        if v is not None:
            try:
                scenario.SETTERS[key](sc, str(v))
            except ValueError as e:
                raise scenario.ScenarioError(f"--{key}: {e}") from None
    for key in NDR_OPTIONS:
        v = getattr(args, key, None)
        if v is not None:
            try:
                ndr.NDR_SETTERS[key](nd, str(v))
            except ValueError as e:
                raise scenario.ScenarioError(f"--{key.replace('_', '-')}: {e}") from None
    if getattr(args, "full", False) and getattr(args, "sizes", None) is None:
        nd.sizes = list(ndr.FULL_SIZES)
    if getattr(args, "ceiling_from", None):
        nd.ceiling_from = args.ceiling_from
    for g in sc.gateways:
        if g not in DRIVERS:
            raise scenario.ScenarioError(f"unknown gateway '{g}': expected some of "
                                         f"{', '.join(DRIVERS)}")
    return ndr.execute(sc, nd, args, title)


def cmd_ndr(args):
    sc = scenario.Scenario(name="ndr", topology=args.topology, gateways=["gregw"], workers=[2],
                           time=5.0, repeats=1)
    if args.gateways is not None:
        gws = [g.strip() for g in args.gateways.split(",") if g.strip()]
        # --gateways direct (or none): the generator alone, its ceiling.
        args.gateways = None
        sc.gateways = [g for g in gws if g not in (ndr.DIRECT, "none")]
        for g in sc.gateways:
            if g not in DRIVERS:
                raise scenario.ScenarioError(f"unknown gateway '{g}': expected some of "
                                             f"direct, {', '.join(DRIVERS)}")
    return ndr_execute(sc, ndr.Ndr(), args, "NDR and PDR per frame size (" + (
        ", ".join(sc.gateways) or "the generator alone") + ")")


def cmd_compare(args):
    gws = [g.strip() for g in args.gateways.split(",") if g.strip()]
    for g in gws:
        if not drivers.lookup(g):
            known = ", ".join(n for n in DRIVERS if not n.startswith("cmd:"))
            raise scenario.ScenarioError(f"unknown gateway '{g}': expected some of {known}, "
                                         "or cmd:PATH")
    sc = scenario.Scenario(name="compare", topology=args.topology, gateways=gws,
                           sessions=[1, 8, 64], workers=[2], time=10, repeats=3)
    checked_topology(sc, "--topology")
    return execute(apply_overrides(sc, args), args, f"comparison of {', '.join(gws)}")


def writable(outdir):
    """Refuses, in one line, a results directory this user cannot write the report into (a
    user's `tunbed report` of root's results), before anything is read or written."""
    if not os.access(outdir, os.W_OK | os.X_OK) or \
            (os.path.isdir(os.path.join(outdir, "plots")) and
             not os.access(os.path.join(outdir, "plots"), os.W_OK | os.X_OK)):
        raise Failure(f"{outdir}: cannot write the report here as uid {os.geteuid()}: run "
                      "tunbed report as the directory's owner (or root), or on a copy")


def cmd_report(args):
    if os.path.isdir(os.path.join(args.dir, "searches")):
        return ndr_report_cmd(args)
    if not os.path.isdir(os.path.join(args.dir, "runs")):
        raise Failure(f"{args.dir}: not a results directory (no runs/)")
    writable(args.dir)
    # Every file is read and checked (a newer format, a malformed record refused) before
    # anything is installed or written.
    meta = records.load_meta(args.dir)
    kind = "intranet" if meta.get("kind") == "intranet" else None
    runs = records.load_runs(args.dir, kind)
    if importlib.util.find_spec("matplotlib") is None:
        if os.geteuid() != 0:
            raise Failure("the plots need python3-matplotlib: run scripts/bootstrap as root "
                          "(or this command with sudo) to install it")
        bootstrap()
    # An intranet run (intranet.py) has its own analysis and report.
    write = intranet.report_writer() if kind else report.write
    for line in write(args.dir, meta, meta.get("complete", False), runs):
        print(line)
    print_reports(args.dir)
    return 0


def ndr_report_cmd(args):
    """`tunbed report` of an NDR results directory (ndr_report.py)."""
    from . import ndr_report
    writable(args.dir)
    meta = ndr_report.load_meta(args.dir)
    ndr_report.load_searches(args.dir)
    if importlib.util.find_spec("matplotlib") is None:
        if os.geteuid() != 0:
            raise Failure("the plots need python3-matplotlib: run scripts/bootstrap as root "
                          "(or this command with sudo) to install it")
        bootstrap()
    for line in ndr_report.write(args.dir, meta, meta.get("complete", False)):
        print(line)
    print_reports(args.dir)
    return 0


def cmd_down(args):
    if getattr(args, "hosts", None):
        return provision.down(inventory.parse(args.hosts, ()), args.prefix)
    if not os.path.exists(TOPO):
        bootstrap()
    n = failover.pair.down(args.prefix)
    if n:
        log(f"ended {n} processes of a failover run or gateway pair under {args.prefix}")
    print(run([TOPO, "down", "--prefix", args.prefix]).strip())
    # The Open vSwitch driver keeps its run directories per namespace.
    for d in sorted(os.listdir("/run/tunbed-ovs")) if os.path.isdir("/run/tunbed-ovs") else []:
        if d.startswith(args.prefix + "-"):
            log(f"removing Open vSwitch state of {d}")
            subprocess.run([os.path.join(ROOT, "scripts", "drivers", "ovs-gre.sh"), "down",
                            "--netns", d], capture_output=True)
    return 0


def cmd_provision(args):
    inv = inventory.parse(args.hosts, ())
    bootstrap()
    return provision.provision(inv)


def escaped(e):
    """An error's message as the one line it is meant to be: a file's name or a value from a
    file may hold a newline or a terminal's control sequence, shown escaped."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: repr(m[0])[1:-1], str(e))


def on_sigterm(signum, frame):
    raise KeyboardInterrupt


def add_bed_options(p, pin_help):
    """The options of where a run builds its hosts and writes its results."""
    p.add_argument("--topology", default="ras", help="built-in name or file (default ras)")
    p.add_argument("--pin", metavar="HOST=CPUS,...", help=pin_help)
    p.add_argument("--prefix", default=DEFAULT_PREFIX,
                   help=f"namespace prefix (default {DEFAULT_PREFIX})")
    p.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR",
                   help="where result directories go (default results/)")


def add_matrix_options(p, defaults_note):
    p.add_argument("--sessions", metavar="LIST", help=f"sessions per point, e.g. 1,8,64 "
                                                     f"({defaults_note})")
    p.add_argument("--workers", metavar="LIST", help="gregw worker threads, e.g. 1,2")
    p.add_argument("--modes", metavar="LIST", help=gregw.modes_help())
    p.add_argument("--repeats", type=int, metavar="N", help="repeats of every point")
    p.add_argument("--time", type=float, metavar="S", help="measured seconds per run")
    p.add_argument("--warmup", type=float, metavar="S", help="warm-up seconds per run (default 2)")
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
    add_bed_options(p, "pin a host's processes (client, gwa, gwb, server) to CPUs, over the "
                       "topology's cpus =; use + between CPUs: gwa=0+1")
    p.add_argument("--hosts", metavar="INVENTORY",
                   help="run on the hosts of an Ansible inventory over SSH instead of in "
                        "namespaces (docs/hosts.md; provision them first)")


def main():
    ap = argparse.ArgumentParser(
        prog="tunbed",
        description="tunbed: tunnel gateway throughput testbed. Builds a gateway test in network "
                    "namespaces, drives TCP sessions through the gateways under test, and "
                    "reports throughput, per-core CPU saturation, cost and latency, with plots.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("ras", help="the RAS-style scenario: gregw on ras.topo",
                       description="gregw on ras.topo, 1 to 64 sessions, 1 and 2 workers, 3 "
                                   "repeats. Default: 1, 8 and 64 sessions, 8 s each (about "
                                   "5 minutes on 2 cores); --full: 1, 2, 4, ... 64 sessions, "
                                   "10 s each.")
    p.add_argument("--full", action="store_true", help="the whole session matrix")
    add_matrix_options(p, "default 1,8,64")
    p.set_defaults(func=cmd_ras)
    p = sub.add_parser("run", help="run a scenario file (docs/runner.md)")
    p.add_argument("file")
    add_matrix_options(p, "default: the file's")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("compare", help="the same points for several gateways, side by side")
    p.add_argument("--gateways", required=True, metavar="LIST",
                   help=f"some of {', '.join(drivers.GATEWAYS)}, between commas (one this "
                        "machine cannot run is skipped with a note); cmd:PATH for a gateway of "
                        "your own (CONTRIBUTING.md)")
    add_matrix_options(p, "default 1,8,64")
    p.set_defaults(func=cmd_compare)
    intranet.add_parser(sub, os.path.join(ROOT, "results"), DEFAULT_PREFIX)
    p = sub.add_parser("ndr", help="NDR and PDR per frame size: the packet rates a gateway "
                                   "forwards without loss (docs/ndr.md)",
                       description="For each frame size and gateway, the no-drop rate (NDR) "
                                   "and the partial-drop rate (PDR, loss <= 0.5%%) in one "
                                   "MLRsearch-like search, short trials first and the final ones "
                                   "at --time; then latency at 10, 50 and 90%% of PDR. The "
                                   "generator's own ceiling is measured first, on the direct "
                                   "topology. docs/ndr.md.")
    p.add_argument("--gateways", metavar="LIST",
                   help="gateways, e.g. gregw,vxlan (default gregw; 'direct' alone: only the "
                        "generator's ceiling)")
    p.add_argument("--modes", metavar="LIST", help="gregw modes (default gre)")
    p.add_argument("--workers", metavar="LIST", help="gregw worker threads (default 2)")
    p.add_argument("--mtu", metavar="LIST", help="transit MTU, 0: the topology's (default 0)")
    p.add_argument("--sizes", metavar="LIST",
                   help="Ethernet frame sizes the client sends, FCS included (default "
                        f"{','.join(map(str, ndr.DEFAULT_SIZES))})")
    p.add_argument("--full", action="store_true",
                   help=f"RFC 2544's sizes: {','.join(map(str, ndr.FULL_SIZES))}")
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
                   help="where the ceiling is measured (default direct)")
    add_bed_options(p, "as for ras")
    p.set_defaults(func=cmd_ndr)
    p = sub.add_parser("report", help="rebuild a results directory's report from its raw runs")
    p.add_argument("dir")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("down", help="remove everything a run left behind")
    p.add_argument("--prefix", default=DEFAULT_PREFIX)
    p.add_argument("--hosts", metavar="INVENTORY",
                   help="on the hosts of an inventory: stop what a run left, undo its changes")
    p.set_defaults(func=cmd_down)
    p = sub.add_parser("provision", help="install the runtime packages and this build on the "
                                         "hosts of an inventory (Ansible)",
                       description="Installs, with Ansible, the runtime packages each role needs "
                                   "and this build of tunbed (its Debian package) on every host "
                                   "of INVENTORY; a second run changes nothing. docs/hosts.md.")
    p.add_argument("--hosts", metavar="INVENTORY", required=True)
    p.set_defaults(func=cmd_provision)
    failover.add_parser(sub)
    args = ap.parse_args()
    if not args.command:
        ap.print_help(sys.stderr)
        return 2
    if os.geteuid() != 0 and args.command != "report":
        if shutil.which("sudo") is None:
            log(f"{args.command} needs root (it builds network namespaces): run it as root")
            return 1
        os.execvp("sudo", ["sudo", os.path.join(ROOT, "scripts", "tunbed"), *sys.argv[1:]])
    # Ctrl-C and SIGTERM unwind through the finally blocks that take everything down; a
    # shell that starts us in the background ignores SIGINT, so take it back explicitly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if getattr(args, "prefix", None) is not None:
            inventory.check_prefix(args.prefix)  # it names what down removes, here and on hosts
        return args.func(args)
    except (scenario.ScenarioError, records.FormatError, inventory.InventoryError) as e:
        log(escaped(e))
        return 2
    except Failure as e:
        log(escaped(e))
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
