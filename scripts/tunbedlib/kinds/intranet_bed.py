"""The bed and the runs of tunbed intranet (intranet.py) on a pair of hosts: in namespaces, the
pair and the zone's network between them built for each profile from
topo/topologies/intranet.topo with the profile's cap, MTU and sysctls (NetnsPair); on the
client and server hosts of an inventory, as they are (HostsPair). For each profile the traffic
server runs on the server, pinned to the profile's CPUs, and each run is
one tunbed-traffic client on the client: idle ping and TCP probes, a stream count with both
probes beside it, or UDP at a rate. Everything started is stopped by its PID, and everything
built or changed is undone, also on a failure or Ctrl-C."""

import contextlib
import json
import os
import subprocess
import time

from .. import bed as beds
from ..common import TOPOLOGIES, Failure, deferred_signals
from ..common import TRAFFIC_PORT as PORT
from ..hosts import Netns
from .intranet_plan import PING_GROUPS, udp_size
from .matrix_point import wait_listening

TOPOLOGY = os.path.join(TOPOLOGIES, "intranet.topo")
LAN, CAP = "lan", "cap"  # the topology's links (and interfaces): client-zone, zone-server
SERVER_ADDR = "198.18.5.2"
CLIENT_TIMEOUT_S = 60  # beyond the run's own length: connect, the server's side, the replies


def topology(profile, path):
    """intranet.topo with the profile's cap on the link into the server, its MTU on both links
    and its sysctls on both hosts, at path."""
    with open(TOPOLOGY) as f:
        text = f.read()
    burst, limit = profile.bucket()
    mtu = f"mtu = {profile.mtu}\n" if profile.mtu else ""
    cap = f"rate = {profile.rate}bit\nburst = {burst}\nlimit = {limit}\n" if profile.rate else ""
    sysctls = "".join(f"sysctl.net.ipv4.{k} = {getattr(profile, k)}\n"
                      for k in ("tcp_rmem", "tcp_wmem") if getattr(profile, k))
    for marker, add in ((f"[link {CAP}]\n", mtu + cap), (f"[link {LAN}]\n", mtu),
                        ("[host client]\n", sysctls), ("[host server]\n", sysctls)):
        if marker not in text:
            raise Failure(f"{TOPOLOGY}: no {marker.strip()}")
        text = text.replace(marker, marker + add, 1)
    with open(path, "w") as f:
        f.write(text)


def qdisc(h, iface):
    """The root qdisc's counters on iface of host h (tc -s -j), or None."""
    try:
        doc = json.loads(h.run(["tc", "-s", "-j", "qdisc", "show", "dev", iface], check=False)
                         or "[]")
    except ValueError:
        return None
    root = next((q for q in doc if q.get("root")), doc[0] if doc else None)
    if not root:
        return None
    return {k: root.get(k) for k in ("kind", "bytes", "packets", "drops", "overlimits")}


def delta(before, after):
    if not before or not after:
        return after
    return {k: (after[k] - before[k]) if isinstance(after.get(k), int) and
            isinstance(before.get(k), int) else after.get(k) for k in after}


class PairBed:
    """What both pairs share: the bed of intranet.py's run loop, up for a profile's runs."""
    plans = {}

    def point(self, item):
        """The pair up under the profile of item, for its runs (an item's group)."""
        profile = item.point[0]
        return self.profile(profile, self.plans[profile.name])


def pair_bed(inv, prefix, plans):
    """The bed of a run: the hosts of inv, or namespaces of prefix; plans: the CPUs of each
    profile's endpoints."""
    pair = HostsPair(inv, prefix) if inv else NetnsPair(prefix)
    pair.plans = plans
    return pair


class NetnsPair(PairBed, beds.ItemBed):
    """The pair in namespaces PREFIX-client and PREFIX-server of this machine, and the zone's
    network between them in PREFIX-zone."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.client, self.server = Netns(prefix, "client"), Netns(prefix, "server")
        self.zone = Netns(prefix, "zone")
        self.server_addr = SERVER_ADDR
        self.mtu = 0

    def check(self):
        pass

    def any_address(self, role):
        return []

    def iface(self, role):
        return LAN if role == "client" else CAP

    @contextlib.contextmanager
    def profile(self, profile, plan):
        """The pair up under profile, and down again after, whatever happens."""
        self.mtu = profile.mtu or 1500
        with beds.run_dir(self.prefix) as tmp:
            path = os.path.join(tmp, f"intranet-{profile.name}.topo")
            topology(profile, path)
            with beds.topology(path, self.prefix, show=False):
                try:
                    for h in (self.client, self.zone, self.server):
                        h.open()
                    with serving(self, plan) as pair:
                        yield pair
                finally:
                    with deferred_signals():
                        for h in (self.client, self.zone, self.server):
                            h.close()

    def facts(self):
        return {role: beds.host_facts(h, self.iface(role)) for role, h in
                (("client", self.client), ("server", self.server))}

    def counters(self):
        """The cap's counters: the zone's egress to the server (what the client sends) and
        the server's (what it sends back)."""
        return {"forward": qdisc(self.zone, CAP), "reverse": qdisc(self.server, CAP)}


class HostsPair(PairBed):
    """The client and server hosts of an inventory, over SSH (docs/hosts.md)."""
    undone = "processes stopped and changes undone on every host reached"

    def __init__(self, inv, prefix):
        self.bed = beds.HostsBed(inv, prefix, {}, need_gateways=False)
        self.client, self.server = self.bed.host("client"), self.bed.host("server")
        self.server_addr = inv.one("server").addr
        self._facts = None

    def open(self):
        self.bed.open()
        # Ping sockets need the client's group inside the range; what is changed is undone.
        h = self.client
        got = h.run(["sysctl", "-n", "net.ipv4.ping_group_range"]).split()
        lo, hi = (int(x) for x in got) if len(got) == 2 else (1, 0)
        if not lo <= 0 <= hi:
            h.run(["sysctl", "-qw", f"net.ipv4.ping_group_range={PING_GROUPS}"])
            h.undo(["sysctl", "-qw", f"net.ipv4.ping_group_range={lo} {hi}"], whole_run=True)

    def close(self):
        self.bed.close()

    def check(self):
        self.bed.check()

    def any_address(self, role):
        return self.bed.any_address(role)

    def iface(self, role):
        return self.bed.data_iface(self.bed.host(role))

    @contextlib.contextmanager
    def profile(self, profile, plan):
        try:
            with serving(self, plan) as pair:
                yield pair
        finally:
            with deferred_signals():
                for h in (self.client, self.server):
                    with contextlib.suppress(Failure):
                        h.run_point_undo()

    def facts(self):
        if self._facts is None:
            self._facts = {role: beds.host_facts(h, self.iface(role)) for role, h in
                           (("client", self.client), ("server", self.server))}
        return self._facts

    def counters(self):
        """The client's own qdisc (no cap of ours: what its kernel dropped, if anything)."""
        return {"client": qdisc(self.client, self.iface("client"))}

    @property
    def mtu(self):
        return (self.facts()["client"].get("nic") or {}).get("mtu") or 1500


def pinned(cpus, cmd):
    return ["taskset", "-c", cpus, *cmd] if cpus else cmd


@contextlib.contextmanager
def serving(pair, plan):
    """tunbed-traffic server on the server host, pinned to the profile's CPUs, for a profile's
    runs; stopped by its PID after them."""
    h = pair.server
    p = h.spawn("intranet-server", pinned(plan["server"], [
        h.bin("tunbed-traffic"), "server", "--port", str(PORT), *pair.any_address("server")]))
    try:
        wait_listening(h)
        yield pair
    finally:
        with deferred_signals():
            if p.poll() is None:
                p.stop()


def client(pair, plan, args, timeout):
    """One tunbed-traffic client on the client host: (document, exit status, stderr)."""
    h = pair.client
    p = h.spawn("intranet-client", pinned(plan["client"], [
        h.bin("tunbed-traffic"), "client", pair.server_addr, "--port", str(PORT), *args,
        "--json", *pair.any_address("client")]), stdout=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        p.reading()
        while p.poll() is None:
            pair.check()
            if time.monotonic() > deadline:
                raise Failure(f"tunbed-traffic client did not finish within {timeout:.0f} s")
            time.sleep(0.1)
        out, err = p.communicate()
    finally:
        with deferred_signals():
            if p.poll() is None:
                p.stop()
    err = (err or "").strip()
    try:
        doc = json.loads(out or "")
    except ValueError:
        raise Failure("tunbed-traffic client: " + (err.splitlines() or [
            f"exit status {p.local.returncode}"])[-1]) from None
    return doc, p.local.returncode, err or None


def measure(sc, profile, plan, pair, kind, streams, rate, repeat):
    """One run of a profile; returns its raw record (JSON-ready, without its point)."""
    ping = ["--icmp", "--icmp-count", str(sc.ping_count), "--icmp-interval",
            f"{sc.ping_interval:g}"]
    tcp = (["--congestion", profile.congestion] if profile.congestion else []) + \
        (["--sndbuf", str(profile.sockbuf), "--rcvbuf", str(profile.sockbuf)]
         if profile.sockbuf else [])
    if kind == "idle":
        # The TCP probes for as long as the echo probes take: the two side by side.
        length = max(0.1, sc.ping_count * sc.ping_interval)
        args = [*ping, "--rr", "--time", f"{length:g}", *tcp]
    elif kind == "tcp":
        length = sc.warmup + sc.time
        args = ["--sessions", str(streams), "--time", f"{sc.time:g}", "--warmup",
                f"{sc.warmup:g}", "--pattern", "push", "--rr", *ping, *tcp]
    else:
        length = sc.time
        args = ["--udp", "--rate", str(rate), "--size", str(udp_size(pair.mtu, pair.server_addr)),
                "--time", f"{sc.time:g}"]
    rec = {"repeat": repeat, "started": time.time(),
           "profile": profile.as_dict() | {"cpus": plan}}
    if kind == "idle":
        rec["facts"] = pair.facts()
    before = pair.counters()
    rec["traffic"], rec["traffic_status"], rec["traffic_error"] = client(
        pair, plan, args, length + CLIENT_TIMEOUT_S)
    rec["qdisc"] = {role: delta(before.get(role), c) for role, c in pair.counters().items()}
    rec["finished"] = time.time()
    return rec
