#!/usr/bin/env python3
"""Benchmark (not a test): a GRE gateway pair on ras.topo, gregw against Open vSwitch's
userspace GRE, in one run, interleaved, with iperf3 (Debian) as the traffic.

  scripts/bench/gre_pair.py [--gateways gregw,ovs] [--streams 1,8] [--time 10] [--repeats 3]
                            [--key 7] [--json FILE]

For every repeat, gateway and stream count: build ras.topo, start the gateway on gwa and gwb,
run iperf3 client -> server for --time seconds after a 1 s omitted warm-up, take the
receiver's throughput and the sender's retransmits, and the CPU time of the gateway
processes (utime + stime from /proc, both gateways) and of the whole box (/proc/stat) over
the iperf3 run; then take everything down. Prints medians with min and max, and CPU-seconds
per GB forwarded. A stop-gap until the runner's `tunbed compare` (issue 5) exists; it talks
to the tools only through their command lines and JSON.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "bin")
TOPO = os.path.join(BIN, "tunbed-topo")
GREGW = os.path.join(BIN, "gregw")
OVS = os.path.join(ROOT, "scripts", "drivers", "ovs-gre.sh")
PREFIX = f"tbbench{os.getpid()}"
HZ = os.sysconf("SC_CLK_TCK")


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def ns(host, *cmd):
    return ["ip", "netns", "exec", f"{PREFIX}-{host}", *cmd]


def proc_cpu(pid):
    """utime + stime of a process and all its threads, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def box_cpu():
    """Busy seconds of the whole box (all CPUs), from the aggregate /proc/stat line."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / HZ


class Gregw:
    name = "gregw"

    def __init__(self, key, mirror):
        self.key, self.procs, self.mirror = key, [], mirror

    def up(self):
        cpus = sorted(os.sched_getaffinity(0))
        for host, remote, addr, route, order in (
                ("gwa", "198.18.0.2", "198.19.0.1/24", "198.18.3.0/24", cpus),
                ("gwb", "198.18.0.1", "198.19.0.2/24", "198.18.1.0/24",
                 cpus[::-1] if self.mirror else cpus)):
            sock = f"/run/gregw/{PREFIX}-{host}.bench.sock"
            p = subprocess.Popen(ns(host, GREGW, "--remote", remote, "--addr", addr, "--route", route,
                                    "--key", str(self.key), "--ctl", sock,
                                    "--cpus", ",".join(map(str, order))),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.procs.append(p)
            for _ in range(100):
                if subprocess.run([GREGW, "ctl", sock, "stats"], capture_output=True).returncode == 0:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"gregw on {host} did not start")

    def pids(self):
        return [p.pid for p in self.procs]

    def down(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(timeout=10)
        self.procs = []


class Ovs:
    name = "ovs"

    def __init__(self, key):
        self.key = key

    def up(self):
        for host, local, remote, addr, route in (
                ("gwa", "198.18.0.1", "198.18.0.2", "198.19.0.1/24", "198.18.3.0/24"),
                ("gwb", "198.18.0.2", "198.18.0.1", "198.19.0.2/24", "198.18.1.0/24")):
            sh(OVS, "up", "--netns", f"{PREFIX}-{host}", "--local", local, "--remote", remote,
               "--addr", addr, "--key", str(self.key), "--route", route)
        # OVS learns its neighbour from the first packets: get that done before measuring.
        for _ in range(50):
            if subprocess.run(ns("client", "ping", "-c", "1", "-W", "1", "198.18.3.2"),
                              capture_output=True).returncode == 0:
                return
        raise RuntimeError("no ping through the OVS pair")

    def pids(self):
        out = []
        for host in ("gwa", "gwb"):
            out += [int(x) for x in sh(OVS, "pids", "--netns", f"{PREFIX}-{host}").split()]
        return out

    def down(self):
        for host in ("gwa", "gwb"):
            subprocess.run([OVS, "down", "--netns", f"{PREFIX}-{host}"], capture_output=True)


def measure(gw, streams, seconds):
    sh(TOPO, "up", "ras", "--prefix", PREFIX)
    try:
        gw.up()
        try:
            server = subprocess.Popen(ns("server", "iperf3", "-s", "-1", "-B", "198.18.3.2"),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            pids = gw.pids()
            c0, b0, t0 = sum(proc_cpu(p) for p in pids), box_cpu(), time.monotonic()
            out = sh(*ns("client", "iperf3", "-c", "198.18.3.2", "-t", str(seconds), "-O", "1",
                         "-P", str(streams), "-J"))
            c1, b1, t1 = sum(proc_cpu(p) for p in pids), box_cpu(), time.monotonic()
            server.wait(timeout=10)
        finally:
            gw.down()
    finally:
        sh(TOPO, "down", "--prefix", PREFIX)
    end = json.loads(out)["end"]
    rx_bytes = end["sum_received"]["bytes"]
    # CPU over the whole iperf3 run (warm-up included); bytes likewise, for the ratio.
    all_bytes = end["sum_sent"]["bytes"]
    return {
        "gbps": end["sum_received"]["bits_per_second"] / 1e9,
        "retransmits": end["sum_sent"].get("retransmits", 0),
        "gw_cpu_s": c1 - c0,
        "box_cpu_s": b1 - b0,
        "wall_s": t1 - t0,
        "bytes": rx_bytes,
        "gw_cpu_s_per_gb": (c1 - c0) / (all_bytes / 1e9),
        "box_cpu_s_per_gb": (b1 - b0) / (all_bytes / 1e9),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gateways", default="gregw,ovs")
    ap.add_argument("--streams", default="1,8")
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--key", type=int, default=7)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--mirror", action="store_true",
                    help="pin gwb's gregw workers to the CPUs in reverse order, so that the two "
                         "workers of one flow run on different CPUs")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("gre_pair.py: needs root (namespaces)")
    gws = {"gregw": Gregw(args.key, args.mirror), "ovs": Ovs(args.key)}
    names = args.gateways.split(",")
    streams = [int(s) for s in args.streams.split(",")]
    results = {}
    for rep in range(args.repeats):
        for name in names:
            for s in streams:
                r = measure(gws[name], s, args.time)
                results.setdefault((name, s), []).append(r)
                print(f"repeat {rep + 1} {name:5} -P {s}: {r['gbps']:.2f} Gbit/s, "
                      f"{r['retransmits']} retransmits, gateways {r['gw_cpu_s_per_gb']:.1f} "
                      f"CPU-s/GB, box {r['box_cpu_s_per_gb']:.1f} CPU-s/GB", file=sys.stderr)
    print("| gateway | streams | Gbit/s median (min-max) | retransmits median | "
          "gateway CPU-s/GB | box CPU-s/GB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (name, s), rs in results.items():
        g = [r["gbps"] for r in rs]
        med = lambda k: statistics.median(r[k] for r in rs)
        print(f"| {name} | {s} | {statistics.median(g):.2f} ({min(g):.2f}-{max(g):.2f}) | "
              f"{med('retransmits'):.0f} | {med('gw_cpu_s_per_gb'):.1f} | "
              f"{med('box_cpu_s_per_gb'):.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{n} -P {s}": rs for (n, s), rs in results.items()}, f, indent=2)


if __name__ == "__main__":
    main()
