"""The one run loop of every measuring command (execute): the kind's plan checked, bootstrap
of the sets it needs, a new results directory, meta.json with the run's provenance, progress
on stderr (each item's result, the time left, the time it all took), the bed opened and closed
whatever happens, each item measured on it and its record written whole, a gateway that did
not come up recorded and the run going on, Ctrl-C and failures turned into an exit status
(130, 1; 2 for bad input) and a line that says what was cleaned up and where the partial
results are, meta.json written last with the finish time and whether the work completed, then
the report (render.py) and its headline. No kind has a loop, a bed's try/finally, progress or
meta.json of its own (kinds/base.py says what a kind provides)."""

import contextlib
import datetime
import os
import shutil
import subprocess
import sys
import time

from . import files, inventory, machine, records, render
from .common import BIN, INSTALLED, ROOT, Failure, GatewayFailure, Refused, deferred_signals, log


BOOTSTRAP = os.path.join(ROOT, "scripts", "bootstrap")


def bootstrap(sets=("ras",), build=True):
    """Installs what the sets of scripts/bootstrap's table need and is missing, and builds
    (unless build is False): the README promises one command does it all, and each command
    installs only what it runs (cli.py and Kind.needs say which). Installed from the Debian
    package, it builds nothing and installs the sets but the build's. Its output goes to
    stderr: stdout is the commands' data."""
    status = subprocess.run([BOOTSTRAP, "--for", ",".join(sets), *(
        ["--installed"] if INSTALLED else [] if build else ["--no-build"])],
        stdout=sys.stderr).returncode
    if status:
        raise Failure(f"scripts/bootstrap failed (exit status {status}; its output is above)")


def print_reports(outdir):
    """The lines that name a results directory's reports, report.md's first."""
    print(f"report: {os.path.join(outdir, 'report.md')}")
    print(f"report: {os.path.join(outdir, 'report.html')}")


def clock(seconds):
    """'4:02', '1:04:02': a duration for people."""
    m, sec = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{sec:02d}" if m >= 60 else f"{m}:{sec:02d}"


class Progress:
    """On stderr: before each item '[i/n] what' and the time so far (redrawn in place on a
    terminal); after it, one line that stays: the item, its result (Kind.figure), the time so
    far and, from the first finished item on, the time left (at the pace of the items done, each
    counted by its weight); at the end, 'done in'."""

    def __init__(self, total, start=None, weights=None):
        self.total, self.tty = total, sys.stderr.isatty()
        self.weights = weights or [1.0] * total
        self.start = time.monotonic() if start is None else start
        self.began = None  # the first item's start: the time left is the items' alone
        self.open = False  # a terminal's line waiting to be redrawn

    def times(self, finished):
        now = time.monotonic()
        self.began = self.began or now
        done = sum(self.weights[:finished])
        left = f"  left ~{clock((now - self.began) / done * sum(self.weights[finished:]))}" \
            if finished and done else ""
        return f"  elapsed {clock(now - self.start)}{left}"

    def line(self, msg, keep):
        if self.tty:
            print("\r" + msg + "\033[K", end="\n" if keep else "", file=sys.stderr, flush=True)
            self.open = not keep
        else:
            print("tunbed: " + msg, file=sys.stderr, flush=True)

    def show(self, i, what):
        self.line(f"[{i + 1}/{self.total}] {what}{self.times(i)}", keep=False)

    def result(self, i, what, figure):
        self.line(f"[{i + 1}/{self.total}] {what}: {figure or 'done'}{self.times(i + 1)}",
                  keep=True)

    def done(self):
        if self.open:
            print(file=sys.stderr)
            self.open = False

    def finished(self, outdir):
        self.done()
        log(f"done in {clock(time.monotonic() - self.start)}: {outdir}")


@contextlib.contextmanager
def opened(bed):
    """bed.open(), then bed.close() whatever happens (also when open fails part way); neither
    is cut short by SIGINT or SIGTERM, which wait until it is done."""
    try:
        with deferred_signals():
            bed.open()
        yield bed
    finally:
        with deferred_signals():
            bed.close()


def provenance():
    """Where and how a run was made: the command line, this checkout's commit (and whether it
    had changes), the build's id, the machine (CPU model and count, memory, kernel)."""
    def out(cmd):
        p = subprocess.run(cmd, capture_output=True, text=True)
        return p.stdout.strip() if p.returncode == 0 else None
    git = ["git", "-C", ROOT]
    commit = out([*git, "rev-parse", "HEAD"]) if os.path.exists(os.path.join(ROOT, ".git")) \
        else None
    return {"command": ["tunbed", *sys.argv[1:]],
            "commit": commit,
            "changed": bool(out([*git, "status", "--porcelain", "--untracked-files=no"]))
            if commit else None,
            "build_id": out([os.path.join(ROOT, "scripts", "build-id"), BIN]),
            "machine": machine.facts()}


def execute(kind, args):
    """Runs what args ask of kind into a new results directory; returns the exit status."""
    start = time.monotonic()
    plan = kind.check(args)
    kind = getattr(plan, "kind", None) or kind
    # The hosts mode runs the gateways on the hosts: here, Ansible and the build (cli.py
    # installed Ansible before the inventory was read).
    bootstrap(["hosts"] if getattr(args, "hosts", None) else kind.needs(plan))
    kind.prepare(plan)
    items = kind.items(plan)
    started = datetime.datetime.now(datetime.timezone.utc)
    outdir = os.path.join(args.results, started.strftime("%Y%m%dT%H%M%SZ") + "-"
                          + kind.results_name(plan))
    files.new_dir(outdir, kind.RECORD_DIR)
    meta = {"format": kind.FORMAT, "kind": kind.name, **kind.meta(plan),
            "started_utc": started.isoformat(), "provenance": provenance(), "failed": []}
    progress = Progress(len(items), start, [i.weight for i in items])
    bed = kind.bed(plan)
    complete, status, refused = False, 0, None
    try:
        measure_all(kind, plan, bed, items, outdir, meta["failed"], progress)
        complete = True
    except KeyboardInterrupt:
        progress.done()
        log(f"interrupted; {bed.undone}; partial results in {outdir}")
        status = 130
    except inventory.InventoryError:
        progress.done()
        shutil.rmtree(outdir, ignore_errors=True)
        raise
    except Refused as e:
        progress.done()
        refused, status = str(e), 2
    except Failure as e:
        progress.done()
        log(f"{e}; {bed.undone}; partial results in {outdir}")
        status = 1
    else:
        progress.done()
    meta["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
    records.write_object(os.path.join(outdir, "meta.json"), meta | {"complete": complete},
                         indent=2)
    meta, recs = records.load(kind, outdir)
    if recs:
        for line in render.write_all(outdir, kind.report(meta, recs, complete)):
            print(line)
        print_reports(outdir)
        if complete:
            progress.finished(outdir)
    elif not refused:
        log(f"no {kind.UNIT} finished: nothing to report in {outdir}")
        return status or 1
    if refused:
        log(refused)
    elif meta["failed"] and not status:
        log(f"{len(meta['failed'])} of {len(items)} {kind.UNIT}s failed: their gateway did not "
            "come up (above, and in the report)")
        status = 1
    return status


def measure_all(kind, plan, bed, items, outdir, failed, progress):
    """Measures every item on bed, each group of items in one bed.point(), and writes each
    record whole (records.write_object); a GatewayFailure fails its item alone."""
    with opened(bed), contextlib.ExitStack() as point:
        for i, item in enumerate(items):
            kind.admit(plan, item)
            progress.show(i, item.label)
            if not i or item.group is None or item.group != items[i - 1].group:
                here = point.enter_context(bed.point(item))
            started = time.time()
            try:
                rec = kind.measure(plan, here, item)
            except GatewayFailure as e:
                rec = None
                failed.append(kind.failed(item, started, str(e)))
            last = i + 1 == len(items) or item.group is None or item.group != items[i + 1].group
            if last:
                point.close()
            if rec is None:
                progress.done()
                log(f"{item.label} FAILED: {failed[-1]['error']}")
                continue
            rec.update(kind=kind.name, format=kind.FORMAT)
            records.write_object(os.path.join(outdir, kind.RECORD_DIR, f"{item.key}.json"), rec)
            kind.measured(plan, item, rec)
            progress.result(i, item.label, kind.figure(plan, item, rec))
