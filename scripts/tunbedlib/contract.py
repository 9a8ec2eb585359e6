"""A gateway tunbed does not know, measured without changing tunbed: `--gateways cmd:PATH`
runs the executable PATH on each gateway's host (in namespaces: inside the gateway's
namespace; on hosts: a copy, over SSH) as `PATH up`, `PATH pids`, `PATH down` and, if it
answers, `PATH version`, with the tunnel's addresses, the transit link and the roles' hosts in
its environment (CONTRIBUTING.md, "Adding a gateway", has the contract). The Open vSwitch
driver, scripts/drivers/ovs-gre.sh, is the built-in gateway written to it."""

import base64
import os

from .common import OVS_DRIVER, Failure, have, log
from .gateway import Driver

ROLES = ("client", "gwa", "gwb", "server")


class Cmd(Driver):
    """The driver of an executable that keeps the contract."""
    name = "cmd:?"
    path = ""  # absolute

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
            "TUNBED_LANS": " ".join(self.pair["net_a" if role == "gwa" else "net_b"]),
            "TUNBED_CLIENT": self.pair["client"],
            "TUNBED_SERVER": self.pair["server"],
            "TUNBED_CPUS": self.pins.get(role, ""),
        }
        for r in ROLES:
            other = self.bed.roles.get(r) or []
            env[f"TUNBED_HOST_{r.upper()}"] = (getattr(other[0], "ns", "") or other[0].name
                                               if other else "")
        return env

    def argv(self, role, verb):
        return ["env", *(f"{k}={v}" for k, v in self.env[role].items()), self.executable(role),
                verb]

    def call(self, role, verb):
        return self.host(role).call(self.argv(role, verb))

    @staticmethod
    def said_last(p):
        lines = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return lines[-1] if lines else f"exit status {p.returncode}"

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
        for role in self.env:
            p = self.call(role, "pids")
            if p.returncode:
                raise Failure(f"{self.name} pids on {self.host(role).label()} failed (exit "
                              f"{p.returncode}): {self.said_last(p)}")
            for line in p.stdout.splitlines():
                pid, _, label = line.strip().partition(" ")
                label = label.strip() or os.path.basename(self.path)
                if not pid.isdigit() or label.startswith("tunbed-"):
                    raise Failure(f"{self.name} pids on {self.host(role).label()}: '{line}': "
                                  "expected PID [LABEL], the label not starting with tunbed-")
                self.procs.append((role, int(pid), f"{label} {role}"))
        self.wait_path()

    def pids(self):
        return self.procs

    def info(self):
        p = self.call("gwa", "version")
        lines = p.stdout.strip().splitlines() if p.returncode == 0 else []
        return {"version": lines[0] if lines else None, "cipher": None}

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


class OvsGre(Cmd):
    """Open vSwitch's userspace datapath as GRE endpoint (key 7), scripts/drivers/ovs-gre.sh
    kept to the contract."""
    name = "ovs-gre"
    path = OVS_DRIVER

    @classmethod
    def available(cls, hosts_mode=False):
        if not hosts_mode and not have("ovs-vswitchd"):
            return False, "Open vSwitch is not installed (Debian: openvswitch-switch)"
        return super().available(hosts_mode)


def command(name, base=""):
    """The driver class of the gateway cmd:PATH, PATH relative to base (or the current
    directory)."""
    path = os.path.abspath(os.path.join(base, os.path.expanduser(name[len("cmd:"):])))
    return type("Cmd", (Cmd,), {"name": name, "path": path})
