"""CPU accounting for a run: tunbed-sample (sample/) reads per-CPU times from /proc/stat and
per-thread times (and the CPU each thread last ran on) from /proc/PID/task/TID/stat and, in ns,
schedstat, together, at a fixed rate on CLOCK_MONOTONIC, the clock of tunbed-traffic's measured
window. This class runs it and keeps its samples."""

import json
import queue
import subprocess
import threading
import time

from .common import SAMPLE, Failure

START_TIMEOUT_S = 30  # for the header and the first sample; it writes them at once
STOP_TIMEOUT_S = 10


class Sampler:
    """tunbed-sample at hz samples a second, watching the processes it is told to; on this
    machine, or where argv (a Host's) runs binary."""

    def __init__(self, hz=4, argv=None, binary=None):
        self.hz = hz
        self.argv = argv or (lambda cmd: cmd)
        self.binary = binary or SAMPLE
        self.pids = []
        self.header = None
        self.samples = []  # the sample documents, in order
        self.proc = None
        self.reader = None
        self.first = threading.Event()
        self.errors = []
        self.nows = queue.Queue()

    def watch(self, pid):
        """Watches pid from the next sample on (before start: from the first)."""
        self.pids.append(pid)
        if self.proc:
            self.proc.stdin.write(f"watch {pid}\n")
            self.proc.stdin.flush()

    def _read(self):
        for line in self.proc.stdout:
            try:
                doc = json.loads(line)
            except ValueError:
                self.errors.append(f"not JSON: {line.strip()[:80]}")
                continue
            if self.header is None:
                self.header = doc
            elif "now" in doc:
                self.nows.put(doc["now"])
            else:
                self.samples.append(doc)
                self.first.set()
        self.first.set()

    def start(self):
        """Starts the sampler and returns once its first sample is in."""
        args = [self.binary, "--hz", str(self.hz)]
        for pid in self.pids:
            args += ["--pid", str(pid)]
        self.proc = subprocess.Popen(self.argv(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.first.wait(START_TIMEOUT_S) or not self.samples:
            err = self._finish()
            raise Failure(f"tunbed-sample did not start: {err or 'no sample'}")

    def clock(self, tries=5):
        """(offset, error) of the sampler's CLOCK_MONOTONIC against this machine's: its reading
        lies inside the round trip of a "now" on the open channel; of a few tries, the one
        with the shortest round trip, whose half bounds the error."""
        best = None
        for _ in range(tries):
            t0 = time.monotonic()
            self.proc.stdin.write("now\n")
            self.proc.stdin.flush()
            try:
                now = self.nows.get(timeout=START_TIMEOUT_S)
            except queue.Empty:
                raise Failure("tunbed-sample did not answer \"now\"") from None
            t1 = time.monotonic()
            if best is None or t1 - t0 < best[1]:
                best = (now - (t0 + t1) / 2, t1 - t0)
        return best[0], best[1] / 2

    def _finish(self):
        """Ends the process (by its PID), waits for its last sample; returns its stderr."""
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(STOP_TIMEOUT_S)
        return self.proc.stderr.read().strip()

    def abort(self):
        """Ends a sampler still running (a run that failed); nothing is raised."""
        if self.proc and self.proc.returncode is None:
            self._finish()

    def stop(self):
        """Takes the last sample and ends the sampler; a failure to sample is a run's failure."""
        err = self._finish()
        if self.proc.returncode != 0:
            raise Failure(f"tunbed-sample: {err or f'exit status {self.proc.returncode}'}")

    def export(self):
        """The samples as JSON-ready data (raw ticks; analysis.py makes shares of them)."""
        return {
            "hz": self.hz,
            "ticks_per_second": (self.header or {}).get("ticks_per_second"),
            "samples": self.samples,
        }
