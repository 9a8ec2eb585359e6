"""What a gateway driver is (docs/runner.md, CONTRIBUTING.md "Adding a gateway"): everything the
runner asks of a gateway (whether it can run here, its setup, processes, version, telemetry and
teardown, what the wire audit expects of it, the bytes it adds on transit, whether its threads
can be given CPU budgets or it can run as a pair), and what drivers share: the two sides of the tunnel, their transit MTU,
a directory per side, processes started with their output in a log on their host, waits with a
deadline that fail with the last line that log holds, the tunnel device addressed and routed
to, and the first ping through the tunnel. The same code runs in namespaces and on hosts."""

import ipaddress
import json
import signal
import time

from ..common import Failure, ethtool_features

# How long a gateway has to come up: its daemon to answer, its device to appear, a ping from the
# client to reach the server through it (handshakes included).
START_TIMEOUT_S = 30
POLL_S = 0.05
UDP_HEADER = 8
GRE_HEADER = 4
# A transit device's segmentation of tunnels, by ethtool's names: with them off the kernel cuts
# a tunnel's superpacket into frames of the MTU before the device, as it must for a NIC without
# tunnel offloads (Driver.transit_frames). tx-udp-segmentation is UDP's own (UDP_SEGMENT), which
# gregw's GRE-in-UDP sockets use.
TUNNEL_SEGMENTATION = ("tx-gre-segmentation", "tx-gre-csum-segmentation",
                       "tx-udp_tnl-segmentation", "tx-udp_tnl-csum-segmentation",
                       "tx-udp-segmentation")


class Driver:
    name = "?"
    # Whether the scenario's modes and workers apply (scenario.points); if not, each point of
    # the gateway has mode "-" and workers 0.
    has_modes = False
    # Whether it puts a tunnel between gwa and gwb, which replaces the gateways' routes to
    # the far LAN while it runs (the bed puts back what was there); and whether it needs
    # the gateways at all (an external gateway does not: tunbed starts nothing on them).
    tunnel = True
    needs_gateways = True
    # Whether its threads can be given CPU budgets (emulated cores, docs/scaling.md: a
    # gateway of processes can, the kernel's cannot), and whether it can run as an active and
    # passive pair (tunbed failover, docs/failover.md).
    can_budget = False
    can_pair = False
    # The Debian packages it needs, for the note when one is missing.
    packages = ()
    # What its tunnel's frames are on transit, for the datasheet's DSCP/ECN part: "gre" for
    # GRE and GRE-in-UDP, which tunbed-wire decodes; "encrypted" where the inner header is
    # sealed; else the encapsulation's name ("VXLAN"); None for a gateway of no tunnel, or one
    # tunbed cannot know (cmd:PATH).
    transit_format = None

    def __init__(self, bed, point):
        self.bed, self.point = bed, point
        self.addrs, self.pins = bed.addrs, bed.pins
        self.dirs = set()

    @classmethod
    def available(cls, hosts_mode=False):
        return True, ""

    @classmethod
    def overhead(cls, mode, ip_header):
        """The bytes its tunnel adds to an inner packet on transit, with an outer IP header of
        ip_header bytes (20 or 40); None where it is not known (tunbed ndr refuses it)."""
        return None

    def host(self, role):
        return self.bed.host(role)

    def setup(self):
        pass

    def pids(self):
        """[(role, pid on its host, label)] of the gateway's processes; empty for a kernel
        gateway."""
        return []

    def info(self):
        """What the report says of the gateway beside its numbers, asked after setup():
        {"version": ..., "cipher": ...}, each None where unknown."""
        return {}

    def telemetry(self):
        """What the gateway says of itself (JSON-ready), asked after the load and before
        teardown(); None for a gateway that says nothing."""
        return None

    def thread_labels(self):
        """{(role, tid): label} for threads the gateway can name (gregw's workers), asked
        after telemetry()."""
        return {}

    @classmethod
    def gre_options(cls, mode):
        """How the far gateway of mode takes a plain GRE packet crafted on the transit
        (tosprobe.py: the datasheet's probe of its decapsulation): {"key": N or None, "csum":
        bool}; None where it takes none (another encapsulation, sequence numbers a crafted
        packet cannot know)."""
        return None

    @classmethod
    def transit_port(cls):
        """The UDP port its tunnel's packets go to on transit (the same at both ends), where
        the datasheet's DSCP/ECN part reads their outer TOS byte and re-marks it (the
        "capture" method, docs/datasheet.md); None where its transit is not one UDP port."""
        return None

    @classmethod
    def tos_method(cls, mode):
        """How the datasheet measures what the gateway of mode does with the DS field: "wire"
        where tunbed-wire decodes its transit (GRE, GRE-in-UDP), "capture" where its packets
        are told apart on transit by their UDP port alone (their outer TOS byte read, the
        inner one read where they arrive), None where neither."""
        if cls.transit_format == "gre":
            return "wire"
        return "capture" if cls.transit_port() else None

    def wire_expectations(self):
        """tunbed-wire options the gateway's frames must meet beyond the two ends of the
        tunnel (docs/wire.md); none by default."""
        return []

    def teardown(self):
        pass

    def sides(self):
        """(role, local, remote, tunnel addr, peer tunnel addr, far LAN prefixes) per gateway."""
        p = self.addrs
        return (("gwa", p["a"], p["b"], p["ta"], p["tb"], p["net_b"]),
                ("gwb", p["b"], p["a"], p["tb"], p["ta"], p["net_a"]))

    # What drivers of processes and devices share.

    def transit_mtu(self, role):
        h = self.host(role)
        link = json.loads(h.run(["ip", "-j", "link", "show", "dev",
                                 self.bed.transit_iface(role)]))
        return int(link[0]["mtu"])

    def transit_frames(self):
        """Both gateways' transit devices without tunnel segmentation until the point ends:
        frames of the MTU on the wire, whoever encapsulates (the kernel's VXLAN or gregw).
        A feature the device has fixed on fails the point, named."""
        for role, *_ in self.sides():
            h, dev = self.host(role), self.bed.transit_iface(role)
            have = ethtool_features(h.run(["ethtool", "-k", dev]))
            on = [f for f in TUNNEL_SEGMENTATION if have.get(f, "off").startswith("on")]
            fixed = [f for f in on if "[fixed]" in have[f]]
            if fixed:
                raise Failure(f"{h.label()}: {dev}: {fixed[0]} is fixed on: its frames cannot "
                              "be made MTU-sized")
            if on:
                h.run(["ethtool", "-K", dev, *(x for f in on for x in (f, "off"))])
                h.undo(["ethtool", "-K", dev, *(x for f in on for x in (f, "on"))])

    @staticmethod
    def outer_ip(addr):
        """The outer IP header's length for a transit address: 20 (IPv4) or 40 (IPv6)."""
        return 40 if ":" in addr else 20

    def workdir(self, role):
        """A directory of the driver's own on the role's host for this point (keys, configs,
        logs), made on first use; it goes with the point."""
        h = self.host(role)
        d = f"{h.state}/{self.name.replace('/', '_').replace(':', '_')}"
        if (role, d) not in self.dirs:
            h.run(["mkdir", "-p", "-m", "0700", d])
            h.undo(["rm", "-rf", d])
            self.dirs.add((role, d))
        return d

    def write(self, role, path, text):
        """A file on the role's host, readable by root alone."""
        self.host(role).run(["sh", "-c", 'umask 077 && cat >"$0"', path], input=text)

    def daemon(self, role, tag, cmd, script='exec "$@"', wrap=()):
        """Starts cmd on the role's host, pinned as the role is, its output appended to
        workdir/TAG.log; returns the Proc. script runs first (sh -c, the log already open;
        it ends by exec'ing "$@"), inside wrap (a command that execs what follows it)."""
        h = self.host(role)
        pin = ["taskset", "-c", self.pins[role]] if self.pins.get(role) else []
        log = f"{self.workdir(role)}/{tag}.log"
        return h.spawn(tag, [*wrap, "sh", "-c", f'exec >>"$0" 2>&1; {script}', log, *pin, *cmd])

    @staticmethod
    def stop_all(procs):
        """Stops the Procs of procs (a dict by role): SIGTERM to each still running first, so
        that they wind down together, then each one's stop (its wait, its kill if need be)."""
        for p in procs.values():
            if p.poll() is None:
                p.send(signal.SIGTERM)
        for p in procs.values():
            p.stop()

    def last_line(self, role, tag):
        """The last line the process TAG wrote into its log, or a word saying there is none."""
        out = self.host(role).run(["tail", "-n", "20", f"{self.workdir(role)}/{tag}.log"],
                                  check=False)
        lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
        return lines[-1] if lines else "no message"

    def wait(self, role, what, ready, proc=None, tag=None, timeout=START_TIMEOUT_S):
        """Polls ready() until it is true. Raises Failure naming what did not happen on which
        host, with the last line of TAG's log, when proc exits or the deadline passes."""
        h = self.host(role)
        deadline = time.monotonic() + timeout
        while not ready():
            gone = proc is not None and proc.poll() is not None
            if gone or time.monotonic() > deadline:
                why = (f"exited ({proc.local.returncode})" if gone
                       else f"not within {timeout:g} s")
                last = f": {self.last_line(role, tag)}" if tag else ""
                raise Failure(f"{self.name} on {h.label()}: {what}: {why}{last}")
            time.sleep(POLL_S)

    def has_device(self, role, dev):
        return self.host(role).call(["ip", "link", "show", "dev", dev]).returncode == 0

    def address_device(self, role, dev, addr, nets, mtu):
        """The tunnel device up with its address and MTU, and the far LANs routed into it."""
        h = self.host(role)
        x = lambda *c: h.run(["ip", *c])
        # A point-to-point device has no neighbours to tell apart: no duplicate detection.
        x("addr", "add", addr, "dev", dev, *(["nodad"] if ":" in addr else []))
        x("link", "set", "dev", dev, "mtu", str(mtu), "up")
        for net in nets:
            x("route", "replace", net, "dev", dev)

    def wait_path(self, timeout=START_TIMEOUT_S):
        """Until a ping from the client reaches the server through the tunnel: a tunnel that
        shakes hands on the first packet, or learns its neighbours, has done so before the
        measurement. Raises Failure when none answers in time."""
        c = self.host("client")
        deadline = time.monotonic() + timeout
        cmd = ["ping", "-n", "-q", "-c", "1", "-W", "1", self.addrs["server"]]
        while True:
            p = c.call(cmd)
            if p.returncode == 0:
                return
            if time.monotonic() > deadline:
                said = (p.stderr.strip() or p.stdout.strip()).splitlines()
                raise Failure(f"{self.name}: no ping from the client to the server "
                              f"{self.addrs['server']} through it within {timeout:g} s"
                              + (f" ({said[-1]})" if said and "packet loss" not in said[-1]
                                 else ""))
            time.sleep(POLL_S)


def peer_host(addr):
    """A tunnel address as the host prefix of its end: 198.19.0.2/24 -> 198.19.0.2/32."""
    ip = ipaddress.ip_interface(addr).ip
    return f"{ip}/{ip.max_prefixlen}"


def endpoint(addr, port):
    """addr:port, an IPv6 address in brackets."""
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"
