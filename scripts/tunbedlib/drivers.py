"""Gateways under test, one interface each: available() says whether this machine can run it
(and why not), setup() builds it on gwa and gwb of a RAS-shaped topology, pids() names the
processes whose CPU it costs, telemetry() what it reports of itself, wire_expectations() what
the wire audit is to expect of its frames, teardown() undoes it. has_modes says whether the
scenario's modes and workers apply to it. A gateway whose software is missing is skipped with
its note, never faked."""

import json
import os
import subprocess
import tempfile
import time

from .common import GREGW, OVS_DRIVER, Failure, have, ns, run

# The tunnel of a RAS-shaped topology, per outer family: gwa and gwb's transit addresses, the
# tunnel addresses, and the LAN behind each gateway (routed into the tunnel).
PAIRS = {
    4: {"a": "198.18.0.1", "b": "198.18.0.2", "ta": "198.19.0.1/24", "tb": "198.19.0.2/24",
        "net_a": "198.18.1.0/24", "net_b": "198.18.3.0/24", "server": "198.18.3.2",
        "client": "198.18.1.2"},
    6: {"a": "2001:2::1", "b": "2001:2::2", "ta": "2001:2:0:ff::1/64", "tb": "2001:2:0:ff::2/64",
        "net_a": "2001:2:0:1::/64", "net_b": "2001:2:0:3::/64", "server": "2001:2:0:3::2",
        "client": "2001:2:0:1::2"},
}


class Driver:
    name = "?"
    # Whether the scenario's modes and workers apply (scenario.points); if not, each point of
    # the gateway has mode "-" and workers 0.
    has_modes = False

    def __init__(self, prefix, pair, point, pins):
        self.prefix, self.pair, self.point, self.pins = prefix, pair, point, pins

    @classmethod
    def available(cls):
        return True, ""

    def setup(self):
        pass

    def pids(self):
        """[(pid, label)] of the gateway's processes; empty for a kernel gateway."""
        return []

    def telemetry(self):
        """What the gateway says of itself (JSON-ready), asked after the load and before
        teardown(); None for a gateway that says nothing."""
        return None

    def thread_labels(self):
        """{tid: label} for threads the gateway can name (gregw's workers), asked after
        telemetry()."""
        return {}

    def wire_expectations(self):
        """tunbed-wire options the gateway's frames must meet beyond the two ends of the
        tunnel (docs/wire.md); none by default."""
        return []

    def teardown(self):
        pass

    def sides(self):
        p = self.pair
        return (("gwa", p["a"], p["b"], p["ta"], p["tb"], p["net_b"]),
                ("gwb", p["b"], p["a"], p["tb"], p["ta"], p["net_a"]))


class Route(Driver):
    """Plain kernel forwarding over the topology's routes: the upper bound, no tunnel."""
    name = "route"


class Gregw(Driver):
    name = "gregw"
    has_modes = True

    def __init__(self, *a):
        super().__init__(*a)
        self.procs, self.socks, self.stats = {}, {}, {}
        self.dir = tempfile.mkdtemp(prefix="tunbed-gregw-")

    @classmethod
    def available(cls):
        if not os.access(GREGW, os.X_OK):
            return False, f"{GREGW} is not built"
        return True, ""

    def setup(self):
        encap, *opts = self.point.mode.split("+")
        for host, local, remote, addr, _, net in self.sides():
            sock = os.path.join(self.dir, f"{host}.sock")
            cmd = [GREGW, "--remote", remote, "--local", local, "--route", net,
                   "--addr" if ":" not in addr else "--addr6", addr,
                   "--workers", str(self.point.workers), "--ctl", sock, "--encap", encap]
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
            if self.pins.get(host):
                cmd += ["--cpus", self.pins[host]]
            self.socks[host] = sock
            self.procs[host] = subprocess.Popen(ns(self.prefix, host, *cmd),
                                                stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 5
            while subprocess.run([GREGW, "ctl", sock, "stats"], capture_output=True).returncode:
                if self.procs[host].poll() is not None or time.monotonic() > deadline:
                    err = (self.procs[host].stderr.read() or "").strip().splitlines()
                    raise Failure(f"gregw on {self.prefix}-{host} did not start: "
                                  f"{err[-1] if err else 'no message'}")
                time.sleep(0.05)

    def pids(self):
        return [(p.pid, f"gregw {h}") for h, p in self.procs.items()]

    def telemetry(self):
        """Each gateway's `gregw ctl stats`, as it is now (the thread ids name the workers)."""
        for host, sock in self.socks.items():
            try:
                self.stats[host] = json.loads(run([GREGW, "ctl", sock, "stats"]))
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
        for host, st in self.stats.items():
            for w in st.get("workers", []):
                labels[w["tid"]] = f"gregw {host} worker {w['id']}"
        return labels

    def teardown(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for host, p in self.procs.items():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = {}
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        os.rmdir(self.dir)


class Vxlan(Driver):
    """The kernel's VXLAN (RFC 7348) between gwa and gwb: the kernel tunnel to beat."""
    name = "vxlan"

    def setup(self):
        for host, local, remote, addr, peer, net in self.sides():
            x = lambda *c: run(ns(self.prefix, host, "ip", *c))
            x("link", "add", "vx0", "type", "vxlan", "id", "42", "local", local, "remote", remote,
              "dstport", "4789", "dev", "transit")
            x("addr", "add", addr, "dev", "vx0")
            x("link", "set", "vx0", "up")
            x("route", "replace", net, "via", peer.split("/")[0], "dev", "vx0")


class KernelGre(Driver):
    """The kernel's own GRE (ip_gre), where the kernel has it."""
    name = "gre"

    @classmethod
    def available(cls):
        p = subprocess.run(["unshare", "-n", "ip", "link", "add", "g", "type", "gre", "local",
                            "198.18.0.1", "remote", "198.18.0.2"], capture_output=True, text=True)
        if p.returncode:
            return False, ("this kernel has no GRE module (ip_gre): "
                           + (p.stderr.strip().splitlines() or ["?"])[-1])
        return True, ""

    def setup(self):
        for host, local, remote, addr, peer, net in self.sides():
            x = lambda *c: run(ns(self.prefix, host, "ip", *c))
            kind = "gre" if ":" not in local else "ip6gre"
            x("link", "add", "gre1", "type", kind, "local", local, "remote", remote)
            x("addr", "add", addr, "dev", "gre1")
            x("link", "set", "gre1", "up")
            x("route", "replace", net, "dev", "gre1")


class OvsGre(Driver):
    """Open vSwitch's userspace datapath as GRE endpoint (scripts/drivers/ovs-gre.sh)."""
    name = "ovs-gre"

    def __init__(self, *a):
        super().__init__(*a)
        self.up = []

    @classmethod
    def available(cls):
        if not have("ovs-vswitchd"):
            return False, "Open vSwitch is not installed (Debian: openvswitch-switch)"
        return True, ""

    def setup(self):
        for host, local, remote, addr, _, net in self.sides():
            cmd = [OVS_DRIVER, "up", "--netns", f"{self.prefix}-{host}", "--local", local,
                   "--remote", remote, "--addr", addr, "--key", "7", "--route", net]
            if self.pins.get(host):
                cmd += ["--cpus", self.pins[host]]
            self.up.append(host)
            run(cmd)
        # OVS learns its neighbours from the first packets: have that done before measuring.
        for _ in range(50):
            if subprocess.run(ns(self.prefix, "client", "ping", "-c", "1", "-W", "1",
                                 self.pair["server"]), capture_output=True).returncode == 0:
                return
        raise Failure("no ping through the Open vSwitch pair")

    def pids(self):
        out = []
        for host in self.up:
            try:
                pids = run([OVS_DRIVER, "pids", "--netns", f"{self.prefix}-{host}"]).split()
            except Failure:
                continue
            out += [(int(p), f"ovs {host}") for p in pids]
        return out

    def teardown(self):
        for host in self.up:
            subprocess.run([OVS_DRIVER, "down", "--netns", f"{self.prefix}-{host}"],
                           capture_output=True)
        self.up = []


class NotWritten(Driver):
    """Gateways the runner knows of but has no driver for yet: skipped, with the reason."""
    program = "?"

    @classmethod
    def available(cls):
        if not have(cls.program):
            return False, f"{cls.program} is not installed"
        return False, f"{cls.program} is installed, but tunbed has no driver for it yet"


class WireguardGo(NotWritten):
    name = "wireguard-go"
    program = "wireguard-go"


class OpenVpn(NotWritten):
    name = "openvpn"
    program = "openvpn"


DRIVERS = {d.name: d for d in (Route, Gregw, Vxlan, KernelGre, OvsGre, WireguardGo, OpenVpn)}
