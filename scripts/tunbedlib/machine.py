"""This machine's facts, as a run's provenance and a namespace run's records keep them: its CPU
model and count, memory, kernel, and whether the kernel accounts IRQ time apart from the
threads it interrupts (which decides what escapes a CPU budget: docs/scaling.md)."""

import contextlib
import os
import platform

from . import budget


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
