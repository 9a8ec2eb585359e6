"""Emulated cores on this machine's kernel (scripts/tunbedlib/budget.py), as root: a
busy-looping thread with a 20% budget uses at most 22% of a CPU over a 2-s window (an upper
bound: other processes' load can only lower it) and its budget is what throttled it; its
cgroup is its own, under tunbed-PREFIX, and gone after the run, the thread back where it was;
an existing parent is refused in one line; a thread that is not there is a Failure that leaves
nothing; Ctrl-C (SIGINT) in a run removes its cgroups; a killed run (SIGKILL) leaves them, and
remove_leftovers() removes them, a busy thread still inside, and spares a longer prefix's."""

import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)

from tunbedlib import budget  # noqa: E402
from tunbedlib.common import Failure  # noqa: E402

PREFIX = f"bt{os.getpid()}"
BUSY = [sys.executable, "-c", "while True: pass"]
# Two busy threads in one process (hashing releases the GIL), each saying its TID on a line of
# its own (print writes the number and the newline apart: two threads' could interleave).
TWO = [sys.executable, "-c", """
import hashlib, sys, threading
data = bytes(1 << 20)
said = threading.Lock()
def spin():
    with said:
        sys.stdout.write(f"{threading.get_native_id()}\\n")
        sys.stdout.flush()
    while True:
        hashlib.sha256(data)
for _ in range(2):
    threading.Thread(target=spin).start()
"""]
# TWO, then a third thread when a line comes on stdin.
LATER = [sys.executable, "-c", TWO[2] + """
import sys
sys.stdin.readline()
threading.Thread(target=spin).start()
"""]
WINDOW_S = 2.0
CPU = max(os.sched_getaffinity(0))


def runtime_s(tid):
    """A thread's CPU time so far (/proc/TID/schedstat: nanoseconds on the CPU)."""
    with open(f"/proc/{tid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def cpu_cgroup(tid, version):
    return budget.cgroup_of(tid, version)


class Busy:
    """A busy-looping process (one thread) for the test's life, ended by its PID."""

    def __enter__(self):
        self.proc = subprocess.Popen(BUSY)
        return self.proc.pid

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def wait_line(proc, want, timeout_s=30):
    """The next line of proc's stdout, which must be want (readiness, not time)."""
    line = proc.stdout.readline().strip()
    if line != want:
        proc.kill()
        raise AssertionError(f"child said {line!r}, not {want!r}: {proc.stderr.read()}")


# A child that budgets a busy process under its own prefix, says "ready" and waits.
CHILD = """
import sys, time
sys.path.insert(0, {scripts!r})
from tunbedlib import budget
with budget.Budgets({prefix!r}) as b:
    b.add({tid}, 20, cpu={cpu})
    print("ready", flush=True)
    time.sleep(600)
"""


class Cgroups(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.fail("needs root (cgroups)")
        self.ctl = budget.find()
        self.addCleanup(budget.remove_leftovers, PREFIX)
        self.addCleanup(budget.remove_leftovers, PREFIX + "0")

    def parent(self, prefix=PREFIX):
        return os.path.join(self.ctl.root, f"tunbed-{prefix}")

    def test_twenty_percent(self):
        with Busy() as tid, budget.Budgets(PREFIX) as b:
            rec = b.add(tid, 20, cpu=CPU)
            self.assertEqual((rec["period_us"], rec["quota_us"]), (5000, 1000))
            self.assertEqual(cpu_cgroup(tid, self.ctl.version), f"/tunbed-{PREFIX}/t{tid}")
            self.assertEqual(os.sched_getaffinity(tid), {CPU})
            t0, r0 = time.monotonic(), runtime_s(tid)
            throttled0 = b.stats()[str(tid)]["nr_throttled"]
            # The window is the measurement: CPU time over wall time, not a wait for an event.
            time.sleep(WINDOW_S)
            t1, r1 = time.monotonic(), runtime_s(tid)
            share = 100 * (r1 - r0) / (t1 - t0)
            print(f"a busy thread with a 20% budget: {share:.1f}% of CPU {CPU} over "
                  f"{t1 - t0:.2f} s", file=sys.stderr)
            self.assertLessEqual(share, 22.0)
            # With the cgroups' weight at its most the thread always wants more than 20%: its
            # budget, not other processes, is what held it.
            self.assertGreater(b.stats()[str(tid)]["nr_throttled"], throttled0)
            self.assertEqual(b.export(), {str(tid): {"share_pct": 20, "period_us": 5000,
                                                     "quota_us": 1000, "cpu": CPU}})
        self.assertFalse(os.path.lexists(self.parent()))

    def test_two_threads_of_one_process(self):
        proc = subprocess.Popen(TWO, stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        tids = [int(proc.stdout.readline()) for _ in range(2)]
        with budget.Budgets(PREFIX) as b:
            for tid, share in zip(tids, (20, 40)):
                b.add(tid, share, cpu=CPU)
                self.assertEqual(cpu_cgroup(tid, self.ctl.version), f"/tunbed-{PREFIX}/t{tid}")
            t0, r0 = time.monotonic(), [runtime_s(t) for t in tids]
            throttled0 = [b.stats()[str(t)]["nr_throttled"] for t in tids]
            time.sleep(WINDOW_S)
            t1, r1 = time.monotonic(), [runtime_s(t) for t in tids]
            shares = [100 * (y - x) / (t1 - t0) for x, y in zip(r0, r1)]
            print(f"two threads of one process with budgets of 20% and 40%: {shares[0]:.1f}% "
                  f"and {shares[1]:.1f}% of CPU {CPU}", file=sys.stderr)
            self.assertLessEqual(shares[0], 22.0)
            self.assertLessEqual(shares[1], 43.0)
            for t, before in zip(tids, throttled0):
                self.assertGreater(b.stats()[str(t)]["nr_throttled"], before)
        self.assertFalse(os.path.lexists(self.parent()))

    def test_a_whole_process(self):
        # The generator's budget (add_process): the threads of a process together, and one it
        # makes later, in one cgroup; 20% of a core for all of them.
        proc = subprocess.Popen(LATER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.stdin.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        tids = [int(proc.stdout.readline()) for _ in range(2)]
        before = cpu_cgroup(proc.pid, self.ctl.version)
        with budget.Budgets(PREFIX) as b:
            rec = b.add_process(proc.pid, 20)
            self.assertEqual((rec["period_us"], rec["quota_us"]), (5000, 1000))
            proc.stdin.write("go\n")
            proc.stdin.flush()
            tids.append(int(proc.stdout.readline()))
            for t in [proc.pid, *tids]:
                self.assertEqual(cpu_cgroup(t, self.ctl.version), f"/tunbed-{PREFIX}/p{proc.pid}")
            t0, r0 = time.monotonic(), sum(runtime_s(t) for t in tids)
            time.sleep(WINDOW_S)
            t1, r1 = time.monotonic(), sum(runtime_s(t) for t in tids)
            share = 100 * (r1 - r0) / (t1 - t0)
            print(f"three busy threads of a process with a 20% budget: {share:.1f}% of a CPU "
                  "together", file=sys.stderr)
            self.assertLessEqual(share, 22.0)
            got = b.export_processes()[str(proc.pid)]
            self.assertEqual({k: got[k] for k in ("share_pct", "period_us", "quota_us")},
                             {"share_pct": 20, "period_us": 5000, "quota_us": 1000})
            self.assertGreater(got["throttling"]["nr_throttled"], 0)
            self.assertEqual(b.export(), {})
            b.clear()
            for t in [proc.pid, *tids]:
                self.assertEqual(cpu_cgroup(t, self.ctl.version), before)
        self.assertFalse(os.path.lexists(self.parent()))

    def test_thread_goes_back(self):
        with Busy() as tid:
            before = cpu_cgroup(tid, self.ctl.version)
            with budget.Budgets(PREFIX) as b:
                b.add(tid, 50)
                b.clear()
                self.assertEqual(cpu_cgroup(tid, self.ctl.version), before)
                self.assertEqual(os.listdir(self.parent()), [f for f in os.listdir(
                    self.parent()) if not os.path.isdir(os.path.join(self.parent(), f))])
                b.add(tid, 30)
            self.assertEqual(cpu_cgroup(tid, self.ctl.version), before)
            self.assertFalse(os.path.lexists(self.parent()))

    def test_existing_parent_refused(self):
        with budget.Budgets(PREFIX):
            with self.assertRaises(budget.BudgetError) as e:
                budget.Budgets(PREFIX).__enter__()
            self.assertEqual(str(e.exception), f"{self.parent()} exists: a run with this prefix "
                             "is going on or was killed (tunbed down removes what it left)")
            self.assertTrue(os.path.isdir(self.parent()))
        self.assertFalse(os.path.lexists(self.parent()))

    def test_no_such_thread(self):
        dead = subprocess.Popen(["true"])
        dead.wait()
        with budget.Budgets(PREFIX) as b:
            with self.assertRaises(Failure) as e:
                b.add(dead.pid, 20)
            self.assertRegex(str(e.exception),
                             rf"^cannot budget thread {dead.pid} at 20% of a core: ")
            self.assertEqual([d for d in os.listdir(self.parent())
                              if os.path.isdir(os.path.join(self.parent(), d))], [])
        self.assertFalse(os.path.lexists(self.parent()))

    def child(self, tid):
        code = CHILD.format(scripts=SCRIPTS, prefix=PREFIX, tid=tid, cpu=CPU)
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)
        wait_line(proc, "ready")
        self.assertTrue(os.path.isdir(os.path.join(self.parent(), f"t{tid}")))
        return proc

    def test_ctrl_c_removes_them(self):
        with Busy() as tid:
            before = cpu_cgroup(tid, self.ctl.version)
            proc = self.child(tid)
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
            self.assertFalse(os.path.lexists(self.parent()), proc.stderr.read())
            self.assertEqual(cpu_cgroup(tid, self.ctl.version), before)

    def test_a_killed_run_leaves_them_for_down(self):
        with Busy() as tid, Busy() as other:
            with budget.Budgets(PREFIX + "0") as b:
                b.add(other, 40)
                proc = self.child(tid)
                proc.kill()
                proc.wait(30)
                self.assertTrue(os.path.isdir(self.parent()))
                self.assertEqual(budget.remove_leftovers(PREFIX), [self.parent()])
                self.assertFalse(os.path.lexists(self.parent()))
                # Moved to the hierarchy's root: where it was is not known after a kill.
                self.assertEqual(cpu_cgroup(tid, self.ctl.version), "/")
                # The longer prefix's run is untouched.
                self.assertEqual(cpu_cgroup(other, self.ctl.version),
                                 f"/tunbed-{PREFIX}0/t{other}")
            self.assertEqual(budget.remove_leftovers(PREFIX), [])


if __name__ == "__main__":
    unittest.main()
