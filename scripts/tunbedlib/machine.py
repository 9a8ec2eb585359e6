"""This machine's facts, as a run's provenance and a namespace run's records keep them: its CPU
model and count, memory, kernel, and whether the kernel accounts IRQ time apart from the
threads it interrupts (which decides what escapes a CPU budget: docs/scaling.md); and what one
copy of a byte costs it (copy_cost), the floor under a userspace gateway's cost."""

import contextlib
import os
import platform
import time

from . import budget

COPY_CHUNK = 64 << 10   # a copy at a time: a superpacket's
COPY_AREA = 32 << 20    # copied from and to: larger than the caches, as a gateway's data is
COPY_BYTES = 256 << 20  # copied in all, a round (about 25 ms on the test machine)
COPY_ROUNDS = 3         # the fastest is kept: a floor


def facts():
    """{"cpu_model", "cpus", "memory_bytes", "kernel", "irq_time_accounting"}; a value this
    machine does not tell is None."""
    model, memory = None, None
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f
                          if ln.startswith("model name")), None)
    with contextlib.suppress(OSError, ValueError, IndexError, StopIteration):
        with open("/proc/meminfo") as f:
            memory = int(next(ln for ln in f if ln.startswith("MemTotal:")).split()[1]) * 1024
    return {"cpu_model": model, "cpus": os.cpu_count(), "memory_bytes": memory,
            "kernel": platform.release(), "irq_time_accounting": budget.irq_time_accounting()}


def copy_cost():
    """CPU-seconds one copy of 10^9 bytes costs this machine: 64 KB at a time over 32 MB, the
    fastest of three rounds of this thread's CPU time. A userspace gateway copies every byte
    four times (a TUN read, a send, the peer's receive, its TUN write: docs/gregw.md), so four
    times this is the least its pair of gateways can cost a GB."""
    src = bytearray(b"\xa5") * COPY_AREA
    dst = bytearray(b"\x5a") * COPY_AREA
    s, d = memoryview(src), memoryview(dst)
    best = None
    for _ in range(COPY_ROUNDS):
        start = time.thread_time_ns()
        for i in range(COPY_BYTES // COPY_CHUNK):
            o = i * COPY_CHUNK % COPY_AREA
            d[o:o + COPY_CHUNK] = s[o:o + COPY_CHUNK]
        spent = (time.thread_time_ns() - start) / 1e9
        best = spent if best is None else min(best, spent)
    return best * 1e9 / COPY_BYTES
