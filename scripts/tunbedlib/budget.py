"""Emulated gateway cores: each of a set of threads gets a CPU budget of its own (a share of one
core, 1-100%) and a pin (and a whole process, the generator, one budget for all its threads), through the cpu controller's bandwidth limit (CFS bandwidth control):
one cgroup per thread with that thread alone in it, all under one parent per run
(tunbed-PREFIX), in cgroup v1's cpu hierarchy where it is mounted (a TID written to `tasks`
moves that thread alone), else in a cgroup v2 threaded subtree where v2 has the cpu controller.
What a budget is and is not: docs/scaling.md."""

import contextlib
import dataclasses
import errno
import gzip
import math
import os
import re
import stat
import time

from .common import Failure, deferred_signals, log

PERIOD_US = 5000  # a budget's period: short, so that a budget is a slow core, not one that stops
MIN_US = 1000  # the kernel's least period and quota: min_bw_quota_period_us (kernel/sched/core.c)
MAX_PERIOD_US = 1000000  # and its longest period: max_bw_quota_period_us
WEIGHT_V1 = 262144  # cpu.shares at its most (MAX_SHARES, 1 << 18)
WEIGHT_V2 = 10000  # cpu.weight at its most (CGROUP_WEIGHT_MAX)
PREFIX = re.compile(r"[A-Za-z0-9_]{1,15}")  # as tunbed-topo's (topo_prefix_valid, TOPO_PREFIX_LEN)
MOUNTS = "/proc/self/mounts"
EMPTY_TIMEOUT_S = 5  # for the threads of a cgroup to leave it (an exiting one leaves at its end)


class BudgetError(Exception):
    """A budget that cannot be given: one line, said before anything starts (exit status 2)."""


def parse_shares(text, what="--gateway-cpu"):
    """A list of shares of one core in percent ("25", "20,30", "12.5%"), or None for "off";
    a BudgetError quoting the value otherwise."""
    if text.strip().lower() == "off":
        return None
    out = []
    for part in text.split(","):
        p = part.strip().removesuffix("%")
        try:
            share = float(p)
        except ValueError:
            share = None
        if share is None or not math.isfinite(share) or not 1 <= share <= 100:
            raise BudgetError(f"bad value '{part.strip()}' for {what}: a share of one core from "
                              "1 to 100 (percent), or off")
        out.append(share)
    return out


def period_quota(share, period_us=PERIOD_US):
    """(period, quota) in microseconds for share percent of a core: period_us (at most the
    kernel's 1 s), longer where share percent of it would be below the kernel's least quota
    (with PERIOD_US: below 20%; 1% has 100 ms)."""
    period = min(MAX_PERIOD_US, max(period_us, math.ceil(MIN_US * 100 / share)))
    return period, max(MIN_US, round(period * share / 100))


@dataclasses.dataclass
class Controller:
    """Where budgets go: cgroup version 1 or 2, and the hierarchy's mount point."""
    version: int
    root: str


def unescape(field):
    """A path of /proc/self/mounts, whose spaces, tabs, newlines and backslashes are octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def read(path):
    with open(path) as f:
        return f.read()


def find(mounts=MOUNTS, owner=0):
    """The cpu controller to budget threads with: cgroup v1's cpu hierarchy with CFS bandwidth
    control, else a cgroup v2 mount whose controllers include cpu, its root a directory of
    owner's (uid) that no one else may write; a BudgetError saying what there is otherwise."""
    v1, v2 = None, []
    for line in read(mounts).splitlines():
        f = line.split()
        if len(f) < 4:
            continue
        if f[2] == "cgroup" and "cpu" in f[3].split(","):
            v1 = unescape(f[1])
        elif f[2] == "cgroup2":
            v2.append(unescape(f[1]))
    if v1 and os.path.exists(os.path.join(v1, "cpu.cfs_quota_us")):
        return checked(Controller(1, v1), owner)
    seen = []
    for root in v2:
        try:
            have = read(os.path.join(root, "cgroup.controllers")).split()
        except OSError:
            continue
        if "cpu" in have:
            return checked(Controller(2, root), owner)
        seen.append(f"cgroup v2 at {root} has no cpu controller (it has: "
                    f"{', '.join(have) or 'none'})")
    if v1:
        seen.insert(0, f"cgroup v1's cpu hierarchy at {v1} has no CFS bandwidth control "
                    "(CONFIG_CFS_BANDWIDTH)")
    else:
        seen.insert(0, "cgroup v1's cpu hierarchy is not mounted")
    raise BudgetError("no cpu controller to budget threads with: " + "; ".join(seen))


def checked(ctl, owner=0):
    """ctl, once its hierarchy's root is a directory of owner's that no one else may write."""
    st = os.lstat(ctl.root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != owner or st.st_mode & 0o022:
        raise BudgetError(f"{ctl.root}: not a cgroup hierarchy of root's (owner uid "
                          f"{st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}): budgets refused")
    return ctl


def check(shares_text, what="--gateway-cpu"):
    """What the runner calls before anything starts: the shares (None for off) and the
    controller they will use (None for off); a BudgetError for bad input or no controller."""
    shares = parse_shares(shares_text, what)
    return shares, (find() if shares else None)


def parent_name(prefix):
    if not isinstance(prefix, str) or not PREFIX.fullmatch(prefix):
        raise BudgetError(f"bad prefix '{prefix}': 1 to 15 letters, digits or _")
    return f"tunbed-{prefix}"


def write(path, value):
    with open(path, "w") as f:
        f.write(f"{value}\n")


def own_dir(path):
    """True when path is a directory (not a link) of this user's: a cgroup this runner made."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def members(cg, version):
    """The TIDs of the threads in a cgroup (v2: cgroup.threads, as a threaded cgroup has no
    cgroup.procs to read)."""
    name = "tasks" if version == 1 else "cgroup.threads"
    try:
        return [int(x) for x in read(os.path.join(cg, name)).split()]
    except OSError:
        return []


def empty_and_remove(cg, version, move_to):
    """Moves each thread left in cgroup cg with move_to(tid), waits until it is empty (a
    thread that is exiting leaves at its end) and removes it."""
    deadline = time.monotonic() + EMPTY_TIMEOUT_S
    while True:
        for i in members(cg, version):
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                move_to(i)
        try:
            os.rmdir(cg)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise Failure(f"cannot remove cgroup {cg}: threads {members(cg, version)} "
                              "stay in it") from None
            time.sleep(0.01)


def cgroup_of(pid_or_tid, version):
    """The path (inside its hierarchy) of a thread's cpu cgroup (v1) or its v2 cgroup."""
    for line in read(f"/proc/{pid_or_tid}/cgroup").splitlines():
        _, ctls, path = line.split(":", 2)
        if (version == 2 and ctls == "") or (version == 1 and "cpu" in ctls.split(",")):
            return path
    return "/"


class Budgets:
    """The budgets of one run: entering makes the parent cgroup tunbed-PREFIX (refused in one
    line if it exists: a run of that prefix is going on, or was killed and `tunbed down`
    removes what it left); add() budgets and pins a thread; clear() takes every budget off
    (between points); leaving removes them all and the parent, also on an exception or
    Ctrl-C. export() is what a record keeps of them (a machine's `budgets`)."""

    def __init__(self, prefix, ctl=None):
        self.name = parent_name(prefix)
        self.ctl = ctl or find()
        self.parent = os.path.join(self.ctl.root, self.name)
        self.budgets = {}  # tid: its record
        self.processes = {}  # pid: the record of a budget of a whole process (add_process)
        self.moved = {}  # v2: pid of a process moved into the parent: its cgroup before

    def __enter__(self):
        # Not cut short by Ctrl-C or SIGTERM between making the parent and owning it.
        with deferred_signals():
            return self.make()

    def make(self):
        try:
            os.mkdir(self.parent, 0o755)
        except FileExistsError:
            raise BudgetError(f"{self.parent} exists: a run with this prefix is going on or was "
                              "killed (tunbed down removes what it left)") from None
        except OSError as e:
            raise BudgetError(f"cannot make {self.parent}: {e.strerror}") from None
        try:
            if not own_dir(self.parent):
                raise BudgetError(f"{self.parent} is not a directory of this user's")
            if self.ctl.version == 1:
                write(os.path.join(self.parent, "cpu.shares"), WEIGHT_V1)
            else:
                top = os.path.join(self.ctl.root, "cgroup.subtree_control")
                if "cpu" not in read(top).split():
                    write(top, "+cpu")
                write(os.path.join(self.parent, "cpu.weight"), WEIGHT_V2)
        except BaseException:
            with contextlib.suppress(Failure, OSError):
                self.remove()
            raise
        return self

    def __exit__(self, kind, exc, tb):
        # Not cut short by Ctrl-C or SIGTERM, which wait until it is done (as the bed's close).
        with deferred_signals():
            try:
                self.remove()
            except (Failure, OSError) as e:
                if kind is None:
                    raise
                log(f"{e}")  # the exception in flight says what went wrong first

    def add(self, tid, share, cpu=None, period_us=PERIOD_US):
        """Gives thread tid (of any process of this machine) share percent of a core, in a
        cgroup of its own, over periods of period_us (period_quota()), and pins it to cpu
        (None: leaves its affinity). Returns the record of it; a Failure in one line if the
        thread or the kernel refuses."""
        if tid in self.budgets:
            raise Failure(f"thread {tid} has a budget already")
        self.budgets[tid] = self.give(f"t{tid}", None, tid, share, period_us, cpu)
        return self.budgets[tid]

    def add_process(self, pid, share, period_us=PERIOD_US):
        """Gives process pid share percent of one core for all its threads together, those it
        makes later too (they start in their maker's cgroup), in a cgroup of its own (p<pid>),
        over periods of period_us; not pinned. Returns the record of it; a Failure in one line
        if the process or the kernel refuses."""
        if pid in self.processes:
            raise Failure(f"process {pid} has a budget already")
        self.processes[pid] = self.give(f"p{pid}", pid, None, share, period_us, None)
        return self.processes[pid]

    def give(self, name, pid, tid, share, period_us, cpu):
        """Cgroup name under the parent with share percent of a core, holding thread tid
        (pinned to cpu, None: not), or with tid None every thread of process pid; its record."""
        what = f"thread {tid}" if tid else f"process {pid}"
        period, quota = period_quota(share, period_us)
        cg = os.path.join(self.parent, name)
        try:
            os.mkdir(cg, 0o755)
            if self.ctl.version == 1:
                write(os.path.join(cg, "cpu.shares"), WEIGHT_V1)
                write(os.path.join(cg, "cpu.cfs_period_us"), period)
                write(os.path.join(cg, "cpu.cfs_quota_us"), quota)
                before = cgroup_of(tid or pid, 1)
                # v1: tasks moves a thread alone, cgroup.procs every thread of a process
                write(os.path.join(cg, "tasks" if tid else "cgroup.procs"), tid or pid)
            else:
                write(os.path.join(cg, "cgroup.type"), "threaded")
                if "cpu" not in read(os.path.join(self.parent, "cgroup.subtree_control")).split():
                    write(os.path.join(self.parent, "cgroup.subtree_control"), "+cpu")
                write(os.path.join(cg, "cpu.weight"), WEIGHT_V2)
                write(os.path.join(cg, "cpu.max"), f"{quota} {period}")
                pid = pid or tgid(tid)
                if pid not in self.moved:
                    self.moved[pid] = cgroup_of(pid, 2)
                    write(os.path.join(self.parent, "cgroup.procs"), pid)
                before = self.moved[pid]
                for t in [tid] if tid else os.listdir(f"/proc/{pid}/task"):
                    write(os.path.join(cg, "cgroup.threads"), t)
            if cpu is not None:
                os.sched_setaffinity(tid, {cpu})
        except OSError as e:
            # v2: the threads back into the parent, their process's other budgets kept.
            back = self.restore if self.ctl.version == 1 else \
                (lambda t: write(os.path.join(self.parent, "cgroup.threads"), t))
            with contextlib.suppress(OSError, Failure):
                empty_and_remove(cg, self.ctl.version, back)
            raise Failure(f"cannot budget {what} at {share:g}% of a core"
                          f"{'' if cpu is None else f' on CPU {cpu}'}: {e.strerror}") from None
        return {"share_pct": share, "period_us": period, "quota_us": quota, "cpu": cpu,
                "cgroup": cg, "before": before}

    def before_of(self, tid):
        """The cgroup (v1) thread tid was in before its budget, or the hierarchy's root."""
        if tid in self.budgets:
            return self.budgets[tid]["before"]
        with contextlib.suppress(OSError):
            pid = tgid(tid)
            if pid in self.processes:
                return self.processes[pid]["before"]
        return "/"

    def restore(self, tid):
        """Moves thread tid back where it was (v2: its whole process, as v2 moves threads
        only inside a threaded subtree), or to the hierarchy's root."""
        if self.ctl.version == 1:
            before = self.before_of(tid)
            write(os.path.join(self.ctl.root, before.lstrip("/"), "tasks"), tid)
        else:
            pid = tgid(tid)
            target = os.path.join(self.ctl.root, self.moved.get(pid, "/").lstrip("/"),
                                  "cgroup.procs")
            if not os.path.exists(target):
                target = os.path.join(self.ctl.root, "cgroup.procs")
            write(target, pid)

    def clear(self):
        """Takes every budget off: each thread back in its cgroup of before, each cgroup gone.
        A thread keeps its pin."""
        for pid in list(self.moved):
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                self.restore(pid)
        for b in [*self.budgets.values(), *self.processes.values()]:
            empty_and_remove(b["cgroup"], self.ctl.version, self.restore)
        self.budgets.clear()
        self.processes.clear()
        self.moved.clear()

    def remove(self):
        """clear(), then the parent; what cannot be removed is a Failure in one line (and
        `tunbed down` tries again)."""
        try:
            self.clear()
        finally:
            # Children no record names (a failure between mkdir and the record) go too.
            for d in child_dirs(self.parent):
                empty_and_remove(d, self.ctl.version, self.restore)
            empty_and_remove(self.parent, self.ctl.version, self.restore)

    def stats(self):
        """Per thread: its cgroup's periods, those throttled and the time throttled (us)."""
        return {str(t): cpu_stat(b["cgroup"]) for t, b in self.budgets.items()}

    def export(self):
        """What a run's record keeps: {tid: {share_pct, period_us, quota_us, cpu}}."""
        return {str(t): {k: b[k] for k in ("share_pct", "period_us", "quota_us", "cpu")}
                for t, b in self.budgets.items()}

    def export_processes(self):
        """The same of the whole processes' budgets (add_process), by pid, with each one's
        periods and throttling."""
        return {str(p): {k: b[k] for k in ("share_pct", "period_us", "quota_us")} |
                {"throttling": cpu_stat(b["cgroup"])} for p, b in self.processes.items()}


def child_dirs(path):
    try:
        return [os.path.join(path, d) for d in sorted(os.listdir(path))
                if os.path.isdir(os.path.join(path, d))]
    except FileNotFoundError:
        return []


def tgid(tid):
    """The process a thread belongs to."""
    for line in read(f"/proc/{tid}/status").splitlines():
        if line.startswith("Tgid:"):
            return int(line.split()[1])
    raise OSError(errno.ESRCH, os.strerror(errno.ESRCH))


def cpu_stat(cg):
    """nr_periods, nr_throttled and throttled_us of a cgroup's cpu.stat (v1 counts ns)."""
    fields = dict(line.split() for line in read(os.path.join(cg, "cpu.stat")).splitlines()
                  if len(line.split()) == 2)
    us = int(fields["throttled_usec"]) if "throttled_usec" in fields else \
        int(fields.get("throttled_time", 0)) // 1000
    return {"nr_periods": int(fields.get("nr_periods", 0)),
            "nr_throttled": int(fields.get("nr_throttled", 0)), "throttled_us": us}


def remove_leftovers(prefix, mounts=MOUNTS):
    """Removes what a killed run of prefix left (for `tunbed down`): its parent cgroup in every
    cgroup hierarchy, each thread or process in it moved to the hierarchy's root first. Only
    directories of this user's: another's is named in a Failure and left. Returns the paths
    removed."""
    name = parent_name(prefix)
    removed = []
    for line in read(mounts).splitlines():
        f = line.split()
        if len(f) < 3 or f[2] not in ("cgroup", "cgroup2"):
            continue
        root = unescape(f[1])
        version = 2 if f[2] == "cgroup2" else 1
        parent = os.path.join(root, name)
        if not os.path.lexists(parent):
            continue
        if not own_dir(parent):
            raise Failure(f"{parent} is not a cgroup of this user's: left as it is")

        def to_root(tid, root=root, version=version):
            if version == 1:
                write(os.path.join(root, "tasks"), tid)
            else:
                write(os.path.join(root, "cgroup.procs"), tgid(tid))
        for d in child_dirs(parent):
            empty_and_remove(d, version, to_root)
        empty_and_remove(parent, version, to_root)
        removed.append(parent)
    return removed


def irq_time_accounting(paths=None):
    """Whether this kernel accounts IRQ time apart from the threads it interrupts
    (CONFIG_IRQ_TIME_ACCOUNTING): then softirq a thread causes escapes its budget, and the
    verdict counts its CPU's softirq as its own (a machine's facts.irq_time_accounting). None
    when the kernel's configuration cannot be read (paths: where to look, gzipped or not)."""
    release = os.uname().release
    for path in paths or ("/proc/config.gz", f"/boot/config-{release}"):
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rt") as f:
                text = f.read()
        except OSError:
            continue
        return "\nCONFIG_IRQ_TIME_ACCOUNTING=y" in "\n" + text
    return None
