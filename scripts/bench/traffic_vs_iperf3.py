#!/usr/bin/env python3
"""Benchmark (not a test): tunbed-traffic against iperf3 (Debian) as generators, side by side.

  scripts/bench/traffic_vs_iperf3.py [--topologies direct,ras] [--sessions 1,8] [--time 10]
                                     [--repeats 3] [--json FILE]

For each repeat, topology and session count, both tools run one after the other on the same
topology (kernel forwarding on ras.topo), client -> server: iperf3 -c -P N -t T, and
tunbed-traffic client --sessions N --time T. Throughput is each tool's receiver count; CPU is
each tool's own account of its client and server (iperf3's cpu_utilization_percent times the
duration; tunbed-traffic's thread CPU times). Prints medians with min and max, and the ratios.
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
PREFIX = f"tbgen{os.getpid()}"
SERVER = {"direct": "198.18.1.2", "ras": "198.18.3.2"}


def ns(host, *cmd):
    return ["ip", "netns", "exec", f"{PREFIX}-{host}", *cmd]


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def listening(port):
    return bool(subprocess.run(ns("server", "ss", "-Hltn", f"sport = :{port}"),
                               capture_output=True, text=True).stdout.strip())


def wait_listening(port):
    for _ in range(100):
        if listening(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def run_iperf3(addr, n, t):
    srv = subprocess.Popen(ns("server", "iperf3", "-s", "-1", "-B", addr),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(5201)
        d = json.loads(sh(*ns("client", "iperf3", "-c", addr, "-P", str(n), "-t", str(t), "-J")))
    finally:
        srv.wait(timeout=15)
    e = d["end"]
    gb = e["sum_received"]["bytes"] / 1e9
    cpu = (e["cpu_utilization_percent"]["host_total"] +
           e["cpu_utilization_percent"]["remote_total"]) / 100 * t
    return {"gbps": e["sum_received"]["bits_per_second"] / 1e9, "cpu_s": cpu, "cpu_per_gb": cpu / gb}


def run_tunbed(addr, n, t):
    d = json.loads(sh(*ns("client", os.path.join(BIN, "tunbed-traffic"), "client", addr,
                          "--sessions", str(n), "--time", str(t), "--json")))
    gb = d["tcp"]["bytes"] / 1e9
    cpu = d["cpu"]["client_s"] + d["cpu"]["server_s"]
    return {"gbps": d["tcp"]["bits_per_second"] / 1e9, "cpu_s": cpu, "cpu_per_gb": cpu / gb}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topologies", default="direct,ras")
    ap.add_argument("--sessions", default="1,8")
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("traffic_vs_iperf3.py: needs root (namespaces)")
    results = {}
    for topo in args.topologies.split(","):
        sh(os.path.join(BIN, "tunbed-topo"), "up", topo, "--prefix", PREFIX)
        server = subprocess.Popen(ns("server", os.path.join(BIN, "tunbed-traffic"), "server"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening(9400)
            for rep in range(args.repeats):
                for n in [int(x) for x in args.sessions.split(",")]:
                    for tool, fn in (("iperf3", run_iperf3), ("tunbed-traffic", run_tunbed)):
                        r = fn(SERVER[topo], n, args.time)
                        results.setdefault((topo, n, tool), []).append(r)
                        print(f"repeat {rep + 1} {topo} {n} sessions {tool}: {r['gbps']:.2f} "
                              f"Gbit/s, {r['cpu_per_gb']:.3f} CPU-s/GB", file=sys.stderr)
        finally:
            server.terminate()
            server.wait(timeout=10)
            sh(os.path.join(BIN, "tunbed-topo"), "down", "--prefix", PREFIX)
    print("| topology | sessions | tool | Gbit/s median (min-max) | CPU-s/GB median |"
          " throughput vs iperf3 | CPU/GB vs iperf3 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (topo, n, tool), rs in results.items():
        g = [r["gbps"] for r in rs]
        c = statistics.median(r["cpu_per_gb"] for r in rs)
        base = results[(topo, n, "iperf3")]
        bg = statistics.median(r["gbps"] for r in base)
        bc = statistics.median(r["cpu_per_gb"] for r in base)
        print(f"| {topo} | {n} | {tool} | {statistics.median(g):.2f} ({min(g):.2f}-{max(g):.2f}) "
              f"| {c:.3f} | {statistics.median(g) / bg:.2f} | {c / bc:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{t} {n} {tool}": rs for (t, n, tool), rs in results.items()}, f, indent=2)


if __name__ == "__main__":
    main()
