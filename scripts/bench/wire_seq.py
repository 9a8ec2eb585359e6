#!/usr/bin/env python3
"""Benchmark (not a test): how long tunbed-wire takes over GRE sequence numbers in order and
at random (a hostile or broken peer), from capture files this script writes.

  scripts/bench/wire_seq.py [--frames 50000] [--repeats 3] [--bin build/bin/tunbed-wire]

Writes two pcap files of --frames IPv4 GRE frames on Ethernet, 198.18.0.1 -> 198.18.0.2,
each with a sequence number and a small inner UDP packet: one numbered 0, 1, 2, ..., the other
with numbers drawn at random from the whole 32-bit space (a fixed seed), so about half the
frames jump the 2^18-number window. Runs `tunbed-wire --read FILE --seq --json` on each,
--repeats times, and prints the median, min and max wall time, and the sequence figures of the
last run. Needs no root; uses only Python's standard library.
"""

import argparse
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0,
                      bytes(src), bytes(dst))
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + payload


def frame(seq):
    udp = struct.pack("!HHHH", 40000, 9400, 8 + 16, 0) + bytes(16)
    inner = ipv4((198, 18, 1, 2), (198, 18, 3, 2), 17, udp)
    gre = struct.pack("!HHI", 0x1000, 0x0800, seq) + inner  # S bit, IPv4
    outer = ipv4((198, 18, 0, 1), (198, 18, 0, 2), 47, gre)
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + outer


def write_pcap(path, seqs):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, seq in enumerate(seqs):
            b = frame(seq)
            f.write(struct.pack("<IIII", 1 + i // 1000000, i % 1000000, len(b), len(b)))
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=50000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "tunbed-wire"))
    a = ap.parse_args()
    rnd = random.Random(1)
    with tempfile.TemporaryDirectory() as d:
        files = {
            "in order": (os.path.join(d, "inorder.pcap"), range(a.frames)),
            "random": (os.path.join(d, "random.pcap"),
                       [rnd.getrandbits(32) for _ in range(a.frames)]),
        }
        for path, seqs in files.values():
            write_pcap(path, seqs)
        for name, (path, _) in files.items():
            times = []
            for _ in range(a.repeats):
                t0 = time.monotonic()
                out = subprocess.run([a.bin, "--read", path, "--seq", "--json"],
                                     capture_output=True, text=True, check=False)
                times.append(time.monotonic() - t0)
                if out.returncode != 0:
                    sys.exit(f"wire_seq.py: {a.bin} exited {out.returncode}: {out.stderr}")
            seq = json.loads(out.stdout)["directions"][0]["seq"]
            print(f"{name:9} {a.frames} frames: median {statistics.median(times) * 1000:.1f} ms "
                  f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}, "
                  f"{a.repeats} runs); seq {seq}")


if __name__ == "__main__":
    main()
