#!/usr/bin/env python3
"""Benchmark (not a test): what a tunnel change costs gregw's control thread and the churn
program (scripts/tunbedlib/kinds/tunnels_churn.py), builds side by side, in counts that hold on
a busy machine: system calls and CPU time a change, not throughput. Needs root.

  scripts/bench/churn_cost.py LABEL=BIN:CHURN_PY [LABEL=BIN:CHURN_PY ...] [--rounds 3]
                              [--tunnels 100] [--rate 100] [--seconds 6] [--strace]
                              [--ping-load]

The bed of topo/topologies/tunnels.topo is built once, with topo/tunnels.sh's files of
--tunnels tunnels. Each round runs every build in turn (the order alternates from round to
round): gregw of BIN/ on gwa and gwb with the tunnel files (2 workers, no sessions: the
workers idle, so a change is answered at once; with --ping-load, a ping every millisecond
through the first tunnel, so that some changes find a worker in a pass and their replies
wait for it), then CHURN_PY in the client's namespace at
--rate changes a second on the second half of the tunnels (but the last), its standard input
closed after
--seconds; then the churn again with its input closed at once (one change, the removal of the
last tunnel: the program's start and end), and both gregws stopped. The churn's figures are
the difference between the two, divided by the difference in changes made.

Per run, one JSON line: changes made; the CPU time of each gregw's main thread (the control
thread: /proc/PID/task/PID/schedstat, nanoseconds) over the churn, a change; the churn's
(its rusage, less its one-change run's), a change. With --strace, the same runs under
strace -c instead (gregw's main thread alone, -p TID; the churn with -f): system calls a
change, by name. strace slows what it traces: its runs give counts, not times. At the end,
the medians per build.
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "tunbedlib", "kinds"))
from tunnels_churn import add_lines  # noqa: E402  (stdlib alone: the churn's own reader)
TUNNELS_SH = os.path.join(ROOT, "topo", "tunnels.sh")
PREFIX = f"tbcc{os.getpid() % 100000}"
ADDR = {"gwa": "198.19.0.1/24", "gwb": "198.19.0.2/24"}


def ns(host, *cmd):
    return ["ip", "netns", "exec", f"{PREFIX}-{host}", *cmd]


def thread_ns(pid):
    """CPU time of the process's main thread (its tid is its pid), in nanoseconds."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
        return int(f.read().split()[0])


class Bed:
    def __init__(self, topo, tmp, n):
        self.topo, self.tmp, self.n = topo, tmp, n
        subprocess.run([TUNNELS_SH, str(n), tmp], check=True)
        subprocess.run([topo, "up", "tunnels", "--prefix", PREFIX], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(tmp, "tunnels.tsv")) as f:
            head, *rows = [line.rstrip("\n").split("\t") for line in f]
        self.rows = [dict(zip(head, r)) for r in rows]
        self.adds = {}
        for role in ("gwa", "gwb"):
            with open(os.path.join(tmp, f"{role}.tunnels")) as f:
                self.adds[role] = add_lines(f.read())

    def plan(self, rate, socks, base=False):
        """The churn's plan: the second half of the tunnels but the last; base: the last
        alone (the one-change run removes it, on the same gregws)."""
        rows = self.rows[-1:] if base else self.rows[self.n // 2:-1]
        return {"rate": rate, "socks": socks,
                "tunnels": [{"name": r["name"], "src": r["client4"], "dst": r["server4"],
                             "add": {role: self.adds[role][r["name"]] for role in self.adds}}
                            for r in rows]}

    def close(self):
        subprocess.run([self.topo, "down", "tunnels", "--prefix", PREFIX],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Gregws:
    """gregw of one build on gwa and gwb, up until stop()."""

    def __init__(self, bindir, bed, tmp):
        self.procs, self.socks = {}, {}
        gregw = os.path.join(bindir, "gregw")
        for role in ("gwa", "gwb"):
            sock = os.path.join(tmp, f"{role}.sock")
            self.socks[role] = sock
            self.procs[role] = subprocess.Popen(
                ns(role, gregw, "--tunnels", os.path.join(tmp, f"{role}.tunnels"),
                   "--addr", ADDR[role], "--workers", "2", "--ctl", sock),
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, f"{role}.err"), "w"))
        for role, sock in self.socks.items():
            for _ in range(300):
                if subprocess.run([gregw, "ctl", sock, "stats"], capture_output=True
                                  ).returncode == 0:
                    break
                if self.procs[role].poll() is not None:
                    break
                time.sleep(0.1)
            else:
                self.stop()
                sys.exit(f"churn_cost: gregw on {role} did not answer")

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            p.wait(timeout=30)


def strace_counts(path):
    """{syscall: calls} of strace -c's table in path."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
            if m and m.group(2) != "total":
                out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1))
    return out


def churn(bed, churn_py, socks, rate, seconds, tmp, strace):
    """One churn run: its result, its CPU (rusage, s) or its strace counts."""
    cmd = ns("client", sys.executable, "-B", churn_py)
    trace = os.path.join(tmp, "churn.strace")
    if strace:
        cmd = ["strace", "-f", "-c", "-o", trace, *cmd]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write(json.dumps(bed.plan(rate, socks, base=seconds == 0)) + "\n")
    p.stdin.flush()
    line = p.stdout.readline().strip()
    if line != "ready":
        sys.exit(f"churn_cost: the churn did not start: {line!r}")
    time.sleep(seconds)  # the run's length is what it is: the figures are a change's
    p.stdin.close()
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = status
    result = json.loads(out.strip().splitlines()[-1])
    if result.get("error"):
        sys.exit(f"churn_cost: the churn failed: {result['error']}")
    return result, (strace_counts(trace) if strace else ru.ru_utime + ru.ru_stime)


def run(label, bindir, churn_py, bed, args, tmp):
    gws = Gregws(bindir, bed, tmp)
    try:
        tids = {role: p.pid for role, p in gws.procs.items()}
        # ip netns exec execs gregw: the Popen's pid is gregw's, its main thread the control's.
        tracers, before = {}, {}
        if args.strace:
            for role, tid in tids.items():
                tracers[role] = subprocess.Popen(
                    ["strace", "-c", "-o", os.path.join(tmp, f"{role}.strace"), "-p", str(tid)],
                    stderr=subprocess.PIPE, text=True)
                # Attached once strace says so (its first line), before the churn starts.
                tracers[role].stderr.readline()
        else:
            before = {role: thread_ns(tid) for role, tid in tids.items()}
        load = None
        if args.ping_load:
            # A light load on the first (steady) tunnel, so that a change may find a worker
            # in a pass and its reply wait for it (CTL_LATER), as under sessions.
            r0 = bed.rows[0]
            load = subprocess.Popen(ns("client", "ping", "-q", "-i", "0.001", "-I",
                                       r0["client4"], r0["server4"]),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            result, cost = churn(bed, churn_py, gws.socks, args.rate, args.seconds, tmp,
                                 args.strace)
        finally:
            if load is not None:
                load.terminate()
                load.wait()
        gw = {}
        if args.strace:
            for role, t in tracers.items():
                t.send_signal(signal.SIGINT)
                t.wait(timeout=30)
                gw[role] = strace_counts(os.path.join(tmp, f"{role}.strace"))
        else:
            gw = {role: thread_ns(tid) - before[role] for role, tid in tids.items()}
        # The churn's start and end alone: a run of one change, on the same gregws.
        base, base_cost = churn(bed, churn_py, gws.socks, args.rate, 0, tmp, args.strace)
    finally:
        gws.stop()
    n = result["done"] - base["done"]
    doc = {"build": label, "changes": result["done"], "asked": result["asked"],
           "pings": result["pings"]}
    if args.strace:
        calls = {k: cost.get(k, 0) - base_cost.get(k, 0) for k in cost}
        doc["churn_syscalls_per_change"] = round(sum(calls.values()) / n, 2)
        doc["churn_syscalls"] = {k: round(v / n, 2) for k, v in
                                 sorted(calls.items(), key=lambda kv: -kv[1]) if v > 0}
        for role, c in gw.items():
            doc[f"{role}_syscalls_per_change"] = round(sum(c.values()) / result["done"], 2)
            doc[f"{role}_syscalls"] = {k: round(v / result["done"], 2) for k, v in
                                       sorted(c.items(), key=lambda kv: -kv[1])}
    else:
        doc["churn_cpu_ms_per_change"] = round((cost - base_cost) * 1e3 / n, 4)
        for role, t in gw.items():
            doc[f"{role}_ctl_cpu_ms_per_change"] = round(t / 1e6 / result["done"], 4)
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", metavar="LABEL=BIN:CHURN_PY")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tunnels", type=int, default=100)
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--ping-load", action="store_true",
                    help="a ping every millisecond through the first tunnel during the churn")
    args = ap.parse_args()
    builds = []
    for b in args.builds:
        label, _, rest = b.partition("=")
        bindir, _, churn_py = rest.partition(":")
        builds.append((label, bindir, churn_py))
    tmp = tempfile.mkdtemp(prefix="churn_cost.")
    bed = Bed(os.path.join(builds[0][1], "tunbed-topo"), tmp, args.tunnels)
    docs = []
    try:
        for r in range(args.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for label, bindir, churn_py in order:
                doc = run(label, bindir, churn_py, bed, args, tmp)
                doc["round"] = r + 1
                print(json.dumps(doc), flush=True)
                docs.append(doc)
    finally:
        bed.close()
    keys = [k for k in docs[0] if k.endswith("_per_change")]
    for label, _, _ in builds:
        mine = [d for d in docs if d["build"] == label]
        print(json.dumps({"build": label, "runs": len(mine), "median": {
            k: statistics.median(d[k] for d in mine) for k in keys}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
