"""The test bed a run measures on: the hosts of each role and how to reach them, the tunnel's
addresses, the CPU pins, and what is set up around a point. Two kinds: the built-in topology in
network namespaces of this machine (NamespaceBed: built for every point from scratch, one
machine sampled), and the hosts of an inventory over SSH (HostsBed, docs/hosts.md: connected
once for the whole run, every host sampled, its clock aligned to the client's, its facts
recorded, and everything the run changed on it undone after)."""

import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from . import inventory, machine, rundir
from . import pair as pairs
from . import common
from .common import (BIN, ROOT, TOPO, TOPOLOGIES, Failure, ScenarioError, deferred_signals,
                     ethtool_features, run)
from .hosts import HostLost, Netns, Ssh, on_each

# The addresses of a RAS-shaped bed (bed.addrs), per outer family: gwa and gwb's transit
# addresses, the tunnel addresses, the LAN behind each gateway (routed into the tunnel), the
# server and the client.
ADDRS = {
    4: {"a": "198.18.0.1", "b": "198.18.0.2", "ta": "198.19.0.1/24", "tb": "198.19.0.2/24",
        "net_a": ["198.18.1.0/24"], "net_b": ["198.18.3.0/24"], "server": "198.18.3.2",
        "client": "198.18.1.2"},
    6: {"a": "2001:2::1", "b": "2001:2::2", "ta": "2001:2:0:ff::1/64", "tb": "2001:2:0:ff::2/64",
        "net_a": ["2001:2:0:1::/64"], "net_b": ["2001:2:0:3::/64"], "server": "2001:2:0:3::2",
        "client": "2001:2:0:1::2"},
}
BUILD_ID = os.path.join(ROOT, "scripts", "build-id")
# What the runner calls on a host besides the build: iproute2 (ip, ss), util-linux (taskset),
# procps (sysctl), coreutils (sha256sum); the package declares them.
HOST_COMMANDS = ("ip", "ss", "taskset", "sysctl", "sha256sum", "ethtool")


def end_leftovers(prefix, timeout=5.0):
    """Ends what a killed run left running in its namespaces (PREFIX-*, which tunbed made):
    each process still inside one, SIGTERM, then SIGKILL for any still there after timeout;
    a PID is signalled only while it is in that namespace (its netns inode), never another
    process that took the number. Returns how many there were."""
    inside = {}
    for line in run(["ip", "netns", "list"]).splitlines():
        ns = line.split()[0] if line.split() else ""
        if not ns.startswith(prefix + "-"):
            continue
        try:
            inode = os.stat(f"/run/netns/{ns}").st_ino
        except OSError:
            continue
        for pid in run(["ip", "netns", "pids", ns], check=False).split():
            if re.fullmatch(r"[0-9]+", pid):
                inside[int(pid)] = inode

    def still(pid):
        try:
            return os.stat(f"/proc/{pid}/ns/net").st_ino == inside[pid]
        except OSError:
            return False

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in [p for p in inside if still(p)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while any(still(p) for p in inside) and time.monotonic() < deadline:
            time.sleep(0.05)
    return len(inside)


def parse_pins(text):
    """--pin HOST=CPUS,...: {host: "0,1"}; a ScenarioError (exit status 2) for a bad one."""
    pins = {}
    for part in (text or "").split(","):
        if not part:
            continue
        host, _, cpus = part.partition("=")
        # CPUS goes to taskset -c and gregw --cpus: numbers and ranges, + between them.
        if host not in ("client", "gwa", "gwb", "server") or \
                not re.fullmatch(r"[0-9]{1,4}(-[0-9]{1,4})?(\+[0-9]{1,4}(-[0-9]{1,4})?)*", cpus):
            raise ScenarioError(f"bad value '{part}' for --pin: expected HOST=CPUS, "
                                "HOST one of client, gwa, gwb, server")
        pins[host] = cpus.replace("+", ",")
    return pins


def stop_leftovers(namespaces, grace_s=3.0):
    """Stops every process still inside the run's namespaces before they go: one whose driver
    never recorded it (Ctrl-C between its start and the record) would outlive its namespace
    and hold it. The namespaces are the run's own (PREFIX-HOST), so are their processes:
    SIGTERM, and SIGKILL after grace_s."""
    def pids():
        found = []
        for ns in namespaces:
            out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            found += [int(p) for p in out.stdout.split() if p.isdigit()]
        return found
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = pids()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while left and pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pids():
            return


@contextlib.contextmanager
def topology(path, prefix, show=True):
    """The topology of file path built under prefix (tunbed-topo up), and removed again after
    (down), whatever happens; yields what `tunbed-topo show --json` says of it (with show).
    The one bring-up of every namespace bed: Ctrl-C waits until the topology is up (an
    interrupted `up` would leave namespaces), and the waiting signal is delivered as that block
    ends, inside the try whose finally takes the topology down again."""
    try:
        with deferred_signals():
            run([TOPO, "up", path, "--prefix", prefix])
        yield json.loads(run([TOPO, "show", path, "--prefix", prefix, "--json"])) if show \
            else None
    finally:
        with deferred_signals():
            run([TOPO, "down", path, "--prefix", prefix], check=False)


@contextlib.contextmanager
def run_dir(prefix):
    """A directory for the files a run of prefix generates (its topology file), removed after
    it: /run/tunbed/topo/PREFIX-XXXXXXXX (rundir: root's, 0700), so that what a killed run
    leaves is found by its prefix (remove_run_dirs, for tunbed down), never in /tmp."""
    d = rundir.make("topo", prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def remove_run_dirs(prefix):
    """Removes what a killed run of prefix left of run_dir's and of its namespaces' own state
    (hosts.Netns: /run/tunbed/netns/PREFIX-ROLE-XXXXXXXX); returns their paths."""
    out = []
    for d in rundir.found("topo", prefix) + rundir.found("netns", prefix):
        shutil.rmtree(d, ignore_errors=True)
        out.append(d)
    return out


def topology_file(topology, mtu, tmpdir):
    """The topology to build: a built-in name or a path, with the transit MTU replaced."""
    path = topology if "/" in topology or topology.endswith(".topo") else \
        os.path.join(TOPOLOGIES, f"{topology}.topo")
    if not os.path.exists(path):
        raise Failure(f"topology '{topology}': no such file {path}")
    if not mtu:
        return path
    with open(path) as f:
        text = f.read()
    if "[link transit]" not in text:
        raise Failure(f"{path}: no [link transit] to set an MTU on")
    text = text.replace("[link transit]", f"[link transit]\nmtu = {mtu}", 1)
    out = os.path.join(tmpdir, f"mtu{mtu}-{os.path.basename(path)}")
    with open(out, "w") as f:
        f.write(text)
    return out


def rate_cap(topo_json):
    """The least tbf rate (bits/s) of a topology's interfaces, from tunbed-topo show; None
    where none has a rate (docs/topology.md)."""
    rates = [i["qdisc"]["rate_bps"] for h in topo_json["hosts"]
             for i in h.get("interfaces") or []
             if isinstance(i.get("qdisc"), dict) and i["qdisc"].get("rate_bps")]
    return min(rates) if rates else None


def describe(topo_json):
    """Outer family and per-host CPU pins of a RAS-shaped topology, from tunbed-topo show."""
    hosts = {h["name"]: h for h in topo_json["hosts"]}
    for need in ("client", "gwa", "gwb", "server"):
        if need not in hosts:
            raise Failure(f"the runner needs hosts client, gwa, gwb and server; "
                          f"this topology has no '{need}'")
    transit = [i for i in hosts["gwa"].get("interfaces", []) if i.get("link") == "transit"]
    if not transit or not transit[0].get("addresses"):
        raise Failure("the runner needs a link 'transit' between gwa and gwb, with addresses")
    family = 6 if ":" in transit[0]["addresses"][0] else 4
    pins = {h: hosts[h]["cpus"] for h in hosts if hosts[h].get("cpus")}
    return family, pins, transit[0].get("name", "transit")


class ItemBed:
    """A bed built anew for each item (point()), with nothing around the whole run."""
    undone = "topology and processes removed"

    def open(self):
        pass

    def close(self):
        pass


class Bed(ItemBed):
    """What drivers and the runner ask of a bed."""
    pair = None
    pins = {}
    clients = servers = ()
    rate_cap_bps = None  # the least tbf rate of its links (bits/s), None: no cap known

    def host(self, role):
        """The Host of a role (client and server: the first of them)."""
        return self.roles[role][0]

    def open_hosts(self):
        for hs in self.roles.values():
            for h in hs:
                h.open()

    def close_hosts(self):
        """Each host's undo lines run, and its state removed: on every host at once."""
        def close(h):
            with contextlib.suppress(Failure):
                h.run_undo()
            h.close()
        on_each([h for hs in self.roles.values() for h in hs], close)

    def transit_iface(self, role):
        return self.transit[role]

    def any_address(self, role):
        """["--any-address"] where the inventory allows addresses outside the benchmarking
        ranges on the host of role; [] otherwise (and always in namespaces)."""
        return []

    def samplers(self):
        """[(host name, Host or None, roles)] to sample CPU on, one a machine."""
        raise NotImplementedError

    def check(self):
        """Raises HostLost for a host whose connection has ended; while a load runs."""

    def sampler_of(self, role, host=None):
        """The name of the sampled machine role runs on (host, where several hosts have the
        role: each client's, each server's), or None."""
        raise NotImplementedError

    def align(self, samplers):
        """{host name: {"offset_s", "error_s"}}: what to add to a host's CLOCK_MONOTONIC to
        be on the first client's, and how far off that may be. One machine: one clock."""
        return {name: {"offset_s": 0.0, "error_s": 0.0} for name, _, _ in samplers}

    def facts(self):
        return {}


class NamespaceBed(Bed):
    """The built-in topology (or a topology file) in namespaces PREFIX-HOST of this machine."""

    def __init__(self, sc, prefix, pin_override):
        self.sc, self.prefix, self.pin_override = sc, prefix, pin_override
        self.roles = {r: [Netns(prefix, r)] for r in inventory.ROLES}
        self.clients, self.servers = self.roles["client"], self.roles["server"]
        self.routing = None

    @contextlib.contextmanager
    def point(self, item):
        """The topology up for one item (its point's transit MTU), and down again after,
        whatever happens."""
        with run_dir(self.prefix) as tmp:
            topo = topology_file(self.sc.topology, item.point.mtu, tmp)
            with topology(topo, self.prefix) as shown:
                try:
                    if pairs.is_pair({h["name"] for h in shown["hosts"]}):
                        self.open_pair(shown)
                    else:
                        family, pins, transit = describe(shown)
                        pins.update(self.pin_override)
                        self.addrs, self.pins = ADDRS[family], pins
                        self.transit = {"gwa": transit, "gwb": transit}
                    self.rate_cap_bps = rate_cap(shown)
                    self.open_hosts()
                    yield self
                finally:
                    with deferred_signals():
                        self.close_hosts()
                        if self.routing is not None:
                            self.routing.stop()
                            self.routing = None
                            self.roles.pop("gwb2", None)
                        stop_leftovers([f"{self.prefix}-{h['name']}" for h in shown["hosts"]])

    def open_pair(self, shown):
        """A gateway pair (ras-pair.topo, docs/failover.md): gwb1 is the role gwb, behind the
        service address, which is gwa's remote; the passive gwb2 is a role of its own, which
        a driver that knows it (gregw) starts hot beside gwb."""
        self.routing = pairs.Routing(self.prefix)
        self.routing.start()
        self.routing.wait_active()
        gwb1, gwb2 = Netns(self.prefix, "gwb1"), Netns(self.prefix, "gwb2")
        gwb1.roles, gwb2.roles = ("gwb",), ("gwb2",)
        self.roles["gwb"], self.roles["gwb2"] = [gwb1], [gwb2]
        self.addrs = dict(ADDRS[4], b=pairs.SERVICE)
        self.pins = {h["name"]: h["cpus"] for h in shown["hosts"] if h.get("cpus")}
        self.pins.update(self.pin_override)
        self.transit = {"gwa": "transit", "gwb": pairs.GWB["gwb1"][2]}

    def samplers(self):
        return [("this machine", None, list(inventory.ROLES) +
                 (["gwb2"] if "gwb2" in self.roles else []))]

    def facts(self):
        """The one machine's facts (machine.py), read once per bed."""
        if getattr(self, "_facts", None) is None:
            self._facts = {"this machine": machine.facts()}
        return self._facts

    def sampler_of(self, role, host=None):
        return "this machine"


def local_build_id():
    return subprocess.run([BUILD_ID, BIN], capture_output=True, text=True,
                          check=True).stdout.strip()


def put_build(inventory_path):
    """How this build gets onto the hosts: from a checkout, `tunbed provision`; an installed
    runner refuses to provision (it has no build to package), so its own package goes on
    each host."""
    if common.INSTALLED:
        return (f"install on it the package this tunbed came from, tunbed {common.version()}, "
                "with apt")
    return f"run scripts/tunbed provision --hosts {inventory_path}"


class HostsBed(Bed):
    """The hosts of an inventory, each reached over SSH (docs/hosts.md)."""
    undone = "processes stopped and changes undone on every host reached"

    def __init__(self, inv, prefix, pin_override, need_gateways=True):
        self.inv, self.prefix = inv, prefix
        self.ctl_dir = tempfile.mkdtemp(prefix="tunbed-ssh-")
        self.roles = {r: [Ssh(s, prefix, self.ctl_dir) for s in inv.roles.get(r, [])]
                      for r in inventory.ROLES}
        self.by_name = {h.name: h for hs in self.roles.values() for h in hs}
        self.clients, self.servers = self.roles["client"], self.roles["server"]
        self.need_gateways = need_gateways
        self.opened = []
        self.pins = dict(pin_override)
        self.transit = {}
        self._facts = {}
        gw = {r: inv.roles[r][0] for r in inventory.GATEWAY_ROLES if inv.roles.get(r)}
        c, s = inv.roles["client"][0], inv.roles["server"][0]
        family = ipaddress.ip_address(c.addr).version
        self.addrs = {"server": s.addr, "client": c.addr}
        if len(gw) == 2:
            self.addrs.update({
                "a": gw["gwa"].transit_addr, "b": gw["gwb"].transit_addr,
                "ta": gw["gwa"].tunnel_addr, "tb": gw["gwb"].tunnel_addr,
                "net_a": gw["gwa"].lan_prefix.split(","), "net_b": gw["gwb"].lan_prefix.split(",")})
        self.family = family

    def host(self, role):
        if not self.roles.get(role):
            raise Failure(f"{self.inv.path}: no host in group '{role}'")
        return self.roles[role][0]

    def reachable(self):
        return [h for h in self.by_name.values() if h.spec.reach]

    def check(self):
        for h in self.opened:
            if h.master is not None and h.master.poll() is not None:
                h.lost = True
                err = h.master.stderr.read().strip().splitlines()
                raise HostLost(f"{h.label()}: lost: {h.why(err) if err else 'connection closed'}")

    def any_address(self, role):
        return ["--any-address"] if self.host(role).spec.any_address else []

    # Opening: every host at once; the first failure is the run's, with the host's name.
    def open(self):
        hosts = self.reachable()
        for h in hosts:
            h.start()
        errors = [e for e in on_each(hosts, self._open_one) if e]
        if errors:
            self.close()
            raise inventory.InventoryError(errors[0])
        want = local_build_id()
        errors = [e for e in on_each(hosts, lambda h: self._check(h, want)) if e]
        if errors:
            self.close()
            raise inventory.InventoryError(errors[0])
        self.setup_routes()

    def _open_one(self, h):
        try:
            h.open()
            self.opened.append(h)
        except Failure as e:
            return str(e)
        return None

    def _check(self, h, want):
        """What must hold on a host before anything starts: the commands the runner calls,
        this build of the programs, the interfaces and addresses the inventory names."""
        try:
            missing = h.run(["sh", "-c", 'for c in "$@"; do command -v "$c" >/dev/null || '
                             'echo "$c"; done', "sh", *HOST_COMMANDS]).split()
            if missing:
                return (f"{h.label()}: missing {', '.join(missing)} (install the runtime "
                        f"packages: {put_build(self.inv.path)})")
            bindir = os.path.dirname(h.bin("gregw"))
            with open(BUILD_ID) as f:
                got = h.call(["sh", "-s", bindir], input=f.read())
            if got.returncode != 0:
                return f"{h.label()}: no tunbed build in {bindir} ({put_build(self.inv.path)})"
            if got.stdout.strip() != want:
                return (f"{h.label()}: its tunbed build {got.stdout.strip()} in {bindir} is not "
                        f"this one ({want}): {put_build(self.inv.path)}")
            spec = h.spec
            addrs = json.loads(h.run(["ip", "-j", "addr", "show"]))
            have = {a["local"] for i in addrs for a in i.get("addr_info", [])}
            links = {i["ifname"] for i in addrs}
            for var in ("addr", "direct_addr", "transit_addr", "lan_addr"):
                value = getattr(spec, var)
                if value and value not in have:
                    return f"{h.label()}: tunbed_{var} {value} is not an address of this host"
            for var in ("iface", "transit_iface"):
                value = getattr(spec, var)
                if value and value not in links:
                    return f"{h.label()}: tunbed_{var} {value}: no such interface on this host"
            if spec.role in inventory.GATEWAY_ROLES:
                peer = self.addrs.get("b" if spec.role == "gwa" else "a")
                iface = spec.transit_iface or self._route_dev(h, peer)
                if not iface:
                    return f"{h.label()}: no route to the other gateway's transit address {peer}"
                self.transit[spec.role] = iface
        except Failure as e:
            return str(e)
        return None

    @staticmethod
    def _route_dev(h, addr):
        try:
            routes = json.loads(h.run(["ip", "-j", "route", "get", addr]))
        except (Failure, ValueError):
            return ""
        return routes[0].get("dev", "") if routes else ""

    def setup_routes(self):
        """The client's route to the server's side via gwa, and back, unless the host routes
        it so already; forwarding on the gateways. Each recorded to be undone. On every host
        at once."""
        if not self.roles.get("gwa") or not self.roles.get("gwb"):
            return  # external gateways: the network is the user's
        gwa, gwb = self.host("gwa").spec, self.host("gwb").spec
        key = "net.ipv6.conf.all.forwarding" if self.family == 6 else "net.ipv4.ip_forward"

        def route(h, nets, via):
            hop = h.spec.gateway or via
            for net in nets.split(","):
                probe = str(ipaddress.ip_network(net, strict=False).network_address)
                # (ip route get fails where nothing routes the address.)
                got = json.loads(h.run(["ip", "-j", "route", "get", probe], check=False)
                                 or "[]")
                if got and got[0].get("gateway") == hop:
                    continue
                h.run(["ip", "route", "add", net, "via", hop])
                h.undo(["ip", "route", "del", net, "via", hop], whole_run=True)

        def forward(h):
            if h.run(["sysctl", "-n", key]).strip() != "1":
                h.run(["sysctl", "-qw", f"{key}=1"])
                h.undo(["sysctl", "-qw", f"{key}=0"], whole_run=True)

        def setup(h):
            if h.spec.role == "client":
                route(h, gwb.lan_prefix, gwa.lan_addr)
            elif h.spec.role == "server":
                route(h, gwa.lan_prefix, gwb.lan_addr)
            elif h.spec.reach:  # a gateway tunbed does not reach forwards as it is set up to
                forward(h)

        on_each(self.clients + self.servers +
                [self.host(r) for r in inventory.GATEWAY_ROLES], setup)

    def keep_routes(self, roles, nets_of):
        """Before a tunnel replaces them: the gateways' routes to the far LAN, recorded to be
        put back after."""
        for role in roles:
            h = self.host(role)
            if not h.spec.reach:
                raise Failure(f"{h.label()}: tunbed_reach=false: only an external gateway runs "
                              "on a host tunbed does not reach")
            for net in nets_of(role):
                for r in json.loads(h.run(["ip", "-j", "route", "show", "to", "exact", net])
                                    or "[]"):
                    cmd = ["ip", "route", "replace", net]
                    if r.get("gateway"):
                        cmd += ["via", r["gateway"]]
                    if r.get("dev"):
                        cmd += ["dev", r["dev"]]
                    h.undo(cmd)

    def close(self):
        """What the run changed undone and its state removed, on every host at once."""
        def close(h):
            with contextlib.suppress(Failure):
                h.run_undo(whole_run=False)
                h.run_undo(whole_run=True)
                h.run(["rm", "-rf", h.state], check=False)
            h.close()
        on_each(self.opened, close)
        self.opened = []
        shutil.rmtree(self.ctl_dir, ignore_errors=True)

    @contextlib.contextmanager
    def point(self, item):
        if item.point.mtu:
            raise Failure("a transit MTU (mtu =) is the topology's: the hosts mode uses the "
                          "hosts' own")
        self._facts = self._facts or self.gather_facts()
        try:
            yield self
        finally:
            with deferred_signals():
                on_each(self.opened, point_undo)

    def samplers(self):
        return [(h.name, h, list(h.roles)) for h in self.reachable() if h.spec.sample]

    def sampler_of(self, role, host=None):
        h = host or self.host(role)
        return h.name if h.spec.reach and h.spec.sample else None

    def align(self, samplers):
        """Each sampled host's CLOCK_MONOTONIC against the first client's, through the
        samplers' open channels (cpu.Sampler.clock): the offset to add to a host's times, and
        how far off it may be (the two round trips' halves)."""
        raw = {name: s.clock() for name, _, s in samplers}
        ref = raw.get(self.clients[0].name, (0.0, 0.0))
        return {name: {"offset_s": ref[0] - off,
                       "error_s": err + (ref[1] if name != self.clients[0].name else 0.0)}
                for name, (off, err) in raw.items()}

    def data_iface(self, h):
        """The interface a host's measured traffic uses: a gateway's towards the other
        gateway, else the one that holds its data address."""
        spec = h.spec
        if spec.role in inventory.GATEWAY_ROLES:
            return spec.transit_iface or self.transit.get(spec.role, "")
        if spec.iface:
            return spec.iface
        for i in json.loads(h.run(["ip", "-j", "addr", "show"], check=False) or "[]"):
            if any(a.get("local") == spec.addr for a in i.get("addr_info", [])):
                return i["ifname"]
        return ""

    def gather_facts(self):
        hosts = self.reachable()
        return dict(zip([h.name for h in hosts],
                        on_each(hosts, lambda h: host_facts(h, self.data_iface(h)))))

    def facts(self):
        return self._facts


def point_undo(h):
    """A host's changes of the point undone (a host that fails them is undone at the run's
    end, or by tunbed down)."""
    with contextlib.suppress(Failure):
        h.run_point_undo()


FACTS_SH = r'''
echo "kernel=$(uname -r)"
echo "cpus=$(nproc)"
echo "cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
for k in net.ipv4.tcp_congestion_control net.core.rmem_max net.core.wmem_max net.ipv4.tcp_rmem net.ipv4.tcp_wmem; do
	echo "$k=$(sysctl -n $k 2>/dev/null | tr '\t' ' ')"
done
'''


def host_facts(h, iface):
    """What the cloud benchmarks tell their readers to check, per host: kernel, CPUs, the data
    plane's NIC (iface: driver, queues, offloads, MTU), congestion control and socket
    buffers."""
    facts = {}
    for line in h.run(["sh", "-c", FACTS_SH], check=False).splitlines():
        k, _, v = line.partition("=")
        facts[k] = v.strip()
    nic = {"name": iface}
    if iface:
        link = json.loads(h.run(["ip", "-j", "link", "show", "dev", iface], check=False)
                          or "[{}]")[0]
        nic["mtu"] = link.get("mtu")
        drv = h.run(["ethtool", "-i", iface], check=False)
        nic["driver"] = next((ln.split(":", 1)[1].strip() for ln in drv.splitlines()
                              if ln.startswith("driver:")), "")
        ch = h.run(["ethtool", "-l", iface], check=False)
        cur = ch.split("Current hardware settings:")[-1] if "Current" in ch else ""
        nic["queues"] = {k.strip().lower(): v.strip() for k, _, v in
                         (ln.partition(":") for ln in cur.splitlines() if ":" in ln)
                         if v.strip() and v.strip() != "n/a"}
        features = ethtool_features(h.run(["ethtool", "-k", iface], check=False))
        nic["offloads"] = {k: v.split()[0] for k, v in features.items() if k in OFFLOADS}
    facts["nic"] = nic
    return facts


OFFLOADS = ("tcp-segmentation-offload", "generic-segmentation-offload",
            "generic-receive-offload", "large-receive-offload", "rx-checksumming",
            "tx-checksumming", "tx-udp-segmentation", "rx-udp-gro-forwarding")
