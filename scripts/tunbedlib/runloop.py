"""What every measuring command does around its measurements (ras, run, compare, intranet,
ndr): progress on stderr, the bed opened and closed whatever happens, Ctrl-C and failures
turned into an exit status and a line that says what was cleaned up and where the partial
results are, and meta.json written last with the finish time and whether the work completed.
"""

import contextlib
import datetime
import os
import shutil
import subprocess
import sys
import time

from . import inventory, records
from .common import ROOT, Failure, deferred_signals, log


def bootstrap(kind=None):
    """Installs what is missing and builds: the README promises one command does it all. The
    one call of scripts/bootstrap; kind is the scenario kind about to run (None: a command of
    no kind), for a bootstrap that installs per kind."""
    status = subprocess.run([os.path.join(ROOT, "scripts", "bootstrap")],
                            stdout=sys.stderr).returncode
    if status:
        raise Failure(f"scripts/bootstrap failed (exit status {status}; its output is above)")


def print_reports(outdir):
    """The lines that name a results directory's reports, report.md's first."""
    print(f"report: {os.path.join(outdir, 'report.md')}")
    print(f"report: {os.path.join(outdir, 'report.html')}")


class Progress:
    """'point i of n, elapsed, time left' on stderr, redrawn in place on a terminal."""

    def __init__(self, total):
        self.total, self.start, self.tty = total, time.monotonic(), sys.stderr.isatty()

    def show(self, i, what):
        el = time.monotonic() - self.start
        left = el / i * (self.total - i) if i else 0
        msg = (f"[{i + 1}/{self.total}] {what}  elapsed {int(el) // 60}:{int(el) % 60:02d}"
               f"  left ~{int(left) // 60}:{int(left) % 60:02d}")
        print(("\r" + msg + "\033[K") if self.tty else ("tunbed: " + msg), end="" if self.tty
              else "\n", file=sys.stderr, flush=True)

    def done(self):
        if self.tty:
            print(file=sys.stderr)


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


def measure_into(outdir, meta, progress, measure_all, undone):
    """Runs measure_all() (true when every measurement it meant to make was made) and returns
    (complete, status): status 130 after Ctrl-C, 1 after a Failure, each said in one line with
    undone() (what was cleaned up) and where the partial results are; an InventoryError
    removes the results directory and goes on up (nothing was measured). Then writes
    meta.json: meta with finished_utc and complete."""
    complete, status = False, 0
    try:
        complete = bool(measure_all())
    except KeyboardInterrupt:
        progress.done()
        log(f"interrupted; {undone()}; partial results in {outdir}")
        status = 130
    except inventory.InventoryError:
        progress.done()
        shutil.rmtree(outdir, ignore_errors=True)
        raise
    except Failure as e:
        progress.done()
        log(f"{e}; {undone()}; partial results in {outdir}")
        status = 1
    else:
        progress.done()
    meta["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
    records.write_object(os.path.join(outdir, "meta.json"), meta | {"complete": complete},
                         indent=2)
    return complete, status
