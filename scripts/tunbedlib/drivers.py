"""Gateways under test, one interface each (gateway.Driver): available() says whether this
machine can run it (and why not), setup() builds it on gwa and gwb of a RAS-shaped topology,
pids() names the processes whose CPU it costs, info() its version and cipher, telemetry() what
it reports of itself, wire_expectations() what the wire audit is to expect of its frames,
teardown() undoes it. has_modes says whether the scenario's modes and workers apply to it. A
gateway whose software is missing is skipped with its note, never faked. Here: gregw and the
kernel's own; the VPN daemons are in vpn.py, a user's gateway (cmd:PATH) in contract.py. DRIVERS
holds every built-in one and each cmd:PATH named so far (lookup)."""

import json
import os
import subprocess
import time

from . import contract, vpn
from .common import GREGW, Failure
from .gateway import START_TIMEOUT_S, Driver


class Kernel(Driver):
    """A gateway of the kernel's own: its version is the gateways' kernel's."""

    def info(self):
        return {"version": "Linux " + self.host("gwa").run(["uname", "-r"]).strip(),
                "cipher": "none"}


class Route(Kernel):
    """Plain kernel forwarding: the upper bound, no tunnel. In namespaces over the topology's
    routes; on hosts each gateway routes the far LAN via the other's transit address."""
    name = "route"
    tunnel = False

    def setup(self):
        for role, local, remote, addr, _, nets in self.sides():
            h = self.host(role)
            for net in nets:
                have_routes = json.loads(h.run(["ip", "-j", "route", "show", "to", "exact",
                                                net]) or "[]")
                if any(r.get("gateway") == remote for r in have_routes):
                    continue
                h.run(["ip", "route", "add", net, "via", remote])
                h.undo(["ip", "route", "del", net, "via", remote])


class External(Driver):
    """A gateway tunbed does not start (a Windows RAS gateway, an appliance, one set up by
    hand): nothing is done on the gateways; traffic goes between client and server over the
    hosts' own routes, and the gateways' CPU is sampled where they are reachable Linux
    hosts."""
    name = "external"
    tunnel = False
    needs_gateways = False


class Gregw(Driver):
    name = "gregw"
    has_modes = True

    def __init__(self, *a):
        super().__init__(*a)
        self.procs, self.socks, self.stats = {}, {}, {}

    @classmethod
    def available(cls, hosts_mode=False):
        if not hosts_mode and not os.access(GREGW, os.X_OK):
            return False, f"{GREGW} is not built"
        return True, ""

    def setup(self):
        encap, *opts = self.point.mode.split("+")
        sides = list(self.sides())
        if "gwb2" in self.bed.roles:
            # A gateway pair (docs/failover.md): the passive runs hot, as gwb does.
            sides.append(("gwb2", *sides[1][1:]))
        for role, local, remote, addr, _, nets in sides:
            h = self.host(role)
            sock = f"{h.state}/gregw.sock"
            cmd = [h.bin("gregw"), "--remote", remote, "--local", local,
                   *(x for net in nets for x in ("--route", net)),
                   "--addr" if ":" not in addr else "--addr6", addr,
                   "--workers", str(self.point.workers), "--ctl", sock, "--encap", encap,
                   *self.bed.any_address(role)]
            if "nooffload" in opts:
                cmd += ["--offload", "off"]
            if "key" in opts:
                cmd += ["--key", "7"]
            if "seq" in opts:
                cmd.append("--seq")
            if "csum" in opts:
                cmd.append("--csum")
            if "aqm" in opts:
                cmd += ["--aqm", "codel"]
            if "iptx" in opts:
                cmd += ["--wire-tx", "ip"]
            if "nofq" in opts:
                cmd += ["--fair-queue", "off"]
            if self.pins.get(role):
                cmd += ["--cpus", self.pins[role]]
            self.socks[role] = sock
            self.procs[role] = h.spawn("gregw", cmd)
            deadline = time.monotonic() + START_TIMEOUT_S
            while h.call([h.bin("gregw"), "ctl", sock, "stats"]).returncode:
                if self.procs[role].poll() is not None or time.monotonic() > deadline:
                    err = (self.procs[role].local.stderr.read() or "").strip().splitlines() \
                        if self.procs[role].poll() is not None else ["no answer"]
                    raise Failure(f"gregw on {h.label()} did not start: "
                                  f"{err[-1] if err else 'no message'}")
                time.sleep(0.05)

    def pids(self):
        return [(r, p.pid, f"gregw {r}") for r, p in self.procs.items()]

    def info(self):
        h = self.host("gwa")
        out = h.run([h.bin("gregw"), "--version"], check=False).strip().splitlines()
        return {"version": out[0] if out else None, "cipher": "none"}

    def telemetry(self):
        """Each gateway's `gregw ctl stats`, as it is now (the thread ids name the workers)."""
        for role, sock in self.socks.items():
            h = self.host(role)
            try:
                self.stats[role] = json.loads(h.run([h.bin("gregw"), "ctl", sock, "stats"]))
            except (Failure, ValueError):
                pass
        return self.stats

    def wire_expectations(self):
        """Exactly the options of the mode: key 7, sequence numbers, checksums, or none."""
        opts = self.point.mode.split("+")[1:]
        return [*(["--key", "7"] if "key" in opts else ["--no-key"]),
                "--seq" if "seq" in opts else "--no-seq",
                "--csum" if "csum" in opts else "--no-csum"]

    def thread_labels(self):
        labels = {}
        for role, st in self.stats.items():
            for w in st.get("workers", []):
                labels[(role, w["tid"])] = f"gregw {role} worker {w['id']}"
        return labels

    def teardown(self):
        self.stop_all(self.procs)
        self.procs = {}


class Vxlan(Kernel):
    """The kernel's VXLAN (RFC 7348) between gwa and gwb: the kernel tunnel to beat."""
    name = "vxlan"

    def setup(self):
        for role, local, remote, addr, peer, nets in self.sides():
            h = self.host(role)
            x = lambda *c: h.run(["ip", *c])
            x("link", "add", "vx0", "type", "vxlan", "id", "42", "local", local, "remote", remote,
              "dstport", "4789", "dev", self.bed.transit_iface(role))
            h.undo(["ip", "link", "del", "vx0"])
            x("addr", "add", addr, "dev", "vx0")
            x("link", "set", "vx0", "up")
            for net in nets:
                x("route", "replace", net, "via", peer.split("/")[0], "dev", "vx0")


class KernelGre(Kernel):
    """The kernel's own GRE (ip_gre), where the kernel has it."""
    name = "gre"

    @classmethod
    def available(cls, hosts_mode=False):
        if hosts_mode:
            return True, ""  # the hosts' kernels are checked when the tunnel goes up
        p = subprocess.run(["unshare", "-n", "ip", "link", "add", "g", "type", "gre", "local",
                            "198.18.0.1", "remote", "198.18.0.2"], capture_output=True, text=True)
        if p.returncode:
            return False, ("this kernel has no GRE module (ip_gre): "
                           + (p.stderr.strip().splitlines() or ["?"])[-1])
        return True, ""

    def setup(self):
        for role, local, remote, addr, peer, nets in self.sides():
            h = self.host(role)
            x = lambda *c: h.run(["ip", *c])
            kind = "gre" if ":" not in local else "ip6gre"
            x("link", "add", "gre1", "type", kind, "local", local, "remote", remote)
            h.undo(["ip", "link", "del", "gre1"])
            x("addr", "add", addr, "dev", "gre1")
            x("link", "set", "gre1", "up")
            for net in nets:
                x("route", "replace", net, "dev", "gre1")


DRIVERS = {d.name: d for d in (Route, Gregw, Vxlan, KernelGre, contract.OvsGre, External,
                                vpn.WireguardGo, vpn.OpenVpn, vpn.OpenVpnNone, vpn.Fastd,
                                vpn.FastdNull)}


def lookup(name, base=""):
    """The driver class of a gateway name, or None: a built-in one, or for cmd:PATH (PATH
    relative to base, else the current directory) the contract's driver of PATH, from then on
    in DRIVERS under that name."""
    if name not in DRIVERS and name.startswith("cmd:") and len(name) > len("cmd:"):
        DRIVERS[name] = contract.command(name, base)
    return DRIVERS.get(name)
