"""A gateway tunbed does not know, measured without changing tunbed: `--gateways cmd:PATH`
runs the executable PATH on each gateway's host (in namespaces: inside the gateway's
namespace; on hosts: a copy, over SSH) as `PATH up`, `PATH pids`, `PATH down` and, if it
answers, `PATH version`, with the tunnel's addresses, the transit link and the roles' hosts in
its environment (CONTRIBUTING.md, "Adding a gateway", has the contract). The Open vSwitch
driver, scripts/drivers/ovs-gre.sh, is the built-in gateway written to it.

What a driver says crosses a trust boundary (docs/security.md, "Drivers"): its output is
kept in files on its host and read back bounded (limits.py), a call that does not finish is
killed with every process it started in its process group, and the PIDs it names are checked
before anything watches them; a driver that breaks the contract fails its point, never the
run."""

import base64
import os
import re
import time

from .. import limits
from ..common import Failure, log
from .base import Driver

ROLES = ("client", "gwa", "gwb", "server")
# A call on the role's host, run by sh with its prefix of files ($0), its time limit and the
# driver's command line: the driver runs under timeout(1), in a process group of its own that
# is killed whole (TERM, KILL 5 s later) at the limit; its stdout and stderr go to files (not
# pipes, which a daemon it starts would hold open), of which only the first
# DRIVER_OUTPUT_BYTES and the last DRIVER_ERROR_BYTES come back, as UTF-8 (iconv drops what is
# not), the first with a line saying that it was cut.
CALL = ('o="$0.out"; e="$0.err"; s=$1; shift; '
        'timeout -k 5 "$s" "$@" </dev/null >"$o" 2>"$e"; st=$?; '
        f'head -c {limits.DRIVER_OUTPUT_BYTES} "$o" | iconv -c -f UTF-8 -t UTF-8; '
        f'if [ "$(wc -c <"$o")" -gt {limits.DRIVER_OUTPUT_BYTES} ]; then '
        f'printf "\\n[cut: only its first {limits.DRIVER_OUTPUT_BYTES} bytes are kept]\\n"; fi; '
        f'tail -c {limits.DRIVER_ERROR_BYTES} "$e" | iconv -c -f UTF-8 -t UTF-8 >&2; '
        'rm -f "$o" "$e"; exit $st')
TIMED_OUT = (124, 137)  # timeout(1): the command timed out (and was killed)
CALL_GRACE_S = 30  # beyond the driver's limit, for the kill and the reading back


def one_line(text):
    """A driver's words in a one-line message: control characters as blanks, cut at
    limits.DRIVER_LINE_CHARS."""
    text = re.sub(r"[\x00-\x1f\x7f]", " ", text).strip()
    n = limits.DRIVER_LINE_CHARS
    return text if len(text) <= n else text[:n] + "..."


class Cmd(Driver):
    """The driver of an executable that keeps the contract."""
    name = "cmd:?"
    path = ""  # absolute
    can_budget = True  # its pids are processes

    def __init__(self, *a):
        super().__init__(*a)
        self.up, self.said, self.procs, self.exe, self.env = [], {}, [], {}, {}

    @classmethod
    def available(cls, hosts_mode=False):
        if not os.path.isfile(cls.path) or not os.access(cls.path, os.X_OK):
            return False, f"{cls.path}: no such executable file"
        return True, ""

    def executable(self, role):
        """PATH where the role's host can run it: PATH itself on this machine, a copy on
        another (the contract's drivers are one file each)."""
        if role not in self.exe:
            h = self.host(role)
            if h.shares_files:
                self.exe[role] = self.path
            else:
                self.exe[role] = f"{self.workdir(role)}/{os.path.basename(self.path)}"
                with open(self.path, "rb") as f:
                    data = base64.b64encode(f.read()).decode()
                h.run(["sh", "-c", 'base64 -d >"$0" && chmod 0700 "$0"', self.exe[role]],
                      input=data)
        return self.exe[role]

    def environment(self, role, local, remote, addr, peer, nets):
        """The contract's environment for the side of role."""
        h = self.host(role)
        env = {
            "TUNBED_ROLE": role,
            "TUNBED_NETNS": getattr(h, "ns", ""),
            "TUNBED_HOST": getattr(h, "ns", "") or h.name,
            "TUNBED_STATE": self.workdir(role),
            "TUNBED_LOCAL": local,
            "TUNBED_REMOTE": remote,
            "TUNBED_TRANSIT_IFACE": self.bed.transit_iface(role),
            "TUNBED_TRANSIT_MTU": str(self.transit_mtu(role)),
            "TUNBED_ADDR": addr,
            "TUNBED_PEER_ADDR": peer,
            "TUNBED_ROUTES": " ".join(nets),
            "TUNBED_LANS": " ".join(self.addrs["net_a" if role == "gwa" else "net_b"]),
            "TUNBED_CLIENT": self.addrs["client"],
            "TUNBED_SERVER": self.addrs["server"],
            "TUNBED_CPUS": self.pins.get(role, ""),
        }
        for r in ROLES:
            other = self.bed.roles.get(r) or []
            env[f"TUNBED_HOST_{r.upper()}"] = (getattr(other[0], "ns", "") or other[0].name
                                               if other else "")
        return env

    def argv(self, role, verb, limit=None):
        """The call of PATH VERB on the role's host (CALL), stopped after limit seconds
        (limits.DRIVER_CALL_S by default)."""
        limit = limits.DRIVER_CALL_S if limit is None else limit
        return ["sh", "-c", CALL, f"{self.workdir(role)}.{verb}", f"{limit:g}",
                "env", *(f"{k}={v}" for k, v in self.env[role].items()), self.executable(role),
                verb]

    def call(self, role, verb):
        """PATH VERB on the role's host (CALL): the completed process, its output bounded;
        a Failure naming the driver when it did not finish within limits.DRIVER_CALL_S."""
        h = self.host(role)
        start = time.monotonic()
        p = h.call(self.argv(role, verb), timeout=limits.DRIVER_CALL_S + CALL_GRACE_S)
        if p.returncode in TIMED_OUT and time.monotonic() - start >= limits.DRIVER_CALL_S:
            raise Failure(f"{self.name} {verb} on {h.label()}: did not finish within "
                          f"{limits.DRIVER_CALL_S:g} s: killed, with what it started")
        return p

    @staticmethod
    def said_last(p):
        lines = [ln for ln in (p.stderr.strip() or p.stdout.strip()).splitlines() if ln.strip()]
        return one_line(lines[-1]) if lines else f"exit status {p.returncode}"

    def parse_pids(self, role, text):
        """[(role, pid, label)] of what pids printed: at most limits.PIDS_PER_DRIVER lines of
        PID [LABEL], each PID an ASCII number above 1 (init is no gateway's) and below
        limits.PID_MAX, the label printable and not tunbed-'s; a Failure otherwise."""
        where = f"{self.name} pids on {self.host(role).label()}"
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if len(lines) > limits.PIDS_PER_DRIVER:
            raise Failure(f"{where}: {len(lines)} PIDs: at most {limits.PIDS_PER_DRIVER}")
        out = []
        for line in lines:
            pid, _, label = line.partition(" ")
            label = label.strip() or os.path.basename(self.path)
            if not re.fullmatch(r"[0-9]+", pid) or not label.isprintable() or len(label) > 64:
                raise Failure(f"{where}: '{one_line(line)}': expected PID [LABEL]")
            if label.startswith("tunbed-"):
                raise Failure(f"{where}: '{one_line(line)}': expected PID [LABEL], the label "
                              "not starting with tunbed-")
            if len(pid) > 10 or not 1 < int(pid) < limits.PID_MAX:
                raise Failure(f"{where}: '{one_line(line)}': no such PID (expected 2 to "
                              f"{limits.PID_MAX - 1})")
            out.append((role, int(pid), f"{label} {role}"))
        return out

    def setup(self):
        self.env = {side[0]: self.environment(*side) for side in self.sides()}
        for role in self.env:
            self.up.append(role)  # a half-done up is undone by down, too
            h = self.host(role)
            if not h.shares_files:
                # On a host, what a runner that was killed left is undone by `tunbed down
                # --hosts`, which runs the host's undo lines: down is one of them.
                h.undo(self.argv(role, "down"))
            p = self.call(role, "up")
            if p.returncode:
                raise Failure(f"{self.name} up on {self.host(role).label()} failed (exit "
                              f"{p.returncode}): {self.said_last(p)}")
            self.said[role] = p.stdout.strip()
        self.collect_pids()
        self.wait_path()

    def collect_pids(self):
        """The processes each role's `pids` names, watched from now on."""
        for role in self.env:
            p = self.call(role, "pids")
            if p.returncode:
                raise Failure(f"{self.name} pids on {self.host(role).label()} failed (exit "
                              f"{p.returncode}): {self.said_last(p)}")
            self.procs += self.parse_pids(role, p.stdout)

    def pids(self):
        return self.procs

    def info(self):
        p = self.call("gwa", "version")
        lines = p.stdout.strip().splitlines() if p.returncode == 0 else []
        return {"version": one_line(lines[0]) if lines else None, "cipher": None}

    def telemetry(self):
        """What up printed on each gateway: what it started."""
        return {role: {"up": text} for role, text in self.said.items()} or None

    def teardown(self):
        for role in reversed(self.up):
            try:
                p = self.call(role, "down")
            except Failure as e:
                log(f"{self.name} down on {self.host(role).label()}: {e}")
                continue
            if p.returncode:
                log(f"{self.name} down on {self.host(role).label()} failed (exit "
                    f"{p.returncode}): {self.said_last(p)}")
        self.up = []


def command(name, base=""):
    """The driver class of the gateway cmd:PATH, PATH relative to base (or the current
    directory)."""
    path = os.path.abspath(os.path.join(base, os.path.expanduser(name[len("cmd:"):])))
    return type("Cmd", (Cmd,), {"name": name, "path": path})
