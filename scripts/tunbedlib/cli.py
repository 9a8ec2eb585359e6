"""The tunbed command: a subcommand per scenario kind's command (kinds/: ras, run, compare,
intranet, ndr, failover, datasheet, tunnels, smoke), each run by the one run loop (runloop.py),
and the commands of no kind: report, diff, down, provision. Root (sudo), signals and exit
statuses: 2 for bad input (a command line, a file, an inventory), 1 for a failure, 130 for an
interrupt."""

import argparse
import difflib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap

from . import bed as beds
from . import budget, common, diff, inventory, pair, provision, records, render, runloop
from .common import OVS_DRIVER, ROOT, TOPO, Failure, ScenarioError, log, run
from .kinds import COMMANDS, for_dir
from .kinds.base import DEFAULT_PREFIX
from .runloop import print_reports


def writable(outdir):
    """Refuses, in one line, a results directory this user cannot write the report into (a
    user's `tunbed report` of root's results), before anything is read or written."""
    if not os.access(outdir, os.W_OK | os.X_OK) or \
            (os.path.isdir(os.path.join(outdir, "plots")) and
             not os.access(os.path.join(outdir, "plots"), os.W_OK | os.X_OK)):
        raise Failure(f"{outdir}: cannot write the report here as uid {os.geteuid()}: run "
                      "tunbed report as the directory's owner (or root), or on a copy")


def cmd_report(args):
    """Rebuilds a results directory's reports from its records, whatever its kind. Every file
    is read and checked (a newer format, a malformed record refused) before anything is
    installed or written; a directory that is not a results directory, or holds no record,
    is refused (exit status 2) and left as it is."""
    if not os.path.isdir(os.path.join(args.dir, "searches")) and \
            not os.path.isdir(os.path.join(args.dir, "runs")):
        raise ScenarioError(f"{args.dir}: not a results directory (no runs/)")
    writable(args.dir)
    kind = for_dir(args.dir)
    meta, recs = records.load(kind, args.dir)
    if not recs:
        raise ScenarioError(f"{args.dir}: no {kind.UNIT} in {kind.RECORD_DIR}/: nothing to "
                            "report")
    if importlib.util.find_spec("matplotlib") is None:
        if os.geteuid() != 0:
            raise Failure("the plots need python3-matplotlib: " + (
                "apt install python3-matplotlib" if common.INSTALLED else
                "run scripts/bootstrap --no-build as root") +
                " (or this command with sudo) to install it")
        runloop.bootstrap(["ras"], build=False)
    for line in render.write_all(args.dir, kind.report(meta, recs, meta.get("complete", False))):
        print(line)
    print_reports(args.dir)
    return 0


def diff_command(sub):
    """`tunbed diff A B [--threshold PCT]` (diff.py), which needs no root."""
    p = sub.add_parser(
        "diff", help="two results directories point by point: a change, or noise?",
        description="Compares two results directories of one scenario kind point by point "
                    "(summary.json's runs): each point's change in throughput with both "
                    "ranges, whether it exceeds the noise floor of the directories' repeats, a "
                    "line per point and each directory's minimum detectable difference "
                    "(docs/scaling.md); two datasheets per gateway and part (throughput, "
                    "DSCP/ECN, NDR/PDR by the searches' bounds, the failover's outage, the "
                    "guest tests' results). Exit status 0: no regression; 1: a point slower beyond "
                    "the noise and the threshold; 2: bad input (different kinds, no point in "
                    "common, not a results directory).")
    p.add_argument("a", metavar="A", help="the results directory to compare against")
    p.add_argument("b", metavar="B", help="the results directory compared")
    p.add_argument("--threshold", default=str(diff.THRESHOLD_PCT), metavar="PCT",
                   help="a slowdown beyond the noise is a regression from PCT percent, 0 to "
                        f"100 (default {diff.THRESHOLD_PCT:g})")
    p.set_defaults(func=lambda a: diff.main(a.a, a.b, a.threshold))


def cmd_down(args):
    if getattr(args, "hosts", None):
        return provision.down(inventory.parse(args.hosts, ()), args.prefix)
    if not os.path.exists(TOPO):
        runloop.bootstrap(["ras"])
    n = pair.down(args.prefix)
    if n:
        log(f"ended {n} processes of a failover run or gateway pair under {args.prefix}")
    n = beds.end_leftovers(args.prefix)
    if n:
        log(f"ended {n} processes a killed run left in the namespaces of {args.prefix}")
    print(run([TOPO, "down", "--prefix", args.prefix]).strip())
    for path in beds.remove_run_dirs(args.prefix):
        log(f"removed {path}")
    # The CPU budgets of a killed run with --gateway-cpu (docs/scaling.md).
    for path in budget.remove_leftovers(args.prefix):
        log(f"removed cgroup {path}")
    # The Open vSwitch driver keeps its run directories per namespace.
    for d in sorted(os.listdir("/run/tunbed-ovs")) if os.path.isdir("/run/tunbed-ovs") else []:
        if d.startswith(args.prefix + "-"):
            log(f"removing Open vSwitch state of {d}")
            subprocess.run([OVS_DRIVER, "down", "--netns", d], capture_output=True)
    return 0


def cmd_provision(args):
    inv = inventory.parse(args.hosts, ())
    runloop.bootstrap(["hosts"])  # the Debian package of this build
    return provision.provision(inv)


def escaped(e):
    """An error's message as the one line it is meant to be: a file's name or a value from a
    file may hold a newline or a terminal's control sequence, shown escaped."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: repr(m[0])[1:-1], str(e))


NO_ROOT = ("report", "diff")  # commands that read results only


def on_sigterm(signum, frame):
    raise KeyboardInterrupt


class HelpFormatter(argparse.HelpFormatter):
    """--help with every option's default: its value, where the option's help does not say it
    (a default computed later, such as a scenario file's, is said in the help itself)."""

    def _fill_text(self, text, width, indent):
        # A text of several lines (the exit statuses) keeps them, each filled and its
        # continuation indented under its words.
        if "\n" not in text:
            return super()._fill_text(text, width, indent)
        return "\n".join(textwrap.fill(line, width, initial_indent=indent,
                                        subsequent_indent=indent + " " * 5)
                          for line in text.splitlines())

    def _get_help_string(self, action):
        text = action.help or ""
        if not action.option_strings or "default" in text or \
                action.default in (None, False, argparse.SUPPRESS):
            return text
        return f"{text} (default %(default)s)".lstrip()


class Parser(argparse.ArgumentParser):
    """The parser of tunbed and of each subcommand: a mistake prints the usage of the command
    it was made in, and one line (the nearest option, for a mistyped one), exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.commands = {}

    def add_subparsers(self, **kwargs):
        sub = super().add_subparsers(**kwargs)
        self.commands = sub.choices
        return sub

    def parse_args(self, args=None, namespace=None):
        args, extra = self.parse_known_args(args, namespace)
        if extra:
            # argparse leaves a subcommand's unknown options to the top parser, whose usage
            # is not the subcommand's.
            where = self.commands.get(getattr(args, "command", None), self)
            near = difflib.get_close_matches(extra[0].partition("=")[0], [
                o for a in where._actions for o in a.option_strings], n=1)
            where.error(f"unrecognized argument{'s' if len(extra) > 1 else ''}: "
                        f"{' '.join(extra)}" + (f" (did you mean {near[0]}?)" if near else ""))
        return args

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: {escaped(message)}\n")


class Version(argparse.Action):
    """tunbed --version: the version, the build's id and the checkout's commit, found when
    asked (they take a git command and the build's checksums)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, ap, namespace, values, option_string=None):
        print(version())
        ap.exit()


def version():
    """`tunbed VERSION` (common.version), and, where known, the build's id (scripts/build-id of
    the programs) and this checkout's commit, as a run's provenance records them."""
    v = common.version()
    p = runloop.provenance()
    where = [f"build {p['build_id']}" if p["build_id"] else "not built",
             *([f"commit {p['commit'][:12]}{' with changes' if p['changed'] else ''}"]
               if p["commit"] else [])]
    return f"tunbed {v or 'unknown'} ({', '.join(where)})"


# What main() returns, for the top-level --help's epilog and the man page's EXIT STATUS
# (manpage.py); docs/runner.md says the same.
EXIT_STATUSES = (
    (0, "success (diff: no point slower)"),
    (1, "a failure: a run that failed or had items fail (a gateway that did not come up), a "
        "command that could not do its work (no root, a results directory it cannot write, a "
        "host lost during a run), diff with a point slower beyond the noise and its "
        "threshold"),
    (2, "bad input, in one line: the command line, a scenario, topology or results file, an "
        "inventory or a host of it not ready (refused before anything starts), or what a run "
        "found impossible once it measured (ndr's --max-rate above the generator's "
        "ceiling)"),
    (130, "interrupted (Ctrl-C or SIGTERM): what the run started is removed, its partial "
          "results kept"))
EPILOG = "\n".join(["exit status:"] + [f"{n:<4} {text}" for n, text in EXIT_STATUSES])


def parser():
    ap = Parser(
        prog="tunbed",
        description="tunbed: tunnel gateway throughput testbed. Builds a gateway test in network "
                    "namespaces, drives TCP sessions through the gateways under test, and "
                    "reports throughput, per-core CPU saturation, cost and latency, with plots.",
        epilog=EPILOG)
    ap.add_argument("--version", action=Version, help="the version, build id and commit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for command, kind in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        command.arguments(p)
        p.set_defaults(func=lambda a, k=kind: runloop.execute(k, a))
    p = sub.add_parser("report", help="rebuild a results directory's report from its raw runs")
    p.add_argument("dir", help="a results directory (results/TIME-NAME)")
    p.set_defaults(func=cmd_report)
    diff_command(sub)
    p = sub.add_parser("down", help="remove everything a run left behind")
    p.add_argument("--prefix", default=DEFAULT_PREFIX, help="the run's namespace prefix")
    p.add_argument("--hosts", metavar="INVENTORY",
                   help="on the hosts of an inventory: stop what a run left, undo its changes")
    p.set_defaults(func=cmd_down)
    p = sub.add_parser("provision", help="install the runtime packages and this build on the "
                                         "hosts of an inventory (Ansible)",
                       description="Installs, with Ansible, the runtime packages each role needs "
                                   "and this build of tunbed (its Debian package) on every host "
                                   "of INVENTORY; a second run changes nothing. docs/hosts.md.")
    p.add_argument("--hosts", metavar="INVENTORY", required=True, help="an Ansible inventory "
                   "(docs/hosts.md)")
    p.set_defaults(func=cmd_provision)
    return ap


def main(argv=None):
    ap = parser()
    args = ap.parse_args(argv)
    if not args.command:
        ap.print_help(sys.stderr)
        return 2
    if os.geteuid() != 0 and args.command not in NO_ROOT:
        if shutil.which("sudo") is None:
            log(f"{args.command} needs root (it builds network namespaces): run it as root")
            return 1
        os.execvp("sudo", ["sudo", os.path.join(ROOT, "scripts", "tunbed"), *sys.argv[1:]])
    # Ctrl-C and SIGTERM unwind through the finally blocks that take everything down; a
    # shell that starts us in the background ignores SIGINT, so take it back explicitly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if args.command == "provision" and common.INSTALLED:  # before Ansible is installed
            raise Failure("provision makes the Debian package of a checkout's build: this "
                          "tunbed is installed from one; install it on each host (docs/hosts.md)")
        if getattr(args, "prefix", None) is not None:
            inventory.check_prefix(args.prefix)  # it names what down removes, here and on hosts
        if getattr(args, "hosts", None):
            # Ansible reads the inventory (inventory.parse), before anything else is installed.
            runloop.bootstrap(["hosts"], build=False)
        return args.func(args)
    except (ScenarioError, records.FormatError, inventory.InventoryError) as e:
        log(escaped(e))
        return 2
    except Failure as e:
        log(escaped(e))
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
