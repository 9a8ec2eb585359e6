#!/usr/bin/env python3
"""Benchmark (not a test): what an emulated core (scripts/tunbedlib/budget.py) is on this
machine. As root:

  scripts/bench/budget_probe.py window  [--share 20] [--repeats 5] [--window 2]
  scripts/bench/budget_probe.py delay   [--share 20] [--periods 5000,100000] [--time 3]
                                        [--sleep-every MS]
  scripts/bench/budget_probe.py softirq [--shares 20,50,off] [--window 2] [--trace]

window: a busy-looping thread with the budget, pinned to the last CPU: its CPU time over wall
time in each window (/proc/TID/schedstat) and the periods its cgroup was throttled.

delay: a busy loop that reads CLOCK_MONOTONIC back to back, with the budget over each period
length: every gap above 0.2 ms is time it was not on the CPU. Prints the stretches it ran and
the gaps it waited (median, 99th percentile, most): the scheduling delay a budget adds. The
kernel checks a budget at the scheduler's tick (CONFIG_HZ) and wherever the thread sleeps or
wakes: --sleep-every MS sleeps 20 us after every MS of work, as a worker that blocks does.

softirq: what escapes a budget. Two namespaces joined by a veth pair (198.18.0.1 and
198.18.0.2); tunbed-traffic server in one, pinned to the first CPU, and a client in the other,
one TCP session, its threads pinned to the last CPU with the budget (or none: off). veth's
transmit hands each segment to the peer's receive as softirq on the sender's CPU, so the
peer's IP and TCP receive runs on the client's CPU. Over a window in the steady state: the
client's threads' CPU time, the client CPU's busy, softirq and system shares (/proc/stat),
ksoftirqd's time on it, and the throughput. Where softirq is charged to the thread it
interrupted (no CONFIG_IRQ_TIME_ACCOUNTING), the CPU's busy time stays at the budget; where it
is accounted apart, it exceeds it by the softirq. --trace: the softirq time on that CPU by
the task it ran in (the client's threads, ksoftirqd, others), from the kernel's softirq_entry
and softirq_exit events in a trace instance of its own on a tracefs mounted for the purpose.
"""

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from tunbedlib import budget  # noqa: E402

TRAFFIC = os.path.join(ROOT, "build", "bin", "tunbed-traffic")
PREFIX = f"bp{os.getpid()}"
CPUS = sorted(os.sched_getaffinity(0))
HZ = os.sysconf("SC_CLK_TCK")
BUSY = [sys.executable, "-c", "while True: pass"]
# Waits on stdin, then reads the clock back to back for argv[1] seconds, with argv[2] > 0
# sleeping 20 us after every argv[2] ms of work as a worker that blocks in poll() does (each
# sleep a scheduling point where the kernel checks the budget): the stretches it ran and the
# gaps it waited beyond its own sleeps, in nanoseconds.
PROBE = """
import json, sys, time
sys.stdin.readline()
now = time.perf_counter_ns
t = last = start = mark = now()
end = t + int(float(sys.argv[1]) * 1e9)
every = int(float(sys.argv[2]) * 1e6)
runs, gaps = [], []
while t < end:
    if every and t - mark >= every:
        time.sleep(0.00002)
        mark = now()
        last = mark if mark - last < 200000 else last
    t = now()
    if t - last > 200000:
        runs.append(last - start)
        gaps.append(t - last)
        start = t
    last = t
print(json.dumps({"runs": runs, "gaps": gaps}))
"""


def runtime_s(tid):
    with open(f"/proc/{tid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def cpu_ticks(cpu):
    """(user, nice, system, idle, iowait, irq, softirq, steal) of one CPU in /proc/stat."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                return [int(x) for x in line.split()[1:9]]
    raise SystemExit(f"no cpu{cpu} in /proc/stat")


def ksoftirqd(cpu):
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == f"ksoftirqd/{cpu}":
                    return int(pid)
    raise SystemExit(f"no ksoftirqd/{cpu}")


def threads(pid):
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))] if xs else 0


def window(args):
    cpu = CPUS[-1]
    proc = subprocess.Popen(BUSY)
    try:
        with budget.Budgets(PREFIX) as b:
            b.add(proc.pid, args.share, cpu=cpu)
            for i in range(args.repeats):
                s0, t0, r0 = b.stats()[str(proc.pid)], time.monotonic(), runtime_s(proc.pid)
                time.sleep(args.window)
                s1, t1, r1 = b.stats()[str(proc.pid)], time.monotonic(), runtime_s(proc.pid)
                print(f"window {i + 1}: {100 * (r1 - r0) / (t1 - t0):.2f}% of CPU {cpu} over "
                      f"{t1 - t0:.2f} s; throttled in {s1['nr_throttled'] - s0['nr_throttled']} "
                      f"of {s1['nr_periods'] - s0['nr_periods']} periods")
    finally:
        proc.kill()
        proc.wait()


def delay(args):
    cpu = CPUS[-1]
    for period in (int(p) for p in args.periods.split(",")):
        proc = subprocess.Popen([sys.executable, "-c", PROBE, str(args.time),
                                 str(args.sleep_every)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            with budget.Budgets(PREFIX) as b:
                rec = b.add(proc.pid, args.share, cpu=cpu, period_us=period)
                out, _ = proc.communicate("go\n", timeout=args.time + 30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        doc = json.loads(out)
        runs = [r / 1e6 for r in doc["runs"][1:]]  # the first began before the budget
        gaps = [g / 1e6 for g in doc["gaps"]]
        how = f", a 20-us sleep every {args.sleep_every:g} ms" if args.sleep_every else ""
        print(f"{args.share:g}% budget, period {rec['period_us'] / 1000:g} ms (quota "
              f"{rec['quota_us'] / 1000:g} ms), {args.time:g} s on CPU {cpu}{how}: "
              f"{len(gaps) / args.time:.0f} waits a second; ran median {pct(runs, 50):.2f} ms, "
              f"p99 {pct(runs, 99):.2f}, most {max(runs, default=0):.2f}; waited median "
              f"{pct(gaps, 50):.2f} ms, p99 {pct(gaps, 99):.2f}, most {max(gaps, default=0):.2f}")


class Softirqs:
    """On one CPU: the time in softirq by the pid of the task it ran in (0: the idle task) and
    by vector, and each task's time on the CPU from being switched in to out, from the kernel's
    irq:softirq_entry, irq:softirq_exit and sched:sched_switch events, in a trace instance of
    its own on a tracefs mounted for the purpose (both removed at the end)."""

    EVENTS = ("irq/softirq_entry", "irq/softirq_exit", "sched/sched_switch")

    def __init__(self, cpu):
        self.cpu = cpu
        self.by_pid = {}  # pid: seconds of softirq in its context
        self.by_vec = {}  # vector name: seconds
        self.on_cpu = {}  # pid: seconds switched in

    def __enter__(self):
        self.mnt = tempfile.mkdtemp(prefix="budget_probe.")
        sh("mount", "-t", "tracefs", "nodev", self.mnt)
        self.dir = os.path.join(self.mnt, "instances", PREFIX)
        os.mkdir(self.dir)
        settings = [("tracing_cpumask", f"{1 << self.cpu:x}"), ("buffer_size_kb", "32768")]
        settings += [(f"events/{e}/enable", "1") for e in self.EVENTS] + [("tracing_on", "1")]
        for name, value in settings:
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(value)
        return self

    def __exit__(self, *exc):
        try:
            with open(os.path.join(self.dir, "tracing_on"), "w") as f:
                f.write("0")
            with open(os.path.join(self.dir, "trace")) as f:
                self.parse(f)
        finally:
            os.rmdir(self.dir)
            sh("umount", self.mnt)
            os.rmdir(self.mnt)

    LINE = re.compile(r"\s*(.+)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)")

    def parse(self, lines):
        # "  tunbed-traffic-4242  [001] ..s1.  123.456789: softirq_entry: vec=3 [action=NET_RX]"
        entered, current, since, first = None, None, None, None
        for line in lines:
            m = self.LINE.match(line)
            if not m:
                continue
            pid, t, event, rest = int(m.group(2)), float(m.group(3)), m.group(4), m.group(5)
            if first is None:
                first, current, since = t, pid, t
            if event == "softirq_entry":
                entered = (pid, t, re.search(r"action=(\w+)", rest).group(1))
            elif event == "softirq_exit" and entered and entered[0] == pid:
                self.by_pid[pid] = self.by_pid.get(pid, 0.0) + t - entered[1]
                self.by_vec[entered[2]] = self.by_vec.get(entered[2], 0.0) + t - entered[1]
                entered = None
            elif event == "sched_switch":
                prev = int(re.search(r"prev_pid=(\d+)", rest).group(1))
                nxt = int(re.search(r"next_pid=(\d+)", rest).group(1))
                if prev == current:
                    self.on_cpu[prev] = self.on_cpu.get(prev, 0.0) + t - since
                current, since = nxt, t
        if current is not None:
            self.on_cpu[current] = self.on_cpu.get(current, 0.0) + t - since


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def softirq(args):
    a, z = f"{PREFIX}a", f"{PREFIX}z"
    procs = []
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", z)
        sh("ip", "link", "add", "veth0", "netns", a, "type", "veth", "peer", "name", "veth0",
           "netns", z)
        for n, addr in ((a, "198.18.0.1/30"), (z, "198.18.0.2/30")):
            sh("ip", "-n", n, "addr", "add", addr, "dev", "veth0")
            sh("ip", "-n", n, "link", "set", "veth0", "up")
            sh("ip", "-n", n, "link", "set", "lo", "up")
        srv_cpu, cli_cpu = CPUS[0], CPUS[-1]
        server = subprocess.Popen(["ip", "netns", "exec", z, TRAFFIC, "server", "--threads", "1",
                                   "--cpus", str(srv_cpu), "--bind", "198.18.0.2"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append(server)
        deadline = time.monotonic() + 30
        while "198.18.0.2:9400" not in sh("ip", "netns", "exec", z, "ss", "-Htln"):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("tunbed-traffic server did not listen")
            time.sleep(0.05)
        soft = ksoftirqd(cli_cpu)
        for share in args.shares.split(","):
            measure_softirq(a, cli_cpu, soft, None if share == "off" else float(share), args,
                            procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for n in (a, z):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def measure_softirq(ns, cpu, soft, share, args, procs):
    length = args.window + 4
    client = subprocess.Popen(["ip", "netns", "exec", ns, TRAFFIC, "client", "198.18.0.2",
                               "--threads", "1", "--cpus", str(cpu), "--time", str(length),
                               "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    procs.append(client)
    with budget.Budgets(PREFIX) as b:
        # ip netns exec becomes tunbed-traffic (exec): the same pid. Its threads once the
        # session sends, each with the budget.
        deadline = time.monotonic() + 30
        while True:
            tids = threads(client.pid)
            busy = [t for t in tids if runtime_s(t) > 0.05]
            if busy:
                break
            if time.monotonic() > deadline or client.poll() is not None:
                raise SystemExit(f"tunbed-traffic client did not send: {client.stderr.read()}")
            time.sleep(0.05)
        if share is not None:
            for t in tids:
                b.add(t, share, cpu=cpu)
        time.sleep(1)  # the budget's steady state
        tracer = Softirqs(cpu) if args.trace else contextlib.nullcontext()
        with tracer:
            c0, k0, t0, w0 = cpu_ticks(cpu), runtime_s(soft), time.monotonic(), \
                sum(runtime_s(t) for t in tids)
            time.sleep(args.window)
            c1, k1, t1, w1 = cpu_ticks(cpu), runtime_s(soft), time.monotonic(), \
                sum(runtime_s(t) for t in tids)
        out, err = client.communicate(timeout=length + 30)
    d = [y - x for x, y in zip(c0, c1)]
    total = sum(d)
    user, nice, system, idle, iowait, irq, sirq, steal = (100 * x / total for x in d)
    doc = json.loads(out)
    print(f"client {'without a budget' if share is None else f'with a {share:g}% budget'} on "
          f"CPU {cpu}, {t1 - t0:.2f} s: its threads {100 * (w1 - w0) / (t1 - t0):.1f}% of the "
          f"CPU; the CPU busy {100 - idle - iowait:.1f}% (user {user + nice:.1f}, system "
          f"{system:.1f}, softirq {sirq + irq:.1f}); ksoftirqd/{cpu} "
          f"{100 * (k1 - k0) / (t1 - t0):.1f}%; {doc['tcp']['bits_per_second'] / 1e9:.2f} "
          f"Gbit/s over the session's {doc['measured_s']:g} s")
    if args.trace:
        span = t1 - t0
        ours = sum(v for p, v in tracer.by_pid.items() if p in tids)
        theirs = tracer.by_pid.get(soft, 0.0)
        rest = sum(tracer.by_pid.values()) - ours - theirs
        vecs = ", ".join(f"{k} {100 * v / span:.1f}%" for k, v in
                         sorted(tracer.by_vec.items(), key=lambda kv: -kv[1]) if v / span >= 1e-3)
        on = sum(v for p, v in tracer.on_cpu.items() if p in tids)
        print(f"  traced on CPU {cpu}: softirq in the client's threads' context "
              f"{100 * ours / span:.1f}% of the CPU, in ksoftirqd/{cpu}'s "
              f"{100 * theirs / span:.1f}%, in other tasks' {100 * rest / span:.1f}% ({vecs}); "
              f"the client's threads switched in {100 * on / span:.1f}% of the time, against "
              f"{100 * (w1 - w0) / span:.1f}% of run time charged to them")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    w = sub.add_parser("window")
    w.add_argument("--share", type=float, default=20)
    w.add_argument("--repeats", type=int, default=5)
    w.add_argument("--window", type=float, default=2)
    d = sub.add_parser("delay")
    d.add_argument("--share", type=float, default=20)
    d.add_argument("--periods", default="5000,100000")
    d.add_argument("--time", type=float, default=3)
    d.add_argument("--sleep-every", type=float, default=0)
    s = sub.add_parser("softirq")
    s.add_argument("--shares", default="20,50,off")
    s.add_argument("--window", type=float, default=2)
    s.add_argument("--trace", action="store_true")
    args = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("budget_probe: needs root (cgroups, namespaces)")
    {"window": window, "delay": delay, "softirq": softirq}[args.what](args)


if __name__ == "__main__":
    main()
