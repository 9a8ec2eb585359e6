#!/usr/bin/env python3
"""Benchmark (not a test): what a full-sized GRE frame costs the box to send and to receive,
the way gregw does it today and the ways it could, on a veth pair, in one run, interleaved.

  scripts/bench/frame_paths.py [--paths packet,xdp-rx,...] [--time 5] [--repeats 3]
                               [--cpus 0,1] [--json FILE]

  +-- ns A ------------+        +-- ns B ------------+
  | sender (CPU 0)     |        | receiver (CPU 1)   |
  | fa0 (198.18.0.1) --+--veth--+-- fb0 (198.18.0.2) |
  +--------------------+        +--------------------+

Every path pairs a sender and a receiver of tunbed-framebench (docs/framebench.md). For every
repeat and path: build the pair, start the receiver and wait for its ready line, run the
sender for --time seconds, take the busy time of each CPU from /proc/stat over the send,
stop the receiver and read its counts; then take the pair down. Prints medians (min-max) of
frames received a second and the CPU time a received frame cost on each CPU and in all,
and that cost against the first path's. veth delivers in the sender's softirq, so the
receiving kernel's work shows on the sender's CPU; the receiver's CPU has its process.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FB = os.path.join(ROOT, "build", "bin", "tunbed-framebench")
PREFIX = f"tbfb{os.getpid()}"
HZ = os.sysconf("SC_CLK_TCK")

# name: (send --via, send --csum, recv --via, what it stands for)
PATHS = {
    "packet": ("mmsg", "partial", "ring", "gregw's today: sendmmsg, TPACKET_V2 ring + tcx drop"),
    "packet-full": ("mmsg", "full", "ring", "the same, checksums completed by the sender"),
    "xdp-rx": ("mmsg", "full", "xdp-generic", "sendmmsg, AF_XDP receive (generic XDP)"),
    "xdp-rx-drv": ("mmsg", "full", "xdp", "sendmmsg, AF_XDP receive (veth's XDP)"),
    "xsk-tx": ("xsk", "full", "ring", "AF_XDP send, TPACKET_V2 ring"),
    "xdp": ("xsk", "full", "xdp-generic", "AF_XDP both ways (generic XDP receive)"),
    "xdp-drv": ("xsk", "full", "xdp", "AF_XDP both ways (veth's XDP receive)"),
    "txring": ("txring", "partial", "ring", "AF_PACKET TX ring, TPACKET_V2 ring"),
}


def run(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def ns(host, *cmd):
    return ["ip", "netns", "exec", f"{PREFIX}-{host}", *cmd]


def cpu_busy():
    """Busy seconds of every CPU (all but idle and iowait), from /proc/stat."""
    busy = {}
    with open("/proc/stat") as f:
        for line in f:
            name, *v = line.split()
            if name.startswith("cpu") and name != "cpu":
                v = [int(x) for x in v[:8]]
                busy[int(name[3:])] = (sum(v) - v[3] - v[4]) / HZ
    return busy


def up():
    for h in ("a", "b"):
        run("ip", "netns", "add", f"{PREFIX}-{h}")
        run(*ns(h, "ip", "link", "set", "lo", "up"))
        # No IPv6: its router solicitations would reach an AF_XDP receiver as frames not ours.
        run(*ns(h, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1"))
    run(*ns("a", "ip", "link", "add", "fa0", "type", "veth", "peer", "name", "fb0",
            "netns", f"{PREFIX}-b"))
    run(*ns("a", "ip", "addr", "add", "198.18.0.1/30", "dev", "fa0"))
    run(*ns("b", "ip", "addr", "add", "198.18.0.2/30", "dev", "fb0"))
    run(*ns("a", "ip", "link", "set", "fa0", "up"))
    run(*ns("b", "ip", "link", "set", "fb0", "up"))
    out = subprocess.run(ns("b", "cat", "/sys/class/net/fb0/address"), check=True,
                         capture_output=True, text=True).stdout
    return out.strip()


def down():
    for h in ("a", "b"):
        subprocess.run(["ip", "netns", "del", f"{PREFIX}-{h}"], capture_output=True)


def one(path, secs, cpus):
    via_tx, csum, via_rx, _ = PATHS[path]
    mac = up()
    rx = subprocess.Popen(ns("b", "taskset", "-c", str(cpus[1]), FB, "recv", "--dev", "fb0",
                             "--via", via_rx),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = rx.stdout.readline()
        if not json.loads(line or "{}").get("ready"):
            raise RuntimeError(f"{path}: receiver did not start: {rx.stderr.read().strip()}")
        b0 = cpu_busy()
        tx = subprocess.run(ns("a", "taskset", "-c", str(cpus[0]), FB, "send", "--dev", "fa0",
                               "--dst-mac", mac, "--via", via_tx, "--csum", csum,
                               "--seconds", str(secs)),
                            capture_output=True, text=True)
        b1 = cpu_busy()
        if tx.returncode:
            raise RuntimeError(f"{path}: sender failed: {tx.stderr.strip()}")
        rx.send_signal(signal.SIGTERM)
        out, err = rx.communicate(timeout=30)
        if rx.returncode:
            raise RuntimeError(f"{path}: receiver failed: {err.strip()}")
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
        down()
    sent, got = json.loads(tx.stdout), json.loads(out)
    frames = max(got["frames"], 1)
    per = {c: (b1[c] - b0[c]) * 1e9 / frames for c in cpus}
    return {
        "path": path, "sent": sent, "received": got,
        "frames_per_s": got["frames"] / sent["seconds"],
        "ns_per_frame": {str(c): per[c] for c in cpus},
        "ns_per_frame_total": sum(per.values()),
    }


def med(xs):
    return f"{statistics.median(xs):.0f} ({min(xs):.0f}-{max(xs):.0f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", default=",".join(PATHS),
                    help="comma-separated, the first is the baseline (default: all: "
                         + ", ".join(PATHS) + ")")
    ap.add_argument("--time", type=float, default=5, help="seconds a send (default 5)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of every path (default 3)")
    ap.add_argument("--cpus", default="0,1", help="sender's CPU,receiver's CPU (default 0,1)")
    ap.add_argument("--json", help="also write every run to FILE")
    a = ap.parse_args()
    paths = a.paths.split(",")
    bad = [p for p in paths if p not in PATHS]
    if bad:
        sys.exit(f"frame_paths: unknown path '{bad[0]}': expected one of {', '.join(PATHS)}")
    try:
        cpus = [int(c) for c in a.cpus.split(",")]
    except ValueError:
        cpus = []
    if len(cpus) != 2 or cpus[0] == cpus[1] or any(c not in cpu_busy() for c in cpus):
        sys.exit(f"frame_paths: bad value '{a.cpus}' for --cpus: expected two CPUs of this box")
    if a.time <= 0 or a.repeats < 1:
        sys.exit("frame_paths: --time and --repeats must be positive")
    if not os.access(FB, os.X_OK):
        sys.exit(f"frame_paths: {FB} is not built (cmake --build build)")
    runs = []
    try:
        for r in range(a.repeats):
            for p in paths:
                print(f"repeat {r + 1}/{a.repeats}: {p} ...", file=sys.stderr, flush=True)
                runs.append(one(p, a.time, cpus))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        down()
        sys.exit(f"frame_paths: {e}")
    except KeyboardInterrupt:
        down()
        sys.exit(130)
    base = statistics.median(x["ns_per_frame_total"] for x in runs if x["path"] == paths[0])
    print(f"{'path':12} {'frames/s':>22} {'ns/frame cpu' + str(cpus[0]):>20} "
          f"{'cpu' + str(cpus[1]):>16} {'total':>18} {'x ' + paths[0]:>10} {'drops':>7}")
    for p in paths:
        rs = [x for x in runs if x["path"] == p]
        tot = [x["ns_per_frame_total"] for x in rs]
        print(f"{p:12} {med([x['frames_per_s'] for x in rs]):>22} "
              f"{med([x['ns_per_frame'][str(cpus[0])] for x in rs]):>20} "
              f"{med([x['ns_per_frame'][str(cpus[1])] for x in rs]):>16} {med(tot):>18} "
              f"{statistics.median(tot) / base:>10.2f} "
              f"{statistics.median(x['received']['drops'] for x in rs):>7.0f}")
    print()
    for p in paths:
        print(f"  {p:12} {PATHS[p][3]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"format": 1, "time": a.time, "cpus": cpus, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
