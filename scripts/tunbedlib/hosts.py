"""Where a role's commands run: in a network namespace of this machine (the built-in
topologies), or on a host of an inventory over OpenSSH (docs/hosts.md). Both give the drivers
and the runner one interface: run a command and take its output, start a process and know
its PID on the host, stop it by that PID, and record what a run changed so that it is undone
after, also after a crash (`tunbed down --hosts`).

Over SSH every host has one multiplexed connection for the whole run (ControlMaster); its
commands run as root through `sudo -n` where the inventory says become. A process started on
a host runs under a watchdog: when the connection ends (the runner died, the host was cut
off), the end of its standard input stops the process, so nothing is left running.

No value of an inventory reaches ssh where ssh reads options: every destination comes after
`--`, and is checked (an address or a host name, inventory.is_ssh_address) here again; the
control socket is named by an index, not by the host."""

import contextlib
import itertools
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import inventory, rundir
from .rundir import pid_of
from .common import BIN, Failure

CONNECT_TIMEOUT_S = 10
COMMAND_TIMEOUT_S = 120
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 30
STATE_ROOT = "/run/tunbed"  # on a host: STATE_ROOT/PREFIX-NAME holds pids and undo lines
CONTROL_INDEX = itertools.count()  # names the control sockets of this process's connections

# A process on a host: its PID into the pid file (the first argument), then it runs, its
# standard input closed; when this shell's standard input ends (the connection is gone),
# the process is stopped: SIGTERM, and SIGKILL WATCHDOG_GRACE_S later if it is still there (a
# tool that winds down over a network that went with the runner may wait long); the watchdog
# ends with the process (it looks every 0.1 s), so nothing of the run outlives it. The exit
# status is the process's. (A shell gives an asynchronous command /dev/null for its standard
# input unless it is redirected: the watchdog reads the connection's through fd 3; and it
# holds none of the connection's output, which would keep the session open after the
# process.)
WATCHDOG_GRACE_S = 10
WATCHDOG = ('exec 3<&0; "$@" <&- & pid=$!; echo $pid >"$0"; '
            '( cat <&3; kill -TERM $pid 2>/dev/null || exit 0; i=0; '
            f'while [ $i -lt {WATCHDOG_GRACE_S * 10} ] && kill -0 $pid 2>/dev/null; do '
            'sleep 0.1; i=$((i + 1)); done; kill -KILL $pid 2>/dev/null ) >/dev/null 2>&1 & '
            'exec 3<&-; wait $pid; st=$?; rm -f "$0"; exit $st')


class HostLost(Failure):
    """A host that stopped answering in the middle of a run."""


def on_each(hosts, fn):
    """fn(host) on every host at once, a thread each (each host has a connection of its own,
    and what one host waits for, another need not): their results in the order of hosts, once
    all have ended. An exception of fn is raised then, the first host's in that order."""
    hosts = list(hosts)
    if len(hosts) < 2:
        return [fn(h) for h in hosts]
    with ThreadPoolExecutor(max_workers=len(hosts)) as ex:
        futures = [ex.submit(fn, h) for h in hosts]
    return [f.result() for f in futures]


class Proc:
    """A process started on a host: the local process that carries it (for its output and
    exit status) and its PID on the host."""

    def __init__(self, host, tag, local, pid):
        self.host, self.tag, self.local, self.pid = host, tag, local, pid
        self.readers = None
        self.out, self.err = [], []

    def reading(self):
        """Starts taking its stdout and stderr as they come (so that a pipe never fills)."""
        if self.readers is None:
            self.readers = [threading.Thread(target=lambda f=f, b=b: b.append(f.read()),
                                             daemon=True)
                            for f, b in ((self.local.stdout, self.out),
                                         (self.local.stderr, self.err)) if f]
            for t in self.readers:
                t.start()

    def poll(self):
        return self.local.poll()

    def send(self, sig):
        """Sends sig to the process on its host."""
        self.host.kill(self.pid, sig)

    def communicate(self, timeout=None):
        """Its stdout and stderr once it has exited. Its standard input stays open until
        then (over SSH the watchdog would stop the process at its end)."""
        self.reading()
        self.local.wait(timeout)
        for t in self.readers:
            t.join()
        if self.local.stdin:
            with contextlib.suppress(OSError):
                self.local.stdin.close()
        return (self.out[0] if self.out else None), (self.err[0] if self.err else None)

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT_S):
        """Signals it by its PID and waits for it; returns (stdout, stderr) of what remained.
        One that outlives the timeout is killed."""
        if self.local.poll() is None:
            try:
                self.send(sig)
            except Failure:
                pass
        try:
            out, err = self.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                self.host.kill(self.pid, signal.SIGKILL)
            except Failure:
                pass
            self.local.kill()
            self.local.wait()
            out, err = "", f"did not stop within {timeout} s of {signal.Signals(sig).name}"
        return out, err


class Host:
    """The interface; see Netns and Ssh."""
    name = "?"
    roles = ()
    state = ""
    shares_files = False  # whether its files are this machine's (a namespace's are)

    def label(self):
        return f"host {self.name} ({', '.join(self.roles)})"

    def open(self):
        pass

    def close(self):
        pass

    def argv(self, cmd):
        raise NotImplementedError

    def bin(self, tool):
        raise NotImplementedError

    def call(self, cmd, timeout=COMMAND_TIMEOUT_S, input=None):
        """cmd on the host: the completed process (returncode, stdout, stderr)."""
        try:
            # Never the runner's own stdin (a terminal): ssh would read it.
            p = subprocess.run(self.argv(cmd), capture_output=True, text=True, timeout=timeout,
                               input=input,
                               stdin=subprocess.DEVNULL if input is None else None)
        except subprocess.TimeoutExpired:
            raise Failure(f"{self.label()}: {os.path.basename(cmd[0])} did not finish within "
                          f"{timeout} s") from None
        self.check_transport(p.returncode, p.stderr)
        return p

    def run(self, cmd, check=True, timeout=COMMAND_TIMEOUT_S, input=None):
        """cmd on the host; its stdout. A failure raises Failure with its last stderr line."""
        p = self.call(cmd, timeout, input)
        if check and p.returncode != 0:
            err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            raise Failure(f"{self.label()}: {os.path.basename(cmd[0])}: {err}")
        return p.stdout

    def check_transport(self, status, stderr):
        """Raises HostLost when the way to the host, not the command, failed."""

    def spawn(self, tag, cmd, stdin=None, stdout=subprocess.DEVNULL, watchdog=True):
        raise NotImplementedError

    def kill(self, pid, sig=signal.SIGTERM):
        self.run(["kill", f"-{signal.Signals(sig).name[3:]}", str(pid)], check=False)

    def undo(self, cmd, whole_run=False):
        """Records cmd as what undoes a change just made on the host, for the end of the point
        (or, whole_run, of the run); run_undo runs them, the newest first."""
        self.run(["sh", "-c", 'printf "%s\\n" "$1" >>"$0"', self.undo_file(whole_run),
                  shlex.join(cmd)])

    def undo_file(self, whole_run):
        return f"{self.state}/undo.{'run' if whole_run else 'point'}"

    def run_undo(self, whole_run=False):
        path = self.undo_file(whole_run)
        text = self.run(["cat", path], check=False)
        for line in reversed([ln for ln in text.splitlines() if ln.strip()]):
            self.run(shlex.split(line), check=False)
        self.run(["rm", "-f", path], check=False)

    def run_point_undo(self):
        self.run_undo(False)


class Netns(Host):
    """A host of a built-in topology: network namespace PREFIX-NAME of this machine."""
    shares_files = True

    def __init__(self, prefix, name):
        self.prefix, self.name, self.roles = prefix, name, (name,)
        self.ns = f"{prefix}-{name}"
        self.state = ""

    def label(self):
        return self.ns

    def open(self):
        # /run/tunbed/netns/PREFIX-ROLE-XXXXXXXX: a killed run's is found by its prefix
        # (bed.remove_run_dirs, for tunbed down).
        self.state = rundir.make("netns", self.ns)

    def close(self):
        if self.state:
            shutil.rmtree(self.state, ignore_errors=True)
            self.state = ""

    def argv(self, cmd):
        return ["ip", "netns", "exec", self.ns, *cmd]

    def bin(self, tool):
        return os.path.join(BIN, tool)

    def undo(self, cmd, whole_run=False):
        with open(self.undo_file(whole_run), "a") as f:
            f.write(shlex.join(cmd) + "\n")

    def run_undo(self, whole_run=False):
        path = self.undo_file(whole_run)
        if not os.path.exists(path):
            return
        with open(path) as f:
            lines = [ln for ln in f.read().splitlines() if ln.strip()]
        for line in reversed(lines):
            self.run(shlex.split(line), check=False)
        os.unlink(path)

    def spawn(self, tag, cmd, stdin=None, stdout=subprocess.DEVNULL, watchdog=True):
        # ip netns exec execs the command: the local process is the process.
        local = subprocess.Popen(self.argv(cmd), stdin=stdin, stdout=stdout,
                                 stderr=subprocess.PIPE, text=True)
        return Proc(self, tag, local, local.pid)

    def kill(self, pid, sig=signal.SIGTERM):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class Ssh(Host):
    """A host of an inventory, reached over OpenSSH with one multiplexed connection."""

    def __init__(self, spec, prefix, ctl_dir):
        # The inventory checked these; they name what root removes on the host
        # (cleanup_state) and what ssh connects to, so they are checked again where used.
        inventory.check_prefix(prefix)
        if not inventory.is_host_name(spec.name) or not inventory.is_ssh_address(spec.address):
            raise inventory.InventoryError(f"host {inventory.shown(spec.name)}: not a host "
                                           "name or address tunbed connects to")
        self.spec, self.name, self.roles = spec, spec.name, (spec.role,)
        self.prefix = prefix
        # By an index: a host's name may be too long for a socket's path (108 bytes), and
        # ssh expands '%' in ControlPath.
        self.ctl = os.path.join(ctl_dir, f"{next(CONTROL_INDEX)}.ctl")
        self.master = None
        self.lost = False
        self.state = f"{STATE_ROOT}/{prefix}-{spec.name}"

    def ssh_base(self):
        s = self.spec
        args = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                "-o", f"ControlPath={self.ctl}", "-p", str(s.port)]
        if s.user:
            args += ["-l", s.user]
        if s.key:
            args += ["-i", s.key, "-o", "IdentitiesOnly=yes"]
        return args + s.ssh_args

    def start(self):
        """Starts the master connection. It runs a command that reads its standard input, a
        pipe from the runner: when the runner ends, however it ends, the pipe ends, so does
        the command, and the master with it once its sessions are done (each of which ends the
        same way: the watchdog's input, the sampler's, are pipes from the runner too)."""
        self.master = subprocess.Popen(
            [*self.ssh_base(), "-o", "ControlMaster=yes", "-o", "ControlPersist=no",
             "--", self.spec.address, "exec cat >/dev/null"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def open(self):
        """Connects (the master connection), checks sudo, makes the state directory."""
        if self.master is None:
            self.start()
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 5
        while True:
            if self.master.poll() is not None:
                err = self.master.stderr.read().strip().splitlines()
                raise Failure(f"{self.label()}: cannot connect to {self.spec.address} port "
                              f"{self.spec.port}: {self.why(err)}")
            if os.path.exists(self.ctl) and subprocess.run(
                    [*self.ssh_base(), "-O", "check", "--", self.spec.address],
                    capture_output=True).returncode == 0:
                break
            if time.monotonic() > deadline:
                self.close()
                raise Failure(f"{self.label()}: no connection to {self.spec.address} within "
                              f"{CONNECT_TIMEOUT_S + 5} s")
            time.sleep(0.05)
        if self.spec.become:
            p = subprocess.run([*self.ssh_base(), "--", self.spec.address, "sudo -n true"],
                               capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
            if p.returncode != 0:
                err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
                raise Failure(f"{self.label()}: sudo failed for user "
                              f"{self.spec.user or '(default)'}: {err}")
        else:
            out = self.run(["id", "-u"]).strip()
            if out != "0":
                raise Failure(f"{self.label()}: user {self.spec.user or '(default)'} is not "
                              "root and ansible_become is not set")
        self.run(["mkdir", "-p", "-m", "0700", self.state])

    @staticmethod
    def why(lines):
        text = " ".join(lines)
        for needle, words in (("Permission denied", "authentication refused"),
                              ("Connection refused", "connection refused"),
                              ("timed out", "connection timed out"),
                              ("No route to host", "no route to host"),
                              ("Network is unreachable", "network unreachable"),
                              ("Could not resolve", "name does not resolve"),
                              ("Host key verification failed", "host key verification failed")):
            if needle in text:
                return words
        return lines[-1] if lines else "ssh exited"

    def close(self):
        if self.master and self.master.poll() is None:
            with contextlib.suppress(OSError):
                self.master.stdin.close()
            try:
                self.master.wait(10)
            except subprocess.TimeoutExpired:
                self.master.terminate()
                try:
                    self.master.wait(10)
                except subprocess.TimeoutExpired:
                    self.master.kill()
                    self.master.wait()
        self.master = None
        if os.path.exists(self.ctl):
            os.unlink(self.ctl)

    def remote(self, cmd):
        """The command line the host's shell runs: cmd, as root."""
        cmd = ["sudo", "-n", "--", *cmd] if self.spec.become else cmd
        return shlex.join(cmd)

    def argv(self, cmd):
        return [*self.ssh_base(), "-o", "ControlMaster=no", "--", self.spec.address,
                self.remote(cmd)]

    def bin(self, tool):
        return self.spec.bin(tool)

    def call(self, cmd, timeout=COMMAND_TIMEOUT_S, input=None):
        if self.lost:
            raise HostLost(f"{self.label()}: lost earlier in the run")
        return super().call(cmd, timeout, input)

    def check_transport(self, status, stderr):
        # ssh exits 255 when the connection failed (and a remote command rarely does).
        if status == 255 and (self.master is None or self.master.poll() is not None or
                              "mux_client" in stderr or "Connection" in stderr or
                              "closed by remote host" in stderr):
            self.lost = True
            raise HostLost(f"{self.label()}: lost: {self.why(stderr.strip().splitlines())}")

    def spawn(self, tag, cmd, stdin=None, stdout=subprocess.DEVNULL, watchdog=True):
        pidfile = f"{self.state}/{tag}.pid"
        if watchdog:
            cmd = ["sh", "-c", WATCHDOG, pidfile, *cmd]
            stdin = subprocess.PIPE  # kept open: its end stops the process
        else:
            cmd = ["sh", "-c", 'echo $$ >"$0"; exec "$@"', pidfile, *cmd]
        local = subprocess.Popen(self.argv(cmd), stdin=stdin, stdout=stdout,
                                 stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            pid = pid_of(self.run(["cat", pidfile], check=False))
            if pid is not None:
                return Proc(self, tag, local, pid)
            if local.poll() is not None:
                # A short command on a slow connection may have ended, and its PID file with
                # it, before a read: it ran; there is nothing left to stop.
                if local.returncode == 0:
                    return Proc(self, tag, local, None)
                err = (local.stderr.read().strip().splitlines() or
                       [f"exit status {local.returncode}"])[-1]
                raise Failure(f"{self.label()}: {tag} did not start: {err}")
            if time.monotonic() > deadline:
                local.kill()
                raise Failure(f"{self.label()}: {tag} did not start within "
                              f"{START_TIMEOUT_S} s")
            time.sleep(0.05)

    def cleanup_state(self):
        """After a crash: stops every process a run left (by the PIDs it recorded), undoes its
        changes, removes the state. Returns what it did, in words."""
        done = []
        for f in self.run(["sh", "-c", 'ls "$0"/*.pid 2>/dev/null || true', self.state],
                          check=False).split():
            pid = pid_of(self.run(["cat", f], check=False))
            if pid is not None and self.call(["kill", "-TERM", str(pid)]).returncode == 0:
                # Gone within STOP_TIMEOUT_S, or killed.
                deadline = time.monotonic() + STOP_TIMEOUT_S
                while self.call(["kill", "-0", str(pid)]).returncode == 0:
                    if time.monotonic() > deadline:
                        self.kill(pid, signal.SIGKILL)
                        break
                    time.sleep(0.1)
                done.append(f"stopped pid {pid} ({os.path.basename(f)[:-4]})")
            self.run(["rm", "-f", f], check=False)
        for whole_run in (False, True):
            if self.run(["cat", self.undo_file(whole_run)], check=False).strip():
                self.run_undo(whole_run)
                done.append(f"undid the {'run' if whole_run else 'point'}'s changes")
        self.run(["rm", "-rf", self.state], check=False)
        return done
