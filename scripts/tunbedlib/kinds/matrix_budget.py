"""Emulated gateway cores in a gateway scenario (`--gateway-cpu SHARE`, scenario key
`gateway_cpu`; docs/scaling.md): the option checked before anything starts (a share of 1-100%
of a core, one cpu controller to give it with), a namespace bed whose run holds one
budget.Budgets (made when the bed opens, emptied after every point, removed when it closes,
whatever happens), and each point's gateway threads budgeted and pinned once the driver has
named them (gregw's workers from its telemetry; every thread of another userspace gateway's
processes). Kernel gateways have no threads to budget: their points run unbudgeted, with a
note. And the generator's budget (`--client-cpu SHARE`, `client_cpu`): each traffic client
process, all its threads together, SHARE percent of one core, to see a point the generator
limits."""

import contextlib
import os
import time

from .. import bed as beds
from .. import budget, limits, scenario
from ..common import Failure, ScenarioError, deferred_signals


# The main job's budget, percent of a core per gregw worker (tunbed ras in namespaces): on a
# 2-CPU machine every point of it is gateway-bound, far below the generators' ceiling through
# route (docs/benchmarks.md, the main job with emulated cores), so that its curve is the
# gateway's scaling and not the box's.
RAS_SHARE = 15.0


def check(sc, text, hosts, prefix=None, notes=None):
    """The budget of sc: --gateway-cpu's text over the file's gateway_cpu; the share (None:
    off) and the controller to give it with. A ScenarioError in one line for a bad share, a
    run on hosts, a machine without a cpu controller, or the budgets of a run of prefix
    (going on, or killed and not cleaned up). With notes, a list, the share not given on the
    command line is the command's own default (tunbed ras's RAS_SHARE): on hosts or without a
    cpu controller it is turned off instead, with a note added that says so."""
    def off(refusal, note):
        if notes is None or text is not None:
            raise ScenarioError(refusal)
        sc.gateway_cpu = None
        notes.append(note)
        return None, None

    if asked(sc, text) is None:
        return None, None
    if hosts:
        return off("--gateway-cpu (gateway_cpu) budgets threads of this machine: the hosts "
                   "mode has none",
                   "emulated cores off: on hosts the gateways run on their own cores "
                   "(--gateway-cpu budgets threads of this machine)")
    try:
        ctl = budget.find()
    except budget.BudgetError as e:
        return off(str(e), f"emulated cores off, {e}: the four roles share this machine's "
                           "CPUs, so a point may measure the box rather than the gateway (its "
                           "verdict says)")
    free(ctl, prefix)
    return sc.gateway_cpu, ctl


def free(ctl, prefix):
    """A ScenarioError when the budgets of a run of prefix are there (going on, or killed and
    not cleaned up)."""
    try:
        parent = os.path.join(ctl.root, budget.parent_name(prefix)) if prefix else None
    except budget.BudgetError as e:
        raise ScenarioError(str(e)) from None
    if parent and os.path.lexists(parent):
        raise ScenarioError(f"{parent} exists: a run with prefix {prefix} is going on or was "
                            f"killed (tunbed down --prefix {prefix} removes what it left)")


def check_client(sc, text, hosts, prefix=None):
    """The generator's budget (--client-cpu over the file's client_cpu, set in sc): the
    controller to give it with, None for off; a ScenarioError in one line for a bad share, a
    run on hosts, no cpu controller or a run of prefix that left its budgets."""
    if asked(sc, text, "client_cpu", "client") is None:
        return None
    if hosts:
        raise ScenarioError("--client-cpu (client_cpu) budgets processes of this machine: the "
                            "hosts mode has none")
    try:
        ctl = budget.find()
    except budget.BudgetError as e:
        raise ScenarioError(str(e)) from None
    free(ctl, prefix)
    return ctl


def asked(sc, text, key="gateway_cpu", whose="gateway thread"):
    """The share asked for: the option's text (--gateway-cpu, or key's option; None: not
    given) over the file's key, set in sc; None for off. A ScenarioError for a bad share or
    several (one share for every one of whose)."""
    if text is not None:
        try:
            scenario.share_setter(key, whose, "--" + key.replace("_", "-"))(sc, text)
        except ValueError as e:
            raise ScenarioError(str(e)) from None
    return getattr(sc, key)


def namespace_bed(sc, prefix, pins, ctl):
    """The namespace bed of a gateway scenario sc: with the run's budgets (BudgetedBed: each
    gateway thread's sc.gateway_cpu, each traffic client's sc.client_cpu) when ctl, the
    controller check() or check_client() gave, says there are any; the plain one otherwise.
    tunbed ras, compare, run and the datasheet's throughput part all take theirs here."""
    if ctl:
        return BudgetedBed(sc, prefix, pins, sc.gateway_cpu, ctl, sc.client_cpu)
    return beds.NamespaceBed(sc, prefix, pins)


class BudgetedBed(beds.NamespaceBed):
    """The namespace bed with a run's budgets: the parent cgroup tunbed-PREFIX made on open()
    and removed on close(), every budget taken off after each point."""

    def __init__(self, sc, prefix, pins, share, ctl, client_share=None):
        super().__init__(sc, prefix, pins)
        self.share = share  # each gateway thread's; None: the gateway is not budgeted
        self.client_share = client_share  # each traffic client's, all its threads; None: off
        self.budgets = budget.Budgets(prefix, ctl)
        self.made = False
        self.undone = "topology, processes and CPU budgets removed"

    def open(self):
        super().open()
        try:
            self.budgets.__enter__()
        except budget.BudgetError as e:
            raise Failure(str(e)) from None
        self.made = True

    def close(self):
        try:
            super().close()
        finally:
            if self.made:
                self.made = False
                self.budgets.__exit__(None, None, None)

    @contextlib.contextmanager
    def point(self, item):
        with super().point(item) as here:
            try:
                yield here
            finally:
                with deferred_signals():
                    self.budgets.clear()


def threads_of(pid):
    """The TIDs of a process of this machine, in order; none when it has ended."""
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def pin_of(tid, index):
    """The CPU to pin a budgeted thread to: the one it is pinned to already (gregw pins its
    workers, --pin and cpus = too), else one in turn by its index."""
    try:
        cpus = os.sched_getaffinity(tid)
    except OSError:
        cpus = set()
    if len(cpus) == 1:
        return next(iter(cpus))
    return index % (os.cpu_count() or 1)


def give(bed, driver, driver_pids):
    """Budgets and pins the gateway threads of a point that is up, at bed.share each. Returns
    a note for the record when the gateway cannot be budgeted, else None (also without a
    gateway budget)."""
    if bed.share is None:
        return None
    if not driver.can_budget:
        return (f"{driver.name}: a kernel gateway, whose work runs as softirq in other threads: "
                "not budgeted")
    # A worker says its thread id once it runs: one started a moment ago may say 0 still.
    deadline = time.monotonic() + limits.THREADS_READY_S
    driver.telemetry()
    while any(tid <= 0 for (_, tid) in driver.thread_labels()):
        if time.monotonic() > deadline:
            raise Failure(f"{driver.name}: a worker did not say its thread id within "
                          f"{limits.THREADS_READY_S} s")
        time.sleep(0.01)
        driver.telemetry()
    named = sorted(tid for (_, tid) in driver.thread_labels())
    tids = named or [t for _, pid, _ in driver_pids for t in threads_of(pid)]
    if not tids:
        raise Failure(f"{driver.name}: no thread to budget")
    for i, tid in enumerate(tids):
        bed.budgets.add(tid, bed.share, pin_of(tid, i))
    return None


def give_client(bed, pid):
    """Budgets a traffic client that has just started (pid), at bed.client_share for all its
    threads, if the bed has a generator budget: its sessions' threads are made at its start,
    and a thread made later starts in its maker's cgroup, so every one of them is inside."""
    if getattr(bed, "client_share", None) is not None:
        bed.budgets.add_process(pid, bed.client_share)


def export(bed):
    """What the record keeps of the point's budgets: each thread's share, period, quota and
    CPU, with its cgroup's periods and throttling (budget.cpu_stat); and the budgets of whole
    processes (the generator's), by pid."""
    stats = bed.budgets.stats()
    return ({tid: dict(b, throttling=stats.get(tid)) for tid, b in bed.budgets.export().items()},
            bed.budgets.export_processes())
