"""CPU accounting for a run: per-CPU times from /proc/stat and per-thread times (and the CPU
each thread last ran on) from /proc/PID/task/TID/stat, sampled together at a fixed rate on
CLOCK_MONOTONIC, the clock of tunbed-traffic's measured window."""

import os
import threading
import time

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
HZ = os.sysconf("SC_CLK_TCK")


def parse_proc_stat(text):
    """{cpu: {field: ticks}} from /proc/stat text (per-CPU lines only)."""
    cpus = {}
    for line in text.splitlines():
        if line.startswith("cpu") and len(line) > 3 and line[3].isdigit():
            name, *vals = line.split()
            vals = [int(v) for v in vals[:len(FIELDS)]]
            vals += [0] * (len(FIELDS) - len(vals))
            cpus[int(name[3:])] = dict(zip(FIELDS, vals))
    return cpus


def parse_task_stat(text):
    """(comm, utime + stime ticks, processor) from /proc/PID/task/TID/stat text."""
    comm = text[text.index("(") + 1:text.rindex(")")]
    f = text[text.rindex(")") + 2:].split()
    # Fields after comm start at 3: utime is 14, stime 15, processor 39.
    return comm, int(f[11]) + int(f[12]), int(f[36])


def read(path):
    with open(path) as f:
        return f.read()


def threads_of(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


class Sampler(threading.Thread):
    """Samples /proc/stat and the threads of the watched processes every period seconds."""

    def __init__(self, hz=4):
        super().__init__(daemon=True)
        self.period = 1.0 / hz
        self.samples = []  # [(t, {cpu: {...}}, {tid: (pid, comm, ticks, processor)})]
        self.pids = set()
        self.stop_event = threading.Event()
        self.lock = threading.Lock()

    def watch(self, pid):
        with self.lock:
            self.pids.add(pid)

    def snapshot(self):
        t = time.monotonic()
        cpus = parse_proc_stat(read("/proc/stat"))
        threads = {}
        with self.lock:
            pids = list(self.pids)
        for pid in pids:
            for tid in threads_of(pid):
                try:
                    comm, ticks, proc = parse_task_stat(read(f"/proc/{pid}/task/{tid}/stat"))
                except (OSError, ValueError, IndexError):
                    continue  # a thread that ended between listing and reading
                threads[tid] = (pid, comm, ticks, proc)
        return t, cpus, threads

    def run(self):
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            self.samples.append(self.snapshot())
            next_t += self.period
            self.stop_event.wait(max(0.0, next_t - time.monotonic()))
        self.samples.append(self.snapshot())

    def stop(self):
        self.stop_event.set()
        self.join()

    def export(self):
        """The samples as JSON-ready data (raw ticks; analysis.py makes shares of them)."""
        return {
            "hz": round(1 / self.period, 3),
            "ticks_per_second": HZ,
            "samples": [{"t": t, "cpus": {str(c): v for c, v in cpus.items()},
                         "threads": {str(tid): list(v) for tid, v in thr.items()}}
                        for t, cpus, thr in self.samples],
        }
